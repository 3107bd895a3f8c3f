"""INSERT ... SELECT inserts rows as its query produces them, and still never reads its own.

A query that reads another table streams into the insert; one that reads the table it
fills (directly, joined, or in a subquery) reads it whole first, as MySQL does with a
temporary table, so the copy doubles the table once rather than feeding on itself. Runs
against Quill and MariaDB alike.
"""

import pymysql
import pytest


def test_insert_select_from_another_table_with_limit_and_offset(server, fresh_db):
    conn = server.connect(fresh_db)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE src (id INT PRIMARY KEY, v VARCHAR(20))")
        cur.executemany("INSERT INTO src VALUES (%s, %s)", [(i, f"v{i}") for i in range(1, 501)])
        cur.execute("CREATE TABLE dst (id INT PRIMARY KEY, v VARCHAR(20))")
        cur.execute("INSERT INTO dst SELECT id, v FROM src ORDER BY id LIMIT 100 OFFSET 50")
        assert cur.rowcount == 100
        cur.execute("SELECT MIN(id), MAX(id), COUNT(*) FROM dst")
        assert cur.fetchone() == (51, 150, 100)
        cur.execute("INSERT INTO dst SELECT id, v FROM src WHERE id > 400")
        cur.execute("SELECT COUNT(*), SUM(id) FROM dst")
        assert cur.fetchone() == (200, sum(range(51, 151)) + sum(range(401, 501)))


def test_insert_select_reading_its_own_table_copies_it_once(server, fresh_db):
    conn = server.connect(fresh_db)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT)")
        cur.executemany("INSERT INTO t VALUES (%s, %s)", [(i, i) for i in range(1, 1001)])
        cur.execute("INSERT INTO t SELECT id + 1000, v FROM t")
        assert cur.rowcount == 1000
        cur.execute("INSERT INTO t SELECT a.id + 2000, a.v FROM t a JOIN t b ON a.id = b.id")
        assert cur.rowcount == 2000
        cur.execute("INSERT INTO t SELECT id + 10000, v FROM (SELECT id, v FROM t WHERE id IN (SELECT id FROM t WHERE id <= 10)) d")
        assert cur.rowcount == 10
        cur.execute("SELECT COUNT(*), MAX(id) FROM t")
        assert cur.fetchone() == (4010, 10010)


def test_decimals_copied_between_columns_keep_their_type_checks(server, fresh_db):
    """A DECIMAL of the target's scale is copied as it is only when it fits the target's
    precision and signedness; otherwise it gets MySQL's out-of-range error (strict mode)."""
    conn = server.connect(fresh_db)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE src (id INT PRIMARY KEY, d DECIMAL(10,2))")
        cur.execute("INSERT INTO src VALUES (1, 123.45), (2, -0.50), (3, 12345.67), (4, 0.00)")
        cur.execute("CREATE TABLE same (id INT PRIMARY KEY, d DECIMAL(10,2))")
        cur.execute("INSERT INTO same SELECT * FROM src")
        cur.execute("SELECT CAST(d AS CHAR) FROM same ORDER BY id")
        assert [r[0] for r in cur.fetchall()] == ["123.45", "-0.50", "12345.67", "0.00"]
        cur.execute("CREATE TABLE narrow (id INT PRIMARY KEY, d DECIMAL(5,2))")
        with pytest.raises(pymysql.err.DataError) as e:
            cur.execute("INSERT INTO narrow SELECT * FROM src WHERE id = 3")
        assert e.value.args[0] == 1264
        cur.execute("CREATE TABLE positive (id INT PRIMARY KEY, d DECIMAL(10,2) UNSIGNED)")
        with pytest.raises(pymysql.err.DataError) as e:
            cur.execute("INSERT INTO positive SELECT * FROM src WHERE id = 2")
        assert e.value.args[0] == 1264
        cur.execute("INSERT INTO positive SELECT * FROM src WHERE id IN (1, 4)")
        cur.execute("SELECT COUNT(*) FROM narrow")
        assert cur.fetchone() == (0,)
        cur.execute("SELECT CAST(d AS CHAR) FROM positive ORDER BY id")
        assert [r[0] for r in cur.fetchall()] == ["123.45", "0.00"]


# The whole-row copy: `INSERT INTO t SELECT * FROM s` between tables of one shape moves rows
# as they are stored (`sql::dml::copy`). These check that it keeps every outcome the
# general path has, on Quill and MariaDB alike.

COPY_COLUMNS = (
    "(id INT {auto} PRIMARY KEY, c CHAR(8), v VARCHAR(40), d DECIMAL(10,2), dd DECIMAL(30,10),"
    " f DOUBLE, day DATE, at DATETIME(6), b VARBINARY(16), t TEXT, u BIGINT UNSIGNED, KEY v (v))"
)


def copy_table(cur, name: str, auto: str = "") -> None:
    cur.execute(f"CREATE TABLE {name} {COPY_COLUMNS.format(auto=auto)}")


def test_a_whole_table_copy_keeps_every_value_index_and_counter(server, fresh_db):
    conn = server.connect(fresh_db)
    with conn.cursor() as cur:
        copy_table(cur, "src")
        rows = [
            (i, f"c{i % 7}", f"name {i} " + "x" * (i % 13), f"{i}.{i % 100:02d}", f"-{i}.0000000001", i / 7,
             f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}", f"2026-11-24 10:{i % 60:02d}:00.{i:06d}", bytes([i % 256, 0, 255]),
             "é" * (i % 5), 2**64 - 1 - i)
            for i in range(1, 1001)
        ]
        # NULL in every nullable column.
        rows.append((1001,) + (None,) * 10)
        cur.executemany("INSERT INTO src VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)", rows)
        conn.commit()
        copy_table(cur, "dst", auto="AUTO_INCREMENT")
        cur.execute("INSERT INTO dst SELECT * FROM src")
        assert cur.rowcount == 1001
        conn.commit()
        cur.execute("CHECKSUM TABLE src, dst")
        (_, a), (_, b) = cur.fetchall()
        assert a == b
        cur.execute("SELECT * FROM src ORDER BY id")
        source = cur.fetchall()
        cur.execute("SELECT * FROM dst ORDER BY id")
        assert cur.fetchall() == source
        # The secondary index has every row, and the counter moved past the copied ids.
        cur.execute("SELECT id FROM dst FORCE INDEX (v) WHERE v = 'name 14 x'")
        assert cur.fetchall() == ((14,),)
        cur.execute("INSERT INTO dst (c) VALUES ('new')")
        cur.execute("SELECT LAST_INSERT_ID()")
        assert cur.fetchone() == (1002,)


def test_a_whole_table_copy_generates_ids_for_zero_and_refuses_or_skips_duplicates(server, fresh_db):
    conn = server.connect(fresh_db)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE src (id INT PRIMARY KEY, v VARCHAR(10))")
        cur.execute("INSERT INTO src VALUES (0, 'zero'), (5, 'five'), (9, 'nine')")
        cur.execute("CREATE TABLE dst (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(10))")
        # A 0 in an AUTO_INCREMENT column takes the next value, as an INSERT of 0 does.
        cur.execute("INSERT INTO dst SELECT * FROM src")
        cur.execute("SELECT LAST_INSERT_ID()")
        assert cur.fetchone() == (1,)
        cur.execute("SELECT id, v FROM dst ORDER BY id")
        assert cur.fetchall() == ((1, "zero"), (5, "five"), (9, "nine"))
        # Every row is a duplicate now: the statement fails whole, or IGNORE skips each.
        cur.execute("DELETE FROM src WHERE id = 0")
        cur.execute("INSERT INTO src VALUES (7, 'seven')")
        with pytest.raises(pymysql.err.IntegrityError) as e:
            cur.execute("INSERT INTO dst SELECT * FROM src")
        assert e.value.args[0] == 1062
        cur.execute("SELECT COUNT(*) FROM dst")
        assert cur.fetchone() == (3,)
        cur.execute("INSERT IGNORE INTO dst SELECT * FROM src")
        assert cur.rowcount == 1
        cur.execute("SHOW WARNINGS")
        # MySQL 8.0.19+ names the key with its table; MariaDB names the key alone.
        key = "dst.PRIMARY" if server.is_quill else "PRIMARY"
        assert [(w[1], w[2]) for w in cur.fetchall()] == [(1062, f"Duplicate entry '{i}' for key '{key}'") for i in (5, 9)]


def test_a_whole_table_copy_waits_for_a_source_row_another_transaction_writes(server, fresh_db):
    """At REPEATABLE READ the copy locks its source rows in shared mode, as InnoDB's
    INSERT ... SELECT does: a row another transaction has changed and not committed makes it
    wait, and time out."""
    writer = server.connect(fresh_db)
    copier = server.connect(fresh_db)
    with writer.cursor() as w, copier.cursor() as c:
        w.execute("CREATE TABLE src (id INT PRIMARY KEY, v INT)")
        w.execute("INSERT INTO src VALUES (1, 1), (2, 2), (3, 3)")
        w.execute("CREATE TABLE dst (id INT PRIMARY KEY, v INT)")
        writer.commit()
        w.execute("BEGIN")
        w.execute("UPDATE src SET v = 20 WHERE id = 2")
        c.execute("SET SESSION innodb_lock_wait_timeout = 1")
        with pytest.raises(pymysql.err.OperationalError) as e:
            c.execute("INSERT INTO dst SELECT * FROM src")
        assert e.value.args[0] == 1205
        writer.commit()
        c.execute("INSERT INTO dst SELECT * FROM src")
        c.execute("SELECT id, v FROM dst ORDER BY id")
        assert c.fetchall() == ((1, 1), (2, 20), (3, 3))
