"""mysqlclient (MySQLdb, the C driver over libmariadb) against the server.

MySQLdb interpolates parameters on the client and sends plain COM_QUERY text, so this
exercises the text protocol through the C client library: connect, COM_INIT_DB,
COM_PING, CRUD, executemany's multi-row rewrite, utf8mb4 (emoji) round trips and errors.
"""

import datetime
from decimal import Decimal

import MySQLdb
import pytest


@pytest.fixture
def db(server, fresh_db):
    connection = MySQLdb.connect(
        host=server.host,
        port=server.port,
        user=server.user,
        passwd=server.password,
        database=fresh_db,
        charset="utf8mb4",
        autocommit=True,
    )
    yield connection
    connection.close()


def test_connect_ping_and_server_info(db):
    db.ping()
    assert db.get_server_info()
    cur = db.cursor()
    cur.execute("SELECT 1 + 1, DATABASE()")
    (two, database), = cur.fetchall()
    assert two == 2
    assert database.startswith("t_")


def test_select_db_changes_the_default_database(db, server):
    cur = db.cursor()
    cur.execute("CREATE TABLE marker (x INT)")
    db.select_db("information_schema")  # COM_INIT_DB
    cur.execute("SELECT DATABASE()")
    assert cur.fetchone() == ("information_schema",)


def test_crud(db):
    cur = db.cursor()
    cur.execute(
        "CREATE TABLE person ("
        " id INT AUTO_INCREMENT PRIMARY KEY,"
        " name VARCHAR(40) NOT NULL,"
        " born DATE,"
        " salary DECIMAL(10,2))"
    )
    assert cur.execute(
        "INSERT INTO person (name, born, salary) VALUES (%s, %s, %s)",
        ("Ada", datetime.date(1815, 12, 10), Decimal("1000.50")),
    ) == 1
    assert db.insert_id() == 1
    # executemany rewrites an INSERT ... VALUES into one multi-row statement.
    assert cur.executemany(
        "INSERT INTO person (name, born, salary) VALUES (%s, %s, %s)",
        [("Grace", datetime.date(1906, 12, 9), None), ("Edsger", None, Decimal("0.01"))],
    ) == 2

    cur.execute("SELECT id, name, born, salary FROM person ORDER BY id")
    assert cur.fetchall() == (
        (1, "Ada", datetime.date(1815, 12, 10), Decimal("1000.50")),
        (2, "Grace", datetime.date(1906, 12, 9), None),
        (3, "Edsger", None, Decimal("0.01")),
    )

    assert cur.execute("UPDATE person SET salary = salary * 2 WHERE salary IS NOT NULL") == 2
    assert db.affected_rows() == 2
    cur.execute("SELECT SUM(salary) FROM person")
    assert cur.fetchone() == (Decimal("2001.02"),)

    assert cur.execute("DELETE FROM person WHERE name LIKE %s", ("%a%",)) == 2
    cur.execute("SELECT name FROM person")
    assert cur.fetchall() == (("Edsger",),)


def test_utf8mb4_round_trip_including_emoji(db):
    text = "emoji 😀🐬, accents éàü, CJK 漢字, math 𝔸"
    cur = db.cursor()
    cur.execute("CREATE TABLE note (id INT PRIMARY KEY, body VARCHAR(100)) CHARACTER SET utf8mb4")
    cur.execute("INSERT INTO note VALUES (1, %s)", (text,))
    cur.execute("SELECT body, CHAR_LENGTH(body), LENGTH(body) FROM note WHERE id = 1")
    assert cur.fetchone() == (text, len(text), len(text.encode("utf-8")))
    cur.execute("SELECT id FROM note WHERE body = %s", (text,))
    assert cur.fetchall() == ((1,),)
    cur.execute("SELECT %s", ("🐬",))
    assert cur.fetchone() == ("🐬",)


@pytest.mark.parametrize(
    "statement, errno, exception",
    [
        ("SELECT * FROM missing", 1146, MySQLdb.ProgrammingError),
        ("SELECT FROM WHERE", 1064, MySQLdb.ProgrammingError),
        ("INSERT INTO k VALUES (1)", 1062, MySQLdb.IntegrityError),
        ("INSERT INTO k VALUES (NULL)", 1048, MySQLdb.IntegrityError),
        ("SELECT nope FROM k", 1054, MySQLdb.OperationalError),
    ],
)
def test_errors(db, statement, errno, exception):
    cur = db.cursor()
    cur.execute("CREATE TABLE k (id INT NOT NULL PRIMARY KEY)")
    cur.execute("INSERT INTO k VALUES (1)")
    with pytest.raises(exception) as caught:
        cur.execute(statement)
    assert caught.value.args[0] == errno
    cur.execute("SELECT COUNT(*) FROM k")
    assert cur.fetchone() == (1,)


def test_transaction_rollback(db):
    cur = db.cursor()
    cur.execute("CREATE TABLE ledger (id INT PRIMARY KEY)")
    db.autocommit(False)
    cur.execute("INSERT INTO ledger VALUES (1)")
    db.rollback()
    cur.execute("INSERT INTO ledger VALUES (2)")
    db.commit()
    cur.execute("SELECT id FROM ledger")
    assert cur.fetchall() == ((2,),)
