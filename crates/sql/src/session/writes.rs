//! Writing statements: INSERT, UPDATE, DELETE and REPLACE through `dml`, refused under
//! `read_only` / `super_read_only` for an account without SUPER (1290), with the OK packet's
//! affected rows, insert id and info text.

use std::sync::atomic::Ordering;

use quill_storage::Value;
use quill_txn::{LockMode, WaitPolicy};
use sqlparser::ast::{self, Statement};

use crate::catalog::Catalog;
use crate::cost;
use crate::dml::{self, DmlCx};
use crate::error::{Result, SqlError, codes};

use super::{Outcome, Session};

impl Session {
    pub(super) fn write(&mut self, stmt: &Statement, params: &[Value]) -> Result<Outcome> {
        let status = &self.info.engine.status;
        match stmt {
            Statement::Insert(_) => status.com_insert.fetch_add(1, Ordering::Relaxed),
            Statement::Update(_) => status.com_update.fetch_add(1, Ordering::Relaxed),
            _ => status.com_delete.fetch_add(1, Ordering::Relaxed),
        };
        // INSERT ... SELECT copies a whole query result: off the runtime's worker.
        let heavy = matches!(stmt, Statement::Insert(i) if i.source.as_deref().is_some_and(|q| !matches!(q.body.as_ref(), ast::SetExpr::Values(_))));
        self.run_dml(params, heavy, None, |catalog, cx| match stmt {
            Statement::Insert(i) => dml::insert(catalog, cx, i),
            Statement::Update(u) => dml::update(catalog, cx, u),
            Statement::Delete(d) => dml::delete(catalog, cx, d),
            _ => unreachable!("dispatched on statement kind"),
        })
    }

    /// Why this session may not write now: `super_read_only`, or `read_only` for an account
    /// without SUPER (1290, as MySQL). The replica applier writes regardless.
    pub(super) fn read_only_refusal(&self) -> Option<SqlError> {
        if self.replica_applier {
            return None;
        }
        let engine = &self.info.engine;
        let option = if engine.global("super_read_only").as_deref() == Some("ON") {
            "--super-read-only"
        } else if engine.global("read_only").as_deref() == Some("ON") && !self.has_super() {
            "--read-only"
        } else {
            return None;
        };
        Some(SqlError::new(
            codes::ER_OPTION_PREVENTS_STATEMENT,
            format!("The MySQL server is running with the {option} option so it cannot execute this statement"),
        ))
    }

    /// Whether the session's account holds SUPER: root, the one account there is.
    pub(super) fn has_super(&self) -> bool {
        self.global_privileges() & crate::accounts::SUPER != 0
    }

    /// Runs one writing statement (`f`) in the statement's transaction, with statement
    /// atomicity (a failed statement undoes exactly what it pushed), then the statement's end
    /// (autocommit). `heavy` runs it off the runtime's worker; `strict` overrides the
    /// session's strict mode (LOAD DATA LOCAL, whose data errors are warnings).
    pub(super) fn run_dml(
        &mut self,
        params: &[Value],
        heavy: bool,
        strict: Option<bool>,
        f: impl FnOnce(&Catalog, &mut DmlCx<'_>) -> Result<dml::DmlResult>,
    ) -> Result<Outcome> {
        if let Some(e) = self.read_only_refusal() {
            return Err(e);
        }
        let txn = self.txn_for_statement();
        if self.txn.as_ref().is_some_and(|t| t.read_only) {
            let e = SqlError::new(codes::ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION, "Cannot execute statement in a READ ONLY transaction.");
            return self.statement_end().and(Err(e));
        }
        let lock = self.lock_spec(LockMode::Exclusive, WaitPolicy::Wait);
        let engine = self.engine();
        let mut undo = crate::write_log::WriteLog::new();
        let mut warnings = Vec::new();
        let strict = strict.unwrap_or_else(|| self.info.strict());
        self.info.last_insert_id_assigned.set(false);
        let result = {
            let catalog = engine.catalog();
            let mut cx = DmlCx {
                txn,
                info: &self.info,
                params,
                now_us: self.info.now_us(),
                undo: &mut undo,
                warnings: &mut warnings,
                strict,
                found_rows: self.client_found_rows,
                lock,
                read_uncommitted: self.isolation() == "READ-UNCOMMITTED",
                fire_triggers: !self.replica_applier,
                firing: Vec::new(),
            };
            let r = cost::run_heavy(heavy, || f(&catalog, &mut cx));
            if r.is_err() {
                // Statement atomicity: undo exactly what this statement pushed.
                for (tid, pk) in undo.iter().rev() {
                    if let Some(t) = catalog.table_by_id(tid) {
                        t.data.undo_last(txn, pk);
                    }
                }
            }
            r
        };
        self.warnings.extend(warnings);
        match result {
            Ok(r) => {
                engine.txns.locks.add_modified(txn, undo.len());
                if let Some(t) = self.txn.as_mut() {
                    t.writes.append(undo);
                }
                self.stream_if_large()?;
                if let Some(id) = r.last_insert_id {
                    self.info.last_insert_id.set(id);
                }
                // The OK packet's insert id, by MySQL's rule: the first value generated; else
                // the argument of LAST_INSERT_ID(expr) if the statement called it; else the
                // AUTO_INCREMENT column's value in the last row written (given explicitly).
                let insert_id = match r.last_insert_id {
                    Some(id) => id,
                    None if self.info.last_insert_id_assigned.get() => self.info.last_insert_id.get(),
                    None => r.last_auto_value.unwrap_or(0),
                };
                self.after_read();
                self.info.row_count = r.affected as i64;
                self.statement_end()?;
                Ok(Outcome::Done { affected: r.affected, last_insert_id: insert_id, info: r.info })
            }
            Err(e) if e.wait().is_some() || e.rolls_back_transaction => Err(e),
            // The statement's own error wins over a commit error (there is nothing left to commit).
            Err(e) => self.statement_end().and(Err(e)),
        }
    }
}
