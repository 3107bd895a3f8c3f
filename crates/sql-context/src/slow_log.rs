//! The slow query log, in MySQL's file format with Percona's InnoDB fields, so that
//! `pt-query-digest` and `mysqldumpslow` read it (`docs/slow-log.md`).
//!
//! A statement is slow when it ran longer than `long_query_time` (microseconds count) and
//! examined at least `min_examined_row_limit` rows, or, with `log_queries_not_using_indexes`,
//! when it read a whole table. Every slow statement adds one to `Slow_queries`; with
//! `slow_query_log` ON it is also written to `slow_query_log_file` as one entry:
//!
//! ```text
//! # Time: 2026-11-25T01:02:03.123456Z
//! # User@Host: root[root] @ localhost [127.0.0.1]  Id:     8
//! # Query_time: 0.512345  Lock_time: 0.500001 Rows_sent: 0  Rows_examined: 1
//! # InnoDB_trx_id: 1A2
//! # InnoDB_rec_lock_wait: 0.500000  InnoDB_queue_wait: 0.000000
//! # Blocker: thread_id=17,trx_id=418
//! # Blocker statement: UPDATE parent SET version = version + 1 WHERE id = 1
//! use shop;
//! SET timestamp=1795569723;
//! UPDATE parent SET version = version + 1 WHERE id = 1 AND version = 41;
//! ```
//!
//! The InnoDB lines come with `log_slow_verbosity` `innodb` or `full`; the blocker lines
//! whenever the statement waited for a row lock (Quill's own: the transaction and connection
//! it waited for longest, and what that connection was running then).
//!
//! The file is opened (created, appended to) at the first entry, after the file name
//! changes, and after `FLUSH SLOW LOGS` (which closes it: how a rotated file is let go); each
//! opening writes MySQL's three header lines. Each entry is one `write` of the whole entry, under the log's mutex, so entries of
//! concurrent sessions never interleave. Nothing is synced: as MySQL's, the slow log is not
//! crash-safe. Writing fails silently for the statement (it is logged to the error log), never
//! failing the statement itself.
//!
//! Where it sits: in `quill-sql-context` (the engine owns the file); the session gathers an entry's figures (`Session::run`,
//! `Session::execute_prepared`) and writes it here.

use std::fmt::Write as _;
use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use parking_lot::Mutex;

/// The file `slow_query_log_file` names when it is empty, in the data directory.
pub const DEFAULT_FILE: &str = "quill-slow.log";

/// A prepared statement's text with its parameters in place of its `?` placeholders, as
/// MySQL logs an executed prepared statement.
#[must_use]
pub fn with_parameters(text: &str, params: &[quill_storage::Value]) -> String {
    if params.is_empty() {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len() + 16 * params.len());
    let mut next = params.iter();
    let mut quote: Option<char> = None;
    let mut escaped = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match quote {
            Some(q) => {
                if escaped {
                    escaped = false;
                } else if c == '\\' && q != '`' {
                    escaped = true;
                } else if c == q {
                    quote = None;
                }
                out.push(c);
            }
            None if c == '\'' || c == '"' || c == '`' => {
                quote = Some(c);
                out.push(c);
            }
            None if c == '?' => {
                // The lexer numbers placeholders (`?0`, `?1`...): the number goes too.
                while chars.peek().is_some_and(char::is_ascii_digit) {
                    chars.next();
                }
                push_literal(&mut out, next.next());
            }
            None => out.push(c),
        }
    }
    out
}

/// A parameter as an SQL literal (`?` when there is none).
fn push_literal(out: &mut String, v: Option<&quill_storage::Value>) {
    use quill_storage::Value;
    match v {
        Some(Value::Null) => out.push_str("NULL"),
        Some(v @ (Value::Int(_) | Value::UInt(_) | Value::Double(_) | Value::Decimal(_))) => out.push_str(&quill_sql_types::ops::to_string_lossy(v)),
        Some(Value::Bytes(b)) => {
            out.push_str("X'");
            for byte in b {
                let _ = write!(out, "{byte:02X}");
            }
            out.push('\'');
        }
        Some(v) => {
            out.push('\'');
            out.push_str(&quill_sql_types::ops::to_string_lossy(v).replace('\\', "\\\\").replace('\'', "\\'"));
            out.push('\'');
        }
        None => out.push('?'),
    }
}

/// The slow log's open file, if any.
#[derive(Debug, Default)]
pub struct SlowLog {
    open: Mutex<Option<(PathBuf, File)>>,
}

/// The server the header names.
#[derive(Debug, Clone)]
pub struct Header {
    pub program: String,
    pub version: String,
    pub port: u16,
    pub socket: String,
}

/// The connection a statement waited for longest on a row lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blocker {
    pub connection_id: u32,
    pub trx_id: u64,
    /// What it was running when the wait began, or, `idle` between statements in its
    /// transaction, the last statement it ran.
    pub statement: Option<String>,
    pub idle: bool,
}

/// One slow statement's figures.
#[derive(Debug, Clone)]
pub struct Entry<'a> {
    /// When the statement started, microseconds since the epoch (UTC).
    pub start_us: i64,
    pub user: &'a str,
    pub host: &'a str,
    pub ip: &'a str,
    pub connection_id: u32,
    pub db: Option<&'a str>,
    pub query_time: Duration,
    pub lock_time: Duration,
    pub rows_sent: u64,
    pub rows_examined: u64,
    pub rows_affected: u64,
    pub errno: u16,
    pub killed: bool,
    pub bytes_received: u64,
    pub trx_id: Option<u64>,
    pub row_lock_wait: Duration,
    pub blocker: Option<Blocker>,
    pub text: &'a str,
}

/// What the entry shows beyond MySQL's default lines.
#[derive(Debug, Clone, Copy, Default)]
pub struct Detail {
    /// `log_slow_extra`: MySQL 8's extra fields Quill counts.
    pub extra: bool,
    /// `log_slow_verbosity` with `innodb` or `full`: Percona's InnoDB lines.
    pub innodb: bool,
}

impl SlowLog {
    /// Appends `entry` to the file at `path`, opening it (and writing the header) when it is
    /// not the open one.
    ///
    /// # Errors
    /// The file cannot be opened or written.
    pub fn write(&self, path: &Path, header: &Header, entry: &Entry<'_>, detail: Detail) -> std::io::Result<()> {
        let text = format_entry(entry, detail);
        let mut open = self.open.lock();
        if open.as_ref().is_none_or(|(p, _)| p != path) {
            let mut file = OpenOptions::new().create(true).append(true).open(path)?;
            file.write_all(format_header(header).as_bytes())?;
            *open = Some((path.to_owned(), file));
        }
        let (_, file) = open.as_mut().expect("opened above");
        file.write_all(text.as_bytes())
    }

    /// `FLUSH SLOW LOGS`: the file is closed, and opened again (after a rotation, a new one)
    /// at the next entry.
    pub fn close(&self) {
        *self.open.lock() = None;
    }
}

/// MySQL's three header lines, written each time the file is opened.
fn format_header(h: &Header) -> String {
    format!(
        "{}, Version: {} (Quill). started with:\nTcp port: {}  Unix socket: {}\nTime                 Id Command    Argument\n",
        h.program, h.version, h.port, h.socket
    )
}

fn seconds(d: Duration) -> String {
    format!("{:.6}", d.as_secs_f64())
}

/// One entry, as MySQL 8 writes it (the field order and spacing of `log_slow_extra` and of
/// Percona's InnoDB lines included).
#[must_use]
pub fn format_entry(e: &Entry<'_>, detail: Detail) -> String {
    let mut out = String::with_capacity(256 + e.text.len());
    let end_us = e.start_us + i64::try_from(e.query_time.as_micros()).unwrap_or(i64::MAX);
    let _ = writeln!(out, "# Time: {}", iso_time(end_us));
    let _ = writeln!(out, "# User@Host: {}[{}] @ {} [{}]  Id: {:>5}", e.user, e.user, e.host, e.ip, e.connection_id);
    let _ = write!(
        out,
        "# Query_time: {}  Lock_time: {} Rows_sent: {}  Rows_examined: {}",
        seconds(e.query_time),
        seconds(e.lock_time),
        e.rows_sent,
        e.rows_examined
    );
    if detail.extra {
        let _ = write!(
            out,
            " Thread_id: {} Errno: {} Killed: {} Bytes_received: {} Rows_affected: {} Start: {} End: {}",
            e.connection_id,
            e.errno,
            u8::from(e.killed),
            e.bytes_received,
            e.rows_affected,
            iso_time(e.start_us),
            iso_time(end_us)
        );
    }
    out.push('\n');
    if detail.innodb {
        if let Some(trx) = e.trx_id {
            let _ = writeln!(out, "# InnoDB_trx_id: {trx:X}");
        }
        let _ = writeln!(out, "# InnoDB_rec_lock_wait: {}  InnoDB_queue_wait: 0.000000", seconds(e.row_lock_wait));
    }
    if let Some(b) = &e.blocker {
        // One token, so pt-query-digest takes it as a string attribute (its report lists the
        // blockers of each query, with their shares).
        let _ = writeln!(out, "# Blocker: thread_id={},trx_id={}", b.connection_id, b.trx_id);
        if let Some(statement) = &b.statement {
            // Not a `Name: value` line, so parsers pass over it; on one line, as the entry's
            // own lines are.
            let which = if b.idle { "last statement (idle in transaction)" } else { "statement" };
            let _ = writeln!(out, "# Blocker {which}: {}", one_line(statement));
        }
    }
    if let Some(db) = e.db {
        let _ = writeln!(out, "use {db};");
    }
    let _ = writeln!(out, "SET timestamp={};", e.start_us.div_euclid(1_000_000));
    let text = e.text.trim_end();
    out.push_str(text);
    if !text.ends_with(';') {
        out.push(';');
    }
    out.push('\n');
    out
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `2026-11-25T01:02:03.123456Z`, as MySQL 8 writes times (`log_timestamps=UTC`).
fn iso_time(unix_us: i64) -> String {
    chrono::DateTime::from_timestamp_micros(unix_us).map_or_else(String::new, |t| t.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry() -> Entry<'static> {
        Entry {
            start_us: 1_795_569_723_000_000,
            user: "root",
            host: "localhost",
            ip: "127.0.0.1",
            connection_id: 8,
            db: Some("shop"),
            query_time: Duration::from_micros(512_345),
            lock_time: Duration::from_micros(500_001),
            rows_sent: 0,
            rows_examined: 1,
            rows_affected: 1,
            errno: 0,
            killed: false,
            bytes_received: 40,
            trx_id: Some(0x1A2),
            row_lock_wait: Duration::from_micros(500_000),
            blocker: Some(Blocker { connection_id: 17, trx_id: 418, statement: Some("UPDATE parent\n  SET v = 1".into()), idle: false }),
            text: "UPDATE parent SET v = 2",
        }
    }

    #[test]
    fn an_entry_has_mysqls_lines_and_percona_fields() {
        let text = format_entry(&entry(), Detail { extra: false, innodb: true });
        assert_eq!(
            text,
            "# Time: 2026-11-25T01:22:03.512345Z\n\
             # User@Host: root[root] @ localhost [127.0.0.1]  Id:     8\n\
             # Query_time: 0.512345  Lock_time: 0.500001 Rows_sent: 0  Rows_examined: 1\n\
             # InnoDB_trx_id: 1A2\n\
             # InnoDB_rec_lock_wait: 0.500000  InnoDB_queue_wait: 0.000000\n\
             # Blocker: thread_id=17,trx_id=418\n\
             # Blocker statement: UPDATE parent SET v = 1\n\
             use shop;\n\
             SET timestamp=1795569723;\n\
             UPDATE parent SET v = 2;\n"
        );
        let extra = format_entry(&Entry { blocker: None, ..entry() }, Detail { extra: true, innodb: false });
        assert!(extra.contains(" Rows_examined: 1 Thread_id: 8 Errno: 0 Killed: 0 Bytes_received: 40 Rows_affected: 1 Start: 2026-11-25T01:22:03.000000Z End: 2026-11-25T01:22:03.512345Z\n"), "{extra}");
        assert!(!extra.contains("InnoDB") && !extra.contains("blocker"));
    }

    #[test]
    fn a_prepared_statement_is_logged_with_its_parameters() {
        use quill_storage::Value;
        let params = [Value::Int(7), Value::Str("it's \\ ?".into()), Value::Null, Value::Bytes(vec![0xAB])];
        assert_eq!(
            with_parameters("UPDATE t SET a = ?0, b = ?1 WHERE c = '?' AND d <=> ?2 AND e = ?3", &params),
            "UPDATE t SET a = 7, b = 'it\\'s \\\\ ?' WHERE c = '?' AND d <=> NULL AND e = X'AB'"
        );
    }
}
