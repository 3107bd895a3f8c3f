//! SHOW statements, read by their words ([`Session::show`]): SHOW DATABASES, TABLES,
//! COLUMNS, INDEX, CREATE TABLE / VIEW / DATABASE, VARIABLES, STATUS, PROCESSLIST, WARNINGS,
//! ERRORS, ENGINE INNODB STATUS, the binary log's and the replica's status, with their LIKE
//! and WHERE filters. The rows come from `show`, the system views, and the engine.

use std::sync::Arc;

use quill_storage::{ReadView, Value};
use sqlparser::ast::{self, Statement};

use crate::engine::{Engine, gtid_executed};
use crate::error::{Result, SqlError, codes};
use crate::query::{OutColumn, ResultSet};
use crate::text::StatementText;
use crate::vars;
use crate::{show, view_ddl};

use crate::show_statements::ShowWhat;

use super::{Outcome, Session, SqlTypeHelper};

impl Session {
    pub(super) fn split_name(&self, name: &str) -> (Result<String>, String) {
        let name = name.trim_end_matches(';');
        let mut parts = crate::words::name_parts(name).unwrap_or_default();
        match parts.len() {
            2 => {
                let t = parts.pop().unwrap_or_default();
                (Ok(parts.pop().unwrap_or_default()), t)
            }
            1 => (self.info.db.clone().ok_or_else(SqlError::no_db), parts.pop().unwrap_or_default()),
            _ => (Err(SqlError::parse(name)), String::new()),
        }
    }

    pub(super) fn show(&mut self, statement: &StatementText, words: &[&str]) -> Result<Outcome> {
        let show = crate::show_statements::parse(&statement.text, words)?;
        let like = show.like;
        let engine = self.engine();
        let catalog = engine.catalog();
        let rs = match show.what {
            ShowWhat::Databases => {
                let mut rs = show::show_databases(&catalog, like.as_deref());
                // Without SHOW DATABASES, an account sees the databases it has privileges in.
                if self.global_privileges() & crate::accounts::SHOW_DATABASES == 0 {
                    let acl = Arc::clone(&self.info.engine.acl.read());
                    rs.rows.retain(|r| {
                        let db = crate::ops::to_string_lossy(&r[0]);
                        db.eq_ignore_ascii_case("information_schema") || acl.any_in_database(&self.info.user, &self.info.account_host, &db)
                    });
                }
                rs
            }
            ShowWhat::Tables { full, db } => {
                let db = db.or_else(|| self.info.db.clone()).ok_or_else(SqlError::no_db)?;
                self.require_visible_database(&db)?;
                let mut rs = show::show_tables(&catalog, &db, full, like.as_deref())?;
                rs.rows.retain(|r| self.info.may_see_table(&db, &crate::ops::to_string_lossy(&r[0])));
                rs
            }
            ShowWhat::Columns { full, table, db: db_override } => {
                let (db, t) = self.split_name(&table);
                let db = match db_override {
                    Some(d) => d,
                    None => db?,
                };
                self.require_any_on_table(&db, &t)?;
                show::show_columns(&catalog, &self.info, &db, &t, full, like.as_deref())?
            }
            ShowWhat::Index { table } => {
                let (db, t) = self.split_name(&table);
                let db = db?;
                self.require_any_on_table(&db, &t)?;
                show::show_index(&catalog, &db, &t)?
            }
            ShowWhat::CreateTable { table, view: show_view } => {
                let (db, t) = self.split_name(&table);
                let db = db?;
                self.require_any_on_table(&db, &t)?;
                // SHOW CREATE TABLE of a view shows the view, as MySQL's does; SHOW CREATE
                // VIEW of a table is 1347.
                if let Some(view) = catalog.view(&db, &t) {
                    // SHOW CREATE VIEW (and TABLE, of a view) needs SHOW VIEW and SELECT on it.
                    self.require_table(&db, &t, crate::accounts::SHOW_VIEW | crate::accounts::SELECT)?;
                    return Ok(Outcome::Rows(view_ddl::show_create(view, &self.info)));
                }
                if show_view {
                    catalog.table(&db, &t)?;
                    return Err(SqlError::new(codes::ER_WRONG_OBJECT, format!("'{db}.{t}' is not VIEW")));
                }
                show::show_create_table(
                    &catalog,
                    &db,
                    &t,
                    if self.info.var("sql_quote_show_create") == "OFF" { show::Quoting::WhereNeeded } else { show::Quoting::Always },
                )?
            }
            ShowWhat::CreateDatabase { name, if_not_exists } => {
                let db = name.as_str();
                catalog.database(db)?;
                let text = SqlTypeHelper::text();
                ResultSet {
                    columns: vec![OutColumn::computed("Database", text.clone()), OutColumn::computed("Create Database", text)],
                    rows: vec![vec![
                        Value::Str(db.to_owned()),
                        Value::Str(format!(
                            "CREATE DATABASE {}`{db}` /*!40100 DEFAULT CHARACTER SET {} COLLATE {} */ /*!80016 DEFAULT ENCRYPTION='N' */",
                            if if_not_exists { "/*!32312 IF NOT EXISTS*/ " } else { "" },
                            crate::charset::charset_of(catalog.database(db)?.collation),
                            catalog.database(db)?.collation.name()
                        )),
                    ]],
                }
            }
            ShowWhat::Variables { global } => self.show_variables(global, like.as_deref()),
            // SHOW COUNT(*) WARNINGS / ERRORS: the previous statement's, which it keeps.
            ShowWhat::Count { errors } => {
                let count = if errors { self.warnings.iter().filter(|w| w.level == "Error").count() } else { self.warnings.len() };
                let name = if errors { "@@session.error_count" } else { "@@session.warning_count" };
                ResultSet { columns: vec![OutColumn::computed(name, crate::types::SqlType::bigint())], rows: vec![vec![Value::Int(count as i64)]] }
            }
            ShowWhat::Status => self.show_status(like.as_deref()),
            ShowWhat::Warnings { errors } => {
                let text = SqlTypeHelper::text();
                ResultSet {
                    columns: vec![
                        OutColumn::computed("Level", text.clone()),
                        OutColumn::computed("Code", crate::types::SqlType::bigint()),
                        OutColumn::computed("Message", text),
                    ],
                    rows: self
                        .warnings
                        .iter()
                        .filter(|w| !errors || w.level == "Error")
                        .map(|w| vec![Value::Str(w.level.into()), Value::Int(i64::from(w.code)), Value::Str(w.message.clone())])
                        .collect(),
                }
            }
            ShowWhat::Processlist => self.show_processlist(),
            ShowWhat::BinaryLog { words } => {
                if words[0] == "BINLOG" {
                    self.require_global(crate::accounts::REPLICATION_SLAVE, "REPLICATION SLAVE")?;
                } else {
                    self.require_global(crate::accounts::SUPER | crate::accounts::REPLICATION_CLIENT, "SUPER, REPLICATION CLIENT")?;
                }
                show_binary_log(&engine, &words)?
            }
            ShowWhat::ReplicaStatus => {
                self.require_global(crate::accounts::SUPER | crate::accounts::REPLICATION_CLIENT, "SUPER, REPLICATION CLIENT")?;
                let rows = engine.replica.get().and_then(|r| r.status());
                let int = crate::types::SqlType::Int { kind: crate::types::IntKind::Big, unsigned: true, display: None };
                let columns: Vec<OutColumn> = rows
                    .as_ref()
                    .map(|r| {
                        r.iter()
                            .map(|(name, v)| OutColumn::computed(name, if matches!(v, Value::UInt(_)) { int.clone() } else { SqlTypeHelper::text() }))
                            .collect()
                    })
                    .unwrap_or_default();
                ResultSet { columns, rows: rows.map(|r| vec![r.into_iter().map(|(_, v)| v).collect()]).unwrap_or_default() }
            }
            ShowWhat::EngineInnodbStatus => {
                self.require_global(crate::accounts::PROCESS, "PROCESS")?;
                let text = SqlTypeHelper::text();
                let engine = self.engine();
                let catalog = engine.catalog();
                let deadlock = engine.latest_deadlock.lock().clone();
                let status = crate::innodb_status::status_text(&engine, &catalog, deadlock.as_deref());
                ResultSet {
                    columns: ["Type", "Name", "Status"].iter().map(|n| OutColumn::computed(n, text.clone())).collect(),
                    rows: vec![vec![Value::Str("InnoDB".into()), Value::Str(String::new()), Value::Str(status)]],
                }
            }
            // What is built in: the engine, the binary log, the two password plugins, and
            // semi-synchronous replication (both sides, always loaded).
            ShowWhat::Plugins => {
                let text = SqlTypeHelper::text();
                let plugins = [
                    ("binlog", "STORAGE ENGINE"),
                    ("mysql_native_password", "AUTHENTICATION"),
                    ("caching_sha2_password", "AUTHENTICATION"),
                    (quill_storage::handler::DEFAULT_ENGINE, "STORAGE ENGINE"),
                    ("rpl_semi_sync_source", "REPLICATION"),
                    ("rpl_semi_sync_replica", "REPLICATION"),
                ];
                ResultSet {
                    columns: ["Name", "Status", "Type", "Library", "License"].iter().map(|n| OutColumn::computed(n, text.clone())).collect(),
                    rows: plugins
                        .iter()
                        .map(|(name, kind)| {
                            vec![
                                Value::Str((*name).into()),
                                Value::Str("ACTIVE".into()),
                                Value::Str((*kind).into()),
                                Value::Null,
                                Value::Str("Apache-2.0".into()),
                            ]
                        })
                        .collect(),
                }
            }
            // Quill has no event scheduler: MySQL 8's columns, no rows.
            ShowWhat::Events { db } => {
                let db = db.or_else(|| self.info.db.clone()).ok_or_else(SqlError::no_db)?;
                self.require_visible_database(&db)?;
                catalog.database(&db)?;
                let text = SqlTypeHelper::text();
                let names = [
                    "Db",
                    "Name",
                    "Definer",
                    "Time zone",
                    "Type",
                    "Execute at",
                    "Interval value",
                    "Interval field",
                    "Starts",
                    "Ends",
                    "Status",
                    "Originator",
                    "character_set_client",
                    "collation_connection",
                    "Database Collation",
                ];
                ResultSet { columns: names.iter().map(|n| OutColumn::computed(n, text.clone())).collect(), rows: Vec::new() }
            }
            // Every table is open to every session (no table cache to leave): each one, never
            // in use or name-locked between statements.
            ShowWhat::OpenTables { db } => {
                let text = SqlTypeHelper::text();
                let columns = vec![
                    OutColumn::computed("Database", text.clone()),
                    OutColumn::computed("Table", text),
                    OutColumn::computed("In_use", crate::types::SqlType::bigint()),
                    OutColumn::computed("Name_locked", crate::types::SqlType::bigint()),
                ];
                let mut rows = Vec::new();
                for (name, d) in &catalog.databases {
                    if db.as_ref().is_some_and(|want| want != name) || !self.info.may_see_database(name) {
                        continue;
                    }
                    for t in d.tables.keys() {
                        if self.info.may_see_table(name, t) && crate::show::like_filter(t, like.as_deref()) {
                            rows.push(vec![Value::Str(name.clone()), Value::Str(t.clone()), Value::Int(0), Value::Int(0)]);
                        }
                    }
                }
                ResultSet { columns, rows }
            }
            ShowWhat::Triggers { db } => {
                let db = db.or_else(|| self.info.db.clone()).ok_or_else(SqlError::no_db)?;
                self.require_visible_database(&db)?;
                catalog.database(&db)?;
                // A trigger shows to an account with TRIGGER on its table (MySQL's rule).
                let rows = crate::trigger_ddl::show_rows(&catalog, &db, like.as_deref(), |t| {
                    self.privileges_on(&t.db, Some(&t.table)) & crate::accounts::TRIGGER != 0
                });
                ResultSet { columns: crate::trigger_ddl::show_columns(), rows }
            }
            ShowWhat::CreateRoutine { function, name } => {
                let (db, name) = self.split_name(&name);
                let db = db?;
                let routine = catalog.routine(&db, &name, function).cloned().ok_or_else(|| crate::routine_ddl::no_such_routine(function, &db, &name))?;
                if !self.may_see_routine(&routine) {
                    return Err(crate::routine_ddl::no_such_routine(function, &db, &name));
                }
                let (columns, row) = crate::routine_ddl::show_create(&routine);
                ResultSet { columns, rows: vec![row] }
            }
            ShowWhat::RoutineStatus { function } => {
                let rows = crate::routine_ddl::status_rows(&catalog, function, like.as_deref(), |r| self.may_see_routine(r));
                ResultSet { columns: crate::routine_ddl::status_columns(), rows }
            }
            ShowWhat::CreateTrigger { name } => {
                let (db, name) = self.split_name(&name);
                let db = db?;
                let trigger = catalog.trigger(&db, &name).cloned().ok_or_else(|| SqlError::new(codes::ER_TRG_DOES_NOT_EXIST, "Trigger does not exist"))?;
                self.require_table(&db, &trigger.table, crate::accounts::TRIGGER)?;
                let (columns, row) = crate::trigger_ddl::show_create(&trigger);
                ResultSet { columns, rows: vec![row] }
            }
            ShowWhat::Engines => {
                // information_schema.ENGINES' rows, under SHOW ENGINES' names.
                let text = SqlTypeHelper::text();
                ResultSet {
                    columns: ["Engine", "Support", "Comment", "Transactions", "XA", "Savepoints"]
                        .iter()
                        .map(|n| OutColumn::computed(n, text.clone()))
                        .collect(),
                    rows: crate::schema_server::engines().1,
                }
            }
            what @ (ShowWhat::Collation | ShowWhat::Charset) => {
                let text = SqlTypeHelper::text();
                if what == ShowWhat::Collation {
                    // information_schema.COLLATIONS' rows, under SHOW COLLATION's names.
                    let (_, rows) = crate::schema_server::collations();
                    ResultSet {
                        columns: ["Collation", "Charset", "Id", "Default", "Compiled", "Sortlen", "Pad_attribute"]
                            .iter()
                            .map(|n| OutColumn::computed(n, text.clone()))
                            .collect(),
                        rows: rows.into_iter().filter(|r| show::like_filter(&crate::ops::to_string_lossy(&r[0]), like.as_deref())).collect(),
                    }
                } else {
                    ResultSet {
                        columns: ["Charset", "Description", "Default collation", "Maxlen"].iter().map(|n| OutColumn::computed(n, text.clone())).collect(),
                        rows: vec![
                            vec![Value::Str("binary".into()), Value::Str("Binary pseudo charset".into()), Value::Str("binary".into()), Value::Int(1)],
                            vec![Value::Str("utf8mb4".into()), Value::Str("UTF-8 Unicode".into()), Value::Str("utf8mb4_0900_ai_ci".into()), Value::Int(4)],
                        ]
                        .into_iter()
                        .filter(|r| show::like_filter(&crate::ops::to_string_lossy(&r[0]), like.as_deref()))
                        .collect(),
                    }
                }
            }
            ShowWhat::TableStatus { db } => {
                let db = db.or_else(|| self.info.db.clone()).ok_or_else(SqlError::no_db)?;
                self.require_visible_database(&db)?;
                let d = catalog.database(&db)?;
                ResultSet {
                    columns: show::table_status_columns(),
                    rows: d
                        .tables
                        .values()
                        .filter(|t| show::like_filter(&t.name, like.as_deref()) && self.info.may_see_table(&db, &t.name))
                        .map(|t| show::table_status(t))
                        .collect(),
                }
            }
        };
        drop(catalog);
        let rs = match &show.filter {
            Some(cond) => self.filter_show(rs, cond, statement)?,
            None => rs,
        };
        Ok(Outcome::Rows(rs))
    }

    /// `SHOW ... WHERE cond`: keep the rows for which `cond` holds, naming the
    /// result's columns.
    pub(super) fn filter_show(&self, rs: ResultSet, cond: &str, statement: &StatementText) -> Result<ResultSet> {
        let stmts = crate::parse::parse(&format!("SELECT 1 FROM show_result WHERE {cond}"), statement.operators, statement.div_operators)?;
        let Some(Statement::Query(q)) = stmts.first() else { return Err(SqlError::parse(cond)) };
        let ast::SetExpr::Select(sel) = q.body.as_ref() else { return Err(SqlError::parse(cond)) };
        let Some(selection) = &sel.selection else { return Ok(rs) };
        let scope = crate::bind::Scope { columns: rs.columns.iter().map(|c| crate::bind::ScopeColumn::computed("", &c.name, c.ty.clone())).collect() };
        let catalog = self.info.engine.catalog();
        let env = crate::show::statement_env(&catalog, ReadView::current(0), &[], 0, &self.info);
        let cond = crate::bind::Binder::new(&env, &scope, "where clause").bind(selection)?;
        let mut rows = Vec::new();
        for r in rs.rows {
            if crate::ops::truth(&cond.eval(&env, &crate::expr::RowCtx::new(&r))?) == Some(true) {
                rows.push(r);
            }
        }
        Ok(ResultSet { columns: rs.columns, rows })
    }

    pub(super) fn show_variables(&self, global: bool, like: Option<&str>) -> ResultSet {
        let text = SqlTypeHelper::text();
        let globals = self.info.engine.globals.read();
        let source = if global { &*globals } else { &self.info.vars };
        let rows = vars::VARIABLES
            .iter()
            .filter(|d| show::like_filter(d.name, like))
            .filter(|d| !(global && d.scope == vars::Scope::Session))
            .map(|d| {
                let v = if d.scope == vars::Scope::Global { globals.get(d.name) } else { source.get(d.name) };
                vec![Value::Str(d.name.into()), Value::Str(v.unwrap_or_default().to_owned())]
            })
            .collect();
        ResultSet { columns: vec![OutColumn::computed("Variable_name", text.clone()), OutColumn::computed("Value", text)], rows }
    }

    pub(super) fn show_status(&self, like: Option<&str>) -> ResultSet {
        let text = SqlTypeHelper::text();
        let mut items = self.info.engine.global_status();
        items.push(("Ssl_cipher", self.tls_cipher.clone()));
        items.push(("Ssl_version", self.tls_version.clone()));
        items.sort_by(|a, b| a.0.cmp(b.0));
        ResultSet {
            columns: vec![OutColumn::computed("Variable_name", text.clone()), OutColumn::computed("Value", text)],
            rows: items.into_iter().filter(|(n, _)| show::like_filter(n, like)).map(|(n, v)| vec![Value::Str(n.into()), Value::Str(v)]).collect(),
        }
    }

    /// `collation_server`: what a database created without a collation takes.
    pub(super) fn server_collation(&self) -> quill_storage::Collation {
        quill_storage::Collation::from_name(self.info.var("collation_server")).unwrap_or_default()
    }

    /// 1044 for SHOW TABLES / SHOW TABLE STATUS of a database the account has nothing in.
    /// Whether the account may see a routine: it made it, or holds EXECUTE, CREATE ROUTINE or
    /// ALTER ROUTINE on its database.
    pub(crate) fn may_see_routine(&self, r: &crate::program_meta::RoutineMeta) -> bool {
        self.info.may_see_routine(r)
    }

    pub(super) fn require_visible_database(&self, db: &str) -> Result<()> {
        if self.info.may_see_database(db) { Ok(()) } else { Err(self.database_denied(db)) }
    }

    pub(super) fn show_processlist(&self) -> ResultSet {
        let (columns, rows) = show::processlist(&self.info, false);
        ResultSet { columns, rows }
    }
}

/// `SHOW MASTER STATUS`, `SHOW BINARY LOG STATUS` (MySQL 8.2's name) and `SHOW BINARY LOGS`
/// / `SHOW MASTER LOGS`; `words` starts at MASTER or BINARY.
fn show_binary_log(engine: &Engine, words: &[String]) -> Result<ResultSet> {
    let text = SqlTypeHelper::text();
    let int = crate::types::SqlType::Int { kind: crate::types::IntKind::Big, unsigned: true, display: None };
    let Some(binlog) = engine.binary_log.get() else {
        return Err(SqlError::new(codes::ER_NO_BINARY_LOGGING, "You are not using binary logging"));
    };
    let failed = |e: String| SqlError::new(codes::ER_ERROR_WHEN_EXECUTING_COMMAND, format!("Error when executing command SHOW BINLOG EVENTS: {e}"));
    let word = |i: usize| words.get(i).map_or("", String::as_str);
    if word(1) == "LOGS" {
        let files = binlog.files().map_err(failed)?;
        return Ok(ResultSet {
            columns: vec![OutColumn::computed("Log_name", text.clone()), OutColumn::computed("File_size", int), OutColumn::computed("Encrypted", text)],
            rows: files.into_iter().map(|(name, size)| vec![Value::Str(name), Value::UInt(size), Value::Str("No".into())]).collect(),
        });
    }
    if word(1) != "STATUS" && !(word(1) == "LOG" && word(2) == "STATUS") {
        return Err(SqlError::parse(&words.join(" ")));
    }
    let (file, position) = binlog.status().map_err(failed)?;
    let executed = gtid_executed(engine);
    Ok(ResultSet {
        columns: ["File", "Position", "Binlog_Do_DB", "Binlog_Ignore_DB", "Executed_Gtid_Set"]
            .iter()
            .map(|n| OutColumn::computed(n, if *n == "Position" { int.clone() } else { text.clone() }))
            .collect(),
        rows: vec![vec![Value::Str(file), Value::UInt(position), Value::Str(String::new()), Value::Str(String::new()), Value::Str(executed)]],
    })
}
