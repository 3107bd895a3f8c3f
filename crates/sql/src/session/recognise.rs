//! The statements sqlparser does not read, recognised by their first words before it
//! runs: account statements, `LOCK TABLES`, LOAD DATA, replication control, `PURGE BINARY
//! LOGS`, `KILL`, `SHOW ...`, `SET TRANSACTION`, `START TRANSACTION WITH CONSISTENT SNAPSHOT`
//! and their kin. [`Session::recognise`] answers `None` for a statement the parser should read.

use std::time::Duration;

use quill_storage::Value;

use crate::error::{Result, SqlError, Warning, codes};
use crate::show;
use crate::text::StatementText;

use super::{Outcome, Session, calls_waiting_function, checksum};

/// First words of statements [`Session::recognise`] never answers, and whose text may be
/// long (a multi-row INSERT may be megabytes): they go to the parser without a scan of
/// their words.
const PARSER_ONLY_FIRST_WORDS: &[&str] = &["INSERT", "REPLACE", "UPDATE", "DELETE"];

impl Session {
    /// Statements handled before the parser: SHOW, transaction control, KILL...
    pub(super) async fn recognise(&mut self, statement: &StatementText) -> Option<Result<Outcome>> {
        let sql = statement.text.as_str();
        let first = crate::words::Words::new(sql).next().unwrap_or_default();
        if PARSER_ONLY_FIRST_WORDS.iter().any(|w| first.eq_ignore_ascii_case(w)) {
            return None;
        }
        let words = crate::words::words(sql);
        let upper: Vec<String> = words.iter().take(6).map(|w| w.to_ascii_uppercase()).collect();
        let up = |i: usize| upper.get(i).map_or("", String::as_str);
        if matches!(up(0), "CREATE" | "DROP")
            && let Some(statement) = quill_sql_frontend::program_ddl::recognise(sql)
        {
            return Some(match statement {
                Ok(statement) => self.program_statement(&statement, sql).await,
                Err(e) => Err(e),
            });
        }
        if matches!(up(0), "CREATE" | "ALTER" | "DROP" | "GRANT" | "REVOKE" | "SHOW" | "SET" | "FLUSH")
            && let Some(statement) = crate::account_statements::parse(sql)
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
            "EXPLAIN" => Some(self.explain(statement).await),
            "KILL" => Some(self.kill(&words)),
            "FLUSH" => self.flush(sql),
            "CHECKSUM" if checksum::is_checksum_table(&upper) => Some(self.checksum_table(sql).await),
            "CHECK" | "ANALYZE" | "OPTIMIZE" | "REPAIR" if upper.iter().skip(1).take(2).any(|w| w == "TABLE" || w == "TABLES") => {
                Some(self.table_maintenance(sql))
            }
            "LOCK" | "UNLOCK" if crate::table_lock_statements::is_table_lock_statement(&upper) => Some(self.table_lock_statement(sql).await),
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
            "CHANGE" | "START" | "STOP" | "RESET" => crate::replica_statements::parse(sql, &upper).map(|r| r.and_then(|s| self.replica_statement(s))),
            _ => None,
        }
    }

    /// A statement that makes or drops a stored program, under an exclusive metadata lock on
    /// the table a trigger is for (no statement writes it while its triggers change).
    pub(super) async fn program_statement(&mut self, statement: &quill_sql_frontend::program_ddl::ProgramStatement, sql: &str) -> Result<Outcome> {
        use quill_sql_frontend::program_ddl::ProgramStatement;
        let table = match statement {
            ProgramStatement::CreateTrigger(def) => Some(crate::trigger_ddl::trigger_table(&self.info, def)?),
            ProgramStatement::DropTrigger { db, name, .. } => {
                let db = db.clone().or_else(|| self.info.db.clone()).ok_or_else(SqlError::no_db)?;
                self.info.engine.catalog().trigger(&db, name).map(|t| (db, t.table.clone()))
            }
            _ => None,
        };
        let requests = table.into_iter().map(|t| (t, crate::mdl::Mode::Exclusive)).collect();
        let r = match self.acquire_locks(requests, false).await {
            Ok(()) => self.program_ddl(statement, sql),
            Err(e) => Err(e),
        };
        if self.txn.is_none() {
            self.info.engine.mdl.release_all(self.info.connection_id);
        }
        r
    }

    /// `PURGE {BINARY | MASTER} LOGS {TO 'file' | BEFORE datetime}`: a warning (1867) names
    /// each file it had to keep, as MySQL's does for a file a replica reads.
    pub(super) async fn purge_binary_logs(&mut self, statement: &StatementText, words: &[&str]) -> Result<Outcome> {
        self.require_global(crate::accounts::SUPER, "SUPER or BINLOG_ADMIN")?;
        let Some(binlog) = self.engine().binary_log.get().cloned() else {
            return Err(SqlError::new(codes::ER_NO_BINARY_LOGGING, "You are not using binary logging"));
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
                let seconds =
                    seconds.filter(|s| *s >= 0.0).ok_or_else(|| SqlError::new(codes::ER_WRONG_ARGUMENTS, "Incorrect arguments to PURGE BINARY LOGS BEFORE"))?;
                (None, Some(std::time::UNIX_EPOCH + Duration::from_secs_f64(seconds)))
            }
            _ => return Err(SqlError::parse(&statement.text)),
        };
        let kept = tokio::task::block_in_place(|| binlog.purge(to.as_deref(), before))?;
        for name in kept {
            self.warnings.push(Warning {
                level: "Warning",
                code: codes::ER_WARN_PURGE_LOG_IN_USE.0,
                message: format!(
                    "file {name} was not purged because it is still needed: by crash recovery (until the next checkpoint) or by a connected replica"
                ),
            });
        }
        Ok(Outcome::ok())
    }

    /// CHANGE REPLICATION SOURCE TO, START / STOP / RESET REPLICA (`replica_control`).
    pub(super) fn replica_statement(&mut self, statement: crate::replica_statements::ReplicaStatement) -> Result<Outcome> {
        use crate::replica_statements::ReplicaStatement;
        self.require_global(crate::accounts::SUPER, "SUPER or REPLICATION_SLAVE_ADMIN")?;
        let Some(replica) = self.engine().replica.get().cloned() else {
            return Err(SqlError::new(codes::ER_BAD_SLAVE, "The server is not configured as replica; fix in config file or with CHANGE REPLICATION SOURCE TO"));
        };
        match statement {
            ReplicaStatement::Change(options) => replica.change_source(options)?,
            ReplicaStatement::Start => {
                if !replica.start()? {
                    self.warnings.push(Warning {
                        level: "Note",
                        code: codes::ER_SLAVE_CHANNEL_WAS_RUNNING.0,
                        message: "Replication thread(s) for channel '' are already runnning.".into(),
                    });
                }
            }
            ReplicaStatement::Stop => {
                if !replica.stop()? {
                    self.warnings.push(Warning {
                        level: "Note",
                        code: codes::ER_SLAVE_CHANNEL_WAS_NOT_RUNNING.0,
                        message: "Replication thread(s) for channel '' are already stopped.".into(),
                    });
                }
            }
            ReplicaStatement::Reset { all } => replica.reset(all)?,
        }
        Ok(Outcome::ok())
    }
}
