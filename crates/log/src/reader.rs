//! Reading the log back: records in order from a starting LSN, until the end of the log or
//! the first record that is not intact (see `docs/log-format.md`, "The end of the log").

use std::io;

use crate::format::{HEADER_BYTES, Lsn, MAX_BODY_BYTES, Record, checksum_ok, decode_body, decode_header};
use crate::segments::Segments;

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
pub fn read_records<E: From<io::Error>>(segments: &Segments, start: Lsn, mut apply: impl FnMut(Record) -> Result<(), E>) -> Result<(Lsn, LogEnd), E> {
    let mut lsn = start;
    loop {
        match read_one(segments, lsn)? {
            Ok(record) => {
                let next = lsn + record.encoded_len() as u64;
                apply(record)?;
                lsn = next;
            }
            Err(end) => return Ok((lsn, end)),
        }
    }
}

/// The record at `lsn`, or why there is none.
fn read_one(segments: &Segments, lsn: Lsn) -> io::Result<Result<Record, LogEnd>> {
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
