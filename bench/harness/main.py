"""bench/run: options, then start servers, run every workload against each server in
alternation (A B A B ...), aggregate medians and ratios, write the report, stop the servers.

The exit status is 0 only when every run completed and every correctness check held: a
benchmark that computes a wrong counter is a failure, however fast it was.
"""

import argparse
import datetime
import shutil
import signal
import sys
import time
from pathlib import Path

from . import install, machine, report, workloads
from .driver import DriverError, flush_mode_refusal, set_flush_mode, sql
from .install import REPO
from .servers import TARGETS, Server

FULL = dict(repetitions=3, sysbench_time=10, sysbench_tables=4, sysbench_table_size=10000, hot_row_seconds=5.0,
            targets="quill,mariadb,mariadb-binlog")
QUICK = dict(repetitions=2, sysbench_time=2, sysbench_tables=1, sysbench_table_size=1000, hot_row_seconds=2.0,
             targets="quill,mariadb")


def comma_list(convert):
    return lambda text: [convert(part) for part in text.split(",") if part.strip()]


def parse_options(argv):
    parser = argparse.ArgumentParser(
        prog="bench/run",
        description="Benchmarks Quill side by side with MariaDB; writes Markdown, JSON and a chart under bench/results/.",
        epilog="Workloads and groups: fsync-floor, counter, counter-1, counter-2-different, counter-2-same, "
               "counter-2-for-update, insert-storm, insert-storm-16, insert-storm-1, sysbench, sysbench-<test>-<threads>, "
               "hot-row. See bench/README.md.",
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
    parser.add_argument("--floor-count", type=int, default=1000, help="timed write + fdatasync pairs of the floor (default 1000)")
    parser.add_argument("--floor-block-bytes", type=int, default=512, help="bytes per write of the floor (default 512)")
    parser.add_argument("--allow-volatile", action="store_true",
                        help="run writing workloads on a server that does not act on the flush mode, marking its figures "
                             "as not durable (instead of reporting them not supported)")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results", help="directory for the results (default bench/results)")
    parser.add_argument("--workdir", type=Path, default=REPO / "bench" / ".work", help="data directories of the servers (emptied first)")
    parser.add_argument("--keep-workdir", action="store_true", help="leave the data directories and server logs in place")
    parser.add_argument("--no-install", action="store_true", help="do not install or build anything")
    options = parser.parse_args(argv)
    for name, value in (QUICK if options.quick else FULL).items():
        if getattr(options, name) is None:
            setattr(options, name, value)
    options.targets = comma_list(str)(options.targets) if isinstance(options.targets, str) else options.targets
    unknown = [t for t in options.targets if t not in TARGETS]
    if unknown or not options.targets:
        parser.error(f"unknown target(s) {unknown}; choose from {', '.join(TARGETS)}")
    if any(mode not in (0, 1, 2) for mode in options.flush_modes):
        parser.error("flush modes are 0, 1 and 2")
    if options.repetitions < 1:
        parser.error("--repetitions must be at least 1")
    options.workdir = options.workdir.resolve()
    return options


def log(message):
    print(f"bench/run: {message}", flush=True)


def main(argv):
    options = parse_options(argv)
    selected = workloads.select(workloads.all_workloads(options), options.workloads)
    want_mariadb = any(t != "quill" for t in options.targets)
    if not options.no_install:
        install.install_packages(want_mariadb, log)
        install.install_python_packages(log)
        install.build(log, build_quill="quill" in options.targets)
    shutil.rmtree(options.workdir, ignore_errors=True)
    options.workdir.mkdir(parents=True)
    servers = [Server(name, options.workdir) for name in options.targets]
    # SIGTERM (a CI timeout, `kill`) unwinds like Ctrl-C, so the servers are always stopped.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    started = datetime.datetime.now(datetime.timezone.utc)
    try:
        for server in servers:
            log(f"starting {server.name} on 127.0.0.1:{server.port}")
            server.start()
        versions = {s.name: sql(s, "SELECT @@version")[0]["rows"][0][0] for s in servers}
        versions["sysbench"] = machine.sysbench_version()
        machine_details = machine.details(options.workdir, versions)
        runs = run_workloads(options, selected, servers)
    finally:
        for server in servers:
            server.stop()
        if not options.keep_workdir:
            shutil.rmtree(options.workdir, ignore_errors=True)
    finished = datetime.datetime.now(datetime.timezone.utc)
    results = report.aggregate(options, runs, [s.name for s in servers])
    results["started"], results["finished"] = started.isoformat(timespec="seconds"), finished.isoformat(timespec="seconds")
    results["machine"] = machine_details
    paths = report.write(results, options)
    print()
    print(report.summary_markdown(results))
    for path in paths:
        log(f"wrote {path}")
    problems = results["problems"]
    for problem in problems:
        log(f"FAILED: {problem}")
    return 1 if problems else 0


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


def run_workloads(options, selected, servers):
    writes = any(w.writes for w in selected)
    refusals = {(s.name, m): flush_mode_refusal(s, m) for s in servers for m in options.flush_modes} if writes else {}
    sysbench_ready = {}
    all_runs = []
    for workload in selected:
        for mode in options.flush_modes if workload.writes else [None]:
            if workload.machine:
                runs = WorkloadRuns(workload, None, ["machine"])
                for repetition in range(options.repetitions):
                    run_one(runs, "machine", None, repetition, options)
                all_runs.append(runs)
                continue
            runs = WorkloadRuns(workload, mode, [s.name for s in servers])
            for repetition in range(options.repetitions):
                for server in servers:
                    if server.name in runs.errors or server.name in runs.unsupported:
                        continue
                    if workload.writes:
                        refusal = refusals[(server.name, mode)]
                        if refusal and not options.allow_volatile:
                            runs.unsupported[server.name] = f"innodb_flush_log_at_trx_commit={mode}: {refusal}"
                            continue
                        if refusal:
                            runs.volatile.add(server.name)
                        set_flush_mode(server, mode)
                    if workload.sysbench and not prepare_sysbench(options, server, sysbench_ready, runs):
                        continue
                    run_one(runs, server.name, server, repetition, options)
            for name, why in runs.unsupported.items():
                log(f"{workload.name}: {name}: not supported ({why})")
            all_runs.append(runs)
    return all_runs


def prepare_sysbench(options, server, ready, runs):
    if server.name not in ready:
        log(f"sysbench prepare on {server.name} ({options.sysbench_tables} x {options.sysbench_table_size} rows)")
        try:
            workloads.sysbench_prepare(options, server)
            ready[server.name] = None
        except (DriverError, RuntimeError) as e:
            ready[server.name] = str(e)
    if ready[server.name] is not None:
        runs.errors[server.name] = ready[server.name]
        return False
    return True


def run_one(runs, name, server, repetition, options):
    workload = runs.workload
    mode = f" flush={runs.flush_mode}" if runs.flush_mode is not None else ""
    start = time.monotonic()
    try:
        result = workload.run(server)
    except (DriverError, RuntimeError) as e:
        runs.errors[name] = str(e)
        log(f"{workload.name}{mode} #{repetition + 1} {name}: ERROR {e}")
        return
    runs.results[name].append(result)
    headline = next((m for m in result["metrics"] if m["name"] in workload.headline and m["value"] is not None), None)
    shown = f"{headline['name']} {report.format_value(headline['value'], headline['unit'])}" if headline else "done"
    failed = [c["name"] for c in result["checks"] if not c["ok"]]
    log(f"{workload.name}{mode} #{repetition + 1}/{options.repetitions} {name}: {shown} ({time.monotonic() - start:.1f} s)"
        + (f" CHECK FAILED: {', '.join(failed)}" if failed else ""))
