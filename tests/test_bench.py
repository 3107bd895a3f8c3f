"""The benchmark harness, bench/run, run the way a user runs it, in its quickest mode against
Quill alone (MariaDB is optional here and left out to keep CI short). It must produce a
well-formed report: a Markdown summary table with one row per workload whose cells hold either
a figure or "not supported" with its reason, and JSON with the same content. No figure is
compared with any threshold: speed is for bench/run to report, not for tests to assert.
"""

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ElementTree

import pytest

from conftest import REPO_ROOT, test_target

pytestmark = pytest.mark.skipif(test_target() != "quill", reason="bench/run starts its own servers")

RUN = REPO_ROOT / "bench" / "run"
#: Every workload of a default run, as the summary table names it (the floor is in the header).
WORKLOADS = [
    "counter-1", "counter-2-different", "counter-2-same", "counter-2-for-update", "insert-storm-16", "insert-storm-1",
    *[f"sysbench-{t}-{n}" for t in ("point-select", "read-only", "insert", "update-index", "read-write", "write-only") for n in (1, 16)],
    "hot-row-16", "occ-hot-row-8", "long-read-vs-write", "join-no-index", "bulk-insert-select-5k", "load-data-5k", "bulk-buffer-sweep-2k",
    "notify-get-lock", "notify-commit-wait", "replication-lag", "insert-storm-16-replica", "insert-storm-16-replica-semisync", "replica-catch-up-16",
    "paged-1x", "paged-2x",
]
#: Small counts: the smoke test checks the harness, not the speed.
SMALL = ["--repetitions", "1", "--sysbench-time", "1", "--hot-row-seconds", "0.5", "--counter-count", "100",
         "--insert-count", "50", "--insert-single-count", "100", "--floor-count", "50",
         "--long-read-rows", "2000", "--long-read-limit", "300", "--insert-select-rows", "5000", "--load-data-rows", "5000",
         "--buffer-sweep-rows", "2000", "--lag-count", "50", "--lag-interval-ms", "2", "--notify-count", "50",
         "--notify-interval-ms", "2", "--occ-clients", "8", "--occ-seconds", "1",
         "--paged-pool", "5M", "--paged-scales", "1,2", "--paged-tables", "1", "--paged-time", "1", "--paged-threads", "4"]
FIGURE = re.compile(r"^-?[\d,]+(\.\d+)?( µs| ms|/s|x)?( \[\d+\])?$")
NOT_SUPPORTED = re.compile(r"^not supported \[(\d+)\]$")
NO_VALUE = re.compile(r"^n/a \[(\d+)\]$")


def bench_run(tmp_path, *arguments):
    out = tmp_path / "results"
    command = [sys.executable, str(RUN), "--quick", "--targets", "quill", "--out", str(out), "--workdir", str(tmp_path / "work"), *arguments]
    result = subprocess.run(command, capture_output=True, text=True, timeout=1200, cwd=REPO_ROOT)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    [markdown] = out.glob("*-quick.md")
    [results] = out.glob("*-quick.json")
    return result.stdout, markdown.read_text(), json.loads(results.read_text())


def summary_rows(markdown):
    """The summary table's rows as {workload: [(metric, quill cell)]}, checking its shape."""
    section = markdown.split("## Summary\n\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert section[0] == "| workload | metric | Quill |", section[0]
    assert section[1] == "|---|---|---:|", section[1]
    rows = {}
    for line in section[2:]:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        assert len(cells) == 3, line
        workload = cells[0].removesuffix(" (flush=1)")
        rows.setdefault(workload, []).append((cells[1], cells[2]))
    return rows


def notes(markdown):
    if "## Notes\n\n" not in markdown:
        return {}
    lines = markdown.split("## Notes\n\n", 1)[1].split("\n\n", 1)[0].splitlines()
    return {int(m.group(1)): m.group(2) for m in (re.match(r"^\[(\d+)\] (.+)$", line) for line in lines) if m}


def test_quick_run_measures_every_workload_on_quill(tmp_path):
    # --allow-volatile: every workload runs on Quill even where the flush mode is not acted on
    # yet, so each workload's driver code and result checks run here.
    stdout, markdown, results = bench_run(tmp_path, "--allow-volatile", *SMALL)
    rows = summary_rows(markdown)
    assert list(rows) == WORKLOADS, list(rows)
    numbered_notes = notes(markdown)
    for workload, cells in rows.items():
        for metric, cell in cells:
            without_figure = NOT_SUPPORTED.match(cell) or NO_VALUE.match(cell)
            assert FIGURE.match(cell) or without_figure, f"{workload} {metric}: {cell!r}"
            if without_figure:
                assert int(without_figure.group(1)) in numbered_notes, f"{workload} {metric}: note missing"
    assert re.search(r"Physical floor .*: \*\*[\d.,]+ µs\*\* median", markdown), markdown[:2000]
    assert "| workload | metric | Quill |" in stdout, "the summary is printed too"

    assert results["problems"] == []
    assert results["targets"] == ["quill"]
    assert results["floor_us"] > 0
    # Every transaction's replication lag is kept, for the histogram chart.
    lags = results["series"]["replication-lag: lag_us"]["quill"]
    assert len(lags) == 50 and all(lag > 0 for lag in lags), lags
    assert {"cpu", "cores", "memory_gib", "data_disk", "versions"} <= results["machine"].keys()
    assert results["machine"]["versions"]["quill"].endswith("-quill-0.1.0")
    for row in results["rows"]:
        for target, cell in row["cells"].items():
            assert cell["status"] in ("ok", "not supported", "no value"), (row["workload"], row["metric"], cell)
            if cell["status"] == "ok":
                assert cell["median"] is not None and len(cell["samples"]) == 1
            else:
                assert cell["note"], "a missing figure says why"


def test_writing_workload_without_durable_flush_mode_is_not_supported_not_skipped(tmp_path):
    # Without --allow-volatile a writing workload runs on Quill only if Quill acts on
    # innodb_flush_log_at_trx_commit=1; otherwise its row says "not supported" and why.
    _, markdown, results = bench_run(tmp_path, "--workloads", "counter-1", *SMALL)
    rows = summary_rows(markdown)
    assert list(rows) == ["counter-1"]
    [first] = [r for r in results["rows"] if r["workload"] == "counter-1"][:1]
    cell = first["cells"]["quill"]
    if cell["status"] == "not supported":
        assert "innodb_flush_log_at_trx_commit=1" in cell["note"]
        assert all(NOT_SUPPORTED.match(c) for _, c in rows["counter-1"])
    else:
        assert cell["status"] == "ok" and not cell.get("volatile"), cell


def test_chart_draws_the_ratios_as_svg(tmp_path):
    # The chart needs a MariaDB column; this gives the quick run's figures a MariaDB twin so
    # the ratios are 1 and the chart must draw one bar per headline row.
    sys.path.insert(0, str(REPO_ROOT / "bench"))
    from harness import report

    _, _, results = bench_run(tmp_path, "--workloads", "sysbench-point-select-1,sysbench-read-only-1", *SMALL)
    results["targets"] = ["quill", "mariadb"]
    for row in results["rows"]:
        row["cells"]["mariadb"] = dict(row["cells"]["quill"])
        row["ratios"] = report.ratios(row["cells"], row["better"])
    svg = tmp_path / "chart.svg"
    assert report.chart(results, svg)
    root = ElementTree.parse(svg).getroot()
    assert root.tag.endswith("svg")
    text = svg.read_text()
    assert "sysbench-point-select-1: tps" in text and "1.00x" in text
