"""Runs the SQL behaviour scripts in tests/sql/*.test over the wire, one pytest case per file.

The format is sqllogictest's, trimmed to what MySQL needs. Records are separated by blank
lines; `#` starts a comment line.

    statement ok                 the statement succeeds
    statement error 1062         the statement fails with this MySQL errno
    statement count 2            the statement succeeds with this many affected rows
    query ITR [rowsort]          a query returning one column per letter (I integer,
    SELECT ...                   R real/decimal, T text); `rowsort` sorts the rows before
    ----                         comparing, otherwise order matters. Expected rows follow,
    1	abc	2.50                 tab-separated, NULL for NULL, (empty) for ''.

A line `onlyif quill` (or `onlyif mariadb`, `skipif quill`, `skipif mariadb`) before a
record limits it to one target; `skipfile mariadb <why>` skips the whole file on that target
(a file of MySQL 8 behaviour MariaDB does not share at all). Blocks marked `onlyif quill` hold MySQL 8 behaviour that
MariaDB does not share; each says why in a comment.

Values are compared exactly as the server sends them in the text protocol (no conversion to
Python types). A value that contains a newline spans lines in the expected output, as it
does in SHOW CREATE TABLE. Each file runs on one connection (autocommit on) in a fresh,
uniquely named database that is dropped afterwards; the first mismatch fails the case with
the file and line of the record.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pymysql
import pytest

SQL_DIR = Path(__file__).parent / "sql"
SCRIPTS = sorted(SQL_DIR.glob("*.test"))
INTEGER = re.compile(r"^-?\d+$")


@dataclass
class Record:
    line: int
    kind: str  # "statement" or "query"
    sql: str
    expect_error: int | None = None
    expect_count: int | None = None
    types: str = ""
    rowsort: bool = False
    expected: list[str] = field(default_factory=list)
    only_on: str | None = None
    skip_on: str | None = None

    def applies_to(self, target: str) -> bool:
        if self.only_on is not None and self.only_on != target:
            return False
        return self.skip_on != target


class ScriptError(Exception):
    pass


def parse_script(path: Path) -> list[Record]:
    lines = path.read_text().split("\n")
    records: list[Record] = []
    i = 0
    only_on = skip_on = None

    def fail(message):
        raise ScriptError(f"{path.name}:{i + 1}: {message}")

    while i < len(lines):
        line = lines[i]
        if not line.strip() or line.startswith("#"):
            i += 1
            continue
        words = line.split()
        if words[0] == "skipfile":
            i += 1
            continue
        if words[0] in ("onlyif", "skipif"):
            if len(words) != 2 or words[1] not in ("quill", "mariadb"):
                fail(f"bad directive {line!r}")
            if words[0] == "onlyif":
                only_on = words[1]
            else:
                skip_on = words[1]
            i += 1
            continue
        start = i
        if words[0] == "statement":
            record = Record(start + 1, "statement", "", only_on=only_on, skip_on=skip_on)
            if words[1:] == ["ok"]:
                pass
            elif len(words) == 3 and words[1] == "error" and words[2].isdigit():
                record.expect_error = int(words[2])
            elif len(words) == 3 and words[1] == "count" and words[2].isdigit():
                record.expect_count = int(words[2])
            else:
                fail(f"bad statement header {line!r}")
        elif words[0] == "query":
            if len(words) not in (2, 3) or not re.fullmatch(r"[ITR]+", words[1]):
                fail(f"bad query header {line!r}")
            if len(words) == 3 and words[2] != "rowsort":
                fail(f"unknown sort mode {words[2]!r}")
            record = Record(start + 1, "query", "", types=words[1], rowsort=len(words) == 3,
                            only_on=only_on, skip_on=skip_on)
        else:
            fail(f"expected statement/query/onlyif/skipif, got {line!r}")
        only_on = skip_on = None
        i += 1
        sql_lines = []
        while i < len(lines) and lines[i].strip() and lines[i] != "----":
            sql_lines.append(lines[i])
            i += 1
        if not sql_lines:
            fail("record without SQL")
        record.sql = "\n".join(sql_lines)
        if record.kind == "query":
            if i >= len(lines) or lines[i] != "----":
                fail("query without ---- separator")
            i += 1
            while i < len(lines) and lines[i] != "":
                record.expected.append(lines[i])
                i += 1
        records.append(record)
    return records


def render(value) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, (bytes, bytearray)):
        value = bytes(value).decode("utf-8", errors="backslashreplace")
    if value == "":
        return "(empty)"
    return value


def check_types(record: Record, rows: list[tuple]) -> str | None:
    for row in rows:
        if len(row) != len(record.types):
            return f"query returned {len(row)} columns, the header says {len(record.types)}"
        for letter, value in zip(record.types, row):
            if letter == "I" and value is not None and not INTEGER.match(render(value)):
                return f"column declared I returned {render(value)!r}"
    return None


def first_difference(expected: list[str], actual: list[str]) -> str:
    for n, (want, got) in enumerate(zip(expected, actual), start=1):
        if want != got:
            return f"first difference at result line {n}:\n  expected: {want!r}\n  actual:   {got!r}"
    return f"expected {len(expected)} result lines, got {len(actual)}"


def run_record(cur, record: Record) -> str | None:
    """None if the record holds, else what went wrong."""
    try:
        affected = cur.execute(record.sql)
        rows = list(cur.fetchall()) if cur.description else []
    except pymysql.err.MySQLError as error:
        errno = error.args[0] if error.args else None
        if record.expect_error is not None and errno == record.expect_error:
            return None
        wanted = f"error {record.expect_error}" if record.expect_error else "success"
        return f"expected {wanted}, got error {errno}: {error.args[1:]}"
    if record.expect_error is not None:
        return f"expected error {record.expect_error}, but the statement succeeded"
    if record.kind == "statement":
        if record.expect_count is not None and affected != record.expect_count:
            return f"expected {record.expect_count} affected rows, got {affected}"
        return None
    problem = check_types(record, rows)
    if problem:
        return problem
    rendered = ["\t".join(render(v) for v in row) for row in rows]
    if record.rowsort:
        rendered.sort()
    actual = "\n".join(rendered).split("\n") if rendered else []
    if actual != record.expected:
        return (
            first_difference(record.expected, actual)
            + "\n--- expected\n" + "\n".join(record.expected)
            + "\n--- actual\n" + "\n".join(actual)
        )
    return None


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.name for p in SCRIPTS])
def test_sql_script(server, fresh_db, script):
    records = parse_script(script)
    assert records, f"{script.name} has no records"
    for line in script.read_text().split("\n"):
        words = line.split(maxsplit=2)
        if words[:2] == ["skipfile", server.target]:
            pytest.skip(f"{script.name}: {words[2] if len(words) > 2 else 'not for this target'}")
    connection = server.connect(fresh_db, conv={}, autocommit=True)
    try:
        with connection.cursor() as cur:
            for record in records:
                if not record.applies_to(server.target):
                    continue
                problem = run_record(cur, record)
                if problem:
                    pytest.fail(
                        f"{script.relative_to(SQL_DIR.parent.parent)}:{record.line}: {problem}\n"
                        f"--- SQL\n{record.sql}",
                        pytrace=False,
                    )
    finally:
        connection.close()
