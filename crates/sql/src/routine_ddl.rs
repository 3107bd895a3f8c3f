//! Stored procedures and functions as statements: `CREATE PROCEDURE | FUNCTION`, `DROP
//! PROCEDURE | FUNCTION`, `SHOW CREATE PROCEDURE | FUNCTION`, `SHOW PROCEDURE | FUNCTION
//! STATUS`, and information_schema `ROUTINES` and `PARAMETERS`. Running them is
//! `session::call` (CALL) and `stored_functions` (a function in an expression).
//!
//! A routine is kept in its database (`program_meta`), compiled when made (its body's errors
//! are CREATE's), its statements' table names qualified with its database. Durable as DDL:
//! logged with its definer and database explicit, replayed, and written by each checkpoint as
//! a PROGRAM entry (`docs/checkpoint-format.md`).

use std::sync::Arc;

use quill_sql_frontend::program::{self, Kind, ParamMode};
use quill_sql_frontend::program_ddl::{ProgramStatement, RoutineDefinition};
use quill_sql_types::ident::quote_identifier as quote;
use quill_storage::Value;

use crate::catalog::Catalog;
use crate::error::{Result, SqlError, Warning, codes};
use crate::program_meta::{Creation, RoutineMeta};
use crate::query::OutColumn;
use crate::session_info::SessionInfo;
use crate::types::SqlType;

/// The database a routine statement means: its own qualifier, else the default database.
///
/// # Errors
/// 1046.
pub fn routine_database(info: &SessionInfo, db: Option<&String>) -> Result<String> {
    db.cloned().or_else(|| info.db.clone()).ok_or_else(SqlError::no_db)
}

/// CREATE PROCEDURE / FUNCTION on `catalog` (a copy the caller installs).
///
/// # Errors
/// 1049; 1304 for a routine of the name (a note with IF NOT EXISTS); a type Quill does not
/// know; the body's errors (`program::compile`).
pub fn create_routine(catalog: &mut Catalog, info: &SessionInfo, now_us: i64, def: &RoutineDefinition, warnings: &mut Vec<Warning>) -> Result<()> {
    let db = routine_database(info, def.db.as_ref())?;
    crate::trigger_ddl::check_name(&def.name)?;
    let kind = if def.function { "FUNCTION" } else { "PROCEDURE" };
    if catalog.routine(&db, &def.name, def.function).is_some() {
        let message = format!("{kind} {} already exists", def.name);
        if def.if_not_exists {
            warnings.push(Warning { level: "Note", code: codes::ER_SP_ALREADY_EXISTS.0, message });
            return Ok(());
        }
        return Err(SqlError::new(codes::ER_SP_ALREADY_EXISTS, message));
    }
    let collation = catalog.database(&db)?.collation;
    for p in &def.params {
        SqlType::from_ast(&p.ty, collation)?;
    }
    if let Some((ty, _)) = &def.returns {
        SqlType::from_ast(ty, collation)?;
    }
    let mut program = program::compile(if def.function { Kind::Function } else { Kind::Procedure }, &def.params, &def.body)?;
    crate::trigger_ddl::check_system_variables(&program)?;
    crate::trigger_ddl::qualify_program(&mut program, &db);
    catalog.add_routine(RoutineMeta {
        db,
        name: def.name.clone(),
        function: def.function,
        params: def.params.clone(),
        params_text: def.params_text.clone(),
        returns: def.returns.clone(),
        characteristics: def.characteristics.clone(),
        body: def.body_text.clone(),
        creation: Creation::now(info, now_us, def.definer.clone(), collation.name()),
        program: Arc::new(program),
    })
}

/// The error for a routine that is not there.
#[must_use]
pub fn no_such_routine(function: bool, db: &str, name: &str) -> SqlError {
    SqlError::new(codes::ER_SP_DOES_NOT_EXIST, format!("{} {db}.{name} does not exist", if function { "FUNCTION" } else { "PROCEDURE" }))
}

/// DROP PROCEDURE / FUNCTION [IF EXISTS] [db.]name.
///
/// # Errors
/// 1305 (a note with IF EXISTS); 1046.
pub fn drop_routine(
    catalog: &mut Catalog,
    info: &SessionInfo,
    function: bool,
    db: Option<&String>,
    name: &str,
    if_exists: bool,
    warnings: &mut Vec<Warning>,
) -> Result<()> {
    let db = routine_database(info, db)?;
    if catalog.remove_routine(&db, name, function).is_some() {
        return Ok(());
    }
    let e = no_such_routine(function, &db, name);
    if if_exists {
        warnings.push(Warning { level: "Note", code: e.code, message: e.message });
        return Ok(());
    }
    Err(e)
}

/// The text CREATE PROCEDURE / FUNCTION is logged as: its definer and database explicit.
#[must_use]
pub fn logged_statement(statement: &ProgramStatement, catalog: &Catalog, info: &SessionInfo) -> Option<String> {
    let ProgramStatement::CreateRoutine(def) = statement else { return None };
    let db = routine_database(info, def.db.as_ref()).ok()?;
    let r = catalog.routine(&db, &def.name, def.function)?;
    let definition = r.definition();
    // `CREATE DEFINER=u@h PROCEDURE `p`(...)`: the name qualified.
    let at = definition.find(&format!(" {} ", r.kind()))? + r.kind().len() + 2;
    Some(format!("{}{}.{}", &definition[..at], quote(&db), &definition[at..]))
}

fn text(n: u32) -> SqlType {
    SqlType::varchar(n)
}

fn created(us: i64) -> Value {
    Value::DateTime(crate::types::round_micros(us, 0))
}

/// SHOW CREATE PROCEDURE / FUNCTION: its columns and its one row.
#[must_use]
pub fn show_create(r: &RoutineMeta) -> (Vec<OutColumn>, Vec<Value>) {
    let kind = if r.function { "Function" } else { "Procedure" };
    let names = [
        kind.to_owned(),
        "sql_mode".into(),
        format!("Create {kind}"),
        "character_set_client".into(),
        "collation_connection".into(),
        "Database Collation".into(),
    ];
    let columns = names.iter().map(|n| OutColumn::computed(n, text(1024))).collect();
    let s = |x: &str| Value::Str(x.to_owned());
    (
        columns,
        vec![
            s(&r.name),
            s(&r.creation.sql_mode),
            s(&r.definition()),
            s(&r.creation.character_set_client),
            s(&r.creation.collation_connection),
            s(&r.creation.database_collation),
        ],
    )
}

/// SHOW PROCEDURE | FUNCTION STATUS: its columns.
#[must_use]
pub fn status_columns() -> Vec<OutColumn> {
    let names = [
        "Db",
        "Name",
        "Type",
        "Definer",
        "Modified",
        "Created",
        "Security_type",
        "Comment",
        "character_set_client",
        "collation_connection",
        "Database Collation",
    ];
    names.iter().map(|n| OutColumn::computed(n, if matches!(*n, "Modified" | "Created") { SqlType::DateTime(0) } else { text(1024) })).collect()
}

/// SHOW PROCEDURE | FUNCTION STATUS rows: every routine of the kind `visible` lets through.
#[must_use]
pub fn status_rows(catalog: &Catalog, function: bool, like: Option<&str>, visible: impl Fn(&RoutineMeta) -> bool) -> Vec<Vec<Value>> {
    let s = |x: &str| Value::Str(x.to_owned());
    catalog
        .databases
        .values()
        .flat_map(|d| d.routines(function).values())
        .filter(|r| visible(r) && crate::show::like_filter(&r.name, like))
        .map(|r| {
            vec![
                s(&r.db),
                s(&r.name),
                s(r.kind()),
                s(&r.creation.definer_text()),
                created(r.creation.created_us),
                created(r.creation.created_us),
                s(if r.characteristics.security_invoker { "INVOKER" } else { "DEFINER" }),
                s(&r.characteristics.comment),
                s(&r.creation.character_set_client),
                s(&r.creation.collation_connection),
                s(&r.creation.database_collation),
            ]
        })
        .collect()
}

/// information_schema.ROUTINES rows (the columns are `schema_server::routines`').
#[must_use]
pub fn schema_rows(catalog: &Catalog, visible: impl Fn(&RoutineMeta) -> bool) -> Vec<Vec<Value>> {
    let s = |x: &str| Value::Str(x.to_owned());
    let mut rows = Vec::new();
    for d in catalog.databases.values() {
        for r in d.functions.values().chain(d.procedures.values()).filter(|r| visible(r)) {
            let returns = r.returns.as_ref().and_then(|(ty, _)| SqlType::from_ast(ty, d.collation).ok());
            rows.push(vec![
                s(&r.name),
                s("def"),
                s(&r.db),
                s(&r.name),
                s(r.kind()),
                s(&returns.as_ref().map(SqlType::data_type_name).unwrap_or_default()),
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
                r.returns.as_ref().map_or(Value::Null, |(_, text)| s(&text.to_lowercase())),
                s("SQL"),
                s(&r.body),
                Value::Null,
                Value::Null,
                s("SQL"),
                s(if r.characteristics.deterministic { "YES" } else { "NO" }),
                s(&r.characteristics.data_access),
                Value::Null,
                s(if r.characteristics.security_invoker { "INVOKER" } else { "DEFINER" }),
                created(r.creation.created_us),
                created(r.creation.created_us),
                s(&r.creation.sql_mode),
                s(&r.characteristics.comment),
                s(&r.creation.definer_text()),
                s(&r.creation.character_set_client),
                s(&r.creation.collation_connection),
                s(&r.creation.database_collation),
            ]);
        }
    }
    rows
}

/// information_schema.PARAMETERS: its columns and rows (a function's return value is its
/// parameter 0, with no name and no mode, as MySQL lists it).
#[must_use]
pub fn parameters(catalog: &Catalog, visible: impl Fn(&RoutineMeta) -> bool) -> (Vec<OutColumn>, Vec<Vec<Value>>) {
    let names = [
        "SPECIFIC_CATALOG",
        "SPECIFIC_SCHEMA",
        "SPECIFIC_NAME",
        "ORDINAL_POSITION",
        "PARAMETER_MODE",
        "PARAMETER_NAME",
        "DATA_TYPE",
        "CHARACTER_MAXIMUM_LENGTH",
        "CHARACTER_OCTET_LENGTH",
        "NUMERIC_PRECISION",
        "NUMERIC_SCALE",
        "DATETIME_PRECISION",
        "CHARACTER_SET_NAME",
        "COLLATION_NAME",
        "DTD_IDENTIFIER",
        "ROUTINE_TYPE",
    ];
    let numeric = |n: &str| {
        matches!(n, "ORDINAL_POSITION" | "CHARACTER_MAXIMUM_LENGTH" | "CHARACTER_OCTET_LENGTH" | "NUMERIC_PRECISION" | "NUMERIC_SCALE" | "DATETIME_PRECISION")
    };
    let columns = names.iter().map(|n| OutColumn::computed(n, if numeric(n) { SqlType::bigint() } else { text(1024) })).collect();
    // The length, precision and character set columns are not filled in (NULL).
    let unfilled = || std::iter::repeat_n(Value::Null, 7);
    let s = |x: &str| Value::Str(x.to_owned());
    let mut rows = Vec::new();
    for d in catalog.databases.values() {
        for r in d.functions.values().chain(d.procedures.values()).filter(|r| visible(r)) {
            let name_of = |ty: &sqlparser::ast::DataType| SqlType::from_ast(ty, d.collation).map(|t| t.data_type_name()).unwrap_or_default();
            if let Some((ty, text)) = &r.returns {
                let mut row = vec![s("def"), s(&r.db), s(&r.name), Value::Int(0), Value::Null, Value::Null, s(&name_of(ty))];
                row.extend(unfilled());
                row.extend([s(&text.to_lowercase()), s(r.kind())]);
                rows.push(row);
            }
            for (i, p) in r.params.iter().enumerate() {
                let mode = match p.mode {
                    ParamMode::In => "IN",
                    ParamMode::Out => "OUT",
                    ParamMode::InOut => "INOUT",
                };
                let mut row = vec![s("def"), s(&r.db), s(&r.name), Value::Int(i as i64 + 1), s(mode), s(&p.name), s(&name_of(&p.ty))];
                row.extend(unfilled());
                row.extend([s(&p.ty.to_string().to_lowercase()), s(r.kind())]);
                rows.push(row);
            }
        }
    }
    (columns, rows)
}
