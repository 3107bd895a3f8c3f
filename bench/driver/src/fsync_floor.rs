//! The physical floor of a durable commit: the latency of one `write` of a small block into a
//! preallocated file followed by `fdatasync`, on the disk of the given directory.
//!
//! The file is written in full and synced once before timing starts, so each timed sync
//! writes data only (no block allocation, no size change): the same pattern as a commit log
//! with preallocated segments. The file is removed afterwards.

use crate::report::{Better, Report, mean_us, quantile_us};
use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    /// Directory on the disk to measure (a server's data directory).
    #[arg(long)]
    dir: PathBuf,
    /// Number of timed write + fdatasync pairs.
    #[arg(long, default_value_t = 1000)]
    count: usize,
    /// Bytes per write: one small commit record.
    #[arg(long, default_value_t = 512)]
    block_bytes: usize,
}

pub fn run(args: &Args) -> Result<serde_json::Value, String> {
    assert!(args.count > 0 && args.block_bytes > 0, "count and block size must be positive");
    let path = args.dir.join(format!("fsync-floor-{}.tmp", std::process::id()));
    let file = OpenOptions::new().create(true).truncate(true).read(true).write(true).open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let result = measure(&file, args);
    drop(file);
    std::fs::remove_file(&path).map_err(|e| format!("remove {}: {e}", path.display()))?;
    let samples = result?;
    let mut report = Report::default();
    report.metric("fdatasync median", quantile_us(&samples, 0.5), "us", Better::Lower);
    report.metric("fdatasync mean", mean_us(&samples), "us", Better::Lower);
    report.metric("fdatasync p99", quantile_us(&samples, 0.99), "us", Better::Lower);
    Ok(report.to_json())
}

fn measure(file: &std::fs::File, args: &Args) -> Result<Vec<std::time::Duration>, String> {
    let block = vec![0xA5_u8; args.block_bytes];
    let file_bytes = args.count * args.block_bytes;
    file.write_all_at(&vec![0_u8; file_bytes], 0).map_err(|e| format!("preallocate: {e}"))?;
    file.sync_all().map_err(|e| format!("fsync: {e}"))?;
    let mut samples = Vec::with_capacity(args.count);
    for i in 0..args.count {
        let start = Instant::now();
        file.write_all_at(&block, (i * args.block_bytes) as u64).map_err(|e| format!("write: {e}"))?;
        file.sync_data().map_err(|e| format!("fdatasync: {e}"))?;
        samples.push(start.elapsed());
    }
    Ok(samples)
}
