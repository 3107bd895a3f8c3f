//! Notify: how soon a consumer sees a message after the producer's commit returned. A
//! producer inserts `--count` messages `--interval-ms` apart, each in its own autocommit
//! INSERT; a consumer on another connection reads the new ones. Both run in this process, so
//! one clock times both sides.
//!
//! Consumers (`--consumer`):
//! - `get-lock`: the program, as applications write it with MySQL: the producer wraps
//!   each INSERT in `GET_LOCK('messages', 10)` / `RELEASE_LOCK`, and the consumer loops on
//!   `GET_LOCK`, `SELECT ... WHERE id > last`, `RELEASE_LOCK`, polling as fast as it can.
//! - `commit-wait`: Quill's `WAIT_FOR_TABLE_COMMIT('messages', position, 10)`, then the same
//!   SELECT; no lock, no polling. A server without the function reports it not supported.
//!
//! Reports the wake latency (consumer first saw the row, minus the producer's INSERT
//! returning; 0 when the consumer saw it first) at p50, p99 and max, the same from before the
//! INSERT was sent, the producer's commit latency, and the consumer's statements per message
//! (its polling cost). Every sample goes in `series`. Check: the consumer saw every message,
//! once, in order.

use crate::report::{Better, Report, mean_us, quantile_us};
use crate::server::{Target, run_all};
use mysql::prelude::Queryable;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long the consumer waits for the run's last message before it gives up.
const CONSUMER_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Consumer {
    GetLock,
    CommitWait,
}

#[derive(clap::Args)]
pub struct Args {
    /// Messages the producer inserts.
    #[arg(long, default_value_t = 500)]
    count: u32,
    /// Milliseconds from the start of one INSERT to the start of the next.
    #[arg(long, default_value_t = 10)]
    interval_ms: u64,
    #[arg(long, value_enum)]
    consumer: Consumer,
}

/// When the producer sent message i and when its INSERT returned (index i - 1).
type Sent = Vec<Option<(Instant, Instant)>>;

pub fn run(target: &Target, args: &Args) -> Result<serde_json::Value, String> {
    assert!(args.count > 0, "count must be positive");
    let mut setup = target.connect_setup()?;
    run_all(&mut setup, &["DROP TABLE IF EXISTS messages", "CREATE TABLE messages (id INT PRIMARY KEY, message VARCHAR(20))"])?;
    let mut report = Report::default();
    if args.consumer == Consumer::CommitWait
        && let Err(e) = setup.query_drop("SELECT WAIT_FOR_TABLE_COMMIT('messages', 0, 0)")
    {
        for name in ["wake p50", "wake p99", "wake max", "from send p50", "from send p99", "consumer statements per message"] {
            report.missing(name, if name.starts_with("consumer") { "count" } else { "us" }, Better::Lower, format!("no WAIT_FOR_TABLE_COMMIT: {e}"));
        }
        return Ok(report.to_json());
    }
    let mut producer_conn = target.connect()?;
    let mut consumer_conn = target.connect()?;
    let sent: Mutex<Sent> = Mutex::new(vec![None; args.count as usize]);
    let producing = AtomicBool::new(true);
    let statements = AtomicU64::new(0);
    let (produced, consumed) = std::thread::scope(|scope| {
        let consumer = scope.spawn(|| consume(&mut consumer_conn, args, &producing, &statements));
        // The consumer is waiting (or polling) before the first message.
        std::thread::sleep(Duration::from_millis(100));
        let produced = produce(&mut producer_conn, args, &sent);
        producing.store(false, Ordering::Release);
        (produced, consumer.join().expect("consumer thread panicked"))
    });
    produced?;
    let seen = consumed?;
    let sent = sent.into_inner().expect("no poisoned lock");

    let ids: Vec<u32> = seen.iter().map(|(id, _)| *id).collect();
    let expected: Vec<u32> = (1..=args.count).collect();
    report.check("every message seen once, in order", ids == expected, format!("{} seen, {} sent", ids.len(), args.count));
    let mut wake = Vec::new();
    let mut from_send = Vec::new();
    let mut commit = Vec::new();
    for (id, at) in &seen {
        if let Some(Some((send, ack))) = sent.get(*id as usize - 1) {
            wake.push(at.saturating_duration_since(*ack));
            from_send.push(at.saturating_duration_since(*send));
            commit.push(ack.duration_since(*send));
        }
    }
    if wake.is_empty() {
        return Err("no message seen".into());
    }
    report.metric("wake p50", quantile_us(&wake, 0.5), "us", Better::Lower);
    report.metric("wake p99", quantile_us(&wake, 0.99), "us", Better::Lower);
    report.metric("wake max", quantile_us(&wake, 1.0), "us", Better::Lower);
    report.metric("from send p50", quantile_us(&from_send, 0.5), "us", Better::Lower);
    report.metric("from send p99", quantile_us(&from_send, 0.99), "us", Better::Lower);
    report.metric("producer commit mean", mean_us(&commit), "us", Better::Lower);
    report.metric("consumer statements per message", statements.load(Ordering::Acquire) as f64 / f64::from(args.count), "count", Better::Lower);
    report.series("wake", wake.iter().map(|d| d.as_secs_f64() * 1e6).collect());
    Ok(report.to_json())
}

fn produce(conn: &mut mysql::Conn, args: &Args, sent: &Mutex<Sent>) -> Result<(), String> {
    let start = Instant::now();
    let locks = args.consumer == Consumer::GetLock;
    for i in 1..=args.count {
        let due = start + Duration::from_millis(args.interval_ms) * (i - 1);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        if locks {
            let got: Option<i64> = conn.query_first("SELECT GET_LOCK('messages', 10)").map_err(|e| format!("producer GET_LOCK: {e}"))?;
            if got != Some(1) {
                return Err(format!("producer GET_LOCK answered {got:?}"));
            }
        }
        let send = Instant::now();
        conn.exec_drop("INSERT INTO messages VALUES (?, 'hi')", (i,)).map_err(|e| format!("producer INSERT: {e}"))?;
        let ack = Instant::now();
        sent.lock().expect("no poisoned lock")[i as usize - 1] = Some((send, ack));
        if locks {
            conn.query_drop("SELECT RELEASE_LOCK('messages')").map_err(|e| format!("producer RELEASE_LOCK: {e}"))?;
        }
    }
    Ok(())
}

/// Reads new messages until it has them all; answers each id with when it was first seen.
fn consume(conn: &mut mysql::Conn, args: &Args, producing: &AtomicBool, statements: &AtomicU64) -> Result<Vec<(u32, Instant)>, String> {
    let mut seen = Vec::with_capacity(args.count as usize);
    let mut last = 0_u32;
    let mut position: u64 = 0;
    let mut idle_since: Option<Instant> = None;
    while seen.len() < args.count as usize {
        match args.consumer {
            Consumer::GetLock => {
                let got: Option<i64> = conn.query_first("SELECT GET_LOCK('messages', 10)").map_err(|e| format!("consumer GET_LOCK: {e}"))?;
                if got != Some(1) {
                    return Err(format!("consumer GET_LOCK answered {got:?}"));
                }
            }
            Consumer::CommitWait => {
                let got: Option<Option<u64>> =
                    conn.exec_first("SELECT WAIT_FOR_TABLE_COMMIT('messages', ?, 10)", (position,)).map_err(|e| format!("consumer wait: {e}"))?;
                if let Some(Some(p)) = got {
                    position = p;
                }
            }
        }
        let rows: Vec<u32> = conn.exec("SELECT id FROM messages WHERE id > ? ORDER BY id", (last,)).map_err(|e| format!("consumer SELECT: {e}"))?;
        let now = Instant::now();
        statements.fetch_add(if args.consumer == Consumer::GetLock { 3 } else { 2 }, Ordering::Relaxed);
        if args.consumer == Consumer::GetLock {
            conn.query_drop("SELECT RELEASE_LOCK('messages')").map_err(|e| format!("consumer RELEASE_LOCK: {e}"))?;
        }
        if rows.is_empty() && !producing.load(Ordering::Acquire) {
            let since = *idle_since.get_or_insert(now);
            if now.duration_since(since) > CONSUMER_TIMEOUT {
                break;
            }
        } else {
            idle_since = None;
        }
        for id in rows {
            seen.push((id, now));
            last = id;
        }
    }
    Ok(seen)
}
