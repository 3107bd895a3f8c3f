//! Tests of a paged [`LeafMap`]: leaves leave memory when the pool needs room and come back
//! when used, and the map never loses, duplicates or reorders an entry for it.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::Path;
use std::sync::Arc;

use quill_io::{Fs, SimFs};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

use super::tests::Count;
use super::{LeafMap, Paging, Walk};
use crate::buffer_pool::BufferPool;
use crate::handler::ScanOrder;
use crate::page::{BlockAddr, PageError, PageValue, Reader};
use crate::page_file::PageFile;

fn paging(fs: &SimFs, capacity_bytes: u64) -> Arc<Paging> {
    fs.create_dir_all(Path::new("/d")).unwrap();
    let file = Arc::new(PageFile::create(fs, Path::new("/d/t.qpage")).unwrap());
    Arc::new(Paging { file, pool: Arc::new(BufferPool::new(capacity_bytes)), index: 0 })
}

/// The delta records a directory names, for [`PageFile::open`].
fn deltas(directory: &[super::DirectoryLeaf]) -> Vec<crate::page_file::DeltaRef> {
    directory.iter().filter_map(|l| l.delta).collect()
}

fn key(n: u32) -> Vec<u8> {
    n.to_be_bytes().to_vec()
}

fn everything(map: &LeafMap<Count>) -> Vec<(u32, u32)> {
    let mut walk = Walk::new(Bound::Unbounded, Bound::Unbounded, ScanOrder::Ascending);
    let mut out = Vec::new();
    while !walk.is_done() {
        map.step(&mut walk, |k, v| {
            out.push((u32::from_be_bytes(k.try_into().unwrap()), v.0));
            true
        });
    }
    out
}

/// The most a pool may hold past its capacity between calls: the one leaf a call made
/// resident or grew last, which it could not evict while it held it (an estimate of a full
/// leaf of `Count`s).
const SLACK_BYTES: u64 = 4096;

#[test]
fn a_map_over_a_pool_smaller_than_it_keeps_every_entry() {
    for seed in 0..20u64 {
        let fs = SimFs::new();
        let paging = paging(&fs, 16 << 10);
        let map: LeafMap<Count> = LeafMap::paged(Arc::clone(&paging));
        let mut model: BTreeMap<u32, u32> = BTreeMap::new();
        let mut rng = StdRng::seed_from_u64(seed);
        for step in 0..6000u32 {
            let n = rng.random_range(0..4000u32);
            match rng.random_range(0..10) {
                0..6 => {
                    let v = rng.random_range(1..1000);
                    map.with_or_insert(&key(n), |c| c.0 = v);
                    model.insert(n, v);
                }
                6..8 => {
                    // A removal: the map drops the entry left vacant.
                    map.with(&key(n), |c| c.0 = 0);
                    model.remove(&n);
                }
                _ => assert_eq!(map.read(&key(n), |c| c.0), model.get(&n).copied(), "seed {seed} step {step}: key {n}"),
            }
            let pool = &paging.pool;
            assert!(pool.resident_bytes() <= pool.capacity_bytes() + SLACK_BYTES, "seed {seed} step {step}: {} resident", pool.resident_bytes());
        }
        assert_eq!(everything(&map), model.iter().map(|(&k, &v)| (k, v)).collect::<Vec<_>>(), "seed {seed}");
        assert_eq!(map.len(), model.len() as u64);
        let counters = &paging.pool.counters;
        assert!(counters.evictions.load(std::sync::atomic::Ordering::Relaxed) > 100, "seed {seed}: the pool did evict");
        assert!(counters.reads.load(std::sync::atomic::Ordering::Relaxed) > 100, "seed {seed}: evicted leaves were read back");
        assert!(counters.evictions_kept.load(std::sync::atomic::Ordering::Relaxed) > 10, "seed {seed}: leaves changed since their block kept their changes");
        drop(map);
        assert_eq!(paging.pool.kept_bytes(), 0, "seed {seed}: a dropped map's kept changes go with it");
        assert_eq!(paging.pool.resident_bytes(), 0, "seed {seed}: a dropped map gives its bytes back");
        assert_eq!(paging.pool.dirty_leaves(), 0, "seed {seed}");
        assert_eq!(paging.pool.resident_leaves(), 0);
    }
}

#[test]
fn a_map_opened_from_its_directory_holds_what_it_held() {
    let fs = SimFs::new();
    let paging = paging(&fs, 1 << 20);
    let map: LeafMap<Count> = LeafMap::paged(Arc::clone(&paging));
    for n in (0..3000u32).rev() {
        map.with_or_insert(&key(n * 7), |c| c.0 = n + 1);
    }
    // Every leaf out of memory: each dirty one is written on the way.
    paging.pool.set_capacity_bytes(0);
    paging.pool.make_room();
    paging.pool.make_room();
    assert_eq!(paging.pool.resident_bytes(), 0);
    let directory = map.directory().expect("every leaf written");
    assert!(directory.len() > 40, "{} leaves", directory.len());
    let before = everything(&map);
    paging.file.sync().unwrap();
    let blocks: Vec<BlockAddr> = directory.iter().map(|l| l.block).collect();
    // What a restart sees: the file as the directory names it, nothing else.
    let crashed = fs.crash_process();
    let file = Arc::new(PageFile::open(&crashed, Path::new("/d/t.qpage"), &blocks, &deltas(&directory)).unwrap());
    let reopened = Arc::new(Paging { file, pool: Arc::new(BufferPool::new(64 << 10)), index: 0 });
    let map_again: LeafMap<Count> = LeafMap::on_disk(Arc::clone(&reopened), &directory);
    assert_eq!(reopened.pool.resident_bytes(), 0, "opening reads no leaf");
    assert_eq!(map_again.read(&key(700), |c| c.0), Some(101));
    assert_eq!(everything(&map_again), before);
    assert_eq!(map_again.len(), 3000);
}

#[test]
fn a_leaf_used_since_the_hand_passed_is_kept_and_a_held_leaf_is_skipped() {
    let fs = SimFs::new();
    let paging = paging(&fs, 1 << 30);
    let map: LeafMap<Count> = LeafMap::paged(Arc::clone(&paging));
    for n in 0..1000u32 {
        map.with_or_insert(&key(n), |c| c.0 = 1);
    }
    let leaves = paging.pool.resident_leaves();
    assert!(leaves > 10);
    // Every leaf was used since it was admitted: the first pass only clears their marks.
    paging.pool.set_capacity_bytes(0);
    map.with(&key(500), |c| {
        // The pool makes room while this leaf is held: it is skipped, not waited for.
        assert_eq!(paging.pool.make_room() as u64, leaves - 1);
        c.0 = 2;
    });
    assert_eq!(paging.pool.resident_leaves(), 0, "the held leaf goes once released");
    assert_eq!(map.read(&key(500), |c| c.0), Some(2));
}

#[test]
fn writers_and_walkers_beside_a_tiny_pool_see_every_entry_once() {
    let fs = SimFs::new();
    let paging = paging(&fs, 8 << 10);
    let map: Arc<LeafMap<Count>> = Arc::new(LeafMap::paged(Arc::clone(&paging)));
    // Keys that stay put, so every walk must see each once, in order.
    for n in (0..2000u32).step_by(2) {
        map.with_or_insert(&key(n), |c| c.0 = n + 1);
    }
    let writers: Vec<_> = (0..3u32)
        .map(|w| {
            let map = Arc::clone(&map);
            std::thread::spawn(move || {
                let mut rng = StdRng::seed_from_u64(u64::from(w));
                for _ in 0..4000 {
                    // Odd keys come and go.
                    let n = rng.random_range(0..1000u32) * 2 + 1;
                    if rng.random_range(0..2) == 0 {
                        map.with_or_insert(&key(n), |c| c.0 = n);
                    } else {
                        map.with(&key(n), |c| c.0 = 0);
                    }
                }
            })
        })
        .collect();
    for _ in 0..30 {
        let seen = everything(&map);
        assert!(seen.windows(2).all(|w| w[0].0 < w[1].0), "in order, each once");
        let stable: Vec<u32> = seen.iter().map(|&(k, _)| k).filter(|k| k % 2 == 0).collect();
        assert_eq!(stable, (0..2000u32).step_by(2).collect::<Vec<_>>());
    }
    for w in writers {
        w.join().unwrap();
    }
}

#[test]
fn an_empty_leaf_removed_from_a_paged_map_gives_its_bytes_back() {
    let fs = SimFs::new();
    let paging = paging(&fs, 1 << 30);
    let map: LeafMap<Count> = LeafMap::paged(Arc::clone(&paging));
    for n in 0..500u32 {
        map.with_or_insert(&key(n), |c| c.0 = 1);
    }
    let full = paging.pool.resident_leaves();
    for n in 0..500u32 {
        map.with(&key(n), |c| c.0 = 0);
    }
    assert!(map.is_empty());
    assert_eq!(paging.pool.resident_leaves(), 1, "only the first leaf is left of {full}");
    // Tables made and dropped again and again with a pool never full: the clock does not
    // keep their leaves' entries, nor their page files alive.
    for _ in 0..200 {
        let other: LeafMap<Count> = LeafMap::paged(Arc::clone(&paging));
        for n in 0..300u32 {
            other.with_or_insert(&key(n), |c| c.0 = 1);
        }
    }
    assert!(paging.pool.clock_len() <= 2 * 2 + crate::buffer_pool::CLOCK_STALE_ENTRIES_MAX + 10, "{}", paging.pool.clock_len());
    assert_eq!(Arc::strong_count(&paging), 2, "held by the test and by `map`, not by the clock");
    drop(map);
    assert_eq!(paging.pool.resident_bytes(), 0);
    assert_eq!(paging.pool.dirty_leaves(), 0);
}

/// A value whose page bytes say more than they hold: a damaged image must never load.
#[derive(Default, Debug)]
struct Liar;

impl super::Vacancy for Liar {
    fn is_vacant(&self) -> bool {
        false
    }
}

impl PageValue for Liar {
    const KIND: u8 = crate::page::KIND_ENTRIES;

    fn encode(&self, out: &mut Vec<u8>) {
        out.push(200);
    }

    fn decode(reader: &mut Reader<'_>) -> Result<Liar, PageError> {
        let n = reader.len()?;
        reader.take(n).map(|_| Liar)
    }

    fn heap_bytes(&self) -> usize {
        0
    }

    fn is_stable(&self) -> bool {
        true
    }
}

#[test]
#[should_panic(expected = "block at")]
fn a_leaf_whose_image_does_not_decode_stops_rather_than_loads_empty() {
    let fs = SimFs::new();
    let paging = paging(&fs, 1 << 20);
    let map: LeafMap<Liar> = LeafMap::paged(Arc::clone(&paging));
    map.with_or_insert(&key(1), |_| ());
    paging.pool.set_capacity_bytes(0);
    paging.pool.make_room();
    paging.pool.make_room();
    assert_eq!(paging.pool.resident_leaves(), 0);
    map.read(&key(1), |_| ());
}

/// What a checkpoint of a map of counts writes: every entry as it is.
fn as_is(key: &[u8], value: Count, out: &mut Vec<u8>) -> bool {
    super::put_image_entry(out, key, &value);
    true
}

fn pages_written(paging: &Paging) -> u64 {
    paging.pool.counters.pages_written.load(std::sync::atomic::Ordering::Relaxed)
}

#[test]
fn a_checkpoint_rewrites_only_the_leaves_changed_since_the_last() {
    let fs = SimFs::new();
    let paging = paging(&fs, 1 << 30);
    let map: LeafMap<Count> = LeafMap::paged(Arc::clone(&paging));
    for n in 0..5000u32 {
        map.with_or_insert(&key(n), |c| c.0 = n + 1);
    }
    assert_eq!(paging.pool.dirty_leaves(), paging.pool.resident_leaves(), "nothing written yet");
    let first = map.write_stable(as_is).unwrap();
    assert!(first.len() > 50);
    assert_eq!(paging.pool.dirty_leaves(), 0, "every leaf took its checkpoint block");
    assert!(first.first().is_some_and(|l| l.low.is_empty()) && first.windows(2).all(|w| w[0].low < w[1].low), "the directory tiles the keys");
    assert_eq!(first.iter().map(|l| l.entries).sum::<u64>(), 5000);
    let written = pages_written(&paging);
    assert_eq!(written, first.len() as u64);
    // Nothing changed: nothing written, the same blocks named.
    assert!(map.write_stable(as_is).unwrap() == first);
    assert_eq!(pages_written(&paging), written);
    // One key changed: one leaf written again.
    map.with(&key(2500), |c| c.0 = 7);
    assert_eq!(paging.pool.dirty_leaves(), 1);
    let second = map.write_stable(as_is).unwrap();
    assert_eq!(pages_written(&paging), written + 1);
    assert_eq!(second.iter().zip(&first).filter(|(a, b)| a != b).count(), 1);
    assert_eq!(second.iter().map(|l| l.entries).sum::<u64>(), 5000, "reused leaves count what they hold");
    // And it reads back, from the file alone, after the process dies.
    paging.file.sync().unwrap();
    let blocks: Vec<BlockAddr> = second.iter().map(|l| l.block).collect();
    let crashed = fs.crash_process();
    let file = Arc::new(PageFile::open(&crashed, Path::new("/d/t.qpage"), &blocks, &deltas(&second)).unwrap());
    let reopened = Arc::new(Paging { file, pool: Arc::new(BufferPool::new(32 << 10)), index: 0 });
    let back: LeafMap<Count> = LeafMap::on_disk(reopened, &second);
    assert_eq!(back.read(&key(2500), |c| c.0), Some(7));
    assert_eq!(everything(&back), everything(&map));
}

#[test]
fn a_checkpoint_leaves_out_what_its_entry_function_drops_and_keeps_those_leaves_dirty() {
    let fs = SimFs::new();
    let paging = paging(&fs, 1 << 30);
    let map: LeafMap<Count> = LeafMap::paged(Arc::clone(&paging));
    for n in 0..1000u32 {
        map.with_or_insert(&key(n), |c| c.0 = n + 1);
    }
    // Odd counts are "not seen by the checkpoint's view".
    let even_only = |key: &[u8], value: Count, out: &mut Vec<u8>| {
        if value.0 % 2 == 1 {
            return false;
        }
        super::put_image_entry(out, key, &value);
        true
    };
    let directory = map.write_stable(even_only).unwrap();
    let written = pages_written(&paging);
    // No leaf was written exactly: the next checkpoint writes them all again.
    map.write_stable(even_only).unwrap();
    assert_eq!(pages_written(&paging), 2 * written);
    paging.file.sync().unwrap();
    let blocks: Vec<BlockAddr> = directory.iter().map(|l| l.block).collect();
    let file = Arc::new(PageFile::open(&fs.crash_process(), Path::new("/d/t.qpage"), &blocks, &deltas(&directory)).unwrap());
    let back: LeafMap<Count> = LeafMap::on_disk(Arc::new(Paging { file, pool: Arc::new(BufferPool::new(1 << 20)), index: 0 }), &directory);
    let seen = everything(&back);
    assert_eq!(seen.len(), 500);
    assert_eq!(back.len(), 500);
    assert!(seen.iter().all(|&(k, v)| v == k + 1 && v % 2 == 0));
}

#[test]
fn a_checkpoint_beside_writers_that_split_and_drain_leaves_tiles_the_keys() {
    let fs = SimFs::new();
    let paging = paging(&fs, 64 << 10);
    let map: Arc<LeafMap<Count>> = Arc::new(LeafMap::paged(Arc::clone(&paging)));
    for n in (0..4000u32).step_by(4) {
        map.with_or_insert(&key(n), |c| c.0 = 1);
    }
    let writer = {
        let map = Arc::clone(&map);
        std::thread::spawn(move || {
            let mut rng = StdRng::seed_from_u64(9);
            for _ in 0..20_000 {
                // Keys not divisible by 4 come and go; whole leaves fill and drain.
                let n = rng.random_range(0..4000u32) | 1;
                if rng.random_range(0..2) == 0 {
                    map.with_or_insert(&key(n), |c| c.0 = 2);
                } else {
                    map.with(&key(n), |c| c.0 = 0);
                }
            }
        })
    };
    for _ in 0..20 {
        let directory = map.write_stable(as_is).unwrap();
        assert!(directory.first().is_some_and(|l| l.low.is_empty()));
        assert!(directory.windows(2).all(|w| w[0].low < w[1].low), "leaves ascend");
        // Every key that stays put is in the block of the leaf whose range covers it.
        paging.file.sync().unwrap();
        let blocks: Vec<BlockAddr> = directory.iter().map(|l| l.block).collect();
        let file = Arc::new(PageFile::open(&fs.crash_process(), Path::new("/d/t.qpage"), &blocks, &deltas(&directory)).unwrap());
        let back: LeafMap<Count> = LeafMap::on_disk(Arc::new(Paging { file, pool: Arc::new(BufferPool::new(1 << 20)), index: 0 }), &directory);
        let stable: Vec<u32> = everything(&back).into_iter().map(|(k, _)| k).filter(|k| k % 4 == 0).collect();
        assert_eq!(stable, (0..4000u32).step_by(4).collect::<Vec<_>>());
    }
    writer.join().unwrap();
}

/// A [`Count`] that is stable (as a row of one committed version is) only below 1000.
#[derive(Default, Debug)]
struct Pending(u32);

impl super::Vacancy for Pending {
    fn is_vacant(&self) -> bool {
        false
    }
}

impl PageValue for Pending {
    const KIND: u8 = Count::KIND;

    fn encode(&self, out: &mut Vec<u8>) {
        Count(self.0).encode(out);
    }

    fn decode(reader: &mut Reader<'_>) -> Result<Pending, PageError> {
        Count::decode(reader).map(|c| Pending(c.0))
    }

    fn heap_bytes(&self) -> usize {
        0
    }

    fn is_stable(&self) -> bool {
        self.0 < 1000
    }
}

#[test]
fn a_leaf_read_in_only_to_be_copied_goes_back_to_disk_with_its_new_block() {
    let fs = SimFs::new();
    let paging = paging(&fs, 1 << 30);
    let map: LeafMap<Pending> = LeafMap::paged(Arc::clone(&paging));
    for n in 0..3000u32 {
        map.with_or_insert(&key(n), |c| c.0 = 1000 + n);
    }
    // Every leaf evicted as an unstable image: a checkpoint must read each back to copy it.
    paging.pool.set_capacity_bytes(0);
    paging.pool.make_room();
    paging.pool.make_room();
    assert_eq!(paging.pool.resident_leaves(), 0);
    paging.pool.set_capacity_bytes(1 << 30);
    // The one leaf a query uses meanwhile is the one that stays.
    map.read(&key(0), |_| ());
    let reads = || paging.pool.counters.reads.load(std::sync::atomic::Ordering::Relaxed);
    let reads_before = reads();
    let first = map.write_stable(|key, value: Pending, out| {
        super::put_image_entry(out, key, &value);
        true
    });
    let first = first.unwrap();
    assert!(first.len() > 20);
    assert_eq!(reads() - reads_before, first.len() as u64 - 1, "each leaf on disk was read once");
    assert_eq!(paging.pool.resident_leaves(), 1, "the leaves read in for the copy went back to disk");
    assert_eq!(paging.pool.dirty_leaves(), 0);
    // Their new blocks are stable images: the next checkpoint names them without a read.
    let written = pages_written(&paging);
    let second = map.write_stable(|_, _, _| panic!("no leaf is copied again")).unwrap();
    assert!(second == first);
    assert_eq!(pages_written(&paging), written);
    assert_eq!(reads() - reads_before, first.len() as u64 - 1);
    assert_eq!(map.read(&key(2999), |c| c.0), Some(3999));
}

#[test]
fn read_ahead_asks_for_the_block_of_a_leaf_on_disk_and_for_nothing_else() {
    let fs = SimFs::new();
    let paging = paging(&fs, 1 << 30);
    let map: LeafMap<Count> = LeafMap::paged(Arc::clone(&paging));
    for n in 0..3000u32 {
        map.with_or_insert(&key(n), |c| c.0 = n);
    }
    // Resident: nothing to ask for.
    map.read_ahead(&key(10));
    assert_eq!(fs.hinted_bytes(), 0);
    paging.pool.set_capacity_bytes(0);
    paging.pool.make_room();
    paging.pool.make_room();
    assert_eq!(paging.pool.resident_leaves(), 0);
    let reads = paging.pool.counters.reads.load(std::sync::atomic::Ordering::Relaxed);
    map.read_ahead(&key(10));
    let hinted = fs.hinted_bytes();
    assert!(hinted >= crate::page::BLOCK_HEADER_BYTES as u64, "the leaf's block was asked for");
    assert_eq!(paging.pool.counters.reads.load(std::sync::atomic::Ordering::Relaxed), reads, "and not read");
    assert_eq!(paging.pool.resident_leaves(), 0);
    map.read_ahead(&key(2999));
    assert!(fs.hinted_bytes() > hinted, "another leaf, another block");
}

#[test]
fn a_leaf_changed_since_its_checkpoint_block_leaves_memory_without_a_write_and_comes_back_whole() {
    let fs = SimFs::new();
    let paging = paging(&fs, 1 << 30);
    let map: LeafMap<Count> = LeafMap::paged(Arc::clone(&paging));
    let mut model: BTreeMap<u32, u32> = BTreeMap::new();
    for n in (0..10_000u32).step_by(2) {
        map.with_or_insert(&key(n), |c| c.0 = n + 1);
        model.insert(n, n + 1);
    }
    map.write_stable(as_is).unwrap();
    let written = pages_written(&paging);
    // Changes, a removal and an insert in three leaves that keep their blocks as bases;
    // inserts that take a leaf over its bound (a load leaves room for four) split it, and its
    // two halves have none.
    let change = |model: &mut BTreeMap<u32, u32>, n: u32, v: u32| {
        map.with_or_insert(&key(n), |c| c.0 = v);
        if v == 0 {
            model.remove(&n)
        } else {
            model.insert(n, v)
        };
    };
    let splits = || paging.pool.counters.leaf_splits.load(std::sync::atomic::Ordering::Relaxed);
    let loaded_splits = splits();
    change(&mut model, 10, 77);
    change(&mut model, 3000, 0);
    change(&mut model, 3001, 4);
    change(&mut model, 8000, 5);
    for n in (6001..6010).step_by(2) {
        change(&mut model, n, 9);
    }
    assert_eq!(splits(), loaded_splits + 1);
    assert_eq!(paging.pool.dirty_leaves(), 5);
    paging.pool.set_evict_always(true);
    paging.pool.make_room();
    paging.pool.make_room();
    assert_eq!(paging.pool.resident_leaves(), 0);
    assert_eq!(pages_written(&paging), written + 2, "only the split leaves were written");
    assert_eq!(paging.pool.counters.evictions_kept.load(std::sync::atomic::Ordering::Relaxed), 3);
    assert_eq!(paging.pool.dirty_leaves(), 3, "a leaf on disk with kept changes is dirty");
    assert!(paging.pool.kept_bytes() > 0 && paging.pool.kept_bytes() == paging.pool.resident_bytes());
    let expected: Vec<(u32, u32)> = model.iter().map(|(&k, &v)| (k, v)).collect();
    paging.pool.set_evict_always(false);
    assert_eq!(everything(&map), expected, "each leaf read back is its base with its changes");
    assert_eq!(paging.pool.kept_bytes(), 0);
    // Out again, and changed again while on disk: the changes since the base accumulate.
    paging.pool.set_evict_always(true);
    paging.pool.make_room();
    paging.pool.make_room();
    change(&mut model, 12, 1);
    paging.pool.make_room();
    paging.pool.make_room();
    assert_eq!(pages_written(&paging), written + 2, "no leaf with a base is written by eviction");
    paging.pool.set_evict_always(false);
    // The checkpoint writes the three leaves with kept changes as delta records made from
    // those changes, reading no block, and each takes its record (the split halves'
    // eviction blocks are stable images already: counts are).
    let reads = paging.pool.counters.reads.load(std::sync::atomic::Ordering::Relaxed);
    let directory = map.write_stable(as_is).unwrap();
    assert_eq!(pages_written(&paging), written + 2 + 3);
    assert_eq!(paging.pool.counters.reads.load(std::sync::atomic::Ordering::Relaxed), reads, "no leaf was read to be written");
    assert_eq!(deltas(&directory).len(), 3);
    assert_eq!(paging.pool.kept_bytes(), 0);
    assert_eq!(paging.pool.dirty_leaves(), 0);
    let expected: Vec<(u32, u32)> = model.iter().map(|(&k, &v)| (k, v)).collect();
    paging.file.sync().unwrap();
    let blocks: Vec<BlockAddr> = directory.iter().map(|l| l.block).collect();
    let file = Arc::new(PageFile::open(&fs.crash_process(), Path::new("/d/t.qpage"), &blocks, &deltas(&directory)).unwrap());
    let back: LeafMap<Count> = LeafMap::on_disk(Arc::new(Paging { file, pool: Arc::new(BufferPool::new(1 << 20)), index: 0 }), &directory);
    assert_eq!(everything(&back), expected);
    assert_eq!(everything(&map), expected);
}

/// What a checkpoint that named `directory` being durable frees ([`PageFile::release_retired`]).
fn units_named(directory: &[super::DirectoryLeaf]) -> std::collections::HashSet<u64> {
    directory.iter().map(|l| l.block.unit).chain(deltas(directory).iter().map(|d| d.block.unit)).collect()
}

/// Bytes of the distinct blocks a directory names, leaves' and delta blocks'.
fn bytes_named(directory: &[super::DirectoryLeaf]) -> u64 {
    let mut blocks: Vec<BlockAddr> = directory.iter().map(|l| l.block).chain(deltas(directory).iter().map(|d| d.block)).collect();
    blocks.sort_unstable();
    blocks.dedup();
    blocks.iter().map(|b| b.bytes() as u64).sum()
}

/// Checkpoints that write few changes as delta records against the leaves' blocks, over a
/// pool smaller than the map: every checkpoint reads back, after a crash, as the map was;
/// the map reads right throughout (leaves read back from a block and its record, or with
/// their changes kept); and the file stays within a bound of what the newest checkpoint
/// names, however many records later ones left behind (sparse delta blocks are moved).
#[test]
fn delta_checkpoints_read_back_after_a_crash_and_the_file_stays_bounded() {
    for seed in 0..24u64 {
        let fs = SimFs::new();
        let paging = paging(&fs, 24 << 10);
        let map: LeafMap<Count> = LeafMap::paged(Arc::clone(&paging));
        let mut model: BTreeMap<u32, u32> = BTreeMap::new();
        let mut rng = StdRng::seed_from_u64(seed);
        for n in (0..6000u32).step_by(2) {
            map.with_or_insert(&key(n), |c| c.0 = n + 1);
            model.insert(n, n + 1);
        }
        let mut durable = (map.write_stable(as_is).unwrap(), model.clone());
        let mut records = 0;
        for round in 0..150 {
            // Mostly a few changes; now and then many, whose records a block holds together and
            // later rounds leave one by one.
            let changes = if round % 10 == 0 { 400 } else { rng.random_range(1..6) };
            for _ in 0..changes {
                let n = rng.random_range(0..6000u32);
                let v = if rng.random_range(0..8) == 0 { 0 } else { rng.random_range(1..1000) };
                map.with_or_insert(&key(n), |c| c.0 = v);
                if v == 0 {
                    model.remove(&n)
                } else {
                    model.insert(n, v)
                };
            }
            let directory = map.write_stable(as_is).unwrap();
            records += deltas(&directory).len();
            paging.file.sync().unwrap();
            paging.file.release_retired(&units_named(&directory));
            let (allocated, free) = (paging.file.bytes_allocated(), paging.file.bytes_free());
            let named = bytes_named(&directory);
            assert!(allocated - free <= 2 * named + (256 << 10), "seed {seed} round {round}: {allocated} allocated, {free} free, {named} named");
            // The delta blocks named: those with few records in use are moved, so they never
            // outgrow the leaves' own blocks.
            let leaf_bytes: u64 = directory.iter().map(|l| l.block.bytes() as u64).sum();
            let delta_bytes = named - leaf_bytes.min(named);
            assert!(delta_bytes <= leaf_bytes, "seed {seed} round {round}: delta blocks {delta_bytes} bytes, leaves {leaf_bytes}");
            durable = (directory, model.clone());
            if round % 10 == 0 {
                assert_eq!(everything(&map), model.iter().map(|(&k, &v)| (k, v)).collect::<Vec<_>>(), "seed {seed} round {round}");
            }
        }
        assert!(records > 100, "seed {seed}: changes went as delta records ({records})");
        let (directory, expected) = durable;
        let blocks: Vec<BlockAddr> = directory.iter().map(|l| l.block).collect();
        let file = Arc::new(PageFile::open(&fs.crash_process(), Path::new("/d/t.qpage"), &blocks, &deltas(&directory)).unwrap());
        let back: LeafMap<Count> = LeafMap::on_disk(Arc::new(Paging { file, pool: Arc::new(BufferPool::new(16 << 10)), index: 0 }), &directory);
        assert_eq!(everything(&back), expected.iter().map(|(&k, &v)| (k, v)).collect::<Vec<_>>(), "seed {seed}");
        assert_eq!(back.len(), expected.len() as u64, "seed {seed}: the directory counts the entries");
    }
}

/// A delta block whose leaves mostly moved on to newer records is emptied by the next
/// checkpoint, which writes the few records still in it again elsewhere: then no checkpoint
/// names it, and it is free once one that does not is durable.
#[test]
fn a_delta_block_its_leaves_mostly_left_is_emptied_and_freed() {
    let fs = SimFs::new();
    let paging = paging(&fs, 1 << 30);
    let map: LeafMap<Count> = LeafMap::paged(Arc::clone(&paging));
    for n in 0..12_800u32 {
        map.with_or_insert(&key(n), |c| c.0 = 1);
    }
    let durable = |directory: &[super::DirectoryLeaf]| {
        paging.file.sync().unwrap();
        paging.file.release_retired(&units_named(directory));
    };
    durable(&map.write_stable(as_is).unwrap());
    // One change in every leaf: a record each, all in one delta block.
    for n in (0..12_800u32).step_by(64) {
        map.with(&key(n), |c| c.0 = 2);
    }
    let second = map.write_stable(as_is).unwrap();
    durable(&second);
    let old = second[0].delta.expect("a record").block;
    assert!(deltas(&second).iter().all(|d| d.block == old) && deltas(&second).len() == 200);
    // A second change in three leaves of four: their records move to a new block.
    for n in (0..12_800u32).step_by(64).filter(|n| n % 256 != 0) {
        map.with(&key(n + 1), |c| c.0 = 3);
    }
    let third = map.write_stable(as_is).unwrap();
    durable(&third);
    // Nothing changed since: the records left in the old block, a quarter of it, move.
    let fourth = map.write_stable(as_is).unwrap();
    assert_eq!(deltas(&fourth).len(), 200);
    assert!(deltas(&fourth).iter().all(|d| d.block != old), "no record is left in the old block");
    let free_before = paging.file.bytes_free();
    durable(&fourth);
    assert!(paging.file.bytes_free() >= free_before + old.bytes() as u64, "the old block is free");
    assert_eq!(everything(&map).iter().filter(|&&(_, v)| v > 1).count(), 200 + 150);
    // Moving records is a one-time cost: the next checkpoint writes nothing.
    let written = pages_written(&paging);
    assert!(map.write_stable(as_is).unwrap() == fourth);
    assert_eq!(pages_written(&paging), written);
}
