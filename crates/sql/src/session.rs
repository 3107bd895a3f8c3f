//! Sessions: one client's state, and the execution of its statements.
//!
//! [`Session::run`] takes the text of a COM_QUERY, splits it into statements
//! (a small recogniser handles the forms the parser does not: SHOW, SET NAMES,
//! transaction control, KILL, USE, DESCRIBE), and executes each in turn,
//! stopping at the first error as MySQL does.
//!
//! Transactions: with autocommit on and no BEGIN, each statement is its own
//! transaction. A statement that fails is undone alone. A statement whose row lock
//! request was queued (see `locking`) is undone, waits for the grant (bounded by
//! `innodb_lock_wait_timeout`: 1205, which undoes the statement only unless
//! `innodb_rollback_on_timeout`) and is re-run from its start, keeping the locks it
//! already holds. A deadlock victim (1213) is rolled back whole. Locks are released at
//! commit right after the commit's log record has its place, before it is durable; the
//! reply waits for durability, and any statement that read waits until the newest commit
//! it could have seen is durable.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use quill_storage::{ReadView, TxnId, Value};
use quill_txn::{LockMode, WaitOutcome, WaitPolicy};
use sqlparser::ast::{self, Statement};

use crate::catalog::Catalog;
use crate::charset::Charset;
use crate::dml::{self, DmlCx};
use crate::engine::{Engine, ProcessInfo, gtid_executed};
use crate::error::{Result, SqlError, Wait, Warning, codes};
use crate::locking::LockSpec;
use crate::query::{self, Env, OutColumn, ResultSet};
use crate::session_info::SessionInfo;
use crate::text::{self, LexOptions, StatementText};
use crate::vars;
use crate::{cost, ddl, show, view_ddl};

mod accounts;
mod checksum;
mod commit;
mod flush;
mod load;
mod maintenance;
mod outfile;
mod privileges;
mod server_files;
mod sql_prepare;
mod table_locks;

pub use commit::{STREAM_PART_BYTES, STREAM_ROWS};
pub use load::PROGRESS_DONE;

/// `SHOW MASTER STATUS`, `SHOW BINARY LOG STATUS` (MySQL 8.2's name) and `SHOW BINARY LOGS`
/// / `SHOW MASTER LOGS`; `words` starts at MASTER or BINARY.
fn show_binary_log(engine: &Engine, words: &[String]) -> Result<ResultSet> {
    let text = SqlTypeHelper::text();
    let int = crate::types::SqlType::Int { kind: crate::types::IntKind::Big, unsigned: true, display: None };
    let Some(binlog) = engine.binary_log.get() else {
        return Err(SqlError::new((1381, "HY000"), "You are not using binary logging"));
    };
    let failed = |e: String| SqlError::new((1220, "HY000"), format!("Error when executing command SHOW BINLOG EVENTS: {e}"));
    let word = |i: usize| words.get(i).map_or("", String::as_str);
    if word(1) == "LOGS" {
        let files = binlog.files().map_err(failed)?;
        return Ok(ResultSet {
            columns: vec![OutColumn::computed("Log_name", text.clone()), OutColumn::computed("File_size", int), OutColumn::computed("Encrypted", text)],
            rows: files.into_iter().map(|(name, size)| vec![Value::Str(name), Value::UInt(size), Value::Str("No".into())]).collect(),
        });
    }
    if word(1) != "STATUS" && !(word(1) == "LOG" && word(2) == "STATUS") {
        return Err(SqlError::parse(&words.join(" ")));
    }
    let (file, position) = binlog.status().map_err(failed)?;
    let executed = gtid_executed(engine);
    Ok(ResultSet {
        columns: ["File", "Position", "Binlog_Do_DB", "Binlog_Ignore_DB", "Executed_Gtid_Set"]
            .iter()
            .map(|n| OutColumn::computed(n, if *n == "Position" { int.clone() } else { text.clone() }))
            .collect(),
        rows: vec![vec![Value::Str(file), Value::UInt(position), Value::Str(String::new()), Value::Str(String::new()), Value::Str(executed)]],
    })
}

/// The outcome of one statement.
#[derive(Debug)]
pub enum Outcome {
    Rows(ResultSet),
    /// The rows went to the session's [`crate::sink::RowSink`] as they were produced: the
    /// result set's columns and rows are sent, its end is not.
    Streamed {
        rows: u64,
    },
    Done {
        affected: u64,
        last_insert_id: u64,
        info: String,
    },
}

impl Outcome {
    fn ok() -> Outcome {
        Outcome::Done { affected: 0, last_insert_id: 0, info: String::new() }
    }

    /// Rows of the result (`FOUND_ROWS()`).
    fn result_rows(&self) -> u64 {
        match self {
            Outcome::Rows(rs) => rs.rows.len() as u64,
            Outcome::Streamed { rows } => *rows,
            Outcome::Done { .. } => 0,
        }
    }
}

struct Txn {
    id: TxnId,
    view: Option<ReadView>,
    /// Every row write, as (table id, primary key), in order; a row written again is there
    /// again.
    writes: crate::write_log::WriteLog,
    /// `writes[..logged]` are in the log already, in part records of this transaction's
    /// stream (see `commit`).
    logged: usize,
    /// The LSN of this transaction's first part record, once it streams.
    stream: Option<quill_log::Lsn>,
    explicit: bool,
    /// Isolation level, fixed when the transaction starts (`quill_txn::ISOLATION_LEVELS`).
    isolation: &'static str,
    /// START TRANSACTION READ ONLY, or `transaction_read_only`: writes fail with 1792.
    read_only: bool,
    /// Savepoints, oldest first: each name with `writes.len()` when it was set.
    savepoints: Vec<(String, usize)>,
}

/// A prepared statement.
pub struct Prepared {
    pub statement: PreparedBody,
    /// The statement as the client sent it (what the commit log records for DDL); shared, so
    /// an execute does not copy it.
    pub text: Arc<str>,
    pub param_count: usize,
    pub columns: Vec<OutColumn>,
}

/// What a prepared statement runs.
#[derive(Debug, Clone)]
pub enum PreparedBody {
    /// A statement the parser took.
    Parsed(Arc<Statement>),
    /// A statement without placeholders that the session recognises before the parser
    /// (SHOW, DESCRIBE, EXPLAIN, DO ... [`recognised_in_prepare`]): run as its text is, its
    /// columns known only once it runs.
    Text(Arc<StatementText>),
}

/// Statements a client may prepare that the session runs as text (their first word):
/// drivers send SHOW and DESCRIBE through the binary protocol (PDO with native prepares).
const PREPARED_AS_TEXT: [&str; 15] =
    ["SHOW", "DESCRIBE", "DESC", "EXPLAIN", "DO", "KILL", "CHECKSUM", "ANALYZE", "CHECK", "OPTIMIZE", "REPAIR", "LOCK", "UNLOCK", "FLUSH", "USE"];

/// Whether a statement is prepared as text ([`PreparedBody::Text`]).
fn recognised_in_prepare(text: &str) -> bool {
    let first = text.split_whitespace().next().unwrap_or_default().trim_end_matches(';');
    PREPARED_AS_TEXT.iter().any(|w| w.eq_ignore_ascii_case(first))
}

/// Most distinct statement texts a session keeps parsed.
pub const PLAN_CACHE_ENTRIES_MAX: usize = 256;
/// Longest statement text a session keeps parsed. Statements worth keeping are short and
/// repeated; one that carries its data (a 1,000-row INSERT) is rarely sent twice, and its
/// tree is many times its text: a bulk load through 256 such entries held over a gigabyte.
/// With this bound a session's cache holds at most 1 MiB of text.
pub const PLAN_CACHE_TEXT_BYTES_MAX: usize = 4096;
/// Most prepared statements one session may hold (MySQL's max_prepared_stmt_count default is per server; this bounds one session).
pub const PREPARED_STATEMENTS_MAX: usize = 16_382;

/// Makes the rows of a table being created from its definition (every column, in order).
pub type CreateRows = Box<dyn FnOnce(&crate::catalog::TableMeta) -> Result<Vec<Vec<Value>>> + Send>;

/// The running statement's figures for the slow log, gathered as it runs.
struct StatementFigures {
    started: Instant,
    start_us: i64,
    row_lock_wait: Duration,
    /// The transaction it waited for longest on a row lock, and for how long.
    blocker: Option<(Duration, crate::slow_log::Blocker)>,
    /// Its transaction, when it waited (an autocommit statement's is gone at its end).
    trx_id: Option<TxnId>,
}

impl StatementFigures {
    fn new() -> StatementFigures {
        StatementFigures {
            started: Instant::now(),
            start_us: i64::try_from(unix_micros()).unwrap_or(i64::MAX),
            row_lock_wait: Duration::ZERO,
            blocker: None,
            trx_id: None,
        }
    }
}

/// A statement's figures once it ended, until it is logged as slow (or not).
struct FinishedStatement {
    started: Instant,
    start_us: i64,
    lock_time: Duration,
    rows_sent: u64,
    rows_affected: u64,
    rows_examined: u64,
    full_scan: bool,
    errno: u16,
    killed: bool,
    trx_id: Option<TxnId>,
    row_lock_wait: Duration,
    blocker: Option<crate::slow_log::Blocker>,
}

/// One client connection's SQL state.
pub struct Session {
    pub info: SessionInfo,
    txn: Option<Txn>,
    pub warnings: Vec<Warning>,
    prepared: HashMap<u32, Prepared>,
    /// SQL-level prepared statements (`PREPARE name FROM ...`): name to statement id.
    sql_prepared: HashMap<String, u32>,
    next_stmt_id: u32,
    cache: HashMap<String, Arc<Vec<Statement>>>,
    /// Client asked for rows-matched counts (CLIENT_FOUND_ROWS).
    pub client_found_rows: bool,
    /// The account logged in with an expired password (a client that handles them): until it
    /// sets a new one, every statement but ALTER USER, SET PASSWORD and SET is 1820, as in
    /// MySQL's sandbox mode.
    pub password_expired: bool,
    /// The replica's applier: its commits are a source's transactions, logged without a
    /// sequence number of this server (`quill_log::Body::set_replicated`).
    pub replica_applier: bool,
    /// The GTID (and original commit time) of the transaction the replica's applier is
    /// applying: the next commit or DDL record takes it as its ORIGIN change, so the
    /// transaction keeps its GTID in this server's binary log (`log_replica_updates`).
    pub replica_origin: Option<quill_log::Origin>,
    /// The rows the next CREATE TABLE statement's table is created with, in the same record
    /// (the replica's applier applying a `CREATE TABLE ... SELECT`): made from the new table's
    /// definition, once it is known.
    pub replica_create_rows: Option<CreateRows>,
    /// DDL replayed from the log or a checkpoint: it passed its checks when it first ran, and
    /// what a view reads may be defined after it (`views`).
    replaying: bool,
    /// Statements answer as soon as their commits are ordered, without waiting for them to be
    /// durable: the caller takes the wait with [`Session::take_log_wait`] (the replica's
    /// applier, which starts its next transaction while the last one syncs).
    pub answers_before_durable: bool,
    /// Notified when another session KILLs this one.
    pub kill: Arc<tokio::sync::Notify>,
    /// This session's `ProcessInfo::progress`.
    progress: Arc<AtomicU32>,
    /// Isolation level of the next transaction only (SET TRANSACTION without a scope).
    next_isolation: Option<&'static str>,
    /// Access mode of the next transaction only (SET TRANSACTION READ ONLY / READ WRITE).
    next_read_only: Option<bool>,
    /// Time the current statement spent waiting for metadata and row locks (the slow log's
    /// `Lock_time`).
    pub statement_lock_time: Duration,
    /// The current statement's other figures for the slow log.
    statement: StatementFigures,
    /// The tables held with `LOCK TABLES`, while they are held.
    locked_tables: Option<table_locks::LockedTables>,
    /// TLS cipher suite and protocol of the connection (empty without TLS).
    pub tls_cipher: String,
    pub tls_version: String,
    /// The log position (and flush mode) this session's last commits must reach before the
    /// current statement is answered.
    durable_wait: Option<(quill_log::Lsn, quill_log::FlushMode, crate::commit_acks::AckWait)>,
    /// When the commit the session's reply waits for began (commit latency).
    commit_started: Option<Instant>,
    /// Set by [`Session::close`].
    closed: bool,
    /// Lent by the connection for one command: where a streamed result goes (see `sink`).
    pub row_sink: Option<Box<dyn crate::sink::RowSink>>,
    /// Whether the statement running now may stream its result: it is its command's first.
    may_stream: bool,
}

impl Session {
    #[must_use]
    pub fn new(engine: Arc<Engine>, connection_id: u32, user: &str, host: &str) -> Session {
        let vars = engine.globals.read().clone();
        engine.status.connections.fetch_add(1, Ordering::Relaxed);
        engine.status.threads_connected.fetch_add(1, Ordering::Relaxed);
        let kill = Arc::new(tokio::sync::Notify::new());
        let interrupt = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let progress = Arc::new(AtomicU32::new(0));
        engine.processes.lock().insert(
            connection_id,
            ProcessInfo {
                user: user.to_owned(),
                host: host.to_owned(),
                command: "Sleep".into(),
                kill: kill.clone(),
                interrupt: interrupt.clone(),
                progress: progress.clone(),
                ..ProcessInfo::default()
            },
        );
        Session {
            info: SessionInfo {
                engine,
                db: None,
                user: user.to_owned(),
                host: host.to_owned(),
                account_host: if host == "127.0.0.1" || host == "::1" { "localhost".into() } else { host.to_owned() },
                connection_id,
                last_insert_id: std::cell::Cell::new(0),
                last_insert_id_assigned: std::cell::Cell::new(false),
                connection_collation: quill_storage::Collation::default(),
                row_count: -1,
                found_rows: 0,
                vars,
                user_vars: std::cell::RefCell::default(),
                user_variables_assigned: std::cell::Cell::new(false),
                interrupt: crate::interrupt::Interrupt::new(interrupt),
                tmp_memory: crate::tmp_memory::TmpMemory::default(),
                function_calls: std::cell::RefCell::default(),
                checked: false,
                previous_diagnostics: (0, 0),
                expression_warnings: std::cell::RefCell::default(),
            },
            txn: None,
            warnings: Vec::new(),
            prepared: HashMap::new(),
            sql_prepared: HashMap::new(),
            next_stmt_id: 1,
            cache: HashMap::new(),
            client_found_rows: false,
            password_expired: false,
            replica_applier: false,
            replica_origin: None,
            replica_create_rows: None,
            replaying: false,
            kill,
            progress,
            next_isolation: None,
            next_read_only: None,
            locked_tables: None,
            statement_lock_time: Duration::ZERO,
            statement: StatementFigures::new(),
            tls_cipher: String::new(),
            tls_version: String::new(),
            durable_wait: None,
            commit_started: None,
            answers_before_durable: false,
            closed: false,
            row_sink: None,
            may_stream: false,
        }
    }

    fn engine(&self) -> Arc<Engine> {
        self.info.engine.clone()
    }

    #[must_use]
    pub fn in_transaction(&self) -> bool {
        self.txn.as_ref().is_some_and(|t| t.explicit || !self.autocommit())
    }

    #[must_use]
    pub fn autocommit(&self) -> bool {
        self.info.var("autocommit") == "ON"
    }

    #[must_use]
    pub fn warning_count(&self) -> u16 {
        u16::try_from(self.warnings.len()).unwrap_or(u16::MAX)
    }

    /// Keeps the diagnostics' counts of the statement before the one starting now.
    fn note_diagnostics(&mut self) {
        let errors = self.warnings.iter().filter(|w| w.level == "Error").count();
        self.info.previous_diagnostics = (self.warning_count(), u16::try_from(errors).unwrap_or(u16::MAX));
    }

    /// Select the default database (COM_INIT_DB / USE).
    ///
    /// # Errors
    /// 1049.
    pub fn use_database(&mut self, db: &str) -> Result<()> {
        if !db.eq_ignore_ascii_case("information_schema") {
            if self.info.checked && !self.info.engine.acl.read().any_in_database(&self.info.user, &self.info.account_host, db) {
                return Err(self.database_denied(db));
            }
            self.info.engine.catalog().database(db)?;
        }
        self.info.db = Some(db.to_owned());
        if let Some(p) = self.info.engine.processes.lock().get_mut(&self.info.connection_id) {
            p.db = Some(db.to_owned());
        }
        Ok(())
    }

    /// Roll back and forget everything (disconnect, COM_RESET_CONNECTION).
    pub fn reset(&mut self) {
        self.rollback();
        // As MySQL's COM_RESET_CONNECTION and COM_CHANGE_USER: the next user of a pooled
        // connection does not inherit its user-level locks.
        self.info.engine.user_locks.release_all(self.info.connection_id);
        self.prepared.clear();
        self.sql_prepared.clear();
        self.info.user_vars.borrow_mut().clear();
        self.info.vars = self.info.engine.globals.read().clone();
        self.info.last_insert_id.set(0);
        self.info.connection_collation = quill_storage::Collation::default();
        self.warnings.clear();
    }

    /// `sql` parsed (see [`crate::parse`]), from the session's cache when it was seen
    /// before; `operators` as the lexer counted them.
    fn parse(&mut self, sql: &str, operators: usize, div_operators: usize) -> Result<Arc<Vec<Statement>>> {
        if let Some(s) = self.cache.get(sql) {
            return Ok(s.clone());
        }
        let stmts = Arc::new(crate::parse::parse(sql, operators, div_operators)?);
        if sql.len() > PLAN_CACHE_TEXT_BYTES_MAX {
            return Ok(stmts);
        }
        if self.cache.len() >= PLAN_CACHE_ENTRIES_MAX {
            self.cache.clear();
        }
        self.cache.insert(sql.to_owned(), stmts.clone());
        Ok(stmts)
    }

    /// How this session's client text is read: its `character_set_client`, and
    /// `NO_BACKSLASH_ESCAPES`.
    #[must_use]
    pub fn lex_options(&self) -> LexOptions {
        LexOptions { charset: self.client_charset(), backslash_escapes: !self.info.var("sql_mode").contains("NO_BACKSLASH_ESCAPES") }
    }

    /// The character set the client writes in (`character_set_client`).
    #[must_use]
    pub fn client_charset(&self) -> Charset {
        Charset::from_name(self.info.var("character_set_client")).unwrap_or_default()
    }

    /// The character set result text must be converted to (`character_set_results`), or
    /// `None` when text goes out as stored (utf8mb4, binary, or NULL).
    #[must_use]
    pub fn results_conversion(&self) -> Option<Charset> {
        Charset::from_name(self.info.var("character_set_results")).filter(|c| c.converts_results())
    }

    /// Run the text of one COM_QUERY, bytes in `character_set_client`: every statement in
    /// it, stopping at the first error (whose result is last).
    pub async fn run(&mut self, sql: impl AsRef<[u8]>) -> Vec<Result<Outcome>> {
        let sql = sql.as_ref();
        let mut out = Vec::new();
        // The statement before this one, logged as slow (or not) once the next starts, or,
        // for the last, once its reply may go (its commit durable).
        let mut finished: Option<(StatementText, FinishedStatement)> = None;
        // The slow log shows the statement as the client sent it, comments included.
        let source = |s: &StatementText| String::from_utf8_lossy(sql.get(s.source.clone()).unwrap_or_default()).into_owned();
        for piece in text::split(sql, self.lex_options()) {
            self.may_stream = out.is_empty();
            if let Some((text, figures)) = finished.take() {
                self.log_if_slow(&figures, Instant::now(), || source(&text));
            }
            let r = match piece {
                Ok(statement) => {
                    self.start_statement();
                    let r = self.run_one(&statement).await;
                    finished = Some((statement, self.finish_statement(&r)));
                    r
                }
                Err(e) => {
                    self.info.engine.status.questions.fetch_add(1, Ordering::Relaxed);
                    self.warnings.clear();
                    Err(e)
                }
            };
            self.may_stream = false;
            let failed = r.is_err();
            out.push(r);
            if failed {
                break;
            }
        }
        if out.is_empty() {
            out.push(Err(SqlError::new(codes::ER_EMPTY_QUERY, "Query was empty")));
        }
        if !self.answers_before_durable {
            self.wait_until_durable().await;
        }
        if let Some((text, figures)) = finished {
            self.log_if_slow(&figures, Instant::now(), || source(&text));
        }
        out
    }

    /// This session's transaction was a deadlock's victim: the deadlock is described now,
    /// before it rolls back, while the others still wait (`innodb_status`), and written to
    /// the server's log with `innodb_print_all_deadlocks`.
    fn describe_deadlock(&self) {
        let Some(txn) = self.txn.as_ref().map(|t| t.id) else { return };
        let engine = &self.info.engine;
        let Some(record) = engine.txns.locks.take_deadlock(txn) else { return };
        let text = crate::innodb_status::describe_deadlock(engine, &engine.catalog(), &record);
        if engine.global("innodb_print_all_deadlocks").as_deref() == Some("ON") {
            tracing::warn!("Transactions deadlock detected, dumping detailed information.\n{text}");
        }
        *engine.latest_deadlock.lock() = Some(text);
    }

    /// A statement starts: its slow-log figures from zero.
    fn start_statement(&mut self) {
        self.statement = StatementFigures::new();
        self.statement_lock_time = Duration::ZERO;
        self.info.interrupt.start_statement();
    }

    /// A statement ended with `r`: what the slow log needs of it.
    fn finish_statement(&mut self, r: &Result<Outcome>) -> FinishedStatement {
        let raised = self.info.expression_warnings.take();
        self.warnings.extend(raised);
        let (rows_sent, rows_affected) = match r {
            Ok(o @ (Outcome::Rows(_) | Outcome::Streamed { .. })) => (o.result_rows(), 0),
            Ok(Outcome::Done { affected, .. }) => (0, *affected),
            Err(_) => (0, 0),
        };
        FinishedStatement {
            started: self.statement.started,
            start_us: self.statement.start_us,
            lock_time: self.statement_lock_time,
            rows_sent,
            rows_affected,
            rows_examined: self.info.interrupt.examined().max(rows_affected).max(rows_sent),
            full_scan: self.info.interrupt.full_scan(),
            errno: r.as_ref().err().map_or(0, |e| e.code),
            killed: r.as_ref().is_err_and(|e| e.code == codes::ER_QUERY_INTERRUPTED.0),
            trx_id: self.txn.as_ref().map(|t| t.id).or(self.statement.trx_id),
            row_lock_wait: self.statement.row_lock_wait,
            blocker: self.statement.blocker.take().map(|(_, b)| b),
        }
    }

    /// The transaction (and its connection and statement) that `txn`'s waiting row lock
    /// request waits for, when the wait begins.
    fn row_lock_blocker(&mut self, txn: TxnId) -> Option<crate::slow_log::Blocker> {
        self.statement.trx_id = Some(txn);
        let engine = &self.info.engine;
        let blocker = engine.txns.locks.blockers_of(txn).into_iter().next()?;
        let connection_id = engine.txns.thread_of(blocker).unwrap_or(0);
        let (statement, idle) = engine.processes.lock().get(&connection_id).map_or((None, false), |p| match &p.info {
            Some(running) => (Some(running.clone()), false),
            None => (p.last_info.clone(), true),
        });
        Some(crate::slow_log::Blocker { connection_id, trx_id: blocker, statement, idle })
    }

    /// The statement waited `waited` for a row lock that `blocker` held.
    fn row_lock_waited(&mut self, waited: Duration, blocker: Option<crate::slow_log::Blocker>) {
        self.info.engine.status.distributions.row_lock_wait_us.observe(u64::try_from(waited.as_micros()).unwrap_or(u64::MAX));
        self.statement_lock_time += waited;
        self.statement.row_lock_wait += waited;
        if let Some(b) = blocker
            && self.statement.blocker.as_ref().is_none_or(|(longest, _)| waited >= *longest)
        {
            self.statement.blocker = Some((waited, b));
        }
    }

    /// Counts the statement in `Slow_queries` and writes it to the slow log when it was slow
    /// (`slow_log`); `end` is when its reply could go. `text` makes the statement's text, only
    /// for a statement that is written.
    fn log_if_slow(&self, f: &FinishedStatement, end: Instant, text: impl FnOnce() -> String) {
        let query_time = end.saturating_duration_since(f.started);
        let long = self.info.var("long_query_time").parse::<f64>().unwrap_or(10.0);
        let slow = query_time.as_secs_f64() > long || (f.full_scan && self.info.engine.global("log_queries_not_using_indexes").as_deref() == Some("ON"));
        if !slow || f.rows_examined < vars::int_value(&self.info.vars, "min_examined_row_limit") {
            return;
        }
        let engine = &self.info.engine;
        engine.status.slow_queries.fetch_add(1, Ordering::Relaxed);
        if engine.global("slow_query_log").as_deref() != Some("ON") || engine.global("log_output").as_deref() == Some("NONE") {
            return;
        }
        let text = text();
        // A password in the statement is never written out.
        let text = crate::accounts::statements::redacted(&text).unwrap_or(text);
        let text = text.as_str();
        let verbosity = self.info.var("log_slow_verbosity");
        let detail = crate::slow_log::Detail {
            extra: engine.global("log_slow_extra").as_deref() == Some("ON"),
            innodb: verbosity.split(',').any(|w| w == "innodb" || w == "full"),
        };
        let entry = crate::slow_log::Entry {
            start_us: f.start_us,
            user: &self.info.user,
            host: &self.info.host,
            ip: &self.info.host,
            connection_id: self.info.connection_id,
            db: self.info.db.as_deref(),
            query_time,
            lock_time: f.lock_time,
            rows_sent: f.rows_sent,
            rows_examined: f.rows_examined,
            rows_affected: f.rows_affected,
            errno: f.errno,
            killed: f.killed,
            bytes_received: text.len() as u64,
            trx_id: f.trx_id,
            row_lock_wait: f.row_lock_wait,
            blocker: f.blocker.clone(),
            text,
        };
        let path = self.slow_log_path();
        if let Err(e) = engine.slow_log.write(&path, &self.slow_log_header(), &entry, detail) {
            tracing::warn!(path = %path.display(), error = %e, "slow query log: entry not written");
        }
    }

    /// `slow_query_log_file`, in the data directory when not absolute.
    fn slow_log_path(&self) -> std::path::PathBuf {
        let engine = &self.info.engine;
        let name = engine.global("slow_query_log_file").filter(|n| !n.is_empty()).unwrap_or_else(|| crate::slow_log::DEFAULT_FILE.to_owned());
        std::path::Path::new(&engine.global("datadir").unwrap_or_default()).join(name)
    }

    fn slow_log_header(&self) -> crate::slow_log::Header {
        let engine = &self.info.engine;
        crate::slow_log::Header {
            program: program_path().to_owned(),
            version: crate::SERVER_VERSION.to_owned(),
            port: engine.global("port").and_then(|p| p.parse().ok()).unwrap_or(0),
            socket: engine.global("socket").unwrap_or_default(),
        }
    }

    async fn run_one(&mut self, statement: &StatementText) -> Result<Outcome> {
        let sql = statement.text.as_str();
        self.info.engine.status.questions.fetch_add(1, Ordering::Relaxed);
        let keeps_warnings = {
            let t = sql.trim_start().to_ascii_uppercase();
            t.starts_with("SHOW WARNINGS") || t.starts_with("SHOW ERRORS") || t.starts_with("SHOW COUNT")
        };
        self.note_diagnostics();
        if !keeps_warnings {
            self.warnings.clear();
        }
        self.warnings.extend(statement.warnings.iter().cloned());
        let kept = self.warnings.len();
        let result = self.run_recognised_or_parsed(statement).await;
        // sql_notes=0: the statement's notes are not recorded (earlier ones SHOW WARNINGS
        // keeps stay).
        if self.info.var("sql_notes") == "OFF" {
            let mut i = 0;
            self.warnings.retain(|w| {
                i += 1;
                i <= kept || w.level != "Note"
            });
        }
        result
    }

    async fn run_recognised_or_parsed(&mut self, statement: &StatementText) -> Result<Outcome> {
        let sandboxed = self.password_expired;
        if sandboxed {
            self.refuse_while_password_expired(&statement.text)?;
            // The statement's own grant-table writes run as statements of this session.
            self.password_expired = false;
        }
        let r = self.run_unsandboxed(statement).await;
        if sandboxed {
            self.password_expired = self.account_password_expired();
        }
        r
    }

    async fn run_unsandboxed(&mut self, statement: &StatementText) -> Result<Outcome> {
        if let Some(r) = self.recognise(statement).await {
            return r;
        }
        let sql = statement.text.as_str();
        let rewritten = crate::parse::rewrite_set_assignment(&rewrite_lock_in_share_mode(sql)).into_owned();
        let stmts = self.parse(&rewritten, statement.operators, statement.div_operators)?;
        let Some(stmt) = stmts.first() else {
            return Err(SqlError::new(codes::ER_EMPTY_QUERY, "Query was empty"));
        };
        self.execute(stmt, &[], sql).await
    }

    /// Prepare a statement (COM_STMT_PREPARE), text in `character_set_client`.
    ///
    /// # Errors
    /// Parse errors; 1461 when too many statements are prepared.
    pub fn prepare(&mut self, sql: impl AsRef<[u8]>) -> Result<(u32, usize, Vec<OutColumn>)> {
        if self.prepared.len() >= PREPARED_STATEMENTS_MAX {
            return Err(SqlError::new((1461, "42000"), "Can't create more than max_prepared_stmt_count statements"));
        }
        let statement = text::single(sql.as_ref(), self.lex_options())?;
        if self.password_expired {
            self.refuse_while_password_expired("")?;
        }
        if recognised_in_prepare(&statement.text) {
            if statement.placeholders > 0 {
                return Err(SqlError::new((1295, "HY000"), "This command is not supported in the prepared statement protocol yet"));
            }
            let id = self.next_stmt_id;
            self.next_stmt_id = self.next_stmt_id.wrapping_add(1).max(1);
            let text: Arc<str> = statement.text.as_str().into();
            self.prepared.insert(id, Prepared { statement: PreparedBody::Text(Arc::new(statement)), text, param_count: 0, columns: Vec::new() });
            return Ok((id, 0, Vec::new()));
        }
        let mut stmts = crate::parse::parse(
            &crate::parse::rewrite_set_assignment(&rewrite_lock_in_share_mode(&statement.text)),
            statement.operators,
            statement.div_operators,
        )?;
        if stmts.len() != 1 {
            return Err(SqlError::new((1295, "HY000"), "This command is not supported in the prepared statement protocol yet"));
        }
        let count = statement.placeholders;
        let parsed = Arc::new(stmts.remove(0));
        let columns = self.describe(&parsed, count).unwrap_or_default();
        let id = self.next_stmt_id;
        self.next_stmt_id = self.next_stmt_id.wrapping_add(1).max(1);
        self.prepared
            .insert(id, Prepared { statement: PreparedBody::Parsed(parsed), text: statement.text.into(), param_count: count, columns: columns.clone() });
        Ok((id, count, columns))
    }

    fn describe(&self, stmt: &Statement, params: usize) -> Result<Vec<OutColumn>> {
        let Statement::Query(q) = stmt else { return Ok(vec![]) };
        let catalog = self.info.engine.catalog();
        let nulls = vec![Value::Null; params];
        let env = Env::new(&catalog, ReadView::current(0), &nulls, 0, &self.info, &crate::show::SYSTEM_SCHEMAS);
        Ok(query::plan_query(&env, q, &[])?.0.columns)
    }

    #[must_use]
    pub fn prepared(&self, id: u32) -> Option<&Prepared> {
        self.prepared.get(&id)
    }

    pub fn close_prepared(&mut self, id: u32) {
        self.prepared.remove(&id);
    }

    /// Execute a prepared statement with bound parameter values.
    ///
    /// # Errors
    /// 1243 for an unknown statement id; execution errors.
    pub async fn execute_prepared(&mut self, id: u32, params: Vec<Value>) -> Result<Outcome> {
        let (stmt, text) = self
            .prepared
            .get(&id)
            .map(|p| (p.statement.clone(), p.text.clone()))
            .ok_or_else(|| SqlError::new((1243, "HY000"), format!("Unknown prepared statement handler ({id}) given to mysqld_stmt_execute")))?;
        self.may_stream = true;
        self.start_statement();
        let outcome = match stmt {
            // Counted, and its warnings kept or cleared, as a text statement's.
            PreparedBody::Text(statement) => self.run_one(&statement).await,
            PreparedBody::Parsed(stmt) => {
                self.info.engine.status.questions.fetch_add(1, Ordering::Relaxed);
                self.note_diagnostics();
                self.warnings.clear();
                self.execute(&stmt, &params, &text).await
            }
        };
        let figures = self.finish_statement(&outcome);
        self.may_stream = false;
        if !self.answers_before_durable {
            self.wait_until_durable().await;
        }
        self.log_if_slow(&figures, Instant::now(), || crate::slow_log::with_parameters(&text, &params));
        outcome
    }

    /// Runs one statement under its metadata locks, waiting out lock holders and
    /// checkpoints; `text` is the statement as the client sent it (the commit log records
    /// DDL as this text: sqlparser's Display does not round-trip every literal).
    async fn execute(&mut self, stmt: &Statement, params: &[Value], text: &str) -> Result<Outcome> {
        self.check_privileges(stmt)?;
        // A write through an updatable view runs on the view's table (`view_writes`).
        let through_view = match stmt {
            Statement::Insert(_) | Statement::Update(_) | Statement::Delete(_) => crate::view_writes::rewrite(&self.info.engine.catalog(), &self.info, stmt)?,
            _ => None,
        };
        if let Some(rewritten) = &through_view {
            self.check_privileges(rewritten)?;
        }
        let stmt = through_view.as_ref().unwrap_or(stmt);
        // `@v := expr` outside SET (a `:=` in a string literal only costs the statement its
        // constant reads of user variables).
        let assigns = text.contains(":=") && !matches!(stmt, Statement::Set(_));
        self.info.user_variables_assigned.set(assigns);
        if assigns {
            self.warnings.push(Warning {
                level: "Warning",
                code: 1287,
                message: "Setting user variables within expressions is deprecated and will be removed in a future release. Consider alternatives: 'SET variable=expression, ...', or 'SELECT expression(s) INTO variables(s)'.".into(),
            });
        }
        let started = Instant::now();
        let locked = self.acquire_metadata_locks(stmt).await;
        self.statement_lock_time += started.elapsed();
        let outcome = match locked {
            Ok(()) => self.execute_locked(stmt, params, text).await,
            Err(e) => Err(e),
        };
        if self.txn.is_none() {
            self.info.engine.mdl.release_all(self.info.connection_id);
        }
        outcome
    }

    /// The tables `stmt` works on, each with the metadata lock it needs: exclusive for the
    /// tables DDL changes, shared (read or write) for those a statement uses.
    fn metadata_lock_requests(&self, stmt: &Statement) -> Vec<(crate::mdl::TableName, crate::mdl::Mode)> {
        use crate::mdl::Mode;
        let mut requests: Vec<(crate::mdl::TableName, Mode)> = match stmt {
            Statement::Drop { object_type: ast::ObjectType::Database | ast::ObjectType::Schema, names, .. } => {
                let db = ident_of(&names[0]);
                let catalog = self.info.engine.catalog();
                let tables = catalog.database(&db).map(|d| d.tables.keys().map(|t| ((db.clone(), t.clone()), Mode::Exclusive)).collect());
                tables.unwrap_or_default()
            }
            Statement::CreateDatabase { .. } | Statement::CreateSchema { .. } => Vec::new(),
            _ => {
                let ddl = is_ddl(stmt);
                let mode = |write: bool| {
                    if ddl {
                        Mode::Exclusive
                    } else if write {
                        Mode::Write
                    } else {
                        Mode::Read
                    }
                };
                let mut requests: Vec<_> = self.table_references(stmt).into_iter().map(|r| ((r.db, r.table), mode(r.write))).collect();
                // The tables foreign keys reach from a written one: its parents, read, and
                // the children its changes cascade into, written.
                let catalog = self.info.engine.catalog();
                if !ddl && catalog.has_foreign_keys() {
                    let written: Vec<crate::mdl::TableName> = requests.iter().filter(|(_, m)| *m == Mode::Write).map(|(n, _)| n.clone()).collect();
                    for (db, table) in written {
                        let reached = crate::foreign_keys::reachable_tables(&catalog, &db, &table);
                        requests.extend(reached.into_iter().map(|(name, write)| (name, mode(write))));
                    }
                }
                requests
            }
        };
        requests.sort();
        requests.dedup_by(|later, first| {
            if later.0 == first.0 {
                first.1 = first.1.max(later.1);
                true
            } else {
                false
            }
        });
        requests
    }

    /// Takes the metadata locks `stmt` needs, waiting (bounded by `lock_wait_timeout`) for
    /// DDL or for the transactions that use a table DDL is about to change. DDL commits the
    /// open transaction first, as it would anyway, so it waits for others only.
    ///
    /// # Errors
    /// 1205 when the wait times out, 1317 when the session is killed meanwhile, and the
    /// commit's errors.
    async fn acquire_metadata_locks(&mut self, stmt: &Statement) -> Result<()> {
        self.check_table_locks(stmt)?;
        let requests = self.metadata_lock_requests(stmt);
        self.acquire_locks(requests, false).await
    }

    /// Takes the metadata locks of `requests`, all at once (see
    /// [`Session::acquire_metadata_locks`]); `explicit` for `LOCK TABLES`.
    ///
    /// # Errors
    /// As [`Session::acquire_metadata_locks`].
    async fn acquire_locks(&mut self, requests: Vec<(crate::mdl::TableName, crate::mdl::Mode)>, explicit: bool) -> Result<()> {
        let exclusive = requests.iter().any(|(_, m)| *m == crate::mdl::Mode::Exclusive);
        if exclusive {
            self.commit()?;
        }
        if requests.is_empty() {
            return Ok(());
        }
        let engine = self.engine();
        let id = self.info.connection_id;
        let deadline = Instant::now() + Duration::from_secs(vars::int_value(&self.info.vars, "lock_wait_timeout"));
        let mut waiting = false;
        let result = loop {
            let released = engine.mdl.released();
            let granted = engine.mdl.try_acquire(id, &requests, explicit);
            if granted.is_ok() {
                break Ok(());
            }
            if !waiting {
                waiting = true;
                self.set_state("Waiting for table metadata lock");
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break Err(SqlError::lock_wait_timeout());
            }
            tokio::select! {
                () = released => {}
                () = tokio::time::sleep(left) => {}
                () = self.kill.notified() => {
                    if self.is_killed() {
                        break Err(SqlError::query_interrupted());
                    }
                }
            }
        };
        if waiting {
            self.set_state("");
        }
        if result.is_err() {
            engine.mdl.withdraw(id);
        }
        result
    }

    /// Show `state` for this session in PROCESSLIST.
    fn set_state(&self, state: &'static str) {
        if let Some(p) = self.info.engine.processes.lock().get_mut(&self.info.connection_id) {
            p.state = state;
        }
    }

    /// [`Session::execute`] once its metadata locks are held.
    async fn execute_locked(&mut self, stmt: &Statement, params: &[Value], text: &str) -> Result<Outcome> {
        self.info.function_calls.borrow_mut().start_statement();
        let outcome = self.execute_attempts(stmt, params, text).await;
        // A wait whose error did not come back here (a statement path outside this loop)
        // settles itself as it is dropped: its request taken back, or the lock it was handed
        // given back (`quill_txn::user_locks::Wait`).
        self.info.function_calls.borrow_mut().start_statement();
        outcome
    }

    /// What a function that stopped the statement waits for (`statement_waits`): the
    /// user-level lock a `GET_LOCK` queued for (1 when granted, 0 when its timeout passed
    /// first, NULL after a KILL QUERY), or SLEEP's time (0, or 1 after a KILL QUERY), as
    /// MySQL's; a KILL CONNECTION ends either with 1317.
    async fn wait_in_function(&mut self, pending: crate::statement_waits::Pending) -> Result<Value> {
        let mut wait = match pending {
            crate::statement_waits::Pending::Lock(wait) => wait,
            crate::statement_waits::Pending::Commit { after, deadline, mut positions } => {
                self.set_state("Waiting for table commit");
                let timeout = async {
                    match deadline {
                        Some(at) => tokio::time::sleep_until(at.into()).await,
                        None => std::future::pending().await,
                    }
                };
                tokio::pin!(timeout);
                let outcome = loop {
                    tokio::select! {
                        at = async { positions.wait_for(|&at| at > after).await.map(|at| *at) } => {
                            let Ok(at) = at else { break Ok(Value::Null) };
                            // Answered once the commit is durable, whatever the flush mode
                            // promised its client (the log syncs now if it would not).
                            if let Some(log) = self.info.engine.log.get() {
                                log.wait(at, quill_log::FlushMode::AtCommit).await;
                            }
                            break Ok(Value::UInt(at));
                        }
                        () = &mut timeout => break Ok(Value::Null),
                        () = self.kill.notified() => if self.is_killed() { break self.after_kill_in_function(true, Value::Null, Value::Null) },
                    }
                };
                self.set_state("");
                return outcome;
            }
            crate::statement_waits::Pending::Sleep(until) => {
                self.set_state("User sleep");
                let killed = loop {
                    tokio::select! {
                        () = tokio::time::sleep_until(until.into()) => break false,
                        () = self.kill.notified() => if self.is_killed() { break true },
                    }
                };
                self.set_state("");
                return self.after_kill_in_function(killed, Value::Int(0), Value::Int(1));
            }
        };
        self.set_state("User lock");
        let deadline = wait.deadline;
        let timeout = async {
            match deadline {
                Some(at) => tokio::time::sleep_until(at.into()).await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(timeout);
        enum Ended {
            Granted,
            TimedOut,
            Killed,
        }
        let outcome = loop {
            let ended = tokio::select! {
                () = wait.granted() => Ended::Granted,
                () = &mut timeout => Ended::TimedOut,
                () = self.kill.notified() => Ended::Killed,
            };
            match ended {
                Ended::Granted => break Ok(Value::Int(1)),
                // Handed the lock as the time ran out: it is the connection's.
                Ended::TimedOut => break Ok(Value::Int(i64::from(wait.give_up(true)))),
                Ended::Killed if self.is_killed() => {
                    wait.give_up(false);
                    break self.after_kill_in_function(true, Value::Null, Value::Null);
                }
                // A wake-up left over from a KILL that found nothing to interrupt.
                Ended::Killed => {}
            }
        };
        self.set_state("");
        outcome
    }

    /// How a function's wait ends: `done` when it ran its course; when a KILL ended it,
    /// `killed` (GET_LOCK's NULL, SLEEP's 1, as MySQL's) with the KILL QUERY spent, so the
    /// statement goes on, or 1317 for a KILL CONNECTION.
    fn after_kill_in_function(&self, was_killed: bool, done: Value, killed: Value) -> Result<Value> {
        if !was_killed {
            return Ok(done);
        }
        if self.connection_killed() {
            return Err(SqlError::query_interrupted());
        }
        if let Some(p) = self.info.engine.processes.lock().get(&self.info.connection_id) {
            p.interrupt.store(false, Ordering::Release);
        }
        Ok(killed)
    }

    /// [`Session::execute_locked`]: runs the statement, and again after each [`Wait`] it
    /// stopped for (a row lock it queued for, a function that waits, the DDL gate).
    async fn execute_attempts(&mut self, stmt: &Statement, params: &[Value], text: &str) -> Result<Outcome> {
        let lock_wait_timeout = Duration::from_secs(vars::int_value(&self.info.vars, "innodb_lock_wait_timeout"));
        loop {
            self.info.function_calls.borrow_mut().restart();
            self.info.interrupt.restart_statement();
            match self.execute_once(stmt, params, text) {
                Err(e) if e.wait() == Some(Wait::Function) => {
                    let Some(wait) = self.info.function_calls.borrow_mut().waiting.take() else { return Err(e) };
                    let got = self.wait_in_function(wait).await;
                    match got {
                        Ok(v) => {
                            self.info.function_calls.borrow_mut().record_wait(v);
                        }
                        Err(e) => {
                            self.statement_end_after_error(false);
                            return Err(e);
                        }
                    }
                }
                Err(e) if e.wait() == Some(Wait::DdlGate) => {
                    tokio::select! {
                        () = tokio::time::sleep(DDL_GATE_RETRY) => {}
                        () = self.kill.notified() => {
                            if self.is_killed() {
                                return Err(SqlError::query_interrupted());
                            }
                        }
                    }
                }
                Err(e) if e.wait() == Some(Wait::RowLock) => {
                    let Some(txn) = self.txn.as_ref().map(|t| t.id) else { return Err(SqlError::internal("lock wait outside a transaction")) };
                    let engine = self.engine();
                    let locks = &engine.txns.locks;
                    let started = Instant::now();
                    // Each wait has its own bound, as InnoDB's.
                    let deadline = started + lock_wait_timeout;
                    let blocker = self.row_lock_blocker(txn);
                    let waited = loop {
                        let left = deadline.saturating_duration_since(Instant::now());
                        tokio::select! {
                            w = locks.wait(txn, left) => break w,
                            () = self.kill.notified() => {
                                // A wake-up left over from a KILL that found nothing to
                                // interrupt: keep waiting.
                                if !self.is_killed() {
                                    continue;
                                }
                                if !locks.cancel_wait(txn) && locks.is_victim(txn) {
                                    break WaitOutcome::Deadlock;
                                }
                                self.row_lock_waited(started.elapsed(), blocker);
                                self.statement_end_after_error(false);
                                return Err(SqlError::query_interrupted());
                            }
                        }
                    };
                    self.row_lock_waited(started.elapsed(), blocker);
                    match waited {
                        WaitOutcome::Granted => {}
                        WaitOutcome::Deadlock => {
                            self.describe_deadlock();
                            self.rollback();
                            return Err(SqlError::deadlock());
                        }
                        WaitOutcome::TimedOut => {
                            self.statement_end_after_error(self.info.var("innodb_rollback_on_timeout") == "ON");
                            return Err(SqlError::lock_wait_timeout());
                        }
                    }
                }
                Err(e) if e.rolls_back_transaction => {
                    self.describe_deadlock();
                    self.rollback();
                    return Err(e);
                }
                other => return other,
            }
        }
    }

    /// After a statement failed without running to its end (lock wait timeout, KILL): roll
    /// back the whole transaction if asked, else end an autocommit statement's transaction.
    fn statement_end_after_error(&mut self, whole: bool) {
        if whole || self.txn.as_ref().is_some_and(|t| !t.explicit) && self.autocommit() {
            self.rollback();
        }
    }

    /// One attempt at a statement, run synchronously: a wait it needs stops it with a
    /// [`Wait`] that [`Session::execute_attempts`] makes.
    fn execute_once(&mut self, stmt: &Statement, params: &[Value], text: &str) -> Result<Outcome> {
        let bound = self.info.engine.global("temptable_max_ram").and_then(|v| v.parse().ok()).unwrap_or(usize::MAX);
        self.info.tmp_memory.start_statement(bound);
        match stmt {
            Statement::Query(q) if select_into(q).is_some() => self.select_into_variables(q, params),
            Statement::Query(q) => self.select(q, params),
            Statement::Insert(_) | Statement::Update(_) | Statement::Delete(_) => self.write(stmt, params),
            Statement::StartTransaction { .. } => {
                self.commit()?;
                self.begin_explicit(None);
                Ok(Outcome::ok())
            }
            Statement::Commit { .. } => {
                self.commit()?;
                Ok(Outcome::ok())
            }
            Statement::Rollback { savepoint: None, .. } => {
                self.rollback();
                Ok(Outcome::ok())
            }
            Statement::Rollback { savepoint: Some(name), chain: false } => {
                self.rollback_to_savepoint(&name.value)?;
                Ok(Outcome::ok())
            }
            Statement::Savepoint { name } => {
                self.savepoint(&name.value);
                Ok(Outcome::ok())
            }
            Statement::ReleaseSavepoint { name } => {
                self.release_savepoint(&name.value)?;
                Ok(Outcome::ok())
            }
            Statement::Set(set) => {
                self.info.row_count = 0;
                self.set(set, params)
            }
            Statement::Use(u) => {
                let name = match u {
                    ast::Use::Object(n) | ast::Use::Database(n) | ast::Use::Schema(n) => {
                        n.0.last().map(|p| p.as_ident().map_or_else(|| p.to_string(), |i| i.value.clone())).unwrap_or_default()
                    }
                    _ => return Err(SqlError::parse("USE")),
                };
                self.use_database(&name)?;
                Ok(Outcome::ok())
            }
            _ => self.ddl(stmt, params, text),
        }
    }

    fn isolation(&self) -> &'static str {
        match &self.txn {
            Some(t) => t.isolation,
            None => self.next_isolation.unwrap_or_else(|| quill_txn::isolation_level(self.info.var("transaction_isolation"))),
        }
    }

    /// The isolation level a transaction starting now gets (SET TRANSACTION without a
    /// scope sets it for the next transaction only).
    fn isolation_for_new_transaction(&mut self) -> &'static str {
        self.next_isolation.take().unwrap_or_else(|| quill_txn::isolation_level(self.info.var("transaction_isolation")))
    }

    /// The transaction this statement runs in (creating an implicit one).
    fn txn_for_statement(&mut self) -> TxnId {
        if self.txn.is_none() {
            self.txn = Some(self.new_txn(false, None));
        }
        self.txn.as_ref().map(|t| t.id).unwrap_or_default()
    }

    /// Register a transaction with the isolation level and access mode it starts with.
    fn new_txn(&mut self, explicit: bool, read_only: Option<bool>) -> Txn {
        let isolation = self.isolation_for_new_transaction();
        let next = self.next_read_only.take();
        let read_only = read_only.or(next).unwrap_or_else(|| self.info.var("transaction_read_only") == "ON");
        let id = self.info.engine.txns.begin(self.info.connection_id, isolation, read_only);
        Txn { id, view: None, writes: crate::write_log::WriteLog::new(), logged: 0, stream: None, explicit, isolation, read_only, savepoints: Vec::new() }
    }

    fn read_view(&mut self) -> ReadView {
        let iso = self.isolation();
        let engine = self.engine();
        let txn = self.txn_for_statement();
        let t = self.txn.as_mut().expect("txn created above");
        if iso == "READ-UNCOMMITTED" {
            return ReadView { txn, read_ts: u64::MAX, uncommitted: true };
        }
        if iso == "READ-COMMITTED"
            && let Some(v) = t.view.take()
        {
            engine.txns.release_view(&v);
        }
        *t.view.get_or_insert_with(|| engine.txns.read_view(txn, false))
    }

    fn begin_explicit(&mut self, read_only: Option<bool>) {
        self.txn = Some(self.new_txn(true, read_only));
    }

    /// End an implicit transaction after a statement, when autocommit says so.
    fn statement_end(&mut self) -> Result<()> {
        let implicit = self.txn.as_ref().is_some_and(|t| !t.explicit);
        if implicit && self.autocommit() {
            self.commit()?;
        }
        Ok(())
    }

    /// Replays one logged DDL statement (recovery), with `db` as the default database.
    ///
    /// # Errors
    /// The statement fails now, which means the log and the catalog disagree.
    pub fn replay_ddl(&mut self, db: Option<String>, sql: &str) -> Result<()> {
        self.replay_ddl_in(db, sql, None)
    }

    /// [`Session::replay_ddl`] with the `sql_mode` and `time_zone` the statement first ran
    /// with (`None`: the server's defaults, for a log written before DDL context).
    ///
    /// # Errors
    /// As [`Session::replay_ddl`]; an unknown time zone or sql_mode.
    pub fn replay_ddl_in(&mut self, db: Option<String>, sql: &str, context: Option<&quill_log::DdlContext>) -> Result<()> {
        if let Some(c) = context {
            for (name, value) in [("sql_mode", &c.sql_mode), ("time_zone", &c.time_zone)] {
                let def = vars::require(name)?;
                let value = vars::normalise(def, &Value::Str(value.clone()))?.value;
                self.info.vars.values.insert(def.name, value);
            }
        }
        // What was logged passed its checks when it ran: a child may come before its parent,
        // a view before its tables.
        self.info.vars.values.insert("foreign_key_checks", "OFF".to_owned());
        self.replaying = true;
        self.info.db = db;
        let statement = text::single(sql.as_bytes(), LexOptions::default())?;
        let statements = self.parse(&statement.text, statement.operators, statement.div_operators)?;
        for statement in statements.iter() {
            self.ddl(statement, &[], sql)?;
        }
        Ok(())
    }

    fn select(&mut self, q: &ast::Query, params: &[Value]) -> Result<Outcome> {
        self.info.engine.status.com_select.fetch_add(1, Ordering::Relaxed);
        let mut lock = q.locks.first().map(|l| {
            let mode = if l.lock_type == ast::LockType::Share { LockMode::Shared } else { LockMode::Exclusive };
            let policy = match l.nonblock {
                Some(ast::NonBlock::Nowait) => WaitPolicy::NoWait,
                Some(ast::NonBlock::SkipLocked) => WaitPolicy::SkipLocked,
                None => WaitPolicy::Wait,
            };
            (mode, policy)
        });
        // SERIALIZABLE: a plain read inside a transaction is a shared-locking read.
        if lock.is_none() && (self.in_transaction() || !self.autocommit()) && self.isolation() == "SERIALIZABLE" {
            lock = Some((LockMode::Shared, WaitPolicy::Wait));
        }
        if lock.is_none() && self.txn.is_none() && self.autocommit() {
            return self.select_autocommit(q, params);
        }
        let (view, spec) = match lock {
            Some((mode, policy)) => {
                let txn = self.txn_for_statement();
                (ReadView::current(txn), Some(self.lock_spec(mode, policy)))
            }
            None => (self.read_view(), None),
        };
        let engine = self.engine();
        let mut sink = if spec.is_none() { self.lend_sink(q) } else { None };
        let result = {
            let catalog = engine.catalog();
            let env = Env { lock: spec, ..Env::new(&catalog, view, params, self.info.now_us(), &self.info, &crate::show::SYSTEM_SCHEMAS) };
            self.plan_and_run(&env, q, sink.as_deref_mut())
        };
        if sink.is_some() {
            self.row_sink = sink;
        }
        if result.as_ref().is_err_and(|e| e.wait().is_some() || e.rolls_back_transaction) {
            return result;
        }
        if reads_tables(q) {
            self.after_read();
        }
        self.statement_end()?;
        let outcome = result?;
        self.info.row_count = -1;
        self.info.found_rows = outcome.result_rows();
        Ok(outcome)
    }

    /// The connection's row sink, when this statement may stream its result.
    fn lend_sink(&mut self, q: &ast::Query) -> Option<Box<dyn crate::sink::RowSink>> {
        if self.may_stream && !calls_lock_functions(q) { self.row_sink.take() } else { None }
    }

    /// Plans and runs a SELECT: a heavy plan off the runtime's worker ([`cost::run_heavy`]),
    /// and a plain (non-locking) one within `max_execution_time` (3024), as in MySQL. With a
    /// `sink`, rows go to it as they are produced (see `sink`).
    fn plan_and_run(&self, env: &Env<'_>, q: &ast::Query, sink: Option<&mut (dyn crate::sink::RowSink + 'static)>) -> Result<Outcome> {
        let (plan, _) = query::plan_query(env, q, &[])?;
        let limit_ms = if env.lock.is_none() { vars::int_value(&self.info.vars, "max_execution_time") } else { 0 };
        self.info.interrupt.set_deadline((limit_ms > 0).then(|| Instant::now() + Duration::from_millis(limit_ms)));
        let heavy = cost::is_heavy(&plan, env.catalog);
        let result = match sink {
            None => cost::run_heavy(heavy, || query::run_select(&plan, env, None)).map(Outcome::Rows),
            Some(sink) => {
                // Nothing reaches the client before the newest commit it could see is durable
                // (a query that reads no table saw none).
                let mut rows = 0;
                sink.begin(&plan.columns, if reads_tables(q) { self.read_durability() } else { None })
                    .and_then(|()| {
                        cost::run_heavy(heavy, || {
                            query::run_select_into(&plan, env, None, &mut |row| {
                                rows += 1;
                                sink.row(&row)
                            })
                        })
                    })
                    .map(|()| Outcome::Streamed { rows })
            }
        };
        self.info.interrupt.set_deadline(None);
        result
    }

    /// How this statement's scans lock, in `mode`: gaps at REPEATABLE READ and
    /// SERIALIZABLE; strict snapshot isolation when asked for and a snapshot exists.
    fn lock_spec(&self, mode: LockMode, policy: WaitPolicy) -> LockSpec {
        let t = self.txn.as_ref().expect("a locking statement runs in a transaction");
        let gaps = matches!(t.isolation, "REPEATABLE-READ" | "SERIALIZABLE");
        let snapshot = if t.isolation == "REPEATABLE-READ" && self.info.var("innodb_snapshot_isolation") == "ON" { t.view.map(|v| v.read_ts) } else { None };
        LockSpec { txn: t.id, mode, policy, gaps, semi_consistent: !gaps, snapshot }
    }

    /// The statement read rows (a query that names no table, `SELECT @@server_id`, reads
    /// none and never waits): its reply waits until the newest commit it could have seen
    /// is as durable as the flush mode promises (locks are released before that).
    fn after_read(&mut self) {
        if let Some((end, mode)) = self.read_durability() {
            self.wait_for_log(end, mode, crate::commit_acks::AckWait::Read);
        }
    }

    /// The log position (and flush mode) a reader's reply must wait for: the end of the
    /// newest commit it could have seen, when that is not yet durable, or not yet
    /// acknowledged by semi-sync replicas at AFTER_SYNC (`commit_acks`).
    fn read_durability(&self) -> Option<(quill_log::Lsn, quill_log::FlushMode)> {
        let engine = &self.info.engine;
        let end = engine.last_commit_end.load(Ordering::Acquire);
        let log = engine.log.get()?;
        let unacknowledged = || !self.replica_applier && engine.commit_acks.get().is_some_and(|a| a.read_must_wait(end));
        (end > log.durable_lsn() || unacknowledged()).then(|| (end, log.flush_mode()))
    }

    /// An autocommit, non-locking SELECT outside any transaction: no transaction is
    /// registered, only its read view (so purge keeps what it reads), for the statement.
    fn select_autocommit(&mut self, q: &ast::Query, params: &[Value]) -> Result<Outcome> {
        let engine = self.engine();
        let catalog = engine.catalog();
        let view = engine.txns.read_view(0, self.isolation() == "READ-UNCOMMITTED");
        let mut sink = self.lend_sink(q);
        let env = Env::new(&catalog, view, params, self.info.now_us(), &self.info, &crate::show::SYSTEM_SCHEMAS);
        let outcome = self.plan_and_run(&env, q, sink.as_deref_mut());
        if sink.is_some() {
            self.row_sink = sink;
        }
        engine.txns.release_view(&view);
        let outcome = outcome?;
        if reads_tables(q) {
            self.after_read();
        }
        self.info.row_count = -1;
        self.info.found_rows = outcome.result_rows();
        Ok(outcome)
    }

    fn write(&mut self, stmt: &Statement, params: &[Value]) -> Result<Outcome> {
        let status = &self.info.engine.status;
        match stmt {
            Statement::Insert(_) => status.com_insert.fetch_add(1, Ordering::Relaxed),
            Statement::Update(_) => status.com_update.fetch_add(1, Ordering::Relaxed),
            _ => status.com_delete.fetch_add(1, Ordering::Relaxed),
        };
        // INSERT ... SELECT copies a whole query result: off the runtime's worker.
        let heavy = matches!(stmt, Statement::Insert(i) if i.source.as_deref().is_some_and(|q| !matches!(q.body.as_ref(), ast::SetExpr::Values(_))));
        self.run_dml(params, heavy, None, |catalog, cx| match stmt {
            Statement::Insert(i) => dml::insert(catalog, cx, i),
            Statement::Update(u) => dml::update(catalog, cx, u),
            Statement::Delete(d) => dml::delete(catalog, cx, d),
            _ => unreachable!("dispatched on statement kind"),
        })
    }

    /// Why this session may not write now: `super_read_only`, or `read_only` for an account
    /// without SUPER (1290, as MySQL). The replica applier writes regardless.
    fn read_only_refusal(&self) -> Option<SqlError> {
        if self.replica_applier {
            return None;
        }
        let engine = &self.info.engine;
        let option = if engine.global("super_read_only").as_deref() == Some("ON") {
            "--super-read-only"
        } else if engine.global("read_only").as_deref() == Some("ON") && !self.has_super() {
            "--read-only"
        } else {
            return None;
        };
        Some(SqlError::new(
            crate::session::server_files::ER_OPTION_PREVENTS_STATEMENT,
            format!("The MySQL server is running with the {option} option so it cannot execute this statement"),
        ))
    }

    /// Whether the session's account holds SUPER: root, the one account there is.
    fn has_super(&self) -> bool {
        self.global_privileges() & crate::accounts::SUPER != 0
    }

    /// Runs one writing statement (`f`) in the statement's transaction, with statement
    /// atomicity (a failed statement undoes exactly what it pushed), then the statement's end
    /// (autocommit). `heavy` runs it off the runtime's worker; `strict` overrides the
    /// session's strict mode (LOAD DATA LOCAL, whose data errors are warnings).
    fn run_dml(
        &mut self,
        params: &[Value],
        heavy: bool,
        strict: Option<bool>,
        f: impl FnOnce(&Catalog, &mut DmlCx<'_>) -> Result<dml::DmlResult>,
    ) -> Result<Outcome> {
        if let Some(e) = self.read_only_refusal() {
            return Err(e);
        }
        let txn = self.txn_for_statement();
        if self.txn.as_ref().is_some_and(|t| t.read_only) {
            let e = SqlError::new(codes::ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION, "Cannot execute statement in a READ ONLY transaction.");
            return self.statement_end().and(Err(e));
        }
        let lock = self.lock_spec(LockMode::Exclusive, WaitPolicy::Wait);
        let engine = self.engine();
        let mut undo = crate::write_log::WriteLog::new();
        let mut warnings = Vec::new();
        let strict = strict.unwrap_or_else(|| self.info.strict());
        self.info.last_insert_id_assigned.set(false);
        let result = {
            let catalog = engine.catalog();
            let mut cx = DmlCx {
                txn,
                info: &self.info,
                params,
                now_us: self.info.now_us(),
                undo: &mut undo,
                warnings: &mut warnings,
                strict,
                found_rows: self.client_found_rows,
                lock,
                read_uncommitted: self.isolation() == "READ-UNCOMMITTED",
            };
            let r = cost::run_heavy(heavy, || f(&catalog, &mut cx));
            if r.is_err() {
                // Statement atomicity: undo exactly what this statement pushed.
                for (tid, pk) in undo.iter().rev() {
                    if let Some(t) = catalog.table_by_id(tid) {
                        t.data.undo_last(txn, pk);
                    }
                }
            }
            r
        };
        self.warnings.extend(warnings);
        match result {
            Ok(r) => {
                engine.txns.locks.add_modified(txn, undo.len());
                if let Some(t) = self.txn.as_mut() {
                    t.writes.append(undo);
                }
                self.stream_if_large()?;
                if let Some(id) = r.last_insert_id {
                    self.info.last_insert_id.set(id);
                }
                // The OK packet's insert id, by MySQL's rule: the first value generated; else
                // the argument of LAST_INSERT_ID(expr) if the statement called it; else the
                // AUTO_INCREMENT column's value in the last row written (given explicitly).
                let insert_id = match r.last_insert_id {
                    Some(id) => id,
                    None if self.info.last_insert_id_assigned.get() => self.info.last_insert_id.get(),
                    None => r.last_auto_value.unwrap_or(0),
                };
                self.after_read();
                self.info.row_count = r.affected as i64;
                self.statement_end()?;
                Ok(Outcome::Done { affected: r.affected, last_insert_id: insert_id, info: r.info })
            }
            Err(e) if e.wait().is_some() || e.rolls_back_transaction => Err(e),
            // The statement's own error wins over a commit error (there is nothing left to commit).
            Err(e) => self.statement_end().and(Err(e)),
        }
    }

    /// A parsed SET (a prepared `SET @a = ?`, say): every assignment is checked before any
    /// is applied, as in MySQL.
    fn set(&mut self, set: &ast::Set, params: &[Value]) -> Result<Outcome> {
        let plans = match set {
            ast::Set::SetNames { charset_name, collation_name } => vec![names_plan(&charset_name.value, collation_name.as_deref())?],
            ast::Set::SetNamesDefault { .. } => vec![names_plan("DEFAULT", None)?],
            ast::Set::SingleAssignment { scope, hivevar: _, variable, values } => {
                let v = values.first().ok_or_else(|| SqlError::parse("SET"))?;
                vec![self.plan_assignment(scope.as_ref(), variable, v, params)?]
            }
            ast::Set::MultipleAssignments { assignments } => {
                assignments.iter().map(|a| self.plan_assignment(a.scope.as_ref(), &a.name, &a.value, params)).collect::<Result<_>>()?
            }
            ast::Set::SetTransaction { modes, session, .. } => {
                for m in modes {
                    if let ast::TransactionMode::IsolationLevel(l) = m {
                        let level = match l {
                            ast::TransactionIsolationLevel::ReadUncommitted => "READ-UNCOMMITTED",
                            ast::TransactionIsolationLevel::ReadCommitted => "READ-COMMITTED",
                            ast::TransactionIsolationLevel::RepeatableRead => "REPEATABLE-READ",
                            _ => "SERIALIZABLE",
                        };
                        if *session {
                            self.info.vars.values.insert("transaction_isolation", level.into());
                            self.info.vars.values.insert("tx_isolation", level.into());
                        }
                    }
                }
                return Ok(Outcome::ok());
            }
            other => return Err(SqlError::unsupported(format!("{other}"))),
        };
        self.apply_set_plans(plans)
    }

    /// `SET item, item, ...` as MySQL reads it: any mix of assignments (`[GLOBAL | SESSION]
    /// name = expr`, `@@scope.name = expr`, `@user = expr`), `NAMES cs [COLLATE c]` and
    /// `CHARACTER SET cs`, in any order. A scope keyword holds for the assignments after
    /// it. Every item is checked (and every value computed) before any is applied.
    fn set_statement(&mut self, statement: &StatementText) -> Result<Outcome> {
        let text = crate::parse::rewrite_set_assignment(&statement.text);
        let body = text.trim_start()[3..].trim();
        let mut scope: Option<ast::ContextModifier> = None;
        let mut plans = Vec::new();
        for item in split_top_level_commas(body) {
            let words: Vec<&str> = item.split_whitespace().collect();
            let up = |i: usize| words.get(i).map(|w| w.to_ascii_uppercase()).unwrap_or_default();
            let plan = match up(0).as_str() {
                "NAMES" => {
                    let collate = (up(2) == "COLLATE").then(|| words.get(3).copied()).flatten();
                    if words.len() != if collate.is_some() { 4 } else { 2 } {
                        return Err(SqlError::parse(item));
                    }
                    names_plan(words[1], collate)?
                }
                "CHARSET" if words.len() == 2 => character_set_plan(words[1])?,
                "CHARACTER" if up(1) == "SET" && words.len() == 3 => character_set_plan(words[2])?,
                _ => {
                    let mut assignment = item;
                    let keyword = up(0);
                    if matches!(keyword.as_str(), "GLOBAL" | "SESSION" | "LOCAL" | "PERSIST" | "PERSIST_ONLY") {
                        scope = Some(if keyword == "GLOBAL" || keyword.starts_with("PERSIST") {
                            ast::ContextModifier::Global
                        } else {
                            ast::ContextModifier::Session
                        });
                        assignment = item.trim_start()[keyword.len()..].trim_start();
                    }
                    let parsed = crate::parse::parse(&format!("SET {assignment}"), statement.operators, statement.div_operators)?;
                    match parsed.first() {
                        Some(Statement::Set(ast::Set::SingleAssignment { variable, values, .. })) if parsed.len() == 1 && values.len() == 1 => {
                            self.plan_assignment(scope.as_ref(), variable, &values[0], &[])?
                        }
                        _ => return Err(SqlError::parse(item)),
                    }
                }
            };
            plans.push(plan);
        }
        if plans.is_empty() {
            return Err(SqlError::parse(""));
        }
        self.info.row_count = 0;
        self.apply_set_plans(plans)
    }

    /// Apply a SET's items, every one checked already, in order.
    fn apply_set_plans(&mut self, plans: Vec<SetPlan>) -> Result<Outcome> {
        for plan in plans {
            self.apply_set(plan)?;
        }
        Ok(Outcome::ok())
    }

    /// Check one assignment and compute its value, changing nothing.
    fn plan_assignment(&mut self, scope: Option<&ast::ContextModifier>, name: &ast::ObjectName, value: &ast::Expr, params: &[Value]) -> Result<SetPlan> {
        let parts: Vec<String> = name.0.iter().map(|p| p.as_ident().map_or_else(|| p.to_string(), |i| i.value.clone())).collect();
        let (mut global, var) = match parts.as_slice() {
            [one] if one.starts_with("@@") => (false, one.trim_start_matches("@@").to_owned()),
            [one] if one.starts_with('@') => {
                let v = self.eval_const(value, params)?;
                return Ok(SetPlan::User { name: one[1..].to_ascii_lowercase(), value: v });
            }
            [one] => (matches!(scope, Some(ast::ContextModifier::Global)), one.clone()),
            [s, v] if s.eq_ignore_ascii_case("@@global") || s.eq_ignore_ascii_case("@@persist") => (true, v.clone()),
            [s, v] if s.eq_ignore_ascii_case("@@session") || s.eq_ignore_ascii_case("@@local") => (false, v.clone()),
            _ => return Err(SqlError::parse(&name.to_string())),
        };
        if parts.len() == 1 && parts[0].starts_with("@@") && matches!(scope, Some(ast::ContextModifier::Global)) {
            global = true;
        }
        let def = vars::require(&var)?;
        let v = match value {
            ast::Expr::Identifier(i) if i.quote_style.is_none() && i.value.eq_ignore_ascii_case("DEFAULT") => match def.kind {
                vars::Kind::Int(_) | vars::Kind::IntChoice(_) => def.default.parse::<u64>().map_or_else(|_| Value::Str(def.default.to_owned()), Value::UInt),
                _ => Value::Str(def.default.to_owned()),
            },
            ast::Expr::Identifier(i) if i.quote_style.is_none() && !i.value.starts_with('@') => Value::Str(i.value.clone()),
            other => self.eval_const(other, params)?,
        };
        if def.effect == vars::Effect::ReadOnly {
            return Err(SqlError::new((1238, "HY000"), format!("Variable '{}' is a read only variable", def.name)));
        }
        if global && def.scope == vars::Scope::Session {
            return Err(SqlError::new(
                codes::ER_INCORRECT_GLOBAL_LOCAL_VAR,
                format!("Variable '{}' is a SESSION variable and can't be used with SET GLOBAL", def.name),
            ));
        }
        if !global && def.scope == vars::Scope::Global {
            return Err(SqlError::new(codes::ER_GLOBAL_VARIABLE, format!("Variable '{}' is a GLOBAL variable and should be set with SET GLOBAL", def.name)));
        }
        let normalised = vars::normalise(def, &v)?;
        Ok(SetPlan::System { def, global, normalised })
    }

    /// `SELECT ... INTO @a, @b` in either of MySQL 8's places (the SQL parser takes only the
    /// one before FROM): `query` is the statement without the clause.
    async fn select_into_text(&mut self, statement: &StatementText, query: &str, names: Vec<String>) -> Result<Outcome> {
        let parsed = self.parse(&rewrite_lock_in_share_mode(query), statement.operators, statement.div_operators)?;
        let mut stmt = parsed.first().cloned().ok_or_else(|| SqlError::parse(query))?;
        let Statement::Query(q) = &mut stmt else { return Err(SqlError::parse(query)) };
        let ast::SetExpr::Select(select) = q.body.as_mut() else {
            return Err(SqlError::new((1064, "42000"), "You have an error in your SQL syntax: INTO in a UNION"));
        };
        let targets = names.iter().map(|n| ast::Expr::Identifier(ast::Ident::new(format!("@{n}")))).collect();
        select.into = Some(ast::SelectInto { temporary: false, unlogged: false, table: false, targets });
        self.execute(&stmt, &[], &statement.text).await
    }

    /// `SELECT ... INTO @a, @b`: the one row the query gives is assigned to the user
    /// variables; no row leaves them as they were, with warning 1329; more than one is 1172
    /// (the first assigned);
    /// a count of variables unlike the columns' is 1222; a name without `@` is 1327 (local
    /// variables exist in stored programs only).
    fn select_into_variables(&mut self, q: &ast::Query, params: &[Value]) -> Result<Outcome> {
        let into = select_into(q).expect("checked by the caller");
        let names: Vec<String> = into
            .targets
            .iter()
            .map(|t| {
                let text = t.to_string();
                match text.strip_prefix('@') {
                    Some(name) if !name.starts_with('@') => Ok(name.trim_matches(|c| c == '`' || c == '\'' || c == '"').to_ascii_lowercase()),
                    _ => Err(SqlError::new((1327, "42000"), format!("Undeclared variable: {text}"))),
                }
            })
            .collect::<Result<_>>()?;
        let mut bare = q.clone();
        if let ast::SetExpr::Select(select) = bare.body.as_mut() {
            select.into = None;
        }
        let may_stream = std::mem::replace(&mut self.may_stream, false);
        let outcome = self.select(&bare, params);
        self.may_stream = may_stream;
        let Outcome::Rows(rs) = outcome? else { return Err(SqlError::internal("SELECT ... INTO gave no result set")) };
        if rs.columns.len() != names.len() {
            return Err(SqlError::new((1222, "21000"), "The used SELECT statements have a different number of columns"));
        }
        let count = rs.rows.len();
        // As MySQL's: the first row is assigned before a second one is found to be an error.
        match rs.rows.into_iter().next() {
            None => self.warnings.push(Warning { level: "Warning", code: 1329, message: "No data - zero rows fetched, selected, or processed".into() }),
            Some(row) => {
                for (name, value) in names.into_iter().zip(row) {
                    self.info.user_vars.borrow_mut().insert(name, value);
                }
            }
        }
        if count > 1 {
            return Err(SqlError::new((1172, "42000"), "Result consisted of more than one row"));
        }
        Ok(Outcome::Done { affected: count.min(1) as u64, last_insert_id: 0, info: String::new() })
    }

    /// Apply one checked item of a SET.
    fn apply_set(&mut self, plan: SetPlan) -> Result<()> {
        match plan {
            SetPlan::User { name, value } => {
                self.info.user_vars.borrow_mut().insert(name, value);
            }
            SetPlan::Names { charset, collation } => {
                for v in ["character_set_client", "character_set_connection", "character_set_results"] {
                    self.info.vars.values.insert(v, charset.name().to_owned());
                }
                self.set_connection_collation(&collation);
            }
            SetPlan::CharacterSet { charset } => {
                self.info.vars.values.insert("character_set_client", charset.name().to_owned());
                self.info.vars.values.insert("character_set_results", charset.name().to_owned());
                let database = Charset::from_name(self.info.var("character_set_database")).unwrap_or_default();
                self.info.vars.values.insert("character_set_connection", database.name().to_owned());
                self.set_connection_collation(database.default_collation());
            }
            SetPlan::System { def, global, normalised } => {
                let value = normalised.value;
                if def.name == "autocommit" && !global && value == "ON" {
                    // Turning autocommit on commits the open transaction.
                    self.commit()?;
                }
                if def.effect == vars::Effect::Inert {
                    self.warnings.push(Warning {
                        level: "Warning",
                        code: 1287,
                        message: format!("'{}' is accepted for compatibility; Quill does not act on it", def.name),
                    });
                }
                self.warnings.extend(normalised.warning);
                if global {
                    self.require_global(crate::accounts::SUPER, "SUPER or SYSTEM_VARIABLES_ADMIN")?;
                    crate::durability::apply_global(&self.info.engine, def.name, &value)?;
                }
                let pair: [&'static str; 2];
                let names: &[&'static str] = match def.name {
                    "transaction_isolation" | "tx_isolation" => &["transaction_isolation", "tx_isolation"],
                    "transaction_read_only" | "tx_read_only" => &["transaction_read_only", "tx_read_only"],
                    // As MySQL: super_read_only implies read_only, and read_only=OFF clears both.
                    "super_read_only" if global && value == "ON" => &["super_read_only", "read_only"],
                    "read_only" if global && value == "OFF" => &["read_only", "super_read_only"],
                    "character_set_connection" if !global => {
                        let charset = Charset::from_name(&value).unwrap_or_default();
                        self.set_connection_collation(charset.default_collation());
                        &["character_set_connection"]
                    }
                    "collation_connection" if !global => {
                        self.set_connection_collation(&value);
                        return Ok(());
                    }
                    n => match vars::alias(n) {
                        Some(other) => {
                            pair = [n, other];
                            &pair
                        }
                        None => std::slice::from_ref(&def.name),
                    },
                };
                for &n in names {
                    if global {
                        self.info.engine.globals.write().values.insert(n, value.clone());
                    } else {
                        self.info.vars.values.insert(n, value.clone());
                    }
                }
                if global
                    && def.name.starts_with("rpl_semi_sync_")
                    && let Some(acks) = self.info.engine.commit_acks.get()
                {
                    acks.reload();
                }
            }
        }
        Ok(())
    }

    /// `collation_connection` (and the collation string literals compare under).
    fn set_connection_collation(&mut self, name: &str) {
        self.info.vars.values.insert("collation_connection", name.to_ascii_lowercase());
        self.info.connection_collation = quill_storage::Collation::from_name(name).unwrap_or_default();
    }

    /// The client's handshake named its character set by collation number: as `SET NAMES`.
    pub fn set_client_collation_id(&mut self, id: u8) {
        if let Some(charset) = Charset::from_collation_id(id) {
            let collation = match id {
                45 => "utf8mb4_general_ci",
                46 => "utf8mb4_bin",
                83 => "utf8mb3_bin",
                47 => "latin1_bin",
                48 => "latin1_general_ci",
                _ => charset.default_collation(),
            };
            let _ = self.apply_set(SetPlan::Names { charset, collation: collation.to_owned() });
        }
    }

    fn eval_const(&self, e: &ast::Expr, params: &[Value]) -> Result<Value> {
        let catalog = self.info.engine.catalog();
        let env = Env::new(&catalog, ReadView::current(0), params, self.info.now_us(), &self.info, &crate::show::SYSTEM_SCHEMAS);
        let scope = crate::bind::Scope::default();
        crate::bind::Binder::new(&env, &scope, "field list").bind(e)?.eval(&env, &crate::expr::RowCtx::new(&[]))
    }

    fn ddl(&mut self, stmt: &Statement, params: &[Value], text: &str) -> Result<Outcome> {
        if !is_ddl(stmt) {
            // Refused before the implicit commit: an unsupported statement (ROLLBACK TO
            // SAVEPOINT, say) must not commit what the client meant to undo.
            return Err(SqlError::unsupported(first_words(&stmt.to_string()).to_string()));
        }
        if !params.is_empty() {
            return Err(SqlError::new((1295, "HY000"), "This command is not supported in the prepared statement protocol yet"));
        }
        if let Some(e) = self.read_only_refusal() {
            return Err(e);
        }
        let engine = self.engine();
        // A checkpoint copying rows holds the gate: wait for it without blocking this thread.
        let Some(_gate) = engine.ddl_gate.try_write() else { return Err(SqlError::must_wait(Wait::DdlGate)) };
        // DDL commits the open transaction first.
        self.commit()?;
        let mut created_by_select = match stmt {
            Statement::CreateTable(ct) if ct.query.is_some() => {
                query::resolve_table_name(&self.info, &ct.name).ok().filter(|(db, t)| engine.catalog().table(db, t).is_err())
            }
            _ => None,
        };
        let mut catalog = Catalog::clone(&engine.catalog());
        // The statement changes a copy of the catalog, installed once its record is appended;
        // a full disk refuses the statement first (the log keeps DDL_RESERVE_BYTES for DDL;
        // only CREATE TABLE ... SELECT can outgrow it, and then its copy is dropped below).
        if let Some(log) = engine.log.get()
            && !log.wait_for_room(DDL_RECORD_BYTES_BASE + text.len() as u64)
        {
            return Err(SqlError::new(codes::ER_DISK_FULL, "Disk full (commit log); waiting for someone to free some space..."));
        }
        let mut warnings = Vec::new();
        let info = &self.info;
        let mut affected = 0;
        let r = match stmt {
            Statement::CreateDatabase { db_name, if_not_exists, default_charset, default_collation, .. } => {
                ddl::database_collation(default_charset.as_deref(), default_collation.as_deref(), self.server_collation())
                    .and_then(|collation| ddl::create_database(&mut catalog, &ident_of(db_name), *if_not_exists, collation, &mut warnings))
            }
            Statement::CreateSchema { schema_name, if_not_exists, .. } => {
                ddl::create_database(&mut catalog, schema_name.to_string().trim_matches('`'), *if_not_exists, self.server_collation(), &mut warnings)
            }
            Statement::AlterSchema(alter) => {
                let name = if alter.name.0.is_empty() { self.info.db.clone().ok_or_else(SqlError::no_db) } else { Ok(ident_of(&alter.name)) };
                name.and_then(|name| match alter.operations.as_slice() {
                    [ast::AlterSchemaOperation::SetOptionsParens { options }] => ddl::alter_database(&mut catalog, &name, options),
                    _ => Err(SqlError::unsupported("ALTER DATABASE")),
                })
            }
            Statement::Drop { object_type: ast::ObjectType::Database | ast::ObjectType::Schema, if_exists, names, .. } => {
                // The default database is cleared below once the drop succeeded.
                ddl::drop_database(&mut catalog, &ident_of(&names[0]), *if_exists, &mut warnings).map(|n| affected = n)
            }
            Statement::CreateTable(ct) => ddl::create_table(&mut catalog, info, (params, self.info.now_us()), ct, &mut warnings).and_then(|()| {
                let Some(make) = self.replica_create_rows.take() else { return Ok(()) };
                let (db, name) = query::resolve_table_name(info, &ct.name)?;
                if engine.catalog().table(&db, &name).is_ok() {
                    // IF NOT EXISTS found the table: nothing is created, nothing inserted
                    // (as MySQL's CREATE TABLE IF NOT EXISTS ... SELECT does).
                    return Ok(());
                }
                let table = catalog.table(&db, &name)?;
                ddl::fill_new_table(table, make(table)?, &mut warnings)?;
                created_by_select = Some((db, name));
                Ok(())
            }),
            Statement::Drop { object_type: ast::ObjectType::Table, if_exists, names, .. } => {
                ddl::drop_tables(&mut catalog, info, names, *if_exists, &mut warnings)
            }
            Statement::Drop { object_type: ast::ObjectType::Index, names, table: Some(t), .. } => {
                ddl::drop_index(&mut catalog, info, &ident_of(&names[0]), t, &mut warnings)
            }
            Statement::Truncate(t) => match t.table_names.first() {
                Some(n) => ddl::truncate(&mut catalog, info, &n.name),
                None => Err(SqlError::parse("TRUNCATE")),
            },
            Statement::CreateIndex(ci) => ddl::create_index(&mut catalog, info, ci, &mut warnings),
            Statement::AlterTable(at) => ddl::alter_table(&mut catalog, info, self.info.now_us(), &at.name, &at.operations, &mut warnings),
            Statement::CreateView(cv) => {
                let v = view_ddl::ViewStatement {
                    name: &cv.name,
                    columns: cv.columns.iter().map(|c| c.name.value.clone()).collect(),
                    query: &cv.query,
                    or_replace: cv.or_replace,
                    alter: false,
                    params: cv.params.as_ref(),
                };
                view_ddl::create_view(&mut catalog, info, self.info.now_us(), &v, !self.replaying)
            }
            Statement::AlterView { name, columns, query, .. } => {
                let v = view_ddl::ViewStatement {
                    name,
                    columns: columns.iter().map(|c| c.value.clone()).collect(),
                    query,
                    or_replace: true,
                    alter: true,
                    params: None,
                };
                view_ddl::create_view(&mut catalog, info, self.info.now_us(), &v, !self.replaying)
            }
            Statement::Drop { object_type: ast::ObjectType::View, if_exists, names, .. } => {
                view_ddl::drop_views(&mut catalog, info, names, *if_exists, &mut warnings)
            }
            Statement::RenameTable(pairs) => ddl::rename_tables(&mut catalog, info, pairs),
            other => Err(SqlError::unsupported(first_words(&other.to_string()).to_string())),
        };
        // Logged and installed under `commit_order`, so the record and the catalog it makes
        // take one place among commits; durable before the reply in every flush mode, as
        // MySQL's DDL is. Not logged means not done: the copy is dropped.
        if r.is_ok() {
            let order = engine.commit_order.lock();
            let mut gtid_row = None;
            let logged = engine.log.get().map(|log| {
                let context = quill_log::DdlContext { sql_mode: self.info.var("sql_mode").to_owned(), time_zone: self.info.var("time_zone").to_owned() };
                // A view's statement is logged with its definer and its tables qualified, as
                // MySQL binlogs it: a replay, or a replica, makes the same view.
                let text = view_ddl::logged_statement(stmt, &catalog, info).unwrap_or_else(|| text.to_owned());
                let mut changes = crate::durability::ddl_changes(&catalog, self.info.db.as_deref(), text, context, created_by_select.as_ref());
                // A replicated statement's GTID goes in its own record: its row of the
                // replica's GTID table, then where it came from.
                if let Some(origin) = self.replica_origin.take() {
                    gtid_row = crate::replica_control::gtid_row(&catalog, &origin);
                    if let Some((key, row)) = &gtid_row {
                        let (db, table) = crate::replica_control::GTID_TABLE;
                        changes.push(quill_log::Change::Insert { db: db.into(), table: table.into(), key: key.clone(), row: quill_storage::log_row(row) });
                    }
                    changes.push(quill_log::Change::Origin(origin));
                }
                log.append_ddl(unix_micros(), &changes, self.replica_applier)
            });
            match logged {
                Some(Err(e)) => {
                    drop(order);
                    let table = created_by_select.map(|(_, name)| name).unwrap_or_default();
                    return Err(crate::durability::log_error(&e, &table));
                }
                Some(Ok(at)) => {
                    // Records before a statement that changed a table's definition may not
                    // read with the definitions after it (the binary log after a restart).
                    if engine.schemas.lock().record(at.lsn, &catalog) {
                        engine.definitions_from.fetch_max(at.end, Ordering::AcqRel);
                    }
                    if let Some((key, row)) = gtid_row
                        && let Ok(table) = catalog.table(crate::replica_control::GTID_TABLE.0, crate::replica_control::GTID_TABLE.1)
                    {
                        // Committed with the statement, as recovery replays the record.
                        let ts = engine.txns.commit_ts_to_assign();
                        table.data.apply_committed(key, Some(row), ts);
                        engine.txns.publish_commit(ts);
                    }
                    engine.install_catalog(catalog);
                    drop(order);
                    self.wait_for_log(at.end, quill_log::FlushMode::AtCommit, crate::commit_acks::AckWait::Commit);
                }
                None => engine.install_catalog(catalog),
            }
        }
        self.warnings.extend(warnings);
        r?;
        self.info.row_count = 0;
        if let Statement::Drop { object_type: ast::ObjectType::Database | ast::ObjectType::Schema, names, .. } = stmt
            && self.info.db.as_deref() == Some(ident_of(&names[0]).as_str())
        {
            self.info.db = None;
        }
        Ok(Outcome::Done { affected, last_insert_id: 0, info: String::new() })
    }

    /// Statements handled before the parser: SHOW, transaction control, KILL...
    async fn recognise(&mut self, statement: &StatementText) -> Option<Result<Outcome>> {
        let sql = statement.text.as_str();
        let words = crate::words::words(sql);
        let upper: Vec<String> = words.iter().take(6).map(|w| w.to_ascii_uppercase()).collect();
        let up = |i: usize| upper.get(i).map_or("", String::as_str);
        if matches!(up(0), "CREATE" | "ALTER" | "DROP" | "GRANT" | "REVOKE" | "SHOW" | "SET" | "FLUSH")
            && let Some(statement) = crate::accounts::statements::parse(sql)
        {
            return Some(match statement {
                Ok(statement) => self.account_statement(statement).await,
                Err(e) => Err(e),
            });
        }
        match up(0) {
            "PREPARE" if words.len() >= 4 => Some(self.sql_prepare(statement).await),
            "EXECUTE" if words.len() >= 2 => Some(self.sql_execute(statement).await),
            "DEALLOCATE" | "DROP" if up(1) == "PREPARE" && words.len() == 3 => Some(self.sql_deallocate(&words)),
            "BEGIN" if words.len() == 1 || up(1) == "WORK" => {
                if let Err(e) = self.unlock_tables().and_then(|()| self.commit()) {
                    return Some(Err(e));
                }
                self.begin_explicit(None);
                Some(Ok(Outcome::ok()))
            }
            "COMMIT" if words.len() <= 2 => Some(self.commit().map(|()| Outcome::ok())),
            "ROLLBACK" if words.len() <= 2 => {
                self.rollback();
                Some(Ok(Outcome::ok()))
            }
            "START" if up(1) == "TRANSACTION" => Some(self.start_transaction(sql)),
            "SHOW" => Some(self.show(statement, &words)),
            "DESCRIBE" | "DESC" if words.len() >= 2 => {
                let (db, t) = self.split_name(words[1]);
                Some(
                    db.and_then(|db| self.require_any_on_table(&db, &t).map(|()| db))
                        .and_then(|db| show::show_columns(&self.info.engine.catalog(), &self.info, &db, &t, false, None))
                        .map(Outcome::Rows),
                )
            }
            "EXPLAIN" if up(1) != "FORMAT" => Some(self.explain(statement).await),
            "KILL" => Some(self.kill(&words)),
            "FLUSH" => self.flush(sql),
            "CHECKSUM" if checksum::is_checksum_table(&upper) => Some(self.checksum_table(sql).await),
            "CHECK" | "ANALYZE" | "OPTIMIZE" | "REPAIR" if upper.iter().skip(1).take(2).any(|w| w == "TABLE" || w == "TABLES") => {
                Some(self.table_maintenance(sql))
            }
            "LOCK" | "UNLOCK" if table_locks::is_table_lock_statement(&upper) => Some(self.table_lock_statement(sql).await),
            w if (w == "SELECT" || w.starts_with('('))
                && let Some((query, names)) = crate::into_file::find_into_variables(sql) =>
            {
                Some(self.select_into_text(statement, &query, names).await)
            }
            w if (w == "SELECT" || w == "WITH" || w.starts_with('(')) && crate::into_file::may_write_file(sql) => match crate::into_file::find(sql) {
                Ok(Some(into)) => Some(self.select_into_file(statement, into).await),
                Ok(None) => None,
                Err(e) => Some(Err(e)),
            },
            "LOAD" if crate::load_data::is_load_data(sql) => {
                let r = self.load_data(sql).await;
                if self.txn.is_none() {
                    self.info.engine.mdl.release_all(self.info.connection_id);
                }
                Some(r)
            }
            "SET" if up(1) == "TRANSACTION" || (matches!(up(1), "GLOBAL" | "SESSION" | "LOCAL") && up(2) == "TRANSACTION") => {
                Some(self.set_transaction(&words))
            }
            // A SET calling a function that may wait runs parsed, under the session's
            // wait-and-run-again loop (`statement_waits`).
            "SET" if !matches!(up(1), "PASSWORD" | "ROLE" | "DEFAULT" | "RESOURCE") && !calls_waiting_function(sql) => Some(self.set_statement(statement)),
            "DO" => {
                // DO evaluates and answers OK: its SELECT must not stream a result set.
                let may_stream = std::mem::replace(&mut self.may_stream, false);
                let outcome = self.select_like(statement, 2).await.map(|_| Outcome::ok());
                self.may_stream = may_stream;
                Some(outcome)
            }
            "ALTER" if words.len() == 5 && up(1) == "TABLE" && matches!(up(3), "DISABLE" | "ENABLE") && up(4).trim_end_matches(';') == "KEYS" => {
                Some(self.alter_keys(words[2]))
            }
            "PURGE" if matches!(up(1), "BINARY" | "MASTER") && up(2) == "LOGS" => Some(self.purge_binary_logs(statement, &words).await),
            "CHANGE" | "START" | "STOP" | "RESET" => crate::replica_control::parse(sql, &upper).map(|r| r.and_then(|s| self.replica_statement(s))),
            _ => None,
        }
    }

    /// `PURGE {BINARY | MASTER} LOGS {TO 'file' | BEFORE datetime}`: a warning (1867) names
    /// each file it had to keep, as MySQL's does for a file a replica reads.
    async fn purge_binary_logs(&mut self, statement: &StatementText, words: &[&str]) -> Result<Outcome> {
        self.require_global(crate::accounts::SUPER, "SUPER or BINLOG_ADMIN")?;
        let Some(binlog) = self.engine().binary_log.get().cloned() else {
            return Err(SqlError::new((1381, "HY000"), "You are not using binary logging"));
        };
        let rest = words.get(4..).unwrap_or_default().join(" ");
        let (to, before) = match words.get(3).map(|w| w.to_ascii_uppercase()).as_deref() {
            Some("TO") if !rest.is_empty() => (Some(rest.trim_matches(|c| c == '\'' || c == '"').to_owned()), None),
            Some("BEFORE") if !rest.is_empty() => {
                let select = StatementText { text: format!("SELECT UNIX_TIMESTAMP({rest})"), warnings: Vec::new(), ..statement.clone() };
                // Evaluated here, never sent to the client.
                let may_stream = std::mem::replace(&mut self.may_stream, false);
                let evaluated = Box::pin(self.run_one(&select)).await;
                self.may_stream = may_stream;
                let seconds = match evaluated? {
                    Outcome::Rows(rs) => rs.rows.first().and_then(|r| r.first()).filter(|v| !matches!(v, Value::Null)).map(crate::ops::to_f64),
                    _ => None,
                };
                let seconds = seconds.filter(|s| *s >= 0.0).ok_or_else(|| SqlError::new((1210, "HY000"), "Incorrect arguments to PURGE BINARY LOGS BEFORE"))?;
                (None, Some(std::time::UNIX_EPOCH + Duration::from_secs_f64(seconds)))
            }
            _ => return Err(SqlError::parse(&statement.text)),
        };
        let kept = tokio::task::block_in_place(|| binlog.purge(to.as_deref(), before))?;
        for name in kept {
            self.warnings.push(Warning {
                level: "Warning",
                code: 1867,
                message: format!(
                    "file {name} was not purged because it is still needed: by crash recovery (until the next checkpoint) or by a connected replica"
                ),
            });
        }
        Ok(Outcome::ok())
    }

    /// CHANGE REPLICATION SOURCE TO, START / STOP / RESET REPLICA (`replica_control`).
    fn replica_statement(&mut self, statement: crate::replica_control::ReplicaStatement) -> Result<Outcome> {
        use crate::replica_control::ReplicaStatement;
        self.require_global(crate::accounts::SUPER, "SUPER or REPLICATION_SLAVE_ADMIN")?;
        let Some(replica) = self.engine().replica.get().cloned() else {
            return Err(SqlError::new((1200, "HY000"), "The server is not configured as replica; fix in config file or with CHANGE REPLICATION SOURCE TO"));
        };
        match statement {
            ReplicaStatement::Change(options) => replica.change_source(options)?,
            ReplicaStatement::Start => {
                if !replica.start()? {
                    self.warnings.push(Warning { level: "Note", code: 3083, message: "Replication thread(s) for channel '' are already runnning.".into() });
                }
            }
            ReplicaStatement::Stop => {
                if !replica.stop()? {
                    self.warnings.push(Warning { level: "Note", code: 3084, message: "Replication thread(s) for channel '' are already stopped.".into() });
                }
            }
            ReplicaStatement::Reset { all } => replica.reset(all)?,
        }
        Ok(Outcome::ok())
    }

    /// `ALTER TABLE t DISABLE KEYS` / `ENABLE KEYS` (every dump has them): as for InnoDB in
    /// MySQL 8, a note that the engine has no such option, and nothing else.
    fn alter_keys(&mut self, table: &str) -> Result<Outcome> {
        let (db, t) = self.split_name(table);
        let db = db?;
        self.info.engine.catalog().table(&db, &t)?;
        self.warnings.push(Warning { level: "Note", code: 1031, message: format!("Table storage engine for '{t}' doesn't have this option") });
        Ok(Outcome::ok())
    }

    /// `START TRANSACTION [WITH CONSISTENT SNAPSHOT | READ ONLY | READ WRITE], ...`.
    fn start_transaction(&mut self, sql: &str) -> Result<Outcome> {
        let text = sql.trim().trim_end_matches(';');
        let rest = text.get("START TRANSACTION".len()..).unwrap_or("").trim();
        let mut snapshot = false;
        let mut read_only = None;
        for part in rest.split(',').map(|p| p.split_whitespace().map(str::to_ascii_uppercase).collect::<Vec<_>>().join(" ")).filter(|p| !p.is_empty()) {
            match part.as_str() {
                "WITH CONSISTENT SNAPSHOT" => snapshot = true,
                "READ ONLY" | "READ WRITE" if read_only.is_none() => read_only = Some(part == "READ ONLY"),
                _ => return Err(SqlError::parse(rest)),
            }
        }
        self.unlock_tables()?;
        self.commit()?;
        self.begin_explicit(read_only);
        if snapshot {
            let _ = self.read_view();
        }
        Ok(Outcome::ok())
    }

    /// `SET [GLOBAL | SESSION] TRANSACTION ISOLATION LEVEL ... | READ WRITE | READ ONLY`.
    /// The parser drops the scope, so this recogniser handles the statement.
    fn set_transaction(&mut self, words: &[&str]) -> Result<Outcome> {
        let upper: Vec<String> = words.iter().map(|w| w.trim_end_matches(';').to_ascii_uppercase()).collect();
        let scope = upper.get(1).map_or("", String::as_str);
        let scope = if matches!(scope, "GLOBAL" | "SESSION" | "LOCAL") { scope } else { "" };
        let from = upper.iter().position(|w| w == "TRANSACTION").map_or(upper.len(), |p| p + 1);
        let text = upper[from..].join(" ");
        let mut level = None;
        let mut read_only = None;
        for part in text.split(',').map(str::trim) {
            let words: Vec<&str> = part.split_whitespace().collect();
            match words.as_slice() {
                ["ISOLATION", "LEVEL", "READ", "UNCOMMITTED"] if level.is_none() => level = Some("READ-UNCOMMITTED"),
                ["ISOLATION", "LEVEL", "READ", "COMMITTED"] if level.is_none() => level = Some("READ-COMMITTED"),
                ["ISOLATION", "LEVEL", "REPEATABLE", "READ"] if level.is_none() => level = Some("REPEATABLE-READ"),
                ["ISOLATION", "LEVEL", "SERIALIZABLE"] if level.is_none() => level = Some("SERIALIZABLE"),
                ["READ", "ONLY"] if read_only.is_none() => read_only = Some(true),
                ["READ", "WRITE"] if read_only.is_none() => read_only = Some(false),
                _ => return Err(SqlError::parse(part)),
            }
        }
        let mode = read_only.map(|r| if r { "ON" } else { "OFF" });
        if scope == "GLOBAL" {
            self.require_global(crate::accounts::SUPER, "SUPER or SYSTEM_VARIABLES_ADMIN")?;
        }
        match scope {
            "GLOBAL" => {
                let mut g = self.info.engine.globals.write();
                if let Some(level) = level {
                    g.values.insert("transaction_isolation", level.into());
                    g.values.insert("tx_isolation", level.into());
                }
                if let Some(m) = mode {
                    g.values.insert("transaction_read_only", m.into());
                    g.values.insert("tx_read_only", m.into());
                }
            }
            "SESSION" | "LOCAL" => {
                if let Some(level) = level {
                    self.info.vars.values.insert("transaction_isolation", level.into());
                    self.info.vars.values.insert("tx_isolation", level.into());
                }
                if let Some(m) = mode {
                    self.info.vars.values.insert("transaction_read_only", m.into());
                    self.info.vars.values.insert("tx_read_only", m.into());
                }
            }
            _ => {
                if self.in_transaction() {
                    return Err(SqlError::new(
                        codes::ER_CANT_CHANGE_TX_CHARACTERISTICS,
                        "Transaction characteristics can't be changed while a transaction is in progress",
                    ));
                }
                if let Some(level) = level {
                    self.next_isolation = Some(level);
                }
                if read_only.is_some() {
                    self.next_read_only = read_only;
                }
            }
        }
        Ok(Outcome::ok())
    }

    /// `statement` with its first `skip` bytes replaced by SELECT (`DO expr`).
    async fn select_like(&mut self, statement: &StatementText, skip: usize) -> Result<Outcome> {
        let rest = statement.text.trim_start()[skip..].trim_start();
        let select = StatementText { text: format!("SELECT {rest}"), warnings: Vec::new(), ..statement.clone() };
        Box::pin(self.run_one(&select)).await
    }

    async fn explain(&mut self, statement: &StatementText) -> Result<Outcome> {
        let rest = statement.text.trim_start()[7..].trim_start();
        if !rest.to_ascii_uppercase().starts_with("SELECT") {
            let (db, t) = self.split_name(rest.split_whitespace().next().unwrap_or_default());
            return show::show_columns(&self.info.engine.catalog(), &self.info, &db?, &t, false, None).map(Outcome::Rows);
        }
        let stmts = self.parse(rest, statement.operators, statement.div_operators)?;
        let Some(Statement::Query(q)) = stmts.first() else { return Err(SqlError::parse(rest)) };
        let catalog = self.info.engine.catalog();
        let env = Env::new(&catalog, ReadView::current(0), &[], 0, &self.info, &crate::show::SYSTEM_SCHEMAS);
        let (plan, _) = query::plan_query(&env, q, &[])?;
        Ok(Outcome::Rows(crate::explain::explain(&plan)))
    }

    fn kill(&mut self, words: &[&str]) -> Result<Outcome> {
        let id_word = words.last().copied().unwrap_or_default().trim_end_matches(';');
        let id: u32 = id_word.parse().map_err(|_| SqlError::parse(id_word))?;
        let query_only = words.get(1).is_some_and(|w| w.eq_ignore_ascii_case("QUERY"));
        let may_kill_others = self.global_privileges() & crate::accounts::SUPER != 0;
        let mut procs = self.info.engine.processes.lock();
        match procs.get_mut(&id) {
            Some(p) if p.user != self.info.user && !may_kill_others => Err(SqlError::new((1095, "HY000"), format!("You are not owner of thread {id}"))),
            Some(p) => {
                // KILL QUERY only interrupts; KILL [CONNECTION] also closes the connection.
                p.kill_connection |= !query_only;
                p.interrupt.store(true, Ordering::Release);
                p.kill.notify_one();
                drop(procs);
                if id == self.info.connection_id && !query_only {
                    return Err(SqlError::query_interrupted());
                }
                Ok(Outcome::ok())
            }
            None => Err(SqlError::new(codes::ER_NO_SUCH_THREAD, format!("Unknown thread id: {id}"))),
        }
    }

    /// Whether this session was killed (KILL QUERY, or KILL CONNECTION).
    #[must_use]
    pub fn is_killed(&self) -> bool {
        self.info.interrupt.killed() || self.connection_killed()
    }

    /// Whether this session's connection must close (KILL CONNECTION).
    #[must_use]
    pub fn connection_killed(&self) -> bool {
        self.info.engine.processes.lock().get(&self.info.connection_id).is_some_and(|p| p.kill_connection)
    }

    /// A new command starts: a KILL QUERY aimed at an earlier one is spent.
    pub fn command_started(&self, text: Option<&str>) {
        if let Some(p) = self.info.engine.processes.lock().get_mut(&self.info.connection_id) {
            p.interrupt.store(false, Ordering::Release);
            p.progress.store(0, Ordering::Relaxed);
            p.command = if text.is_some() { "Query".into() } else { "Sleep".into() };
            p.info = text.map(|t| crate::accounts::statements::redacted(t).as_deref().unwrap_or(t).chars().take(1024).collect());
            if p.info.is_some() {
                p.last_info.clone_from(&p.info);
            }
            p.started = Some(Instant::now());
        }
    }

    fn split_name(&self, name: &str) -> (Result<String>, String) {
        let name = name.trim_end_matches(';');
        let mut parts = crate::words::name_parts(name).unwrap_or_default();
        match parts.len() {
            2 => {
                let t = parts.pop().unwrap_or_default();
                (Ok(parts.pop().unwrap_or_default()), t)
            }
            1 => (self.info.db.clone().ok_or_else(SqlError::no_db), parts.pop().unwrap_or_default()),
            _ => (Err(SqlError::parse(name)), String::new()),
        }
    }

    fn show(&mut self, statement: &StatementText, words: &[&str]) -> Result<Outcome> {
        let sql = statement.text.as_str();
        let upper: Vec<String> = words.iter().map(|w| w.trim_end_matches(';').to_ascii_uppercase()).collect();
        let mut i = 1;
        let full = upper.get(i).is_some_and(|w| w == "FULL");
        if full {
            i += 1;
        }
        let global = upper.get(i).is_some_and(|w| w == "GLOBAL");
        if global || upper.get(i).is_some_and(|w| w == "SESSION") {
            i += 1;
        }
        let like = like_pattern(sql);
        let what = upper.get(i).map_or("", String::as_str);
        // `FROM db` / `IN db` anywhere after the object word.
        let from = |after: usize| -> Option<String> {
            let mut out = None;
            let mut j = after;
            while j + 1 < upper.len() {
                if upper[j] == "FROM" || upper[j] == "IN" {
                    out = Some(words[j + 1].trim_end_matches(';').trim_matches('`').to_owned());
                }
                j += 1;
            }
            out
        };
        let engine = self.engine();
        let catalog = engine.catalog();
        let rs = match what {
            "DATABASES" | "SCHEMAS" => {
                let mut rs = show::show_databases(&catalog, like.as_deref());
                // Without SHOW DATABASES, an account sees the databases it has privileges in.
                if self.global_privileges() & crate::accounts::SHOW_DATABASES == 0 {
                    let acl = Arc::clone(&self.info.engine.acl.read());
                    rs.rows.retain(|r| {
                        let db = crate::ops::to_string_lossy(&r[0]);
                        db.eq_ignore_ascii_case("information_schema") || acl.any_in_database(&self.info.user, &self.info.account_host, &db)
                    });
                }
                rs
            }
            "TABLES" => {
                let db = from(i + 1).or_else(|| self.info.db.clone()).ok_or_else(SqlError::no_db)?;
                self.require_visible_database(&db)?;
                let mut rs = show::show_tables(&catalog, &db, full, like.as_deref())?;
                rs.rows.retain(|r| self.info.may_see_table(&db, &crate::ops::to_string_lossy(&r[0])));
                rs
            }
            "COLUMNS" | "FIELDS" => {
                let mut it = upper
                    .iter()
                    .enumerate()
                    .skip(i + 1)
                    .filter(|(_, w)| *w == "FROM" || *w == "IN")
                    .filter_map(|(j, _)| words.get(j + 1).map(|w| w.trim_end_matches(';')));
                let tname = it.next().ok_or_else(|| SqlError::parse(sql))?;
                let db_override = it.next().map(|d| d.trim_matches('`').to_owned());
                let (db, t) = self.split_name(tname);
                let db = match db_override {
                    Some(d) => d,
                    None => db?,
                };
                self.require_any_on_table(&db, &t)?;
                show::show_columns(&catalog, &self.info, &db, &t, full, like.as_deref())?
            }
            "INDEX" | "INDEXES" | "KEYS" => {
                let tname = upper.iter().position(|w| w == "FROM" || w == "IN").and_then(|j| words.get(j + 1)).ok_or_else(|| SqlError::parse(sql))?;
                let (db, t) = self.split_name(tname);
                let db = db?;
                self.require_any_on_table(&db, &t)?;
                show::show_index(&catalog, &db, &t)?
            }
            "CREATE" if upper.get(i + 1).is_some_and(|w| w == "TABLE" || w == "VIEW") => {
                let (db, t) = self.split_name(words.get(i + 2).ok_or_else(|| SqlError::parse(sql))?);
                let db = db?;
                self.require_any_on_table(&db, &t)?;
                // SHOW CREATE TABLE of a view shows the view, as MySQL's does; SHOW CREATE
                // VIEW of a table is 1347.
                if let Some(view) = catalog.view(&db, &t) {
                    // SHOW CREATE VIEW (and TABLE, of a view) needs SHOW VIEW and SELECT on it.
                    self.require_table(&db, &t, crate::accounts::SHOW_VIEW | crate::accounts::SELECT)?;
                    return Ok(Outcome::Rows(view_ddl::show_create(view, &self.info)));
                }
                if upper[i + 1] == "VIEW" {
                    catalog.table(&db, &t)?;
                    return Err(SqlError::new((1347, "HY000"), format!("'{db}.{t}' is not VIEW")));
                }
                show::show_create_table(
                    &catalog,
                    &db,
                    &t,
                    if self.info.var("sql_quote_show_create") == "OFF" { show::Quoting::WhereNeeded } else { show::Quoting::Always },
                )?
            }
            "CREATE" if upper.get(i + 1).is_some_and(|w| w == "DATABASE" || w == "SCHEMA") => {
                let db = words.get(i + 2).map(|w| w.trim_end_matches(';').trim_matches('`')).ok_or_else(|| SqlError::parse(sql))?;
                catalog.database(db)?;
                let text = SqlTypeHelper::text();
                ResultSet {
                    columns: vec![OutColumn::computed("Database", text.clone()), OutColumn::computed("Create Database", text)],
                    rows: vec![vec![
                        Value::Str(db.to_owned()),
                        Value::Str(format!(
                            "CREATE DATABASE `{db}` /*!40100 DEFAULT CHARACTER SET {} COLLATE {} */ /*!80016 DEFAULT ENCRYPTION='N' */",
                            crate::charset::charset_of(catalog.database(db)?.collation),
                            catalog.database(db)?.collation.name()
                        )),
                    ]],
                }
            }
            "VARIABLES" => self.show_variables(global, like.as_deref()),
            // SHOW COUNT(*) WARNINGS / ERRORS: the previous statement's, which it keeps.
            "COUNT(*)" if matches!(upper.get(i + 1).map(String::as_str), Some("WARNINGS" | "ERRORS")) => {
                let errors = upper[i + 1] == "ERRORS";
                let count = if errors { self.warnings.iter().filter(|w| w.level == "Error").count() } else { self.warnings.len() };
                let name = if errors { "@@session.error_count" } else { "@@session.warning_count" };
                ResultSet { columns: vec![OutColumn::computed(name, crate::types::SqlType::bigint())], rows: vec![vec![Value::Int(count as i64)]] }
            }
            "STATUS" => self.show_status(like.as_deref()),
            "WARNINGS" | "ERRORS" => {
                let text = SqlTypeHelper::text();
                ResultSet {
                    columns: vec![
                        OutColumn::computed("Level", text.clone()),
                        OutColumn::computed("Code", crate::types::SqlType::bigint()),
                        OutColumn::computed("Message", text),
                    ],
                    rows: self
                        .warnings
                        .iter()
                        .filter(|w| what == "WARNINGS" || w.level == "Error")
                        .map(|w| vec![Value::Str(w.level.into()), Value::Int(i64::from(w.code)), Value::Str(w.message.clone())])
                        .collect(),
                }
            }
            "PROCESSLIST" => self.show_processlist(),
            "MASTER" | "BINARY" | "BINLOG" => {
                if what == "BINLOG" {
                    self.require_global(crate::accounts::REPLICATION_SLAVE, "REPLICATION SLAVE")?;
                } else {
                    self.require_global(crate::accounts::SUPER | crate::accounts::REPLICATION_CLIENT, "SUPER, REPLICATION CLIENT")?;
                }
                show_binary_log(&engine, &upper[i..])?
            }
            "REPLICA" | "SLAVE" if upper.get(i + 1).is_some_and(|w| w == "STATUS") => {
                self.require_global(crate::accounts::SUPER | crate::accounts::REPLICATION_CLIENT, "SUPER, REPLICATION CLIENT")?;
                let rows = engine.replica.get().and_then(|r| r.status());
                let int = crate::types::SqlType::Int { kind: crate::types::IntKind::Big, unsigned: true, display: None };
                let columns: Vec<OutColumn> = rows
                    .as_ref()
                    .map(|r| {
                        r.iter()
                            .map(|(name, v)| OutColumn::computed(name, if matches!(v, Value::UInt(_)) { int.clone() } else { SqlTypeHelper::text() }))
                            .collect()
                    })
                    .unwrap_or_default();
                ResultSet { columns, rows: rows.map(|r| vec![r.into_iter().map(|(_, v)| v).collect()]).unwrap_or_default() }
            }
            "ENGINE" if upper.get(i + 1).is_some_and(|w| w == "INNODB") && upper.get(i + 2).is_some_and(|w| w == "STATUS") && upper.len() == i + 3 => {
                self.require_global(crate::accounts::PROCESS, "PROCESS")?;
                let text = SqlTypeHelper::text();
                let engine = self.engine();
                let catalog = engine.catalog();
                let deadlock = engine.latest_deadlock.lock().clone();
                let status = crate::innodb_status::status_text(&engine, &catalog, deadlock.as_deref());
                ResultSet {
                    columns: ["Type", "Name", "Status"].iter().map(|n| OutColumn::computed(n, text.clone())).collect(),
                    rows: vec![vec![Value::Str("InnoDB".into()), Value::Str(String::new()), Value::Str(status)]],
                }
            }
            // What is built in: the engine, the binary log, the two password plugins, and
            // semi-synchronous replication (both sides, always loaded).
            "PLUGINS" => {
                let text = SqlTypeHelper::text();
                let plugins = [
                    ("binlog", "STORAGE ENGINE"),
                    ("mysql_native_password", "AUTHENTICATION"),
                    ("caching_sha2_password", "AUTHENTICATION"),
                    (quill_storage::handler::DEFAULT_ENGINE, "STORAGE ENGINE"),
                    ("rpl_semi_sync_source", "REPLICATION"),
                    ("rpl_semi_sync_replica", "REPLICATION"),
                ];
                ResultSet {
                    columns: ["Name", "Status", "Type", "Library", "License"].iter().map(|n| OutColumn::computed(n, text.clone())).collect(),
                    rows: plugins
                        .iter()
                        .map(|(name, kind)| {
                            vec![
                                Value::Str((*name).into()),
                                Value::Str("ACTIVE".into()),
                                Value::Str((*kind).into()),
                                Value::Null,
                                Value::Str("Apache-2.0".into()),
                            ]
                        })
                        .collect(),
                }
            }
            // Quill has no triggers: MySQL 8's columns, no rows.
            "TRIGGERS" => {
                let text = SqlTypeHelper::text();
                let names = [
                    "Trigger",
                    "Event",
                    "Table",
                    "Statement",
                    "Timing",
                    "Created",
                    "sql_mode",
                    "Definer",
                    "character_set_client",
                    "collation_connection",
                    "Database Collation",
                ];
                ResultSet { columns: names.iter().map(|n| OutColumn::computed(n, text.clone())).collect(), rows: Vec::new() }
            }
            "ENGINES" => {
                // information_schema.ENGINES' rows, under SHOW ENGINES' names.
                let text = SqlTypeHelper::text();
                ResultSet {
                    columns: ["Engine", "Support", "Comment", "Transactions", "XA", "Savepoints"]
                        .iter()
                        .map(|n| OutColumn::computed(n, text.clone()))
                        .collect(),
                    rows: crate::schema_server::engines().1,
                }
            }
            "COLLATION" | "CHARACTER" | "CHARSET" => {
                let text = SqlTypeHelper::text();
                if what == "COLLATION" {
                    // information_schema.COLLATIONS' rows, under SHOW COLLATION's names.
                    let (_, rows) = crate::schema_server::collations();
                    ResultSet {
                        columns: ["Collation", "Charset", "Id", "Default", "Compiled", "Sortlen", "Pad_attribute"]
                            .iter()
                            .map(|n| OutColumn::computed(n, text.clone()))
                            .collect(),
                        rows: rows.into_iter().filter(|r| show::like_filter(&crate::ops::to_string_lossy(&r[0]), like.as_deref())).collect(),
                    }
                } else {
                    ResultSet {
                        columns: ["Charset", "Description", "Default collation", "Maxlen"].iter().map(|n| OutColumn::computed(n, text.clone())).collect(),
                        rows: vec![
                            vec![Value::Str("binary".into()), Value::Str("Binary pseudo charset".into()), Value::Str("binary".into()), Value::Int(1)],
                            vec![Value::Str("utf8mb4".into()), Value::Str("UTF-8 Unicode".into()), Value::Str("utf8mb4_0900_ai_ci".into()), Value::Int(4)],
                        ]
                        .into_iter()
                        .filter(|r| show::like_filter(&crate::ops::to_string_lossy(&r[0]), like.as_deref()))
                        .collect(),
                    }
                }
            }
            "TABLE" if upper.get(i + 1).is_some_and(|w| w == "STATUS") => {
                let db = from(i + 2).or_else(|| self.info.db.clone()).ok_or_else(SqlError::no_db)?;
                self.require_visible_database(&db)?;
                let d = catalog.database(&db)?;
                ResultSet {
                    columns: show::table_status_columns(),
                    rows: d
                        .tables
                        .values()
                        .filter(|t| show::like_filter(&t.name, like.as_deref()) && self.info.may_see_table(&db, &t.name))
                        .map(|t| show::table_status(t))
                        .collect(),
                }
            }
            _ => return Err(SqlError::parse(&words[1..].join(" "))),
        };
        drop(catalog);
        let rs = match sql.to_ascii_uppercase().find(" WHERE ") {
            Some(at) => self.filter_show(rs, &sql[at + 7..], statement)?,
            None => rs,
        };
        Ok(Outcome::Rows(rs))
    }

    /// `SHOW ... WHERE cond`: keep the rows for which `cond` holds, naming the
    /// result's columns.
    fn filter_show(&self, rs: ResultSet, cond: &str, statement: &StatementText) -> Result<ResultSet> {
        let stmts = crate::parse::parse(&format!("SELECT 1 FROM show_result WHERE {cond}"), statement.operators, statement.div_operators)?;
        let Some(Statement::Query(q)) = stmts.first() else { return Err(SqlError::parse(cond)) };
        let ast::SetExpr::Select(sel) = q.body.as_ref() else { return Err(SqlError::parse(cond)) };
        let Some(selection) = &sel.selection else { return Ok(rs) };
        let scope = crate::bind::Scope { columns: rs.columns.iter().map(|c| crate::bind::ScopeColumn::computed("", &c.name, c.ty.clone())).collect() };
        let catalog = self.info.engine.catalog();
        let env = Env::new(&catalog, ReadView::current(0), &[], 0, &self.info, &crate::show::SYSTEM_SCHEMAS);
        let cond = crate::bind::Binder::new(&env, &scope, "where clause").bind(selection)?;
        let mut rows = Vec::new();
        for r in rs.rows {
            if crate::ops::truth(&cond.eval(&env, &crate::expr::RowCtx::new(&r))?) == Some(true) {
                rows.push(r);
            }
        }
        Ok(ResultSet { columns: rs.columns, rows })
    }

    fn show_variables(&self, global: bool, like: Option<&str>) -> ResultSet {
        let text = SqlTypeHelper::text();
        let globals = self.info.engine.globals.read();
        let source = if global { &*globals } else { &self.info.vars };
        let rows = vars::VARIABLES
            .iter()
            .filter(|d| show::like_filter(d.name, like))
            .filter(|d| !(global && d.scope == vars::Scope::Session))
            .map(|d| {
                let v = if d.scope == vars::Scope::Global { globals.get(d.name) } else { source.get(d.name) };
                vec![Value::Str(d.name.into()), Value::Str(v.unwrap_or_default().to_owned())]
            })
            .collect();
        ResultSet { columns: vec![OutColumn::computed("Variable_name", text.clone()), OutColumn::computed("Value", text)], rows }
    }

    fn show_status(&self, like: Option<&str>) -> ResultSet {
        let text = SqlTypeHelper::text();
        let mut items = self.info.engine.global_status();
        items.push(("Ssl_cipher", self.tls_cipher.clone()));
        items.push(("Ssl_version", self.tls_version.clone()));
        items.sort_by(|a, b| a.0.cmp(b.0));
        ResultSet {
            columns: vec![OutColumn::computed("Variable_name", text.clone()), OutColumn::computed("Value", text)],
            rows: items.into_iter().filter(|(n, _)| show::like_filter(n, like)).map(|(n, v)| vec![Value::Str(n.into()), Value::Str(v)]).collect(),
        }
    }

    /// 1820 for a statement other than ALTER USER, SET PASSWORD or SET while the session's
    /// password has expired.
    fn refuse_while_password_expired(&self, sql: &str) -> Result<()> {
        let words = crate::words::words(sql);
        let first = words.first().map(|w| w.to_ascii_uppercase()).unwrap_or_default();
        let second = words.get(1).map(|w| w.to_ascii_uppercase()).unwrap_or_default();
        if (first == "ALTER" && second == "USER") || first == "SET" {
            return Ok(());
        }
        Err(SqlError::new((1820, "HY000"), "You must reset your password using ALTER USER statement before executing this statement."))
    }

    /// Whether the session's account's password has expired now (`accounts::PasswordExpiry`).
    #[must_use]
    pub fn account_password_expired(&self) -> bool {
        let lifetime: u64 = self.info.engine.global("default_password_lifetime").and_then(|v| v.parse().ok()).unwrap_or(0);
        let now_secs = self.info.now_us().div_euclid(1_000_000);
        self.info.engine.acl.read().account(&self.info.user, &self.info.account_host).is_some_and(|a| a.password.is_expired(now_secs, lifetime))
    }

    /// `collation_server`: what a database created without a collation takes.
    fn server_collation(&self) -> quill_storage::Collation {
        quill_storage::Collation::from_name(self.info.var("collation_server")).unwrap_or_default()
    }

    /// 1044 for SHOW TABLES / SHOW TABLE STATUS of a database the account has nothing in.
    fn require_visible_database(&self, db: &str) -> Result<()> {
        if self.info.may_see_database(db) { Ok(()) } else { Err(self.database_denied(db)) }
    }

    fn show_processlist(&self) -> ResultSet {
        let (columns, rows) = show::processlist(&self.info, false);
        ResultSet { columns, rows }
    }

    /// The client went away: roll back (releasing the transaction's locks) and give the
    /// connection slot back. Runs once; dropping the session calls it, so a session that
    /// ends in a panic releases everything too.
    pub fn close(&mut self) {
        if std::mem::replace(&mut self.closed, true) {
            return;
        }
        self.rollback();
        self.locked_tables = None;
        self.info.engine.mdl.release_all(self.info.connection_id);
        self.info.engine.mdl.release_explicit(self.info.connection_id);
        self.info.engine.mdl.withdraw(self.info.connection_id);
        self.info.engine.user_locks.release_all(self.info.connection_id);
        self.info.engine.processes.lock().remove(&self.info.connection_id);
        self.info.engine.status.threads_connected.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.close();
    }
}

/// One checked item of a SET statement, applied once every item has been checked.
enum SetPlan {
    User { name: String, value: Value },
    System { def: &'static vars::VarDef, global: bool, normalised: vars::Normalised },
    Names { charset: Charset, collation: String },
    CharacterSet { charset: Charset },
}

/// `NAMES cs [COLLATE c]` (`cs` may be DEFAULT: utf8mb4).
fn names_plan(charset: &str, collation: Option<&str>) -> Result<SetPlan> {
    let name = charset.trim_matches(['\'', '"', '`']);
    let charset =
        if name.eq_ignore_ascii_case("DEFAULT") { Charset::default() } else { Charset::from_name(name).ok_or_else(|| vars::unknown_charset(name))? };
    let collation = match collation.map(|c| c.trim_matches(['\'', '"', '`'])) {
        Some(c) if quill_storage::Collation::from_name(c).is_some() && !collation_fits(c, charset) => {
            return Err(SqlError::new((1253, "42000"), format!("COLLATION '{c}' is not valid for CHARACTER SET '{}'", charset.name())));
        }
        Some(c) if quill_storage::Collation::from_name(c).is_some() => c.to_ascii_lowercase(),
        Some(c) => return Err(SqlError::new(codes::ER_UNKNOWN_COLLATION, format!("Unknown collation: '{c}'"))),
        None => charset.default_collation().to_owned(),
    };
    Ok(SetPlan::Names { charset, collation })
}

/// Whether collation `name` belongs to `charset` (`utf8_` names are utf8mb3's).
fn collation_fits(name: &str, charset: Charset) -> bool {
    let name = name.to_ascii_lowercase();
    match charset {
        Charset::Utf8mb4 => name.starts_with("utf8mb4_"),
        Charset::Utf8mb3 => name.starts_with("utf8mb3_") || name.starts_with("utf8_"),
        Charset::Latin1 => name.starts_with("latin1_"),
        Charset::Binary => name == "binary",
    }
}

/// `CHARACTER SET cs` (or DEFAULT).
fn character_set_plan(charset: &str) -> Result<SetPlan> {
    let name = charset.trim_matches(['\'', '"', '`']);
    let charset =
        if name.eq_ignore_ascii_case("DEFAULT") { Charset::default() } else { Charset::from_name(name).ok_or_else(|| vars::unknown_charset(name))? };
    Ok(SetPlan::CharacterSet { charset })
}

/// `text` split at commas outside quotes, backquotes and parentheses.
fn split_top_level_commas(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut quote, mut start) = (0usize, None::<u8>, 0);
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        match quote {
            Some(q) if b == b'\\' && q != b'`' => i += 1,
            Some(q) if b == q => quote = None,
            Some(_) => {}
            None => match b {
                b'\'' | b'"' | b'`' => quote = Some(b),
                b'(' => depth += 1,
                b')' => depth = depth.saturating_sub(1),
                b',' if depth == 0 => {
                    out.push(text[start..i].trim());
                    start = i + 1;
                }
                _ => {}
            },
        }
        i += 1;
    }
    let last = text[start..].trim();
    if !last.is_empty() || !out.is_empty() {
        out.push(last);
    }
    out
}

/// Bytes a DDL record takes beyond its statement text (header, kind, database name).
const DDL_RECORD_BYTES_BASE: u64 = 1024;

/// How long a DDL statement sleeps before it looks again at a checkpoint holding the gate.
const DDL_GATE_RETRY: Duration = Duration::from_millis(2);

/// The statements [`Session::ddl`] executes; anything else that reaches it is unsupported.
fn is_ddl(stmt: &Statement) -> bool {
    matches!(
        stmt,
        Statement::CreateDatabase { .. }
            | Statement::CreateSchema { .. }
            | Statement::AlterSchema(_)
            | Statement::CreateTable(_)
            | Statement::Truncate(_)
            | Statement::CreateIndex(_)
            | Statement::AlterTable(_)
            | Statement::Drop { object_type: ast::ObjectType::Database | ast::ObjectType::Schema | ast::ObjectType::Table, .. }
            | Statement::Drop { object_type: ast::ObjectType::Index, table: Some(_), .. }
            | Statement::CreateView(_)
            | Statement::AlterView { .. }
            | Statement::Drop { object_type: ast::ObjectType::View, .. }
            | Statement::RenameTable(_)
    )
}

/// Microseconds since the Unix epoch: the commit time a log record carries.
fn unix_micros() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

struct SqlTypeHelper;

impl SqlTypeHelper {
    fn text() -> crate::types::SqlType {
        crate::types::SqlType::VarChar { len: 255, collation: quill_storage::Collation::Utf8mb4GeneralCi }
    }
}

/// The `INTO` of a query's SELECT (`SELECT ... INTO @v`), if it has one.
fn select_into(q: &ast::Query) -> Option<&ast::SelectInto> {
    match q.body.as_ref() {
        ast::SetExpr::Select(s) => s.into.as_ref(),
        _ => None,
    }
}

fn ident_of(n: &ast::ObjectName) -> String {
    n.0.last().map(|p| p.as_ident().map_or_else(|| p.to_string(), |i| i.value.clone())).unwrap_or_default()
}

fn first_words(s: &str) -> String {
    s.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

fn like_pattern(sql: &str) -> Option<String> {
    let upper = sql.to_ascii_uppercase();
    let i = upper.find(" LIKE ")?;
    let rest = sql[i + 6..].trim();
    let q = rest.chars().next()?;
    if q != '\'' && q != '"' {
        return None;
    }
    let end = rest[1..].find(q)?;
    Some(rest[1..=end].to_owned())
}

/// `... LOCK IN SHARE MODE` (which the parser rejects) is `... FOR SHARE`.
fn rewrite_lock_in_share_mode(sql: &str) -> std::borrow::Cow<'_, str> {
    const TAIL: &str = "LOCK IN SHARE MODE";
    let trimmed = sql.trim_end();
    let words: Vec<&str> = trimmed.rsplitn(5, char::is_whitespace).collect();
    if words.len() == 5 && words[..4].iter().rev().copied().collect::<Vec<_>>().join(" ").eq_ignore_ascii_case(TAIL) {
        return std::borrow::Cow::Owned(format!("{} FOR SHARE", words[4]));
    }
    std::borrow::Cow::Borrowed(sql)
}

/// Whether a query names a table anywhere (its FROM, a join, a subquery): one that names none
/// (`SELECT @@global.server_id`, `SELECT 1`) reads no commit, so its reply waits for none.
fn reads_tables(q: &ast::Query) -> bool {
    ast::visit_relations(q, |_| std::ops::ControlFlow::Break(())).is_break()
}

/// The server's executable, as the slow log's header names it (read once).
fn program_path() -> &'static str {
    static PATH: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PATH.get_or_init(|| std::env::current_exe().map_or_else(|_| "quill".into(), |p| p.display().to_string()))
}

/// Whether `sql` names a function that may wait (`statement_waits`, `Func::may_wait`), by
/// its words.
fn calls_waiting_function(sql: &str) -> bool {
    sql.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .any(|word| crate::functions::Func::by_name(word, 0).is_some_and(crate::functions::Func::may_wait))
}

/// Whether the query calls a function that may wait (`statement_waits`): its result is not
/// streamed, since a wait runs it again from its start.
fn calls_lock_functions(q: &ast::Query) -> bool {
    ast::visit_expressions(q, |e| match e {
        ast::Expr::Function(f)
            if f.name
                .0
                .last()
                .and_then(|p| p.as_ident())
                .is_some_and(|i| crate::functions::Func::by_name(&i.value, 0).is_some_and(crate::functions::Func::may_wait)) =>
        {
            std::ops::ControlFlow::Break(())
        }
        _ => std::ops::ControlFlow::Continue(()),
    })
    .is_break()
}
