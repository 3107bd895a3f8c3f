"""The randomized history checker (tests/history/checker.py) against the server: many
clients run short read/append transactions at each isolation level on a few hot keys,
and the recorded history must keep that level's promises. A lock wait that times out in
this workload of short transactions would be a deadlock nobody detected, so none may.

The checker is itself checked on hand-made histories with the anomalies it must find."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "history"))
import checker  # noqa: E402
from checker import Txn  # noqa: E402

CLIENTS = 8
TRANSACTIONS = 100
SEEDS = (1, 2)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("level", checker.LEVELS)
def test_history_keeps_the_level_promises(server, level, seed):
    history, final = checker.run(server.host, server.port, level, CLIENTS, TRANSACTIONS, seed)
    assert len(history) == CLIENTS * TRANSACTIONS
    assert sum(t.committed for t in history) > len(history) // 4
    assert checker.check(history, final, level) == []
    assert [t.id for t in history if t.error == 1205] == [], "a lock wait timed out: an undetected deadlock"


def txn(id, *ops, committed=True):
    return Txn(id=id, ops=list(ops), committed=committed)


def test_checker_finds_an_aborted_read():
    history = [txn(1, ("a", 0, 10), committed=False), txn(2, ("r", 0, [10]))]
    assert any("aborted" in e or "prefix" in e for e in checker.check(history, {0: []}, "READ COMMITTED"))
    assert checker.check(history, {0: []}, "READ UNCOMMITTED") == []


def test_checker_finds_an_intermediate_read():
    history = [txn(1, ("a", 0, 10), ("a", 0, 11)), txn(2, ("r", 0, [10]))]
    assert any("G1b" in e for e in checker.check(history, {0: [10, 11]}, "READ COMMITTED"))


def test_checker_finds_a_lost_or_dirty_write():
    history = [txn(1, ("a", 0, 10)), txn(2, ("a", 0, 20), committed=False)]
    assert any("missing" in e for e in checker.check(history, {0: []}, "READ UNCOMMITTED"))
    assert any("aborted" in e for e in checker.check(history, {0: [10, 20]}, "READ UNCOMMITTED"))


def test_checker_finds_a_non_repeatable_read():
    history = [txn(1, ("a", 0, 10)), txn(2, ("r", 0, []), ("r", 0, [10]))]
    assert any("twice" in e for e in checker.check(history, {0: [10]}, "REPEATABLE READ"))
    assert checker.check(history, {0: [10]}, "READ COMMITTED") == []


def test_checker_finds_write_skew_at_serializable():
    # Each read the other's key before the other's append: an anti-dependency cycle.
    history = [txn(1, ("r", 1, []), ("a", 0, 10)), txn(2, ("r", 0, []), ("a", 1, 20))]
    final = {0: [10], 1: [20]}
    assert any("cycle" in e for e in checker.check(history, final, "SERIALIZABLE"))
    assert checker.check(history, final, "REPEATABLE READ") == []
