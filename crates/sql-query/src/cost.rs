//! Rough cost estimates of a planned statement, and what the session does with them: a
//! statement that will examine many rows runs off the async runtime's worker, so the other
//! connections that worker serves keep being served while it runs.
//!
//! The estimate is the number of rows a plan examines: per block, the product over its
//! sources of the rows each access path reads (a full scan reads the table's row count, a
//! range a third of it, an index equality or a hash-join probe [`INDEX_EQ_ROWS`], a point
//! one row), plus what derived tables and hash-join builds examine. It only has to tell a point query from a long scan or join.
//! A range on a single-column integer primary key whose bounds are known (constants, or a
//! prepared statement's parameters) reads at most the integers between them: sysbench's
//! `BETWEEN ? AND ? + 99` is 100 rows, not a third of the table.

use crate::expr::Expr;
use crate::query::{Access, PlanKind, SelectPlan, SourceData};
use quill_sql_context::catalog::{Catalog, TableMeta};
use quill_sql_types::types::SqlType;
use quill_storage::Value;

/// A statement estimated to examine more rows than this is heavy: it runs under
/// `tokio::task::block_in_place` (see [`run_heavy`]).
pub const HEAVY_ROWS_EXAMINED: f64 = 50_000.0;
/// Rows an equality on a secondary index is assumed to find.
pub const INDEX_EQ_ROWS: f64 = 10.0;
/// Rows a derived table is assumed to produce.
pub const DERIVED_ROWS: f64 = 1_000.0;

/// Rows `plan` examines, roughly, with `params` the values of its parameters.
#[must_use]
pub fn rows_examined(plan: &SelectPlan, catalog: &Catalog, params: &[Value]) -> f64 {
    match &plan.kind {
        PlanKind::Union { left, right, .. } => rows_examined(left, catalog, params) + rows_examined(right, catalog, params),
        // Each round runs the recursive blocks again, over rows the estimate cannot know.
        PlanKind::Recursive { seeds, steps, .. } => seeds.iter().chain(steps).map(|p| rows_examined(p, catalog, params)).sum::<f64>() * DERIVED_ROWS,
        PlanKind::Block(block) => {
            let mut product = 1.0;
            let mut derived = 0.0;
            for source in &block.sources {
                let (meta, table_rows) = match &source.data {
                    SourceData::Table { db, name, .. } => {
                        let meta = catalog.table(db, name).ok();
                        (meta, meta.map_or(0.0, |t| t.data.statistics().rows as f64))
                    }
                    SourceData::Work(_) => (None, DERIVED_ROWS),
                    SourceData::Rows(_, sub) => {
                        derived += sub.as_ref().map_or(0.0, |p| rows_examined(p, catalog, params));
                        (None, DERIVED_ROWS)
                    }
                };
                let read = match &source.access {
                    Access::Full => table_rows,
                    Access::PkPoint(_) => 1.0,
                    Access::PkIn(values) => values.len() as f64,
                    Access::PkRange { low, high } => {
                        meta.and_then(|t| int_key_range_rows(t, low.as_ref(), high.as_ref(), params)).map_or(table_rows / 3.0, |n| n.min(table_rows))
                    }
                    Access::IndexRange { .. } => table_rows / 3.0,
                    Access::IndexEq { .. } => INDEX_EQ_ROWS,
                    // Built once (a full read), then a few rows per probe.
                    Access::Hash(_) => {
                        derived += table_rows;
                        INDEX_EQ_ROWS
                    }
                };
                product *= read.max(1.0);
            }
            product + derived
        }
    }
}

/// Whether `plan` is heavy (see [`HEAVY_ROWS_EXAMINED`]).
#[must_use]
pub fn is_heavy(plan: &SelectPlan, catalog: &Catalog, params: &[Value]) -> bool {
    rows_examined(plan, catalog, params) > HEAVY_ROWS_EXAMINED
}

/// The most rows a range on `table`'s primary key reads, when the key is one integer column
/// and both bounds are known integers; `None` otherwise.
fn int_key_range_rows(table: &TableMeta, low: Option<&(Expr, bool)>, high: Option<&(Expr, bool)>, params: &[Value]) -> Option<f64> {
    let [column] = table.primary[..] else { return None };
    if !matches!(table.columns.get(column)?.ty, SqlType::Int { .. }) {
        return None;
    }
    let known = |bound: Option<&(Expr, bool)>| -> Option<(Value, bool)> {
        let (expr, inclusive) = bound?;
        let value = match expr {
            Expr::Const(v) => v,
            Expr::Param(i) => params.get(*i)?,
            _ => return None,
        };
        Some((value.clone(), *inclusive))
    };
    integers_between(known(low)?, known(high)?)
}

/// How many integers lie between two bounds, each a value and whether it is included;
/// `None` when either is not an integer.
fn integers_between((low, low_inclusive): (Value, bool), (high, high_inclusive): (Value, bool)) -> Option<f64> {
    let int = |v: &Value| match *v {
        Value::Int(i) => Some(i128::from(i)),
        Value::UInt(u) => Some(i128::from(u)),
        _ => None,
    };
    let first = int(&low)? + i128::from(!low_inclusive);
    let last = int(&high)? - i128::from(!high_inclusive);
    Some(if last < first { 0.0 } else { (last - first + 1) as f64 })
}

/// Runs `f`; when `heavy` and on a multi-threaded tokio runtime, under `block_in_place`,
/// which hands this worker's other tasks (and the I/O driver) to another thread first.
pub fn run_heavy<R>(heavy: bool, f: impl FnOnce() -> R) -> R {
    let multi_thread = tokio::runtime::Handle::try_current().is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    if heavy && multi_thread { tokio::task::block_in_place(f) } else { f() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_bounds_count_the_integers_between_them() {
        let b = |v: i64, inclusive: bool| (Value::Int(v), inclusive);
        assert_eq!(integers_between(b(5, true), b(104, true)), Some(100.0), "BETWEEN 5 AND 104");
        assert_eq!(integers_between(b(5, false), b(104, false)), Some(98.0), "> 5 AND < 104");
        assert_eq!(integers_between(b(7, true), b(7, true)), Some(1.0));
        assert_eq!(integers_between(b(9, true), b(4, true)), Some(0.0), "an inverted range reads nothing");
        assert_eq!(integers_between((Value::UInt(u64::MAX), true), (Value::UInt(u64::MAX), true)), Some(1.0));
        assert_eq!(integers_between(b(i64::MIN, true), (Value::UInt(u64::MAX), true)), Some(2f64.powi(64) * 1.5));
        assert_eq!(integers_between((Value::Str("5".into()), true), b(9, true)), None, "not an integer: unknown");
        assert_eq!(integers_between((Value::Double(1.5), true), b(9, true)), None);
    }
}
