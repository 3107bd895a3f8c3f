"""Semi-synchronous replication from a Quill source (issue 13), with MariaDB 10.11 as the
semi-sync replica (`rpl_semi_sync_slave_enabled=ON`: it asks Quill whether the source side is
there, sets `@rpl_semi_sync_slave`, reads the semi-sync header of each event and acknowledges the
events flagged for it).

- With the replica connected, commits wait for its acknowledgement and are counted in
  `Rpl_semi_sync_source_yes_tx`; the replica has each committed row.
- With the replica stopped, a commit waits `rpl_semi_sync_source_timeout`, then semi-sync
  switches off, counted (`_no_times`, `_no_tx`) and logged, never silently; later commits
  answer at once.
- When the replica comes back and acknowledges what it missed, semi-sync switches on again,
  and that is logged too.
- A Quill replica with `rpl_semi_sync_replica_enabled=ON` (here over `SOURCE_SSL=1`) is a
  semi-sync replica too: it acknowledges each transaction on receipt, and shows it in
  `Rpl_semi_sync_replica_status`.
"""

import socket
import struct
import threading
import time

import pymysql
import pytest

from conftest import PrivateMariaDB, PrivateQuill
from test_mariadb_replica import SOURCE_OPTIONS, replica_status, start_replica, wait_until_applied

TIMEOUT_MS = 700


def status(cur) -> dict:
    cur.execute("SHOW GLOBAL STATUS LIKE 'Rpl_semi_sync_source%'")
    return dict(cur.fetchall())


def table_d_t(server):
    """A connection to `server` and a cursor, with an empty table `d.t (id INT PRIMARY KEY)`."""
    c = server.connect()
    cur = c.cursor()
    cur.execute("CREATE DATABASE d")
    cur.execute("CREATE TABLE d.t (id INT PRIMARY KEY)")
    return c, cur


def wait_for(predicate, what: str, timeout_s: float = 20.0):
    deadline = time.monotonic() + timeout_s
    while not (value := predicate()):
        assert time.monotonic() < deadline, what
        time.sleep(0.05)
    return value


def test_commits_wait_for_a_mariadb_replica_and_fall_back_to_async_visibly(tmp_path):
    options = (*SOURCE_OPTIONS, "--rpl_semi_sync_source_enabled=ON", f"--rpl_semi_sync_source_timeout={TIMEOUT_MS}")
    with PrivateQuill(tmp_path / "source", *options) as source, \
            PrivateMariaDB("--server-id=2", "--rpl-semi-sync-slave-enabled=ON") as mariadb:
        replica = mariadb.server
        c = source.connect()
        cur = c.cursor()
        cur.execute("SHOW VARIABLES LIKE 'rpl_semi_sync_master_enabled'")
        assert cur.fetchall() == (("rpl_semi_sync_master_enabled", "ON"),)
        cur.execute("CREATE DATABASE semi")
        cur.execute("CREATE TABLE semi.t (id INT PRIMARY KEY, v VARCHAR(20))")
        start_replica(replica, source, "quill-bin.000001", 4)
        wait_until_applied(source, replica)
        wait_for(lambda: status(cur)["Rpl_semi_sync_source_clients"] == "1", "the replica registered as semi-sync")
        assert status(cur)["Rpl_semi_sync_source_status"] == "ON"

        before = status(cur)
        for i in range(1, 21):
            started = time.monotonic()
            cur.execute(f"INSERT INTO semi.t VALUES ({i}, 'acked')")
            # Acknowledged, not timed out: far below the timeout.
            assert time.monotonic() - started < TIMEOUT_MS / 1000 / 2
        after = status(cur)
        assert int(after["Rpl_semi_sync_source_yes_tx"]) - int(before["Rpl_semi_sync_source_yes_tx"]) == 20, after
        # (The DDL before the replica connected waited in vain: semi-sync was off until it caught up.)
        assert after["Rpl_semi_sync_source_no_times"] == before["Rpl_semi_sync_source_no_times"], after
        assert after["Rpl_semi_sync_source_status"] == "ON", after
        assert int(after["Rpl_semi_sync_source_tx_waits"]) >= 20
        # Acknowledged means the replica has it (received; applied soon after).
        rc = replica.connect()
        rcur = rc.cursor()
        wait_for(lambda: rcur.execute("SELECT COUNT(*) FROM semi.t") is not None and rcur.fetchone()[0] == 20, "rows applied")

        # The replica stops: the next commit waits the timeout, then semi-sync is off.
        rcur.execute("STOP SLAVE")
        wait_for(lambda: status(cur)["Rpl_semi_sync_source_clients"] == "0", "the dump ended")
        started = time.monotonic()
        cur.execute("INSERT INTO semi.t VALUES (100, 'timed out')")
        waited = time.monotonic() - started
        assert waited >= TIMEOUT_MS / 1000 * 0.9, waited
        off = status(cur)
        assert off["Rpl_semi_sync_source_status"] == "OFF", off
        assert int(off["Rpl_semi_sync_source_no_times"]) == int(after["Rpl_semi_sync_source_no_times"]) + 1, off
        started = time.monotonic()
        cur.execute("INSERT INTO semi.t VALUES (101, 'async')")
        assert time.monotonic() - started < TIMEOUT_MS / 1000 / 2, "an async commit does not wait"
        assert int(status(cur)["Rpl_semi_sync_source_no_tx"]) == int(after["Rpl_semi_sync_source_no_tx"]) + 2
        assert "semi-sync replication switched OFF" in source.log()

        # The replica comes back, catches up and acknowledges: semi-sync is on again.
        rcur.execute("START SLAVE")
        wait_for(lambda: status(cur)["Rpl_semi_sync_source_status"] == "ON", "semi-sync switched back on")
        assert "semi-sync replication switched ON" in source.log()
        cur.execute("INSERT INTO semi.t VALUES (102, 'acked again')")
        wait_until_applied(source, replica)
        rcur.execute("SELECT COUNT(*) FROM semi.t")
        assert rcur.fetchone()[0] == 23
        assert replica_status(replica)["Slave_SQL_Running"] == "Yes"
        rc.close()
        c.close()


def test_semi_sync_variables_have_both_names_and_waits_without_a_replica_time_out(tmp_path):
    with PrivateQuill(tmp_path / "alone") as source:
        c, cur = table_d_t(source)
        cur.execute("SHOW VARIABLES LIKE 'rpl_semi_sync_%'")
        names = dict(cur.fetchall())
        assert names["rpl_semi_sync_source_enabled"] == names["rpl_semi_sync_master_enabled"] == "OFF"
        assert names["rpl_semi_sync_source_wait_point"] == "AFTER_SYNC"
        assert names["rpl_semi_sync_source_timeout"] == "10000"
        cur.execute("SET GLOBAL rpl_semi_sync_master_timeout = 300")
        cur.execute("SELECT @@rpl_semi_sync_source_timeout, @@rpl_semi_sync_master_timeout")
        assert cur.fetchone() == (300, 300)
        with pytest.raises(pymysql.err.OperationalError) as e:
            cur.execute("SET GLOBAL rpl_semi_sync_source_wait_point = 'WHENEVER'")
        assert e.value.args[0] == 1231
        # Disabled: no wait, nothing counted.
        cur.execute("INSERT INTO d.t VALUES (1)")
        assert status(cur)["Rpl_semi_sync_source_no_tx"] == "0"
        # Enabled with no replica (wait_no_replica ON): the first commit waits the timeout.
        cur.execute("SET GLOBAL rpl_semi_sync_source_enabled = ON")
        started = time.monotonic()
        cur.execute("INSERT INTO d.t VALUES (2)")
        assert time.monotonic() - started >= 0.27
        s = status(cur)
        assert (s["Rpl_semi_sync_source_status"], s["Rpl_semi_sync_source_no_times"], s["Rpl_semi_sync_source_no_tx"]) == ("OFF", "1", "1"), s
        cur.execute("SHOW GLOBAL STATUS LIKE 'Rpl_semi_sync_master_no_times'")
        assert cur.fetchone() == ("Rpl_semi_sync_master_no_times", "1")
        c.close()


def test_super_read_only_refuses_writes_and_read_only_follows_it(tmp_path):
    with PrivateQuill(tmp_path / "ro") as server:
        c, cur = table_d_t(server)
        cur.execute("SET GLOBAL super_read_only = ON")
        cur.execute("SELECT @@global.read_only, @@global.super_read_only")
        assert cur.fetchone() == (1, 1)
        for sql in ("INSERT INTO d.t VALUES (1)", "UPDATE d.t SET id = 2", "DELETE FROM d.t",
                    "CREATE TABLE d.u (id INT PRIMARY KEY)", "DROP TABLE d.t"):
            with pytest.raises(pymysql.err.OperationalError) as e:
                cur.execute(sql)
            assert e.value.args[0] == 1290 and "--super-read-only" in e.value.args[1], sql
        cur.execute("SELECT COUNT(*) FROM d.t")
        assert cur.fetchone() == (0,)
        # read_only alone binds accounts without SUPER; root has it.
        cur.execute("SET GLOBAL read_only = OFF")
        cur.execute("SELECT @@global.read_only, @@global.super_read_only")
        assert cur.fetchone() == (0, 0)
        cur.execute("SET GLOBAL read_only = ON")
        cur.execute("INSERT INTO d.t VALUES (1)")
        cur.execute("SHOW WARNINGS")
        assert cur.fetchall() == ()
        c.close()


def reader_and_writer(server, table: str, read_sql: str | None = None) -> tuple[float, float, int]:
    """A commit that waits for an acknowledgement nobody sends, and, while it waits, a read of
    its table (or `read_sql`) on another session: the seconds each took, and what it read."""
    writer = server.connect()
    reader = server.connect()
    took = {}

    def write():
        started = time.monotonic()
        writer.cursor().execute(f"INSERT INTO {table} VALUES (1)")
        took["write"] = time.monotonic() - started

    t = threading.Thread(target=write)
    t.start()
    time.sleep(0.3)
    cur = reader.cursor()
    started = time.monotonic()
    cur.execute(read_sql or f"SELECT COUNT(*) FROM {table}")
    took["read"] = time.monotonic() - started
    counted = cur.fetchone()[0]
    t.join()
    writer.close()
    reader.close()
    return took["write"], took["read"], counted


def test_after_sync_holds_readers_of_an_unacknowledged_commit_and_after_commit_does_not(tmp_path):
    for point in ("AFTER_SYNC", "AFTER_COMMIT"):
        with PrivateQuill(tmp_path / point, f"--rpl_semi_sync_source_wait_point={point}") as server:
            c, cur = table_d_t(server)
            cur.execute("SET GLOBAL rpl_semi_sync_source_timeout = 1500")
            cur.execute("SET GLOBAL rpl_semi_sync_source_enabled = ON")
            wrote, read, counted = reader_and_writer(server, "d.t")
            assert wrote >= 1.4, (point, wrote)
            assert counted == 1, point
            if point == "AFTER_SYNC":
                # The read saw a commit no replica had: it answered when the commit's wait ended.
                assert read >= 0.9, (point, read)
            else:
                assert read < 0.9, (point, read)
            cur.execute("SHOW GLOBAL STATUS LIKE 'Rpl_semi_sync_source_no_times'")
            assert cur.fetchone()[1] == "1"
            c.close()


def test_a_query_that_reads_no_table_never_waits_for_an_acknowledgement(tmp_path):
    """Regression: at AFTER_SYNC every autocommit SELECT waited, `SELECT @@global...` too, so a
    semi-sync replica reconnecting while commits waited for it could not ask its source's
    variables before its dump: it waited out the timeout, and semi-sync fell back to async."""
    with PrivateQuill(tmp_path / "source") as server:
        c, cur = table_d_t(server)
        cur.execute("SET GLOBAL rpl_semi_sync_source_timeout = 1500")
        cur.execute("SET GLOBAL rpl_semi_sync_source_enabled = ON")
        wrote, read, value = reader_and_writer(server, "d.t", "SELECT @@global.rpl_semi_sync_source_enabled")
        assert wrote >= 1.4, wrote
        assert value == 1
        assert read < 0.9, read
        c.close()


def packet(payload: bytes, seq: int = 0) -> bytes:
    return struct.pack("<I", len(payload))[:3] + bytes([seq]) + payload


def test_a_semi_sync_dump_ignores_a_stray_acknowledgement_and_ends_on_anything_else(tmp_path):
    """Bad input on a semi-sync dump connection: an acknowledgement of no event awaiting one is
    ignored (the replica stays counted); a packet that is not an acknowledgement, or one too
    large for one, ends that dump and nothing else; committed rows stay."""
    with PrivateQuill(tmp_path / "src", "--rpl_semi_sync_source_enabled=ON", "--rpl_semi_sync_source_timeout=200") as server:
        c, cur = table_d_t(server)
        cur.execute("INSERT INTO d.t VALUES (1)")
        for bad in (packet(b"\x03SELECT 1"), struct.pack("<I", 1 << 20)[:3] + b"\x00"):
            dump = server.connect()
            dcur = dump.cursor()
            for sql in ("SET @master_binlog_checksum = 'CRC32'", "SET @rpl_semi_sync_slave = 1"):
                dcur.execute(sql)
            # COM_BINLOG_DUMP from the first file: position, flags, server id, file name.
            dump._execute_command(0x12, struct.pack("<IHI", 4, 0, 7) + b"quill-bin.000001")
            wait_for(lambda: status(cur)["Rpl_semi_sync_source_clients"] == "1", "the dump registered as semi-sync")
            dump._sock.sendall(packet(b"\xef" + struct.pack("<Q", 999_999) + b"quill-bin.000042"))
            time.sleep(0.3)
            assert status(cur)["Rpl_semi_sync_source_clients"] == "1", "a stray acknowledgement is ignored"
            dump._sock.sendall(bad)
            wait_for(lambda: status(cur)["Rpl_semi_sync_source_clients"] == "0", f"the dump ended on {bad!r}")
            try:
                dump._sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            dump._sock.close()
        cur.execute("INSERT INTO d.t VALUES (2)")
        cur.execute("SELECT COUNT(*) FROM d.t")
        assert cur.fetchone() == (2,)
        assert "an acknowledgement for an event not awaiting one" in server.log()
        c.close()


def test_a_quill_replica_over_tls_acknowledges_each_commit(tmp_path):
    from test_replica import caught_up, start_replica as start_quill_replica

    timeout_ms = 5000
    with PrivateQuill(tmp_path / "source", "--rpl_semi_sync_source_enabled=ON", f"--rpl_semi_sync_source_timeout={timeout_ms}") as source, \
            PrivateQuill(tmp_path / "replica", "--server_id=2", "--rpl_semi_sync_replica_enabled=ON") as replica:
        c, cur = table_d_t(source)
        start_quill_replica(replica, source, "SOURCE_AUTO_POSITION=1, SOURCE_SSL=1")
        wait_for(lambda: status(cur)["Rpl_semi_sync_source_clients"] == "1", "the replica registered as semi-sync")
        r = replica.connect()
        rcur = r.cursor()
        rcur.execute("SHOW GLOBAL STATUS LIKE 'Rpl_semi_sync_replica_status'")
        assert rcur.fetchall() == (("Rpl_semi_sync_replica_status", "ON"),)
        caught_up(source, replica)
        assert replica_row(rcur)["Source_SSL_Allowed"] == "Yes"
        wait_for(lambda: status(cur)["Rpl_semi_sync_source_status"] == "ON", "semi-sync on once the replica caught up")

        before = status(cur)
        for i in range(1, 21):
            started = time.monotonic()
            cur.execute(f"INSERT INTO d.t VALUES ({i})")
            assert time.monotonic() - started < timeout_ms / 1000 / 2, "acknowledged, not timed out"
        after = status(cur)
        assert int(after["Rpl_semi_sync_source_yes_tx"]) - int(before["Rpl_semi_sync_source_yes_tx"]) == 20, after
        assert after["Rpl_semi_sync_source_no_times"] == before["Rpl_semi_sync_source_no_times"], after
        caught_up(source, replica)
        rcur.execute("SELECT COUNT(*) FROM d.t")
        assert rcur.fetchone() == (20,)

        # Off on the replica: after its I/O thread reconnects it no longer asks for semi-sync.
        rcur.execute("SET GLOBAL rpl_semi_sync_slave_enabled = OFF")
        rcur.execute("STOP REPLICA")
        rcur.execute("START REPLICA")
        wait_for(lambda: replica_row(rcur)["Replica_IO_Running"] == "Yes", "the replica reconnected")
        rcur.execute("SHOW GLOBAL STATUS LIKE 'Rpl_semi_sync_slave_status'")
        assert rcur.fetchall() == (("Rpl_semi_sync_slave_status", "OFF"),)
        assert status(cur)["Rpl_semi_sync_source_clients"] == "0"
        r.close()
        c.close()


def replica_row(cur) -> dict:
    cur.execute("SHOW REPLICA STATUS")
    return dict(zip([d[0] for d in cur.description], cur.fetchone()))
