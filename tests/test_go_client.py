"""Go's go-sql-driver/mysql as a client. tests/go-client round-trips every byte value, random
binary up to 1 MiB and random utf8mb4 text through the driver with interpolateParams=true
(values escaped into the statement text) and without it (prepared statements, binary
protocol), reading each back and as HEX(). tests/go-client/orders runs a small shop's flow
through database/sql, both ways: transactions committed and rolled back, concurrent orders
under SELECT ... FOR UPDATE, parseTime=true DATETIME(6) values, sql.ErrNoRows, a duplicate key
as *mysql.MySQLError 1062, several result sets, a query stopped by its context. Built with the
Go toolchain (modules pinned in its go.sum, fetched from the module proxy) and run against the
server under test.
"""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

CLIENT = Path(__file__).parent / "go-client"


def go_run(server, package: str) -> subprocess.CompletedProcess:
    go = shutil.which("go") or "/usr/local/go/bin/go"
    if not Path(go).exists():
        pytest.fail("the Go toolchain is needed for this test (go on PATH)")
    env = dict(os.environ, QUILL_PORT=str(server.port), GOFLAGS="-mod=readonly")
    return subprocess.run([go, "run", package], cwd=CLIENT, capture_output=True, text=True, env=env, timeout=900)


def test_go_sql_driver_round_trips_bytes(server):
    result = go_run(server, ".")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip().endswith("go-client: 2 passed, 0 failed"), result.stdout


def test_go_sql_driver_application_flow(server):
    result = go_run(server, "./orders")
    assert result.returncode == 0, result.stdout + result.stderr
    last = result.stdout.strip().splitlines()[-1]
    assert last.startswith("go-client orders: ") and last.endswith(" passed, 0 failed"), result.stdout
