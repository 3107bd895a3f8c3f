//! How a query reads a view: a query that names one plans the view's query in its place,
//! like a derived table (`query::add_view_source`), so a view always reads what its tables
//! hold when the statement runs. The view's query is stored with every table name
//! qualified (`view_ddl`), so it reads the same tables whatever the reader's default
//! database; views nest at most [`VIEW_NESTING_MAX`] deep (1462).
//!
//! The reader needs SELECT on the view; the tables of its query are checked for the reader
//! too (as `SQL SECURITY INVOKER` would), whatever the view's SQL SECURITY says. A view whose
//! tables or columns are gone is 1356. CREATE, ALTER and DROP VIEW are `view_ddl`'s.

use std::collections::BTreeSet;
use std::ops::ControlFlow;

use sqlparser::ast::{self, TableFactor, Visit, Visitor};

use crate::query::{self, Env};
use quill_sql_context::catalog::{Catalog, Column, ColumnDefault, TableMeta};
use quill_sql_context::view_meta::ViewMeta;
use quill_sql_types::error::{Result, SqlError, codes};

/// Views nested in views, at most: deeper is error 1462 (MySQL's limit is its stack).
pub const VIEW_NESTING_MAX: usize = 64;

/// The view's query, planned for `env`, with the view's column names: what a reader
/// of the view gets.
///
/// # Errors
/// The query's planning errors (a table dropped since, say: 1356 as MySQL words it).
pub fn plan(view: &ViewMeta, env: &Env<'_>) -> Result<query::SelectPlan> {
    if env.view_depth() >= VIEW_NESTING_MAX {
        return Err(recursion(&view.db, &view.name));
    }
    let inner = env.inside_view();
    let (mut plan, _) = query::plan_query(&inner, &view.query, &[]).map_err(|e| match e.code {
        1146 | 1054 | 1356 => invalid(&view.db, &view.name),
        _ => e,
    })?;
    if !view.columns.is_empty() {
        if view.columns.len() != plan.columns.len() {
            return Err(invalid(&view.db, &view.name));
        }
        for (c, name) in plan.columns.iter_mut().zip(&view.columns) {
            c.name.clone_from(name);
        }
    }
    Ok(plan)
}

/// The view's columns as a table's, for SHOW COLUMNS and information_schema.COLUMNS:
/// names and types from its planned query, nullable unless the query says otherwise.
///
/// # Errors
/// As [`plan`].
pub fn as_table(view: &ViewMeta, env: &Env<'_>) -> Result<TableMeta> {
    let plan = plan(view, env)?;
    let columns = plan
        .columns
        .iter()
        .map(|c| Column {
            name: c.name.clone(),
            ty: c.ty.clone(),
            nullable: c.flags & query::flags::NOT_NULL == 0,
            default: ColumnDefault::Value(quill_storage::Value::Null),
            auto_increment: false,
            on_update_current_timestamp: false,
            comment: String::new(),
            generated: None,
        })
        .collect();
    Ok(TableMeta::new(0, &view.db, &view.name, columns, Vec::new(), Vec::new(), quill_storage::Collation::default()))
}

/// 1356: a view whose tables or columns are gone.
fn invalid(db: &str, name: &str) -> SqlError {
    SqlError::new(
        codes::ER_VIEW_INVALID,
        format!("View '{db}.{name}' references invalid table(s) or column(s) or function(s) or definer/invoker of view lack rights to use them"),
    )
}

pub fn recursion(db: &str, name: &str) -> SqlError {
    SqlError::new(codes::ER_VIEW_RECURSIVE, format!("`{db}`.`{name}` contains view recursion"))
}

/// Every table and view `view` reads, through the views it reads, each once: what reading
/// it locks (`LOCK TABLES` of a view locks these too, as MySQL's does).
#[must_use]
pub fn reads(catalog: &Catalog, view: &ViewMeta) -> BTreeSet<(String, String)> {
    let mut found = BTreeSet::new();
    let mut next: Vec<(String, String)> = tables_read(&view.query).into_iter().collect();
    while let Some(name) = next.pop() {
        if found.len() > VIEW_NESTING_MAX * VIEW_NESTING_MAX || !found.insert(name.clone()) {
            continue;
        }
        if let Some(inner) = catalog.view(&name.0, &name.1) {
            next.extend(tables_read(&inner.query));
        }
    }
    found
}

/// The qualified table names a (qualified) query reads.
pub fn tables_read(query: &ast::Query) -> BTreeSet<(String, String)> {
    struct Names(BTreeSet<(String, String)>);
    impl Visitor for Names {
        type Break = ();
        fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> ControlFlow<()> {
            if let TableFactor::Table { name, .. } = factor
                && let [db, table] = name.0.as_slice()
                && let (Some(db), Some(table)) = (db.as_ident(), table.as_ident())
            {
                self.0.insert((db.value.clone(), table.value.clone()));
            }
            ControlFlow::Continue(())
        }
    }
    let mut names = Names(BTreeSet::new());
    let _ = Visit::visit(query, &mut names);
    names.0
}
