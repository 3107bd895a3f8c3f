//! The log stream over segment files: which file holds an LSN, writing a range of the stream
//! (possibly across a segment boundary), syncing what was written, reading it back, and
//! creating segments preallocated with zeros.
//!
//! Invariants: segments are contiguous (each starts where the previous ends) and
//! `segment_bytes` long; a segment is fully zero-filled and synced, and its name synced in the
//! directory, before any record is written into it.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use quill_io::{File, Fs};

use crate::format::{Lsn, parse_segment_name, segment_name};

/// Zeros are written in chunks of this size when a segment is created.
const ZERO_CHUNK_BYTES: usize = 1 << 20;

pub struct Segments {
    fs: Arc<dyn Fs>,
    dir: PathBuf,
    segment_bytes: u64,
    files: BTreeMap<Lsn, Arc<dyn File>>,
    /// Segments written since their last sync.
    unsynced: Vec<Lsn>,
}

impl Segments {
    /// Opens the segments in `dir` (created if missing).
    ///
    /// # Errors
    /// I/O errors, and segments that are not contiguous (a missing middle segment).
    pub fn open(fs: Arc<dyn Fs>, dir: &Path, segment_bytes: u64) -> io::Result<Segments> {
        assert!(segment_bytes >= 64, "segments must hold at least a header and a little body");
        fs.create_dir_all(dir)?;
        let mut files = BTreeMap::new();
        for name in fs.list(dir)? {
            if let Some(start) = parse_segment_name(&name) {
                files.insert(start, fs.open(&dir.join(&name), false)?);
            }
        }
        // A crash while the newest segment was being created can leave it short. Nothing was
        // ever written into it (records follow its zero-fill and sync), so it goes.
        if let Some((&last, file)) = files.iter().next_back()
            && file.len()? < segment_bytes
            && file.read_all()?.iter().all(|&b| b == 0)
        {
            files.remove(&last);
            fs.remove(&dir.join(segment_name(last)))?;
            fs.sync_dir(dir)?;
        }
        // A different quill_log_segment_bytes would misread the stream: refuse it.
        for (start, file) in &files {
            if start % segment_bytes != 0 || file.len()? != segment_bytes {
                return Err(io::Error::other(format!(
                    "log segment {} ({} bytes) does not match quill_log_segment_bytes={segment_bytes}; start with the size it was written with",
                    segment_name(*start),
                    file.len()?
                )));
            }
        }
        let starts: Vec<Lsn> = files.keys().copied().collect();
        if let Some(gap) = starts.windows(2).find(|w| w[1] != w[0] + segment_bytes) {
            return Err(io::Error::other(format!("log segment missing between {} and {}", segment_name(gap[0]), segment_name(gap[1]))));
        }
        Ok(Segments { fs, dir: dir.to_path_buf(), segment_bytes, files, unsynced: Vec::new() })
    }

    /// The LSN of the first byte of the oldest segment, if any.
    #[must_use]
    pub fn first_lsn(&self) -> Option<Lsn> {
        self.files.keys().next().copied()
    }

    /// One past the last byte the segments hold.
    #[must_use]
    pub fn end_lsn(&self) -> Option<Lsn> {
        self.files.keys().next_back().map(|&s| s + self.segment_bytes)
    }

    fn segment_start(&self, lsn: Lsn) -> Lsn {
        lsn - lsn % self.segment_bytes
    }

    /// Reads `buf.len()` bytes of the stream at `lsn`; `false` when the segments end first.
    ///
    /// # Errors
    /// I/O errors.
    pub fn read_at(&self, mut lsn: Lsn, mut buf: &mut [u8]) -> io::Result<bool> {
        while !buf.is_empty() {
            let start = self.segment_start(lsn);
            let Some(file) = self.files.get(&start) else { return Ok(false) };
            let offset = lsn - start;
            let n = usize::try_from(self.segment_bytes - offset).unwrap_or(usize::MAX).min(buf.len());
            let (now, rest) = buf.split_at_mut(n);
            if file.read_at(now, offset)? < n {
                return Ok(false);
            }
            buf = rest;
            lsn += n as u64;
        }
        Ok(true)
    }

    /// Writes `data` into the stream at `lsn`, creating segments as needed. Not durable until
    /// [`Segments::sync`].
    ///
    /// # Errors
    /// I/O errors.
    pub fn write_at(&mut self, mut lsn: Lsn, mut data: &[u8]) -> io::Result<()> {
        while !data.is_empty() {
            let start = self.segment_start(lsn);
            let file = self.segment(start)?;
            let offset = lsn - start;
            let n = usize::try_from(self.segment_bytes - offset).unwrap_or(usize::MAX).min(data.len());
            file.write_at(&data[..n], offset)?;
            if !self.unsynced.contains(&start) {
                self.unsynced.push(start);
            }
            data = &data[n..];
            lsn += n as u64;
        }
        Ok(())
    }

    /// Makes every write since the last sync durable (`fdatasync` of each segment written).
    ///
    /// # Errors
    /// I/O errors: the caller must stop (the durable state is unknown).
    pub fn sync(&mut self) -> io::Result<u64> {
        let mut syncs = 0;
        for start in std::mem::take(&mut self.unsynced) {
            if let Some(file) = self.files.get(&start) {
                file.sync_data()?;
                syncs += 1;
            }
        }
        Ok(syncs)
    }

    /// The segment starting at `start`, created (zero-filled and synced) if missing.
    fn segment(&mut self, start: Lsn) -> io::Result<Arc<dyn File>> {
        if let Some(file) = self.files.get(&start) {
            return Ok(Arc::clone(file));
        }
        if let Some(end) = self.end_lsn() {
            assert_eq!(start, end, "segments are created in order");
        }
        let path = self.dir.join(segment_name(start));
        let file = self.fs.open(&path, true)?;
        let zeros = vec![0_u8; ZERO_CHUNK_BYTES];
        let mut offset = 0;
        while offset < self.segment_bytes {
            let n = usize::try_from(self.segment_bytes - offset).unwrap_or(usize::MAX).min(zeros.len());
            file.write_at(&zeros[..n], offset)?;
            offset += n as u64;
        }
        file.sync_data()?;
        self.fs.sync_dir(&self.dir)?;
        self.files.insert(start, Arc::clone(&file));
        Ok(file)
    }

    /// Makes sure the segment holding `lsn` exists, so the write that reaches it does not
    /// pay for creating it.
    ///
    /// # Errors
    /// I/O errors.
    pub fn prepare(&mut self, lsn: Lsn) -> io::Result<()> {
        let start = self.segment_start(lsn);
        if self.end_lsn().is_none_or(|end| start == end) {
            self.segment(start)?;
        }
        Ok(())
    }

    /// Copies the stream from `lsn` to the end of the last segment, without its trailing
    /// zeros, to `damaged-<lsn>.bin` in the log directory (synced), and returns its path and
    /// size; `None` when there is nothing but zeros. Recovery calls it before cutting a
    /// damaged log, so the cut never destroys bytes an operator may want to inspect.
    ///
    /// # Errors
    /// I/O errors.
    pub fn preserve_from(&self, lsn: Lsn) -> io::Result<Option<(PathBuf, u64)>> {
        let Some(end) = self.end_lsn() else { return Ok(None) };
        let path = self.dir.join(format!("damaged-{lsn:020}.bin"));
        let mut out: Option<Arc<dyn File>> = None;
        let mut chunk = vec![0_u8; ZERO_CHUNK_BYTES];
        let (mut at, mut kept) = (lsn, 0_u64);
        while at < end {
            let n = usize::try_from(end - at).unwrap_or(usize::MAX).min(chunk.len());
            if !self.read_at(at, &mut chunk[..n])? {
                break;
            }
            if let Some(last) = chunk[..n].iter().rposition(|&b| b != 0) {
                let file = match &out {
                    Some(file) => Arc::clone(file),
                    None => Arc::clone(out.insert(self.fs.open(&path, true)?)),
                };
                file.write_at(&chunk[..n], at - lsn)?;
                kept = at - lsn + last as u64 + 1;
            }
            at += n as u64;
        }
        let Some(file) = out else { return Ok(None) };
        file.set_len(kept)?;
        file.sync_data()?;
        self.fs.sync_dir(&self.dir)?;
        Ok(Some((path, kept)))
    }

    /// Cuts the stream at `lsn`: zeros from `lsn` to the end of its segment, removes every
    /// later segment, and syncs both. Used once, after recovery found the end of the log.
    ///
    /// # Errors
    /// I/O errors.
    pub fn cut_at(&mut self, lsn: Lsn) -> io::Result<()> {
        let start = self.segment_start(lsn);
        if let Some(file) = self.files.get(&start) {
            let zeros = vec![0_u8; usize::try_from(self.segment_bytes - (lsn - start)).expect("segment fits in memory")];
            file.write_at(&zeros, lsn - start)?;
            file.sync_data()?;
        }
        // Newest first: a crash part-way leaves a shorter log, never one with a gap.
        let later: Vec<Lsn> = self.files.range(start + 1..).rev().map(|(&s, _)| s).collect();
        for s in &later {
            self.files.remove(s);
            self.fs.remove(&self.dir.join(segment_name(*s)))?;
        }
        if !later.is_empty() {
            self.fs.sync_dir(&self.dir)?;
        }
        Ok(())
    }

    /// Removes the segments that end at or before `lsn` (a checkpoint covers them).
    ///
    /// # Errors
    /// I/O errors.
    pub fn remove_before(&mut self, lsn: Lsn) -> io::Result<usize> {
        let old: Vec<Lsn> = self.files.keys().copied().filter(|&s| s + self.segment_bytes <= lsn).collect();
        for s in &old {
            self.files.remove(s);
            self.fs.remove(&self.dir.join(segment_name(*s)))?;
        }
        if !old.is_empty() {
            self.fs.sync_dir(&self.dir)?;
        }
        Ok(old.len())
    }
}
