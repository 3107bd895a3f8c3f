//! `LOCK TABLES` and `UNLOCK TABLES` as the session's recogniser reads them: sqlparser's own
//! forms lose a qualified table name, so [`parse`] reads the lock list on its tokens. The
//! session carries the statements out (`quill_sql::session::table_locks`).

use sqlparser::ast;
use sqlparser::keywords::Keyword;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::Token;

use quill_sql_types::error::{Result, SqlError};

use crate::dialect::QuillDialect;

/// Whether `sql` is `LOCK TABLE[S]` or `UNLOCK TABLE[S]` (the parser's own forms lose a
/// qualified table name).
#[must_use]
pub fn is_table_lock_statement(words: &[String]) -> bool {
    matches!(words.first().map(String::as_str), Some("LOCK" | "UNLOCK")) && words.get(1).is_some_and(|w| matches!(w.trim_end_matches(';'), "TABLE" | "TABLES"))
}

/// One entry of a `LOCK TABLES` list.
pub struct LockItem {
    pub name: ast::ObjectName,
    pub alias: Option<String>,
    pub write: bool,
}

/// The list of a `LOCK TABLE[S] t [[AS] alias] {READ [LOCAL] | [LOW_PRIORITY] WRITE}, ...`.
///
/// # Errors
/// 1064 for a list that does not parse.
pub fn parse(sql: &str) -> Result<Vec<LockItem>> {
    let dialect = QuillDialect::default();
    let syntax = |e: &dyn std::fmt::Display| SqlError::parse(&e.to_string());
    let mut p = Parser::new(&dialect).try_with_sql(sql).map_err(|e| syntax(&e))?;
    p.expect_keyword(Keyword::LOCK).map_err(|e| syntax(&e))?;
    p.expect_one_of_keywords(&[Keyword::TABLE, Keyword::TABLES]).map_err(|e| syntax(&e))?;
    let mut items = Vec::new();
    loop {
        let name = p.parse_object_name(false).map_err(|e| syntax(&e))?;
        let alias = if p.parse_keyword(Keyword::AS) {
            Some(p.parse_identifier().map_err(|e| syntax(&e))?.value)
        } else if !matches!(p.peek_token().token, Token::Word(ref w) if matches!(w.keyword, Keyword::READ | Keyword::WRITE | Keyword::LOW_PRIORITY)) {
            Some(p.parse_identifier().map_err(|e| syntax(&e))?.value)
        } else {
            None
        };
        let write = if p.parse_keyword(Keyword::READ) {
            let _ = p.parse_keyword(Keyword::LOCAL);
            false
        } else {
            let _ = p.parse_keyword(Keyword::LOW_PRIORITY);
            p.expect_keyword(Keyword::WRITE).map_err(|e| syntax(&e))?;
            true
        };
        items.push(LockItem { name, alias, write });
        if !p.consume_token(&Token::Comma) {
            break;
        }
    }
    let _ = p.consume_token(&Token::SemiColon);
    if p.peek_token().token != Token::EOF {
        return Err(SqlError::parse(&p.peek_token().to_string()));
    }
    Ok(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_lists_parse_with_qualified_names_aliases_and_modes() {
        let items = parse("LOCK TABLES d.a READ LOCAL, b AS x WRITE, c y LOW_PRIORITY WRITE;").unwrap();
        let got: Vec<(String, Option<String>, bool)> = items.iter().map(|i| (i.name.to_string(), i.alias.clone(), i.write)).collect();
        assert_eq!(got, vec![("d.a".into(), None, false), ("b".into(), Some("x".into()), true), ("c".into(), Some("y".into()), true)]);
        assert!(parse("LOCK TABLES a").is_err());
        assert!(parse("LOCK TABLES a READ b").is_err());
    }
}
