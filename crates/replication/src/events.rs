//! One committed transaction, as the commit log holds it, made into binlog events
//! (`docs/binlog.md`, "A transaction"):
//!
//! - rows: a GTID event, a QUERY `BEGIN`, then per run of changes of one kind on
//!   one table a row event (WRITE, UPDATE or DELETE_ROWS) of at most
//!   [`ROWS_EVENT_BYTES_MAX`] of rows, each table's TABLE_MAP before its first, and an XID;
//! - DDL: a GTID event and a QUERY with the statement, its default database, `sql_mode` and
//!   time zone;
//! - `CREATE TABLE ... SELECT` (a DDL change followed by the rows it inserted): one
//!   transaction, as MySQL 8.0.21+ logs it: a GTID event, a QUERY with the table's definition
//!   and ` START TRANSACTION` (the clause MySQL's replicas read as "rows follow in this
//!   transaction"), the row events and an XID.
//!
//! The GTID event names this server's own transactions `server_uuid:seq`, with the commit
//! time in microseconds as both the original and the immediate one. A transaction this
//! server applied as a replica keeps the GTID, original commit time and original server
//! version it came with (its ORIGIN change); its immediate commit time is this server's.
//! Its changes to `mysql.gtid_executed` (the replica's own bookkeeping) are left out, as
//! MySQL's binary log has none.
//!
//! Each event's `log_pos` is where it ends in the binary log the caller says it starts in.
//! The columns are the ones the table had when the change was logged (the caller's
//! [`Tables`], over `quill_sql::schema_history`), so events and their sizes do not change
//! when a table is altered later. Updates and deletes need the images they replaced
//! (`binlog_row_image=FULL`, the default): a change logged without one is an error.
//! The logical clock counts transactions within the file (`sequence_number` is the
//! transaction's ordinal there, from 1, as MySQL's), and parallel apply is not offered yet:
//! each transaction's `last_committed` is the one before it.

use quill_log::{Change, DdlContext, Origin};
use quill_protocol::binary::BinaryValue;
use quill_protocol::binlog::rows::{Column, ColumnKind, RowValueError, Rows, rows_body, table_map_body};
use quill_protocol::binlog::{EventHeader, Gtid, QueryContext, UUID_BYTES, event_at, event_type, gtid_body, gtid_event_bytes, query_body, xid_body};
use std::sync::Arc;

use quill_sql::schema_history::TableDef;
use quill_sql::types::{IntKind, LobKind, SqlType};
use quill_storage::{Value, decode_log_row};

/// Bytes of rows one row event holds at most (MySQL's `binlog_row_event_max_size` default):
/// a larger run of changes is split, a single larger row is an event of its own.
pub const ROWS_EVENT_BYTES_MAX: usize = 8192;

/// The server whose binary log the events are: its `server_id`, `server_uuid`, and its
/// version as `major * 10000 + minor * 100 + patch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Source {
    pub server_id: u32,
    pub uuid: [u8; UUID_BYTES],
    pub server_version: u32,
    /// The collation ids a QUERY event names for the client, the connection and the server
    /// (`collation_connection` twice and `collation_server`): the replica runs DDL under
    /// them, so a replica must know them (MariaDB 10.11 has no utf8mb4_0900_ai_ci).
    pub charsets: [u16; 3],
}

/// A committed transaction: its sequence number (the `seq` of its commit record, the GTID's
/// number; 0 for a replicated one), commit time, changes (a replicated one's end with its
/// ORIGIN), and its ordinal among the transactions of its binary log file, from 1.
#[derive(Debug, Clone, Copy)]
pub struct Transaction<'a> {
    pub seq: u64,
    pub commit_us: u64,
    pub changes: &'a [Change],
    pub ordinal: u64,
}

impl Transaction<'_> {
    /// Where a replicated transaction came from (`None`: this server's own).
    #[must_use]
    pub fn origin(&self) -> Option<&Origin> {
        match self.changes.last() {
            Some(Change::Origin(origin)) => Some(origin),
            _ => None,
        }
    }

    /// Its changes, without the ORIGIN.
    fn body(&self) -> &[Change] {
        match self.changes.split_last() {
            Some((Change::Origin(_), rest)) => rest,
            _ => self.changes,
        }
    }
}

/// What ends the QUERY of a `CREATE TABLE ... SELECT` whose rows follow in the same
/// transaction (MySQL 8.0.21+'s atomic CTAS).
pub const CREATE_SELECT_SUFFIX: &str = "START TRANSACTION";

/// A change of the server's own bookkeeping, which its binary log leaves out: the
/// replica's GTID table (`mysql.gtid_executed`) and the grant tables (accounts are each
/// server's own; docs/accounts.md).
fn is_gtid_bookkeeping(change: &Change) -> bool {
    match change {
        Change::Insert { db, table, .. } | Change::Update { db, table, .. } | Change::Delete { db, table, .. } => {
            (db.as_str(), table.as_str()) == quill_sql::replica_control::GTID_TABLE || quill_sql::accounts::grant_tables::is_grant_table(db, table)
        }
        _ => false,
    }
}

/// The definition a table had when the transaction was logged, by database and name.
pub type Tables<'a> = &'a dyn Fn(&str, &str) -> Option<Arc<TableDef>>;

/// Why a transaction cannot be made into events.
#[derive(Debug, thiserror::Error)]
pub enum TranslateError {
    #[error("table {0}.{1} of a logged change is not in the catalog")]
    UnknownTable(String, String),
    #[error("a change of {0}.{1} was logged without the row it replaced (binlog_row_image=MINIMAL)")]
    NoBeforeImage(String, String),
    #[error("a logged row of {0}.{1} does not decode")]
    BadRow(String, String),
    #[error("a row of {0}.{1} does not fit its columns: {2}")]
    Value(String, String, RowValueError),
    #[error("a change the log no longer writes (from an older log): {0}")]
    OldChange(&'static str),
}

/// Appends the events of `tx` to `out`, starting at byte `*position` of the binary log, which
/// moves past them.
///
/// # Errors
/// See [`TranslateError`]; `out` and `*position` are as they were then.
pub fn transaction(out: &mut Vec<u8>, source: &Source, tables: Tables<'_>, tx: &Transaction<'_>, position: &mut u64) -> Result<(), TranslateError> {
    let header = EventHeader { timestamp: (tx.commit_us / 1_000_000) as u32, server_id: source.server_id, log_pos: 0, flags: 0 };
    let origin = tx.origin().copied().unwrap_or(Origin {
        uuid: source.uuid,
        gno: tx.seq,
        original_commit_us: tx.commit_us,
        original_server_version: source.server_version,
    });
    let mut gtid = Gtid {
        uuid: origin.uuid,
        gno: origin.gno,
        last_committed: tx.ordinal.saturating_sub(1),
        sequence_number: tx.ordinal,
        original_commit_us: origin.original_commit_us,
        immediate_commit_us: tx.commit_us,
        transaction_length: 1 << 10,
        original_server_version: origin.original_server_version,
        immediate_server_version: source.server_version,
    };
    // The GTID event says how long the transaction is, itself included, and its own length
    // depends on that number's: the rest is made once for a guessed GTID length, and again
    // in the rare case the guess was wrong.
    let mut guess = gtid_event_bytes(&gtid);
    loop {
        let mut rest = Vec::new();
        let mut at = *position + guess as u64;
        body_events(&mut rest, source, &header, tables, tx, &mut at)?;
        gtid.transaction_length = (guess + rest.len()) as u64;
        let actual = gtid_event_bytes(&gtid);
        if actual != guess {
            guess = actual;
            continue;
        }
        event_at(out, &header, position, event_type::GTID, |b| gtid_body(b, &gtid));
        debug_assert_eq!(*position + rest.len() as u64, at, "the GTID event took the length told");
        out.extend_from_slice(&rest);
        *position = at;
        return Ok(());
    }
}

/// Everything after the GTID event.
fn body_events(out: &mut Vec<u8>, source: &Source, header: &EventHeader, tables: Tables<'_>, tx: &Transaction<'_>, at: &mut u64) -> Result<(), TranslateError> {
    match tx.body() {
        [Change::Ddl { db, sql, context }, rest @ ..] => {
            let context = context.clone().unwrap_or_default();
            // A replicated statement's record also holds its GTID's row, which is left out.
            if rest.iter().all(is_gtid_bookkeeping) {
                event_at(out, header, at, event_type::QUERY, |b| query_body(b, &query_context(source, db, &context), sql));
                return Ok(());
            }
            let create = format!("{sql} {CREATE_SELECT_SUFFIX}");
            event_at(out, header, at, event_type::QUERY, |b| query_body(b, &query_context(source, db, &context), &create));
        }
        _ => event_at(out, header, at, event_type::QUERY, |b| query_body(b, &query_context(source, "", &DdlContext::default()), "BEGIN")),
    }
    let mut mapped: Vec<u64> = Vec::new();
    let mut run: Option<Run> = None;
    for change in tx.body() {
        let (db, table, kind, before, after) = match change {
            Change::Insert { db, table, row, .. } => (db, table, Kind::Write, None, Some(row)),
            Change::Update { db, table, before, row, .. } => {
                (db, table, Kind::Update, Some(before.as_ref().ok_or_else(|| TranslateError::NoBeforeImage(db.clone(), table.clone()))?), Some(row))
            }
            Change::Delete { db, table, before, .. } => {
                (db, table, Kind::Delete, Some(before.as_ref().ok_or_else(|| TranslateError::NoBeforeImage(db.clone(), table.clone()))?), None)
            }
            Change::Put { .. } | Change::PutV1 { .. } => return Err(TranslateError::OldChange("PUT")),
            Change::Ddl { .. } | Change::StreamPart { .. } | Change::StreamCommit { .. } | Change::StreamAbort { .. } | Change::Origin(_) => continue,
        };
        if is_gtid_bookkeeping(change) {
            continue;
        }
        let meta = tables(db, table).ok_or_else(|| TranslateError::UnknownTable(db.clone(), table.clone()))?;
        if !mapped.contains(&meta.id) {
            // A statement's table maps come before its rows events: a table first met after
            // rows ends the statement there (MariaDB's I/O thread refuses a TABLE_MAP after a
            // rows event without STMT_END_F), and the next statement maps its tables again.
            if let Some(pending) = run.take() {
                pending.write(out, header, at, true)?;
                mapped.clear();
            }
        } else if run.as_ref().is_some_and(|r| r.table.id != meta.id || r.kind != kind || r.bytes >= ROWS_EVENT_BYTES_MAX) {
            run.take().expect("checked").write(out, header, at, false)?;
        }
        if !mapped.contains(&meta.id) {
            mapped.push(meta.id);
            let columns = columns(&meta);
            let primary: Vec<usize> = meta.primary.clone();
            event_at(out, header, at, event_type::TABLE_MAP, |b| table_map_body(b, meta.id, &meta.db, &meta.name, &columns, &primary));
        }
        let run = run.get_or_insert_with(|| Run { table: Arc::clone(&meta), kind, rows: Vec::new(), bytes: 0 });
        let decode = |image: &Vec<u8>| -> Result<Vec<BinaryValue>, TranslateError> {
            let row = decode_log_row(image).ok_or_else(|| TranslateError::BadRow(db.clone(), table.clone()))?;
            Ok(row.iter().zip(&meta.columns).map(|(v, c)| binlog_value(v, &c.ty)).collect())
        };
        run.bytes += before.map_or(0, Vec::len) + after.map_or(0, Vec::len);
        run.rows.push((before.map(decode).transpose()?, after.map(decode).transpose()?));
    }
    if let Some(run) = run {
        run.write(out, header, at, true)?;
    }
    event_at(out, header, at, event_type::XID, |b| xid_body(b, tx.ordinal));
    Ok(())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Write,
    Update,
    Delete,
}

/// A changed row's values before and after (`None`: no row then).
type RowImages = (Option<Vec<BinaryValue>>, Option<Vec<BinaryValue>>);

/// Changes of one kind on one table, waiting to be one row event.
struct Run {
    table: Arc<TableDef>,
    kind: Kind,
    rows: Vec<RowImages>,
    /// Bytes of the rows' log images: the event's size, near enough.
    bytes: usize,
}

impl Run {
    fn write(self, out: &mut Vec<u8>, header: &EventHeader, at: &mut u64, statement_end: bool) -> Result<(), TranslateError> {
        let columns = columns(&self.table);
        let images = |pick: fn(&RowImages) -> Option<&[BinaryValue]>| -> Vec<&[BinaryValue]> { self.rows.iter().filter_map(pick).collect() };
        let befores = images(|r| r.0.as_deref());
        let afters = images(|r| r.1.as_deref());
        let pairs: Vec<(&[BinaryValue], &[BinaryValue])> = befores.iter().copied().zip(afters.iter().copied()).collect();
        let rows = match self.kind {
            Kind::Write => Rows::Write(&afters),
            Kind::Update => Rows::Update(&pairs),
            Kind::Delete => Rows::Delete(&befores),
        };
        let mut body = Vec::new();
        rows_body(&mut body, self.table.id, statement_end, &columns, rows)
            .map_err(|e| TranslateError::Value(self.table.db.clone(), self.table.name.clone(), e))?;
        event_at(out, header, at, rows.event_type(), |b| b.extend_from_slice(&body));
        Ok(())
    }
}

/// A table's columns as TABLE_MAP describes them.
fn columns(table: &TableDef) -> Vec<Column<'_>> {
    table
        .columns
        .iter()
        .map(|c| Column {
            name: &c.name,
            kind: column_kind(&c.ty),
            nullable: c.nullable,
            unsigned: matches!(c.ty, SqlType::Int { unsigned: true, .. } | SqlType::Decimal { unsigned: true, .. }),
            collation: if c.ty.is_string() { c.ty.collation().id() } else { 63 },
        })
        .collect()
}

/// Bytes a character of the column's character set takes at most.
fn char_bytes(ty: &SqlType) -> u32 {
    let id = u8::try_from(ty.collation().id()).unwrap_or(255);
    match quill_sql::charset::Charset::from_collation_id(id) {
        Some(quill_sql::charset::Charset::Utf8mb3) => 3,
        Some(quill_sql::charset::Charset::Latin1 | quill_sql::charset::Charset::Binary) => 1,
        _ => 4,
    }
}

/// How the binary log lays out a column of type `ty`.
fn column_kind(ty: &SqlType) -> ColumnKind {
    let bytes = |len: u32| u16::try_from(len).unwrap_or(u16::MAX);
    match ty {
        SqlType::Int { kind, .. } => match kind {
            IntKind::Tiny => ColumnKind::Tiny,
            IntKind::Small => ColumnKind::Short,
            IntKind::Medium => ColumnKind::Int24,
            IntKind::Int => ColumnKind::Long,
            IntKind::Big => ColumnKind::LongLong,
        },
        SqlType::Decimal { precision, scale, .. } => ColumnKind::Decimal { precision: *precision, scale: *scale },
        SqlType::Float => ColumnKind::Float,
        SqlType::Double => ColumnKind::Double,
        SqlType::Char { len, .. } => ColumnKind::Char { max_bytes: bytes(len * char_bytes(ty)) },
        SqlType::VarChar { len, .. } => ColumnKind::VarChar { max_bytes: bytes(len * char_bytes(ty)) },
        SqlType::Binary(len) => ColumnKind::Char { max_bytes: bytes(*len) },
        SqlType::VarBinary(len) => ColumnKind::VarChar { max_bytes: bytes(*len) },
        SqlType::Text { kind, .. } | SqlType::Blob(kind) => ColumnKind::Blob {
            length_bytes: match kind {
                LobKind::Tiny => 1,
                LobKind::Normal => 2,
                LobKind::Medium => 3,
                LobKind::Long => 4,
            },
        },
        SqlType::Enum { members, .. } => ColumnKind::Enum { pack_length: if members.len() > 255 { 2 } else { 1 } },
        SqlType::Set { members, .. } => ColumnKind::Set { pack_length: u8::try_from(members.len().div_ceil(8)).unwrap_or(8) },
        // JSON goes as its text, a LONGTEXT, as MariaDB's JSON is (not MySQL's binary JSON).
        SqlType::Json => ColumnKind::Blob { length_bytes: 4 },
        SqlType::Date => ColumnKind::Date,
        SqlType::Year => ColumnKind::Year,
        SqlType::Bit(bits) => ColumnKind::Bit { bits: *bits },
        SqlType::DateTime(fsp) => ColumnKind::DateTime { fsp: *fsp },
        SqlType::Timestamp(fsp) => ColumnKind::Timestamp { fsp: *fsp },
        SqlType::Time(fsp) => ColumnKind::Time { fsp: *fsp },
        // A column never has the type of a bare NULL.
        SqlType::Null => ColumnKind::Tiny,
    }
}

/// A stored value of a column of type `ty` as a row event carries it. A TIMESTAMP's stored
/// value is taken as UTC.
fn binlog_value(v: &Value, ty: &SqlType) -> BinaryValue {
    use chrono::{Datelike, Timelike};
    match v {
        Value::Null => BinaryValue::Null,
        Value::Int(i) => BinaryValue::Int(*i),
        Value::UInt(u) => BinaryValue::UInt(*u),
        Value::Double(f) => BinaryValue::Double(*f),
        Value::Decimal(d) => BinaryValue::Bytes(d.to_string().into_bytes()),
        // An ENUM is logged as its member's number, a SET as its members' bits.
        Value::Str(s) if matches!(ty, SqlType::Enum { .. }) => {
            let SqlType::Enum { members, .. } = ty else { unreachable!() };
            BinaryValue::UInt(members.iter().position(|m| m == s).map_or(0, |i| i as u64 + 1))
        }
        Value::Str(s) if matches!(ty, SqlType::Set { .. }) => {
            let SqlType::Set { members, .. } = ty else { unreachable!() };
            BinaryValue::UInt(s.split(',').filter_map(|part| members.iter().position(|m| m == part)).fold(0, |bits, i| bits | 1 << i))
        }
        Value::Str(s) => {
            let id = u8::try_from(ty.collation().id()).unwrap_or(255);
            let charset = quill_sql::charset::Charset::from_collation_id(id).unwrap_or(quill_sql::charset::Charset::Utf8mb4);
            BinaryValue::Bytes(charset.encode(s).into_owned())
        }
        Value::Bytes(b) => BinaryValue::Bytes(b.clone()),
        Value::Date(days) => quill_sql::types::date_from_days(*days).map_or(BinaryValue::Null, |d| BinaryValue::Date {
            year: d.year() as u16,
            month: d.month() as u8,
            day: d.day() as u8,
        }),
        Value::DateTime(us) => quill_sql::types::datetime_from_micros(*us).map_or(BinaryValue::Null, |d| BinaryValue::DateTime {
            year: d.year() as u16,
            month: d.month() as u8,
            day: d.day() as u8,
            hour: d.hour() as u8,
            minute: d.minute() as u8,
            second: d.second() as u8,
            micro: d.nanosecond() / 1000,
        }),
        Value::Time(us) => BinaryValue::time_from_micros(*us),
    }
}

/// A QUERY event's context for a statement run in `db` with `context`.
fn query_context<'a>(source: &Source, db: &'a str, context: &'a DdlContext) -> QueryContext<'a> {
    QueryContext {
        thread_id: 0,
        exec_time: 0,
        error_code: 0,
        db,
        sql_mode: sql_mode_bits(&context.sql_mode),
        time_zone: &context.time_zone,
        charsets: source.charsets,
    }
}

/// MySQL 8's bit of each `sql_mode` name (its `sql_mode.h`), as QUERY events carry them.
const SQL_MODE_BITS: [(&str, u64); 17] = [
    ("REAL_AS_FLOAT", 1 << 0),
    ("PIPES_AS_CONCAT", 1 << 1),
    ("ANSI_QUOTES", 1 << 2),
    ("IGNORE_SPACE", 1 << 3),
    ("ONLY_FULL_GROUP_BY", 1 << 5),
    ("NO_UNSIGNED_SUBTRACTION", 1 << 6),
    ("NO_DIR_IN_CREATE", 1 << 7),
    ("ANSI", 1 << 18),
    ("NO_AUTO_VALUE_ON_ZERO", 1 << 19),
    ("NO_BACKSLASH_ESCAPES", 1 << 20),
    ("STRICT_TRANS_TABLES", 1 << 21),
    ("STRICT_ALL_TABLES", 1 << 22),
    ("NO_ZERO_IN_DATE", 1 << 23),
    ("NO_ZERO_DATE", 1 << 24),
    ("ERROR_FOR_DIVISION_BY_ZERO", 1 << 26),
    ("TRADITIONAL", 1 << 27),
    ("NO_ENGINE_SUBSTITUTION", 1 << 30),
];

/// The `sql_mode` value a QUERY event's bits stand for (bits MySQL 8 does not name are left
/// out): what a replica runs the statement under.
#[must_use]
pub fn sql_mode_names(bits: u64) -> String {
    SQL_MODE_BITS.iter().filter(|(_, bit)| bits & bit != 0).map(|(name, _)| *name).collect::<Vec<_>>().join(",")
}

/// The bits of a `sql_mode` value (names MySQL 8 does not have count for nothing).
fn sql_mode_bits(mode: &str) -> u64 {
    mode.split(',').filter_map(|name| SQL_MODE_BITS.iter().find(|(n, _)| n.eq_ignore_ascii_case(name.trim())).map(|(_, bit)| bit)).fold(0, |acc, bit| acc | bit)
}

#[cfg(test)]
mod tests;
