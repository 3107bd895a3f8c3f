//! A long read beside writers: the join of a 20,000-row table with itself on a column with no
//! index (`SELECT COUNT(*) FROM big a JOIN big b ON a.v = b.v WHERE a.id < 3000`), run on one
//! connection, while another connection makes autocommit INSERTs into another table.
//!
//! Reports the join's time, and with `--writer` the INSERT latency (p50, p99) while joins
//! run back to back on the reader's connection (as many as it takes for the writer's
//! `--inserts`, so a fast join still has writes beside it) and, measured first, with nothing
//! else running; their ratio is the headline of `long-read-vs-write`: reads must never block
//! writes, so it should stay near 1.
//! `v` is a permutation of the ids (`id * 7 mod rows`, 7 coprime with the row count), so the
//! join returns exactly one match per row of `a`: that is the check.

use crate::report::{Better, Report, quantile_us};
use crate::server::{Target, run_all};
use mysql::prelude::Queryable;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Rows per INSERT statement of the set-up.
const LOAD_BATCH_ROWS: u32 = 1000;
/// How long the writer waits after starting the reader before it measures, so a join is
/// under way.
const READ_HEAD_START: Duration = Duration::from_millis(50);
/// Pause between two INSERTs of the writer: it samples latency, it does not load the server.
const WRITE_INTERVAL: Duration = Duration::from_millis(5);

#[derive(clap::Args)]
pub struct Args {
    /// Rows of `big`.
    #[arg(long, default_value_t = 20_000)]
    rows: u32,
    /// Rows of `a` the join takes (`a.id < LIMIT`).
    #[arg(long, default_value_t = 3000)]
    limit: u32,
    /// Also measure INSERT latency on another connection, idle and during the join.
    #[arg(long)]
    writer: bool,
    /// INSERTs of each measurement, idle and during the joins.
    #[arg(long, default_value_t = 200)]
    inserts: u32,
}

pub fn run(target: &Target, args: &Args) -> Result<serde_json::Value, String> {
    assert!(args.rows > 0 && !args.rows.is_multiple_of(7), "rows must be positive and coprime with 7");
    assert!(args.inserts > 0, "inserts must be positive");
    let mut setup = target.connect_setup()?;
    run_all(
        &mut setup,
        &[
            "DROP TABLE IF EXISTS big",
            "DROP TABLE IF EXISTS side",
            "CREATE TABLE big (id INT PRIMARY KEY, v INT, s VARCHAR(50))",
            "CREATE TABLE side (id BIGINT AUTO_INCREMENT PRIMARY KEY, n INT NOT NULL)",
        ],
    )?;
    let mut next = 0;
    while next < args.rows {
        let end = (next + LOAD_BATCH_ROWS).min(args.rows);
        let values: Vec<String> = (next..end).map(|i| format!("({i},{},'row {i}')", u64::from(i) * 7 % u64::from(args.rows))).collect();
        setup.query_drop(format!("INSERT INTO big VALUES {}", values.join(","))).map_err(|e| format!("load big: {e}"))?;
        next = end;
    }

    let mut report = Report::default();
    let mut writer = if args.writer { Some(target.connect()?) } else { None };
    let idle = match writer.as_mut() {
        Some(conn) => Some(insert(conn, args.inserts)?),
        None => None,
    };

    let mut reader = target.connect()?;
    let query = format!("SELECT COUNT(*) FROM big a JOIN big b ON a.v = b.v WHERE a.id < {}", args.limit);
    let writing = AtomicBool::new(writer.is_some());
    let (reads, during) = std::thread::scope(|scope| {
        let reads = scope.spawn(|| {
            // The first join is timed; with a writer, joins go on until it is done.
            let mut reads = Vec::new();
            loop {
                let start = Instant::now();
                let count: Option<u64> = reader.query_first(&query).map_err(|e| format!("join: {e}"))?;
                reads.push((count, start.elapsed()));
                if !writing.load(Ordering::Acquire) {
                    return Ok::<_, String>(reads);
                }
            }
        });
        let during = writer.as_mut().map(|conn| {
            std::thread::sleep(READ_HEAD_START);
            let during = insert(conn, args.inserts);
            writing.store(false, Ordering::Release);
            during
        });
        (reads.join().expect("reader thread panicked"), during)
    });
    let reads = reads?;
    let (count, read_time) = reads[0];
    report.metric("join time", read_time.as_secs_f64(), "s", Better::Lower);
    let expected = u64::from(args.limit.min(args.rows));
    report.check("join count", reads.iter().all(|(c, _)| *c == Some(expected)), format!("{count:?} rows (first join), expected {expected}"));

    if let (Some(idle), Some(during)) = (idle, during.transpose()?) {
        report.metric("insert p99 during read", quantile_us(&during, 0.99), "us", Better::Lower);
        report.metric("insert p99 idle", quantile_us(&idle, 0.99), "us", Better::Lower);
        report.metric("insert p50 during read", quantile_us(&during, 0.5), "us", Better::Lower);
        report.metric("p99 during / idle", quantile_us(&during, 0.99) / quantile_us(&idle, 0.99), "x", Better::Lower);
        report.metric("joins during the inserts", reads.len() as f64, "count", Better::Higher);
    }
    Ok(report.to_json())
}

/// `count` autocommit INSERTs into `side`, one every [`WRITE_INTERVAL`]; returns each one's
/// latency.
fn insert(conn: &mut mysql::Conn, count: u32) -> Result<Vec<Duration>, String> {
    let statement = conn.prep("INSERT INTO side (n) VALUES (?)").map_err(|e| format!("prepare INSERT: {e}"))?;
    let mut latencies = Vec::new();
    for n in 0..count {
        let start = Instant::now();
        conn.exec_drop(&statement, (n,)).map_err(|e| format!("INSERT: {e}"))?;
        latencies.push(start.elapsed());
        std::thread::sleep(WRITE_INTERVAL);
    }
    Ok(latencies)
}
