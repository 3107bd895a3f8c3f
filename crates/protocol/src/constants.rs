//! Numbers of the MySQL wire protocol: capability flags, server status flags, command bytes,
//! column types and flags, character-set ids and the error numbers this crate produces.
//!
//! Values are MySQL 8.0's (`include/mysql_com.h`, `include/field_types.h`). Flags are bit
//! masks sent little-endian; capabilities are 32 bits, status flags and column flags 16 bits.
//! Nothing here encodes or decodes; every other module names these constants instead of
//! writing numbers.

/// Capability flags exchanged in the handshake (`int<4>`, little-endian).
/// The connection works with `server_capabilities & client_capabilities`.
pub mod capabilities {
    pub const CLIENT_LONG_PASSWORD: u32 = 1;
    pub const CLIENT_FOUND_ROWS: u32 = 1 << 1;
    pub const CLIENT_LONG_FLAG: u32 = 1 << 2;
    pub const CLIENT_CONNECT_WITH_DB: u32 = 1 << 3;
    pub const CLIENT_NO_SCHEMA: u32 = 1 << 4;
    pub const CLIENT_COMPRESS: u32 = 1 << 5;
    pub const CLIENT_ODBC: u32 = 1 << 6;
    pub const CLIENT_LOCAL_FILES: u32 = 1 << 7;
    pub const CLIENT_IGNORE_SPACE: u32 = 1 << 8;
    pub const CLIENT_PROTOCOL_41: u32 = 1 << 9;
    pub const CLIENT_INTERACTIVE: u32 = 1 << 10;
    pub const CLIENT_SSL: u32 = 1 << 11;
    pub const CLIENT_IGNORE_SIGPIPE: u32 = 1 << 12;
    pub const CLIENT_TRANSACTIONS: u32 = 1 << 13;
    pub const CLIENT_RESERVED: u32 = 1 << 14;
    /// Called `CLIENT_RESERVED2` in recent headers: 1-byte-length auth response.
    pub const CLIENT_SECURE_CONNECTION: u32 = 1 << 15;
    pub const CLIENT_MULTI_STATEMENTS: u32 = 1 << 16;
    pub const CLIENT_MULTI_RESULTS: u32 = 1 << 17;
    pub const CLIENT_PS_MULTI_RESULTS: u32 = 1 << 18;
    pub const CLIENT_PLUGIN_AUTH: u32 = 1 << 19;
    pub const CLIENT_CONNECT_ATTRS: u32 = 1 << 20;
    pub const CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA: u32 = 1 << 21;
    pub const CLIENT_CAN_HANDLE_EXPIRED_PASSWORDS: u32 = 1 << 22;
    pub const CLIENT_SESSION_TRACK: u32 = 1 << 23;
    pub const CLIENT_DEPRECATE_EOF: u32 = 1 << 24;
    pub const CLIENT_OPTIONAL_RESULTSET_METADATA: u32 = 1 << 25;
    pub const CLIENT_ZSTD_COMPRESSION_ALGORITHM: u32 = 1 << 26;
    pub const CLIENT_QUERY_ATTRIBUTES: u32 = 1 << 27;
    pub const MULTI_FACTOR_AUTHENTICATION: u32 = 1 << 28;
    pub const CLIENT_CAPABILITY_EXTENSION: u32 = 1 << 29;
    pub const CLIENT_SSL_VERIFY_SERVER_CERT: u32 = 1 << 30;
    pub const CLIENT_REMEMBER_OPTIONS: u32 = 1 << 31;

    /// What Quill offers when TLS is not configured (the server ORs in `CLIENT_SSL` when it
    /// is). Deliberately absent: compression, optional result-set metadata. `LOCAL INFILE`
    /// is offered, as MySQL offers it; whether a load may use it is `local_infile`'s call.
    pub const DEFAULT_SERVER_CAPABILITIES: u32 = CLIENT_LONG_PASSWORD
        | CLIENT_FOUND_ROWS
        | CLIENT_LOCAL_FILES
        | CLIENT_LONG_FLAG
        | CLIENT_CONNECT_WITH_DB
        | CLIENT_PROTOCOL_41
        | CLIENT_INTERACTIVE
        | CLIENT_TRANSACTIONS
        | CLIENT_SECURE_CONNECTION
        | CLIENT_MULTI_STATEMENTS
        | CLIENT_MULTI_RESULTS
        | CLIENT_PS_MULTI_RESULTS
        | CLIENT_PLUGIN_AUTH
        | CLIENT_CONNECT_ATTRS
        | CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA
        | CLIENT_CAN_HANDLE_EXPIRED_PASSWORDS
        | CLIENT_SESSION_TRACK
        | CLIENT_DEPRECATE_EOF
        | CLIENT_QUERY_ATTRIBUTES;
}

/// Server status flags (`int<2>`) carried by OK and EOF packets.
pub mod status {
    pub const SERVER_STATUS_IN_TRANS: u16 = 1;
    pub const SERVER_STATUS_AUTOCOMMIT: u16 = 1 << 1;
    pub const SERVER_MORE_RESULTS_EXISTS: u16 = 1 << 3;
    /// MySQL's `SERVER_QUERY_NO_GOOD_INDEX_USED`.
    pub const SERVER_STATUS_NO_GOOD_INDEX_USED: u16 = 1 << 4;
    /// MySQL's `SERVER_QUERY_NO_INDEX_USED`.
    pub const SERVER_STATUS_NO_INDEX_USED: u16 = 1 << 5;
    pub const SERVER_STATUS_CURSOR_EXISTS: u16 = 1 << 6;
    pub const SERVER_STATUS_LAST_ROW_SENT: u16 = 1 << 7;
    pub const SERVER_STATUS_DB_DROPPED: u16 = 1 << 8;
    pub const SERVER_STATUS_NO_BACKSLASH_ESCAPES: u16 = 1 << 9;
    pub const SERVER_STATUS_METADATA_CHANGED: u16 = 1 << 10;
    pub const SERVER_QUERY_WAS_SLOW: u16 = 1 << 11;
    pub const SERVER_PS_OUT_PARAMS: u16 = 1 << 12;
    pub const SERVER_STATUS_IN_TRANS_READONLY: u16 = 1 << 13;
    pub const SERVER_SESSION_STATE_CHANGED: u16 = 1 << 14;
}

/// Command bytes: the first byte of every packet a client sends after authentication.
pub mod command_bytes {
    pub const COM_SLEEP: u8 = 0x00;
    pub const COM_QUIT: u8 = 0x01;
    pub const COM_INIT_DB: u8 = 0x02;
    pub const COM_QUERY: u8 = 0x03;
    pub const COM_FIELD_LIST: u8 = 0x04;
    pub const COM_CREATE_DB: u8 = 0x05;
    pub const COM_DROP_DB: u8 = 0x06;
    pub const COM_REFRESH: u8 = 0x07;
    pub const COM_SHUTDOWN: u8 = 0x08;
    pub const COM_STATISTICS: u8 = 0x09;
    pub const COM_PROCESS_INFO: u8 = 0x0a;
    pub const COM_CONNECT: u8 = 0x0b;
    pub const COM_PROCESS_KILL: u8 = 0x0c;
    pub const COM_DEBUG: u8 = 0x0d;
    pub const COM_PING: u8 = 0x0e;
    pub const COM_TIME: u8 = 0x0f;
    pub const COM_DELAYED_INSERT: u8 = 0x10;
    pub const COM_CHANGE_USER: u8 = 0x11;
    pub const COM_BINLOG_DUMP: u8 = 0x12;
    pub const COM_TABLE_DUMP: u8 = 0x13;
    pub const COM_CONNECT_OUT: u8 = 0x14;
    pub const COM_REGISTER_SLAVE: u8 = 0x15;
    pub const COM_STMT_PREPARE: u8 = 0x16;
    pub const COM_STMT_EXECUTE: u8 = 0x17;
    pub const COM_STMT_SEND_LONG_DATA: u8 = 0x18;
    pub const COM_STMT_CLOSE: u8 = 0x19;
    pub const COM_STMT_RESET: u8 = 0x1a;
    pub const COM_SET_OPTION: u8 = 0x1b;
    pub const COM_STMT_FETCH: u8 = 0x1c;
    pub const COM_DAEMON: u8 = 0x1d;
    pub const COM_BINLOG_DUMP_GTID: u8 = 0x1e;
    pub const COM_RESET_CONNECTION: u8 = 0x1f;
    pub const COM_CLONE: u8 = 0x20;

    /// `COM_SET_OPTION` values.
    pub const MYSQL_OPTION_MULTI_STATEMENTS_ON: u16 = 0;
    pub const MYSQL_OPTION_MULTI_STATEMENTS_OFF: u16 = 1;

    /// `COM_STMT_EXECUTE` flags (`enum_cursor_type`).
    pub const CURSOR_TYPE_NO_CURSOR: u8 = 0;
    pub const CURSOR_TYPE_READ_ONLY: u8 = 1;
    pub const CURSOR_TYPE_FOR_UPDATE: u8 = 2;
    pub const CURSOR_TYPE_SCROLLABLE: u8 = 4;
    /// With `CLIENT_QUERY_ATTRIBUTES`: a `parameter_count` follows even when the statement
    /// has no parameters (so that query attributes can be sent).
    pub const PARAMETER_COUNT_AVAILABLE: u8 = 8;
}

/// A column or parameter type (`enum_field_types`), one byte on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ColumnType {
    Decimal = 0,
    Tiny = 1,
    Short = 2,
    Long = 3,
    Float = 4,
    Double = 5,
    Null = 6,
    Timestamp = 7,
    LongLong = 8,
    Int24 = 9,
    Date = 10,
    Time = 11,
    DateTime = 12,
    Year = 13,
    NewDate = 14,
    VarChar = 15,
    Bit = 16,
    Json = 245,
    NewDecimal = 246,
    Enum = 247,
    Set = 248,
    TinyBlob = 249,
    MediumBlob = 250,
    LongBlob = 251,
    Blob = 252,
    VarString = 253,
    String = 254,
    Geometry = 255,
}

impl ColumnType {
    /// The type with wire number `byte`, or `None` for numbers that are not a type a client
    /// or a result set uses (MySQL's internal TIMESTAMP2, DATETIME2, TIME2, ...).
    #[must_use]
    pub fn from_u8(byte: u8) -> Option<Self> {
        Some(match byte {
            0 => Self::Decimal,
            1 => Self::Tiny,
            2 => Self::Short,
            3 => Self::Long,
            4 => Self::Float,
            5 => Self::Double,
            6 => Self::Null,
            7 => Self::Timestamp,
            8 => Self::LongLong,
            9 => Self::Int24,
            10 => Self::Date,
            11 => Self::Time,
            12 => Self::DateTime,
            13 => Self::Year,
            14 => Self::NewDate,
            15 => Self::VarChar,
            16 => Self::Bit,
            245 => Self::Json,
            246 => Self::NewDecimal,
            247 => Self::Enum,
            248 => Self::Set,
            249 => Self::TinyBlob,
            250 => Self::MediumBlob,
            251 => Self::LongBlob,
            252 => Self::Blob,
            253 => Self::VarString,
            254 => Self::String,
            255 => Self::Geometry,
            _ => return None,
        })
    }

    /// The wire number of this type.
    #[must_use]
    pub fn as_u8(self) -> u8 {
        self as u8
    }
}

/// Column definition flags (`int<2>`).
pub mod column_flags {
    pub const NOT_NULL_FLAG: u16 = 1;
    pub const PRI_KEY_FLAG: u16 = 1 << 1;
    pub const UNIQUE_KEY_FLAG: u16 = 1 << 2;
    pub const MULTIPLE_KEY_FLAG: u16 = 1 << 3;
    pub const BLOB_FLAG: u16 = 1 << 4;
    pub const UNSIGNED_FLAG: u16 = 1 << 5;
    pub const ZEROFILL_FLAG: u16 = 1 << 6;
    pub const BINARY_FLAG: u16 = 1 << 7;
    pub const ENUM_FLAG: u16 = 1 << 8;
    pub const AUTO_INCREMENT_FLAG: u16 = 1 << 9;
    pub const TIMESTAMP_FLAG: u16 = 1 << 10;
    pub const SET_FLAG: u16 = 1 << 11;
    pub const NO_DEFAULT_VALUE_FLAG: u16 = 1 << 12;
    pub const ON_UPDATE_NOW_FLAG: u16 = 1 << 13;
    pub const PART_KEY_FLAG: u16 = 1 << 14;
    pub const NUM_FLAG: u16 = 1 << 15;
}

/// Character-set/collation ids (`int<1>` in the handshake, `int<2>` in column definitions).
pub mod charset {
    pub const LATIN1_SWEDISH_CI: u16 = 8;
    pub const UTF8MB3_GENERAL_CI: u16 = 33;
    pub const UTF8MB4_GENERAL_CI: u16 = 45;
    pub const UTF8MB4_BIN: u16 = 46;
    pub const BINARY: u16 = 63;
    pub const UTF8MB4_0900_AI_CI: u16 = 255;
    /// The server default, announced in the initial handshake.
    pub const DEFAULT_SERVER_CHARSET: u16 = UTF8MB4_0900_AI_CI;
}

/// MySQL error numbers and SQLSTATEs that the protocol layer itself produces or that a
/// connection loop needs around authentication.
pub mod error_codes {
    /// "Bad handshake".
    pub const ER_HANDSHAKE_ERROR: u16 = 1043;
    /// "Access denied for user '%s'@'%s' (using password: %s)", SQLSTATE 28000.
    pub const ER_ACCESS_DENIED_ERROR: u16 = 1045;
    /// "Unknown command", SQLSTATE 08S01.
    pub const ER_UNKNOWN_COM_ERROR: u16 = 1047;
    /// "Client does not support authentication protocol requested by server".
    pub const ER_NOT_SUPPORTED_AUTH_MODE: u16 = 1251;
    /// "Got a packet bigger than 'max_allowed_packet' bytes", SQLSTATE 08S01.
    pub const ER_NET_PACKET_TOO_LARGE: u16 = 1153;
    /// "Got packets out of order", SQLSTATE 08S01.
    pub const ER_NET_PACKETS_OUT_OF_ORDER: u16 = 1156;
    /// "Incorrect arguments to %s".
    pub const ER_WRONG_ARGUMENTS: u16 = 1210;
    /// "Unknown prepared statement handler (%.*s) given to %s".
    pub const ER_UNKNOWN_STMT_HANDLER: u16 = 1243;
    /// "Malformed communication packet.".
    pub const ER_MALFORMED_PACKET: u16 = 1835;

    pub const SQLSTATE_GENERAL: &str = "HY000";
    pub const SQLSTATE_CONNECTION_FAILURE: &str = "08S01";
    pub const SQLSTATE_ACCESS_DENIED: &str = "28000";
    /// Length of a SQLSTATE: exactly five ASCII characters.
    pub const SQLSTATE_LEN: usize = 5;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn column_type_round_trips_every_wire_number() {
        for byte in 0..=u8::MAX {
            if let Some(column_type) = ColumnType::from_u8(byte) {
                assert_eq!(column_type.as_u8(), byte);
            }
        }
        assert_eq!(ColumnType::from_u8(17), None, "TIMESTAMP2 is internal");
        assert_eq!(ColumnType::Geometry.as_u8(), 255);
        assert_eq!(ColumnType::VarChar.as_u8(), 15);
    }

    #[test]
    fn default_capabilities_speak_41_and_deprecate_eof() {
        use capabilities::*;
        assert_ne!(DEFAULT_SERVER_CAPABILITIES & CLIENT_PROTOCOL_41, 0);
        assert_ne!(DEFAULT_SERVER_CAPABILITIES & CLIENT_DEPRECATE_EOF, 0);
        assert_eq!(DEFAULT_SERVER_CAPABILITIES & CLIENT_SSL, 0);
        assert_eq!(DEFAULT_SERVER_CAPABILITIES & CLIENT_COMPRESS, 0);
    }
}
