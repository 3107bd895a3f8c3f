//! CREATE, ALTER and DROP DATABASE on a catalog copy: a database's default character set
//! and collation (what its new tables get), and dropping it with its tables and views.

use quill_storage::Collation;
use sqlparser::ast::{self};

use crate::catalog::{Catalog, Database, SYSTEM_DATABASES};
use crate::error::{Result, SqlError, Warning, codes};

use super::{charset_collation, collation_named};

/// CREATE DATABASE.
///
/// # Errors
/// 1007 if it exists (without IF NOT EXISTS).
pub fn create_database(catalog: &mut Catalog, name: &str, if_not_exists: bool, collation: Collation, warnings: &mut Vec<Warning>) -> Result<()> {
    if catalog.databases.contains_key(name) || name.eq_ignore_ascii_case("information_schema") {
        let msg = format!("Can't create database '{name}'; database exists");
        if if_not_exists {
            warnings.push(Warning { level: "Note", code: codes::ER_DB_CREATE_EXISTS.0, message: msg });
            return Ok(());
        }
        return Err(SqlError::new(codes::ER_DB_CREATE_EXISTS, msg));
    }
    if name.is_empty() || name.len() > 64 || name.ends_with(' ') {
        return Err(SqlError::new(codes::ER_WRONG_DB_NAME, format!("Incorrect database name '{name}'")));
    }
    catalog.databases.insert(name.to_owned(), Database { name: name.to_owned(), collation, ..Database::default() });
    Ok(())
}

/// The default collation a `CHARACTER SET` and `COLLATE` pair names for a database (the
/// character set's default collation when only it is given), or `otherwise`.
///
/// # Errors
/// 1273 for a collation Quill does not have.
pub fn database_collation(charset: Option<&str>, collation: Option<&str>, otherwise: Collation) -> Result<Collation> {
    match (charset, collation) {
        (_, Some(c)) => collation_named(c),
        (Some(cs), None) => Ok(charset_collation(cs)),
        (None, None) => Ok(otherwise),
    }
}

/// ALTER DATABASE `name` with its CHARACTER SET / COLLATE options (as `dialect` reads
/// them): the collation new tables in it take. ENCRYPTION 'N' is accepted (what Quill
/// does); encryption and READ ONLY are 1235.
///
/// # Errors
/// 1049 for an unknown database; 1273 for an unknown collation; 1235.
pub fn alter_database(catalog: &mut Catalog, name: &str, options: &[ast::SqlOption]) -> Result<()> {
    let (mut charset, mut collation) = (None, None);
    for option in options {
        let ast::SqlOption::KeyValue { key, value } = option else { continue };
        let value = value.to_string().trim_matches('\'').to_owned();
        match key.value.as_str() {
            "CHARACTER SET" => charset = Some(value),
            "COLLATE" => collation = Some(value),
            "ENCRYPTION" if value.eq_ignore_ascii_case("N") => {}
            other => return Err(SqlError::unsupported(format!("ALTER DATABASE ... {other}"))),
        }
    }
    let current = catalog.database(name)?.collation;
    let collation = database_collation(charset.as_deref(), collation.as_deref(), current)?;
    let db = catalog.databases.get_mut(name).ok_or_else(|| SqlError::new(codes::ER_BAD_DB_ERROR, format!("Unknown database '{name}'")))?;
    db.collation = collation;
    Ok(())
}

/// DROP DATABASE. Returns the number of tables dropped.
///
/// # Errors
/// 1008 if it does not exist (without IF EXISTS).
pub fn drop_database(catalog: &mut Catalog, name: &str, if_exists: bool, warnings: &mut Vec<Warning>) -> Result<u64> {
    if SYSTEM_DATABASES.contains(&name) {
        return Err(SqlError::new(codes::ER_TABLEACCESS_DENIED_ERROR, format!("Access denied for user to database '{name}'")));
    }
    let Some(db) = catalog.databases.get(name) else {
        let msg = format!("Can't drop database '{name}'; database doesn't exist");
        if if_exists {
            warnings.push(Warning { level: "Note", code: codes::ER_DB_DROP_EXISTS.0, message: msg });
            return Ok(0);
        }
        return Err(SqlError::new(codes::ER_DB_DROP_EXISTS, msg));
    };
    let tables: Vec<String> = db.tables.keys().cloned().collect();
    for t in &tables {
        catalog.remove_table(name, t)?;
    }
    catalog.databases.remove(name);
    Ok(tables.len() as u64)
}
