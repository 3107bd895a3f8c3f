//! The log stream over segment files: which file holds an LSN, writing a range of the stream
//! (possibly across a segment boundary), syncing what was written, reading it back, and
//! creating segments preallocated with zeros.
//!
//! Invariants: segments are contiguous (each starts where the previous one ends); each is at
//! most `segment_bytes` long (`quill_log_segment_bytes`), and its file length is its length;
//! a segment is fully zero-filled and synced, and its name synced in the directory, before any
//! record is written into it. A new segment is `segment_bytes` long unless the disk has no
//! room for that: then it is the largest of `segment_bytes / 2`, `/ 4`, ... down to
//! [`SEGMENT_BYTES_MIN`] that fits, so a small volume still takes commits. A segment left
//! short by a torn write or a copy can only be the last one, and reads end where it ends.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use quill_io::{File, Fs, ZERO_CHUNK_BYTES};

use crate::format::{Lsn, SEGMENT_BYTES_MIN, parse_segment_name, segment_name};

/// The name prefix of a segment set aside by [`Segments::set_aside`].
pub const LOST_PREFIX: &str = "lost-";

/// One segment file and the length of the stream it holds.
#[derive(Clone)]
struct Segment {
    file: Arc<dyn File>,
    len: u64,
}

/// The segment files by start LSN: what reading the stream needs. A copy taken under the
/// log's segment lock ([`Segments::files`]) reads without it: files are read positionally,
/// and a segment removed meanwhile stays readable through its open handle.
#[derive(Clone, Default)]
pub struct SegmentFiles(BTreeMap<Lsn, Segment>);

impl SegmentFiles {
    /// The segment holding `lsn`: its start and itself.
    fn holding(&self, lsn: Lsn) -> Option<(Lsn, &Segment)> {
        self.0.range(..=lsn).next_back().filter(|(start, s)| lsn < *start + s.len).map(|(&start, s)| (start, s))
    }

    /// Reads `buf.len()` bytes of the stream at `lsn`; `false` when the segments end first.
    ///
    /// # Errors
    /// I/O errors.
    pub fn read_at(&self, mut lsn: Lsn, mut buf: &mut [u8]) -> io::Result<bool> {
        while !buf.is_empty() {
            let Some((start, segment)) = self.holding(lsn) else { return Ok(false) };
            let offset = lsn - start;
            let n = usize::try_from(segment.len - offset).unwrap_or(usize::MAX).min(buf.len());
            let (now, rest) = buf.split_at_mut(n);
            if segment.file.read_at(now, offset)? < n {
                return Ok(false);
            }
            buf = rest;
            lsn += n as u64;
        }
        Ok(true)
    }

    /// One past the last byte the segments hold.
    #[must_use]
    pub fn end(&self) -> Option<Lsn> {
        self.0.iter().next_back().map(|(&start, s)| start + s.len)
    }

    /// Each segment's start LSN and length, oldest first.
    #[must_use]
    pub fn bounds(&self) -> Vec<(Lsn, u64)> {
        self.0.iter().map(|(&start, s)| (start, s.len)).collect()
    }
}

pub struct Segments {
    fs: Arc<dyn Fs>,
    dir: PathBuf,
    segment_bytes: u64,
    files: SegmentFiles,
    /// Segments written since their last sync.
    unsynced: Vec<Lsn>,
}

/// Whether an I/O error means the disk (or the quota) is full.
#[must_use]
pub fn is_out_of_space(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::StorageFull || e.kind() == io::ErrorKind::QuotaExceeded
}

impl Segments {
    /// Opens the segments in `dir` (created if missing).
    ///
    /// # Errors
    /// I/O errors, and segments that are not contiguous (a missing or shortened middle
    /// segment: bytes of the log are gone).
    pub fn open(fs: Arc<dyn Fs>, dir: &Path, segment_bytes: u64) -> io::Result<Segments> {
        assert!(segment_bytes >= 64, "segments must hold at least a header and a little body");
        fs.create_dir_all(dir)?;
        crate::version::check_and_raise(fs.as_ref(), dir)?;
        let mut files = SegmentFiles::default();
        for name in fs.list(dir)? {
            if let Some(start) = parse_segment_name(&name) {
                let file = fs.open(&dir.join(&name), false)?;
                let len = file.len()?;
                files.0.insert(start, Segment { file, len });
            }
        }
        // A crash while the newest segment was being created can leave it short, or empty.
        // Nothing was ever written into it (records follow its zero-fill and sync), so it goes.
        if let Some((&last, segment)) = files.0.iter().next_back()
            && segment.len < segment_bytes
            && segment.file.read_all()?.iter().all(|&b| b == 0)
        {
            files.0.remove(&last);
            fs.remove(&dir.join(segment_name(last)))?;
            fs.sync_dir(dir)?;
        }
        let segments: Vec<(Lsn, u64)> = files.0.iter().map(|(&start, s)| (start, s.len)).collect();
        if let Some(gap) = segments.windows(2).find(|w| w[1].0 != w[0].0 + w[0].1) {
            return Err(io::Error::other(format!(
                "log segment {} holds {} bytes but the next one starts at {}: bytes of the log are missing",
                segment_name(gap[0].0),
                gap[0].1,
                segment_name(gap[1].0)
            )));
        }
        Ok(Segments { fs, dir: dir.to_path_buf(), segment_bytes, files, unsynced: Vec::new() })
    }

    /// The LSN of the first byte of the oldest segment, if any.
    #[must_use]
    pub fn first_lsn(&self) -> Option<Lsn> {
        self.files.0.keys().next().copied()
    }

    /// One past the last byte the segments hold.
    #[must_use]
    pub fn end_lsn(&self) -> Option<Lsn> {
        self.files.0.iter().next_back().map(|(&start, s)| start + s.len)
    }

    /// The segment holding `lsn`: its start and itself.
    fn holding(&self, lsn: Lsn) -> Option<(Lsn, &Segment)> {
        self.files.holding(lsn)
    }

    /// Reads `buf.len()` bytes of the stream at `lsn`; `false` when the segments end first.
    ///
    /// # Errors
    /// I/O errors.
    pub fn read_at(&self, lsn: Lsn, buf: &mut [u8]) -> io::Result<bool> {
        self.files.read_at(lsn, buf)
    }

    pub(crate) fn map(&self) -> &SegmentFiles {
        &self.files
    }

    /// A copy of the segment map, to read without holding the log's segment lock.
    #[must_use]
    pub fn files(&self) -> SegmentFiles {
        self.files.clone()
    }

    /// Writes `data` into the stream at `lsn`, creating segments as needed (the log writer
    /// prepares them ahead, see [`Segments::prepare_next`]). Not durable until
    /// [`Segments::sync`].
    ///
    /// # Errors
    /// I/O errors.
    pub fn write_at(&mut self, mut lsn: Lsn, mut data: &[u8]) -> io::Result<()> {
        while !data.is_empty() {
            if self.holding(lsn).is_none() {
                assert_eq!(Some(lsn), self.end_lsn().or(Some(lsn)), "the stream is written in order");
                self.create(lsn)?;
            }
            let (start, segment) = self.holding(lsn).expect("created above");
            let offset = lsn - start;
            let n = usize::try_from(segment.len - offset).unwrap_or(usize::MAX).min(data.len());
            segment.file.write_at(&data[..n], offset)?;
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
            if let Some(segment) = self.files.0.get(&start) {
                segment.file.sync_data()?;
                syncs += 1;
            }
        }
        Ok(syncs)
    }

    /// Creates the segment starting at `start` (the end of the stream, or anywhere for an
    /// empty log): `segment_bytes` long, or shorter when the disk has no room (see the module
    /// doc). Returns its length.
    ///
    /// # Errors
    /// I/O errors; out of space (see [`is_out_of_space`]) when not even
    /// [`SEGMENT_BYTES_MIN`] fits. A failed attempt leaves no file behind.
    fn create(&mut self, start: Lsn) -> io::Result<u64> {
        if let Some(end) = self.end_lsn() {
            assert_eq!(start, end, "segments are created in order");
        }
        let mut len = self.segment_bytes;
        loop {
            match self.create_sized(start, len) {
                Ok(()) => return Ok(len),
                Err(e) if is_out_of_space(&e) && len / 2 >= SEGMENT_BYTES_MIN.min(self.segment_bytes) => len /= 2,
                Err(e) => return Err(e),
            }
        }
    }

    fn create_sized(&mut self, start: Lsn, len: u64) -> io::Result<()> {
        let path = self.dir.join(segment_name(start));
        let file = self.fs.open(&path, true)?;
        let filled = (|| {
            // Written, not marked zero: a commit writing into them then changes no metadata.
            quill_io::write_zeros(&*file, 0, len)?;
            file.sync_data()?;
            self.fs.sync_dir(&self.dir)
        })();
        if let Err(e) = filled {
            // Give the space back; a leftover short file of zeros is removed at start-up too.
            drop(file);
            let _ = self.fs.remove(&path);
            return Err(e);
        }
        self.files.0.insert(start, Segment { file, len });
        Ok(())
    }

    /// Creates the next segment, at the end of the stream (`start` for an empty log), and
    /// returns the new end.
    ///
    /// # Errors
    /// As [`Segments::create`].
    pub fn prepare_next(&mut self, start: Lsn) -> io::Result<Lsn> {
        let at = self.end_lsn().unwrap_or(start);
        let len = self.create(at)?;
        Ok(at + len)
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
    /// The zeros are marked, not written ([`File::zero_range`]): start-up takes no longer
    /// however far from the segment's end the log stopped. On ext4 and XFS the range becomes
    /// unwritten extents, so until the segment fills, a sync after writing into a new block of
    /// it also journals that block's conversion: the price, paid by commits rather than by
    /// start-up, of one segment's tail.
    ///
    /// # Errors
    /// I/O errors.
    pub fn cut_at(&mut self, lsn: Lsn) -> io::Result<()> {
        let start = match self.holding(lsn) {
            Some((start, segment)) => {
                // Marked zero rather than written: no data I/O, however far the tail reaches.
                segment.file.zero_range(lsn - start, segment.len - (lsn - start))?;
                segment.file.sync_data()?;
                start
            }
            None => lsn,
        };
        // Newest first: a crash part-way leaves a shorter log, never one with a gap.
        let later: Vec<Lsn> = self.files.0.range(start + 1..).rev().map(|(&s, _)| s).collect();
        for s in &later {
            self.files.0.remove(s);
            self.fs.remove(&self.dir.join(segment_name(*s)))?;
        }
        if !later.is_empty() {
            self.fs.sync_dir(&self.dir)?;
        }
        Ok(())
    }

    /// Renames every segment to `lost-<resumed_at>-<name>` (synced in the directory), so the stream is
    /// empty and the next segment may start anywhere; returns the new paths. [`Log::open`]
    /// does this when the log ends before the checkpoint it starts from: the records those
    /// segments hold cannot join the stream resumed at the checkpoint's position without a
    /// gap, and are kept for an operator rather than destroyed.
    ///
    /// [`Log::open`]: crate::Log::open
    ///
    /// # Errors
    /// I/O errors.
    pub fn set_aside(&mut self, resumed_at: Lsn) -> io::Result<Vec<PathBuf>> {
        let mut moved = Vec::new();
        for &start in self.files.0.keys() {
            let from = self.dir.join(segment_name(start));
            let to = self.dir.join(format!("{LOST_PREFIX}{resumed_at:020}-{}", segment_name(start)));
            self.fs.rename(&from, &to)?;
            moved.push(to);
        }
        if !moved.is_empty() {
            self.fs.sync_dir(&self.dir)?;
        }
        self.files.0.clear();
        self.unsynced.clear();
        Ok(moved)
    }

    /// Removes the segments that end at or before `lsn` (a checkpoint covers them) and, with
    /// `written_before`, were last written before it: the oldest segments, up to the first
    /// that is too new.
    ///
    /// # Errors
    /// I/O errors.
    pub fn remove_before(&mut self, lsn: Lsn, written_before: Option<SystemTime>) -> io::Result<usize> {
        let mut old = Vec::new();
        for (&start, s) in &self.files.0 {
            if start + s.len > lsn {
                break;
            }
            if let Some(cutoff) = written_before
                && self.fs.modified(&self.dir.join(segment_name(start)))? >= cutoff
            {
                break;
            }
            old.push(start);
        }
        for s in &old {
            self.files.0.remove(s);
            self.fs.remove(&self.dir.join(segment_name(*s)))?;
        }
        if !old.is_empty() {
            self.fs.sync_dir(&self.dir)?;
        }
        Ok(old.len())
    }
}
