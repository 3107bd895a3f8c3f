//! The replica's SQL side: a coordinator that reads the relayed events into whole
//! transactions, and workers that apply them, in parallel where they touch different rows,
//! committing in source order (`docs/replication.md`, "Parallel apply").
//!
//! - The **coordinator** ([`coordinate`]) numbers each transaction `1, 2, 3...` in source
//!   order, turns its row events into statements ([`super::rows`]) and its write-set (the
//!   hashed keys of the rows it touches), and finds the newest earlier transaction whose
//!   write-set shares a key with it: it *depends on* that one. It keeps the last writer of
//!   at most [`WRITESET_HISTORY_MAX`] keys; past that it forgets them all, and each later
//!   transaction depends at least on the one before the forgetting. A DDL statement depends on
//!   everything before it and everything after depends on it; the coordinator reads on only
//!   once it has committed (the next row events are read against its catalog).
//! - Each **worker** ([`work`]), a session of its own, takes the next transaction, waits
//!   until the one it depends on has committed, applies its rows and adds a row of its own
//!   GTID to `mysql.gtid_executed` (in the same transaction, so the GTID is durable with the
//!   rows), then waits for its **turn** (every earlier transaction committed) and commits. So
//!   commits happen in source order (MySQL's `replica_preserve_commit_order`).
//! - The GTID rows are merged into intervals after every [`GTID_COMPRESSION_PERIOD`]
//!   transactions and when the applier stops, as MySQL compresses its table
//!   ([`compress_gtid_table`]); a merge that would wait for a lock gives up and is tried
//!   again later.
//! - A DDL statement's GTID goes in the statement's own log record, with its row of
//!   `mysql.gtid_executed` (`Session::replica_origin`): the two are durable together.
//! - A transaction that fails while earlier ones are still open (a dependency its write-set
//!   did not show, a foreign key, a key the collation folds otherwise) is rolled back and
//!   applied again at its turn, when nothing before it is open; failing then stops the
//!   applier with its error, as MySQL's does.
//! - **Commit-order deadlocks**: a worker waiting for its turn while holding a lock an earlier
//!   worker waits for would wait for ever. While it waits it looks, every
//!   [`COMMIT_ORDER_CHECK_INTERVAL`], whether an earlier transaction waits for a lock it holds;
//!   if so it rolls back and applies again at its turn (MySQL's replica does the same).
//!
//! With `replica_parallel_workers` at 0 or 1 one worker applies everything: the same path,
//! strictly serial. The number is read when the applier starts (`START REPLICA`, and each
//! reconnection).
//!
//! Each commit answers before it is durable (the worker's session
//! `answers_before_durable`); the stamper ([`stamp_when_durable`]) publishes each applied
//! transaction, in commit order, once its commit is durable: its GTID joins
//! `Executed_Gtid_Set` and it becomes its worker's last applied transaction.
//!
//! Bounds: [`JOBS_QUEUED_MAX`] transactions wait for a worker at most; the relay bounds what
//! is read ahead of them; [`DURABLE_STAMPS_MAX`] commits wait to be stamped.
//!
//! Where it sits: below the replica task (`replica::run`), which hands it the relay; above
//! `sql` (each worker runs statements in its own `Session`).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use mysql_common::binlog::events::{EventData, RowsEventData, TableMapEvent};
use parking_lot::Mutex;
use quill_sql::error::{Result as SqlResult, SqlError};
use quill_sql::replica_control::AppliedTransaction;
use quill_sql::{Outcome, Session};
use quill_storage::{TxnId, Value};
use tokio::sync::{mpsc, watch};

use super::rows::{self, Prepared, RowStatement};
use super::{APPLIER_SQL_MODE, APPLIER_TIME_ZONE, Inner, Relayed, Stop, TABLE_MAPS_MAX, exec, now_us};
use crate::gtid::{GtidSet, add_gtid, contains, uuid_text};

/// Keys whose last writer the coordinator remembers, at most (MySQL's
/// `binlog_transaction_dependency_history_size` default).
pub const WRITESET_HISTORY_MAX: usize = 25_000;
/// Transactions read and waiting for a worker, at most.
pub const JOBS_QUEUED_MAX: usize = 64;
/// Applied transactions whose commits are not yet known durable, at most, before workers
/// wait for the oldest.
pub const DURABLE_STAMPS_MAX: usize = 4096;
/// How often a worker waiting for its turn looks whether it blocks an earlier one.
pub const COMMIT_ORDER_CHECK_INTERVAL: Duration = Duration::from_millis(2);
/// Applied transactions between two compressions of `mysql.gtid_executed`.
pub const GTID_COMPRESSION_PERIOD: u64 = 1000;
/// Workers, at most (`replica_parallel_workers`' range, as MySQL's).
pub const WORKERS_MAX: usize = 1024;
/// The connection id the first worker's session reports; the next ones count down from it.
pub const WORKER_CONNECTION_ID_FIRST: u32 = u32::MAX - 3;
/// The connection id of the session that compresses `mysql.gtid_executed`.
const COMPRESSOR_CONNECTION_ID: u32 = u32::MAX - 2;
const INSERT_GTID: &str = "INSERT INTO mysql.gtid_executed VALUES (?, ?, ?)";

/// What a transaction does.
enum Work {
    /// Row changes, as prepared statements.
    Rows(Vec<RowStatement>),
    /// A DDL statement, its default database and the source's `sql_mode` and time zone; a
    /// `CREATE TABLE ... SELECT` also has the rows events it wrote, applied in its own record.
    Ddl { schema: String, query: String, sql_mode: Option<String>, time_zone: Option<String>, rows: Option<CreatedRows> },
}

/// The rows events of a `CREATE TABLE ... SELECT`, with their table maps.
type CreatedRows = Vec<(TableMapEvent<'static>, RowsEventData<'static>)>;

/// One transaction to apply.
struct Job {
    /// Its place in source order, from 1.
    index: u64,
    /// The newest earlier transaction it must wait for (0: none).
    depends_on: u64,
    gtid: Option<(String, u64)>,
    origin: Option<quill_log::Origin>,
    original_commit_us: u64,
    immediate_commit_us: u64,
    work: Work,
    /// Where it ends in the source's file.
    log_pos: u64,
}

/// The transaction being read.
#[derive(Default)]
struct Pending {
    gtid: Option<(String, u64)>,
    origin: Option<quill_log::Origin>,
    original_commit_us: u64,
    immediate_commit_us: u64,
    statements: Vec<RowStatement>,
    keys: Vec<u64>,
    /// A `CREATE TABLE ... SELECT` whose rows are being read: its job, without them yet.
    create: Option<Work>,
}

/// The last writer of each key, as far as remembered.
#[derive(Default)]
struct WriteSets {
    last_writer: HashMap<u64, u64>,
    /// Every transaction depends at least on this one.
    floor: u64,
}

impl WriteSets {
    /// What transaction `index`, with write-set `keys`, depends on; it becomes their last writer.
    fn depends_on(&mut self, index: u64, keys: &[u64]) -> u64 {
        if self.last_writer.len() + keys.len() > WRITESET_HISTORY_MAX {
            self.last_writer.clear();
            self.floor = index - 1;
        }
        let mut depends = self.floor;
        for key in keys {
            // A key may come twice (an update's before and after images).
            if let Some(previous) = self.last_writer.insert(*key, index).filter(|&p| p < index) {
                depends = depends.max(previous);
            }
        }
        depends
    }

    /// Transaction `index` runs alone: after everything before it, before everything after.
    fn barrier(&mut self, index: u64) {
        self.last_writer.clear();
        self.floor = index;
    }
}

/// A transaction applied and committed, and what to publish once its commit is durable.
struct Stamp {
    worker: usize,
    /// The log position (and flush mode) its commit is durable at.
    wait: Option<(quill_log::Lsn, quill_log::FlushMode)>,
    applied: AppliedTransaction,
    gtid: Option<(String, u64)>,
    exec_source_log_pos: u64,
}

/// What the coordinator and the workers share.
struct Shared {
    inner: Arc<Inner>,
    /// The index of the last transaction committed (all before it are too).
    committed: watch::Sender<u64>,
    /// Set when a worker failed: everyone stops.
    aborted: watch::Sender<bool>,
    failure: Mutex<Option<Stop>>,
    /// What `mysql.gtid_executed` holds, committed or being committed.
    executed: Arc<Mutex<GtidSet>>,
    /// The open transaction of each index being applied, for commit-order deadlock checks.
    open: Mutex<HashMap<u64, TxnId>>,
    /// Bumped by each DDL: workers then close their prepared statements.
    ddl_epoch: AtomicU64,
    stamps: mpsc::Sender<Stamp>,
}

impl Shared {
    fn fail(&self, stop: Stop) {
        let mut failure = self.failure.lock();
        if failure.is_none() {
            *failure = Some(stop);
        }
        self.aborted.send_replace(true);
    }

    /// Waits until transaction `index` has committed; false when the applier aborted.
    async fn committed_through(&self, index: u64) -> bool {
        matches!(self.wait_committed(index, None).await, Turn::Mine)
    }

    /// Waits until transaction `index` has committed (all before it have), or the applier
    /// aborted; with `holder`, also ends when that transaction (its index and open
    /// transaction) holds a lock an earlier one waits for, looked at every
    /// [`COMMIT_ORDER_CHECK_INTERVAL`].
    async fn wait_committed(&self, index: u64, holder: Option<(u64, TxnId)>) -> Turn {
        let (mut committed, mut aborted) = (self.committed.subscribe(), self.aborted.subscribe());
        loop {
            if *committed.borrow_and_update() >= index {
                return Turn::Mine;
            }
            if *aborted.borrow_and_update() {
                return Turn::Aborted;
            }
            let check = async {
                match holder {
                    Some(_) => tokio::time::sleep(COMMIT_ORDER_CHECK_INTERVAL).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = committed.changed() => {}
                _ = aborted.changed() => {}
                () = check => {
                    if holder.is_some_and(|(own, txn)| self.blocks_earlier(own, txn)) {
                        return Turn::Yield;
                    }
                }
            }
        }
    }

    /// Whether an earlier transaction than `index` waits for a lock `txn` holds.
    fn blocks_earlier(&self, index: u64, txn: TxnId) -> bool {
        let earlier: Vec<TxnId> = self.open.lock().iter().filter(|(i, _)| **i < index).map(|(_, t)| *t).collect();
        !earlier.is_empty() && self.inner.engine.txns.locks.waits().iter().any(|w| w.blocker == txn && earlier.contains(&w.waiter))
    }
}

/// How waiting for the turn ended.
enum Turn {
    Mine,
    /// An earlier transaction waits for a lock this one holds: roll back and go again.
    Yield,
    Aborted,
}

/// The workers `replica_parallel_workers` asks for (0 and 1: one).
fn worker_count(inner: &Inner) -> usize {
    inner.engine.global("replica_parallel_workers").and_then(|v| v.parse::<usize>().ok()).unwrap_or(1).clamp(1, WORKERS_MAX)
}

/// Applies the relayed events' transactions; `Some` when one did not apply (or did not
/// decode), `None` when the relay ended and everything read was applied.
pub(super) async fn apply(inner: &Arc<Inner>, relayed: mpsc::Receiver<Relayed>, executed: &Arc<Mutex<GtidSet>>) -> Option<Stop> {
    let workers = worker_count(inner);
    {
        let mut status = inner.status.lock();
        status.workers = vec![super::WorkerSlot::default(); workers];
    }
    let (stamps, stamped) = mpsc::channel(DURABLE_STAMPS_MAX);
    let shared = Arc::new(Shared {
        inner: Arc::clone(inner),
        committed: watch::channel(0).0,
        aborted: watch::channel(false).0,
        failure: Mutex::new(None),
        executed: Arc::clone(executed),
        open: Mutex::new(HashMap::new()),
        ddl_epoch: AtomicU64::new(0),
        stamps,
    });
    let (jobs, queue) = mpsc::channel(JOBS_QUEUED_MAX);
    let queue = Arc::new(tokio::sync::Mutex::new(queue));
    let tasks: Vec<Task> = (0..workers).map(|id| Task::spawn(work(Arc::clone(&shared), id, Arc::clone(&queue)))).collect();
    let stamper = Task::spawn(stamp_when_durable(Arc::clone(inner), stamped));
    coordinate(&shared, relayed, jobs).await;
    for task in tasks {
        task.join().await;
    }
    let stop = shared.failure.lock().take();
    // The stamper ends once the last sender (in `shared`) has gone.
    drop(shared);
    stamper.join().await;
    stop
}

/// A spawned task, aborted when dropped (the applier's future dropped by STOP REPLICA takes
/// its workers with it; an open transaction rolls back with its session).
struct Task(Option<tokio::task::JoinHandle<()>>);

impl Task {
    fn spawn(future: impl std::future::Future<Output = ()> + Send + 'static) -> Task {
        Task(Some(tokio::spawn(future)))
    }

    async fn join(mut self) {
        if let Some(handle) = self.0.take() {
            let _ = handle.await;
        }
    }
}

impl Drop for Task {
    fn drop(&mut self) {
        if let Some(handle) = self.0.take() {
            handle.abort();
        }
    }
}

/// Reads the relay into jobs, in source order, until it ends or a worker fails.
async fn coordinate(shared: &Arc<Shared>, mut relayed: mpsc::Receiver<Relayed>, jobs: mpsc::Sender<Job>) {
    let inner = &shared.inner;
    let own_uuid = inner.engine.global("server_uuid").unwrap_or_default();
    let mut tables: HashMap<u64, TableMapEvent<'static>> = HashMap::new();
    let mut pending = Pending::default();
    let mut write_sets = WriteSets::default();
    let mut index = 0;
    let mut aborted = shared.aborted.subscribe();
    loop {
        // Each event's relay bytes go back once it is read into a job (`_room` is dropped).
        let (event, _room) = tokio::select! {
            next = relayed.recv() => match next {
                Some(next) => next,
                None => break,
            },
            _ = aborted.changed() => break,
        };
        let log_pos = u64::from(event.header().log_pos());
        let data = match event.read_data() {
            Ok(Some(d)) => d,
            Ok(None) => continue,
            Err(e) => {
                shared.fail(Stop::Io(1236, format!("could not read an event from the source: {e}")));
                break;
            }
        };
        let job = match data {
            EventData::TableMapEvent(t) => {
                tables.insert(t.table_id(), t.into_owned());
                continue;
            }
            EventData::GtidEvent(g) => {
                // Between transactions, which map their tables again before their rows.
                if tables.len() >= TABLE_MAPS_MAX {
                    tables.clear();
                }
                pending = Pending {
                    gtid: Some((uuid_text(g.sid()), g.gno())),
                    origin: Some(quill_log::Origin {
                        uuid: g.sid(),
                        gno: g.gno(),
                        original_commit_us: g.original_commit_timestamp(),
                        original_server_version: g.original_server_version(),
                    }),
                    original_commit_us: g.original_commit_timestamp(),
                    immediate_commit_us: g.immediate_commit_timestamp(),
                    ..Pending::default()
                };
                continue;
            }
            EventData::QueryEvent(q) => {
                let query = q.query().into_owned();
                if query.eq_ignore_ascii_case("BEGIN") || has_applied(shared, &own_uuid, &pending) {
                    continue;
                }
                let (sql_mode, time_zone) = query_context(&q);
                if let Some(create) = create_select(&query) {
                    // CREATE TABLE ... SELECT: its rows follow in this transaction; the table
                    // is created with them, in one record, at its XID.
                    let query = create.to_owned();
                    pending.create = Some(Work::Ddl { schema: q.schema().into_owned(), query, sql_mode, time_zone, rows: Some(Vec::new()) });
                    continue;
                }
                index += 1;
                write_sets.barrier(index);
                let p = std::mem::take(&mut pending);
                Job {
                    index,
                    depends_on: index - 1,
                    gtid: p.gtid,
                    origin: p.origin,
                    original_commit_us: p.original_commit_us,
                    immediate_commit_us: p.immediate_commit_us,
                    work: Work::Ddl { schema: q.schema().into_owned(), query, sql_mode, time_zone, rows: None },
                    log_pos,
                }
            }
            EventData::RowsEvent(rows) => {
                if has_applied(shared, &own_uuid, &pending) {
                    continue;
                }
                let Some(tme) = tables.get(&rows.table_id()) else {
                    shared.fail(Stop::Io(1236, "a rows event without its table map".into()));
                    break;
                };
                if let Some(Work::Ddl { rows: Some(created), .. }) = &mut pending.create {
                    // Decoded against the table once it is made.
                    created.push((tme.clone(), rows.into_owned()));
                    continue;
                }
                match rows::statements(&inner.engine, tme, &rows, &mut pending.keys) {
                    Ok(mut s) => pending.statements.append(&mut s),
                    Err(e) => {
                        shared.fail(Stop::Sql(u32::from(e.code), e.message));
                        break;
                    }
                }
                continue;
            }
            EventData::XidEvent(_) => {
                if has_applied(shared, &own_uuid, &pending) {
                    pending = Pending::default();
                    continue;
                }
                let p = std::mem::take(&mut pending);
                index += 1;
                let (depends_on, work) = match p.create {
                    Some(create) => {
                        write_sets.barrier(index);
                        (index - 1, create)
                    }
                    None => (write_sets.depends_on(index, &p.keys), Work::Rows(p.statements)),
                };
                Job {
                    index,
                    depends_on,
                    gtid: p.gtid,
                    origin: p.origin,
                    original_commit_us: p.original_commit_us,
                    immediate_commit_us: p.immediate_commit_us,
                    work,
                    log_pos,
                }
            }
            _ => continue,
        };
        let ddl = matches!(job.work, Work::Ddl { .. });
        let this = job.index;
        if jobs.send(job).await.is_err() {
            break;
        }
        // The events after a DDL statement are read against the catalog it makes.
        if ddl && !shared.committed_through(this).await {
            break;
        }
    }
}

/// The CREATE TABLE of a `CREATE TABLE ... SELECT` logged as one transaction (its QUERY ends
/// with `START TRANSACTION`, and its rows follow), without the clause.
fn create_select(query: &str) -> Option<&str> {
    let suffix = crate::events::CREATE_SELECT_SUFFIX;
    let trimmed = query.trim_end();
    let cut = trimmed.len().checked_sub(suffix.len())?;
    (trimmed.is_char_boundary(cut) && trimmed[cut..].eq_ignore_ascii_case(suffix) && trimmed[..cut].ends_with(char::is_whitespace))
        .then(|| trimmed[..cut].trim_end())
}

/// Whether the transaction `pending` has already been applied here: its GTID is in
/// `mysql.gtid_executed`, or it is one of this server's own (come back round a chain of
/// replicas that log what they apply).
fn has_applied(shared: &Shared, own_uuid: &str, pending: &Pending) -> bool {
    let Some((uuid, gno)) = &pending.gtid else { return false };
    contains(&shared.executed.lock(), uuid, *gno)
        || (own_uuid.eq_ignore_ascii_case(uuid) && shared.inner.engine.log.get().is_some_and(|log| *gno < log.next_position().1))
}

/// The applier's session settings.
async fn applier_session(inner: &Inner, connection_id: u32) -> SqlResult<Session> {
    let mut session = Session::new(Arc::clone(&inner.engine), connection_id, "system user", "localhost");
    session.replica_applier = true;
    session.answers_before_durable = true;
    session.client_found_rows = true;
    exec(&mut session, &format!("SET SESSION time_zone = '{APPLIER_TIME_ZONE}', sql_mode = '{APPLIER_SQL_MODE}'")).await?;
    // Rows are found by their keys; no gap locks to make workers wait for each other.
    exec(&mut session, "SET SESSION foreign_key_checks = 0, transaction_isolation = 'READ-COMMITTED'").await?;
    Ok(session)
}

/// One worker: takes jobs until the queue closes or the applier aborts.
async fn work(shared: Arc<Shared>, id: usize, queue: Arc<tokio::sync::Mutex<mpsc::Receiver<Job>>>) {
    let connection_id = WORKER_CONNECTION_ID_FIRST - u32::try_from(id).unwrap_or(0);
    let mut session = match applier_session(&shared.inner, connection_id).await {
        Ok(s) => s,
        Err(e) => return shared.fail(Stop::Sql(u32::from(e.code), e.message)),
    };
    let mut prepared = Prepared::default();
    let mut epoch = 0;
    loop {
        let job = {
            let mut queue = queue.lock().await;
            let mut aborted = shared.aborted.subscribe();
            if *aborted.borrow_and_update() {
                break;
            }
            tokio::select! {
                job = queue.recv() => job,
                _ = aborted.changed() => None,
            }
        };
        let Some(job) = job else { break };
        if !shared.committed_through(job.depends_on).await {
            break;
        }
        let now = shared.ddl_epoch.load(Ordering::Acquire);
        if now != epoch {
            // A DDL statement may have changed what they name.
            prepared.forget(&mut session);
            epoch = now;
        }
        let index = job.index;
        let outcome = run_job(&shared, id, &mut session, &mut prepared, job).await;
        shared.open.lock().remove(&index);
        if let Err(stop) = outcome {
            let _ = session.run("ROLLBACK").await;
            shared.fail(stop);
            break;
        }
    }
    let _ = session.run("ROLLBACK").await;
    prepared.forget(&mut session);
}

/// Applies one job and commits it at its turn; `Ok` also when the applier aborted meanwhile
/// (the job then rolls back).
async fn run_job(shared: &Shared, worker: usize, session: &mut Session, prepared: &mut Prepared, mut job: Job) -> Result<(), Stop> {
    let applied = started(shared, worker, &job);
    let created = match &mut job.work {
        Work::Ddl { rows, .. } => rows.take(),
        Work::Rows(_) => None,
    };
    match &job.work {
        Work::Ddl { schema, query, sql_mode, time_zone, .. } => {
            // It depends on everything before it: its turn has come.
            session.replica_create_rows = created.map(|created| -> quill_sql::CreateRows {
                Box::new(move |meta| {
                    created.iter().try_fold(Vec::new(), |mut all, (tme, events)| {
                        all.append(&mut rows::created_rows(meta, tme, events)?);
                        Ok(all)
                    })
                })
            });
            let ran = run_ddl(session, prepared, job.origin, schema, query, sql_mode.as_deref(), time_zone.as_deref()).await;
            session.replica_create_rows = None;
            ran?;
            shared.ddl_epoch.fetch_add(1, Ordering::AcqRel);
        }
        Work::Rows(statements) => {
            // Alone when everything before it has committed: then an error is the
            // transaction's own.
            let mut alone = job.depends_on + 1 >= job.index;
            loop {
                match apply_rows(shared, &job, session, prepared, statements).await {
                    Ok(()) => {}
                    Err(stop) if alone => return Err(stop),
                    Err(_) => {
                        let _ = session.run("ROLLBACK").await;
                        shared.open.lock().remove(&job.index);
                        if !shared.committed_through(job.index - 1).await {
                            return Ok(());
                        }
                        alone = true;
                        continue;
                    }
                }
                // Its turn: every transaction before it committed.
                match shared.wait_committed(job.index - 1, session.txn_id().map(|txn| (job.index, txn))).await {
                    Turn::Mine => break,
                    Turn::Aborted => return Ok(()),
                    Turn::Yield => {
                        let _ = session.run("ROLLBACK").await;
                        shared.open.lock().remove(&job.index);
                        if !shared.committed_through(job.index - 1).await {
                            return Ok(());
                        }
                        alone = true;
                    }
                }
            }
        }
    }
    commit(shared, worker, session, prepared, job, applied).await
}

/// Opens the transaction, runs its row statements and adds its GTID's row.
async fn apply_rows(shared: &Shared, job: &Job, session: &mut Session, prepared: &mut Prepared, statements: &[RowStatement]) -> Result<(), Stop> {
    exec(session, "BEGIN").await.map_err(sql_stop)?;
    if let Some(txn) = session.txn_id() {
        shared.open.lock().insert(job.index, txn);
    }
    for row in statements {
        let what = || format!("Statement: {} with {:?}", row.template, row.params);
        match prepared.run(session, &row.template, row.params.clone()).await {
            Ok(Outcome::Done { affected: 0, .. }) if row.finds_row => {
                return Err(Stop::Sql(1032, format!("Could not execute a row event: Can't find record. {}", what())));
            }
            Ok(_) => {}
            Err(e) => return Err(Stop::Sql(u32::from(e.code), format!("Could not execute a row event: {}. {}", e.message, what()))),
        }
    }
    record_gtid(session, prepared, job).await
}

/// Adds the job's GTID to `mysql.gtid_executed`, a row of its own.
async fn record_gtid(session: &mut Session, prepared: &mut Prepared, job: &Job) -> Result<(), Stop> {
    if let Some((uuid, gno)) = &job.gtid {
        prepared.run(session, INSERT_GTID, vec![Value::Str(uuid.clone()), Value::UInt(*gno), Value::UInt(*gno)]).await.map_err(sql_stop)?;
    }
    Ok(())
}

/// Runs a DDL statement under its source's `sql_mode` and time zone, in `schema`; its record
/// takes the transaction's GTID (`origin`), unless it logs nothing (then the GTID's own
/// commit takes it).
async fn run_ddl(
    session: &mut Session,
    prepared: &mut Prepared,
    origin: Option<quill_log::Origin>,
    schema: &str,
    query: &str,
    sql_mode: Option<&str>,
    time_zone: Option<&str>,
) -> Result<(), Stop> {
    if !schema.is_empty() {
        exec(session, &format!("USE `{}`", schema.replace('`', "``"))).await.map_err(sql_stop)?;
    }
    // The statements prepared so far may name what the DDL changes.
    prepared.forget(session);
    let context = format!(
        "SET SESSION sql_mode = '{}', time_zone = '{}'",
        sql_mode.unwrap_or(APPLIER_SQL_MODE),
        time_zone.unwrap_or(APPLIER_TIME_ZONE).replace('\'', "")
    );
    session.replica_origin = origin;
    let ran = match exec(session, &context).await {
        Ok(_) => exec(session, query).await,
        Err(e) => Err(e),
    };
    let restored = exec(session, &format!("SET SESSION sql_mode = '{APPLIER_SQL_MODE}', time_zone = '{APPLIER_TIME_ZONE}'")).await;
    if let Err(e) = ran.and(restored) {
        session.replica_origin = None;
        return Err(Stop::Sql(u32::from(e.code), format!("Error '{}' on query. Default database: '{schema}'. Query: '{query}'", e.message)));
    }
    Ok(())
}

/// At the job's turn: commits (a DDL statement, which committed already, records its GTID
/// now, on its own), then hands the commit to the stamper and lets the next transaction take
/// its turn.
async fn commit(shared: &Shared, worker: usize, session: &mut Session, prepared: &mut Prepared, job: Job, applied: AppliedTransaction) -> Result<(), Stop> {
    match job.work {
        Work::Rows(_) => session.replica_origin = job.origin,
        // The statement's own record took the GTID, with its row of `mysql.gtid_executed`;
        // when it logged nothing, the GTID's row commits on its own (in autocommit).
        Work::Ddl { .. } if session.replica_origin.is_some() => record_gtid(session, prepared, &job).await?,
        Work::Ddl { .. } => {}
    }
    exec(session, "COMMIT").await.map_err(sql_stop)?;
    session.replica_origin = None;
    if let Some((uuid, gno)) = &job.gtid {
        add_gtid(&mut shared.executed.lock(), uuid, *gno);
    }
    let stamp = Stamp { worker, wait: session.take_log_wait(), applied, gtid: job.gtid, exec_source_log_pos: job.log_pos };
    // The stamper goes only with the applier.
    let _ = shared.stamps.send(stamp).await;
    shared.committed.send_replace(job.index);
    Ok(())
}

fn sql_stop(e: SqlError) -> Stop {
    Stop::Sql(u32::from(e.code), e.message)
}

/// The job starts being applied by `worker`: what its status shows.
fn started(shared: &Shared, worker: usize, job: &Job) -> AppliedTransaction {
    let gtid = job.gtid.as_ref().map(|(uuid, gno)| format!("{uuid}:{gno}")).unwrap_or_default();
    let immediate = if job.immediate_commit_us == 0 { job.original_commit_us } else { job.immediate_commit_us };
    let applying =
        AppliedTransaction { gtid, original_commit_us: job.original_commit_us, immediate_commit_us: immediate, start_apply_us: now_us(), end_apply_us: 0 };
    if let Some(slot) = shared.inner.status.lock().workers.get_mut(worker) {
        slot.applying = Some(applying.clone());
    }
    applying
}

/// Publishes each applied transaction once its commit is durable, in commit order: it
/// becomes its worker's last applied transaction (`replication_applier_status_by_worker`),
/// and its GTID joins `Executed_Gtid_Set`, which so never shows what a crash could take back.
async fn stamp_when_durable(inner: Arc<Inner>, mut stamped: mpsc::Receiver<Stamp>) {
    let mut compressor = match applier_session(&inner, COMPRESSOR_CONNECTION_ID).await {
        Ok(mut s) => {
            // A merge that would wait gives up: it is tried again at the next period.
            let _ = exec(&mut s, "SET SESSION innodb_lock_wait_timeout = 1").await;
            Some((s, Prepared::default()))
        }
        Err(e) => {
            tracing::warn!(error = %e.message, "replica: mysql.gtid_executed will not be compressed");
            None
        }
    };
    let mut since_compression = 0;
    while let Some(stamp) = stamped.recv().await {
        since_compression += 1;
        if since_compression >= GTID_COMPRESSION_PERIOD
            && let Some((session, prepared)) = compressor.as_mut()
        {
            since_compression = 0;
            compress_gtid_table(session, prepared).await;
        }
        if let (Some((end, mode)), Some(log)) = (stamp.wait, inner.engine.log.get()) {
            log.wait(end, mode).await;
        }
        let end_us = now_us();
        let mut status = inner.status.lock();
        if let Some((uuid, gno)) = &stamp.gtid {
            add_gtid(&mut status.executed, uuid, *gno);
        }
        if stamp.exec_source_log_pos > 0 {
            status.exec_source_log_pos = stamp.exec_source_log_pos;
        }
        let mut applied = stamp.applied;
        applied.end_apply_us = end_us;
        status.seconds_behind = Some(end_us.saturating_sub(applied.original_commit_us) / 1_000_000);
        if let Some(slot) = status.workers.get_mut(stamp.worker) {
            if slot.applying.as_ref().is_some_and(|a| a.gtid == applied.gtid) {
                slot.applying = None;
            }
            slot.last_applied = Some(applied);
        }
    }
    if let Some((mut session, mut prepared)) = compressor {
        compress_gtid_table(&mut session, &mut prepared).await;
        prepared.forget(&mut session);
    }
}

/// Merges the committed rows of `mysql.gtid_executed` that are contiguous into one row per
/// interval, in one transaction; on any error (a lock it would wait for) it rolls back and
/// leaves the rows as they were.
async fn compress_gtid_table(session: &mut Session, prepared: &mut Prepared) {
    let merged: SqlResult<()> = async {
        exec(session, "BEGIN").await?;
        let Outcome::Rows(rs) = exec(session, "SELECT source_uuid, interval_start, interval_end FROM mysql.gtid_executed ORDER BY 1, 2").await? else {
            return Ok(());
        };
        let number = |v: Option<&Value>| match v {
            Some(Value::Int(i)) => u64::try_from(*i).unwrap_or(0),
            Some(Value::UInt(u)) => *u,
            _ => 0,
        };
        // Runs of rows each starting just after the one before: (uuid, first start, last
        // start, end).
        let mut runs: Vec<(String, u64, u64, u64)> = Vec::new();
        for row in &rs.rows {
            let Some(Value::Str(uuid)) = row.first() else { continue };
            let (start, end) = (number(row.get(1)), number(row.get(2)));
            match runs.last_mut() {
                Some(run) if run.0 == *uuid && run.3 + 1 == start => {
                    run.2 = start;
                    run.3 = end;
                }
                _ => runs.push((uuid.clone(), start, start, end)),
            }
        }
        for (uuid, first, last, end) in runs.into_iter().filter(|r| r.2 > r.1) {
            let delete = "DELETE FROM mysql.gtid_executed WHERE source_uuid = ? AND interval_start > ? AND interval_start <= ?";
            prepared.run(session, delete, vec![Value::Str(uuid.clone()), Value::UInt(first), Value::UInt(last)]).await?;
            let widen = "UPDATE mysql.gtid_executed SET interval_end = ? WHERE source_uuid = ? AND interval_start = ?";
            prepared.run(session, widen, vec![Value::UInt(end), Value::Str(uuid), Value::UInt(first)]).await?;
        }
        exec(session, "COMMIT").await.map(|_| ())
    }
    .await;
    if let Err(e) = merged {
        let _ = session.run("ROLLBACK").await;
        tracing::debug!(error = %e.message, "replica: mysql.gtid_executed not compressed this time");
    }
}

/// A QUERY event's `sql_mode` (as names) and time zone, when it carries them.
fn query_context(q: &mysql_common::binlog::events::QueryEvent<'_>) -> (Option<String>, Option<String>) {
    use mysql_common::binlog::consts::StatusVarKey;
    use mysql_common::binlog::events::StatusVarVal;
    let vars = q.status_vars();
    let sql_mode = vars.get_status_var(StatusVarKey::SqlMode).and_then(|v| match v.get_value() {
        Ok(StatusVarVal::SqlMode(mode)) => Some(crate::events::sql_mode_names(mode.0)),
        _ => None,
    });
    let time_zone = vars.get_status_var(StatusVarKey::TimeZone).and_then(|v| match v.get_value() {
        Ok(StatusVarVal::TimeZone(tz)) => Some(tz.as_str().into_owned()),
        _ => None,
    });
    (sql_mode, time_zone)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transaction_depends_on_the_last_one_that_wrote_a_key_of_its_own() {
        let mut w = WriteSets::default();
        assert_eq!(w.depends_on(1, &[10, 11]), 0);
        assert_eq!(w.depends_on(2, &[12]), 0, "no key in common");
        assert_eq!(w.depends_on(3, &[11, 12]), 2, "the newest writer of any of its keys");
        assert_eq!(w.depends_on(4, &[]), 0);
        assert_eq!(w.depends_on(5, &[13, 13]), 0, "a key twice (an update's two images) is no dependency on itself");
        w.barrier(6);
        assert_eq!(w.depends_on(7, &[99]), 6, "nothing passes a DDL statement");
        assert_eq!(w.depends_on(8, &[10]), 6, "the writers before it are forgotten");
    }

    #[test]
    fn a_create_select_logged_as_one_transaction_is_recognised() {
        assert_eq!(create_select("CREATE TABLE `b` (`id` int) START TRANSACTION"), Some("CREATE TABLE `b` (`id` int)"));
        assert_eq!(create_select("CREATE TABLE b (id int) start transaction "), Some("CREATE TABLE b (id int)"));
        assert_eq!(create_select("CREATE TABLE b (id int)"), None);
        assert_eq!(create_select("START TRANSACTION"), None);
        assert_eq!(create_select("CREATE TABLE xSTART TRANSACTION"), None);
    }

    #[test]
    fn past_its_history_bound_the_write_set_forgets_and_orders_after_the_last() {
        let mut w = WriteSets::default();
        let keys: Vec<u64> = (0..WRITESET_HISTORY_MAX as u64).collect();
        assert_eq!(w.depends_on(1, &keys), 0);
        assert_eq!(w.depends_on(2, &[1_000_000]), 1, "the history was full: it starts again after 1");
        assert_eq!(w.last_writer.len(), 1);
    }
}
