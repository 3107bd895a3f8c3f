"""Installs and builds what a benchmark run needs, only when it is missing:

- Debian packages: sysbench always; mariadb-server and mariadb-client when a MariaDB target
  is selected (apt-get, as root or through `sudo`);
- Python packages pinned in bench/requirements.txt (pip, into the running interpreter). They
  only draw the chart: when they cannot be installed the run goes on without a chart;
- the release build of Quill and of the benchmark driver (cargo; a no-op when up to date).

Installing mariadb-server makes Debian start a system MariaDB on port 3306. The benchmark does
not use it (it starts its own servers), so when this run installed the package it stops that
service again, leaving the machine as it found it apart from the packages.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DRIVER_MANIFEST = REPO / "bench" / "driver" / "Cargo.toml"
DRIVER_BINARY = REPO / "bench" / "driver" / "target" / "release" / "quill-bench-driver"
QUILL_BINARY = REPO / "target" / "release" / "quill"
#: Where Debian puts server binaries; not on a non-root user's PATH.
SYSTEM_PATHS = ("/usr/sbin", "/sbin")


def find(program):
    """The absolute path of `program`, looking in the system directories too, or None."""
    return shutil.which(program, path=os.pathsep.join([os.environ.get("PATH", ""), *SYSTEM_PATHS]))


def as_root(command):
    if os.geteuid() == 0:
        return command
    if shutil.which("sudo") is None:
        raise SystemExit(f"bench/run: needs root to run {' '.join(command)}; install sudo, or run that as root first")
    # -n: fail with a message instead of waiting for a password nobody can type (CI, no tty).
    return ["sudo", *([] if sys.stdin.isatty() else ["-n"]), *command]


def missing_packages(want_mariadb):
    missing = []
    if find("sysbench") is None:
        missing.append("sysbench")
    if want_mariadb:
        if find("mariadbd") is None or find("mariadb-install-db") is None:
            missing.append("mariadb-server")
        if find("mariadb") is None:
            missing.append("mariadb-client")
    return missing


def install_packages(want_mariadb, log):
    missing = missing_packages(want_mariadb)
    if not missing:
        return
    log(f"installing {' '.join(missing)} (apt-get)")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    run_quietly(as_root(["apt-get", "update", "-qq"]), env=env)
    run_quietly(as_root(["apt-get", "install", "-y", "-qq", *missing]), env=env)
    if "mariadb-server" in missing:
        log("stopping the system MariaDB service the package started (the benchmark starts its own)")
        subprocess.run(as_root(["service", "mariadb", "stop"]), capture_output=True)


def install_python_packages(log):
    """Installs bench/requirements.txt when a pin is missing; returns False when that fails."""
    requirements = REPO / "bench" / "requirements.txt"
    met = subprocess.run([sys.executable, str(REPO / "scripts" / "requirements-met"), str(requirements)])
    if met.returncode == 0:
        return True
    log(f"installing {requirements.relative_to(REPO)} (pip)")
    result = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "-r", str(requirements)],
                            capture_output=True, text=True)
    if result.returncode != 0:
        log(f"pip failed; the report will have no chart:\n{(result.stdout + result.stderr).strip()[-1500:]}")
        return False
    return True


def build(log, build_quill=True):
    if build_quill:
        log("building Quill (cargo build --release)")
        run_quietly(["cargo", "build", "--release", "--bin", "quill"], cwd=REPO)
    log("building the benchmark driver (bench/driver)")
    run_quietly(["cargo", "build", "--release", "--locked", "--manifest-path", str(DRIVER_MANIFEST)], cwd=REPO)


def run_quietly(command, **kwargs):
    """Runs a command, showing its output only when it fails."""
    try:
        result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    except OSError as e:
        raise SystemExit(f"bench/run: cannot run {command[0]}: {e}") from e
    if result.returncode != 0:
        sys.stderr.write(result.stdout + result.stderr)
        raise SystemExit(f"bench/run: failed: {' '.join(command)}")
