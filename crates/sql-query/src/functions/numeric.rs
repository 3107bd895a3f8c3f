//! Numeric functions: ROUND / TRUNCATE (exact on DECIMAL), FLOOR, CEIL, ABS, MOD, SIGN, POWER,
//! SQRT and RAND; and the functions of real numbers ([`Math`]), computed in DOUBLE with MySQL's
//! formulas (`LOG(b, x)` is `ln(x) / ln(b)`, `LOG2(x)` is `ln(x) / ln(2)`, `COT(x)` is
//! `1 / tan(x)`, `DEGREES(x)` is `x * (180 / pi)`), so that results agree to the last bit.
//! A logarithm of a number at or below 0 (or to a base at or below 0, or 1) is NULL with warning
//! 3020, a result past DOUBLE's range is error 1690, and ASIN / ACOS outside [-1, 1] are
//! NULL, as in MySQL 8.

use quill_sql_types::error::{Result, SqlError, codes};
use quill_sql_types::ops;
use quill_storage::RoundingStrategy;
use quill_storage::Value;

use super::{Func, int_arg};
use quill_sql_context::session_info::SessionInfo;

/// The functions of real numbers (`Func::Math`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Math {
    Ln,
    /// LOG(x), the natural logarithm, or LOG(b, x).
    Log,
    Log2,
    Log10,
    Exp,
    Sin,
    Cos,
    Tan,
    Cot,
    Asin,
    Acos,
    /// ATAN(x), or ATAN(y, x) as ATAN2.
    Atan,
    Atan2,
    Degrees,
    Radians,
}

impl Math {
    /// The function's name as MySQL prints it in messages.
    fn name(self) -> &'static str {
        match self {
            Math::Ln => "ln",
            Math::Log => "log",
            Math::Log2 => "log2",
            Math::Log10 => "log10",
            Math::Exp => "exp",
            Math::Sin => "sin",
            Math::Cos => "cos",
            Math::Tan => "tan",
            Math::Cot => "cot",
            Math::Asin => "asin",
            Math::Acos => "acos",
            Math::Atan => "atan",
            Math::Atan2 => "atan2",
            Math::Degrees => "degrees",
            Math::Radians => "radians",
        }
    }
}

/// Evaluates a function of real numbers on its arguments' values (none NULL).
pub(super) fn math(m: Math, vals: &[Value], info: &SessionInfo) -> Result<Value> {
    let x = ops::to_f64(&vals[0]);
    let invalid_log = || {
        info.warn(codes::ER_INVALID_ARGUMENT_FOR_LOGARITHM.0, "Invalid argument for logarithm".to_owned());
        Ok(Value::Null)
    };
    let y = match m {
        Math::Ln | Math::Log | Math::Log2 | Math::Log10 if vals.len() == 1 && x <= 0.0 => return invalid_log(),
        Math::Log if vals.len() == 2 => {
            let v = ops::to_f64(&vals[1]);
            // A base in (0, 1) is a logarithm too (LOG(0.5, 8) is -3); base 1 has none.
            if x <= 0.0 || x == 1.0 || v <= 0.0 {
                return invalid_log();
            }
            v.ln() / x.ln()
        }
        Math::Ln | Math::Log => x.ln(),
        Math::Log2 => x.ln() / std::f64::consts::LN_2,
        Math::Log10 => x.log10(),
        Math::Exp => x.exp(),
        Math::Sin => x.sin(),
        Math::Cos => x.cos(),
        Math::Tan => x.tan(),
        Math::Cot => 1.0 / x.tan(),
        Math::Asin => x.asin(),
        Math::Acos => x.acos(),
        Math::Atan if vals.len() == 2 => x.atan2(ops::to_f64(&vals[1])),
        Math::Atan => x.atan(),
        Math::Atan2 => x.atan2(ops::to_f64(&vals[1])),
        Math::Degrees => x * (180.0 / std::f64::consts::PI),
        Math::Radians => x * (std::f64::consts::PI / 180.0),
    };
    if y.is_nan() {
        return Ok(Value::Null);
    }
    if y.is_infinite() {
        let args: Vec<String> = vals.iter().map(ops::to_string_lossy).collect();
        return Err(SqlError::new(codes::ER_DATA_OUT_OF_RANGE, format!("DOUBLE value is out of range in '{}({})'", m.name(), args.join(","))));
    }
    Ok(Value::Double(y))
}

/// Evaluates `f`, one of this family, on its arguments' values.
pub(super) fn call(f: Func, vals: &[Value]) -> Result<Value> {
    use Func::*;
    Ok(match f {
        Round | Truncate => {
            let places = vals.get(1).map_or(0, int_arg);
            round(&vals[0], places, f == Truncate)
        }
        Floor | Ceil => match &vals[0] {
            v @ (Value::Int(_) | Value::UInt(_)) => v.clone(),
            Value::Decimal(d) => Value::Decimal(if f == Floor { d.floor() } else { d.ceil() }),
            v => {
                let x = ops::to_f64(v);
                Value::Double(if f == Floor { x.floor() } else { x.ceil() })
            }
        },
        Abs => match &vals[0] {
            Value::Int(i) => {
                Value::Int(i.checked_abs().ok_or_else(|| SqlError::new(codes::ER_DATA_OUT_OF_RANGE, format!("BIGINT value is out of range in 'abs({i})'")))?)
            }
            v @ Value::UInt(_) => v.clone(),
            Value::Decimal(d) => Value::Decimal(d.abs()),
            v => Value::Double(ops::to_f64(v).abs()),
        },
        Mod => ops::arith(ops::Arith::Mod, &vals[0], &vals[1])?,
        Sign => {
            let x = ops::to_f64(&vals[0]);
            Value::Int(if x > 0.0 {
                1
            } else if x < 0.0 {
                -1
            } else {
                0
            })
        }
        Power => Value::Double(ops::to_f64(&vals[0]).powf(ops::to_f64(&vals[1]))),
        Sqrt => {
            let x = ops::to_f64(&vals[0]);
            if x < 0.0 { Value::Null } else { Value::Double(x.sqrt()) }
        }
        Rand => Value::Double(rand_f64()),
        _ => unreachable!("{f:?} is dispatched elsewhere"),
    })
}

pub(super) fn rand_f64() -> f64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static STATE: AtomicU64 = AtomicU64::new(0x9E37_79B9_7F4A_7C15);
    // xorshift64*: cheap, and RAND() promises no more.
    let mut x = STATE.load(Ordering::Relaxed) ^ (chrono::Utc::now().timestamp_subsec_nanos() as u64);
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    STATE.store(x, Ordering::Relaxed);
    (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
}

pub(super) fn round(v: &Value, places: i64, truncate: bool) -> Value {
    let strategy = if truncate { RoundingStrategy::ToZero } else { RoundingStrategy::MidpointAwayFromZero };
    match v {
        Value::Int(_) | Value::UInt(_) if places >= 0 => v.clone(),
        Value::Int(_) | Value::UInt(_) | Value::Decimal(_) => {
            let d = ops::to_decimal(v).unwrap_or_default();
            if places >= 0 {
                let places = places.min(i64::from(quill_sql_types::types::DECIMAL_SCALE_MAX)) as u32;
                let mut r = d.round_dp_with_strategy(places, strategy);
                if matches!(v, Value::Decimal(_)) {
                    r.rescale(places);
                }
                Value::Decimal(r)
            } else {
                let r = d.round_signed(places.max(-70), strategy);
                match v {
                    Value::Int(_) => Value::Int(r.to_i64().unwrap_or(0)),
                    Value::UInt(_) => Value::UInt(r.to_u64().unwrap_or(0)),
                    _ => Value::Decimal(r),
                }
            }
        }
        other => {
            let x = ops::to_f64(other);
            let f = 10f64.powi(places as i32);
            let y = x * f;
            let r = if truncate {
                y.trunc()
            } else {
                // Round half away from zero, like MySQL for DOUBLE.
                y.round()
            };
            Value::Double(r / f)
        }
    }
}
