"""Commit notifications (issue 14): WAIT_FOR_TABLE_COMMIT(table, position[, timeout]) wakes a
consumer, with no polling, once a transaction that wrote the table has committed durably past
the position it last saw, and tells it the new position.

What it shows: the position of a table no one wrote is answered at once; a commit of another
table, and a rolled-back one, wake nobody; a commit of the table wakes the waiter, which then
sees the row; a consumer that sleeps between its waits misses nothing (a commit made while it
slept is answered at once, not at the next commit) and a consumer started before its producer
sees every message once; a timeout and a KILL QUERY answer NULL and the connection goes on; an
unknown table is 1146; a woken consumer's row survives a kill -9 of the server right after.
These are Quill's own (MySQL has no such function): the module is skipped against MariaDB.
"""

import time

import pymysql
import pytest

from conftest import PrivateQuill, test_target
from sessions import all_rows, in_thread, one, wait_until

pytestmark = pytest.mark.skipif(test_target() != "quill", reason="WAIT_FOR_TABLE_COMMIT is Quill's own")


def waiting(conn, connection_id):
    return one(conn, "SELECT STATE FROM information_schema.PROCESSLIST WHERE ID = %s", (connection_id,)) == ("Waiting for table commit",)


@pytest.fixture
def tables(conn):
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE messages (id INT PRIMARY KEY AUTO_INCREMENT, message VARCHAR(20))")
        cur.execute("CREATE TABLE other (id INT PRIMARY KEY)")
    return one(conn, "SELECT DATABASE()")[0]


def test_a_commit_of_the_table_wakes_the_waiter_and_nothing_else_does(server, conn, tables):
    start = one(conn, "SELECT WAIT_FOR_TABLE_COMMIT('messages', 0, 0)")[0]
    assert start >= 1, "a table no one wrote has a position at once"
    assert one(conn, "SELECT WAIT_FOR_TABLE_COMMIT(%s, %s, 0)", (f"{tables}.messages", start)) == (None,)
    consumer, producer, watcher = server.connect(tables), server.connect(tables), server.connect()
    try:
        consumer_id = one(consumer, "SELECT CONNECTION_ID()")[0]
        got = in_thread(lambda: one(consumer, "SELECT WAIT_FOR_TABLE_COMMIT('messages', %s, 30)", (start,)))
        wait_until(lambda: waiting(watcher, consumer_id))
        producer.cursor().execute("INSERT INTO other VALUES (1)")
        producer.begin()
        producer.cursor().execute("INSERT INTO messages (message) VALUES ('rolled back')")
        producer.rollback()
        time.sleep(0.2)
        assert "value" not in got, "another table's commit and a rollback wake nobody"
        producer.cursor().execute("INSERT INTO messages (message) VALUES ('hi')")
        got["thread"].join(10)
        position = got.get("value", (None,))[0]
        assert position is not None and position > start, got
        assert all_rows(consumer, "SELECT message FROM messages") == (("hi",),), "the row is there once woken"
        # Nothing newer: the same position waits (and times out with NULL).
        started = time.monotonic()
        assert one(consumer, "SELECT WAIT_FOR_TABLE_COMMIT('messages', %s, 0.3)", (position,)) == (None,)
        assert time.monotonic() - started >= 0.25
        # An older position answers at once with the newest.
        assert one(consumer, "SELECT WAIT_FOR_TABLE_COMMIT('messages', %s, 30)", (start,)) == (position,)
    finally:
        for c in (consumer, producer, watcher):
            c.close()


def test_bad_input_and_kill(server, conn, tables):
    with pytest.raises(pymysql.MySQLError) as e:
        one(conn, "SELECT WAIT_FOR_TABLE_COMMIT('no_such_table', 0, 0)")
    assert e.value.args[0] == 1146
    with pytest.raises(pymysql.MySQLError) as e:
        one(conn, "SELECT WAIT_FOR_TABLE_COMMIT('messages')")
    assert e.value.args[0] == 1582
    position = one(conn, "SELECT WAIT_FOR_TABLE_COMMIT('messages', 0, 0)")[0]
    killer = server.connect()
    try:
        conn_id = one(conn, "SELECT CONNECTION_ID()")[0]
        got = in_thread(lambda: one(conn, "SELECT WAIT_FOR_TABLE_COMMIT('messages', %s)", (position,)))
        wait_until(lambda: waiting(killer, conn_id))
        one(killer, f"KILL QUERY {conn_id}")
        got["thread"].join(10)
        assert got.get("value") == (None,), got
        assert one(conn, "SELECT 1") == (1,)
    finally:
        killer.close()


def test_a_sleeping_consumer_misses_nothing_and_one_started_first_sees_every_message(server, conn, tables):
    """The weakness of GET_LOCK polling: a consumer that sleeps between polls misses a row
    until the next one arrives. Here a commit made while the consumer slept is answered at
    once by its next wait."""
    messages = 200
    seen = []

    def consumer():
        c = server.connect(tables)
        position, last, n = 0, 0, 0
        try:
            while len(seen) < messages:
                got = one(c, "SELECT WAIT_FOR_TABLE_COMMIT('messages', %s, 10)", (position,))[0]
                assert got is not None, f"no commit seen for 10 s after {len(seen)} messages"
                position = got
                for (mid,) in all_rows(c, "SELECT id FROM messages WHERE id > %s ORDER BY id", (last,)):
                    seen.append(mid)
                    last = mid
                n += 1
                if n % 7 == 0:
                    time.sleep(0.02)  # a consumer busy elsewhere
        finally:
            c.close()
        return n

    consuming = in_thread(consumer)  # started before the producer
    time.sleep(0.1)
    p = server.connect(tables)
    try:
        for i in range(messages):
            p.cursor().execute("INSERT INTO messages (message) VALUES (%s)", (f"m{i}",))
            if i % 50 == 0:
                time.sleep(0.05)
    finally:
        p.close()
    consuming["thread"].join(60)
    assert "error" not in consuming, consuming
    assert seen == list(range(1, messages + 1))
    assert consuming["value"] <= messages, "no wake-up without a commit"


def test_a_woken_consumer_reads_what_a_crash_keeps(tmp_path):
    """Even when commits do not wait for their sync (innodb_flush_log_at_trx_commit=0), the
    consumer is woken only once the commit is on disk: killed right after, the server still
    has the row."""
    with PrivateQuill(tmp_path / "q") as q:
        c = q.connect()
        with c.cursor() as cur:
            cur.execute("SET GLOBAL innodb_flush_log_at_trx_commit = 0")
            cur.execute("CREATE DATABASE d")
            cur.execute("CREATE TABLE d.jobs (id INT PRIMARY KEY, what VARCHAR(10))")
        position = one(c, "SELECT WAIT_FOR_TABLE_COMMIT('d.jobs', 0, 0)")[0]
        got = in_thread(lambda: one(c, "SELECT WAIT_FOR_TABLE_COMMIT('d.jobs', %s, 30)", (position,)))
        time.sleep(0.2)
        p = q.connect()
        p.cursor().execute("INSERT INTO d.jobs VALUES (1, 'durable')")
        got["thread"].join(10)
        assert got.get("value", (None,))[0] > position, got
        q.kill()
        q.start()
        assert all_rows(q.connect(), "SELECT * FROM d.jobs") == ((1, "durable"),)
        # The same commit with no one waiting may be lost: that is mode 0's promise.
