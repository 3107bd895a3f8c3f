"""Reads never block writes, and DDL meets DML at metadata locks, as in MySQL.

Each test drives several real PyMySQL connections from threads. The long read is a join
on a non-equality (``a.v < b.v``), which no join algorithm can shortcut: it runs for
seconds on any server, and the writers on other connections must all finish while it is
still running. The assertions are about order (the writes finished before the read did),
never about how long something took.
"""

from __future__ import annotations

import threading
import time

import pymysql
import pytest

# Rows in the table the long read joins with itself (LONG_READ_ROWS^2 / 2 comparisons).
LONG_READ_ROWS = 3000
# Writes each writer makes while the long read runs.
WRITES_DURING_READ = 20
# How long a helper waits for another connection to reach a state.
SETTLE_TIMEOUT_S = 20.0


def load_big(cur, rows: int = LONG_READ_ROWS) -> None:
    cur.execute("CREATE TABLE big (id INT PRIMARY KEY, v INT, s VARCHAR(50))")
    # 7 and the row count are coprime, so v is a permutation of 0..rows-1.
    values = ",".join(f"({i}, {i * 7 % rows}, 'row {i}')" for i in range(rows))
    cur.execute(f"INSERT INTO big VALUES {values}")


class LongRead(threading.Thread):
    """Runs the long join on its own connection; records when it finished."""

    def __init__(self, server, db: str):
        super().__init__(daemon=True)
        self.conn = server.connect(db)
        self.connection_id = self.conn.thread_id()
        self.result = None
        self.error: Exception | None = None
        self.finished_at: float | None = None
        self.started = threading.Event()

    def run(self) -> None:
        try:
            with self.conn.cursor() as cur:
                self.started.set()
                cur.execute("SELECT COUNT(*) FROM big a JOIN big b ON a.v < b.v")
                self.result = cur.fetchone()[0]
        except Exception as e:  # noqa: BLE001 - reported by the test
            self.error = e
        finally:
            self.finished_at = time.monotonic()
            self.conn.close()


def wait_until_running(server, needle: str) -> None:
    """Waits until PROCESSLIST shows a statement containing `needle` running."""
    admin = server.connect()
    try:
        deadline = time.monotonic() + SETTLE_TIMEOUT_S
        while time.monotonic() < deadline:
            with admin.cursor() as cur:
                cur.execute("SHOW PROCESSLIST")
                if any(r[7] and needle in r[7] for r in cur.fetchall()):
                    return
            time.sleep(0.01)
        raise AssertionError(f"no statement with {needle!r} ever ran")
    finally:
        admin.close()


def processlist_state(server, needle: str) -> str | None:
    admin = server.connect()
    try:
        with admin.cursor() as cur:
            cur.execute("SHOW PROCESSLIST")
            for r in cur.fetchall():
                if r[7] and needle in r[7]:
                    return r[6]
        return None
    finally:
        admin.close()


def test_a_long_read_does_not_hold_back_writers_on_other_tables_or_other_rows(server, fresh_db):
    setup = server.connect(fresh_db)
    with setup.cursor() as cur:
        load_big(cur)
        cur.execute("CREATE TABLE other (id INT AUTO_INCREMENT PRIMARY KEY, n INT)")
    setup.close()

    reader = LongRead(server, fresh_db)
    reader.start()
    reader.started.wait()
    wait_until_running(server, "a.v < b.v")

    writer = server.connect(fresh_db)
    with writer.cursor() as cur:
        for i in range(WRITES_DURING_READ):
            cur.execute("INSERT INTO other (n) VALUES (%s)", (i,))
            cur.execute("INSERT INTO big VALUES (%s, 0, 'during the read')", (LONG_READ_ROWS + i,))
            cur.execute("UPDATE big SET s = 'touched' WHERE id = %s", (i,))
    writes_done_at = time.monotonic()
    writer.close()

    reader.join(timeout=600)
    assert reader.error is None, reader.error
    assert reader.finished_at is not None and writes_done_at < reader.finished_at, "the writes waited for the read to finish"
    # The read saw one snapshot: none of the rows inserted while it ran, whatever their v.
    expected = LONG_READ_ROWS * (LONG_READ_ROWS - 1) // 2
    assert reader.result == expected

    check = server.connect(fresh_db)
    with check.cursor() as cur:
        cur.execute("SELECT COUNT(*) FROM other")
        assert cur.fetchone()[0] == WRITES_DURING_READ
        cur.execute("SELECT COUNT(*) FROM big WHERE s = 'touched'")
        assert cur.fetchone()[0] == WRITES_DURING_READ
    check.close()


def test_ddl_waits_for_a_transaction_that_used_the_table_and_times_out_with_1205(server, fresh_db):
    a = server.connect(fresh_db)
    b = server.connect(fresh_db)
    with a.cursor() as ca, b.cursor() as cb:
        ca.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT)")
        ca.execute("INSERT INTO t VALUES (1, 10)")
        ca.execute("BEGIN")
        ca.execute("SELECT * FROM t")
        cb.execute("SET SESSION lock_wait_timeout = 1")
        with pytest.raises(pymysql.err.OperationalError) as e:
            cb.execute("ALTER TABLE t ADD COLUMN w INT")
        assert e.value.args[0] == 1205
        # The transaction is untouched and its table still has its old definition.
        ca.execute("SELECT * FROM t")
        assert ca.fetchall() == ((1, 10),)
        ca.execute("COMMIT")
        cb.execute("ALTER TABLE t ADD COLUMN w INT")
        cb.execute("SELECT * FROM t")
        assert cb.fetchall() == ((1, 10, None),)
    a.close()
    b.close()


def test_a_waiting_ddl_shows_its_state_holds_new_statements_back_and_runs_at_commit(server, fresh_db):
    a = server.connect(fresh_db)
    with a.cursor() as ca:
        ca.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT)")
        ca.execute("INSERT INTO t VALUES (1, 10)")
        ca.execute("BEGIN")
        ca.execute("UPDATE t SET v = 11 WHERE id = 1")

    ddl_error: list[Exception] = []

    def alter():
        b = server.connect(fresh_db)
        try:
            with b.cursor() as cb:
                cb.execute("ALTER TABLE t ADD COLUMN w INT DEFAULT 5")
        except Exception as e:  # noqa: BLE001 - reported below
            ddl_error.append(e)
        finally:
            b.close()

    ddl = threading.Thread(target=alter, daemon=True)
    ddl.start()
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    while processlist_state(server, "ADD COLUMN w") != "Waiting for table metadata lock":
        assert time.monotonic() < deadline, "the ALTER never showed its wait"
        time.sleep(0.02)

    if server.is_quill:
        admin = server.connect()
        with admin.cursor() as cur:
            cur.execute(
                "SELECT LOCK_TYPE, LOCK_STATUS FROM performance_schema.metadata_locks "
                "WHERE OBJECT_SCHEMA = %s AND OBJECT_NAME = 't' ORDER BY LOCK_STATUS",
                (fresh_db,),
            )
            assert cur.fetchall() == (("SHARED_WRITE", "GRANTED"), ("EXCLUSIVE", "PENDING"))
        admin.close()

    # A new statement on the table queues behind the waiting DDL.
    c = server.connect(fresh_db)
    with c.cursor() as cc:
        cc.execute("SET SESSION lock_wait_timeout = 1")
        with pytest.raises(pymysql.err.OperationalError) as e:
            cc.execute("SELECT * FROM t")
        assert e.value.args[0] == 1205

    with a.cursor() as ca:
        ca.execute("COMMIT")
    ddl.join(timeout=SETTLE_TIMEOUT_S)
    assert not ddl.is_alive() and not ddl_error, ddl_error
    with c.cursor() as cc:
        cc.execute("SELECT * FROM t")
        assert cc.fetchall() == ((1, 11, 5),), "the committed update is in the rebuilt table"
    a.close()
    c.close()


def test_ddl_and_writes_on_different_tables_run_side_by_side(server, fresh_db):
    a = server.connect(fresh_db)
    b = server.connect(fresh_db)
    with a.cursor() as ca, b.cursor() as cb:
        ca.execute("CREATE TABLE t1 (id INT PRIMARY KEY)")
        ca.execute("CREATE TABLE t2 (id INT PRIMARY KEY)")
        ca.execute("BEGIN")
        ca.execute("INSERT INTO t1 VALUES (1)")
        cb.execute("SET SESSION lock_wait_timeout = 5")
        cb.execute("ALTER TABLE t2 ADD COLUMN w INT")
        cb.execute("TRUNCATE TABLE t2")
        ca.execute("INSERT INTO t1 VALUES (2)")
        ca.execute("COMMIT")
        cb.execute("SELECT COUNT(*) FROM t1")
        assert cb.fetchone()[0] == 2
    a.close()
    b.close()


def test_kill_query_stops_a_long_join_and_other_connections_are_served_meanwhile(server, fresh_db):
    setup = server.connect(fresh_db)
    with setup.cursor() as cur:
        load_big(cur)
    setup.close()
    reader = LongRead(server, fresh_db)
    reader.start()
    reader.started.wait()
    wait_until_running(server, "a.v < b.v")
    other = server.connect(fresh_db)
    with other.cursor() as cur:
        # Served while the join runs: a new connection, a query, a statement that writes.
        cur.execute("SELECT 1")
        assert cur.fetchone() == (1,)
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY)")
        cur.execute("INSERT INTO t VALUES (1)")
        assert reader.is_alive(), "the join ended before the other connection was served"
        cur.execute(f"KILL QUERY {reader.connection_id}")
    reader.join(timeout=SETTLE_TIMEOUT_S)
    assert not reader.is_alive(), "the join went on after KILL QUERY"
    assert isinstance(reader.error, pymysql.err.OperationalError) and reader.error.args[0] == 1317, reader.error
    other.close()


@pytest.mark.mysql8_only  # MariaDB names it max_statement_time, in seconds
def test_max_execution_time_stops_a_long_select_with_3024(server, fresh_db):
    conn = server.connect(fresh_db)
    with conn.cursor() as cur:
        load_big(cur)
        cur.execute("SET SESSION max_execution_time = 200")
        with pytest.raises(pymysql.err.OperationalError) as e:
            cur.execute("SELECT COUNT(*) FROM big a JOIN big b ON a.v < b.v")
        assert e.value.args[0] == 3024
        # A short statement runs as before, and the limit is off again at 0.
        cur.execute("SELECT COUNT(*) FROM big")
        assert cur.fetchone() == (LONG_READ_ROWS,)
        cur.execute("SET SESSION max_execution_time = 0")
        cur.execute("SELECT COUNT(*) FROM big a JOIN big b ON a.id = b.id WHERE a.id < 10")
        assert cur.fetchone() == (10,)
    conn.close()
