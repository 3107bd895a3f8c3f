"""Every join form MySQL parses: parenthesized and nested joins, RIGHT JOIN anywhere, NATURAL
JOIN, USING, table lists in parentheses, and multi-table UPDATE and DELETE.

The fuzzer draws join trees over four small tables with NULLs (inner, LEFT, RIGHT and CROSS
joins, each side a table or a parenthesized join, ON conditions that read both sides, a WHERE
that reads any table) and checks each answer against the same tree evaluated here with SQL's
rules: a LEFT JOIN's row that no row of its right side (a whole parenthesized join) matches
gets NULLs for every table of that side, and WHERE is tested after. A failure names the seed
and the statement; replay one seed with

    python3 -m pytest tests/test_join_forms.py -k "oracle and SEED"
"""

from __future__ import annotations

import random

import pymysql
import pytest
from sessions import column_names as columns, error_code as errno, all_rows as rows

SEEDS = 12
QUERIES_PER_SEED = 40
TABLES = ["t1", "t2", "t3", "t4"]


def table_rows(rng: random.Random) -> list[tuple]:
    return [(rng.choice([None, 0, 1, 2, 3]), rng.choice([None, 0, 1, 2, 3])) for _ in range(rng.randint(0, 5))]


@pytest.fixture
def filled(conn):
    rng = random.Random(20261129)
    data = {}
    with conn.cursor() as cur:
        for t in TABLES:
            rows = table_rows(rng)
            data[t] = rows
            cur.execute(f"CREATE TABLE {t} (id INT PRIMARY KEY AUTO_INCREMENT, a INT, b INT)")
            if rows:
                cur.executemany(f"INSERT INTO {t} (a, b) VALUES (%s, %s)", rows)
    return conn, data


# A join tree: ("leaf", alias, table) or (kind, left, right, on) with on a list of
# conjuncts (alias, column, alias, column) meaning `x.c = y.d`, or None for CROSS JOIN.
def leaves(node) -> list[str]:
    if node[0] == "leaf":
        return [node[1]]
    return leaves(node[1]) + leaves(node[2])


def draw(rng: random.Random, aliases: list[str], depth: int = 0):
    if len(aliases) == 1 or depth > 2 and rng.random() < 0.5:
        alias = aliases[0]
        return ("leaf", alias, rng.choice(TABLES)), aliases[1:]
    cut = rng.randint(1, len(aliases) - 1)
    left, _ = draw(rng, aliases[:cut], depth + 1)
    right, _ = draw(rng, aliases[cut:], depth + 1)
    kind = rng.choice(["JOIN", "LEFT JOIN", "LEFT JOIN", "RIGHT JOIN", "RIGHT JOIN", "CROSS JOIN"])
    on = None
    if kind != "CROSS JOIN":
        ls, rs = leaves(left), leaves(right)
        on = [(rng.choice(ls), rng.choice("ab"), rng.choice(rs), rng.choice("ab")) for _ in range(rng.randint(1, 2))]
    return (kind, left, right, on), []


def render(node, top: bool = True) -> str:
    if node[0] == "leaf":
        return f"{node[2]} AS {node[1]}"
    kind, left, right, on = node
    right_sql = render(right, False)
    if right[0] != "leaf":
        right_sql = f"({right_sql})"
    left_sql = render(left, False)
    if left[0] != "leaf" and not top and random.random() < 0.3:
        left_sql = f"({left_sql})"
    sql = f"{left_sql} {kind} {right_sql}"
    if on is not None:
        sql += " ON " + " AND ".join(f"{x}.{c} = {y}.{d}" for x, c, y, d in on)
    return sql


def evaluate(node, data) -> list[dict]:
    """The rows of a join tree: each a dict alias -> (a, b), or None where NULL-extended."""
    if node[0] == "leaf":
        return [{node[1]: row} for row in data[node[2]]]
    kind, left, right, on = node
    lrows, rrows = evaluate(left, data), evaluate(right, data)

    def holds(row) -> bool:
        for x, c, y, d in on or []:
            u, v = row[x], row[y]
            u = None if u is None else u["ab".index(c)]
            v = None if v is None else v["ab".index(d)]
            if u is None or v is None or u != v:
                return False
        return True

    out = []
    if kind in ("JOIN", "CROSS JOIN"):
        return [{**l, **r} for l in lrows for r in rrows if holds({**l, **r})]
    outer, inner, inner_aliases = (lrows, rrows, leaves(right)) if kind == "LEFT JOIN" else (rrows, lrows, leaves(left))
    for o in outer:
        matched = [{**o, **i} for i in inner if holds({**o, **i})]
        out.extend(matched or [{**o, **{a: None for a in inner_aliases}}])
    return out


@pytest.mark.parametrize("seed", range(SEEDS))
def test_join_trees_agree_with_the_oracle(filled, seed):
    conn, data = filled
    rng = random.Random(seed)
    with conn.cursor() as cur:
        for _ in range(QUERIES_PER_SEED):
            aliases = [f"x{i}" for i in range(rng.randint(2, 5))]
            tree, _ = draw(rng, aliases)
            order = leaves(tree)
            where, wanted = "", lambda row: True
            if rng.random() < 0.5:
                alias, col = rng.choice(order), rng.choice("ab")
                if rng.random() < 0.5:
                    where = f" WHERE {alias}.{col} IS NULL"
                    wanted = lambda row, alias=alias, col=col: row[alias] is None or row[alias]["ab".index(col)] is None  # noqa: E731
                else:
                    where = f" WHERE {alias}.{col} > 1"
                    wanted = lambda row, alias=alias, col=col: row[alias] is not None and (row[alias]["ab".index(col)] or 0) > 1  # noqa: E731
            select = ", ".join(f"{a}.a, {a}.b" for a in order)
            sql = f"SELECT {select} FROM {render(tree)}{where}"
            cur.execute(sql)
            got = sorted(cur.fetchall(), key=repr)
            expected = []
            for row in evaluate(tree, data):
                if wanted(row):
                    flat = []
                    for a in order:
                        flat.extend(row[a] if row[a] is not None else (None, None))
                    expected.append(tuple(flat))
            assert got == sorted(expected, key=repr), f"seed {seed}: {sql}"


@pytest.fixture
def shop(conn):
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE a (id INT PRIMARY KEY, name VARCHAR(10))")
        cur.execute("CREATE TABLE b (id INT PRIMARY KEY, aid INT, v INT)")
        cur.execute("CREATE TABLE c (id INT PRIMARY KEY, bid INT, w INT)")
        cur.execute("INSERT INTO a VALUES (1, 'one'), (2, 'two'), (3, 'three')")
        cur.execute("INSERT INTO b VALUES (10, 1, 100), (11, 1, 101), (20, 2, 200)")
        cur.execute("INSERT INTO c VALUES (100, 10, 7), (101, 20, 8)")
    return conn





def test_a_left_join_of_a_parenthesized_join_fills_all_its_tables(shop):
    # Sequelize's nested includes: b without a c does not count as a match.
    sql = "SELECT a.id, b.id, c.id FROM a LEFT JOIN (b JOIN c ON c.bid = b.id) ON b.aid = a.id ORDER BY a.id, b.id"
    assert rows(shop, sql) == ((1, 10, 100), (2, 20, 101), (3, None, None))
    sql = "SELECT a.id, b.id, c.id FROM a LEFT JOIN (b LEFT JOIN c ON c.bid = b.id) ON b.aid = a.id AND c.w = 8 ORDER BY a.id"
    assert rows(shop, sql) == ((1, None, None), (2, 20, 101), (3, None, None))
    sql = "SELECT a.id FROM a LEFT JOIN (b JOIN c ON c.bid = b.id) ON b.aid = a.id WHERE c.id IS NULL"
    assert rows(shop, sql) == ((3,),)


def test_tables_in_parentheses_and_lists_in_parentheses(shop):
    assert rows(shop, "SELECT * FROM (a) WHERE id = 2") == ((2, "two"),)
    assert rows(shop, "SELECT a.id, b.id FROM a JOIN (b) ON b.aid = a.id ORDER BY b.id") == ((1, 10), (1, 11), (2, 20))
    assert rows(shop, "SELECT a.id, b.id FROM (a, b) WHERE b.aid = a.id ORDER BY b.id") == ((1, 10), (1, 11), (2, 20))
    assert rows(shop, "SELECT COUNT(*) FROM (a AS x CROSS JOIN b AS y)") == ((9,),)
    # A comma binds looser than JOIN: the ON sees only its own join's tables.
    assert rows(shop, "SELECT COUNT(*) FROM a JOIN (b, c) ON c.bid = b.id AND b.aid = a.id") == ((2,),)


def test_right_join_after_other_joins(shop):
    sql = "SELECT a.id, b.id, c.id FROM a JOIN b ON b.aid = a.id RIGHT JOIN c ON c.bid = b.id ORDER BY c.id"
    assert rows(shop, sql) == ((1, 10, 100), (2, 20, 101))
    sql = "SELECT a.id, b.id FROM b RIGHT JOIN a ON b.aid = a.id AND b.v > 100 ORDER BY a.id"
    assert rows(shop, sql) == ((1, 11), (2, 20), (3, None))
    assert columns(shop, "SELECT * FROM b RIGHT JOIN a ON b.aid = a.id") == ["id", "aid", "v", "id", "name"]


def test_natural_join_and_using_coalesce_in_the_left_sides_order(conn):
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE p (a INT, b INT, c INT)")
        cur.execute("CREATE TABLE q (b INT, a INT, d INT)")
        cur.execute("INSERT INTO p VALUES (1, 2, 3), (4, 5, 6)")
        cur.execute("INSERT INTO q VALUES (2, 1, 9), (7, 7, 7)")
    for sql in ("SELECT * FROM p NATURAL JOIN q", "SELECT * FROM p JOIN q USING (a, b)", "SELECT * FROM p JOIN q USING (b, a)"):
        assert columns(conn, sql) == ["a", "b", "c", "d"], sql
        assert rows(conn, sql) == ((1, 2, 3, 9),), sql
    assert rows(conn, "SELECT * FROM p NATURAL LEFT JOIN q ORDER BY a") == ((1, 2, 3, 9), (4, 5, 6, None))
    assert columns(conn, "SELECT * FROM q NATURAL JOIN p") == ["b", "a", "d", "c"]
    # A RIGHT JOIN lists its right side's columns first.
    assert columns(conn, "SELECT * FROM p NATURAL RIGHT JOIN q") == ["b", "a", "d", "c"]
    assert rows(conn, "SELECT * FROM p NATURAL RIGHT JOIN q ORDER BY b") == ((2, 1, 9, 3), (7, 7, 7, None))
    # A side that is itself a join may have the name twice.
    assert errno(conn, "SELECT * FROM (p, q) NATURAL JOIN p AS r") == 1052


def test_multi_table_update(shop):
    with shop.cursor() as cur:
        # Each target row once, however many joined rows match it.
        assert cur.execute("UPDATE a JOIN b ON b.aid = a.id SET a.name = CONCAT('n', b.v), b.v = b.v + 1") == 5
        assert rows(shop, "SELECT name FROM a ORDER BY id") in ((("n100",), ("n200",), ("three",)), (("n101",), ("n200",), ("three",)))
        assert rows(shop, "SELECT v FROM b ORDER BY id") == ((101,), (102,), (201,))
        assert cur.execute("UPDATE a, c SET a.name = 'x' WHERE a.id = c.id - 99") == 2
        assert cur.execute("UPDATE a LEFT JOIN b ON b.aid = a.id SET a.name = 'none' WHERE b.id IS NULL") == 1
        assert rows(shop, "SELECT name FROM a WHERE id = 3") == (("none",),)
        assert cur.execute("UPDATE (a JOIN b ON b.aid = a.id) JOIN c ON c.bid = b.id SET c.w = c.w + 10") == 2
        assert rows(shop, "SELECT w FROM c ORDER BY id") == ((17,), (18,))
    assert errno(shop, "UPDATE a JOIN b ON b.aid = a.id SET id = 1") == 1052
    assert errno(shop, "UPDATE a JOIN b ON b.aid = a.id SET nope = 1") == 1054


@pytest.mark.mysql8_only
def test_multi_table_writes_refuse_order_by_and_limit(shop):
    # MySQL 8's rule (MariaDB 10.3 and later accept them).
    assert errno(shop, "UPDATE a JOIN b ON b.aid = a.id SET a.name = 'y' ORDER BY a.id") == 1221
    assert errno(shop, "UPDATE a JOIN b ON b.aid = a.id SET a.name = 'y' LIMIT 1") == 1221
    assert errno(shop, "DELETE a FROM a JOIN b ON b.aid = a.id LIMIT 1") == 1064


def test_multi_table_delete(shop):
    with shop.cursor() as cur:
        assert cur.execute("DELETE a, b FROM a JOIN b ON b.aid = a.id WHERE b.v > 100") == 4
        assert rows(shop, "SELECT id FROM a ORDER BY id") == ((3,),)
        assert rows(shop, "SELECT id FROM b ORDER BY id") == ((10,),)
        assert cur.execute("DELETE FROM c USING b RIGHT JOIN c ON c.bid = b.id WHERE b.id IS NULL") == 1
        assert rows(shop, "SELECT id FROM c") == ((100,),)
        assert cur.execute("DELETE x FROM a AS x LEFT JOIN b ON b.aid = x.id WHERE b.id IS NULL") == 1
        assert rows(shop, "SELECT id FROM a") == ()
    assert errno(shop, "DELETE a FROM a AS x JOIN b ON b.aid = x.id") == 1109


def test_multi_table_update_under_lock_tables_writes_only_its_targets(shop):
    with shop.cursor() as cur:
        cur.execute("LOCK TABLES a WRITE, b READ")
        try:
            assert cur.execute("UPDATE a JOIN b ON b.aid = a.id SET a.name = 'z'") == 2
            with pytest.raises(pymysql.err.MySQLError) as e:
                cur.execute("UPDATE a JOIN b ON b.aid = a.id SET b.v = 0")
            assert e.value.args[0] == 1099
        finally:
            cur.execute("UNLOCK TABLES")
