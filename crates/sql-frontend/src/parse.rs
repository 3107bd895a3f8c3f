//! From a statement's text to syntax trees the engine can walk without exhausting its stack.
//!
//! `sqlparser` builds one tree level per operator of a chain: `a OR b OR c …` is a
//! left-deep tree as deep as the chain is long, and every later walk of it (binding,
//! evaluation, even dropping it) recurses that deep. ORMs send `id = 0 OR id = 1 OR …` with
//! thousands of terms, and one client's deep statement must never overflow a worker's
//! stack and take the server down. So [`parse`]:
//!
//! 1. refuses a statement with more than [`MAX_STATEMENT_OPERATORS`] operators before
//!    parsing it (the lexer counted them: `text::StatementText::operators`), or with more
//!    than [`MAX_EXPRESSION_DEPTH`] `DIV`s (the parser copies a `DIV` chain's left side at
//!    every step: time quadratic in its length);
//! 2. parses a statement with more than [`INLINE_PARSE_OPERATORS_MAX`] operators on a stack
//!    of its own, sized by its operator count, since the parser itself drops a deep
//!    partial tree when it meets a syntax error;
//! 3. rebalances chains of the associative operators AND, OR and XOR of more than
//!    [`REBALANCE_TERMS_MIN`] terms into balanced trees of the same terms in the same
//!    order (depth log₂ n; three-valued AND/OR/XOR are associative, and evaluation still
//!    goes left to right and stops at the same term);
//! 4. answers an expression still deeper than [`MAX_EXPRESSION_DEPTH`] (a long `+` chain,
//!    nested parentheses or functions, a `::` cast chain) with MySQL's 1436, a chain of
//!    more than [`MAX_SET_OPERATIONS`] UNIONs (EXCEPT, INTERSECT) with 1436 too, and
//!    subqueries nested more than [`MAX_SELECT_NESTING`] deep with 1473.
//!
//! Invariant: every tree [`parse`] returns is at most `MAX_EXPRESSION_DEPTH` expressions
//! deep, so the recursive walks of the binder, the planner and the evaluator stay within
//! the worker stack the server gives them (`WORKER_STACK_BYTES` in the server).

use std::ops::ControlFlow;

use crate::dialect::QuillDialect;
use sqlparser::ast::{BinaryOperator, Expr, Query, SetExpr, Statement, Value, VisitMut, VisitorMut};
use sqlparser::parser::{Parser, ParserError};

use quill_sql_types::error::{Result, SqlError, codes};

/// The deepest expression a statement may hold (operators, function calls, parentheses
/// and subqueries nested in one another), after AND/OR/XOR chains are rebalanced.
pub const MAX_EXPRESSION_DEPTH: usize = 1_000;
/// Subqueries nested in one another below a statement (MySQL's limit, error 1473).
pub const MAX_SELECT_NESTING: usize = 63;
/// Set operations (UNION, EXCEPT, INTERSECT) chained in one query: the parser nests them one
/// level each, and planning and running a query recurse down the chain.
pub const MAX_SET_OPERATIONS: usize = 500;
/// The most binary operators one statement may hold (a 1,000,000-term OR chain is about
/// 20 MB of text); more is refused with 1436 before parsing.
pub const MAX_STATEMENT_OPERATORS: usize = 1_000_000;
/// Statements with at most this many operators are parsed on the calling stack: no chain
/// in them can be deeper than the expression depth limit.
pub const INLINE_PARSE_OPERATORS_MAX: usize = MAX_EXPRESSION_DEPTH;
/// Stack reserved per operator for a statement parsed on a stack of its own: dropping one
/// level of a parser tree takes about 100 bytes in release builds, a few hundred in debug.
const STACK_BYTES_PER_OPERATOR: usize = 1024;
/// Stack reserved beyond the per-operator share.
const STACK_BYTES_BASE: usize = 4 << 20;
/// Shorter AND/OR/XOR chains are left as the parser built them.
pub const REBALANCE_TERMS_MIN: usize = 32;
/// The parser's own nesting limit (parentheses, subqueries, unary operators), above the
/// expression depth limit so that the depth check, not the parser, answers first.
const PARSER_RECURSION_LIMIT: usize = MAX_EXPRESSION_DEPTH + 64;

/// The byte offset in `sql` where a token starts (the tokenizer counts lines and columns
/// from 1, columns in characters): for the recognisers that cut a clause out of a text.
#[must_use]
pub fn token_offset(sql: &str, token: &sqlparser::tokenizer::TokenWithSpan) -> usize {
    let at = token.span.start;
    let mut line = 1;
    let mut column = 1;
    for (i, c) in sql.char_indices() {
        if line == at.line && column == at.column {
            return i;
        }
        if c == '\n' {
            line += 1;
            column = 1;
        } else {
            column += 1;
        }
    }
    sql.len()
}

/// `SET @v := expr` as `SET @v = expr`, which is what sqlparser reads: every `:=` outside
/// quotes of a statement that starts with SET.
#[must_use]
pub fn rewrite_set_assignment(sql: &str) -> std::borrow::Cow<'_, str> {
    let is_set = sql.trim_start().get(..4).is_some_and(|w| w.eq_ignore_ascii_case("SET ") || w.eq_ignore_ascii_case("SET@"));
    if !is_set || !sql.contains(":=") {
        return std::borrow::Cow::Borrowed(sql);
    }
    let mut out = String::with_capacity(sql.len());
    let mut quote: Option<char> = None;
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        match quote {
            Some(q) => {
                out.push(c);
                if c == '\\' && q != '`' {
                    out.extend(chars.next());
                } else if c == q {
                    quote = None;
                }
            }
            None if matches!(c, '\'' | '"' | '`') => {
                quote = Some(c);
                out.push(c);
            }
            None if c == ':' && chars.peek() == Some(&'=') => {
                chars.next();
                out.push_str(" =");
            }
            None => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Parse one statement text (`operators` and `div_operators` as the lexer counted them)
/// into shallow trees. ALTER TABLE's table options are first put in a form sqlparser reads
/// (`alter_options::rewrite`).
///
/// # Errors
/// 1064 for a syntax error; 1436 for a statement too deep or with too many operators;
/// 1473 for subqueries nested too deep.
pub fn parse(sql: &str, operators: usize, div_operators: usize) -> Result<Vec<Statement>> {
    if operators > MAX_STATEMENT_OPERATORS {
        return Err(too_many_operators(operators));
    }
    if div_operators > MAX_EXPRESSION_DEPTH {
        return Err(too_deep());
    }
    let rewritten = crate::alter_options::rewrite(sql);
    let sql = rewritten.as_deref().unwrap_or(sql);
    // A bulk INSERT's rows of plain literals are read without the general parser; any
    // doubt (the skeleton fails to parse, or reads its row otherwise) parses the whole.
    if let Some(split) = crate::values_rows::split(sql)
        && let Ok(statements) = parse_sized(&split.skeleton, operators)
        && let Some(statements) = crate::values_rows::splice(statements, split.rows)
    {
        return Ok(statements);
    }
    parse_sized(sql, operators)
}

/// The general parser on `sql` (with `operators` operators), on a stack sized for it.
fn parse_sized(sql: &str, operators: usize) -> Result<Vec<Statement>> {
    if operators <= INLINE_PARSE_OPERATORS_MAX {
        return parse_and_shape(sql);
    }
    stacker::grow(STACK_BYTES_BASE + operators * STACK_BYTES_PER_OPERATOR, || parse_and_shape(sql))
}

/// [`parse`] without its [`crate::values_rows`] path: the oracle its tests compare with.
#[cfg(test)]
pub(crate) fn parse_whole(sql: &str) -> Result<Vec<Statement>> {
    parse_sized(sql, 0)
}

/// Parse and shape on the current stack. A tree that fails the shape checks is dropped
/// here, on the stack that was sized for it.
fn parse_and_shape(sql: &str) -> Result<Vec<Statement>> {
    let parser =
        |sql: &str| Parser::new(&QuillDialect::default()).with_recursion_limit(PARSER_RECURSION_LIMIT).try_with_sql(sql).and_then(|mut p| p.parse_statements());
    let mut statements = match parser(sql) {
        Ok(s) => s,
        Err(ParserError::RecursionLimitExceeded) => return Err(too_deep()),
        // `FROM (t1, t2)`: read again with the list as joins (`table_lists`).
        Err(e) => match crate::table_lists::rewrite(sql).and_then(|joins| parser(&joins).ok()) {
            Some(s) => s,
            None => return Err(parse_error(sql, &e.to_string())),
        },
    };
    if statements.iter().any(has_returning) {
        return Err(returning_refused(sql));
    }
    let mut shaper = Shaper { depth: 0, nesting: 0 };
    for statement in &mut statements {
        if let ControlFlow::Break(e) = statement.visit(&mut shaper) {
            return Err(e);
        }
    }
    Ok(statements)
}

/// MySQL's 1064 message, quoting the text near the failure.
#[must_use]
pub fn parse_error(sql: &str, detail: &str) -> SqlError {
    // sqlparser reports "... at Line: 1, Column: N"; quote from there.
    let col = detail.rsplit("Column: ").next().and_then(|c| c.trim().parse::<usize>().ok()).unwrap_or(1);
    let near: String = sql.chars().skip(col.saturating_sub(1)).take(80).collect();
    SqlError::parse(near.trim())
}

/// Whether a statement has a RETURNING clause, which sqlparser reads for every dialect and
/// MySQL has none of: it is refused rather than accepted and ignored.
fn has_returning(statement: &Statement) -> bool {
    match statement {
        Statement::Insert(i) => i.returning.is_some(),
        Statement::Update(u) => u.returning.is_some(),
        Statement::Delete(d) => d.returning.is_some(),
        _ => false,
    }
}

/// MySQL's 1064 for `… RETURNING …`, quoting the text from the keyword on.
fn returning_refused(sql: &str) -> SqlError {
    let at = sql.to_ascii_uppercase().rfind("RETURNING").unwrap_or(0);
    SqlError::parse(sql[at..].chars().take(80).collect::<String>().trim())
}

fn too_deep() -> SqlError {
    SqlError::new(
        codes::ER_STACK_OVERRUN_NEED_MORE,
        format!(
            "Thread stack overrun: the statement nests expressions more than {MAX_EXPRESSION_DEPTH} deep, Quill's limit; write it with fewer nested operators"
        ),
    )
}

fn too_many_operators(operators: usize) -> SqlError {
    SqlError::new(
        codes::ER_STACK_OVERRUN_NEED_MORE,
        format!("Thread stack overrun: the statement has {operators} operators, more than Quill's limit of {MAX_STATEMENT_OPERATORS}"),
    )
}

/// Rebalances AND/OR/XOR chains and checks depth and nesting on the way down.
struct Shaper {
    depth: usize,
    nesting: usize,
}

impl VisitorMut for Shaper {
    type Break = SqlError;

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<SqlError> {
        self.nesting += 1;
        // The statement's own query is level 1; each subquery below it one more.
        if self.nesting > MAX_SELECT_NESTING + 1 {
            return ControlFlow::Break(SqlError::new(codes::ER_TOO_HIGH_LEVEL_OF_NESTING_FOR_SELECT, "Too high level of nesting for select"));
        }
        // A UNION chain is nested down its left side, one level per set operation: measured
        // with a loop, before anything recurses down it.
        let mut chain = 0;
        let mut at: &SetExpr = &query.body;
        while let SetExpr::SetOperation { left, .. } = at {
            chain += 1;
            if chain > MAX_SET_OPERATIONS {
                return ControlFlow::Break(too_deep());
            }
            at = left;
        }
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _query: &mut Query) -> ControlFlow<SqlError> {
        self.nesting -= 1;
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<SqlError> {
        rebalance(expr);
        self.depth += 1;
        if self.depth > MAX_EXPRESSION_DEPTH {
            return ControlFlow::Break(too_deep());
        }
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, _expr: &mut Expr) -> ControlFlow<SqlError> {
        self.depth -= 1;
        ControlFlow::Continue(())
    }
}

/// If `expr` heads a left-deep chain of one associative operator longer than
/// [`REBALANCE_TERMS_MIN`], rebuild it as a balanced tree of the same terms in order. The
/// chain is taken apart with a loop, never by recursion down its length.
fn rebalance(expr: &mut Expr) {
    let Expr::BinaryOp { op, .. } = expr else { return };
    // `||` is OR (or, under PIPES_AS_CONCAT, CONCAT): associative either way.
    if !matches!(op, BinaryOperator::And | BinaryOperator::Or | BinaryOperator::Xor | BinaryOperator::StringConcat) {
        return;
    }
    let op = op.clone();
    let mut spine = 1;
    let mut at: &Expr = expr;
    while let Expr::BinaryOp { left, op: o, .. } = at
        && *o == op
    {
        spine += 1;
        at = left;
    }
    if spine <= REBALANCE_TERMS_MIN {
        return;
    }
    let mut terms = Vec::with_capacity(spine);
    let mut rest = std::mem::replace(expr, Expr::Value(Value::Null.with_empty_span()));
    loop {
        match rest {
            Expr::BinaryOp { left, op: o, right } if o == op => {
                terms.push(*right);
                rest = *left;
            }
            other => {
                terms.push(other);
                break;
            }
        }
    }
    terms.reverse();
    *expr = balanced(terms, &op);
}

/// `terms` joined by `op` as a balanced tree, left to right.
///
/// REQUIRES: `terms` is not empty.
fn balanced(mut terms: Vec<Expr>, op: &BinaryOperator) -> Expr {
    assert!(!terms.is_empty(), "a chain has at least one term");
    if terms.len() == 1 {
        return terms.pop().expect("one term");
    }
    let right = terms.split_off(terms.len() / 2);
    Expr::BinaryOp { left: Box::new(balanced(terms, op)), op: op.clone(), right: Box::new(balanced(right, op)) }
}

#[cfg(test)]
mod tests {
    #[test]
    fn set_assignments_become_equals_outside_quotes_only() {
        use super::rewrite_set_assignment;
        assert_eq!(rewrite_set_assignment("SET @a := 1, @b:=(SELECT 2)"), "SET @a  = 1, @b =(SELECT 2)");
        assert_eq!(rewrite_set_assignment(r#"SET @s := 'x:=y', @t = "a\":=""#), r#"SET @s  = 'x:=y', @t = "a\":=""#);
        assert_eq!(rewrite_set_assignment("SELECT @a := 1"), "SELECT @a := 1");
        assert_eq!(rewrite_set_assignment("SETTLE := 1"), "SETTLE := 1");
    }

    use super::*;
    use sqlparser::ast::{SetExpr, Visit, Visitor};

    fn chain(op: &str, n: usize) -> String {
        format!("SELECT {}", (0..n).map(|i| format!("(a = {i})")).collect::<Vec<_>>().join(&format!(" {op} ")))
    }

    fn depth(statement: &Statement) -> usize {
        struct Depth(usize, usize);
        impl Visitor for Depth {
            type Break = ();
            fn pre_visit_expr(&mut self, _e: &Expr) -> ControlFlow<()> {
                self.0 += 1;
                self.1 = self.1.max(self.0);
                ControlFlow::Continue(())
            }
            fn post_visit_expr(&mut self, _e: &Expr) -> ControlFlow<()> {
                self.0 -= 1;
                ControlFlow::Continue(())
            }
        }
        let mut d = Depth(0, 0);
        let _ = statement.visit(&mut d);
        d.1
    }

    #[test]
    fn long_or_chains_become_balanced_trees_with_the_same_text() {
        for op in ["OR", "AND", "XOR"] {
            let sql = chain(op, 5_000);
            let statements = parse(&sql, 10_000, 0).unwrap();
            assert!(depth(&statements[0]) < 20, "{op}: {}", depth(&statements[0]));
            assert_eq!(statements[0].to_string(), sql, "terms keep their order");
        }
        // A short chain is left as parsed.
        let short = parse(&chain("OR", 3), 6, 0).unwrap();
        let Statement::Query(q) = &short[0] else { panic!() };
        let SetExpr::Select(s) = q.body.as_ref() else { panic!() };
        assert!(
            matches!(&s.projection[0], sqlparser::ast::SelectItem::UnnamedExpr(Expr::BinaryOp { left, .. }) if matches!(left.as_ref(), Expr::BinaryOp { .. }))
        );
    }

    #[test]
    fn deep_expressions_get_1436_and_deep_subqueries_1473() {
        let plus = |n: usize| format!("SELECT {}", vec!["1"; n].join("+"));
        assert!(parse(&plus(1_000), 999, 0).is_ok());
        assert_eq!(parse(&plus(MAX_EXPRESSION_DEPTH + 10), MAX_EXPRESSION_DEPTH + 9, 0).unwrap_err().code, 1436);
        assert_eq!(parse(&plus(200_000), 199_999, 0).unwrap_err().code, 1436);
        // A syntax error at the end of a long chain: the parser drops the partial tree.
        assert_eq!(parse(&format!("{} +", plus(200_000)), 200_000, 0).unwrap_err().code, 1064);
        let parens = |n: usize| format!("SELECT {}1{}", "(".repeat(n), ")".repeat(n));
        assert!(parse(&parens(500), 0, 0).is_ok());
        assert_eq!(parse(&parens(MAX_EXPRESSION_DEPTH + 100), 0, 0).unwrap_err().code, 1436);
        assert_eq!(parse(&plus(2), MAX_STATEMENT_OPERATORS + 1, 0).unwrap_err().code, 1436);
        // Chains the lexer counts as operators that are not binary operators.
        let casts = |n: usize| format!("SELECT 1{}", "::INT".repeat(n));
        assert!(parse(&casts(100), 200, 0).is_ok());
        assert_eq!(parse(&casts(200_000), 400_000, 0).unwrap_err().code, 1436);
        let unions = |n: usize| format!("SELECT 1{}", " UNION SELECT 1".repeat(n));
        assert!(parse(&unions(MAX_SET_OPERATIONS), MAX_SET_OPERATIONS, 0).is_ok());
        assert_eq!(parse(&unions(100_000), 100_000, 0).unwrap_err().code, 1436);
        assert_eq!(parse("SELECT 1 DIV 1", 1, MAX_EXPRESSION_DEPTH + 1).unwrap_err().code, 1436);
        let nested = |n: usize| format!("SELECT {}1{}", "(SELECT ".repeat(n), ")".repeat(n));
        assert!(parse(&nested(MAX_SELECT_NESTING), 0, 0).is_ok());
        assert_eq!(parse(&nested(MAX_SELECT_NESTING + 1), 0, 0).unwrap_err().code, 1473);
    }
}
