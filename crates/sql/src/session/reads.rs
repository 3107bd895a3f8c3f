//! Reading statements: SELECT (plain, locking, autocommit), `SELECT ... INTO @v` and
//! `INTO` text, EXPLAIN, and what a read waits for before it answers: a statement that read
//! waits until the newest commit it could have seen is durable (and acknowledged, with
//! semi-sync), so it never answers with data a crash could lose.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use quill_storage::{ReadView, Value};
use quill_txn::{LockMode, WaitPolicy};
use sqlparser::ast::{self, Statement};

use crate::error::{Result, SqlError, Warning, codes};
use crate::locking::LockSpec;
use crate::query::{self, Env};
use crate::text::StatementText;
use crate::vars;
use crate::{cost, show};

use super::{Outcome, Session, calls_lock_functions, reads_tables, rewrite_lock_in_share_mode, select_into};

impl Session {
    pub(super) fn select(&mut self, q: &ast::Query, params: &[Value]) -> Result<Outcome> {
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
            let env = Env { lock: spec, ..crate::show::statement_env(&catalog, view, params, self.info.now_us(), &self.info) };
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
    pub(super) fn lend_sink(&mut self, q: &ast::Query) -> Option<Box<dyn crate::sink::RowSink>> {
        if self.may_stream && !calls_lock_functions(q) { self.row_sink.take() } else { None }
    }

    /// Plans and runs a SELECT: a heavy plan off the runtime's worker ([`cost::run_heavy`]),
    /// and a plain (non-locking) one within `max_execution_time` (3024), as in MySQL. With a
    /// `sink`, rows go to it as they are produced (see `sink`).
    pub(super) fn plan_and_run(&self, env: &Env<'_>, q: &ast::Query, sink: Option<&mut (dyn crate::sink::RowSink + 'static)>) -> Result<Outcome> {
        let (plan, _) = query::plan_query(env, q, &[])?;
        let limit_ms = if env.lock.is_none() { vars::int_value(&self.info.vars, "max_execution_time") } else { 0 };
        self.info.interrupt.set_deadline((limit_ms > 0).then(|| Instant::now() + Duration::from_millis(limit_ms)));
        let heavy = cost::is_heavy(&plan, env.catalog, env.params);
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
    pub(super) fn lock_spec(&self, mode: LockMode, policy: WaitPolicy) -> LockSpec {
        let t = self.txn.as_ref().expect("a locking statement runs in a transaction");
        let gaps = matches!(t.isolation, "REPEATABLE-READ" | "SERIALIZABLE");
        let snapshot = if t.isolation == "REPEATABLE-READ" && self.info.var("innodb_snapshot_isolation") == "ON" { t.view.map(|v| v.read_ts) } else { None };
        LockSpec { txn: t.id, mode, policy, gaps, semi_consistent: !gaps, snapshot }
    }

    /// The statement read rows (a query that names no table, `SELECT @@server_id`, reads
    /// none and never waits): its reply waits until the newest commit it could have seen
    /// is as durable as the flush mode promises (locks are released before that).
    pub(super) fn after_read(&mut self) {
        if let Some((end, mode)) = self.read_durability() {
            self.wait_for_log(end, mode, crate::commit_acks::AckWait::Read);
        }
    }

    /// The log position (and flush mode) a reader's reply must wait for: the end of the
    /// newest commit it could have seen, when that is not yet durable, or not yet
    /// acknowledged by semi-sync replicas at AFTER_SYNC (`commit_acks`).
    pub(super) fn read_durability(&self) -> Option<(quill_log::Lsn, quill_log::FlushMode)> {
        let engine = &self.info.engine;
        let end = engine.last_commit_end.load(Ordering::Acquire);
        let log = engine.log.get()?;
        let unacknowledged = || !self.replica_applier && engine.commit_acks.get().is_some_and(|a| a.read_must_wait(end));
        (end > log.durable_lsn() || unacknowledged()).then(|| (end, log.flush_mode()))
    }

    /// An autocommit, non-locking SELECT outside any transaction: no transaction is
    /// registered, only its read view (so purge keeps what it reads), for the statement.
    pub(super) fn select_autocommit(&mut self, q: &ast::Query, params: &[Value]) -> Result<Outcome> {
        let engine = self.engine();
        let catalog = engine.catalog();
        let view = engine.txns.read_view(0, self.isolation() == "READ-UNCOMMITTED");
        let mut sink = self.lend_sink(q);
        let env = crate::show::statement_env(&catalog, view, params, self.info.now_us(), &self.info);
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

    /// `statement` with its first `skip` bytes replaced by SELECT (`DO expr`).
    pub(super) async fn select_like(&mut self, statement: &StatementText, skip: usize) -> Result<Outcome> {
        let rest = statement.text.trim_start()[skip..].trim_start();
        let select = StatementText { text: format!("SELECT {rest}"), warnings: Vec::new(), ..statement.clone() };
        Box::pin(self.run_one(&select)).await
    }

    pub(super) async fn explain(&mut self, statement: &StatementText) -> Result<Outcome> {
        let mut rest = statement.text.trim_start()[7..].trim_start();
        // `FORMAT = TRADITIONAL | TREE | JSON`.
        let mut format = crate::explain::Format::Traditional;
        if rest.get(..6).is_some_and(|w| w.eq_ignore_ascii_case("FORMAT")) {
            let after = rest[6..].trim_start().strip_prefix('=').ok_or_else(|| SqlError::parse(rest))?.trim_start();
            let name_len = after.find(|c: char| !c.is_ascii_alphabetic()).unwrap_or(after.len());
            let name = &after[..name_len];
            format = crate::explain::Format::by_name(name)
                .ok_or_else(|| SqlError::new(codes::ER_UNKNOWN_EXPLAIN_FORMAT, format!("Unknown EXPLAIN format name: '{name}'")))?;
            rest = after[name_len..].trim_start();
        }
        let first = rest.split(|c: char| c.is_whitespace() || c == '(').next().unwrap_or_default();
        // EXPLAIN of a query (SELECT, WITH, a parenthesised one); otherwise of a table, as DESCRIBE.
        if !(first.eq_ignore_ascii_case("SELECT") || first.eq_ignore_ascii_case("WITH") || rest.starts_with('(')) {
            let (db, t) = self.split_name(rest.split_whitespace().next().unwrap_or_default());
            return show::show_columns(&self.info.engine.catalog(), &self.info, &db?, &t, false, None).map(Outcome::Rows);
        }
        let stmts = self.parse(rest, statement.operators, statement.div_operators)?;
        let Some(Statement::Query(q)) = stmts.first() else { return Err(SqlError::parse(rest)) };
        let catalog = self.info.engine.catalog();
        let env = crate::show::statement_env(&catalog, ReadView::current(0), &[], 0, &self.info);
        let (plan, _) = query::plan_query(&env, q, &[])?;
        Ok(Outcome::Rows(crate::explain::explain_as(&plan, format)))
    }

    /// `SELECT ... INTO @a, @b` in either of MySQL 8's places (the SQL parser takes only the
    /// one before FROM): `query` is the statement without the clause.
    pub(super) async fn select_into_text(&mut self, statement: &StatementText, query: &str, names: Vec<String>) -> Result<Outcome> {
        let parsed = self.parse(&rewrite_lock_in_share_mode(query), statement.operators, statement.div_operators)?;
        let mut stmt = parsed.first().cloned().ok_or_else(|| SqlError::parse(query))?;
        let Statement::Query(q) = &mut stmt else { return Err(SqlError::parse(query)) };
        let ast::SetExpr::Select(select) = q.body.as_mut() else {
            return Err(SqlError::new(codes::ER_PARSE_ERROR, "You have an error in your SQL syntax: INTO in a UNION"));
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
    pub(super) fn select_into_variables(&mut self, q: &ast::Query, params: &[Value]) -> Result<Outcome> {
        let into = select_into(q).expect("checked by the caller");
        let names: Vec<String> = into
            .targets
            .iter()
            .map(|t| {
                let text = t.to_string();
                match text.strip_prefix('@') {
                    Some(name) if !name.starts_with('@') => Ok(name.trim_matches(|c| c == '`' || c == '\'' || c == '"').to_ascii_lowercase()),
                    _ => Err(SqlError::new(codes::ER_SP_UNDECLARED_VAR, format!("Undeclared variable: {text}"))),
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
            return Err(SqlError::new(codes::ER_WRONG_NUMBER_OF_COLUMNS_IN_SELECT, "The used SELECT statements have a different number of columns"));
        }
        let count = rs.rows.len();
        // As MySQL's: the first row is assigned before a second one is found to be an error.
        match rs.rows.into_iter().next() {
            None => self.warnings.push(Warning {
                level: "Warning",
                code: codes::ER_SP_FETCH_NO_DATA.0,
                message: "No data - zero rows fetched, selected, or processed".into(),
            }),
            Some(row) => {
                for (name, value) in names.into_iter().zip(row) {
                    self.info.user_vars.borrow_mut().insert(name, value);
                }
            }
        }
        if count > 1 {
            return Err(SqlError::new(codes::ER_TOO_MANY_ROWS, "Result consisted of more than one row"));
        }
        Ok(Outcome::Done { affected: count.min(1) as u64, last_insert_id: 0, info: String::new() })
    }
}
