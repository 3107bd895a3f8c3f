"""Row formats: `ROW_FORMAT=FIXED` keeps every row in slots of one size (CHAR and VARCHAR
padded to their maximum, as MyISAM's fixed rows), `DYNAMIC` (the default) stores each row in
the bytes it needs; SHOW TABLE STATUS and information_schema.TABLES report `Row_format`,
`Avg_row_length`, `Data_length` and `Index_length` from what the row store holds.

MariaDB's InnoDB refuses FIXED (MyISAM has it), so the tests that create a FIXED table are
Quill's own; the syntax and the status columns' names are checked on both.
"""

from __future__ import annotations

from decimal import Decimal

import pymysql
import pytest

from conftest import PrivateQuill, test_target

COLUMNS = "(id INT PRIMARY KEY, pzn CHAR(8), artikel VARCHAR(40), preis DECIMAL(10,2))"


def status(cur, table: str) -> dict:
    cur.execute(f"SHOW TABLE STATUS LIKE '{table}'")
    names = [d[0] for d in cur.description]
    return dict(zip(names, cur.fetchone()))


def fill(cur, table: str, rows: int, text_length) -> None:
    values = ",".join(f"({i}, '{i:08}', '{'x' * text_length(i)}', {i}.25)" for i in range(rows))
    cur.execute(f"INSERT INTO {table} VALUES {values}")


def test_show_table_status_has_mysqls_columns(conn):
    with conn.cursor() as cur:
        cur.execute(f"CREATE TABLE t {COLUMNS}")
        cur.execute("INSERT INTO t VALUES (1, 'a', 'b', 1)")
        row = status(cur, "t")
        # MariaDB adds Max_index_length and Temporary after MySQL's columns.
        assert list(row)[:18] == ["Name", "Engine", "Version", "Row_format", "Rows", "Avg_row_length", "Data_length", "Max_data_length",
                             "Index_length", "Data_free", "Auto_increment", "Create_time", "Update_time", "Check_time", "Collation",
                             "Checksum", "Create_options", "Comment"]
        assert row["Row_format"] == "Dynamic" and row["Rows"] == 1 and row["Data_length"] > 0
        cur.execute("SELECT ROW_FORMAT, DATA_LENGTH > 0, AVG_ROW_LENGTH > 0, CREATE_OPTIONS FROM information_schema.TABLES "
                    "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 't'")
        assert cur.fetchone() == ("Dynamic", 1, 1, "")


def refused(cur, sql: str, code: int) -> None:
    """`sql` fails with MySQL error `code`."""
    with pytest.raises(pymysql.err.MySQLError) as e:
        cur.execute(sql)
    assert e.value.args[0] == code, sql


def test_an_unknown_row_format_is_a_syntax_error(conn):
    with conn.cursor() as cur:
        refused(cur, "CREATE TABLE t (a INT) ROW_FORMAT=SQUARE", 1064)


@pytest.mark.mysql8_only  # Quill's own: InnoDB has no FIXED rows
def test_fixed_rows_all_take_one_slot_size_and_dynamic_rows_what_they_need(conn):
    with conn.cursor() as cur:
        cur.execute(f"CREATE TABLE fixed {COLUMNS} ROW_FORMAT=FIXED")
        cur.execute(f"CREATE TABLE dyn {COLUMNS} ROW_FORMAT=DYNAMIC")
        for table in ("fixed", "dyn"):
            fill(cur, table, 100, lambda i: 1)
        short_fixed, short_dyn = status(cur, "fixed"), status(cur, "dyn")
        for table in ("fixed", "dyn"):
            cur.execute(f"DELETE FROM {table}")
            fill(cur, table, 100, lambda i: 40)
        long_fixed, long_dyn = status(cur, "fixed"), status(cur, "dyn")

        assert short_fixed["Row_format"] == "Fixed" and short_dyn["Row_format"] == "Dynamic"
        assert short_fixed["Create_options"] == "row_format=FIXED" and short_dyn["Create_options"] == "row_format=DYNAMIC"
        # A fixed row's slot holds VARCHAR(40)'s 160 bytes whatever the value: same size.
        assert short_fixed["Avg_row_length"] == long_fixed["Avg_row_length"] > 4 * 40 + 4 * 8
        assert short_fixed["Data_length"] == long_fixed["Data_length"] == 100 * short_fixed["Avg_row_length"]
        # A dynamic row grows by the 39 more characters it holds.
        assert long_dyn["Avg_row_length"] - short_dyn["Avg_row_length"] == 39
        assert long_dyn["Avg_row_length"] < long_fixed["Avg_row_length"] / 2
        # Both tables hold the same rows.
        cur.execute("SELECT COUNT(*) FROM fixed JOIN dyn USING (id, pzn, artikel, preis)")
        assert cur.fetchone() == (100,)


@pytest.mark.mysql8_only
def test_fixed_is_kept_by_like_truncate_and_show_create(conn):
    with conn.cursor() as cur:
        cur.execute(f"CREATE TABLE fixed {COLUMNS} ROW_FORMAT=FIXED COMMENT='price list'")
        cur.execute("SHOW CREATE TABLE fixed")
        assert cur.fetchone()[1].endswith("ROW_FORMAT=FIXED COMMENT='price list'")
        cur.execute("CREATE TABLE copy LIKE fixed")
        fill(cur, "copy", 3, lambda i: i)
        assert status(cur, "copy")["Row_format"] == "Fixed"
        cur.execute("TRUNCATE TABLE copy")
        fill(cur, "copy", 3, lambda i: i)
        assert status(cur, "copy")["Row_format"] == "Fixed"


@pytest.mark.mysql8_only
def test_fixed_with_a_text_column_or_a_format_quill_lacks_is_dynamic_with_warning_1478(conn):
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE notes (id INT PRIMARY KEY, body TEXT) ROW_FORMAT=FIXED")
        cur.execute("SHOW WARNINGS")
        assert [(w[0], w[1]) for w in cur.fetchall()] == [("Warning", 1478)]
        cur.execute("CREATE TABLE old (id INT PRIMARY KEY) ROW_FORMAT=COMPACT")
        cur.execute("SHOW WARNINGS")
        assert cur.fetchall() == (("Warning", 1478, "Quill: assuming ROW_FORMAT=DYNAMIC."),)
        assert status(cur, "notes")["Row_format"] == "Dynamic"
        assert status(cur, "notes")["Create_options"] == "row_format=FIXED"
        assert status(cur, "old")["Row_format"] == "Dynamic"


@pytest.mark.mysql8_only
def test_data_and_index_length_follow_inserts_rollbacks_and_truncate(conn):
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, grp INT, name VARCHAR(20), KEY grp (grp))")
        assert (status(cur, "t")["Data_length"], status(cur, "t")["Index_length"]) == (0, 0)
        rows = lambda first, last: ",".join(f"({i}, {i % 7}, 'name {i}')" for i in range(first, last))
        cur.execute(f"INSERT INTO t VALUES {rows(0, 250)}")
        half = status(cur, "t")
        assert half["Data_length"] > 250 * len("name 0") and half["Index_length"] > 0
        cur.execute("BEGIN")
        cur.execute(f"INSERT INTO t VALUES {rows(250, 500)}")
        full = status(cur, "t")
        assert full["Data_length"] > half["Data_length"] and full["Index_length"] > half["Index_length"]
        cur.execute("ROLLBACK")
        after = status(cur, "t")
        assert (after["Data_length"], after["Index_length"]) == (half["Data_length"], half["Index_length"])
        cur.execute("TRUNCATE TABLE t")
        assert (status(cur, "t")["Data_length"], status(cur, "t")["Index_length"]) == (0, 0)


@pytest.mark.skipif(test_target() != "quill", reason="kills and restarts the quill binary")
def test_a_fixed_table_stays_fixed_across_a_crash_and_a_checkpoint(tmp_path):
    options = ("--quill-checkpoint-log-bytes=65536",)
    with PrivateQuill(tmp_path / "data", *options) as quill:
        with quill.connect() as c, c.cursor() as cur:
            cur.execute("CREATE DATABASE rf")
            cur.execute(f"CREATE TABLE rf.fixed {COLUMNS} ROW_FORMAT=FIXED")
            for first in range(0, 3000, 500):
                values = ",".join(f"({i}, '{i:08}', 'artikel {i}', {i}.5)" for i in range(first, first + 500))
                cur.execute(f"INSERT INTO rf.fixed VALUES {values}")
            cur.execute("USE rf")
            before = status(cur, "fixed")
        quill.kill()
        quill.start()
        with quill.connect("rf") as c, c.cursor() as cur:
            after = status(cur, "fixed")
            cur.execute("SELECT COUNT(*), SUM(preis), MAX(artikel) FROM fixed")
            assert cur.fetchone() == (3000, Decimal("4500000.00"), "artikel 999")
    assert after["Row_format"] == "Fixed"
    assert (after["Rows"], after["Avg_row_length"], after["Data_length"]) == (before["Rows"], before["Avg_row_length"], before["Data_length"])


def test_alter_table_takes_table_options_with_other_changes(conn):
    """`ENGINE`, `ROW_FORMAT`, `COMMENT` and `DEFAULT CHARSET` in ALTER TABLE, alone, in a run
    without commas, or beside column changes: the rows stay, the options show."""
    with conn.cursor() as cur:
        cur.execute(f"CREATE TABLE t {COLUMNS}")
        fill(cur, "t", 20, lambda i: i)
        cur.execute("CHECKSUM TABLE t")
        before = cur.fetchone()[1]
        cur.execute("ALTER TABLE t ENGINE=InnoDB")
        cur.execute("ALTER TABLE t ENGINE = InnoDB ROW_FORMAT = DYNAMIC, ADD COLUMN note VARCHAR(10), COMMENT 'price list'")
        cur.execute("SHOW CREATE TABLE t")
        definition = cur.fetchone()[1]
        assert "`note` varchar(10) DEFAULT NULL" in definition
        assert "ROW_FORMAT=DYNAMIC" in definition and definition.endswith("COMMENT='price list'")
        cur.execute("ALTER TABLE t DROP COLUMN note, DEFAULT CHARSET=utf8mb4")
        cur.execute("CHECKSUM TABLE t")
        assert cur.fetchone()[1] == before
        # An explicit COLLATE wins over a CHARSET in the same statement, in either order.
        cur.execute("ALTER TABLE t COLLATE utf8mb4_bin CHARSET utf8mb4")
        cur.execute("SELECT TABLE_COLLATION FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 't'")
        assert cur.fetchone() == ("utf8mb4_bin",)
        refused(cur, "ALTER TABLE t ROW_FORMAT=SQUARE", 1064)
        refused(cur, "ALTER TABLE t ENGINE=NoSuchEngine", 1286)


@pytest.mark.mysql8_only  # Quill's own: InnoDB has no FIXED rows
def test_alter_table_row_format_rewrites_the_rows(conn):
    with conn.cursor() as cur:
        cur.execute(f"CREATE TABLE t {COLUMNS}")
        fill(cur, "t", 50, lambda i: i % 40)
        cur.execute("CHECKSUM TABLE t")
        before = cur.fetchone()[1]
        dynamic = status(cur, "t")
        cur.execute("ALTER TABLE t ROW_FORMAT=FIXED")
        fixed = status(cur, "t")
        assert (fixed["Row_format"], fixed["Create_options"]) == ("Fixed", "row_format=FIXED")
        assert fixed["Avg_row_length"] > dynamic["Avg_row_length"], "every fixed row takes the longest row's slot"
        cur.execute("CHECKSUM TABLE t")
        assert cur.fetchone()[1] == before
        cur.execute("ALTER TABLE t ROW_FORMAT=DYNAMIC")
        assert status(cur, "t")["Data_length"] == dynamic["Data_length"]


@pytest.mark.skipif(test_target() != "quill", reason="kills and restarts the quill binary")
def test_an_altered_row_format_survives_a_crash(tmp_path):
    with PrivateQuill(tmp_path / "data") as quill:
        with quill.connect() as c, c.cursor() as cur:
            cur.execute("CREATE DATABASE rf")
            cur.execute(f"CREATE TABLE rf.t {COLUMNS}")
            fill(cur, "rf.t", 100, lambda i: i % 40)
            cur.execute("ALTER TABLE rf.t ROW_FORMAT=FIXED, COMMENT='fixed now'")
            cur.execute("USE rf")
            before = status(cur, "t")
        quill.kill()
        quill.start()
        with quill.connect("rf") as c, c.cursor() as cur:
            after = status(cur, "t")
    assert (after["Row_format"], after["Comment"]) == ("Fixed", "fixed now")
    assert (after["Rows"], after["Data_length"]) == (before["Rows"], before["Data_length"])
