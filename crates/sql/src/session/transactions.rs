//! Transactions: BEGIN / START TRANSACTION (with its characteristics), SET TRANSACTION,
//! the isolation level each new transaction gets, the read view a statement reads from, and
//! the end of a statement inside or outside an explicit transaction (autocommit commits it).
//! COMMIT and ROLLBACK themselves are `commit`'s.

use quill_storage::{ReadView, TxnId};

use crate::error::{Result, SqlError, codes};

use super::{Outcome, Session, Txn};

impl Session {
    pub(super) fn isolation(&self) -> &'static str {
        match &self.txn {
            Some(t) => t.isolation,
            None => self.next_isolation.unwrap_or_else(|| quill_txn::isolation_level(self.info.var("transaction_isolation"))),
        }
    }

    /// The isolation level a transaction starting now gets (SET TRANSACTION without a
    /// scope sets it for the next transaction only).
    pub(super) fn isolation_for_new_transaction(&mut self) -> &'static str {
        self.next_isolation.take().unwrap_or_else(|| quill_txn::isolation_level(self.info.var("transaction_isolation")))
    }

    /// The transaction this statement runs in (creating an implicit one).
    pub(super) fn txn_for_statement(&mut self) -> TxnId {
        if self.txn.is_none() {
            self.txn = Some(self.new_txn(false, None));
        }
        self.txn.as_ref().map(|t| t.id).unwrap_or_default()
    }

    /// Register a transaction with the isolation level and access mode it starts with.
    pub(super) fn new_txn(&mut self, explicit: bool, read_only: Option<bool>) -> Txn {
        let isolation = self.isolation_for_new_transaction();
        let next = self.next_read_only.take();
        let read_only = read_only.or(next).unwrap_or_else(|| self.info.var("transaction_read_only") == "ON");
        let id = self.info.engine.txns.begin(self.info.connection_id, isolation, read_only);
        Txn { id, view: None, writes: crate::write_log::WriteLog::new(), logged: 0, stream: None, explicit, isolation, read_only, savepoints: Vec::new() }
    }

    pub(super) fn read_view(&mut self) -> ReadView {
        let iso = self.isolation();
        let engine = self.engine();
        let txn = self.txn_for_statement();
        let t = self.txn.as_mut().expect("txn created above");
        if iso == "READ-UNCOMMITTED" {
            return ReadView { txn, read_ts: u64::MAX, uncommitted: true };
        }
        if iso == "READ-COMMITTED"
            && let Some(v) = t.view.take()
        {
            engine.txns.release_view(&v);
        }
        *t.view.get_or_insert_with(|| engine.txns.read_view(txn, false))
    }

    pub(super) fn begin_explicit(&mut self, read_only: Option<bool>) {
        self.txn = Some(self.new_txn(true, read_only));
    }

    /// End an implicit transaction after a statement, when autocommit says so.
    pub(super) fn statement_end(&mut self) -> Result<()> {
        let implicit = self.txn.as_ref().is_some_and(|t| !t.explicit);
        if implicit && self.autocommit() {
            self.commit()?;
        }
        Ok(())
    }

    /// `START TRANSACTION [WITH CONSISTENT SNAPSHOT | READ ONLY | READ WRITE], ...`.
    pub(super) fn start_transaction(&mut self, sql: &str) -> Result<Outcome> {
        let text = sql.trim().trim_end_matches(';');
        let rest = text.get("START TRANSACTION".len()..).unwrap_or("").trim();
        let mut snapshot = false;
        let mut read_only = None;
        for part in rest.split(',').map(|p| p.split_whitespace().map(str::to_ascii_uppercase).collect::<Vec<_>>().join(" ")).filter(|p| !p.is_empty()) {
            match part.as_str() {
                "WITH CONSISTENT SNAPSHOT" => snapshot = true,
                "READ ONLY" | "READ WRITE" if read_only.is_none() => read_only = Some(part == "READ ONLY"),
                _ => return Err(SqlError::parse(rest)),
            }
        }
        self.unlock_tables()?;
        self.commit()?;
        self.begin_explicit(read_only);
        if snapshot {
            let _ = self.read_view();
        }
        Ok(Outcome::ok())
    }

    /// `SET [GLOBAL | SESSION] TRANSACTION ISOLATION LEVEL ... | READ WRITE | READ ONLY`.
    /// The parser drops the scope, so this recogniser handles the statement.
    pub(super) fn set_transaction(&mut self, words: &[&str]) -> Result<Outcome> {
        let upper: Vec<String> = words.iter().map(|w| w.trim_end_matches(';').to_ascii_uppercase()).collect();
        let scope = upper.get(1).map_or("", String::as_str);
        let scope = if matches!(scope, "GLOBAL" | "SESSION" | "LOCAL") { scope } else { "" };
        let from = upper.iter().position(|w| w == "TRANSACTION").map_or(upper.len(), |p| p + 1);
        let text = upper[from..].join(" ");
        let mut level = None;
        let mut read_only = None;
        for part in text.split(',').map(str::trim) {
            let words: Vec<&str> = part.split_whitespace().collect();
            match words.as_slice() {
                ["ISOLATION", "LEVEL", "READ", "UNCOMMITTED"] if level.is_none() => level = Some("READ-UNCOMMITTED"),
                ["ISOLATION", "LEVEL", "READ", "COMMITTED"] if level.is_none() => level = Some("READ-COMMITTED"),
                ["ISOLATION", "LEVEL", "REPEATABLE", "READ"] if level.is_none() => level = Some("REPEATABLE-READ"),
                ["ISOLATION", "LEVEL", "SERIALIZABLE"] if level.is_none() => level = Some("SERIALIZABLE"),
                ["READ", "ONLY"] if read_only.is_none() => read_only = Some(true),
                ["READ", "WRITE"] if read_only.is_none() => read_only = Some(false),
                _ => return Err(SqlError::parse(part)),
            }
        }
        let mode = read_only.map(|r| if r { "ON" } else { "OFF" });
        if scope == "GLOBAL" {
            self.require_global(crate::accounts::SUPER, "SUPER or SYSTEM_VARIABLES_ADMIN")?;
        }
        match scope {
            "GLOBAL" => {
                let mut g = self.info.engine.globals.write();
                if let Some(level) = level {
                    g.values.insert("transaction_isolation", level.into());
                    g.values.insert("tx_isolation", level.into());
                }
                if let Some(m) = mode {
                    g.values.insert("transaction_read_only", m.into());
                    g.values.insert("tx_read_only", m.into());
                }
            }
            "SESSION" | "LOCAL" => {
                if let Some(level) = level {
                    self.info.vars.values.insert("transaction_isolation", level.into());
                    self.info.vars.values.insert("tx_isolation", level.into());
                }
                if let Some(m) = mode {
                    self.info.vars.values.insert("transaction_read_only", m.into());
                    self.info.vars.values.insert("tx_read_only", m.into());
                }
            }
            _ => {
                if self.in_transaction() {
                    return Err(SqlError::new(
                        codes::ER_CANT_CHANGE_TX_CHARACTERISTICS,
                        "Transaction characteristics can't be changed while a transaction is in progress",
                    ));
                }
                if let Some(level) = level {
                    self.next_isolation = Some(level);
                }
                if read_only.is_some() {
                    self.next_read_only = read_only;
                }
            }
        }
        Ok(Outcome::ok())
    }
}
