"""Large transactions stream into the commit log before they commit.

A transaction whose changes outgrow one log record (256 MiB) commits, because its changes
go to the log in part records ahead of its commit record. A crash before the commit record
leaves none of it, a crash after leaves all of it, and a checkpoint taken while it streams
does not cut its parts out of the log. Each test starts the real server on its own data
directory and kills it with SIGKILL.
"""

import pymysql
import pytest

from conftest import test_target
from test_crash_recovery import Server

pytestmark = pytest.mark.skipif(test_target() != "quill", reason="kills and restarts the quill binary")

MIB = 1 << 20


def status(cur, name):
    cur.execute("SHOW GLOBAL STATUS LIKE %s", (name,))
    return int(cur.fetchone()[1])


def numbers(cur, count):
    cur.execute("CREATE TABLE nums (n INT PRIMARY KEY)")
    cur.executemany("INSERT INTO nums VALUES (%s)", [(n,) for n in range(count)])


@pytest.fixture
def datadir(tmp_path):
    path = tmp_path / "data"
    yield path


def after_sigkill(server):
    """Kills the server with SIGKILL, starts it again on its data directory, and connects."""
    server.kill()
    server.start()
    return server.connect()


def setup(server):
    conn = server.connect(database=None)
    with conn.cursor() as cur:
        cur.execute("CREATE DATABASE crash")
        cur.execute("USE crash")
    return conn


def test_a_transaction_larger_than_a_log_record_commits_and_survives_a_crash(datadir):
    with Server(datadir, 1) as server:
        conn = setup(server)
        with conn.cursor() as cur:
            numbers(cur, 300)
            cur.execute("CREATE TABLE big (id INT PRIMARY KEY, b LONGBLOB)")
            parts_before = status(cur, "Quill_log_stream_parts")
            # 300 rows of 1 MiB: more than the 256 MiB one record may hold.
            cur.execute("INSERT INTO big SELECT n, REPEAT(SUBSTRING('ABCDEFGHIJKLMNOPQRSTUVWXYZ', n % 26 + 1, 1), 1048576) FROM nums")
            assert cur.rowcount == 300
            assert status(cur, "Quill_log_stream_parts") - parts_before >= 30, "the changes went to the log in parts"
            assert status(cur, "Binlog_cache_disk_use") >= 1
        conn = after_sigkill(server)
        with conn.cursor() as cur:
            cur.execute("SELECT COUNT(*), SUM(LENGTH(b)), SUM(LEFT(b, 1) = SUBSTRING('ABCDEFGHIJKLMNOPQRSTUVWXYZ', id % 26 + 1, 1)) FROM big")
            assert cur.fetchone() == (300, 300 * MIB, 300)


def test_a_stream_killed_before_its_commit_leaves_nothing_and_others_commits_stay(datadir):
    with Server(datadir, 1) as server:
        conn = setup(server)
        with conn.cursor() as cur:
            numbers(cur, 40_000)
            cur.execute("CREATE TABLE copy (n INT PRIMARY KEY, s VARCHAR(40), KEY by_s (s))")
            cur.execute("CREATE TABLE other (id INT PRIMARY KEY)")
            cur.execute("INSERT INTO copy VALUES (-1, 'committed before')")
            parts_before = status(cur, "Quill_log_stream_parts")
            cur.execute("BEGIN")
            cur.execute("INSERT INTO copy SELECT n, CONCAT('row ', n) FROM nums")
            cur.execute("UPDATE copy SET s = 'changed' WHERE n < 100")
            cur.execute("DELETE FROM copy WHERE n = -1")
            # More than 8,192 row writes at a statement's end: they are in the log already.
            assert status(cur, "Quill_log_stream_parts") > parts_before
            other = server.connect()
            with other.cursor() as cur2:
                # Commits of other transactions go on between the stream's parts.
                for i in range(50):
                    cur2.execute("INSERT INTO other VALUES (%s)", (i,))
            cur.execute("INSERT INTO copy SELECT n + 100000, 'more' FROM nums WHERE n < 20000")
        conn = after_sigkill(server)
        with conn.cursor() as cur:
            cur.execute("SELECT n, s FROM copy")
            assert cur.fetchall() == ((-1, "committed before"),), "nothing of the uncommitted stream"
            cur.execute("SELECT COUNT(*) FROM copy WHERE s = 'committed before'")
            assert cur.fetchone() == (1,), "the secondary index agrees"
            cur.execute("SELECT COUNT(*) FROM other")
            assert cur.fetchone() == (50,)


def test_a_rolled_back_stream_leaves_nothing_and_a_committed_one_everything(datadir):
    with Server(datadir, 1) as server:
        conn = setup(server)
        with conn.cursor() as cur:
            numbers(cur, 20_000)
            cur.execute("CREATE TABLE t (n INT PRIMARY KEY, v INT)")
            cur.execute("BEGIN")
            cur.execute("INSERT INTO t SELECT n, n FROM nums")
            cur.execute("ROLLBACK")
            cur.execute("BEGIN")
            cur.execute("INSERT INTO t SELECT n, n FROM nums")
            # Rows of the first part written again: the later image wins on replay.
            cur.execute("UPDATE t SET v = -n WHERE n % 2 = 0")
            cur.execute("DELETE FROM t WHERE n % 3 = 0")
            # A failed statement in the streamed transaction is undone alone.
            with pytest.raises(pymysql.err.IntegrityError):
                cur.execute("INSERT INTO t SELECT n + 1, 0 FROM nums")
            cur.execute("COMMIT")
            cur.execute("SELECT COUNT(*), SUM(v) FROM t")
            expected = cur.fetchone()
        conn = after_sigkill(server)
        with conn.cursor() as cur:
            cur.execute("SELECT COUNT(*), SUM(v) FROM t")
            assert cur.fetchone() == expected
            cur.execute("SELECT COUNT(*) FROM t WHERE n % 3 = 0")
            assert cur.fetchone() == (0,)


def test_a_checkpoint_during_a_stream_keeps_its_parts_for_recovery(datadir):
    with Server(datadir, 1) as server:
        conn = setup(server)
        with conn.cursor() as cur:
            numbers(cur, 30_000)
            cur.execute("CREATE TABLE t (n INT PRIMARY KEY, s VARCHAR(40))")
            cur.execute("CREATE TABLE other (id INT PRIMARY KEY)")
            cur.execute("BEGIN")
            cur.execute("INSERT INTO t SELECT n, CONCAT('row ', n) FROM nums")
            other = server.connect()
            with other.cursor() as cur2:
                checkpoints = status(cur2, "Quill_checkpoints")
                # The server's checkpoint trigger is 64 KiB of log: commits elsewhere bring
                # checkpoints whose position is past the stream's first part.
                i = 0
                while status(cur2, "Quill_checkpoints") < checkpoints + 2:
                    cur2.execute("INSERT INTO other VALUES (%s)", (i,))
                    i += 1
                    assert i < 100_000, "no checkpoint ran"
            cur.execute("COMMIT")
        conn = after_sigkill(server)
        with conn.cursor() as cur:
            cur.execute("SELECT COUNT(*), MIN(s), MAX(n) FROM t")
            assert cur.fetchone() == (30_000, "row 0", 29_999)
            cur.execute("SELECT COUNT(*) FROM other")
            assert cur.fetchone() == (i,)
            # The checkpoint taken before the commit is the one recovery started from.
            assert status(cur, "Quill_checkpoint_lsn") > 0
