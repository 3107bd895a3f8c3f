//! The MVCC row store for one table, paged or in memory, safe to read and write from many
//! threads at once.
//!
//! Rows live in the table's primary index, a [`LeafMap`] from encoded primary key to the
//! row's [`Chain`] of versions: leaves of up to [`crate::leaf_map::LEAF_ENTRIES_MAX`] rows,
//! each behind its own mutex. Each version records the transaction that wrote it until that
//! transaction commits, then its commit timestamp; a delete is a version with no row.
//! Secondary indexes are leaf maps of `index key ++ primary key` entries
//! ([`crate::index_entry`]) and hold an entry for every key that any live version of the row
//! has, so a reader always re-checks the row it finds against the key it looked for. A
//! paged table ([`Table::paged`], `table/pages.rs`) is this table with paged leaf maps: its
//! leaves leave memory when the buffer pool needs room and are read back when used.
//!
//! Why leaves: readers never take a lock wider than one leaf, and never hold one across a
//! scan, so a long scan runs beside writers on the same table; writers on rows of different
//! leaves touch different mutexes. A leaf row costs its key, four bytes and its chain, which
//! matters at tens of millions of rows; and a leaf is the unit a page is. See
//! `docs/architecture.md`, "Concurrency" and "The paged engine".
//!
//! Invariants:
//! - at most one transaction has uncommitted versions on a row, and they are the
//!   newest in its chain (a second writer gets [`WriteError::Locked`]);
//! - a transaction may stack several versions on one row (one per statement that
//!   wrote it) so a failed statement can pop exactly what it pushed;
//! - committed versions are in commit-timestamp order;
//! - a row's secondary-index entries change only while its leaf's mutex is held, and a
//!   chain left with no version leaves the primary index (after its entries are gone)
//!   under that mutex;
//! - inserts and updates run under the table's [`WriteLatch`], so a unique-key check and
//!   the write it allows are one step (the SQL layer also holds it across its
//!   insert-intention check, so no gap lock slips in between);
//! - no method takes a row's leaf while holding another row's (each touches one row at a time;
//!   only the leaf map itself holds two, left to right, to remove an empty leaf); a row's leaf
//!   may be held while one leaf of a secondary index is taken (its entries change), never the
//!   other way round: a checkpoint copies an index leaf and releases it before it reads the
//!   rows its entries name.
//!
//! Locking, waiting and the choice of read view are the `txn` and `sql` layers'
//! business; this module only answers "who holds this row" and "what does this
//! view see".

use std::collections::VecDeque;
use std::ops::Bound;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::{Mutex, MutexGuard};
use smallvec::SmallVec;

use crate::chain::{Chain, EncodedRow, Stamp, Version};
use crate::format::RowFormat;
use crate::handler::{
    ChainCursor, DeferredEntries, Handler, IMAGE_BATCH_ROWS, ImageBatch, ImageCursor, Replaced, RowChange, RowCursor, ScanOrder, Statistics, WrittenRows,
};
use crate::index_entry::{EntryPk, pk_of};
use crate::key::{encode_key, prefix_successor, range_is_empty};
use crate::leaf_map::{self, LeafMap, Vacancy, Walk};
use crate::page::PageValue;
use crate::value::{Collation, Row, Value};

/// A transaction's identity, unique for the life of the server.
pub type TxnId = u64;
/// A commit timestamp: commits are numbered in the order they happen.
pub type Timestamp = u64;

/// A row version as readers get it: shared, immutable, cheap to hand out.
pub type SharedRow = Arc<Row>;

/// The transaction id recovery writes under; never handed to a session.
pub const RECOVERY_TXN: TxnId = 0;

/// Rows a primary-key scan reads per visit of a leaf: a cursor that stops early (LIMIT)
/// decodes at most this many rows it does not return.
const SCAN_BATCH_ROWS: usize = 16;

/// What a reader sees: its own writes plus everything committed at or before
/// `read_ts`, or (for READ UNCOMMITTED) the newest version of every row.
#[derive(Debug, Clone, Copy)]
pub struct ReadView {
    pub txn: TxnId,
    pub read_ts: Timestamp,
    pub uncommitted: bool,
}

impl ReadView {
    /// A current read: the newest committed version, or the reader's own.
    #[must_use]
    pub fn current(txn: TxnId) -> ReadView {
        ReadView { txn, read_ts: Timestamp::MAX, uncommitted: false }
    }
}

/// A gap to lock, `(from, to)` in an index's entry space, and the primary key of the
/// first entry above it (see [`Table::gap_around`]).
pub type GapAround = (Bound<Vec<u8>>, Bound<Vec<u8>>, Option<Vec<u8>>);

/// A range of encoded keys.
pub type KeyRange = (Bound<Vec<u8>>, Bound<Vec<u8>>);

/// One column of a key: which column of the row, compared under which collation.
pub type KeyPart = (usize, Collation);

#[derive(Debug, Clone)]
pub struct IndexDef {
    pub name: String,
    pub parts: Vec<KeyPart>,
    pub unique: bool,
}

/// A cursor over an index: a [`Walk`] that reads up to [`SCAN_BATCH_ROWS`] items per step,
/// each made by `item` from an entry's key and value under its leaf's mutex.
fn walk_cursor<'a, V: Vacancy + PageValue + Send + 'static, T: 'a>(
    rows: &'a LeafMap<V>,
    mut walk: Walk,
    mut item: impl FnMut(&[u8], &V) -> Option<T> + 'a,
) -> Box<dyn Iterator<Item = T> + 'a> {
    let mut batch: VecDeque<T> = VecDeque::new();
    Box::new(std::iter::from_fn(move || {
        while batch.is_empty() && !walk.is_done() {
            rows.step(&mut walk, |key, chain| {
                batch.extend(item(key, chain));
                batch.len() < SCAN_BATCH_ROWS
            });
        }
        batch.pop_front()
    }))
}

/// [`Handler::image_cursor`] of a [`Table`]: a [`Walk`] over the whole primary index that
/// copies up to [`IMAGE_BATCH_ROWS`] rows per step under their leaf's mutex.
struct Images<'a> {
    rows: &'a LeafMap<Chain>,
    walk: Walk,
    view: ReadView,
}

impl ImageCursor for Images<'_> {
    fn next_batch(&mut self, batch: &mut ImageBatch) -> bool {
        batch.clear();
        while batch.is_empty() && !self.walk.is_done() {
            self.rows.step(&mut self.walk, |key, chain| {
                batch.push(key, chain.holder(), chain.visible(&self.view).map(|image| &**image));
                batch.len() < IMAGE_BATCH_ROWS
            });
        }
        !batch.is_empty()
    }
}

/// A version about to be pushed: its image in the table's format, and the row it encodes,
/// decoded (needed for index entries and unique checks: `None` only for a table with no
/// secondary index whose key is known).
struct NewVersion<'r> {
    row: Option<&'r Row>,
    image: EncodedRow,
}

/// A walk over rows one transaction wrote ([`Handler::written_rows`]): it keeps the leaf it
/// used last, so a row whose key follows it (as a bulk insert's rows follow each other) is
/// found without a search from the top.
struct Finger<'a> {
    table: &'a Table,
    txn: TxnId,
    at: leaf_map::Finger<Chain>,
}

impl WrittenRows for Finger<'_> {
    fn pending_change(&mut self, pk: &[u8], before: Option<&mut Vec<u8>>, after: &mut Vec<u8>) -> Option<RowChange> {
        let (table, txn) = (self.table, self.txn);
        table.rows.read_near(&mut self.at, pk, |chain| table.pending_in(chain, txn, before, after)).flatten()
    }

    fn commit_row(&mut self, pk: &[u8], ts: Timestamp, purge_horizon: Timestamp) -> bool {
        let (table, txn) = (self.table, self.txn);
        table.rows.with_near(&mut self.at, pk, |chain| table.commit_chain(chain, txn, pk, ts, purge_horizon)).unwrap_or(false)
    }
}

/// Why a write could not be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WriteError {
    /// Another transaction has an uncommitted version of a row this write needs.
    #[error("row is locked by transaction {holder}")]
    Locked { holder: TxnId, pk: Vec<u8> },
    /// The write would give two rows the same key; `index` is `None` for the
    /// primary key, else the position of the unique secondary index.
    #[error("duplicate key")]
    Duplicate { index: Option<usize>, existing_pk: Vec<u8> },
}

struct SecondaryIndex {
    def: IndexDef,
    /// `index key ++ primary key`, each with the length of its primary key.
    entries: LeafMap<EntryPk>,
}

impl SecondaryIndex {
    /// The entries in `[lower, upper]` (entry-space bounds), with their primary keys.
    fn entries_in(&self, lower: Bound<&[u8]>, upper: Bound<&[u8]>, order: ScanOrder) -> Box<dyn Iterator<Item = (Vec<u8>, Vec<u8>)> + '_> {
        walk_cursor(&self.entries, Walk::new(lower, upper, order), |entry, value| Some((entry.to_vec(), pk_of(entry, value).to_vec())))
    }

    /// The primary keys of the entries for exactly `key` (not a longer key it begins),
    /// other than `pk`'s.
    fn others_with_key(&self, key: &[u8], pk: &[u8]) -> Vec<Vec<u8>> {
        let hi = prefix_successor(key).map_or(Bound::Unbounded, Bound::Excluded);
        self.entries_in(Bound::Included(key), hi.as_ref().map(Vec::as_slice), ScanOrder::Ascending)
            .filter(|(entry, other_pk)| other_pk != pk && entry.len() == key.len() + other_pk.len())
            .map(|(_, other_pk)| other_pk)
            .collect()
    }

    fn insert(&self, entry: &[u8], pk: &[u8]) {
        self.entries.with_or_insert(entry, |value| *value = EntryPk::new(pk));
    }
}

/// Proof that the caller holds a table's write latch: inserts and updates take it, so
/// their unique-key checks cannot race (see the module's invariants). Held for one row
/// write, never across a scan or a wait.
pub struct WriteLatch<'a> {
    guard: MutexGuard<'a, ()>,
}

/// A table's bytes, as `SHOW TABLE STATUS` reports them.
#[derive(Debug, Default)]
struct Sizes {
    /// Bytes of every version's image (`Data_length`).
    data: AtomicU64,
    /// Bytes of every primary key and secondary-index entry (`Index_length`).
    index: AtomicU64,
}

impl Sizes {
    /// The start of replacing a chain's versions: they are taken out, their image bytes
    /// uncounted. [`Sizes::settle_chain`] ends it.
    fn take_versions(&self, chain: &mut Chain) -> SmallVec<[Version; 1]> {
        let old = std::mem::take(&mut chain.versions);
        let old_bytes: usize = old.iter().filter_map(|v| v.row.as_ref()).map(|image| image.len()).sum();
        self.data.fetch_sub(old_bytes as u64, Ordering::Relaxed);
        old
    }

    /// The end of replacing a chain's versions (taken out, their image bytes uncounted, and
    /// `had_versions` if there were any) with `image` committed at `ts`, or with nothing (a
    /// delete): the new image counted, and the primary key's bytes counted or uncounted as
    /// the row comes into being or leaves. [`Table::replace_committed`] and recovery's
    /// waiting change ([`Handler::redo_committed`]) end alike.
    fn settle_chain(&self, chain: &mut Chain, had_versions: bool, pk_len: u64, image: Option<EncodedRow>, ts: Timestamp) {
        match image {
            Some(image) => {
                self.data.fetch_add(image.len() as u64, Ordering::Relaxed);
                if !had_versions {
                    self.index.fetch_add(pk_len, Ordering::Relaxed);
                }
                chain.versions.push(Version { stamp: Stamp::committed(ts), row: Some(image) });
            }
            None if had_versions => {
                self.index.fetch_sub(pk_len, Ordering::Relaxed);
            }
            None => {}
        }
    }
}

/// A paged table's page file ([`crate::tablespace`]).
struct TableFile {
    number: u64,
    file: Arc<crate::page_file::PageFile>,
}

/// One table's rows and indexes.
pub struct Table {
    /// Key parts of the primary key; empty when the table has none and rows are
    /// keyed by a hidden row id, as InnoDB does.
    primary: Vec<KeyPart>,
    /// Shared with the tables [`Table::with_indexes`] makes of this one (as are `rows`).
    indexes: Vec<Arc<SecondaryIndex>>,
    rows: Arc<LeafMap<Chain>>,
    /// The next AUTO_INCREMENT value to hand out (not transactional, as in InnoDB).
    auto_increment: AtomicU64,
    next_row_id: AtomicU64,
    latch: Mutex<()>,
    /// Where the last insert went: inserts run under the write latch, and a bulk load's come
    /// in key order, so the next one most often goes into the same leaf, found with no search
    /// of the leaf map (`LeafMap::with_or_insert_near`). Taken only under the write latch.
    insert_finger: Mutex<leaf_map::Finger<Chain>>,
    /// How versions lay out their images.
    format: RowFormat,
    /// `Data_length` and `Index_length`: shared with recovery's changes waiting for their
    /// leaves ([`Table::redo_committed`]), which count what they change when they run.
    sizes: Arc<Sizes>,
    /// Where a paged table's leaves go when the pool needs room; `None`: all in memory.
    file: Option<TableFile>,
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table").field("primary", &self.primary).field("rows", &self.rows.len()).finish_non_exhaustive()
    }
}

impl Table {
    #[must_use]
    pub fn new(primary: Vec<KeyPart>, indexes: Vec<IndexDef>, format: RowFormat) -> Table {
        let indexes = indexes.into_iter().map(|def| SecondaryIndex { def, entries: LeafMap::new() }).collect();
        Table::with_maps(primary, format, LeafMap::new(), indexes, None)
    }

    /// A table over the maps given, empty or not (an in-memory table's, a paged one's:
    /// `table/pages.rs`), its counters at their start.
    fn with_maps(primary: Vec<KeyPart>, format: RowFormat, rows: LeafMap<Chain>, indexes: Vec<SecondaryIndex>, file: Option<TableFile>) -> Table {
        Table {
            primary,
            indexes: indexes.into_iter().map(Arc::new).collect(),
            rows: Arc::new(rows),
            auto_increment: AtomicU64::new(1),
            next_row_id: AtomicU64::new(1),
            latch: Mutex::new(()),
            insert_finger: Mutex::new(leaf_map::Finger::default()),
            format,
            sizes: Arc::default(),
            file,
        }
    }

    /// Decode a version's row image (encoded by this table, so it decodes).
    fn decode(&self, image: &[u8]) -> Row {
        self.format.decode(image).expect("a row version decodes: this table encoded it")
    }

    fn assert_latched(&self, latch: &WriteLatch<'_>) {
        assert!(std::ptr::eq(MutexGuard::mutex(&latch.guard), &self.latch), "write latch of another table");
    }

    fn index_key(def: &IndexDef, row: &Row) -> Vec<u8> {
        encode_key(def.parts.iter().map(|&(c, coll)| (&row[c], coll)))
    }

    /// The values of `def`'s key columns in a version's encoded `image`, the rest of the row
    /// left encoded.
    fn index_values_of_image(&self, def: &IndexDef, image: &[u8]) -> SmallVec<[Value; 2]> {
        def.parts.iter().map(|&(c, _)| self.format.value_at(image, c).expect("a row version decodes: this table encoded it")).collect()
    }

    /// [`Table::index_key`] of `def`'s key column `values`, in its parts' order.
    fn index_key_of_values(def: &IndexDef, values: &[Value]) -> Vec<u8> {
        encode_key(values.iter().zip(&def.parts).map(|(v, &(_, collation))| (v, collation)))
    }

    /// [`Table::index_key`] of a version's encoded `image`, decoding its key's columns only.
    fn index_key_of_image(&self, def: &IndexDef, image: &[u8]) -> Vec<u8> {
        Self::index_key_of_values(def, &self.index_values_of_image(def, image))
    }

    /// Entry-space bounds of an index-key prefix range: entries are `index key ++ pk`.
    /// `None` when the range holds no entry (see [`range_is_empty`]).
    fn entry_range(lower: Bound<&[u8]>, upper: Bound<&[u8]>) -> Option<KeyRange> {
        let lo = match lower {
            Bound::Included(p) => Bound::Included(p.to_vec()),
            Bound::Excluded(p) => prefix_successor(p).map_or(Bound::Unbounded, Bound::Included),
            Bound::Unbounded => Bound::Unbounded,
        };
        let hi = match upper {
            Bound::Included(p) => prefix_successor(p).map_or(Bound::Unbounded, Bound::Excluded),
            Bound::Excluded(p) => Bound::Excluded(p.to_vec()),
            Bound::Unbounded => Bound::Unbounded,
        };
        (!range_is_empty(lo.as_ref(), hi.as_ref())).then_some((lo, hi))
    }

    /// The key of the last entry of `index` (0: the primary key) below `below`.
    fn entry_before(&self, index: u32, below: Bound<Vec<u8>>) -> Option<Vec<u8>> {
        if index == 0 {
            self.rows.first_key(Walk::new(Bound::Unbounded, below.as_ref().map(Vec::as_slice), ScanOrder::Descending))
        } else {
            self.indexes[index as usize - 1].entries.first_key(Walk::new(Bound::Unbounded, below.as_ref().map(Vec::as_slice), ScanOrder::Descending))
        }
    }

    fn gap_above(&self, index: u32, lo: Bound<Vec<u8>>, hi: Bound<Vec<u8>>) -> GapAround {
        let above = match hi {
            Bound::Included(k) => Bound::Excluded(k),
            Bound::Excluded(k) => Bound::Included(k),
            Bound::Unbounded => return (lo, Bound::Unbounded, None),
        };
        let next = if index == 0 {
            self.rows.first_key(Walk::new(above.as_ref().map(Vec::as_slice), Bound::Unbounded, ScanOrder::Ascending)).map(|pk| (pk.clone(), pk))
        } else {
            self.indexes[index as usize - 1].entries_in(above.as_ref().map(Vec::as_slice), Bound::Unbounded, ScanOrder::Ascending).next()
        };
        match next {
            Some((entry, pk)) => (lo, Bound::Excluded(entry), Some(pk)),
            None => (lo, Bound::Unbounded, None),
        }
    }

    /// Check unique secondary indexes for `row` (to be stored at `pk`) with a current read.
    /// REQUIRES: the write latch (another insert could otherwise take the key meanwhile).
    fn check_unique(&self, txn: TxnId, pk: &[u8], row: &Row) -> Result<(), WriteError> {
        for (i, idx) in self.indexes.iter().enumerate() {
            if !idx.def.unique || idx.def.parts.iter().any(|&(c, _)| row[c].is_null()) {
                continue;
            }
            let key = Self::index_key(&idx.def, row);
            for other_pk in &idx.others_with_key(&key, pk) {
                let conflict = self.rows.read(other_pk, |chain| {
                    if let Some(holder) = chain.holder().filter(|&h| h != txn) {
                        return Some(WriteError::Locked { holder, pk: other_pk.clone() });
                    }
                    let other = chain.visible(&ReadView::current(txn))?;
                    (Self::index_key(&idx.def, &self.decode(other)) == key).then(|| WriteError::Duplicate { index: Some(i), existing_pk: other_pk.clone() })
                });
                if let Some(Some(conflict)) = conflict {
                    return Err(conflict);
                }
            }
        }
        Ok(())
    }

    /// Push a version (`None`: a delete) on a locked chain, adding its index entries; a
    /// row's entries in non-unique indexes go to `deferred` when given (a bulk write, see
    /// [`Handler::write_image_deferred`]).
    fn push_version(&self, chain: &mut Chain, txn: TxnId, pk: &[u8], version: Option<NewVersion<'_>>, mut deferred: Option<&mut DeferredEntries>) {
        if chain.versions.is_empty() {
            self.sizes.index.fetch_add(pk.len() as u64, Ordering::Relaxed);
        }
        if let Some(v) = version.as_ref().filter(|_| !self.indexes.is_empty()) {
            let r = v.row.expect("a table with secondary indexes is given the row");
            // An update's entries that an older version has already are there already.
            let older: Vec<Row> = if self.indexes.is_empty() {
                Vec::new()
            } else {
                chain.versions.iter().filter_map(|v| v.row.as_deref()).map(|image| self.decode(image)).collect()
            };
            for (i, idx) in self.indexes.iter().enumerate() {
                let mut entry = Self::index_key(&idx.def, r);
                if older.iter().any(|o| Self::index_key(&idx.def, o) == entry) {
                    continue;
                }
                entry.extend_from_slice(pk);
                self.sizes.index.fetch_add((entry.len() + pk.len()) as u64, Ordering::Relaxed);
                match deferred.as_deref_mut() {
                    Some(d) if !idx.def.unique => {
                        if d.per_index.len() <= i {
                            d.per_index.resize_with(self.indexes.len(), Vec::new);
                        }
                        d.per_index[i].push((entry, pk.to_vec()));
                    }
                    _ => idx.insert(&entry, pk),
                }
            }
        }
        let row = version.map(|v| v.image);
        self.sizes.data.fetch_add(row.as_ref().map_or(0, |image| image.len() as u64), Ordering::Relaxed);
        chain.versions.push(Version { stamp: Stamp::pending(txn), row });
    }

    /// Applies every change recovery left waiting for the table's leaves
    /// ([`Handler::redo_committed`]): the rows' first, then each index's.
    fn drain_redo_all(&self) {
        self.rows.drain_redo();
        for idx in &self.indexes {
            idx.entries.drain_redo();
        }
    }

    /// A version of `row` to push: its image in the table's format, and the row.
    fn new_version<'r>(&self, row: &'r Row) -> NewVersion<'r> {
        NewVersion { row: Some(row), image: self.format.encode(row) }
    }

    /// [`Handler::apply_committed`] on a locked chain whose versions are all committed: what
    /// [`Table::push_version`] and then [`Table::commit_chain`] with nothing older kept
    /// come to (the chain becomes `version` alone, or leaves the map with a delete), with
    /// the index keys of the versions replaced read from their images' key columns only,
    /// and each index's entry changed only where the key changed. The property test
    /// `replacing_committed_versions_is_pushing_and_committing` holds the two paths equal.
    fn replace_committed(&self, chain: &mut Chain, pk: &[u8], version: Option<NewVersion<'_>>, ts: Timestamp) {
        let old = self.sizes.take_versions(chain);
        for idx in &self.indexes {
            let new_key = version.as_ref().map(|v| Self::index_key(&idx.def, v.row.expect("a table with secondary indexes is given the row")));
            let mut old_keys: SmallVec<[Vec<u8>; 1]> = SmallVec::new();
            for image in old.iter().filter_map(|v| v.row.as_deref()) {
                let key = self.index_key_of_image(&idx.def, image);
                if !old_keys.contains(&key) {
                    old_keys.push(key);
                }
            }
            if let Some(key) = new_key.as_ref().filter(|key| !old_keys.contains(key)) {
                let mut entry = key.clone();
                entry.extend_from_slice(pk);
                self.sizes.index.fetch_add((entry.len() + pk.len()) as u64, Ordering::Relaxed);
                idx.insert(&entry, pk);
            }
            for mut entry in old_keys.into_iter().filter(|key| new_key.as_ref() != Some(key)) {
                entry.extend_from_slice(pk);
                if idx.entries.with(&entry, |value| *value = EntryPk::default()).is_some() {
                    self.sizes.index.fetch_sub((entry.len() + pk.len()) as u64, Ordering::Relaxed);
                }
            }
        }
        self.sizes.settle_chain(chain, !old.is_empty(), pk.len() as u64, version.map(|v| v.image), ts);
    }

    /// Push a version unless another transaction holds the row; with `fresh`, also fail
    /// when the row exists for `txn` (an insert).
    fn push_checked(
        &self,
        txn: TxnId,
        pk: &[u8],
        version: Option<NewVersion<'_>>,
        fresh: bool,
        deferred: Option<&mut DeferredEntries>,
    ) -> Result<(), WriteError> {
        // A chain this refused write created is vacant and leaves the map with the call.
        let push = |chain: &mut Chain| {
            if let Some(holder) = chain.holder().filter(|&h| h != txn) {
                return Err(WriteError::Locked { holder, pk: pk.to_vec() });
            }
            if fresh && chain.visible(&ReadView::current(txn)).is_some() {
                return Err(WriteError::Duplicate { index: None, existing_pk: pk.to_vec() });
            }
            self.push_version(chain, txn, pk, version, deferred);
            Ok(())
        };
        if fresh {
            // An insert, under the write latch: from where the last one went.
            self.rows.with_or_insert_near(&mut self.insert_finger.lock(), pk, push)
        } else {
            self.rows.with_or_insert(pk, push)
        }
    }

    /// Insert a new row (see [`Handler::write_row`]) at `pk` (`None`: the row's primary key,
    /// or the next hidden row id); its non-unique index entries go to `deferred` when given.
    fn insert_row(
        &self,
        latch: &WriteLatch<'_>,
        txn: TxnId,
        pk: Option<Vec<u8>>,
        version: NewVersion<'_>,
        deferred: Option<&mut DeferredEntries>,
    ) -> Result<Vec<u8>, WriteError> {
        self.assert_latched(latch);
        let pk = match pk {
            Some(pk) => pk,
            None if self.has_primary_key() => self.primary_key(version.row.expect("a row keyed by its columns is given the row")),
            None => {
                let id = self.next_row_id.fetch_add(1, Ordering::AcqRel);
                encode_key([(&Value::UInt(id), Collation::Binary)])
            }
        };
        // A row another transaction holds is reported as locked before any unique-key
        // check; with no unique secondary index, the push below is the only look.
        if self.indexes.iter().any(|idx| idx.def.unique) {
            if let Some(Some(holder)) = self.rows.read(&pk, |c| c.holder().filter(|&h| h != txn)) {
                return Err(WriteError::Locked { holder, pk });
            }
            self.check_unique(txn, &pk, version.row.expect("a table with secondary indexes is given the row"))?;
        }
        self.push_checked(txn, &pk, Some(version), true, deferred)?;
        Ok(pk)
    }

    /// [`Handler::commit_row`] on a locked chain.
    fn commit_chain(&self, chain: &mut Chain, txn: TxnId, pk: &[u8], ts: Timestamp, purge_horizon: Timestamp) -> bool {
        let Some(own_from) = chain.versions.iter().position(|v| v.is_pending_for(txn)) else { return false };
        let last_index = chain.versions.len() - 1;
        let mut removed: Vec<Version> = chain.versions.drain(own_from..last_index).collect();
        let last = chain.versions.last_mut().expect("own version present");
        last.stamp = Stamp::committed(ts);
        drain_purgeable(chain, purge_horizon, &mut removed);
        self.after_removal(chain, pk, &removed);
        true
    }

    /// On a locked chain: purge what no reader at or after `horizon` needs
    /// ([`drain_purgeable`]), with its index entries. Returns whether anything went. A
    /// checkpoint calls it for rows whose last commit could purge only to the horizon of
    /// that moment.
    pub(crate) fn purge_chain(&self, chain: &mut Chain, pk: &[u8], horizon: Timestamp) -> bool {
        let mut removed = Vec::new();
        drain_purgeable(chain, horizon, &mut removed);
        if removed.is_empty() {
            return false;
        }
        self.after_removal(chain, pk, &removed);
        true
    }

    /// [`WrittenRows::pending_change`] of a locked chain.
    fn pending_in(&self, chain: &Chain, txn: TxnId, before: Option<&mut Vec<u8>>, after: &mut Vec<u8>) -> Option<RowChange> {
        let own_from = chain.versions.iter().position(|v| v.is_pending_for(txn))?;
        let last = chain.versions.last().expect("a pending version");
        // The transaction holds the row's lock: the version before its own is the newest
        // committed one, what it replaced.
        let replaced = chain.versions[..own_from].last().and_then(|v| v.row.as_deref());
        let log_image = |image: &[u8], out: &mut Vec<u8>| self.format.log_image_into(image, out).expect("a row version decodes: this table encoded it");
        let change = match (replaced, last.row.as_deref()) {
            (None, Some(_)) => RowChange::Insert,
            (Some(_), Some(_)) => RowChange::Update,
            (Some(_), None) => RowChange::Delete,
            (None, None) => RowChange::Nothing,
        };
        if let Some(image) = last.row.as_deref() {
            log_image(image, after);
        }
        if let (Some(image), Some(before)) = (replaced, before) {
            log_image(image, before);
        }
        Some(change)
    }

    /// On a locked chain: drop secondary index entries that only removed versions
    /// referenced (the map removes the chain itself when no version is left).
    fn after_removal(&self, chain: &mut Chain, pk: &[u8], removed: &[Version]) {
        let removed_bytes: usize = removed.iter().filter_map(|v| v.row.as_ref()).map(|image| image.len()).sum();
        self.sizes.data.fetch_sub(removed_bytes as u64, Ordering::Relaxed);
        if !self.indexes.is_empty() && !removed.is_empty() {
            let kept: Vec<Row> = chain.versions.iter().filter_map(|v| v.row.as_deref()).map(|image| self.decode(image)).collect();
            for row in removed.iter().filter_map(|v| v.row.as_deref()).map(|image| self.decode(image)) {
                for idx in &self.indexes {
                    let key = Self::index_key(&idx.def, &row);
                    if kept.iter().any(|k| Self::index_key(&idx.def, k) == key) {
                        continue;
                    }
                    let mut entry = key;
                    entry.extend_from_slice(pk);
                    if idx.entries.with(&entry, |value| *value = EntryPk::default()).is_some() {
                        self.sizes.index.fetch_sub((entry.len() + pk.len()) as u64, Ordering::Relaxed);
                    }
                }
            }
        }
        if chain.versions.is_empty() && !removed.is_empty() {
            self.sizes.index.fetch_sub(pk.len() as u64, Ordering::Relaxed);
        }
    }
}

/// Moves into `removed` the versions of `chain` that no reader at or after `horizon` sees:
/// those older than the newest version committed at or below it (which every such reader
/// sees, or a newer one), and then the chain's last version too when it is a delete at or
/// below it (the row is gone for every reader).
fn drain_purgeable(chain: &mut Chain, horizon: Timestamp, removed: &mut Vec<Version>) {
    let purgeable = |v: &Version| v.stamp.commit_ts().is_some_and(|t| t <= horizon);
    if let Some(keep_from) = chain.versions.iter().rposition(purgeable) {
        removed.extend(chain.versions.drain(..keep_from));
    }
    if chain.versions.len() == 1 && chain.versions[0].row.is_none() && purgeable(&chain.versions[0]) {
        removed.extend(chain.versions.drain(..));
    }
}

impl Handler for Table {
    fn engine_name(&self) -> &'static str {
        "InnoDB"
    }

    fn statistics(&self) -> Statistics {
        Statistics { rows: self.rows.len(), data_bytes: self.sizes.data.load(Ordering::Relaxed), index_bytes: self.sizes.index.load(Ordering::Relaxed) }
    }

    fn row_format(&self) -> &RowFormat {
        &self.format
    }

    /// Take the table's write latch (see [`WriteLatch`]).
    fn write_latch(&self) -> WriteLatch<'_> {
        WriteLatch { guard: self.latch.lock() }
    }

    /// The next AUTO_INCREMENT value.
    fn auto_increment(&self) -> u64 {
        self.auto_increment.load(Ordering::Acquire)
    }

    /// Set the next AUTO_INCREMENT value (CREATE and ALTER TABLE, recovery).
    fn set_auto_increment(&self, next: u64) {
        self.auto_increment.store(next, Ordering::Release);
    }

    /// Hand out the next AUTO_INCREMENT value.
    fn take_auto_increment(&self) -> u64 {
        self.auto_increment.fetch_add(1, Ordering::AcqRel)
    }

    /// Move the AUTO_INCREMENT counter past `used` (an explicit value was inserted).
    fn raise_auto_increment(&self, next: u64) {
        self.auto_increment.fetch_max(next, Ordering::AcqRel);
    }

    fn has_primary_key(&self) -> bool {
        !self.primary.is_empty()
    }

    /// The encoded primary key of `row` (tables with a primary key only).
    fn primary_key(&self, row: &Row) -> Vec<u8> {
        assert!(self.has_primary_key(), "primary_key() on a table keyed by hidden row id");
        encode_key(self.primary.iter().map(|&(c, coll)| (&row[c], coll)))
    }

    /// Encode a primary key from values given in key-part order.
    fn encode_primary(&self, values: &[Value]) -> Vec<u8> {
        encode_key(values.iter().zip(&self.primary).map(|(v, &(_, coll))| (v, coll)))
    }

    /// Encode a (possibly partial, leading-parts) key of secondary index `index`.
    fn encode_index(&self, index: usize, values: &[Value]) -> Vec<u8> {
        let parts = &self.indexes[index].def.parts;
        encode_key(values.iter().zip(parts).map(|(v, &(_, coll))| (v, coll)))
    }

    /// The version of the row at `pk` that `view` sees.
    fn get(&self, pk: &[u8], view: &ReadView) -> Option<SharedRow> {
        self.rows.read(pk, |chain| chain.visible(view).map(|b| SharedRow::new(self.decode(b)))).flatten()
    }

    /// The transaction holding uncommitted versions of the row at `pk`, if any.
    fn holder(&self, pk: &[u8]) -> Option<TxnId> {
        self.rows.read(pk, |chain| chain.holder()).flatten()
    }

    /// Rows visible to `view` with primary keys in the range, in key order. The scan
    /// holds no lock between rows: rows written while it runs may or may not be met,
    /// and the view decides which versions it sees.
    fn scan<'a>(&'a self, lower: Bound<&[u8]>, upper: Bound<&[u8]>, view: ReadView, order: ScanOrder) -> RowCursor<'a> {
        walk_cursor(&self.rows, Walk::new(lower, upper, order), move |key, chain| {
            let row = self.decode(chain.visible(&view)?);
            Some((key.to_vec(), SharedRow::new(row)))
        })
    }

    /// Rows visible to `view` whose key in secondary index `index` lies in the range
    /// (bounds are encoded index-key prefixes), in index order, read as the cursor advances.
    fn index_scan<'a>(&'a self, index: usize, lower: Bound<&[u8]>, upper: Bound<&[u8]>, view: ReadView, order: ScanOrder) -> RowCursor<'a> {
        let idx = &self.indexes[index];
        // Entries are `index key ++ pk`, so an inclusive prefix bound becomes
        // "from the prefix" / "to the prefix's successor".
        let Some(range) = Self::entry_range(lower, upper) else { return Box::new(std::iter::empty()) };
        let (lower, upper) = range;
        let entries = idx.entries_in(lower.as_ref().map(Vec::as_slice), upper.as_ref().map(Vec::as_slice), order);
        Box::new(entries.filter_map(move |(entry, pk)| {
            let row = self.get(&pk, &view)?;
            // The entry may belong to an older or newer version of the row: only the entry
            // of the version `view` sees yields it (so each row comes once).
            let key = Self::index_key(&idx.def, &row);
            (entry.len() == key.len() + pk.len() && entry.starts_with(&key)).then_some((pk, row))
        }))
    }

    fn scan_chains<'a>(&'a self, lower: Bound<&[u8]>, upper: Bound<&[u8]>, view: ReadView) -> ChainCursor<'a> {
        walk_cursor(&self.rows, Walk::new(lower, upper, ScanOrder::Ascending), move |key, chain| {
            let row = chain.visible(&view).map(|image| SharedRow::new(self.decode(image)));
            Some((key.to_vec(), chain.holder(), row))
        })
    }

    fn image_cursor<'a>(&'a self, view: ReadView) -> Box<dyn ImageCursor + 'a> {
        Box::new(Images { rows: &self.rows, walk: Walk::new(Bound::Unbounded, Bound::Unbounded, ScanOrder::Ascending), view })
    }

    /// Whether the row at `pk` has any version, committed or not, live or deleted.
    fn has_chain(&self, pk: &[u8]) -> bool {
        self.rows.read(pk, |_| ()).is_some()
    }

    /// Primary keys of every row chain in the range, whatever its versions (a locking
    /// read locks rows other transactions are inserting or deleting too).
    fn keys_in_range(&self, lower: Bound<&[u8]>, upper: Bound<&[u8]>) -> Vec<Vec<u8>> {
        let mut walk = Walk::new(lower, upper, ScanOrder::Ascending);
        let mut keys = Vec::new();
        while !walk.is_done() {
            self.rows.step(&mut walk, |key, _| {
                keys.push(key.to_vec());
                true
            });
        }
        keys
    }

    /// Primary keys of every entry of secondary index `index` in the range (bounds are
    /// encoded index-key prefixes), whichever version of the row it came from.
    fn index_keys_in_range(&self, index: usize, lower: Bound<&[u8]>, upper: Bound<&[u8]>) -> Vec<Vec<u8>> {
        let Some(range) = Self::entry_range(lower, upper) else { return Vec::new() };
        let mut out: Vec<Vec<u8>> = Vec::new();
        // A row may have an entry per live version's key: each row once, in entry order.
        let mut seen: std::collections::HashSet<Vec<u8>> = std::collections::HashSet::new();
        let (lower, upper) = range;
        for (_, pk) in self.indexes[index].entries_in(lower.as_ref().map(Vec::as_slice), upper.as_ref().map(Vec::as_slice), ScanOrder::Ascending) {
            if seen.insert(pk.clone()) {
                out.push(pk);
            }
        }
        out
    }

    /// The gap a locking scan of a range of index `index` (0: the primary key, `i + 1`:
    /// secondary index `i`; bounds as for the scans) locks, widened to the neighbouring
    /// entries as InnoDB's next-key locks are: from the last entry below the range
    /// (excluded) to the first entry above it (excluded). Also returns the primary key of
    /// that first entry above, whose record a range scan locks too. `None` for an empty
    /// range.
    fn gap_around(&self, index: u32, lower: Bound<&[u8]>, upper: Bound<&[u8]>) -> Option<GapAround> {
        let entries = if index == 0 { Some((lower.map(<[u8]>::to_vec), upper.map(<[u8]>::to_vec))) } else { Self::entry_range(lower, upper) };
        // An empty range locks no gap (InnoDB finds an impossible range and reads nothing).
        let (lo, hi) = entries.filter(|(lo, hi)| !range_is_empty(lo.as_ref(), hi.as_ref()))?;
        let below = match &lo {
            Bound::Included(k) => Bound::Excluded(k.clone()),
            Bound::Excluded(k) => Bound::Included(k.clone()),
            Bound::Unbounded => return Some(self.gap_above(index, Bound::Unbounded, hi)),
        };
        let prev = self.entry_before(index, below);
        Some(self.gap_above(index, prev.map_or(Bound::Unbounded, Bound::Excluded), hi))
    }

    /// The primary key an entry of secondary index `index` points at.
    fn index_entry_pk(&self, index: usize, entry: &[u8]) -> Option<Vec<u8>> {
        self.indexes.get(index)?.entries.read(entry, |value| pk_of(entry, value).to_vec())
    }

    /// The newest version of the row at `pk`, committed or not (`None`: no row or deleted).
    fn newest(&self, pk: &[u8]) -> Option<SharedRow> {
        self.rows.read(pk, |chain| chain.versions.last()?.row.as_deref().map(|b| SharedRow::new(self.decode(b)))).flatten()
    }

    /// The primary key an insert of `row` will take (stable while the caller holds the
    /// write latch).
    fn insert_key(&self, row: &Row) -> Vec<u8> {
        if self.has_primary_key() { self.primary_key(row) } else { encode_key([(&Value::UInt(self.next_row_id.load(Ordering::Acquire)), Collation::Binary)]) }
    }

    /// The entries `row`, stored at `pk`, has in each secondary index (numbered from 1, as
    /// gap locks number them), for the insert-intention check.
    fn index_entries(&self, row: &Row, pk: &[u8]) -> Vec<(u32, Vec<u8>)> {
        self.indexes
            .iter()
            .enumerate()
            .map(|(i, idx)| {
                let mut entry = Self::index_key(&idx.def, row);
                entry.extend_from_slice(pk);
                (u32::try_from(i + 1).expect("index count fits u32"), entry)
            })
            .collect()
    }

    /// The commit timestamp of the newest committed version of the row at `pk`.
    fn newest_commit_ts(&self, pk: &[u8]) -> Option<Timestamp> {
        self.rows.read(pk, |chain| chain.newest_commit_ts()).flatten()
    }

    /// Insert a new row. Returns its primary key.
    ///
    /// # Errors
    /// `Locked` if another transaction holds the key or a conflicting unique key;
    /// `Duplicate` if a row with the same primary or unique key exists.
    fn write_row(&self, latch: &WriteLatch<'_>, txn: TxnId, row: &Row) -> Result<Vec<u8>, WriteError> {
        self.insert_row(latch, txn, None, self.new_version(row), None)
    }

    fn write_image_deferred(
        &self,
        latch: &WriteLatch<'_>,
        txn: TxnId,
        pk: Option<&[u8]>,
        image: &[u8],
        deferred: &mut DeferredEntries,
    ) -> Result<Vec<u8>, WriteError> {
        // Decoded only where the row's values are needed: index entries, or a key not given.
        let row = (!self.indexes.is_empty() || (pk.is_none() && self.has_primary_key())).then(|| self.decode(image));
        self.insert_row(latch, txn, pk.map(<[u8]>::to_vec), NewVersion { row: row.as_ref(), image: image.into() }, Some(deferred))
    }

    fn merge_deferred(&self, latch: &WriteLatch<'_>, deferred: DeferredEntries) {
        self.assert_latched(latch);
        for (idx, mut entries) in self.indexes.iter().zip(deferred.per_index) {
            entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            let mut finger = leaf_map::Finger::default();
            for (entry, pk) in entries {
                idx.entries.with_or_insert_near(&mut finger, &entry, |value| *value = EntryPk::new(&pk));
            }
        }
    }

    /// Replace the row at `pk` with `row`; if its primary key changes, the old key
    /// is deleted and the new one inserted. Returns the new primary key.
    ///
    /// # Errors
    /// As [`Table::insert`].
    fn update_row(&self, latch: &WriteLatch<'_>, txn: TxnId, pk: &[u8], row: Row) -> Result<Vec<u8>, WriteError> {
        self.assert_latched(latch);
        if let Some(holder) = self.holder(pk).filter(|&h| h != txn) {
            return Err(WriteError::Locked { holder, pk: pk.to_vec() });
        }
        let new_pk = if self.has_primary_key() { self.primary_key(&row) } else { pk.to_vec() };
        if new_pk != pk {
            // The old row goes first, so its own unique entries do not collide with the new
            // row's (an update of the key alone kept every other value).
            self.push_checked(txn, pk, None, false, None)?;
            return match self.write_row(latch, txn, &row) {
                Ok(new_pk) => Ok(new_pk),
                Err(e) => {
                    self.undo_last(txn, pk);
                    Err(e)
                }
            };
        }
        self.check_unique(txn, pk, &row)?;
        self.push_checked(txn, pk, Some(self.new_version(&row)), false, None)?;
        Ok(new_pk)
    }

    /// Delete the row at `pk`.
    ///
    /// # Errors
    /// `Locked` if another transaction holds the row.
    fn delete_row(&self, txn: TxnId, pk: &[u8]) -> Result<(), WriteError> {
        self.push_checked(txn, pk, None, false, None)
    }

    /// Pop the newest version of `pk`, which `txn` must have written: undoes one
    /// write of a failed statement.
    fn undo_last(&self, txn: TxnId, pk: &[u8]) {
        self.rows.with(pk, |chain| {
            let last = chain.versions.last().expect("undo of a row with no versions");
            assert!(last.is_pending_for(txn), "undo of a version this transaction did not write");
            let popped = chain.versions.pop().expect("checked above");
            self.after_removal(chain, pk, &[popped]);
        });
    }

    /// Make `txn`'s writes to `pk` committed at `ts` (keeping only its last version),
    /// then drop versions no reader at or after `purge_horizon` can see. `false` when `txn`
    /// had no pending version there.
    fn commit_row(&self, txn: TxnId, pk: &[u8], ts: Timestamp, purge_horizon: Timestamp) -> bool {
        self.rows.with(pk, |chain| self.commit_chain(chain, txn, pk, ts, purge_horizon)).unwrap_or(false)
    }

    fn written_rows<'a>(&'a self, txn: TxnId) -> Box<dyn WrittenRows + 'a> {
        Box::new(Finger { table: self, txn, at: leaf_map::Finger::default() })
    }

    /// Remove every uncommitted version `txn` wrote on `pk`.
    fn rollback_row(&self, txn: TxnId, pk: &[u8]) {
        self.rows.with(pk, |chain| {
            let Some(own_from) = chain.versions.iter().position(|v| v.is_pending_for(txn)) else { return };
            let removed: Vec<Version> = chain.versions.drain(own_from..).collect();
            self.after_removal(chain, pk, &removed);
        });
    }

    /// Installs a committed row image (or a delete, `None`) at `pk`, as of `ts`, replacing
    /// what was there and keeping indexes and the hidden row id in step. Recovery and
    /// table copies only: no transaction may have a pending version on the table.
    fn apply_committed(&self, pk: &[u8], row: Option<Row>, ts: Timestamp) {
        if !self.has_primary_key()
            && let Some(id) = crate::key::decode_uint_key(pk)
        {
            self.next_row_id.fetch_max(id + 1, Ordering::AcqRel);
        }
        if row.is_none() && !self.has_chain(pk) {
            return;
        }
        let version = row.as_ref().map(|r| self.new_version(r));
        self.rows.with_or_insert(pk, |chain| {
            if chain.versions.iter().all(|v| v.stamp.commit_ts().is_some()) {
                self.replace_committed(chain, pk, version, ts);
            } else {
                self.push_version(chain, RECOVERY_TXN, pk, version, None);
                self.commit_chain(chain, RECOVERY_TXN, pk, ts, Timestamp::MAX);
            }
        });
    }

    /// Lazily (a paged table, `lazy`, and the entries the change moves known), the change
    /// goes to the leaf maps as changes waiting for their leaves ([`LeafMap::redo`]): the
    /// row's chain becomes the one committed version (or leaves the map), each index whose key
    /// the change moved loses the old entry and gains the new one, and each counts the bytes
    /// it changes when it runs. What [`Table::replace_committed`] does, in pieces that may run
    /// in any order: each piece sets a key to its final state, and a leaf takes all of its
    /// range's pieces at once, so readers see every leaf either before recovery or after it,
    /// and never before once anyone has seen it after.
    fn redo_committed(&self, pk: &[u8], row: Option<Row>, replaced: Replaced<'_>, ts: Timestamp, lazy: bool) {
        if self.file.is_none() || !lazy || (matches!(replaced, Replaced::Unknown) && !self.indexes.is_empty()) {
            self.apply_committed(pk, row, ts);
            return;
        }
        if !self.has_primary_key()
            && let Some(id) = crate::key::decode_uint_key(pk)
        {
            self.next_row_id.fetch_max(id + 1, Ordering::AcqRel);
        }
        let pk_len = pk.len() as u64;
        for idx in &self.indexes {
            let new_key = row.as_ref().map(|r| Self::index_key(&idx.def, r));
            let old_key = match replaced {
                Replaced::Row(before) => Some(Self::index_key(&idx.def, before)),
                Replaced::Nothing | Replaced::Unknown => None,
            };
            if new_key == old_key {
                continue;
            }
            if let Some(mut entry) = old_key {
                entry.extend_from_slice(pk);
                let (sizes, bytes) = (Arc::clone(&self.sizes), entry.len() as u64 + pk_len);
                let remove = move |value: &mut EntryPk| {
                    if !value.is_vacant() {
                        sizes.index.fetch_sub(bytes, Ordering::Relaxed);
                        *value = EntryPk::default();
                    }
                };
                idx.entries.redo(&entry, Box::new(remove), true);
            }
            if let Some(mut entry) = new_key {
                entry.extend_from_slice(pk);
                let (sizes, bytes, new) = (Arc::clone(&self.sizes), entry.len() as u64 + pk_len, EntryPk::new(pk));
                let insert = move |value: &mut EntryPk| {
                    if value.is_vacant() {
                        sizes.index.fetch_add(bytes, Ordering::Relaxed);
                    }
                    *value = new;
                };
                idx.entries.redo(&entry, Box::new(insert), true);
            }
        }
        let image = row.as_ref().map(|r| self.format.encode(r));
        let sizes = Arc::clone(&self.sizes);
        let replace = move |chain: &mut Chain| {
            let old = sizes.take_versions(chain);
            sizes.settle_chain(chain, !old.is_empty(), pk_len, image, ts);
        };
        self.rows.redo(pk, Box::new(replace), true);
    }

    fn redo_pending(&self) -> u64 {
        self.rows.redo_pending() + self.indexes.iter().map(|idx| idx.entries.redo_pending()).sum::<u64>()
    }

    fn drain_redo(&self) {
        self.drain_redo_all();
    }

    fn read_ahead(&self, pk: &[u8], rows: &[&Row]) {
        if self.file.is_none() {
            return;
        }
        self.rows.read_ahead(pk);
        for row in rows {
            for idx in &self.indexes {
                let mut entry = Self::index_key(&idx.def, row);
                entry.extend_from_slice(pk);
                idx.entries.read_ahead(&entry);
            }
        }
    }

    fn read_ahead_current(&self, pk: &[u8]) {
        if self.file.is_none() || self.indexes.is_empty() {
            return;
        }
        let Some(Some(image)) = self.rows.read(pk, |chain| chain.versions.last().and_then(|v| v.row.clone())) else { return };
        for idx in &self.indexes {
            let mut entry = self.index_key_of_image(&idx.def, &image);
            entry.extend_from_slice(pk);
            idx.entries.read_ahead(&entry);
        }
    }

    fn write_pages(&self, view: ReadView, horizon: Timestamp) -> std::io::Result<Option<crate::tablespace::TablePages>> {
        self.write_table_pages(view, horizon)
    }

    fn pages_durable(&self, pages: &crate::tablespace::TablePages) {
        self.table_pages_durable(pages);
    }

    fn space(&self) -> Option<(u64, u64)> {
        self.table_space()
    }

    fn with_indexes(&self, added: Vec<IndexDef>) -> Result<Arc<dyn Handler>, WriteError> {
        Ok(Arc::new(self.build_with_indexes(added)?))
    }
}

mod build;
mod pages;

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::handler::Handler;

    fn table() -> Table {
        Table::new(
            vec![(0, Collation::Binary)],
            vec![IndexDef { name: "u".into(), parts: vec![(1, Collation::Utf8mb4AiCi)], unique: true }],
            RowFormat::Dynamic,
        )
    }

    fn row(id: i64, name: &str) -> Row {
        vec![Value::Int(id), Value::Str(name.into())]
    }

    fn view(txn: TxnId, read_ts: Timestamp) -> ReadView {
        ReadView { txn, read_ts, uncommitted: false }
    }

    #[test]
    fn uncommitted_writes_are_private_until_commit() {
        let t = table();
        let pk = t.write_row(&t.write_latch(), 1, &row(1, "a")).unwrap();
        assert!(t.get(&pk, &view(2, 100)).is_none());
        assert!(t.get(&pk, &view(1, 0)).is_some());
        t.commit_row(1, &pk, 5, 0);
        assert!(t.get(&pk, &view(2, 4)).is_none(), "snapshot before the commit");
        assert!(t.get(&pk, &view(2, 5)).is_some());
    }

    #[test]
    fn a_walk_over_written_rows_finds_them_in_any_order() {
        let t = table();
        let pks: Vec<Vec<u8>> = (1..=6).map(|id| t.write_row(&t.write_latch(), 1, &row(id, &format!("n{id}"))).unwrap()).collect();
        // Row 3 is undone (a failed statement): no pending image, nothing to commit.
        t.undo_last(1, &pks[2]);
        let mut walk = t.written_rows(1);
        let order = [0, 1, 2, 3, 5, 4, 0];
        let mut out = Vec::new();
        let images: Vec<bool> = order.iter().map(|&i| walk.pending_change(&pks[i], None, &mut out).is_some()).collect();
        assert_eq!(images, [true, true, false, true, true, true, true]);
        for &i in &order {
            // A walk that keeps its place answers as a fresh one, which searches.
            let (mut kept, mut fresh) = (Vec::new(), Vec::new());
            assert_eq!(walk.pending_change(&pks[i], None, &mut kept), t.written_rows(1).pending_change(&pks[i], None, &mut fresh));
            assert_eq!(kept, fresh);
            if !kept.is_empty() {
                assert_eq!(crate::format::decode_log_row(&kept), t.get(&pks[i], &view(1, 0)).map(|r| Row::clone(&r)), "the log row of the pending version");
            }
        }
        assert_eq!(t.written_rows(2).pending_change(&pks[0], None, &mut out), None, "another transaction's rows");
        let committed: Vec<bool> = order.iter().map(|&i| walk.commit_row(&pks[i], 9, 0)).collect();
        assert_eq!(committed, [true, true, false, true, true, true, false], "a row committed once");
        drop(walk);
        let seen: Vec<Value> = t.scan(Bound::Unbounded, Bound::Unbounded, view(2, 9), ScanOrder::Ascending).map(|(_, r)| r[0].clone()).collect();
        assert_eq!(seen, [1, 2, 4, 5, 6].map(Value::Int));
    }

    #[test]
    fn a_pending_change_is_an_insert_update_or_delete_with_the_image_it_replaced() {
        let t = table();
        let latch = t.write_latch();
        let (a, b, c) =
            (t.write_row(&latch, 1, &row(1, "a")).unwrap(), t.write_row(&latch, 1, &row(2, "b")).unwrap(), t.write_row(&latch, 1, &row(3, "c")).unwrap());
        for pk in [&a, &b, &c] {
            t.commit_row(1, pk, 5, 0);
        }
        // Transaction 2: updates row 1 twice, deletes row 2, inserts row 4, and inserts and
        // deletes row 5.
        t.update_row(&latch, 2, &a, row(1, "a2")).unwrap();
        t.update_row(&latch, 2, &a, row(1, "a3")).unwrap();
        t.delete_row(2, &b).unwrap();
        let d = t.write_row(&latch, 2, &row(4, "d")).unwrap();
        let e = t.write_row(&latch, 2, &row(5, "e")).unwrap();
        t.delete_row(2, &e).unwrap();
        drop(latch);
        let log_row = |r: Row| crate::format::log_row(&r);
        let mut walk = t.written_rows(2);
        let mut change = |pk: &[u8]| {
            let (mut before, mut after) = (Vec::new(), Vec::new());
            let kind = walk.pending_change(pk, Some(&mut before), &mut after);
            (kind, before, after)
        };
        assert_eq!(change(&a), (Some(RowChange::Update), log_row(row(1, "a")), log_row(row(1, "a3"))), "the committed image, not the first update's");
        assert_eq!(change(&b), (Some(RowChange::Delete), log_row(row(2, "b")), vec![]));
        assert_eq!(change(&d), (Some(RowChange::Insert), vec![], log_row(row(4, "d"))));
        assert_eq!(change(&e), (Some(RowChange::Nothing), vec![], vec![]));
        assert_eq!(change(&c), (None, vec![], vec![]), "not written by the transaction");
        // Without a buffer for it, the replaced image is not read.
        let mut after = Vec::new();
        assert_eq!(t.written_rows(2).pending_change(&a, None, &mut after), Some(RowChange::Update));
        assert_eq!(after, log_row(row(1, "a3")));
    }

    #[test]
    fn second_writer_sees_the_lock_and_unique_keys_fold_case() {
        let t = table();
        let pk = t.write_row(&t.write_latch(), 1, &row(1, "abc")).unwrap();
        assert_eq!(t.update_row(&t.write_latch(), 2, &pk, row(1, "x")), Err(WriteError::Locked { holder: 1, pk: pk.clone() }));
        t.commit_row(1, &pk, 1, 1);
        assert!(matches!(t.write_row(&t.write_latch(), 2, &row(2, "ABC")), Err(WriteError::Duplicate { index: Some(0), .. })));
        assert!(matches!(t.write_row(&t.write_latch(), 2, &row(1, "zzz")), Err(WriteError::Duplicate { index: None, .. })));
    }

    #[test]
    fn undo_and_rollback_restore_the_index() {
        let t = table();
        let pk = t.write_row(&t.write_latch(), 1, &row(1, "a")).unwrap();
        t.commit_row(1, &pk, 1, 1);
        t.update_row(&t.write_latch(), 2, &pk, row(1, "b")).unwrap();
        let v = ReadView::current(3);
        assert_eq!(
            t.index_scan(
                0,
                Bound::Included(&t.encode_index(0, &[Value::Str("b".into())])),
                Bound::Included(&t.encode_index(0, &[Value::Str("b".into())])),
                ReadView::current(2),
                ScanOrder::Ascending
            )
            .count(),
            1
        );
        t.undo_last(2, &pk);
        let b = t.encode_index(0, &[Value::Str("b".into())]);
        assert_eq!(t.index_scan(0, Bound::Included(&b), Bound::Included(&b), ReadView::current(2), ScanOrder::Ascending).count(), 0);
        let a = t.encode_index(0, &[Value::Str("A".into())]);
        assert_eq!(t.index_scan(0, Bound::Included(&a), Bound::Included(&a), v, ScanOrder::Ascending).count(), 1);
    }

    #[test]
    fn data_and_index_bytes_follow_every_version_and_entry_back_to_zero() {
        let t = table();
        let stats = |t: &Table| (t.statistics().data_bytes, t.statistics().index_bytes);
        let pk = t.write_row(&t.write_latch(), 1, &row(1, "a")).unwrap();
        let (data, index) = stats(&t);
        assert_eq!(data as usize, RowFormat::Dynamic.encode(&row(1, "a")).len());
        let entry_a = t.encode_index(0, &[Value::Str("a".into())]).len() + 2 * pk.len();
        assert_eq!(index as usize, pk.len() + entry_a);
        t.commit_row(1, &pk, 1, 1);
        // An update that keeps the key adds a version but no entry; one that changes it adds both.
        t.update_row(&t.write_latch(), 2, &pk, row(1, "a")).unwrap();
        assert_eq!(stats(&t), (2 * data, index));
        t.update_row(&t.write_latch(), 2, &pk, row(1, "bb")).unwrap();
        let entry_bb = t.encode_index(0, &[Value::Str("bb".into())]).len() + 2 * pk.len();
        assert_eq!(stats(&t).1 as usize, pk.len() + entry_a + entry_bb);
        // Commit purges the older versions and the entry only they had.
        t.commit_row(2, &pk, 2, 2);
        assert_eq!(stats(&t), (RowFormat::Dynamic.encode(&row(1, "bb")).len() as u64, (pk.len() + entry_bb) as u64));
        t.delete_row(3, &pk).unwrap();
        t.commit_row(3, &pk, 3, 3);
        assert_eq!(stats(&t), (0, 0));
    }

    #[test]
    fn a_fixed_table_stores_every_row_in_its_layouts_length() {
        use crate::format::{ColumnWidth, FixedLayout};
        let layout = FixedLayout::new(&[ColumnWidth::Number, ColumnWidth::Bytes(40)]);
        let t = Table::new(vec![(0, Collation::Binary)], Vec::new(), RowFormat::Fixed(layout.clone()));
        for (id, name) in [(1, "a"), (2, "a much longer name")] {
            let pk = t.write_row(&t.write_latch(), 1, &row(id, name)).unwrap();
            assert_eq!(t.get(&pk, &ReadView::current(1)).as_deref(), Some(&row(id, name)));
        }
        assert_eq!(t.statistics().data_bytes as usize, 2 * layout.row_len());
    }

    #[test]
    fn a_bulk_write_holds_back_non_unique_entries_until_the_merge_and_checks_unique_ones_at_once() {
        let t = Table::new(
            vec![(0, Collation::Binary)],
            vec![
                IndexDef { name: "u".into(), parts: vec![(1, Collation::Utf8mb4Bin)], unique: true },
                IndexDef { name: "k".into(), parts: vec![(2, Collation::Binary)], unique: false },
            ],
            RowFormat::Dynamic,
        );
        let r = |id: i64, u: &str, k: i64| vec![Value::Int(id), Value::Str(u.into()), Value::Int(k)];
        let latch = t.write_latch();
        let mut deferred = DeferredEntries::default();
        for (id, k) in [(1, 30), (2, 10), (3, 20)] {
            let row = r(id, &format!("u{id}"), k);
            t.write_image_deferred(&latch, 1, Some(&t.primary_key(&row)), &t.row_format().encode(&row), &mut deferred).unwrap();
        }
        let row = r(4, "u2", 0);
        assert!(matches!(
            t.write_image_deferred(&latch, 1, None, &t.row_format().encode(&row), &mut deferred),
            Err(WriteError::Duplicate { index: Some(0), .. })
        ));
        assert_eq!(deferred.len(), 3, "one entry of index k per row written");
        let all = |t: &Table| {
            t.index_scan(1, Bound::Unbounded, Bound::Unbounded, ReadView::current(1), ScanOrder::Ascending).map(|(_, row)| row[0].clone()).collect::<Vec<_>>()
        };
        assert!(all(&t).is_empty(), "held back until the merge");
        t.merge_deferred(&latch, deferred);
        assert_eq!(all(&t), vec![Value::Int(2), Value::Int(3), Value::Int(1)], "in key order of k");
        drop(latch);
        let pk = t.primary_key(&r(2, "", 0));
        t.undo_last(1, &pk);
        assert_eq!(all(&t), vec![Value::Int(3), Value::Int(1)], "undo removes a merged entry");
    }

    #[test]
    fn committed_delete_is_purged_when_no_reader_needs_it() {
        let t = table();
        let pk = t.write_row(&t.write_latch(), 1, &row(1, "a")).unwrap();
        t.commit_row(1, &pk, 1, 1);
        t.delete_row(2, &pk).unwrap();
        t.commit_row(2, &pk, 2, 2);
        assert_eq!(t.statistics().rows, 0);
        assert!(t.write_row(&t.write_latch(), 3, &row(2, "a")).is_ok(), "unique key free again");
    }

    /// The plain path [`Table::replace_committed`] stands for: push the version, then commit
    /// it keeping nothing older.
    fn apply_committed_plain(t: &Table, pk: &[u8], row: Option<&Row>, ts: Timestamp) {
        if row.is_none() && !t.has_chain(pk) {
            return;
        }
        let version = row.map(|r| t.new_version(r));
        t.rows.with_or_insert(pk, |chain| {
            t.push_version(chain, RECOVERY_TXN, pk, version, None);
            t.commit_chain(chain, RECOVERY_TXN, pk, ts, Timestamp::MAX);
        });
    }

    /// Every chain's versions, every index's entries (with their primary keys) and the byte
    /// counts.
    pub(crate) type WholeState = (Vec<String>, Vec<Vec<(Vec<u8>, Vec<u8>)>>, Statistics);

    pub(crate) fn whole_state(t: &Table) -> WholeState {
        let mut chains = Vec::new();
        let mut walk = Walk::new(Bound::Unbounded, Bound::Unbounded, ScanOrder::Ascending);
        while !walk.is_done() {
            t.rows.step(&mut walk, |pk, chain| {
                chains.push(format!("{pk:?} {:?}", chain.versions));
                true
            });
        }
        let entries = t.indexes.iter().map(|idx| idx.entries_in(Bound::Unbounded, Bound::Unbounded, ScanOrder::Ascending).collect()).collect();
        (chains, entries, t.statistics())
    }

    /// The fast path against the plain one: installing committed versions as recovery does
    /// ([`Handler::apply_committed`], [`Table::replace_committed`]) leaves the same chains,
    /// index entries and byte counts as pushing each version and committing it, over chains
    /// with older versions a reader kept, NULL keys, keys equal under a case-insensitive
    /// collation, updates that keep or change a key, and deletes.
    #[test]
    fn replacing_committed_versions_is_pushing_and_committing() {
        use rand::rngs::StdRng;
        use rand::{RngExt, SeedableRng};
        let indexes = || {
            vec![
                IndexDef { name: "grp".into(), parts: vec![(1, Collation::Binary), (2, Collation::Utf8mb4AiCi)], unique: false },
                IndexDef { name: "name".into(), parts: vec![(2, Collation::Utf8mb4AiCi)], unique: true },
            ]
        };
        let names = ["a", "A", "b", "bee", "B"];
        for seed in 0..40 {
            let replay = format!("seed {seed}: cargo test -p quill-storage replacing_committed_versions");
            let fast = Table::new(vec![(0, Collation::Binary)], indexes(), RowFormat::Dynamic);
            let plain = Table::new(vec![(0, Collation::Binary)], indexes(), RowFormat::Dynamic);
            let mut rng = StdRng::seed_from_u64(seed);
            let mut ts = 0;
            for txn in 1..=400 {
                ts += 1;
                let id = rng.random_range(0..40_i64);
                let grp = if rng.random_bool(0.2) { Value::Null } else { Value::Int(rng.random_range(0..4)) };
                let r = rng.random_bool(0.8).then(|| vec![Value::Int(id), grp, Value::Str(names[rng.random_range(0..names.len())].into())]);
                let as_transaction = rng.random_bool(0.3);
                for t in [&fast, &plain] {
                    let pk = t.encode_primary(&[Value::Int(id)]);
                    if as_transaction {
                        // A transaction's write, under a reader that keeps the versions before it.
                        let latch = t.write_latch();
                        let written = match &r {
                            Some(r) if t.get(&pk, &ReadView::current(txn)).is_some() => t.update_row(&latch, txn, &pk, r.clone()).map(drop),
                            Some(r) => t.write_row(&latch, txn, r).map(drop),
                            None if t.get(&pk, &ReadView::current(txn)).is_some() => t.delete_row(txn, &pk),
                            None => continue,
                        };
                        drop(latch);
                        if written.is_ok() {
                            t.commit_row(txn, &pk, ts, 0);
                        } else {
                            t.rollback_row(txn, &pk);
                        }
                    } else if std::ptr::eq(t, &fast) {
                        t.apply_committed(&pk, r.clone(), ts);
                    } else {
                        apply_committed_plain(t, &pk, r.as_ref(), ts);
                    }
                }
            }
            assert_eq!(whole_state(&fast), whole_state(&plain), "{replay}");
        }
    }

    /// Readers scan while writers insert, update and delete other rows, and two writers
    /// race for one unique key: every scan sees a consistent committed state (no torn
    /// rows), and the unique key is taken exactly once.
    #[test]
    fn readers_and_writers_share_a_table_across_threads() {
        const WRITERS: u64 = 4;
        const ROWS_PER_WRITER: u64 = 500;
        let t = table();
        let latch = t.write_latch();
        for id in 0..100 {
            let pk = t.write_row(&latch, 1, &row(id, &format!("base{id}"))).unwrap();
            t.commit_row(1, &pk, 1, 1);
        }
        drop(latch);
        let ts = std::sync::atomic::AtomicU64::new(2);
        let unique_winners = std::sync::atomic::AtomicU64::new(0);
        std::thread::scope(|scope| {
            for w in 0..WRITERS {
                let (t, ts, unique_winners) = (&t, &ts, &unique_winners);
                scope.spawn(move || {
                    let txn = 10 + w;
                    for n in 0..ROWS_PER_WRITER {
                        let id = i64::try_from(1000 + w * ROWS_PER_WRITER + n).unwrap();
                        let pk = t.write_row(&t.write_latch(), txn, &row(id, &format!("w{w}n{n}"))).unwrap();
                        let commit = ts.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        t.commit_row(txn, &pk, commit, 0);
                    }
                    match t.write_row(&t.write_latch(), txn, &row(i64::try_from(9000 + w).unwrap(), "contended")) {
                        Ok(pk) => {
                            unique_winners.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                            t.commit_row(txn, &pk, ts.fetch_add(1, std::sync::atomic::Ordering::SeqCst), 0);
                        }
                        Err(WriteError::Duplicate { .. } | WriteError::Locked { .. }) => {}
                    }
                });
            }
            scope.spawn(|| {
                for _ in 0..50 {
                    let seen: Vec<_> = t.scan(Bound::Unbounded, Bound::Unbounded, view(99, 1), ScanOrder::Ascending).collect();
                    assert_eq!(seen.len(), 100, "a view at timestamp 1 sees exactly the base rows");
                    assert!(seen.iter().all(|(_, r)| matches!(&r[1], Value::Str(s) if s.starts_with("base"))));
                }
            });
        });
        assert_eq!(unique_winners.into_inner(), 1, "one writer takes the contended unique key");
        let all = t.scan(Bound::Unbounded, Bound::Unbounded, ReadView::current(99), ScanOrder::Ascending).count();
        assert_eq!(all as u64, 100 + WRITERS * ROWS_PER_WRITER + 1);
    }
}
