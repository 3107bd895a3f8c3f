//! Reading the log back: records in order from a starting LSN, until the end of the log or
//! the first record that is not intact (see `docs/log-format.md`, "The end of the log").

use std::collections::HashMap;
use std::io;

use crate::format::{HEADER_BYTES, LSN_OFFSET, Lsn, MAX_BODY_BYTES, Record, RecordKind, checksum_ok, decode_body, decode_header};
use crate::segments::{SegmentFiles, Segments};

/// Why reading stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogEnd {
    /// Zeros (or no segment) where the next record would start: the log ends here.
    Clean,
    /// The record at the end position is not intact; it and everything after it are cut.
    Cut(CutReason),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CutReason {
    BadLength(usize),
    Torn,
    BadChecksum,
    Misplaced { found: Lsn },
    BadBody,
}

impl std::fmt::Display for CutReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CutReason::BadLength(n) => write!(f, "bad length {n}"),
            CutReason::Torn => write!(f, "torn record (runs past the last segment)"),
            CutReason::BadChecksum => write!(f, "bad checksum"),
            CutReason::Misplaced { found } => write!(f, "record claims LSN {found}"),
            CutReason::BadBody => write!(f, "malformed body"),
        }
    }
}

/// Reads records from `start`, calling `apply` on each in order, and returns where the log
/// ends and why.
///
/// # Errors
/// I/O errors, or an error `apply` returns (reading stops there).
fn read_records<E: From<io::Error>>(segments: &Segments, start: Lsn, mut apply: impl FnMut(Record) -> Result<(), E>) -> Result<(Lsn, LogEnd), E> {
    let mut lsn = start;
    let mut ahead = ReadAhead::new(segments.map());
    loop {
        match read_one(&mut ahead, lsn)? {
            Ok(record) => {
                let next = lsn + record.encoded_len() as u64;
                apply(record)?;
                lsn = next;
            }
            Err(end) => return Ok((lsn, end)),
        }
    }
}

/// Reads the log from `read_from` and calls `apply` on what committed at or after `start`, in
/// commit order: a plain record as it is, and a streamed transaction at its commit record as
/// its parts (read back from the log one at a time, so memory holds one part, never the
/// transaction) followed by the commit record, each without its stream marker and carrying
/// the commit's sequence number and time. Records before `start` are read only to find the
/// parts of streams that commit at or after it. Every stream commit read goes into
/// `stream_commits` (commit record LSN, first part LSN). Returns where the log ends, why, and
/// how many streams it holds that never ended (their changes were not applied).
///
/// # Errors
/// I/O errors, a part or commit whose stream was not found (its first part is before
/// `read_from`), or an error `apply` returns (reading stops there).
pub fn read_transactions<E: From<io::Error>>(
    segments: &Segments,
    read_from: Lsn,
    start: Lsn,
    stream_commits: &mut std::collections::BTreeMap<Lsn, Lsn>,
    mut apply: impl FnMut(Record) -> Result<(), E>,
) -> Result<(Lsn, LogEnd, usize), E> {
    // Open streams: the LSNs of their parts so far, by the LSN of their first part.
    let mut streams: HashMap<Lsn, Vec<Lsn>> = HashMap::new();
    let missing = |lsn: Lsn, first: Lsn| {
        E::from(io::Error::other(format!("the log record at LSN {lsn} belongs to a stream whose first part at LSN {first} was not read")))
    };
    let (end_lsn, end) = read_records(segments, read_from, |mut record: Record| -> Result<(), E> {
        match record.kind() {
            RecordKind::Commit => {
                if record.lsn >= start {
                    apply(record)?;
                }
            }
            RecordKind::Part(first) => {
                if first == record.lsn {
                    streams.insert(first, vec![record.lsn]);
                } else {
                    streams.get_mut(&first).ok_or_else(|| missing(record.lsn, first))?.push(record.lsn);
                }
            }
            RecordKind::Abort(first) => {
                streams.remove(&first).ok_or_else(|| missing(record.lsn, first))?;
            }
            RecordKind::StreamCommit(first) => {
                let parts = streams.remove(&first).ok_or_else(|| missing(record.lsn, first))?;
                stream_commits.insert(record.lsn, first);
                if record.lsn >= start {
                    for lsn in parts {
                        let Ok(mut part) = read_one(segments.map(), lsn).map_err(E::from)? else {
                            return Err(io::Error::other(format!("the stream part at LSN {lsn} no longer reads back")).into());
                        };
                        part.changes.remove(0);
                        apply(Record { lsn, seq: record.seq, commit_us: record.commit_us, changes: part.changes })?;
                    }
                    record.changes.remove(0);
                    apply(record)?;
                }
            }
        }
        Ok(())
    })?;
    Ok((end_lsn, end, streams.len()))
}

/// Where [`read_one`] reads the stream from.
pub(crate) trait Source {
    /// Reads `buf.len()` bytes at `lsn`; `false` when the segments end first.
    ///
    /// # Errors
    /// I/O errors.
    fn read_at(&mut self, lsn: Lsn, buf: &mut [u8]) -> io::Result<bool>;
}

impl Source for &SegmentFiles {
    fn read_at(&mut self, lsn: Lsn, buf: &mut [u8]) -> io::Result<bool> {
        SegmentFiles::read_at(self, lsn, buf)
    }
}

/// Bytes of the stream a [`ReadAhead`] reads at once: reading the log from start to end
/// costs one read per this many bytes instead of two per record (header, then body).
pub const READ_AHEAD_BYTES: usize = 1 << 20;

/// A [`Source`] for reading the stream front to back: it reads [`READ_AHEAD_BYTES`] at a
/// time and serves the reads inside them from memory. A read it does not hold (before its
/// window, larger than it, or one the segments end in) goes to the segments as it is.
pub(crate) struct ReadAhead<'a> {
    files: &'a SegmentFiles,
    /// The LSN of `window[0]`.
    start: Lsn,
    window: Vec<u8>,
}

impl<'a> ReadAhead<'a> {
    pub(crate) fn new(files: &'a SegmentFiles) -> ReadAhead<'a> {
        ReadAhead { files, start: 0, window: Vec::new() }
    }
}

impl Source for &mut ReadAhead<'_> {
    fn read_at(&mut self, lsn: Lsn, buf: &mut [u8]) -> io::Result<bool> {
        let held = |start: Lsn, window: &[u8]| {
            let from = usize::try_from(lsn.checked_sub(start)?).ok()?;
            window.get(from..from.checked_add(buf.len())?).map(|_| from)
        };
        if let Some(from) = held(self.start, &self.window) {
            buf.copy_from_slice(&self.window[from..from + buf.len()]);
            return Ok(true);
        }
        let available = usize::try_from(self.files.end().unwrap_or(0).saturating_sub(lsn)).unwrap_or(usize::MAX);
        let want = available.min(READ_AHEAD_BYTES);
        if want < buf.len() || buf.len() >= READ_AHEAD_BYTES {
            return self.files.read_at(lsn, buf);
        }
        self.window.resize(want, 0);
        if !self.files.read_at(lsn, &mut self.window)? {
            self.window.clear();
            return self.files.read_at(lsn, buf);
        }
        self.start = lsn;
        buf.copy_from_slice(&self.window[..buf.len()]);
        Ok(true)
    }
}

/// The record at `lsn`, or why there is none.
pub(crate) fn read_one(mut segments: impl Source, lsn: Lsn) -> io::Result<Result<Record, LogEnd>> {
    let mut header_bytes = [0_u8; HEADER_BYTES];
    if !segments.read_at(lsn, &mut header_bytes)? {
        // Not even a header fits: either no segment holds lsn (clean) or a header was cut off
        // by the end of the last segment, which a writer never does without the next segment.
        let any = segments.read_at(lsn, &mut [0_u8; 1])?;
        return Ok(Err(if any && header_bytes.iter().any(|&b| b != 0) { LogEnd::Cut(CutReason::Torn) } else { LogEnd::Clean }));
    }
    let header = decode_header(&header_bytes);
    if header.body_len == 0 {
        return Ok(Err(LogEnd::Clean));
    }
    if header.body_len > MAX_BODY_BYTES {
        return Ok(Err(LogEnd::Cut(CutReason::BadLength(header.body_len))));
    }
    let mut body = vec![0_u8; header.body_len];
    if !segments.read_at(lsn + HEADER_BYTES as u64, &mut body)? {
        return Ok(Err(LogEnd::Cut(CutReason::Torn)));
    }
    if !checksum_ok(&header_bytes, &body) {
        return Ok(Err(LogEnd::Cut(CutReason::BadChecksum)));
    }
    if header.lsn != lsn {
        return Ok(Err(LogEnd::Cut(CutReason::Misplaced { found: header.lsn })));
    }
    let Some(changes) = decode_body(&body) else { return Ok(Err(LogEnd::Cut(CutReason::BadBody))) };
    Ok(Ok(Record { lsn, seq: header.seq, commit_us: header.commit_us, changes }))
}

/// Bytes read at a time while looking for a record boundary.
const SCAN_CHUNK_BYTES: usize = 1 << 16;

/// The LSN of the first record that starts at or after `from` and before `until`, found
/// without a known boundary before it: at each position whose header names that very
/// position as its LSN, a record whose checksum holds starts.
///
/// # Errors
/// I/O errors.
pub(crate) fn first_record_from(files: &SegmentFiles, from: Lsn, until: Lsn) -> io::Result<Option<Lsn>> {
    let mut chunk = vec![0_u8; SCAN_CHUNK_BYTES + LSN_OFFSET + 8];
    let mut at = from;
    while at < until {
        let n = usize::try_from(until - at).unwrap_or(usize::MAX).min(SCAN_CHUNK_BYTES);
        // The chunk's last candidates need the 8 bytes of LSN after them.
        let want = n + LSN_OFFSET + 8;
        let have = usize::try_from(files.end().unwrap_or(at).saturating_sub(at)).unwrap_or(usize::MAX).min(want);
        if have < LSN_OFFSET + 8 || !files.read_at(at, &mut chunk[..have])? {
            return Ok(None);
        }
        for i in 0..n.min(have - LSN_OFFSET - 8 + 1) {
            let named = u64::from_le_bytes(chunk[i + LSN_OFFSET..i + LSN_OFFSET + 8].try_into().expect("8 bytes"));
            let lsn = at + i as u64;
            if named == lsn && read_one(files, lsn)?.is_ok() {
                return Ok(Some(lsn));
            }
        }
        at += n as u64;
    }
    Ok(None)
}

/// Whether the log reads back record after record from its first record at or after `from`
/// to exactly `to`: no hole (zeros a lost write left) and no damage on the way. False too
/// when no record starts between them: a hole, or one record running across the whole
/// range, which the caller cannot tell apart and so takes for a hole.
///
/// # Errors
/// I/O errors.
pub(crate) fn intact_between(files: &SegmentFiles, from: Lsn, to: Lsn) -> io::Result<bool> {
    let Some(mut lsn) = first_record_from(files, from, to)? else { return Ok(from >= to) };
    while lsn < to {
        match read_one(files, lsn)? {
            Ok(record) => lsn += record.encoded_len() as u64,
            Err(_) => return Ok(false),
        }
    }
    Ok(lsn == to)
}
