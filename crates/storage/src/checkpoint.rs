//! Checkpoint files: a consistent snapshot of every table as of one commit-log position,
//! written once, atomically published, and read back at start-up (format in
//! `docs/checkpoint-format.md`, mirrored by the constants here).
//!
//! Writing: [`CheckpointWriter`] streams entries into `<name>.tmp` through the `io` seam. The
//! CRC32C of everything written is kept as it goes. [`CheckpointWriter::finish`] appends the
//! END entry and the checksum, syncs the file, renames it to its final name and syncs the
//! directory. Only then does the checkpoint exist; a crash at any earlier point leaves a
//! `.tmp` file, which is ignored and removed.
//!
//! Reading: [`read_checkpoint`] verifies the length, magic, version and checksum before it
//! hands out a single entry, so recovery never builds on a damaged snapshot. It reads the
//! file in chunks, twice (verify, then hand out), so it never holds the whole file.
//!
//! What a table's definition means is the SQL layer's business: here it is an opaque
//! statement text.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use quill_io::cursor::{take, take_len32, take_str16};
use quill_io::{File, Fs};

use crate::format::decode_log_row;
use crate::leaf_map::DirectoryLeaf;
use crate::page::BlockAddr;
use crate::page_file::DeltaRef;
use crate::row::decode_row;
use crate::tablespace::{IndexPages, TablePages};
use crate::value::Row;

pub const MAGIC: &[u8; 8] = b"QUILLCKP";
/// The version written. Versions 1 (no `read_from`, a 32-byte header), 2 (rows in the
/// first row encoding, `crate::row`), 3 (no DEFINITIONS_FROM entry), 4 (no VIEW entry),
/// 5 (no STREAM_COMMIT entry), 6 (no DATABASE_COLLATION entry), 7 (no TABLE_PAGES
/// entry), 8 (no delta records in TABLE_PAGES) and 9 (no PROGRAM entry) are still read.
pub const VERSION: u32 = 10;
pub const MAGIC_OFFSET: usize = 0;
pub const VERSION_OFFSET: usize = MAGIC_OFFSET + 8;
pub const LSN_OFFSET: usize = VERSION_OFFSET + 8; // 4 bytes of version, 4 reserved
pub const NEXT_SEQ_OFFSET: usize = LSN_OFFSET + 8;
pub const READ_FROM_OFFSET: usize = NEXT_SEQ_OFFSET + 8;
pub const HEADER_BYTES: usize = READ_FROM_OFFSET + 8;
/// The header of a version 1 checkpoint, which ends before `read_from`.
pub const HEADER_BYTES_V1: usize = READ_FROM_OFFSET;
pub const TRAILER_BYTES: usize = 4;
const _: () = assert!(HEADER_BYTES == 40, "docs/checkpoint-format.md specifies a 40-byte header");

pub const ENTRY_DATABASE: u8 = 1;
pub const ENTRY_TABLE: u8 = 2;
pub const ENTRY_ROW: u8 = 3;
pub const ENTRY_END: u8 = 4;
/// The LSN from which the checkpoint's table definitions describe every record: the end of
/// the newest DDL record at or before the checkpoint's position.
pub const ENTRY_DEFINITIONS_FROM: u8 = 5;
/// A view: its database, name and defining statement (version 5 on).
pub const ENTRY_VIEW: u8 = 6;
/// A streamed transaction committed before the checkpoint's `read_from` whose commit record
/// the log still holds: the LSN of its commit record and of its first part (version 6 on).
/// The log keeps the segments of its parts while it keeps the commit record, or the binary
/// log could not read the transaction back (`quill_log::Log::stream_commits_before`).
pub const ENTRY_STREAM_COMMIT: u8 = 7;
/// A database's default collation, after its DATABASE entry: its name, then the
/// collation's name (version 7 on; before, every database had the server's default).
pub const ENTRY_DATABASE_COLLATION: u8 = 8;
/// A paged table's pages, after its TABLE entry and instead of ROW entries: its page file
/// and each index's directory of leaves (version 8 on; `crate::tablespace::TablePages`).
pub const ENTRY_TABLE_PAGES: u8 = 9;
/// A stored program (a trigger), after every view: its database, name and defining
/// statement, in the order they were made (version 10 on).
pub const ENTRY_PROGRAM: u8 = 10;

pub const FILE_PREFIX: &str = "checkpoint-";
pub const FILE_SUFFIX: &str = ".qckpt";
pub const TMP_SUFFIX: &str = ".tmp";
/// The writer hands the file system chunks of this size.
pub const WRITE_CHUNK_BYTES: usize = 1 << 20;

/// The file name of the checkpoint at `lsn`.
#[must_use]
pub fn checkpoint_name(lsn: u64) -> String {
    format!("{FILE_PREFIX}{lsn:020}{FILE_SUFFIX}")
}

fn parse_checkpoint_name(name: &str) -> Option<u64> {
    let digits = name.strip_prefix(FILE_PREFIX)?.strip_suffix(FILE_SUFFIX)?;
    (digits.len() == 20 && digits.bytes().all(|b| b.is_ascii_digit())).then(|| digits.parse().ok()).flatten()
}

/// Complete checkpoints in `dir`, newest first.
///
/// # Errors
/// I/O errors listing the directory.
pub fn find_checkpoints(fs: &dyn Fs, dir: &Path) -> io::Result<Vec<(u64, PathBuf)>> {
    let mut found: Vec<(u64, PathBuf)> = fs.list(dir)?.into_iter().filter_map(|n| parse_checkpoint_name(&n).map(|lsn| (lsn, dir.join(n)))).collect();
    found.sort_by_key(|&(lsn, _)| std::cmp::Reverse(lsn));
    Ok(found)
}

/// Removes the unfinished `.tmp` files a checkpoint interrupted by a crash left behind
/// (start-up calls it). Returns how many.
///
/// # Errors
/// I/O errors.
pub fn remove_unfinished_checkpoints(fs: &dyn Fs, dir: &Path) -> io::Result<usize> {
    let unfinished: Vec<String> = fs.list(dir)?.into_iter().filter(|n| n.starts_with(FILE_PREFIX) && n.ends_with(TMP_SUFFIX)).collect();
    for name in &unfinished {
        fs.remove(&dir.join(name))?;
    }
    if !unfinished.is_empty() {
        fs.sync_dir(dir)?;
    }
    Ok(unfinished.len())
}

/// Removes every checkpoint older than `keep_lsn`, and unfinished `.tmp` files.
///
/// # Errors
/// I/O errors.
pub fn remove_old_checkpoints(fs: &dyn Fs, dir: &Path, keep_lsn: u64) -> io::Result<usize> {
    let mut removed = 0;
    for name in fs.list(dir)? {
        let old = parse_checkpoint_name(&name).is_some_and(|lsn| lsn < keep_lsn);
        let unfinished = name.starts_with(FILE_PREFIX) && name.ends_with(TMP_SUFFIX);
        if old || unfinished {
            fs.remove(&dir.join(&name))?;
            removed += 1;
        }
    }
    if removed > 0 {
        fs.sync_dir(dir)?;
    }
    Ok(removed)
}

/// One entry of a checkpoint, in file order: databases, then each table followed by its rows.
#[derive(Debug, Clone, PartialEq)]
pub enum CheckpointEntry {
    Database(String),
    /// The default collation of the database named (see [`ENTRY_DATABASE_COLLATION`]).
    DatabaseCollation {
        name: String,
        collation: String,
    },
    Table {
        db: String,
        name: String,
        definition: String,
        auto_increment: u64,
    },
    /// A row of the table most recently announced.
    Row {
        key: Vec<u8>,
        row: Row,
    },
    /// Every log record from this LSN on is described by the checkpoint's definitions (no
    /// DDL statement lies between it and the checkpoint's position).
    DefinitionsFrom(u64),
    /// A view, after every table: the statement that makes it again.
    View {
        db: String,
        name: String,
        definition: String,
    },
    /// A stored program, after every view: the statement that makes it again (see
    /// [`ENTRY_PROGRAM`]).
    Program {
        db: String,
        name: String,
        definition: String,
    },
    /// A streamed transaction committed before `read_from` (see [`ENTRY_STREAM_COMMIT`]).
    StreamCommit {
        commit: u64,
        first: u64,
    },
    /// The pages of the table most recently announced (see [`ENTRY_TABLE_PAGES`]).
    TablePages(TablePages),
}

/// Streams a checkpoint to disk; see the module doc.
pub struct CheckpointWriter {
    fs: Arc<dyn Fs>,
    file: Arc<dyn File>,
    tmp_path: PathBuf,
    final_path: PathBuf,
    buffer: Vec<u8>,
    written: u64,
    crc: u32,
    entries: u64,
    /// Set once the file has its final name; until then dropping the writer removes it.
    finished: bool,
}

impl Drop for CheckpointWriter {
    /// A checkpoint that failed half-way (a full disk, say) gives its space back at once.
    fn drop(&mut self) {
        if !self.finished {
            let _ = self.fs.remove(&self.tmp_path);
        }
    }
}

impl CheckpointWriter {
    /// Starts the checkpoint of `position`.
    ///
    /// # Errors
    /// I/O errors.
    pub fn create(fs: Arc<dyn Fs>, dir: &Path, position: CheckpointPosition) -> io::Result<CheckpointWriter> {
        let CheckpointPosition { lsn, next_seq, read_from } = position;
        assert!(read_from <= lsn, "recovery reads from at or before the checkpoint's position");
        let final_path = dir.join(checkpoint_name(lsn));
        let tmp_path = dir.join(format!("{}{TMP_SUFFIX}", checkpoint_name(lsn)));
        if fs.exists(&tmp_path) {
            fs.remove(&tmp_path)?;
        }
        let file = fs.open(&tmp_path, true)?;
        let mut buffer = Vec::with_capacity(WRITE_CHUNK_BYTES + HEADER_BYTES);
        buffer.extend_from_slice(MAGIC);
        buffer.extend_from_slice(&VERSION.to_le_bytes());
        buffer.extend_from_slice(&0_u32.to_le_bytes());
        buffer.extend_from_slice(&lsn.to_le_bytes());
        buffer.extend_from_slice(&next_seq.to_le_bytes());
        buffer.extend_from_slice(&read_from.to_le_bytes());
        debug_assert_eq!(buffer.len(), HEADER_BYTES);
        Ok(CheckpointWriter { fs, file, tmp_path, final_path, buffer, written: 0, crc: 0, entries: 0, finished: false })
    }

    /// The [`CheckpointEntry::DefinitionsFrom`] entry, written first.
    ///
    /// # Errors
    /// I/O errors.
    pub fn definitions_from(&mut self, lsn: u64) -> io::Result<()> {
        self.buffer.push(ENTRY_DEFINITIONS_FROM);
        self.buffer.extend_from_slice(&lsn.to_le_bytes());
        self.entry_done()
    }

    /// A [`CheckpointEntry::StreamCommit`] entry, written after DEFINITIONS_FROM.
    ///
    /// # Errors
    /// I/O errors.
    pub fn stream_commit(&mut self, commit: u64, first: u64) -> io::Result<()> {
        assert!(first < commit, "a stream's parts come before its commit record");
        self.buffer.push(ENTRY_STREAM_COMMIT);
        self.buffer.extend_from_slice(&commit.to_le_bytes());
        self.buffer.extend_from_slice(&first.to_le_bytes());
        self.entry_done()
    }

    /// # Errors
    /// I/O errors.
    pub fn database(&mut self, name: &str) -> io::Result<()> {
        self.buffer.push(ENTRY_DATABASE);
        put16(&mut self.buffer, name.as_bytes());
        self.entry_done()
    }

    /// # Errors
    /// I/O errors.
    pub fn database_collation(&mut self, name: &str, collation: &str) -> io::Result<()> {
        self.buffer.push(ENTRY_DATABASE_COLLATION);
        put16(&mut self.buffer, name.as_bytes());
        put16(&mut self.buffer, collation.as_bytes());
        self.entry_done()
    }

    /// # Errors
    /// I/O errors.
    pub fn table(&mut self, db: &str, name: &str, definition: &str, auto_increment: u64) -> io::Result<()> {
        self.buffer.push(ENTRY_TABLE);
        put16(&mut self.buffer, db.as_bytes());
        put16(&mut self.buffer, name.as_bytes());
        put32(&mut self.buffer, definition.as_bytes());
        self.buffer.extend_from_slice(&auto_increment.to_le_bytes());
        self.entry_done()
    }

    /// A view's entry, written after every table's.
    ///
    /// # Errors
    /// I/O errors.
    pub fn view(&mut self, db: &str, name: &str, definition: &str) -> io::Result<()> {
        self.buffer.push(ENTRY_VIEW);
        put16(&mut self.buffer, db.as_bytes());
        put16(&mut self.buffer, name.as_bytes());
        put32(&mut self.buffer, definition.as_bytes());
        self.entry_done()
    }

    /// A stored program's entry, written after every view's.
    ///
    /// # Errors
    /// I/O errors.
    pub fn program(&mut self, db: &str, name: &str, definition: &str) -> io::Result<()> {
        self.buffer.push(ENTRY_PROGRAM);
        put16(&mut self.buffer, db.as_bytes());
        put16(&mut self.buffer, name.as_bytes());
        put32(&mut self.buffer, definition.as_bytes());
        self.entry_done()
    }

    /// The pages of the table announced last, instead of its rows.
    ///
    /// # Errors
    /// I/O errors.
    pub fn table_pages(&mut self, pages: &TablePages) -> io::Result<()> {
        let mut payload = Vec::new();
        payload.extend_from_slice(&pages.file.to_le_bytes());
        payload.extend_from_slice(&u16::try_from(pages.indexes.len()).expect("a table has fewer than 64 Ki indexes").to_le_bytes());
        for index in &pages.indexes {
            payload.extend_from_slice(&(index.leaves.len() as u64).to_le_bytes());
            for leaf in &index.leaves {
                put32(&mut payload, &leaf.low);
                payload.extend_from_slice(&leaf.block.unit.to_le_bytes());
                payload.extend_from_slice(&leaf.block.units.to_le_bytes());
                payload.extend_from_slice(&leaf.entries.to_le_bytes());
                match leaf.delta {
                    None => payload.push(0),
                    Some(delta) => {
                        payload.push(1);
                        payload.extend_from_slice(&delta.block.unit.to_le_bytes());
                        payload.extend_from_slice(&delta.block.units.to_le_bytes());
                        payload.extend_from_slice(&delta.at.to_le_bytes());
                        payload.extend_from_slice(&delta.len.to_le_bytes());
                    }
                }
            }
        }
        self.buffer.push(ENTRY_TABLE_PAGES);
        put32(&mut self.buffer, &payload);
        self.entry_done()
    }

    /// [`CheckpointWriter::log_row`] of a row given as values.
    #[cfg(test)]
    fn row(&mut self, key: &[u8], row: &Row) -> io::Result<()> {
        self.log_row(key, &crate::format::log_row(row))
    }

    /// Adds the row at `key` of the table announced last: `row` is a log row
    /// (`crate::format::log_row`, the dynamic image a table's rows are, or convert to).
    ///
    /// # Errors
    /// I/O errors.
    pub fn log_row(&mut self, key: &[u8], row: &[u8]) -> io::Result<()> {
        debug_assert!(decode_log_row(row).is_some(), "a log row");
        self.buffer.push(ENTRY_ROW);
        put32(&mut self.buffer, key);
        put32(&mut self.buffer, row);
        self.entry_done()
    }

    fn entry_done(&mut self) -> io::Result<()> {
        self.entries += 1;
        if self.buffer.len() >= WRITE_CHUNK_BYTES { self.flush() } else { Ok(()) }
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.write_at(&self.buffer, self.written)?;
        self.crc = crc32c::crc32c_append(self.crc, &self.buffer);
        self.written += self.buffer.len() as u64;
        self.buffer.clear();
        Ok(())
    }

    /// Ends the file, makes it durable and publishes it under its final name. Returns the
    /// path and the size in bytes.
    ///
    /// # Errors
    /// I/O errors: the checkpoint does not exist then, and the log still covers everything.
    pub fn finish(mut self) -> io::Result<(PathBuf, u64)> {
        self.buffer.push(ENTRY_END);
        let entries = self.entries;
        self.buffer.extend_from_slice(&entries.to_le_bytes());
        self.flush()?;
        let crc = self.crc;
        self.file.write_at(&crc.to_le_bytes(), self.written)?;
        self.file.sync_data()?;
        self.fs.rename(&self.tmp_path, &self.final_path)?;
        self.finished = true;
        self.fs.sync_dir(&quill_io::parent_dir(&self.final_path))?;
        Ok((self.final_path.clone(), self.written + TRAILER_BYTES as u64))
    }
}

fn put16(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&u16::try_from(bytes.len()).expect("a name fits in 64 KiB").to_le_bytes());
    out.extend_from_slice(bytes);
}

fn put32(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&u32::try_from(bytes.len()).expect("fits in 4 GiB").to_le_bytes());
    out.extend_from_slice(bytes);
}

/// The first version whose checkpoints never run ahead of the durable log (published only
/// once the log is durable up to their position).
pub const VERSION_BEHIND_DURABLE_LOG: u32 = 6;

/// Why a checkpoint file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error("checkpoint I/O: {0}")]
    Io(#[from] io::Error),
    #[error("checkpoint {path} is damaged: {what}")]
    Damaged { path: String, what: &'static str },
}

/// Where a checkpoint stands in the log: the position `lsn` it is a snapshot of, the sequence
/// number of the record there, and `read_from` (at most `lsn`), where recovery must start
/// reading to find the parts of transactions that were streaming into the log at `lsn`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckpointPosition {
    pub lsn: u64,
    pub next_seq: u64,
    pub read_from: u64,
}

/// Reads and verifies the checkpoint at `path`, then calls `apply` on each entry in order.
/// Returns its position.
///
/// The file is read twice, each time in chunks of [`READ_CHUNK_BYTES`]: once to check the
/// length, magic, version and checksum, then again to hand out the entries. So a damaged
/// file hands out nothing, and memory holds one chunk (or one entry, if larger), never the
/// file: a checkpoint of tens of millions of rows is several gigabytes.
///
/// # Errors
/// I/O errors, a damaged file, or an error of `apply`.
pub fn read_checkpoint<E: From<CheckpointError>>(
    fs: &dyn Fs,
    path: &Path,
    apply: impl FnMut(CheckpointEntry) -> Result<(), E>,
) -> Result<CheckpointPosition, E> {
    read_checkpoint_versioned(fs, path, apply).map(|(position, _)| position)
}

/// [`read_checkpoint`], also returning the file's format version (what it found in the
/// header it verified).
///
/// # Errors
/// As [`read_checkpoint`].
pub fn read_checkpoint_versioned<E: From<CheckpointError>>(
    fs: &dyn Fs,
    path: &Path,
    mut apply: impl FnMut(CheckpointEntry) -> Result<(), E>,
) -> Result<(CheckpointPosition, u32), E> {
    let damaged = |what| CheckpointError::Damaged { path: path.display().to_string(), what };
    let file = fs.open(path, false).map_err(CheckpointError::from)?;
    let (position, version, body_end) = verify(file.as_ref(), damaged)?;
    let header = if version == 1 { HEADER_BYTES_V1 } else { HEADER_BYTES } as u64;
    // Rows are log rows from version 3 on, and in the first row encoding before.
    let decode: fn(&[u8]) -> Option<Row> = if version >= 3 { decode_log_row } else { decode_row };
    let mut body = ChunkedBody { file: file.as_ref(), next: header, end: body_end, buf: Vec::new(), at: 0 };
    let mut entries = 0_u64;
    loop {
        let Some(len) = body.entry_len().map_err(CheckpointError::from)? else { return Err(damaged("no END entry").into()) };
        let bytes = &body.buf[body.at..body.at + len];
        body.at += len;
        let (&kind, mut rest) = bytes.split_first().expect("an entry has its kind byte");
        let entry = match kind {
            ENTRY_DATABASE => CheckpointEntry::Database(take_str16(&mut rest).ok_or_else(|| damaged("bad database entry"))?),
            ENTRY_DATABASE_COLLATION if version >= 7 => {
                let parsed = (|| Some(CheckpointEntry::DatabaseCollation { name: take_str16(&mut rest)?, collation: take_str16(&mut rest)? }))();
                parsed.ok_or_else(|| damaged("bad database collation entry"))?
            }
            ENTRY_TABLE => {
                let parsed = (|| {
                    let db = take_str16(&mut rest)?;
                    let name = take_str16(&mut rest)?;
                    let definition = String::from_utf8(take_len32(&mut rest)?.to_vec()).ok()?;
                    let auto_increment = u64::from_le_bytes(take(&mut rest, 8)?.try_into().ok()?);
                    Some(CheckpointEntry::Table { db, name, definition, auto_increment })
                })();
                parsed.ok_or_else(|| damaged("bad table entry"))?
            }
            ENTRY_VIEW if version >= 5 => {
                let parsed = (|| {
                    let db = take_str16(&mut rest)?;
                    let name = take_str16(&mut rest)?;
                    let definition = String::from_utf8(take_len32(&mut rest)?.to_vec()).ok()?;
                    Some(CheckpointEntry::View { db, name, definition })
                })();
                parsed.ok_or_else(|| damaged("bad view entry"))?
            }
            ENTRY_PROGRAM if version >= 10 => {
                let parsed = (|| {
                    let db = take_str16(&mut rest)?;
                    let name = take_str16(&mut rest)?;
                    let definition = String::from_utf8(take_len32(&mut rest)?.to_vec()).ok()?;
                    Some(CheckpointEntry::Program { db, name, definition })
                })();
                parsed.ok_or_else(|| damaged("bad program entry"))?
            }
            ENTRY_ROW => {
                let parsed = (|| Some(CheckpointEntry::Row { key: take_len32(&mut rest)?.to_vec(), row: decode(take_len32(&mut rest)?)? }))();
                parsed.ok_or_else(|| damaged("bad row entry"))?
            }
            ENTRY_DEFINITIONS_FROM => {
                let lsn = take(&mut rest, 8).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")));
                CheckpointEntry::DefinitionsFrom(lsn.ok_or_else(|| damaged("bad definitions entry"))?)
            }
            ENTRY_STREAM_COMMIT if version >= 6 => {
                let mut lsn = || take(&mut rest, 8).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")));
                match (lsn(), lsn()) {
                    (Some(commit), Some(first)) if first < commit => CheckpointEntry::StreamCommit { commit, first },
                    _ => return Err(damaged("bad stream commit entry").into()),
                }
            }
            ENTRY_TABLE_PAGES if version >= 8 => {
                let payload = take_len32(&mut rest).ok_or_else(|| damaged("bad table pages entry"))?;
                CheckpointEntry::TablePages(parse_table_pages(payload, version >= 9).ok_or_else(|| damaged("bad table pages entry"))?)
            }
            ENTRY_END => {
                let count = take(&mut rest, 8).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")));
                if count != Some(entries) || !body.is_at_end() {
                    return Err(damaged("END does not match the entries").into());
                }
                return Ok((position, version));
            }
            _ => return Err(damaged("unknown entry kind").into()),
        };
        entries += 1;
        apply(entry)?;
    }
}

/// A TABLE_PAGES entry's payload (`with_deltas`: of version 9 on, each leaf with its delta
/// record, if any); `None` when it is not one. Each index's leaves must start at the empty
/// key and ascend.
fn parse_table_pages(mut rest: &[u8], with_deltas: bool) -> Option<TablePages> {
    let u64_of = |rest: &mut &[u8]| take(rest, 8).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")));
    let file = u64_of(&mut rest)?;
    let count = u16::from_le_bytes(take(&mut rest, 2)?.try_into().ok()?);
    let mut indexes = Vec::with_capacity(usize::from(count));
    for _ in 0..count {
        let leaves_total = u64_of(&mut rest)?;
        // Each leaf takes at least 24 bytes: a count past what is left is damage.
        if leaves_total == 0 || leaves_total > rest.len() as u64 / 24 {
            return None;
        }
        let mut leaves: Vec<DirectoryLeaf> = Vec::with_capacity(usize::try_from(leaves_total).ok()?);
        for _ in 0..leaves_total {
            let low: Box<[u8]> = take_len32(&mut rest)?.into();
            let unit = u64_of(&mut rest)?;
            let units = u32::from_le_bytes(take(&mut rest, 4)?.try_into().ok()?);
            let entries = u64_of(&mut rest)?;
            let ascends = leaves.last().map_or(low.is_empty(), |before| before.low < low);
            if !ascends || units == 0 {
                return None;
            }
            let u32_of = |rest: &mut &[u8]| take(rest, 4).map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")));
            let delta = match if with_deltas { take(&mut rest, 1)?[0] } else { 0 } {
                0 => None,
                1 => {
                    let block = BlockAddr { unit: u64_of(&mut rest)?, units: u32_of(&mut rest)? };
                    let (at, len) = (u32_of(&mut rest)?, u32_of(&mut rest)?);
                    if block.units == 0 || u64::from(at) + u64::from(len) > block.bytes() as u64 {
                        return None;
                    }
                    Some(DeltaRef { block, at, len })
                }
                _ => return None,
            };
            leaves.push(DirectoryLeaf { low, block: BlockAddr { unit, units }, delta, entries });
        }
        indexes.push(IndexPages { leaves });
    }
    rest.is_empty().then_some(TablePages { file, indexes })
}

/// Reads of a checkpoint go through buffers of this size.
pub const READ_CHUNK_BYTES: usize = 1 << 20;

/// The first pass of [`read_checkpoint`]: checks the file's length, checksum, magic and
/// version, and returns its position, its version and where its entries end.
fn verify(file: &dyn File, damaged: impl Fn(&'static str) -> CheckpointError) -> Result<(CheckpointPosition, u32, u64), CheckpointError> {
    let len = file.len()?;
    if len < (HEADER_BYTES_V1 + 9 + TRAILER_BYTES) as u64 {
        return Err(damaged("too short"));
    }
    let body_end = len - TRAILER_BYTES as u64;
    let mut chunk = vec![0_u8; READ_CHUNK_BYTES];
    let (mut crc, mut at) = (0_u32, 0_u64);
    while at < body_end {
        let n = usize::try_from((body_end - at).min(READ_CHUNK_BYTES as u64)).expect("a chunk fits usize");
        read_exact_at(file, &mut chunk[..n], at)?;
        crc = crc32c::crc32c_append(crc, &chunk[..n]);
        at += n as u64;
    }
    let mut trailer = [0_u8; TRAILER_BYTES];
    read_exact_at(file, &mut trailer, body_end)?;
    if crc != u32::from_le_bytes(trailer) {
        return Err(damaged("bad checksum"));
    }
    let mut head = [0_u8; HEADER_BYTES];
    let head_len = HEADER_BYTES.min(usize::try_from(body_end).unwrap_or(HEADER_BYTES));
    read_exact_at(file, &mut head[..head_len], 0)?;
    if &head[..8] != MAGIC {
        return Err(damaged("not a checkpoint"));
    }
    let version = u32::from_le_bytes(head[VERSION_OFFSET..VERSION_OFFSET + 4].try_into().expect("4 bytes"));
    match version {
        1 => {}
        2..=VERSION if body_end >= (HEADER_BYTES + 9) as u64 => {}
        _ => return Err(damaged("not a checkpoint of a version this build reads (1 to 8)")),
    }
    let u64_at = |o: usize| u64::from_le_bytes(head[o..o + 8].try_into().expect("8 bytes"));
    let (lsn, next_seq) = (u64_at(LSN_OFFSET), u64_at(NEXT_SEQ_OFFSET));
    let read_from = if version == 1 { lsn } else { u64_at(READ_FROM_OFFSET) };
    if read_from > lsn {
        return Err(damaged("reads the log from after its own position"));
    }
    Ok((CheckpointPosition { lsn, next_seq, read_from }, version, body_end))
}

fn read_exact_at(file: &dyn File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    let mut done = 0;
    while done < buf.len() {
        let n = file.read_at(&mut buf[done..], offset + done as u64)?;
        if n == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "checkpoint shorter than its length"));
        }
        done += n;
    }
    Ok(())
}

/// The entries of a checkpoint, read a chunk at a time: `buf[at..]` is read but not yet
/// handed out, `next` the file offset after `buf`, `end` where the entries end.
struct ChunkedBody<'f> {
    file: &'f dyn File,
    next: u64,
    end: u64,
    buf: Vec<u8>,
    at: usize,
}

impl ChunkedBody<'_> {
    /// The length of the next entry, read whole into `buf[at..]`; `None` when the entries
    /// end before it does.
    fn entry_len(&mut self) -> io::Result<Option<usize>> {
        loop {
            let buffered = &self.buf[self.at..];
            let needed = match entry_len(buffered) {
                Some(len) if len <= buffered.len() => return Ok(Some(len)),
                Some(len) => len,
                None => buffered.len() + 1,
            };
            if !self.read_more(needed)? {
                return Ok(None);
            }
        }
    }

    /// Reads until `buf[at..]` holds `needed` bytes (at least a chunk more); `false` when
    /// the entries end first.
    fn read_more(&mut self, needed: usize) -> io::Result<bool> {
        self.buf.drain(..self.at);
        self.at = 0;
        let left = self.end - self.next;
        let missing = needed.saturating_sub(self.buf.len());
        if left < missing as u64 {
            return Ok(false);
        }
        let n = usize::try_from(left.min(missing.max(READ_CHUNK_BYTES) as u64)).expect("a chunk fits usize");
        let old = self.buf.len();
        self.buf.resize(old + n, 0);
        read_exact_at(self.file, &mut self.buf[old..], self.next)?;
        self.next += n as u64;
        Ok(true)
    }

    fn is_at_end(&self) -> bool {
        self.at == self.buf.len() && self.next == self.end
    }
}

/// The length of the entry at the front of `bytes`, from its kind and length prefixes;
/// `None` while the prefixes are not all in `bytes`. An unknown kind counts one byte (the
/// reader reports it).
fn entry_len(bytes: &[u8]) -> Option<usize> {
    let mut at = 1;
    let mut field = |width: usize| -> Option<()> {
        let prefix = bytes.get(at..at + width)?;
        let len = prefix.iter().rev().fold(0_usize, |n, &b| (n << 8) | usize::from(b));
        at += width + len;
        Some(())
    };
    match *bytes.first()? {
        ENTRY_DATABASE => field(2)?,
        ENTRY_DATABASE_COLLATION => {
            field(2)?;
            field(2)?;
        }
        ENTRY_TABLE => {
            field(2)?;
            field(2)?;
            field(4)?;
            at += 8;
        }
        ENTRY_ROW => {
            field(4)?;
            field(4)?;
        }
        ENTRY_TABLE_PAGES => field(4)?,
        ENTRY_END | ENTRY_DEFINITIONS_FROM => at += 8,
        ENTRY_STREAM_COMMIT => at += 16,
        ENTRY_VIEW | ENTRY_PROGRAM => {
            field(2)?;
            field(2)?;
            field(4)?;
        }
        _ => {}
    }
    Some(at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Value;
    use quill_io::SimFs;

    fn dir() -> PathBuf {
        PathBuf::from("/data")
    }

    fn write_sample(fs: &SimFs, lsn: u64) -> PathBuf {
        fs.create_dir_all(&dir()).unwrap();
        let mut w = CheckpointWriter::create(Arc::new(fs.clone()), &dir(), CheckpointPosition { lsn, next_seq: 42, read_from: lsn / 2 }).unwrap();
        w.database("app").unwrap();
        w.table("app", "t", "CREATE TABLE `t` (`id` int NOT NULL, PRIMARY KEY (`id`))", 7).unwrap();
        for i in 0..1000 {
            w.row(&[1, i as u8], &vec![Value::Int(i), Value::Str(format!("row {i}"))]).unwrap();
        }
        w.view("app", "v", "CREATE ALGORITHM=UNDEFINED DEFINER=`root`@`localhost` SQL SECURITY DEFINER VIEW `v` AS SELECT 1").unwrap();
        w.program("app", "tr", "CREATE DEFINER=`root`@`localhost` TRIGGER `tr` BEFORE INSERT ON `t` FOR EACH ROW SET NEW.id = NEW.id + 1").unwrap();
        w.finish().unwrap().0
    }

    fn read(fs: &SimFs, path: &Path) -> Result<(CheckpointPosition, Vec<CheckpointEntry>), CheckpointError> {
        let mut entries = Vec::new();
        let position = read_checkpoint::<CheckpointError>(fs, path, |e| {
            entries.push(e);
            Ok(())
        })?;
        Ok((position, entries))
    }

    #[test]
    fn a_checkpoint_round_trips() {
        let fs = SimFs::new();
        let path = write_sample(&fs, 4096);
        assert_eq!(find_checkpoints(&fs, &dir()).unwrap(), vec![(4096, path.clone())]);
        let (position, entries) = read(&fs, &path).unwrap();
        assert_eq!((position, entries.len()), (CheckpointPosition { lsn: 4096, next_seq: 42, read_from: 2048 }, 1004));
        assert_eq!(
            entries[1],
            CheckpointEntry::Table {
                db: "app".into(),
                name: "t".into(),
                definition: "CREATE TABLE `t` (`id` int NOT NULL, PRIMARY KEY (`id`))".into(),
                auto_increment: 7
            }
        );
        assert_eq!(entries[1001], CheckpointEntry::Row { key: vec![1, 231], row: vec![Value::Int(999), Value::Str("row 999".into())] });
        assert_eq!(
            entries[1002],
            CheckpointEntry::View {
                db: "app".into(),
                name: "v".into(),
                definition: "CREATE ALGORITHM=UNDEFINED DEFINER=`root`@`localhost` SQL SECURITY DEFINER VIEW `v` AS SELECT 1".into()
            }
        );
        assert!(matches!(&entries[1003], CheckpointEntry::Program { name, .. } if name == "tr"));
    }

    fn leaf(low: &[u8], unit: u64, entries: u64) -> DirectoryLeaf {
        DirectoryLeaf { low: low.into(), block: BlockAddr { unit, units: 1 }, delta: None, entries }
    }

    #[test]
    fn a_paged_tables_directory_round_trips_and_a_disordered_one_is_damage() {
        let fs = SimFs::new();
        fs.create_dir_all(&dir()).unwrap();
        let pages = TablePages {
            file: 12,
            indexes: vec![
                IndexPages {
                    leaves: (0..3000u64)
                        .map(|i| {
                            let mut l = leaf(&i.to_be_bytes()[..if i == 0 { 0 } else { 8 }], 1 + i, 64);
                            // Some leaves with a delta record, several in one delta block.
                            if i % 7 == 3 {
                                l.delta =
                                    Some(DeltaRef { block: BlockAddr { unit: 9000 + i / 70, units: 2 }, at: u32::try_from(i % 70).unwrap() * 60, len: 60 });
                            }
                            l
                        })
                        .collect(),
                },
                IndexPages { leaves: vec![leaf(&[], 5000, 0)] },
            ],
        };
        let mut w = CheckpointWriter::create(Arc::new(fs.clone()), &dir(), CheckpointPosition { lsn: 8, next_seq: 1, read_from: 8 }).unwrap();
        w.table("app", "t", "CREATE TABLE `t` (`id` int, `k` int, KEY (`k`))", 1).unwrap();
        w.table_pages(&pages).unwrap();
        let path = w.finish().unwrap().0;
        let (_, entries) = read(&fs, &path).unwrap();
        assert_eq!(entries[1], CheckpointEntry::TablePages(pages.clone()));
        assert_eq!(pages.indexes[0].entries(), 3000 * 64);
        // Leaves out of order, or a first leaf not at the empty key, are damage.
        for bad in [vec![leaf(&[], 1, 1), leaf(&[5], 2, 1), leaf(&[4], 3, 1)], vec![leaf(&[1], 1, 1)]] {
            let mut w = CheckpointWriter::create(Arc::new(fs.clone()), &dir(), CheckpointPosition { lsn: 16, next_seq: 1, read_from: 16 }).unwrap();
            w.table("app", "t", "CREATE TABLE `t` (`id` int)", 1).unwrap();
            w.table_pages(&TablePages { file: 1, indexes: vec![IndexPages { leaves: bad }] }).unwrap();
            let path = w.finish().unwrap().0;
            assert!(matches!(read(&fs, &path), Err(CheckpointError::Damaged { .. })));
        }
    }

    /// The reader holds a chunk at a time: entries that straddle chunks, and one larger than
    /// a chunk, come back whole.
    #[test]
    fn a_checkpoint_larger_than_a_chunk_is_read_in_chunks() {
        let fs = SimFs::new();
        fs.create_dir_all(&dir()).unwrap();
        let mut w = CheckpointWriter::create(Arc::new(fs.clone()), &dir(), CheckpointPosition { lsn: 8, next_seq: 1, read_from: 8 }).unwrap();
        w.table("app", "t", "CREATE TABLE `t` (`id` int, `b` longblob)", 1).unwrap();
        let rows: Vec<Row> = (0..40_000_i64).map(|i| vec![Value::Int(i), Value::Bytes(vec![b'x'; usize::try_from(i % 97).unwrap()])]).collect();
        let big = vec![Value::Int(-1), Value::Bytes(vec![7; READ_CHUNK_BYTES * 2 + 3])];
        for (i, row) in rows.iter().enumerate() {
            w.row(&(i as u64).to_be_bytes(), row).unwrap();
            if i == 20_000 {
                w.row(b"big", &big).unwrap();
            }
        }
        let (path, bytes) = w.finish().unwrap();
        assert!(bytes > 4 * READ_CHUNK_BYTES as u64);
        let (_, entries) = read(&fs, &path).unwrap();
        let read_rows: Vec<&Row> = entries.iter().filter_map(|e| if let CheckpointEntry::Row { row, .. } = e { Some(row) } else { None }).collect();
        assert_eq!(read_rows.len(), rows.len() + 1);
        assert_eq!(read_rows[20_001], &big);
        assert_eq!(read_rows[40_000], &rows[39_999]);
    }

    /// A checkpoint as versions 1 and 2 wrote it: rows in the first row encoding, and for
    /// version 1 no `read_from`.
    fn old_checkpoint(version: u32, lsn: u64, rows: &[Row]) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&version.to_le_bytes());
        out.extend_from_slice(&[0; 4]);
        out.extend_from_slice(&lsn.to_le_bytes());
        out.extend_from_slice(&42_u64.to_le_bytes());
        if version == 2 {
            out.extend_from_slice(&(lsn / 2).to_le_bytes());
        }
        out.push(ENTRY_DATABASE);
        put16(&mut out, b"app");
        for (i, row) in rows.iter().enumerate() {
            out.push(ENTRY_ROW);
            put32(&mut out, &[1, i as u8]);
            put32(&mut out, &crate::row::row_bytes(row));
        }
        out.push(ENTRY_END);
        out.extend_from_slice(&(1 + rows.len() as u64).to_le_bytes());
        let crc = crc32c::crc32c(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    #[test]
    fn version_1_and_2_checkpoints_are_read_with_their_row_encoding() {
        let fs = SimFs::new();
        fs.create_dir_all(&dir()).unwrap();
        let rows: Vec<Row> = (0..3).map(|i| vec![Value::Int(i), Value::Decimal("12.50".parse().unwrap()), Value::Str(format!("row {i}"))]).collect();
        for (version, read_from) in [(1, 4096), (2, 2048)] {
            let path = dir().join(checkpoint_name(4096));
            let file = fs.open(&path, true).unwrap();
            file.set_len(0).unwrap();
            file.write_at(&old_checkpoint(version, 4096, &rows), 0).unwrap();
            let (position, entries) = read(&fs, &path).unwrap();
            assert_eq!(position, CheckpointPosition { lsn: 4096, next_seq: 42, read_from }, "version {version}");
            let read_rows: Vec<&Row> = entries.iter().filter_map(|e| if let CheckpointEntry::Row { row, .. } = e { Some(row) } else { None }).collect();
            assert_eq!(read_rows, rows.iter().collect::<Vec<_>>(), "version {version}");
        }
    }

    #[test]
    fn any_damage_is_refused_before_an_entry_is_applied() {
        let fs = SimFs::new();
        let path = write_sample(&fs, 1);
        let good = fs.contents(&path).unwrap();
        for at in [0, 9, 20, 40, good.len() / 2, good.len() - 5, good.len() - 1] {
            let mut bad = good.clone();
            bad[at] ^= 1;
            fs.open(&path, false).unwrap().write_at(&bad, 0).unwrap();
            let mut applied = 0;
            let result = read_checkpoint::<CheckpointError>(&fs, &path, |_| {
                applied += 1;
                Ok(())
            });
            assert!(result.is_err() && applied == 0, "flip at {at}");
        }
        let file = fs.open(&path, false).unwrap();
        file.set_len(good.len() as u64 - 3).unwrap();
        assert!(read(&fs, &path).is_err(), "a truncated checkpoint is refused");
    }

    #[test]
    fn a_checkpoint_exists_only_once_finished_and_survives_any_crash_after() {
        let fs = SimFs::new();
        fs.create_dir_all(&dir()).unwrap();
        let mut w = CheckpointWriter::create(Arc::new(fs.clone()), &dir(), CheckpointPosition { lsn: 9, next_seq: 1, read_from: 9 }).unwrap();
        w.database("app").unwrap();
        for seed in 0..20 {
            assert!(find_checkpoints(&fs.crash(seed).0, &dir()).unwrap().is_empty(), "unfinished: no checkpoint");
        }
        w.finish().unwrap();
        for seed in 0..20 {
            let (after, _) = fs.crash(seed);
            let found = find_checkpoints(&after, &dir()).unwrap();
            assert_eq!(found.len(), 1, "seed {seed}");
            assert!(read(&after, &found[0].1).is_ok(), "seed {seed}");
        }
    }

    #[test]
    fn old_checkpoints_and_leftover_tmp_files_are_removed() {
        let fs = SimFs::new();
        write_sample(&fs, 10);
        write_sample(&fs, 20);
        fs.open(&dir().join(format!("{}{TMP_SUFFIX}", checkpoint_name(30))), true).unwrap();
        assert_eq!(remove_old_checkpoints(&fs, &dir(), 20).unwrap(), 2);
        assert_eq!(find_checkpoints(&fs, &dir()).unwrap().into_iter().map(|(l, _)| l).collect::<Vec<_>>(), vec![20]);
    }
}
