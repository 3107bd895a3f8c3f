"""A minimal MySQL protocol client over a raw socket, for sending bytes no driver would send.

Packets are a 3-byte little-endian payload length, a 1-byte sequence id, then the payload.
Only what the bad-input tests need is here: the v10 greeting, a login with an empty password
(answering an auth switch or caching_sha2's fast path) or with any answer the caller builds,
COM_QUERY with text result sets (without CLIENT_DEPRECATE_EOF, so result sets end with EOF
packets), and ERR parsing.
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass

CLIENT_LONG_PASSWORD = 0x00000001
CLIENT_PROTOCOL_41 = 0x00000200
CLIENT_TRANSACTIONS = 0x00002000
CLIENT_SECURE_CONNECTION = 0x00008000
CLIENT_PLUGIN_AUTH = 0x00080000
LOGIN_CAPABILITIES = (
    CLIENT_LONG_PASSWORD | CLIENT_PROTOCOL_41 | CLIENT_TRANSACTIONS
    | CLIENT_SECURE_CONNECTION | CLIENT_PLUGIN_AUTH
)
MAX_PACKET_PAYLOAD = 0xFFFFFF

COM_QUIT = 0x01
COM_QUERY = 0x03
COM_STMT_PREPARE = 0x16
COM_STMT_EXECUTE = 0x17
COM_STMT_SEND_LONG_DATA = 0x18
MYSQL_TYPE_LONGLONG = 0x08
MYSQL_TYPE_BLOB = 0xFC

OK_HEADER = 0x00
EOF_HEADER = 0xFE
ERR_HEADER = 0xFF
AUTH_MORE_DATA = 0x01
CACHING_SHA2_FAST_AUTH_OK = 0x03

READ_TIMEOUT_S = 10


@dataclass
class ServerError(Exception):
    errno: int
    sqlstate: str
    message: str


class ConnectionClosed(Exception):
    """The server closed the connection (EOF on the socket)."""


def parse_err(payload: bytes) -> ServerError:
    assert payload[0] == ERR_HEADER, payload
    errno = struct.unpack_from("<H", payload, 1)[0]
    if payload[3:4] == b"#":
        return ServerError(errno, payload[4:9].decode(), payload[9:].decode(errors="replace"))
    return ServerError(errno, "", payload[3:].decode(errors="replace"))


def read_lenenc_int(data: bytes, pos: int) -> tuple[int | None, int]:
    first = data[pos]
    if first < 0xFB:
        return first, pos + 1
    if first == 0xFB:
        return None, pos + 1  # NULL in a text row
    width = {0xFC: 2, 0xFD: 3, 0xFE: 8}[first]
    return int.from_bytes(data[pos + 1 : pos + 1 + width], "little"), pos + 1 + width


class RawConnection:
    def __init__(self, host: str, port: int):
        self.sock = socket.create_connection((host, port), timeout=READ_TIMEOUT_S)
        self.sequence_id = 0

    def close(self) -> None:
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # Framing -----------------------------------------------------------------------------

    def recv_exact(self, size: int) -> bytes:
        chunks = []
        while size > 0:
            chunk = self.sock.recv(size)
            if not chunk:
                raise ConnectionClosed()
            chunks.append(chunk)
            size -= len(chunk)
        return b"".join(chunks)

    def read_packet(self) -> bytes:
        header = self.recv_exact(4)
        length = int.from_bytes(header[:3], "little")
        self.sequence_id = (header[3] + 1) & 0xFF
        payload = self.recv_exact(length)
        assert length < MAX_PACKET_PAYLOAD, "multi-packet payloads are not needed here"
        return payload

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def write_packet(self, payload: bytes) -> None:
        assert len(payload) < MAX_PACKET_PAYLOAD
        header = len(payload).to_bytes(3, "little") + bytes([self.sequence_id])
        self.sequence_id = (self.sequence_id + 1) & 0xFF
        self.sock.sendall(header + payload)

    def is_closed_by_server(self) -> bool:
        """True once the server has closed its side (reads EOF), false if it is silent."""
        self.sock.settimeout(READ_TIMEOUT_S)
        try:
            while True:
                if not self.sock.recv(65536):
                    return True
        except (ConnectionResetError, BrokenPipeError):
            return True
        except socket.timeout:
            return False

    # Handshake ---------------------------------------------------------------------------

    def read_greeting(self) -> dict:
        payload = self.read_packet()
        if payload[0] == ERR_HEADER:
            raise parse_err(payload)
        assert payload[0] == 10, f"protocol version {payload[0]}"
        end = payload.index(b"\0", 1)
        version = payload[1:end].decode()
        pos = end + 1
        connection_id = struct.unpack_from("<I", payload, pos)[0]
        scramble = payload[pos + 4 : pos + 12]
        pos += 4 + 8 + 1
        capabilities = struct.unpack_from("<H", payload, pos)[0]
        pos += 2 + 1 + 2  # charset, status flags
        capabilities |= struct.unpack_from("<H", payload, pos)[0] << 16
        pos += 2
        scramble_length = payload[pos]
        pos += 1 + 10
        tail = max(13, scramble_length - 8)
        scramble += payload[pos : pos + tail].rstrip(b"\0")
        pos += tail
        plugin = payload[pos:].split(b"\0")[0].decode()
        return {"version": version, "connection_id": connection_id, "capabilities": capabilities,
                "scramble": scramble, "plugin": plugin}

    def send_login(self, user: str, auth_response: bytes) -> dict:
        """Reads the greeting and answers it as `user` with `auth_response` for the plugin it
        offers; returns the greeting (the server's reply is left to read)."""
        greeting = self.read_greeting()
        assert len(auth_response) < 251
        response = (
            struct.pack("<IIB", LOGIN_CAPABILITIES, MAX_PACKET_PAYLOAD, 45)  # utf8mb4
            + b"\0" * 23
            + user.encode() + b"\0"
            + bytes([len(auth_response)]) + auth_response
            + greeting["plugin"].encode() + b"\0"
        )
        self.write_packet(response)
        return greeting

    def login(self, user: str = "root") -> dict:
        """Log in with an empty password; returns the greeting."""
        greeting = self.send_login(user, b"")
        while True:
            payload = self.read_packet()
            if payload[0] == OK_HEADER:
                return greeting
            if payload[0] == ERR_HEADER:
                raise parse_err(payload)
            if payload[0] == EOF_HEADER:  # auth switch request: answer with an empty password
                self.write_packet(b"")
            elif payload[0] == AUTH_MORE_DATA and payload[1:2] == bytes([CACHING_SHA2_FAST_AUTH_OK]):
                continue
            else:
                raise AssertionError(f"unexpected packet during login: {payload[:20]!r}")

    # Commands ----------------------------------------------------------------------------

    def command(self, payload: bytes) -> bytes:
        """Sends one command packet and returns the first response packet."""
        self.sequence_id = 0
        self.write_packet(payload)
        return self.read_packet()

    def query(self, sql: str | bytes) -> list[list[str | None]] | int:
        """Rows of a result set (values as str), or the affected-rows count of an OK.
        `sql` may be bytes, sent exactly as given.

        Raises ServerError on an ERR packet."""
        first = self.command(bytes([COM_QUERY]) + (sql if isinstance(sql, bytes) else sql.encode()))
        return self.read_result(first)

    def prepare(self, sql: str) -> tuple[int, int]:
        """COM_STMT_PREPARE: the statement id and its parameter count."""
        first = self.command(bytes([COM_STMT_PREPARE]) + sql.encode())
        if first[0] == ERR_HEADER:
            raise parse_err(first)
        statement_id, columns, params = struct.unpack_from("<IHH", first, 1)
        for _ in range(params):
            self.read_packet()
        if params:
            assert self.read_packet()[0] == EOF_HEADER
        for _ in range(columns):
            self.read_packet()
        if columns:
            assert self.read_packet()[0] == EOF_HEADER
        return statement_id, params

    def send_long_data(self, statement_id: int, param: int, data: bytes) -> None:
        """COM_STMT_SEND_LONG_DATA (the server does not answer it)."""
        self.sequence_id = 0
        self.write_packet(bytes([COM_STMT_SEND_LONG_DATA]) + struct.pack("<IH", statement_id, param) + data)

    def execute(self, statement_id: int, types: list[int], values: list[bytes | None], null_bits: int = 0) -> list[list[str | None]] | int:
        """COM_STMT_EXECUTE with new bound `types`; `values` already in binary form (None:
        not sent, for a NULL or long-data parameter); `null_bits` is the NULL bitmap.
        Returns the affected rows of an OK (result sets are not needed here)."""
        bitmap = null_bits.to_bytes((len(types) + 7) // 8, "little")
        payload = bytes([COM_STMT_EXECUTE]) + struct.pack("<IBI", statement_id, 0, 1) + bitmap + b"\x01"
        payload += b"".join(struct.pack("<BB", t, 0) for t in types)
        payload += b"".join(v for v in values if v is not None)
        return self.read_result(self.command(payload))

    def read_result(self, first: bytes) -> list[list[str | None]] | int:
        """The result of a command whose first reply packet is `first`."""
        if first[0] == ERR_HEADER:
            raise parse_err(first)
        if first[0] == OK_HEADER:
            return read_lenenc_int(first, 1)[0]
        column_count, _ = read_lenenc_int(first, 0)
        for _ in range(column_count):
            self.read_packet()  # column definitions
        assert self.read_packet()[0] == EOF_HEADER
        rows = []
        while True:
            packet = self.read_packet()
            if packet[0] == EOF_HEADER and len(packet) < 9:
                return rows
            if packet[0] == ERR_HEADER:
                raise parse_err(packet)
            row, pos = [], 0
            for _ in range(column_count):
                length, pos = read_lenenc_int(packet, pos)
                if length is None:
                    row.append(None)
                else:
                    row.append(packet[pos : pos + length].decode())
                    pos += length
            rows.append(row)
