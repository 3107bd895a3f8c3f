//! A table's page file: the blocks its pages are written to, allocated copy-on-write.
//!
//! The file is a header unit and then blocks of whole [`UNIT_BYTES`] units
//! ([`crate::page`], `docs/page-format.md`). A page is never written over in place: each
//! new image of a page goes to free units, and the block it replaces is *retired*. A retired
//! block becomes free only once a checkpoint that does not reference it is durable
//! ([`PageFile::release_retired`]); a block no checkpoint can reference (not stable: an
//! eviction's image) is free at once ([`PageFile::free_unnamed`]). So the blocks the newest
//! durable checkpoint references are never written while it is the one recovery would start
//! from. That is why a torn write
//! can never damage the only copy of a page: a write lands only on units no durable
//! checkpoint names, and the log replays everything after the checkpoint (`docs/architecture.md`,
//! "The paged engine").
//!
//! Delta blocks ([`PageFile::write_deltas`], `docs/page-format.md`) hold the delta records
//! of many leaves, each read alone ([`PageFile::read_delta`]). Such a block is held while a
//! leaf's image uses one of its records (a reference each). When the last is released
//! ([`PageFile::release_delta`]) the block is retired like any other block: free once no
//! durable checkpoint names it (a record no leaf took is released as soon as it is written,
//! and its block is kept for the checkpoint that names it that way).
//!
//! Nothing about free space is kept on disk: at start-up the file's free units are exactly
//! those the checkpoint recovery starts from does not reference ([`PageFile::open`]).
//!
//! Invariants:
//! - a unit is in at most one of: a live block (current or retired), the free map;
//! - free extents are coalesced and lie below `end`; units at or past `end` are free too;
//! - a block is written only to units just allocated, and read only through an address a
//!   caller holds for a block it wrote (or a checkpoint named), never a retired one's.
//!
//! Thread safety: every method takes `&self`; allocation is under one short mutex, reads and
//! writes are positional and run beside each other.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use quill_io::{File, Fs};

use crate::page::{
    BLOCK_HEADER_BYTES, BlockAddr, BlockHeader, DELTA_HEADER_BYTES, PageError, UNIT_BYTES, open_block, open_delta, seal_block, seal_delta, units_for,
};

/// The file's first bytes.
pub const FILE_MAGIC: &[u8; 8] = b"QUILLPGF";
/// Offset of the magic.
pub const FILE_MAGIC_OFFSET: usize = 0;
/// Offset of the format version (u32).
pub const FILE_VERSION_OFFSET: usize = FILE_MAGIC_OFFSET + FILE_MAGIC.len();
/// Offset of the unit size the file was made with (u32).
pub const FILE_UNIT_OFFSET: usize = FILE_VERSION_OFFSET + 4;
/// Offset of the CRC-32C of the bytes before it.
pub const FILE_CRC_OFFSET: usize = FILE_UNIT_OFFSET + 4;
/// Bytes of the header that mean anything; the rest of its unit is zero.
pub const FILE_HEADER_BYTES: usize = FILE_CRC_OFFSET + 4;
/// Units the header takes: blocks start after it.
pub const FILE_HEADER_UNITS: u64 = 1;
/// The format this build writes and reads.
pub const FILE_VERSION: u32 = 1;
/// A page file's name ends so.
pub const FILE_SUFFIX: &str = ".qpage";

const _: () = assert!(FILE_HEADER_BYTES <= UNIT_BYTES);

/// Why a page file could not be opened or a block read.
#[derive(Debug, thiserror::Error)]
pub enum PageFileError {
    #[error("{path}: {source}")]
    Io { path: String, source: io::Error },
    #[error("{path}: {source}")]
    Page { path: String, source: PageError },
    #[error("{path}: {what}")]
    Header { path: String, what: String },
}

/// What a page file has done since it was opened (the buffer pool's status counters are
/// sums of these).
#[derive(Debug, Default)]
pub struct PageFileCounters {
    pub blocks_read: AtomicU64,
    pub bytes_read: AtomicU64,
    pub blocks_written: AtomicU64,
    pub bytes_written: AtomicU64,
}

/// A block read back and checked: its header and payload.
#[derive(Debug)]
pub struct Block {
    bytes: Vec<u8>,
    header: BlockHeader,
    payload_end: usize,
}

impl Block {
    #[must_use]
    pub fn header(&self) -> BlockHeader {
        self.header
    }

    #[must_use]
    pub fn payload(&self) -> &[u8] {
        &self.bytes[BLOCK_HEADER_BYTES..self.payload_end]
    }
}

/// Where a leaf's delta record is ([`PageFile::write_deltas`]): the delta block that holds it,
/// and its bytes in that block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DeltaRef {
    pub block: BlockAddr,
    /// Byte offset of the record in its block.
    pub at: u32,
    /// Bytes of the record, header included.
    pub len: u32,
}

impl DeltaRef {
    /// Byte offset of the record in its file.
    #[must_use]
    pub fn offset(self) -> u64 {
        self.block.offset() + u64::from(self.at)
    }
}

/// A delta block's records that leaves (or the checkpoint being written) still use.
#[derive(Debug)]
struct DeltaUse {
    addr: BlockAddr,
    /// References not yet released.
    refs: u32,
    /// Bytes of those records.
    live_bytes: u64,
    /// Bytes of the records the block held when written (at start-up: those named then).
    records_bytes: u64,
}

#[derive(Debug, Default)]
struct Space {
    /// Delta blocks by first unit, while any of their records is referenced; retired when the
    /// last reference goes.
    deltas: HashMap<u64, DeltaUse>,
    /// First unit past every block written (free units below it are in the maps).
    end: u64,
    /// Free extents by first unit: units.
    by_unit: BTreeMap<u64, u32>,
    /// The same extents by size, for best fit: (units, first unit).
    by_size: BTreeSet<(u32, u64)>,
    /// Blocks replaced by newer images that a checkpoint may still reference.
    retired: Vec<BlockAddr>,
}

impl Space {
    fn take_extent(&mut self, unit: u64) -> Option<u32> {
        let units = self.by_unit.remove(&unit)?;
        self.by_size.remove(&(units, unit));
        Some(units)
    }

    fn put_extent(&mut self, unit: u64, units: u32) {
        self.by_unit.insert(unit, units);
        self.by_size.insert((units, unit));
    }

    fn allocate(&mut self, units: u32) -> u64 {
        if let Some(&(size, unit)) = self.by_size.range((units, 0)..).next() {
            self.take_extent(unit);
            if size > units {
                self.put_extent(unit + u64::from(units), size - units);
            }
            return unit;
        }
        let unit = self.end;
        self.end += u64::from(units);
        unit
    }

    /// Returns a block's units, merged with free neighbours; free space that reaches `end`
    /// moves `end` down instead.
    fn free(&mut self, addr: BlockAddr) {
        let (mut unit, mut units) = (addr.unit, u64::from(addr.units));
        if let Some((&before, &size)) = self.by_unit.range(..unit).next_back() {
            assert!(before + u64::from(size) <= unit, "block {addr} overlaps a free extent");
            if before + u64::from(size) == unit {
                self.take_extent(before);
                unit = before;
                units += u64::from(size);
            }
        }
        if let Some(size) = self.by_unit.get(&(unit + units)).copied() {
            self.take_extent(unit + units);
            units += u64::from(size);
        }
        if unit + units == self.end {
            self.end = unit;
        } else {
            // Merged extents are at most the file's length in units; a u32 holds 16 TiB of them.
            self.put_extent(unit, u32::try_from(units).unwrap_or(u32::MAX));
        }
    }

    fn free_units(&self) -> u64 {
        self.by_unit.values().map(|&u| u64::from(u)).sum()
    }
}

/// One table's page file. See the module documentation.
pub struct PageFile {
    file: Arc<dyn File>,
    path: PathBuf,
    space: Mutex<Space>,
    pub counters: PageFileCounters,
}

impl std::fmt::Debug for PageFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PageFile").field("path", &self.path).finish_non_exhaustive()
    }
}

fn header_unit() -> Vec<u8> {
    let mut unit = vec![0; UNIT_BYTES];
    unit[FILE_MAGIC_OFFSET..FILE_VERSION_OFFSET].copy_from_slice(FILE_MAGIC);
    unit[FILE_VERSION_OFFSET..FILE_UNIT_OFFSET].copy_from_slice(&FILE_VERSION.to_le_bytes());
    unit[FILE_UNIT_OFFSET..FILE_CRC_OFFSET].copy_from_slice(&u32::try_from(UNIT_BYTES).expect("4 KiB").to_le_bytes());
    let crc = crc32c::crc32c(&unit[..FILE_CRC_OFFSET]);
    unit[FILE_CRC_OFFSET..FILE_HEADER_BYTES].copy_from_slice(&crc.to_le_bytes());
    unit
}

impl PageFile {
    /// Creates an empty page file at `path` (replacing any file there) and makes it and its
    /// name durable.
    ///
    /// # Errors
    /// I/O errors.
    pub fn create(fs: &dyn Fs, path: &Path) -> io::Result<PageFile> {
        let file = fs.open(path, true)?;
        file.set_len(0)?;
        file.write_at(&header_unit(), 0)?;
        file.sync_data()?;
        fs.sync_dir(&quill_io::parent_dir(path))?;
        let space = Space { end: FILE_HEADER_UNITS, ..Space::default() };
        Ok(PageFile { file, path: path.to_path_buf(), space: Mutex::new(space), counters: PageFileCounters::default() })
    }

    /// Opens the page file at `path`, in which `referenced` are the leaf blocks and `deltas`
    /// the delta records of the checkpoint recovery starts from: every other unit is free,
    /// and each delta block is held by the records named in it.
    ///
    /// # Errors
    /// I/O errors, a header that is not a page file's of this version, or referenced blocks
    /// that overlap each other or the header.
    pub fn open(fs: &dyn Fs, path: &Path, referenced: &[BlockAddr], deltas: &[DeltaRef]) -> Result<PageFile, PageFileError> {
        let name = path.display().to_string();
        let io_error = |source| PageFileError::Io { path: name.clone(), source };
        let file = fs.open(path, false).map_err(io_error)?;
        let mut head = vec![0; FILE_HEADER_BYTES];
        let n = file.read_at(&mut head, 0).map_err(io_error)?;
        let header_error = |what: String| PageFileError::Header { path: name.clone(), what };
        if n < FILE_HEADER_BYTES || &head[..FILE_VERSION_OFFSET] != FILE_MAGIC {
            return Err(header_error("not a page file".into()));
        }
        let u32_at = |at: usize| u32::from_le_bytes(head[at..at + 4].try_into().expect("four bytes"));
        if crc32c::crc32c(&head[..FILE_CRC_OFFSET]) != u32_at(FILE_CRC_OFFSET) {
            return Err(header_error("header checksum mismatch".into()));
        }
        if u32_at(FILE_VERSION_OFFSET) != FILE_VERSION || u32_at(FILE_UNIT_OFFSET) as usize != UNIT_BYTES {
            return Err(header_error(format!(
                "version {} with {}-byte units, expected {FILE_VERSION} and {UNIT_BYTES}",
                u32_at(FILE_VERSION_OFFSET),
                u32_at(FILE_UNIT_OFFSET)
            )));
        }
        let mut space = Space { end: FILE_HEADER_UNITS, ..Space::default() };
        for delta in deltas {
            let used = space.deltas.entry(delta.block.unit).or_insert(DeltaUse { addr: delta.block, refs: 0, live_bytes: 0, records_bytes: 0 });
            if used.addr != delta.block || u64::from(delta.at) + u64::from(delta.len) > delta.block.bytes() as u64 {
                return Err(header_error(format!("a delta record at {} + {} does not lie in its block", delta.block, delta.at)));
            }
            used.refs += 1;
            used.live_bytes += u64::from(delta.len);
            used.records_bytes += u64::from(delta.len);
        }
        let mut blocks = referenced.to_vec();
        blocks.extend(space.deltas.values().map(|d| d.addr));
        blocks.sort_unstable();
        for addr in blocks {
            if addr.unit < space.end {
                return Err(header_error(format!("checkpoint blocks overlap at {addr}")));
            }
            if addr.unit > space.end {
                let gap = u32::try_from(addr.unit - space.end).unwrap_or(u32::MAX);
                space.put_extent(space.end, gap);
            }
            space.end = addr.end();
        }
        Ok(PageFile { file, path: path.to_path_buf(), space: Mutex::new(space), counters: PageFileCounters::default() })
    }

    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes `block` (room for the header, then the payload) as a new block with `header`
    /// and returns where it went. Not durable until [`PageFile::sync`].
    ///
    /// # Errors
    /// I/O errors; the units allocated are given back.
    pub fn write(&self, block: &mut Vec<u8>, header: BlockHeader) -> io::Result<BlockAddr> {
        let units = units_for(block.len().saturating_sub(BLOCK_HEADER_BYTES));
        let unit = self.space.lock().allocate(units);
        let addr = seal_block(block, header, unit);
        debug_assert_eq!(addr.units, units);
        if let Err(e) = crate::blocking::section(|| self.file.write_at(block, addr.offset())) {
            self.space.lock().free(addr);
            return Err(e);
        }
        self.counters.blocks_written.fetch_add(1, Ordering::Relaxed);
        self.counters.bytes_written.fetch_add(block.len() as u64, Ordering::Relaxed);
        Ok(addr)
    }

    /// Reads and checks the block at `addr`.
    ///
    /// # Errors
    /// I/O errors, and a block that fails its checks ([`open_block`]).
    pub fn read(&self, addr: BlockAddr) -> Result<Block, PageFileError> {
        let bytes = self.read_bytes(addr.offset(), addr.bytes())?;
        self.counters.blocks_read.fetch_add(1, Ordering::Relaxed);
        let (header, payload) = open_block(&bytes, addr).map_err(|source| PageFileError::Page { path: self.path.display().to_string(), source })?;
        let payload_end = BLOCK_HEADER_BYTES + payload.len();
        Ok(Block { bytes, header, payload_end })
    }

    /// Writes delta records into one new delta block, back to back, and returns where each
    /// went. Each is `(base unit, index, entries)`; its header is filled in here. Each record
    /// returned holds a reference to the block until [`PageFile::release_delta`]. Not durable
    /// until [`PageFile::sync`].
    ///
    /// # Errors
    /// I/O errors; the units allocated are given back.
    pub fn write_deltas(&self, records: &[(u64, u32, &[u8])]) -> io::Result<Vec<DeltaRef>> {
        let bytes: usize = records.iter().map(|(_, _, entries)| DELTA_HEADER_BYTES + entries.len()).sum();
        let units = u32::try_from(bytes.div_ceil(UNIT_BYTES)).expect("a delta block is bounded");
        let unit = self.space.lock().allocate(units);
        let addr = BlockAddr { unit, units };
        let mut block = Vec::with_capacity(addr.bytes());
        let mut refs = Vec::with_capacity(records.len());
        for &(base, index, entries) in records {
            let at = block.len();
            block.resize(at + DELTA_HEADER_BYTES, 0);
            block.extend_from_slice(entries);
            seal_delta(&mut block[at..], addr.offset() + at as u64, base, index);
            let r = DeltaRef { block: addr, at: u32::try_from(at).expect("bounded"), len: u32::try_from(block.len() - at).expect("bounded") };
            refs.push(r);
        }
        block.resize(addr.bytes(), 0);
        if let Err(e) = crate::blocking::section(|| self.file.write_at(&block, addr.offset())) {
            self.space.lock().free(addr);
            return Err(e);
        }
        self.counters.blocks_written.fetch_add(1, Ordering::Relaxed);
        self.counters.bytes_written.fetch_add(block.len() as u64, Ordering::Relaxed);
        let refs_count = u32::try_from(refs.len()).expect("bounded");
        self.space.lock().deltas.insert(unit, DeltaUse { addr, refs: refs_count, live_bytes: bytes as u64, records_bytes: bytes as u64 });
        Ok(refs)
    }

    /// Reads and checks the delta record `delta` of the leaf whose base block starts at unit
    /// `base`, index `index`, and returns its entries.
    ///
    /// # Errors
    /// I/O errors, and a record that fails its checks ([`open_delta`]).
    pub fn read_delta(&self, delta: DeltaRef, base: u64, index: u32) -> Result<Vec<u8>, PageFileError> {
        let mut bytes = self.read_bytes(delta.offset(), delta.len as usize)?;
        let page_error = |source| PageFileError::Page { path: self.path.display().to_string(), source };
        let entries = open_delta(&bytes, delta.offset(), base, index).map_err(page_error)?.len();
        bytes.drain(..bytes.len() - entries);
        Ok(bytes)
    }

    /// A leaf (or a checkpoint's name for one) no longer uses the delta record `delta`: once
    /// no record of its block is used, the block is retired ([`PageFile::retire`]).
    ///
    /// # Panics
    /// If the record's block holds no reference (a record released twice).
    pub fn release_delta(&self, delta: DeltaRef) {
        let mut space = self.space.lock();
        let used = space.deltas.get_mut(&delta.block.unit).expect("a delta record is released once");
        used.refs -= 1;
        used.live_bytes -= u64::from(delta.len);
        if used.refs == 0 {
            let addr = used.addr;
            space.deltas.remove(&delta.block.unit);
            space.retired.push(addr);
        }
    }

    /// How much of `delta`'s block is still used: (bytes of the records in use, bytes of the
    /// records it was written with).
    #[must_use]
    pub fn delta_block_use(&self, delta: DeltaRef) -> (u64, u64) {
        self.space.lock().deltas.get(&delta.block.unit).map_or((0, 0), |d| (d.live_bytes, d.records_bytes))
    }

    /// Up to `len` bytes from `offset` (fewer at the file's end), counted in `bytes_read`. Bytes
    /// the OS holds in memory are copied at once; only a read that may wait for the disk goes
    /// through a blocking section (which, on a runtime's worker, hands its other tasks to
    /// another thread first: a cost worth paying only for a real wait).
    fn read_bytes(&self, offset: u64, len: usize) -> Result<Vec<u8>, PageFileError> {
        let mut bytes = vec![0; len];
        let n = if self.file.read_cached(&mut bytes, offset) {
            bytes.len()
        } else {
            crate::blocking::section(|| self.file.read_at(&mut bytes, offset))
                .map_err(|source| PageFileError::Io { path: self.path.display().to_string(), source })?
        };
        bytes.truncate(n);
        self.counters.bytes_read.fetch_add(n as u64, Ordering::Relaxed);
        Ok(bytes)
    }

    /// A hint that the block at `addr` will be read soon ([`quill_io::File::will_need`]).
    pub fn will_need(&self, addr: BlockAddr) {
        self.file.will_need(addr.offset(), addr.bytes() as u64);
    }

    /// The block at `addr`, which no checkpoint names (an unstable image eviction wrote: a
    /// checkpoint names only stable blocks), is no longer the current image of its page: its
    /// units are free at once. Only a block that may be named goes through
    /// [`PageFile::retire`].
    pub fn free_unnamed(&self, addr: BlockAddr) {
        self.space.lock().free(addr);
    }

    /// The block at `addr` is no longer the current image of its page. Its units are free
    /// once a checkpoint that does not reference it is durable ([`PageFile::release_retired`]).
    pub fn retire(&self, addr: BlockAddr) {
        self.space.lock().retired.push(addr);
    }

    /// A checkpoint that references the blocks starting at `referenced` (first units) is
    /// durable, and recovery starts from it: every retired block it does not reference is
    /// free from now on. Returns the units freed.
    pub fn release_retired(&self, referenced: &HashSet<u64>) -> u64 {
        let mut space = self.space.lock();
        let retired = std::mem::take(&mut space.retired);
        let mut freed = 0;
        for addr in retired {
            if referenced.contains(&addr.unit) {
                space.retired.push(addr);
            } else {
                freed += u64::from(addr.units);
                space.free(addr);
            }
        }
        freed
    }

    /// Makes every block written so far durable.
    ///
    /// # Errors
    /// I/O errors: the file's durable state is then unknown (fail-stop, `quill_io`).
    pub fn sync(&self) -> io::Result<()> {
        crate::blocking::section(|| self.file.sync_data())
    }

    /// Bytes of the file that blocks, live or retired, occupy or that lie free between them.
    #[must_use]
    pub fn bytes_allocated(&self) -> u64 {
        (self.space.lock().end - FILE_HEADER_UNITS) * UNIT_BYTES as u64
    }

    /// Bytes free for new blocks below the end of the last block (`DATA_FREE`).
    #[must_use]
    pub fn bytes_free(&self) -> u64 {
        self.space.lock().free_units() * UNIT_BYTES as u64
    }

    /// Cuts the file after its last block (free units past it give their disk space back).
    ///
    /// # Errors
    /// I/O errors.
    pub fn trim(&self) -> io::Result<()> {
        let end = self.space.lock().end;
        if self.file.len()? > end * UNIT_BYTES as u64 {
            self.file.set_len(end * UNIT_BYTES as u64)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use quill_io::SimFs;
    use rand::rngs::StdRng;
    use rand::{RngExt, SeedableRng};

    use super::*;
    use crate::page::{FLAG_STABLE, KIND_ROWS};

    const HEADER: BlockHeader = BlockHeader { kind: KIND_ROWS, flags: FLAG_STABLE, index: 0 };

    fn sim_fs() -> SimFs {
        let fs = SimFs::new();
        fs.create_dir_all(Path::new("/d")).unwrap();
        fs
    }

    fn payload_block(payload: &[u8]) -> Vec<u8> {
        let mut block = vec![0; BLOCK_HEADER_BYTES];
        block.extend_from_slice(payload);
        block
    }

    fn page_payload(page: u32, version: u32, len: usize) -> Vec<u8> {
        let mut p = format!("page {page} version {version};").into_bytes();
        p.resize(len, (page ^ version) as u8);
        p
    }

    #[test]
    fn blocks_read_back_and_freed_units_are_reused_best_fit() {
        let fs = sim_fs();
        let pf = PageFile::create(&fs, Path::new("/d/t.qpage")).unwrap();
        let a = pf.write(&mut payload_block(&[1; 10]), HEADER).unwrap();
        let b = pf.write(&mut payload_block(&[2; 3 * UNIT_BYTES]), HEADER).unwrap();
        let c = pf.write(&mut payload_block(&[3; 10]), HEADER).unwrap();
        assert_eq!((a.unit, b.unit, b.units, c.unit), (1, 2, 4, 6));
        assert_eq!(pf.read(b).unwrap().payload(), &[2; 3 * UNIT_BYTES][..]);
        pf.retire(b);
        assert_eq!(pf.release_retired(&HashSet::from([b.unit])), 0, "a checkpoint still names it");
        assert_eq!(pf.release_retired(&HashSet::new()), 4);
        assert_eq!(pf.bytes_free(), 4 * UNIT_BYTES as u64);
        // A one-unit block takes the front of the hole; a block too big for it goes at the end.
        let d = pf.write(&mut payload_block(&[4; 10]), HEADER).unwrap();
        assert_eq!(d.unit, 2);
        let e = pf.write(&mut payload_block(&[5; 4 * UNIT_BYTES]), HEADER).unwrap();
        assert_eq!(e.unit, 7);
        // Freeing the last block gives its units back to the end, merged with the hole before.
        pf.retire(e);
        pf.retire(c);
        pf.release_retired(&HashSet::new());
        assert_eq!(pf.bytes_allocated(), 2 * UNIT_BYTES as u64, "units 1 and 2 hold blocks");
        assert_eq!(pf.bytes_free(), 0);
        assert_eq!(pf.read(d).unwrap().payload(), &[4; 10]);
    }

    #[test]
    fn opening_frees_every_unit_the_checkpoint_does_not_name() {
        let fs = sim_fs();
        let path = Path::new("/d/t.qpage");
        let pf = PageFile::create(&fs, path).unwrap();
        let blocks: Vec<BlockAddr> = (0..6).map(|i| pf.write(&mut payload_block(&vec![i; 5000]), HEADER).unwrap()).collect();
        pf.sync().unwrap();
        let kept = [blocks[1], blocks[4]];
        let reopened = PageFile::open(&fs, path, &kept, &[]).unwrap();
        assert_eq!(reopened.bytes_allocated(), blocks[4].end() * UNIT_BYTES as u64 - UNIT_BYTES as u64);
        assert_eq!(reopened.bytes_free(), 6 * UNIT_BYTES as u64, "blocks 0, 2 and 3 (two units each)");
        assert_eq!(reopened.read(blocks[4]).unwrap().payload(), &vec![4; 5000][..]);
        let overlapping = [blocks[1], BlockAddr { unit: blocks[1].unit + 1, units: 1 }];
        assert!(PageFile::open(&fs, path, &overlapping, &[]).is_err());
        assert!(PageFile::open(&fs, path, &[BlockAddr { unit: 0, units: 1 }], &[]).is_err(), "the header is no block");
    }

    #[test]
    fn a_file_that_is_not_a_page_file_is_refused() {
        let fs = sim_fs();
        let path = Path::new("/d/x.qpage");
        fs.open(path, true).unwrap().write_at(b"QUILLCKPxxxxxxxxxxxxxxxx", 0).unwrap();
        assert!(matches!(PageFile::open(&fs, path, &[], &[]), Err(PageFileError::Header { .. })));
        let pf = PageFile::create(&fs, path).unwrap();
        drop(pf);
        let file = fs.open(path, false).unwrap();
        file.write_at(&[9], u64::try_from(FILE_VERSION_OFFSET).unwrap()).unwrap();
        assert!(matches!(PageFile::open(&fs, path, &[], &[]), Err(PageFileError::Header { .. })));
    }

    /// The copy-on-write promise under power loss: pages are rewritten again and again while
    /// checkpoints run (a checkpoint takes each page's image of the moment it reaches it, so
    /// a page may be rewritten after the checkpoint took it, before the checkpoint is
    /// durable), and the machine loses power at a random moment (unsynced writes dropped, kept
    /// or torn). Every page of the last checkpoint that was durable reads back as it was
    /// taken, because no write since could land on its blocks.
    #[test]
    fn every_block_of_the_last_durable_checkpoint_survives_any_power_loss() {
        for seed in 0..300u64 {
            let fs = sim_fs();
            let path = Path::new("/d/t.qpage");
            let pf = PageFile::create(&fs, path).unwrap();
            let mut rng = StdRng::seed_from_u64(seed);
            let pages = 12u32;
            let mut current: HashMap<u32, (BlockAddr, Vec<u8>)> = HashMap::new();
            let mut durable: Vec<(BlockAddr, Vec<u8>)> = Vec::new();
            // A checkpoint in progress: the pages it has still to reach, and what it took.
            type Taken = Vec<(BlockAddr, Vec<u8>)>;
            let mut running: Option<(Vec<u32>, Taken)> = None;
            let steps = rng.random_range(10..200);
            for step in 0..steps {
                match running.as_mut() {
                    None if rng.random_range(0..8) == 0 => running = Some(((0..pages).collect(), Vec::new())),
                    Some((to_reach, taken)) if rng.random_range(0..2) == 0 => match to_reach.pop() {
                        Some(page) => taken.extend(current.get(&page).cloned()),
                        None => {
                            pf.sync().unwrap();
                            durable = running.take().expect("running").1;
                            let referenced: HashSet<u64> = durable.iter().map(|(a, _)| a.unit).collect();
                            pf.release_retired(&referenced);
                        }
                    },
                    _ => {
                        let page = rng.random_range(0..pages);
                        let payload = page_payload(page, step, rng.random_range(1..3 * UNIT_BYTES));
                        let addr = pf.write(&mut payload_block(&payload), HEADER).unwrap();
                        if let Some((old, _)) = current.insert(page, (addr, payload)) {
                            pf.retire(old);
                        }
                    }
                }
            }
            let (crashed, _) = fs.crash(seed);
            let referenced: Vec<BlockAddr> = durable.iter().map(|(a, _)| *a).collect();
            let reopened = PageFile::open(&crashed, path, &referenced, &[]).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
            for (addr, payload) in &durable {
                let block = reopened.read(*addr).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
                assert_eq!(block.payload(), &payload[..], "seed {seed}: {addr}");
            }
        }
    }
}
