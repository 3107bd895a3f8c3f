//! Functions that wait inside a statement: `GET_LOCK` waiting for a user-level lock
//! (`txn::user_locks`), `SLEEP`, and `WAIT_FOR_TABLE_COMMIT` (`commit_notify`). Expressions are
//! evaluated synchronously, and a session never blocks a runtime thread, so such a function
//! does not wait where it is called: it queues its request, notes it here
//! ([`StatementCalls::waiting`]) and fails the statement with `SqlError::must_wait(Wait::Function)`. The
//! session undoes the statement, waits asynchronously (killable) and runs the statement again
//! from its start, as after a row lock wait (`Session::execute_locked`).
//!
//! So that running again does not act twice, the calls that act or wait (`GET_LOCK`,
//! `RELEASE_LOCK`, `RELEASE_ALL_LOCKS`, `SLEEP`, `WAIT_FOR_TABLE_COMMIT`: `Func::may_wait`)
//! keep their results in call order: on the next run each call already made answers what it
//! answered the first time, and the call that waited answers how its wait ended. Results that
//! stream to the client as produced would be sent twice, so a query calling these functions is
//! not streamed.
//!
//! Bounds: one statement's results, cleared when it ends; at most one pending wait.
//!
//! Where it sits: in `quill-sql-context`, below the executor (whose functions record their
//! calls here) and the session (which makes the waits); the lock table is `txn::user_locks`.

use std::time::Instant;

use quill_storage::Value;

use quill_sql_types::error::{Result, SqlError, codes};

/// What a statement stopped to wait for.
#[derive(Debug)]
pub enum Pending {
    /// A `GET_LOCK` queued for a lock another connection holds.
    Lock(quill_txn::user_locks::Wait),
    /// `SLEEP`, until then.
    Sleep(Instant),
    /// `WAIT_FOR_TABLE_COMMIT`: a commit of the table past `after` (`commit_notify`).
    Commit {
        after: quill_log::Lsn,
        /// None: for ever.
        deadline: Option<Instant>,
        positions: tokio::sync::watch::Receiver<quill_log::Lsn>,
    },
}

/// The results of the calls that act, in call order, for one statement: each with its call
/// (function and arguments), so a run that calls otherwise (it read other rows) is told.
#[derive(Debug, Default)]
pub struct StatementCalls {
    results: Vec<(String, Value)>,
    next: usize,
    /// What the statement stopped to wait for.
    pub waiting: Option<Pending>,
    /// The call that stopped it, and the lock it waits for (a `GET_LOCK`).
    waiting_call: Option<String>,
    waiting_lock: Option<quill_txn::user_locks::LockName>,
    /// The user-level locks this statement's `GET_LOCK` calls took: given back when a run
    /// calls otherwise than the one before (the client never learns of them).
    pub taken: Vec<quill_txn::user_locks::LockName>,
}

impl StatementCalls {
    /// A new statement: nothing called yet.
    pub fn start_statement(&mut self) {
        self.results.clear();
        self.next = 0;
        self.waiting = None;
        self.waiting_call = None;
        self.waiting_lock = None;
        self.taken.clear();
    }

    /// The statement runs again from its start.
    pub fn restart(&mut self) {
        self.next = 0;
    }

    /// The next call's result when this run of the statement repeats an earlier one's;
    /// else `None`, and the caller acts and [`StatementCalls::record`]s (or waits).
    ///
    /// # Errors
    /// The call is not the one the earlier run made here: the statement read other rows (or
    /// took another branch) this time. Acting would double or skip what the earlier run did,
    /// so the statement fails (1105) and the client runs it again; the caller gives back the
    /// locks the statement took ([`StatementCalls::taken`]).
    pub fn replay(&mut self, call: &str) -> Result<Option<Value>> {
        let Some((made, v)) = self.results.get(self.next) else { return Ok(None) };
        if made != call {
            return Err(SqlError::new(
                codes::ER_UNKNOWN_ERROR,
                "The statement read other rows when it ran again after waiting in GET_LOCK, SLEEP or WAIT_FOR_TABLE_COMMIT; run it again",
            ));
        }
        self.next += 1;
        Ok(Some(v.clone()))
    }

    /// The result of the call just made.
    pub fn record(&mut self, call: String, v: Value) -> Value {
        self.results.push((call, v.clone()));
        self.next += 1;
        v
    }

    /// `call` stopped the statement to wait for `pending`.
    pub fn wait(&mut self, call: String, pending: Pending) {
        self.waiting_lock = match &pending {
            Pending::Lock(w) => Some(w.name.clone()),
            _ => None,
        };
        self.waiting = Some(pending);
        self.waiting_call = Some(call);
    }

    /// How the wait of the call that stopped the statement ended.
    pub fn record_wait(&mut self, v: Value) {
        let call = self.waiting_call.take().unwrap_or_default();
        if let Some(name) = self.waiting_lock.take()
            && v == Value::Int(1)
        {
            self.taken.push(name);
        }
        self.results.push((call, v));
        self.next += 1;
    }
}
