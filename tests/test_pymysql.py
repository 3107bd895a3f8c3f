"""PyMySQL (pure-Python driver, text protocol) against the server: what an application sees.

Covers the connection life cycle, every column type round-tripping to exact Python values,
OK-packet fields (affected rows, last insert id), transactions seen from a second
connection, MySQL error numbers mapped to PyMySQL's exception classes, multi-statements,
packets over 16 MiB, `max_allowed_packet`, and two clients incrementing one row.
"""

import datetime
import threading
from decimal import Decimal

import pymysql
import pytest
from pymysql.constants import CLIENT

MYSQL8_DEFAULT_SQL_MODE = (
    "ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,"
    "ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION"
)

ALL_TYPES_DDL = """
CREATE TABLE all_types (
    id      INT PRIMARY KEY,
    n_int   INT,
    n_big   BIGINT UNSIGNED,
    price   DECIMAL(10,2),
    ratio   DOUBLE,
    name    VARCHAR(50),
    body    TEXT,
    data    BLOB,
    day     DATE,
    moment  DATETIME(6),
    stamp   TIMESTAMP NULL,
    span    TIME,
    flag    BOOLEAN
)
"""

ALL_TYPES_ROW = (
    1,
    -2147483648,
    18446744073709551615,
    Decimal("12345678.90"),
    -1.5e-300,
    "Grüße, 世界",
    "a longer text\nwith a newline and a 'quote'",
    bytes(range(256)),
    datetime.date(2024, 2, 29),
    datetime.datetime(2024, 2, 29, 23, 59, 58, 123456),
    datetime.datetime(2038, 1, 19, 3, 14, 7),
    datetime.timedelta(hours=-838, minutes=-59, seconds=-59),
    1,
)


def scalar(conn, sql, args=None):
    with conn.cursor() as cur:
        cur.execute(sql, args)
        (row,) = cur.fetchall()
        (value,) = row
        return value


def test_connect_and_select_one(server):
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT 1")
        assert cur.fetchall() == ((1,),)
        assert cur.description[0][0] == "1"
        conn.ping(reconnect=False)


def test_session_variables_drivers_read(server):
    with server.connect(autocommit=True) as conn, conn.cursor() as cur:
        cur.execute("SELECT @@version, @@autocommit, @@sql_mode")
        version, autocommit, sql_mode = cur.fetchone()
        assert isinstance(version, str) and version
        assert autocommit == 1
        assert "STRICT_TRANS_TABLES" in sql_mode.split(",")
        conn.autocommit(False)
        assert scalar(conn, "SELECT @@session.autocommit") == 0


@pytest.mark.mysql8_only
def test_presents_as_mysql8(server):
    with server.connect() as conn:
        assert conn.get_server_info().startswith("8.0.")
        assert scalar(conn, "SELECT @@version").startswith("8.0.")
        assert scalar(conn, "SELECT @@global.sql_mode") == MYSQL8_DEFAULT_SQL_MODE
        assert scalar(conn, "SELECT @@character_set_server") == "utf8mb4"
        assert scalar(conn, "SELECT @@collation_server") == "utf8mb4_0900_ai_ci"


def test_every_type_round_trips_exactly(conn):
    with conn.cursor() as cur:
        cur.execute(ALL_TYPES_DDL)
        cur.execute("SET time_zone = '+00:00'")
        placeholders = ", ".join(["%s"] * len(ALL_TYPES_ROW))
        assert cur.execute(f"INSERT INTO all_types VALUES ({placeholders})", ALL_TYPES_ROW) == 1
        assert cur.execute("INSERT INTO all_types (id) VALUES (2)") == 1
        cur.execute("SELECT * FROM all_types ORDER BY id")
        rows = cur.fetchall()
    assert rows[0] == ALL_TYPES_ROW
    assert rows[1] == (2,) + (None,) * (len(ALL_TYPES_ROW) - 1)
    assert isinstance(rows[0][3], Decimal)
    assert isinstance(rows[0][7], bytes)


def test_multi_row_insert_reports_first_id_and_affected_rows(conn):
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE item (id INT AUTO_INCREMENT PRIMARY KEY, name VARCHAR(20))")
        affected = cur.execute("INSERT INTO item (name) VALUES ('a'), ('b'), ('c')")
        assert affected == 3
        assert cur.lastrowid == 1
        affected = cur.execute("INSERT INTO item (name) VALUES ('d'), ('e')")
        assert (affected, cur.lastrowid) == (2, 4)
        assert scalar(conn, "SELECT LAST_INSERT_ID()") == 4
        assert cur.execute("UPDATE item SET name = 'z' WHERE id > 2") == 3
        # Affected rows counts rows changed, not rows matched (no CLIENT_FOUND_ROWS).
        assert cur.execute("UPDATE item SET name = 'z' WHERE id > 1") == 1
        assert cur.execute("DELETE FROM item WHERE id IN (1, 2)") == 2
        cur.execute("SELECT id, name FROM item ORDER BY id")
        assert cur.fetchall() == ((3, "z"), (4, "z"), (5, "z"))


def test_executemany_inserts_every_row(conn):
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE pair (k INT PRIMARY KEY, v VARCHAR(10))")
        rows = [(i, f"v{i}") for i in range(100)]
        assert cur.executemany("INSERT INTO pair (k, v) VALUES (%s, %s)", rows) == 100
        cur.execute("SELECT COUNT(*), SUM(k), MAX(v) FROM pair")
        assert cur.fetchone() == (100, Decimal(4950), "v99")


def test_commit_and_rollback_are_visible_from_a_second_connection(server, fresh_db):
    writer = server.connect(fresh_db, autocommit=False)
    reader = server.connect(fresh_db, autocommit=True)
    try:
        with writer.cursor() as cur:
            cur.execute("CREATE TABLE account (id INT PRIMARY KEY, balance INT)")
            cur.execute("INSERT INTO account VALUES (1, 100)")
        assert scalar(reader, "SELECT COUNT(*) FROM account") == 0
        writer.commit()
        assert scalar(reader, "SELECT COUNT(*) FROM account") == 1

        with writer.cursor() as cur:
            cur.execute("UPDATE account SET balance = 50 WHERE id = 1")
            cur.execute("INSERT INTO account VALUES (2, 7)")
        assert scalar(writer, "SELECT SUM(balance) FROM account") == 57
        writer.rollback()
        assert scalar(writer, "SELECT SUM(balance) FROM account") == 100
        assert scalar(reader, "SELECT SUM(balance) FROM account") == 100

        writer.autocommit(True)
        with writer.cursor() as cur:
            cur.execute("INSERT INTO account VALUES (3, 1)")
        assert scalar(reader, "SELECT COUNT(*) FROM account") == 2
    finally:
        writer.close()
        reader.close()


ERROR_CASES = [
    # (what, statement, MySQL errno, PyMySQL exception class)
    ("parse error", "SELEC 1", 1064, pymysql.err.ProgrammingError),
    ("unknown table", "SELECT * FROM no_such_table", 1146, pymysql.err.ProgrammingError),
    ("unknown column", "SELECT no_such_column FROM t", 1054, pymysql.err.OperationalError),
    ("unknown database", "USE no_such_database_xyz", 1049, pymysql.err.OperationalError),
    ("duplicate key", "INSERT INTO t (id, n) VALUES (1, 1)", 1062, pymysql.err.IntegrityError),
    ("NULL into NOT NULL", "INSERT INTO t (id, n) VALUES (2, NULL)", 1048, pymysql.err.IntegrityError),
    ("wrong integer value", "INSERT INTO t (id, n) VALUES (3, 'abc')", 1366, pymysql.err.DataError),
    ("out of range", "INSERT INTO t (id, n, tiny) VALUES (4, 1, 128)", 1264, pymysql.err.DataError),
    ("data too long", "INSERT INTO t (id, n, s) VALUES (5, 1, 'abcdef')", 1406, pymysql.err.DataError),
    ("unknown system variable", "SELECT @@no_such_variable", 1193, pymysql.err.OperationalError),
    ("unknown system variable in SET", "SET no_such_variable = 1", 1193, pymysql.err.OperationalError),
]


@pytest.mark.parametrize(
    "statement, errno, exception",
    [case[1:] for case in ERROR_CASES],
    ids=[case[0] for case in ERROR_CASES],
)
def test_error_maps_to_errno_and_connection_survives(conn, statement, errno, exception):
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, n INT NOT NULL, tiny TINYINT, s VARCHAR(5))")
        cur.execute("INSERT INTO t (id, n) VALUES (1, 10)")
        with pytest.raises(exception) as caught:
            cur.execute(statement)
        assert caught.value.args[0] == errno
        # The connection is still usable and the failed statement left nothing behind.
        cur.execute("SELECT COUNT(*), SUM(n) FROM t")
        assert cur.fetchone() == (1, Decimal(10))


def test_a_string_cut_to_its_column_warns_as_mysql_does(conn):
    """Outside strict mode a too-long string is stored cut with warning 1265 (not 1406); in
    any mode, only spaces past a VARCHAR's length are cut with note 1265."""
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE c (id INT PRIMARY KEY, s VARCHAR(3))")
        cur.execute("SET SESSION sql_mode = ''")
        cur.execute("INSERT INTO c VALUES (1, 'abcdef')")
        cur.execute("SHOW WARNINGS")
        assert [(level, code) for level, code, _ in cur.fetchall()] == [("Warning", 1265)]
        cur.execute("SET SESSION sql_mode = 'STRICT_TRANS_TABLES'")
        cur.execute("INSERT INTO c VALUES (2, 'ab    ')")
        cur.execute("SHOW WARNINGS")
        assert [(level, code) for level, code, _ in cur.fetchall()] == [("Note", 1265)]
        with pytest.raises(pymysql.err.DataError) as caught:
            cur.execute("INSERT INTO c VALUES (3, 'abcd ')")
        assert caught.value.args[0] == 1406
        cur.execute("SELECT id, s FROM c ORDER BY id")
        assert cur.fetchall() == ((1, "abc"), (2, "ab "))


def test_multi_statements_return_several_result_sets(server, fresh_db):
    with server.connect(fresh_db, client_flag=CLIENT.MULTI_STATEMENTS) as conn:
        with conn.cursor() as cur:
            cur.execute(
                "CREATE TABLE m (id INT PRIMARY KEY);"
                "INSERT INTO m VALUES (1), (2), (3);"
                "SELECT 1 AS one;"
                "SELECT id FROM m ORDER BY id DESC;"
                "UPDATE m SET id = id + 10 WHERE id < 3"
            )
            # CREATE TABLE: no result set
            assert cur.description is None
            assert cur.nextset()
            assert cur.rowcount == 3  # INSERT
            assert cur.nextset()
            assert cur.fetchall() == ((1,),)
            assert cur.nextset()
            assert cur.fetchall() == ((3,), (2,), (1,))
            assert cur.nextset()
            assert cur.rowcount == 2  # UPDATE
            assert not cur.nextset()
            # A failing statement stops the batch; later statements do not run.
            with pytest.raises(pymysql.err.ProgrammingError) as caught:
                cur.execute("SELECT 5; SELECT * FROM nope; INSERT INTO m VALUES (99)")
                while cur.nextset():
                    pass
            assert caught.value.args[0] == 1146
            cur.execute("SELECT COUNT(*) FROM m WHERE id = 99")
            assert cur.fetchone() == (0,)


@pytest.fixture
def global_max_allowed_packet(server):
    """Lets a test change @@global.max_allowed_packet, restored afterwards."""
    with server.connect() as conn:
        original = scalar(conn, "SELECT @@global.max_allowed_packet")

    def set_to(size_bytes):
        with server.connect() as admin, admin.cursor() as cur:
            cur.execute("SET GLOBAL max_allowed_packet = %s", (size_bytes,))

    yield set_to
    set_to(original)


def test_blob_of_20_mib_round_trips(server, fresh_db, global_max_allowed_packet):
    # A 20 MiB value needs packets split at 16 MiB in both directions.
    global_max_allowed_packet(64 * 1024 * 1024)
    payload = bytes(range(256)) * (20 * 1024 * 1024 // 256)
    with server.connect(fresh_db, max_allowed_packet=64 * 1024 * 1024) as conn:
        assert scalar(conn, "SELECT @@max_allowed_packet") == 64 * 1024 * 1024
        with conn.cursor() as cur:
            cur.execute("CREATE TABLE big (id INT PRIMARY KEY, data LONGBLOB)")
            cur.execute("INSERT INTO big VALUES (1, %s)", (payload,))
            cur.execute("SELECT LENGTH(data), data FROM big WHERE id = 1")
            length, data = cur.fetchone()
        assert length == len(payload)
        assert data == payload
        assert scalar(conn, "SELECT 1") == 1


def test_packet_over_max_allowed_packet_is_refused(server, global_max_allowed_packet):
    # MySQL answers ER_NET_PACKET_TOO_LARGE (1153) and closes the connection; the client
    # may see either that error or the closed connection (2013 / 2006).
    global_max_allowed_packet(1024 * 1024)
    conn = server.connect(max_allowed_packet=64 * 1024 * 1024)
    try:
        assert scalar(conn, "SELECT @@max_allowed_packet") == 1024 * 1024
        with pytest.raises(pymysql.err.OperationalError) as caught:
            scalar(conn, "SELECT LENGTH(%s)", ("x" * (2 * 1024 * 1024),))
        assert caught.value.args[0] in (1153, 2013, 2006)
    finally:
        conn.close()
    with server.connect() as fresh:
        assert scalar(fresh, "SELECT 1") == 1
    server.assert_alive()


def test_two_clients_incrementing_one_row_lose_no_update(server, fresh_db):
    increments_per_client = 1000  # the scenario of issue 2: ends at 2,000
    with server.connect(fresh_db) as setup, setup.cursor() as cur:
        cur.execute("CREATE TABLE demo (id INT PRIMARY KEY, counter INT NOT NULL)")
        cur.execute("INSERT INTO demo VALUES (1, 0), (2, 0), (3, 0)")

    errors = []

    def client():
        try:
            with server.connect(fresh_db, autocommit=True) as conn, conn.cursor() as cur:
                for _ in range(increments_per_client):
                    assert cur.execute("UPDATE demo SET counter = counter + 1 WHERE id = 3") == 1
        except Exception as error:  # reported by the main thread
            errors.append(error)

    threads = [threading.Thread(target=client) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads), "a client hung"
    assert errors == []
    with server.connect(fresh_db) as conn, conn.cursor() as cur:
        cur.execute("SELECT id, counter FROM demo ORDER BY id")
        assert cur.fetchall() == ((1, 0), (2, 0), (3, 2 * increments_per_client))


@pytest.mark.mysql8_only
def test_explain_names_the_index_each_access_path_reads(conn):
    """Quill's planner reads only what a WHERE clause needs, and EXPLAIN says which path and
    index it chose (the type and key columns). Without the index paths these are ALL scans."""
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE ex (id INT PRIMARY KEY, k INT, KEY kk (k))")
        cur.execute("INSERT INTO ex VALUES (1, 3), (2, 4), (3, 5)")
        plans = {}
        for where in ("id = 1", "id <=> 1", "id IN (1, 2)", "id BETWEEN 1 AND 5", "k = 3", "k > 3", "k + 0 = 3"):
            cur.execute(f"EXPLAIN SELECT * FROM ex WHERE {where}")
            row = cur.fetchone()
            plans[where] = (row[4], row[6])
    assert plans == {
        "id = 1": ("const", "PRIMARY"),
        # The replica's applier finds each row so: by its key, not by a scan.
        "id <=> 1": ("const", "PRIMARY"),
        "id IN (1, 2)": ("range", "PRIMARY"),
        "id BETWEEN 1 AND 5": ("range", "PRIMARY"),
        "k = 3": ("ref", "kk"),
        "k > 3": ("range", "kk"),
        "k + 0 = 3": ("ALL", None),
    }


def test_explain_of_a_with_or_parenthesised_query_explains_the_query(conn):
    """EXPLAIN WITH ... and EXPLAIN (SELECT ...) plan the query, as MySQL's and MariaDB's do;
    they are not EXPLAIN <table> (DESCRIBE) of a table named WITH."""
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE ew (id INT PRIMARY KEY, k INT)")
        for sql in ("EXPLAIN WITH c AS (SELECT id FROM ew WHERE id = 1) SELECT * FROM c",
                    "EXPLAIN WITH RECURSIVE n (i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3) SELECT * FROM n",
                    "EXPLAIN (SELECT id FROM ew WHERE id = 1)"):
            cur.execute(sql)
            names = [d[0] for d in cur.description]
            assert names[:3] == ["id", "select_type", "table"], sql
            assert cur.fetchall(), sql
