//! The binary protocol of prepared statements: typed values as `COM_STMT_EXECUTE` carries
//! them from the client (`params`) and as binary result rows carry them back (`row`).
//!
//! A binary value is encoded by its column type, little-endian:
//! TINY 1 byte, SHORT and YEAR 2, LONG and INT24 4, LONGLONG 8, FLOAT 4 (IEEE single),
//! DOUBLE 8 (IEEE double); DATE, DATETIME and TIMESTAMP as a length byte of 0, 4, 7 or 11
//! followed by `int<2>` year, month, day, [hour, minute, second, [`int<4>` microseconds]];
//! TIME as a length byte of 0, 8 or 12 followed by sign (1 = negative), `int<4>` days, hours,
//! minutes, seconds, [`int<4>` microseconds]; every other type (strings, DECIMAL as text,
//! blobs, JSON, BIT, ENUM, SET, GEOMETRY) as a length-encoded string. Whether an integer is
//! signed is not in the value: parameters carry `UNSIGNED_PARAM_FLAG` (0x80) in the second
//! byte of their type, result columns carry `UNSIGNED_FLAG` in their definition.

pub mod params;
pub mod row;

pub use params::{ExecuteParams, ParamType, QueryAttribute, StatementParams, UNSIGNED_PARAM_FLAG};
pub use row::{encode_binary_row, write_binary_row};

/// Length byte of a DATE/DATETIME with only a date part.
pub const DATE_LEN: u8 = 2 + 1 + 1;
/// Length byte of a DATETIME with whole seconds.
pub const DATETIME_LEN: u8 = DATE_LEN + 1 + 1 + 1;
/// Length byte of a DATETIME with microseconds.
pub const DATETIME_MICROS_LEN: u8 = DATETIME_LEN + 4;
/// Length byte of a TIME with whole seconds.
pub const TIME_LEN: u8 = 1 + 4 + 1 + 1 + 1;
/// Length byte of a TIME with microseconds.
pub const TIME_MICROS_LEN: u8 = TIME_LEN + 4;

/// One value in the binary protocol.
#[derive(Debug, Clone, PartialEq)]
pub enum BinaryValue {
    Null,
    Int(i64),
    UInt(u64),
    Float(f32),
    Double(f64),
    /// Strings, DECIMAL as text, blobs, JSON, BIT, ENUM, SET, GEOMETRY.
    Bytes(Vec<u8>),
    Date {
        year: u16,
        month: u8,
        day: u8,
    },
    DateTime {
        year: u16,
        month: u8,
        day: u8,
        hour: u8,
        minute: u8,
        second: u8,
        micro: u32,
    },
    Time {
        negative: bool,
        days: u32,
        hours: u8,
        minutes: u8,
        seconds: u8,
        micro: u32,
    },
}

impl BinaryValue {
    /// A TIME of `us` signed microseconds, split as the binary protocol and the binary log
    /// carry it: days, then hours under 24.
    #[must_use]
    pub fn time_from_micros(us: i64) -> BinaryValue {
        let total = us.unsigned_abs();
        let seconds = total / 1_000_000;
        BinaryValue::Time {
            negative: us < 0,
            days: u32::try_from(seconds / 86_400).unwrap_or(u32::MAX),
            hours: (seconds / 3600 % 24) as u8,
            minutes: (seconds / 60 % 60) as u8,
            seconds: (seconds % 60) as u8,
            micro: (total % 1_000_000) as u32,
        }
    }

    /// The value as the text protocol would send it (`None` for NULL): integers and floats in
    /// decimal, dates as `YYYY-MM-DD[ hh:mm:ss[.ffffff]]`, times as `[-]h:mm:ss[.ffffff]`
    /// with days folded into hours.
    #[must_use]
    pub fn to_text(&self) -> Option<Vec<u8>> {
        let text = match self {
            Self::Null => return None,
            Self::Bytes(bytes) => return Some(bytes.clone()),
            Self::Int(value) => value.to_string(),
            Self::UInt(value) => value.to_string(),
            Self::Float(value) => value.to_string(),
            Self::Double(value) => value.to_string(),
            Self::Date { year, month, day } => format!("{year:04}-{month:02}-{day:02}"),
            Self::DateTime { year, month, day, hour, minute, second, micro } => {
                let mut text = format!("{year:04}-{month:02}-{day:02} {hour:02}:{minute:02}:{second:02}");
                push_micros(&mut text, *micro);
                text
            }
            Self::Time { negative, days, hours, minutes, seconds, micro } => {
                let total_hours = u64::from(*days) * 24 + u64::from(*hours);
                let sign = if *negative { "-" } else { "" };
                let mut text = format!("{sign}{total_hours:02}:{minutes:02}:{seconds:02}");
                push_micros(&mut text, *micro);
                text
            }
        };
        Some(text.into_bytes())
    }
}

fn push_micros(text: &mut String, micro: u32) {
    if micro != 0 {
        text.push_str(&format!(".{micro:06}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_forms() {
        assert_eq!(BinaryValue::Null.to_text(), None);
        assert_eq!(BinaryValue::Int(-5).to_text().unwrap(), b"-5");
        assert_eq!(BinaryValue::UInt(u64::MAX).to_text().unwrap(), b"18446744073709551615");
        assert_eq!(BinaryValue::Date { year: 2024, month: 2, day: 9 }.to_text().unwrap(), b"2024-02-09");
        let datetime = BinaryValue::DateTime { year: 2024, month: 12, day: 31, hour: 23, minute: 5, second: 7, micro: 120 };
        assert_eq!(datetime.to_text().unwrap(), b"2024-12-31 23:05:07.000120");
        let time = BinaryValue::Time { negative: true, days: 1, hours: 2, minutes: 3, seconds: 4, micro: 0 };
        assert_eq!(time.to_text().unwrap(), b"-26:03:04");
    }
}
