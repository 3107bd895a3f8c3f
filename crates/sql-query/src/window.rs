//! Window functions: `f(...) OVER ([PARTITION BY ...] [ORDER BY ...] [frame])`, and named
//! windows (`WINDOW w AS (...)`), as MySQL 8 computes them.
//!
//! A query block with window functions computes them after its rows are joined, filtered,
//! grouped and filtered by HAVING, and before DISTINCT, ORDER BY and LIMIT (`query::run_block`
//! keeps those rows, then [`compute`] fills each row's window values, then the select list is
//! projected with them). Each window sorts the rows by its partition and then its order
//! (stably: rows that tie keep the block's order) and walks each partition:
//!
//! - ROW_NUMBER, RANK, DENSE_RANK, PERCENT_RANK, CUME_DIST and NTILE number the rows; rows with
//!   equal ORDER BY values are peers and rank alike. They ignore frames, as in MySQL.
//! - LAG and LEAD read another row of the partition (or the default) and ignore frames.
//! - FIRST_VALUE, LAST_VALUE, NTH_VALUE and the aggregates (COUNT, SUM, AVG, MIN, MAX ...) read
//!   the row's frame: by default the whole partition without ORDER BY, and with it every row
//!   up to the current row's last peer (`RANGE UNBOUNDED PRECEDING`). `ROWS` frames count rows;
//!   `RANGE` frames take peers, or numeric offsets from a single numeric ORDER BY value.
//!   A frame that starts at the partition's first row is summed as it grows; others are
//!   summed again for each row (the cost is rows times frame size).
//!
//! The rows a windowed block keeps count against `temptable_max_ram` like a sort's.

use std::cmp::Ordering;

use quill_storage::{Collation, Row, Value};

use crate::aggregate::Accumulator;
use crate::expr::{AggSpec, Expr, RowCtx};
use crate::query::Env;
use quill_sql_types::error::{Result, SqlError, codes};
use quill_sql_types::ops;
use quill_sql_types::types::SqlType;

/// One window function call of a block.
#[derive(Debug, Clone)]
pub struct WindowSpec {
    pub func: WindowFunc,
    /// The function's arguments (LAG's value, offset and default, NTILE's bucket count ...).
    pub args: Vec<Expr>,
    pub partition: Vec<Expr>,
    /// ORDER BY: expression, ascending, collation.
    pub order: Vec<(Expr, bool, Collation)>,
    pub frame: Frame,
    pub ty: SqlType,
}

#[derive(Debug, Clone)]
pub enum WindowFunc {
    RowNumber,
    Rank,
    DenseRank,
    PercentRank,
    CumeDist,
    Ntile,
    Lag,
    Lead,
    FirstValue,
    LastValue,
    NthValue,
    /// An aggregate over the frame.
    Aggregate(AggSpec),
}

impl WindowFunc {
    /// The window function a name means (aggregates are found by the binder).
    #[must_use]
    pub fn named(name: &str) -> Option<WindowFunc> {
        Some(match name {
            "ROW_NUMBER" => WindowFunc::RowNumber,
            "RANK" => WindowFunc::Rank,
            "DENSE_RANK" => WindowFunc::DenseRank,
            "PERCENT_RANK" => WindowFunc::PercentRank,
            "CUME_DIST" => WindowFunc::CumeDist,
            "NTILE" => WindowFunc::Ntile,
            "LAG" => WindowFunc::Lag,
            "LEAD" => WindowFunc::Lead,
            "FIRST_VALUE" => WindowFunc::FirstValue,
            "LAST_VALUE" => WindowFunc::LastValue,
            "NTH_VALUE" => WindowFunc::NthValue,
            _ => return None,
        })
    }

    /// Allowed argument counts.
    #[must_use]
    pub fn arity(&self) -> (usize, usize) {
        match self {
            WindowFunc::RowNumber | WindowFunc::Rank | WindowFunc::DenseRank | WindowFunc::PercentRank | WindowFunc::CumeDist => (0, 0),
            WindowFunc::Ntile | WindowFunc::FirstValue | WindowFunc::LastValue => (1, 1),
            WindowFunc::Lag | WindowFunc::Lead => (1, 3),
            WindowFunc::NthValue => (2, 2),
            WindowFunc::Aggregate(_) => (0, 1),
        }
    }

    /// The result type, given the first argument's.
    #[must_use]
    pub fn result_type(&self, first: Option<&SqlType>) -> SqlType {
        match self {
            WindowFunc::RowNumber | WindowFunc::Rank | WindowFunc::DenseRank | WindowFunc::Ntile => {
                SqlType::Int { kind: quill_sql_types::types::IntKind::Big, unsigned: true, display: None }
            }
            WindowFunc::PercentRank | WindowFunc::CumeDist => SqlType::Double,
            WindowFunc::Aggregate(spec) => spec.ty.clone(),
            _ => first.cloned().unwrap_or(SqlType::Null),
        }
    }

    /// Whether the function reads a frame (others ignore one).
    fn uses_frame(&self) -> bool {
        matches!(self, WindowFunc::FirstValue | WindowFunc::LastValue | WindowFunc::NthValue | WindowFunc::Aggregate(_))
    }
}

/// A frame: `ROWS` or `RANGE`, from `start` to `end`. `None` is the default frame.
#[derive(Debug, Clone)]
pub struct Frame {
    pub rows: bool,
    pub start: FrameBound,
    pub end: FrameBound,
}

#[derive(Debug, Clone)]
pub enum FrameBound {
    UnboundedPreceding,
    Preceding(Expr),
    CurrentRow,
    Following(Expr),
    UnboundedFollowing,
}

impl Frame {
    /// MySQL's default: the partition up to the current row's last peer with ORDER BY, the
    /// whole partition without.
    #[must_use]
    pub fn default_for(ordered: bool) -> Frame {
        Frame { rows: false, start: FrameBound::UnboundedPreceding, end: if ordered { FrameBound::CurrentRow } else { FrameBound::UnboundedFollowing } }
    }
}

/// Each row's window values, spec by spec: `rows` are the block's rows (joined row and
/// aggregate values), in the block's order.
///
/// # Errors
/// Evaluation errors; 1210 for a bad NTILE / NTH_VALUE / LAG / LEAD / frame argument.
pub fn compute(specs: &[WindowSpec], rows: &[(Row, Vec<Value>)], env: &Env<'_>, parent: Option<&RowCtx<'_>>) -> Result<Vec<Vec<Value>>> {
    let mut out = vec![vec![Value::Null; specs.len()]; rows.len()];
    for (slot, spec) in specs.iter().enumerate() {
        let cx = |i: usize| RowCtx { row: &rows[i].0, aggs: &rows[i].1, windows: &[], parent };
        let mut partition_keys = Vec::with_capacity(rows.len());
        let mut order_keys = Vec::with_capacity(rows.len());
        for i in 0..rows.len() {
            let values: Vec<Value> = spec.partition.iter().map(|e| e.eval(env, &cx(i))).collect::<Result<_>>()?;
            partition_keys.push(quill_storage::key::encode_key(values.iter().map(|v| (v, Collation::default()))));
            order_keys.push(spec.order.iter().map(|(e, _, _)| e.eval(env, &cx(i))).collect::<Result<Vec<Value>>>()?);
        }
        let mut sorted: Vec<usize> = (0..rows.len()).collect();
        sorted.sort_by(|&a, &b| partition_keys[a].cmp(&partition_keys[b]).then_with(|| order_cmp(spec, &order_keys[a], &order_keys[b])));
        let mut start = 0;
        while start < sorted.len() {
            let end = start + sorted[start..].iter().take_while(|&&i| partition_keys[i] == partition_keys[sorted[start]]).count();
            let partition = Partition { rows: &sorted[start..end], order_keys: &order_keys };
            let values = partition.values(spec, env, &cx)?;
            for (&row, value) in partition.rows.iter().zip(values) {
                out[row][slot] = value;
            }
            start = end;
        }
    }
    Ok(out)
}

fn order_cmp(spec: &WindowSpec, a: &[Value], b: &[Value]) -> Ordering {
    for (i, (_, asc, collation)) in spec.order.iter().enumerate() {
        let o = ops::sort_cmp(&a[i], &b[i], *collation);
        if o != Ordering::Equal {
            return if *asc { o } else { o.reverse() };
        }
    }
    Ordering::Equal
}

/// One partition's rows, in window order (indexes into the block's rows).
struct Partition<'p> {
    rows: &'p [usize],
    order_keys: &'p [Vec<Value>],
}

impl Partition<'_> {
    /// The window function's value for each row of the partition, in its order.
    fn values<'r>(&self, spec: &WindowSpec, env: &Env<'_>, cx: &dyn Fn(usize) -> RowCtx<'r>) -> Result<Vec<Value>> {
        let n = self.rows.len();
        let peers = self.peer_groups(spec);
        let constant = |i: usize| -> Result<Option<Value>> { spec.args.get(i).map(|e| e.eval(env, &RowCtx::new(&[]))).transpose() };
        let count = |v: Option<Value>, name: &str| -> Result<Option<usize>> {
            match v {
                None => Ok(None),
                Some(v) if v.is_null() => Err(wrong_argument(name)),
                Some(v) => usize::try_from(ops::to_i128(&v)).map(Some).map_err(|_| wrong_argument(name)),
            }
        };
        let mut out = Vec::with_capacity(n);
        match &spec.func {
            WindowFunc::RowNumber => out.extend((1..=n as u64).map(Value::UInt)),
            WindowFunc::Rank | WindowFunc::DenseRank | WindowFunc::PercentRank | WindowFunc::CumeDist => {
                for (dense, &(first, last)) in peers.iter().enumerate() {
                    for _ in first..last {
                        out.push(match spec.func {
                            WindowFunc::Rank => Value::UInt(first as u64 + 1),
                            WindowFunc::DenseRank => Value::UInt(dense as u64 + 1),
                            WindowFunc::PercentRank => Value::Double(if n > 1 { first as f64 / (n - 1) as f64 } else { 0.0 }),
                            _ => Value::Double(last as f64 / n as f64),
                        });
                    }
                }
            }
            WindowFunc::Ntile => {
                let buckets = count(constant(0)?, "ntile")?.filter(|b| *b > 0).ok_or_else(|| wrong_argument("ntile"))?;
                // The first n % buckets buckets hold one row more, as MySQL deals them.
                let (size, larger) = (n / buckets, n % buckets);
                for k in 0..n {
                    let bucket = if k < larger * (size + 1) { k / (size + 1) } else { larger + (k - larger * (size + 1)) / size.max(1) };
                    out.push(Value::UInt(bucket as u64 + 1));
                }
            }
            WindowFunc::Lag | WindowFunc::Lead => {
                let offset = count(constant(1)?, "lag")?.unwrap_or(1);
                for k in 0..n {
                    let other = if matches!(spec.func, WindowFunc::Lag) { k.checked_sub(offset) } else { k.checked_add(offset).filter(|o| *o < n) };
                    out.push(match other {
                        Some(o) => spec.args[0].eval(env, &cx(self.rows[o]))?,
                        None => spec.args.get(2).map_or(Ok(Value::Null), |d| d.eval(env, &cx(self.rows[k])))?,
                    });
                }
            }
            WindowFunc::FirstValue | WindowFunc::LastValue | WindowFunc::NthValue | WindowFunc::Aggregate(_) => {
                self.frame_values(spec, env, cx, &peers, &mut out)?;
            }
        }
        debug_assert!(!spec.func.uses_frame() || out.len() == n);
        Ok(out)
    }

    /// For each position, its peer group's (first, end) positions.
    fn peer_groups(&self, spec: &WindowSpec) -> Vec<(usize, usize)> {
        let mut groups = Vec::new();
        let mut start = 0;
        while start < self.rows.len() {
            let key = &self.order_keys[self.rows[start]];
            let end = start + self.rows[start..].iter().take_while(|&&r| order_cmp(spec, &self.order_keys[r], key) == Ordering::Equal).count();
            groups.push((start, end));
            start = end;
        }
        groups
    }

    /// Values of the functions that read a frame.
    fn frame_values<'r>(
        &self,
        spec: &WindowSpec,
        env: &Env<'_>,
        cx: &dyn Fn(usize) -> RowCtx<'r>,
        peers: &[(usize, usize)],
        out: &mut Vec<Value>,
    ) -> Result<()> {
        let n = self.rows.len();
        let mut peer_of = vec![(0, 0); n];
        for &(first, end) in peers {
            for p in &mut peer_of[first..end] {
                *p = (first, end);
            }
        }
        let nth = match spec.func {
            WindowFunc::NthValue => {
                let v = spec.args[1].eval(env, &RowCtx::new(&[]))?;
                let nth = usize::try_from(ops::to_i128(&v)).ok().filter(|n| *n >= 1 && !v.is_null()).ok_or_else(|| wrong_argument("nth_value"))?;
                Some(nth)
            }
            _ => None,
        };
        // An aggregate over frames that all start at the partition's first row grows as the
        // frame's end moves on.
        let mut running: Option<(Accumulator, usize)> = None;
        for (k, &peers) in peer_of.iter().enumerate() {
            let (start, end) = self.frame(spec, env, k, peers)?;
            let value = match &spec.func {
                WindowFunc::FirstValue => self.value_at(spec, env, cx, (start < end).then_some(start))?,
                WindowFunc::LastValue => self.value_at(spec, env, cx, (start < end).then(|| end - 1))?,
                WindowFunc::NthValue => self.value_at(spec, env, cx, nth.map(|m| start + m - 1).filter(|p| *p < end))?,
                WindowFunc::Aggregate(agg) => {
                    if start == 0 && running.as_ref().is_none_or(|(_, added)| *added <= end) {
                        let (acc, added) = running.get_or_insert_with(|| (Accumulator::new(agg), 0));
                        for p in *added..end {
                            acc.add(agg, env, &cx(self.rows[p]))?;
                        }
                        *added = end.max(*added);
                        acc.clone().finish(agg)
                    } else {
                        let mut acc = Accumulator::new(agg);
                        for p in start..end {
                            acc.add(agg, env, &cx(self.rows[p]))?;
                        }
                        acc.finish(agg)
                    }
                }
                _ => unreachable!("frame functions only"),
            };
            out.push(value);
        }
        Ok(())
    }

    fn value_at<'r>(&self, spec: &WindowSpec, env: &Env<'_>, cx: &dyn Fn(usize) -> RowCtx<'r>, position: Option<usize>) -> Result<Value> {
        position.map_or(Ok(Value::Null), |p| spec.args[0].eval(env, &cx(self.rows[p])))
    }

    /// The frame of the row at position `k` (whose peers are `peers`): positions
    /// `start..end` of the partition, empty when `start >= end`.
    fn frame(&self, spec: &WindowSpec, env: &Env<'_>, k: usize, peers: (usize, usize)) -> Result<(usize, usize)> {
        let n = self.rows.len();
        let frame = &spec.frame;
        let offset = |e: &Expr| -> Result<Value> {
            let v = e.eval(env, &RowCtx::new(&[]))?;
            if v.is_null() || ops::to_f64(&v) < 0.0 {
                return Err(wrong_argument("frame"));
            }
            Ok(v)
        };
        if frame.rows {
            let rows = |e: &Expr| -> Result<usize> { Ok(usize::try_from(ops::to_i128(&offset(e)?)).unwrap_or(usize::MAX)) };
            let start = match &frame.start {
                FrameBound::UnboundedPreceding => 0,
                FrameBound::Preceding(e) => k.saturating_sub(rows(e)?),
                FrameBound::CurrentRow => k,
                FrameBound::Following(e) => k.saturating_add(rows(e)?),
                FrameBound::UnboundedFollowing => n,
            };
            let end = match &frame.end {
                FrameBound::UnboundedPreceding => 0,
                FrameBound::Preceding(e) => (k + 1).saturating_sub(rows(e)?),
                FrameBound::CurrentRow => k + 1,
                FrameBound::Following(e) => k.saturating_add(rows(e)?).saturating_add(1),
                FrameBound::UnboundedFollowing => n,
            };
            return Ok((start.min(n), end.min(n)));
        }
        // RANGE: peers, or rows whose (single, numeric) ORDER BY value lies within the offset.
        let within = |e: &Expr, preceding: bool, from_start: bool| -> Result<usize> {
            let [(_, asc, _)] = spec.order.as_slice() else { return Err(wrong_argument("frame")) };
            let delta = ops::to_f64(&offset(e)?);
            let here = ops::to_f64(&self.order_keys[self.rows[k]][0]);
            // Toward the partition's start is smaller values when ascending.
            let bound = if preceding == *asc { here - delta } else { here + delta };
            let key = |p: usize| ops::to_f64(&self.order_keys[self.rows[p]][0]);
            let before_bound = |p: usize| if *asc { key(p) < bound } else { key(p) > bound };
            let at_or_before = |p: usize| if *asc { key(p) <= bound } else { key(p) >= bound };
            Ok(if from_start { (0..n).find(|&p| !before_bound(p)).unwrap_or(n) } else { (0..n).rev().find(|&p| at_or_before(p)).map_or(0, |p| p + 1) })
        };
        let start = match &frame.start {
            FrameBound::UnboundedPreceding => 0,
            FrameBound::Preceding(e) => within(e, true, true)?,
            FrameBound::CurrentRow => peers.0,
            FrameBound::Following(e) => within(e, false, true)?,
            FrameBound::UnboundedFollowing => n,
        };
        let end = match &frame.end {
            FrameBound::UnboundedPreceding => 0,
            FrameBound::Preceding(e) => within(e, true, false)?,
            FrameBound::CurrentRow => peers.1,
            FrameBound::Following(e) => within(e, false, false)?,
            FrameBound::UnboundedFollowing => n,
        };
        Ok((start, end))
    }
}

/// 1210, as MySQL answers a bad window function argument.
fn wrong_argument(name: &str) -> SqlError {
    SqlError::new(codes::ER_WRONG_ARGUMENTS, format!("Incorrect arguments to {name}"))
}
