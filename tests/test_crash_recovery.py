"""Crash recovery of the real server: SIGKILL under load, restart, check the ledger.

Each round starts `quill serve` on the same data directory, lets several clients commit
transactions as fast as they can, and kills the server with SIGKILL at a moment that varies
by round. Each transaction inserts one ledger row (client, seq) and sets that client's
counter row to seq, so the two must agree after any crash. Each client records the
transactions the server acknowledged. After the restart:

- flush mode 1 (durable at commit) and 2 (written to the OS at commit; a process crash
  keeps what the OS has): every acknowledged transaction is present;
- flush mode 0: each client's transactions form a prefix, which may be missing the last
  second or so;
- always: nothing is half-present (the counter row agrees with the ledger), and the
  secondary index finds exactly the rows the primary key holds.

The rounds share one data directory, so each recovery also replays what earlier recoveries
cut and continued from. A small checkpoint trigger makes checkpoints run throughout, so the
kills also land during a checkpoint and recovery starts from one.
"""

import os
import random
import signal
import subprocess
import threading
import time

import pymysql
import pytest

from conftest import REPO_ROOT, free_port, test_target, wait_for_port

pytestmark = pytest.mark.skipif(test_target() != "quill", reason="kills and restarts the quill binary")

QUILL_BIN = os.environ.get("QUILL_BIN", str(REPO_ROOT / "target" / "release" / "quill"))
CLIENTS = 6
ROUNDS = 8


class Server:
    def __init__(self, datadir, flush_mode, options=()):
        self.datadir, self.flush_mode, self.options = datadir, flush_mode, list(options)
        self.port = free_port()
        self.log_path = datadir.parent / f"{datadir.name}.log"
        self.process = None

    def start(self):
        log = open(self.log_path, "ab")
        self.process = subprocess.Popen(
            # A small checkpoint trigger: the kills also land during and between checkpoints.
            [QUILL_BIN, "serve", f"--port={self.port}", f"--datadir={self.datadir}", f"--innodb-flush-log-at-trx-commit={self.flush_mode}",
             "--quill-checkpoint-log-bytes=65536", *self.options],
            stdout=log, stderr=log,
        )
        wait_for_port("127.0.0.1", self.port, self.process, self.log_path)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def kill(self):
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)

    def connect(self, **options):
        options.setdefault("database", "crash")
        return pymysql.connect(host="127.0.0.1", port=self.port, user="root", password="", autocommit=True, **options)


def client(server, number, first_seq, acknowledged, stop):
    """Commits transactions until the server dies or `stop` is set; records each OK."""
    try:
        conn = server.connect(connect_timeout=5, read_timeout=10, write_timeout=10)
    except pymysql.err.OperationalError:
        return
    seq = first_seq
    with conn.cursor() as cur:
        while not stop.is_set():
            try:
                cur.execute("BEGIN")
                cur.execute("INSERT INTO ledger (client, seq, tag) VALUES (%s, %s, %s)", (number, seq, f"t{seq % 3}"))
                cur.execute("UPDATE counters SET seq = %s WHERE client = %s", (seq, number))
                cur.execute("COMMIT")
            except (pymysql.err.OperationalError, pymysql.err.InterfaceError):
                return  # the server is gone: this transaction was not acknowledged
            acknowledged.append(seq)
            seq += 1


def check(server, acknowledged, expect_all):
    conn = server.connect()
    with conn.cursor() as cur:
        for number in range(CLIENTS):
            cur.execute("SELECT seq FROM ledger WHERE client = %s ORDER BY seq", (number,))
            present = [row[0] for row in cur.fetchall()]
            assert present == list(range(len(present))), f"client {number}: ledger is not a prefix: {present[-5:]}"
            cur.execute("SELECT seq FROM counters WHERE client = %s", (number,))
            assert cur.fetchone()[0] == len(present) - 1, f"client {number}: counter and ledger disagree (a half-present transaction)"
            if expect_all:
                lost = sorted(set(acknowledged[number]) - set(present))
                assert not lost, f"client {number}: acknowledged but lost after SIGKILL: {lost[:10]}"
        for tag in ("t0", "t1", "t2"):
            cur.execute("SELECT COUNT(*) FROM ledger WHERE tag = %s", (tag,))
            by_index = cur.fetchone()[0]
            cur.execute("SELECT COUNT(*) FROM ledger IGNORE INDEX (by_tag) WHERE CONCAT(tag) = %s", (tag,))
            by_scan = cur.fetchone()[0]
            assert by_index == by_scan, f"secondary index finds {by_index} rows tagged {tag}, the table has {by_scan}"
        cur.execute("SELECT client, MAX(seq) + 1 FROM ledger GROUP BY client")
        return dict(cur.fetchall())
    conn.close()


@pytest.mark.parametrize("flush_mode", [1, 2, 0])
def test_sigkill_under_load_loses_nothing_acknowledged(tmp_path, flush_mode):
    rng = random.Random(flush_mode)
    with Server(tmp_path / f"data-{flush_mode}", flush_mode) as server:
        with server.connect(database=None).cursor() as cur:
            # The set-up is made durable whatever the mode under test (mode 0 could lose it).
            cur.execute("SET GLOBAL innodb_flush_log_at_trx_commit = 1")
            cur.execute("CREATE DATABASE crash")
            cur.execute("CREATE TABLE crash.ledger (client INT, seq INT, tag VARCHAR(8), PRIMARY KEY (client, seq), KEY by_tag (tag))")
            cur.execute("CREATE TABLE crash.counters (client INT PRIMARY KEY, seq INT NOT NULL)")
            cur.execute("INSERT INTO crash.counters VALUES " + ", ".join(f"({n}, -1)" for n in range(CLIENTS)))
            cur.execute("SET GLOBAL innodb_flush_log_at_trx_commit = %s", (flush_mode,))
        next_seq = {n: 0 for n in range(CLIENTS)}
        acknowledged = {n: [] for n in range(CLIENTS)}
        for _ in range(ROUNDS):
            stop = threading.Event()
            threads = [threading.Thread(target=client, args=(server, n, next_seq[n], acknowledged[n], stop)) for n in range(CLIENTS)]
            for t in threads:
                t.start()
            time.sleep(rng.uniform(0.2, 0.8))
            server.kill()
            stop.set()
            for t in threads:
                t.join(timeout=30)
            assert sum(len(a) for a in acknowledged.values()) > 0, "clients committed something before the kill"
            server.start()
            present = check(server, acknowledged, expect_all=flush_mode in (1, 2))
            next_seq = {n: present.get(n, 0) for n in range(CLIENTS)}
            # In mode 0 lost transactions are forgotten: the ledger continues from what survived.
            for n in range(CLIENTS):
                acknowledged[n] = [s for s in acknowledged[n] if s < next_seq[n]]
    log = server.log_path.read_text(errors="replace")
    assert "recovery: loaded the checkpoint and replayed the commit log" in log
    assert "checkpoint written" in log, "checkpoints ran between the kills"
