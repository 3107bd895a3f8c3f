"""The paged engine, from outside: data several times larger than the buffer pool answers
right, the pool stays within innodb_buffer_pool_size and says what it did under InnoDB's
status names, a restart after kill -9 reads no table data to start, OPTIMIZE TABLE recreates
a table into a new page file, and a server that evicts every leaf it can
(quill_debug_evict_always) keeps MVCC snapshots and locking reads as InnoDB users rely on.

Each test runs its own server (PrivateQuill), because it sets the pool's size or kills the
server; the shared server's pool is the default 128 MiB."""

import re
import subprocess
import threading
import time
from pathlib import Path

import pymysql
import pytest

from conftest import REPO_ROOT, PrivateQuill

# MySQL's smallest innodb_buffer_pool_size; the tables below hold several times that.
POOL_BYTES = 5 << 20
ROWS = 60_000
PAD = "p" * 200


def status(conn, name: str) -> int:
    with conn.cursor() as c:
        c.execute(f"SHOW GLOBAL STATUS LIKE '{name}'")
        rows = c.fetchall()
    assert rows, f"no status variable {name}"
    return int(rows[0][1])


def load(conn, rows: int = ROWS, keys: str = ", KEY k (k)") -> None:
    """`rows` rows into paged.t, with the secondary index `keys` declares (none: "")."""
    with conn.cursor() as c:
        c.execute("CREATE DATABASE IF NOT EXISTS paged")
        c.execute(f"CREATE TABLE paged.t (id INT PRIMARY KEY, k INT NOT NULL, c VARCHAR(255) NOT NULL{keys})")
        for start in range(0, rows, 2000):
            values = ",".join(f"({i},{i % 1000},'{PAD}{i}')" for i in range(start, min(start + 2000, rows)))
            c.execute(f"INSERT INTO paged.t VALUES {values}")


def load_at_rest(q, conn) -> None:
    """`load`'s rows, written by a checkpoint (every leaf clean), and no checkpoint after it
    until the test asks (the server runs with checkpoints every second to get there)."""
    load(conn)
    q.wait_for_checkpoint()
    assert wait_for(lambda: status(conn, "Innodb_buffer_pool_pages_dirty") == 0)
    with conn.cursor() as c:
        c.execute("SET GLOBAL quill_checkpoint_interval_seconds = 86400")


def check_contents(conn, rows: int = ROWS) -> None:
    with conn.cursor() as c:
        c.execute("SELECT COUNT(*), SUM(id), SUM(k) FROM paged.t")
        assert c.fetchone() == (rows, rows * (rows - 1) // 2, sum(i % 1000 for i in range(rows)))
        # Through the secondary index: every row with k = 7, each once.
        c.execute("SELECT id FROM paged.t WHERE k = 7 ORDER BY id")
        assert [r[0] for r in c.fetchall()] == list(range(7, rows, 1000))
        c.execute("SELECT c FROM paged.t WHERE id = %s", (rows - 1,))
        assert c.fetchone() == (f"{PAD}{rows - 1}",)


def test_data_several_times_the_pool_answers_right_within_the_pool(tmp_path: Path):
    with PrivateQuill(tmp_path / "d", f"--innodb-buffer-pool-size={POOL_BYTES}") as q:
        conn = q.connect()
        load(conn)
        check_contents(conn)
        reads_before = status(conn, "Innodb_buffer_pool_reads")
        # A second full pass must read evicted leaves back: the data is ~3x the pool.
        check_contents(conn)
        assert status(conn, "Innodb_buffer_pool_reads") > reads_before
        assert status(conn, "Innodb_buffer_pool_read_requests") > status(conn, "Innodb_buffer_pool_reads")
        # Resident bytes stay within the pool (a leaf in use may sit past it for a moment).
        assert status(conn, "Innodb_buffer_pool_bytes_data") <= POOL_BYTES + (256 << 10)
        assert status(conn, "Innodb_buffer_pool_pages_flushed") > 0
        assert status(conn, "Quill_buffer_pool_evictions") > 0
        assert status(conn, "Innodb_buffer_pool_pages_total") == POOL_BYTES // 16384
        with conn.cursor() as c:
            c.execute("SELECT POOL_ID, POOL_SIZE, DATABASE_PAGES, NUMBER_PAGES_READ, NUMBER_PAGES_GET FROM information_schema.INNODB_BUFFER_POOL_STATS")
            (pool_id, size, pages, read, gets), = c.fetchall()
            assert (pool_id, size) == (0, POOL_BYTES // 16384)
            assert pages > 0 and read > 0 and gets > read
            # The pool grows at once when asked, and the next pass reads less from disk.
            c.execute("SET GLOBAL innodb_buffer_pool_size = 268435456")
            c.execute("SELECT @@innodb_buffer_pool_size")
            assert c.fetchone() == (268435456,)
        check_contents(conn)
        reads = status(conn, "Innodb_buffer_pool_reads")
        check_contents(conn)
        assert status(conn, "Innodb_buffer_pool_reads") == reads, "everything is resident now"


def test_a_restart_after_kill_reads_no_table_until_asked(tmp_path: Path):
    datadir = tmp_path / "d"
    options = (f"--innodb-buffer-pool-size={POOL_BYTES}", "--quill-checkpoint-interval-seconds=1")
    with PrivateQuill(datadir, *options) as q:
        conn = q.connect()
        load(conn)
        assert status(conn, "Innodb_buffer_pool_pages_dirty") > 0
        q.wait_for_checkpoint()
        # A checkpoint's pages become the leaves' own: nothing is left dirty once one ran
        # after the last write.
        assert wait_for(lambda: status(conn, "Innodb_buffer_pool_pages_dirty") == 0)
        # Committed after the checkpoint: replayed from the log at start-up.
        with conn.cursor() as c:
            c.execute("UPDATE paged.t SET c = 'after' WHERE id = 5")
            c.execute("DELETE FROM paged.t WHERE id = 6")
            c.execute("INSERT INTO paged.t VALUES (6, 6, '" + PAD + "6')")
        q.kill()
    pages = list((datadir / "pages").glob("*.qpage"))
    assert len(pages) == 1 and pages[0].stat().st_size > 3 * POOL_BYTES, "the rows are in a page file"
    with PrivateQuill(datadir, f"--innodb-buffer-pool-size={POOL_BYTES}") as q:
        conn = q.connect()
        # Start-up replayed three changes: it read at most their leaves, not the table.
        assert status(conn, "Innodb_buffer_pool_reads") <= 12
        with conn.cursor() as c:
            c.execute("SELECT c FROM paged.t WHERE id = 5")
            assert c.fetchone() == ("after",)
            c.execute("UPDATE paged.t SET c = %s WHERE id = 5", (f"{PAD}5",))
        check_contents(conn)
        assert "checkpoint_rows=60000" in q.log().replace("\x1b[0m", "").replace("\x1b[2m", "").replace("\x1b[3m", "")


def changed_rows() -> dict[int, int]:
    """id -> k of paged.t after `change_after_checkpoint` on `load`'s rows."""
    rows = {i: i % 1000 + (1000 if i % 7 == 0 else 0) for i in range(ROWS) if i % 11 != 0}
    rows.update({i: i % 1000 for i in range(ROWS, ROWS + 2000)})
    return rows


def change_after_checkpoint(conn) -> None:
    """Updates that move index keys, deletes, and inserts past the last leaf."""
    with conn.cursor() as c:
        c.execute("UPDATE paged.t SET k = k + 1000 WHERE id % 7 = 0")
        c.execute("DELETE FROM paged.t WHERE id % 11 = 0")
        for start in range(ROWS, ROWS + 2000, 500):
            c.execute("INSERT INTO paged.t VALUES " + ",".join(f"({i},{i % 1000},'new {i}')" for i in range(start, start + 500)))


def check_changed(conn) -> None:
    rows = changed_rows()
    with conn.cursor() as c:
        c.execute("SELECT COUNT(*), SUM(id), SUM(k) FROM paged.t")
        assert c.fetchone() == (len(rows), sum(rows), sum(rows.values()))
        for k in (7, 1007, 999):
            # Through the secondary index, whose entries moved.
            c.execute("SELECT id FROM paged.t FORCE INDEX (k) WHERE k = %s ORDER BY id", (k,))
            assert [r[0] for r in c.fetchall()] == sorted(i for i, v in rows.items() if v == k), f"k = {k}"
        c.execute("SELECT c FROM paged.t WHERE id = %s", (ROWS + 1999,))
        assert c.fetchone() == (f"new {ROWS + 1999}",)
        c.execute("CHECK TABLE paged.t")
        assert c.fetchall()[-1][-1] == "OK"


def replayed_waiting(log: str) -> int:
    """What the last start-up's recovery line says it left waiting for leaves."""
    plain = re.sub(r"\x1b\[[0-9;]*m", "", log)
    found = re.findall(r"recovery: loaded the checkpoint and replayed the commit log .*redo_waiting=(\d+)", plain)
    assert found, "no recovery line"
    return int(found[-1])


def test_changes_replayed_at_start_up_wait_for_their_leaves_and_reach_the_next_checkpoint(tmp_path: Path):
    """After kill -9, start-up replays the log since the checkpoint without reading the leaves
    the changes touch (as InnoDB applies redo when a page is read): they wait, and each leaf
    takes its own when a query reads it, or when the background thread reads the rest in.
    Queries answer with every change in; the waiting count falls to 0; and a checkpoint after
    that, then another kill -9, loses none of them."""
    datadir = tmp_path / "d"
    with PrivateQuill(datadir, f"--innodb-buffer-pool-size={POOL_BYTES}", "--quill-checkpoint-interval-seconds=1") as q:
        conn = q.connect()
        load(conn)
        q.wait_for_checkpoint()
        with conn.cursor() as c:
            c.execute("SET GLOBAL quill_checkpoint_interval_seconds = 86400")
        change_after_checkpoint(conn)
        q.kill()
    with PrivateQuill(datadir, f"--innodb-buffer-pool-size={POOL_BYTES}") as q:
        conn = q.connect()
        assert replayed_waiting(q.log()) > 10_000, "the replayed changes wait for their leaves"
        check_changed(conn)
        assert wait_for(lambda: status(conn, "Quill_recovery_changes_waiting") == 0)
        assert wait_for(lambda: "replayed changes all applied to their leaves" in q.log())
        check_changed(conn)
        with conn.cursor() as c:
            checkpoints = status(conn, "Quill_checkpoints")
            c.execute("SET GLOBAL quill_checkpoint_interval_seconds = 1")
            assert wait_for(lambda: status(conn, "Quill_checkpoints") > checkpoints)
        q.kill()
    with PrivateQuill(datadir, f"--innodb-buffer-pool-size={POOL_BYTES}") as q:
        conn = q.connect()
        assert replayed_waiting(q.log()) == 0, "the checkpoint holds every change"
        check_changed(conn)


def test_leaves_changed_since_a_checkpoint_leave_memory_keeping_their_changes_not_written(tmp_path: Path):
    """A leaf that came from a checkpoint's block and changed since leaves memory without a
    write, keeping only its changed rows and entries (within half the pool); reading it back
    applies them to the block. Answers stay right, the next checkpoint writes those leaves,
    and a kill -9 after it loses nothing."""
    datadir = tmp_path / "d"
    with PrivateQuill(datadir, f"--innodb-buffer-pool-size={POOL_BYTES}", "--quill-checkpoint-interval-seconds=1") as q:
        conn = q.connect()
        load_at_rest(q, conn)
        kept_before = status(conn, "Quill_buffer_pool_evictions_kept")
        change_after_checkpoint(conn)
        assert status(conn, "Quill_buffer_pool_evictions_kept") > kept_before
        assert 0 < status(conn, "Quill_buffer_pool_kept_bytes") <= POOL_BYTES // 2
        check_changed(conn)
        with conn.cursor() as c:
            checkpoints = status(conn, "Quill_checkpoints")
            c.execute("SET GLOBAL quill_checkpoint_interval_seconds = 1")
            assert wait_for(lambda: status(conn, "Quill_checkpoints") > checkpoints)
        assert wait_for(lambda: status(conn, "Quill_buffer_pool_kept_bytes") == 0), "the checkpoint wrote every kept change"
        q.kill()
    with PrivateQuill(datadir, f"--innodb-buffer-pool-size={POOL_BYTES}") as q:
        check_changed(q.connect())


def test_kept_changes_past_a_quarter_of_the_pool_start_a_checkpoint(tmp_path: Path):
    """With the interval and the log far from their triggers, changes kept in memory by
    evicted leaves reaching a quarter of the pool start a checkpoint, which writes them."""
    with PrivateQuill(tmp_path / "d", f"--innodb-buffer-pool-size={POOL_BYTES}", "--quill-checkpoint-interval-seconds=1") as q:
        conn = q.connect()
        load_at_rest(q, conn)
        checkpoints = status(conn, "Quill_checkpoints")
        change_after_checkpoint(conn)
        assert wait_for(lambda: status(conn, "Quill_checkpoints") > checkpoints), "kept changes started a checkpoint"
        assert wait_for(lambda: status(conn, "Quill_buffer_pool_kept_bytes") < POOL_BYTES // 4)
        check_changed(conn)


def test_a_load_leaves_room_in_each_leaf_so_a_few_inserts_split_none(tmp_path: Path):
    """A bulk load fills leaves to 60 of their 64 entries, in the primary key and in an index
    built after it: one insert into each leaf splits none (a split leaf leaves its checkpoint
    block and is written whole), and five more into one leaf split it."""
    with PrivateQuill(tmp_path / "d") as q:
        conn = q.connect()
        with conn.cursor() as c:
            c.execute("CREATE DATABASE paged")
            c.execute("CREATE TABLE paged.s (id INT PRIMARY KEY, k INT NOT NULL)")
            for start in range(0, 6000, 2000):
                c.execute("INSERT INTO paged.s VALUES " + ",".join(f"({2 * i},{10 * i})" for i in range(start, start + 2000)))
            c.execute("CREATE INDEX k ON paged.s (k)")
            splits = status(conn, "Quill_buffer_pool_leaf_splits")
            # The 60th entry of every leaf of both trees is followed by one insert each.
            c.execute("INSERT INTO paged.s VALUES " + ",".join(f"({2 * 60 * j + 1},{10 * 60 * j + 5})" for j in range(100)))
            assert status(conn, "Quill_buffer_pool_leaf_splits") == splits
            c.execute("INSERT INTO paged.s VALUES " + ",".join(f"({2 * n + 1},{10 * n + 5})" for n in range(1, 6)))
            assert status(conn, "Quill_buffer_pool_leaf_splits") == splits + 2
            c.execute("SELECT COUNT(*), SUM(id), SUM(k) FROM paged.s FORCE INDEX (k) WHERE k >= 0")
            added = [(2 * 60 * j + 1, 10 * 60 * j + 5) for j in range(100)] + [(2 * n + 1, 10 * n + 5) for n in range(1, 6)]
            assert c.fetchone() == (6105, sum(2 * i for i in range(6000)) + sum(a for a, _ in added), sum(10 * i for i in range(6000)) + sum(b for _, b in added))


def test_a_checkpoint_writes_a_few_changed_rows_as_delta_records_that_survive_kill(tmp_path: Path):
    """Rows changed here and there since the last checkpoint: the next one writes only those
    rows and index entries (delta records against their leaves' blocks), not their leaves
    whole; after kill -9 the leaves read back from their blocks with the records applied."""
    datadir = tmp_path / "d"
    changed = {i * 977 % ROWS: f"changed {i}" for i in range(12)}
    with PrivateQuill(datadir, f"--innodb-buffer-pool-size={POOL_BYTES}", "--quill-checkpoint-interval-seconds=1") as q:
        conn = q.connect()
        load_at_rest(q, conn)
        with conn.cursor() as c:
            for i, text in changed.items():
                # A new c, and a k that moves the row's index entry.
                c.execute("UPDATE paged.t SET c = %s, k = k + 1000 WHERE id = %s", (text, i))
            written = status(conn, "Innodb_data_written")
            checkpoints = status(conn, "Quill_checkpoints")
            c.execute("SET GLOBAL quill_checkpoint_interval_seconds = 1")
            assert wait_for(lambda: status(conn, "Quill_checkpoints") > checkpoints)
            c.execute("SET GLOBAL quill_checkpoint_interval_seconds = 86400")
        newest = max(datadir.glob("checkpoint-*.qckpt"))
        pages_written = status(conn, "Innodb_data_written") - written - newest.stat().st_size
        # Twelve rows in twelve leaves of each index: one delta block per index (a 4 KiB unit
        # or two), where writing the leaves whole would take well over 100 KiB.
        assert 0 < pages_written <= 32 << 10, pages_written
        q.kill()
    with PrivateQuill(datadir, f"--innodb-buffer-pool-size={POOL_BYTES}") as q:
        conn = q.connect()
        assert replayed_waiting(q.log()) == 0, "the checkpoint holds every change"
        with conn.cursor() as c:
            for i, text in changed.items():
                c.execute("SELECT c, k FROM paged.t WHERE id = %s", (i,))
                assert c.fetchone() == (text, i % 1000 + 1000)
            c.execute("SELECT COUNT(*) FROM paged.t FORCE INDEX (k) WHERE k >= 1000")
            assert c.fetchone() == (len(changed),)
            c.execute("SELECT COUNT(*), SUM(id) FROM paged.t")
            assert c.fetchone() == (ROWS, ROWS * (ROWS - 1) // 2)
            c.execute("CHECK TABLE paged.t")
            assert c.fetchall()[-1][-1] == "OK"


def data_free(conn) -> int:
    with conn.cursor() as c:
        c.execute("SELECT DATA_FREE FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'paged' AND TABLE_NAME = 't'")
        return c.fetchone()[0]


def wait_for(condition, timeout_s: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.2)
    return condition()


def test_optimize_table_recreates_a_paged_table_in_a_new_file(tmp_path: Path):
    datadir = tmp_path / "d"
    with PrivateQuill(datadir, f"--innodb-buffer-pool-size={POOL_BYTES}", "--quill-checkpoint-interval-seconds=1") as q:
        conn = q.connect()
        load(conn, 20_000)
        q.wait_for_checkpoint()
        with conn.cursor() as c:
            c.execute("DELETE FROM paged.t WHERE id >= 2000")
            # The emptied leaves' blocks are free once a checkpoint that does not name them is.
            assert wait_for(lambda: data_free(conn) > 100_000), data_free(conn)
            c.execute("SHOW TABLE STATUS FROM paged LIKE 't'")
            assert c.fetchone()[9] == data_free(conn), "SHOW TABLE STATUS's Data_free is the same figure"
            c.execute("OPTIMIZE TABLE paged.t")
            assert c.fetchall() == (
                ("paged.t", "optimize", "note", "Table does not support optimize, doing recreate + analyze instead"),
                ("paged.t", "optimize", "status", "OK"),
            )
            c.execute("SELECT COUNT(*), SUM(id) FROM paged.t")
            assert c.fetchone() == (2000, 2000 * 1999 // 2)
            assert data_free(conn) == 0, "the recreated table's file is packed"
        # After the next checkpoint only the new, smaller file is left.
        deadline = time.monotonic() + 20
        while len(list((datadir / "pages").glob("*.qpage"))) != 1 and time.monotonic() < deadline:
            time.sleep(0.2)
        files = list((datadir / "pages").glob("*.qpage"))
        assert len(files) == 1, files
        assert files[0].stat().st_size < 2 << 20
        check_db = q.connect()
        with check_db.cursor() as c:
            c.execute("SELECT COUNT(*) FROM paged.t WHERE k = 7")
            assert c.fetchone() == (2,)


def test_snapshots_and_locking_reads_hold_while_every_leaf_is_evicted(tmp_path: Path):
    with PrivateQuill(tmp_path / "d", "--quill-debug-evict-always=ON") as q:
        setup = q.connect()
        load(setup, 3000)
        reader = q.connect(autocommit=False)
        writer = q.connect(autocommit=False)
        with reader.cursor() as r, writer.cursor() as w:
            r.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
            r.execute("SELECT SUM(k) FROM paged.t")
            before = r.fetchone()[0]
            w.execute("UPDATE paged.t SET k = k + 1 WHERE id < 1500")
            w.execute("COMMIT")
            # The snapshot's versions went to disk with their leaves and came back.
            r.execute("SELECT SUM(k) FROM paged.t")
            assert r.fetchone()[0] == before
            r.execute("SELECT COUNT(*) FROM paged.t WHERE k = 8")
            assert r.fetchone()[0] == 3
            r.execute("COMMIT")
            r.execute("SELECT SUM(k) FROM paged.t")
            assert r.fetchone()[0] == before + 1500
            # A locking read of a row another transaction holds waits, then times out (1205).
            w.execute("SET SESSION innodb_lock_wait_timeout = 1")
            r.execute("SELECT * FROM paged.t WHERE id = 10 FOR UPDATE")
            with pytest.raises(pymysql.err.OperationalError) as e:
                w.execute("UPDATE paged.t SET k = 0 WHERE id = 10")
            assert e.value.args[0] == 1205
            r.execute("ROLLBACK")
            w.execute("ROLLBACK")
        assert status(setup, "Innodb_buffer_pool_pages_data") <= 4, "nothing stays resident"


def test_a_transaction_larger_than_the_pool_commits_and_rolls_back(tmp_path: Path):
    with PrivateQuill(tmp_path / "d", f"--innodb-buffer-pool-size={POOL_BYTES}") as q:
        conn = q.connect()
        load(conn)
        tx = q.connect(autocommit=False)
        with tx.cursor() as c:
            c.execute("UPDATE paged.t SET c = CONCAT(c, 'x')")
            assert c.rowcount == ROWS
            c.execute("ROLLBACK")
            c.execute("SELECT COUNT(*) FROM paged.t WHERE c LIKE '%x'")
            assert c.fetchone() == (0,)
            c.execute("UPDATE paged.t SET k = k + 1000")
            c.execute("COMMIT")
        with conn.cursor() as c:
            c.execute("SELECT MIN(k), MAX(k) FROM paged.t")
            assert c.fetchone() == (1000, 1999)
        assert status(conn, "Innodb_buffer_pool_bytes_data") <= POOL_BYTES + (256 << 10)


def test_concurrent_writers_over_a_small_pool_lose_nothing(tmp_path: Path):
    with PrivateQuill(tmp_path / "d", f"--innodb-buffer-pool-size={POOL_BYTES}") as q:
        load(q.connect())
        errors = []

        def increment(worker: int) -> None:
            try:
                conn = q.connect()
                with conn.cursor() as c:
                    for n in range(300):
                        c.execute("UPDATE paged.t SET k = k + 1 WHERE id = %s", ((n * 197 + worker) % ROWS,))
            except Exception as e:  # reported below
                errors.append(e)

        threads = [threading.Thread(target=increment, args=(w,)) for w in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors
        with q.connect().cursor() as c:
            c.execute("SELECT SUM(k) FROM paged.t")
            assert c.fetchone()[0] == sum(i % 1000 for i in range(ROWS)) + 4 * 300


def test_stats_need_process_as_in_mysql(tmp_path: Path):
    with PrivateQuill(tmp_path / "d") as q:
        q.run("CREATE USER 'plain'@'%' IDENTIFIED BY 'pw'", "GRANT SELECT ON *.* TO 'plain'@'%'")
        plain = pymysql.connect(host=q.host, port=q.port, user="plain", password="pw")
        with plain.cursor() as c, pytest.raises(pymysql.err.OperationalError) as e:
            c.execute("SELECT * FROM information_schema.INNODB_BUFFER_POOL_STATS")
        assert e.value.args[0] == 1227


def test_memory_storage_keeps_no_pages_and_says_the_pool_does_nothing(tmp_path: Path):
    datadir = tmp_path / "d"
    with PrivateQuill(datadir, "--quill-table-storage=memory") as q:
        conn = q.connect()
        load(conn, 3000)
        check_contents(conn, 3000)
        with conn.cursor() as c:
            c.execute("SET GLOBAL innodb_buffer_pool_size = 67108864")
            c.execute("SHOW WARNINGS")
            assert any("quill_table_storage=memory" in w[2] for w in c.fetchall())
            c.execute("SELECT COUNT(*) FROM information_schema.INNODB_BUFFER_POOL_STATS")
            assert c.fetchone() == (0,)
        assert status(conn, "Innodb_buffer_pool_pages_data") == 0
    assert not (datadir / "pages").exists()


def test_an_unknown_table_storage_is_refused_at_start(tmp_path: Path):
    binary = REPO_ROOT / "target" / "release" / "quill"
    result = subprocess.run([str(binary), "serve", "--port=0", f"--datadir={tmp_path / 'd'}", "--quill-table-storage=disk"],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode != 0
    assert "Variable 'quill_table_storage' can't be set to the value of 'disk'" in result.stderr
    assert not (tmp_path / "d").exists(), "nothing was made"


def test_data_written_counts_page_and_checkpoint_files_apart_from_the_log(tmp_path: Path):
    with PrivateQuill(tmp_path / "d", f"--innodb-buffer-pool-size={POOL_BYTES}", "--quill-checkpoint-interval-seconds=1") as q:
        conn = q.connect()
        assert status(conn, "Innodb_data_written") == 0
        load(conn, 20_000)
        q.wait_for_checkpoint()
        assert wait_for(lambda: status(conn, "Innodb_buffer_pool_pages_dirty") == 0)
        pages = status(conn, "Innodb_pages_written")
        assert pages > 0 and pages == status(conn, "Innodb_buffer_pool_pages_flushed")
        # Each block takes whole 4 KiB units; the checkpoint file adds its own bytes.
        assert status(conn, "Innodb_data_written") > pages * 4096
        assert status(conn, "Innodb_os_log_written") > 0


def test_a_checkpoint_purges_the_old_versions_a_finished_snapshot_kept(tmp_path: Path):
    # A commit purges only what no open snapshot needs; an UPDATE committed while a snapshot
    # is open keeps every old version (and its index entry). Once the snapshot ends, the
    # next checkpoint purges them, so its leaves are stable images and none stays dirty.
    with PrivateQuill(tmp_path / "d", "--quill-checkpoint-interval-seconds=1") as q:
        writer, reader = q.connect(), q.connect()
        load(writer, 5_000)
        with reader.cursor() as r, writer.cursor() as w:
            r.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
            r.execute("SELECT SUM(k) FROM paged.t")
            (before,) = r.fetchone()
            w.execute("UPDATE paged.t SET k = k + 1")
            r.execute("SELECT SUM(k) FROM paged.t")
            assert r.fetchone() == (before,), "the snapshot still sees the old versions"
            r.execute("COMMIT")
            # Something to checkpoint after the snapshot ended.
            w.execute("CREATE TABLE paged.after_snapshot (id INT PRIMARY KEY)")
            w.execute("INSERT INTO paged.after_snapshot VALUES (1)")
        checkpoints = status(writer, "Quill_checkpoints")
        assert wait_for(lambda: status(writer, "Quill_checkpoints") > checkpoints)
        assert wait_for(lambda: status(writer, "Innodb_buffer_pool_pages_dirty") == 0), status(writer, "Innodb_buffer_pool_pages_dirty")
        with writer.cursor() as w:
            w.execute("SELECT COUNT(*) FROM paged.t WHERE k = 1")
            assert w.fetchone() == (5,), "k = 0 went to 1 for ids 0, 1000, ..., 4000; no old entry is left"
            w.execute("SELECT SUM(k) FROM paged.t")
            assert w.fetchone() == (before + 5_000,)


def test_the_server_runs_with_its_allocator_settings_and_a_users_own_win(tmp_path: Path):
    # The server re-executes itself once (same process id) with mimalloc's settings for a
    # bounded resident set; a MIMALLOC_* value the user set is kept.
    with PrivateQuill(tmp_path / "d", env={"MIMALLOC_PURGE_DELAY": "7"}) as q:
        q.connect().ping()
        environ = dict(
            item.split("=", 1) for item in Path(f"/proc/{q.process.pid}/environ").read_bytes().decode().split("\0") if "=" in item
        )
        assert environ.get("MIMALLOC_ARENA_EAGER_COMMIT") == "0"
        assert environ.get("MIMALLOC_PURGE_DELAY") == "7"
        assert environ.get("QUILL_ALLOCATOR_SET") == "1"


#: sched(7): SCHED_IDLE, field 41 (`policy`) of /proc/PID/task/TID/stat.
SCHED_IDLE = 5


def thread_policies(pid: int) -> list[tuple[str, int]]:
    """(name, scheduling policy) of each thread of process `pid` alive now."""
    threads = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            stat = (task / "stat").read_text()
        except OSError:
            continue  # the thread ended meanwhile
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        threads.append((name, int(fields[41 - 3])))
    return threads


def test_a_checkpoint_copies_in_the_idle_scheduling_class_and_queries_keep_theirs(tmp_path: Path):
    # Queries keep the CPU while a checkpoint copies: its copier thread takes SCHED_IDLE
    # after it has its log position. The class goes with the thread, and no other thread
    # of the server ever has it.
    with PrivateQuill(tmp_path / "d", f"--innodb-buffer-pool-size={POOL_BYTES}") as q:
        conn = q.connect()
        load(conn)
        with conn.cursor() as c:
            c.execute("UPDATE paged.t SET k = k + 1")
        checkpoints = status(conn, "Quill_checkpoints")
        with conn.cursor() as c:
            c.execute("SET GLOBAL quill_checkpoint_interval_seconds = 1")
        seen = set()
        deadline = time.monotonic() + 60
        while status(conn, "Quill_checkpoints") == checkpoints and time.monotonic() < deadline:
            seen.update(thread_policies(q.process.pid))
        assert status(conn, "Quill_checkpoints") > checkpoints, "the checkpoint ended"
        assert ("quill-ckpt-copy", SCHED_IDLE) in seen, sorted(seen)
        assert {name for name, policy in seen if policy == SCHED_IDLE} == {"quill-ckpt-copy"}, sorted(seen)
        with conn.cursor() as c:
            c.execute("SET GLOBAL quill_checkpoint_interval_seconds = DEFAULT")
        assert all(policy != SCHED_IDLE for _, policy in thread_policies(q.process.pid)), "the class left with its thread"


def test_an_index_added_to_a_table_larger_than_the_pool_is_built_in_place_and_survives_kill(tmp_path: Path):
    """CREATE INDEX and ALTER TABLE ... ADD INDEX build the index from the rows where they
    are: the table keeps its page file (a copy would take a new one), the index answers, a
    unique index over duplicate values is refused with MySQL's 1062 and leaves nothing, and
    both a checkpointed index and one only in the log are there after kill -9."""
    datadir = tmp_path / "d"
    options = (f"--innodb-buffer-pool-size={POOL_BYTES}", "--quill-checkpoint-interval-seconds=1")
    checkpoints = lambda q: q.log().count("checkpoint written")  # noqa: E731
    with PrivateQuill(datadir, *options) as q:
        conn = q.connect()
        load(conn, keys="")
        with conn.cursor() as c:
            c.execute("UPDATE paged.t SET k = k + 1000 WHERE id % 1000 = 999")
        files = sorted(p.name for p in (datadir / "pages").glob("*.qpage"))
        assert len(files) == 1, files
        with conn.cursor() as c:
            c.execute("CREATE INDEX k ON paged.t (k)")
            c.execute("SELECT id FROM paged.t FORCE INDEX (k) WHERE k = 7 ORDER BY id")
            assert [r[0] for r in c.fetchall()] == list(range(7, ROWS, 1000))
            c.execute("SELECT COUNT(*) FROM paged.t FORCE INDEX (k) WHERE k >= 1000")
            assert c.fetchone() == (ROWS // 1000,)
            with pytest.raises(pymysql.err.IntegrityError) as refused:
                c.execute("ALTER TABLE paged.t ADD UNIQUE INDEX uk (k)")
            assert refused.value.args[0] == 1062
            assert refused.value.args[1] == "Duplicate entry '0' for key 't.uk'", refused.value.args
            c.execute("SELECT INDEX_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = 'paged' AND TABLE_NAME = 't' ORDER BY 1")
            assert [r[0] for r in c.fetchall()] == ["k", "PRIMARY"]
        assert sorted(p.name for p in (datadir / "pages").glob("*.qpage")) == files, "the rows stayed in their file"
        seen = checkpoints(q)
        assert wait_for(lambda: checkpoints(q) > seen), "a checkpoint after the index"
        with conn.cursor() as c:
            # Only in the log: rebuilt from the rows by the replay after the kill.
            c.execute("ALTER TABLE paged.t ADD UNIQUE INDEX uk (c, k)")
            c.execute("UPDATE paged.t SET k = 7 WHERE id = 8")
        q.kill()
    with PrivateQuill(datadir, f"--innodb-buffer-pool-size={POOL_BYTES}") as q:
        conn = q.connect()
        with conn.cursor() as c:
            c.execute("SELECT id FROM paged.t FORCE INDEX (k) WHERE k = 7 ORDER BY id")
            assert [r[0] for r in c.fetchall()] == [7, 8] + list(range(1007, ROWS, 1000))
            c.execute("SELECT id FROM paged.t FORCE INDEX (uk) WHERE c = %s AND k = 1999", (f"{PAD}1999",))
            assert c.fetchall() == ((1999,),)
            with pytest.raises(pymysql.err.IntegrityError) as refused:
                c.execute("INSERT INTO paged.t VALUES (%s, 1999, %s)", (ROWS, f"{PAD}1999"))
            assert refused.value.args[0] == 1062
            c.execute("SELECT COUNT(*), SUM(id) FROM paged.t")
            assert c.fetchone() == (ROWS, ROWS * (ROWS - 1) // 2)
