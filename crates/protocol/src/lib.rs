//! Quill's MySQL client/server protocol, as MySQL 8 speaks it: sans-IO, so it turns bytes into
//! typed values and typed values into bytes and never touches a socket. The connection loop in
//! `quill-server` owns the I/O; this crate owns the format. `docs/protocol.md` specifies the
//! formats in prose.
//!
//! One connection, end to end:
//!
//! 1. The server writes the greeting with `handshake::write_initial_handshake` (seq 0) into a
//!    `packet::PacketWriter`, using a scramble from `auth::generate_scramble`.
//! 2. Bytes from the socket go into `packet::PacketDecoder::feed`; `next_packet` returns whole
//!    payloads. The first is `handshake::parse_client_hello`: an `SslRequest` (start TLS, then
//!    `parse_handshake_response`) or a `HandshakeResponse`.
//! 3. The server checks the auth response with `auth::verify_caching_sha2_fast` or
//!    `auth::verify_native_password`, switching plugin first with
//!    `auth::write_auth_switch_request` if the client used another one, and answers with
//!    `auth::write_auth_more_data` and `response::write_ok`, or `response::write_err`.
//! 4. Each command (seq restarts at 0: `PacketDecoder::set_expected_seq(0)`) is parsed by
//!    `command::parse_command`. `COM_QUERY` results go out through
//!    `response::write_text_result_set` or `write_ok`; prepared statements use
//!    `response::write_stmt_prepare_ok`, `binary::StatementParams::decode_execute` and
//!    `response::write_binary_result_set`.
//! 5. The writer's buffer is written to the socket once per reply (`PacketWriter::take`).
//!
//! Errors are one enum, `error::ProtocolError`; `ProtocolError::to_mysql` maps each to the
//! MySQL error number and SQLSTATE of its ERR packet. All integers are little-endian.

pub mod auth;
pub mod binary;
pub mod binlog;
pub mod client;
pub mod codec;
pub mod command;
pub mod constants;
pub mod error;
pub mod fuzz;
pub mod handshake;
pub mod packet;
pub mod response;

pub use error::{MysqlError, ProtocolError};
pub use fuzz::decode_any;
pub use packet::{PacketDecoder, PacketWriter};
