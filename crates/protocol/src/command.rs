//! Commands: the packets a client sends once authenticated, each a command byte followed by
//! its arguments, all in one logical payload (sequence id 0).
//!
//! `parse_command` turns a payload into a `Command`. Arguments are taken as raw bytes where
//! MySQL does (SQL text and schema names are in the connection's character set, decoded by
//! the SQL layer). Under `CLIENT_QUERY_ATTRIBUTES` a `COM_QUERY` starts with query attributes
//! (see `binary::params`), which are decoded here. `COM_STMT_EXECUTE` parameters depend on
//! the prepared statement, so they are left as bytes for `StatementParams::decode_execute`.
//! Commands Quill does not serve (`COM_SLEEP`, `COM_TIME`, replication commands, ...) come
//! back as `Unknown(byte)`, to be answered with `ER_UNKNOWN_COM_ERROR`.

use crate::binary::QueryAttribute;
use crate::binary::params::read_query_attributes;
use crate::codec::Reader;
use crate::constants::capabilities::CLIENT_QUERY_ATTRIBUTES;
use crate::constants::command_bytes::*;
use crate::error::ProtocolError;
use crate::handshake::{ChangeUser, parse_change_user};

/// One client command.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    Quit,
    /// `USE schema`.
    InitDb(Vec<u8>),
    Query {
        sql: Vec<u8>,
        /// Query attributes; empty unless `CLIENT_QUERY_ATTRIBUTES` was negotiated.
        attributes: Vec<QueryAttribute>,
    },
    /// Deprecated column listing: `string<NUL>` table, `string<EOF>` wildcard.
    FieldList {
        table: Vec<u8>,
        wildcard: Vec<u8>,
    },
    Statistics,
    ProcessKill(u32),
    Debug,
    Ping,
    ChangeUser(ChangeUser),
    ResetConnection,
    StmtPrepare(Vec<u8>),
    StmtExecute {
        stmt_id: u32,
        /// Cursor type and `PARAMETER_COUNT_AVAILABLE`.
        flags: u8,
        iteration_count: u32,
        /// Everything after the iteration count: input to `StatementParams::decode_execute`.
        params: Vec<u8>,
    },
    StmtSendLongData {
        stmt_id: u32,
        param_id: u16,
        data: Vec<u8>,
    },
    StmtClose(u32),
    StmtReset(u32),
    /// `MYSQL_OPTION_MULTI_STATEMENTS_ON` / `_OFF`.
    SetOption(u16),
    StmtFetch {
        stmt_id: u32,
        num_rows: u32,
    },
    /// A command byte Quill does not serve.
    Unknown(u8),
}

/// Parses one command payload under the connection's negotiated `capabilities`.
pub fn parse_command(payload: &[u8], capabilities: u32) -> Result<Command, ProtocolError> {
    let mut reader = Reader::new(payload);
    let command_byte = reader.u8("command").map_err(|_| ProtocolError::EmptyPacket)?;
    Ok(match command_byte {
        COM_QUIT => Command::Quit,
        COM_INIT_DB => Command::InitDb(reader.rest().to_vec()),
        COM_QUERY => {
            let attributes = if capabilities & CLIENT_QUERY_ATTRIBUTES != 0 { read_query_attributes(&mut reader)? } else { Vec::new() };
            Command::Query { sql: reader.rest().to_vec(), attributes }
        }
        COM_FIELD_LIST => {
            let table = reader.null_terminated_or_rest().to_vec();
            Command::FieldList { table, wildcard: reader.rest().to_vec() }
        }
        COM_STATISTICS => Command::Statistics,
        COM_PROCESS_KILL => Command::ProcessKill(reader.u32_le("connection id")?),
        COM_DEBUG => Command::Debug,
        COM_PING => Command::Ping,
        COM_CHANGE_USER => Command::ChangeUser(parse_change_user(payload, capabilities)?),
        COM_RESET_CONNECTION => Command::ResetConnection,
        COM_STMT_PREPARE => Command::StmtPrepare(reader.rest().to_vec()),
        COM_STMT_EXECUTE => Command::StmtExecute {
            stmt_id: reader.u32_le("statement id")?,
            flags: reader.u8("execute flags")?,
            iteration_count: reader.u32_le("iteration count")?,
            params: reader.rest().to_vec(),
        },
        COM_STMT_SEND_LONG_DATA => {
            Command::StmtSendLongData { stmt_id: reader.u32_le("statement id")?, param_id: reader.u16_le("parameter id")?, data: reader.rest().to_vec() }
        }
        COM_STMT_CLOSE => Command::StmtClose(reader.u32_le("statement id")?),
        COM_STMT_RESET => Command::StmtReset(reader.u32_le("statement id")?),
        COM_SET_OPTION => Command::SetOption(reader.u16_le("option")?),
        COM_STMT_FETCH => Command::StmtFetch { stmt_id: reader.u32_le("statement id")?, num_rows: reader.u32_le("number of rows")? },
        other => Command::Unknown(other),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::binary::BinaryValue;
    use crate::constants::ColumnType;
    use crate::constants::capabilities::{CLIENT_PROTOCOL_41, CLIENT_SECURE_CONNECTION};

    const CAPS: u32 = CLIENT_PROTOCOL_41 | CLIENT_SECURE_CONNECTION;
    const CAPS_ATTRS: u32 = CAPS | CLIENT_QUERY_ATTRIBUTES;

    fn parse(payload: &[u8]) -> Result<Command, ProtocolError> {
        parse_command(payload, CAPS)
    }

    #[test]
    fn simple_commands() {
        assert_eq!(parse(&[COM_QUIT]), Ok(Command::Quit));
        assert_eq!(parse(&[COM_PING]), Ok(Command::Ping));
        assert_eq!(parse(&[COM_STATISTICS]), Ok(Command::Statistics));
        assert_eq!(parse(&[COM_DEBUG]), Ok(Command::Debug));
        assert_eq!(parse(&[COM_RESET_CONNECTION]), Ok(Command::ResetConnection));
        assert_eq!(parse(b"\x02shop"), Ok(Command::InitDb(b"shop".to_vec())));
        assert_eq!(parse(b"\x16SELECT ?"), Ok(Command::StmtPrepare(b"SELECT ?".to_vec())));
        assert_eq!(parse(&[COM_SLEEP]), Ok(Command::Unknown(COM_SLEEP)));
        assert_eq!(parse(&[0xEE]), Ok(Command::Unknown(0xEE)));
        assert_eq!(parse(&[]), Err(ProtocolError::EmptyPacket));
    }

    #[test]
    fn query_without_and_with_query_attributes() {
        let plain = parse(b"\x03SELECT 1").unwrap();
        assert_eq!(plain, Command::Query { sql: b"SELECT 1".to_vec(), attributes: vec![] });
        // With the capability, an attribute-free query starts with counts 0 and 1.
        let empty = parse_command(b"\x03\x00\x01SELECT 1", CAPS_ATTRS).unwrap();
        assert_eq!(empty, plain);
        let mut payload = vec![COM_QUERY, 1, 1, 0b0, 1, ColumnType::VarString.as_u8(), 0, 2, b'i', b'd'];
        payload.extend_from_slice(b"\x03abcSELECT 2");
        let Command::Query { sql, attributes } = parse_command(&payload, CAPS_ATTRS).unwrap() else {
            panic!("expected a query");
        };
        assert_eq!(sql, b"SELECT 2");
        assert_eq!(attributes, [QueryAttribute { name: "id".into(), value: BinaryValue::Bytes(b"abc".to_vec()) }]);
    }

    #[test]
    fn statement_commands() {
        let mut execute = vec![COM_STMT_EXECUTE, 7, 0, 0, 0, CURSOR_TYPE_NO_CURSOR, 1, 0, 0, 0];
        execute.extend_from_slice(&[0, 1, 8, 0]);
        assert_eq!(parse(&execute), Ok(Command::StmtExecute { stmt_id: 7, flags: 0, iteration_count: 1, params: vec![0, 1, 8, 0] }));
        assert_eq!(
            parse(&[COM_STMT_SEND_LONG_DATA, 7, 0, 0, 0, 2, 0, b'x', b'y']),
            Ok(Command::StmtSendLongData { stmt_id: 7, param_id: 2, data: b"xy".to_vec() })
        );
        assert_eq!(parse(&[COM_STMT_CLOSE, 1, 1, 0, 0]), Ok(Command::StmtClose(257)));
        assert_eq!(parse(&[COM_STMT_RESET, 9, 0, 0, 0]), Ok(Command::StmtReset(9)));
        assert_eq!(parse(&[COM_STMT_FETCH, 9, 0, 0, 0, 100, 0, 0, 0]), Ok(Command::StmtFetch { stmt_id: 9, num_rows: 100 }));
    }

    #[test]
    fn other_commands_with_arguments() {
        assert_eq!(parse(&[COM_PROCESS_KILL, 5, 0, 0, 0]), Ok(Command::ProcessKill(5)));
        assert_eq!(parse(&[COM_SET_OPTION, 1, 0]), Ok(Command::SetOption(MYSQL_OPTION_MULTI_STATEMENTS_OFF)));
        assert_eq!(parse(b"\x04users\0na%"), Ok(Command::FieldList { table: b"users".to_vec(), wildcard: b"na%".to_vec() }));
        let Command::ChangeUser(change_user) = parse(b"\x11bob\0\x00shop\0").unwrap() else {
            panic!("expected change user");
        };
        assert_eq!(change_user.database.as_deref(), Some("shop"));
    }

    #[test]
    fn truncated_arguments_are_typed_errors() {
        for payload in [
            &[COM_PROCESS_KILL, 5, 0][..],
            &[COM_STMT_CLOSE],
            &[COM_STMT_EXECUTE, 1, 0, 0, 0, 0, 1],
            &[COM_STMT_SEND_LONG_DATA, 1, 0, 0, 0, 1],
            &[COM_SET_OPTION, 1],
            &[COM_STMT_FETCH, 1, 0, 0, 0],
            &[COM_CHANGE_USER, b'a'],
        ] {
            assert!(matches!(parse(payload), Err(ProtocolError::Truncated { .. })), "{payload:?}");
        }
        assert!(parse_command(&[COM_QUERY, 0xFF], CAPS_ATTRS).is_err());
    }
}
