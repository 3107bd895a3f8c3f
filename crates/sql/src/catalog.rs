//! The catalog: databases, tables and their column and index definitions, each
//! table owning its storage [`Table`].
//!
//! Database and table names are case-sensitive (as on Linux MySQL with
//! `lower_case_table_names=0`); column and index names are not. The catalog is
//! guarded by the engine's lock: DDL takes it exclusively.

use std::collections::{BTreeMap, HashMap};

use quill_storage::{Collation, IndexDef, Table, Value};

use crate::error::{Result, SqlError, codes};
use crate::types::SqlType;

/// What a column holds when an INSERT does not name it.
#[derive(Debug, Clone, PartialEq)]
pub enum ColumnDefault {
    /// No DEFAULT clause on a NOT NULL column: omitting it is error 1364.
    None,
    Value(Value),
    /// `DEFAULT CURRENT_TIMESTAMP[(fsp)]`.
    CurrentTimestamp,
}

#[derive(Debug, Clone)]
pub struct Column {
    pub name: String,
    pub ty: SqlType,
    pub nullable: bool,
    pub default: ColumnDefault,
    pub auto_increment: bool,
    pub on_update_current_timestamp: bool,
    pub comment: String,
}

#[derive(Debug, Clone)]
pub struct IndexMeta {
    pub name: String,
    pub columns: Vec<usize>,
    pub unique: bool,
}

#[derive(Debug, Clone)]
pub struct TableMeta {
    pub id: u64,
    pub db: String,
    pub name: String,
    pub columns: Vec<Column>,
    /// Column positions of the primary key (empty: hidden row id).
    pub primary: Vec<usize>,
    /// Secondary indexes, in the same order as the storage table's.
    pub indexes: Vec<IndexMeta>,
    pub collation: Collation,
    pub comment: String,
    pub created_at: i64,
    pub data: Table,
}

impl TableMeta {
    /// Build the metadata and an empty storage table.
    #[must_use]
    pub fn new(id: u64, db: &str, name: &str, columns: Vec<Column>, primary: Vec<usize>, indexes: Vec<IndexMeta>, collation: Collation) -> TableMeta {
        let key_part = |c: usize| (c, columns[c].ty.collation());
        let data = Table::new(
            primary.iter().map(|&c| key_part(c)).collect(),
            indexes.iter().map(|i| IndexDef { name: i.name.clone(), parts: i.columns.iter().map(|&c| key_part(c)).collect(), unique: i.unique }).collect(),
        );
        TableMeta {
            id,
            db: db.to_owned(),
            name: name.to_owned(),
            columns,
            primary,
            indexes,
            collation,
            comment: String::new(),
            created_at: chrono::Utc::now().timestamp(),
            data,
        }
    }

    /// Position of a column, by case-insensitive name.
    #[must_use]
    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name.eq_ignore_ascii_case(name))
    }

    #[must_use]
    pub fn auto_increment_column(&self) -> Option<usize> {
        self.columns.iter().position(|c| c.auto_increment)
    }
}

#[derive(Debug, Clone, Default)]
pub struct Database {
    pub name: String,
    pub collation: Collation,
    pub tables: BTreeMap<String, TableMeta>,
}

/// Names of the databases that always exist and cannot be dropped.
pub const SYSTEM_DATABASES: [&str; 4] = ["information_schema", "mysql", "performance_schema", "sys"];

#[derive(Debug, Default)]
pub struct Catalog {
    pub databases: BTreeMap<String, Database>,
    next_table_id: u64,
    /// Table id -> (database, table), for transactions' write sets.
    by_id: HashMap<u64, (String, String)>,
}

impl Catalog {
    #[must_use]
    pub fn new() -> Catalog {
        let mut c = Catalog { next_table_id: 1, ..Catalog::default() };
        for db in ["mysql", "performance_schema", "sys"] {
            c.databases.insert(db.to_owned(), Database { name: db.to_owned(), ..Database::default() });
        }
        c
    }

    pub fn allocate_table_id(&mut self) -> u64 {
        let id = self.next_table_id;
        self.next_table_id += 1;
        id
    }

    /// # Errors
    /// 1049 if the database does not exist.
    pub fn database(&self, db: &str) -> Result<&Database> {
        self.databases.get(db).ok_or_else(|| SqlError::unknown_db(db))
    }

    /// # Errors
    /// 1049 / 1146.
    pub fn table(&self, db: &str, name: &str) -> Result<&TableMeta> {
        self.databases.get(db).and_then(|d| d.tables.get(name)).ok_or_else(|| SqlError::no_such_table(db, name))
    }

    /// # Errors
    /// 1049 / 1146.
    pub fn table_mut(&mut self, db: &str, name: &str) -> Result<&mut TableMeta> {
        self.databases.get_mut(db).ok_or_else(|| SqlError::unknown_db(db))?.tables.get_mut(name).ok_or_else(|| SqlError::no_such_table(db, name))
    }

    #[must_use]
    pub fn table_by_id(&self, id: u64) -> Option<&TableMeta> {
        let (db, name) = self.by_id.get(&id)?;
        self.databases.get(db)?.tables.get(name)
    }

    #[must_use]
    pub fn table_by_id_mut(&mut self, id: u64) -> Option<&mut TableMeta> {
        let (db, name) = self.by_id.get(&id)?;
        self.databases.get_mut(db)?.tables.get_mut(name)
    }

    /// Register a new table.
    ///
    /// # Errors
    /// 1049 / 1050.
    pub fn add_table(&mut self, meta: TableMeta) -> Result<()> {
        let db = self.databases.get_mut(&meta.db).ok_or_else(|| SqlError::unknown_db(&meta.db))?;
        if db.tables.contains_key(&meta.name) {
            return Err(SqlError::new(codes::ER_TABLE_EXISTS_ERROR, format!("Table '{}' already exists", meta.name)));
        }
        self.by_id.insert(meta.id, (meta.db.clone(), meta.name.clone()));
        db.tables.insert(meta.name.clone(), meta);
        Ok(())
    }

    /// Remove a table, returning it.
    ///
    /// # Errors
    /// 1051 if it does not exist.
    pub fn remove_table(&mut self, db: &str, name: &str) -> Result<TableMeta> {
        let t = self
            .databases
            .get_mut(db)
            .and_then(|d| d.tables.remove(name))
            .ok_or_else(|| SqlError::new(codes::ER_BAD_TABLE_ERROR, format!("Unknown table '{db}.{name}'")))?;
        self.by_id.remove(&t.id);
        Ok(t)
    }
}
