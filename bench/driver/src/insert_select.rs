//! The bulk copy: `INSERT INTO dst SELECT * FROM src` of a table of pharmacy price-list rows
//! (an AUTO_INCREMENT id, PZN CHAR(8), two VARCHARs, CHAR(6), two DECIMAL(10,2), CHAR(5);
//! about 100 bytes a row).
//!
//! `src` is loaded first with multi-row INSERTs of [`LOAD_BATCH_ROWS`] rows (not timed). Then,
//! for each `--formats` entry, an empty `dst` with that `ROW_FORMAT` is filled by one
//! `INSERT ... SELECT` (timed) and dropped again, so at most two tables exist at a time. With
//! `--server-pid`, the server's peak resident memory during each copy is reported: the peak
//! is reset before the copy (`/proc/PID/clear_refs`, needs the same user or root) and read
//! from `VmHWM` after it. A server that refuses a format (InnoDB has no FIXED rows) gets no
//! value for it, with the server's error as the reason.
//!
//! With `--buffer-sizes`, each size is set as the session's `bulk_insert_buffer_size` before a
//! copy into a dynamic `dst`, and the copy's time and the growth of `Quill_bulk_buffer_flushes`
//! are reported per size (the flush count only where the server has the counter).
//!
//! Checks: every copy has every row.

use crate::report::{Better, Report};
use crate::server::{Target, global_status, run_all};
use mysql::Conn;
use mysql::prelude::Queryable;
use std::time::Instant;

/// Rows per INSERT statement of the load.
const LOAD_BATCH_ROWS: u64 = 1000;

#[derive(clap::Args)]
pub struct Args {
    /// Rows of `src`, copied into each `dst`.
    #[arg(long, default_value_t = 1_000_000)]
    rows: u64,
    /// Row formats to copy into, in order (`ROW_FORMAT=` values).
    #[arg(long, value_delimiter = ',', default_value = "dynamic,fixed")]
    formats: Vec<String>,
    /// `bulk_insert_buffer_size` values to copy with, one copy each (bytes).
    #[arg(long, value_delimiter = ',')]
    buffer_sizes: Vec<u64>,
    /// The server's process id, to read its resident memory (same machine).
    #[arg(long)]
    server_pid: Option<u32>,
}

pub const COLUMNS: &str = "(id INT AUTO_INCREMENT PRIMARY KEY, pzn CHAR(8), artikel_text VARCHAR(40), hersteller VARCHAR(30), \
                           menge CHAR(6), preis DECIMAL(10,2), rabatt DECIMAL(10,2), nr CHAR(5))";

pub fn run(target: &Target, args: &Args) -> Result<serde_json::Value, String> {
    assert!(args.rows > 0, "rows must be positive");
    let mut setup = target.connect_setup()?;
    run_all(&mut setup, &["DROP TABLE IF EXISTS src", "DROP TABLE IF EXISTS dst", &format!("CREATE TABLE src {COLUMNS}")])?;
    let mut next = 0;
    while next < args.rows {
        let end = (next + LOAD_BATCH_ROWS).min(args.rows);
        let values: Vec<String> = (next..end).map(|n| format!("({})", row_values(n, "'", ","))).collect();
        setup
            .query_drop(format!("INSERT INTO src (pzn, artikel_text, hersteller, menge, preis, rabatt, nr) VALUES {}", values.join(",")))
            .map_err(|e| format!("load src: {e}"))?;
        next = end;
    }

    let mut report = Report::default();
    for format in args.formats.iter().filter(|f| !f.is_empty()) {
        let time = format!("copy time {format}");
        let peak = format!("peak RSS {format}");
        let length = format!("row length {format}");
        if let Err(refused) = setup.query_drop(format!("CREATE TABLE dst {COLUMNS} ROW_FORMAT={}", format.to_ascii_uppercase())) {
            let why = format!("ROW_FORMAT={format} refused: {refused}");
            report.no_value(&time, "s", Better::Lower, why.clone());
            report.no_value(&peak, "MiB", Better::Lower, why.clone());
            report.no_value(&length, "B", Better::Lower, why);
            continue;
        }
        let peak_reset = reset_peak_rss(args.server_pid);
        let elapsed = copy(&mut setup, &mut report, args.rows, &format!("rows copied {format}"))?;
        report.metric(&time, elapsed, "s", Better::Lower);
        match peak_reset.and_then(|()| peak_rss_bytes(args.server_pid)) {
            Ok(bytes) => report.metric(&peak, bytes as f64 / (1 << 20) as f64, "MiB", Better::Lower),
            Err(why) => report.no_value(&peak, "MiB", Better::Lower, why),
        }
        report.maybe(&length, avg_row_length(&mut setup), "B", Better::Lower);
        run_all(&mut setup, &["DROP TABLE dst"])?;
    }
    for &size in &args.buffer_sizes {
        let label = size_label(size);
        run_all(&mut setup, &[&format!("SET SESSION bulk_insert_buffer_size = {size}"), &format!("CREATE TABLE dst {COLUMNS}")])?;
        let before = global_status(&mut setup, "Quill_bulk_buffer_flushes");
        let elapsed = copy(&mut setup, &mut report, args.rows, &format!("rows copied {label}"))?;
        report.metric(&format!("copy time {label}"), elapsed, "s", Better::Lower);
        let flushes = before.and_then(|b| global_status(&mut setup, "Quill_bulk_buffer_flushes").map(|a| (a - b) as f64));
        report.maybe(&format!("flushes {label}"), flushes, "", Better::Lower);
        run_all(&mut setup, &["DROP TABLE dst"])?;
    }
    run_all(&mut setup, &["DROP TABLE src"])?;
    Ok(report.to_json())
}

/// Copies `src` into `dst`; checks every row arrived; returns the copy's seconds.
fn copy(setup: &mut Conn, report: &mut Report, rows: u64, check: &str) -> Result<f64, String> {
    let start = Instant::now();
    setup.query_drop("INSERT INTO dst SELECT * FROM src").map_err(|e| format!("INSERT ... SELECT: {e}"))?;
    let elapsed = start.elapsed().as_secs_f64();
    let copied: Option<u64> = setup.query_first("SELECT COUNT(*) FROM dst").map_err(|e| format!("count dst: {e}"))?;
    report.check(check, copied == Some(rows), format!("{copied:?} rows in dst, expected {rows}"));
    Ok(elapsed)
}

/// `Avg_row_length` of `dst` from SHOW TABLE STATUS.
fn avg_row_length(setup: &mut Conn) -> Result<f64, String> {
    let row: Option<mysql::Row> = setup.query_first("SHOW TABLE STATUS LIKE 'dst'").map_err(|e| format!("SHOW TABLE STATUS: {e}"))?;
    let value: Option<u64> = row.and_then(|r| r.get::<Option<u64>, _>("Avg_row_length")).flatten();
    value.map(|v| v as f64).ok_or_else(|| "no Avg_row_length".to_owned())
}

/// 131072 -> "128K", 8388608 -> "8M", 1073741824 -> "1G".
fn size_label(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{}G", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{}M", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{}K", b >> 10),
        b => b.to_string(),
    }
}

/// Row `n` of the price list, its values separated by `sep`, strings quoted with `quote`
/// (`'` for SQL, nothing for a tab-separated file): deterministic, about 100 bytes.
pub fn row_values(n: u64, quote: &str, sep: &str) -> String {
    let pzn = 10_000_000 + n % 89_999_999;
    let cents = n * 37 % 1_000_000;
    let q = quote;
    format!(
        "{q}{pzn:08}{q}{sep}{q}Artikel {n} Tabletten {} mg{q}{sep}{q}Hersteller {}{q}{sep}{q}{:>6}{q}{sep}{}.{:02}{sep}{}.{:02}{sep}{q}{:05}{q}",
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

/// Resets process `pid`'s peak resident memory (`VmHWM`) to its current RSS.
fn reset_peak_rss(pid: Option<u32>) -> Result<(), String> {
    let pid = pid.ok_or_else(|| "no --server-pid given".to_owned())?;
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").map_err(|e| format!("reset peak RSS of {pid}: {e}"))
}

/// The peak resident memory of process `pid` since its last reset, from /proc.
fn peak_rss_bytes(pid: Option<u32>) -> Result<u64, String> {
    let pid = pid.ok_or_else(|| "no --server-pid given".to_owned())?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).map_err(|e| format!("read /proc/{pid}/status: {e}"))?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).ok_or("no VmHWM line")?;
    let kib: u64 = line.split_whitespace().nth(1).and_then(|v| v.parse().ok()).ok_or("bad VmHWM line")?;
    Ok(kib * 1024)
}
