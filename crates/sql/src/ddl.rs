//! Data definition: databases, tables and indexes.
//!
//! DDL commits any open transaction first (as MySQL does), then changes a copy of the
//! catalog, which the session installs once the change is logged (see
//! `Session::ddl`). ALTER TABLE rebuilds the table: a new definition, and every
//! committed row copied into it; TRUNCATE puts an empty table in the old one's place.

use quill_storage::{Collation, ReadView, Value};
use sqlparser::ast::{self, ColumnOption, TableConstraint};

mod alter;
mod databases;

pub use alter::alter_table;
pub use databases::{alter_database, create_database, database_collation, drop_database};

use crate::catalog::{Catalog, Column, ColumnDefault, IndexMeta, ROW_FORMATS, TableMeta};
use crate::error::{Result, SqlError, Warning, codes};
use crate::expr::RowCtx;
use crate::foreign_keys::{self, ForeignKey};
use crate::query::{self, Env};
use crate::session_info::SessionInfo;
use crate::types::{SqlType, WriteContext, coerce_to_column};

use alter::rebuild;

fn ident_name(n: &ast::ObjectName) -> String {
    n.0.last().map(|p| p.as_ident().map_or_else(|| p.to_string(), |i| i.value.clone())).unwrap_or_default()
}

fn index_columns(t_cols: &[Column], cols: &[ast::IndexColumn]) -> Result<Vec<usize>> {
    cols.iter()
        .map(|ic| {
            let name = match &ic.column.expr {
                ast::Expr::Identifier(i) => i.value.clone(),
                // `col(10)`: a prefix index, indexed here on the whole column.
                ast::Expr::Function(f) => ident_name(&f.name),
                other => return Err(SqlError::unsupported(format!("index on expression {other}"))),
            };
            t_cols
                .iter()
                .position(|c| c.name.eq_ignore_ascii_case(&name))
                .ok_or_else(|| SqlError::new(codes::ER_KEY_COLUMN_DOES_NOT_EXITS, format!("Key column '{name}' doesn't exist in table")))
        })
        .collect()
}

fn default_from_ast(env: &Env<'_>, e: &ast::Expr, col: &Column) -> Result<ColumnDefault> {
    let is_now = |e: &ast::Expr| match e {
        ast::Expr::Identifier(i) => ["CURRENT_TIMESTAMP", "NOW", "LOCALTIMESTAMP", "LOCALTIME"].iter().any(|n| i.value.eq_ignore_ascii_case(n)),
        ast::Expr::Function(f) => ["CURRENT_TIMESTAMP", "NOW", "LOCALTIMESTAMP", "LOCALTIME"].iter().any(|n| ident_name(&f.name).eq_ignore_ascii_case(n)),
        _ => false,
    };
    if is_now(e) {
        if !matches!(col.ty, SqlType::DateTime(_) | SqlType::Timestamp(_)) {
            return Err(SqlError::new(codes::ER_INVALID_DEFAULT, format!("Invalid default value for '{}'", col.name)));
        }
        return Ok(ColumnDefault::CurrentTimestamp);
    }
    let scope = crate::bind::Scope::default();
    if let ast::Expr::Nested(inner) = e {
        // `DEFAULT (expr)`: kept as an expression and evaluated for each row; checked here
        // by binding it (an unknown function or a column is refused now, not at INSERT).
        crate::bind::Binder::new(env, &scope, "default").bind(inner)?;
        if col.auto_increment || col.generated.is_some() {
            return Err(SqlError::new(codes::ER_INVALID_DEFAULT, format!("Invalid default value for '{}'", col.name)));
        }
        return Ok(ColumnDefault::Expression(inner.clone()));
    }
    let v = crate::bind::Binder::new(env, &scope, "default").bind(e)?.eval(env, &RowCtx::new(&[]))?;
    if v.is_null() {
        if !col.nullable {
            return Err(SqlError::new(codes::ER_INVALID_DEFAULT, format!("Invalid default value for '{}'", col.name)));
        }
        return Ok(ColumnDefault::Value(Value::Null));
    }
    let mut warnings = Vec::new();
    let mut cx = WriteContext { column: &col.name, row: 1, strict: true, warnings: &mut warnings };
    let v = coerce_to_column(v, &col.ty, &mut cx).map_err(|_| SqlError::new(codes::ER_INVALID_DEFAULT, format!("Invalid default value for '{}'", col.name)))?;
    Ok(ColumnDefault::Value(v))
}

/// Build a column from its definition; returns it and whether it declared
/// PRIMARY KEY / UNIQUE inline.
fn column_from_ast(env: &Env<'_>, def: &ast::ColumnDef, table_collation: Collation) -> Result<(Column, bool, bool)> {
    let mut ty = SqlType::from_ast(&def.data_type, table_collation)?;
    let mut col = Column {
        name: def.name.value.clone(),
        ty: ty.clone(),
        nullable: true,
        default: ColumnDefault::None,
        auto_increment: false,
        on_update_current_timestamp: false,
        comment: String::new(),
        generated: None,
    };
    let (mut primary, mut unique) = (false, false);
    let mut default_expr = None;
    for opt in &def.options {
        match &opt.option {
            // Columns are nullable unless declared NOT NULL.
            ColumnOption::Null => {}
            ColumnOption::NotNull => col.nullable = false,
            ColumnOption::Default(e) => default_expr = Some(e.clone()),
            ColumnOption::PrimaryKey(_) => primary = true,
            ColumnOption::Unique(_) => unique = true,
            ColumnOption::Comment(c) => col.comment = c.clone(),
            ColumnOption::OnUpdate(_) => col.on_update_current_timestamp = true,
            ColumnOption::Collation(c) => {
                let name = c.to_string();
                let coll = Collation::from_name(&name).ok_or_else(|| SqlError::new(codes::ER_UNKNOWN_COLLATION, format!("Unknown collation: '{name}'")))?;
                ty = ty.with_collation(coll);
            }
            ColumnOption::CharacterSet(_) => {}
            ColumnOption::DialectSpecific(tokens) => {
                let text: Vec<String> = tokens.iter().map(ToString::to_string).collect();
                if text.iter().any(|t| t.eq_ignore_ascii_case("AUTO_INCREMENT")) {
                    col.auto_increment = true;
                }
            }
            ColumnOption::ForeignKey(_) | ColumnOption::Check(_) => {}
            ColumnOption::Generated { generation_expr: Some(expr), generation_expr_mode, .. } => {
                col.generated =
                    Some(crate::catalog::Generated { expr: expr.clone(), stored: matches!(generation_expr_mode, Some(ast::GeneratedExpressionMode::Stored)) });
            }
            other => return Err(SqlError::unsupported(format!("column option {other}"))),
        }
    }
    col.ty = ty;
    if primary {
        col.nullable = false;
    }
    if let Some(e) = default_expr {
        col.default = default_from_ast(env, &e, &col)?;
    } else if col.nullable {
        col.default = ColumnDefault::Value(Value::Null);
    }
    Ok((col, primary, unique))
}

fn unique_index_name(indexes: &[IndexMeta], base: &str) -> String {
    if !indexes.iter().any(|i| i.name.eq_ignore_ascii_case(base)) {
        return base.to_owned();
    }
    (2..).map(|n| format!("{base}_{n}")).find(|c| !indexes.iter().any(|i| i.name.eq_ignore_ascii_case(c))).expect("infinite range")
}

/// Check a table definition before it is created.
fn validate(columns: &[Column], primary: &[usize], indexes: &[IndexMeta]) -> Result<()> {
    for (i, c) in columns.iter().enumerate() {
        if columns[..i].iter().any(|d| d.name.eq_ignore_ascii_case(&c.name)) {
            return Err(SqlError::new(codes::ER_DUP_FIELDNAME, format!("Duplicate column name '{}'", c.name)));
        }
    }
    let autos: Vec<usize> = (0..columns.len()).filter(|&i| columns[i].auto_increment).collect();
    if autos.len() > 1 || autos.iter().any(|&a| primary.first() != Some(&a) && !indexes.iter().any(|ix| ix.columns.first() == Some(&a))) {
        return Err(SqlError::new(codes::ER_WRONG_AUTO_KEY, "Incorrect table definition; there can be only one auto column and it must be defined as a key"));
    }
    Ok(())
}

/// CREATE TABLE (plain, LIKE, or AS SELECT).
///
/// # Errors
/// 1050 if it exists, 1049, and definition errors.
pub fn create_table(catalog: &mut Catalog, info: &SessionInfo, env_params: (&[Value], i64), ct: &ast::CreateTable, warnings: &mut Vec<Warning>) -> Result<()> {
    let (db, name) = query::resolve_table_name(info, &ct.name)?;
    catalog.database(&db)?;
    if catalog.database(&db)?.tables.contains_key(&name) {
        let msg = format!("Table '{name}' already exists");
        if ct.if_not_exists {
            warnings.push(Warning { level: "Note", code: codes::ER_TABLE_EXISTS_ERROR.0, message: msg });
            return Ok(());
        }
        return Err(SqlError::new(codes::ER_TABLE_EXISTS_ERROR, msg));
    }
    if let Some(like) = &ct.like {
        let src_name = match like {
            ast::CreateTableLikeKind::Parenthesized(l) | ast::CreateTableLikeKind::Plain(l) => &l.name,
        };
        let (sdb, sname) = query::resolve_table_name(info, src_name)?;
        catalog.table(&sdb, &sname)?;
        let id = catalog.allocate_table_id();
        let src = catalog.table(&sdb, &sname)?;
        let mut meta = TableMeta::new(id, &db, &name, src.columns.clone(), src.primary.clone(), src.indexes.clone(), src.collation)
            .with_storage(src.row_format, catalog.tablespace().as_deref())?;
        meta.checks.clone_from(&src.checks);
        return catalog.add_table(meta);
    }
    // A table takes its database's default collation unless it names its own.
    let mut table_collation = catalog.database(&db)?.collation;
    let mut collate = None;
    let mut auto_increment_start = 1u64;
    let mut comment = String::new();
    let mut row_format = None;
    let opts = match &ct.table_options {
        ast::CreateTableOptions::Plain(o)
        | ast::CreateTableOptions::With(o)
        | ast::CreateTableOptions::Options(o)
        | ast::CreateTableOptions::TableProperties(o) => o.clone(),
        ast::CreateTableOptions::None => vec![],
    };
    for o in &opts {
        if let ast::SqlOption::NamedParenthesizedList(list) = o
            && list.key.value.eq_ignore_ascii_case("ENGINE")
            && let Some(engine) = &list.name
        {
            check_engine(info, &engine.value, &name, warnings)?;
        }
        if let ast::SqlOption::Comment(ast::CommentDef::WithEq(c) | ast::CommentDef::WithoutEq(c)) = o {
            comment.clone_from(c);
        }
        if let ast::SqlOption::KeyValue { key, value } = o {
            let k = key.value.to_ascii_uppercase();
            let v = value.to_string().trim_matches(['\'', '"']).to_owned();
            match k.as_str() {
                "COLLATE" | "DEFAULT COLLATE" => collate = Some(collation_named(&v)?),
                "AUTO_INCREMENT" => auto_increment_start = v.parse().unwrap_or(1),
                "COMMENT" => comment = v,
                "ROW_FORMAT" => row_format = Some(self::row_format(&v)?),
                "CHARSET" | "DEFAULT CHARSET" | "CHARACTER SET" | "DEFAULT CHARACTER SET" => table_collation = charset_collation(&v),
                _ => {}
            }
        }
    }
    // An explicit COLLATE wins over the character set's default, in either order.
    if let Some(c) = collate {
        table_collation = c;
    }
    let params: &[Value] = env_params.0;
    let (columns, primary, indexes) = {
        let env = crate::show::statement_env(catalog, ReadView::current(0), params, env_params.1, info);
        let mut columns = Vec::new();
        let mut primary: Vec<usize> = Vec::new();
        let mut indexes: Vec<IndexMeta> = Vec::new();
        for def in &ct.columns {
            let (col, pk, uq) = column_from_ast(&env, def, table_collation)?;
            let pos = columns.len();
            columns.push(col);
            if pk {
                if !primary.is_empty() {
                    return Err(SqlError::new(codes::ER_MULTIPLE_PRI_KEY, "Multiple primary key defined"));
                }
                primary = vec![pos];
            }
            if uq {
                let n = unique_index_name(&indexes, &columns[pos].name);
                indexes.push(IndexMeta { name: n, columns: vec![pos], unique: true });
            }
        }
        for c in &ct.constraints {
            add_constraint(c, &mut columns, &mut primary, &mut indexes)?;
        }
        (columns, primary, indexes)
    };
    // Keys last: an index the statement declares anywhere may serve one.
    let mut indexes = indexes;
    let mut declared: Vec<ForeignKey> = Vec::new();
    for c in &ct.constraints {
        if let TableConstraint::ForeignKey(fk) = c {
            let child = foreign_keys::Child { db: &db, name: &name, columns: &columns, primary: &primary, indexes: &mut indexes, existing: &declared };
            let fk = foreign_keys::declare(catalog, child, fk, info.foreign_key_checks())?;
            declared.push(fk);
        }
    }
    // CREATE TABLE ... AS SELECT.
    let mut rows: Vec<Vec<Value>> = Vec::new();
    let mut columns = columns;
    if let Some(q) = &ct.query {
        let env = crate::show::statement_env(catalog, ReadView::current(0), params, env_params.1, info);
        let (plan, _) = query::plan_query(&env, q, &[])?;
        let rs = query::run_select(&plan, &env, None)?;
        let mut mapping = Vec::new();
        for oc in &rs.columns {
            match columns.iter().position(|c| c.name.eq_ignore_ascii_case(&oc.name)) {
                Some(p) => mapping.push(p),
                None => {
                    let ty = match &oc.ty {
                        SqlType::Null => SqlType::Binary(0),
                        SqlType::VarChar { len, collation } => SqlType::VarChar { len: (*len).max(1), collation: *collation },
                        other => other.clone(),
                    };
                    let nullable = oc.flags & crate::query::flags::NOT_NULL == 0;
                    columns.push(Column {
                        name: oc.name.clone(),
                        ty,
                        nullable,
                        default: if nullable { ColumnDefault::Value(Value::Null) } else { ColumnDefault::None },
                        auto_increment: false,
                        on_update_current_timestamp: false,
                        comment: String::new(),
                        generated: None,
                    });
                    mapping.push(columns.len() - 1);
                }
            }
        }
        for r in rs.rows {
            let mut full: Vec<Value> = columns
                .iter()
                .map(|c| match &c.default {
                    ColumnDefault::Value(v) => Ok(v.clone()),
                    ColumnDefault::Expression(_) => crate::dml::column_default(c, env.now_us, info),
                    _ => Ok(Value::Null),
                })
                .collect::<Result<_>>()?;
            for (v, &p) in r.into_iter().zip(&mapping) {
                full[p] = v;
            }
            rows.push(full);
        }
    }
    validate(&columns, &primary, &indexes)?;
    let id = catalog.allocate_table_id();
    let mut meta = TableMeta::new(id, &db, &name, columns, primary, indexes, table_collation).with_storage(row_format, catalog.tablespace().as_deref())?;
    row_format_warnings(&meta, warnings);
    meta.comment = comment;
    meta.foreign_keys = declared;
    meta.checks = crate::check_constraints::declared(&name, &ct.columns, &ct.constraints)?;
    crate::check_constraints::validate(&crate::show::statement_env(catalog, ReadView::current(0), params, env_params.1, info), &meta)?;
    meta.data.set_auto_increment(auto_increment_start.max(1));
    // Rows of CREATE ... SELECT are written and committed with the DDL itself.
    fill_new_table(&meta, rows, warnings)?;
    catalog.add_table(meta)
}

/// Writes `rows` (every column, in order) into `meta`, a table being created and seen by no
/// one else yet, committed with the statement that creates it: the rows of `CREATE TABLE ...
/// SELECT`, and those a replica applies with a `CREATE TABLE ... SELECT` it replicates.
///
/// # Errors
/// A value the column cannot hold (strictly), or a duplicate key (1062).
pub fn fill_new_table(meta: &TableMeta, rows: Vec<Vec<Value>>, warnings: &mut Vec<Warning>) -> Result<()> {
    for (n, r) in rows.into_iter().enumerate() {
        let mut coerced = Vec::with_capacity(r.len());
        for (v, c) in r.into_iter().zip(&meta.columns) {
            let mut cx = WriteContext { column: &c.name, row: n as u64 + 1, strict: true, warnings };
            coerced.push(coerce_to_column(v, &c.ty, &mut cx)?);
        }
        let pk = meta.data.write_row(&meta.data.write_latch(), 0, &coerced).map_err(|e| match e {
            quill_storage::WriteError::Duplicate { .. } => SqlError::new(codes::ER_DUP_ENTRY, format!("Duplicate entry for key '{}.PRIMARY'", meta.name)),
            quill_storage::WriteError::Locked { .. } => SqlError::internal("new table row locked"),
        })?;
        meta.data.commit_row(0, &pk, 0, 0);
    }
    Ok(())
}

fn add_constraint(c: &TableConstraint, columns: &mut [Column], primary: &mut Vec<usize>, indexes: &mut Vec<IndexMeta>) -> Result<()> {
    match c {
        TableConstraint::PrimaryKey(pk) => {
            if !primary.is_empty() {
                return Err(SqlError::new(codes::ER_MULTIPLE_PRI_KEY, "Multiple primary key defined"));
            }
            *primary = index_columns(columns, &pk.columns)?;
            for &p in primary.iter() {
                columns[p].nullable = false;
                if columns[p].default == ColumnDefault::Value(Value::Null) {
                    columns[p].default = ColumnDefault::None;
                }
            }
        }
        TableConstraint::Unique(u) => {
            let cols = index_columns(columns, &u.columns)?;
            let base = u.name.as_ref().or(u.index_name.as_ref()).map_or_else(|| columns[cols[0]].name.clone(), |n| n.value.clone());
            if u.name.is_some() && indexes.iter().any(|i| i.name.eq_ignore_ascii_case(&base)) {
                return Err(SqlError::new(codes::ER_DUP_KEYNAME, format!("Duplicate key name '{base}'")));
            }
            let name = unique_index_name(indexes, &base);
            indexes.push(IndexMeta { name, columns: cols, unique: true });
        }
        TableConstraint::Index(ix) => {
            let cols = index_columns(columns, &ix.columns)?;
            let base = ix.name.as_ref().map_or_else(|| columns[cols[0]].name.clone(), |n| n.value.clone());
            if ix.name.is_some() && indexes.iter().any(|i| i.name.eq_ignore_ascii_case(&base)) {
                return Err(SqlError::new(codes::ER_DUP_KEYNAME, format!("Duplicate key name '{base}'")));
            }
            let name = unique_index_name(indexes, &base);
            indexes.push(IndexMeta { name, columns: cols, unique: false });
        }
        TableConstraint::ForeignKey(_) | TableConstraint::Check(_) => {}
        other => return Err(SqlError::unsupported(format!("constraint {other}"))),
    }
    Ok(())
}

/// DROP TABLE [IF EXISTS] t1, t2...
///
/// All or nothing, as MySQL 8's atomic DDL: every name is resolved and checked before any
/// table is dropped.
///
/// # Errors
/// 1051 for a missing table without IF EXISTS (nothing is dropped then).
pub fn drop_tables(catalog: &mut Catalog, info: &SessionInfo, names: &[ast::ObjectName], if_exists: bool, warnings: &mut Vec<Warning>) -> Result<()> {
    let resolved = names.iter().map(|n| query::resolve_table_name(info, n)).collect::<Result<Vec<_>>>()?;
    let missing: Vec<String> = resolved.iter().filter(|(db, t)| catalog.table(db, t).is_err()).map(|(db, t)| format!("{db}.{t}")).collect();
    if !missing.is_empty() {
        let msg = format!("Unknown table '{}'", missing.join(","));
        if !if_exists {
            return Err(SqlError::new(codes::ER_BAD_TABLE_ERROR, msg));
        }
        warnings.push(Warning { level: "Note", code: codes::ER_BAD_TABLE_ERROR.0, message: msg });
    }
    if info.foreign_key_checks() {
        for (db, t) in &resolved {
            let outside =
                foreign_keys::children_of(catalog, db, t).into_iter().find(|(child, _)| !resolved.iter().any(|(d, n)| *d == child.db && *n == child.name));
            if let Some((child, fk)) = outside {
                return Err(SqlError::new(
                    codes::ER_FK_CANNOT_DROP_PARENT,
                    format!("Cannot drop table '{t}' referenced by a foreign key constraint '{}' on table '{}'.", fk.name, child.name),
                ));
            }
        }
    }
    for (db, t) in &resolved {
        let _ = catalog.remove_table(db, t); // absent ones were reported above
        catalog.remove_triggers_of(db, t);
    }
    Ok(())
}

/// TRUNCATE TABLE.
///
/// # Errors
/// 1146.
/// Engines of MySQL and MariaDB that Quill does not have: a table asking for one gets the
/// default engine and warning 1266, whatever the SQL mode, so schemas and dumps written for
/// them load (a documented difference: MySQL would create the table in that engine).
const SUBSTITUTED_ENGINES: [&str; 10] = ["MyISAM", "MEMORY", "HEAP", "Aria", "ARCHIVE", "CSV", "BLACKHOLE", "MRG_MYISAM", "MERGE", "FEDERATED"];

/// Warning 1478 when `meta`'s rows use another format than its `ROW_FORMAT` names: a
/// format Quill does not have (COMPACT, REDUNDANT, COMPRESSED, PAGE), or FIXED for a table
/// with BLOB or TEXT columns, which have no fixed size (MyISAM's rule).
fn row_format_warnings(meta: &TableMeta, warnings: &mut Vec<Warning>) {
    let Some(asked) = meta.row_format.filter(|f| !matches!(*f, "DEFAULT" | "DYNAMIC")) else { return };
    if asked == "FIXED" && matches!(meta.data.row_format(), quill_storage::RowFormat::Fixed(_)) {
        return;
    }
    let why = if asked == "FIXED" { " (BLOB and TEXT columns have no fixed size)" } else { "" };
    warnings.push(Warning { level: "Warning", code: codes::ER_ILLEGAL_HA_CREATE_OPTION.0, message: format!("Quill: assuming ROW_FORMAT=DYNAMIC{why}.") });
}

/// `ENGINE=engine` of CREATE TABLE `table`: the engines of `storage::handler::ENGINES` are
/// used; a known MySQL engine Quill lacks is replaced by the default with warning 1266; an
/// unknown name is error 1286 under `NO_ENGINE_SUBSTITUTION` (MySQL 8's default), else
/// warnings 1286 and 1266.
fn check_engine(info: &SessionInfo, engine: &str, table: &str, warnings: &mut Vec<Warning>) -> Result<()> {
    let default = quill_storage::handler::DEFAULT_ENGINE;
    if quill_storage::handler::ENGINES.iter().any(|(e, _)| e.eq_ignore_ascii_case(engine)) {
        return Ok(());
    }
    let substituted =
        Warning { level: "Warning", code: codes::WARN_USING_OTHER_HANDLER.0, message: format!("Using storage engine {default} for table '{table}'") };
    if SUBSTITUTED_ENGINES.iter().any(|e| e.eq_ignore_ascii_case(engine)) {
        warnings.push(substituted);
        return Ok(());
    }
    let unknown = format!("Unknown storage engine '{engine}'");
    if info.vars.get("sql_mode").is_some_and(|m| m.contains("NO_ENGINE_SUBSTITUTION")) {
        return Err(SqlError::new(codes::ER_UNKNOWN_STORAGE_ENGINE, unknown));
    }
    warnings.push(Warning { level: "Warning", code: codes::ER_UNKNOWN_STORAGE_ENGINE.0, message: unknown });
    warnings.push(substituted);
    Ok(())
}

pub fn truncate(catalog: &mut Catalog, info: &SessionInfo, name: &ast::ObjectName) -> Result<()> {
    let (db, t) = query::resolve_table_name(info, name)?;
    let children = foreign_keys::children_of(catalog, &db, &t);
    if let Some((child, fk)) = children.into_iter().find(|(child, _)| child.db != db || child.name != t)
        && info.foreign_key_checks()
    {
        return Err(SqlError::new(
            codes::ER_TRUNCATE_ILLEGAL_FK,
            format!("Cannot truncate a table referenced in a foreign key constraint (`{}`.`{}`, CONSTRAINT `{}`)", child.db, child.name, fk.name),
        ));
    }
    // A new, empty table takes the old one's place; statements still running on the old
    // snapshot (none can write it: TRUNCATE holds its metadata lock) keep what they read.
    let empty = catalog.table(&db, &t)?.empty_copy(catalog.tablespace().as_deref())?;
    catalog.replace_table(empty)
}

/// RENAME TABLE a TO b [, c TO d ...], one pair after another, as MySQL runs it (so `a TO
/// tmp, b TO a, tmp TO b` swaps two tables).
///
/// # Errors
/// As [`Catalog::rename`]; nothing is renamed when one pair fails (the caller drops the copy).
pub fn rename_tables(catalog: &mut Catalog, info: &SessionInfo, pairs: &[ast::RenameTable]) -> Result<()> {
    for pair in pairs {
        let (db, name) = query::resolve_table_name(info, &pair.old_name)?;
        let (new_db, new_name) = query::resolve_table_name(info, &pair.new_name)?;
        catalog.rename((&db, &name), (&new_db, &new_name))?;
    }
    Ok(())
}

/// The options of a table a rebuild keeps, or that ALTER TABLE changes.
#[derive(Debug, Clone)]
struct TableOptions {
    row_format: Option<&'static str>,
    comment: String,
    collation: Collation,
    /// This statement named a COLLATE: a CHARSET in it, before or after, does not undo it
    /// (as in CREATE TABLE).
    collate_named: bool,
}

impl TableOptions {
    fn of(t: &TableMeta) -> TableOptions {
        TableOptions { row_format: t.row_format, comment: t.comment.clone(), collation: t.collation, collate_named: false }
    }
}

/// A table option's value as `alter_options` wrote it (quoted), unquoted.
fn option_text(value: &ast::Expr) -> String {
    match value {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::SingleQuotedString(s) => s.clone(),
            other => other.to_string(),
        },
        other => other.to_string(),
    }
}

/// One table option of ALTER TABLE, as `alter_options::rewrite` passes it on: the engine is
/// checked as CREATE TABLE checks it (the table keeps Quill's one engine), the row format,
/// comment and default collation change as CREATE TABLE sets them.
fn table_option(info: &SessionInfo, table: &str, option: &ast::SqlOption, options: &mut TableOptions, warnings: &mut Vec<Warning>) -> Result<()> {
    use crate::alter_options as names;
    let ast::SqlOption::KeyValue { key, value } = option else { return Err(SqlError::parse(&option.to_string())) };
    let value = option_text(value);
    match key.value.as_str() {
        names::ENGINE => check_engine(info, &value, table, warnings)?,
        names::ROW_FORMAT => options.row_format = Some(row_format(&value)?),
        names::COMMENT => options.comment = value,
        names::CHARSET if options.collate_named => {}
        names::CHARSET => options.collation = charset_collation(&value),
        names::COLLATE => {
            options.collation = collation_named(&value)?;
            options.collate_named = true;
        }
        other => return Err(SqlError::parse(other)),
    }
    Ok(())
}

/// A table's default collation for `[DEFAULT] CHARSET=name`: binary's, or Quill's default
/// for a text character set (tables store text as utf8mb4).
fn charset_collation(name: &str) -> Collation {
    if name.eq_ignore_ascii_case("binary") { Collation::Binary } else { Collation::default() }
}

/// The collation `COLLATE=name` names.
///
/// # Errors
/// 1273 for a collation Quill does not have.
fn collation_named(name: &str) -> Result<Collation> {
    Collation::from_name(name).ok_or_else(|| SqlError::new(codes::ER_UNKNOWN_COLLATION, format!("Unknown collation: '{name}'")))
}

/// A `ROW_FORMAT` value, as one of [`ROW_FORMATS`].
fn row_format(value: &str) -> Result<&'static str> {
    ROW_FORMATS
        .iter()
        .find(|f| f.eq_ignore_ascii_case(value))
        .copied()
        .ok_or_else(|| SqlError::new(codes::ER_PARSE_ERROR, format!("You have an error in your SQL syntax near '{value}'")))
}

/// CREATE [UNIQUE] INDEX.
///
/// # Errors
/// 1061 duplicate name; 1062 if a unique index meets duplicate rows.
pub fn create_index(catalog: &mut Catalog, info: &SessionInfo, ci: &ast::CreateIndex, warnings: &mut Vec<Warning>) -> Result<()> {
    let (db, tname) = query::resolve_table_name(info, &ci.table_name)?;
    let t = catalog.table(&db, &tname)?;
    let cols = index_columns(&t.columns, &ci.columns)?;
    let name = ci.name.as_ref().map_or_else(|| t.columns[cols[0]].name.clone(), ident_name);
    if t.indexes.iter().any(|i| i.name.eq_ignore_ascii_case(&name)) {
        if ci.if_not_exists {
            return Ok(());
        }
        return Err(SqlError::new(codes::ER_DUP_KEYNAME, format!("Duplicate key name '{name}'")));
    }
    let mut indexes = t.indexes.clone();
    indexes.push(IndexMeta { name, columns: cols, unique: ci.unique });
    let columns = t.columns.clone();
    let map = (0..columns.len()).map(Some).collect();
    let primary = t.primary.clone();
    let options = TableOptions::of(t);
    let keys = t.foreign_keys.clone();
    rebuild(catalog, &db, &tname, columns, map, primary, indexes, keys, options, (info, warnings), None)
}

/// DROP INDEX name ON table.
///
/// # Errors
/// 1091.
pub fn drop_index(catalog: &mut Catalog, info: &SessionInfo, index: &str, table: &ast::ObjectName, warnings: &mut Vec<Warning>) -> Result<()> {
    let (db, tname) = query::resolve_table_name(info, table)?;
    let t = catalog.table(&db, &tname)?;
    let columns = t.columns.clone();
    let map = (0..columns.len()).map(Some).collect();
    let mut primary = t.primary.clone();
    let mut indexes = t.indexes.clone();
    if index.eq_ignore_ascii_case("PRIMARY") {
        primary.clear();
    } else {
        let before = indexes.len();
        indexes.retain(|i| !i.name.eq_ignore_ascii_case(index));
        if before == indexes.len() {
            return Err(SqlError::new(codes::ER_CANT_DROP_FIELD_OR_KEY, format!("Can't DROP '{index}'; check that column/key exists")));
        }
    }
    let options = TableOptions::of(t);
    let keys = t.foreign_keys.clone();
    rebuild(catalog, &db, &tname, columns, map, primary, indexes, keys, options, (info, warnings), None)
}
