//! CAST and CONVERT: a value converted to a SQL type (`cast`), and the session-aware form
//! that cuts CHAR(N) / BINARY(N) with warning 1292 and reads `CAST(x AS YEAR)` as MySQL does
//! (`cast_in`).

use chrono::Datelike;
use quill_sql_types::error::{Result, codes};
use quill_sql_types::ops;
use quill_sql_types::types::{self, SqlType};
use quill_storage::RoundingStrategy;
use quill_storage::Value;

/// CAST / CONVERT.
///
/// # Errors
/// None today; kept fallible for strict casts.
pub fn cast(v: Value, ty: &SqlType) -> Result<Value> {
    if v.is_null() {
        return Ok(v);
    }
    Ok(match ty {
        SqlType::Int { unsigned, .. } => {
            let n = match &v {
                Value::Str(s) => {
                    let t = s.trim();
                    t.parse::<i128>().unwrap_or_else(|_| types::parse_number_prefix(t).0 as i128)
                }
                Value::Double(f) => f.round() as i128,
                other => ops::to_i128(other),
            };
            if *unsigned { Value::UInt(n as u64) } else { Value::Int(n as i64) }
        }
        SqlType::Decimal { scale, .. } => {
            let mut d = ops::to_decimal(&v).unwrap_or_default().round_dp_with_strategy(u32::from(*scale), RoundingStrategy::MidpointAwayFromZero);
            d.rescale(u32::from(*scale));
            Value::Decimal(d)
        }
        SqlType::Double | SqlType::Float => Value::Double(ops::to_f64(&v)),
        SqlType::Bit(_) => Value::UInt(types::bit_value(&v)),
        SqlType::Char { .. } | SqlType::VarChar { .. } | SqlType::Text { .. } | SqlType::Enum { .. } | SqlType::Set { .. } => {
            Value::Str(ops::to_string_lossy(&v))
        }
        SqlType::Binary(_) | SqlType::VarBinary(_) | SqlType::Blob(_) => Value::Bytes(ops::to_bytes(&v)),
        SqlType::Date => ops::to_date_days(&v).map_or(Value::Null, Value::Date),
        SqlType::DateTime(f) | SqlType::Timestamp(f) => ops::to_datetime(&v).map_or(Value::Null, |us| Value::DateTime(types::round_micros(us, *f))),
        SqlType::Time(f) => ops::to_time(&v).map_or(Value::Null, |us| Value::Time(types::round_micros(us, *f))),
        SqlType::Json => quill_sql_types::json::call(quill_sql_types::json::JsonFunc::Cast, &[v], &[])?,
        SqlType::Year | SqlType::Null => v,
    })
}

/// The length CAST(x AS CHAR) and CAST(x AS BINARY) are typed with when none is given: a
/// CHAR(N) or BINARY(N) shorter than this cuts its value to N (`cast_in`).
pub const CAST_LENGTH_UNSIZED: u32 = 65_535;

/// CAST(v AS ty) as a statement evaluates it: [`cast`], then what CAST itself adds, with
/// MySQL's warnings (recorded on `info`): CHAR(N) keeps N characters and BINARY(N) N bytes
/// (warning 1292 when that cuts), BINARY(N) pads with zero bytes to N, and YEAR maps two
/// digits to 1970–2069 and answers NULL (1292) outside 1901–2155.
///
/// # Errors
/// Those of [`cast`].
pub fn cast_in(v: Value, ty: &SqlType, info: &quill_sql_context::session_info::SessionInfo) -> Result<Value> {
    if v.is_null() {
        return Ok(v);
    }
    let truncated = |kind: &str, len: u32, v: &Value| {
        info.warn(codes::ER_TRUNCATED_WRONG_VALUE.0, format!("Truncated incorrect {kind}({len}) value: '{}'", ops::to_string_lossy(v)));
    };
    match ty {
        SqlType::VarChar { len, .. } if *len < CAST_LENGTH_UNSIZED => {
            let text = ops::to_string_lossy(&v);
            match text.char_indices().nth(*len as usize) {
                Some((cut, _)) => {
                    truncated("CHAR", *len, &v);
                    Ok(Value::Str(text[..cut].to_owned()))
                }
                None => Ok(Value::Str(text)),
            }
        }
        SqlType::Binary(declared) => {
            let mut bytes = ops::to_bytes(&v);
            let len = *declared as usize;
            if bytes.len() > len {
                truncated("BINARY", *declared, &v);
                bytes.truncate(len);
            }
            bytes.resize(len, 0);
            Ok(Value::Bytes(bytes))
        }
        SqlType::Year => Ok(cast_year(&v).map_or_else(
            || {
                info.warn(codes::ER_TRUNCATED_WRONG_VALUE.0, format!("Truncated incorrect YEAR value: '{}'", ops::to_string_lossy(&v)));
                Value::Null
            },
            Value::Int,
        )),
        _ => cast(v, ty),
    }
}

/// CAST(v AS YEAR): a date's year; a number rounded, 1–69 as 2001–2069 and 70–99 as
/// 1970–1999 (a string '0' or '00' is 2000, the number 0 is 0); `None` outside 1901–2155.
pub(super) fn cast_year(v: &Value) -> Option<i64> {
    let year = match v {
        Value::Date(_) | Value::DateTime(_) => {
            return ops::to_datetime(v).and_then(types::datetime_from_micros).map(|dt| i64::from(dt.year())).filter(|y| (1901..=2155).contains(y));
        }
        Value::Str(s) if matches!(s.trim(), "0" | "00") => return Some(2000),
        Value::Str(s) => types::parse_number_prefix(s.trim()).0.round() as i64,
        other => ops::to_f64(other).round() as i64,
    };
    match year {
        0 => Some(0),
        1..=69 => Some(year + 2000),
        70..=99 => Some(year + 1900),
        1901..=2155 => Some(year),
        _ => None,
    }
}
