//! Row locking for statements: what a locking read or a write asks of the lock manager
//! (`quill_txn::locks`), and how its answers become SQL outcomes.
//!
//! A statement that locks carries a [`LockSpec`]: its transaction, the mode (`FOR SHARE`
//! and SERIALIZABLE reads take shared locks; writes and `FOR UPDATE` exclusive ones), the
//! wait policy (`NOWAIT`, `SKIP LOCKED`), and whether it locks gaps (REPEATABLE READ and
//! SERIALIZABLE). A request that must wait has been queued; the statement then fails with
//! `SqlError::must_wait(Wait::RowLock)`, the session undoes what the statement did, awaits the grant
//! and re-runs it, and the re-run finds the lock already held. A deadlock makes this
//! transaction the victim ([`SqlError::deadlock`]).
//!
//! With strict snapshot isolation (`innodb_snapshot_isolation`), a locked row whose newest
//! committed version is newer than the transaction's snapshot is error 1020 instead of
//! being read current.
//!
//! Sits between `query`/`dml` (which decide what to lock) and `quill_txn` (which queues).

use std::ops::Bound;

use quill_storage::{Handler, Timestamp, TxnId};
use quill_txn::{Acquire, LockManager, LockMode, WaitPolicy};

use quill_sql_types::error::{Result, SqlError, Wait, codes};

/// A range a locking scan read, on index `index` (0: the primary key, `i + 1`: secondary
/// index `i`), bounds as for the table's scans.
#[derive(Debug)]
pub struct ScannedRange {
    pub index: u32,
    pub lo: Bound<Vec<u8>>,
    pub hi: Bound<Vec<u8>>,
    /// A range scan also locks the first record above the range.
    pub next_record: bool,
}

impl ScannedRange {
    /// One key looked up and not found.
    #[must_use]
    pub fn point(index: u32, key: Vec<u8>) -> ScannedRange {
        ScannedRange { index, lo: Bound::Included(key.clone()), hi: Bound::Included(key), next_record: false }
    }
}

fn as_ref_bound(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    b.as_ref().map(Vec::as_slice)
}

/// How one statement locks.
#[derive(Debug, Clone, Copy)]
pub struct LockSpec {
    pub txn: TxnId,
    pub mode: LockMode,
    pub policy: WaitPolicy,
    /// Lock the gaps a scan reads (REPEATABLE READ, SERIALIZABLE).
    pub gaps: bool,
    /// READ COMMITTED and below: UPDATE and DELETE read the newest committed version first
    /// and lock only rows that match (InnoDB's semi-consistent read), and a locking read
    /// lets go of rows it locked but did not return.
    pub semi_consistent: bool,
    /// Strict snapshot isolation: the read timestamp a locked row must not be newer than.
    pub snapshot: Option<Timestamp>,
}

impl LockSpec {
    /// Lock the row at `pk` of `table`: `Ok(None)` when skipped (`SKIP LOCKED`), else
    /// whether the lock is new to the transaction.
    ///
    /// # Errors
    /// `SqlError::must_wait(Wait::RowLock)` (queued), 3572 (`NOWAIT`), 1213 (deadlock victim), 1020
    /// (changed since the snapshot).
    pub fn lock_row(&self, locks: &LockManager, table_id: u64, table_name: &str, data: &dyn Handler, pk: &[u8]) -> Result<Option<bool>> {
        let fresh = match locks.lock_written_record(self.txn, table_id, pk, self.mode, self.policy, || data.holder(pk)) {
            Acquire::Granted => true,
            Acquire::Held => false,
            Acquire::Conflict if self.policy == WaitPolicy::SkipLocked => return Ok(None),
            Acquire::Conflict => {
                return Err(SqlError::new(codes::ER_LOCK_NOWAIT, "Statement aborted because lock(s) could not be acquired immediately and NOWAIT is set."));
            }
            Acquire::Waiting => return Err(SqlError::must_wait(Wait::RowLock)),
            Acquire::Deadlock => return Err(SqlError::deadlock()),
        };
        if let Some(read_ts) = self.snapshot
            && data.newest_commit_ts(pk).is_some_and(|ts| ts > read_ts)
        {
            return Err(SqlError::new(codes::ER_CHECKREAD, format!("Record has changed since last read in table '{table_name}'")));
        }
        Ok(Some(fresh))
    }

    /// Whether a scan of a whole table under this spec locks it with one record range
    /// ([`LockSpec::lock_whole_table`]) rather than a lock per row: a shared, waiting,
    /// gap-locking read (REPEATABLE READ and SERIALIZABLE: `INSERT ... SELECT`, `FOR SHARE`)
    /// that reads every row (`limited`: a LIMIT may stop it early, and InnoDB locks only the
    /// rows a scan reaches) with no snapshot check per row.
    #[must_use]
    pub fn ranges_whole_table(&self, limited: bool) -> bool {
        self.mode == LockMode::Shared && self.policy == WaitPolicy::Wait && self.gaps && !self.semi_consistent && self.snapshot.is_none() && !limited
    }

    /// Lock every row of a table and every gap between them, as a locking full scan's
    /// next-key locks do, with one record range (`quill_txn::LockManager::lock_range`). The
    /// scan then locks explicitly only the rows
    /// [`quill_txn::LockManager::needs_record_lock`] or their own uncommitted versions say
    /// another transaction holds.
    pub fn lock_whole_table(&self, locks: &LockManager, table_id: u64, data: &dyn Handler) {
        // Under the write latch, as a gap lock: an insert came before (the scan finds it) or
        // checks its insert intention after, and waits.
        let _latch = data.write_latch();
        let rows = usize::try_from(data.statistics().rows).unwrap_or(usize::MAX);
        locks.lock_range(self.txn, table_id, Bound::Unbounded, Bound::Unbounded, rows);
    }

    /// Lock the gap a scan of `(lower, upper)` on index `index` reads (0: the primary key),
    /// and, for a range scan, the record just above it, as InnoDB's next-key locks do.
    /// Nothing at READ COMMITTED and below.
    ///
    /// # Errors
    /// As [`LockSpec::lock_row`] for the record above the range.
    pub fn lock_gap(&self, locks: &LockManager, table_id: u64, table_name: &str, data: &dyn Handler, range: &ScannedRange) -> Result<()> {
        if !self.gaps {
            return Ok(());
        }
        // Under the write latch, an insert either came before the gap lock (the scan that
        // follows finds its row) or checks its insert intention after it and waits.
        let next = {
            let _latch = data.write_latch();
            let Some((lo, hi, next)) = data.gap_around(range.index, as_ref_bound(&range.lo), as_ref_bound(&range.hi)) else { return Ok(()) };
            locks.lock_gap(self.txn, table_id, range.index, self.mode, lo, hi);
            next
        };
        if range.next_record
            && let Some(pk) = next
        {
            // A skipped or refused record above the range does not change the scan's rows.
            match self.lock_row(locks, table_id, table_name, data, &pk) {
                Ok(_) => {}
                Err(e) if e.code == codes::ER_CHECKREAD.0 => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

/// Insert a new row at `pk` of `data` with `write`: under an implicit lock when no
/// transaction has a request on `pk` (InnoDB's, see `quill_txn::locks`), else after an
/// explicit exclusive lock. REQUIRES: the table's write latch, as for [`check_insert`].
///
/// # Errors
/// As [`lock_for_write`].
pub fn insert_locked<R>(locks: &LockManager, txn: TxnId, table_id: u64, data: &dyn Handler, pk: &[u8], write: impl FnOnce() -> R) -> Result<R> {
    let mut write = Some(write);
    if let Some(done) = locks.insert_implicit(table_id, pk, || (write.take().expect("called once"))()) {
        return Ok(done);
    }
    lock_for_write(locks, txn, table_id, data, pk)?;
    Ok((write.take().expect("not called: the key had requests"))())
}

/// An insert (or an update that moves a row to a new key or index entry) of the entries
/// `keys` lists into `table` by `txn`: waits while another transaction's gap lock covers
/// one of them. `keys` is called only when the table has gap locks at all. REQUIRES: the
/// table's write latch, held on to the write: gap locks are granted under it
/// ([`LockSpec::lock_gap`]), so none can appear between this look and the write.
///
/// # Errors
/// `SqlError::must_wait(Wait::RowLock)` or 1213, as [`LockSpec::lock_row`].
pub fn check_insert(locks: &LockManager, txn: TxnId, table_id: u64, keys: impl FnOnce() -> Vec<(u32, Vec<u8>)>) -> Result<()> {
    if !locks.has_gaps(table_id) {
        return Ok(());
    }
    for (index, key) in keys() {
        match locks.check_insert(txn, table_id, index, &key) {
            Acquire::Granted | Acquire::Held | Acquire::Conflict => {}
            Acquire::Waiting => return Err(SqlError::must_wait(Wait::RowLock)),
            Acquire::Deadlock => return Err(SqlError::deadlock()),
        }
    }
    Ok(())
}

/// An exclusive lock for a write to the row at `pk` of `data` (always waits; no gap).
///
/// # Errors
/// As [`LockSpec::lock_row`].
pub fn lock_for_write(locks: &LockManager, txn: TxnId, table_id: u64, data: &dyn Handler, pk: &[u8]) -> Result<()> {
    match locks.lock_written_record(txn, table_id, pk, LockMode::Exclusive, WaitPolicy::Wait, || data.holder(pk)) {
        Acquire::Granted | Acquire::Held | Acquire::Conflict => Ok(()),
        Acquire::Waiting => Err(SqlError::must_wait(Wait::RowLock)),
        Acquire::Deadlock => Err(SqlError::deadlock()),
    }
}
