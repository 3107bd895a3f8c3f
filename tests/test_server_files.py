"""Files on the server's disk: `LOAD DATA INFILE` (without LOCAL) and `SELECT ... INTO
OUTFILE` / `INTO DUMPFILE`, under `secure_file_priv`, and the progress of a long load in
PROCESSLIST.

A private Quill runs with `--secure-file-priv` set to a directory of its own; the reference
MariaDB (whose `secure_file_priv` is empty: any file) writes the same queries' files next to
it, and the bytes must be the same. The errors are MySQL 8's: 1290 outside the directory or
when `secure_file_priv` is NULL (Quill's default), 1086 for a file that exists, 29 for a file
that is not there (MariaDB answers 13), 1172 for a DUMPFILE of more than one row.
"""

import threading
import time
from decimal import Decimal

import pymysql
import pytest

from conftest import PrivateQuill, test_target, unique_name

pytestmark = pytest.mark.skipif(test_target() != "quill", reason="starts a Quill of its own, with secure_file_priv set")

ROWS = [
    (1, "plain", "1.5", "2024-01-02", b"x"),
    (2, "tab\there,comma", None, None, None),
    (3, 'quote"back\\slash', "-2", "2020-02-29", b"\x00\xff"),
    (4, "nl\nline", "0", "2021-01-01", b""),
]

# Each export: its file, its statement, and the rows it writes.
EXPORTS = [
    ("o1.txt", "SELECT * FROM o INTO OUTFILE '{path}'"),
    ("o2.csv", "SELECT id, s, d INTO OUTFILE '{path}' FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\"' "
               "LINES TERMINATED BY '\\r\\n' FROM o"),
    ("o3.txt", "SELECT * FROM o WHERE id < 3 INTO OUTFILE '{path}' FIELDS TERMINATED BY ';' ENCLOSED BY '''' "
               "ESCAPED BY '' LINES STARTING BY 'L:'"),
    ("o4.txt", "SELECT s, d FROM o ORDER BY id DESC INTO OUTFILE '{path}' CHARACTER SET latin1 FIELDS ENCLOSED BY '|'"),
    ("o5.bin", "SELECT b FROM o WHERE id = 3 INTO DUMPFILE '{path}'"),
    ("o6.bin", "SELECT CONCAT(s, '/', id) FROM o WHERE id = 1 INTO DUMPFILE '{path}'"),
    # Fixed-row format: each value padded to its column's display width, NULL as spaces.
    ("o7.txt", "SELECT id, d, dt, s FROM o INTO OUTFILE '{path}' FIELDS TERMINATED BY '' ENCLOSED BY ''"),
]

WRITTEN = {"o1.txt": 5, "o2.csv": 5, "o3.txt": 2, "o4.txt": 5, "o5.bin": 1, "o6.bin": 1, "o7.txt": 5}

# A fixed-row file for `CREATE TABLE f (a INT, b VARCHAR(5), c CHAR(3), d DECIMAL(5,2), e DATE)`
# (widths 11, 20, 12, 7, 10): a full line with bytes after its last field, and a short line
# whose second field has an escape sequence and more than the column holds.
FIXED_LINES = (b"1          ab                  x           1.50   2024-01-02EXTRA\n"
               b"2          a\\tb                y\n")


@pytest.fixture
def files(tmp_path):
    """A Quill whose `secure_file_priv` is `tmp_path/files`, and that directory."""
    directory = tmp_path / "files"
    directory.mkdir()
    with PrivateQuill(tmp_path / "data", f"--secure-file-priv={directory}") as quill:
        yield quill, directory


def fill(conn, db):
    with conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE {db}")
        cur.execute(f"USE {db}")
        cur.execute("CREATE TABLE o (id INT PRIMARY KEY, s VARCHAR(20), d DECIMAL(5,2), dt DATE, b VARBINARY(5))")
        cur.executemany("INSERT INTO o VALUES (%s, %s, %s, %s, %s)", ROWS)
        cur.execute("INSERT INTO o VALUES (5, 'Müller', 3.25, '2022-03-04', 'é')")


def refused(cur, sql, *codes):
    with pytest.raises(pymysql.err.MySQLError) as e:
        cur.execute(sql)
    assert e.value.args[0] in codes, (sql, e.value.args)


def test_outfile_and_dumpfile_write_what_mariadb_writes(files, mariadb_reference, tmp_path):
    quill, directory = files
    other = tmp_path / "mariadb"
    other.mkdir()
    db = unique_name("outfile")
    conns = {"quill": (quill.connect(), directory), "mariadb": (mariadb_reference.connect(), other)}
    try:
        for conn, _ in conns.values():
            fill(conn, db)
        for name, sql in EXPORTS:
            for target, (conn, where) in conns.items():
                with conn.cursor() as cur:
                    written = cur.execute(sql.format(path=where / name))
                    assert written == WRITTEN[name], (target, name)
            assert (directory / name).read_bytes() == (other / name).read_bytes(), name
    finally:
        for conn, _ in conns.values():
            with conn.cursor() as cur:
                cur.execute(f"DROP DATABASE IF EXISTS {db}")
            conn.close()


def test_an_export_loads_back_into_the_same_rows(files):
    quill, directory = files
    conn = quill.connect()
    fill(conn, "roundtrip")
    csv = directory / "o.csv"
    options = "FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\"' ESCAPED BY '\\\\' LINES TERMINATED BY '\\n'"
    with conn.cursor() as cur:
        cur.execute(f"SELECT * FROM o INTO OUTFILE '{csv}' {options}")
        cur.execute("CREATE TABLE back LIKE o")
        assert cur.execute(f"LOAD DATA INFILE '{csv}' INTO TABLE back {options}") == len(ROWS) + 1
        cur.execute("CHECKSUM TABLE o, back")
        (_, source), (_, copy) = cur.fetchall()
        assert source == copy
        # Without LOCAL, duplicates are errors (1062) and the statement leaves nothing of itself.
        refused(cur, f"LOAD DATA INFILE '{csv}' INTO TABLE back {options}", 1062)
        cur.execute(f"LOAD DATA INFILE '{csv}' IGNORE INTO TABLE back {options}")
        cur.execute("SELECT COUNT(*) FROM back")
        assert cur.fetchone() == (len(ROWS) + 1,)
        # A relative name is in the data directory, which is not under secure_file_priv.
        refused(cur, "SELECT 1 INTO OUTFILE 'relative.txt'", 1290)
    conn.close()


def test_fixed_rows_load_back_and_load_as_mariadb_loads_them(files, mariadb_reference):
    quill, directory = files
    conn = quill.connect()
    fill(conn, "fixedrows")
    export = directory / "fixed.txt"
    fixed = "FIELDS TERMINATED BY '' ENCLOSED BY ''"
    with conn.cursor() as cur:
        # Round trip (without the NULL row: spaces are no number, 1366 in strict mode).
        cur.execute(f"SELECT id, d, dt, s FROM o WHERE id <> 2 INTO OUTFILE '{export}' {fixed}")
        cur.execute("CREATE TABLE back (id INT PRIMARY KEY, d DECIMAL(5,2), dt DATE, s VARCHAR(20))")
        assert cur.execute(f"LOAD DATA INFILE '{export}' INTO TABLE back {fixed}") == len(ROWS)
        # A VARCHAR field is as wide as its column in bytes: the spaces past the length are cut
        # with a note, the rest stay (as in MariaDB).
        cur.execute("SELECT id, d, dt, RTRIM(s) FROM back ORDER BY id")
        copied = cur.fetchall()
        cur.execute("SELECT id, d, dt, s FROM o WHERE id <> 2 ORDER BY id")
        assert copied == cur.fetchall()
        refused(cur, f"LOAD DATA INFILE '{export}' INTO TABLE back {fixed} (id, @d)", 1409)
        # TEXT and BLOB columns have no width: 1084 both ways, and no file is left.
        cur.execute("CREATE TABLE texts (id INT PRIMARY KEY, t TEXT)")
        refused(cur, f"LOAD DATA INFILE '{export}' INTO TABLE texts {fixed}", 1084)
        refused(cur, f"SELECT id, t FROM texts INTO OUTFILE '{directory / 'blob.txt'}' {fixed}", 1084)
        assert not (directory / "blob.txt").exists()
    conn.close()
    # The same odd lines, strict and not, give MariaDB's rows and conditions.
    path = directory / "odd.txt"
    path.write_bytes(FIXED_LINES)
    seen = {}
    for target, c in (("quill", quill.connect()), ("mariadb", mariadb_reference.connect())):
        db = unique_name("fixed")
        with c.cursor() as cur:
            cur.execute(f"CREATE DATABASE {db}")
            cur.execute(f"USE {db}")
            cur.execute("CREATE TABLE f (a INT, b VARCHAR(5), c CHAR(3), d DECIMAL(5,2), e DATE)")
            cur.execute("SET sql_mode = 'STRICT_TRANS_TABLES'")
            refused(cur, f"LOAD DATA INFILE '{path}' INTO TABLE f {fixed}", 1262)
            cur.execute("SET sql_mode = ''")
            cur.execute(f"LOAD DATA INFILE '{path}' INTO TABLE f {fixed}")
            cur.execute("SHOW WARNINGS")
            conditions = sorted((level, code) for level, code, _ in cur.fetchall())
            cur.execute("SELECT a, HEX(b), c, d, CAST(e AS CHAR) FROM f ORDER BY a")
            seen[target] = (cur.fetchall(), conditions)
            cur.execute(f"DROP DATABASE {db}")
        c.close()
    rows, conditions = list(seen["quill"][0]), seen["quill"][1]
    # Columns a short line leaves out get their type's zero value, not their default; but
    # Quill has no zero date, so a DATE keeps its default (MariaDB stores '0000-00-00').
    assert rows == [(1, "6162202020", "x", Decimal("1.50"), "2024-01-02"), (2, "6109622020", "", Decimal("0.00"), None)]
    assert rows[0] == seen["mariadb"][0][0] and rows[1][:4] == seen["mariadb"][0][1][:4]
    assert seen["mariadb"][0][1][4] == "0000-00-00"
    assert conditions == seen["mariadb"][1]


def test_secure_file_priv_rules(files, server, fresh_db, tmp_path):
    quill, directory = files
    conn = quill.connect()
    fill(conn, "rules")
    (tmp_path / "outside.txt").write_bytes(b"1\n")
    with conn.cursor() as cur:
        cur.execute("SELECT @@secure_file_priv")
        assert cur.fetchone() == (f"{directory.resolve()}/",)
        refused(cur, "SET GLOBAL secure_file_priv = ''", 1238)
        refused(cur, f"LOAD DATA INFILE '{tmp_path / 'outside.txt'}' INTO TABLE o", 1290)
        refused(cur, f"LOAD DATA INFILE '{directory}/../outside.txt' INTO TABLE o", 1290)
        refused(cur, f"SELECT * FROM o INTO OUTFILE '{tmp_path / 'out.txt'}'", 1290)
        refused(cur, f"LOAD DATA INFILE '{directory / 'missing.txt'}' INTO TABLE o", 29)
        (directory / "taken.txt").write_bytes(b"keep me")
        refused(cur, f"SELECT * FROM o INTO OUTFILE '{directory / 'taken.txt'}'", 1086)
        assert (directory / "taken.txt").read_bytes() == b"keep me"
        refused(cur, f"SELECT * FROM o INTO DUMPFILE '{directory / 'two.bin'}'", 1172)
        assert not (directory / "two.bin").exists(), "a failed export leaves no file"
        refused(cur, f"SELECT * FROM o INTO OUTFILE '{directory / 'w.txt'}' FIELDS ENCLOSED BY 'ab'", 1083)
        refused(cur, f"SELECT * FROM no_such_table INTO OUTFILE '{directory / 'w.txt'}'", 1146)
        assert not (directory / "w.txt").exists()
        cur.execute("SELECT COUNT(*) FROM o")
        assert cur.fetchone() == (len(ROWS) + 1,), "the connection goes on"
    conn.close()
    # The shared server runs with Quill's default: NULL, no server files at all.
    shared = server.connect(fresh_db)
    with shared.cursor() as cur:
        cur.execute("SELECT @@secure_file_priv")
        assert cur.fetchone() == (None,)
        refused(cur, f"SELECT 1 INTO OUTFILE '{tmp_path / 'x.txt'}'", 1290)
        cur.execute("CREATE TABLE t (a INT)")
        refused(cur, f"LOAD DATA INFILE '{tmp_path / 'outside.txt'}' INTO TABLE t", 1290)
    shared.close()


def test_a_long_load_shows_its_progress_in_processlist(files):
    quill, directory = files
    rows = 400_000
    data = directory / "long.tsv"
    data.write_bytes(b"".join(b"%d\tsome text of the row %d\n" % (i, i) for i in range(rows)))
    conn = quill.connect()
    with conn.cursor() as cur:
        cur.execute("CREATE DATABASE progress")
        cur.execute("CREATE TABLE progress.t (id INT PRIMARY KEY, s VARCHAR(40))")
    result = {}

    def load():
        with conn.cursor() as cur:
            result["rows"] = cur.execute(f"LOAD DATA INFILE '{data}' INTO TABLE progress.t")

    watcher = quill.connect()
    seen = []
    loader = threading.Thread(target=load)
    loader.start()
    with watcher.cursor() as cur:
        while loader.is_alive():
            cur.execute("SELECT PROGRESS FROM information_schema.PROCESSLIST WHERE ID = %s", (conn.thread_id(),))
            seen.append(float(cur.fetchone()[0]))
            time.sleep(0.01)
        loader.join()
        assert result["rows"] == rows
        during = [p for p in seen if 0 < p < 100]
        assert during, f"no progress seen between 0 and 100 in {len(seen)} looks"
        assert during == sorted(during), "progress only grows"
        cur.execute("SHOW PROCESSLIST")
        columns = [d[0] for d in cur.description]
        assert columns[-1] == "Progress"
        cur.execute("SELECT COUNT(*) FROM progress.t")
        assert cur.fetchone() == (rows,)
    # The next statement starts from 0 again.
    with conn.cursor() as cur:
        cur.execute("SELECT 1")
    with watcher.cursor() as cur:
        cur.execute("SELECT PROGRESS FROM information_schema.PROCESSLIST WHERE ID = %s", (conn.thread_id(),))
        assert float(cur.fetchone()[0]) == 0
    watcher.close()
    conn.close()
