//! Whether the running statement must stop, and what it examined: KILL and
//! `max_execution_time` reach the executor through [`Interrupt`], which the session owns
//! ([`crate::session_info::SessionInfo::interrupt`]) and the executor checks at every row.
//!
//! Invariant: a check costs one atomic load, and the clock is read once every
//! [`INTERRUPT_CLOCK_ROWS`] rows.

use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};
use std::time::Instant;

use quill_sql_types::error::{Result, SqlError};

/// Rows the executor handles between two looks at the clock for `max_execution_time`.
pub const INTERRUPT_CLOCK_ROWS: u32 = 1024;

/// Whether the running statement must stop: KILL sets the flag (from another session), and
/// a SELECT under `max_execution_time` has a deadline. The executor calls
/// [`Interrupt::check`] for every row it reads; the flag is one atomic load, the clock is
/// read every [`INTERRUPT_CLOCK_ROWS`] rows.
///
/// The same per-row call counts the statement's rows examined, and the executor notes here
/// when it reads a table whole (both for the slow log: `Rows_examined`,
/// `log_queries_not_using_indexes`).
#[derive(Debug)]
pub struct Interrupt {
    killed: Arc<AtomicBool>,
    deadline: Cell<Option<Instant>>,
    rows: Cell<u32>,
    examined: Cell<u64>,
    full_scan: Cell<bool>,
}

impl Interrupt {
    #[must_use]
    pub fn new(killed: Arc<AtomicBool>) -> Interrupt {
        Interrupt { killed, deadline: Cell::new(None), rows: Cell::new(0), examined: Cell::new(0), full_scan: Cell::new(false) }
    }

    /// A statement starts: nothing examined yet, no deadline (a SELECT sets its own).
    pub fn start_statement(&self) {
        self.examined.set(0);
        self.full_scan.set(false);
        self.deadline.set(None);
    }

    /// The statement runs again from its start (after a lock wait): what it examined
    /// before is read again.
    pub fn restart_statement(&self) {
        self.examined.set(0);
        self.full_scan.set(false);
    }

    /// Rows the statement read so far (each time the executor looked at a row).
    #[must_use]
    pub fn examined(&self) -> u64 {
        self.examined.get()
    }

    /// The statement read a table whole, using no index.
    pub fn note_full_scan(&self) {
        self.full_scan.set(true);
    }

    #[must_use]
    pub fn full_scan(&self) -> bool {
        self.full_scan.get()
    }

    /// Whether a KILL is pending for the session.
    #[must_use]
    pub fn killed(&self) -> bool {
        self.killed.load(AtomicOrdering::Acquire)
    }

    /// The statement starting now must end by `deadline` (`None`: no limit).
    pub fn set_deadline(&self, deadline: Option<Instant>) {
        self.deadline.set(deadline);
    }

    /// # Errors
    /// 1317 after a KILL; 3024 past the deadline.
    pub fn check(&self) -> Result<()> {
        if self.killed.load(AtomicOrdering::Relaxed) {
            return Err(SqlError::query_interrupted());
        }
        let rows = self.rows.get().wrapping_add(1);
        self.rows.set(rows);
        self.examined.set(self.examined.get() + 1);
        if rows.is_multiple_of(INTERRUPT_CLOCK_ROWS)
            && let Some(deadline) = self.deadline.get()
            && Instant::now() >= deadline
        {
            return Err(SqlError::query_timeout());
        }
        Ok(())
    }
}
