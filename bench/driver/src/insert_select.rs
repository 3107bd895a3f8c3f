//! The bulk copy: `INSERT INTO dyn SELECT * FROM src` of a table of pharmacy price-list
//! rows (an AUTO_INCREMENT id, PZN CHAR(8), two VARCHARs, CHAR(6), two DECIMAL(10,2),
//! CHAR(5); about 100 bytes a row), 1,000,000 rows by default.
//!
//! `src` is loaded first with multi-row INSERTs of [`LOAD_BATCH_ROWS`] rows (not timed).
//! Reports the copy's time and rows per second and, with `--server-pid`, the server's
//! resident memory per row held: the growth of its RSS from the start of the workload to
//! the end of the copy, over the rows of both tables. Check: `dyn` has every row.

use crate::report::{Better, Report};
use crate::server::{Target, run_all};
use mysql::prelude::Queryable;
use std::time::Instant;

/// Rows per INSERT statement of the load.
const LOAD_BATCH_ROWS: u64 = 1000;

#[derive(clap::Args)]
pub struct Args {
    /// Rows of `src`, copied into `dyn`.
    #[arg(long, default_value_t = 1_000_000)]
    rows: u64,
    /// The server's process id, to read its resident memory (same machine).
    #[arg(long)]
    server_pid: Option<u32>,
}

const COLUMNS: &str = "(id INT AUTO_INCREMENT PRIMARY KEY, pzn CHAR(8), artikel_text VARCHAR(40), hersteller VARCHAR(30), \
                       menge CHAR(6), preis DECIMAL(10,2), rabatt DECIMAL(10,2), nr CHAR(5))";

pub fn run(target: &Target, args: &Args) -> Result<serde_json::Value, String> {
    assert!(args.rows > 0, "rows must be positive");
    let mut setup = target.connect_setup()?;
    run_all(&mut setup, &["DROP TABLE IF EXISTS src", "DROP TABLE IF EXISTS dyn"])?;
    let rss_start = rss_bytes(args.server_pid);
    run_all(&mut setup, &[&format!("CREATE TABLE src {COLUMNS}"), &format!("CREATE TABLE dyn {COLUMNS}")])?;
    let mut next = 0;
    while next < args.rows {
        let end = (next + LOAD_BATCH_ROWS).min(args.rows);
        let values: Vec<String> = (next..end).map(row_values).collect();
        setup
            .query_drop(format!("INSERT INTO src (pzn, artikel_text, hersteller, menge, preis, rabatt, nr) VALUES {}", values.join(",")))
            .map_err(|e| format!("load src: {e}"))?;
        next = end;
    }

    let start = Instant::now();
    setup.query_drop("INSERT INTO dyn SELECT * FROM src").map_err(|e| format!("INSERT ... SELECT: {e}"))?;
    let elapsed = start.elapsed();
    let rss_end = rss_bytes(args.server_pid);

    let mut report = Report::default();
    report.metric("copy time", elapsed.as_secs_f64(), "s", Better::Lower);
    report.metric("rows/s", args.rows as f64 / elapsed.as_secs_f64(), "1/s", Better::Higher);
    match (rss_start, rss_end) {
        (Ok(before), Ok(after)) => report.metric("RSS per row", after.saturating_sub(before) as f64 / (2 * args.rows) as f64, "B", Better::Lower),
        (Err(why), _) | (_, Err(why)) => report.no_value("RSS per row", "B", Better::Lower, why),
    }
    let copied: Option<u64> = setup.query_first("SELECT COUNT(*) FROM dyn").map_err(|e| format!("count dyn: {e}"))?;
    report.check("rows copied", copied == Some(args.rows), format!("{copied:?} rows in dyn, expected {}", args.rows));
    run_all(&mut setup, &["DROP TABLE src", "DROP TABLE dyn"])?;
    Ok(report.to_json())
}

/// Row `n` of `src`: deterministic, about 100 bytes.
fn row_values(n: u64) -> String {
    let pzn = 10_000_000 + n % 89_999_999;
    let cents = n * 37 % 1_000_000;
    format!(
        "('{pzn:08}','Artikel {n} Tabletten {} mg','Hersteller {}','{:>6}',{}.{:02},{}.{:02},'{:05}')",
        n % 1000,
        n % 997,
        n % 500,
        cents / 100,
        cents % 100,
        cents / 1000,
        cents % 100,
        n % 100_000
    )
}

/// The resident memory of process `pid`, from /proc.
fn rss_bytes(pid: Option<u32>) -> Result<u64, String> {
    let pid = pid.ok_or_else(|| "no --server-pid given".to_owned())?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).map_err(|e| format!("read /proc/{pid}/status: {e}"))?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).ok_or("no VmRSS line")?;
    let kib: u64 = line.split_whitespace().nth(1).and_then(|v| v.parse().ok()).ok_or("bad VmRSS line")?;
    Ok(kib * 1024)
}
