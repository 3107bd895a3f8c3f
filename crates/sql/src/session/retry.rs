//! Waits and retries. The executor runs synchronously and never blocks a runtime thread:
//! where a statement must wait it stops with a [`Wait`] (`SqlError::must_wait`).
//! [`Session::execute_attempts`] undoes the statement, makes the wait asynchronously and runs it
//! again from its start, keeping the locks it holds:
//! - `Wait::RowLock`: until the grant, at most `innodb_lock_wait_timeout` (1205, which undoes the
//!   statement only unless `innodb_rollback_on_timeout`), or until the deadlock detector picks
//!   this transaction (1213, which rolls it back whole), or a KILL (1317);
//! - `Wait::Function`: what the function waits for (`statement_waits`), bounded by its own
//!   timeout; a KILL QUERY ends the wait and the statement goes on with the function's answer;
//! - `Wait::DdlGate`: `DDL_GATE_RETRY` at a time until a checkpoint lets go of the DDL gate.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use quill_storage::Value;
use quill_txn::WaitOutcome;
use sqlparser::ast::Statement;

use crate::error::{Result, SqlError, Wait};
use crate::vars;

use super::{DDL_GATE_RETRY, Outcome, Session};

impl Session {
    /// What a function that stopped the statement waits for (`statement_waits`): the
    /// user-level lock a `GET_LOCK` queued for (1 when granted, 0 when its timeout passed
    /// first, NULL after a KILL QUERY), or SLEEP's time (0, or 1 after a KILL QUERY), as
    /// MySQL's; a KILL CONNECTION ends either with 1317.
    pub(super) async fn wait_in_function(&mut self, pending: crate::statement_waits::Pending) -> Result<Value> {
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
    pub(super) fn after_kill_in_function(&self, was_killed: bool, done: Value, killed: Value) -> Result<Value> {
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
    pub(super) async fn execute_attempts(&mut self, stmt: &Statement, params: &[Value], text: &str) -> Result<Outcome> {
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
    pub(super) fn statement_end_after_error(&mut self, whole: bool) {
        if whole || self.txn.as_ref().is_some_and(|t| !t.explicit) && self.autocommit() {
            self.rollback();
        }
    }
}
