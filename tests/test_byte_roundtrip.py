"""Bytes round-trip exactly through every client, in text and binary protocol.

Every byte value 0-255 and random binary strings (up to 1 MiB) go into MEDIUMBLOB, VARBINARY
and BINARY columns, and random utf8mb4 text (four-byte characters included) into VARCHAR,
through each client the way an application sends them, and come back byte for byte, read
by the client and, independently, as HEX() computed by the server. Regression: bytes that
were not UTF-8 inside the statement text were replaced with U+FFFD (`LENGTH` of 256 bytes
read 512).

Clients here: PyMySQL and mysqlclient (both escape the bytes into the statement text),
mysql-connector-python in both implementations, text and prepared, and the mysql command-line
client reading a file. The Rust `mysql` crate and Go's go-sql-driver run the same checks in
their own programs (tests/rust-client, tests/go-client).
"""

import random
import subprocess

import MySQLdb
import mysql.connector
import pymysql
import pytest

SEED = 0xB17E5
BLOB_SIZES = (0, 1, 255, 65_535, 1 << 20)
VARBINARY_BYTES = 4_000
BINARY_BYTES = 255
TEXT_CHARS = 300

DDL = (
    f"CREATE TABLE bytes (id INT PRIMARY KEY, b MEDIUMBLOB, vb VARBINARY({VARBINARY_BYTES}), "
    f"bn BINARY({BINARY_BYTES}), t VARCHAR({TEXT_CHARS})) DEFAULT CHARSET=utf8mb4"
)


def random_text(rng: random.Random, chars: int) -> str:
    """utf8mb4 text: ASCII, Latin, CJK and four-byte characters (emoji, rare CJK)."""
    ranges = [(0x20, 0x7E), (0xA0, 0x24F), (0x4E00, 0x9FFF), (0x1F300, 0x1FAFF), (0x20000, 0x2A6DF)]
    out = []
    for _ in range(chars):
        lo, hi = rng.choice(ranges)
        out.append(chr(rng.randint(lo, hi)))
    return "".join(out)


def rows_to_send():
    """(id, blob, varbinary, binary, text) rows: every byte value, then random ones."""
    rng = random.Random(SEED)
    every = bytes(range(256))
    rows = [(1, every, every, every[:BINARY_BYTES], random_text(rng, TEXT_CHARS))]
    for n, size in enumerate(BLOB_SIZES, start=2):
        blob = rng.randbytes(size)
        rows.append((n, blob, rng.randbytes(rng.randint(0, VARBINARY_BYTES)), rng.randbytes(BINARY_BYTES), random_text(rng, rng.randint(0, TEXT_CHARS))))
    # BINARY pads a shorter value with zero bytes, as MySQL does.
    rows.append((99, b"", b"\0", b"ab", ""))
    return rows


def expected(row):
    n, blob, vb, bn, text = row
    return (n, blob, vb, bn.ljust(BINARY_BYTES, b"\0"), text)


def check_through_server_hex(cursor, sent_rows):
    cursor.execute("SELECT id, HEX(b), HEX(vb), HEX(bn), HEX(t) FROM bytes ORDER BY id")
    got = {r[0]: r[1:] for r in cursor.fetchall()}
    for row in map(expected, sent_rows):
        n, blob, vb, bn, text = row
        assert got[n] == (blob.hex().upper(), vb.hex().upper(), bn.hex().upper(), text.encode().hex().upper()), f"row {n}"


def check_read_back(fetched, sent_rows):
    got = {r[0]: tuple(bytes(v) if isinstance(v, bytearray) else v for v in r) for r in fetched}
    for row in map(expected, sent_rows):
        assert got[row[0]] == row, f"row {row[0]} differs"


# Each client: connect(server, database) -> connection, and the parameter style it uses.
def pymysql_connect(server, db):
    return pymysql.connect(host=server.host, port=server.port, user=server.user, password=server.password, database=db, charset="utf8mb4", autocommit=True)


def mysqlclient_connect(server, db):
    conn = MySQLdb.connect(host=server.host, port=server.port, user=server.user, passwd=server.password, db=db, charset="utf8mb4")
    conn.autocommit(True)
    return conn


def connector_connect(pure):
    def connect(server, db):
        return mysql.connector.connect(host=server.host, port=server.port, user=server.user, password=server.password, database=db,
                                       use_pure=pure, autocommit=True, charset="utf8mb4")
    return connect


CLIENTS = [
    pytest.param(pymysql_connect, {}, id="pymysql"),
    pytest.param(mysqlclient_connect, {}, id="mysqlclient"),
    pytest.param(connector_connect(True), {}, id="connector-pure-text"),
    pytest.param(connector_connect(True), {"prepared": True}, id="connector-pure-prepared"),
    pytest.param(connector_connect(False), {}, id="connector-c-text",
                 marks=pytest.mark.skipif(not mysql.connector.HAVE_CEXT, reason="C extension not available")),
    pytest.param(connector_connect(False), {"prepared": True}, id="connector-c-prepared",
                 marks=pytest.mark.skipif(not mysql.connector.HAVE_CEXT, reason="C extension not available")),
]


@pytest.mark.parametrize("connect, cursor_options", CLIENTS)
def test_bytes_round_trip(server, fresh_db, connect, cursor_options):
    conn = connect(server, fresh_db)
    try:
        cur = conn.cursor()
        cur.execute("SET SESSION sql_mode = 'STRICT_TRANS_TABLES'")
        cur.execute(DDL)
        sent = rows_to_send()
        insert = conn.cursor(**cursor_options)
        for row in sent:
            insert.execute("INSERT INTO bytes VALUES (%s, %s, %s, %s, %s)", row)
        select = conn.cursor(**cursor_options)
        select.execute("SELECT id, b, vb, bn, t FROM bytes ORDER BY id")
        check_read_back(select.fetchall(), sent)
        check_through_server_hex(cur, sent)
    finally:
        conn.close()


def test_bytes_round_trip_through_the_mysql_client_reading_a_file(server, fresh_db, tmp_path):
    # As mysqldump writes rows (without --hex-blob): bytes escaped into the text.
    def literal(value):
        if isinstance(value, int):
            return str(value).encode()
        raw = value if isinstance(value, bytes) else value.encode()
        for a, b in ((b"\\", b"\\\\"), (b"'", b"\\'"), (b"\0", b"\\0"), (b"\n", b"\\n"), (b"\r", b"\\r"), (b"\x1a", b"\\Z")):
            raw = raw.replace(a, b)
        return (b"_binary '" if isinstance(value, bytes) else b"'") + raw + b"'"

    sent = rows_to_send()
    script = tmp_path / "rows.sql"
    with open(script, "wb") as f:
        f.write(DDL.encode() + b";\n")
        for row in sent:
            f.write(b"INSERT INTO bytes VALUES (" + b",".join(literal(v) for v in row) + b");\n")
    with open(script, "rb") as f:
        result = subprocess.run(["mysql", "-h", server.host, "-P", str(server.port), "-u", server.user, "--default-character-set=utf8mb4",
                                 "--max-allowed-packet=64M", fresh_db], stdin=f, capture_output=True, timeout=120)
    assert result.returncode == 0, result.stderr
    with server.connect(fresh_db).cursor() as cur:
        check_through_server_hex(cur, sent)
