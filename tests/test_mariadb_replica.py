"""A MariaDB 10.11 replica of a Quill source, by file and position (issue 13).

MariaDB's replica connects as MySQL's does (CHANGE MASTER TO ... MASTER_LOG_FILE, MASTER_LOG_POS,
START SLAVE), reads Quill's binary log over COM_BINLOG_DUMP and applies its row events and DDL.
After a mixed workload (DDL, an ALTER between row changes, multi-row inserts, updates and deletes
of every column type, a transaction of several statements, a rollback that must not reach the
replica, a transaction large enough to stream into the log in parts that writes rows of an
earlier part again) both sides hold the same rows: each table's checksum, computed the same way on both
servers from its rows in primary-key order, is equal. The replica also follows a source restart
(it reconnects to the same file and position), and its I/O thread reports error 1236 for a file
the source does not have.

The source runs with `collation_server` and `collation_connection` set to
`utf8mb4_general_ci`: QUERY events name them, and MariaDB 10.11 does not know MySQL 8's
default, utf8mb4_0900_ai_ci (the same holds for a MySQL 8 source; docs/binlog.md).
"""

import hashlib
import time

import pytest

from conftest import PrivateMariaDB, PrivateQuill

SOURCE_OPTIONS = ("--collation_server=utf8mb4_general_ci", "--collation_connection=utf8mb4_general_ci", "--quill_log_segment_bytes=65536")

WORKLOAD = [
    "CREATE DATABASE shop",
    "CREATE TABLE shop.items (id INT PRIMARY KEY, name VARCHAR(40) NOT NULL, price DECIMAL(10,2), stock SMALLINT UNSIGNED, added DATE)",
    "CREATE TABLE shop.kinds (id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY, i INT, m MEDIUMINT, f FLOAT, d DOUBLE, c CHAR(8),"
    " vb VARBINARY(16), tx TEXT, bl BLOB, dt DATETIME(3), ts TIMESTAMP(6) NULL, tm TIME(2), y YEAR, KEY (i))",
    "INSERT INTO shop.kinds (i, m, f, d, c, vb, tx, bl, dt, ts, tm, y) VALUES"
    " (-5, -70000, 1.5, -2.25, 'héllo', x'00ff10', 'long text ünï', x'deadbeef', '2026-11-24 10:11:12.345',"
    " '2026-11-24 10:11:12.123456', '-12:34:56.78', 2026),"
    " (NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
    "UPDATE shop.kinds SET tx = 'changed', m = 8388607 WHERE id = 1",
    "ALTER TABLE shop.kinds ADD COLUMN extra VARCHAR(5) DEFAULT 'x'",
    "INSERT INTO shop.kinds (i, extra) VALUES (7, 'yy')",
    "DELETE FROM shop.kinds WHERE id = 2",
]


def checksum(server, table: str) -> tuple[int, str]:
    """The row count and a digest of every row, in primary-key order, as text."""
    c = server.connect()
    try:
        with c.cursor() as cur:
            cur.execute(f"SELECT * FROM {table} ORDER BY 1")
            rows = cur.fetchall()
    finally:
        c.close()
    digest = hashlib.sha256(repr([tuple(None if v is None else str(v) for v in row) for row in rows]).encode()).hexdigest()
    return len(rows), digest


def replica_status(replica) -> dict:
    c = replica.connect()
    try:
        with c.cursor() as cur:
            cur.execute("SHOW SLAVE STATUS")
            row = cur.fetchone()
            return dict(zip([d[0] for d in cur.description], row)) if row else {}
    finally:
        c.close()


def wait_until_applied(source, replica, timeout_s: float = 30.0) -> dict:
    """Waits until the replica has executed everything up to the source's current position."""
    c = source.connect()
    with c.cursor() as cur:
        cur.execute("SHOW MASTER STATUS")
        file, position = cur.fetchone()[:2]
    c.close()
    deadline = time.monotonic() + timeout_s
    while True:
        status = replica_status(replica)
        if (status.get("Relay_Master_Log_File"), status.get("Exec_Master_Log_Pos")) == (file, position):
            return status
        if status.get("Last_SQL_Error") or time.monotonic() > deadline:
            raise AssertionError(f"the replica did not reach {file}:{position}: {status}")
        time.sleep(0.05)


def start_replica(replica, source, file: str, position: int) -> None:
    c = replica.connect()
    with c.cursor() as cur:
        cur.execute(
            f"CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT={source.port}, MASTER_USER='root', MASTER_PASSWORD='',"
            f" MASTER_LOG_FILE='{file}', MASTER_LOG_POS={position}, MASTER_USE_GTID=no, MASTER_CONNECT_RETRY=1"
        )
        cur.execute("START SLAVE")
    c.close()


def test_a_mariadb_replica_applies_a_mixed_workload_and_follows_a_restart(tmp_path):
    with PrivateQuill(tmp_path / "source", *SOURCE_OPTIONS) as source, PrivateMariaDB("--server-id=2") as mariadb:
        replica = mariadb.server
        c = source.connect()
        cur = c.cursor()
        for sql in WORKLOAD:
            cur.execute(sql)
        # Enough rows to run over several 64 KiB segments, so the replica follows ROTATEs.
        for start in range(1, 1201, 100):
            cur.execute(
                "INSERT INTO shop.items VALUES " + ", ".join(f"({i}, 'item {i} {'x' * 30}', {i}.25, {i % 500}, '2026-01-01' + INTERVAL {i % 300} DAY)" for i in range(start, start + 100))
            )
        cur.execute("BEGIN")
        cur.execute("UPDATE shop.items SET price = price * 2 WHERE id % 7 = 0")
        cur.execute("DELETE FROM shop.items WHERE id % 11 = 0")
        cur.execute("INSERT INTO shop.items VALUES (5000, 'late', NULL, NULL, NULL)")
        cur.execute("COMMIT")
        cur.execute("BEGIN")
        cur.execute("DELETE FROM shop.items")
        cur.execute("ROLLBACK")
        # A transaction large enough to stream into the log in parts, which writes rows of an
        # earlier part again: the replica must get each row once, as it ends.
        cur.execute("CREATE TABLE shop.big (id INT PRIMARY KEY, v INT)")
        cur.execute("BEGIN")
        cur.execute("INSERT INTO shop.big VALUES " + ", ".join(f"({i}, {i})" for i in range(1, 10001)))
        cur.execute("UPDATE shop.big SET v = v + 1000000 WHERE id <= 100")
        cur.execute("DELETE FROM shop.big WHERE id BETWEEN 101 AND 150")
        cur.execute("INSERT INTO shop.big VALUES (20000, 1)")
        cur.execute("DELETE FROM shop.big WHERE id = 20000")
        cur.execute("COMMIT")
        # Foreign key cascades: Quill logs the rows a cascade writes as rows of their own,
        # marked NO_FOREIGN_KEY_CHECKS, so MariaDB applies them and does not cascade again
        # (without the flag it cascades the parent's change itself and then finds no child
        # row to apply the logged one to).
        cur.execute("CREATE TABLE shop.owners (id INT PRIMARY KEY)")
        cur.execute("CREATE TABLE shop.pets (id INT PRIMARY KEY, owner INT, FOREIGN KEY (owner) REFERENCES shop.owners (id) ON UPDATE CASCADE ON DELETE CASCADE)")
        cur.execute("INSERT INTO shop.owners VALUES (1), (2)")
        cur.execute("INSERT INTO shop.pets VALUES (10, 1), (11, 1), (20, 2)")
        cur.execute("UPDATE shop.owners SET id = 100 WHERE id = 1")
        cur.execute("DELETE FROM shop.owners WHERE id = 2")
        # ENUM and SET go as member numbers and bits, JSON as its text.
        cur.execute("CREATE TABLE shop.shirts (id INT PRIMARY KEY, size ENUM('s', 'm', 'l'), extras SET('pocket', 'logo'), spec JSON)")
        cur.execute("INSERT INTO shop.shirts VALUES (1, 'm', 'logo,pocket', '{\"b\": 1, \"a\": [1, 2]}'), (2, 'l', '', NULL)")
        cur.execute("UPDATE shop.shirts SET size = 's', extras = 'logo' WHERE id = 2")
        cur.execute("SHOW GLOBAL STATUS LIKE 'Quill_log_stream_parts'")
        assert int(cur.fetchone()[1]) >= 1, "the large transaction streamed"

        cur.execute("SHOW BINARY LOGS")
        assert len(cur.fetchall()) >= 2, "the workload spans several files"
        start_replica(replica, source, "quill-bin.000001", 4)
        status = wait_until_applied(source, replica)
        assert status["Slave_IO_Running"] == "Yes" and status["Slave_SQL_Running"] == "Yes", status
        for table in ("shop.items", "shop.kinds", "shop.big", "shop.owners", "shop.pets", "shop.shirts"):
            assert checksum(source, table) == checksum(replica, table), table
        assert checksum(replica, "shop.pets")[0] == 2, "the delete cascaded once"
        assert checksum(replica, "shop.items")[0] == 1200 - 1200 // 11 + 1
        assert checksum(replica, "shop.big")[0] == 10000 - 50

        # The source restarts; the replica reconnects at its position and goes on.
        c.close()
        source.stop()
        source.start()
        c = source.connect()
        cur = c.cursor()
        cur.execute("UPDATE shop.items SET name = 'after restart' WHERE id = 1")
        cur.execute("INSERT INTO shop.kinds (i) VALUES (99)")
        wait_until_applied(source, replica)
        for table in ("shop.items", "shop.kinds"):
            assert checksum(source, table) == checksum(replica, table), table
        c.close()


def test_a_file_the_source_does_not_have_stops_the_io_thread_with_1236(tmp_path):
    with PrivateQuill(tmp_path / "source", *SOURCE_OPTIONS) as source, PrivateMariaDB("--server-id=2") as mariadb:
        start_replica(mariadb.server, source, "quill-bin.999999", 4)
        deadline = time.monotonic() + 20
        while (status := replica_status(mariadb.server)).get("Last_IO_Errno") != 1236:
            assert time.monotonic() < deadline, status
            time.sleep(0.1)
        assert "Could not find first log file name" in status["Last_IO_Error"]
