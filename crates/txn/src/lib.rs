//! Transactions: identities, commit timestamps, read views and waiting for a
//! transaction that holds a row.
//!
//! The [`TxnManager`] hands out transaction ids and commit timestamps from one
//! counter each, remembers which transactions are active and which read
//! timestamps they hold (so storage can purge versions nobody can see), and lets
//! a writer that met [`quill_storage::WriteError::Locked`] wait until the holder
//! commits or rolls back.
//!
//! This is the first, coarse stage of concurrency control: a blocked statement
//! waits for the whole holding transaction to end and is then re-run from its
//! start (statement restart). Row lock queues, deadlock detection and gap locks
//! replace it in the transactions issue; the interface the SQL layer sees
//! (`begin`, `read_view`, `commit`, `end`, `wait_for`) stays.
//!
//! Invariants: commit timestamps strictly increase; a transaction's watch channel
//! flips to `true` exactly once, when it ends, and only after its versions were
//! committed or rolled back in storage.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use quill_storage::{ReadView, Timestamp, TxnId};
use tokio::sync::watch;

/// How a wait for another transaction ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitOutcome {
    /// The holder ended (or was never active): retry.
    Released,
    /// `innodb_lock_wait_timeout` passed first.
    TimedOut,
}

#[derive(Default)]
struct Active {
    /// Transaction -> channel that flips to true when it ends.
    ended: HashMap<TxnId, watch::Sender<bool>>,
    /// Read timestamps held by open read views, with a count each.
    read_views: BTreeMap<Timestamp, usize>,
    /// The wait-for graph: a waiting transaction -> the one it waits for. Each
    /// transaction waits for at most one other at a time, so this is a forest of
    /// chains unless a cycle (a deadlock) is about to close.
    waits_for: HashMap<TxnId, TxnId>,
}

/// Starting a wait would close a cycle in the wait-for graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadlock;

/// The transaction registry of one server.
pub struct TxnManager {
    next_txn: AtomicU64,
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
        TxnManager { next_txn: AtomicU64::new(1), last_commit_ts: AtomicU64::new(0), active: Mutex::new(Active::default()) }
    }

    /// Start a transaction.
    pub fn begin(&self) -> TxnId {
        let id = self.next_txn.fetch_add(1, Ordering::Relaxed);
        let (tx, _) = watch::channel(false);
        self.active.lock().ended.insert(id, tx);
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

    /// The timestamp of the newest commit. A reader that holds the storage lock
    /// while it reads may use it as an unregistered view: no purge can run then.
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

    /// Assign the next commit timestamp. The caller stamps its versions with it
    /// (under the storage lock, so readers see all of a commit or none) and then
    /// calls [`TxnManager::end`].
    pub fn next_commit_ts(&self) -> Timestamp {
        self.last_commit_ts.fetch_add(1, Ordering::AcqRel) + 1
    }

    /// The transaction has committed or rolled back: wake its waiters.
    pub fn end(&self, txn: TxnId) {
        if let Some(tx) = self.active.lock().ended.remove(&txn) {
            tx.send_replace(true);
        }
    }

    /// Subscribe to the end of `holder`; `None` if it already ended. Call this while
    /// still holding the storage lock under which the conflict was seen, then wait
    /// on the receiver after releasing it, so the end cannot be missed.
    #[must_use]
    pub fn watch(&self, holder: TxnId) -> Option<watch::Receiver<bool>> {
        self.active.lock().ended.get(&holder).map(watch::Sender::subscribe)
    }

    /// Wait for a transaction subscribed with [`TxnManager::watch`] to end,
    /// bounded by `timeout`.
    pub async fn wait_for(receiver: Option<watch::Receiver<bool>>, timeout: Duration) -> WaitOutcome {
        let Some(mut rx) = receiver else { return WaitOutcome::Released };
        match tokio::time::timeout(timeout, rx.wait_for(|ended| *ended)).await {
            Ok(_) => WaitOutcome::Released,
            Err(_) => WaitOutcome::TimedOut,
        }
    }

    /// Record that `waiter` is about to wait for `holder`.
    ///
    /// # Errors
    /// [`Deadlock`] if `holder` (transitively) waits for `waiter`; nothing is recorded then.
    pub fn start_wait(&self, waiter: TxnId, holder: TxnId) -> Result<(), Deadlock> {
        let mut active = self.active.lock();
        let mut next = holder;
        // Each step follows a distinct edge, so the walk ends within the map's size.
        for _ in 0..=active.waits_for.len() {
            if next == waiter {
                return Err(Deadlock);
            }
            match active.waits_for.get(&next) {
                Some(&n) => next = n,
                None => break,
            }
        }
        active.waits_for.insert(waiter, holder);
        Ok(())
    }

    /// The wait recorded by [`TxnManager::start_wait`] is over.
    pub fn end_wait(&self, waiter: TxnId) {
        self.active.lock().waits_for.remove(&waiter);
    }

    /// Number of transactions currently active.
    #[must_use]
    pub fn active_count(&self) -> usize {
        self.active.lock().ended.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn waiter_wakes_when_the_holder_ends() {
        let m = std::sync::Arc::new(TxnManager::new());
        let holder = m.begin();
        let rx = m.watch(holder);
        let m2 = m.clone();
        let waiter = tokio::spawn(async move { TxnManager::wait_for(rx, Duration::from_secs(5)).await });
        m2.end(holder);
        assert_eq!(waiter.await.unwrap(), WaitOutcome::Released);
        assert!(m.watch(holder).is_none());
    }

    #[tokio::test]
    async fn wait_times_out_while_the_holder_lives() {
        let m = TxnManager::new();
        let holder = m.begin();
        let out = TxnManager::wait_for(m.watch(holder), Duration::from_millis(20)).await;
        assert_eq!(out, WaitOutcome::TimedOut);
    }

    #[test]
    fn a_wait_that_closes_a_cycle_is_a_deadlock() {
        let m = TxnManager::new();
        let (a, b, c) = (m.begin(), m.begin(), m.begin());
        assert_eq!(m.start_wait(a, b), Ok(()));
        assert_eq!(m.start_wait(b, c), Ok(()));
        assert_eq!(m.start_wait(c, a), Err(Deadlock));
        m.end_wait(a);
        assert_eq!(m.start_wait(c, a), Ok(()));
    }

    #[test]
    fn purge_horizon_respects_open_views() {
        let m = TxnManager::new();
        let t = m.begin();
        let v = m.read_view(t, false);
        m.next_commit_ts();
        m.next_commit_ts();
        assert_eq!(m.purge_horizon(), v.read_ts);
        m.release_view(&v);
        assert_eq!(m.purge_horizon(), 2);
    }
}
