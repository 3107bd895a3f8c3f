"""LOAD DATA LOCAL INFILE through PyMySQL, as a user loads a file: the FIELDS and LINES
clauses, IGNORE n LINES, column lists, short and long rows, duplicates with and without
REPLACE, the Records/Deleted/Skipped/Warnings info, and the errors of a missing table or
column, of local files switched off, and of a server-side file. The rows and warnings are
MariaDB 10.11's for the same files (run with QUILL_TEST_TARGET=mariadb); where MySQL 8 and
MariaDB differ (the error for local files switched off, reading server-side files), the
test says which it follows.
"""

import socket

import pymysql
import pytest

from conftest import test_target


@pytest.fixture
def loader(server, fresh_db, tmp_path):
    """A connection that may send local files, with `local_infile` ON, and a file to load."""
    admin = server.connect()
    with admin.cursor() as cur:
        cur.execute("SELECT @@GLOBAL.local_infile")
        before = cur.fetchone()[0]
        cur.execute("SET GLOBAL local_infile = 1")
    conn = server.connect(fresh_db, local_infile=True)
    path = tmp_path / "data.txt"
    yield conn, path
    conn.close()
    with admin.cursor() as cur:
        cur.execute(f"SET GLOBAL local_infile = {int(before)}")
    admin.close()


def load(conn, path, data: bytes, clauses: str = "", table: str = "t"):
    """Writes `data` to `path`, loads it, and answers (affected rows, info, warning codes, rows)."""
    path.write_bytes(data)
    with conn.cursor() as cur:
        affected = cur.execute(f"LOAD DATA LOCAL INFILE '{path}' INTO TABLE {table} {clauses}")
        info = conn._result.message.decode().lstrip("/")
        cur.execute("SHOW WARNINGS")
        codes = [w[1] for w in cur.fetchall()]
        cur.execute(f"SELECT * FROM {table}")
        return affected, info, codes, [tuple(r) for r in cur.fetchall()]


def make(conn, ddl="CREATE TABLE t (a VARCHAR(20), b VARCHAR(20), c VARCHAR(20))"):
    with conn.cursor() as cur:
        cur.execute("DROP TABLE IF EXISTS t")
        cur.execute(ddl)


def test_default_format_escapes_and_short_rows(loader):
    conn, path = loader
    make(conn)
    affected, info, codes, rows = load(conn, path, b"1\t\\N\tx\\ty\n2\t\\\\N\n\n")
    assert affected == 3
    assert info == "Records: 3  Deleted: 0  Skipped: 0  Warnings: 3"
    assert codes == [1261, 1261, 1261], "one 1261 per missing column"
    assert rows == [("1", None, "x\ty"), ("2", "\\N", None), ("", None, None)]


def test_csv_with_enclosures_null_words_and_a_header(loader):
    conn, path = loader
    make(conn)
    data = b'a,b,c\r\n"x, y","say ""hi""",NULL\r\n"NULL",\\N,"multi\r\nline"\r\n'
    clauses = "FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\"' LINES TERMINATED BY '\\r\\n' IGNORE 1 LINES"
    affected, info, codes, rows = load(conn, path, data, clauses)
    assert (affected, codes) == (2, [])
    assert info == "Records: 2  Deleted: 0  Skipped: 0  Warnings: 0"
    assert rows == [("x, y", 'say "hi"', None), ("NULL", None, "multi\r\nline")]


def test_lines_starting_by_and_a_column_list(loader):
    conn, path = loader
    make(conn)
    data = b'head\nxxx"abc",1\nsomething xxx"def",2\n"ghi",3\n'
    affected, info, codes, rows = load(conn, path, data, "FIELDS TERMINATED BY ',' LINES STARTING BY 'xxx' IGNORE 1 LINES (c, a)")
    assert rows == [("1", None, '"abc"'), ("2", None, '"def"')]
    assert (affected, codes) == (2, [])


def test_long_rows_are_truncated_with_1262(loader):
    conn, path = loader
    make(conn)
    affected, info, codes, rows = load(conn, path, b"1,2,3,4\n", "FIELDS TERMINATED BY ','")
    assert (affected, codes, rows) == (1, [1262], [("1", "2", "3")])


def test_user_variables_and_set_build_each_row(loader):
    """Fields go to columns and `@variables` in list order; each SET assignment then runs in
    order, seeing the row's variables, the columns assigned so far and the defaults of the
    rest. The variables keep the last row's values after the statement."""
    conn, path = loader
    make(conn, "CREATE TABLE t (id INT PRIMARY KEY, a VARCHAR(10), b INT, c INT DEFAULT 7, d VARCHAR(40))")
    data = b"1\tab\t10\n2\tcd\t20\n3\t\\N\t30\n"
    clauses = "(id, @x, @y) SET b = @y * 2, a = UPPER(@x), d = CONCAT(c, '-', b, '-', id, '-', IFNULL(a, 'n'))"
    affected, info, codes, rows = load(conn, path, data, clauses)
    assert (affected, codes) == (3, [])
    assert info == "Records: 3  Deleted: 0  Skipped: 0  Warnings: 0"
    assert rows == [(1, "AB", 20, 7, "7-20-1-AB"), (2, "CD", 40, 7, "7-40-2-CD"), (3, None, 60, 7, "7-60-3-n")]
    with conn.cursor() as cur:
        cur.execute("SELECT @x, @y")
        assert cur.fetchone() == (None, "30")
    # A variable the row has no field for is NULL for that row, without the 1261 a column gets.
    make(conn, "CREATE TABLE t (id INT PRIMARY KEY, d VARCHAR(40))")
    affected, info, codes, rows = load(conn, path, b"1\tone\n2\n", "(id, @v) SET d = IFNULL(@v, 'none')")
    assert (codes, rows) == ([], [(1, "one"), (2, "none")])
    with conn.cursor() as cur:
        for statement, code in [
            (f"LOAD DATA LOCAL INFILE '{path}' INTO TABLE t (id, @v) SET no_such_column = @v", 1054),
            (f"LOAD DATA LOCAL INFILE '{path}' INTO TABLE t (id, @v) SET d = no_such_column", 1054),
        ]:
            with pytest.raises(pymysql.err.MySQLError) as e:
                cur.execute(statement)
            assert e.value.args[0] == code, statement


def test_the_character_set_clause_decodes_the_file(loader):
    conn, path = loader
    make(conn, "CREATE TABLE t (a VARCHAR(20), b VARCHAR(20))")
    # 'Müller' and 'Straße' in latin1, then the same text in UTF-8 read as utf8mb4.
    affected, info, codes, rows = load(conn, path, b"M\xfcller\tStra\xdfe\n", "CHARACTER SET latin1")
    assert (codes, rows) == ([], [("Müller", "Straße")])
    make(conn, "CREATE TABLE t (a VARCHAR(20), b VARCHAR(20))")
    affected, info, codes, rows = load(conn, path, "Müller\tStraße\n".encode(), "CHARACTER SET utf8mb4")
    assert (codes, rows) == ([], [("Müller", "Straße")])
    with pytest.raises(pymysql.err.MySQLError) as e, conn.cursor() as cur:
        cur.execute(f"LOAD DATA LOCAL INFILE '{path}' INTO TABLE t CHARACTER SET no_such_charset")
    assert e.value.args[0] == 1115


def test_duplicates_are_skipped_and_bad_values_warned_unless_replace(loader):
    conn, path = loader
    make(conn, "CREATE TABLE t (a INT PRIMARY KEY, b INT)")
    data = b"1\t10\n1\t11\n2\tx\n"
    affected, info, codes, rows = load(conn, path, data)
    # LOCAL acts as IGNORE: the duplicate is skipped, 'x' is stored as 0 with a warning.
    assert info == "Records: 3  Deleted: 0  Skipped: 1  Warnings: 2"
    assert codes == [1062, 1366]
    assert (affected, rows) == (2, [(1, 10), (2, 0)])
    # REPLACE is strict (in the default strict mode): the bad value fails the statement,
    # which leaves nothing of itself.
    with pytest.raises(pymysql.err.MySQLError) as e, conn.cursor() as cur:
        cur.execute(f"LOAD DATA LOCAL INFILE '{path}' REPLACE INTO TABLE t")
    assert e.value.args[0] == 1366
    with conn.cursor() as cur:
        cur.execute("SELECT * FROM t")
        assert cur.fetchall() == ((1, 10), (2, 0))
    path.write_bytes(b"1\t11\n3\t30\n")
    with conn.cursor() as cur:
        cur.execute(f"LOAD DATA LOCAL INFILE '{path}' REPLACE INTO TABLE t")
        cur.execute("SELECT * FROM t")
        assert cur.fetchall() == ((1, 11), (2, 0), (3, 30))


def test_errors_and_the_connection_goes_on(loader, server):
    conn, path = loader
    make(conn)
    path.write_bytes(b"1\n")
    with conn.cursor() as cur:
        for statement, code in [
            (f"LOAD DATA LOCAL INFILE '{path}' INTO TABLE missing_table", 1146),
            (f"LOAD DATA LOCAL INFILE '{path}' INTO TABLE t (a, no_such_column)", 1054),
            (f"LOAD DATA LOCAL INFILE '{path}' INTO TABLE t FIELDS ENCLOSED BY 'ab'", 1083),
            (f"LOAD DATA LOCAL INFILE '{path}' INTO TABLE t FIELDS TERMINATED BY ',' junk", 1064),
        ]:
            with pytest.raises(pymysql.err.MySQLError) as e:
                cur.execute(statement)
            assert e.value.args[0] == code, statement
        cur.execute("SELECT 1")
        assert cur.fetchone() == (1,)
    # A client that did not enable local files.
    plain = server.connect(conn.db.decode())
    with plain.cursor() as cur:
        with pytest.raises(pymysql.err.MySQLError) as e:
            cur.execute(f"LOAD DATA LOCAL INFILE '{path}' INTO TABLE t")
        # MySQL 8 answers 3948; MariaDB 4166.
        assert e.value.args[0] == (3948 if test_target() == "quill" else 4166)
        cur.execute("SELECT COUNT(*) FROM t")
        assert cur.fetchone() == (0,)
    plain.close()


@pytest.mark.skipif(test_target() != "quill", reason="MariaDB's secure_file_priv is empty by default: it reads server files")
def test_server_side_files_and_local_infile_off(loader, server):
    conn, path = loader
    make(conn)
    path.write_bytes(b"1\n")
    with conn.cursor() as cur:
        with pytest.raises(pymysql.err.MySQLError) as e:
            cur.execute(f"LOAD DATA INFILE '{path}' INTO TABLE t")
        assert e.value.args[0] == 1290
        cur.execute("SET GLOBAL local_infile = 0")
        with pytest.raises(pymysql.err.MySQLError) as e:
            cur.execute(f"LOAD DATA LOCAL INFILE '{path}' INTO TABLE t")
        assert e.value.args[0] == 3948
        cur.execute("SELECT COUNT(*) FROM t")
        assert cur.fetchone() == (0,)


def test_a_client_that_goes_away_mid_load_leaves_none_of_it(loader, server, monkeypatch):
    conn, path = loader
    make(conn)
    path.write_bytes(b"".join(b"%d\tx\ty\n" % i for i in range(1000)))

    def send_half_then_vanish(filename, connection):
        with open(filename, "rb") as f:
            connection.write_packet(f.read(4000))
        connection._sock.shutdown(socket.SHUT_RDWR)
        connection._sock.close()
        raise ConnectionAbortedError("the client went away mid-load")

    monkeypatch.setattr(pymysql.connections, "_send_local_file", send_half_then_vanish)
    with pytest.raises(Exception):
        with conn.cursor() as cur:
            cur.execute(f"LOAD DATA LOCAL INFILE '{path}' INTO TABLE t")
    monkeypatch.undo()
    other = server.connect(conn.db.decode())
    with other.cursor() as cur:
        cur.execute("SELECT COUNT(*) FROM t")
        assert cur.fetchone() == (0,), "a load the client abandoned leaves no rows"
    other.close()
