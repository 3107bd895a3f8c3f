#!/usr/bin/env python3
"""Runs SQLite's public sqllogictest corpus against a MySQL-protocol server and counts passes.

The corpus is not kept in this repository. Maven Central packages it as
``net.hydromatic:sql-logic-test:0.3``; `corpus_jar()` downloads that jar once (checking its
SHA-256) into ``$XDG_CACHE_HOME/quill-tests/`` (``~/.cache/quill-tests/`` when XDG_CACHE_HOME
is unset) and the ``.test`` files are read out of it with zipfile. ``$QUILL_SLT_JAR`` names a
local copy to use instead (its SHA-256 is checked too).

The script format is the reference driver's (sqllogictest.c in SQLite's sqllogictest
repository), read as its ``--verify`` mode reads it:

- records are separated by blank lines; a line starting with ``#`` is a comment wherever it is;
- ``skipif ENGINE`` / ``onlyif ENGINE`` lines before a record skip it; the engine name here is
  ``mysql`` (what the reference's ODBC driver reports for MySQL), compared without case;
- ``statement ok`` / ``statement error``: the SQL (the rest of the record) must succeed / fail
  (any error);
- ``query TYPES [nosort|rowsort|valuesort] [LABEL]``, the SQL, ``----``, then the expected
  values, one per line, or ``N values hashing to MD5`` when the query returns more values than
  the hash threshold (``hash-threshold N``, default 8; 0 never hashes). The MD5 is over every
  value followed by a newline, after sorting: ``rowsort`` sorts rows, ``valuesort`` sorts all
  values on their own, both comparing values as byte strings. A LABEL asks that every query
  with that label in the file gives the same hash (a skipped labelled query contributes its
  expected hash), as the reference checks;
- ``halt`` stops the file; an unknown record type is an error that stops the file too.

Values are formatted as the reference's ODBC driver (slt_odbc3.c) gets them from MySQL's
Connector/ODBC with SQLGetData, from the text-protocol value the server sends:

- NULL is ``NULL`` whatever the type;
- ``T``: the text (at most 511 bytes, up to a NUL byte); an empty one is ``(empty)``; every byte
  outside printable ASCII (0x20..0x7E) becomes ``@``. A binary-charset BLOB comes as upper-case
  hex (at most 255 bytes of it), as Connector/ODBC converts it;
- ``I``: SQL_C_SLONG, Connector/ODBC's conversion: a value shaped like a date
  (``YYYY-MM-DD`` then the end or a space) becomes YYYY*10000+MM*100+DD; anything else is
  ``strtoll(value)``: leading spaces, a sign and the leading digits, so ``12.5000`` is 12,
  ``-0.5`` is 0 and ``abc`` is 0; the result is kept as a 32-bit signed integer (SQLINTEGER,
  and ``long`` on the Windows builds the reference ran with), so it wraps past 2^31. A BIT
  value is its big-endian number;
- ``R``: SQL_C_DOUBLE, ``strtod(value)`` (the longest numeric prefix, 0 if none), printed
  with ``%.3f``.

A statement or query that fails unexpectedly counts as a failure and the file goes on. A
query that returns a different number of columns than its TYPES has letters fails as the
reference's does. Each file runs on one PyMySQL connection (text protocol, autocommit) in a
fresh database that is dropped afterwards; if the connection is lost the runner reconnects
to the same database and goes on.

CLI::

    python3 tests/slt_corpus.py --host 127.0.0.1 --port 3306 --user root \\
        [--password X] [--files select1,evidence/in1] [--failures N] [--json OUT]

prints one line per file (records run, passed, failed, skipped, pass rate, seconds), the total
pass rate, and the first N failures of each file (SQL, expected, actual or the error).
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import time
import urllib.request
import uuid
import zipfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pymysql

JAR_URL = "https://repo1.maven.org/maven2/net/hydromatic/sql-logic-test/0.3/sql-logic-test-0.3.jar"
JAR_SHA256 = "801efc1904e802795a20ce30559025c0b5a7a21840114722717c0466089c13f0"
JAR_NAME = "sql-logic-test-0.3.jar"
JAR_TEST_DIR = "test/"

ENGINE = "mysql"
DEFAULT_HASH_THRESHOLD = 8
DEFAULT_FAILURES_KEPT = 5
DEFAULT_TIMEOUT_S = 300
SLOWEST_KEPT = 5

# The files run by default: what tests/test_slt_corpus.py runs.
DEFAULT_PATTERNS = ("select[1-5]", "evidence/*")


# --------------------------------------------------------------------------------------------
# The corpus jar


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "quill-tests"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def corpus_jar(download: bool = True) -> Path:
    """The path of a verified copy of the corpus jar, downloading it into the cache if need be."""
    override = os.environ.get("QUILL_SLT_JAR")
    if override:
        path = Path(override)
        if sha256_of(path) != JAR_SHA256:
            raise RuntimeError(f"{path} (QUILL_SLT_JAR) does not have SHA-256 {JAR_SHA256}")
        return path
    path = cache_dir() / JAR_NAME
    if path.exists():
        if sha256_of(path) == JAR_SHA256:
            return path
        path.unlink()  # a damaged copy: fetch it again
    if not download:
        raise RuntimeError(f"{path} is missing and downloading is off")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, partial = tempfile.mkstemp(prefix=JAR_NAME + ".", suffix=".part", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(JAR_URL, timeout=60) as response:
            shutil.copyfileobj(response, out, 1 << 20)
        got = sha256_of(Path(partial))
        if got != JAR_SHA256:
            raise RuntimeError(f"{JAR_URL} has SHA-256 {got}, expected {JAR_SHA256}")
        os.chmod(partial, 0o644)
        os.replace(partial, path)
    finally:
        if os.path.exists(partial):
            os.unlink(partial)
    return path


class Corpus:
    """The .test files of the jar, named by their path under test/ without `.test`
    (``select1``, ``evidence/in1``, ``index/between/1/slt_good_0``)."""

    def __init__(self, jar: Path):
        self.zip = zipfile.ZipFile(jar)
        self.names = sorted(
            info.filename[len(JAR_TEST_DIR):-len(".test")]
            for info in self.zip.infolist()
            if info.filename.startswith(JAR_TEST_DIR) and info.filename.endswith(".test")
        )

    @classmethod
    def open(cls, download: bool = True) -> "Corpus":
        return cls(corpus_jar(download))

    def read(self, name: str) -> str:
        data = self.zip.read(f"{JAR_TEST_DIR}{name}.test")
        return data.decode("utf-8", errors="surrogateescape")

    def select(self, patterns) -> list[str]:
        """Names matching any of the glob patterns, in the patterns' order (then by name)."""
        chosen: list[str] = []
        for pattern in patterns:
            pattern = pattern.strip()
            if pattern.startswith(JAR_TEST_DIR):
                pattern = pattern[len(JAR_TEST_DIR):]
            if pattern.endswith(".test"):
                pattern = pattern[: -len(".test")]
            matched = [n for n in self.names if fnmatch.fnmatchcase(n, pattern)]
            if not matched:
                raise KeyError(f"no corpus file matches {pattern!r}")
            chosen.extend(sorted((n for n in matched if n not in chosen), key=_natural_key))
        return chosen

    def default_files(self) -> list[str]:
        return self.select(DEFAULT_PATTERNS)


def _natural_key(name: str):
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


# --------------------------------------------------------------------------------------------
# Parsing


@dataclass
class Record:
    line: int  # 1-based line of the record's first line (its first condition, if any)
    kind: str  # statement, query, hash-threshold, halt, or unknown
    conditions: list[tuple[str, str]] = field(default_factory=list)  # (skipif|onlyif, engine)
    tokens: list[str] = field(default_factory=list)  # the record's header line, tokenized
    sql: str = ""
    expected: list[str] = field(default_factory=list)  # lines after ----
    has_separator: bool = False

    # query headers
    @property
    def types(self) -> str:
        return self.tokens[1] if len(self.tokens) > 1 else ""

    @property
    def sort(self) -> str:
        return self.tokens[2] if len(self.tokens) > 2 else ""

    @property
    def label(self) -> str:
        # The reference keeps the first 20 characters of a label.
        return self.tokens[3][:20] if len(self.tokens) > 3 else ""

    def skipped_on(self, engine: str) -> bool:
        engine = engine.lower()
        skip = False
        for word, name in self.conditions:
            match = name.lower() == engine
            if (word == "skipif" and match) or (word == "onlyif" and not match):
                skip = True
        return skip


def _tokens(line: str) -> list[str]:
    # The reference tokenizes up to 4 whitespace-separated tokens of at most 199 characters.
    return [t[:199] for t in line.split()[:4]]


def parse(text: str) -> list[Record]:
    """The records of a script, in order."""
    lines: list[tuple[int, str]] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if line.endswith("\r"):
            line = line[:-1]
        if not line.strip():
            line = ""
        if line.startswith("#"):
            continue  # comment lines vanish wherever they are
        lines.append((number, line))

    records: list[Record] = []
    i, n = 0, len(lines)
    while i < n:
        if lines[i][1] == "":
            i += 1
            continue
        start = lines[i][0]
        tokens = _tokens(lines[i][1])
        conditions = []
        while tokens and tokens[0] in ("skipif", "onlyif"):
            conditions.append((tokens[0], tokens[1] if len(tokens) > 1 else ""))
            i += 1
            tokens = _tokens(lines[i][1]) if i < n else []
        kind = tokens[0] if tokens and tokens[0] in ("statement", "query", "hash-threshold", "halt") else "unknown"
        record = Record(start, kind, conditions, tokens)
        i += 1
        body: list[str] = []
        while i < n and lines[i][1] != "":
            body.append(lines[i][1])
            i += 1
        if kind == "query" and "----" in body:
            cut = body.index("----")
            record.sql = "\n".join(body[:cut])
            record.expected = body[cut + 1:]
            record.has_separator = True
        else:
            record.sql = "\n".join(body)
        records.append(record)
    return records


# --------------------------------------------------------------------------------------------
# Formatting values as the reference's ODBC driver does

FIELD_TYPE_BIT = 16
BLOB_TYPES = {249, 250, 251, 252}
BINARY_CHARSET = 63
T_BUFFER = 512  # the reference's zBuffer

_SPACE = b" \t\n\v\f\r"
_STRTOLL = re.compile(rb"[ \t\n\v\f\r]*([+-]?[0-9]+)")
_STRTOD = re.compile(
    rb"[ \t\n\v\f\r]*([+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf(?:inity)?|nan))",
    re.IGNORECASE,
)
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def _strtoll(raw: bytes) -> int:
    m = _STRTOLL.match(raw)
    if not m:
        return 0
    return max(_INT64_MIN, min(_INT64_MAX, int(m.group(1))))


def _atol32(raw: bytes) -> int:
    # atol on the reference's Windows build: a 32-bit long (saturating, as strtol).
    return max(-(1 << 31), min((1 << 31) - 1, _strtoll(raw)))


def _int32(value: int) -> int:
    return ((value + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def _strtod(raw: bytes) -> float:
    m = _STRTOD.match(raw)
    if not m:
        return 0.0
    text = m.group(1).decode("ascii")
    try:
        return float(text)
    except ValueError:
        return 0.0


def format_value(kind: str, raw: bytes | None, column=None) -> str:
    """One value as the reference prints it for the type letter `kind`. `column` is PyMySQL's
    field descriptor (type_code, charsetnr, scale), when known."""
    if raw is None:
        return "NULL"
    type_code = getattr(column, "type_code", None)
    if kind == "T":
        if (type_code in BLOB_TYPES and getattr(column, "charsetnr", None) == BINARY_CHARSET
                and not getattr(column, "scale", 0)):
            return raw[: (T_BUFFER - 1) // 2].hex().upper() or "(empty)"
        text = raw.split(b"\0", 1)[0][: T_BUFFER - 1]
        if not text:
            return "(empty)"
        return "".join(chr(b) if 0x20 <= b <= 0x7E else "@" for b in text)
    if type_code == FIELD_TYPE_BIT:
        number = int.from_bytes(raw, "big") if raw else 0
        if kind == "I":
            return str(_int32(number))
        return "%.3f" % float(number)
    if kind == "I":
        if len(raw) >= 10 and raw[4:5] == b"-" and raw[7:8] == b"-" and (len(raw) == 10 or raw[10:11] == b" "):
            value = _atol32(raw) * 10000 + _atol32(raw[5:]) * 100 + _atol32(raw[8:])
        else:
            value = _strtoll(raw)
        return str(_int32(value))
    if kind == "R":
        return "%.3f" % _strtod(raw)
    raise ValueError(f"unknown type letter {kind!r}")


def hash_values(values: list[str]) -> str:
    digest = hashlib.md5()
    for value in values:
        digest.update(value.encode("utf-8", errors="surrogateescape"))
        digest.update(b"\n")
    return digest.hexdigest()


def sort_values(values: list[str], mode: str, columns: int) -> list[str]:
    key = lambda v: v.encode("utf-8", errors="surrogateescape")  # strcmp order
    if mode == "rowsort" and columns > 0:
        rows = [values[k:k + columns] for k in range(0, len(values), columns)]
        rows.sort(key=lambda row: [key(v) for v in row])
        return [v for row in rows for v in row]
    if mode == "valuesort":
        return sorted(values, key=key)
    return values


# --------------------------------------------------------------------------------------------
# Running


@dataclass
class Target:
    host: str = "127.0.0.1"
    port: int = 3306
    user: str = "root"
    password: str = ""
    timeout: float = DEFAULT_TIMEOUT_S  # seconds a statement may take before it is killed
    # A server-side limit on each SELECT, in milliseconds (0: none): max_execution_time for
    # MySQL and Quill (error 3024), max_statement_time for MariaDB (error 1969).
    statement_timeout_ms: int = 0

    def connect(self, database: str | None = None) -> pymysql.connections.Connection:
        conn = pymysql.connect(
            host=self.host, port=self.port, user=self.user, password=self.password,
            database=database, autocommit=True, charset="utf8mb4", use_unicode=False,
            conv={}, connect_timeout=10, read_timeout=self.timeout or None,
        )
        if self.statement_timeout_ms:
            limits = (f"SET SESSION max_execution_time = {int(self.statement_timeout_ms)}",
                      f"SET SESSION max_statement_time = {self.statement_timeout_ms / 1000:.3f}")
            with conn.cursor() as cur:
                for sql in limits:  # each server knows one of them
                    try:
                        cur.execute(sql)
                    except pymysql.err.MySQLError:
                        pass
        return conn


@dataclass
class Failure:
    line: int
    sql: str
    reason: str  # "error", "wrong result", "label", "unexpected success", "bad record"
    expected: list[str] = field(default_factory=list)
    actual: list[str] = field(default_factory=list)
    errno: int | None = None
    message: str = ""

    def describe(self, max_lines: int = 12) -> str:
        out = [f"line {self.line}: {self.reason}", "  SQL: " + self.sql.replace("\n", "\n       ")]
        if self.errno is not None:
            out.append(f"  error {self.errno}: {self.message}")
        elif self.message:
            out.append(f"  {self.message}")
        for title, values in (("expected", self.expected), ("actual", self.actual)):
            if values or (title == "actual" and self.reason == "wrong result"):
                shown = values[:max_lines]
                more = f" ... ({len(values)} lines)" if len(values) > max_lines else ""
                out.append(f"  {title}: " + " | ".join(shown) + more)
        return "\n".join(out)


@dataclass
class FileResult:
    name: str
    run: int = 0
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    seconds: float = 0.0
    halted: bool = False
    aborted: str = ""  # why the rest of the file could not run (connection lost for good)
    failures: list[Failure] = field(default_factory=list)  # the first `keep` failures
    failure_lines: list[int] = field(default_factory=list)  # every failed record's line
    slowest: list[tuple[float, int, str]] = field(default_factory=list)  # (seconds, line, sql)

    @property
    def pass_rate(self) -> float:
        return 100.0 * self.passed / self.run if self.run else 100.0

    def summary_line(self) -> str:
        note = f"  [aborted: {self.aborted}]" if self.aborted else ""
        return (f"{self.name:<32} {self.run:>6} run {self.passed:>6} passed {self.failed:>6} failed "
                f"{self.skipped:>5} skipped {self.pass_rate:>7.2f}% {self.seconds:>7.1f}s{note}")


_CONNECTION_LOST = {0, 2006, 2013, 2014, 2055}


class _Session:
    """The file's connection, reconnected (to the same database) when lost."""

    def __init__(self, target: Target, database: str):
        self.target, self.database = target, database
        self.conn = target.connect(database)

    def execute(self, sql: str):
        """(column descriptors, rows) for a result set, (None, None) without one."""
        try:
            with self.conn.cursor() as cur:
                cur.execute(sql)
                if cur.description is None:
                    return None, None
                fields = list(cur._result.fields) if cur._result is not None else [None] * len(cur.description)
                return fields, list(cur.fetchall())
        except (pymysql.err.OperationalError, pymysql.err.InterfaceError) as error:
            errno = error.args[0] if error.args and isinstance(error.args[0], int) else 0
            if errno in _CONNECTION_LOST or not self.conn.open:
                self._recover()
            raise

    def _recover(self) -> None:
        # The statement may still run on the server (a timeout): kill it, then reconnect.
        old_id = getattr(self.conn, "server_thread_id", None)
        try:
            self.conn.close()
        except Exception:
            pass
        try:
            admin = self.target.connect()
            try:
                if old_id:
                    with admin.cursor() as cur:
                        try:
                            cur.execute(f"KILL {int(old_id[0])}")
                        except pymysql.err.MySQLError:
                            pass
            finally:
                admin.close()
            self.conn = self.target.connect(self.database)
        except pymysql.err.MySQLError as error:
            raise _Aborted(f"cannot reconnect: {error}") from error

    def close(self) -> None:
        try:
            self.conn.close()
        except Exception:
            pass


class _Aborted(Exception):
    pass


def _error_parts(error: Exception) -> tuple[int | None, str]:
    args = getattr(error, "args", ())
    if len(args) >= 2 and isinstance(args[0], int):
        message = args[1]
        if isinstance(message, bytes):
            message = message.decode("utf-8", errors="replace")
        return args[0], str(message)
    return None, f"{type(error).__name__}: {error}"


def _admin(target: Target, sql: str) -> None:
    """Runs one statement on a connection of its own (the file's database comes and goes)."""
    admin = target.connect()
    try:
        with admin.cursor() as cur:
            cur.execute(sql)
    finally:
        admin.close()


def run_file(target: Target, name: str, text: str, keep: int = DEFAULT_FAILURES_KEPT,
             engine: str = ENGINE, on_record=None, budget_s: float | None = None) -> FileResult:
    """Runs one script in a fresh database and counts its records. `on_record(record, failure,
    seconds)`, if given, is called after each record that ran (failure is None if it passed).
    Past `budget_s` seconds the records left count as failed without running (`aborted` says
    so), so that a server grown very slow cannot hold a test run for hours."""
    result = FileResult(name)
    records = parse(text)
    started = time.monotonic()
    database = "slt_" + uuid.uuid4().hex[:12]
    _admin(target, f"CREATE DATABASE `{database}`")
    session = None
    try:
        session = _Session(target, database)
        deadline = started + budget_s if budget_s else None
        _run_records(session, records, result, keep, engine, on_record, deadline)
    finally:
        if session is not None:
            session.close()
        try:
            _admin(target, f"DROP DATABASE IF EXISTS `{database}`")
        except pymysql.err.MySQLError:
            pass
        result.seconds = time.monotonic() - started
    return result


def _run_records(session: _Session, records: list[Record], result: FileResult, keep: int,
                 engine: str, on_record, deadline: float | None) -> None:
    hash_threshold = DEFAULT_HASH_THRESHOLD
    labels: dict[str, str] = {}

    def fail(failure: Failure) -> None:
        result.failed += 1
        result.failure_lines.append(failure.line)
        if len(result.failures) < keep:
            result.failures.append(failure)

    for record in records:
        if record.skipped_on(engine):
            if record.kind in ("statement", "query"):
                result.skipped += 1
            if record.kind == "query" and record.label and record.expected:
                # The reference registers a skipped labelled query's expected hash.
                m = re.match(r"\s*-?\d+ values hashing to (\S{1,32})", record.expected[0])
                digest = m.group(1) if m else hash_values(record.expected)
                labels.setdefault(record.label, digest)
            continue
        if record.kind == "hash-threshold":
            hash_threshold = _atol32(record.types.encode())
            continue
        if record.kind == "halt":
            result.halted = True
            return
        if record.kind == "unknown":
            # An error, and the reference stops reading the file.
            result.run += 1
            fail(Failure(record.line, record.sql, "bad record",
                         message=f"unknown record type {' '.join(record.tokens)!r}"))
            return
        if deadline is not None and not result.aborted and time.monotonic() > deadline:
            result.aborted = "time budget exceeded"
        if result.aborted:
            result.run += 1
            result.failed += 1
            result.failure_lines.append(record.line)
            continue
        result.run += 1
        began = time.monotonic()
        try:
            failure = (_run_statement(session, record) if record.kind == "statement"
                       else _run_query(session, record, hash_threshold, labels))
        except _Aborted as error:
            result.aborted = str(error)
            failure = Failure(record.line, record.sql, "error", message=result.aborted)
        took = time.monotonic() - began
        if on_record is not None:
            on_record(record, failure, took)
        if len(result.slowest) < SLOWEST_KEPT or took > result.slowest[-1][0]:
            result.slowest.append((took, record.line, record.sql))
            result.slowest.sort(key=lambda item: -item[0])
            del result.slowest[SLOWEST_KEPT:]
        if failure is None:
            result.passed += 1
        else:
            fail(failure)


def _run_statement(session: _Session, record: Record) -> Failure | None:
    mode = record.types  # tokens[1]: ok or error
    try:
        session.execute(record.sql)
    except pymysql.err.MySQLError as error:
        if mode == "error":
            return None
        errno, message = _error_parts(error)
        return Failure(record.line, record.sql, "error", errno=errno, message=message)
    if mode == "ok":
        return None
    if mode == "error":
        return Failure(record.line, record.sql, "unexpected success", message="expected an error")
    return Failure(record.line, record.sql, "bad record", message="statement must be ok or error")


def _run_query(session: _Session, record: Record, hash_threshold: int,
               labels: dict[str, str]) -> Failure | None:
    types = record.types
    if not types or any(c not in "TIR" for c in types):
        return Failure(record.line, record.sql, "bad record", message=f"bad type string {types!r}")
    try:
        fields, rows = session.execute(record.sql)
    except pymysql.err.MySQLError as error:
        errno, message = _error_parts(error)
        return Failure(record.line, record.sql, "error", expected=record.expected, errno=errno,
                       message=message)
    columns = len(fields) if fields is not None else 0
    if columns != len(types):
        return Failure(record.line, record.sql, "error", expected=record.expected,
                       message=f"wrong number of result columns: expected {len(types)} but got {columns}")
    values = [format_value(kind, raw, column)
              for row in rows for kind, raw, column in zip(types, row, fields)]
    values = sort_values(values, record.sort, len(types))
    if record.sort not in ("", "nosort", "rowsort", "valuesort"):
        return Failure(record.line, record.sql, "bad record", message=f"unknown sort method {record.sort!r}")
    problem = None
    digest = None
    if record.label or (hash_threshold > 0 and len(values) > hash_threshold):
        digest = hash_values(values)
        if record.label:
            previous = labels.setdefault(record.label, digest)
            if previous != digest:
                problem = "label"
    if hash_threshold == 0 or len(values) <= hash_threshold:
        if values != record.expected:
            problem = "wrong result"
        actual = values
    else:
        actual = [f"{len(values)} values hashing to {digest}"]
        if (record.expected[0] if record.expected else "") != actual[0]:
            problem = "wrong result"
            actual = actual + values
    if not record.has_separator:
        # The reference's verify mode then compares the last SQL line as the expected result.
        problem = "bad record"
    if problem is None:
        return None
    message = (f"the result's hash {digest} differs from an earlier query labelled {record.label!r}"
               if problem == "label" else "")
    return Failure(record.line, record.sql, problem, expected=record.expected, actual=actual,
                   message=message)


# --------------------------------------------------------------------------------------------
# CLI


def total_line(results: list[FileResult]) -> str:
    run = sum(r.run for r in results)
    passed = sum(r.passed for r in results)
    failed = sum(r.failed for r in results)
    skipped = sum(r.skipped for r in results)
    seconds = sum(r.seconds for r in results)
    rate = 100.0 * passed / run if run else 100.0
    return (f"{'TOTAL':<32} {run:>6} run {passed:>6} passed {failed:>6} failed "
            f"{skipped:>5} skipped {rate:>7.2f}% {seconds:>7.1f}s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=3306)
    parser.add_argument("--user", default="root")
    parser.add_argument("--password", default="")
    parser.add_argument("--files", default=",".join(DEFAULT_PATTERNS),
                        help="comma-separated names or globs under test/ (default: %(default)s)")
    parser.add_argument("--failures", type=int, default=3, help="failures shown per file")
    parser.add_argument("--engine", default=ENGINE, help="name for skipif/onlyif (default mysql)")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S,
                        help="seconds the client waits for one statement (0: no limit)")
    parser.add_argument("--statement-timeout", type=int, default=0, metavar="MS",
                        help="server-side limit on each SELECT in ms (max_execution_time / "
                             "max_statement_time; 0: none)")
    parser.add_argument("--budget", type=float, default=0, metavar="S",
                        help="seconds a file may take; the records left then fail (0: no limit)")
    parser.add_argument("--json", metavar="PATH", help="write every result here as JSON")
    parser.add_argument("--slowest", action="store_true", help="show each file's slowest records")
    parser.add_argument("--list", action="store_true", help="list the corpus files and exit")
    args = parser.parse_args(argv)

    corpus = Corpus.open()
    if args.list:
        print("\n".join(corpus.names))
        return 0
    names = corpus.select(p for p in args.files.split(",") if p.strip())
    target = Target(args.host, args.port, args.user, args.password, args.timeout,
                    args.statement_timeout)
    results = []
    for name in names:
        result = run_file(target, name, corpus.read(name), keep=max(args.failures, 0),
                          engine=args.engine, budget_s=args.budget or None)
        results.append(result)
        print(result.summary_line(), flush=True)
    print(total_line(results))
    if args.slowest:
        for result in results:
            for took, line, sql in result.slowest:
                print(f"{result.name}:{line}: {took:.2f}s  {' '.join(sql.split())[:150]}")
    if args.failures > 0:
        for result in results:
            for failure in result.failures[: args.failures]:
                print(f"\n{result.name}: {failure.describe()}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump([asdict(r) | {"pass_rate": r.pass_rate} for r in results], out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
