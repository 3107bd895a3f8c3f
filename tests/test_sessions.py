"""Sessions seen from outside: KILL, lock wait timeouts, disconnects and SHOW PROCESSLIST.

Each test uses several real PyMySQL connections against the running server, the way an
operator or an application would.
"""

import socket
import threading
import time

import pymysql
import pytest


def _thread_id(conn) -> int:
    with conn.cursor() as cur:
        cur.execute("SELECT CONNECTION_ID()")
        return int(cur.fetchone()[0])


def _wait_until_running(server, thread_id: int, fragment: str, timeout_s: float = 10.0) -> None:
    """Poll SHOW PROCESSLIST until `thread_id` is running a statement containing `fragment`."""
    deadline = time.monotonic() + timeout_s
    with server.connect() as c, c.cursor() as cur:
        while time.monotonic() < deadline:
            cur.execute("SHOW PROCESSLIST")
            for row in cur.fetchall():
                if row[0] == thread_id and row[7] and fragment in row[7]:
                    time.sleep(0.05)  # from running to waiting on the row
                    return
            time.sleep(0.02)
    raise AssertionError(f"thread {thread_id} never ran {fragment!r}")


def _status(server, name: str) -> int:
    with server.connect() as c, c.cursor() as cur:
        cur.execute(f"SHOW GLOBAL STATUS LIKE '{name}'")
        return int(cur.fetchone()[1])


def _setup_row(server, db):
    with server.connect(db) as c, c.cursor() as cur:
        cur.execute("CREATE TABLE demo (id INT PRIMARY KEY, counter INT NOT NULL)")
        cur.execute("INSERT INTO demo VALUES (3, 0)")


def test_lock_wait_times_out_with_1205_and_rolls_back_only_the_statement(server, fresh_db):
    _setup_row(server, fresh_db)
    holder = server.connect(fresh_db, autocommit=False)
    waiter = server.connect(fresh_db, autocommit=False)
    try:
        with holder.cursor() as cur:
            cur.execute("UPDATE demo SET counter = counter + 1 WHERE id = 3")
        with waiter.cursor() as cur:
            cur.execute("SET SESSION innodb_lock_wait_timeout = 1")
            cur.execute("INSERT INTO demo VALUES (4, 40)")
            with pytest.raises(pymysql.err.OperationalError) as err:
                cur.execute("UPDATE demo SET counter = 100 WHERE id = 3")
            assert err.value.args[0] == 1205
            # Only the statement was rolled back: the earlier insert is still ours.
            cur.execute("SELECT counter FROM demo WHERE id = 4")
            assert cur.fetchone() == (40,)
        holder.commit()
        waiter.commit()
        with server.connect(fresh_db) as c, c.cursor() as cur:
            cur.execute("SELECT id, counter FROM demo ORDER BY id")
            assert cur.fetchall() == ((3, 1), (4, 40))
    finally:
        holder.close()
        waiter.close()


def test_a_waiting_update_proceeds_when_the_holder_commits(server, fresh_db):
    _setup_row(server, fresh_db)
    holder = server.connect(fresh_db, autocommit=False)
    result = {}
    try:
        with holder.cursor() as cur:
            cur.execute("UPDATE demo SET counter = 10 WHERE id = 3")

        def wait_and_update():
            with server.connect(fresh_db) as c, c.cursor() as cur:
                cur.execute("UPDATE demo SET counter = counter + 1 WHERE id = 3")
                result["affected"] = cur.rowcount

        t = threading.Thread(target=wait_and_update)
        t.start()
        time.sleep(0.3)
        assert t.is_alive(), "the second UPDATE should wait for the row"
        holder.commit()
        t.join(10)
        assert result == {"affected": 1}
        with server.connect(fresh_db) as c, c.cursor() as cur:
            cur.execute("SELECT counter FROM demo WHERE id = 3")
            assert cur.fetchone() == (11,)
    finally:
        holder.close()


def test_kill_query_interrupts_a_lock_wait(server, fresh_db):
    _setup_row(server, fresh_db)
    holder = server.connect(fresh_db, autocommit=False)
    waiter = server.connect(fresh_db)
    killer = server.connect()
    errors = []
    try:
        with holder.cursor() as cur:
            cur.execute("UPDATE demo SET counter = 10 WHERE id = 3")
        waiter_id = _thread_id(waiter)

        def blocked_update():
            try:
                with waiter.cursor() as cur:
                    cur.execute("UPDATE demo SET counter = 99 WHERE id = 3")
            except pymysql.err.MySQLError as e:
                errors.append(e.args[0])

        t = threading.Thread(target=blocked_update)
        t.start()
        _wait_until_running(server, waiter_id, "counter = 99")
        with killer.cursor() as cur:
            cur.execute(f"KILL QUERY {waiter_id}")
        t.join(10)
        assert errors == [1317]
        # KILL QUERY leaves the connection usable.
        with waiter.cursor() as cur:
            cur.execute("SELECT 1")
            assert cur.fetchone() == (1,)
    finally:
        holder.rollback()
        for c in (holder, waiter, killer):
            c.close()


def test_kill_connection_closes_it_and_rolls_back_its_transaction(server, fresh_db):
    _setup_row(server, fresh_db)
    victim = server.connect(fresh_db, autocommit=False)
    with victim.cursor() as cur:
        cur.execute("UPDATE demo SET counter = 5 WHERE id = 3")
    victim_id = _thread_id(victim)
    with server.connect(fresh_db) as c, c.cursor() as cur:
        cur.execute("SHOW PROCESSLIST")
        assert victim_id in [row[0] for row in cur.fetchall()]
        cur.execute(f"KILL {victim_id}")
        # The killed connection's uncommitted change is gone and its row lock released.
        cur.execute("UPDATE demo SET counter = counter + 1 WHERE id = 3")
        cur.execute("SELECT counter FROM demo WHERE id = 3")
        assert cur.fetchone() == (1,)
    with pytest.raises(pymysql.err.OperationalError):
        with victim.cursor() as cur:
            cur.execute("SELECT 1")
    victim.close()


def test_kill_of_an_unknown_thread_is_1094(server):
    with server.connect() as c, c.cursor() as cur:
        with pytest.raises(pymysql.err.OperationalError) as err:
            cur.execute("KILL 987654")
        assert err.value.args[0] == 1094


def test_client_vanishing_mid_transaction_releases_its_locks(server, fresh_db):
    _setup_row(server, fresh_db)
    gone = server.connect(fresh_db, autocommit=False)
    with gone.cursor() as cur:
        cur.execute("UPDATE demo SET counter = 77 WHERE id = 3")
    # The client vanishes without COM_QUIT.
    gone._sock.shutdown(socket.SHUT_RDWR)
    gone._sock.close()
    with server.connect(fresh_db) as c, c.cursor() as cur:
        cur.execute("SET SESSION innodb_lock_wait_timeout = 5")
        cur.execute("UPDATE demo SET counter = counter + 1 WHERE id = 3")
        cur.execute("SELECT counter FROM demo WHERE id = 3")
        assert cur.fetchone() == (1,)


def test_max_connections_refuses_with_1040(server):
    """root, like any CONNECTION_ADMIN account in MySQL, gets one connection past the limit."""
    with server.connect() as admin, admin.cursor() as cur:
        cur.execute("SELECT @@global.max_connections")
        original = cur.fetchone()[0]
        cur.execute("SET GLOBAL max_connections = 10")
        opened = []
        try:
            with pytest.raises(pymysql.err.OperationalError) as err:
                for _ in range(40):
                    opened.append(server.connect())
            assert err.value.args[0] == 1040
            assert 1 <= len(opened) <= 11
        finally:
            for c in opened:
                c.close()
            cur.execute(f"SET GLOBAL max_connections = {original}")


def test_deadlock_rolls_back_one_transaction_with_1213(server, fresh_db):
    with server.connect(fresh_db) as c, c.cursor() as cur:
        cur.execute("CREATE TABLE acct (id INT PRIMARY KEY, bal INT NOT NULL)")
        cur.execute("INSERT INTO acct VALUES (1, 100), (2, 100)")
    a = server.connect(fresh_db, autocommit=False)
    b = server.connect(fresh_db, autocommit=False)
    a_id = _thread_id(a)
    outcome = {}
    try:
        with a.cursor() as cur:
            cur.execute("UPDATE acct SET bal = bal - 10 WHERE id = 1")
        with b.cursor() as cur:
            cur.execute("UPDATE acct SET bal = bal - 20 WHERE id = 2")

        def update(name, conn, sql):
            try:
                with conn.cursor() as cur:
                    cur.execute(sql)
                outcome[name] = "ok"
            except pymysql.err.MySQLError as e:
                outcome[name] = e.args[0]

        deadlocks_before = _status(server, "Innodb_deadlocks")
        t = threading.Thread(target=update, args=("a", a, "UPDATE acct SET bal = bal + 10 WHERE id = 2"))
        t.start()
        _wait_until_running(server, a_id, "bal + 10")
        update("b", b, "UPDATE acct SET bal = bal + 20 WHERE id = 1")
        t.join(10)
        assert sorted(map(str, outcome.values())) == ["1213", "ok"], outcome
        assert _status(server, "Innodb_deadlocks") == deadlocks_before + 1
        winner = a if outcome["a"] == "ok" else b
        winner.commit()
        with server.connect(fresh_db) as c, c.cursor() as cur:
            cur.execute("SELECT bal FROM acct ORDER BY id")
            balances = [r[0] for r in cur.fetchall()]
        # The victim's first update was rolled back with it; the winner's both applied.
        assert balances in ([90, 110], [120, 80]), balances
    finally:
        a.close()
        b.close()
