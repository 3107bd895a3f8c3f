//! The connection phase: the server's Initial Handshake v10, the client's SSLRequest or
//! HandshakeResponse41, and `COM_CHANGE_USER`, which repeats the handshake on a live
//! connection.
//!
//! Initial Handshake v10 (server, seq 0): `int<1>` protocol version `PROTOCOL_VERSION` (10),
//! `string<NUL>` server version, `int<4>` connection id, scramble bytes 0..8, filler 0x00,
//! `int<2>` capabilities (low half), `int<1>` charset, `int<2>` status flags, `int<2>`
//! capabilities (high half), `int<1>` scramble length + 1 (21) when `CLIENT_PLUGIN_AUTH`,
//! `HANDSHAKE_RESERVED_LEN` (10) zero bytes, scramble bytes 8..20 plus NUL, and the plugin name
//! plus NUL.
//!
//! The client answers (seq 1) with either an SSLRequest, exactly `SSL_REQUEST_LEN` (32) bytes
//! with `CLIENT_SSL` set (after which TLS starts and the full response follows with seq 2), or a
//! HandshakeResponse41: `int<4>` capabilities, `int<4>` max packet size, `int<1>` charset, 23
//! zero bytes, `string<NUL>` user, auth response (lenenc with
//! `CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA`, 1-byte length with `CLIENT_SECURE_CONNECTION`,
//! NUL-terminated otherwise), `string<NUL>` database with `CLIENT_CONNECT_WITH_DB`,
//! `string<NUL>` plugin with `CLIENT_PLUGIN_AUTH`, lenenc-sized key/value attributes with
//! `CLIENT_CONNECT_ATTRS`, and one zstd level byte with `CLIENT_ZSTD_COMPRESSION_ALGORITHM`.
//!
//! Parsing follows the capability bits the client sent (the caller negotiates
//! `server & client`). Trailing optional fields that a client leaves out entirely are read as
//! absent, as MySQL does; a field that starts and then stops is `Truncated`. Nothing here
//! panics on any input.

use crate::auth::{SCRAMBLE_LEN, Scramble};
use crate::codec::Reader;
use crate::constants::capabilities::*;
use crate::constants::command_bytes::COM_CHANGE_USER;
use crate::error::ProtocolError;
use crate::packet::PacketWriter;

/// The handshake protocol version MySQL has sent since 3.21.
pub const PROTOCOL_VERSION: u8 = 10;
/// Scramble bytes sent before the capability flags.
pub const SCRAMBLE_PART1_LEN: usize = 8;
/// Reserved zero bytes in the initial handshake.
pub const HANDSHAKE_RESERVED_LEN: usize = 10;
/// Zero filler bytes in SSLRequest and HandshakeResponse41.
pub const HANDSHAKE_RESPONSE_FILLER_LEN: usize = 23;
/// An SSLRequest: capabilities, max packet size, charset, filler.
pub const SSL_REQUEST_LEN: usize = 4 + 4 + 1 + HANDSHAKE_RESPONSE_FILLER_LEN;

/// What the server announces in its first packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitialHandshake<'a> {
    /// E.g. "8.0.40-quill-0.1.0"; clients parse the leading version number.
    pub server_version: &'a str,
    pub connection_id: u32,
    /// REQUIRES: no zero bytes (see `auth::generate_scramble`).
    pub scramble: &'a Scramble,
    pub capabilities: u32,
    /// Low byte of the default collation id (255 = utf8mb4_0900_ai_ci).
    pub charset: u8,
    pub status_flags: u16,
    pub auth_plugin_name: &'a str,
}

/// Writes the Initial Handshake v10 packet.
pub fn write_initial_handshake(writer: &mut PacketWriter, handshake: &InitialHandshake<'_>) {
    assert!(!handshake.server_version.contains('\0'), "server version contains NUL");
    assert!(handshake.scramble.iter().all(|&byte| byte != 0), "scramble contains NUL");
    let capabilities = handshake.capabilities.to_le_bytes();
    writer.write_packet_with(|out| {
        out.push(PROTOCOL_VERSION);
        out.extend_from_slice(handshake.server_version.as_bytes());
        out.push(0);
        out.extend_from_slice(&handshake.connection_id.to_le_bytes());
        out.extend_from_slice(&handshake.scramble[..SCRAMBLE_PART1_LEN]);
        out.push(0);
        out.extend_from_slice(&capabilities[..2]);
        out.push(handshake.charset);
        out.extend_from_slice(&handshake.status_flags.to_le_bytes());
        out.extend_from_slice(&capabilities[2..]);
        let plugin_auth = handshake.capabilities & CLIENT_PLUGIN_AUTH != 0;
        out.push(if plugin_auth { (SCRAMBLE_LEN + 1) as u8 } else { 0 });
        out.extend_from_slice(&[0; HANDSHAKE_RESERVED_LEN]);
        if handshake.capabilities & CLIENT_SECURE_CONNECTION != 0 {
            out.extend_from_slice(&handshake.scramble[SCRAMBLE_PART1_LEN..]);
            out.push(0);
        }
        if plugin_auth {
            out.extend_from_slice(handshake.auth_plugin_name.as_bytes());
            out.push(0);
        }
    });
}

/// The client's request to upgrade the connection to TLS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SslRequest {
    pub capabilities: u32,
    pub max_packet_size: u32,
    pub charset: u8,
}

/// HandshakeResponse41.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HandshakeResponse {
    /// The flags the client sent (not yet intersected with the server's).
    pub capabilities: u32,
    pub max_packet_size: u32,
    pub charset: u8,
    pub username: String,
    pub auth_response: Vec<u8>,
    pub database: Option<String>,
    pub auth_plugin_name: Option<String>,
    pub connect_attributes: Vec<(String, String)>,
    pub zstd_compression_level: Option<u8>,
}

/// The first packet a client sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientHello {
    /// Start TLS, then read a `HandshakeResponse` with `parse_handshake_response`.
    SslRequest(SslRequest),
    Response(HandshakeResponse),
}

/// Parses the client's first packet: an SSLRequest if it is exactly `SSL_REQUEST_LEN` bytes
/// with `CLIENT_SSL` set (a full response is always longer), otherwise a HandshakeResponse41.
pub fn parse_client_hello(payload: &[u8]) -> Result<ClientHello, ProtocolError> {
    if payload.len() == SSL_REQUEST_LEN {
        let mut reader = Reader::new(payload);
        let capabilities = reader.u32_le("capabilities")?;
        if capabilities & CLIENT_SSL != 0 {
            if capabilities & CLIENT_PROTOCOL_41 == 0 {
                return Err(ProtocolError::UnsupportedClient);
            }
            let max_packet_size = reader.u32_le("max packet size")?;
            let charset = reader.u8("charset")?;
            return Ok(ClientHello::SslRequest(SslRequest { capabilities, max_packet_size, charset }));
        }
    }
    parse_handshake_response(payload).map(ClientHello::Response)
}

/// Parses a HandshakeResponse41 (the packet after TLS, or the first one without TLS).
pub fn parse_handshake_response(payload: &[u8]) -> Result<HandshakeResponse, ProtocolError> {
    let mut reader = Reader::new(payload);
    let capabilities = reader.u32_le("capabilities")?;
    if capabilities & CLIENT_PROTOCOL_41 == 0 {
        return Err(ProtocolError::UnsupportedClient);
    }
    let max_packet_size = reader.u32_le("max packet size")?;
    let charset = reader.u8("charset")?;
    reader.bytes(HANDSHAKE_RESPONSE_FILLER_LEN, "filler")?;
    let username = utf8(reader.null_terminated("username")?, "username")?;
    let auth_response = read_auth_response(&mut reader, capabilities)?.to_vec();
    let mut response = HandshakeResponse { capabilities, max_packet_size, charset, username, auth_response, ..HandshakeResponse::default() };
    if capabilities & CLIENT_CONNECT_WITH_DB != 0 && !reader.is_empty() {
        response.database = Some(utf8(reader.null_terminated_or_rest(), "database")?);
    }
    if capabilities & CLIENT_PLUGIN_AUTH != 0 && !reader.is_empty() {
        response.auth_plugin_name = Some(utf8(reader.null_terminated_or_rest(), "plugin name")?);
    }
    if capabilities & CLIENT_CONNECT_ATTRS != 0 && !reader.is_empty() {
        response.connect_attributes = read_connect_attributes(&mut reader)?;
    }
    if capabilities & CLIENT_ZSTD_COMPRESSION_ALGORITHM != 0 && !reader.is_empty() {
        response.zstd_compression_level = Some(reader.u8("zstd compression level")?);
    }
    Ok(response)
}

fn read_auth_response<'a>(reader: &mut Reader<'a>, capabilities: u32) -> Result<&'a [u8], ProtocolError> {
    if capabilities & CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA != 0 {
        reader.lenenc_bytes("auth response")
    } else if capabilities & CLIENT_SECURE_CONNECTION != 0 {
        let len = reader.u8("auth response length")?;
        reader.bytes(usize::from(len), "auth response")
    } else {
        reader.null_terminated("auth response")
    }
}

/// Reads `int<lenenc>` total length, then that many bytes of lenenc key/value pairs.
fn read_connect_attributes(reader: &mut Reader<'_>) -> Result<Vec<(String, String)>, ProtocolError> {
    let total_len = reader.lenenc_int("connect attributes length")?;
    let total_len = usize::try_from(total_len).map_err(|_| ProtocolError::Truncated { what: "connect attributes" })?;
    let mut attributes_reader = Reader::new(reader.bytes(total_len, "connect attributes")?);
    let mut attributes = Vec::new();
    while !attributes_reader.is_empty() {
        let key = attributes_reader.lenenc_bytes("connect attribute key")?;
        let value = attributes_reader.lenenc_bytes("connect attribute value")?;
        attributes.push((lossy(key), lossy(value)));
    }
    Ok(attributes)
}

fn utf8(bytes: &[u8], what: &'static str) -> Result<String, ProtocolError> {
    String::from_utf8(bytes.to_vec()).map_err(|_| ProtocolError::Malformed { what })
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `COM_CHANGE_USER`: re-authenticate as another user and reset the session.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ChangeUser {
    pub username: String,
    pub auth_response: Vec<u8>,
    /// The schema to switch to; `None` when empty.
    pub database: Option<String>,
    pub charset: Option<u16>,
    pub auth_plugin_name: Option<String>,
    pub connect_attributes: Vec<(String, String)>,
}

/// Parses a `COM_CHANGE_USER` payload (including its command byte 0x11) under the
/// connection's negotiated `capabilities`: `string<NUL>` user; auth response (1-byte length
/// with `CLIENT_SECURE_CONNECTION`, else NUL-terminated); `string<NUL>` schema; then, if more
/// data follows, `int<2>` charset, the plugin name (`CLIENT_PLUGIN_AUTH`) and attributes
/// (`CLIENT_CONNECT_ATTRS`).
pub fn parse_change_user(payload: &[u8], capabilities: u32) -> Result<ChangeUser, ProtocolError> {
    let mut reader = Reader::new(payload);
    if reader.u8("command")? != COM_CHANGE_USER {
        return Err(ProtocolError::Malformed { what: "COM_CHANGE_USER command byte" });
    }
    let username = utf8(reader.null_terminated("username")?, "username")?;
    let auth_response = if capabilities & CLIENT_SECURE_CONNECTION != 0 {
        let len = reader.u8("auth response length")?;
        reader.bytes(usize::from(len), "auth response")?
    } else {
        reader.null_terminated("auth response")?
    };
    let mut change_user = ChangeUser { username, auth_response: auth_response.to_vec(), ..ChangeUser::default() };
    let database = utf8(reader.null_terminated_or_rest(), "database")?;
    change_user.database = (!database.is_empty()).then_some(database);
    if reader.is_empty() {
        return Ok(change_user);
    }
    change_user.charset = Some(reader.u16_le("charset")?);
    if capabilities & CLIENT_PLUGIN_AUTH != 0 && !reader.is_empty() {
        change_user.auth_plugin_name = Some(utf8(reader.null_terminated_or_rest(), "plugin name")?);
    }
    if capabilities & CLIENT_CONNECT_ATTRS != 0 && !reader.is_empty() {
        change_user.connect_attributes = read_connect_attributes(&mut reader)?;
    }
    Ok(change_user)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::write_lenenc_bytes;

    const SCRAMBLE: &Scramble = b"ABCDEFGHIJKLMNOPQRST";
    const CLIENT_CAPS: u32 = CLIENT_PROTOCOL_41
        | CLIENT_SECURE_CONNECTION
        | CLIENT_PLUGIN_AUTH
        | CLIENT_CONNECT_WITH_DB
        | CLIENT_CONNECT_ATTRS
        | CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA
        | CLIENT_LONG_PASSWORD;

    fn response_payload(capabilities: u32, auth: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&capabilities.to_le_bytes());
        out.extend_from_slice(&16_777_216u32.to_le_bytes());
        out.push(255);
        out.extend_from_slice(&[0; 23]);
        out.extend_from_slice(b"root\0");
        if capabilities & CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA != 0 {
            write_lenenc_bytes(&mut out, auth);
        } else if capabilities & CLIENT_SECURE_CONNECTION != 0 {
            out.push(auth.len() as u8);
            out.extend_from_slice(auth);
        } else {
            out.extend_from_slice(auth);
            out.push(0);
        }
        if capabilities & CLIENT_CONNECT_WITH_DB != 0 {
            out.extend_from_slice(b"shop\0");
        }
        if capabilities & CLIENT_PLUGIN_AUTH != 0 {
            out.extend_from_slice(b"caching_sha2_password\0");
        }
        if capabilities & CLIENT_CONNECT_ATTRS != 0 {
            let mut attributes = Vec::new();
            write_lenenc_bytes(&mut attributes, b"_client_name");
            write_lenenc_bytes(&mut attributes, b"libmysql");
            write_lenenc_bytes(&mut out, &attributes);
        }
        out
    }

    #[test]
    fn initial_handshake_bytes() {
        let mut writer = PacketWriter::new(0);
        write_initial_handshake(
            &mut writer,
            &InitialHandshake {
                server_version: "8.0.40-quill",
                connection_id: 0x0102_0304,
                scramble: SCRAMBLE,
                capabilities: DEFAULT_SERVER_CAPABILITIES,
                charset: 255,
                status_flags: 2,
                auth_plugin_name: "caching_sha2_password",
            },
        );
        let mut expected = vec![10];
        expected.extend_from_slice(b"8.0.40-quill\0");
        expected.extend_from_slice(&[4, 3, 2, 1]);
        expected.extend_from_slice(b"ABCDEFGH\0");
        let caps = DEFAULT_SERVER_CAPABILITIES.to_le_bytes();
        expected.extend_from_slice(&caps[..2]);
        expected.push(255);
        expected.extend_from_slice(&[2, 0]);
        expected.extend_from_slice(&caps[2..]);
        expected.push(21);
        expected.extend_from_slice(&[0; 10]);
        expected.extend_from_slice(b"IJKLMNOPQRST\0caching_sha2_password\0");
        assert_eq!(&writer.buf[4..], &expected[..]);
        assert_eq!(writer.buf[..4], [expected.len() as u8, 0, 0, 0]);
        assert_eq!(writer.seq, 1);
    }

    #[test]
    fn full_response_with_lenenc_auth_db_plugin_and_attributes() {
        let auth = [7u8; 32];
        let ClientHello::Response(response) = parse_client_hello(&response_payload(CLIENT_CAPS, &auth)).unwrap() else {
            panic!("expected a response");
        };
        assert_eq!(response.capabilities, CLIENT_CAPS);
        assert_eq!(response.max_packet_size, 16_777_216);
        assert_eq!(response.charset, 255);
        assert_eq!(response.username, "root");
        assert_eq!(response.auth_response, auth);
        assert_eq!(response.database.as_deref(), Some("shop"));
        assert_eq!(response.auth_plugin_name.as_deref(), Some("caching_sha2_password"));
        assert_eq!(response.connect_attributes, [("_client_name".to_owned(), "libmysql".to_owned())]);
    }

    #[test]
    fn auth_response_in_one_byte_length_and_nul_terminated_forms() {
        let secure = CLIENT_PROTOCOL_41 | CLIENT_SECURE_CONNECTION;
        let response = parse_handshake_response(&response_payload(secure, &[0xAB; 20])).unwrap();
        assert_eq!(response.auth_response, [0xAB; 20]);
        assert_eq!(response.database, None);

        let plain = CLIENT_PROTOCOL_41;
        let response = parse_handshake_response(&response_payload(plain, b"xyz")).unwrap();
        assert_eq!(response.auth_response, b"xyz");
    }

    #[test]
    fn trailing_plugin_name_without_nul_is_accepted() {
        let mut payload = response_payload(CLIENT_PROTOCOL_41 | CLIENT_SECURE_CONNECTION | CLIENT_PLUGIN_AUTH, b"");
        payload.pop();
        let response = parse_handshake_response(&payload).unwrap();
        assert_eq!(response.auth_plugin_name.as_deref(), Some("caching_sha2_password"));
    }

    #[test]
    fn ssl_request_is_detected_by_length_and_flag() {
        let payload = response_payload(CLIENT_CAPS | CLIENT_SSL, b"");
        let ssl_request = &payload[..SSL_REQUEST_LEN];
        assert_eq!(
            parse_client_hello(ssl_request),
            Ok(ClientHello::SslRequest(SslRequest { capabilities: CLIENT_CAPS | CLIENT_SSL, max_packet_size: 16_777_216, charset: 255 }))
        );
        assert!(matches!(parse_client_hello(&payload), Ok(ClientHello::Response(_))));
        let no_ssl = response_payload(CLIENT_CAPS, b"");
        assert!(parse_client_hello(&no_ssl[..SSL_REQUEST_LEN]).is_err());
    }

    #[test]
    fn pre_41_clients_are_refused() {
        let payload = response_payload(CLIENT_SECURE_CONNECTION, b"");
        assert_eq!(parse_client_hello(&payload), Err(ProtocolError::UnsupportedClient));
    }

    #[test]
    fn every_truncation_of_a_response_is_an_error_or_a_shorter_response_never_a_panic() {
        for caps in [CLIENT_CAPS, CLIENT_CAPS | CLIENT_SSL, CLIENT_PROTOCOL_41, CLIENT_PROTOCOL_41 | CLIENT_SECURE_CONNECTION] {
            let payload = response_payload(caps | CLIENT_ZSTD_COMPRESSION_ALGORITHM, &[9; 20]);
            for len in 0..payload.len() {
                let _ = parse_client_hello(&payload[..len]);
                let result = parse_handshake_response(&payload[..len]);
                if len < SSL_REQUEST_LEN + 5 {
                    assert!(result.is_err(), "prefix of {len} bytes parsed");
                }
            }
        }
    }

    #[test]
    fn connect_attributes_overrunning_the_packet_are_truncated() {
        let mut payload = response_payload(CLIENT_CAPS, b"");
        let attributes_start = payload.len() - 1 - 12 - 1 - 8 - 1;
        payload[attributes_start] = 200;
        assert!(matches!(parse_handshake_response(&payload), Err(ProtocolError::Truncated { .. })));
    }

    #[test]
    fn change_user_with_all_fields() {
        let mut payload = vec![COM_CHANGE_USER];
        payload.extend_from_slice(b"app\0");
        payload.push(3);
        payload.extend_from_slice(b"xyz");
        payload.extend_from_slice(b"inventory\0");
        payload.extend_from_slice(&255u16.to_le_bytes());
        payload.extend_from_slice(b"mysql_native_password\0");
        let mut attributes = Vec::new();
        write_lenenc_bytes(&mut attributes, b"k");
        write_lenenc_bytes(&mut attributes, b"v");
        write_lenenc_bytes(&mut payload, &attributes);
        let change_user = parse_change_user(&payload, CLIENT_CAPS).unwrap();
        assert_eq!(
            change_user,
            ChangeUser {
                username: "app".into(),
                auth_response: b"xyz".to_vec(),
                database: Some("inventory".into()),
                charset: Some(255),
                auth_plugin_name: Some("mysql_native_password".into()),
                connect_attributes: vec![("k".into(), "v".into())],
            }
        );
        for len in 0..payload.len() {
            let _ = parse_change_user(&payload[..len], CLIENT_CAPS);
        }
    }

    #[test]
    fn change_user_minimal_form() {
        let payload = b"\x11bob\0\0\0";
        let change_user = parse_change_user(payload, CLIENT_CAPS).unwrap();
        assert_eq!(change_user.username, "bob");
        assert!(change_user.auth_response.is_empty());
        assert_eq!(change_user.database, None);
        assert_eq!(change_user.charset, None);
    }
}
