//! The one error type of the protocol crate, and its mapping to MySQL error packets.
//!
//! Every decoder returns `ProtocolError` for input it cannot accept: truncated, malformed,
//! oversized or out-of-order bytes. None of these are bugs in Quill, so none of them panic.
//! The connection loop matches on the variant to decide whether to answer with an ERR packet
//! and go on (a bad `COM_STMT_EXECUTE`), or answer and close (a packet over
//! `max_allowed_packet`, a sequence id out of order). `ProtocolError::to_mysql` gives the
//! MySQL error number, SQLSTATE and message for that ERR packet; this crate is the edge where
//! Quill's errors meet MySQL's numbering, so the mapping lives here and nowhere else.

use crate::constants::{ColumnType, error_codes};

/// Everything that can go wrong while turning bytes into typed values or back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtocolError {
    /// A logical payload (all frames joined) is longer than the configured maximum
    /// (`max_allowed_packet`). The connection must be answered with ERR 1153 and closed,
    /// because the rest of the oversized packet is still on the wire.
    #[error("packet of {len} bytes exceeds the maximum of {max} bytes")]
    PacketTooLarge { len: usize, max: usize },

    /// A frame arrived with a sequence id other than the one expected.
    #[error("packet sequence id {got} where {expected} was expected")]
    SequenceMismatch { expected: u8, got: u8 },

    /// The payload ended before the field named by `what` was complete.
    #[error("payload truncated while reading {what}")]
    Truncated { what: &'static str },

    /// The bytes of the field named by `what` are not a valid encoding.
    #[error("malformed {what}")]
    Malformed { what: &'static str },

    /// A command packet with no command byte.
    #[error("empty command packet")]
    EmptyPacket,

    /// The client did not set `CLIENT_PROTOCOL_41`; pre-4.1 clients are not supported.
    #[error("client does not speak protocol 4.1")]
    UnsupportedClient,

    /// A `COM_STMT_EXECUTE` parameter declared a type a client can never bind.
    #[error("unsupported parameter type {0}")]
    UnsupportedParamType(u8),

    /// `COM_STMT_EXECUTE` with new-params-bound-flag = 0 before any types were bound.
    #[error("statement parameters executed before their types were bound")]
    MissingParamTypes,

    /// The execute packet carries fewer parameters than the prepared statement has.
    #[error("statement has {expected} parameters but {got} were sent")]
    ParamCountMismatch { expected: usize, got: usize },

    /// `COM_STMT_SEND_LONG_DATA` for a parameter the statement does not have.
    #[error("long data for parameter {param_id} of a statement with {num_params} parameters")]
    ParamIdOutOfRange { param_id: u16, num_params: usize },

    /// A DATE/DATETIME/TIMESTAMP value of length other than 0/4/7/11, or a TIME value of
    /// length other than 0/8/12.
    #[error("temporal value of invalid length {len}")]
    InvalidTemporalLength { len: u8 },

    /// The engine asked to encode a value that cannot be sent as its column's type
    /// (for example bytes in a LONG column). This is a bug above the protocol crate, but it is
    /// reported rather than asserted so one bad row cannot bring a server down.
    #[error("column {column} of type {column_type:?} cannot carry this value")]
    ValueTypeMismatch { column: usize, column_type: ColumnType },

    /// A row was given a different number of values than there are columns.
    #[error("row has {got} values for {expected} columns")]
    ColumnCountMismatch { expected: usize, got: usize },
}

/// The three parts of an ERR packet: error number, five-character SQLSTATE, message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MysqlError {
    pub code: u16,
    pub sql_state: &'static str,
    pub message: String,
}

impl ProtocolError {
    /// Maps this error to the ERR packet MySQL 8 would send for the same condition.
    #[must_use]
    pub fn to_mysql(&self) -> MysqlError {
        let (code, sql_state) = match self {
            Self::PacketTooLarge { .. } => {
                return MysqlError {
                    code: error_codes::ER_NET_PACKET_TOO_LARGE,
                    sql_state: error_codes::SQLSTATE_CONNECTION_FAILURE,
                    message: "Got a packet bigger than 'max_allowed_packet' bytes".to_owned(),
                };
            }
            Self::SequenceMismatch { .. } => (error_codes::ER_NET_PACKETS_OUT_OF_ORDER, error_codes::SQLSTATE_CONNECTION_FAILURE),
            Self::UnsupportedClient => (error_codes::ER_NOT_SUPPORTED_AUTH_MODE, error_codes::SQLSTATE_CONNECTION_FAILURE),
            Self::UnsupportedParamType(_)
            | Self::MissingParamTypes
            | Self::ParamCountMismatch { .. }
            | Self::ParamIdOutOfRange { .. }
            | Self::InvalidTemporalLength { .. } => {
                return MysqlError {
                    code: error_codes::ER_WRONG_ARGUMENTS,
                    sql_state: error_codes::SQLSTATE_GENERAL,
                    message: format!("Incorrect arguments to mysqld_stmt_execute ({self})"),
                };
            }
            Self::Truncated { .. } | Self::Malformed { .. } | Self::EmptyPacket | Self::ValueTypeMismatch { .. } | Self::ColumnCountMismatch { .. } => {
                (error_codes::ER_MALFORMED_PACKET, error_codes::SQLSTATE_GENERAL)
            }
        };
        MysqlError { code, sql_state, message: self.to_string() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packet_too_large_maps_to_1153_08s01_with_mysql_message() {
        let error = ProtocolError::PacketTooLarge { len: 10, max: 4 }.to_mysql();
        assert_eq!(error.code, 1153);
        assert_eq!(error.sql_state, "08S01");
        assert_eq!(error.message, "Got a packet bigger than 'max_allowed_packet' bytes");
    }

    #[test]
    fn out_of_order_maps_to_1156() {
        let error = ProtocolError::SequenceMismatch { expected: 1, got: 3 }.to_mysql();
        assert_eq!((error.code, error.sql_state), (1156, "08S01"));
    }

    #[test]
    fn bad_execute_arguments_map_to_1210() {
        let error = ProtocolError::MissingParamTypes.to_mysql();
        assert_eq!((error.code, error.sql_state), (1210, "HY000"));
        assert!(error.message.starts_with("Incorrect arguments to mysqld_stmt_execute"));
    }
}
