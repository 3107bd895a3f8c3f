"""SQL text is bytes in character_set_client: what arrives is what is stored, and the forms
real clients and dump files send are read as MySQL reads them.

Each test is a regression for a way Quill used to alter data or refuse a statement MySQL runs:
bytes that were not UTF-8 replaced with U+FFFD, long data dropped for NULL, SET that mixes
NAMES with assignments, a trailing NUL, versioned comments. All but the MySQL-8-only ones pass
against MariaDB too (tests/run-against-mariadb.sh).
"""

import struct
import subprocess

import MySQLdb
import pymysql
import pytest

from conftest import unique_name
from wire import MYSQL_TYPE_BLOB, MYSQL_TYPE_LONGLONG, RawConnection, ServerError


def mysql_cli(server, stdin: bytes, database: str | None = None) -> subprocess.CompletedProcess:
    """The mysql command-line client reading `stdin`, as a user pipes a file into it."""
    command = ["mysql", "-h", server.host, "-P", str(server.port), "-u", server.user, "--batch", "--skip-column-names",
               "--default-character-set=utf8mb4"]
    if database:
        command.append(database)
    return subprocess.run(command, input=stdin, capture_output=True, timeout=60)


def test_binary_literal_keeps_its_bytes_through_the_mysql_client(server):
    result = mysql_cli(server, b"SELECT HEX(_binary'\xff\xfe');\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == b"FFFE"


def test_bytes_escaped_into_the_text_are_stored_exactly(server, fresh_db):
    # mysqlclient escapes the bytes into the statement text (mysql_real_escape_string).
    conn = MySQLdb.connect(host=server.host, port=server.port, user=server.user, passwd=server.password, db=fresh_db, charset="utf8mb4")
    try:
        cur = conn.cursor()
        cur.execute("CREATE TABLE b (id INT PRIMARY KEY, data BLOB)")
        every_byte = bytes(range(256))
        cur.execute("REPLACE INTO b VALUES (%s, %s)", (1, every_byte))
        conn.commit()
        cur.execute("SELECT LENGTH(data), data FROM b WHERE id = 1")
        assert cur.fetchone() == (256, every_byte)
    finally:
        conn.close()


def test_invalid_utf8_for_a_character_column_is_refused_not_replaced(conn):
    raw = conn.cursor()
    raw.execute("CREATE TABLE s (id INT PRIMARY KEY, c VARCHAR(20), b VARBINARY(20))")
    raw.execute("SET SESSION sql_mode = 'STRICT_TRANS_TABLES'")
    with pytest.raises(pymysql.err.MySQLError) as e:
        raw.execute(b"INSERT INTO s VALUES (1, 'a\xffb', 'a\xffb')")
    assert e.value.args[0] == 1366
    raw.execute(b"INSERT INTO s VALUES (2, 'ok', 'a\xffb')")
    raw.execute("SELECT HEX(b) FROM s WHERE id = 2")
    assert raw.fetchone()[0] == "61FF62"
    # Without strict mode each invalid byte becomes '?', with a warning, as MySQL converts.
    raw.execute("SET SESSION sql_mode = ''")
    raw.execute(b"INSERT INTO s VALUES (3, 'a\xff\xfeb', NULL)")
    raw.execute("SHOW WARNINGS")
    assert 1366 in [w[1] for w in raw.fetchall()]
    raw.execute("SELECT HEX(c) FROM s WHERE id = 3")
    assert raw.fetchone()[0] == "613F3F62"


def test_set_mixes_assignments_names_and_character_set(conn):
    cur = conn.cursor()
    cur.execute("SET autocommit=1, NAMES utf8mb4")
    cur.execute("SET NAMES utf8mb4, autocommit=0")
    cur.execute("SELECT @@autocommit")
    assert cur.fetchone()[0] == 0
    cur.execute("SET @a = 1, @b = @a, CHARACTER SET latin1, NAMES utf8mb4 COLLATE utf8mb4_bin")
    cur.execute("SELECT @a, @b, @@character_set_client, @@collation_connection")
    # Every value is computed before any is assigned: @b sees @a as it was (NULL).
    assert cur.fetchone() == (1, None, "utf8mb4", "utf8mb4_bin")
    with pytest.raises(pymysql.err.MySQLError) as e:
        cur.execute("SET @z = 5, wait_timeout = 'abc'")
    assert e.value.args[0] == 1232
    cur.execute("SELECT @z")
    assert cur.fetchone()[0] is None, "a SET that fails changes nothing"
    cur.execute("SET autocommit=1")


def test_mariadb_connector_j_connect_statements_run(server, conn):
    # What MariaDB Connector/J sends on connect, as the issue quotes it.
    cur = conn.cursor()
    cur.execute(
        "set autocommit=1, sql_mode = concat(@@sql_mode,',STRICT_TRANS_TABLES'), "
        "session_track_system_variables = concat(@@global.session_track_system_variables,',auto_increment_increment'), "
        "NAMES utf8mb4"
    )
    # What the MariaDB connectors send a MySQL 8 server (the R2DBC connector's form, as read
    # from its source): tracking variables and a lower-case NAMES at the end.
    # (To MariaDB before 11.1 they name tx_isolation, which it has instead.)
    isolation = "transaction_isolation" if server.is_quill else "tx_isolation"
    cur.execute(
        f"SET autocommit=1,{isolation}='REPEATABLE-READ',session_track_schema=1,"
        f"session_track_system_variables=CONCAT(@@session_track_system_variables,',{isolation}'), names UTF8MB4"
    )
    cur.execute("SELECT @@max_allowed_packet, @@wait_timeout")
    assert cur.fetchone()[0] >= 1024
    cur.execute("SELECT @@sql_mode")
    modes = cur.fetchone()[0].split(",")
    assert modes.count("STRICT_TRANS_TABLES") == 1, "each mode once, as MySQL stores sql_mode"


def test_trailing_nul_whitespace_and_semicolons_are_ignored(server):
    with RawConnection(server.host, server.port) as connection:
        connection.login(server.user)
        assert connection.query(b"SELECT 1\0") == [["1"]]
        assert connection.query(b"SELECT 2 ;  \n") == [["2"]]
        # `?1` is no placeholder to MySQL (and no parameter 1): a syntax error.
        with pytest.raises(ServerError) as e:
            connection.query("SELECT ?1")
        assert e.value.errno == 1064


def test_a_collation_of_another_character_set_is_refused(conn):
    cur = conn.cursor()
    with pytest.raises(pymysql.err.MySQLError) as e:
        cur.execute("SET NAMES utf8mb4 COLLATE latin1_swedish_ci")
    assert e.value.args[0] == 1253


def test_versioned_comments_run_as_mysql_runs_them(conn):
    cur = conn.cursor()
    cur.execute("START TRANSACTION /*!40100 WITH CONSISTENT SNAPSHOT */")
    cur.execute("COMMIT")
    # The first line of a MariaDB 10.11 dump: /*M! is a comment to MySQL 8.
    cur.execute("/*M!999999\\- enable the sandbox mode */ /*!40101 SET @A=1 */")
    cur.execute("SELECT @A")
    assert cur.fetchone()[0] == 1
    cur.execute("CREATE TABLE t (id INT PRIMARY KEY)")
    cur.execute("/*!40000 ALTER TABLE t DISABLE KEYS */")
    cur.execute("/*!40000 ALTER TABLE t ENABLE KEYS */")
    cur.execute("SELECT 1 /*!99999 + 100 */")
    assert cur.fetchone()[0] == 1, "a comment for a later version is skipped"


def test_a_dump_with_blobs_loads_through_the_mysql_client(server):
    # What mysqldump writes for a BLOB (without --hex-blob): the bytes escaped into a
    # _binary literal, between its usual versioned comments.
    db = unique_name("dump")
    data = bytes(range(256)) * 4
    escaped = data.replace(b"\\", b"\\\\").replace(b"'", b"\\'").replace(b"\0", b"\\0").replace(b"\n", b"\\n").replace(b"\r", b"\\r").replace(b"\x1a", b"\\Z")
    dump = (
        b"/*M!999999\\- enable the sandbox mode */ \n/*!40101 SET NAMES utf8mb4 */;\n"
        + f"CREATE DATABASE {db};\nUSE {db};\nCREATE TABLE b (id INT PRIMARY KEY, data BLOB);\n".encode()
        + b"/*!40000 ALTER TABLE `b` DISABLE KEYS */;\nINSERT INTO `b` VALUES (1,_binary '" + escaped + b"');\n"
        + b"/*!40000 ALTER TABLE `b` ENABLE KEYS */;\n"
    )
    result = mysql_cli(server, dump)
    assert result.returncode == 0, result.stderr
    result = mysql_cli(server, f"SELECT HEX(data) FROM {db}.b;\n".encode())
    assert bytes.fromhex(result.stdout.strip().decode()) == data
    mysql_cli(server, f"DROP DATABASE {db};\n".encode())


def test_latin1_clients_read_and_write_latin1(server, fresh_db):
    conn = server.connect(fresh_db, charset="latin1")
    try:
        cur = conn.cursor()
        cur.execute("CREATE TABLE l (id INT PRIMARY KEY, name VARCHAR(20)) DEFAULT CHARSET=utf8mb4")
        cur.execute("INSERT INTO l VALUES (1, %s)", ("café €",))
        cur.execute("SELECT name, HEX(name) FROM l")
        name, stored = cur.fetchone()
        assert name == "café €"
        assert stored == "café €".encode().hex().upper(), "stored as UTF-8"
    finally:
        conn.close()
    # Stored as UTF-8: a utf8mb4 client reads the same text.
    with server.connect(fresh_db).cursor() as cur:
        cur.execute("SELECT name FROM l")
        assert cur.fetchone()[0] == "café €"


@pytest.mark.mysql8_only
def test_unknown_character_sets_are_refused(conn):
    cur = conn.cursor()
    for statement in ("SET NAMES gbk", "SET NAMES nosuch", "SET character_set_client = 'nosuch'", "SET CHARACTER SET nosuch"):
        with pytest.raises(pymysql.err.MySQLError) as e:
            cur.execute(statement)
        assert e.value.args[0] == 1115, statement
    cur.execute("SELECT @@character_set_client")
    assert cur.fetchone()[0] == "utf8mb4"


def test_long_data_wins_over_the_null_bit(server, fresh_db):
    # PHP's mysqlnd sends COM_STMT_SEND_LONG_DATA and sets the parameter's NULL bit too; MySQL
    # uses the long data.
    with server.connect(fresh_db).cursor() as cur:
        cur.execute("CREATE TABLE d (id BIGINT PRIMARY KEY, data BLOB)")
    with RawConnection(server.host, server.port) as connection:
        connection.login(server.user)
        connection.query(f"USE {fresh_db}")
        statement, params = connection.prepare("INSERT INTO d VALUES (?, ?)")
        assert params == 2
        connection.send_long_data(statement, 1, b"\x00\xfflong ")
        connection.send_long_data(statement, 1, b"data")
        affected = connection.execute(statement, [MYSQL_TYPE_LONGLONG, MYSQL_TYPE_BLOB], [struct.pack("<q", 7), None], null_bits=0b10)
        assert affected == 1
        assert connection.query(f"SELECT HEX(data) FROM {fresh_db}.d WHERE id = 7") == [[b"\x00\xfflong data".hex().upper()]]
        # Without long data, the NULL bit means NULL.
        connection.execute(statement, [MYSQL_TYPE_LONGLONG, MYSQL_TYPE_BLOB], [struct.pack("<q", 8), None], null_bits=0b10)
        assert connection.query(f"SELECT data IS NULL FROM {fresh_db}.d WHERE id = 8") == [["1"]]


def test_invalid_bytes_outside_literals_are_an_error_not_a_guess(server):
    with RawConnection(server.host, server.port) as connection:
        connection.login(server.user)
        with pytest.raises(ServerError) as e:
            connection.query(b"SELECT 1 FROM \xff\xfe")
        assert e.value.errno in (1300, 1064, 1046)
        assert connection.query("SELECT 1") == [["1"]], "the connection survives"
