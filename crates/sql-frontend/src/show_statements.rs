//! SHOW statements as the session's recogniser reads them (sqlparser knows few of MySQL's
//! forms and drops details of others): [`parse`] reads a statement's words into a [`Show`],
//! which the session carries out (`quill_sql::session::show_statements`).
//!
//! The words are MySQL's: `SHOW [FULL] [GLOBAL | SESSION] what ...`, with `FROM db` / `IN db`
//! where the object takes a database, and a `LIKE 'pattern'` or `WHERE condition` filter. A
//! table is given as the word the client wrote (`t`, `db.t`, `` `d b`.`t` ``): the session
//! splits it (`words::name_parts`), with its default database for a bare name.

use quill_sql_types::error::{Result, SqlError};

/// What a SHOW statement shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShowWhat {
    /// `SHOW DATABASES` / `SCHEMAS`.
    Databases,
    /// `SHOW [FULL] TABLES [FROM db]`.
    Tables { full: bool, db: Option<String> },
    /// `SHOW [FULL] COLUMNS | FIELDS FROM t [FROM db]`.
    Columns { full: bool, table: String, db: Option<String> },
    /// `SHOW INDEX | INDEXES | KEYS FROM t`.
    Index { table: String },
    /// `SHOW CREATE TABLE t` or `SHOW CREATE VIEW v`.
    CreateTable { table: String, view: bool },
    /// `SHOW CREATE DATABASE | SCHEMA [IF NOT EXISTS] db`.
    CreateDatabase { name: String, if_not_exists: bool },
    /// `SHOW [GLOBAL | SESSION] VARIABLES`.
    Variables { global: bool },
    /// `SHOW COUNT(*) WARNINGS | ERRORS`.
    Count { errors: bool },
    /// `SHOW [GLOBAL | SESSION] STATUS`.
    Status,
    /// `SHOW WARNINGS` or `SHOW ERRORS`.
    Warnings { errors: bool },
    /// `SHOW [FULL] PROCESSLIST`.
    Processlist,
    /// `SHOW MASTER STATUS`, `SHOW BINARY LOG STATUS`, `SHOW BINARY LOGS`, `SHOW MASTER LOGS`,
    /// `SHOW BINLOG EVENTS`: the words from MASTER, BINARY or BINLOG on, in upper case.
    BinaryLog { words: Vec<String> },
    /// `SHOW REPLICA | SLAVE STATUS`.
    ReplicaStatus,
    /// `SHOW ENGINE INNODB STATUS`.
    EngineInnodbStatus,
    /// `SHOW PLUGINS`.
    Plugins,
    /// `SHOW TRIGGERS [FROM db]`.
    Triggers { db: Option<String> },
    /// `SHOW CREATE TRIGGER [db.]name`.
    CreateTrigger { name: String },
    /// `SHOW CREATE PROCEDURE | FUNCTION [db.]name`.
    CreateRoutine { function: bool, name: String },
    /// `SHOW PROCEDURE | FUNCTION STATUS`.
    RoutineStatus { function: bool },
    /// `SHOW ENGINES`.
    Engines,
    /// `SHOW COLLATION`.
    Collation,
    /// `SHOW CHARACTER SET` / `SHOW CHARSET`.
    Charset,
    /// `SHOW TABLE STATUS [FROM db]`.
    TableStatus { db: Option<String> },
    /// `SHOW EVENTS [FROM db]`.
    Events { db: Option<String> },
    /// `SHOW OPEN TABLES [FROM db]`.
    OpenTables { db: Option<String> },
}

/// A SHOW statement: what it shows and how its rows are filtered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Show {
    pub what: ShowWhat,
    /// `LIKE 'pattern'`, the pattern as written between its quotes.
    pub like: Option<String>,
    /// `WHERE condition`: the condition's text, bound against the result's columns.
    pub filter: Option<String>,
}

/// Reads `SHOW ...` from its words (`words[0]` is SHOW).
///
/// # Errors
/// 1064 for a SHOW Quill does not know, or one missing the name it needs.
pub fn parse(sql: &str, words: &[&str]) -> Result<Show> {
    let upper: Vec<String> = words.iter().map(|w| w.trim_end_matches(';').to_ascii_uppercase()).collect();
    let mut i = 1;
    let full = upper.get(i).is_some_and(|w| w == "FULL");
    if full {
        i += 1;
    }
    let global = upper.get(i).is_some_and(|w| w == "GLOBAL");
    if global || upper.get(i).is_some_and(|w| w == "SESSION") {
        i += 1;
    }
    let what = upper.get(i).map_or("", String::as_str);
    let next = |k: usize| upper.get(i + k).map_or("", String::as_str);
    // `FROM db` / `IN db`: the last one after the object word.
    let from = |after: usize| -> Option<String> {
        let mut out = None;
        let mut j = after;
        while j + 1 < upper.len() {
            if upper[j] == "FROM" || upper[j] == "IN" {
                out = Some(words[j + 1].trim_end_matches(';').trim_matches('`').to_owned());
            }
            j += 1;
        }
        out
    };
    let missing = || SqlError::parse(sql);
    let what = match what {
        "DATABASES" | "SCHEMAS" => ShowWhat::Databases,
        "TABLES" => ShowWhat::Tables { full, db: from(i + 1) },
        "COLUMNS" | "FIELDS" => {
            let mut names = upper
                .iter()
                .enumerate()
                .skip(i + 1)
                .filter(|(_, w)| *w == "FROM" || *w == "IN")
                .filter_map(|(j, _)| words.get(j + 1).map(|w| w.trim_end_matches(';')));
            let table = names.next().ok_or_else(missing)?.to_owned();
            let db = names.next().map(|d| d.trim_matches('`').to_owned());
            ShowWhat::Columns { full, table, db }
        }
        "INDEX" | "INDEXES" | "KEYS" => {
            let table = upper.iter().position(|w| w == "FROM" || w == "IN").and_then(|j| words.get(j + 1)).ok_or_else(missing)?;
            ShowWhat::Index { table: (*table).to_owned() }
        }
        "CREATE" if matches!(next(1), "TABLE" | "VIEW") => {
            ShowWhat::CreateTable { table: (*words.get(i + 2).ok_or_else(missing)?).to_owned(), view: next(1) == "VIEW" }
        }
        "CREATE" if matches!(next(1), "PROCEDURE" | "FUNCTION") => {
            ShowWhat::CreateRoutine { function: next(1) == "FUNCTION", name: words.get(i + 2).map(|w| w.trim_end_matches(';')).ok_or_else(missing)?.to_owned() }
        }
        "PROCEDURE" | "FUNCTION" if next(1) == "STATUS" => ShowWhat::RoutineStatus { function: what == "FUNCTION" },
        "CREATE" if next(1) == "TRIGGER" => ShowWhat::CreateTrigger { name: words.get(i + 2).map(|w| w.trim_end_matches(';')).ok_or_else(missing)?.to_owned() },
        "CREATE" if matches!(next(1), "DATABASE" | "SCHEMA") => {
            let if_not_exists = next(2) == "IF" && next(3) == "NOT" && next(4) == "EXISTS";
            let at = if if_not_exists { i + 5 } else { i + 2 };
            ShowWhat::CreateDatabase { name: words.get(at).map(|w| w.trim_end_matches(';').trim_matches('`')).ok_or_else(missing)?.to_owned(), if_not_exists }
        }
        "VARIABLES" => ShowWhat::Variables { global },
        "COUNT(*)" if matches!(next(1), "WARNINGS" | "ERRORS") => ShowWhat::Count { errors: next(1) == "ERRORS" },
        "STATUS" => ShowWhat::Status,
        "WARNINGS" | "ERRORS" => ShowWhat::Warnings { errors: what == "ERRORS" },
        "PROCESSLIST" => ShowWhat::Processlist,
        "MASTER" | "BINARY" | "BINLOG" => ShowWhat::BinaryLog { words: upper[i..].to_vec() },
        "REPLICA" | "SLAVE" if next(1) == "STATUS" => ShowWhat::ReplicaStatus,
        "ENGINE" if next(1) == "INNODB" && next(2) == "STATUS" && upper.len() == i + 3 => ShowWhat::EngineInnodbStatus,
        "PLUGINS" => ShowWhat::Plugins,
        "TRIGGERS" => ShowWhat::Triggers { db: from(i + 1) },
        "ENGINES" => ShowWhat::Engines,
        "COLLATION" => ShowWhat::Collation,
        "CHARACTER" | "CHARSET" => ShowWhat::Charset,
        "TABLE" if next(1) == "STATUS" => ShowWhat::TableStatus { db: from(i + 2) },
        "EVENTS" => ShowWhat::Events { db: from(i + 1) },
        "OPEN" if next(1) == "TABLES" => ShowWhat::OpenTables { db: from(i + 2) },
        _ => return Err(SqlError::parse(&words[1..].join(" "))),
    };
    let filter = sql.to_ascii_uppercase().find(" WHERE ").map(|at| sql[at + 7..].to_owned());
    Ok(Show { what, like: like_pattern(sql), filter })
}

/// The pattern of `... LIKE 'pattern'` (either quote), as written.
#[must_use]
pub fn like_pattern(sql: &str) -> Option<String> {
    let upper = sql.to_ascii_uppercase();
    let i = upper.find(" LIKE ")?;
    let rest = sql[i + 6..].trim();
    let q = rest.chars().next()?;
    if q != '\'' && q != '"' {
        return None;
    }
    let end = rest[1..].find(q)?;
    Some(rest[1..=end].to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn show(sql: &str) -> Show {
        let words: Vec<&str> = sql.split_whitespace().collect();
        parse(sql, &words).unwrap_or_else(|e| panic!("{sql}: {e}"))
    }

    #[test]
    fn objects_names_and_filters_are_read() {
        assert_eq!(
            show("SHOW FULL TABLES FROM `shop` LIKE 'o%'"),
            Show { what: ShowWhat::Tables { full: true, db: Some("shop".into()) }, like: Some("o%".into()), filter: None }
        );
        assert_eq!(show("show columns from t in d").what, ShowWhat::Columns { full: false, table: "t".into(), db: Some("d".into()) });
        assert_eq!(show("SHOW INDEX FROM d.t;").what, ShowWhat::Index { table: "d.t;".into() });
        assert_eq!(show("SHOW CREATE VIEW v").what, ShowWhat::CreateTable { table: "v".into(), view: true });
        assert_eq!(show("SHOW CREATE SCHEMA `s`;").what, ShowWhat::CreateDatabase { name: "s".into(), if_not_exists: false });
        assert_eq!(show("SHOW CREATE DATABASE IF NOT EXISTS s").what, ShowWhat::CreateDatabase { name: "s".into(), if_not_exists: true });
        assert_eq!(show("SHOW OPEN TABLES FROM d LIKE 't%'").what, ShowWhat::OpenTables { db: Some("d".into()) });
        assert_eq!(show("SHOW GLOBAL VARIABLES WHERE Variable_name = 'x'").filter.as_deref(), Some("Variable_name = 'x'"));
        assert_eq!(show("SHOW GLOBAL VARIABLES").what, ShowWhat::Variables { global: true });
        assert_eq!(show("SHOW COUNT(*) ERRORS").what, ShowWhat::Count { errors: true });
        assert_eq!(show("SHOW BINARY LOGS").what, ShowWhat::BinaryLog { words: vec!["BINARY".into(), "LOGS".into()] });
        assert_eq!(show("SHOW TABLE STATUS IN d LIKE \"t\"").what, ShowWhat::TableStatus { db: Some("d".into()) });
        assert_eq!(show("SHOW TRIGGERS FROM d LIKE 't%'").what, ShowWhat::Triggers { db: Some("d".into()) });
        assert_eq!(show("SHOW CREATE TRIGGER d.tr").what, ShowWhat::CreateTrigger { name: "d.tr".into() });
    }

    #[test]
    fn unknown_objects_and_missing_names_are_1064() {
        for sql in ["SHOW NOTHING", "SHOW COLUMNS", "SHOW INDEX", "SHOW CREATE TABLE", "SHOW ENGINE INNODB STATUS EXTRA"] {
            let words: Vec<&str> = sql.split_whitespace().collect();
            assert_eq!(parse(sql, &words).unwrap_err().code, 1064, "{sql}");
        }
    }
}
