//! The metrics endpoint: `--metrics-port N` (off by default) serves `GET /metrics` in
//! Prometheus's text exposition format 0.0.4 on the `--bind` address (`docs/metrics.md`).
//!
//! - Every `SHOW GLOBAL STATUS` counter with a numeric value, named as mysqld_exporter names
//!   them (`mysql_global_status_<name in lower case>`), so its dashboards read Quill's.
//! - Three histograms: `quill_commit_latency_seconds` (a commit's start until it is durable and
//!   acknowledged), `quill_log_group_commit_records` (records per group the log writes with
//!   one sync) and `quill_row_lock_wait_seconds` (each row lock wait).
//!
//! The HTTP side is the least that Prometheus's scraper needs, written here rather than taken
//! from an HTTP library: one request per connection, a request head of at most
//! [`REQUEST_HEAD_BYTES_MAX`] read within [`REQUEST_HEAD_TIMEOUT`] (an idle socket is closed
//! then), the answer written within [`REQUEST_TIMEOUT`], `GET /metrics` (with or without a
//! query string) answered 200 with `Connection: close`, any other path 404, any other method
//! 405. At most [`CONNECTIONS_MAX`] connections are served at once, each bounded by the
//! timeout; one more is closed at once.
//!
//! Where it sits: in `server`, beside the MySQL listener; it reads the engine's counters.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use quill_log::histogram::Snapshot;

use quill_sql::Engine;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The largest request head read; a longer one is answered 431 and closed.
pub const REQUEST_HEAD_BYTES_MAX: usize = 8192;
/// How long a connection may take to send its request and take the answer.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a connection may stay open without sending a whole request head: an idle
/// socket gives its slot back this soon, so idle sockets cannot keep a scrape out.
pub const REQUEST_HEAD_TIMEOUT: Duration = Duration::from_secs(1);
/// Connections served at once, at most.
pub const CONNECTIONS_MAX: usize = 32;

/// Serves `listener` until the task is dropped (its connections' tasks end within
/// [`REQUEST_TIMEOUT`]).
pub async fn serve(listener: TcpListener, engine: Arc<Engine>) {
    let slots = Arc::new(tokio::sync::Semaphore::new(CONNECTIONS_MAX));
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else { continue };
        let engine = Arc::clone(&engine);
        tokio::spawn(async move {
            if tokio::time::timeout(REQUEST_TIMEOUT, answer(stream, &engine)).await.is_err() {
                tracing::debug!("metrics: a connection took too long");
            }
            drop(slot);
        });
    }
}

async fn answer(mut stream: TcpStream, engine: &Engine) -> std::io::Result<()> {
    let mut head = Vec::with_capacity(512);
    let mut buf = [0_u8; 1024];
    let head_deadline = tokio::time::Instant::now() + REQUEST_HEAD_TIMEOUT;
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && !head.windows(2).any(|w| w == b"\n\n") {
        let Ok(read) = tokio::time::timeout_at(head_deadline, stream.read(&mut buf)).await else {
            tracing::debug!("metrics: closed a connection that sent no request");
            return Ok(());
        };
        let n = read?;
        if n == 0 {
            return Ok(());
        }
        head.extend_from_slice(&buf[..n]);
        if head.len() > REQUEST_HEAD_BYTES_MAX {
            return respond(&mut stream, "431 Request Header Fields Too Large", "").await;
        }
    }
    let line = String::from_utf8_lossy(head.split(|&b| b == b'\n').next().unwrap_or_default()).into_owned();
    let mut parts = line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    match (method, path) {
        ("GET", "/metrics") => respond(&mut stream, "200 OK", &render(engine)).await,
        ("GET", _) => respond(&mut stream, "404 Not Found", "only /metrics is served here\n").await,
        _ => respond(&mut stream, "405 Method Not Allowed", "").await,
    }
}

async fn respond(stream: &mut TcpStream, status: &str, body: &str) -> std::io::Result<()> {
    let head =
        format!("HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len());
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;
    stream.shutdown().await
}

/// The exposition text.
#[must_use]
pub fn render(engine: &Engine) -> String {
    let mut out = String::with_capacity(8192);
    let mut status = engine.global_status();
    status.sort_by(|a, b| a.0.cmp(b.0));
    for (name, value) in status {
        let Ok(number) = value.parse::<f64>() else { continue };
        let metric = format!("mysql_global_status_{}", name.to_ascii_lowercase());
        let _ = writeln!(out, "# HELP {metric} Generic metric from SHOW GLOBAL STATUS.\n# TYPE {metric} untyped\n{metric} {number}");
    }
    let d = &engine.status.distributions;
    histogram(&mut out, "quill_commit_latency_seconds", "From a commit's start until it is durable and acknowledged.", &d.commit_latency_us.snapshot(), true);
    if let Some(log) = engine.log.get() {
        histogram(
            &mut out,
            "quill_log_group_commit_records",
            "Commit records per group the log wrote with one sync.",
            &log.stats().group_records.snapshot(),
            false,
        );
    }
    histogram(&mut out, "quill_row_lock_wait_seconds", "Each row lock wait, granted or not.", &d.row_lock_wait_us.snapshot(), true);
    out
}

/// One histogram; with `micros`, its bounds and sum (microseconds) are written in seconds.
fn histogram(out: &mut String, name: &str, help: &str, h: &Snapshot, micros: bool) {
    let number = |v: u64| if micros { seconds(v) } else { v.to_string() };
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
    for (bound, count) in &h.cumulative {
        let _ = writeln!(out, "{name}_bucket{{le=\"{}\"}} {count}", number(*bound));
    }
    let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {}\n{name}_sum {}\n{name}_count {}", h.count, number(h.sum), h.count);
}

/// Microseconds as exact decimal seconds: 50 -> `0.00005`, 2000000 -> `2`.
fn seconds(us: u64) -> String {
    let text = format!("{}.{:06}", us / 1_000_000, us % 1_000_000);
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}
