//! Sessions: one client's state, and the execution of its statements.
//!
//! [`Session::run`] takes the text of a COM_QUERY, splits it into statements (`text`), and
//! runs each in turn, stopping at the first error as MySQL does: a statement the parser does
//! not read is recognised by its words first (`recognise`), any other is parsed (a
//! per-session cache keeps parsed text) and executed (`execute`).
//!
//! The session's work is split by concern, each an `impl Session` of its own file:
//! - `execute`: metadata locks and the dispatch of one statement; `retry`: the waits a
//!   statement stops for ([`crate::error::Wait`]) and its re-runs;
//! - `transactions` (BEGIN, isolation, read views, the end of a statement) and `commit`
//!   (COMMIT, ROLLBACK, streaming large transactions into the log);
//! - `reads` (SELECT, EXPLAIN, `INTO`), `writes` (INSERT, UPDATE, DELETE through `dml`),
//!   `ddl_statements`, `set`, `show_statements`, `kill`, `prepared` (the binary protocol's
//!   prepared statements) and `sql_prepare` (PREPARE / EXECUTE in SQL);
//! - `figures`: what each statement records, and the slow log; `privileges`: what each
//!   statement needs of the account; `accounts`, `table_locks`, `load`, `outfile`, `flush`,
//!   `checksum`, `maintenance`, `server_files`: the statements of those names.
//!
//! Transactions: with autocommit on and no BEGIN, each statement is its own transaction. A
//! statement that fails is undone alone. A statement that must wait (a row lock it queued
//! for, a function that waits) is undone, waits, and is re-run from its start, keeping the
//! locks it already holds (`retry`). A deadlock victim (1213) is rolled back whole. Locks are
//! released at commit right after the commit's log record has its place, before it is
//! durable; the reply waits for durability, and any statement that read waits until the
//! newest commit it could have seen is durable.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use quill_storage::{ReadView, TxnId, Value};
use sqlparser::ast::{self, Statement};

use crate::charset::Charset;
use crate::engine::{Engine, ProcessInfo};
use crate::error::{Result, SqlError, Warning, codes};
use crate::query::{OutColumn, ResultSet};
use crate::session_info::SessionInfo;
use crate::text::{self, LexOptions, StatementText};

mod accounts;
mod call;
mod checksum;
mod commit;
mod ddl_statements;
mod execute;
mod figures;
mod flush;
mod kill;
mod load;
mod maintenance;
mod outfile;
mod prepared;
mod privileges;
mod reads;
mod recognise;
mod retry;
mod server_files;
mod set;
mod show_statements;
mod sql_prepare;
mod table_locks;
mod transactions;
mod writes;

pub use commit::{STREAM_PART_BYTES, STREAM_ROWS};
pub use load::PROGRESS_DONE;

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
    /// Several results of one statement, sent in order (a CALL's result sets, then its OK).
    Results(Vec<Outcome>),
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
            Outcome::Results(list) => list.iter().map(Outcome::result_rows).sum(),
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
    /// The stored procedures running now, outermost first (`call`).
    routine_stack: Vec<Arc<crate::program_meta::RoutineMeta>>,
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
            routine_stack: Vec::new(),
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
        // A text too long to be cached is not looked up either: hashing a bulk INSERT's
        // megabyte costs more than a short statement's whole parse.
        if sql.len() > PLAN_CACHE_TEXT_BYTES_MAX {
            return Ok(Arc::new(crate::parse::parse(sql, operators, div_operators)?));
        }
        if let Some(s) = self.cache.get(sql) {
            return Ok(s.clone());
        }
        let stmts = Arc::new(crate::parse::parse(sql, operators, div_operators)?);
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
        // Borrowed unless rewritten: a bulk INSERT's text is not copied again.
        let share = rewrite_lock_in_share_mode(sql);
        let rewritten = crate::parse::rewrite_set_assignment(&share);
        let stmts = self.parse(&rewritten, statement.operators, statement.div_operators)?;
        let Some(stmt) = stmts.first() else {
            return Err(SqlError::new(codes::ER_EMPTY_QUERY, "Query was empty"));
        };
        self.execute(stmt, &[], sql).await
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
        Err(SqlError::new(codes::ER_MUST_CHANGE_PASSWORD, "You must reset your password using ALTER USER statement before executing this statement."))
    }

    /// Whether the session's account's password has expired now (`accounts::PasswordExpiry`).
    #[must_use]
    pub fn account_password_expired(&self) -> bool {
        let lifetime: u64 = self.info.engine.global("default_password_lifetime").and_then(|v| v.parse().ok()).unwrap_or(0);
        let now_secs = self.info.now_us().div_euclid(1_000_000);
        self.info.engine.acl.read().account(&self.info.user, &self.info.account_host).is_some_and(|a| a.password.is_expired(now_secs, lifetime))
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
