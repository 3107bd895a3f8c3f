//! The buffer pool: the bound on the bytes that resident leaves of paged tables hold
//! (`innodb_buffer_pool_size`), and the choice of which leaf leaves memory when a load or a
//! write takes the pool past it.
//!
//! A paged leaf ([`crate::leaf_map`]) is resident (its entries in memory, reached through
//! the map's skip list at in-memory speed) or on disk (only its block's address is kept).
//! Every leaf made resident is *admitted* here with the bytes it holds, and every change to a
//! resident leaf's size is *charged*. When the resident bytes pass the capacity, the thread
//! that passed it makes room ([`BufferPool::make_room`]) before it goes on: a second-chance
//! clock over the admitted leaves, oldest first, skips a leaf used since the hand last passed
//! (and clears its mark) or one another thread holds, and evicts the first other one: a dirty
//! leaf's image is written to a new block of its page file first ([`crate::page_file`]),
//! unless the leaf came from a stable block and changed little since: then it keeps only
//! its changed entries in memory, with no write, while those of all such leaves stay within
//! [`crate::leaf_map::KEPT_SHARE_OF_POOL`] of the capacity. Kept changes count in the
//! resident bytes; the next checkpoint writes their leaves.
//!
//! Bounds: the clock holds an entry per resident leaf, and entries of leaves gone since
//! (removed, or dropped with their table) until they are passed over or swept out, at most
//! [`CLOCK_STALE_ENTRIES_MAX`] past twice the resident leaves; one `make_room` call visits each
//! entry at most twice ([`MAKE_ROOM_PASSES`]), so a pool whose every leaf is held or pinned
//! stays over its capacity for that moment rather than spinning. Never more than one
//! leaf's mutex is held by a call here, and only with `try_lock`: making room can never wait
//! on a leaf, so it cannot deadlock with the caller's own.
//!
//! Where it sits: storage, below the tables. One pool serves every paged table of an engine.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::Mutex;

/// MySQL 8's default `innodb_buffer_pool_size`: 128 MiB.
pub const DEFAULT_CAPACITY_BYTES: u64 = 128 << 20;

/// How many times one [`BufferPool::make_room`] call may pass over the clock: once to clear
/// the marks of leaves used since, once more to evict them.
pub const MAKE_ROOM_PASSES: usize = 2;

/// What an attempt to evict a leaf came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Eviction {
    /// The leaf left memory, giving back these bytes (already uncharged).
    Evicted,
    /// Used since the hand last passed, or held by another thread: keep it for now.
    Keep,
    /// The leaf is gone from its map, or was evicted already: forget it.
    Gone,
}

/// A resident leaf as the clock sees it.
pub(crate) trait Resident: Send + Sync {
    /// Evict the leaf unless it is in use (see [`Eviction`]).
    fn try_evict(&self, pool: &BufferPool) -> Eviction;
    /// The leaf is gone (dropped with its table, removed from its map) or no longer
    /// resident: its clock entry can go. A leaf another thread holds is not gone.
    fn is_gone(&self) -> bool;
}

/// The clock may hold this many entries past twice the resident leaves before an admission
/// sweeps out those of leaves that are gone: entries of removed leaves and dropped tables
/// would otherwise pile up while the pool is never full enough to pass over them.
pub const CLOCK_STALE_ENTRIES_MAX: usize = 1024;

/// Shards of a [`ShardedCounter`]: enough that the threads of a busy server rarely share one.
pub const COUNTER_SHARDS: usize = 16;

/// A counter every thread bumps on its hot path (each leaf it uses): one cache line per
/// shard, a thread always on the same shard, so bumps from different cores do not fight
/// over one line. Read by summing the shards.
#[derive(Debug, Default)]
pub struct ShardedCounter {
    shards: [PaddedCounter; COUNTER_SHARDS],
}

#[derive(Debug, Default)]
#[repr(align(128))]
struct PaddedCounter(AtomicU64);

thread_local! {
    /// This thread's shard, handed out in turn.
    static SHARD: usize = {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        usize::try_from(NEXT.fetch_add(1, Ordering::Relaxed)).unwrap_or(0) % COUNTER_SHARDS
    };
}

impl ShardedCounter {
    pub fn add(&self, n: u64) {
        let shard = SHARD.with(|s| *s);
        self.shards[shard].0.fetch_add(n, Ordering::Relaxed);
    }

    #[must_use]
    pub fn get(&self) -> u64 {
        self.shards.iter().map(|s| s.0.load(Ordering::Relaxed)).sum()
    }
}

/// Counters under InnoDB's names (`SHOW GLOBAL STATUS`, `INNODB_BUFFER_POOL_STATS`).
#[derive(Debug, Default)]
pub struct PoolCounters {
    /// Leaf lookups (`Innodb_buffer_pool_read_requests`).
    pub read_requests: ShardedCounter,
    /// Lookups that had to read a leaf from disk (`Innodb_buffer_pool_reads`).
    pub reads: AtomicU64,
    /// Leaves written to disk by eviction (`Innodb_buffer_pool_pages_flushed`, with
    /// checkpoint writes).
    pub pages_written: AtomicU64,
    /// Bytes of the blocks counted in `pages_written` (`Innodb_data_written`, with the
    /// checkpoint files' bytes).
    pub bytes_written: AtomicU64,
    /// Leaves evicted, clean or dirty (`Innodb_buffer_pool_pages_evicted`: InnoDB has no
    /// status variable for it, so the name is Quill's).
    pub evictions: AtomicU64,
    /// Of `evictions`, the dirty leaves evicted without a write, keeping their changes in
    /// memory (`Quill_buffer_pool_evictions_kept`).
    pub evictions_kept: AtomicU64,
    /// Paged leaves split, by an insert past their bound or by recovery's changes
    /// (`Quill_buffer_pool_leaf_splits`; InnoDB counts its page splits in
    /// `INNODB_METRICS.index_page_splits`). A split leaf leaves its base, so each one costs
    /// two whole-leaf writes.
    pub leaf_splits: AtomicU64,
    /// Times a thread found the pool full and made room (`Innodb_buffer_pool_wait_free`
    /// counts the times it had to wait; here it never waits, it evicts).
    pub make_room_calls: AtomicU64,
}

/// See the module documentation.
pub struct BufferPool {
    capacity_bytes: AtomicU64,
    /// Testing: evict every leaf no call holds, whatever the capacity.
    evict_always: AtomicBool,
    resident_bytes: AtomicU64,
    resident_leaves: AtomicU64,
    /// Leaves changed since their block was written (or never written): resident ones, and
    /// those on disk with their changes kept in memory.
    dirty_leaves: AtomicU64,
    /// Bytes of the changes kept in memory by leaves evicted without a write (part of
    /// `resident_bytes`): [`BufferPool::try_keep`].
    kept_bytes: AtomicU64,
    clock: Mutex<VecDeque<Box<dyn Resident>>>,
    /// Moved on by each checkpoint's index pass ([`BufferPool::next_epoch`]); a leaf notes it
    /// when it takes a block, so a block noted at or below a mark predates the mark.
    epoch: AtomicU64,
    pub counters: PoolCounters,
}

impl std::fmt::Debug for BufferPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BufferPool").field("capacity_bytes", &self.capacity_bytes()).field("resident_bytes", &self.resident_bytes()).finish_non_exhaustive()
    }
}

impl BufferPool {
    /// The epoch a block taken now is noted at.
    pub(crate) fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    /// Ends the current epoch and returns it: every block noted at it or below was taken
    /// before this call.
    pub(crate) fn next_epoch(&self) -> u64 {
        self.epoch.fetch_add(1, Ordering::AcqRel)
    }

    #[must_use]
    pub fn new(capacity_bytes: u64) -> BufferPool {
        BufferPool {
            capacity_bytes: AtomicU64::new(capacity_bytes),
            evict_always: AtomicBool::new(false),
            resident_bytes: AtomicU64::new(0),
            resident_leaves: AtomicU64::new(0),
            dirty_leaves: AtomicU64::new(0),
            kept_bytes: AtomicU64::new(0),
            clock: Mutex::new(VecDeque::new()),
            epoch: AtomicU64::new(1),
            counters: PoolCounters::default(),
        }
    }

    #[must_use]
    pub fn capacity_bytes(&self) -> u64 {
        self.capacity_bytes.load(Ordering::Relaxed)
    }

    /// Sets the capacity (`SET GLOBAL innodb_buffer_pool_size`); a smaller one is reached as
    /// leaves are next loaded or written, or at once by [`BufferPool::make_room`].
    pub fn set_capacity_bytes(&self, bytes: u64) {
        self.capacity_bytes.store(bytes, Ordering::Relaxed);
    }

    /// Bytes resident leaves hold now.
    #[must_use]
    pub fn resident_bytes(&self) -> u64 {
        self.resident_bytes.load(Ordering::Relaxed)
    }

    /// Leaves resident now (`Innodb_buffer_pool_pages_data`).
    #[must_use]
    pub fn resident_leaves(&self) -> u64 {
        self.resident_leaves.load(Ordering::Relaxed)
    }

    /// Leaves changed since their block was written, resident or with their changes kept
    /// (`Innodb_buffer_pool_pages_dirty`).
    #[must_use]
    pub fn dirty_leaves(&self) -> u64 {
        self.dirty_leaves.load(Ordering::Relaxed)
    }

    /// Bytes of the changes evicted leaves keep in memory (`Quill_buffer_pool_kept_bytes`),
    /// counted in [`BufferPool::resident_bytes`] too.
    #[must_use]
    pub fn kept_bytes(&self) -> u64 {
        self.kept_bytes.load(Ordering::Relaxed)
    }

    /// A dirty leaf leaving memory would keep `bytes` of changes: charged (and counted dirty
    /// still) if the kept changes stay within `share` (numerator, denominator) of the
    /// capacity; `false`, with nothing charged, otherwise.
    pub(crate) fn try_keep(&self, bytes: u64, share: (u64, u64)) -> bool {
        let bound = self.capacity_bytes() / share.1 * share.0;
        let taken = self.kept_bytes.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |kept| (kept + bytes <= bound).then_some(kept + bytes));
        if taken.is_err() {
            return false;
        }
        self.resident_bytes.fetch_add(bytes, Ordering::Relaxed);
        self.dirty_leaves.fetch_add(1, Ordering::Relaxed);
        true
    }

    /// A leaf's kept changes went from `before` to `after` bytes (a checkpoint purged
    /// versions from them).
    pub(crate) fn recharge_kept(&self, before: u64, after: u64) {
        if after >= before {
            self.kept_bytes.fetch_add(after - before, Ordering::Relaxed);
            self.resident_bytes.fetch_add(after - before, Ordering::Relaxed);
        } else {
            self.kept_bytes.fetch_sub(before - after, Ordering::Relaxed);
            self.resident_bytes.fetch_sub(before - after, Ordering::Relaxed);
        }
    }

    /// A leaf's kept changes (`bytes`, as [`BufferPool::try_keep`] charged them) are no
    /// longer held: read back into the leaf, written, or dropped with it.
    pub(crate) fn unkeep(&self, bytes: u64) {
        self.kept_bytes.fetch_sub(bytes, Ordering::Relaxed);
        self.resident_bytes.fetch_sub(bytes, Ordering::Relaxed);
        self.dirty_leaves.fetch_sub(1, Ordering::Relaxed);
    }

    /// Testing (`quill_debug_evict_always`): with `on`, every leaf no call holds is evicted
    /// by the next [`BufferPool::make_room`], whatever the capacity.
    pub fn set_evict_always(&self, on: bool) {
        self.evict_always.store(on, Ordering::Relaxed);
    }

    #[must_use]
    pub fn is_over_capacity(&self) -> bool {
        // Evicting always: every leaf no call holds goes; kept changes are not leaves.
        let floor = if self.evict_always.load(Ordering::Relaxed) { self.kept_bytes() } else { self.capacity_bytes() };
        self.resident_bytes() > floor
    }

    /// A leaf became resident holding `bytes`, `dirty` when no block holds it as it is.
    pub(crate) fn admit(&self, leaf: Box<dyn Resident>, bytes: u64, dirty: bool) {
        self.resident_bytes.fetch_add(bytes, Ordering::Relaxed);
        self.resident_leaves.fetch_add(1, Ordering::Relaxed);
        self.dirty_leaves.fetch_add(u64::from(dirty), Ordering::Relaxed);
        let mut clock = self.clock.lock();
        clock.push_back(leaf);
        let resident = usize::try_from(self.resident_leaves()).unwrap_or(usize::MAX);
        if clock.len() > resident.saturating_mul(2) + CLOCK_STALE_ENTRIES_MAX {
            clock.retain(|leaf| !leaf.is_gone());
        }
    }

    /// Entries on the clock (at most twice the resident leaves and
    /// [`CLOCK_STALE_ENTRIES_MAX`] more, right after an admission).
    #[must_use]
    pub fn clock_len(&self) -> usize {
        self.clock.lock().len()
    }

    /// A resident leaf's size changed from `before` to `after` bytes.
    pub(crate) fn charge(&self, before: u64, after: u64) {
        if after >= before {
            self.resident_bytes.fetch_add(after - before, Ordering::Relaxed);
        } else {
            self.resident_bytes.fetch_sub(before - after, Ordering::Relaxed);
        }
    }

    /// A resident leaf holding `bytes` left memory (evicted, or dropped with its table);
    /// `dirty` when it was.
    pub(crate) fn release(&self, bytes: u64, dirty: bool) {
        self.resident_bytes.fetch_sub(bytes, Ordering::Relaxed);
        self.resident_leaves.fetch_sub(1, Ordering::Relaxed);
        self.dirty_leaves.fetch_sub(u64::from(dirty), Ordering::Relaxed);
    }

    /// A clean resident leaf changed.
    pub(crate) fn dirtied(&self) {
        self.dirty_leaves.fetch_add(1, Ordering::Relaxed);
    }

    /// A dirty resident leaf's block was written (and it stays resident).
    pub(crate) fn cleaned(&self) {
        self.dirty_leaves.fetch_sub(1, Ordering::Relaxed);
    }

    /// Evicts leaves until the resident bytes are within the capacity, or every leaf has
    /// been passed [`MAKE_ROOM_PASSES`] times. Returns how many were evicted.
    pub fn make_room(&self) -> usize {
        if !self.is_over_capacity() {
            return 0;
        }
        self.counters.make_room_calls.fetch_add(1, Ordering::Relaxed);
        let mut visits_left = self.clock.lock().len() * MAKE_ROOM_PASSES;
        let mut evicted = 0;
        while visits_left > 0 && self.is_over_capacity() {
            visits_left -= 1;
            // The leaf is tried with the clock unlocked: an eviction may write a block.
            let Some(leaf) = self.clock.lock().pop_front() else { break };
            match leaf.try_evict(self) {
                Eviction::Evicted => {
                    evicted += 1;
                    self.counters.evictions.fetch_add(1, Ordering::Relaxed);
                }
                Eviction::Keep => self.clock.lock().push_back(leaf),
                Eviction::Gone => {}
            }
        }
        evicted
    }
}
