"""Row values (`(a, b) < (c, d)`, `(a, b) IN ((1, 2), ...)`) and quantified comparisons
(`x > ANY (SELECT ...)`, `x <= ALL (SELECT ...)`), against an oracle of SQL's three-valued
logic written here: a comparison with NULL is unknown; rows compare item by item, the
first unequal pair deciding; ANY is true when some comparison is, ALL false when some is,
else unknown when one is unknown (so an empty subquery makes ANY false and ALL true).
A failure names the seed and the statement:

    python3 -m pytest tests/test_row_values.py -k "oracle and SEED"
"""

from __future__ import annotations

import random

import pytest

SEEDS = 6
CHECKS_PER_SEED = 60
OPS = ["=", "<>", "<", "<=", ">", ">=", "<=>"]


def compare(x, y, op):
    """One comparison: True, False or None (unknown)."""
    if op == "<=>":
        return x == y if x is not None and y is not None else x is None and y is None
    if x is None or y is None:
        return None
    return {"=": x == y, "<>": x != y, "<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y}[op]


def and3(a, b):
    if a is False or b is False:
        return False
    return None if a is None or b is None else True


def or3(a, b):
    if a is True or b is True:
        return True
    return None if a is None or b is None else False


def row_compare(left, right, op):
    if op in ("=", "<=>"):
        result = True
        for x, y in zip(left, right):
            result = and3(result, compare(x, y, op))
        return result
    if op == "<>":
        eq = row_compare(left, right, "=")
        return None if eq is None else not eq
    strict = {"<=": "<", ">=": ">"}.get(op, op)
    result = compare(left[-1], right[-1], op)
    for i in range(len(left) - 2, -1, -1):
        result = or3(compare(left[i], right[i], strict), and3(compare(left[i], right[i], "="), result))
    return result


def quantified(x, values, op, all_):
    unknown = False
    for v in values:
        c = compare(x, v, op)
        if c is None:
            unknown = True
        elif c != all_:
            return c
    return None if unknown else all_


def as_sql(v):
    return "NULL" if v is None else str(v)


def value(rng):
    return rng.choice([None, 0, 1, 2, 3])


@pytest.mark.parametrize("seed", range(SEEDS))
def test_row_comparisons_agree_with_the_oracle(conn, seed):
    rng = random.Random(seed)
    with conn.cursor() as cur:
        for _ in range(CHECKS_PER_SEED):
            n = rng.randint(2, 3)
            left, right = [value(rng) for _ in range(n)], [value(rng) for _ in range(n)]
            op = rng.choice(OPS)
            sql = f"SELECT ({', '.join(map(as_sql, left))}) {op} ({', '.join(map(as_sql, right))})"
            cur.execute(sql)
            (got,) = cur.fetchone()
            want = row_compare(left, right, op)
            assert got == (None if want is None else int(want)), f"seed {seed}: {sql}"
            rows = [[value(rng) for _ in range(n)] for _ in range(rng.randint(1, 3))]
            negated = rng.random() < 0.3
            items = ", ".join("(" + ", ".join(map(as_sql, r)) + ")" for r in rows)
            sql = f"SELECT ({', '.join(map(as_sql, left))}) {'NOT ' if negated else ''}IN ({items})"
            cur.execute(sql)
            (got,) = cur.fetchone()
            want = False
            for r in rows:
                want = or3(want, row_compare(left, r, "="))
            if negated and want is not None:
                want = not want
            assert got == (None if want is None else int(want)), f"seed {seed}: {sql}"


@pytest.mark.parametrize("seed", range(SEEDS))
def test_any_and_all_agree_with_the_oracle(conn, seed):
    rng = random.Random(seed)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE s (g INT, v INT)")
        groups = {g: [value(rng) for _ in range(rng.randint(0, 4))] for g in range(6)}
        data = [(g, v) for g, vs in groups.items() for v in vs]
        if data:
            cur.executemany("INSERT INTO s VALUES (%s, %s)", data)
        for _ in range(CHECKS_PER_SEED):
            g, x, op = rng.randrange(6), value(rng), rng.choice(OPS[:6])
            word = rng.choice(["ANY", "SOME", "ALL"])
            sql = f"SELECT {as_sql(x)} {op} {word} (SELECT v FROM s WHERE g = {g})"
            cur.execute(sql)
            (got,) = cur.fetchone()
            want = quantified(x, groups[g], op, word == "ALL")
            assert got == (None if want is None else int(want)), f"seed {seed}: {sql}"
