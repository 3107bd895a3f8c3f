//! The handler API: the one way the SQL layer reaches a table's rows, as MySQL's storage
//! engines are reached through `handler`.
//!
//! A [`Handler`] owns one table's rows and indexes, and the versions of those rows: MVCC
//! visibility lives inside the engine (as in InnoDB), so reads take a [`ReadView`] and
//! writes name their transaction, and the engine is told when a transaction's writes
//! commit or roll back. Locks, waits and read-view choice stay above it, in `txn` and
//! `sql`. Reads return cursors and values that own what they return (shared row versions,
//! encoded keys), so nothing in `sql` depends on rows being in memory: a disk-resident
//! engine implements the same trait.
//!
//! Keys are the order-preserving encodings of `key::encode_key`; index numbers are
//! positions in the table's secondary indexes (gap locks number the primary key 0 and
//! secondary index `i` as `i + 1`).
//!
//! The in-memory MVCC store, [`crate::table::Table`], is the first implementation
//! (`SHOW ENGINES` names it `InnoDB`, the engine MySQL clients expect).
//!
//! Thread safety: every method takes `&self`; a handler is shared by every session.
//! Invariants the engine keeps are in [`crate::table`]'s documentation.

use std::ops::Bound;

use crate::format::RowFormat;
use crate::table::{GapAround, ReadView, SharedRow, Timestamp, TxnId, WriteError, WriteLatch};
use crate::value::{Row, Value};

/// A scan's cursor: `(primary key, row version)` pairs in the order of the key scanned.
pub type RowCursor<'a> = Box<dyn Iterator<Item = (Vec<u8>, SharedRow)> + 'a>;

/// A locking scan's cursor: every row chain of the range in key order, whatever its
/// versions, as `(primary key, the transaction holding uncommitted versions of it, the
/// version the view sees)`.
pub type ChainCursor<'a> = Box<dyn Iterator<Item = (Vec<u8>, Option<TxnId>, Option<SharedRow>)> + 'a>;

/// Which way a scan walks its key: ORDER BY ... DESC LIMIT reads an index backwards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScanOrder {
    Ascending,
    Descending,
}

/// What the planner may ask a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Statistics {
    /// Rows, live or not (an estimate).
    pub rows: u64,
    /// Bytes of the row images the table holds, every version counted (`Data_length`).
    pub data_bytes: u64,
    /// Bytes of its primary keys and secondary-index entries (`Index_length`).
    pub index_bytes: u64,
}

/// The row a logged change replaced, as recovery knows it ([`Handler::redo_committed`]).
#[derive(Debug, Clone, Copy)]
pub enum Replaced<'a> {
    /// None: the change is an insert.
    Nothing,
    /// This row.
    Row(&'a Row),
    /// The log does not hold it.
    Unknown,
}

/// One table of a storage engine. See the module documentation.
pub trait Handler: Send + Sync + std::fmt::Debug {
    /// The engine's name, as `SHOW ENGINES` and `information_schema.TABLES` show it.
    fn engine_name(&self) -> &'static str;

    /// Statistics for the planner and `SHOW TABLE STATUS`.
    fn statistics(&self) -> Statistics;

    /// How the table lays out its rows (`ROW_FORMAT`).
    fn row_format(&self) -> &RowFormat;

    // ---- keys ----------------------------------------------------------------------

    fn has_primary_key(&self) -> bool;
    /// The encoded primary key of `row` (tables with a primary key only).
    fn primary_key(&self, row: &Row) -> Vec<u8>;
    /// Encode a primary key from values given in key-part order.
    fn encode_primary(&self, values: &[Value]) -> Vec<u8>;
    /// Encode a (possibly partial, leading-parts) key of secondary index `index`.
    fn encode_index(&self, index: usize, values: &[Value]) -> Vec<u8>;
    /// The primary key an insert of `row` will take (stable under the write latch).
    fn insert_key(&self, row: &Row) -> Vec<u8>;
    /// The entries `row`, stored at `pk`, has in each secondary index (numbered from 1).
    fn index_entries(&self, row: &Row, pk: &[u8]) -> Vec<(u32, Vec<u8>)>;

    // ---- AUTO_INCREMENT (not transactional, as in InnoDB) ----------------------------

    fn auto_increment(&self) -> u64;
    fn set_auto_increment(&self, next: u64);
    /// Hand out the next value.
    fn take_auto_increment(&self) -> u64;
    /// Move the counter to at least `next`.
    fn raise_auto_increment(&self, next: u64);

    // ---- reads -----------------------------------------------------------------------

    /// Point read: the version of the row at `pk` that `view` sees.
    fn get(&self, pk: &[u8], view: &ReadView) -> Option<SharedRow>;
    /// The newest version of the row at `pk`, committed or not.
    fn newest(&self, pk: &[u8]) -> Option<SharedRow>;
    /// Range or full scan of the primary key through `view`.
    fn scan<'a>(&'a self, lower: Bound<&[u8]>, upper: Bound<&[u8]>, view: ReadView, order: ScanOrder) -> RowCursor<'a>;
    /// The rows `view` sees whose key in secondary index `index` lies in the range (bounds
    /// are encoded index-key prefixes), with their primary keys, in index order: a cursor,
    /// so a reader that stops early (ORDER BY ... LIMIT) reads no further.
    fn index_scan<'a>(&'a self, index: usize, lower: Bound<&[u8]>, upper: Bound<&[u8]>, view: ReadView, order: ScanOrder) -> RowCursor<'a>;
    /// Every row chain in the primary-key range, whatever its versions, with its holder and
    /// the version `view` sees, read as the cursor advances (a locking scan under a record
    /// range, which locks explicitly only rows another transaction holds).
    fn scan_chains<'a>(&'a self, lower: Bound<&[u8]>, upper: Bound<&[u8]>, view: ReadView) -> ChainCursor<'a>;
    /// Every row chain of the table in primary-key order, as [`Handler::scan_chains`], but
    /// with the image `view` sees in the table's row format ([`Handler::row_format`]) rather
    /// than a row: what a copy of whole rows into a table of the same shape reads
    /// (`INSERT ... SELECT *`), with no value built. Filled a batch at a time.
    fn image_cursor<'a>(&'a self, view: ReadView) -> Box<dyn ImageCursor + 'a>;
    /// Every row in the primary-key range whatever its versions (for locking reads).
    fn keys_in_range(&self, lower: Bound<&[u8]>, upper: Bound<&[u8]>) -> Vec<Vec<u8>>;
    /// Every entry of secondary index `index` in the range, whatever its versions.
    fn index_keys_in_range(&self, index: usize, lower: Bound<&[u8]>, upper: Bound<&[u8]>) -> Vec<Vec<u8>>;
    /// The gap a locking scan of the range locks, widened to the neighbouring entries.
    fn gap_around(&self, index: u32, lower: Bound<&[u8]>, upper: Bound<&[u8]>) -> Option<GapAround>;
    /// The primary key an entry of secondary index `index` points at.
    fn index_entry_pk(&self, index: usize, entry: &[u8]) -> Option<Vec<u8>>;
    /// Whether the row at `pk` has any version, committed or not, live or deleted.
    fn has_chain(&self, pk: &[u8]) -> bool;
    /// The transaction holding uncommitted versions of the row at `pk` (they are its newest):
    /// the holder of the row's implicit lock when it has no explicit one (`quill_txn::locks`).
    fn holder(&self, pk: &[u8]) -> Option<TxnId>;
    /// The commit timestamp of the newest committed version of the row at `pk`.
    fn newest_commit_ts(&self, pk: &[u8]) -> Option<Timestamp>;
    /// Every row `view` sees, in primary-key order (copies and checkpoints).
    fn snapshot_rows(&self, view: ReadView) -> Vec<Row> {
        self.scan(Bound::Unbounded, Bound::Unbounded, view, ScanOrder::Ascending).map(|(_, r)| Row::clone(&r)).collect()
    }

    // ---- writes ----------------------------------------------------------------------

    /// The table's write latch: held for one row write (see [`WriteLatch`]).
    fn write_latch(&self) -> WriteLatch<'_>;
    /// Insert `row` for `txn`; returns its primary key.
    ///
    /// # Errors
    /// `Locked` when another transaction holds the key or a conflicting unique key;
    /// `Duplicate` when a row with the same primary or unique key exists.
    fn write_row(&self, latch: &WriteLatch<'_>, txn: TxnId, row: &Row) -> Result<Vec<u8>, WriteError>;
    /// Replace the row at `pk` with `row`; returns the (possibly new) primary key.
    ///
    /// # Errors
    /// As [`Handler::write_row`].
    fn update_row(&self, latch: &WriteLatch<'_>, txn: TxnId, pk: &[u8], row: Row) -> Result<Vec<u8>, WriteError>;
    /// Delete the row at `pk`.
    ///
    /// # Errors
    /// `Locked` when another transaction holds the row.
    fn delete_row(&self, txn: TxnId, pk: &[u8]) -> Result<(), WriteError>;
    /// Many rows are about to be written (`INSERT ... SELECT`, multi-row INSERT, LOAD DATA);
    /// `rows` is an estimate when known. The in-memory engine has nothing to prepare.
    fn start_bulk_insert(&self, rows: Option<u64>) {
        let _ = rows;
    }
    /// The bulk write begun by [`Handler::start_bulk_insert`] is over.
    fn end_bulk_insert(&self) {}
    /// [`Handler::write_row`] for one row of a bulk write's buffer, given as its image in
    /// the table's row format (`row_format().encode`) and the primary key it goes to
    /// (`insert_key`; `None` for a table keyed by hidden row id, which assigns it): the
    /// buffer holds images, so a buffered row takes its stored size and is not encoded
    /// again (the table copies the image). The row's entries in non-unique secondary indexes go to `deferred` instead of
    /// the indexes, for [`Handler::merge_deferred`] to insert in key order once the buffer is
    /// written. Unique indexes are written at once (later rows are checked against them).
    /// REQUIRES: `latch` held from the first such write to the merge, so nobody sees the
    /// table with entries held back.
    ///
    /// # Errors
    /// As [`Handler::write_row`].
    fn write_image_deferred(
        &self,
        latch: &WriteLatch<'_>,
        txn: TxnId,
        pk: Option<&[u8]>,
        image: &[u8],
        deferred: &mut DeferredEntries,
    ) -> Result<Vec<u8>, WriteError> {
        let _ = (pk, deferred);
        let row = self.row_format().decode(image).expect("a bulk write's image was encoded in the table's format");
        self.write_row(latch, txn, &row)
    }
    /// Inserts the entries [`Handler::write_image_deferred`] held back, each index's sorted.
    fn merge_deferred(&self, latch: &WriteLatch<'_>, deferred: DeferredEntries) {
        let _ = (latch, deferred);
    }

    // ---- transaction outcome -----------------------------------------------------------

    /// Undo the newest version `txn` wrote on `pk` (a failed statement).
    fn undo_last(&self, txn: TxnId, pk: &[u8]);
    /// Make `txn`'s writes to `pk` committed at `ts`, purging versions no reader at or
    /// after `purge_horizon` sees; `false` when `txn` had no pending version there.
    fn commit_row(&self, txn: TxnId, pk: &[u8], ts: Timestamp, purge_horizon: Timestamp) -> bool;
    /// Remove every uncommitted version `txn` wrote on `pk`.
    fn rollback_row(&self, txn: TxnId, pk: &[u8]);
    /// The commit path's walk over rows `txn` wrote: their pending images for the log, then
    /// [`Handler::commit_row`], row after row, cheapest when the rows come in key order.
    fn written_rows<'a>(&'a self, txn: TxnId) -> Box<dyn WrittenRows + 'a>;
    /// Install a committed image (or a delete) at `pk` as of `ts`: recovery and copies.
    fn apply_committed(&self, pk: &[u8], row: Option<Row>, ts: Timestamp);
    /// Recovery's [`Handler::apply_committed`] of a logged change, told the row the change
    /// replaced as the log holds it. With `lazy`, a paged table may leave the change for the
    /// leaves it touches to take when they are next read in ([`Handler::redo_pending`]),
    /// instead of reading them now: it must read them when the change moves index entries
    /// and the log does not hold the row replaced.
    fn redo_committed(&self, pk: &[u8], row: Option<Row>, replaced: Replaced<'_>, ts: Timestamp, lazy: bool) {
        let _ = (replaced, lazy);
        self.apply_committed(pk, row, ts);
    }
    /// Recovery's changes still waiting for their leaves ([`Handler::redo_committed`]).
    fn redo_pending(&self) -> u64 {
        0
    }
    /// Reads in every leaf that recovery's changes wait for, applying them.
    fn drain_redo(&self) {}
    /// A hint that [`Handler::apply_committed`] will soon install a row at `pk`: a paged
    /// table asks the OS to start reading the leaves the install uses, and reads nothing
    /// itself: the row's leaf, and the index leaves of the entries of each of `rows` (the
    /// row to install, and the row it replaces when the caller knows it). Recovery calls it
    /// for a batch of log records before applying them, so that their reads overlap.
    fn read_ahead(&self, _pk: &[u8], _rows: &[&Row]) {}
    /// The second pass of [`Handler::read_ahead`], for an install whose replaced row the
    /// caller does not know: the row at `pk` is read as it stands (its leaf asked for by the
    /// first pass), and the index leaves of its entries, which the install removes, are
    /// asked for.
    fn read_ahead_current(&self, _pk: &[u8]) {}

    /// This table with `added` secondary indexes after its own, built from its rows, which
    /// the new table shares with this one (CREATE INDEX and ALTER TABLE ... ADD INDEX with
    /// no copy of the rows). The caller keeps every writer out of the table while it runs
    /// and uses only the new table after (`table/build.rs`).
    ///
    /// # Errors
    /// [`WriteError::Duplicate`] with the new index's position when a unique index meets two
    /// rows with one key.
    fn with_indexes(&self, added: Vec<crate::table::IndexDef>) -> Result<std::sync::Arc<dyn Handler>, WriteError>;

    // ---- pages (a paged engine; an in-memory one has none) -------------------------------

    /// Writes the table as `view` sees it for a checkpoint, as stable pages, and syncs them;
    /// `horizon` is the oldest timestamp any view reads at (versions at or before it look
    /// the same to all). `None`: the table keeps its rows in memory, and the checkpoint
    /// copies them row by row ([`Handler::image_cursor`]).
    ///
    /// # Errors
    /// I/O errors.
    fn write_pages(&self, view: ReadView, horizon: Timestamp) -> std::io::Result<Option<crate::tablespace::TablePages>> {
        let _ = (view, horizon);
        Ok(None)
    }

    /// A checkpoint naming `pages` is durable and recovery starts from it: blocks replaced
    /// since that it does not name are free.
    fn pages_durable(&self, pages: &crate::tablespace::TablePages) {
        let _ = pages;
    }

    /// A paged table's file space: bytes allocated and bytes of them free (`DATA_FREE`).
    fn space(&self) -> Option<(u64, u64)> {
        None
    }
}

/// A cursor over row images ([`Handler::image_cursor`]).
pub trait ImageCursor {
    /// Replaces what `batch` holds with the next rows, at most [`IMAGE_BATCH_ROWS`] of
    /// them; `false` (and `batch` empty) once the table is read to its end. Holds nothing
    /// of the table between calls.
    fn next_batch(&mut self, batch: &mut ImageBatch) -> bool;
}

/// The most rows an [`ImageCursor`] hands out at a time: a leaf of the in-memory store.
pub const IMAGE_BATCH_ROWS: usize = crate::leaf_map::LEAF_ENTRIES_MAX;

/// Rows an [`ImageCursor`] read: each row's primary key, the transaction holding
/// uncommitted versions of it, and the image the cursor's view sees (none: the view sees no
/// version), the bytes back to back in one buffer that is reused from batch to batch.
#[derive(Debug, Default)]
pub struct ImageBatch {
    bytes: Vec<u8>,
    entries: Vec<ImageEntry>,
}

#[derive(Debug, Clone, Copy)]
struct ImageEntry {
    /// Where the key ends in `bytes` (it starts where the entry before ends).
    key_end: usize,
    /// Where the image ends, right after the key; `None`: no visible version.
    image_end: Option<usize>,
    holder: Option<TxnId>,
}

/// One row of an [`ImageBatch`].
#[derive(Debug, Clone, Copy)]
pub struct ImageRef<'a> {
    pub key: &'a [u8],
    pub holder: Option<TxnId>,
    pub image: Option<&'a [u8]>,
}

impl ImageBatch {
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.entries.clear();
    }

    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Adds a row at the end.
    pub fn push(&mut self, key: &[u8], holder: Option<TxnId>, image: Option<&[u8]>) {
        self.bytes.extend_from_slice(key);
        let key_end = self.bytes.len();
        let image_end = image.map(|image| {
            self.bytes.extend_from_slice(image);
            self.bytes.len()
        });
        self.entries.push(ImageEntry { key_end, image_end, holder });
    }

    /// The rows, in the order they were pushed.
    pub fn iter(&self) -> impl Iterator<Item = ImageRef<'_>> {
        let mut start = 0;
        self.entries.iter().map(move |e| {
            let key = &self.bytes[start..e.key_end];
            let image = e.image_end.map(|end| &self.bytes[e.key_end..end]);
            start = e.image_end.unwrap_or(e.key_end);
            ImageRef { key, holder: e.holder, image }
        })
    }
}

/// Rows one transaction wrote, visited in turn by the commit path ([`Handler::written_rows`]):
/// an engine may keep its place between calls, so rows written in key order (a bulk
/// insert's) are found without a search each.
pub trait WrittenRows {
    /// What the transaction did to the row at `pk`, from its versions: the committed version
    /// its first pending one replaced (none, or a delete: no row before) and its newest
    /// pending version (a delete: no row after), which the commit log records before the
    /// versions are stamped committed. The new image goes to `after`, and for an update or a
    /// delete the replaced one to `before` when given, both appended as log rows (dynamic
    /// images, `docs/log-format.md`, "Row encoding"). `None` when the transaction has no
    /// pending version there.
    fn pending_change(&mut self, pk: &[u8], before: Option<&mut Vec<u8>>, after: &mut Vec<u8>) -> Option<RowChange>;
    /// As [`Handler::commit_row`].
    fn commit_row(&mut self, pk: &[u8], ts: Timestamp, purge_horizon: Timestamp) -> bool;
}

/// What a transaction did to one row, as the commit log records it
/// ([`WrittenRows::pending_change`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowChange {
    /// No row was there (or a deleted one) and there is one now.
    Insert,
    /// A row was there and is replaced.
    Update,
    /// A row was there and is gone.
    Delete,
    /// No row before and none after: a row the transaction inserted and deleted again.
    Nothing,
}

/// Secondary-index entries a bulk write held back ([`Handler::write_image_deferred`]): per
/// index (by position), `(entry, primary key)` pairs in the order the rows came.
#[derive(Debug, Default)]
pub struct DeferredEntries {
    pub per_index: Vec<Vec<(Vec<u8>, Vec<u8>)>>,
}

impl DeferredEntries {
    /// How many entries are held back.
    #[must_use]
    pub fn len(&self) -> usize {
        self.per_index.iter().map(Vec::len).sum()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The storage engines this build has: name and comment, as `SHOW ENGINES` lists them.
/// There is one: the in-memory MVCC row store, under the name MySQL clients expect.
pub const ENGINES: [(&str, &str); 1] =
    [("InnoDB", "Quill's MVCC row store: rows in memory, durable through the commit log and checkpoints; row locks and transactions")];

/// The engine a table gets when CREATE TABLE names none.
pub const DEFAULT_ENGINE: &str = ENGINES[0].0;

/// A new, empty table of `engine` (a name from [`ENGINES`], any letter case), keyed by
/// `primary` (empty: a hidden row id) with secondary indexes `indexes`, its rows laid out in
/// `format`; `None` for an engine this build does not have.
#[must_use]
pub fn create(engine: &str, primary: Vec<crate::table::KeyPart>, indexes: Vec<crate::table::IndexDef>, format: RowFormat) -> Option<Box<dyn Handler>> {
    engine.eq_ignore_ascii_case(DEFAULT_ENGINE).then(|| Box::new(crate::table::Table::new(primary, indexes, format)) as Box<dyn Handler>)
}
