"""Answers that were silently wrong, each checked the way a client meets it.

Every test here guards a result Quill once gave without an error while MySQL (and MariaDB,
where it agrees) gave another: the insert id in the OK packet, the type a result column is
sent with, a value cut short. The SQL-only cases live in tests/sql/right_answers.test; these
need what a driver sees (lastrowid, the column's wire type, warnings after a value). Each test
runs against MariaDB too (tests/run-against-mariadb.sh) unless it says why not.
"""

import pymysql
import pytest

from conftest import test_target

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
