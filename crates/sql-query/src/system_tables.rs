//! The seam through which the planner reads the system schemas: `information_schema` and
//! `performance_schema` tables are made by the statements layer above (it knows SHOW, the
//! process list, the lock manager and the replica), and a query that names one reaches it
//! through the [`SystemTables`] its [`Env`] carries.
//!
//! The same seam runs stored functions ([`SystemTables::call_function`]): their programs
//! run statements, which is the layer above's.
//!
//! Invariant: a system table's rows are computed when the statement opens it, under the
//! session's privileges (rows the account may not see are left out), and read like a
//! derived table's.

use quill_storage::Value;

use crate::query::{Env, OutColumn};
use quill_sql_types::error::{Result, SqlError};

/// A system table's columns and rows.
pub type SystemTable = (Vec<OutColumn>, Vec<Vec<Value>>);

/// What the planner asks of the system schemas.
pub trait SystemTables: Sync {
    /// `information_schema`.`name` as `env`'s session sees it.
    ///
    /// # Errors
    /// 1109 for a table the schema does not have; a privilege error (1227) for one the
    /// account may not read.
    fn information_schema(&self, env: &Env<'_>, name: &str) -> Result<SystemTable>;

    /// `performance_schema`.`name` as `env`'s session sees it; `None` for a name the schema
    /// does not make (the catalog's own `performance_schema` tables, if any, then answer).
    fn performance_schema(&self, env: &Env<'_>, name: &str) -> Option<Result<SystemTable>>;

    /// Runs the stored function `routine` on `args` (the statement layer runs programs).
    ///
    /// # Errors
    /// The function's.
    fn call_function(&self, env: &Env<'_>, routine: &quill_sql_context::program_meta::RoutineMeta, args: Vec<Value>) -> Result<Value> {
        let _ = (env, args);
        Err(SqlError::unsupported(format!("FUNCTION {}.{} here", routine.db, routine.name)))
    }
}
