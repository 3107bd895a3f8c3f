"""The replication-lag workload: a source and a replica of the target's kind, started on this
host for the run and stopped after it, then the driver's `replication-lag` measurement.

- Quill: two Quill servers (the replica with `--server_id=2`), the replica following the source
  by GTID auto-position; lag read from the replica's
  `performance_schema.replication_applier_status_by_worker`, as MySQL 8 reports it.
- MariaDB: a source with the binary log on (`sync_binlog=1`, ROW) and a replica with
  `slave_run_triggers_for_rbr=YES`, by file and position; lag stamped by a replica trigger
  (`SYSDATE(6)` against the source's `NOW(6)`), the way MariaDB's lag is usually published.

Both pairs run with `innodb_flush_log_at_trx_commit=1` on both sides (Quill's default).

The insert-storm-replica workloads run the driver's 16-client insert storm on such a source
twice in one pair: first with no replica attached, then with the replica attached and caught
up (semi-sync off, or on: `rpl_semi_sync_master_enabled` on the source and the replica's
`rpl_semi_sync_slave_enabled`, under each server's name). They report the second run's
figures, the first's inserts/s and the ratio of the two: what a replica costs the source.

The replica-catch-up workload runs the storm (three times the storm's count per client) on a
source alone, then attaches a fresh replica from the start of the source's binary log, once
with one applier worker and once with four (Quill: `replica_parallel_workers` 0 and 4;
MariaDB: `slave_parallel_threads` 0 and 4, optimistic mode), and times each until it holds every
row: the rate a replica applies a backlog at, connection set-up included.
"""

import time

from .driver import run_driver, sql
from .servers import MARIADB_BINLOG_OPTIONS, Server

#: How long the replica may take to connect to its source.
CONNECT_TIMEOUT_S = 30


def replication_lag(o, server):
    extra = () if server.is_quill else ("--slave-run-triggers-for-rbr=YES",)
    source, replica = pair_servers(o, server, "lag", replica_extra=extra)
    try:
        source.start()
        replica.start()
        attach(source, replica, server.is_quill)
        return run_driver(source, "replication-lag", "--replica-port", replica.port, "--count", o.lag_count,
                          "--interval-ms", o.lag_interval_ms, "--method", "perf-schema" if server.is_quill else "trigger")
    finally:
        replica.stop()
        source.stop()


#: How long a replica may take to apply what the source wrote before it was attached.
CATCH_UP_TIMEOUT_S = 120


def pair_servers(o, server, label, source_extra=(), replica_extra=()):
    """A source and a replica server of the target's kind (not yet replicating)."""
    if server.name not in ("quill", "mariadb", "mariadb-binlog"):
        raise RuntimeError(f"no replication pair for {server.name}")
    suffix = f"{'quill' if server.is_quill else 'mariadb'}-{time.monotonic_ns()}"
    if server.is_quill:
        return (Server("quill", o.workdir, f"{label}-source-{suffix}", extra=list(source_extra)),
                Server("quill", o.workdir, f"{label}-replica-{suffix}", extra=["--server_id=2", *replica_extra]))
    return (Server("mariadb", o.workdir, f"{label}-source-{suffix}", extra=[*MARIADB_BINLOG_OPTIONS, *source_extra]),
            Server("mariadb", o.workdir, f"{label}-replica-{suffix}", extra=["--server-id=2", *replica_extra]))


def attach(source, replica, quill):
    """Points the replica at the source (Quill by GTID, MariaDB from the source's current file
    and position) and waits until it is connected."""
    if quill:
        sql(replica, f"CHANGE REPLICATION SOURCE TO SOURCE_HOST='127.0.0.1', SOURCE_PORT={source.port}, SOURCE_USER='root', "
                     "SOURCE_PASSWORD='', SOURCE_AUTO_POSITION=1", "START REPLICA")
    else:
        status = sql(source, "SHOW MASTER STATUS")[0]["rows"][0]
        sql(replica, f"CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT={source.port}, MASTER_USER='root', "
                     f"MASTER_PASSWORD='', MASTER_USE_GTID=no, MASTER_LOG_FILE='{status[0]}', MASTER_LOG_POS={status[1]}",
            "START SLAVE")
    wait_connected(replica)


def insert_storm_replica(o, server, semi_sync):
    if semi_sync:
        replica_extra = ["--rpl_semi_sync_replica_enabled=ON"] if server.is_quill else ["--rpl-semi-sync-slave-enabled=ON"]
    else:
        replica_extra = []
    source, replica = pair_servers(o, server, "storm", replica_extra=replica_extra)
    storm = ["insert-storm", "--clients", o.insert_clients, "--count", o.insert_count]
    try:
        source.start()
        replica.start()
        alone = run_driver(source, *storm)
        # The replica is attached at the source's current position (MariaDB) or applies
        # everything (Quill); either way the storm table it then holds is complete.
        attach(source, replica, server.is_quill)
        rows = int(o.insert_clients) * int(o.insert_count)
        if server.is_quill and wait_rows(replica, rows) < rows:
            raise RuntimeError(f"the replica did not catch up within {CATCH_UP_TIMEOUT_S} s")
        if semi_sync:
            sql(source, "SET GLOBAL rpl_semi_sync_master_enabled = ON")
            wait_status(source, "Rpl_semi_sync_master_status", "ON")
        replicated = run_driver(source, *storm)
        if semi_sync:
            [result] = sql(source, "SHOW GLOBAL STATUS LIKE 'Rpl_semi_sync_master_no_times'")
            fallbacks = int(result["rows"][0][1])
            replicated["checks"].append({"name": "semi-sync never fell back to async", "ok": fallbacks == 0,
                                         "detail": f"Rpl_semi_sync_master_no_times = {fallbacks}"})
        held = wait_rows(replica, rows)
        replicated["checks"].append({"name": "the replica holds every row", "ok": held == rows, "detail": f"{held} of {rows}"})
    finally:
        replica.stop()
        source.stop()
    rate = {m["name"]: m["value"] for m in alone["metrics"]}.get("inserts/s")
    with_replica = {m["name"]: m["value"] for m in replicated["metrics"]}.get("inserts/s")
    replicated["metrics"].append({"name": "inserts/s with no replica", "value": rate, "unit": "1/s", "better": "higher",
                                  "missing": rate is None, "unsupported": False})
    ratio = with_replica / rate if rate and with_replica else None
    replicated["metrics"].append({"name": "with replica / with none", "value": ratio, "unit": "x", "better": "higher",
                                  "missing": ratio is None, "unsupported": False})
    replicated["checks"] = alone["checks"] + replicated["checks"]
    return replicated


def replica_catch_up(o, server):
    source, _ = pair_servers(o, server, "catch-up")
    count = int(o.insert_count) * 3
    rows = int(o.insert_clients) * count
    result = {"metrics": [], "checks": []}
    rates = {}
    try:
        source.start()
        alone = run_driver(source, "insert-storm", "--clients", o.insert_clients, "--count", count)
        result["checks"] += alone["checks"]
        for workers in (1, 4):
            threads = 0 if workers == 1 else workers
            if server.is_quill:
                extra = [f"--replica_parallel_workers={threads}"]
            else:
                extra = [f"--slave-parallel-threads={threads}", "--slave-parallel-mode=optimistic"]
            _, replica = pair_servers(o, server, f"catch-up-{workers}", replica_extra=extra)
            try:
                replica.start()
                started = time.monotonic()
                attach_from_start(source, replica, server.is_quill)
                held = wait_rows(replica, rows, poll_s=0.02)
                elapsed = time.monotonic() - started
            finally:
                replica.stop()
            label = "1 worker" if workers == 1 else f"{workers} workers"
            rates[workers] = rows / elapsed if held == rows else None
            result["metrics"].append({"name": f"applied/s, {label}", "value": rates[workers], "unit": "1/s", "better": "higher",
                                      "missing": rates[workers] is None, "unsupported": False})
            result["checks"].append({"name": f"the replica with {label} holds every row", "ok": held == rows, "detail": f"{held} of {rows}"})
    finally:
        source.stop()
    ratio = rates[4] / rates[1] if rates.get(1) and rates.get(4) else None
    result["metrics"].append({"name": "4 workers / 1", "value": ratio, "unit": "x", "better": "higher", "missing": ratio is None,
                              "unsupported": False})
    return result


def attach_from_start(source, replica, quill):
    """Points the replica at the start of the source's binary log (Quill: by GTID, from
    nothing; MariaDB: its first file) and starts it."""
    if quill:
        attach(source, replica, quill)
        return
    first = sql(source, "SHOW BINARY LOGS")[0]["rows"][0][0]
    sql(replica, f"CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT={source.port}, MASTER_USER='root', "
                 f"MASTER_PASSWORD='', MASTER_USE_GTID=no, MASTER_LOG_FILE='{first}', MASTER_LOG_POS=4", "START SLAVE")


def wait_rows(replica, rows, poll_s=0.2):
    """Waits until the replica's storm table has `rows` rows, at most CATCH_UP_TIMEOUT_S;
    returns how many it has."""
    deadline = time.monotonic() + CATCH_UP_TIMEOUT_S
    held = 0
    while time.monotonic() < deadline:
        [result] = sql(replica, "SELECT COUNT(*) FROM quillbench.storm", stop_on_error=False)
        held = 0 if result.get("error") else int(result["rows"][0][0])
        if held >= rows:
            break
        time.sleep(poll_s)
    return held


def wait_status(server, name, value):
    deadline = time.monotonic() + CONNECT_TIMEOUT_S
    while time.monotonic() < deadline:
        [result] = sql(server, f"SHOW GLOBAL STATUS LIKE '{name}'")
        if result["rows"] and result["rows"][0][1] == value:
            return
        time.sleep(0.1)
    raise RuntimeError(f"{name} did not become {value} within {CONNECT_TIMEOUT_S} s")


def wait_connected(replica):
    deadline = time.monotonic() + CONNECT_TIMEOUT_S
    while time.monotonic() < deadline:
        [result] = sql(replica, "SHOW SLAVE STATUS")
        columns = result.get("columns") or []
        rows = result["rows"]
        if rows and columns and "Slave_IO_Running" in columns and rows[0][columns.index("Slave_IO_Running")] == "Yes":
            return
        if rows and columns and "Replica_IO_Running" in columns and rows[0][columns.index("Replica_IO_Running")] == "Yes":
            return
        time.sleep(0.2)
    raise RuntimeError(f"the replica did not connect to its source within {CONNECT_TIMEOUT_S} s")
