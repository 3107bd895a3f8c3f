//! Common table expressions: `WITH [RECURSIVE] name [(columns)] AS (query), ... query`.
//!
//! A WITH clause opens a level of [`Ctes`] for the query it prefixes (and everything planned
//! inside it: subqueries, derived tables, other CTEs). A table name with no database that
//! matches a CTE visible there means the CTE, before any table of that name, as in MySQL.
//!
//! - A plain CTE is planned where it is referenced, like a derived table (each reference
//!   runs its query once per statement, as a materialized derived table does). Its query
//!   sees the CTEs defined before it in its own WITH, and those of enclosing levels.
//! - A recursive CTE (WITH RECURSIVE, and its query names itself) is a UNION of seed blocks,
//!   which do not name it, followed by recursive blocks, which do, once each, in FROM. It
//!   runs as MySQL's does ([`crate::query::PlanKind::Recursive`]): the seeds give the first
//!   rows; each round runs the recursive blocks over the rows the previous round added (the
//!   [`WorkTable`]), until a round adds none. With UNION DISTINCT a round keeps only rows
//!   not seen before. Rounds are bounded by `cte_max_recursion_depth` (error 3636), and the
//!   rows kept by `temptable_max_ram`, like any derived table.
//!
//! Column types come from the seeds, as MySQL's do; column names from the CTE's column list,
//! or else from the first seed's select list.

use std::sync::{Arc, Mutex};

use quill_storage::Row;
use sqlparser::ast::{self, SetExpr, SetOperator, SetQuantifier, TableFactor};
use sqlparser::ast::{Visit, Visitor};

use quill_sql_types::error::{Result, SqlError, codes};
use quill_sql_types::types::SqlType;

/// The rows the previous round of a recursive CTE added: what its recursive blocks read
/// where they name the CTE. Shared between the plan that fills it and the sources that read
/// it; lives for one statement.
pub type WorkTable = Arc<Mutex<Vec<Row>>>;

/// The CTEs visible at one point of a statement: a WITH clause's definitions and the levels
/// around it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Ctes<'a> {
    parent: Option<&'a Ctes<'a>>,
    defs: &'a [ast::Cte],
    /// The CTEs of `defs` that may name themselves (`WITH RECURSIVE`).
    recursive: bool,
    /// While a recursive CTE's recursive blocks are planned: its name reads this table.
    work: Option<&'a WorkRef>,
}

/// A recursive CTE's own name, inside its recursive blocks.
#[derive(Debug)]
pub struct WorkRef {
    pub name: String,
    pub columns: Vec<(String, SqlType)>,
    pub rows: WorkTable,
}

/// What a CTE name found.
pub enum Found<'a> {
    /// A definition, and the CTEs its query may name.
    Definition { cte: &'a ast::Cte, visible: Ctes<'a>, recursive: bool },
    /// The work table of the recursive CTE being planned.
    Work(&'a WorkRef),
}

impl<'a> Ctes<'a> {
    /// The level a WITH clause opens inside `parent`.
    ///
    /// # Errors
    /// 1066 when two CTEs of the clause share a name.
    pub fn open(parent: &'a Ctes<'a>, with: &'a ast::With) -> Result<Ctes<'a>> {
        for (i, cte) in with.cte_tables.iter().enumerate() {
            let name = &cte.alias.name.value;
            if with.cte_tables[..i].iter().any(|c| c.alias.name.value == *name) {
                return Err(SqlError::new(codes::ER_NONUNIQ_TABLE, format!("Not unique table/alias: '{name}'")));
            }
        }
        Ok(Ctes { parent: Some(parent), defs: &with.cte_tables, recursive: with.recursive, work: None })
    }

    /// A level where `work.name` reads the work table.
    #[must_use]
    pub fn with_work(parent: &'a Ctes<'a>, work: &'a WorkRef) -> Ctes<'a> {
        Ctes { parent: Some(parent), defs: &[], recursive: false, work: Some(work) }
    }

    /// The CTE a table name with no database means here, if any.
    #[must_use]
    pub fn find(&self, name: &str) -> Option<Found<'a>> {
        if let Some(work) = self.work
            && work.name == name
        {
            return Some(Found::Work(work));
        }
        if let Some(i) = self.defs.iter().rposition(|c| c.alias.name.value == name) {
            let cte = &self.defs[i];
            let recursive = self.recursive && names_itself(&cte.query, name);
            // Its query sees the definitions before it, and itself when it is recursive.
            let end = if recursive { i + 1 } else { i };
            let visible = Ctes { parent: self.parent, defs: &self.defs[..end], recursive: self.recursive, work: None };
            return Some(Found::Definition { cte, visible, recursive });
        }
        self.parent.and_then(|p| p.find(name))
    }
}

/// The blocks of a recursive CTE's query: seeds first, then the blocks that name it.
pub struct RecursiveParts<'q> {
    pub seeds: Vec<&'q SetExpr>,
    pub steps: Vec<&'q SetExpr>,
    /// UNION DISTINCT somewhere in the chain: rows already found are not added again.
    pub distinct: bool,
}

/// Splits a recursive CTE's query into its seeds and recursive blocks.
///
/// # Errors
/// 3573 when the query is not a UNION, 3574 when no seed comes first, 3577 when a recursive
/// block names the CTE more than once; 1235 for ORDER BY or LIMIT over the whole UNION.
pub fn recursive_parts<'q>(name: &str, q: &'q ast::Query) -> Result<RecursiveParts<'q>> {
    let not_union = || SqlError::new(codes::ER_CTE_RECURSIVE_REQUIRES_UNION, format!("Recursive Common Table Expression '{name}' should contain a UNION"));
    if q.order_by.is_some() || q.limit_clause.is_some() {
        return Err(SqlError::unsupported("ORDER BY / LIMIT over UNION in recursive Common Table Expression"));
    }
    let SetExpr::SetOperation { op: SetOperator::Union, .. } = q.body.as_ref() else { return Err(not_union()) };
    let mut blocks = Vec::new();
    let mut distinct = false;
    flatten_union(q.body.as_ref(), &mut blocks, &mut distinct);
    let mut parts = RecursiveParts { seeds: Vec::new(), steps: Vec::new(), distinct };
    for block in blocks {
        match references(block, name) {
            0 if parts.steps.is_empty() => parts.seeds.push(block),
            0 | 1 if !parts.seeds.is_empty() => parts.steps.push(block),
            0 | 1 => {
                return Err(SqlError::new(
                    codes::ER_CTE_RECURSIVE_REQUIRES_NONRECURSIVE_FIRST,
                    format!(
                        "Recursive Common Table Expression '{name}' should have one or more non-recursive query blocks followed by one or more recursive ones"
                    ),
                ));
            }
            _ => {
                return Err(SqlError::new(
                    codes::ER_CTE_RECURSIVE_REQUIRES_SINGLE_REFERENCE,
                    format!(
                        "In recursive query block of Recursive Common Table Expression '{name}', the recursive table must be referenced only once, and not in any subquery"
                    ),
                ));
            }
        }
    }
    Ok(parts)
}

fn flatten_union<'q>(e: &'q SetExpr, out: &mut Vec<&'q SetExpr>, distinct: &mut bool) {
    match e {
        SetExpr::SetOperation { op: SetOperator::Union, set_quantifier, left, right } => {
            *distinct |= !matches!(set_quantifier, SetQuantifier::All);
            flatten_union(left, out, distinct);
            flatten_union(right, out, distinct);
        }
        SetExpr::Query(q) if q.with.is_none() && q.order_by.is_none() && q.limit_clause.is_none() => flatten_union(&q.body, out, distinct),
        other => out.push(other),
    }
}

/// Whether `q` names `name` as a table anywhere (so a CTE of that name is recursive).
fn names_itself(q: &ast::Query, name: &str) -> bool {
    count_references(q, name) > 0
}

fn references(block: &SetExpr, name: &str) -> usize {
    let mut v = TableNames { name, found: 0 };
    let _ = block.visit(&mut v);
    v.found
}

fn count_references(q: &ast::Query, name: &str) -> usize {
    let mut v = TableNames { name, found: 0 };
    let _ = q.visit(&mut v);
    v.found
}

/// Counts the table factors named `name` (one part, no database).
struct TableNames<'n> {
    name: &'n str,
    found: usize,
}

impl Visitor for TableNames<'_> {
    type Break = ();

    fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> std::ops::ControlFlow<()> {
        if let TableFactor::Table { name, .. } = factor
            && let [part] = name.0.as_slice()
            && part.as_ident().is_some_and(|i| i.value == self.name)
        {
            self.found += 1;
        }
        std::ops::ControlFlow::Continue(())
    }
}

/// The names of a CTE's (or derived table's) columns: its column list when it has one,
/// which must match the query's width (1353), or else the query's own names.
///
/// # Errors
/// 1353 for a column list of the wrong length; 1060 for a name given twice.
pub fn column_names(cte: &ast::Cte, query_names: Vec<String>) -> Result<Vec<String>> {
    if cte.alias.columns.is_empty() {
        return Ok(query_names);
    }
    if cte.alias.columns.len() != query_names.len() {
        return Err(SqlError::new(
            codes::ER_VIEW_WRONG_LIST,
            "In definition of view, derived table or common table expression, SELECT list and column names list have different column counts",
        ));
    }
    let names: Vec<String> = cte.alias.columns.iter().map(|c| c.name.value.clone()).collect();
    for (i, n) in names.iter().enumerate() {
        if names[..i].iter().any(|m| m.eq_ignore_ascii_case(n)) {
            return Err(SqlError::new(codes::ER_DUP_FIELDNAME, format!("Duplicate column name '{n}'")));
        }
    }
    Ok(names)
}
