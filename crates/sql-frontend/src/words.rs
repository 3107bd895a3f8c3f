//! The words of a statement, for the recognisers that read SHOW, DESCRIBE and their kin
//! before (or instead of) the parser.
//!
//! A word ends at whitespace outside quotes: a quoted identifier or literal is one word
//! however many spaces, dots or quotes of the other kind it holds, so `` SHOW CREATE TABLE
//! `quote " two` `` names the table `quote " two`. [`name_parts`] then splits one word that
//! names an object (`db.t`, `` `d b`.`t.x` ``) into its unquoted parts.
//!
//! Invariant: [`words`] (and [`Words`], one at a time) returns slices of its input, in order, none empty and none
//! containing whitespace outside quotes; an unterminated quote runs to the end of the text.

/// The whitespace-separated words of `sql`, quotes (`` ` ``, `'`, `"`) keeping their
/// contents in one word.
#[must_use]
pub fn words(sql: &str) -> Vec<&str> {
    Words::new(sql).collect()
}

/// [`words`] one at a time: a recogniser that reads only the first few words of a long
/// statement (a multi-row INSERT) does not scan the rest.
#[derive(Debug, Clone)]
pub struct Words<'a> {
    sql: &'a str,
    chars: std::iter::Peekable<std::str::CharIndices<'a>>,
}

impl<'a> Words<'a> {
    #[must_use]
    pub fn new(sql: &'a str) -> Words<'a> {
        Words { sql, chars: sql.char_indices().peekable() }
    }
}

impl<'a> Iterator for Words<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let mut start: Option<usize> = None;
        let mut quote: Option<char> = None;
        while let Some((i, c)) = self.chars.next() {
            match quote {
                Some(q) if c == q => {
                    // A doubled quote is the quote character itself.
                    if self.chars.peek().is_some_and(|&(_, next)| next == q) {
                        self.chars.next();
                    } else {
                        quote = None;
                    }
                }
                Some(q) if c == '\\' && q != '`' => {
                    self.chars.next();
                }
                Some(_) => {}
                None if c.is_whitespace() => {
                    if let Some(s) = start {
                        return Some(&self.sql[s..i]);
                    }
                }
                None => {
                    start.get_or_insert(i);
                    if matches!(c, '`' | '\'' | '"') {
                        quote = Some(c);
                    }
                }
            }
        }
        start.map(|s| &self.sql[s..])
    }
}

/// The parts of an object name written as one word: `t`, `db.t`, `` `d b`.`t` `` (a
/// doubled backquote inside backquotes is one backquote). `None` for an empty part or an
/// unterminated backquote.
#[must_use]
pub fn name_parts(name: &str) -> Option<Vec<String>> {
    let mut parts = Vec::new();
    let mut chars = name.chars().peekable();
    loop {
        let mut part = String::new();
        if chars.peek() == Some(&'`') {
            chars.next();
            loop {
                match chars.next()? {
                    '`' if chars.peek() == Some(&'`') => {
                        chars.next();
                        part.push('`');
                    }
                    '`' => break,
                    c => part.push(c),
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == '.' {
                    break;
                }
                part.push(c);
                chars.next();
            }
            if part.is_empty() {
                return None;
            }
        }
        parts.push(part);
        match chars.next() {
            None => return Some(parts),
            Some('.') => {}
            Some(_) => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{name_parts, words};

    /// Regression: SHOW CREATE TABLE and DESCRIBE of `` `quote " two` `` and
    /// `` `per % cent` `` answered 1146, the name split at its space.
    #[test]
    fn quoted_names_are_one_word() {
        assert_eq!(words("SHOW CREATE TABLE `quote \" two`"), ["SHOW", "CREATE", "TABLE", "`quote \" two`"]);
        assert_eq!(words("  DESCRIBE\t`per % cent` ;"), ["DESCRIBE", "`per % cent`", ";"]);
        assert_eq!(words("SHOW TABLES LIKE 'a b''c'"), ["SHOW", "TABLES", "LIKE", "'a b''c'"]);
        assert_eq!(words("SHOW TABLES LIKE 'it\\'s x'"), ["SHOW", "TABLES", "LIKE", "'it\\'s x'"]);
        assert_eq!(words("x `open"), ["x", "`open"]);
    }

    #[test]
    fn names_split_at_dots_outside_backquotes() {
        assert_eq!(name_parts("t"), Some(vec!["t".to_owned()]));
        assert_eq!(name_parts("db.t"), Some(vec!["db".to_owned(), "t".to_owned()]));
        assert_eq!(name_parts("`d b`.`t.x`"), Some(vec!["d b".to_owned(), "t.x".to_owned()]));
        assert_eq!(name_parts("`a``b`"), Some(vec!["a`b".to_owned()]));
        assert_eq!(name_parts("db."), None);
        assert_eq!(name_parts("`open"), None);
    }
}
