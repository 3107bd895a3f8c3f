//! Replication lag: single-row autocommit INSERTs into the source, `--interval-ms` apart, and
//! how long after each commit on the source its row was applied on the replica. The harness
//! starts the source and the replica (`bench/harness/replication.py`); this measures.
//!
//! Two ways of reading the lag, one per server family, each where that server reports it:
//! - `perf-schema` (Quill, and MySQL 8): after each INSERT, the replica's
//!   `performance_schema.replication_applier_status_by_worker` is read until its
//!   `LAST_APPLIED_TRANSACTION` is the INSERT's GTID; the lag is
//!   `LAST_APPLIED_TRANSACTION_END_APPLY_TIMESTAMP` minus `..._ORIGINAL_COMMIT_TIMESTAMP`
//!   (the commit time on the source, carried by the GTID event). It ends after the replica's
//!   commit is durable.
//! - `trigger` (MariaDB, which has neither the table nor commit times in its events): the
//!   published way, a replica trigger stamps `SYSDATE(6)` into each row as it is applied
//!   (`slave_run_triggers_for_rbr=YES`), compared with the `NOW(6)` the source inserted. It
//!   ends while the replica's transaction is still open (before its commit and sync), and
//!   begins at the statement's start on the source (before its commit and sync).
//!
//! Reports the p50, p90, p99, max and mean lag, and every sample (`series`) for the histogram.
//! Check: every row arrived on the replica.

use crate::report::{Better, Report, mean_us, quantile_us};
use crate::server::{DATABASE, Target, run_all};
use mysql::prelude::Queryable;
use std::time::{Duration, Instant};

/// How long one transaction may take to reach the replica before the run gives up.
const APPLY_TIMEOUT: Duration = Duration::from_secs(30);
/// The pause between two reads of the replica's status while waiting for a transaction.
const POLL_INTERVAL: Duration = Duration::from_micros(200);

#[derive(clap::Args)]
pub struct Args {
    /// The replica's TCP port (same host and user as the source).
    #[arg(long)]
    replica_port: u16,
    /// INSERTs into the source.
    #[arg(long, default_value_t = 1000)]
    count: u32,
    /// Milliseconds from the start of one INSERT to the start of the next.
    #[arg(long, default_value_t = 10)]
    interval_ms: u64,
    /// Where the lag is read: `perf-schema` or `trigger` (see the module doc).
    #[arg(long)]
    method: String,
}

pub fn run(source: &Target, args: &Args) -> Result<serde_json::Value, String> {
    let replica_target = Target { host: source.host.clone(), port: args.replica_port, user: source.user.clone() };
    let mut src = source.connect_setup()?;
    let mut replica = replica_target.connect_to(None)?;
    let lags = match args.method.as_str() {
        "perf-schema" => perf_schema(&mut src, &mut replica, args)?,
        "trigger" => trigger(&mut src, &mut replica, args)?,
        other => return Err(format!("unknown --method {other}")),
    };
    let arrived: u64 = replica.query_first(format!("SELECT COUNT(*) FROM {DATABASE}.lag")).map_err(|e| format!("count on the replica: {e}"))?.unwrap_or(0);
    let mut report = Report::default();
    report.check("rows replicated", arrived == u64::from(args.count), format!("{arrived} rows on the replica, expected {}", args.count));
    if lags.is_empty() {
        return Err("no lag measured".into());
    }
    report.metric("lag p50", quantile_us(&lags, 0.50), "us", Better::Lower);
    report.metric("lag p90", quantile_us(&lags, 0.90), "us", Better::Lower);
    report.metric("lag p99", quantile_us(&lags, 0.99), "us", Better::Lower);
    report.metric("lag max", quantile_us(&lags, 1.0), "us", Better::Lower);
    report.metric("lag mean", mean_us(&lags), "us", Better::Lower);
    report.series("lag_us", lags.iter().map(|d| d.as_secs_f64() * 1e6).collect());
    Ok(report.to_json())
}

/// Waits until the replica has the table (its CREATE replicated).
fn wait_for_table(replica: &mut mysql::Conn) -> Result<(), String> {
    let deadline = Instant::now() + APPLY_TIMEOUT;
    loop {
        if replica.query_drop(format!("SELECT 1 FROM {DATABASE}.lag LIMIT 0")).is_ok() {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err("the table did not reach the replica".into());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Paces the INSERTs: the `i`th starts `i * interval` after `start`.
fn pace(start: Instant, i: u32, interval_ms: u64) {
    let due = start + Duration::from_millis(interval_ms * u64::from(i));
    if let Some(wait) = due.checked_duration_since(Instant::now()) {
        std::thread::sleep(wait);
    }
}

fn perf_schema(src: &mut mysql::Conn, replica: &mut mysql::Conn, args: &Args) -> Result<Vec<Duration>, String> {
    run_all(src, &["DROP TABLE IF EXISTS lag", "CREATE TABLE lag (id BIGINT PRIMARY KEY, ts DATETIME(6) NOT NULL)"])?;
    wait_for_table(replica)?;
    let uuid: String = src.query_first("SELECT @@server_uuid").map_err(|e| format!("server_uuid: {e}"))?.unwrap_or_default();
    let mut lags = Vec::with_capacity(args.count as usize);
    let start = Instant::now();
    for i in 0..args.count {
        pace(start, i, args.interval_ms);
        src.exec_drop("INSERT INTO lag VALUES (?, NOW(6))", (i,)).map_err(|e| format!("INSERT: {e}"))?;
        let gtids: String = src.query_first("SELECT @@gtid_executed").map_err(|e| format!("gtid_executed: {e}"))?.unwrap_or_default();
        let gno = own_last_gno(&gtids, &uuid).ok_or_else(|| format!("no GTID of {uuid} in {gtids}"))?;
        let expected = format!("{uuid}:{gno}");
        let deadline = Instant::now() + APPLY_TIMEOUT;
        loop {
            // One row per applier worker: the one that applied it.
            let row: Option<(String, Option<i64>)> = replica
                .exec_first(
                    "SELECT LAST_APPLIED_TRANSACTION, TIMESTAMPDIFF(MICROSECOND, LAST_APPLIED_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP, \
                     LAST_APPLIED_TRANSACTION_END_APPLY_TIMESTAMP) FROM performance_schema.replication_applier_status_by_worker \
                     WHERE LAST_APPLIED_TRANSACTION = ?",
                    (expected.as_str(),),
                )
                .map_err(|e| format!("replication_applier_status_by_worker: {e}"))?;
            if let Some((applied, Some(lag))) = row
                && applied == expected
            {
                lags.push(Duration::from_micros(u64::try_from(lag).unwrap_or(0)));
                break;
            }
            if Instant::now() > deadline {
                return Err(format!("{expected} was not applied on the replica within {APPLY_TIMEOUT:?}"));
            }
            std::thread::sleep(POLL_INTERVAL);
        }
    }
    Ok(lags)
}

/// The last transaction number of `uuid` in a GTID set (`uuid:1-5:7,other:1-3`).
fn own_last_gno(set: &str, uuid: &str) -> Option<u64> {
    let part = set.split(',').map(str::trim).find(|p| p.starts_with(uuid))?;
    let last = part.rsplit(':').next()?;
    last.rsplit('-').next()?.parse().ok()
}

fn trigger(src: &mut mysql::Conn, replica: &mut mysql::Conn, args: &Args) -> Result<Vec<Duration>, String> {
    // The replica's table has a column more, which the trigger fills as each row is applied;
    // the source's table is made outside its binary log.
    run_all(
        replica,
        &[
            &format!("CREATE DATABASE IF NOT EXISTS {DATABASE}"),
            &format!("DROP TABLE IF EXISTS {DATABASE}.lag"),
            &format!("CREATE TABLE {DATABASE}.lag (id BIGINT PRIMARY KEY, ts DATETIME(6) NOT NULL, applied DATETIME(6) NULL)"),
            &format!("CREATE TRIGGER {DATABASE}.stamp BEFORE INSERT ON {DATABASE}.lag FOR EACH ROW SET NEW.applied = SYSDATE(6)"),
        ],
    )?;
    run_all(
        src,
        &[
            "SET SESSION sql_log_bin = 0",
            "DROP TABLE IF EXISTS lag",
            "CREATE TABLE lag (id BIGINT PRIMARY KEY, ts DATETIME(6) NOT NULL)",
            "SET SESSION sql_log_bin = 1",
        ],
    )?;
    let start = Instant::now();
    for i in 0..args.count {
        pace(start, i, args.interval_ms);
        src.exec_drop("INSERT INTO lag VALUES (?, NOW(6))", (i,)).map_err(|e| format!("INSERT: {e}"))?;
    }
    let deadline = Instant::now() + APPLY_TIMEOUT;
    loop {
        let n: u64 = replica.query_first(format!("SELECT COUNT(*) FROM {DATABASE}.lag")).map_err(|e| format!("count: {e}"))?.unwrap_or(0);
        if n >= u64::from(args.count) {
            break;
        }
        if Instant::now() > deadline {
            return Err(format!("{n} of {} rows reached the replica within {APPLY_TIMEOUT:?}", args.count));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let lags: Vec<i64> =
        replica.query(format!("SELECT TIMESTAMPDIFF(MICROSECOND, ts, applied) FROM {DATABASE}.lag ORDER BY id")).map_err(|e| format!("read lags: {e}"))?;
    Ok(lags.into_iter().map(|us| Duration::from_micros(u64::try_from(us).unwrap_or(0))).collect())
}
