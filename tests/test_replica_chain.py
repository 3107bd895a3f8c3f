"""Replica chains (issue 13): a replica's binary log holds what it applied, with the GTIDs it
came with (`log_replica_updates`, ON by default as in MySQL 8), so a replica of a replica
follows the first source.

What it shows: A -> B -> C with GTID auto-position holds A's data on C, with A's GTIDs and
A's original commit times; C killed with kill -9 and restarted while A writes resumes from B
where it was (B's dump finds what C lacks among the transactions B applied); python-mysql-
replication reading B sees A's GTIDs; a replica that lacks transactions B applied but no longer
has in its binary log gets error 1236, as from MySQL; with `--log-replica-updates=OFF` B's
binary log holds none of what it applied, and a replica of B that lacks it gets 1236 at once.
"""

import time

from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.event import GtidEvent
from pymysqlreplication.row_event import WriteRowsEvent

from conftest import PrivateQuill
from test_replica import caught_up, one, rows, start_replica, status


def execute(server, *statements):
    c = server.connect()
    with c.cursor() as cur:
        for sql in statements:
            cur.execute(sql)
    c.close()


def io_error(replica, timeout_s: float = 30.0) -> dict:
    deadline = time.monotonic() + timeout_s
    while True:
        s = status(replica)
        if s.get("Last_IO_Errno") or time.monotonic() > deadline:
            return s
        time.sleep(0.05)


def test_a_replica_of_a_replica_follows_the_first_source(tmp_path):
    with (
        PrivateQuill(tmp_path / "a") as a,
        PrivateQuill(tmp_path / "b", "--server_id=2") as b,
        PrivateQuill(tmp_path / "c", "--server_id=3") as c,
    ):
        a_uuid = one(a, "SELECT @@server_uuid")[0]
        execute(a, "CREATE DATABASE shop", "CREATE TABLE shop.items (id INT PRIMARY KEY, name VARCHAR(20), n INT)")
        execute(a, *[f"INSERT INTO shop.items VALUES ({i}, 'item{i}', {i})" for i in range(1, 21)])
        start_replica(b, a)
        start_replica(c, b)
        execute(a, "UPDATE shop.items SET n = n * 10 WHERE id <= 5", "DELETE FROM shop.items WHERE id > 15",
                "ALTER TABLE shop.items ADD COLUMN note VARCHAR(10) DEFAULT 'x'", "INSERT INTO shop.items (id, name, n) VALUES (100, 'late', 1)",
                "CREATE TABLE shop.cheap (id INT PRIMARY KEY) AS SELECT id, UPPER(name) AS name FROM shop.items WHERE n < 10",
                "INSERT INTO shop.cheap VALUES (500, 'AFTER')")
        caught_up(a, b)
        s = caught_up(a, c)
        assert (s["Replica_IO_Running"], s["Replica_SQL_Running"]) == ("Yes", "Yes"), s
        want = rows(a, "SELECT * FROM shop.items ORDER BY id")
        assert rows(b, "SELECT * FROM shop.items ORDER BY id") == want
        assert rows(c, "SELECT * FROM shop.items ORDER BY id") == want
        # CREATE TABLE ... SELECT passes the chain: B logs the table and its rows as one
        # transaction under A's GTID, as A did.
        cheap = rows(a, "SELECT * FROM shop.cheap ORDER BY id")
        assert len(cheap) == 6 and cheap[-1] == (500, "AFTER")
        assert rows(c, "SELECT * FROM shop.cheap ORDER BY id") == cheap
        assert rows(c, "SHOW CREATE TABLE shop.cheap") == rows(a, "SHOW CREATE TABLE shop.cheap")
        # C holds A's GTIDs, and none of B's own (B has none): the whole chain is A's.
        assert one(c, "SELECT @@gtid_executed")[0] == one(a, "SELECT @@gtid_executed")[0]
        assert one(b, "SELECT @@gtid_purged")[0] == "", "B's binary log holds everything it applied"
        assert one(b, "SELECT @@log_replica_updates, @@log_slave_updates") == (1, 1)

        # The last transaction C applied is A's, with A's commit time as the original one and
        # B's as the immediate one.
        gtid, original, immediate = one(
            c,
            "SELECT LAST_APPLIED_TRANSACTION, LAST_APPLIED_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP,"
            " LAST_APPLIED_TRANSACTION_IMMEDIATE_COMMIT_TIMESTAMP FROM performance_schema.replication_applier_status_by_worker",
        )
        assert gtid.startswith(a_uuid + ":")
        assert original < immediate, (original, immediate)

        # C killed mid-stream and restarted while A writes: B finds what C lacks among the
        # transactions it applied, and C goes on where it was.
        c.kill()
        execute(a, *[f"INSERT INTO shop.items (id, name, n) VALUES ({i}, 'after', {i})" for i in range(200, 260)])
        c.start()
        caught_up(a, b)
        caught_up(a, c)
        assert rows(c, "SELECT * FROM shop.items ORDER BY id") == rows(a, "SELECT * FROM shop.items ORDER BY id")

        # A change-capture client reading B sees A's transactions under A's GTIDs.
        reader = BinLogStreamReader(
            connection_settings={"host": b.host, "port": b.port, "user": "root", "password": ""},
            server_id=100, blocking=False, only_events=[GtidEvent, WriteRowsEvent],
            log_file=rows(b, "SHOW BINARY LOGS")[0][0], log_pos=4, resume_stream=True,
        )
        try:
            events = list(reader)
        finally:
            reader.close()
        gtids = [e.gtid for e in events if isinstance(e, GtidEvent)]
        assert gtids and all(g.startswith(a_uuid + ":") for g in gtids), gtids[:3]
        written = [r["values"]["id"] for e in events if isinstance(e, WriteRowsEvent) for r in e.rows]
        assert 259 in written
        assert not any(isinstance(e, WriteRowsEvent) and e.schema == "mysql" for e in events), "the GTID bookkeeping is not in the binary log"


def test_a_replica_that_lacks_what_its_source_no_longer_logs_gets_1236(tmp_path):
    with (
        PrivateQuill(tmp_path / "a") as a,
        PrivateQuill(tmp_path / "b", "--server_id=2", "--log-replica-updates=OFF") as b,
        PrivateQuill(tmp_path / "c", "--server_id=3") as c,
    ):
        execute(a, "CREATE DATABASE d", "CREATE TABLE d.t (id INT PRIMARY KEY)", "INSERT INTO d.t VALUES (1)")
        start_replica(b, a)
        caught_up(a, b)
        assert one(b, "SELECT @@log_replica_updates")[0] == 0
        # B's binary log holds nothing it applied: all of it is purged.
        assert one(b, "SELECT @@gtid_purged")[0] == one(a, "SELECT @@gtid_executed")[0]
        start_replica(c, b)
        s = io_error(c)
        assert s["Last_IO_Errno"] == 1236, s
        assert "purged required binary logs" in s["Last_IO_Error"], s
        assert rows(c, "SHOW DATABASES LIKE 'd'") == ()
