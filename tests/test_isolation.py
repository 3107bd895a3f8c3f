"""The isolation suite: every scenario of tests/isolation/scenarios.py at all four levels,
through real connections, compared step by step (which statements wait, what they return,
which fail and with what error) with MariaDB's recorded outcomes
(tests/isolation/expected-mariadb.json, written by tests/isolation/record-mariadb)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent / "isolation"
sys.path.insert(0, str(HERE))

import runner  # noqa: E402
from scenarios import LEVELS, SCENARIOS  # noqa: E402

EXPECTED = json.loads((HERE / "expected-mariadb.json").read_text())


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_scenario_matches_mariadb(server, scenario):
    expected = EXPECTED if not server.is_quill else runner.expected_for_mysql8(EXPECTED)
    actual = {scenario.name: {level: runner.run_scenario(server.host, server.port, scenario, level) for level in LEVELS}}
    diff = runner.differences(expected, actual)
    assert not diff, "\n".join(diff)


def test_every_scenario_is_recorded():
    assert sorted(EXPECTED) == sorted(s.name for s in SCENARIOS)
