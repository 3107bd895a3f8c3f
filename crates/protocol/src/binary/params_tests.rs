//! Byte-level tests of `COM_STMT_EXECUTE` parameter decoding.

use super::*;
use crate::constants::capabilities::CLIENT_PROTOCOL_41;

const CAPS: u32 = CLIENT_PROTOCOL_41;
const CAPS_ATTRS: u32 = CLIENT_PROTOCOL_41 | CLIENT_QUERY_ATTRIBUTES;

/// Builds an execute parameter block binding `types` (with the unsigned flag) and `values`.
fn block(null_bitmap: &[u8], types: &[(ColumnType, bool)], values: &[u8]) -> Vec<u8> {
    let mut out = null_bitmap.to_vec();
    out.push(1);
    for (column_type, unsigned) in types {
        out.push(column_type.as_u8());
        out.push(if *unsigned { UNSIGNED_PARAM_FLAG } else { 0 });
    }
    out.extend_from_slice(values);
    out
}

fn decode_one(column_type: ColumnType, unsigned: bool, value: &[u8]) -> Result<BinaryValue, ProtocolError> {
    let mut params = StatementParams::new(1);
    let decoded = params.decode_execute(&block(&[0], &[(column_type, unsigned)], value), 0, CAPS)?;
    assert!(decoded.attributes.is_empty());
    Ok(decoded.values.into_iter().next().unwrap())
}

#[test]
fn integers_of_every_width_signed_and_unsigned() {
    use BinaryValue::{Int, UInt};
    assert_eq!(decode_one(ColumnType::Tiny, false, &[0xFF]), Ok(Int(-1)));
    assert_eq!(decode_one(ColumnType::Tiny, true, &[0xFF]), Ok(UInt(255)));
    assert_eq!(decode_one(ColumnType::Short, false, &[0xFE, 0xFF]), Ok(Int(-2)));
    assert_eq!(decode_one(ColumnType::Short, true, &[0xFE, 0xFF]), Ok(UInt(65534)));
    assert_eq!(decode_one(ColumnType::Year, true, &2024u16.to_le_bytes()), Ok(UInt(2024)));
    assert_eq!(decode_one(ColumnType::Long, false, &(-7i32).to_le_bytes()), Ok(Int(-7)));
    assert_eq!(decode_one(ColumnType::Int24, false, &100i32.to_le_bytes()), Ok(Int(100)));
    assert_eq!(decode_one(ColumnType::Long, true, &u32::MAX.to_le_bytes()), Ok(UInt(u64::from(u32::MAX))));
    assert_eq!(decode_one(ColumnType::LongLong, false, &i64::MIN.to_le_bytes()), Ok(Int(i64::MIN)));
    assert_eq!(decode_one(ColumnType::LongLong, true, &u64::MAX.to_le_bytes()), Ok(UInt(u64::MAX)));
}

#[test]
fn floats_strings_decimals_and_null_type() {
    assert_eq!(decode_one(ColumnType::Float, false, &1.5f32.to_le_bytes()), Ok(BinaryValue::Float(1.5)));
    assert_eq!(decode_one(ColumnType::Double, false, &(-0.25f64).to_le_bytes()), Ok(BinaryValue::Double(-0.25)));
    for column_type in [
        ColumnType::VarString,
        ColumnType::String,
        ColumnType::VarChar,
        ColumnType::Blob,
        ColumnType::TinyBlob,
        ColumnType::MediumBlob,
        ColumnType::LongBlob,
        ColumnType::Json,
        ColumnType::Decimal,
        ColumnType::NewDecimal,
        ColumnType::Bit,
        ColumnType::Enum,
        ColumnType::Set,
        ColumnType::Geometry,
    ] {
        assert_eq!(decode_one(column_type, false, b"\x0412.5"), Ok(BinaryValue::Bytes(b"12.5".to_vec())));
    }
    assert_eq!(decode_one(ColumnType::Null, false, &[]), Ok(BinaryValue::Null));
    assert_eq!(decode_one(ColumnType::NewDate, false, &[0]), Err(ProtocolError::UnsupportedParamType(14)));
}

#[test]
fn dates_and_datetimes_in_every_length() {
    let date = BinaryValue::Date { year: 2024, month: 5, day: 17 };
    assert_eq!(decode_one(ColumnType::Date, false, &[4, 0xE8, 0x07, 5, 17]), Ok(date));
    assert_eq!(decode_one(ColumnType::Date, false, &[0]), Ok(BinaryValue::Date { year: 0, month: 0, day: 0 }));
    let zero = BinaryValue::DateTime { year: 0, month: 0, day: 0, hour: 0, minute: 0, second: 0, micro: 0 };
    assert_eq!(decode_one(ColumnType::DateTime, false, &[0]), Ok(zero));
    let midnight = BinaryValue::DateTime { year: 2024, month: 5, day: 17, hour: 0, minute: 0, second: 0, micro: 0 };
    assert_eq!(decode_one(ColumnType::Timestamp, false, &[4, 0xE8, 0x07, 5, 17]), Ok(midnight));
    let seconds = BinaryValue::DateTime { year: 2024, month: 5, day: 17, hour: 13, minute: 14, second: 15, micro: 0 };
    assert_eq!(decode_one(ColumnType::DateTime, false, &[7, 0xE8, 0x07, 5, 17, 13, 14, 15]), Ok(seconds));
    let micros = BinaryValue::DateTime { year: 2024, month: 5, day: 17, hour: 13, minute: 14, second: 15, micro: 999_999 };
    let mut bytes = vec![11, 0xE8, 0x07, 5, 17, 13, 14, 15];
    bytes.extend_from_slice(&999_999u32.to_le_bytes());
    assert_eq!(decode_one(ColumnType::DateTime, false, &bytes), Ok(micros));
    assert_eq!(decode_one(ColumnType::DateTime, false, &[5, 0, 0, 0, 0, 0]), Err(ProtocolError::InvalidTemporalLength { len: 5 }));
}

#[test]
fn times_in_every_length() {
    let zero = BinaryValue::Time { negative: false, days: 0, hours: 0, minutes: 0, seconds: 0, micro: 0 };
    assert_eq!(decode_one(ColumnType::Time, false, &[0]), Ok(zero));
    let time = BinaryValue::Time { negative: true, days: 2, hours: 3, minutes: 4, seconds: 5, micro: 0 };
    assert_eq!(decode_one(ColumnType::Time, false, &[8, 1, 2, 0, 0, 0, 3, 4, 5]), Ok(time));
    let time = BinaryValue::Time { negative: false, days: 0, hours: 1, minutes: 2, seconds: 3, micro: 40 };
    assert_eq!(decode_one(ColumnType::Time, false, &[12, 0, 0, 0, 0, 0, 1, 2, 3, 40, 0, 0, 0]), Ok(time));
    assert_eq!(decode_one(ColumnType::Time, false, &[7]), Err(ProtocolError::InvalidTemporalLength { len: 7 }));
}

#[test]
fn null_bitmap_types_reuse_and_long_data() {
    let mut params = StatementParams::new(3);
    params.append_long_data(2, b"big ").unwrap();
    params.append_long_data(2, b"blob").unwrap();
    assert_eq!(params.long_data_len_total(), 8);
    let types = [(ColumnType::LongLong, false), (ColumnType::VarString, false), (ColumnType::Blob, false)];
    // Parameter 1 is NULL; parameter 2 came as long data, so only parameter 0 is inline.
    let first = params.decode_execute(&block(&[0b010], &types, &5i64.to_le_bytes()), 0, CAPS).unwrap();
    assert_eq!(first.values, [BinaryValue::Int(5), BinaryValue::Null, BinaryValue::Bytes(b"big blob".to_vec())]);
    assert_eq!(params.long_data_len_total(), 0, "long data is consumed by execute");

    // Re-execute without types: the previous binding applies.
    let mut again = vec![0b000, 0];
    again.extend_from_slice(&6i64.to_le_bytes());
    again.extend_from_slice(b"\x01a\x01b");
    let second = params.decode_execute(&again, 0, CAPS).unwrap();
    assert_eq!(second.values[0], BinaryValue::Int(6));
    assert_eq!(second.values[2], BinaryValue::Bytes(b"b".to_vec()));
    assert_eq!(params.bound_types().unwrap()[0], ParamType { column_type: ColumnType::LongLong, unsigned: false });
}

/// Regression: PHP's mysqlnd sends long data and also sets the parameter's NULL bit; MySQL
/// uses the long data, and Quill stored NULL.
#[test]
fn long_data_wins_over_the_null_bit() {
    let mut params = StatementParams::new(2);
    params.append_long_data(1, b"\x00\xffdata").unwrap();
    let types = [(ColumnType::LongLong, false), (ColumnType::Blob, false)];
    let decoded = params.decode_execute(&block(&[0b10], &types, &7i64.to_le_bytes()), 0, CAPS).unwrap();
    assert_eq!(decoded.values, [BinaryValue::Int(7), BinaryValue::Bytes(b"\x00\xffdata".to_vec())]);
    // Without long data the NULL bit means NULL.
    let decoded = params.decode_execute(&block(&[0b10], &types, &7i64.to_le_bytes()), 0, CAPS).unwrap();
    assert_eq!(decoded.values[1], BinaryValue::Null);
}

#[test]
fn execute_without_any_bound_types_is_an_error() {
    let mut params = StatementParams::new(1);
    assert_eq!(params.decode_execute(&[0, 0, 1], 0, CAPS), Err(ProtocolError::MissingParamTypes));
}

#[test]
fn long_data_for_a_missing_parameter_is_an_error() {
    let mut params = StatementParams::new(1);
    assert_eq!(params.append_long_data(1, b"x"), Err(ProtocolError::ParamIdOutOfRange { param_id: 1, num_params: 1 }));
}

#[test]
fn statement_without_parameters_ignores_the_rest() {
    let mut params = StatementParams::new(0);
    assert_eq!(params.decode_execute(&[], 0, CAPS), Ok(ExecuteParams::default()));
    assert_eq!(params.decode_execute(&[], 0, CAPS_ATTRS), Ok(ExecuteParams::default()));
}

#[test]
fn query_attributes_layout_with_parameter_count_and_names() {
    let mut params = StatementParams::new(1);
    // count 2 (one positional, one attribute), bitmap, flag, types with names, values.
    let mut payload = vec![2, 0b00, 1];
    payload.extend_from_slice(&[ColumnType::Long.as_u8(), 0, 0]);
    payload.extend_from_slice(&[ColumnType::VarString.as_u8(), 0, 3]);
    payload.extend_from_slice(b"tag");
    payload.extend_from_slice(&42i32.to_le_bytes());
    payload.extend_from_slice(b"\x02hi");
    let decoded = params.decode_execute(&payload, 0, CAPS_ATTRS).unwrap();
    assert_eq!(decoded.values, [BinaryValue::Int(42)]);
    assert_eq!(decoded.attributes, [QueryAttribute { name: "tag".into(), value: BinaryValue::Bytes(b"hi".to_vec()) }]);

    let mut only_attributes = StatementParams::new(0);
    let mut payload = vec![1, 0b0, 1, ColumnType::Tiny.as_u8(), UNSIGNED_PARAM_FLAG, 1, b'n', 200];
    let decoded = only_attributes.decode_execute(&payload, PARAMETER_COUNT_AVAILABLE, CAPS_ATTRS).unwrap();
    assert_eq!(decoded.attributes, [QueryAttribute { name: "n".into(), value: BinaryValue::UInt(200) }]);
    payload[0] = 0;
    assert!(params.decode_execute(&payload, 0, CAPS_ATTRS).is_err(), "fewer than the statement's params");
}

#[test]
fn truncated_and_garbage_blocks_are_errors_not_panics() {
    let types = [(ColumnType::DateTime, false), (ColumnType::Time, false), (ColumnType::VarString, true)];
    let mut values = vec![11, 0xE8, 0x07, 5, 17, 13, 14, 15, 1, 0, 0, 0];
    values.extend_from_slice(&[8, 1, 2, 0, 0, 0, 3, 4, 5]);
    values.extend_from_slice(b"\x03abc");
    let full = block(&[0], &types, &values);
    assert!(StatementParams::new(3).decode_execute(&full, 0, CAPS).is_ok());
    for len in 0..full.len() {
        assert!(StatementParams::new(3).decode_execute(&full[..len], 0, CAPS).is_err(), "prefix {len}");
    }
    let huge_count = [0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F, 0, 1];
    assert!(StatementParams::new(1).decode_execute(&huge_count, 0, CAPS_ATTRS).is_err());
    assert_eq!(StatementParams::new(1).decode_execute(&[0, 1, 99, 0], 0, CAPS), Err(ProtocolError::UnsupportedParamType(99)));
}
