//! The counter workload: autocommit increments of a 10-row table `demo (id, counter)`.
//!
//! Shapes, chosen with `--clients` and `--rows`:
//! - 1 client on row 3: the cost of one durable commit. The same connection then times a
//!   trivial round trip (`SELECT counter FROM demo WHERE id=3`), and the report gives the
//!   commit time minus that round trip: what durability costs over a read.
//! - 2 clients on different rows, or on the same row: whether a hot row serialises commits.
//! - `--for-update`: each increment is a read-modify-write transaction
//!   (`SELECT ... FOR UPDATE`, `UPDATE ... SET counter=<read value + 1>`, `COMMIT`).
//!
//! Check: every row ends at exactly the number of increments made to it. A lost update or a
//! double-applied one fails the run's check, whatever the timing.

use crate::report::{Better, Report, mean_us, quantile_us};
use crate::server::{Target, is_retryable, run_all, run_clients};
use mysql::prelude::Queryable;
use std::time::{Duration, Instant};

/// Rows in `demo`; the single-client and same-row shapes use row [`HOT_ROW`].
const ROWS: u32 = 10;
const HOT_ROW: u32 = 3;

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Rows {
    Same,
    Different,
}

#[derive(clap::Args)]
pub struct Args {
    /// Concurrent clients, each on its own connection.
    #[arg(long, default_value_t = 1)]
    clients: u32,
    /// Whether the clients increment the same row or one row each.
    #[arg(long, value_enum, default_value = "same")]
    rows: Rows,
    /// Increments per client.
    #[arg(long, default_value_t = 1000)]
    count: u32,
    /// Read-modify-write with `SELECT ... FOR UPDATE` inside a transaction.
    #[arg(long)]
    for_update: bool,
}

struct ClientRun {
    latencies: Vec<Duration>,
    retries: u64,
}

pub fn run(target: &Target, args: &Args) -> Result<serde_json::Value, String> {
    assert!(args.clients >= 1 && args.clients < ROWS - HOT_ROW, "clients must fit in the table's rows");
    assert!(args.count > 0, "count must be positive");
    let mut setup = target.connect_setup()?;
    run_all(&mut setup, &["DROP TABLE IF EXISTS demo", "CREATE TABLE demo (id INT PRIMARY KEY, counter BIGINT NOT NULL)"])?;
    let values: Vec<String> = (1..=ROWS).map(|id| format!("({id}, 0)")).collect();
    run_all(&mut setup, &[&format!("INSERT INTO demo VALUES {}", values.join(", "))])?;

    let row_of = |client: u32| if args.rows == Rows::Same { HOT_ROW } else { HOT_ROW + client };
    let (runs, elapsed) = run_clients(target, args.clients, |client, conn| increment(conn, row_of(client), args))?;

    let mut report = Report::default();
    let latencies: Vec<Duration> = runs.iter().flat_map(|r| r.latencies.iter().copied()).collect();
    report.metric("elapsed", elapsed.as_secs_f64() * 1e3, "ms", Better::Lower);
    report.metric("per increment", mean_us(&latencies), "us", Better::Lower);
    report.metric("per increment p95", quantile_us(&latencies, 0.95), "us", Better::Lower);
    if args.for_update {
        let retries: u64 = runs.iter().map(|r| r.retries).sum();
        report.metric("retries (1213/1205)", retries as f64, "count", Better::Lower);
    }
    if args.clients == 1 {
        let round_trips = time_round_trips(&mut setup, args.count)?;
        let commit_us = mean_us(&latencies);
        let round_trip_us = mean_us(&round_trips);
        report.metric("round trip (SELECT)", round_trip_us, "us", Better::Lower);
        report.metric("commit minus round trip", commit_us - round_trip_us, "us", Better::Lower);
    }
    check_counters(&mut setup, args, row_of, &mut report)?;
    Ok(report.to_json())
}

fn increment(conn: &mut mysql::Conn, id: u32, args: &Args) -> Result<ClientRun, String> {
    let mut run = ClientRun { latencies: Vec::with_capacity(args.count as usize), retries: 0 };
    let update = format!("UPDATE demo SET counter=counter+1 WHERE id={id}");
    for _ in 0..args.count {
        let start = Instant::now();
        if args.for_update {
            while let Err(error) = read_modify_write(conn, id) {
                if !is_retryable(&error) {
                    return Err(format!("read-modify-write of row {id}: {error}"));
                }
                conn.query_drop("ROLLBACK").map_err(|e| format!("ROLLBACK: {e}"))?;
                run.retries += 1;
            }
        } else {
            conn.query_drop(&update).map_err(|e| format!("{update}: {e}"))?;
        }
        run.latencies.push(start.elapsed());
    }
    Ok(run)
}

fn read_modify_write(conn: &mut mysql::Conn, id: u32) -> Result<(), mysql::Error> {
    conn.query_drop("START TRANSACTION")?;
    let counter: Option<i64> = conn.query_first(format!("SELECT counter FROM demo WHERE id={id} FOR UPDATE"))?;
    let counter = counter.expect("demo row exists");
    conn.query_drop(format!("UPDATE demo SET counter={} WHERE id={id}", counter + 1))?;
    conn.query_drop("COMMIT")
}

fn time_round_trips(conn: &mut mysql::Conn, count: u32) -> Result<Vec<Duration>, String> {
    let select = format!("SELECT counter FROM demo WHERE id={HOT_ROW}");
    (0..count)
        .map(|_| {
            let start = Instant::now();
            let _: Option<i64> = conn.query_first(&select).map_err(|e| format!("{select}: {e}"))?;
            Ok(start.elapsed())
        })
        .collect()
}

fn check_counters(conn: &mut mysql::Conn, args: &Args, row_of: impl Fn(u32) -> u32, report: &mut Report) -> Result<(), String> {
    let mut expected = vec![0_i64; ROWS as usize + 1];
    for client in 0..args.clients {
        expected[row_of(client) as usize] += i64::from(args.count);
    }
    let rows: Vec<(u32, i64)> = conn.query("SELECT id, counter FROM demo ORDER BY id").map_err(|e| format!("read counters: {e}"))?;
    let wrong: Vec<String> = rows
        .iter()
        .filter(|(id, counter)| expected[*id as usize] != *counter)
        .map(|(id, counter)| format!("row {id} = {counter}, expected {}", expected[*id as usize]))
        .collect();
    let detail = if wrong.is_empty() { format!("all {} rows as expected", rows.len()) } else { wrong.join("; ") };
    report.check("final counters", wrong.is_empty() && rows.len() == ROWS as usize, detail);
    Ok(())
}
