//! Commit notifications: `WAIT_FOR_TABLE_COMMIT(table, position, timeout)` waits, without
//! polling, until a transaction that wrote `table` has committed durably past `position`,
//! and answers that commit's position (`docs/user-locks.md`, "Commit notifications").
//!
//! A table's **position** is the log position (LSN) just past the commit record of the
//! newest transaction that wrote it, or, for a table no transaction wrote since the server
//! started, the log's position at start. Positions only grow, and a later commit of the table
//! always has a greater one (log order is commit order), so a consumer that passes the last
//! position it saw can never miss a commit: if one came in between, the call answers at once.
//!
//! The commit path publishes each transaction's tables under `Engine::commit_order`, once the
//! commit is visible and before it is durable ([`CommitNotify::published`]); a waiter wakes
//! then and waits on until the log has the position on disk (asking for a sync when
//! `innodb_flush_log_at_trx_commit` is 0 or 2), so what it then reads is there after a crash. Each table's position is a watch channel:
//! a waiter subscribes before it looks, so no wake-up is lost between looking and waiting.
//!
//! Bounds: one channel per table written or waited on since the server started (a dropped
//! table's stays, a few words, until restart); waiters are sessions, each with one wait.
//!
//! Where it sits: in `quill-sql-context` (the engine owns it), fed by the commit path (`session::commit`) that feeds it; the
//! session waits (`statement_waits`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use quill_log::Lsn;
use tokio::sync::watch;

/// The tables' commit positions.
#[derive(Debug, Default)]
pub struct CommitNotify {
    tables: Mutex<HashMap<u64, watch::Sender<Lsn>>>,
    /// The log's position when the server started: every table's position at least.
    floor: AtomicU64,
}

impl CommitNotify {
    /// The log is open at `lsn`: what a table no transaction wrote since is at (1 at least:
    /// 0 is the position of a consumer that has seen nothing).
    pub fn set_floor(&self, lsn: Lsn) {
        self.floor.store(lsn.max(1), Ordering::Release);
    }

    /// A transaction that wrote `tables` committed, its record ending at `end` (called in
    /// commit order).
    pub fn published(&self, tables: &[u64], end: Lsn) {
        let mut map = self.tables.lock();
        for table in tables {
            match map.get(table) {
                Some(sender) => {
                    sender.send_if_modified(|at| {
                        let newer = end > *at;
                        *at = (*at).max(end);
                        newer
                    });
                }
                None => {
                    map.insert(*table, watch::channel(end).0);
                }
            }
        }
    }

    /// `table`'s position now, and a receiver that sees every later one.
    pub fn subscribe(&self, table: u64) -> (Lsn, watch::Receiver<Lsn>) {
        let floor = self.floor.load(Ordering::Acquire);
        let mut map = self.tables.lock();
        let rx = map.entry(table).or_insert_with(|| watch::channel(floor).0).subscribe();
        let at = (*rx.borrow()).max(floor);
        (at, rx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_start_at_the_floor_and_grow_with_each_commit_of_the_table() {
        let n = CommitNotify::default();
        n.set_floor(100);
        let (at, mut rx) = n.subscribe(7);
        assert_eq!(at, 100);
        n.published(&[8], 150);
        assert!(!rx.has_changed().unwrap(), "another table's commit wakes nobody here");
        n.published(&[7, 8], 200);
        assert!(rx.has_changed().unwrap());
        assert_eq!(*rx.borrow_and_update(), 200);
        assert_eq!(n.subscribe(8).0, 200);
        assert_eq!(n.subscribe(9).0, 100);
    }
}
