//! The replica's connection to its source: TCP, TLS when `SOURCE_SSL = 1`, the handshake and
//! authentication (`mysql_native_password`, `caching_sha2_password` with its fast path, and
//! its full exchange: the password over TLS, or RSA-encrypted with the source's public key
//! when `GET_SOURCE_PUBLIC_KEY = 1`), the few queries a replica sends first, the dump request, then
//! the event stream, with a semi-sync acknowledgement written back on the same connection.
//!
//! The packets are `quill_protocol::client`'s (sans-IO); this module owns the socket. Each
//! read waits at most `replica_net_timeout`, after which the connection counts as lost, as in
//! MySQL (a source sends heartbeats more often than that when idle). Errors carry MySQL's
//! client error numbers (2003 cannot connect, 2013 lost, 2026 TLS, 2027 malformed packet,
//! 2059 unknown plugin, 2061 full authentication without TLS or the source's key) or the source's own.
//!
//! `SOURCE_SSL = 1` encrypts without verifying the source's certificate, as MySQL does when no
//! `SOURCE_SSL_CA` is given.
//!
//! Where it sits: inside the replica task (`replica::stream`), which decodes the events.
//! Bounds: an event is at most `MAX_ALLOWED_PACKET_LIMIT` (MySQL's
//! `replica_max_allowed_packet`); before login a packet is at most [`HANDSHAKE_PACKET_MAX`];
//! authentication takes at most [`AUTH_ROUNDS_MAX`] exchanges.

use std::sync::Arc;
use std::time::Duration;

use quill_protocol::auth::{
    CACHING_SHA2_FAST_AUTH_SUCCESS, CACHING_SHA2_PASSWORD, CACHING_SHA2_PERFORM_FULL_AUTHENTICATION, CACHING_SHA2_REQUEST_PUBLIC_KEY, MYSQL_NATIVE_PASSWORD,
};
use quill_protocol::client::{self, AuthReply, ReplyPacket, ServerError};
use quill_protocol::command::{BinlogDump, RegisterReplica};
use quill_protocol::constants::capabilities::{CLIENT_PLUGIN_AUTH, CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA, CLIENT_PROTOCOL_41, CLIENT_SSL};
use quill_protocol::packet::MAX_ALLOWED_PACKET_LIMIT;
use quill_protocol::response::{EOF_HEADER, ERR_HEADER, OK_HEADER};
use quill_protocol::{PacketDecoder, PacketWriter, ProtocolError};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::semisync::{FLAG_ACK, HEADER_MAGIC, write_ack};

/// The largest packet accepted before authentication ends.
pub const HANDSHAKE_PACKET_MAX: usize = 64 * 1024;
/// Exchanges after the handshake response before authentication must have ended.
pub const AUTH_ROUNDS_MAX: usize = 4;
/// Bytes read from the socket at a time.
const READ_CHUNK_BYTES: usize = 64 * 1024;

/// Where and how to connect.
pub struct ConnectOptions<'a> {
    pub host: &'a str,
    pub port: u16,
    pub user: &'a str,
    pub password: &'a str,
    pub ssl: bool,
    /// `GET_SOURCE_PUBLIC_KEY = 1`: without TLS, fetch the source's RSA key for a full
    /// caching_sha2_password authentication.
    pub get_public_key: bool,
    /// `replica_net_timeout`: for connecting, and for each read after.
    pub net_timeout: Duration,
}

/// Why the connection failed: a MySQL error number (the source's, or a client one) and text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnError {
    pub code: u32,
    pub message: String,
}

impl ConnError {
    fn new(code: u32, message: impl Into<String>) -> ConnError {
        ConnError { code, message: message.into() }
    }

    fn lost(detail: impl std::fmt::Display) -> ConnError {
        ConnError::new(2013, format!("Lost connection to source during query: {detail}"))
    }
}

impl From<ServerError> for ConnError {
    fn from(e: ServerError) -> ConnError {
        ConnError::new(u32::from(e.code), e.message)
    }
}

impl From<ProtocolError> for ConnError {
    fn from(e: ProtocolError) -> ConnError {
        ConnError::new(2027, format!("Malformed packet from the source: {e}"))
    }
}

trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Stream for T {}

/// One event of the dump, as it came off the wire.
pub struct DumpPacket {
    payload: Vec<u8>,
    event_start: usize,
    /// The source asks for an acknowledgement of this event (semi-sync).
    pub ack_requested: bool,
}

impl DumpPacket {
    /// The event's bytes: header, body and checksum.
    pub fn event(&self) -> &[u8] {
        &self.payload[self.event_start..]
    }
}

/// An authenticated connection to the source.
pub struct Connection {
    stream: Box<dyn Stream>,
    decoder: PacketDecoder,
    chunk: Vec<u8>,
    tls: bool,
    net_timeout: Duration,
    /// The dump's events carry the semi-sync header ([`Connection::expect_semi_sync`]).
    semi_sync: bool,
}

impl Connection {
    /// Connects and authenticates, within `net_timeout`.
    ///
    /// # Errors
    /// The source's refusal (1045 and others), or a client error (2003, 2013, 2026, 2027,
    /// 2059, 2061).
    pub async fn connect(options: &ConnectOptions<'_>) -> Result<Connection, ConnError> {
        let what = format!("'{}:{}'", options.host, options.port);
        match tokio::time::timeout(options.net_timeout, Self::open(options)).await {
            Ok(result) => result,
            Err(_) => Err(ConnError::new(2003, format!("Can't connect to MySQL server on {what} (timed out)"))),
        }
    }

    async fn open(options: &ConnectOptions<'_>) -> Result<Connection, ConnError> {
        let tcp = TcpStream::connect((options.host, options.port))
            .await
            .map_err(|e| ConnError::new(2003, format!("Can't connect to MySQL server on '{}:{}' ({e})", options.host, options.port)))?;
        let _ = tcp.set_nodelay(true);
        let mut conn = Connection {
            stream: Box::new(tcp),
            decoder: PacketDecoder::new(HANDSHAKE_PACKET_MAX),
            chunk: vec![0; READ_CHUNK_BYTES],
            tls: false,
            net_timeout: options.net_timeout,
            semi_sync: false,
        };
        let greeting = client::parse_greeting(&conn.read_packet().await?)??;
        let needed = CLIENT_PROTOCOL_41 | CLIENT_PLUGIN_AUTH | CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA;
        if greeting.capabilities & needed != needed {
            return Err(ConnError::new(2027, format!("the source ({}) does not speak protocol 4.1 with plugin authentication", greeting.server_version)));
        }
        let mut capabilities = client::CLIENT_CAPABILITIES & greeting.capabilities;
        let mut w = PacketWriter::new(conn.decoder.expected_seq());
        if options.ssl {
            if greeting.capabilities & CLIENT_SSL == 0 {
                return Err(ConnError::new(2026, "SSL connection error: SSL is required but the server doesn't support it"));
            }
            capabilities |= CLIENT_SSL;
            client::write_ssl_request(&mut w, capabilities);
            conn.send(&mut w).await?;
            conn.start_tls(options.host).await?;
        }
        let mut plugin = if greeting.auth_plugin_name.is_empty() { MYSQL_NATIVE_PASSWORD.to_owned() } else { greeting.auth_plugin_name };
        let mut scramble = greeting.scramble;
        let response = scrambled(&plugin, options.password, &scramble)?;
        client::write_handshake_response(&mut w, capabilities, options.user, &response, &plugin);
        conn.send(&mut w).await?;
        // Set once the replica asked for the source's public key: the next AuthMoreData is it.
        let mut awaiting_key = false;
        for _ in 0..AUTH_ROUNDS_MAX {
            let reply = client::parse_auth_reply(&conn.read_packet().await?)?;
            w.seq = conn.decoder.expected_seq();
            match reply {
                AuthReply::Ok => {
                    conn.decoder.set_max_payload_len(MAX_ALLOWED_PACKET_LIMIT);
                    return Ok(conn);
                }
                AuthReply::Err(e) => return Err(e.into()),
                AuthReply::Switch { plugin: next, scramble: next_scramble } => {
                    w.write_packet(&scrambled(&next, options.password, &next_scramble)?);
                    plugin = next;
                    scramble = next_scramble;
                }
                AuthReply::MoreData(pem) if awaiting_key => {
                    // Without TLS the password goes RSA-encrypted, as the source's rsa_keys reads it.
                    let ciphertext = encrypt_password(&pem, options.password.as_bytes(), &scramble)?;
                    w.write_packet(&ciphertext);
                    awaiting_key = false;
                }
                AuthReply::MoreData(data) if plugin == CACHING_SHA2_PASSWORD && data == [CACHING_SHA2_FAST_AUTH_SUCCESS] => continue,
                AuthReply::MoreData(data) if plugin == CACHING_SHA2_PASSWORD && data == [CACHING_SHA2_PERFORM_FULL_AUTHENTICATION] => {
                    if conn.tls {
                        // Over TLS the password itself is sent.
                        let mut clear = options.password.as_bytes().to_vec();
                        clear.push(0);
                        w.write_packet(&clear);
                    } else if options.get_public_key {
                        w.write_packet(&[CACHING_SHA2_REQUEST_PUBLIC_KEY]);
                        awaiting_key = true;
                    } else {
                        return Err(ConnError::new(
                            2061,
                            "Authentication plugin 'caching_sha2_password' reported error: Authentication requires secure connection.",
                        ));
                    }
                }
                AuthReply::MoreData(_) => return Err(ConnError::new(2027, format!("an authentication exchange of '{plugin}' this replica does not speak"))),
            }
            conn.send(&mut w).await?;
        }
        Err(ConnError::new(2027, "authentication did not end"))
    }

    async fn start_tls(&mut self, host: &str) -> Result<(), ConnError> {
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()
            .map_err(|e| ConnError::new(2026, format!("SSL connection error: {e}")))?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
            .with_no_client_auth();
        let name = ServerName::try_from(host.to_owned()).map_err(|e| ConnError::new(2026, format!("SSL connection error: {e}")))?;
        let plain = std::mem::replace(&mut self.stream, Box::new(tokio::io::duplex(1).0));
        let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
            .connect(name, plain)
            .await
            .map_err(|e| ConnError::new(2026, format!("SSL connection error: {e}")))?;
        self.stream = Box::new(tls);
        self.tls = true;
        Ok(())
    }

    /// Runs a statement and returns its rows (none for a statement that answers OK).
    ///
    /// # Errors
    /// The source's error, or a lost connection.
    pub async fn query(&mut self, sql: &str) -> Result<Vec<Vec<Option<Vec<u8>>>>, ConnError> {
        let mut w = PacketWriter::new(0);
        client::write_query(&mut w, sql);
        self.send(&mut w).await?;
        match client::parse_reply_packet(&self.read_packet().await?)? {
            ReplyPacket::Ok => return Ok(Vec::new()),
            ReplyPacket::Err(e) => return Err(e.into()),
            ReplyPacket::Eof => return Err(ConnError::new(2027, "an EOF packet where a reply starts")),
            ReplyPacket::Data(_) => {}
        }
        // A result set: column definitions up to an EOF, then rows up to an EOF.
        loop {
            match client::parse_reply_packet(&self.read_packet().await?)? {
                ReplyPacket::Eof => break,
                ReplyPacket::Err(e) => return Err(e.into()),
                _ => {}
            }
        }
        // Among rows only EOF and ERR are special: a row whose first value is empty starts
        // with 0x00 like an OK packet.
        let mut rows = Vec::new();
        loop {
            let packet = self.read_packet().await?;
            match client::parse_reply_packet(&packet)? {
                ReplyPacket::Eof => return Ok(rows),
                ReplyPacket::Err(e) => return Err(e.into()),
                ReplyPacket::Ok | ReplyPacket::Data(_) => rows.push(client::parse_text_row(&packet)?),
            }
        }
    }

    /// `COM_REGISTER_SLAVE`.
    ///
    /// # Errors
    /// The source's error, or a lost connection.
    pub async fn register(&mut self, replica: &RegisterReplica) -> Result<(), ConnError> {
        let mut w = PacketWriter::new(0);
        client::write_register_replica(&mut w, replica);
        self.send(&mut w).await?;
        match client::parse_reply_packet(&self.read_packet().await?)? {
            ReplyPacket::Ok => Ok(()),
            ReplyPacket::Err(e) => Err(e.into()),
            _ => Err(ConnError::new(2027, "COM_REGISTER_SLAVE was not answered with OK")),
        }
    }

    /// From now on, every event of the dump carries the semi-sync header (set before
    /// [`Connection::dump`], once `@rpl_semi_sync_slave` is set on the source).
    pub fn expect_semi_sync(&mut self) {
        self.semi_sync = true;
    }

    /// Sends the dump request; the events follow ([`Connection::next_event`]).
    ///
    /// # Errors
    /// A lost connection.
    pub async fn dump(&mut self, request: &BinlogDump) -> Result<(), ConnError> {
        let mut w = PacketWriter::new(0);
        client::write_binlog_dump(&mut w, request);
        self.send(&mut w).await
    }

    /// The next event of the dump.
    ///
    /// # Errors
    /// The source's error (1236 for a position it cannot serve), a lost connection, or a
    /// malformed packet.
    pub async fn next_event(&mut self) -> Result<DumpPacket, ConnError> {
        let payload = self.read_packet().await?;
        match payload.first() {
            Some(&OK_HEADER) if self.semi_sync => match payload.get(1..3) {
                Some(&[HEADER_MAGIC, flags]) => Ok(DumpPacket { payload, event_start: 3, ack_requested: flags & FLAG_ACK != 0 }),
                _ => Err(ConnError::new(2027, "a semi-sync event without its header")),
            },
            Some(&OK_HEADER) => Ok(DumpPacket { payload, event_start: 1, ack_requested: false }),
            Some(&ERR_HEADER) => Err(client::parse_err(&payload)?.into()),
            Some(&EOF_HEADER) => Err(ConnError::lost("the source ended the dump")),
            _ => Err(ConnError::new(2027, "an event packet without its OK byte")),
        }
    }

    /// Acknowledges (semi-sync) that this replica has the source's log up to `position` of
    /// `file`.
    ///
    /// # Errors
    /// A lost connection.
    pub async fn ack(&mut self, file: &str, position: u64) -> Result<(), ConnError> {
        let mut w = PacketWriter::new(0);
        write_ack(&mut w, file, position);
        self.stream.write_all(&w.buf).await.map_err(ConnError::lost)?;
        self.stream.flush().await.map_err(ConnError::lost)
    }

    /// Writes what `w` holds; the reply continues the sequence.
    async fn send(&mut self, w: &mut PacketWriter) -> Result<(), ConnError> {
        self.stream.write_all(&w.take()).await.map_err(ConnError::lost)?;
        self.stream.flush().await.map_err(ConnError::lost)?;
        self.decoder.set_expected_seq(w.seq);
        Ok(())
    }

    async fn read_packet(&mut self) -> Result<Vec<u8>, ConnError> {
        loop {
            if let Some((_, payload)) = self.decoder.next_packet()? {
                return Ok(payload);
            }
            let read = tokio::time::timeout(self.net_timeout, self.stream.read(&mut self.chunk)).await;
            match read {
                Err(_) => return Err(ConnError::lost(format!("nothing from the source for {} s (replica_net_timeout)", self.net_timeout.as_secs()))),
                Ok(Err(e)) => return Err(ConnError::lost(e)),
                Ok(Ok(0)) => return Err(ConnError::lost("the source closed the connection")),
                Ok(Ok(n)) => self.decoder.feed(&self.chunk[..n]),
            }
        }
    }
}

/// The password scrambled for `plugin`, or 2059 for a plugin this replica does not speak.
fn scrambled(plugin: &str, password: &str, scramble: &[u8]) -> Result<Vec<u8>, ConnError> {
    client::auth_response(plugin, password.as_bytes(), scramble)
        .ok_or_else(|| ConnError::new(2059, format!("Authentication plugin '{plugin}' cannot be loaded")))
}

/// caching_sha2_password's answer without TLS: the password and a NUL, XORed with the
/// scramble (repeated), encrypted with RSA-OAEP (SHA-1) under the source's public key (PEM
/// SubjectPublicKeyInfo, as the source sent it).
///
/// # Errors
/// 2061 when the key cannot be read, or the password is too long for it (214 bytes for a
/// 2048-bit key).
fn encrypt_password(public_key_pem: &[u8], password: &[u8], scramble: &[u8]) -> Result<Vec<u8>, ConnError> {
    use aws_lc_rs::rsa::{OAEP_SHA1_MGF1SHA1, OaepPublicEncryptingKey, PublicEncryptingKey};
    let refused = |why: &str| ConnError::new(2061, format!("Authentication plugin 'caching_sha2_password' reported error: {why}"));
    let der = pem::parse(public_key_pem).map_err(|_| refused("the source's public key cannot be read."))?.into_contents();
    let key = PublicEncryptingKey::from_der(&der)
        .ok()
        .and_then(|k| OaepPublicEncryptingKey::new(k).ok())
        .ok_or_else(|| refused("the source's public key cannot be read."))?;
    if password.len() + 1 > key.max_plaintext_size(&OAEP_SHA1_MGF1SHA1) {
        return Err(refused("the password is too long to encrypt with the source's public key; use SOURCE_SSL = 1."));
    }
    let plain = quill_protocol::auth::caching_sha2_rsa_plaintext(password, scramble);
    let mut out = vec![0; key.ciphertext_size()];
    let ciphertext = key.encrypt(&OAEP_SHA1_MGF1SHA1, &plain, &mut out, None).map_err(|_| refused("encrypting the password failed."))?;
    Ok(ciphertext.to_vec())
}

/// Accepts the source's certificate without checking who issued it (`SOURCE_SSL = 1` without
/// a CA, as MySQL); the handshake's signatures are still checked, so the session is
/// encrypted with the key the certificate names.
#[derive(Debug)]
struct AnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(&self, message: &[u8], cert: &CertificateDer<'_>, dss: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(&self, message: &[u8], cert: &CertificateDer<'_>, dss: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
