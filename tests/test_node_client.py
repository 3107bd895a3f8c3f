"""Node's mysql2 as a client: tests/node-client runs a small shop's flow through a pool of
connections: query() with placeholders (values escaped into the statement text by the driver)
and execute() (server-side prepared statements, binary protocol), a committed and a
rolled-back transaction, insertId / affectedRows / changedRows, DECIMAL, DATETIME(6), DATE,
non-ASCII VARCHAR, Buffer bytes, BIGINT with supportBigNumbers and NULL read back through
both protocols, several statements in one query (multipleStatements), and ER_DUP_ENTRY
(1062, 23000) after which the connection goes on. mysql2 is pinned in package-lock.json and
installed with `npm ci`; run against the server under test.
"""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

CLIENT = Path(__file__).parent / "node-client"


def test_node_mysql2_application_flow(server):
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.fail("Node.js and npm are needed for this test (node and npm on PATH)")
    install = subprocess.run(
        [npm, "ci", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=CLIENT, capture_output=True, text=True, timeout=600,
    )
    assert install.returncode == 0, install.stdout + install.stderr
    env = dict(os.environ, QUILL_PORT=str(server.port))
    result = subprocess.run([node, "main.js"], cwd=CLIENT, capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    last = result.stdout.strip().splitlines()[-1]
    assert last.startswith("node-client: ") and last.endswith(" passed, 0 failed"), result.stdout
