//! A concurrent ordered map from byte keys to values, kept in leaves: the shape of a
//! table's primary index.
//!
//! Entries live in leaves of at most [`LEAF_ENTRIES_MAX`] entries, each behind its own
//! mutex. A leaf covers a key range `[low, high)`; the leaves tile the key space (the first
//! leaf's `low` is the empty key, the last has no `high`) and are found through a skip list
//! keyed by `low`. Inside a leaf, keys sit back to back in one buffer with an end offset
//! each, and values in a parallel vector, so an entry costs its key's bytes, four bytes and
//! its value: no allocation and no skip-list node of its own.
//!
//! Invariants:
//! - every key is in exactly one leaf, the one whose range covers it; a leaf's keys are
//!   sorted and unique;
//! - a leaf's range changes only under its mutex: a split moves the upper entries to a new
//!   leaf that is published in the skip list before the mutex is released, and a removal
//!   (below) hands a range to the leaf before it. So a caller that finds a leaf, locks it and
//!   sees that it still covers its key has the right leaf (otherwise it looks again);
//! - no entry is vacant ([`Vacancy`]): an entry left vacant by a call is removed before
//!   the leaf's mutex is released;
//! - a leaf left empty is removed (but the first), its range going to the leaf before it,
//!   under both their mutexes, taken left to right; a removed leaf covers nothing, so a
//!   caller that locks it looks again;
//! - recovery's changes waiting for a leaf ([`LeafMap::redo`]) are for a leaf on disk: one is
//!   queued under its leaf's mutex, and a leaf read in takes its range's changes under its
//!   mutex before the caller sees it (which may split it: callers check that the leaf they
//!   were given still covers their key). The queue's lock is taken after a leaf's, never before;
//! - a paged leaf with a base (a stable block it was the image of until it changed) has no
//!   block of its own, and is the base's image with its touched keys changed: every change
//!   to an entry notes the entry's key first, and a change the base cannot follow (a split,
//!   a removal of the leaf) retires the base. On disk without a block, a leaf keeps its
//!   touched keys' values in memory ([`Leaf::kept`]), and reading it in applies them to the
//!   base's image.
//!
//! Nobody holds a leaf's mutex across a call of this module's API. Every operation locks one
//! leaf at a time, but the removal of an empty leaf, which locks its left neighbour first. Walks
//! ([`LeafMap::step`]) hold no lock between steps, so entries written while a walk runs may
//! or may not be met.
//!
//! Why leaves and not one skip-list node per row: a node with its own key allocation costs
//! about 150 bytes before the row's image; a leaf entry costs its key and value. A bulk
//! load's ascending keys fill the last leaf to [`LEAF_APPEND_FILL`] and start a new one, so
//! leaves stay nearly full, with room for a few later inserts each.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use crossbeam_skiplist::SkipMap;
use parking_lot::{ArcMutexGuard, Mutex, RawMutex};

use crate::buffer_pool::{BufferPool, Eviction, Resident};
use crate::handler::ScanOrder;
use crate::page::{BLOCK_HEADER_BYTES, BlockAddr, BlockHeader, DELTA_PUT, DELTA_REMOVED, FLAG_STABLE, PageError, PageValue, Reader, put_bytes};
use crate::page_file::{DeltaRef, PageFile};

/// Most entries a leaf holds: one more splits it. Small enough that an insert in the
/// middle of a leaf moves little and that a leaf's mutex is held briefly; large enough that
/// the skip list's node per leaf is a small share of a row.
pub const LEAF_ENTRIES_MAX: usize = 64;

/// Entries an ascending load leaves in each full leaf of a map's end: a key added past the
/// last leaf's last key, taking that leaf over this many, starts a new leaf. The leaf keeps
/// a sixteenth of [`LEAF_ENTRIES_MAX`] free, as InnoDB keeps a sixteenth of a page its sorted
/// builds fill: a later insert among the loaded keys then lands in room left for it instead
/// of splitting the leaf, and a split leaf leaves its base (so eviction and the next
/// checkpoint write both halves whole, where a leaf that kept its base writes only its
/// changes).
pub const LEAF_APPEND_FILL: usize = LEAF_ENTRIES_MAX - LEAF_ENTRIES_MAX / 16;

/// A value that can be empty: the map removes an entry whose value a call left vacant.
pub trait Vacancy: Default {
    fn is_vacant(&self) -> bool;
}

/// How a paged map reaches its page file and the pool that bounds its resident leaves.
#[derive(Debug)]
pub struct Paging {
    pub file: Arc<PageFile>,
    pub pool: Arc<BufferPool>,
    /// Which index of its table the map is (0: the primary key), written into its blocks.
    pub index: u32,
}

/// One leaf of a map's directory, as a checkpoint names it ([`LeafMap::write_stable`],
/// [`LeafMap::on_disk`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirectoryLeaf {
    /// The lowest key the leaf covers; it covers up to the next leaf's.
    pub low: Box<[u8]>,
    pub block: BlockAddr,
    /// The delta record applied to the block's image, if any (`docs/page-format.md`, "Delta
    /// blocks").
    pub delta: Option<DeltaRef>,
    /// Entries the leaf holds (the block's, with the delta applied).
    pub entries: u64,
}

/// A leaf's paging state (unused in a map without [`Paging`]).
#[derive(Debug, Default)]
struct LeafPage {
    /// The entries are not in memory: `block` holds them.
    evicted: bool,
    /// The block holding the entries as they are now; `None` once they change (the block is
    /// retired then) or before they were first written.
    block: Option<BlockAddr>,
    /// `block` is [`FLAG_STABLE`]: a checkpoint may name it as it is.
    stable: bool,
    /// Entries `block` holds.
    block_entries: u64,
    /// Used since the pool's clock hand last passed it.
    referenced: bool,
    /// Bytes charged to the pool while resident.
    charged: u64,
    /// The values' own allocations ([`PageValue::heap_bytes`]), summed, kept as values
    /// change so that charging a change costs one value's count, not the leaf's.
    heap: u64,
    /// Changes made to the leaf's entries so far: a checkpoint that copied them knows
    /// whether they are still what it wrote.
    changes: u64,
    /// The pool's epoch when `block` was taken (0: read from a checkpoint's directory at
    /// start-up): [`LeafMap::stable_since`].
    block_epoch: u64,
    /// A stable block the leaf was its image until it changed (`block` is `None` then): the
    /// leaf is that image with the `touched` keys changed. Held, not retired, until the leaf
    /// takes a block of its own, so that eviction can drop the entries the base still holds
    /// and keep only the changed ones ([`Leaf::kept`]) instead of writing the whole leaf.
    base: Option<BlockAddr>,
    /// The keys changed since `base`, ascending, each once (empty without a base).
    touched: Vec<Box<[u8]>>,
    /// Bytes of [`Leaf::kept`] charged to the pool while the leaf is on disk with them.
    kept_charged: u64,
    /// Entries the leaf holds while on disk with kept changes.
    kept_len: u64,
    /// The delta record of the stable block the leaf has (`block`, or `base`): that block's
    /// image is the leaf's (or its base) with the record's entries applied. Its keys are
    /// among `touched`.
    delta: Option<DeltaRef>,
}

impl LeafPage {
    /// The stable block the leaf is, or was until it changed, the image of (with `delta`).
    fn stable_block(&self) -> Option<BlockAddr> {
        self.base.or(self.block.filter(|_| self.stable))
    }
}

/// Bytes a resident leaf holds besides its entries: the leaf, its mutex and `Arc`, its
/// skip-list node and its range's keys (an estimate).
const LEAF_OVERHEAD_BYTES: u64 = 192;

struct Leaf<V> {
    /// Lowest key this leaf covers (inclusive).
    low: Box<[u8]>,
    /// Key where the next leaf starts (exclusive); `None` for the last leaf.
    high: Option<Box<[u8]>>,
    /// Keys back to back, in order.
    keys: Vec<u8>,
    /// End offset in `keys` of each key.
    ends: Vec<u32>,
    values: Vec<V>,
    page: LeafPage,
    /// While on disk with a base ([`LeafPage::base`]) and no block: the touched keys' values
    /// (`None`: the key has no entry now), ascending. Reading the leaf in applies them to the
    /// base's image.
    kept: Vec<(Box<[u8]>, Option<V>)>,
}

impl<V> Leaf<V> {
    fn new(low: Box<[u8]>, high: Option<Box<[u8]>>) -> Leaf<V> {
        Leaf { low, high, keys: Vec::new(), ends: Vec::new(), values: Vec::new(), page: LeafPage::default(), kept: Vec::new() }
    }

    fn len(&self) -> usize {
        self.values.len()
    }

    fn start(&self, i: usize) -> usize {
        if i == 0 { 0 } else { self.ends[i - 1] as usize }
    }

    fn key(&self, i: usize) -> &[u8] {
        &self.keys[self.start(i)..self.ends[i] as usize]
    }

    fn covers(&self, key: &[u8]) -> bool {
        *self.low <= *key && self.high.as_deref().is_none_or(|high| key < high)
    }

    /// Where `key` is (`Ok`) or would go (`Err`).
    fn search(&self, key: &[u8]) -> Result<usize, usize> {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.key(mid).cmp(key) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Ok(mid),
            }
        }
        Err(lo)
    }

    fn insert_at(&mut self, i: usize, key: &[u8], value: V) {
        let start = self.start(i);
        let len = u32::try_from(key.len()).expect("a key is shorter than 4 GiB");
        self.keys.splice(start..start, key.iter().copied());
        self.ends.insert(i, u32::try_from(start).expect("a leaf's keys fit u32 offsets") + len);
        for end in &mut self.ends[i + 1..] {
            *end += len;
        }
        self.values.insert(i, value);
    }

    fn remove_at(&mut self, i: usize) {
        let (start, end) = (self.start(i), self.ends[i] as usize);
        self.keys.drain(start..end);
        self.ends.remove(i);
        let len = u32::try_from(end - start).expect("a key is shorter than 4 GiB");
        for e in &mut self.ends[i..] {
            *e -= len;
        }
        self.values.remove(i);
    }

    /// Move the entries from `at` on to a new leaf starting at the first of them; both keep
    /// only the room they use.
    fn split_off(&mut self, at: usize) -> Leaf<V> {
        let cut = self.start(at);
        let low: Box<[u8]> = self.key(at).into();
        let cut32 = u32::try_from(cut).expect("a leaf's keys fit u32 offsets");
        let mut right = Leaf::new(low.clone(), self.high.take());
        right.keys = self.keys.split_off(cut);
        right.ends = self.ends.split_off(at).into_iter().map(|e| e - cut32).collect();
        right.values = self.values.split_off(at);
        self.high = Some(low);
        self.fit();
        right
    }

    /// Move the vectors to allocations of exactly their length. Not `shrink_to_fit`: an
    /// allocator may shrink in place and keep the block (mimalloc keeps it down to half its
    /// size), which left a full leaf of ascending inserts in twice the room it uses.
    fn fit(&mut self) {
        self.keys = self.keys.as_slice().to_vec();
        self.ends = self.ends.as_slice().to_vec();
        let mut values = Vec::with_capacity(self.values.len());
        values.append(&mut self.values);
        self.values = values;
    }
}

/// Appends the start of a leaf's page image (`docs/page-format.md`, "Leaf images"): the
/// range it covers. Its entries follow, each written by [`put_image_entry`], to the end of
/// the payload.
pub(crate) fn put_image_range(out: &mut Vec<u8>, low: &[u8], high: Option<&[u8]>) {
    put_bytes(out, low);
    match high {
        Some(high) => {
            out.push(1);
            put_bytes(out, high);
        }
        None => out.push(0),
    }
}

/// Appends one entry of a leaf's page image: its key, then its value's bytes.
pub(crate) fn put_image_entry(out: &mut Vec<u8>, key: &[u8], value: &impl PageValue) {
    put_bytes(out, key);
    value.encode(out);
}

impl<V: PageValue> Leaf<V> {
    /// Bytes the resident leaf holds, as the pool counts them.
    fn resident_bytes(&self) -> u64 {
        let vectors = self.keys.capacity() + self.ends.capacity() * 4 + self.values.capacity() * std::mem::size_of::<V>();
        let touched: usize = self.page.touched.iter().map(|k| k.len() + std::mem::size_of::<Box<[u8]>>()).sum();
        (vectors + touched) as u64 + self.page.heap + LEAF_OVERHEAD_BYTES + self.low.len() as u64
    }

    /// Counts the values' allocations afresh (a leaf read in, or split).
    fn recount_heap(&mut self) {
        self.page.heap = self.values.iter().map(|v| v.heap_bytes() as u64).sum();
    }

    /// Appends the leaf's page image.
    fn encode_image(&self, out: &mut Vec<u8>) {
        put_image_range(out, &self.low, self.high.as_deref());
        for (i, value) in self.values.iter().enumerate() {
            put_image_entry(out, self.key(i), value);
        }
    }

    /// The leaf a page image holds, checked: its keys ascend and lie in its range.
    fn decode_image(payload: &[u8]) -> Result<Leaf<V>, PageError> {
        let mut reader = Reader::new(payload);
        let low: Box<[u8]> = reader.bytes()?.into();
        let high: Option<Box<[u8]>> = match reader.u8()? {
            0 => None,
            1 => Some(reader.bytes()?.into()),
            _ => return Err(PageError::Malformed("a leaf's upper bound flag is neither 0 nor 1")),
        };
        let mut leaf = Leaf::new(low, high);
        while !reader.is_empty() {
            let key = reader.bytes()?;
            let value = V::decode(&mut reader)?;
            let after_last = leaf.values.is_empty() || leaf.key(leaf.len() - 1) < key;
            if !after_last || !leaf.covers(key) {
                return Err(PageError::Malformed("a leaf's keys out of order or out of its range"));
            }
            leaf.keys.extend_from_slice(key);
            leaf.ends.push(u32::try_from(leaf.keys.len()).map_err(|_| PageError::Malformed("a leaf past 4 GiB of keys"))?);
            leaf.values.push(value);
        }
        Ok(leaf)
    }
}

type LeafRef<V> = Arc<Mutex<Leaf<V>>>;
type LockedLeaf<V> = ArcMutexGuard<RawMutex, Leaf<V>>;

/// See the module documentation.
pub struct LeafMap<V> {
    /// Leaves by their `low` key.
    leaves: SkipMap<Box<[u8]>, LeafRef<V>>,
    /// Entries in all leaves.
    len: AtomicU64,
    /// Where evicted leaves go; `None`: every leaf stays in memory.
    paging: Option<Arc<Paging>>,
    /// Recovery's changes waiting for their leaves to be read in ([`LeafMap::redo`]), by key:
    /// only for keys whose leaf is on disk. Locked after a leaf's mutex, never before.
    redo: Mutex<BTreeMap<Box<[u8]>, Redo<V>>>,
    /// Entries in `redo`, read without its lock: 0 once recovery's changes are all in.
    redo_pending: AtomicU64,
    /// Every leaf is on disk: the map was opened so ([`LeafMap::on_disk`]) and none has been
    /// read in since. A change recovery replays then waits without looking its leaf up
    /// ([`LeafMap::redo`]). Cleared under `redo`'s lock before the first leaf is read in, so
    /// a change queued on its word is in the queue when that leaf takes its range's changes.
    all_on_disk: AtomicBool,
}

/// A change recovery makes to the value at one key ([`LeafMap::redo`]): run on the value,
/// or on a default one when the key has none; a value it leaves vacant leaves the map.
pub type Redo<V> = Box<dyn FnOnce(&mut V) + Send>;

/// A resident leaf of a paged map, as the pool's clock holds it: weakly, so a dropped
/// table's leaves and page file are not kept alive by the clock.
struct ResidentLeaf<V> {
    leaf: Weak<Mutex<Leaf<V>>>,
    paging: Weak<Paging>,
}

impl<V: PageValue + Default + Send + 'static> Resident for ResidentLeaf<V> {
    fn is_gone(&self) -> bool {
        let (Some(leaf), Some(_)) = (self.leaf.upgrade(), self.paging.upgrade()) else { return true };
        leaf.try_lock().is_some_and(|leaf| leaf.page.evicted)
    }

    fn try_evict(&self, pool: &BufferPool) -> Eviction {
        let (Some(leaf), Some(paging)) = (self.leaf.upgrade(), self.paging.upgrade()) else { return Eviction::Gone };
        let Some(mut leaf) = leaf.try_lock() else { return Eviction::Keep };
        if leaf.page.evicted {
            return Eviction::Gone;
        }
        if leaf.page.referenced {
            leaf.page.referenced = false;
            return Eviction::Keep;
        }
        let was_dirty = leaf.page.block.is_none();
        if was_dirty && keep_changes(&mut leaf, pool) {
            pool.counters.evictions_kept.fetch_add(1, Ordering::Relaxed);
            return Eviction::Evicted;
        }
        if was_dirty {
            // Written whole below: the base is no longer needed to read it back.
            forget_base(&mut leaf, &paging);
            match write_leaf(&leaf, &paging) {
                Ok((addr, stable)) => {
                    leaf.page.block = Some(addr);
                    leaf.page.block_epoch = pool.epoch();
                    leaf.page.stable = stable;
                    leaf.page.block_entries = leaf.len() as u64;
                }
                Err(e) => {
                    // The leaf stays resident and dirty; the pool stays over its bound
                    // until a write succeeds. Nothing is lost: the log holds every commit.
                    tracing::error!(file = %paging.file.path().display(), error = %e, "evicting a leaf failed; it stays in memory");
                    return Eviction::Keep;
                }
            }
        }
        drop_entries(&mut leaf, pool, was_dirty);
        Eviction::Evicted
    }
}

/// Most of the pool the changes evicted leaves keep in memory ([`Leaf::kept`]) may take, as a
/// fraction: past it, a dirty leaf is evicted by writing it whole. InnoDB lets dirty pages
/// fill up to `innodb_max_dirty_pages_pct` (90 %) of its pool; half leaves the other half
/// for the leaves reads use.
pub const KEPT_SHARE_OF_POOL: (u64, u64) = (1, 2);

/// Bytes a kept change holds besides its key and its value's own allocations.
const KEPT_ENTRY_OVERHEAD_BYTES: u64 = 16;

/// Evicts a dirty leaf that has a base ([`LeafPage::base`]) without writing it: its entries
/// go, but the changed ones, which it keeps in memory. Only when that frees at least half
/// of what the leaf holds and the pool has room for kept changes
/// ([`KEPT_SHARE_OF_POOL`]); `false` (and nothing done) otherwise.
fn keep_changes<V: PageValue + Default>(leaf: &mut Leaf<V>, pool: &BufferPool) -> bool {
    if leaf.page.base.is_none() {
        return false;
    }
    let mut bytes = LEAF_OVERHEAD_BYTES;
    for key in &leaf.page.touched {
        bytes += key.len() as u64 + KEPT_ENTRY_OVERHEAD_BYTES + std::mem::size_of::<(Box<[u8]>, Option<V>)>() as u64;
        if let Ok(i) = leaf.search(key) {
            bytes += leaf.values[i].heap_bytes() as u64;
        }
    }
    if bytes.saturating_mul(2) > leaf.page.charged || !pool.try_keep(bytes, KEPT_SHARE_OF_POOL) {
        return false;
    }
    let touched = std::mem::take(&mut leaf.page.touched);
    let mut kept = Vec::with_capacity(touched.len());
    for key in touched {
        let value = leaf.search(&key).ok().map(|i| std::mem::take(&mut leaf.values[i]));
        kept.push((key, value));
    }
    leaf.kept = kept;
    leaf.page.kept_charged = bytes;
    leaf.page.kept_len = leaf.len() as u64;
    drop_entries(leaf, pool, true);
    true
}

/// The last step of an eviction: a leaf whose block holds it (written just now if it was
/// `was_dirty`), or whose base and kept changes do, gives up its entries and their bytes in
/// the pool.
fn drop_entries<V>(leaf: &mut Leaf<V>, pool: &BufferPool, was_dirty: bool) {
    // A clean leaf reads its touched keys back from its delta record.
    leaf.page.touched = Vec::new();
    leaf.keys = Vec::new();
    leaf.ends = Vec::new();
    leaf.values = Vec::new();
    leaf.page.evicted = true;
    leaf.page.heap = 0;
    pool.release(std::mem::take(&mut leaf.page.charged), was_dirty);
}

/// A leaf's block is no longer its image. A stable block may be named by a durable
/// checkpoint (or one being written): it is retired, free once a checkpoint that does not
/// name it is durable. An unstable one (eviction's) is named by none: its space is free at
/// once, so that a leaf evicted, changed and evicted again between checkpoints reuses it
/// rather than growing the file.
fn release_block(paging: &Paging, block: BlockAddr, stable: bool) {
    if stable { paging.file.retire(block) } else { paging.file.free_unnamed(block) }
}

/// A leaf no longer needs its base (it is written whole, split or removed): the base is
/// retired, its delta record released, and no key is touched.
fn forget_base<V>(leaf: &mut Leaf<V>, paging: &Paging) {
    if let Some(base) = leaf.page.base.take() {
        paging.file.retire(base);
        if let Some(delta) = leaf.page.delta.take() {
            paging.file.release_delta(delta);
        }
        leaf.page.touched = Vec::new();
    }
}

/// Applies a delta record's entries (`docs/page-format.md`, "Delta blocks") to a leaf just
/// read from the record's base block; the keys become the leaf's touched keys.
fn apply_delta<V: PageValue + Default>(leaf: &mut Leaf<V>, entries: &[u8]) -> Result<(), PageError> {
    let mut reader = Reader::new(entries);
    let mut touched: Vec<Box<[u8]>> = Vec::new();
    while !reader.is_empty() {
        let key = reader.bytes()?;
        if !leaf.covers(key) || touched.last().is_some_and(|before| **before >= *key) {
            return Err(PageError::Malformed("a delta record's keys out of order or out of its leaf's range"));
        }
        match (reader.u8()?, leaf.search(key)) {
            (DELTA_PUT, found) => {
                let value = V::decode(&mut reader)?;
                match found {
                    Ok(i) => leaf.values[i] = value,
                    Err(i) => leaf.insert_at(i, key, value),
                }
            }
            (DELTA_REMOVED, Ok(i)) => leaf.remove_at(i),
            (DELTA_REMOVED, Err(_)) => {}
            _ => return Err(PageError::Malformed("a delta entry's operation is neither 0 nor 1")),
        }
        touched.push(key.into());
    }
    leaf.page.touched = touched;
    Ok(())
}

/// Whether a leaf's delta record lies in a block mostly given up by the leaves that used it
/// ([`DELTA_BLOCK_LIVE_MIN`]): the checkpoint then writes the record again elsewhere.
fn delta_block_sparse(paging: &Paging, delta: Option<DeltaRef>) -> bool {
    delta.is_some_and(|d| {
        let (live, total) = paging.file.delta_block_use(d);
        live * DELTA_BLOCK_LIVE_MIN.1 < total * DELTA_BLOCK_LIVE_MIN.0
    })
}

/// A delta copy's record entries (`docs/page-format.md`, "Delta blocks"), each touched key
/// with what `entry` writes for its value (removed when it writes nothing), how many entries
/// the leaf then holds, and whether every value reads back as it was given.
fn delta_entries<V: PageValue>(copied: &Copied<V>, entry: &mut impl FnMut(&[u8], V, &mut Vec<u8>) -> bool) -> (Vec<u8>, u64, bool) {
    let mut out = Vec::new();
    let mut scratch = Vec::new();
    let (mut present, mut exact) = (0, true);
    let mut reader = Reader::new(&copied.image);
    while !reader.is_empty() {
        let key = reader.bytes().expect("an image this map encoded decodes");
        put_bytes(&mut out, key);
        if reader.u8().expect("an image this map encoded decodes") == DELTA_PUT {
            let value = V::decode(&mut reader).expect("an image this map encoded decodes");
            scratch.clear();
            exact &= entry(key, value, &mut scratch);
            if scratch.is_empty() {
                out.push(DELTA_REMOVED);
            } else {
                // `entry` wrote the key as an image entry does, then the value.
                let mut prefix = Vec::new();
                put_bytes(&mut prefix, key);
                debug_assert!(scratch.starts_with(&prefix), "an entry is written key first");
                out.push(DELTA_PUT);
                out.extend_from_slice(&scratch[prefix.len()..]);
                present += 1;
            }
        } else {
            out.push(DELTA_REMOVED);
        }
    }
    (out, copied.untouched + present, exact)
}

/// Appends one key of a delta copy ([`Copied::delta_of`]): the key, then 1 and its value, or
/// 0 when the leaf has no entry at it. `true` when a value went.
fn put_delta_copy<V: PageValue>(image: &mut Vec<u8>, key: &[u8], value: Option<&V>) -> bool {
    put_bytes(image, key);
    match value {
        Some(value) => {
            image.push(DELTA_PUT);
            value.encode(image);
            true
        }
        None => {
            image.push(DELTA_REMOVED);
            false
        }
    }
}

/// A leaf on disk with kept changes ([`Leaf::kept`]) no longer holds them (a block holds
/// them now, or the leaf is gone): their memory goes back to the pool.
fn release_kept<V>(leaf: &mut Leaf<V>, pool: &BufferPool) {
    leaf.kept = Vec::new();
    pool.unkeep(std::mem::take(&mut leaf.page.kept_charged));
}

/// Adds `key` to a leaf's ascending touched keys ([`LeafPage::touched`]) unless it is there.
fn note_touched(touched: &mut Vec<Box<[u8]>>, key: &[u8]) {
    if let Err(at) = touched.binary_search_by(|k| (**k).cmp(key)) {
        touched.insert(at, key.into());
    }
}

/// Writes `leaf`'s image to a new block of its page file; `true` with it when the block is
/// stable.
fn write_leaf<V: PageValue>(leaf: &Leaf<V>, paging: &Paging) -> std::io::Result<(BlockAddr, bool)> {
    let mut block = vec![0; BLOCK_HEADER_BYTES];
    leaf.encode_image(&mut block);
    let stable = leaf.values.iter().all(PageValue::is_stable);
    let header = BlockHeader { kind: V::KIND, flags: if stable { FLAG_STABLE } else { 0 }, index: paging.index };
    write_block(paging, &mut block, header).map(|addr| (addr, stable))
}

/// Writes a block (eviction's or a checkpoint's) to the page file, counted in the pool's
/// `pages_written` and `bytes_written`.
fn write_block(paging: &Paging, block: &mut Vec<u8>, header: BlockHeader) -> std::io::Result<BlockAddr> {
    let addr = paging.file.write(block, header)?;
    paging.pool.counters.pages_written.fetch_add(1, Ordering::Relaxed);
    paging.pool.counters.bytes_written.fetch_add(block.len() as u64, Ordering::Relaxed);
    Ok(addr)
}

/// A leaf a checkpoint must write: its entries from where the checkpoint stands, copied under
/// its mutex as a page image, and what it needs to know about the leaf afterwards.
struct Copied<V> {
    leaf: LeafRef<V>,
    /// The copy starts at the leaf's `low`: a stable image of it is the whole leaf.
    whole: bool,
    changes: u64,
    high: Option<Box<[u8]>>,
    image: Vec<u8>,
    /// The leaf was on disk and read in only to be copied.
    on_disk: bool,
    /// The copy is of the leaf's touched keys only, to be written as a delta record against
    /// this stable block: `image` holds each touched key, a byte 1 and its value if the leaf
    /// has it, else a byte 0.
    delta_of: Option<BlockAddr>,
    /// Entries of the leaf the copy leaves out (untouched ones, the same as the block's).
    untouched: u64,
}

/// Delta records a checkpoint has made and not yet written: written together into one
/// delta block once they reach [`DELTA_BLOCK_BYTES`], or at the walk's end.
struct PendingDeltas<V> {
    records: Vec<PendingDelta<V>>,
    bytes: usize,
}

struct PendingDelta<V> {
    /// Where the leaf is in the directory being built.
    at: usize,
    copied: Copied<V>,
    entries: Vec<u8>,
    exact: bool,
}

/// Bytes of delta records a checkpoint gathers before it writes them as one delta block: a
/// few dozen leaves' changes in one write, and a block that a few leaves' later rewrites do
/// not pin for long (a block is free once no leaf uses a record in it).
pub const DELTA_BLOCK_BYTES: usize = 64 << 10;

/// A checkpoint writes a leaf as a delta record against its stable block while its keys
/// changed since that block are at most this share of its entries (numerator,
/// denominator); past it, it writes the leaf whole, which becomes its new base. The records
/// are cumulative (each holds every change since the base), so this bounds a record's size
/// against the base's and what reading the leaf back applies.
pub const DELTA_SHARE_OF_LEAF: (usize, usize) = (1, 4);

/// A delta block whose records in use hold less than this share of it (numerator,
/// denominator) has its records moved by the next checkpoint that meets their leaves, so that
/// the block can be freed: what a leaf's old record leaves behind is bounded.
pub const DELTA_BLOCK_LIVE_MIN: (u64, u64) = (1, 2);

/// A walk's place: where the next step starts, and where the walk ends.
#[derive(Debug, Clone)]
pub struct Walk {
    /// Ascending: the lower bound of what is left; descending: the upper bound.
    next: Bound<Vec<u8>>,
    /// Ascending: the upper bound; descending: the lower bound.
    end: Bound<Vec<u8>>,
    order: ScanOrder,
    done: bool,
}

impl Walk {
    /// A walk over `[lower, upper]` (as the bounds say) in `order`.
    #[must_use]
    pub fn new(lower: Bound<&[u8]>, upper: Bound<&[u8]>, order: ScanOrder) -> Walk {
        let (next, end) = match order {
            ScanOrder::Ascending => (lower, upper),
            ScanOrder::Descending => (upper, lower),
        };
        Walk { next: next.map(<[u8]>::to_vec), end: end.map(<[u8]>::to_vec), order, done: false }
    }

    #[must_use]
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Visits the entries of `leaf` at `indices` (in the walk's order) until `visit` says
    /// stop or the walk's end is passed, and records where the walk stands then. `true` when
    /// neither happened: the walk goes on to the next leaf.
    fn visit_leaf<V>(&mut self, leaf: &Leaf<V>, indices: impl Iterator<Item = usize>, visit: &mut impl FnMut(&[u8], &V) -> bool) -> bool {
        for i in indices {
            let key = leaf.key(i);
            if self.past_end(key) {
                self.done = true;
                return false;
            }
            if !visit(key, &leaf.values[i]) {
                self.next = Bound::Excluded(key.to_vec());
                return false;
            }
        }
        true
    }

    /// Whether `key` lies past the walk's end.
    fn past_end(&self, key: &[u8]) -> bool {
        match (self.order, &self.end) {
            (_, Bound::Unbounded) => false,
            (ScanOrder::Ascending, Bound::Included(e)) => key > e.as_slice(),
            (ScanOrder::Ascending, Bound::Excluded(e)) => key >= e.as_slice(),
            (ScanOrder::Descending, Bound::Included(e)) => key < e.as_slice(),
            (ScanOrder::Descending, Bound::Excluded(e)) => key <= e.as_slice(),
        }
    }
}

/// A place kept between calls of [`LeafMap::with_near`]: the leaf used last, so keys that
/// follow each other are found without a search from the top.
pub struct Finger<V> {
    leaf: Option<LeafRef<V>>,
    /// Where in that leaf the last key was: the next one is most often right after it.
    at: usize,
}

impl<V> Default for Finger<V> {
    fn default() -> Self {
        Finger { leaf: None, at: 0 }
    }
}

impl<V: Vacancy + PageValue + Send + 'static> Default for LeafMap<V> {
    fn default() -> Self {
        LeafMap::new()
    }
}

impl<V> Drop for LeafMap<V> {
    /// A paged map's resident leaves give their bytes back to the pool.
    fn drop(&mut self) {
        let Some(paging) = &self.paging else { return };
        for entry in &self.leaves {
            let mut leaf = entry.value().lock();
            if !leaf.page.evicted {
                leaf.page.evicted = true;
                paging.pool.release(std::mem::take(&mut leaf.page.charged), leaf.page.block.is_none());
            } else if leaf.page.kept_charged > 0 {
                // On disk with kept changes: they go with the map.
                release_kept(&mut leaf, &paging.pool);
            }
        }
    }
}

impl<V: Vacancy + PageValue + Send + 'static> LeafMap<V> {
    /// An empty map: one leaf covering every key.
    #[must_use]
    pub fn new() -> LeafMap<V> {
        LeafMap::with_paging(None)
    }

    fn with_paging(paging: Option<Arc<Paging>>) -> LeafMap<V> {
        let leaves = SkipMap::new();
        let first: Box<[u8]> = Box::default();
        leaves.insert(first.clone(), Arc::new(Mutex::new(Leaf::new(first, None))));
        LeafMap { leaves, len: AtomicU64::new(0), paging, redo: Mutex::default(), redo_pending: AtomicU64::new(0), all_on_disk: AtomicBool::new(false) }
    }

    /// An empty paged map: its leaves leave memory when `paging`'s pool needs room.
    #[must_use]
    pub fn paged(paging: Arc<Paging>) -> LeafMap<V> {
        let map = LeafMap::with_paging(Some(paging));
        let first = Arc::clone(map.leaves.front().expect("a map has a leaf").value());
        map.admit_new(&mut first.lock(), &first);
        map
    }

    /// An empty map of another kind, paged as this one is (its page file and pool) as index
    /// `index` of their table, or in memory when this one is: an index added to a table
    /// whose other maps this one is.
    #[must_use]
    pub fn sibling<W: Vacancy + PageValue + Send + 'static>(&self, index: u32) -> LeafMap<W> {
        match &self.paging {
            Some(p) => LeafMap::paged(Arc::new(Paging { file: Arc::clone(&p.file), pool: Arc::clone(&p.pool), index })),
            None => LeafMap::new(),
        }
    }

    /// Drops a map no checkpoint has named or will name (an index whose build failed),
    /// giving the blocks eviction wrote of its leaves back to the page file.
    pub fn discard(self) {
        let Some(paging) = &self.paging else { return };
        for entry in &self.leaves {
            let mut leaf = entry.value().lock();
            if let Some(block) = leaf.page.block.take() {
                release_block(paging, block, leaf.page.stable);
                if !leaf.page.evicted {
                    // Resident without a block is dirty, as the drop below counts it.
                    paging.pool.dirtied();
                }
            }
            if let Some(base) = leaf.page.base.take() {
                paging.file.retire(base);
            }
            if let Some(delta) = leaf.page.delta.take() {
                paging.file.release_delta(delta);
            }
        }
    }

    /// A paged map of `len` entries whose leaves are all on disk: `leaves` gives each leaf's
    /// lowest key and block, in key order, the first at the empty key (a checkpoint's
    /// directory of the map).
    ///
    /// # Panics
    /// If `leaves` does not start at the empty key or is not in ascending order.
    #[must_use]
    pub fn on_disk(paging: Arc<Paging>, leaves: &[DirectoryLeaf]) -> LeafMap<V> {
        assert!(leaves.first().is_some_and(|l| l.low.is_empty()), "a map's first leaf starts at the empty key");
        let map = SkipMap::new();
        let highs = leaves.iter().skip(1).map(|l| Some(l.low.clone())).chain([None]);
        for (l, high) in leaves.iter().zip(highs) {
            assert!(high.as_ref().is_none_or(|high| *high > l.low), "a map's leaves ascend");
            let mut leaf = Leaf::new(l.low.clone(), high);
            leaf.page = LeafPage { evicted: true, block: Some(l.block), stable: true, block_entries: l.entries, delta: l.delta, ..LeafPage::default() };
            map.insert(l.low.clone(), Arc::new(Mutex::new(leaf)));
        }
        let len = leaves.iter().map(|l| l.entries).sum();
        LeafMap {
            leaves: map,
            len: AtomicU64::new(len),
            paging: Some(paging),
            redo: Mutex::default(),
            redo_pending: AtomicU64::new(0),
            all_on_disk: AtomicBool::new(true),
        }
    }

    /// Every leaf's lowest key and block, in key order, when every leaf is on disk or
    /// written since it last changed; `None` otherwise (a test's look at where a map stands).
    #[cfg(test)]
    fn directory(&self) -> Option<Vec<DirectoryLeaf>> {
        self.leaves
            .iter()
            .map(|e| {
                let leaf = e.value().lock();
                leaf.page.block.map(|block| DirectoryLeaf { low: leaf.low.clone(), block, delta: leaf.page.delta, entries: leaf.page.block_entries })
            })
            .collect()
    }

    /// A paged map's leaf just made (split off, or the first): resident and charged.
    fn admit_new(&self, leaf: &mut Leaf<V>, leaf_ref: &LeafRef<V>) {
        let Some(paging) = &self.paging else { return };
        leaf.recount_heap();
        leaf.page.charged = leaf.resident_bytes();
        let dirty = leaf.page.block.is_none();
        paging.pool.admit(Box::new(ResidentLeaf { leaf: Arc::downgrade(leaf_ref), paging: Arc::downgrade(paging) }), leaf.page.charged, dirty);
    }

    /// A leaf was just locked to be used: mark it used, read it in if it is on disk, and
    /// apply recovery's changes waiting for it ([`LeafMap::redo`]). Those may split it: the
    /// caller checks that it still covers the key it wants.
    fn admit(&self, leaf: &mut LockedLeaf<V>) {
        if let Some(paging) = &self.paging {
            leaf.page.referenced = true;
            self.read_in(paging, leaf);
            self.apply_redo(leaf);
        }
    }

    /// Reads a locked leaf in if it is on disk, without marking it used: the clock's next
    /// pass may evict it. What a checkpoint copies, so that its walk does not push out the
    /// leaves queries use (InnoDB's scans enter its LRU list at the old end likewise).
    fn read_in(&self, paging: &Paging, leaf: &mut LockedLeaf<V>) {
        paging.pool.counters.read_requests.add(1);
        if !leaf.page.evicted {
            return;
        }
        if self.all_on_disk.load(Ordering::Acquire) {
            // (The leaf's mutex is held: the queue's lock comes after it.)
            let _queue = self.redo.lock();
            self.all_on_disk.store(false, Ordering::Release);
        }
        let addr = leaf.page.block.or(leaf.page.base).expect("an evicted leaf has a block or a base");
        // A block that does not read back is a damaged disk: stop rather than answer without
        // the rows it holds (InnoDB stops on a corrupt page too).
        let block = paging.file.read(addr).unwrap_or_else(|e| panic!("reading a leaf back: {e}"));
        let header = block.header();
        assert!(
            header.kind == V::KIND && header.index == paging.index,
            "{}: block at {addr} is of kind {} index {}, expected kind {} index {}",
            paging.file.path().display(),
            header.kind,
            header.index,
            V::KIND,
            paging.index
        );
        let image = Leaf::<V>::decode_image(block.payload()).unwrap_or_else(|e| panic!("{}: block at {addr}: {e}", paging.file.path().display()));
        // The leaf's range may have grown since (an empty neighbour given to it), never shrunk.
        let within = image.low == leaf.low && leaf.high.as_deref().is_none_or(|high| image.high.as_deref().is_some_and(|h| h <= high));
        assert!(within, "{}: block at {addr} holds another range than its leaf", paging.file.path().display());
        leaf.keys = image.keys;
        leaf.ends = image.ends;
        leaf.values = image.values;
        if leaf.page.kept_charged > 0 {
            // The base's image with the changes the leaf kept: the keys stay touched.
            let kept = std::mem::take(&mut leaf.kept);
            paging.pool.unkeep(std::mem::take(&mut leaf.page.kept_charged));
            let mut touched = Vec::with_capacity(kept.len());
            for (key, value) in kept {
                match (leaf.search(&key), value) {
                    (Ok(i), Some(value)) => leaf.values[i] = value,
                    (Ok(i), None) => leaf.remove_at(i),
                    (Err(i), Some(value)) => leaf.insert_at(i, &key, value),
                    (Err(_), None) => {}
                }
                touched.push(key);
            }
            leaf.page.touched = touched;
        } else if let Some(delta) = leaf.page.delta {
            let entries = paging.file.read_delta(delta, addr.unit, paging.index).unwrap_or_else(|e| panic!("reading a leaf's delta back: {e}"));
            apply_delta(leaf, &entries).unwrap_or_else(|e| panic!("{}: delta record at {}+{}: {e}", paging.file.path().display(), delta.block, delta.at));
        }
        leaf.page.evicted = false;
        paging.pool.counters.reads.fetch_add(1, Ordering::Relaxed);
        let leaf_ref = Arc::clone(ArcMutexGuard::mutex(leaf));
        self.admit_new(leaf, &leaf_ref);
    }

    /// After a call: if the pool is over its bound, make room (no leaf of this call is held).
    fn make_room(&self) {
        if let Some(paging) = &self.paging {
            paging.pool.make_room();
        }
    }

    /// A locked leaf is about to change: its block no longer holds it. A stable block becomes
    /// its base ([`LeafPage::base`]), an unstable one is freed. Counted, for
    /// [`LeafMap::write_stable`]. The caller then says which entry changes
    /// ([`LeafMap::touch_at`], [`LeafMap::touch_key`]), or that the leaf leaves its base
    /// behind ([`LeafMap::drop_base`]).
    fn will_change(&self, leaf: &mut Leaf<V>) {
        let Some(paging) = &self.paging else { return };
        leaf.page.changes += 1;
        if let Some(block) = leaf.page.block.take() {
            debug_assert!(leaf.page.base.is_none(), "a leaf with a block of its own has no base");
            debug_assert!(leaf.page.touched.is_empty() || leaf.page.delta.is_some(), "a leaf with a block touched only its record's keys");
            if leaf.page.stable {
                leaf.page.base = Some(block);
            } else {
                debug_assert!(leaf.page.delta.is_none(), "only a stable block has a delta record");
                paging.file.free_unnamed(block);
            }
            paging.pool.dirtied();
        }
    }

    /// The entry at `i` of a locked leaf changes (or leaves): noted against the leaf's base.
    fn touch_at(leaf: &mut Leaf<V>, i: usize) {
        if leaf.page.base.is_some() {
            let (start, end) = (leaf.start(i), leaf.ends[i] as usize);
            note_touched(&mut leaf.page.touched, &leaf.keys[start..end]);
        }
    }

    /// The entry at `key` of a locked leaf changes, arrives or leaves: noted against the
    /// leaf's base.
    fn touch_key(leaf: &mut Leaf<V>, key: &[u8]) {
        if leaf.page.base.is_some() {
            note_touched(&mut leaf.page.touched, key);
        }
    }

    /// A locked leaf changes in a way its base cannot follow (a split, a removal): the base is
    /// retired and the leaf is dirty throughout.
    fn drop_base(&self, leaf: &mut Leaf<V>) {
        if let Some(paging) = &self.paging {
            forget_base(leaf, paging);
        }
    }

    /// A paged leaf splits: counted for `Quill_buffer_pool_leaf_splits`.
    fn count_split(&self) {
        if let Some(paging) = &self.paging {
            paging.pool.counters.leaf_splits.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A locked leaf changed: charge the pool the difference.
    fn recharge(&self, leaf: &mut Leaf<V>) {
        let Some(paging) = &self.paging else { return };
        let now = leaf.resident_bytes();
        paging.pool.charge(leaf.page.charged, now);
        leaf.page.charged = now;
    }

    /// How many entries the map holds.
    pub fn len(&self) -> u64 {
        self.len.load(Ordering::Relaxed)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The leaf covering `key`, locked, in memory and marked used.
    fn leaf_for(&self, key: &[u8]) -> LockedLeaf<V> {
        loop {
            let mut leaf = self.leaf_unadmitted(key);
            self.admit(&mut leaf);
            if leaf.covers(key) {
                return leaf;
            }
            // Recovery's changes split it on the way in: the part for `key` is published.
        }
    }

    /// The leaf holding the greatest keys below `key` (exclusive), locked; `None` when
    /// `key` is the empty key.
    fn leaf_below(&self, key: &[u8]) -> Option<LockedLeaf<V>> {
        loop {
            let entry = self.leaves.upper_bound(Bound::Excluded(key))?;
            let mut leaf = entry.value().lock_arc();
            if leaf.high.as_deref().is_none_or(|high| high >= key) {
                self.admit(&mut leaf);
                // (Unless recovery's changes split it on the way in: look again.)
                if leaf.high.as_deref().is_none_or(|high| high >= key) {
                    return Some(leaf);
                }
            }
        }
    }

    /// The last leaf, locked.
    fn last_leaf(&self) -> LockedLeaf<V> {
        loop {
            let entry = self.leaves.back().expect("a map has a leaf");
            let mut leaf = entry.value().lock_arc();
            if leaf.high.is_none() {
                self.admit(&mut leaf);
                if leaf.high.is_none() {
                    return leaf;
                }
            }
        }
    }

    /// Run `f` on the value at index `i` of a locked leaf; then remove the entry if `f` left
    /// it vacant (and the leaf, after unlocking it, if that left it empty), or split the leaf
    /// if an entry added for `f` took it over its bound.
    fn run<R>(&self, mut leaf: LockedLeaf<V>, i: usize, f: impl FnOnce(&mut V) -> R) -> R {
        self.will_change(&mut leaf);
        Self::touch_at(&mut leaf, i);
        let heap_before = if self.paging.is_some() { leaf.values[i].heap_bytes() as u64 } else { 0 };
        let result = f(&mut leaf.values[i]);
        if self.paging.is_some() {
            // A vacant value leaves with its entry below: it holds nothing from then on.
            let heap_after = if leaf.values[i].is_vacant() { 0 } else { leaf.values[i].heap_bytes() as u64 };
            leaf.page.heap = leaf.page.heap + heap_after - heap_before;
        }
        if leaf.values[i].is_vacant() {
            leaf.remove_at(i);
            self.len.fetch_sub(1, Ordering::Relaxed);
            self.recharge(&mut leaf);
            self.remove_if_empty(leaf);
        } else if leaf.len() > LEAF_ENTRIES_MAX || (leaf.len() > LEAF_APPEND_FILL && i == leaf.len() - 1 && leaf.high.is_none()) {
            self.split(leaf, i);
        } else {
            self.recharge(&mut leaf);
            drop(leaf);
        }
        self.make_room();
        result
    }

    /// Run `f` on the value at `key`, if there is one, under its leaf's mutex.
    pub fn with<R>(&self, key: &[u8], f: impl FnOnce(&mut V) -> R) -> Option<R> {
        let leaf = self.leaf_for(key);
        let Ok(i) = leaf.search(key) else {
            drop(leaf);
            self.make_room();
            return None;
        };
        Some(self.run(leaf, i, f))
    }

    /// Run `f` on the value at `key`, if there is one, under its leaf's mutex, changing
    /// nothing (a paged leaf read so stays clean).
    pub fn read<R>(&self, key: &[u8], f: impl FnOnce(&V) -> R) -> Option<R> {
        let leaf = self.leaf_for(key);
        let result = leaf.search(key).ok().map(|i| f(&leaf.values[i]));
        drop(leaf);
        self.make_room();
        result
    }

    /// The leaf covering `key`, locked: `finger`'s if it does, else found by a search; the
    /// finger keeps it for next time. The finger's leaf is unlocked before another is locked
    /// (one leaf at a time).
    fn leaf_near(&self, finger: &mut Finger<V>, key: &[u8]) -> LockedLeaf<V> {
        let near = finger.leaf.take().map(|leaf| leaf.lock_arc()).filter(|leaf| leaf.covers(key)).and_then(|mut leaf| {
            self.admit(&mut leaf);
            leaf.covers(key).then_some(leaf)
        });
        let leaf = near.unwrap_or_else(|| self.leaf_for(key));
        finger.leaf = Some(Arc::clone(ArcMutexGuard::mutex(&leaf)));
        leaf
    }

    /// As [`LeafMap::with`], starting from the leaf `finger` used last.
    pub fn with_near<R>(&self, finger: &mut Finger<V>, key: &[u8], f: impl FnOnce(&mut V) -> R) -> Option<R> {
        let leaf = self.leaf_near(finger, key);
        let Some(i) = Self::find_near(&leaf, finger, key) else {
            drop(leaf);
            self.make_room();
            return None;
        };
        Some(self.run(leaf, i, f))
    }

    /// As [`LeafMap::read`], starting from the leaf `finger` used last.
    pub fn read_near<R>(&self, finger: &mut Finger<V>, key: &[u8], f: impl FnOnce(&V) -> R) -> Option<R> {
        let leaf = self.leaf_near(finger, key);
        let result = Self::find_near(&leaf, finger, key).map(|i| f(&leaf.values[i]));
        drop(leaf);
        self.make_room();
        result
    }

    /// Where `key` is in the finger's leaf: most often at the finger's place or right after
    /// it, else found by a search. The finger keeps the place found.
    fn find_near(leaf: &Leaf<V>, finger: &mut Finger<V>, key: &[u8]) -> Option<usize> {
        let hint = [finger.at, finger.at + 1].into_iter().find(|&i| i < leaf.len() && leaf.key(i) == key);
        let i = hint.or_else(|| leaf.search(key).ok())?;
        finger.at = i;
        Some(i)
    }

    /// Run `f` on the value at `key`, a vacant one inserted first if there is none.
    pub fn with_or_insert<R>(&self, key: &[u8], f: impl FnOnce(&mut V) -> R) -> R {
        let mut leaf = self.leaf_for(key);
        let i = match leaf.search(key) {
            Ok(i) => i,
            Err(i) => {
                leaf.insert_at(i, key, V::default());
                self.len.fetch_add(1, Ordering::Relaxed);
                i
            }
        };
        self.run(leaf, i, f)
    }

    /// As [`LeafMap::with_or_insert`], starting from the leaf `finger` used last; a key above
    /// every key of that leaf (an ascending load's) goes at its end with no search.
    pub fn with_or_insert_near<R>(&self, finger: &mut Finger<V>, key: &[u8], f: impl FnOnce(&mut V) -> R) -> R {
        let mut leaf = self.leaf_near(finger, key);
        let at = match leaf.len().checked_sub(1) {
            Some(last) if leaf.key(last) < key => Err(leaf.len()),
            _ => leaf.search(key),
        };
        let i = match at {
            Ok(i) => i,
            Err(i) => {
                leaf.insert_at(i, key, V::default());
                self.len.fetch_add(1, Ordering::Relaxed);
                i
            }
        };
        finger.at = i;
        self.run(leaf, i, f)
    }

    /// Unlock `leaf`; if it was empty (and is not the first leaf), remove it from the map and
    /// give its range to the leaf before it. The two are locked left to right: the one place
    /// two leaves are held at once, always in that order, so no two callers wait on each other
    /// in a cycle. A removed leaf covers nothing (`high == low`), so a caller that found it a
    /// moment earlier looks again.
    fn remove_if_empty(&self, leaf: LockedLeaf<V>) {
        if leaf.len() > 0 || leaf.low.is_empty() || leaf.page.evicted {
            return;
        }
        let low = leaf.low.clone();
        drop(leaf);
        loop {
            let Some(left_entry) = self.leaves.upper_bound(Bound::Excluded(&low[..])) else { return };
            let mut left = left_entry.value().lock_arc();
            match left.high.as_deref() {
                // A leaf split off the left one sits between them now: look again.
                Some(high) if high < &low[..] => continue,
                Some(high) if high == &low[..] => {}
                // The left leaf reaches past `low` already: the leaf is gone.
                _ => return,
            }
            let Some(entry) = self.leaves.get(&low[..]) else { return };
            let mut dead = entry.value().lock_arc();
            if dead.len() > 0 || dead.page.evicted || !dead.covers(&low) {
                return;
            }
            left.high = dead.high.take();
            dead.high = Some(dead.low.clone());
            entry.remove();
            if let Some(paging) = &self.paging {
                // Gone from the map: no block, no bytes; the clock forgets it.
                self.will_change(&mut dead);
                self.drop_base(&mut dead);
                dead.page.evicted = true;
                paging.pool.release(std::mem::take(&mut dead.page.charged), true);
            }
            return;
        }
    }

    /// Split a leaf one entry over its bound ([`LEAF_ENTRIES_MAX`], or [`LEAF_APPEND_FILL`]
    /// for the last leaf). An entry added at the leaf's end (ascending keys: a bulk load)
    /// starts a new leaf alone and leaves this one as full as it was; any other splits it in
    /// half.
    fn split(&self, mut leaf: LockedLeaf<V>, added: usize) {
        let at = if added == leaf.len() - 1 { added } else { leaf.len() / 2 };
        self.drop_base(&mut leaf);
        self.count_split();
        let right = leaf.split_off(at);
        let low = right.low.clone();
        if self.paging.is_some() {
            leaf.recount_heap();
        }
        self.recharge(&mut leaf);
        let right = Arc::new(Mutex::new(right));
        self.admit_new(&mut right.lock(), &right);
        // Published before the left leaf's mutex is released (the module's invariant).
        self.leaves.insert(low, right);
        drop(leaf);
    }

    /// Writes a stable image of the whole map for a checkpoint and returns its directory:
    /// each leaf's lowest key and block, in key order, tiling the key space from the empty
    /// key. A leaf whose block is stable already is named as it is, with no write (the
    /// checkpoint's cost follows the leaves changed, not the map's size); any other leaf's
    /// entries are copied under its mutex, which is then released, and `entry` writes each
    /// one into the new image (or leaves it out) with no leaf held, so it may read other maps
    /// of the table. `entry` returns `true` when what it wrote reads back as the value it was
    /// given, for every view: when every entry of a whole leaf does, and the leaf has not
    /// changed meanwhile, the new block becomes the leaf's own (clean and stable). Blocks
    /// written here are not durable until the page file is synced.
    ///
    /// Concurrent writers, splits and merges are fine: the walk goes from key to key (each
    /// leaf's `high` is where the next starts), so the directory tiles the key space even
    /// where leaves changed shape under it; each image holds the entries from where the walk
    /// stood to the leaf's end.
    ///
    /// # Errors
    /// I/O errors writing a block (every block written before it is a leaf's own or retired,
    /// so nothing is leaked).
    ///
    /// # Panics
    /// On a map without paging.
    pub fn write_stable(&self, entry: impl FnMut(&[u8], V, &mut Vec<u8>) -> bool) -> std::io::Result<Vec<DirectoryLeaf>> {
        self.write_stable_tidying(|_, _| false, entry)
    }

    /// [`LeafMap::write_stable`], first calling `tidy` on each entry of a leaf it copies,
    /// under the leaf's mutex, before the copy: `tidy` may change the value (returning
    /// `true` when it did), or leave it vacant, and the entry then leaves the map. A table
    /// purges the row versions no reader needs any more this way, so that the leaf can be a
    /// stable image (a version's secondary index entries leave with it: `tidy` takes index
    /// leaves, after this leaf, the one order two leaves are held in).
    ///
    /// # Errors
    /// As [`LeafMap::write_stable`].
    ///
    /// # Panics
    /// On a map without paging.
    pub fn write_stable_tidying(
        &self,
        mut tidy: impl FnMut(&[u8], &mut V) -> bool,
        mut entry: impl FnMut(&[u8], V, &mut Vec<u8>) -> bool,
    ) -> std::io::Result<Vec<DirectoryLeaf>> {
        let paging = self.paging.as_ref().expect("only a paged map writes pages");
        // A leaf's stable block does not hold recovery's changes waiting for it: they go in
        // first, or the checkpoint would name blocks without them.
        self.drain_redo();
        let mut directory: Vec<DirectoryLeaf> = Vec::new();
        let mut pending = PendingDeltas { records: Vec::new(), bytes: 0 };
        let mut next: Box<[u8]> = Box::default();
        let written = loop {
            let copied = {
                let mut leaf = self.leaf_unadmitted(&next);
                match leaf.page.block {
                    Some(block) if leaf.page.stable && leaf.low == next && !delta_block_sparse(paging, leaf.page.delta) => {
                        directory.push(DirectoryLeaf { low: next, block, delta: leaf.page.delta, entries: leaf.page.block_entries });
                        match leaf.high.clone() {
                            Some(high) => {
                                next = high;
                                continue;
                            }
                            None => break Ok(()),
                        }
                    }
                    // On disk with its changes kept, few enough for a record: the record is
                    // made from them, with no read of the base.
                    _ if leaf.page.kept_charged > 0
                        && leaf.low == next
                        && leaf.kept.len() * DELTA_SHARE_OF_LEAF.1
                            <= usize::try_from(leaf.page.kept_len).unwrap_or(usize::MAX).max(1) * DELTA_SHARE_OF_LEAF.0 =>
                    {
                        self.tidy_kept(paging, &mut leaf, &mut tidy);
                        let mut image = Vec::new();
                        let mut present = 0;
                        for (key, value) in &leaf.kept {
                            present += u64::from(put_delta_copy(&mut image, key, value.as_ref()));
                        }
                        let leaf_ref = Arc::clone(ArcMutexGuard::mutex(&leaf));
                        let untouched = leaf.page.kept_len - present;
                        Copied {
                            leaf: leaf_ref,
                            whole: true,
                            changes: leaf.page.changes,
                            high: leaf.high.clone(),
                            image,
                            on_disk: true,
                            delta_of: leaf.page.base,
                            untouched,
                        }
                    }
                    _ => {
                        let on_disk = leaf.page.evicted;
                        self.read_in(paging, &mut leaf);
                        let from = leaf.search(&next).unwrap_or_else(|i| i);
                        self.tidy_leaf(&mut leaf, from, &mut tidy);
                        let few = leaf.page.touched.len() * DELTA_SHARE_OF_LEAF.1 <= leaf.len().max(1) * DELTA_SHARE_OF_LEAF.0;
                        let delta_of = leaf.page.stable_block().filter(|_| few && leaf.low == next);
                        let mut image = Vec::new();
                        let mut untouched = 0;
                        if delta_of.is_some() {
                            let mut present = 0;
                            for key in &leaf.page.touched {
                                present += put_delta_copy(&mut image, key, leaf.search(key).ok().map(|i| &leaf.values[i])) as usize;
                            }
                            untouched = (leaf.len() - present) as u64;
                        } else {
                            for i in from..leaf.len() {
                                put_image_entry(&mut image, leaf.key(i), &leaf.values[i]);
                            }
                        }
                        let leaf_ref = Arc::clone(ArcMutexGuard::mutex(&leaf));
                        Copied {
                            leaf: leaf_ref,
                            whole: leaf.low == next,
                            changes: leaf.page.changes,
                            high: leaf.high.clone(),
                            image,
                            on_disk,
                            delta_of,
                            untouched,
                        }
                    }
                }
            };
            let high = copied.high.clone();
            if let Some(base) = copied.delta_of {
                let (entries, count, exact) = delta_entries(&copied, &mut entry);
                directory.push(DirectoryLeaf { low: next, block: base, delta: None, entries: count });
                pending.bytes += crate::page::DELTA_HEADER_BYTES + entries.len();
                pending.records.push(PendingDelta { at: directory.len() - 1, copied, entries, exact });
                if pending.bytes >= DELTA_BLOCK_BYTES
                    && let Err(e) = self.write_pending(paging, &mut pending, &mut directory)
                {
                    break Err(e);
                }
            } else {
                match self.write_copied(paging, &next, copied, &mut entry) {
                    Ok(written) => directory.push(written),
                    Err(e) => break Err(e),
                }
            }
            match high {
                Some(high) => next = high,
                None => break Ok(()),
            }
        };
        // Records not written (after an error) are dropped: nothing refers to them.
        let written = written.and_then(|()| self.write_pending(paging, &mut pending, &mut directory));
        self.make_room();
        written.map(|()| directory)
    }

    /// Writes the pending delta records as one delta block, fills in their directory entries,
    /// and makes each the leaf's own when the leaf is still what was copied and still has the
    /// record's base ([`LeafMap::adopt`]); a record no leaf takes is released at once (the
    /// checkpoint names it; its block is freed once no durable checkpoint does).
    fn write_pending(&self, paging: &Paging, pending: &mut PendingDeltas<V>, directory: &mut [DirectoryLeaf]) -> std::io::Result<()> {
        if pending.records.is_empty() {
            return Ok(());
        }
        let records = std::mem::take(&mut pending.records);
        pending.bytes = 0;
        let refs = {
            let list: Vec<(u64, u32, &[u8])> =
                records.iter().map(|r| (r.copied.delta_of.expect("a pending record has a base").unit, paging.index, &r.entries[..])).collect();
            paging.file.write_deltas(&list)?
        };
        paging.pool.counters.pages_written.fetch_add(records.len() as u64, Ordering::Relaxed);
        // The block's bytes as written, padding to whole units included.
        let block_bytes = refs.first().map_or(0, |r| r.block.bytes() as u64);
        paging.pool.counters.bytes_written.fetch_add(block_bytes, Ordering::Relaxed);
        for (record, delta) in records.into_iter().zip(refs) {
            let dir = &mut directory[record.at];
            dir.delta = Some(delta);
            let base = dir.block;
            let entries = dir.entries;
            let mut leaf = record.copied.leaf.lock();
            let adopt = record.exact && leaf.page.changes == record.copied.changes && leaf.low == dir.low && leaf.page.stable_block() == Some(base);
            if !adopt {
                paging.file.release_delta(delta);
                continue;
            }
            if leaf.page.block.is_none() {
                // Changed since its block: the base with the new record is its image now.
                if leaf.page.kept_charged > 0 {
                    release_kept(&mut leaf, &paging.pool);
                } else {
                    paging.pool.cleaned();
                }
                leaf.page.block = leaf.page.base.take();
            }
            if let Some(old) = leaf.page.delta.replace(delta) {
                paging.file.release_delta(old);
            }
            leaf.page.stable = true;
            leaf.page.block_epoch = paging.pool.epoch();
            leaf.page.block_entries = entries;
            if record.copied.on_disk && !leaf.page.referenced && !leaf.page.evicted {
                drop_entries(&mut leaf, &paging.pool, false);
            }
        }
        Ok(())
    }

    /// [`LeafMap::write_stable_tidying`]'s `tidy` on the kept changes of a locked leaf on disk
    /// ([`Leaf::kept`]): a change is counted, re-charged, and a value left vacant becomes a
    /// removal.
    fn tidy_kept(&self, paging: &Paging, leaf: &mut LockedLeaf<V>, tidy: &mut impl FnMut(&[u8], &mut V) -> bool) {
        let mut heap_change: i64 = 0;
        let mut changed = false;
        let Leaf { kept, page, .. } = &mut **leaf;
        for (key, value) in kept.iter_mut() {
            let Some(v) = value else { continue };
            let before = v.heap_bytes() as i64;
            if !tidy(key, v) {
                continue;
            }
            changed = true;
            if v.is_vacant() {
                heap_change -= before;
                *value = None;
                page.kept_len -= 1;
                self.len.fetch_sub(1, Ordering::Relaxed);
            } else {
                heap_change += v.heap_bytes() as i64 - before;
            }
        }
        if changed {
            leaf.page.changes += 1;
            let after = leaf.page.kept_charged.saturating_add_signed(heap_change);
            paging.pool.recharge_kept(leaf.page.kept_charged, after);
            leaf.page.kept_charged = after;
        }
    }

    /// [`LeafMap::write_stable_tidying`]'s `tidy` on the entries of a locked, resident leaf
    /// from index `from` on: a change gives up the leaf's block first (as any change does),
    /// is charged to the pool, and a value left vacant leaves with its entry. The leaf may be
    /// left empty; the map keeps it (its range is still covered).
    fn tidy_leaf(&self, leaf: &mut LockedLeaf<V>, from: usize, tidy: &mut impl FnMut(&[u8], &mut V) -> bool) {
        let mut changed = false;
        let mut i = from;
        while i < leaf.len() {
            let heap_before = leaf.values[i].heap_bytes() as u64;
            let (start, end) = (leaf.start(i), leaf.ends[i] as usize);
            let Leaf { keys, values, .. } = &mut **leaf;
            if !tidy(&keys[start..end], &mut values[i]) {
                i += 1;
                continue;
            }
            if !changed {
                // Under the same hold of the mutex as the change: no one saw the leaf between.
                self.will_change(leaf);
                changed = true;
            }
            Self::touch_at(leaf, i);
            if leaf.values[i].is_vacant() {
                leaf.page.heap -= heap_before;
                leaf.remove_at(i);
                self.len.fetch_sub(1, Ordering::Relaxed);
            } else {
                leaf.page.heap = leaf.page.heap + leaf.values[i].heap_bytes() as u64 - heap_before;
                i += 1;
            }
        }
        if changed {
            self.recharge(leaf);
        }
    }

    /// Writes the stable image of a leaf [`LeafMap::write_stable`] copied from `low` on, and
    /// makes it the leaf's block when it is all of the leaf, exactly, and still current.
    fn write_copied(
        &self,
        paging: &Paging,
        low: &[u8],
        copied: Copied<V>,
        entry: &mut impl FnMut(&[u8], V, &mut Vec<u8>) -> bool,
    ) -> std::io::Result<DirectoryLeaf> {
        let mut block = vec![0; BLOCK_HEADER_BYTES];
        put_image_range(&mut block, low, copied.high.as_deref());
        let mut exact = copied.whole;
        let mut entries = 0;
        let mut reader = Reader::new(&copied.image);
        while !reader.is_empty() {
            let key = reader.bytes().expect("an image this map encoded decodes");
            let value = V::decode(&mut reader).expect("an image this map encoded decodes");
            let before = block.len();
            exact &= entry(key, value, &mut block);
            entries += u64::from(block.len() > before);
        }
        let addr = write_block(paging, &mut block, BlockHeader { kind: V::KIND, flags: FLAG_STABLE, index: paging.index })?;
        let mut leaf = copied.leaf.lock();
        // The leaf is what was copied if no change came since; its block, if it has one, is
        // an unstable image of it (eviction's, with the versions' own stamps), which the new
        // one replaces. An evicted leaf takes the new block too, so that it stays on disk as
        // a stable image (a row leaf that is one saves the index pass below from reading it).
        // (A stable block with a delta record is replaced too: a checkpoint moving the record
        // out of a sparse delta block may write the leaf whole instead.)
        let adopt =
            exact && leaf.page.changes == copied.changes && *leaf.low == *low && !(leaf.page.block.is_some() && leaf.page.stable && leaf.page.delta.is_none());
        if adopt {
            match leaf.page.block.replace(addr) {
                Some(old) => {
                    release_block(paging, old, leaf.page.stable);
                    if let Some(delta) = leaf.page.delta.take() {
                        paging.file.release_delta(delta);
                        // The record's keys were touched against the old block only.
                        leaf.page.touched = Vec::new();
                    }
                }
                // On disk again since the copy, with its changes kept: the block holds them.
                None if leaf.page.kept_charged > 0 => {
                    release_kept(&mut leaf, &paging.pool);
                }
                None => paging.pool.cleaned(),
            }
            forget_base(&mut leaf, paging);
            leaf.page.block_epoch = paging.pool.epoch();
            leaf.page.stable = true;
            leaf.page.block_entries = entries;
            // Read in only for this copy and not used since: back to disk, where its new
            // block holds it exactly (the eviction costs no write).
            if copied.on_disk && !leaf.page.referenced && !leaf.page.evicted {
                drop_entries(&mut leaf, &paging.pool, false);
            }
        } else {
            // Only the checkpoint names it: free once a later one does not.
            paging.file.retire(addr);
        }
        Ok(DirectoryLeaf { low: low.into(), block: addr, delta: None, entries })
    }

    /// Ends the pool's current epoch and returns it, for [`LeafMap::stable_since`]; `None`
    /// on a map without paging.
    pub fn next_epoch(&self) -> Option<u64> {
        self.paging.as_ref().map(|paging| paging.pool.next_epoch())
    }

    /// Whether the leaf covering `key` is a stable image that has not changed since before
    /// `epoch` ended ([`LeafMap::next_epoch`]): it has a [`FLAG_STABLE`] block, taken at or
    /// before `epoch`, and no change since (a change gives the block up first). Its values
    /// then are what they were all along from before `epoch` ended. No I/O: the leaf is looked
    /// at where it is, resident or on disk.
    pub fn stable_since(&self, key: &[u8], epoch: u64) -> bool {
        if self.paging.is_none() {
            return false;
        }
        let leaf = self.leaf_unadmitted(key);
        leaf.page.block.is_some() && leaf.page.stable && leaf.page.block_epoch <= epoch
    }

    /// A hint that the leaf covering `key` will be used soon: if it is on disk, the OS is asked
    /// to start reading its block ([`PageFile::will_need`]). Reads nothing itself, and does
    /// not mark the leaf used.
    pub fn read_ahead(&self, key: &[u8]) {
        let Some(paging) = &self.paging else { return };
        let leaf = self.leaf_unadmitted(key);
        if let (true, Some(block)) = (leaf.page.evicted, leaf.page.block.or(leaf.page.base)) {
            paging.file.will_need(block);
        }
    }

    /// Recovery's change `f` to the value at `key` (see [`Redo`]). With `lazy`, a change
    /// whose leaf is on disk waits for it ([`LeafMap::redo_pending`]): it is applied, with the
    /// others waiting in the leaf's range, in key order, when the leaf is next read in for any
    /// use, or by [`LeafMap::drain_redo`]; a later change to the same key replaces it (each
    /// change gives the whole value the key ends with). Otherwise, and for a leaf in memory,
    /// `f` runs now. So start-up reads no leaf for the changes it replays, as InnoDB applies
    /// its redo to a page when the page is read.
    ///
    /// Invariant: a waiting change's leaf is on disk (it is queued under the leaf's mutex,
    /// or while no leaf has been read in, `all_on_disk`, and a leaf read in takes its
    /// range's changes under its mutex).
    pub fn redo(&self, key: &[u8], f: Redo<V>, lazy: bool) {
        if lazy && self.paging.is_some() {
            if self.all_on_disk.load(Ordering::Acquire) {
                // No leaf read in yet: the key's is on disk, no need to look (a lookup
                // was most of replay's time).
                let mut queue = self.redo.lock();
                if self.all_on_disk.load(Ordering::Acquire) {
                    self.queue_redo(&mut queue, key, f);
                    return;
                }
            }
            let leaf = self.leaf_unadmitted(key);
            if leaf.page.evicted {
                self.queue_redo(&mut self.redo.lock(), key, f);
                return;
            }
            drop(leaf);
        }
        self.with_or_insert(key, f);
    }

    /// Puts `f` in the locked queue at `key`, in place of a change waiting there, counted.
    fn queue_redo(&self, queue: &mut BTreeMap<Box<[u8]>, Redo<V>>, key: &[u8], f: Redo<V>) {
        if queue.insert(key.into(), f).is_none() {
            self.redo_pending.fetch_add(1, Ordering::Release);
        }
    }

    /// Recovery's changes still waiting for their leaves ([`LeafMap::redo`]).
    pub fn redo_pending(&self) -> u64 {
        self.redo_pending.load(Ordering::Acquire)
    }

    /// Reads in every leaf that recovery's changes wait for, applying them, until none waits.
    pub fn drain_redo(&self) {
        while self.redo_pending() > 0 {
            let Some(key) = self.redo.lock().keys().next().cloned() else { return };
            // Reading the leaf in takes its range's changes, `key`'s among them.
            drop(self.leaf_for(&key));
            self.make_room();
        }
    }

    /// Applies the changes recovery left for a locked, resident leaf's range
    /// ([`LeafMap::redo`]) in key order, then splits the leaf if they took it over
    /// [`LEAF_ENTRIES_MAX`] (the leaf keeps the lowest keys).
    fn apply_redo(&self, leaf: &mut LockedLeaf<V>) {
        if self.redo_pending() == 0 {
            return;
        }
        let taken: Vec<(Box<[u8]>, Redo<V>)> = {
            let mut queue = self.redo.lock();
            let upper = leaf.high.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
            let keys: Vec<Box<[u8]>> = queue.range::<[u8], _>((Bound::Included(&leaf.low[..]), upper)).map(|(k, _)| k.clone()).collect();
            keys.into_iter().map(|k| queue.remove(&k).map(|f| (k, f))).collect::<Option<_>>().expect("the keys just found are there")
        };
        if taken.is_empty() {
            return;
        }
        self.redo_pending.fetch_sub(taken.len() as u64, Ordering::Release);
        self.will_change(leaf);
        for (key, f) in taken {
            Self::touch_key(leaf, &key);
            match leaf.search(&key) {
                Ok(i) => {
                    f(&mut leaf.values[i]);
                    if leaf.values[i].is_vacant() {
                        leaf.remove_at(i);
                        self.len.fetch_sub(1, Ordering::Relaxed);
                    }
                }
                Err(i) => {
                    let mut value = V::default();
                    f(&mut value);
                    if !value.is_vacant() {
                        leaf.insert_at(i, &key, value);
                        self.len.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }
        self.split_to_bound(leaf);
        leaf.recount_heap();
        self.recharge(leaf);
    }

    /// Splits a locked leaf over [`LEAF_ENTRIES_MAX`] into as few leaves as hold its
    /// entries, of equal size: it keeps the first part, and the others are published before
    /// its mutex is released (the module's invariant). One pass over the entries, however
    /// many parts.
    fn split_to_bound(&self, leaf: &mut LockedLeaf<V>) {
        let n = leaf.len();
        if n <= LEAF_ENTRIES_MAX {
            return;
        }
        self.drop_base(leaf);
        self.count_split();
        let per = n.div_ceil(n.div_ceil(LEAF_ENTRIES_MAX));
        let keys = std::mem::take(&mut leaf.keys);
        let ends = std::mem::take(&mut leaf.ends);
        let mut values = std::mem::take(&mut leaf.values).into_iter();
        let high = leaf.high.take();
        let mut parts: Vec<Leaf<V>> = Vec::new();
        for from in (0..n).step_by(per) {
            let to = (from + per).min(n);
            let start = if from == 0 { 0 } else { ends[from - 1] };
            let low: Box<[u8]> = if from == 0 { leaf.low.clone() } else { keys[start as usize..ends[from] as usize].into() };
            let mut part = Leaf::new(low, None);
            part.keys = keys[start as usize..ends[to - 1] as usize].to_vec();
            part.ends = ends[from..to].iter().map(|e| e - start).collect();
            part.values = values.by_ref().take(to - from).collect();
            if let Some(before) = parts.last_mut() {
                before.high = Some(part.low.clone());
            }
            parts.push(part);
        }
        parts.last_mut().expect("a leaf over its bound has parts").high = high;
        let mut parts = parts.into_iter();
        let first = parts.next().expect("a leaf over its bound has parts");
        leaf.keys = first.keys;
        leaf.ends = first.ends;
        leaf.values = first.values;
        leaf.high = first.high;
        for part in parts {
            let low = part.low.clone();
            let part = Arc::new(Mutex::new(part));
            self.admit_new(&mut part.lock(), &part);
            self.leaves.insert(low, part);
        }
    }

    /// The leaf covering `key`, locked, as it is: not read in if on disk, not marked used
    /// (what a checkpoint looks at before it knows whether it needs the entries).
    fn leaf_unadmitted(&self, key: &[u8]) -> LockedLeaf<V> {
        loop {
            let entry = self.leaves.upper_bound(Bound::Included(key)).expect("the first leaf starts at the empty key, below every key");
            let leaf = entry.value().lock_arc();
            if leaf.covers(key) {
                return leaf;
            }
            // Split after we found it: the upper part is published already.
        }
    }

    /// One step of `walk`: `visit` is called on the entries of one leaf in the walk's order,
    /// under that leaf's mutex, until it returns `false` or the leaf or the walk ends. The
    /// next step resumes after the last entry visited.
    pub fn step(&self, walk: &mut Walk, visit: impl FnMut(&[u8], &V) -> bool) {
        self.step_in(walk, visit);
        self.make_room();
    }

    /// [`LeafMap::step`] but for making room after it.
    fn step_in(&self, walk: &mut Walk, mut visit: impl FnMut(&[u8], &V) -> bool) {
        if walk.done {
            return;
        }
        match walk.order {
            ScanOrder::Ascending => {
                let leaf = match &walk.next {
                    Bound::Included(k) | Bound::Excluded(k) => self.leaf_for(k),
                    Bound::Unbounded => self.leaf_for(&[]),
                };
                let from = match &walk.next {
                    Bound::Unbounded => 0,
                    Bound::Included(k) => leaf.search(k).unwrap_or_else(|i| i),
                    Bound::Excluded(k) => leaf.search(k).map_or_else(|i| i, |i| i + 1),
                };
                if !walk.visit_leaf(&leaf, from..leaf.len(), &mut visit) {
                    return;
                }
                match &leaf.high {
                    Some(high) if !walk.past_end(high) => walk.next = Bound::Included(high.to_vec()),
                    _ => walk.done = true,
                }
            }
            ScanOrder::Descending => {
                let leaf = match &walk.next {
                    Bound::Included(k) => Some(self.leaf_for(k)),
                    Bound::Excluded(k) => self.leaf_below(k),
                    Bound::Unbounded => Some(self.last_leaf()),
                };
                let Some(leaf) = leaf else {
                    walk.done = true;
                    return;
                };
                let to = match &walk.next {
                    Bound::Unbounded => leaf.len(),
                    Bound::Included(k) => leaf.search(k).map_or_else(|i| i, |i| i + 1),
                    Bound::Excluded(k) => leaf.search(k).unwrap_or_else(|i| i),
                };
                if !walk.visit_leaf(&leaf, (0..to).rev(), &mut visit) {
                    return;
                }
                if leaf.low.is_empty() || walk.past_end(&leaf.low) {
                    walk.done = true;
                } else {
                    walk.next = Bound::Excluded(leaf.low.to_vec());
                }
            }
        }
    }

    /// The first key `walk` meets, if any.
    pub fn first_key(&self, mut walk: Walk) -> Option<Vec<u8>> {
        let mut found = None;
        while found.is_none() && !walk.is_done() {
            self.step(&mut walk, |key, _| {
                found = Some(key.to_vec());
                false
            });
        }
        found
    }
}

#[cfg(test)]
mod paged_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default, Debug, Clone, PartialEq)]
    pub(super) struct Count(pub(super) u32);

    impl Vacancy for Count {
        fn is_vacant(&self) -> bool {
            self.0 == 0
        }
    }

    impl PageValue for Count {
        const KIND: u8 = crate::page::KIND_ENTRIES;

        fn encode(&self, out: &mut Vec<u8>) {
            crate::page::put_varint(out, u64::from(self.0));
        }

        fn decode(reader: &mut Reader<'_>) -> Result<Count, PageError> {
            u32::try_from(reader.varint()?).map(Count).map_err(|_| PageError::Malformed("a count past u32"))
        }

        fn heap_bytes(&self) -> usize {
            0
        }

        fn is_stable(&self) -> bool {
            true
        }
    }

    fn key(n: u32) -> Vec<u8> {
        n.to_be_bytes().to_vec()
    }

    fn set(map: &LeafMap<Count>, n: u32, v: u32) {
        map.with_or_insert(&key(n), |c| c.0 = v);
    }

    fn walk_all(map: &LeafMap<Count>, lower: Bound<&[u8]>, upper: Bound<&[u8]>, order: ScanOrder, batch: usize) -> Vec<u32> {
        let mut walk = Walk::new(lower, upper, order);
        let mut out = Vec::new();
        while !walk.is_done() {
            let mut taken = 0;
            map.step(&mut walk, |k, _| {
                out.push(u32::from_be_bytes(k.try_into().unwrap()));
                taken += 1;
                taken < batch
            });
        }
        out
    }

    #[test]
    fn a_leaf_reads_back_from_its_page_image_and_a_damaged_image_is_refused() {
        use crate::chain::{Chain, Stamp, Version};
        let mut leaf: Leaf<Chain> = Leaf::new(key(10).into(), Some(key(90).into()));
        for n in [10, 20, 30] {
            let mut chain = Chain::default();
            chain.versions.push(Version { stamp: Stamp::committed(u64::from(n)), row: Some(vec![n as u8; n as usize].into()) });
            let at = leaf.search(&key(n)).unwrap_err();
            leaf.insert_at(at, &key(n), chain);
        }
        let mut image = Vec::new();
        leaf.encode_image(&mut image);
        let back = Leaf::<Chain>::decode_image(&image).unwrap();
        assert_eq!((back.low.clone(), back.high.clone()), (leaf.low.clone(), leaf.high.clone()));
        assert_eq!((back.keys.clone(), back.ends.clone()), (leaf.keys.clone(), leaf.ends.clone()));
        assert_eq!(format!("{:?}", back.values), format!("{:?}", leaf.values));
        // A last leaf (no upper bound) and an empty one.
        let mut image = Vec::new();
        Leaf::<Chain>::new(Box::default(), None).encode_image(&mut image);
        assert_eq!(Leaf::<Chain>::decode_image(&image).unwrap().len(), 0);
        // Keys outside the range, or out of order, are refused.
        let mut bad = Vec::new();
        put_image_range(&mut bad, &key(40), None);
        put_image_entry(&mut bad, &key(30), &leaf.values[0]);
        assert!(Leaf::<Chain>::decode_image(&bad).is_err());
        let mut bad = Vec::new();
        put_image_range(&mut bad, &key(0), None);
        put_image_entry(&mut bad, &key(30), &leaf.values[0]);
        put_image_entry(&mut bad, &key(20), &leaf.values[0]);
        assert!(Leaf::<Chain>::decode_image(&bad).is_err());
    }

    #[test]
    fn ascending_inserts_fill_leaves_and_walks_see_every_key_once_in_order() {
        let map = LeafMap::new();
        for n in 0..1000 {
            set(&map, n, n + 1);
        }
        assert_eq!(map.len(), 1000);
        // Every leaf but the last is filled to its append fill: ascending keys start a new
        // leaf rather than halve one.
        assert_eq!(map.leaves.len(), 1000usize.div_ceil(LEAF_APPEND_FILL));
        for batch in [1, 7, 1000] {
            assert_eq!(walk_all(&map, Bound::Unbounded, Bound::Unbounded, ScanOrder::Ascending, batch), (0..1000).collect::<Vec<_>>());
            assert_eq!(walk_all(&map, Bound::Unbounded, Bound::Unbounded, ScanOrder::Descending, batch), (0..1000).rev().collect::<Vec<_>>());
        }
        let (lo, hi) = (key(63), key(130));
        assert_eq!(walk_all(&map, Bound::Excluded(&lo), Bound::Included(&hi), ScanOrder::Ascending, 5), (64..=130).collect::<Vec<_>>());
        assert_eq!(walk_all(&map, Bound::Included(&lo), Bound::Excluded(&hi), ScanOrder::Descending, 5), (63..130).rev().collect::<Vec<_>>());
        assert!(walk_all(&map, Bound::Included(&hi), Bound::Excluded(&lo), ScanOrder::Ascending, 5).is_empty(), "an inverted range is empty");
    }

    #[test]
    fn random_inserts_and_removals_keep_keys_sorted_and_vacant_entries_gone() {
        let map = LeafMap::new();
        let mut model = std::collections::BTreeMap::new();
        let mut x: u32 = 12345;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            let (n, v) = (x % 3000, (x >> 20) % 3);
            set(&map, n, v);
            if v == 0 {
                model.remove(&n);
            } else {
                model.insert(n, v);
            }
        }
        assert_eq!(map.len() as usize, model.len());
        let got = walk_all(&map, Bound::Unbounded, Bound::Unbounded, ScanOrder::Ascending, 3);
        assert_eq!(got, model.keys().copied().collect::<Vec<_>>());
        for (n, v) in &model {
            assert_eq!(map.with(&key(*n), |c| c.0), Some(*v));
        }
        assert_eq!(map.with(&key(5000), |c| c.0), None);
        let mut finger = Finger::default();
        for n in model.keys() {
            assert_eq!(map.with_near(&mut finger, &key(*n), |c| c.0), model.get(n).copied());
        }
    }

    #[test]
    fn inserts_from_a_finger_land_where_a_search_puts_them() {
        // Ascending runs (appends), runs into the middle, repeats and removals, through one
        // finger and through plain calls: the same map, and leaves that drained away
        // (which the finger may still point to) are never written.
        let (near, plain): (LeafMap<Count>, LeafMap<Count>) = (LeafMap::new(), LeafMap::new());
        let mut finger = Finger::default();
        let mut x: u32 = 777;
        for round in 0..40 {
            let start = if round % 3 == 0 { 5000 + round * 100 } else { x % 5000 };
            for n in start..start + 150 {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                let v = if round % 4 == 3 { 0 } else { 1 + x % 5 };
                near.with_or_insert_near(&mut finger, &key(n), |c| c.0 = v);
                set(&plain, n, v);
            }
        }
        assert_eq!(near.len(), plain.len());
        let all = |map: &LeafMap<Count>| -> Vec<(u32, u32)> {
            let mut walk = Walk::new(Bound::Unbounded, Bound::Unbounded, ScanOrder::Ascending);
            let mut out = Vec::new();
            while !walk.is_done() {
                map.step(&mut walk, |k, c| {
                    out.push((u32::from_be_bytes(k.try_into().unwrap()), c.0));
                    true
                });
            }
            out
        };
        assert_eq!(all(&near), all(&plain));
    }

    #[test]
    fn first_key_finds_neighbours_across_empty_leaves() {
        let map = LeafMap::new();
        for n in 0..300 {
            set(&map, n, 1);
        }
        for n in 70..250 {
            set(&map, n, 0);
        }
        let k = key(100);
        assert_eq!(map.first_key(Walk::new(Bound::Included(&k), Bound::Unbounded, ScanOrder::Ascending)), Some(key(250)));
        assert_eq!(map.first_key(Walk::new(Bound::Unbounded, Bound::Excluded(&k), ScanOrder::Descending)), Some(key(69)));
        assert_eq!(map.first_key(Walk::new(Bound::Unbounded, Bound::Excluded(&key(0)), ScanOrder::Descending)), None);
    }

    #[test]
    fn drained_leaves_leave_the_map_and_their_range_goes_to_the_leaf_before() {
        let map = LeafMap::new();
        for n in 0..1000 {
            set(&map, n, 1);
        }
        let leaves = map.leaves.len();
        // A queue: the oldest rows go, new ones come at the top.
        for n in 0..900 {
            set(&map, n, 0);
        }
        for n in 1000..1100 {
            set(&map, n, 1);
        }
        assert!(map.leaves.len() <= 5, "{} leaves of {leaves} left for 200 rows", map.leaves.len());
        assert_eq!(walk_all(&map, Bound::Unbounded, Bound::Unbounded, ScanOrder::Ascending, 7), (900..1100).collect::<Vec<_>>());
        assert_eq!(walk_all(&map, Bound::Unbounded, Bound::Unbounded, ScanOrder::Descending, 7), (900..1100).rev().collect::<Vec<_>>());
        // The removed range takes keys again.
        set(&map, 5, 1);
        assert_eq!(map.with(&key(5), |c| c.0), Some(1));
        for n in (900..1100).chain([5]) {
            set(&map, n, 0);
        }
        assert_eq!((map.len(), map.leaves.len()), (0, 1), "only the first leaf is left");
    }

    /// Writers fill and drain the ranges between a few kept keys (leaves split, empty and are
    /// removed) while readers walk: the kept keys are seen in order, exactly once.
    #[test]
    fn walks_run_beside_writers_that_remove_leaves() {
        let kept = |n: &u32| n.is_multiple_of(500);
        let map = LeafMap::new();
        for n in (0..6000).filter(kept) {
            set(&map, n, 1);
        }
        let removed_before = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|scope| {
            for w in 0..2u32 {
                let (map, removed_before) = (&map, &removed_before);
                scope.spawn(move || {
                    let mine = |n: &u32| !kept(n) && n % 2 == w;
                    for _ in 0..20 {
                        for n in (0..6000).filter(mine) {
                            set(map, n, 1);
                        }
                        removed_before.fetch_max(map.leaves.len(), std::sync::atomic::Ordering::Relaxed);
                        for n in (0..6000).filter(mine) {
                            set(map, n, 0);
                        }
                    }
                });
            }
            for order in [ScanOrder::Ascending, ScanOrder::Descending] {
                let map = &map;
                scope.spawn(move || {
                    for _ in 0..200 {
                        let mut seen: Vec<u32> = walk_all(map, Bound::Unbounded, Bound::Unbounded, order, 10).into_iter().filter(kept).collect();
                        if order == ScanOrder::Descending {
                            seen.reverse();
                        }
                        assert_eq!(seen, (0..6000).filter(kept).collect::<Vec<_>>());
                    }
                });
            }
        });
        assert_eq!(map.len(), 12);
        assert!(removed_before.into_inner() > 40, "the writers filled many leaves");
        assert!(map.leaves.len() <= 13, "{} leaves left for 12 keys", map.leaves.len());
    }

    /// Regression: a finger kept its leaf locked while it looked up another, so two commit
    /// walks crossing each other's leaves (as two transactions' rows interleave) deadlocked.
    #[test]
    fn fingers_crossing_each_others_leaves_never_hold_two_leaves() {
        let map = LeafMap::new();
        for n in 0..(4 * LEAF_ENTRIES_MAX as u32) {
            set(&map, n, 1);
        }
        let (low, high) = (key(0), key(3 * LEAF_ENTRIES_MAX as u32));
        std::thread::scope(|scope| {
            for first in [&low, &high] {
                let (map, second) = (&map, if first == &low { &high } else { &low });
                scope.spawn(move || {
                    let mut finger = Finger::default();
                    for _ in 0..20_000 {
                        assert_eq!(map.with_near(&mut finger, first, |c| c.0), Some(1));
                        assert_eq!(map.with_near(&mut finger, second, |c| c.0), Some(1));
                    }
                });
            }
        });
    }

    /// Writers split leaves while readers walk: every walk sees the keys no writer touches,
    /// in order, exactly once.
    #[test]
    fn walks_run_beside_writers_that_split_leaves() {
        let map = LeafMap::new();
        for n in (0..4000).step_by(2) {
            set(&map, n, 1);
        }
        std::thread::scope(|scope| {
            for w in 0..2u32 {
                let map = &map;
                scope.spawn(move || {
                    for round in 0..3 {
                        for n in (1..4000).step_by(2).filter(|n| n % 4 == w * 2 + 1) {
                            set(map, n, round % 2);
                        }
                    }
                });
            }
            for order in [ScanOrder::Ascending, ScanOrder::Descending] {
                let map = &map;
                scope.spawn(move || {
                    for _ in 0..20 {
                        let mut even: Vec<u32> = walk_all(map, Bound::Unbounded, Bound::Unbounded, order, 10).into_iter().filter(|n| n % 2 == 0).collect();
                        if order == ScanOrder::Descending {
                            even.reverse();
                        }
                        assert_eq!(even, (0..4000).step_by(2).collect::<Vec<_>>());
                    }
                });
            }
        });
    }
}
