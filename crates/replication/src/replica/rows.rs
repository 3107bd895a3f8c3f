//! Row events made into statements the replica's applier runs: each row of a WRITE, UPDATE or
//! DELETE rows event becomes one prepared statement on the primary key (every column when the
//! table has none) with the row's values as parameters, so the applier parses each statement
//! shape once per table ([`Prepared`]) rather than once per row.
//!
//! Values come decoded by `mysql_common` and are turned into values for this server's column
//! types ([`param`]), correcting two faults of its decoder (0.37): a signed MEDIUMINT's sign, and
//! a negative TIME(1) or TIME(2) with a fraction ([`repair_time`]).
//!
//! Each row also yields its **write-set**: a hash of the table and primary key of each image
//! (before and after), and of each unique index's values (a NULL in them conflicts with
//! nothing), encoded in storage's key order with the column's collation so values a
//! collation holds equal hash alike; a table without a primary key is one key for the whole
//! table. Two transactions whose write-sets share no key touch different rows and may be
//! applied at once ([`super::apply`]). A hash collision only makes two transactions wait for
//! each other needlessly.
//!
//! Where it sits: used by the applier in `replica`, on its own session. Bound: at most
//! [`PREPARED_MAX`] statements stay prepared; past it, and after any DDL, they are closed and
//! prepared again as needed.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};

use mysql_common::binlog::events::{RowsEventData, TableMapEvent};
use mysql_common::binlog::row::BinlogRow;
use mysql_common::binlog::value::BinlogValue;
use quill_sql::catalog::TableMeta;
use quill_sql::error::{Result as SqlResult, SqlError, codes};
use quill_sql::ident::quote_identifier;
use quill_sql::types::SqlType;
use quill_sql::{Engine, Outcome, Session};
use quill_storage::Value;

/// Statements the applier keeps prepared, at most.
pub const PREPARED_MAX: usize = 1024;

/// One row change to apply: a statement shape and its parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct RowStatement {
    pub template: String,
    pub params: Vec<Value>,
    /// An UPDATE or DELETE, which must find its row (else the replica has diverged: 1032).
    pub finds_row: bool,
}

/// The applier's prepared statements, by text.
#[derive(Default)]
pub struct Prepared {
    ids: HashMap<String, u32>,
}

impl Prepared {
    /// Runs `template` with `params`, preparing it on first use.
    ///
    /// # Errors
    /// Preparing or executing it.
    pub async fn run(&mut self, session: &mut Session, template: &str, params: Vec<Value>) -> SqlResult<Outcome> {
        let id = match self.ids.get(template) {
            Some(&id) => id,
            None => {
                if self.ids.len() >= PREPARED_MAX {
                    self.forget(session);
                }
                let (id, _, _) = session.prepare(template)?;
                self.ids.insert(template.to_owned(), id);
                id
            }
        };
        session.execute_prepared(id, params).await
    }

    /// Closes every statement (a table they name may have changed).
    pub fn forget(&mut self, session: &mut Session) {
        for (_, id) in self.ids.drain() {
            session.close_prepared(id);
        }
    }
}

/// The statements that apply one rows event on this server's copy of its table, and the
/// write-set keys of its rows, added to `keys`.
///
/// # Errors
/// An unknown table (1146), a row that does not decode, or a column count or value type this
/// server's table cannot take (1677).
pub fn statements(engine: &Engine, tme: &TableMapEvent<'_>, rows: &RowsEventData<'_>, keys: &mut Vec<u64>) -> SqlResult<Vec<RowStatement>> {
    let (db, table) = (tme.database_name().into_owned(), tme.table_name().into_owned());
    let catalog = engine.catalog();
    let meta = catalog.table(&db, &table)?;
    let name = format!("{}.{}", quote_identifier(&db), quote_identifier(&table));
    let key: Vec<usize> = if meta.primary.is_empty() { (0..meta.columns.len()).collect() } else { meta.primary.clone() };
    let key_match = key.iter().map(|&i| format!("{} <=> ?", quote_identifier(&meta.columns[i].name))).collect::<Vec<_>>().join(" AND ");
    let key_values = |before: &[Value]| key.iter().map(|&i| before[i].clone()).collect::<Vec<_>>();
    let mut out = Vec::new();
    for row in rows.rows(tme) {
        let (before, after) =
            row.map_err(|e| SqlError::new(codes::ER_SLAVE_RELAY_LOG_READ_FAILURE, format!("a row event of {db}.{table} does not decode: {e}")))?;
        let after = after.map(|r| values(meta, &r)).transpose()?;
        let before = before.map(|r| values(meta, &r)).transpose()?;
        for image in [&before, &after].into_iter().flatten() {
            write_set(meta, image, keys);
        }
        out.push(match (before, after) {
            (None, Some(after)) => {
                RowStatement { template: format!("INSERT INTO {name} VALUES ({})", vec!["?"; after.len()].join(", ")), params: after, finds_row: false }
            }
            (Some(before), Some(mut after)) => {
                let set: Vec<String> = meta.columns.iter().map(|c| format!("`{}` = ?", c.name.replace('`', "``"))).collect();
                after.extend(key_values(&before));
                RowStatement { template: format!("UPDATE {name} SET {} WHERE {key_match} LIMIT 1", set.join(", ")), params: after, finds_row: true }
            }
            (Some(before), None) => {
                RowStatement { template: format!("DELETE FROM {name} WHERE {key_match} LIMIT 1"), params: key_values(&before), finds_row: true }
            }
            (None, None) => continue,
        });
    }
    Ok(out)
}

/// The rows a `CREATE TABLE ... SELECT` wrote, from its WRITE_ROWS event, for `meta`, the
/// table it creates (every column, in order).
///
/// # Errors
/// An event for another table, or of another kind, or a row that does not decode (1594), or
/// a column count or value type the table cannot take (1677).
pub fn created_rows(meta: &TableMeta, tme: &TableMapEvent<'_>, rows: &RowsEventData<'_>) -> SqlResult<Vec<Vec<Value>>> {
    let (db, table) = (tme.database_name(), tme.table_name());
    if db != meta.db.as_str() || table != meta.name.as_str() {
        return Err(SqlError::new(
            codes::ER_SLAVE_RELAY_LOG_READ_FAILURE,
            format!("CREATE TABLE ... SELECT of {}.{} came with rows of {db}.{table}", meta.db, meta.name),
        ));
    }
    let mut out = Vec::new();
    for row in rows.rows(tme) {
        match row.map_err(|e| SqlError::new(codes::ER_SLAVE_RELAY_LOG_READ_FAILURE, format!("a row event of {db}.{table} does not decode: {e}")))? {
            (None, Some(after)) => out.push(values(meta, &after)?),
            _ => {
                return Err(SqlError::new(
                    codes::ER_SLAVE_RELAY_LOG_READ_FAILURE,
                    format!("CREATE TABLE ... SELECT of {db}.{table} came with a row that is not an insert"),
                ));
            }
        }
    }
    Ok(out)
}

/// The write-set keys of one row image of `meta`'s table.
fn write_set(meta: &TableMeta, row: &[Value], keys: &mut Vec<u64>) {
    let key = |index: usize, columns: &[usize]| -> Option<u64> {
        if index > 0 && columns.iter().any(|&c| matches!(row.get(c), None | Some(Value::Null))) {
            return None;
        }
        let encoded = quill_storage::key::encode_key(columns.iter().map(|&c| (&row[c], meta.columns[c].ty.collation())));
        let mut h = DefaultHasher::new();
        (meta.id, index, encoded).hash(&mut h);
        Some(h.finish())
    };
    if meta.primary.is_empty() {
        keys.extend(key(0, &[]));
        return;
    }
    keys.extend(key(0, &meta.primary));
    for (n, index) in meta.indexes.iter().enumerate().filter(|(_, ix)| ix.unique) {
        keys.extend(key(n + 1, &index.columns));
    }
}

/// A row's values for this server's columns.
fn values(meta: &TableMeta, row: &BinlogRow) -> SqlResult<Vec<Value>> {
    if row.len() != meta.columns.len() {
        return Err(SqlError::new(
            codes::ER_SLAVE_CONVERSION_FAILED,
            format!("Column count of {}.{} differs: the source has {} columns, this server {}", meta.db, meta.name, row.len(), meta.columns.len()),
        ));
    }
    (0..row.len())
        .map(|i| match row.as_ref(i) {
            Some(BinlogValue::Value(v)) => Ok(param(v, &meta.columns[i].ty)),
            _ => Err(SqlError::new(codes::ER_SLAVE_CONVERSION_FAILED, format!("column {i} of {}.{}: a value type Quill does not apply", meta.db, meta.name))),
        })
        .collect()
}

/// `mysql_common`'s decoder (0.37) reads a negative TIME(1) or TIME(2) with a fraction wrongly:
/// it subtracts 0x100 from the fraction byte as a `u32`, which wraps, so the packed value it
/// makes is the right one plus 2³² × 10,000. The time it then shows always has 1,000,000
/// microseconds or more (the fraction field of the wrapped value), which no right value has:
/// such a time is made back into the packed value and corrected. Other times pass as they
/// are. (Release builds wrap; a debug build of the decoder panics first.)
fn repair_time(neg: bool, hours: u64, minutes: u8, seconds: u8, micros: u32) -> (bool, u64, u8, u8, u32) {
    const WRAPPED_BY: i64 = (1_i64 << 32) * 10_000;
    if micros < 1_000_000 {
        return (neg, hours, minutes, seconds, micros);
    }
    let hms = (i64::try_from(hours).unwrap_or(0) << 12) | (i64::from(minutes) << 6) | i64::from(seconds);
    let magnitude = (hms << 24) + i64::from(micros);
    let packed = if neg { -magnitude } else { magnitude } - WRAPPED_BY;
    let t = packed.unsigned_abs();
    let hms = t >> 24;
    (packed < 0, hms >> 12, ((hms >> 6) & 63) as u8, (hms & 63) as u8, (t % (1 << 24)) as u32)
}

/// One decoded value as a parameter for a column of type `ty`: numbers as numbers, decimals
/// as their text, temporal values as their text (a TIMESTAMP in UTC, the applier's time
/// zone), character data decoded from the column's character set, anything else as bytes.
fn param(v: &mysql_common::Value, ty: &SqlType) -> Value {
    use mysql_common::Value as V;
    match v {
        V::NULL => Value::Null,
        // mysql_common (0.37) reads a signed MEDIUMINT without extending its sign.
        V::Int(i) if matches!(ty, SqlType::Int { kind: quill_sql::types::IntKind::Medium, unsigned: false, .. }) && *i >= 1 << 23 => Value::Int(i - (1 << 24)),
        V::Int(i) => Value::Int(*i),
        V::UInt(u) => Value::UInt(*u),
        // Through its shortest text, so the FLOAT column gets the very value the source had.
        V::Float(f) => format!("{f:?}").parse().map_or(Value::Null, Value::Double),
        V::Double(d) => Value::Double(*d),
        V::Bytes(b) => match ty {
            SqlType::Decimal { .. } | SqlType::Year | SqlType::Int { .. } => Value::Str(String::from_utf8_lossy(b).into_owned()),
            SqlType::Timestamp(_) => {
                // Seconds since the epoch, with a fraction.
                let text = String::from_utf8_lossy(b);
                let (secs, frac) = text.split_once('.').unwrap_or((&text, "0"));
                let micros: u32 = format!("{frac:0<6}")[..6].parse().unwrap_or(0);
                chrono::DateTime::from_timestamp(secs.parse().unwrap_or(0), micros * 1000)
                    .map_or(Value::Null, |t| Value::Str(t.format("%Y-%m-%d %H:%M:%S%.6f").to_string()))
            }
            // A SET's bits, least significant byte first.
            SqlType::Set { .. } => Value::UInt(b.iter().rev().fold(0, |bits, byte| (bits << 8) | u64::from(*byte))),
            t if t.is_string() => {
                let id = u8::try_from(t.collation().id()).unwrap_or(255);
                let charset = quill_sql::charset::Charset::from_collation_id(id).unwrap_or(quill_sql::charset::Charset::Utf8mb4);
                match charset.decode(b) {
                    Some(text) => Value::Str(text.into_owned()),
                    None => Value::Bytes(b.clone()),
                }
            }
            _ => Value::Bytes(b.clone()),
        },
        V::Date(y, mo, d, h, mi, s, us) => Value::Str(if matches!(ty, SqlType::Date) {
            format!("{y:04}-{mo:02}-{d:02}")
        } else {
            format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}.{us:06}")
        }),
        V::Time(neg, d, h, mi, s, us) => {
            let (neg, hours, mi, s, us) = repair_time(*neg, u64::from(*d) * 24 + u64::from(*h), *mi, *s, *us);
            Value::Str(format!("{}{hours:02}:{mi:02}:{s:02}.{us:06}", if neg { "-" } else { "" }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_share_a_write_set_key_when_their_primary_or_unique_keys_are_equal_under_the_collation() {
        let engine = quill_sql::Engine::new(quill_sql::vars::VarSet::defaults());
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let mut s = Session::new(std::sync::Arc::clone(&engine), 1, "root", "127.0.0.1");
        runtime.block_on(async {
            for sql in [
                "CREATE DATABASE d",
                "CREATE TABLE d.t (id INT PRIMARY KEY, email VARCHAR(20), n INT, UNIQUE KEY (email), KEY (n))",
                "CREATE TABLE d.nokey (a INT)",
            ] {
                s.run(sql).await.pop().unwrap().unwrap();
            }
        });
        let catalog = engine.catalog();
        let t = catalog.table("d", "t").unwrap();
        let keys = |row: &[Value]| {
            let mut k = Vec::new();
            write_set(t, row, &mut k);
            k
        };
        let a = keys(&[Value::Int(1), Value::Str("Ann@x".into()), Value::Int(5)]);
        assert_eq!(a.len(), 2, "the primary key and the unique email");
        // Another id with the same email under the case-insensitive collation: they conflict.
        let b = keys(&[Value::Int(2), Value::Str("ann@X".into()), Value::Int(5)]);
        assert_eq!(a[1], b[1]);
        assert_ne!(a[0], b[0]);
        // A NULL email conflicts with nothing; the non-unique n is not a key.
        assert_eq!(keys(&[Value::Int(3), Value::Null, Value::Int(5)]).len(), 1);
        // Without a primary key, the whole table is one key.
        let nokey = catalog.table("d", "nokey").unwrap();
        let (mut x, mut y) = (Vec::new(), Vec::new());
        write_set(nokey, &[Value::Int(1)], &mut x);
        write_set(nokey, &[Value::Int(2)], &mut y);
        assert_eq!(x, y);
    }

    #[test]
    fn a_negative_time_with_a_short_fraction_is_repaired_and_others_pass() {
        // -01:02:03.45 as mysql_common 0.37 decodes it.
        assert_eq!(repair_time(false, 623, 61, 60, 16_327_216), (true, 1, 2, 3, 450_000));
        assert_eq!(repair_time(true, 838, 59, 59, 990_000), (true, 838, 59, 59, 990_000));
        assert_eq!(repair_time(false, 12, 0, 1, 0), (false, 12, 0, 1, 0));
    }
}
