"""The servers a run compares, each started on its own port and data directory under the work
directory, and stopped (always, even on Ctrl-C) when the run ends.

Targets:
- `quill`: the release build of Quill, fresh data directory.
- `mariadb`: MariaDB 10.11 with the durability Quill promises: `innodb_flush_log_at_trx_commit=1`,
  binary log off.
- `mariadb-binlog`: the same with the binary log on and `sync_binlog=1`, what a MySQL 8 default
  and any replicated setup pays (two syncs per commit group: redo log and binary log).
- `mariadb-myisam`: the `mariadb` target with MyISAM as its default storage engine, for the bulk
  workloads (MyISAM has fixed-length rows and no transactions; its writes are not durable at
  statement end). Workloads that need transactions are not run on it.

Both MariaDB targets get a buffer pool large enough to hold every benchmark table, so that, like
Quill, they serve reads from memory and pay for durability only in their logs.
"""

import ctypes
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from .install import QUILL_BINARY, find

TARGETS = ("quill", "mariadb", "mariadb-binlog", "mariadb-myisam")

#: How long a server may take to accept connections after starting.
START_TIMEOUT_S = 120
#: Between attempts to connect to a starting server: fine enough that a start-up timed to
#: its first answer (the paged workloads) is not rounded up by a tenth of a second.
ACCEPT_POLL_S = 0.01
#: How long a server may take to shut down after SIGTERM before it is killed.
STOP_TIMEOUT_S = 60

#: MariaDB options shared by both MariaDB targets; see bench/README.md, "Servers".
MARIADB_OPTIONS = (
    "--innodb-flush-log-at-trx-commit=1",
    "--innodb-buffer-pool-size=1G",
    "--innodb-log-file-size=512M",
    "--max-connections=500",
    "--character-set-server=utf8mb4",
    "--collation-server=utf8mb4_general_ci",
)
#: Quill's buffer pool is MariaDB's size, so both hold the same share of the data in memory.
QUILL_OPTIONS = ("--innodb-buffer-pool-size=1G",)
MARIADB_BINLOG_OPTIONS = ("--log-bin=binlog", "--sync-binlog=1", "--server-id=1", "--binlog-format=ROW")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def die_with_parent():
    """In the child before exec: ask Linux to SIGTERM it when the harness dies, even by SIGKILL,
    so no server outlives the run that started it."""
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


class Server:
    def __init__(self, name, workdir, label=None, extra=()):
        """`label` names the directory (default: the target); `extra` adds server options."""
        assert name in TARGETS, name
        self.name = name
        self.is_quill = name == "quill"
        self.extra = tuple(extra)
        self.dir = workdir / (label or name)
        self.datadir = self.dir / "data"
        self.log_path = self.dir / "server.log"
        self.port = free_port()
        self.process = None
        # A Unix socket path is limited to 107 bytes: keep MariaDB's out of a deep work directory.
        self.socket_dir = None

    def start(self):
        self.dir.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")
        if self.is_quill:
            command = [str(QUILL_BINARY), "serve", f"--port={self.port}", f"--datadir={self.datadir}", *QUILL_OPTIONS]
        else:
            self._install_mariadb()
            self.socket_dir = tempfile.mkdtemp(prefix="qbench")
            command = [
                find("mariadbd") or "mariadbd", "--no-defaults", f"--datadir={self.datadir}", f"--user={user_name()}",
                f"--port={self.port}", "--bind-address=127.0.0.1", f"--socket={self.socket_dir}/mariadb.sock",
                f"--pid-file={self.dir / 'mariadb.pid'}", f"--log-error={self.log_path}", *MARIADB_OPTIONS,
            ]
            if self.name == "mariadb-binlog":
                command += list(MARIADB_BINLOG_OPTIONS)
            if self.name == "mariadb-myisam":
                command += ["--default-storage-engine=MyISAM"]
        command += list(self.extra)
        # Own session: Ctrl-C in the terminal reaches only the harness, which stops the servers
        # in order; die_with_parent covers a harness that is killed outright.
        self.process = subprocess.Popen(command, stdout=log, stderr=log, cwd=self.dir, start_new_session=True,
                                        preexec_fn=die_with_parent)
        self._wait_until_accepting()

    def _install_mariadb(self):
        if self.datadir.exists():
            return
        result = subprocess.run(
            [find("mariadb-install-db") or "mariadb-install-db", "--no-defaults", f"--datadir={self.datadir}", f"--user={user_name()}",
             "--auth-root-authentication-method=normal", "--skip-test-db"],
            capture_output=True, text=True,
        )
        if result.returncode != 0:
            raise SystemExit(f"bench/run: mariadb-install-db failed:\n{result.stdout}{result.stderr}")

    def _wait_until_accepting(self):
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SystemExit(f"bench/run: {self.name} exited at start; its log ends:\n{tail(self.log_path)}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(ACCEPT_POLL_S)
        raise SystemExit(f"bench/run: {self.name} did not accept connections within {START_TIMEOUT_S} s; "
                         f"its log ends:\n{tail(self.log_path)}")

    def stop(self):
        """SIGTERM, then SIGKILL if it has not exited within STOP_TIMEOUT_S."""
        try:
            if self.process is not None and self.process.poll() is None:
                self.process.send_signal(signal.SIGTERM)
                try:
                    self.process.wait(timeout=STOP_TIMEOUT_S)
                except BaseException:
                    self.process.kill()
                    self.process.wait()
        finally:
            if self.socket_dir:
                shutil.rmtree(self.socket_dir, ignore_errors=True)


def user_name():
    import pwd

    return pwd.getpwuid(os.geteuid()).pw_name


def tail(path, lines=20):
    try:
        return "\n".join(Path(path).read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""
