//! Table maintenance statements: `CHECK TABLE`, `ANALYZE TABLE`, `OPTIMIZE TABLE` and
//! `REPAIR TABLE`, answered as MySQL 8 answers them for InnoDB tables, one result row per
//! message (`Table`, `Op`, `Msg_type`, `Msg_text`).
//!
//! What each does in Quill: CHECK reads every row of the table through its primary key and
//! its indexes and compares the counts (a mismatch is reported as corruption); ANALYZE has
//! nothing to refresh (the row store's statistics are exact at all times); OPTIMIZE of a paged
//! table recreates it, as InnoDB's does (`ALTER TABLE ... ENGINE=InnoDB`: its rows copied into
//! a new page file, packed; the old file goes after the next checkpoint), with InnoDB's note;
//! an in-memory table has no free space to give back (a version chain is purged as soon as no
//! reader needs it), and its note says so; REPAIR is refused with InnoDB's note. Tables that do not exist get an
//! `Error` row and `Operation failed`, not a statement error, as in MySQL.

use quill_storage::{ReadView, Value};

use super::{Outcome, Session};
use crate::error::{Result, SqlError};
use crate::ident::quote_identifier;
use crate::query::{self, ResultSet};
use crate::show::{cols, s, text};

impl Session {
    /// `{CHECK | ANALYZE | OPTIMIZE | REPAIR} [NO_WRITE_TO_BINLOG | LOCAL] TABLE t [, t]... [options]`.
    pub(super) fn table_maintenance(&mut self, sql: &str) -> Result<Outcome> {
        let words: Vec<&str> = sql.split_whitespace().collect();
        let op = words[0].to_ascii_lowercase();
        let at = words.iter().position(|w| w.eq_ignore_ascii_case("TABLE") || w.eq_ignore_ascii_case("TABLES")).ok_or_else(|| SqlError::parse(sql))?;
        let rest = words[at + 1..].join(" ");
        // CHECK TABLE's options (QUICK, FAST, MEDIUM, EXTENDED, CHANGED, FOR UPGRADE) follow the names.
        let names: Vec<&str> = rest.split(',').map(|n| n.split_whitespace().next().unwrap_or("").trim_end_matches(';')).filter(|n| !n.is_empty()).collect();
        if names.is_empty() {
            return Err(SqlError::parse(sql));
        }
        let mut rows = Vec::new();
        for name in names {
            let object = sqlparser::ast::ObjectName(
                name.split('.').map(|p| sqlparser::ast::ObjectNamePart::Identifier(sqlparser::ast::Ident::new(p.trim_matches('`')))).collect(),
            );
            let (db, table) = query::resolve_table_name(&self.info, &object)?;
            let label = format!("{db}.{table}");
            let row = |kind: &str, message: String| vec![s(label.clone()), s(op.clone()), s(kind), Value::Str(message)];
            self.require_table(&db, &table, crate::accounts::SELECT)?;
            let catalog = self.info.engine.catalog();
            let Ok(t) = catalog.table(&db, &table) else {
                rows.push(row("Error", format!("Table '{label}' doesn't exist")));
                rows.push(row("status", "Operation failed".into()));
                continue;
            };
            match op.as_str() {
                "check" => {
                    let view = ReadView::current(0);
                    let by_key = t.data.scan(std::ops::Bound::Unbounded, std::ops::Bound::Unbounded, view, quill_storage::ScanOrder::Ascending).count();
                    let mismatch = (0..t.indexes.len()).find(|&i| {
                        let entries = t.data.index_keys_in_range(i, std::ops::Bound::Unbounded, std::ops::Bound::Unbounded);
                        entries.iter().filter(|pk| t.data.get(pk, &view).is_some()).count() != by_key
                    });
                    match mismatch {
                        None => rows.push(row("status", "OK".into())),
                        Some(i) => {
                            rows.push(row("error", format!("Index '{}' does not hold one entry per row", t.indexes[i].name)));
                            rows.push(row("error", "Corrupt".into()));
                        }
                    }
                }
                "analyze" => rows.push(row("status", "OK".into())),
                "optimize" if t.data.space().is_some() => {
                    self.require_table(&db, &table, crate::accounts::INSERT)?;
                    drop(catalog);
                    let sql = format!("ALTER TABLE {}.{} ENGINE=InnoDB", quote_identifier(&db), quote_identifier(&table));
                    let statement = crate::parse::parse(&sql, 0, 0)?.remove(0);
                    self.ddl(&statement, &[], &sql)?;
                    rows.push(row("note", "Table does not support optimize, doing recreate + analyze instead".into()));
                    rows.push(row("status", "OK".into()));
                }
                "optimize" => {
                    rows.push(row("note", "Table keeps no free space to reclaim (versions are purged as readers finish); nothing was done".into()));
                    rows.push(row("status", "OK".into()));
                }
                _ => rows.push(row("note", "The storage engine for the table doesn't support repair".into())),
            }
        }
        let columns = cols(&[("Table", text(64)), ("Op", text(10)), ("Msg_type", text(10)), ("Msg_text", text(1024))]);
        Ok(Outcome::Rows(ResultSet { columns, rows }))
    }
}
