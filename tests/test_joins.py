"""Joins on columns with no index: the hash join finds what a nested loop finds.

Two tables of random rows (integers of two widths, strings that differ only in letter
case, NULLs) are joined on every pair of comparable columns, inner and LEFT, through
ON and through WHERE; each result is checked against the same join computed here by
brute force, with MySQL's rules (NULL never equals anything, the default collation
ignores case). EXPLAIN must show the hash join, so the test checks the path it means to.
"""

from __future__ import annotations

import random

import pytest

ROWS = 300
SEED = 20261123


def random_rows(rng: random.Random, n: int, start: int) -> list[tuple]:
    words = ["alpha", "Alpha", "ALPHA", "beta", "Beta", "gamma", "delta", "DELTA"]
    rows = []
    for i in range(start, start + n):
        small = rng.choice([None, *range(20)])
        big = rng.choice([None, *range(15)]) if rng.random() < 0.9 else rng.randrange(-(2**40), 2**40)
        word = rng.choice([None, *words])
        rows.append((i, small, big, word))
    return rows


@pytest.fixture
def tables(server, fresh_db):
    rng = random.Random(SEED)
    a_rows, b_rows = random_rows(rng, ROWS, 1), random_rows(rng, ROWS, 10_001)
    conn = server.connect(fresh_db)
    with conn.cursor() as cur:
        for name, rows in (("ta", a_rows), ("tb", b_rows)):
            cur.execute(f"CREATE TABLE {name} (id INT PRIMARY KEY, small SMALLINT, big BIGINT, word VARCHAR(20))")
            cur.executemany(f"INSERT INTO {name} VALUES (%s, %s, %s, %s)", rows)
    yield conn, a_rows, b_rows
    conn.close()


def equal(x, y) -> bool:
    if x is None or y is None:
        return False
    if isinstance(x, str):
        return x.lower() == y.lower()
    return x == y


COLUMNS = {"small": 1, "big": 2, "word": 3}
PAIRS = [("small", "small"), ("small", "big"), ("big", "small"), ("big", "big"), ("word", "word")]


@pytest.mark.parametrize(("left", "right"), PAIRS)
def test_inner_join_on_unindexed_columns_matches_brute_force(tables, server, left, right):
    conn, a_rows, b_rows = tables
    li, ri = COLUMNS[left], COLUMNS[right]
    expected = sorted((a[0], b[0]) for a in a_rows for b in b_rows if equal(a[li], b[ri]))
    with conn.cursor() as cur:
        for sql in (
            f"SELECT ta.id, tb.id FROM ta JOIN tb ON ta.{left} = tb.{right}",
            f"SELECT ta.id, tb.id FROM ta, tb WHERE tb.{right} = ta.{left}",
        ):
            if server.is_quill:
                cur.execute("EXPLAIN " + sql)
                assert "hash join" in cur.fetchall()[1][11], sql
            cur.execute(sql)
            assert sorted(cur.fetchall()) == expected, sql


@pytest.mark.parametrize(("left", "right"), PAIRS)
def test_left_join_on_unindexed_columns_matches_brute_force(tables, left, right):
    conn, a_rows, b_rows = tables
    li, ri = COLUMNS[left], COLUMNS[right]
    with conn.cursor() as cur:
        cur.execute(f"SELECT ta.id, tb.id FROM ta LEFT JOIN tb ON ta.{left} = tb.{right} AND tb.id % 2 = 0")
        got = sorted(cur.fetchall(), key=lambda r: (r[0], r[1] if r[1] is not None else -1))
    expected = []
    for a in a_rows:
        matches = [(a[0], b[0]) for b in b_rows if equal(a[li], b[ri]) and b[0] % 2 == 0]
        expected.extend(matches or [(a[0], None)])
    expected.sort(key=lambda r: (r[0], r[1] if r[1] is not None else -1))
    assert got == expected


def test_three_table_join_and_aggregate(tables):
    conn, a_rows, b_rows = tables
    expected = sum(1 for a in a_rows for b in b_rows for c in a_rows if equal(a[1], b[1]) and equal(b[3], c[3]) and c[0] <= 50)
    with conn.cursor() as cur:
        cur.execute("SELECT COUNT(*) FROM ta JOIN tb ON ta.small = tb.small JOIN ta c ON tb.word = c.word WHERE c.id <= 50")
        assert cur.fetchone()[0] == expected
