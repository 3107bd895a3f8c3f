"""SHOW ENGINE INNODB STATUS (issue 14): the TRANSACTIONS section shows who waits and for
which lock; LATEST DETECTED DEADLOCK describes the last deadlock, which pt-deadlock-logger
(Debian's percona-toolkit) reads; innodb_print_all_deadlocks writes it to the server's log.
"""

import subprocess
import threading

import pymysql
import pytest

from conftest import PrivateQuill, test_target
from sessions import execute, one, wait_until

pytestmark = pytest.mark.skipif(test_target() != "quill", reason="reads the server's own log")


def innodb_status(conn):
    kind, name, text = one(conn, "SHOW ENGINE INNODB STATUS")
    assert (kind, name) == ("InnoDB", "")
    return text


def section(text, title):
    """The lines of one section of the monitor output."""
    lines = text.split("\n")
    start = lines.index(title) + 2
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("----") and i + 1 < len(lines) and lines[i + 1].isupper())
    return "\n".join(lines[start:end])


@pytest.fixture
def quill(tmp_path):
    with PrivateQuill(tmp_path / "q") as q:
        admin = q.connect()
        execute(admin, "CREATE DATABASE d", "CREATE TABLE d.t (id INT PRIMARY KEY, v INT)", "INSERT INTO d.t VALUES (1, 0), (2, 0)")
        admin.close()
        yield q


def test_a_lock_wait_is_shown_under_transactions(quill):
    holder, waiter, watcher = quill.connect(), quill.connect(), quill.connect()
    holder.begin()
    execute(holder, "UPDATE d.t SET v = 1 WHERE id = 1")
    waiter_id = one(waiter, "SELECT CONNECTION_ID()")[0]
    done = threading.Thread(target=lambda: execute(waiter, "UPDATE d.t SET v = 5 WHERE id = 1 /* waits */"))
    done.start()
    wait_until(lambda: one(watcher, "SELECT COUNT(*) FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT'") == (1,))
    text = innodb_status(watcher)
    transactions = section(text, "TRANSACTIONS")
    assert "LIST OF TRANSACTIONS FOR EACH SESSION:" in transactions
    waiting = transactions.split("---TRANSACTION ")
    [entry] = [e for e in waiting if f"MySQL thread id {waiter_id}," in e]
    assert "LOCK WAIT " in entry and "/* waits */" in entry
    assert "------- TRX HAS BEEN WAITING" in entry
    [request] = [line for line in entry.split("\n") if line.startswith("RECORD LOCKS ")]
    assert "index PRIMARY of table `d`.`t`" in request and request.endswith(" lock_mode X waiting"), entry
    holder.commit()
    done.join(10)
    assert "TRX HAS BEEN WAITING" not in innodb_status(watcher)
    assert "LATEST DETECTED DEADLOCK" not in innodb_status(watcher), "no deadlock yet"


def test_the_latest_deadlock_is_described_logged_and_read_by_pt_deadlock_logger(quill):
    admin = quill.connect()
    execute(admin, "SET GLOBAL innodb_print_all_deadlocks = ON")
    a, b = quill.connect(), quill.connect()
    a_id, b_id = one(a, "SELECT CONNECTION_ID()")[0], one(b, "SELECT CONNECTION_ID()")[0]
    a.begin()
    b.begin()
    execute(a, "UPDATE d.t SET v = 1 WHERE id = 1")
    execute(b, "UPDATE d.t SET v = 2 WHERE id = 2")
    errors = {}

    def second_update():
        try:
            execute(a, "UPDATE d.t SET v = 1 WHERE id = 2 /* a second */")
        except pymysql.MySQLError as e:
            errors["a"] = e.args[0]

    t = threading.Thread(target=second_update)
    t.start()
    wait_until(lambda: one(admin, "SELECT COUNT(*) FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT'") == (1,))
    try:
        execute(b, "UPDATE d.t SET v = 2 WHERE id = 1 /* b second */")
    except pymysql.MySQLError as e:
        errors["b"] = e.args[0]
    t.join(10)
    assert list(errors.values()) == [1213], errors
    victim_id = a_id if "a" in errors else b_id
    for c in (a, b):
        c.rollback()

    text = innodb_status(admin)
    deadlock = section(text, "LATEST DETECTED DEADLOCK")
    assert "*** (1) TRANSACTION:" in deadlock and "*** (2) TRANSACTION:" in deadlock
    assert "/* a second */" in deadlock and "/* b second */" in deadlock
    assert deadlock.count("HOLDS THE LOCK(S):") == 2 and deadlock.count("WAITING FOR THIS LOCK TO BE GRANTED:") == 2
    number = deadlock.strip().split("\n")[-1].removeprefix("*** WE ROLL BACK TRANSACTION (").removesuffix(")")
    victim_part = deadlock.split(f"*** ({number}) TRANSACTION:")[1].split("*** (")[0]
    assert f"MySQL thread id {victim_id}," in victim_part, deadlock
    assert "Transactions deadlock detected" in quill.log()

    report = subprocess.run(["pt-deadlock-logger", "--iterations", "1", f"h={quill.host},P={quill.port},u=root"],
                            capture_output=True, text=True, timeout=120)
    assert report.returncode == 0, report.stderr
    rows = [line.split(" ", 15) for line in report.stdout.strip().split("\n")[1:]]
    assert len(rows) == 2, report.stdout
    # server ts thread txn_id txn_time user hostname ip db tbl idx lock_type lock_mode wait_hold victim query
    by_thread = {int(r[2]): r for r in rows}
    assert set(by_thread) == {a_id, b_id}, report.stdout
    assert all(r[8:13] == ["d", "t", "PRIMARY", "RECORD", "X"] for r in rows), report.stdout
    assert by_thread[victim_id][14] == "1" and by_thread[a_id if victim_id == b_id else b_id][14] == "0"
    assert "/* a second */" in by_thread[a_id][15]
