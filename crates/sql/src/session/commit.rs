//! The commit path: how a transaction's changes reach the commit log and become visible,
//! when its client is answered, and how it rolls back. Where it sits: inside `session` (it
//! works on a session's transaction), beside `durability` (which builds log changes from row
//! images, and replays them at start-up), over the log itself.
//!
//! Commit ([`Session::commit`]):
//! 1. The changes not yet logged (the final image of each row written since the transaction's
//!    last part record, see "Streaming") are built from the rows' pending versions. The
//!    transaction holds every one of those rows' exclusive locks, and the tables' metadata
//!    locks, so the images hold still with no further lock.
//! 2. Under `Engine::commit_order`: the commit record is appended (the log gives it its LSN
//!    and sequence number), the commit timestamp is taken, the versions are stamped with it
//!    and the timestamp is published. Readers see all of the commit or none of it, and log
//!    order is commit order.
//!    The tables it wrote take its position (`commit_notify`), waking their waiters.
//! 3. Row and metadata locks are released; the reply waits until the record is as durable as
//!    the flush mode promises ([`Session::wait_until_durable`]).
//!
//! Streaming (`docs/log-format.md`, "Large transactions"): a statement that ends with more
//! than [`STREAM_ROWS`] row writes not yet logged sends them to the log at once, as part
//! records of at most [`STREAM_PART_BYTES`] of changes each (a single larger row is a part
//! of its own). At commit, a remainder larger than a part is split the same way and the commit
//! record carries the last of it. So no record, and no buffer built at commit, is much larger
//! than a part, and a transaction of any size commits. Parts are appended outside
//! `commit_order`, between other transactions' commits; only the commit record makes them
//! count, and recovery reads them back at it. A stream that rolls back gets an abort record.
//! Only statements that succeeded are streamed, so a failed statement's undo never has to
//! reach the log; a row written again after its part is logged again, later, and replay in
//! log order leaves its final image.
//!
//! `Engine::open_streams` holds where each open stream starts, so a checkpoint can tell
//! recovery to read the log from the oldest of them (and keep those segments).

use std::collections::HashSet;
use std::sync::atomic::Ordering;

use quill_log::{Body, Log, Lsn};
use quill_storage::{TxnId, WrittenRows};

use super::{Engine, Session, Txn, unix_micros};
use crate::catalog::{Catalog, TableMeta};
use crate::commit_acks::AckWait;
use crate::durability::{add_row_change, log_error};
use crate::error::{Result, SqlError, codes};

/// A statement that leaves more row writes than this not yet logged streams them into the
/// log when it ends.
pub const STREAM_ROWS: usize = 8192;
/// The most bytes of changes in one part record (and in a commit record's changes, but for a
/// single row larger than this).
pub const STREAM_PART_BYTES: usize = 8 << 20;
// The log writer takes what is pending whole when it fits one group (`quill_log::GROUP_BYTES_MAX`).
const _: () = assert!(2 * STREAM_PART_BYTES <= quill_log::GROUP_BYTES_MAX, "a group holds two stream parts");

impl Session {
    /// Commit the open transaction, if any. With a commit log, its changes (those not
    /// streamed yet) become its commit record, appended while `Engine::commit_order` orders
    /// commits; the statement's reply then waits for it ([`Session::wait_until_durable`]).
    ///
    /// # Errors
    /// The log cannot take the transaction (no room: 1114; shutting down: 1053; a single row
    /// image larger than a log record: 1197); it is rolled back.
    pub fn commit(&mut self) -> Result<()> {
        let Some(mut t) = self.txn.take() else { return Ok(()) };
        let engine = self.engine();
        let started = std::time::Instant::now();
        if !t.writes.is_empty() {
            let catalog = engine.catalog();
            let log = engine.log.get();
            let full = self.full_row_images();
            let mut last = match log.map(|log| stream_writes(&engine, log, &catalog, &mut t, true, full)).transpose() {
                Ok(last) => last.unwrap_or_default(),
                Err(e) => {
                    self.txn = Some(t);
                    self.rollback();
                    return Err(e);
                }
            };
            // The commit's critical section: log order is commit order, and readers see
            // all of the commit (once its timestamp is published) or none of it.
            // A transaction the replica applies is numbered by its source, not by this server.
            last.body.set_replicated(self.replica_applier);
            // Its GTID goes with it, on a record that has changes (or ends a stream).
            if let Some(origin) = self.replica_origin.take()
                && (t.stream.is_some() || !last.body.is_empty())
            {
                last.body.origin(&origin);
            }
            let order = engine.commit_order.lock();
            let mut logged_at = None;
            if let Some(log) = log
                && (t.stream.is_some() || !last.body.is_empty())
            {
                let appended = match t.stream {
                    Some(first) => log.append_stream_commit_body(unix_micros(), first, &last.body),
                    None => log.append_body(unix_micros(), &last.body),
                };
                match appended {
                    Ok(at) => {
                        logged_at = Some(at.end);
                        self.commit_started.get_or_insert(started);
                        engine.last_commit_end.fetch_max(at.end, Ordering::AcqRel);
                        if let Some(first) = t.stream.take() {
                            engine.open_streams.lock().remove(&first);
                        }
                        self.wait_for_log(at.end, log.flush_mode(), AckWait::Commit);
                    }
                    Err(e) => {
                        drop(order);
                        let error = log_error(&e, last.table);
                        self.txn = Some(t);
                        self.rollback();
                        return Err(error);
                    }
                }
            }
            let ts = engine.txns.commit_ts_to_assign();
            if let Some(v) = &t.view {
                engine.txns.release_view(v);
            }
            let horizon = engine.txns.purge_horizon();
            // A row written twice is stamped once: the second call finds nothing pending.
            let mut walk = TableWalk::new(&catalog, t.id);
            let mut tables: Vec<u64> = Vec::new();
            for (tid, pk) in t.writes.iter() {
                if let Some((_, rows)) = walk.rows(tid) {
                    rows.commit_row(pk, ts, horizon);
                }
                if tables.last() != Some(&tid) && !tables.contains(&tid) {
                    tables.push(tid);
                }
            }
            engine.txns.publish_commit(ts);
            // Visible now; waiters wait on for it to be durable (`commit_notify`).
            if let Some(end) = logged_at {
                engine.commit_notify.published(&tables, end);
            }
            drop(order);
            engine.status.com_commit.fetch_add(1, Ordering::Relaxed);
        } else if let Some(v) = &t.view {
            engine.txns.release_view(v);
        }
        engine.txns.end(t.id);
        engine.mdl.release_all(self.info.connection_id);
        Ok(())
    }

    /// After a statement succeeded: if it leaves more than [`STREAM_ROWS`] row writes not
    /// yet logged, stream them into the log now.
    ///
    /// # Errors
    /// The log cannot take them (as [`Session::commit`]); the transaction is rolled back.
    pub(super) fn stream_if_large(&mut self) -> Result<()> {
        if self.txn.as_ref().is_none_or(|t| t.writes.len() - t.logged <= STREAM_ROWS) {
            return Ok(());
        }
        let engine = self.engine();
        let Some(log) = engine.log.get() else { return Ok(()) };
        let catalog = engine.catalog();
        let full = self.full_row_images();
        let t = self.txn.as_mut().expect("checked above");
        if let Err(e) = stream_writes(&engine, log, &catalog, t, false, full) {
            self.rollback();
            return Err(e);
        }
        Ok(())
    }

    /// Whether the log records the images updates and deletes replace: `binlog_row_image`
    /// is FULL (the default), not MINIMAL.
    fn full_row_images(&self) -> bool {
        self.info.var("binlog_row_image") != "MINIMAL"
    }

    /// The reply to this statement must wait until the log is at `end` (as `mode` promises),
    /// and replicas have it when semi-sync asks (`why`: the session's commit, or a read).
    pub(super) fn wait_for_log(&mut self, end: quill_log::Lsn, mode: quill_log::FlushMode, why: AckWait) {
        let (end, mode, why) = self.durable_wait.map_or((end, mode, why), |(e, m, w)| {
            (e.max(end), m.stronger(mode), if w == AckWait::Commit || why == AckWait::Commit { AckWait::Commit } else { AckWait::Read })
        });
        self.durable_wait = Some((end, mode, why));
    }

    /// Waits until every commit this session made (or read) since the last call is as
    /// durable as the flush mode promises, then for the replicas' acknowledgements semi-sync
    /// asks for (`commit_acks`; never for the replica applier, whose commits are not sent on);
    /// called before a statement's reply is sent.
    pub async fn wait_until_durable(&mut self) {
        let Some((end, mode, why)) = self.durable_wait.take() else { return };
        let engine = self.engine();
        if let Some(log) = engine.log.get() {
            log.wait(end, mode).await;
        }
        if !self.replica_applier
            && let Some(acks) = engine.commit_acks.get()
        {
            acks.wait(end, why).await;
        }
        if let Some(started) = self.commit_started.take() {
            engine.status.distributions.commit_latency_us.observe(u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX));
        }
    }

    /// The log position (and flush mode) this session's commits since the last call must
    /// reach to be as durable as the mode promises, taken: for a session that
    /// [`answers_before_durable`](Session::answers_before_durable), whose caller waits (or not).
    pub fn take_log_wait(&mut self) -> Option<(quill_log::Lsn, quill_log::FlushMode)> {
        // Its caller times the wait, if it cares to.
        self.commit_started = None;
        self.durable_wait.take().map(|(end, mode, _)| (end, mode))
    }

    /// The open transaction's id, if one is open (what the lock manager knows it by).
    #[must_use]
    pub fn txn_id(&self) -> Option<TxnId> {
        self.txn.as_ref().map(|t| t.id)
    }

    /// Roll back the open transaction, if any. A transaction that streamed parts ends its
    /// stream with an abort record, so recovery and log readers can forget its parts.
    /// `SAVEPOINT name`: marks the transaction's writes so far; a savepoint of the same
    /// name is replaced. Outside a transaction with autocommit on there is nothing to mark
    /// (as in MySQL, the savepoint ends with the statement's implicit commit).
    pub(super) fn savepoint(&mut self, name: &str) {
        if self.txn.is_none() && self.autocommit() {
            return;
        }
        self.txn_for_statement();
        let t = self.txn.as_mut().expect("txn created above");
        t.savepoints.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        t.savepoints.push((name.to_owned(), t.writes.len()));
    }

    /// `RELEASE SAVEPOINT name`: forgets it and every later savepoint.
    ///
    /// # Errors
    /// 1305 for a savepoint the transaction does not have.
    pub(super) fn release_savepoint(&mut self, name: &str) -> Result<()> {
        let at = self.savepoint_index(name)?;
        if let Some(t) = self.txn.as_mut() {
            t.savepoints.truncate(at);
        }
        Ok(())
    }

    /// `ROLLBACK TO [SAVEPOINT] name`: undoes the writes made since the savepoint, newest
    /// first, and forgets the later savepoints (this one stays). Row locks taken since stay
    /// held, as in InnoDB.
    ///
    /// # Errors
    /// 1305 for a savepoint the transaction does not have; 1235 when rows written since
    /// the savepoint have already been streamed to the log (a transaction of more than
    /// `STREAM_ROWS` rows whose statements after the savepoint were large).
    pub(super) fn rollback_to_savepoint(&mut self, name: &str) -> Result<()> {
        let at = self.savepoint_index(name)?;
        let engine = self.engine();
        let catalog = engine.catalog();
        let t = self.txn.as_mut().expect("a savepoint belongs to a transaction");
        let mark = t.savepoints[at].1;
        if t.logged > mark {
            return Err(SqlError::unsupported("ROLLBACK TO SAVEPOINT past rows a large transaction has already streamed to the log"));
        }
        for (tid, pk) in t.writes.iter_from(mark).rev() {
            if let Some(table) = catalog.table_by_id(tid) {
                table.data.undo_last(t.id, pk);
            }
        }
        t.writes.truncate(mark);
        t.savepoints.truncate(at + 1);
        Ok(())
    }

    fn savepoint_index(&self, name: &str) -> Result<usize> {
        self.txn
            .as_ref()
            .and_then(|t| t.savepoints.iter().position(|(n, _)| n.eq_ignore_ascii_case(name)))
            .ok_or_else(|| SqlError::new(codes::ER_SP_DOES_NOT_EXIST, format!("SAVEPOINT {name} does not exist")))
    }

    pub fn rollback(&mut self) {
        let Some(t) = self.txn.take() else { return };
        let engine = self.engine();
        if !t.writes.is_empty() {
            let catalog = engine.catalog();
            for (tid, pk) in t.writes.iter().rev() {
                if let Some(table) = catalog.table_by_id(tid) {
                    table.data.rollback_row(t.id, pk);
                }
            }
        }
        if let Some(first) = t.stream {
            if let Some(log) = engine.log.get() {
                // Without it (the log full or shutting down) recovery finds a stream that never
                // ended, and drops it the same way.
                let _ = log.append_abort(first);
            }
            engine.open_streams.lock().remove(&first);
        }
        if let Some(v) = &t.view {
            engine.txns.release_view(v);
        }
        engine.status.com_rollback.fetch_add(1, Ordering::Relaxed);
        engine.txns.end(t.id);
        engine.mdl.release_all(self.info.connection_id);
    }
}

/// A walk over a transaction's writes in their order. Writes come in runs on one table: the
/// table is looked up once per run, and its rows are walked from one to the next
/// (`Handler::written_rows`, which keeps its place).
struct TableWalk<'c> {
    catalog: &'c Catalog,
    txn: TxnId,
    /// The table of the current run, by id, and its walk (`None`: dropped since).
    at: Option<(u64, Option<TableRows<'c>>)>,
}

/// A table and the walk over the rows a transaction wrote in it.
type TableRows<'c> = (&'c TableMeta, Box<dyn WrittenRows + 'c>);

impl<'c> TableWalk<'c> {
    fn new(catalog: &'c Catalog, txn: TxnId) -> TableWalk<'c> {
        TableWalk { catalog, txn, at: None }
    }

    /// The table with id `tid` and the walk over its rows; `None` when it was dropped since.
    fn rows(&mut self, tid: u64) -> Option<(&'c TableMeta, &mut (dyn WrittenRows + 'c))> {
        if self.at.as_ref().is_none_or(|(id, _)| *id != tid) {
            let walk = self.catalog.table_by_id(tid).map(|t| (t, t.data.written_rows(self.txn)));
            self.at = Some((tid, walk));
        }
        let (table, rows) = self.at.as_mut()?.1.as_mut()?;
        Some((*table, rows.as_mut()))
    }
}

/// Changes of a transaction encoded for one record, and a table they are about (the one an
/// error names).
#[derive(Default)]
struct Chunk<'c> {
    body: Body,
    table: &'c str,
}

/// Appends `t`'s writes not yet logged (`writes[logged..]`) as part records of at most
/// [`STREAM_PART_BYTES`] of changes each. With `keep_last`, the last chunk (at most a part)
/// is returned rather than appended, for the commit record. A row written twice within one
/// chunk is logged once. With `full`, updates and deletes carry the image they replaced
/// (`binlog_row_image=FULL`).
fn stream_writes<'c>(engine: &Engine, log: &Log, catalog: &'c Catalog, t: &mut Txn, keep_last: bool, full: bool) -> Result<Chunk<'c>> {
    let Txn { id, writes, logged, stream, .. } = t;
    let mut chunk = Chunk::default();
    let mut images = (Vec::new(), Vec::new());
    // Keyed by primary keys clients choose: seeded (no hash flooding) and fast. Not needed
    // when the writes are known not to repeat (a bulk statement's, in key order).
    let dedupe = !writes.distinct_from(*logged);
    let mut seen: HashSet<(u64, &[u8]), foldhash::fast::RandomState> = HashSet::default();
    let mut walk = TableWalk::new(catalog, *id);
    for (tid, pk) in writes.iter_from(*logged) {
        if dedupe && !seen.insert((tid, pk)) {
            continue;
        }
        // No table (dropped since) or no pending version (a failed statement undid it).
        let Some((table, rows)) = walk.rows(tid) else { continue };
        if !add_row_change(&mut chunk.body, table, rows, pk, (full, stream.is_some()), (&mut images.0, &mut images.1))
            .map_err(|e| log_error(&e, &table.name))?
        {
            continue;
        }
        if chunk.table.is_empty() {
            chunk.table = &table.name;
        }
        if chunk.body.len() >= STREAM_PART_BYTES {
            append_part(engine, log, *id, stream, &chunk)?;
            chunk = Chunk { body: std::mem::take(&mut chunk.body), table: "" };
            chunk.body.clear();
            seen.clear();
        }
    }
    if !keep_last && !chunk.body.is_empty() {
        append_part(engine, log, *id, stream, &chunk)?;
        chunk = Chunk::default();
    }
    *logged = writes.len();
    Ok(chunk)
}

/// Appends one part of `txn`'s stream, starting the stream (and registering it in
/// `Engine::open_streams`) with the first.
fn append_part(engine: &Engine, log: &Log, txn: quill_storage::TxnId, stream: &mut Option<Lsn>, chunk: &Chunk<'_>) -> Result<()> {
    let error = |e: &quill_log::EncodeError| log_error(e, chunk.table);
    match *stream {
        Some(first) => {
            log.append_part_body(Some(first), &chunk.body).map_err(|e| error(&e))?;
        }
        None => {
            // Registered under the same lock as the append: a checkpoint that reads the
            // registry either sees this stream or took its position before the part.
            let mut open = engine.open_streams.lock();
            let at = log.append_part_body(None, &chunk.body).map_err(|e| error(&e))?;
            open.insert(at.lsn, txn);
            *stream = Some(at.lsn);
        }
    }
    Ok(())
}
