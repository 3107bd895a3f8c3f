"""Binary log retention (issue 13): `binlog_expire_logs_seconds`, `PURGE BINARY LOGS` and
`gtid_purged`.

- A checkpoint no longer takes the binary log's files with it: they stay until they expire
  (`binlog_expire_logs_seconds`, MySQL's 30 days by default) or are purged.
- `PURGE BINARY LOGS TO 'file'` removes the files before it; `@@gtid_purged` then names this
  server's transactions that went with them, and a replica that needs them gets MySQL's 1236.
- An unknown file is MySQL's 1373. `PURGE ... BEFORE` takes an expression.
- With a short expiry, the next checkpoint removes the expired files by itself.
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
