//! Table options in `ALTER TABLE` (`ENGINE=InnoDB`, `ROW_FORMAT=FIXED`, `COMMENT='…'`,
//! `[DEFAULT] CHARSET=…`, `COLLATE=…`): sqlparser reads them in CREATE TABLE but not in
//! ALTER TABLE, so [`rewrite`] turns each run of them into the one form of table options its
//! ALTER does read, `SET TBLPROPERTIES (`ROW_FORMAT` = 'FIXED', …)`, which
//! `ddl::alter_table` applies. The rewrite is on sqlparser's tokens, so strings and comments
//! are never mistaken for options, and it runs wherever a statement is parsed
//! (`parse::parse`), so the log's DDL text replays the same way after a crash.
//!
//! `RENAME {INDEX | KEY} a TO b`, which sqlparser does not read either, becomes the two
//! options `RENAME_INDEX` and `RENAME_INDEX_TO`, and `DROP CHECK c` the option `DROP_CHECK`.
//!
//! A run of options is an item of the ALTER's comma-separated list that starts with an
//! option name; MySQL also lets options follow one another without commas. An item that
//! starts like an option and goes on with something else is left alone, for the parser's
//! 1064. Where it sits: in `quill-sql-frontend`, called by `parse::parse` before the parser.

use crate::dialect::QuillDialect;
use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer};

/// The option names, as `ddl::alter_table` reads them back.
pub const ENGINE: &str = "ENGINE";
pub const ROW_FORMAT: &str = "ROW_FORMAT";
pub const COMMENT: &str = "COMMENT";
pub const CHARSET: &str = "CHARSET";
pub const COLLATE: &str = "COLLATE";
/// `RENAME INDEX a TO b`: the index's name, then (the next option) its new name.
pub const RENAME_INDEX: &str = "RENAME_INDEX";
pub const RENAME_INDEX_TO: &str = "RENAME_INDEX_TO";
/// `DROP CHECK c`: the check constraint's name.
pub const DROP_CHECK: &str = "DROP_CHECK";

/// One run of options: where it starts and ends among the significant tokens, and the
/// options (name, value).
struct Run {
    start: usize,
    end: usize,
    options: Vec<(&'static str, String)>,
}

/// `sql` with its ALTER TABLE options in sqlparser's form, or `None` when it has none.
#[must_use]
pub fn rewrite(sql: &str) -> Option<String> {
    let head = sql.trim_start();
    if !head.get(..5).is_some_and(|w| w.eq_ignore_ascii_case("ALTER")) {
        return None;
    }
    let tokens = Tokenizer::new(&QuillDialect::default(), sql).tokenize_with_location().ok()?;
    let significant: Vec<usize> = (0..tokens.len()).filter(|&i| !matches!(tokens[i].token, Token::Whitespace(_))).collect();
    let word = |i: usize| match &tokens[*significant.get(i)?].token {
        Token::Word(w) if w.quote_style.is_none() => Some(w.value.to_ascii_uppercase()),
        _ => None,
    };
    let mut at = 0;
    if word(at)? != "ALTER" {
        return None;
    }
    at += 1;
    while matches!(word(at)?.as_str(), "ONLINE" | "IGNORE") {
        at += 1;
    }
    if word(at)? != "TABLE" {
        return None;
    }
    at += 2; // the table's name, qualified or not
    while significant.get(at).is_some_and(|&i| tokens[i].token == Token::Period) {
        at += 2;
    }
    let mut runs: Vec<Run> = Vec::new();
    // `RENAME {INDEX | KEY} a TO b` items (sqlparser has no such operation): where each
    // starts, and the two names.
    let mut renames: Vec<(usize, String, String)> = Vec::new();
    // `DROP CHECK c` items (MySQL 8.0.19), likewise.
    let mut dropped_checks: Vec<(usize, String)> = Vec::new();
    while at < significant.len() {
        let start = at;
        let name = |i: usize| match significant.get(i).map(|&t| &tokens[t].token) {
            Some(Token::Word(w)) => Some(w.value.clone()),
            _ => None,
        };
        let ends_item = |i: usize| significant.get(i).is_none_or(|&t| matches!(tokens[t].token, Token::Comma | Token::SemiColon | Token::EOF));
        if word(at).as_deref() == Some("DROP")
            && word(at + 1).as_deref() == Some("CHECK")
            && let Some(check) = name(at + 2)
            && ends_item(at + 3)
        {
            dropped_checks.push((at, check));
        }
        if word(at).as_deref() == Some("RENAME")
            && matches!(word(at + 1).as_deref(), Some("INDEX" | "KEY"))
            && word(at + 3).as_deref() == Some("TO")
            && let (Some(old), Some(new)) = (name(at + 2), name(at + 4))
            && significant.get(at + 5).is_none_or(|&i| matches!(tokens[i].token, Token::Comma | Token::SemiColon | Token::EOF))
        {
            renames.push((at, old, new));
        }
        let mut options = Vec::new();
        while let Some((name, value, next)) = option(&tokens, &significant, at) {
            options.push((name, value));
            at = next;
        }
        let ends_item = significant.get(at).is_none_or(|&i| matches!(tokens[i].token, Token::Comma | Token::SemiColon | Token::EOF));
        if !options.is_empty() && ends_item {
            runs.push(Run { start, end: at, options });
        }
        // On to the next item at the outermost level.
        let mut depth = 0usize;
        while let Some(&i) = significant.get(at) {
            match tokens[i].token {
                Token::LParen => depth += 1,
                Token::RParen => depth = depth.saturating_sub(1),
                Token::Comma if depth == 0 => {
                    at += 1;
                    break;
                }
                _ => {}
            }
            at += 1;
        }
    }
    if runs.is_empty() && renames.is_empty() && dropped_checks.is_empty() {
        return None;
    }
    // (first significant token, token after the last, replacement), in text order.
    let quote = |v: &str| format!("'{}'", v.replace('\\', "\\\\").replace('\'', "''"));
    let mut edits: Vec<(usize, usize, String)> = renames
        .into_iter()
        .map(|(at, old, new)| (at, at + 5, format!("SET TBLPROPERTIES (`{RENAME_INDEX}` = {}, `{RENAME_INDEX_TO}` = {}) ", quote(&old), quote(&new))))
        .collect();
    edits.extend(dropped_checks.into_iter().map(|(at, check)| (at, at + 3, format!("SET TBLPROPERTIES (`{DROP_CHECK}` = {}) ", quote(&check)))));
    for Run { start, end, options } in runs {
        let list: Vec<String> = options.iter().map(|(name, value)| format!("`{name}` = '{}'", value.replace('\\', "\\\\").replace('\'', "''"))).collect();
        edits.push((start, end, format!("SET TBLPROPERTIES ({}) ", list.join(", "))));
    }
    edits.sort_by_key(|(start, _, _)| *start);
    let mut out = String::with_capacity(sql.len() + 64);
    let mut copied = 0;
    for (start, end, text) in edits {
        let from = crate::parse::token_offset(sql, &tokens[significant[start]]);
        let to = significant.get(end).map_or(sql.len(), |&i| crate::parse::token_offset(sql, &tokens[i]));
        out.push_str(&sql[copied..from]);
        out.push_str(&text);
        copied = to;
    }
    out.push_str(&sql[copied..]);
    Some(out)
}

/// The table option at significant token `at`: its name, its value, and where the next
/// token starts.
fn option(tokens: &[TokenWithSpan], significant: &[usize], mut at: usize) -> Option<(&'static str, String, usize)> {
    let word = |i: usize| match &tokens[*significant.get(i)?].token {
        Token::Word(w) if w.quote_style.is_none() => Some(w.value.to_ascii_uppercase()),
        _ => None,
    };
    if word(at).as_deref() == Some("DEFAULT") {
        at += 1;
    }
    let name = match word(at)?.as_str() {
        "ENGINE" => ENGINE,
        "ROW_FORMAT" => ROW_FORMAT,
        "COMMENT" => COMMENT,
        "CHARSET" => CHARSET,
        "CHARACTER" if word(at + 1).as_deref() == Some("SET") => {
            at += 1;
            CHARSET
        }
        "COLLATE" => COLLATE,
        _ => return None,
    };
    at += 1;
    if significant.get(at).is_some_and(|&i| tokens[i].token == Token::Eq) {
        at += 1;
    }
    let value = match &tokens[*significant.get(at)?].token {
        Token::Word(w) => w.value.clone(),
        Token::SingleQuotedString(s) | Token::DoubleQuotedString(s) => s.clone(),
        _ => return None,
    };
    Some((name, value, at + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_of_options_become_tblproperties() {
        assert_eq!(rewrite("ALTER TABLE t ROW_FORMAT=FIXED").unwrap().trim(), "ALTER TABLE t SET TBLPROPERTIES (`ROW_FORMAT` = 'FIXED')");
        assert_eq!(
            rewrite("alter table db.t engine InnoDB row_format = dynamic, add column c int, DEFAULT CHARACTER SET = utf8mb4 COMMENT 'it''s'").unwrap(),
            "alter table db.t SET TBLPROPERTIES (`ENGINE` = 'InnoDB', `ROW_FORMAT` = 'dynamic') , add column c int, SET TBLPROPERTIES (`CHARSET` = 'utf8mb4', `COMMENT` = 'it''s') "
        );
    }

    #[test]
    fn rename_index_is_read_as_table_options() {
        let sql = rewrite("ALTER TABLE t RENAME INDEX a TO b, RENAME KEY `c'` TO d, ENGINE=InnoDB").unwrap();
        assert_eq!(
            sql,
            "ALTER TABLE t SET TBLPROPERTIES (`RENAME_INDEX` = 'a', `RENAME_INDEX_TO` = 'b') , SET TBLPROPERTIES (`RENAME_INDEX` = 'c''', `RENAME_INDEX_TO` = 'd') , SET TBLPROPERTIES (`ENGINE` = 'InnoDB') "
        );
        assert!(crate::parse::parse(&sql, 0, 0).is_ok());
        let sql = rewrite("ALTER TABLE t DROP CHECK c1, DROP COLUMN x").unwrap();
        assert_eq!(sql, "ALTER TABLE t SET TBLPROPERTIES (`DROP_CHECK` = 'c1') , DROP COLUMN x");
        assert!(crate::parse::parse(&sql, 0, 0).is_ok());
    }

    #[test]
    fn everything_else_is_left_to_the_parser() {
        assert_eq!(rewrite("ALTER TABLE t ADD COLUMN comment INT"), None);
        assert_eq!(rewrite("ALTER TABLE t ALTER COLUMN c SET DEFAULT 'ROW_FORMAT=FIXED'"), None);
        assert_eq!(rewrite("ALTER TABLE t ROW_FORMAT=FIXED junk"), None);
        assert_eq!(rewrite("SELECT 1"), None);
        // Found by the front end's fuzz test: a statement that ends early.
        assert_eq!(rewrite("ALTER"), None);
        assert_eq!(rewrite("ALTER TABLE"), None);
        assert_eq!(rewrite("ALTER TABLE t ROW_FORMAT ="), None);
        assert_eq!(rewrite("ALTER TABLE t MODIFY c VARCHAR(10) COMMENT 'x'"), None);
    }
}
