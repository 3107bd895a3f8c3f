//! Server replies: OK, ERR and EOF packets, result sets (text and binary) and the answer to
//! `COM_STMT_PREPARE`, all written into a `PacketWriter` so a whole reply is one write.
//!
//! OK (`OK_HEADER` 0x00): `int<lenenc>` affected rows, `int<lenenc>` last insert id, `int<2>`
//! status flags, `int<2>` warnings, then with `CLIENT_SESSION_TRACK` a lenenc info string
//! (only when it is not empty or the session state changed) and, when
//! `SERVER_SESSION_STATE_CHANGED`, a lenenc block of session-state changes; without it the
//! info as `string<EOF>`. Under `CLIENT_DEPRECATE_EOF` the same body with header `EOF_HEADER`
//! (0xFE) ends a result set instead of an EOF packet.
//! ERR (`ERR_HEADER` 0xFF): `int<2>` error number, `#`, five-character SQLSTATE, message.
//! EOF (0xFE): `int<2>` warnings, `int<2>` status flags.
//!
//! A result set is: column count (`int<lenenc>`), one column definition per column, an EOF
//! unless `CLIENT_DEPRECATE_EOF`, the rows, and a final EOF (or 0xFE-OK) whose status flags
//! carry `SERVER_MORE_RESULTS_EXISTS` when another result follows. A text row is each value as
//! a lenenc string, NULL as `LENENC_NULL` (0xFB); binary rows are in `binary::row`.
//! `CLIENT_OPTIONAL_RESULTSET_METADATA` is never negotiated, so metadata is always sent.
//!
//! The lenenc helpers from `codec` are re-exported here for other crates.

pub use crate::codec::{LENENC_NULL, lenenc_int_len, read_lenenc_bytes, read_lenenc_int, write_lenenc_bytes, write_lenenc_int};

use crate::binary::{BinaryValue, encode_binary_row};
use crate::constants::ColumnType;
use crate::constants::capabilities::{CLIENT_DEPRECATE_EOF, CLIENT_PROTOCOL_41, CLIENT_SESSION_TRACK, CLIENT_TRANSACTIONS};
use crate::constants::error_codes::SQLSTATE_LEN;
use crate::constants::status::SERVER_SESSION_STATE_CHANGED;
use crate::error::{MysqlError, ProtocolError};
use crate::packet::PacketWriter;

pub const OK_HEADER: u8 = 0x00;
pub const EOF_HEADER: u8 = 0xFE;
pub const ERR_HEADER: u8 = 0xFF;
/// Marks the SQLSTATE in an ERR packet.
pub const SQLSTATE_MARKER: u8 = b'#';
/// MySQL's `MYSQL_ERRMSG_SIZE`: longer messages are cut at a character boundary.
pub const MAX_ERROR_MESSAGE_LEN: usize = 512;
/// The catalog of every column definition.
pub const COLUMN_CATALOG: &[u8] = b"def";
/// Length of the fixed part of a column definition: charset 2, length 4, type 1, flags 2,
/// decimals 1, filler 2.
pub const COLUMN_FIXED_FIELDS_LEN: u8 = 2 + 4 + 1 + 2 + 1 + 2;

/// Session-state change types (`enum_session_state_type`).
pub const SESSION_TRACK_SYSTEM_VARIABLES: u8 = 0;
pub const SESSION_TRACK_SCHEMA: u8 = 1;
pub const SESSION_TRACK_STATE_CHANGE: u8 = 2;

/// One entry of an OK packet's session-state block (sent only with `CLIENT_SESSION_TRACK`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionStateChange<'a> {
    SystemVariable {
        name: &'a str,
        value: &'a str,
    },
    Schema(&'a str),
    /// Some session state changed (`session_track_state_change`).
    StateChanged,
}

/// The contents of an OK packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OkPacket<'a> {
    pub affected_rows: u64,
    pub last_insert_id: u64,
    pub status_flags: u16,
    pub warnings: u16,
    /// Human-readable info, e.g. "Rows matched: 1  Changed: 1  Warnings: 0".
    pub info: &'a str,
    /// Reported only under `CLIENT_SESSION_TRACK`; when not empty,
    /// `SERVER_SESSION_STATE_CHANGED` is set automatically.
    pub session_state_changes: &'a [SessionStateChange<'a>],
}

/// Writes an OK packet (header 0x00).
pub fn write_ok(writer: &mut PacketWriter, capabilities: u32, ok: &OkPacket<'_>) {
    writer.write_packet_with(|out| encode_ok(out, OK_HEADER, capabilities, ok));
}

/// Writes the OK packet with header 0xFE that ends a result set under `CLIENT_DEPRECATE_EOF`.
pub fn write_eof_ok(writer: &mut PacketWriter, capabilities: u32, ok: &OkPacket<'_>) {
    writer.write_packet_with(|out| encode_ok(out, EOF_HEADER, capabilities, ok));
}

fn encode_ok(out: &mut Vec<u8>, header: u8, capabilities: u32, ok: &OkPacket<'_>) {
    let track_session = capabilities & CLIENT_SESSION_TRACK != 0;
    let state_changed = track_session && !ok.session_state_changes.is_empty();
    let mut status_flags = ok.status_flags;
    if state_changed {
        status_flags |= SERVER_SESSION_STATE_CHANGED;
    }
    out.push(header);
    write_lenenc_int(out, ok.affected_rows);
    write_lenenc_int(out, ok.last_insert_id);
    if capabilities & CLIENT_PROTOCOL_41 != 0 {
        out.extend_from_slice(&status_flags.to_le_bytes());
        out.extend_from_slice(&ok.warnings.to_le_bytes());
    } else if capabilities & CLIENT_TRANSACTIONS != 0 {
        out.extend_from_slice(&status_flags.to_le_bytes());
    }
    if track_session {
        if state_changed || !ok.info.is_empty() {
            write_lenenc_bytes(out, ok.info.as_bytes());
        }
        if state_changed {
            write_lenenc_bytes(out, &encode_session_state(ok.session_state_changes));
        }
    } else if !ok.info.is_empty() {
        // Documented as string<EOF>, but MySQL's net_send_ok writes it length-encoded
        // and clients (libmysqlclient, mysql_common) parse it that way.
        write_lenenc_bytes(out, ok.info.as_bytes());
    }
}

fn encode_session_state(changes: &[SessionStateChange<'_>]) -> Vec<u8> {
    let mut block = Vec::new();
    for change in changes {
        let mut data = Vec::new();
        let change_type = match change {
            SessionStateChange::SystemVariable { name, value } => {
                write_lenenc_bytes(&mut data, name.as_bytes());
                write_lenenc_bytes(&mut data, value.as_bytes());
                SESSION_TRACK_SYSTEM_VARIABLES
            }
            SessionStateChange::Schema(name) => {
                write_lenenc_bytes(&mut data, name.as_bytes());
                SESSION_TRACK_SCHEMA
            }
            SessionStateChange::StateChanged => {
                write_lenenc_bytes(&mut data, b"1");
                SESSION_TRACK_STATE_CHANGE
            }
        };
        block.push(change_type);
        write_lenenc_bytes(&mut block, &data);
    }
    block
}

/// Writes an ERR packet.
///
/// REQUIRES: `sql_state` is five ASCII characters.
pub fn write_err(writer: &mut PacketWriter, capabilities: u32, code: u16, sql_state: &str, message: &str) {
    assert!(sql_state.len() == SQLSTATE_LEN && sql_state.is_ascii(), "bad SQLSTATE {sql_state:?}");
    let mut message_len = message.len().min(MAX_ERROR_MESSAGE_LEN);
    while !message.is_char_boundary(message_len) {
        message_len -= 1;
    }
    writer.write_packet_with(|out| {
        out.push(ERR_HEADER);
        out.extend_from_slice(&code.to_le_bytes());
        if capabilities & CLIENT_PROTOCOL_41 != 0 {
            out.push(SQLSTATE_MARKER);
            out.extend_from_slice(sql_state.as_bytes());
        }
        out.extend_from_slice(&message.as_bytes()[..message_len]);
    });
}

/// Writes the ERR packet for a `MysqlError` (e.g. from `ProtocolError::to_mysql`).
pub fn write_error(writer: &mut PacketWriter, capabilities: u32, error: &MysqlError) {
    write_err(writer, capabilities, error.code, error.sql_state, &error.message);
}

/// Writes a (pre-`CLIENT_DEPRECATE_EOF`) EOF packet.
pub fn write_eof(writer: &mut PacketWriter, capabilities: u32, warnings: u16, status_flags: u16) {
    writer.write_packet_with(|out| {
        out.push(EOF_HEADER);
        if capabilities & CLIENT_PROTOCOL_41 != 0 {
            out.extend_from_slice(&warnings.to_le_bytes());
            out.extend_from_slice(&status_flags.to_le_bytes());
        }
    });
}

/// Writes the column-count packet that opens a result set.
pub fn write_column_count(writer: &mut PacketWriter, count: u64) {
    writer.write_packet_with(|out| write_lenenc_int(out, count));
}

/// Column Definition 41.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnDefinition {
    pub schema: String,
    /// The table alias as written in the query.
    pub table: String,
    pub org_table: String,
    /// The column alias.
    pub name: String,
    pub org_name: String,
    /// Collation id; `charset::BINARY` for numbers and binary strings.
    pub charset: u16,
    /// Maximum display length in bytes.
    pub column_length: u32,
    pub column_type: ColumnType,
    /// `column_flags::*`.
    pub flags: u16,
    /// Digits after the point: 0x00 for integers and static strings, 0x1f for dynamic
    /// strings, doubles and floats, 0x00..0x51 for decimals.
    pub decimals: u8,
}

/// Writes a column definition: catalog "def", lenenc schema, table, org table, name, org name,
/// `COLUMN_FIXED_FIELDS_LEN`, charset, length, type, flags, decimals, two zero bytes.
pub fn write_column_definition(writer: &mut PacketWriter, column: &ColumnDefinition) {
    writer.write_packet_with(|out| encode_column_definition(out, column));
}

/// The COM_FIELD_LIST form: a column definition followed by a lenenc default value (always
/// sent as NULL).
pub fn write_field_list_column(writer: &mut PacketWriter, column: &ColumnDefinition) {
    writer.write_packet_with(|out| {
        encode_column_definition(out, column);
        out.push(LENENC_NULL);
    });
}

fn encode_column_definition(out: &mut Vec<u8>, column: &ColumnDefinition) {
    write_lenenc_bytes(out, COLUMN_CATALOG);
    for text in [&column.schema, &column.table, &column.org_table, &column.name, &column.org_name] {
        write_lenenc_bytes(out, text.as_bytes());
    }
    out.push(COLUMN_FIXED_FIELDS_LEN);
    out.extend_from_slice(&column.charset.to_le_bytes());
    out.extend_from_slice(&column.column_length.to_le_bytes());
    out.push(column.column_type.as_u8());
    out.extend_from_slice(&column.flags.to_le_bytes());
    out.push(column.decimals);
    out.extend_from_slice(&[0, 0]);
}

/// Writes one text-protocol row: each value a lenenc string, NULL as 0xFB.
pub fn write_text_row(writer: &mut PacketWriter, values: &[Option<&[u8]>]) {
    writer.write_packet_with(|out| {
        for value in values {
            match value {
                Some(bytes) => write_lenenc_bytes(out, bytes),
                None => out.push(LENENC_NULL),
            }
        }
    });
}

/// Writes the column count, the column definitions and (without `CLIENT_DEPRECATE_EOF`) the
/// EOF that ends them. Rows follow, then `write_result_set_end`.
pub fn write_result_set_metadata(writer: &mut PacketWriter, capabilities: u32, columns: &[ColumnDefinition], status_flags: u16) {
    write_column_count(writer, columns.len() as u64);
    for column in columns {
        write_column_definition(writer, column);
    }
    if capabilities & CLIENT_DEPRECATE_EOF == 0 {
        write_eof(writer, capabilities, 0, status_flags);
    }
}

/// Ends a result set: an EOF, or under `CLIENT_DEPRECATE_EOF` an OK with header 0xFE.
/// `status_flags` must include `SERVER_MORE_RESULTS_EXISTS` if another result follows.
pub fn write_result_set_end(writer: &mut PacketWriter, capabilities: u32, status_flags: u16, warnings: u16) {
    if capabilities & CLIENT_DEPRECATE_EOF != 0 {
        write_eof_ok(writer, capabilities, &OkPacket { status_flags, warnings, ..OkPacket::default() });
    } else {
        write_eof(writer, capabilities, warnings, status_flags);
    }
}

/// Writes a complete text result set. Every row must have one value per column.
pub fn write_text_result_set<'r, R>(
    writer: &mut PacketWriter,
    capabilities: u32,
    columns: &[ColumnDefinition],
    rows: impl IntoIterator<Item = R>,
    status_flags: u16,
    warnings: u16,
) -> Result<(), ProtocolError>
where
    R: AsRef<[Option<&'r [u8]>]>,
{
    write_result_set_metadata(writer, capabilities, columns, status_flags);
    for row in rows {
        let row = row.as_ref();
        if row.len() != columns.len() {
            return Err(ProtocolError::ColumnCountMismatch { expected: columns.len(), got: row.len() });
        }
        write_text_row(writer, row);
    }
    write_result_set_end(writer, capabilities, status_flags, warnings);
    Ok(())
}

/// Writes a complete binary result set (the answer to `COM_STMT_EXECUTE` with rows).
pub fn write_binary_result_set<R>(
    writer: &mut PacketWriter,
    capabilities: u32,
    columns: &[ColumnDefinition],
    rows: impl IntoIterator<Item = R>,
    status_flags: u16,
    warnings: u16,
) -> Result<(), ProtocolError>
where
    R: AsRef<[BinaryValue]>,
{
    let column_types: Vec<ColumnType> = columns.iter().map(|column| column.column_type).collect();
    write_result_set_metadata(writer, capabilities, columns, status_flags);
    for row in rows {
        let mut result = Ok(());
        writer.write_packet_with(|out| result = encode_binary_row(out, &column_types, row.as_ref()));
        result?;
    }
    write_result_set_end(writer, capabilities, status_flags, warnings);
    Ok(())
}

/// The fixed part of COM_STMT_PREPARE_OK.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StmtPrepareOk {
    pub stmt_id: u32,
    pub warnings: u16,
}

/// Writes COM_STMT_PREPARE_OK: 0x00, `int<4>` statement id, `int<2>` columns, `int<2>`
/// parameters, 0x00, `int<2>` warnings; then the parameter definitions and the column
/// definitions, each group followed by an EOF unless `CLIENT_DEPRECATE_EOF` or empty.
///
/// REQUIRES: at most 65535 parameters and 65535 columns (the SQL layer refuses more, as
/// MySQL does with ER_PS_MANY_PARAM).
pub fn write_stmt_prepare_ok(
    writer: &mut PacketWriter,
    capabilities: u32,
    prepare_ok: StmtPrepareOk,
    params: &[ColumnDefinition],
    columns: &[ColumnDefinition],
) {
    let num_params = u16::try_from(params.len()).expect("at most 65535 parameters");
    let num_columns = u16::try_from(columns.len()).expect("at most 65535 columns");
    writer.write_packet_with(|out| {
        out.push(OK_HEADER);
        out.extend_from_slice(&prepare_ok.stmt_id.to_le_bytes());
        out.extend_from_slice(&num_columns.to_le_bytes());
        out.extend_from_slice(&num_params.to_le_bytes());
        out.push(0);
        out.extend_from_slice(&prepare_ok.warnings.to_le_bytes());
    });
    for group in [params, columns] {
        if group.is_empty() {
            continue;
        }
        for definition in group {
            write_column_definition(writer, definition);
        }
        if capabilities & CLIENT_DEPRECATE_EOF == 0 {
            write_eof(writer, capabilities, 0, 0);
        }
    }
}

#[cfg(test)]
#[path = "response_tests.rs"]
mod tests;
