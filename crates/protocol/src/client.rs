//! The client's side of the packets, for Quill's own connections to another server (a
//! replica's connection to its source): the greeting read, the answers to it written, the
//! commands a replica sends written, and the server's replies read. Sans-IO like the rest of
//! the crate: `quill-replication` owns the socket.
//!
//! Formats are those `handshake` and `command` parse on the server's side (specified there and
//! in `docs/protocol.md`); the tests below write each packet here and read it back with the
//! server's parser, so the two sides cannot drift apart.
//!
//! Nothing here panics on any input from the server: a greeting or reply that does not parse
//! is a `ProtocolError`.

use crate::auth::{CACHING_SHA2_PASSWORD, MYSQL_NATIVE_PASSWORD, SCRAMBLE_LEN, caching_sha2_scramble, native_password_scramble};
use crate::codec::{Reader, write_lenenc_int};
use crate::command::{BINLOG_DUMP_NON_BLOCK, BINLOG_THROUGH_GTID, BinlogDump, RegisterReplica};
use crate::constants::capabilities::*;
use crate::constants::command_bytes::{COM_BINLOG_DUMP, COM_BINLOG_DUMP_GTID, COM_QUERY, COM_REGISTER_SLAVE};
use crate::error::ProtocolError;
use crate::handshake::{HANDSHAKE_RESERVED_LEN, HANDSHAKE_RESPONSE_FILLER_LEN, PROTOCOL_VERSION, SCRAMBLE_PART1_LEN};
use crate::packet::{MAX_ALLOWED_PACKET_LIMIT, PacketWriter};
use crate::response::{EOF_HEADER, ERR_HEADER, OK_HEADER, SQLSTATE_MARKER};

/// What a Quill client asks for: protocol 4.1 with plugin authentication, and nothing that
/// changes how results are framed (no `CLIENT_DEPRECATE_EOF`, no compression).
pub const CLIENT_CAPABILITIES: u32 = CLIENT_LONG_PASSWORD
    | CLIENT_LONG_FLAG
    | CLIENT_PROTOCOL_41
    | CLIENT_TRANSACTIONS
    | CLIENT_SECURE_CONNECTION
    | CLIENT_MULTI_RESULTS
    | CLIENT_PLUGIN_AUTH
    | CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA;
/// The collation a Quill client announces: utf8mb4_general_ci, which every server since 5.5
/// knows (the high byte of 255 would need a server that knows utf8mb4_0900_ai_ci).
pub const CLIENT_CHARSET: u8 = 45;
/// An EOF packet is `0xFE` plus warnings and status: shorter than this, where a row or an
/// auth switch starting with 0xFE is longer.
pub const EOF_PACKET_LEN_MAX: usize = 9;

/// The server's greeting (Initial Handshake v10), as a client reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Greeting {
    pub server_version: String,
    pub connection_id: u32,
    /// The 20 bytes the password is scrambled with (without the trailing NUL).
    pub scramble: Vec<u8>,
    pub capabilities: u32,
    /// Empty when the server did not name one (`mysql_native_password` then).
    pub auth_plugin_name: String,
}

/// An ERR packet's parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerError {
    pub code: u16,
    pub sql_state: String,
    pub message: String,
}

/// Parses the greeting. A server that refuses the connection at once (too many connections,
/// a blocked host) sends an ERR packet instead: `Err(Ok(error))`.
pub fn parse_greeting(payload: &[u8]) -> Result<Result<Greeting, ServerError>, ProtocolError> {
    if payload.first() == Some(&ERR_HEADER) {
        return Ok(Err(parse_err(payload)?));
    }
    let mut r = Reader::new(payload);
    if r.u8("protocol version")? != PROTOCOL_VERSION {
        return Err(ProtocolError::Malformed { what: "protocol version" });
    }
    let server_version = String::from_utf8_lossy(r.null_terminated("server version")?).into_owned();
    let connection_id = r.u32_le("connection id")?;
    let mut scramble = r.bytes(SCRAMBLE_PART1_LEN, "scramble")?.to_vec();
    r.u8("filler")?;
    let low = r.u16_le("capabilities")?;
    let mut capabilities = u32::from(low);
    let mut auth_plugin_name = String::new();
    if !r.is_empty() {
        r.u8("charset")?;
        r.u16_le("status flags")?;
        capabilities |= u32::from(r.u16_le("capabilities")?) << 16;
        let scramble_len = usize::from(r.u8("scramble length")?);
        r.bytes(HANDSHAKE_RESERVED_LEN, "reserved")?;
        if capabilities & CLIENT_SECURE_CONNECTION != 0 {
            // At least 13 bytes: the rest of the scramble and its NUL.
            let len = scramble_len.saturating_sub(SCRAMBLE_PART1_LEN).max(13);
            let rest = r.bytes(len, "scramble")?;
            scramble.extend_from_slice(&rest[..rest.iter().position(|&b| b == 0).unwrap_or(rest.len())]);
        }
        if capabilities & CLIENT_PLUGIN_AUTH != 0 {
            auth_plugin_name = String::from_utf8_lossy(r.null_terminated_or_rest()).into_owned();
        }
    }
    Ok(Ok(Greeting { server_version, connection_id, scramble, capabilities, auth_plugin_name }))
}

/// Parses an ERR packet (`0xFF`, code, `#` and SQLSTATE, message).
pub fn parse_err(payload: &[u8]) -> Result<ServerError, ProtocolError> {
    let mut r = Reader::new(payload);
    if r.u8("ERR header")? != ERR_HEADER {
        return Err(ProtocolError::Malformed { what: "ERR header" });
    }
    let code = r.u16_le("error code")?;
    let mut sql_state = "HY000".to_owned();
    if r.remaining() >= 6 && payload[3] == SQLSTATE_MARKER {
        r.u8("SQLSTATE marker")?;
        sql_state = String::from_utf8_lossy(r.bytes(5, "SQLSTATE")?).into_owned();
    }
    Ok(ServerError { code, sql_state, message: String::from_utf8_lossy(r.rest()).into_owned() })
}

/// The password scrambled for `plugin` with the server's `scramble`; `None` for a plugin a
/// Quill client does not speak. An empty password is sent as an empty response.
#[must_use]
pub fn auth_response(plugin: &str, password: &[u8], scramble: &[u8]) -> Option<Vec<u8>> {
    let scramble = &scramble[..scramble.len().min(SCRAMBLE_LEN)];
    match plugin {
        MYSQL_NATIVE_PASSWORD | "" => Some(native_password_scramble(password, scramble)),
        CACHING_SHA2_PASSWORD => Some(caching_sha2_scramble(password, scramble)),
        _ => None,
    }
}

/// Writes the SSLRequest: the capabilities (with `CLIENT_SSL`), then TLS starts.
pub fn write_ssl_request(writer: &mut PacketWriter, capabilities: u32) {
    writer.write_packet_with(|out| {
        out.extend_from_slice(&(capabilities | CLIENT_SSL).to_le_bytes());
        out.extend_from_slice(&(MAX_ALLOWED_PACKET_LIMIT as u32).to_le_bytes());
        out.push(CLIENT_CHARSET);
        out.extend_from_slice(&[0; HANDSHAKE_RESPONSE_FILLER_LEN]);
    });
}

/// Writes HandshakeResponse41 with `capabilities` (which must hold `CLIENT_PLUGIN_AUTH` and
/// `CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA`, as [`CLIENT_CAPABILITIES`] does).
pub fn write_handshake_response(writer: &mut PacketWriter, capabilities: u32, user: &str, auth_response: &[u8], plugin: &str) {
    assert!(capabilities & CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA != 0 && capabilities & CLIENT_PLUGIN_AUTH != 0, "capabilities without plugin auth");
    writer.write_packet_with(|out| {
        out.extend_from_slice(&capabilities.to_le_bytes());
        out.extend_from_slice(&(MAX_ALLOWED_PACKET_LIMIT as u32).to_le_bytes());
        out.push(CLIENT_CHARSET);
        out.extend_from_slice(&[0; HANDSHAKE_RESPONSE_FILLER_LEN]);
        out.extend_from_slice(user.as_bytes());
        out.push(0);
        write_lenenc_int(out, auth_response.len() as u64);
        out.extend_from_slice(auth_response);
        out.extend_from_slice(plugin.as_bytes());
        out.push(0);
    });
}

/// What the server answered during authentication.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthReply {
    Ok,
    Err(ServerError),
    /// Answer again with another plugin and scramble.
    Switch {
        plugin: String,
        scramble: Vec<u8>,
    },
    /// A plugin's own exchange (caching_sha2: fast auth succeeded, or a full one is needed).
    MoreData(Vec<u8>),
}

/// Parses a packet the server sends while authenticating.
pub fn parse_auth_reply(payload: &[u8]) -> Result<AuthReply, ProtocolError> {
    let mut r = Reader::new(payload);
    Ok(match r.u8("auth reply")? {
        OK_HEADER => AuthReply::Ok,
        ERR_HEADER => AuthReply::Err(parse_err(payload)?),
        EOF_HEADER => {
            let plugin = String::from_utf8_lossy(r.null_terminated_or_rest()).into_owned();
            let rest = r.rest();
            let scramble = rest[..rest.iter().position(|&b| b == 0).unwrap_or(rest.len())].to_vec();
            AuthReply::Switch { plugin, scramble }
        }
        crate::auth::AUTH_MORE_DATA_HEADER => AuthReply::MoreData(r.rest().to_vec()),
        _ => return Err(ProtocolError::Malformed { what: "auth reply" }),
    })
}

/// Writes `COM_QUERY` (without query attributes, which [`CLIENT_CAPABILITIES`] leaves out).
pub fn write_query(writer: &mut PacketWriter, sql: &str) {
    writer.write_packet_with(|out| {
        out.push(COM_QUERY);
        out.extend_from_slice(sql.as_bytes());
    });
}

/// Writes `COM_REGISTER_SLAVE` (no password: sources do not check it).
pub fn write_register_replica(writer: &mut PacketWriter, replica: &RegisterReplica) {
    writer.write_packet_with(|out| {
        out.push(COM_REGISTER_SLAVE);
        out.extend_from_slice(&replica.server_id.to_le_bytes());
        for field in [&replica.host[..], &replica.user[..], b""] {
            let field = &field[..field.len().min(usize::from(u8::MAX))];
            out.push(field.len() as u8);
            out.extend_from_slice(field);
        }
        out.extend_from_slice(&replica.port.to_le_bytes());
        // Replication rank (unused) and the source's id (0: the source fills it in).
        out.extend_from_slice(&0_u32.to_le_bytes());
        out.extend_from_slice(&0_u32.to_le_bytes());
    });
}

/// Writes `COM_BINLOG_DUMP_GTID` when the dump names a GTID set, `COM_BINLOG_DUMP` otherwise.
/// GTID intervals are `start..end`, end excluded, as on the wire.
pub fn write_binlog_dump(writer: &mut PacketWriter, dump: &BinlogDump) {
    let flags = if dump.non_blocking { BINLOG_DUMP_NON_BLOCK } else { 0 };
    writer.write_packet_with(|out| match &dump.gtids {
        None => {
            out.push(COM_BINLOG_DUMP);
            out.extend_from_slice(&u32::try_from(dump.position).unwrap_or(u32::MAX).to_le_bytes());
            out.extend_from_slice(&flags.to_le_bytes());
            out.extend_from_slice(&dump.server_id.to_le_bytes());
            out.extend_from_slice(&dump.file);
        }
        Some(set) => {
            out.push(COM_BINLOG_DUMP_GTID);
            out.extend_from_slice(&(flags | BINLOG_THROUGH_GTID).to_le_bytes());
            out.extend_from_slice(&dump.server_id.to_le_bytes());
            out.extend_from_slice(&(dump.file.len() as u32).to_le_bytes());
            out.extend_from_slice(&dump.file);
            out.extend_from_slice(&dump.position.to_le_bytes());
            let mut data = Vec::new();
            data.extend_from_slice(&(set.len() as u64).to_le_bytes());
            for (uuid, intervals) in set {
                data.extend_from_slice(uuid);
                data.extend_from_slice(&(intervals.len() as u64).to_le_bytes());
                for (start, end) in intervals {
                    data.extend_from_slice(&start.to_le_bytes());
                    data.extend_from_slice(&end.to_le_bytes());
                }
            }
            out.extend_from_slice(&(data.len() as u32).to_le_bytes());
            out.extend_from_slice(&data);
        }
    });
}

/// One packet of a query's reply, as a client that reads text results sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplyPacket {
    Ok,
    Err(ServerError),
    /// An EOF packet: the end of the column definitions or of the rows.
    Eof,
    /// Anything else: a column count, a column definition or a row.
    Data(Vec<u8>),
}

/// Classifies one packet of a reply.
pub fn parse_reply_packet(payload: &[u8]) -> Result<ReplyPacket, ProtocolError> {
    Ok(match payload.first() {
        Some(&OK_HEADER) if payload.len() >= 7 => ReplyPacket::Ok,
        Some(&ERR_HEADER) => ReplyPacket::Err(parse_err(payload)?),
        Some(&EOF_HEADER) if payload.len() < EOF_PACKET_LEN_MAX => ReplyPacket::Eof,
        Some(_) => ReplyPacket::Data(payload.to_vec()),
        None => return Err(ProtocolError::EmptyPacket),
    })
}

/// The values of a text row: each a lenenc string, or 0xFB for NULL.
pub fn parse_text_row(payload: &[u8]) -> Result<Vec<Option<Vec<u8>>>, ProtocolError> {
    let mut r = Reader::new(payload);
    let mut values = Vec::new();
    while !r.is_empty() {
        if payload[r.position()] == 0xFB {
            r.u8("NULL")?;
            values.push(None);
        } else {
            values.push(Some(r.lenenc_bytes("row value")?.to_vec()));
        }
    }
    Ok(values)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::{Command, parse_command};
    use crate::handshake::{ClientHello, InitialHandshake, parse_client_hello, write_initial_handshake};
    use crate::packet::PacketDecoder;

    fn payload(writer: PacketWriter) -> Vec<u8> {
        let mut decoder = PacketDecoder::new(MAX_ALLOWED_PACKET_LIMIT);
        decoder.set_expected_seq(writer.seq.wrapping_sub(1));
        decoder.feed(&writer.buf);
        decoder.next_packet().unwrap().unwrap().1
    }

    #[test]
    fn the_greeting_quill_writes_reads_back_whole() {
        let scramble = *b"abcdefghijklmnopqrst";
        let mut w = PacketWriter::new(0);
        let caps = crate::constants::capabilities::DEFAULT_SERVER_CAPABILITIES;
        write_initial_handshake(
            &mut w,
            &InitialHandshake {
                server_version: "8.0.40-quill",
                connection_id: 7,
                scramble: &scramble,
                capabilities: caps,
                charset: 255,
                status_flags: 2,
                auth_plugin_name: CACHING_SHA2_PASSWORD,
            },
        );
        let greeting = parse_greeting(&payload(w)).unwrap().unwrap();
        assert_eq!(greeting.server_version, "8.0.40-quill");
        assert_eq!(greeting.connection_id, 7);
        assert_eq!(greeting.scramble, scramble);
        assert_eq!(greeting.capabilities, caps);
        assert_eq!(greeting.auth_plugin_name, CACHING_SHA2_PASSWORD);
        // Cut anywhere, it never panics; cut before the capabilities end, it is an error (a
        // 3.x-era greeting may end right after them).
        let mut w = PacketWriter::new(0);
        write_initial_handshake(
            &mut w,
            &InitialHandshake {
                server_version: "x",
                connection_id: 1,
                scramble: &scramble,
                capabilities: caps,
                charset: 255,
                status_flags: 0,
                auth_plugin_name: "p",
            },
        );
        let whole = payload(w);
        let low_capabilities_end = 1 + 2 + 4 + SCRAMBLE_PART1_LEN + 1 + 2;
        for cut in 0..whole.len() {
            let parsed = parse_greeting(&whole[..cut]);
            assert!(cut >= low_capabilities_end || parsed.is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn a_refusing_greeting_is_the_servers_error() {
        let mut w = PacketWriter::new(0);
        crate::response::write_err(&mut w, CLIENT_PROTOCOL_41, 1040, "08004", "Too many connections");
        let refused = parse_greeting(&payload(w)).unwrap().unwrap_err();
        assert_eq!((refused.code, refused.sql_state.as_str(), refused.message.as_str()), (1040, "08004", "Too many connections"));
    }

    #[test]
    fn the_response_and_the_ssl_request_parse_as_the_server_reads_them() {
        let mut w = PacketWriter::new(1);
        write_ssl_request(&mut w, CLIENT_CAPABILITIES);
        assert!(matches!(parse_client_hello(&payload(w)), Ok(ClientHello::SslRequest(r)) if r.capabilities & CLIENT_SSL != 0));
        let mut w = PacketWriter::new(1);
        let response = auth_response(CACHING_SHA2_PASSWORD, b"secret", b"abcdefghijklmnopqrst").unwrap();
        write_handshake_response(&mut w, CLIENT_CAPABILITIES, "repl", &response, CACHING_SHA2_PASSWORD);
        let Ok(ClientHello::Response(r)) = parse_client_hello(&payload(w)) else { panic!("not a response") };
        assert_eq!(r.username, "repl");
        assert_eq!(r.auth_response, response);
        assert_eq!(r.auth_plugin_name.as_deref(), Some(CACHING_SHA2_PASSWORD));
        assert!(crate::auth::verify_caching_sha2_fast(crate::auth::caching_sha2_secret(b"secret").as_ref(), b"abcdefghijklmnopqrst", &response));
    }

    #[test]
    fn an_empty_password_answers_empty_and_an_unknown_plugin_not_at_all() {
        assert_eq!(auth_response(MYSQL_NATIVE_PASSWORD, b"", b"abcdefghijklmnopqrst"), Some(Vec::new()));
        assert_eq!(auth_response("auth_gssapi_client", b"x", b"abcdefghijklmnopqrst"), None);
    }

    #[test]
    fn dump_and_register_commands_parse_as_the_server_reads_them() {
        let gtid_dump = BinlogDump { server_id: 9, non_blocking: false, file: Vec::new(), position: 4, gtids: Some(vec![([7; 16], vec![(1, 11), (15, 16)])]) };
        let file_dump = BinlogDump { server_id: 9, non_blocking: true, file: b"quill-bin.000002".to_vec(), position: 1234, gtids: None };
        for dump in [gtid_dump, file_dump] {
            let mut w = PacketWriter::new(0);
            write_binlog_dump(&mut w, &dump);
            assert_eq!(parse_command(&payload(w), 0), Ok(Command::BinlogDump(dump)));
        }
        let replica = RegisterReplica { server_id: 2, host: b"db2".to_vec(), user: b"repl".to_vec(), port: 3307 };
        let mut w = PacketWriter::new(0);
        write_register_replica(&mut w, &replica);
        assert_eq!(parse_command(&payload(w), 0), Ok(Command::RegisterReplica(replica)));
    }

    #[test]
    fn auth_replies_and_result_packets_are_told_apart() {
        let mut switch = vec![EOF_HEADER];
        switch.extend_from_slice(b"mysql_native_password\0abcdefghijklmnopqrst\0");
        assert_eq!(parse_auth_reply(&switch), Ok(AuthReply::Switch { plugin: MYSQL_NATIVE_PASSWORD.into(), scramble: b"abcdefghijklmnopqrst".to_vec() }));
        assert_eq!(parse_auth_reply(&[1, 3]), Ok(AuthReply::MoreData(vec![3])));
        assert_eq!(parse_auth_reply(&[0, 0, 0, 2, 0, 0, 0]), Ok(AuthReply::Ok));
        assert!(parse_auth_reply(&[]).is_err());
        assert_eq!(parse_reply_packet(&[EOF_HEADER, 0, 0, 2, 0]), Ok(ReplyPacket::Eof));
        assert_eq!(parse_reply_packet(&[1]), Ok(ReplyPacket::Data(vec![1])));
        assert_eq!(parse_text_row(&[1, b'7', 0xFB]), Ok(vec![Some(b"7".to_vec()), None]));
        assert!(parse_text_row(&[5, b'7']).is_err());
    }
}
