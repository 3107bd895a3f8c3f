//! SQL text as the client sent it: bytes in `character_set_client`, turned into the UTF-8
//! statements the parser reads, without losing or inventing a byte.
//!
//! A COM_QUERY (or COM_STMT_PREPARE) payload is bytes. [`split`] walks them once, as
//! MySQL's lexer does, and produces one [`StatementText`] per top-level `;`:
//!
//! - **String literals** keep exactly the bytes the client meant. A literal whose bytes are
//!   valid in its character set (the `_charset` introducer's, else the client's) is passed
//!   on as UTF-8 (latin1 is transcoded). A `_binary` literal, and one whose bytes are not
//!   valid in its character set, become a hex literal `X'…'` holding the unescaped bytes,
//!   so the parser (which reads UTF-8 only) never sees them and nothing is replaced; the
//!   latter also gets warning 1300, as MySQL gives. Storing such a value into a character
//!   column is then refused (1366) or warned about by the column's coercion.
//! - **Comments** become a space. An executable comment `/*!NNNNN … */` is code when
//!   `NNNNN` (five digits, MySQL's rule) is at most [`SERVER_VERSION_ID`] or absent; MariaDB's
//!   `/*M!…*/` is an ordinary comment, as it is to MySQL 8.
//! - **Placeholders** `?` are numbered `?0`, `?1`, … in order, which the binder reads.
//! - A NUL byte outside a literal is whitespace (clients such as mariadb-slap end their
//!   text with one); empty statements (`;;`, trailing `;`) are dropped.
//! - A stored program's definition (`CREATE [DEFINER = ...] {TRIGGER | PROCEDURE | FUNCTION |
//!   EVENT}`) is one statement whatever `;`s its body holds: the lexer follows the body's
//!   blocks (`BEGIN`, `CASE`, and `IF` / `LOOP` / `WHILE` / `REPEAT` where a statement may
//!   start, each closed by an `END`) and ends the definition at the first `;` outside them,
//!   as MySQL's grammar does ([`Blocks`]).
//! - Binary operators are counted ([`StatementText::operators`]): the parser builds one
//!   tree level per operator of a chain, which bounds how deep a statement can be before it
//!   is parsed (see `parse`).
//!
//! Bytes outside literals that are not valid in the client's character set fail the
//! statement with 1300. Invariant: every `text` produced is valid UTF-8 whose string
//! literals decode to the bytes the client sent.

use quill_sql_types::charset::{Charset, hex_upper};
use quill_sql_types::error::{Result, SqlError, Warning, codes};

/// The version executable comments are compared with: MySQL's `MYSQL_VERSION_ID` of the
/// version Quill reports (8.0.40).
pub const SERVER_VERSION_ID: u32 = 80_040;

/// How many bytes of an invalid string warning 1300 quotes in hex (MySQL quotes a few).
const INVALID_STRING_QUOTE_BYTES: usize = 32;

/// How to read a client's text.
#[derive(Debug, Clone, Copy)]
pub struct LexOptions {
    pub charset: Charset,
    /// False under `sql_mode` NO_BACKSLASH_ESCAPES.
    pub backslash_escapes: bool,
}

impl Default for LexOptions {
    fn default() -> LexOptions {
        LexOptions { charset: Charset::Utf8mb4, backslash_escapes: true }
    }
}

/// One statement, ready for the parser.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatementText {
    /// The statement as UTF-8, without comments and the terminating `;`.
    pub text: String,
    /// Binary operators (symbols and keywords) outside literals: an upper bound on the
    /// length of any operator chain in it.
    pub operators: usize,
    /// `?` placeholders, numbered in order.
    pub placeholders: usize,
    /// `DIV` operators, which the parser handles in time quadratic in a chain's length
    /// (`parse` bounds them).
    pub div_operators: usize,
    /// Warnings reading the text gave (1300 for a literal invalid in its character set).
    pub warnings: Vec<Warning>,
    /// Where the statement is in the client's text, comments included, without the
    /// whitespace around it and its `;` (what the slow log shows, as MySQL's).
    pub source: std::ops::Range<usize>,
}

/// Split client text into statements (see the module doc). Each entry is a statement or
/// the error that stopped the reading of it; nothing after an error is read.
#[must_use]
pub fn split(sql: &[u8], options: LexOptions) -> Vec<Result<StatementText>> {
    let mut lexer =
        Lexer { sql, at: 0, options, current: StatementText::default(), out: Vec::new(), executable_comment: false, start: 0, blocks: Blocks::default() };
    let mut statements = Vec::new();
    loop {
        match lexer.statement() {
            Ok(Some(s)) => statements.push(Ok(s)),
            Ok(None) => return statements,
            Err(e) => {
                statements.push(Err(e));
                return statements;
            }
        }
    }
}

/// [`split`] for text that must hold one statement (a prepared statement, a logged DDL).
///
/// # Errors
/// As [`split`]; 1065 for empty text; 1064 for more than one statement.
pub fn single(sql: &[u8], options: LexOptions) -> Result<StatementText> {
    let mut statements = split(sql, options).into_iter();
    let first = statements.next().transpose()?.ok_or_else(|| SqlError::new(codes::ER_EMPTY_QUERY, "Query was empty"))?;
    if statements.next().is_some() {
        return Err(SqlError::parse(&format!("; {}", first.text.chars().take(40).collect::<String>())));
    }
    Ok(first)
}

struct Lexer<'a> {
    sql: &'a [u8],
    at: usize,
    options: LexOptions,
    current: StatementText,
    /// UTF-8 output of the statement being read.
    out: Vec<u8>,
    /// Inside a `/*!…*/` whose content is code: its `*/` is dropped.
    executable_comment: bool,
    /// Where the statement being read starts in `sql`.
    start: usize,
    /// The blocks of a stored program's body being read.
    blocks: Blocks,
}

/// What the lexer follows of a statement that defines a stored program: whether it is one
/// (decided by its first words), and which of its body's blocks are open.
#[derive(Debug, Default)]
struct Blocks {
    /// Words read before the statement was found to be a program definition or not.
    words: usize,
    /// `None` until decided.
    program: Option<bool>,
    /// The blocks open, innermost last: `true` for a CASE expression (whose THEN and ELSE
    /// start no statement), `false` for a compound statement. A `;` inside one belongs to the
    /// body.
    open: Vec<bool>,
    /// The previous word was END (so `END IF`, `END LOOP`... close one block, not open one).
    after_end: bool,
    /// The previous token lets a statement start here (`;`, `BEGIN`, `THEN`, `ELSE`, `DO`,
    /// `LOOP`, `REPEAT`, `FOR EACH ROW`, a label's `:`, a parameter list's `)`): where
    /// `IF`, `CASE` and `REPEAT` open a compound statement rather than call a function (or,
    /// for CASE, start an expression).
    statement_start: bool,
}

/// Words that may stand between CREATE and the kind of program it defines.
const PROGRAM_PREFIX_WORDS: &[&str] = &["DEFINER", "OR", "REPLACE", "AGGREGATE", "CURRENT_USER"];

/// How a word of a program's body stands.
#[derive(Debug, Clone, Copy)]
struct WordContext {
    /// The last thing written was `=` or `@` (a definer's user or host).
    after_name_punctuation: bool,
    /// The word follows a `.` (a column such as `NEW.end`): no keyword.
    qualified: bool,
    /// The next thing after the word is `(` (a function call, or a parenthesized condition).
    before_parenthesis: bool,
}

impl Blocks {
    fn in_body(&self) -> bool {
        self.program == Some(true) && !self.open.is_empty()
    }

    fn word(&mut self, word: &[u8], at: WordContext) {
        let up = String::from_utf8_lossy(word).to_ascii_uppercase();
        if self.program.is_none() {
            if self.words == 0 {
                if up != "CREATE" {
                    self.program = Some(false);
                }
            } else if matches!(up.as_str(), "TRIGGER" | "PROCEDURE" | "FUNCTION" | "EVENT") {
                self.program = Some(true);
            } else if !(PROGRAM_PREFIX_WORDS.contains(&up.as_str()) || at.after_name_punctuation) {
                self.program = Some(false);
            }
            self.words += 1;
            return;
        }
        if self.program == Some(false) {
            return;
        }
        if at.qualified {
            self.after_end = false;
            self.statement_start = false;
            return;
        }
        let in_case_expression = self.open.last() == Some(&true);
        match up.as_str() {
            "BEGIN" => self.open.push(false),
            "CASE" if !self.after_end => self.open.push(!self.statement_start),
            // LOOP and WHILE are no function; IF and REPEAT are, when a `(` follows them
            // where no statement starts.
            "LOOP" | "WHILE" if !self.after_end => self.open.push(false),
            "IF" | "REPEAT" if !self.after_end && (self.statement_start || !at.before_parenthesis) => self.open.push(false),
            "END" => {
                self.open.pop();
            }
            _ => {}
        }
        self.after_end = up == "END";
        self.statement_start = match up.as_str() {
            "THEN" | "ELSE" => !in_case_expression,
            "BEGIN" | "DO" | "LOOP" | "REPEAT" | "ROW" => true,
            _ => false,
        };
    }

    /// A token other than a word or whitespace.
    fn punctuation(&mut self, b: u8) {
        self.after_end = false;
        self.statement_start = matches!(b, b';' | b':' | b')');
    }
}

/// Words the parser may chain into a tree one level per use (binary operators, `AT TIME
/// ZONE`, set operations), counted into [`StatementText::operators`].
const OPERATOR_WORDS: &[&[u8]] = &[
    b"AND",
    b"OR",
    b"XOR",
    b"DIV",
    b"MOD",
    b"IS",
    b"LIKE",
    b"IN",
    b"BETWEEN",
    b"REGEXP",
    b"RLIKE",
    b"COLLATE",
    b"NOT",
    b"AT",
    b"UNION",
    b"EXCEPT",
    b"INTERSECT",
    b"MINUS",
];

impl Lexer<'_> {
    fn peek(&self, ahead: usize) -> Option<u8> {
        self.sql.get(self.at + ahead).copied()
    }

    /// Read up to the next top-level `;` (or the end). `None` when nothing but
    /// whitespace, comments and `;` remained.
    fn statement(&mut self) -> Result<Option<StatementText>> {
        loop {
            let Some(b) = self.peek(0) else {
                if self.executable_comment {
                    // An executable comment left open is a syntax error, as in MySQL.
                    return Err(SqlError::parse(""));
                }
                return Ok(self.finish());
            };
            match b {
                b';' if self.blocks.in_body() => {
                    self.at += 1;
                    self.out.push(b';');
                    self.blocks.punctuation(b';');
                }
                b';' => {
                    self.at += 1;
                    if let Some(s) = self.finish() {
                        return Ok(Some(s));
                    }
                }
                b'\'' | b'"' => {
                    self.string_literal(b)?;
                    self.blocks.punctuation(b);
                }
                b'`' => {
                    self.quoted_identifier()?;
                    self.blocks.punctuation(b);
                }
                b'#' => self.line_comment(),
                b'-' if self.peek(1) == Some(b'-') && self.peek(2).is_none_or(|c| c.is_ascii_whitespace() || c.is_ascii_control()) => self.line_comment(),
                b'/' if self.peek(1) == Some(b'*') => self.block_comment()?,
                b'*' if self.executable_comment && self.peek(1) == Some(b'/') => {
                    self.executable_comment = false;
                    self.at += 2;
                    self.out.push(b' ');
                }
                b'?' => {
                    self.at += 1;
                    self.out.extend_from_slice(format!("?{}", self.current.placeholders).as_bytes());
                    self.current.placeholders += 1;
                    // `?1` is not a placeholder to MySQL: keep the digit from joining the number.
                    if self.peek(0).is_some_and(|c| c.is_ascii_alphanumeric()) {
                        self.out.push(b' ');
                    }
                }
                0 => {
                    self.at += 1;
                    self.out.push(b' ');
                }
                b'+' | b'-' | b'*' | b'/' | b'%' | b'&' | b'|' | b'^' | b'<' | b'>' | b'=' | b'!' | b'~' | b':' => {
                    self.current.operators += 1;
                    self.at += 1;
                    self.out.push(b);
                    self.blocks.punctuation(b);
                }
                b if b.is_ascii_alphabetic() || b == b'_' || b == b'$' => self.word(),
                b if b.is_ascii() => {
                    self.at += 1;
                    self.out.push(b);
                    if !b.is_ascii_whitespace() {
                        self.blocks.punctuation(b);
                    }
                }
                _ => self.non_ascii_run()?,
            }
        }
    }

    /// The statement read so far, if it holds anything.
    fn finish(&mut self) -> Option<StatementText> {
        let out = std::mem::take(&mut self.out);
        let mut current = std::mem::take(&mut self.current);
        self.blocks = Blocks::default();
        let (mut from, mut to) = (self.start, self.at);
        self.start = self.at;
        if to > from && self.sql[to - 1] == b';' {
            to -= 1;
        }
        while from < to && self.sql[from].is_ascii_whitespace() {
            from += 1;
        }
        while to > from && self.sql[to - 1].is_ascii_whitespace() {
            to -= 1;
        }
        current.source = from..to;
        let text = String::from_utf8(out).expect("the lexer emits UTF-8 only");
        let trimmed = text.trim_matches(|c: char| c.is_whitespace() || c == '\0');
        if trimmed.is_empty() {
            return None;
        }
        current.text = if trimmed.len() == text.len() { text } else { trimmed.to_owned() };
        Some(current)
    }

    /// An identifier or keyword (ASCII start): copied, and counted when it is an operator.
    fn word(&mut self) {
        let start = self.at;
        while self.peek(0).is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'$') {
            self.at += 1;
        }
        let word = &self.sql[start..self.at];
        let last = self.out.iter().rev().find(|c| !c.is_ascii_whitespace()).copied();
        let next = self.sql[self.at..].iter().find(|c| !c.is_ascii_whitespace()).copied();
        let at =
            WordContext { after_name_punctuation: matches!(last, Some(b'=' | b'@')), qualified: last == Some(b'.'), before_parenthesis: next == Some(b'(') };
        self.blocks.word(word, at);
        if OPERATOR_WORDS.iter().any(|w| w.eq_ignore_ascii_case(word)) {
            self.current.operators += 1;
            if word.eq_ignore_ascii_case(b"DIV") {
                self.current.div_operators += 1;
            }
        }
        self.out.extend_from_slice(word);
    }

    /// Bytes at or above 0x80 outside literals (identifiers, in practice): valid in the
    /// client's character set, or the statement fails with 1300.
    fn non_ascii_run(&mut self) -> Result<()> {
        let start = self.at;
        while self.peek(0).is_some_and(|c| !c.is_ascii() || c.is_ascii_alphanumeric() || c == b'_' || c == b'$') {
            self.at += 1;
        }
        let run = &self.sql[start..self.at];
        match self.options.charset.decode(run) {
            Some(text) if self.options.charset != Charset::Binary || std::str::from_utf8(run).is_ok() => {
                self.out.extend_from_slice(text.as_bytes());
                Ok(())
            }
            _ => Err(invalid_string(self.options.charset, run)),
        }
    }

    fn line_comment(&mut self) {
        while self.peek(0).is_some_and(|c| c != b'\n') {
            self.at += 1;
        }
        self.out.push(b' ');
    }

    /// `/* … */`, `/*!NNNNN … */` (code when the version allows) and `/*M! … */`.
    fn block_comment(&mut self) -> Result<()> {
        if self.peek(2) == Some(b'!') && !self.executable_comment {
            let digits = (3..8).take_while(|&i| self.peek(i).is_some_and(|c| c.is_ascii_digit())).count();
            let version = if digits == 5 { std::str::from_utf8(&self.sql[self.at + 3..self.at + 8]).ok().and_then(|v| v.parse::<u32>().ok()) } else { None };
            if version.is_none_or(|v| v <= SERVER_VERSION_ID) {
                self.at += 3 + if version.is_some() { 5 } else { 0 };
                self.executable_comment = true;
                self.out.push(b' ');
                return Ok(());
            }
        }
        let start = self.at;
        self.at += 2;
        loop {
            match self.peek(0) {
                None => {
                    let near = String::from_utf8_lossy(&self.sql[start..self.sql.len().min(start + 80)]).into_owned();
                    return Err(SqlError::parse(&near));
                }
                Some(b'*') if self.peek(1) == Some(b'/') => {
                    self.at += 2;
                    self.out.push(b' ');
                    return Ok(());
                }
                Some(_) => self.at += 1,
            }
        }
    }

    /// `` `name` ``: copied, transcoded from the client's character set.
    fn quoted_identifier(&mut self) -> Result<()> {
        let start = self.at;
        self.at += 1;
        loop {
            match self.peek(0) {
                None => break,
                Some(b'`') if self.peek(1) == Some(b'`') => self.at += 2,
                Some(b'`') => {
                    self.at += 1;
                    break;
                }
                Some(_) => self.at += 1,
            }
        }
        let raw = &self.sql[start..self.at];
        // `@`name``, a user variable's quoted name: the parser reads only a bare one, which
        // a name of word characters can be.
        // (Not a definer's host, `user`@`host`: the `@` follows the user's name there.)
        let user_variable = self.out.last() == Some(&b'@')
            && self
                .out
                .len()
                .checked_sub(2)
                .is_none_or(|i| !(self.out[i].is_ascii_alphanumeric() || matches!(self.out[i], b'@' | b'`' | b'\'' | b'"' | b'_' | b'$')));
        if user_variable
            && raw.len() > 2
            && raw[raw.len() - 1] == b'`'
            && raw[1..raw.len() - 1].iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_' || *c == b'$')
        {
            self.out.extend_from_slice(&raw[1..raw.len() - 1]);
            return Ok(());
        }
        match self.options.charset.decode(raw) {
            Some(text) => {
                self.out.extend_from_slice(text.as_bytes());
                Ok(())
            }
            None => Err(invalid_string(self.options.charset, raw)),
        }
    }

    /// A `'…'` or `"…"` literal, with the `_charset` introducer before it if any.
    fn string_literal(&mut self, quote: u8) -> Result<()> {
        // `@'name'` is a quoted user variable name, not a literal.
        let is_name = self.out.last() == Some(&b'@');
        let introducer = if is_name { None } else { self.take_introducer() };
        let start = self.at + 1;
        self.at = start;
        loop {
            match self.peek(0) {
                None => {
                    // Unterminated: the parser reports it.
                    let raw = self.sql[start - 1..].to_vec();
                    self.out.extend_from_slice(String::from_utf8_lossy(&raw).as_bytes());
                    return Ok(());
                }
                Some(b'\\') if self.options.backslash_escapes => self.at = (self.at + 2).min(self.sql.len()),
                Some(c) if c == quote && self.peek(1) == Some(quote) => self.at += 2,
                Some(c) if c == quote => break,
                Some(_) => self.at += 1,
            }
        }
        let raw = &self.sql[start..self.at];
        self.at += 1;
        let charset = introducer.unwrap_or(self.options.charset);
        let as_text = if introducer == Some(Charset::Binary) { None } else { charset.decode(raw) };
        if is_name && as_text.is_none() {
            return Err(invalid_string(charset, raw));
        }
        match as_text {
            Some(text) => {
                self.out.push(quote);
                if self.options.backslash_escapes {
                    self.out.extend_from_slice(text.as_bytes());
                } else {
                    // The parser always reads backslash escapes: double them.
                    self.out.extend_from_slice(text.replace('\\', "\\\\").as_bytes());
                }
                self.out.push(quote);
            }
            None => {
                // N'...' is a utf8 literal; as bytes it is a hex literal like any other.
                if self.out.last().is_some_and(|c| c.eq_ignore_ascii_case(&b'N'))
                    && self.out.len().checked_sub(2).is_none_or(|i| !(self.out[i].is_ascii_alphanumeric() || self.out[i] == b'_'))
                {
                    self.out.pop();
                }
                let bytes = unescape(raw, quote, self.options.backslash_escapes);
                if introducer != Some(Charset::Binary) && charset != Charset::Binary {
                    self.current.warnings.push(Warning { level: "Warning", code: 1300, message: invalid_string(charset, &bytes).message });
                }
                self.out.extend_from_slice(b"X'");
                for b in &bytes {
                    self.out.extend_from_slice(format!("{b:02X}").as_bytes());
                }
                self.out.push(b'\'');
            }
        }
        Ok(())
    }

    /// Removes a `_charset` introducer (and the spaces after it) just written to the
    /// output, returning its character set. An unknown `_name` is left for the parser.
    fn take_introducer(&mut self) -> Option<Charset> {
        let end = self.out.iter().rposition(|c| !c.is_ascii_whitespace()).map_or(0, |p| p + 1);
        let start = self.out[..end].iter().rposition(|c| !(c.is_ascii_alphanumeric() || *c == b'_')).map_or(0, |p| p + 1);
        let word = &self.out[start..end];
        let name = word.strip_prefix(b"_")?;
        let charset = Charset::from_name(std::str::from_utf8(name).ok()?)?;
        self.out.truncate(start);
        Some(charset)
    }
}

/// The bytes a literal's body stands for, under MySQL's escapes: `\0 \b \n \r \t \Z`,
/// `\x` is `x` (but `\%` and `\_` keep their backslash, for LIKE), and a doubled quote is
/// one quote.
#[must_use]
pub fn unescape(raw: &[u8], quote: u8, backslash_escapes: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let b = raw[i];
        if b == b'\\' && backslash_escapes && i + 1 < raw.len() {
            let next = raw[i + 1];
            match next {
                b'0' => out.push(0),
                b'b' => out.push(8),
                b'n' => out.push(b'\n'),
                b'r' => out.push(b'\r'),
                b't' => out.push(b'\t'),
                b'Z' => out.push(0x1A),
                b'%' | b'_' => out.extend_from_slice(&[b'\\', next]),
                other => out.push(other),
            }
            i += 2;
        } else if b == quote && raw.get(i + 1) == Some(&quote) {
            out.push(quote);
            i += 2;
        } else {
            out.push(b);
            i += 1;
        }
    }
    out
}

/// MySQL's 1300 for bytes not valid in `charset`.
fn invalid_string(charset: Charset, bytes: &[u8]) -> SqlError {
    let first_bad = match charset {
        Charset::Latin1 => 0,
        _ => std::str::from_utf8(bytes).map_or_else(|e| e.valid_up_to(), |_| 0),
    };
    let shown = hex_upper(&bytes[first_bad..bytes.len().min(first_bad + INVALID_STRING_QUOTE_BYTES)]);
    SqlError::new(codes::ER_INVALID_CHARACTER_STRING, format!("Invalid {} character string: '{shown}'", charset.name()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(sql: &[u8], options: LexOptions) -> Vec<String> {
        split(sql, options).into_iter().map(|s| s.map(|s| s.text).unwrap_or_else(|e| format!("error {}", e.code))).collect()
    }

    fn utf8(sql: &[u8]) -> Vec<String> {
        texts(sql, LexOptions::default())
    }

    /// The first statement of utf8mb4 text, which must read without error.
    fn first(sql: &[u8]) -> StatementText {
        split(sql, LexOptions::default()).remove(0).unwrap()
    }

    #[test]
    fn splits_at_top_level_semicolons_only() {
        assert_eq!(utf8(b"SELECT 1; SELECT ';'; SELECT \"a;b\""), ["SELECT 1", "SELECT ';'", "SELECT \"a;b\""]);
        assert_eq!(utf8(b"SELECT 1;"), ["SELECT 1"]);
        assert_eq!(utf8(b"SELECT 'it\\'s;'; SELECT 2"), ["SELECT 'it\\'s;'", "SELECT 2"]);
        assert_eq!(utf8(b"SELECT `a;b` FROM t -- c;d\n; ;;"), ["SELECT `a;b` FROM t"]);
    }

    #[test]
    fn trailing_nul_whitespace_and_semicolons_are_ignored() {
        assert_eq!(utf8(b"SELECT 1\0"), ["SELECT 1"]);
        assert_eq!(utf8(b"SELECT 1 ;; \n\0"), ["SELECT 1"]);
        assert!(utf8(b" ;\0 ").is_empty());
    }

    #[test]
    fn literals_keep_their_bytes() {
        assert_eq!(utf8(b"SELECT HEX(_binary'\xff\xfe')"), ["SELECT HEX(X'FFFE')"]);
        assert_eq!(utf8(b"SELECT _binary'a\\0\\'b'"), ["SELECT X'61002762'"]);
        // Invalid UTF-8 in a plain literal: the bytes, and warning 1300.
        let s = first(b"INSERT INTO b VALUES (1, 'x\x80\\n')");
        assert_eq!(s.text, "INSERT INTO b VALUES (1, X'78800A')");
        assert_eq!(s.warnings[0].code, 1300);
        assert!(s.warnings[0].message.contains("'80"), "{}", s.warnings[0].message);
        // Valid UTF-8 passes through untouched, escapes and all.
        assert_eq!(utf8("SELECT 'caf\u{e9} \\n 😀'".as_bytes()), ["SELECT 'caf\u{e9} \\n 😀'"]);
        assert_eq!(utf8(b"SELECT _utf8mb4'abc'"), ["SELECT 'abc'"]);
    }

    #[test]
    fn a_program_definition_keeps_its_body() {
        let body = "CREATE DEFINER=`root`@`localhost` PROCEDURE p(IN n INT) BEGIN DECLARE i INT DEFAULT 0; \
                    w: WHILE i < n DO SET i = IF(i > 3, i + 2, i + 1); IF i = 5 THEN LEAVE w; END IF; END WHILE w; \
                    CASE WHEN i > 1 THEN SELECT CASE i WHEN 1 THEN 'a' ELSE 'b' END; ELSE BEGIN END; END CASE; \
                    REPEAT SET i = i - 1; UNTIL i < 0 END REPEAT; l: LOOP LEAVE l; END LOOP; SELECT REPEAT('x', 2); END";
        let text = format!("{body}; SELECT 1");
        assert_eq!(utf8(text.as_bytes()), [body, "SELECT 1"]);
        let trigger = "CREATE TRIGGER t BEFORE INSERT ON x FOR EACH ROW IF NEW.a < 0 THEN SET NEW.a = 0; END IF";
        assert_eq!(utf8(format!("{trigger};SELECT 2").as_bytes()), [trigger, "SELECT 2"]);
        let one = "CREATE TRIGGER t BEFORE INSERT ON x FOR EACH ROW SET NEW.a = IF(NEW.a < 0, 0, NEW.a)";
        assert_eq!(utf8(format!("{one}; SELECT 3").as_bytes()), [one, "SELECT 3"]);
        let function = "CREATE DEFINER=root@localhost FUNCTION f(x INT) RETURNS INT DETERMINISTIC RETURN x + 1";
        assert_eq!(utf8(format!("{function}; SELECT 4").as_bytes()), [function, "SELECT 4"]);
        for body in [
            "CREATE PROCEDURE p() BEGIN DECLARE CONTINUE HANDLER FOR SQLEXCEPTION IF @x THEN SET @y = 1; END IF; SELECT 1; END",
            "CREATE TRIGGER t BEFORE INSERT ON x FOR EACH ROW FOLLOWS t1 IF NEW.a < 0 THEN SET NEW.a = 0; END IF",
            "CREATE FUNCTION f(x INT) RETURNS INT DETERMINISTIC IF x > 0 THEN RETURN 1; ELSE RETURN 0; END IF",
            "CREATE TRIGGER t BEFORE INSERT ON x FOR EACH ROW BEGIN SET NEW.end = NEW.start + 1; SET NEW.b = 2; END",
            "CREATE PROCEDURE p() BEGIN SELECT CASE WHEN 1 THEN IF(1, 2, 3) ELSE REPEAT('a', 2) END; END",
        ] {
            assert_eq!(utf8(format!("{body}; SELECT 5").as_bytes()), [body, "SELECT 5"], "{body}");
        }
        // Statements that define no program split as ever.
        assert_eq!(utf8(b"CREATE TABLE t (a INT); BEGIN; SELECT IF(1, 2, 3); END"), ["CREATE TABLE t (a INT)", "BEGIN", "SELECT IF(1, 2, 3)", "END"]);
    }

    #[test]
    fn a_user_variables_quoted_name_is_bare_when_it_can_be() {
        assert_eq!(utf8(b"CALL p(@`_p_0`, @`a b`, @@`x`)"), ["CALL p(@_p_0, @`a b`, @@`x`)"]);
        assert_eq!(utf8(b"GRANT ALL ON *.* TO `u`@`h`"), ["GRANT ALL ON *.* TO `u`@`h`"]);
    }

    #[test]
    fn latin1_text_is_transcoded() {
        let latin1 = LexOptions { charset: Charset::Latin1, backslash_escapes: true };
        assert_eq!(texts(b"SELECT 'caf\xe9 \x80'", latin1), ["SELECT 'caf\u{e9} \u{20ac}'"]);
        assert_eq!(texts(b"SELECT _binary'\xe9'", latin1), ["SELECT X'E9'"]);
        assert_eq!(Charset::Latin1.encode("caf\u{e9} \u{20ac} \u{4e2d}").as_ref(), b"caf\xe9 \x80 ?");
    }

    #[test]
    fn utf8mb3_refuses_four_byte_characters() {
        let mb3 = LexOptions { charset: Charset::Utf8mb3, backslash_escapes: true };
        let s = split("SELECT '😀'".as_bytes(), mb3).remove(0).unwrap();
        assert_eq!(s.text, "SELECT X'F09F9880'");
        assert_eq!(s.warnings.len(), 1);
    }

    #[test]
    fn no_backslash_escapes_keeps_backslashes() {
        let plain = LexOptions { charset: Charset::Utf8mb4, backslash_escapes: false };
        assert_eq!(texts(b"SELECT 'a\\n', 'it''s'", plain), ["SELECT 'a\\\\n', 'it''s'"]);
        assert_eq!(texts(b"SELECT _binary'\\'", plain), ["SELECT X'5C'"]);
    }

    #[test]
    fn executable_comments_run_by_version() {
        assert_eq!(utf8(b"START TRANSACTION /*!40100 WITH CONSISTENT SNAPSHOT */"), ["START TRANSACTION   WITH CONSISTENT SNAPSHOT"]);
        assert_eq!(utf8(b"/*M!999999 x */ /*!40101 SET @A=1 */"), ["SET @A=1"]);
        assert_eq!(utf8(b"/*!90000 SELECT 2 */ SELECT 1"), ["SELECT 1"]);
        assert_eq!(utf8(b"/*! SELECT 3 */"), ["SELECT 3"]);
        assert_eq!(utf8(b"/*!40000 ALTER TABLE t DISABLE KEYS */;"), ["ALTER TABLE t DISABLE KEYS"]);
        assert_eq!(utf8(b"SELECT /* a ; b */ 1 /*+ hint */"), ["SELECT   1"]);
        assert_eq!(utf8(b"SELECT 1 /* open"), ["error 1064"]);
    }

    #[test]
    fn a_digit_after_a_placeholder_stays_apart() {
        // MySQL refuses `?1`; it must not become placeholder 01.
        let s = first(b"SELECT ?1, ?");
        assert_eq!(s.text, "SELECT ?0 1, ?1");
    }

    #[test]
    fn an_open_executable_comment_is_a_syntax_error() {
        assert_eq!(utf8(b"SELECT 1 /*! + 2"), ["error 1064"]);
        assert_eq!(utf8(b"/*!40101 SET @a=1; SET @b=2 */"), ["SET @a=1", "SET @b=2"]);
    }

    #[test]
    fn chains_the_parser_builds_are_counted() {
        let s = first(b"SELECT 1::INT::INT, x AT TIME ZONE 'a' FROM t UNION SELECT 2 DIV 3");
        assert_eq!((s.operators, s.div_operators), (4 + 1 + 1 + 1, 1));
    }

    #[test]
    fn invalid_bytes_in_a_national_literal_or_a_variable_name() {
        assert_eq!(utf8(b"SELECT N'a\xffb'"), ["SELECT X'61FF62'"]);
        assert_eq!(utf8(b"SET @'a\xff' = 1"), ["error 1300"]);
    }

    #[test]
    fn placeholders_are_numbered_and_operators_counted() {
        let s = first(b"SELECT ? + ?, '?' FROM t WHERE a = ? OR b IN (?)");
        assert_eq!(s.text, "SELECT ?0 + ?1, '?' FROM t WHERE a = ?2 OR b IN (?3)");
        assert_eq!(s.placeholders, 4);
        assert_eq!(s.operators, 4);
    }

    #[test]
    fn invalid_bytes_outside_literals_fail_with_1300() {
        assert_eq!(utf8(b"SELECT 1; SELECT \xff; SELECT 3"), ["SELECT 1", "error 1300"]);
        let latin1 = LexOptions { charset: Charset::Latin1, backslash_escapes: true };
        assert_eq!(texts(b"SELECT \xe9t\xe9 FROM `\xe9`", latin1), ["SELECT \u{e9}t\u{e9} FROM `\u{e9}`"]);
    }

    #[test]
    fn unescape_follows_mysql() {
        assert_eq!(unescape(b"a\\0\\b\\n\\r\\t\\Z\\\\\\%\\_\\q''", b'\'', true), b"a\0\x08\n\r\t\x1a\\\\%\\_q'");
        assert_eq!(unescape(b"a\\n", b'\'', false), b"a\\n");
    }
}
