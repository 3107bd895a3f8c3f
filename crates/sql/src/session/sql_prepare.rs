//! SQL-level prepared statements: `PREPARE name FROM {'text' | @variable}`,
//! `EXECUTE name [USING @a, @b ...]`, `{DEALLOCATE | DROP} PREPARE name`.
//!
//! They are the binary protocol's prepared statements (`Session::prepare`,
//! `Session::execute_prepared`) under a name the session keeps: the names are the
//! session's own, case-insensitive, and a name prepared again replaces its statement, as in
//! MySQL. Each counts against `PREPARED_STATEMENTS_MAX` like a protocol statement. The
//! result of EXECUTE goes to the client as any text-protocol result does.

use quill_storage::Value;

use super::{Outcome, Session};
use crate::error::{Result, SqlError, codes};
use crate::text::StatementText;

impl Session {
    /// `PREPARE name FROM ...`.
    ///
    /// # Errors
    /// 1064 for a malformed statement; the preparing statement's own errors.
    pub(super) async fn sql_prepare(&mut self, statement: &StatementText) -> Result<Outcome> {
        let sql = statement.text.trim_end_matches(';').trim();
        let words: Vec<&str> = sql.splitn(4, char::is_whitespace).filter(|w| !w.is_empty()).collect();
        let (Some(name), Some(from), Some(source)) = (words.get(1), words.get(2), words.get(3)) else { return Err(SqlError::parse(sql)) };
        if !from.eq_ignore_ascii_case("FROM") {
            return Err(SqlError::parse(sql));
        }
        let name = statement_name(name);
        // The text is a string literal or a user variable, evaluated as SELECT would.
        let value = self.evaluate(statement, source).await?;
        let text = match value {
            Value::Null => "NULL".to_owned(),
            other => crate::ops::to_string_lossy(&other),
        };
        if let Some(old) = self.sql_prepared.remove(&name) {
            self.close_prepared(old);
        }
        let (id, _, _) = self.prepare(text.as_bytes())?;
        self.sql_prepared.insert(name, id);
        Ok(Outcome::Done { affected: 0, last_insert_id: 0, info: "Statement prepared".to_owned() })
    }

    /// `EXECUTE name [USING @a, ...]`.
    ///
    /// # Errors
    /// 1243 for an unknown name, 1210 for the wrong number of values; the statement's errors.
    pub(super) async fn sql_execute(&mut self, statement: &StatementText) -> Result<Outcome> {
        let sql = statement.text.trim_end_matches(';').trim();
        let mut words = sql.split_whitespace();
        words.next();
        let name = statement_name(words.next().ok_or_else(|| SqlError::parse(sql))?);
        let rest: Vec<&str> = words.collect();
        let variables: Vec<String> = match rest.first() {
            None => Vec::new(),
            Some(using) if using.eq_ignore_ascii_case("USING") => {
                rest[1..].join(" ").split(',').map(|v| v.trim().to_owned()).filter(|v| !v.is_empty()).collect()
            }
            Some(_) => return Err(SqlError::parse(sql)),
        };
        let id = *self.sql_prepared.get(&name).ok_or_else(|| unknown(&name, "EXECUTE"))?;
        let expected = self.prepared(id).map_or(0, |p| p.param_count);
        if variables.len() != expected {
            return Err(SqlError::new(codes::ER_WRONG_ARGUMENTS, "Incorrect arguments to EXECUTE"));
        }
        let mut params = Vec::with_capacity(variables.len());
        for v in &variables {
            let name = v.strip_prefix('@').ok_or_else(|| SqlError::parse(v))?.trim_matches('`').to_ascii_lowercase();
            params.push(self.info.user_vars.borrow().get(&name).cloned().unwrap_or(Value::Null));
        }
        let may_stream = self.may_stream;
        Box::pin(self.execute_prepared_streaming(id, params, may_stream)).await
    }

    /// `{DEALLOCATE | DROP} PREPARE name`.
    ///
    /// # Errors
    /// 1243 for an unknown name.
    pub(super) fn sql_deallocate(&mut self, words: &[&str]) -> Result<Outcome> {
        let name = statement_name(words.get(2).ok_or_else(|| SqlError::parse(&words.join(" ")))?);
        let id = self.sql_prepared.remove(&name).ok_or_else(|| unknown(&name, "DEALLOCATE PREPARE"))?;
        self.close_prepared(id);
        Ok(Outcome::ok())
    }

    /// The value of `expression`, evaluated as `SELECT expression` (never sent to the client).
    async fn evaluate(&mut self, statement: &StatementText, expression: &str) -> Result<Value> {
        let select = StatementText { text: format!("SELECT {expression}"), warnings: Vec::new(), ..statement.clone() };
        let may_stream = std::mem::replace(&mut self.may_stream, false);
        let evaluated = Box::pin(self.run_recognised_or_parsed(&select)).await;
        self.may_stream = may_stream;
        match evaluated? {
            Outcome::Rows(rs) => Ok(rs.rows.into_iter().next().and_then(|r| r.into_iter().next()).unwrap_or(Value::Null)),
            _ => Err(SqlError::parse(expression)),
        }
    }
}

/// A statement name as the session keeps it: without backquotes, in lower case.
fn statement_name(word: &str) -> String {
    word.trim_end_matches(';').trim_matches('`').to_ascii_lowercase()
}

fn unknown(name: &str, statement: &str) -> SqlError {
    SqlError::new(codes::ER_UNKNOWN_STMT_HANDLER, format!("Unknown prepared statement handler ({name}) given to {statement}"))
}
