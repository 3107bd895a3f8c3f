//! The commit log: one log, in segment files, that is both the redo log recovery replays and
//! the stream replicas follow. One record per committed transaction, except that a
//! large transaction streams its changes ahead of its commit in part records; many records
//! share each `fdatasync` through group commit.
//!
//! - `format`: the record format of `docs/log-format.md` (constants, encode, decode);
//! - `segments`: the stream over preallocated segment files;
//! - `reader`: records back in order, up to the end or the first damaged record;
//! - `writer`: [`Log`], appending, the group-commit writer thread, flush modes and waits;
//! - `tail`: following the durable log in commit order, for replication.
//!
//! Where it sits: below `sql` (which builds records at commit and replays them at start-up),
//! above `io` (all file access goes through its seam, so tests can crash a simulated disk).

mod format;
pub mod histogram;
mod reader;
mod segments;
mod tail;
mod version;
mod writer;

pub use format::{
    Body, COMMIT_US_OFFSET, CRC_OFFSET, CRC_START, Change, DEFAULT_SEGMENT_BYTES, DdlContext, EncodeError, HEADER_BYTES, LEN_OFFSET, LSN_OFFSET, Lsn,
    MAX_BODY_BYTES, ORIGIN_BYTES, Origin, Record, RecordKind, SEGMENT_BYTES_MIN, SEQ_OFFSET, STREAM_MARK_BYTES, body_len, encode_record, encode_record_body,
    segment_name,
};
pub use reader::{CutReason, LogEnd};
pub use tail::{LogTail, Retention, Transaction, TransactionCursor};
pub use version::{LOG_FORMAT_VERSION, VERSION_FILE};
pub use writer::{
    Appended, BUFFER_BYTES_MAX, BUSY_HOLD, DDL_RESERVE_BYTES, FailureHook, FlushMode, GROUP_BYTES_MAX, LEAD_GRACE, Log, LogConfig, LogStats, LostHistory,
    Recovered, SPACE_RETRY_INTERVAL, SYNC_INTERVAL, Start, WriterMode,
};

#[cfg(test)]
mod tests;
