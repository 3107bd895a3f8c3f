"""Calls the benchmark driver (bench/driver, Rust, the `mysql` crate) and parses its JSON.

The driver runs one workload against one server and prints {"metrics": [...], "checks": [...]}
(see bench/README.md, "Driver output"); `sql` runs statements and prints rows and warnings.
"""

import json
import subprocess

from .install import DRIVER_BINARY

#: A driver run that takes longer than this is stuck (a lost wakeup, a hung server): it is
#: killed and reported as an error instead of hanging the benchmark.
DRIVER_TIMEOUT_S = 600


class DriverError(Exception):
    pass


def run_driver(server, *arguments, timeout_s=DRIVER_TIMEOUT_S):
    command = [str(DRIVER_BINARY)]
    if server is not None:
        command += ["--port", str(server.port)]
    command += [str(a) for a in arguments]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired as e:
        raise DriverError(f"driver timed out after {timeout_s} s: {' '.join(command[1:])}") from e
    if result.returncode != 0:
        raise DriverError(result.stderr.strip() or f"driver exited with {result.returncode}")
    return json.loads(result.stdout)


def sql(server, *statements):
    """Runs statements on one connection; returns [{"rows": [...], "warnings": [...]}, ...]."""
    return run_driver(server, "sql", *statements)["results"]


def flush_mode_refusal(server, mode):
    """None when the server acts on `innodb_flush_log_at_trx_commit=mode`; else why not.

    A server that accepts the variable but does not act on it says so with a warning (Quill
    does, for variables it does not implement yet): that counts as not supported.
    """
    statement = f"SET GLOBAL innodb_flush_log_at_trx_commit={mode}"
    try:
        [result] = sql(server, statement)
    except DriverError as e:
        return str(e)
    if result["warnings"]:
        return "; ".join(w["message"] for w in result["warnings"])
    return None


def set_flush_mode(server, mode):
    sql(server, f"SET GLOBAL innodb_flush_log_at_trx_commit={mode}")
