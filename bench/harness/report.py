"""From runs to results: medians per server, ratios against each MariaDB target, and the
report written as Markdown, JSON and an SVG chart under the output directory.

Every ratio is oriented so that above 1 means Quill did better: throughput is Quill / MariaDB,
times and latencies are MariaDB / Quill. A cell with no figure says why: not supported (the
server lacks the feature, with the reason in the notes), error, or WRONG (a correctness check
failed; its figures are not shown).
"""

import json
import statistics

MARIADB_TARGETS = ("mariadb", "mariadb-binlog", "mariadb-myisam")
TARGET_TITLES = {"quill": "Quill", "mariadb": "MariaDB", "mariadb-binlog": "MariaDB + binlog", "mariadb-myisam": "MariaDB MyISAM",
                 "machine": "machine"}
FLOOR_WORKLOAD, FLOOR_METRIC = "fsync-floor", "fdatasync median"
#: Derived row: one commit's cost over a read, in units of the physical floor (issue target 1.3).
FLOOR_MULTIPLE = "commit minus round trip / fdatasync"


def aggregate(options, all_runs, targets):
    rows, problems = [], []
    for runs in all_runs:
        failed_checks = failed_checks_of(runs)
        problems.extend(problems_of(runs, failed_checks))
        rows.extend(rows_of(runs, failed_checks))
    add_floor_multiple(rows)
    series = {}
    for runs in all_runs:
        for name, results in runs.results.items():
            for result in results:
                for label, samples in (result.get("series") or {}).items():
                    series.setdefault(f"{runs.workload.name}: {label}", {}).setdefault(name, []).extend(samples)
    floor = next((r for r in rows if r["workload"] == FLOOR_WORKLOAD and r["metric"] == FLOOR_METRIC), None)
    return {
        "targets": targets,
        "options": {k: (str(v) if k in ("out", "workdir") else v) for k, v in vars(options).items()},
        "floor_us": floor["cells"]["machine"]["median"] if floor else None,
        "rows": rows,
        "problems": problems,
        #: {workload: series name: {target: every sample of every repetition}}, for histograms.
        "series": series,
    }


def failed_checks_of(runs):
    """{server: the first failed check of its runs}."""
    failed = {}
    for name, results in runs.results.items():
        for result in results:
            for check in result["checks"]:
                if not check["ok"]:
                    failed.setdefault(name, f"{check['name']}: {check['detail']}")
    return failed


def problems_of(runs, failed_checks):
    label = runs.workload.name + (f" (flush={runs.flush_mode})" if runs.flush_mode is not None else "")
    return [f"{label} on {name}: {error}" for name, error in runs.errors.items()] + [
        f"{label} on {name}: check failed: {failure}" for name, failure in failed_checks.items()
    ]


def rows_of(runs, failed_checks):
    workload, names = runs.workload, list(runs.results)
    metrics = []  # (name, unit, better) in first-seen order
    for results in runs.results.values():
        for result in results:
            for m in result["metrics"]:
                if m["name"] not in [x[0] for x in metrics]:
                    metrics.append((m["name"], m["unit"], m["better"]))
    if not metrics:  # nothing ran anywhere: one row says why for each server
        metrics = [(workload.headline[0] if workload.headline else "result", "", "higher")]
    rows = []
    for metric, unit, better in metrics:
        cells = {}
        for name in names:
            cells[name] = cell(runs, name, metric, failed_checks)
        rows.append({
            "workload": workload.name, "group": workload.group, "title": workload.title, "flush_mode": runs.flush_mode,
            "metric": metric, "unit": unit, "better": better, "headline": metric in workload.headline or not workload.headline,
            "cells": cells, "ratios": ratios(cells, better),
        })
    return rows


def cell(runs, name, metric, failed_checks):
    volatile = name in runs.volatile
    if name in runs.unsupported:
        return {"status": "not supported", "note": runs.unsupported[name], "median": None, "samples": []}
    if name in runs.errors:
        return {"status": "error", "note": runs.errors[name], "median": None, "samples": []}
    if name in failed_checks:
        return {"status": "wrong", "note": failed_checks[name], "median": None, "samples": []}
    found = [m for result in runs.results[name] for m in result["metrics"] if m["name"] == metric]
    samples = [m["value"] for m in found if m["value"] is not None]
    if not samples:
        missing = next((m for m in found if m["missing"]), None)
        if missing is None:
            return {"status": "no value", "note": "the server reported no value", "median": None, "samples": []}
        status = "not supported" if missing.get("unsupported", True) else "no value"
        return {"status": status, "note": missing["missing"], "median": None, "samples": []}
    note = "not durable: the server does not act on the flush mode (--allow-volatile)" if volatile else None
    return {"status": "ok", "note": note, "median": statistics.median(samples), "samples": samples, "volatile": volatile}


def ratios(cells, better):
    quill = cells.get("quill", {}).get("median")
    out = {}
    for name in MARIADB_TARGETS:
        other = cells.get(name, {}).get("median")
        if name not in cells or "quill" not in cells:
            continue
        if quill is None or other is None or quill <= 0 or other <= 0:
            out[name] = None
        else:
            out[name] = quill / other if better == "higher" else other / quill
    return out


def add_floor_multiple(rows):
    floor = next((r for r in rows if r["workload"] == FLOOR_WORKLOAD and r["metric"] == FLOOR_METRIC), None)
    floor_us = floor["cells"]["machine"]["median"] if floor else None
    if not floor_us:
        return
    for index, row in enumerate(list(rows)):
        if row["workload"] != "counter-1" or row["metric"] != "commit minus round trip":
            continue
        cells = {}
        for name, c in row["cells"].items():
            if c["median"] is None:
                cells[name] = dict(c)
            else:
                cells[name] = dict(c, median=c["median"] / floor_us, samples=[s / floor_us for s in c["samples"]])
        derived = dict(row, metric=FLOOR_MULTIPLE, unit="x", better="lower", headline=True, cells=cells, ratios=ratios(cells, "lower"))
        rows.insert(rows.index(row) + 1, derived)


# ---------------------------------------------------------------------------------------------
# Formatting

def format_value(value, unit):
    if value is None:
        return "—"
    if unit == "us":
        return f"{value:,.0f} µs" if abs(value) >= 100 else f"{value:.1f} µs"
    if unit == "ms":
        return f"{value:,.0f} ms" if abs(value) >= 100 else f"{value:.2f} ms"
    if unit == "1/s":
        return f"{value:,.0f}/s" if value >= 100 else f"{value:.1f}/s"
    if unit == "x":
        return f"{value:.2f}x"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.2f}".rstrip("0").rstrip(".") or "0"


class Notes:
    """Numbered notes for cells that cannot hold their reason."""

    def __init__(self):
        self.texts = []

    def ref(self, text):
        if text not in self.texts:
            self.texts.append(text)
        return f"[{self.texts.index(text) + 1}]"


def row_label(row):
    return row["workload"] + (f" (flush={row['flush_mode']})" if row["flush_mode"] is not None else "")


def cell_text(c, unit, notes):
    if c["status"] == "ok":
        return format_value(c["median"], unit) + (f" {notes.ref(c['note'])}" if c.get("note") else "")
    label = {"not supported": "not supported", "no value": "n/a", "error": "error", "wrong": "WRONG"}[c["status"]]
    return f"{label} {notes.ref(c['note'])}"


def table(results, rows, notes):
    targets = results["targets"]
    mariadbs = [t for t in MARIADB_TARGETS if t in targets]
    columns = [TARGET_TITLES[t] for t in mariadbs] + ["Quill"] * ("quill" in targets)
    columns += [f"Quill vs {TARGET_TITLES[t]}" for t in mariadbs if "quill" in targets]
    lines = ["| workload | metric | " + " | ".join(columns) + " |", "|---|---|" + "---:|" * len(columns)]
    for row in rows:
        if row["workload"] == FLOOR_WORKLOAD:
            continue
        cells = [cell_text(row["cells"][t], row["unit"], notes) for t in mariadbs + ["quill"] if t in row["cells"]]
        cells += ["—" if row["ratios"].get(t) is None else f"**{row['ratios'][t]:.2f}x**" for t in mariadbs if "quill" in targets]
        lines.append(f"| {row_label(row)} | {row['metric']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def summary_markdown(results):
    notes = Notes()
    text = table(results, [r for r in results["rows"] if r["headline"]], notes)
    if results["floor_us"]:
        text = f"Physical floor (raw write + fdatasync): {format_value(results['floor_us'], 'us')} median\n\n" + text
    return text + ("\n\n" + notes_markdown(notes) if notes.texts else "")


def notes_markdown(notes):
    return "\n".join(f"[{i + 1}] {text}" for i, text in enumerate(notes.texts))


def markdown(results):
    m, o = results["machine"], results["options"]
    floor = results["floor_us"]
    notes = Notes()
    summary = table(results, [r for r in results["rows"] if r["headline"]], notes)
    details = table(results, results["rows"], notes)
    versions = ", ".join(f"{TARGET_TITLES.get(k, k)} {v}" for k, v in m["versions"].items())
    workloads = "\n".join(f"- `{w}`: {t}" for w, t in dict((r["workload"], r["title"]) for r in results["rows"]).items())
    lines = [
        f"# Quill vs MariaDB, {results['started']}",
        "",
        f"- Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB, {m['os']}, kernel {m['kernel']}",
        f"- Data disk: {m['data_disk']}",
        *([f"- Busy neighbour (`--noisy`): {m['noisy']}"] if m.get("noisy") else []),
        f"- Versions: {versions}; Quill commit {m['quill_commit']}",
        f"- Runs: {o['repetitions']} per workload and server, servers alternated (A B A B ...); figures are medians"
        + (" (`--quick`)" if o["quick"] else ""),
        f"- sysbench: {o['sysbench_tables']} table(s) x {o['sysbench_table_size']} rows, {o['sysbench_time']} s per run",
        f"- Flush modes (innodb_flush_log_at_trx_commit) of writing workloads: {', '.join(map(str, o['flush_modes']))}",
        "- MariaDB: binary log off; MariaDB + binlog: `log_bin` on with `sync_binlog=1`",
        f"- Physical floor (raw write + fdatasync on the data disk): **{format_value(floor, 'us')}** median" if floor else
        "- Physical floor: not measured in this run",
        "",
        "Ratios are oriented so that **above 1 means Quill did better** (more throughput, or less time).",
        "",
        "## Summary",
        "",
        summary,
        "",
        "## All metrics",
        "",
        details,
        "",
        "## Workloads",
        "",
        workloads,
    ]
    if notes.texts:
        lines += ["", "## Notes", "", notes_markdown(notes)]
    if results["problems"]:
        lines += ["", "## Problems", ""] + [f"- {p}" for p in results["problems"]]
    return "\n".join(lines) + "\n"


def chart(results, path):
    """Horizontal bars of the headline ratios, one colour per MariaDB target, log scale."""
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams["svg.fonttype"] = "none"  # real <text>: searchable, small, readable in diffs
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    mariadbs = [t for t in MARIADB_TARGETS if t in results["targets"]]
    rows = [r for r in results["rows"] if r["headline"] and any(r["ratios"].get(t) for t in mariadbs)]
    if not rows:
        return False
    labels = [f"{row_label(r)}: {r['metric']}" for r in rows]
    height = 0.8 / len(mariadbs)
    figure, axes = plt.subplots(figsize=(10, 0.42 * len(rows) * max(1, len(mariadbs)) + 1.5))
    all_values = [r["ratios"][t] for r in rows for t in mariadbs if r["ratios"].get(t)]
    handles = []
    for i, target in enumerate(mariadbs):
        for y, row in enumerate(rows):
            value, position = row["ratios"].get(target), y + i * height
            if not value:  # no ratio (not supported, error, WRONG): no bar, and say so
                axes.text(1.0, position, " n/a", va="center", fontsize=8)
                continue
            # Bars grow from 1 (parity) towards the ratio: right when Quill is better, left when not.
            [bar] = axes.barh([position], [value - 1.0], left=1.0, height=height, color=f"C{i}")
            if row["cells"]["quill"].get("volatile"):
                bar.set_hatch("///")
            axes.text(value, position, f" {value:.2f}x ", va="center", ha="left" if value >= 1 else "right", fontsize=8)
        handles.append(Patch(color=f"C{i}", label=f"Quill vs {TARGET_TITLES[target]}"))
    axes.axvline(1.0, color="black", linewidth=1)
    axes.set_xscale("log")
    axes.set_xlim(min(all_values + [1.0]) / 1.6, max(all_values + [1.0]) * 1.6)
    axes.set_yticks([y + height * (len(mariadbs) - 1) / 2 for y in range(len(rows))], labels, fontsize=8)
    axes.invert_yaxis()
    volatile = any(r["cells"]["quill"].get("volatile") for r in rows)
    axes.set_xlabel("ratio (log scale; above 1 = Quill better)" + ("; hatched: Quill not durable (--allow-volatile)" if volatile else ""))
    axes.set_title(f"Quill vs MariaDB, {results['started']}")
    axes.legend(handles=handles, loc="lower right", fontsize=8)
    figure.tight_layout()
    figure.savefig(path, format="svg")
    plt.close(figure)
    return True


def histograms(results, path):
    """One panel per measured series (replication lag): each target's samples as a histogram on
    a log scale, with its p50 and p99 marked."""
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams["svg.fonttype"] = "none"
    import matplotlib.pyplot as plt
    import numpy

    series = results.get("series") or {}
    if not series:
        return False
    figure, panels = plt.subplots(len(series), 1, figsize=(10, 4 * len(series)), squeeze=False)
    for axes, (label, by_target) in zip(panels[:, 0], series.items()):
        values = [v for samples in by_target.values() for v in samples if v > 0]
        if not values:
            continue
        bins = numpy.logspace(numpy.log10(min(values)), numpy.log10(max(values)), 60)
        for i, (target, samples) in enumerate(by_target.items()):
            ordered = sorted(samples)
            p50, p99 = ordered[len(ordered) // 2], ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
            axes.hist([max(v, min(values)) for v in samples], bins=bins, alpha=0.6, color=f"C{i}",
                      label=f"{TARGET_TITLES.get(target, target)}: p50 {p50:.0f} us, p99 {p99:.0f} us, n={len(samples)}")
            for q, style in ((p50, "-"), (p99, "--")):
                axes.axvline(q, color=f"C{i}", linestyle=style, linewidth=1)
        axes.set_xscale("log")
        axes.set_xlabel("microseconds (log scale); solid line p50, dashed p99")
        axes.set_ylabel("transactions")
        axes.set_title(label)
        axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, format="svg")
    plt.close(figure)
    return True


def write(results, options, can_chart=True):
    options.out.mkdir(parents=True, exist_ok=True)
    stamp = results["started"].replace(":", "").replace("-", "").replace("+0000", "").replace("T", "-")[:15]
    base = options.out / (stamp + ("-quick" if options.quick else ""))
    paths = [base.with_suffix(".md"), base.with_suffix(".json")]
    paths[0].write_text(markdown(results))
    paths[1].write_text(json.dumps(results, indent=2, default=str) + "\n")
    svg = base.with_suffix(".svg")
    try:
        if can_chart and chart(results, svg):
            paths.append(svg)
        histogram_svg = base.with_name(base.name + "-histograms.svg")
        if can_chart and histograms(results, histogram_svg):
            paths.append(histogram_svg)
    except ImportError as e:
        print(f"bench/run: no chart: {e}")
    return paths
