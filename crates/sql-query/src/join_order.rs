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
//! query. A RIGHT JOIN is read as the LEFT JOIN with its tables swapped
//! ([`right_joins_as_left`]). A block with an outer join, `USING`, `NATURAL` or `STRAIGHT_JOIN` keeps its written
//! order. `SELECT *` lists columns in the written order whatever the order of reading
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
/// same join, and each table's place in the order `SELECT *` lists them: as written, but for
/// `RIGHT JOIN ... USING`, whose right table MySQL lists first; `None` when the block has no
/// RIGHT JOIN.
///
/// # Errors
/// A RIGHT JOIN after another join of its FROM item (`a JOIN b RIGHT JOIN c`), whose left
/// side is a join: that would need a parenthesized join as the inner side, which the
/// executor's chain of joined tables cannot hold.
pub fn right_joins_as_left(s: &ast::Select) -> quill_sql_types::error::Result<Option<(ast::Select, Vec<usize>)>> {
    let is_right = |j: &ast::Join| matches!(j.join_operator, JoinOperator::RightOuter(_) | JoinOperator::Right(_));
    if !s.from.iter().any(|t| t.joins.iter().any(is_right)) {
        return Ok(None);
    }
    let mut from = Vec::with_capacity(s.from.len());
    let mut written = Vec::new();
    for twj in &s.from {
        let base = written.len();
        written.extend(base..=base + twj.joins.len());
        if twj.joins.iter().skip(1).any(is_right) {
            return Err(quill_sql_types::error::SqlError::unsupported("RIGHT JOIN after another join in one FROM item (write it as a LEFT JOIN)"));
        }
        match twj.joins.first() {
            Some(first) if is_right(first) => {
                let (JoinOperator::RightOuter(c) | JoinOperator::Right(c)) = &first.join_operator else { unreachable!("matched above") };
                let mut joins = vec![ast::Join { relation: twj.relation.clone(), global: false, join_operator: JoinOperator::LeftOuter(c.clone()) }];
                joins.extend(twj.joins[1..].iter().cloned());
                from.push(TableWithJoins { relation: first.relation.clone(), joins });
                // With USING, MySQL lists the right table's columns first too.
                if !matches!(c, JoinConstraint::Using(_)) {
                    written.swap(base, base + 1);
                }
            }
            _ => from.push(twj.clone()),
        }
    }
    Ok(Some((ast::Select { from, ..s.clone() }, written)))
}

/// The block's inner joins as a list of tables and their ON conditions as WHERE conjuncts,
/// when the block may be reordered (module doc); `None` otherwise.
#[must_use]
pub fn flatten(s: &ast::Select) -> Option<ast::Select> {
    let tables: usize = s.from.iter().map(|t| 1 + t.joins.len()).sum();
    if tables < JOIN_ORDER_TABLES_MIN {
        return None;
    }
    let mut relations = Vec::new();
    let mut conditions: Vec<ast::Expr> = s.selection.iter().cloned().collect();
    for twj in &s.from {
        relations.push(TableWithJoins { relation: twj.relation.clone(), joins: Vec::new() });
        for j in &twj.joins {
            match &j.join_operator {
                JoinOperator::Inner(c) | JoinOperator::Join(c) | JoinOperator::CrossJoin(c) => match c {
                    JoinConstraint::On(e) => conditions.push(ast::Expr::Nested(Box::new(e.clone()))),
                    JoinConstraint::None => {}
                    JoinConstraint::Using(_) | JoinConstraint::Natural => return None,
                },
                _ => return None,
            }
            relations.push(TableWithJoins { relation: j.relation.clone(), joins: Vec::new() });
        }
    }
    let selection = conditions.into_iter().reduce(|a, b| ast::Expr::BinaryOp { left: Box::new(a), op: ast::BinaryOperator::And, right: Box::new(b) });
    Some(ast::Select { from: relations, selection, ..s.clone() })
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
