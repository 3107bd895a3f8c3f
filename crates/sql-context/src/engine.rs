//! The server-wide state every session shares: the catalog snapshot, the commit order,
//! metadata and user locks, the transaction manager, global variables, status counters, the
//! process list, the commit log, accounts, and the seams the replication layer above fills
//! in (`BinaryLog`, `replica_control::ReplicaControl`, `commit_acks::CommitAcks`).
//!
//! Invariants: the catalog is replaced whole, under the DDL gate and `commit_order`, so
//! catalogs are installed in log order; `commit_order` is never held across a scan or a
//! wait. Where it sits: in `quill-sql-context`, below the planner, the executor and the
//! session, which all reach the engine through `Arc<Engine>`.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Instant;

use parking_lot::{Mutex, RwLock};
use quill_sql_types::error::Result;
use quill_storage::TxnId;
use quill_txn::TxnManager;

use crate::catalog::Catalog;
use crate::vars::VarSet;

impl Engine {
    /// The server-wide status counters (`SHOW GLOBAL STATUS` but a session's own TLS
    /// figures; the metrics endpoint exports the same), unsorted.
    #[must_use]
    pub fn global_status(&self) -> Vec<(&'static str, String)> {
        let s = &self.status;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed).to_string();
        let log_stat = |field: fn(&quill_log::LogStats) -> &AtomicU64| self.log.get().map_or(0, |l| field(l.stats()).load(Ordering::Relaxed)).to_string();
        let ls = &self.txns.locks.stats;
        let lock_micros = ls.wait_micros.load(Ordering::Relaxed);
        let lock_waits = ls.waits.load(Ordering::Relaxed);
        let mut items: Vec<(&str, String)> = vec![
            ("Aborted_clients", get(&s.aborted_clients)),
            ("Aborted_connects", get(&s.aborted_connects)),
            ("Binlog_cache_disk_use", log_stat(|l| &l.streams)),
            ("Binlog_commits", log_stat(|l| &l.records)),
            ("Binlog_group_commits", log_stat(|l| &l.groups)),
            ("Caching_sha2_password_rsa_public_key", self.rsa_public_key_pem.get().cloned().unwrap_or_default()),
            ("Com_commit", get(&s.com_commit)),
            ("Com_delete", get(&s.com_delete)),
            ("Com_insert", get(&s.com_insert)),
            ("Com_rollback", get(&s.com_rollback)),
            ("Com_select", get(&s.com_select)),
            ("Com_update", get(&s.com_update)),
            ("Connections", get(&s.connections)),
            ("Innodb_deadlocks", get(&ls.deadlocks)),
            ("Innodb_os_log_fsyncs", log_stat(|l| &l.fsyncs)),
            ("Innodb_os_log_written", log_stat(|l| &l.bytes_written)),
            ("Innodb_row_lock_current_waits", get(&ls.current_waits)),
            ("Innodb_row_lock_time", (lock_micros / 1000).to_string()),
            ("Innodb_row_lock_time_avg", (lock_micros / 1000).checked_div(lock_waits).unwrap_or(0).to_string()),
            ("Innodb_row_lock_time_max", (ls.max_wait_micros.load(Ordering::Relaxed) / 1000).to_string()),
            ("Innodb_row_lock_waits", lock_waits.to_string()),
            ("Quill_bulk_buffer_flushes", get(&s.bulk_buffer_flushes)),
            ("Quill_checkpoint_lsn", get(&s.checkpoint_lsn)),
            ("Quill_checkpoints", get(&s.checkpoints)),
            ("Quill_log_bytes_written", log_stat(|l| &l.bytes_written)),
            ("Quill_log_commit_lsn", get(&self.last_commit_end)),
            ("Quill_log_durable_lsn", self.log.get().map_or(0, quill_log::Log::durable_lsn).to_string()),
            ("Quill_log_fsyncs", log_stat(|l| &l.fsyncs)),
            ("Quill_log_groups", log_stat(|l| &l.groups)),
            ("Quill_log_groups_led", log_stat(|l| &l.groups_led)),
            ("Quill_log_records", log_stat(|l| &l.records)),
            ("Quill_log_stream_parts", log_stat(|l| &l.stream_parts)),
            ("Queries", get(&s.questions)),
            ("Questions", get(&s.questions)),
            ("Slow_queries", get(&s.slow_queries)),
            ("Threads_connected", get(&s.threads_connected)),
            ("Uptime", self.started.elapsed().as_secs().to_string()),
        ];
        items.extend(self.buffer_pool_status());
        if let Some(acks) = self.commit_acks.get() {
            items.extend(acks.status());
        }
        if let Some(replica) = self.replica.get() {
            items.extend(replica.status_counters());
        }
        items
    }
}

/// Server-wide counters shown by SHOW GLOBAL STATUS.
#[derive(Default)]
pub struct Status {
    pub questions: AtomicU64,
    /// Write buffers of bulk statements flushed (`dml::bulk`): `Quill_bulk_buffer_flushes`.
    pub bulk_buffer_flushes: AtomicU64,
    pub com_select: AtomicU64,
    pub com_insert: AtomicU64,
    pub com_update: AtomicU64,
    pub com_delete: AtomicU64,
    pub com_commit: AtomicU64,
    pub com_rollback: AtomicU64,
    pub connections: AtomicU64,
    pub threads_connected: AtomicU64,
    /// Statements slower than `long_query_time` (`Slow_queries`), logged or not.
    pub slow_queries: AtomicU64,
    pub checkpoints: AtomicU64,
    pub checkpoint_lsn: AtomicU64,
    /// Bytes of checkpoint files written (part of `Innodb_data_written`).
    pub checkpoint_bytes: AtomicU64,
    /// Connections that failed or timed out before logging in.
    pub aborted_connects: AtomicU64,
    /// Sessions closed because their client idled past `wait_timeout` or stalled mid-packet.
    pub aborted_clients: AtomicU64,
    pub distributions: Distributions,
}

/// Bounds of [`Distributions::commit_latency_us`], microseconds.
pub const COMMIT_LATENCY_BUCKETS_US: &[u64] = &[50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 500_000, 1_000_000];
/// Bounds of [`Distributions::row_lock_wait_us`], microseconds.
pub const ROW_LOCK_WAIT_BUCKETS_US: &[u64] = &[100, 1_000, 10_000, 100_000, 500_000, 1_000_000, 5_000_000, 10_000_000, 50_000_000];

/// Distributions the metrics endpoint exports (`docs/metrics.md`).
#[derive(Debug)]
pub struct Distributions {
    /// From a commit's start (COMMIT, or an autocommit statement's end) until it is durable
    /// and acknowledged as its flush mode and semi-sync ask, microseconds.
    pub commit_latency_us: quill_log::histogram::Histogram,
    /// Each row lock wait, granted or not, microseconds.
    pub row_lock_wait_us: quill_log::histogram::Histogram,
}

impl Default for Distributions {
    fn default() -> Distributions {
        Distributions {
            commit_latency_us: quill_log::histogram::Histogram::new(COMMIT_LATENCY_BUCKETS_US),
            row_lock_wait_us: quill_log::histogram::Histogram::new(ROW_LOCK_WAIT_BUCKETS_US),
        }
    }
}

/// What SHOW PROCESSLIST shows of a session.
#[derive(Debug, Clone, Default)]
pub struct ProcessInfo {
    pub user: String,
    pub host: String,
    pub db: Option<String>,
    pub command: String,
    pub started: Option<Instant>,
    pub info: Option<String>,
    /// The last statement the connection ran, kept while it idles (the slow log names it for
    /// a blocker idle in its transaction).
    pub last_info: Option<String>,
    /// KILL [CONNECTION]: close the connection.
    pub kill_connection: bool,
    /// Wakes the session's lock wait or its idle read when it is killed.
    pub kill: Arc<tokio::sync::Notify>,
    /// What the statement is doing, when it waits (`Waiting for table metadata lock`).
    pub state: &'static str,
    /// Set by KILL (QUERY or CONNECTION), cleared when the next command starts: a running
    /// statement stops at its next row, a lock or metadata-lock wait ends (see `Interrupt`).
    pub interrupt: Arc<std::sync::atomic::AtomicBool>,
    /// How far the running statement is, in thousandths of a percent (0 to
    /// `load::PROGRESS_DONE`): a `LOAD DATA` reports the share of its file read; other
    /// statements stay at 0, as in MariaDB's PROCESSLIST.
    pub progress: Arc<AtomicU32>,
}

/// What the SQL layer asks of the binary log, which the replication layer above it keeps.
pub trait BinaryLog: Send + Sync {
    /// The current file and the position of its end.
    ///
    /// # Errors
    /// Why the log cannot be read.
    fn status(&self) -> std::result::Result<(String, u64), String>;
    /// The files, oldest first, with their sizes so far.
    ///
    /// # Errors
    /// Why the log cannot be read.
    fn files(&self) -> std::result::Result<Vec<(String, u64)>, String>;
    /// `PURGE BINARY LOGS TO 'file'` (`to`) or `BEFORE` a time: removes the files before it
    /// that crash recovery and connected replicas no longer need, the oldest first; returns
    /// the names of those it had to keep.
    ///
    /// # Errors
    /// 1373 for a file the log does not have; 1377 for an I/O error.
    fn purge(&self, to: Option<&str>, before: Option<std::time::SystemTime>) -> Result<Vec<String>>;
    /// The last of this server's own transactions no longer in the binary log (0: none).
    ///
    /// # Errors
    /// Why the log cannot be read.
    fn purged_through(&self) -> std::result::Result<u64, String>;
    /// The transactions applied from sources that the binary log does not hold (all of them
    /// with `log_replica_updates` OFF), as `uuid:1-N,...`.
    ///
    /// # Errors
    /// Why the log cannot be read.
    fn purged_replicated(&self) -> std::result::Result<String, String>;
}

/// `@@gtid_executed`: the transactions applied from sources (`mysql.gtid_executed`, as the
/// replica knows it) and this server's own, `server_uuid:1-N` (empty before the first).
#[must_use]
pub fn gtid_executed(engine: &Engine) -> String {
    let last = engine.log.get().map_or(0, |log| log.next_position().1 - 1);
    let local = own_interval(engine, last);
    let replicated = engine.replica.get().map(|r| r.executed()).unwrap_or_default();
    [replicated, local].into_iter().filter(|s| !s.is_empty()).collect::<Vec<_>>().join(",\n")
}

/// This server's transactions `1..=last` as a GTID set names them: `uuid:1-N`, `uuid:1` for
/// one, as MySQL prints them; empty for none.
fn own_interval(engine: &Engine, last: u64) -> String {
    let uuid = engine.global("server_uuid").unwrap_or_default();
    match last {
        0 => String::new(),
        1 => format!("{uuid}:1"),
        n => format!("{uuid}:1-{n}"),
    }
}

/// `@@gtid_purged`: the transactions this server executed that its binary log no longer
/// holds: those it applied from sources that are in no retained file (all of them with
/// `log_replica_updates` OFF) and its own before the oldest file.
#[must_use]
pub fn gtid_purged(engine: &Engine) -> String {
    let own = engine.binary_log.get().and_then(|b| b.purged_through().ok()).unwrap_or(0);
    let local = own_interval(engine, own);
    let replicated = match engine.binary_log.get() {
        Some(binlog) => binlog.purged_replicated().unwrap_or_default(),
        None => engine.replica.get().map(|r| r.executed()).unwrap_or_default(),
    };
    [replicated, local].into_iter().filter(|s| !s.is_empty()).collect::<Vec<_>>().join(",\n")
}

/// Everything shared by the sessions of one server.
pub struct Engine {
    /// The current catalog snapshot. Held only to clone or replace the `Arc`: statements
    /// run on their snapshot with no lock, and DDL installs a changed copy.
    catalog: RwLock<Arc<Catalog>>,
    /// Orders commits and DDL in the log: held around the log append, the commit
    /// timestamp and the stamping of the commit's rows (or a DDL's catalog install), so
    /// log order is commit order. Never held across a scan or a wait.
    pub commit_order: Mutex<()>,
    /// Metadata locks: DDL and DML on one table wait for each other (see `mdl`).
    pub mdl: crate::mdl::MetadataLocks,
    /// User-level locks: `GET_LOCK` and its kin (see `txn::user_locks`).
    pub user_locks: Arc<quill_txn::user_locks::UserLocks>,
    /// Each table's newest commit position, for `WAIT_FOR_TABLE_COMMIT` (see `commit_notify`).
    pub commit_notify: crate::commit_notify::CommitNotify,
    /// The slow query log's file (see `slow_log`).
    pub slow_log: crate::slow_log::SlowLog,
    /// The last deadlock, described (`SHOW ENGINE INNODB STATUS`, see `innodb_status`).
    pub latest_deadlock: Mutex<Option<String>>,
    pub txns: TxnManager,
    pub globals: RwLock<VarSet>,
    pub status: Status,
    pub processes: Mutex<HashMap<u32, ProcessInfo>>,
    pub started: Instant,
    /// The commit log; unset for an engine without a data directory (and during recovery).
    pub log: std::sync::OnceLock<quill_log::Log>,
    /// DDL holds it exclusively, a checkpoint shared: definitions hold still while a
    /// checkpoint copies their rows.
    pub ddl_gate: RwLock<()>,
    /// The log position just past the newest commit record: a statement that read waits
    /// until the log is durable to here, so it never answers with data a crash could lose.
    pub last_commit_end: AtomicU64,
    /// Where the newest DDL record that changed or removed an existing table's definition
    /// ends (new tables, account statements, databases and views leave it): every record
    /// from here on is described by the current catalog's definitions. Set under `commit_order` with the record; checkpoints
    /// keep it, so a restart knows which binary log files it can still read
    /// (`docs/binlog.md`, "Files and positions").
    pub definitions_from: AtomicU64,
    /// Transactions streaming into the log (see `session::commit`): the LSN of each one's
    /// first part record, and its id. A checkpoint reads the log back from the oldest.
    pub open_streams: Mutex<std::collections::BTreeMap<quill_log::Lsn, TxnId>>,
    /// The replica (set by the server, which runs replication): what CHANGE REPLICATION
    /// SOURCE TO, START / STOP / RESET REPLICA and SHOW REPLICA STATUS reach.
    pub replica: std::sync::OnceLock<Arc<dyn crate::replica_control::ReplicaControl>>,
    /// The binary log replication makes of the commit log (set by the server, which runs
    /// replication), for SHOW BINARY LOG STATUS and SHOW BINARY LOGS.
    pub binary_log: std::sync::OnceLock<Arc<dyn BinaryLog>>,
    /// What a reply waits for after durability (semi-sync; set by the server, which runs
    /// replication): `commit_acks`.
    pub commit_acks: std::sync::OnceLock<Arc<dyn crate::commit_acks::CommitAcks>>,
    /// Table definitions as of each point of the log, for replication (`schema_history`).
    /// Written under `commit_order` (or by recovery), so in log order.
    pub schemas: Mutex<crate::schema_history::SchemaHistory>,
    /// Accounts and privileges (`accounts`): replaced whole after an account statement.
    pub acl: RwLock<Arc<crate::accounts::Acl>>,
    /// caching_sha2_password's secrets learnt from full authentications (`accounts::Sha2Cache`).
    pub sha2_cache: crate::accounts::Sha2Cache,
    /// The RSA public key caching_sha2_password sends a client that asks for it, as PEM
    /// (set by the server, which holds the key pair; status `Caching_sha2_password_rsa_public_key`).
    pub rsa_public_key_pem: std::sync::OnceLock<String>,
}

impl Engine {
    #[must_use]
    pub fn new(globals: VarSet) -> Arc<Engine> {
        Arc::new(Engine {
            catalog: RwLock::new(Arc::new(Catalog::new())),
            commit_order: Mutex::new(()),
            mdl: crate::mdl::MetadataLocks::default(),
            user_locks: Arc::default(),
            commit_notify: crate::commit_notify::CommitNotify::default(),
            slow_log: crate::slow_log::SlowLog::default(),
            latest_deadlock: Mutex::new(None),
            txns: TxnManager::new(),
            globals: RwLock::new(globals),
            status: Status::default(),
            processes: Mutex::new(HashMap::new()),
            started: Instant::now(),
            log: std::sync::OnceLock::new(),
            ddl_gate: RwLock::new(()),
            last_commit_end: AtomicU64::new(0),
            definitions_from: AtomicU64::new(0),
            open_streams: Mutex::new(std::collections::BTreeMap::new()),
            binary_log: std::sync::OnceLock::new(),
            commit_acks: std::sync::OnceLock::new(),
            replica: std::sync::OnceLock::new(),
            schemas: Mutex::new(crate::schema_history::SchemaHistory::default()),
            acl: RwLock::new(Arc::new(crate::accounts::Acl::default())),
            sha2_cache: crate::accounts::Sha2Cache::default(),
            rsa_public_key_pem: std::sync::OnceLock::new(),
        })
    }

    /// Server shutdown: every connection is killed as by KILL CONNECTION (its statement
    /// stops at its next row or wait, its transaction rolls back, the connection closes).
    /// Returns how many there were.
    pub fn kill_every_connection(&self) -> usize {
        let mut procs = self.processes.lock();
        for p in procs.values_mut() {
            p.kill_connection = true;
            p.interrupt.store(true, Ordering::Release);
            p.kill.notify_one();
        }
        procs.len()
    }

    /// Connections open now (those in the process list).
    #[must_use]
    pub fn connections_open(&self) -> usize {
        self.processes.lock().len()
    }

    /// The current catalog: a snapshot to run one statement on.
    #[must_use]
    pub fn catalog(&self) -> Arc<Catalog> {
        self.catalog.read().clone()
    }

    /// Make `catalog` current. REQUIRES: the DDL gate and `commit_order`, so catalogs are
    /// installed in log order.
    pub fn install_catalog(&self, catalog: Catalog) {
        *self.catalog.write() = Arc::new(catalog);
    }

    #[must_use]
    pub fn global(&self, name: &str) -> Option<String> {
        self.globals.read().get(name).map(str::to_owned)
    }
}

impl Engine {
    /// The buffer pool's counters under InnoDB's names (the README lists them), zero with no
    /// paged tables. InnoDB counts 16 KiB pages; Quill's leaves vary in size, so the page
    /// counts are leaves, and `Innodb_buffer_pool_pages_total` is the capacity in 16 KiB
    /// pages.
    fn buffer_pool_status(&self) -> Vec<(&'static str, String)> {
        let space = self.catalog().tablespace();
        let pool = space.as_ref().map(|s| &s.pool);
        let count = |f: fn(&quill_storage::buffer_pool::BufferPool) -> u64| pool.map_or(0, |p| f(p)).to_string();
        let counter = |f: fn(&quill_storage::buffer_pool::PoolCounters) -> &AtomicU64| pool.map_or(0, |p| f(&p.counters).load(Ordering::Relaxed)).to_string();
        vec![
            ("Innodb_buffer_pool_bytes_data", count(quill_storage::buffer_pool::BufferPool::resident_bytes)),
            ("Innodb_buffer_pool_pages_data", count(quill_storage::buffer_pool::BufferPool::resident_leaves)),
            ("Innodb_buffer_pool_pages_dirty", count(quill_storage::buffer_pool::BufferPool::dirty_leaves)),
            ("Innodb_buffer_pool_pages_flushed", counter(|c| &c.pages_written)),
            ("Innodb_buffer_pool_pages_total", count(|p| p.capacity_bytes() / INNODB_PAGE_BYTES)),
            ("Innodb_buffer_pool_read_requests", pool.map_or(0, |p| p.counters.read_requests.get()).to_string()),
            ("Innodb_buffer_pool_reads", counter(|c| &c.reads)),
            // Data files are the page files and the checkpoint files; the commit log's bytes
            // are `Innodb_os_log_written`.
            (
                "Innodb_data_written",
                (pool.map_or(0, |p| p.counters.bytes_written.load(Ordering::Relaxed)) + self.status.checkpoint_bytes.load(Ordering::Relaxed)).to_string(),
            ),
            ("Innodb_pages_written", counter(|c| &c.pages_written)),
            ("Quill_buffer_pool_evictions", counter(|c| &c.evictions)),
            ("Quill_buffer_pool_evictions_kept", counter(|c| &c.evictions_kept)),
            ("Quill_buffer_pool_kept_bytes", count(quill_storage::buffer_pool::BufferPool::kept_bytes)),
            ("Quill_buffer_pool_leaf_splits", counter(|c| &c.leaf_splits)),
            ("Quill_recovery_changes_waiting", self.redo_pending().to_string()),
        ]
    }
}

impl Engine {
    /// Replayed changes of every table still waiting for their leaves
    /// ([`quill_storage::Handler::redo_pending`]): 0 once recovery's are all applied.
    #[must_use]
    pub fn redo_pending(&self) -> u64 {
        let catalog = self.catalog();
        catalog.databases.values().flat_map(|db| db.tables.values()).map(|t| t.data.redo_pending()).sum()
    }
}

/// InnoDB's default page size: what `Innodb_buffer_pool_pages_total` counts the capacity in.
const INNODB_PAGE_BYTES: u64 = 16 << 10;
