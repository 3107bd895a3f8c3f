"""A random-query fuzzer with oracles that need no reference server (SQLancer's methods).

Each seed builds a few tables (indexes, NULLs, strings in three collations, decimals, doubles,
dates and JSON), then generates random predicates and checks, for each:

- **TLP** (ternary logic partitioning): the rows of `SELECT ... WHERE p`, `WHERE NOT p` and
  `WHERE p IS NULL` together are exactly the rows of the query without WHERE (as a multiset),
  on one table and on joins; MIN and MAX of a column over the three parts give the whole's,
  SUM and COUNT add up, and the distinct values (DISTINCT, GROUP BY) are the parts' union;
- **NoREC**: `SELECT COUNT(*) ... WHERE p` (which the planner may answer through an index
  or a hash join) equals the count of rows for which `p IS TRUE`, computed row by row in the
  select list, where no optimization applies;
- **metadata**: every value of every result is read raw from the text protocol and checked
  against the column type the server announced (an integer column carries integers, a
  DOUBLE numbers, a DECIMAL at most its scale of digits, a DATE a date ...).

A query the server refuses (an error) is counted and skipped, not a failure: the oracles
judge answers, not coverage. A failure prints the seed, the statements and the command that
replays it:

    python3 tests/logic_fuzz.py --port 3306 --seed 17 --queries 500

Run it for as long as asked with `--seconds N` (seeds from `--seed` on). It needs only a
server to talk to (Quill or MySQL/MariaDB: the oracles hold for any correct server).
"""

from __future__ import annotations

import argparse
import datetime
import decimal
import random
import re
import sys
import time
from dataclasses import dataclass, field

import pymysql
from pymysql.constants import FIELD_TYPE

# Rows per table: enough that predicates split them, few enough that a query is quick.
ROWS_PER_TABLE = 40
# The deepest predicate the generator builds.
PREDICATE_DEPTH_MAX = 3

COLUMNS = [
    # name, type, generator kind
    ("i", "INT", "int"),
    ("u", "INT UNSIGNED", "uint"),
    ("d", "DECIMAL(10,2)", "decimal"),
    ("f", "DOUBLE", "double"),
    ("s", "VARCHAR(20)", "text"),
    ("sb", "VARCHAR(20) COLLATE utf8mb4_bin", "text"),
    ("sg", "VARCHAR(20) COLLATE utf8mb4_general_ci", "text"),
    ("dt", "DATE", "date"),
    ("ts", "DATETIME", "datetime"),
    ("j", "JSON", "json"),
]
WORDS = ["a", "A", "ab", "Ab", "abc", "b", "B", "ba", "é", "E", "", " a", "a ", "zz", "10", "9", "1e1", "-1"]


@dataclass
class Failure:
    oracle: str
    statements: list[str]
    detail: str


@dataclass
class Report:
    queries: int = 0
    refused: dict[int, int] = field(default_factory=dict)
    failures: list[Failure] = field(default_factory=list)


class Generator:
    def __init__(self, rng: random.Random, tables: list[str]):
        self.rng = rng
        self.tables = tables

    def value(self, kind: str) -> str:
        r = self.rng
        if r.random() < 0.15:
            return "NULL"
        if kind == "int":
            return str(r.choice([0, 1, -1, 2, 3, 10, 100, -100, 2147483647, r.randint(-50, 50)]))
        if kind == "uint":
            return str(r.choice([0, 1, 2, 10, 4294967295, r.randint(0, 100)]))
        if kind == "decimal":
            return r.choice(["0.00", "1.50", "-1.50", "2.25", "99.99", "-0.01", f"{r.randint(-999, 999) / 100:.2f}"])
        if kind == "double":
            return r.choice(["0", "1.5e0", "-2.25e0", "1e10", "0.1", "3", f"{r.uniform(-100, 100):.3f}"])
        if kind == "text":
            return "'" + r.choice(WORDS).replace("'", "''") + "'"
        if kind == "date":
            return f"'{r.choice(['2020-01-01', '2020-02-29', '1999-12-31', '2024-06-15', '2000-01-01'])}'"
        if kind == "datetime":
            return f"'{r.choice(['2020-01-01 00:00:00', '2020-01-01 12:30:00', '1999-12-31 23:59:59', '2024-06-15 08:00:00'])}'"
        if kind == "json":
            return "'" + r.choice(['{"a": 1}', '{"a": "x"}', '{"a": true}', '{"a": null}', '[1, 2]', '{"a": 1.5, "b": [1]}', '"s"', "3"]) + "'"
        raise AssertionError(kind)

    def column(self, table: str | None = None) -> tuple[str, str]:
        name, _, kind = self.rng.choice(COLUMNS)
        table = table or self.rng.choice(self.tables)
        return f"{table}.{name}", kind

    def scalar(self, tables: list[str], depth: int) -> str:
        r = self.rng
        col, kind = self.column(r.choice(tables))
        choice = r.random()
        if depth <= 0 or choice < 0.45:
            return col if r.random() < 0.75 else self.value(kind)
        wrappers = [
            lambda x: f"ABS({x})",
            lambda x: f"COALESCE({x}, {self.value(kind)})",
            lambda x: f"IFNULL({x}, {self.value('int')})",
            lambda x: f"NULLIF({x}, {self.value(kind)})",
            lambda x: f"LENGTH({x})",
            lambda x: f"UPPER({x})",
            lambda x: f"LOWER({x})",
            lambda x: f"CONCAT({x}, 'x')",
            lambda x: f"CAST({x} AS SIGNED)",
            lambda x: f"CAST({x} AS CHAR)",
            lambda x: f"CAST({x} AS DECIMAL(10,2))",
            lambda x: f"({x} + 1)",
            lambda x: f"({x} * 2)",
            lambda x: f"({x} - {self.value('int')})",
            lambda x: f"IF({self.predicate(tables, depth - 1)}, {x}, {self.value(kind)})",
            lambda x: f"JSON_EXTRACT({tables[0]}.j, '$.a')",
        ]
        return r.choice(wrappers)(self.scalar(tables, depth - 1))

    def predicate(self, tables: list[str], depth: int = PREDICATE_DEPTH_MAX) -> str:
        r = self.rng
        if depth > 0 and r.random() < 0.35:
            op = r.choice(["AND", "OR", "XOR"])
            return f"({self.predicate(tables, depth - 1)} {op} {self.predicate(tables, depth - 1)})"
        if depth > 0 and r.random() < 0.1:
            return f"(NOT {self.predicate(tables, depth - 1)})"
        a = self.scalar(tables, depth - 1)
        kind = r.random()
        if kind < 0.45:
            op = r.choice(["=", "<>", "<", "<=", ">", ">=", "<=>"])
            return f"({a} {op} {self.scalar(tables, depth - 1)})"
        if kind < 0.55:
            return f"({a} IS {r.choice(['', 'NOT '])}NULL)"
        if kind < 0.65:
            return f"({a} {r.choice(['', 'NOT '])}BETWEEN {self.scalar(tables, 0)} AND {self.scalar(tables, 0)})"
        if kind < 0.75:
            items = ", ".join(self.scalar(tables, 0) for _ in range(r.randint(1, 4)))
            return f"({a} {r.choice(['', 'NOT '])}IN ({items}))"
        if kind < 0.85:
            pattern = r.choice(["a%", "%a", "%b%", "_", "A_", "%", "a", "é%"])
            return f"({a} {r.choice(['', 'NOT '])}LIKE {r.choice(['', 'BINARY '])}'{pattern}')"
        if kind < 0.92:
            return f"({a} IS {r.choice(['', 'NOT '])}{r.choice(['TRUE', 'FALSE'])})"
        return f"({a})"


def sorted_rows(rows) -> list:
    return sorted(rows, key=lambda row: [(v is None, str(v)) for v in row])


TYPE_CHECKS = {
    FIELD_TYPE.TINY: re.compile(r"^-?\d+$"),
    FIELD_TYPE.SHORT: re.compile(r"^-?\d+$"),
    FIELD_TYPE.INT24: re.compile(r"^-?\d+$"),
    FIELD_TYPE.LONG: re.compile(r"^-?\d+$"),
    FIELD_TYPE.LONGLONG: re.compile(r"^-?\d+$"),
    FIELD_TYPE.YEAR: re.compile(r"^\d{1,4}$"),
    FIELD_TYPE.DOUBLE: re.compile(r"^-?(\d+(\.\d+)?(e[-+]?\d+)?|inf|nan)$", re.I),
    FIELD_TYPE.FLOAT: re.compile(r"^-?(\d+(\.\d+)?(e[-+]?\d+)?|inf|nan)$", re.I),
    FIELD_TYPE.NEWDECIMAL: re.compile(r"^-?\d+(\.\d+)?$"),
    FIELD_TYPE.DATE: re.compile(r"^\d{4}-\d{2}-\d{2}$"),
    FIELD_TYPE.DATETIME: re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d{1,6})?$"),
    FIELD_TYPE.TIMESTAMP: re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d{1,6})?$"),
    FIELD_TYPE.TIME: re.compile(r"^-?\d{2,3}:\d{2}:\d{2}(\.\d{1,6})?$"),
}


def metadata_problem(description, rows) -> str | None:
    """Why a value does not fit the type its column was announced with, if one does not."""
    for row in rows:
        for column, raw in zip(description, row):
            if raw is None:
                continue
            text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
            check = TYPE_CHECKS.get(column[1])
            if check is not None and not check.match(text):
                return f"column {column[0]!r} is type {column[1]} but carries {text!r}"
            if column[1] == FIELD_TYPE.NEWDECIMAL and "." in text and len(text.split(".")[1]) > column[5]:
                return f"column {column[0]!r} is DECIMAL with {column[5]} decimals but carries {text!r}"
    return None


class Fuzzer:
    def __init__(self, host: str, port: int, user: str, password: str, seed: int):
        self.seed = seed
        self.rng = random.Random(seed)
        self.database = f"logic_fuzz_{seed}"
        self.conn = pymysql.connect(host=host, port=port, user=user, password=password, autocommit=True, conv={})
        self.setup: list[str] = []
        self.report = Report()

    def run_setup(self, sql: str) -> None:
        self.setup.append(sql)
        with self.conn.cursor() as cur:
            cur.execute(sql)

    def create_tables(self) -> list[str]:
        self.run_setup(f"DROP DATABASE IF EXISTS {self.database}")
        self.run_setup(f"CREATE DATABASE {self.database}")
        self.run_setup(f"USE {self.database}")
        generator = Generator(self.rng, [])
        tables = ["t0", "t1"]
        for table in tables:
            columns = ", ".join(f"{name} {sql_type}" for name, sql_type, _ in COLUMNS)
            self.run_setup(f"CREATE TABLE {table} (id INT PRIMARY KEY, {columns}, KEY (i), KEY (s), KEY (d, u), KEY (dt))")
            values = []
            for row_id in range(ROWS_PER_TABLE):
                values.append("(" + ", ".join([str(row_id)] + [generator.value(kind) for _, _, kind in COLUMNS]) + ")")
            self.run_setup(f"INSERT IGNORE INTO {table} VALUES {', '.join(values)}")
        return tables

    def query(self, sql: str):
        """(description, rows) or None if the server refused the statement."""
        self.report.queries += 1
        try:
            with self.conn.cursor() as cur:
                cur.execute(sql)
                return cur.description, cur.fetchall()
        except pymysql.err.MySQLError as e:
            code = e.args[0] if e.args else 0
            self.report.refused[code] = self.report.refused.get(code, 0) + 1
            return None

    def fail(self, oracle: str, statements: list[str], detail: str) -> None:
        self.report.failures.append(Failure(oracle, statements, detail))

    def checked(self, sql: str):
        result = self.query(sql)
        if result is not None:
            problem = metadata_problem(*result)
            if problem:
                self.fail("metadata", [sql], problem)
        return result

    def from_clause(self) -> tuple[str, list[str]]:
        r = self.rng.random()
        if r < 0.5:
            return "t0", ["t0"]
        if r < 0.7:
            return "t0 JOIN t1 ON t0.i = t1.i", ["t0", "t1"]
        if r < 0.85:
            return "t0 LEFT JOIN t1 ON t0.s = t1.s", ["t0", "t1"]
        return "t0, t1", ["t0", "t1"]

    @staticmethod
    def partitions(p: str) -> list[str]:
        """The three conditions TLP splits a query by: p, NOT p and p IS NULL."""
        return [p, f"NOT {p}", f"({p}) IS NULL"]

    def whole_and_parts(self, whole_sql: str, parts_sql: list[str]):
        """The results of a query and of its three parts (metadata checked), or None if the
        server refused any of them."""
        whole = self.checked(whole_sql)
        parts = [self.checked(sql) for sql in parts_sql]
        if whole is None or any(part is None for part in parts):
            return None
        return whole, parts

    def tlp_rows(self, generator: Generator) -> None:
        source, tables = self.from_clause()
        p = generator.predicate(tables)
        columns = ", ".join(f"{t}.id" for t in tables) + f", {generator.scalar(tables, 1)}"
        whole_sql = f"SELECT {columns} FROM {source}"
        parts_sql = [f"{whole_sql} WHERE {c}" for c in self.partitions(p)]
        results = self.whole_and_parts(whole_sql, parts_sql)
        if results is None:
            return
        whole, parts = results
        together = [row for part in parts for row in part[1]]
        if sorted_rows(together) != sorted_rows(whole[1]):
            self.fail("TLP rows", [whole_sql, *parts_sql], f"{len(whole[1])} rows in all, {[len(part[1]) for part in parts]} in the parts")

    def tlp_min_max(self, generator: Generator) -> None:
        source, tables = self.from_clause()
        p = generator.predicate(tables)
        column, kind = generator.column(tables[0])
        if kind in ("json", "text"):
            return
        func = self.rng.choice(["MIN", "MAX"])
        whole_sql = f"SELECT {func}({column}) FROM {source}"
        parts_sql = [f"{whole_sql} WHERE {c}" for c in self.partitions(p)]
        results = self.whole_and_parts(whole_sql, parts_sql)
        if results is None:
            return
        whole, parts = results
        values = [part[1][0][0] for part in parts if part[1][0][0] is not None]
        expected = whole[1][0][0]

        def number(raw):
            text = raw.decode() if isinstance(raw, bytes) else str(raw)
            try:
                return decimal.Decimal(text)
            except decimal.InvalidOperation:
                return text

        combined = (min if func == "MIN" else max)(values, key=number) if values else None
        if (combined is None) != (expected is None) or (combined is not None and number(combined) != number(expected)):
            self.fail(f"TLP {func}", [whole_sql, *parts_sql], f"whole {expected!r}, parts give {combined!r}")

    def tlp_distinct(self, generator: Generator) -> None:
        """DISTINCT and GROUP BY: the distinct values of the whole are the union of the
        distinct values of the three parts."""
        source, tables = self.from_clause()
        p = generator.predicate(tables)
        value = generator.scalar(tables, 1)
        shape = self.rng.choice(["SELECT DISTINCT {v} FROM {s}", "SELECT {v} FROM {s} GROUP BY {v}"])
        whole_sql = shape.format(v=value, s=source)
        if "GROUP BY" in whole_sql:
            parts_sql = [f"SELECT {value} FROM {source} WHERE {c} GROUP BY {value}" for c in self.partitions(p)]
        else:
            parts_sql = [f"{whole_sql} WHERE {c}" for c in self.partitions(p)]
        # Values equal under the column's collation ('a' and 'A' in a _ci one) are one value:
        # the server, not Python, dedups the parts' union.
        union_sql = f"SELECT COUNT(*) FROM ({' UNION '.join(parts_sql)}) AS parts"
        whole = self.checked(whole_sql)
        union = self.checked(union_sql)
        if whole is None or union is None:
            return
        if int(union[1][0][0]) != len(whole[1]):
            self.fail("TLP distinct", [whole_sql, union_sql], f"{len(whole[1])} values in all, {int(union[1][0][0])} in the parts' union")

    def tlp_sum(self, generator: Generator) -> None:
        """SUM and COUNT of an exact column: the whole's is the parts' total."""
        source, tables = self.from_clause()
        p = generator.predicate(tables)
        column = f"{tables[-1]}.{self.rng.choice(['i', 'u', 'd'])}"
        whole_sql = f"SELECT SUM({column}), COUNT({column}) FROM {source}"
        parts_sql = [f"{whole_sql} WHERE {c}" for c in self.partitions(p)]
        results = self.whole_and_parts(whole_sql, parts_sql)
        if results is None:
            return
        whole, parts = results

        def exact(raw):
            return decimal.Decimal(raw.decode() if isinstance(raw, bytes) else str(raw)) if raw is not None else decimal.Decimal(0)

        sums = sum(exact(part[1][0][0]) for part in parts)
        counts = sum(int(part[1][0][1]) for part in parts)
        if sums != exact(whole[1][0][0]) or counts != int(whole[1][0][1]):
            self.fail("TLP SUM/COUNT", [whole_sql, *parts_sql], f"whole {whole[1][0]!r}, parts total {sums}, {counts}")

    def norec(self, generator: Generator) -> None:
        source, tables = self.from_clause()
        p = generator.predicate(tables)
        optimized_sql = f"SELECT COUNT(*) FROM {source} WHERE {p}"
        plain_sql = f"SELECT ({p}) IS TRUE FROM {source}"
        optimized = self.checked(optimized_sql)
        plain = self.checked(plain_sql)
        if optimized is None or plain is None:
            return
        counted = int(optimized[1][0][0])
        truths = sum(1 for row in plain[1] if row[0] is not None and int(row[0]) == 1)
        if counted != truths:
            self.fail("NoREC", [optimized_sql, plain_sql], f"COUNT(*) says {counted}, the rows say {truths}")

    def run(self, queries: int) -> Report:
        tables = self.create_tables()
        generator = Generator(self.rng, tables)
        oracles = [self.tlp_rows, self.tlp_rows, self.norec, self.norec, self.tlp_min_max, self.tlp_distinct, self.tlp_sum]
        while self.report.queries < queries:
            self.rng.choice(oracles)(generator)
        with self.conn.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS {self.database}")
        self.conn.close()
        return self.report


def replay_command(port: int, seed: int, queries: int) -> str:
    return f"python3 tests/logic_fuzz.py --port {port} --seed {seed} --queries {queries}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=3306)
    parser.add_argument("--user", default="root")
    parser.add_argument("--password", default="")
    parser.add_argument("--seed", type=int, default=None, help="the first seed (random if not given)")
    parser.add_argument("--seeds", type=int, default=1, help="how many seeds, from --seed on")
    parser.add_argument("--queries", type=int, default=1000, help="queries per seed")
    parser.add_argument("--seconds", type=float, default=None, help="keep taking seeds until this much time has passed")
    args = parser.parse_args()
    first = args.seed if args.seed is not None else random.randrange(1_000_000)
    started = time.monotonic()
    seed, failed, total = first, 0, 0
    while True:
        report = Fuzzer(args.host, args.port, args.user, args.password, seed).run(args.queries)
        total += report.queries
        for failure in report.failures[:5]:
            failed += 1
            print(f"FAIL seed {seed}: {failure.oracle}: {failure.detail}")
            for sql in failure.statements:
                print(f"    {sql};")
            print(f"  replay: {replay_command(args.port, seed, args.queries)}")
        seed += 1
        done_seeds = seed - first
        if args.seconds is not None:
            if time.monotonic() - started >= args.seconds:
                break
        elif done_seeds >= args.seeds:
            break
    print(f"logic fuzz: {total} queries over seeds {first}..{seed - 1}, {failed} failure(s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
