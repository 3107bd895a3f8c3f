"""Black-box test harness: every test here talks to a real server over TCP.

By default the session starts the real `quill` binary (``$QUILL_BIN``, default
``target/release/quill``) on a free loopback port with a fresh temporary data
directory, waits (at most ``SERVER_START_TIMEOUT_S``) until the port accepts
connections, and stops it at the end. If any test failed, the tail of the
server's log is printed in pytest's terminal summary.

With ``QUILL_TEST_TARGET=mariadb`` and ``MARIADB_PORT`` the same tests run
against an already running MariaDB instead; this is how expected outputs are
confirmed (see ``tests/run-against-mariadb.sh``). Tests whose expected
behaviour is specific to MySQL 8 and differs from MariaDB carry the marker
``mysql8_only`` and are skipped on that target.

A fresh data directory has ``root`` with an empty password, reachable from
loopback, so that is the account every test uses.

``QUILL_SERVER_OPTIONS`` (space-separated) is added to the options of every Quill server a
test starts, the shared one and private ones: `scripts/test-all` runs the isolation, crash
and replication tests again with a 64 MiB pool that evicts every leaf it can
(``--innodb-buffer-pool-size=64M --quill-debug-evict-always=ON``).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pymysql
import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
SERVER_START_TIMEOUT_S = 30
SERVER_STOP_TIMEOUT_S = 10
SERVER_LOG_TAIL_LINES = 200

TARGET_QUILL = "quill"
TARGET_MARIADB = "mariadb"


def server_options() -> list[str]:
    """Options every Quill server of the session gets besides its own (QUILL_SERVER_OPTIONS)."""
    return os.environ.get("QUILL_SERVER_OPTIONS", "").split()


def test_target() -> str:
    """Which server the session runs against: "quill" (default) or "mariadb"."""
    target = os.environ.get("QUILL_TEST_TARGET", TARGET_QUILL).strip().lower()
    if target not in (TARGET_QUILL, TARGET_MARIADB):
        raise pytest.UsageError(f"QUILL_TEST_TARGET must be quill or mariadb, not {target!r}")
    return target


test_target.__test__ = False  # a helper, not a test


@dataclass
class Server:
    """Where the server under test listens, and how to reach it."""

    host: str
    port: int
    user: str
    password: str
    target: str
    process: subprocess.Popen | None = None
    log_path: Path | None = None
    workdir: Path | None = None
    keep_workdir: bool = False

    @property
    def is_quill(self) -> bool:
        return self.target == TARGET_QUILL

    def connect(self, database: str | None = None, **options) -> pymysql.connections.Connection:
        """A PyMySQL connection with autocommit on (what most tests want)."""
        options.setdefault("autocommit", True)
        options.setdefault("charset", "utf8mb4")
        options.setdefault("connect_timeout", 10)
        return pymysql.connect(
            host=self.host,
            port=self.port,
            user=self.user,
            password=self.password,
            database=database,
            **options,
        )

    def log_tail(self, lines: int = SERVER_LOG_TAIL_LINES) -> str:
        if self.log_path is None or not self.log_path.exists():
            return ""
        text = self.log_path.read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])

    def assert_alive(self) -> None:
        """The server process has not exited (only checkable for a server we started)."""
        if self.process is not None:
            assert self.process.poll() is None, (
                f"quill exited with code {self.process.returncode}:\n{self.log_tail()}"
            )


def pytest_collection_modifyitems(config, items):
    if test_target() != TARGET_MARIADB:
        return
    skip = pytest.mark.skip(reason="MySQL-8-specific behaviour; MariaDB differs")
    for item in items:
        if "mysql8_only" in item.keywords:
            item.add_marker(skip)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(host: str, port: int, process: subprocess.Popen, log_path: Path) -> None:
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(
                f"quill exited with code {process.returncode} before listening:\n"
                + log_path.read_text(errors="replace")
            )
        try:
            with socket.create_connection((host, port), timeout=1):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(
        f"quill did not accept connections on {host}:{port} within "
        f"{SERVER_START_TIMEOUT_S} s:\n" + log_path.read_text(errors="replace")
    )


def stop_process(process: subprocess.Popen) -> None:
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=SERVER_STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=SERVER_STOP_TIMEOUT_S)


class PrivateQuill:
    """A quill server of a test's own, on `datadir` with extra `options` (and environment),
    for what the shared server must not be put through: timeouts, limits, a full disk, a
    panic. A context manager; `connect()` gives PyMySQL connections to it."""

    def __init__(self, datadir: Path, *options: str, env: dict | None = None, bind: str = "127.0.0.1"):
        self.datadir, self.options, self.bind = Path(datadir), list(options), bind
        self.env = dict(os.environ, **(env or {}))
        self.host, self.port = "127.0.0.1", free_port()
        self.log_path = self.datadir.parent / f"{self.datadir.name}.log"
        self.process: subprocess.Popen | None = None

    def start(self) -> "PrivateQuill":
        binary = Path(os.environ.get("QUILL_BIN", REPO_ROOT / "target" / "release" / "quill"))
        log = open(self.log_path, "ab")
        self.process = subprocess.Popen(
            [str(binary), "serve", f"--port={self.port}", f"--bind={self.bind}", f"--datadir={self.datadir}", *server_options(), *self.options],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=self.env,
        )
        wait_for_port(self.host, self.port, self.process, self.log_path)
        return self

    def stop(self) -> None:
        if self.process is not None:
            stop_process(self.process)

    def kill(self) -> None:
        """Kills the server with SIGKILL, as a crash would, and waits for it to be gone."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def __enter__(self) -> "PrivateQuill":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def wait_for_checkpoint(self, timeout_s: float = 20.0) -> None:
        """Waits until the server's log says a checkpoint was written (started with a short
        --quill-checkpoint-interval-seconds); fails the test past `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        while "checkpoint written" not in self.log() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "checkpoint written" in self.log(), "no checkpoint was written"

    def connect(self, database: str | None = None, **options) -> pymysql.connections.Connection:
        options.setdefault("autocommit", True)
        options.setdefault("connect_timeout", 10)
        return pymysql.connect(host=self.host, port=self.port, user="root", password="", database=database, **options)

    def run(self, *statements: str) -> tuple:
        """Runs the statements as root on one new connection; the last one's rows."""
        conn = self.connect()
        try:
            with conn.cursor() as c:
                for sql in statements:
                    c.execute(sql)
                return c.fetchall()
        finally:
            conn.close()


_SESSION_SERVER: Server | None = None


@pytest.fixture(scope="session")
def server():
    """The server under test for the whole session (see the module doc)."""
    global _SESSION_SERVER
    if test_target() == TARGET_MARIADB:
        port = os.environ.get("MARIADB_PORT")
        if not port:
            raise pytest.UsageError("QUILL_TEST_TARGET=mariadb needs MARIADB_PORT")
        _SESSION_SERVER = Server(
            host=os.environ.get("MARIADB_HOST", "127.0.0.1"),
            port=int(port),
            user=os.environ.get("MARIADB_USER", "root"),
            password=os.environ.get("MARIADB_PASSWORD", ""),
            target=TARGET_MARIADB,
        )
        yield _SESSION_SERVER
        return

    binary = Path(os.environ.get("QUILL_BIN", REPO_ROOT / "target" / "release" / "quill"))
    if not binary.is_absolute():
        binary = REPO_ROOT / binary
    if not binary.exists():
        raise RuntimeError(f"{binary} does not exist; run `cargo build --release` first")

    workdir = Path(tempfile.mkdtemp(prefix="quill-test-"))
    datadir = workdir / "data"
    log_path = workdir / "quill.log"
    host, port = "127.0.0.1", free_port()
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [str(binary), "serve", "--port", str(port), "--bind", host, "--datadir", str(datadir), *server_options()],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    try:
        wait_for_port(host, port, process, log_path)
        _SESSION_SERVER = Server(host, port, "root", "", TARGET_QUILL, process, log_path, workdir)
        yield _SESSION_SERVER
    finally:
        # The work directory (data and log) is removed in pytest_unconfigure, after the
        # terminal summary had the chance to show the log of a failed run.
        stop_process(process)


@pytest.fixture(scope="session")
def mariadb_reference(server):
    """A MariaDB server next to the server under test, for tests that move data between the
    two (dumps made by one and restored into the other). Against MariaDB it is that server;
    otherwise a private `mariadbd` (Debian's mariadb-server) on a free port and a temporary
    data directory, started once and stopped at the end of the session."""
    if server.target == TARGET_MARIADB:
        yield server
        return
    with PrivateMariaDB() as mariadb:
        yield mariadb.server


class PrivateMariaDB:
    """A `mariadbd` (Debian's mariadb-server) of its own, on a free port and a temporary data
    directory, with `options` added to its command line; `server` reaches it once started.
    A context manager: the server stops and its directory goes at the end."""

    def __init__(self, *options: str):
        self.options = list(options)
        self.process: subprocess.Popen | None = None
        self.server: Server | None = None

    def __enter__(self) -> "PrivateMariaDB":
        for tool in ("mariadb-install-db", "mariadbd"):
            if shutil.which(tool) is None:
                raise RuntimeError(f"{tool} not found: apt-get install mariadb-server")
        self.workdir = Path(tempfile.mkdtemp(prefix="quill-test-mariadb-"))
        user = pwd.getpwuid(os.getuid()).pw_name
        subprocess.run(
            ["mariadb-install-db", "--no-defaults", f"--datadir={self.workdir}/data", f"--user={user}",
             "--auth-root-authentication-method=normal"],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        port = free_port()
        self.log_path = self.workdir / "error.log"
        self.process = subprocess.Popen(
            ["mariadbd", "--no-defaults", f"--datadir={self.workdir}/data", f"--user={user}", f"--port={port}",
             "--bind-address=127.0.0.1", f"--socket={self.workdir}/mariadb.sock", "--character-set-server=utf8mb4",
             "--collation-server=utf8mb4_general_ci", f"--log-error={self.log_path}", f"--pid-file={self.workdir}/mariadb.pid",
             *self.options],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
        )
        try:
            wait_for_port("127.0.0.1", port, self.process, self.log_path)
        except BaseException:
            self.__exit__()
            raise
        self.server = Server("127.0.0.1", port, "root", "", TARGET_MARIADB)
        return self

    def __exit__(self, *exc) -> None:
        if self.process is not None:
            stop_process(self.process)
        shutil.rmtree(self.workdir, ignore_errors=True)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """On failure, show what the server logged: the first thing to read when a test fails."""
    server = _SESSION_SERVER
    if server is None or server.log_path is None or exitstatus == 0:
        return
    server.keep_workdir = True
    terminalreporter.section(f"quill server log (last {SERVER_LOG_TAIL_LINES} lines)")
    terminalreporter.write_line(f"full log: {server.log_path}")
    terminalreporter.write_line(server.log_tail())


def pytest_unconfigure(config):
    server = _SESSION_SERVER
    if server is not None and server.workdir is not None and not server.keep_workdir:
        shutil.rmtree(server.workdir, ignore_errors=True)


def unique_name(prefix: str) -> str:
    """A database or object name no other test (or earlier run) uses."""
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


@contextlib.contextmanager
def scratch_database(server, prefix: str = "t"):
    """A uniquely named, empty database on `server` for the `with` block, dropped after it."""
    name = unique_name(prefix)
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE `{name}`")
    try:
        yield name
    finally:
        with server.connect() as conn, conn.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS `{name}`")


@pytest.fixture
def fresh_db(server):
    """A uniquely named, empty database, dropped after the test."""
    with scratch_database(server) as name:
        yield name


@pytest.fixture
def conn(server, fresh_db):
    """A PyMySQL connection (autocommit on) whose default database is `fresh_db`."""
    connection = server.connect(fresh_db)
    yield connection
    connection.close()
