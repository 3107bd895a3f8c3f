//! Firing triggers: the row writes of INSERT, UPDATE, DELETE (and REPLACE, ON DUPLICATE KEY
//! UPDATE, LOAD DATA, multi-table writes) call [`fire`] before and after each row, and the
//! table's triggers for that event and timing run in action order (`program_meta`).
//!
//! - A trigger runs inside the statement that fired it, on its transaction and with its
//!   statement atomicity: what the trigger writes is undone with the statement if either
//!   fails, and a trigger's error fails the statement (a BEFORE trigger's before the row is
//!   written, an AFTER trigger's after). Its statements are run synchronously by
//!   [`TriggerHost`] (INSERT, UPDATE, DELETE, `SELECT ... INTO`, `SET @v`), which is why a
//!   trigger may not return rows or commit (refused when it is made).
//! - `NEW` and `OLD` are slots of the program's frame, filled from the row; a BEFORE
//!   trigger's assignments to `NEW` are written back into the row, which the caller then
//!   checks and converts as it does given values.
//! - A trigger may not write a table whose triggers are running around it, or the table
//!   the statement writes (1442, MySQL's rule; [`crate::dml::DmlCx::firing`]), which also
//!   bounds how deep triggers nest: by the number of tables.
//! - A replica's applier fires none (`DmlCx::fire_triggers`): the binary log is row-based,
//!   and the source's rows already hold what its triggers did.
//! - Foreign key cascades fire no triggers, as in InnoDB.

use quill_sql_frontend::program::{Event, SlotKind, Timing};
use quill_storage::{Row, Value};
use sqlparser::ast;

use crate::bind::{Binder, Scope};
use crate::catalog::{Catalog, TableMeta};
use crate::dml::{self, DmlCx};
use crate::error::{Result, SqlError, Warning, codes};
use crate::expr::RowCtx;
use crate::program_run::{self, Frame, Host};
use crate::query;

/// Whether rows written to `t` for `event` fire a trigger (the bulk paths stand aside).
pub(crate) fn fires(catalog: &Catalog, cx: &DmlCx<'_>, t: &TableMeta, event: Event) -> bool {
    cx.fire_triggers && catalog.has_triggers(&t.db, &t.name, event)
}

/// Whether rows written to `t` for `event` fire a BEFORE trigger (the row's own checks then
/// come after it).
pub(crate) fn fires_before(catalog: &Catalog, cx: &DmlCx<'_>, t: &TableMeta, event: Event) -> bool {
    cx.fire_triggers && catalog.triggers_for(&t.db, &t.name, event, Timing::Before).next().is_some()
}

/// Fires `t`'s triggers for `event` at `timing` on one row: `new` (INSERT, UPDATE) and
/// `old` (UPDATE, DELETE). Answers whether a trigger changed `new` (BEFORE only).
///
/// # Errors
/// A trigger's error, or 1442.
pub(crate) fn fire(
    catalog: &Catalog,
    cx: &mut DmlCx<'_>,
    t: &TableMeta,
    event: Event,
    timing: Timing,
    mut new: Option<&mut Row>,
    old: Option<&Row>,
) -> Result<bool> {
    if !cx.fire_triggers {
        return Ok(false);
    }
    let mut changed = false;
    for trigger in catalog.triggers_for(&t.db, &t.name, event, timing) {
        let program = &trigger.program;
        let column = |name: &str, new: bool| t.column_index(name).ok_or_else(|| SqlError::bad_field(name, if new { "NEW" } else { "OLD" }));
        let mut frame = Frame::new(program, |slot| match &program.slots[slot].kind {
            SlotKind::Row { column, .. } => t.column_index(column).map(|i| t.columns[i].ty.clone()),
            _ => None,
        })?;
        for (slot, is_new, name) in program.row_slots() {
            let i = column(name, is_new)?;
            let row = if is_new { new.as_deref() } else { old };
            frame.values[slot] = row.map_or(Value::Null, |r| r[i].clone());
        }
        let mut nested = cx.nested(&[]);
        nested.firing.push(t.id);
        let mut host = TriggerHost { catalog, cx: nested, definer: &trigger.creation.definer };
        program_run::run_now(program_run::run(program, &mut frame, &mut host))?;
        if timing == Timing::Before
            && let Some(row) = new.as_deref_mut()
            && program.sets_new_row()
        {
            for (slot, is_new, name) in program.row_slots() {
                if is_new {
                    row[column(name, true)?] = frame.values[slot].clone();
                }
            }
            changed = true;
        }
    }
    Ok(changed)
}

/// The tables named by the statements and cursors of `db.table`'s triggers (qualified
/// when the trigger was made) (for the metadata locks of a statement that writes the table).
pub(crate) fn tables_named(catalog: &Catalog, info: &crate::session_info::SessionInfo, db: &str, table: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let Ok(d) = catalog.database(db) else { return out };
    for t in d.triggers.iter().filter(|t| t.table == table) {
        let statements = t.program.instrs.iter().filter_map(|i| match i {
            quill_sql_frontend::program::Instr::Sql { statement, .. } => Some(&**statement),
            _ => None,
        });
        for s in statements.chain(t.program.cursors.iter().map(|c| &*c.query)) {
            let _ = ast::visit_relations(s, |name| {
                if let Ok(n) = query::resolve_table_name(info, name)
                    && !out.contains(&n)
                {
                    out.push(n);
                }
                std::ops::ControlFlow::<()>::Continue(())
            });
        }
    }
    out
}

/// 1142 unless `account` may run `statement` of a program's body: the privilege its verb
/// needs (INSERT, UPDATE, DELETE) on each table it writes, SELECT on every other it reads.
/// A trigger's and a (SQL SECURITY DEFINER) function's statements run with their definer's
/// privileges, as MySQL runs them; the session's own checks saw only the outer statement.
///
/// # Errors
/// 1142.
pub(crate) fn check_body_privileges(info: &crate::session_info::SessionInfo, account: &(String, String), statement: &ast::Statement) -> Result<()> {
    if !info.checked {
        return Ok(());
    }
    let (verb, bit) = match statement {
        ast::Statement::Insert(_) => ("INSERT", crate::accounts::INSERT),
        ast::Statement::Update(_) => ("UPDATE", crate::accounts::UPDATE),
        ast::Statement::Delete(_) => ("DELETE", crate::accounts::DELETE),
        _ => ("SELECT", crate::accounts::SELECT),
    };
    let written: Vec<(String, String)> = written_tables(statement).into_iter().filter_map(|n| query::resolve_table_name(info, n).ok()).collect();
    let mut needed: Vec<(String, String, &'static str, crate::accounts::Privs)> = written.iter().map(|(d, t)| (d.clone(), t.clone(), verb, bit)).collect();
    let _ = ast::visit_relations(statement, |name| {
        if let Ok((d, t)) = query::resolve_table_name(info, name)
            && !written.contains(&(d.clone(), t.clone()))
        {
            needed.push((d, t, "SELECT", crate::accounts::SELECT));
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    let acl = info.engine.acl.read();
    for (db, table, verb, bit) in needed {
        if db.eq_ignore_ascii_case("information_schema") || db.eq_ignore_ascii_case("performance_schema") {
            continue;
        }
        if acl.privileges(&account.0, &account.1, &db, Some(&table)) & bit == 0 {
            return Err(SqlError::new(
                codes::ER_TABLEACCESS_DENIED_ERROR,
                format!("{verb} command denied to user '{}'@'{}' for table '{table}'", account.0, account.1),
            ));
        }
    }
    Ok(())
}

/// Runs a trigger's statements inside the statement that fired it.
struct TriggerHost<'c, 'a> {
    catalog: &'c Catalog,
    cx: DmlCx<'a>,
    /// Whose privileges the statements run with.
    definer: &'c (String, String),
}

/// The tables named in a FROM item: its table and those it joins.
fn relations(twj: &ast::TableWithJoins) -> Vec<&ast::ObjectName> {
    std::iter::once(&twj.relation)
        .chain(twj.joins.iter().map(|j| &j.relation))
        .filter_map(|r| match r {
            ast::TableFactor::Table { name, .. } => Some(name),
            _ => None,
        })
        .collect()
}

/// The tables a write statement writes, by name.
fn written_tables(statement: &ast::Statement) -> Vec<&ast::ObjectName> {
    match statement {
        ast::Statement::Insert(i) => match &i.table {
            ast::TableObject::TableName(n) => vec![n],
            _ => Vec::new(),
        },
        ast::Statement::Update(u) => relations(&u.table),
        ast::Statement::Delete(d) if !d.tables.is_empty() => d.tables.iter().collect(),
        ast::Statement::Delete(d) => match &d.from {
            ast::FromTable::WithFromKeyword(t) | ast::FromTable::WithoutKeyword(t) => t.iter().flat_map(relations).collect(),
        },
        _ => Vec::new(),
    }
}

impl Host for TriggerHost<'_, '_> {
    async fn eval(&mut self, e: &ast::Expr, frame: &[Value]) -> Result<Value> {
        let cx = self.cx.nested(frame);
        let env = dml::env(self.catalog, &cx);
        Binder::new(&env, &Scope::default(), "field list").bind(e)?.eval(&env, &RowCtx::new(&[]))
    }

    async fn statement(&mut self, statement: &ast::Statement, _text: &str, frame: &[Value], _into: bool) -> Result<Option<Vec<Vec<Value>>>> {
        check_body_privileges(self.cx.info, self.definer, statement)?;
        for name in written_tables(statement) {
            let (db, table) = query::resolve_table_name(self.cx.info, name)?;
            if let Ok(t) = self.catalog.table(&db, &table)
                && self.cx.firing.contains(&t.id)
            {
                return Err(SqlError::new(
                    codes::ER_CANT_UPDATE_USED_TABLE_IN_SF_OR_TRG,
                    format!(
                        "Can't update table '{table}' in stored function/trigger because it is already used by statement which invoked this stored function/trigger."
                    ),
                ));
            }
        }
        let mut cx = self.cx.nested(frame);
        match statement {
            ast::Statement::Insert(i) => dml::insert(self.catalog, &mut cx, i).map(|_| None),
            ast::Statement::Update(u) => dml::update(self.catalog, &mut cx, u).map(|_| None),
            ast::Statement::Delete(d) => dml::delete(self.catalog, &mut cx, d).map(|_| None),
            ast::Statement::Query(q) => {
                let env = dml::env(self.catalog, &cx);
                let (plan, _) = query::plan_query(&env, q, &[])?;
                Ok(Some(query::run_select(&plan, &env, None)?.rows))
            }
            ast::Statement::Set(ast::Set::SingleAssignment { variable, values, .. }) if values.len() == 1 => {
                let name = variable.to_string();
                let Some(user) = name.strip_prefix('@').filter(|n| !n.starts_with('@')) else {
                    return Err(SqlError::new(codes::ER_SP_BADSTATEMENT, format!("SET {name} is not allowed in a trigger")));
                };
                let v = self.eval(&values[0], frame).await?;
                self.set_user_variable(&user.trim_matches(|c| c == '`' || c == '\'' || c == '"').to_ascii_lowercase(), v);
                Ok(None)
            }
            other => Err(SqlError::new(codes::ER_SP_BADSTATEMENT, format!("{} is not allowed in a trigger", first_words(&other.to_string())))),
        }
    }

    async fn text(&mut self, text: &str) -> Result<()> {
        Err(SqlError::new(codes::ER_SP_BADSTATEMENT, format!("{} is not allowed in a trigger", first_words(text))))
    }

    async fn open(&mut self, query: &ast::Statement, frame: &[Value]) -> Result<Vec<Vec<Value>>> {
        Ok(self.statement(query, "", frame, true).await?.unwrap_or_default())
    }

    fn warnings(&mut self) -> &mut Vec<Warning> {
        self.cx.warnings
    }

    fn set_user_variable(&mut self, name: &str, value: Value) {
        self.cx.info.user_vars.borrow_mut().insert(name.to_owned(), value);
    }

    fn interrupted(&self) -> Option<SqlError> {
        self.cx.info.interrupt.check().err()
    }

    fn strict(&self) -> bool {
        self.cx.strict
    }
}

fn first_words(s: &str) -> String {
    s.split_whitespace().take(2).collect::<Vec<_>>().join(" ")
}
