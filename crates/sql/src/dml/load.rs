//! LOAD DATA's rows into a table: where each field of a line goes (a column or a user
//! variable), the `SET col = expr` clause, and the insert of each finished row through the
//! bulk path (`dml::bulk`) or, under REPLACE, row by row.
//!
//! A row is built as MySQL builds it: the fields assign their columns and variables in list
//! order, then each `SET` assignment runs in order, seeing the columns assigned so far (a
//! column not yet assigned reads as its default) and the row's variables. A `SET` clause is
//! bound once, with the row's variables as hidden columns after the table's (see
//! `bind::USER_VARIABLES`). The variables keep the last row's values after the statement, as
//! MySQL's user variables do. Where it sits: in `sql::dml`, called by the session's
//! `LOAD DATA` (`session::load`), which has cut the file into fields (`load_data`).

use std::cmp::Ordering;

use quill_storage::Value;
use sqlparser::ast;

use super::{BulkBuffer, DmlCx, DmlResult, Duplicate, ProposedRow, default_value, env, insert_proposed, prepare_row, table_scope, with_table, zero_value};
use crate::bind::USER_VARIABLES;
use crate::bind::{Binder, ScopeColumn};
use crate::catalog::Catalog;
use crate::error::{Result, SqlError, Warning, codes};
use crate::expr::{Expr, RowCtx};
use crate::load_data::Duplicates;

/// Where one field of a line goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldTarget {
    /// The table's column at this index.
    Column(usize),
    /// The user variable at this index of [`LoadTargets::variables`].
    Variable(usize),
}

/// The column and variable list of a LOAD DATA, and its `SET` clause.
#[derive(Debug, Clone, Default)]
pub struct LoadTargets {
    /// One per field of a line, in order.
    pub fields: Vec<FieldTarget>,
    /// The user variables the list names, lower-cased, each once.
    pub variables: Vec<String>,
    /// `SET column = expression`, in order.
    pub set: Vec<(usize, ast::Expr)>,
    /// Fixed-row format: a column a short line leaves out gets its type's zero value (as
    /// MySQL's fixed-row reader sets it), not its default.
    pub fixed: bool,
}

/// What [`load`] did: the `Records: Deleted: Skipped: Warnings:` of LOAD DATA.
#[derive(Debug, Default)]
pub struct LoadResult {
    pub affected: u64,
    pub records: u64,
    pub deleted: u64,
    pub skipped: u64,
    pub last_insert_id: Option<u64>,
    /// The user variables' values after the last row, in [`LoadTargets::variables`] order.
    pub variables: Vec<Value>,
}

/// LOAD DATA's rows into `db.name`, each row's fields going where `targets` says (see the
/// module doc). A row with fewer fields leaves the rest to their defaults (1261 for each
/// column left out), one with more drops the extra (1262); both are warnings when
/// `cx.strict` is off and errors when it is on. A row whose key is taken replaces the old
/// one, is skipped with a warning, or is error 1062, as `duplicates` says.
///
/// # Errors
/// As INSERT: data errors (under strict mode), duplicates, lock waits; and the binding
/// errors of the `SET` clause (1054 for an unknown column).
pub fn load(
    catalog: &Catalog,
    cx: &mut DmlCx<'_>,
    db: &str,
    name: &str,
    targets: &LoadTargets,
    rows: impl Iterator<Item = Vec<Value>>,
    duplicates: Duplicates,
) -> Result<LoadResult> {
    let replace = duplicates == Duplicates::Replace;
    let ignore = duplicates == Duplicates::Ignore;
    with_table(catalog, db, name, |catalog, t, data| {
        let set = bind_set(catalog, cx, t, name, targets)?;
        // What SET reads for a column the row has not assigned: its default, the same for
        // every row of the statement (a column without one reads as NULL).
        let defaults: Vec<Value> = if set.is_empty() {
            Vec::new()
        } else {
            (0..t.columns.len()).map(|col| default_value(t, col, cx.now_us, cx.info).unwrap_or(Value::Null)).collect()
        };
        let width = t.columns.len();
        let mut res = DmlResult::default();
        let mut out = LoadResult { variables: vec![Value::Null; targets.variables.len()], ..LoadResult::default() };
        let mut ids = super::AutoIds::default();
        // Foreign keys are checked, and triggers fired, row by row, off the bulk path.
        let row_by_row =
            replace || super::foreign_keys::checks_inserts(cx, t) || crate::triggers::fires(catalog, cx, t, quill_sql_frontend::program::Event::Insert);
        let mut bulk = if row_by_row { None } else { BulkBuffer::start(cx, data, ignore, None) };
        // The bulk path's count of skipped duplicates; `out.skipped` is derived below instead.
        let mut duplicates = 0;
        let mut each_row = |cx: &mut DmlCx<'_>, fields: Vec<Value>| -> Result<()> {
            out.records += 1;
            let row_no = out.records;
            let mut vals: ProposedRow = vec![None; width];
            let given = fields.len();
            let expected = targets.fields.len();
            if !out.variables.is_empty() {
                // A variable the row has no field for is NULL, not the previous row's value.
                out.variables.iter_mut().for_each(|v| *v = Value::Null);
            }
            for (&target, v) in targets.fields.iter().zip(fields) {
                match target {
                    FieldTarget::Column(col) => vals[col] = Some(v),
                    FieldTarget::Variable(var) => out.variables[var] = v,
                }
            }
            if targets.fixed {
                for target in targets.fields.iter().skip(given) {
                    // Quill has no zero date ('0000-00-00'): a temporal column keeps its default.
                    if let FieldTarget::Column(col) = *target
                        && !t.columns[col].ty.is_temporal()
                    {
                        vals[col] = Some(zero_value(&t.columns[col].ty));
                    }
                }
            }
            // One 1261 per column the row leaves out, as MySQL counts them (a variable left
            // out is NULL, without a warning).
            let condition = match given.cmp(&expected) {
                Ordering::Less => {
                    let columns = targets.fields[given..].iter().filter(|t| matches!(t, FieldTarget::Column(_))).count();
                    (columns > 0).then(|| (codes::ER_WARN_TOO_FEW_RECORDS, format!("Row {row_no} doesn't contain data for all columns"), columns))
                }
                Ordering::Greater => {
                    Some((codes::ER_WARN_TOO_MANY_RECORDS, format!("Row {row_no} was truncated; it contained more data than there were input columns"), 1))
                }
                Ordering::Equal => None,
            };
            if let Some((code, message, times)) = condition {
                if cx.strict {
                    return Err(SqlError::new(code, message));
                }
                cx.warnings.extend(std::iter::repeat_n(Warning { level: "Warning", code: code.0, message }, times));
            }
            if !set.is_empty() {
                apply_set(catalog, cx, &set, &defaults, &mut vals, &out.variables)?;
            }
            match bulk.as_mut() {
                Some(b) => match prepare_row(cx, t, data, vals, row_no, ignore, &mut ids, true)? {
                    Some(row) => b.push(cx, t, data, super::Finished::Row(row), &mut res, &mut duplicates),
                    None => Ok(()),
                },
                None => {
                    // Rows REPLACE removed to make room (insert_row's count of duplicates).
                    let mut replaced = 0;
                    insert_proposed(catalog, cx, t, data, vals, row_no, Duplicate { replace, ignore, on_dup: None }, &mut res, &mut replaced, &mut ids)?;
                    out.deleted += replaced;
                    Ok(())
                }
            }
        };
        let loaded = rows.into_iter().try_for_each(|fields| each_row(cx, fields));
        match bulk.take() {
            Some(b) if loaded.is_ok() => b.finish(cx, t, data, &mut res, &mut duplicates)?,
            Some(b) => b.abandon(data),
            None => {}
        }
        loaded?;
        if !replace {
            // Each record inserts one row or is skipped (a data error or a duplicate, under IGNORE).
            out.skipped = out.records - res.affected;
        }
        out.affected = res.affected;
        out.last_insert_id = ids.first_generated;
        Ok(out)
    })
}

/// Binds the `SET` clause against the table's columns followed by the row's variables.
fn bind_set(catalog: &Catalog, cx: &DmlCx<'_>, t: &crate::catalog::TableMeta, name: &str, targets: &LoadTargets) -> Result<Vec<(usize, Expr)>> {
    if targets.set.is_empty() {
        return Ok(Vec::new());
    }
    let e = env(catalog, cx);
    let mut scope = table_scope(t, name);
    scope.columns.extend(
        targets.variables.iter().map(|v| ScopeColumn { hidden: true, ..ScopeColumn::computed(USER_VARIABLES, v, crate::show::text(u32::from(u16::MAX))) }),
    );
    let binder = Binder::new(&e, &scope, "field list");
    targets.set.iter().map(|(col, expr)| Ok((*col, binder.bind(expr)?))).collect()
}

/// Runs the `SET` assignments of one row, in order, each seeing the ones before it.
fn apply_set(catalog: &Catalog, cx: &DmlCx<'_>, set: &[(usize, Expr)], defaults: &[Value], vals: &mut ProposedRow, variables: &[Value]) -> Result<()> {
    let mut combined = Vec::with_capacity(vals.len() + variables.len());
    combined.extend(vals.iter().zip(defaults).map(|(v, default)| v.as_ref().unwrap_or(default).clone()));
    combined.extend(variables.iter().cloned());
    let e = env(catalog, cx);
    for (col, expr) in set {
        let v = expr.eval(&e, &RowCtx::new(&combined))?;
        combined[*col] = v.clone();
        vals[*col] = Some(v);
    }
    Ok(())
}
