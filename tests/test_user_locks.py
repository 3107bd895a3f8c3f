"""User-level locks (issue 14): GET_LOCK, RELEASE_LOCK, RELEASE_ALL_LOCKS, IS_FREE_LOCK,
IS_USED_LOCK and SLEEP through PyMySQL, as an application uses them.

What it shows: MySQL 8's answers (re-entrant counts, names without case, 1 / 0 / NULL from
RELEASE_LOCK, 3057 and 4163 for bad names); a wait that ends when the holder releases, and one
that times out; grants in arrival order; release on disconnect (a clean close and a client that
vanishes) and on KILL; KILL QUERY of a waiting GET_LOCK; 3058 for a cycle of waits; the
waiter shown as `User lock` in PROCESSLIST and in performance_schema.metadata_locks; a
statement that waited runs its other calls once, not twice; the producer/consumer program of
the issue, with the consumer started first.
"""

import socket
import threading
import time

import mysql.connector
import pymysql
import pytest

from sessions import all_rows, in_thread, one, wait_until


def waiting_for_user_lock(conn, connection_id):
    row = one(conn, "SELECT STATE FROM information_schema.PROCESSLIST WHERE ID = %s", (connection_id,))
    # MySQL 8's state; MariaDB 10.11 says "Waiting for user lock".
    return row is not None and row[0] in ("User lock", "Waiting for user lock")


def test_counts_names_and_answers(server):
    a, b = server.connect(), server.connect()
    try:
        assert one(a, "SELECT GET_LOCK('jobs', 0), GET_LOCK('jobs', 1), GET_LOCK(%s, 0)", ("é" * 64,)) == (1, 1, 1)
        a_id = one(a, "SELECT CONNECTION_ID()")[0]
        assert one(b, "SELECT IS_USED_LOCK('jobs'), IS_FREE_LOCK('jobs'), IS_FREE_LOCK('other'), IS_USED_LOCK('other')") == (a_id, 0, 1, None)
        assert one(b, "SELECT GET_LOCK('jobs', 0), RELEASE_LOCK('jobs'), RELEASE_LOCK('nobody')") == (0, 0, None)
        assert one(a, "SELECT RELEASE_LOCK('jobs')") == (1,)
        assert one(b, "SELECT IS_USED_LOCK('jobs')") == (a_id,), "held twice, released once"
        assert one(a, "SELECT RELEASE_ALL_LOCKS()") == (2,), "one more of 'jobs' and the long name"
        assert one(a, "SELECT RELEASE_ALL_LOCKS(), RELEASE_LOCK('jobs')") == (0, None)
        assert one(b, "SELECT IS_FREE_LOCK('jobs')") == (1,)
        # Calls run left to right, each seeing the one before.
        assert one(a, "SELECT GET_LOCK('t', 0), RELEASE_LOCK('t'), GET_LOCK('t', 0), RELEASE_ALL_LOCKS()") == (1, 1, 1, 1)
        # Locks belong to the connection, not the transaction.
        a.begin()
        assert one(a, "SELECT GET_LOCK('tx', 0)") == (1,)
        a.rollback()
        assert one(b, "SELECT IS_USED_LOCK('tx')") == (a_id,)
    finally:
        a.close()
        b.close()


@pytest.mark.mysql8_only
def test_bad_names_get_mysql8_errors(server):
    c = server.connect()
    try:
        for sql, code in [
            ("SELECT GET_LOCK(NULL, 0)", 3057),
            ("SELECT GET_LOCK('', 0)", 3057),
            ("SELECT RELEASE_LOCK('')", 3057),
            ("SELECT IS_FREE_LOCK(NULL)", 3057),
            ("SELECT IS_USED_LOCK(REPEAT('a', 65))", 4163),
            (f"SELECT GET_LOCK('{'a' * 65}', 0)", 4163),
            ("SELECT GET_LOCK('a')", 1582),
        ]:
            with pytest.raises(pymysql.MySQLError) as e:
                one(c, sql)
            assert e.value.args[0] == code, (sql, e.value.args)
        assert one(c, "SELECT 1") == (1,), "the connection survives"
        # Names are compared without case; a NULL timeout waits no time.
        other = server.connect()
        try:
            assert one(c, "SELECT GET_LOCK('Mixed', 0)") == (1,)
            assert one(other, "SELECT IS_FREE_LOCK('mIXED'), GET_LOCK('MIXED', NULL)") == (0, 0)
            # A negative timeout waits for ever (MySQL 5.7+).
            other_id = one(other, "SELECT CONNECTION_ID()")[0]
            got = in_thread(lambda: one(other, "SELECT GET_LOCK('mixed', -1)"))
            wait_until(lambda: waiting_for_user_lock(c, other_id))
            time.sleep(0.2)
            assert "value" not in got
            assert one(c, "SELECT RELEASE_LOCK('mixed')") == (1,)
            got["thread"].join(10)
            assert got.get("value") == (1,), got
        finally:
            other.close()
    finally:
        c.close()


def test_a_wait_ends_when_the_holder_releases_or_when_it_times_out(server):
    holder, waiter = server.connect(), server.connect()
    try:
        assert one(holder, "SELECT GET_LOCK('w', 0)") == (1,)
        started = time.monotonic()
        assert one(waiter, "SELECT GET_LOCK('w', 0.3)") == (0,)
        assert time.monotonic() - started >= 0.25
        waiter_id = one(waiter, "SELECT CONNECTION_ID()")[0]
        got = in_thread(lambda: one(waiter, "SELECT GET_LOCK('w', 30), IS_USED_LOCK('w') = CONNECTION_ID()"))
        wait_until(lambda: waiting_for_user_lock(holder, waiter_id))
        rows = set() if server.target == "mariadb" else set(all_rows(holder, "SELECT OBJECT_TYPE, OBJECT_NAME, LOCK_TYPE, LOCK_DURATION, LOCK_STATUS, OWNER_THREAD_ID "
                                   "FROM performance_schema.metadata_locks WHERE OBJECT_TYPE = 'USER LEVEL LOCK'"))
        holder_id = one(holder, "SELECT CONNECTION_ID()")[0]
        if server.target != "mariadb":  # MariaDB's performance_schema is off by default
            assert ("USER LEVEL LOCK", "w", "EXCLUSIVE", "EXPLICIT", "GRANTED", holder_id) in rows
            assert ("USER LEVEL LOCK", "w", "EXCLUSIVE", "EXPLICIT", "PENDING", waiter_id) in rows
        assert one(holder, "SELECT RELEASE_LOCK('w')") == (1,)
        got["thread"].join(10)
        assert got.get("value") == (1, 1), got
        assert one(waiter, "SELECT RELEASE_LOCK('w')") == (1,)
    finally:
        holder.close()
        waiter.close()


def test_grants_go_in_arrival_order(server):
    holder = server.connect()
    waiters = [server.connect() for _ in range(4)]
    order = []
    lock = threading.Lock()
    try:
        assert one(holder, "SELECT GET_LOCK('fifo', 0)") == (1,)
        threads = []
        for n, w in enumerate(waiters):
            w_id = one(w, "SELECT CONNECTION_ID()")[0]

            def take(w=w, n=n):
                one(w, "SELECT GET_LOCK('fifo', 30)")
                with lock:
                    order.append(n)
                one(w, "SELECT RELEASE_LOCK('fifo')")

            threads.append(in_thread(take))
            # Each queues before the next asks.
            wait_until(lambda w_id=w_id: waiting_for_user_lock(holder, w_id))
        # A newcomer asking without waiting does not jump the queue.
        assert one(holder, "SELECT RELEASE_LOCK('fifo')") == (1,)
        for t in threads:
            t["thread"].join(30)
        assert order == [0, 1, 2, 3]
    finally:
        holder.close()
        for w in waiters:
            w.close()


def test_locks_go_with_the_connection_on_close_on_a_vanished_client_and_on_kill(server):
    watcher = server.connect()
    try:
        closing = server.connect()
        assert one(closing, "SELECT GET_LOCK('c1', 0), GET_LOCK('c1', 0), GET_LOCK('c2', 0)") == (1, 1, 1)
        closing.close()
        wait_until(lambda: one(watcher, "SELECT IS_FREE_LOCK('c1') AND IS_FREE_LOCK('c2')") == (1,))

        # A client that vanishes without COM_QUIT.
        vanishing = server.connect()
        assert one(vanishing, "SELECT GET_LOCK('v', 0)") == (1,)
        vanishing._sock.shutdown(socket.SHUT_RDWR)
        vanishing._sock.close()
        wait_until(lambda: one(watcher, "SELECT IS_FREE_LOCK('v')") == (1,))

        # KILL of the holder frees the lock for its waiter.
        held, waiter = server.connect(), server.connect()
        assert one(held, "SELECT GET_LOCK('k', 0)") == (1,)
        held_id = one(held, "SELECT CONNECTION_ID()")[0]
        waiter_id = one(waiter, "SELECT CONNECTION_ID()")[0]
        got = in_thread(lambda: one(waiter, "SELECT GET_LOCK('k', 30)"))
        wait_until(lambda: waiting_for_user_lock(watcher, waiter_id))
        one(watcher, f"KILL {held_id}")
        got["thread"].join(10)
        assert got.get("value") == (1,), got
        waiter.close()
    finally:
        watcher.close()


def test_kill_query_stops_a_waiting_get_lock_and_the_connection_goes_on(server):
    holder, waiter, killer = server.connect(), server.connect(), server.connect()
    try:
        assert one(holder, "SELECT GET_LOCK('q', 0)") == (1,)
        waiter_id = one(waiter, "SELECT CONNECTION_ID()")[0]
        got = in_thread(lambda: one(waiter, "SELECT GET_LOCK('q', 60)"))
        wait_until(lambda: waiting_for_user_lock(killer, waiter_id))
        one(killer, f"KILL QUERY {waiter_id}")
        got["thread"].join(10)
        assert got.get("value") == (None,), "GET_LOCK answers NULL, as MySQL's"
        assert one(waiter, "SELECT IS_USED_LOCK('q') = CONNECTION_ID()") == (0,)
        assert one(holder, "SELECT RELEASE_LOCK('q')") == (1,)
        assert one(killer, "SELECT IS_FREE_LOCK('q')") == (1,), "the killed request is not granted later"
        # SLEEP interrupted by KILL QUERY answers 1.
        got = in_thread(lambda: one(waiter, "SELECT SLEEP(60)"))
        wait_until(lambda: one(killer, "SELECT STATE FROM information_schema.PROCESSLIST WHERE ID = %s", (waiter_id,)) == ("User sleep",))
        one(killer, f"KILL QUERY {waiter_id}")
        got["thread"].join(10)
        if server.target == "mariadb":
            # MariaDB answers 1 or 1317, as the KILL lands.
            assert got.get("value") == (1,) or getattr(got.get("error"), "args", [None])[0] == 1317, got
        else:
            assert got.get("value") == (1,), "SLEEP alone in its statement answers 1, as MySQL's"
        assert one(waiter, "SELECT SLEEP(0.05)") == (0,)
    finally:
        for c in (holder, waiter, killer):
            c.close()


def test_a_cycle_of_waits_is_refused_with_3058(server):
    a, b = server.connect(), server.connect()
    try:
        assert one(a, "SELECT GET_LOCK('first', 0)") == (1,)
        assert one(b, "SELECT GET_LOCK('second', 0)") == (1,)
        a_id = one(a, "SELECT CONNECTION_ID()")[0]
        got = in_thread(lambda: one(a, "SELECT GET_LOCK('second', 30)"))
        wait_until(lambda: waiting_for_user_lock(b, a_id))
        with pytest.raises(pymysql.MySQLError) as e:
            one(b, "SELECT GET_LOCK('first', 30)")
        # MySQL 8's ER_USER_LOCK_DEADLOCK; MariaDB answers its ER_LOCK_DEADLOCK.
        assert e.value.args[0] == (1213 if server.target == "mariadb" else 3058)
        # The victim keeps what it held; releasing it lets the other go on.
        assert one(b, "SELECT IS_USED_LOCK('second') = CONNECTION_ID()") == (1,)
        assert one(b, "SELECT RELEASE_LOCK('second')") == (1,)
        got["thread"].join(10)
        assert got.get("value") == (1,), got
    finally:
        a.close()
        b.close()


def test_a_statement_that_waited_acts_once(server, conn):
    """The statement runs again after the wait: its earlier lock calls and its writes are
    not done twice."""
    holder = server.connect()
    try:
        with conn.cursor() as cur:
            cur.execute("CREATE TABLE log (id INT PRIMARY KEY AUTO_INCREMENT, got INT, released INT)")
        assert one(conn, "SELECT GET_LOCK('mine', 0), GET_LOCK('mine', 0)") == (1, 1)
        assert one(holder, "SELECT GET_LOCK('theirs', 0)") == (1,)
        conn_id = one(conn, "SELECT CONNECTION_ID()")[0]
        got = in_thread(lambda: one(conn, "SELECT RELEASE_LOCK('mine'), GET_LOCK('theirs', 30)"))
        wait_until(lambda: waiting_for_user_lock(holder, conn_id))
        one(holder, "SELECT RELEASE_LOCK('theirs')")
        got["thread"].join(10)
        assert got.get("value") == (1, 1), got
        assert one(conn, "SELECT IS_USED_LOCK('mine') = CONNECTION_ID()") == (1,), "released once, still held once"
        assert one(conn, "SELECT RELEASE_LOCK('mine'), RELEASE_LOCK('mine')") == (1, None)

        # An INSERT whose value waits inserts one row.
        assert one(holder, "SELECT GET_LOCK('row', 0)") == (1,)
        got = in_thread(lambda: conn.cursor().execute("INSERT INTO log (got, released) VALUES (GET_LOCK('row', 30), RELEASE_ALL_LOCKS())"))
        wait_until(lambda: waiting_for_user_lock(holder, conn_id))
        one(holder, "SELECT RELEASE_LOCK('row')")
        got["thread"].join(10)
        assert got.get("value") == 1, got
        assert all_rows(conn, "SELECT got, released FROM log") == ((1, 2),), "the lock it waited for and 'theirs'"
    finally:
        holder.close()


def test_producer_and_consumer_with_the_consumer_started_first(server, conn):
    """The issue's program: a consumer polling in a tight loop under the lock, started
    before the producer, does not lock the producer out (grants go in arrival order), and
    reads every message once."""
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE messages (id INT PRIMARY KEY AUTO_INCREMENT, message VARCHAR(20))")
    db = one(conn, "SELECT DATABASE()")[0]
    messages = 100
    seen = []
    stop = threading.Event()

    def consumer():
        c = server.connect(db)
        last = 0
        try:
            while len(seen) < messages and not stop.is_set():
                assert one(c, "SELECT GET_LOCK('messages', 10)") == (1,)
                for (mid, _) in all_rows(c, "SELECT id, message FROM messages WHERE id > %s ORDER BY id", (last,)):
                    seen.append(mid)
                    last = mid
                assert one(c, "SELECT RELEASE_LOCK('messages')") == (1,)
        finally:
            c.close()

    def producer():
        p = server.connect(db)
        try:
            for _ in range(messages):
                assert one(p, "SELECT GET_LOCK('messages', 10)") == (1,)
                p.cursor().execute("INSERT INTO messages (message) VALUES ('hi')")
                assert one(p, "SELECT RELEASE_LOCK('messages')") == (1,)
        finally:
            p.close()

    consuming = in_thread(consumer)
    time.sleep(0.1)
    started = time.monotonic()
    producing = in_thread(producer)
    producing["thread"].join(60)
    consuming["thread"].join(30)
    stop.set()
    assert "error" not in producing and "error" not in consuming, (producing, consuming)
    assert seen == list(range(1, messages + 1))
    print(f"100 messages through GET_LOCK with the consumer started first: {time.monotonic() - started:.2f} s")


def test_a_set_that_waits_and_a_reset_connection(server):
    """`SET @v = GET_LOCK(...)` waits like a SELECT (and takes the lock once); a connection reset
    (COM_RESET_CONNECTION, as pools send it) releases its user-level locks, as MySQL's does."""
    holder, waiter = server.connect(), server.connect()
    try:
        assert one(holder, "SELECT GET_LOCK('set_lock', 0)") == (1,)
        waiter_id = one(waiter, "SELECT CONNECTION_ID()")[0]
        got = in_thread(lambda: waiter.cursor().execute("SET @got = GET_LOCK('set_lock', 30), @n = 1"))
        wait_until(lambda: waiting_for_user_lock(holder, waiter_id))
        assert one(holder, "SELECT RELEASE_LOCK('set_lock')") == (1,)
        got["thread"].join(10)
        assert "error" not in got, got
        assert one(waiter, "SELECT @got, @n, IS_USED_LOCK('set_lock') = CONNECTION_ID()") == (1, 1, 1)
        assert one(waiter, "SELECT RELEASE_LOCK('set_lock'), RELEASE_LOCK('set_lock')") == (1, None), "taken once"
    finally:
        holder.close()
        waiter.close()

    cnx = mysql.connector.connect(host=server.host, port=server.port, user=server.user, password=server.password)
    watcher = server.connect()
    try:
        cur = cnx.cursor()
        cur.execute("SELECT GET_LOCK('pooled', 0)")
        assert cur.fetchall() == [(1,)]
        assert one(watcher, "SELECT IS_FREE_LOCK('pooled')") == (0,)
        cnx.cmd_reset_connection()
        assert one(watcher, "SELECT IS_FREE_LOCK('pooled')") == (1,)
    finally:
        cnx.close()
        watcher.close()


@pytest.mark.mysql8_only
def test_a_statement_that_reads_other_rows_after_its_wait_fails_and_gives_its_locks_back(server, conn):
    """The job-queue pattern: one lock per row read. If the rows change while the statement
    waits, its run again would call GET_LOCK for other names than the first run did: it fails
    (1105, run it again) rather than answer for locks it did not take, and gives back those it
    took."""
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE jobs (id INT PRIMARY KEY, state VARCHAR(10))")
        cur.execute("INSERT INTO jobs VALUES (1, 'new'), (2, 'new'), (3, 'new')")
    db = one(conn, "SELECT DATABASE()")[0]
    holder, other = server.connect(db), server.connect(db)
    try:
        assert one(holder, "SELECT GET_LOCK('job2', 0)") == (1,)
        conn_id = one(conn, "SELECT CONNECTION_ID()")[0]
        sql = "SELECT id, GET_LOCK(CONCAT('job', id), 30) FROM jobs WHERE state = 'new' ORDER BY id"
        got = in_thread(lambda: all_rows(conn, sql))
        wait_until(lambda: waiting_for_user_lock(holder, conn_id))
        other.cursor().execute("UPDATE jobs SET state = 'done' WHERE id = 1")
        assert one(holder, "SELECT RELEASE_LOCK('job2')") == (1,)
        got["thread"].join(10)
        assert getattr(got.get("error"), "args", [None])[0] == 1105, got
        assert one(other, "SELECT IS_FREE_LOCK('job1'), IS_FREE_LOCK('job2'), IS_FREE_LOCK('job3')") == (1, 1, 1)
        # Run again, it takes the rows it reads now.
        assert all_rows(conn, sql) == ((2, 1), (3, 1))
        assert one(conn, "SELECT RELEASE_ALL_LOCKS()") == (2,)
    finally:
        holder.close()
        other.close()
