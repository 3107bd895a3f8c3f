//! Triggers as statements: `CREATE TRIGGER`, `DROP TRIGGER`, `SHOW TRIGGERS`, `SHOW CREATE
//! TRIGGER` and `information_schema.TRIGGERS`. Firing them is `triggers`'.
//!
//! A trigger is kept in its table's database (`program_meta`), compiled when made: a body
//! that names a variable it does not declare, a row its event has not (`OLD` in an INSERT
//! trigger), a column its table has not, or that returns rows or commits is refused then, as
//! MySQL refuses it. Durable as DDL: the statement is logged and replayed; a checkpoint
//! writes each trigger's definition (`TriggerMeta::definition`) as a PROGRAM entry
//! (`docs/checkpoint-format.md`), in action order.

use std::sync::Arc;

use quill_sql_frontend::program::{self, Kind, SlotKind};
use quill_sql_frontend::program_ddl::{ProgramStatement, TriggerDefinition};
use quill_sql_types::ident::quote_identifier as quote;
use quill_storage::Value;

use crate::catalog::Catalog;
use crate::error::{Result, SqlError, Warning, codes};
use crate::program_meta::{Creation, TriggerMeta};
use crate::query::OutColumn;
use crate::session_info::SessionInfo;
use crate::types::SqlType;

/// The database and name a trigger statement means: its own qualifier, else its table's,
/// else the default database.
///
/// # Errors
/// 1046 without any; 1435 when the trigger's and its table's differ.
pub fn trigger_database(info: &SessionInfo, def: &TriggerDefinition) -> Result<String> {
    if let (Some(a), Some(b)) = (&def.db, &def.table_db)
        && a != b
    {
        return Err(SqlError::new(codes::ER_TRG_IN_WRONG_SCHEMA, "Trigger in wrong schema"));
    }
    def.db.clone().or_else(|| def.table_db.clone()).or_else(|| info.db.clone()).ok_or_else(SqlError::no_db)
}

/// CREATE TRIGGER on `catalog` (a copy the caller installs); `validate` is false when a log
/// or checkpoint replays it.
///
/// # Errors
/// 1146 for no such table, 1347 for a view, 1359 for a trigger of the name (a note with
/// IF NOT EXISTS), 3011 for FOLLOWS / PRECEDES naming no such trigger, and the body's
/// errors (`program::compile`), 1054 for a column of NEW or OLD the table has not.
pub fn create_trigger(
    catalog: &mut Catalog,
    info: &SessionInfo,
    now_us: i64,
    def: &TriggerDefinition,
    validate: bool,
    warnings: &mut Vec<Warning>,
) -> Result<()> {
    let db = trigger_database(info, def)?;
    check_name(&def.name)?;
    if catalog.trigger(&db, &def.name).is_some() && def.if_not_exists {
        warnings.push(Warning { level: "Note", code: codes::ER_TRG_ALREADY_EXISTS.0, message: "Trigger already exists".into() });
        return Ok(());
    }
    catalog.database(&db)?;
    if catalog.view(&db, &def.table).is_some() {
        return Err(SqlError::new(codes::ER_WRONG_OBJECT, format!("'{db}.{}' is not BASE TABLE", def.table)));
    }
    let table = catalog.table(&db, &def.table)?;
    let mut program = program::compile(Kind::Trigger { timing: def.timing, event: def.event }, &[], &def.body)?;
    check_system_variables(&program)?;
    qualify_program(&mut program, &db);
    // A replay skips this: the table may have lost the column since (the trigger then fails
    // with 1054 when it fires, as MySQL's does).
    for slot in program.slots.iter().filter(|_| validate) {
        if let SlotKind::Row { new, column } = &slot.kind
            && table.column_index(column).is_none()
        {
            return Err(SqlError::bad_field(column, if *new { "NEW" } else { "OLD" }));
        }
    }
    let collation = catalog.database(&db)?.collation.name().to_owned();
    let meta = TriggerMeta {
        db: db.clone(),
        name: def.name.clone(),
        table: table.name.clone(),
        timing: def.timing,
        event: def.event,
        body: def.body_text.clone(),
        creation: Creation::now(info, now_us, def.definer.clone(), &collation),
        program: Arc::new(program),
    };
    catalog.add_trigger(meta, def.order.as_ref().map(|(follows, other)| (*follows, other.as_str())))
}

/// The text CREATE TRIGGER is logged as: with its definer and database explicit, so a
/// replay or a replica makes the same trigger whoever runs it. `None` for DROP (logged as
/// written).
#[must_use]
pub fn logged_statement(statement: &ProgramStatement, catalog: &Catalog, info: &SessionInfo) -> Option<String> {
    let ProgramStatement::CreateTrigger(def) = statement else { return None };
    let db = trigger_database(info, def).ok()?;
    let t = catalog.trigger(&db, &def.name)?;
    let order = match &def.order {
        Some((true, other)) => format!("FOLLOWS {} ", quote(other)),
        Some((false, other)) => format!("PRECEDES {} ", quote(other)),
        None => String::new(),
    };
    Some(format!(
        "CREATE {} TRIGGER {}.{} {} {} ON {} FOR EACH ROW {order}{}",
        t.creation.definer_clause(),
        quote(&db),
        quote(&t.name),
        t.timing.name(),
        t.event.name(),
        quote(&t.table),
        t.body
    ))
}

/// 1193 for a SET of a name that is neither a variable of the program nor a system variable.
///
/// # Errors
/// 1193.
pub fn check_system_variables(program: &program::Program) -> Result<()> {
    for i in &program.instrs {
        if let program::Instr::Sql { statement, .. } = i
            && let sqlparser::ast::Statement::Set(sqlparser::ast::Set::SingleAssignment { variable, .. }) = &**statement
        {
            let name = variable.to_string();
            if !name.starts_with('@') {
                let name = name.rsplit('.').next().unwrap_or(&name).trim_matches('`');
                crate::vars::require(name)?;
            }
        }
    }
    Ok(())
}

/// Qualifies the table names of `program`'s statements, and the names of the stored functions
/// its statements and expressions call, with `db`: a stored program reads and writes the
/// tables of its own database and calls its functions, whatever the caller's default database.
pub fn qualify_program(program: &mut program::Program, db: &str) {
    for i in &mut program.instrs {
        match i {
            program::Instr::Sql { statement, .. } => crate::view_ddl::qualify_tables_and_functions(&mut **statement, db),
            program::Instr::Declare { default: Some(e), .. }
            | program::Instr::Set { value: e, .. }
            | program::Instr::JumpIfNot { condition: e, .. }
            | program::Instr::Return(e) => crate::view_ddl::qualify_tables_and_functions(e, db),
            program::Instr::Signal { items, .. } => items.iter_mut().for_each(|(_, e)| crate::view_ddl::qualify_tables_and_functions(e, db)),
            _ => {}
        }
    }
    for c in &mut program.cursors {
        crate::view_ddl::qualify_tables_and_functions(&mut *c.query, db);
    }
}

/// 1059 for a program name longer than MySQL's 64 characters.
///
/// # Errors
/// 1059.
pub fn check_name(name: &str) -> Result<()> {
    if name.chars().count() > NAME_CHARS_MAX || name.is_empty() {
        return Err(SqlError::new(codes::ER_TOO_LONG_IDENT, format!("Identifier name '{name}' is too long")));
    }
    Ok(())
}

/// The longest name of a stored program, in characters (MySQL's `NAME_CHAR_LEN`).
pub const NAME_CHARS_MAX: usize = 64;

/// 1227 unless the account making a program may name `definer` as its definer: itself, or
/// any account with SUPER (MySQL's SET_USER_ID).
///
/// # Errors
/// 1227.
pub fn check_definer(info: &SessionInfo, definer: Option<&(String, String)>) -> Result<()> {
    match definer {
        Some((user, host)) if !(user == &info.user && host == &info.account_host) => info.require_global(crate::accounts::SUPER, "SUPER or SET_USER_ID"),
        _ => Ok(()),
    }
}

/// DROP TRIGGER [IF EXISTS] [db.]name.
///
/// # Errors
/// 1360 for no such trigger (a note with IF EXISTS); 1046 without a database.
pub fn drop_trigger(catalog: &mut Catalog, info: &SessionInfo, db: Option<&str>, name: &str, if_exists: bool, warnings: &mut Vec<Warning>) -> Result<()> {
    let db = db.map(str::to_owned).or_else(|| info.db.clone()).ok_or_else(SqlError::no_db)?;
    if catalog.remove_trigger(&db, name).is_some() {
        return Ok(());
    }
    let e = SqlError::new(codes::ER_TRG_DOES_NOT_EXIST, "Trigger does not exist");
    if if_exists {
        warnings.push(Warning { level: "Note", code: e.code, message: e.message });
        return Ok(());
    }
    Err(e)
}

/// The table a trigger statement names, for its privilege check: `(db, table)`.
///
/// # Errors
/// As [`trigger_database`].
pub fn trigger_table(info: &SessionInfo, def: &TriggerDefinition) -> Result<(String, String)> {
    Ok((trigger_database(info, def)?, def.table.clone()))
}

fn text(n: u32) -> SqlType {
    SqlType::varchar(n)
}

/// The columns of information_schema.TRIGGERS (MySQL 8's).
#[must_use]
pub fn schema_columns() -> Vec<OutColumn> {
    let columns: [(&str, SqlType); 22] = [
        ("TRIGGER_CATALOG", text(64)),
        ("TRIGGER_SCHEMA", text(64)),
        ("TRIGGER_NAME", text(64)),
        ("EVENT_MANIPULATION", text(6)),
        ("EVENT_OBJECT_CATALOG", text(64)),
        ("EVENT_OBJECT_SCHEMA", text(64)),
        ("EVENT_OBJECT_TABLE", text(64)),
        ("ACTION_ORDER", SqlType::bigint()),
        ("ACTION_CONDITION", text(64)),
        ("ACTION_STATEMENT", text(65_535)),
        ("ACTION_ORIENTATION", text(3)),
        ("ACTION_TIMING", text(6)),
        ("ACTION_REFERENCE_OLD_TABLE", text(64)),
        ("ACTION_REFERENCE_NEW_TABLE", text(64)),
        ("ACTION_REFERENCE_OLD_ROW", text(3)),
        ("ACTION_REFERENCE_NEW_ROW", text(3)),
        ("CREATED", SqlType::DateTime(2)),
        ("SQL_MODE", text(520)),
        ("DEFINER", text(288)),
        ("CHARACTER_SET_CLIENT", text(64)),
        ("COLLATION_CONNECTION", text(64)),
        ("DATABASE_COLLATION", text(64)),
    ];
    columns.into_iter().map(|(n, ty)| OutColumn::computed(n, ty)).collect()
}

/// Every trigger `visible` lets through, with its action order: `(trigger, order)`.
pub fn visible_triggers(catalog: &Catalog, visible: impl Fn(&TriggerMeta) -> bool) -> Vec<(&TriggerMeta, i64)> {
    let mut out = Vec::new();
    for d in catalog.databases.values() {
        for (i, t) in d.triggers.iter().enumerate() {
            if visible(t) {
                let order = d.triggers[..=i].iter().filter(|o| o.table == t.table && o.event == t.event && o.timing == t.timing).count();
                out.push((&**t, order as i64));
            }
        }
    }
    out
}

/// The rows of information_schema.TRIGGERS.
#[must_use]
pub fn schema_rows(catalog: &Catalog, visible: impl Fn(&TriggerMeta) -> bool) -> Vec<Vec<Value>> {
    let s = |x: &str| Value::Str(x.to_owned());
    visible_triggers(catalog, visible)
        .into_iter()
        .map(|(t, order)| {
            vec![
                s("def"),
                s(&t.db),
                s(&t.name),
                s(t.event.name()),
                s("def"),
                s(&t.db),
                s(&t.table),
                Value::Int(order),
                Value::Null,
                s(&t.body),
                s("ROW"),
                s(t.timing.name()),
                Value::Null,
                Value::Null,
                s("OLD"),
                s("NEW"),
                created(t),
                s(&t.creation.sql_mode),
                s(&t.creation.definer_text()),
                s(&t.creation.character_set_client),
                s(&t.creation.collation_connection),
                s(&t.creation.database_collation),
            ]
        })
        .collect()
}

/// When a trigger was made, to the hundredth of a second (as MySQL keeps it).
fn created(t: &TriggerMeta) -> Value {
    Value::DateTime(crate::types::round_micros(t.creation.created_us, 2))
}

/// SHOW TRIGGERS' columns.
#[must_use]
pub fn show_columns() -> Vec<OutColumn> {
    let names = [
        "Trigger",
        "Event",
        "Table",
        "Statement",
        "Timing",
        "Created",
        "sql_mode",
        "Definer",
        "character_set_client",
        "collation_connection",
        "Database Collation",
    ];
    names.iter().map(|n| OutColumn::computed(n, if *n == "Created" { SqlType::DateTime(2) } else { text(1024) })).collect()
}

/// SHOW TRIGGERS [FROM db] [LIKE 'table pattern'] rows of database `db`.
#[must_use]
pub fn show_rows(catalog: &Catalog, db: &str, like: Option<&str>, visible: impl Fn(&TriggerMeta) -> bool) -> Vec<Vec<Value>> {
    let s = |x: &str| Value::Str(x.to_owned());
    visible_triggers(catalog, |t| t.db == db && visible(t))
        .into_iter()
        .filter(|(t, _)| crate::show::like_filter(&t.table, like))
        .map(|(t, _)| {
            vec![
                s(&t.name),
                s(t.event.name()),
                s(&t.table),
                s(&t.body),
                s(t.timing.name()),
                created(t),
                s(&t.creation.sql_mode),
                s(&t.creation.definer_text()),
                s(&t.creation.character_set_client),
                s(&t.creation.collation_connection),
                s(&t.creation.database_collation),
            ]
        })
        .collect()
}

/// SHOW CREATE TRIGGER's columns and its one row.
#[must_use]
pub fn show_create(t: &TriggerMeta) -> (Vec<OutColumn>, Vec<Value>) {
    let names = ["Trigger", "sql_mode", "SQL Original Statement", "character_set_client", "collation_connection", "Database Collation", "Created"];
    let columns = names.iter().map(|n| OutColumn::computed(n, if *n == "Created" { SqlType::DateTime(2) } else { text(1024) })).collect();
    let s = |x: &str| Value::Str(x.to_owned());
    let row = vec![
        s(&t.name),
        s(&t.creation.sql_mode),
        s(&t.definition()),
        s(&t.creation.character_set_client),
        s(&t.creation.collation_connection),
        s(&t.creation.database_collation),
        created(t),
    ];
    (columns, row)
}
