"""The workloads: what each runs, whether it writes (and so depends on the flush mode), and
which of its metrics head the summary table.

A workload is a name and a function from (options, server) to a driver-format result
{"metrics": [...], "checks": [...]}. Adding one (replication lag, bulk load) is adding an entry
to `all_workloads`: the alternation, medians, ratios, report and chart need no change.
A workload whose needs a server lacks is reported "not supported" by the runner, never skipped.
"""

import json
import re
import subprocess
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Callable

from .driver import DRIVER_TIMEOUT_S, run_driver, sql
from .replication import insert_storm_replica, replica_catch_up, replication_lag

SYSBENCH_TESTS = ("oltp_point_select", "oltp_read_only", "oltp_insert", "oltp_update_index", "oltp_read_write", "oltp_write_only")
READ_ONLY_SYSBENCH_TESTS = ("oltp_point_select", "oltp_read_only")
SYSBENCH_DATABASE = "sbtest"
#: sysbench's own time limit is --time; this bounds a run that hangs past it (or a prepare).
SYSBENCH_GRACE_S = 300


@dataclass
class Workload:
    name: str
    group: str
    title: str
    run: Callable
    #: Commits transactions: run once per flush mode, and needs the mode to be acted on.
    writes: bool = True
    #: Measures the machine, not a server: run once per repetition, with no server.
    machine: bool = False
    #: Metrics shown in the summary table and the chart (all metrics are in the details).
    headline: tuple = ()
    #: Needs the sysbench tables prepared on each server.
    sysbench: bool = False
    #: A bulk-loading workload: the only kind the `mariadb-myisam` target runs (the others
    #: need transactions).
    bulk: bool = False


def all_workloads(o):
    """Every workload of a run with options `o`, in report order."""
    workloads = [
        Workload("fsync-floor", "floor", f"raw write + fdatasync, {o.floor_count} x {o.floor_block_bytes} B",
                 partial(fsync_floor, o), writes=False, machine=True, headline=("fdatasync median",)),
        counter("counter-1", f"1 client x {o.counter_count} autocommit UPDATE counter=counter+1", o, clients=1,
                headline=("per increment", "commit minus round trip")),
        counter("counter-2-different", f"2 clients x {o.counter_count} on different rows", o, clients=2, rows="different"),
        counter("counter-2-same", f"2 clients x {o.counter_count} on the same row", o, clients=2),
        counter("counter-2-for-update", f"2 clients x {o.counter_count} SELECT ... FOR UPDATE + UPDATE, same row", o,
                clients=2, for_update=True),
        insert_storm("insert-storm-16", o.insert_clients, o.insert_count),
        insert_storm("insert-storm-1", 1, o.insert_single_count),
    ]
    for test in SYSBENCH_TESTS:
        for threads in o.sysbench_threads:
            name = f"sysbench-{test.removeprefix('oltp_').replace('_', '-')}-{threads}"
            title = f"sysbench {test}, {threads} thread{'s' if threads > 1 else ''}"
            workloads.append(Workload(name, "sysbench", title, partial(sysbench_run, o, test=test, threads=threads),
                                      writes=test not in READ_ONLY_SYSBENCH_TESTS, headline=("tps", "p95 latency"), sysbench=True))
    for rtt_ms in o.hot_row_rtt_ms:
        suffix, title_suffix = (f"-rtt{rtt_ms:g}ms", f", {rtt_ms:g} ms round trip") if rtt_ms else ("", "")
        workloads.append(Workload(f"hot-row-{o.hot_row_clients}{suffix}", "hot-row",
                                  f"optimistic hot row, {o.hot_row_clients} clients{title_suffix}", partial(hot_row, o, rtt_ms=rtt_ms),
                                  headline=("commits/s", "row lock wait per commit")))
    workloads.append(Workload(f"occ-hot-row-{o.occ_clients}", "occ",
                              f"optimistic hot row at READ COMMITTED, {o.occ_clients} clients, {OCC_RTT_MS:g} ms round trip "
                              f"({OCC_RTT_MS / 2:g} ms before each statement and after its answer), for {o.occ_seconds:g} s, "
                              "every statement in the slow log: throughput, and pt-query-digest's lock figures for the UPDATE",
                              partial(occ_hot_row, o),
                              headline=("commits/s", "UPDATE lock time avg (pt-query-digest)", "UPDATE rec lock wait avg (pt-query-digest)")))
    long_read = ["long-read", "--rows", o.long_read_rows, "--limit", o.long_read_limit]
    join_title = f"join of {o.long_read_limit} x {o.long_read_rows} rows on a column with no index"
    workloads.append(Workload("long-read-vs-write", "long-read", f"autocommit INSERTs into another table during a {join_title}",
                              partial(driver_workload, long_read + ["--writer"]),
                              headline=("p99 during / idle", "insert p99 during read")))
    workloads.append(Workload("join-no-index", "long-read", join_title, partial(driver_workload, long_read),
                              writes=False, headline=("join time",)))
    workloads.append(Workload(f"bulk-insert-select-{short_count(o.insert_select_rows)}", "bulk",
                              f"INSERT INTO dst SELECT * FROM src, {o.insert_select_rows:,} price-list rows of about 100 bytes, "
                              "into a DYNAMIC and a FIXED table", partial(insert_select, o, ["--formats", "dynamic,fixed"]),
                              headline=("copy time dynamic", "copy time fixed", "peak RSS dynamic"), bulk=True))
    workloads.append(Workload(f"load-data-{short_count(o.load_data_rows)}", "bulk",
                              f"LOAD DATA LOCAL INFILE of {o.load_data_rows:,} price-list rows (tab-separated)",
                              partial(driver_workload, ["load-data", "--rows", o.load_data_rows]), headline=("load time",), bulk=True))
    sizes = ",".join(str(s) for s in BUFFER_SWEEP_BYTES)
    workloads.append(Workload(f"bulk-buffer-sweep-{short_count(o.buffer_sweep_rows)}", "bulk",
                              f"INSERT INTO dst SELECT * FROM src, {o.buffer_sweep_rows:,} rows, once per bulk_insert_buffer_size "
                              "from 128 KiB to 1 GiB: time and Quill_bulk_buffer_flushes",
                              partial(insert_select, o, ["--formats", "", "--buffer-sizes", sizes], rows=o.buffer_sweep_rows),
                              headline=tuple(f"copy time {label}" for label in BUFFER_SWEEP_LABELS), bulk=True))
    for consumer, how in (("get-lock", "GET_LOCK around each INSERT and each poll of the consumer"),
                          ("commit-wait", "the consumer waits in WAIT_FOR_TABLE_COMMIT, no lock")):
        workloads.append(Workload(f"notify-{consumer}", "notify",
                                  f"{o.notify_count} single-row INSERTs {o.notify_interval_ms} ms apart, {how}: "
                                  "producer's commit returned to consumer saw the row",
                                  partial(driver_workload, ["notify", "--consumer", consumer, "--count", o.notify_count,
                                                            "--interval-ms", o.notify_interval_ms]),
                                  headline=("wake p50", "wake p99")))
    workloads.append(Workload("replication-lag", "replication",
                              f"source and replica on this host: {o.lag_count} single-row INSERTs {o.lag_interval_ms} ms apart, "
                              "commit on the source to applied on the replica",
                              partial(replication_lag, o), headline=("lag p50", "lag p99")))
    for semi_sync, suffix, how in ((False, "", "asynchronous"), (True, "-semisync", "semi-synchronous")):
        workloads.append(Workload(f"insert-storm-{o.insert_clients}-replica{suffix}", "replication",
                                  f"{o.insert_clients} clients x {o.insert_count} prepared autocommit INSERT on a source with an "
                                  f"{how} replica attached, against the same source with none".replace("an semi", "a semi"),
                                  partial(insert_storm_replica, o, semi_sync=semi_sync),
                                  headline=("inserts/s", "with replica / with none")))
    workloads.append(Workload(f"replica-catch-up-{o.insert_clients}", "replication",
                              f"a backlog of {o.insert_clients} clients x {int(o.insert_count) * 3} autocommit INSERTs applied by a "
                              "fresh replica, with one applier worker and with four",
                              partial(replica_catch_up, o), headline=("applied/s, 1 worker", "applied/s, 4 workers", "4 workers / 1")))
    from .paged import paged_run  # paged.py shares this module's sysbench constants

    for scale in o.paged_scales:
        workloads.append(Workload(f"paged-{scale}x", "paged",
                                  f"sysbench on {scale}x the buffer pool ({o.paged_pool >> 20} MiB, both servers started with it): "
                                  f"{o.paged_tables} tables, {o.paged_threads} threads, uniform and Pareto; a checkpoint during "
                                  "reads; data bytes per log byte; peak RSS; start-up after kill -9",
                                  partial(paged_run, o, scale=scale),
                                  headline=("prepare time", "point_select uniform tps", "read_only uniform tps", "read_write uniform tps",
                                            "update_index pareto tps", "p99 during checkpoint / idle", "data bytes per log byte",
                                            "peak RSS", "start-up after kill -9")))
    return workloads


#: The bulk_insert_buffer_size values of the sweep, 128 KiB to 1 GiB by factors of 4 (and 8 MiB,
#: the default), and their labels as the driver names its metrics.
BUFFER_SWEEP_BYTES = (128 << 10, 512 << 10, 2 << 20, 8 << 20, 32 << 20, 128 << 20, 1 << 30)
BUFFER_SWEEP_LABELS = ("128K", "512K", "2M", "8M", "32M", "128M", "1G")


def select(workloads, selection):
    """The workloads named in `selection` (names or group names, comma-separated), in order."""
    if not selection or selection == ["all"]:
        return workloads
    known = {w.name for w in workloads} | {w.group for w in workloads}
    unknown = [s for s in selection if s not in known]
    if unknown:
        raise SystemExit(f"bench/run: unknown workload(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    return [w for w in workloads if w.name in selection or w.group in selection]


def fsync_floor(o, server):
    assert server is None, "the floor measures the machine, not a server"
    return run_driver(None, "fsync-floor", "--dir", o.workdir, "--count", o.floor_count, "--block-bytes", o.floor_block_bytes)


def short_count(n):
    """1000000 -> "1m", 50000 -> "50k": workload names stay short."""
    if n % 1_000_000 == 0:
        return f"{n // 1_000_000}m"
    if n % 1000 == 0:
        return f"{n // 1000}k"
    return str(n)


def insert_select(o, extra, server, rows=None):
    pid = server.process.pid if server.process is not None else None
    arguments = ["insert-select", "--rows", rows or o.insert_select_rows, *extra] + (["--server-pid", pid] if pid else [])
    return run_driver(server, *arguments)


def driver_workload(arguments, server):
    return run_driver(server, *arguments)


def counter(name, title, o, clients, rows="same", for_update=False, headline=("elapsed",)):
    arguments = ["counter", "--clients", clients, "--rows", rows, "--count", o.counter_count] + (["--for-update"] if for_update else [])
    return Workload(name, "counter", title, partial(driver_workload, arguments), headline=headline)


def insert_storm(name, clients, count):
    title = f"{clients} client{'s' if clients > 1 else ''} x {count} prepared autocommit INSERT (AUTO_INCREMENT)"
    return Workload(name, "insert-storm", title, partial(driver_workload, ["insert-storm", "--clients", clients, "--count", count]),
                    headline=("inserts/s", "commits per fsync"))


#: The occ-hot-row round trip, milliseconds (half before each statement, half after).
OCC_RTT_MS = 9.0


def occ_hot_row(o, server):
    """The hot-row workload at READ COMMITTED with a split 9 ms round trip, every statement in
    the server's slow log (long_query_time 0, InnoDB verbosity), then pt-query-digest's figures
    for the UPDATE class: its lock time and, where the server writes it, Percona's
    InnoDB_rec_lock_wait. The log is left in the work directory."""
    log = Path(o.workdir).resolve() / f"{server.dir.name}-occ-slow.log"
    log.unlink(missing_ok=True)
    # FLUSH SLOW LOGS: an earlier run's file, removed above, may still be open.
    sql(server, f"SET GLOBAL slow_query_log_file = '{log}'", "FLUSH SLOW LOGS", "SET GLOBAL long_query_time = 0",
        "SET GLOBAL log_slow_verbosity = 'innodb'", "SET GLOBAL slow_query_log = ON")
    try:
        result = run_driver(server, "hot-row", "--clients", o.occ_clients, "--seconds", o.occ_seconds, "--rtt-ms", OCC_RTT_MS,
                            "--split-rtt", "--read-committed", timeout_s=o.occ_seconds + DRIVER_TIMEOUT_S)
    finally:
        sql(server, "SET GLOBAL slow_query_log = OFF", "SET GLOBAL long_query_time = 10")
    result["metrics"].extend(digest_lock_metrics(log))
    return result


def digest_lock_metrics(log):
    """pt-query-digest's figures for the UPDATE class of a slow log, as driver metrics."""
    names = {"UPDATE lock time avg (pt-query-digest)": "Lock_time", "UPDATE lock time p95 (pt-query-digest)": "Lock_time",
             "UPDATE rec lock wait avg (pt-query-digest)": "InnoDB_rec_lock_wait",
             "UPDATE rec lock wait p95 (pt-query-digest)": "InnoDB_rec_lock_wait"}
    report = subprocess.run(["pt-query-digest", "--output", "json", "--limit", "100%", str(log)], capture_output=True, text=True, timeout=600)
    if report.returncode != 0:
        raise RuntimeError(f"pt-query-digest failed: {report.stderr[-2000:]}")
    classes = json.loads(report.stdout or "{}").get("classes", [])
    update = next((c for c in classes if c["fingerprint"].startswith("update parent")), None)
    metrics = []
    for name, attribute in names.items():
        stats = (update or {}).get("metrics", {}).get(attribute)
        if stats is None:
            why = "no UPDATE in the slow log" if update is None else f"the server's slow log has no {attribute}"
            metrics.append({"name": name, "value": None, "unit": "ms", "better": "lower", "missing": why, "unsupported": update is not None})
            continue
        value = float(stats["pct_95" if "p95" in name else "avg"]) * 1e3
        metrics.append({"name": name, "value": value, "unit": "ms", "better": "lower", "missing": None})
    return metrics


def hot_row(o, server, rtt_ms):
    return run_driver(server, "hot-row", "--clients", o.hot_row_clients, "--seconds", o.hot_row_seconds, "--rtt-ms", rtt_ms,
                      timeout_s=o.hot_row_seconds + DRIVER_TIMEOUT_S)


# ---------------------------------------------------------------------------------------------
# sysbench

def sysbench_command(options, server, test, threads, action):
    return [
        "sysbench", test, "--db-driver=mysql", "--mysql-host=127.0.0.1", f"--mysql-port={server.port}",
        "--mysql-user=root", f"--mysql-db={SYSBENCH_DATABASE}", f"--tables={options.sysbench_tables}",
        f"--table-size={options.sysbench_table_size}", f"--threads={threads}", f"--time={options.sysbench_time}",
        "--report-interval=0", "--percentile=95", action,
    ]


def sysbench_prepare(options, server):
    sql(server, f"DROP DATABASE IF EXISTS {SYSBENCH_DATABASE}", f"CREATE DATABASE {SYSBENCH_DATABASE}")
    command = sysbench_command(options, server, "oltp_read_write", 1, "prepare")
    result = subprocess.run(command, capture_output=True, text=True, timeout=6 * SYSBENCH_GRACE_S)
    if result.returncode != 0:
        raise RuntimeError(f"sysbench prepare failed: {(result.stdout + result.stderr).strip()[-2000:]}")


SYSBENCH_PATTERNS = {
    "tps": re.compile(r"transactions:\s+\d+\s+\(([\d.]+) per sec"),
    "qps": re.compile(r"queries:\s+\d+\s+\(([\d.]+) per sec"),
    "p95 latency": re.compile(r"95th percentile:\s+([\d.]+)"),
    "ignored errors/s": re.compile(r"ignored errors:\s+\d+\s+\(([\d.]+) per sec"),
}
SYSBENCH_METRICS = {"tps": ("1/s", "higher"), "qps": ("1/s", "higher"), "p95 latency": ("ms", "lower"), "ignored errors/s": ("1/s", "lower")}


def sysbench_run(options, server, test, threads):
    command = sysbench_command(options, server, test, threads, "run")
    result = subprocess.run(command, capture_output=True, text=True, timeout=options.sysbench_time + SYSBENCH_GRACE_S)
    output = result.stdout + result.stderr
    if result.returncode != 0:
        raise RuntimeError(f"sysbench {test} failed: {output.strip()[-2000:]}")
    return parse_sysbench(output)


def parse_sysbench(output):
    metrics = []
    for name, pattern in SYSBENCH_PATTERNS.items():
        match = pattern.search(output)
        if match is None:
            raise RuntimeError(f"sysbench output has no {name}:\n{output[-2000:]}")
        unit, better = SYSBENCH_METRICS[name]
        metrics.append({"name": name, "value": float(match.group(1)), "unit": unit, "better": better, "missing": None})
    return {"metrics": metrics, "checks": []}
