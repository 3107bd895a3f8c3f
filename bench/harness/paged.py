"""The paged workloads: sysbench on data a given multiple of the buffer pool, on a server of the
target's kind started for the run with that pool (`--paged-pool`), and stopped after it.

One run of `paged-<scale>x`, on a fresh server:
1. `sysbench oltp_read_write prepare`: `--paged-tables` tables (8) whose rows add up to about
   `scale` x the pool, at ROW_BYTES bytes a row (InnoDB's size of a sysbench row with its
   secondary index), `--paged-prepare-threads` (4) loading in parallel. Timed.
   Then each server writes what the load left only in memory (Quill a checkpoint, MariaDB
   its dirty pages flushed, as in step 3), timed as "load written back": steps 2-4 measure
   the workloads on data at rest, and step 4's bytes are the workloads' writes, not the
   load's.
2. `oltp_point_select` and `oltp_read_only`, then `oltp_read_write` and `oltp_update_index`, each
   with uniform and with Pareto access (`--rand-type`), 16 threads (`--paged-threads`),
   `--paged-time` seconds each: transactions/s, and the server's CPU (utime + stime from
   /proc) per query.
3. A checkpoint during reads: `oltp_point_select` runs for 2.4 x `--paged-time` seconds (at
   least 8) with a p99
   printed every second. A quarter of the way in, the server is made to write every dirty page
   the writes above left: Quill by a checkpoint (`quill_checkpoint_interval_seconds` set to 1
   until `Quill_checkpoints` moves), MariaDB by `innodb_max_dirty_pages_pct=0` until
   `Innodb_buffer_pool_pages_dirty` is 0. The metric is the median of the per-second p99s while
   that ran, over the median of the others.
4. Bytes written to data files per byte of log, from the start of step 2's writes to the end of
   step 3 (so every page the writes dirtied has been written): `Innodb_data_written` over
   `Innodb_os_log_written` on Quill (page files and checkpoint files over the commit log);
   on MariaDB (`Innodb_pages_written` + `Innodb_dblwr_pages_written`) x `Innodb_page_size`,
   the data files and the doublewrite buffer, over `Innodb_os_log_written`.
5. Peak RSS over steps 1-4 (`VmHWM` after a reset through `/proc/PID/clear_refs`).
6. `oltp_update_index` for a few seconds (so the log has work to replay), then kill -9, the
   OS page cache dropped when the harness may (root), and a restart timed to the first answer
   of a query on a sysbench table.

The data files on each side (`du` of Quill's `pages` directory, of MariaDB's `sbtest`
directory) are reported beside the pool, to show the multiple actually reached.
"""

import os
import re
import signal
import subprocess
import threading
import time

from .driver import DriverError, run_driver, sql
from .servers import Server
from .workloads import SYSBENCH_GRACE_S, SYSBENCH_PATTERNS

#: InnoDB's bytes per sysbench row (120 + 60 character columns, two INTs, the row header and
#: the `k` index), to size the tables at a multiple of the pool.
ROW_BYTES = 250
#: Seconds of the point_select run during which a checkpoint is forced, per second of
#: `--paged-time` (and at least CHECKPOINT_RUN_MIN_S).
CHECKPOINT_RUN_PER_TIME = 2.4
CHECKPOINT_RUN_MIN_S = 8
#: How long a forced checkpoint (or MariaDB's flush) may take.
CHECKPOINT_TIMEOUT_S = 600
#: The tests of step 2, in order: read-only first, so their pages are clean.
READ_TESTS = ("oltp_point_select", "oltp_read_only")
WRITE_TESTS = ("oltp_read_write", "oltp_update_index")
DISTRIBUTIONS = ("uniform", "pareto")


def rows_per_table(o, scale):
    return max(1000, scale * o.paged_pool // ROW_BYTES // o.paged_tables)


def paged_run(o, server, scale):
    pool_option = f"--innodb-buffer-pool-size={o.paged_pool}"
    label = f"paged-{scale}x-{server.name}-{time.monotonic_ns()}"
    target = Server(server.name, o.workdir, label, extra=[pool_option])
    rows = rows_per_table(o, scale)
    metrics = []

    def metric(name, value, unit, better):
        metrics.append({"name": name, "value": value, "unit": unit, "better": better, "missing": None})

    try:
        target.start()
        pid = target.process.pid
        reset_peak_rss(pid)
        sql(target, "DROP DATABASE IF EXISTS sbtest", "CREATE DATABASE sbtest")
        started = time.monotonic()
        sysbench(o, target, "oltp_read_write", o.paged_prepare_threads, "prepare", rows)
        metric("prepare time", time.monotonic() - started, "s", "lower")
        data = data_bytes(target)
        metric("data files", data / 2**20, "MiB", "lower")
        metric("data / pool", data / o.paged_pool, "x", "lower")
        metric("load written back", force_checkpoint(target), "s", "lower")

        for test in READ_TESTS:
            for dist in DISTRIBUTIONS:
                tps, cpu_us = sysbench_measured(o, target, test, dist, rows)
                metric(f"{test.removeprefix('oltp_')} {dist} tps", tps, "1/s", "higher")
                metric(f"{test.removeprefix('oltp_')} {dist} CPU per query", cpu_us, "us", "lower")
        before = write_counters(target)
        for test in WRITE_TESTS:
            for dist in DISTRIBUTIONS:
                tps, cpu_us = sysbench_measured(o, target, test, dist, rows)
                metric(f"{test.removeprefix('oltp_')} {dist} tps", tps, "1/s", "higher")
                metric(f"{test.removeprefix('oltp_')} {dist} CPU per query", cpu_us, "us", "lower")

        idle_p99, during_p99, flush_s = checkpoint_during_reads(o, target, rows)
        metric("point_select p99 idle", idle_p99, "ms", "lower")
        metric("point_select p99 during checkpoint", during_p99, "ms", "lower")
        metric("p99 during checkpoint / idle", during_p99 / idle_p99 if idle_p99 else None, "x", "lower")
        metric("checkpoint time", flush_s, "s", "lower")
        after = write_counters(target)
        data_written, log_written = after[0] - before[0], after[1] - before[1]
        metric("data bytes per log byte", data_written / log_written if log_written else None, "x", "lower")
        metric("peak RSS", peak_rss_bytes(pid) / 2**20, "MiB", "lower")

        sysbench(o, target, "oltp_update_index", o.paged_threads, "run", rows, seconds=max(2, o.paged_time // 2))
        target.process.send_signal(signal.SIGKILL)
        target.process.wait()
        drop_page_cache()
        started = time.monotonic()
        target.start()
        sql(target, "SELECT c FROM sbtest.sbtest1 WHERE id = 1")
        metric("start-up after kill -9", time.monotonic() - started, "s", "lower")
        metric("RSS after start-up", current_rss_bytes(target.process.pid) / 2**20, "MiB", "lower")
    finally:
        target.stop()
    return {"metrics": metrics, "checks": []}


def sysbench(o, server, test, threads, action, rows, seconds=None, extra=()):
    command = [
        "sysbench", test, "--db-driver=mysql", "--mysql-host=127.0.0.1", f"--mysql-port={server.port}", "--mysql-user=root",
        "--mysql-db=sbtest", f"--tables={o.paged_tables}", f"--table-size={rows}", f"--threads={threads}",
        f"--time={seconds or o.paged_time}", *extra, action,
    ]
    timeout = (seconds or o.paged_time) + SYSBENCH_GRACE_S * (6 if action == "prepare" else 1)
    result = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    output = result.stdout + result.stderr
    if result.returncode != 0:
        raise RuntimeError(f"sysbench {test} {action} failed: {output.strip()[-2000:]}")
    return output


def sysbench_measured(o, server, test, dist, rows):
    """(transactions/s, server CPU microseconds per query) of one sysbench run."""
    pid = server.process.pid
    cpu_before = cpu_seconds(pid)
    output = sysbench(o, server, test, o.paged_threads, "run", rows, extra=(f"--rand-type={dist}", "--report-interval=0"))
    cpu = cpu_seconds(pid) - cpu_before
    tps = float(SYSBENCH_PATTERNS["tps"].search(output).group(1))
    queries = int(re.search(r"queries:\s+(\d+)", output).group(1))
    return tps, cpu / queries * 1e6 if queries else None


def checkpoint_during_reads(o, server, rows):
    """(median per-second p99 outside the checkpoint, during it, how long it took) of a
    point_select run during which the server writes every dirty page."""
    output = {}
    run_seconds = max(CHECKPOINT_RUN_MIN_S, round(CHECKPOINT_RUN_PER_TIME * o.paged_time))
    run_started = time.monotonic()

    def reads():
        output["text"] = sysbench(o, server, "oltp_point_select", o.paged_threads, "run", rows, seconds=run_seconds,
                                  extra=("--report-interval=1", "--percentile=99"))

    reader = threading.Thread(target=reads)
    reader.start()
    time.sleep(run_seconds / 4)
    began = time.monotonic() - run_started
    took = force_checkpoint(server)
    ended = began + took
    reader.join()
    if "text" not in output:
        raise RuntimeError("the point_select run during the checkpoint failed")
    # "[ 5s ] thds: 16 tps: 1234.00 qps: ... lat (ms,99%): 1.23 ..." per second.
    seconds = [(int(s), float(p)) for s, p in re.findall(r"\[\s*(\d+)s \].*?lat \(ms,99%\): ([\d.]+)", output["text"])]
    # Second s covers (s-1, s]; the first one is warm-up.
    during = [p for s, p in seconds if s - 1 < ended and s > began]
    idle = [p for s, p in seconds[1:] if not (s - 1 < ended + 1 and s > began)]
    if not during or not idle:
        raise RuntimeError(f"the checkpoint ({began:.1f}-{ended:.1f} s) left no second during or outside it")
    return median(idle), median(during), took


def force_checkpoint(server):
    """Makes the server write every dirty page now; returns how long it took (s). The wait
    polls on one connection (the driver's `wait-status`): a client process per poll would
    add its own CPU to the seconds measured."""
    started = time.monotonic()
    if server.is_quill:
        count = status(server, "Quill_checkpoints")
        # Nothing committed since the newest checkpoint (a checkpoint the kept changes
        # started as the writes ended covered them all): the checkpointer has nothing to
        # write and starts none, so there is nothing to wait for. A checkpoint still being
        # written has not moved `Quill_checkpoint_lsn` yet, so this waits for it.
        if status(server, "Quill_checkpoint_lsn") >= status(server, "Quill_log_commit_lsn"):
            return time.monotonic() - started
        sql(server, "SET GLOBAL quill_checkpoint_interval_seconds = 1")
        try:
            run_driver(server, "wait-status", "--name", "Quill_checkpoints", "--differs-from", count,
                       "--timeout-s", CHECKPOINT_TIMEOUT_S, timeout_s=CHECKPOINT_TIMEOUT_S + 60)
        finally:
            sql(server, "SET GLOBAL quill_checkpoint_interval_seconds = DEFAULT")
    else:
        sql(server, "SET GLOBAL innodb_max_dirty_pages_pct = 0")
        try:
            run_driver(server, "wait-status", "--name", "Innodb_buffer_pool_pages_dirty", "--equals", 0,
                       "--timeout-s", CHECKPOINT_TIMEOUT_S, timeout_s=CHECKPOINT_TIMEOUT_S + 60)
        finally:
            sql(server, "SET GLOBAL innodb_max_dirty_pages_pct = DEFAULT")
    return time.monotonic() - started


def write_counters(server):
    """(bytes written to data files, bytes written to the log) so far."""
    if server.is_quill:
        return status(server, "Innodb_data_written"), status(server, "Innodb_os_log_written")
    pages = status(server, "Innodb_pages_written") + status(server, "Innodb_dblwr_pages_written")
    return pages * status(server, "Innodb_page_size"), status(server, "Innodb_os_log_written")


def status(server, name):
    rows = sql(server, f"SHOW GLOBAL STATUS LIKE '{name}'")[0]["rows"]
    if not rows:
        raise DriverError(f"the server has no status variable {name}")
    return int(rows[0][1])


def data_bytes(server):
    """Bytes on disk of the tables' files: Quill's page files, MariaDB's sbtest directory."""
    root = server.datadir / ("pages" if server.is_quill else "sbtest")
    total = 0
    for directory, _, files in os.walk(root):
        for name in files:
            total += os.stat(os.path.join(directory, name)).st_blocks * 512
    return total


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def reset_peak_rss(pid):
    with open(f"/proc/{pid}/clear_refs", "w") as f:
        f.write("5")


def proc_status_kib(pid, field):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"/proc/{pid}/status has no {field}")


def peak_rss_bytes(pid):
    return proc_status_kib(pid, "VmHWM") * 1024


def current_rss_bytes(pid):
    return proc_status_kib(pid, "VmRSS") * 1024


def drop_page_cache():
    """Start-up then reads from disk what it reads. Needs root; skipped otherwise."""
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3")
    except OSError:
        pass


def median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
