"""mysql-connector-python against the server, in both of its implementations.

`cursor(prepared=True)` uses COM_STMT_PREPARE / COM_STMT_EXECUTE, i.e. the binary protocol:
parameters are sent as typed binary values and rows come back in the binary row format.
Every column type is round-tripped through it, NULLs included.

`use_pure=True` is the pure-Python implementation; `use_pure=False` is the C extension
(over libmysqlclient), run when it loads. The C extension (9.x) has client-side bugs in its
prepared-statement path that are not the server's: it binds a Python float as FLOAT
(-1.5e-300 becomes 0), cannot bind a `timedelta` (sent as 00:00:00) or an integer above
2**63-1, and reads BIGINT UNSIGNED as signed. Its row therefore uses values those bugs do not
touch (a binary-exact double, TIME as a string, the largest signed BIGINT). The pure driver
in turn drops the sign of a negative binary TIME both when binding and when decoding, so a
negative TIME is bound as a string and checked as `CAST(span AS CHAR)` (and as a `timedelta`
only through the C extension, which decodes it correctly).
"""

import datetime
from decimal import Decimal

import mysql.connector
import pytest
from mysql.connector import errors

TYPES_DDL = """
CREATE TABLE typed (
    id      INT PRIMARY KEY,
    tiny    TINYINT,
    n_int   INT,
    n_big   BIGINT UNSIGNED,
    price   DECIMAL(10,2),
    ratio   DOUBLE,
    name    VARCHAR(50),
    body    TEXT,
    data    BLOB,
    day     DATE,
    moment  DATETIME(6),
    stamp   TIMESTAMP(6) NULL,
    span    TIME(6),
    wait    TIME(6),
    flag    BOOLEAN
)
"""

NEGATIVE_TIME = -datetime.timedelta(hours=12, minutes=34, seconds=56, microseconds=789000)
LONGEST_TIME = datetime.timedelta(hours=838, minutes=59, seconds=58, microseconds=999999)
SPAN = 12  # index of the negative TIME column in `typed`


def typed_row(pure: bool):
    """(values to bind, values expected back) for one row of `typed`."""
    sent = {
        "id": 1,
        "tiny": -128,
        "n_int": -2147483648,
        "n_big": 18446744073709551615 if pure else 9223372036854775807,
        "price": Decimal("-12345678.90"),
        "ratio": -1.5e-300 if pure else -1.5,
        "name": "Grüße 😀",
        "body": "line one\nline two",
        "data": bytes(range(256)),
        "day": datetime.date(2024, 2, 29),
        "moment": datetime.datetime(2024, 2, 29, 23, 59, 58, 123456),
        "stamp": datetime.datetime(2038, 1, 19, 3, 14, 7, 999999),
        "span": "-12:34:56.789",
        "wait": LONGEST_TIME if pure else "838:59:58.999999",
        "flag": True,
    }
    expected = dict(sent, span=NEGATIVE_TIME, wait=LONGEST_TIME, flag=1)
    return tuple(sent.values()), tuple(expected.values())


def implementations():
    yield pytest.param(True, id="pure")
    yield pytest.param(
        False,
        id="c-extension",
        marks=pytest.mark.skipif(not mysql.connector.HAVE_CEXT, reason="C extension not available"),
    )


@pytest.fixture(params=list(implementations()))
def cnx(request, server, fresh_db):
    connection = mysql.connector.connect(
        host=server.host,
        port=server.port,
        user=server.user,
        password=server.password,
        database=fresh_db,
        use_pure=request.param,
        autocommit=True,
        charset="utf8mb4",
    )
    connection.pure = request.param
    yield connection
    connection.close()


def test_plain_queries(cnx):
    cur = cnx.cursor()
    cur.execute("SELECT 1, 'two', NULL, 4.50, DATABASE()")
    row = cur.fetchone()
    assert row[:4] == (1, "two", None, Decimal("4.50"))
    cur.execute("CREATE TABLE kv (k VARCHAR(10) PRIMARY KEY, v INT)")
    cur.execute("INSERT INTO kv VALUES ('a', 1), ('b', 2), ('c', NULL)")
    assert cur.rowcount == 3
    cur.execute("SELECT k, v FROM kv WHERE v IS NOT NULL ORDER BY v DESC")
    assert cur.fetchall() == [("b", 2), ("a", 1)]
    cur.close()


def test_prepared_every_type_round_trips(cnx):
    sent, expected = typed_row(cnx.pure)
    plain = cnx.cursor()
    plain.execute(TYPES_DDL)
    plain.execute("SET time_zone = '+00:00'")
    prepared = cnx.cursor(prepared=True)
    placeholders = ", ".join(["%s"] * len(sent))
    prepared.execute(f"INSERT INTO typed VALUES ({placeholders})", sent)
    assert prepared.rowcount == 1
    # A row of NULLs bound as parameters.
    prepared.execute(f"INSERT INTO typed VALUES ({placeholders})", (2,) + (None,) * (len(sent) - 1))

    prepared.execute("SELECT *, CAST(span AS CHAR) FROM typed WHERE id >= %s ORDER BY id", (1,))
    rows = [tuple(row) for row in prepared.fetchall()]
    assert len(rows) == 2
    assert rows[0][-1] == "-12:34:56.789000"
    if cnx.pure:  # see the module doc: this driver decodes a negative binary TIME wrongly
        assert rows[0][:SPAN] + rows[0][SPAN + 1 : -1] == expected[:SPAN] + expected[SPAN + 1 :]
    else:
        assert rows[0][:-1] == expected
    assert rows[1] == (2,) + (None,) * len(sent)

    # The same row through the text protocol agrees.
    plain.execute("SELECT * FROM typed WHERE id = 1")
    text_row = list(plain.fetchone())
    text_row[8] = bytes(text_row[8])  # the BLOB comes back as a bytearray
    assert tuple(text_row) == expected
    prepared.close()


@pytest.mark.parametrize("pure", [True])
def test_prepared_unsigned_bigint_max_as_parameter(server, fresh_db, pure):
    # Binary protocol: the unsigned flag on a parameter type (0x80 in the type's second byte).
    cnx = mysql.connector.connect(
        host=server.host, port=server.port, user=server.user, password=server.password,
        database=fresh_db, use_pure=pure, autocommit=True,
    )
    try:
        cur = cnx.cursor(prepared=True)
        cur.execute("CREATE TABLE u (id INT PRIMARY KEY, n BIGINT UNSIGNED)")
        cur.execute("INSERT INTO u VALUES (%s, %s), (%s, %s)", (1, 2**64 - 1, 2, 2**63))
        cur.execute("SELECT id FROM u WHERE n > %s ORDER BY id", (2**63 - 1,))
        assert [tuple(r) for r in cur.fetchall()] == [(1,), (2,)]
        cur.execute("SELECT n FROM u WHERE id = %s", (1,))
        assert cur.fetchall() == [(18446744073709551615,)]
    finally:
        cnx.close()


def test_prepared_statement_is_reusable_and_counts_rows(cnx):
    plain = cnx.cursor()
    plain.execute("CREATE TABLE seq (n INT PRIMARY KEY, square BIGINT)")
    prepared = cnx.cursor(prepared=True)
    insert = "INSERT INTO seq (n, square) VALUES (%s, %s)"
    for n in range(1, 11):
        prepared.execute(insert, (n, n * n))
    prepared.execute("UPDATE seq SET square = -square WHERE n > %s", (7,))
    assert prepared.rowcount == 3
    prepared.execute("SELECT SUM(square), COUNT(*) FROM seq WHERE n BETWEEN %s AND %s", (1, 10))
    assert prepared.fetchall() == [(Decimal(385 - 2 * (64 + 81 + 100)), 10)]


def test_prepared_errors_keep_the_connection(cnx):
    plain = cnx.cursor()
    plain.execute("CREATE TABLE one (id INT PRIMARY KEY)")
    plain.execute("INSERT INTO one VALUES (1)")
    prepared = cnx.cursor(prepared=True)
    with pytest.raises(errors.IntegrityError) as caught:
        prepared.execute("INSERT INTO one VALUES (%s)", (1,))
    assert caught.value.errno == 1062
    with pytest.raises(errors.ProgrammingError) as caught:
        cnx.cursor(prepared=True).execute("SELECT * FROM missing WHERE id = %s", (1,))
    assert caught.value.errno == 1146
    plain = cnx.cursor()
    plain.execute("SELECT COUNT(*) FROM one")
    assert plain.fetchall() == [(1,)]
