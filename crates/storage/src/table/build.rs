//! Secondary indexes added to a table in place ([`Table::build_with_indexes`]): CREATE INDEX
//! and ALTER TABLE ... ADD INDEX build the new index from the rows, which stay where they
//! are, shared with the table the index is added to, as are its other indexes.
//!
//! The rows are walked once in primary-key order. Every key a live version has in each new
//! index goes into a run (entries back to back in one buffer); the run is sorted and put into
//! the new index's map in order, so its leaves fill one after another as a bulk load's do, and
//! a paged index is written out in order rather than read back and rewritten at random. A run
//! holds at most [`INDEX_BUILD_RUN_BYTES`]; a table with more entries than that sorts and puts
//! several runs, each in order.
//!
//! Invariants:
//! - the caller keeps every writer out of the table while this runs, and uses only the new
//!   table after it (the SQL layer holds the table's exclusive metadata lock, and DDL and
//!   checkpoints exclude each other): the rows do not change under the build;
//! - the new index holds an entry for every key any live version of a row has, as every index
//!   does ([`crate::table`]);
//! - a unique index refuses two rows whose newest versions share a key with no NULL in it, as
//!   an insert would ([`crate::WriteError::Duplicate`]), and a build that fails leaves nothing
//!   behind: its maps are discarded, their blocks given back to the page file.
//!
//! Where it sits: storage, inside the table; the SQL layer's `ddl::alter` calls it through
//! [`crate::Handler::with_indexes`].

use std::ops::Bound;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use super::{IndexDef, SecondaryIndex, Sizes, Table, TableFile, WriteError};
use crate::handler::ScanOrder;
use crate::index_entry::EntryPk;
use crate::leaf_map::{self, Walk};
use crate::value::Value;

/// Most bytes a build's runs hold at once (their entries and the offsets that sort them):
/// MySQL's `innodb_sort_buffer_size` at its largest is 64 MiB; a build is one statement, so
/// half that.
pub const INDEX_BUILD_RUN_BYTES: usize = 32 << 20;

/// One entry of a [`Run`]: where its bytes are, how many of them are the primary key, and
/// whether it is the key of a row's newest version in a unique index (checked on the way in).
#[derive(Debug, Clone, Copy)]
struct RunItem {
    start: u32,
    len: u32,
    pk_len: u32,
    claims_unique: bool,
}

/// A new index's entries, gathered from the rows, to be sorted and put in order.
#[derive(Debug, Default)]
struct Run {
    bytes: Vec<u8>,
    items: Vec<RunItem>,
}

impl Run {
    fn push(&mut self, key: &[u8], pk: &[u8], claims_unique: bool) {
        let len = |n: usize| u32::try_from(n).expect("a run stays under its bound");
        let start = len(self.bytes.len());
        self.bytes.extend_from_slice(key);
        self.bytes.extend_from_slice(pk);
        self.items.push(RunItem { start, len: len(key.len() + pk.len()), pk_len: len(pk.len()), claims_unique });
    }

    fn held_bytes(&self) -> usize {
        self.bytes.len() + self.items.len() * std::mem::size_of::<RunItem>()
    }

    fn entry(bytes: &[u8], item: RunItem) -> &[u8] {
        &bytes[item.start as usize..(item.start + item.len) as usize]
    }

    fn sort(&mut self) {
        let bytes = &self.bytes;
        self.items.sort_unstable_by(|a, b| Self::entry(bytes, *a).cmp(Self::entry(bytes, *b)));
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.items.clear();
    }
}

impl Table {
    /// This table with `added` secondary indexes after its own, built from its rows, which
    /// the new table shares with this one, as it does this one's indexes (see the module's
    /// invariants).
    ///
    /// # Errors
    /// [`WriteError::Duplicate`] (with the new index's position) when a unique index meets
    /// two rows with the same key; nothing is left of the new indexes then.
    pub fn build_with_indexes(&self, added: Vec<IndexDef>) -> Result<Table, WriteError> {
        self.build_in_runs(added, INDEX_BUILD_RUN_BYTES)
    }

    /// [`Table::build_with_indexes`] with runs of at most `run_bytes`.
    fn build_in_runs(&self, added: Vec<IndexDef>, run_bytes: usize) -> Result<Table, WriteError> {
        // Recovery's changes still waiting count into this table's sizes: in before they are copied.
        self.drain_redo_all();
        let first_new = self.indexes.len();
        let mut indexes = self.indexes.clone();
        for (i, def) in added.into_iter().enumerate() {
            let number = u32::try_from(first_new + i + 1).expect("index count fits u32");
            indexes.push(Arc::new(SecondaryIndex { def, entries: self.rows.sibling(number) }));
        }
        let table = Table {
            primary: self.primary.clone(),
            indexes,
            rows: Arc::clone(&self.rows),
            auto_increment: AtomicU64::new(self.auto_increment.load(Ordering::Acquire)),
            next_row_id: AtomicU64::new(self.next_row_id.load(Ordering::Acquire)),
            latch: Mutex::new(()),
            insert_finger: Mutex::new(leaf_map::Finger::default()),
            format: self.format.clone(),
            sizes: Arc::new(Sizes {
                data: AtomicU64::new(self.sizes.data.load(Ordering::Relaxed)),
                index: AtomicU64::new(self.sizes.index.load(Ordering::Relaxed)),
            }),
            file: self.file.as_ref().map(|f| TableFile { number: f.number, file: Arc::clone(&f.file) }),
        };
        match table.build_indexes(first_new, run_bytes) {
            Ok(()) => Ok(table),
            Err(e) => {
                let Table { mut indexes, .. } = table;
                for index in indexes.drain(first_new..) {
                    let index = Arc::into_inner(index).expect("a new index is this build's alone");
                    index.entries.discard();
                }
                Err(e)
            }
        }
    }

    /// Fills the indexes from position `first_new` on from the rows.
    fn build_indexes(&self, first_new: usize, run_bytes: usize) -> Result<(), WriteError> {
        let new = &self.indexes[first_new..];
        let mut runs: Vec<Run> = new.iter().map(|_| Run::default()).collect();
        let mut walk = Walk::new(Bound::Unbounded, Bound::Unbounded, ScanOrder::Ascending);
        // The keys one row's versions have had in the index at hand: each goes in once.
        let mut seen: Vec<Vec<u8>> = Vec::new();
        while !walk.is_done() {
            self.rows.step(&mut walk, |pk, chain| {
                let images = chain.versions.iter().rev().enumerate().filter_map(|(age, v)| v.row.as_deref().map(|image| (image, age == 0)));
                for (idx, run) in new.iter().zip(&mut runs) {
                    seen.clear();
                    // Newest first: the newest version's entry is the one that claims the key.
                    for (image, newest) in images.clone() {
                        let values = self.index_values_of_image(&idx.def, image);
                        let key = Self::index_key_of_values(&idx.def, &values);
                        if seen.contains(&key) {
                            continue;
                        }
                        let claims = newest && idx.def.unique && !values.iter().any(Value::is_null);
                        run.push(&key, pk, claims);
                        seen.push(key);
                    }
                }
                runs.iter().map(Run::held_bytes).sum::<usize>() < run_bytes
            });
            if walk.is_done() || runs.iter().map(Run::held_bytes).sum::<usize>() >= run_bytes {
                for (i, run) in runs.iter_mut().enumerate() {
                    self.put_run(first_new + i, run)?;
                }
            }
        }
        Ok(())
    }

    /// Sorts `run` and puts its entries into index `index`, in order; empties it.
    fn put_run(&self, index: usize, run: &mut Run) -> Result<(), WriteError> {
        run.sort();
        let idx = &self.indexes[index];
        let mut finger = leaf_map::Finger::default();
        for &item in &run.items {
            let entry = Run::entry(&run.bytes, item);
            let (key, pk) = entry.split_at(entry.len() - item.pk_len as usize);
            if item.claims_unique
                && let Some(existing_pk) = self.holder_of_key(index, key, pk)
            {
                return Err(WriteError::Duplicate { index: Some(index), existing_pk });
            }
            idx.entries.with_or_insert_near(&mut finger, entry, |value| *value = EntryPk::new(pk));
            self.sizes.index.fetch_add((entry.len() + pk.len()) as u64, Ordering::Relaxed);
        }
        run.clear();
        Ok(())
    }

    /// The primary key of a row other than `pk` whose newest version has `key` in index
    /// `index`, among the entries put so far.
    fn holder_of_key(&self, index: usize, key: &[u8], pk: &[u8]) -> Option<Vec<u8>> {
        let idx = &self.indexes[index];
        idx.others_with_key(key, pk).into_iter().find(|other_pk| {
            let newest_has_key = self.rows.read(other_pk, |chain| {
                chain.versions.last().and_then(|v| v.row.as_deref()).is_some_and(|image| Self::index_key(&idx.def, &self.decode(image)) == key)
            });
            newest_has_key.unwrap_or(false)
        })
    }
}

#[cfg(test)]
mod tests {
    use std::ops::Bound;
    use std::path::Path;
    use std::sync::Arc;

    use quill_io::{Fs, SimFs};
    use rand::rngs::StdRng;
    use rand::{RngExt, SeedableRng};

    use crate::handler::{Handler, ScanOrder};
    use crate::table::{IndexDef, ReadView, Table, TxnId};
    use crate::tablespace::Tablespace;
    use crate::value::{Collation, Row, Value};
    use crate::{RowFormat, Timestamp, WriteError};

    fn by_group(unique: bool) -> IndexDef {
        IndexDef { name: "grp".into(), parts: vec![(1, Collation::Binary), (2, Collation::Utf8mb4AiCi)], unique }
    }

    fn row(id: i64, grp: Option<i64>, name: &str) -> Row {
        vec![Value::Int(id), grp.map_or(Value::Null, Value::Int), Value::Str(name.into())]
    }

    /// Writes as transaction `txn` committed at `ts` (`None`: a delete), with a reader at
    /// `horizon` that may still need older versions.
    fn write(table: &Table, txn: TxnId, id: i64, r: Option<Row>, ts: Timestamp, horizon: Timestamp) {
        let pk = table.encode_primary(&[Value::Int(id)]);
        let latch = table.write_latch();
        match r {
            Some(r) if table.has_chain(&pk) => drop(table.update_row(&latch, txn, &pk, r).unwrap()),
            Some(r) => drop(table.write_row(&latch, txn, &r).unwrap()),
            None => table.delete_row(txn, &pk).unwrap(),
        }
        drop(latch);
        assert!(table.commit_row(txn, &pk, ts, horizon));
    }

    /// Random inserts, updates and deletes, some under a reader that keeps old versions
    /// (and their entries); the same writes made to `with` and `without`.
    fn same_writes(seed: u64, tables: &[&Table]) -> Timestamp {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut ts = 0;
        for txn in 1..=600 {
            let id = rng.random_range(0..200);
            let grp = (rng.random_range(0..8) > 0).then(|| rng.random_range(0..20));
            let r = (rng.random_range(0..6) > 0).then(|| row(id, grp, &format!("n{}", rng.random_range(0..30))));
            let horizon = if rng.random_bool(0.3) { ts / 2 } else { ts + 1 };
            ts += 1;
            for t in tables {
                let pk = t.encode_primary(&[Value::Int(id)]);
                if r.is_none() && t.get(&pk, &ReadView::current(txn)).is_none() {
                    continue;
                }
                write(t, txn, id, r.clone(), ts, horizon);
            }
        }
        ts
    }

    fn entries(table: &Table) -> Vec<Vec<u8>> {
        table.index_keys_in_range(0, Bound::Unbounded, Bound::Unbounded)
    }

    /// The fast path against the plain one: an index built from a table's rows holds the
    /// same entries (every live version's, old ones a reader may need included), counts the
    /// same bytes and answers the same scans as the index of a table that had it from the
    /// start and took the same writes; with runs small enough that the build sorts many.
    #[test]
    fn an_index_built_from_the_rows_is_the_index_the_writes_would_have_made() {
        for seed in 0..20 {
            let plain = Table::new(vec![(0, Collation::Binary)], vec![by_group(false)], RowFormat::Dynamic);
            let bare = Table::new(vec![(0, Collation::Binary)], Vec::new(), RowFormat::Dynamic);
            let ts = same_writes(seed, &[&plain, &bare]);
            let run_bytes = if seed % 2 == 0 { 256 } else { super::INDEX_BUILD_RUN_BYTES };
            let built = bare.build_in_runs(vec![by_group(false)], run_bytes).unwrap();
            let replay = format!("seed {seed}: cargo test -p quill-storage an_index_built_from_the_rows");
            assert_eq!(entries(&built), entries(&plain), "{replay}");
            assert_eq!(built.statistics(), plain.statistics(), "{replay}");
            for view in [ReadView::current(9_999), ReadView { txn: 9_999, read_ts: ts / 2, uncommitted: false }] {
                for grp in [None, Some(3), Some(7)] {
                    let key = built.encode_index(0, &[grp.map_or(Value::Null, Value::Int)]);
                    let scan = |t: &Table| -> Vec<Row> {
                        t.index_scan(0, Bound::Included(&key), Bound::Included(&key), view, ScanOrder::Ascending).map(|(_, r)| Row::clone(&r)).collect()
                    };
                    assert_eq!(scan(&built), scan(&plain), "{replay}: {grp:?} at {view:?}");
                }
            }
            // The rows are shared: a write through the new table is what both see.
            write(&built, 10_000, 500, Some(row(500, Some(1), "new")), ts + 1, ts + 1);
            assert!(bare.has_chain(&bare.encode_primary(&[Value::Int(500)])), "{replay}");
        }
    }

    /// A unique index refuses two rows whose newest versions share a key (not one that only
    /// an older version had, nor keys with a NULL), and its build leaves nothing behind: the
    /// blocks eviction wrote of it are free again.
    #[test]
    fn a_unique_index_over_duplicate_rows_fails_and_leaves_nothing_behind() {
        let fs: Arc<dyn Fs> = Arc::new(SimFs::new());
        let space = Tablespace::open(Arc::clone(&fs), Path::new("/data"), 64 << 10).unwrap();
        let table = space.create_table(vec![(0, Collation::Binary)], Vec::new(), RowFormat::Dynamic).unwrap();
        let mut ts = 0;
        for id in 0..3000 {
            ts += 1;
            write(&table, 1, id, Some(row(id, Some(id), "a")), ts, ts);
        }
        // Row 0's old key (0, 'a') is row 1's new one: an older version is no claim.
        ts += 1;
        write(&table, 2, 0, Some(row(0, Some(-1), "a")), ts, 0);
        ts += 1;
        write(&table, 3, 1, Some(row(1, Some(0), "A")), ts, ts);
        // NULLs never collide.
        for id in [10, 11] {
            ts += 1;
            write(&table, 4, id, Some(row(id, None, "a")), ts, ts);
        }
        let unique = table.build_in_runs(vec![by_group(true)], 1 << 12).expect("no two newest versions share a key");
        assert_eq!(unique.index_keys_in_range(0, Bound::Unbounded, Bound::Unbounded).len(), 3000, "every row");
        // A reader from before the updates finds row 0 under its old key: its entry is there.
        let old_key = unique.encode_index(0, &[Value::Int(0), Value::Str("a".into())]);
        let then = ReadView { txn: 9_999, read_ts: 1, uncommitted: false };
        let found: Vec<Row> =
            unique.index_scan(0, Bound::Included(&old_key), Bound::Included(&old_key), then, ScanOrder::Ascending).map(|(_, r)| Row::clone(&r)).collect();
        assert_eq!(found, vec![row(0, Some(0), "a")]);
        drop(unique);
        ts += 1;
        write(&table, 5, 2999, Some(row(2999, Some(5), "A")), ts, ts);
        let used = || table.space().map(|(allocated, free)| allocated - free).unwrap();
        let used_before = used();
        let evictions = space.pool.counters.evictions.load(std::sync::atomic::Ordering::Relaxed);
        let err = table.build_in_runs(vec![by_group(true)], 1 << 12).map(|_| ()).unwrap_err();
        let (five, last) = (table.encode_primary(&[Value::Int(5)]), table.encode_primary(&[Value::Int(2999)]));
        assert!(matches!(&err, WriteError::Duplicate { index: Some(0), existing_pk } if *existing_pk == five || *existing_pk == last), "{err:?}");
        assert!(space.pool.counters.evictions.load(std::sync::atomic::Ordering::Relaxed) > evictions, "the build's leaves were evicted");
        assert!(used() <= used_before + 4096, "the failed build's blocks are free again: {used_before} -> {} bytes", used());
    }
}
