//! Encoding binary result rows (the rows of a result set answering `COM_STMT_EXECUTE`).
//!
//! A binary row is: header `BINARY_ROW_HEADER` (0x00); a NULL bitmap of
//! `(columns + 7 + BINARY_ROW_NULL_BITMAP_OFFSET) / 8` bytes where column i is bit
//! `i + BINARY_ROW_NULL_BITMAP_OFFSET` (the offset is 2 for historical reasons); then each
//! non-NULL value in its column type's binary form (see `binary`). Temporal values use the
//! shortest length that loses nothing: 0 for all-zero, 4 for a date alone, 7 with whole
//! seconds, 11 with microseconds (TIME: 0, 8, 12).
//!
//! Values are taken as the engine gives them and converted where MySQL's meaning is clear
//! (an `Int` in a DOUBLE column, a `Double` in a VARCHAR column as text); a value that cannot
//! mean anything in its column (bytes in a LONG column) is `ValueTypeMismatch`.

use crate::binary::{BinaryValue, DATE_LEN, DATETIME_LEN, DATETIME_MICROS_LEN, TIME_LEN, TIME_MICROS_LEN};
use crate::codec::write_lenenc_bytes;
use crate::constants::ColumnType;
use crate::error::ProtocolError;
use crate::packet::PacketWriter;

/// First byte of every binary row.
pub const BINARY_ROW_HEADER: u8 = 0x00;
/// Bits reserved at the start of a binary row's NULL bitmap.
pub const BINARY_ROW_NULL_BITMAP_OFFSET: usize = 2;

/// Writes one binary row as a packet. On error nothing is written.
pub fn write_binary_row(writer: &mut PacketWriter, column_types: &[ColumnType], values: &[BinaryValue]) -> Result<(), ProtocolError> {
    let (seq_before, len_before) = (writer.seq, writer.buf.len());
    let mut result = Ok(());
    writer.write_packet_with(|out| result = encode_binary_row(out, column_types, values));
    if result.is_err() {
        writer.seq = seq_before;
        writer.buf.truncate(len_before);
    }
    result
}

/// Appends the payload of one binary row to `out`.
pub fn encode_binary_row(out: &mut Vec<u8>, column_types: &[ColumnType], values: &[BinaryValue]) -> Result<(), ProtocolError> {
    if column_types.len() != values.len() {
        return Err(ProtocolError::ColumnCountMismatch { expected: column_types.len(), got: values.len() });
    }
    out.push(BINARY_ROW_HEADER);
    let bitmap_start = out.len();
    let bitmap_len = (values.len() + 7 + BINARY_ROW_NULL_BITMAP_OFFSET) / 8;
    out.resize(bitmap_start + bitmap_len, 0);
    for (column, (column_type, value)) in column_types.iter().zip(values).enumerate() {
        if *value == BinaryValue::Null {
            let bit = column + BINARY_ROW_NULL_BITMAP_OFFSET;
            out[bitmap_start + bit / 8] |= 1 << (bit % 8);
            continue;
        }
        encode_value(out, *column_type, value).ok_or(ProtocolError::ValueTypeMismatch { column, column_type: *column_type })?;
    }
    Ok(())
}

/// Appends one non-NULL value; `None` if it cannot be sent as `column_type`.
fn encode_value(out: &mut Vec<u8>, column_type: ColumnType, value: &BinaryValue) -> Option<()> {
    match column_type {
        ColumnType::Tiny => out.push(integer_bits(value)? as u8),
        ColumnType::Short | ColumnType::Year => out.extend_from_slice(&(integer_bits(value)? as u16).to_le_bytes()),
        ColumnType::Long | ColumnType::Int24 => out.extend_from_slice(&(integer_bits(value)? as u32).to_le_bytes()),
        ColumnType::LongLong => out.extend_from_slice(&integer_bits(value)?.to_le_bytes()),
        ColumnType::Float => out.extend_from_slice(&(as_f64(value)? as f32).to_le_bytes()),
        ColumnType::Double => out.extend_from_slice(&as_f64(value)?.to_le_bytes()),
        ColumnType::Date | ColumnType::NewDate | ColumnType::DateTime | ColumnType::Timestamp => encode_datetime(out, value)?,
        ColumnType::Time => encode_time(out, value)?,
        ColumnType::Null => return None,
        ColumnType::Decimal
        | ColumnType::NewDecimal
        | ColumnType::VarChar
        | ColumnType::Bit
        | ColumnType::Json
        | ColumnType::Enum
        | ColumnType::Set
        | ColumnType::TinyBlob
        | ColumnType::MediumBlob
        | ColumnType::LongBlob
        | ColumnType::Blob
        | ColumnType::VarString
        | ColumnType::String
        | ColumnType::Geometry => match value {
            BinaryValue::Bytes(bytes) => write_lenenc_bytes(out, bytes),
            other => write_lenenc_bytes(out, &other.to_text()?),
        },
    }
    Some(())
}

/// The two's-complement bits of an integer value; the column width truncates them.
fn integer_bits(value: &BinaryValue) -> Option<u64> {
    match value {
        BinaryValue::Int(value) => Some(*value as u64),
        BinaryValue::UInt(value) => Some(*value),
        _ => None,
    }
}

fn as_f64(value: &BinaryValue) -> Option<f64> {
    match value {
        BinaryValue::Float(value) => Some(f64::from(*value)),
        BinaryValue::Double(value) => Some(*value),
        BinaryValue::Int(value) => Some(*value as f64),
        BinaryValue::UInt(value) => Some(*value as f64),
        _ => None,
    }
}

fn encode_datetime(out: &mut Vec<u8>, value: &BinaryValue) -> Option<()> {
    let (year, month, day, hour, minute, second, micro) = match *value {
        BinaryValue::Date { year, month, day } => (year, month, day, 0, 0, 0, 0),
        BinaryValue::DateTime { year, month, day, hour, minute, second, micro } => (year, month, day, hour, minute, second, micro),
        _ => return None,
    };
    let len = if micro != 0 {
        DATETIME_MICROS_LEN
    } else if hour != 0 || minute != 0 || second != 0 {
        DATETIME_LEN
    } else if year != 0 || month != 0 || day != 0 {
        DATE_LEN
    } else {
        0
    };
    out.push(len);
    if len >= DATE_LEN {
        out.extend_from_slice(&year.to_le_bytes());
        out.extend_from_slice(&[month, day]);
    }
    if len >= DATETIME_LEN {
        out.extend_from_slice(&[hour, minute, second]);
    }
    if len == DATETIME_MICROS_LEN {
        out.extend_from_slice(&micro.to_le_bytes());
    }
    Some(())
}

fn encode_time(out: &mut Vec<u8>, value: &BinaryValue) -> Option<()> {
    let BinaryValue::Time { negative, days, hours, minutes, seconds, micro } = *value else {
        return None;
    };
    let len = if micro != 0 {
        TIME_MICROS_LEN
    } else if days != 0 || hours != 0 || minutes != 0 || seconds != 0 {
        TIME_LEN
    } else {
        0
    };
    out.push(len);
    if len >= TIME_LEN {
        out.push(u8::from(negative));
        out.extend_from_slice(&days.to_le_bytes());
        out.extend_from_slice(&[hours, minutes, seconds]);
    }
    if len == TIME_MICROS_LEN {
        out.extend_from_slice(&micro.to_le_bytes());
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(column_types: &[ColumnType], values: &[BinaryValue]) -> Vec<u8> {
        let mut out = Vec::new();
        encode_binary_row(&mut out, column_types, values).unwrap();
        out
    }

    fn single(column_type: ColumnType, value: BinaryValue) -> Vec<u8> {
        let bytes = row(&[column_type], &[value]);
        assert_eq!(bytes[..2], [0x00, 0x00], "header and one-byte bitmap");
        bytes[2..].to_vec()
    }

    #[test]
    fn integers_use_their_column_width() {
        assert_eq!(single(ColumnType::Tiny, BinaryValue::Int(-1)), [0xFF]);
        assert_eq!(single(ColumnType::Tiny, BinaryValue::UInt(200)), [200]);
        assert_eq!(single(ColumnType::Short, BinaryValue::Int(-2)), [0xFE, 0xFF]);
        assert_eq!(single(ColumnType::Year, BinaryValue::UInt(2024)), 2024u16.to_le_bytes());
        assert_eq!(single(ColumnType::Long, BinaryValue::Int(1)), [1, 0, 0, 0]);
        assert_eq!(single(ColumnType::Int24, BinaryValue::Int(-1)), [0xFF; 4]);
        assert_eq!(single(ColumnType::LongLong, BinaryValue::UInt(u64::MAX)), [0xFF; 8]);
        assert_eq!(single(ColumnType::LongLong, BinaryValue::Int(258)), [2, 1, 0, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn floats_and_doubles() {
        assert_eq!(single(ColumnType::Float, BinaryValue::Float(1.5)), 1.5f32.to_le_bytes());
        assert_eq!(single(ColumnType::Double, BinaryValue::Double(-2.25)), (-2.25f64).to_le_bytes());
        assert_eq!(single(ColumnType::Double, BinaryValue::Int(3)), 3.0f64.to_le_bytes());
    }

    #[test]
    fn strings_decimals_and_blobs_are_lenenc() {
        assert_eq!(single(ColumnType::VarString, BinaryValue::Bytes(b"abc".to_vec())), b"\x03abc");
        assert_eq!(single(ColumnType::NewDecimal, BinaryValue::Bytes(b"1.50".to_vec())), b"\x041.50");
        assert_eq!(single(ColumnType::Blob, BinaryValue::Bytes(vec![0; 300]))[..3], [0xFC, 0x2C, 0x01]);
        assert_eq!(single(ColumnType::Json, BinaryValue::Bytes(b"{}".to_vec())), b"\x02{}");
        assert_eq!(single(ColumnType::NewDecimal, BinaryValue::Int(-12)), b"\x03-12");
    }

    #[test]
    fn dates_use_the_shortest_form() {
        let zero = BinaryValue::DateTime { year: 0, month: 0, day: 0, hour: 0, minute: 0, second: 0, micro: 0 };
        assert_eq!(single(ColumnType::DateTime, zero), [0]);
        assert_eq!(single(ColumnType::Date, BinaryValue::Date { year: 2024, month: 5, day: 17 }), [4, 0xE8, 0x07, 5, 17]);
        let midnight = BinaryValue::DateTime { year: 2024, month: 5, day: 17, hour: 0, minute: 0, second: 0, micro: 0 };
        assert_eq!(single(ColumnType::Timestamp, midnight), [4, 0xE8, 0x07, 5, 17]);
        let seconds = BinaryValue::DateTime { year: 2024, month: 5, day: 17, hour: 1, minute: 2, second: 3, micro: 0 };
        assert_eq!(single(ColumnType::DateTime, seconds), [7, 0xE8, 0x07, 5, 17, 1, 2, 3]);
        let micros = BinaryValue::DateTime { year: 2024, month: 5, day: 17, hour: 0, minute: 0, second: 0, micro: 5 };
        assert_eq!(single(ColumnType::DateTime, micros), [11, 0xE8, 0x07, 5, 17, 0, 0, 0, 5, 0, 0, 0]);
    }

    #[test]
    fn times_use_the_shortest_form() {
        let zero = BinaryValue::Time { negative: false, days: 0, hours: 0, minutes: 0, seconds: 0, micro: 0 };
        assert_eq!(single(ColumnType::Time, zero), [0]);
        let time = BinaryValue::Time { negative: true, days: 1, hours: 2, minutes: 3, seconds: 4, micro: 0 };
        assert_eq!(single(ColumnType::Time, time), [8, 1, 1, 0, 0, 0, 2, 3, 4]);
        let time = BinaryValue::Time { negative: false, days: 0, hours: 0, minutes: 0, seconds: 0, micro: 7 };
        assert_eq!(single(ColumnType::Time, time), [12, 0, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0]);
    }

    #[test]
    fn null_bitmap_starts_at_bit_two() {
        let types = [ColumnType::Long; 7];
        let mut values = vec![BinaryValue::Int(1); 7];
        values[0] = BinaryValue::Null;
        values[6] = BinaryValue::Null;
        let bytes = row(&types, &values);
        // 7 columns + 2 offset bits = 9 bits = 2 bytes; column 0 is bit 2, column 6 is bit 8.
        assert_eq!(bytes[..3], [0x00, 0b0000_0100, 0b0000_0001]);
        assert_eq!(bytes.len(), 3 + 5 * 4);
        assert_eq!(row(&[ColumnType::Null], &[BinaryValue::Null]), [0x00, 0b100]);
    }

    #[test]
    fn mismatched_values_are_errors_and_write_nothing() {
        let mut writer = PacketWriter::new(3);
        let error = write_binary_row(&mut writer, &[ColumnType::Tiny, ColumnType::Long], &[BinaryValue::Int(1), BinaryValue::Bytes(vec![1])]);
        assert_eq!(error, Err(ProtocolError::ValueTypeMismatch { column: 1, column_type: ColumnType::Long }));
        assert!(writer.buf.is_empty());
        assert_eq!(writer.seq, 3);
        let error = write_binary_row(&mut writer, &[ColumnType::Tiny], &[]);
        assert_eq!(error, Err(ProtocolError::ColumnCountMismatch { expected: 1, got: 0 }));

        write_binary_row(&mut writer, &[ColumnType::Tiny], &[BinaryValue::Int(9)]).unwrap();
        assert_eq!(writer.buf, [3, 0, 0, 3, 0x00, 0x00, 9]);
        assert_eq!(writer.seq, 4);
    }
}
