//! [`Log`]: appending commit records, the group-commit writer thread, flush modes, and
//! waiting for a record to be written or durable.
//!
//! The flow of one commit (see `docs/architecture.md`, "One commit"):
//! 1. [`Log::append`] encodes the record straight into the shared pending buffer and gives it
//!    the next LSN and sequence number. Callers append in commit order (the SQL layer appends
//!    while it holds its commit-order lock), so log order is commit order.
//! 2. A group is everything pending, whatever arrived while the previous write and sync were
//!    in flight, up to [`LogConfig::group_bytes_max`]. It is written with one positional write
//!    and, in flush mode 1, made durable with one `fdatasync`; then the new written and durable
//!    LSNs are published. One group is in flight at a time (`State::writing`), so groups land
//!    in LSN order. Who writes it:
//!    - in mode 1 with no group delay, a commit appended when no group is in flight, no
//!      other session waits, no group of several records was taken in the last
//!      [`BUSY_HOLD`], and no segment is due (see "Space") is led by its own session ([`Log::wait`]): it takes the group,
//!      writes and syncs it off the runtime's worker, and wakes the sessions it covered. A
//!      lone commit so costs no thread hand-off, which matters most when a busy neighbour
//!      leaves the scheduler slow to run a woken thread;
//!    - otherwise, and for what arrives while a group is in flight, the writer thread. A
//!      leader that finds more pending when it is done hands it to the writer.
//! 3. The committing session awaits [`Log::wait`]. In mode 1 that waits until the durable LSN
//!    passes its record, in mode 2 until the written LSN does, and in mode 0 not at all.
//!
//! Flush modes follow `innodb_flush_log_at_trx_commit`:
//! - 1: durable before the client is answered;
//! - 2: written to the OS at commit, synced once per [`LogConfig::sync_interval`], so it
//!   survives a process crash but not a power loss;
//! - 0: written and synced once per interval, so a crash may lose about the last interval,
//!   always as a prefix of the log.
//!
//! Bounds:
//! - the pending buffer holds at most [`LogConfig::buffer_bytes_max`] bytes, and appenders wait
//!   beyond that;
//! - one group is at most [`LogConfig::group_bytes_max`] bytes.
//!
//! Space: the writer creates segments ahead of the records that need them (half a segment
//! ahead), so an append only ever lands in space that exists. When the disk has no room for
//! a new segment, appends that would need it fail with [`EncodeError::LogFull`] (nothing of
//! their transaction is applied) while everything else goes on: reads, and commits that fit
//! in the space left, where DML leaves [`DDL_RESERVE_BYTES`] for DDL. The writer tries again
//! every [`SPACE_RETRY_INTERVAL`], so commits resume by themselves when space returns.
//!
//! Inline writing ([`WriterMode::Inline`]): with no writer thread, whoever needs the log
//! further along does the writer's work on its own thread: a commit's [`Log::wait`] writes
//! (and in mode 1 syncs) what is pending, an append creates the segment it needs,
//! [`Log::make_durable`] syncs, and [`Log::tick`] is the writer's once-a-second write and
//! sync of modes 0 and 2. Nothing happens between those calls, so what is written and what is
//! durable at any moment is a function of the caller's program: the crash simulator relies
//! on it.
//!
//! Checkpoints: a checkpoint of position L may be published only once the log is durable up
//! to L ([`Log::make_durable`] forces the sync in modes 0 and 2), and [`Log::open`] never
//! resumes appending below the checkpoint it starts from (see its doc): so no record a
//! checkpoint covers can be lost, and no LSN or sequence number is handed out twice.
//!
//! Failure: any other I/O error in the writer (a failed write or `fdatasync`) calls
//! [`LogConfig::on_failure`], which aborts the process by default (fail-stop). The durable
//! LSN never moves again, so nothing further is acknowledged as durable.

use std::io;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use parking_lot::{Condvar, Mutex};
use quill_io::Fs;
use tokio::sync::watch;

use crate::format::{Body, Change, EncodeError, Lsn, Record, encode_record_body};
use crate::reader::{LogEnd, read_transactions};
use crate::segments::Segments;

/// `innodb_flush_log_at_trx_commit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlushMode {
    /// 0: written and synced once a second.
    EverySecond = 0,
    /// 1: durable at commit.
    AtCommit = 1,
    /// 2: written at commit, synced once a second.
    WriteAtCommit = 2,
}

impl FlushMode {
    /// The mode that promises more of the two: 1 over 2 over 0.
    #[must_use]
    pub fn stronger(self, other: FlushMode) -> FlushMode {
        let rank = |m: FlushMode| match m {
            FlushMode::EverySecond => 0,
            FlushMode::WriteAtCommit => 1,
            FlushMode::AtCommit => 2,
        };
        if rank(other) > rank(self) { other } else { self }
    }

    #[must_use]
    pub fn from_value(value: u8) -> Option<FlushMode> {
        match value {
            0 => Some(FlushMode::EverySecond),
            1 => Some(FlushMode::AtCommit),
            2 => Some(FlushMode::WriteAtCommit),
            _ => None,
        }
    }
}

/// Called with a message when the writer hits an I/O error; must not return normally in
/// production (the default aborts the process).
pub type FailureHook = Arc<dyn Fn(&str) + Send + Sync>;

#[derive(Clone)]
pub struct LogConfig {
    pub segment_bytes: u64,
    /// Largest group the writer writes and syncs at once.
    pub group_bytes_max: usize,
    /// Largest pending buffer; appenders wait beyond it.
    pub buffer_bytes_max: usize,
    pub flush_mode: FlushMode,
    /// How often modes 0 and 2 sync (and mode 0 writes).
    pub sync_interval: Duration,
    /// `binlog_group_commit_sync_delay`: in mode 1, how long the writer waits for more records
    /// before writing a group (0: no delay).
    pub group_delay: Duration,
    /// `binlog_group_commit_sync_no_delay_count`: stop waiting once this many records are
    /// pending (0: no count, wait the whole delay).
    pub group_no_delay_count: u64,
    /// `binlog_expire_logs_seconds`: a segment a checkpoint covers is removed once it was last
    /// written this long ago; `None` keeps it until `PURGE BINARY LOGS`. (At start-up every
    /// segment the checkpoint covers goes.)
    pub segment_expiry: Option<Duration>,
    pub on_failure: FailureHook,
    /// Who writes groups and syncs them: the log's writer thread (the server), or the
    /// callers themselves, inline (the crash simulator; see [`WriterMode::Inline`]).
    pub writer: WriterMode,
}

/// Who writes and syncs the log (see "Inline writing" in the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriterMode {
    /// A writer thread of the log's own, as the module doc describes.
    Thread,
    /// No thread: a caller that needs the log written or durable does it on its own thread,
    /// and [`Log::tick`] stands for the writer's clock. Every write, sync and segment
    /// creation then happens at a point of the caller's program, so a seeded simulation
    /// of the whole server replays exactly.
    Inline,
}

/// In mode 1, how long the writer thread leaves a pending record to the session that appended
/// it, which leads its own group from [`Log::wait`], before it writes the record itself (a
/// session that never waits, or an append while the log was busy).
pub const LEAD_GRACE: Duration = Duration::from_millis(2);
/// After a group of more than one record, how long commits go to the writer thread rather
/// than being led by their sessions. While commits arrive together the writer goes from one
/// group to the next without being woken; a leader's group would leave those that arrive
/// during its sync waiting for the writer to wake, and on a loaded machine a wake-up can
/// wait for the scheduler's next tick.
pub const BUSY_HOLD: Duration = Duration::from_millis(10);
/// Default of [`LogConfig::group_bytes_max`]. Room for two of a large transaction's part
/// records (8 MiB each, `quill_sql`'s `STREAM_PART_BYTES`), so a group takes what is pending
/// whole, by swapping buffers: a smaller group copied each part out of the pending buffer
/// into a fresh allocation and moved the rest down, page fault by page fault.
pub const GROUP_BYTES_MAX: usize = 16 << 20;
/// Default of [`LogConfig::buffer_bytes_max`].
pub const BUFFER_BYTES_MAX: usize = 64 << 20;
/// Default of [`LogConfig::sync_interval`], as InnoDB's once a second.
pub const SYNC_INTERVAL: Duration = Duration::from_secs(1);
/// When the disk is full, how often the writer tries again to create a segment.
pub const SPACE_RETRY_INTERVAL: Duration = Duration::from_secs(1);
/// When the disk is full, the space DML commits leave to DDL, whose catalog change is made
/// before its record is appended and must not then find the log full.
pub const DDL_RESERVE_BYTES: u64 = 256 << 10;

impl Default for LogConfig {
    fn default() -> LogConfig {
        LogConfig {
            segment_bytes: crate::format::DEFAULT_SEGMENT_BYTES,
            group_bytes_max: GROUP_BYTES_MAX,
            buffer_bytes_max: BUFFER_BYTES_MAX,
            flush_mode: FlushMode::AtCommit,
            sync_interval: SYNC_INTERVAL,
            group_delay: Duration::ZERO,
            group_no_delay_count: 0,
            segment_expiry: Some(Duration::ZERO),
            on_failure: Arc::new(|message| {
                eprintln!("quill: commit log I/O failed, stopping: {message}");
                std::process::abort();
            }),
            writer: WriterMode::Thread,
        }
    }
}

/// Counters of the log since start, for `SHOW GLOBAL STATUS`.
#[derive(Debug)]
pub struct LogStats {
    /// Commit records (transactions and DDL).
    pub records: AtomicU64,
    /// Transactions that streamed parts ahead of their commit, and their part records.
    pub streams: AtomicU64,
    pub stream_parts: AtomicU64,
    pub groups: AtomicU64,
    /// Groups a committing session led itself (see step 2 of the module doc); the others the
    /// writer thread wrote.
    pub groups_led: AtomicU64,
    pub fsyncs: AtomicU64,
    pub bytes_written: AtomicU64,
    /// Commit records per group written (a group cut at `group_bytes_max` is not counted).
    pub group_records: crate::histogram::Histogram,
}

/// Bounds of [`LogStats::group_records`]: records per group.
pub const GROUP_RECORDS_BUCKETS: &[u64] = &[1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024];

impl Default for LogStats {
    fn default() -> LogStats {
        LogStats {
            records: AtomicU64::new(0),
            streams: AtomicU64::new(0),
            stream_parts: AtomicU64::new(0),
            groups: AtomicU64::new(0),
            groups_led: AtomicU64::new(0),
            fsyncs: AtomicU64::new(0),
            bytes_written: AtomicU64::new(0),
            group_records: crate::histogram::Histogram::new(GROUP_RECORDS_BUCKETS),
        }
    }
}

/// What recovery found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recovered {
    pub start_lsn: Lsn,
    pub end_lsn: Lsn,
    pub records: u64,
    pub next_seq: u64,
    pub end: LogEnd,
    /// Where the bytes after a damaged record were copied before the cut, and how many.
    pub preserved: Option<(std::path::PathBuf, u64)>,
    /// Streamed transactions whose parts the log holds but which never committed or rolled
    /// back (the server stopped first): none of their changes were applied.
    pub streams_discarded: usize,
    /// The log ended before the checkpoint's position, and appending resumed there: see
    /// [`LostHistory`].
    pub lost: Option<LostHistory>,
}

/// What [`Log::open`] did when the log ended (at `log_end`) before the checkpoint's position
/// (`resumed_at`): the checkpoint holds every row, the stream resumes at its position, and
/// the old segments, whose records before `log_end` were the binary log's history, were
/// renamed to `files` (kept for an operator, never read again).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LostHistory {
    pub log_end: Lsn,
    pub resumed_at: Lsn,
    pub files: Vec<std::path::PathBuf>,
}

/// Where recovery starts, from a checkpoint: the position `lsn` it covers (records from there
/// on are applied) and the sequence number of the record there. `read_from` is at most `lsn`:
/// the first part of any transaction that was streaming when the checkpoint was taken, whose
/// parts must be read back if it committed after `lsn`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Start {
    pub lsn: Lsn,
    pub next_seq: u64,
    pub read_from: Lsn,
    /// Records from here on are described by the checkpoint's table definitions (none
    /// before a DDL record after it): covered segments from here on can still be read as the
    /// binary log, and are kept.
    pub definitions_from: Lsn,
    /// Streamed transactions committed before `read_from` whose commit records the log still
    /// holds: (commit record LSN, first part LSN), from the checkpoint (see
    /// [`Log::stream_commits_before`]).
    pub stream_commits: Vec<(Lsn, Lsn)>,
    /// The checkpoint was written by a build whose checkpoints could run ahead of the
    /// durable log (format version 5 and before): the log below its position may have a
    /// hole where writes were lost, so it is read through before the binary log is served
    /// from there (see [`Log::open`]).
    pub check_history: bool,
}

/// What leads a record: a commit has a sequence number and a commit time; a part or an
/// abort of a streamed transaction has neither, and starts with its stream marker.
#[derive(Debug, Clone, Copy)]
enum Head {
    Commit(u64),
    StreamCommit(u64, Lsn),
    Part(Option<Lsn>),
    Abort(Lsn),
}

/// Where the log was appended: the record's LSN, the LSN just past it, its sequence number
/// (0 for a part or an abort).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Appended {
    pub lsn: Lsn,
    pub end: Lsn,
    pub seq: u64,
}

struct State {
    pending: Vec<u8>,
    /// The buffer of the last group written, emptied, kept to become the pending buffer when
    /// the next group takes it (at most [`LogConfig::buffer_bytes_max`] of capacity, else it is
    /// let go): appends then fill memory already in use instead of growing a new buffer from
    /// nothing, page fault by page fault, for every group.
    spare: Vec<u8>,
    pending_records: u64,
    next_lsn: Lsn,
    next_seq: u64,
    written_lsn: Lsn,
    durable_lsn: Lsn,
    /// A waiter needs the log durable up to here whatever the flush mode (DDL).
    sync_requested_lsn: Lsn,
    /// The end of the segments created so far: no record may end past it.
    space_end: Lsn,
    /// An appender waits for segments up to here (the writer had not created them yet).
    space_wanted: Lsn,
    /// Why the last attempt to create a segment failed for lack of space, and when to try
    /// again; `None` while segments can be created.
    space_error: Option<(String, Instant)>,
    /// A group is being written, by the writer thread or by a leading session: nobody else
    /// takes one until it is published.
    writing: bool,
    /// Pending records that no session leads (they arrived while a group was in flight):
    /// the writer thread takes them at once.
    handed_off: bool,
    /// When the writer thread stops leaving the pending records to their sessions (see
    /// [`LEAD_GRACE`]); set when it first finds them, cleared when a group is taken.
    lead_deadline: Option<Instant>,
    /// Until when commits count as arriving together: [`BUSY_HOLD`] after the last group that
    /// held more than one record.
    busy_until: Option<Instant>,
    shutdown: bool,
    failed: bool,
}

pub(crate) struct Shared {
    state: Mutex<State>,
    writer_wake: Condvar,
    space: Condvar,
    written: watch::Sender<Lsn>,
    pub(crate) durable: watch::Sender<Lsn>,
    mode: AtomicU8,
    group_delay_us: AtomicU64,
    group_no_delay_count: AtomicU64,
    pub(crate) segments: Mutex<Segments>,
    /// [`LogConfig::segment_expiry`] in milliseconds, `EXPIRY_NEVER` for none.
    segment_expiry_ms: AtomicU64,
    /// Where recovery starts reading (the newest checkpoint's `read_from`): no segment at or
    /// after it is ever removed.
    recovery_start: AtomicU64,
    /// Records before this LSN are not in the binary log: after a restart, their table
    /// definitions may be older than the checkpoint's, which is all the server knows then
    /// (see [`Log::binlog_from`]).
    binlog_from: AtomicU64,
    /// Streamed transactions whose commit record a segment still holds: (commit record LSN,
    /// first part LSN). Segments holding their parts stay as long as the commit record does
    /// ([`keeping_stream_parts`]). Bounded by the retained log: an entry goes with the
    /// segment of its commit record.
    stream_commits: Mutex<std::collections::BTreeMap<Lsn, Lsn>>,
    /// What readers still need (`tail::Retention`): no segment at or after the lowest LSN is
    /// removed. One entry per reader that holds a retention.
    pub(crate) retained: Mutex<std::collections::BTreeMap<u64, Lsn>>,
    pub(crate) next_retention: AtomicU64,
    /// Sessions parked in [`Log::wait`]. A commit appended while others wait goes to the
    /// writer thread with theirs, in one group, rather than being led on its own.
    waiters: AtomicUsize,
    stats: LogStats,
    config: LogConfig,
}

/// `Shared::segment_expiry_ms` of a log that keeps covered segments until `PURGE BINARY LOGS`.
const EXPIRY_NEVER: u64 = u64::MAX;

fn expiry_ms(expiry: Option<Duration>) -> u64 {
    expiry.map_or(EXPIRY_NEVER, |d| u64::try_from(d.as_millis()).unwrap_or(EXPIRY_NEVER - 1))
}

/// Segments last written before the returned time have expired; `None` when none ever do.
fn expiry_cutoff(expiry: Option<Duration>) -> Option<SystemTime> {
    expiry.map(|d| SystemTime::now().checked_sub(d).unwrap_or(std::time::UNIX_EPOCH))
}

/// The commit log. Dropping it writes and syncs everything pending, then stops the writer.
pub struct Log {
    pub(crate) shared: Arc<Shared>,
    writer: Mutex<Option<JoinHandle<()>>>,
}

impl Log {
    /// Opens the log in `dir`, replays it from `start` (where a checkpoint leaves off, or
    /// the beginning), calling `apply` on every committed transaction's changes in commit
    /// order (a streamed transaction's parts first, each as a record of its own), cuts the log
    /// where it ends, and starts the writer.
    ///
    /// # Errors
    /// I/O errors, a log that does not reach back to where recovery must read from, a stream
    /// part whose stream is missing, or an error of `apply`.
    pub fn open<E: From<io::Error>>(
        fs: Arc<dyn Fs>,
        dir: &Path,
        config: LogConfig,
        start: Option<Start>,
        mut apply: impl FnMut(Record) -> Result<(), E>,
    ) -> Result<(Log, Recovered), E> {
        let mut segments = Segments::open(fs, dir, config.segment_bytes)?;
        if start.is_none() && segments.first_lsn().is_some_and(|first| first > 0) {
            return Err(io::Error::other(format!(
                "the commit log in {} starts at segment {}, not at LSN 0, and there is no intact checkpoint to start from: \
                 restore the checkpoint (checkpoint-*.qckpt in the data directory) or the missing segments from a copy",
                dir.display(),
                segments.first_lsn().map(crate::format::segment_name).unwrap_or_default()
            ))
            .into());
        }
        let start = start.unwrap_or(Start { lsn: 0, next_seq: 1, read_from: 0, definitions_from: 0, stream_commits: Vec::new(), check_history: false });
        let (start_lsn, mut next_seq) = (start.lsn, start.next_seq);
        // A log resumed at the checkpoint's position (see the ending below it, further on)
        // starts there: nothing after it needs a part before it, as the streams open at the
        // checkpoint died with the server that had them.
        let read_from = if segments.first_lsn() == Some(start_lsn) { start_lsn } else { start.read_from };
        if let Some(first) = segments.first_lsn().filter(|&first| first > read_from) {
            return Err(io::Error::other(format!(
                "the commit log in {} starts at LSN {first} (segment {}), after LSN {} where recovery from the checkpoint must begin reading: \
                 the segments before it are missing; restore them from a copy of the data directory",
                dir.display(),
                crate::format::segment_name(first),
                start.read_from
            ))
            .into());
        }
        let mut records = 0;
        let mut stream_commits: std::collections::BTreeMap<Lsn, Lsn> = start.stream_commits.iter().copied().collect();
        let read = read_transactions(&segments, read_from, start_lsn, &mut stream_commits, |record: Record| {
            if record.seq > 0 {
                next_seq = record.seq + 1;
            }
            records += 1;
            apply(record)
        })?;
        let (mut end_lsn, end, streams_discarded) = read;
        let preserved = if matches!(end, LogEnd::Cut(_)) { segments.preserve_from(end_lsn)? } else { None };
        let mut lost = None;
        if end_lsn < start_lsn {
            // The log ends before the checkpoint's position: records the checkpoint covers
            // never reached the disk (a checkpoint published ahead of the log, as builds
            // writing checkpoint format 5 and before could in modes 0 and 2, or synced
            // bytes the disk lost). The
            // checkpoint holds their rows; appending from the log's end would hand out LSNs
            // and sequence numbers it already covers, and recovery would skip those commits.
            // So the stream resumes at the checkpoint's position, in a new segment, and
            // the old segments, which cannot join it without a gap, are set aside.
            // The caller reports it (`Recovered::lost`).
            let files = segments.set_aside(start_lsn)?;
            lost = Some(LostHistory { log_end: end_lsn, resumed_at: start_lsn, files });
            end_lsn = start_lsn;
        } else {
            segments.cut_at(end_lsn)?;
        }
        let mut binlog_from = start.definitions_from.min(start.lsn);
        if start.check_history && lost.is_none() {
            // A checkpoint of an older build may have been published before the records
            // below it were written, leaving zeros there that a reader of the binary log
            // would stop at. If so, the binary log begins at the checkpoint.
            let from = binlog_from.max(segments.first_lsn().unwrap_or(0));
            if !crate::reader::intact_between(segments.map(), from, read_from)? {
                tracing::error!(
                    from,
                    to = read_from,
                    "commit log: a hole below the checkpoint's position (written by an older build); the binary log begins at the checkpoint"
                );
                binlog_from = read_from;
            }
        }
        // Segments wholly before the checkpoint are covered by it. Those that hold a record
        // from before `definitions_from` go: their records need table definitions the
        // checkpoint does not have (`docs/binlog.md`), so they could not be read as the
        // binary log. The rest stay, for replicas, until they expire or are purged.
        let readable_from = segments
            .map()
            .bounds()
            .into_iter()
            .find(|&(s, len)| s + len > start.definitions_from)
            .map_or(start.definitions_from, |(s, len)| if s >= start.definitions_from { s } else { s + len });
        // Never the parts of a stream whose commit record stays: the binary log reads them
        // back at the commit.
        let bound = keeping_stream_parts(&stream_commits, &segments, read_from.min(readable_from));
        segments.remove_before(bound, None)?;
        prune_stream_commits(&mut stream_commits, segments.first_lsn());
        let recovered = Recovered { start_lsn, end_lsn, records, next_seq, end, preserved, streams_discarded, lost };
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                pending: Vec::new(),
                spare: Vec::new(),
                pending_records: 0,
                next_lsn: end_lsn,
                next_seq,
                written_lsn: end_lsn,
                durable_lsn: end_lsn,
                sync_requested_lsn: end_lsn,
                space_end: segments.end_lsn().unwrap_or(end_lsn).max(end_lsn),
                space_wanted: end_lsn,
                space_error: None,
                writing: false,
                handed_off: false,
                lead_deadline: None,
                busy_until: None,
                shutdown: false,
                failed: false,
            }),
            writer_wake: Condvar::new(),
            space: Condvar::new(),
            written: watch::Sender::new(end_lsn),
            durable: watch::Sender::new(end_lsn),
            mode: AtomicU8::new(config.flush_mode as u8),
            group_delay_us: AtomicU64::new(u64::try_from(config.group_delay.as_micros()).unwrap_or(u64::MAX)),
            group_no_delay_count: AtomicU64::new(config.group_no_delay_count),
            segment_expiry_ms: AtomicU64::new(expiry_ms(config.segment_expiry)),
            recovery_start: AtomicU64::new(read_from),
            stream_commits: Mutex::new(stream_commits),
            binlog_from: AtomicU64::new(binlog_from),
            segments: Mutex::new(segments),
            retained: Mutex::new(std::collections::BTreeMap::new()),
            next_retention: AtomicU64::new(0),
            waiters: AtomicUsize::new(0),
            stats: LogStats::default(),
            config,
        });
        if shared.config.writer == WriterMode::Inline {
            // The first segment exists before anything is appended, as the writer thread
            // would make it at once.
            if !ensure_space(&shared) {
                return Err(io::Error::other("the commit log cannot create its first segment").into());
            }
            return Ok((Log { shared, writer: Mutex::new(None) }, recovered));
        }
        let writer = std::thread::Builder::new().name("quill-log-writer".into()).spawn({
            let shared = Arc::clone(&shared);
            move || {
                // A bug in the writer must stop the server like an I/O error, not leave every
                // commit waiting forever.
                if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| writer_loop(&shared))).is_err() {
                    fail(&shared, "the log writer panicked");
                }
            }
        })?;
        Ok((Log { shared, writer: Mutex::new(Some(writer)) }, recovered))
    }

    /// Appends one committed transaction. Waits while the pending buffer is full, or while
    /// the writer creates the segment the record needs.
    ///
    /// # Errors
    /// The transaction cannot be encoded (too large, no changes), or the disk has no room
    /// for it ([`EncodeError::LogFull`]; see "Space" above); nothing was appended.
    pub fn append(&self, commit_us: u64, changes: &[Change]) -> Result<Appended, EncodeError> {
        self.append_body(commit_us, &Body::of(changes)?)
    }

    /// [`Log::append`] of changes already encoded in `body`.
    ///
    /// # Errors
    /// As [`Log::append`].
    pub fn append_body(&self, commit_us: u64, body: &Body) -> Result<Appended, EncodeError> {
        self.append_leaving(Head::Commit(commit_us), body, DDL_RESERVE_BYTES)
    }

    /// Appends a part of a transaction that has not committed yet (see `docs/log-format.md`,
    /// "Large transactions"): `first` is the LSN of its first part, `None` for the first part
    /// itself. The record has no sequence number; the transaction's commit record, appended
    /// later with [`Log::append_stream_commit`], gets one.
    ///
    /// # Errors
    /// As [`Log::append`].
    pub fn append_part(&self, first: Option<Lsn>, changes: &[Change]) -> Result<Appended, EncodeError> {
        self.append_part_body(first, &Body::of(changes)?)
    }

    /// [`Log::append_part`] of changes already encoded in `body`.
    ///
    /// # Errors
    /// As [`Log::append`].
    pub fn append_part_body(&self, first: Option<Lsn>, body: &Body) -> Result<Appended, EncodeError> {
        self.append_leaving(Head::Part(first), body, DDL_RESERVE_BYTES)
    }

    /// Appends the commit record of the streamed transaction whose first part is at `first`:
    /// its parts count from here on, followed by `changes` (which may be empty).
    ///
    /// # Errors
    /// As [`Log::append`].
    pub fn append_stream_commit(&self, commit_us: u64, first: Lsn, changes: &[Change]) -> Result<Appended, EncodeError> {
        self.append_stream_commit_body(commit_us, first, &Body::of(changes)?)
    }

    /// [`Log::append_stream_commit`] of changes already encoded in `body`.
    ///
    /// # Errors
    /// As [`Log::append`].
    pub fn append_stream_commit_body(&self, commit_us: u64, first: Lsn, body: &Body) -> Result<Appended, EncodeError> {
        self.append_leaving(Head::StreamCommit(commit_us, first), body, DDL_RESERVE_BYTES)
    }

    /// Appends the record that ends the stream whose first part is at `first`, rolled back.
    ///
    /// # Errors
    /// As [`Log::append`].
    pub fn append_abort(&self, first: Lsn) -> Result<Appended, EncodeError> {
        self.append_leaving(Head::Abort(first), &Body::new(), 0)
    }

    /// [`Log::append`] for a DDL record, which may use the space DML leaves it; `replicated`
    /// as [`Body::set_replicated`].
    ///
    /// # Errors
    /// As [`Log::append`].
    pub fn append_ddl(&self, commit_us: u64, changes: &[Change], replicated: bool) -> Result<Appended, EncodeError> {
        let mut body = Body::of(changes)?;
        body.set_replicated(replicated);
        self.append_leaving(Head::Commit(commit_us), &body, 0)
    }

    /// Makes sure a record of `bytes` would find room (DDL asks before it changes the
    /// catalog, holding the lock that orders appends, so nothing takes the room before its
    /// own append): waits while the writer creates the segment, and is false when the disk
    /// has no room for it (or the log stopped).
    #[must_use]
    pub fn wait_for_room(&self, bytes: u64) -> bool {
        let shared = &self.shared;
        let mut state = shared.state.lock();
        loop {
            if state.next_lsn + bytes <= state.space_end {
                return true;
            }
            if state.space_error.is_some() || state.shutdown || state.failed {
                state.space_wanted = state.next_lsn;
                return false;
            }
            state.space_wanted = state.space_wanted.max(state.next_lsn + bytes);
            if self.inline() {
                if !parking_lot::MutexGuard::unlocked(&mut state, || ensure_space(shared)) {
                    return false;
                }
                continue;
            }
            shared.writer_wake.notify_one();
            shared.space.wait(&mut state);
        }
    }

    /// Why commits that need a new segment fail now, if they do.
    #[must_use]
    pub fn space_error(&self) -> Option<String> {
        self.shared.state.lock().space_error.as_ref().map(|(e, _)| e.clone())
    }

    fn append_leaving(&self, head: Head, body: &Body, keep_free: u64) -> Result<Appended, EncodeError> {
        let shared = &self.shared;
        // Checksummed before the lock: under it, the body is only copied.
        let body_crc = crc32c::crc32c(body.bytes());
        let mut state = shared.state.lock();
        let (lsn, seq, before) = loop {
            while state.pending.len() >= shared.config.buffer_bytes_max && !state.failed {
                if self.inline() {
                    parking_lot::MutexGuard::unlocked(&mut state, || write_inline(shared, false));
                    continue;
                }
                shared.space.wait(&mut state);
            }
            if state.shutdown || state.failed {
                return Err(EncodeError::ShuttingDown);
            }
            let (lsn, before) = (state.next_lsn, state.pending.len());
            // Parts and aborts are not transactions of their own: no sequence number.
            let (seq, commit_us, marker) = match head {
                // A replicated transaction is numbered by its source (its GTID), not here.
                Head::Commit(commit_us) => (if body.is_replicated() { 0 } else { state.next_seq }, commit_us, None),
                Head::StreamCommit(commit_us, first) => {
                    (if body.is_replicated() { 0 } else { state.next_seq }, commit_us, Some(Change::StreamCommit { first }))
                }
                Head::Part(first) => (0, 0, Some(Change::StreamPart { first: first.unwrap_or(lsn) })),
                Head::Abort(first) => (0, 0, Some(Change::StreamAbort { first })),
            };
            if let Err(e) = encode_record_body(&mut state.pending, lsn, seq, commit_us, marker.as_ref(), body.bytes(), body_crc) {
                state.pending.truncate(before);
                return Err(e);
            }
            let end = lsn + (state.pending.len() - before) as u64;
            let limit = if state.space_error.is_some() { state.space_end.saturating_sub(keep_free) } else { state.space_end };
            if end <= limit {
                break (lsn, seq, before);
            }
            state.pending.truncate(before);
            if let Some((why, _)) = &state.space_error {
                let why = why.clone();
                // This record is given up: the writer need not keep reaching for its space.
                state.space_wanted = state.next_lsn;
                return Err(EncodeError::LogFull(why));
            }
            // The writer has not created that segment yet: ask for it and wait.
            state.space_wanted = state.space_wanted.max(end);
            if self.inline() {
                if !parking_lot::MutexGuard::unlocked(&mut state, || ensure_space(shared)) {
                    return Err(EncodeError::ShuttingDown);
                }
                continue;
            }
            shared.writer_wake.notify_one();
            shared.space.wait(&mut state);
        };
        let end = lsn + (state.pending.len() - before) as u64;
        if let Head::StreamCommit(_, first) = head {
            shared.stream_commits.lock().insert(lsn, first);
        }
        state.next_lsn = end;
        if seq > 0 {
            state.next_seq += 1;
        }
        state.pending_records += 1;
        match head {
            Head::Commit(_) | Head::StreamCommit(..) => shared.stats.records.fetch_add(1, Ordering::Relaxed),
            Head::Part(first) => {
                if first.is_none() {
                    shared.stats.streams.fetch_add(1, Ordering::Relaxed);
                }
                shared.stats.stream_parts.fetch_add(1, Ordering::Relaxed)
            }
            Head::Abort(_) => 0,
        };
        // In mode 0 the writer acts on its own clock: waking it for every commit would cost a
        // context switch per commit for nothing, unless the buffer is filling up. Mode 1: see
        // step 2 of the module doc.
        let wake = match self.flush_mode() {
            FlushMode::EverySecond => state.pending.len() >= shared.config.buffer_bytes_max / 2,
            // The group in flight hands the record on when it is done; with nobody else
            // waiting, the appender leads; otherwise the writer takes it with the others.
            FlushMode::AtCommit if state.writing => false,
            FlushMode::AtCommit
                if leads(shared, &state) && shared.waiters.load(Ordering::Relaxed) == 0 && state.busy_until.is_none_or(|t| Instant::now() >= t) =>
            {
                false
            }
            FlushMode::AtCommit => {
                state.handed_off = true;
                true
            }
            FlushMode::WriteAtCommit => true,
        };
        drop(state);
        if wake {
            shared.writer_wake.notify_one();
        }
        Ok(Appended { lsn, end, seq })
    }

    /// Waits until the record ending at `end` is as safe as `mode` promises before the
    /// client is answered: durable (1), written to the OS (2), or nothing (0). Waiting in
    /// mode 1 while the log runs in mode 0 or 2 makes the writer sync now (DDL is durable
    /// at commit in every mode).
    pub async fn wait(&self, end: Lsn, mode: FlushMode) {
        if self.inline() {
            match mode {
                FlushMode::EverySecond => {}
                FlushMode::WriteAtCommit => write_inline(&self.shared, self.flush_mode() == FlushMode::AtCommit),
                FlushMode::AtCommit => write_inline(&self.shared, true),
            }
            return;
        }
        if mode == FlushMode::AtCommit && self.flush_mode() == FlushMode::AtCommit {
            self.lead(end);
        }
        if mode == FlushMode::AtCommit && self.flush_mode() != FlushMode::AtCommit {
            let mut state = self.shared.state.lock();
            state.sync_requested_lsn = state.sync_requested_lsn.max(end);
            drop(state);
            self.shared.writer_wake.notify_one();
        }
        let sender = match mode {
            FlushMode::EverySecond => return,
            FlushMode::WriteAtCommit => &self.shared.written,
            FlushMode::AtCommit => &self.shared.durable,
        };
        let _waiting = Waiting::new(&self.shared.waiters);
        // No polling: the task parks on the watch channel, and the writer's `send` after the
        // write or sync wakes every session whose record it covered.
        let mut receiver = sender.subscribe();
        // The sender lives as long as `self`, so this only ends when the LSN is reached.
        let _ = receiver.wait_for(|&lsn| lsn >= end).await;
    }

    /// Leads a group (see step 2 of the module doc) when the record ending at `end` is not
    /// durable yet and no group is in flight: takes what is pending, writes and syncs it off
    /// the runtime's worker (`block_in_place`), and publishes it. Does nothing otherwise: the
    /// group in flight, or the writer thread, covers the record.
    fn lead(&self, end: Lsn) {
        let shared = &*self.shared;
        let group = {
            let mut state = shared.state.lock();
            if state.durable_lsn >= end || !leads(shared, &state) || state.handed_off || state.pending.is_empty() {
                return;
            }
            take_group(shared, &mut state, true)
        };
        shared.space.notify_all();
        let multi_thread = tokio::runtime::Handle::try_current().is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
        let written = if multi_thread { tokio::task::block_in_place(|| write_group(shared, &group)) } else { write_group(shared, &group) };
        if let Err(e) = written {
            fail(shared, &format!("{e}"));
            return;
        }
        shared.stats.groups_led.fetch_add(1, Ordering::Relaxed);
        let handoff = publish_group(shared, group);
        if handoff {
            shared.writer_wake.notify_one();
        }
    }

    /// Makes the log durable up to `end` whatever the flush mode, forcing a write and a sync
    /// in modes 0 and 2, and blocks the calling thread until it is: a checkpoint of position
    /// `end` is published only after this returns `Ok` (see "Checkpoints" in the module doc).
    ///
    /// # Errors
    /// The log stopped (an I/O error, or shutdown) before it was durable up to `end`.
    pub fn make_durable(&self, end: Lsn) -> io::Result<()> {
        let shared = &*self.shared;
        {
            let mut state = shared.state.lock();
            assert!(end <= state.next_lsn, "make_durable({end}) past the log's end {}", state.next_lsn);
            if state.durable_lsn >= end {
                return Ok(());
            }
            state.sync_requested_lsn = state.sync_requested_lsn.max(end);
        }
        if self.inline() {
            write_inline(shared, true);
        } else if self.flush_mode() == FlushMode::AtCommit {
            self.lead(end);
        }
        let mut receiver = shared.durable.subscribe();
        while *receiver.borrow_and_update() < end {
            let state = shared.state.lock();
            if state.failed || (state.shutdown && self.writer.lock().is_none()) {
                return Err(io::Error::other(format!("the commit log stopped before LSN {end} was durable")));
            }
            drop(state);
            shared.writer_wake.notify_one();
            std::thread::sleep(Duration::from_millis(1));
        }
        Ok(())
    }

    /// The writer's clock, in [`WriterMode::Inline`]: what the writer thread does once per
    /// [`LogConfig::sync_interval`] (write what is pending and sync, in modes 0 and 2; in
    /// mode 1, write and sync a stream's parts no commit has waited for yet). Does nothing
    /// with a writer thread, which keeps its own clock.
    pub fn tick(&self) {
        if self.inline() {
            write_inline(&self.shared, true);
        }
    }

    fn inline(&self) -> bool {
        self.shared.config.writer == WriterMode::Inline
    }

    /// Blocks the calling thread until the record ending at `end` is durable (tests and
    /// shutdown; sessions use [`Log::wait`]).
    pub fn wait_durable_blocking(&self, end: Lsn) {
        if self.inline() {
            write_inline(&self.shared, true);
        }
        if self.flush_mode() == FlushMode::AtCommit {
            self.lead(end);
        }
        let mut receiver = self.shared.durable.subscribe();
        while *receiver.borrow_and_update() < end {
            self.shared.writer_wake.notify_one();
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[must_use]
    pub fn flush_mode(&self) -> FlushMode {
        FlushMode::from_value(self.shared.mode.load(Ordering::Relaxed)).expect("only valid modes are stored")
    }

    /// Takes effect for the next commit and the writer's next decision.
    pub fn set_flush_mode(&self, mode: FlushMode) {
        self.shared.mode.store(mode as u8, Ordering::Relaxed);
        self.shared.writer_wake.notify_one();
    }

    pub fn set_group_delay(&self, delay: Duration, no_delay_count: u64) {
        self.shared.group_delay_us.store(u64::try_from(delay.as_micros()).unwrap_or(u64::MAX), Ordering::Relaxed);
        self.shared.group_no_delay_count.store(no_delay_count, Ordering::Relaxed);
    }

    #[must_use]
    pub fn stats(&self) -> &LogStats {
        &self.shared.stats
    }

    /// The LSN just past the last durable record.
    #[must_use]
    pub fn durable_lsn(&self) -> Lsn {
        *self.shared.durable.borrow()
    }

    /// Where the binary log begins: the first record at or after this LSN. Records before
    /// it that the oldest segment still holds (a segment is removed whole, and the one being
    /// written never) were logged before the newest DDL statement the checkpoint recovery
    /// started from covers; the server no longer knows their tables' definitions, so they
    /// cannot be read as binary log events (`docs/binlog.md`).
    #[must_use]
    pub fn binlog_from(&self) -> Lsn {
        self.shared.binlog_from.load(Ordering::Relaxed)
    }

    /// The streamed transactions committed before `lsn` whose commit records the log still
    /// holds, as (commit record LSN, first part LSN): a checkpoint keeps those before its
    /// `read_from` (recovery reads the rest), so a restart keeps their parts' segments too.
    #[must_use]
    pub fn stream_commits_before(&self, lsn: Lsn) -> Vec<(Lsn, Lsn)> {
        self.shared.stream_commits.lock().range(..lsn).map(|(&commit, &first)| (commit, first)).collect()
    }

    /// The LSN the next record gets, and its sequence number.
    #[must_use]
    pub fn next_position(&self) -> (Lsn, u64) {
        let state = self.shared.state.lock();
        (state.next_lsn, state.next_seq)
    }

    /// Removes segments wholly before `lsn`, which a complete checkpoint covers.
    ///
    /// # Errors
    /// I/O errors.
    pub fn remove_segments_before(&self, lsn: Lsn) -> io::Result<usize> {
        self.shared.recovery_start.fetch_max(lsn, Ordering::AcqRel);
        let expiry = self.shared.segment_expiry_ms.load(Ordering::Relaxed);
        match expiry_cutoff((expiry != EXPIRY_NEVER).then(|| Duration::from_millis(expiry))) {
            Some(cutoff) => self.purge_segments_before(lsn, Some(cutoff)),
            None => Ok(0),
        }
    }

    /// `PURGE BINARY LOGS`: removes the oldest segments wholly before `lsn` (and, with
    /// `written_before`, last written before it), but none recovery still reads (from the
    /// newest checkpoint on), none not yet durable, and none a reader still needs
    /// (`LogTail::retain`). Returns how many went.
    ///
    /// # Errors
    /// I/O errors.
    pub fn purge_segments_before(&self, lsn: Lsn, written_before: Option<SystemTime>) -> io::Result<usize> {
        // Never past what the writer has made durable: a checkpoint's position may still be
        // pending (modes 0 and 2), and the writer must find its segments where it left them.
        // The claims stay locked while segments go, so a reader claiming one meanwhile
        // either keeps it or finds it gone, never has it removed under its claim.
        let retained = self.shared.retained.lock();
        let floor = retained.values().copied().min().unwrap_or(Lsn::MAX);
        let bound = lsn.min(self.durable_lsn()).min(floor).min(self.shared.recovery_start.load(Ordering::Acquire));
        let mut stream_commits = self.shared.stream_commits.lock();
        let mut segments = self.shared.segments.lock();
        let bound = keeping_stream_parts(&stream_commits, &segments, bound);
        let removed = segments.remove_before(bound, written_before);
        prune_stream_commits(&mut stream_commits, segments.first_lsn());
        drop(segments);
        drop(stream_commits);
        drop(retained);
        removed
    }

    /// `SET GLOBAL binlog_expire_logs_seconds` ([`LogConfig::segment_expiry`]); acted on at
    /// the next checkpoint.
    pub fn set_segment_expiry(&self, expiry: Option<Duration>) {
        self.shared.segment_expiry_ms.store(expiry_ms(expiry), Ordering::Relaxed);
    }

    /// Writes and syncs everything pending, then stops the writer.
    pub fn shutdown(&self) {
        if self.inline() && !self.shared.state.lock().shutdown {
            write_inline(&self.shared, true);
        }
        self.shared.state.lock().shutdown = true;
        self.shared.writer_wake.notify_one();
        if let Some(writer) = self.writer.lock().take() {
            let _ = writer.join(); // a panic was reported through on_failure already
        }
    }
}

impl Drop for Log {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Counts a session in [`Shared::waiters`] while it exists (a dropped wait counts out too).
struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    fn new(waiters: &'a AtomicUsize) -> Waiting<'a> {
        waiters.fetch_add(1, Ordering::Relaxed);
        Waiting(waiters)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// One batch of work for the writer: bytes to write at `start`, and whether to sync.
struct Group {
    bytes: Vec<u8>,
    start: Lsn,
    sync: bool,
    /// Commit records in it (0 when a group was cut from a longer pending run).
    records: u64,
}

fn writer_loop(shared: &Shared) {
    let mut last_sync = Instant::now();
    loop {
        if !ensure_space(shared) {
            return;
        }
        let group = match next_group(shared, last_sync) {
            Next::Group(group) => group,
            Next::Space => continue,
            Next::Stop => return,
        };
        if let Err(e) = write_group(shared, &group) {
            fail(shared, &format!("{e}"));
            return;
        }
        if group.sync {
            last_sync = Instant::now();
        }
        publish_group(shared, group);
    }
}

/// How far segments may be removed when `bound` is asked (segments ending at or before it
/// go): below the first part of every stream whose commit record stays (it lies in a
/// segment ending after the bound), until no such stream reaches lower.
fn keeping_stream_parts(stream_commits: &std::collections::BTreeMap<Lsn, Lsn>, segments: &Segments, mut bound: Lsn) -> Lsn {
    loop {
        let kept_from = segments.map().bounds().into_iter().find(|&(start, len)| start + len > bound).map_or(bound, |(start, _)| start.min(bound));
        match stream_commits.range(kept_from..).map(|(_, &first)| first).min() {
            Some(first) if first < bound => bound = first,
            _ => return bound,
        }
    }
}

/// Forgets the streams whose commit record went with the removed segments.
fn prune_stream_commits(stream_commits: &mut std::collections::BTreeMap<Lsn, Lsn>, oldest_segment: Option<Lsn>) {
    match oldest_segment {
        Some(oldest) => stream_commits.retain(|&commit, _| commit >= oldest),
        None => stream_commits.clear(),
    }
}

/// The writer's work done by the caller, in [`WriterMode::Inline`]: creates the segments
/// due, then writes everything pending, group by group, syncing each when `sync` (and
/// syncing what earlier calls wrote). A failure is fail-stop, as in the writer thread.
fn write_inline(shared: &Shared, sync: bool) {
    if !ensure_space(shared) {
        return;
    }
    loop {
        let group = {
            let mut state = shared.state.lock();
            let unsynced = state.written_lsn > state.durable_lsn;
            if state.failed || state.writing || (state.pending.is_empty() && !(sync && unsynced)) {
                return;
            }
            take_group(shared, &mut state, sync)
        };
        if let Err(e) = write_group(shared, &group) {
            fail(shared, &format!("{e}"));
            return;
        }
        publish_group(shared, group);
    }
}

/// Whether, in mode 1, the committing session leads its group (see step 2 of the module doc):
/// no group is in flight, no group delay is set, the log is running, and no segment is due.
/// When one is (see "Space"), the writer thread creates it before it writes the group, so
/// the space ahead of the appends, and a full disk, are found as early as ever.
fn leads(shared: &Shared, state: &State) -> bool {
    !state.writing && !state.shutdown && !state.failed && shared.group_delay_us.load(Ordering::Relaxed) == 0 && !space_due(shared, state, Instant::now())
}

/// Takes the next group: up to [`LogConfig::group_bytes_max`] of what is pending, written at
/// the written LSN. Marks it in flight; [`publish_group`] ends that.
fn take_group(shared: &Shared, state: &mut State, sync: bool) -> Group {
    debug_assert!(!state.writing, "one group in flight at a time");
    let take = state.pending.len().min(shared.config.group_bytes_max);
    let records = if take == state.pending.len() { state.pending_records } else { 0 };
    let bytes = if take == state.pending.len() {
        let spare = std::mem::take(&mut state.spare);
        std::mem::replace(&mut state.pending, spare)
    } else {
        state.pending.drain(..take).collect()
    };
    if state.pending_records > 1 {
        state.busy_until = Some(Instant::now() + BUSY_HOLD);
    }
    if state.pending.is_empty() {
        state.pending_records = 0;
    }
    state.writing = true;
    state.handed_off = false;
    state.lead_deadline = None;
    Group { bytes, start: state.written_lsn, sync, records }
}

/// Publishes a group that was written (and synced, if it says so): moves the written and
/// durable LSNs, wakes the sessions waiting for them, and ends the group's flight. True when
/// the writer thread has work left (more pending, segments due, or shutdown).
fn publish_group(shared: &Shared, group: Group) -> bool {
    let end = group.start + group.bytes.len() as u64;
    let mut bytes = group.bytes;
    bytes.clear();
    let mut state = shared.state.lock();
    if bytes.capacity() <= shared.config.buffer_bytes_max && bytes.capacity() > state.spare.capacity() {
        state.spare = bytes;
    }
    state.written_lsn = end;
    if group.sync {
        state.durable_lsn = end;
    }
    state.writing = false;
    state.handed_off |= !state.pending.is_empty();
    let handoff = state.handed_off || state.shutdown || space_due(shared, &state, Instant::now());
    drop(state);
    // Two groups may publish out of order once the first has left the lock: never move back.
    shared.written.send_if_modified(|lsn| std::mem::replace(lsn, (*lsn).max(end)) < end);
    if group.sync {
        shared.durable.send_if_modified(|lsn| std::mem::replace(lsn, (*lsn).max(end)) < end);
    }
    handoff
}

/// Whether the writer should create segments now: the space left beyond what is appended
/// (or wanted) is under half a segment, and it is not waiting out a full disk.
fn space_due(shared: &Shared, state: &State, now: Instant) -> bool {
    let needed = state.next_lsn.max(state.space_wanted) + shared.config.segment_bytes / 2;
    state.space_end < needed && state.space_error.as_ref().is_none_or(|(_, retry_at)| now >= *retry_at)
}

/// Creates segments until half a segment of space lies ahead of the appends (see "Space").
/// Out of space, it records why (appenders that need more fail) and leaves it for the next
/// retry. `false` after any other I/O error, which is fatal.
fn ensure_space(shared: &Shared) -> bool {
    loop {
        let mut state = shared.state.lock();
        if !space_due(shared, &state, Instant::now()) {
            return true;
        }
        let start = state.space_end;
        drop(state);
        let created = shared.segments.lock().prepare_next(start);
        state = shared.state.lock();
        match created {
            Ok(end) => {
                state.space_end = end;
                if state.space_error.take().is_some() {
                    tracing::info!(space_end = end, "commit log: segments can be created again; commits resume");
                }
            }
            Err(e) if crate::segments::is_out_of_space(&e) => {
                if state.space_error.is_none() {
                    tracing::warn!(error = %e, space_end = state.space_end, "commit log: no room for a new segment; commits that need one fail until space returns");
                }
                state.space_error = Some((e.to_string(), Instant::now() + SPACE_RETRY_INTERVAL));
            }
            Err(e) => {
                drop(state);
                fail(shared, &format!("creating a log segment: {e}"));
                return false;
            }
        }
        drop(state);
        shared.space.notify_all();
    }
}

/// Fail-stop: nothing more becomes durable, appenders stop waiting for space, and the hook
/// (by default, abort the process) runs.
fn fail(shared: &Shared, message: &str) {
    shared.state.lock().failed = true;
    shared.space.notify_all();
    (shared.config.on_failure)(message);
}

fn write_group(shared: &Shared, group: &Group) -> io::Result<()> {
    let mut segments = shared.segments.lock();
    if !group.bytes.is_empty() {
        segments.write_at(group.start, &group.bytes)?;
        shared.stats.groups.fetch_add(1, Ordering::Relaxed);
        shared.stats.bytes_written.fetch_add(group.bytes.len() as u64, Ordering::Relaxed);
        if group.records > 0 {
            shared.stats.group_records.observe(group.records);
        }
    }
    if group.sync {
        let syncs = segments.sync()?;
        shared.stats.fsyncs.fetch_add(syncs, Ordering::Relaxed);
    }
    Ok(())
}

/// What the writer does next.
enum Next {
    Group(Group),
    /// Create segments (see [`ensure_space`]).
    Space,
    /// Shut down with nothing left to write.
    Stop,
}

/// Waits for work and takes the next group.
fn next_group(shared: &Shared, last_sync: Instant) -> Next {
    let interval = shared.config.sync_interval;
    let mut state = shared.state.lock();
    loop {
        if state.failed {
            return Next::Stop;
        }
        if state.writing {
            // A leading session has a group in flight; it wakes us when it is done.
            shared.writer_wake.wait_for(&mut state, LEAD_GRACE);
            continue;
        }
        let mode = FlushMode::from_value(shared.mode.load(Ordering::Relaxed)).expect("valid mode");
        let interval_over = last_sync.elapsed() >= interval;
        let has_pending = !state.pending.is_empty();
        // A waiter needs a sync now whatever the mode (see Log::wait).
        let forced = state.sync_requested_lsn > state.durable_lsn;
        let write_now = has_pending
            && (mode != FlushMode::EverySecond || interval_over || forced || state.shutdown || state.pending.len() >= shared.config.buffer_bytes_max / 2);
        let unsynced = state.written_lsn > state.durable_lsn;
        let sync_now = unsynced && (interval_over || forced || state.shutdown || mode == FlushMode::AtCommit);
        if write_now || sync_now {
            if write_now && mode == FlushMode::AtCommit {
                if leads(shared, &state) && !state.handed_off && state.pending.len() < shared.config.group_bytes_max {
                    // The session that appended leads its own group (see `Log::wait`); this
                    // is only the fallback for one that does not, after LEAD_GRACE.
                    let deadline = *state.lead_deadline.get_or_insert_with(|| Instant::now() + LEAD_GRACE);
                    if Instant::now() < deadline {
                        shared.writer_wake.wait_until(&mut state, deadline);
                        continue;
                    }
                }
                wait_for_group_delay(shared, &mut state);
            }
            let all_taken = state.pending.len() <= shared.config.group_bytes_max;
            // Mode 1 syncs every group; modes 0 and 2 sync when the interval is over, and at shutdown.
            let sync = mode == FlushMode::AtCommit || interval_over || forced || (state.shutdown && all_taken);
            let group = take_group(shared, &mut state, sync);
            drop(state);
            shared.space.notify_all();
            return Next::Group(group);
        }
        if state.shutdown {
            // An appender waiting for space must not wait for a writer that has stopped.
            drop(state);
            shared.space.notify_all();
            return Next::Stop;
        }
        if space_due(shared, &state, Instant::now()) {
            return Next::Space;
        }
        // Nothing to write or sync: sleep until an append wakes us. Otherwise until the interval ends.
        let timeout = if has_pending || unsynced { interval.saturating_sub(last_sync.elapsed()).max(Duration::from_millis(1)) } else { interval };
        // Out of space: wake for the retry too.
        let timeout = match &state.space_error {
            Some((_, retry_at)) => timeout.min(retry_at.saturating_duration_since(Instant::now()).max(Duration::from_millis(1))),
            None => timeout,
        };
        shared.writer_wake.wait_for(&mut state, timeout);
    }
}

/// `binlog_group_commit_sync_delay`: lets more records join the group, up to the delay or
/// until `binlog_group_commit_sync_no_delay_count` records are pending.
fn wait_for_group_delay(shared: &Shared, state: &mut parking_lot::MutexGuard<'_, State>) {
    let delay = Duration::from_micros(shared.group_delay_us.load(Ordering::Relaxed));
    if delay.is_zero() {
        return;
    }
    let count = shared.group_no_delay_count.load(Ordering::Relaxed);
    let deadline = Instant::now() + delay;
    while (count == 0 || state.pending_records < count) && !state.shutdown {
        if shared.writer_wake.wait_until(state, deadline).timed_out() {
            break;
        }
    }
}
