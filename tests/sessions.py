"""Helpers for tests that drive several PyMySQL sessions at once: one statement's first row or
all its rows, statements run in turn, a call run in a thread whose outcome the test reads later,
and a wait for a condition; the MySQL error number a statement fails with, and a result's
column names."""

import threading
import time

import pymysql


def one(conn, sql, args=None):
    """The first row of `sql`."""
    with conn.cursor() as cur:
        cur.execute(sql, args)
        return cur.fetchone()


def all_rows(conn, sql, args=None):
    """Every row of `sql`."""
    with conn.cursor() as cur:
        cur.execute(sql, args)
        return cur.fetchall()


def error_code(conn, sql):
    """The MySQL error number `sql` fails with (the test fails if it succeeds)."""
    with conn.cursor() as cur:
        try:
            cur.execute(sql)
        except pymysql.err.MySQLError as e:
            return e.args[0]
    raise AssertionError(f"succeeded, an error was expected: {sql}")


def column_names(conn, sql):
    """The names of `sql`'s result columns."""
    with conn.cursor() as cur:
        cur.execute(sql)
        return [d[0] for d in cur.description]


def execute(conn, *statements):
    """Runs `statements` one after another on `conn`."""
    with conn.cursor() as cur:
        for sql in statements:
            cur.execute(sql)


def in_thread(fn):
    """Runs `fn` in a thread; the returned dict gets `value` or `error` when it ends, and
    `thread` to join."""
    out = {}

    def run():
        try:
            out["value"] = fn()
        except Exception as e:  # noqa: BLE001 - handed to the test
            out["error"] = e

    out["thread"] = threading.Thread(target=run, daemon=True)
    out["thread"].start()
    return out


def wait_until(predicate, timeout_s=10.0):
    """Polls `predicate` every 10 ms until it holds; fails the test after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)
