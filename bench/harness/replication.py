"""The replication-lag workload: a source and a replica of the target's kind, started on this
host for the run and stopped after it, then the driver's `replication-lag` measurement.

- Quill: two Quill servers (the replica with `--server_id=2`), the replica following the source
  by GTID auto-position; lag read from the replica's
  `performance_schema.replication_applier_status_by_worker`, as MySQL 8 reports it.
- MariaDB: a source with the binary log on (`sync_binlog=1`, ROW) and a replica with
  `slave_run_triggers_for_rbr=YES`, by file and position; lag stamped by a replica trigger
  (`SYSDATE(6)` against the source's `NOW(6)`), the way MariaDB's lag is usually published.

Both pairs run with `innodb_flush_log_at_trx_commit=1` on both sides (Quill's default).
"""

import time

from .driver import run_driver, sql
from .servers import MARIADB_BINLOG_OPTIONS, Server

#: How long the replica may take to connect to its source.
CONNECT_TIMEOUT_S = 30


def replication_lag(o, server):
    if server.name not in ("quill", "mariadb", "mariadb-binlog"):
        raise RuntimeError(f"no replication pair for {server.name}")
    kind = "quill" if server.is_quill else "mariadb"
    suffix = f"{kind}-{time.monotonic_ns()}"
    if server.is_quill:
        source = Server("quill", o.workdir, f"lag-source-{suffix}")
        replica = Server("quill", o.workdir, f"lag-replica-{suffix}", extra=["--server_id=2"])
    else:
        source = Server("mariadb", o.workdir, f"lag-source-{suffix}", extra=MARIADB_BINLOG_OPTIONS)
        replica = Server("mariadb", o.workdir, f"lag-replica-{suffix}", extra=["--server-id=2", "--slave-run-triggers-for-rbr=YES"])
    try:
        source.start()
        replica.start()
        if server.is_quill:
            sql(replica, f"CHANGE REPLICATION SOURCE TO SOURCE_HOST='127.0.0.1', SOURCE_PORT={source.port}, SOURCE_USER='root', "
                         "SOURCE_PASSWORD='', SOURCE_AUTO_POSITION=1", "START REPLICA")
            method = "perf-schema"
        else:
            status = sql(source, "SHOW MASTER STATUS")[0]["rows"][0]
            sql(replica, f"CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT={source.port}, MASTER_USER='root', "
                         f"MASTER_PASSWORD='', MASTER_USE_GTID=no, MASTER_LOG_FILE='{status[0]}', MASTER_LOG_POS={status[1]}",
                "START SLAVE")
            method = "trigger"
        wait_connected(replica)
        return run_driver(source, "replication-lag", "--replica-port", replica.port, "--count", o.lag_count,
                          "--interval-ms", o.lag_interval_ms, "--method", method)
    finally:
        replica.stop()
        source.stop()


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
