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
    try:
        return json.loads(result.stdout)
    except ValueError as e:
        raise DriverError(f"driver printed no JSON ({e}): {result.stdout[:500]!r}") from e


def sql(server, *statements, stop_on_error=True):
    """Runs statements on one connection; returns [{"rows": [...], "warnings": [...]}, ...].

    A statement the server rejects raises DriverError, or with `stop_on_error=False` ends the
    list with {"error": {"code": ..., "message": ...}}.
    """
    results = run_driver(server, "sql", *statements)["results"]
    failed = results[-1].get("error") if results else None
    if failed and stop_on_error:
        raise DriverError(f"{results[-1]['statement']}: ERROR {failed['code']}: {failed['message']}")
    return results


def flush_mode_refusal(server, mode):
    """None when the server acts on `innodb_flush_log_at_trx_commit=mode`; else why not.

    A server that refuses the statement with an error, or accepts the variable with a warning
    that it does not act on it (Quill does so for variables it does not implement yet), does
    not support the mode. A failure to reach the server is not a refusal: it raises DriverError.
    """
    [result] = sql(server, f"SET GLOBAL innodb_flush_log_at_trx_commit={mode}", stop_on_error=False)
    if result.get("error"):
        return result["error"]["message"]
    if result["warnings"]:
        return "; ".join(w["message"] for w in result["warnings"])
    return None


def set_flush_mode(server, mode):
    [result] = sql(server, f"SET GLOBAL innodb_flush_log_at_trx_commit={mode}", stop_on_error=False)
    if result.get("error"):
        raise DriverError(f"SET GLOBAL innodb_flush_log_at_trx_commit={mode}: {result['error']['message']}")
