//! The in-memory MVCC row store for one table.
//!
//! Rows live in an ordered primary index (`BTreeMap` from encoded primary key to a
//! [`Chain`] of versions). Each version records the transaction that wrote it and,
//! once that transaction commits, its commit timestamp; a delete is a version with
//! no row. Secondary indexes map `index key ++ primary key` to the primary key and
//! hold an entry for every key that any live version of the row has, so a reader
//! always re-checks the row it finds against the key it looked for.
//!
//! Invariants:
//! - at most one transaction has uncommitted versions on a row, and they are the
//!   newest in its chain (a second writer gets [`WriteError::Locked`]);
//! - a transaction may stack several versions on one row (one per statement that
//!   wrote it) so a failed statement can pop exactly what it pushed;
//! - committed versions are in commit-timestamp order.
//!
//! Locking, waiting and the choice of read view are the `txn` and `sql` layers'
//! business; this module only answers "who holds this row" and "what does this
//! view see".

use std::collections::BTreeMap;
use std::ops::Bound;

use crate::key::{encode_key, prefix_successor, range_is_empty};
use crate::value::{Collation, Row, Value};

/// A transaction's identity, unique for the life of the server.
pub type TxnId = u64;
/// A commit timestamp: commits are numbered in the order they happen.
pub type Timestamp = u64;

/// The transaction id recovery writes under; never handed to a session.
pub const RECOVERY_TXN: TxnId = 0;

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

#[derive(Debug, Clone)]
struct Version {
    txn: TxnId,
    commit_ts: Option<Timestamp>,
    row: Option<Row>,
}

#[derive(Debug, Clone, Default)]
struct Chain {
    /// Oldest first.
    versions: Vec<Version>,
}

impl Chain {
    fn visible(&self, view: &ReadView) -> Option<&Row> {
        for v in self.versions.iter().rev() {
            if view.uncommitted || v.txn == view.txn || v.commit_ts.is_some_and(|ts| ts <= view.read_ts) {
                return v.row.as_ref();
            }
        }
        None
    }

    fn holder(&self) -> Option<TxnId> {
        self.versions.last().filter(|v| v.commit_ts.is_none()).map(|v| v.txn)
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

#[derive(Debug, Clone)]
struct SecondaryIndex {
    def: IndexDef,
    /// `index key ++ primary key` -> primary key.
    entries: BTreeMap<Vec<u8>, Vec<u8>>,
}

/// One table's rows and indexes.
#[derive(Debug, Clone)]
pub struct Table {
    /// Key parts of the primary key; empty when the table has none and rows are
    /// keyed by a hidden row id, as InnoDB does.
    primary: Vec<KeyPart>,
    indexes: Vec<SecondaryIndex>,
    rows: BTreeMap<Vec<u8>, Chain>,
    /// The next AUTO_INCREMENT value to hand out (not transactional, as in InnoDB).
    pub auto_increment: u64,
    next_row_id: u64,
}

impl Table {
    #[must_use]
    pub fn new(primary: Vec<KeyPart>, indexes: Vec<IndexDef>) -> Table {
        Table {
            primary,
            indexes: indexes.into_iter().map(|def| SecondaryIndex { def, entries: BTreeMap::new() }).collect(),
            rows: BTreeMap::new(),
            auto_increment: 1,
            next_row_id: 1,
        }
    }

    #[must_use]
    pub fn has_primary_key(&self) -> bool {
        !self.primary.is_empty()
    }

    #[must_use]
    pub fn index_defs(&self) -> Vec<&IndexDef> {
        self.indexes.iter().map(|i| &i.def).collect()
    }

    /// Number of row chains, live or not: an estimate for statistics.
    #[must_use]
    pub fn approximate_rows(&self) -> usize {
        self.rows.len()
    }

    /// The encoded primary key of `row` (tables with a primary key only).
    #[must_use]
    pub fn primary_key(&self, row: &Row) -> Vec<u8> {
        assert!(self.has_primary_key(), "primary_key() on a table keyed by hidden row id");
        encode_key(self.primary.iter().map(|&(c, coll)| (&row[c], coll)))
    }

    /// Encode a primary key from values given in key-part order.
    #[must_use]
    pub fn encode_primary(&self, values: &[Value]) -> Vec<u8> {
        encode_key(values.iter().zip(&self.primary).map(|(v, &(_, coll))| (v, coll)))
    }

    /// Encode a (possibly partial, leading-parts) key of secondary index `index`.
    #[must_use]
    pub fn encode_index(&self, index: usize, values: &[Value]) -> Vec<u8> {
        let parts = &self.indexes[index].def.parts;
        encode_key(values.iter().zip(parts).map(|(v, &(_, coll))| (v, coll)))
    }

    fn index_key(def: &IndexDef, row: &Row) -> Vec<u8> {
        encode_key(def.parts.iter().map(|&(c, coll)| (&row[c], coll)))
    }

    /// The version of the row at `pk` that `view` sees.
    #[must_use]
    pub fn get(&self, pk: &[u8], view: &ReadView) -> Option<&Row> {
        self.rows.get(pk).and_then(|c| c.visible(view))
    }

    /// The transaction holding uncommitted versions of the row at `pk`, if any.
    #[must_use]
    pub fn holder(&self, pk: &[u8]) -> Option<TxnId> {
        self.rows.get(pk).and_then(Chain::holder)
    }

    /// Rows visible to `view` with primary keys in the range, in key order.
    pub fn scan<'a>(&'a self, lower: Bound<&[u8]>, upper: Bound<&[u8]>, view: ReadView) -> impl DoubleEndedIterator<Item = (&'a Vec<u8>, &'a Row)> + 'a {
        // `BTreeMap::range` panics on an inverted range; `[x, x)` is its empty range.
        let (lower, upper) = if range_is_empty(lower, upper) {
            (Bound::Included(Vec::new()), Bound::Excluded(Vec::new()))
        } else {
            (lower.map(<[u8]>::to_vec), upper.map(<[u8]>::to_vec))
        };
        self.rows.range::<Vec<u8>, _>((lower, upper)).filter_map(move |(k, c)| c.visible(&view).map(|r| (k, r)))
    }

    /// Primary keys of rows visible to `view` whose key in secondary index `index`
    /// lies in the range (bounds are encoded index-key prefixes), in index order.
    #[must_use]
    pub fn index_scan(&self, index: usize, lower: Bound<&[u8]>, upper: Bound<&[u8]>, view: &ReadView) -> Vec<Vec<u8>> {
        let idx = &self.indexes[index];
        // Entries are `index key ++ pk`, so an inclusive prefix bound becomes
        // "from the prefix" / "to the prefix's successor".
        let Some((lo, hi)) = Self::entry_range(lower, upper) else { return Vec::new() };
        let mut out: Vec<Vec<u8>> = Vec::new();
        for (entry, pk) in idx.entries.range((lo, hi)) {
            let Some(row) = self.get(pk, view) else { continue };
            let key = Self::index_key(&idx.def, row);
            // The entry may belong to an older or newer version of the row.
            if entry.len() == key.len() + pk.len() && entry.starts_with(&key) && out.last().is_none_or(|p| p != pk) {
                out.push(pk.clone());
            }
        }
        out
    }

    /// Whether the row at `pk` has any version, committed or not, live or deleted.
    #[must_use]
    pub fn has_chain(&self, pk: &[u8]) -> bool {
        self.rows.contains_key(pk)
    }

    /// Primary keys of every row chain in the range, whatever its versions (a locking
    /// read locks rows other transactions are inserting or deleting too).
    #[must_use]
    pub fn keys_in_range(&self, lower: Bound<&[u8]>, upper: Bound<&[u8]>) -> Vec<Vec<u8>> {
        if range_is_empty(lower, upper) {
            return Vec::new();
        }
        self.rows.range::<[u8], _>((lower, upper)).map(|(k, _)| k.clone()).collect()
    }

    /// Primary keys of every entry of secondary index `index` in the range (bounds are
    /// encoded index-key prefixes), whichever version of the row it came from.
    #[must_use]
    pub fn index_keys_in_range(&self, index: usize, lower: Bound<&[u8]>, upper: Bound<&[u8]>) -> Vec<Vec<u8>> {
        let Some(range) = Self::entry_range(lower, upper) else { return Vec::new() };
        let mut out: Vec<Vec<u8>> = Vec::new();
        for (_, pk) in self.indexes[index].entries.range(range) {
            if !out.contains(pk) {
                out.push(pk.clone());
            }
        }
        out
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

    /// The gap a locking scan of a range of index `index` (0: the primary key, `i + 1`:
    /// secondary index `i`; bounds as for the scans) locks, widened to the neighbouring
    /// entries as InnoDB's next-key locks are: from the last entry below the range
    /// (excluded) to the first entry above it (excluded). Also returns the primary key of
    /// that first entry above, whose record a range scan locks too. `None` for an empty
    /// range.
    #[must_use]
    pub fn gap_around(&self, index: u32, lower: Bound<&[u8]>, upper: Bound<&[u8]>) -> Option<GapAround> {
        let entries = if index == 0 { Some((lower.map(<[u8]>::to_vec), upper.map(<[u8]>::to_vec))) } else { Self::entry_range(lower, upper) };
        // An empty range locks no gap (InnoDB finds an impossible range and reads nothing).
        let (lo, hi) = entries.filter(|(lo, hi)| !range_is_empty(lo.as_ref(), hi.as_ref()))?;
        let below = match &lo {
            Bound::Included(k) => Bound::Excluded(k.clone()),
            Bound::Excluded(k) => Bound::Included(k.clone()),
            Bound::Unbounded => return Some(self.gap_above(index, Bound::Unbounded, hi)),
        };
        let prev = if index == 0 {
            self.rows.range::<Vec<u8>, _>((Bound::Unbounded, below)).next_back().map(|(k, _)| k.clone())
        } else {
            self.indexes[index as usize - 1].entries.range::<Vec<u8>, _>((Bound::Unbounded, below)).next_back().map(|(k, _)| k.clone())
        };
        Some(self.gap_above(index, prev.map_or(Bound::Unbounded, Bound::Excluded), hi))
    }

    fn gap_above(&self, index: u32, lo: Bound<Vec<u8>>, hi: Bound<Vec<u8>>) -> GapAround {
        let above = match hi {
            Bound::Included(k) => Bound::Excluded(k),
            Bound::Excluded(k) => Bound::Included(k),
            Bound::Unbounded => return (lo, Bound::Unbounded, None),
        };
        let next = if index == 0 {
            self.rows.range::<Vec<u8>, _>((above, Bound::Unbounded)).next().map(|(k, _)| (k.clone(), k.clone()))
        } else {
            self.indexes[index as usize - 1].entries.range::<Vec<u8>, _>((above, Bound::Unbounded)).next().map(|(k, pk)| (k.clone(), pk.clone()))
        };
        match next {
            Some((entry, pk)) => (lo, Bound::Excluded(entry), Some(pk)),
            None => (lo, Bound::Unbounded, None),
        }
    }

    /// The primary key an entry of secondary index `index` points at.
    #[must_use]
    pub fn index_entry_pk(&self, index: usize, entry: &[u8]) -> Option<&Vec<u8>> {
        self.indexes.get(index)?.entries.get(entry)
    }

    /// The newest version of the row at `pk`, committed or not (`None`: no row or deleted).
    #[must_use]
    pub fn newest(&self, pk: &[u8]) -> Option<&Row> {
        self.rows.get(pk)?.versions.last()?.row.as_ref()
    }

    /// The primary key an insert of `row` will take.
    #[must_use]
    pub fn insert_key(&self, row: &Row) -> Vec<u8> {
        if self.has_primary_key() { self.primary_key(row) } else { encode_key([(&Value::UInt(self.next_row_id), Collation::Binary)]) }
    }

    /// The entries `row`, stored at `pk`, has in each secondary index (numbered from 1, as
    /// gap locks number them), for the insert-intention check.
    #[must_use]
    pub fn index_entries(&self, row: &Row, pk: &[u8]) -> Vec<(u32, Vec<u8>)> {
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
    #[must_use]
    pub fn newest_commit_ts(&self, pk: &[u8]) -> Option<Timestamp> {
        self.rows.get(pk).and_then(|c| c.versions.iter().rev().find_map(|v| v.commit_ts))
    }

    /// Check unique secondary indexes for `row` (to be stored at `pk`) with a current read.
    fn check_unique(&self, txn: TxnId, pk: &[u8], row: &Row) -> Result<(), WriteError> {
        for (i, idx) in self.indexes.iter().enumerate() {
            if !idx.def.unique || idx.def.parts.iter().any(|&(c, _)| row[c].is_null()) {
                continue;
            }
            let key = Self::index_key(&idx.def, row);
            let hi = prefix_successor(&key).map_or(Bound::Unbounded, Bound::Excluded);
            for (entry, other_pk) in idx.entries.range((Bound::Included(key.clone()), hi)) {
                if other_pk == pk || entry.len() != key.len() + other_pk.len() {
                    continue;
                }
                let chain = &self.rows[other_pk];
                if let Some(holder) = chain.holder().filter(|&h| h != txn) {
                    return Err(WriteError::Locked { holder, pk: other_pk.clone() });
                }
                if let Some(other) = chain.visible(&ReadView::current(txn))
                    && Self::index_key(&idx.def, other) == key
                {
                    return Err(WriteError::Duplicate { index: Some(i), existing_pk: other_pk.clone() });
                }
            }
        }
        Ok(())
    }

    fn push_version(&mut self, txn: TxnId, pk: Vec<u8>, row: Option<Row>) {
        if let Some(r) = &row {
            for idx in &mut self.indexes {
                let mut entry = Self::index_key(&idx.def, r);
                entry.extend_from_slice(&pk);
                idx.entries.insert(entry, pk.clone());
            }
        }
        let chain = self.rows.entry(pk).or_default();
        chain.versions.push(Version { txn, commit_ts: None, row });
    }

    /// Insert a new row. Returns its primary key.
    ///
    /// # Errors
    /// `Locked` if another transaction holds the key or a conflicting unique key;
    /// `Duplicate` if a row with the same primary or unique key exists.
    pub fn insert(&mut self, txn: TxnId, row: Row) -> Result<Vec<u8>, WriteError> {
        let pk = if self.has_primary_key() {
            self.primary_key(&row)
        } else {
            let id = self.next_row_id;
            self.next_row_id += 1;
            encode_key([(&Value::UInt(id), Collation::Binary)])
        };
        if let Some(chain) = self.rows.get(&pk) {
            if let Some(holder) = chain.holder().filter(|&h| h != txn) {
                return Err(WriteError::Locked { holder, pk });
            }
            if chain.visible(&ReadView::current(txn)).is_some() {
                return Err(WriteError::Duplicate { index: None, existing_pk: pk });
            }
        }
        self.check_unique(txn, &pk, &row)?;
        self.push_version(txn, pk.clone(), Some(row));
        Ok(pk)
    }

    /// Replace the row at `pk` with `row`; if its primary key changes, the old key
    /// is deleted and the new one inserted. Returns the new primary key.
    ///
    /// # Errors
    /// As [`Table::insert`].
    pub fn update(&mut self, txn: TxnId, pk: &[u8], row: Row) -> Result<Vec<u8>, WriteError> {
        if let Some(holder) = self.holder(pk).filter(|&h| h != txn) {
            return Err(WriteError::Locked { holder, pk: pk.to_vec() });
        }
        let new_pk = if self.has_primary_key() { self.primary_key(&row) } else { pk.to_vec() };
        if new_pk != pk {
            let new_pk = self.insert(txn, row)?;
            self.push_version(txn, pk.to_vec(), None);
            return Ok(new_pk);
        }
        self.check_unique(txn, pk, &row)?;
        self.push_version(txn, pk.to_vec(), Some(row));
        Ok(new_pk)
    }

    /// Delete the row at `pk`.
    ///
    /// # Errors
    /// `Locked` if another transaction holds the row.
    pub fn delete(&mut self, txn: TxnId, pk: &[u8]) -> Result<(), WriteError> {
        if let Some(holder) = self.holder(pk).filter(|&h| h != txn) {
            return Err(WriteError::Locked { holder, pk: pk.to_vec() });
        }
        self.push_version(txn, pk.to_vec(), None);
        Ok(())
    }

    /// Pop the newest version of `pk`, which `txn` must have written: undoes one
    /// write of a failed statement.
    pub fn undo_last(&mut self, txn: TxnId, pk: &[u8]) {
        let Some(chain) = self.rows.get_mut(pk) else { return };
        let last = chain.versions.last().expect("undo of a row with no versions");
        assert!(last.txn == txn && last.commit_ts.is_none(), "undo of a version this transaction did not write");
        let popped = chain.versions.pop().expect("checked above");
        let removed = vec![popped];
        self.after_removal(pk, &removed);
    }

    /// Make `txn`'s writes to `pk` committed at `ts` (keeping only its last version),
    /// then drop versions no reader at or after `purge_horizon` can see.
    /// Returns the committed row image (`None` for a delete).
    pub fn commit_row(&mut self, txn: TxnId, pk: &[u8], ts: Timestamp, purge_horizon: Timestamp) -> Option<Option<Row>> {
        let chain = self.rows.get_mut(pk)?;
        let own_from = chain.versions.iter().position(|v| v.txn == txn && v.commit_ts.is_none())?;
        let mut removed: Vec<Version> = chain.versions.drain(own_from..chain.versions.len() - 1).collect();
        let last = chain.versions.last_mut().expect("own version present");
        last.commit_ts = Some(ts);
        let image = last.row.clone();
        // Keep the newest version every reader at or after the horizon can see, and all newer.
        if let Some(keep_from) = chain.versions.iter().rposition(|v| v.commit_ts.is_some_and(|t| t <= purge_horizon)) {
            removed.extend(chain.versions.drain(..keep_from));
        }
        let dead = chain.versions.len() == 1 && chain.versions[0].row.is_none() && chain.versions[0].commit_ts.is_some_and(|t| t <= purge_horizon);
        if dead {
            removed.extend(self.rows.remove(pk).expect("chain present").versions);
        }
        self.after_removal(pk, &removed);
        Some(image)
    }

    /// Remove every uncommitted version `txn` wrote on `pk`.
    pub fn rollback_row(&mut self, txn: TxnId, pk: &[u8]) {
        let Some(chain) = self.rows.get_mut(pk) else { return };
        let Some(own_from) = chain.versions.iter().position(|v| v.txn == txn && v.commit_ts.is_none()) else { return };
        let removed: Vec<Version> = chain.versions.drain(own_from..).collect();
        if chain.versions.is_empty() {
            self.rows.remove(pk);
        }
        self.after_removal(pk, &removed);
    }

    /// Drop secondary index entries that only removed versions referenced.
    fn after_removal(&mut self, pk: &[u8], removed: &[Version]) {
        if self.indexes.is_empty() {
            return;
        }
        let remaining: Vec<Row> = self.rows.get(pk).map(|c| c.versions.iter().filter_map(|v| v.row.clone()).collect()).unwrap_or_default();
        for idx in &mut self.indexes {
            for row in removed.iter().filter_map(|v| v.row.as_ref()) {
                let key = Self::index_key(&idx.def, row);
                if remaining.iter().any(|r| Self::index_key(&idx.def, r) == key) {
                    continue;
                }
                let mut entry = key;
                entry.extend_from_slice(pk);
                idx.entries.remove(&entry);
            }
        }
        if let Some(chain) = self.rows.get(pk)
            && chain.versions.is_empty()
        {
            self.rows.remove(pk);
        }
    }

    /// The row image `txn` has pending on `pk` (its newest, uncommitted version): `Some(None)`
    /// for a delete, `None` when `txn` has no pending version there. The commit log records
    /// this image before the version is stamped committed.
    #[must_use]
    pub fn pending_image(&self, txn: TxnId, pk: &[u8]) -> Option<Option<&Row>> {
        let last = self.rows.get(pk)?.versions.last()?;
        (last.txn == txn && last.commit_ts.is_none()).then_some(last.row.as_ref())
    }

    /// Installs a committed row image (or a delete, `None`) at `pk`, as of `ts`, replacing
    /// what was there and keeping indexes and the hidden row id in step. Recovery only: no
    /// transaction may have a pending version on the table.
    pub fn apply_committed(&mut self, pk: Vec<u8>, row: Option<Row>, ts: Timestamp) {
        if !self.has_primary_key()
            && let Some(id) = crate::key::decode_uint_key(&pk)
        {
            self.next_row_id = self.next_row_id.max(id + 1);
        }
        if row.is_none() && !self.rows.contains_key(&pk) {
            return;
        }
        self.push_version(RECOVERY_TXN, pk.clone(), row);
        self.commit_row(RECOVERY_TXN, &pk, ts, Timestamp::MAX);
    }

    /// Every row visible to `view`, in primary key order (for copies and checkpoints).
    #[must_use]
    pub fn snapshot_rows(&self, view: ReadView) -> Vec<Row> {
        self.scan(Bound::Unbounded, Bound::Unbounded, view).map(|(_, r)| r.clone()).collect()
    }

    /// Throw away all rows (TRUNCATE); AUTO_INCREMENT restarts at 1.
    pub fn clear(&mut self) {
        self.rows.clear();
        for idx in &mut self.indexes {
            idx.entries.clear();
        }
        self.auto_increment = 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> Table {
        Table::new(vec![(0, Collation::Binary)], vec![IndexDef { name: "u".into(), parts: vec![(1, Collation::Utf8mb4AiCi)], unique: true }])
    }

    fn row(id: i64, name: &str) -> Row {
        vec![Value::Int(id), Value::Str(name.into())]
    }

    fn view(txn: TxnId, read_ts: Timestamp) -> ReadView {
        ReadView { txn, read_ts, uncommitted: false }
    }

    #[test]
    fn uncommitted_writes_are_private_until_commit() {
        let mut t = table();
        let pk = t.insert(1, row(1, "a")).unwrap();
        assert!(t.get(&pk, &view(2, 100)).is_none());
        assert!(t.get(&pk, &view(1, 0)).is_some());
        t.commit_row(1, &pk, 5, 0);
        assert!(t.get(&pk, &view(2, 4)).is_none(), "snapshot before the commit");
        assert!(t.get(&pk, &view(2, 5)).is_some());
    }

    #[test]
    fn second_writer_sees_the_lock_and_unique_keys_fold_case() {
        let mut t = table();
        let pk = t.insert(1, row(1, "abc")).unwrap();
        assert_eq!(t.update(2, &pk, row(1, "x")), Err(WriteError::Locked { holder: 1, pk: pk.clone() }));
        t.commit_row(1, &pk, 1, 1);
        assert!(matches!(t.insert(2, row(2, "ABC")), Err(WriteError::Duplicate { index: Some(0), .. })));
        assert!(matches!(t.insert(2, row(1, "zzz")), Err(WriteError::Duplicate { index: None, .. })));
    }

    #[test]
    fn undo_and_rollback_restore_the_index() {
        let mut t = table();
        let pk = t.insert(1, row(1, "a")).unwrap();
        t.commit_row(1, &pk, 1, 1);
        t.update(2, &pk, row(1, "b")).unwrap();
        let v = ReadView::current(3);
        assert_eq!(
            t.index_scan(
                0,
                Bound::Included(&t.encode_index(0, &[Value::Str("b".into())])),
                Bound::Included(&t.encode_index(0, &[Value::Str("b".into())])),
                &ReadView::current(2)
            )
            .len(),
            1
        );
        t.undo_last(2, &pk);
        let b = t.encode_index(0, &[Value::Str("b".into())]);
        assert!(t.index_scan(0, Bound::Included(&b), Bound::Included(&b), &ReadView::current(2)).is_empty());
        let a = t.encode_index(0, &[Value::Str("A".into())]);
        assert_eq!(t.index_scan(0, Bound::Included(&a), Bound::Included(&a), &v).len(), 1);
    }

    #[test]
    fn committed_delete_is_purged_when_no_reader_needs_it() {
        let mut t = table();
        let pk = t.insert(1, row(1, "a")).unwrap();
        t.commit_row(1, &pk, 1, 1);
        t.delete(2, &pk).unwrap();
        t.commit_row(2, &pk, 2, 2);
        assert_eq!(t.approximate_rows(), 0);
        assert!(t.insert(3, row(2, "a")).is_ok(), "unique key free again");
    }
}
