"""ORDER BY ... LIMIT read from an index, forwards or backwards.

When a single table's ORDER BY is a leading part of its primary key or of a secondary
index (after the columns an equality fixes), all ascending or all descending, Quill reads
the rows in that index's order and stops after the LIMIT, instead of sorting the table;
EXPLAIN shows the index (type `index` for a whole-index read, as MySQL's). Every query here
is checked against the same ordering computed in Python, so a plan that reads in the wrong
order or stops too early fails. Runs against MariaDB too (`tests/run-against-mariadb.sh`),
except the EXPLAIN check, whose columns are MySQL 8's.
"""

import random

import pytest

ROWS = 20_000


def nulls_first(v):
    return (v is not None, v)


@pytest.fixture
def table(conn):
    rnd = random.Random(7)
    rows = [(i, rnd.randint(0, 500) if i % 17 else None, f"s{rnd.randint(0, 40):02d}", i % 5) for i in range(1, ROWS + 1)]
    cur = conn.cursor()
    cur.execute("CREATE TABLE t (id INT PRIMARY KEY, a INT, s VARCHAR(20), b INT, KEY ka (a), KEY ksa (s, a), KEY kb (b, a))")
    for start in range(0, ROWS, 5_000):
        cur.executemany("INSERT INTO t VALUES (%s, %s, %s, %s)", rows[start : start + 5_000])
    return cur, rows


def column(cur, sql):
    cur.execute(sql)
    return [r[0] for r in cur.fetchall()]


def test_order_by_a_secondary_index_with_limit(table):
    cur, rows = table
    by_a = sorted((r[1] for r in rows), key=nulls_first)
    assert column(cur, "SELECT a FROM t ORDER BY a LIMIT 30") == by_a[:30]
    assert column(cur, "SELECT a FROM t ORDER BY a LIMIT 5 OFFSET 1170") == by_a[1170:1175]
    assert column(cur, "SELECT a FROM t ORDER BY a DESC LIMIT 30") == by_a[::-1][:30]
    above = sorted(r[1] for r in rows if r[1] is not None and r[1] > 250)
    assert column(cur, "SELECT a FROM t WHERE a > 250 ORDER BY a LIMIT 10") == above[:10]
    assert column(cur, "SELECT a FROM t WHERE a > 250 ORDER BY a DESC LIMIT 10") == above[::-1][:10]


def test_order_by_the_index_columns_after_an_equality(table):
    cur, rows = table
    b3 = sorted((r[1] for r in rows if r[3] == 3), key=nulls_first)
    assert column(cur, "SELECT a FROM t WHERE b = 3 ORDER BY a LIMIT 10") == b3[:10]
    assert column(cur, "SELECT a FROM t WHERE b = 3 ORDER BY a DESC LIMIT 10") == b3[::-1][:10]
    # A string compared with the integer column is not an exact key: the whole index is
    # read, still in order.
    assert column(cur, "SELECT a FROM t WHERE b = '3' ORDER BY a LIMIT 10") == b3[:10]
    s7 = sorted((r[1] for r in rows if r[2] == "s07"), key=nulls_first)
    assert column(cur, "SELECT a FROM t WHERE s = 's07' ORDER BY a DESC LIMIT 4") == s7[::-1][:4]


def test_order_by_two_index_columns_one_way_or_mixed(table):
    cur, rows = table
    cur.execute("SELECT s, a FROM t ORDER BY s DESC, a DESC LIMIT 10")
    pairs = sorted(((r[2], r[1]) for r in rows), key=lambda p: (p[0], nulls_first(p[1])), reverse=True)
    assert [tuple(r) for r in cur.fetchall()] == pairs[:10]
    # Mixed directions follow no index: sorted, still right.
    cur.execute("SELECT s, a FROM t ORDER BY s, a DESC LIMIT 3")
    mixed = sorted(sorted(((r[2], r[1]) for r in rows), key=lambda p: nulls_first(p[1]), reverse=True), key=lambda p: p[0])
    assert [tuple(r) for r in cur.fetchall()] == mixed[:3]


def test_order_by_primary_key_descending(table):
    cur, _ = table
    assert column(cur, "SELECT id FROM t ORDER BY id DESC LIMIT 5 OFFSET 3") == [ROWS - 3 - i for i in range(5)]
    assert column(cur, "SELECT id FROM t WHERE id < 1000 ORDER BY id DESC LIMIT 3") == [999, 998, 997]
    assert column(cur, "SELECT id FROM t WHERE id BETWEEN 10 AND 14 ORDER BY id DESC") == [14, 13, 12, 11, 10]
    assert column(cur, "SELECT id FROM t WHERE id IN (5, 3, 9) ORDER BY id DESC") == [9, 5, 3]
    assert column(cur, "SELECT COUNT(*) FROM (SELECT id FROM t ORDER BY id DESC LIMIT 7) x") == [7]


def test_a_locking_read_in_descending_order(table, conn):
    cur, rows = table
    conn.begin()
    assert column(cur, "SELECT id FROM t ORDER BY id DESC LIMIT 3 FOR UPDATE") == [ROWS, ROWS - 1, ROWS - 2]
    assert column(cur, "SELECT a FROM t WHERE a IS NOT NULL ORDER BY a DESC LIMIT 1 LOCK IN SHARE MODE") == [max(r[1] for r in rows if r[1] is not None)]
    conn.rollback()


def test_a_row_moved_in_the_index_is_read_in_its_new_place(table):
    cur, _ = table
    cur.execute("UPDATE t SET a = 100000 WHERE id = 1")
    cur.execute("UPDATE t SET a = -1 WHERE id = 2")
    assert column(cur, "SELECT id FROM t ORDER BY a DESC LIMIT 1") == [1]
    assert column(cur, "SELECT id FROM t WHERE a IS NOT NULL ORDER BY a LIMIT 1") == [2]


@pytest.mark.mysql8_only
def test_explain_shows_the_index_read(table):
    cur, _ = table
    cur.execute("EXPLAIN SELECT id FROM t ORDER BY a DESC LIMIT 5")
    row = cur.fetchone()
    assert (row[4], row[6]) == ("index", "ka"), row
    cur.execute("EXPLAIN SELECT id FROM t WHERE b = 3 ORDER BY a LIMIT 5")
    row = cur.fetchone()
    assert (row[4], row[6]) == ("ref", "kb"), row
