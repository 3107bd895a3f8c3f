"""Answers that were silently wrong, each checked the way a client meets it.

Every test here guards a result Quill once gave without an error while MySQL (and MariaDB,
where it agrees) gave another: the insert id in the OK packet, the type a result column is
sent with, a value cut short. The SQL-only cases live in tests/sql/right_answers.test; these
need what a driver sees (lastrowid, the column's wire type, warnings after a value). Each test
runs against MariaDB too (tests/run-against-mariadb.sh) unless it says why not.
"""

import contextlib
import threading
from decimal import Decimal

import mysql.connector
import pymysql
import pytest

from conftest import PrivateQuill, test_target

# Wire types (the protocol's MYSQL_TYPE_* codes) a result column may be sent as.
TYPE_DOUBLE = 5
TYPE_LONGLONG = 8
TYPE_NEWDECIMAL = 246
TYPE_VAR_STRING = 253


def test_like_binary_binds_to_its_operand_only(conn):
    """Regression: `BINARY` took the rest of an AND as its operand (`LIKE BINARY 'Ann%' AND
    1 = 1` compared with `BINARY ('Ann%' AND 1 = 1)`), so Django's `__startswith` filter next
    to another condition matched nothing; and LIKE BINARY ignored case."""
    with conn.cursor() as cur:
        cur.execute("SELECT 'Ann2' LIKE BINARY 'Ann%' AND 1 = 1, 'Ann2' = BINARY 'Ann2' AND 1 = 1, "
                    "'abc' LIKE BINARY 'ABC', 'abc' LIKE BINARY 'abc', BINARY 'a' = 'A', 'aB' LIKE BINARY '%B'")
        assert cur.fetchone() == (1, 1, 0, 1, 0, 1)
        cur.execute("CREATE TABLE author (id INT PRIMARY KEY, name VARCHAR(20))")
        cur.execute("INSERT INTO author VALUES (1, 'Ann'), (2, 'ann'), (3, 'Bob')")
        cur.execute("SELECT id FROM author WHERE name LIKE BINARY 'Ann%' AND id > 0 ORDER BY id")
        assert cur.fetchall() == ((1,),)


def test_insert_id_of_an_explicit_auto_increment_value(conn):
    """Regression: the OK packet's insert id was 0 when the AUTO_INCREMENT value was given,
    so Django's `Group(id=42).save()` left pk 0. MySQL sends the first generated value, else
    the argument of LAST_INSERT_ID(expr), else the column's value in the last row written;
    LAST_INSERT_ID() itself changes only when a value is generated."""
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE t (id BIGINT AUTO_INCREMENT PRIMARY KEY, v INT)")
        cases = [
            ("INSERT INTO t (id, v) VALUES (7, 1)", 7, 0),
            ("INSERT INTO t (v) VALUES (1)", 8, 8),
            ("INSERT INTO t (id, v) VALUES (20, 1), (21, 2)", 21, 8),
            ("INSERT INTO t (id, v) VALUES (NULL, 5), (30, 6)", 22, 22),
            ("INSERT INTO t (id, v) VALUES (40, 5), (NULL, 6)", 41, 41),
            ("UPDATE t SET v = 9 WHERE id = 7", 0, 41),
            ("INSERT INTO t (id, v) VALUES (7, 2) ON DUPLICATE KEY UPDATE v = 3", 7, 41),
            ("REPLACE INTO t (id, v) VALUES (50, 1)", 50, 41),
            ("INSERT INTO t (id, v) VALUES (8, 2) ON DUPLICATE KEY UPDATE id = LAST_INSERT_ID(id)", 8, 8),
        ]
        for sql, insert_id, last_insert_id in cases:
            cur.execute(sql)
            assert (sql, cur.lastrowid) == (sql, insert_id)
            cur.execute("SELECT LAST_INSERT_ID()")
            assert (sql, cur.fetchone()[0]) == (sql, last_insert_id)


def test_if_and_case_are_typed_by_all_their_values(conn):
    """Regression: IF and CASE took the type of their first value, so `IF(0, 1, 1.5e0)` was
    sent as a LONGLONG column carrying `1.5` and PyMySQL raised ValueError. MySQL types the
    result by every value it may return; the values sent match the type, in the text and
    the binary protocol alike."""
    sql = ("SELECT IF(0, 1, 1.5e0), CASE 1 WHEN 2 THEN 1 ELSE 1.5e0 END, IF(1, 1, 2.5), "
           "IFNULL(NULL, 2.5e0), IF(1, 1, NULL), IF(1, 'a', 2)")
    with conn.cursor() as cur:
        cur.execute(sql)
        assert cur.fetchone() == (1.5, 1.5, Decimal("1.0"), 2.5, 1, "a")
        types = [d[1] for d in cur.description]
        assert types[:4] == [TYPE_DOUBLE, TYPE_DOUBLE, TYPE_NEWDECIMAL, TYPE_DOUBLE]
        assert types[5] == TYPE_VAR_STRING


@pytest.mark.skipif(test_target() != "quill", reason="MariaDB types these columns alike; this checks Quill's binary protocol")
def test_if_typed_double_reads_back_in_the_binary_protocol(server, fresh_db):
    """The binary protocol sends a DOUBLE column's values as 8-byte doubles: a value of
    another type there would be garbage. mysql-connector-python with prepared statements
    reads each column by its announced type."""
    conn = mysql.connector.connect(host=server.host, port=server.port, user=server.user, password=server.password, database=fresh_db)
    try:
        cur = conn.cursor(prepared=True)
        cur.execute("SELECT IF(?, 1, 1.5e0), COALESCE(NULL, 2, 2.5e0), GREATEST(1, 2.5e0)", (1,))
        assert cur.fetchone() == (1.0, 2.0, 2.5)
    finally:
        conn.close()


def test_show_create_table_escapes_newlines_in_comments(conn):
    """Regression: a COMMENT holding a newline or carriage return was written raw, so
    SQLAlchemy's reflection (which reads SHOW CREATE TABLE line by line) could not parse it.
    MySQL writes `\\n` and `\\r`; the statement reads back to the same comments."""
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE c1 (id INT PRIMARY KEY, v INT COMMENT 'col\\nnote') COMMENT 'line1\\nline2\\rend''s'")
        cur.execute("SHOW CREATE TABLE c1")
        ddl = cur.fetchone()[1]
        assert "COMMENT='line1\\nline2\\rend''s'" in ddl
        assert "COMMENT 'col\\nnote'" in ddl
        cur.execute("DROP TABLE c1")
        cur.execute(ddl)
        cur.execute("SELECT TABLE_COMMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'c1'")
        assert cur.fetchone()[0] == "line1\nline2\rend's"


def test_quoted_names_with_spaces_reach_show_and_describe(conn):
    """Regression: SHOW CREATE TABLE and DESCRIBE split a backquoted name at its space and
    answered 1146 for `quote " two` and `per % cent`, tables that exist."""
    with conn.cursor() as cur:
        for name in ('quote " two', "per % cent", "dot.ted", "back`tick"):
            quoted = "`" + name.replace("`", "``") + "`"
            cur.execute(f"CREATE TABLE {quoted} (id INT)")
            cur.execute(f"SHOW CREATE TABLE {quoted}")
            assert cur.fetchone()[0] == name
            cur.execute(f"DESCRIBE {quoted}")
            assert [r[0] for r in cur.fetchall()] == ["id"]
            cur.execute(f"SHOW COLUMNS FROM {quoted}")
            assert [r[0] for r in cur.fetchall()] == ["id"]


@contextlib.contextmanager
def restarted_after_checkpoint(tmp_path, table, *statements):
    """Runs `statements` on a server of its own, takes `table`'s SHOW CREATE TABLE, waits for
    a checkpoint (which stores the table as that statement) and restarts the server from it:
    yields a connection to the restarted server and the statement from before."""
    with PrivateQuill(tmp_path / "data", "--quill-checkpoint-interval-seconds=1") as quill:
        conn = quill.connect()
        with conn.cursor() as cur:
            for sql in statements:
                cur.execute(sql)
            cur.execute(f"SHOW CREATE TABLE {table}")
            before = cur.fetchone()[1]
        quill.wait_for_checkpoint()
    with PrivateQuill(tmp_path / "data") as quill:
        conn = quill.connect()
        with conn.cursor() as cur:
            cur.execute(f"SHOW CREATE TABLE {table}")
            assert cur.fetchone()[1] == before, "the definition reads back the same"
        yield conn, before


@pytest.mark.skipif(test_target() != "quill", reason="restarts its own server")
def test_expression_defaults_survive_a_checkpoint_and_a_restart(tmp_path):
    """A checkpoint writes each table as SHOW CREATE TABLE: `DEFAULT (uuid())` must read
    back as an expression (one UUID per row after the restart too), not as a constant."""
    setup = (
        "CREATE DATABASE e",
        "CREATE TABLE e.t (id INT AUTO_INCREMENT PRIMARY KEY, u VARCHAR(40) DEFAULT (uuid()), n INT DEFAULT (3 + 5))",
        "INSERT INTO e.t (id) VALUES (NULL), (NULL)",
    )
    with restarted_after_checkpoint(tmp_path, "e.t", *setup) as (conn, _), conn.cursor() as cur:
        cur.execute("INSERT INTO e.t (id) VALUES (NULL), (NULL)")
        cur.execute("SELECT COUNT(DISTINCT u), MIN(n), MAX(n) FROM e.t")
        assert cur.fetchone() == (4, 8, 8)


@pytest.mark.skipif(test_target() != "quill", reason="restarts its own server")
def test_check_constraints_survive_a_checkpoint_and_a_restart(tmp_path):
    """Regression: CHECK constraints were accepted and dropped. A checkpoint writes the table
    as SHOW CREATE TABLE, so the constraints must read back from it and still refuse rows."""
    setup = (
        "CREATE DATABASE k",
        "CREATE TABLE k.r3 (c INT CHECK (c < 100), CONSTRAINT ck1 CHECK (c = 1 OR c > 2 AND c < 5), CONSTRAINT loose CHECK (c <> 4) NOT ENFORCED)",
    )
    with restarted_after_checkpoint(tmp_path, "k.r3", *setup) as (conn, before), conn.cursor() as cur:
        assert "NOT ENFORCED" in before
        cur.execute("INSERT INTO k.r3 VALUES (4)")
        with pytest.raises(pymysql.err.OperationalError) as refused:
            cur.execute("INSERT INTO k.r3 VALUES (0)")
        assert refused.value.args == (3819, "Check constraint 'ck1' is violated.")


def test_database_default_collation_is_kept_and_inherited(conn, fresh_db):
    """Regression: a database's CHARACTER SET and COLLATE were ignored: SHOW CREATE DATABASE
    said utf8mb4_0900_ai_ci and its tables took that, so a dump restored with the wrong
    collation. A table takes its database's collation, a column its table's; ALTER
    DATABASE changes it for tables created after; @@collation_database follows USE."""
    name = f"{fresh_db}_bin"
    with conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE {name} CHARACTER SET utf8mb4 COLLATE utf8mb4_bin")
        try:
            cur.execute(f"SHOW CREATE DATABASE {name}")
            assert "COLLATE utf8mb4_bin" in cur.fetchone()[1]
            cur.execute(f"USE {name}")
            cur.execute("SELECT @@character_set_database, @@collation_database")
            assert cur.fetchone() == ("utf8mb4", "utf8mb4_bin")
            cur.execute("CREATE TABLE t (a VARCHAR(10))")
            cur.execute("INSERT INTO t VALUES ('a')")
            cur.execute("SELECT COUNT(*) FROM t WHERE a = 'A'")
            assert cur.fetchone()[0] == 0, "utf8mb4_bin tells 'a' from 'A'"
            cur.execute("SELECT TABLE_COLLATION FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 't'")
            assert cur.fetchone()[0] == "utf8mb4_bin"
            cur.execute(f"ALTER DATABASE {name} COLLATE utf8mb4_general_ci")
            cur.execute("CREATE TABLE u (a VARCHAR(10))")
            cur.execute("SELECT TABLE_NAME, TABLE_COLLATION FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() ORDER BY TABLE_NAME")
            assert cur.fetchall() == (("t", "utf8mb4_bin"), ("u", "utf8mb4_general_ci"))
            cur.execute(f"SELECT DEFAULT_COLLATION_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = '{name}'")
            assert cur.fetchone()[0] == "utf8mb4_general_ci"
        finally:
            cur.execute(f"DROP DATABASE {name}")


@pytest.mark.skipif(test_target() != "quill", reason="restarts its own server")
def test_database_collation_survives_the_log_and_a_checkpoint(tmp_path):
    """The collation reaches recovery twice: from the log (CREATE/ALTER DATABASE replayed)
    and from a checkpoint (its DATABASE_COLLATION entry)."""
    with PrivateQuill(tmp_path / "data", "--quill-checkpoint-interval-seconds=1") as quill:
        conn = quill.connect()
        with conn.cursor() as cur:
            cur.execute("CREATE DATABASE from_ckpt COLLATE utf8mb4_bin")
        quill.wait_for_checkpoint()
        with conn.cursor() as cur:
            cur.execute("CREATE DATABASE from_log COLLATE utf8mb4_bin")
            cur.execute("ALTER DATABASE from_log COLLATE utf8mb4_general_ci")
        quill.kill()
    with PrivateQuill(tmp_path / "data") as quill:
        conn = quill.connect()
        with conn.cursor() as cur:
            cur.execute("SELECT SCHEMA_NAME, DEFAULT_COLLATION_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE 'from%' ORDER BY 1")
            assert cur.fetchall() == (("from_ckpt", "utf8mb4_bin"), ("from_log", "utf8mb4_general_ci"))


@pytest.mark.parametrize("key", ["PRIMARY KEY", "UNIQUE KEY"])
@pytest.mark.parametrize("isolation", ["READ COMMITTED", "REPEATABLE READ"])
def test_a_waiting_delete_deletes_the_row_reinserted_meanwhile(server, fresh_db, key, isolation):
    """Issue 37, item 6: a `DELETE ... WHERE unique_col = x` that waits on a transaction
    deleting and re-inserting that key deletes the new row once it runs, as InnoDB's does (a
    locking read reads the newest committed row), so the next INSERT of the key succeeds."""
    columns = "u INT PRIMARY KEY, v INT" if key == "PRIMARY KEY" else "id INT AUTO_INCREMENT PRIMARY KEY, u INT, v INT, UNIQUE KEY (u)"
    with server.connect(fresh_db) as setup, setup.cursor() as cur:
        cur.execute(f"CREATE TABLE t ({columns})")
        cur.execute("INSERT INTO t (u, v) VALUES (5, 1)")
    holder = server.connect(fresh_db, autocommit=False)
    waiter = server.connect(fresh_db)
    try:
        with holder.cursor() as h, waiter.cursor() as w:
            w.execute(f"SET SESSION TRANSACTION ISOLATION LEVEL {isolation}")
            h.execute("BEGIN")
            h.execute("DELETE FROM t WHERE u = 5")
            h.execute("INSERT INTO t (u, v) VALUES (5, 2)")
            deleted = {}
            thread = threading.Thread(target=lambda: deleted.setdefault("rows", w.execute("DELETE FROM t WHERE u = 5")))
            thread.start()
            thread.join(timeout=0.5)
            assert thread.is_alive(), "the DELETE waits for the row lock"
            holder.commit()
            thread.join(timeout=30)
            assert deleted == {"rows": 1}
            w.execute("SELECT COUNT(*) FROM t")
            assert w.fetchone()[0] == 0
            w.execute("INSERT INTO t (u, v) VALUES (5, 3)")
    finally:
        holder.close()
        waiter.close()
