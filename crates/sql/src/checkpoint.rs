//! Checkpoints: a background thread writes a consistent snapshot of every table as of one
//! log position, then removes the log segments that position covers, so the log does not
//! grow without bound and recovery replays only what came after.
//!
//! Consistency without stopping writers:
//! 1. Under `Engine::commit_order`, no commit is appending, so the log's next position L and
//!    the newest commit timestamp describe the same state. A read view at that timestamp is
//!    registered, so purge keeps the versions it sees. The first part of the oldest
//!    transaction still streaming into the log (`Engine::open_streams`) is where recovery
//!    must start reading (`read_from`): if that transaction commits after L, its parts before
//!    L are read back then.
//! 2. Rows are copied as the images that view sees, a leaf's worth at a time
//!    (`Handler::image_cursor`, which holds no lock between batches), and written as log
//!    rows with no row decoded (a dynamic image is one): commits go on meanwhile; the view
//!    hides them, and the log after L replays them.
//! 3. DDL waits for the checkpoint (`Engine::ddl_gate`), so the catalog snapshot the
//!    checkpoint copies is the current one throughout.
//! 4. Each table definition (`SHOW CREATE TABLE`) is loaded into a scratch engine and must
//!    come back identical, or the checkpoint fails: a definition that would not load must
//!    never be found at start-up.
//! 5. The log is made durable up to L first (`Log::make_durable`, a forced sync in modes 0
//!    and 2): a checkpoint never runs ahead of the durable log, so a crash can never leave a
//!    checkpoint that covers commits the log lost.
//! 6. The file becomes a checkpoint only once complete and synced ([`CheckpointWriter::finish`]).
//!    Older checkpoints and the segments before `read_from` are removed after that.
//!
//! When: every `quill_checkpoint_interval_seconds`, or as soon as the log has grown by
//! `quill_checkpoint_log_bytes` since the last checkpoint, or as soon as the changes evicted
//! leaves keep in memory take [`KEPT_CHANGES_TRIGGER`] of the buffer pool (at most every
//! [`KEPT_TRIGGER_MIN_INTERVAL`]), whichever comes first, and only if anything was logged
//! since. The last writes those leaves' changes (as delta records, mostly) so that their
//! memory is free again before it fills the share eviction may keep, past which a changed
//! leaf is written whole when it leaves memory (InnoDB's page cleaners likewise flush
//! harder as dirty pages near `innodb_max_dirty_pages_pct`). A failed checkpoint is logged and retried at the next trigger:
//! the log still covers everything, so nothing is at risk.
//!
//! Priority: each checkpoint of the background checkpointer runs on a thread of its own, which
//! takes the position (step 1, under `commit_order`) at normal priority and then copies at the
//! OS's idle scheduling class ([`Priority::Background`], Linux `SCHED_IDLE`): queries keep the
//! CPU while it runs, and it takes what they leave (InnoDB's page cleaners are held back by
//! `innodb_io_capacity` to the same end). An idle-class thread still gets a small share of a
//! busy CPU, so a checkpoint always ends; one that starts with the log grown past
//! [`URGENT_LOG_FACTOR`] x `quill_checkpoint_log_bytes` since the last, or with the kept
//! changes past [`KEPT_CHANGES_TRIGGER`] (the checkpoints are falling behind the writes),
//! runs at normal priority throughout. At the idle class under a CPU-bound write load, a
//! checkpoint of 10x the pool took 5.6 s, and meanwhile the kept changes reached their share
//! and eviction went back to writing changed leaves whole: 429 MB of data files for 95 MB
//! of log over 40 s of sysbench writes and a checkpoint after them. At normal priority the
//! same run's checkpoints took 1.1-1.7 s, and it wrote 209 MB for 105 MB of log. A leaf's
//! mutex is held for one leaf's copy, so a query waits at most for the idle thread to be
//! scheduled again.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use quill_io::Fs;
use quill_storage::checkpoint::{CheckpointPosition, CheckpointWriter, remove_old_checkpoints};
use quill_storage::tablespace::TablePages;
use quill_storage::{Handler, ImageBatch, ReadView, Timestamp};

use crate::catalog::{Catalog, SYSTEM_DATABASES};
use crate::engine::Engine;
use crate::session::Session;

/// How often the checkpointer looks at its triggers.
pub const POLL_INTERVAL: Duration = Duration::from_millis(100);

/// A checkpoint starts when evicted leaves' kept changes take this share of the buffer pool
/// (numerator, denominator): half of what they may take
/// (`quill_storage::leaf_map::KEPT_SHARE_OF_POOL`).
pub const KEPT_CHANGES_TRIGGER: (u64, u64) = (1, 4);

/// The least time between two checkpoints the kept changes start: a checkpoint that could
/// not write them (a long transaction's versions in their leaves) is not retried at once.
pub const KEPT_TRIGGER_MIN_INTERVAL: Duration = Duration::from_secs(5);

/// What one checkpoint wrote.
#[derive(Debug, Clone)]
pub struct CheckpointReport {
    pub lsn: u64,
    pub path: PathBuf,
    pub tables: usize,
    pub rows: u64,
    pub bytes: u64,
    pub segments_removed: usize,
    pub elapsed: Duration,
}

/// A checkpoint whose log has grown past this many times `quill_checkpoint_log_bytes` since
/// the last one runs at normal priority (see the module documentation).
pub const URGENT_LOG_FACTOR: u64 = 4;

/// The name of the thread each background checkpoint runs on (15 bytes: what Linux keeps of
/// a thread's name, so `/proc` and `top -H` show it whole).
pub const COPIER_THREAD: &str = "quill-ckpt-copy";

/// The scheduling priority a checkpoint copies at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Priority {
    /// The calling thread's own, unchanged.
    Normal,
    /// The OS's idle class from the copy on. The thread keeps it: only a thread of its own
    /// should run such a checkpoint.
    Background,
}

/// Writes one checkpoint now, at the calling thread's priority.
///
/// # Errors
/// I/O errors; nothing is removed then.
pub fn checkpoint(engine: &Engine, fs: &Arc<dyn Fs>, datadir: &Path) -> std::io::Result<CheckpointReport> {
    checkpoint_at(engine, fs, datadir, Priority::Normal)
}

/// [`checkpoint`], copying at `priority`.
///
/// # Errors
/// As [`checkpoint`].
pub fn checkpoint_at(engine: &Engine, fs: &Arc<dyn Fs>, datadir: &Path, priority: Priority) -> std::io::Result<CheckpointReport> {
    let started = Instant::now();
    let log = engine.log.get().expect("checkpoints need the commit log");
    let _ddl = engine.ddl_gate.read();
    let view_txn = engine.txns.begin(0, "REPEATABLE-READ", true);
    let catalog = engine.catalog();
    let (position, view, databases, tables) = {
        // The log position and the view agree: no commit falls between them.
        let order = engine.commit_order.lock();
        let (lsn, next_seq) = log.next_position();
        // Read after the position: a stream that starts later has its parts after it.
        let read_from = engine.open_streams.lock().keys().next().map_or(lsn, |&first| first.min(lsn));
        // DDL records its end under the same lock.
        let definitions_from = engine.definitions_from.load(std::sync::atomic::Ordering::Acquire).min(lsn);
        let view = engine.txns.read_view(view_txn, false);
        drop(order);
        // Registered: no view older than this one can start from now on.
        let horizon = engine.txns.purge_horizon().min(view.read_ts);
        let databases: Vec<String> = catalog.databases.keys().filter(|d| !SYSTEM_DATABASES.contains(&d.as_str())).cloned().collect();
        let mut tables = Vec::new();
        for db in catalog.databases.values() {
            for t in db.tables.values() {
                let definition = crate::durability::table_definition(&catalog, &db.name, &t.name);
                tables.push((db.name.clone(), t.name.clone(), definition, t.data.auto_increment()));
            }
        }
        ((CheckpointPosition { lsn, next_seq, read_from }, definitions_from), (view, horizon), databases, tables)
    };
    let (view, horizon) = view;
    let (position, definitions_from) = position;
    // From here on nothing is held that commits wait for, only one leaf's mutex at a time.
    if priority == Priority::Background {
        lower_thread_priority();
    }
    // The invariant of `docs/checkpoint-format.md`: a checkpoint's position is never ahead of
    // the durable log. In modes 0 and 2 the records before it may still be pending or
    // unsynced; a checkpoint published before them would outlive them in a crash, and
    // recovery would skip their commits (or start-up resume the log below it).
    let durable = log.make_durable(position.lsn);
    let verified = durable.and_then(|()| tables.iter().try_for_each(|(db, name, definition, _)| verify_definition(engine, db, name, definition)));
    // Streams committed before `read_from` (recovery reads the rest): a restart keeps their
    // parts' segments as long as it keeps their commit records.
    let head = FileHead { position, definitions_from, stream_commits: log.stream_commits_before(position.read_from) };
    let result = verified.and_then(|()| write_file(&catalog, fs, datadir, &head, (view, horizon), &databases, &tables));
    engine.txns.release_view(&view);
    engine.txns.end(view_txn);
    let (path, bytes, rows, paged) = result?;
    // Durable: blocks replaced since that it does not name are free, and page files no table
    // uses and it does not name go.
    for (table, pages) in &paged {
        table.pages_durable(pages);
    }
    if let Some(space) = catalog.tablespace() {
        let named: std::collections::HashSet<u64> = paged.iter().map(|(_, pages)| pages.file).collect();
        space.remove_unused(&named)?;
    }
    remove_old_checkpoints(fs.as_ref(), datadir, position.lsn)?;
    // Recovery reads from `read_from`: the segments of open streams stay.
    let segments_removed = log.remove_segments_before(position.read_from)?;
    // Definitions no record left in the log can need go with the segments.
    if let Some(&(oldest, _)) = log.segment_bounds().first() {
        engine.schemas.lock().forget_before(oldest);
    }
    Ok(CheckpointReport { lsn: position.lsn, path, tables: tables.len(), rows, bytes, segments_removed, elapsed: started.elapsed() })
}

/// Puts the calling thread in the OS's idle scheduling class (`SCHED_IDLE`); where that fails
/// (another OS, a sandbox that forbids it) the thread goes on as it was, which is only slower
/// for queries.
fn lower_thread_priority() {
    use thread_priority::{NormalThreadSchedulePolicy, ThreadPriority, ThreadSchedulePolicy};
    let idle = ThreadSchedulePolicy::Normal(NormalThreadSchedulePolicy::Idle);
    if let Err(e) = thread_priority::unix::set_thread_priority_and_policy(thread_priority::unix::thread_native_id(), ThreadPriority::Min, idle) {
        tracing::debug!(error = ?e, "the checkpoint could not take the idle scheduling class; it copies at normal priority");
    }
}

/// Runs `definition` in a scratch engine and checks that it defines the same table again.
/// A definition that would not load must fail this checkpoint (the log still covers the
/// table), never the next start-up.
fn verify_definition(engine: &Engine, db: &str, name: &str, definition: &str) -> std::io::Result<()> {
    let scratch = Engine::new(engine.globals.read().clone());
    let mut session = Session::new(Arc::clone(&scratch), 0, "system user", "localhost");
    let create_db = format!("CREATE DATABASE IF NOT EXISTS {}", crate::ident::quote_identifier(db));
    let loaded = session.replay_ddl(None, &create_db).and_then(|()| session.replay_ddl(Some(db.to_owned()), definition));
    session.close();
    let again = loaded.map(|()| crate::durability::table_definition(&scratch.catalog(), db, name));
    match again {
        Ok(again) if again == definition => Ok(()),
        Ok(again) => Err(std::io::Error::other(format!("{db}.{name}: its definition does not load back the same:\n{definition}\n!=\n{again}"))),
        Err(e) => Err(std::io::Error::other(format!("{db}.{name}: its definition does not load back: {e}\n{definition}"))),
    }
}

/// What a checkpoint file says before its databases: where it stands in the log.
struct FileHead {
    position: CheckpointPosition,
    definitions_from: u64,
    stream_commits: Vec<(u64, u64)>,
}

/// A paged table a checkpoint named, and what it named.
type PagedTable = (Arc<dyn Handler>, TablePages);

/// Writes the checkpoint file: the rows of in-memory tables, and for paged ones their pages,
/// written and synced first. `view` is the snapshot, `horizon` the oldest timestamp any
/// view reads at. Returns the file's path, its size, the rows it holds and the paged tables.
fn write_file(
    catalog: &Catalog,
    fs: &Arc<dyn Fs>,
    datadir: &Path,
    head: &FileHead,
    (view, horizon): (ReadView, Timestamp),
    databases: &[String],
    tables: &[(String, String, String, u64)],
) -> std::io::Result<(PathBuf, u64, u64, Vec<PagedTable>)> {
    let mut writer = CheckpointWriter::create(Arc::clone(fs), datadir, head.position)?;
    writer.definitions_from(head.definitions_from)?;
    for &(commit, first) in &head.stream_commits {
        writer.stream_commit(commit, first)?;
    }
    for db in databases {
        writer.database(db)?;
        if let Ok(d) = catalog.database(db) {
            writer.database_collation(db, d.collation.name())?;
        }
    }
    let mut rows_total = 0;
    let mut paged = Vec::new();
    for (db, name, definition, auto_increment) in tables {
        writer.table(db, name, definition, *auto_increment)?;
        let Ok(table) = catalog.table(db, name) else { continue };
        // A paged table: its changed leaves written as the view sees them, the rest named.
        if let Some(pages) = table.data.write_pages(view, horizon)? {
            writer.table_pages(&pages)?;
            rows_total += pages.indexes.first().map_or(0, quill_storage::tablespace::IndexPages::entries);
            paged.push((Arc::clone(&table.data), pages));
            continue;
        }
        // Rows go as the images the view sees, converted to log rows (a dynamic image is
        // one): no row is decoded. The cursor holds no leaf between batches.
        let format = table.data.row_format();
        let mut cursor = table.data.image_cursor(view);
        let mut batch = ImageBatch::default();
        let mut row = Vec::new();
        while cursor.next_batch(&mut batch) {
            for entry in batch.iter() {
                let Some(image) = entry.image else { continue };
                row.clear();
                format.log_image_into(image, &mut row).expect("a table's images decode in its format");
                writer.log_row(entry.key, &row)?;
                rows_total += 1;
            }
        }
    }
    // Views last: replaying one does not look for its tables, but a reader finds them all.
    for view in catalog.databases.values().flat_map(|d| d.views.values()) {
        writer.view(&view.db, &view.name, &view.definition())?;
    }
    // In action order: loading makes each after the ones before it.
    for trigger in catalog.databases.values().flat_map(|d| d.triggers.iter()) {
        writer.program(&trigger.db, &trigger.name, &trigger.definition())?;
    }
    for routine in catalog.databases.values().flat_map(|d| d.functions.values().chain(d.procedures.values())) {
        writer.program(&routine.db, &routine.name, &routine.definition())?;
    }
    let (path, bytes) = writer.finish()?;
    Ok((path, bytes, rows_total, paged))
}

/// The background checkpointer; stops (after any checkpoint in progress) when dropped.
pub struct Checkpointer {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Checkpointer {
    /// Starts the checkpointer of `engine`, whose newest checkpoint (if any) is at `last_lsn`.
    ///
    /// # Panics
    /// If the thread cannot be started.
    #[must_use]
    pub fn start(engine: Arc<Engine>, fs: Arc<dyn Fs>, datadir: PathBuf, last_lsn: u64) -> Checkpointer {
        let stop = Arc::new(AtomicBool::new(false));
        let thread = std::thread::Builder::new()
            .name("quill-checkpointer".into())
            .spawn({
                let stop = Arc::clone(&stop);
                move || run(&engine, &fs, &datadir, last_lsn, &stop)
            })
            .expect("start the checkpointer thread");
        Checkpointer { stop, thread: Some(thread) }
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn run(engine: &Engine, fs: &Arc<dyn Fs>, datadir: &Path, mut last_lsn: u64, stop: &AtomicBool) {
    let mut last_time = Instant::now();
    // The newest commit when the last checkpoint began (its view holds at least that much).
    let mut last_ts = engine.txns.last_commit_ts();
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(POLL_INTERVAL);
        let Some(log) = engine.log.get() else { continue };
        let setting = |name: &str, default: u64| engine.global(name).and_then(|v| v.parse().ok()).unwrap_or(default);
        let interval = Duration::from_secs(setting("quill_checkpoint_interval_seconds", 300));
        let log_bytes = setting("quill_checkpoint_log_bytes", 256 << 20);
        let grown = log.next_position().0.saturating_sub(last_lsn);
        let kept_full = last_time.elapsed() >= KEPT_TRIGGER_MIN_INTERVAL
            && engine
                .catalog()
                .tablespace()
                .is_some_and(|space| space.pool.kept_bytes() * KEPT_CHANGES_TRIGGER.1 >= space.pool.capacity_bytes() * KEPT_CHANGES_TRIGGER.0);
        if grown == 0 || (grown < log_bytes && last_time.elapsed() < interval && !kept_full) {
            continue;
        }
        // Nothing committed since the last checkpoint, and a transaction still streaming that
        // began before it (holding recovery's start where it was): a new checkpoint would hold
        // the same rows and remove no segment, and a bulk load's log growth would have it scan
        // every table again and again for nothing. It waits for a commit, or the interval.
        let nothing_new = engine.txns.last_commit_ts() == last_ts && engine.open_streams.lock().keys().next().is_some_and(|&first| first < last_lsn);
        if nothing_new && last_time.elapsed() < interval {
            continue;
        }
        let ts_before = engine.txns.last_commit_ts();
        // Falling behind the writes: the log grown far past its trigger, or evicted leaves'
        // kept changes halfway to their share, past which eviction writes changed leaves whole.
        let urgent = grown >= log_bytes.saturating_mul(URGENT_LOG_FACTOR) || kept_full;
        let priority = if urgent { Priority::Normal } else { Priority::Background };
        // A thread per checkpoint: the idle class it may take goes with it.
        let written = std::thread::scope(|scope| {
            std::thread::Builder::new()
                .name(COPIER_THREAD.into())
                .spawn_scoped(scope, || checkpoint_at(engine, fs, datadir, priority))
                .and_then(|copier| copier.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
        });
        match written {
            Ok(report) => {
                last_lsn = report.lsn;
                last_ts = ts_before;
                last_time = Instant::now();
                engine.status.checkpoints.fetch_add(1, Ordering::Relaxed);
                engine.status.checkpoint_lsn.store(report.lsn, Ordering::Relaxed);
                engine.status.checkpoint_bytes.fetch_add(report.bytes, Ordering::Relaxed);
                tracing::info!(
                    lsn = report.lsn,
                    tables = report.tables,
                    rows = report.rows,
                    bytes = report.bytes,
                    segments_removed = report.segments_removed,
                    elapsed_ms = report.elapsed.as_millis() as u64,
                    "checkpoint written"
                );
            }
            Err(e) => {
                last_time = Instant::now();
                tracing::error!(error = %e, "checkpoint failed; the commit log still covers everything, retrying at the next trigger");
            }
        }
    }
}
