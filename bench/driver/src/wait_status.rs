//! Waits, on one connection, until a global status variable leaves a value or reaches one,
//! polling every `--interval-ms`: how `bench/run` waits for a server to finish background work
//! (a checkpoint, a flush) without starting a client process per poll, whose own CPU would
//! land in the measurement it waits inside.

use std::time::{Duration, Instant};

use crate::server::Target;
use mysql::prelude::Queryable;
use serde_json::{Value, json};

#[derive(clap::Args)]
pub struct Args {
    /// The status variable (`SHOW GLOBAL STATUS LIKE ...`).
    #[arg(long)]
    name: String,
    /// Done once the value differs from this one.
    #[arg(long, conflicts_with = "equals", required_unless_present = "equals")]
    differs_from: Option<i64>,
    /// Done once the value equals this one.
    #[arg(long)]
    equals: Option<i64>,
    /// Seconds to wait before failing.
    #[arg(long, default_value_t = 600)]
    timeout_s: u64,
    /// Milliseconds between polls.
    #[arg(long, default_value_t = 50)]
    interval_ms: u64,
}

pub fn run(target: &Target, args: &Args) -> Result<Value, String> {
    let mut conn = target.connect_to(None)?;
    let started = Instant::now();
    let query = format!("SHOW GLOBAL STATUS LIKE '{}'", args.name);
    loop {
        let row: Option<(String, String)> = conn.query_first(&query).map_err(|e| format!("{query}: {e}"))?;
        let (_, value) = row.ok_or_else(|| format!("the server has no status variable {}", args.name))?;
        let value: i64 = value.parse().map_err(|e| format!("{}: {value:?} is not a number: {e}", args.name))?;
        let done = args.differs_from.map_or_else(|| Some(value) == args.equals, |from| value != from);
        if done {
            return Ok(json!({"value": value, "seconds": started.elapsed().as_secs_f64()}));
        }
        if started.elapsed() > Duration::from_secs(args.timeout_s) {
            return Err(format!("{} still {value} after {} s", args.name, args.timeout_s));
        }
        std::thread::sleep(Duration::from_millis(args.interval_ms));
    }
}
