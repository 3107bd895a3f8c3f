"""The bulk write path (INSERT ... SELECT, multi-row INSERT, LOAD DATA): rows go through a
write buffer of `bulk_insert_buffer_size` bytes, counted in `Quill_bulk_buffer_flushes`, and
a bulk statement stays atomic, in its errors and across a crash.
"""

from __future__ import annotations

import threading
import time

import pymysql
import pytest

from conftest import PrivateQuill

COPY_ROWS = 20_000
# Rows of the crash test's source: enough that the copy takes a while.
CRASH_ROWS = 200_000
# Two buffer sizes, the second twice the first, both well below the copy's size.
SMALL_BUFFER = 64 * 1024
LOAD_BATCH_ROWS = 1000


def flushes(conn) -> int:
    with conn.cursor() as cur:
        cur.execute("SHOW GLOBAL STATUS LIKE 'Quill_bulk_buffer_flushes'")
        return int(cur.fetchone()[1])


def make_source(conn, rows: int) -> None:
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE src (id INT PRIMARY KEY, name VARCHAR(40), grp INT, KEY grp (grp))")
        for first in range(0, rows, LOAD_BATCH_ROWS):
            values = ",".join(f"({i}, 'name {i} {'x' * (i % 20)}', {i % 97})" for i in range(first, min(rows, first + LOAD_BATCH_ROWS)))
            cur.execute(f"INSERT INTO src VALUES {values}")
        cur.execute("CREATE TABLE dst LIKE src")


@pytest.fixture
def quill_only(server):
    if not server.is_quill:
        pytest.skip("Quill's own status counter")


def test_twice_the_buffer_half_the_flushes(quill_only, conn):
    make_source(conn, COPY_ROWS)
    counts = []
    with conn.cursor() as cur:
        for size in (SMALL_BUFFER, 2 * SMALL_BUFFER):
            cur.execute("TRUNCATE dst")
            cur.execute(f"SET SESSION bulk_insert_buffer_size = {size}")
            before = flushes(conn)
            cur.execute("INSERT INTO dst SELECT * FROM src")
            counts.append(flushes(conn) - before)
            cur.execute("CHECKSUM TABLE src, dst")
            (_, a), (_, b) = cur.fetchall()
            assert a == b
            # The secondary index, merged once per buffer, finds every row.
            cur.execute("SELECT COUNT(*), SUM(id) FROM dst WHERE grp = 5")
            cur2 = conn.cursor()
            cur2.execute("SELECT COUNT(*), SUM(id) FROM src IGNORE INDEX (grp) WHERE grp = 5")
            assert cur.fetchone() == cur2.fetchone()
        small, large = counts
        assert small > 4 and abs(small - 2 * large) <= 2, counts
        cur.execute("TRUNCATE dst")
        cur.execute("SET SESSION bulk_insert_buffer_size = 0")
        before = flushes(conn)
        cur.execute("INSERT INTO dst SELECT * FROM src")
        assert flushes(conn) == before, "0 writes row by row"
        cur.execute("SET SESSION bulk_insert_buffer_size = DEFAULT")


def test_a_duplicate_after_several_flushes_undoes_the_whole_statement(server, conn):
    make_source(conn, COPY_ROWS)
    with conn.cursor() as cur:
        cur.execute(f"SET SESSION bulk_insert_buffer_size = {SMALL_BUFFER}")
        cur.execute("INSERT INTO dst VALUES (15000, 'already here', 1)")
        with pytest.raises(pymysql.err.IntegrityError) as e:
            cur.execute("INSERT INTO dst SELECT * FROM src")
        assert e.value.args[0] == 1062 and "15000" in e.value.args[1]
        cur.execute("SELECT COUNT(*) FROM dst")
        assert cur.fetchone() == (1,)
        cur.execute("SELECT COUNT(*) FROM dst WHERE grp = 5")
        assert cur.fetchone() == (0,), "no index entry left behind"
        cur.execute("INSERT IGNORE INTO dst SELECT * FROM src")
        assert conn.affected_rows() == COPY_ROWS - 1
        cur.execute("SHOW WARNINGS")
        assert [w[1] for w in cur.fetchall()] == [1062]
        cur.execute("CHECKSUM TABLE dst")
        dst_sum = cur.fetchone()[1]
        cur.execute("UPDATE dst SET name = (SELECT name FROM src WHERE id = 15000), grp = 15000 % 97 WHERE id = 15000")
        cur.execute("CHECKSUM TABLE src, dst")
        (_, a), (_, b) = cur.fetchall()
        assert a == b != dst_sum


def test_ignore_warnings_keep_row_order_across_a_buffer(conn):
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, v TINYINT)")
        cur.execute("INSERT INTO t VALUES (2, 0)")
        cur.execute("INSERT IGNORE INTO t VALUES (1, 1), (2, 2), (3, 300), (2, 4), (5, 5)")
        assert conn.affected_rows() == 3
        cur.execute("SHOW WARNINGS")
        assert [w[1] for w in cur.fetchall()] == [1062, 1264, 1062]
        cur.execute("SELECT id, v FROM t ORDER BY id")
        assert cur.fetchall() == ((1, 1), (2, 0), (3, 127), (5, 5))


def test_a_crash_in_the_middle_of_a_bulk_copy_leaves_none_of_it(quill_only, tmp_path):
    with PrivateQuill(tmp_path / "data") as quill:
        setup = quill.connect()
        with setup.cursor() as cur:
            cur.execute("CREATE DATABASE b")
        setup.select_db("b")
        make_source(setup, CRASH_ROWS)
        started = flushes(setup)
        error: list[Exception] = []

        def copy():
            c = quill.connect("b")
            try:
                with c.cursor() as cur:
                    cur.execute(f"SET SESSION bulk_insert_buffer_size = {SMALL_BUFFER}")
                    cur.execute("INSERT INTO dst SELECT * FROM src")
            except Exception as e:  # noqa: BLE001 - the crash ends it; any error is expected
                error.append(e)

        thread = threading.Thread(target=copy, daemon=True)
        thread.start()
        deadline = time.monotonic() + 60
        while flushes(setup) < started + 3:
            assert time.monotonic() < deadline and thread.is_alive(), "the copy never flushed a buffer"
            time.sleep(0.01)
        quill.kill()
        thread.join(timeout=30)
        assert error, "the copy cannot have finished"

    with PrivateQuill(tmp_path / "data") as quill:
        c = quill.connect("b")
        with c.cursor() as cur:
            cur.execute("SELECT COUNT(*) FROM dst")
            assert cur.fetchone() == (0,)
            cur.execute("SELECT COUNT(*) FROM src")
            assert cur.fetchone() == (CRASH_ROWS,)
            cur.execute("INSERT INTO dst SELECT * FROM src")
            cur.execute("CHECKSUM TABLE src, dst")
            (_, a), (_, b) = cur.fetchall()
            assert a == b


def test_copied_rows_survive_a_crash_from_the_log_and_from_a_checkpoint(quill_only, tmp_path):
    """A whole-row copy logs its rows as the images it moved: a dynamic table's as they are,
    a fixed table's converted. Recovery rebuilds both, first from the log alone, then (after
    a checkpoint the small trigger takes) from the checkpoint."""
    fixed = "CREATE TABLE fixed (id INT PRIMARY KEY, name VARCHAR(40), grp INT, KEY grp (grp)) ROW_FORMAT=FIXED"

    def checksums(quill) -> tuple:
        c = quill.connect("b")
        with c.cursor() as cur:
            cur.execute("CHECKSUM TABLE src, dst, fixed")
            return tuple(row[1] for row in cur.fetchall())

    with PrivateQuill(tmp_path / "data") as quill:
        setup = quill.connect()
        with setup.cursor() as cur:
            cur.execute("CREATE DATABASE b")
        setup.select_db("b")
        make_source(setup, COPY_ROWS)
        with setup.cursor() as cur:
            cur.execute(fixed)
            cur.execute("INSERT INTO dst SELECT * FROM src")
            cur.execute("INSERT INTO fixed SELECT * FROM src")
        before = checksums(quill)
        assert before[0] == before[1] == before[2]
        quill.kill()
    with PrivateQuill(tmp_path / "data", "--quill-checkpoint-log-bytes=65536") as quill:
        assert checksums(quill) == before
        c = quill.connect("b")
        with c.cursor() as cur:
            # A write that makes the log grow past the trigger: a checkpoint follows.
            cur.execute("UPDATE src SET grp = grp WHERE id < 10")
            cur.execute("INSERT INTO src SELECT id + 1000000, name, grp FROM src WHERE id < 2000")
            deadline = time.monotonic() + 30
            while True:
                cur.execute("SHOW GLOBAL STATUS LIKE 'Quill_checkpoints'")
                if int(cur.fetchone()[1]) > 0:
                    break
                assert time.monotonic() < deadline, "no checkpoint was taken"
                time.sleep(0.1)
        after = checksums(quill)
        quill.kill()
    with PrivateQuill(tmp_path / "data") as quill:
        assert checksums(quill) == after
        assert "recovery: loaded the checkpoint" in quill.log()
