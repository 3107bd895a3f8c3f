"""Row locks through real clients: concurrent increments from separate processes, a
SKIP LOCKED job queue, lock waits and their limits (1205, KILL, disconnects), deadlocks,
the lock counters and tables, read-only transactions and the isolation variables.

Scenarios of two or three interleaved sessions at every level are in
tests/test_isolation.py; this file is about many statements, many processes, and what a
user observes around a wait."""

from __future__ import annotations

import multiprocessing
import socket
import threading
import time

import pymysql
import pymysql.constants.SERVER_STATUS
import pytest

from conftest import test_target
from test_crash_recovery import Server

INCREMENTS = 1000
LOST_UPDATE_ROUNDS = 100
JOBS = 300
WORKERS = 4
WAIT_SEEN_TIMEOUT_S = 10


def connect(host, port, db):
    return pymysql.connect(host=host, port=port, user="root", password="", database=db, autocommit=True)


def increment_for_update(host, port, db, n):
    c = connect(host, port, db)
    with c.cursor() as cur:
        for _ in range(n):
            cur.execute("begin")
            cur.execute("select c from counter where id = 1 for update")
            (value,) = cur.fetchone()
            cur.execute("update counter set c = %s where id = 1", (value + 1,))
            cur.execute("commit")
    c.close()


def increment_in_place(host, port, db, n):
    c = connect(host, port, db)
    with c.cursor() as cur:
        for _ in range(n):
            cur.execute("update counter set c = c + 1 where id = 1")
    c.close()


def increment_read_then_write(host, port, db, rounds, barrier):
    """Read without a lock, wait until the other process has read too, then write."""
    c = connect(host, port, db)
    with c.cursor() as cur:
        for _ in range(rounds):
            cur.execute("begin")
            cur.execute("select c from counter where id = 1")
            (value,) = cur.fetchone()
            barrier.wait(timeout=60)
            cur.execute("update counter set c = %s where id = 1", (value + 1,))
            cur.execute("commit")
    c.close()


def job_worker(host, port, db, worker):
    c = connect(host, port, db)
    with c.cursor() as cur:
        while True:
            cur.execute("begin")
            cur.execute("select id from jobs where state = 'new' order by id limit 1 for update skip locked")
            row = cur.fetchone()
            if row is None:
                cur.execute("commit")
                cur.execute("select count(*) from jobs where state = 'new'")
                if cur.fetchone()[0] == 0:
                    break
                continue
            cur.execute("update jobs set state = 'done', worker = %s where id = %s", (worker, row[0]))
            # The primary key refuses a job handed out twice.
            cur.execute("insert into claims (job_id, worker) values (%s, %s)", (row[0], worker))
            cur.execute("commit")
    c.close()


def run_processes(target, args_list):
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=target, args=args) for args in args_list]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
    assert all(p.exitcode == 0 for p in procs), [p.exitcode for p in procs]


@pytest.fixture
def counter(conn):
    with conn.cursor() as cur:
        cur.execute("create table counter (id int primary key, c int not null)")
        cur.execute("insert into counter values (1, 0)")
    return conn


def counter_value(conn):
    with conn.cursor() as cur:
        cur.execute("select c from counter where id = 1")
        return cur.fetchone()[0]


def test_select_for_update_increments_from_two_processes_never_lose_one(server, fresh_db, counter):
    run_processes(increment_for_update, [(server.host, server.port, fresh_db, INCREMENTS)] * 2)
    assert counter_value(counter) == 2 * INCREMENTS


def test_in_place_increments_from_two_processes_never_lose_one(server, fresh_db, counter):
    run_processes(increment_in_place, [(server.host, server.port, fresh_db, INCREMENTS)] * 2)
    assert counter_value(counter) == 2 * INCREMENTS


def test_read_then_write_without_a_lock_loses_updates_as_on_mysql(server, fresh_db, counter):
    # Both read the same value each round, so each round one of the two writes is lost.
    barrier = multiprocessing.get_context("spawn").Barrier(2)
    run_processes(increment_read_then_write, [(server.host, server.port, fresh_db, LOST_UPDATE_ROUNDS, barrier)] * 2)
    assert counter_value(counter) == LOST_UPDATE_ROUNDS


def test_skip_locked_job_queue_hands_each_job_to_one_worker(server, fresh_db, conn):
    with conn.cursor() as cur:
        cur.execute("create table jobs (id int primary key, state varchar(8) not null, worker int)")
        cur.execute("create table claims (job_id int primary key, worker int not null)")
        cur.execute("insert into jobs (id, state) values " + ", ".join(f"({i}, 'new')" for i in range(1, JOBS + 1)))
    run_processes(job_worker, [(server.host, server.port, fresh_db, w) for w in range(WORKERS)])
    with conn.cursor() as cur:
        cur.execute("select count(*), count(distinct job_id) from claims")
        assert cur.fetchone() == (JOBS, JOBS)
        cur.execute("select count(*) from jobs where state = 'done'")
        assert cur.fetchone()[0] == JOBS
        cur.execute("select count(distinct worker) from claims")
        assert cur.fetchone()[0] > 1, "the workers took jobs side by side"


class Waiter:
    """Runs one statement on its own connection in a thread, keeping the outcome."""

    def __init__(self, c, sql):
        self.c, self.sql, self.error, self.rows = c, sql, None, None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        try:
            with self.c.cursor() as cur:
                cur.execute(self.sql)
                self.rows = cur.fetchall()
        except pymysql.err.MySQLError as e:
            self.error = e.args[0]

    def join(self):
        self.thread.join(timeout=60)
        assert not self.thread.is_alive()


def wait_until_waiting(monitor, connection_id):
    deadline = time.monotonic() + WAIT_SEEN_TIMEOUT_S
    while time.monotonic() < deadline:
        with monitor.cursor() as cur:
            cur.execute("select trx_state from information_schema.innodb_trx where trx_mysql_thread_id = %s", (connection_id,))
            if cur.fetchall() == (("LOCK WAIT",),):
                return
        time.sleep(0.12)
    raise AssertionError(f"connection {connection_id} never waited for a lock")


def status(c, name):
    with c.cursor() as cur:
        cur.execute("show global status like %s", (name,))
        return int(cur.fetchone()[1])


@pytest.fixture
def rows(conn):
    with conn.cursor() as cur:
        cur.execute("create table t (id int primary key, v int)")
        cur.execute("insert into t values (1, 10), (2, 20), (3, 30)")
    return conn


def time_out_behind_a_holder(h, w):
    """The holder updates row 1; the waiter, in a transaction that already updated row 2,
    times out updating rows 3 and 1."""
    h.execute("begin")
    h.execute("update t set v = 11 where id = 1")
    w.execute("set innodb_lock_wait_timeout = 1")
    w.execute("begin")
    w.execute("update t set v = 22 where id = 2")
    with pytest.raises(pymysql.err.OperationalError) as e:
        w.execute("update t set v = v + 1 where id in (3, 1)")
    assert e.value.args[0] == 1205


def test_lock_wait_timeout_rolls_back_the_statement_only(server, fresh_db, rows):
    holder, waiter = server.connect(fresh_db), server.connect(fresh_db)
    with holder.cursor() as h, waiter.cursor() as w:
        time_out_behind_a_holder(h, w)
        # The transaction is still open; its first statement stands, the failed one is undone.
        w.execute("select v from t where id in (2, 3) order by id")
        assert w.fetchall() == ((22,), (30,))
        w.execute("commit")
        h.execute("commit")
        h.execute("select id, v from t order by id")
        assert h.fetchall() == ((1, 11), (2, 22), (3, 30))


@pytest.mark.skipif(test_target() != "quill", reason="starts a Quill server with a start-up option")
def test_rollback_on_timeout_rolls_back_the_whole_transaction(tmp_path):
    with Server(tmp_path / "data", 1, options=["--innodb-rollback-on-timeout=ON"]) as server:
        with server.connect(database=None).cursor() as cur:
            cur.execute("create database crash")
            cur.execute("create table crash.t (id int primary key, v int)")
            cur.execute("insert into crash.t values (1, 10), (2, 20)")
            cur.execute("select @@innodb_rollback_on_timeout")
            assert cur.fetchone() == (1,)
        holder, waiter = server.connect(), server.connect()
        with holder.cursor() as h, waiter.cursor() as w:
            time_out_behind_a_holder(h, w)
            # The whole transaction is gone, its first update too; the session is not in one.
            w.execute("select v from t where id = 2")
            assert w.fetchall() == ((20,),)
            h.execute("commit")
            w.execute("rollback")
            w.execute("select id, v from t order by id")
            assert w.fetchall() == ((1, 11), (2, 20))


def test_a_wait_is_counted_timed_and_shown(server, fresh_db, rows):
    holder, waiter, monitor = server.connect(fresh_db), server.connect(fresh_db), server.connect()
    waits_before = status(monitor, "Innodb_row_lock_waits")
    with holder.cursor() as h:
        h.execute("begin")
        h.execute("select * from t where id = 2 for update")
        w = Waiter(waiter, "update t set v = 0 where id = 2")
        wait_until_waiting(monitor, waiter.thread_id())
        assert status(monitor, "Innodb_row_lock_current_waits") >= 1
        with monitor.cursor() as cur:
            cur.execute(
                "select trx_state, trx_query from information_schema.innodb_trx where trx_mysql_thread_id = %s", (waiter.thread_id(),)
            )
            assert cur.fetchall() == (("LOCK WAIT", "update t set v = 0 where id = 2"),)
            if server.is_quill:  # MariaDB 10.11 has no performance_schema.data_locks
                cur.execute(
                    "select lock_mode, lock_status, lock_data from performance_schema.data_locks "
                    "where object_schema = %s and lock_type = 'RECORD' order by lock_status",
                    (fresh_db,),
                )
                assert cur.fetchall() == (("X,REC_NOT_GAP", "GRANTED", "2"), ("X", "WAITING", "2"))
                cur.execute(
                    "select w.requesting_thread_id, w.blocking_thread_id, l.lock_status from performance_schema.data_lock_waits w "
                    "join performance_schema.data_locks l on l.engine_lock_id = w.blocking_engine_lock_id"
                )
                assert cur.fetchall() == ((waiter.thread_id(), holder.thread_id(), "GRANTED"),)
        time.sleep(0.2)
        h.execute("commit")
        w.join()
        assert w.error is None
    assert status(monitor, "Innodb_row_lock_waits") == waits_before + 1
    assert status(monitor, "Innodb_row_lock_current_waits") == 0
    assert status(monitor, "Innodb_row_lock_time_max") >= 100


@pytest.mark.skipif(test_target() != "quill", reason="MariaDB 10.11 has no performance_schema.data_locks")
def test_gap_and_insert_intention_locks_are_shown(server, fresh_db, rows):
    holder, inserter, monitor = server.connect(fresh_db), server.connect(fresh_db), server.connect()
    with holder.cursor() as h:
        h.execute("begin")
        h.execute("select id from t where id >= 2 for update")
        w = Waiter(inserter, "insert into t values (4, 40)")
        wait_until_waiting(monitor, inserter.thread_id())
        with monitor.cursor() as cur:
            cur.execute(
                "select lock_type, lock_mode, lock_status, lock_data from performance_schema.data_locks "
                "where object_schema = %s order by engine_transaction_id, lock_type desc, lock_mode, lock_data",
                (fresh_db,),
            )
            assert cur.fetchall() == (
                ("TABLE", "IX", "GRANTED", None),
                ("RECORD", "X,GAP", "GRANTED", "supremum pseudo-record"),
                ("RECORD", "X,REC_NOT_GAP", "GRANTED", "2"),
                ("RECORD", "X,REC_NOT_GAP", "GRANTED", "3"),
                ("TABLE", "IX", "GRANTED", None),
                # Shown on the record after the gap, as InnoDB shows it.
                ("RECORD", "X,INSERT_INTENTION", "WAITING", "supremum pseudo-record"),
            )
            # The wait joins both lock rows, and INNODB_TRX names the same request.
            cur.execute(
                "select r.lock_mode, b.lock_mode from performance_schema.data_lock_waits w "
                "join performance_schema.data_locks r on r.engine_lock_id = w.requesting_engine_lock_id "
                "join performance_schema.data_locks b on b.engine_lock_id = w.blocking_engine_lock_id"
            )
            assert cur.fetchall() == (("X,INSERT_INTENTION", "X,GAP"),)
            cur.execute(
                "select count(*) from information_schema.innodb_trx t "
                "join performance_schema.data_locks l on l.engine_lock_id = t.trx_requested_lock_id"
            )
            assert cur.fetchone() == (1,)
        h.execute("commit")
        w.join()
        assert w.error is None


def test_a_locking_copy_holds_every_source_row_and_waits_for_held_ones(server, fresh_db, rows):
    """INSERT ... SELECT at REPEATABLE READ locks every row it reads, and the gaps, in shared
    mode (Quill with one record range for the whole table): it waits for a row another
    transaction holds, then keeps writers and inserters of the source out until it ends,
    while shared lockers and plain readers go on."""
    holder, copier, other, monitor = (server.connect(fresh_db) for _ in range(4))
    with holder.cursor() as h, copier.cursor() as c, other.cursor() as o:
        c.execute("create table dst like t")
        h.execute("begin")
        h.execute("update t set v = 21 where id = 2")
        c.execute("begin")
        w = Waiter(copier, "insert into dst select * from t")
        wait_until_waiting(monitor, copier.thread_id())
        time.sleep(0.2)
        h.execute("commit")
        w.join()
        assert w.error is None
        c.execute("select id, v from dst order by id")
        assert c.fetchall() == ((1, 10), (2, 21), (3, 30))
        with monitor.cursor() as cur:
            cur.execute("select trx_rows_locked from information_schema.innodb_trx where trx_mysql_thread_id = %s", (copier.thread_id(),))
            assert cur.fetchone()[0] >= 3
        o.execute("set innodb_lock_wait_timeout = 1")
        for sql in ("update t set v = 0 where id = 3", "delete from t where id = 1", "insert into t values (4, 40)", "insert into t values (0, 0)"):
            with pytest.raises(pymysql.err.OperationalError) as e:
                o.execute(sql)
            assert e.value.args[0] == 1205, sql
        o.execute("select v from t where id = 3 lock in share mode")
        assert o.fetchall() == ((30,),)
        o.execute("select count(*) from t")
        assert o.fetchone() == (3,)
        c.execute("commit")
        o.execute("update t set v = 0 where id = 3")
        assert o.rowcount == 1


def test_malformed_transaction_statements_are_refused(server, fresh_db):
    c = server.connect(fresh_db)
    with c.cursor() as cur:
        for sql in (
            "start transaction read only, read write",
            "start transaction with inconsistent snapshot",
            "set transaction isolation level repeatable",
            "set session transaction read sometimes",
        ):
            with pytest.raises(pymysql.err.ProgrammingError) as e:
                cur.execute(sql)
            assert e.value.args[0] == 1064, sql
        # The connection is fine and no transaction was left open.
        cur.execute("select @@autocommit")
        assert cur.fetchone() == (1,)
        assert not c.server_status & pymysql.constants.SERVER_STATUS.SERVER_STATUS_IN_TRANS


def test_deadlock_rolls_back_the_victim_whole_and_counts(server, fresh_db, rows):
    a, b, monitor = server.connect(fresh_db), server.connect(fresh_db), server.connect()
    deadlocks = status(monitor, "Innodb_deadlocks")
    with a.cursor() as ca, b.cursor() as cb:
        ca.execute("begin")
        cb.execute("begin")
        ca.execute("update t set v = 11 where id = 1")
        cb.execute("update t set v = 22 where id = 2")
        w = Waiter(a, "update t set v = 12 where id = 2")
        wait_until_waiting(monitor, a.thread_id())
        with pytest.raises(pymysql.err.OperationalError) as e:
            cb.execute("update t set v = 21 where id = 1")
        assert e.value.args[0] == 1213
        w.join()
        assert w.error is None, "the survivor's wait ends with the lock"
        # The victim's whole transaction is gone, its first update too.
        ca.execute("commit")
        cb.execute("select id, v from t order by id")
        assert cb.fetchall() == ((1, 11), (2, 12), (3, 30))
    assert status(monitor, "Innodb_deadlocks") == deadlocks + 1


def test_a_transaction_waiting_behind_a_deadlock_is_not_its_victim(server, fresh_db, rows):
    """c waits for row 1 behind a; then a and b deadlock over rows 1 and 2. One victim
    (b, the requester, on a tie of weights) breaks it; c, which holds nothing and only
    waits behind a, is left alone and gets row 1 once a commits."""
    a, b, c, monitor = server.connect(fresh_db), server.connect(fresh_db), server.connect(fresh_db), server.connect()
    deadlocks = status(monitor, "Innodb_deadlocks")
    with a.cursor() as ca, b.cursor() as cb, c.cursor() as cc:
        ca.execute("begin")
        cb.execute("begin")
        cc.execute("begin")
        ca.execute("update t set v = 11 where id = 1")
        cb.execute("update t set v = 22 where id = 2")
        wc = Waiter(c, "update t set v = v + 100 where id = 1")
        wait_until_waiting(monitor, c.thread_id())
        wa = Waiter(a, "update t set v = 12 where id = 2")
        wait_until_waiting(monitor, a.thread_id())
        with pytest.raises(pymysql.err.OperationalError) as e:
            cb.execute("update t set v = 21 where id = 1")
        assert e.value.args[0] == 1213
        wa.join()
        assert wa.error is None, "a's wait ends with the lock b let go of"
        ca.execute("commit")
        wc.join()
        assert wc.error is None, "c was no victim: its wait ends with a's commit"
        cc.execute("commit")
        cb.execute("select id, v from t order by id")
        assert cb.fetchall() == ((1, 111), (2, 12), (3, 30))
    assert status(monitor, "Innodb_deadlocks") == deadlocks + 1


def test_a_client_vanishing_mid_transaction_frees_its_locks(server, fresh_db, rows):
    holder, waiter = server.connect(fresh_db), server.connect(fresh_db)
    with holder.cursor() as h:
        h.execute("begin")
        h.execute("update t set v = 99 where id = 3")
    w = Waiter(waiter, "update t set v = v + 1 where id = 3")
    time.sleep(0.3)
    # No COM_QUIT: the connection just drops.
    holder._sock.shutdown(socket.SHUT_RDWR)
    holder._sock.close()
    w.join()
    assert w.error is None
    with waiter.cursor() as cur:
        cur.execute("select v from t where id = 3")
        assert cur.fetchall() == ((31,),)


def test_kill_query_ends_a_lock_wait(server, fresh_db, rows):
    holder, waiter, admin = server.connect(fresh_db), server.connect(fresh_db), server.connect()
    with holder.cursor() as h:
        h.execute("begin")
        h.execute("delete from t where id = 1")
        w = Waiter(waiter, "select * from t where id = 1 lock in share mode")
        wait_until_waiting(admin, waiter.thread_id())
        with admin.cursor() as cur:
            cur.execute(f"kill query {waiter.thread_id()}")
        w.join()
        assert w.error == 1317
        h.execute("rollback")
    with waiter.cursor() as cur:
        cur.execute("select v from t where id = 1")
        assert cur.fetchall() == ((10,),)


def test_kill_query_of_an_idle_connection_does_not_disturb_its_next_wait(server, fresh_db, rows):
    holder, waiter, admin = server.connect(fresh_db), server.connect(fresh_db), server.connect()
    with admin.cursor() as cur:
        cur.execute(f"kill query {waiter.thread_id()}")  # nothing to interrupt
    with holder.cursor() as h, waiter.cursor() as w:
        h.execute("begin")
        h.execute("update t set v = 11 where id = 1")
        w.execute("set innodb_lock_wait_timeout = 1")
        w.execute("begin")
        with pytest.raises(pymysql.err.OperationalError) as e:
            w.execute("update t set v = 12 where id = 1")
        assert e.value.args[0] == 1205
        w.execute("rollback")
        h.execute("commit")
    assert status(admin, "Innodb_row_lock_current_waits") == 0


@pytest.mark.mysql8_only
def test_nowait_fails_at_once_with_mysql_error(server, fresh_db, rows):
    holder, other = server.connect(fresh_db), server.connect(fresh_db)
    with holder.cursor() as h, other.cursor() as o:
        h.execute("begin")
        h.execute("select * from t where id = 1 for update")
        started = time.monotonic()
        with pytest.raises(pymysql.err.OperationalError) as e:
            o.execute("select * from t where id = 1 for update nowait")
        assert e.value.args[0] == 3572
        assert time.monotonic() - started < 5
        o.execute("select id from t for update skip locked")
        assert o.fetchall() == ((2,), (3,))
        h.execute("commit")


def refused_as_read_only(cur, sql):
    with pytest.raises(pymysql.err.MySQLError) as e:
        cur.execute(sql)
    return e.value.args[0] == 1792


def test_read_only_transactions(server, fresh_db, rows):
    c = server.connect(fresh_db)
    with c.cursor() as cur:
        cur.execute("start transaction read only")
        cur.execute("select v from t where id = 1")
        assert refused_as_read_only(cur, "delete from t where id = 1")
        cur.execute("commit")
        # SET TRANSACTION without a scope applies to the next transaction only.
        cur.execute("set transaction read only")
        cur.execute("begin")
        assert refused_as_read_only(cur, "update t set v = 0 where id = 1")
        cur.execute("commit")
        cur.execute("update t set v = 0 where id = 1")
        cur.execute("set session tx_read_only = ON")
        assert refused_as_read_only(cur, "insert into t values (9, 9)")
        cur.execute("set session tx_read_only = OFF")
        cur.execute("start transaction read write")
        cur.execute("insert into t values (9, 9)")
        cur.execute("commit")


def transaction_isolation(cur):
    """The level a new transaction runs at, as INNODB_TRX shows it."""
    cur.execute("begin")
    cur.execute("select * from t")  # MySQL registers the transaction at its first read
    cur.execute("select trx_isolation_level from information_schema.innodb_trx where trx_mysql_thread_id = connection_id()")
    (level,) = cur.fetchone()
    cur.execute("commit")
    return level


@pytest.mark.mysql8_only  # MariaDB 10.11 has only tx_isolation
def test_isolation_variables(server, fresh_db, rows):
    c = server.connect(fresh_db)
    with c.cursor() as cur:
        cur.execute("select @@transaction_isolation, @@tx_isolation")
        assert cur.fetchone() == ("REPEATABLE-READ", "REPEATABLE-READ")
        cur.execute("set session transaction isolation level read committed")
        cur.execute("select @@session.transaction_isolation, @@session.tx_isolation")
        assert cur.fetchone() == ("READ-COMMITTED", "READ-COMMITTED")
        cur.execute("set tx_isolation = 'SERIALIZABLE'")
        cur.execute("select @@transaction_isolation")
        assert cur.fetchone() == ("SERIALIZABLE",)
        # Next transaction only.
        cur.execute("set transaction isolation level read uncommitted")
        assert transaction_isolation(cur) == "READ UNCOMMITTED"
        assert transaction_isolation(cur) == "SERIALIZABLE"
        with pytest.raises(pymysql.err.MySQLError) as e:
            cur.execute("set transaction_isolation = 'SNAPSHOT'")
        assert e.value.args[0] == 1231
