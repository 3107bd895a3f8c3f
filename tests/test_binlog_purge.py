"""Binary log retention (issue 13): `binlog_expire_logs_seconds`, `PURGE BINARY LOGS` and
`gtid_purged`.

- A checkpoint no longer takes the binary log's files with it: they stay until they expire
  (`binlog_expire_logs_seconds`, MySQL's 30 days by default) or are purged.
- `PURGE BINARY LOGS TO 'file'` removes the files before it; `@@gtid_purged` then names this
  server's transactions that went with them, and a replica that needs them gets MySQL's 1236.
- An unknown file is MySQL's 1373. `PURGE ... BEFORE` takes an expression.
- With a short expiry, the next checkpoint removes the expired files by itself.
- A restart keeps the files its checkpoint covers from just past the newest DDL statement on,
  event for event and position for position.
"""

import time

import pymysql
import pytest

from conftest import PrivateQuill
from test_replica import start_replica, status

OPTIONS = ("--quill_log_segment_bytes=65536", "--quill-checkpoint-log-bytes=65536", "--quill-checkpoint-interval-seconds=1")


def binary_logs(cur) -> list[str]:
    cur.execute("SHOW BINARY LOGS")
    return [row[0] for row in cur.fetchall()]


def fill(cur, start: int, count: int):
    for i in range(start, start + count):
        cur.execute("INSERT INTO d.t VALUES (%s, REPEAT('x', 2000))", (i,))


def test_files_outlive_checkpoints_until_purged_or_expired(tmp_path):
    with PrivateQuill(tmp_path / "source", *OPTIONS) as source:
        c = source.connect()
        cur = c.cursor()
        cur.execute("SELECT @@binlog_expire_logs_seconds, @@gtid_purged, @@server_uuid")
        expire, purged, uuid = cur.fetchone()
        assert (expire, purged) == (2592000, "")
        cur.execute("CREATE DATABASE d")
        cur.execute("CREATE TABLE d.t (id INT PRIMARY KEY, pad TEXT)")
        fill(cur, 1, 200)
        files = binary_logs(cur)
        assert len(files) >= 4, files
        time.sleep(2.5)  # checkpoints ran meanwhile
        assert binary_logs(cur)[: len(files)] == files, "a checkpoint removed files that had not expired"

        with pytest.raises(pymysql.err.OperationalError) as unknown:
            cur.execute("PURGE BINARY LOGS TO 'quill-bin.999999'")
        assert unknown.value.args[0] == 1373
        cur.execute(f"PURGE BINARY LOGS TO '{files[2]}'")
        assert binary_logs(cur)[0] == files[2]
        cur.execute("SELECT @@gtid_purged")
        purged = cur.fetchone()[0]
        assert purged.startswith(f"{uuid}:1-") and int(purged.rsplit("-", 1)[1]) >= 2, purged

        # A replica that needs a purged file is refused as MySQL refuses it.
        with PrivateQuill(tmp_path / "replica", "--server_id=2") as replica:
            start_replica(replica, source, f"SOURCE_LOG_FILE='{files[0]}', SOURCE_LOG_POS=4")
            deadline = time.monotonic() + 20
            while (s := status(replica)).get("Last_IO_Errno") != 1236:
                assert time.monotonic() < deadline, s
                time.sleep(0.05)

        cur.execute("PURGE MASTER LOGS BEFORE NOW() - INTERVAL 1 DAY")
        assert binary_logs(cur)[0] == files[2], "nothing is a day old"

        # A short expiry: the next checkpoints remove what expired, never what recovery needs.
        cur.execute("SET GLOBAL binlog_expire_logs_seconds = 1")
        time.sleep(1.5)
        fill(cur, 1000, 100)
        deadline = time.monotonic() + 20
        while files[2] in binary_logs(cur):
            assert time.monotonic() < deadline, binary_logs(cur)
            time.sleep(0.2)
        c.close()

    # After a restart every row is there: nothing recovery needed was removed.
    with PrivateQuill(tmp_path / "source", *OPTIONS) as source:
        with source.connect().cursor() as cur:
            cur.execute("SELECT COUNT(*) FROM d.t")
            assert cur.fetchone()[0] == 300


def binary_log_sizes(cur) -> list[tuple]:
    cur.execute("SHOW BINARY LOGS")
    return [tuple(row[:2]) for row in cur.fetchall()]


def events_from(server, log_file: str) -> list[tuple]:
    """Every row event from `log_file`'s start to the end of the binary log, with the file
    and position after it, as python-mysql-replication reads them."""
    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication.row_event import WriteRowsEvent

    reader = BinLogStreamReader(
        connection_settings={"host": server.host, "port": server.port, "user": "root", "password": ""},
        server_id=100, blocking=False, only_events=[WriteRowsEvent], log_file=log_file, log_pos=4, resume_stream=True,
    )
    try:
        return [(reader.log_file, reader.log_pos, tuple(r["values"]["id"] for r in e.rows)) for e in reader]
    finally:
        reader.close()


def test_a_restart_keeps_the_files_after_the_newest_ddl_statement(tmp_path):
    """A restart used to remove every file its checkpoint covered. Now it keeps those the
    checkpoint's table definitions still describe: every file while the statements it covers
    only made tables (a new table changes how no earlier record reads), and the files after the
    one holding the newest statement that changed a table (ALTER, DROP, RENAME): the same
    names, sizes and events, read from the first."""
    with PrivateQuill(tmp_path / "source", *OPTIONS) as source:
        c = source.connect()
        cur = c.cursor()
        cur.execute("CREATE DATABASE d")
        cur.execute("CREATE TABLE d.t (id INT PRIMARY KEY, pad TEXT)")
        cur.execute("SHOW MASTER STATUS")
        ddl_file = cur.fetchone()[0]
        fill(cur, 1, 200)
        time.sleep(2.5)  # checkpoints ran meanwhile
        before = binary_log_sizes(cur)
        assert len(before) >= 4 and before[0][0] == ddl_file, before
        events = events_from(source, before[1][0])
        assert events
        c.close()
        source.kill()
        source.start()
        c = source.connect()
        cur = c.cursor()
        after = binary_log_sizes(cur)
        # Only new tables so far: every file is as it was (the last may have grown), and reads
        # back event for event, position for position.
        assert after[: len(before) - 1] == before[:-1], (before, after)
        assert events_from(source, before[1][0]) == events

        # A statement that changes the table, more rows and a checkpoint: the next restart
        # removes the files up to the one that holds the statement, and keeps the ones after it.
        cur.execute("ALTER TABLE d.t MODIFY pad MEDIUMTEXT")
        cur.execute("SHOW MASTER STATUS")
        alter_file = cur.fetchone()[0]
        fill(cur, 1000, 200)
        time.sleep(2.5)
        files = [name for name, _ in binary_log_sizes(cur)]
        assert files[0] < alter_file < files[-1], (alter_file, files)
        c.close()
        source.kill()
        source.start()
        with source.connect().cursor() as cur:
            kept = [name for name, _ in binary_log_sizes(cur)]
            assert kept[0] > alter_file and kept == [f for f in files if f > alter_file][: len(kept)], (alter_file, files, kept)
            cur.execute("SELECT COUNT(*) FROM d.t")
            assert cur.fetchone()[0] == 400
