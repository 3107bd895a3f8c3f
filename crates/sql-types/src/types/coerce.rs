//! Storing a value into a column: [`coerce_to_column`] converts it to the column's type as
//! MySQL does, under the statement's [`WriteContext`] (strict mode refuses what does not fit
//! with 1264 / 1265 / 1292 / 1366 / 1406; otherwise the value is adjusted and a warning
//! recorded): integers and decimals range-checked and rounded, strings cut or refused by
//! character set, temporals parsed, ENUM and SET members looked up.

use quill_storage::Decimal;
use quill_storage::{Collation, Value};

use crate::error::{Result, SqlError, Warning, codes};

use super::{
    IntKind, SqlType,
    temporal::{TIME_MAX_MICROS, date_of_micros, round_micros},
};

/// A value for an ENUM column: a member (matched without case), or a member's number.
pub(super) fn coerce_enum(v: Value, members: &[String], collation: Collation, cx: &mut WriteContext<'_>) -> Result<Value> {
    let truncated = |cx: &mut WriteContext<'_>| {
        let msg = format!("Data truncated for column '{}' at row {}", cx.column, cx.row);
        cx.fail_or_warn(codes::WARN_DATA_TRUNCATED, msg, Value::Str(String::new()))
    };
    match v {
        Value::Int(_) | Value::UInt(_) | Value::Decimal(_) | Value::Double(_) => {
            let n = crate::ops::to_i128(&v);
            match usize::try_from(n) {
                Ok(0) => truncated(cx),
                Ok(n) if n <= members.len() => Ok(Value::Str(members[n - 1].clone())),
                _ => truncated(cx),
            }
        }
        other => {
            let text = crate::ops::to_string_lossy(&other);
            let text = text.trim_end_matches(' ');
            match members.iter().find(|m| collation.compare(m, text) == std::cmp::Ordering::Equal) {
                Some(m) => Ok(Value::Str(m.clone())),
                None => truncated(cx),
            }
        }
    }
}

/// A value for a SET column: members separated by commas (each once, in declaration order),
/// or a bit mask of member numbers.
pub(super) fn coerce_set(v: Value, members: &[String], collation: Collation, cx: &mut WriteContext<'_>) -> Result<Value> {
    let bits: u64 = match &v {
        Value::Int(_) | Value::UInt(_) | Value::Decimal(_) | Value::Double(_) => {
            let n = crate::ops::to_i128(&v);
            let all = if members.len() >= 64 { u64::MAX } else { (1_u64 << members.len()) - 1 };
            match u64::try_from(n) {
                Ok(b) if b & !all == 0 => b,
                _ => {
                    let msg = format!("Data truncated for column '{}' at row {}", cx.column, cx.row);
                    return cx.fail_or_warn(codes::WARN_DATA_TRUNCATED, msg, Value::Str(String::new()));
                }
            }
        }
        other => {
            let text = crate::ops::to_string_lossy(other);
            let mut bits = 0_u64;
            let mut unknown = false;
            for part in text.split(',').filter(|p| !p.is_empty()) {
                match members.iter().position(|m| collation.compare(m, part.trim_end_matches(' ')) == std::cmp::Ordering::Equal) {
                    Some(i) => bits |= 1 << i,
                    None => unknown = true,
                }
            }
            if unknown {
                let msg = format!("Data truncated for column '{}' at row {}", cx.column, cx.row);
                cx.fail_or_warn(codes::WARN_DATA_TRUNCATED, msg, Value::Null)?;
            }
            bits
        }
    };
    let chosen: Vec<&str> = members.iter().enumerate().filter(|(i, _)| bits & (1 << i) != 0).map(|(_, m)| m.as_str()).collect();
    Ok(Value::Str(chosen.join(",")))
}

/// Context of a write, for error messages and strictness.
pub struct WriteContext<'a> {
    pub column: &'a str,
    pub row: u64,
    pub strict: bool,
    pub warnings: &'a mut Vec<Warning>,
}

impl WriteContext<'_> {
    fn fail_or_warn(&mut self, code: (u16, &'static str), message: String, fallback: Value) -> Result<Value> {
        if self.strict {
            Err(SqlError::new(code, message))
        } else if code == codes::ER_DATA_TOO_LONG {
            // Outside strict mode a string cut to the column's length is "truncated" (1265).
            let message = format!("Data truncated for column '{}' at row {}", self.column, self.row);
            self.warnings.push(Warning { level: "Warning", code: codes::WARN_DATA_TRUNCATED.0, message });
            Ok(fallback)
        } else {
            self.warnings.push(Warning { level: "Warning", code: code.0, message });
            Ok(fallback)
        }
    }

    /// A number written as text with spaces after it: stored, with a note (as MySQL).
    fn note_trailing_spaces(&mut self, text: &str) {
        if text.ends_with(' ') {
            let message = format!("Data truncated for column '{}' at row {}", self.column, self.row);
            self.warnings.push(Warning { level: "Note", code: codes::WARN_DATA_TRUNCATED.0, message });
        }
    }

    fn out_of_range(&mut self, fallback: Value) -> Result<Value> {
        let msg = format!("Out of range value for column '{}' at row {}", self.column, self.row);
        self.fail_or_warn(codes::ER_WARN_DATA_OUT_OF_RANGE, msg, fallback)
    }
}

/// Parse the numeric prefix of a string as MySQL does when it converts a string to
/// a number: returns the number and whether the whole (trimmed) string was used.
#[must_use]
pub fn parse_number_prefix(s: &str) -> (f64, bool) {
    let t = s.trim_start();
    let bytes = t.as_bytes();
    let mut end = 0;
    if end < bytes.len() && (bytes[end] == b'-' || bytes[end] == b'+') {
        end += 1;
    }
    let digits_start = end;
    while end < bytes.len() && bytes[end].is_ascii_digit() {
        end += 1;
    }
    if end < bytes.len() && bytes[end] == b'.' {
        end += 1;
        while end < bytes.len() && bytes[end].is_ascii_digit() {
            end += 1;
        }
    }
    if end == digits_start || (end == digits_start + 1 && bytes[digits_start] == b'.') {
        return (0.0, false);
    }
    if end < bytes.len() && (bytes[end] == b'e' || bytes[end] == b'E') {
        let mut e = end + 1;
        if e < bytes.len() && (bytes[e] == b'-' || bytes[e] == b'+') {
            e += 1;
        }
        let exp_digits = e;
        while e < bytes.len() && bytes[e].is_ascii_digit() {
            e += 1;
        }
        if e > exp_digits {
            end = e;
        }
    }
    let n = t[..end].parse::<f64>().unwrap_or(0.0);
    (n, t[end..].trim().is_empty())
}

/// A BIT(`bits`) column's value: the bits of a number (its two's complement), of a string
/// (its bytes, most significant first); one that needs more bits is 1406, or in non-strict
/// mode the largest value the column holds.
fn coerce_bit(v: &Value, bits: u8, cx: &mut WriteContext<'_>) -> Result<Value> {
    let fits = match v {
        Value::Str(s) => s.len() <= usize::from(bits.div_ceil(8)),
        Value::Bytes(b) => b.len() <= usize::from(bits.div_ceil(8)),
        _ => true,
    };
    let n = super::bit_value(v);
    let max = if bits >= 64 { u64::MAX } else { (1u64 << bits) - 1 };
    let negative = matches!(v, Value::Int(i) if *i < 0) && bits < 64;
    if !fits || n > max || negative {
        let msg = format!("Data too long for column '{}' at row {}", cx.column, cx.row);
        return cx.fail_or_warn(codes::ER_DATA_TOO_LONG, msg, Value::UInt(max));
    }
    Ok(Value::UInt(n))
}

/// Coerce `v` to a value a column of type `ty` stores.
///
/// # Errors
/// In strict mode: 1264 out of range, 1366 wrong value, 1265 truncated, 1406 too
/// long, 1292 wrong date/time value.
pub fn coerce_to_column(v: Value, ty: &SqlType, cx: &mut WriteContext<'_>) -> Result<Value> {
    if v.is_null() {
        return Ok(Value::Null);
    }
    match ty {
        SqlType::Int { kind, unsigned, .. } => coerce_int(v, *kind, *unsigned, cx),
        SqlType::Year => coerce_int(v, IntKind::Small, true, cx),
        SqlType::Bit(bits) => coerce_bit(&v, *bits, cx),
        SqlType::Decimal { precision, scale, unsigned } => coerce_decimal(v, *precision, *scale, *unsigned, cx),
        SqlType::Float | SqlType::Double => {
            let f = match &v {
                Value::Str(s) => {
                    let (n, whole) = parse_number_prefix(s);
                    if !whole {
                        let msg = format!("Incorrect double value: '{s}' for column '{}' at row {}", cx.column, cx.row);
                        return cx.fail_or_warn(codes::ER_TRUNCATED_WRONG_VALUE_FOR_FIELD, msg, Value::Double(n));
                    }
                    n
                }
                other => crate::ops::to_f64(other),
            };
            Ok(Value::Double(if matches!(ty, SqlType::Float) { f64::from(f as f32) } else { f }))
        }
        SqlType::Char { len, .. } | SqlType::VarChar { len, .. } => {
            let s = match v {
                Value::Str(s) => s,
                Value::Bytes(b) => character_string(b, cx)?,
                other => crate::ops::to_string_lossy(&other),
            };
            let mut s = s;
            if matches!(ty, SqlType::Char { .. }) {
                s.truncate(s.trim_end_matches(' ').len());
            }
            // No more bytes than the column has characters: no need to look for the cut.
            if s.len() > *len as usize
                && let Some((keep, _)) = s.char_indices().nth(*len as usize)
            {
                // Only spaces past the length: cut with a note, in any mode (as MySQL).
                if s[keep..].bytes().all(|b| b == b' ') {
                    s.truncate(keep);
                    cx.warnings.push(Warning {
                        level: "Note",
                        code: codes::WARN_DATA_TRUNCATED.0,
                        message: format!("Data truncated for column '{}' at row {}", cx.column, cx.row),
                    });
                    return Ok(Value::Str(s));
                }
                s.truncate(keep);
                let msg = format!("Data too long for column '{}' at row {}", cx.column, cx.row);
                return cx.fail_or_warn(codes::ER_DATA_TOO_LONG, msg, Value::Str(s));
            }
            Ok(Value::Str(s))
        }
        SqlType::Text { kind, .. } => {
            let s = match v {
                Value::Str(s) => s,
                Value::Bytes(b) => character_string(b, cx)?,
                other => crate::ops::to_string_lossy(&other),
            };
            if s.len() as u64 > kind.max_len() {
                let msg = format!("Data too long for column '{}' at row {}", cx.column, cx.row);
                return cx.fail_or_warn(codes::ER_DATA_TOO_LONG, msg, Value::Str(s));
            }
            Ok(Value::Str(s))
        }
        SqlType::Enum { members, collation } => coerce_enum(v, members, *collation, cx),
        SqlType::Set { members, collation } => coerce_set(v, members, *collation, cx),
        // JSON is validated and stored in its normal form, in any sql_mode, as MySQL does.
        SqlType::Json => match v {
            Value::Str(s) => crate::json::parse(&s).map(|d| Value::Str(crate::json::to_text(&d))).map_err(|e| crate::json::invalid_for_column(&e, cx.column)),
            Value::Bytes(b) => {
                let s = character_string(b, cx)?;
                crate::json::parse(&s).map(|d| Value::Str(crate::json::to_text(&d))).map_err(|e| crate::json::invalid_for_column(&e, cx.column))
            }
            _ => Err(crate::json::invalid_for_column(&crate::json::Invalid { message: "not a JSON text, may need CAST", position: 0 }, cx.column)),
        },
        SqlType::Binary(n) | SqlType::VarBinary(n) => {
            let mut b = crate::ops::to_bytes(&v);
            if b.len() > *n as usize {
                let msg = format!("Data too long for column '{}' at row {}", cx.column, cx.row);
                b.truncate(*n as usize);
                return cx.fail_or_warn(codes::ER_DATA_TOO_LONG, msg, Value::Bytes(b));
            }
            if matches!(ty, SqlType::Binary(_)) {
                b.resize(*n as usize, 0);
            }
            Ok(Value::Bytes(b))
        }
        SqlType::Blob(kind) => {
            let b = crate::ops::to_bytes(&v);
            if b.len() as u64 > kind.max_len() {
                let msg = format!("Data too long for column '{}' at row {}", cx.column, cx.row);
                return cx.fail_or_warn(codes::ER_DATA_TOO_LONG, msg, Value::Bytes(b));
            }
            Ok(Value::Bytes(b))
        }
        SqlType::Date => match crate::ops::to_datetime(&v) {
            Some(us) => Ok(Value::Date(date_of_micros(us))),
            None => wrong_temporal(&v, "date", cx),
        },
        SqlType::DateTime(fsp) | SqlType::Timestamp(fsp) => match crate::ops::to_datetime(&v) {
            Some(us) => Ok(Value::DateTime(round_micros(us, *fsp))),
            None => wrong_temporal(&v, "datetime", cx),
        },
        SqlType::Time(fsp) => match crate::ops::to_time(&v) {
            Some(us) if us.abs() <= TIME_MAX_MICROS => Ok(Value::Time(round_micros(us, *fsp))),
            Some(us) => cx.out_of_range(Value::Time(us.signum() * TIME_MAX_MICROS)),
            None => wrong_temporal(&v, "time", cx),
        },
        SqlType::Null => Ok(v),
    }
}

/// Bytes stored into a character column: valid UTF-8 as is; otherwise 1366 in strict
/// mode, else each invalid sequence becomes `?` with warning 1366, as MySQL converts.
pub(super) fn character_string(bytes: Vec<u8>, cx: &mut WriteContext<'_>) -> Result<String> {
    let invalid = match String::from_utf8(bytes) {
        Ok(s) => return Ok(s),
        Err(e) => e,
    };
    let bytes = invalid.as_bytes();
    let from = invalid.utf8_error().valid_up_to();
    let shown: String = bytes[from..]
        .iter()
        .take(INCORRECT_STRING_QUOTE_BYTES)
        .map(|&b| if b.is_ascii_graphic() || b == b' ' { char::from(b).to_string() } else { format!("\\x{b:02X}") })
        .collect();
    let message = format!("Incorrect string value: '{shown}' for column '{}' at row {}", cx.column, cx.row);
    let replaced: String = bytes.utf8_chunks().flat_map(|chunk| chunk.valid().chars().chain((!chunk.invalid().is_empty()).then_some('?'))).collect();
    cx.fail_or_warn(codes::ER_TRUNCATED_WRONG_VALUE_FOR_FIELD, message, Value::Null)?;
    Ok(replaced)
}

/// How many bytes from the first invalid one error 1366 quotes (MySQL quotes six).
pub(super) const INCORRECT_STRING_QUOTE_BYTES: usize = 6;

pub(super) fn wrong_temporal(v: &Value, what: &str, cx: &mut WriteContext<'_>) -> Result<Value> {
    let shown = crate::ops::to_string_lossy(v);
    let msg = format!("Incorrect {what} value: '{shown}' for column '{}' at row {}", cx.column, cx.row);
    cx.fail_or_warn(codes::ER_TRUNCATED_WRONG_VALUE, msg, Value::Null)
}

pub(super) fn coerce_int(v: Value, kind: IntKind, unsigned: bool, cx: &mut WriteContext<'_>) -> Result<Value> {
    let (lo, hi) = kind.range(unsigned);
    let n: i128 = match &v {
        Value::Int(i) => i128::from(*i),
        Value::UInt(u) => i128::from(*u),
        Value::Double(f) => {
            let r = f.round();
            if r.is_nan() {
                0
            } else if r < lo as f64 {
                lo - 1
            } else if r > hi as f64 {
                hi + 1
            } else {
                r as i128
            }
        }
        Value::Decimal(d) => d.round_dp_with_strategy(0, quill_storage::RoundingStrategy::MidpointAwayFromZero).to_i128().unwrap_or(hi + 1),
        Value::Str(s) => {
            let t = s.trim();
            let (f, whole) = parse_number_prefix(t);
            if t.is_empty() || (!whole && f == 0.0 && !t.starts_with(['0', '-', '+', '.'])) {
                let msg = format!("Incorrect integer value: '{s}' for column '{}' at row {}", cx.column, cx.row);
                return cx.fail_or_warn(codes::ER_TRUNCATED_WRONG_VALUE_FOR_FIELD, msg, Value::Int(0));
            }
            let n = if let Ok(i) = t.parse::<i128>() { i } else { f.round() as i128 };
            if !whole {
                let msg = format!("Data truncated for column '{}' at row {}", cx.column, cx.row);
                let clamped = n.clamp(lo, hi);
                return cx.fail_or_warn(codes::WARN_DATA_TRUNCATED, msg, int_value(clamped, unsigned));
            }
            cx.note_trailing_spaces(s);
            n
        }
        Value::Bytes(b) => {
            let s = String::from_utf8_lossy(b).into_owned();
            return coerce_int(Value::Str(s), kind, unsigned, cx);
        }
        Value::Date(_) | Value::DateTime(_) | Value::Time(_) => crate::ops::to_i128(&v),
        Value::Null => return Ok(Value::Null),
    };
    if n < lo || n > hi {
        return cx.out_of_range(int_value(n.clamp(lo, hi), unsigned));
    }
    Ok(int_value(n, unsigned))
}

pub(super) fn int_value(n: i128, unsigned: bool) -> Value {
    if unsigned { Value::UInt(n as u64) } else { Value::Int(n as i64) }
}

pub(super) fn coerce_decimal(v: Value, precision: u8, scale: u8, unsigned: bool, cx: &mut WriteContext<'_>) -> Result<Value> {
    // Already of the column's type (a copy between DECIMAL columns alike): kept as it is.
    // With the column's scale, at most `precision` digits leave at most `precision - scale`
    // before the point.
    if let Value::Decimal(d) = &v
        && d.scale() == u32::from(scale)
        && d.digits() <= u64::from(precision)
        && !(unsigned && d.is_sign_negative() && !d.is_zero())
    {
        return Ok(v);
    }
    let d = match &v {
        Value::Str(s) => {
            let t = s.trim();
            if let Some(unscaled) = plain_decimal_text(t, precision, scale, unsigned) {
                cx.note_trailing_spaces(s);
                return Ok(Value::Decimal(Decimal::new(unscaled, u32::from(scale))));
            }
            match t.parse::<Decimal>() {
                Ok(d) => {
                    cx.note_trailing_spaces(s);
                    d
                }
                Err(_) => {
                    let (f, _) = parse_number_prefix(t);
                    let msg = format!("Incorrect decimal value: '{s}' for column '{}' at row {}", cx.column, cx.row);
                    return cx.fail_or_warn(codes::ER_TRUNCATED_WRONG_VALUE_FOR_FIELD, msg, Value::Decimal(Decimal::from_f64(f).unwrap_or_default()));
                }
            }
        }
        other => match crate::ops::to_decimal(other) {
            Some(d) => d,
            None => return cx.out_of_range(Value::Decimal(Decimal::zero())),
        },
    };
    let rounded = d.round_dp_with_strategy(u32::from(scale), quill_storage::RoundingStrategy::MidpointAwayFromZero);
    let int_digits = u64::from(precision - scale);
    if rounded.integer_digits() > int_digits || (unsigned && rounded.is_sign_negative() && !rounded.is_zero()) {
        // The largest value of the column type: all nines.
        let nines = |n: u64| "9".repeat(usize::try_from(n).unwrap_or(0));
        let text = if scale > 0 { format!("{}.{}", nines(int_digits).max("0".into()), nines(u64::from(scale))) } else { nines(int_digits).max("0".into()) };
        let max: Decimal = text.parse().unwrap_or_default();
        let clamped = if rounded.is_sign_negative() { if unsigned { Decimal::zero() } else { -max } } else { max };
        return cx.out_of_range(Value::Decimal(clamped));
    }
    let mut out = rounded;
    out.rescale(u32::from(scale));
    Ok(Value::Decimal(out))
}

/// The unscaled value of `text` in a `DECIMAL(precision, scale)` column, when `text` is a
/// plain decimal that fits it exactly (`-12.5`, `7`, `0.25`: no exponent, no leading zeros,
/// no more fraction digits than `scale`, at most 18 digits in all); `None` sends it the
/// general way. A load's DECIMAL fields are almost all of this form.
pub(super) fn plain_decimal_text(text: &str, precision: u8, scale: u8, unsigned: bool) -> Option<i64> {
    let (negative, digits) = match text.as_bytes() {
        [b'-', rest @ ..] if !unsigned => (true, rest),
        rest => (false, rest),
    };
    let (int, frac) = match digits.iter().position(|&b| b == b'.') {
        Some(dot) => (&digits[..dot], &digits[dot + 1..]),
        None => (digits, &digits[..0]),
    };
    let leading_zero = int.len() > 1 && int[0] == b'0';
    if int.is_empty() || leading_zero || frac.len() > usize::from(scale) || int.len() > usize::from(precision - scale) || int.len() + usize::from(scale) > 18 {
        return None;
    }
    let mut unscaled: i64 = 0;
    for &b in int.iter().chain(frac) {
        if !b.is_ascii_digit() {
            return None;
        }
        unscaled = unscaled * 10 + i64::from(b - b'0');
    }
    for _ in frac.len()..usize::from(scale) {
        unscaled *= 10;
    }
    Some(if negative { -unscaled } else { unscaled })
}
