"""Results stream to the client as they are produced.

A plain SELECT sends its rows while it runs, so the server's memory does not grow with the
size of a result; a client that stops reading holds the statement at the socket, one that
goes away ends it, and an error after some rows (here `max_execution_time`) reaches the
client after them, as MySQL sends it. Each test runs its own server so its memory can be
measured.
"""

import time

import pymysql
import pymysql.cursors
import pytest

from conftest import PrivateQuill, test_target

pytestmark = pytest.mark.skipif(test_target() != "quill", reason="measures the quill process")

ROWS = 200_000
ROW_TEXT = 1000


def rss_bytes(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


@pytest.fixture(scope="module")
def quill(tmp_path_factory):
    with PrivateQuill(tmp_path_factory.mktemp("results") / "data") as server:
        conn = server.connect()
        with conn.cursor() as cur:
            cur.execute("CREATE DATABASE r")
            cur.execute("USE r")
            cur.execute("CREATE TABLE nums (n INT PRIMARY KEY)")
            cur.executemany("INSERT INTO nums VALUES (%s)", [(n,) for n in range(1000)])
            cur.execute("CREATE TABLE big (id INT PRIMARY KEY, s VARCHAR(1000))")
            cur.execute(f"INSERT INTO big SELECT a.n * 1000 + b.n, REPEAT('x', {ROW_TEXT}) FROM nums a, nums b WHERE a.n < {ROWS // 1000}")
        conn.close()
        yield server


def test_a_large_result_streams_with_bounded_server_memory(quill):
    pid = quill.process.pid
    conn = quill.connect("r", cursorclass=pymysql.cursors.SSCursor)
    with conn.cursor() as cur:
        before = rss_bytes(pid)
        cur.execute("SELECT id, s FROM big")
        first = cur.fetchmany(1000)
        # The client stops reading: the server fills the socket and waits there.
        time.sleep(1.0)
        during = rss_bytes(pid)
        count, total = len(first), sum(r[0] for r in first)
        for row in cur:
            count += 1
            total += row[0]
        after = rss_bytes(pid)
    assert count == ROWS and total == sum(range(ROWS))
    result_bytes = ROWS * (ROW_TEXT + 10)
    # Built whole, the result costs several times its size; streamed, a buffer.
    assert max(during, after) - before < result_bytes // 4, f"RSS grew {(max(during, after) - before) >> 20} MiB for a {result_bytes >> 20} MiB result"
    with conn.cursor() as cur:
        cur.execute("SELECT FOUND_ROWS()")
        assert cur.fetchone() == (ROWS,)


# Statements of a bulk load: more than the session's parsed-statement cache holds.
LOAD_STATEMENTS = 300
LOAD_STATEMENT_ROWS = 1000


def test_a_bulk_load_of_distinct_statements_does_not_pile_up_their_parses(quill):
    """A dump's multi-row INSERTs are each sent once: keeping their parse trees (many times
    their text) cost about 2.9 KB per loaded row here; without them the load grows the
    server by 300-530 bytes per row (the rows themselves, and what the allocator keeps).
    The bound, 1000, is between with room for noise."""
    pid = quill.process.pid
    conn = quill.connect("r")
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE wide (id INT PRIMARY KEY, a INT, b INT, c INT, d INT, e INT, f INT, g INT)")
        before = rss_bytes(pid)
        for n in range(LOAD_STATEMENTS):
            first = n * LOAD_STATEMENT_ROWS
            values = ",".join(f"({i},{i},{i},{i},{i},{i},{i},{i})" for i in range(first, first + LOAD_STATEMENT_ROWS))
            cur.execute(f"INSERT INTO wide VALUES {values}")
        grown = rss_bytes(pid) - before
        cur.execute("SELECT COUNT(*) FROM wide")
        assert cur.fetchone() == (LOAD_STATEMENTS * LOAD_STATEMENT_ROWS,)
        cur.execute("DROP TABLE wide")
    rows = LOAD_STATEMENTS * LOAD_STATEMENT_ROWS
    assert grown / rows < 1000, f"RSS grew {grown / rows:.0f} bytes per loaded row"


def test_a_client_that_leaves_mid_result_ends_only_its_own_connection(quill):
    conn = quill.connect("r", cursorclass=pymysql.cursors.SSCursor)
    cur = conn.cursor()
    cur.execute("SELECT id, s FROM big")
    assert len(cur.fetchmany(10)) == 10
    thread_id = conn.thread_id()
    # Gone, as a process that exits is, without reading the rest or saying goodbye: its
    # socket is closed for real (PyMySQL's reader holds the descriptor open until it too
    # is closed), so the kernel resets the connection. A shutdown() alone leaves a socket
    # whose full receive window stalls the server's write until net_write_timeout.
    conn._rfile.close()
    conn._sock.close()
    conn._result.unbuffered_active = False  # nothing left for PyMySQL to drain
    other = quill.connect("r")
    with other.cursor() as c:
        deadline = time.time() + 30
        while True:
            c.execute("SHOW PROCESSLIST")
            if all(row[0] != thread_id for row in c.fetchall()):
                break
            assert time.time() < deadline, "the abandoned connection was not closed"
            time.sleep(0.1)
        c.execute("SELECT COUNT(*) FROM big")
        assert c.fetchone() == (ROWS,)


def test_an_error_after_rows_were_sent_follows_them(quill):
    conn = quill.connect("r", cursorclass=pymysql.cursors.SSCursor)
    with conn.cursor() as cur:
        cur.execute("SET SESSION max_execution_time = 300")
        # 200 million joined rows: far more than 300 ms of work, sent as they come.
        cur.execute("SELECT a.id, b.n FROM big a, nums b")
        got = 0
        with pytest.raises(pymysql.err.OperationalError) as error:
            for _ in cur:
                got += 1
        assert error.value.args[0] == 3024, error.value
        assert got > 0, "rows came before the error"
    with conn.cursor() as cur:
        cur.execute("SELECT 1")
        assert cur.fetchone() == (1,)


def test_a_large_prepared_result_streams_in_the_binary_protocol(quill):
    import mysql.connector

    conn = mysql.connector.connect(host=quill.host, port=quill.port, user="root", password="", database="r")
    cur = conn.cursor(prepared=True)
    # Many flushes of the binary row encoding, a parameter, and every value back intact.
    cur.execute("SELECT id, s, id * 2 FROM big WHERE id >= ?", (1000,))
    count = 0
    for id_, s, double in cur:
        assert (len(s), double) == (ROW_TEXT, id_ * 2)
        count += 1
    assert count == ROWS - 1000
    conn.close()
