"""A full disk: writers get MySQL's error, the server stays up, nothing acknowledged is lost.

The data directory lives on a 64 MiB tmpfs, filled to the last byte by commits (with the
default 64 MiB log segment, which used to mean not even one DDL could commit there). Before:
the server exited when the log could not grow, every client saw 2013, and a checkpoint that
failed for lack of space left its temporary file behind, holding on to the space.

Needs root (to mount the tmpfs), as CI has; Quill only (it starts servers of its own).
"""

import subprocess
import time

import pymysql
import pytest

from conftest import PrivateQuill, test_target

pytestmark = pytest.mark.skipif(test_target() != "quill", reason="starts quill servers of its own")

VOLUME_BYTES = 64 << 20
ROW_BYTES = 8_000
ER_RECORD_FILE_FULL = 1114
ER_DISK_FULL = 1021


@pytest.fixture
def small_volume(tmp_path):
    mountpoint = tmp_path / "volume"
    mountpoint.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={VOLUME_BYTES}", "tmpfs", str(mountpoint)], check=True, capture_output=True)
    try:
        yield mountpoint
    finally:
        subprocess.run(["umount", "-l", str(mountpoint)], check=False)


def rows(quill) -> set[int]:
    with quill.connect("full").cursor() as cur:
        cur.execute("SELECT id FROM t")
        return {r[0] for r in cur.fetchall()}


def test_a_full_disk_fails_writes_not_the_server(small_volume):
    datadir = small_volume / "data"
    filler = small_volume / "filler"
    # Checkpoints run throughout (and fail once the disk is full).
    with PrivateQuill(datadir, "--quill-checkpoint-log-bytes=4194304", "--quill-checkpoint-interval-seconds=1") as quill:
        with quill.connect().cursor() as cur:
            cur.execute("CREATE DATABASE full")
            cur.execute("CREATE TABLE full.t (id INT PRIMARY KEY, pad LONGBLOB)")
        # Space to give back later.
        filler.write_bytes(b"\0" * (4 << 20))

        acknowledged, errors = set(), []
        conn = quill.connect("full")
        with conn.cursor() as cur:
            n = 0
            while len(errors) < 20 and n < 50_000:
                n += 1
                try:
                    cur.execute("INSERT INTO t VALUES (%s, REPEAT('x', %s))", (n, ROW_BYTES))
                    acknowledged.add(n)
                except pymysql.err.OperationalError as e:
                    errors.append(e.args[0])
                    time.sleep(0.02)
            assert errors and set(errors) <= {ER_RECORD_FILE_FULL, ER_DISK_FULL}, errors[:5]
            assert len(acknowledged) > 100, "commits went through until the disk was full"
            # The server is up, reads work, and the failed writes left nothing behind.
            cur.execute("SELECT COUNT(*) FROM t")
            assert cur.fetchone()[0] == len(acknowledged)
            with pytest.raises(pymysql.err.OperationalError) as e:
                cur.execute("CREATE TABLE t2 (id INT PRIMARY KEY, pad LONGBLOB) SELECT 1 AS id, REPEAT('y', 20000000) AS pad")
            assert e.value.args[0] in (ER_RECORD_FILE_FULL, ER_DISK_FULL)
        assert quill.alive()
        assert rows(quill) == acknowledged
        assert "no room for a new segment" in quill.log()

        # Space returns: writes resume by themselves.
        filler.unlink()
        deadline = time.monotonic() + 15
        resumed = False
        with conn.cursor() as cur:
            while time.monotonic() < deadline and not resumed:
                try:
                    cur.execute("INSERT INTO t VALUES (%s, 'after')", (n + 1,))
                    acknowledged.add(n + 1)
                    resumed = True
                except pymysql.err.OperationalError as e:
                    assert e.args[0] in (ER_RECORD_FILE_FULL, ER_DISK_FULL)
                    time.sleep(0.2)
        assert resumed, "writes did not resume after space was freed"
        assert rows(quill) == acknowledged
        conn.close()

    # After a restart every acknowledged commit is there, and no checkpoint leftovers hold space.
    with PrivateQuill(datadir) as quill:
        assert rows(quill) == acknowledged
        leftovers = [p.name for p in datadir.iterdir() if p.name.endswith(".tmp")]
        assert not leftovers, leftovers
