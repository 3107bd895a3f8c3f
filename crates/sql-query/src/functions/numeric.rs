//! Numeric functions: ROUND / TRUNCATE (exact on DECIMAL), FLOOR, CEIL, ABS, MOD, SIGN, POWER,
//! SQRT and RAND.

use quill_sql_types::error::{Result, SqlError, codes};
use quill_sql_types::ops;
use quill_storage::RoundingStrategy;
use quill_storage::Value;

use super::{Func, int_arg};

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
