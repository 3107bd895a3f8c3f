//! The row lock manager: record locks with a fair queue per row, gap (range) locks,
//! insert-intention checks, waits and deadlock detection.
//!
//! A *record lock* is held on one row, named by table id and encoded primary key, in
//! [`LockMode::Shared`] or [`LockMode::Exclusive`] mode. Each locked row has a queue of
//! requests in arrival order. A new request is granted at once only if no other
//! transaction's request in the queue, granted or waiting, conflicts with it; otherwise it
//! waits at the back. When locks are released, waiting requests are granted in queue order:
//! one is granted when it conflicts with no granted request and no request ahead of it
//! (so a stream of shared requests cannot starve an exclusive one). This is InnoDB's rule.
//!
//! A row a transaction inserts takes no request of its own: its uncommitted version is an
//! *implicit* lock, as InnoDB's ([`LockManager::insert_implicit`]), so a bulk insert records
//! nothing per row here. Another transaction's request on that key makes it explicit first
//! ([`LockManager::lock_written_record`]), and from then on it queues like any other.
//!
//! A *gap lock* covers a range of one index's key space (index 0 is the primary key,
//! `i + 1` the table's secondary index `i`), taken by a locking scan at REPEATABLE READ or
//! SERIALIZABLE over the range it read, widened to the neighbouring keys as InnoDB's
//! next-key locks are. Gap locks never conflict with each other and never wait; they only
//! make an *insert* of a key inside the range, by another transaction, wait until every
//! such holder has ended.
//!
//! A *record range* ([`LockManager::lock_range`]) is a gap lock over a range of the primary
//! key that also holds a shared record lock on every key in it: a locking scan of a whole
//! table takes one instead of one request per row. Its records are held lazily: another
//! transaction's request on a key in the range first makes the range's lock explicit there,
//! a granted request queued ahead of it, as an implicit lock is. A row another transaction
//! held or waited for when the range was taken is not covered until the scan locks it
//! explicitly ([`LockManager::needs_record_lock`] tells the scan which rows those are), so
//! two conflicting requests are never both granted.
//!
//! Waiting is cooperative: a request that cannot be granted stays queued and the caller
//! gets [`Acquire::Waiting`]; it then awaits [`LockManager::wait`], which returns when the
//! request was granted or when the timeout passed (the request is withdrawn then). Before a
//! request waits, the wait-for graph (derived from the queues, never stored apart from
//! them) is searched from it, breadth-first. If it leads back to the requester, one
//! transaction of the shortest such cycle (each of whose members the deadlock needs) is
//! the victim: the lightest by InnoDB's weight (rows modified plus locks held or
//! awaited, the request being made included, plus one per table it locks in), the
//! requester on a tie, as InnoDB chooses. A requester
//! victim gets [`Acquire::Deadlock`] and nothing is queued; another victim has its waiting
//! request withdrawn and its [`LockManager::wait`] returns [`WaitOutcome::Deadlock`].
//!
//! Invariants: a transaction waits for at most one lock at a time (a second request while
//! one waits withdraws the first); a granted request is never taken back until
//! [`LockManager::release_all`]; every waiting request belongs to the transaction whose
//! `waiting` names it. The manager sits below the SQL layer and knows nothing of tables
//! beyond their ids.

use smallvec::SmallVec;

/// The lock tables' maps: keyed by primary keys clients choose, so seeded per map (no
/// hash flooding), and fast (the default SipHash was a fifth of a bulk insert's time).
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
use std::ops::Bound;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use quill_storage::TxnId;
use tokio::sync::Notify;

/// Most transactions a deadlock search visits before it gives up and treats the request
/// as a deadlock (InnoDB does the same past its search limit).
pub const DEADLOCK_SEARCH_STEPS_MAX: usize = 10_000;

/// A record lock's mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockMode {
    /// `FOR SHARE`, SERIALIZABLE reads, duplicate-key checks.
    Shared,
    /// Writes and `FOR UPDATE`.
    Exclusive,
}

impl LockMode {
    fn conflicts(self, other: LockMode) -> bool {
        self == LockMode::Exclusive || other == LockMode::Exclusive
    }

    fn covers(self, wanted: LockMode) -> bool {
        self == LockMode::Exclusive || wanted == LockMode::Shared
    }

    /// As `performance_schema.data_locks.LOCK_MODE` spells it.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            LockMode::Shared => "S",
            LockMode::Exclusive => "X",
        }
    }
}

/// What to do when a lock cannot be granted at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitPolicy {
    /// Queue and wait (bounded by `innodb_lock_wait_timeout`).
    Wait,
    /// `NOWAIT`: fail at once.
    NoWait,
    /// `SKIP LOCKED`: leave the row out.
    SkipLocked,
}

/// The answer to a lock request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acquire {
    /// Held now, and not held before.
    Granted,
    /// Already held in a covering mode, or an upgrade of a lock already held.
    Held,
    /// Not granted and not queued (`NOWAIT` / `SKIP LOCKED`).
    Conflict,
    /// Queued: await [`LockManager::wait`].
    Waiting,
    /// Waiting would close a cycle; nothing was queued.
    Deadlock,
}

/// How a wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitOutcome {
    Granted,
    /// The timeout passed first; the request was withdrawn.
    TimedOut,
    /// Chosen as a deadlock victim while waiting; the request was withdrawn.
    Deadlock,
}

/// The lock a transaction waits for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wanted {
    Record {
        table: u64,
        key: Vec<u8>,
        mode: LockMode,
    },
    /// An insert of `key` into index `index`, held back by gap locks.
    Insert {
        table: u64,
        index: u32,
        key: Vec<u8>,
    },
}

/// A record's requests, granted first, in arrival order. Most records have one request (the
/// holder): it is kept inline, with no allocation of its own.
type Queue = SmallVec<[Request; 1]>;

#[derive(Debug)]
struct Request {
    txn: TxnId,
    mode: LockMode,
    granted: bool,
}

#[derive(Debug)]
struct Gap {
    txn: TxnId,
    /// Shown only for a plain gap (gap locks of either mode conflict with inserts alone); a
    /// record range holds its records in this mode.
    mode: LockMode,
    /// A record range ([`LockManager::lock_range`]): also a record lock in `mode` on every
    /// primary key in the range, made explicit on a key when another transaction asks for it.
    records: bool,
    index: u32,
    lo: Bound<Vec<u8>>,
    hi: Bound<Vec<u8>>,
}

impl Gap {
    /// The range's upper end, as lock tables show it (`None`: the end of the index).
    fn upper_key(&self) -> Option<Vec<u8>> {
        match &self.hi {
            Bound::Included(k) | Bound::Excluded(k) => Some(k.clone()),
            Bound::Unbounded => None,
        }
    }

    fn contains(&self, index: u32, key: &[u8]) -> bool {
        if index != self.index {
            return false;
        }
        let above = match &self.lo {
            Bound::Included(l) => key >= l.as_slice(),
            Bound::Excluded(l) => key > l.as_slice(),
            Bound::Unbounded => true,
        };
        let below = match &self.hi {
            Bound::Included(h) => key <= h.as_slice(),
            Bound::Excluded(h) => key < h.as_slice(),
            Bound::Unbounded => true,
        };
        above && below
    }
}

struct TxnLocks {
    /// Rows with a request of this transaction (granted, or the one it waits for).
    records: Vec<(u64, Vec<u8>)>,
    /// Tables where it holds gap locks.
    gap_tables: Vec<u64>,
    waiting: Option<(Wanted, Instant)>,
    wake: Arc<Notify>,
    /// Rows modified so far (for the deadlock victim's weight).
    modified: usize,
    /// Rows its record ranges covered when taken (`trx_rows_locked`, and its weight).
    range_rows: usize,
    /// Chosen as a deadlock victim; its wait ends with [`WaitOutcome::Deadlock`].
    victim: bool,
}

impl TxnLocks {
    fn new() -> TxnLocks {
        TxnLocks { records: Vec::new(), gap_tables: Vec::new(), waiting: None, wake: Arc::new(Notify::new()), modified: 0, range_rows: 0, victim: false }
    }
}

/// The queues of one table's locked rows, by encoded primary key.
type TableQueues = HashMap<Vec<u8>, Queue>;

#[derive(Default)]
struct State {
    /// By table, then key: a table with no queue has no entry, so a scan of it learns that
    /// nothing of it is queued without hashing a key.
    queues: HashMap<u64, TableQueues>,
    gaps: HashMap<u64, Vec<Gap>>,
    txns: HashMap<TxnId, TxnLocks>,
}

/// Counters for SHOW GLOBAL STATUS (`Innodb_row_lock_*`).
#[derive(Default)]
pub struct LockStats {
    /// Waits started (`Innodb_row_lock_waits`).
    pub waits: AtomicU64,
    /// Total time waited, in microseconds (`Innodb_row_lock_time`, shown in ms).
    pub wait_micros: AtomicU64,
    /// Longest wait, in microseconds (`Innodb_row_lock_time_max`).
    pub max_wait_micros: AtomicU64,
    /// Waits in progress (`Innodb_row_lock_current_waits`).
    pub current_waits: AtomicU64,
    /// Deadlocks found (`Innodb_deadlocks`).
    pub deadlocks: AtomicU64,
    /// Implicit locks of inserted rows made explicit by another transaction's request.
    pub implicit_converted: AtomicU64,
}

/// One lock as `performance_schema.data_locks` shows it.
#[derive(Debug, Clone)]
pub struct LockInfo {
    pub txn: TxnId,
    pub table: u64,
    /// Index 0 is the primary key.
    pub index: u32,
    /// `X`, `S`, `X,REC_NOT_GAP`, `X,GAP`, `X,INSERT_INTENTION`.
    pub mode: String,
    pub granted: bool,
    /// The primary key (record locks), or the range's upper end (gap locks; `None` for the
    /// end of the table).
    pub key: Option<Vec<u8>>,
}

/// One edge of the wait-for graph, as `performance_schema.data_lock_waits` shows it.
#[derive(Debug, Clone)]
pub struct WaitInfo {
    pub waiter: TxnId,
    pub blocker: TxnId,
    pub wanted: Wanted,
    /// The waiter's request as [`LockManager::locks`] shows it: index and key.
    pub requesting: (u32, Option<Vec<u8>>),
    /// The blocker's lock: on the same row for a record wait; for an insert, the gap
    /// lock's index and upper end (`None`: the end of the index).
    pub blocking: (u32, Option<Vec<u8>>),
}

/// One transaction of a deadlock, as found: the lock it waited for and those it held that
/// the others waited for (`SHOW ENGINE INNODB STATUS`, "LATEST DETECTED DEADLOCK").
#[derive(Debug, Clone)]
pub struct DeadlockMember {
    pub txn: TxnId,
    pub waiting: LockInfo,
    pub holds: Vec<LockInfo>,
}

/// The last deadlock found: its transactions (the requester that closed the cycle first)
/// and the one rolled back. A search that went past [`DEADLOCK_SEARCH_STEPS_MAX`] has the
/// requester alone, `too_deep`.
#[derive(Debug, Clone)]
pub struct DeadlockRecord {
    pub at: std::time::SystemTime,
    pub members: Vec<DeadlockMember>,
    pub victim: TxnId,
    pub too_deep: bool,
}

/// The lock manager of one server.
#[derive(Default)]
pub struct LockManager {
    state: Mutex<State>,
    pub stats: LockStats,
    /// The last deadlock found, until its victim's session describes it
    /// ([`LockManager::take_deadlock`]).
    latest_deadlock: Mutex<Option<DeadlockRecord>>,
}

impl LockManager {
    /// Ask for a record lock on `key` of `table`, a key no transaction holds implicitly.
    pub fn lock_record(&self, txn: TxnId, table: u64, key: &[u8], mode: LockMode, policy: WaitPolicy) -> Acquire {
        self.lock_written_record(txn, table, key, mode, policy, || None)
    }

    /// Ask for a record lock on `key` of `table`, where `writer` names the transaction whose
    /// uncommitted version is the newest at `key`, if any. A writer other than `txn` with no
    /// request on `key` holds an *implicit* lock there (its insert took none, see
    /// [`LockManager::insert_implicit`]): it is made explicit first, an exclusive lock
    /// granted to the writer, and the request queues behind it. `writer` is called under the
    /// manager's mutex: a writer that ends stamps or removes its versions before
    /// [`LockManager::release_all`], which waits for that mutex, so a lock made explicit for
    /// it is always released.
    pub fn lock_written_record(
        &self,
        txn: TxnId,
        table: u64,
        key: &[u8],
        mode: LockMode,
        policy: WaitPolicy,
        writer: impl FnOnce() -> Option<TxnId>,
    ) -> Acquire {
        let mut guard = self.state.lock();
        let st = &mut *guard;
        if let Some(owner) = writer()
            && owner != txn
        {
            let queue = st.queue_entry(table, key);
            if !queue.iter().any(|r| r.txn == owner) {
                debug_assert!(queue.iter().all(|r| !r.granted || !r.mode.conflicts(LockMode::Exclusive)), "an implicit lock beside a granted one");
                queue.insert(0, Request { txn: owner, mode: LockMode::Exclusive, granted: true });
                st.txns.entry(owner).or_insert_with(TxnLocks::new).records.push((table, key.to_vec()));
                self.stats.implicit_converted.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.withdraw_other_wait(st, txn, |w| matches!(w, Wanted::Record { table: t, key: k, .. } if *t == table && k.as_slice() == key));
        st.materialize_ranges(txn, table, key);
        let queue = st.queue_entry(table, key);
        let mut held = None;
        let mut conflict = false;
        for r in queue.iter() {
            if r.txn == txn {
                if r.granted {
                    held = Some(r.mode);
                } else {
                    // Re-asked while still waiting (a statement re-run before its grant).
                    return Acquire::Waiting;
                }
            } else if r.mode.conflicts(mode) {
                conflict = true;
            }
        }
        if held.is_some_and(|h| h.covers(mode)) {
            return Acquire::Held;
        }
        let first = held.is_none();
        if !conflict {
            match queue.iter_mut().find(|r| r.txn == txn) {
                Some(r) => r.mode = mode,
                None => queue.push(Request { txn, mode, granted: true }),
            }
            if !first {
                return Acquire::Held;
            }
            st.txns.entry(txn).or_insert_with(TxnLocks::new).records.push((table, key.to_vec()));
            return Acquire::Granted;
        }
        if policy != WaitPolicy::Wait {
            return Acquire::Conflict;
        }
        queue.push(Request { txn, mode, granted: false });
        let wanted = Wanted::Record { table, key: key.to_vec(), mode };
        if first {
            st.txns.entry(txn).or_insert_with(TxnLocks::new).records.push((table, key.to_vec()));
        }
        if self.resolve_deadlock(st, txn, &wanted) {
            let queue = st.queue_mut(table, key).expect("queued above");
            let pos = queue.iter().rposition(|r| r.txn == txn && !r.granted).expect("queued above");
            queue.remove(pos);
            if queue.is_empty() {
                st.remove_queue(table, key);
            }
            if first && let Some(t) = st.txns.get_mut(&txn) {
                t.records.retain(|r| r.0 != table || r.1 != key);
            }
            return Acquire::Deadlock;
        }
        // Another victim's withdrawal may have granted the request already.
        if !st.queue(table, key).is_some_and(|q| q.iter().any(|r| r.txn == txn && !r.granted)) {
            return Acquire::Granted;
        }
        let t = st.txns.entry(txn).or_insert_with(TxnLocks::new);
        t.waiting = Some((wanted, Instant::now()));
        self.stats.waits.fetch_add(1, Ordering::Relaxed);
        self.stats.current_waits.fetch_add(1, Ordering::Relaxed);
        Acquire::Waiting
    }

    /// Run `write`, the insert of a new row at `key` of `table`, under an *implicit* lock
    /// (InnoDB's): no lock is recorded, the inserted row's uncommitted version is the lock,
    /// and a later request on `key` by another transaction makes it explicit first (see
    /// [`LockManager::lock_written_record`]). `None`, with `write` not run, when some
    /// transaction has a request on `key`: the caller then locks explicitly. `write` runs
    /// under the manager's mutex, so no request on `key` can be granted between the look
    /// and the write; it must be short and must not call the manager.
    pub fn insert_implicit<R>(&self, table: u64, key: &[u8], write: impl FnOnce() -> R) -> Option<R> {
        let st = self.state.lock();
        if st.queue(table, key).is_some() {
            return None;
        }
        Some(write())
    }

    /// Take a gap lock on `(lo, hi)` of index `index` of `table`. Never waits; `mode` is
    /// only shown (`data_locks`).
    pub fn lock_gap(&self, txn: TxnId, table: u64, index: u32, mode: LockMode, lo: Bound<Vec<u8>>, hi: Bound<Vec<u8>>) {
        self.add_gap(table, Gap { txn, mode, index, records: false, lo, hi }, 0);
    }

    /// Take a *record range* on `(lo, hi)` of `table`'s primary key: a gap lock over the
    /// range that also holds a record lock in `mode` (shared only) on every key in it,
    /// `rows` of them now. One entry stands for a locking scan's next-key locks on every
    /// row it reads, so a scan of a million rows records one lock, not a million (InnoDB
    /// keeps a bit per record on a page for the same reason).
    ///
    /// The records are held lazily: another transaction's request on a key in the range
    /// first makes this one explicit there, a granted request queued ahead of it
    /// ([`LockManager::lock_written_record`]), so it waits as it would behind a record lock.
    /// A row another transaction already held, or waited for, when the range was taken is
    /// not covered until the scan locks it explicitly: the scan asks
    /// [`LockManager::needs_record_lock`] for each row it reads and takes those with
    /// [`LockManager::lock_written_record`]. Never waits itself.
    pub fn lock_range(&self, txn: TxnId, table: u64, lo: Bound<Vec<u8>>, hi: Bound<Vec<u8>>, rows: usize) {
        self.add_gap(table, Gap { txn, mode: LockMode::Shared, index: 0, records: true, lo, hi }, rows);
    }

    /// Record `gap` of `table` (a record range covering `rows` rows). The same range taken
    /// again by the same transaction is kept once, in the stronger of its forms.
    fn add_gap(&self, table: u64, gap: Gap, rows: usize) {
        let mut st = self.state.lock();
        let txn = gap.txn;
        let gaps = st.gaps.entry(table).or_default();
        match gaps.iter_mut().find(|g| g.txn == txn && g.index == gap.index && g.lo == gap.lo && g.hi == gap.hi) {
            Some(g) if gap.records && !g.records => {
                g.records = true;
                g.mode = gap.mode;
            }
            Some(g) if !g.records && gap.mode == LockMode::Exclusive => g.mode = gap.mode,
            Some(_) => return,
            None => gaps.push(gap),
        }
        let t = st.txns.entry(txn).or_insert_with(TxnLocks::new);
        t.range_rows += rows;
        if !t.gap_tables.contains(&table) {
            t.gap_tables.push(table);
        }
    }

    /// Whether a scan holding a record range over `key` of `table` (see
    /// [`LockManager::lock_range`]) must still lock the row explicitly: another transaction
    /// has a request on it, granted or waiting. A row another transaction holds implicitly
    /// (its uncommitted version) needs it too; the scan sees that in the row itself.
    #[must_use]
    pub fn needs_record_lock(&self, txn: TxnId, table: u64, key: &[u8]) -> bool {
        let st = self.state.lock();
        st.queue(table, key).is_some_and(|q| q.iter().any(|r| r.txn != txn))
    }

    /// An insert of `key` into index `index` of `table`: granted unless another
    /// transaction holds a gap lock covering it.
    pub fn check_insert(&self, txn: TxnId, table: u64, index: u32, key: &[u8]) -> Acquire {
        let mut st = self.state.lock();
        let same = |w: &Wanted| matches!(w, Wanted::Insert { table: t, index: i, key: k } if *t == table && *i == index && k.as_slice() == key);
        if st.txns.get(&txn).is_some_and(|t| t.waiting.as_ref().is_some_and(|(w, _)| same(w))) {
            return Acquire::Waiting;
        }
        self.withdraw_other_wait(&mut st, txn, |_| false);
        let Some(gaps) = st.gaps.get(&table) else { return Acquire::Granted };
        if !gaps.iter().any(|g| g.txn != txn && g.contains(index, key)) {
            return Acquire::Granted;
        }
        let wanted = Wanted::Insert { table, index, key: key.to_vec() };
        if self.resolve_deadlock(&mut st, txn, &wanted) {
            return Acquire::Deadlock;
        }
        if st.blockers(txn, &wanted).is_empty() {
            return Acquire::Granted;
        }
        st.txns.entry(txn).or_insert_with(TxnLocks::new).waiting = Some((wanted, Instant::now()));
        self.stats.waits.fetch_add(1, Ordering::Relaxed);
        self.stats.current_waits.fetch_add(1, Ordering::Relaxed);
        Acquire::Waiting
    }

    /// Whether any transaction holds a gap lock on `table` (an insert that finds none need
    /// not compute its index entries).
    #[must_use]
    pub fn has_gaps(&self, table: u64) -> bool {
        self.state.lock().gaps.contains_key(&table)
    }

    /// Wait until `txn`'s queued request is granted, at most `timeout`. On timeout the
    /// request is withdrawn.
    pub async fn wait(&self, txn: TxnId, timeout: Duration) -> WaitOutcome {
        let deadline = tokio::time::Instant::now() + timeout;
        let Some(wake) = self.state.lock().txns.get(&txn).map(|t| t.wake.clone()) else { return WaitOutcome::Granted };
        loop {
            match self.wait_state(txn) {
                Some(WaitOutcome::Deadlock) => return WaitOutcome::Deadlock,
                Some(_) => {}
                None => return WaitOutcome::Granted,
            }
            if tokio::time::timeout_at(deadline, wake.notified()).await.is_err() {
                return if self.cancel_wait(txn) {
                    WaitOutcome::TimedOut
                } else if self.wait_state(txn) == Some(WaitOutcome::Deadlock) {
                    WaitOutcome::Deadlock
                } else {
                    WaitOutcome::Granted
                };
            }
        }
    }

    /// `None`: not waiting; `Some(Deadlock)`: chosen as a victim; `Some(TimedOut)`: waiting.
    fn wait_state(&self, txn: TxnId) -> Option<WaitOutcome> {
        let st = self.state.lock();
        let t = st.txns.get(&txn)?;
        if t.victim { Some(WaitOutcome::Deadlock) } else { t.waiting.as_ref().map(|_| WaitOutcome::TimedOut) }
    }

    /// Whether `txn` was chosen as a deadlock victim (and must roll back).
    #[must_use]
    pub fn is_victim(&self, txn: TxnId) -> bool {
        self.state.lock().txns.get(&txn).is_some_and(|t| t.victim)
    }

    /// Count `rows` more rows modified by `txn` (its weight as a deadlock victim).
    pub fn add_modified(&self, txn: TxnId, rows: usize) {
        if rows > 0 {
            self.state.lock().txns.entry(txn).or_insert_with(TxnLocks::new).modified += rows;
        }
    }

    /// `txn` is about to wait for `wanted`: if that closes a cycle, choose the victim. Returns
    /// whether the requester itself is the victim (then it must not wait); another victim has
    /// its request withdrawn and is woken.
    fn resolve_deadlock(&self, st: &mut State, txn: TxnId, wanted: &Wanted) -> bool {
        // Breaking one cycle may leave another through the requester: search until none.
        while let Some(cycle) = st.find_cycle(txn, wanted) {
            self.stats.deadlocks.fetch_add(1, Ordering::Relaxed);
            let weight = |t: TxnId| st.weight(t);
            let mut victim = txn;
            for &other in &cycle {
                if weight(other) < weight(victim) {
                    victim = other;
                }
            }
            *self.latest_deadlock.lock() = Some(st.deadlock_record(txn, wanted, &cycle, victim));
            if victim == txn {
                return true;
            }
            self.make_victim(st, victim);
        }
        false
    }

    /// Withdraw `victim`'s waiting request and wake it to learn it was a deadlock victim.
    fn make_victim(&self, st: &mut State, victim: TxnId) {
        self.withdraw(st, victim);
        if let Some(t) = st.txns.get_mut(&victim) {
            t.victim = true;
            t.wake.notify_one();
        }
    }

    /// Whether `txn` has a request waiting.
    #[must_use]
    pub fn is_waiting(&self, txn: TxnId) -> bool {
        self.state.lock().txns.get(&txn).is_some_and(|t| t.waiting.is_some())
    }

    /// A transaction waits for one lock at a time: a new request while another one waits
    /// (which the session never makes) withdraws the old one rather than leave it queued
    /// without an owner. `same` tells the request being made again, which is kept.
    fn withdraw_other_wait(&self, st: &mut State, txn: TxnId, same: impl Fn(&Wanted) -> bool) {
        let stale = st.txns.get(&txn).and_then(|t| t.waiting.as_ref()).is_some_and(|(w, _)| !same(w));
        if stale {
            debug_assert!(false, "transaction {txn} asked for a second lock while waiting");
            self.withdraw(st, txn);
        }
    }

    /// Withdraw `txn`'s waiting request (timeout, KILL). Returns whether one was waiting.
    pub fn cancel_wait(&self, txn: TxnId) -> bool {
        let mut guard = self.state.lock();
        self.withdraw(&mut guard, txn)
    }

    fn withdraw(&self, st: &mut State, txn: TxnId) -> bool {
        let Some(t) = st.txns.get_mut(&txn) else { return false };
        let Some((wanted, since)) = t.waiting.take() else { return false };
        self.end_wait_stats(since);
        if let Wanted::Record { table, key, .. } = wanted {
            let qk = (table, key);
            if let Some(queue) = st.queue_mut(qk.0, &qk.1) {
                if let Some(pos) = queue.iter().position(|r| r.txn == txn && !r.granted) {
                    queue.remove(pos);
                }
                let held = queue.iter().any(|r| r.txn == txn);
                if !held && let Some(t) = st.txns.get_mut(&txn) {
                    t.records.retain(|r| *r != qk);
                }
                self.grant_waiters(st, &qk);
            }
        }
        true
    }

    /// Release `txn`'s lock on one row before the transaction ends: READ COMMITTED lets go of
    /// rows a locking scan read but did not return, as InnoDB does. Nothing if it waits there.
    pub fn unlock_record(&self, txn: TxnId, table: u64, key: &[u8]) {
        let mut guard = self.state.lock();
        let st = &mut *guard;
        let qk = (table, key.to_vec());
        let Some(queue) = st.queue_mut(table, key) else { return };
        if queue.iter().any(|r| r.txn == txn && !r.granted) {
            return;
        }
        queue.retain(|r| r.txn != txn);
        if let Some(t) = st.txns.get_mut(&txn) {
            t.records.retain(|r| *r != qk);
        }
        self.grant_waiters(st, &qk);
    }

    /// Release every lock of `txn` (commit or rollback) and grant what can be granted.
    pub fn release_all(&self, txn: TxnId) {
        let mut guard = self.state.lock();
        let st = &mut *guard;
        let Some(t) = st.txns.remove(&txn) else { return };
        if let Some((_, since)) = t.waiting {
            self.end_wait_stats(since);
        }
        for qk in &t.records {
            if let Some(queue) = st.queue_mut(qk.0, &qk.1) {
                queue.retain(|r| r.txn != txn);
                self.grant_waiters(st, qk);
            }
        }
        for table in &t.gap_tables {
            if let Some(gaps) = st.gaps.get_mut(table) {
                gaps.retain(|g| g.txn != txn);
                if gaps.is_empty() {
                    st.gaps.remove(table);
                }
            }
            self.grant_inserts(st, *table);
        }
    }

    /// Grant the waiting requests of one queue that no longer conflict, in order.
    fn grant_waiters(&self, st: &mut State, qk: &(u64, Vec<u8>)) {
        // The field itself, not `State::queue_mut`: `st.txns` is borrowed beside it below.
        let Some(queue) = st.queues.get_mut(&qk.0).and_then(|q| q.get_mut(&qk.1)) else { return };
        if queue.is_empty() {
            st.remove_queue(qk.0, &qk.1);
            return;
        }
        let mut granted_now = Vec::new();
        for i in 0..queue.len() {
            if queue[i].granted {
                continue;
            }
            let (txn, mode) = (queue[i].txn, queue[i].mode);
            let blocked = queue.iter().enumerate().any(|(j, r)| r.txn != txn && (r.granted || j < i) && r.mode.conflicts(mode));
            if !blocked {
                granted_now.push(i);
            }
        }
        for &i in &granted_now {
            let txn = queue[i].txn;
            // An upgrade merges into the transaction's granted request.
            if let Some(j) = queue.iter().position(|r| r.txn == txn && r.granted) {
                queue[j].mode = LockMode::Exclusive;
                queue[i].granted = true;
                queue[i].txn = TxnId::MAX;
            } else {
                queue[i].granted = true;
            }
            if let Some(t) = st.txns.get_mut(&txn)
                && let Some((_, since)) = t.waiting.take()
            {
                self.end_wait_stats(since);
                t.wake.notify_one();
            }
        }
        queue.retain(|r| r.txn != TxnId::MAX);
        // No new cycle can follow: each request still waiting here already waited for every
        // request granted now (they were ahead of it, or granted), and a transaction granted
        // now waits for nothing, so no cycle passes through it. (Searching again from every
        // waiter made each release cost the square of the queue's length: 4 ms a release
        // with 120 waiters on one row.) Debug builds check it.
        #[cfg(debug_assertions)]
        if let Some(queue) = st.queue(qk.0, &qk.1) {
            for r in queue.iter().filter(|r| !r.granted) {
                if let Some((wanted, _)) = st.txns.get(&r.txn).and_then(|t| t.waiting.as_ref()) {
                    debug_assert!(st.find_cycle(r.txn, wanted).is_none_or(|c| c.is_empty()), "a grant closed a wait cycle");
                }
            }
        }
    }

    /// Wake inserts into `table` that no gap lock holds back any more.
    fn grant_inserts(&self, st: &mut State, table: u64) {
        let gaps = st.gaps.get(&table);
        for (&txn, t) in &mut st.txns {
            let Some((Wanted::Insert { table: wt, index, key }, since)) = &t.waiting else { continue };
            if *wt != table || gaps.is_some_and(|g| g.iter().any(|g| g.txn != txn && g.contains(*index, key))) {
                continue;
            }
            self.end_wait_stats(*since);
            t.waiting = None;
            t.wake.notify_one();
        }
    }

    fn end_wait_stats(&self, since: Instant) {
        let us = u64::try_from(since.elapsed().as_micros()).unwrap_or(u64::MAX);
        self.stats.wait_micros.fetch_add(us, Ordering::Relaxed);
        self.stats.max_wait_micros.fetch_max(us, Ordering::Relaxed);
        self.stats.current_waits.fetch_sub(1, Ordering::Relaxed);
    }

    /// Every lock held or awaited, for `performance_schema.data_locks`.
    #[must_use]
    pub fn locks(&self) -> Vec<LockInfo> {
        self.state.lock().lock_list()
    }

    /// The deadlock whose victim is `victim`, taken (its session describes it while the other
    /// transactions still wait).
    pub fn take_deadlock(&self, victim: TxnId) -> Option<DeadlockRecord> {
        let mut latest = self.latest_deadlock.lock();
        if latest.as_ref().is_some_and(|d| d.victim == victim) { latest.take() } else { None }
    }
}

impl State {
    /// Every lock held or awaited (see [`LockManager::locks`]).
    fn lock_list(&self) -> Vec<LockInfo> {
        let st = self;
        let mut out = Vec::new();
        for (table, queues) in &st.queues {
            for (key, queue) in queues {
                for r in queue {
                    let mode = if r.granted { format!("{},REC_NOT_GAP", r.mode.name()) } else { r.mode.name().to_owned() };
                    out.push(LockInfo { txn: r.txn, table: *table, index: 0, mode, granted: r.granted, key: Some(key.clone()) });
                }
            }
        }
        for (table, gaps) in &st.gaps {
            for g in gaps {
                // A record range is a next-key lock over every row of its range: InnoDB's
                // plain `S` / `X` mode, shown on the range's upper end.
                let mode = if g.records { g.mode.name().to_owned() } else { format!("{},GAP", g.mode.name()) };
                out.push(LockInfo { txn: g.txn, table: *table, index: g.index, mode, granted: true, key: g.upper_key() });
            }
        }
        for (&txn, t) in &st.txns {
            if let Some((wanted @ Wanted::Insert { table, index, .. }, _)) = &t.waiting {
                let key = st.blocking_gap(txn, None, wanted).and_then(Gap::upper_key);
                out.push(LockInfo { txn, table: *table, index: *index, mode: "X,INSERT_INTENTION".into(), granted: false, key });
            }
        }
        out.sort_by(|a, b| (a.txn, a.table, a.index, &a.key).cmp(&(b.txn, b.table, b.index, &b.key)));
        out
    }

    /// A deadlock's record: each member's waiting request (the requester's is `wanted`, not
    /// queued yet) and the locks it holds where another member waits.
    fn deadlock_record(&self, txn: TxnId, wanted: &Wanted, cycle: &[TxnId], victim: TxnId) -> DeadlockRecord {
        let all = self.lock_list();
        let waiting_of = |m: TxnId| if m == txn { Some(wanted.clone()) } else { self.txns.get(&m).and_then(|t| t.waiting.as_ref()).map(|(w, _)| w.clone()) };
        let members: Vec<TxnId> = std::iter::once(txn).chain(cycle.iter().copied()).collect();
        let wants: Vec<(TxnId, Wanted)> = members.iter().filter_map(|&m| waiting_of(m).map(|w| (m, w))).collect();
        let request = |m: TxnId, w: &Wanted| match w {
            Wanted::Record { table, key, mode } => {
                LockInfo { txn: m, table: *table, index: 0, mode: mode.name().to_owned(), granted: false, key: Some(key.clone()) }
            }
            Wanted::Insert { table, index, .. } => LockInfo {
                txn: m,
                table: *table,
                index: *index,
                mode: "X,INSERT_INTENTION".into(),
                granted: false,
                key: self.blocking_gap(m, None, w).and_then(Gap::upper_key),
            },
        };
        let wanted_here = |l: &LockInfo, by: TxnId| {
            wants.iter().any(|(m, w)| {
                *m != by
                    && match w {
                        Wanted::Record { table, key, .. } => l.table == *table && l.index == 0 && l.key.as_deref() == Some(key.as_slice()),
                        Wanted::Insert { table, index, .. } => l.table == *table && l.index == *index && !l.mode.ends_with("REC_NOT_GAP"),
                    }
            })
        };
        DeadlockRecord {
            at: std::time::SystemTime::now(),
            members: wants
                .iter()
                .map(|(m, w)| DeadlockMember {
                    txn: *m,
                    waiting: request(*m, w),
                    holds: all.iter().filter(|l| l.txn == *m && l.granted && wanted_here(l, *m)).cloned().collect(),
                })
                .collect(),
            victim,
            too_deep: cycle.is_empty(),
        }
    }
}

impl LockManager {
    /// Every wait-for edge, for `performance_schema.data_lock_waits`.
    #[must_use]
    pub fn waits(&self) -> Vec<WaitInfo> {
        let st = self.state.lock();
        let mut out = Vec::new();
        for (&txn, t) in &st.txns {
            if let Some((wanted, _)) = &t.waiting {
                for blocker in st.blockers(txn, wanted) {
                    let (requesting, blocking) = match wanted {
                        Wanted::Record { key, .. } => ((0, Some(key.clone())), (0, Some(key.clone()))),
                        // An insert intention is shown on the gap's upper end, as InnoDB shows
                        // it on the record after the gap.
                        Wanted::Insert { index, .. } => (
                            (*index, st.blocking_gap(txn, None, wanted).and_then(Gap::upper_key)),
                            (*index, st.blocking_gap(txn, Some(blocker), wanted).and_then(Gap::upper_key)),
                        ),
                    };
                    out.push(WaitInfo { waiter: txn, blocker, wanted: wanted.clone(), requesting, blocking });
                }
            }
        }
        out.sort_by_key(|w| (w.waiter, w.blocker));
        out
    }

    /// The transactions `txn`'s waiting request waits for (none when it does not wait):
    /// what the slow log names as its blocker.
    #[must_use]
    pub fn blockers_of(&self, txn: TxnId) -> Vec<TxnId> {
        let st = self.state.lock();
        st.txns.get(&txn).and_then(|t| t.waiting.as_ref()).map_or_else(Vec::new, |(wanted, _)| st.blockers(txn, wanted))
    }

    /// What `txn` waits for and since when (`INNODB_TRX`).
    #[must_use]
    pub fn waiting_for(&self, txn: TxnId) -> Option<(Wanted, Instant)> {
        self.state.lock().txns.get(&txn).and_then(|t| t.waiting.clone())
    }

    /// Rows `txn` holds or awaits a lock on, and rows it modified (`INNODB_TRX`'s
    /// `trx_rows_locked` and `trx_rows_modified`).
    #[must_use]
    pub fn txn_counts(&self, txn: TxnId) -> (usize, usize) {
        self.state.lock().txns.get(&txn).map_or((0, 0), |t| (t.records.len() + t.range_rows, t.modified))
    }
}

impl State {
    fn queue(&self, table: u64, key: &[u8]) -> Option<&Queue> {
        self.queues.get(&table)?.get(key)
    }

    fn queue_mut(&mut self, table: u64, key: &[u8]) -> Option<&mut Queue> {
        self.queues.get_mut(&table)?.get_mut(key)
    }

    /// The queue of `key`, created empty if absent.
    fn queue_entry(&mut self, table: u64, key: &[u8]) -> &mut Queue {
        let queues = self.queues.entry(table).or_default();
        if !queues.contains_key(key) {
            queues.insert(key.to_vec(), Queue::new());
        }
        queues.get_mut(key).expect("inserted above")
    }

    fn remove_queue(&mut self, table: u64, key: &[u8]) {
        if let Some(queues) = self.queues.get_mut(&table) {
            queues.remove(key);
            if queues.is_empty() {
                self.queues.remove(&table);
            }
        }
    }

    /// Make the record ranges of other transactions that cover `key` of `table` explicit on
    /// it (see [`LockManager::lock_range`]): each becomes a granted request of its holder,
    /// unless the holder has a request there already or another transaction holds the row
    /// in a conflicting mode (then the holder's scan meets that holder on its own way).
    fn materialize_ranges(&mut self, txn: TxnId, table: u64, key: &[u8]) {
        let Some(gaps) = self.gaps.get(&table) else { return };
        let holders: SmallVec<[(TxnId, LockMode); 2]> =
            gaps.iter().filter(|g| g.records && g.txn != txn && g.contains(0, key)).map(|g| (g.txn, g.mode)).collect();
        for (holder, mode) in holders {
            if self.queue(table, key).is_some_and(|q| q.iter().any(|r| r.txn == holder || (r.granted && r.mode.conflicts(mode)))) {
                continue;
            }
            self.queue_entry(table, key).insert(0, Request { txn: holder, mode, granted: true });
            self.txns.entry(holder).or_insert_with(TxnLocks::new).records.push((table, key.to_vec()));
        }
    }

    /// InnoDB's weight of a transaction (`trx_weight_ge`): rows modified plus the locks it
    /// holds or awaits. As InnoDB counts lock structures: each request in a row's queue (a
    /// granted shared lock and an awaited exclusive one on the same row are two), and per
    /// table its intention locks (IS for shared requests, IX for exclusive ones or gaps).
    fn weight(&self, txn: TxnId) -> usize {
        let Some(t) = self.txns.get(&txn) else { return 0 };
        let mut requests = 0;
        let mut intentions: Vec<(u64, LockMode)> = t.gap_tables.iter().map(|&table| (table, LockMode::Exclusive)).collect();
        for (table, key) in &t.records {
            for r in self.queue(*table, key).into_iter().flatten().filter(|r| r.txn == txn) {
                requests += 1;
                intentions.push((*table, r.mode));
            }
        }
        intentions.sort_unstable_by_key(|&(table, mode)| (table, mode == LockMode::Exclusive));
        intentions.dedup();
        t.modified + requests + t.range_rows + intentions.len()
    }

    /// The first gap lock of another transaction (of `holder`, if given) that holds back
    /// `txn`'s insert `wanted`.
    fn blocking_gap(&self, txn: TxnId, holder: Option<TxnId>, wanted: &Wanted) -> Option<&Gap> {
        let Wanted::Insert { table, index, key } = wanted else { return None };
        self.gaps.get(table)?.iter().find(|g| g.txn != txn && holder.is_none_or(|h| g.txn == h) && g.contains(*index, key))
    }

    /// The transactions `txn`'s request for `wanted` waits behind.
    fn blockers(&self, txn: TxnId, wanted: &Wanted) -> Vec<TxnId> {
        let mut out = Vec::new();
        match wanted {
            Wanted::Record { table, key, mode } => {
                let Some(queue) = self.queue(*table, key) else { return out };
                let mine = queue.iter().position(|r| r.txn == txn && !r.granted).unwrap_or(queue.len());
                for (j, r) in queue.iter().enumerate() {
                    if r.txn != txn && (r.granted || j < mine) && r.mode.conflicts(*mode) && !out.contains(&r.txn) {
                        out.push(r.txn);
                    }
                }
            }
            Wanted::Insert { table, index, key } => {
                for g in self.gaps.get(table).into_iter().flatten() {
                    if g.txn != txn && g.contains(*index, key) && !out.contains(&g.txn) {
                        out.push(g.txn);
                    }
                }
            }
        }
        out
    }

    /// The other transactions of a shortest cycle `txn` waiting for `wanted` would close,
    /// if any. A search longer than [`DEADLOCK_SEARCH_STEPS_MAX`] counts as a cycle of `txn`
    /// alone.
    ///
    /// Breadth-first, so every member of the cycle found is needed for it: ending any of
    /// them breaks the deadlock. A longer cycle may pass through a transaction that only
    /// waits behind another waiter of the same row; choosing it as the victim (it is the
    /// lightest, holding nothing) would leave the deadlock in place and cost a second victim.
    fn find_cycle(&self, txn: TxnId, wanted: &Wanted) -> Option<Vec<TxnId>> {
        // How each transaction was first reached, to recover the cycle.
        let mut parent: HashMap<TxnId, TxnId> = HashMap::default();
        let mut frontier: std::collections::VecDeque<TxnId> = std::collections::VecDeque::new();
        for b in self.blockers(txn, wanted) {
            parent.insert(b, txn);
            frontier.push_back(b);
        }
        let mut steps = 0usize;
        while let Some(at) = frontier.pop_front() {
            steps += 1;
            if steps > DEADLOCK_SEARCH_STEPS_MAX {
                return Some(Vec::new());
            }
            let Some((w, _)) = self.txns.get(&at).and_then(|t| t.waiting.as_ref()) else { continue };
            for next in self.blockers(at, w) {
                if next == txn {
                    let mut cycle = Vec::new();
                    let mut member = at;
                    while member != txn {
                        cycle.push(member);
                        member = parent[&member];
                    }
                    return Some(cycle);
                }
                if let std::collections::hash_map::Entry::Vacant(e) = parent.entry(next) {
                    e.insert(at);
                    frontier.push_back(next);
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use LockMode::{Exclusive as X, Shared as S};
    use WaitPolicy::{NoWait, SkipLocked, Wait};

    /// A small deterministic generator (a linear congruential one) for the randomized tests.
    fn random(seed: u64) -> impl FnMut() -> u64 {
        let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        move || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            state >> 33
        }
    }

    #[test]
    fn shared_locks_share_and_exclusive_ones_queue() {
        let m = LockManager::default();
        assert_eq!(m.lock_record(1, 7, b"a", S, Wait), Acquire::Granted);
        assert_eq!(m.lock_record(2, 7, b"a", S, Wait), Acquire::Granted);
        assert_eq!(m.lock_record(3, 7, b"a", X, NoWait), Acquire::Conflict);
        assert_eq!(m.lock_record(3, 7, b"a", X, SkipLocked), Acquire::Conflict);
        assert_eq!(m.lock_record(3, 7, b"a", X, Wait), Acquire::Waiting);
        // Fairness: a new shared request queues behind the waiting exclusive one.
        assert_eq!(m.lock_record(4, 7, b"a", S, Wait), Acquire::Waiting);
        m.release_all(1);
        assert!(m.is_waiting(3));
        m.release_all(2);
        assert!(!m.is_waiting(3), "exclusive granted first");
        assert!(m.is_waiting(4));
        m.release_all(3);
        assert!(!m.is_waiting(4));
        assert_eq!(m.stats.waits.load(Ordering::Relaxed), 2);
        assert_eq!(m.stats.current_waits.load(Ordering::Relaxed), 0);
        assert_eq!(m.lock_record(4, 7, b"a", S, Wait), Acquire::Held);
        // Releasing one row early hands it on.
        assert_eq!(m.lock_record(5, 7, b"a", X, Wait), Acquire::Waiting);
        m.unlock_record(4, 7, b"a");
        assert!(!m.is_waiting(5));
    }

    #[test]
    fn a_record_range_holds_its_rows_lazily() {
        let m = LockManager::default();
        // Transaction 2 holds a row before the range is taken: the scan must lock it itself.
        assert_eq!(m.lock_record(2, 7, b"a", X, Wait), Acquire::Granted);
        m.lock_range(1, 7, Bound::Unbounded, Bound::Unbounded, 3);
        assert_eq!(m.txn_counts(1), (3, 0));
        assert!(m.needs_record_lock(1, 7, b"a"));
        assert!(!m.needs_record_lock(1, 7, b"b"));
        assert!(!m.needs_record_lock(1, 8, b"b"));
        // A request on another row of the range meets the range's shared lock, made explicit.
        assert_eq!(m.lock_record(3, 7, b"b", S, Wait), Acquire::Granted);
        assert_eq!(m.lock_record(3, 7, b"c", X, Wait), Acquire::Waiting);
        assert!(m.locks().iter().any(|l| l.txn == 1 && l.key.as_deref() == Some(b"c".as_slice()) && l.mode == "S,REC_NOT_GAP"));
        assert!(m.needs_record_lock(1, 7, b"c"));
        // Inserts into the range wait as behind a gap lock.
        assert_eq!(m.check_insert(4, 7, 0, b"d"), Acquire::Waiting);
        // The scan waits for the row held before it; the holder then asks for a row of the
        // range: a cycle, and transaction 2 (lighter than a three-row scan) is the victim.
        assert_eq!(m.lock_record(1, 7, b"a", S, Wait), Acquire::Waiting);
        assert_eq!(m.lock_record(2, 7, b"e", X, Wait), Acquire::Deadlock);
        m.release_all(2);
        assert!(!m.is_waiting(1));
        m.release_all(1);
        assert!(!m.is_waiting(3));
        assert!(!m.is_waiting(4));
        assert!(m.locks().iter().all(|l| l.txn != 1));
    }

    #[test]
    fn two_shared_holders_upgrading_deadlock() {
        let m = LockManager::default();
        assert_eq!(m.lock_record(1, 1, b"k", S, Wait), Acquire::Granted);
        assert_eq!(m.lock_record(2, 1, b"k", S, Wait), Acquire::Granted);
        assert_eq!(m.lock_record(1, 1, b"k", X, Wait), Acquire::Waiting);
        assert_eq!(m.lock_record(2, 1, b"k", X, Wait), Acquire::Deadlock);
        m.release_all(2);
        assert!(!m.is_waiting(1));
        assert_eq!(m.lock_record(1, 1, b"k", X, NoWait), Acquire::Held, "upgrade held");
        assert_eq!(m.lock_record(3, 1, b"k", S, NoWait), Acquire::Conflict);
    }

    #[test]
    fn a_cycle_across_rows_is_found() {
        let m = LockManager::default();
        assert_eq!(m.lock_record(1, 1, b"a", X, Wait), Acquire::Granted);
        assert_eq!(m.lock_record(2, 1, b"b", X, Wait), Acquire::Granted);
        assert_eq!(m.lock_record(3, 1, b"c", X, Wait), Acquire::Granted);
        assert_eq!(m.lock_record(1, 1, b"b", X, Wait), Acquire::Waiting);
        assert_eq!(m.lock_record(2, 1, b"c", X, Wait), Acquire::Waiting);
        assert_eq!(m.lock_record(3, 1, b"a", X, Wait), Acquire::Deadlock);
        assert_eq!(m.waits().len(), 2);
    }

    #[test]
    fn a_waiter_behind_the_deadlock_is_not_its_victim() {
        let m = LockManager::default();
        assert_eq!(m.lock_record(1, 1, b"a", X, Wait), Acquire::Granted);
        assert_eq!(m.lock_record(2, 1, b"b", X, Wait), Acquire::Granted);
        // 3 holds nothing and waits for a behind 1; then 1 and 2 deadlock over a and b.
        assert_eq!(m.lock_record(3, 1, b"a", X, Wait), Acquire::Waiting);
        assert_eq!(m.lock_record(1, 1, b"b", X, Wait), Acquire::Waiting);
        let second = m.lock_record(2, 1, b"a", X, Wait);
        assert!(!m.is_victim(3), "3 is in no cycle that ending it would break");
        assert!(m.is_waiting(3));
        // One victim, 1 or 2, and one only.
        assert_eq!(u64::from(second == Acquire::Deadlock) + u64::from(m.is_victim(1)), 1);
        assert_eq!(m.stats.deadlocks.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn gap_locks_hold_back_other_inserts_only() {
        let m = LockManager::default();
        m.lock_gap(1, 5, 0, X, Bound::Excluded(b"b".to_vec()), Bound::Included(b"f".to_vec()));
        assert_eq!(m.check_insert(1, 5, 0, b"c"), Acquire::Granted, "own gap");
        assert_eq!(m.check_insert(2, 5, 0, b"a"), Acquire::Granted, "outside");
        assert_eq!(m.check_insert(2, 5, 1, b"c"), Acquire::Granted, "other index");
        assert_eq!(m.check_insert(2, 5, 0, b"c"), Acquire::Waiting);
        m.release_all(1);
        assert!(!m.is_waiting(2));
        // Two holders of one gap both inserting into it: the second closes a cycle.
        m.lock_gap(3, 5, 0, X, Bound::Unbounded, Bound::Unbounded);
        m.lock_gap(4, 5, 0, X, Bound::Unbounded, Bound::Unbounded);
        assert_eq!(m.check_insert(3, 5, 0, b"q"), Acquire::Waiting);
        assert_eq!(m.check_insert(4, 5, 0, b"q"), Acquire::Deadlock);
        m.release_all(4);
        assert!(!m.is_waiting(3));
    }

    /// The upgrade deadlock of a SERIALIZABLE read: 1 holds a shared lock, 2 (an autocommit
    /// UPDATE that holds nothing) waits for an exclusive one, then 1 asks for it too. InnoDB
    /// rolls back the UPDATE, which weighs less; counting modified rows alone chose 1.
    #[tokio::test]
    async fn an_update_that_holds_nothing_is_lighter_than_a_reader_upgrading() {
        let m = LockManager::default();
        assert_eq!(m.lock_record(1, 1, b"r", S, Wait), Acquire::Granted);
        assert_eq!(m.lock_record(2, 1, b"r", X, Wait), Acquire::Waiting);
        // 2 is the victim: its request is withdrawn, so 1's upgrade is granted at once.
        assert_eq!(m.lock_record(1, 1, b"r", X, Wait), Acquire::Granted);
        assert_eq!(m.wait(2, Duration::from_secs(5)).await, WaitOutcome::Deadlock);
    }

    #[tokio::test]
    async fn the_lighter_transaction_is_the_victim() {
        let m = LockManager::default();
        assert_eq!(m.lock_record(1, 1, b"a", X, Wait), Acquire::Granted);
        assert_eq!(m.lock_record(2, 1, b"b", X, Wait), Acquire::Granted);
        m.add_modified(2, 5);
        assert_eq!(m.lock_record(1, 1, b"b", X, Wait), Acquire::Waiting);
        // 2 closes the cycle but has modified more rows: 1 is the victim.
        assert_eq!(m.lock_record(2, 1, b"a", X, Wait), Acquire::Waiting);
        assert_eq!(m.wait(1, Duration::from_secs(5)).await, WaitOutcome::Deadlock);
        m.release_all(1);
        assert_eq!(m.wait(2, Duration::from_secs(5)).await, WaitOutcome::Granted);
        assert_eq!(m.stats.deadlocks.load(Ordering::Relaxed), 1);
    }

    /// Random requests, commits and timeouts from a few transactions on a few rows: after
    /// every step, no cycle of waits is left undetected.
    #[test]
    fn no_cycle_of_waits_survives_random_requests() {
        for seed in 0..300u64 {
            let m = LockManager::default();
            let mut next = random(seed);
            let mut next_txn = 100;
            let mut live: Vec<TxnId> = (0..5).map(|i| i + 1).collect();
            let mut log = Vec::new();
            for _ in 0..200 {
                let i = (next() % live.len() as u64) as usize;
                let txn = live[i];
                let victim = m.wait_state(txn) == Some(WaitOutcome::Deadlock);
                if victim || next().is_multiple_of(6) {
                    log.push(format!("end {txn}"));
                    m.release_all(txn);
                    live[i] = next_txn;
                    next_txn += 1;
                    continue;
                }
                if m.is_waiting(txn) {
                    if next().is_multiple_of(8) {
                        log.push(format!("timeout {txn}"));
                        m.cancel_wait(txn);
                    }
                    continue;
                }
                let key = [b'a' + (next() % 3) as u8];
                let mode = if next().is_multiple_of(2) { S } else { X };
                if next().is_multiple_of(4) {
                    m.add_modified(txn, 1);
                }
                let r = m.lock_record(txn, 1, &key, mode, Wait);
                log.push(format!("{txn} {mode:?} {} -> {r:?}", key[0] as char));
                if r == Acquire::Deadlock {
                    m.release_all(txn);
                    live[i] = next_txn;
                    next_txn += 1;
                }
                // A waiting transaction's request is queued, not granted.
                for l in m.locks() {
                    if let Some((Wanted::Record { key, .. }, _)) = m.waiting_for(l.txn) {
                        let queued = m.locks().iter().any(|q| q.txn == l.txn && !q.granted && q.key.as_deref() == Some(key.as_slice()));
                        assert!(queued, "seed {seed}: {} waits for a request that is not queued:\n{}", l.txn, log.join("\n"));
                    }
                }
                // Every waiter must reach a transaction that is not waiting.
                let edges = m.waits();
                for start in live.iter().copied() {
                    let mut at = vec![start];
                    let mut seen = std::collections::HashSet::new();
                    while let Some(t) = at.pop() {
                        assert!(seen.len() < 100, "seed {seed}");
                        for e in edges.iter().filter(|e| e.waiter == t) {
                            assert!(e.blocker != start, "seed {seed}: undetected cycle through {start}:\n{}", log.join("\n"));
                            if seen.insert(e.blocker) {
                                at.push(e.blocker);
                            }
                        }
                    }
                }
            }
        }
    }

    /// Random record requests beside scans under record ranges (as `query::join_level` runs
    /// them: the range, then an explicit shared lock on each row someone else has a request
    /// on): no two conflicting requests are ever granted, and once a scan has passed a row no
    /// other transaction holds it exclusively.
    #[test]
    fn record_ranges_never_grant_a_conflict() {
        const KEYS: [&[u8]; 3] = [b"a", b"b", b"c"];
        for seed in 0..300u64 {
            let m = LockManager::default();
            let mut next = random(seed);
            let mut next_txn = 100;
            let mut live: Vec<TxnId> = (1..=4).collect();
            // Per transaction: how many rows its scan has passed (`None`: no scan).
            let mut scans: HashMap<TxnId, usize> = HashMap::default();
            let mut log = Vec::new();
            for _ in 0..300 {
                let i = (next() % live.len() as u64) as usize;
                let txn = live[i];
                let victim = m.wait_state(txn) == Some(WaitOutcome::Deadlock);
                if victim || next().is_multiple_of(8) {
                    log.push(format!("end {txn}"));
                    m.release_all(txn);
                    scans.remove(&txn);
                    live[i] = next_txn;
                    next_txn += 1;
                    continue;
                }
                if m.is_waiting(txn) {
                    continue;
                }
                let r = match scans.get(&txn).copied() {
                    Some(passed) if passed < KEYS.len() => {
                        let key = KEYS[passed];
                        if m.needs_record_lock(txn, 1, key) {
                            let r = m.lock_record(txn, 1, key, S, Wait);
                            log.push(format!("{txn} scan S {} -> {r:?}", key[0] as char));
                            if matches!(r, Acquire::Granted | Acquire::Held) {
                                scans.insert(txn, passed + 1);
                            }
                            r
                        } else {
                            log.push(format!("{txn} scan passes {}", key[0] as char));
                            scans.insert(txn, passed + 1);
                            Acquire::Held
                        }
                    }
                    Some(_) => Acquire::Held,
                    None if next().is_multiple_of(4) => {
                        log.push(format!("{txn} range"));
                        m.lock_range(txn, 1, Bound::Unbounded, Bound::Unbounded, KEYS.len());
                        scans.insert(txn, 0);
                        Acquire::Granted
                    }
                    None => {
                        let key = KEYS[(next() % 3) as usize];
                        let mode = if next().is_multiple_of(3) { S } else { X };
                        let r = m.lock_record(txn, 1, key, mode, Wait);
                        log.push(format!("{txn} {mode:?} {} -> {r:?}", key[0] as char));
                        r
                    }
                };
                if r == Acquire::Deadlock {
                    m.release_all(txn);
                    scans.remove(&txn);
                    live[i] = next_txn;
                    next_txn += 1;
                }
                let locks = m.locks();
                for (n, key) in KEYS.iter().enumerate() {
                    let granted: Vec<&LockInfo> = locks.iter().filter(|l| l.granted && l.key.as_deref() == Some(*key)).collect();
                    for a in &granted {
                        for b in &granted {
                            let exclusive = a.mode.starts_with('X') || b.mode.starts_with('X');
                            assert!(
                                a.txn == b.txn || !exclusive,
                                "seed {seed}: {} and {} both granted on {}:\n{}",
                                a.txn,
                                b.txn,
                                key[0] as char,
                                log.join("\n")
                            );
                        }
                        let passed = scans.iter().find(|&(&t, &p)| t != a.txn && p > n);
                        assert!(
                            !a.mode.starts_with('X') || passed.is_none(),
                            "seed {seed}: {} holds {} exclusively after scan {:?} passed it:\n{}",
                            a.txn,
                            key[0] as char,
                            passed,
                            log.join("\n")
                        );
                    }
                }
            }
        }
    }

    #[tokio::test]
    async fn a_wait_times_out_and_withdraws() {
        let m = Arc::new(LockManager::default());
        assert_eq!(m.lock_record(1, 1, b"a", X, Wait), Acquire::Granted);
        assert_eq!(m.lock_record(2, 1, b"a", X, Wait), Acquire::Waiting);
        assert_eq!(m.wait(2, Duration::from_millis(20)).await, WaitOutcome::TimedOut);
        assert!(!m.is_waiting(2));
        assert_eq!(m.lock_record(3, 1, b"a", X, Wait), Acquire::Waiting);
        let m2 = m.clone();
        let waiter = tokio::spawn(async move { m2.wait(3, Duration::from_secs(5)).await });
        m.release_all(1);
        assert_eq!(waiter.await.unwrap(), WaitOutcome::Granted);
        assert_eq!(m.locks().iter().filter(|l| l.granted).count(), 1);
    }
}
