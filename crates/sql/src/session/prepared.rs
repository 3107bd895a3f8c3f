//! Prepared statements over the binary protocol: `COM_STMT_PREPARE` parses and
//! describes a statement once ([`Session::prepare`]), `COM_STMT_EXECUTE` binds its parameters
//! and runs it ([`Session::execute_prepared`]), `COM_STMT_CLOSE` forgets it. At most
//! `PREPARED_STATEMENTS_MAX` are kept per session (1461 past that), as MySQL's
//! `max_prepared_stmt_count`.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use quill_storage::{ReadView, Value};
use sqlparser::ast::Statement;

use crate::error::{Result, SqlError, codes};
use crate::query::{self, OutColumn};
use crate::text::{self};

use super::{Outcome, PREPARED_STATEMENTS_MAX, Prepared, PreparedBody, Session, recognised_in_prepare, rewrite_lock_in_share_mode};

impl Session {
    /// Prepare a statement (COM_STMT_PREPARE), text in `character_set_client`.
    ///
    /// # Errors
    /// Parse errors; 1461 when too many statements are prepared.
    pub fn prepare(&mut self, sql: impl AsRef<[u8]>) -> Result<(u32, usize, Vec<OutColumn>)> {
        if self.prepared.len() >= PREPARED_STATEMENTS_MAX {
            return Err(SqlError::new(codes::ER_MAX_PREPARED_STMT_COUNT_REACHED, "Can't create more than max_prepared_stmt_count statements"));
        }
        let statement = text::single(sql.as_ref(), self.lex_options())?;
        if self.password_expired {
            self.refuse_while_password_expired("")?;
        }
        if recognised_in_prepare(&statement.text) {
            if statement.placeholders > 0 {
                return Err(SqlError::new(codes::ER_UNSUPPORTED_PS, "This command is not supported in the prepared statement protocol yet"));
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
            return Err(SqlError::new(codes::ER_UNSUPPORTED_PS, "This command is not supported in the prepared statement protocol yet"));
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

    pub(super) fn describe(&self, stmt: &Statement, params: usize) -> Result<Vec<OutColumn>> {
        let Statement::Query(q) = stmt else { return Ok(vec![]) };
        let catalog = self.info.engine.catalog();
        let nulls = vec![Value::Null; params];
        let env = crate::show::statement_env(&catalog, ReadView::current(0), &nulls, 0, &self.info);
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
        self.execute_prepared_streaming(id, params, true).await
    }

    /// [`Session::execute_prepared`]; `may_stream` false for an `EXECUTE` whose result must
    /// not stream (one that is not its command's first, or runs in a procedure).
    pub(super) async fn execute_prepared_streaming(&mut self, id: u32, params: Vec<Value>, may_stream: bool) -> Result<Outcome> {
        let (stmt, text) =
            self.prepared.get(&id).map(|p| (p.statement.clone(), p.text.clone())).ok_or_else(|| {
                SqlError::new(codes::ER_UNKNOWN_STMT_HANDLER, format!("Unknown prepared statement handler ({id}) given to mysqld_stmt_execute"))
            })?;
        self.may_stream = may_stream;
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
}
