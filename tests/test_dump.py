"""Backups with the tools users have: `mariadb-dump` dumps, the `mariadb` client restores.

Round trips, each compared table by table with CHECKSUM TABLE (on the server that holds
both copies) and with the rows themselves:
- a dump of the server under test restores into it, with the default options,
  `--single-transaction` and `--skip-lock-tables`;
- the same dump restores into MariaDB (tables in a collation MariaDB 10.11 has: it lacks
  MySQL 8's default utf8mb4_0900_ai_ci, so a dump of tables in that collation does not
  restore into it, from MySQL 8 or from Quill alike);
- a dump made by MariaDB restores into the server under test.

And what dumps rely on: the @OLD_ variables a dump saves and restores, SQL_QUOTE_SHOW_CREATE,
CHECKSUM TABLE's stability. LOCK TABLES and savepoints have tests of their own
(test_lock_tables.py).
"""

from __future__ import annotations

import decimal
import subprocess

import pymysql
import pytest

from conftest import scratch_database

# Rows that exercise a dump's quoting and types: quotes, backslashes, newlines, NULLs,
# non-ASCII text, binary bytes, decimals, dates.
CREATE_TABLES = [
    """CREATE TABLE items (
         id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
         name VARCHAR(40),
         price DECIMAL(10,2),
         qty INT NOT NULL DEFAULT 0,
         made DATETIME,
         note TEXT,
         KEY qty (qty)
       ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci""",
    """CREATE TABLE blobs (
         k CHAR(8) NOT NULL PRIMARY KEY,
         b VARBINARY(64),
         big BIGINT UNSIGNED
       ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin""",
]
ROWS = {
    "items": [
        (1, "plain", decimal.Decimal("1.50"), 3, "2024-02-29 12:34:56", None),
        (2, "it's", decimal.Decimal("-2.00"), 0, None, "line one\nline two\ttab"),
        (3, "back\\slash \"q\"", None, 7, "1999-12-31 23:59:59", "Grüße, 日本語, 🙂"),
        (4, None, decimal.Decimal("99999999.99"), 1, None, ""),
    ],
    "blobs": [
        ("a", b"\x00\x01\x02\xff'\\\n", 18446744073709551615),
        ("b", b"", 0),
        ("c", None, None),
    ],
}
# Enough rows that the dump writes several extended INSERT statements.
BULK_ROWS = 3000


def fill(conn) -> None:
    with conn.cursor() as cur:
        for ddl in CREATE_TABLES:
            cur.execute(ddl)
        cur.executemany("INSERT INTO items VALUES (%s, %s, %s, %s, %s, %s)", ROWS["items"])
        cur.executemany("INSERT INTO blobs VALUES (%s, %s, %s)", ROWS["blobs"])
        cur.executemany(
            "INSERT INTO items (name, price, qty, note) VALUES (%s, %s, %s, %s)",
            [(f"bulk {i}", decimal.Decimal(i) / 100, i % 17, "x" * (i % 50)) for i in range(BULK_ROWS)],
        )


def rows_of(conn, table: str):
    with conn.cursor() as cur:
        cur.execute(f"SELECT * FROM `{table}` ORDER BY 1")
        return cur.fetchall()


def checksum(conn, table: str):
    with conn.cursor() as cur:
        cur.execute(f"CHECKSUM TABLE `{table}`")
        return cur.fetchone()[1]


def dump(server, db: str, *options: str) -> bytes:
    """The dump as bytes: binary columns make it no valid UTF-8."""
    out = subprocess.run(
        ["mariadb-dump", f"--host={server.host}", f"--port={server.port}", f"--user={server.user}",
         *options, db],
        capture_output=True, timeout=120,
    )
    assert out.returncode == 0, out.stderr.decode(errors="replace")
    assert b"Dump completed" in out.stdout
    return out.stdout


def restore(server, db: str, script: bytes, extra_sql: str = "") -> str:
    out = subprocess.run(
        ["mariadb", f"--host={server.host}", f"--port={server.port}", f"--user={server.user}",
         "--batch", "--skip-column-names", db],
        input=script + extra_sql.encode(), capture_output=True, timeout=120,
    )
    assert out.returncode == 0, out.stderr.decode(errors="replace")
    return out.stdout.decode(errors="replace")


@pytest.fixture
def other_db(server):
    with scratch_database(server, "restore") as name:
        yield name


@pytest.mark.parametrize("options", [(), ("--single-transaction",), ("--skip-lock-tables",)], ids=["default", "single-transaction", "skip-lock-tables"])
def test_a_dump_restores_into_the_same_server_with_equal_checksums(server, fresh_db, other_db, options):
    source = server.connect(fresh_db)
    fill(source)
    script = dump(server, fresh_db, *options)
    assert b"CREATE TABLE `items`" in script and b"INSERT INTO `items` VALUES" in script
    restore(server, other_db, script)
    copy = server.connect(other_db)
    for table in ("items", "blobs"):
        assert rows_of(copy, table) == rows_of(source, table)
        with source.cursor() as cur:
            cur.execute(f"CHECKSUM TABLE `{fresh_db}`.`{table}`, `{other_db}`.`{table}`")
            (_, original), (_, restored) = cur.fetchall()
        assert original is not None and original == restored
        with source.cursor() as a, copy.cursor() as b:
            a.execute(f"SHOW CREATE TABLE `{table}`")
            b.execute(f"SHOW CREATE TABLE `{table}`")
            assert a.fetchone() == b.fetchone()
    source.close()
    copy.close()


def test_a_dump_saves_and_restores_the_session_variables_it_changes(server, fresh_db, other_db):
    fill(server.connect(fresh_db))
    script = dump(server, fresh_db)
    assert b"SET @OLD_SQL_MODE=@@SQL_MODE" in script
    # The restoring session's settings are the same after the script as before it.
    probe = "SELECT @@session.sql_mode, @@session.time_zone, @@session.character_set_client, @@session.sql_notes;\n"
    before = restore(server, other_db, b"", probe)
    after = restore(server, other_db, script, probe)
    assert after.strip().splitlines()[-1] == before.strip().splitlines()[-1]


def test_a_dump_of_the_server_restores_into_mariadb(server, mariadb_reference, fresh_db):
    source = server.connect(fresh_db)
    fill(source)
    script = dump(server, fresh_db, "--single-transaction")
    with scratch_database(mariadb_reference, "from_dump") as target_db:
        restore(mariadb_reference, target_db, script)
        copy = mariadb_reference.connect(target_db)
        for table in ("items", "blobs"):
            assert rows_of(copy, table) == rows_of(source, table)
        copy.close()
    source.close()


def test_a_dump_made_by_mariadb_restores_into_the_server(server, mariadb_reference, fresh_db):
    with scratch_database(mariadb_reference, "to_dump") as source_db:
        source = mariadb_reference.connect(source_db)
        fill(source)
        script = dump(mariadb_reference, source_db)
        restore(server, fresh_db, script)
        copy = server.connect(fresh_db)
        for table in ("items", "blobs"):
            assert rows_of(copy, table) == rows_of(source, table)
            # The same rows give the same checksum, however often it is taken.
            assert checksum(copy, table) == checksum(copy, table) is not None
        source.close()
        copy.close()


def test_checksum_table_depends_on_the_rows_not_their_order(conn):
    with conn.cursor() as cur:
        for t in ("a", "b"):
            cur.execute(f"CREATE TABLE {t} (id INT PRIMARY KEY, v VARCHAR(10), d DECIMAL(5,2))")
        cur.execute("INSERT INTO a VALUES (1, 'x', 1.5), (2, NULL, NULL), (3, '', 0)")
        cur.execute("INSERT INTO b VALUES (3, '', 0), (1, 'x', 1.5)")
        cur.execute("INSERT INTO b VALUES (2, NULL, NULL)")
        cur.execute("CHECKSUM TABLE a, b")
        (name_a, sum_a), (_, sum_b) = cur.fetchall()
        assert name_a.endswith(".a") and sum_a == sum_b and sum_a != 0
        cur.execute("UPDATE b SET v = 'y' WHERE id = 1")
        cur.execute("CHECKSUM TABLE b")
        assert cur.fetchone()[1] != sum_a
        cur.execute("CREATE TABLE e (id INT PRIMARY KEY)")
        cur.execute("CHECKSUM TABLE e")
        assert cur.fetchone()[1] == 0
        cur.execute("CHECKSUM TABLE nope")
        assert cur.fetchone()[1] is None
        cur.execute("SHOW WARNINGS")
        assert [(w[0], w[1]) for w in cur.fetchall()] == [("Error", 1146)]


def test_sql_quote_show_create_controls_backquotes(conn):
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE plain_t (x1 INT PRIMARY KEY, `select` INT, `odd name` INT, `12` INT)")
        cur.execute("SET SQL_QUOTE_SHOW_CREATE = 0")
        cur.execute("SHOW CREATE TABLE plain_t")
        ddl = cur.fetchone()[1]
        assert ddl.startswith("CREATE TABLE plain_t (")
        # Keywords, names with other characters and names of digits only keep their quotes.
        assert "  x1 int" in ddl and "`select` int" in ddl and "`odd name` int" in ddl and "`12` int" in ddl
        cur.execute("SET SQL_QUOTE_SHOW_CREATE = 1")
        cur.execute("SHOW CREATE TABLE plain_t")
        assert cur.fetchone()[1].startswith("CREATE TABLE `plain_t` (")


def test_sql_notes_off_keeps_notes_out_of_show_warnings(conn):
    with conn.cursor() as cur:
        cur.execute("DROP TABLE IF EXISTS missing_table")
        cur.execute("SHOW WARNINGS")
        assert [w[1] for w in cur.fetchall()] == [1051]
        cur.execute("SET sql_notes = 0")
        cur.execute("DROP TABLE IF EXISTS missing_table")
        cur.execute("SHOW WARNINGS")
        assert cur.fetchall() == ()
        cur.execute("SET sql_notes = 1")


def test_information_schema_columns_has_the_sizes_dump_tools_read(conn):
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE ic (d DATETIME(3), v VARCHAR(40), i INT)")
        cur.execute(
            "SELECT COLUMN_NAME, CHARACTER_OCTET_LENGTH, DATETIME_PRECISION FROM information_schema.COLUMNS "
            "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'ic' ORDER BY ORDINAL_POSITION"
        )
        assert cur.fetchall() == (("d", None, 3), ("v", 160, None), ("i", None, None))
