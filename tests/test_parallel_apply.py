"""Parallel apply on a Quill replica (issue 13): workers apply transactions whose write-sets
(primary and unique keys of the rows they touch) do not meet at once, and commit in source
order.

What it shows: under 8 clients that move money between 20 accounts (two rows each, so most
transactions conflict with a recent one) and insert and delete rows with a unique reference
(so a row's unique value comes back under another primary key), a replica with 4 workers ends
equal to its source, with the total unchanged; the workers' performance_schema rows show
more than one worker applied transactions; its `Executed_Gtid_Set` never has a gap (commits
in source order), read while it applies; the same with `replica_parallel_workers=0` (one
worker).
"""

import random
import threading

import pymysql
import pytest

from conftest import PrivateQuill
from test_replica import caught_up, one, rows, start_replica, status

ACCOUNTS = 20
CLIENTS = 8
TRANSACTIONS_PER_CLIENT = 150


def workload(source):
    c = source.connect()
    with c.cursor() as cur:
        cur.execute("CREATE DATABASE bank")
        cur.execute("CREATE TABLE bank.accounts (id INT PRIMARY KEY, balance BIGINT NOT NULL)")
        cur.execute("CREATE TABLE bank.refs (id INT PRIMARY KEY, ref VARCHAR(20) NOT NULL, UNIQUE KEY (ref))")
        cur.execute("INSERT INTO bank.accounts VALUES " + ", ".join(f"({i}, 1000)" for i in range(ACCOUNTS)))
    c.close()
    errors = []

    def client(k):
        rng = random.Random(k)
        conn = source.connect()
        try:
            with conn.cursor() as cur:
                for n in range(TRANSACTIONS_PER_CLIENT):
                    a, b = rng.sample(range(ACCOUNTS), 2)
                    amount = rng.randint(1, 50)
                    try:
                        cur.execute("BEGIN")
                        cur.execute("UPDATE bank.accounts SET balance = balance - %s WHERE id = %s", (amount, a))
                        cur.execute("UPDATE bank.accounts SET balance = balance + %s WHERE id = %s", (amount, b))
                        cur.execute("COMMIT")
                    except pymysql.err.OperationalError as e:
                        # A deadlock between two transfers: one is rolled back, as InnoDB does.
                        if e.args[0] != 1213:
                            raise
                        cur.execute("ROLLBACK")
                    # A reference that moves between primary keys: delete it under one id,
                    # insert it under another (its unique value is the write-set key they share).
                    ref = f"ref{rng.randint(0, 9)}"
                    try:
                        cur.execute("BEGIN")
                        cur.execute("DELETE FROM bank.refs WHERE ref = %s", (ref,))
                        cur.execute("INSERT INTO bank.refs VALUES (%s, %s)", (k * 10_000 + n, ref))
                        cur.execute("COMMIT")
                    except (pymysql.err.OperationalError, pymysql.err.IntegrityError) as e:
                        # 1213 as above; 1062 when another client re-inserted the reference
                        # meanwhile (what the source committed is what the replica must get).
                        if e.args[0] not in (1213, 1062):
                            raise
                        cur.execute("ROLLBACK")
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
        finally:
            conn.close()

    threads = [threading.Thread(target=client, args=(k,)) for k in range(CLIENTS)]
    for t in threads:
        t.start()
    return threads, errors


def assert_no_gap(executed: str):
    for part in executed.replace("\n", "").split(","):
        if part:
            intervals = part.split(":")[1:]
            assert len(intervals) == 1, f"a gap in {executed}: commits out of source order"


@pytest.mark.parametrize("workers", [4, 0])
def test_a_parallel_replica_ends_equal_to_its_source_under_conflicting_transactions(tmp_path, workers):
    with (
        PrivateQuill(tmp_path / "source") as source,
        PrivateQuill(tmp_path / "replica", "--server_id=2", f"--replica_parallel_workers={workers}") as replica,
    ):
        start_replica(replica, source)
        threads, errors = workload(source)
        # While it applies, what it reports as executed never has a gap.
        while any(t.is_alive() for t in threads):
            assert_no_gap(status(replica).get("Executed_Gtid_Set", ""))
        for t in threads:
            t.join()
        assert errors == []
        s = caught_up(source, replica, timeout_s=120)
        assert (s["Replica_SQL_Running"], s["Last_SQL_Errno"]) == ("Yes", 0)
        for table in ("accounts", "refs"):
            assert rows(replica, f"SELECT * FROM bank.{table} ORDER BY id") == rows(source, f"SELECT * FROM bank.{table} ORDER BY id")
        assert one(replica, "SELECT SUM(balance) FROM bank.accounts")[0] == ACCOUNTS * 1000
        busy = rows(replica, "SELECT WORKER_ID FROM performance_schema.replication_applier_status_by_worker WHERE LAST_APPLIED_TRANSACTION <> ''")
        if workers == 0:
            assert len(busy) == 1
        else:
            assert len(rows(replica, "SELECT WORKER_ID FROM performance_schema.replication_applier_status_by_worker")) == workers
            assert len(busy) > 1, "transactions went to more than one worker"


def test_a_long_read_on_the_replica_never_stalls_apply(tmp_path):
    """A read view held open and a long query on the replica (MVCC reads: no locks) while the
    source writes: the replica applies every transaction while they run."""
    import time

    with (
        PrivateQuill(tmp_path / "source") as source,
        PrivateQuill(tmp_path / "replica", "--server_id=2") as replica,
    ):
        c = source.connect()
        cur = c.cursor()
        cur.execute("CREATE DATABASE r")
        cur.execute("CREATE TABLE r.t (id INT PRIMARY KEY, v INT)")
        cur.execute("INSERT INTO r.t VALUES " + ", ".join(f"({i}, {i})" for i in range(300)))
        start_replica(replica, source)
        caught_up(source, replica)
        # A snapshot held open on the replica.
        snapshot = replica.connect()
        scur = snapshot.cursor()
        scur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
        scur.execute("SELECT COUNT(*) FROM r.t")
        assert scur.fetchone()[0] == 300
        # A long join on the replica, in a thread.
        finished = {}

        def long_query():
            q = replica.connect()
            with q.cursor() as qcur:
                qcur.execute("SELECT COUNT(*) FROM r.t a, r.t b, r.t c WHERE a.v + b.v + c.v >= 0")
                finished["rows"] = qcur.fetchone()[0]
            finished["at"] = time.monotonic()
            q.close()

        reader = threading.Thread(target=long_query)
        reader.start()
        time.sleep(0.2)
        for i in range(300, 400):
            cur.execute("INSERT INTO r.t VALUES (%s, %s)", (i, i))
        cur.execute("UPDATE r.t SET v = v + 1 WHERE id < 100")
        caught_up(source, replica)
        applied_at = time.monotonic()
        long_running = reader.is_alive()
        reader.join()
        assert finished["rows"] >= 300**3
        assert long_running and applied_at < finished["at"], "the replica caught up while the long query ran"
        # The snapshot still sees what it saw.
        scur.execute("SELECT COUNT(*) FROM r.t")
        assert scur.fetchone()[0] == 300
        snapshot.close()
        assert rows(replica, "SELECT * FROM r.t ORDER BY id") == rows(source, "SELECT * FROM r.t ORDER BY id")
        c.close()
