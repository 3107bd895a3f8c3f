//! Running one parsed statement: its metadata locks (what each table it names needs,
//! taken before it runs and held to the end of its transaction, `mdl`), the attempts it makes
//! (`retry`), and [`Session::execute_once`], which dispatches on the statement's kind.

use std::time::{Duration, Instant};

use quill_storage::Value;
use sqlparser::ast::{self, Statement};

use crate::error::{Result, SqlError, Warning, codes};
use crate::vars;

use super::{Outcome, Session, ident_of, is_ddl, select_into};

impl Session {
    /// Runs one statement under its metadata locks, waiting out lock holders and
    /// checkpoints; `text` is the statement as the client sent it (the commit log records
    /// DDL as this text: sqlparser's Display does not round-trip every literal).
    pub(super) async fn execute(&mut self, stmt: &Statement, params: &[Value], text: &str) -> Result<Outcome> {
        // A CALL runs its procedure's statements, each one of these (`call`).
        if let Statement::Call(f) = stmt {
            return Box::pin(self.call_statement(f, params)).await;
        }
        self.check_privileges(stmt)?;
        // A write through an updatable view runs on the view's table (`view_writes`).
        let through_view = match stmt {
            Statement::Insert(_) | Statement::Update(_) | Statement::Delete(_) => crate::view_writes::rewrite(&self.info.engine.catalog(), &self.info, stmt)?,
            _ => None,
        };
        if let Some(rewritten) = &through_view {
            self.check_privileges(rewritten)?;
        }
        let stmt = through_view.as_ref().unwrap_or(stmt);
        // `@v := expr` outside SET (a `:=` in a string literal only costs the statement its
        // constant reads of user variables).
        let assigns = text.contains(":=") && !matches!(stmt, Statement::Set(_));
        self.info.user_variables_assigned.set(assigns);
        if assigns {
            self.warnings.push(Warning {
                level: "Warning",
                code: codes::ER_WARN_DEPRECATED_SYNTAX.0,
                message: "Setting user variables within expressions is deprecated and will be removed in a future release. Consider alternatives: 'SET variable=expression, ...', or 'SELECT expression(s) INTO variables(s)'.".into(),
            });
        }
        let started = Instant::now();
        let locked = self.acquire_metadata_locks(stmt).await;
        self.statement_lock_time += started.elapsed();
        let outcome = match locked {
            Ok(()) => self.execute_locked(stmt, params, text).await,
            Err(e) => Err(e),
        };
        if self.txn.is_none() {
            self.info.engine.mdl.release_all(self.info.connection_id);
        }
        outcome
    }

    /// The tables `stmt` works on, each with the metadata lock it needs: exclusive for the
    /// tables DDL changes, shared (read or write) for those a statement uses.
    pub(super) fn metadata_lock_requests(&self, stmt: &Statement) -> Vec<(crate::mdl::TableName, crate::mdl::Mode)> {
        use crate::mdl::Mode;
        let mut requests: Vec<(crate::mdl::TableName, Mode)> = match stmt {
            Statement::Drop { object_type: ast::ObjectType::Database | ast::ObjectType::Schema, names, .. } => {
                let db = ident_of(&names[0]);
                let catalog = self.info.engine.catalog();
                let tables = catalog.database(&db).map(|d| d.tables.keys().map(|t| ((db.clone(), t.clone()), Mode::Exclusive)).collect());
                tables.unwrap_or_default()
            }
            Statement::CreateDatabase { .. } | Statement::CreateSchema { .. } => Vec::new(),
            _ => {
                let ddl = is_ddl(stmt);
                let mode = |write: bool| {
                    if ddl {
                        Mode::Exclusive
                    } else if write {
                        Mode::Write
                    } else {
                        Mode::Read
                    }
                };
                let mut requests: Vec<_> = self.table_references(stmt).into_iter().map(|r| ((r.db, r.table), mode(r.write))).collect();
                // The tables foreign keys reach from a written one: its parents, read, and
                // the children its changes cascade into, written.
                let catalog = self.info.engine.catalog();
                if !ddl && catalog.has_foreign_keys() {
                    let written: Vec<crate::mdl::TableName> = requests.iter().filter(|(_, m)| *m == Mode::Write).map(|(n, _)| n.clone()).collect();
                    for (db, table) in written {
                        let reached = crate::foreign_keys::reachable_tables(&catalog, &db, &table);
                        requests.extend(reached.into_iter().map(|(name, write)| (name, mode(write))));
                    }
                }
                // The tables the triggers of a written table name, written (a trigger's
                // own statements take no locks of their own).
                if !ddl {
                    let mut i = 0;
                    while i < requests.len() {
                        let ((db, table), m) = &requests[i];
                        if *m == Mode::Write {
                            let reached = crate::triggers::tables_named(&catalog, &self.info, db, table);
                            requests
                                .extend(reached.into_iter().filter(|n| !requests.iter().any(|(r, _)| r == n)).map(|n| (n, Mode::Write)).collect::<Vec<_>>());
                        }
                        i += 1;
                    }
                }
                requests
            }
        };
        requests.sort();
        requests.dedup_by(|later, first| {
            if later.0 == first.0 {
                first.1 = first.1.max(later.1);
                true
            } else {
                false
            }
        });
        requests
    }

    /// Takes the metadata locks `stmt` needs, waiting (bounded by `lock_wait_timeout`) for
    /// DDL or for the transactions that use a table DDL is about to change. DDL commits the
    /// open transaction first, as it would anyway, so it waits for others only.
    ///
    /// # Errors
    /// 1205 when the wait times out, 1317 when the session is killed meanwhile, and the
    /// commit's errors.
    pub(super) async fn acquire_metadata_locks(&mut self, stmt: &Statement) -> Result<()> {
        self.check_table_locks(stmt)?;
        let requests = self.metadata_lock_requests(stmt);
        self.acquire_locks(requests, false).await
    }

    /// Takes the metadata locks of `requests`, all at once (see
    /// [`Session::acquire_metadata_locks`]); `explicit` for `LOCK TABLES`.
    ///
    /// # Errors
    /// As [`Session::acquire_metadata_locks`].
    pub(super) async fn acquire_locks(&mut self, requests: Vec<(crate::mdl::TableName, crate::mdl::Mode)>, explicit: bool) -> Result<()> {
        let exclusive = requests.iter().any(|(_, m)| *m == crate::mdl::Mode::Exclusive);
        if exclusive {
            self.commit()?;
        }
        if requests.is_empty() {
            return Ok(());
        }
        let engine = self.engine();
        let id = self.info.connection_id;
        let deadline = Instant::now() + Duration::from_secs(vars::int_value(&self.info.vars, "lock_wait_timeout"));
        let mut waiting = false;
        let result = loop {
            let released = engine.mdl.released();
            let granted = engine.mdl.try_acquire(id, &requests, explicit);
            if granted.is_ok() {
                break Ok(());
            }
            if !waiting {
                waiting = true;
                self.set_state("Waiting for table metadata lock");
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break Err(SqlError::lock_wait_timeout());
            }
            tokio::select! {
                () = released => {}
                () = tokio::time::sleep(left) => {}
                () = self.kill.notified() => {
                    if self.is_killed() {
                        break Err(SqlError::query_interrupted());
                    }
                }
            }
        };
        if waiting {
            self.set_state("");
        }
        if result.is_err() {
            engine.mdl.withdraw(id);
        }
        result
    }

    /// Show `state` for this session in PROCESSLIST.
    pub(super) fn set_state(&self, state: &'static str) {
        if let Some(p) = self.info.engine.processes.lock().get_mut(&self.info.connection_id) {
            p.state = state;
        }
    }

    /// [`Session::execute`] once its metadata locks are held.
    pub(super) async fn execute_locked(&mut self, stmt: &Statement, params: &[Value], text: &str) -> Result<Outcome> {
        self.info.function_calls.borrow_mut().start_statement();
        let outcome = self.execute_attempts(stmt, params, text).await;
        // A wait whose error did not come back here (a statement path outside this loop)
        // settles itself as it is dropped: its request taken back, or the lock it was handed
        // given back (`quill_txn::user_locks::Wait`).
        self.info.function_calls.borrow_mut().start_statement();
        outcome
    }

    /// One attempt at a statement, run synchronously: a wait it needs stops it with a
    /// [`Wait`] that [`Session::execute_attempts`] makes.
    pub(super) fn execute_once(&mut self, stmt: &Statement, params: &[Value], text: &str) -> Result<Outcome> {
        let bound = self.info.engine.global("temptable_max_ram").and_then(|v| v.parse().ok()).unwrap_or(usize::MAX);
        self.info.tmp_memory.start_statement(bound);
        match stmt {
            Statement::Query(q) if select_into(q).is_some() => self.select_into_variables(q, params),
            Statement::Query(q) => self.select(q, params),
            Statement::Insert(_) | Statement::Update(_) | Statement::Delete(_) => self.write(stmt, params),
            Statement::StartTransaction { .. } => {
                self.commit()?;
                self.begin_explicit(None);
                Ok(Outcome::ok())
            }
            Statement::Commit { .. } => {
                self.commit()?;
                Ok(Outcome::ok())
            }
            Statement::Rollback { savepoint: None, .. } => {
                self.rollback();
                Ok(Outcome::ok())
            }
            Statement::Rollback { savepoint: Some(name), chain: false } => {
                self.rollback_to_savepoint(&name.value)?;
                Ok(Outcome::ok())
            }
            Statement::Savepoint { name } => {
                self.savepoint(&name.value);
                Ok(Outcome::ok())
            }
            Statement::ReleaseSavepoint { name } => {
                self.release_savepoint(&name.value)?;
                Ok(Outcome::ok())
            }
            Statement::Set(set) => {
                self.info.row_count = 0;
                self.set(set, params)
            }
            Statement::Use(u) => {
                let name = match u {
                    ast::Use::Object(n) | ast::Use::Database(n) | ast::Use::Schema(n) => {
                        n.0.last().map(|p| p.as_ident().map_or_else(|| p.to_string(), |i| i.value.clone())).unwrap_or_default()
                    }
                    _ => return Err(SqlError::parse("USE")),
                };
                self.use_database(&name)?;
                Ok(Outcome::ok())
            }
            _ => self.ddl(stmt, params, text),
        }
    }
}
