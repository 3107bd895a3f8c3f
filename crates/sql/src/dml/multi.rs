//! Multi-table UPDATE and DELETE: `UPDATE t1 JOIN t2 ON ... SET t1.a = t2.b`, `UPDATE t1, t2
//! SET ...`, `DELETE t1, t2 FROM t1 JOIN t2 ...` and `DELETE FROM t1 USING t1 JOIN t2 ...`.
//!
//! The statement's join runs first, whole, as a locking SELECT over the same FROM and WHERE
//! (the planner's joins, every join form), whose select list is each target table's columns
//! and, for UPDATE, each assignment's value: MySQL evaluates a multi-table UPDATE's
//! assignments on the joined row, in no order it promises. Then each target row is written
//! once, by its primary key, however many joined rows matched it (the first one's values),
//! through the single-table paths (`update_row`, `delete_row`), so foreign keys, ON UPDATE
//! CURRENT_TIMESTAMP, undo and the binary log behave as for one table.
//!
//! Invariants: a target is a base table of the FROM clause with a primary key (a table
//! without one is refused: its rows have no key a joined row can name); ORDER BY and LIMIT
//! are refused, as MySQL refuses them (1221 for UPDATE; a syntax error for DELETE).

use std::collections::HashSet;

use quill_storage::{ReadView, Row};
use sqlparser::ast;

use super::{DmlCx, DmlResult, update_row, with_table, write_target};
use crate::catalog::Catalog;
use crate::error::{Result, SqlError, codes};
use crate::query::{self, Env};

/// One table of the FROM clause: the name the statement calls it by, and what it is.
struct Named {
    alias: String,
    db: String,
    name: String,
    /// Whether `alias` is an alias (`t1 AS a`) rather than the table's own name.
    aliased: bool,
}

/// The base tables of a FROM clause, in the order written.
fn tables_of(from: &[ast::TableWithJoins], cx: &DmlCx<'_>) -> Result<Vec<Named>> {
    fn factor(tf: &ast::TableFactor, cx: &DmlCx<'_>, out: &mut Vec<Named>) -> Result<()> {
        match tf {
            ast::TableFactor::Table { name, alias, .. } => {
                let (db, t) = query::resolve_table_name(cx.info, name)?;
                let aliased = alias.is_some();
                let alias = alias.as_ref().map_or(t.clone(), |a| a.name.value.clone());
                out.push(Named { alias, db, name: t, aliased });
            }
            ast::TableFactor::NestedJoin { table_with_joins, .. } => list(table_with_joins, cx, out)?,
            _ => {}
        }
        Ok(())
    }
    fn list(twj: &ast::TableWithJoins, cx: &DmlCx<'_>, out: &mut Vec<Named>) -> Result<()> {
        factor(&twj.relation, cx, out)?;
        for j in &twj.joins {
            factor(&j.relation, cx, out)?;
        }
        Ok(())
    }
    let mut out = Vec::new();
    for twj in from {
        list(twj, cx, &mut out)?;
    }
    Ok(out)
}

/// A target of the statement: a FROM table, the privilege it needs, and its place among
/// the joined row's columns once the join ran.
struct Target<'c> {
    table: &'c crate::catalog::TableMeta,
    alias: String,
    /// Where its columns start in the joined SELECT's rows.
    offset: usize,
}

fn target<'c>(catalog: &'c Catalog, cx: &DmlCx<'_>, named: &Named, statement: &str, needed: crate::accounts::Privs) -> Result<Target<'c>> {
    let table = write_target(catalog, &named.db, &named.name, statement)?;
    cx.info.require_table(&named.db, &named.name, needed)?;
    if !table.data.has_primary_key() {
        return Err(SqlError::unsupported(format!("multi-table {statement} of a table without a primary key ('{}')", named.name)));
    }
    Ok(Target { table, alias: named.alias.clone(), offset: 0 })
}

/// The joined SELECT: `SELECT <items> FROM <from> WHERE <selection>`.
fn joined_select(items: Vec<ast::SelectItem>, from: &[ast::TableWithJoins], selection: Option<&ast::Expr>) -> ast::Query {
    let template = sqlparser::parser::Parser::parse_sql(&crate::dialect::QuillDialect::default(), "SELECT 1");
    let Ok(mut statements) = template else { unreachable!("SELECT 1 parses") };
    let Some(ast::Statement::Query(mut q)) = statements.pop() else { unreachable!("SELECT 1 is a query") };
    let ast::SetExpr::Select(select) = q.body.as_mut() else { unreachable!("SELECT 1 is a select") };
    select.projection = items;
    select.from = from.to_vec();
    select.selection = selection.cloned();
    *q
}

/// Runs the joined SELECT, locking every row it reads (the targets' and the others').
fn run_join(catalog: &Catalog, cx: &DmlCx<'_>, q: &ast::Query) -> Result<Vec<Row>> {
    let e = Env { lock: Some(cx.lock), ..super::env(catalog, cx) };
    let (plan, _) = query::plan_query(&e, q, &[])?;
    Ok(query::run_select(&plan, &e, None)?.rows)
}

fn wrong_usage(statement: &str, clause: &str) -> SqlError {
    SqlError::new(codes::ER_WRONG_USAGE, format!("Incorrect usage of {statement} and {clause}"))
}

/// Multi-table UPDATE (module doc).
///
/// # Errors
/// As a single-table UPDATE; 1221 with ORDER BY or LIMIT; 1052 / 1054 for an assignment's
/// column that names no table or two.
pub fn update(catalog: &Catalog, cx: &mut DmlCx<'_>, stmt: &ast::Update) -> Result<DmlResult> {
    if !stmt.order_by.is_empty() {
        return Err(wrong_usage("UPDATE", "ORDER BY"));
    }
    if stmt.limit.is_some() {
        return Err(wrong_usage("UPDATE", "LIMIT"));
    }
    let from = std::slice::from_ref(&stmt.table);
    let named = tables_of(from, cx)?;
    // Each assignment: its target (by position in `targets`) and column.
    let mut targets: Vec<Target<'_>> = Vec::new();
    let mut assigns: Vec<(usize, usize)> = Vec::new();
    for a in &stmt.assignments {
        let ast::AssignmentTarget::ColumnName(n) = &a.target else {
            return Err(SqlError::unsupported("tuple assignment"));
        };
        let parts = query::object_name_parts(n);
        let (qualifier, column) = match parts.as_slice() {
            [c] => (None, c.clone()),
            [t, c] => (Some((None, t.clone())), c.clone()),
            [d, t, c] => (Some((Some(d.clone()), t.clone())), c.clone()),
            _ => return Err(SqlError::parse(&n.to_string())),
        };
        let candidates: Vec<&Named> = named
            .iter()
            .filter(|t| match &qualifier {
                None => catalog.table(&t.db, &t.name).is_ok_and(|m| m.column_index(&column).is_some()),
                Some((None, q)) => t.alias.eq_ignore_ascii_case(q),
                Some((Some(d), q)) => !t.aliased && t.db.eq_ignore_ascii_case(d) && t.name.eq_ignore_ascii_case(q),
            })
            .collect();
        let shown = parts.join(".");
        let t = match candidates.as_slice() {
            [one] => *one,
            [] => return Err(SqlError::bad_field(&shown, "field list")),
            _ => return Err(SqlError::new(codes::ER_NON_UNIQ_ERROR, format!("Column '{shown}' in field list is ambiguous"))),
        };
        let at = match targets.iter().position(|x| x.alias == t.alias) {
            Some(at) => at,
            None => {
                targets.push(target(catalog, cx, t, "UPDATE", crate::accounts::UPDATE)?);
                targets.len() - 1
            }
        };
        let col = targets[at].table.column_index(&column).ok_or_else(|| SqlError::bad_field(&shown, "field list"))?;
        if targets[at].table.columns[col].generated.is_some() {
            return Err(super::generated_given(targets[at].table, col));
        }
        assigns.push((at, col));
    }
    // The select list: each target's columns, then each assignment's value.
    let (mut items, values_at) = target_columns(&mut targets);
    items.extend(stmt.assignments.iter().map(|a| ast::SelectItem::UnnamedExpr(a.value.clone())));
    let rows = run_join(catalog, cx, &joined_select(items, from, stmt.selection.as_ref()))?;
    let mut matched = 0u64;
    let mut changed = 0u64;
    for (at, t) in targets.iter().enumerate() {
        let assigned: Vec<usize> = assigns.iter().filter(|(a, _)| *a == at).map(|(_, c)| *c).collect();
        let mut seen: HashSet<Vec<u8>> = HashSet::new();
        let (c, ch) = with_table(catalog, &t.table.db, &t.table.name, |catalog, meta, data| {
            let (mut matched, mut changed) = (0u64, 0u64);
            for (n, row) in rows.iter().enumerate() {
                let pk = data.primary_key(&row[t.offset..t.offset + meta.columns.len()].to_vec());
                if !seen.insert(pk.clone()) {
                    continue;
                }
                let Some(current) = data.get(&pk, &ReadView::current(cx.txn)).map(|r| Row::clone(&r)) else { continue };
                matched += 1;
                let mut new = current.clone();
                for (i, (a, col)) in assigns.iter().enumerate() {
                    if *a == at {
                        new[*col] = row[values_at + i].clone();
                    }
                }
                if update_row(catalog, cx, meta, data, n as u64 + 1, &pk, &current, new, &assigned)? {
                    changed += 1;
                }
            }
            Ok((matched, changed))
        })?;
        matched += c;
        changed += ch;
    }
    Ok(DmlResult {
        affected: if cx.found_rows { matched } else { changed },
        last_insert_id: None,
        last_auto_value: None,
        info: format!("Rows matched: {matched}  Changed: {changed}  Warnings: {}", cx.warnings.len()),
    })
}

/// Multi-table DELETE (module doc).
///
/// # Errors
/// As a single-table DELETE; 1109 for a target the FROM clause does not name; 1064 with
/// ORDER BY or LIMIT.
pub fn delete(catalog: &Catalog, cx: &mut DmlCx<'_>, stmt: &ast::Delete) -> Result<DmlResult> {
    // MySQL's grammar has no ORDER BY or LIMIT after a multi-table DELETE.
    if let Some(o) = stmt.order_by.first() {
        return Err(SqlError::parse(&format!("ORDER BY {o}")));
    }
    if let Some(l) = &stmt.limit {
        return Err(SqlError::parse(&format!("LIMIT {l}")));
    }
    let listed = match &stmt.from {
        ast::FromTable::WithFromKeyword(t) | ast::FromTable::WithoutKeyword(t) => t,
    };
    // `DELETE t1 FROM <join>` or `DELETE FROM t1 USING <join>`.
    let (names, from): (Vec<ast::ObjectName>, &[ast::TableWithJoins]) = match &stmt.using {
        Some(using) => (listed.iter().map(target_name).collect::<Result<_>>()?, using),
        None if stmt.tables.is_empty() => return Err(SqlError::unsupported("DELETE of a join without naming its targets")),
        None => (stmt.tables.clone(), listed),
    };
    let named = tables_of(from, cx)?;
    let mut targets: Vec<Target<'_>> = Vec::new();
    for n in &names {
        let parts = query::object_name_parts(n);
        let found = named.iter().find(|t| match parts.as_slice() {
            [a] => t.alias.eq_ignore_ascii_case(a),
            [d, a] => !t.aliased && t.db.eq_ignore_ascii_case(d) && t.name.eq_ignore_ascii_case(a),
            _ => false,
        });
        let Some(t) = found else {
            let shown = parts.last().cloned().unwrap_or_default();
            return Err(SqlError::new(codes::ER_UNKNOWN_TABLE, format!("Unknown table '{shown}' in MULTI DELETE")));
        };
        if !targets.iter().any(|x| x.alias == t.alias) {
            targets.push(target(catalog, cx, t, "DELETE", crate::accounts::DELETE)?);
        }
    }
    let (items, _) = target_columns(&mut targets);
    let rows = run_join(catalog, cx, &joined_select(items, from, stmt.selection.as_ref()))?;
    let mut affected = 0;
    for t in &targets {
        let mut seen: HashSet<Vec<u8>> = HashSet::new();
        affected += with_table(catalog, &t.table.db, &t.table.name, |catalog, meta, data| {
            let mut deleted = 0;
            for row in &rows {
                let found = row[t.offset..t.offset + meta.columns.len()].to_vec();
                let pk = data.primary_key(&found);
                if seen.insert(pk.clone()) && super::delete_row(catalog, cx, meta, data, &pk, &found)? {
                    deleted += 1;
                }
            }
            Ok(deleted)
        })?;
    }
    Ok(DmlResult { affected, last_insert_id: None, last_auto_value: None, info: String::new() })
}

/// A `DELETE FROM t1, t2 USING ...` target: a table's name (sqlparser reads it as a FROM item).
fn target_name(twj: &ast::TableWithJoins) -> Result<ast::ObjectName> {
    match &twj.relation {
        ast::TableFactor::Table { name, .. } if twj.joins.is_empty() => Ok(name.clone()),
        other => Err(SqlError::parse(&other.to_string())),
    }
}

/// The joined SELECT's list of every target's columns (`alias.*`), each target told where
/// its columns start; and where the list ends.
fn target_columns(targets: &mut [Target<'_>]) -> (Vec<ast::SelectItem>, usize) {
    let mut items = Vec::with_capacity(targets.len());
    let mut offset = 0;
    for t in targets {
        t.offset = offset;
        offset += t.table.columns.len();
        items.push(qualified_wildcard(&t.alias));
    }
    (items, offset)
}

fn qualified_wildcard(alias: &str) -> ast::SelectItem {
    let name = ast::ObjectName(vec![ast::ObjectNamePart::Identifier(ast::Ident::with_quote('`', alias))]);
    ast::SelectItem::QualifiedWildcard(ast::SelectItemQualifiedWildcardKind::ObjectName(name), ast::WildcardAdditionalOptions::default())
}
