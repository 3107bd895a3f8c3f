"""A Quill replica of a Quill source (issue 13): CHANGE REPLICATION SOURCE TO, START / STOP
REPLICA, SHOW REPLICA STATUS, and what must hold when things go wrong.

What it shows: the replica applies every column type (a negative TIME(2) with a fraction
included), DDL, updates and deletes, and holds what the source holds; the GTIDs it applied are
durable with its rows, so after a kill -9 of the replica under a concurrent workload it
resumes where it was, never losing or repeating a transaction, and after a kill -9 of the source
it reconnects by itself (both in `test_replication_crash.py`, with 16 clients); a replica whose data diverged stops its SQL thread with error 1032 in
Last_SQL_Error; wrong credentials and an unreachable source show as I/O errors; the replica's
own GTID set holds no transaction of its own.
"""

import threading
import time

import pymysql
import pytest

from conftest import PrivateQuill


def status(replica) -> dict:
    c = replica.connect()
    try:
        with c.cursor() as cur:
            cur.execute("SHOW REPLICA STATUS")
            row = cur.fetchone()
            return dict(zip([d[0] for d in cur.description], row)) if row else {}
    finally:
        c.close()


def one(server, sql):
    c = server.connect()
    try:
        with c.cursor() as cur:
            cur.execute(sql)
            return cur.fetchone()
    finally:
        c.close()


def rows(server, sql):
    c = server.connect()
    try:
        with c.cursor() as cur:
            cur.execute(sql)
            return cur.fetchall()
    finally:
        c.close()


def caught_up(source, replica, timeout_s: float = 30.0) -> dict:
    """Waits until the replica has applied every transaction the source has."""
    want = one(source, "SELECT @@gtid_executed")[0]
    deadline = time.monotonic() + timeout_s
    while True:
        s = status(replica)
        if s.get("Executed_Gtid_Set") == want:
            return s
        if s.get("Last_SQL_Error") or time.monotonic() > deadline:
            raise AssertionError(f"the replica did not reach {want}: {s}")
        time.sleep(0.05)


def start_replica(replica, source, extra: str = "SOURCE_AUTO_POSITION=1", user: str = "root"):
    c = replica.connect()
    with c.cursor() as cur:
        cur.execute(
            f"CHANGE REPLICATION SOURCE TO SOURCE_HOST='127.0.0.1', SOURCE_PORT={source.port}, SOURCE_USER='{user}', SOURCE_PASSWORD='',"
            f" SOURCE_CONNECT_RETRY=1, {extra}"
        )
        cur.execute("START REPLICA")
    c.close()


def ledger_workload(connect, stop: threading.Event, acknowledged: dict) -> list:
    """One thread per key of `acknowledged`, each inserting rows (client, n) into
    `ledger.entries` one autocommit at a time on `connect()` and appending each n the server
    acknowledged; a failed connection or statement (the server went away, or is read-only)
    is retried on a new connection, and its n is never counted."""
    def client(k):
        n = 0
        while not stop.is_set():
            try:
                conn = connect()
                with conn.cursor() as cur:
                    while not stop.is_set():
                        n += 1
                        cur.execute("INSERT INTO ledger.entries VALUES (%s, %s)", (k, n))
                        acknowledged[k].append(n)
            except pymysql.err.MySQLError:
                time.sleep(0.05)

    threads = [threading.Thread(target=client, args=(k,), daemon=True) for k in acknowledged]
    for t in threads:
        t.start()
    return threads


@pytest.fixture
def pair(tmp_path):
    with PrivateQuill(tmp_path / "source") as source, PrivateQuill(tmp_path / "replica", "--server_id=2") as replica:
        yield source, replica


def test_a_replica_applies_every_type_ddl_updates_and_deletes(pair):
    source, replica = pair
    c = source.connect()
    cur = c.cursor()
    cur.execute("CREATE DATABASE shop")
    cur.execute(
        "CREATE TABLE shop.kinds (id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY, i INT, m MEDIUMINT, f FLOAT, d DOUBLE,"
        " dec1 DECIMAL(20,6), c CHAR(8), vb VARBINARY(16), tx TEXT, bl BLOB, dt DATE, dtm DATETIME(3), ts TIMESTAMP(6) NULL,"
        " tm TIME(2), y YEAR)"
    )
    cur.execute(
        "INSERT INTO shop.kinds (i, m, f, d, dec1, c, vb, tx, bl, dt, dtm, ts, tm, y) VALUES"
        " (-5, -70000, 1.5, -2.25, -12345.678901, 'h''é\\\\llo', x'00ff10', 'long text ünï', x'deadbeef', '2026-11-24',"
        " '2026-11-24 10:11:12.345', '2026-11-24 10:11:12.123456', '-01:02:03.45', 2026),"
        " (NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)"
    )
    start_replica(replica, source)
    cur.execute("UPDATE shop.kinds SET tx = 'changed', m = 8388607 WHERE id = 1")
    cur.execute("ALTER TABLE shop.kinds ADD COLUMN extra VARCHAR(5) DEFAULT 'x'")
    cur.execute("INSERT INTO shop.kinds (i, extra) VALUES (7, 'yy')")
    cur.execute("DELETE FROM shop.kinds WHERE id = 2")
    s = caught_up(source, replica)
    assert (s["Replica_IO_Running"], s["Replica_SQL_Running"]) == ("Yes", "Yes")
    assert rows(replica, "SELECT * FROM shop.kinds ORDER BY id") == rows(source, "SELECT * FROM shop.kinds ORDER BY id")
    assert rows(replica, "SELECT tm FROM shop.kinds WHERE id = 1")[0][0] == rows(source, "SELECT tm FROM shop.kinds WHERE id = 1")[0][0]
    # The replica's GTIDs are the source's only: none of its own.
    assert one(replica, "SELECT @@gtid_executed")[0] == one(source, "SELECT @@gtid_executed")[0]
    # Its binary log holds what it applied, under the source's GTIDs (test_replica_chain.py).
    assert one(replica, "SELECT @@log_replica_updates")[0] == 1
    c.close()


def test_a_diverged_replica_stops_with_1032_and_bad_sources_are_io_errors(pair, tmp_path):
    source, replica = pair
    c = source.connect()
    with c.cursor() as cur:
        cur.execute("CREATE DATABASE d")
        cur.execute("CREATE TABLE d.t (id INT PRIMARY KEY, v INT)")
        cur.execute("INSERT INTO d.t VALUES (1, 1), (2, 2)")
    start_replica(replica, source)
    caught_up(source, replica)
    r = replica.connect()
    with r.cursor() as cur:
        cur.execute("DELETE FROM d.t WHERE id = 2")
    r.close()
    with c.cursor() as cur:
        cur.execute("UPDATE d.t SET v = 20 WHERE id = 2")
    deadline = time.monotonic() + 20
    while (s := status(replica))["Replica_SQL_Running"] == "Yes":
        assert time.monotonic() < deadline, s
        time.sleep(0.05)
    assert s["Last_SQL_Errno"] == 1032, s
    assert "d`.`t" in s["Last_SQL_Error"]
    c.close()

    with PrivateQuill(tmp_path / "other", "--server_id=3") as other:
        start_replica(other, source, user="nobody")
        deadline = time.monotonic() + 20
        while (s := status(other)).get("Last_IO_Errno") != 1045:
            assert time.monotonic() < deadline, s
            time.sleep(0.05)
        assert s["Replica_IO_Running"] == "Connecting"
        o = other.connect()
        with o.cursor() as cur:
            cur.execute("STOP REPLICA")
            cur.execute("SHOW WARNINGS")
            assert cur.fetchall() == ()
            cur.execute("STOP REPLICA")
            cur.execute("SHOW WARNINGS")
            assert cur.fetchall()[0][1] == 3084, "already stopped: a note"
            cur.execute("CHANGE REPLICATION SOURCE TO SOURCE_PORT=1")
            cur.execute("START REPLICA")
        o.close()
        deadline = time.monotonic() + 20
        while (s := status(other)).get("Last_IO_Errno") != 2003:
            assert time.monotonic() < deadline, s
            time.sleep(0.05)
        o = other.connect()
        with o.cursor() as cur:
            with pytest.raises(pymysql.err.OperationalError) as running:
                cur.execute("CHANGE REPLICATION SOURCE TO SOURCE_PORT=2")
            assert running.value.args[0] == 3021
            cur.execute("STOP REPLICA")
            cur.execute("RESET REPLICA ALL")
            cur.execute("SHOW REPLICA STATUS")
            assert cur.fetchall() == ()
            with pytest.raises(pymysql.err.OperationalError) as unset:
                cur.execute("START REPLICA")
            assert unset.value.args[0] == 1200
        o.close()


def test_a_super_read_only_replica_applies_and_reports_each_transaction_in_performance_schema(pair):
    source, replica = pair
    assert rows(replica, "SELECT * FROM performance_schema.replication_applier_status_by_worker") == ()
    c = source.connect()
    cur = c.cursor()
    cur.execute("CREATE DATABASE app")
    cur.execute("CREATE TABLE app.t (id INT PRIMARY KEY, at DATETIME(6))")
    start_replica(replica, source)
    rc = replica.connect()
    rcur = rc.cursor()
    rcur.execute("SET GLOBAL super_read_only = ON")
    with pytest.raises(pymysql.err.OperationalError) as e:
        rcur.execute("INSERT INTO app.t VALUES (0, NOW(6))")
    assert e.value.args[0] == 1290
    uuid = one(source, "SELECT @@server_uuid")[0]
    for i in range(1, 6):
        before = time.time()
        cur.execute(f"INSERT INTO app.t VALUES ({i}, NOW(6))")
        gtid = one(source, "SELECT @@gtid_executed")[0]
        caught_up(source, replica)
        # One row per worker (replica_parallel_workers, 4 by default): the newest
        # transaction is the last applied of one of them.
        expected = f"{uuid}:{gtid.rsplit('-', 1)[-1]}"
        rcur.execute(
            "SELECT WORKER_ID, SERVICE_STATE, LAST_APPLIED_TRANSACTION, LAST_ERROR_NUMBER,"
            " UNIX_TIMESTAMP(LAST_APPLIED_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP),"
            " TIMESTAMPDIFF(MICROSECOND, LAST_APPLIED_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP, LAST_APPLIED_TRANSACTION_START_APPLY_TIMESTAMP),"
            " TIMESTAMPDIFF(MICROSECOND, LAST_APPLIED_TRANSACTION_START_APPLY_TIMESTAMP, LAST_APPLIED_TRANSACTION_END_APPLY_TIMESTAMP),"
            " APPLYING_TRANSACTION"
            " FROM performance_schema.replication_applier_status_by_worker WHERE LAST_APPLIED_TRANSACTION = %s",
            (expected,),
        )
        found = rcur.fetchall()
        assert len(found) == 1, (expected, found)
        worker, state, applied, errno, original, queued_us, apply_us, applying = found[0]
        assert 1 <= worker <= 4 and (state, errno, applying) == ("ON", 0, "")
        assert abs(float(original) - before) < 5, "the source's commit time, carried by the GTID event"
        assert 0 <= queued_us < 5_000_000 and 0 <= apply_us < 5_000_000
    assert rows(replica, "SELECT id FROM app.t ORDER BY id") == tuple((i,) for i in range(1, 6))
    rc.close()
    c.close()


def test_ddl_runs_under_its_source_sessions_sql_mode(pair):
    """A DDL statement is run on the replica under the `sql_mode` its QUERY event carries:
    here ANSI_QUOTES, under which "d"."q" names a table (under the replica's own mode it is a
    string, and the statement would not parse)."""
    source, replica = pair
    start_replica(replica, source)
    c = source.connect()
    with c.cursor() as cur:
        cur.execute("SET SESSION sql_mode = 'ANSI_QUOTES'")
        cur.execute('CREATE DATABASE "d"')
        cur.execute('CREATE TABLE "d"."q" (id INT PRIMARY KEY, note VARCHAR(10))')
        cur.execute("""INSERT INTO "d"."q" VALUES (1, 'one')""")
    c.close()
    s = caught_up(source, replica)
    assert s["Replica_SQL_Running"] == "Yes", s
    assert rows(replica, "SELECT id, note FROM d.q") == ((1, "one"),)


def test_a_replica_knows_its_source_and_refuses_one_with_its_own_server_id(pair, tmp_path):
    source, replica = pair
    start_replica(replica, source)
    deadline = time.monotonic() + 20
    # Running, and past the dump's first ROTATE (which names the file).
    while (s := status(replica))["Replica_IO_Running"] != "Yes" or not s["Source_Log_File"]:
        assert time.monotonic() < deadline, s
        time.sleep(0.05)
    assert s["Source_Server_Id"] == 1 and s["Source_UUID"] == one(source, "SELECT @@server_uuid")[0], s
    # Regression: the name the dump's first ROTATE gives (before the format description, so
    # with its checksum still on) was cut at the first unprintable byte, which kept some of the
    # checksum about a third of the time; semi-sync acknowledgements then named no file.
    assert s["Source_Log_File"] == one(source, "SHOW MASTER STATUS")[0], s
    # A server with the source's server_id (both the default, 1): MySQL's 1593, and the I/O
    # thread stops rather than retrying.
    with PrivateQuill(tmp_path / "same-id") as same:
        start_replica(same, source)
        deadline = time.monotonic() + 20
        while (s := status(same)).get("Last_IO_Errno") != 1593:
            assert time.monotonic() < deadline, s
            time.sleep(0.05)
        assert "equal MySQL server ids" in s["Last_IO_Error"]
        deadline = time.monotonic() + 5
        while (s := status(same))["Replica_IO_Running"] != "No":
            assert time.monotonic() < deadline, s
            time.sleep(0.05)


def test_create_table_select_replicates_as_one_transaction(pair):
    """CREATE TABLE ... SELECT is logged as MySQL 8.0.21+ logs it: one transaction, a QUERY
    with the table's definition and START TRANSACTION, then its rows. The replica creates the
    table and applies the rows under the transaction's GTID."""
    source, replica = pair
    start_replica(replica, source)
    c = source.connect()
    with c.cursor() as cur:
        cur.execute("CREATE DATABASE d")
        cur.execute("CREATE TABLE d.a (id INT PRIMARY KEY, v VARCHAR(10))")
        cur.execute("INSERT INTO d.a VALUES (1, 'one'), (2, 'two'), (3, 'three')")
        cur.execute("CREATE TABLE d.b AS SELECT id, UPPER(v) AS v FROM d.a WHERE id > 1")
        cur.execute("INSERT INTO d.b VALUES (9, 'NINE')")
    c.close()
    s = caught_up(source, replica)
    assert s["Last_SQL_Errno"] == 0
    assert rows(replica, "SELECT * FROM d.b ORDER BY id") == ((2, "TWO"), (3, "THREE"), (9, "NINE"))
    assert rows(replica, "SHOW CREATE TABLE d.b") == rows(source, "SHOW CREATE TABLE d.b")


def test_a_replica_killed_while_it_applies_ddl_neither_repeats_nor_loses_a_statement(pair):
    """A replicated DDL statement and its GTID are in one log record: a kill -9 of the replica
    at any point of a run of DDL statements leaves each one either applied with its GTID or
    not applied at all, so the restarted replica goes on without error."""
    source, replica = pair
    start_replica(replica, source)
    c = source.connect()
    with c.cursor() as cur:
        cur.execute("CREATE DATABASE ddl")
        caught_up(source, replica)
        for round_ in range(3):
            for i in range(15):
                cur.execute(f"CREATE TABLE ddl.t{round_}_{i} (id INT PRIMARY KEY)")
                cur.execute(f"ALTER TABLE ddl.t{round_}_{i} ADD COLUMN v INT")
            replica.kill()
            replica.start()
            s = caught_up(source, replica)
            assert s["Last_SQL_Errno"] == 0, s
    c.close()
    assert rows(replica, "SHOW TABLES FROM ddl") == rows(source, "SHOW TABLES FROM ddl")
