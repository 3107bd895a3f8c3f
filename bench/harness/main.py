"""bench/run: options, then start servers, run every workload against each server in
alternation (A B A B ...), aggregate medians and ratios, write the report, stop the servers.

The exit status is 0 only when every run completed and every correctness check held: a
benchmark that computes a wrong counter is a failure, however fast it was.
"""

import argparse
import datetime
import shutil
import signal
import subprocess
import time
from pathlib import Path

from . import install, machine, report, workloads
from .driver import DriverError, flush_mode_refusal, set_flush_mode, sql
from .install import REPO
from .servers import TARGETS, Server

FULL = dict(repetitions=3, sysbench_time=10, sysbench_tables=4, sysbench_table_size=10000, hot_row_seconds=5.0,
            long_read_rows=20000, long_read_limit=3000, insert_select_rows=10_000_000, load_data_rows=1_000_000,
            buffer_sweep_rows=1_000_000, lag_count=1000, notify_count=1000, occ_seconds=10.0, targets="quill,mariadb,mariadb-binlog",
            paged_pool=128 << 20, paged_tables=8, paged_time=10)
QUICK = dict(repetitions=2, sysbench_time=2, sysbench_tables=1, sysbench_table_size=1000, hot_row_seconds=2.0,
             long_read_rows=5000, long_read_limit=1000, insert_select_rows=50_000, load_data_rows=50_000,
             buffer_sweep_rows=20_000, lag_count=200, notify_count=200, occ_seconds=3.0, targets="quill,mariadb",
             paged_pool=8 << 20, paged_tables=2, paged_time=2)


def comma_list(convert):
    return lambda text: [convert(part) for part in text.split(",") if part.strip()]


def byte_size(text):
    """128M, 1G, 512K or a number of bytes."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper()
    return int(text[:-1]) * units[text[-1]] if text[-1:] in units else int(text)


def parse_options(argv):
    parser = argparse.ArgumentParser(
        prog="bench/run",
        description="Benchmarks Quill side by side with MariaDB; writes Markdown, JSON and a chart under bench/results/.",
        epilog="Workloads and groups: fsync-floor, counter, counter-1, counter-2-different, counter-2-same, "
               "counter-2-for-update, insert-storm, insert-storm-16, insert-storm-1, sysbench, sysbench-<test>-<threads>, "
               "hot-row, occ, occ-hot-row-<clients>, long-read, long-read-vs-write, join-no-index, notify, notify-get-lock, notify-commit-wait, replication, replication-lag, bulk, bulk-insert-select-<rows>, load-data-<rows>, bulk-buffer-sweep-<rows>, paged, paged-<scale>x. See bench/README.md.",
    )
    parser.add_argument("--quick", action="store_true", help="every workload, fewer and shorter runs (a few minutes)")
    parser.add_argument("--targets", type=comma_list(str), help=f"servers to compare, from {','.join(TARGETS)} "
                        f"(default {FULL['targets']}; with --quick {QUICK['targets']})")
    parser.add_argument("--workloads", type=comma_list(str), default=["all"], help="workloads or groups to run (default all)")
    parser.add_argument("--repetitions", type=int, help="runs per workload and server, alternating servers (default 3; quick 2)")
    parser.add_argument("--flush-modes", type=comma_list(int), default=[1], help="innodb_flush_log_at_trx_commit values for writing workloads (default 1)")
    parser.add_argument("--sysbench-threads", type=comma_list(int), default=[1, 16], help="sysbench thread counts (default 1,16)")
    parser.add_argument("--sysbench-time", type=int, help="seconds per sysbench run (default 10; quick 2)")
    parser.add_argument("--sysbench-tables", type=int, help="sysbench tables (default 4; quick 1)")
    parser.add_argument("--sysbench-table-size", type=int, help="rows per sysbench table (default 10000; quick 1000)")
    parser.add_argument("--counter-count", type=int, default=1000, help="increments per client in the counter workloads (default 1000)")
    parser.add_argument("--insert-clients", type=int, default=16, help="clients of the insert storm (default 16)")
    parser.add_argument("--insert-count", type=int, default=1000, help="INSERTs per client of the insert storm (default 1000)")
    parser.add_argument("--insert-single-count", type=int, default=2000, help="INSERTs of the single-client insert storm (default 2000)")
    parser.add_argument("--hot-row-clients", type=int, default=16, help="clients of the optimistic hot-row workload (default 16)")
    parser.add_argument("--hot-row-seconds", type=float, help="seconds per hot-row run (default 5; quick 2)")
    parser.add_argument("--hot-row-rtt-ms", type=comma_list(float), default=[0.0], help="simulated client round trips, one workload each (default 0)")
    parser.add_argument("--long-read-rows", type=int, help="rows of the table the long-read join reads (default 20000; quick 5000)")
    parser.add_argument("--long-read-limit", type=int, help="rows of the join's outer side, a.id < LIMIT (default 3000; quick 1000)")
    parser.add_argument("--insert-select-rows", type=int, help="rows the bulk-insert-select workload copies (default 10000000; quick 50000)")
    parser.add_argument("--load-data-rows", type=int, help="rows the load-data workload loads (default 1000000; quick 50000)")
    parser.add_argument("--buffer-sweep-rows", type=int, help="rows the bulk-buffer-sweep workload copies per size (default 1000000; quick 20000)")
    parser.add_argument("--lag-count", type=int, help="INSERTs of the replication-lag workload (default 1000; quick 200)")
    parser.add_argument("--lag-interval-ms", type=int, default=10, help="milliseconds between the replication-lag INSERTs (default 10)")
    parser.add_argument("--occ-clients", type=int, default=128, help="clients of the occ-hot-row workload (default 128)")
    parser.add_argument("--occ-seconds", type=float, help="seconds of each occ-hot-row run (default 10; quick 3)")
    parser.add_argument("--notify-count", type=int, help="messages of the notify workloads (default 1000; quick 200)")
    parser.add_argument("--notify-interval-ms", type=int, default=10, help="milliseconds between the notify messages (default 10)")
    parser.add_argument("--paged-pool", type=byte_size, help="innodb_buffer_pool_size of the paged workloads' servers (default 128M; quick 8M)")
    parser.add_argument("--paged-scales", type=comma_list(int), default=[1, 10],
                        help="data sizes of the paged workloads, as multiples of --paged-pool, one workload each (default 1,10)")
    parser.add_argument("--paged-tables", type=int, help="sysbench tables of the paged workloads (default 8; quick 2)")
    parser.add_argument("--paged-threads", type=int, default=16, help="sysbench threads of the paged workloads (default 16)")
    parser.add_argument("--paged-prepare-threads", type=int, default=4, help="sysbench threads of the paged workloads' prepare (default 4)")
    parser.add_argument("--paged-time", type=int, help="seconds per sysbench run of the paged workloads (default 10; quick 2)")
    parser.add_argument("--floor-count", type=int, default=1000, help="timed write + fdatasync pairs of the floor (default 1000)")
    parser.add_argument("--floor-block-bytes", type=int, default=512, help="bytes per write of the floor (default 512)")
    parser.add_argument("--allow-volatile", action="store_true",
                        help="run writing workloads on a server that does not act on the flush mode, marking its figures "
                             "as not durable (instead of reporting them not supported)")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results", help="directory for the results (default bench/results)")
    parser.add_argument("--workdir", type=Path, default=REPO / "bench" / ".work", help="data directories of the servers (emptied first)")
    parser.add_argument("--keep-workdir", action="store_true", help="leave the data directories and server logs in place")
    parser.add_argument("--no-install", action="store_true", help="do not install or build anything")
    parser.add_argument("--noisy", action="store_true",
                        help="run a CPU hog (a busy loop pinned to the last core) for the whole run: a busy neighbour")
    options = parser.parse_args(argv)
    for name, value in (QUICK if options.quick else FULL).items():
        if getattr(options, name) is None:
            setattr(options, name, value)
    options.targets = comma_list(str)(options.targets) if isinstance(options.targets, str) else options.targets
    options.targets = list(dict.fromkeys(options.targets))  # each server once, in the order given
    unknown = [t for t in options.targets if t not in TARGETS]
    if unknown or not options.targets:
        parser.error(f"unknown target(s) {unknown}; choose from {', '.join(TARGETS)}")
    if any(mode not in (0, 1, 2) for mode in options.flush_modes):
        parser.error("flush modes are 0, 1 and 2")
    if options.repetitions < 1:
        parser.error("--repetitions must be at least 1")
    options.workdir = options.workdir.resolve()
    return options


#: Written into a work directory the harness created, so that it never empties one it did not.
WORKDIR_MARKER = ".quill-bench-workdir"
#: The version string each target must report, so a stray server on a reused port is caught.
VERSION_MARKERS = {"quill": "quill", "mariadb": "MariaDB", "mariadb-binlog": "MariaDB", "mariadb-myisam": "MariaDB"}


def log(message):
    print(f"bench/run: {message}", flush=True)


def on_signal(signum, _frame):
    """SIGTERM and SIGHUP unwind like Ctrl-C, through the `finally` that stops the servers."""
    raise SystemExit(128 + signum)


def prepare_workdir(workdir):
    if workdir.exists() and any(workdir.iterdir()) and not (workdir / WORKDIR_MARKER).exists():
        raise SystemExit(f"bench/run: {workdir} is not empty and was not made by bench/run; choose another --workdir")
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    (workdir / WORKDIR_MARKER).touch()


def main(argv):
    options = parse_options(argv)
    selected = workloads.select(workloads.all_workloads(options), options.workloads)
    want_mariadb = any(t != "quill" for t in options.targets)
    can_chart = True
    if not options.no_install:
        install.install_packages(want_mariadb, log)
        can_chart = install.install_python_packages(log)
        install.build(log, build_quill="quill" in options.targets)
    prepare_workdir(options.workdir)
    servers = [Server(name, options.workdir) for name in options.targets]
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, on_signal)
    started = datetime.datetime.now(datetime.timezone.utc)
    all_runs, problems, machine_details = [], [], {}
    try:
        for server in servers:
            log(f"starting {server.name} on 127.0.0.1:{server.port}")
            server.start()
        versions = server_versions(servers)
        if any(w.sysbench for w in selected):
            versions["sysbench"] = machine.sysbench_version()
        machine_details = machine.details(options.workdir, versions)
        if options.noisy:
            hog = machine.start_cpu_hog()
            machine_details["noisy"] = f"a CPU hog (a busy loop) pinned to core {hog.core} ran throughout"
            log(f"--noisy: a CPU hog runs on core {hog.core}")
        run_workloads(options, selected, servers, all_runs)
    except Exception as e:  # keep what was measured: the partial report names the failure
        problems.append(f"run stopped: {type(e).__name__}: {e}")
    except BaseException:  # Ctrl-C, SIGTERM, SIGHUP: stop the servers and go, with no report
        log(f"interrupted: stopping the servers; their logs stay in {options.workdir}")
        raise
    finally:
        # A second Ctrl-C must not interrupt the stopping of the servers.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGHUP})
        machine.stop_cpu_hog()
        for server in servers:
            server.stop()
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGHUP})
    finished = datetime.datetime.now(datetime.timezone.utc)
    results = report.aggregate(options, all_runs, [s.name for s in servers])
    results["problems"] = problems + results["problems"]
    results["started"], results["finished"] = started.isoformat(timespec="seconds"), finished.isoformat(timespec="seconds")
    results["machine"] = machine_details
    if results["problems"] or options.keep_workdir:
        log(f"server logs and data kept in {options.workdir}")
    else:
        shutil.rmtree(options.workdir, ignore_errors=True)
    if not machine_details:
        # It stopped before the machine was described (starting the servers or asking their
        # versions failed): nothing was measured, and a report would have no header.
        log("no report: " + "; ".join(results["problems"]))
        return 1
    paths = report.write(results, options, can_chart)
    print()
    print(report.summary_markdown(results))
    for path in paths:
        log(f"wrote {path}")
    for problem in results["problems"]:
        log(f"FAILED: {problem}")
    return 1 if results["problems"] else 0


def server_versions(servers):
    versions = {}
    for server in servers:
        version = sql(server, "SELECT @@version")[0]["rows"][0][0]
        if VERSION_MARKERS[server.name] not in version:
            raise SystemExit(f"bench/run: the server on port {server.port} says it is {version}, not {server.name}")
        versions[server.name] = version
    return versions


#: How one run can fail without stopping the others: the driver or sysbench failed, timed out,
#: could not be started, or printed something unreadable. The run is reported as an error.
RUN_FAILURES = (DriverError, RuntimeError, subprocess.TimeoutExpired, OSError, ValueError)


class WorkloadRuns:
    """Every run of one workload at one flush mode: per server, the driver results, or why
    there are none (not supported, error)."""

    def __init__(self, workload, flush_mode, servers):
        self.workload = workload
        self.flush_mode = flush_mode
        self.results = {name: [] for name in servers}
        self.unsupported = {}
        self.errors = {}
        self.volatile = set()


def run_workloads(options, selected, servers, all_runs):
    """Runs every selected workload, appending to `all_runs` as it goes (so that a run cut
    short still reports what it measured)."""
    refusals = probe_flush_modes(options, servers) if any(w.writes for w in selected) else {}
    sysbench_ready = {}
    for workload in selected:
        if workload.machine:
            all_runs.append(run_machine(options, workload))
            continue
        for mode in options.flush_modes if workload.writes else [None]:
            runs = WorkloadRuns(workload, mode, [s.name for s in servers])
            all_runs.append(runs)
            for server in servers:
                why = why_not_run(options, runs, server, refusals, sysbench_ready)
                if why:
                    runs.unsupported[server.name] = why
                    log(f"{workload.name}: {server.name}: not supported ({why})")
            run_alternating(options, runs, servers)


def run_machine(options, workload):
    runs = WorkloadRuns(workload, None, ["machine"])
    for repetition in range(options.repetitions):
        run_one(runs, "machine", None, repetition, options)
    return runs


def run_alternating(options, runs, servers):
    """A B A B ...: each repetition runs every server once, in the same order."""
    for repetition in range(options.repetitions):
        for server in servers:
            if server.name not in runs.errors and server.name not in runs.unsupported:
                run_one(runs, server.name, server, repetition, options)


def probe_flush_modes(options, servers):
    """{(server, mode): None when the server acts on the mode, else why not}."""
    return {(s.name, m): flush_mode_refusal(s, m) for s in servers for m in options.flush_modes}


def why_not_run(options, runs, server, refusals, sysbench_ready):
    """Why `server` cannot run this workload (it lacks what the workload needs), or None. Marks
    a run that goes ahead without the durability asked for as volatile."""
    workload = runs.workload
    if server.name == "mariadb-myisam" and not workload.bulk:
        return "the MyISAM target runs the bulk workloads only"
    if workload.writes:
        refusal = refusals[(server.name, runs.flush_mode)]
        if refusal and not options.allow_volatile:
            return f"innodb_flush_log_at_trx_commit={runs.flush_mode}: {refusal}"
        if refusal:
            runs.volatile.add(server.name)
    if workload.sysbench:
        if server.name not in sysbench_ready:
            log(f"sysbench prepare on {server.name} ({options.sysbench_tables} x {options.sysbench_table_size} rows)")
            try:
                workloads.sysbench_prepare(options, server)
                sysbench_ready[server.name] = None
            except RUN_FAILURES as e:
                sysbench_ready[server.name] = str(e)
        if sysbench_ready[server.name] is not None:
            runs.errors[server.name] = sysbench_ready[server.name]
    return None


def run_one(runs, name, server, repetition, options):
    workload = runs.workload
    mode = f" flush={runs.flush_mode}" if runs.flush_mode is not None else ""
    start = time.monotonic()
    try:
        if runs.flush_mode is not None:
            set_flush_mode(server, runs.flush_mode)
        result = workload.run(server)
    except RUN_FAILURES as e:
        runs.errors[name] = str(e)
        log(f"{workload.name}{mode} #{repetition + 1} {name}: ERROR {e}")
        return
    runs.results[name].append(result)
    headline = next((m for m in result["metrics"] if m["name"] in workload.headline and m["value"] is not None), None)
    shown = f"{headline['name']} {report.format_value(headline['value'], headline['unit'])}" if headline else "done"
    failed = [c["name"] for c in result["checks"] if not c["ok"]]
    log(f"{workload.name}{mode} #{repetition + 1}/{options.repetitions} {name}: {shown} ({time.monotonic() - start:.1f} s)"
        + (f" CHECK FAILED: {', '.join(failed)}" if failed else ""))
