"""Promotion (issue 13): the source dies under load, its semi-sync replica becomes the source,
and the old source comes back as a replica of it by GTID auto-position; the procedure is the
one `docs/replication.md` gives, run with the `mysql` command-line client.

What must hold:
- every commit the old source acknowledged before it died is on the new source (semi-sync);
- the clients go on writing on the new source;
- the old source, back as a replica, is sent only what it lacks (the new source's own
  transactions) and ends with every row the new source has;
- what the old source has beyond that are transactions in flight when it died: never
  acknowledged, at most one per client.
"""

import subprocess
import threading
import time

from conftest import PrivateQuill
from test_replica import ledger_workload, rows, status
from test_replication_crash import CLIENTS, SEMI_SYNC_TIMEOUT_MS, global_status, settled

LEDGER = "SELECT client, n FROM ledger.entries"


def mysql_client(server, sql: str) -> str:
    """Runs `sql` with the mysql command-line client, as an operator would."""
    result = subprocess.run(
        ["mysql", "-h", server.host, "-P", str(server.port), "-u", "root", "--batch", "--skip-column-names", "-e", sql],
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_promote_the_replica_when_the_source_dies_under_load_and_rejoin_the_old_source(tmp_path):
    with PrivateQuill(tmp_path / "a", f"--rpl_semi_sync_source_timeout={SEMI_SYNC_TIMEOUT_MS}", "--rpl_semi_sync_replica_enabled=ON") as a, \
            PrivateQuill(tmp_path / "b", "--server_id=2", f"--rpl_semi_sync_source_timeout={SEMI_SYNC_TIMEOUT_MS}",
                         "--rpl_semi_sync_replica_enabled=ON") as b:
        mysql_client(a, "CREATE DATABASE ledger; CREATE TABLE ledger.entries (client INT, n INT, PRIMARY KEY (client, n))")
        mysql_client(b, "SET GLOBAL super_read_only = ON;"
                        f" CHANGE REPLICATION SOURCE TO SOURCE_HOST='127.0.0.1', SOURCE_PORT={a.port}, SOURCE_USER='root',"
                        " SOURCE_PASSWORD='', SOURCE_AUTO_POSITION=1, SOURCE_CONNECT_RETRY=1; START REPLICA")
        mysql_client(a, "SET GLOBAL rpl_semi_sync_source_enabled = ON")
        deadline = time.monotonic() + 20
        while global_status(a, "Rpl_semi_sync_source_status") != "ON":
            assert time.monotonic() < deadline, "semi-sync did not switch on"
            time.sleep(0.05)

        primary = [a]
        acknowledged = {k: [] for k in range(CLIENTS)}
        stop = threading.Event()

        threads = ledger_workload(lambda: primary[0].connect(), stop, acknowledged)
        time.sleep(1.5)
        assert global_status(a, "Rpl_semi_sync_source_no_times") == "0", "semi-sync fell back to async"
        a.kill()
        acknowledged_by_a = {(k, n) for k, ns in acknowledged.items() for n in list(ns)}

        # Promotion: let the replica apply what it received, stop it, forget the source, and
        # make it writable.
        settled(b)
        mysql_client(b, "STOP REPLICA; RESET REPLICA ALL; SET GLOBAL super_read_only = OFF; SET GLOBAL read_only = OFF")
        on_b = set(rows(b, LEDGER))
        missing = acknowledged_by_a - on_b
        assert not missing, f"{len(missing)} commits the old source acknowledged are not on the new one, e.g. {sorted(missing)[:5]}"
        primary[0] = b
        time.sleep(1.5)

        # The old source returns, read-only, as a replica of the new one.
        a.start()
        mysql_client(a, "SET GLOBAL super_read_only = ON;"
                        f" CHANGE REPLICATION SOURCE TO SOURCE_HOST='127.0.0.1', SOURCE_PORT={b.port}, SOURCE_USER='root',"
                        " SOURCE_PASSWORD='', SOURCE_AUTO_POSITION=1, SOURCE_CONNECT_RETRY=1; START REPLICA")
        time.sleep(1.0)
        stop.set()
        for t in threads:
            t.join(10)

        b_uuid = mysql_client(b, "SELECT @@server_uuid").strip()
        b_executed = mysql_client(b, "SELECT @@gtid_executed").strip().replace("\\n", "\n")
        b_own = [g for g in b_executed.replace("\n", "").split(",") if g.startswith(b_uuid)]
        assert b_own, f"the new source wrote nothing of its own: {b_executed}"
        deadline = time.monotonic() + 60
        while (s := status(a)).get("Executed_Gtid_Set") != b_own[0]:
            assert not s.get("Last_SQL_Error") and time.monotonic() < deadline, (s, b_own)
            time.sleep(0.1)
        assert s["Replica_IO_Running"] == "Yes" and s["Replica_SQL_Running"] == "Yes", s

        on_a = set(rows(a, LEDGER))
        on_b = rows(b, LEDGER)
        assert len(on_b) == len(set(on_b))
        on_b = set(on_b)
        every_acknowledged = {(k, n) for k, ns in acknowledged.items() for n in ns}
        assert not every_acknowledged - on_b, "an acknowledged commit is missing on the new source"
        assert on_b <= on_a, f"the old source lacks {len(on_b - on_a)} rows of the new one"
        errant = on_a - on_b
        assert not errant & every_acknowledged, "an acknowledged commit differs between the servers"
        assert len(errant) <= CLIENTS, f"the old source has {len(errant)} transactions the new one lacks"
        # The new source never sent the old one its own transactions back.
        a_uuid = mysql_client(a, "SELECT @@server_uuid").strip()
        assert a_uuid not in s["Retrieved_Gtid_Set"], s
