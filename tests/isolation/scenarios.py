"""Isolation scenarios: two and three sessions interleaving statements on a small table.

Most follow Hermitage's test set (dirty write, aborted and intermediate reads, circular
information flow, observed transaction vanishes, predicate-many-preceders, lost update,
read skew, write skew, anti-dependency cycles); the rest pin down InnoDB's locking: which
statement blocks (record, gap and next-key locks, shared versus exclusive, fair queues)
and which transaction a deadlock rolls back.

A scenario is a setup (run before the sessions start) and a list of steps
``(session, sql)``; sessions are numbered from 1. Every session runs at the level under
test (``SET SESSION TRANSACTION ISOLATION LEVEL``) with ``autocommit`` on, so ``begin``
and ``commit`` are explicit, as in Hermitage. ``options`` adds session settings.
"""

from __future__ import annotations

from dataclasses import dataclass, field

LEVELS = ("READ UNCOMMITTED", "READ COMMITTED", "REPEATABLE READ", "SERIALIZABLE")

BASE_SETUP = (
    "create table test (id int primary key, value int)",
    "insert into test (id, value) values (1, 10), (2, 20)",
)


@dataclass
class Scenario:
    name: str
    what: str
    steps: list[tuple[int, str]]
    setup: tuple[str, ...] = BASE_SETUP
    options: tuple[str, ...] = field(default_factory=tuple)
    # Steps where MySQL 8, which Quill follows, answers differently from MariaDB: step
    # number -> (Quill's result, why) at every level; or (level, step number) -> (Quill's
    # whole outcome, {"blocked": ..., "result": ...}, why) at one level.
    mysql8: dict = field(default_factory=dict)

    @property
    def sessions(self) -> int:
        return max(s for s, _ in self.steps)


S = Scenario

WEIGHT_VICTIM = ("At SERIALIZABLE session 1's read holds shared locks on every row; its FOR UPDATE then closes a cycle with session 3's UPDATE, which holds nothing. MySQL 8 rolls back the lighter transaction by InnoDB's weight (rows modified plus locks), the UPDATE; MariaDB 10.11 rolls back the requester. Row 2 keeps value 20, so session 2's insert waits for session 1's lock on it and then finds the duplicate.")

SCENARIOS: list[Scenario] = [
    S("G0", "dirty write: a write waits for the uncommitted write of the same row", [
        (1, "begin"), (2, "begin"),
        (1, "update test set value = 11 where id = 1"),
        (2, "update test set value = 12 where id = 1"),
        (1, "update test set value = 21 where id = 2"),
        (1, "commit"),
        (1, "select * from test"),
        (2, "update test set value = 22 where id = 2"),
        (2, "commit"),
        (1, "select * from test"),
    ]),
    S("G1a", "aborted read: a rolled-back write is never seen", [
        (1, "begin"), (2, "begin"),
        (1, "update test set value = 101 where id = 1"),
        (2, "select * from test"),
        (1, "rollback"),
        (2, "select * from test"),
        (2, "commit"),
    ]),
    S("G1b", "intermediate read: a transaction's non-final write is never seen", [
        (1, "begin"), (2, "begin"),
        (1, "update test set value = 101 where id = 1"),
        (2, "select * from test"),
        (1, "update test set value = 11 where id = 1"),
        (1, "commit"),
        (2, "select * from test"),
        (2, "commit"),
    ]),
    S("G1c", "circular information flow", [
        (1, "begin"), (2, "begin"),
        (1, "update test set value = 11 where id = 1"),
        (2, "update test set value = 22 where id = 2"),
        (1, "select * from test where id = 2"),
        (2, "select * from test where id = 1"),
        (1, "commit"),
        (2, "commit"),
    ]),
    S("OTV", "observed transaction vanishes (three sessions)", [
        (1, "begin"), (2, "begin"), (3, "begin"),
        (1, "update test set value = 11 where id = 1"),
        (1, "update test set value = 19 where id = 2"),
        (2, "update test set value = 12 where id = 1"),
        (1, "commit"),
        (3, "select * from test where id = 1"),
        (2, "update test set value = 18 where id = 2"),
        (3, "select * from test where id = 2"),
        (2, "commit"),
        (3, "select * from test where id = 2"),
        (3, "select * from test where id = 1"),
        (3, "commit"),
    ]),
    S("PMP", "predicate-many-preceders: a predicate read and a concurrent insert", [
        (1, "begin"), (2, "begin"),
        (1, "select * from test where value = 30"),
        (2, "insert into test (id, value) values (3, 30)"),
        (2, "commit"),
        (1, "select * from test where value % 3 = 0"),
        (1, "commit"),
    ]),
    S("PMP-write", "predicate-many-preceders with a predicate write", [
        (1, "begin"), (2, "begin"),
        (1, "update test set value = value + 10"),
        (2, "delete from test where value = 20"),
        (1, "commit"),
        (2, "select * from test"),
        (2, "commit"),
    ]),
    S("P4", "lost update: read, then write the same row from both", [
        (1, "begin"), (2, "begin"),
        (1, "select * from test where id = 1"),
        (2, "select * from test where id = 1"),
        (1, "update test set value = 11 where id = 1"),
        (2, "update test set value = 11 where id = 1"),
        (1, "commit"),
        (2, "commit"),
    ]),
    S("P4-strict", "lost update with strict snapshot isolation: the second writer fails", [
        (1, "begin"), (2, "begin"),
        (1, "select * from test where id = 1"),
        (2, "select * from test where id = 1"),
        (1, "update test set value = 11 where id = 1"),
        (2, "update test set value = 12 where id = 1"),
        (1, "commit"),
        (2, "commit"),
        (1, "select * from test where id = 1"),
    ], options=("set session innodb_snapshot_isolation = ON",)),
    S("G-single", "read skew", [
        (1, "begin"), (2, "begin"),
        (1, "select * from test where id = 1"),
        (2, "select * from test where id = 1"),
        (2, "select * from test where id = 2"),
        (2, "update test set value = 12 where id = 1"),
        (2, "update test set value = 18 where id = 2"),
        (2, "commit"),
        (1, "select * from test where id = 2"),
        (1, "commit"),
    ]),
    S("G-single-write", "read skew with a predicate-dependent write", [
        (1, "begin"), (2, "begin"),
        (1, "select * from test where id = 1"),
        (2, "select * from test"),
        (2, "update test set value = 12 where id = 1"),
        (2, "update test set value = 18 where id = 2"),
        (2, "commit"),
        (1, "delete from test where value = 20"),
        (1, "select * from test"),
        (1, "commit"),
    ]),
    S("G2-item", "write skew", [
        (1, "begin"), (2, "begin"),
        (1, "select * from test where id in (1, 2)"),
        (2, "select * from test where id in (1, 2)"),
        (1, "update test set value = 11 where id = 1"),
        (2, "update test set value = 21 where id = 2"),
        (1, "commit"),
        (2, "commit"),
        (1, "select * from test"),
    ]),
    S("G2", "anti-dependency cycle over a predicate (phantoms)", [
        (1, "begin"), (2, "begin"),
        (1, "select * from test where value % 3 = 0"),
        (2, "select * from test where value % 3 = 0"),
        (1, "insert into test (id, value) values (3, 30)"),
        (2, "insert into test (id, value) values (4, 42)"),
        (1, "commit"),
        (2, "commit"),
        (1, "select * from test where value % 3 = 0"),
    ]),
    S("phantom-locking-read", "a locking range read sees no phantom: the insert into its range waits", [
        (1, "begin"), (2, "begin"),
        (1, "select * from test where id between 1 and 5 for update"),
        (2, "insert into test (id, value) values (3, 30)"),
        (1, "select * from test where id between 1 and 5 for update"),
        (1, "commit"),
        (2, "commit"),
        (1, "select * from test"),
    ]),
    S("gap-beyond-range", "next-key locking: the gap after a range's last row is locked too", [
        (1, "begin"), (2, "begin"),
        (1, "select * from test where id <= 1 for update"),
        (2, "insert into test (id, value) values (0, 0)"),
        (2, "update test set value = 22 where id = 2"),
        (2, "insert into test (id, value) values (5, 50)"),
        (1, "commit"),
        (2, "commit"),
    ], setup=(
        "create table test (id int primary key, value int)",
        "insert into test (id, value) values (1, 10), (2, 20), (4, 40)",
    )),
    S("unique-point", "a unique point lock does not lock gaps; a missing key locks its gap", [
        (1, "begin"), (2, "begin"),
        (1, "select * from test where id = 2 for update"),
        (2, "insert into test (id, value) values (3, 30)"),
        (1, "select * from test where id = 6 for update"),
        (2, "insert into test (id, value) values (7, 70)"),
        (2, "insert into test (id, value) values (12, 120)"),
        (1, "commit"),
        (2, "commit"),
    ], setup=(
        "create table test (id int primary key, value int)",
        "insert into test (id, value) values (2, 20), (4, 40), (8, 80), (10, 100)",
    )),
    S("secondary-index-gap", "a locking read through a secondary index locks that index's gap", [
        (1, "begin"), (2, "begin"),
        (1, "select id from test where value = 20 for update"),
        (2, "insert into test (id, value) values (5, 20)"),
        (2, "insert into test (id, value) values (6, 50)"),
        (1, "commit"),
        (2, "commit"),
    ], setup=(
        "create table test (id int primary key, value int, key (value))",
        "insert into test (id, value) values (1, 10), (2, 20), (3, 30)",
    )),
    S("share-share", "shared locks share; an exclusive request waits for both", [
        (1, "begin"), (2, "begin"),
        (1, "select * from test where id = 1 lock in share mode"),
        (2, "select * from test where id = 1 lock in share mode"),
        (2, "commit"),
        (2, "update test set value = 12 where id = 1"),
        (1, "commit"),
        (1, "select * from test where id = 1"),
    ]),
    S("fair-queue", "a shared request queues behind a waiting exclusive one (three sessions)", [
        (1, "begin"), (2, "begin"), (3, "begin"),
        (1, "select * from test where id = 1 lock in share mode"),
        (2, "select * from test where id = 1 for update"),
        (3, "select * from test where id = 1 lock in share mode"),
        (1, "commit"),
        (2, "update test set value = 12 where id = 1"),
        (2, "commit"),
        (3, "commit"),
    ]),
    S("nowait-skip-locked", "NOWAIT fails at once; SKIP LOCKED leaves locked rows out", [
        (1, "begin"), (2, "begin"),
        (1, "select * from test where id = 1 for update"),
        (2, "select * from test order by id for update skip locked"),
        (2, "select * from test where id = 1 for update nowait"),
        (1, "commit"),
        (2, "commit"),
    ], mysql8={4: (["error", 3572], "MySQL 8 reports NOWAIT with ER_LOCK_NOWAIT (3572); MariaDB with 1205")}),
    S("deadlock", "two transactions each wait for the other's row: one is rolled back", [
        (1, "begin"), (2, "begin"),
        (1, "update test set value = 11 where id = 1"),
        (2, "update test set value = 22 where id = 2"),
        (1, "update test set value = 12 where id = 2"),
        (2, "update test set value = 21 where id = 1"),
        (1, "commit"),
        (2, "commit"),
        (1, "select * from test"),
    ]),
    S("deadlock-lighter-victim", "the transaction that modified fewer rows is the victim", [
        (1, "begin"), (2, "begin"),
        (1, "select * from test where id = 1 for update"),
        (2, "update test set value = 22 where id = 2"),
        (2, "insert into test (id, value) values (3, 30)"),
        (1, "update test set value = 12 where id = 2"),
        (2, "update test set value = 21 where id = 1"),
        (1, "commit"),
        (2, "commit"),
        (1, "select * from test"),
    ]),
    S("deadlock-upgrade", "two shared holders both upgrading deadlock", [
        (1, "begin"), (2, "begin"),
        (1, "select * from test where id = 1 lock in share mode"),
        (2, "select * from test where id = 1 lock in share mode"),
        (1, "update test set value = 11 where id = 1"),
        (2, "update test set value = 12 where id = 1"),
        (1, "commit"),
        (2, "commit"),
        (1, "select * from test"),
    ]),
    S("insert-duplicate-waits", "an insert of a key another transaction is inserting waits, then fails or succeeds", [
        (1, "begin"), (2, "begin"), (3, "begin"),
        (1, "insert into test (id, value) values (3, 30)"),
        (2, "insert into test (id, value) values (3, 31)"),
        (3, "insert into test (id, value) values (4, 40)"),
        (1, "rollback"),
        (2, "commit"),
        (3, "insert into test (id, value) values (3, 32)"),
        (3, "commit"),
        (1, "select * from test"),
    ]),
    S("insert-select", "INSERT ... SELECT reads its source with shared locks at REPEATABLE READ and above", [
        (1, "begin"), (2, "begin"),
        (1, "update test set value = 11 where id = 1"),
        (2, "insert into copy select * from test"),
        (1, "commit"),
        (2, "commit"),
        (1, "select * from copy"),
    ], setup=BASE_SETUP + ("create table copy (id int primary key, value int)",)),
    S("unique-key-moved", "a unique key moved away while a snapshot keeps its old entry: its gap is still locked", [
        (1, "begin"), (2, "begin"),
        (1, "select * from test"),
        (3, "update test set value = 25 where id = 2"),
        (1, "select * from test where value = 20 for update"),
        (2, "insert into test (id, value) values (3, 20)"),
        (1, "select * from test where value = 20 for update"),
        (1, "commit"),
        (2, "commit"),
    ], setup=(
        "create table test (id int primary key, value int, unique key (value))",
        "insert into test (id, value) values (1, 10), (2, 20)",
    ), mysql8={
        ("SERIALIZABLE", 3): ({"blocked": True, "result": ["error", 1213]}, WEIGHT_VICTIM),
        ("SERIALIZABLE", 4): ({"blocked": False, "result": ["rows", [[2, 20]]]}, WEIGHT_VICTIM),
        ("SERIALIZABLE", 5): ({"blocked": True, "result": ["error", 1062]}, WEIGHT_VICTIM),
        ("SERIALIZABLE", 6): ({"blocked": False, "result": ["rows", [[2, 20]]]}, WEIGHT_VICTIM),
        ("SERIALIZABLE", 7): ({"blocked": False, "result": ["ok", 0]}, WEIGHT_VICTIM),
    }),
    S("autocommit-off", "with autocommit off a transaction starts at the first statement; SERIALIZABLE locks that read", [
        (1, "select * from test where id = 1"),
        (2, "select * from test where id = 1"),
        (1, "update test set value = 11 where id = 1"),
        (2, "update test set value = 12 where id = 1"),
        (1, "commit"),
        (2, "commit"),
        (1, "select * from test where id = 1"),
        (1, "commit"),
    ], options=("set autocommit = 0",)),
    S("unmatched-rows", "a locking read keeps the rows it scanned but did not return locked only at REPEATABLE READ and above", [
        (1, "begin"), (2, "begin"),
        (1, "select * from test where value = 10 for update"),
        (2, "update test set value = 22 where id = 2"),
        (1, "commit"),
        (2, "commit"),
    ]),
    S("consistent-snapshot", "START TRANSACTION WITH CONSISTENT SNAPSHOT reads as of its start", [
        (1, "start transaction with consistent snapshot"),
        (2, "update test set value = 11 where id = 1"),
        (1, "select * from test where id = 1"),
        (1, "select * from test where id = 1 for update"),
        (1, "commit"),
    ]),
    S("read-only", "a READ ONLY transaction may read and lock but not write", [
        (1, "start transaction read only"),
        (1, "select * from test where id = 1"),
        (1, "update test set value = 11 where id = 1"),
        (1, "commit"),
        (1, "select * from test where id = 1"),
    ]),
]
