//! `FLUSH [NO_WRITE_TO_BINLOG | LOCAL] option [, option ...]`, and COM_REFRESH, which asks
//! for the same by bits.
//!
//! What each option does here (RELOAD is needed for all of them, 1227):
//! - `TABLES [t, ...]`: nothing to close or write (Quill keeps no table cache and no
//!   unwritten table data); a named table that does not exist is no error, as in MySQL.
//!   `WITH READ LOCK` and `FOR EXPORT` are refused (1235): Quill has no global read lock.
//! - `LOGS`, `SLOW LOGS`: the slow query log is closed and opened again at its next entry
//!   (a rotated file: a new one). `ERROR`, `GENERAL`, `ENGINE` and `RELAY LOGS`: nothing to
//!   reopen (the server log is standard error; there is no general log or relay log file).
//! - `BINARY LOGS`: the binary log's files are the commit log's segments, which do not end
//!   on demand: accepted with warning 1287 saying so.
//! - `STATUS`: the status counters are not reset: accepted with warning 1287.
//! - `PRIVILEGES`: handled with the account statements (`accounts`).
//! - `HOSTS`, `USER_RESOURCES`, `OPTIMIZER_COSTS`: nothing is cached: accepted.

use super::{Outcome, Session};
use crate::error::{Result, SqlError, Warning, codes};

/// COM_REFRESH's bits (`REFRESH_GRANT` ...), and the FLUSH option each asks for.
pub const REFRESH_OPTIONS: [(u8, &str); 5] = [(0x01, "PRIVILEGES"), (0x02, "LOGS"), (0x04, "TABLES"), (0x08, "HOSTS"), (0x10, "STATUS")];

impl Session {
    /// A FLUSH statement the session handles (module doc); `None` for one it leaves to
    /// others (PRIVILEGES, to the account statements).
    pub(super) fn flush(&mut self, sql: &str) -> Option<Result<Outcome>> {
        let words: Vec<&str> = sql.trim_end_matches(';').split(|c: char| c.is_whitespace() || c == ',').filter(|w| !w.is_empty()).collect();
        let mut options = &words[1..];
        if options.first().is_some_and(|w| w.eq_ignore_ascii_case("NO_WRITE_TO_BINLOG") || w.eq_ignore_ascii_case("LOCAL")) {
            options = &options[1..];
        }
        if options.first().is_some_and(|w| w.eq_ignore_ascii_case("PRIVILEGES")) {
            return None;
        }
        let options: Vec<String> = options.iter().map(|w| (*w).to_owned()).collect();
        Some(self.require_global(crate::accounts::RELOAD, "RELOAD").and_then(|()| self.flush_options(&options, sql)))
    }

    /// `options`: the words after FLUSH, as written.
    fn flush_options(&mut self, options: &[String], sql: &str) -> Result<Outcome> {
        if options.is_empty() {
            return Err(SqlError::parse(sql));
        }
        let mut i = 0;
        while i < options.len() {
            let option = options[i].to_ascii_uppercase();
            i += 1;
            match option.as_str() {
                "TABLES" | "TABLE" => {
                    let rest = &options[i..];
                    if rest.iter().any(|w| w.eq_ignore_ascii_case("WITH") || w.eq_ignore_ascii_case("FOR")) {
                        return Err(SqlError::unsupported("FLUSH TABLES WITH READ LOCK / FOR EXPORT (Quill has no global read lock)"));
                    }
                    return Ok(Outcome::ok());
                }
                "LOGS" => self.info.engine.slow_log.close(),
                "SLOW" | "ERROR" | "GENERAL" | "ENGINE" | "RELAY" | "BINARY" => {
                    if !options.get(i).is_some_and(|w| w.eq_ignore_ascii_case("LOGS")) {
                        return Err(SqlError::parse(sql));
                    }
                    i += 1;
                    match option.as_str() {
                        "SLOW" => self.info.engine.slow_log.close(),
                        "BINARY" => self.not_acted_on("FLUSH BINARY LOGS: the binary log's files are the commit log's segments, which do not end on demand"),
                        _ => {}
                    }
                }
                "STATUS" => self.not_acted_on("FLUSH STATUS: the status counters are not reset"),
                "HOSTS" | "USER_RESOURCES" | "OPTIMIZER_COSTS" => {}
                _ => return Err(SqlError::parse(sql)),
            }
        }
        Ok(Outcome::ok())
    }

    fn not_acted_on(&mut self, what: &str) {
        self.warnings.push(Warning {
            level: "Warning",
            code: codes::ER_WARN_DEPRECATED_SYNTAX.0,
            message: format!("{what} in Quill; the statement is accepted and does nothing"),
        });
    }

    /// COM_REFRESH with `bits`: the FLUSH options they ask for, as one FLUSH statement.
    ///
    /// # Errors
    /// As FLUSH.
    pub async fn refresh(&mut self, bits: u8) -> Result<Outcome> {
        let options: Vec<&str> = REFRESH_OPTIONS.iter().filter(|(bit, _)| bits & bit != 0).map(|(_, option)| *option).collect();
        if options.is_empty() {
            return Ok(Outcome::ok());
        }
        let mut last = Outcome::ok();
        for option in options {
            let mut results = self.run(&format!("FLUSH {option}")).await;
            last = results.pop().unwrap_or_else(|| Ok(Outcome::ok()))?;
        }
        Ok(last)
    }
}
