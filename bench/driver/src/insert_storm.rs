//! The insert storm: many clients each run autocommit prepared INSERTs with named parameters
//! into one AUTO_INCREMENT table, as an application logging events does.
//!
//! Reports inserts per second and, when the server counts its log syncs, commits per fsync:
//! how well group commit shares each sync. The sync counter is `Innodb_os_log_fsyncs` where the
//! server has it (MySQL, Quill); MariaDB 10.11 has no such counter but counts its redo-log syncs
//! in `Innodb_data_fsyncs` (together with the rare data-file syncs, so the figure is a slight
//! understatement there). Binary-log syncs are in neither.
//! Check: exactly `clients x count` rows with distinct ids arrived.

use crate::report::{Better, Report, mean_us, quantile_us};
use crate::server::{Target, delta, global_status, run_all, run_clients};
use mysql::params;
use mysql::prelude::Queryable;
use std::time::{Duration, Instant};

/// Status counters of log syncs, in order of preference (see the module doc).
const FSYNC_COUNTERS: [&str; 2] = ["Innodb_os_log_fsyncs", "Innodb_data_fsyncs"];

#[derive(clap::Args)]
pub struct Args {
    /// Concurrent clients, each on its own connection.
    #[arg(long, default_value_t = 16)]
    clients: u32,
    /// INSERTs per client.
    #[arg(long, default_value_t = 1000)]
    count: u32,
}

pub fn run(target: &Target, args: &Args) -> Result<serde_json::Value, String> {
    assert!(args.clients > 0 && args.count > 0, "clients and count must be positive");
    let mut setup = target.connect_setup()?;
    run_all(
        &mut setup,
        &[
            "DROP TABLE IF EXISTS storm",
            "CREATE TABLE storm (id BIGINT AUTO_INCREMENT PRIMARY KEY, client INT NOT NULL, seq INT NOT NULL, payload VARCHAR(64) NOT NULL)",
        ],
    )?;
    let fsync_counter = FSYNC_COUNTERS.into_iter().find(|name| global_status(&mut setup, name).is_ok());
    let fsyncs_before = sync_count(&mut setup, fsync_counter);
    let (runs, elapsed) = run_clients(target, args.clients, |client, conn| insert(conn, client, args.count))?;
    let fsyncs = delta(&fsyncs_before, &sync_count(&mut setup, fsync_counter));
    let latencies: Vec<Duration> = runs.concat();
    let inserts = u64::from(args.clients) * u64::from(args.count);

    let mut report = Report::default();
    report.metric("inserts/s", inserts as f64 / elapsed.as_secs_f64(), "1/s", Better::Higher);
    report.metric("insert latency", mean_us(&latencies), "us", Better::Lower);
    report.metric("insert latency p95", quantile_us(&latencies, 0.95), "us", Better::Lower);
    match fsyncs {
        // Flush modes 0 and 2 sync once a second: a short run may see none.
        Ok(0) => report.no_value("commits per fsync", "count", Better::Higher, format!("{} did not move", fsync_counter.unwrap_or_default())),
        fsyncs => report.maybe("commits per fsync", fsyncs.map(|n| inserts as f64 / n as f64), "count", Better::Higher),
    }

    let (rows, ids): (u64, u64) =
        setup.query_first("SELECT COUNT(*), COUNT(DISTINCT id) FROM storm").map_err(|e| format!("count rows: {e}"))?.expect("one row");
    report.check("rows inserted", rows == inserts && ids == inserts, format!("{rows} rows, {ids} distinct ids, expected {inserts}"));
    Ok(report.to_json())
}

fn sync_count(conn: &mut mysql::Conn, counter: Option<&str>) -> Result<u64, String> {
    match counter {
        Some(name) => global_status(conn, name),
        None => Err(format!("server has none of the status counters {}", FSYNC_COUNTERS.join(", "))),
    }
}

fn insert(conn: &mut mysql::Conn, client: u32, count: u32) -> Result<Vec<Duration>, String> {
    let statement = conn.prep("INSERT INTO storm (client, seq, payload) VALUES (:client, :seq, :payload)").map_err(|e| format!("prepare INSERT: {e}"))?;
    let mut latencies = Vec::with_capacity(count as usize);
    for seq in 0..count {
        let start = Instant::now();
        conn.exec_drop(&statement, params! {"client" => client, "seq" => seq, "payload" => format!("event {client}-{seq}")})
            .map_err(|e| format!("INSERT: {e}"))?;
        latencies.push(start.elapsed());
    }
    Ok(latencies)
}
