//! Aggregate functions' running state: one [`Accumulator`] per aggregate and group (GROUP BY),
//! or per window frame (`window`). COUNT, SUM, AVG, MIN, MAX, GROUP_CONCAT, BIT_AND, BIT_OR,
//! BIT_XOR, the variances and standard deviations, each with DISTINCT; NULLs are skipped, as
//! in MySQL. A variance is kept as MySQL keeps it: Welford's running mean and sum of squared
//! differences, in doubles, so the last bits agree. JSON_ARRAYAGG and JSON_OBJECTAGG
//! gather their rows' JSON texts (never NULL: the binder made NULL `null`) and build the
//! document at the end.

use std::cmp::Ordering;

use quill_storage::Value;

use crate::expr::{AggFunc, AggSpec, RowCtx};
use crate::query::Env;
use quill_sql_context::tmp_memory;
use quill_sql_types::error::Result;
use quill_sql_types::ops;

/// What one value of an aggregate's DISTINCT set costs beyond the value and its key.
const DISTINCT_ENTRY_OVERHEAD_BYTES: usize = 32;

/// Running state of one aggregate over one group.
#[derive(Debug, Clone)]
pub(crate) enum Accumulator {
    Count(i64),
    Sum(Option<Value>, i64),
    MinMax(Option<Value>),
    /// GROUP_CONCAT's and the JSON aggregates' parts; `bytes` is GROUP_CONCAT's length so far
    /// (parts and separators), `cut_at` set once it passed `group_concat_max_len`: later
    /// rows are not kept and the result is cut there (warning 1260).
    Concat {
        parts: Vec<String>,
        bytes: usize,
        cut_at: Option<usize>,
    },
    Bits(Option<u64>),
    /// Rows, running mean, running sum of squared differences from the mean.
    Variance(i64, f64, f64),
    Distinct(Vec<Value>, std::collections::HashSet<Vec<u8>>),
}

impl Accumulator {
    pub(crate) fn new(spec: &AggSpec) -> Accumulator {
        if spec.distinct {
            return Accumulator::Distinct(Vec::new(), std::collections::HashSet::new());
        }
        match spec.func {
            AggFunc::Count | AggFunc::CountStar => Accumulator::Count(0),
            AggFunc::Sum | AggFunc::Avg => Accumulator::Sum(None, 0),
            AggFunc::Min | AggFunc::Max => Accumulator::MinMax(None),
            AggFunc::GroupConcat | AggFunc::JsonArrayAgg | AggFunc::JsonObjectAgg => Accumulator::Concat { parts: Vec::new(), bytes: 0, cut_at: None },
            AggFunc::BitAnd | AggFunc::BitOr | AggFunc::BitXor => Accumulator::Bits(None),
            AggFunc::Variance { .. } => Accumulator::Variance(0, 0.0, 0.0),
        }
    }

    /// Add one row's value; returns the bytes the accumulator keeps for it (a DISTINCT
    /// set's entry, a GROUP_CONCAT part), for `tmp_memory`.
    pub(crate) fn add(&mut self, spec: &AggSpec, env: &Env<'_>, cx: &RowCtx<'_>) -> Result<usize> {
        if let Accumulator::Concat { cut_at: Some(_), .. } = self {
            // GROUP_CONCAT already reached group_concat_max_len: nothing more is kept.
            return Ok(0);
        }
        let v = match &spec.arg {
            Some(a) => a.eval(env, cx)?,
            None => Value::Int(1),
        };
        let kept = self.add_value(spec, v)?;
        if spec.func == AggFunc::GroupConcat
            && let Accumulator::Concat { bytes, cut_at, .. } = self
        {
            let limit = usize::try_from(env.info.group_concat_max_len()).unwrap_or(usize::MAX);
            if *bytes > limit {
                *cut_at = Some(limit);
            }
        }
        Ok(kept)
    }

    /// Whether GROUP_CONCAT's result was cut at `group_concat_max_len`.
    pub(crate) fn was_cut(&self) -> bool {
        matches!(self, Accumulator::Concat { cut_at: Some(_), .. })
    }

    fn add_value(&mut self, spec: &AggSpec, v: Value) -> Result<usize> {
        if v.is_null() {
            return Ok(0);
        }
        let mut kept = 0;
        match self {
            Accumulator::Count(n) => *n += 1,
            Accumulator::Sum(total, n) => {
                let v = match v {
                    Value::Int(_) | Value::UInt(_) => Value::Decimal(ops::to_decimal(&v).unwrap_or_default()),
                    Value::Decimal(_) | Value::Double(_) => v,
                    other => Value::Double(ops::to_f64(&other)),
                };
                *total = Some(match total.take() {
                    None => v,
                    Some(t) => ops::arith(ops::Arith::Add, &t, &v)?,
                });
                *n += 1;
            }
            Accumulator::MinMax(best) => {
                let replace = match best {
                    None => true,
                    Some(b) => {
                        let o = ops::sort_cmp(&v, b, spec.collation);
                        if spec.func == AggFunc::Min { o == Ordering::Less } else { o == Ordering::Greater }
                    }
                };
                if replace {
                    *best = Some(v);
                }
            }
            Accumulator::Concat { parts, bytes, .. } => {
                let part = ops::to_string_lossy(&v);
                kept = part.len() + std::mem::size_of::<String>();
                *bytes += part.len() + usize::from(!parts.is_empty());
                parts.push(part);
            }
            Accumulator::Bits(acc) => {
                let x = ops::to_i128(&v) as u64;
                *acc = Some(match (*acc, spec.func) {
                    (None, _) => x,
                    (Some(a), AggFunc::BitAnd) => a & x,
                    (Some(a), AggFunc::BitXor) => a ^ x,
                    (Some(a), _) => a | x,
                });
            }
            Accumulator::Variance(n, mean, m2) => {
                let x = ops::to_f64(&v);
                *n += 1;
                let before = *mean;
                *mean += (x - before) / *n as f64;
                *m2 += (x - before) * (x - *mean);
            }
            Accumulator::Distinct(vals, seen) => {
                let key = quill_storage::key::encode_key([(&v, spec.collation)]);
                let key_bytes = key.len();
                if seen.insert(key) {
                    kept = key_bytes + tmp_memory::row_bytes(std::slice::from_ref(&v)) + DISTINCT_ENTRY_OVERHEAD_BYTES;
                    vals.push(v);
                }
            }
        }
        Ok(kept)
    }

    pub(crate) fn finish(self, spec: &AggSpec) -> Value {
        match self {
            Accumulator::Count(n) => Value::Int(n),
            Accumulator::Sum(None, _) | Accumulator::MinMax(None) => Value::Null,
            Accumulator::Sum(Some(t), n) => {
                if spec.func == AggFunc::Avg {
                    match &t {
                        Value::Double(f) => Value::Double(f / n as f64),
                        _ => ops::arith(ops::Arith::Div, &t, &Value::Int(n)).unwrap_or(Value::Null),
                    }
                } else {
                    t
                }
            }
            Accumulator::MinMax(Some(v)) => v,
            Accumulator::Concat { parts, .. } if parts.is_empty() => Value::Null,
            Accumulator::Concat { parts, cut_at, .. } => match spec.func {
                AggFunc::JsonArrayAgg => {
                    let items = parts.iter().map(|p| quill_sql_types::json::parse(p).unwrap_or(serde_json::Value::Null)).collect();
                    Value::Str(quill_sql_types::json::to_text(&serde_json::Value::Array(items)))
                }
                AggFunc::JsonObjectAgg => {
                    let mut members = serde_json::Map::new();
                    for part in &parts {
                        if let Ok(serde_json::Value::Object(pair)) = quill_sql_types::json::parse(part) {
                            members.extend(pair);
                        }
                    }
                    Value::Str(quill_sql_types::json::to_text(&serde_json::Value::Object(members)))
                }
                _ => {
                    let mut text = parts.join(",");
                    if let Some(limit) = cut_at {
                        let mut end = limit.min(text.len());
                        while !text.is_char_boundary(end) {
                            end -= 1;
                        }
                        text.truncate(end);
                    }
                    Value::Str(text)
                }
            },
            Accumulator::Variance(n, _, m2) => {
                let AggFunc::Variance { sample, root } = spec.func else { unreachable!("a variance's accumulator") };
                let divisor = if sample { n - 1 } else { n };
                if divisor <= 0 {
                    return Value::Null;
                }
                let variance = m2 / divisor as f64;
                Value::Double(if root { variance.sqrt() } else { variance })
            }
            Accumulator::Bits(v) => Value::UInt(v.unwrap_or(if spec.func == AggFunc::BitAnd { u64::MAX } else { 0 })),
            Accumulator::Distinct(vals, _) => {
                let mut inner = Accumulator::new(&AggSpec { distinct: false, ..spec.clone() });
                let plain = AggSpec { distinct: false, ..spec.clone() };
                for v in vals {
                    // Sums of distinct values cannot overflow where the plain sum did not.
                    let _ = inner.add_value(&plain, v);
                }
                inner.finish(&AggSpec { distinct: false, ..spec.clone() })
            }
        }
    }
}
