//! Writes through a view: an INSERT, UPDATE or DELETE that names a view MySQL counts as
//! updatable runs as the same statement on the view's table.
//!
//! A view is updatable when its query reads one table (or another such view) with no join,
//! DISTINCT, GROUP BY, HAVING, aggregate, window function, subquery in its select list,
//! UNION or LIMIT; it is insertable when, moreover, each of its columns is a column of that
//! table. The statement is rewritten ([`rewrite`]):
//!
//! - UPDATE and DELETE act on the view's table, their WHERE ANDed with the view's WHERE, so
//!   they reach only rows the view shows; each name of a view column in SET, WHERE and ORDER
//!   BY stands for what the view selects (a column, or an expression in parentheses); any
//!   other column is unknown (1054), even one of the table the view leaves out. Inside a
//!   subquery only names qualified by the view are the view's.
//! - INSERT puts each value in the table column its view column is (the view's columns in
//!   order when no column list is given); table columns the view leaves out take their
//!   defaults.
//!
//! A view column that is an expression cannot be assigned (1348); a view that is not
//! updatable keeps MySQL's errors (1288, 1471, from `dml`). `WITH CHECK OPTION` is not kept
//! (CREATE VIEW refuses it), so a write may leave a row the view does not show, as MySQL does
//! without that option.
//!
//! Privileges: the statement needs its privilege on the view, and the rewritten one on the
//! table, as views are read here (`views` module doc: the invoker's rights).
//!
//! Where it sits: called by `Session::execute` before the statement's privileges, metadata
//! locks and execution, which then see the rewritten statement.

use sqlparser::ast::{self, Expr, Ident, ObjectName, ObjectNamePart, SelectItem, SetExpr, Statement, TableFactor, VisitMut, VisitorMut};

use crate::catalog::Catalog;
use crate::error::{Result, SqlError, codes};
use crate::session_info::SessionInfo;
use crate::view_meta::ViewMeta;
use crate::views::VIEW_NESTING_MAX;

/// Aggregate functions: a view selecting one is not updatable.
const AGGREGATES: &[&str] =
    &["COUNT", "SUM", "AVG", "MIN", "MAX", "GROUP_CONCAT", "BIT_AND", "BIT_OR", "BIT_XOR", "STD", "STDDEV", "VARIANCE", "JSON_ARRAYAGG", "JSON_OBJECTAGG"];

/// `stmt` as the statement on the view's table, when it writes through an updatable view;
/// `None` when it writes a table (or a view that is not updatable, which `dml` refuses).
///
/// # Errors
/// 1348 for an assignment to a view column that is an expression; 1471 for an INSERT
/// through a view with such a column; 1146 for an unknown database.
pub fn rewrite(catalog: &Catalog, info: &SessionInfo, stmt: &Statement) -> Result<Option<Statement>> {
    let mut current: Option<Statement> = None;
    for _ in 0..VIEW_NESTING_MAX {
        let statement = current.as_ref().unwrap_or(stmt);
        let Some(name) = target(statement) else { break };
        let (db, table) = crate::query::resolve_table_name(info, &name)?;
        let Some(view) = catalog.view(&db, &table) else { break };
        let Some(shape) = Updatable::of(view, catalog) else { break };
        current = Some(shape.apply(statement, view)?);
    }
    Ok(current)
}

/// Whether writes through `view` reach a table (information_schema.VIEWS' IS_UPDATABLE).
#[must_use]
pub fn is_updatable(catalog: &Catalog, view: &ViewMeta) -> bool {
    let mut view = view;
    for _ in 0..VIEW_NESTING_MAX {
        let Some(shape) = Updatable::of(view, catalog) else { return false };
        let TableFactor::Table { name, .. } = &shape.base else { return false };
        let parts: Vec<&str> = name.0.iter().filter_map(|p| p.as_ident().map(|i| i.value.as_str())).collect();
        let [db, table] = parts.as_slice() else { return false };
        match catalog.view(db, table) {
            Some(inner) => view = inner,
            None => return catalog.table(db, table).is_ok(),
        }
    }
    false
}

/// The table or view a single-table write names.
fn target(stmt: &Statement) -> Option<ObjectName> {
    match stmt {
        Statement::Insert(i) => match &i.table {
            ast::TableObject::TableName(name) => Some(name.clone()),
            _ => None,
        },
        Statement::Update(u) if u.table.joins.is_empty() && u.from.is_none() => match &u.table.relation {
            TableFactor::Table { name, .. } => Some(name.clone()),
            _ => None,
        },
        Statement::Delete(d) if d.tables.is_empty() && d.using.is_none() => match &d.from {
            ast::FromTable::WithFromKeyword(from) | ast::FromTable::WithoutKeyword(from) => match from.as_slice() {
                [only] if only.joins.is_empty() => match &only.relation {
                    TableFactor::Table { name, .. } => Some(name.clone()),
                    _ => None,
                },
                _ => None,
            },
        },
        _ => None,
    }
}

/// What an updatable view is made of.
struct Updatable {
    /// The table (or view) it reads, as its query names it (qualified, with its alias).
    base: TableFactor,
    /// Its WHERE.
    filter: Option<Expr>,
    /// Each view column: its name, what it selects, and the table column when it is one.
    columns: Vec<(String, Expr, Option<String>)>,
}

impl Updatable {
    /// The view's shape, or `None` when it is not updatable (module doc).
    fn of(view: &ViewMeta, catalog: &Catalog) -> Option<Updatable> {
        let q = &view.query;
        if q.with.is_some() || q.limit_clause.is_some() || q.fetch.is_some() {
            return None;
        }
        let SetExpr::Select(select) = q.body.as_ref() else { return None };
        let grouped = match &select.group_by {
            ast::GroupByExpr::Expressions(exprs, _) => !exprs.is_empty(),
            ast::GroupByExpr::All(_) => true,
        };
        if select.distinct.is_some() || grouped || select.having.is_some() || select.from.len() != 1 || !select.from[0].joins.is_empty() {
            return None;
        }
        let base = select.from[0].relation.clone();
        let TableFactor::Table { name: base_name, .. } = &base else { return None };
        let mut columns = Vec::new();
        for item in &select.projection {
            match item {
                SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..) => {
                    let parts: Vec<String> = base_name.0.iter().filter_map(|p| p.as_ident().map(|i| i.value.clone())).collect();
                    let [db, table] = parts.as_slice() else { return None };
                    let names: Vec<String> = match catalog.table(db, table) {
                        Ok(t) => t.columns.iter().map(|c| c.name.clone()).collect(),
                        Err(_) => catalog.view(db, table)?.columns.clone(),
                    };
                    if names.is_empty() {
                        return None;
                    }
                    columns.extend(names.into_iter().map(|n| (n.clone(), Expr::Identifier(Ident::new(n.clone())), Some(n))));
                }
                SelectItem::UnnamedExpr(e) => columns.push((column_name(e).unwrap_or_else(|| e.to_string()), e.clone(), column_name(e))),
                SelectItem::ExprWithAlias { expr, alias } => columns.push((alias.value.clone(), expr.clone(), column_name(expr))),
                SelectItem::ExprWithAliases { .. } => return None,
            }
        }
        if columns.iter().any(|(_, e, _)| reads_more_than_columns(e)) {
            return None;
        }
        if !view.columns.is_empty() {
            if view.columns.len() != columns.len() {
                return None;
            }
            for (c, name) in columns.iter_mut().zip(&view.columns) {
                c.0.clone_from(name);
            }
        }
        Some(Updatable { base, filter: select.selection.clone(), columns })
    }

    /// `stmt` on the view's table.
    fn apply(&self, stmt: &Statement, view: &ViewMeta) -> Result<Statement> {
        let mut out = stmt.clone();
        match &mut out {
            Statement::Update(u) => {
                let alias = table_alias(&u.table.relation);
                for a in &mut u.assignments {
                    self.retarget(&mut a.target, view, "UPDATE")?;
                    self.substitute(&mut a.value, view, alias.as_deref(), "field list")?;
                }
                u.selection = self.filtered(u.selection.take(), view, alias.as_deref())?;
                for o in &mut u.order_by {
                    self.substitute(&mut o.expr, view, alias.as_deref(), "order clause")?;
                }
                u.table.relation = self.base.clone();
            }
            Statement::Delete(d) => {
                let from = match &mut d.from {
                    ast::FromTable::WithFromKeyword(f) | ast::FromTable::WithoutKeyword(f) => f,
                };
                let alias = table_alias(&from[0].relation);
                d.selection = self.filtered(d.selection.take(), view, alias.as_deref())?;
                for o in &mut d.order_by {
                    self.substitute(&mut o.expr, view, alias.as_deref(), "order clause")?;
                }
                from[0].relation = self.base.clone();
            }
            Statement::Insert(i) => {
                if self.columns.iter().any(|(_, _, column)| column.is_none()) {
                    return Err(SqlError::new(codes::ER_NON_INSERTABLE_TABLE, format!("The target table {} of the INSERT is not insertable-into", view.name)));
                }
                if i.columns.is_empty() && i.assignments.is_empty() {
                    i.columns = self.columns.iter().map(|(name, _, _)| ObjectName(vec![ObjectNamePart::Identifier(Ident::new(name.clone()))])).collect();
                }
                for c in &mut i.columns {
                    let name = last_part(c);
                    let column = self.table_column(&name, view, "INSERT")?;
                    *c = ObjectName(vec![ObjectNamePart::Identifier(Ident::new(column))]);
                }
                for a in &mut i.assignments {
                    self.retarget(&mut a.target, view, "INSERT")?;
                    self.substitute(&mut a.value, view, None, "field list")?;
                }
                if let Some(ast::OnInsert::DuplicateKeyUpdate(assignments)) = &mut i.on {
                    for a in assignments {
                        self.retarget(&mut a.target, view, "INSERT")?;
                        self.substitute(&mut a.value, view, None, "field list")?;
                    }
                }
                let TableFactor::Table { name, .. } = &self.base else { unreachable!("an updatable view reads a table") };
                i.table = ast::TableObject::TableName(name.clone());
                i.table_alias = None;
            }
            _ => unreachable!("`target` names only INSERT, UPDATE and DELETE"),
        }
        Ok(out)
    }

    /// The table column view column `name` is: 1054 for no such view column, 1348 for one
    /// that is an expression.
    fn table_column(&self, name: &str, view: &ViewMeta, statement: &str) -> Result<String> {
        match self.columns.iter().find(|(n, _, _)| n.eq_ignore_ascii_case(name)) {
            None => Err(SqlError::bad_field(name, "field list")),
            Some((_, _, Some(column))) => Ok(column.clone()),
            Some(_) if statement == "INSERT" => {
                Err(SqlError::new(codes::ER_NON_INSERTABLE_TABLE, format!("The target table {} of the INSERT is not insertable-into", view.name)))
            }
            Some(_) => Err(SqlError::new(codes::ER_NONUPDATEABLE_COLUMN, format!("Column '{name}' is not updatable"))),
        }
    }

    fn retarget(&self, target: &mut ast::AssignmentTarget, view: &ViewMeta, statement: &str) -> Result<()> {
        let names = match target {
            ast::AssignmentTarget::ColumnName(n) => std::slice::from_mut(n),
            ast::AssignmentTarget::Tuple(ns) => ns.as_mut_slice(),
        };
        for n in names {
            let column = self.table_column(&last_part(n), view, statement)?;
            *n = ObjectName(vec![ObjectNamePart::Identifier(Ident::new(column))]);
        }
        Ok(())
    }

    /// `user`'s condition with the view's names replaced, ANDed with the view's WHERE.
    fn filtered(&self, user: Option<Expr>, view: &ViewMeta, alias: Option<&str>) -> Result<Option<Expr>> {
        let user = match user {
            Some(mut e) => {
                self.substitute(&mut e, view, alias, "where clause")?;
                Some(e)
            }
            None => None,
        };
        Ok(match (self.filter.clone(), user) {
            (Some(v), Some(u)) => {
                Some(Expr::BinaryOp { left: Box::new(Expr::Nested(Box::new(v))), op: ast::BinaryOperator::And, right: Box::new(Expr::Nested(Box::new(u))) })
            }
            (v, u) => v.or(u),
        })
    }

    /// Each name of a view column in `e` (bare, or qualified by the view's name or the
    /// statement's alias for it) replaced by what the view selects. Inside a subquery only a
    /// name qualified by the view is the view's (a bare one is the subquery's own).
    ///
    /// # Errors
    /// 1054 (in `clause`) for any other column the statement names outside subqueries: the
    /// view shows no other, though its table may have it.
    fn substitute(&self, e: &mut Expr, view: &ViewMeta, alias: Option<&str>, clause: &str) -> Result<()> {
        struct Names<'a> {
            shape: &'a Updatable,
            view: &'a ViewMeta,
            alias: Option<&'a str>,
            /// Subqueries entered.
            depth: usize,
            unknown: Option<String>,
        }
        impl Names<'_> {
            fn names_view(&self, qualifier: &[Ident]) -> bool {
                match qualifier {
                    [q] => q.value.eq_ignore_ascii_case(&self.view.name) || self.alias.is_some_and(|a| q.value.eq_ignore_ascii_case(a)),
                    [db, q] => db.value == self.view.db && q.value.eq_ignore_ascii_case(&self.view.name),
                    _ => false,
                }
            }
        }
        impl VisitorMut for Names<'_> {
            type Break = ();
            fn pre_visit_query(&mut self, _: &mut ast::Query) -> std::ops::ControlFlow<()> {
                self.depth += 1;
                std::ops::ControlFlow::Continue(())
            }
            fn post_visit_query(&mut self, _: &mut ast::Query) -> std::ops::ControlFlow<()> {
                self.depth -= 1;
                std::ops::ControlFlow::Continue(())
            }
            fn post_visit_expr(&mut self, e: &mut Expr) -> std::ops::ControlFlow<()> {
                // (the name, whether the statement itself names it: outside subqueries, or
                // qualified by the view inside one).
                let (name, written) = match e {
                    Expr::Identifier(id) if self.depth == 0 && id.quote_style != Some('"') && !id.value.starts_with('@') && !is_keyword_value(&id.value) => {
                        (id.value.clone(), true)
                    }
                    Expr::CompoundIdentifier(parts) if parts.len() >= 2 => {
                        let (column, qualifier) = parts.split_last().expect("two parts");
                        let of_view = self.names_view(qualifier);
                        if !of_view && self.depth > 0 {
                            return std::ops::ControlFlow::Continue(());
                        }
                        (if of_view { column.value.clone() } else { parts.iter().map(|p| p.value.as_str()).collect::<Vec<_>>().join(".") }, of_view)
                    }
                    _ => return std::ops::ControlFlow::Continue(()),
                };
                match self.shape.columns.iter().find(|(n, _, _)| written && n.eq_ignore_ascii_case(&name)) {
                    Some((_, selected, column)) => *e = if column.is_some() { selected.clone() } else { Expr::Nested(Box::new(selected.clone())) },
                    None => {
                        self.unknown.get_or_insert(name);
                    }
                }
                std::ops::ControlFlow::Continue(())
            }
        }
        let mut names = Names { shape: self, view, alias, depth: 0, unknown: None };
        let _ = e.visit(&mut names);
        match names.unknown {
            Some(name) => Err(SqlError::bad_field(&name, clause)),
            None => Ok(()),
        }
    }
}

/// Words the parser reads as names that are values (`SET d = CURRENT_TIMESTAMP`).
fn is_keyword_value(word: &str) -> bool {
    [
        "CURRENT_TIMESTAMP",
        "CURRENT_DATE",
        "CURRENT_TIME",
        "CURRENT_USER",
        "LOCALTIME",
        "LOCALTIMESTAMP",
        "UTC_DATE",
        "UTC_TIME",
        "UTC_TIMESTAMP",
        "DEFAULT",
        "NULL",
        "TRUE",
        "FALSE",
    ]
    .iter()
    .any(|k| word.eq_ignore_ascii_case(k))
}

/// The table column an expression is, when it is one.
fn column_name(e: &Expr) -> Option<String> {
    match e {
        Expr::Identifier(id) => Some(id.value.clone()),
        Expr::CompoundIdentifier(parts) => parts.last().map(|p| p.value.clone()),
        Expr::Nested(inner) => column_name(inner),
        _ => None,
    }
}

/// Whether a view column reads more than its row's columns: an aggregate, a window
/// function or a subquery (the view is then not updatable).
fn reads_more_than_columns(e: &Expr) -> bool {
    use sqlparser::ast::Visit;
    struct Finds(bool);
    impl ast::Visitor for Finds {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &Expr) -> std::ops::ControlFlow<()> {
            let found = match e {
                Expr::Subquery(_) | Expr::Exists { .. } | Expr::InSubquery { .. } => true,
                Expr::Function(f) => {
                    f.over.is_some() || f.name.0.last().and_then(|p| p.as_ident()).is_some_and(|i| AGGREGATES.iter().any(|a| i.value.eq_ignore_ascii_case(a)))
                }
                _ => false,
            };
            if found {
                self.0 = true;
                return std::ops::ControlFlow::Break(());
            }
            std::ops::ControlFlow::Continue(())
        }
    }
    let mut finds = Finds(false);
    let _ = e.visit(&mut finds);
    finds.0
}

fn table_alias(relation: &TableFactor) -> Option<String> {
    match relation {
        TableFactor::Table { alias: Some(a), .. } => Some(a.name.value.clone()),
        _ => None,
    }
}

fn last_part(name: &ObjectName) -> String {
    name.0.last().and_then(|p| p.as_ident()).map(|i| i.value.clone()).unwrap_or_default()
}
