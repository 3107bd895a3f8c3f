//! The `INTO` clauses of a SELECT that sqlparser does not read: `INTO OUTFILE 'f' [CHARACTER
//! SET cs] [FIELDS ...] [LINES ...]`, `INTO DUMPFILE 'f'`, and `INTO @a, @b` after the FROM.
//!
//! [`find`] cuts an `INTO OUTFILE` / `DUMPFILE` clause out of a statement's text at its
//! outermost level (after the select list or at the end; never inside a subquery or a
//! string) and reads it with `LOAD DATA`'s clause reader; the rest of the text is an
//! ordinary query. [`find_into_variables`] does the same for user variables. Writing the
//! file is the session's (`quill_sql::outfile`).

use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Token, Tokenizer};

use crate::dialect::QuillDialect;
use crate::load_data::{self, Format};
use quill_sql_types::error::Result;

/// Which `INTO` form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Outfile,
    Dumpfile,
}

/// A `SELECT ... INTO OUTFILE` / `DUMPFILE` statement, cut in two.
#[derive(Debug, Clone)]
pub struct IntoFile {
    pub kind: Kind,
    pub file: String,
    /// `CHARACTER SET`, as written.
    pub charset: Option<String>,
    pub format: Format,
    /// The statement without its `INTO` clause.
    pub query: String,
}

/// Whether `sql` may hold an `INTO OUTFILE` / `DUMPFILE` clause: a cheap test before [`find`].
#[must_use]
pub fn may_write_file(sql: &str) -> bool {
    // Every SELECT passes here: a scan of its bytes, no copy of its text.
    let has = |word: &[u8]| sql.as_bytes().windows(word.len()).any(|w| w.eq_ignore_ascii_case(word));
    has(b"OUTFILE") || has(b"DUMPFILE")
}

/// Finds the `INTO OUTFILE` / `DUMPFILE` clause of a query at its outermost level.
///
/// # Errors
/// 1064 for a malformed clause, and the clause errors of `load_data::charset_and_format`.
pub fn find(sql: &str) -> Result<Option<IntoFile>> {
    let dialect = QuillDialect::default();
    let Ok(tokens) = Tokenizer::new(&dialect, sql).tokenize_with_location() else { return Ok(None) };
    let word = |t: &Token, w: &str| matches!(t, Token::Word(word) if word.quote_style.is_none() && word.value.eq_ignore_ascii_case(w));
    let mut depth = 0usize;
    let mut start = None;
    for (i, t) in tokens.iter().enumerate() {
        match &t.token {
            Token::LParen => depth += 1,
            Token::RParen => depth = depth.saturating_sub(1),
            token if depth == 0 && word(token, "INTO") => {
                let next = tokens[i + 1..].iter().find(|t| !matches!(t.token, Token::Whitespace(_)));
                if next.is_some_and(|n| word(&n.token, "OUTFILE") || word(&n.token, "DUMPFILE")) {
                    start = Some(i);
                    break;
                }
            }
            _ => {}
        }
    }
    let Some(start) = start else { return Ok(None) };
    let mut p = Parser::new(&dialect).with_tokens_with_locations(tokens[start..].to_vec());
    let mut r = load_data::Reader { p: &mut p };
    r.expect("INTO")?;
    let kind = if r.word("OUTFILE") { Kind::Outfile } else { r.expect("DUMPFILE").map(|()| Kind::Dumpfile)? };
    let file = r.string()?;
    let (charset, format) = if kind == Kind::Outfile { load_data::charset_and_format(&mut r)? } else { (None, Format::default()) };
    let end = start + p.index();
    let cut_from = crate::parse::token_offset(sql, &tokens[start]);
    let cut_to = tokens.get(end).map_or(sql.len(), |t| crate::parse::token_offset(sql, t));
    let query = format!("{} {}", &sql[..cut_from], &sql[cut_to..]);
    Ok(Some(IntoFile { kind, file, charset, format, query }))
}

/// Finds `INTO @a, @b` at a query's outermost level, before or after its FROM (MySQL 8
/// takes both; the SQL parser only the first): the query without it, and the variables'
/// names. `None` when the query has none.
#[must_use]
pub fn find_into_variables(sql: &str) -> Option<(String, Vec<String>)> {
    let upper = sql.as_bytes();
    if !upper.windows(4).any(|w| w.eq_ignore_ascii_case(b"INTO")) || !sql.contains('@') {
        return None;
    }
    let dialect = QuillDialect::default();
    let tokens = Tokenizer::new(&dialect, sql).tokenize_with_location().ok()?;
    let significant = |from: usize| tokens[from..].iter().position(|t| !matches!(t.token, Token::Whitespace(_))).map(|p| p + from);
    let mut depth = 0usize;
    for (i, t) in tokens.iter().enumerate() {
        match &t.token {
            Token::LParen => depth += 1,
            Token::RParen => depth = depth.saturating_sub(1),
            Token::Word(w) if depth == 0 && w.quote_style.is_none() && w.value.eq_ignore_ascii_case("INTO") => {
                let mut names = Vec::new();
                let mut at = significant(i + 1)?;
                loop {
                    let Token::Word(v) = &tokens[at].token else { return None };
                    let name = v.value.strip_prefix('@').filter(|n| !n.is_empty() && !n.starts_with('@'))?;
                    names.push(name.trim_matches(|c| c == '`' || c == '\'' || c == '"').to_ascii_lowercase());
                    match significant(at + 1) {
                        Some(next) if tokens[next].token == Token::Comma => at = significant(next + 1)?,
                        end => {
                            let cut_from = crate::parse::token_offset(sql, &tokens[i]);
                            let cut_to = end.map_or(sql.len(), |e| crate::parse::token_offset(sql, &tokens[e]));
                            return Some((format!("{} {}", &sql[..cut_from], &sql[cut_to..]), names));
                        }
                    }
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> String {
        s.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    #[test]
    fn the_clause_is_cut_out_wherever_it_stands() {
        let f = find("SELECT a, b FROM t WHERE a > 1 INTO OUTFILE '/x/y.txt' FIELDS TERMINATED BY ',' ENCLOSED BY '\"' LINES TERMINATED BY '\\r\\n'")
            .unwrap()
            .unwrap();
        assert_eq!(f.kind, Kind::Outfile);
        assert_eq!(f.file, "/x/y.txt");
        assert_eq!(f.format.fields_terminated, b",");
        assert_eq!(f.format.enclosed, Some(b'"'));
        assert_eq!(f.format.lines_terminated, b"\r\n");
        assert_eq!(words(&f.query), "SELECT a, b FROM t WHERE a > 1");
        let f = find("select * into dumpfile 'd.bin' from t where x = 'é' limit 1").unwrap().unwrap();
        assert_eq!(f.kind, Kind::Dumpfile);
        assert_eq!(words(&f.query), "select * from t where x = 'é' limit 1");
        let f = find("SELECT (SELECT 1) INTO OUTFILE 'o' CHARACTER SET latin1 FOR UPDATE").unwrap().unwrap();
        assert_eq!(f.charset.as_deref(), Some("latin1"));
        assert_eq!(words(&f.query), "SELECT (SELECT 1) FOR UPDATE");
    }

    #[test]
    fn the_cheap_test_finds_either_word_in_any_case() {
        assert!(may_write_file("select 1 into outfile 'x'"));
        assert!(may_write_file("SELECT 1 INTO DumpFile 'x'"));
        assert!(!may_write_file("SELECT outfil FROM t"));
    }

    #[test]
    fn a_clause_inside_a_subquery_or_a_string_is_not_this_statements() {
        assert!(find("SELECT 'INTO OUTFILE x' FROM t").unwrap().is_none());
        assert!(find("SELECT * FROM t WHERE a IN (SELECT b FROM u)").unwrap().is_none());
        assert!(find("SELECT * FROM t INTO OUTFILE").is_err());
    }
}
