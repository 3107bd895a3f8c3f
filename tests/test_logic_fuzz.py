"""The logic fuzzer (tests/logic_fuzz.py) in CI: a bounded slice of fixed seeds, so a run
fails only when the server changed, and the command that replays a failure is printed.
`python3 tests/logic_fuzz.py --port P --seconds 3600` runs it for as long as asked.
"""

import pytest

import logic_fuzz

# Fixed seeds and queries per seed: about 8,000 queries, under a minute.
CI_SEEDS = range(1, 9)
CI_QUERIES_PER_SEED = 1000


@pytest.mark.parametrize("seed", CI_SEEDS)
def test_logic_fuzz_slice(server, seed):
    report = logic_fuzz.Fuzzer(server.host, server.port, server.user, server.password, seed).run(CI_QUERIES_PER_SEED)
    assert report.queries >= CI_QUERIES_PER_SEED
    lines = []
    for failure in report.failures[:3]:
        lines.append(f"{failure.oracle}: {failure.detail}")
        lines.extend(f"    {sql};" for sql in failure.statements)
    lines.append(f"replay: {logic_fuzz.replay_command(server.port, seed, CI_QUERIES_PER_SEED)}")
    assert not report.failures, "\n".join(lines)
