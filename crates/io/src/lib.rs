//! The file-system seam: every file the commit log and the checkpointer touch goes through
//! [`Fs`] and [`File`], so tests can put a simulated disk ([`SimFs`]) underneath and crash it.
//!
//! The contract is POSIX's, reduced to what Quill needs, with the durability rules spelled out
//! because the simulated disk enforces them:
//! - bytes written with [`File::write_at`] (and a size set with [`File::set_len`]) are durable
//!   only after a later [`File::sync_data`] on that file returns `Ok`;
//! - a created, renamed or removed name is durable only after [`Fs::sync_dir`] on its directory;
//! - until then, a crash may drop, keep, or tear each unsynced write independently (so a later
//!   write may survive an earlier one), and may keep any prefix of the unsynced name changes.
//!
//! An error from `sync_data` means the durable state of the file is unknown: callers treat it
//! as fatal (fail-stop), never retry and carry on.
//!
//! Where it sits: the lowest layer. `log` (segments) and `storage` (checkpoints) use it; it uses
//! nothing of Quill's.

pub mod cursor;
mod real;
mod sim;

pub use real::RealFs;
pub use sim::{CrashReport, SimFs};

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// An open file. Positional reads and writes only: there is no shared cursor.
pub trait File: Send + Sync {
    /// Reads up to `buf.len()` bytes at `offset`; fewer only at the end of the file.
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize>;
    /// Writes all of `data` at `offset`, extending the file if needed.
    fn write_at(&self, data: &[u8], offset: u64) -> io::Result<()>;
    /// Makes every earlier write and size change of this file durable (`fdatasync`).
    fn sync_data(&self) -> io::Result<()>;
    fn len(&self) -> io::Result<u64>;
    fn set_len(&self, len: u64) -> io::Result<()>;

    /// Fills all of `buf` from `offset` only if the OS can answer from memory now, and says
    /// whether it did: `false` when any of it would wait for the disk, when it reaches past
    /// the end, or when the OS cannot tell (the caller then reads with [`File::read_at`], as
    /// it would have). Lets a caller that must not block skip its precautions for a read the
    /// page cache holds.
    fn read_cached(&self, _buf: &mut [u8], _offset: u64) -> bool {
        false
    }

    /// A hint that `len` bytes at `offset` will be read soon: the OS may start reading them
    /// now, in the background (`posix_fadvise(WILLNEED)`). Never fails: a file that cannot
    /// take the hint is read when asked, as before.
    fn will_need(&self, _offset: u64, _len: u64) {}

    /// Makes the `len` bytes at `offset`, which lie within the file, read as zeros; durable
    /// as a write is (after [`File::sync_data`]). The default writes the zeros; a real file
    /// asks the file system to mark the range zero instead where it can
    /// (`fallocate(ZERO_RANGE)`), which costs no data I/O however long the range.
    fn zero_range(&self, offset: u64, len: u64) -> io::Result<()> {
        write_zeros(self, offset, len)
    }

    fn is_empty(&self) -> io::Result<bool> {
        Ok(self.len()? == 0)
    }

    /// Reads the whole file.
    fn read_all(&self) -> io::Result<Vec<u8>> {
        let len = usize::try_from(self.len()?).map_err(|_| io::Error::other("file too large to read at once"))?;
        let mut buf = vec![0; len];
        let mut done = 0;
        while done < len {
            let n = self.read_at(&mut buf[done..], done as u64)?;
            if n == 0 {
                buf.truncate(done);
                break;
            }
            done += n;
        }
        Ok(buf)
    }
}

/// The bytes written at a time by [`write_zeros`].
pub const ZERO_CHUNK_BYTES: usize = 1 << 20;

/// Writes `len` zeros at `offset`, [`ZERO_CHUNK_BYTES`] at a time.
///
/// # Errors
/// I/O errors of the writes.
pub fn write_zeros(file: &(impl File + ?Sized), offset: u64, len: u64) -> io::Result<()> {
    let zeros = vec![0_u8; usize::try_from(len).unwrap_or(usize::MAX).min(ZERO_CHUNK_BYTES)];
    let mut done = 0;
    while done < len {
        let n = usize::try_from(len - done).unwrap_or(usize::MAX).min(zeros.len());
        file.write_at(&zeros[..n], offset + done)?;
        done += n as u64;
    }
    Ok(())
}

/// A file system: the directory operations, and opening files.
pub trait Fs: Send + Sync {
    /// Opens `path` for reading and writing, creating it (empty) when `create` and missing.
    fn open(&self, path: &Path, create: bool) -> io::Result<Arc<dyn File>>;
    fn create_dir_all(&self, path: &Path) -> io::Result<()>;
    /// The names (not paths) of the files in `dir`, sorted.
    fn list(&self, dir: &Path) -> io::Result<Vec<String>>;
    fn remove(&self, path: &Path) -> io::Result<()>;
    /// Atomically replaces `to` with `from`.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Makes the creations, renames and removals of names in `dir` durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    fn exists(&self, path: &Path) -> bool;
    /// When `path` was last written: how old a log segment is, for `binlog_expire_logs_seconds`.
    fn modified(&self, path: &Path) -> io::Result<std::time::SystemTime>;
}

/// The directory that holds `path`, for [`Fs::sync_dir`] after creating or renaming it.
#[must_use]
pub fn parent_dir(path: &Path) -> PathBuf {
    path.parent().map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// Makes `bytes` the whole content of the small file `path`, durably and atomically: written
/// to `<path>.tmp`, synced, renamed over `path`, and the directory synced. A crash leaves the
/// old content or the new, never a mix (the version of the log format, the server's UUID).
///
/// # Errors
/// I/O errors; `path` is then as it was, or already replaced.
pub fn replace_file(fs: &dyn Fs, path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let file = fs.open(&tmp, true)?;
    file.set_len(0)?;
    file.write_at(bytes, 0)?;
    file.sync_data()?;
    fs.rename(&tmp, path)?;
    fs.sync_dir(&parent_dir(path))
}
