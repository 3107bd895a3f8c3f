//! `LOAD DATA LOCAL INFILE` of a tab-separated file of price-list rows (the columns of
//! [`crate::insert_select`]), 1,000,000 rows by default, into an empty table.
//!
//! The file is written first to the temporary directory, and removed at the end (not timed); `local_infile` is switched
//! on at the server (both sides must allow it, as in MySQL), and the driver's connection
//! answers the server's request for the file with it. Reports the load's time and rows per
//! second. Check: the table has every row.

use crate::insert_select::{COLUMNS, row_values};
use crate::report::{Better, Report};
use crate::server::{DATABASE, Target, run_all};
use mysql::prelude::Queryable;
use std::io::Write;
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    /// Rows of the file.
    #[arg(long, default_value_t = 1_000_000)]
    rows: u64,
}

pub fn run(target: &Target, args: &Args) -> Result<serde_json::Value, String> {
    let path = std::env::temp_dir().join(format!("quill-bench-price-list-{}.tsv", std::process::id()));
    let result = load(target, args, &path);
    let _ = std::fs::remove_file(&path);
    result
}

fn load(target: &Target, args: &Args, path: &std::path::Path) -> Result<serde_json::Value, String> {
    let mut file = std::io::BufWriter::new(std::fs::File::create(path).map_err(|e| format!("create {}: {e}", path.display()))?);
    for n in 0..args.rows {
        writeln!(file, "{}\t{}", n + 1, row_values(n, "", "\t")).map_err(|e| format!("write {}: {e}", path.display()))?;
    }
    file.flush().map_err(|e| format!("write {}: {e}", path.display()))?;
    drop(file);

    let mut setup = target.connect_setup()?;
    run_all(&mut setup, &["SET GLOBAL local_infile = 1", "DROP TABLE IF EXISTS loaded", &format!("CREATE TABLE loaded {COLUMNS}")])?;
    let file_path = path.to_owned();
    let handler = mysql::LocalInfileHandler::new(move |_name, out| {
        let mut file = std::fs::File::open(&file_path)?;
        std::io::copy(&mut file, out)?;
        Ok(())
    });
    let mut loader = target.connect_with(Some(DATABASE), Some(handler))?;
    let start = Instant::now();
    loader.query_drop("LOAD DATA LOCAL INFILE 'price-list.tsv' INTO TABLE loaded").map_err(|e| format!("LOAD DATA: {e}"))?;
    let elapsed = start.elapsed().as_secs_f64();

    let mut report = Report::default();
    report.metric("load time", elapsed, "s", Better::Lower);
    report.metric("rows/s", args.rows as f64 / elapsed, "1/s", Better::Higher);
    let loaded: Option<u64> = setup.query_first("SELECT COUNT(*) FROM loaded").map_err(|e| format!("count: {e}"))?;
    report.check("rows loaded", loaded == Some(args.rows), format!("{loaded:?} rows loaded, expected {}", args.rows));
    run_all(&mut setup, &["DROP TABLE loaded"])?;
    Ok(report.to_json())
}
