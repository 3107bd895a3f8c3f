//! Queries: plan types, the planner and the executor.
//!
//! - Planning: `bind` resolves names and types against the catalog snapshot, `query` builds a
//!   [`query::SelectPlan`] (access paths, `join_order`, `hash_join`, `cte`, `views`), `cost`
//!   estimates what a plan reads, `explain` shows it.
//! - Execution: `query::run_select` and its operators read rows through a
//!   `quill_storage::ReadView`; `expr` evaluates expressions with `functions`, `aggregate`
//!   and `window`; `type_aggregation` gives a result column the type MySQL gives it; `sink`
//!   is the seam a result's rows leave by.
//! - The system schemas come from the layer above through `system_tables`.
//!
//! It builds on `quill-sql-context` (engine, session info, catalog) and `quill-sql-types`;
//! statements (DML, DDL, SHOW) and the session are above it.

mod aggregate;
pub mod bind;
pub mod cost;
pub mod cte;
pub mod explain;
pub mod expr;
pub mod functions;
mod hash_join;
mod join_order;
pub mod query;
pub mod sink;
pub mod system_tables;
mod type_aggregation;
pub mod views;
mod window;
