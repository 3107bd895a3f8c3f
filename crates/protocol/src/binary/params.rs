//! Decoding `COM_STMT_EXECUTE` parameters (and COM_QUERY query attributes, which use the same
//! layout).
//!
//! After `int<1>` command, `int<4>` statement id, `int<1>` flags and `int<4>` iteration count
//! (split off by `command::parse_command`), the execute payload holds, when the statement has
//! parameters or (with `CLIENT_QUERY_ATTRIBUTES`) the flags carry `PARAMETER_COUNT_AVAILABLE`:
//! with `CLIENT_QUERY_ATTRIBUTES` an `int<lenenc>` parameter count, which may exceed the
//! statement's own count (the extra values are query attributes); then, if the count is not
//! zero, a NULL bitmap of `(count + 7) / 8` bytes (bit i set = parameter i is NULL), the
//! new-params-bound flag, when it is 1 an `int<2>` type per parameter (type byte, then
//! `UNSIGNED_PARAM_FLAG` in the second byte) each followed with `CLIENT_QUERY_ATTRIBUTES` by a
//! lenenc name, and finally the non-NULL values in binary form.
//!
//! Invariants kept by `StatementParams`, one per prepared statement:
//! - types are sent only when the flag is 1; otherwise the last bound ones are reused, and an
//!   execute before any binding is `MissingParamTypes`;
//! - a parameter that received `COM_STMT_SEND_LONG_DATA` is not in the value list; its data is
//!   used instead, even when its NULL bit is set (as MySQL does, and PHP's mysqlnd relies on),
//!   and then forgotten, as after every execute;
//! - sizes read from the wire are checked against the bytes present before anything is
//!   allocated, so garbage input costs at most its own length.

use crate::binary::{BinaryValue, DATE_LEN, DATETIME_LEN, DATETIME_MICROS_LEN, TIME_LEN, TIME_MICROS_LEN};
use crate::codec::Reader;
use crate::constants::ColumnType;
use crate::constants::capabilities::CLIENT_QUERY_ATTRIBUTES;
use crate::constants::command_bytes::PARAMETER_COUNT_AVAILABLE;
use crate::error::ProtocolError;

/// Bit of a parameter type's second byte that marks an unsigned integer.
pub const UNSIGNED_PARAM_FLAG: u8 = 0x80;

/// The declared type of one bound parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParamType {
    pub column_type: ColumnType,
    pub unsigned: bool,
}

/// A named value sent alongside a query (`mysql_bind_param` / query attributes).
#[derive(Debug, Clone, PartialEq)]
pub struct QueryAttribute {
    pub name: String,
    pub value: BinaryValue,
}

/// The decoded parameters of one execution.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ExecuteParams {
    /// One value per `?` of the statement, in order.
    pub values: Vec<BinaryValue>,
    /// Values beyond the statement's own parameters, and positional ones that carried a name.
    pub attributes: Vec<QueryAttribute>,
}

/// Per-statement parameter state that lives between executions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatementParams {
    num_params: usize,
    /// Types (and names, empty without query attributes) from the last binding.
    bound: Option<Vec<(ParamType, String)>>,
    long_data: Vec<Option<Vec<u8>>>,
}

impl StatementParams {
    /// State for a statement prepared with `num_params` placeholders.
    #[must_use]
    pub fn new(num_params: u16) -> Self {
        let num_params = usize::from(num_params);
        Self { num_params, bound: None, long_data: vec![None; num_params] }
    }

    #[must_use]
    pub fn num_params(&self) -> usize {
        self.num_params
    }

    /// Types of the last binding, if any.
    #[must_use]
    pub fn bound_types(&self) -> Option<Vec<ParamType>> {
        self.bound.as_ref().map(|bound| bound.iter().map(|(param_type, _)| *param_type).collect())
    }

    /// Bytes of long data collected so far for all parameters (for a size limit).
    #[must_use]
    pub fn long_data_len_total(&self) -> usize {
        self.long_data.iter().flatten().map(Vec::len).sum()
    }

    /// `COM_STMT_SEND_LONG_DATA`: appends `data` to parameter `param_id`. The server sends no
    /// reply to that command, so the caller should remember an error and report it at the next
    /// execute, as MySQL does.
    pub fn append_long_data(&mut self, param_id: u16, data: &[u8]) -> Result<(), ProtocolError> {
        let num_params = self.num_params;
        let slot = self.long_data.get_mut(usize::from(param_id)).ok_or(ProtocolError::ParamIdOutOfRange { param_id, num_params })?;
        slot.get_or_insert_with(Vec::new).extend_from_slice(data);
        Ok(())
    }

    /// `COM_STMT_RESET`: forgets long data; bound types stay.
    pub fn reset(&mut self) {
        self.long_data.iter_mut().for_each(|slot| *slot = None);
    }

    /// Decodes the parameter block of a `COM_STMT_EXECUTE` (`params` as split off by
    /// `command::parse_command`), given the command's `flags` and the negotiated
    /// `capabilities`. Long data is consumed whether or not decoding succeeds.
    pub fn decode_execute(&mut self, params: &[u8], flags: u8, capabilities: u32) -> Result<ExecuteParams, ProtocolError> {
        let result = self.decode_execute_inner(params, flags, capabilities);
        self.reset();
        result
    }

    fn decode_execute_inner(&mut self, params: &[u8], flags: u8, capabilities: u32) -> Result<ExecuteParams, ProtocolError> {
        let query_attributes = capabilities & CLIENT_QUERY_ATTRIBUTES != 0;
        let count_sent = query_attributes && flags & PARAMETER_COUNT_AVAILABLE != 0;
        if self.num_params == 0 && !count_sent {
            return Ok(ExecuteParams::default());
        }
        let mut reader = Reader::new(params);
        let parameter_count = if query_attributes {
            let count = reader.lenenc_int("parameter count")?;
            usize::try_from(count).map_err(|_| ProtocolError::Truncated { what: "parameter count" })?
        } else {
            self.num_params
        };
        if parameter_count < self.num_params {
            return Err(ProtocolError::ParamCountMismatch { expected: self.num_params, got: parameter_count });
        }
        if parameter_count == 0 {
            return Ok(ExecuteParams::default());
        }
        let null_bitmap = reader.bytes(parameter_count.div_ceil(8), "NULL bitmap")?;
        let new_params_bound = reader.u8("new-params-bound flag")? != 0;
        if new_params_bound {
            self.bound = Some(read_param_types(&mut reader, parameter_count, query_attributes)?);
        }
        let bound = self.bound.as_ref().ok_or(ProtocolError::MissingParamTypes)?;
        if bound.len() != parameter_count {
            return Err(ProtocolError::ParamCountMismatch { expected: bound.len(), got: parameter_count });
        }
        let mut decoded = ExecuteParams { values: Vec::with_capacity(self.num_params), attributes: Vec::new() };
        for (index, (param_type, name)) in bound.iter().enumerate() {
            let is_null = null_bitmap[index / 8] & (1 << (index % 8)) != 0;
            let long_data = self.long_data.get_mut(index).and_then(Option::take);
            // Long data wins over the NULL bit, as in MySQL: PHP's mysqlnd sets both.
            let value = match (is_null, long_data) {
                (_, Some(data)) => BinaryValue::Bytes(data),
                (true, None) => BinaryValue::Null,
                (false, None) => read_binary_value(&mut reader, *param_type)?,
            };
            if index >= self.num_params || !name.is_empty() {
                decoded.attributes.push(QueryAttribute { name: name.clone(), value: value.clone() });
            }
            if index < self.num_params {
                decoded.values.push(value);
            }
        }
        Ok(decoded)
    }
}

/// `count` parameter types, each followed by a lenenc name when `with_names`.
fn read_param_types(reader: &mut Reader<'_>, count: usize, with_names: bool) -> Result<Vec<(ParamType, String)>, ProtocolError> {
    // Each type takes at least 2 bytes, which bounds the allocation by the input.
    let mut types = Vec::with_capacity(count.min(reader.remaining() / 2));
    for _ in 0..count {
        let type_byte = reader.u8("parameter type")?;
        let flag_byte = reader.u8("parameter flags")?;
        let column_type = ColumnType::from_u8(type_byte).ok_or(ProtocolError::UnsupportedParamType(type_byte))?;
        if !can_be_sent_by_client(column_type) {
            return Err(ProtocolError::UnsupportedParamType(type_byte));
        }
        let name = if with_names { String::from_utf8_lossy(reader.lenenc_bytes("parameter name")?).into_owned() } else { String::new() };
        types.push((ParamType { column_type, unsigned: flag_byte & UNSIGNED_PARAM_FLAG != 0 }, name));
    }
    Ok(types)
}

/// Whether a client may bind a parameter of this type (all but the legacy DATE form).
fn can_be_sent_by_client(column_type: ColumnType) -> bool {
    column_type != ColumnType::NewDate
}

/// The query attributes at the front of a `COM_QUERY` payload under `CLIENT_QUERY_ATTRIBUTES`:
/// `int<lenenc>` parameter count, `int<lenenc>` parameter set count (always 1), then, if the
/// count is not zero, the NULL bitmap, the new-params-bound flag (always 1), typed names and
/// values as in `COM_STMT_EXECUTE`.
pub(crate) fn read_query_attributes(reader: &mut Reader<'_>) -> Result<Vec<QueryAttribute>, ProtocolError> {
    let count = reader.lenenc_int("query attribute count")?;
    let count = usize::try_from(count).map_err(|_| ProtocolError::Truncated { what: "query attribute count" })?;
    let _parameter_set_count = reader.lenenc_int("query attribute set count")?;
    if count == 0 {
        return Ok(Vec::new());
    }
    let null_bitmap = reader.bytes(count.div_ceil(8), "query attribute NULL bitmap")?;
    if reader.u8("query attribute new-params-bound flag")? == 0 {
        return Err(ProtocolError::MissingParamTypes);
    }
    let types = read_param_types(reader, count, true)?;
    let mut attributes = Vec::with_capacity(types.len());
    for (index, (param_type, name)) in types.into_iter().enumerate() {
        let is_null = null_bitmap[index / 8] & (1 << (index % 8)) != 0;
        let value = if is_null { BinaryValue::Null } else { read_binary_value(reader, param_type)? };
        attributes.push(QueryAttribute { name, value });
    }
    Ok(attributes)
}

/// Reads one non-NULL value of `param_type`.
pub fn read_binary_value(reader: &mut Reader<'_>, param_type: ParamType) -> Result<BinaryValue, ProtocolError> {
    let integer = |value: u64, signed: i64| {
        if param_type.unsigned { BinaryValue::UInt(value) } else { BinaryValue::Int(signed) }
    };
    Ok(match param_type.column_type {
        ColumnType::Null => BinaryValue::Null,
        ColumnType::Tiny => {
            let byte = reader.u8("TINY value")?;
            integer(u64::from(byte), i64::from(byte as i8))
        }
        ColumnType::Short | ColumnType::Year => {
            let value = reader.u16_le("SHORT value")?;
            integer(u64::from(value), i64::from(value as i16))
        }
        ColumnType::Long | ColumnType::Int24 => {
            let value = reader.u32_le("LONG value")?;
            integer(u64::from(value), i64::from(value as i32))
        }
        ColumnType::LongLong => {
            let value = reader.u64_le("LONGLONG value")?;
            integer(value, value as i64)
        }
        ColumnType::Float => BinaryValue::Float(f32::from_le_bytes(reader.array("FLOAT value")?)),
        ColumnType::Double => BinaryValue::Double(f64::from_le_bytes(reader.array("DOUBLE value")?)),
        ColumnType::Date | ColumnType::NewDate | ColumnType::DateTime | ColumnType::Timestamp => {
            read_datetime(reader, param_type.column_type == ColumnType::Date)?
        }
        ColumnType::Time => read_time(reader)?,
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
        | ColumnType::Geometry => BinaryValue::Bytes(reader.lenenc_bytes("string value")?.to_vec()),
    })
}

/// DATE/DATETIME/TIMESTAMP: length 0, 4, 7 or 11. A DATE parameter of length 0 or 4 is a
/// `Date`; everything else a `DateTime`.
fn read_datetime(reader: &mut Reader<'_>, is_date: bool) -> Result<BinaryValue, ProtocolError> {
    let len = reader.u8("temporal length")?;
    let (mut year, mut month, mut day) = (0, 0, 0);
    let (mut hour, mut minute, mut second, mut micro) = (0, 0, 0, 0);
    if ![0, DATE_LEN, DATETIME_LEN, DATETIME_MICROS_LEN].contains(&len) {
        return Err(ProtocolError::InvalidTemporalLength { len });
    }
    if len >= DATE_LEN {
        year = reader.u16_le("year")?;
        month = reader.u8("month")?;
        day = reader.u8("day")?;
    }
    if len >= DATETIME_LEN {
        hour = reader.u8("hour")?;
        minute = reader.u8("minute")?;
        second = reader.u8("second")?;
    }
    if len == DATETIME_MICROS_LEN {
        micro = reader.u32_le("microseconds")?;
    }
    if is_date && len <= DATE_LEN {
        return Ok(BinaryValue::Date { year, month, day });
    }
    Ok(BinaryValue::DateTime { year, month, day, hour, minute, second, micro })
}

/// TIME: length 0, 8 or 12.
fn read_time(reader: &mut Reader<'_>) -> Result<BinaryValue, ProtocolError> {
    let len = reader.u8("TIME length")?;
    if ![0, TIME_LEN, TIME_MICROS_LEN].contains(&len) {
        return Err(ProtocolError::InvalidTemporalLength { len });
    }
    if len == 0 {
        return Ok(BinaryValue::Time { negative: false, days: 0, hours: 0, minutes: 0, seconds: 0, micro: 0 });
    }
    let negative = reader.u8("TIME sign")? != 0;
    let days = reader.u32_le("days")?;
    let hours = reader.u8("hours")?;
    let minutes = reader.u8("minutes")?;
    let seconds = reader.u8("seconds")?;
    let micro = if len == TIME_MICROS_LEN { reader.u32_le("microseconds")? } else { 0 };
    Ok(BinaryValue::Time { negative, days, hours, minutes, seconds, micro })
}

#[cfg(test)]
#[path = "params_tests.rs"]
mod tests;
