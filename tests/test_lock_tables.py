"""LOCK TABLES / UNLOCK TABLES and savepoints, as MySQL users (and every dump) rely on them.

Each test runs against MariaDB too (tests/run-against-mariadb.sh), where the expected
errors and waits were confirmed.
"""

from __future__ import annotations

import threading
import time

import pymysql
import pytest

ER_LOCK_WAIT_TIMEOUT = 1205
ER_TABLE_NOT_LOCKED_FOR_WRITE = 1099
ER_TABLE_NOT_LOCKED = 1100
ER_NONUNIQ_TABLE = 1066
ER_NO_SUCH_TABLE = 1146
ER_SP_DOES_NOT_EXIST = 1305
# How long a statement that must wait is left waiting before it is expected to time out.
SHORT_LOCK_WAIT_S = 1


def refused(cur, sql) -> int:
    """Runs `sql`, which must fail, and returns the MySQL error code it failed with."""
    with pytest.raises(pymysql.err.MySQLError) as e:
        cur.execute(sql)
    return e.value.args[0]


@pytest.fixture
def tables(conn):
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE a (id INT PRIMARY KEY, v INT)")
        cur.execute("CREATE TABLE b (id INT PRIMARY KEY, v INT)")
        cur.execute("INSERT INTO a VALUES (1, 10)")
        cur.execute("INSERT INTO b VALUES (1, 20)")
    return conn


def impatient(server, db):
    c = server.connect(db)
    with c.cursor() as cur:
        cur.execute(f"SET SESSION lock_wait_timeout = {SHORT_LOCK_WAIT_S}")
    return c


def test_a_read_lock_lets_everyone_read_and_nobody_write(server, fresh_db, tables):
    with tables.cursor() as cur:
        cur.execute("LOCK TABLES a READ")
        cur.execute("SELECT v FROM a")
        assert cur.fetchall() == ((10,),)
        assert refused(cur, "UPDATE a SET v = 11") == ER_TABLE_NOT_LOCKED_FOR_WRITE
        assert refused(cur, "SELECT * FROM b") == ER_TABLE_NOT_LOCKED
        assert refused(cur, "SELECT * FROM a AS other_name") == ER_TABLE_NOT_LOCKED, "an alias must be locked under its own name"
        cur.execute("CHECKSUM TABLE a, b")
        assert [row[1] is None for row in cur.fetchall()] == [False, True]
        cur.execute("SHOW WARNINGS")
        assert [(w[0], w[1]) for w in cur.fetchall()] == [("Error", ER_TABLE_NOT_LOCKED)]

    other = impatient(server, fresh_db)
    with other.cursor() as cur:
        cur.execute("SELECT v FROM a")
        assert cur.fetchall() == ((10,),)
        assert refused(cur, "INSERT INTO a VALUES (2, 20)") == ER_LOCK_WAIT_TIMEOUT
        cur.execute("INSERT INTO b VALUES (2, 20)")

    with tables.cursor() as cur:
        cur.execute("UNLOCK TABLES")
        cur.execute("SELECT COUNT(*) FROM b")
        assert cur.fetchone() == (2,)
    with other.cursor() as cur:
        cur.execute("INSERT INTO a VALUES (2, 20)")
    other.close()


def test_a_write_lock_keeps_other_sessions_out_until_unlock(server, fresh_db, tables):
    with tables.cursor() as cur:
        cur.execute("LOCK TABLES a WRITE, b AS bb READ")
        cur.execute("INSERT INTO a VALUES (2, 20)")
        cur.execute("SELECT COUNT(*) FROM b AS bb")
        assert cur.fetchone() == (1,)

    other = impatient(server, fresh_db)
    with other.cursor() as cur:
        assert refused(cur, "SELECT * FROM a") == ER_LOCK_WAIT_TIMEOUT

    # A reader that waits goes on as soon as the lock is released.
    got: list = []
    waiter = server.connect(fresh_db)

    def read():
        with waiter.cursor() as c:
            c.execute("SELECT COUNT(*) FROM a")
            got.append(c.fetchone())

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    time.sleep(0.3)
    assert got == [], "the reader waits for the WRITE lock"
    with tables.cursor() as cur:
        cur.execute("UNLOCK TABLES")
    thread.join(timeout=10)
    assert got == [(2,)]
    waiter.close()
    other.close()


def test_load_data_into_a_table_locked_read_is_refused(server, fresh_db, tables, tmp_path):
    data = tmp_path / "rows.tsv"
    data.write_text("5\t50\n")
    with tables.cursor() as cur:
        cur.execute("SELECT @@GLOBAL.local_infile")
        before = cur.fetchone()[0]
        cur.execute("SET GLOBAL local_infile = 1")
    loader = server.connect(fresh_db, local_infile=True)
    try:
        with loader.cursor() as cur:
            cur.execute("LOCK TABLES a WRITE, b READ")
            assert refused(cur, f"LOAD DATA LOCAL INFILE '{data}' INTO TABLE b") == ER_TABLE_NOT_LOCKED_FOR_WRITE
            cur.execute(f"LOAD DATA LOCAL INFILE '{data}' INTO TABLE a")
            cur.execute("UNLOCK TABLES")
            cur.execute("SELECT COUNT(*) FROM a")
            assert cur.fetchone() == (2,)
    finally:
        loader.close()
        with tables.cursor() as cur:
            cur.execute(f"SET GLOBAL local_infile = {int(before)}")


def test_ddl_under_a_write_lock_and_the_errors_of_a_lock_list(tables):
    with tables.cursor() as cur:
        assert refused(cur, "LOCK TABLES no_such_table READ") == ER_NO_SUCH_TABLE
        assert refused(cur, "LOCK TABLES a READ, a WRITE") == ER_NONUNIQ_TABLE
        cur.execute("LOCK TABLES a WRITE, b READ")
        # The dump's restore: DISABLE/ENABLE KEYS and inserts under a WRITE lock.
        cur.execute("ALTER TABLE a DISABLE KEYS")
        cur.execute("INSERT INTO a VALUES (3, 30)")
        cur.execute("ALTER TABLE a ENABLE KEYS")
        cur.execute("ALTER TABLE a ADD COLUMN w INT")
        assert refused(cur, "ALTER TABLE b ADD COLUMN w INT") == ER_TABLE_NOT_LOCKED_FOR_WRITE
        assert refused(cur, "CREATE TABLE c (id INT)") == ER_TABLE_NOT_LOCKED
        cur.execute("UNLOCK TABLES")
        cur.execute("SELECT COUNT(*), MAX(w) FROM a")
        assert cur.fetchone() == (2, None)


def test_begin_and_disconnect_release_table_locks(server, fresh_db, tables):
    with tables.cursor() as cur:
        cur.execute("LOCK TABLES a READ")
        cur.execute("BEGIN")
        cur.execute("SELECT COUNT(*) FROM b")
        assert cur.fetchone() == (1,), "BEGIN ends LOCK TABLES"
        cur.execute("COMMIT")

    holder = server.connect(fresh_db)
    with holder.cursor() as cur:
        cur.execute("LOCK TABLES a WRITE")
    holder.close()
    other = impatient(server, fresh_db)
    deadline = time.monotonic() + 10
    while True:
        try:
            with other.cursor() as cur:
                cur.execute("INSERT INTO a VALUES (5, 50)")
            break
        except pymysql.err.OperationalError as e:
            # The server notices the closed connection a moment later.
            assert e.args[0] == ER_LOCK_WAIT_TIMEOUT and time.monotonic() < deadline
    other.close()


def test_lock_tables_commits_the_open_transaction(server, fresh_db, tables):
    with tables.cursor() as cur:
        cur.execute("BEGIN")
        cur.execute("INSERT INTO a VALUES (7, 70)")
        cur.execute("LOCK TABLES b READ")
        cur.execute("UNLOCK TABLES")
        cur.execute("ROLLBACK")
    with server.connect(fresh_db) as c, c.cursor() as cur:
        cur.execute("SELECT v FROM a WHERE id = 7")
        assert cur.fetchone() == (70,)


def test_metadata_locks_show_lock_tables(server, fresh_db, tables):
    if not server.is_quill:
        pytest.skip("MariaDB's performance_schema is off by default")
    with tables.cursor() as cur:
        cur.execute("LOCK TABLES a READ, b WRITE")
    with server.connect() as c, c.cursor() as cur:
        cur.execute(
            "SELECT OBJECT_NAME, LOCK_TYPE, LOCK_DURATION, LOCK_STATUS FROM performance_schema.metadata_locks "
            "WHERE OBJECT_SCHEMA = %s ORDER BY OBJECT_NAME",
            (fresh_db,),
        )
        assert cur.fetchall() == (
            ("a", "SHARED_READ_ONLY", "EXPLICIT", "GRANTED"),
            ("b", "SHARED_NO_READ_WRITE", "EXPLICIT", "GRANTED"),
        )
    with tables.cursor() as cur:
        cur.execute("UNLOCK TABLES")


def test_rollback_to_savepoint_undoes_only_what_came_after_it(server, fresh_db, tables):
    with tables.cursor() as cur:
        cur.execute("BEGIN")
        cur.execute("INSERT INTO a VALUES (2, 20)")
        cur.execute("SAVEPOINT s1")
        cur.execute("UPDATE a SET v = v + 1")
        cur.execute("DELETE FROM a WHERE id = 1")
        cur.execute("INSERT INTO a VALUES (3, 30)")
        cur.execute("SAVEPOINT s2")
        cur.execute("INSERT INTO a VALUES (4, 40)")
        cur.execute("ROLLBACK TO SAVEPOINT s2")
        cur.execute("SELECT id, v FROM a ORDER BY id")
        assert cur.fetchall() == ((2, 21), (3, 30))
        cur.execute("ROLLBACK TO s1")
        cur.execute("SELECT id, v FROM a ORDER BY id")
        assert cur.fetchall() == ((1, 10), (2, 20))
        assert refused(cur, "ROLLBACK TO SAVEPOINT s2") == ER_SP_DOES_NOT_EXIST, "a later savepoint goes with the rollback"
        cur.execute("ROLLBACK TO SAVEPOINT s1")
        cur.execute("RELEASE SAVEPOINT s1")
        assert refused(cur, "RELEASE SAVEPOINT s1") == ER_SP_DOES_NOT_EXIST
        cur.execute("COMMIT")
    with server.connect(fresh_db) as c, c.cursor() as cur:
        cur.execute("SELECT id, v FROM a ORDER BY id")
        assert cur.fetchall() == ((1, 10), (2, 20))


def test_a_savepoint_with_autocommit_off_starts_the_transaction(server, fresh_db, tables):
    with tables.cursor() as cur:
        cur.execute("SET autocommit = 0")
        cur.execute("SAVEPOINT first")
        cur.execute("INSERT INTO b VALUES (9, 90)")
        cur.execute("ROLLBACK TO SAVEPOINT first")
        cur.execute("INSERT INTO b VALUES (8, 80)")
        cur.execute("COMMIT")
        cur.execute("SET autocommit = 1")
    with server.connect(fresh_db) as c, c.cursor() as cur:
        cur.execute("SELECT id FROM b ORDER BY id")
        assert cur.fetchall() == ((1,), (8,))
