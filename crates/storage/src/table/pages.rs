//! A paged [`Table`]: its maps' leaves in its page file, read back when used, and the stable
//! images a checkpoint writes of them.
//!
//! A paged table is the in-memory table with every index a paged [`LeafMap`]: the same MVCC,
//! the same invariants, the same code for every read and write; only where a leaf is differs.
//!
//! A checkpoint's images ([`Table::write_table_pages`]) first purge, in each row leaf it
//! copies, the versions no reader needs (a commit purges only to its own horizon), so that
//! leaf can become a stable image; then each index keeps the entries of the versions the
//! checkpoint's view sees, taking an entry whose row's leaf has been stable since before the
//! index pass as it is, without reading the row. See `docs/architecture.md`, "The paged
//! engine".

use std::ops::Bound;
use std::sync::Arc;

use super::{SecondaryIndex, Table, TableFile};
use crate::buffer_pool::BufferPool;
use crate::chain::{Chain, encode_stable};
use crate::format::RowFormat;
use crate::handler::{Handler, ScanOrder};
use crate::index_entry::{EntryPk, pk_of};
use crate::leaf_map::{LeafMap, Paging, Walk, put_image_entry};
use crate::page::put_bytes;
use crate::page_file::PageFile;
use crate::table::{IndexDef, KeyPart, ReadView, Timestamp};
use crate::tablespace::{IndexPages, TablePages};

impl Table {
    /// A new, empty paged table in page file `number` ([`crate::tablespace::Tablespace::create_table`]).
    #[must_use]
    pub fn paged(primary: Vec<KeyPart>, indexes: Vec<IndexDef>, format: RowFormat, number: u64, file: Arc<PageFile>, pool: Arc<BufferPool>) -> Table {
        let paging =
            |index: usize| Arc::new(Paging { file: Arc::clone(&file), pool: Arc::clone(&pool), index: u32::try_from(index).expect("index count fits u32") });
        let indexes = indexes.into_iter().enumerate().map(|(i, def)| SecondaryIndex { def, entries: LeafMap::paged(paging(i + 1)) }).collect();
        Table::with_maps(primary, format, LeafMap::paged(paging(0)), indexes, Some(TableFile { number, file: Arc::clone(&file) }))
    }

    /// The paged table a checkpoint named as `pages`, every leaf on disk.
    ///
    /// # Panics
    /// If `pages` does not name one directory per index (the checkpoint and the table's
    /// definition disagree: start-up stops).
    #[must_use]
    pub fn from_pages(
        primary: Vec<KeyPart>,
        indexes: Vec<IndexDef>,
        format: RowFormat,
        pages: &TablePages,
        file: Arc<PageFile>,
        pool: Arc<BufferPool>,
    ) -> Table {
        assert_eq!(pages.indexes.len(), indexes.len() + 1, "page file {}: one directory per index", pages.file);
        let paging =
            |index: usize| Arc::new(Paging { file: Arc::clone(&file), pool: Arc::clone(&pool), index: u32::try_from(index).expect("index count fits u32") });
        let rows = LeafMap::on_disk(paging(0), &pages.indexes[0].leaves);
        let indexes = indexes
            .into_iter()
            .enumerate()
            .map(|(i, def)| SecondaryIndex { def, entries: LeafMap::on_disk(paging(i + 1), &pages.indexes[i + 1].leaves) })
            .collect();
        let table = Table::with_maps(primary, format, rows, indexes, Some(TableFile { number: pages.file, file: Arc::clone(&file) }));
        let bytes = |dirs: &[IndexPages]| dirs.iter().flat_map(|d| d.leaves.iter()).map(|l| l.block.bytes() as u64).sum::<u64>();
        table.sizes.data.store(bytes(&pages.indexes[..1]), std::sync::atomic::Ordering::Relaxed);
        table.sizes.index.store(bytes(&pages.indexes[1..]), std::sync::atomic::Ordering::Relaxed);
        if !table.has_primary_key() {
            // Rows keyed by hidden row id: new ones go after the last (its leaf is read).
            let last = table.rows.first_key(Walk::new(Bound::Unbounded, Bound::Unbounded, ScanOrder::Descending));
            if let Some(id) = last.as_deref().and_then(crate::key::decode_uint_key) {
                table.next_row_id.store(id + 1, std::sync::atomic::Ordering::Release);
            }
        }
        table
    }

    /// [`crate::Handler::write_pages`] of a paged table.
    pub(super) fn write_table_pages(&self, view: ReadView, horizon: Timestamp) -> std::io::Result<Option<TablePages>> {
        let Some(file) = &self.file else { return Ok(None) };
        // Versions no reader needs any more go first, as InnoDB's purge would take them: a
        // commit purges only what its own horizon allowed, so a row written once under a
        // busy horizon would keep its older version (and the older version's index entries)
        // until it was written again, and its leaf would never be a stable image.
        let purge = |pk: &[u8], chain: &mut Chain| self.purge_chain(chain, pk, horizon);
        let leaves = self.rows.write_stable_tidying(purge, |key, chain: Chain, out| {
            let Some(image) = chain.visible(&view) else { return false };
            put_bytes(out, key);
            encode_stable(image, out);
            // The stable version (committed at 0) is this chain for every view from now on.
            matches!(&chain.versions[..], [only] if only.stamp.commit_ts().is_some_and(|ts| ts <= horizon))
        })?;
        let mut indexes = vec![IndexPages { leaves }];
        // Row leaves stable since before this mark need no look at their rows below.
        let epoch = self.rows.next_epoch().expect("a table with a page file has paged maps");
        for idx in &self.indexes {
            let leaves = idx.entries.write_stable(|entry, value: EntryPk, out| {
                // The entry of the version the view sees, and only that: an index whose
                // entries a reader re-checks anyway, but with none a crash would leave behind.
                let pk = pk_of(entry, &value);
                // A row whose leaf has been a stable image since before the mark (so since
                // before this entry was copied) is one version, committed at or below the
                // horizon, and its entries are that version's (a version's entries leave
                // with it, under its leaf's mutex): this one is valid, and its row stays on
                // disk. This is what keeps a checkpoint of a table larger than the pool from
                // reading a row leaf for each index entry.
                if self.rows.stable_since(pk, epoch) {
                    put_image_entry(out, entry, &value);
                    return true;
                }
                let Some(row) = self.get(pk, &view) else { return false };
                let key = Self::index_key(&idx.def, &row);
                if entry.len() != key.len() + pk.len() || !entry.starts_with(&key) {
                    return false;
                }
                put_image_entry(out, entry, &value);
                true
            })?;
            indexes.push(IndexPages { leaves });
        }
        file.file.sync()?;
        Ok(Some(TablePages { file: file.number, indexes }))
    }

    /// [`crate::Handler::pages_durable`] of a paged table.
    pub(super) fn table_pages_durable(&self, pages: &TablePages) {
        if let Some(file) = self.file.as_ref().filter(|f| f.number == pages.file) {
            file.file.release_retired(&pages.units());
        }
    }

    /// [`crate::Handler::space`] of a paged table.
    pub(super) fn table_space(&self) -> Option<(u64, u64)> {
        self.file.as_ref().map(|f| (f.file.bytes_allocated(), f.file.bytes_free()))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::ops::Bound;
    use std::path::Path;
    use std::sync::Arc;

    use quill_io::{Fs, SimFs};

    use crate::handler::{Handler, ScanOrder};
    use crate::leaf_map::DirectoryLeaf;
    use crate::table::{IndexDef, ReadView, Table, TxnId};
    use crate::tablespace::{IndexPages, Tablespace};
    use crate::value::{Collation, Row, Value};
    use crate::{RowFormat, Timestamp};

    fn shape() -> (Vec<crate::table::KeyPart>, Vec<IndexDef>) {
        (
            vec![(0, Collation::Binary)],
            vec![
                IndexDef { name: "name".into(), parts: vec![(1, Collation::Utf8mb4AiCi)], unique: true },
                IndexDef { name: "grp".into(), parts: vec![(2, Collation::Binary)], unique: false },
            ],
        )
    }

    fn row(id: i64, name: &str, grp: i64) -> Row {
        vec![Value::Int(id), Value::Str(name.into()), Value::Int(grp)]
    }

    fn commit(table: &Table, txn: TxnId, pk: &[u8], ts: Timestamp) {
        assert!(table.commit_row(txn, pk, ts, ts), "txn {txn} wrote the row");
    }

    /// Inserts `rows` as transaction `txn`, each committed at `ts` as it is written; returns
    /// their primary keys.
    fn insert_committed(table: &Table, rows: impl IntoIterator<Item = Row>, txn: TxnId, ts: Timestamp) -> Vec<Vec<u8>> {
        rows.into_iter()
            .map(|r| {
                let latch = table.write_latch();
                let pk = table.write_row(&latch, txn, &r).unwrap();
                drop(latch);
                commit(table, txn, &pk, ts);
                pk
            })
            .collect()
    }

    fn rows_seen(table: &Table, view: ReadView) -> Vec<Row> {
        table.scan(Bound::Unbounded, Bound::Unbounded, view, ScanOrder::Ascending).map(|(_, r)| Row::clone(&r)).collect()
    }

    /// A paged table over a pool a fraction of its size: rows committed, updated, deleted and
    /// left uncommitted; a checkpoint's pages read back (after the process dies, from the
    /// page file alone) as exactly the rows its view saw, with index entries for those rows
    /// and no others.
    #[test]
    fn a_checkpoints_pages_read_back_as_the_rows_its_view_saw() {
        let fs = Arc::new(SimFs::new());
        let datadir = Path::new("/data");
        let space = Tablespace::open(Arc::clone(&fs) as Arc<dyn Fs>, datadir, 48 << 10).unwrap();
        let (primary, indexes) = shape();
        let table = space.create_table(primary.clone(), indexes.clone(), RowFormat::Dynamic).unwrap();
        let mut ts = 0;
        let mut model: BTreeMap<i64, Row> = BTreeMap::new();
        for id in 0..3000 {
            let r = row(id, &format!("name {id}"), id % 7);
            let latch = table.write_latch();
            let pk = table.write_row(&latch, 1, &r).unwrap();
            drop(latch);
            ts += 1;
            commit(&table, 1, &pk, ts);
            model.insert(id, r);
        }
        // Updates of the indexed columns, deletes, committed.
        for id in (0..3000).step_by(5) {
            let pk = table.encode_primary(&[Value::Int(id)]);
            ts += 1;
            if id % 10 == 0 {
                table.delete_row(2, &pk).unwrap();
                model.remove(&id);
            } else {
                let r = row(id, &format!("renamed {id}"), 100 + id % 3);
                let latch = table.write_latch();
                table.update_row(&latch, 2, &pk, r.clone()).unwrap();
                model.insert(id, r);
            }
            commit(&table, 2, &pk, ts);
        }
        // Pending versions of a transaction that never commits.
        for id in (1..3000).step_by(11) {
            let pk = table.encode_primary(&[Value::Int(id)]);
            let latch = table.write_latch();
            table.update_row(&latch, 3, &pk, row(id, &format!("pending {id}"), -1)).unwrap();
        }
        assert!(space.pool.counters.evictions.load(std::sync::atomic::Ordering::Relaxed) > 0, "the pool evicted");
        let view = ReadView { txn: 9, read_ts: ts, uncommitted: false };
        let expected: Vec<Row> = model.values().cloned().collect();
        assert_eq!(rows_seen(&table, view), expected, "the live table");
        let pages = table.write_pages(view, ts).unwrap().expect("a paged table writes pages");
        table.pages_durable(&pages);
        assert_eq!(pages.indexes.iter().map(IndexPages::entries).collect::<Vec<_>>(), vec![model.len() as u64; 3]);
        // Commits after the checkpoint are not in it.
        let pk = table.encode_primary(&[Value::Int(1)]);
        table.delete_row(4, &pk).ok();

        let crashed = Arc::new(fs.crash_process());
        let space = Tablespace::open(Arc::clone(&crashed) as Arc<dyn Fs>, datadir, 48 << 10).unwrap();
        let back = space.open_table(primary, indexes, RowFormat::Dynamic, &pages).unwrap();
        assert_eq!(space.pool.resident_bytes(), 0, "opening reads no leaf");
        let now = ReadView { txn: 1, read_ts: 1, uncommitted: false };
        assert_eq!(rows_seen(&back, now), expected, "every view sees the checkpoint's rows");
        assert_eq!(back.statistics().rows, model.len() as u64);
        // Each secondary index holds one entry per row, its current one.
        for (index, column) in [(0, 1), (1, 2)] {
            let pks = back.index_keys_in_range(index, Bound::Unbounded, Bound::Unbounded);
            assert_eq!(pks.len(), model.len(), "index {index}: no entry of an old, pending or deleted version");
            for r in model.values().step_by(97) {
                let key = back.encode_index(index, &[r[column].clone()]);
                let found: Vec<Row> =
                    back.index_scan(index, Bound::Included(&key), Bound::Included(&key), now, ScanOrder::Ascending).map(|(_, r)| Row::clone(&r)).collect();
                assert!(found.contains(r), "index {index} finds {r:?}");
            }
        }
        // Unique checks see the loaded entries.
        let latch = back.write_latch();
        let dup = back.write_row(&latch, 5, &row(99_999, "renamed 5", 0));
        assert!(matches!(dup, Err(crate::WriteError::Duplicate { index: Some(0), .. })), "{dup:?}");
    }

    /// A table keyed by hidden row id goes on numbering its rows after the last one it read
    /// back, so a row inserted after a restart never takes a loaded row's id (error 1062
    /// on a table with no key at all, found by the SQL layer's checkpoint tests).
    #[test]
    fn a_table_without_a_primary_key_numbers_new_rows_after_the_loaded_ones() {
        let fs: Arc<dyn Fs> = Arc::new(SimFs::new());
        let space = Tablespace::open(Arc::clone(&fs), Path::new("/data"), 1 << 20).unwrap();
        let table = space.create_table(Vec::new(), Vec::new(), RowFormat::Dynamic).unwrap();
        insert_committed(&table, (0..500).map(|id| vec![Value::Int(id)]), 1, 1);
        let pages = table.write_pages(ReadView { txn: 9, read_ts: 1, uncommitted: false }, 1).unwrap().unwrap();
        let back = space.open_table(Vec::new(), Vec::new(), RowFormat::Dynamic, &pages).unwrap();
        let latch = back.write_latch();
        let pk = back.write_row(&latch, 2, &vec![Value::Int(500)]).expect("a fresh row id");
        drop(latch);
        commit(&back, 2, &pk, 2);
        assert_eq!(rows_seen(&back, ReadView { txn: 3, read_ts: 2, uncommitted: false }).len(), 501);
    }

    /// The index pass takes an entry whose row's leaf is a stable image (written by this
    /// checkpoint's row pass, or before) as it is: a checkpoint of a table many times the
    /// pool reads each leaf about once, not a row leaf per index entry.
    #[test]
    fn a_checkpoint_larger_than_the_pool_reads_each_leaf_about_once() {
        let fs: Arc<dyn Fs> = Arc::new(SimFs::new());
        let space = Tablespace::open(Arc::clone(&fs), Path::new("/data"), 48 << 10).unwrap();
        let (primary, indexes) = shape();
        let table = space.create_table(primary, indexes, RowFormat::Dynamic).unwrap();
        // Index keys in another order than the rows': neighbouring entries, far rows.
        insert_committed(&table, (0..4000).map(|id| row(id, &format!("n{}", (id * 7919) % 4000), (id * 31) % 97)), 1, 1);
        let reads = || space.pool.counters.reads.load(std::sync::atomic::Ordering::Relaxed);
        let before = reads();
        let view = ReadView { txn: 9, read_ts: 1, uncommitted: false };
        let pages = table.write_pages(view, 1).unwrap().unwrap();
        let leaves: usize = pages.indexes.iter().map(|i| i.leaves.len()).sum();
        let read = reads() - before;
        assert!(read <= leaves as u64, "{read} leaves read for a checkpoint of {leaves} leaves and 8,000 index entries");
        assert_eq!(pages.indexes.iter().map(IndexPages::entries).collect::<Vec<_>>(), vec![4000; 3]);
    }

    /// A row updated while an older reader could still see its old version keeps that version
    /// at commit; the checkpoint purges it (and its index entries) once the horizon has passed
    /// it, so the leaves become stable images and the next checkpoint writes none of them.
    #[test]
    fn a_checkpoint_purges_versions_no_reader_needs_so_its_leaves_become_stable() {
        let fs: Arc<dyn Fs> = Arc::new(SimFs::new());
        let space = Tablespace::open(Arc::clone(&fs), Path::new("/data"), 1 << 30).unwrap();
        let (primary, indexes) = shape();
        let table = space.create_table(primary, indexes, RowFormat::Dynamic).unwrap();
        let pks = insert_committed(&table, (0..300).map(|id| row(id, &format!("n{id}"), 0)), 1, 1);
        for (id, pk) in (0..300).zip(&pks) {
            let latch = table.write_latch();
            table.update_row(&latch, 2, pk, row(id, &format!("m{id}"), 1)).unwrap();
            drop(latch);
            // A reader at 1 may still need the old version: the commit keeps it.
            assert!(table.commit_row(2, pk, 2, 1));
        }
        let old_key = table.encode_index(1, &[Value::Int(0)]);
        let entries_at = |key: &[u8]| table.index_keys_in_range(1, Bound::Included(key), Bound::Included(key)).len();
        assert_eq!(entries_at(&old_key), 300, "the old versions' entries are there before the checkpoint");
        let view = ReadView { txn: 9, read_ts: 2, uncommitted: false };
        let first = table.write_pages(view, 2).unwrap().unwrap();
        table.pages_durable(&first);
        assert_eq!(entries_at(&old_key), 0, "purged with their versions");
        assert_eq!(rows_seen(&table, view).len(), 300);
        let written = space.pool.counters.pages_written.load(std::sync::atomic::Ordering::Relaxed);
        let second = table.write_pages(view, 2).unwrap().unwrap();
        assert!(first == second, "every leaf was a stable image after the first");
        assert_eq!(space.pool.counters.pages_written.load(std::sync::atomic::Ordering::Relaxed), written, "nothing written again");
        assert_eq!(space.pool.dirty_leaves(), 0);
    }

    /// A block eviction wrote, which no checkpoint names, is free as soon as its leaf
    /// changes: a row updated and evicted again and again between checkpoints reuses its
    /// space rather than growing the page file by a block each time.
    #[test]
    fn evicting_a_changed_leaf_again_between_checkpoints_reuses_its_space() {
        let fs: Arc<dyn Fs> = Arc::new(SimFs::new());
        let space = Tablespace::open(Arc::clone(&fs), Path::new("/data"), 1 << 20).unwrap();
        space.pool.set_evict_always(true);
        let (primary, indexes) = shape();
        let table = space.create_table(primary, indexes, RowFormat::Dynamic).unwrap();
        let [pk] = &insert_committed(&table, [row(1, "one", 0)], 1, 1)[..] else { unreachable!("one row") };
        for ts in 2..2000 {
            let latch = table.write_latch();
            table.update_row(&latch, ts, pk, row(1, "one", i64::try_from(ts).unwrap())).unwrap();
            drop(latch);
            commit(&table, ts, pk, ts);
        }
        let written = space.pool.counters.pages_written.load(std::sync::atomic::Ordering::Relaxed);
        let (allocated, _) = table.space().unwrap();
        assert!(written > 1000, "every update was evicted ({written} blocks written)");
        assert!(allocated <= 64 << 10, "{allocated} bytes allocated for {written} evictions of a one-row table");
        let view = ReadView { txn: 9_999, read_ts: 1999, uncommitted: false };
        assert_eq!(rows_seen(&table, view), vec![row(1, "one", 1999)]);
    }

    #[test]
    fn a_second_checkpoint_names_unchanged_leaves_and_frees_what_the_first_named_alone() {
        let fs: Arc<dyn Fs> = Arc::new(SimFs::new());
        let space = Tablespace::open(Arc::clone(&fs), Path::new("/data"), 1 << 30).unwrap();
        let (primary, indexes) = shape();
        let table = space.create_table(primary, indexes, RowFormat::Dynamic).unwrap();
        insert_committed(&table, (0..2000).map(|id| row(id, &format!("n{id}"), 0)), 1, 1);
        let view = ReadView { txn: 9, read_ts: 1, uncommitted: false };
        let first = table.write_pages(view, 1).unwrap().unwrap();
        table.pages_durable(&first);
        let (allocated, _) = table.space().unwrap();
        let second = table.write_pages(view, 1).unwrap().unwrap();
        assert!(first == second, "nothing changed: the same blocks");
        // Change one row: one leaf of the primary key and one of each index written anew.
        let pk = table.encode_primary(&[Value::Int(1000)]);
        let latch = table.write_latch();
        table.update_row(&latch, 2, &pk, row(1000, "changed", 5)).unwrap();
        drop(latch);
        commit(&table, 2, &pk, 2);
        let view = ReadView { txn: 9, read_ts: 2, uncommitted: false };
        let third = table.write_pages(view, 2).unwrap().unwrap();
        let differing: usize = third.indexes.iter().zip(&second.indexes).map(|(a, b)| a.leaves.iter().zip(&b.leaves).filter(|(x, y)| x != y).count()).sum();
        assert!((3..=5).contains(&differing), "{differing} leaves written");
        // Each as a delta record against its block: a one-unit delta block per index.
        let changed: Vec<&DirectoryLeaf> = third.indexes.iter().flat_map(|i| i.leaves.iter()).filter(|l| l.delta.is_some()).collect();
        assert_eq!(changed.len(), differing);
        assert!(changed.iter().all(|l| l.delta.unwrap().block.units == 1));
        table.pages_durable(&third);
        let (allocated_after, _) = table.space().unwrap();
        assert!(allocated_after <= allocated + 4096 * third.indexes.len() as u64, "{allocated_after} bytes after {allocated}");
        // Every row changed: every leaf written whole, its old block and the delta block
        // retired, and free once a checkpoint that names none of them is durable.
        for id in 0..2000 {
            let pk = table.encode_primary(&[Value::Int(id)]);
            let latch = table.write_latch();
            table.update_row(&latch, 3, &pk, row(id, &format!("again{id}"), 6)).unwrap();
            drop(latch);
            commit(&table, 3, &pk, 3);
        }
        let view = ReadView { txn: 9, read_ts: 3, uncommitted: false };
        let fourth = table.write_pages(view, 3).unwrap().unwrap();
        assert!(fourth.indexes[0].leaves.iter().all(|l| l.delta.is_none()), "the rows' leaves are written whole");
        table.pages_durable(&fourth);
        let (_, free_after) = table.space().unwrap();
        assert!(free_after > 0, "the replaced blocks are free once the fourth checkpoint is durable");
    }

    /// Recovery's changes left waiting for their leaves ([`Handler::redo_committed`] with
    /// `lazy`) against the same changes applied at once ([`Handler::apply_committed`]), on a
    /// table loaded from a checkpoint many times the pool: inserts, updates that move both
    /// index keys, one or none, deletes, runs of new keys past the last leaf (split many ways
    /// when it is read in), changes whose replaced row is unknown (applied at once, among
    /// waiting ones) and reads between them. Both end with the same chains, index entries and
    /// byte counts; and on half the seeds, a checkpoint written while changes still wait holds
    /// them: both tables' checkpoints read back the same.
    #[test]
    fn changes_waiting_for_their_leaves_end_as_changes_applied_at_once() {
        use rand::rngs::StdRng;
        use rand::{RngExt, SeedableRng};

        use crate::handler::Replaced;
        use crate::table::tests::whole_state;
        const POOL: u64 = 48 << 10;
        let datadir = Path::new("/data");
        let (primary, indexes) = shape();
        let open = |fs: &Arc<SimFs>, pages: &crate::tablespace::TablePages| {
            let space = Tablespace::open(Arc::clone(fs) as Arc<dyn Fs>, datadir, POOL).unwrap();
            space.open_table(primary.clone(), indexes.clone(), RowFormat::Dynamic, pages).unwrap()
        };
        // The first difference of two tables' whole states, named (a table's state prints
        // long). Tables read from pages count the bytes of their blocks, which follow how
        // the leaves split: only their rows are compared then.
        let first_difference = |a: &crate::table::tests::WholeState, b: &crate::table::tests::WholeState, blocks: bool| -> Option<String> {
            if let Some(i) = (0..a.0.len().max(b.0.len())).find(|&i| a.0.get(i) != b.0.get(i)) {
                return Some(format!("chain {i} of {}/{}: {:?} against {:?}", a.0.len(), b.0.len(), a.0.get(i), b.0.get(i)));
            }
            for (n, (x, y)) in a.1.iter().zip(&b.1).enumerate() {
                if let Some(i) = (0..x.len().max(y.len())).find(|&i| x.get(i) != y.get(i)) {
                    return Some(format!("index {n} entry {i} of {}/{}: {:?} against {:?}", x.len(), y.len(), x.get(i), y.get(i)));
                }
            }
            let differ = if blocks { a.2.rows != b.2.rows } else { a.2 != b.2 };
            differ.then(|| format!("{:?} against {:?}", a.2, b.2))
        };
        for seed in 0..24 {
            let replay = format!("seed {seed}: cargo test -p quill-storage changes_waiting_for_their_leaves");
            let mut rng = StdRng::seed_from_u64(seed);
            let named = |id: i64, rng: &mut StdRng| row(id, &format!("n{}", rng.random_range(0..100_000)), rng.random_range(0..5));
            let fs = Arc::new(SimFs::new());
            let space = Tablespace::open(Arc::clone(&fs) as Arc<dyn Fs>, datadir, POOL).unwrap();
            let table = space.create_table(primary.clone(), indexes.clone(), RowFormat::Dynamic).unwrap();
            let mut model: BTreeMap<i64, Row> = (0..1500).map(|id| (id * 2, row(id * 2, &format!("i{id}"), rng.random_range(0..5)))).collect();
            insert_committed(&table, model.values().cloned(), 1, 1);
            let pages = table.write_pages(ReadView { txn: 9, read_ts: 1, uncommitted: false }, 1).unwrap().unwrap();
            table.pages_durable(&pages);
            let (lazy_fs, eager_fs) = (Arc::new(fs.crash_process()), Arc::new(fs.crash_process()));
            let (lazy, eager) = (open(&lazy_fs, &pages), open(&eager_fs, &pages));
            let mut ts = 1;
            let mut next_new = 10_000;
            for _ in 0..500 {
                let ids: Vec<i64> = if rng.random_bool(0.03) {
                    next_new += 200;
                    (next_new - 200..next_new).collect()
                } else {
                    vec![rng.random_range(0..3200)]
                };
                for id in ids {
                    ts += 1;
                    let old = model.get(&id).cloned();
                    let new = match (&old, rng.random_range(0..4)) {
                        (Some(_), 0) => None,
                        (Some(o), 1) => Some(o.clone()),
                        (Some(o), 2) => Some(vec![o[0].clone(), o[1].clone(), Value::Int(rng.random_range(0..5))]),
                        _ => Some(named(id, &mut rng)),
                    };
                    let replaced = match &old {
                        _ if rng.random_bool(0.05) => Replaced::Unknown,
                        Some(o) => Replaced::Row(o),
                        None => Replaced::Nothing,
                    };
                    let pk = lazy.encode_primary(&[Value::Int(id)]);
                    lazy.redo_committed(&pk, new.clone(), replaced, ts, true);
                    eager.apply_committed(&pk, new.clone(), ts);
                    match new {
                        Some(r) => model.insert(id, r),
                        None => model.remove(&id),
                    };
                    if rng.random_bool(0.1) {
                        let seen = lazy.encode_primary(&[Value::Int(rng.random_range(0..3200))]);
                        lazy.get(&seen, &ReadView::current(99));
                    }
                }
            }
            assert!(lazy.redo_pending() > 0, "{replay}: changes wait");
            if seed % 2 == 0 {
                let view = ReadView { txn: 9, read_ts: ts, uncommitted: false };
                let mut back = Vec::new();
                for (t, fs) in [(&lazy, &lazy_fs), (&eager, &eager_fs)] {
                    let pages = t.write_pages(view, ts).unwrap().unwrap();
                    t.pages_durable(&pages);
                    assert_eq!(t.redo_pending(), 0, "{replay}: a checkpoint applies the changes waiting first");
                    back.push(open(&Arc::new(fs.crash_process()), &pages));
                }
                assert_eq!(rows_seen(&back[0], view), model.values().cloned().collect::<Vec<_>>(), "{replay}: the checkpoint's rows");
                assert_eq!(first_difference(&whole_state(&back[0]), &whole_state(&back[1]), true), None, "{replay}: the checkpoints read back alike");
            }
            assert_eq!(rows_seen(&lazy, ReadView::current(99)), model.values().cloned().collect::<Vec<_>>(), "{replay}");
            if seed % 2 == 1 {
                // (After a checkpoint, a version's stamp depends on whether its leaf was read
                // back from the checkpoint's block: the checkpoints were compared above.)
                assert_eq!(first_difference(&whole_state(&lazy), &whole_state(&eager), false), None, "{replay}");
            }
            assert_eq!(lazy.redo_pending(), 0, "{replay}: every leaf read took its changes");
        }
    }
}
