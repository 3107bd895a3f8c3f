"""SIGTERM stops the server promptly whatever its clients are doing.

Regression: a statement that ran on (a three-way cross join, a function building a huge
value) kept the server alive after SIGTERM until kill -9. Now shutdown kills every
connection as KILL CONNECTION does (statements stop, transactions roll back), waits a
bounded time for them, syncs the log and exits; what was committed is there after a restart,
what was not committed is not.
"""

import signal
import threading
import time

import pymysql
import pytest

from conftest import PrivateQuill, test_target

pytestmark = pytest.mark.skipif(test_target() != "quill", reason="stops its own server")

# SHUTDOWN_CONNECTIONS_WAIT in the server is 10 s; a prompt stop takes far less.
STOP_SECONDS_MAX = 8


def test_sigterm_stops_running_statements_and_keeps_commits(tmp_path):
    quill = PrivateQuill(tmp_path / "data").start()
    try:
        conn = quill.connect()
        with conn.cursor() as cur:
            cur.execute("CREATE DATABASE s")
            cur.execute("USE s")
            cur.execute("CREATE TABLE n (i INT PRIMARY KEY)")
            cur.executemany("INSERT INTO n VALUES (%s)", [(i,) for i in range(1000)])
            cur.execute("SET GLOBAL innodb_flush_log_at_trx_commit = 2")
            cur.execute("CREATE TABLE kept (id INT PRIMARY KEY)")
            cur.execute("INSERT INTO kept VALUES (1)")
        open_txn = quill.connect("s")
        with open_txn.cursor() as cur:
            cur.execute("BEGIN")
            cur.execute("INSERT INTO kept VALUES (2)")
        outcome = {}

        def run_long():
            long = quill.connect("s")
            try:
                with long.cursor() as cur:
                    cur.execute("SELECT COUNT(*) FROM n a, n b, n c")
                    outcome["rows"] = cur.fetchall()
            except pymysql.err.MySQLError as e:
                outcome["error"] = e

        runner = threading.Thread(target=run_long)
        runner.start()
        time.sleep(1.0)
        started = time.monotonic()
        quill.process.send_signal(signal.SIGTERM)
        quill.process.wait(timeout=30)
        stopped_s = time.monotonic() - started
        runner.join(timeout=10)
        assert stopped_s < STOP_SECONDS_MAX, f"took {stopped_s:.1f} s to stop"
        assert "rows" not in outcome, "the cross join was stopped, not finished"
        assert "shut down" in quill.log()
    finally:
        quill.stop()
    with PrivateQuill(tmp_path / "data") as again:
        conn = again.connect("s")
        with conn.cursor() as cur:
            cur.execute("SELECT id FROM kept ORDER BY id")
            assert cur.fetchall() == ((1,),), "the committed row stays, the uncommitted one is gone"
