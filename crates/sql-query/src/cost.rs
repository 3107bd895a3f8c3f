//! Rough cost estimates of a planned statement, and what the session does with them: a
//! statement that will examine many rows runs off the async runtime's worker, so the other
//! connections that worker serves keep being served while it runs.
//!
//! The estimate is the number of rows a plan examines: per block, the product over its
//! sources of the rows each access path reads (a full scan reads the table's row count, a
//! range a third of it, an index equality or a hash-join probe [`INDEX_EQ_ROWS`], a point
//! one row), plus what derived tables and hash-join builds examine. It only has to tell a point query from a long scan or join.

use crate::query::{Access, PlanKind, SelectPlan, SourceData};
use quill_sql_context::catalog::Catalog;

/// A statement estimated to examine more rows than this is heavy: it runs under
/// `tokio::task::block_in_place` (see [`run_heavy`]).
pub const HEAVY_ROWS_EXAMINED: f64 = 50_000.0;
/// Rows an equality on a secondary index is assumed to find.
pub const INDEX_EQ_ROWS: f64 = 10.0;
/// Rows a derived table is assumed to produce.
pub const DERIVED_ROWS: f64 = 1_000.0;

/// Rows `plan` examines, roughly.
#[must_use]
pub fn rows_examined(plan: &SelectPlan, catalog: &Catalog) -> f64 {
    match &plan.kind {
        PlanKind::Union { left, right, .. } => rows_examined(left, catalog) + rows_examined(right, catalog),
        // Each round runs the recursive blocks again, over rows the estimate cannot know.
        PlanKind::Recursive { seeds, steps, .. } => seeds.iter().chain(steps).map(|p| rows_examined(p, catalog)).sum::<f64>() * DERIVED_ROWS,
        PlanKind::Block(block) => {
            let mut product = 1.0;
            let mut derived = 0.0;
            for source in &block.sources {
                let table_rows = match &source.data {
                    SourceData::Table { db, name, .. } => catalog.table(db, name).map_or(0.0, |t| t.data.statistics().rows as f64),
                    SourceData::Work(_) => DERIVED_ROWS,
                    SourceData::Rows(_, sub) => {
                        derived += sub.as_ref().map_or(0.0, |p| rows_examined(p, catalog));
                        DERIVED_ROWS
                    }
                };
                let read = match &source.access {
                    Access::Full => table_rows,
                    Access::PkPoint(_) => 1.0,
                    Access::PkIn(values) => values.len() as f64,
                    Access::PkRange { .. } | Access::IndexRange { .. } => table_rows / 3.0,
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
pub fn is_heavy(plan: &SelectPlan, catalog: &Catalog) -> bool {
    rows_examined(plan, catalog) > HEAVY_ROWS_EXAMINED
}

/// Runs `f`; when `heavy` and on a multi-threaded tokio runtime, under `block_in_place`,
/// which hands this worker's other tasks (and the I/O driver) to another thread first.
pub fn run_heavy<R>(heavy: bool, f: impl FnOnce() -> R) -> R {
    let multi_thread = tokio::runtime::Handle::try_current().is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    if heavy && multi_thread { tokio::task::block_in_place(f) } else { f() }
}
