//! Optimistic concurrency on one hot row, as ORMs with a version column do it.
//!
//! Each client loops for `--seconds`: read `parent.version`, then `START TRANSACTION`,
//! `UPDATE parent SET version=version+1 WHERE id=1 AND version=?` (prepared, with the version read); if no row changed,
//! another client won: `ROLLBACK` and retry; otherwise `INSERT` a child row and `COMMIT`.
//! `--rtt-ms` sleeps before every statement to simulate the client's network round trip,
//! which is what makes row locks queue up in production; with `--split-rtt` the client
//! sleeps half of it before it sends each statement and half after it receives the answer.
//! `--read-committed` runs the clients at READ COMMITTED (the `occ-hot-row-128` workload).
//!
//! Reports commits per second, retries per commit, the client-side time of the UPDATE (it
//! includes any row-lock wait) and, when the server counts them, its row-lock waits and
//! wait time (`Innodb_row_lock_waits`, `Innodb_row_lock_time`).
//! Check: the parent's version, the number of children and the commits the clients counted
//! all agree.

use crate::report::{Better, Report, mean_us};
use crate::server::{Target, delta, global_status, is_retryable, run_all, run_clients};
use mysql::prelude::Queryable;
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct Args {
    /// Concurrent clients, each on its own connection.
    #[arg(long, default_value_t = 16)]
    clients: u32,
    /// How long each client runs.
    #[arg(long, default_value_t = 5.0)]
    seconds: f64,
    /// Simulated client round trip: sleep before each statement, in milliseconds.
    #[arg(long, default_value_t = 0.0)]
    rtt_ms: f64,
    /// Sleep half of the round trip before sending each statement, half after its answer.
    #[arg(long)]
    split_rtt: bool,
    /// Run the clients' transactions at READ COMMITTED.
    #[arg(long)]
    read_committed: bool,
}

#[derive(Default)]
struct ClientRun {
    commits: u64,
    retries: u64,
    update_latencies: Vec<Duration>,
}

pub fn run(target: &Target, args: &Args) -> Result<serde_json::Value, String> {
    assert!(args.clients > 0 && args.seconds > 0.0 && args.rtt_ms >= 0.0, "invalid hot-row arguments");
    let mut setup = target.connect_setup()?;
    run_all(
        &mut setup,
        &[
            "DROP TABLE IF EXISTS child",
            "DROP TABLE IF EXISTS parent",
            "CREATE TABLE parent (id INT PRIMARY KEY, version BIGINT NOT NULL)",
            "CREATE TABLE child (id BIGINT AUTO_INCREMENT PRIMARY KEY, parent_id INT NOT NULL, version BIGINT NOT NULL)",
            "INSERT INTO parent VALUES (1, 0)",
        ],
    )?;
    let waits_before = global_status(&mut setup, "Innodb_row_lock_waits");
    let wait_ms_before = global_status(&mut setup, "Innodb_row_lock_time");
    let (runs, elapsed) = run_clients(target, args.clients, |_, conn| client_loop(conn, args))?;
    let waits = delta(&waits_before, &global_status(&mut setup, "Innodb_row_lock_waits"));
    let wait_ms = delta(&wait_ms_before, &global_status(&mut setup, "Innodb_row_lock_time"));

    let commits: u64 = runs.iter().map(|r| r.commits).sum();
    let retries: u64 = runs.iter().map(|r| r.retries).sum();
    let updates: Vec<Duration> = runs.iter().flat_map(|r| r.update_latencies.iter().copied()).collect();
    let mut report = Report::default();
    report.metric("commits/s", commits as f64 / elapsed.as_secs_f64(), "1/s", Better::Higher);
    if commits > 0 {
        let per_commit = |n: u64| n as f64 / commits as f64;
        report.metric("retries per commit", per_commit(retries), "count", Better::Lower);
        report.maybe("row lock waits per commit", waits.map(per_commit), "count", Better::Lower);
        report.maybe("row lock wait per commit", wait_ms.map(per_commit), "ms", Better::Lower);
    }
    if !updates.is_empty() {
        report.metric("UPDATE time (incl. lock wait)", mean_us(&updates), "us", Better::Lower);
    }

    let version: Option<i64> = setup.query_first("SELECT version FROM parent WHERE id=1").map_err(|e| format!("read parent: {e}"))?;
    let (children, versions): (i64, i64) =
        setup.query_first("SELECT COUNT(*), COUNT(DISTINCT version) FROM child").map_err(|e| format!("count children: {e}"))?.expect("one row");
    let commits = commits as i64;
    report.check(
        "version = children = commits > 0",
        commits > 0 && version == Some(commits) && children == commits && versions == commits,
        format!("version {version:?}, {children} children ({versions} distinct versions), {commits} commits"),
    );
    Ok(report.to_json())
}

fn client_loop(conn: &mut mysql::Conn, args: &Args) -> Result<ClientRun, String> {
    if args.read_committed {
        conn.query_drop("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED").map_err(|e| format!("isolation: {e}"))?;
    }
    let round_trip = RoundTrip::new(args);
    let update = conn.prep("UPDATE parent SET version=version+1 WHERE id=1 AND version=?").map_err(|e| format!("prepare UPDATE: {e}"))?;
    let deadline = Instant::now() + Duration::from_secs_f64(args.seconds);
    let mut run = ClientRun::default();
    while Instant::now() < deadline {
        match attempt(conn, &update, round_trip, &mut run.update_latencies) {
            Ok(true) => run.commits += 1,
            Ok(false) => run.retries += 1,
            Err(error) if is_retryable(&error) => {
                conn.query_drop("ROLLBACK").map_err(|e| format!("ROLLBACK: {e}"))?;
                run.retries += 1;
            }
            Err(error) => return Err(format!("hot-row transaction: {error}")),
        }
    }
    Ok(run)
}

/// The simulated network: how long to sleep before sending a statement and after its answer.
#[derive(Clone, Copy)]
struct RoundTrip {
    before: Duration,
    after: Duration,
}

impl RoundTrip {
    fn new(args: &Args) -> RoundTrip {
        let whole = Duration::from_secs_f64(args.rtt_ms / 1e3);
        if args.split_rtt { RoundTrip { before: whole / 2, after: whole / 2 } } else { RoundTrip { before: whole, after: Duration::ZERO } }
    }

    fn send(self) {
        std::thread::sleep(self.before);
    }

    fn receive(self) {
        std::thread::sleep(self.after);
    }
}

/// One optimistic transaction; `Ok(false)` when another client changed the version first.
fn attempt(conn: &mut mysql::Conn, update: &mysql::Statement, round_trip: RoundTrip, update_latencies: &mut Vec<Duration>) -> Result<bool, mysql::Error> {
    let statement = |conn: &mut mysql::Conn, sql: &str| {
        round_trip.send();
        let r = conn.query_drop(sql);
        round_trip.receive();
        r
    };
    round_trip.send();
    let version: i64 = conn.query_first("SELECT version FROM parent WHERE id=1")?.expect("parent row exists");
    round_trip.receive();
    statement(conn, "START TRANSACTION")?;
    round_trip.send();
    let start = Instant::now();
    let updated = conn.exec_drop(update, (version,));
    update_latencies.push(start.elapsed());
    round_trip.receive();
    updated?;
    if conn.affected_rows() == 0 {
        statement(conn, "ROLLBACK")?;
        return Ok(false);
    }
    statement(conn, &format!("INSERT INTO child (parent_id, version) VALUES (1, {})", version + 1))?;
    statement(conn, "COMMIT")?;
    Ok(true)
}
