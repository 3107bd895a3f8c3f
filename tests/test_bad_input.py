"""Bad input on the wire: the server answers with a clear MySQL error or closes that one
connection, and never crashes, hangs, or leaks a half-done transaction.

Uses the raw-socket client in `wire.py` to send what no driver would send. The last test
checks the server still answers after all of it.
"""

import struct

import pytest

from wire import (
    COM_QUERY,
    COM_STMT_EXECUTE,
    ConnectionClosed,
    RawConnection,
    ServerError,
    parse_err,
)

ER_HANDSHAKE_ERROR = 1043
ER_UNKNOWN_COM_ERROR = 1047
ER_EMPTY_QUERY = 1065
ER_PARSE_ERROR = 1064
ER_UNKNOWN_STMT_HANDLER = 1243


def raw(server) -> RawConnection:
    return RawConnection(server.host, server.port)


def logged_in(server) -> RawConnection:
    connection = raw(server)
    connection.login(server.user)
    return connection


def assert_answers_select_1(server):
    with logged_in(server) as connection:
        assert connection.query("SELECT 1") == [["1"]]
    server.assert_alive()


def expect_error_or_close(connection: RawConnection) -> int | None:
    """The errno of the ERR packet the server sends, or None if it just closed."""
    try:
        packet = connection.read_packet()
    except (ConnectionClosed, ConnectionResetError):
        return None
    return parse_err(packet).errno


def test_greeting_presents_protocol_10(server):
    with raw(server) as connection:
        greeting = connection.read_greeting()
    assert greeting["connection_id"] > 0
    assert len(greeting["scramble"]) == 20
    assert greeting["plugin"] in ("mysql_native_password", "caching_sha2_password")


@pytest.mark.mysql8_only
def test_greeting_version_is_mysql8(server):
    with raw(server) as connection:
        assert connection.read_greeting()["version"].startswith("8.0.")


@pytest.mark.parametrize(
    "garbage",
    [b"hello, this is not a handshake response" * 3, b"\x01", b"\xff" * 64],
    ids=["text", "one-byte", "all-ones"],
)
def test_garbage_instead_of_handshake_response(server, garbage):
    with raw(server) as connection:
        connection.read_greeting()
        connection.write_packet(garbage)
        assert expect_error_or_close(connection) in (ER_HANDSHAKE_ERROR, None)
        assert connection.is_closed_by_server()
    assert_answers_select_1(server)


def test_truncated_packets_then_disconnect(server):
    # Header promising 100 bytes, then 10 bytes, then the client vanishes.
    with raw(server) as connection:
        connection.read_greeting()
        connection.send_raw(b"\x64\x00\x00\x01" + b"x" * 10)
    # Half a header.
    with raw(server) as connection:
        connection.read_greeting()
        connection.send_raw(b"\x05\x00")
    # A logged-in client sends a COM_QUERY cut short and closes.
    with logged_in(server) as connection:
        connection.send_raw(b"\xe8\x03\x00\x00" + bytes([COM_QUERY]) + b"SELECT")
    # A client that connects and says nothing at all.
    with raw(server):
        pass
    assert_answers_select_1(server)


def test_unknown_statement_id_for_execute(server):
    with logged_in(server) as connection:
        execute = bytes([COM_STMT_EXECUTE]) + struct.pack("<IBI", 12345, 0, 1)
        error = parse_err(connection.command(execute))
        assert error.errno == ER_UNKNOWN_STMT_HANDLER
        assert error.sqlstate == "HY000"
        assert "12345" in error.message
        assert connection.query("SELECT 1") == [["1"]]


def test_syntax_error_then_connection_still_works(server):
    with logged_in(server) as connection:
        with pytest.raises(ServerError) as caught:
            connection.query("SELEC 1 FROM")
        assert (caught.value.errno, caught.value.sqlstate) == (ER_PARSE_ERROR, "42000")
        assert "near 'SELEC 1 FROM' at line 1" in caught.value.message
        assert connection.query("SELECT 2") == [["2"]]


def test_empty_query(server):
    with logged_in(server) as connection:
        with pytest.raises(ServerError) as caught:
            connection.query("")
        assert (caught.value.errno, caught.value.sqlstate) == (ER_EMPTY_QUERY, "42000")
        assert connection.query("SELECT 3") == [["3"]]


@pytest.mark.parametrize("command_byte", [0x20, 0x7F, 0xFF])
def test_unknown_command_byte(server, command_byte):
    with logged_in(server) as connection:
        error = parse_err(connection.command(bytes([command_byte])))
        assert (error.errno, error.sqlstate) == (ER_UNKNOWN_COM_ERROR, "08S01")
        assert error.message == "Unknown command"
        assert connection.query("SELECT 4") == [["4"]]


def test_disconnect_mid_transaction_rolls_back(server, fresh_db):
    with logged_in(server) as setup:
        setup.query(f"CREATE TABLE `{fresh_db}`.t (id INT PRIMARY KEY)")
        setup.query(f"INSERT INTO `{fresh_db}`.t VALUES (1)")

    doomed = logged_in(server)
    doomed.query("BEGIN")
    doomed.query(f"INSERT INTO `{fresh_db}`.t VALUES (2)")
    doomed.query(f"UPDATE `{fresh_db}`.t SET id = 10 WHERE id = 1")
    doomed.close()  # no COMMIT, no COM_QUIT: the socket just goes away

    with logged_in(server) as observer:
        assert observer.query(f"SELECT id FROM `{fresh_db}`.t ORDER BY id") == [["1"]]
        # The row locks the dead transaction held are released: the same rows can be written.
        assert observer.query(f"INSERT INTO `{fresh_db}`.t VALUES (2)") == 1
        assert observer.query(f"UPDATE `{fresh_db}`.t SET id = 10 WHERE id = 1") == 1
        assert observer.query(f"SELECT id FROM `{fresh_db}`.t ORDER BY id") == [["2"], ["10"]]


def test_server_still_answers_after_all_of_this(server):
    assert_answers_select_1(server)


def test_pipelined_queries_are_answered_in_order(server):
    """Several COM_QUERY packets in one write: each gets its own reply, in order."""
    with RawConnection(server.host, server.port) as conn:
        conn.login()
        batch = b""
        for n in (1, 2, 3):
            payload = bytes([0x03]) + f"SELECT {n} + 10".encode()
            batch += len(payload).to_bytes(3, "little") + b"\x00" + payload
        conn.send_raw(batch)
        values = []
        for _ in range(3):
            first = conn.read_packet()
            assert first[0] == 1, "one column"
            conn.read_packet()  # column definition
            assert conn.read_packet()[0] == 0xFE  # EOF after the definitions
            row = conn.read_packet()
            values.append(row[1 : 1 + row[0]].decode())
            assert conn.read_packet()[0] == 0xFE  # EOF after the rows
        assert values == ["11", "12", "13"]
