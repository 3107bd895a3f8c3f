"""Run the isolation scenarios against a server and record what every step did.

Each session is a real connection (PyMySQL) driven from its own thread. The runner
sends one step at a time: it waits until the step has finished, or until the server
shows that session waiting for a lock (``information_schema.INNODB_TRX`` has its
connection in ``LOCK WAIT``), and then goes on, so a blocked step completes later, when
another session releases what it waits for. A step sent to a session that is still
blocked queues behind it, as a client's next statement would. Every step's outcome is
recorded: whether it blocked, and its result (rows, affected count, or error code).

    python3 tests/isolation/runner.py --port 3306 --record tests/isolation/expected-mariadb.json
    python3 tests/isolation/runner.py --port 3307 --compare tests/isolation/expected-mariadb.json

``--record`` writes the outcomes (this is how MariaDB's observed outcomes become the
expected ones: ``tests/isolation/record-mariadb``); ``--compare`` checks them against a
recorded file and prints a table of scenario by level, exiting non-zero on a difference.
Where MySQL 8 answers differently from MariaDB (a scenario's ``mysql8``), Quill is held
to MySQL 8's answer. ``tests/test_isolation.py`` runs the comparison in CI.
"""

from __future__ import annotations

import argparse
import json
import queue
import sys
import threading
import time
import uuid
from pathlib import Path

import pymysql

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scenarios import LEVELS, SCENARIOS, Scenario  # noqa: E402

# How long a step may take to finish or to show up as waiting before the run fails.
STEP_SETTLE_TIMEOUT_S = 10.0
# Lock waits in scenarios end this fast (innodb_lock_wait_timeout of each session).
SESSION_LOCK_WAIT_TIMEOUT_S = 3
# How long the end of a scenario waits for blocked steps to finish.
DRAIN_TIMEOUT_S = SESSION_LOCK_WAIT_TIMEOUT_S + 5.0
POLL_INTERVAL_S = 0.003
# MariaDB refreshes its INNODB_TRX cache only after 0.1 s without a read of it, so the
# runner reads it no more often than this.
LOCK_WAIT_POLL_INTERVAL_S = 0.12


def normalize(value):
    if isinstance(value, (bytes, bytearray)):
        return value.decode()
    if isinstance(value, (int, str)) or value is None:
        return value
    return str(value)


class Session:
    """One client connection and the thread that runs its statements in order."""

    def __init__(self, host: str, port: int, db: str, level: str, options: tuple[str, ...]):
        self.conn = pymysql.connect(host=host, port=port, user="root", password="", database=db, autocommit=True)
        self.connection_id = self.conn.thread_id()
        with self.conn.cursor() as cur:
            cur.execute(f"set session innodb_lock_wait_timeout = {SESSION_LOCK_WAIT_TIMEOUT_S}")
            cur.execute(f"set session transaction isolation level {level}")
            for sql in options:
                cur.execute(sql)
        self.inbox: queue.Queue = queue.Queue()
        self.pending = 0
        self.lock = threading.Lock()
        self.results: dict[int, list] = {}
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def send(self, step: int, sql: str) -> None:
        with self.lock:
            self.pending += 1
        self.inbox.put((step, sql))

    def busy(self) -> bool:
        with self.lock:
            return self.pending > 0

    def _loop(self) -> None:
        while True:
            item = self.inbox.get()
            if item is None:
                return
            step, sql = item
            try:
                with self.conn.cursor() as cur:
                    affected = cur.execute(sql)
                    result = ["rows", [[normalize(v) for v in row] for row in cur.fetchall()]] if cur.description else ["ok", affected]
            except pymysql.err.MySQLError as e:
                result = ["error", e.args[0]]
            with self.lock:
                self.results[step] = result
                self.pending -= 1

    def close(self) -> None:
        self.inbox.put(None)
        self.thread.join(timeout=DRAIN_TIMEOUT_S)
        try:
            self.conn.close()
        except Exception:
            pass


def lock_waiters(monitor) -> set[int]:
    with monitor.cursor() as cur:
        cur.execute("select trx_mysql_thread_id from information_schema.innodb_trx where trx_state = 'LOCK WAIT'")
        return {int(r[0]) for r in cur.fetchall()}


def settle(monitor, s: Session, what: str) -> bool:
    """Wait until the session's statements finish (False) or it waits for a lock (True)."""
    deadline = time.monotonic() + STEP_SETTLE_TIMEOUT_S
    next_look = time.monotonic() + POLL_INTERVAL_S * 3
    while True:
        if not s.busy():
            return False
        if time.monotonic() >= next_look:
            next_look = time.monotonic() + LOCK_WAIT_POLL_INTERVAL_S
            if s.connection_id in lock_waiters(monitor) and s.busy():
                return True
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} neither finished nor waits for a lock")
        time.sleep(POLL_INTERVAL_S)


def run_scenario(host: str, port: int, scenario: Scenario, level: str) -> list[dict]:
    """Run one scenario at one level; returns each step's outcome."""
    db = "iso_" + uuid.uuid4().hex[:10]
    admin = pymysql.connect(host=host, port=port, user="root", password="", autocommit=True)
    sessions: list[Session] = []
    try:
        with admin.cursor() as cur:
            cur.execute(f"create database {db}")
            cur.execute(f"use {db}")
            for sql in scenario.setup:
                cur.execute(sql)
        sessions = [Session(host, port, db, level, scenario.options) for _ in range(scenario.sessions)]
        blocked: dict[int, bool] = {}
        for step, (who, sql) in enumerate(scenario.steps):
            s = sessions[who - 1]
            # An earlier statement of this client may still be finishing (a lock it waited
            # for was granted a moment ago): it counts as blocked only while it waits.
            if s.busy() and settle(admin, s, f"{scenario.name} at {level}: step {step - 1}"):
                blocked[step] = True
                s.send(step, sql)
                continue
            s.send(step, sql)
            blocked[step] = settle(admin, s, f"{scenario.name} at {level}: step {step} ({sql!r})")
        deadline = time.monotonic() + DRAIN_TIMEOUT_S
        while any(s.busy() for s in sessions) and time.monotonic() < deadline:
            time.sleep(POLL_INTERVAL_S * 10)
        outcomes = []
        for step, (who, _) in enumerate(scenario.steps):
            result = sessions[who - 1].results.get(step, ["unfinished"])
            outcomes.append({"blocked": blocked.get(step, False), "result": result})
        return outcomes
    finally:
        for s in sessions:
            s.close()
        with admin.cursor() as cur:
            cur.execute(f"drop database if exists {db}")
        admin.close()


def run_all(host: str, port: int, names: set[str] | None = None) -> dict:
    out: dict = {}
    for scenario in SCENARIOS:
        if names and scenario.name not in names:
            continue
        out[scenario.name] = {level: run_scenario(host, port, scenario, level) for level in LEVELS}
    return out


def summary(outcomes: list[dict]) -> str:
    """A cell of the table: which steps blocked and which failed, by step number."""
    parts = []
    for i, o in enumerate(outcomes):
        marks = ""
        if o["blocked"]:
            marks += "wait"
        if o["result"][0] == "error":
            marks += f"{'→' if marks else ''}{o['result'][1]}"
        elif o["result"][0] == "unfinished":
            marks += "→unfinished"
        if marks:
            parts.append(f"{i}:{marks}")
    return " ".join(parts) or "no waits or errors"


def expected_for_mysql8(expected: dict) -> dict:
    """MariaDB's outcomes, with the steps where MySQL 8 (and Quill) differ replaced."""
    out = json.loads(json.dumps(expected))
    for scenario in SCENARIOS:
        for key, (replacement, _why) in scenario.mysql8.items():
            if isinstance(key, tuple):
                level, step = key
                if level in out.get(scenario.name, {}):
                    out[scenario.name][level][step] = replacement
                continue
            for outcomes in out.get(scenario.name, {}).values():
                outcomes[key]["result"] = replacement
    return out


def differences(expected: dict, actual: dict) -> list[str]:
    out = []
    for name, levels in actual.items():
        for level, outcomes in levels.items():
            want = expected.get(name, {}).get(level)
            if want is None:
                out.append(f"{name} at {level}: nothing recorded")
                continue
            for i, (w, a) in enumerate(zip(want, outcomes)):
                if w != a:
                    step = next(s for s in SCENARIOS if s.name == name).steps[i]
                    out.append(f"{name} at {level}, step {i} (session {step[0]}: {step[1]}): expected {w}, got {a}")
            if len(want) != len(outcomes):
                out.append(f"{name} at {level}: {len(want)} steps recorded, {len(outcomes)} run")
    return out


def table(expected: dict, actual: dict | None) -> str:
    lines = ["| scenario | " + " | ".join(LEVELS) + " |", "|---|" + "---|" * len(LEVELS)]
    for name, levels in expected.items():
        cells = []
        for level in LEVELS:
            cell = summary(levels[level])
            if actual is not None and name in actual:
                cell += " ✓" if actual[name][level] == levels[level] else f" ✗ (Quill: {summary(actual[name][level])})"
            cells.append(cell)
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--record", type=Path, help="write the outcomes here")
    p.add_argument("--compare", type=Path, help="compare with outcomes recorded here")
    p.add_argument("--only", help="comma-separated scenario names")
    p.add_argument("--mariadb", action="store_true", help="with --compare: the server is MariaDB (no MySQL 8 differences applied)")
    args = p.parse_args()
    names = set(args.only.split(",")) if args.only else None
    actual = run_all(args.host, args.port, names)
    if args.record:
        args.record.write_text(json.dumps(actual, indent=1) + "\n")
        print(table(actual, None))
    if args.compare:
        expected = json.loads(args.compare.read_text())
        if not args.mariadb:
            expected = expected_for_mysql8(expected)
        print(table({k: v for k, v in expected.items() if k in actual}, actual))
        diff = differences(expected, actual)
        for d in diff:
            print(d)
        return 1 if diff else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
