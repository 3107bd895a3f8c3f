//! Commands: the packets a client sends once authenticated, each a command byte followed by
//! its arguments, all in one logical payload (sequence id 0).
//!
//! `parse_command` turns a payload into a `Command`. Arguments are taken as raw bytes where
//! MySQL does (SQL text and schema names are in the connection's character set, decoded by
//! the SQL layer). Under `CLIENT_QUERY_ATTRIBUTES` a `COM_QUERY` starts with query attributes
//! (see `binary::params`), which are decoded here. `COM_STMT_EXECUTE` parameters depend on
//! the prepared statement, so they are left as bytes for `StatementParams::decode_execute`.
//! The replication commands (`COM_REGISTER_SLAVE`, `COM_BINLOG_DUMP`, `COM_BINLOG_DUMP_GTID`)
//! are parsed here; what follows a dump is a stream of binlog events (`binlog`). Commands
//! Quill does not serve (`COM_SLEEP`, `COM_TIME`, ...) come back as `Unknown(byte)`, to be
//! answered with `ER_UNKNOWN_COM_ERROR`.

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
    /// Deprecated `mysql_refresh()`: FLUSH options as bits (REFRESH_GRANT, REFRESH_LOG ...).
    Refresh(u8),
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
    /// A replica announces itself (`SHOW REPLICAS` lists it).
    RegisterReplica(RegisterReplica),
    /// Stream the binary log from a file and position, or from the first transaction not in
    /// a GTID set.
    BinlogDump(BinlogDump),
    /// A command byte Quill does not serve.
    Unknown(u8),
}

/// `COM_REGISTER_SLAVE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegisterReplica {
    pub server_id: u32,
    pub host: Vec<u8>,
    pub user: Vec<u8>,
    pub port: u16,
}

/// A GTID set: per server UUID, intervals of transaction numbers `start..end` (end excluded).
pub type OwnedGtidSet = Vec<([u8; 16], Vec<(u64, u64)>)>;

/// `COM_BINLOG_DUMP` and `COM_BINLOG_DUMP_GTID`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BinlogDump {
    pub server_id: u32,
    /// `BINLOG_DUMP_NON_BLOCK`: end the stream (with an EOF packet) at the end of the log
    /// rather than wait for more.
    pub non_blocking: bool,
    /// Empty: from the first binary log (or, with a GTID set, wherever the set ends).
    pub file: Vec<u8>,
    pub position: u64,
    /// `COM_BINLOG_DUMP_GTID`'s set: per server UUID, intervals `start..end` (end excluded).
    pub gtids: Option<OwnedGtidSet>,
}

/// `BINLOG_DUMP_NON_BLOCK` of a dump's flags.
pub const BINLOG_DUMP_NON_BLOCK: u16 = 1;
/// `BINLOG_THROUGH_GTID` of `COM_BINLOG_DUMP_GTID`'s flags: a GTID set follows.
pub const BINLOG_THROUGH_GTID: u16 = 4;
/// Server UUIDs in a GTID set a dump may name, at most (each costs 24 bytes or more of the
/// packet, so a packet bounds it too).
pub const DUMP_GTID_UUIDS_MAX: u64 = 1 << 16;

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
        COM_REFRESH => Command::Refresh(reader.u8("refresh options")?),
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
        COM_REGISTER_SLAVE => {
            let server_id = reader.u32_le("server id")?;
            let mut short = |what| -> Result<Vec<u8>, ProtocolError> {
                let len = reader.u8(what)?;
                Ok(reader.bytes(usize::from(len), what)?.to_vec())
            };
            let (host, user, _password) = (short("host")?, short("user")?, short("password")?);
            let port = reader.u16_le("port")?;
            Command::RegisterReplica(RegisterReplica { server_id, host, user, port })
        }
        COM_BINLOG_DUMP => {
            let position = u64::from(reader.u32_le("binlog position")?);
            let flags = reader.u16_le("flags")?;
            let server_id = reader.u32_le("server id")?;
            let file = reader.rest().to_vec();
            Command::BinlogDump(BinlogDump { server_id, non_blocking: flags & BINLOG_DUMP_NON_BLOCK != 0, file, position, gtids: None })
        }
        COM_BINLOG_DUMP_GTID => {
            let flags = reader.u16_le("flags")?;
            let server_id = reader.u32_le("server id")?;
            let name_len = reader.u32_le("binlog name length")?;
            let file = reader.bytes(name_len as usize, "binlog name")?.to_vec();
            let position = reader.u64_le("binlog position")?;
            let gtids = if flags & BINLOG_THROUGH_GTID != 0 {
                let _data_len = reader.u32_le("GTID set length")?;
                Some(read_gtid_set(&mut reader)?)
            } else {
                Some(Vec::new())
            };
            Command::BinlogDump(BinlogDump { server_id, non_blocking: flags & BINLOG_DUMP_NON_BLOCK != 0, file, position, gtids })
        }
        other => Command::Unknown(other),
    })
}

/// A GTID set in MySQL's binary encoding: the count of UUIDs, then per UUID its 16 bytes, the
/// count of intervals and each interval's start and end (end excluded), all little-endian.
fn read_gtid_set(reader: &mut Reader<'_>) -> Result<OwnedGtidSet, ProtocolError> {
    let uuids = reader.u64_le("GTID set size")?;
    // Every UUID takes at least 24 bytes: a count beyond what the packet holds is malformed.
    if uuids > DUMP_GTID_UUIDS_MAX || uuids.saturating_mul(24) > reader.remaining() as u64 {
        return Err(ProtocolError::Malformed { what: "GTID set size" });
    }
    let mut set = Vec::new();
    for _ in 0..uuids {
        let uuid = reader.array::<16>("server uuid")?;
        let count = reader.u64_le("GTID intervals")?;
        if count.saturating_mul(16) > reader.remaining() as u64 {
            return Err(ProtocolError::Malformed { what: "GTID intervals" });
        }
        let mut intervals = Vec::new();
        for _ in 0..count {
            intervals.push((reader.u64_le("GTID interval start")?, reader.u64_le("GTID interval end")?));
        }
        set.push((uuid, intervals));
    }
    Ok(set)
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
        assert_eq!(parse(&[COM_REFRESH, 0x04]), Ok(Command::Refresh(0x04)));
        assert!(parse(&[COM_REFRESH]).is_err(), "COM_REFRESH carries its options");
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

#[cfg(test)]
mod replication_tests {
    use super::*;

    #[test]
    fn a_dump_by_file_and_position_and_one_by_gtid_set_parse() {
        let mut p = vec![COM_BINLOG_DUMP];
        p.extend_from_slice(&1234_u32.to_le_bytes());
        p.extend_from_slice(&BINLOG_DUMP_NON_BLOCK.to_le_bytes());
        p.extend_from_slice(&7_u32.to_le_bytes());
        p.extend_from_slice(b"quill-bin.000001");
        let Ok(Command::BinlogDump(d)) = parse_command(&p, 0) else { panic!() };
        assert_eq!((d.server_id, d.non_blocking, d.file.as_slice(), d.position, d.gtids), (7, true, &b"quill-bin.000001"[..], 1234, None));

        let mut p = vec![COM_BINLOG_DUMP_GTID];
        p.extend_from_slice(&BINLOG_THROUGH_GTID.to_le_bytes());
        p.extend_from_slice(&9_u32.to_le_bytes());
        p.extend_from_slice(&0_u32.to_le_bytes());
        p.extend_from_slice(&4_u64.to_le_bytes());
        let mut set = 1_u64.to_le_bytes().to_vec();
        set.extend_from_slice(&[5; 16]);
        set.extend_from_slice(&1_u64.to_le_bytes());
        set.extend_from_slice(&1_u64.to_le_bytes());
        set.extend_from_slice(&11_u64.to_le_bytes());
        p.extend_from_slice(&(set.len() as u32).to_le_bytes());
        p.extend_from_slice(&set);
        let Ok(Command::BinlogDump(d)) = parse_command(&p, 0) else { panic!() };
        assert_eq!((d.server_id, d.non_blocking, d.position), (9, false, 4));
        assert_eq!(d.gtids, Some(vec![([5; 16], vec![(1, 11)])]));

        // A set that claims more than the packet holds is malformed, not allocated.
        let mut bad = p[..p.len() - set.len()].to_vec();
        bad.extend_from_slice(&u64::MAX.to_le_bytes());
        assert!(parse_command(&bad, 0).is_err());
    }

    #[test]
    fn a_replica_registers_with_its_id_host_and_port() {
        let mut p = vec![COM_REGISTER_SLAVE];
        p.extend_from_slice(&3_u32.to_le_bytes());
        p.extend_from_slice(&[4, b'h', b'o', b's', b't', 1, b'u', 0]);
        p.extend_from_slice(&3307_u16.to_le_bytes());
        p.extend_from_slice(&[0; 8]);
        let Ok(Command::RegisterReplica(r)) = parse_command(&p, 0) else { panic!() };
        assert_eq!((r.server_id, r.host.as_slice(), r.user.as_slice(), r.port), (3, &b"host"[..], &b"u"[..], 3307));
        assert!(parse_command(&p[..6], 0).is_err(), "truncated");
    }
}
