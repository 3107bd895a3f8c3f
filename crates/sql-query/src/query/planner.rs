//! The planner: from a parsed query to a [`SelectPlan`]. Names are bound against the
//! catalog snapshot (`bind`), each FROM item becomes a [`Source`] (a table, a derived table, a
//! CTE, a view or a system table), conditions are split between the sources they need, and
//! the join order and access paths are chosen (`join_order`, `access`). UNION and recursive
//! CTE columns get MySQL's aggregated types (`type_aggregation`).

use std::cell::RefCell;
use std::sync::Arc;

use quill_sql_context::session_info::SessionInfo;
use quill_sql_types::error::{Result, SqlError, codes};
use quill_sql_types::types::SqlType;
use quill_storage::{Row, ScanOrder, Value};
use sqlparser::ast::{self, GroupByExpr, JoinConstraint, JoinOperator, SelectItem, SetExpr, SetOperator, SetQuantifier, TableFactor};

use crate::bind::{Binder, Scope, ScopeColumn};
use crate::cte::{self, Ctes, WorkTable};
use crate::expr::{AggSpec, CmpOp, Expr};

use super::{
    Access, Block, Env, GroupClose, JoinKind, OutColumn, PlanKind, SelectPlan, SetOp, Source, SourceData,
    access::choose_access,
    executor::{key_order, order_matches},
    flags,
};

/// What one group of a GROUP BY costs beyond its first row and key, per accumulator and for
/// its index entry (estimated, for `tmp_memory`).
pub(super) const GROUP_OVERHEAD_BYTES: usize = 64;

/// Plan a query. Returns the plan and whether it refers to enclosing queries.
///
/// # Errors
/// Name resolution and unsupported-feature errors.
pub fn plan_query(env: &Env<'_>, q: &ast::Query, outer: &[&Scope]) -> Result<(SelectPlan, bool)> {
    if let Some(with) = &q.with {
        let ctes = Ctes::open(&env.ctes, with)?;
        return plan_query_body(&env.with_ctes(ctes), q, outer);
    }
    plan_query_body(env, q, outer)
}

/// [`plan_query`] once its WITH clause is in `env`.
pub(super) fn plan_query_body(env: &Env<'_>, q: &ast::Query, outer: &[&Scope]) -> Result<(SelectPlan, bool)> {
    let (limit, offset) = limit_offset(q)?;
    let binder_env = env;
    let lim =
        |e: &Option<ast::Expr>| -> Result<Option<Expr>> { e.as_ref().map(|e| Binder::new(binder_env, &Scope::default(), "limit clause").bind(e)).transpose() };
    let order: Vec<&ast::OrderByExpr> = match &q.order_by {
        Some(ob) => match &ob.kind {
            ast::OrderByKind::Expressions(v) => v.iter().collect(),
            ast::OrderByKind::All(_) => return Err(SqlError::unsupported("ORDER BY ALL")),
        },
        None => vec![],
    };
    match q.body.as_ref() {
        SetExpr::Select(s) => plan_block(env, s, &order, lim(&limit)?, lim(&offset)?, outer),
        SetExpr::Query(inner) if order.is_empty() && limit.is_none() => plan_query(env, inner, outer),
        SetExpr::SetOperation {
            op: op @ (SetOperator::Union | SetOperator::Intersect | SetOperator::Except | SetOperator::Minus),
            set_quantifier,
            left,
            right,
        } => {
            let all = matches!(set_quantifier, SetQuantifier::All);
            let op = match op {
                SetOperator::Union => SetOp::Union,
                SetOperator::Intersect => SetOp::Intersect,
                _ => SetOp::Except,
            };
            let (l, lc) = plan_set_expr(env, left, outer)?;
            let (r, rc) = plan_set_expr(env, right, outer)?;
            if l.columns.len() != r.columns.len() {
                return Err(SqlError::new(codes::ER_WRONG_NUMBER_OF_COLUMNS_IN_SELECT, "The used SELECT statements have a different number of columns"));
            }
            let columns: Vec<OutColumn> = l
                .columns
                .iter()
                .zip(&r.columns)
                .map(|(a, b)| OutColumn { ty: union_type(&a.ty, &b.ty), ..OutColumn::computed(&a.name, a.ty.clone()) })
                .collect();
            let mut order_by = Vec::new();
            for o in order {
                let asc = !matches!(o.options.sort, Some(ast::OrderBySort::Desc));
                let pos = match &o.expr {
                    ast::Expr::Value(v) => match &v.value {
                        ast::Value::Number(n, _) => n.parse::<usize>().ok().filter(|p| *p >= 1 && *p <= columns.len()).map(|p| p - 1),
                        _ => None,
                    },
                    ast::Expr::Identifier(id) => columns.iter().position(|c| c.name.eq_ignore_ascii_case(&id.value)),
                    _ => None,
                };
                let pos = pos.ok_or_else(|| SqlError::bad_field(&o.expr.to_string(), "order clause"))?;
                order_by.push((pos, asc));
            }
            Ok((
                SelectPlan {
                    columns,
                    kind: PlanKind::Union { op, left: Box::new(l), right: Box::new(r), all, order_by, limit: lim(&limit)?, offset: lim(&offset)? },
                },
                lc || rc,
            ))
        }
        SetExpr::Values(_) => Err(SqlError::unsupported("VALUES as a query")),
        other => Err(SqlError::unsupported(format!("query {other}"))),
    }
}

pub(super) fn plan_set_expr(env: &Env<'_>, e: &SetExpr, outer: &[&Scope]) -> Result<(SelectPlan, bool)> {
    match e {
        SetExpr::Select(s) => plan_block(env, s, &[], None, None, outer),
        SetExpr::Query(q) => plan_query(env, q, outer),
        SetExpr::SetOperation { .. } => {
            let q = ast::Query {
                with: None,
                body: Box::new(e.clone()),
                order_by: None,
                limit_clause: None,
                fetch: None,
                locks: vec![],
                for_clause: None,
                settings: None,
                format_clause: None,
                pipe_operators: vec![],
            };
            plan_query(env, &q, outer)
        }
        other => Err(SqlError::unsupported(format!("query {other}"))),
    }
}

/// The type of a UNION's (or a recursive CTE's) column from its blocks' column types:
/// MySQL's type aggregation (`type_aggregation`).
pub(super) fn union_type(a: &SqlType, b: &SqlType) -> SqlType {
    crate::type_aggregation::aggregate(&[a.clone(), b.clone()])
}

/// A UNION's rows made to fit the types its columns are announced with (a block's INT in a
/// DECIMAL column becomes a DECIMAL, a DATE in a DATETIME column a DATETIME), before they are
/// compared for DISTINCT and sent.
pub(super) fn conform_rows(rows: &mut [Row], columns: &[OutColumn]) {
    for row in rows {
        for (value, column) in row.iter_mut().zip(columns) {
            crate::type_aggregation::conform(value, &column.ty);
        }
    }
}

pub(super) fn limit_offset(q: &ast::Query) -> Result<(Option<ast::Expr>, Option<ast::Expr>)> {
    Ok(match &q.limit_clause {
        None => (None, None),
        Some(ast::LimitClause::LimitOffset { limit, offset, .. }) => (limit.clone(), offset.as_ref().map(|o| o.value.clone())),
        Some(ast::LimitClause::OffsetCommaLimit { offset, limit }) => (Some(limit.clone()), Some(offset.clone())),
    })
}

/// The parts of a dotted name, unquoted.
#[must_use]
pub fn object_name_parts(name: &ast::ObjectName) -> Vec<String> {
    name.0
        .iter()
        .map(|p| match p {
            ast::ObjectNamePart::Identifier(i) => i.value.clone(),
            other => other.to_string(),
        })
        .collect()
}

/// Split `db.table` / `table` into (database, table), defaulting to the session's.
///
/// # Errors
/// 1046 when no database is selected and none is named.
pub fn resolve_table_name(info: &SessionInfo, name: &ast::ObjectName) -> Result<(String, String)> {
    let parts = object_name_parts(name);
    match parts.as_slice() {
        [t] => Ok((info.db.clone().ok_or_else(SqlError::no_db)?, t.clone())),
        [d, t] => Ok((d.clone(), t.clone())),
        _ => Err(SqlError::parse(&name.to_string())),
    }
}

/// Add the columns of a catalog table to `scope`.
pub(super) fn add_table_source(env: &Env<'_>, db: &str, name: &str, alias: &str, scope: &mut Scope) -> Result<(SourceData, Vec<SqlType>)> {
    if db.eq_ignore_ascii_case("information_schema") {
        let (cols, rows) = env.system_tables.information_schema(env, name)?;
        let types: Vec<SqlType> = cols.iter().map(|c| c.ty.clone()).collect();
        for c in cols {
            scope.columns.push(ScopeColumn { db: "information_schema".into(), org_table: name.to_uppercase(), ..ScopeColumn::computed(alias, &c.name, c.ty) });
        }
        return Ok((SourceData::Rows(RefCell::new(Some(rows)), None), types));
    }
    if db.eq_ignore_ascii_case("performance_schema")
        && let Some(table) = env.system_tables.performance_schema(env, name)
    {
        let (cols, rows) = table?;
        let types: Vec<SqlType> = cols.iter().map(|c| c.ty.clone()).collect();
        for c in cols {
            scope.columns.push(ScopeColumn { db: "performance_schema".into(), org_table: name.to_lowercase(), ..ScopeColumn::computed(alias, &c.name, c.ty) });
        }
        return Ok((SourceData::Rows(RefCell::new(Some(rows)), None), types));
    }
    let t = env.catalog.table(db, name)?;
    // Every table a query reads, wherever the query is (SELECT, a subquery of SET, SHOW ...
    // WHERE, INSERT ... SELECT, EXPLAIN), needs SELECT (1142).
    env.info.require_table(db, name, quill_sql_context::accounts::SELECT)?;
    for (i, c) in t.columns.iter().enumerate() {
        let mut f = 0;
        if !c.nullable {
            f |= flags::NOT_NULL;
        }
        if t.primary.contains(&i) {
            f |= flags::PRI_KEY;
        }
        if c.auto_increment {
            f |= flags::AUTO_INCREMENT;
        }
        if t.indexes.iter().any(|ix| ix.unique && ix.columns.first() == Some(&i)) {
            f |= flags::UNIQUE_KEY;
        } else if t.indexes.iter().any(|ix| ix.columns.first() == Some(&i)) {
            f |= flags::MULTIPLE_KEY;
        }
        scope.columns.push(ScopeColumn {
            table: alias.to_owned(),
            db: db.to_owned(),
            org_table: name.to_owned(),
            name: c.name.clone(),
            ty: c.ty.clone(),
            nullable: c.nullable,
            hidden: false,
            flags: f,
        });
    }
    Ok((SourceData::Table { db: db.to_owned(), name: name.to_owned(), id: t.id }, t.columns.iter().map(|c| c.ty.clone()).collect()))
}

pub(super) fn plan_factor(env: &Env<'_>, tf: &TableFactor, scope: &mut Scope, outer: &[&Scope]) -> Result<(SourceData, Vec<SqlType>)> {
    match tf {
        TableFactor::Table { name, alias, .. } => {
            let cte = match name.0.as_slice() {
                [part] => part.as_ident().and_then(|i| env.ctes.find(&i.value)),
                _ => None,
            };
            let (db, t) = if cte.is_some() { (String::new(), object_name_parts(name).remove(0)) } else { resolve_table_name(env.info, name)? };
            let alias = alias.as_ref().map_or(t.clone(), |a| a.name.value.clone());
            if scope.columns.iter().any(|c| c.table == alias) {
                return Err(SqlError::new(codes::ER_NONUNIQ_TABLE, format!("Not unique table/alias: '{alias}'")));
            }
            match cte {
                Some(found) => add_cte_source(env, found, &alias, scope, outer),
                None => match env.catalog.view(&db, &t) {
                    Some(view) => add_view_source(env, view, &alias, scope),
                    None => add_table_source(env, &db, &t, &alias, scope),
                },
            }
        }
        TableFactor::Derived { subquery, alias, .. } => {
            let alias = alias
                .as_ref()
                .map(|a| a.name.value.clone())
                .ok_or_else(|| SqlError::new(codes::ER_DERIVED_MUST_HAVE_ALIAS, "Every derived table must have its own alias"))?;
            let (plan, _) = plan_query(env, subquery, outer)?;
            let types: Vec<SqlType> = plan.columns.iter().map(|c| c.ty.clone()).collect();
            for c in &plan.columns {
                scope.columns.push(ScopeColumn::computed(&alias, &c.name, c.ty.clone()));
            }
            Ok((SourceData::Rows(RefCell::new(None), Some(Box::new(plan))), types))
        }
        TableFactor::NestedJoin { .. } => unreachable!("plan_operand plans a parenthesized join's tables in place"),
        other => Err(SqlError::unsupported(format!("FROM {other}"))),
    }
}

/// Add a common table expression's columns to `scope`: its query planned like a derived
/// table's, or (inside a recursive CTE's own recursive blocks) the rows of its last round.
pub(super) fn add_cte_source(env: &Env<'_>, found: cte::Found<'_>, alias: &str, scope: &mut Scope, outer: &[&Scope]) -> Result<(SourceData, Vec<SqlType>)> {
    let (data, columns) = match found {
        cte::Found::Work(work) => (SourceData::Work(Arc::clone(&work.rows)), work.columns.clone()),
        cte::Found::Definition { cte, visible, recursive } => {
            let env = env.with_ctes(visible);
            let plan = if recursive { plan_recursive(&env, cte, outer)? } else { plan_query(&env, &cte.query, outer)?.0 };
            let names = cte::column_names(cte, plan.columns.iter().map(|c| c.name.clone()).collect())?;
            let columns = names.into_iter().zip(plan.columns.iter().map(|c| c.ty.clone())).collect();
            (SourceData::Rows(RefCell::new(None), Some(Box::new(plan))), columns)
        }
    };
    let types = columns.iter().map(|(_, ty): &(String, SqlType)| ty.clone()).collect();
    for (name, ty) in columns {
        scope.columns.push(ScopeColumn::computed(alias, &name, ty));
    }
    Ok((data, types))
}

/// Add a view's columns to `scope`: its query planned in its place, like a derived table's
/// (`views`). Reading a view needs SELECT on it.
pub(super) fn add_view_source(
    env: &Env<'_>,
    view: &quill_sql_context::view_meta::ViewMeta,
    alias: &str,
    scope: &mut Scope,
) -> Result<(SourceData, Vec<SqlType>)> {
    env.info.require_table(&view.db, &view.name, quill_sql_context::accounts::SELECT)?;
    let plan = crate::views::plan(view, env)?;
    let types = plan.columns.iter().map(|c| c.ty.clone()).collect();
    for c in &plan.columns {
        scope.columns.push(ScopeColumn { db: view.db.clone(), org_table: view.name.clone(), ..ScopeColumn::computed(alias, &c.name, c.ty.clone()) });
    }
    Ok((SourceData::Rows(RefCell::new(None), Some(Box::new(plan))), types))
}

/// Plan a recursive CTE (`cte` module doc): its seeds, then its recursive blocks with its
/// own name reading the work table.
pub(super) fn plan_recursive(env: &Env<'_>, cte: &ast::Cte, outer: &[&Scope]) -> Result<SelectPlan> {
    let name = &cte.alias.name.value;
    let parts = cte::recursive_parts(name, &cte.query)?;
    let seeds = parts.seeds.iter().map(|b| plan_set_expr(env, b, outer).map(|(p, _)| p)).collect::<Result<Vec<_>>>()?;
    let width = seeds[0].columns.len();
    if seeds.iter().any(|p| p.columns.len() != width) {
        return Err(SqlError::new(codes::ER_WRONG_NUMBER_OF_COLUMNS_IN_SELECT, "The used SELECT statements have a different number of columns"));
    }
    let mut columns = seeds[0].columns.clone();
    for seed in &seeds[1..] {
        for (c, other) in columns.iter_mut().zip(&seed.columns) {
            c.ty = union_type(&c.ty, &other.ty);
        }
    }
    let names = cte::column_names(cte, columns.iter().map(|c| c.name.clone()).collect())?;
    let work = cte::WorkRef { name: name.clone(), columns: names.into_iter().zip(columns.iter().map(|c| c.ty.clone())).collect(), rows: WorkTable::default() };
    let ctes = Ctes::with_work(&env.ctes, &work);
    let step_env = env.with_ctes(ctes);
    let mut steps = Vec::new();
    for block in parts.steps {
        let (plan, _) = plan_set_expr(&step_env, block, outer)?;
        if plan.columns.len() != width {
            return Err(SqlError::new(codes::ER_WRONG_NUMBER_OF_COLUMNS_IN_SELECT, "The used SELECT statements have a different number of columns"));
        }
        if plan_aggregates(&plan) {
            return Err(SqlError::new(
                codes::ER_CTE_RECURSIVE_FORBIDS_AGGREGATION,
                format!("Recursive Common Table Expression '{name}' can contain neither aggregation nor window functions in recursive query block"),
            ));
        }
        steps.push(plan);
    }
    Ok(SelectPlan { columns, kind: PlanKind::Recursive { seeds, steps, distinct: parts.distinct, work: Arc::clone(&work.rows) } })
}

/// Whether a recursive block groups (MySQL refuses aggregation there).
pub(super) fn plan_aggregates(plan: &SelectPlan) -> bool {
    match &plan.kind {
        PlanKind::Block(b) => b.grouped,
        _ => false,
    }
}

pub(super) fn plan_block(
    env: &Env<'_>,
    s: &ast::Select,
    order: &[&ast::OrderByExpr],
    limit: Option<Expr>,
    offset: Option<Expr>,
    outer: &[&Scope],
) -> Result<(SelectPlan, bool)> {
    if let Some((as_left, written)) = crate::join_order::right_joins_as_left(s) {
        return plan_block_in(env, &as_left, order, limit, offset, outer, Some(&written));
    }
    // Three or more tables joined by inner joins: planned in the written order to bind the
    // conditions, then again in the order `join_order` picks, if another.
    if let Some(flat) = crate::join_order::flatten(s) {
        let (plan, correlated) = plan_block_in(env, &flat, order, limit.clone(), offset.clone(), outer, None)?;
        if let PlanKind::Block(b) = &plan.kind
            && let Some(reading) = crate::join_order::choose(b, env.catalog)
        {
            return plan_block_in(env, &crate::join_order::permute(&flat, &reading), order, limit, offset, outer, Some(&reading));
        }
        return Ok((plan, correlated));
    }
    plan_block_in(env, s, order, limit, offset, outer, None)
}

/// One join of a FROM list, planned: its right side's tables are the sources `start..=end`
/// (more than one for a parenthesized join), and its left side's columns start at
/// `left_start` (the first table of the list it is in).
struct PendingJoin {
    start: usize,
    end: usize,
    left_start: usize,
    kind: JoinKind,
    on: Option<ast::Expr>,
    using: Using,
}

/// The columns a join equates by name.
enum Using {
    Names(Vec<String>),
    Natural,
}

/// Plans one FROM item's tables as sources, in the order written: a parenthesized join's
/// tables in its place, as a group of levels (`Source::group_end`, `GroupClose`). Each join's
/// condition waits in `pending` until the whole scope is known.
fn plan_join_list(
    env: &Env<'_>,
    twj: &ast::TableWithJoins,
    scope: &mut Scope,
    sources: &mut Vec<Source>,
    pending: &mut Vec<PendingJoin>,
    outer: &[&Scope],
) -> Result<()> {
    let left_start = scope.columns.len();
    plan_operand(env, &twj.relation, scope, sources, pending, outer)?;
    for j in &twj.joins {
        let start = sources.len();
        plan_operand(env, &j.relation, scope, sources, pending, outer)?;
        let end = sources.len() - 1;
        let (kind, constraint) = match &j.join_operator {
            JoinOperator::Inner(c) | JoinOperator::Join(c) | JoinOperator::CrossJoin(c) | JoinOperator::StraightJoin(c) => (JoinKind::Inner, c),
            JoinOperator::LeftOuter(c) | JoinOperator::Left(c) => (JoinKind::Left, c),
            JoinOperator::RightOuter(_) | JoinOperator::Right(_) => unreachable!("join_order::right_joins_as_left made it a LEFT JOIN"),
            other => return Err(SqlError::unsupported(format!("join {other:?}"))),
        };
        let (on, using) = match constraint {
            JoinConstraint::On(e) => (Some(e.clone()), Using::Names(Vec::new())),
            JoinConstraint::Using(cols) => (None, Using::Names(cols.iter().map(|c| object_name_parts(c).last().cloned().unwrap_or_default()).collect())),
            JoinConstraint::Natural => (None, Using::Natural),
            JoinConstraint::None => (None, Using::Names(Vec::new())),
        };
        if kind == JoinKind::Left {
            sources[start].kind = JoinKind::Left;
            sources[start].group_end = (end > start).then_some(end);
        }
        pending.push(PendingJoin { start, end, left_start, kind, on, using });
    }
    Ok(())
}

/// Plans one side of a join: a parenthesized join's tables, or one table.
fn plan_operand(env: &Env<'_>, tf: &TableFactor, scope: &mut Scope, sources: &mut Vec<Source>, pending: &mut Vec<PendingJoin>, outer: &[&Scope]) -> Result<()> {
    if let TableFactor::NestedJoin { table_with_joins, alias } = tf {
        if let Some(alias) = alias {
            return Err(SqlError::parse(&alias.to_string()));
        }
        return plan_join_list(env, table_with_joins, scope, sources, pending, outer);
    }
    let offset = scope.columns.len();
    let (data, types) = plan_factor(env, tf, scope, outer)?;
    let width = scope.columns.len() - offset;
    sources.push(Source::new(data, offset, width, JoinKind::Inner, types));
    Ok(())
}

/// [`plan_block`] of `s` as its FROM list has it; `written` is, when that list was put in
/// another order for reading, each table's place in the order the query wrote (what `*`
/// lists columns in).
pub(super) fn plan_block_in(
    env: &Env<'_>,
    s: &ast::Select,
    order: &[&ast::OrderByExpr],
    limit: Option<Expr>,
    offset: Option<Expr>,
    outer: &[&Scope],
    written: Option<&[usize]>,
) -> Result<(SelectPlan, bool)> {
    let mut scope = Scope::default();
    let mut sources: Vec<Source> = Vec::new();
    let mut pending: Vec<PendingJoin> = Vec::new();
    let from_dual = s.from.len() == 1
        && s.from[0].joins.is_empty()
        && matches!(&s.from[0].relation, TableFactor::Table { name, alias: None, .. } if name.0.len() == 1 && name.to_string().eq_ignore_ascii_case("DUAL"));
    for twj in s.from.iter().filter(|_| !from_dual) {
        plan_join_list(env, twj, &mut scope, &mut sources, &mut pending, outer)?;
    }
    // Bind ON conditions now that the whole scope is known, each against the columns up to
    // its join's last table (MySQL rejects forward references).
    // The columns USING and NATURAL joined, which `SELECT *` lists first: the last join's
    // first, each join's in the order of its left side.
    let mut coalesced: Vec<usize> = Vec::new();
    for join in pending {
        let left_end = sources[join.start].offset;
        let right = sources[join.start].offset..sources[join.end].offset + sources[join.end].width;
        let prefix = Scope { columns: scope.columns[..right.end].to_vec() };
        let mut cond: Option<Expr> = match &join.on {
            Some(e) => Some(Binder { outer, ..Binder::new(env, &prefix, "on clause") }.bind(e)?),
            None => None,
        };
        let visible = |c: &ScopeColumn| !c.hidden;
        let using = match join.using {
            Using::Names(names) => names,
            // NATURAL: the names both sides have, in the left side's order.
            Using::Natural => scope.columns[join.left_start..left_end]
                .iter()
                .filter(|l| visible(l) && scope.columns[right.clone()].iter().any(|r| visible(r) && r.name.eq_ignore_ascii_case(&l.name)))
                .map(|l| l.name.clone())
                .collect(),
        };
        let mut joined = Vec::new();
        for name in using {
            // The one column of that name on a side: a side that is itself a join may
            // have two (1052).
            let find = |range: std::ops::Range<usize>| -> Result<usize> {
                let mut named = range.filter(|&c| visible(&scope.columns[c]) && scope.columns[c].name.eq_ignore_ascii_case(&name));
                let found = named.next().ok_or_else(|| SqlError::bad_field(&name, "from clause"))?;
                match named.next() {
                    Some(_) => Err(SqlError::new(codes::ER_NON_UNIQ_ERROR, format!("Column '{name}' in from clause is ambiguous"))),
                    None => Ok(found),
                }
            };
            let r = find(right.clone())?;
            let l = find(join.left_start..left_end)?;
            scope.columns[r].hidden = true;
            joined.push(l);
            let coll = scope.columns[l].ty.collation();
            let eq = Expr::Cmp(CmpOp::Eq, Box::new(Expr::Column(l)), Box::new(Expr::Column(r)), coll);
            cond = Some(match cond {
                Some(c) => Expr::And(Box::new(c), Box::new(eq)),
                None => eq,
            });
        }
        // The left side lists its own joined columns first, then the rest as its tables do.
        joined.sort_by_key(|l| coalesced.iter().position(|c| c == l).unwrap_or(coalesced.len() + l));
        coalesced.retain(|c| !joined.contains(c));
        coalesced.splice(0..0, joined);
        if join.start == join.end {
            sources[join.start].on = cond;
        } else {
            let left = join.kind == JoinKind::Left;
            sources[join.end].closes.push(GroupClose { start: join.start, on: cond, left });
        }
    }
    let width = scope.columns.len();

    let aggs = RefCell::new(Vec::<AggSpec>::new());
    let binder = Binder { outer, aggs: None, ..Binder::new(env, &scope, "where clause") };
    let filter = s.selection.as_ref().map(|w| binder.bind(w)).transpose()?;
    let mut correlated = binder.correlated.get();

    // Projection.
    let windows = RefCell::new(Vec::<crate::window::WindowSpec>::new());
    let pbinder = Binder { outer, aggs: Some(&aggs), windows: Some(&windows), window_names: &s.named_window, ..Binder::new(env, &scope, "field list") };
    let mut projection = Vec::new();
    let mut columns = Vec::new();
    let mut aliases: Vec<(String, Expr, SqlType)> = Vec::new();
    for item in &s.projection {
        match item {
            SelectItem::Wildcard(_) => {
                if scope.columns.is_empty() {
                    return Err(SqlError::new(codes::ER_NO_DB_ERROR, "No tables used"));
                }
                // Columns joined by USING first (as MySQL lists them), then the rest in the
                // order the query wrote its tables, whatever the order of reading.
                for &i in &coalesced {
                    projection.push(Expr::Column(i));
                    columns.push(out_column(&scope.columns[i], &scope.columns[i].name));
                }
                let mut in_written_order: Vec<usize> = (0..sources.len()).collect();
                if let Some(written) = written {
                    in_written_order.sort_by_key(|&p| written[p]);
                }
                for s in in_written_order.iter().map(|&p| &sources[p]) {
                    for (i, c) in scope.columns.iter().enumerate().skip(s.offset).take(s.width).filter(|(i, c)| !c.hidden && !coalesced.contains(i)) {
                        projection.push(Expr::Column(i));
                        columns.push(out_column(c, &c.name));
                    }
                }
            }
            SelectItem::QualifiedWildcard(kind, _) => {
                let t = match kind {
                    ast::SelectItemQualifiedWildcardKind::ObjectName(n) => object_name_parts(n).last().cloned().unwrap_or_default(),
                    ast::SelectItemQualifiedWildcardKind::Expr(e) => e.to_string(),
                };
                let before = projection.len();
                for (i, c) in scope.columns.iter().enumerate().filter(|(_, c)| c.table == t) {
                    projection.push(Expr::Column(i));
                    columns.push(out_column(c, &c.name));
                }
                if projection.len() == before {
                    return Err(SqlError::new(codes::ER_UNKNOWN_TABLE, format!("Unknown table '{t}'")));
                }
            }
            SelectItem::UnnamedExpr(e) => {
                let b = pbinder.bind(e)?;
                let name = display_name(e);
                columns.push(match &b {
                    Expr::Column(i) => out_column(&scope.columns[*i], &scope.columns[*i].name),
                    _ => computed_column(&name, pbinder.type_of(&b), &b, &scope),
                });
                projection.push(b);
            }
            SelectItem::ExprWithAlias { expr, alias } => {
                let b = pbinder.bind(expr)?;
                let ty = pbinder.type_of(&b);
                columns.push(match &b {
                    Expr::Column(i) => out_column(&scope.columns[*i], &alias.value),
                    _ => computed_column(&alias.value, ty.clone(), &b, &scope),
                });
                aliases.push((alias.value.clone(), b.clone(), ty));
                projection.push(b);
            }
            SelectItem::ExprWithAliases { .. } => return Err(SqlError::unsupported("multiple aliases")),
        }
    }
    correlated |= pbinder.correlated.get();

    let group_by: Vec<Expr> = match &s.group_by {
        GroupByExpr::Expressions(exprs, _) => exprs
            .iter()
            .map(|e| {
                if let Some(p) = position_ref(e, projection.len())? {
                    return Ok(projection[p].clone());
                }
                Binder { aggs: None, clause: "group statement", ..Binder { outer, aliases: &aliases, ..Binder::new(env, &scope, "group statement") } }.bind(e)
            })
            .collect::<Result<_>>()?,
        GroupByExpr::All(_) => return Err(SqlError::unsupported("GROUP BY ALL")),
    };
    let post = Binder { outer, aggs: Some(&aggs), aliases: &aliases, having_group_by: Some(&group_by), ..Binder::new(env, &scope, "having clause") };
    let having = s.having.as_ref().map(|h| post.bind(h)).transpose()?;
    let obinder = Binder {
        clause: "order clause",
        ..Binder {
            outer,
            aggs: Some(&aggs),
            aliases: &aliases,
            windows: Some(&windows),
            window_names: &s.named_window,
            ..Binder::new(env, &scope, "order clause")
        }
    };
    let mut order_by = Vec::new();
    for o in order {
        let asc = !matches!(o.options.sort, Some(ast::OrderBySort::Desc));
        let e = match position_ref(&o.expr, projection.len())? {
            Some(p) => projection[p].clone(),
            None => {
                // A bare name matching a select alias refers to it first.
                match &o.expr {
                    ast::Expr::Identifier(id) if aliases.iter().any(|(a, _, _)| a.eq_ignore_ascii_case(&id.value)) => {
                        aliases.iter().find(|(a, _, _)| a.eq_ignore_ascii_case(&id.value)).map(|(_, e, _)| e.clone()).unwrap_or(Expr::Const(Value::Null))
                    }
                    other => obinder.bind(other)?,
                }
            }
        };
        // An ENUM sorts by its member's number, as MySQL sorts it.
        let e = obinder.enum_as_number(e);
        let coll = obinder.collation_of(&e);
        order_by.push((e, asc, coll));
    }
    correlated |= post.correlated.get() || obinder.correlated.get();
    let aggs = aggs.into_inner();
    let windows = windows.into_inner();
    let grouped = !group_by.is_empty() || !aggs.is_empty();
    // Window values depend on every row: the scan may not stop early or follow ORDER BY.
    let whole_rows = grouped || !windows.is_empty();
    let distinct = matches!(s.distinct, Some(ast::Distinct::Distinct));
    if grouped && env.info.vars.get("sql_mode").is_some_and(|m| m.contains("ONLY_FULL_GROUP_BY")) {
        check_full_group_by(env, &sources, &scope, &projection, &group_by)?;
    }

    // Access paths.
    let where_conjuncts: Vec<Expr> = filter.as_ref().map(|f| f.conjuncts().into_iter().cloned().collect()).unwrap_or_default();
    for i in 0..sources.len() {
        let SourceData::Table { db, name, .. } = &sources[i].data else { continue };
        let table = env.catalog.table(db, name)?;
        let mut conds: Vec<Expr> = sources[i].on.as_ref().map(|o| o.conjuncts().into_iter().cloned().collect()).unwrap_or_default();
        // A parenthesized join's condition holds on every row of it that counts, so its
        // conjuncts narrow the reads of its tables too.
        for g in sources[i..].iter().flat_map(|s| &s.closes).filter(|g| g.start <= i) {
            conds.extend(g.on.iter().flat_map(Expr::conjuncts).cloned());
        }
        let inner_chain = sources[i..].iter().all(|s| s.kind == JoinKind::Inner) || sources[i].kind == JoinKind::Inner && i == 0;
        let in_left_group = left_group_end(&sources, i).is_some();
        if !in_left_group && (inner_chain || sources[i].kind == JoinKind::Inner && sources.iter().skip(1).all(|s| s.kind == JoinKind::Inner)) {
            conds.extend(where_conjuncts.iter().cloned());
        }
        let mut access = choose_access(table, &conds, sources[i].offset);
        if matches!(access, Access::Full)
            && let Some(keys) = crate::hash_join::choose(&sources, i, &conds, table.data.statistics().rows)
        {
            access = Access::Hash(keys);
        }
        // A single table read in the order of a secondary index that ORDER BY ... LIMIT
        // follows: the scan stops after the rows it returns, instead of sorting the table.
        if matches!(access, Access::Full)
            && sources.len() == 1
            && !whole_rows
            && !distinct
            && limit.is_some()
            && let Some(index) = table.indexes.iter().position(|ix| order_matches(&order_by, &sources[i], &ix.columns).is_some())
        {
            access = Access::IndexRange { index, low: None, high: None };
        }
        if sources.len() == 1 && !whole_rows && !distinct {
            sources[i].order = key_order(&order_by, &sources[i], &access, table).unwrap_or(ScanOrder::Ascending);
        }
        sources[i].access = access;
        sources[i].key_name = match &sources[i].access {
            Access::Full | Access::Hash(_) => None,
            Access::PkPoint(_) | Access::PkIn(_) | Access::PkRange { .. } => Some("PRIMARY".to_owned()),
            Access::IndexEq { index, .. } | Access::IndexRange { index, .. } => Some(table.indexes[*index].name.clone()),
        };
    }
    let (filter, level_filters) = split_where(filter, &sources);
    let block = Block { sources, filter, level_filters, grouped, group_by, aggs, having, windows, projection, distinct, order_by, limit, offset, width };
    Ok((SelectPlan { columns, kind: PlanKind::Block(Box::new(block)) }, correlated))
}

/// The last level of the outermost LEFT-joined parenthesized join that `level` is inside
/// of and not last in, if any.
fn left_group_end(sources: &[Source], level: usize) -> Option<usize> {
    sources[..=level].iter().filter_map(|s| s.group_end).filter(|&end| end > level).max()
}

/// Splits WHERE among the join levels (`Block::level_filters`): each conjunct goes to the
/// first level after which it reads no column still to come (a conjunct of constants to the
/// first); a conjunct with a correlated subquery or a function whose value changes between
/// calls stays on the whole row, as do all of them for one table alone. Testing a conjunct
/// early is the same as testing it on the whole row: later levels never change the columns
/// it reads, and a LEFT JOIN's null row is made before its level's conjuncts are tested (for
/// a parenthesized join's, at its last level).
pub(super) fn split_where(filter: Option<Expr>, sources: &[Source]) -> (Option<Expr>, Vec<Option<Expr>>) {
    let mut levels: Vec<Option<Expr>> = vec![None; sources.len()];
    if sources.len() < 2 {
        return (filter, levels);
    }
    let Some(filter) = filter else { return (None, levels) };
    let and = |acc: Option<Expr>, e: Expr| {
        Some(match acc {
            Some(a) => Expr::And(Box::new(a), Box::new(e)),
            None => e,
        })
    };
    let mut rest = None;
    for conjunct in filter.conjuncts().into_iter().cloned() {
        let mut level = sources.iter().position(|s| !conjunct.uses_columns_from(s.offset + s.width));
        // Inside a LEFT-joined parenthesized join, WHERE waits for its null row too.
        while let Some(end) = level.and_then(|l| left_group_end(sources, l)) {
            level = Some(end);
        }
        match level {
            Some(l) => levels[l] = and(levels[l].take(), conjunct),
            None => rest = and(rest, conjunct),
        }
    }
    (rest, levels)
}

/// ONLY_FULL_GROUP_BY: every column a grouped select list reads outside an
/// aggregate must be grouped on, or be functionally dependent on grouped columns
/// (its table's whole primary key is grouped on).
pub(super) fn check_full_group_by(env: &Env<'_>, sources: &[Source], scope: &Scope, projection: &[Expr], group_by: &[Expr]) -> Result<()> {
    let grouped: std::collections::HashSet<usize> = group_by.iter().filter_map(|g| if let Expr::Column(i) = g { Some(*i) } else { None }).collect();
    let group_texts: Vec<String> = group_by.iter().map(|g| format!("{g:?}")).collect();
    let dependent = |col: usize| -> bool {
        if grouped.contains(&col) {
            return true;
        }
        let Some(src) = sources.iter().find(|s| col >= s.offset && col < s.offset + s.width) else { return false };
        let SourceData::Table { db, name, .. } = &src.data else { return false };
        env.catalog.table(db, name).is_ok_and(|t| !t.primary.is_empty() && t.primary.iter().all(|p| grouped.contains(&(src.offset + p))))
    };
    for (n, p) in projection.iter().enumerate() {
        if group_texts.contains(&format!("{p:?}")) {
            continue;
        }
        let mut bad = None;
        p.walk(&mut |e| {
            if let Expr::Column(i) = e
                && !dependent(*i)
            {
                bad.get_or_insert(*i);
            }
        });
        if let Some(i) = bad {
            let c = &scope.columns[i];
            let full = format!("{}.{}.{}", c.db, c.org_table, c.name);
            return Err(if group_by.is_empty() {
                SqlError::new(
                    codes::ER_MIX_OF_GROUP_FUNC_AND_FIELDS,
                    format!(
                        "In aggregated query without GROUP BY, expression #{} of SELECT list contains nonaggregated column '{full}'; this is incompatible with sql_mode=only_full_group_by",
                        n + 1
                    ),
                )
            } else {
                SqlError::new(
                    codes::ER_WRONG_FIELD_WITH_GROUP,
                    format!(
                        "Expression #{} of SELECT list is not in GROUP BY clause and contains nonaggregated column '{full}' which is not functionally dependent on columns in GROUP BY clause; this is incompatible with sql_mode=only_full_group_by",
                        n + 1
                    ),
                )
            });
        }
    }
    Ok(())
}

pub(super) fn computed_column(name: &str, ty: SqlType, e: &Expr, scope: &Scope) -> OutColumn {
    let mut c = OutColumn::computed(name, ty);
    if crate::bind::never_null(e, scope) {
        c.flags |= flags::NOT_NULL;
    }
    c
}

pub(super) fn out_column(c: &ScopeColumn, name: &str) -> OutColumn {
    OutColumn {
        name: name.to_owned(),
        org_name: c.name.clone(),
        table: c.table.clone(),
        org_table: c.org_table.clone(),
        db: c.db.clone(),
        ty: c.ty.clone(),
        flags: c.flags,
    }
}

pub(super) fn position_ref(e: &ast::Expr, n: usize) -> Result<Option<usize>> {
    if let ast::Expr::Value(v) = e
        && let ast::Value::Number(s, _) = &v.value
        && let Ok(p) = s.parse::<usize>()
    {
        if p == 0 || p > n {
            return Err(SqlError::bad_field(s, "order clause"));
        }
        return Ok(Some(p - 1));
    }
    Ok(None)
}

/// The column name MySQL gives an unaliased select expression: its text.
pub(super) fn display_name(e: &ast::Expr) -> String {
    match e {
        ast::Expr::Identifier(i) => i.value.clone(),
        ast::Expr::CompoundIdentifier(ids) if ids[0].value.starts_with('@') => ids.iter().map(|i| i.value.as_str()).collect::<Vec<_>>().join("."),
        ast::Expr::CompoundIdentifier(ids) => ids.last().map(|i| i.value.clone()).unwrap_or_default(),
        ast::Expr::Value(v) => match &v.value {
            ast::Value::SingleQuotedString(s) | ast::Value::DoubleQuotedString(s) => s.clone(),
            other => other.to_string(),
        },
        other => other.to_string(),
    }
}
