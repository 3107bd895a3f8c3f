//! Transactions: identities, commit timestamps, read views, the registry of open
//! transactions, and the row lock manager ([`locks`]).
//!
//! The [`TxnManager`] hands out transaction ids and commit timestamps from one counter
//! each, remembers which transactions are open (with what `INNODB_TRX` shows of them) and
//! which read timestamps their views hold, so storage can purge versions nobody can see.
//! Row locks, their queues, waits and deadlock detection are the [`LockManager`]'s, one
//! per server, reached as [`TxnManager::locks`].
//!
//! Invariants: commit timestamps strictly increase; a transaction is registered from
//! [`TxnManager::begin`] until [`TxnManager::end`], which comes after its versions were
//! committed or rolled back in storage and its locks released.

pub mod locks;
pub mod user_locks;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

pub use locks::{Acquire, LockManager, LockMode, WaitOutcome, WaitPolicy};
use parking_lot::Mutex;
use quill_storage::{ReadView, Timestamp, TxnId};

/// The isolation levels, as `transaction_isolation` spells them.
pub const ISOLATION_LEVELS: [&str; 4] = ["READ-UNCOMMITTED", "READ-COMMITTED", "REPEATABLE-READ", "SERIALIZABLE"];

/// The static name of an isolation level given as `transaction_isolation` spells it;
/// anything else is REPEATABLE READ, the default.
#[must_use]
pub fn isolation_level(name: &str) -> &'static str {
    ISOLATION_LEVELS.into_iter().find(|l| *l == name).unwrap_or("REPEATABLE-READ")
}

/// What `information_schema.INNODB_TRX` shows of an open transaction.
#[derive(Debug, Clone)]
pub struct TxnInfo {
    /// The connection (`trx_mysql_thread_id`); 0 for internal transactions.
    pub thread_id: u32,
    pub started: Instant,
    /// Wall-clock start, microseconds since the epoch (`trx_started`).
    pub started_unix_micros: i64,
    /// `READ-UNCOMMITTED`, `READ-COMMITTED`, `REPEATABLE-READ` or `SERIALIZABLE`.
    pub isolation: &'static str,
    pub read_only: bool,
}

#[derive(Default)]
struct Active {
    open: HashMap<TxnId, TxnInfo>,
    /// Read timestamps held by open read views, with a count each.
    read_views: BTreeMap<Timestamp, usize>,
}

/// The transaction registry of one server.
pub struct TxnManager {
    next_txn: AtomicU64,
    pub locks: LockManager,
    /// The timestamp of the newest commit.
    last_commit_ts: AtomicU64,
    active: Mutex<Active>,
}

impl Default for TxnManager {
    fn default() -> Self {
        Self::new()
    }
}

impl TxnManager {
    #[must_use]
    pub fn new() -> TxnManager {
        TxnManager { next_txn: AtomicU64::new(1), locks: LockManager::default(), last_commit_ts: AtomicU64::new(0), active: Mutex::new(Active::default()) }
    }

    /// Start a transaction for connection `thread_id` (0: internal).
    pub fn begin(&self, thread_id: u32, isolation: &'static str, read_only: bool) -> TxnId {
        let id = self.next_txn.fetch_add(1, Ordering::Relaxed);
        let started_unix_micros = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX));
        let info = TxnInfo { thread_id, started: Instant::now(), started_unix_micros, isolation, read_only };
        self.active.lock().open.insert(id, info);
        id
    }

    /// Take a read view for `txn` as of now, registering its timestamp so storage
    /// keeps the versions it sees. Release it with [`TxnManager::release_view`].
    pub fn read_view(&self, txn: TxnId, uncommitted: bool) -> ReadView {
        let mut active = self.active.lock();
        let read_ts = self.last_commit_ts.load(Ordering::Acquire);
        *active.read_views.entry(read_ts).or_insert(0) += 1;
        ReadView { txn, read_ts, uncommitted }
    }

    /// The timestamp of the newest published commit.
    #[must_use]
    pub fn last_commit_ts(&self) -> Timestamp {
        self.last_commit_ts.load(Ordering::Acquire)
    }

    /// Forget a read view taken with [`TxnManager::read_view`].
    pub fn release_view(&self, view: &ReadView) {
        let mut active = self.active.lock();
        if let Some(n) = active.read_views.get_mut(&view.read_ts) {
            *n -= 1;
            if *n == 0 {
                active.read_views.remove(&view.read_ts);
            }
        }
    }

    /// Versions committed at or before this timestamp that are shadowed by a newer
    /// committed version are invisible to every current and future reader.
    pub fn purge_horizon(&self) -> Timestamp {
        let active = self.active.lock();
        let newest = self.last_commit_ts.load(Ordering::Acquire);
        active.read_views.keys().next().copied().unwrap_or(newest).min(newest)
    }

    /// Assign and publish the next commit timestamp at once: for recovery, where no
    /// reader runs beside the writer.
    pub fn next_commit_ts(&self) -> Timestamp {
        self.last_commit_ts.fetch_add(1, Ordering::AcqRel) + 1
    }

    /// The timestamp the next commit takes. REQUIRES: the caller orders commits (holds the
    /// engine's commit-order lock) until it calls [`TxnManager::publish_commit`] with it;
    /// meanwhile it stamps its versions, which no view can see yet (every view's read
    /// timestamp is below it).
    #[must_use]
    pub fn commit_ts_to_assign(&self) -> Timestamp {
        self.last_commit_ts.load(Ordering::Acquire) + 1
    }

    /// Publish commit `ts`, whose versions are all stamped: views taken from now on see it.
    pub fn publish_commit(&self, ts: Timestamp) {
        let before = self.last_commit_ts.swap(ts, Ordering::AcqRel);
        assert_eq!(before + 1, ts, "commit timestamps are published in order");
    }

    /// The transaction has committed or rolled back: release its locks and forget it.
    pub fn end(&self, txn: TxnId) {
        self.locks.release_all(txn);
        self.active.lock().open.remove(&txn);
    }

    /// Every open transaction, oldest first.
    #[must_use]
    pub fn open_transactions(&self) -> Vec<(TxnId, TxnInfo)> {
        let mut out: Vec<(TxnId, TxnInfo)> = self.active.lock().open.iter().map(|(&id, i)| (id, i.clone())).collect();
        out.sort_by_key(|(id, _)| *id);
        out
    }

    /// The connection an open transaction belongs to (0: an internal one), if it is open.
    #[must_use]
    pub fn thread_of(&self, txn: TxnId) -> Option<u32> {
        self.active.lock().open.get(&txn).map(|i| i.thread_id)
    }

    /// The id the next transaction gets (InnoDB's `Trx id counter`).
    #[must_use]
    pub fn next_txn_id(&self) -> TxnId {
        self.next_txn.load(Ordering::Relaxed)
    }

    /// Number of transactions currently active.
    #[must_use]
    pub fn active_count(&self) -> usize {
        self.active.lock().open.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn purge_horizon_respects_open_views() {
        let m = TxnManager::new();
        let t = m.begin(0, "REPEATABLE-READ", false);
        let v = m.read_view(t, false);
        m.next_commit_ts();
        m.next_commit_ts();
        assert_eq!(m.purge_horizon(), v.read_ts);
        m.release_view(&v);
        assert_eq!(m.purge_horizon(), 2);
    }
}
