"""One statement's intermediate results are bounded by `temptable_max_ram`.

A sort, a GROUP BY, a DISTINCT or a hash join's build side that would hold more than the
bound fails with 1114 ("The table '/tmp/#sql…' is full", MySQL's error when a temporary
table cannot grow) instead of growing the server without limit; the connection survives
and the next statement runs. ORDER BY … LIMIT keeps only the rows it returns, so it stays
within the bound however large the input. Quill has no on-disk temporary tables, so MySQL's
in-memory thresholds (`tmp_table_size`, `sort_buffer_size`, `max_heap_table_size`) are
accepted and do nothing, which SET says with a warning.

These tests start a server of their own, so the global bound they lower never reaches
other tests.
"""

import pymysql
import pytest

from conftest import PrivateQuill, test_target

quill_only = pytest.mark.skipif(test_target() != "quill", reason="starts a quill server of its own")

ER_RECORD_FILE_FULL = 1114
# temptable_max_ram's minimum, as MySQL's.
SMALL_BOUND = 2 * 1024 * 1024
# Rows whose values alone (~60-byte strings) are well past SMALL_BOUND.
ROWS = 60_000


@pytest.fixture(scope="module")
def bounded(tmp_path_factory):
    """A private server with ROWS rows in b.t and the smallest temptable_max_ram."""
    datadir = tmp_path_factory.mktemp("memory-bound") / "data"
    with PrivateQuill(datadir) as quill:
        conn = quill.connect()
        cur = conn.cursor()
        cur.execute("CREATE DATABASE b")
        cur.execute("CREATE TABLE b.t (id INT PRIMARY KEY, g INT, s VARCHAR(100))")
        for start in range(0, ROWS, 10_000):
            values = ",".join(
                f"({i}, {i % 20_000}, 'row {i:08d} {'x' * 48}')" for i in range(start, start + 10_000)
            )
            cur.execute(f"INSERT INTO b.t VALUES {values}")
        cur.execute(f"SET GLOBAL temptable_max_ram = {SMALL_BOUND}")
        conn.close()
        yield quill


def run(conn, sql):
    with conn.cursor() as cur:
        cur.execute(sql)
        return cur.fetchall()


@quill_only
@pytest.mark.parametrize(
    "sql",
    [
        "SELECT id, s FROM b.t ORDER BY s DESC",
        "SELECT s, COUNT(*) FROM b.t GROUP BY s",
        "SELECT DISTINCT s FROM b.t",
        "SELECT COUNT(DISTINCT s) FROM b.t",
        "SELECT COUNT(*) FROM b.t x JOIN b.t y ON x.s = y.s",
    ],
)
def test_a_statement_past_the_bound_gets_1114_and_the_connection_survives(bounded, sql):
    conn = bounded.connect()
    with pytest.raises(pymysql.err.OperationalError) as e:
        run(conn, sql)
    assert e.value.args[0] == ER_RECORD_FILE_FULL, e.value.args
    assert "is full" in e.value.args[1]
    assert run(conn, "SELECT COUNT(*) FROM b.t") == ((ROWS,),)
    assert bounded.alive()
    conn.close()


@quill_only
def test_order_by_limit_keeps_only_the_rows_it_returns(bounded):
    conn = bounded.connect()
    got = run(conn, "SELECT id FROM b.t ORDER BY s DESC LIMIT 5 OFFSET 10")
    assert [r[0] for r in got] == list(range(ROWS - 11, ROWS - 16, -1))
    got = run(conn, "SELECT g, id FROM b.t ORDER BY g, id DESC LIMIT 3")
    assert got == ((0, 40_000), (0, 20_000), (0, 0))
    conn.close()


@quill_only
def test_small_groups_and_joins_stay_within_the_bound(bounded):
    conn = bounded.connect()
    assert run(conn, "SELECT g % 10 k, COUNT(*) FROM b.t GROUP BY k ORDER BY k LIMIT 1") == ((0, ROWS // 10),)
    assert run(conn, "SELECT COUNT(*) FROM b.t x JOIN (SELECT 7 g) y ON x.g = y.g") == ((ROWS // 20_000,),)
    conn.close()


@quill_only
def test_raising_the_bound_lets_the_statement_run(bounded):
    conn = bounded.connect()
    try:
        run(conn, "SET GLOBAL temptable_max_ram = 1073741824")
        assert run(conn, "SELECT COUNT(*) FROM (SELECT DISTINCT s FROM b.t) d") == ((ROWS,),)
    finally:
        run(conn, f"SET GLOBAL temptable_max_ram = {SMALL_BOUND}")
    conn.close()


@quill_only
def test_the_bound_has_mysqls_minimum(bounded):
    conn = bounded.connect()
    with conn.cursor() as cur:
        cur.execute("SET GLOBAL temptable_max_ram = 1024")
        cur.execute("SHOW WARNINGS")
        assert [w[1] for w in cur.fetchall()] == [1292]
        assert run(conn, "SELECT @@GLOBAL.temptable_max_ram") == ((SMALL_BOUND,),)
        with pytest.raises(pymysql.err.OperationalError) as e:
            cur.execute("SET SESSION temptable_max_ram = 4194304")
        assert e.value.args[0] == 1229  # a GLOBAL variable
    conn.close()


@quill_only
@pytest.mark.parametrize("name", ["tmp_table_size", "sort_buffer_size", "max_heap_table_size"])
def test_mysqls_in_memory_thresholds_are_accepted_and_say_they_do_nothing(bounded, name):
    conn = bounded.connect()
    with conn.cursor() as cur:
        cur.execute(f"SET SESSION {name} = 33554432")
        cur.execute("SHOW WARNINGS")
        warnings = cur.fetchall()
        assert [w[1] for w in warnings] == [1287], warnings
        assert name in warnings[0][2]
        assert run(conn, f"SELECT @@SESSION.{name}") == ((33554432,),)
    conn.close()
