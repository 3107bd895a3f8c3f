//! Durability: what the SQL layer writes to the commit log, and how it rebuilds the engine
//! from the log at start-up.
//!
//! At commit (`session::commit`), a transaction's writes become log changes ([`add_row_change`]):
//! the final image of every row it changed, keyed by database, table and primary key, taken
//! before the versions are stamped committed. A DDL statement becomes a record holding its
//! text ([`ddl_changes`]).
//!
//! At start-up ([`open`]) the log is replayed in commit order through [`Replayer`]
//! (the log hands over a streamed transaction's parts at its commit, as records of their own):
//! - row changes are installed as committed versions, with indexes, hidden row ids and
//!   AUTO_INCREMENT counters kept in step. On paged tables a change whose replaced row the
//!   log holds is not applied to its leaves at start-up: it waits until they are read in
//!   (`Handler::redo_committed`), within [`OpenConfig::redo_waiting_bytes`], and a
//!   background thread ([`drain_redo`]) applies what is left once the server is up;
//! - DDL is executed again through a session, which rebuilds the catalog as it was at that
//!   point of the log.
//!
//! A record that cannot be replayed stops start-up with an error. Starting with part of the
//! committed data missing would lose it silently.
//!
//! Flush modes and group-commit delays are the log's. The variables that set them
//! (`innodb_flush_log_at_trx_commit`, `binlog_group_commit_sync_delay`,
//! `binlog_group_commit_sync_no_delay_count`) are applied to it by [`apply_global`] on
//! `SET GLOBAL`, and from the options at start.

use std::ops::Bound;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use quill_io::Fs;
use quill_log::{Body, Change, DdlContext, FlushMode, Log, LogConfig, Record, Recovered};
use quill_storage::checkpoint::{CheckpointEntry, CheckpointError, CheckpointPosition, find_checkpoints, read_checkpoint_versioned};
#[cfg(doc)]
use quill_storage::handler::Handler;
use quill_storage::tablespace::Tablespace;
use quill_storage::{ReadView, Replaced, RowChange, ScanOrder, Value, WrittenRows, decode_log_row, decode_row, log_row};

use crate::catalog::Catalog;
use crate::engine::Engine;
use crate::error::{Result, SqlError, codes};
use crate::session::Session;
use crate::vars::{self, VarSet};

/// The log's directory inside the data directory.
pub const LOG_DIR: &str = "log";

/// Why the engine could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("commit log: {0}")]
    Io(#[from] std::io::Error),
    #[error("replaying the commit log record at LSN {lsn}: {message}")]
    Replay { lsn: u64, message: String },
    #[error("{0}")]
    Checkpoint(#[from] CheckpointError),
    #[error("loading checkpoint {path}: {message}")]
    Load { path: String, message: String },
}

/// What start-up found and did.
#[derive(Debug, Clone)]
pub struct OpenReport {
    /// The checkpoint loaded: its log position and the rows it held.
    pub checkpoint: Option<(u64, u64)>,
    /// The log replayed after it.
    pub log: Recovered,
    /// Threads that applied its row changes ([`OpenConfig::replay_threads`]).
    pub replay_threads: usize,
    /// Row changes and index entries replayed that wait for their leaves to be read in
    /// ([`quill_storage::Handler::redo_committed`]), as start-up ended.
    pub redo_pending: u64,
    /// Time spent loading the checkpoint, and reading and replaying the log after it.
    pub checkpoint_time: Duration,
    pub replay_time: Duration,
}

/// Opens the engine on `datadir`: loads the newest complete checkpoint, replays the
/// commit log after it (an empty data directory starts empty), and attaches the log, so
/// commits from now on are durable.
///
/// # Errors
/// I/O errors, a damaged checkpoint, or a record that cannot be replayed.
pub fn open(globals: VarSet, fs: Arc<dyn Fs>, datadir: &Path) -> std::result::Result<(Arc<Engine>, OpenReport), OpenError> {
    open_with(globals, fs, datadir, |_| {})
}

/// How [`open_with`] opens: the log's configuration and how recovery replays it.
#[derive(Clone)]
pub struct OpenConfig {
    pub log: LogConfig,
    /// Threads that apply a batch of row changes at once ([`Replayer::flush`]); 1 applies
    /// them on the calling thread, in log order, as the crash simulator needs for a seed to
    /// replay exactly. Defaults to [`replay_threads_default`].
    pub replay_threads: usize,
    /// Bytes of replayed changes that may wait in memory for their leaves
    /// ([`quill_storage::Handler::redo_committed`]); changes past it are applied as they are
    /// replayed, reading their leaves. Defaults to half of `innodb_buffer_pool_size`
    /// ([`REDO_WAITING_POOL_SHARE`]), and at least [`REDO_WAITING_BYTES_MIN`]: a memory
    /// bound beside the pool's, held only until the changes are applied.
    pub redo_waiting_bytes: u64,
    /// Whether a background thread applies the changes left waiting once the server is up
    /// ([`drain_redo`]); without it, a leaf takes its changes when a query or a checkpoint
    /// reads it (the crash simulator, whose runs must repeat exactly).
    pub drain_redo_in_background: bool,
}

/// The share of the buffer pool's size that replayed changes may hold while they wait for
/// their leaves: [`OpenConfig::redo_waiting_bytes`] is the pool's size divided by this.
pub const REDO_WAITING_POOL_SHARE: u64 = 2;

/// The least [`OpenConfig::redo_waiting_bytes`] defaults to, whatever the pool's size: room
/// for the changes of about 64 MiB of log.
pub const REDO_WAITING_BYTES_MIN: u64 = 64 << 20;

/// Bytes a replayed change is counted as holding while it waits, besides its key and image:
/// its closure, its queue node and key allocations, and those of the two index entries an
/// update that moves a key changes (an estimate, for [`OpenConfig::redo_waiting_bytes`]).
const REDO_WAITING_OVERHEAD_BYTES: u64 = 256;

/// Most threads recovery applies row changes on ([`OpenConfig::replay_threads`]).
pub const REPLAY_THREADS_MAX: usize = 8;

/// The machine's cores, at most [`REPLAY_THREADS_MAX`].
#[must_use]
pub fn replay_threads_default() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get).min(REPLAY_THREADS_MAX)
}

/// [`open`] with its configuration, as the variables make it, changed by `adjust` first
/// (the crash simulator writes the log inline, `quill_log::WriterMode`, and replays on one
/// thread).
///
/// # Errors
/// As [`open`].
pub fn open_with(
    mut globals: VarSet,
    fs: Arc<dyn Fs>,
    datadir: &Path,
    adjust: impl FnOnce(&mut OpenConfig),
) -> std::result::Result<(Arc<Engine>, OpenReport), OpenError> {
    // Checked where options are read (`vars::normalise`): paged or memory.
    let paged = globals.get("quill_table_storage") != Some("memory");
    let pool_bytes = globals.get("innodb_buffer_pool_size").and_then(|v| v.parse().ok()).unwrap_or(quill_storage::buffer_pool::DEFAULT_CAPACITY_BYTES);
    let mut open_config = OpenConfig {
        log: log_config(&globals),
        replay_threads: replay_threads_default(),
        redo_waiting_bytes: (pool_bytes / REDO_WAITING_POOL_SHARE).max(REDO_WAITING_BYTES_MIN),
        drain_redo_in_background: true,
    };
    adjust(&mut open_config);
    let OpenConfig { log: config, replay_threads, redo_waiting_bytes, drain_redo_in_background } = open_config;
    fs.create_dir_all(datadir)?;
    globals.values.insert("server_uuid", crate::server_uuid::load_or_create(fs.as_ref(), datadir)?);
    let evict_always = globals.get("quill_debug_evict_always") == Some("ON");
    let engine = Engine::new(globals);
    if paged {
        let space = Tablespace::open(Arc::clone(&fs), datadir, pool_bytes)?;
        space.pool.set_evict_always(evict_always);
        let mut catalog = (*engine.catalog()).clone();
        catalog.set_tablespace(Arc::new(space));
        engine.install_catalog(catalog);
    }
    let mut replayer = Replayer::new(Arc::clone(&engine), replay_threads, redo_waiting_bytes);
    // A checkpoint a crash interrupted is of no use, and may be holding the space a full
    // disk needs back.
    let unfinished = quill_storage::checkpoint::remove_unfinished_checkpoints(fs.as_ref(), datadir)?;
    if unfinished > 0 {
        tracing::info!(files = unfinished, "removed unfinished checkpoint files");
    }
    let loading = std::time::Instant::now();
    let checkpoint = replayer.load_checkpoint(fs.as_ref(), datadir)?;
    let checkpoint_time = loading.elapsed();
    let replaying = std::time::Instant::now();
    engine.schemas.lock().record(0, &engine.catalog());
    let start = checkpoint.as_ref().map(|c| quill_log::Start {
        lsn: c.position.lsn,
        next_seq: c.position.next_seq,
        read_from: c.position.read_from,
        definitions_from: c.definitions_from,
        stream_commits: c.stream_commits.clone(),
        check_history: c.version < quill_storage::checkpoint::VERSION_BEHIND_DURABLE_LOG,
    });
    let opened = Log::open(fs, &datadir.join(LOG_DIR), config, start, |record| replayer.take(record));
    let (log, recovered) = opened.map_err(|e| match (e, &checkpoint) {
        (OpenError::Io(e), Some(c)) => OpenError::Io(std::io::Error::other(format!("{e} (starting from checkpoint {})", c.path.display()))),
        (e, _) => e,
    })?;
    replayer.flush()?;
    drop(replayer);
    let replay_time = replaying.elapsed();
    if let Some(lost) = &recovered.lost {
        tracing::error!(
            log_end = lost.log_end,
            resumed_at = lost.resumed_at,
            files = ?lost.files,
            "the commit log ended before the newest checkpoint's position: the tables are the checkpoint's, the log resumes at its position, \
             and the binary log before it is gone (its segments were renamed as listed)"
        );
    }
    if let Some(c) = &checkpoint {
        engine.status.checkpoint_lsn.store(c.position.lsn, std::sync::atomic::Ordering::Relaxed);
    }
    engine.commit_notify.set_floor(log.next_position().0);
    assert!(engine.log.set(log).is_ok(), "the log is attached once");
    let redo_pending = engine.redo_pending();
    if redo_pending > 0 && drain_redo_in_background {
        let drained = Arc::clone(&engine);
        if let Err(e) = std::thread::Builder::new().name("quill-redo-drain".into()).spawn(move || drain_redo(&drained)) {
            // Nothing is lost: each leaf takes its changes when it is next read.
            tracing::warn!(error = %e, "recovery: no thread to apply the replayed changes in the background; leaves take them as they are read");
        }
    }
    Ok((
        engine,
        OpenReport { checkpoint: checkpoint.map(|c| (c.position.lsn, c.rows)), log: recovered, replay_threads, redo_pending, checkpoint_time, replay_time },
    ))
}

/// Applies the replayed changes still waiting for their leaves, table by table, reading the
/// leaves in ([`quill_storage::Handler::drain_redo`]): what start-up left to do in the
/// background. Queries meanwhile find every leaf they read with its changes in, and a
/// checkpoint applies a table's before it writes it. A table dropped or rebuilt meanwhile
/// (its data no longer the catalog's) is passed over: its changes go with it.
pub fn drain_redo(engine: &Engine) {
    let started = std::time::Instant::now();
    let pending = engine.redo_pending();
    let tables: Vec<(String, String, Arc<dyn quill_storage::Handler>)> = {
        let catalog = engine.catalog();
        catalog.databases.values().flat_map(|db| db.tables.values()).map(|t| (t.db.clone(), t.name.clone(), Arc::clone(&t.data))).collect()
    };
    for (db, name, table) in tables {
        let current = engine.catalog().table(&db, &name).is_ok_and(|t| Arc::ptr_eq(&t.data, &table));
        if current {
            table.drain_redo();
        }
    }
    tracing::info!(changes = pending, elapsed_ms = started.elapsed().as_millis() as u64, "recovery: replayed changes all applied to their leaves");
}

#[derive(Debug, Clone)]
struct LoadedCheckpoint {
    path: std::path::PathBuf,
    position: CheckpointPosition,
    rows: u64,
    /// Every record from here on is described by the loaded definitions.
    definitions_from: u64,
    /// Streams committed before its `read_from` whose commit records the log still holds.
    stream_commits: Vec<(u64, u64)>,
    /// Its format version.
    version: u32,
}

fn log_config(globals: &VarSet) -> LogConfig {
    let int = |name: &str| globals.get(name).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    LogConfig {
        flush_mode: FlushMode::from_value(u8::try_from(int("innodb_flush_log_at_trx_commit")).unwrap_or(1)).unwrap_or(FlushMode::AtCommit),
        group_delay: Duration::from_micros(int("binlog_group_commit_sync_delay").min(vars::GROUP_DELAY_US_MAX)),
        group_no_delay_count: int("binlog_group_commit_sync_no_delay_count").min(vars::GROUP_NO_DELAY_COUNT_MAX),
        segment_bytes: globals
            .get("quill_log_segment_bytes")
            .and_then(|v| v.parse().ok())
            .filter(|&b: &u64| b >= 4096)
            .unwrap_or(quill_log::DEFAULT_SEGMENT_BYTES),
        segment_expiry: segment_expiry(int("binlog_expire_logs_seconds")),
        ..LogConfig::default()
    }
}

/// `binlog_expire_logs_seconds` as the log keeps it: 0 never expires (as in MySQL).
fn segment_expiry(seconds: u64) -> Option<Duration> {
    (seconds > 0).then(|| Duration::from_secs(seconds))
}

/// Applies a global variable that configures the log or the buffer pool. `value` comes
/// normalised by `vars::normalise`, which keeps it in the variable's range. Returns a warning
/// when the server has nothing the variable acts on (a buffer pool variable with
/// `quill_table_storage=memory`).
///
/// # Errors
/// 1231 for a flush mode the log does not have.
pub fn apply_global(engine: &Engine, name: &str, value: &str) -> Result<Option<crate::Warning>> {
    let Some(log) = engine.log.get() else { return Ok(None) };
    let wrong = || SqlError::new(codes::ER_WRONG_VALUE_FOR_VAR, format!("Variable '{name}' can't be set to the value of '{value}'"));
    match name {
        "binlog_expire_logs_seconds" => log.set_segment_expiry(segment_expiry(value.parse().map_err(|_| wrong())?)),
        "innodb_flush_log_at_trx_commit" => {
            let mode = value.parse::<u8>().ok().and_then(FlushMode::from_value).ok_or_else(wrong)?;
            log.set_flush_mode(mode);
        }
        "quill_debug_evict_always" | "innodb_buffer_pool_size" => {
            let Some(space) = engine.catalog().tablespace() else {
                return Ok(Some(crate::Warning {
                    level: "Warning",
                    code: codes::ER_WARN_DEPRECATED_SYNTAX.0,
                    message: format!("'{name}' has no effect: tables are kept in memory (quill_table_storage=memory)"),
                }));
            };
            if name == "innodb_buffer_pool_size" {
                space.pool.set_capacity_bytes(value.parse().map_err(|_| wrong())?);
            } else {
                space.pool.set_evict_always(value == "ON");
            }
            space.pool.make_room();
        }
        "binlog_group_commit_sync_delay" | "binlog_group_commit_sync_no_delay_count" => {
            let globals = engine.globals.read();
            let int = |n: &str| if n == name { value.parse().unwrap_or(0) } else { globals.get(n).and_then(|v| v.parse().ok()).unwrap_or(0) };
            log.set_group_delay(Duration::from_micros(int("binlog_group_commit_sync_delay")), int("binlog_group_commit_sync_no_delay_count"));
        }
        _ => {}
    }
    Ok(None)
}

/// Adds to `body` the log change for the row at `pk` of `table` that the transaction whose
/// writes `rows` walks wrote (`WrittenRows::pending_change`): an INSERT of its new image,
/// an UPDATE or a DELETE with the committed image it replaced when `full` (the session's
/// `binlog_row_image` is FULL; MINIMAL logs none, the key naming the row). A row the
/// transaction inserted and deleted again is a DELETE with no image when the transaction has
/// `streamed` parts already (one may hold its INSERT), and nothing otherwise. Kinds are
/// judged against the row as it was before the transaction, so a row a streamed part logged
/// and a later statement changed is logged again the same way: replay applies the later
/// image. `false`, and nothing added, when there is nothing to log (no pending version
/// there: a failed statement undid it). `before` and `after` are scratch space, reused from
/// row to row.
///
/// # Errors
/// A name too long for the log's length field.
pub fn add_row_change(
    body: &mut Body,
    table: &crate::catalog::TableMeta,
    rows: &mut dyn WrittenRows,
    pk: &[u8],
    (full, streamed): (bool, bool),
    (before, after): (&mut Vec<u8>, &mut Vec<u8>),
) -> std::result::Result<bool, quill_log::EncodeError> {
    before.clear();
    after.clear();
    let replaced = full.then_some(&mut *before);
    let (db, name) = (&table.db, &table.name);
    match rows.pending_change(pk, replaced, after) {
        Some(RowChange::Insert) => body.insert(db, name, pk, after)?,
        Some(RowChange::Update) => body.update(db, name, pk, full.then_some(&before[..]), after)?,
        Some(RowChange::Delete) => body.delete(db, name, pk, full.then_some(&before[..]))?,
        Some(RowChange::Nothing) if streamed => body.delete(db, name, pk, None)?,
        Some(RowChange::Nothing) | None => return Ok(false),
    }
    Ok(true)
}

/// The log changes of a DDL statement with text `sql`, run with default database `db`.
///
/// Replaying the text rebuilds the catalog, except for `CREATE TABLE ... SELECT`. Its rows
/// depend on what the SELECT read and on functions like NOW() and RAND(), so it is logged as
/// the created table's definition (`SHOW CREATE TABLE`) and one PUT per row it inserted
/// (`created_by_select`: the table it created).
#[must_use]
pub fn ddl_changes(catalog: &Catalog, db: Option<&str>, sql: String, context: DdlContext, created_by_select: Option<&(String, String)>) -> Vec<Change> {
    let ddl = |db: &str, sql: String| Change::Ddl { db: db.to_owned(), sql, context: Some(context.clone()) };
    let Some((table_db, name)) = created_by_select else { return vec![ddl(db.unwrap_or_default(), sql)] };
    let Ok(table) = catalog.table(table_db, name) else { return vec![ddl(db.unwrap_or_default(), sql)] };
    let mut changes = vec![ddl(table_db, table_definition(catalog, table_db, name))];
    for (key, row) in table.data.scan(Bound::Unbounded, Bound::Unbounded, ReadView::current(quill_storage::table::RECOVERY_TXN), ScanOrder::Ascending) {
        changes.push(Change::Insert { db: table_db.clone(), table: name.clone(), key, row: log_row(&row) });
    }
    changes
}

/// A table's `SHOW CREATE TABLE` statement: how checkpoints and CTAS records define it.
///
/// # Panics
/// If the table is not in the catalog.
#[must_use]
pub fn table_definition(catalog: &Catalog, db: &str, name: &str) -> String {
    crate::show::show_create_table(catalog, db, name, crate::show::Quoting::Always)
        .ok()
        .and_then(|rs| rs.rows.into_iter().next())
        .and_then(|row| row.into_iter().nth(1))
        .and_then(|v| if let Value::Str(s) = v { Some(s) } else { None })
        .expect("SHOW CREATE TABLE of a table in the catalog")
}

/// The SQL error for a transaction the log cannot take; `table` is one it wrote (the one
/// MySQL names when a write finds the disk full).
#[must_use]
pub fn log_error(e: &quill_log::EncodeError, table: &str) -> SqlError {
    match e {
        quill_log::EncodeError::ShuttingDown => SqlError::new(codes::ER_SERVER_SHUTDOWN, "Server shutdown in progress"),
        quill_log::EncodeError::LogFull(_) => disk_full(table),
        other => SqlError::new(codes::ER_TRANS_CACHE_FULL, other.to_string()),
    }
}

/// 1114, as MySQL answers a write to a full disk.
#[must_use]
pub fn disk_full(table: &str) -> SqlError {
    SqlError::new(crate::error::codes::ER_RECORD_FILE_FULL, format!("The table '{table}' is full"))
}

/// The table a log change is about (for [`log_error`]).
#[must_use]
pub fn change_table(change: &Change) -> &str {
    match change {
        Change::Insert { table, .. }
        | Change::Update { table, .. }
        | Change::Delete { table, .. }
        | Change::Put { table, .. }
        | Change::PutV1 { table, .. } => table,
        _ => "",
    }
}

/// Applies log records to an engine that has no log attached yet.
struct Replayer {
    engine: Arc<Engine>,
    /// Runs replayed DDL; never logs it again (the engine has no log during replay).
    session: Session,
    /// Records read but not yet applied: a batch whose leaves are asked for together.
    pending: Vec<Record>,
    /// Row changes in `pending`.
    pending_changes: usize,
    /// [`OpenConfig::replay_threads`].
    threads: usize,
    /// [`OpenConfig::redo_waiting_bytes`], and the bytes of changes left waiting so far (an
    /// estimate: [`REDO_WAITING_OVERHEAD_BYTES`]).
    redo_waiting_bytes: (u64, u64),
}

/// Row changes the replay reads ahead for at once (`Replayer::flush`): the leaves they touch
/// are asked of the OS together, so the reads of a table larger than the pool overlap
/// instead of waiting one by one. Bounds the records held back from applying.
pub const READ_AHEAD_CHANGES: usize = 2048;

/// One row change of a batch, with what applying it needs: its table, resolved in the
/// batch's catalog, and its transaction's commit timestamp.
struct RowWork<'a> {
    lsn: u64,
    ts: quill_storage::Timestamp,
    table: &'a crate::catalog::TableMeta,
    key: &'a [u8],
    image: RowImage<'a>,
    /// The committed image the change replaced, when the log holds it (`None` also for an
    /// insert, which replaced nothing).
    before: Option<&'a [u8]>,
    /// The change may wait for its leaves ([`quill_storage::Handler::redo_committed`]).
    lazy: bool,
}

/// The row a change installs, as the log holds it.
#[derive(Clone, Copy)]
enum RowImage<'a> {
    /// Storage's log layout (`decode_log_row`).
    Log(&'a [u8]),
    /// The first row encoding, of logs written before row images (`decode_row`).
    V1(&'a [u8]),
    /// A delete.
    Deleted,
    /// An insert, which replaced no row: its image in the log layout.
    Inserted(&'a [u8]),
}

impl RowImage<'_> {
    /// Bytes of the image as the log holds it.
    fn bytes(&self) -> usize {
        match self {
            RowImage::Log(image) | RowImage::V1(image) | RowImage::Inserted(image) => image.len(),
            RowImage::Deleted => 0,
        }
    }
}

impl Replayer {
    fn new(engine: Arc<Engine>, threads: usize, redo_waiting_bytes: u64) -> Replayer {
        let session = Session::new(Arc::clone(&engine), 0, "system user", "localhost");
        Replayer { engine, session, pending: Vec::new(), pending_changes: 0, threads: threads.max(1), redo_waiting_bytes: (redo_waiting_bytes, 0) }
    }

    /// Takes the log's next record: applied with its batch once the batch holds
    /// [`READ_AHEAD_CHANGES`] row changes, or at [`Replayer::flush`]; a record with DDL at once.
    fn take(&mut self, record: Record) -> std::result::Result<(), OpenError> {
        // DDL is applied as it comes, the records before it first: what follows it in the log
        // is read with the catalog it made.
        if record.changes.iter().any(|c| matches!(c, Change::Ddl { .. })) {
            self.flush()?;
            return self.apply(record);
        }
        self.pending_changes += record.changes.len();
        self.pending.push(record);
        if self.pending_changes >= READ_AHEAD_CHANGES {
            self.flush()?;
        }
        Ok(())
    }

    /// Applies the pending records (none holds DDL, so one catalog describes them all).
    ///
    /// Each record's transaction takes its commit timestamp in log order. Its row changes
    /// are then shared among [`Replayer::threads`] by table and primary key, so that each
    /// row's changes stay on one thread in log order: changes to different rows commute
    /// (each has its own chain and index entries, and the counters they move are maxima or
    /// sums). Each thread decodes its changes' images once, asks for the leaves they use
    /// ([`Handler::read_ahead`], then [`Handler::read_ahead_current`] for those whose
    /// replaced row the log does not hold), and installs them in order.
    fn flush(&mut self) -> std::result::Result<(), OpenError> {
        let records = std::mem::take(&mut self.pending);
        self.pending_changes = 0;
        if records.is_empty() {
            return Ok(());
        }
        let catalog = self.engine.catalog();
        let mut shares: Vec<Vec<RowWork<'_>>> = (0..self.threads).map(|_| Vec::new()).collect();
        let paged = catalog.tablespace().is_some();
        let (bound, waiting) = &mut self.redo_waiting_bytes;
        for record in &records {
            let ts = self.engine.txns.next_commit_ts();
            let fail = |message: String| OpenError::Replay { lsn: record.lsn, message };
            for change in &record.changes {
                let Some(RowChangeRef { db, table, key, image, before }) = row_change(change).map_err(fail)? else { continue };
                let table = catalog.table(db, table).map_err(|e| fail(e.to_string()))?;
                let share = if self.threads == 1 { 0 } else { share_of(table, key, self.threads) };
                // A change may wait for its leaves while the changes waiting are within their
                // bound; past it, each reads its leaves as it is applied.
                let lazy = paged && *waiting < *bound;
                if lazy {
                    *waiting += REDO_WAITING_OVERHEAD_BYTES + key.len() as u64 + image.bytes() as u64;
                }
                shares[share].push(RowWork { lsn: record.lsn, ts, table, key, image, before, lazy });
            }
        }
        let shares: Vec<Vec<RowWork<'_>>> = shares.into_iter().filter(|share| !share.is_empty()).collect();
        let Some((first, others)) = shares.split_first() else { return Ok(()) };
        std::thread::scope(|scope| {
            let mut here = vec![first];
            let mut spawned = Vec::new();
            for share in others {
                match std::thread::Builder::new().name("quill-replay".into()).spawn_scoped(scope, move || apply_rows(share, paged)) {
                    Ok(thread) => spawned.push(thread),
                    // No thread to be had (the process at its limit): this one applies the share.
                    Err(e) => {
                        tracing::warn!(error = %e, "recovery: no replay thread could be started; applying its share on the recovering thread");
                        here.push(share);
                    }
                }
            }
            let mut result = Ok(());
            for share in here {
                result = earlier_failure(result, apply_rows(share, paged));
            }
            for thread in spawned {
                result = earlier_failure(result, thread.join().expect("a replay thread does not panic"));
            }
            result
        })
    }

    /// Loads the newest checkpoint in `datadir` that is intact, if there is one. A damaged
    /// one (its checksum or layout wrong: nothing of it was applied) is renamed to
    /// `<name>.damaged`, kept for an operator, and the next older one is tried; the log must
    /// then reach back to where that one starts, or [`Log::open`] refuses to start.
    fn load_checkpoint(&mut self, fs: &dyn Fs, datadir: &Path) -> std::result::Result<Option<LoadedCheckpoint>, OpenError> {
        for (_, path) in find_checkpoints(fs, datadir)? {
            match self.load_checkpoint_file(fs, &path) {
                Err(OpenError::Checkpoint(CheckpointError::Damaged { path: damaged, what })) => {
                    let mut aside = path.as_os_str().to_owned();
                    aside.push(".damaged");
                    fs.rename(&path, Path::new(&aside))?;
                    fs.sync_dir(datadir)?;
                    tracing::error!(checkpoint = damaged, what, renamed_to = ?aside, "checkpoint damaged; trying the next older one");
                }
                other => return other.map(Some),
            }
        }
        Ok(None)
    }

    fn load_checkpoint_file(&mut self, fs: &dyn Fs, path: &Path) -> std::result::Result<LoadedCheckpoint, OpenError> {
        let path = path.to_path_buf();
        let fail = |message: String| OpenError::Load { path: path.display().to_string(), message };
        let ts = self.engine.txns.next_commit_ts();
        let mut table: Option<(String, String)> = None;
        let mut rows = 0;
        let mut definitions_from = None;
        let mut stream_commits = Vec::new();
        let (position, version) = read_checkpoint_versioned(fs, &path, |entry| {
            match entry {
                CheckpointEntry::Database(name) => {
                    let sql = format!("CREATE DATABASE IF NOT EXISTS {}", crate::ident::quote_identifier(&name));
                    self.session.replay_ddl(None, &sql).map_err(|e| fail(format!("{sql}: {e}")))?;
                }
                CheckpointEntry::DatabaseCollation { name, collation } => {
                    let sql = format!("ALTER DATABASE {} COLLATE '{}'", crate::ident::quote_identifier(&name), collation.replace('\'', ""));
                    self.session.replay_ddl(None, &sql).map_err(|e| fail(format!("{sql}: {e}")))?;
                }
                CheckpointEntry::Table { db, name, definition, auto_increment } => {
                    self.session.replay_ddl(Some(db.clone()), &definition).map_err(|e| fail(format!("{definition}: {e}")))?;
                    self.engine.catalog().table(&db, &name).map_err(|e| fail(e.to_string()))?.data.set_auto_increment(auto_increment);
                    table = Some((db, name));
                }
                CheckpointEntry::DefinitionsFrom(lsn) => definitions_from = Some(lsn),
                CheckpointEntry::StreamCommit { commit, first } => stream_commits.push((commit, first)),
                CheckpointEntry::View { db, name, definition } => {
                    self.session.replay_ddl(Some(db.clone()), &definition).map_err(|e| fail(format!("{definition}: {e}")))?;
                    if self.engine.catalog().view(&db, &name).is_none() {
                        return Err(fail(format!("{db}.{name}: its definition made no view")));
                    }
                }
                CheckpointEntry::Program { db, name, definition } => {
                    self.session.replay_ddl(Some(db.clone()), &definition).map_err(|e| fail(format!("{definition}: {e}")))?;
                    let catalog = self.engine.catalog();
                    let made =
                        catalog.trigger(&db, &name).is_some() || catalog.routine(&db, &name, true).is_some() || catalog.routine(&db, &name, false).is_some();
                    if !made {
                        return Err(fail(format!("{db}.{name}: its definition made no trigger or routine")));
                    }
                }
                CheckpointEntry::TablePages(pages) => {
                    let (db, name) = table.as_ref().ok_or_else(|| fail("table pages before any table".into()))?;
                    let catalog = self.engine.catalog();
                    let space = catalog.tablespace().ok_or_else(|| fail(format!("{db}.{name} is a paged table: start with quill_table_storage=paged")))?;
                    let meta = catalog.table(db, name).map_err(|e| fail(e.to_string()))?.with_pages(&space, &pages).map_err(fail)?;
                    let mut next = (*catalog).clone();
                    next.replace_table(meta).map_err(|e| fail(e.to_string()))?;
                    self.engine.install_catalog(next);
                    rows += pages.indexes.first().map_or(0, quill_storage::tablespace::IndexPages::entries);
                }
                CheckpointEntry::Row { key, row } => {
                    let (db, name) = table.as_ref().ok_or_else(|| fail("a row before any table".into()))?;
                    self.engine.catalog().table(db, name).map_err(|e| fail(e.to_string()))?.data.apply_committed(&key, Some(row), ts);
                    rows += 1;
                }
            }
            Ok::<(), OpenError>(())
        })?;
        // A checkpoint from before the entry: its definitions are known to hold from its
        // own position only.
        let definitions_from = definitions_from.unwrap_or(position.lsn).min(position.lsn);
        self.engine.definitions_from.store(definitions_from, std::sync::atomic::Ordering::Release);
        Ok(LoadedCheckpoint { path, position, rows, definitions_from, stream_commits, version })
    }

    /// Applies a record that holds DDL, change after change (a `CREATE TABLE ... SELECT`
    /// record holds the table's rows after its definition).
    fn apply(&mut self, record: Record) -> std::result::Result<(), OpenError> {
        let ts = self.engine.txns.next_commit_ts();
        let lsn = record.lsn;
        let fail = |message: String| OpenError::Replay { lsn, message };
        for change in &record.changes {
            if let Change::Ddl { db, sql, context } = change {
                self.session.replay_ddl_in((!db.is_empty()).then(|| db.clone()), sql, context.as_ref()).map_err(|e| fail(format!("{sql}: {e}")))?;
                // Records after this one are described by the catalog it made.
                if self.engine.schemas.lock().record(lsn, &self.engine.catalog()) {
                    self.engine.definitions_from.fetch_max(lsn + 1, std::sync::atomic::Ordering::AcqRel);
                }
                continue;
            }
            let Some(row) = row_change(change).map_err(fail)? else { continue };
            let catalog = self.engine.catalog();
            let table = catalog.table(row.db, row.table).map_err(|e| fail(e.to_string()))?;
            install(table, row.key, decode_image(row.image), Replaced::Unknown, ts, false).map_err(fail)?;
        }
        Ok(())
    }
}

/// The row a log change installs, borrowed from the change.
struct RowChangeRef<'a> {
    db: &'a str,
    table: &'a str,
    key: &'a [u8],
    image: RowImage<'a>,
    /// The committed image the change replaced, when the log holds it.
    before: Option<&'a [u8]>,
}

/// The row `change` installs; `None` for a change that installs no row.
///
/// # Errors
/// A stream marker: the log hands over a streamed transaction's changes without them.
fn row_change(change: &Change) -> std::result::Result<Option<RowChangeRef<'_>>, String> {
    let (db, table, key, image, before) = match change {
        Change::Insert { db, table, key, row } => (db, table, key, RowImage::Inserted(row), None),
        Change::Update { db, table, key, row, before } => (db, table, key, RowImage::Log(row), before.as_deref()),
        Change::Put { db, table, key, row } => (db, table, key, RowImage::Log(row), None),
        Change::PutV1 { db, table, key, row } => (db, table, key, RowImage::V1(row), None),
        Change::Delete { db, table, key, before } => (db, table, key, RowImage::Deleted, before.as_deref()),
        // Where a replicated transaction came from: for binary log readers only. DDL is the
        // caller's.
        Change::Origin(_) | Change::Ddl { .. } => return Ok(None),
        Change::StreamPart { .. } | Change::StreamCommit { .. } | Change::StreamAbort { .. } => {
            return Err("a stream marker where changes belong".into());
        }
    };
    Ok(Some(RowChangeRef { db, table, key, image, before }))
}

/// Of two shares' outcomes, the failure earlier in the log (any failure stops start-up).
fn earlier_failure(a: std::result::Result<(), OpenError>, b: std::result::Result<(), OpenError>) -> std::result::Result<(), OpenError> {
    match (a, b) {
        (Err(OpenError::Replay { lsn: x, message }), Err(OpenError::Replay { lsn: y, .. })) if x <= y => Err(OpenError::Replay { lsn: x, message }),
        (Err(_), Err(e)) | (Ok(()), Err(e)) => Err(e),
        (a, Ok(())) => a,
    }
}

/// Which of `threads` replay threads applies the changes of the row at `key` of `table`.
fn share_of(table: &crate::catalog::TableMeta, key: &[u8], threads: usize) -> usize {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    std::ptr::hash(table, &mut hasher);
    key.hash(&mut hasher);
    usize::try_from(hasher.finish() % threads as u64).expect("below threads")
}

/// A change's row, decoded: `Ok(None)` for a delete, `Err(())` for bytes that do not decode.
fn decode_image(image: RowImage<'_>) -> std::result::Result<Option<quill_storage::Row>, ()> {
    match image {
        RowImage::Log(bytes) | RowImage::Inserted(bytes) => decode_log_row(bytes).map(Some).ok_or(()),
        RowImage::V1(bytes) => decode_row(bytes).map(Some).ok_or(()),
        RowImage::Deleted => Ok(None),
    }
}

/// Installs `row` (`Ok(None)`: a delete; `Err`: its bytes did not decode) at `key` of
/// `table` as committed at `ts`, where it replaced `replaced`, leaving it to wait for its
/// leaves if `lazy` ([`quill_storage::Handler::redo_committed`]); the table's
/// AUTO_INCREMENT counter moves past the row's value.
fn install(
    table: &crate::catalog::TableMeta,
    key: &[u8],
    row: std::result::Result<Option<quill_storage::Row>, ()>,
    replaced: Replaced<'_>,
    ts: quill_storage::Timestamp,
    lazy: bool,
) -> std::result::Result<(), String> {
    let row = row.map_err(|()| format!("malformed row for {}.{}", table.db, table.name))?;
    if let (Some(row), Some(c)) = (&row, table.auto_increment_column()) {
        let next = match row.get(c) {
            Some(Value::Int(i)) => u64::try_from(*i).ok().map(|i| i + 1),
            Some(Value::UInt(u)) => Some(u + 1),
            _ => None,
        };
        table.data.raise_auto_increment(next.unwrap_or(0));
    }
    table.data.redo_committed(key, row, replaced, ts, lazy);
    Ok(())
}

/// One replay thread's share of a batch (`Replayer::flush`): its images decoded once, then
/// each change installed in log order. A change that may be `lazy` waits for its leaves when
/// the log holds what it replaced; the leaves of the others are asked for first (`paged`).
fn apply_rows(share: &[RowWork<'_>], paged: bool) -> std::result::Result<(), OpenError> {
    let mut rows: Vec<_> = share.iter().map(|w| decode_image(w.image)).collect();
    let befores: Vec<Option<quill_storage::Row>> = if paged { share.iter().map(|w| w.before.and_then(decode_log_row)).collect() } else { Vec::new() };
    let replaced = |i: usize| match (share[i].image, befores.get(i)) {
        (RowImage::Inserted(_), _) => Replaced::Nothing,
        (_, Some(Some(before))) => Replaced::Row(before),
        _ => Replaced::Unknown,
    };
    if paged {
        for (i, (w, row)) in share.iter().zip(&rows).enumerate() {
            if w.lazy && !matches!(replaced(i), Replaced::Unknown) {
                continue;
            }
            let wanted: Vec<&quill_storage::Row> = row.iter().flatten().chain(befores[i].as_ref()).collect();
            w.table.data.read_ahead(w.key, &wanted);
        }
        // Those reads under way, the rows whose replaced image the log does not hold are read
        // as they stand, for the entries the install removes.
        for (i, w) in share.iter().enumerate() {
            if matches!(replaced(i), Replaced::Unknown) {
                w.table.data.read_ahead_current(w.key);
            }
        }
    }
    for (i, (w, row)) in share.iter().zip(rows.iter_mut()).enumerate() {
        install(w.table, w.key, std::mem::replace(row, Ok(None)), replaced(i), w.ts, w.lazy).map_err(|message| OpenError::Replay { lsn: w.lsn, message })?;
    }
    Ok(())
}

impl Drop for Replayer {
    fn drop(&mut self) {
        // The replay session is not a connection: leave no trace of it in the status counters.
        self.session.close();
        self.engine.status.connections.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}
