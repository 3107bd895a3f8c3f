//! Operations on values with MySQL's conversion rules: comparison with type
//! coercion, arithmetic with overflow errors, truth values and conversions.

use std::cmp::Ordering;

use quill_storage::Decimal;
use quill_storage::{Collation, Value};

use crate::error::{Result, SqlError, codes};
use crate::types::{self, date_of_micros, micros_of_date, parse_number_prefix};

/// Numeric value of anything, as MySQL converts it in a numeric context.
#[must_use]
pub fn to_f64(v: &Value) -> f64 {
    match v {
        Value::Null => 0.0,
        Value::Int(i) => *i as f64,
        Value::UInt(u) => *u as f64,
        Value::Double(f) => *f,
        Value::Decimal(d) => d.to_f64().unwrap_or(0.0),
        Value::Str(s) => parse_number_prefix(s).0,
        Value::Bytes(b) => parse_number_prefix(&String::from_utf8_lossy(b)).0,
        Value::Date(_) | Value::DateTime(_) | Value::Time(_) => to_i128(v) as f64,
    }
}

/// Integer value (temporal values as YYYYMMDDhhmmss numbers).
#[must_use]
pub fn to_i128(v: &Value) -> i128 {
    match v {
        Value::Int(i) => i128::from(*i),
        Value::UInt(u) => i128::from(*u),
        Value::Decimal(d) => d.round_dp_with_strategy(0, quill_storage::RoundingStrategy::MidpointAwayFromZero).to_i128().unwrap_or(0),
        Value::Date(d) => {
            let s = types::format_date(*d).replace('-', "");
            s.parse().unwrap_or(0)
        }
        Value::DateTime(us) => {
            let s = types::format_datetime(*us, 0).replace(['-', ' ', ':'], "");
            s.parse().unwrap_or(0)
        }
        Value::Time(us) => {
            let s = types::format_time(*us, 0).replace(':', "");
            s.parse().unwrap_or(0)
        }
        other => {
            let f = to_f64(other).round();
            if f.is_finite() { f as i128 } else { 0 }
        }
    }
}

#[must_use]
pub fn to_decimal(v: &Value) -> Option<Decimal> {
    match v {
        Value::Int(i) => Some(Decimal::from(*i)),
        Value::UInt(u) => Some(Decimal::from(*u)),
        Value::Decimal(d) => Some(d.clone()),
        Value::Double(f) => Decimal::from_f64(*f),
        Value::Str(s) => s.trim().parse::<Decimal>().ok().or_else(|| Decimal::from_f64(parse_number_prefix(s).0)),
        Value::Null => None,
        other => Some(Decimal::from_i128_with_scale(to_i128(other), 0)),
    }
}

/// The text form of a value (for string functions and string columns).
#[must_use]
pub fn to_string_lossy(v: &Value) -> String {
    match v {
        Value::Str(s) => s.clone(),
        Value::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
        Value::Null => String::new(),
        Value::Double(f) => types::format_double(*f),
        Value::DateTime(us) => {
            let fsp = if us.rem_euclid(1_000_000) == 0 { 0 } else { 6 };
            types::format_datetime(*us, fsp)
        }
        Value::Time(us) => {
            let fsp = if us.rem_euclid(1_000_000) == 0 { 0 } else { 6 };
            types::format_time(*us, fsp)
        }
        other => String::from_utf8(types::to_text(other, &crate::types::SqlType::Null).unwrap_or_default()).unwrap_or_default(),
    }
}

#[must_use]
pub fn to_bytes(v: &Value) -> Vec<u8> {
    match v {
        Value::Bytes(b) => b.clone(),
        other => to_string_lossy(other).into_bytes(),
    }
}

/// A value as a DATETIME in microseconds, if it can be read as one.
#[must_use]
pub fn to_datetime(v: &Value) -> Option<i64> {
    match v {
        Value::DateTime(us) => Some(*us),
        Value::Date(d) => Some(micros_of_date(*d)),
        Value::Str(s) => types::parse_datetime(s).map(|(us, _)| us),
        Value::Bytes(b) => types::parse_datetime(&String::from_utf8_lossy(b)).map(|(us, _)| us),
        Value::Int(_) | Value::UInt(_) => types::parse_datetime(&to_i128(v).to_string()).map(|(us, _)| us),
        _ => None,
    }
}

#[must_use]
pub fn to_time(v: &Value) -> Option<i64> {
    match v {
        Value::Time(us) => Some(*us),
        Value::DateTime(us) => Some(us.rem_euclid(86_400_000_000)),
        Value::Str(s) => types::parse_time(s).or_else(|| types::parse_datetime(s).map(|(us, _)| us.rem_euclid(86_400_000_000))),
        Value::Int(_) | Value::UInt(_) => types::parse_time(&to_i128(v).to_string()),
        _ => None,
    }
}

/// SQL truth: `None` for NULL.
#[must_use]
pub fn truth(v: &Value) -> Option<bool> {
    match v {
        Value::Null => None,
        Value::Int(i) => Some(*i != 0),
        Value::UInt(u) => Some(*u != 0),
        Value::Decimal(d) => Some(!d.is_zero()),
        other => Some(to_f64(other) != 0.0),
    }
}

#[must_use]
pub fn bool_value(b: Option<bool>) -> Value {
    match b {
        None => Value::Null,
        Some(b) => Value::Int(i64::from(b)),
    }
}

fn is_numeric(v: &Value) -> bool {
    matches!(v, Value::Int(_) | Value::UInt(_) | Value::Double(_) | Value::Decimal(_))
}

fn is_temporal(v: &Value) -> bool {
    matches!(v, Value::Date(_) | Value::DateTime(_) | Value::Time(_))
}

/// Compare two non-NULL values with MySQL's coercion rules; `None` if either is NULL.
#[must_use]
pub fn compare(a: &Value, b: &Value, collation: Collation) -> Option<Ordering> {
    use Value::{Bytes, Date, DateTime, Decimal as Dec, Int, Null, Str, Time, UInt};
    Some(match (a, b) {
        (Null, _) | (_, Null) => return None,
        (Int(x), Int(y)) => x.cmp(y),
        (UInt(x), UInt(y)) => x.cmp(y),
        (Int(_) | UInt(_), Int(_) | UInt(_)) => to_i128(a).cmp(&to_i128(b)),
        (Str(x), Str(y)) => collation.compare(x, y),
        (Bytes(x), Bytes(y)) => x.cmp(y),
        (Str(_) | Bytes(_), Str(_) | Bytes(_)) => to_bytes(a).cmp(&to_bytes(b)),
        (Dec(_), Int(_) | UInt(_) | Dec(_)) | (Int(_) | UInt(_), Dec(_)) => to_decimal(a)?.cmp(&to_decimal(b)?),
        (Date(x), Date(y)) => x.cmp(y),
        (Time(x), Time(y)) => x.cmp(y),
        (Date(_) | DateTime(_), Date(_) | DateTime(_)) => to_datetime(a)?.cmp(&to_datetime(b)?),
        (Date(_) | DateTime(_), Str(_)) | (Str(_), Date(_) | DateTime(_)) => match (to_datetime(a), to_datetime(b)) {
            (Some(x), Some(y)) => x.cmp(&y),
            _ => to_bytes(a).cmp(&to_bytes(b)),
        },
        (Time(_), Str(_)) | (Str(_), Time(_)) => match (to_time(a), to_time(b)) {
            (Some(x), Some(y)) => x.cmp(&y),
            _ => to_bytes(a).cmp(&to_bytes(b)),
        },
        _ if is_temporal(a) && is_numeric(b) || is_numeric(a) && is_temporal(b) => to_f64(a).partial_cmp(&to_f64(b))?,
        _ => to_f64(a).partial_cmp(&to_f64(b)).unwrap_or(Ordering::Equal),
    })
}

/// Total order for ORDER BY and grouping: NULL first, then by [`compare`].
#[must_use]
pub fn sort_cmp(a: &Value, b: &Value, collation: Collation) -> Ordering {
    match (a.is_null(), b.is_null()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Less,
        (false, true) => Ordering::Greater,
        _ => compare(a, b, collation).unwrap_or(Ordering::Equal),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arith {
    Add,
    Sub,
    Mul,
    Div,
    IntDiv,
    Mod,
}

impl Arith {
    fn symbol(self) -> &'static str {
        match self {
            Arith::Add => "+",
            Arith::Sub => "-",
            Arith::Mul => "*",
            Arith::Div => "/",
            Arith::IntDiv => "DIV",
            Arith::Mod => "%",
        }
    }
}

/// How many decimal places `/` adds (MySQL's div_precision_increment default).
pub const DIV_PRECISION_INCREMENT: u32 = 4;

fn numeric_operand(v: &Value) -> Value {
    match v {
        Value::Str(_) | Value::Bytes(_) => Value::Double(to_f64(v)),
        Value::Date(_) | Value::DateTime(_) | Value::Time(_) => Value::Int(to_i128(v) as i64),
        other => other.clone(),
    }
}

fn range_error(a: &Value, b: &Value, op: Arith, unsigned: bool) -> SqlError {
    let kind = if unsigned { "BIGINT UNSIGNED" } else { "BIGINT" };
    SqlError::new(codes::ER_DATA_OUT_OF_RANGE, format!("{kind} value is out of range in '({} {} {})'", to_string_lossy(a), op.symbol(), to_string_lossy(b)))
}

/// Binary arithmetic with MySQL's result types.
///
/// # Errors
/// 1690 when an integer result leaves the BIGINT range.
pub fn arith(op: Arith, a: &Value, b: &Value) -> Result<Value> {
    if a.is_null() || b.is_null() {
        return Ok(Value::Null);
    }
    let (x, y) = (numeric_operand(a), numeric_operand(b));
    let any_double = matches!(x, Value::Double(_)) || matches!(y, Value::Double(_));
    let any_decimal = matches!(x, Value::Decimal(_)) || matches!(y, Value::Decimal(_));
    if op == Arith::IntDiv {
        let (fx, fy) = (to_decimal(&x).unwrap_or_default(), to_decimal(&y).unwrap_or_default());
        if fy.is_zero() {
            return Ok(Value::Null);
        }
        let q = (fx / fy).trunc().to_i128().unwrap_or(0);
        return i64::try_from(q).map(Value::Int).map_err(|_| range_error(a, b, op, false));
    }
    if any_double {
        let (fx, fy) = (to_f64(&x), to_f64(&y));
        let r = match op {
            Arith::Add => fx + fy,
            Arith::Sub => fx - fy,
            Arith::Mul => fx * fy,
            Arith::Div | Arith::Mod if fy == 0.0 => return Ok(Value::Null),
            Arith::Div => fx / fy,
            Arith::Mod => fx % fy,
            Arith::IntDiv => unreachable!("handled above"),
        };
        if !r.is_finite() {
            return Err(SqlError::new(
                codes::ER_DATA_OUT_OF_RANGE,
                format!("DOUBLE value is out of range in '({} {} {})'", to_string_lossy(a), op.symbol(), to_string_lossy(b)),
            ));
        }
        return Ok(Value::Double(r));
    }
    if any_decimal || op == Arith::Div {
        let (dx, dy) = (to_decimal(&x).unwrap_or_default(), to_decimal(&y).unwrap_or_default());
        let r = match op {
            Arith::Add => dx.checked_add(&dy),
            Arith::Sub => dx.checked_sub(&dy),
            Arith::Mul => dx.checked_mul(&dy),
            Arith::Div | Arith::Mod if dy.is_zero() => return Ok(Value::Null),
            Arith::Div => dx.checked_div(&dy).map(|q| {
                let scale = dx.scale() + DIV_PRECISION_INCREMENT;
                let mut q = q.round_dp_with_strategy(scale, quill_storage::RoundingStrategy::MidpointAwayFromZero);
                q.rescale(scale);
                q
            }),
            Arith::Mod => dx.checked_rem(&dy),
            Arith::IntDiv => unreachable!("handled above"),
        };
        return r.map(Value::Decimal).ok_or_else(|| range_error(a, b, op, false));
    }
    let unsigned = matches!(x, Value::UInt(_)) || matches!(y, Value::UInt(_));
    let (ix, iy) = (to_i128(&x), to_i128(&y));
    let r = match op {
        Arith::Add => ix + iy,
        Arith::Sub => ix - iy,
        Arith::Mul => ix.checked_mul(iy).ok_or_else(|| range_error(a, b, op, unsigned))?,
        Arith::Mod if iy == 0 => return Ok(Value::Null),
        Arith::Mod => ix % iy,
        Arith::Div | Arith::IntDiv => unreachable!("handled above"),
    };
    if unsigned {
        u64::try_from(r).map(Value::UInt).map_err(|_| range_error(a, b, op, true))
    } else {
        i64::try_from(r).map(Value::Int).map_err(|_| range_error(a, b, op, false))
    }
}

/// Unary minus.
///
/// # Errors
/// 1690 for -(-9223372036854775808).
pub fn negate(v: &Value) -> Result<Value> {
    Ok(match numeric_operand(v) {
        Value::Null => Value::Null,
        Value::Int(i) => {
            Value::Int(i.checked_neg().ok_or_else(|| SqlError::new(codes::ER_DATA_OUT_OF_RANGE, format!("BIGINT value is out of range in '-({i})'")))?)
        }
        Value::UInt(u) => {
            let n = -i128::from(u);
            Value::Int(i64::try_from(n).map_err(|_| SqlError::new(codes::ER_DATA_OUT_OF_RANGE, format!("BIGINT value is out of range in '-({u})'")))?)
        }
        Value::Double(f) => Value::Double(-f),
        Value::Decimal(d) => Value::Decimal(-d),
        other => other,
    })
}

/// The date part of a temporal value, as days.
#[must_use]
pub fn to_date_days(v: &Value) -> Option<i32> {
    match v {
        Value::Date(d) => Some(*d),
        other => to_datetime(other).map(date_of_micros),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comparisons_coerce_like_mysql() {
        let c = Collation::Utf8mb4AiCi;
        assert_eq!(compare(&Value::Str("10".into()), &Value::Int(10), c), Some(Ordering::Equal));
        assert_eq!(compare(&Value::Str("1abc".into()), &Value::Int(1), c), Some(Ordering::Equal));
        assert_eq!(compare(&Value::Str("abc".into()), &Value::Str("ABC".into()), c), Some(Ordering::Equal));
        assert_eq!(compare(&Value::Null, &Value::Int(1), c), None);
        assert_eq!(compare(&Value::Int(-1), &Value::UInt(u64::MAX), c), Some(Ordering::Less));
    }

    #[test]
    fn integer_overflow_is_an_error() {
        assert_eq!(arith(Arith::Add, &Value::Int(i64::MAX), &Value::Int(1)).unwrap_err().code, 1690);
        assert_eq!(arith(Arith::Sub, &Value::UInt(1), &Value::UInt(2)).unwrap_err().code, 1690);
        assert_eq!(arith(Arith::Div, &Value::Int(1), &Value::Int(3)).unwrap(), Value::Decimal("0.3333".parse().unwrap()));
        assert_eq!(arith(Arith::Div, &Value::Int(1), &Value::Int(0)).unwrap(), Value::Null);
    }
}
