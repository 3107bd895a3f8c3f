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
