"""What an account may see: nothing of a database, another session or the server it has no
privilege for (issue 37's privilege leaks).

A table of (grant, statement, answer without the grant): each case runs the statement as a
fresh account holding only `SELECT ON <its database>.*`, expects MySQL's answer (an errno, or
no rows where MySQL filters rather than refuses), grants the one privilege, and expects the
statement to succeed and (for a filtered one) to show rows, so a check that hides
everything, or nothing, fails. The rules are MySQL 8's (the manual's pages on SHOW
PROCESSLIST, SHOW ENGINE, SHOW BINARY LOGS, SHOW CREATE VIEW, INFORMATION_SCHEMA access and
the Performance Schema's privileges). Cases MariaDB answers differently are marked quill-only
with the reason.
"""

from __future__ import annotations

import itertools

import pymysql
import pytest

from conftest import test_target

PASSWORD = "Visibility-Test-7c1e"
_numbers = itertools.count(1)

# `{db}`: the case's own database (table `t`, view `v`), on which the account has SELECT.
# `{other}`: a database with table `secret` (a primary key and an index) it has nothing in.
# Answers: an errno, or ROWS_HIDDEN (the statement succeeds and returns no rows).
ROWS_HIDDEN = "no rows"
QUILL_ONLY = "quill"

CASES = [
    # information_schema shows only what the account has some privilege on.
    ("SELECT ON {other}.*", "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = '{other}'", ROWS_HIDDEN, None),
    ("SELECT ON {other}.*", "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = '{other}'", ROWS_HIDDEN, None),
    ("SELECT ON {other}.*", "SELECT INDEX_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = '{other}'", ROWS_HIDDEN, None),
    ("SELECT ON {other}.*", "SELECT CONSTRAINT_NAME FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA = '{other}'", ROWS_HIDDEN, None),
    ("SELECT ON {other}.secret", "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = '{other}'", ROWS_HIDDEN, None),
    # MariaDB lists no PRIMARY KEY row in TABLE_CONSTRAINTS for an account without it even granted.
    ("SELECT ON {other}.*", "SELECT CONSTRAINT_NAME FROM information_schema.TABLE_CONSTRAINTS WHERE TABLE_SCHEMA = '{other}'", ROWS_HIDDEN, QUILL_ONLY),
    ("SELECT ON {other}.*", "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = '{other}'", ROWS_HIDDEN, None),
    ("SELECT ON {other}.*", "SHOW TABLES FROM {other}", 1044, None),
    ("SELECT ON {other}.*", "SHOW TABLE STATUS FROM {other}", 1044, None),
    ("SELECT ON {other}.*", "SHOW COLUMNS FROM {other}.secret", 1142, None),
    ("SELECT ON {other}.*", "SHOW INDEX FROM {other}.secret", 1142, None),
    # Other sessions' threads and statements need PROCESS (root's connection is open).
    ("PROCESS ON *.*", "SELECT ID FROM information_schema.PROCESSLIST WHERE USER = 'root'", ROWS_HIDDEN, None),
    ("PROCESS ON *.*", "SELECT * FROM information_schema.INNODB_TRX", 1227, None),
    ("PROCESS ON *.*", "SHOW ENGINE INNODB STATUS", 1227, None),
    # MariaDB has no performance_schema.data_locks (and keeps performance_schema off by default).
    ("SELECT ON performance_schema.*", "SELECT * FROM performance_schema.data_locks", 1142, QUILL_ONLY),
    # MariaDB's binary log is off on a default install (1381), and it names these privileges
    # BINLOG MONITOR and REPLICA MONITOR.
    ("REPLICATION CLIENT ON *.*", "SHOW BINARY LOGS", 1227, QUILL_ONLY),
    ("REPLICATION CLIENT ON *.*", "SHOW MASTER STATUS", 1227, QUILL_ONLY),
    ("REPLICATION CLIENT ON *.*", "SHOW REPLICA STATUS", 1227, QUILL_ONLY),
    ("SHOW VIEW ON {db}.*", "SHOW CREATE VIEW {db}.v", 1142, None),
]


def account_run(server, user, sql):
    """Runs `sql` as `user`: (None, rows) or (errno, None)."""
    conn = pymysql.connect(host=server.host, port=server.port, user=user, password=PASSWORD, autocommit=True, connect_timeout=10)
    try:
        with conn.cursor() as cur:
            cur.execute(sql)
            return None, cur.fetchall()
    except pymysql.err.MySQLError as e:
        return e.args[0], None
    finally:
        conn.close()


@pytest.mark.parametrize("grant, sql, without, only_on", CASES, ids=[f"{c[0]}: {c[1][:60]}" for c in CASES])
def test_an_account_sees_only_what_it_has_privileges_on(server, grant, sql, without, only_on):
    if only_on and only_on != test_target():
        pytest.skip("MariaDB answers differently (see the case's comment)")
    n = next(_numbers)
    user, db, other = f"vis{n}", f"vis_db{n}", f"vis_other{n}"
    root = server.connect()
    try:
        with root.cursor() as cur:
            if test_target() == "mariadb":
                # mariadb-install-db's anonymous ''@'localhost' would match before the account.
                cur.execute("DROP USER IF EXISTS ''@'localhost'")
            cur.execute(f"CREATE DATABASE {db}")
            cur.execute(f"CREATE TABLE {db}.t (id INT PRIMARY KEY)")
            cur.execute(f"CREATE VIEW {db}.v AS SELECT id FROM {db}.t")
            cur.execute(f"CREATE DATABASE {other}")
            cur.execute(f"CREATE TABLE {other}.secret (id INT PRIMARY KEY, code VARCHAR(10), KEY code (code))")
            cur.execute(f"CREATE USER '{user}'@'localhost' IDENTIFIED BY '{PASSWORD}'")
            cur.execute(f"GRANT SELECT ON {db}.* TO '{user}'@'localhost'")
        statement = sql.format(db=db, other=other)
        errno, rows = account_run(server, user, statement)
        if without == ROWS_HIDDEN:
            assert (errno, rows) == (None, ()), f"{statement}: hidden rows shown without {grant}"
        else:
            assert errno == without, f"{statement}: expected {without} without {grant}"
        with root.cursor() as cur:
            cur.execute(f"GRANT {grant.format(db=db, other=other)} TO '{user}'@'localhost'")
        errno, rows = account_run(server, user, statement)
        assert errno is None, f"{statement}: refused ({errno}) with {grant}"
        if without == ROWS_HIDDEN:
            assert rows, f"{statement}: nothing shown with {grant}"
    finally:
        with root.cursor() as cur:
            cur.execute(f"DROP USER IF EXISTS '{user}'@'localhost'")
            cur.execute(f"DROP DATABASE IF EXISTS {db}")
            cur.execute(f"DROP DATABASE IF EXISTS {other}")
        root.close()
