//! Functions that wait inside a statement: `GET_LOCK` waiting for a user-level lock
//! (`txn::user_locks`), `SLEEP`, and `WAIT_FOR_TABLE_COMMIT` (`commit_notify`). Expressions are
//! evaluated synchronously, and a session never blocks a runtime thread, so such a function
//! does not wait where it is called: it queues its request, notes it here
//! ([`StatementCalls::waiting`]) and fails the statement with `SqlError::function_wait`. The
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
//! Where it sits: in `sql`, below the session; the lock table is `txn::user_locks`.

use std::time::Instant;

use quill_storage::Value;

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

/// The results of the calls that act, in call order, for one statement.
#[derive(Debug, Default)]
pub struct StatementCalls {
    results: Vec<Value>,
    next: usize,
    /// What the statement stopped to wait for.
    pub waiting: Option<Pending>,
}

impl StatementCalls {
    /// A new statement: nothing called yet.
    pub fn start_statement(&mut self) {
        self.results.clear();
        self.next = 0;
        self.waiting = None;
    }

    /// The statement runs again from its start.
    pub fn restart(&mut self) {
        self.next = 0;
    }

    /// The next call's result when this run of the statement repeats an earlier one's;
    /// else `None`, and the caller acts and [`StatementCalls::record`]s.
    pub fn replay(&mut self) -> Option<Value> {
        let v = self.results.get(self.next).cloned();
        if v.is_some() {
            self.next += 1;
        }
        v
    }

    /// The result of the call just made (or of the wait it queued).
    pub fn record(&mut self, v: Value) -> Value {
        self.results.push(v.clone());
        self.next += 1;
        v
    }
}
