//! The replica: follows a source's binary log and applies its transactions
//! (`docs/replication.md`).
//!
//! One task per running replica connects to the source ([`connection`]: handshake, auth, TLS,
//! `COM_BINLOG_DUMP_GTID` or `COM_BINLOG_DUMP`; the events decoded by `mysql_common`),
//! receives the events into a bounded relay, and hands them to the applier ([`apply`]), which
//! applies each transaction whole, in parallel where transactions touch different rows,
//! committing in source order: row events become prepared statements on the primary key
//! ([`rows`]), DDL runs as it came under its source's `sql_mode` and time zone, and the
//! transaction's GTID is written to `mysql.gtid_executed` in the same transaction. So the set
//! of applied GTIDs is durable with the rows (the commit log holds both in one record) and a
//! kill -9 of either side neither loses nor repeats a transaction: the replica reconnects
//! asking for what `mysql.gtid_executed` lacks. A transaction cut off by a lost connection is
//! rolled back, never half applied. Reconnects back off from 0.1 s up to
//! `SOURCE_CONNECT_RETRY`.
//!
//! With `rpl_semi_sync_replica_enabled`, a source that has semi-sync marks the last event of
//! each transaction, and the replica acknowledges it as soon as it is received, before it
//! applies it (MySQL's replica acknowledges once the event is in its relay log).
//!
//! The applier's commits are logged as replicated (`Session::replica_applier`): they take no
//! sequence number of this server.
//!
//! Where it sits: above `sql` (it runs statements in a `Session`), beside `binlog`; the server
//! attaches it to the engine (`Engine::replica`) for the SQL statements that drive it.
//!
//! Not yet: a relay log on disk, `SOURCE_LOG_FILE` / `SOURCE_LOG_POS` beyond
//! the first connection (later ones go by GTID), a DDL's GTID atomic with it.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use mysql_common::binlog::EventStreamReader;
use mysql_common::binlog::consts::BinlogVersion;
use mysql_common::binlog::consts::EventType;
use mysql_common::binlog::events::{Event, EventData, TransactionPayloadEvent};
use parking_lot::Mutex;
use quill_io::Fs;
use quill_protocol::command::{BinlogDump, RegisterReplica};
use quill_sql::error::{Result as SqlResult, SqlError, codes};
use quill_sql::replica_control::{AppliedTransaction, ReplicaControl, WorkerStatus};
use quill_sql::replica_statements::SourceOptions;
use quill_sql::{Engine, Outcome, Session};
use quill_storage::Value;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, watch};

use crate::gtid::{GtidSet, add_gtid, add_interval, gtid_text, uuid_text};
use connection::{ConnError, ConnectOptions, Connection};

mod apply;
mod connection;
mod rows;

/// The file, in the data directory, that keeps the source's settings across restarts.
pub const CONFIG_FILE: &str = "replica.info";
/// The shortest wait before reconnecting; each failure doubles it up to `connect_retry`.
pub const RECONNECT_WAIT_MIN: Duration = Duration::from_millis(100);
/// Events received (and acknowledged, under semi-sync) but not yet read into transactions for
/// the applier's workers, at most: the replica's relay, kept in memory (MySQL keeps it in relay
/// log files). When it is full the receiver waits, and so does the source's dump. Past it, at
/// most `apply::JOBS_QUEUED_MAX` transactions wait for a worker.
pub const RELAY_EVENTS_MAX: usize = 8192;
/// Bytes of events the relay holds, at most (an event larger than this passes alone).
pub const RELAY_BYTES_MAX: usize = 64 << 20;
/// Table maps the applier keeps, at most; past it they are forgotten at the next transaction,
/// which maps its tables again before its rows.
pub const TABLE_MAPS_MAX: usize = 65_536;
/// The applier's own session settings, between the DDL statements it runs under their
/// source's. Row values arrive as the source stored them (TIMESTAMPs in UTC): strict, so a
/// value this server's column cannot hold stops the applier rather than being cut, but with
/// zero dates allowed, which a source may have stored.
const APPLIER_SQL_MODE: &str = "STRICT_TRANS_TABLES,NO_ENGINE_SUBSTITUTION";
const APPLIER_TIME_ZONE: &str = "+00:00";
/// `mysql.gtid_executed`, made when the applier first starts.
const GTID_TABLE_DEFINITION: &str = "CREATE TABLE IF NOT EXISTS mysql.gtid_executed (source_uuid CHAR(36) NOT NULL, interval_start BIGINT NOT NULL, \
     interval_end BIGINT NOT NULL, PRIMARY KEY (source_uuid, interval_start))";
/// The connection id the applier's session reports.
const APPLIER_CONNECTION_ID: u32 = u32::MAX - 1;

/// Where to replicate from (`CHANGE REPLICATION SOURCE TO`), kept in [`CONFIG_FILE`].
#[derive(Debug, Clone, PartialEq)]
struct Config {
    host: String,
    port: u16,
    user: String,
    password: String,
    auto_position: bool,
    log_file: String,
    log_pos: u64,
    ssl: bool,
    get_public_key: bool,
    connect_retry: u64,
    heartbeat_period: f64,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            host: String::new(),
            port: 3306,
            user: String::new(),
            password: String::new(),
            auto_position: false,
            log_file: String::new(),
            log_pos: 4,
            ssl: false,
            get_public_key: false,
            connect_retry: 60,
            heartbeat_period: 30.0,
        }
    }
}

impl Config {
    fn encode(&self) -> String {
        format!(
            "host={}\nport={}\nuser={}\npassword={}\nauto_position={}\nlog_file={}\nlog_pos={}\nssl={}\nget_public_key={}\nconnect_retry={}\nheartbeat_period={}\n",
            self.host,
            self.port,
            self.user,
            self.password,
            u8::from(self.auto_position),
            self.log_file,
            self.log_pos,
            u8::from(self.ssl),
            u8::from(self.get_public_key),
            self.connect_retry,
            self.heartbeat_period
        )
    }

    fn decode(text: &str) -> Config {
        let mut c = Config::default();
        for line in text.lines() {
            let Some((k, v)) = line.split_once('=') else { continue };
            match k {
                "host" => c.host = v.to_owned(),
                "port" => c.port = v.parse().unwrap_or(3306),
                "user" => c.user = v.to_owned(),
                "password" => c.password = v.to_owned(),
                "auto_position" => c.auto_position = v == "1",
                "log_file" => c.log_file = v.to_owned(),
                "log_pos" => c.log_pos = v.parse().unwrap_or(4),
                "ssl" => c.ssl = v == "1",
                "get_public_key" => c.get_public_key = v == "1",
                "connect_retry" => c.connect_retry = v.parse().unwrap_or(60),
                "heartbeat_period" => c.heartbeat_period = v.parse().unwrap_or(30.0),
                _ => {}
            }
        }
        c
    }
}

/// What SHOW REPLICA STATUS reports.
#[derive(Debug, Default, Clone)]
struct Status {
    io_state: &'static str,
    io_running: &'static str,
    sql_running: bool,
    source_log_file: String,
    read_source_log_pos: u64,
    exec_source_log_pos: u64,
    last_io_error: Option<(u32, String)>,
    last_sql_error: Option<(u32, String)>,
    retrieved: GtidSet,
    executed: GtidSet,
    /// Each applier worker's last transaction applied, and the one it is applying.
    workers: Vec<WorkerSlot>,
    /// When the SQL thread's last error happened (microseconds since the epoch).
    last_sql_error_us: u64,
    seconds_behind: Option<u64>,
    /// The I/O thread runs with semi-sync (`Rpl_semi_sync_replica_status`).
    semi_sync: bool,
    /// The source's `server_id` and `server_uuid`, as it said at the last connection.
    source_server_id: u64,
    source_uuid: String,
}

/// One applier worker, as `replication_applier_status_by_worker` shows it.
#[derive(Debug, Default, Clone)]
struct WorkerSlot {
    last_applied: Option<AppliedTransaction>,
    applying: Option<AppliedTransaction>,
}

struct Running {
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

struct Inner {
    engine: Arc<Engine>,
    fs: Arc<dyn Fs>,
    datadir: PathBuf,
    config: Mutex<Option<Config>>,
    status: Mutex<Status>,
    running: Mutex<Option<Running>>,
    runtime: tokio::runtime::Handle,
}

/// The replica of one server (one channel, as MySQL's default).
pub struct Replica {
    inner: Arc<Inner>,
}

impl Replica {
    /// Attaches the replica to `engine`, reading its settings from `datadir`. A configured
    /// replica starts with the server, unless `--skip-replica-start`.
    ///
    /// # Errors
    /// I/O errors reading the settings.
    pub async fn attach(engine: &Arc<Engine>, fs: Arc<dyn Fs>, datadir: PathBuf) -> std::io::Result<()> {
        let path = datadir.join(CONFIG_FILE);
        let config = if fs.exists(&path) { Some(Config::decode(&String::from_utf8_lossy(&fs.open(&path, false)?.read_all()?))) } else { None };
        let inner = Inner {
            engine: Arc::clone(engine),
            fs,
            datadir,
            config: Mutex::new(config),
            status: Mutex::new(Status { io_running: "No", ..Status::default() }),
            running: Mutex::new(None),
            runtime: tokio::runtime::Handle::current(),
        };
        if engine.catalog().table("mysql", "gtid_executed").is_ok() {
            let mut session = Session::new(Arc::clone(engine), APPLIER_CONNECTION_ID, "system user", "localhost");
            inner.status.lock().executed = executed_set(&mut session).await.map_err(|e| std::io::Error::other(e.message))?;
        }
        let replica = Arc::new(Replica { inner: Arc::new(inner) });
        let skip = engine.global("skip_replica_start").is_some_and(|v| v == "ON" || v == "1");
        if !skip && replica.inner.config.lock().as_ref().is_some_and(|c| !c.host.is_empty()) {
            // As MySQL: a configured replica starts with the server.
            if let Err(e) = replica.start() {
                tracing::warn!(error = %e.message, "replica: not started");
            }
        }
        let _ = engine.replica.set(replica as Arc<dyn ReplicaControl>);
        Ok(())
    }
}

/// Applies `events`, a source's binary log as a dump sends it (decoded, from a
/// FORMAT_DESCRIPTION on), to `engine` as the replica's applier does, with no connection:
/// the crash simulator's seam (`crates/sim`). The GTIDs `mysql.gtid_executed` already holds
/// are skipped, as a dump by GTID would not send them. Returns once every transaction is
/// applied, or with the error that stopped the applier.
///
/// # Errors
/// The applier stopped: the error number and message `SHOW REPLICA STATUS` would show.
pub async fn apply_events(engine: &Arc<Engine>, fs: Arc<dyn Fs>, datadir: PathBuf, events: Vec<Event>) -> Result<(), (u32, String)> {
    let inner = Arc::new(Inner {
        engine: Arc::clone(engine),
        fs,
        datadir,
        config: Mutex::new(None),
        status: Mutex::new(Status { io_running: "No", ..Status::default() }),
        running: Mutex::new(None),
        runtime: tokio::runtime::Handle::current(),
    });
    let mut session = Session::new(Arc::clone(engine), APPLIER_CONNECTION_ID, "system user", "localhost");
    session.replica_applier = true;
    let set = async {
        exec(&mut session, GTID_TABLE_DEFINITION).await?;
        executed_set(&mut session).await
    };
    let executed = set.await.map_err(|e| (u32::from(e.code), e.message));
    session.close();
    let executed = executed?;
    let executed = Arc::new(Mutex::new(executed));
    let (sender, relayed) = mpsc::channel(RELAY_EVENTS_MAX);
    let relay = Relay { events: sender, bytes: Arc::new(Semaphore::new(RELAY_BYTES_MAX)) };
    let send = async move {
        for event in events {
            if relay.send(event).await.is_err() {
                break;
            }
        }
    };
    let ((), stop) = tokio::join!(send, apply::apply(&inner, relayed, &executed));
    match stop {
        Some(Stop::Sql(code, message) | Stop::Io(code, message)) => Err((code, message)),
        Some(Stop::Asked) | None => Ok(()),
    }
}

fn running_error() -> SqlError {
    SqlError::new(
        codes::ER_SLAVE_CHANNEL_IO_THREAD_MUST_STOP,
        "This operation cannot be performed with a running replica io thread; run STOP REPLICA IO_THREAD FOR CHANNEL '' first.",
    )
}

impl ReplicaControl for Replica {
    fn change_source(&self, options: SourceOptions) -> SqlResult<()> {
        let inner = &self.inner;
        if inner.running.lock().as_ref().is_some_and(|r| !r.task.is_finished()) {
            return Err(running_error());
        }
        let mut config = inner.config.lock();
        let mut next = config.clone().unwrap_or_default();
        let moved = options.host.is_some() || options.port.is_some();
        if let Some(v) = options.host {
            next.host = v;
        }
        if let Some(v) = options.port {
            next.port = v;
        }
        if let Some(v) = options.user {
            next.user = v;
        }
        if let Some(v) = options.password {
            next.password = v;
        }
        if let Some(v) = options.auto_position {
            next.auto_position = v;
        }
        if let Some(v) = options.ssl {
            next.ssl = v;
        }
        if let Some(v) = options.get_public_key {
            next.get_public_key = v;
        }
        if let Some(v) = options.connect_retry {
            next.connect_retry = v;
        }
        if let Some(v) = options.heartbeat_period {
            next.heartbeat_period = v;
        }
        if options.log_file.is_some() || options.log_pos.is_some() {
            if next.auto_position && options.auto_position != Some(false) {
                return Err(SqlError::new(
                    codes::ER_AUTO_POSITION_REQUIRES_GTID_MODE_NOT_OFF,
                    "Parameters SOURCE_LOG_FILE, SOURCE_LOG_POS, RELAY_LOG_FILE and RELAY_LOG_POS cannot be set when SOURCE_AUTO_POSITION is active.",
                ));
            }
            next.log_file = options.log_file.unwrap_or_default();
            next.log_pos = options.log_pos.unwrap_or(4);
        } else if moved {
            // A new source: from its first file, as MySQL does.
            next.log_file = String::new();
            next.log_pos = 4;
        }
        quill_io::replace_file(inner.fs.as_ref(), &inner.datadir.join(CONFIG_FILE), next.encode().as_bytes())
            .map_err(|e| SqlError::new(codes::ER_MASTER_INFO, format!("Could not initialize source info structure; {e}")))?;
        *config = Some(next);
        Ok(())
    }

    fn start(&self) -> SqlResult<bool> {
        let inner = &self.inner;
        let Some(config) = inner.config.lock().clone().filter(|c| !c.host.is_empty()) else {
            return Err(SqlError::new(codes::ER_BAD_SLAVE, "The server is not configured as replica; fix in config file or with CHANGE REPLICATION SOURCE TO"));
        };
        let mut running = inner.running.lock();
        if running.as_ref().is_some_and(|r| !r.task.is_finished()) {
            return Ok(false);
        }
        let (stop, stopped) = watch::channel(false);
        {
            let mut status = inner.status.lock();
            status.io_running = "Connecting";
            status.sql_running = true;
            status.last_sql_error = None;
        }
        let task = inner.runtime.spawn(run(Arc::clone(inner), config, stopped));
        *running = Some(Running { stop, task });
        Ok(true)
    }

    fn stop(&self) -> SqlResult<bool> {
        let Some(running) = self.inner.running.lock().take() else { return Ok(false) };
        let was_running = !running.task.is_finished();
        let _ = running.stop.send(true);
        // The task ends at its next event or wait; a transaction being applied rolls back.
        tokio::task::block_in_place(|| self.inner.runtime.block_on(async { tokio::time::timeout(Duration::from_secs(30), running.task).await })).ok();
        let mut status = self.inner.status.lock();
        status.io_running = "No";
        status.sql_running = false;
        status.io_state = "";
        Ok(was_running)
    }

    fn reset(&self, all: bool) -> SqlResult<()> {
        let inner = &self.inner;
        if inner.running.lock().as_ref().is_some_and(|r| !r.task.is_finished()) {
            return Err(SqlError::new(
                codes::ER_SLAVE_CHANNEL_MUST_STOP,
                "This operation cannot be performed with running replication threads; run STOP REPLICA FOR CHANNEL '' first",
            ));
        }
        let mut config = inner.config.lock();
        if all {
            let path = inner.datadir.join(CONFIG_FILE);
            if inner.fs.exists(&path) {
                inner.fs.remove(&path).map_err(|e| SqlError::new(codes::ER_MASTER_INFO, e.to_string()))?;
            }
            *config = None;
        } else if let Some(c) = config.as_mut() {
            c.log_file = String::new();
            c.log_pos = 4;
            quill_io::replace_file(inner.fs.as_ref(), &inner.datadir.join(CONFIG_FILE), c.encode().as_bytes())
                .map_err(|e| SqlError::new(codes::ER_MASTER_INFO, e.to_string()))?;
        }
        let mut status = inner.status.lock();
        *status = Status { io_running: "No", executed: status.executed.clone(), ..Status::default() };
        Ok(())
    }

    fn executed(&self) -> String {
        gtid_text(&self.inner.status.lock().executed)
    }

    fn status(&self) -> Option<Vec<(&'static str, Value)>> {
        let config = self.inner.config.lock().clone()?;
        let s = self.inner.status.lock().clone();
        let text = |v: &str| Value::Str(v.to_owned());
        let error = |e: &Option<(u32, String)>| (Value::UInt(u64::from(e.as_ref().map_or(0, |e| e.0))), text(e.as_ref().map_or("", |e| &e.1)));
        let (io_errno, io_error) = error(&s.last_io_error);
        let (sql_errno, sql_error) = error(&s.last_sql_error);
        let yes_no = |b: bool| text(if b { "Yes" } else { "No" });
        // The newest of the workers' last applied transactions.
        let last_applied = s.workers.iter().filter_map(|w| w.last_applied.as_ref()).max_by_key(|a| a.end_apply_us);
        Some(vec![
            ("Replica_IO_State", text(s.io_state)),
            ("Source_Host", text(&config.host)),
            ("Source_User", text(&config.user)),
            ("Source_Port", Value::UInt(u64::from(config.port))),
            ("Connect_Retry", Value::UInt(config.connect_retry)),
            ("Source_Log_File", text(&s.source_log_file)),
            ("Read_Source_Log_Pos", Value::UInt(s.read_source_log_pos)),
            ("Relay_Log_File", text("")),
            ("Relay_Log_Pos", Value::UInt(0)),
            ("Relay_Source_Log_File", text(&s.source_log_file)),
            ("Replica_IO_Running", text(s.io_running)),
            ("Replica_SQL_Running", yes_no(s.sql_running)),
            ("Last_Errno", sql_errno.clone()),
            ("Last_Error", sql_error.clone()),
            ("Exec_Source_Log_Pos", Value::UInt(s.exec_source_log_pos)),
            ("Seconds_Behind_Source", s.seconds_behind.map_or(Value::Null, Value::UInt)),
            ("Last_IO_Errno", io_errno),
            ("Last_IO_Error", io_error),
            ("Last_SQL_Errno", sql_errno),
            ("Last_SQL_Error", sql_error),
            ("Source_Server_Id", Value::UInt(s.source_server_id)),
            ("Source_UUID", text(&s.source_uuid)),
            ("Source_SSL_Allowed", yes_no(config.ssl)),
            ("Retrieved_Gtid_Set", text(&gtid_text(&s.retrieved))),
            ("Executed_Gtid_Set", text(&gtid_text(&s.executed))),
            ("Auto_Position", Value::UInt(u64::from(config.auto_position))),
            ("Get_Source_public_key", Value::UInt(u64::from(config.get_public_key))),
            ("Last_Applied_Original_Commit_Us", last_applied.map_or(Value::Null, |a| Value::UInt(a.original_commit_us))),
            ("Last_Applied_End_Apply_Us", last_applied.map_or(Value::Null, |a| Value::UInt(a.end_apply_us))),
        ])
    }

    fn workers(&self) -> Vec<WorkerStatus> {
        if self.inner.config.lock().is_none() {
            return Vec::new();
        }
        let s = self.inner.status.lock();
        let error = s.last_sql_error.clone().map(|(code, message)| (code, message, s.last_sql_error_us));
        // Before the applier first started: one idle worker.
        let slots = if s.workers.is_empty() { vec![WorkerSlot::default()] } else { s.workers.clone() };
        slots
            .into_iter()
            .zip(1..)
            .map(|(slot, worker_id)| WorkerStatus {
                worker_id,
                running: s.sql_running,
                last_error: error.clone(),
                last_applied: slot.last_applied,
                applying: slot.applying,
            })
            .collect()
    }

    fn status_counters(&self) -> Vec<(&'static str, String)> {
        let on = if self.inner.status.lock().semi_sync { "ON" } else { "OFF" };
        vec![("Rpl_semi_sync_replica_status", on.to_owned()), ("Rpl_semi_sync_slave_status", on.to_owned())]
    }
}

/// Why the replica task stopped going on.
enum Stop {
    /// STOP REPLICA.
    Asked,
    /// The source connection failed: reconnect.
    Io(u32, String),
    /// A transaction did not apply: the SQL thread stops.
    Sql(u32, String),
}

fn now_us() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_micros() as u64)
}

/// The replica task: connect, stream, apply; reconnect on connection errors with backoff.
async fn run(inner: Arc<Inner>, config: Config, mut stopped: watch::Receiver<bool>) {
    let mut session = Session::new(Arc::clone(&inner.engine), APPLIER_CONNECTION_ID, "system user", "localhost");
    session.replica_applier = true;
    session.answers_before_durable = true;
    session.client_found_rows = true;
    let setup = async {
        exec(&mut session, &format!("SET SESSION time_zone = '{APPLIER_TIME_ZONE}', sql_mode = '{APPLIER_SQL_MODE}'")).await?;
        exec(&mut session, "SET SESSION foreign_key_checks = 0").await?;
        exec(&mut session, GTID_TABLE_DEFINITION).await?;
        executed_set(&mut session).await
    };
    let executed = match setup.await {
        Ok(set) => set,
        Err(e) => {
            let mut status = inner.status.lock();
            status.last_sql_error = Some((u32::from(e.code), e.message.clone()));
            status.sql_running = false;
            status.io_running = "No";
            return;
        }
    };
    inner.status.lock().executed = executed.clone();
    // What `mysql.gtid_executed` holds, as the applier's workers commit to it.
    let executed = Arc::new(Mutex::new(executed));
    let mut wait = RECONNECT_WAIT_MIN;
    let mut first = true;
    loop {
        let outcome = tokio::select! {
            r = stream(&inner, &config, &executed, first) => r,
            _ = stopped.changed() => Stop::Asked,
        };
        // Whatever was half applied goes.
        let _ = session.run("ROLLBACK").await;
        session.replica_origin = None;
        match outcome {
            Stop::Asked => return,
            Stop::Sql(code, message) => {
                tracing::error!(code, %message, "replica: a transaction did not apply; the replica stopped");
                let mut status = inner.status.lock();
                status.last_sql_error = Some((code, message));
                status.last_sql_error_us = now_us();
                status.sql_running = false;
                status.io_running = "No";
                return;
            }
            Stop::Io(code, message) => {
                tracing::warn!(code, %message, wait_ms = wait.as_millis() as u64, "replica: the source connection failed; reconnecting");
                {
                    let mut status = inner.status.lock();
                    status.last_io_error = Some((code, message));
                    status.io_running = "Connecting";
                    status.io_state = "Waiting to reconnect after a failed source event read";
                }
                if (code == 1236 && !executed.lock().is_empty()) || code == 1593 {
                    // The source cannot serve what the replica needs, or is this very server:
                    // as MySQL, the I/O thread stops.
                    inner.status.lock().io_running = "No";
                    return;
                }
                first = first && code != 0;
                tokio::select! {
                    () = tokio::time::sleep(wait) => {}
                    _ = stopped.changed() => return,
                }
                wait = (wait * 2).min(Duration::from_secs(config.connect_retry.max(1)));
            }
        }
    }
}

async fn exec(session: &mut Session, sql: &str) -> SqlResult<Outcome> {
    session.run(sql).await.pop().unwrap_or_else(|| Err(SqlError::parse(sql)))
}

/// The GTIDs `mysql.gtid_executed` holds.
async fn executed_set(session: &mut Session) -> SqlResult<GtidSet> {
    let mut set = GtidSet::new();
    if let Outcome::Rows(rs) = exec(session, "SELECT source_uuid, interval_start, interval_end FROM mysql.gtid_executed ORDER BY 1, 2").await? {
        for row in rs.rows {
            let (Some(Value::Str(uuid)), Some(start), Some(end)) = (row.first(), row.get(1), row.get(2)) else { continue };
            let n = |v: &Value| match v {
                Value::Int(i) => u64::try_from(*i).unwrap_or(0),
                Value::UInt(u) => *u,
                _ => 0,
            };
            // Rows the applier's workers added one per transaction, not yet compressed.
            add_interval(&mut set, uuid, n(start), n(end));
        }
    }
    Ok(set)
}

fn uuid_bytes(text: &str) -> Option<[u8; 16]> {
    quill_sql::server_uuid::uuid_bytes(text)
}

/// One connection to the source: from connect to the first error.
async fn stream(inner: &Arc<Inner>, config: &Config, executed: &Arc<Mutex<GtidSet>>, first: bool) -> Stop {
    let engine = &inner.engine;
    let global_on = |name: &str| engine.global(name).is_some_and(|v| v == "ON" || v == "1");
    let net_timeout = Duration::from_secs(engine.global("replica_net_timeout").and_then(|v| v.parse().ok()).unwrap_or(60));
    let options = ConnectOptions {
        host: &config.host,
        port: config.port,
        user: &config.user,
        password: &config.password,
        ssl: config.ssl,
        get_public_key: config.get_public_key,
        net_timeout,
    };
    inner.status.lock().io_state = "Connecting to source";
    let mut conn = match Connection::connect(&options).await {
        Ok(c) => c,
        Err(e) => return io_stop(e),
    };
    let server_id: u32 = engine.global("server_id").and_then(|v| v.parse().ok()).unwrap_or(1);
    let own_uuid = engine.global("server_uuid").unwrap_or_default();
    let source = match prepare(&mut conn, config, (server_id, &own_uuid), global_on("rpl_semi_sync_replica_enabled")).await {
        Ok(s) => s,
        Err(e) => return io_stop(e),
    };
    let by_gtid = config.auto_position || !executed.lock().is_empty() || !first;
    let request = BinlogDump {
        server_id,
        non_blocking: false,
        file: if by_gtid { Vec::new() } else { config.log_file.clone().into_bytes() },
        position: if by_gtid { 4 } else { config.log_pos },
        gtids: by_gtid.then(|| {
            asked_set(engine, &executed.lock())
                .iter()
                .filter_map(|(uuid, intervals)| Some((uuid_bytes(uuid)?, intervals.iter().map(|&(s, e)| (s, e + 1)).collect())))
                .collect()
        }),
    };
    if let Err(e) = conn.dump(&request).await {
        return io_stop(e);
    }
    {
        let mut status = inner.status.lock();
        status.io_running = "Yes";
        status.io_state = "Waiting for source to send event";
        status.semi_sync = source.semi_sync;
        status.source_server_id = source.server_id;
        status.source_uuid = source.uuid;
    }
    let stop = apply_stream(inner, &mut conn, executed, source.checksum).await;
    inner.status.lock().semi_sync = false;
    stop
}

/// The GTID set a replica names in its dump: what it applied from sources and its own
/// transactions (`@@gtid_executed`), so a former source that now replicates from its former
/// replica is sent none of its own transactions back.
fn asked_set(engine: &Engine, executed: &GtidSet) -> GtidSet {
    let mut asked = executed.clone();
    let own_last = engine.log.get().map_or(0, |log| log.next_position().1.saturating_sub(1));
    if let Some(uuid) = engine.global("server_uuid").filter(|u| !u.is_empty() && own_last > 0) {
        // Its own are 1..=own_last; what it applied of its own UUID (from a replica that logs
        // what it applies) can only add to that.
        let intervals = asked.entry(uuid).or_default();
        intervals.retain(|&(_, end)| end > own_last);
        for interval in intervals.iter_mut() {
            interval.0 = interval.0.max(own_last + 1);
        }
        intervals.insert(0, (1, own_last));
    }
    asked
}

/// What the replica learnt of its source before the dump.
struct SourceInfo {
    server_id: u64,
    uuid: String,
    /// The dump's events carry the semi-sync header.
    semi_sync: bool,
    /// Its events end with a CRC32 (`binlog_checksum`), the first ROTATE's too.
    checksum: bool,
}

/// What a replica says before its dump: it asks the source who it is (and stops with MySQL's
/// 1593 when the source has its own server id or UUID), sets the checksums it reads, the
/// heartbeat it wants and (with `rpl_semi_sync_replica_enabled`) semi-sync, when the source
/// has it, then registers.
async fn prepare(conn: &mut Connection, config: &Config, (own_id, own_uuid): (u32, &str), semi_sync: bool) -> Result<SourceInfo, ConnError> {
    let who = conn.query("SELECT @@global.server_id, @@global.server_uuid, @@global.binlog_checksum").await?;
    let text = |i: usize| who.first().and_then(|r| r.get(i)).and_then(Clone::clone).map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default();
    let (server_id, uuid, checksum) = (text(0).parse::<u64>().unwrap_or(0), text(1), !text(2).eq_ignore_ascii_case("NONE"));
    if server_id == u64::from(own_id) {
        return Err(ConnError {
            code: u32::from(codes::ER_SLAVE_FATAL_ERROR.0),
            message: "Fatal error: The replica I/O thread stops because source and replica have equal MySQL server ids; these ids must be different for replication to work (or the --replicate-same-server-id option must be used on replica but this does not always make sense; please check the manual before using it).".into(),
        });
    }
    if !uuid.is_empty() && uuid == own_uuid {
        return Err(ConnError {
            code: u32::from(codes::ER_SLAVE_FATAL_ERROR.0),
            message: "Fatal error: The replica I/O thread stops because source and replica have equal MySQL server UUIDs; these UUIDs must be different for replication to work.".into(),
        });
    }
    conn.query("SET @master_binlog_checksum = @@global.binlog_checksum, @source_binlog_checksum = @@global.binlog_checksum").await?;
    let heartbeat_ns = (config.heartbeat_period * 1e9) as u64;
    conn.query(&format!("SET @master_heartbeat_period = {heartbeat_ns}, @source_heartbeat_period = {heartbeat_ns}")).await?;
    let mut semi = false;
    if semi_sync {
        // As MySQL's replica: a source without the variable has no semi-sync, and the
        // replica goes on asynchronously.
        let mut has = conn.query("SELECT @@global.rpl_semi_sync_source_enabled").await;
        if has.as_ref().is_err_and(|e| e.code == 1193) {
            has = conn.query("SELECT @@global.rpl_semi_sync_master_enabled").await;
        }
        match has {
            Ok(_) => {
                conn.query("SET @rpl_semi_sync_slave = 1, @rpl_semi_sync_replica = 1").await?;
                conn.expect_semi_sync();
                semi = true;
            }
            Err(e) if e.code == 1193 => tracing::warn!("replica: the source does not support semi-sync; replicating asynchronously"),
            Err(e) => return Err(e),
        }
    }
    conn.register(&RegisterReplica { server_id: own_id, host: Vec::new(), user: config.user.clone().into_bytes(), port: 0 }).await?;
    Ok(SourceInfo { server_id, uuid, semi_sync: semi, checksum })
}

/// Receives the dump's events and applies each transaction whole, until an error or a stop:
/// two loops joined by the relay, as MySQL's I/O and SQL threads, so the source's events are
/// read (and acknowledged) while earlier ones apply.
async fn apply_stream(inner: &Arc<Inner>, conn: &mut Connection, executed: &Arc<Mutex<GtidSet>>, checksum: bool) -> Stop {
    let (events, relayed) = mpsc::channel(RELAY_EVENTS_MAX);
    let relay = Relay { events, bytes: Arc::new(Semaphore::new(RELAY_BYTES_MAX)) };
    let (received, applied) = tokio::join!(receive(inner, conn, relay, checksum), apply::apply(inner, relayed, executed));
    // An apply error stops the replica. Otherwise the connection's end does, once everything
    // received has been applied: so every acknowledged transaction is applied, source or not.
    applied.unwrap_or(received)
}

/// The receiver's end of the relay: events in order, bounded by count ([`RELAY_EVENTS_MAX`])
/// and by bytes ([`RELAY_BYTES_MAX`]); each event carries its share of the bytes, given back
/// once the applier's coordinator has read it into a transaction.
struct Relay {
    events: mpsc::Sender<Relayed>,
    bytes: Arc<Semaphore>,
}

/// An event and the relay bytes it holds.
type Relayed = (Event, OwnedSemaphorePermit);

impl Relay {
    /// Hands `event` on, waiting for room; `Err` once the applier has stopped.
    async fn send(&self, event: Event) -> Result<(), ()> {
        let len = usize::try_from(event.header().event_size()).unwrap_or(usize::MAX).clamp(1, RELAY_BYTES_MAX);
        let permit = Arc::clone(&self.bytes).acquire_many_owned(u32::try_from(len).unwrap_or(u32::MAX)).await.map_err(|_| ())?;
        self.events.send((event, permit)).await.map_err(|_| ())
    }

    async fn closed(&self) {
        self.events.closed().await;
    }
}

/// The I/O side: reads events, acknowledges those the source asks about (semi-sync), and
/// hands them to the applier in order. Ends when the connection does, or the applier stops.
async fn receive(inner: &Inner, conn: &mut Connection, relay: Relay, checksum: bool) -> Stop {
    let mut reader = EventStreamReader::new(BinlogVersion::Version4);
    let mut file = String::new();
    let mut described = false;
    loop {
        let packet = tokio::select! {
            packet = conn.next_event() => match packet {
                Ok(p) => p,
                Err(e) => return io_stop(e),
            },
            () = relay.closed() => return Stop::Asked,
        };
        let event = match reader.read(packet.event()) {
            Ok(Some(e)) => e,
            Ok(None) => continue,
            Err(e) => return Stop::Io(1236, format!("could not read an event from the source: {e}")),
        };
        let log_pos = u64::from(event.header().log_pos());
        match event.header().event_type() {
            Ok(EventType::FORMAT_DESCRIPTION_EVENT) => described = true,
            Ok(EventType::ROTATE_EVENT) => {
                if let Ok(Some(EventData::RotateEvent(r))) = event.read_data() {
                    // The ROTATE that opens a dump comes before the format description, so the
                    // decoder cannot know to leave its checksum out of the name: it is cut here.
                    let raw = r.name_raw();
                    let name = if checksum && !described { &raw[..raw.len().saturating_sub(4)] } else { raw };
                    file = String::from_utf8_lossy(name).into_owned();
                    let mut status = inner.status.lock();
                    status.source_log_file.clone_from(&file);
                    status.read_source_log_pos = r.position();
                }
                continue;
            }
            Ok(EventType::GTID_EVENT) => {
                if let Ok(Some(EventData::GtidEvent(g))) = event.read_data() {
                    add_gtid(&mut inner.status.lock().retrieved, &uuid_text(g.sid()), g.gno());
                }
            }
            _ => {}
        }
        if packet.ack_requested {
            // On receipt, as MySQL's replica acknowledges once the event is in its relay log:
            // the source's commit answers while this replica applies.
            if let Err(e) = conn.ack(&file, log_pos).await {
                return io_stop(e);
            }
        }
        if log_pos > 0 {
            inner.status.lock().read_source_log_pos = log_pos;
        }
        if event.header().event_type_raw() == EventType::TRANSACTION_PAYLOAD_EVENT as u8 {
            // A compressed transaction (`binlog_transaction_compression`): its events, unpacked.
            let unpacked = match event.read_event::<TransactionPayloadEvent<'_>>() {
                Ok(payload) => payload.danger_decompress(),
                Err(e) => return Stop::Io(1236, format!("could not read a compressed transaction from the source: {e}")),
            };
            let mut events = std::io::Cursor::new(unpacked);
            loop {
                match reader.read_decompressed(&mut events) {
                    Ok(Some(inner_event)) => {
                        if relay.send(inner_event).await.is_err() {
                            return Stop::Asked;
                        }
                    }
                    Ok(None) => break,
                    Err(e) => return Stop::Io(1236, format!("could not read a compressed transaction from the source: {e}")),
                }
            }
            continue;
        }
        if relay.send(event).await.is_err() {
            return Stop::Asked;
        }
    }
}

fn io_stop(e: ConnError) -> Stop {
    Stop::Io(e.code, e.message)
}
