"""Installs and builds what a benchmark run needs, only when it is missing:

- Debian packages: sysbench always; mariadb-server and mariadb-client when a MariaDB target
  is selected (apt-get, through sudo when not root);
- Python packages pinned in bench/requirements.txt (pip, into the running interpreter);
- the release build of Quill and of the benchmark driver (cargo; a no-op when up to date).
"""

import os
import shutil
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DRIVER_MANIFEST = REPO / "bench" / "driver" / "Cargo.toml"
DRIVER_BINARY = REPO / "bench" / "driver" / "target" / "release" / "quill-bench-driver"
QUILL_BINARY = REPO / "target" / "release" / "quill"


def as_root(command):
    return command if os.geteuid() == 0 else ["sudo", *command]


def missing_packages(want_mariadb):
    missing = []
    if shutil.which("sysbench") is None:
        missing.append("sysbench")
    if want_mariadb:
        if shutil.which("mariadbd") is None or shutil.which("mariadb-install-db") is None:
            missing.append("mariadb-server")
        if shutil.which("mariadb") is None:
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
    # The package starts a system MariaDB on port 3306; the benchmark starts its own and
    # does not need that one, but leaves it as the package set it up.


def install_python_packages(log):
    requirements = REPO / "bench" / "requirements.txt"
    for line in requirements.read_text().splitlines():
        line = line.split("#")[0].strip()
        if not line:
            continue
        name, wanted = line.split("==")
        try:
            if version(name) == wanted:
                continue
        except PackageNotFoundError:
            pass
        log(f"installing {requirements.relative_to(REPO)} (pip)")
        run_quietly([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "-r", str(requirements)])
        return


def build(log, build_quill=True):
    if build_quill:
        log("building Quill (cargo build --release)")
        run_quietly(["cargo", "build", "--release", "--bin", "quill"], cwd=REPO)
    log("building the benchmark driver (bench/driver)")
    run_quietly(["cargo", "build", "--release", "--locked", "--manifest-path", str(DRIVER_MANIFEST)], cwd=REPO)


def run_quietly(command, **kwargs):
    """Runs a command, showing its output only when it fails."""
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        sys.stderr.write(result.stdout + result.stderr)
        raise SystemExit(f"bench/run: failed: {' '.join(command)}")
