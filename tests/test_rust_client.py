"""The Rust `mysql` crate as a client: tests/rust-client is a small program that uses a pool,
prepared statements with positional and named parameters, every common type through the
binary protocol, transactions and errors, and exact byte round trips (every byte value, random
binary up to 1 MiB, random utf8mb4 text) in text and binary protocol, asserting each result. Built with cargo (pinned in
its own Cargo.lock) and run against the server under test.
"""

import os
import subprocess
from pathlib import Path

CLIENT = Path(__file__).parent / "rust-client"


def test_rust_mysql_crate_client(server):
    env = dict(os.environ, QUILL_PORT=str(server.port))
    result = subprocess.run(
        ["cargo", "run", "--quiet", "--locked", "--manifest-path", str(CLIENT / "Cargo.toml")],
        capture_output=True, text=True, env=env, timeout=900,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip().endswith("rust-client: 24 passed, 0 failed"), result.stdout
