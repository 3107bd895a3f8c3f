//! `quill`: the server binary. `quill serve` listens for MySQL clients.
//!
//! Start-up: parse options ([`config`]), create the data directory, build the
//! shared [`quill_sql::Engine`], accept connections (one tokio task each, see
//! [`conn`]) until Ctrl-C or SIGTERM.

mod config;
mod conn;
mod metrics;
mod rsa_keys;
mod tls;

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use tokio::net::TcpListener;

/// The allocator: statements allocate and free many small values on several threads at
/// once, where glibc's malloc spent a fifth of the server's CPU (sysbench oltp_read_only,
/// 16 threads). mimalloc keeps per-thread free lists.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's settings for a server, applied through its environment variables (it reads
/// them as it starts, before `main`), and a user's own `MIMALLOC_*` values win:
/// - `ARENA_EAGER_COMMIT=0`: commit an arena's memory as it is used, so that purged pages
///   leave the resident set. With eager commit, a sysbench load into an 8 MiB pool left the
///   server at 350 MB resident for 30 MB of live heap; without it, about 80 MB.
/// - `PURGE_DELAY=100`: free pages go back to the kernel after 100 ms unused (mimalloc's
///   default is 1 s); throughput was the same in the same run.
const ALLOCATOR_ENVIRONMENT: [(&str, &str); 2] = [("MIMALLOC_ARENA_EAGER_COMMIT", "0"), ("MIMALLOC_PURGE_DELAY", "100")];
/// Set in the environment of the re-executed server, so that it runs once more at most.
const ALLOCATOR_SET_MARK: &str = "QUILL_ALLOCATOR_SET";

/// Runs the server again with [`ALLOCATOR_ENVIRONMENT`] (`exec`: the same process id, so
/// whoever started it still holds it), unless that was done. Returns only if `exec` failed,
/// and then the server goes on with mimalloc's defaults.
fn reexec_with_allocator_settings() {
    use std::os::unix::process::CommandExt;
    if std::env::var_os(ALLOCATOR_SET_MARK).is_some() {
        return;
    }
    let Ok(exe) = std::env::current_exe() else { return };
    let mut command = std::process::Command::new(exe);
    command.args(std::env::args_os().skip(1)).env(ALLOCATOR_SET_MARK, "1");
    for (name, value) in ALLOCATOR_ENVIRONMENT {
        if std::env::var_os(name).is_none() {
            command.env(name, value);
        }
    }
    let error = command.exec();
    tracing::warn!(error = %error, "could not apply the allocator's settings; running with mimalloc's defaults");
}

/// Stack of each runtime worker thread. Statements run on them, and the recursive walks of
/// an expression (binding, planning, evaluation) need stack in proportion to its depth,
/// which `quill_sql::parse::MAX_EXPRESSION_DEPTH` bounds; this leaves several times the
/// room the deepest allowed statement takes. Only the pages a thread touches are resident.
const WORKER_STACK_BYTES: usize = 16 << 20;
/// How long the listener waits after a failed accept (out of file descriptors, say) before
/// it tries again, so that it does not spin.
const ACCEPT_ERROR_BACKOFF: Duration = Duration::from_millis(100);

/// Lift the soft limit on open files to the hard limit, as mysqld does for
/// `open_files_limit`: every connection is a file descriptor.
fn raise_open_files_limit() {
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(limit) => tracing::debug!(limit, "open files limit"),
        Err(e) => tracing::warn!(error = %e, "could not raise the open files limit"),
    }
}

/// Runs a section that may block on the disk (`quill_storage::blocking`): on a worker of the
/// multi-threaded runtime through `block_in_place`, anywhere else as it is.
fn block_in_place(section: &mut dyn FnMut()) {
    match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(section),
        _ => section(),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("QUILL_LOG").unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .init();
    match args.first().map(String::as_str) {
        Some("serve") => {}
        Some("--version" | "version") => {
            println!("quill {}", quill_sql::SERVER_VERSION);
            return;
        }
        _ => {
            eprintln!("{}", config::USAGE);
            std::process::exit(2);
        }
    }
    let cfg = match config::parse(&args[1..]) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("quill: {e}");
            std::process::exit(2);
        }
    };
    reexec_with_allocator_settings();
    raise_open_files_limit();
    // A page fault on a worker thread hands the worker's other tasks to another thread first.
    quill_storage::blocking::set_hook(block_in_place);
    let runtime = tokio::runtime::Builder::new_multi_thread().thread_stack_size(WORKER_STACK_BYTES).enable_all().build().expect("tokio runtime");
    if let Err(e) = runtime.block_on(run(cfg)) {
        eprintln!("quill: {e}");
        std::process::exit(1);
    }
}

/// caching_sha2_password's key pair, or `None` (logged) when it cannot be had: then a
/// full authentication needs TLS.
fn load_rsa_keys(cfg: &config::Config) -> Option<std::sync::Arc<rsa_keys::RsaKeys>> {
    let value = |name: &str| cfg.globals.get(name).unwrap_or_default().to_owned();
    let generate = value("caching_sha2_password_auto_generate_rsa_keys") == "ON";
    let private_path = value("caching_sha2_password_private_key_path");
    let public_path = value("caching_sha2_password_public_key_path");
    match rsa_keys::RsaKeys::load(&cfg.datadir, &private_path, &public_path, generate) {
        Ok(keys) => Some(std::sync::Arc::new(keys)),
        Err(e) => {
            tracing::warn!(error = %e, "caching_sha2_password has no RSA key pair; a password it must check in full needs TLS");
            None
        }
    }
}

async fn run(cfg: config::Config) -> std::io::Result<()> {
    for warning in &cfg.warnings {
        tracing::warn!("{warning}");
    }
    let fresh = !cfg.datadir.exists();
    std::fs::create_dir_all(&cfg.datadir)?;
    if fresh {
        tracing::info!(datadir = %cfg.datadir.display(), "initialized a new data directory; account root@localhost has an empty password (set one with ALTER USER)");
    }
    let tls = match tls::server_config(&cfg.datadir) {
        Ok(c) => Some(c),
        Err(e) => {
            tracing::warn!(error = %e, "TLS is unavailable; clients can connect without it only");
            None
        }
    };
    let rsa = load_rsa_keys(&cfg);
    let started = std::time::Instant::now();
    let fs: std::sync::Arc<dyn quill_io::Fs> = std::sync::Arc::new(quill_io::RealFs);
    let (engine, opened) = quill_sql::durability::open(cfg.globals, std::sync::Arc::clone(&fs), &cfg.datadir).map_err(std::io::Error::other)?;
    // Accounts from the grant tables the log and checkpoint restored.
    engine.reload_acl();
    if let Some(keys) = &rsa {
        let _ = engine.rsa_public_key_pem.set(keys.public_key_pem().to_owned());
    }
    if let quill_log::LogEnd::Cut(reason) = &opened.log.end {
        let preserved = opened.log.preserved.as_ref().map_or_else(String::new, |(path, bytes)| format!("{} ({bytes} bytes)", path.display()));
        tracing::warn!(
            lsn = opened.log.end_lsn,
            %reason,
            preserved,
            "commit log: cut at the first damaged record; in flush mode 1 nothing after it was acknowledged; the bytes cut are preserved"
        );
    }
    let (checkpoint_lsn, checkpoint_rows) = opened.checkpoint.unwrap_or((0, 0));
    tracing::info!(
        checkpoint_lsn,
        checkpoint_rows,
        log_records = opened.log.records,
        from_lsn = opened.log.start_lsn,
        to_lsn = opened.log.end_lsn,
        replay_threads = opened.replay_threads,
        redo_waiting = opened.redo_pending,
        checkpoint_ms = opened.checkpoint_time.as_millis() as u64,
        replay_ms = opened.replay_time.as_millis() as u64,
        elapsed_ms = started.elapsed().as_millis() as u64,
        "recovery: loaded the checkpoint and replayed the commit log"
    );
    conn::dump::BinaryLogView::attach(&engine);
    quill_replication::semisync::SemiSync::attach(&engine);
    quill_replication::replica::Replica::attach(&engine, std::sync::Arc::clone(&fs), cfg.datadir.clone()).await?;
    let checkpointer = quill_sql::checkpoint::Checkpointer::start(engine.clone(), fs, cfg.datadir.clone(), opened.log.start_lsn);
    let _metrics = match cfg.metrics_port {
        Some(port) => {
            let listener = TcpListener::bind((cfg.bind.as_str(), port)).await?;
            tracing::info!(address = %listener.local_addr()?, "metrics: serving GET /metrics");
            Some(AbortOnDrop(tokio::spawn(metrics::serve(listener, engine.clone()))))
        }
        None => None,
    };
    let listener = TcpListener::bind((cfg.bind.as_str(), cfg.port)).await?;
    tracing::info!(address = %listener.local_addr()?, version = quill_sql::SERVER_VERSION, "ready for connections");
    let next_id = AtomicU32::new(1);
    let handshakes = std::sync::Arc::new(conn::Handshakes::default());
    let shutdown = shutdown_signal();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let stream = match accepted {
                    Ok((stream, _)) => stream,
                    Err(e) => {
                        tracing::warn!(error = %e, "accepting a connection failed; trying again shortly");
                        tokio::time::sleep(ACCEPT_ERROR_BACKOFF).await;
                        continue;
                    }
                };
                let id = next_id.fetch_add(1, Ordering::Relaxed);
                let engine = engine.clone();
                tokio::spawn(conn::serve(stream, engine, id, tls.clone(), rsa.clone(), handshakes.clone()));
            }
            () = &mut shutdown => {
                shut_down(&engine, checkpointer).await;
                // A statement that never reached a point where it checks for KILL would keep
                // the runtime from stopping; everything durable is written by now.
                std::process::exit(0);
            }
        }
    }
}

/// How long shutdown waits for killed connections to close before it stops anyway.
const SHUTDOWN_CONNECTIONS_WAIT: Duration = Duration::from_secs(10);
/// How often shutdown looks whether the connections have closed.
const SHUTDOWN_POLL: Duration = Duration::from_millis(20);

/// SIGTERM or Ctrl-C: every connection is killed (running statements stop, transactions
/// roll back) and given [`SHUTDOWN_CONNECTIONS_WAIT`] to close; then a checkpoint in
/// progress finishes and the log writes and syncs whatever is pending (flush modes 0 and 2).
async fn shut_down(engine: &quill_sql::Engine, checkpointer: quill_sql::checkpoint::Checkpointer) {
    let connections = engine.kill_every_connection();
    tracing::info!(connections, "shutting down: closing every connection");
    let deadline = std::time::Instant::now() + SHUTDOWN_CONNECTIONS_WAIT;
    while engine.connections_open() > 0 && std::time::Instant::now() < deadline {
        tokio::time::sleep(SHUTDOWN_POLL).await;
    }
    let still_open = engine.connections_open();
    if still_open > 0 {
        tracing::warn!(still_open, "shutting down with connections whose statements did not stop in time");
    }
    drop(checkpointer);
    if let Some(log) = engine.log.get() {
        log.shutdown();
    }
    tracing::info!("shut down");
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("SIGTERM handler");
    tokio::select! {
        _ = ctrl_c => {}
        _ = term.recv() => {}
    }
}

/// Aborts the task when dropped (the metrics endpoint stops with the server).
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
