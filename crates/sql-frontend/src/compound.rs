//! MySQL's compound statements, the bodies of triggers and stored routines: `BEGIN ... END`
//! blocks, `DECLARE` (variables, conditions, cursors, handlers), `SET`, `IF`, `CASE`,
//! `LOOP` / `WHILE` / `REPEAT` with `LEAVE` and `ITERATE`, `RETURN`, `OPEN` / `FETCH` /
//! `CLOSE`, `SIGNAL` / `RESIGNAL`, and any other statement as SQL.
//!
//! [`parse_body`] reads a body's text into a tree of [`Stmt`]. Control words are read from
//! sqlparser's tokens; every expression is parsed as `SELECT <expr>` and every other
//! statement by [`crate::parse::parse`], so the depth limits and rewrites of ordinary
//! statements hold inside bodies too. Statements the parser does not read (those the
//! session recognises by their words) are kept as text ([`Sql::parsed`] is `None`).
//!
//! Names are not resolved here: whether `x` is a local variable, a column or `NEW.x` a
//! trigger's row is the compiler's (`program`).

use sqlparser::ast;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer};

use crate::dialect::QuillDialect;
use crate::text::{self, LexOptions};
use quill_sql_types::error::{Result, SqlError};

/// One statement of a body.
#[derive(Debug, Clone)]
pub enum Stmt {
    Block {
        label: Option<String>,
        body: Vec<Stmt>,
    },
    /// `DECLARE a, b type [DEFAULT expr]`.
    Declare {
        names: Vec<String>,
        ty: ast::DataType,
        default: Option<ast::Expr>,
    },
    /// `DECLARE name CONDITION FOR value`.
    Condition {
        name: String,
        value: ConditionValue,
    },
    /// `DECLARE {CONTINUE | EXIT} HANDLER FOR conditions body`.
    Handler {
        exit: bool,
        conditions: Vec<HandlerCondition>,
        body: Box<Stmt>,
    },
    /// `DECLARE name CURSOR FOR query`.
    Cursor {
        name: String,
        query: Sql,
    },
    Set(Vec<SetItem>),
    If {
        branches: Vec<(ast::Expr, Vec<Stmt>)>,
        otherwise: Option<Vec<Stmt>>,
    },
    /// `CASE [operand] WHEN ... END CASE`; a search CASE has no operand.
    Case {
        operand: Option<ast::Expr>,
        whens: Vec<(ast::Expr, Vec<Stmt>)>,
        otherwise: Option<Vec<Stmt>>,
    },
    Loop {
        label: Option<String>,
        body: Vec<Stmt>,
    },
    While {
        label: Option<String>,
        condition: ast::Expr,
        body: Vec<Stmt>,
    },
    Repeat {
        label: Option<String>,
        body: Vec<Stmt>,
        until: ast::Expr,
    },
    Leave(String),
    Iterate(String),
    Return(ast::Expr),
    Open(String),
    Close(String),
    Fetch {
        cursor: String,
        into: Vec<String>,
    },
    /// `SIGNAL` (`resignal` false) or `RESIGNAL`, with the condition (none: RESIGNAL's own)
    /// and the `SET` items (`MESSAGE_TEXT`, `MYSQL_ERRNO`, ...), names upper-cased.
    Signal {
        resignal: bool,
        condition: Option<HandlerCondition>,
        items: Vec<(String, ast::Expr)>,
    },
    Sql(Sql),
}

/// A condition's value: an error number or a SQLSTATE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConditionValue {
    Code(u16),
    SqlState(String),
}

/// What a handler (or a SIGNAL) names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HandlerCondition {
    Value(ConditionValue),
    /// A condition declared by name.
    Name(String),
    SqlWarning,
    NotFound,
    SqlException,
}

/// One `target = value` of a SET in a body.
#[derive(Debug, Clone)]
pub struct SetItem {
    /// `x` or `NEW.x` as name parts; `None` for any other target (`@v`, `@@v`, `SESSION v`),
    /// which runs as a SET statement of its own.
    pub name: Option<Vec<String>>,
    /// The target as written.
    pub target_text: String,
    pub value: ast::Expr,
    /// The value as written.
    pub value_text: String,
}

/// A statement of a body that is neither control flow nor a declaration.
#[derive(Debug, Clone)]
pub struct Sql {
    /// Its text, without an `INTO` list (see `into`).
    pub text: String,
    /// The statement parsed, or `None` for one only the session's recognisers read.
    pub parsed: Option<ast::Statement>,
    /// `SELECT ... INTO a, @b`: where the one row goes.
    pub into: Vec<IntoTarget>,
}

/// A target of `SELECT ... INTO` or `FETCH ... INTO`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IntoTarget {
    /// `@name`.
    User(String),
    /// A local variable or parameter.
    Name(String),
}

/// Words that end a list of statements (the block or branch around it continues).
const LIST_ENDS: &[&str] = &["END", "ELSE", "ELSEIF", "WHEN", "UNTIL"];

/// The words of a SET that make it a statement of its own rather than assignments.
const SET_STATEMENT_WORDS: &[&str] = &["TRANSACTION", "NAMES", "CHARACTER", "CHARSET", "PASSWORD", "ROLE", "DEFAULT", "RESOURCE"];

/// Parses a body (one statement: a block, or any statement of the grammar).
///
/// # Errors
/// 1064 for a syntax error; the errors of [`crate::parse::parse`] for an expression or
/// statement inside.
pub fn parse_body(sql: &str) -> Result<Stmt> {
    let mut t = Tokens::new(sql)?;
    let s = t.statement()?;
    t.eat(&Token::SemiColon);
    if !t.at_end() {
        return Err(t.syntax());
    }
    Ok(s)
}

/// Parses one expression as the expression of `SELECT <text>`.
///
/// # Errors
/// As [`crate::parse::parse`]; 1064 for an empty text or more than one expression.
pub fn parse_expr(text: &str) -> Result<ast::Expr> {
    let select = format!("SELECT {text}");
    let statement = text::single(select.as_bytes(), LexOptions::default())?;
    let mut parsed = crate::parse::parse(&statement.text, statement.operators, statement.div_operators)?;
    let syntax = || SqlError::parse(text);
    let Some(ast::Statement::Query(q)) = parsed.pop() else { return Err(syntax()) };
    let ast::SetExpr::Select(s) = *q.body else { return Err(syntax()) };
    let mut s = *s;
    if s.projection.len() != 1 || !s.from.is_empty() || s.selection.is_some() {
        return Err(syntax());
    }
    match s.projection.pop() {
        Some(ast::SelectItem::UnnamedExpr(e)) => Ok(e),
        _ => Err(syntax()),
    }
}

/// Parses a statement of a body (with its `INTO` list cut out).
///
/// # Errors
/// As [`crate::parse::parse`], for a statement whose first word the session does not
/// recognise itself.
pub fn parse_sql(text: &str) -> Result<Sql> {
    let (text, into) = cut_into(text);
    let statement = text::single(text.as_bytes(), LexOptions::default())?;
    // Dynamic SQL is the session's, by its words (sqlparser reads EXECUTE otherwise).
    let first = crate::words::Words::new(&text).next().unwrap_or_default().to_ascii_uppercase();
    if matches!(first.as_str(), "PREPARE" | "EXECUTE" | "DEALLOCATE") {
        return Ok(Sql { text, parsed: None, into });
    }
    let rewritten = crate::parse::rewrite_set_assignment(&statement.text);
    let parsed = match crate::parse::parse(&rewritten, statement.operators, statement.div_operators) {
        Ok(mut s) if s.len() == 1 => s.pop(),
        Ok(_) => return Err(SqlError::parse(&text)),
        Err(e) => {
            if !recognised_by_words(&text) {
                return Err(e);
            }
            None
        }
    };
    Ok(Sql { text, parsed, into })
}

/// Statements the session reads by their words, which a body keeps as text.
fn recognised_by_words(text: &str) -> bool {
    let first = crate::words::Words::new(text).next().unwrap_or_default().to_ascii_uppercase();
    matches!(
        first.as_str(),
        "SHOW"
            | "GRANT"
            | "REVOKE"
            | "CREATE"
            | "ALTER"
            | "DROP"
            | "FLUSH"
            | "KILL"
            | "LOCK"
            | "UNLOCK"
            | "START"
            | "COMMIT"
            | "ROLLBACK"
            | "SET"
            | "DO"
            | "PREPARE"
            | "EXECUTE"
            | "DEALLOCATE"
            | "LOAD"
            | "CHECKSUM"
            | "ANALYZE"
            | "OPTIMIZE"
            | "CHECK"
            | "REPAIR"
            | "PURGE"
            | "CHANGE"
            | "STOP"
            | "RESET"
            | "DESCRIBE"
            | "DESC"
            | "EXPLAIN"
            | "CALL"
    )
}

/// `SELECT ... INTO a, @b ...` (at the query's outer level): the text without the list, and
/// the targets. Any other text unchanged, with no targets.
fn cut_into(text: &str) -> (String, Vec<IntoTarget>) {
    let first = crate::words::Words::new(text).next().unwrap_or_default().to_ascii_uppercase();
    if !(first == "SELECT" || first == "WITH" || first.starts_with('(')) {
        return (text.to_owned(), Vec::new());
    }
    let Ok(t) = Tokens::new(text) else { return (text.to_owned(), Vec::new()) };
    let mut depth = 0usize;
    for i in 0..t.tokens.len() {
        match &t.tokens[i].0 {
            Token::LParen => depth += 1,
            Token::RParen => depth = depth.saturating_sub(1),
            Token::Word(w) if depth == 0 && w.quote_style.is_none() && w.value.eq_ignore_ascii_case("INTO") => {
                let mut targets = Vec::new();
                let mut at = i + 1;
                loop {
                    let Some((Token::Word(v), _)) = t.tokens.get(at) else { return (text.to_owned(), Vec::new()) };
                    if v.quote_style.is_none() && (v.value.eq_ignore_ascii_case("OUTFILE") || v.value.eq_ignore_ascii_case("DUMPFILE")) {
                        return (text.to_owned(), Vec::new());
                    }
                    match v.value.strip_prefix('@') {
                        Some(name) => targets.push(IntoTarget::User(name.trim_matches(|c| c == '`' || c == '\'' || c == '"').to_ascii_lowercase())),
                        None => targets.push(IntoTarget::Name(v.value.clone())),
                    }
                    at += 1;
                    if matches!(t.tokens.get(at), Some((Token::Comma, _))) {
                        at += 1;
                        continue;
                    }
                    let from = t.tokens[i].1;
                    let to = t.offset(at);
                    return (format!("{} {}", text[..from].trim_end(), &text[to..]).trim().to_owned(), targets);
                }
            }
            _ => {}
        }
    }
    (text.to_owned(), Vec::new())
}

/// A body's tokens (whitespace dropped), each with its byte offset, and a cursor.
pub(crate) struct Tokens<'a> {
    pub(crate) sql: &'a str,
    pub(crate) tokens: Vec<(Token, usize)>,
    pub(crate) at: usize,
    /// Compound statements open around the one being read ([`BODY_NESTING_MAX`]).
    depth: usize,
}

/// How deeply compound statements (blocks, loops, IF, CASE, handlers) may nest in a body:
/// the parser and the compiler recurse once per level, so the bound keeps their stack
/// small; deeper is 1436, as for any statement nested too deep.
pub const BODY_NESTING_MAX: usize = 64;
/// Stack left below which reading (or compiling) one more level first grows the stack.
pub const STACK_RED_ZONE_BYTES: usize = 256 << 10;
/// How much stack each growth adds.
pub const STACK_GROWTH_BYTES: usize = 4 << 20;

impl<'a> Tokens<'a> {
    pub(crate) fn new(sql: &'a str) -> Result<Tokens<'a>> {
        let dialect = QuillDialect::default();
        let spanned = Tokenizer::new(&dialect, sql).tokenize_with_location().map_err(|e| SqlError::parse(&e.to_string()))?;
        let offsets = offsets(sql, &spanned);
        let tokens = spanned.into_iter().zip(offsets).filter(|(t, _)| !matches!(t.token, Token::Whitespace(_))).map(|(t, o)| (t.token, o)).collect();
        Ok(Tokens { sql, tokens, at: 0, depth: 0 })
    }

    /// The byte offset of token `i` (the text's end past the last).
    pub(crate) fn offset(&self, i: usize) -> usize {
        self.tokens.get(i).map_or(self.sql.len(), |t| t.1)
    }

    pub(crate) fn at_end(&self) -> bool {
        self.at >= self.tokens.len()
    }

    pub(crate) fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at).map(|t| &t.0)
    }

    /// The unquoted word at `i` ahead, upper-cased.
    pub(crate) fn word_at(&self, ahead: usize) -> Option<String> {
        match self.tokens.get(self.at + ahead) {
            Some((Token::Word(w), _)) if w.quote_style.is_none() => Some(w.value.to_ascii_uppercase()),
            _ => None,
        }
    }

    pub(crate) fn is_word(&self, w: &str) -> bool {
        self.word_at(0).is_some_and(|x| x == w)
    }

    pub(crate) fn eat_word(&mut self, w: &str) -> bool {
        let yes = self.is_word(w);
        if yes {
            self.at += 1;
        }
        yes
    }

    pub(crate) fn eat(&mut self, t: &Token) -> bool {
        let yes = self.peek() == Some(t);
        if yes {
            self.at += 1;
        }
        yes
    }

    pub(crate) fn expect_word(&mut self, w: &str) -> Result<()> {
        if self.eat_word(w) { Ok(()) } else { Err(self.syntax()) }
    }

    /// 1064 quoting the text from the current token.
    pub(crate) fn syntax(&self) -> SqlError {
        let from = self.offset(self.at);
        SqlError::parse(self.sql[from..].chars().take(80).collect::<String>().trim())
    }

    /// A name (quoted or not).
    pub(crate) fn ident(&mut self) -> Result<String> {
        match self.tokens.get(self.at) {
            Some((Token::Word(w), _)) => {
                self.at += 1;
                Ok(w.value.clone())
            }
            _ => Err(self.syntax()),
        }
    }

    /// `name` or `db.name`.
    pub(crate) fn object_name(&mut self) -> Result<(Option<String>, String)> {
        let first = self.ident()?;
        if self.eat(&Token::Period) {
            return Ok((Some(first), self.ident()?));
        }
        Ok((None, first))
    }

    /// Moves to the first token at or after byte `offset`.
    pub(crate) fn seek(&mut self, offset: usize) {
        while self.tokens.get(self.at).is_some_and(|t| t.1 < offset) {
            self.at += 1;
        }
    }

    /// The text from the current token up to (not including) the first of `stops` at
    /// nesting level 0 (parentheses, and CASE ... END of expressions), a `;`, or the end;
    /// `comma` stops at a `,` too. The cursor is left on the stop.
    pub(crate) fn text_until(&mut self, stops: &[&str], comma: bool) -> &'a str {
        let from = self.offset(self.at);
        let mut parens = 0usize;
        let mut cases = 0usize;
        while let Some(t) = self.peek() {
            match t {
                Token::LParen => parens += 1,
                Token::RParen if parens > 0 => parens -= 1,
                Token::RParen => break,
                Token::SemiColon => break,
                Token::Comma if comma && parens == 0 => break,
                Token::Word(w) if w.quote_style.is_none() && parens == 0 => {
                    let up = w.value.to_ascii_uppercase();
                    if up == "CASE" {
                        cases += 1;
                    } else if up == "END" && cases > 0 {
                        cases -= 1;
                    } else if cases == 0 && stops.contains(&up.as_str()) {
                        break;
                    }
                }
                _ => {}
            }
            self.at += 1;
        }
        self.sql[from..self.offset(self.at)].trim()
    }

    fn expr_until(&mut self, stops: &[&str]) -> Result<ast::Expr> {
        let text = self.text_until(stops, false);
        if text.is_empty() {
            return Err(self.syntax());
        }
        parse_expr(text)
    }

    /// A data type (with any CHARACTER SET / COLLATE after it, which a variable's value
    /// does not keep apart from its type's).
    pub(crate) fn data_type(&mut self) -> Result<ast::DataType> {
        let from = self.offset(self.at);
        // The type ends before a `,` or `)` outside its own parentheses, or a `;`: parse that
        // much only (re-reading the whole rest for each declaration would be quadratic).
        let mut depth = 0usize;
        let mut end = self.at;
        while let Some((t, _)) = self.tokens.get(end) {
            match t {
                Token::LParen => depth += 1,
                Token::RParen if depth == 0 => break,
                Token::RParen => depth -= 1,
                Token::Comma if depth == 0 => break,
                Token::SemiColon => break,
                _ => {}
            }
            end += 1;
        }
        let rest = &self.sql[from..self.offset(end)];
        let dialect = QuillDialect::default();
        let mut p = Parser::new(&dialect).try_with_sql(rest).map_err(|e| SqlError::parse(&e.to_string()))?;
        let ty = p.parse_data_type().map_err(|_| self.syntax())?;
        let next = p.peek_token();
        let end = if next.token == Token::EOF { from + rest.len() } else { from + crate::parse::token_offset(rest, &next) };
        self.seek(end);
        loop {
            if self.eat_word("CHARSET") || (self.is_word("CHARACTER") && self.word_at(1).as_deref() == Some("SET")) {
                if self.eat_word("CHARACTER") {
                    self.at += 1;
                }
                self.ident()?;
            } else if self.eat_word("COLLATE") {
                self.at += usize::from(!self.at_end());
            } else {
                return Ok(ty);
            }
        }
    }

    /// `label:` before a block or loop.
    fn label(&mut self) -> Option<String> {
        match (self.tokens.get(self.at), self.tokens.get(self.at + 1)) {
            (Some((Token::Word(w), _)), Some((Token::Colon, _))) => {
                self.at += 2;
                Some(w.value.clone())
            }
            _ => None,
        }
    }

    /// `END <kind> [label]` (the END already read for a block: `kind` empty).
    fn end_of(&mut self, kind: &str, label: Option<&String>) -> Result<()> {
        self.expect_word("END")?;
        if !kind.is_empty() {
            self.expect_word(kind)?;
        }
        if let Some((Token::Word(w), _)) = self.tokens.get(self.at)
            && !LIST_ENDS.contains(&w.value.to_ascii_uppercase().as_str())
            && !matches!(self.tokens.get(self.at + 1), Some((Token::Colon, _)))
        {
            if !label.is_some_and(|l| l.eq_ignore_ascii_case(&w.value)) {
                return Err(SqlError::new(quill_sql_types::error::codes::ER_SP_LABEL_MISMATCH, format!("End-label {} without match", w.value)));
            }
            self.at += 1;
        }
        Ok(())
    }

    /// Statements up to one of `ends` (not consumed), each closed by `;`.
    fn statements(&mut self, ends: &[&str]) -> Result<Vec<Stmt>> {
        let mut out = Vec::new();
        loop {
            if self.at_end() {
                return Err(self.syntax());
            }
            if self.word_at(0).is_some_and(|w| ends.contains(&w.as_str())) && !matches!(self.tokens.get(self.at + 1), Some((Token::Colon, _))) {
                return Ok(out);
            }
            out.push(self.statement()?);
            if !self.eat(&Token::SemiColon) {
                return Err(self.syntax());
            }
        }
    }

    fn statement(&mut self) -> Result<Stmt> {
        self.depth += 1;
        let s = if self.depth > BODY_NESTING_MAX {
            Err(SqlError::new(quill_sql_types::error::codes::ER_STACK_OVERRUN_NEED_MORE, format!("Compound statements nest more than {BODY_NESTING_MAX} deep")))
        } else {
            // Each level takes tens of kilobytes of stack in a debug build: grow it as needed.
            stacker::maybe_grow(STACK_RED_ZONE_BYTES, STACK_GROWTH_BYTES, || self.statement_inner())
        };
        self.depth -= 1;
        s
    }

    fn statement_inner(&mut self) -> Result<Stmt> {
        let label = self.label();
        let Some(word) = self.word_at(0) else {
            if label.is_some() {
                return Err(self.syntax());
            }
            return self.sql_statement();
        };
        match word.as_str() {
            "BEGIN" => {
                self.at += 1;
                if self.is_word("NOT") && self.word_at(1).as_deref() == Some("ATOMIC") {
                    self.at += 2;
                }
                let body = self.statements(&["END"])?;
                self.end_of("", label.as_ref())?;
                Ok(Stmt::Block { label, body })
            }
            "LOOP" => {
                self.at += 1;
                let body = self.statements(&["END"])?;
                self.end_of("LOOP", label.as_ref())?;
                Ok(Stmt::Loop { label, body })
            }
            "WHILE" => {
                self.at += 1;
                let condition = self.expr_until(&["DO"])?;
                self.expect_word("DO")?;
                let body = self.statements(&["END"])?;
                self.end_of("WHILE", label.as_ref())?;
                Ok(Stmt::While { label, condition, body })
            }
            "REPEAT" => {
                self.at += 1;
                let body = self.statements(&["UNTIL"])?;
                self.expect_word("UNTIL")?;
                let until = self.expr_until(&["END"])?;
                self.end_of("REPEAT", label.as_ref())?;
                Ok(Stmt::Repeat { label, body, until })
            }
            _ if label.is_some() => Err(self.syntax()),
            "IF" => {
                self.at += 1;
                let mut branches = Vec::new();
                let mut otherwise = None;
                loop {
                    let condition = self.expr_until(&["THEN"])?;
                    self.expect_word("THEN")?;
                    branches.push((condition, self.statements(&["ELSEIF", "ELSE", "END"])?));
                    if self.eat_word("ELSEIF") {
                        continue;
                    }
                    if self.eat_word("ELSE") {
                        otherwise = Some(self.statements(&["END"])?);
                    }
                    break;
                }
                self.expect_word("END")?;
                self.expect_word("IF")?;
                Ok(Stmt::If { branches, otherwise })
            }
            "CASE" => {
                self.at += 1;
                let operand = if self.is_word("WHEN") { None } else { Some(self.expr_until(&["WHEN"])?) };
                let mut whens = Vec::new();
                while self.eat_word("WHEN") {
                    let condition = self.expr_until(&["THEN"])?;
                    self.expect_word("THEN")?;
                    whens.push((condition, self.statements(&["WHEN", "ELSE", "END"])?));
                }
                if whens.is_empty() {
                    return Err(self.syntax());
                }
                let otherwise = if self.eat_word("ELSE") { Some(self.statements(&["END"])?) } else { None };
                self.expect_word("END")?;
                self.expect_word("CASE")?;
                Ok(Stmt::Case { operand, whens, otherwise })
            }
            "DECLARE" => {
                self.at += 1;
                self.declare()
            }
            "SET" if !self.set_is_a_statement() => {
                self.at += 1;
                self.set()
            }
            "LEAVE" | "ITERATE" => {
                self.at += 1;
                let label = self.ident()?;
                Ok(if word == "LEAVE" { Stmt::Leave(label) } else { Stmt::Iterate(label) })
            }
            "RETURN" => {
                self.at += 1;
                Ok(Stmt::Return(self.expr_until(&[])?))
            }
            "OPEN" | "CLOSE" => {
                self.at += 1;
                let name = self.ident()?;
                Ok(if word == "OPEN" { Stmt::Open(name) } else { Stmt::Close(name) })
            }
            "FETCH" => {
                self.at += 1;
                if self.eat_word("NEXT") {
                    self.expect_word("FROM")?;
                } else {
                    self.eat_word("FROM");
                }
                let cursor = self.ident()?;
                self.expect_word("INTO")?;
                let mut into = vec![self.ident()?];
                while self.eat(&Token::Comma) {
                    into.push(self.ident()?);
                }
                Ok(Stmt::Fetch { cursor, into })
            }
            "SIGNAL" | "RESIGNAL" => {
                self.at += 1;
                self.signal(word == "RESIGNAL")
            }
            _ => self.sql_statement(),
        }
    }

    /// `SET TRANSACTION ...`, `SET NAMES ...` and the like: a statement of its own, not
    /// assignments.
    fn set_is_a_statement(&self) -> bool {
        let second = self.word_at(1).unwrap_or_default();
        // `SET names = ...` assigns a variable called names.
        if matches!(self.tokens.get(self.at + 2), Some((Token::Eq | Token::Assignment, _))) {
            return false;
        }
        SET_STATEMENT_WORDS.contains(&second.as_str())
            || (matches!(second.as_str(), "GLOBAL" | "SESSION" | "LOCAL") && self.word_at(2).as_deref() == Some("TRANSACTION"))
    }

    fn sql_statement(&mut self) -> Result<Stmt> {
        let text = self.text_until(&[], false);
        // A `)` the statement does not open ends nothing: it is the statement's error.
        if self.peek() == Some(&Token::RParen) {
            return Err(self.syntax());
        }
        if text.is_empty() {
            return Err(self.syntax());
        }
        Ok(Stmt::Sql(parse_sql(text)?))
    }

    fn declare(&mut self) -> Result<Stmt> {
        if self.word_at(0).is_some_and(|w| matches!(w.as_str(), "CONTINUE" | "EXIT" | "UNDO")) && self.word_at(1).as_deref() == Some("HANDLER") {
            let action = self.word_at(0).unwrap_or_default();
            if action == "UNDO" {
                return Err(SqlError::unsupported("UNDO handlers"));
            }
            self.at += 2;
            self.expect_word("FOR")?;
            let mut conditions = vec![self.handler_condition()?];
            while self.eat(&Token::Comma) {
                conditions.push(self.handler_condition()?);
            }
            let body = Box::new(self.statement()?);
            return Ok(Stmt::Handler { exit: action == "EXIT", conditions, body });
        }
        let name = self.ident()?;
        if self.eat_word("CONDITION") {
            self.expect_word("FOR")?;
            let value = match self.handler_condition()? {
                HandlerCondition::Value(v) => v,
                _ => return Err(self.syntax()),
            };
            return Ok(Stmt::Condition { name, value });
        }
        if self.eat_word("CURSOR") {
            self.expect_word("FOR")?;
            let text = self.text_until(&[], false);
            return Ok(Stmt::Cursor { name, query: parse_sql(text)? });
        }
        let mut names = vec![name];
        while self.eat(&Token::Comma) {
            names.push(self.ident()?);
        }
        let ty = self.data_type()?;
        let default = if self.eat_word("DEFAULT") { Some(self.expr_until(&[])?) } else { None };
        Ok(Stmt::Declare { names, ty, default })
    }

    fn handler_condition(&mut self) -> Result<HandlerCondition> {
        if self.eat_word("SQLSTATE") {
            self.eat_word("VALUE");
            return match self.tokens.get(self.at) {
                Some((Token::SingleQuotedString(s) | Token::DoubleQuotedString(s), _)) => {
                    let s = s.clone();
                    self.at += 1;
                    if s.len() != 5 || !s.bytes().all(|b| b.is_ascii_alphanumeric()) || s.starts_with("00") {
                        return Err(SqlError::new(quill_sql_types::error::codes::ER_SP_BAD_SQLSTATE, format!("Bad SQLSTATE: '{s}'")));
                    }
                    Ok(HandlerCondition::Value(ConditionValue::SqlState(s)))
                }
                _ => Err(self.syntax()),
            };
        }
        if self.eat_word("SQLWARNING") {
            return Ok(HandlerCondition::SqlWarning);
        }
        if self.eat_word("SQLEXCEPTION") {
            return Ok(HandlerCondition::SqlException);
        }
        if self.is_word("NOT") && self.word_at(1).as_deref() == Some("FOUND") {
            self.at += 2;
            return Ok(HandlerCondition::NotFound);
        }
        if let Some((Token::Number(n, _), _)) = self.tokens.get(self.at) {
            let code = n.parse::<u16>().map_err(|_| self.syntax())?;
            self.at += 1;
            return Ok(HandlerCondition::Value(ConditionValue::Code(code)));
        }
        Ok(HandlerCondition::Name(self.ident()?))
    }

    fn set(&mut self) -> Result<Stmt> {
        let mut items = Vec::new();
        loop {
            let from = self.at;
            while !matches!(self.peek(), None | Some(Token::Eq | Token::Assignment | Token::SemiColon)) {
                self.at += 1;
            }
            if !matches!(self.peek(), Some(Token::Eq | Token::Assignment)) {
                return Err(self.syntax());
            }
            let target_text = self.sql[self.offset(from)..self.offset(self.at)].trim().to_owned();
            let name = match &self.tokens[from..self.at] {
                [(Token::Word(a), _)] if !a.value.starts_with('@') && !is_scope_word(a) => Some(vec![a.value.clone()]),
                [(Token::Word(a), _), (Token::Period, _), (Token::Word(b), _)] if !a.value.starts_with('@') && !is_scope_word(a) => {
                    Some(vec![a.value.clone(), b.value.clone()])
                }
                _ => None,
            };
            self.at += 1;
            let value_text = self.text_until(&[], true).to_owned();
            if value_text.is_empty() {
                return Err(self.syntax());
            }
            let value = parse_expr(&value_text)?;
            items.push(SetItem { name, target_text, value, value_text });
            if !self.eat(&Token::Comma) {
                return Ok(Stmt::Set(items));
            }
        }
    }

    fn signal(&mut self, resignal: bool) -> Result<Stmt> {
        let condition = if self.at_end() || self.peek() == Some(&Token::SemiColon) || self.is_word("SET") {
            if !resignal {
                return Err(self.syntax());
            }
            None
        } else {
            let c = self.handler_condition()?;
            if !matches!(c, HandlerCondition::Value(ConditionValue::SqlState(_)) | HandlerCondition::Name(_)) {
                return Err(self.syntax());
            }
            Some(c)
        };
        let mut items = Vec::new();
        if self.eat_word("SET") {
            loop {
                let name = self.ident()?.to_ascii_uppercase();
                if !self.eat(&Token::Eq) {
                    return Err(self.syntax());
                }
                let text = self.text_until(&[], true);
                items.push((name, parse_expr(text)?));
                if !self.eat(&Token::Comma) {
                    break;
                }
            }
        }
        Ok(Stmt::Signal { resignal, condition, items })
    }
}

/// `GLOBAL`, `SESSION`... before a system variable's name in SET.
fn is_scope_word(w: &sqlparser::tokenizer::Word) -> bool {
    w.quote_style.is_none() && ["GLOBAL", "SESSION", "LOCAL", "PERSIST", "PERSIST_ONLY"].iter().any(|s| w.value.eq_ignore_ascii_case(s))
}

/// The byte offset of each token (the tokenizer gives lines and columns, columns counted in
/// characters), in one pass over the text.
fn offsets(sql: &str, tokens: &[TokenWithSpan]) -> Vec<usize> {
    let mut out = Vec::with_capacity(tokens.len());
    let mut chars = sql.char_indices().peekable();
    let (mut line, mut column) = (1u64, 1u64);
    for t in tokens {
        let at = t.span.start;
        while (line, column) < (at.line, at.column) {
            match chars.next() {
                Some((_, '\n')) => {
                    line += 1;
                    column = 1;
                }
                Some(_) => column += 1,
                None => break,
            }
        }
        out.push(chars.peek().map_or(sql.len(), |c| c.0));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_procedure_body_reads_into_a_tree() {
        let body = "BEGIN
            DECLARE i, j INT DEFAULT 0;
            DECLARE s VARCHAR(10) CHARACTER SET utf8mb4 DEFAULT 'x';
            DECLARE done INT DEFAULT FALSE;
            DECLARE c CURSOR FOR SELECT a FROM t WHERE a > i;
            DECLARE CONTINUE HANDLER FOR NOT FOUND SET done = TRUE;
            DECLARE EXIT HANDLER FOR SQLSTATE '23000', 1062 BEGIN SET j = -1; END;
            w: WHILE i < 10 DO
                SET i = i + 1, @total = @total + i;
                IF i = 3 THEN ITERATE w; ELSEIF i > 8 THEN LEAVE w; ELSE SET j = j + CASE WHEN i > 1 THEN 1 ELSE 2 END; END IF;
            END WHILE w;
            SELECT COUNT(*), MAX(a) INTO i, @m FROM t;
            OPEN c; FETCH c INTO j; CLOSE c;
            CASE j WHEN 1 THEN SELECT 1; ELSE BEGIN END; END CASE;
            REPEAT SET i = i - 1; UNTIL i <= 0 END REPEAT;
            SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'no', MYSQL_ERRNO = 1644;
        END";
        let Stmt::Block { body, .. } = parse_body(body).unwrap() else { panic!() };
        assert_eq!(body.len(), 14);
        assert!(matches!(&body[0], Stmt::Declare { names, default: Some(_), .. } if names.len() == 2));
        assert!(matches!(&body[3], Stmt::Cursor { name, .. } if name == "c"));
        assert!(matches!(&body[5], Stmt::Handler { exit: true, conditions, .. } if conditions.len() == 2));
        let Stmt::While { label: Some(l), body: w, .. } = &body[6] else { panic!("{:?}", body[6]) };
        assert_eq!(l, "w");
        assert!(matches!(&w[0], Stmt::Set(items) if items.len() == 2 && items[1].name.is_none()));
        assert!(matches!(&w[1], Stmt::If { branches, otherwise: Some(_) } if branches.len() == 2));
        let Stmt::Sql(sql) = &body[7] else { panic!() };
        assert_eq!(sql.into, vec![IntoTarget::Name("i".into()), IntoTarget::User("m".into())]);
        assert_eq!(sql.text, "SELECT COUNT(*), MAX(a) FROM t");
        assert!(matches!(&body[13], Stmt::Signal { resignal: false, items, .. } if items.len() == 2));
    }

    #[test]
    fn mistakes_are_syntax_errors() {
        for bad in ["BEGIN SELECT 1 END", "BEGIN IF 1 THEN SELECT 1; END", "BEGIN x: SELECT 1; END", "WHILE 1 DO SELECT 1; END LOOP", "BEGIN SELECT (1; END"] {
            assert!(parse_body(bad).is_err(), "{bad}");
        }
        let e = parse_body("a: BEGIN END b").unwrap_err();
        assert_eq!(e.code, 1310, "{e}");
    }

    #[test]
    fn nesting_is_bounded() {
        let deep = format!("{}SELECT 1;{}", "BEGIN ".repeat(BODY_NESTING_MAX + 5), " END;".repeat(BODY_NESTING_MAX + 5));
        assert_eq!(parse_body(deep.trim_end_matches(';')).unwrap_err().code, 1436);
        let fine = format!("{}SELECT 1;{}", "BEGIN ".repeat(10), " END;".repeat(10));
        assert!(parse_body(fine.trim_end_matches(';')).is_ok());
    }

    #[test]
    fn a_trigger_body_may_be_one_statement() {
        assert!(
            matches!(parse_body("SET NEW.a = NEW.a * 2, NEW.b = OLD.b").unwrap(), Stmt::Set(items) if items[0].name == Some(vec!["NEW".into(), "a".into()]))
        );
        assert!(matches!(parse_body("INSERT INTO log VALUES (NEW.id, 'x;y')").unwrap(), Stmt::Sql(s) if s.parsed.is_some()));
    }
}
