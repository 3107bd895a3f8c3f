//! The seam to the replication layer: the statements that run a replica are parsed by
//! `quill_sql_frontend::replica_statements` and carried out through [`ReplicaControl`], which
//! the replication layer above implements and attaches to the engine:
//!
//! - `CHANGE REPLICATION SOURCE TO opt = value, ...` (MySQL 8.0.23's name) and `CHANGE MASTER TO
//!   MASTER_opt = value, ...`: where to replicate from ([`SourceOptions`]);
//! - `START REPLICA` / `START SLAVE`, `STOP REPLICA` / `STOP SLAVE` (the `IO_THREAD` and
//!   `SQL_THREAD` forms act on both);
//! - `RESET REPLICA [ALL]` / `RESET SLAVE [ALL]`;
//! - `SHOW REPLICA STATUS` / `SHOW SLAVE STATUS`.
//!
//! Without a replication layer (an engine with no data directory) each is error 1200-range as
//! MySQL gives for a server that cannot replicate.

use quill_storage::Value;

use quill_sql_frontend::replica_statements::SourceOptions;
use quill_sql_types::error::Result;

/// The table where a replica keeps the GTIDs it applied (MySQL's): one row per GTID or
/// interval, `(source_uuid, interval_start, interval_end)`, keyed by the first two.
pub const GTID_TABLE: (&str, &str) = ("mysql", "gtid_executed");

/// The row of `mysql.gtid_executed` that records `origin`'s GTID, and its primary key, when
/// the table exists: a replicated DDL statement writes it in its own log record
/// (`Session::replica_origin`), so the statement and its GTID are durable together.
#[must_use]
pub fn gtid_row(catalog: &crate::catalog::Catalog, origin: &quill_log::Origin) -> Option<(Vec<u8>, quill_storage::Row)> {
    let table = catalog.table(GTID_TABLE.0, GTID_TABLE.1).ok()?;
    let uuid = crate::server_uuid::uuid_text(&origin.uuid);
    let gno = i64::try_from(origin.gno).ok()?;
    let row: quill_storage::Row = vec![Value::Str(uuid), Value::Int(gno), Value::Int(gno)];
    (row.len() == table.columns.len() && !table.primary.is_empty()).then(|| (table.data.primary_key(&row), row))
}

/// The replication layer, as the SQL layer reaches it.
pub trait ReplicaControl: Send + Sync {
    /// `CHANGE REPLICATION SOURCE TO`.
    ///
    /// # Errors
    /// 3021 while the replica runs; 1210 for a bad combination.
    fn change_source(&self, options: SourceOptions) -> Result<()>;
    /// `START REPLICA`: `Ok(false)` when it already runs (MySQL's note 3083).
    ///
    /// # Errors
    /// 1200 when no source is set.
    fn start(&self) -> Result<bool>;
    /// `STOP REPLICA`: `Ok(false)` when it was not running (note 3084).
    ///
    /// # Errors
    /// None expected.
    fn stop(&self) -> Result<bool>;
    /// `RESET REPLICA [ALL]`.
    ///
    /// # Errors
    /// 3081-range while the replica runs.
    fn reset(&self, all: bool) -> Result<()>;
    /// `SHOW REPLICA STATUS`: its columns and values; `None` when no source was ever set.
    fn status(&self) -> Option<Vec<(&'static str, Value)>>;
    /// The GTIDs applied from sources, as `uuid:1-N,...` (empty when none).
    fn executed(&self) -> String;
    /// The applier's workers, for `performance_schema.replication_applier_status_by_worker`.
    fn workers(&self) -> Vec<WorkerStatus>;
    /// The replica's lines of `SHOW STATUS` (`Rpl_semi_sync_replica_status`).
    fn status_counters(&self) -> Vec<(&'static str, String)>;
}

/// One transaction an applier worker applied or is applying; times in microseconds since
/// the Unix epoch (0: not yet).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AppliedTransaction {
    /// `source_uuid:gno`.
    pub gtid: String,
    /// When it committed on its original source (the GTID event says).
    pub original_commit_us: u64,
    /// When it committed on the server this replica reads from (the same, for a direct replica).
    pub immediate_commit_us: u64,
    pub start_apply_us: u64,
    pub end_apply_us: u64,
}

/// An applier worker as `replication_applier_status_by_worker` shows it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkerStatus {
    pub worker_id: u64,
    pub running: bool,
    /// The last error: number, message, and when (microseconds since the epoch).
    pub last_error: Option<(u32, String, u64)>,
    pub last_applied: Option<AppliedTransaction>,
    pub applying: Option<AppliedTransaction>,
}
