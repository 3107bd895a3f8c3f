//! Table definitions as they were at each point of the commit log.
//!
//! Replication describes a logged row change with the columns its table had when the change
//! was logged, not the ones it has now: an `ALTER TABLE` after a change must not alter how
//! the change reads, or the binary log's events (and so its positions) would shift under a
//! replica. The history keeps, per table, each definition with the LSN of the record from
//! which it holds (the DDL record that made it; 0 for what start-up found), and `None` from
//! a drop on.
//!
//! Sources: start-up records the catalog a checkpoint loaded at LSN 0, recovery records
//! each replayed DDL record at its LSN, and a DDL statement records its catalog at its
//! record's LSN under the commit-order lock (so in log order). A record older than the newest
//! checkpoint that a replica still reads is described with the definitions start-up found
//! (docs/binlog.md, "Definitions").
//!
//! Bounds: one entry per table per DDL statement that changed it; [`SchemaHistory::forget_before`]
//! drops what no retained log segment needs.

use std::collections::HashMap;
use std::sync::Arc;

use crate::catalog::{Catalog, Column, TableMeta};

/// What replication needs of a table's definition.
#[derive(Debug, Clone, PartialEq)]
pub struct TableDef {
    pub id: u64,
    pub db: String,
    pub name: String,
    pub columns: Vec<Column>,
    /// Column positions of the primary key (empty: hidden row id).
    pub primary: Vec<usize>,
}

impl TableDef {
    #[must_use]
    pub fn of(meta: &TableMeta) -> TableDef {
        TableDef { id: meta.id, db: meta.db.clone(), name: meta.name.clone(), columns: meta.columns.clone(), primary: meta.primary.clone() }
    }

    /// Whether `meta` has this definition's columns and key (its id may differ: a
    /// truncated table is a new table of the same shape).
    fn same_shape(&self, meta: &TableMeta) -> bool {
        self.columns == meta.columns && self.primary == meta.primary
    }
}

/// A table's definitions: the LSN from which each holds, ascending; `None` when dropped.
type Versions = Vec<(u64, Option<Arc<TableDef>>)>;

#[derive(Debug, Default)]
pub struct SchemaHistory {
    tables: HashMap<(String, String), Versions>,
}

impl SchemaHistory {
    /// Records that from `lsn` on the tables are `catalog`'s. REQUIRES: `lsn` at or after
    /// every LSN recorded before. True when a table's definition changed or went (a table
    /// dropped, renamed away or of another shape): records before `lsn` may then not be
    /// readable with the definitions from `lsn` on (`Engine::definitions_from`). A new table
    /// has no records before it, and a statement that changes no table (an account
    /// statement, CREATE DATABASE, a view) none that read otherwise: both return false.
    pub fn record(&mut self, lsn: u64, catalog: &Catalog) -> bool {
        let mut changed = false;
        let mut seen = std::collections::HashSet::new();
        for db in catalog.databases.values() {
            for meta in db.tables.values() {
                let key = (meta.db.clone(), meta.name.clone());
                let versions = self.tables.entry(key.clone()).or_default();
                let current = versions.last().and_then(|(_, def)| def.as_ref());
                if current.is_none_or(|def| !def.same_shape(meta)) {
                    changed |= current.is_some();
                    push(versions, lsn, Some(Arc::new(TableDef::of(meta))));
                }
                seen.insert(key);
            }
        }
        for (key, versions) in &mut self.tables {
            if !seen.contains(key) && versions.last().is_some_and(|(_, def)| def.is_some()) {
                push(versions, lsn, None);
                changed = true;
            }
        }
        changed
    }

    /// The definition `db`.`name` had at the record at `lsn`.
    #[must_use]
    pub fn table_at(&self, db: &str, name: &str, lsn: u64) -> Option<Arc<TableDef>> {
        let versions = self.tables.get(&(db.to_owned(), name.to_owned()))?;
        let i = versions.partition_point(|(from, _)| *from <= lsn);
        versions[..i].last().and_then(|(_, def)| def.clone())
    }

    /// Forgets what no record at or after `lsn` can need: per table, the versions replaced
    /// before `lsn`, and tables dropped before it.
    pub fn forget_before(&mut self, lsn: u64) {
        self.tables.retain(|_, versions| {
            let i = versions.partition_point(|(from, _)| *from <= lsn);
            if i > 1 {
                versions.drain(..i - 1);
            }
            !(versions.len() == 1 && versions[0].1.is_none())
        });
    }

    /// How many definitions of `db`.`name` are kept (0 once a dropped table is forgotten).
    #[must_use]
    pub fn versions(&self, db: &str, name: &str) -> usize {
        self.tables.get(&(db.to_owned(), name.to_owned())).map_or(0, Vec::len)
    }
}

/// Adds a version, replacing one recorded at the same LSN (a record's DDL recorded twice).
fn push(versions: &mut Versions, lsn: u64, def: Option<Arc<TableDef>>) {
    if versions.last().is_some_and(|(from, _)| *from == lsn) {
        versions.pop();
    }
    versions.push((lsn, def));
}
