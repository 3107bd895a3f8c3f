//! Views as statements: `CREATE [OR REPLACE] [ALGORITHM=...] [DEFINER=...] [SQL SECURITY
//! ...] VIEW`, `ALTER VIEW`, `DROP VIEW`, SHOW CREATE VIEW and `information_schema.VIEWS`.
//! Reading a view is the planner's (`views`).
//!
//! A view is a named query kept in its database beside the tables ([`crate::catalog::Database`]
//! `views`); a name is a table or a view, never both (1050). Its query is stored with every
//! table name qualified by the database it meant when the view was made, as MySQL stores it,
//! so a view reads the same tables whatever the reader's default database. A query that names
//! a view plans the view's query in its place, like a derived table
//! (`query::add_view_source`): a view always reads what its tables hold when the statement
//! runs. INSERT, UPDATE and DELETE through a view MySQL counts as updatable run on its table
//! (`view_writes`); through any other they get 1471 / 1288.
//!
//! Checked when made (and not when a log or checkpoint replays it, where its tables may come
//! later): its query plans against the catalog (1146, 1054 ...), its column names are
//! distinct (1060) and match a column list (1353), and it does not read itself, directly or
//! through other views (1462).
//!
//! Durable as DDL: the statement is logged and replayed; a checkpoint writes each view's
//! definition ([`ViewMeta::definition`]) as a VIEW entry (`docs/checkpoint-format.md`).

use std::ops::ControlFlow;

use sqlparser::ast::{self, VisitMut, VisitorMut};

use crate::catalog::Catalog;
use crate::error::{Result, SqlError, Warning, codes};
use crate::ident::quote_identifier as quote;
use crate::query::{self};
use crate::session_info::SessionInfo;
use crate::view_meta::ViewMeta;
use crate::views::{VIEW_NESTING_MAX, recursion, tables_read};

/// What CREATE VIEW / ALTER VIEW say, whichever statement said it.
pub struct ViewStatement<'a> {
    pub name: &'a ast::ObjectName,
    pub columns: Vec<String>,
    pub query: &'a ast::Query,
    pub or_replace: bool,
    /// ALTER VIEW: the view must exist.
    pub alter: bool,
    pub params: Option<&'a ast::CreateViewParams>,
}

/// CREATE [OR REPLACE] VIEW / ALTER VIEW on `catalog` (a copy the caller installs).
/// `validate` is false when a log or checkpoint replays the statement.
///
/// # Errors
/// See the module doc; 1050 when a table (or, without OR REPLACE, a view) has the name,
/// 1347 when ALTER names a table, 1146 when it names nothing.
pub fn create_view(catalog: &mut Catalog, info: &SessionInfo, now_us: i64, v: &ViewStatement<'_>, validate: bool) -> Result<()> {
    let (db, name) = query::resolve_table_name(info, v.name)?;
    catalog.database(&db)?;
    if catalog.table(&db, &name).is_ok() {
        if v.alter {
            return Err(not_view(&db, &name));
        }
        return Err(SqlError::new(codes::ER_TABLE_EXISTS_ERROR, format!("Table '{name}' already exists")));
    }
    let existing = catalog.view(&db, &name).cloned();
    match (&existing, v.alter) {
        (Some(_), false) if !v.or_replace => return Err(SqlError::new(codes::ER_TABLE_EXISTS_ERROR, format!("Table '{name}' already exists"))),
        (None, true) => return Err(SqlError::no_such_table(&db, &name)),
        _ => {}
    }
    let mut query = v.query.clone();
    qualify(&mut query, &db);
    let params = v.params;
    let view = ViewMeta {
        db: db.clone(),
        name: name.clone(),
        columns: v.columns.clone(),
        query,
        algorithm: match params.and_then(|p| p.algorithm.as_ref()) {
            Some(ast::CreateViewAlgorithm::Merge) => "MERGE",
            Some(ast::CreateViewAlgorithm::TempTable) => "TEMPTABLE",
            _ => existing.as_ref().filter(|_| v.alter).map_or("UNDEFINED", |e| e.algorithm),
        },
        definer: match params.and_then(|p| p.definer.as_ref()) {
            Some(ast::GranteeName::UserHost { user, host }) => format!("{}@{}", quote(&user.value), quote(&host.value)),
            Some(ast::GranteeName::ObjectName(n)) if n.to_string().eq_ignore_ascii_case("CURRENT_USER") => current_user(info),
            Some(ast::GranteeName::ObjectName(n)) => format!("{}@`%`", quote(&n.to_string())),
            None => existing.as_ref().filter(|_| v.alter).map_or_else(|| current_user(info), |e| e.definer.clone()),
        },
        security: match params.and_then(|p| p.security.as_ref()) {
            Some(ast::CreateViewSecurity::Invoker) => "INVOKER",
            Some(ast::CreateViewSecurity::Definer) => "DEFINER",
            None => existing.as_ref().filter(|_| v.alter).map_or("DEFINER", |e| e.security),
        },
    };
    if validate {
        check(catalog, info, now_us, &view)?;
    }
    catalog.put_view(view)
}

/// The checks of a new view (module doc).
fn check(catalog: &Catalog, info: &SessionInfo, now_us: i64, view: &ViewMeta) -> Result<()> {
    if reaches(catalog, &view.query, (&view.db, &view.name), 0) {
        return Err(recursion(&view.db, &view.name));
    }
    let env = crate::show::statement_env(catalog, quill_storage::ReadView::current(0), &[], now_us, info);
    let (plan, _) = query::plan_query(&env, &view.query, &[])?;
    let names: Vec<String> = if view.columns.is_empty() {
        plan.columns.iter().map(|c| c.name.clone()).collect()
    } else if view.columns.len() == plan.columns.len() {
        view.columns.clone()
    } else {
        return Err(SqlError::new(
            codes::ER_VIEW_WRONG_LIST,
            "In definition of view, derived table or common table expression, SELECT list and column names list have different column counts",
        ));
    };
    for (i, n) in names.iter().enumerate() {
        if names[..i].iter().any(|m| m.eq_ignore_ascii_case(n)) {
            return Err(SqlError::new(codes::ER_DUP_FIELDNAME, format!("Duplicate column name '{n}'")));
        }
    }
    Ok(())
}

/// Whether `query` reads the view `target`, directly or through other views.
fn reaches(catalog: &Catalog, query: &ast::Query, target: (&str, &str), depth: usize) -> bool {
    if depth > VIEW_NESTING_MAX {
        return true;
    }
    tables_read(query)
        .iter()
        .any(|(db, name)| (db.as_str(), name.as_str()) == target || catalog.view(db, name).is_some_and(|v| reaches(catalog, &v.query, target, depth + 1)))
}

/// Qualifies every one-part table name of `query` with `db`, but the names of CTEs the
/// query defines.
fn qualify(query: &mut ast::Query, db: &str) {
    qualify_tables(query, db);
}

/// Qualifies every table name in `node` that names no common table expression with `db`
/// (a view's query; a trigger's statements, which read and write in the trigger's database
/// whatever the session's default is).
pub(crate) fn qualify_tables<V: VisitMut>(node: &mut V, db: &str) {
    let _ = VisitMut::visit(node, &mut Qualify { db, ctes: Vec::new(), functions: false });
}

/// [`qualify_tables`], and the names of calls that are not built-in functions' (stored
/// functions, which a stored program finds in its own database).
pub(crate) fn qualify_tables_and_functions<V: VisitMut>(node: &mut V, db: &str) {
    let _ = VisitMut::visit(node, &mut Qualify { db, ctes: Vec::new(), functions: true });
}

struct Qualify<'d> {
    db: &'d str,
    ctes: Vec<String>,
    functions: bool,
}

impl VisitorMut for Qualify<'_> {
    type Break = ();
    fn pre_visit_query(&mut self, query: &mut ast::Query) -> ControlFlow<()> {
        if let Some(with) = &query.with {
            self.ctes.extend(with.cte_tables.iter().map(|c| c.alias.name.value.clone()));
        }
        ControlFlow::Continue(())
    }
    fn pre_visit_relation(&mut self, name: &mut ast::ObjectName) -> ControlFlow<()> {
        if let [ast::ObjectNamePart::Identifier(table)] = name.0.as_mut_slice()
            && !self.ctes.contains(&table.value)
        {
            table.quote_style = Some('`');
            name.0.insert(0, ast::ObjectNamePart::Identifier(ast::Ident::with_quote('`', self.db)));
        }
        ControlFlow::Continue(())
    }
    fn pre_visit_expr(&mut self, expr: &mut ast::Expr) -> ControlFlow<()> {
        if self.functions
            && let ast::Expr::Function(f) = expr
            && f.over.is_none()
            && let [ast::ObjectNamePart::Identifier(name)] = f.name.0.as_slice()
        {
            let argc = match &f.args {
                ast::FunctionArguments::List(l) => l.args.len(),
                _ => 0,
            };
            if !crate::bind::is_builtin_function(&name.value, argc) {
                f.name.0.insert(0, ast::ObjectNamePart::Identifier(ast::Ident::with_quote('`', self.db)));
            }
        }
        ControlFlow::Continue(())
    }
}

fn current_user(info: &SessionInfo) -> String {
    format!("{}@{}", quote(&info.user), quote(&info.account_host))
}

fn not_view(db: &str, name: &str) -> SqlError {
    SqlError::new(codes::ER_WRONG_OBJECT, format!("'{db}.{name}' is not VIEW"))
}

/// DROP VIEW [IF EXISTS] v, ...: every name is checked before any is dropped.
///
/// # Errors
/// 1347 for a table; 1051 naming each missing view (a note each with IF EXISTS).
pub fn drop_views(catalog: &mut Catalog, info: &SessionInfo, names: &[ast::ObjectName], if_exists: bool, warnings: &mut Vec<Warning>) -> Result<()> {
    let mut found = Vec::new();
    let mut missing = Vec::new();
    for n in names {
        let (db, name) = query::resolve_table_name(info, n)?;
        if catalog.view(&db, &name).is_some() {
            found.push((db, name));
        } else if catalog.table(&db, &name).is_ok() {
            return Err(not_view(&db, &name));
        } else {
            missing.push(format!("{db}.{name}"));
        }
    }
    if !missing.is_empty() {
        if !if_exists {
            return Err(SqlError::new(codes::ER_BAD_TABLE_ERROR, format!("Unknown table '{}'", missing.join(","))));
        }
        for m in missing {
            warnings.push(Warning { level: "Note", code: codes::ER_BAD_TABLE_ERROR.0, message: format!("Unknown table '{m}'") });
        }
    }
    for (db, name) in found {
        catalog.remove_view(&db, &name);
    }
    Ok(())
}

/// What the log records for a view's CREATE or ALTER: `CREATE OR REPLACE` and the view's
/// whole definition (its definer, its tables qualified), so a replay or a replica makes the
/// same view whoever runs it. `None` for other statements.
#[must_use]
pub fn logged_statement(stmt: &ast::Statement, catalog: &Catalog, info: &SessionInfo) -> Option<String> {
    let name = match stmt {
        ast::Statement::CreateView(cv) => &cv.name,
        ast::Statement::AlterView { name, .. } => name,
        _ => return None,
    };
    let (db, name) = query::resolve_table_name(info, name).ok()?;
    let definition = catalog.view(&db, &name)?.definition();
    Some(format!("CREATE OR REPLACE {}", definition.strip_prefix("CREATE ").unwrap_or(&definition)))
}

/// SHOW CREATE VIEW's columns and row.
#[must_use]
pub fn show_create(view: &ViewMeta, info: &SessionInfo) -> query::ResultSet {
    let text = crate::types::SqlType::varchar(1024);
    let column = |n: &str| query::OutColumn::computed(n, text.clone());
    query::ResultSet {
        columns: vec![column("View"), column("Create View"), column("character_set_client"), column("collation_connection")],
        rows: vec![vec![
            quill_storage::Value::Str(view.name.clone()),
            quill_storage::Value::Str(view.definition()),
            quill_storage::Value::Str(info.vars.get("character_set_client").unwrap_or("utf8mb4").to_owned()),
            quill_storage::Value::Str(info.vars.get("collation_connection").unwrap_or("utf8mb4_0900_ai_ci").to_owned()),
        ]],
    }
}

/// information_schema.VIEWS' rows, for `catalog`'s views.
#[must_use]
pub fn schema_rows(catalog: &Catalog, updatable: impl Fn(&ViewMeta) -> bool) -> Vec<Vec<quill_storage::Value>> {
    let s = |x: &str| quill_storage::Value::Str(x.to_owned());
    catalog
        .databases
        .values()
        .flat_map(|d| d.views.values())
        .map(|v| {
            vec![
                s("def"),
                s(&v.db),
                s(&v.name),
                s(&v.query.to_string()),
                s("NONE"),
                s(if updatable(v) { "YES" } else { "NO" }),
                s(&v.definer.replace('`', "")),
                s(v.security),
                s("utf8mb4"),
                s("utf8mb4_0900_ai_ci"),
            ]
        })
        .collect()
}
