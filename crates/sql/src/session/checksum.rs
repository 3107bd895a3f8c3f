//! `CHECKSUM TABLE t [, t ...] [QUICK | EXTENDED]`: one number per table that is the same
//! whenever the table holds the same rows, so a copy (a dump restored, a bulk load) can be
//! compared with its original.
//!
//! The checksum is Quill's own, not MySQL's (MySQL's hashes the engine's record layout, so it
//! differs between engines and row formats; Quill's does not depend on the row format):
//! each row is encoded column by column, a NULL as the byte 0, any other value as the byte 1,
//! the length of its text form (as a result row carries it) as four little-endian bytes,
//! and the text; the row's CRC-32C is added, modulo 2³², over every row the statement's
//! read view sees. The order of rows does not matter, an empty table sums to 0, and the
//! value is an unsigned 32-bit number, as MySQL's is. `QUICK` and `EXTENDED` read every row
//! alike. A table that does not exist gets NULL and a 1146 error in `SHOW WARNINGS`, as in
//! MySQL, and so does one `LOCK TABLES` did not lock (1100). Where it sits: inside `session`, above `query` (it runs `SELECT *`).

use crate::dialect::QuillDialect;
use crate::ident::quote_identifier as quote;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::Token;

use super::{Outcome, Session};
use crate::error::{Result, SqlError, Warning};
use crate::mdl::Mode;
use crate::query::{self, OutColumn, ResultSet};
use crate::types::{self, SqlType};
use quill_storage::Value;

/// Whether `words` (upper case) begin `CHECKSUM TABLE`.
#[must_use]
pub(super) fn is_checksum_table(words: &[String]) -> bool {
    words.first().is_some_and(|w| w == "CHECKSUM") && words.get(1).is_some_and(|w| w == "TABLE")
}

fn parse(sql: &str) -> Result<Vec<sqlparser::ast::ObjectName>> {
    let dialect = QuillDialect::default();
    let syntax = |e: &dyn std::fmt::Display| SqlError::parse(&e.to_string());
    let mut p = Parser::new(&dialect).try_with_sql(sql).map_err(|e| syntax(&e))?;
    let word = |p: &mut Parser, w: &str| matches!(p.peek_token().token, Token::Word(ref x) if x.value.eq_ignore_ascii_case(w));
    for w in ["CHECKSUM", "TABLE"] {
        if !word(&mut p, w) {
            return Err(SqlError::parse(&p.peek_token().to_string()));
        }
        p.next_token();
    }
    let mut names = vec![p.parse_object_name(false).map_err(|e| syntax(&e))?];
    while p.consume_token(&Token::Comma) {
        names.push(p.parse_object_name(false).map_err(|e| syntax(&e))?);
    }
    if word(&mut p, "QUICK") || word(&mut p, "EXTENDED") {
        p.next_token();
    }
    let _ = p.consume_token(&Token::SemiColon);
    if p.peek_token().token != Token::EOF {
        return Err(SqlError::parse(&p.peek_token().to_string()));
    }
    Ok(names)
}

/// The checksum of one row (see the module doc).
fn row_checksum(row: &[Value], types: &[SqlType]) -> u32 {
    let mut bytes = Vec::new();
    for (v, ty) in row.iter().zip(types) {
        match types::to_text(v, ty) {
            None => bytes.push(0),
            Some(text) => {
                bytes.push(1);
                bytes.extend_from_slice(&u32::try_from(text.len()).unwrap_or(u32::MAX).to_le_bytes());
                bytes.extend_from_slice(&text);
            }
        }
    }
    crc32c::crc32c(&bytes)
}

impl Session {
    /// Runs `CHECKSUM TABLE` (see the module doc).
    ///
    /// # Errors
    /// Syntax (1064); a wait for a table's metadata lock past `lock_wait_timeout`; errors
    /// reading the rows.
    pub(super) async fn checksum_table(&mut self, sql: &str) -> Result<Outcome> {
        let names = parse(sql)?;
        let mut rows = Vec::new();
        for name in &names {
            let (db, table) = query::resolve_table_name(&self.info, name)?;
            self.require_table(&db, &table, crate::accounts::SELECT)?;
            let label = format!("{db}.{table}");
            // A table that does not exist, or one LOCK TABLES did not lock: NULL and the error
            // as a condition, as in MySQL.
            let usable = self.info.engine.catalog().table(&db, &table).map(|_| ()).and_then(|()| self.check_table_lock(&db, &table, false));
            if let Err(e) = usable {
                self.warnings.push(Warning { level: "Error", code: e.code, message: e.message.clone() });
                rows.push(vec![Value::Str(label), Value::Null]);
                continue;
            }
            self.acquire_locks(vec![((db.clone(), table.clone()), Mode::Read)], false).await?;
            let sum = self.table_checksum(&db, &table);
            if self.txn.is_none() {
                self.info.engine.mdl.release_all(self.info.connection_id);
            }
            rows.push(vec![Value::Str(label), Value::UInt(u64::from(sum?))]);
        }
        let columns = vec![OutColumn::computed("Table", SqlType::varchar(128)), OutColumn::computed("Checksum", SqlType::bigint())];
        Ok(Outcome::Rows(ResultSet { columns, rows }))
    }

    fn table_checksum(&mut self, db: &str, table: &str) -> Result<u32> {
        let select = format!("SELECT * FROM {}.{}", quote(db), quote(table));
        let statement = crate::parse::parse(&select, 0, 0)?.remove(0);
        let sqlparser::ast::Statement::Query(q) = statement else { unreachable!("a SELECT parses as a query") };
        let engine = self.engine();
        let autocommit_read = self.txn.is_none() && self.autocommit();
        let view = if autocommit_read { engine.txns.read_view(0, self.isolation() == "READ-UNCOMMITTED") } else { self.read_view() };
        let result = {
            let catalog = engine.catalog();
            let env = crate::show::statement_env(&catalog, view, &[], self.info.now_us(), &self.info);
            query::plan_query(&env, &q, &[]).and_then(|(plan, _)| {
                let types: Vec<SqlType> = plan.columns.iter().map(|c| c.ty.clone()).collect();
                let mut sum = 0u32;
                crate::cost::run_heavy(true, || {
                    query::run_select_into(&plan, &env, None, &mut |row| {
                        sum = sum.wrapping_add(row_checksum(&row, &types));
                        Ok(())
                    })
                })
                .map(|()| sum)
            })
        };
        if autocommit_read {
            engine.txns.release_view(&view);
        }
        // As any read: the answer waits until what it saw is durable.
        self.after_read();
        if !autocommit_read {
            self.statement_end()?;
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checksum_tells_null_from_empty_and_columns_apart() {
        let ty = [SqlType::varchar(10), SqlType::varchar(10)];
        let row = |a: Option<&str>, b: Option<&str>| [a, b].map(|v| v.map_or(Value::Null, |s| Value::Str(s.into())));
        let of = |r: [Value; 2]| row_checksum(&r, &ty);
        assert_ne!(of(row(None, Some("x"))), of(row(Some(""), Some("x"))));
        assert_ne!(of(row(Some("ab"), Some(""))), of(row(Some("a"), Some("b"))));
        assert_eq!(of(row(Some("a"), None)), of(row(Some("a"), None)));
    }

    #[test]
    fn checksum_lists_parse() {
        assert_eq!(parse("CHECKSUM TABLE a, d.b EXTENDED").unwrap().len(), 2);
        assert!(parse("CHECKSUM TABLE").is_err());
        assert!(parse("CHECKSUM TABLE a b").is_err());
    }
}
