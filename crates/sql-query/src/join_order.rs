//! Join order: which table a block of inner joins reads first, second, and so on.
//!
//! The executor joins with nested loops in the block's source order (`query::join_level`),
//! testing each WHERE conjunct as soon as the tables it reads are read
//! (`Block::level_filters`). In the order the query names its tables, a join whose
//! conditions link them in another order reads a cross product before any condition can
//! apply: a 20-table join of 10-row tables, named out of order, never ends. So a block of
//! three or more tables joined only by inner joins (`FROM a, b, c`, `JOIN ... ON`, `CROSS
//! JOIN`) is planned once in the written order, to bind its conditions, and again in the
//! order [`choose`] picks, greedily:
//!
//! 1. first the table with the fewest rows expected after its own conditions (a condition
//!    on it alone divides its rows by ten; an equality with a constant on its whole primary
//!    key leaves one);
//! 2. then, again and again, among the tables a condition links to those already placed,
//!    the one with the fewest rows expected; a table nothing links is taken last, smallest
//!    first.
//!
//! `ON` conditions of inner joins become WHERE conjuncts ([`flatten`]), which is the same
//! query, and so are parenthesized joins of inner joins. A RIGHT JOIN is read as the LEFT
//! JOIN with its sides swapped ([`right_joins_as_left`]). A block with an outer join,
//! `USING`, `NATURAL` or `STRAIGHT_JOIN` keeps its written order. `SELECT *` lists columns in the written order whatever the order of reading
//! (`query::plan_block`); rows come out in the order of reading, which SQL leaves open
//! without ORDER BY.

use sqlparser::ast::{self, JoinConstraint, JoinOperator, TableWithJoins};

use crate::expr::Expr;
use crate::query::{Block, JoinKind, SourceData};
use quill_sql_context::catalog::Catalog;

/// Fewest tables a block has for its order to be chosen: two tables are joined well in
/// either order (the inner one through its key, or a hash join).
pub const JOIN_ORDER_TABLES_MIN: usize = 3;

/// Rows a derived table is guessed to have (its size is unknown before it runs).
const DERIVED_ROWS_GUESS: f64 = 1000.0;

/// The block with each `a RIGHT JOIN b ON c` written as `b LEFT JOIN a ON c`, which is the
/// same join (when `a` is itself a join, `b LEFT JOIN (a) ON c`), and each table's place in
/// the order `SELECT *` lists them: as written, but for `RIGHT JOIN ... USING`, whose right
/// side MySQL lists first; `None` when the block has no RIGHT JOIN.
#[must_use]
pub fn right_joins_as_left(s: &ast::Select) -> Option<(ast::Select, Vec<usize>)> {
    if !s.from.iter().any(has_right_join) {
        return None;
    }
    let mut from = Vec::with_capacity(s.from.len());
    let mut listed = Vec::new();
    for twj in &s.from {
        let (rewritten, shown) = list_as_left(twj);
        from.push(rewritten);
        listed.extend(shown);
    }
    // Each table of the rewritten FROM, in reading order: its place in `listed`.
    let mut reading = Vec::new();
    for twj in &from {
        leaves(twj, &mut reading);
    }
    let written = reading.iter().map(|name| listed.iter().position(|l| l == name).expect("a rewrite keeps every table")).collect();
    Some((ast::Select { from, ..s.clone() }, written))
}

fn has_right_join(twj: &TableWithJoins) -> bool {
    let nested = |tf: &ast::TableFactor| matches!(tf, ast::TableFactor::NestedJoin { table_with_joins, .. } if has_right_join(table_with_joins));
    nested(&twj.relation) || twj.joins.iter().any(|j| matches!(j.join_operator, JoinOperator::RightOuter(_) | JoinOperator::Right(_)) || nested(&j.relation))
}

/// One FROM item with its RIGHT JOINs made LEFT JOINs, and its tables (by their text) in
/// the order `SELECT *` lists them.
fn list_as_left(twj: &TableWithJoins) -> (TableWithJoins, Vec<String>) {
    let (relation, mut shown) = operand_as_left(&twj.relation);
    let mut acc = TableWithJoins { relation, joins: Vec::new() };
    for j in &twj.joins {
        let (relation, right_shown) = operand_as_left(&j.relation);
        match &j.join_operator {
            JoinOperator::RightOuter(c) | JoinOperator::Right(c) => {
                let left = if acc.joins.is_empty() { acc.relation } else { ast::TableFactor::NestedJoin { table_with_joins: Box::new(acc), alias: None } };
                acc = TableWithJoins { relation, joins: vec![ast::Join { relation: left, global: false, join_operator: JoinOperator::LeftOuter(c.clone()) }] };
                // With USING or NATURAL, MySQL lists the right side's columns first.
                if matches!(c, JoinConstraint::Using(_) | JoinConstraint::Natural) {
                    shown.splice(0..0, right_shown);
                } else {
                    shown.extend(right_shown);
                }
            }
            _ => {
                acc.joins.push(ast::Join { relation, ..j.clone() });
                shown.extend(right_shown);
            }
        }
    }
    (acc, shown)
}

fn operand_as_left(tf: &ast::TableFactor) -> (ast::TableFactor, Vec<String>) {
    match tf {
        ast::TableFactor::NestedJoin { table_with_joins, alias } => {
            let (inner, shown) = list_as_left(table_with_joins);
            (ast::TableFactor::NestedJoin { table_with_joins: Box::new(inner), alias: alias.clone() }, shown)
        }
        other => (other.clone(), vec![other.to_string()]),
    }
}

/// The tables of a FROM item (by their text) in reading order.
fn leaves(twj: &TableWithJoins, out: &mut Vec<String>) {
    for tf in std::iter::once(&twj.relation).chain(twj.joins.iter().map(|j| &j.relation)) {
        match tf {
            ast::TableFactor::NestedJoin { table_with_joins, .. } => leaves(table_with_joins, out),
            other => out.push(other.to_string()),
        }
    }
}

/// The block's inner joins as a list of tables and their ON conditions as WHERE conjuncts,
/// when the block may be reordered (module doc); `None` otherwise. A parenthesized join of
/// inner joins is the same list.
#[must_use]
pub fn flatten(s: &ast::Select) -> Option<ast::Select> {
    let mut relations = Vec::new();
    let mut conditions: Vec<ast::Expr> = s.selection.iter().cloned().collect();
    for twj in &s.from {
        if !inner_joins(twj, &mut relations, &mut conditions) {
            return None;
        }
    }
    if relations.len() < JOIN_ORDER_TABLES_MIN {
        return None;
    }
    let selection = conditions.into_iter().reduce(|a, b| ast::Expr::BinaryOp { left: Box::new(a), op: ast::BinaryOperator::And, right: Box::new(b) });
    Some(ast::Select { from: relations, selection, ..s.clone() })
}

/// Adds one FROM item's tables to `relations` and its ON conditions to `conditions`; false
/// when it has a join other than an inner one with ON or nothing.
fn inner_joins(twj: &TableWithJoins, relations: &mut Vec<TableWithJoins>, conditions: &mut Vec<ast::Expr>) -> bool {
    if !inner_operand(&twj.relation, relations, conditions) {
        return false;
    }
    for j in &twj.joins {
        match &j.join_operator {
            JoinOperator::Inner(c) | JoinOperator::Join(c) | JoinOperator::CrossJoin(c) => match c {
                JoinConstraint::On(e) => conditions.push(ast::Expr::Nested(Box::new(e.clone()))),
                JoinConstraint::None => {}
                JoinConstraint::Using(_) | JoinConstraint::Natural => return false,
            },
            _ => return false,
        }
        if !inner_operand(&j.relation, relations, conditions) {
            return false;
        }
    }
    true
}

fn inner_operand(tf: &ast::TableFactor, relations: &mut Vec<TableWithJoins>, conditions: &mut Vec<ast::Expr>) -> bool {
    match tf {
        ast::TableFactor::NestedJoin { table_with_joins, alias: None } => inner_joins(table_with_joins, relations, conditions),
        ast::TableFactor::NestedJoin { .. } => false,
        other => {
            relations.push(TableWithJoins { relation: other.clone(), joins: Vec::new() });
            true
        }
    }
}

/// `s` (a [`flatten`]ed block) with its tables in `order` (positions into its FROM list).
#[must_use]
pub fn permute(s: &ast::Select, order: &[usize]) -> ast::Select {
    ast::Select { from: order.iter().map(|&i| s.from[i].clone()).collect(), ..s.clone() }
}

/// One WHERE conjunct: the sources it reads.
struct Conjunct {
    sources: Vec<usize>,
}

/// The order to read `b`'s sources in (positions into `b.sources`), or `None` to keep it.
#[must_use]
pub fn choose(b: &Block, catalog: &Catalog) -> Option<Vec<usize>> {
    let n = b.sources.len();
    if n < JOIN_ORDER_TABLES_MIN || b.sources.iter().any(|s| s.kind != JoinKind::Inner) {
        return None;
    }
    let source_of = |column: usize| b.sources.iter().position(|s| (s.offset..s.offset + s.width).contains(&column));
    let mut conjuncts = Vec::new();
    for e in b.filter.iter().chain(b.level_filters.iter().flatten()).flat_map(Expr::conjuncts) {
        let mut sources: Vec<usize> = Vec::new();
        e.walk(&mut |x| {
            if let Expr::Column(c) = x
                && let Some(s) = source_of(*c)
                && !sources.contains(&s)
            {
                sources.push(s);
            }
        });
        conjuncts.push(Conjunct { sources });
    }
    // Rows each source is expected to give, after the conditions on it alone.
    let expected: Vec<f64> = (0..n)
        .map(|i| {
            let rows = match &b.sources[i].data {
                SourceData::Table { db, name, .. } => catalog.table(db, name).map_or(DERIVED_ROWS_GUESS, |t| t.data.statistics().rows as f64),
                _ => DERIVED_ROWS_GUESS,
            };
            let own = conjuncts.iter().filter(|c| c.sources == [i]).count();
            let by_key = matches!(b.sources[i].access, crate::query::Access::PkPoint(_));
            if by_key { 1.0 } else { (rows / 10f64.powi(i32::try_from(own).unwrap_or(i32::MAX))).max(1.0) }
        })
        .collect();
    let mut placed: Vec<usize> = Vec::with_capacity(n);
    let fewest = |candidates: &mut dyn Iterator<Item = usize>| candidates.min_by(|&a, &c| expected[a].total_cmp(&expected[c]).then(a.cmp(&c)));
    while placed.len() < n {
        let remaining = || (0..n).filter(|i| !placed.contains(i));
        let linked =
            |j: &usize| conjuncts.iter().any(|c| c.sources.len() >= 2 && c.sources.contains(j) && c.sources.iter().all(|s| s == j || placed.contains(s)));
        let next = if placed.is_empty() { None } else { fewest(&mut remaining().filter(linked)) };
        let next = next.or_else(|| fewest(&mut remaining())).expect("a source remains");
        placed.push(next);
    }
    (placed.iter().enumerate().any(|(i, &p)| i != p)).then_some(placed)
}
