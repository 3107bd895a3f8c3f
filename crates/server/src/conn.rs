//! One client connection: handshake, authentication and the command loop.
//!
//! Bytes are read from the socket into a [`PacketDecoder`]; every reply to one
//! command is built in one [`PacketWriter`] buffer and written with one call, except a
//! result streamed through the session's row sink (`result_sink`), whose buffer is written
//! each time it fills.
//! Pipelined commands are answered in order. A protocol error that leaves the
//! stream unreliable (oversized packet, sequence mismatch) ends the connection
//! after an ERR packet, as MySQL does; SQL errors never do.

use std::collections::{BTreeMap, HashMap};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures_util::FutureExt;
use parking_lot::Mutex;

use quill_protocol::binary::{BinaryValue, StatementParams};
use quill_protocol::command::{Command, parse_command};
use quill_protocol::constants::{ColumnType, capabilities::*, status::*};
use quill_protocol::handshake::{ClientHello, InitialHandshake, parse_client_hello, write_initial_handshake};
use quill_protocol::response::{self, ColumnDefinition, OkPacket, StmtPrepareOk};
use quill_protocol::{PacketDecoder, PacketWriter, ProtocolError, auth};
use quill_sql::accounts::Account;
use quill_sql::charset::Charset;
use quill_sql::query::{OutColumn, ResultSet, flags};
use quill_sql::types::{IntKind, SqlType};
use quill_sql::{Engine, Outcome, Session, SqlError};
use quill_storage::Value;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::Notify;

pub mod dump;
mod result_sink;

use result_sink::SocketSink;

use crate::rsa_keys::RsaKeys;
use quill_sql::error::codes;

/// Bytes read from the socket per read call.
pub const READ_BUFFER_BYTES: usize = 64 * 1024;

/// The byte stream under a connection: plain TCP, or TLS after an SSLRequest.
enum Stream {
    Tcp(TcpStream),
    Tls(Box<tokio_rustls::server::TlsStream<TcpStream>>),
    /// Only while the TCP stream is being handed to the TLS acceptor.
    Detached,
}

fn detached() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::NotConnected, "stream detached for the TLS upgrade")
}

impl AsyncRead for Stream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
            Stream::Detached => Poll::Ready(Err(detached())),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
            Stream::Detached => Poll::Ready(Err(detached())),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
            Stream::Detached => Poll::Ready(Err(detached())),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
            Stream::Detached => Poll::Ready(Err(detached())),
        }
    }
}

struct Conn {
    stream: Stream,
    decoder: PacketDecoder,
    caps: u32,
    read_buf: Vec<u8>,
    /// `net_read_timeout`: how long the rest of a packet may take once it has begun.
    read_timeout: Duration,
    /// `net_write_timeout`: how long one reply may take to write.
    write_timeout: Duration,
    /// The handshake's scramble, which COM_CHANGE_USER's response answers too.
    scramble: auth::Scramble,
    /// The connection runs over TLS.
    tls: bool,
    /// caching_sha2_password's key pair, for a full authentication without TLS.
    rsa: Option<Arc<RsaKeys>>,
}

/// Why no packet was read.
enum ReadError {
    /// The bytes broke the protocol (oversized packet, sequence mismatch).
    Protocol(ProtocolError),
    /// Nothing arrived within the idle timeout (`wait_timeout`).
    Idle,
    /// A packet began but did not finish within `net_read_timeout`.
    Stalled,
    /// The socket failed.
    Io,
}

impl Conn {
    /// The next packet, waiting at most `idle` for it to begin; `None` at end of stream.
    async fn read_packet(&mut self, idle: Duration) -> Result<Option<(u8, Vec<u8>)>, ReadError> {
        loop {
            if let Some(p) = self.decoder.next_packet().map_err(ReadError::Protocol)? {
                return Ok(Some(p));
            }
            let waiting_to_begin = self.decoder.buffered_len() == 0;
            let limit = if waiting_to_begin { idle } else { self.read_timeout };
            let n = match tokio::time::timeout(limit, self.stream.read(&mut self.read_buf)).await {
                Ok(Ok(n)) => n,
                Ok(Err(_)) => return Err(ReadError::Io),
                Err(_) if waiting_to_begin => return Err(ReadError::Idle),
                Err(_) => return Err(ReadError::Stalled),
            };
            if n == 0 {
                return Ok(None);
            }
            self.decoder.feed(&self.read_buf[..n]);
        }
    }

    /// Write what `w` holds. As in MySQL, `net_write_timeout` bounds each write, not the
    /// whole reply: a large result to a slow reader goes on while it makes progress. False
    /// when the client is gone or stalled.
    async fn send(&mut self, w: &mut PacketWriter) -> bool {
        let bytes = w.take();
        write_all_timed(&mut self.stream, &bytes, self.write_timeout).await
    }

    /// Lends the stream and the reply buffer `w` to the session for one command, so that a
    /// result can stream to the client (see `result_sink`).
    fn lend_sink(&mut self, session: &mut Session, w: &mut PacketWriter, binary: bool) {
        let stream = std::mem::replace(&mut self.stream, Stream::Detached);
        let w = std::mem::replace(w, PacketWriter::new(0));
        let engine = Arc::clone(&session.info.engine);
        let sink =
            SocketSink::new(stream, w, self.caps, binary, session.results_conversion(), status(session, 0), self.write_timeout, self.read_timeout, engine);
        session.row_sink = Some(Box::new(sink));
    }

    /// Takes the stream and the reply buffer back from the session; true when a write
    /// failed (the client is gone, and the connection closes).
    fn reclaim_sink(&mut self, session: &mut Session, w: &mut PacketWriter) -> bool {
        let sink = session.row_sink.take().expect("the sink is lent for the whole command");
        let sink = sink.into_any().downcast::<SocketSink>().expect("the connection lends a SocketSink");
        let SocketSink { stream, w: buffer, failed, .. } = *sink;
        self.stream = stream;
        *w = buffer;
        failed
    }

    /// Send what `w` holds and read the client's next packet of this exchange.
    async fn exchange(&mut self, w: &mut PacketWriter) -> Option<Vec<u8>> {
        if !self.send(w).await {
            return None;
        }
        self.decoder.set_expected_seq(w.seq);
        let read_timeout = self.read_timeout;
        let packet = self.read_packet(read_timeout).await.ok().flatten().map(|(_, p)| p);
        *w = PacketWriter::new(self.decoder.expected_seq());
        packet
    }

    /// Send a last ERR and close, first letting the client finish writing what it was
    /// sending (for at most `CLOSE_DRAIN_TIME`, `CLOSE_DRAIN_BYTES_MAX` bytes): closing a
    /// socket with unread bytes resets it, and the client would lose the ERR.
    async fn fail(&mut self, w: &mut PacketWriter) {
        if !self.send(w).await {
            return;
        }
        let _ = self.stream.shutdown().await;
        let drain = async {
            let mut drained = 0usize;
            while drained < CLOSE_DRAIN_BYTES_MAX {
                match self.stream.read(&mut self.read_buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => drained += n,
                }
            }
        };
        let _ = tokio::time::timeout(CLOSE_DRAIN_TIME, drain).await;
    }
}

/// How long a connection closed after an error keeps reading what the client still sends.
const CLOSE_DRAIN_TIME: Duration = Duration::from_secs(5);
/// How many bytes it reads at most.
const CLOSE_DRAIN_BYTES_MAX: usize = 1 << 30;
/// The largest packet a client may send before it has logged in (a handshake response
/// with connection attributes is a few hundred bytes): what a connection that never logs
/// in can make the server hold.
pub const HANDSHAKE_PACKET_BYTES_MAX: usize = 64 * 1024;

/// The connections that have not logged in yet, bounded by
/// `quill_max_unauthenticated_connections`. When the bound is reached the oldest one is
/// closed to make room: a flood of sockets that never log in cannot keep a real client (whose
/// handshake takes a round trip or two) from logging in, and each costs at most one
/// [`HANDSHAKE_PACKET_BYTES_MAX`] buffer until `connect_timeout` or eviction.
#[derive(Debug, Default)]
pub struct Handshakes {
    /// Oldest first: a number per connection, and what tells it it was evicted.
    pending: Mutex<BTreeMap<u64, Arc<Notify>>>,
    next: AtomicU64,
}

/// A connection's place among [`Handshakes`], given back when dropped.
pub struct HandshakeSlot {
    handshakes: Arc<Handshakes>,
    number: u64,
    /// Notified when a newer connection took this one's place.
    evicted: Arc<Notify>,
}

impl Handshakes {
    /// A place for one more connection that has not logged in, evicting the oldest ones
    /// while `limit` are in progress.
    pub fn enter(self: &Arc<Self>, limit: usize) -> HandshakeSlot {
        let number = self.next.fetch_add(1, Ordering::Relaxed);
        let evicted = Arc::new(Notify::new());
        let mut pending = self.pending.lock();
        while pending.len() >= limit.max(1) {
            if let Some((_, oldest)) = pending.pop_first() {
                oldest.notify_one();
            }
        }
        pending.insert(number, Arc::clone(&evicted));
        HandshakeSlot { handshakes: Arc::clone(self), number, evicted }
    }
}

impl Drop for HandshakeSlot {
    fn drop(&mut self) {
        self.handshakes.pending.lock().remove(&self.number);
    }
}

/// A global timeout variable (its range keeps it at one second or more).
fn seconds(engine: &Engine, name: &str) -> Duration {
    Duration::from_secs(quill_sql::vars::int_value(&engine.globals.read(), name))
}

fn send_error(w: &mut PacketWriter, caps: u32, e: &SqlError) {
    response::write_err(w, caps, e.code, &e.state, &e.message);
}

/// The secret a `mysql_native_password` account's authentication string holds (`*` and
/// hex; `None` for no password).
fn native_secret(account: &Account) -> Option<auth::NativePasswordHash> {
    auth::native_password_hash_from_hex(&account.auth_string)
}

enum AuthResult {
    /// Logged in as this account.
    Ok(Account),
    Denied,
    /// The password was right, and the account is locked (3118).
    Locked,
    Gone,
}

/// caching_sha2_password, as MySQL 8 runs it: the fast authentication when the account's
/// secret is known (cached from an earlier full authentication, see `accounts::Sha2Cache`),
/// else the full one: the password in clear over TLS, or RSA-encrypted without it
/// (`rsa_keys`), sending the public key first when the client asks. `None`: the client went.
async fn caching_sha2(
    conn: &mut Conn,
    w: &mut PacketWriter,
    engine: &Engine,
    scramble: &auth::Scramble,
    account: &Account,
    response: &[u8],
    tls: bool,
) -> Option<bool> {
    let empty_response = response.is_empty() || response == [0];
    if account.auth_string.is_empty() || empty_response {
        // No password on either side decides at once (a client that sent none is refused
        // without an exchange, as in MySQL).
        return Some(account.auth_string.is_empty() && empty_response);
    }
    if let Some(secret) = engine.sha2_cache.secret(account)
        && auth::verify_caching_sha2_fast(Some(&secret), scramble, response)
    {
        auth::write_auth_more_data(w, &[auth::CACHING_SHA2_FAST_AUTH_SUCCESS]);
        return Some(true);
    }
    auth::write_auth_more_data(w, &[auth::CACHING_SHA2_PERFORM_FULL_AUTHENTICATION]);
    let mut answer = conn.exchange(w).await?;
    let keys = if tls {
        None
    } else {
        let Some(keys) = conn.rsa.clone() else { return Some(false) };
        if answer == [auth::CACHING_SHA2_REQUEST_PUBLIC_KEY] {
            auth::write_auth_more_data(w, keys.public_key_pem().as_bytes());
            answer = conn.exchange(w).await?;
        }
        Some(keys)
    };
    // RSA decryption and 5,000 rounds of SHA-256 (more for a hash made so by a MySQL server)
    // run off the async workers. Bound: one per connection still logging in, at most
    // `quill_max_unauthenticated_connections`.
    let (account_owned, scramble_owned) = (account.clone(), *scramble);
    let checked = tokio::task::spawn_blocking(move || {
        // Over TLS the password comes in clear; without it, RSA-encrypted (a client with the
        // key pinned sends the ciphertext at once; a password in clear does not decrypt).
        let password = match keys {
            None => answer.strip_suffix(&[0]).map(<[u8]>::to_vec).unwrap_or(answer),
            Some(keys) => keys.decrypt_password(&answer, &scramble_owned)?,
        };
        quill_sql::accounts::check_sha2_password(&account_owned, &password)
    })
    .await
    .ok()
    .flatten();
    let Some(secret) = checked else { return Some(false) };
    engine.sha2_cache.learn(account, secret);
    Some(true)
}

/// The account an unknown user is checked against, so that a refusal takes the same
/// exchange, and about the same time, whether or not the user exists (as MySQL's): a
/// `caching_sha2_password` hash of a random password made at start-up. Its logins are
/// always refused, whatever the exchange says.
fn decoy_account(user: &str) -> Account {
    static HASH: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let hash = HASH.get_or_init(|| quill_sql::accounts::hash_password(auth::CACHING_SHA2_PASSWORD, &String::from_utf8_lossy(&auth::generate_scramble())));
    Account {
        user: user.to_owned(),
        host: "%".into(),
        plugin: auth::CACHING_SHA2_PASSWORD.into(),
        auth_string: hash.clone(),
        locked: false,
        require_ssl: false,
        global: 0,
        password: quill_sql::accounts::PasswordExpiry::default(),
    }
}

/// What a client presented to log in.
struct Login<'a> {
    user: &'a str,
    peer: &'a str,
    plugin: Option<&'a str>,
    response: Vec<u8>,
    tls: bool,
    /// The handshake's first response, whose data the client computed for the plugin the
    /// server offered (caching_sha2_password).
    initial: bool,
}

/// Authenticate with the plugin the client chose: caching_sha2_password (the one the
/// handshake offers), mysql_native_password after an AuthSwitchRequest for it, and any other
/// switched to caching_sha2_password. `login.tls` says whether the full caching_sha2 exchange
/// (cleartext password) may be used.
async fn authenticate(conn: &mut Conn, w: &mut PacketWriter, engine: &Engine, scramble: &auth::Scramble, login: Login<'_>) -> AuthResult {
    let found = engine.acl.read().find(login.user, login.peer).cloned();
    let decoy = found.is_none();
    let account = found.unwrap_or_else(|| decoy_account(login.user));
    // A hash its plugin cannot read (a row written by hand) is
    // no password: nobody logs in as that account.
    if !quill_sql::accounts::valid_hash(&account.plugin, &account.auth_string) {
        tracing::warn!(user = %account.user, host = %account.host, plugin = %account.plugin, "an account's authentication string does not fit its plugin; its logins are refused");
        return AuthResult::Denied;
    }
    // The account's plugin decides, as in MySQL: a client that answered with another (or
    // set the handshake's data aside, as MariaDB's replica and libmysql do for a plugin
    // they did not choose) is asked again with an AuthSwitchRequest (the same scramble).
    let client_plugin = login.plugin.unwrap_or(auth::CACHING_SHA2_PASSWORD);
    // An account without a password logs in with either plugin: no secret tells them apart.
    let wants_native = account.plugin == auth::MYSQL_NATIVE_PASSWORD || (account.auth_string.is_empty() && client_plugin == auth::MYSQL_NATIVE_PASSWORD);
    let plugin = if wants_native { auth::MYSQL_NATIVE_PASSWORD } else { auth::CACHING_SHA2_PASSWORD };
    let mut response = login.response;
    if client_plugin != plugin || (login.plugin.is_some() && plugin == auth::MYSQL_NATIVE_PASSWORD && login.initial) {
        auth::write_auth_switch_request(w, plugin, scramble);
        let Some(r) = conn.exchange(w).await else { return AuthResult::Gone };
        response = r;
    }
    let verified = if plugin == auth::MYSQL_NATIVE_PASSWORD {
        auth::verify_native_password(native_secret(&account).as_ref(), scramble, &response)
    } else {
        match caching_sha2(conn, w, engine, scramble, &account, &response, login.tls).await {
            Some(verified) => verified,
            None => return AuthResult::Gone,
        }
    };
    if decoy || !verified || (account.require_ssl && !login.tls) {
        return AuthResult::Denied;
    }
    if account.locked {
        return AuthResult::Locked;
    }
    AuthResult::Ok(account)
}

/// The error of a failed login, as MySQL words it.
fn login_error(w: &mut PacketWriter, caps: u32, result: &AuthResult, user: &str, peer: &str, using: &str) {
    let host = if peer == "127.0.0.1" || peer == "::1" { "localhost" } else { peer };
    match result {
        AuthResult::Locked => response::write_err(w, caps, 3118, "HY000", &format!("Access denied for user '{user}'@'{host}'. Account is locked.")),
        _ => response::write_err(w, caps, 1045, "28000", &format!("Access denied for user '{user}'@'{host}' (using password: {using})")),
    }
}

/// Read one packet without reading past it (only used before the TLS upgrade; the
/// first client packet always fits in one frame).
async fn read_exact_packet(stream: &mut Stream, max_packet: usize) -> Option<Vec<u8>> {
    let mut header = [0u8; 4];
    stream.read_exact(&mut header).await.ok()?;
    let len = usize::from(header[0]) | usize::from(header[1]) << 8 | usize::from(header[2]) << 16;
    if header[3] != 1 || len > max_packet.min(quill_protocol::packet::MAX_PAYLOAD_LEN - 1) {
        return None;
    }
    let mut payload = vec![0u8; len];
    stream.read_exact(&mut payload).await.ok()?;
    Some(payload)
}

/// Serve one connection until the client quits, idles past `wait_timeout`, or the stream
/// fails. The handshake must finish within `connect_timeout`, while the connection holds
/// one of `quill_max_unauthenticated_connections` places in `handshakes`.
pub async fn serve(
    stream: TcpStream,
    engine: Arc<Engine>,
    connection_id: u32,
    tls: Option<Arc<rustls::ServerConfig>>,
    rsa: Option<Arc<RsaKeys>>,
    handshakes: Arc<Handshakes>,
) {
    // An IPv4 client of a listener on `::` arrives as `::ffff:a.b.c.d`: it is that IPv4 host.
    let peer = stream.peer_addr().map(|a| a.ip().to_canonical().to_string()).unwrap_or_else(|_| "unknown".into());
    let _ = stream.set_nodelay(true);
    let mut conn = Conn {
        stream: Stream::Tcp(stream),
        decoder: PacketDecoder::new(HANDSHAKE_PACKET_BYTES_MAX),
        caps: 0,
        read_buf: vec![0; READ_BUFFER_BYTES],
        read_timeout: seconds(&engine, "net_read_timeout"),
        write_timeout: seconds(&engine, "net_write_timeout"),
        scramble: auth::generate_scramble(),
        tls: false,
        rsa,
    };
    let limit = usize::try_from(quill_sql::vars::int_value(&engine.globals.read(), "quill_max_unauthenticated_connections")).unwrap_or(usize::MAX);
    let slot = handshakes.enter(limit);
    let connect_timeout = seconds(&engine, "connect_timeout");
    // None: timed out, evicted, refused, or gone.
    let logged_in = tokio::select! {
        finished = tokio::time::timeout(connect_timeout, handshake(&mut conn, &engine, connection_id, tls, &peer)) => finished.ok().flatten(),
        () = slot.evicted.notified() => None,
    };
    drop(slot);
    let Some(mut session) = logged_in else {
        engine.status.aborted_connects.fetch_add(1, Ordering::Relaxed);
        return;
    };
    let max_packet = quill_sql::vars::int_value(&engine.globals.read(), "max_allowed_packet");
    conn.decoder.set_max_payload_len(usize::try_from(max_packet).unwrap_or(usize::MAX).min(quill_protocol::packet::MAX_ALLOWED_PACKET_LIMIT));
    command_loop(&mut conn, &mut session).await;
    session.close();
}

/// Greeting, TLS upgrade and authentication: the logged-in session, or `None` when the
/// client failed to log in (it has been told why) or went away.
async fn handshake(conn: &mut Conn, engine: &Arc<Engine>, connection_id: u32, tls: Option<Arc<rustls::ServerConfig>>, peer: &str) -> Option<Session> {
    let mut w = PacketWriter::new(0);
    let scramble = conn.scramble;
    let server_caps = DEFAULT_SERVER_CAPABILITIES | if tls.is_some() { CLIENT_SSL } else { 0 };
    write_initial_handshake(
        &mut w,
        &InitialHandshake {
            server_version: quill_sql::SERVER_VERSION,
            connection_id,
            scramble: &scramble,
            capabilities: server_caps,
            charset: 255,
            status_flags: SERVER_STATUS_AUTOCOMMIT,
            auth_plugin_name: auth::CACHING_SHA2_PASSWORD,
        },
    );
    // The first client packet is read byte-exact: a client that sends an SSLRequest
    // follows it at once with its TLS ClientHello, which must stay in the socket for
    // the TLS acceptor.
    if !conn.send(&mut w).await {
        return None;
    }
    let mut hello = read_exact_packet(&mut conn.stream, HANDSHAKE_PACKET_BYTES_MAX).await?;
    conn.decoder.set_expected_seq(2);
    w = PacketWriter::new(2);
    let mut tls_info: Option<(String, String)> = None;
    if let Ok(ClientHello::SslRequest(_)) = parse_client_hello(&hello) {
        let Some(config) = tls.clone() else {
            response::write_err(&mut w, CLIENT_PROTOCOL_41, 1043, "08S01", "Bad handshake");
            conn.send(&mut w).await;
            return None;
        };
        // Hand the raw TCP stream to rustls; nothing else was buffered past the SSLRequest.
        let seq = conn.decoder.expected_seq();
        let Stream::Tcp(tcp) = std::mem::replace(&mut conn.stream, Stream::Detached) else { return None };
        let tls_stream = tokio_rustls::TlsAcceptor::from(config).accept(tcp).await.ok()?;
        let (_, state) = tls_stream.get_ref();
        tls_info = Some((
            state.negotiated_cipher_suite().map(|c| format!("{:?}", c.suite()).replace("TLS13_", "TLS_")).unwrap_or_default(),
            state.protocol_version().map(|v| format!("{v:?}").replace("TLSv1_", "TLSv1.")).unwrap_or_default(),
        ));
        conn.stream = Stream::Tls(Box::new(tls_stream));
        conn.decoder = PacketDecoder::new(HANDSHAKE_PACKET_BYTES_MAX);
        conn.decoder.set_expected_seq(seq);
        let read_timeout = conn.read_timeout;
        let Ok(Some((_, p))) = conn.read_packet(read_timeout).await else { return None };
        hello = p;
        w = PacketWriter::new(conn.decoder.expected_seq());
    }
    let response = match parse_client_hello(&hello) {
        Ok(ClientHello::Response(r)) => r,
        _ => {
            response::write_err(&mut w, CLIENT_PROTOCOL_41, 1043, "08S01", "Bad handshake");
            conn.send(&mut w).await;
            return None;
        }
    };
    conn.caps = response.capabilities & server_caps;
    let caps = conn.caps;
    let using = if response.auth_response.is_empty() || response.auth_response == [0] { "NO" } else { "YES" };
    conn.tls = tls_info.is_some();
    if !conn.tls && engine.global("require_secure_transport").is_some_and(|v| v == "ON") {
        response::write_err(&mut w, caps, 3159, "HY000", "Connections using insecure transport are prohibited while --require_secure_transport=ON.");
        conn.send(&mut w).await;
        return None;
    }
    let login = Login {
        user: &response.username,
        peer,
        plugin: response.auth_plugin_name.as_deref(),
        response: response.auth_response.clone(),
        tls: conn.tls,
        initial: true,
    };
    let account = match authenticate(conn, &mut w, engine, &scramble, login).await {
        AuthResult::Ok(account) => account,
        AuthResult::Gone => return None,
        denied => {
            login_error(&mut w, caps, &denied, &response.username, peer, using);
            conn.send(&mut w).await;
            return None;
        }
    };
    // As in MySQL, an account with CONNECTION_ADMIN (root is the only account today)
    // may use one connection beyond max_connections.
    let max_connections: u64 = engine.global("max_connections").and_then(|v| v.parse().ok()).unwrap_or(151);
    let connected = engine.status.threads_connected.load(std::sync::atomic::Ordering::Relaxed);
    if connected > max_connections {
        response::write_err(&mut w, caps, 1040, "08004", "Too many connections");
        conn.send(&mut w).await;
        return None;
    }
    let mut session = Session::new(engine.clone(), connection_id, &response.username, peer);
    session.info.account_host.clone_from(&account.host);
    session.info.checked = true;
    // An expired password: a client that handles it gets a session that may only set a new
    // one (sandbox mode); any other is refused, as MySQL's disconnect_on_expired_password.
    if session.account_password_expired() {
        if caps & CLIENT_CAN_HANDLE_EXPIRED_PASSWORDS == 0 {
            response::write_err(
                &mut w,
                caps,
                1862,
                "HY000",
                "Your password has expired. To log in you must change it using a client that supports expired passwords.",
            );
            conn.send(&mut w).await;
            return None;
        }
        session.password_expired = true;
    }
    session.client_found_rows = caps & CLIENT_FOUND_ROWS != 0;
    session.set_client_collation_id(response.charset);
    if caps & CLIENT_INTERACTIVE != 0 {
        // As in MySQL: an interactive client's session idles up to interactive_timeout.
        let interactive = session.info.vars.get("interactive_timeout").unwrap_or("28800").to_owned();
        session.info.vars.values.insert("wait_timeout", interactive);
    }
    if let Some((cipher, version)) = tls_info {
        session.tls_cipher = cipher;
        session.tls_version = version;
    }
    if let Some(db) = response.database.as_deref().filter(|d| !d.is_empty())
        && let Err(e) = session.use_database(db)
    {
        send_error(&mut w, caps, &e);
        conn.send(&mut w).await;
        return None;
    }
    response::write_ok(&mut w, caps, &OkPacket { status_flags: SERVER_STATUS_AUTOCOMMIT, ..OkPacket::default() });
    conn.send(&mut w).await.then_some(session)
}

struct Stmt {
    params: StatementParams,
    param_count: usize,
}

/// What the command loop does after one command.
enum Flow {
    Continue,
    Close,
}

async fn command_loop(conn: &mut Conn, session: &mut Session) {
    let mut statements: HashMap<u32, Stmt> = HashMap::new();
    loop {
        conn.decoder.set_expected_seq(0);
        session.command_started(None);
        let kill = session.kill.clone();
        let idle = Duration::from_secs(quill_sql::vars::int_value(&session.info.vars, "wait_timeout"));
        let read = tokio::select! {
            r = conn.read_packet(idle) => r,
            () = kill.notified() => {
                if session.connection_killed() {
                    return;
                }
                continue;
            }
        };
        if session.connection_killed() {
            return;
        }
        let payload = match read {
            Ok(Some((_, p))) => p,
            Ok(None) | Err(ReadError::Io) => return,
            Err(ReadError::Protocol(e)) => {
                // The reply to the offending packet (the decoder moved past its frame).
                let mut w = PacketWriter::new(conn.decoder.expected_seq());
                response::write_error(&mut w, conn.caps, &e.to_mysql());
                conn.fail(&mut w).await;
                return;
            }
            Err(ReadError::Idle) => {
                // MySQL 8 tells the client why before it closes (its transaction rolls back
                // when the session is dropped).
                let mut w = PacketWriter::new(0);
                response::write_err(
                    &mut w,
                    conn.caps,
                    4031,
                    "HY000",
                    "The client was disconnected by the server because of inactivity. See wait_timeout and interactive_timeout for configuring this behavior.",
                );
                conn.send(&mut w).await;
                session.info.engine.status.aborted_clients.fetch_add(1, Ordering::Relaxed);
                return;
            }
            Err(ReadError::Stalled) => {
                let mut w = PacketWriter::new(conn.decoder.expected_seq());
                response::write_err(&mut w, conn.caps, 1159, "08S01", "Got timeout reading communication packets");
                conn.send(&mut w).await;
                session.info.engine.status.aborted_clients.fetch_add(1, Ordering::Relaxed);
                return;
            }
        };
        let reply_seq = conn.decoder.expected_seq();
        let handled = AssertUnwindSafe(handle_command(conn, session, &mut statements, &payload)).catch_unwind().await;
        match handled {
            Ok(Flow::Continue) => {}
            Ok(Flow::Close) => return,
            Err(panic) => {
                // A bug, not bad input: say so, roll back, and close this connection only.
                let what = panic.downcast_ref::<&str>().map(|s| (*s).to_owned()).or_else(|| panic.downcast_ref::<String>().cloned()).unwrap_or_default();
                let command = String::from_utf8_lossy(&payload[..payload.len().min(PANIC_LOG_COMMAND_BYTES)]).into_owned();
                tracing::error!(
                    connection_id = session.info.connection_id,
                    %command,
                    panic = %what,
                    "a command failed unexpectedly; its transaction was rolled back and the connection closed"
                );
                let mut w = PacketWriter::new(reply_seq);
                if session.row_sink.is_some() {
                    // The statement panicked while it held the stream: take it back (what it
                    // had buffered is dropped).
                    conn.reclaim_sink(session, &mut w);
                    w = PacketWriter::new(reply_seq);
                }
                session.close();
                response::write_err(
                    &mut w,
                    conn.caps,
                    1815,
                    "HY000",
                    "Internal error: the statement failed unexpectedly; the transaction was rolled back and the connection is closed (see the server log)",
                );
                conn.send(&mut w).await;
                return;
            }
        }
    }
}

/// Writes all of `bytes`, each write bounded by `timeout` (`net_write_timeout`: a large
/// reply to a slow reader goes on while it makes progress). False when the client is gone
/// or stalled.
async fn write_all_timed(stream: &mut Stream, bytes: &[u8], timeout: Duration) -> bool {
    let mut sent = 0;
    while sent < bytes.len() {
        match tokio::time::timeout(timeout, stream.write(&bytes[sent..])).await {
            Ok(Ok(n)) if n > 0 => sent += n,
            _ => return false,
        }
    }
    matches!(tokio::time::timeout(timeout, stream.flush()).await, Ok(Ok(())))
}

/// Testing seam: a COM_QUERY whose text is exactly `$QUILL_TEST_PANIC_QUERY` panics in its
/// session, so black-box tests can check what a session that fails unexpectedly releases.
static PANIC_QUERY: std::sync::LazyLock<Option<Vec<u8>>> =
    std::sync::LazyLock::new(|| std::env::var_os("QUILL_TEST_PANIC_QUERY").map(std::ffi::OsString::into_encoded_bytes));

/// How much of a command that panicked the server log quotes.
const PANIC_LOG_COMMAND_BYTES: usize = 1024;

/// Serve one command and send its reply.
async fn handle_command(conn: &mut Conn, session: &mut Session, statements: &mut HashMap<u32, Stmt>, payload: &[u8]) -> Flow {
    let mut w = PacketWriter::new(conn.decoder.expected_seq());
    let caps = conn.caps;
    let cmd = match parse_command(payload, caps) {
        Ok(c) => c,
        Err(e) => {
            response::write_error(&mut w, caps, &e.to_mysql());
            return if conn.send(&mut w).await { Flow::Continue } else { Flow::Close };
        }
    };
    match cmd {
        Command::Quit => return Flow::Close,
        Command::Ping | Command::Debug => ok(&mut w, caps, session, 0, 0, ""),
        Command::Refresh(bits) => match session.refresh(bits).await {
            Ok(_) => ok(&mut w, caps, session, 0, 0, ""),
            Err(e) => send_error(&mut w, caps, &e),
        },
        Command::ResetConnection => {
            session.reset();
            statements.clear();
            ok(&mut w, caps, session, 0, 0, "");
        }
        Command::InitDb(db) => {
            // The name is in the client's character set, like statement text.
            let used = match session.client_charset().decode(&db) {
                Some(name) => session.use_database(&name),
                None => Err(SqlError::new(codes::ER_BAD_DB_ERROR, format!("Unknown database '{}'", String::from_utf8_lossy(&db)))),
            };
            match used {
                Ok(()) => ok(&mut w, caps, session, 0, 0, ""),
                Err(e) => send_error(&mut w, caps, &e),
            }
        }
        Command::Statistics => {
            let uptime = session.info.engine.started.elapsed().as_secs();
            let q = session.info.engine.status.questions.load(std::sync::atomic::Ordering::Relaxed);
            let threads = session.info.engine.status.threads_connected.load(std::sync::atomic::Ordering::Relaxed);
            w.write_packet(format!("Uptime: {uptime}  Threads: {threads}  Questions: {q}  Slow queries: 0  Opens: 0  Flush tables: 0  Open tables: 0  Queries per second avg: 0.000").as_bytes());
        }
        Command::Query { sql, .. } => {
            session.command_started(Some(&String::from_utf8_lossy(&sql)));
            if PANIC_QUERY.as_deref() == Some(sql.as_slice()) {
                panic!("QUILL_TEST_PANIC_QUERY: the test asked this statement to fail unexpectedly");
            }
            conn.lend_sink(session, &mut w, false);
            let results = session.run(&sql).await;
            let failed = conn.reclaim_sink(session, &mut w);
            if failed {
                return Flow::Close;
            }
            let n = results.len();
            for (i, r) in results.into_iter().enumerate() {
                let more = if i + 1 < n { SERVER_MORE_RESULTS_EXISTS } else { 0 };
                match r {
                    Ok(outcome) => write_outcome(&mut w, caps, session, outcome, more, false),
                    Err(e) => send_error(&mut w, caps, &e),
                }
            }
        }
        Command::FieldList { table, .. } => {
            let t = session.client_charset().decode(&table).map_or_else(|| String::from_utf8_lossy(&table).into_owned(), std::borrow::Cow::into_owned);
            // The statement is read like client text: the name's bytes go in as they came.
            let mut show = b"SHOW COLUMNS FROM `".to_vec();
            for &b in &table {
                show.extend_from_slice(if b == b'`' { b"``" } else { std::slice::from_ref(&b) });
            }
            show.push(b'`');
            match session.run(&show).await.pop() {
                Some(Ok(Outcome::Rows(rs))) => {
                    for r in &rs.rows {
                        let name = quill_sql::ops::to_string_lossy(&r[0]);
                        let def = ColumnDefinition {
                            schema: session.info.db.clone().unwrap_or_default(),
                            table: t.clone(),
                            org_table: t.clone(),
                            name: name.clone(),
                            org_name: name,
                            charset: 255,
                            column_length: 255,
                            column_type: ColumnType::VarString,
                            flags: 0,
                            decimals: 0,
                        };
                        response::write_field_list_column(&mut w, &def);
                    }
                    response::write_result_set_end(&mut w, caps, status(session, 0), 0);
                }
                Some(Err(e)) => send_error(&mut w, caps, &e),
                _ => ok(&mut w, caps, session, 0, 0, ""),
            }
        }
        Command::ProcessKill(id) => match session.run(&format!("KILL {id}")).await.pop() {
            Some(Err(e)) => send_error(&mut w, caps, &e),
            _ => ok(&mut w, caps, session, 0, 0, ""),
        },
        Command::ChangeUser(cu) => {
            let using = if cu.auth_response.is_empty() || cu.auth_response == [0] { "NO" } else { "YES" };
            let peer = session.info.host.clone();
            let scramble = conn.scramble;
            let login = Login {
                user: &cu.username,
                peer: &peer,
                plugin: cu.auth_plugin_name.as_deref(),
                response: cu.auth_response.clone(),
                tls: conn.tls,
                initial: false,
            };
            let engine = session.info.engine.clone();
            match authenticate(conn, &mut w, &engine, &scramble, login).await {
                AuthResult::Ok(account) => {
                    session.reset();
                    statements.clear();
                    session.change_account(&cu.username, &account.host);
                    let db_ok = match cu.database.as_deref().filter(|d| !d.is_empty()) {
                        Some(db) => session.use_database(db),
                        None => Ok(()),
                    };
                    match db_ok {
                        Ok(()) => ok(&mut w, caps, session, 0, 0, ""),
                        Err(e) => send_error(&mut w, caps, &e),
                    }
                }
                AuthResult::Gone => return Flow::Close,
                denied => {
                    login_error(&mut w, caps, &denied, &cu.username, &peer, using);
                    conn.send(&mut w).await;
                    return Flow::Close;
                }
            }
        }
        Command::StmtPrepare(sql) => match session.prepare(&sql) {
            Ok((id, count, columns)) => {
                if count > usize::from(u16::MAX) || columns.len() > usize::from(u16::MAX) {
                    session.close_prepared(id);
                    response::write_err(&mut w, caps, 1390, "HY000", "Prepared statement contains too many placeholders");
                } else {
                    let params: Vec<ColumnDefinition> = (0..count)
                        .map(|_| column_def(&OutColumn::computed("?", SqlType::VarChar { len: 0, collation: quill_storage::Collation::Binary }), None))
                        .collect();
                    let results = session.results_conversion();
                    let cols: Vec<ColumnDefinition> = columns.iter().map(|c| column_def(c, results)).collect();
                    response::write_stmt_prepare_ok(&mut w, caps, StmtPrepareOk { stmt_id: id, warnings: 0 }, &params, &cols);
                    statements.insert(id, Stmt { params: StatementParams::new(count as u16), param_count: count });
                }
            }
            Err(e) => send_error(&mut w, caps, &e),
        },
        Command::StmtExecute { stmt_id, flags, params, .. } => {
            let Some(st) = statements.get_mut(&stmt_id) else {
                response::write_err(&mut w, caps, 1243, "HY000", &format!("Unknown prepared statement handler ({stmt_id}) given to mysqld_stmt_execute"));
                return if conn.send(&mut w).await { Flow::Continue } else { Flow::Close };
            };
            let decoded = if st.param_count == 0 { Ok(Vec::new()) } else { st.params.decode_execute(&params, flags, caps).map(|p| p.values) };
            match decoded {
                Ok(values) => {
                    let types = st.params.bound_types().unwrap_or_default();
                    let client = session.client_charset();
                    let values: Vec<Value> = values.into_iter().enumerate().map(|(i, v)| from_binary(v, types.get(i).map(|t| t.column_type), client)).collect();
                    conn.lend_sink(session, &mut w, true);
                    let outcome = session.execute_prepared(stmt_id, values).await;
                    let failed = conn.reclaim_sink(session, &mut w);
                    if failed {
                        return Flow::Close;
                    }
                    match outcome {
                        Ok(outcome) => write_outcome(&mut w, caps, session, outcome, 0, true),
                        Err(e) => send_error(&mut w, caps, &e),
                    }
                }
                Err(e) => response::write_error(&mut w, caps, &e.to_mysql()),
            }
        }
        Command::StmtSendLongData { stmt_id, param_id, data } => {
            if let Some(st) = statements.get_mut(&stmt_id) {
                let _ = st.params.append_long_data(param_id, &data);
            }
            return Flow::Continue;
        }
        Command::StmtClose(id) => {
            statements.remove(&id);
            session.close_prepared(id);
            return Flow::Continue;
        }
        Command::StmtReset(id) => match statements.get_mut(&id) {
            Some(st) => {
                st.params.reset();
                ok(&mut w, caps, session, 0, 0, "");
            }
            None => response::write_err(&mut w, caps, 1243, "HY000", &format!("Unknown prepared statement handler ({id}) given to mysqld_stmt_reset")),
        },
        Command::SetOption(_) => response::write_eof(&mut w, caps, 0, status(session, 0)),
        Command::StmtFetch { .. } => response::write_err(&mut w, caps, 1235, "42000", "This version of MySQL doesn't yet support 'cursors'"),
        Command::RegisterReplica(r) => {
            tracing::info!(server_id = r.server_id, host = %String::from_utf8_lossy(&r.host), port = r.port, "a replica registered");
            ok(&mut w, caps, session, 0, 0, "");
        }
        Command::BinlogDump(request) => match session.require_global(quill_sql::accounts::REPLICATION_SLAVE, "REPLICATION SLAVE") {
            Ok(()) => return dump::serve(conn, session, request).await,
            Err(e) => send_error(&mut w, caps, &e),
        },
        Command::Unknown(_) => response::write_err(&mut w, caps, 1047, "08S01", "Unknown command"),
    }
    if !conn.send(&mut w).await || session.connection_killed() {
        return Flow::Close;
    }
    Flow::Continue
}

fn status(session: &Session, more: u16) -> u16 {
    let mut s = more;
    if session.autocommit() {
        s |= SERVER_STATUS_AUTOCOMMIT;
    }
    if session.in_transaction() {
        s |= SERVER_STATUS_IN_TRANS;
    }
    s
}

fn ok(w: &mut PacketWriter, caps: u32, session: &Session, affected: u64, last_insert_id: u64, info: &str) {
    response::write_ok(
        w,
        caps,
        &OkPacket { affected_rows: affected, last_insert_id, status_flags: status(session, 0), warnings: session.warning_count(), info, ..OkPacket::default() },
    );
}

fn write_outcome(w: &mut PacketWriter, caps: u32, session: &Session, outcome: Outcome, more: u16, binary: bool) {
    // Text goes out in character_set_results (none: as stored).
    let results = session.results_conversion();
    match outcome {
        Outcome::Results(list) => {
            let n = list.len();
            for (i, o) in list.into_iter().enumerate() {
                write_outcome(w, caps, session, o, if i + 1 < n { SERVER_MORE_RESULTS_EXISTS } else { more }, binary);
            }
        }
        Outcome::Done { affected, last_insert_id, info } => {
            response::write_ok(
                w,
                caps,
                &OkPacket {
                    affected_rows: affected,
                    last_insert_id,
                    status_flags: status(session, more),
                    warnings: session.warning_count(),
                    info: &info,
                    ..OkPacket::default()
                },
            );
        }
        // The columns and rows went out through the session's sink: only the end is left.
        Outcome::Streamed { .. } => response::write_result_set_end(w, caps, status(session, more), session.warning_count()),
        Outcome::Rows(rs) => {
            let defs: Vec<ColumnDefinition> = rs.columns.iter().map(|c| column_def(c, results)).collect();
            let st = status(session, more);
            let warnings = session.warning_count();
            if binary {
                let rows = cells(&rs, results, BinaryValue::Bytes, to_binary);
                if response::write_binary_result_set(w, caps, &defs, rows, st, warnings).is_err() {
                    response::write_err(w, caps, 1105, "HY000", "internal error encoding a binary row");
                }
            } else {
                let texts = cells(&rs, results, Some, quill_sql::types::to_text);
                let refs: Vec<Vec<Option<&[u8]>>> = texts.iter().map(|r| r.iter().map(|v| v.as_deref()).collect()).collect();
                if response::write_text_result_set(w, caps, &defs, refs, st, warnings).is_err() {
                    response::write_err(w, caps, 1105, "HY000", "internal error encoding a row");
                }
            }
        }
    }
}

/// Every cell of `rs` encoded by `cell` (see [`row_cells`]).
fn cells<T>(rs: &ResultSet, results: Option<Charset>, converted: impl Fn(Vec<u8>) -> T, cell: impl Fn(&Value, &SqlType) -> T) -> Vec<Vec<T>> {
    rs.rows.iter().map(|r| row_cells(r, rs.columns.iter().map(|c| &c.ty), results, &converted, &cell)).collect()
}

/// The cells of one row, of column types `types`, encoded by `cell`; strings are first
/// converted into `results` (`character_set_results`) and wrapped by `converted`.
fn row_cells<'t, T>(
    row: &[Value],
    types: impl Iterator<Item = &'t SqlType>,
    results: Option<Charset>,
    converted: impl Fn(Vec<u8>) -> T,
    cell: impl Fn(&Value, &SqlType) -> T,
) -> Vec<T> {
    row.iter()
        .zip(types)
        .map(|(v, ty)| match (v, results) {
            (Value::Str(s), Some(cs)) => converted(cs.encode(s).into_owned()),
            _ => cell(v, ty),
        })
        .collect()
}

fn column_type(ty: &SqlType) -> ColumnType {
    match ty {
        SqlType::Int { kind, .. } => match kind {
            IntKind::Tiny => ColumnType::Tiny,
            IntKind::Small => ColumnType::Short,
            IntKind::Medium => ColumnType::Int24,
            IntKind::Int => ColumnType::Long,
            IntKind::Big => ColumnType::LongLong,
        },
        SqlType::Decimal { .. } => ColumnType::NewDecimal,
        SqlType::Float => ColumnType::Float,
        SqlType::Double => ColumnType::Double,
        SqlType::Bit(_) => ColumnType::Bit,
        SqlType::Char { .. } | SqlType::Binary(_) => ColumnType::String,
        SqlType::VarChar { .. } | SqlType::VarBinary(_) => ColumnType::VarString,
        SqlType::Text { .. } | SqlType::Blob(_) => ColumnType::Blob,
        SqlType::Date => ColumnType::Date,
        SqlType::DateTime(_) => ColumnType::DateTime,
        SqlType::Timestamp(_) => ColumnType::Timestamp,
        SqlType::Time(_) => ColumnType::Time,
        SqlType::Year => ColumnType::Year,
        SqlType::Json => ColumnType::Json,
        // As MySQL describes them: STRING columns flagged ENUM or SET.
        SqlType::Enum { .. } | SqlType::Set { .. } => ColumnType::String,
        SqlType::Null => ColumnType::Null,
    }
}

/// The column definition a client gets; `results` converts string columns' character set.
fn column_def(c: &OutColumn, results: Option<Charset>) -> ColumnDefinition {
    let ty = &c.ty;
    let mut f = c.flags;
    if ty.is_unsigned() {
        f |= flags::UNSIGNED;
    }
    if ty.is_binary() {
        f |= flags::BINARY;
    }
    if matches!(ty, SqlType::Text { .. } | SqlType::Blob(_)) {
        f |= flags::BLOB;
    }
    match ty {
        SqlType::Enum { .. } => f |= flags::ENUM,
        SqlType::Set { .. } => f |= flags::SET,
        _ => {}
    }
    // JSON: BLOB and BINARY, charset binary (63), as MySQL 8 describes it; drivers read it
    // as UTF-8 text by its type.
    if *ty == SqlType::Json {
        f |= flags::BLOB | flags::BINARY;
    }
    if matches!(ty, SqlType::Int { .. } | SqlType::Decimal { .. } | SqlType::Float | SqlType::Double | SqlType::Year) {
        f |= flags::NUM;
    }
    let charset = if ty.is_string() { ty.collation().id() } else { 63 };
    let charset = if charset == 63 && ty.is_string() { 255 } else { charset };
    let charset = match results {
        _ if *ty == SqlType::Json => 63,
        Some(cs) if ty.is_string() => cs.result_collation_id(),
        _ => charset,
    };
    ColumnDefinition {
        schema: c.db.clone(),
        table: c.table.clone(),
        org_table: c.org_table.clone(),
        name: c.name.clone(),
        org_name: c.org_name.clone(),
        charset,
        column_length: ty.display_length(),
        column_type: column_type(ty),
        flags: f,
        decimals: ty.decimals(),
    }
}

/// A bound parameter's value. String parameters are text in the client's character set
/// (a latin1 client's are transcoded); BLOB-typed ones are bytes, as in MySQL. Bytes that
/// are UTF-8 are kept as text (the same bytes), others as bytes.
fn from_binary(b: BinaryValue, ty: Option<ColumnType>, client: Charset) -> Value {
    use chrono::{Datelike, NaiveDate};
    match b {
        BinaryValue::Null => Value::Null,
        BinaryValue::Int(i) => Value::Int(i),
        BinaryValue::UInt(u) => Value::UInt(u),
        BinaryValue::Float(f) => Value::Double(f64::from(f)),
        BinaryValue::Double(d) => Value::Double(d),
        BinaryValue::Bytes(bytes) => {
            let blob = matches!(ty, Some(ColumnType::TinyBlob | ColumnType::MediumBlob | ColumnType::LongBlob | ColumnType::Blob));
            if client == Charset::Latin1 && !blob {
                return Value::Str(client.decode(&bytes).map(std::borrow::Cow::into_owned).unwrap_or_default());
            }
            match String::from_utf8(bytes) {
                Ok(s) => Value::Str(s),
                Err(e) => Value::Bytes(e.into_bytes()),
            }
        }
        BinaryValue::Date { year, month, day } => {
            NaiveDate::from_ymd_opt(i32::from(year), u32::from(month), u32::from(day)).map_or(Value::Null, |d| Value::Date(d.num_days_from_ce()))
        }
        BinaryValue::DateTime { year, month, day, hour, minute, second, micro } => NaiveDate::from_ymd_opt(i32::from(year), u32::from(month), u32::from(day))
            .and_then(|d| d.and_hms_micro_opt(u32::from(hour), u32::from(minute), u32::from(second), micro))
            .map_or(Value::Null, |dt| Value::DateTime(dt.and_utc().timestamp_micros())),
        BinaryValue::Time { negative, days, hours, minutes, seconds, micro } => {
            let us = ((i64::from(days) * 24 + i64::from(hours)) * 3600 + i64::from(minutes) * 60 + i64::from(seconds)) * 1_000_000 + i64::from(micro);
            Value::Time(if negative { -us } else { us })
        }
    }
}

fn to_binary(v: &Value, ty: &SqlType) -> BinaryValue {
    use chrono::{Datelike, Timelike};
    match v {
        Value::Null => BinaryValue::Null,
        // A BIT value goes as its bytes, as in the text protocol.
        _ if matches!(ty, SqlType::Bit(_)) => BinaryValue::Bytes(quill_sql::types::to_text(v, ty).unwrap_or_default()),
        Value::Int(i) => match column_type(ty) {
            ColumnType::Float | ColumnType::Double => BinaryValue::Double(*i as f64),
            ColumnType::Tiny | ColumnType::Short | ColumnType::Long | ColumnType::Int24 | ColumnType::LongLong | ColumnType::Year => BinaryValue::Int(*i),
            _ => BinaryValue::Bytes(i.to_string().into_bytes()),
        },
        Value::UInt(u) => match column_type(ty) {
            ColumnType::Tiny | ColumnType::Short | ColumnType::Long | ColumnType::Int24 | ColumnType::LongLong | ColumnType::Year => BinaryValue::UInt(*u),
            _ => BinaryValue::Bytes(u.to_string().into_bytes()),
        },
        Value::Double(d) => match ty {
            SqlType::Float => BinaryValue::Float(*d as f32),
            SqlType::Double => BinaryValue::Double(*d),
            _ => BinaryValue::Bytes(quill_sql::types::to_text(v, ty).unwrap_or_default()),
        },
        Value::Date(days) if matches!(ty, SqlType::Date) => match quill_sql::types::date_from_days(*days) {
            Some(d) => BinaryValue::Date { year: d.year() as u16, month: d.month() as u8, day: d.day() as u8 },
            None => BinaryValue::Null,
        },
        Value::DateTime(us) if matches!(ty, SqlType::DateTime(_) | SqlType::Timestamp(_)) => match quill_sql::types::datetime_from_micros(*us) {
            Some(d) => BinaryValue::DateTime {
                year: d.year() as u16,
                month: d.month() as u8,
                day: d.day() as u8,
                hour: d.hour() as u8,
                minute: d.minute() as u8,
                second: d.second() as u8,
                micro: d.nanosecond() / 1000,
            },
            None => BinaryValue::Null,
        },
        Value::Time(us) if matches!(ty, SqlType::Time(_)) => BinaryValue::time_from_micros(*us),
        other => BinaryValue::Bytes(quill_sql::types::to_text(other, ty).unwrap_or_default()),
    }
}
