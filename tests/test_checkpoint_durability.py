"""A checkpoint never runs ahead of the durable log (issue 36), shown with the release binary.

An older build took a checkpoint's position from the log's appended end, not its durable
end, and on start-up resumed appending at the recovered end of the log even below the
checkpoint's position. Three outcomes followed, each reproduced here and shown gone:

1. Flush mode 0, a small checkpoint trigger, 30 autocommit INSERTs, a checkpoint, kill -9:
   the rows came back, but SHOW BINARY LOGS and SHOW MASTER STATUS gave 1220 and every
   binary log dump 1236, for good. Now the binary log reads from its first file to its end.
2. The same with a large transaction left open (9,000 rows, streamed into the log) when the
   checkpoint is taken; restarted in mode 1, 20 acknowledged autocommit INSERTs, then kill -9
   or a clean stop: all 20 were gone. Now they are there.
3. In that run GTIDs went back (`@@gtid_executed` from 1-53 to 1-33) and were handed out
   again, and the binary log disagreed with the tables. Now they only go forward, once each.

The power-loss variant runs the server under strace and, after the kill, overwrites with
zeros every range written to a log segment after that segment's last fdatasync (segments are
pre-zeroed, so a lost write leaves zeros), as a machine losing power would leave the disk;
in mode 2, where a kill alone loses nothing.
"""

import os
import re
import signal
import subprocess
from pathlib import Path

import pytest
from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.event import GtidEvent
from pymysqlreplication.row_event import WriteRowsEvent

from conftest import REPO_ROOT, PrivateQuill, test_target

pytestmark = pytest.mark.skipif(test_target() != "quill", reason="kills and restarts the quill binary")

CHECKPOINT_OPTIONS = ("--quill-checkpoint-log-bytes=4096",)
# The ids of the large transaction's rows: 9,000 of them, more than a statement leaves
# unlogged (8,192), so they stream into the log before the transaction commits.
STREAM_IDS_FROM = 100_000
# 30 rows of this fill more than the checkpoint trigger's 4 KiB of log.
PAD = "p" * 150


def digits(name, last=9):
    return "(" + " UNION ALL ".join(f"SELECT {d} n" for d in range(last + 1)) + f") {name}"


STREAM_INSERT = (
    f"INSERT INTO d.t SELECT {STREAM_IDS_FROM} + a.n * 1000 + b.n * 100 + c.n * 10 + e.n, 'stream' "
    f"FROM {digits('a', 8)}, {digits('b')}, {digits('c')}, {digits('e')}"
)


def status(server, name):
    return int(server.run(f"SHOW GLOBAL STATUS LIKE '{name}'")[0][1])


def wait_for_checkpoint_past_commits(server, target=None, timeout_s=30.0):
    """Waits until a checkpoint covers every commit so far, or the log up to `target` (the
    checkpointer runs once the log grew by 4 KiB)."""
    import time

    deadline = time.monotonic() + timeout_s
    target = target or status(server, "Quill_log_commit_lsn")
    while status(server, "Quill_checkpoint_lsn") < target:
        assert time.monotonic() < deadline, f"no checkpoint reached LSN {target}: {server.log()[-2000:]}"
        time.sleep(0.1)


def gtid_last(server):
    """N of this server's `uuid:1-N` in @@gtid_executed (0 for none)."""
    executed = server.run("SELECT @@gtid_executed")[0][0]
    match = re.search(r":(?:\d+-)?(\d+)$", executed.strip())
    return int(match.group(1)) if match else 0


def binary_log(server):
    """Every GTID and inserted id of `d.t` in the binary log, read from its first file to its
    end as a change-capture reader would; fails on any read error."""
    first_file = server.run("SHOW BINARY LOGS")[0][0]
    server.run("SHOW MASTER STATUS")
    settings = {"host": server.host, "port": server.port, "user": "root", "password": ""}
    reader = BinLogStreamReader(
        connection_settings=settings, server_id=100, blocking=False, log_file=first_file, log_pos=4, resume_stream=True,
        only_events=[GtidEvent, WriteRowsEvent],
    )
    gnos, ids = [], []
    try:
        for event in reader:
            if isinstance(event, GtidEvent):
                gnos.append(int(event.gtid.split(":")[1]))
            elif event.table == "t":
                ids.extend(row["values"]["id"] for row in event.rows)
    finally:
        reader.close()
    return gnos, ids


def check_binary_log(server):
    gnos, ids = binary_log(server)
    last = gtid_last(server)
    assert gnos == list(range(last - len(gnos) + 1, last + 1)), f"GTIDs unique, gap-free, ending at {last}: {gnos}"
    table_ids = {row[0] for row in server.run("SELECT id FROM d.t")}
    assert all(i < STREAM_IDS_FROM for i in ids), "nothing of the transaction that never committed"
    assert set(ids) <= table_ids, "the binary log's rows are in the table"
    assert len(ids) == len(set(ids)), "each row inserted once"
    return gnos, ids


def setup(server):
    server.run("CREATE DATABASE d", "CREATE TABLE d.t (id INT PRIMARY KEY, v VARCHAR(200))")


def test_a_checkpoint_in_mode_0_then_kill_9_keeps_the_rows_and_a_readable_binary_log(tmp_path):
    with PrivateQuill(tmp_path / "data", "--innodb-flush-log-at-trx-commit=0", *CHECKPOINT_OPTIONS) as server:
        setup(server)
        for i in range(30):
            server.run(f"INSERT INTO d.t VALUES ({i}, '{PAD}')")
            if i == 9:
                covered = status(server, "Quill_log_commit_lsn")
        wait_for_checkpoint_past_commits(server, covered)
        server.kill()
        server.start()
        # Mode 0 may lose the last second of commits, as a prefix; the checkpoint covers ten.
        rows = [row[0] for row in server.run("SELECT id FROM d.t ORDER BY id")]
        assert rows == list(range(len(rows))) and len(rows) >= 10, rows
        # CREATE DATABASE, CREATE TABLE, then one GTID per row: no more, no fewer.
        assert gtid_last(server) == 2 + len(rows), "@@gtid_executed names exactly the transactions recovered"
        check_binary_log(server)
        restarted = gtid_last(server)
        # The binary log streams what is durable: in mode 0 that is a second later.
        server.run("SET GLOBAL innodb_flush_log_at_trx_commit = 1")
        server.run("INSERT INTO d.t VALUES (100, 'after')")
        assert gtid_last(server) == restarted + 1, "the next GTID is new"
        gnos, _ = check_binary_log(server)
        assert gnos[-1] == restarted + 1


def streamed_checkpoint_then_commits(server, crash, restart):
    """Outcome 2's sequence: a checkpoint taken while a 9,000-row transaction streams into the
    log, a `crash`, 20 acknowledged commits in mode 1, `restart` (a crash or a clean stop)."""
    setup(server)
    big = server.connect(autocommit=False)
    with big.cursor() as c:
        c.execute(STREAM_INSERT)
    assert status(server, "Quill_log_stream_parts") > 0, "the open transaction streamed into the log"
    server.run(f"INSERT INTO d.t VALUES (1001, '{PAD}')")
    past_stream = status(server, "Quill_log_commit_lsn")
    for i in range(1002, 1031):
        server.run(f"INSERT INTO d.t VALUES ({i}, '{PAD}')")
    wait_for_checkpoint_past_commits(server, past_stream)
    crash(server)
    server.options = [o for o in server.options if "flush-log-at-trx-commit" not in o] + ["--innodb-flush-log-at-trx-commit=1"]
    server.start()
    # Mode 0 may lose the last second of commits, as a prefix; the checkpoint covers 1001.
    kept = [row[0] for row in server.run("SELECT id FROM d.t WHERE id BETWEEN 1001 AND 1030 ORDER BY id")]
    assert kept == list(range(1001, 1001 + len(kept))) and kept, kept
    # CREATE DATABASE, CREATE TABLE, then one GTID per row: no more, no fewer.
    assert gtid_last(server) == 2 + len(kept), "@@gtid_executed names exactly the transactions recovered"
    acknowledged = []
    for i in range(2001, 2021):
        server.run(f"INSERT INTO d.t VALUES ({i}, 'acknowledged')")
        acknowledged.append(i)
    after_commits = gtid_last(server)
    restart(server)
    server.start()
    present = [row[0] for row in server.run("SELECT id FROM d.t WHERE id BETWEEN 2001 AND 2020 ORDER BY id")]
    assert present == acknowledged, "every acknowledged mode-1 commit survives"
    assert server.run(f"SELECT COUNT(*) FROM d.t WHERE id >= {STREAM_IDS_FROM}")[0][0] == 0, "the open transaction left nothing"
    assert gtid_last(server) == after_commits
    gnos, ids = check_binary_log(server)
    assert set(acknowledged) <= set(ids), "the binary log holds the acknowledged rows"
    server.run("INSERT INTO d.t VALUES (3000, 'next')")
    assert gtid_last(server) == after_commits + 1, "the next GTID is new"
    gnos, _ = check_binary_log(server)
    assert gnos.count(after_commits + 1) == 1


@pytest.mark.parametrize("restart", ["kill", "stop"])
def test_acknowledged_commits_after_a_checkpoint_taken_while_a_stream_was_open_survive(tmp_path, restart):
    with PrivateQuill(tmp_path / "data", "--innodb-flush-log-at-trx-commit=0", *CHECKPOINT_OPTIONS) as server:
        streamed_checkpoint_then_commits(server, PrivateQuill.kill, PrivateQuill.kill if restart == "kill" else PrivateQuill.stop)


class TracedQuill(PrivateQuill):
    """A server run under strace, which records every pwrite64 and fdatasync with the file's
    path, so a power loss can be modelled after a kill: see `lose_unsynced_writes`."""

    def start(self):
        self.trace = self.datadir.parent / f"{self.datadir.name}.strace"
        binary = Path(os.environ.get("QUILL_BIN", REPO_ROOT / "target" / "release" / "quill"))
        log = open(self.log_path, "ab")
        command = [str(binary), "serve", f"--port={self.port}", f"--bind={self.bind}", f"--datadir={self.datadir}", *self.options]
        self.process = subprocess.Popen(
            ["strace", "-f", "-qq", "-y", "-s", "0", "-e", "trace=pwrite64,fdatasync", "-e", "signal=none", "-o", str(self.trace), *command],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=self.env,
        )
        from conftest import wait_for_port

        wait_for_port(self.host, self.port, self.process, self.log_path)
        return self

    def signal_server(self, sig):
        """`sig` to the server itself (strace's child), then waits for strace to end. A signal
        to strace alone would detach it and leave the server running."""
        for pid in os.listdir("/proc"):
            if pid.isdigit():
                try:
                    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                if int(fields[1]) == self.process.pid:
                    os.kill(int(pid), sig)
        self.process.wait(timeout=30)

    def kill(self):
        self.signal_server(signal.SIGKILL)

    def stop(self):
        if self.process is not None and self.process.poll() is None:
            self.signal_server(signal.SIGTERM)

    def lose_unsynced_writes(self):
        """Overwrites with zeros each range written to a log segment after the segment's
        last completed fdatasync: what a power loss at the kill could leave."""
        unsynced = {}
        pending_sync = {}
        call = re.compile(r"^(\d+) (pwrite64|fdatasync)\(\d+<([^>]+)>(.*)$")
        resumed = re.compile(r"^(\d+) <\.\.\. fdatasync resumed>.*= 0")
        for line in self.trace.read_text(errors="replace").splitlines():
            m = call.match(line)
            if m:
                pid, name, path, rest = m.groups()
                if not path.endswith(".qlog"):
                    continue
                if name == "pwrite64":
                    args = re.match(r', ""\.\.\., (\d+), (\d+)', rest) or re.match(r', "", (\d+), (\d+)', rest)
                    if args:
                        unsynced.setdefault(path, []).append((int(args.group(2)), int(args.group(1))))
                elif rest.endswith("= 0"):
                    unsynced.pop(path, None)
                else:
                    pending_sync[pid] = (path, len(unsynced.get(path, [])))
                continue
            m = resumed.match(line)
            if m and m.group(1) in pending_sync:
                path, count = pending_sync.pop(m.group(1))
                unsynced[path] = unsynced.get(path, [])[count:]
        lost = 0
        for path, ranges in unsynced.items():
            if not os.path.exists(path):
                continue
            with open(path, "r+b") as f:
                for offset, length in ranges:
                    f.seek(offset)
                    f.write(b"\0" * length)
                    lost += length
        return lost


def power_loss(server):
    server.kill()
    server.lose_unsynced_writes()


@pytest.mark.skipif(subprocess.run(["which", "strace"], capture_output=True).returncode != 0, reason="needs strace")
def test_a_power_loss_in_mode_2_keeps_what_the_checkpoint_covers_and_every_acknowledged_commit(tmp_path):
    with TracedQuill(tmp_path / "data", "--innodb-flush-log-at-trx-commit=2", *CHECKPOINT_OPTIONS) as server:
        streamed_checkpoint_then_commits(server, power_loss, power_loss)
