//! Following the log while it is written: what replication reads (`docs/binlog.md`).
//!
//! A [`LogTail`] reads records below the durable LSN from a copy of the segment map, taken
//! under the segment lock only when it first needs a segment it has not seen, so a reader
//! never waits on the writer's write or `fdatasync`. Durable bytes never change, and a
//! segment removed while a tail still holds its file handle stays readable through it.
//!
//! A [`TransactionCursor`] walks committed transactions in commit order from a record
//! boundary: a plain commit record is a transaction; a streamed transaction is one at its
//! commit record, made of its parts (read back from the log, the ones before the cursor's
//! start found by scanning from the stream's first part) and the commit record's changes.
//! Parts and aborts are not transactions and are stepped over. A streamed transaction's row
//! written in several parts is handed over once, as its last change (`fold_repeats`).
//!
//! Bounds: a transaction is held whole in memory while it is handed over, as a replica needs
//! its length before its first event; the parts the cursor remembers are LSNs, one per part
//! record of a stream still open.

use std::collections::HashMap;
use std::io;
use std::sync::Arc;

use tokio::sync::watch;

use crate::format::{Change, HEADER_BYTES, Lsn, Record, RecordKind};
use crate::reader::{LogEnd, first_record_from, read_one};
use crate::segments::SegmentFiles;
use crate::writer::{Log, Shared};

/// A reader of the log's durable records.
pub struct LogTail {
    shared: Arc<Shared>,
    files: SegmentFiles,
}

/// A committed transaction as the log holds it: the LSN of its commit record and just past
/// it, its sequence number and commit time, and its changes without stream markers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transaction {
    pub lsn: Lsn,
    pub end: Lsn,
    pub seq: u64,
    pub commit_us: u64,
    pub changes: Vec<Change>,
}

impl Log {
    /// A reader of this log's durable records.
    #[must_use]
    pub fn tail(&self) -> LogTail {
        LogTail { shared: Arc::clone(&self.shared), files: self.shared.segments.lock().files() }
    }

    /// A receiver of the durable LSN, changed whenever a group becomes durable: a reader
    /// parks on it rather than polling.
    #[must_use]
    pub fn durable_receiver(&self) -> watch::Receiver<Lsn> {
        self.shared.durable.subscribe()
    }

    /// Each segment's start LSN and length, oldest first.
    #[must_use]
    pub fn segment_bounds(&self) -> Vec<(Lsn, u64)> {
        self.shared.segments.lock().map().bounds()
    }
}

/// A reader's claim on the log from an LSN on: while it is held, checkpoints remove no
/// segment holding that LSN or any after it. Dropped, it lets them go.
pub struct Retention {
    shared: Arc<Shared>,
    id: u64,
}

impl Retention {
    /// Moves the claim to `lsn`.
    pub fn set(&self, lsn: Lsn) {
        self.shared.retained.lock().insert(self.id, lsn);
    }
}

impl Drop for Retention {
    fn drop(&mut self) {
        self.shared.retained.lock().remove(&self.id);
    }
}

impl LogTail {
    /// Keeps the segments from `lsn` on until the returned claim moves or drops.
    #[must_use]
    pub fn retain(&self, lsn: Lsn) -> Retention {
        let id = self.shared.next_retention.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let retention = Retention { shared: Arc::clone(&self.shared), id };
        retention.set(lsn);
        retention
    }

    /// The LSN just past the last durable record.
    #[must_use]
    pub fn durable_lsn(&self) -> Lsn {
        *self.shared.durable.borrow()
    }

    /// The record at `lsn`, which must start below the durable LSN.
    ///
    /// # Errors
    /// I/O errors, and a record that is missing (its segment was removed before this tail
    /// first saw it) or damaged: durable records never are, so either is reported, not cut.
    pub fn record(&mut self, lsn: Lsn) -> io::Result<Record> {
        if self.files.end().is_none_or(|end| lsn >= end) {
            self.files = self.shared.segments.lock().files();
        }
        let mut read = read_one(&self.files, lsn)?;
        if matches!(read, Err(LogEnd::Cut(_))) {
            // A durable record that starts in this tail's segments may run into one made
            // since they were copied: read it again over the log's segments as they are now.
            self.files = self.shared.segments.lock().files();
            read = read_one(&self.files, lsn)?;
        }
        match read {
            Ok(record) => Ok(record),
            Err(LogEnd::Clean) => Err(io::Error::other(format!("no log record at LSN {lsn}: its segment was removed"))),
            Err(LogEnd::Cut(why)) => Err(io::Error::other(format!("the durable log record at LSN {lsn} does not read back: {why}"))),
        }
    }
}

impl LogTail {
    /// The LSN of the first record that starts at or after `from` and before `until` (at most
    /// the durable LSN), found without a known boundary before it
    /// ([`crate::reader::first_record_from`]). Records run across segment boundaries, so a
    /// segment's first record is found this way when the segment before it is gone.
    ///
    /// # Errors
    /// I/O errors.
    pub fn first_record_from(&mut self, from: Lsn, until: Lsn) -> io::Result<Option<Lsn>> {
        // The last candidates need the bytes of their header after them.
        if self.files.end().is_none_or(|end| end < until + HEADER_BYTES as u64) {
            self.files = self.shared.segments.lock().files();
        }
        first_record_from(&self.files, from, until)
    }
}

/// Walks committed transactions from a record boundary (see the module doc).
#[derive(Debug, Clone)]
pub struct TransactionCursor {
    next: Lsn,
    start: Lsn,
    /// Streams whose first part was read by this cursor: the LSNs of their parts so far.
    streams: HashMap<Lsn, Vec<Lsn>>,
}

impl TransactionCursor {
    /// A cursor at `lsn`, which must be where a record starts.
    #[must_use]
    pub fn new(lsn: Lsn) -> TransactionCursor {
        TransactionCursor { next: lsn, start: lsn, streams: HashMap::new() }
    }

    /// Where the next record starts.
    #[must_use]
    pub fn position(&self) -> Lsn {
        self.next
    }

    /// The oldest LSN the cursor may still read: its position, or the first part of a
    /// stream it is following.
    #[must_use]
    pub fn oldest_needed(&self) -> Lsn {
        self.streams.keys().copied().min().map_or(self.next, |first| first.min(self.next))
    }

    /// The next committed transaction whose commit record lies below `end` (at most the
    /// durable LSN), or `None` when there is none yet; the cursor moves past it.
    ///
    /// # Errors
    /// As [`LogTail::record`]; a stream whose parts are gone. The cursor stays where it was.
    pub fn next(&mut self, tail: &mut LogTail, end: Lsn) -> io::Result<Option<Transaction>> {
        while self.next < end {
            let record = tail.record(self.next)?;
            let at = self.next;
            let after = at + record.encoded_len() as u64;
            match record.kind() {
                RecordKind::Commit => {
                    self.next = after;
                    return Ok(Some(Transaction { lsn: at, end: after, seq: record.seq, commit_us: record.commit_us, changes: record.changes }));
                }
                RecordKind::Part(first) => {
                    if first == at {
                        self.streams.insert(first, vec![at]);
                    } else if let Some(parts) = self.streams.get_mut(&first) {
                        parts.push(at);
                    }
                }
                RecordKind::Abort(first) => {
                    self.streams.remove(&first);
                }
                RecordKind::StreamCommit(first) => {
                    let parts = match self.streams.get(&first) {
                        Some(parts) => parts.clone(),
                        None if first < self.start => parts_of(tail, first, at)?,
                        None => return Err(io::Error::other(format!("the stream committed at LSN {at} has no first part at LSN {first}"))),
                    };
                    let mut changes = Vec::new();
                    for lsn in parts {
                        let mut part = tail.record(lsn)?;
                        part.changes.remove(0);
                        changes.append(&mut part.changes);
                    }
                    let mut commit = record;
                    commit.changes.remove(0);
                    changes.append(&mut commit.changes);
                    let changes = fold_repeats(changes);
                    self.streams.remove(&first);
                    self.next = after;
                    return Ok(Some(Transaction { lsn: at, end: after, seq: commit.seq, commit_us: commit.commit_us, changes }));
                }
            }
            self.next = after;
        }
        Ok(None)
    }
}

/// One change per row of a streamed transaction. A row written again after a part logged it
/// appears again in a later part or the commit record, judged, like the first time, against
/// the row as it was before the transaction (`docs/log-format.md`, "Large transactions"): so
/// the last change of each row says what the transaction did to it, and the earlier ones go.
/// A DELETE without an image is what a streamed transaction logs for a row it inserted and
/// deleted again (a part may hold the insert): under `binlog_row_image=FULL` every other
/// DELETE has its image, so such a change leaves nothing. (Under MINIMAL, deletes have no
/// image and would go too; replication needs FULL, `docs/binlog.md`.) The changes keep the
/// order of their last appearance.
fn fold_repeats(changes: Vec<Change>) -> Vec<Change> {
    let mut last: HashMap<(&str, &str, &[u8]), usize> = HashMap::with_capacity(changes.len());
    for (i, change) in changes.iter().enumerate() {
        if let Some(key) = row_key(change) {
            last.insert(key, i);
        }
    }
    let imageless_delete = |change: &Change| matches!(change, Change::Delete { before: None, .. });
    // The DELETE of a row the transaction inserted and deleted again goes even when the
    // insert was in no part (both were in the commit record's remainder).
    if last.len() == changes.len() && !changes.iter().any(imageless_delete) {
        return changes;
    }
    let keep: Vec<bool> = changes
        .iter()
        .enumerate()
        .map(|(i, change)| {
            let is_last = row_key(change).is_none_or(|key| last[&key] == i);
            is_last && !imageless_delete(change)
        })
        .collect();
    changes.into_iter().zip(keep).filter_map(|(change, keep)| keep.then_some(change)).collect()
}

/// The row a change is about: its database, table and primary key.
fn row_key(change: &Change) -> Option<(&str, &str, &[u8])> {
    match change {
        Change::Insert { db, table, key, .. }
        | Change::Update { db, table, key, .. }
        | Change::Delete { db, table, key, .. }
        | Change::Put { db, table, key, .. }
        | Change::PutV1 { db, table, key, .. } => Some((db, table, key)),
        _ => None,
    }
}

/// The LSNs of the parts of the stream whose first part is at `first`, scanning the log from
/// there to `commit`.
fn parts_of(tail: &mut LogTail, first: Lsn, commit: Lsn) -> io::Result<Vec<Lsn>> {
    let (mut lsn, mut parts) = (first, Vec::new());
    while lsn < commit {
        let record = tail.record(lsn)?;
        if record.kind() == RecordKind::Part(first) {
            parts.push(lsn);
        }
        lsn += record.encoded_len() as u64;
    }
    Ok(parts)
}
