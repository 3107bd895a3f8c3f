//! SELECT: planning a query block (FROM, access paths, grouping, ordering) and
//! running it against a read view.
//!
//! A query block reads its tables left to right with nested loops, and hands each
//! joined row straight to grouping or projection. Each table's access path is chosen
//! from the conjuncts of WHERE (inner joins) or ON: a point lookup when every primary
//! key column is equal to a value known before the table is read, a key range or IN
//! list on a one-column primary key, an equality prefix of a secondary index, a hash
//! join (`hash_join`) for a column equality with an earlier table, or else a full scan. The chosen path only narrows what is
//! read; the whole condition is always evaluated on each row, so a path can never
//! change a result.

use std::cell::RefCell;
use std::cmp::Ordering;
use std::collections::HashMap;
use std::ops::Bound;
use std::sync::Arc;

use quill_storage::table::SharedRow;
use quill_storage::{Collation, ReadView, Row, ScanOrder, Value};
use sqlparser::ast::{self, GroupByExpr, JoinConstraint, JoinOperator, SelectItem, SetExpr, SetOperator, SetQuantifier, TableFactor};

use crate::aggregate::Accumulator;
use crate::bind::{Binder, Scope, ScopeColumn};
use crate::cte::{self, Ctes, WorkTable};
use crate::expr::{AggSpec, CmpOp, Expr, RowCtx};
use crate::system_tables::SystemTables;
use quill_sql_context::catalog::Catalog;
use quill_sql_context::locking::{LockSpec, ScannedRange};
use quill_sql_context::session_info::SessionInfo;
use quill_sql_context::tmp_memory;
use quill_sql_types::error::{Result, SqlError, codes};
use quill_sql_types::ops;
use quill_sql_types::types::{SqlType, WriteContext, coerce_to_column};

/// Column flags as the protocol sends them.
pub mod flags {
    pub const NOT_NULL: u16 = 1;
    pub const PRI_KEY: u16 = 2;
    pub const UNIQUE_KEY: u16 = 4;
    pub const MULTIPLE_KEY: u16 = 8;
    pub const BLOB: u16 = 16;
    pub const UNSIGNED: u16 = 32;
    pub const BINARY: u16 = 128;
    pub const AUTO_INCREMENT: u16 = 512;
    pub const TIMESTAMP: u16 = 1024;
    pub const ENUM: u16 = 256;
    pub const SET: u16 = 2048;
    pub const NUM: u16 = 32768;
}

/// What one group of a GROUP BY costs beyond its first row and key, per accumulator and for
/// its index entry (estimated, for `tmp_memory`).
const GROUP_OVERHEAD_BYTES: usize = 64;

/// Rows a sort with a LIMIT gathers, at least, before it lets go of those past the limit.
const TOP_ROWS_MIN: usize = 1024;

/// What a statement runs against.
pub struct Env<'a> {
    pub catalog: &'a Catalog,
    pub view: ReadView,
    pub params: &'a [Value],
    /// NOW() for this statement: local time, zone-less microseconds.
    pub now_us: i64,
    pub info: &'a SessionInfo,
    /// A locking read (FOR UPDATE / FOR SHARE, SERIALIZABLE) or a write's scan: each row
    /// is locked as the scan reaches it and read current.
    pub lock: Option<LockSpec>,
    /// Strict-mode writes: division by zero is error 1365 rather than NULL.
    pub div_zero_is_error: bool,
    /// The common table expressions a table name may mean here (`cte`).
    pub ctes: Ctes<'a>,
    /// Views being planned around this point, outermost first (`views`).
    pub views_open: usize,
    /// Where `information_schema` and `performance_schema` tables come from.
    pub system_tables: &'a dyn SystemTables,
}

impl<'a> Env<'a> {
    /// An environment for a plain (non-locking, non-writing) evaluation.
    #[must_use]
    pub fn new(catalog: &'a Catalog, view: ReadView, params: &'a [Value], now_us: i64, info: &'a SessionInfo, system_tables: &'a dyn SystemTables) -> Env<'a> {
        Env { catalog, view, params, now_us, info, lock: None, div_zero_is_error: false, ctes: Ctes::default(), views_open: 0, system_tables }
    }

    /// How many views enclose this point of the statement.
    #[must_use]
    pub fn view_depth(&self) -> usize {
        self.views_open
    }

    /// The environment a view's query is planned in: no CTE of the reader's is visible.
    #[must_use]
    pub fn inside_view(&self) -> Env<'a> {
        Env { ctes: Ctes::default(), views_open: self.views_open + 1, ..*self }
    }

    /// The same environment, where `ctes` are the visible common table expressions.
    #[must_use]
    pub fn with_ctes<'b>(&'b self, ctes: Ctes<'b>) -> Env<'b> {
        Env {
            catalog: self.catalog,
            view: self.view,
            params: self.params,
            now_us: self.now_us,
            info: self.info,
            lock: self.lock,
            div_zero_is_error: self.div_zero_is_error,
            ctes,
            views_open: self.views_open,
            system_tables: self.system_tables,
        }
    }
}

/// A result column's metadata.
#[derive(Debug, Clone)]
pub struct OutColumn {
    pub name: String,
    pub org_name: String,
    pub table: String,
    pub org_table: String,
    pub db: String,
    pub ty: SqlType,
    pub flags: u16,
}

impl OutColumn {
    #[must_use]
    pub fn computed(name: &str, ty: SqlType) -> OutColumn {
        OutColumn { name: name.to_owned(), org_name: String::new(), table: String::new(), org_table: String::new(), db: String::new(), ty, flags: 0 }
    }
}

/// Rows with their column metadata.
#[derive(Debug, Clone, Default)]
pub struct ResultSet {
    pub columns: Vec<OutColumn>,
    pub rows: Vec<Row>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinKind {
    Inner,
    Left,
}

/// How a table's rows are found.
#[derive(Debug, Clone)]
pub enum Access {
    Full,
    /// Every primary key column equals a value.
    PkPoint(Vec<Expr>),
    /// One-column primary key in a list of values.
    PkIn(Vec<Expr>),
    /// One-column primary key in a range.
    PkRange {
        low: Option<(Expr, bool)>,
        high: Option<(Expr, bool)>,
    },
    /// Equality on the leading columns of secondary index `index`.
    IndexEq {
        index: usize,
        values: Vec<Expr>,
    },
    /// A range on the first column of secondary index `index`.
    IndexRange {
        index: usize,
        low: Option<(Expr, bool)>,
        high: Option<(Expr, bool)>,
    },
    /// Equalities with earlier tables, found through a hash table of this one built once
    /// per statement (see `hash_join`).
    Hash(Vec<crate::hash_join::HashKey>),
}

#[derive(Debug)]
pub enum SourceData {
    Table {
        db: String,
        name: String,
        id: u64,
    },
    /// A derived table or a virtual table: rows computed before the block runs.
    Rows(RefCell<Option<Vec<Row>>>, Option<Box<SelectPlan>>),
    /// A recursive CTE's name inside its recursive blocks: the rows its last round added.
    Work(WorkTable),
}

#[derive(Debug)]
pub struct Source {
    pub data: SourceData,
    pub offset: usize,
    pub width: usize,
    pub kind: JoinKind,
    pub on: Option<Expr>,
    pub access: Access,
    /// Column types, for coercing lookup values.
    pub types: Vec<SqlType>,
    /// The index the access path reads (`PRIMARY` or a secondary index's name), for EXPLAIN.
    pub key_name: Option<String>,
    /// The built side of an [`Access::Hash`] source.
    pub hash_table: crate::hash_join::HashTable,
    /// Which way a plain read walks the access path's key: descending when ORDER BY ...
    /// DESC follows it (`order_follows_scan`).
    pub order: ScanOrder,
}

impl Source {
    /// A source read whole (`Access::Full`) until the planner chooses its access path.
    #[must_use]
    pub fn new(data: SourceData, offset: usize, width: usize, kind: JoinKind, types: Vec<SqlType>) -> Source {
        Source { data, offset, width, kind, on: None, access: Access::Full, types, key_name: None, hash_table: Default::default(), order: ScanOrder::Ascending }
    }
}

#[derive(Debug)]
pub struct Block {
    pub sources: Vec<Source>,
    /// WHERE: what is left to test on each whole joined row (see `level_filters`).
    pub filter: Option<Expr>,
    /// The WHERE conjuncts each join level can test as soon as its row is read: those that
    /// read no column of a later source (`split_where`). So a join of many tables skips a
    /// combination when its first tables already fail, instead of testing every whole row.
    pub level_filters: Vec<Option<Expr>>,
    pub grouped: bool,
    pub group_by: Vec<Expr>,
    pub aggs: Vec<AggSpec>,
    pub having: Option<Expr>,
    /// Window function calls (`window`), computed once the rows are grouped and filtered.
    pub windows: Vec<crate::window::WindowSpec>,
    pub projection: Vec<Expr>,
    pub distinct: bool,
    pub order_by: Vec<(Expr, bool, Collation)>,
    pub limit: Option<Expr>,
    pub offset: Option<Expr>,
    /// Width of the joined input row.
    pub width: usize,
}

#[derive(Debug)]
pub enum PlanKind {
    Block(Box<Block>),
    /// UNION, INTERSECT or EXCEPT (`op`), of distinct rows or (`all`) of every row.
    Union {
        op: SetOp,
        left: Box<SelectPlan>,
        right: Box<SelectPlan>,
        all: bool,
        order_by: Vec<(usize, bool)>,
        limit: Option<Expr>,
        offset: Option<Expr>,
    },
    /// A recursive common table expression (`cte`): the seeds' rows, then rounds of the
    /// recursive blocks over the rows the previous round added, until one adds none.
    Recursive {
        seeds: Vec<SelectPlan>,
        steps: Vec<SelectPlan>,
        distinct: bool,
        work: WorkTable,
    },
}

/// A set operation between two queries' rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetOp {
    Union,
    /// Rows in both (with ALL, as many times as in both).
    Intersect,
    /// Rows of the left not in the right (with ALL, as many times more as the left has them).
    Except,
}

#[derive(Debug)]
pub struct SelectPlan {
    pub columns: Vec<OutColumn>,
    pub kind: PlanKind,
}

// ---------------------------------------------------------------------------
// Planning.

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
fn plan_query_body(env: &Env<'_>, q: &ast::Query, outer: &[&Scope]) -> Result<(SelectPlan, bool)> {
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

fn plan_set_expr(env: &Env<'_>, e: &SetExpr, outer: &[&Scope]) -> Result<(SelectPlan, bool)> {
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
fn union_type(a: &SqlType, b: &SqlType) -> SqlType {
    crate::type_aggregation::aggregate(&[a.clone(), b.clone()])
}

/// A UNION's rows made to fit the types its columns are announced with (a block's INT in a
/// DECIMAL column becomes a DECIMAL, a DATE in a DATETIME column a DATETIME), before they are
/// compared for DISTINCT and sent.
fn conform_rows(rows: &mut [Row], columns: &[OutColumn]) {
    for row in rows {
        for (value, column) in row.iter_mut().zip(columns) {
            crate::type_aggregation::conform(value, &column.ty);
        }
    }
}

fn limit_offset(q: &ast::Query) -> Result<(Option<ast::Expr>, Option<ast::Expr>)> {
    Ok(match &q.limit_clause {
        None => (None, None),
        Some(ast::LimitClause::LimitOffset { limit, offset, .. }) => (limit.clone(), offset.as_ref().map(|o| o.value.clone())),
        Some(ast::LimitClause::OffsetCommaLimit { offset, limit }) => (Some(limit.clone()), Some(offset.clone())),
    })
}

fn object_name_parts(name: &ast::ObjectName) -> Vec<String> {
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

/// MySQL's warning for a GROUP_CONCAT result cut at `group_concat_max_len`.
const ER_CUT_VALUE_GROUP_CONCAT: u16 = 1260;

/// Add the columns of a catalog table to `scope`.
fn add_table_source(env: &Env<'_>, db: &str, name: &str, alias: &str, scope: &mut Scope) -> Result<(SourceData, Vec<SqlType>)> {
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

fn plan_factor(env: &Env<'_>, tf: &TableFactor, scope: &mut Scope, outer: &[&Scope]) -> Result<(SourceData, Vec<SqlType>)> {
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
            let alias =
                alias.as_ref().map(|a| a.name.value.clone()).ok_or_else(|| SqlError::new((1248, "42000"), "Every derived table must have its own alias"))?;
            let (plan, _) = plan_query(env, subquery, outer)?;
            let types: Vec<SqlType> = plan.columns.iter().map(|c| c.ty.clone()).collect();
            for c in &plan.columns {
                scope.columns.push(ScopeColumn::computed(&alias, &c.name, c.ty.clone()));
            }
            Ok((SourceData::Rows(RefCell::new(None), Some(Box::new(plan))), types))
        }
        TableFactor::NestedJoin { .. } => Err(SqlError::unsupported("parenthesized joins")),
        other => Err(SqlError::unsupported(format!("FROM {other}"))),
    }
}

/// Add a common table expression's columns to `scope`: its query planned like a derived
/// table's, or (inside a recursive CTE's own recursive blocks) the rows of its last round.
fn add_cte_source(env: &Env<'_>, found: cte::Found<'_>, alias: &str, scope: &mut Scope, outer: &[&Scope]) -> Result<(SourceData, Vec<SqlType>)> {
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
fn add_view_source(env: &Env<'_>, view: &quill_sql_context::view_meta::ViewMeta, alias: &str, scope: &mut Scope) -> Result<(SourceData, Vec<SqlType>)> {
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
fn plan_recursive(env: &Env<'_>, cte: &ast::Cte, outer: &[&Scope]) -> Result<SelectPlan> {
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
                (3575, "HY000"),
                format!("Recursive Common Table Expression '{name}' can contain neither aggregation nor window functions in recursive query block"),
            ));
        }
        steps.push(plan);
    }
    Ok(SelectPlan { columns, kind: PlanKind::Recursive { seeds, steps, distinct: parts.distinct, work: Arc::clone(&work.rows) } })
}

/// Whether a recursive block groups (MySQL refuses aggregation there).
fn plan_aggregates(plan: &SelectPlan) -> bool {
    match &plan.kind {
        PlanKind::Block(b) => b.grouped,
        _ => false,
    }
}

fn plan_block(
    env: &Env<'_>,
    s: &ast::Select,
    order: &[&ast::OrderByExpr],
    limit: Option<Expr>,
    offset: Option<Expr>,
    outer: &[&Scope],
) -> Result<(SelectPlan, bool)> {
    if let Some((as_left, written)) = crate::join_order::right_joins_as_left(s)? {
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

/// [`plan_block`] of `s` as its FROM list has it; `written` is, when that list was put in
/// another order for reading, each table's place in the order the query wrote (what `*`
/// lists columns in).
fn plan_block_in(
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
    let mut pending_on: Vec<(usize, JoinKind, Option<ast::Expr>, Vec<String>)> = Vec::new();
    let from_dual = s.from.len() == 1
        && s.from[0].joins.is_empty()
        && matches!(&s.from[0].relation, TableFactor::Table { name, alias: None, .. } if name.0.len() == 1 && name.to_string().eq_ignore_ascii_case("DUAL"));
    for twj in s.from.iter().filter(|_| !from_dual) {
        let offset = scope.columns.len();
        let (data, types) = plan_factor(env, &twj.relation, &mut scope, outer)?;
        let width = scope.columns.len() - offset;
        sources.push(Source::new(data, offset, width, JoinKind::Inner, types));
        for j in &twj.joins {
            let offset = scope.columns.len();
            let (data, types) = plan_factor(env, &j.relation, &mut scope, outer)?;
            let width = scope.columns.len() - offset;
            let (kind, constraint) = match &j.join_operator {
                JoinOperator::Inner(c) | JoinOperator::Join(c) | JoinOperator::CrossJoin(c) | JoinOperator::StraightJoin(c) => (JoinKind::Inner, Some(c)),
                JoinOperator::LeftOuter(c) | JoinOperator::Left(c) => (JoinKind::Left, Some(c)),
                JoinOperator::RightOuter(_) | JoinOperator::Right(_) => unreachable!("join_order::right_joins_as_left made it a LEFT JOIN"),
                other => return Err(SqlError::unsupported(format!("join {other:?}"))),
            };
            let (on, using) = match constraint {
                Some(JoinConstraint::On(e)) => (Some(e.clone()), vec![]),
                Some(JoinConstraint::Using(cols)) => (None, cols.iter().map(|c| object_name_parts(c).last().cloned().unwrap_or_default()).collect()),
                Some(JoinConstraint::Natural) => return Err(SqlError::unsupported("NATURAL JOIN")),
                _ => (None, vec![]),
            };
            sources.push(Source::new(data, offset, width, kind, types));
            pending_on.push((sources.len() - 1, kind, on, using));
        }
    }
    // Bind ON conditions now that the whole scope is known (MySQL would reject
    // forward references; binding against the prefix keeps that rule).
    // The columns USING joined, which `SELECT *` lists first: the last join's first.
    let mut coalesced: Vec<usize> = Vec::new();
    for (i, _, on, using) in pending_on {
        let src_offset = sources[i].offset;
        let src_width = sources[i].width;
        let prefix = Scope { columns: scope.columns[..src_offset + src_width].to_vec() };
        let mut cond: Option<Expr> = match &on {
            Some(e) => Some(Binder { outer, ..Binder::new(env, &prefix, "on clause") }.bind(e)?),
            None => None,
        };
        for name in using {
            let right = (src_offset..src_offset + src_width)
                .find(|&c| scope.columns[c].name.eq_ignore_ascii_case(&name))
                .ok_or_else(|| SqlError::bad_field(&name, "from clause"))?;
            let left = (0..src_offset)
                .find(|&c| scope.columns[c].name.eq_ignore_ascii_case(&name) && !scope.columns[c].hidden)
                .ok_or_else(|| SqlError::bad_field(&name, "from clause"))?;
            scope.columns[right].hidden = true;
            coalesced.retain(|&c| c != left);
            coalesced.insert(0, left);
            let coll = scope.columns[left].ty.collation();
            let eq = Expr::Cmp(CmpOp::Eq, Box::new(Expr::Column(left)), Box::new(Expr::Column(right)), coll);
            cond = Some(match cond {
                Some(c) => Expr::And(Box::new(c), Box::new(eq)),
                None => eq,
            });
        }
        sources[i].on = cond;
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
        let inner_chain = sources[i..].iter().all(|s| s.kind == JoinKind::Inner) || sources[i].kind == JoinKind::Inner && i == 0;
        if inner_chain || sources[i].kind == JoinKind::Inner && sources.iter().skip(1).all(|s| s.kind == JoinKind::Inner) {
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

/// Splits WHERE among the join levels (`Block::level_filters`): each conjunct goes to the
/// first level after which it reads no column still to come (a conjunct of constants to the
/// first); a conjunct with a correlated subquery or a function whose value changes between
/// calls stays on the whole row, as do all of them for one table alone. Testing a conjunct
/// early is the same as testing it on the whole row: later levels never change the columns
/// it reads, and a LEFT JOIN's null row is made before its level's conjuncts are tested.
fn split_where(filter: Option<Expr>, sources: &[Source]) -> (Option<Expr>, Vec<Option<Expr>>) {
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
        let level = sources.iter().position(|s| !conjunct.uses_columns_from(s.offset + s.width));
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
fn check_full_group_by(env: &Env<'_>, sources: &[Source], scope: &Scope, projection: &[Expr], group_by: &[Expr]) -> Result<()> {
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
                    (1140, "42000"),
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

fn computed_column(name: &str, ty: SqlType, e: &Expr, scope: &Scope) -> OutColumn {
    let mut c = OutColumn::computed(name, ty);
    if crate::bind::never_null(e, scope) {
        c.flags |= flags::NOT_NULL;
    }
    c
}

fn out_column(c: &ScopeColumn, name: &str) -> OutColumn {
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

fn position_ref(e: &ast::Expr, n: usize) -> Result<Option<usize>> {
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
fn display_name(e: &ast::Expr) -> String {
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

fn known_before(e: &Expr, offset: usize) -> bool {
    !e.uses_columns_from(offset)
}

/// One side of a range: the bound's value and whether it is inclusive.
type Bound1 = Option<(Expr, bool)>;

pub fn choose_access(table: &quill_sql_context::catalog::TableMeta, conds: &[Expr], offset: usize) -> Access {
    // column position within the table -> equality value
    let mut eq: HashMap<usize, Expr> = HashMap::new();
    let mut low: Option<(Expr, bool)> = None;
    let mut high: Option<(Expr, bool)> = None;
    // Range bounds on any column, for secondary indexes: column -> (low, high).
    let mut ranges: HashMap<usize, (Bound1, Bound1)> = HashMap::new();
    let mut in_list: Option<Vec<Expr>> = None;
    let first_pk = table.primary.first().copied();
    for c in conds {
        match c {
            Expr::Cmp(op, a, b, _) => {
                let (col, val, op) = match (a.as_ref(), b.as_ref()) {
                    (Expr::Column(i), v) if *i >= offset && *i < offset + table.columns.len() && known_before(v, offset) => (*i - offset, v, *op),
                    (v, Expr::Column(i)) if *i >= offset && *i < offset + table.columns.len() && known_before(v, offset) => (*i - offset, v, op.flip()),
                    _ => continue,
                };
                match op {
                    CmpOp::Gt | CmpOp::Ge => ranges.entry(col).or_default().0 = Some((val.clone(), op == CmpOp::Ge)),
                    CmpOp::Lt | CmpOp::Le => ranges.entry(col).or_default().1 = Some((val.clone(), op == CmpOp::Le)),
                    _ => {}
                }
                match op {
                    CmpOp::Eq => {
                        eq.insert(col, val.clone());
                    }
                    // On a column that is never NULL, `<=>` finds what `=` finds (the
                    // replica's applier finds each row by its key so).
                    CmpOp::NullSafeEq if !table.columns[col].nullable => {
                        eq.entry(col).or_insert_with(|| val.clone());
                    }
                    CmpOp::Gt | CmpOp::Ge if Some(col) == first_pk => low = Some((val.clone(), op == CmpOp::Ge)),
                    CmpOp::Lt | CmpOp::Le if Some(col) == first_pk => high = Some((val.clone(), op == CmpOp::Le)),
                    _ => {}
                }
            }
            Expr::Between { expr, low: lo, high: hi, negated: false, .. } => {
                if let Expr::Column(i) = expr.as_ref()
                    && *i >= offset
                    && *i < offset + table.columns.len()
                    && known_before(lo, offset)
                    && known_before(hi, offset)
                {
                    ranges.insert(*i - offset, (Some(((**lo).clone(), true)), Some(((**hi).clone(), true))));
                    if Some(*i - offset) == first_pk {
                        low = Some(((**lo).clone(), true));
                        high = Some(((**hi).clone(), true));
                    }
                }
            }
            Expr::InList { expr, list, negated: false, .. } => {
                if let Expr::Column(i) = expr.as_ref()
                    && *i >= offset
                    && Some(*i - offset) == first_pk
                    && table.primary.len() == 1
                    && list.iter().all(|v| known_before(v, offset))
                {
                    in_list = Some(list.clone());
                }
            }
            _ => {}
        }
    }
    if !table.primary.is_empty() && table.primary.iter().all(|c| eq.contains_key(c)) {
        return Access::PkPoint(table.primary.iter().map(|c| eq[c].clone()).collect());
    }
    if let Some(list) = in_list {
        return Access::PkIn(list);
    }
    if table.primary.len() == 1 && (low.is_some() || high.is_some()) {
        return Access::PkRange { low, high };
    }
    // Best secondary index: longest equality prefix.
    let mut best: Option<(usize, Vec<Expr>)> = None;
    for (n, ix) in table.indexes.iter().enumerate() {
        let prefix: Vec<Expr> = ix.columns.iter().map_while(|c| eq.get(c).cloned()).collect();
        if !prefix.is_empty() && best.as_ref().is_none_or(|(_, b)| prefix.len() > b.len()) {
            best = Some((n, prefix));
        }
    }
    if let Some((index, values)) = best {
        return Access::IndexEq { index, values };
    }
    for (n, ix) in table.indexes.iter().enumerate() {
        if let Some((low, high)) = ix.columns.first().and_then(|c| ranges.get(c)) {
            return Access::IndexRange { index: n, low: low.clone(), high: high.clone() };
        }
    }
    Access::Full
}

// ---------------------------------------------------------------------------
// Execution.

/// Run a planned query.
///
/// # Errors
/// Evaluation errors; lock errors in a locking read.
pub fn run_select(plan: &SelectPlan, env: &Env<'_>, parent: Option<&RowCtx<'_>>) -> Result<ResultSet> {
    let mut rows = Vec::new();
    let mut held = env.info.tmp_memory.hold();
    run_select_into(plan, env, parent, &mut |row| {
        held.add_row(&row)?;
        rows.push(row);
        Ok(())
    })?;
    Ok(ResultSet { columns: plan.columns.clone(), rows })
}

/// Runs a SELECT, handing each result row to `emit` in order. A block without grouping,
/// DISTINCT or a sort (other than one the scan's order already gives) hands rows over as the
/// join produces them, so its memory does not grow with its result; others build their
/// result first. An error from `emit` stops the statement.
///
/// # Errors
/// The statement's error, or `emit`'s.
pub fn run_select_into(plan: &SelectPlan, env: &Env<'_>, parent: Option<&RowCtx<'_>>, emit: &mut dyn FnMut(Row) -> Result<()>) -> Result<()> {
    match &plan.kind {
        PlanKind::Block(b) => run_block(b, env, parent, emit),
        PlanKind::Union { op, left, right, all, order_by, limit, offset } => {
            let mut held = env.info.tmp_memory.hold();
            let mut rows = run_select(left, env, parent)?.rows;
            held.add_rows(&rows)?;
            let mut right = run_select(right, env, parent)?.rows;
            held.add_rows(&right)?;
            conform_rows(&mut rows, &plan.columns);
            conform_rows(&mut right, &plan.columns);
            rows = combine(*op, *all, rows, right);
            if !order_by.is_empty() {
                rows.sort_by(|a, b| {
                    for (p, asc) in order_by {
                        let o = ops::sort_cmp(&a[*p], &b[*p], Collation::default());
                        if o != Ordering::Equal {
                            return if *asc { o } else { o.reverse() };
                        }
                    }
                    Ordering::Equal
                });
            }
            apply_limit(rows, limit.as_ref(), offset.as_ref(), env)?.into_iter().try_for_each(emit)
        }
        PlanKind::Recursive { seeds, steps, distinct, work } => {
            let mut rows = run_recursive(seeds, steps, *distinct, work, env, parent)?;
            conform_rows(&mut rows, &plan.columns);
            rows.into_iter().try_for_each(emit)
        }
    }
}

/// Runs a recursive CTE (`cte` module doc): every row it finds, seeds first, round by round.
fn run_recursive(seeds: &[SelectPlan], steps: &[SelectPlan], distinct: bool, work: &WorkTable, env: &Env<'_>, parent: Option<&RowCtx<'_>>) -> Result<Vec<Row>> {
    let mut held = env.info.tmp_memory.hold();
    let mut seen = std::collections::HashSet::new();
    let mut keep = |rows: Vec<Row>| -> Vec<Row> { if distinct { rows.into_iter().filter(|r| seen.insert(group_key(r))).collect() } else { rows } };
    let mut found = Vec::new();
    for seed in seeds {
        found.extend(keep(run_select(seed, env, parent)?.rows));
    }
    held.add_rows(&found)?;
    let depth_max = quill_sql_context::vars::int_value(&env.info.vars, "cte_max_recursion_depth");
    let mut round_start = 0;
    let mut rounds = 0u64;
    while round_start < found.len() {
        if rounds >= depth_max {
            return Err(SqlError::new(
                (3636, "HY000"),
                format!("Recursive query aborted after {} iterations. Try increasing @@cte_max_recursion_depth to a larger value.", rounds + 1),
            ));
        }
        rounds += 1;
        *work.lock().expect("a work table is not poisoned") = found[round_start..].to_vec();
        let mut added = Vec::new();
        for step in steps {
            added.extend(run_select(step, env, parent)?.rows);
        }
        let added = keep(added);
        held.add_rows(&added)?;
        round_start = found.len();
        found.extend(added);
    }
    work.lock().expect("a work table is not poisoned").clear();
    Ok(found)
}

/// The rows of `left` `op` `right` (`all`: every row, else distinct ones), in the left's
/// order, then the right's.
fn combine(op: SetOp, all: bool, mut left: Vec<Row>, right: Vec<Row>) -> Vec<Row> {
    if op == SetOp::Union {
        left.extend(right);
        return if all { left } else { dedupe(left) };
    }
    // How many times each distinct row is in the right.
    let mut counts: HashMap<Vec<u8>, usize> = HashMap::new();
    for r in &right {
        *counts.entry(group_key(r)).or_default() += 1;
    }
    let mut seen = std::collections::HashSet::new();
    let kept = left.into_iter().filter(|r| {
        let key = group_key(r);
        let in_right = counts.get_mut(&key);
        // With ALL, each row of the right pairs with one of the left.
        let paired = |n: Option<&mut usize>| match n {
            Some(n) if *n > 0 => {
                *n -= 1;
                true
            }
            _ => false,
        };
        match (op, all) {
            (SetOp::Intersect, true) => paired(in_right),
            (SetOp::Except, true) => !paired(in_right),
            (SetOp::Intersect, false) => in_right.is_some() && seen.insert(key),
            _ => in_right.is_none() && seen.insert(key),
        }
    });
    kept.collect()
}

fn dedupe(rows: Vec<Row>) -> Vec<Row> {
    let mut seen = std::collections::HashSet::new();
    rows.into_iter().filter(|r| seen.insert(group_key(r))).collect()
}

fn group_key(values: &[Value]) -> Vec<u8> {
    quill_storage::key::encode_key(values.iter().map(|v| (v, Collation::default())))
}

fn eval_count(e: Option<&Expr>, env: &Env<'_>) -> Result<Option<usize>> {
    match e {
        None => Ok(None),
        Some(e) => {
            let v = e.eval(env, &RowCtx::new(&[]))?;
            let n = ops::to_i128(&v);
            Ok(Some(n.max(0) as usize))
        }
    }
}

fn apply_limit(rows: Vec<Row>, limit: Option<&Expr>, offset: Option<&Expr>, env: &Env<'_>) -> Result<Vec<Row>> {
    let off = eval_count(offset, env)?.unwrap_or(0);
    let lim = eval_count(limit, env)?;
    Ok(rows.into_iter().skip(off).take(lim.unwrap_or(usize::MAX)).collect())
}

fn run_block(b: &Block, env: &Env<'_>, parent: Option<&RowCtx<'_>>, emit: &mut dyn FnMut(Row) -> Result<()>) -> Result<()> {
    // What the block keeps (derived tables, groups, rows to sort or dedupe) counts against
    // the statement's bound (`tmp_memory`) until the block ends.
    let mut held = env.info.tmp_memory.hold();
    // Materialize derived tables.
    for s in &b.sources {
        if let SourceData::Rows(cell, Some(plan)) = &s.data {
            let rows = run_select(plan, env, parent)?.rows;
            held.add_rows(&rows)?;
            *cell.borrow_mut() = Some(rows);
        }
    }
    // Rows come out in their final order as the join produces them: hand them straight on,
    // skipping the OFFSET and stopping the join at the LIMIT.
    let windowed = !b.windows.is_empty();
    let streams = !b.grouped && !windowed && b.having.is_none() && !b.distinct && (b.order_by.is_empty() || order_follows_scan(b, env));
    let (offset, limit) = if streams { (eval_count(b.offset.as_ref(), env)?.unwrap_or(0), eval_count(b.limit.as_ref(), env)?) } else { (0, None) };
    let early_stop = limit.map(|l| l.saturating_add(offset));
    // A sort with a LIMIT keeps only the rows that can still make it (MySQL's priority
    // queue): past twice that many, the rows are sorted and the rest let go.
    let top = if !streams && !b.grouped && !windowed && !b.distinct && !b.order_by.is_empty() {
        let skip = eval_count(b.offset.as_ref(), env)?.unwrap_or(0);
        eval_count(b.limit.as_ref(), env)?.map(|l| l.saturating_add(skip))
    } else {
        None
    };
    // Otherwise joined rows stream into the grouping or the projection as the join produces
    // them: an aggregate over a large join holds its groups, never the joined rows.
    let mut out: Vec<(Row, Vec<Value>)> = Vec::new();
    // A windowed block's rows (joined row, aggregate values), kept until the windows are known.
    let mut window_rows: Vec<(Row, Vec<Value>)> = Vec::new();
    let mut groups: Vec<(Row, Vec<Accumulator>)> = Vec::new();
    let mut index: HashMap<Vec<u8>, usize> = HashMap::new();
    let mut skipped = 0;
    {
        let mut sink = |row: &Row| -> Result<()> {
            let cx = ctx(row, &[], parent);
            if b.grouped {
                let key_vals: Vec<Value> = b.group_by.iter().map(|g| g.eval(env, &cx)).collect::<Result<_>>()?;
                let key = group_key(&key_vals);
                let gi = match index.get(&key) {
                    Some(&gi) => gi,
                    None => {
                        held.add(tmp_memory::row_bytes(row) + key.len() + GROUP_OVERHEAD_BYTES * (1 + b.aggs.len()))?;
                        groups.push((row.clone(), b.aggs.iter().map(Accumulator::new).collect()));
                        index.insert(key, groups.len() - 1);
                        groups.len() - 1
                    }
                };
                for (acc, spec) in groups[gi].1.iter_mut().zip(&b.aggs) {
                    let kept = acc.add(spec, env, &cx)?;
                    held.add(kept)?;
                }
            } else if let Some(h) = &b.having
                && ops::truth(&h.eval(env, &cx)?) != Some(true)
            {
                // HAVING without grouping filters rows, like WHERE, and sees select aliases.
            } else if windowed {
                held.add(tmp_memory::row_bytes(row))?;
                window_rows.push((row.clone(), Vec::new()));
            } else if streams {
                // The join stops at the limit (`early_stop`), so every row here is wanted
                // unless it falls in the OFFSET.
                if skipped < offset {
                    skipped += 1;
                } else {
                    emit(project_only(b, env, &cx)?)?;
                }
            } else {
                let (r, keys) = project(b, env, &cx)?;
                held.add(tmp_memory::row_bytes(&r) + tmp_memory::row_bytes(&keys))?;
                out.push((r, keys));
                if let Some(keep) = top
                    && out.len() >= keep.saturating_mul(2).max(TOP_ROWS_MIN)
                {
                    out.sort_by(|(_, a), (_, c)| order_cmp(b, a, c));
                    let dropped: usize = out.drain(keep..).map(|(r, k)| tmp_memory::row_bytes(&r) + tmp_memory::row_bytes(&k)).sum();
                    held.release(dropped);
                }
            }
            Ok(())
        };
        if b.sources.is_empty() {
            let row: Row = Vec::new();
            if pass(b.filter.as_ref(), &row, env, parent)? && early_stop != Some(0) {
                sink(&row)?;
            }
        } else {
            let mut row: Row = vec![Value::Null; b.width];
            let mut emitted = 0;
            join_level(b, 0, &mut row, env, parent, &mut sink, &mut emitted, early_stop)?;
        }
    }
    if streams {
        return Ok(());
    }
    if b.grouped {
        if groups.is_empty() && b.group_by.is_empty() {
            groups.push((vec![Value::Null; b.width], b.aggs.iter().map(Accumulator::new).collect()));
        }
        for (group, (first, accs)) in groups.into_iter().enumerate() {
            if accs.iter().any(Accumulator::was_cut) {
                env.info.warn(ER_CUT_VALUE_GROUP_CONCAT, format!("Row {} was cut by GROUP_CONCAT()", group + 1));
            }
            let agg_vals: Vec<Value> = accs.into_iter().zip(&b.aggs).map(|(a, s)| a.finish(s)).collect();
            let cx = RowCtx { row: &first, aggs: &agg_vals, windows: &[], parent };
            if let Some(h) = &b.having
                && ops::truth(&h.eval(env, &cx)?) != Some(true)
            {
                continue;
            }
            if windowed {
                window_rows.push((first, agg_vals));
            } else {
                out.push(project(b, env, &cx)?);
            }
        }
    }
    if windowed {
        let values = crate::window::compute(&b.windows, &window_rows, env, parent)?;
        for ((row, aggs), windows) in window_rows.iter().zip(&values) {
            let cx = RowCtx { row, aggs, windows, parent };
            let (r, keys) = project(b, env, &cx)?;
            held.add(tmp_memory::row_bytes(&r) + tmp_memory::row_bytes(&keys))?;
            out.push((r, keys));
        }
    }
    if b.distinct {
        let mut seen = std::collections::HashSet::new();
        out.retain(|(r, _)| seen.insert(group_key(r)));
    }
    if !b.order_by.is_empty() {
        out.sort_by(|(_, a), (_, c)| order_cmp(b, a, c));
    }
    let rows: Vec<Row> = out.into_iter().map(|(r, _)| r).collect();
    apply_limit(rows, b.limit.as_ref(), b.offset.as_ref(), env)?.into_iter().try_for_each(emit)
}

/// The block's ORDER BY on two rows' sort keys. Stable sorts keep ties in join order.
fn order_cmp(b: &Block, a: &[Value], c: &[Value]) -> Ordering {
    for (i, (_, asc, coll)) in b.order_by.iter().enumerate() {
        let o = ops::sort_cmp(&a[i], &c[i], *coll);
        if o != Ordering::Equal {
            return if *asc { o } else { o.reverse() };
        }
    }
    Ordering::Equal
}

/// Whether the block's ORDER BY follows the order its only table is scanned in: then
/// rows come out of the scan already in order, and a LIMIT may stop the scan early (so a
/// locking read locks only what it returns, as InnoDB's index-ordered scan does).
///
/// ORDER BY a leading part of the primary key, ascending, follows any read through the
/// primary key. A plain read through a secondary index yields rows in that index's order,
/// and a plain read of a key range can walk it backwards (`Source::order`, chosen by the
/// planner). A locking read follows neither: it reads each row's newest version, which may
/// have left the index entry it was found by, and takes its locks in ascending order.
fn order_follows_scan(b: &Block, env: &Env<'_>) -> bool {
    let [s] = b.sources.as_slice() else { return false };
    let SourceData::Table { db, name, .. } = &s.data else { return false };
    let Ok(meta) = env.catalog.table(db, name) else { return false };
    match key_order(&b.order_by, s, &s.access, meta) {
        Some(ScanOrder::Ascending) => env.lock.is_none() || matches!(s.access, Access::Full | Access::PkRange { .. } | Access::PkPoint(_) | Access::PkIn(_)),
        Some(ScanOrder::Descending) => env.lock.is_none() && s.order == ScanOrder::Descending,
        None => false,
    }
}

/// The direction `access` must scan source `s` in for its rows to come in `order_by`'s
/// order, if one does. Key lists (`PkIn`, `PkPoint`) are read ascending only.
fn key_order(order_by: &[(Expr, bool, Collation)], s: &Source, access: &Access, meta: &quill_sql_context::catalog::TableMeta) -> Option<ScanOrder> {
    let order = match access {
        Access::Full | Access::PkRange { .. } => order_matches(order_by, s, &meta.primary),
        Access::PkPoint(_) | Access::PkIn(_) => order_matches(order_by, s, &meta.primary).filter(|o| *o == ScanOrder::Ascending),
        Access::IndexRange { index, .. } => order_matches(order_by, s, &meta.indexes[*index].columns),
        Access::IndexEq { index, values } => {
            let columns = &meta.indexes[*index].columns;
            order_matches(order_by, s, columns).or_else(|| order_matches(order_by, s, &columns[values.len()..]))
        }
        Access::Hash(_) => None,
    }?;
    Some(order)
}

/// The direction in which `order_by` is a leading part of the key `columns` of source `s`,
/// in the columns' own collations and all one way (so a scan of that key, that way, yields
/// rows in its order).
fn order_matches(order_by: &[(Expr, bool, Collation)], s: &Source, columns: &[usize]) -> Option<ScanOrder> {
    let asc = order_by.first()?.1;
    let fits = order_by.len() <= columns.len()
        && order_by
            .iter()
            .zip(columns)
            .all(|((e, a, coll), &col)| *a == asc && matches!(e, Expr::Column(c) if *c == s.offset + col) && *coll == s.types[col].collation());
    fits.then_some(if asc { ScanOrder::Ascending } else { ScanOrder::Descending })
}

fn ctx<'a>(row: &'a [Value], aggs: &'a [Value], parent: Option<&'a RowCtx<'a>>) -> RowCtx<'a> {
    RowCtx { row, aggs, windows: &[], parent }
}

fn pass(cond: Option<&Expr>, row: &[Value], env: &Env<'_>, parent: Option<&RowCtx<'_>>) -> Result<bool> {
    match cond {
        None => Ok(true),
        Some(c) => Ok(ops::truth(&c.eval(env, &ctx(row, &[], parent))?) == Some(true)),
    }
}

/// A result row of `b` for the row `cx`, when no sort needs its ORDER BY keys.
fn project_only(b: &Block, env: &Env<'_>, cx: &RowCtx<'_>) -> Result<Row> {
    b.projection.iter().map(|p| p.eval(env, cx)).collect()
}

/// A result row of `b` for the row (or group) `cx`, and its ORDER BY keys.
fn project(b: &Block, env: &Env<'_>, cx: &RowCtx<'_>) -> Result<(Row, Vec<Value>)> {
    let projected: Row = b.projection.iter().map(|p| p.eval(env, cx)).collect::<Result<_>>()?;
    let keys: Vec<Value> = b.order_by.iter().map(|(e, _, _)| e.eval(env, cx)).collect::<Result<_>>()?;
    Ok((projected, keys))
}

/// Joins the sources from `level` on, handing every joined row that passes the filter to
/// `sink` and counting it in `emitted`; stops once `stop` rows were emitted.
#[allow(clippy::too_many_arguments)]
fn join_level(
    b: &Block,
    level: usize,
    row: &mut Row,
    env: &Env<'_>,
    parent: Option<&RowCtx<'_>>,
    sink: &mut dyn FnMut(&Row) -> Result<()>,
    emitted: &mut usize,
    stop: Option<usize>,
) -> Result<()> {
    if stop.is_some_and(|s| *emitted >= s) {
        return Ok(());
    }
    if level == b.sources.len() {
        if pass(b.filter.as_ref(), row, env, parent)? {
            sink(row)?;
            *emitted += 1;
        }
        return Ok(());
    }
    let s = &b.sources[level];
    // Each candidate row, with the key of a lock to let go of if the row is not returned.
    type Candidate = Result<(SharedRow, Option<Vec<u8>>)>;
    let locks = &env.info.engine.txns.locks;
    let release = match (env.lock.as_ref(), &s.data) {
        (Some(spec), SourceData::Table { id, .. }) if spec.semi_consistent => Some((spec.txn, *id)),
        _ => None,
    };
    // A row locked one by one: `None` when SKIP LOCKED leaves it out or it has no version
    // the view sees; the key comes back when the lock was new (READ COMMITTED may let go).
    let locked = |spec: &LockSpec, id: u64, name: &str, data: &dyn quill_storage::Handler, pk: Vec<u8>| -> Option<Candidate> {
        match spec.lock_row(locks, id, name, data, &pk) {
            Ok(Some(fresh)) => data.get(&pk, &env.view).map(|r| Ok((r, fresh.then_some(pk)))),
            Ok(None) => None,
            Err(e) => Some(Err(e)),
        }
    };
    let candidates: Box<dyn Iterator<Item = Candidate> + '_> = match (env.lock.as_ref(), &s.data) {
        (Some(spec), SourceData::Table { db, name, id }) if matches!(s.access, Access::Full | Access::Hash(_)) && spec.ranges_whole_table(stop.is_some()) => {
            env.info.interrupt.note_full_scan();
            // A shared scan of every row: one record range locks them all, and only rows
            // another transaction holds are locked (and waited for) one by one.
            let data = env.catalog.table(db, name)?.data.as_ref();
            spec.lock_whole_table(locks, *id, data);
            Box::new(data.scan_chains(Bound::Unbounded, Bound::Unbounded, env.view).filter_map(move |(pk, holder, row)| {
                if holder.is_none_or(|h| h == spec.txn) && !locks.needs_record_lock(spec.txn, *id, &pk) {
                    return row.map(|r| Ok((r, None)));
                }
                locked(spec, *id, name, data, pk)
            }))
        }
        (Some(spec), SourceData::Table { db, name, id }) => {
            // Locking: each row is locked when the scan reaches it, so a LIMIT that stops
            // the scan early leaves the rest unlocked.
            let data = env.catalog.table(db, name)?.data.as_ref();
            Box::new(locking_candidates(s, row, env, parent, spec)?.into_iter().filter_map(move |pk| locked(spec, *id, name, data, pk)))
        }
        (None, SourceData::Table { .. }) if matches!(s.access, Access::Hash(_)) => {
            let Access::Hash(keys) = &s.access else { unreachable!("matched above") };
            Box::new(crate::hash_join::probe(s, keys, &s.hash_table, env, &ctx(row, &[], parent))?.into_iter().map(|r| Ok((r, None))))
        }
        _ => Box::new(read_source(s, row, env, parent)?.map(|r| Ok((r, None)))),
    };
    let mut matched = false;
    for candidate in candidates {
        env.info.interrupt.check()?;
        let (r, fresh_lock) = candidate?;
        let returned_before = *emitted;
        // A row version decoded for this read is this reader's alone: its values move into
        // the joined row instead of being copied (strings would be allocated again).
        match SharedRow::try_unwrap(r) {
            Ok(owned) => {
                for (slot, v) in row[s.offset..s.offset + s.width].iter_mut().zip(owned) {
                    *slot = v;
                }
            }
            Err(shared) => row[s.offset..s.offset + s.width].clone_from_slice(&shared),
        }
        if pass(s.on.as_ref(), row, env, parent)? {
            // Matched by ON (what a LEFT JOIN's null row depends on), then WHERE's part for
            // this level.
            matched = true;
            if pass(b.level_filters[level].as_ref(), row, env, parent)? {
                join_level(b, level + 1, row, env, parent, sink, emitted, stop)?;
            }
        }
        if let (Some((txn, table)), Some(pk)) = (release, fresh_lock)
            && *emitted == returned_before
        {
            locks.unlock_record(txn, table, &pk);
        }
        if stop.is_some_and(|st| *emitted >= st) {
            return Ok(());
        }
    }
    if !matched && s.kind == JoinKind::Left {
        for v in &mut row[s.offset..s.offset + s.width] {
            *v = Value::Null;
        }
        if pass(b.level_filters[level].as_ref(), row, env, parent)? {
            join_level(b, level + 1, row, env, parent, sink, emitted, stop)?;
        }
    }
    Ok(())
}

/// Coerce a lookup value to the key column's type; `None` if that is not exact
/// (then the access path falls back to a scan of the whole table).
/// `v` as a key value of a column of type `ty`, when looking it up in the column's index
/// finds exactly the rows the comparison does; `None` sends the access path back to a scan.
/// A string column compared with a number compares as numbers ('5abc' = 5), so only a
/// string looks up a string index.
pub(crate) fn key_value(v: &Value, ty: &SqlType) -> Option<Value> {
    if v.is_null() || (ty.is_string() && !matches!(v, Value::Str(_))) {
        return None;
    }
    let mut warnings = Vec::new();
    let mut cx = WriteContext { column: "", row: 0, strict: true, warnings: &mut warnings };
    let c = coerce_to_column(v.clone(), ty, &mut cx).ok()?;
    (ops::compare(&c, v, ty.collation()) == Some(Ordering::Equal)).then_some(c)
}

/// The rows of a source its access path finds, read through `env.view`, with their
/// primary keys (empty for derived tables).
/// The rows a non-locking read of source `s` finds, for the outer row `row`. A scan of the
/// whole table is a cursor over it, so a large table is never copied; a range or a key
/// list is read first.
pub(crate) fn read_source<'a>(s: &Source, row: &Row, env: &Env<'a>, parent: Option<&RowCtx<'_>>) -> Result<Box<dyn Iterator<Item = SharedRow> + 'a>> {
    let (db, name) = match &s.data {
        SourceData::Rows(cell, _) => return Ok(Box::new(cell.borrow().iter().flatten().map(|r| SharedRow::new(r.clone())).collect::<Vec<_>>().into_iter())),
        SourceData::Work(rows) => {
            let rows = rows.lock().expect("a work table is not poisoned");
            return Ok(Box::new(rows.iter().map(|r| SharedRow::new(r.clone())).collect::<Vec<_>>().into_iter()));
        }
        SourceData::Table { db, name, .. } => (db, name),
    };
    let catalog: &'a quill_sql_context::catalog::Catalog = env.catalog;
    let t = catalog.table(db, name)?.data.as_ref();
    let found = access_keys(s, row, env, parent, false)?;
    let view = env.view;
    Ok(match (found.cursor, found.keys) {
        (Some(KeyRange::Primary(lo, hi)), _) => Box::new(t.scan(as_ref_bound(&lo), as_ref_bound(&hi), view, s.order).map(|(_, r)| r)),
        (Some(KeyRange::Index(index, lo, hi)), _) => Box::new(t.index_scan(index, as_ref_bound(&lo), as_ref_bound(&hi), view, s.order).map(|(_, r)| r)),
        (None, Some(keys)) => Box::new(keys.iter().filter_map(|k| t.get(k, &env.view)).collect::<Vec<_>>().into_iter()),
        (None, None) => Box::new(t.scan(Bound::Unbounded, Bound::Unbounded, view, s.order).map(|(_, r)| r)),
    })
}

/// The primary keys a locking scan of a table source must lock, in scan order: every row
/// in the access path's range whatever its versions (rows others are inserting or
/// deleting included). Takes the gap locks of the scanned ranges first.
///
/// # Errors
/// Evaluation errors of the access path's values; lock errors of a next-key record.
pub fn locking_candidates(s: &Source, row: &Row, env: &Env<'_>, parent: Option<&RowCtx<'_>>, spec: &LockSpec) -> Result<Vec<Vec<u8>>> {
    let SourceData::Table { db, name, id } = &s.data else { return Ok(Vec::new()) };
    let t = env.catalog.table(db, name)?.data.as_ref();
    let AccessKeys { keys, gaps, .. } = access_keys(s, row, env, parent, true)?;
    let locks = &env.info.engine.txns.locks;
    for g in &gaps {
        spec.lock_gap(locks, *id, name, t, g)?;
    }
    Ok(keys.unwrap_or_else(|| t.keys_in_range(Bound::Unbounded, Bound::Unbounded)))
}

/// What an access path finds: primary keys (`None`: the whole table), and for a locking
/// scan the ranges it read.
struct AccessKeys {
    keys: Option<Vec<Vec<u8>>>,
    gaps: Vec<ScannedRange>,
    /// For a plain read of a range: the range to read as a cursor (`keys` is then `None`).
    cursor: Option<KeyRange>,
}

/// A range of a table's primary key or of one of its secondary indexes (encoded bounds).
enum KeyRange {
    Primary(Bound<Vec<u8>>, Bound<Vec<u8>>),
    Index(usize, Bound<Vec<u8>>, Bound<Vec<u8>>),
}

/// The primary keys a source's access path finds (`None`: the whole table), and, for a
/// locking scan (`all_versions`), the ranges it read. A locking scan lists every row in
/// range whatever its versions; a plain one only rows `env.view` sees.
fn access_keys(s: &Source, row: &Row, env: &Env<'_>, parent: Option<&RowCtx<'_>>, all_versions: bool) -> Result<AccessKeys> {
    let SourceData::Table { db, name, .. } = &s.data else { return Ok(AccessKeys { keys: Some(Vec::new()), gaps: Vec::new(), cursor: None }) };
    let meta = env.catalog.table(db, name)?;
    let t = meta.data.as_ref();
    let cx = ctx(row, &[], parent);
    let view = env.view;
    let mut gaps = Vec::new();
    let mut pks: Option<Vec<Vec<u8>>> = None;
    let mut cursor = None;
    match &s.access {
        // A locking read of a hash-joined table scans it, locking rows as it goes.
        Access::Full | Access::Hash(_) => {
            env.info.interrupt.note_full_scan();
            if all_versions {
                gaps.push(ScannedRange { index: 0, lo: Bound::Unbounded, hi: Bound::Unbounded, next_record: false });
            }
        }
        Access::PkPoint(exprs) => {
            let mut vals = Vec::new();
            for (e, &col) in exprs.iter().zip(&meta.primary) {
                match key_value(&e.eval(env, &cx)?, &s.types[col]) {
                    Some(v) => vals.push(v),
                    None => {
                        vals.clear();
                        break;
                    }
                }
            }
            if vals.len() == exprs.len() {
                let k = t.encode_primary(&vals);
                if all_versions && !t.has_chain(&k) {
                    gaps.push(ScannedRange::point(0, k.clone()));
                }
                pks = Some(vec![k]);
            }
        }
        Access::PkIn(list) => {
            let col = meta.primary[0];
            let mut keys = Vec::new();
            let mut exact = true;
            for e in list {
                let v = e.eval(env, &cx)?;
                if v.is_null() {
                    continue;
                }
                match key_value(&v, &s.types[col]) {
                    Some(k) => keys.push(t.encode_primary(&[k])),
                    None => exact = false,
                }
            }
            if exact {
                keys.sort();
                keys.dedup();
                if all_versions {
                    gaps.extend(keys.iter().filter(|k| !t.has_chain(k)).map(|k| ScannedRange::point(0, k.clone())));
                }
                pks = Some(keys);
            }
        }
        Access::PkRange { low, high } => {
            let col = meta.primary[0];
            let bound = |b: &Option<(Expr, bool)>| -> Result<Option<Bound<Vec<u8>>>> {
                Ok(match b {
                    None => Some(Bound::Unbounded),
                    Some((e, incl)) => match key_value(&e.eval(env, &cx)?, &s.types[col]) {
                        Some(k) => {
                            let enc = t.encode_primary(&[k]);
                            Some(if *incl { Bound::Included(enc) } else { Bound::Excluded(enc) })
                        }
                        None => None,
                    },
                })
            };
            if let (Some(lo), Some(hi)) = (bound(low)?, bound(high)?) {
                let empty = match (&lo, &hi) {
                    (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) => {
                        a > b || (a == b && !(matches!(lo, Bound::Included(_)) && matches!(hi, Bound::Included(_))))
                    }
                    _ => false,
                };
                if empty {
                    pks = Some(Vec::new());
                } else if all_versions {
                    pks = Some(t.keys_in_range(as_ref_bound(&lo), as_ref_bound(&hi)));
                    gaps.push(ScannedRange { index: 0, lo, hi, next_record: true });
                } else {
                    cursor = Some(KeyRange::Primary(lo, hi));
                }
            }
        }
        Access::IndexRange { index, low, high } => {
            let col = meta.indexes[*index].columns[0];
            let bound = |b: &Option<(Expr, bool)>| -> Result<Option<Bound<Vec<u8>>>> {
                Ok(match b {
                    None => Some(Bound::Unbounded),
                    Some((e, incl)) => key_value(&e.eval(env, &cx)?, &s.types[col]).map(|k| {
                        let enc = t.encode_index(*index, &[k]);
                        if *incl { Bound::Included(enc) } else { Bound::Excluded(enc) }
                    }),
                })
            };
            if let (Some(lo), Some(hi)) = (bound(low)?, bound(high)?) {
                if all_versions {
                    pks = Some(t.index_keys_in_range(*index, as_ref_bound(&lo), as_ref_bound(&hi)));
                    gaps.push(ScannedRange { index: index_number(*index), lo, hi, next_record: true });
                } else {
                    cursor = Some(KeyRange::Index(*index, lo, hi));
                }
            }
        }
        Access::IndexEq { index, values } => {
            let cols = &meta.indexes[*index].columns;
            let mut vals = Vec::new();
            let mut exact = true;
            for (e, &col) in values.iter().zip(cols) {
                match key_value(&e.eval(env, &cx)?, &s.types[col]) {
                    Some(v) => vals.push(v),
                    None => exact = false,
                }
            }
            if exact {
                let key = t.encode_index(*index, &vals);
                if all_versions {
                    let keys = t.index_keys_in_range(*index, Bound::Included(&key), Bound::Included(&key));
                    // A unique index looked up by its whole key, finding a row that has that
                    // key now, locks the record only. (An entry may come from an old version
                    // kept for a read view: that row's lock would not keep the key out.)
                    let has_key =
                        |pk: &Vec<u8>| t.get(pk, &view).is_some_and(|r| t.encode_index(*index, &cols.iter().map(|&c| r[c].clone()).collect::<Vec<_>>()) == key);
                    let unique_hit = meta.indexes[*index].unique && vals.len() == cols.len() && keys.iter().any(has_key);
                    if !unique_hit {
                        gaps.push(ScannedRange { index: index_number(*index), lo: Bound::Included(key.clone()), hi: Bound::Included(key), next_record: true });
                    }
                    pks = Some(keys);
                } else {
                    cursor = Some(KeyRange::Index(*index, Bound::Included(key.clone()), Bound::Included(key)));
                }
            }
        }
    }
    if !all_versions
        && pks.is_none()
        && cursor.is_none()
        && let Access::IndexEq { index, .. } | Access::IndexRange { index, .. } = &s.access
    {
        // A value that is not exact for the key reads the whole index, still in its order
        // (ORDER BY may rely on it: `order_follows_scan`).
        cursor = Some(KeyRange::Index(*index, Bound::Unbounded, Bound::Unbounded));
    }
    if all_versions && pks.is_none() && !matches!(s.access, Access::Full | Access::Hash(_)) {
        // A value that is not exact for the key falls back to a scan of the whole table.
        gaps.push(ScannedRange { index: 0, lo: Bound::Unbounded, hi: Bound::Unbounded, next_record: false });
    }
    Ok(AccessKeys { keys: pks, gaps, cursor })
}

/// Gap locks number the primary key 0 and secondary index `i` as `i + 1`.
fn index_number(index: usize) -> u32 {
    u32::try_from(index + 1).expect("index count fits u32")
}

fn as_ref_bound(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(v) => Bound::Included(v.as_slice()),
        Bound::Excluded(v) => Bound::Excluded(v.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}
