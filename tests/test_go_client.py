"""Go's go-sql-driver/mysql as a client: tests/go-client round-trips every byte value, random
binary up to 1 MiB and random utf8mb4 text through the driver with interpolateParams=true
(values escaped into the statement text) and without it (prepared statements, binary
protocol), reading each back and as HEX(). Built with the Go toolchain (modules pinned in its
go.sum, fetched from the module proxy) and run against the server under test.
"""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

CLIENT = Path(__file__).parent / "go-client"


def test_go_sql_driver_round_trips_bytes(server):
    go = shutil.which("go") or "/usr/local/go/bin/go"
    if not Path(go).exists():
        pytest.fail("the Go toolchain is needed for this test (go on PATH)")
    env = dict(os.environ, QUILL_PORT=str(server.port), GOFLAGS="-mod=readonly")
    result = subprocess.run([go, "run", "."], cwd=CLIENT, capture_output=True, text=True, env=env, timeout=900)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip().endswith("go-client: 2 passed, 0 failed"), result.stdout
