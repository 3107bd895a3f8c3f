//! `SELECT ... INTO OUTFILE` and `INTO DUMPFILE`: the clause, and MySQL's rules for writing a
//! result as a file `LOAD DATA` reads back.
//!
//! sqlparser does not read the clause, so [`find`] cuts it out of the statement's text (it
//! may stand after the select list or at the end, at the outermost level) and reads it with
//! `LOAD DATA`'s clause reader; the rest of the text is an ordinary query. [`FileSink`] then
//! takes the result's rows through the row-sink seam, as a client connection would, and
//! writes each as MySQL's `select_export` does:
//! - a line is `LINES STARTING BY`, the fields joined by `FIELDS TERMINATED BY`, then
//!   `LINES TERMINATED BY` (the field terminator when that is empty);
//! - NULL is the escape character and `N`, or the word `NULL` when there is no escape
//!   character; it is never enclosed;
//! - with `ENCLOSED BY`, every other field is enclosed; with `OPTIONALLY ENCLOSED BY`, only
//!   fields of a type that is not a number;
//! - with an escape character, each byte that is the escape character, the enclosing
//!   character (or, without one, the field terminator's first byte), the line terminator's
//!   first byte, or NUL, is written after the escape character (NUL as `0`).
//!
//! `INTO DUMPFILE` writes the one row's values back to back, with nothing added; a result of
//! more rows is 1172. Values are written as the text protocol sends them, text in the
//! clause's `CHARACTER SET` (utf8mb4 when none is given). Where it sits: in `sql`, below the
//! session (`session::outfile`), which checks the path and runs the query.

use std::io::Write;

use crate::dialect::QuillDialect;
use quill_log::{FlushMode, Lsn};
use quill_storage::Value;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Token, Tokenizer};

use crate::error::{Result, SqlError};
use crate::load_data::{self, Format};
use crate::query::OutColumn;
use crate::sink::RowSink;
use crate::text::Charset;
use crate::types::SqlType;

/// MySQL's error for an `INTO DUMPFILE` (or `INTO @var`) query that returns more than one row.
pub const ER_TOO_MANY_ROWS: (u16, &str) = (1172, "42000");
/// Bytes gathered before each write to the file.
pub const FILE_BUFFER_BYTES: usize = 64 << 10;

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

/// Writes a result's rows into a file, as a row sink (see the module doc).
pub struct FileSink {
    file: std::fs::File,
    kind: Kind,
    format: Format,
    charset: Charset,
    types: Vec<SqlType>,
    buffer: Vec<u8>,
    /// Rows written so far.
    pub rows: u64,
}

impl FileSink {
    #[must_use]
    pub fn new(file: std::fs::File, kind: Kind, mut format: Format, charset: Charset) -> FileSink {
        if format.lines_terminated.is_empty() {
            format.lines_terminated.clone_from(&format.fields_terminated);
        }
        FileSink { file, kind, format, charset, types: Vec::new(), buffer: Vec::with_capacity(FILE_BUFFER_BYTES), rows: 0 }
    }

    /// Writes what is buffered and makes sure the file has it.
    ///
    /// # Errors
    /// The file cannot be written (3, as MySQL's "Error writing file").
    pub fn finish(&mut self) -> Result<()> {
        self.flush()?;
        self.file.flush().map_err(write_error)
    }

    fn flush(&mut self) -> Result<()> {
        self.file.write_all(&self.buffer).map_err(write_error)?;
        self.buffer.clear();
        Ok(())
    }

    /// Appends one line to the buffer. In the fixed-row format ([`Format::is_fixed`]) each
    /// value is padded with spaces to its column's display width, and NULL is all spaces.
    fn outfile_row(&mut self, row: &[Value]) {
        let f = &self.format;
        let fixed = f.is_fixed();
        let line = &mut self.buffer;
        line.extend_from_slice(&f.lines_starting);
        for (i, (v, ty)) in row.iter().zip(&self.types).enumerate() {
            if i > 0 {
                line.extend_from_slice(&f.fields_terminated);
            }
            let width = if fixed { ty.display_length() as usize } else { 0 };
            let Some(bytes) = text(self.charset, v, ty) else {
                match f.escaped {
                    _ if fixed => line.resize(line.len() + width, b' '),
                    Some(e) => line.extend_from_slice(&[e, b'N']),
                    None => line.extend_from_slice(b"NULL"),
                }
                continue;
            };
            // The padding counts the value's own bytes, not its escapes (as MySQL).
            let padding = width.saturating_sub(bytes.len());
            let enclose = f.enclosed.filter(|_| !f.optionally || !ty.is_numeric());
            line.extend(enclose);
            match f.escaped {
                Some(escape) => {
                    let special = f.enclosed.or_else(|| f.fields_terminated.first().copied());
                    let line_end = f.lines_terminated.first().copied();
                    for &b in bytes.iter() {
                        if b == escape || Some(b) == special || Some(b) == line_end || b == 0 {
                            line.push(escape);
                            line.push(if b == 0 { b'0' } else { b });
                        } else {
                            line.push(b);
                        }
                    }
                }
                None => line.extend_from_slice(&bytes),
            }
            line.extend(enclose);
            line.resize(line.len() + padding, b' ');
        }
        line.extend_from_slice(&f.lines_terminated);
    }
}

/// A value's bytes in the file, as the text protocol would send them; text in `charset`.
fn text<'v>(charset: Charset, v: &'v Value, ty: &SqlType) -> Option<std::borrow::Cow<'v, [u8]>> {
    match v {
        Value::Str(s) => Some(charset.encode(s)),
        _ => crate::types::to_text(v, ty).map(std::borrow::Cow::Owned),
    }
}

fn write_error(e: std::io::Error) -> SqlError {
    SqlError::new((3, "HY000"), format!("Error writing file (OS errno {} - {e})", e.raw_os_error().unwrap_or(0)))
}

impl RowSink for FileSink {
    fn begin(&mut self, columns: &[OutColumn], _durable: Option<(Lsn, FlushMode)>) -> Result<()> {
        if self.kind == Kind::Outfile && self.format.is_fixed() && columns.iter().any(|c| matches!(c.ty, SqlType::Text { .. } | SqlType::Blob(_))) {
            return Err(load_data::blobs_and_no_terminated());
        }
        self.types = columns.iter().map(|c| c.ty.clone()).collect();
        Ok(())
    }

    fn row(&mut self, row: &[Value]) -> Result<()> {
        self.rows += 1;
        match self.kind {
            Kind::Dumpfile if self.rows > 1 => return Err(SqlError::new(ER_TOO_MANY_ROWS, "Result consisted of more than one row")),
            Kind::Dumpfile => {
                for (v, ty) in row.iter().zip(&self.types) {
                    if let Some(bytes) = text(self.charset, v, ty) {
                        self.buffer.extend_from_slice(&bytes);
                    }
                }
            }
            Kind::Outfile => self.outfile_row(row),
        }
        if self.buffer.len() >= FILE_BUFFER_BYTES { self.flush() } else { Ok(()) }
    }

    fn read_local_file(&mut self, _name: &str) -> Result<Option<Vec<u8>>> {
        Ok(None)
    }

    fn begun(&self) -> bool {
        !self.types.is_empty()
    }

    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any> {
        self
    }
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
