//! INSERT, REPLACE, UPDATE and DELETE.
//!
//! Each statement runs in two phases on its catalog snapshot: first it binds its
//! expressions and computes what to write (running any INSERT ... SELECT to completion,
//! so a statement never reads its own writes); then it applies the writes through the
//! target table's handler, each row write under the table's write latch together with
//! its insert-intention check. Every version a statement pushes is recorded in `undo` so
//! a failing statement can be rolled back alone.

use std::cmp::Ordering;

use quill_storage::{Collation, Decimal, Handler, ReadView, Row, TxnId, Value, WriteError};
use sqlparser::ast;

use crate::bind::{Binder, Scope, ScopeColumn};
use crate::catalog::{Catalog, ColumnDefault, TableMeta};
use crate::error::{Result, SqlError, Wait, Warning, codes};
use crate::expr::{Expr, RowCtx};
use crate::locking::{self, LockSpec};
use crate::ops;
use crate::query::{self, Env, JoinKind, Source, SourceData};
use crate::session_info::SessionInfo;
use crate::triggers;
use crate::types::{WriteContext, coerce_to_column};
use quill_sql_frontend::program::{Event, Timing};
use quill_txn::LockMode;

mod bulk;
mod copy;
pub mod foreign_keys;
mod load;
mod multi;
use bulk::{BulkBuffer, Finished};
use copy::Incoming;
pub use load::{FieldTarget, LoadTargets, load};

/// What a DML statement runs with.
pub struct DmlCx<'a> {
    pub txn: TxnId,
    pub info: &'a SessionInfo,
    pub params: &'a [Value],
    pub now_us: i64,
    /// `(table id, primary key)` of every version this statement pushed.
    pub undo: &'a mut crate::write_log::WriteLog,
    pub warnings: &'a mut Vec<Warning>,
    pub strict: bool,
    /// Report rows matched rather than rows changed (CLIENT_FOUND_ROWS).
    pub found_rows: bool,
    /// How the statement's scans lock (exclusive; gaps by isolation level).
    pub lock: LockSpec,
    /// READ UNCOMMITTED: INSERT ... SELECT reads the newest versions, committed or not.
    pub read_uncommitted: bool,
    /// Triggers fire. False for a replica's applier: the source's row changes already hold
    /// what its triggers did (row-based replication).
    pub fire_triggers: bool,
    /// Ids of the tables whose triggers run around this statement: a write to one of them
    /// is refused (1442, `triggers`).
    pub firing: Vec<u64>,
}

impl DmlCx<'_> {
    /// The context a statement run inside this one works in (a trigger's), with `params`.
    pub fn nested<'b>(&'b mut self, params: &'b [Value]) -> DmlCx<'b> {
        DmlCx {
            txn: self.txn,
            info: self.info,
            params,
            now_us: self.now_us,
            undo: &mut *self.undo,
            warnings: &mut *self.warnings,
            strict: self.strict,
            found_rows: self.found_rows,
            lock: self.lock,
            read_uncommitted: self.read_uncommitted,
            fire_triggers: self.fire_triggers,
            firing: self.firing.clone(),
        }
    }
}

#[derive(Debug, Default)]
pub struct DmlResult {
    pub affected: u64,
    /// The first AUTO_INCREMENT value the statement generated: LAST_INSERT_ID() after it.
    pub last_insert_id: Option<u64>,
    /// The AUTO_INCREMENT column's value in the last row the statement wrote, generated or
    /// given: the OK packet's insert id when nothing was generated.
    pub last_auto_value: Option<u64>,
    pub info: String,
}

/// The AUTO_INCREMENT values one INSERT met, row by row (`finish_row`).
#[derive(Debug, Default, Clone, Copy)]
pub struct AutoIds {
    /// The first value generated (for NULL or 0 in the column).
    pub first_generated: Option<u64>,
    /// The column's value in the last row finished, generated or given.
    pub last_value: Option<u64>,
}

pub(crate) fn env<'a>(catalog: &'a Catalog, cx: &DmlCx<'a>) -> Env<'a> {
    Env {
        catalog,
        view: ReadView::current(cx.txn),
        params: cx.params,
        now_us: cx.now_us,
        info: cx.info,
        // Reads other than the target table's scan (INSERT ... SELECT, subqueries) take
        // shared locks at REPEATABLE READ and SERIALIZABLE, and none below, as InnoDB's do.
        lock: cx.lock.gaps.then_some(LockSpec { mode: LockMode::Shared, ..cx.lock }),
        div_zero_is_error: cx.strict && cx.info.vars.get("sql_mode").is_some_and(|m| m.contains("ERROR_FOR_DIVISION_BY_ZERO")),
        ctes: crate::cte::Ctes::default(),
        views_open: 0,
        system_tables: &crate::show::SYSTEM_SCHEMAS,
    }
}

/// The scope of one table's columns.
#[must_use]
pub fn table_scope(t: &TableMeta, alias: &str) -> Scope {
    Scope {
        columns: t
            .columns
            .iter()
            .map(|c| ScopeColumn {
                table: alias.to_owned(),
                db: t.db.clone(),
                org_table: t.name.clone(),
                name: c.name.clone(),
                ty: c.ty.clone(),
                nullable: c.nullable,
                hidden: false,
                flags: 0,
            })
            .collect(),
    }
}

fn write_error(e: WriteError, t: &TableMeta, row: &Row, cx: &DmlCx<'_>) -> SqlError {
    match e {
        // Another transaction is writing a row with the same key: queue behind its lock. If it
        // ended in between, the lock is ours at once: the statement runs again, as after a wait.
        WriteError::Locked { pk, .. } => match locking::lock_for_write(&cx.info.engine.txns.locks, cx.txn, t.id, t.data.as_ref(), &pk) {
            Err(e) => e,
            Ok(()) => SqlError::must_wait(Wait::RowLock),
        },
        WriteError::Duplicate { index, .. } => duplicate_entry(t, index, Some(row)),
    }
}

/// MySQL's 1062 for a duplicate in key `index` of `t` (`None`: the primary key), naming the
/// key's values in `row` (the row that has the key; empty when it is not known).
pub(crate) fn duplicate_entry(t: &TableMeta, index: Option<usize>, row: Option<&Row>) -> SqlError {
    let (name, cols) = match index {
        None => ("PRIMARY", t.primary.as_slice()),
        Some(i) => (t.indexes[i].name.as_str(), t.indexes[i].columns.as_slice()),
    };
    let shown: Vec<String> = row.map(|row| cols.iter().map(|&c| ops::to_string_lossy(&row[c])).collect()).unwrap_or_default();
    SqlError::new(codes::ER_DUP_ENTRY, format!("Duplicate entry '{}' for key '{}.{}'", shown.join("-"), t.name, name))
}

/// Insert `row` into `t` with the locks it needs: no other transaction's gap lock over any
/// of its index entries (insert intention), then the row's key, implicitly when no one else
/// asked for it ([`locking::insert_locked`]). The table's write latch is held from the
/// intention check to the write, so no gap lock is granted in between.
fn write_locked(cx: &DmlCx<'_>, t: &TableMeta, data: &dyn Handler, row: &Row) -> Result<std::result::Result<Vec<u8>, WriteError>> {
    let locks = &cx.info.engine.txns.locks;
    let latch = data.write_latch();
    let pk = data.insert_key(row);
    // Insert intention first, as InnoDB: a transaction held back by a gap holds nothing yet.
    locking::check_insert(locks, cx.txn, t.id, || {
        let mut keys = data.index_entries(row, &pk);
        keys.push((0, pk.clone()));
        keys
    })?;
    locking::insert_locked(locks, cx.txn, t.id, data, &pk, || data.write_row(&latch, cx.txn, row))
}

/// Run `f` on a table's definition and storage.
fn with_table<T>(catalog: &Catalog, db: &str, name: &str, f: impl FnOnce(&Catalog, &TableMeta, &dyn Handler) -> Result<T>) -> Result<T> {
    let meta = catalog.table(db, name)?;
    f(catalog, meta, meta.data.as_ref())
}

/// The value a column gets when an INSERT does not give one.
fn default_value(t: &TableMeta, col: usize, now_us: i64, info: &SessionInfo) -> Result<Value> {
    column_default(&t.columns[col], now_us, info)
}

/// The value column `c` takes in a row that does not name it: its constant default,
/// `now_us` for CURRENT_TIMESTAMP, or its default expression evaluated now (each row gets
/// its own `UUID()`).
///
/// # Errors
/// 1364 for a NOT NULL column without a default; the expression's errors.
pub fn column_default(c: &crate::catalog::Column, now_us: i64, info: &SessionInfo) -> Result<Value> {
    Ok(match &c.default {
        ColumnDefault::Value(v) => v.clone(),
        ColumnDefault::CurrentTimestamp => Value::DateTime(crate::types::round_micros(now_us, c.ty.decimals().min(6))),
        ColumnDefault::Expression(e) => {
            let catalog = info.engine.catalog();
            let env = crate::show::statement_env(&catalog, ReadView::current(0), &[], now_us, info);
            let scope = crate::bind::Scope::default();
            Binder::new(&env, &scope, "default").bind(e)?.eval(&env, &RowCtx::new(&[]))?
        }
        ColumnDefault::None if c.nullable || c.auto_increment => Value::Null,
        ColumnDefault::None => return Err(SqlError::new(codes::ER_NO_DEFAULT_FOR_FIELD, format!("Field '{}' doesn't have a default value", c.name))),
    })
}

/// Coerce and check every column of a full row before it is written.
fn finish_row(t: &TableMeta, mut row: Row, row_no: u64, cx: &mut DmlCx<'_>, data: &dyn Handler, ids: &mut AutoIds, checked: bool) -> Result<Row> {
    for (i, c) in t.columns.iter().enumerate() {
        if c.generated.is_some() {
            continue;
        }
        let v = std::mem::replace(&mut row[i], Value::Null);
        let mut wcx = WriteContext { column: &c.name, row: row_no, strict: cx.strict, warnings: cx.warnings };
        let mut v = coerce_to_column(v, &c.ty, &mut wcx)?;
        if c.auto_increment {
            let zero = matches!(v, Value::Int(0) | Value::UInt(0));
            if v.is_null() || zero {
                let id = data.take_auto_increment();
                let mut wcx = WriteContext { column: &c.name, row: row_no, strict: cx.strict, warnings: cx.warnings };
                v = coerce_to_column(Value::UInt(id), &c.ty, &mut wcx)?;
                ids.first_generated.get_or_insert(id);
                ids.last_value = Some(id);
            } else {
                let n = ops::to_i128(&v);
                if n >= 0 {
                    data.raise_auto_increment(u64::try_from(n + 1).unwrap_or(u64::MAX));
                }
                ids.last_value = u64::try_from(n).ok();
            }
        }
        if v.is_null() && !c.nullable && checked {
            if cx.strict {
                return Err(SqlError::new(codes::ER_BAD_NULL_ERROR, format!("Column '{}' cannot be null", c.name)));
            }
            cx.warnings.push(Warning { level: "Warning", code: codes::ER_BAD_NULL_ERROR.0, message: format!("Column '{}' cannot be null", c.name) });
            v = zero_value(&c.ty);
        }
        row[i] = v;
    }
    if !checked {
        return Ok(row);
    }
    if t.columns.iter().any(|c| c.generated.is_some()) {
        generate_columns(t, &mut row, row_no, cx)?;
    }
    if !t.checks.is_empty() {
        let catalog = cx.info.engine.catalog();
        let env = crate::show::statement_env(&catalog, ReadView::current(cx.txn), &[], cx.now_us, cx.info);
        crate::check_constraints::enforce(&env, t, &row)?;
    }
    Ok(row)
}

/// Computes a row's generated columns from its other columns, in column order (so one may
/// read a generated column before it), each coerced to its type.
///
/// # Errors
/// The expression's errors; the column's conversion errors; 1048 for NULL in a NOT NULL one.
fn generate_columns(t: &TableMeta, row: &mut Row, row_no: u64, cx: &mut DmlCx<'_>) -> Result<()> {
    let catalog = cx.info.engine.catalog();
    let scope = table_scope(t, &t.name);
    for (i, c) in t.columns.iter().enumerate() {
        let Some(g) = &c.generated else { continue };
        let value = {
            let e = crate::show::statement_env(&catalog, ReadView::current(cx.txn), &[], cx.now_us, cx.info);
            Binder::new(&e, &scope, "generated column function").bind(&g.expr)?.eval(&e, &RowCtx::new(row))?
        };
        let mut wcx = WriteContext { column: &c.name, row: row_no, strict: cx.strict, warnings: cx.warnings };
        let value = coerce_to_column(value, &c.ty, &mut wcx)?;
        if value.is_null() && !c.nullable {
            return Err(SqlError::new(codes::ER_BAD_NULL_ERROR, format!("Column '{}' cannot be null", c.name)));
        }
        row[i] = value;
    }
    Ok(())
}

/// 3105: a statement gave a generated column a value.
fn generated_given(t: &TableMeta, column: usize) -> SqlError {
    SqlError::new(
        codes::ER_NON_DEFAULT_VALUE_FOR_GENERATED_COLUMN,
        format!("The value specified for generated column '{}' in table '{}' is not allowed.", t.columns[column].name, t.name),
    )
}

pub(crate) fn zero_value(ty: &crate::types::SqlType) -> Value {
    use crate::types::SqlType as T;
    match ty {
        T::Int { unsigned: true, .. } => Value::UInt(0),
        T::Int { .. } | T::Year => Value::Int(0),
        T::Decimal { .. } => Value::Decimal(Decimal::zero()),
        T::Float | T::Double => Value::Double(0.0),
        T::Binary(_) | T::VarBinary(_) | T::Blob(_) => Value::Bytes(vec![]),
        T::Date => Value::Date(0),
        T::DateTime(_) | T::Timestamp(_) => Value::DateTime(0),
        T::Time(_) => Value::Time(0),
        _ => Value::Str(String::new()),
    }
}

/// A row an INSERT proposes: values in column order, `None` where the column was
/// not given (it gets its default).
type ProposedRow = Vec<Option<Value>>;

/// INSERT / REPLACE.
///
/// # Errors
/// The table a statement writes. A write through an updatable view was made one on its table
/// before it got here (`view_writes`): a view here is one that cannot take the write, MySQL's
/// error (1471 for INSERT, 1288 otherwise).
fn write_target<'c>(catalog: &'c Catalog, db: &str, name: &str, statement: &str) -> Result<&'c TableMeta> {
    if catalog.view(db, name).is_some() {
        return Err(if statement == "INSERT" {
            SqlError::new(codes::ER_NON_INSERTABLE_TABLE, format!("The target table {name} of the INSERT is not insertable-into"))
        } else {
            SqlError::new(codes::ER_NON_UPDATABLE_TABLE, format!("The target table {name} of the {statement} is not updatable"))
        });
    }
    catalog.table(db, name)
}

/// Everything a write can fail with; `lock_holder` when it must wait.
pub fn insert(catalog: &Catalog, cx: &mut DmlCx<'_>, stmt: &ast::Insert) -> Result<DmlResult> {
    let ast::TableObject::TableName(name) = &stmt.table else {
        return Err(SqlError::unsupported("INSERT INTO TABLE FUNCTION"));
    };
    let (db, tname) = query::resolve_table_name(cx.info, name)?;
    let t = write_target(catalog, &db, &tname, "INSERT")?;
    if stmt.ignore {
        // INSERT IGNORE turns data errors into warnings and stores clamped values.
        cx.strict = false;
    }
    // Column list.
    let targets: Vec<usize> = if stmt.columns.is_empty() {
        (0..t.columns.len()).collect()
    } else {
        stmt.columns
            .iter()
            .map(|c| {
                let n = c.0.last().map(ToString::to_string).unwrap_or_default();
                let n = n.trim_matches('`');
                t.column_index(n).ok_or_else(|| SqlError::bad_field(n, "field list"))
            })
            .collect::<Result<_>>()?
    };
    // Phase 1: proposed rows.
    let mut proposed: Vec<ProposedRow> = Vec::new();
    {
        let e = env(catalog, cx);
        let empty = Scope::default();
        let binder = Binder::new(&e, &empty, "field list");
        match stmt.source.as_deref().map(|q| q.body.as_ref()) {
            Some(ast::SetExpr::Values(values)) => {
                for (n, row) in values.rows.iter().enumerate() {
                    let row = &row.content;
                    if row.len() != targets.len() && !(row.is_empty() && stmt.columns.is_empty()) {
                        return Err(SqlError::new(codes::ER_WRONG_VALUE_COUNT_ON_ROW, format!("Column count doesn't match value count at row {}", n + 1)));
                    }
                    let mut vals: Vec<Option<Value>> = vec![None; t.columns.len()];
                    for (&col, ex) in targets.iter().zip(row) {
                        let is_default = matches!(ex, ast::Expr::Identifier(id) if id.quote_style.is_none() && id.value.eq_ignore_ascii_case("DEFAULT"));
                        if !is_default {
                            vals[col] = Some(binder.bind(ex)?.eval(&e, &RowCtx::new(&[]))?);
                        }
                    }
                    proposed.push(vals);
                }
            }
            // INSERT ... SELECT: its rows are inserted as the query produces them (below).
            Some(_) => {}
            None if !stmt.assignments.is_empty() => {
                let mut vals: Vec<Option<Value>> = vec![None; t.columns.len()];
                for a in &stmt.assignments {
                    let col = assignment_column(t, a)?;
                    vals[col] = Some(binder.bind(&a.value)?.eval(&e, &RowCtx::new(&[]))?);
                }
                proposed.push(vals);
            }
            None => return Err(SqlError::parse("")),
        }
    }
    // ON DUPLICATE KEY UPDATE: scope = existing row ++ proposed row.
    let on_dup: Option<Vec<(usize, Expr)>> = match &stmt.on {
        Some(ast::OnInsert::DuplicateKeyUpdate(assigns)) => {
            let e = env(catalog, cx);
            let mut scope = table_scope(t, &tname);
            let width = t.columns.len();
            // The proposed row: `VALUES(col)`, or MySQL 8.0.19's row alias (`VALUES (...) AS
            // new`, then `new.col`) and column aliases (`AS new(m, n)`, then `m`), which name
            // the insert's columns in its order.
            let alias = stmt.insert_alias.as_ref();
            let col_aliases = alias.and_then(|a| a.col_aliases.as_deref()).unwrap_or_default();
            if !col_aliases.is_empty() && col_aliases.len() != targets.len() {
                return Err(SqlError::new(codes::ER_WRONG_VALUE_COUNT_ON_ROW, "Column count doesn't match value count at row 1"));
            }
            let row_name = alias.map_or_else(|| String::from("\u{0}values"), |a| query::object_name_parts(&a.row_alias).pop().unwrap_or_default());
            scope.columns.extend(table_scope(t, &tname).columns.into_iter().enumerate().map(|(i, mut c)| {
                c.hidden = true;
                c.table.clone_from(&row_name);
                if let Some(at) = targets.iter().position(|&x| x == i).filter(|&at| at < col_aliases.len()) {
                    c.name.clone_from(&col_aliases[at].value);
                    c.hidden = false;
                }
                c
            }));
            let b = Binder { values_offset: Some(width), ..Binder::new(&e, &scope, "field list") };
            Some(assigns.iter().map(|a| Ok((assignment_column(t, a)?, b.bind(&a.value)?))).collect::<Result<_>>()?)
        }
        Some(_) => return Err(SqlError::unsupported("ON CONFLICT")),
        None => None,
    };
    let replace = stmt.replace_into;
    let ignore = stmt.ignore;
    let select = stmt.source.as_deref().filter(|q| !matches!(q.body.as_ref(), ast::SetExpr::Values(_)));
    with_table(catalog, &db, &tname, |catalog, t, data| {
        let mut res = DmlResult::default();
        let mut ids = AutoIds::default();
        let mut duplicates = 0u64;
        let mut count = 0u64;
        // Many rows, and no REPLACE or ON DUPLICATE KEY UPDATE: the bulk path (`dml::bulk`).
        let many = select.is_some() || proposed.len() > 1;
        let rows_hint = if select.is_some() { None } else { u64::try_from(proposed.len()).ok() };
        // Foreign keys are checked row by row (`foreign_keys`), off the bulk path.
        let bulk_allowed = many && !replace && on_dup.is_none() && !foreign_keys::checks_inserts(cx, t) && !triggers::fires(catalog, cx, t, Event::Insert);
        let mut bulk = if bulk_allowed { BulkBuffer::start(cx, data, ignore, rows_hint) } else { None };
        let read_lock = env(catalog, cx).lock;
        let whole_copy = select.filter(|_| bulk.is_some()).and_then(|q| copy::plan(catalog, cx.info, q, t, &targets, read_lock.as_ref()));
        let mut insert_one = |cx: &mut DmlCx<'_>, incoming: Incoming<'_>| -> Result<()> {
            count += 1;
            let mode = Duplicate { replace, ignore, on_dup: on_dup.as_deref() };
            match (bulk.as_mut(), incoming) {
                (Some(b), Incoming::Proposed(vals)) => match prepare_row(cx, t, data, vals, count, ignore, &mut ids, true)? {
                    Some(row) => b.push(cx, t, data, Finished::Row(row), &mut res, &mut duplicates),
                    None => Ok(()),
                },
                (Some(b), Incoming::Finished(row)) => b.push(cx, t, data, row, &mut res, &mut duplicates),
                (None, Incoming::Proposed(vals)) => insert_proposed(catalog, cx, t, data, vals, count, mode, &mut res, &mut duplicates, &mut ids),
                (None, Incoming::Finished(_)) => unreachable!("finished rows come on the bulk path only"),
            }
        };
        let inserted: Result<()> = match select {
            None => proposed.into_iter().try_for_each(|vals| insert_one(cx, Incoming::Proposed(vals))),
            Some(q) => {
                let e = if cx.read_uncommitted {
                    Env { view: ReadView { uncommitted: true, ..env(catalog, cx).view }, ..env(catalog, cx) }
                } else {
                    env(catalog, cx)
                };
                let proposal = |r: Row| -> Incoming<'static> {
                    let mut vals: ProposedRow = vec![None; t.columns.len()];
                    for (&col, v) in targets.iter().zip(r) {
                        vals[col] = Some(v);
                    }
                    Incoming::Proposed(vals)
                };
                (|| {
                    if let Some(copy) = &whole_copy {
                        return copy.run(&e, t, &mut |incoming| insert_one(cx, incoming));
                    }
                    let (plan, _) = query::plan_query(&e, q, &[])?;
                    if plan.columns.len() != targets.len() {
                        return Err(SqlError::new(codes::ER_WRONG_VALUE_COUNT_ON_ROW, "Column count doesn't match value count at row 1"));
                    }
                    if query_reads_table(q, cx.info, &db, &tname) {
                        // The query reads the table it fills: read it whole first, so it never
                        // sees the rows this statement inserts (MySQL uses a temporary table).
                        query::run_select(&plan, &e, None)?.rows.into_iter().try_for_each(|r| insert_one(cx, proposal(r)))
                    } else {
                        query::run_select_into(&plan, &e, None, &mut |r| insert_one(cx, proposal(r)))
                    }
                })()
            }
        };
        match bulk.take() {
            Some(b) if inserted.is_ok() => b.finish(cx, t, data, &mut res, &mut duplicates)?,
            Some(b) => b.abandon(data),
            None => {}
        }
        inserted?;
        res.last_insert_id = ids.first_generated;
        res.last_auto_value = ids.last_value;
        if count > 1 || select.is_some() {
            res.info = format!("Records: {count}  Duplicates: {duplicates}  Warnings: {}", cx.warnings.len());
        }
        Ok(res)
    })
}

/// What a row whose key is taken does: REPLACE the old row, update it (`on_dup`), or be
/// skipped with a warning (IGNORE); with none of them, error 1062.
#[derive(Clone, Copy)]
struct Duplicate<'a> {
    replace: bool,
    ignore: bool,
    on_dup: Option<&'a [(usize, Expr)]>,
}

/// Inserts one proposed row, number `row_no` of its statement: defaults for the columns it
/// leaves out, then the column checks and conversions (`finish_row`; under IGNORE a data
/// error is a warning and the row is skipped), then the write (`insert_row`).
#[allow(clippy::too_many_arguments)]
fn insert_proposed(
    catalog: &Catalog,
    cx: &mut DmlCx<'_>,
    t: &TableMeta,
    data: &dyn Handler,
    vals: ProposedRow,
    row_no: u64,
    mode: Duplicate<'_>,
    res: &mut DmlResult,
    duplicates: &mut u64,
    ids: &mut AutoIds,
) -> Result<()> {
    // With BEFORE INSERT triggers, NOT NULL, generated columns and CHECK constraints are
    // seen to after them (a trigger may set a NULL column), as MySQL does.
    let before = triggers::fires_before(catalog, cx, t, Event::Insert);
    let Some(mut row) = prepare_row(cx, t, data, vals, row_no, mode.ignore, ids, !before)? else { return Ok(()) };
    if before {
        triggers::fire(catalog, cx, t, Event::Insert, Timing::Before, Some(&mut row), None)?;
        row = finish_row(t, row, row_no, cx, data, ids, true)?;
    }
    insert_row(catalog, cx, t, data, row, row_no, mode.replace, mode.ignore, mode.on_dup, res, duplicates)
}

/// A proposed row made whole: defaults for the columns it leaves out, then the column checks
/// and conversions (`finish_row`). `None` when IGNORE skips it for a data error (a warning).
#[allow(clippy::too_many_arguments)]
fn prepare_row(
    cx: &mut DmlCx<'_>,
    t: &TableMeta,
    data: &dyn Handler,
    vals: ProposedRow,
    row_no: u64,
    ignore: bool,
    ids: &mut AutoIds,
    checked: bool,
) -> Result<Option<Row>> {
    let mut row: Row = Vec::with_capacity(vals.len());
    for (i, v) in vals.into_iter().enumerate() {
        row.push(match v {
            Some(_) if t.columns[i].generated.is_some() => return Err(generated_given(t, i)),
            Some(v) => v,
            None if t.columns[i].generated.is_some() => Value::Null,
            None => default_value(t, i, cx.now_us, cx.info)?,
        });
    }
    match finish_row(t, row, row_no, cx, data, ids, checked) {
        Ok(r) => Ok(Some(r)),
        Err(e) if ignore && e.wait().is_none() && !e.rolls_back_transaction => {
            cx.warnings.push(Warning { level: "Warning", code: e.code, message: e.message });
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// Whether `q` reads the table `db.name` anywhere (a join, a subquery, a derived table).
fn query_reads_table(q: &ast::Query, info: &SessionInfo, db: &str, name: &str) -> bool {
    let mut reads = false;
    let _ = ast::visit_relations(q, |relation| {
        if let Ok((d, n)) = query::resolve_table_name(info, relation)
            && d.eq_ignore_ascii_case(db)
            && n.eq_ignore_ascii_case(name)
        {
            reads = true;
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    reads
}

/// Inserts one finished row: waits for the insert-intention lock, writes it, and on a
/// duplicate key applies REPLACE, ON DUPLICATE KEY UPDATE (`on_dup`) or IGNORE.
#[allow(clippy::too_many_arguments)]
fn insert_row(
    catalog: &Catalog,
    cx: &mut DmlCx<'_>,
    t: &TableMeta,
    data: &dyn Handler,
    row: Row,
    row_no: u64,
    replace: bool,
    ignore: bool,
    on_dup: Option<&[(usize, Expr)]>,
    res: &mut DmlResult,
    duplicates: &mut u64,
) -> Result<()> {
    let mut attempts = 0;
    loop {
        attempts += 1;
        let inserted = write_locked(cx, t, data, &row)?;
        match inserted {
            Ok(pk) => {
                cx.undo.push(t.id, &pk);
                // After the write, so a row may refer to itself.
                foreign_keys::check_parents(catalog, cx, t, &row, None)?;
                res.affected += 1;
                let mut new = row;
                triggers::fire(catalog, cx, t, Event::Insert, Timing::After, Some(&mut new), None)?;
                return Ok(());
            }
            Err(WriteError::Duplicate { existing_pk, .. }) if replace && attempts < 64 => {
                locking::lock_for_write(&cx.info.engine.txns.locks, cx.txn, t.id, data, &existing_pk)?;
                // REPLACE deletes the old row: its children are refused or cascaded as for
                // DELETE, and its DELETE triggers fire.
                let old = data.get(&existing_pk, &ReadView::current(cx.txn)).map(|r| Row::clone(&r));
                if let Some(old) = &old {
                    triggers::fire(catalog, cx, t, Event::Delete, Timing::Before, None, Some(old))?;
                    foreign_keys::on_parent_change(catalog, cx, t, &existing_pk, old, None, &mut Vec::new())?;
                }
                data.delete_row(cx.txn, &existing_pk).map_err(|e| write_error(e, t, &row, cx))?;
                cx.undo.push(t.id, &existing_pk);
                if let Some(old) = &old {
                    triggers::fire(catalog, cx, t, Event::Delete, Timing::After, None, Some(old))?;
                }
                res.affected += 1;
                *duplicates += 1;
            }
            Err(WriteError::Duplicate { existing_pk, .. }) if on_dup.is_some() => {
                let assigns = on_dup.expect("checked");
                locking::lock_for_write(&cx.info.engine.txns.locks, cx.txn, t.id, data, &existing_pk)?;
                let old = Row::clone(&data.get(&existing_pk, &ReadView::current(cx.txn)).expect("duplicate row is visible"));
                let mut combined = old.clone();
                combined.extend(row.iter().cloned());
                let mut new = old.clone();
                {
                    let e = env(catalog, cx);
                    for (col, ex) in assigns {
                        let v = ex.eval(&e, &RowCtx::new(&combined))?;
                        new[*col] = v.clone();
                        combined[*col] = v;
                    }
                }
                let mut none = AutoIds::default();
                let before = triggers::fires_before(catalog, cx, t, Event::Update);
                let mut new = finish_row(t, new, row_no, cx, data, &mut none, !before)?;
                if before {
                    triggers::fire(catalog, cx, t, Event::Update, Timing::Before, Some(&mut new), Some(&old))?;
                    new = finish_row(t, new, row_no, cx, data, &mut none, true)?;
                }
                if rows_equal(&new, &old) {
                    if cx.found_rows {
                        res.affected += 1;
                    }
                } else {
                    let latch = data.write_latch();
                    lock_for_update(cx, t, data, &existing_pk, &old, &new)?;
                    let pk = data.update_row(&latch, cx.txn, &existing_pk, new.clone()).map_err(|e| write_error(e, t, &new, cx))?;
                    drop(latch);
                    if pk != existing_pk {
                        cx.undo.push(t.id, &pk);
                    }
                    cx.undo.push(t.id, &existing_pk);
                    foreign_keys::check_parents(catalog, cx, t, &new, Some(&old))?;
                    // After the parent row changed, as InnoDB cascades.
                    foreign_keys::on_parent_change(catalog, cx, t, &existing_pk, &old, Some(&new), &mut Vec::new())?;
                    res.affected += 2;
                }
                triggers::fire(catalog, cx, t, Event::Update, Timing::After, Some(&mut new), Some(&old))?;
                return Ok(());
            }
            Err(WriteError::Duplicate { .. }) if ignore => {
                cx.warnings.push(Warning {
                    level: "Warning",
                    code: codes::ER_DUP_ENTRY.0,
                    message: write_error(WriteError::Duplicate { index: None, existing_pk: vec![] }, t, &row, cx).message,
                });
                *duplicates += 1;
                return Ok(());
            }
            Err(e) => return Err(write_error(e, t, &row, cx)),
        }
    }
}

fn rows_equal(a: &Row, b: &Row) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            x == y || ops::compare(x, y, Collation::Utf8mb4Bin) == Some(Ordering::Equal) && std::mem::discriminant(x) == std::mem::discriminant(y)
        })
}

fn assignment_column(t: &TableMeta, a: &ast::Assignment) -> Result<usize> {
    let ast::AssignmentTarget::ColumnName(n) = &a.target else {
        return Err(SqlError::unsupported("tuple assignment"));
    };
    let name = n.0.last().map(|p| p.to_string()).unwrap_or_default();
    let name = name.trim_matches('`');
    t.column_index(name).ok_or_else(|| SqlError::bad_field(name, "field list"))
}

/// Rows of `db.name` matching `filter`, as `(primary key, row)`, read current.
fn matching_rows(e: &Env<'_>, spec: &LockSpec, t: &TableMeta, filter: Option<&Expr>) -> Result<Vec<(Vec<u8>, Row)>> {
    let conds: Vec<Expr> = filter.map(|f| f.conjuncts().into_iter().cloned().collect()).unwrap_or_default();
    let access = query::choose_access(t, &conds, 0);
    let data = SourceData::Table { db: t.db.clone(), name: t.name.clone(), id: t.id };
    let source = Source { access, ..Source::new(data, 0, t.columns.len(), JoinKind::Inner, t.columns.iter().map(|c| c.ty.clone()).collect()) };
    let locks = &e.info.engine.txns.locks;
    let matches = |r: &Row| -> Result<bool> {
        match filter {
            None => Ok(true),
            Some(f) => Ok(ops::truth(&f.eval(e, &RowCtx::new(r))?) == Some(true)),
        }
    };
    let mut out = Vec::new();
    for pk in query::locking_candidates(&source, &Vec::new(), e, None, spec)? {
        // Counts the row examined (the slow log's Rows_examined), and stops for a KILL.
        e.info.interrupt.check()?;
        if spec.semi_consistent {
            // READ COMMITTED: the newest committed version decides; only a match is locked.
            let Some(r) = t.data.get(&pk, &e.view) else { continue };
            if !matches(&r)? {
                continue;
            }
            spec.lock_row(locks, t.id, &t.name, t.data.as_ref(), &pk)?;
            out.push((pk, Row::clone(&r)));
        } else {
            if spec.lock_row(locks, t.id, &t.name, t.data.as_ref(), &pk)?.is_none() {
                continue;
            }
            let Some(r) = t.data.get(&pk, &e.view) else { continue };
            if matches(&r)? {
                out.push((pk, Row::clone(&r)));
            }
        }
    }
    Ok(out)
}

/// Lock what an update of the row at `pk` from `old` to `new` needs beyond its own lock:
/// a new primary key, and insert intention for every index entry that changes.
fn lock_for_update(cx: &DmlCx<'_>, t: &TableMeta, data: &dyn Handler, pk: &[u8], old: &Row, new: &Row) -> Result<()> {
    let locks = &cx.info.engine.txns.locks;
    let new_pk = if data.has_primary_key() { data.primary_key(new) } else { pk.to_vec() };
    let moved = new_pk != pk;
    if moved {
        locking::lock_for_write(locks, cx.txn, t.id, data, &new_pk)?;
    }
    locking::check_insert(locks, cx.txn, t.id, || {
        let old_entries = data.index_entries(old, pk);
        let mut keys: Vec<(u32, Vec<u8>)> = data.index_entries(new, &new_pk).into_iter().filter(|k| !old_entries.contains(k)).collect();
        if moved {
            keys.push((0, new_pk.clone()));
        }
        keys
    })
}

fn single_table(twj: &ast::TableWithJoins, info: &SessionInfo) -> Result<(String, String, String)> {
    let ast::TableFactor::Table { name, alias, .. } = &twj.relation else {
        return Err(SqlError::unsupported("UPDATE/DELETE of a derived table"));
    };
    let (db, t) = query::resolve_table_name(info, name)?;
    let alias = alias.as_ref().map_or(t.clone(), |a| a.name.value.clone());
    Ok((db, t, alias))
}

/// A row with its primary key.
type KeyedRow = (Vec<u8>, Row);

fn order_and_limit(e: &Env<'_>, scope: &Scope, rows: &mut Vec<(Vec<u8>, Row)>, order_by: &[ast::OrderByExpr], limit: Option<&ast::Expr>) -> Result<()> {
    if !order_by.is_empty() {
        let b = Binder::new(e, scope, "order clause");
        let keys: Vec<(Expr, bool, Collation)> = order_by
            .iter()
            .map(|o| {
                let x = b.bind(&o.expr)?;
                let c = b.collation_of(&x);
                Ok((x, !matches!(o.options.sort, Some(ast::OrderBySort::Desc)), c))
            })
            .collect::<Result<_>>()?;
        let mut keyed: Vec<(Vec<Value>, KeyedRow)> =
            rows.drain(..).map(|r| Ok((keys.iter().map(|(k, _, _)| k.eval(e, &RowCtx::new(&r.1))).collect::<Result<Vec<_>>>()?, r))).collect::<Result<_>>()?;
        keyed.sort_by(|a, b| {
            for (i, (_, asc, c)) in keys.iter().enumerate() {
                let o = ops::sort_cmp(&a.0[i], &b.0[i], *c);
                if o != Ordering::Equal {
                    return if *asc { o } else { o.reverse() };
                }
            }
            Ordering::Equal
        });
        rows.extend(keyed.into_iter().map(|(_, r)| r));
    }
    if let Some(l) = limit {
        let n = Binder::new(e, &Scope::default(), "limit clause").bind(l)?.eval(e, &RowCtx::new(&[]))?;
        rows.truncate(ops::to_i128(&n).max(0) as usize);
    }
    Ok(())
}

/// UPDATE (single table).
///
/// # Errors
/// As [`insert`].
pub fn update(catalog: &Catalog, cx: &mut DmlCx<'_>, stmt: &ast::Update) -> Result<DmlResult> {
    if stmt.from.is_some() {
        return Err(SqlError::unsupported("UPDATE ... FROM"));
    }
    if !stmt.table.joins.is_empty() || matches!(stmt.table.relation, ast::TableFactor::NestedJoin { .. }) {
        return multi::update(catalog, cx, stmt);
    }
    let (db, tname, alias) = single_table(&stmt.table, cx.info)?;
    let t = write_target(catalog, &db, &tname, "UPDATE")?;
    let scope = table_scope(t, &alias);
    let (targets, assigns) = {
        let e = env(catalog, cx);
        let b = Binder::new(&e, &scope, "where clause");
        let filter = stmt.selection.as_ref().map(|w| b.bind(w)).transpose()?;
        let fb = Binder::new(&e, &scope, "field list");
        let assigns: Vec<(usize, Expr)> = stmt.assignments.iter().map(|a| Ok((assignment_column(t, a)?, fb.bind(&a.value)?))).collect::<Result<_>>()?;
        if let Some((col, _)) = assigns.iter().find(|(col, _)| t.columns[*col].generated.is_some()) {
            return Err(generated_given(t, *col));
        }
        let mut rows = matching_rows(&e, &cx.lock, t, filter.as_ref())?;
        order_and_limit(&e, &scope, &mut rows, &stmt.order_by, stmt.limit.as_ref())?;
        (rows, assigns)
    };
    with_table(catalog, &db, &tname, |catalog, t, data| {
        let mut matched = 0u64;
        let mut changed = 0u64;
        for (n, (pk, _found)) in targets.into_iter().enumerate() {
            // The row may have changed since it was found (only our own writes can have).
            let Some(current) = data.get(&pk, &ReadView::current(cx.txn)).map(|r| Row::clone(&r)) else { continue };
            matched += 1;
            let mut new = current.clone();
            {
                let e = env(catalog, cx);
                for (col, ex) in &assigns {
                    new[*col] = ex.eval(&e, &RowCtx::new(&new))?;
                }
            }
            let assigned: Vec<usize> = assigns.iter().map(|(a, _)| *a).collect();
            if update_row(catalog, cx, t, data, n as u64 + 1, &pk, &current, new, &assigned)? {
                changed += 1;
            }
        }
        Ok(DmlResult {
            affected: if cx.found_rows { matched } else { changed },
            last_insert_id: None,
            last_auto_value: None,
            info: format!("Rows matched: {matched}  Changed: {changed}  Warnings: {}", cx.warnings.len()),
        })
    })
}

/// Writes `new` over the row at `pk` (now `current`) of `t`, the `assigned` columns given
/// by the statement (the others with ON UPDATE CURRENT_TIMESTAMP take the statement's time
/// when the row changes); `row_no` is the row's number in the statement, for warnings.
/// Returns whether the row changed.
#[allow(clippy::too_many_arguments)]
fn update_row(
    catalog: &Catalog,
    cx: &mut DmlCx<'_>,
    t: &TableMeta,
    data: &dyn Handler,
    row_no: u64,
    pk: &[u8],
    current: &Row,
    new: Row,
    assigned: &[usize],
) -> Result<bool> {
    let mut none = AutoIds::default();
    let before = triggers::fires_before(catalog, cx, t, Event::Update);
    let mut new = finish_row(t, new, row_no, cx, data, &mut none, !before)?;
    if before {
        triggers::fire(catalog, cx, t, Event::Update, Timing::Before, Some(&mut new), Some(current))?;
        new = finish_row(t, new, row_no, cx, data, &mut none, true)?;
    }
    if rows_equal(&new, current) {
        // MySQL fires AFTER UPDATE for a matched row whatever it changed.
        triggers::fire(catalog, cx, t, Event::Update, Timing::After, Some(&mut new), Some(current))?;
        return Ok(false);
    }
    for (i, c) in t.columns.iter().enumerate() {
        if c.on_update_current_timestamp && !assigned.contains(&i) {
            new[i] = Value::DateTime(crate::types::round_micros(cx.now_us, c.ty.decimals().min(6)));
        }
    }
    let latch = data.write_latch();
    lock_for_update(cx, t, data, pk, current, &new)?;
    let new_pk = data.update_row(&latch, cx.txn, pk, new.clone()).map_err(|e| write_error(e, t, &new, cx))?;
    drop(latch);
    if new_pk != pk {
        cx.undo.push(t.id, &new_pk);
    }
    cx.undo.push(t.id, pk);
    foreign_keys::check_parents(catalog, cx, t, &new, Some(current))?;
    // After the parent row changed, as InnoDB cascades.
    foreign_keys::on_parent_change(catalog, cx, t, pk, current, Some(&new), &mut Vec::new())?;
    triggers::fire(catalog, cx, t, Event::Update, Timing::After, Some(&mut new), Some(current))?;
    Ok(true)
}

/// Deletes the row at `pk` of `t` (found as `found`): its children first, as InnoDB cascades.
fn delete_row(catalog: &Catalog, cx: &mut DmlCx<'_>, t: &TableMeta, data: &dyn Handler, pk: &[u8], found: &Row) -> Result<bool> {
    let Some(current) = data.get(pk, &ReadView::current(cx.txn)).map(|r| Row::clone(&r)) else { return Ok(false) };
    triggers::fire(catalog, cx, t, Event::Delete, Timing::Before, None, Some(&current))?;
    foreign_keys::on_parent_change(catalog, cx, t, pk, &current, None, &mut Vec::new())?;
    locking::lock_for_write(&cx.info.engine.txns.locks, cx.txn, t.id, t.data.as_ref(), pk)?;
    data.delete_row(cx.txn, pk).map_err(|e| write_error(e, t, found, cx))?;
    cx.undo.push(t.id, pk);
    triggers::fire(catalog, cx, t, Event::Delete, Timing::After, None, Some(&current))?;
    Ok(true)
}

/// DELETE (single table).
///
/// # Errors
/// As [`insert`].
pub fn delete(catalog: &Catalog, cx: &mut DmlCx<'_>, stmt: &ast::Delete) -> Result<DmlResult> {
    let tables = match &stmt.from {
        ast::FromTable::WithFromKeyword(t) | ast::FromTable::WithoutKeyword(t) => t,
    };
    if tables.len() != 1 || !tables[0].joins.is_empty() || !stmt.tables.is_empty() || stmt.using.is_some() {
        return multi::delete(catalog, cx, stmt);
    }
    let (db, tname, alias) = single_table(&tables[0], cx.info)?;
    let t = write_target(catalog, &db, &tname, "DELETE")?;
    let scope = table_scope(t, &alias);
    let targets = {
        let e = env(catalog, cx);
        let b = Binder::new(&e, &scope, "where clause");
        let filter = stmt.selection.as_ref().map(|w| b.bind(w)).transpose()?;
        let mut rows = matching_rows(&e, &cx.lock, t, filter.as_ref())?;
        order_and_limit(&e, &scope, &mut rows, &stmt.order_by, stmt.limit.as_ref())?;
        rows
    };
    with_table(catalog, &db, &tname, |catalog, t, data| {
        let mut affected = 0;
        for (pk, row) in targets {
            if delete_row(catalog, cx, t, data, &pk, &row)? {
                affected += 1;
            }
        }
        Ok(DmlResult { affected, last_insert_id: None, last_auto_value: None, info: String::new() })
    })
}
