//! The binary log a replica reads: virtual files over the commit log, and the dump that
//! streams them (`docs/binlog.md`, "Files and positions").
//!
//! Quill writes no binlog file. Each commit log segment is one virtual binary log file,
//! named from where the segment starts (`quill-bin.` and `start / SEGMENT_BYTES_MIN + 1`, at
//! least six digits: segments are at least that long, so names are unique and ascending).
//! A file holds, after the 4-byte magic, a FORMAT_DESCRIPTION and a PREVIOUS_GTIDS event,
//! the transactions whose commit record starts in the segment, and, once the log has moved
//! past the segment, a ROTATE to the next file. Positions are byte offsets in that file,
//! so a position is a pure function of the log: events are made from the records with each
//! table's definition as of its record (`quill_sql::schema_history`), and a file's first
//! record is found from the log alone (`LogTail::first_record_from`), so the same file and
//! position mean the same transaction after a restart.
//!
//! A [`Dump`] is one replica's stream: it opens at a file and position (or where a GTID set
//! ends), then hands out events up to the durable end of the log; the server waits on the
//! log's durable LSN between calls. Reaching a mid-file position translates the file's
//! transactions before it (at most one segment's worth) and discards them.
//!
//! A dump keeps the segments it still reads (its file's and those of streams it follows)
//! from being removed by checkpoints (`quill_log::Retention`), so a connected replica never
//! finds its next events gone; the claim goes when the dump ends.
//!
//! Transactions this server applied as a replica (commit records numbered 0, their GTID in
//! an ORIGIN change) are in its binary log with the GTID they came with, so replicas of a
//! replica form chains (`log_replica_updates`, ON by default as in MySQL 8). With it OFF, or
//! for records logged before ORIGIN changes existed, they are not. A file's PREVIOUS_GTIDS
//! names this server's own transactions only (replicas read GTIDs from the GTID events).
//!
//! A GTID dump skips every transaction the replica has. It starts at the first file that
//! holds one it lacks: found by sequence number for this server's own transactions, and,
//! when the replica lacks some of the transactions this server applied from sources, by
//! reading the retained log's ORIGIN changes from the oldest file
//! ([`first_file_with_origin`]); a lacking GTID that is in no retained file was purged (1236).
//!
//! Bounds: one transaction's events are held in memory at a time (a replica needs the
//! transaction's length first); [`Dump::fill`] stops after [`FILL_BYTES_MAX`].

use std::collections::HashMap;
use std::io;
use std::sync::Arc;

use quill_log::{Log, LogTail, Lsn, Retention, SEGMENT_BYTES_MIN, TransactionCursor};
use quill_protocol::binlog::{
    EventHeader, FLAG_ARTIFICIAL, GtidSet, event, event_at, event_type, format_description_body, heartbeat_body, previous_gtids_body, rotate_body,
};
use quill_sql::Engine;

use crate::events::{Source, Transaction, TranslateError, transaction};
use crate::gtid;

/// The base name of the virtual binary log files.
pub const FILE_BASENAME: &str = "quill-bin";
/// What every binary log file starts with.
pub const MAGIC: [u8; 4] = [0xfe, b'b', b'i', b'n'];
/// The position of a file's first event, just past [`MAGIC`].
pub const FIRST_EVENT_POSITION: u64 = MAGIC.len() as u64;
/// Bytes of events [`Dump::fill`] adds at most per call (a transaction's are never split).
pub const FILL_BYTES_MAX: usize = 1 << 20;

/// The name of the virtual file over the segment starting at `segment_start`.
#[must_use]
pub fn file_name(segment_start: Lsn) -> String {
    format!("{FILE_BASENAME}.{:06}", segment_start / SEGMENT_BYTES_MIN + 1)
}

/// The segment start a file name names, if it is one of ours.
#[must_use]
pub fn file_start(name: &str) -> Option<Lsn> {
    let number: u64 = name.strip_prefix(FILE_BASENAME)?.strip_prefix('.')?.parse().ok()?;
    number.checked_sub(1)?.checked_mul(SEGMENT_BYTES_MIN)
}

/// Why a dump cannot start or go on: each is error 1236 to the replica, with MySQL's text.
#[derive(Debug, thiserror::Error)]
pub enum DumpError {
    #[error("Could not find first log file name in binary log index file")]
    NoSuchFile,
    #[error(
        "Client requested source to start replication from impossible position; the first event '{0}' at {1}, the last event read from '{0}' at {2}, the last byte read from '{0}' at {2}."
    )]
    ImpossiblePosition(String, u64, u64),
    #[error("Client requested source to start replication from position > file size")]
    PastEnd,
    #[error(
        "Cannot replicate because the source purged required binary logs. Replicate the missing transactions from elsewhere, or provision a new replica from backup."
    )]
    Purged,
    #[error(
        "Slave has more GTIDs than the master has, using the master's SERVER_UUID. This may indicate that the end of the binary log was truncated or that the last binary log file was lost, e.g., after a power or disk failure when sync_binlog != 1. The master may or may not have rolled back transactions that were already replicated to the slave. Suggest to replicate any transactions that master has rolled back from slave to master, and/or commit empty transactions on master to account for transactions that have been committed on master but are not included in GTID_EXECUTED."
    )]
    ReplicaAhead,
    #[error("binary log read error: {0}")]
    Io(#[from] io::Error),
    #[error("binary log read error: {0}")]
    Translate(#[from] TranslateError),
}

/// What the dump streams from: the engine (log and table history) and who the server is.
#[derive(Clone)]
pub struct Origin {
    pub engine: Arc<Engine>,
    pub source: Source,
    /// `SELECT VERSION()`, as the format description carries it.
    pub version: String,
}

impl Origin {
    /// The server's identity as its binary log names it (`server_id`, `server_uuid`, its
    /// version and collations); `None` without a commit log.
    #[must_use]
    pub fn of(engine: &Arc<Engine>) -> Option<Origin> {
        let engine = Arc::clone(engine);
        engine.log.get()?;
        let server_id = engine.global("server_id").and_then(|v| v.parse().ok()).unwrap_or(1);
        let uuid = quill_sql::server_uuid::uuid_bytes(&engine.global("server_uuid").unwrap_or_default()).unwrap_or_default();
        let version = quill_sql::SERVER_VERSION.to_owned();
        let server_version = version_number(&version);
        let collation = |name: &str| engine.global(name).and_then(|c| quill_storage::Collation::from_name(&c)).map_or(255, |c| c.id());
        let charsets = [collation("collation_connection"), collation("collation_connection"), collation("collation_server")];
        Some(Origin { engine, source: Source { server_id, uuid, server_version, charsets }, version })
    }

    fn log(&self) -> &Log {
        self.engine.log.get().expect("a server that streams its binary log has a commit log")
    }

    /// Whether transactions applied from sources are in the binary log (`log_replica_updates`).
    fn logs_replica_updates(&self) -> bool {
        self.engine.global("log_replica_updates").is_none_or(|v| v == "ON" || v == "1")
    }

    /// The GTIDs this server applied from sources (`mysql.gtid_executed`), by source UUID.
    fn replicated(&self) -> HashMap<[u8; 16], Vec<(u64, u64)>> {
        let text = self.engine.replica.get().map(|r| r.executed()).unwrap_or_default();
        gtid::parse(&text).into_iter().filter_map(|(uuid, intervals)| Some((quill_sql::server_uuid::uuid_bytes(&uuid)?, intervals))).collect()
    }

    /// The segment starting at `start`: its end.
    fn segment_end(&self, start: Lsn) -> Option<Lsn> {
        self.log().segment_bounds().into_iter().find(|&(s, _)| s == start).map(|(s, len)| s + len)
    }

    /// Bytes of a file's FORMAT_DESCRIPTION and PREVIOUS_GTIDS events, for `previous` GTIDs.
    fn header_events(&self, out: &mut Vec<u8>, position: &mut u64, previous: u64, artificial: bool) {
        let header = EventHeader { timestamp: 0, server_id: self.source.server_id, log_pos: 0, flags: 0 };
        if artificial {
            // A dump that starts inside a file gets the format description with no position,
            // so the replica's position does not move (MySQL's Binlog_sender does the same).
            event(out, &header, event_type::FORMAT_DESCRIPTION, |b| format_description_body(b, &self.version, 0));
            return;
        }
        event_at(out, &header, position, event_type::FORMAT_DESCRIPTION, |b| format_description_body(b, &self.version, 0));
        let intervals = [(1, previous + 1)];
        let set: GtidSet<'_> = if previous == 0 { &[] } else { &[(self.source.uuid, &intervals)] };
        event_at(out, &header, position, event_type::PREVIOUS_GTIDS, |b| previous_gtids_body(b, set));
    }

    /// Where a file's first transaction starts.
    fn first_transaction_position(&self, previous: u64) -> u64 {
        let mut position = FIRST_EVENT_POSITION;
        self.header_events(&mut Vec::new(), &mut position, previous, false);
        position
    }

    /// The events of `tx`, the file's `ordinal`th transaction, starting at `*position`.
    fn translate(&self, out: &mut Vec<u8>, tx: &quill_log::Transaction, ordinal: u64, position: &mut u64) -> Result<(), TranslateError> {
        let schemas = &self.engine.schemas;
        let tables = |db: &str, name: &str| schemas.lock().table_at(db, name, tx.lsn);
        let t = Transaction { seq: tx.seq, commit_us: tx.commit_us, changes: &tx.changes, ordinal };
        transaction(out, &self.source, &tables, &t, position)
    }

    /// The GTID a logged transaction has in the binary log: this server's own, or the one it
    /// came with; `None` when it is not in the binary log (applied from a source before
    /// ORIGIN changes, or with `log_replica_updates` OFF).
    fn gtid_of(&self, tx: &quill_log::Transaction, replica_updates: bool) -> Option<([u8; 16], u64)> {
        if tx.seq > 0 {
            return Some((self.source.uuid, tx.seq));
        }
        match tx.changes.last() {
            Some(quill_log::Change::Origin(o)) if replica_updates => Some((o.uuid, o.gno)),
            _ => None,
        }
    }
}

/// `major * 10000 + minor * 100 + patch` of a version string.
fn version_number(version: &str) -> u32 {
    let mut parts = version.split(|c: char| !c.is_ascii_digit()).filter(|p| !p.is_empty()).map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor, patch) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    major * 10000 + minor * 100 + patch
}

/// One source UUID's intervals `start..end` (end excluded) in a `COM_BINLOG_DUMP_GTID`.
pub type RequestedSet = ([u8; 16], Vec<(u64, u64)>);

/// The GTIDs a replica has, as its `COM_BINLOG_DUMP_GTID` names them: intervals
/// `start..end` (end excluded) by source UUID.
#[derive(Debug, Default, Clone)]
pub struct ReplicaHas {
    sets: HashMap<[u8; 16], Vec<(u64, u64)>>,
}

impl ReplicaHas {
    #[must_use]
    pub fn new(set: &[RequestedSet]) -> ReplicaHas {
        let mut sets: HashMap<[u8; 16], Vec<(u64, u64)>> = HashMap::new();
        for (uuid, intervals) in set {
            sets.entry(*uuid).or_default().extend(intervals.iter().copied());
        }
        ReplicaHas { sets }
    }

    #[must_use]
    pub fn contains(&self, uuid: &[u8; 16], gno: u64) -> bool {
        self.sets.get(uuid).is_some_and(|i| i.iter().any(|&(s, e)| s <= gno && gno < e))
    }

    /// Of `set` (inclusive intervals), the GTIDs the replica lacks, counted per UUID.
    fn lacking(&self, set: &HashMap<[u8; 16], Vec<(u64, u64)>>) -> HashMap<[u8; 16], Vec<(u64, u64)>> {
        let mut lacking = HashMap::new();
        for (uuid, intervals) in set {
            // What the replica has is `s..e`, end excluded.
            let have = self.sets.get(uuid).into_iter().flatten().filter(|&&(s, e)| s < e).map(|&(s, e)| (s, e - 1));
            let missing = gtid::minus(intervals, have);
            if !missing.is_empty() {
                lacking.insert(*uuid, missing);
            }
        }
        lacking
    }
}

/// Of `lacking` (transactions applied from sources that a replica lacks), the first
/// retained file holding one, read from the oldest file's ORIGIN changes; `None` when none
/// is in the retained log, and [`DumpError::Purged`] when only some are (the rest went with
/// purged files, or were applied before ORIGIN changes were logged).
fn first_file_with_origin(origin: &Origin, tail: &mut LogTail, lacking: &HashMap<[u8; 16], Vec<(u64, u64)>>) -> Result<Option<Lsn>, DumpError> {
    let wanted: u64 = lacking.values().flatten().map(|&(s, e)| e - s + 1).sum();
    let segments = origin.log().segment_bounds();
    let (mut found, mut first) = (0, None);
    retained_origins(origin, tail, |o, lsn| {
        if lacking.get(&o.uuid).is_some_and(|i| i.iter().any(|&(s, e)| s <= o.gno && o.gno <= e)) {
            found += 1;
            first = first.or_else(|| segments.iter().rev().find(|&&(s, _)| s <= lsn).map(|&(s, _)| s));
        }
    })?;
    if found < wanted {
        return Err(DumpError::Purged);
    }
    Ok(first)
}

/// Where a virtual file's transactions begin: the first record in its segment (or, when none
/// starts there yet, the durable end), and the GTIDs before it.
struct FileStart {
    boundary: Lsn,
    previous: u64,
}

fn file_begin(origin: &Origin, tail: &mut LogTail, start: Lsn) -> io::Result<FileStart> {
    let durable = tail.durable_lsn();
    // No record starting in the segment (one runs across it whole) leaves the file empty: its
    // cursor starts at the first record after it, or where the next will be written.
    // The oldest file may hold records from before where the binary log begins.
    let from = start.max(origin.log().binlog_from());
    let boundary = tail.first_record_from(from, durable)?.unwrap_or(durable.max(from));
    let mut cursor = TransactionCursor::new(boundary);
    let previous = loop {
        match cursor.next(tail, durable)? {
            Some(tx) if tx.seq == 0 => {}
            Some(tx) => break tx.seq - 1,
            // Nothing committed since: the GTIDs before it are every one so far.
            None => break origin.log().next_position().1 - 1,
        }
    };
    Ok(FileStart { boundary, previous })
}

/// The last of this server's own transactions no longer in the binary log (its GTIDs
/// `uuid:1-N` are `gtid_purged`): those before the oldest file. 0 when none went.
///
/// # Errors
/// I/O errors reading the oldest file.
pub fn purged_through(origin: &Origin) -> io::Result<u64> {
    let mut tail = origin.log().tail();
    let _retention = tail.retain(0);
    let Some(&(first, _)) = origin.log().segment_bounds().first() else { return Ok(origin.log().next_position().1 - 1) };
    Ok(file_begin(origin, &mut tail, first)?.previous)
}

/// The GTIDs of the transactions applied from sources that the retained binary log holds,
/// read from the oldest file's ORIGIN changes on (none with `log_replica_updates` OFF).
///
/// # Errors
/// I/O errors reading the log.
pub fn replicated_in_log(origin: &Origin) -> io::Result<gtid::GtidSet> {
    let mut set = gtid::GtidSet::new();
    if !origin.logs_replica_updates() {
        return Ok(set);
    }
    let mut tail = origin.log().tail();
    let _retention = tail.retain(0);
    retained_origins(origin, &mut tail, |o, _| gtid::add_gtid(&mut set, &gtid::uuid_text(o.uuid), o.gno))?;
    Ok(set)
}

/// Hands `each` the ORIGIN of every transaction applied from a source that the retained log
/// holds, with its commit record's LSN, oldest first: the whole retained log is read.
fn retained_origins(origin: &Origin, tail: &mut LogTail, mut each: impl FnMut(&quill_log::Origin, Lsn)) -> io::Result<()> {
    let Some(&(oldest, _)) = origin.log().segment_bounds().first() else { return Ok(()) };
    let durable = tail.durable_lsn();
    let oldest = oldest.max(origin.log().binlog_from());
    let boundary = tail.first_record_from(oldest, durable)?.unwrap_or(durable.max(oldest));
    let mut cursor = TransactionCursor::new(boundary);
    while let Some(tx) = cursor.next(tail, durable)? {
        if let (0, Some(quill_log::Change::Origin(o))) = (tx.seq, tx.changes.last()) {
            each(o, tx.lsn);
        }
    }
    Ok(())
}

/// One replica's stream of the binary log.
pub struct Dump {
    origin: Origin,
    tail: LogTail,
    /// The file being streamed: its segment's start and end.
    file: Lsn,
    file_end: Lsn,
    /// The next event's position in the file.
    position: u64,
    cursor: TransactionCursor,
    /// The sequence number of the last transaction read.
    last_seq: u64,
    /// A GTID dump: the transactions the replica has, passed over unsent.
    has: Option<ReplicaHas>,
    /// Transactions applied from sources are in the binary log (`log_replica_updates`).
    replica_updates: bool,
    /// Transactions of the current file read so far (the logical clock's count).
    ordinal: u64,
    /// Events made but not handed out yet.
    pending: Vec<u8>,
    finished_size: Option<u64>,
    /// Where the last transaction the latest [`Dump::fill`] sent ends.
    last_end: Option<TransactionEnd>,
    /// Keeps the segments the dump still reads from being removed by checkpoints.
    retention: Retention,
}

/// Where a transaction sent by [`Dump::fill`] ends: in the bytes that call added to, and in
/// the binary log (its file and the position after its last event).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransactionEnd {
    /// The length of the fill's output once the transaction's events were added.
    pub offset: usize,
    pub file: String,
    pub position: u64,
}

impl Dump {
    /// A dump from `file` at `position`, or, with `gtids` (what the replica has, `start..end`
    /// intervals by source UUID), from the first file that holds a transaction it lacks. The first events are a made-up ROTATE naming the file and the
    /// file's FORMAT_DESCRIPTION (and PREVIOUS_GTIDS from the file's start).
    ///
    /// # Errors
    /// See [`DumpError`].
    pub fn open(origin: Origin, file: &str, position: u64, gtids: Option<&[RequestedSet]>) -> Result<Dump, DumpError> {
        let mut tail = origin.log().tail();
        // Claim the whole log while looking for the start, then only from there on.
        let retention = tail.retain(0);
        let segments = origin.log().segment_bounds();
        let (mut start, mut position) = (file_start(file), position.max(FIRST_EVENT_POSITION));
        let replica_updates = origin.logs_replica_updates();
        let mut has = None;
        if let Some(set) = gtids {
            let replica = ReplicaHas::new(set);
            let own: Vec<(u64, u64)> = replica.sets.get(&origin.source.uuid).cloned().unwrap_or_default();
            // The replica has 1..next of ours (and maybe more, as a later source's replica).
            let next = own.iter().find(|(s, _)| *s <= 1).map_or(1, |&(_, e)| e);
            let executed = origin.log().next_position().1 - 1;
            if next > executed + 1 || own.iter().any(|&(_, e)| e > executed + 1) {
                return Err(DumpError::ReplicaAhead);
            }
            let mut chosen = None;
            for &(s, _) in &segments {
                if file_begin(&origin, &mut tail, s)?.previous < next {
                    chosen = Some(s);
                } else {
                    break;
                }
            }
            let mut chosen = chosen.ok_or(DumpError::Purged)?;
            // What it lacks of the transactions this server applied from sources.
            let mut replicated = origin.replicated();
            replicated.remove(&origin.source.uuid);
            let lacking = replica.lacking(&replicated);
            if !lacking.is_empty() {
                if !replica_updates {
                    return Err(DumpError::Purged);
                }
                if let Some(first) = first_file_with_origin(&origin, &mut tail, &lacking)? {
                    chosen = chosen.min(first);
                }
            }
            start = Some(chosen);
            position = FIRST_EVENT_POSITION;
            has = Some(replica);
        } else if file.is_empty() {
            start = segments.first().map(|&(s, _)| s);
        }
        let start = start.ok_or(DumpError::NoSuchFile)?;
        let file_end = origin.segment_end(start).ok_or(DumpError::NoSuchFile)?;
        let begin = file_begin(&origin, &mut tail, start)?;
        retention.set(start.min(begin.boundary));
        let mut dump = Dump {
            retention,
            tail,
            file: start,
            file_end,
            position: FIRST_EVENT_POSITION,
            cursor: TransactionCursor::new(begin.boundary),
            last_seq: begin.previous,
            has,
            replica_updates,
            ordinal: 0,
            pending: Vec::new(),
            finished_size: None,
            last_end: None,
            origin,
        };
        let name = file_name(start);
        let rotate = EventHeader { timestamp: 0, server_id: dump.origin.source.server_id, log_pos: 0, flags: FLAG_ARTIFICIAL };
        event(&mut dump.pending, &rotate, event_type::ROTATE, |b| rotate_body(b, position, &name));
        let first_tx = dump.origin.first_transaction_position(begin.previous);
        if position == FIRST_EVENT_POSITION {
            dump.origin.header_events(&mut dump.pending, &mut dump.position, begin.previous, false);
            return Ok(dump);
        }
        dump.origin.header_events(&mut dump.pending, &mut dump.position, begin.previous, true);
        dump.position = first_tx;
        dump.skip_to(position)?;
        Ok(dump)
    }

    /// Moves to `target`, a transaction's position in the current file, without sending.
    fn skip_to(&mut self, target: u64) -> Result<(), DumpError> {
        let mut scratch = Vec::new();
        let durable = self.tail.durable_lsn();
        while self.position < target {
            let before = self.position;
            let Some(tx) = self.cursor.next(&mut self.tail, self.file_end.min(durable))? else { return Err(DumpError::PastEnd) };
            if self.origin.gtid_of(&tx, self.replica_updates).is_none() {
                continue;
            }
            scratch.clear();
            self.ordinal += 1;
            self.origin.translate(&mut scratch, &tx, self.ordinal, &mut self.position)?;
            self.last_seq = self.last_seq.max(tx.seq);
            if self.position > target {
                return Err(DumpError::ImpossiblePosition(file_name(self.file), before, self.position));
            }
        }
        if self.position != target {
            return Err(DumpError::ImpossiblePosition(file_name(self.file), FIRST_EVENT_POSITION, self.position));
        }
        Ok(())
    }

    /// Where the last transaction the latest [`Dump::fill`] sent ends, if it sent one: a
    /// replica that has it has everything the fill read (what follows it in the output is
    /// a file's ROTATE and header events).
    #[must_use]
    pub fn last_transaction_end(&self) -> Option<&TransactionEnd> {
        self.last_end.as_ref()
    }

    /// The size of the last file the dump finished (where its ROTATE ended).
    #[must_use]
    pub fn finished_size(&self) -> Option<u64> {
        self.finished_size
    }

    /// The file being streamed and the next event's position in it.
    #[must_use]
    pub fn position(&self) -> (String, u64) {
        (file_name(self.file), self.position)
    }

    /// Adds to `out` the events made since the last call, up to the durable end of the log
    /// and about [`FILL_BYTES_MAX`]; `false` when there were none (the caller waits for the
    /// durable LSN to pass [`Dump::log_position`]).
    ///
    /// # Errors
    /// Reading or translating the log; the dump cannot go on.
    pub fn fill(&mut self, out: &mut Vec<u8>) -> Result<bool, DumpError> {
        let start = out.len();
        out.append(&mut self.pending);
        self.last_end = None;
        let durable = self.tail.durable_lsn();
        while out.len() - start < FILL_BYTES_MAX {
            if self.cursor.position() >= self.file_end && durable >= self.file_end {
                self.rotate(out)?;
                continue;
            }
            let Some(tx) = self.cursor.next(&mut self.tail, self.file_end.min(durable))? else { break };
            // Not in the binary log: applied from a source, and not logged for replicas.
            let Some((uuid, gno)) = self.origin.gtid_of(&tx, self.replica_updates) else { continue };
            self.ordinal += 1;
            if self.has.as_ref().is_some_and(|has| has.contains(&uuid, gno)) {
                let mut scratch = Vec::new();
                self.origin.translate(&mut scratch, &tx, self.ordinal, &mut self.position)?;
            } else {
                self.origin.translate(out, &tx, self.ordinal, &mut self.position)?;
                self.last_end = Some(TransactionEnd { offset: out.len(), file: file_name(self.file), position: self.position });
            }
            self.last_seq = self.last_seq.max(tx.seq);
        }
        self.retention.set(self.file.min(self.cursor.oldest_needed()));
        Ok(out.len() > start)
    }

    /// Ends the current file with a ROTATE and opens the next one.
    fn rotate(&mut self, out: &mut Vec<u8>) -> Result<(), DumpError> {
        let next = self.file_end;
        let next_end = self.origin.segment_end(next).ok_or_else(|| io::Error::other(format!("the log segment after {} is missing", file_name(self.file))))?;
        debug_assert!(self.cursor.position() >= next, "a file ends once the log has moved past its segment");
        let header = EventHeader { timestamp: 0, server_id: self.origin.source.server_id, log_pos: 0, flags: 0 };
        event_at(out, &header, &mut self.position, event_type::ROTATE, |b| rotate_body(b, FIRST_EVENT_POSITION, &file_name(next)));
        // The cursor stands at the first record at or after the next segment's start (a record
        // may run past it, even past the segment's end), and transactions are numbered in
        // commit order, so the next file's GTIDs before it are the ones read so far.
        let previous = self.last_seq;
        self.finished_size = Some(self.position);
        self.file = next;
        self.file_end = next_end;
        self.position = FIRST_EVENT_POSITION;
        self.ordinal = 0;
        self.origin.header_events(out, &mut self.position, previous, false);
        Ok(())
    }

    /// The log position the dump has read to: wait for the durable LSN to pass it.
    #[must_use]
    pub fn log_position(&self) -> Lsn {
        self.cursor.position()
    }

    /// A HEARTBEAT event: nothing new, and where the stream is.
    pub fn heartbeat(&self, out: &mut Vec<u8>) {
        let header = EventHeader { timestamp: 0, server_id: self.origin.source.server_id, log_pos: self.position as u32, flags: FLAG_ARTIFICIAL };
        event(out, &header, event_type::HEARTBEAT, |b| heartbeat_body(b, &file_name(self.file)));
    }
}

/// The current end of the binary log, as `SHOW BINARY LOG STATUS` reports it: a dump from
/// the oldest file walked to the durable end. Translates the whole retained log: callers
/// keep one and call it again, which only reads what is new.
pub struct Head {
    dump: Option<Dump>,
}

impl Head {
    #[must_use]
    pub fn new() -> Head {
        Head { dump: None }
    }

    /// The current file and position.
    ///
    /// # Errors
    /// See [`DumpError`].
    pub fn advance(&mut self, origin: &Origin) -> Result<(String, u64), DumpError> {
        if self.dump.is_none() {
            // From the newest segment's start: its file is the current one unless the log has
            // moved on, which `fill` follows with a rotation.
            let last = origin.log().segment_bounds().last().map(|&(s, _)| s).ok_or(DumpError::NoSuchFile)?;
            let durable = origin.log().durable_lsn();
            let start = origin.log().segment_bounds().into_iter().rev().find(|&(s, _)| s <= durable).map_or(last, |(s, _)| s);
            self.dump = Some(Dump::open(origin.clone(), &file_name(start), FIRST_EVENT_POSITION, None)?);
        }
        let dump = self.dump.as_mut().expect("opened above");
        let mut scratch = Vec::new();
        while dump.fill(&mut scratch)? {
            scratch.clear();
        }
        Ok(dump.position())
    }
}

impl Default for Head {
    fn default() -> Self {
        Head::new()
    }
}

/// The events of a buffer [`Dump::fill`] made, one at a time (each starts with its size).
pub fn events(mut bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    std::iter::from_fn(move || {
        let size = u32::from_le_bytes(bytes.get(9..13)?.try_into().ok()?) as usize;
        let (one, rest) = bytes.split_at(size.min(bytes.len()));
        bytes = rest;
        Some(one)
    })
}
