//! The `information_schema` tables that describe keys and constraints, with MySQL 8's
//! columns: `TABLE_CONSTRAINTS` (one row per primary key, unique index and foreign key),
//! `KEY_COLUMN_USAGE` (one row per column of each), and `REFERENTIAL_CONSTRAINTS` (one row
//! per foreign key, with its rules). ORMs read these to reflect a schema: Django's
//! introspection, SQLAlchemy's reflection, Connector/J's `DatabaseMetaData`.
//!
//! Built from the catalog snapshot on each read; where it sits: `sql`, called from
//! `show::information_schema_table`.

use quill_storage::Value;

use crate::catalog::{Catalog, TableMeta};
use crate::foreign_keys::ForeignKey;
use crate::query::OutColumn;
use crate::show::{cols, s, text};
use crate::types::SqlType;

type Rows = Vec<Vec<Value>>;

/// A table's primary key and unique indexes: (name, column positions).
fn unique_keys(t: &TableMeta) -> Vec<(&str, &[usize])> {
    let primary = (!t.primary.is_empty()).then_some(("PRIMARY", t.primary.as_slice()));
    primary.into_iter().chain(t.indexes.iter().filter(|i| i.unique).map(|i| (i.name.as_str(), i.columns.as_slice()))).collect()
}

fn tables(catalog: &Catalog) -> impl Iterator<Item = &TableMeta> {
    catalog.databases.values().flat_map(|d| d.tables.values().map(|t| &**t))
}

/// `TABLE_CONSTRAINTS`.
#[must_use]
pub fn table_constraints(catalog: &Catalog) -> (Vec<OutColumn>, Rows) {
    let c = cols(&[
        ("CONSTRAINT_CATALOG", text(64)),
        ("CONSTRAINT_SCHEMA", text(64)),
        ("CONSTRAINT_NAME", text(64)),
        ("TABLE_SCHEMA", text(64)),
        ("TABLE_NAME", text(64)),
        ("CONSTRAINT_TYPE", text(11)),
        ("ENFORCED", text(3)),
    ]);
    let mut rows = Vec::new();
    for t in tables(catalog) {
        let row = |name: &str, kind: &str| vec![s("def"), s(t.db.clone()), s(name), s(t.db.clone()), s(t.name.clone()), s(kind), s("YES")];
        for (name, _) in unique_keys(t) {
            rows.push(row(name, if name == "PRIMARY" { "PRIMARY KEY" } else { "UNIQUE" }));
        }
        for fk in &t.foreign_keys {
            rows.push(row(&fk.name, "FOREIGN KEY"));
        }
        for check in &t.checks {
            let mut r = row(&check.name, "CHECK");
            r[6] = s(if check.enforced { "YES" } else { "NO" });
            rows.push(r);
        }
    }
    (c, rows)
}

/// `KEY_COLUMN_USAGE`.
#[must_use]
pub fn key_column_usage(catalog: &Catalog) -> (Vec<OutColumn>, Rows) {
    let c = cols(&[
        ("CONSTRAINT_CATALOG", text(64)),
        ("CONSTRAINT_SCHEMA", text(64)),
        ("CONSTRAINT_NAME", text(64)),
        ("TABLE_CATALOG", text(64)),
        ("TABLE_SCHEMA", text(64)),
        ("TABLE_NAME", text(64)),
        ("COLUMN_NAME", text(64)),
        ("ORDINAL_POSITION", SqlType::bigint()),
        ("POSITION_IN_UNIQUE_CONSTRAINT", SqlType::bigint()),
        ("REFERENCED_TABLE_SCHEMA", text(64)),
        ("REFERENCED_TABLE_NAME", text(64)),
        ("REFERENCED_COLUMN_NAME", text(64)),
    ]);
    let mut rows = Vec::new();
    for t in tables(catalog) {
        let head = |name: &str, column: usize, n: usize| {
            vec![s("def"), s(t.db.clone()), s(name), s("def"), s(t.db.clone()), s(t.name.clone()), s(t.columns[column].name.clone()), Value::Int(n as i64 + 1)]
        };
        for (name, columns) in unique_keys(t) {
            for (n, &column) in columns.iter().enumerate() {
                rows.push([head(name, column, n), vec![Value::Null, Value::Null, Value::Null, Value::Null]].concat());
            }
        }
        for fk in &t.foreign_keys {
            for (n, (&column, parent_column)) in fk.columns.iter().zip(&fk.parent_columns).enumerate() {
                let tail = vec![Value::Int(n as i64 + 1), s(fk.parent_db.clone()), s(fk.parent_table.clone()), s(parent_column.clone())];
                rows.push([head(&fk.name, column, n), tail].concat());
            }
        }
    }
    (c, rows)
}

/// `REFERENTIAL_CONSTRAINTS`.
#[must_use]
pub fn referential_constraints(catalog: &Catalog) -> (Vec<OutColumn>, Rows) {
    let c = cols(&[
        ("CONSTRAINT_CATALOG", text(64)),
        ("CONSTRAINT_SCHEMA", text(64)),
        ("CONSTRAINT_NAME", text(64)),
        ("UNIQUE_CONSTRAINT_CATALOG", text(64)),
        ("UNIQUE_CONSTRAINT_SCHEMA", text(64)),
        ("UNIQUE_CONSTRAINT_NAME", text(64)),
        ("MATCH_OPTION", text(7)),
        ("UPDATE_RULE", text(11)),
        ("DELETE_RULE", text(11)),
        ("TABLE_NAME", text(64)),
        ("REFERENCED_TABLE_NAME", text(64)),
    ]);
    let mut rows = Vec::new();
    for t in tables(catalog) {
        for fk in &t.foreign_keys {
            rows.push(vec![
                s("def"),
                s(t.db.clone()),
                s(fk.name.clone()),
                s("def"),
                s(fk.parent_db.clone()),
                parent_key_name(catalog, fk).map_or(Value::Null, s),
                s("NONE"),
                s(fk.on_update.rule()),
                s(fk.on_delete.rule()),
                s(t.name.clone()),
                s(fk.parent_table.clone()),
            ]);
        }
    }
    (c, rows)
}

/// The parent's unique key whose columns are exactly the ones `fk` refers to, by name.
fn parent_key_name(catalog: &Catalog, fk: &ForeignKey) -> Option<String> {
    let parent = catalog.table(&fk.parent_db, &fk.parent_table).ok()?;
    let positions = fk.parent_positions(parent)?;
    unique_keys(parent).into_iter().find(|(_, columns)| **columns == *positions).map(|(name, _)| name.to_owned())
}
