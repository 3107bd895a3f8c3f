//! The rows of a long `INSERT ... VALUES (...), (...), ...` read without the general parser.
//!
//! A bulk load (sysbench's prepare, a dump, an ORM's batch) sends thousands of rows of plain
//! literals per statement, and the general parser spends most of the statement's time on them:
//! a token per literal, a speculative parse of each as a type name, an expression node. So
//! [`split`] reads such a statement's rows itself: when every row is a list of plain
//! literals ([`literal`]: unsigned or negated decimal numbers, single-quoted strings without
//! escapes, NULL), the statement is parsed with its first row alone (the *skeleton*: its
//! header, first row and tail, such as `ON DUPLICATE KEY UPDATE`), and the rows read here
//! take the place of that one row ([`splice`]).
//!
//! Invariants:
//! - the result is the tree the general parser makes of the whole text, spans aside: the
//!   literal forms read here are exactly those whose tree is plain, and [`splice`] checks
//!   that the parser read the skeleton's first row as the same expressions this reader did,
//!   else the caller parses the whole text (the property test below compares the two paths);
//! - anything else (an expression, a placeholder, an escape, a comment in the rows, a
//!   statement with fewer than [`MIN_ROWS`] rows) is left to the general parser: [`split`]
//!   answers `None`.
//!
//! Where it sits: the frontend, called by [`crate::parse::parse`] before the general parser.

use sqlparser::ast::{Expr, Parens, SetExpr, Statement, UnaryOperator, Value};

/// Statements with fewer rows go to the general parser whole: the skeleton's parse would
/// save little.
pub const MIN_ROWS: usize = 4;

/// A statement split for [`splice`]: the text to parse, and the rows read here.
#[derive(Debug)]
pub struct Split {
    /// The statement with its first row alone.
    pub skeleton: String,
    /// Every row, the first included.
    pub rows: Vec<Vec<Expr>>,
}

/// Reads the rows of `sql` when it is `INSERT` or `REPLACE` with `VALUES` rows of plain
/// literals only; `None` for any other statement.
#[must_use]
pub fn split(sql: &str) -> Option<Split> {
    let bytes = sql.as_bytes();
    let start = sql.len() - sql.trim_start().len();
    let first_word: String = bytes[start..].iter().take_while(|b| b.is_ascii_alphabetic()).map(|b| b.to_ascii_uppercase() as char).collect();
    if first_word != "INSERT" && first_word != "REPLACE" {
        return None;
    }
    let values_end = find_values(bytes, start + first_word.len())?;
    let mut at = skip_space(bytes, values_end);
    let mut rows = Vec::new();
    let mut first_row_end = 0;
    loop {
        let (row, end) = row(bytes, at)?;
        rows.push(row);
        if rows.len() == 1 {
            first_row_end = end;
        }
        at = skip_space(bytes, end);
        if bytes.get(at) != Some(&b',') {
            break;
        }
        at = skip_space(bytes, at + 1);
    }
    if rows.len() < MIN_ROWS {
        return None;
    }
    let mut skeleton = String::with_capacity(first_row_end + 1 + sql.len() - at);
    skeleton.push_str(&sql[..first_row_end]);
    skeleton.push(' ');
    skeleton.push_str(&sql[at..]);
    Some(Split { skeleton, rows })
}

/// The skeleton's statements with `rows` in place of its one row, when the parser read that
/// row as the first of `rows`; `None` otherwise (the caller parses the whole text).
#[must_use]
pub fn splice(mut statements: Vec<Statement>, mut rows: Vec<Vec<Expr>>) -> Option<Vec<Statement>> {
    let [Statement::Insert(insert)] = statements.as_mut_slice() else { return None };
    let query = insert.source.as_mut()?;
    let SetExpr::Values(values) = query.body.as_mut() else { return None };
    if values.explicit_row || values.rows.len() != 1 || values.rows[0].content != rows[0] {
        return None;
    }
    let first = std::mem::take(&mut values.rows[0].content);
    rows[0] = first;
    values.rows = rows.into_iter().map(Parens::with_empty_span).collect();
    Some(statements)
}

/// Where the `VALUES` (or `VALUE`) keyword of an INSERT ends: the first such word outside
/// quotes and parentheses after `from`. `None` when there is none, or when a comment comes
/// first (its text could hide anything).
fn find_values(bytes: &[u8], from: usize) -> Option<usize> {
    let mut at = from;
    let mut depth = 0usize;
    while at < bytes.len() {
        match bytes[at] {
            q @ (b'\'' | b'"' | b'`') => at = skip_quoted(bytes, at, q)?,
            b'(' => {
                depth += 1;
                at += 1;
            }
            b')' => {
                depth = depth.checked_sub(1)?;
                at += 1;
            }
            b'#' => return None,
            b'/' if bytes.get(at + 1) == Some(&b'*') => return None,
            b'-' if bytes.get(at + 1) == Some(&b'-') => return None,
            b if b.is_ascii_alphabetic() || b == b'_' => {
                let end = at + bytes[at..].iter().take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$')).count();
                let preceded = at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || matches!(bytes[at - 1], b'_' | b'$' | b'.' | b'@'));
                let word = &bytes[at..end];
                if depth == 0 && !preceded && (word.eq_ignore_ascii_case(b"VALUES") || word.eq_ignore_ascii_case(b"VALUE")) {
                    return Some(end);
                }
                at = end;
            }
            b if b >= 0x80 => return None,
            _ => at += 1,
        }
    }
    None
}

/// Past the quoted text that starts at `at` with `quote`; `None` if it does not end.
fn skip_quoted(bytes: &[u8], at: usize, quote: u8) -> Option<usize> {
    let mut i = at + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if quote != b'`' => i += 2,
            b if b == quote => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

fn skip_space(bytes: &[u8], mut at: usize) -> usize {
    while at < bytes.len() && matches!(bytes[at], b' ' | b'\t' | b'\n' | b'\r') {
        at += 1;
    }
    at
}

/// One row `(literal, ...)` at `at`, and where it ends (past its `)`).
fn row(bytes: &[u8], at: usize) -> Option<(Vec<Expr>, usize)> {
    if bytes.get(at) != Some(&b'(') {
        return None;
    }
    let mut values = Vec::new();
    let mut i = at + 1;
    loop {
        i = skip_space(bytes, i);
        let (value, end) = literal(bytes, i)?;
        values.push(value);
        i = skip_space(bytes, end);
        match bytes.get(i) {
            Some(b',') => i += 1,
            Some(b')') => return Some((values, i + 1)),
            _ => return None,
        }
    }
}

/// One plain literal at `at`, and where it ends; what the general parser makes of it:
/// - `NULL` (any case): the NULL value;
/// - digits, with a fraction or not, and `-` before them: a number (negated: the unary
///   minus over it);
/// - a single-quoted string with no backslash and no doubled quote: the string.
///
/// Anything else is not plain: `None`.
fn literal(bytes: &[u8], at: usize) -> Option<(Expr, usize)> {
    let rest = bytes.get(at..)?;
    let next_ends = |end: usize| bytes.get(end).is_none_or(|b| matches!(b, b',' | b')' | b' ' | b'\t' | b'\n' | b'\r'));
    match rest.first()? {
        b'\'' => {
            let len = rest[1..].iter().position(|&b| b == b'\'' || b == b'\\')?;
            if rest[1 + len] != b'\'' || rest.get(2 + len) == Some(&b'\'') {
                return None;
            }
            let end = at + 2 + len;
            // A string right after another is their concatenation: not plain.
            let after = skip_space(bytes, end);
            if !matches!(bytes.get(after), Some(b',' | b')')) {
                return None;
            }
            let text = std::str::from_utf8(&rest[1..=len]).ok()?;
            Some((Expr::Value(Value::SingleQuotedString(text.to_owned()).with_empty_span()), end))
        }
        b'-' => {
            let (number, end) = number(bytes, at + 1)?;
            Some((Expr::UnaryOp { op: UnaryOperator::Minus, expr: Box::new(number) }, end))
        }
        b'0'..=b'9' => number(bytes, at),
        b'n' | b'N' if rest.len() >= 4 && rest[..4].eq_ignore_ascii_case(b"NULL") && next_ends(at + 4) => {
            Some((Expr::Value(Value::Null.with_empty_span()), at + 4))
        }
        _ => None,
    }
}

/// Digits at `at`, with a fraction of digits or not, ending the literal.
fn number(bytes: &[u8], at: usize) -> Option<(Expr, usize)> {
    let digits = |from: usize| bytes.get(from..).map_or(0, |r| r.iter().take_while(|b| b.is_ascii_digit()).count());
    let whole = digits(at);
    if whole == 0 {
        return None;
    }
    let mut end = at + whole;
    if bytes.get(end) == Some(&b'.') {
        let fraction = digits(end + 1);
        if fraction == 0 {
            return None;
        }
        end += 1 + fraction;
    }
    if !bytes.get(end).is_none_or(|b| matches!(b, b',' | b')' | b' ' | b'\t' | b'\n' | b'\r')) {
        return None;
    }
    let text = std::str::from_utf8(&bytes[at..end]).ok()?;
    Some((Expr::Value(Value::Number(text.to_owned(), false).with_empty_span()), end))
}

#[cfg(test)]
mod tests {
    use super::{MIN_ROWS, splice, split};
    use crate::parse;

    /// Both paths: the general parser on the whole text, and [`parse::parse`] (which takes
    /// the split path when it can).
    fn both(sql: &str) -> (Result<Vec<sqlparser::ast::Statement>, String>, Result<Vec<sqlparser::ast::Statement>, String>) {
        let whole = parse::parse_whole(sql).map_err(|e| e.message);
        let fast = parse::parse(sql, 0, 0).map_err(|e| e.message);
        (whole, fast)
    }

    #[test]
    fn a_bulk_insert_of_plain_literals_is_read_without_the_general_parser_and_parses_the_same() {
        let sql = "INSERT INTO sbtest1(k, c, pad) VALUES(1, '83868641912-28773972837', 'x'),(-2,'',NULL),(3.25,'a b',null) , (4 ,'z', 'y') ON DUPLICATE KEY UPDATE k = k + 1";
        let s = split(sql).expect("plain rows");
        assert_eq!(s.rows.len(), 4);
        assert_eq!(s.skeleton, "INSERT INTO sbtest1(k, c, pad) VALUES(1, '83868641912-28773972837', 'x') ON DUPLICATE KEY UPDATE k = k + 1");
        let (whole, fast) = both(sql);
        assert_eq!(whole, fast);
        assert!(whole.is_ok());
    }

    #[test]
    fn anything_but_plain_literals_is_left_to_the_general_parser() {
        let rows = |row: &str| format!("INSERT INTO t VALUES {}", [row; MIN_ROWS].join(","));
        for row in [
            "(1, NOW())",
            "(1, 'it''s')",
            "(1, 'a\\'b')",
            "(1, \"dq\")",
            "(1, 'a' 'b')",
            "(?)",
            "(1e5)",
            "(.5)",
            "(1.)",
            "(0x1F)",
            "(X'1F')",
            "(+1)",
            "(- 1)",
            "(--1)",
            "(NULLX)",
            "(TRUE)",
            "()",
            "(1, /* c */ 2)",
            "(_utf8mb4'a')",
            "(N'a')",
            "(1 + 2)",
            "(1),",
        ] {
            let sql = rows(row);
            assert!(split(&sql).is_none(), "{sql}");
            let (whole, fast) = both(&sql);
            assert_eq!(whole, fast, "{sql}");
        }
        for sql in [
            "INSERT INTO t SELECT * FROM u",
            "INSERT INTO t SET a = 1",
            "INSERT INTO t VALUES (1)",
            "UPDATE t SET a = 1",
            "INSERT INTO t (a) -- values\n VALUES (1),(2),(3),(4)",
            "INSERT INTO t VALUES ROW(1), ROW(2), ROW(3), ROW(4)",
        ] {
            assert!(split(sql).is_none(), "{sql}");
        }
    }

    /// The oracle: random INSERT statements, plain or not, parse to the same trees (or the
    /// same error) on both paths. A failing case prints its text.
    #[test]
    fn random_inserts_parse_the_same_on_both_paths() {
        let mut state: u64 = 0x5eed;
        let mut next = move |n: u64| {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) % n
        };
        let pieces = [
            "1", "-1", "0", "12.5", "-0.25", "'abc'", "''", "'a,b)'", "' ( '", "NULL", "null", "'x y'", "007", "-007.10", "1e3", "NOW()", "'q''q'", "DEFAULT",
            "- 3", "'\\n'", "--", "1 + 1", "(1)", "'a' 'b'", "@v", "?", "\"dq\"", "X'0A'",
        ];
        let heads = ["INSERT INTO t VALUES", "insert ignore into db.t (a, b) values", "REPLACE t VALUE", "INSERT INTO `t` (`a`) VALUES", "INSERT t(a)VALUES"];
        let mut taken = 0;
        let tails = ["", ";", " ON DUPLICATE KEY UPDATE a = VALUES(a)", " AS new ON DUPLICATE KEY UPDATE a = new.a", " garbage"];
        for case in 0..3000 {
            let rows = 1 + next(8) as usize;
            let width = 1 + next(3) as usize;
            let plain = next(2) == 0;
            let row: Vec<String> = (0..rows)
                .map(|_| {
                    let values: Vec<&str> = (0..width).map(|_| pieces[next(if plain { 14 } else { pieces.len() as u64 }) as usize]).collect();
                    let space = [" ", "", "\n"][next(3) as usize];
                    format!("({})", values.join(&format!(",{space}")))
                })
                .collect();
            let sql = format!("{} {}{}", heads[next(heads.len() as u64) as usize], row.join(", "), tails[next(tails.len() as u64) as usize]);
            let (whole, fast) = both(&sql);
            assert_eq!(whole, fast, "case {case}: {sql}");
            let spliced = split(&sql).and_then(|s| splice(parse::parse_whole(&s.skeleton).ok()?, s.rows));
            taken += usize::from(spliced.is_some());
        }
        assert!(taken > 300, "the split path was taken {taken} times in 3000");
    }
}
