"""Crash tests of a Quill source and a Quill replica under a 16-client workload (issue 13),
with semi-sync off and on.

Each client inserts rows (client, n) one autocommit at a time and keeps a ledger of the
commits the server acknowledged. The replica is killed with kill -9 and restarted, then the
source. What must hold on every server:

- every acknowledged commit is on the source after its restart (durability);
- the replica ends with exactly the source's rows, none missing and none twice (its GTID set
  is durable with its rows, so it neither loses nor repeats a transaction);
- with semi-sync on, at the moment the source dies, every commit it acknowledged is already
  on the replica: the replica had acknowledged it, so it applies it with no source at all.
  (Semi-sync must not have fallen back to async meanwhile: the timeout is longer than the
  replica's restart, and the test checks `Rpl_semi_sync_source_no_times` stayed 0.)
"""

import threading
import time

import pytest

from conftest import PrivateQuill
from test_replica import caught_up, ledger_workload, rows, start_replica, status

CLIENTS = 16
SEMI_SYNC_TIMEOUT_MS = 20_000


def global_status(server, name: str) -> str:
    return dict(rows(server, f"SHOW GLOBAL STATUS LIKE '{name}'")).get(name, "")


def settled(replica, timeout_s: float = 30.0) -> set:
    """The replica's rows once it has applied all it received (its GTID set stops moving)."""
    deadline = time.monotonic() + timeout_s
    last = None
    while True:
        executed = status(replica).get("Executed_Gtid_Set")
        if executed == last:
            return set(rows(replica, "SELECT client, n FROM ledger.entries"))
        assert time.monotonic() < deadline, "the replica kept applying"
        last = executed
        time.sleep(0.5)


@pytest.mark.parametrize("semi_sync", [False, True], ids=["async", "semi-sync"])
def test_kill_9_of_replica_and_source_under_16_clients_keeps_every_acknowledged_commit(tmp_path, semi_sync):
    source_options = [f"--rpl_semi_sync_source_timeout={SEMI_SYNC_TIMEOUT_MS}"]
    replica_options = ["--server_id=2", *(["--rpl_semi_sync_replica_enabled=ON"] if semi_sync else [])]
    with PrivateQuill(tmp_path / "source", *source_options) as source, PrivateQuill(tmp_path / "replica", *replica_options) as replica:
        c = source.connect()
        with c.cursor() as cur:
            cur.execute("CREATE DATABASE ledger")
            cur.execute("CREATE TABLE ledger.entries (client INT, n INT, PRIMARY KEY (client, n))")
        c.close()
        start_replica(replica, source)
        caught_up(source, replica)
        if semi_sync:
            # Switched on once the replica is there, or the DDL above would wait out the timeout.
            c = source.connect()
            with c.cursor() as cur:
                cur.execute("SET GLOBAL rpl_semi_sync_source_enabled = ON")
            c.close()
            deadline = time.monotonic() + 20
            while global_status(source, "Rpl_semi_sync_source_status") != "ON":
                assert time.monotonic() < deadline, "semi-sync did not switch on"
                time.sleep(0.05)

        acknowledged = {k: [] for k in range(CLIENTS)}
        stop = threading.Event()
        threads = ledger_workload(source.connect, stop, acknowledged)
        time.sleep(1.5)
        replica.kill()
        time.sleep(0.3)
        replica.start()  # a configured replica starts with the server
        time.sleep(1.5)
        if semi_sync:
            assert global_status(source, "Rpl_semi_sync_source_no_times") == "0", "semi-sync fell back to async"
            assert int(global_status(source, "Rpl_semi_sync_source_yes_tx")) > 200, "commits were acknowledged by the replica"
        source.kill()
        # What the clients hold now is everything the dead source acknowledged.
        at_death = {k: list(ns) for k, ns in acknowledged.items()}
        if semi_sync:
            on_replica = settled(replica)
            missing = [(k, n) for k, ns in at_death.items() for n in ns if (k, n) not in on_replica]
            assert not missing, f"{len(missing)} acknowledged commits are not on the replica, e.g. {missing[:5]}"
        source.start()
        time.sleep(1.0)
        stop.set()
        for t in threads:
            t.join(10)

        s = caught_up(source, replica, timeout_s=60)
        assert s["Replica_SQL_Running"] == "Yes", s
        on_source = set(rows(source, "SELECT client, n FROM ledger.entries"))
        on_replica = rows(replica, "SELECT client, n FROM ledger.entries")
        assert len(on_replica) == len(set(on_replica)), "a transaction applied twice"
        assert set(on_replica) == on_source
        for k, ns in acknowledged.items():
            missing = {(k, n) for n in ns} - on_source
            assert not missing, f"client {k}: acknowledged commits missing on the source: {sorted(missing)[:5]}"
        assert sum(len(ns) for ns in at_death.values()) > 200, "the workload barely ran"
