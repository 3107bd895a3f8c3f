"""Durability as a user meets it through a client: the log's counters in SHOW GLOBAL STATUS,
the flush-mode variables and their bounds, statements that must not commit or half-apply,
a clean shutdown in flush mode 0, a restart on a log whose last record was damaged or which
lost a block with records after it, the
server's UUID kept in the data directory, `binlog_row_image`, and a log of a newer format
refused at start-up.
(SIGKILL under load is tests/test_crash_recovery.py.)
"""

import re
import subprocess

import pymysql
import pytest

from conftest import free_port, test_target, unique_name
from test_crash_recovery import QUILL_BIN, Server

quill_only = pytest.mark.skipif(test_target() != "quill", reason="Quill's log counters, bounds and restarts")


def status(cur, name):
    cur.execute("SHOW GLOBAL STATUS LIKE %s", (name,))
    row = cur.fetchone()
    assert row is not None, f"{name} is in SHOW GLOBAL STATUS"
    return int(row[1])


@quill_only
def test_commits_move_the_log_counters(server):
    db = unique_name("dur")
    with server.connect().cursor() as cur:
        cur.execute(f"CREATE DATABASE {db}")
        cur.execute(f"CREATE TABLE {db}.t (id INT PRIMARY KEY)")
        names = ["Binlog_commits", "Binlog_group_commits", "Innodb_os_log_fsyncs", "Innodb_os_log_written", "Com_commit", "Quill_log_groups_led"]
        before = {n: status(cur, n) for n in names}
        for i in range(20):
            cur.execute(f"INSERT INTO {db}.t VALUES ({i})")
        after = {n: status(cur, n) for n in names}
        assert after["Binlog_commits"] - before["Binlog_commits"] >= 20, "one log record per commit"
        assert after["Com_commit"] - before["Com_commit"] >= 20
        # Flush mode 1 (the default): every commit was durable before its OK, so syncs happened.
        assert after["Innodb_os_log_fsyncs"] > before["Innodb_os_log_fsyncs"]
        assert after["Binlog_group_commits"] > before["Binlog_group_commits"]
        assert after["Innodb_os_log_written"] - before["Innodb_os_log_written"] >= 20 * 32, "at least a header per record"
        # One client committing alone: its session writes and syncs its own group.
        assert after["Quill_log_groups_led"] > before["Quill_log_groups_led"]
        assert after["Quill_log_groups_led"] - before["Quill_log_groups_led"] <= after["Binlog_group_commits"] - before["Binlog_group_commits"]
        cur.execute(f"DROP DATABASE {db}")


@quill_only
def test_flush_mode_variables_are_live_and_bounded(server):
    with server.connect().cursor() as cur:
        try:
            cur.execute("SET GLOBAL innodb_flush_log_at_trx_commit = 2")
            cur.execute("SHOW WARNINGS")
            assert cur.fetchall() == (), "a variable Quill acts on raises no warning"
            cur.execute("SELECT @@GLOBAL.innodb_flush_log_at_trx_commit")
            assert cur.fetchone()[0] == 2
            # An enumeration refuses a value it does not list (1231), as MySQL does...
            with pytest.raises(pymysql.err.OperationalError) as e:
                cur.execute("SET GLOBAL innodb_flush_log_at_trx_commit = 5")
            assert e.value.args[0] == 1231
            cur.execute("SELECT @@GLOBAL.innodb_flush_log_at_trx_commit")
            assert cur.fetchone()[0] == 2, "a refused value changes nothing"
            # ...and a number past its range is clamped to it, with warning 1292.
            cur.execute("SET GLOBAL binlog_group_commit_sync_delay = 2000000")
            cur.execute("SHOW WARNINGS")
            assert [w[1] for w in cur.fetchall()] == [1292]
            cur.execute("SELECT @@GLOBAL.binlog_group_commit_sync_delay")
            assert cur.fetchone()[0] == 1000000
        finally:
            cur.execute("SET GLOBAL innodb_flush_log_at_trx_commit = 1")
            cur.execute("SET GLOBAL binlog_group_commit_sync_delay = 0")


def test_rollback_after_an_unsupported_or_failed_statement_undoes_the_transaction(server):
    db = unique_name("dur")
    conn = server.connect()
    with conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE {db}")
        cur.execute(f"CREATE TABLE {db}.t (id INT PRIMARY KEY)")
        cur.execute("BEGIN")
        cur.execute(f"INSERT INTO {db}.t VALUES (1)")
        try:
            # Quill does not support savepoints yet: the statement fails, and must not commit.
            cur.execute("ROLLBACK TO SAVEPOINT nosuch")
        except pymysql.err.MySQLError:
            pass
        cur.execute("ROLLBACK")
        cur.execute(f"SELECT COUNT(*) FROM {db}.t")
        assert cur.fetchone()[0] == 0
        cur.execute(f"DROP DATABASE {db}")


@pytest.mark.mysql8_only
def test_drop_table_naming_a_missing_table_drops_nothing(server):
    db = unique_name("dur")
    with server.connect().cursor() as cur:
        cur.execute(f"CREATE DATABASE {db}")
        cur.execute(f"CREATE TABLE {db}.t1 (id INT PRIMARY KEY)")
        with pytest.raises(pymysql.err.MySQLError) as e:
            cur.execute(f"DROP TABLE {db}.t1, {db}.nosuch")
        assert e.value.args[0] == 1051
        cur.execute(f"SHOW TABLES FROM {db}")
        assert cur.fetchall() == (("t1",),)
        cur.execute(f"DROP DATABASE {db}")


@quill_only
def test_clean_shutdown_in_mode_0_keeps_every_commit(tmp_path):
    # Mode 0 syncs once a second; a clean shutdown (SIGTERM) writes and syncs what is pending.
    with Server(tmp_path / "data", 0) as server:
        with server.connect(database=None).cursor() as cur:
            cur.execute("CREATE DATABASE crash")
            cur.execute("CREATE TABLE crash.t (id INT PRIMARY KEY)")
            for i in range(200):
                cur.execute(f"INSERT INTO crash.t VALUES ({i})")
        server.stop()
        server.start()
        with server.connect().cursor() as cur:
            cur.execute("SELECT COUNT(*), MAX(id) FROM t")
            assert cur.fetchone() == (200, 199)


@quill_only
def test_server_uuid_is_made_once_and_kept_in_the_data_directory(tmp_path):
    """GTIDs name a server by its UUID, so it must outlive restarts: MySQL keeps it in
    auto.cnf, and so does Quill."""
    with Server(tmp_path / "data", 1) as server:
        with server.connect(database=None).cursor() as cur:
            cur.execute("SELECT @@server_uuid, @@GLOBAL.server_uuid")
            uuid, same = cur.fetchone()
            assert uuid == same and re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", uuid), uuid
            with pytest.raises(pymysql.err.OperationalError) as e:
                cur.execute("SET GLOBAL server_uuid = 'x'")
            assert e.value.args[0] == 1238
        server.kill()
        server.start()
        with server.connect(database=None).cursor() as cur:
            cur.execute("SELECT @@server_uuid")
            assert cur.fetchone() == (uuid,)
    assert (tmp_path / "data" / "auto.cnf").read_text() == f"[auto]\nserver-uuid={uuid}\n"


@quill_only
def test_binlog_row_image_is_full_or_minimal(server):
    """What the log records of an updated or deleted row: the whole row it replaced (FULL,
    MySQL's default) or only its key (MINIMAL). NOBLOB is not taken rather than pretended."""
    with server.connect().cursor() as cur:
        cur.execute("SELECT @@GLOBAL.binlog_row_image, @@SESSION.binlog_row_image")
        assert cur.fetchone() == ("FULL", "FULL")
        cur.execute("SET SESSION binlog_row_image = 'minimal'")
        cur.execute("SELECT @@SESSION.binlog_row_image")
        assert cur.fetchone() == ("MINIMAL",)
        for wrong in ("'NOBLOB'", "'half'"):
            with pytest.raises(pymysql.err.OperationalError) as e:
                cur.execute(f"SET SESSION binlog_row_image = {wrong}")
            assert e.value.args[0] == 1231
        cur.execute("SELECT @@SESSION.binlog_row_image")
        assert cur.fetchone() == ("MINIMAL",), "a refused value leaves the variable as it was"


@quill_only
def test_a_log_of_a_newer_format_stops_start_up_and_is_left_untouched(tmp_path):
    """A build that took a newer log's records for a damaged tail would cut committed data:
    it refuses to start instead, and says why."""
    with Server(tmp_path / "data", 1) as server:
        with server.connect(database=None).cursor() as cur:
            cur.execute("CREATE DATABASE kept")
    version = tmp_path / "data" / "log" / "VERSION"
    # The build's own format (LOG_FORMAT_VERSION in crates/log/src/version.rs).
    own = version.read_text()
    assert own.strip().isdigit() and int(own) >= 4, own
    version.write_text("99\n")
    segments = {p.name: p.read_bytes() for p in (tmp_path / "data" / "log").glob("*.qlog")}
    started = subprocess.run(
        [QUILL_BIN, "serve", f"--port={free_port()}", f"--datadir={tmp_path / 'data'}"], capture_output=True, text=True, timeout=60
    )
    assert started.returncode != 0
    assert "format version 99" in started.stdout + started.stderr
    assert {p.name: p.read_bytes() for p in (tmp_path / "data" / "log").glob("*.qlog")} == segments
    version.write_text(own)
    with Server(tmp_path / "data", 1) as server:
        with server.connect(database=None).cursor() as cur:
            cur.execute("SHOW DATABASES LIKE 'kept'")
            assert cur.fetchone() == ("kept",)


@quill_only
def test_a_damaged_last_record_is_cut_reported_and_kept_aside(tmp_path):
    with Server(tmp_path / "data", 1) as server:
        with server.connect(database=None).cursor() as cur:
            cur.execute("CREATE DATABASE crash")
            cur.execute("CREATE TABLE crash.t (id INT PRIMARY KEY, note VARCHAR(20))")
            for i in range(3):
                cur.execute("INSERT INTO crash.t VALUES (%s, %s)", (i, f"row {i}"))
        server.stop()
        # Flip a byte inside the last record (the end of the log is its last non-zero byte).
        [segment] = (tmp_path / "data" / "log").glob("*.qlog")
        data = bytearray(segment.read_bytes())
        last = max(i for i in range(len(data)) if data[i] != 0)
        data[last - 2] ^= 0xFF
        segment.write_bytes(bytes(data))
        server.start()
        with server.connect().cursor() as cur:
            cur.execute("SELECT id FROM t ORDER BY id")
            assert cur.fetchall() == ((0,), (1,)), "everything before the damaged record, nothing after"
            cur.execute("INSERT INTO t VALUES (2, 'again')")
        assert list((tmp_path / "data" / "log").glob("damaged-*.bin")), "the cut bytes are kept aside"
        log = server.log_path.read_text(errors="replace")
        assert re.search(r"commit log: cut at the first damaged record", log)
        # The log continues cleanly after the cut.
        server.stop()
        server.start()
        with server.connect().cursor() as cur:
            cur.execute("SELECT id, note FROM t ORDER BY id")
            assert cur.fetchall() == ((0, "row 0"), (1, "row 1"), (2, "again"))


def log_records(segment):
    """(offset, bytes) of each record in a log segment, up to the first zeros (docs/log-format.md)."""
    data = segment.read_bytes()
    records, at = [], 0
    while at + 32 <= len(data):
        body_len = int.from_bytes(data[at:at + 4], "little")
        if body_len == 0:
            break
        records.append((at, data[at:at + 32 + body_len]))
        at += 32 + body_len
    return records


@quill_only
def test_records_after_a_lost_block_never_return_even_where_new_records_end(tmp_path):
    # A block the disk lost reads as zeros, so the log ends cleanly there; records written
    # after it must never be replayed. The trap: a new record the same size as the lost one
    # ends exactly where a stale record starts, whose LSN then matches its position and whose
    # sequence number follows the new one's. Start-up zeroes the tail to defuse it.
    with Server(tmp_path / "data", 1) as server:
        with server.connect(database=None).cursor() as cur:
            cur.execute("CREATE DATABASE crash")
            cur.execute("CREATE TABLE crash.t (id INT PRIMARY KEY, note VARCHAR(20))")
            for i in range(10, 20):
                cur.execute("INSERT INTO crash.t VALUES (%s, %s)", (i, f"row {i}"))
        server.stop()
        [segment] = (tmp_path / "data" / "log").glob("*.qlog")
        [(at, lost)] = [(at, r) for at, r in log_records(segment) if b"row 13" in r]
        data = bytearray(segment.read_bytes())
        data[at:at + len(lost)] = bytes(len(lost))
        segment.write_bytes(bytes(data))
        server.start()
        with server.connect().cursor() as cur:
            cur.execute("SELECT id FROM t ORDER BY id")
            assert cur.fetchall() == ((10,), (11,), (12,)), "the log ends at the lost block"
            cur.execute("INSERT INTO t VALUES (13, 'row 13')")
        server.stop()
        again = [(a, r) for a, r in log_records(segment) if b"row 13" in r]
        assert [(a, len(r)) for a, r in again] == [(at, len(lost))], "the new record fills the lost one's place exactly"
        server.start()
        with server.connect().cursor() as cur:
            cur.execute("SELECT id, note FROM t ORDER BY id")
            assert cur.fetchall() == ((10, "row 10"), (11, "row 11"), (12, "row 12"), (13, "row 13"))


@quill_only
def test_a_reader_of_a_commit_not_yet_durable_waits_for_it(server):
    """A commit releases its locks and becomes visible once its record has its place in the
    log, before it is durable; a client that reads it is answered only once it is durable."""
    import threading

    db = unique_name("dur")
    admin, writer, reader = server.connect(), server.connect(), server.connect()
    with admin.cursor() as cur:
        cur.execute(f"CREATE DATABASE {db}")
        cur.execute(f"CREATE TABLE {db}.t (id INT PRIMARY KEY, v INT)")
        cur.execute(f"INSERT INTO {db}.t VALUES (1, 0)")
        # Hold every group's fsync back so a commit stays visible-but-not-durable for a while.
        cur.execute("SET GLOBAL binlog_group_commit_sync_delay = 300000")
    try:
        update = threading.Thread(target=lambda: writer.cursor().execute(f"UPDATE {db}.t SET v = 1 WHERE id = 1"))
        update.start()
        with reader.cursor() as r, admin.cursor() as a:
            while True:
                r.execute(f"SELECT v FROM {db}.t WHERE id = 1")
                if r.fetchone()[0] == 1:
                    durable_when_seen = status(a, "Quill_log_durable_lsn")
                    break
            update.join()
            assert durable_when_seen >= status(a, "Quill_log_commit_lsn"), "the reader was answered before the commit it saw was durable"
    finally:
        with admin.cursor() as cur:
            cur.execute("SET GLOBAL binlog_group_commit_sync_delay = 0")
