//! DDL in a session: CREATE / ALTER / DROP / RENAME / TRUNCATE of databases, tables,
//! indexes and views. Each runs under the DDL gate and `commit_order` on a copy of the
//! catalog, is logged as one record with its text, default database and sql_mode, and installs
//! the copy; a replay (start-up, a replica) runs the logged text again (`replay_ddl`).

use std::sync::atomic::Ordering;

use quill_storage::Value;
use sqlparser::ast::{self, Statement};

use crate::catalog::Catalog;
use crate::error::{Result, SqlError, Wait, Warning, codes};
use crate::query::{self};
use crate::text::{self, LexOptions};
use crate::vars;
use crate::{ddl, view_ddl};
use quill_sql_frontend::program_ddl::ProgramStatement;

use super::{DDL_RECORD_BYTES_BASE, Outcome, Session, first_words, ident_of, is_ddl, unix_micros};

/// A DDL statement: one sqlparser reads, or one of a stored program (`program_ddl`).
#[derive(Clone, Copy)]
pub(super) enum DdlStatement<'a> {
    Sql(&'a Statement),
    Program(&'a ProgramStatement),
}

impl Session {
    pub(super) fn ddl(&mut self, stmt: &Statement, params: &[Value], text: &str) -> Result<Outcome> {
        self.ddl_statement(DdlStatement::Sql(stmt), params, text)
    }

    /// CREATE / DROP TRIGGER, PROCEDURE and FUNCTION: privileges checked, then run as DDL.
    pub(super) fn program_ddl(&mut self, statement: &ProgramStatement, text: &str) -> Result<Outcome> {
        match statement {
            ProgramStatement::CreateTrigger(def) => {
                let (db, table) = crate::trigger_ddl::trigger_table(&self.info, def)?;
                self.require_table(&db, &table, crate::accounts::TRIGGER)?;
                crate::trigger_ddl::check_definer(&self.info, def.definer.as_ref())?;
            }
            ProgramStatement::DropTrigger { db, name, .. } => {
                let db = db.clone().or_else(|| self.info.db.clone()).ok_or_else(SqlError::no_db)?;
                if let Some(t) = self.info.engine.catalog().trigger(&db, name) {
                    self.require_table(&db, &t.table, crate::accounts::TRIGGER)?;
                }
            }
            ProgramStatement::CreateRoutine(def) => {
                let db = crate::routine_ddl::routine_database(&self.info, def.db.as_ref())?;
                self.require_database(&db, crate::accounts::CREATE_ROUTINE)?;
                crate::trigger_ddl::check_definer(&self.info, def.definer.as_ref())?;
            }
            ProgramStatement::DropRoutine { db, name, function, .. } => {
                let db = crate::routine_ddl::routine_database(&self.info, db.as_ref())?;
                if self.privileges_on(&db, None) & crate::accounts::ALTER_ROUTINE == 0 {
                    return Err(SqlError::new(
                        codes::ER_PROCACCESS_DENIED_ERROR,
                        format!("alter routine command denied to user '{}'@'{}' for routine '{db}.{name}'", self.info.user, self.info.account_host),
                    ));
                }
                let _ = function;
            }
        }
        self.ddl_statement(DdlStatement::Program(statement), &[], text)
    }

    fn ddl_statement(&mut self, statement: DdlStatement<'_>, params: &[Value], text: &str) -> Result<Outcome> {
        if let DdlStatement::Sql(stmt) = statement
            && !is_ddl(stmt)
        {
            // Refused before the implicit commit: an unsupported statement (ROLLBACK TO
            // SAVEPOINT, say) must not commit what the client meant to undo.
            return Err(SqlError::unsupported(first_words(&stmt.to_string()).to_string()));
        }
        if !params.is_empty() {
            return Err(SqlError::new(codes::ER_UNSUPPORTED_PS, "This command is not supported in the prepared statement protocol yet"));
        }
        if let Some(e) = self.read_only_refusal() {
            return Err(e);
        }
        let engine = self.engine();
        // A checkpoint copying rows holds the gate: wait for it without blocking this thread.
        let Some(_gate) = engine.ddl_gate.try_write() else { return Err(SqlError::must_wait(Wait::DdlGate)) };
        // DDL commits the open transaction first.
        self.commit()?;
        let mut created_by_select = match statement {
            DdlStatement::Sql(Statement::CreateTable(ct)) if ct.query.is_some() => {
                query::resolve_table_name(&self.info, &ct.name).ok().filter(|(db, t)| engine.catalog().table(db, t).is_err())
            }
            _ => None,
        };
        let mut catalog = Catalog::clone(&engine.catalog());
        // The statement changes a copy of the catalog, installed once its record is appended;
        // a full disk refuses the statement first (the log keeps DDL_RESERVE_BYTES for DDL;
        // only CREATE TABLE ... SELECT can outgrow it, and then its copy is dropped below).
        if let Some(log) = engine.log.get()
            && !log.wait_for_room(DDL_RECORD_BYTES_BASE + text.len() as u64)
        {
            return Err(SqlError::new(codes::ER_DISK_FULL, "Disk full (commit log); waiting for someone to free some space..."));
        }
        let mut warnings = Vec::new();
        let info = &self.info;
        let mut affected = 0;
        let r = match statement {
            DdlStatement::Program(ProgramStatement::CreateTrigger(def)) => {
                crate::trigger_ddl::create_trigger(&mut catalog, info, self.info.now_us(), def, !self.replaying, &mut warnings)
            }
            DdlStatement::Program(ProgramStatement::DropTrigger { if_exists, db, name }) => {
                crate::trigger_ddl::drop_trigger(&mut catalog, info, db.as_deref(), name, *if_exists, &mut warnings)
            }
            DdlStatement::Program(ProgramStatement::CreateRoutine(def)) => {
                crate::routine_ddl::create_routine(&mut catalog, info, self.info.now_us(), def, &mut warnings)
            }
            DdlStatement::Program(ProgramStatement::DropRoutine { function, if_exists, db, name }) => {
                crate::routine_ddl::drop_routine(&mut catalog, info, *function, db.as_ref(), name, *if_exists, &mut warnings)
            }
            DdlStatement::Sql(stmt) => match stmt {
                Statement::CreateDatabase { db_name, if_not_exists, default_charset, default_collation, .. } => {
                    ddl::database_collation(default_charset.as_deref(), default_collation.as_deref(), self.server_collation())
                        .and_then(|collation| ddl::create_database(&mut catalog, &ident_of(db_name), *if_not_exists, collation, &mut warnings))
                }
                Statement::CreateSchema { schema_name, if_not_exists, .. } => {
                    ddl::create_database(&mut catalog, schema_name.to_string().trim_matches('`'), *if_not_exists, self.server_collation(), &mut warnings)
                }
                Statement::AlterSchema(alter) => {
                    let name = if alter.name.0.is_empty() { self.info.db.clone().ok_or_else(SqlError::no_db) } else { Ok(ident_of(&alter.name)) };
                    name.and_then(|name| match alter.operations.as_slice() {
                        [ast::AlterSchemaOperation::SetOptionsParens { options }] => ddl::alter_database(&mut catalog, &name, options),
                        _ => Err(SqlError::unsupported("ALTER DATABASE")),
                    })
                }
                Statement::Drop { object_type: ast::ObjectType::Database | ast::ObjectType::Schema, if_exists, names, .. } => {
                    // The default database is cleared below once the drop succeeded.
                    ddl::drop_database(&mut catalog, &ident_of(&names[0]), *if_exists, &mut warnings).map(|n| affected = n)
                }
                Statement::CreateTable(ct) => ddl::create_table(&mut catalog, info, (params, self.info.now_us()), ct, &mut warnings).and_then(|()| {
                    let Some(make) = self.replica_create_rows.take() else { return Ok(()) };
                    let (db, name) = query::resolve_table_name(info, &ct.name)?;
                    if engine.catalog().table(&db, &name).is_ok() {
                        // IF NOT EXISTS found the table: nothing is created, nothing inserted
                        // (as MySQL's CREATE TABLE IF NOT EXISTS ... SELECT does).
                        return Ok(());
                    }
                    let table = catalog.table(&db, &name)?;
                    ddl::fill_new_table(table, make(table)?, &mut warnings)?;
                    created_by_select = Some((db, name));
                    Ok(())
                }),
                Statement::Drop { object_type: ast::ObjectType::Table, if_exists, names, .. } => {
                    ddl::drop_tables(&mut catalog, info, names, *if_exists, &mut warnings)
                }
                Statement::Drop { object_type: ast::ObjectType::Index, names, table: Some(t), .. } => {
                    ddl::drop_index(&mut catalog, info, &ident_of(&names[0]), t, &mut warnings)
                }
                Statement::Truncate(t) => match t.table_names.first() {
                    Some(n) => ddl::truncate(&mut catalog, info, &n.name),
                    None => Err(SqlError::parse("TRUNCATE")),
                },
                Statement::CreateIndex(ci) => ddl::create_index(&mut catalog, info, ci, &mut warnings),
                Statement::AlterTable(at) => ddl::alter_table(&mut catalog, info, self.info.now_us(), &at.name, &at.operations, &mut warnings),
                Statement::CreateView(cv) => {
                    let v = view_ddl::ViewStatement {
                        name: &cv.name,
                        columns: cv.columns.iter().map(|c| c.name.value.clone()).collect(),
                        query: &cv.query,
                        or_replace: cv.or_replace,
                        alter: false,
                        params: cv.params.as_ref(),
                    };
                    view_ddl::create_view(&mut catalog, info, self.info.now_us(), &v, !self.replaying)
                }
                Statement::AlterView { name, columns, query, .. } => {
                    let v = view_ddl::ViewStatement {
                        name,
                        columns: columns.iter().map(|c| c.value.clone()).collect(),
                        query,
                        or_replace: true,
                        alter: true,
                        params: None,
                    };
                    view_ddl::create_view(&mut catalog, info, self.info.now_us(), &v, !self.replaying)
                }
                Statement::Drop { object_type: ast::ObjectType::View, if_exists, names, .. } => {
                    view_ddl::drop_views(&mut catalog, info, names, *if_exists, &mut warnings)
                }
                Statement::RenameTable(pairs) => ddl::rename_tables(&mut catalog, info, pairs),
                other => Err(SqlError::unsupported(first_words(&other.to_string()).to_string())),
            },
        };
        // Logged and installed under `commit_order`, so the record and the catalog it makes
        // take one place among commits; durable before the reply in every flush mode, as
        // MySQL's DDL is. Not logged means not done: the copy is dropped.
        if r.is_ok() {
            let order = engine.commit_order.lock();
            let mut gtid_row = None;
            let logged = engine.log.get().map(|log| {
                let context = quill_log::DdlContext { sql_mode: self.info.var("sql_mode").to_owned(), time_zone: self.info.var("time_zone").to_owned() };
                // A view's statement is logged with its definer and its tables qualified, as
                // MySQL binlogs it: a replay, or a replica, makes the same view.
                let text = match statement {
                    DdlStatement::Sql(stmt) => view_ddl::logged_statement(stmt, &catalog, info),
                    DdlStatement::Program(p) => {
                        crate::trigger_ddl::logged_statement(p, &catalog, info).or_else(|| crate::routine_ddl::logged_statement(p, &catalog, info))
                    }
                }
                .unwrap_or_else(|| text.to_owned());
                let mut changes = crate::durability::ddl_changes(&catalog, self.info.db.as_deref(), text, context, created_by_select.as_ref());
                // A replicated statement's GTID goes in its own record: its row of the
                // replica's GTID table, then where it came from.
                if let Some(origin) = self.replica_origin.take() {
                    gtid_row = crate::replica_control::gtid_row(&catalog, &origin);
                    if let Some((key, row)) = &gtid_row {
                        let (db, table) = crate::replica_control::GTID_TABLE;
                        changes.push(quill_log::Change::Insert { db: db.into(), table: table.into(), key: key.clone(), row: quill_storage::log_row(row) });
                    }
                    changes.push(quill_log::Change::Origin(origin));
                }
                log.append_ddl(unix_micros(), &changes, self.replica_applier)
            });
            match logged {
                Some(Err(e)) => {
                    drop(order);
                    let table = created_by_select.map(|(_, name)| name).unwrap_or_default();
                    return Err(crate::durability::log_error(&e, &table));
                }
                Some(Ok(at)) => {
                    // Records before a statement that changed a table's definition may not
                    // read with the definitions after it (the binary log after a restart).
                    if engine.schemas.lock().record(at.lsn, &catalog) {
                        engine.definitions_from.fetch_max(at.end, Ordering::AcqRel);
                    }
                    if let Some((key, row)) = gtid_row
                        && let Ok(table) = catalog.table(crate::replica_control::GTID_TABLE.0, crate::replica_control::GTID_TABLE.1)
                    {
                        // Committed with the statement, as recovery replays the record.
                        let ts = engine.txns.commit_ts_to_assign();
                        table.data.apply_committed(&key, Some(row), ts);
                        engine.txns.publish_commit(ts);
                    }
                    engine.install_catalog(catalog);
                    drop(order);
                    self.wait_for_log(at.end, quill_log::FlushMode::AtCommit, crate::commit_acks::AckWait::Commit);
                }
                None => engine.install_catalog(catalog),
            }
        }
        self.warnings.extend(warnings);
        r?;
        self.info.row_count = 0;
        if let DdlStatement::Sql(Statement::Drop { object_type: ast::ObjectType::Database | ast::ObjectType::Schema, names, .. }) = statement
            && self.info.db.as_deref() == Some(ident_of(&names[0]).as_str())
        {
            self.info.db = None;
        }
        Ok(Outcome::Done { affected, last_insert_id: 0, info: String::new() })
    }

    /// Replays one logged DDL statement (recovery), with `db` as the default database.
    ///
    /// # Errors
    /// The statement fails now, which means the log and the catalog disagree.
    pub fn replay_ddl(&mut self, db: Option<String>, sql: &str) -> Result<()> {
        self.replay_ddl_in(db, sql, None)
    }

    /// [`Session::replay_ddl`] with the `sql_mode` and `time_zone` the statement first ran
    /// with (`None`: the server's defaults, for a log written before DDL context).
    ///
    /// # Errors
    /// As [`Session::replay_ddl`]; an unknown time zone or sql_mode.
    pub fn replay_ddl_in(&mut self, db: Option<String>, sql: &str, context: Option<&quill_log::DdlContext>) -> Result<()> {
        if let Some(c) = context {
            for (name, value) in [("sql_mode", &c.sql_mode), ("time_zone", &c.time_zone)] {
                let def = vars::require(name)?;
                let value = vars::normalise(def, &Value::Str(value.clone()))?.value;
                self.info.vars.values.insert(def.name, value);
            }
        }
        // What was logged passed its checks when it ran: a child may come before its parent,
        // a view before its tables.
        self.info.vars.values.insert("foreign_key_checks", "OFF".to_owned());
        self.replaying = true;
        self.info.db = db;
        let statement = text::single(sql.as_bytes(), LexOptions::default())?;
        if let Some(program) = quill_sql_frontend::program_ddl::recognise(&statement.text) {
            self.ddl_statement(DdlStatement::Program(&program?), &[], sql)?;
            return Ok(());
        }
        let statements = self.parse(&statement.text, statement.operators, statement.div_operators)?;
        for statement in statements.iter() {
            self.ddl(statement, &[], sql)?;
        }
        Ok(())
    }

    /// `ALTER TABLE t DISABLE KEYS` / `ENABLE KEYS` (every dump has them): as for InnoDB in
    /// MySQL 8, a note that the engine has no such option, and nothing else.
    pub(super) fn alter_keys(&mut self, table: &str) -> Result<Outcome> {
        let (db, t) = self.split_name(table);
        let db = db?;
        self.info.engine.catalog().table(&db, &t)?;
        self.warnings.push(Warning {
            level: "Note",
            code: codes::ER_ILLEGAL_HA.0,
            message: format!("Table storage engine for '{t}' doesn't have this option"),
        });
        Ok(Outcome::ok())
    }
}
