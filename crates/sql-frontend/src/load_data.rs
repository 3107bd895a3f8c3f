//! `LOAD DATA [LOCAL] INFILE`: the statement's clauses, and MySQL's rules for cutting a file
//! into rows and fields.
//!
//! sqlparser knows only Hive's `LOAD DATA INPATH`, so [`parse`] reads MySQL's form itself, on
//! sqlparser's tokens (its expression parser reads the `SET` clause). [`Rows`] then walks the
//! file's bytes as MySQL's reader does:
//! - a row starts after `LINES STARTING BY` (text before it, and lines without it, are
//!   skipped) and ends at `LINES TERMINATED BY` or at the end of the file; a terminator at the
//!   very end makes no empty row after it, and a field terminator there no empty field;
//! - fields end at `FIELDS TERMINATED BY`; a field that begins with the `ENCLOSED BY`
//!   character runs to that character followed by a terminator (or the end), and a doubled
//!   enclosing character inside it is one character;
//! - the `ESCAPED BY` character takes the next byte literally, except `0 b n r t Z`, which
//!   stand for NUL, backspace, newline, carriage return, tab and Ctrl-Z;
//! - NULL is an unenclosed field that is exactly the escape character and `N`, or, when
//!   `ENCLOSED BY` is set, an unenclosed field that is the word `NULL`;
//! - with neither a field terminator nor an enclosing character (MySQL's fixed-row format),
//!   a field is the next `width` bytes of the line, its column's display width (escape
//!   sequences count as the byte they stand for), or what is left before the line
//!   terminator; bytes after the last field are one field more (1262). A short line gives its
//!   last columns their type's zero value, with 1261 (the caller's part).
//!
//! These rules were checked against MariaDB 10.11 with the cases of the unit tests below. One
//! difference is known: an enclosed field whose closing character is followed by other data
//! (`"ab"cd,e`) reads on to the next closing character here; MariaDB takes the rest of the
//! file, opening character included, as the field.
//!
//! Fields are bytes here; the caller decodes them in the statement's character set.
//! `SELECT ... INTO OUTFILE` writes the same FIELDS and LINES clauses (`outfile`), read by
//! the same [`charset_and_format`]. Where it sits: in `quill-sql-frontend`, below the
//! session, which runs the statement (`quill_sql::session::load`); no I/O happens here.

use crate::dialect::QuillDialect;
use sqlparser::ast;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::Token;

use quill_sql_types::error::{Result, SqlError, codes};

/// The error [`codes::ER_BLOBS_AND_NO_TERMINATED`] says.
#[must_use]
pub fn blobs_and_no_terminated() -> SqlError {
    SqlError::new(codes::ER_BLOBS_AND_NO_TERMINATED, "You can't use fixed rowlength with BLOBs; please use 'fields terminated by'")
}

/// What a row whose key is already in the table does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Duplicates {
    /// Neither REPLACE nor IGNORE: an error (LOCAL loads skip it instead, as MySQL does:
    /// the server cannot stop the client's transfer).
    Error,
    Replace,
    Ignore,
}

/// Where one field of a row goes: a column, or a user variable the `SET` clause reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Column(String),
    Variable(String),
}

/// The `FIELDS` and `LINES` clauses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Format {
    pub fields_terminated: Vec<u8>,
    pub enclosed: Option<u8>,
    /// `OPTIONALLY ENCLOSED BY` (the same on input; it matters to `SELECT ... INTO OUTFILE`).
    pub optionally: bool,
    pub escaped: Option<u8>,
    pub lines_starting: Vec<u8>,
    pub lines_terminated: Vec<u8>,
}

impl Format {
    /// MySQL's fixed-row format: no field terminator and no enclosing character. Each field
    /// then takes its column's display width (`SqlType::display_length`, in bytes), padded
    /// with spaces; lines still end with the line terminator, if there is one.
    #[must_use]
    pub fn is_fixed(&self) -> bool {
        self.fields_terminated.is_empty() && self.enclosed.is_none()
    }
}

impl Default for Format {
    /// MySQL's defaults: tab-separated fields, no enclosing, backslash escapes, newline-ended lines.
    fn default() -> Format {
        Format {
            fields_terminated: b"\t".to_vec(),
            enclosed: None,
            optionally: false,
            escaped: Some(b'\\'),
            lines_starting: Vec::new(),
            lines_terminated: b"\n".to_vec(),
        }
    }
}

/// A parsed `LOAD DATA` statement.
#[derive(Debug, Clone)]
pub struct LoadSpec {
    pub local: bool,
    pub file: String,
    pub duplicates: Duplicates,
    pub table: ast::ObjectName,
    /// `CHARACTER SET`, as written.
    pub charset: Option<String>,
    pub format: Format,
    /// `IGNORE n LINES` (or `ROWS`).
    pub ignore_lines: u64,
    /// The column and variable list; empty means every column in table order.
    pub targets: Vec<Target>,
    /// `SET column = expression`.
    pub set: Vec<(String, ast::Expr)>,
}

/// Whether `sql` is a `LOAD DATA` statement (leading comments and blanks aside).
#[must_use]
pub fn is_load_data(sql: &str) -> bool {
    let mut words = sql.trim_start().split_ascii_whitespace();
    words.next().is_some_and(|w| w.eq_ignore_ascii_case("LOAD")) && words.next().is_some_and(|w| w.eq_ignore_ascii_case("DATA"))
}

/// Parses a `LOAD DATA` statement.
///
/// # Errors
/// 1064 for a syntax error, 1083 for an `ENCLOSED BY` or `ESCAPED BY` of more than one
/// character, 1235 for what Quill does not read yet (`PARTITION`).
pub fn parse(sql: &str) -> Result<LoadSpec> {
    let dialect = QuillDialect::default();
    let mut p = Parser::new(&dialect).try_with_sql(sql).map_err(|e| SqlError::parse(&e.to_string()))?;
    let syntax = |near: &str| SqlError::parse(near);
    let mut r = Reader { p: &mut p };
    r.expect("LOAD")?;
    r.expect("DATA")?;
    let _ = r.word("LOW_PRIORITY") || r.word("CONCURRENT");
    let local = r.word("LOCAL");
    r.expect("INFILE")?;
    let file = r.string()?;
    let duplicates = if r.word("REPLACE") {
        Duplicates::Replace
    } else if r.word("IGNORE") {
        Duplicates::Ignore
    } else {
        Duplicates::Error
    };
    r.expect("INTO")?;
    r.expect("TABLE")?;
    let table = r.p.parse_object_name(false).map_err(|e| SqlError::parse(&e.to_string()))?;
    if r.word("PARTITION") {
        return Err(SqlError::unsupported("LOAD DATA ... PARTITION"));
    }
    let (charset, format) = charset_and_format(&mut r)?;
    let mut ignore_lines = 0;
    if r.word("IGNORE") {
        ignore_lines = r.number()?;
        if !(r.word("LINES") || r.word("ROWS")) {
            return Err(syntax("IGNORE"));
        }
    }
    let mut targets = Vec::new();
    if r.p.consume_token(&Token::LParen) {
        loop {
            targets.push(r.target()?);
            if r.p.consume_token(&Token::RParen) {
                break;
            }
            if !r.p.consume_token(&Token::Comma) {
                return Err(syntax(&r.p.peek_token().to_string()));
            }
        }
    }
    let mut set = Vec::new();
    if r.word("SET") {
        loop {
            let column = r.name()?;
            if !r.p.consume_token(&Token::Eq) {
                return Err(syntax(&column));
            }
            let value = r.p.parse_expr().map_err(|e| SqlError::parse(&e.to_string()))?;
            set.push((column, value));
            if !r.p.consume_token(&Token::Comma) {
                break;
            }
        }
    }
    let _ = r.p.consume_token(&Token::SemiColon);
    if r.p.peek_token().token != Token::EOF {
        return Err(syntax(&r.p.peek_token().to_string()));
    }
    Ok(LoadSpec { local, file, duplicates, table, charset, format, ignore_lines, targets, set })
}

/// The `CHARACTER SET` and the `FIELDS` / `LINES` clauses, as `LOAD DATA` and `SELECT ... INTO
/// OUTFILE` both write them.
///
/// # Errors
/// 1064 for a clause with nothing in it, 1083 for an `ENCLOSED BY` or `ESCAPED BY` of more
/// than one character.
pub(crate) fn charset_and_format(r: &mut Reader<'_, '_>) -> Result<(Option<String>, Format)> {
    let syntax = |near: &str| SqlError::parse(near);
    let mut charset = None;
    if r.word("CHARACTER") {
        r.expect("SET")?;
        charset = Some(r.name()?);
    } else if r.word("CHARSET") {
        charset = Some(r.name()?);
    }
    let mut format = Format::default();
    if r.word("FIELDS") || r.word("COLUMNS") {
        let mut any = false;
        loop {
            if r.word("TERMINATED") {
                r.expect("BY")?;
                format.fields_terminated = r.bytes()?;
            } else if r.word("OPTIONALLY") {
                r.expect("ENCLOSED")?;
                r.expect("BY")?;
                format.enclosed = single(&r.bytes()?)?;
                format.optionally = true;
            } else if r.word("ENCLOSED") {
                r.expect("BY")?;
                format.enclosed = single(&r.bytes()?)?;
            } else if r.word("ESCAPED") {
                r.expect("BY")?;
                format.escaped = single(&r.bytes()?)?;
            } else {
                break;
            }
            any = true;
        }
        if !any {
            return Err(syntax("FIELDS"));
        }
    }
    if r.word("LINES") {
        let mut any = false;
        loop {
            if r.word("STARTING") {
                r.expect("BY")?;
                format.lines_starting = r.bytes()?;
            } else if r.word("TERMINATED") {
                r.expect("BY")?;
                format.lines_terminated = r.bytes()?;
            } else {
                break;
            }
            any = true;
        }
        if !any {
            return Err(syntax("LINES"));
        }
    }
    Ok((charset, format))
}

/// `ENCLOSED BY` and `ESCAPED BY` take one character, or none.
fn single(bytes: &[u8]) -> Result<Option<u8>> {
    match bytes {
        [] => Ok(None),
        [b] => Ok(Some(*b)),
        _ => Err(SqlError::new(codes::ER_WRONG_FIELD_TERMINATORS, "Field separator argument is not what is expected; check the manual")),
    }
}

/// Keyword-by-text reading on sqlparser's tokens: most of LOAD DATA's words are not
/// sqlparser keywords.
pub(crate) struct Reader<'p, 'a> {
    pub(crate) p: &'p mut Parser<'a>,
}

impl Reader<'_, '_> {
    /// Consumes the next token when it is the unquoted word `w`.
    pub(crate) fn word(&mut self, w: &str) -> bool {
        let matches = matches!(&self.p.peek_token().token, Token::Word(word) if word.quote_style.is_none() && word.value.eq_ignore_ascii_case(w));
        if matches {
            self.p.next_token();
        }
        matches
    }

    pub(crate) fn expect(&mut self, w: &str) -> Result<()> {
        if self.word(w) { Ok(()) } else { Err(SqlError::parse(&self.p.peek_token().to_string())) }
    }

    /// A quoted string; its escapes are already read (`'\t'` is a tab).
    pub(crate) fn string(&mut self) -> Result<String> {
        match self.p.next_token().token {
            Token::SingleQuotedString(s) | Token::DoubleQuotedString(s) => Ok(s),
            other => Err(SqlError::parse(&other.to_string())),
        }
    }

    /// A quoted string as bytes, or a hexadecimal literal (`X'09'`, `0x09`).
    fn bytes(&mut self) -> Result<Vec<u8>> {
        match self.p.next_token().token {
            Token::SingleQuotedString(s) | Token::DoubleQuotedString(s) => Ok(s.into_bytes()),
            Token::HexStringLiteral(h) => decode_hex(&h).ok_or_else(|| SqlError::parse(&h)),
            Token::Number(n, _) if n.len() > 2 && n[..2].eq_ignore_ascii_case("0x") => decode_hex(&n[2..]).ok_or_else(|| SqlError::parse(&n)),
            other => Err(SqlError::parse(&other.to_string())),
        }
    }

    fn number(&mut self) -> Result<u64> {
        match self.p.next_token().token {
            Token::Number(n, _) => n.parse().map_err(|_| SqlError::parse(&n)),
            other => Err(SqlError::parse(&other.to_string())),
        }
    }

    /// An identifier or a string (a character set or column name).
    fn name(&mut self) -> Result<String> {
        match self.p.next_token().token {
            Token::Word(w) => Ok(w.value),
            Token::SingleQuotedString(s) | Token::DoubleQuotedString(s) => Ok(s),
            other => Err(SqlError::parse(&other.to_string())),
        }
    }

    /// A column name or `@variable` of the target list.
    fn target(&mut self) -> Result<Target> {
        let token = self.p.next_token().token;
        match token {
            Token::Word(w) if w.quote_style.is_none() && w.value.starts_with('@') => Ok(Target::Variable(w.value[1..].to_owned())),
            Token::Word(w) => Ok(Target::Column(w.value)),
            Token::AtSign => Ok(Target::Variable(self.name()?)),
            other => Err(SqlError::parse(&other.to_string())),
        }
    }
}

fn decode_hex(h: &str) -> Option<Vec<u8>> {
    if !h.len().is_multiple_of(2) {
        return None;
    }
    (0..h.len()).step_by(2).map(|i| u8::from_str_radix(h.get(i..i + 2)?, 16).ok()).collect()
}

/// Where `needle` (not empty) first occurs in `haystack`.
fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// One field of a row: its bytes, or `None` for NULL.
pub type Field = Option<Vec<u8>>;

/// The rows of a file, each a list of fields (see the module doc).
pub struct Rows<'a> {
    data: &'a [u8],
    at: usize,
    format: &'a Format,
    /// Field widths in bytes, for the fixed-row format ([`Format::is_fixed`]).
    widths: &'a [usize],
}

impl<'a> Rows<'a> {
    #[must_use]
    pub fn new(data: &'a [u8], format: &'a Format) -> Rows<'a> {
        Rows { data, at: 0, format, widths: &[] }
    }

    /// The field widths of a fixed-row format, one per field of a line.
    #[must_use]
    pub fn with_widths(mut self, widths: &'a [usize]) -> Rows<'a> {
        self.widths = widths;
        self
    }

    /// How many bytes of the file are behind the rows read so far (for a load's progress).
    #[must_use]
    pub fn position(&self) -> usize {
        self.at
    }

    /// `IGNORE n LINES`: skips the first `n` lines, each up to and including the line
    /// terminator, whatever they hold (MySQL counts lines here, not rows).
    #[must_use]
    pub fn skip_lines(mut self, n: u64) -> Rows<'a> {
        let term = &self.format.lines_terminated;
        for _ in 0..n {
            if term.is_empty() || self.done() {
                break;
            }
            self.at = find(&self.data[self.at..], term).map_or(self.data.len(), |p| self.at + p + term.len());
        }
        self
    }

    fn at_field_end(&self) -> bool {
        self.data[self.at..].starts_with(&self.format.fields_terminated) && !self.format.fields_terminated.is_empty()
    }

    fn at_line_end(&self) -> bool {
        !self.format.lines_terminated.is_empty() && self.data[self.at..].starts_with(&self.format.lines_terminated)
    }

    fn done(&self) -> bool {
        self.at >= self.data.len()
    }

    /// The byte an escape sequence `escape c` stands for.
    fn unescape(c: u8) -> u8 {
        match c {
            b'0' => 0,
            b'b' => 8,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'Z' => 26,
            other => other,
        }
    }

    /// Reads one field, leaving `at` on its terminator (or the end).
    fn field(&mut self) -> Field {
        let f = self.format;
        let mut value = Vec::new();
        if let Some(q) = f.enclosed
            && self.data.get(self.at) == Some(&q)
        {
            self.at += 1;
            while !self.done() {
                let b = self.data[self.at];
                if Some(b) == f.escaped && self.at + 1 < self.data.len() {
                    value.push(Self::unescape(self.data[self.at + 1]));
                    self.at += 2;
                } else if b == q {
                    if self.data.get(self.at + 1) == Some(&q) {
                        value.push(q);
                        self.at += 2;
                        continue;
                    }
                    self.at += 1;
                    if self.done() || self.at_field_end() || self.at_line_end() {
                        return Some(value);
                    }
                    // An enclosing character not followed by a terminator is data.
                    value.push(q);
                } else {
                    value.push(b);
                    self.at += 1;
                }
            }
            return Some(value);
        }
        let mut escaped_n = false;
        // Bytes that can start neither a terminator nor an escape are data: taken as a run.
        let (field_start, line_start) = (f.fields_terminated.first().copied(), f.lines_terminated.first().copied());
        let special = |b: u8| Some(b) == field_start || Some(b) == line_start || Some(b) == f.escaped;
        loop {
            let rest = &self.data[self.at..];
            let run = rest.iter().position(|&b| special(b)).unwrap_or(rest.len());
            if run > 0 {
                value.extend_from_slice(&rest[..run]);
                self.at += run;
                escaped_n = false;
            }
            if self.done() || self.at_field_end() || self.at_line_end() {
                break;
            }
            let b = self.data[self.at];
            if Some(b) == f.escaped && self.at + 1 < self.data.len() {
                let c = self.data[self.at + 1];
                escaped_n = value.is_empty() && c == b'N';
                value.push(Self::unescape(c));
                self.at += 2;
            } else {
                escaped_n = false;
                value.push(b);
                self.at += 1;
            }
        }
        if (escaped_n && value == b"N") || (f.enclosed.is_some() && value == b"NULL") {
            return None;
        }
        Some(value)
    }
}

impl Rows<'_> {
    /// A line of the fixed-row format: each field is the next `width` bytes (escape sequences
    /// counting as the byte they stand for), or what is left before the line terminator. The
    /// bytes of the line after the last field are one more field, so the caller reports the
    /// line as too long (1262), as MySQL does.
    fn fixed_row(&mut self) -> Vec<Field> {
        let f = self.format;
        let mut row = Vec::with_capacity(self.widths.len() + 1);
        for &width in self.widths {
            if self.done() || self.at_line_end() {
                break;
            }
            let mut value = Vec::new();
            while value.len() < width && !self.done() && !self.at_line_end() {
                let b = self.data[self.at];
                if Some(b) == f.escaped && self.at + 1 < self.data.len() {
                    value.push(Self::unescape(self.data[self.at + 1]));
                    self.at += 2;
                } else {
                    value.push(b);
                    self.at += 1;
                }
            }
            row.push(Some(value));
        }
        if !f.lines_terminated.is_empty() {
            let rest = self.at;
            while !self.done() && !self.at_line_end() {
                self.at += 1;
            }
            if self.at > rest {
                row.push(Some(self.data[rest..self.at].to_vec()));
            }
            if self.at_line_end() {
                self.at += f.lines_terminated.len();
            }
        }
        row
    }
}

impl Iterator for Rows<'_> {
    type Item = Vec<Field>;

    fn next(&mut self) -> Option<Vec<Field>> {
        let f = self.format;
        if !f.lines_starting.is_empty() {
            self.at += find(&self.data[self.at.min(self.data.len())..], &f.lines_starting)? + f.lines_starting.len();
        }
        if self.done() {
            return None;
        }
        if f.is_fixed() {
            let start = self.at;
            let row = self.fixed_row();
            // Fields of width 0 and no line terminator read nothing: no more rows.
            return (self.at > start).then_some(row);
        }
        let mut row = Vec::new();
        loop {
            row.push(self.field());
            if self.done() {
                return Some(row);
            }
            if self.at_field_end() {
                self.at += f.fields_terminated.len();
                if self.done() {
                    // A field terminator that ends the file starts no field (MariaDB 10.11
                    // reads `a,` at the end as one field, `a,\n` as two).
                    return Some(row);
                }
                continue;
            }
            if self.at_line_end() {
                self.at += f.lines_terminated.len();
                return Some(row);
            }
            // An enclosed field followed by other bytes: they start the next field's data,
            // as MySQL's reader does not stop there either.
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(data: &[u8], format: &Format) -> Vec<Vec<Option<String>>> {
        Rows::new(data, format).map(|r| r.into_iter().map(|f| f.map(|b| String::from_utf8(b).unwrap())).collect()).collect()
    }

    fn s(v: &str) -> Option<String> {
        Some(v.to_owned())
    }

    #[test]
    fn the_defaults_read_tab_separated_lines_with_backslash_escapes() {
        let f = Format::default();
        assert_eq!(rows(b"1\ta\n2\tb\n", &f), vec![vec![s("1"), s("a")], vec![s("2"), s("b")]]);
        assert_eq!(rows(b"1\ta", &f), vec![vec![s("1"), s("a")]], "no terminator at the end");
        assert_eq!(rows(b"1\t\\N\n2\t\\\\N\n", &f), vec![vec![s("1"), None], vec![s("2"), s("\\N")]]);
        assert_eq!(rows(b"a\\tb\\nc\\0\n", &f), vec![vec![s("a\tb\nc\0")]]);
        assert_eq!(rows(b"x\n\ny\n", &f), vec![vec![s("x")], vec![s("")], vec![s("y")]], "an empty line is a row");
        assert_eq!(rows(b"NULL\n", &f), vec![vec![s("NULL")]], "the word NULL is NULL only when ENCLOSED BY is set");
    }

    #[test]
    fn enclosed_fields_keep_terminators_and_doubled_quotes() {
        let f = Format { fields_terminated: b",".to_vec(), enclosed: Some(b'"'), ..Format::default() };
        assert_eq!(rows(b"1,\"a,b\"\n2,\"say \"\"hi\"\"\"\n", &f), vec![vec![s("1"), s("a,b")], vec![s("2"), s("say \"hi\"")]]);
        assert_eq!(rows(b"\"line\nbreak\",x\n", &f), vec![vec![s("line\nbreak"), s("x")]]);
        assert_eq!(rows(b"NULL,\"NULL\",\\N\n", &f), vec![vec![None, s("NULL"), None]]);
        assert_eq!(rows(b"a,\n", &f), vec![vec![s("a"), s("")]]);
        assert_eq!(rows(b"a,", &f), vec![vec![s("a")]]);
    }

    #[test]
    fn lines_starting_by_skips_what_comes_before_it_and_lines_without_it() {
        let f = Format { fields_terminated: b",".to_vec(), lines_starting: b"xxx".to_vec(), ..Format::default() };
        assert_eq!(rows(b"xxx\"abc\",1\nsomething xxx\"def\",2\n\"ghi\",3\n", &f), vec![vec![s("\"abc\""), s("1")], vec![s("\"def\""), s("2")]]);
    }

    /// Fixed-row lines as MariaDB 10.11 reads them: fields by width (an escape sequence is
    /// one byte of it), a short line ends early, bytes after the last field are one field more.
    #[test]
    fn fixed_rows_split_by_width() {
        let f = Format { fields_terminated: Vec::new(), ..Format::default() };
        let widths = [3, 4];
        let read = |data: &[u8]| -> Vec<Vec<Option<String>>> {
            Rows::new(data, &f).with_widths(&widths).map(|r| r.into_iter().map(|f| f.map(|b| String::from_utf8(b).unwrap())).collect()).collect()
        };
        assert_eq!(
            read(b"1  ab  \n\\n22 x\\ty\n7\n123abcdEXTRA\n"),
            vec![vec![s("1  "), s("ab  ")], vec![s("\n22"), s(" x\ty")], vec![s("7")], vec![s("123"), s("abcd"), s("EXTRA")]]
        );
        let no_lines = Format { lines_terminated: Vec::new(), ..f.clone() };
        assert_eq!(Rows::new(b"abc", &no_lines).with_widths(&[0, 0]).count(), 0, "fields of width 0 and no line terminator: no rows, not endless ones");
        assert_eq!(Rows::new(b"1  ab  2  cd  ", &no_lines).with_widths(&widths).count(), 2, "without a line terminator, a row is exactly its widths long");
    }

    #[test]
    fn ignore_lines_counts_lines_before_any_prefix() {
        let f = Format { fields_terminated: b",".to_vec(), lines_starting: b"xxx".to_vec(), ..Format::default() };
        let data = b"h1,h2\nxxxa,1\nxxxb,2\n";
        let rows: Vec<_> = Rows::new(data, &f).skip_lines(1).collect();
        assert_eq!(rows.len(), 2);
        assert_eq!(Rows::new(b"a\nb\n", &Format::default()).skip_lines(5).count(), 0);
    }

    #[test]
    fn multi_byte_terminators() {
        let f = Format { fields_terminated: b"||".to_vec(), lines_terminated: b"\r\n".to_vec(), ..Format::default() };
        assert_eq!(rows(b"a||b|c\r\nd||e\r\n", &f), vec![vec![s("a"), s("b|c")], vec![s("d"), s("e")]]);
    }

    #[test]
    fn statements_parse_with_every_clause() {
        let spec = parse(
            "LOAD DATA LOCAL INFILE '/tmp/x.csv' REPLACE INTO TABLE db.t CHARACTER SET utf8mb4 \
             FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\"' ESCAPED BY '' \
             LINES STARTING BY 'x' TERMINATED BY '\\r\\n' IGNORE 1 LINES (a, @b, c) SET d = @b + 1",
        )
        .unwrap();
        assert!(spec.local);
        assert_eq!(spec.file, "/tmp/x.csv");
        assert_eq!(spec.duplicates, Duplicates::Replace);
        assert_eq!(spec.table.to_string(), "db.t");
        assert_eq!(spec.charset.as_deref(), Some("utf8mb4"));
        assert_eq!(
            spec.format,
            Format {
                fields_terminated: b",".to_vec(),
                enclosed: Some(b'"'),
                optionally: true,
                escaped: None,
                lines_starting: b"x".to_vec(),
                lines_terminated: b"\r\n".to_vec()
            }
        );
        assert_eq!(spec.ignore_lines, 1);
        assert_eq!(spec.targets, vec![Target::Column("a".into()), Target::Variable("b".into()), Target::Column("c".into())]);
        assert_eq!(spec.set.len(), 1);
        assert_eq!(spec.set[0].0, "d");

        let plain = parse("load data infile 'f' into table t").unwrap();
        assert!(!plain.local);
        assert_eq!(plain.duplicates, Duplicates::Error);
        assert_eq!(plain.format, Format::default());
        assert!(plain.targets.is_empty());
        assert!(is_load_data("  LOAD  DATA LOCAL INFILE 'f' INTO TABLE t"));
        assert!(!is_load_data("LOAD INDEX INTO CACHE t"));
    }

    #[test]
    fn bad_statements_get_mysql_errors() {
        assert_eq!(parse("LOAD DATA INFILE 'f' INTO TABLE t FIELDS ENCLOSED BY 'ab'").unwrap_err().code, 1083);
        assert_eq!(parse("LOAD DATA INFILE 'f' INTO TABLE t FIELDS ESCAPED BY '\\\\\\\\'").unwrap_err().code, 1083);
        assert!(parse("LOAD DATA INFILE 'f' INTO TABLE t FIELDS TERMINATED BY ''").unwrap().format.is_fixed());
        assert_eq!(parse("LOAD DATA INFILE INTO TABLE t").unwrap_err().code, 1064);
        assert_eq!(parse("LOAD DATA INFILE 'f' INTO TABLE t IGNORE 2").unwrap_err().code, 1064);
        assert_eq!(parse("LOAD DATA INFILE 'f' INTO TABLE t trailing").unwrap_err().code, 1064);
    }
}
