//! Measures one client's commit latency through the log alone (no SQL, no network), against
//! the raw write + fdatasync floor on the same disk:
//! `cargo run --release -p quill-log --example commit_latency -- DIR`.

use std::os::unix::fs::FileExt;
use std::sync::Arc;
use std::time::Instant;

use quill_log::{Change, FlushMode, Log, LogConfig};

const COMMITS: u32 = 2000;

fn main() {
    let dir = std::path::PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| "/tmp/quill-commit-latency".into()));
    let _ = std::fs::remove_dir_all(&dir);
    let (log, _) = Log::open::<std::io::Error>(Arc::new(quill_io::RealFs), &dir, LogConfig::default(), None, |_| Ok(())).expect("open log");
    let change = vec![Change::Insert { db: "app".into(), table: "demo".into(), key: vec![3; 17], row: vec![7; 40] }];
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    for round in 0..3 {
        let start = Instant::now();
        runtime.block_on(async {
            for i in 0..COMMITS {
                let at = log.append(u64::from(i), &change).expect("append");
                log.wait(at.end, FlushMode::AtCommit).await;
            }
        });
        println!("round {round}: {:.1} us per commit through the log", (start.elapsed() / COMMITS).as_secs_f64() * 1e6);
    }
    let file = std::fs::OpenOptions::new().create(true).truncate(true).write(true).open(dir.join("floor")).expect("floor file");
    file.write_all_at(&vec![0; COMMITS as usize * 512], 0).expect("preallocate");
    file.sync_all().expect("sync");
    let start = Instant::now();
    for i in 0..u64::from(COMMITS) {
        file.write_all_at(&[1; 100], i * 512).expect("write");
        file.sync_data().expect("fdatasync");
    }
    println!("floor: {:.1} us per write + fdatasync", (start.elapsed() / COMMITS).as_secs_f64() * 1e6);
}
