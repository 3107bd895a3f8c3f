//! The tablespace: where an engine's paged tables keep their page files, and the buffer pool
//! they share.
//!
//! Each paged table has its own page file, `<datadir>/pages/<number>.qpage`
//! (`docs/page-format.md`), numbered in creation order and never reused while the data
//! directory lives. A table's file is made when the table is (CREATE TABLE, TRUNCATE, the copy
//! of an ALTER TABLE) and read when a checkpoint names it at start-up. A file is removed once
//! no table uses it and a durable checkpoint does not name it
//! ([`Tablespace::remove_unused`]): a table dropped after the newest checkpoint keeps its
//! file, which recovery starts from, until the next one.
//!
//! A checkpoint records each paged table as [`TablePages`]: its file and, per index, the
//! directory of its leaves (lowest key and block) and how many entries it held.
//!
//! Where it sits: storage, above [`crate::table`], below the SQL layer's catalog and
//! checkpointer, which hold one per engine.

use std::collections::{HashMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use quill_io::Fs;

use crate::buffer_pool::BufferPool;
use crate::format::RowFormat;
use crate::leaf_map::DirectoryLeaf;
use crate::page::BlockAddr;
use crate::page_file::{DeltaRef, FILE_SUFFIX, PageFile, PageFileError};
use crate::table::{IndexDef, KeyPart, Table};

/// The directory of page files, under the data directory.
pub const PAGES_DIR: &str = "pages";

/// One index of a paged table as a checkpoint names it: each leaf's lowest key, block and
/// entries, in key order, the first at the empty key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexPages {
    pub leaves: Vec<DirectoryLeaf>,
}

impl IndexPages {
    /// Entries the index held (rows, for the primary key).
    #[must_use]
    pub fn entries(&self) -> u64 {
        self.leaves.iter().map(|l| l.entries).sum()
    }
}

/// A paged table as a checkpoint names it: its page file and its indexes, the primary key
/// first, then the secondary indexes in the table's order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TablePages {
    pub file: u64,
    pub indexes: Vec<IndexPages>,
}

impl TablePages {
    /// Every leaf's block named.
    pub fn blocks(&self) -> impl Iterator<Item = BlockAddr> + '_ {
        self.indexes.iter().flat_map(|i| i.leaves.iter().map(|l| l.block))
    }

    /// Every delta record named (several may share a block).
    pub fn deltas(&self) -> impl Iterator<Item = DeltaRef> + '_ {
        self.indexes.iter().flat_map(|i| i.leaves.iter().filter_map(|l| l.delta))
    }

    /// The first units of every block named, leaves' and delta blocks' (what
    /// [`PageFile::release_retired`] keeps).
    #[must_use]
    pub fn units(&self) -> HashSet<u64> {
        self.blocks().chain(self.deltas().map(|d| d.block)).map(|b| b.unit).collect()
    }
}

/// See the module documentation.
pub struct Tablespace {
    fs: Arc<dyn Fs>,
    dir: PathBuf,
    pub pool: Arc<BufferPool>,
    next_file: AtomicU64,
    /// The files tables use now, by number.
    open: Mutex<HashMap<u64, Weak<PageFile>>>,
}

impl std::fmt::Debug for Tablespace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tablespace").field("dir", &self.dir).field("pool", &self.pool).finish_non_exhaustive()
    }
}

/// The number of a page file's name, if it is one.
fn file_number(name: &str) -> Option<u64> {
    name.strip_suffix(FILE_SUFFIX)?.parse().ok()
}

impl Tablespace {
    /// The tablespace of the data directory `datadir`, its pool holding `pool_bytes`.
    ///
    /// # Errors
    /// I/O errors creating or listing the directory.
    pub fn open(fs: Arc<dyn Fs>, datadir: &Path, pool_bytes: u64) -> io::Result<Tablespace> {
        let dir = datadir.join(PAGES_DIR);
        fs.create_dir_all(&dir)?;
        let next = fs.list(&dir)?.iter().filter_map(|name| file_number(name)).max().map_or(1, |n| n + 1);
        Ok(Tablespace { fs, dir, pool: Arc::new(BufferPool::new(pool_bytes)), next_file: AtomicU64::new(next), open: Mutex::new(HashMap::new()) })
    }

    /// The path of page file `number`.
    #[must_use]
    pub fn file_path(&self, number: u64) -> PathBuf {
        self.dir.join(format!("{number:020}{FILE_SUFFIX}"))
    }

    fn register(&self, number: u64, file: &Arc<PageFile>) {
        let mut open = self.open.lock();
        open.retain(|_, f| f.strong_count() > 0);
        open.insert(number, Arc::downgrade(file));
    }

    /// A new, empty paged table in a new page file.
    ///
    /// # Errors
    /// I/O errors creating the file.
    pub fn create_table(&self, primary: Vec<KeyPart>, indexes: Vec<IndexDef>, format: RowFormat) -> io::Result<Table> {
        let number = self.next_file.fetch_add(1, Ordering::Relaxed);
        let file = Arc::new(PageFile::create(self.fs.as_ref(), &self.file_path(number))?);
        self.register(number, &file);
        Ok(Table::paged(primary, indexes, format, number, file, Arc::clone(&self.pool)))
    }

    /// The paged table a checkpoint named as `pages`, every leaf on disk.
    ///
    /// # Errors
    /// The file cannot be opened, or the checkpoint's blocks overlap in it.
    pub fn open_table(&self, primary: Vec<KeyPart>, indexes: Vec<IndexDef>, format: RowFormat, pages: &TablePages) -> Result<Table, PageFileError> {
        let blocks: Vec<BlockAddr> = pages.blocks().collect();
        let deltas: Vec<DeltaRef> = pages.deltas().collect();
        let file = Arc::new(PageFile::open(self.fs.as_ref(), &self.file_path(pages.file), &blocks, &deltas)?);
        self.register(pages.file, &file);
        self.next_file.fetch_max(pages.file + 1, Ordering::Relaxed);
        Ok(Table::from_pages(primary, indexes, format, pages, file, Arc::clone(&self.pool)))
    }

    /// Removes every page file that no table uses and that is not in `keep` (the files the
    /// newest durable checkpoint names). Returns how many.
    ///
    /// REQUIRES: no table is being created meanwhile (a new file is registered as used only
    /// once made); the checkpointer calls this under the DDL gate, which table creation
    /// waits for.
    ///
    /// # Errors
    /// I/O errors listing or removing.
    pub fn remove_unused(&self, keep: &HashSet<u64>) -> io::Result<usize> {
        let in_use: HashSet<u64> = self.open.lock().iter().filter(|(_, f)| f.strong_count() > 0).map(|(&n, _)| n).collect();
        let mut removed = 0;
        for name in self.fs.list(&self.dir)? {
            let Some(number) = file_number(&name) else { continue };
            if !keep.contains(&number) && !in_use.contains(&number) {
                self.fs.remove(&self.dir.join(&name))?;
                removed += 1;
            }
        }
        if removed > 0 {
            self.fs.sync_dir(&self.dir)?;
        }
        Ok(removed)
    }
}
