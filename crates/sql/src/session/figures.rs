//! What the session records about each statement as it runs: its start and finish
//! (`start_statement`, `finish_statement`), its row lock waits and their blocker, and the
//! slow query log entry a statement slower than `long_query_time` leaves (`slow_log`).
//! The figures are gathered per statement in `StatementFigures`, kept even when the statement
//! fails, and counted in the engine's status.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use quill_storage::TxnId;

use crate::error::{Result, codes};
use crate::vars;

use super::{FinishedStatement, Outcome, Session, StatementFigures, program_path};

impl Session {
    /// This session's transaction was a deadlock's victim: the deadlock is described now,
    /// before it rolls back, while the others still wait (`innodb_status`), and written to
    /// the server's log with `innodb_print_all_deadlocks`.
    pub(super) fn describe_deadlock(&self) {
        let Some(txn) = self.txn.as_ref().map(|t| t.id) else { return };
        let engine = &self.info.engine;
        let Some(record) = engine.txns.locks.take_deadlock(txn) else { return };
        let text = crate::innodb_status::describe_deadlock(engine, &engine.catalog(), &record);
        if engine.global("innodb_print_all_deadlocks").as_deref() == Some("ON") {
            tracing::warn!("Transactions deadlock detected, dumping detailed information.\n{text}");
        }
        *engine.latest_deadlock.lock() = Some(text);
    }

    /// A statement starts: its slow-log figures from zero.
    pub(super) fn start_statement(&mut self) {
        self.statement = StatementFigures::new();
        self.statement_lock_time = Duration::ZERO;
        self.info.interrupt.start_statement();
    }

    /// A statement ended with `r`: what the slow log needs of it.
    pub(super) fn finish_statement(&mut self, r: &Result<Outcome>) -> FinishedStatement {
        let raised = self.info.expression_warnings.take();
        self.warnings.extend(raised);
        let (rows_sent, rows_affected) = match r {
            Ok(o @ (Outcome::Rows(_) | Outcome::Streamed { .. } | Outcome::Results(_))) => (o.result_rows(), 0),
            Ok(Outcome::Done { affected, .. }) => (0, *affected),
            Err(_) => (0, 0),
        };
        FinishedStatement {
            started: self.statement.started,
            start_us: self.statement.start_us,
            lock_time: self.statement_lock_time,
            rows_sent,
            rows_affected,
            rows_examined: self.info.interrupt.examined().max(rows_affected).max(rows_sent),
            full_scan: self.info.interrupt.full_scan(),
            errno: r.as_ref().err().map_or(0, |e| e.code),
            killed: r.as_ref().is_err_and(|e| e.code == codes::ER_QUERY_INTERRUPTED.0),
            trx_id: self.txn.as_ref().map(|t| t.id).or(self.statement.trx_id),
            row_lock_wait: self.statement.row_lock_wait,
            blocker: self.statement.blocker.take().map(|(_, b)| b),
        }
    }

    /// The transaction (and its connection and statement) that `txn`'s waiting row lock
    /// request waits for, when the wait begins.
    pub(super) fn row_lock_blocker(&mut self, txn: TxnId) -> Option<crate::slow_log::Blocker> {
        self.statement.trx_id = Some(txn);
        let engine = &self.info.engine;
        let blocker = engine.txns.locks.blockers_of(txn).into_iter().next()?;
        let connection_id = engine.txns.thread_of(blocker).unwrap_or(0);
        let (statement, idle) = engine.processes.lock().get(&connection_id).map_or((None, false), |p| match &p.info {
            Some(running) => (Some(running.clone()), false),
            None => (p.last_info.clone(), true),
        });
        Some(crate::slow_log::Blocker { connection_id, trx_id: blocker, statement, idle })
    }

    /// The statement waited `waited` for a row lock that `blocker` held.
    pub(super) fn row_lock_waited(&mut self, waited: Duration, blocker: Option<crate::slow_log::Blocker>) {
        self.info.engine.status.distributions.row_lock_wait_us.observe(u64::try_from(waited.as_micros()).unwrap_or(u64::MAX));
        self.statement_lock_time += waited;
        self.statement.row_lock_wait += waited;
        if let Some(b) = blocker
            && self.statement.blocker.as_ref().is_none_or(|(longest, _)| waited >= *longest)
        {
            self.statement.blocker = Some((waited, b));
        }
    }

    /// Counts the statement in `Slow_queries` and writes it to the slow log when it was slow
    /// (`slow_log`); `end` is when its reply could go. `text` makes the statement's text, only
    /// for a statement that is written.
    pub(super) fn log_if_slow(&self, f: &FinishedStatement, end: Instant, text: impl FnOnce() -> String) {
        let query_time = end.saturating_duration_since(f.started);
        let long = self.info.var("long_query_time").parse::<f64>().unwrap_or(10.0);
        let slow = query_time.as_secs_f64() > long || (f.full_scan && self.info.engine.global("log_queries_not_using_indexes").as_deref() == Some("ON"));
        if !slow || f.rows_examined < vars::int_value(&self.info.vars, "min_examined_row_limit") {
            return;
        }
        let engine = &self.info.engine;
        engine.status.slow_queries.fetch_add(1, Ordering::Relaxed);
        if engine.global("slow_query_log").as_deref() != Some("ON") || engine.global("log_output").as_deref() == Some("NONE") {
            return;
        }
        let text = text();
        // A password in the statement is never written out.
        let text = crate::account_statements::redacted(&text).unwrap_or(text);
        let text = text.as_str();
        let verbosity = self.info.var("log_slow_verbosity");
        let detail = crate::slow_log::Detail {
            extra: engine.global("log_slow_extra").as_deref() == Some("ON"),
            innodb: verbosity.split(',').any(|w| w == "innodb" || w == "full"),
        };
        let entry = crate::slow_log::Entry {
            start_us: f.start_us,
            user: &self.info.user,
            host: &self.info.host,
            ip: &self.info.host,
            connection_id: self.info.connection_id,
            db: self.info.db.as_deref(),
            query_time,
            lock_time: f.lock_time,
            rows_sent: f.rows_sent,
            rows_examined: f.rows_examined,
            rows_affected: f.rows_affected,
            errno: f.errno,
            killed: f.killed,
            bytes_received: text.len() as u64,
            trx_id: f.trx_id,
            row_lock_wait: f.row_lock_wait,
            blocker: f.blocker.clone(),
            text,
        };
        let path = self.slow_log_path();
        if let Err(e) = engine.slow_log.write(&path, &self.slow_log_header(), &entry, detail) {
            tracing::warn!(path = %path.display(), error = %e, "slow query log: entry not written");
        }
    }

    /// `slow_query_log_file`, in the data directory when not absolute.
    pub(super) fn slow_log_path(&self) -> std::path::PathBuf {
        let engine = &self.info.engine;
        let name = engine.global("slow_query_log_file").filter(|n| !n.is_empty()).unwrap_or_else(|| crate::slow_log::DEFAULT_FILE.to_owned());
        std::path::Path::new(&engine.global("datadir").unwrap_or_default()).join(name)
    }

    pub(super) fn slow_log_header(&self) -> crate::slow_log::Header {
        let engine = &self.info.engine;
        crate::slow_log::Header {
            program: program_path().to_owned(),
            version: crate::SERVER_VERSION.to_owned(),
            port: engine.global("port").and_then(|p| p.parse().ok()).unwrap_or(0),
            socket: engine.global("socket").unwrap_or_default(),
        }
    }
}
