//! The SQL dialect Quill parses: sqlparser's MySQL dialect, with MySQL's precedence for the
//! `BINARY` operator.
//!
//! sqlparser reads `BINARY` before an expression as a cast of *the whole expression that
//! follows*, so `'Ann2' LIKE BINARY 'Ann%' AND 1 = 1` became `'Ann2' LIKE CAST(('Ann%' AND
//! 1 = 1) AS BINARY)`. In MySQL, `BINARY` (like `COLLATE`) binds tighter than every binary
//! operator (the manual's operator-precedence table puts it just after `INTERVAL`), so its
//! operand is the next primary expression: `BINARY 'a' AND 1` is `(BINARY 'a') AND 1`, and
//! `BINARY a * 2` is `(BINARY a) * 2`. [`QuillDialect::parse_prefix`] reads it so.
//!
//! It reads MySQL 8's `ENCRYPTION 'N'` in CREATE DATABASE ([`parse_create_database`]), and
//! MySQL's `ALTER {DATABASE | SCHEMA} [name] [DEFAULT] CHARACTER SET [=] cs
//! [DEFAULT] COLLATE [=] c [DEFAULT] ENCRYPTION [=] 'N'`, which sqlparser does not, as an
//! `AlterSchema` whose one operation is `SET (CHARACTER SET = cs, COLLATE = c, ...)`
//! ([`parse_alter_database`]); a missing name is an empty name (the default database).
//!
//! Invariant: every other method delegates to [`MySqlDialect`], and [`Dialect::dialect`]
//! answers MySqlDialect's type, so every `dialect_of!(… is MySqlDialect)` test in the parser
//! behaves as for MySQL itself.

use std::any::TypeId;

use sqlparser::ast::{AlterSchema, AlterSchemaOperation, CastKind, DataType, Expr, Ident, ObjectName, SqlOption, Statement, Value};
use sqlparser::dialect::{Dialect, MySqlDialect, Precedence};
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::Token;

/// sqlparser's MySQL dialect with MySQL's `BINARY` precedence (see the module doc).
#[derive(Debug, Default, Clone, Copy)]
pub struct QuillDialect {
    mysql: MySqlDialect,
}

impl QuillDialect {
    /// `BINARY <operand>` where `operand` is one primary expression (a literal, a column, a
    /// call, a parenthesised expression, a unary expression): everything whose operators bind
    /// tighter than `*`, `/`, `DIV`, `%`.
    fn parse_binary_operator(parser: &mut Parser) -> Result<Expr, ParserError> {
        let operand_precedence = MySqlDialect {}.prec_value(Precedence::MulDivModOp);
        let operand = parser.parse_subexpr(operand_precedence)?;
        Ok(Expr::Cast { kind: CastKind::Cast, expr: Box::new(operand), data_type: DataType::Binary(None), format: None })
    }
}

impl Dialect for QuillDialect {
    fn dialect(&self) -> TypeId {
        self.mysql.dialect()
    }

    fn parse_prefix(&self, parser: &mut Parser) -> Option<Result<Expr, ParserError>> {
        // `BINARY` followed by the start of an operand. `BINARY(…)` is the same operator on a
        // parenthesised operand, which parse_subexpr reads as well.
        let [first, second] = parser.peek_tokens();
        // A literal is a value. sqlparser would first try to read it as a type name (for
        // `DATE '2020-01-01'`), building and formatting an error to throw away: for a
        // multi-row INSERT's values that was a tenth of the statement's parse.
        if matches!(first, Token::Number(..) | Token::SingleQuotedString(_) | Token::DoubleQuotedString(_) | Token::HexStringLiteral(_)) {
            return Some(parser.parse_value().map(Expr::Value));
        }
        let is_binary_keyword = matches!(&first, Token::Word(w) if w.keyword == Keyword::BINARY);
        let operand_follows = !matches!(second, Token::EOF | Token::Comma | Token::RParen | Token::SemiColon);
        if is_binary_keyword && operand_follows {
            parser.next_token();
            return Some(Self::parse_binary_operator(parser));
        }
        self.mysql.parse_prefix(parser)
    }

    fn is_identifier_start(&self, ch: char) -> bool {
        self.mysql.is_identifier_start(ch)
    }
    fn is_identifier_part(&self, ch: char) -> bool {
        self.mysql.is_identifier_part(ch)
    }
    fn is_delimited_identifier_start(&self, ch: char) -> bool {
        self.mysql.is_delimited_identifier_start(ch)
    }
    fn identifier_quote_style(&self, identifier: &str) -> Option<char> {
        self.mysql.identifier_quote_style(identifier)
    }
    fn supports_string_literal_backslash_escape(&self) -> bool {
        self.mysql.supports_string_literal_backslash_escape()
    }
    fn supports_string_literal_concatenation(&self) -> bool {
        self.mysql.supports_string_literal_concatenation()
    }
    fn ignores_wildcard_escapes(&self) -> bool {
        self.mysql.ignores_wildcard_escapes()
    }
    fn supports_numeric_prefix(&self) -> bool {
        self.mysql.supports_numeric_prefix()
    }
    fn supports_bitwise_shift_operators(&self) -> bool {
        self.mysql.supports_bitwise_shift_operators()
    }
    fn supports_multiline_comment_hints(&self) -> bool {
        self.mysql.supports_multiline_comment_hints()
    }
    fn parse_infix(&self, parser: &mut Parser, expr: &Expr, precedence: u8) -> Option<Result<Expr, ParserError>> {
        self.mysql.parse_infix(parser, expr, precedence)
    }
    fn parse_statement(&self, parser: &mut Parser) -> Option<Result<Statement, ParserError>> {
        let [first, second] = parser.peek_tokens();
        let keyword = |t: &Token, k: Keyword| matches!(t, Token::Word(w) if w.keyword == k);
        if keyword(&first, Keyword::ALTER) && (keyword(&second, Keyword::DATABASE) || keyword(&second, Keyword::SCHEMA)) {
            parser.next_token();
            parser.next_token();
            return Some(parse_alter_database(parser));
        }
        if keyword(&first, Keyword::CREATE) && (keyword(&second, Keyword::DATABASE) || keyword(&second, Keyword::SCHEMA)) {
            parser.next_token();
            parser.next_token();
            return Some(parse_create_database(parser));
        }
        self.mysql.parse_statement(parser)
    }
    fn require_interval_qualifier(&self) -> bool {
        self.mysql.require_interval_qualifier()
    }
    fn supports_limit_comma(&self) -> bool {
        self.mysql.supports_limit_comma()
    }
    fn supports_create_table_select(&self) -> bool {
        self.mysql.supports_create_table_select()
    }
    fn supports_insert_set(&self) -> bool {
        self.mysql.supports_insert_set()
    }
    fn supports_user_host_grantee(&self) -> bool {
        self.mysql.supports_user_host_grantee()
    }
    /// `SELECT 1 FOR UPDATE`, `SELECT 1 LOCK IN SHARE MODE`: FOR and LOCK are reserved in
    /// MySQL, never a select item's alias.
    fn is_select_item_alias(&self, explicit: bool, kw: &Keyword, parser: &mut Parser) -> bool {
        if !explicit && matches!(kw, Keyword::FOR | Keyword::LOCK) {
            return false;
        }
        self.mysql.is_select_item_alias(explicit, kw, parser)
    }

    fn is_table_factor_alias(&self, explicit: bool, kw: &Keyword, parser: &mut Parser) -> bool {
        self.mysql.is_table_factor_alias(explicit, kw, parser)
    }
    fn supports_table_hints(&self) -> bool {
        self.mysql.supports_table_hints()
    }
    fn requires_single_line_comment_whitespace(&self) -> bool {
        self.mysql.requires_single_line_comment_whitespace()
    }
    fn supports_match_against(&self) -> bool {
        self.mysql.supports_match_against()
    }
    fn supports_select_modifiers(&self) -> bool {
        self.mysql.supports_select_modifiers()
    }
    fn supports_set_names(&self) -> bool {
        self.mysql.supports_set_names()
    }
    fn supports_comma_separated_set_assignments(&self) -> bool {
        self.mysql.supports_comma_separated_set_assignments()
    }
    fn supports_update_order_by(&self) -> bool {
        self.mysql.supports_update_order_by()
    }
    fn supports_data_type_signed_suffix(&self) -> bool {
        self.mysql.supports_data_type_signed_suffix()
    }
    fn supports_cross_join_constraint(&self) -> bool {
        self.mysql.supports_cross_join_constraint()
    }
    fn supports_double_ampersand_operator(&self) -> bool {
        self.mysql.supports_double_ampersand_operator()
    }
    fn supports_binary_kw_as_cast(&self) -> bool {
        self.mysql.supports_binary_kw_as_cast()
    }
    fn supports_comment_optimizer_hint(&self) -> bool {
        self.mysql.supports_comment_optimizer_hint()
    }
    fn supports_constraint_keyword_without_name(&self) -> bool {
        self.mysql.supports_constraint_keyword_without_name()
    }
    fn supports_key_column_option(&self) -> bool {
        self.mysql.supports_key_column_option()
    }
    fn supports_group_by_with_modifier(&self) -> bool {
        self.mysql.supports_group_by_with_modifier()
    }
    /// `FROM (t1)` and `t1 JOIN (t2) ON ...`: MySQL reads a lone table in parentheses.
    fn supports_parens_around_table_factor(&self) -> bool {
        true
    }

    fn supports_left_associative_joins_without_parens(&self) -> bool {
        self.mysql.supports_left_associative_joins_without_parens()
    }
}

/// MySQL's CREATE DATABASE, after `CREATE DATABASE`: sqlparser's, which reads CHARACTER SET
/// and COLLATE, then MySQL 8's `[DEFAULT] ENCRYPTION [=] 'N'` (every MySQL 8 dump writes it)
/// and any options after it. Encryption itself (`'Y'`) is refused.
fn parse_create_database(parser: &mut Parser) -> Result<Statement, ParserError> {
    let mut statement = parser.parse_create_database()?;
    let Statement::CreateDatabase { default_charset, default_collation, .. } = &mut statement else {
        return parser.expected("CREATE DATABASE", parser.peek_token());
    };
    for (key, value) in database_options(parser)? {
        match key {
            "CHARACTER SET" => *default_charset = Some(value),
            "COLLATE" => *default_collation = Some(value),
            "ENCRYPTION" if value.eq_ignore_ascii_case("N") => {}
            _ => return parser.expected("ENCRYPTION 'N' (Quill does not encrypt data)", parser.peek_token()),
        }
    }
    Ok(statement)
}

/// The options of MySQL's ALTER DATABASE, after `ALTER DATABASE` (see the module doc).
fn parse_alter_database(parser: &mut Parser) -> Result<Statement, ParserError> {
    let is_option_word = |t: &Token| matches!(t, Token::Word(w) if matches!(w.keyword, Keyword::DEFAULT | Keyword::CHARACTER | Keyword::CHARSET | Keyword::COLLATE | Keyword::ENCRYPTION | Keyword::READ));
    let name = if is_option_word(&parser.peek_token().token) { ObjectName(Vec::new()) } else { parser.parse_object_name(false)? };
    let options: Vec<SqlOption> = database_options(parser)?
        .into_iter()
        .map(|(key, value)| SqlOption::KeyValue { key: Ident::new(key), value: Expr::Value(Value::SingleQuotedString(value).into()) })
        .collect();
    if options.is_empty() {
        return parser.expected("CHARACTER SET or COLLATE", parser.peek_token());
    }
    Ok(Statement::AlterSchema(AlterSchema { name, if_exists: false, operations: vec![AlterSchemaOperation::SetOptionsParens { options }] }))
}

/// A database's options, `[DEFAULT] CHARACTER SET | COLLATE | ENCRYPTION [=] value` and `READ
/// ONLY [=] value`, as (key, value) in the order written.
fn database_options(parser: &mut Parser) -> Result<Vec<(&'static str, String)>, ParserError> {
    let mut options = Vec::new();
    loop {
        // DEFAULT before an option says nothing more.
        let _ = parser.parse_keyword(Keyword::DEFAULT);
        let key = if parser.parse_keywords(&[Keyword::CHARACTER, Keyword::SET]) || parser.parse_keyword(Keyword::CHARSET) {
            "CHARACTER SET"
        } else if parser.parse_keyword(Keyword::COLLATE) {
            "COLLATE"
        } else if parser.parse_keyword(Keyword::ENCRYPTION) {
            "ENCRYPTION"
        } else if parser.parse_keywords(&[Keyword::READ, Keyword::ONLY]) {
            "READ ONLY"
        } else {
            break;
        };
        let _ = parser.consume_token(&Token::Eq);
        let value = match parser.next_token().token {
            Token::Word(w) => w.value,
            Token::SingleQuotedString(s) | Token::DoubleQuotedString(s) | Token::Number(s, _) => s,
            other => return parser.expected("a character set, collation or option value", sqlparser::tokenizer::TokenWithSpan::wrap(other)),
        };
        options.push((key, value));
    }
    Ok(options)
}

#[cfg(test)]
mod tests {
    use sqlparser::parser::Parser;

    use super::QuillDialect;

    fn parsed(sql: &str) -> String {
        Parser::parse_sql(&QuillDialect::default(), sql).expect("parses").remove(0).to_string()
    }

    /// Regression: `BINARY` took the rest of an AND as its operand, so Django's
    /// `LIKE BINARY 'Ann%'` followed by another condition matched nothing.
    #[test]
    fn binary_binds_tighter_than_every_binary_operator() {
        assert_eq!(parsed("SELECT 'Ann2' LIKE BINARY 'Ann%' AND 1 = 1"), "SELECT 'Ann2' LIKE CAST('Ann%' AS BINARY) AND 1 = 1");
        assert_eq!(parsed("SELECT a = BINARY b OR c"), "SELECT a = CAST(b AS BINARY) OR c");
        assert_eq!(parsed("SELECT BINARY a * 2"), "SELECT CAST(a AS BINARY) * 2");
        assert_eq!(parsed("SELECT BINARY (a AND b)"), "SELECT CAST((a AND b) AS BINARY)");
        assert_eq!(parsed("SELECT BINARY -a"), "SELECT CAST(-a AS BINARY)");
        assert_eq!(parsed("SELECT CAST(a AS BINARY(4))"), "SELECT CAST(a AS BINARY(4))");
    }

    #[test]
    fn create_database_reads_mysql_8_dumps() {
        let sql = "CREATE DATABASE /*!32312 IF NOT EXISTS*/ `shop` /*!40100 DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_0900_ai_ci */ /*!80016 DEFAULT ENCRYPTION='N' */";
        let sql = sql.replace("/*!32312 ", "").replace("/*!40100 ", "").replace("/*!80016 ", "").replace(" */", "").replace("*/", "");
        assert_eq!(parsed(&sql), "CREATE DATABASE IF NOT EXISTS `shop` DEFAULT CHARACTER SET utf8mb4 DEFAULT COLLATE utf8mb4_0900_ai_ci");
        assert_eq!(parsed("CREATE SCHEMA s ENCRYPTION = 'N' CHARACTER SET latin1"), "CREATE DATABASE s DEFAULT CHARACTER SET latin1");
        assert!(Parser::parse_sql(&QuillDialect::default(), "CREATE DATABASE s ENCRYPTION 'Y'").is_err());
    }

    #[test]
    fn for_and_lock_end_a_select_list() {
        assert_eq!(parsed("SELECT 1 FOR UPDATE"), "SELECT 1 FOR UPDATE");
        assert_eq!(parsed("SELECT a b FROM t"), "SELECT a AS b FROM t");
    }

    #[test]
    fn alter_database_options_are_read() {
        assert_eq!(
            parsed("ALTER DATABASE d DEFAULT CHARACTER SET = utf8mb4 COLLATE utf8mb4_bin"),
            "ALTER SCHEMA d SET OPTIONS (CHARACTER SET = 'utf8mb4', COLLATE = 'utf8mb4_bin')"
        );
        assert_eq!(parsed("ALTER SCHEMA CHARSET latin1"), "ALTER SCHEMA  SET OPTIONS (CHARACTER SET = 'latin1')");
        assert!(Parser::parse_sql(&QuillDialect::default(), "ALTER DATABASE d UPGRADE").is_err());
    }
}
