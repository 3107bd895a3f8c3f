//! The first row encoding of the commit log and checkpoints ("version 1"), which the server
//! now only reads: the rows of PUT_V1 changes in logs, and of version 1 and 2 checkpoints,
//! written before rows were logged as row images (`crate::format::log_row`). The encoder is
//! kept for tests that make such old data.
//!
//! Layout (little-endian; specified in `docs/log-format.md`, "Row encoding, version 1"): a
//! `u16` count of values, then each value as a tag byte and its payload:
//!
//! | tag | value | payload |
//! | --- | --- | --- |
//! | 0 | NULL | none |
//! | 1 | Int | i64 |
//! | 2 | UInt | u64 |
//! | 3 | Double | f64 bits as u64 |
//! | 4 | Decimal | u16 length, then its canonical decimal text (ASCII) |
//! | 5 | Str | u32 length, then UTF-8 |
//! | 6 | Bytes | u32 length, then the bytes |
//! | 7 | Date | i32 days (chrono's days from the common era) |
//! | 8 | DateTime | i64 microseconds since 1970-01-01 |
//! | 9 | Time | i64 signed microseconds |
//!
//! Decoding is total: malformed input gives `None`, never a panic, since these bytes come
//! back from disk.

use quill_io::cursor::{take, take_array, take_len32};

use crate::decimal::Decimal;
use crate::value::{Row, Value};

pub const TAG_NULL: u8 = 0;
pub const TAG_INT: u8 = 1;
pub const TAG_UINT: u8 = 2;
pub const TAG_DOUBLE: u8 = 3;
pub const TAG_DECIMAL: u8 = 4;
pub const TAG_STR: u8 = 5;
pub const TAG_BYTES: u8 = 6;
pub const TAG_DATE: u8 = 7;
pub const TAG_DATETIME: u8 = 8;
pub const TAG_TIME: u8 = 9;

/// Appends the encoding of `row` to `out`.
///
/// # Panics
/// If the row has more than `u16::MAX` values or a value longer than `u32::MAX` bytes; the
/// SQL layer's limits keep rows far below both.
pub fn encode_row(out: &mut Vec<u8>, row: &Row) {
    put_count(out, row.len());
    for value in row {
        match value {
            Value::Null => put_value(out, ValueRef::Null),
            Value::Int(i) => put_value(out, ValueRef::Int(*i)),
            Value::UInt(u) => put_value(out, ValueRef::UInt(*u)),
            Value::Double(f) => put_value(out, ValueRef::Double(*f)),
            Value::Decimal(d) => put_value(out, ValueRef::DecimalText(&d.to_string())),
            Value::Str(s) => put_value(out, ValueRef::Str(s)),
            Value::Bytes(b) => put_value(out, ValueRef::Bytes(b)),
            Value::Date(d) => put_value(out, ValueRef::Date(*d)),
            Value::DateTime(us) => put_value(out, ValueRef::DateTime(*us)),
            Value::Time(us) => put_value(out, ValueRef::Time(*us)),
        }
    }
}

/// A value as the encoding writes it, borrowed: from a [`Row`], or straight from a row
/// image of the row store (`crate::format`), which so reaches the log without a `Row`.
#[derive(Debug, Clone, Copy)]
pub(crate) enum ValueRef<'a> {
    Null,
    Int(i64),
    UInt(u64),
    Double(f64),
    /// A DECIMAL's canonical text (`Decimal`'s `Display`).
    DecimalText(&'a str),
    Str(&'a str),
    Bytes(&'a [u8]),
    Date(i32),
    DateTime(i64),
    Time(i64),
}

/// The `u16` count of values that starts a row's encoding.
///
/// # Panics
/// If there are more than `u16::MAX` values (the SQL layer's limits keep rows far below).
pub(crate) fn put_count(out: &mut Vec<u8>, count: usize) {
    out.extend_from_slice(&u16::try_from(count).expect("at most 65535 columns").to_le_bytes());
}

/// Appends one value's tag and payload.
pub(crate) fn put_value(out: &mut Vec<u8>, value: ValueRef<'_>) {
    match value {
        ValueRef::Null => out.push(TAG_NULL),
        ValueRef::Int(i) => put_fixed(out, TAG_INT, &i.to_le_bytes()),
        ValueRef::UInt(u) => put_fixed(out, TAG_UINT, &u.to_le_bytes()),
        ValueRef::Double(f) => put_fixed(out, TAG_DOUBLE, &f.to_bits().to_le_bytes()),
        ValueRef::DecimalText(text) => {
            let len = u16::try_from(text.len()).expect("a DECIMAL has at most 65 digits");
            put_fixed(out, TAG_DECIMAL, &len.to_le_bytes());
            out.extend_from_slice(text.as_bytes());
        }
        ValueRef::Str(s) => put_bytes(out, TAG_STR, s.as_bytes()),
        ValueRef::Bytes(b) => put_bytes(out, TAG_BYTES, b),
        ValueRef::Date(d) => put_fixed(out, TAG_DATE, &d.to_le_bytes()),
        ValueRef::DateTime(us) => put_fixed(out, TAG_DATETIME, &us.to_le_bytes()),
        ValueRef::Time(us) => put_fixed(out, TAG_TIME, &us.to_le_bytes()),
    }
}

/// A tag and its fixed-size payload.
fn put_fixed(out: &mut Vec<u8>, tag: u8, payload: &[u8]) {
    out.push(tag);
    out.extend_from_slice(payload);
}

/// A tag, a `u32` length and the bytes.
fn put_bytes(out: &mut Vec<u8>, tag: u8, bytes: &[u8]) {
    put_fixed(out, tag, &u32::try_from(bytes.len()).expect("a value fits in 4 GiB").to_le_bytes());
    out.extend_from_slice(bytes);
}

/// What [`row_bytes`] reserves for a DECIMAL's text: a DECIMAL(10,2) needs at most 12
/// bytes, and a wider one costs one more reallocation.
const DECIMAL_TEXT_RESERVE_BYTES: usize = 24;

/// The length of `row`'s encoding: exact, but for DECIMALs, whose text length is only known
/// once written (counted as `DECIMAL_TEXT_RESERVE_BYTES`).
#[must_use]
pub fn encoded_len_estimate(row: &Row) -> usize {
    2 + row
        .iter()
        .map(|v| match v {
            Value::Null => 1,
            Value::Date(_) => 5,
            Value::Int(_) | Value::UInt(_) | Value::Double(_) | Value::DateTime(_) | Value::Time(_) => 9,
            Value::Decimal(_) => 3 + DECIMAL_TEXT_RESERVE_BYTES,
            Value::Str(s) => 5 + s.len(),
            Value::Bytes(b) => 5 + b.len(),
        })
        .sum::<usize>()
}

/// The encoding of `row` as a new vector, allocated once for rows of the common types.
#[must_use]
pub fn row_bytes(row: &Row) -> Vec<u8> {
    let reserve = encoded_len_estimate(row);
    let mut out = Vec::with_capacity(reserve);
    encode_row(&mut out, row);
    out
}

/// Decodes a row; `None` if `bytes` is not exactly one well-formed row.
#[must_use]
pub fn decode_row(mut bytes: &[u8]) -> Option<Row> {
    let count = u16::from_le_bytes(take_array::<2>(&mut bytes)?);
    let mut row = Vec::with_capacity(usize::from(count));
    for _ in 0..count {
        let [tag] = take_array::<1>(&mut bytes)?;
        let value = match tag {
            TAG_NULL => Value::Null,
            TAG_INT => Value::Int(i64::from_le_bytes(take_array(&mut bytes)?)),
            TAG_UINT => Value::UInt(u64::from_le_bytes(take_array(&mut bytes)?)),
            TAG_DOUBLE => Value::Double(f64::from_bits(u64::from_le_bytes(take_array(&mut bytes)?))),
            TAG_DECIMAL => {
                let len = usize::from(u16::from_le_bytes(take_array(&mut bytes)?));
                let text = std::str::from_utf8(take(&mut bytes, len)?).ok()?;
                Value::Decimal(text.parse::<Decimal>().ok()?)
            }
            TAG_STR => Value::Str(String::from_utf8(take_len32(&mut bytes)?.to_vec()).ok()?),
            TAG_BYTES => Value::Bytes(take_len32(&mut bytes)?.to_vec()),
            TAG_DATE => Value::Date(i32::from_le_bytes(take_array(&mut bytes)?)),
            TAG_DATETIME => Value::DateTime(i64::from_le_bytes(take_array(&mut bytes)?)),
            TAG_TIME => Value::Time(i64::from_le_bytes(take_array(&mut bytes)?)),
            _ => return None,
        };
        row.push(value);
    }
    bytes.is_empty().then_some(row)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn a_row_without_decimals_is_encoded_in_one_exact_allocation() {
        let row = vec![Value::Null, Value::Int(-3), Value::Str("héllo".into()), Value::Bytes(vec![0, 1]), Value::Date(7), Value::Time(5)];
        let bytes = row_bytes(&row);
        assert_eq!(bytes.capacity(), bytes.len());
        assert_eq!(decode_row(&bytes), Some(row));
    }

    /// A row with a value of every kind, for the encodings' tests.
    pub(crate) fn every_kind() -> Row {
        vec![
            Value::Null,
            Value::Int(-42),
            Value::UInt(u64::MAX),
            Value::Double(-0.5),
            Value::Decimal("-12345678901234567890.123456789".parse().unwrap()),
            Value::Str("héllo ✓".into()),
            Value::Bytes(vec![0, 255, 7]),
            Value::Date(738_000),
            Value::DateTime(1_700_000_000_123_456),
            Value::Time(-3_020_399_000_000),
        ]
    }

    #[test]
    fn every_kind_of_value_round_trips() {
        let row = every_kind();
        assert_eq!(decode_row(&row_bytes(&row)), Some(row));
        assert_eq!(decode_row(&row_bytes(&Vec::new())), Some(Vec::new()));
    }

    #[test]
    fn truncated_padded_or_mistagged_bytes_do_not_decode() {
        let bytes = row_bytes(&every_kind());
        for cut in 0..bytes.len() {
            assert_eq!(decode_row(&bytes[..cut]), None, "cut at {cut}");
        }
        let mut padded = bytes.clone();
        padded.push(0);
        assert_eq!(decode_row(&padded), None);
        assert_eq!(decode_row(&[1, 0, 0x7f]), None);
    }
}
