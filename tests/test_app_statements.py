"""Statements applications and their tools send that MySQL 8 answers: SHOW forms, variables
ORMs set, index renames, quoted collation names, ON UPDATE with fractional seconds, and the
variance aggregates (against a plain two-pass oracle)."""

from __future__ import annotations

import math
import random

import pytest
from sessions import error_code as errno, all_rows as rows




def test_rename_index_keeps_the_index_under_its_new_name(conn, fresh_db):
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, a INT, b INT, KEY ka (a), KEY kb (b))")
        cur.execute("INSERT INTO t VALUES (1, 10, 100), (2, 20, 200)")
        cur.execute("ALTER TABLE t RENAME INDEX ka TO kc")
        cur.execute("ALTER TABLE t RENAME KEY `kb` TO `kd`")
    names = [r[0] for r in rows(conn, f"SELECT index_name FROM information_schema.statistics WHERE table_schema = '{fresh_db}' AND table_name = 't' ORDER BY index_name")]
    assert names == ["kc", "kd", "PRIMARY"]
    assert rows(conn, "SELECT id FROM t FORCE INDEX (kc) WHERE a = 20") == ((2,),)
    assert errno(conn, "ALTER TABLE t RENAME INDEX nope TO x") == 1176
    assert errno(conn, "ALTER TABLE t RENAME INDEX kc TO kd") == 1061
    assert errno(conn, "ALTER TABLE t RENAME INDEX kc TO `PRIMARY`") == 1280


@pytest.mark.mysql8_only
def test_a_mysql_8_dump_creates_its_database(conn):
    name = f"{conn.db.decode()}_dumped"
    with conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE /*!32312 IF NOT EXISTS*/ `{name}` /*!40100 DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_0900_ai_ci */ /*!80016 DEFAULT ENCRYPTION='N' */")
        try:
            cur.execute(f"SHOW CREATE DATABASE `{name}`")
            assert "utf8mb4" in cur.fetchone()[1]
        finally:
            cur.execute(f"DROP DATABASE `{name}`")


def test_quoted_collation_names_are_collations(conn):
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE q (a VARCHAR(5) COLLATE 'utf8mb4_bin', b VARCHAR(5) COLLATE `utf8mb4_general_ci`)")
        cur.execute("INSERT INTO q VALUES ('A', 'A')")
    assert rows(conn, "SELECT COUNT(*) FROM q WHERE a = 'a'") == ((0,),)
    assert rows(conn, "SELECT COUNT(*) FROM q WHERE b = 'a'") == ((1,),)


def test_on_update_current_timestamp_keeps_its_fractional_digits(conn, fresh_db):
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE u (id INT PRIMARY KEY, at DATETIME(6) DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6))")
        cur.execute("SHOW CREATE TABLE u")
        assert "ON UPDATE CURRENT_TIMESTAMP(6)" in cur.fetchone()[1].upper()
    (extra,) = rows(conn, f"SELECT extra FROM information_schema.columns WHERE table_schema = '{fresh_db}' AND table_name = 'u' AND column_name = 'at'")[0]
    assert extra.lower().endswith("on update current_timestamp(6)")


def test_show_forms_tools_send(conn, fresh_db):
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE o1 (a INT)")
        cur.execute(f"SHOW CREATE DATABASE IF NOT EXISTS `{fresh_db}`")
        assert cur.fetchone()[1].startswith(f"CREATE DATABASE /*!32312 IF NOT EXISTS*/ `{fresh_db}`")
        cur.execute("SHOW EVENTS")
        assert [d[0] for d in cur.description][:3] == ["Db", "Name", "Definer"] and cur.fetchall() == ()
        cur.execute("SELECT * FROM o1")
        cur.execute(f"SHOW OPEN TABLES FROM `{fresh_db}` LIKE 'o%'")
        assert [d[0] for d in cur.description] == ["Database", "Table", "In_use", "Name_locked"]
        assert cur.fetchall() == ((fresh_db, "o1", 0, 0),)


def test_variables_orms_set(conn):
    with conn.cursor() as cur:
        cur.execute("SHOW VARIABLES LIKE 'explicit_defaults_for_timestamp'")
        assert cur.fetchone() == ("explicit_defaults_for_timestamp", "ON")
        cur.execute("SET SESSION optimizer_switch = 'index_merge=off'")
        cur.execute("SELECT @@optimizer_switch LIKE '%index_merge=off%'")
        assert cur.fetchone() == (1,)


def variance(values, sample):
    n = len(values)
    if n - sample <= 0:
        return None
    mean = sum(values) / n
    return sum((x - mean) ** 2 for x in values) / (n - sample)


@pytest.mark.parametrize("seed", range(4))
def test_variance_aggregates_agree_with_a_two_pass_oracle(conn, seed):
    rng = random.Random(seed)
    groups = {g: [rng.choice([None, rng.uniform(-1000, 1000), float(rng.randint(-5, 5))]) for _ in range(rng.randint(0, 30))] for g in range(8)}
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE v (g INT, x DOUBLE, n INT)")
        data = [(g, x, None if x is None else int(x)) for g, xs in groups.items() for x in xs]
        if data:
            cur.executemany("INSERT INTO v VALUES (%s, %s, %s)", data)
        cur.execute("SELECT g, VAR_POP(x), VAR_SAMP(x), STDDEV_POP(x), STDDEV_SAMP(x), STD(x), VARIANCE(x), STDDEV(x), BIT_XOR(n) FROM v GROUP BY g")
        got = {r[0]: r[1:] for r in cur.fetchall()}
    for g, xs in groups.items():
        if not xs:
            continue
        present = [x for x in xs if x is not None]
        pop, samp = variance(present, 0), variance(present, 1)
        root = lambda v: None if v is None else math.sqrt(v)  # noqa: E731
        expected = (pop, samp, root(pop), root(samp), root(pop), pop, root(pop))
        for name, want, have in zip(["VAR_POP", "VAR_SAMP", "STDDEV_POP", "STDDEV_SAMP", "STD", "VARIANCE", "STDDEV"], expected, got[g][:7]):
            if want is None:
                assert have is None, (seed, g, name)
            else:
                assert have == pytest.approx(want, rel=1e-9, abs=1e-9), (seed, g, name)
        xor = 0
        for x in present:
            xor ^= int(x) & (2**64 - 1)
        assert got[g][7] == xor, (seed, g, "BIT_XOR")


def test_select_without_from_takes_a_locking_clause(conn):
    assert rows(conn, "SELECT 1 FOR UPDATE") == ((1,),)
    assert rows(conn, "SELECT 2 LOCK IN SHARE MODE") == ((2,),)


def test_show_tables_from_information_schema_lists_tables_that_answer(conn):
    assert rows(conn, "SHOW FULL TABLES FROM information_schema LIKE 'TABLES'") == (("TABLES", "SYSTEM VIEW"),)
    names = [r[0] for r in rows(conn, "SHOW TABLES FROM information_schema")]
    assert "COLUMNS" in names and "SCHEMATA" in names
    for name in names:
        rows(conn, f"SELECT COUNT(*) FROM information_schema.`{name}`")


@pytest.mark.mysql8_only
def test_insert_row_alias_in_on_duplicate_key_update(conn):
    # MySQL 8.0.19's `VALUES (...) AS new`, sent to servers that say they are 8.0.19 or later.
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE d (id INT PRIMARY KEY, a INT, b INT)")
        cur.execute("INSERT INTO d VALUES (1, 10, 100)")
        cur.execute("INSERT INTO d VALUES (1, 11, 111), (2, 20, 200) AS new ON DUPLICATE KEY UPDATE a = new.a + a, b = new.b")
        assert rows(conn, "SELECT * FROM d ORDER BY id") == ((1, 21, 111), (2, 20, 200))
        cur.execute("INSERT INTO d (id, a) VALUES (2, 5) AS n(i, m) ON DUPLICATE KEY UPDATE a = m * 2, b = n.i")
        assert rows(conn, "SELECT * FROM d WHERE id = 2") == ((2, 10, 2),)
    assert errno(conn, "INSERT INTO d (id, a) VALUES (2, 5) AS n(i) ON DUPLICATE KEY UPDATE a = i") == 1136


def test_alter_column_set_and_drop_default(conn):
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE ad (id INT PRIMARY KEY, a VARCHAR(5) NOT NULL DEFAULT 'z', b INT)")
        cur.execute("ALTER TABLE ad ALTER COLUMN a SET DEFAULT 'x', ALTER b SET DEFAULT 7")
        cur.execute("INSERT INTO ad (id) VALUES (1)")
        assert rows(conn, "SELECT a, b FROM ad") == (("x", 7),)
        cur.execute("ALTER TABLE ad ALTER COLUMN a DROP DEFAULT, ALTER COLUMN b DROP DEFAULT")
    assert errno(conn, "INSERT INTO ad (id) VALUES (2)") == 1364
    assert errno(conn, "ALTER TABLE ad ALTER COLUMN nope SET DEFAULT 1") == 1054
    assert errno(conn, "ALTER TABLE ad ALTER COLUMN b SET DEFAULT 'abc'") == 1067


@pytest.mark.mysql8_only
def test_drop_check_removes_only_a_check_constraint(conn):
    # MySQL 8.0.19's ALTER TABLE ... DROP CHECK (MariaDB has only DROP CONSTRAINT).
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE ck (a INT, CONSTRAINT c1 CHECK (a > 0))")
        assert errno(conn, "INSERT INTO ck VALUES (-1)") == 3819
        cur.execute("ALTER TABLE ck DROP CHECK c1")
        cur.execute("INSERT INTO ck VALUES (-1)")
        assert rows(conn, "SELECT a FROM ck") == ((-1,),)
    assert errno(conn, "ALTER TABLE ck DROP CHECK c1") == 3821


@pytest.mark.mysql8_only
def test_information_schema_keywords_lists_the_reserved_words(conn):
    # What Connector/J's getSQLKeywords reads when Hibernate starts.
    reserved = {w for (w,) in rows(conn, "SELECT WORD FROM INFORMATION_SCHEMA.KEYWORDS WHERE RESERVED = 1 ORDER BY WORD")}
    assert {"SELECT", "GROUP", "WINDOW", "LATERAL", "RANK"} <= reserved
    assert not {"ADMIN", "ACCOUNT", "BEGIN"} & reserved
    assert rows(conn, "SELECT RESERVED FROM INFORMATION_SCHEMA.KEYWORDS WHERE WORD = 'BEGIN'") == ((0,),)


@pytest.mark.mysql8_only
def test_information_schema_tables_tools_read_at_start_up(conn, fresh_db):
    # Vitess's schema engine, ORMs' reflection: PARTITIONS, INNODB_TABLES, INNODB_TABLESPACES,
    # FILES and USER_PRIVILEGES answer with MySQL 8's columns.
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE p (id INT PRIMARY KEY, a VARCHAR(10))")
        cur.execute("INSERT INTO p VALUES (1, 'x'), (2, 'y')")
    assert rows(conn, f"SELECT table_name, partition_name, partition_method, table_rows FROM information_schema.partitions WHERE table_schema = '{fresh_db}'") == (("p", None, None, 2),)
    assert rows(conn, f"SELECT n_cols, space_type, row_format FROM information_schema.innodb_tables WHERE name = '{fresh_db}/p'") == ((5, "Single", "Dynamic"),)
    assert rows(conn, f"SELECT page_size, state FROM information_schema.innodb_tablespaces WHERE name = '{fresh_db}/p'") == ((16384, "normal"),)
    assert rows(conn, "SELECT COUNT(*) FROM information_schema.files WHERE table_name = 'p'") == ((0,),)
    privileges = {r[0] for r in rows(conn, "SELECT privilege_type FROM information_schema.user_privileges WHERE grantee = \"'root'@'localhost'\"")}
    assert {"SELECT", "SUPER", "CREATE ROUTINE", "TRIGGER"} <= privileges


def test_bit_columns_hold_bits_and_send_bytes(conn, fresh_db):
    # Hibernate maps booleans to BIT; JDBC and Python drivers read BIT values as bytes.
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE b (id INT PRIMARY KEY, flag BIT NOT NULL, m BIT(12) DEFAULT b'101')")
        cur.execute("INSERT INTO b (id, flag) VALUES (1, 1), (2, 0)")
        cur.execute("INSERT INTO b VALUES (3, b'1', 4095), (4, %s, %s)", (True, 7))
        cur.execute("SHOW CREATE TABLE b")
        create = cur.fetchone()[1]
    assert "`flag` bit(1) NOT NULL" in create and "`m` bit(12) DEFAULT b'101'" in create
    assert rows(conn, "SELECT id, flag, m, flag + 0, m + 0, HEX(m) FROM b ORDER BY id") == (
        (1, b"\x01", b"\x00\x05", 1, 5, "5"),
        (2, b"\x00", b"\x00\x05", 0, 5, "5"),
        (3, b"\x01", b"\x0f\xff", 1, 4095, "FFF"),
        (4, b"\x01", b"\x00\x07", 1, 7, "7"),
    )
    assert rows(conn, "SELECT id FROM b WHERE flag = 1 ORDER BY id") == ((1,), (3,), (4,))
    assert rows(conn, f"SELECT column_type, data_type, numeric_precision FROM information_schema.columns WHERE table_schema = '{fresh_db}' AND table_name = 'b' AND column_name <> 'id' ORDER BY ordinal_position") == (
        ("bit(1)", "bit", 1),
        ("bit(12)", "bit", 12),
    )
    assert errno(conn, "INSERT INTO b VALUES (5, 2, 0)") == 1406
    assert errno(conn, "INSERT INTO b VALUES (6, 0, 4096)") == 1406


def test_explain_format_json_is_a_query_block_document(conn):
    import json

    with conn.cursor() as cur:
        cur.execute("CREATE TABLE e1 (id INT PRIMARY KEY, a INT, KEY ka (a))")
        cur.execute("CREATE TABLE e2 (id INT PRIMARY KEY, b INT)")
        for sql in ["SELECT * FROM e1 WHERE a = 2", "SELECT * FROM e1 JOIN e2 ON e2.id = e1.a"]:
            cur.execute(f"EXPLAIN FORMAT=JSON {sql}")
            assert [d[0] for d in cur.description] == ["EXPLAIN"]
            assert "query_block" in json.loads(cur.fetchone()[0])
        cur.execute("EXPLAIN FORMAT=TRADITIONAL SELECT * FROM e1")
        assert cur.description[0][0] == "id"
    assert errno(conn, "EXPLAIN FORMAT=XML SELECT 1") == 1791


@pytest.mark.mysql8_only
def test_explain_format_tree(conn):
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE e1 (id INT PRIMARY KEY, a INT)")
        cur.execute("CREATE TABLE e2 (id INT PRIMARY KEY, b INT)")
        cur.execute("EXPLAIN FORMAT=TREE SELECT * FROM e1 WHERE id = 1")
        assert cur.fetchone()[0].startswith("-> ")
        cur.execute("EXPLAIN FORMAT=TREE SELECT * FROM e1 JOIN e2 ON e2.id = e1.a")
        tree = cur.fetchone()[0]
    assert tree.startswith("-> Nested loop inner join") and tree.count("\n    -> ") == 2
