//! Foreign keys: their definitions, as CREATE TABLE and ALTER TABLE declare them and
//! SHOW CREATE TABLE prints them, with InnoDB's rules for what may be declared.
//!
//! A foreign key belongs to its child table ([`TableMeta::foreign_keys`]): the child's
//! columns by position, the parent by database, table and column names. Names, not
//! positions, because the parent is another table whose definition changes on its own; a
//! key is resolved against the parent each time it is used (`dml::foreign_keys`, which
//! enforces them). Children of a table are found by scanning the catalog
//! ([`children_of`]), which holds no second index to keep in step.
//!
//! Invariants, with `foreign_key_checks` on when the key was declared: the parent exists;
//! its columns exist and are the leftmost columns of its primary key or of an index, in
//! order; each pair of columns has compatible types; the child's columns lead an index of
//! the child (one is added, named after the constraint, when none does); a `SET NULL`
//! action has only nullable child columns. Key names are unique within a database. With
//! `foreign_key_checks` off only the child's own shape is checked, as MySQL does, so a dump
//! may create a child before its parent; the log and checkpoints replay DDL that way.
//!
//! Where it sits: `quill-sql-context` (a table's keys are part of its catalog entry), below `ddl` (which declares keys), `dml` (which enforces them),
//! `show` (SHOW CREATE TABLE) and `information_schema`.

use quill_storage::Value;
use sqlparser::ast;

use crate::catalog::{Catalog, Column, IndexMeta, TableMeta};
use quill_sql_types::error::{Result, SqlError, codes};
use quill_sql_types::ident::quote_identifier as bq;
use quill_sql_types::types::SqlType;

/// What happens to child rows when their parent row is deleted or its key changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// The default: refuse (InnoDB checks at once, as for RESTRICT).
    NoAction,
    Restrict,
    Cascade,
    SetNull,
}

impl Action {
    fn from_ast(a: Option<ast::ReferentialAction>) -> Result<Action> {
        Ok(match a {
            None | Some(ast::ReferentialAction::NoAction) => Action::NoAction,
            Some(ast::ReferentialAction::Restrict) => Action::Restrict,
            Some(ast::ReferentialAction::Cascade) => Action::Cascade,
            Some(ast::ReferentialAction::SetNull) => Action::SetNull,
            Some(ast::ReferentialAction::SetDefault) => return Err(SqlError::unsupported("SET DEFAULT in a foreign key (InnoDB refuses it too)")),
        })
    }

    /// As `information_schema.REFERENTIAL_CONSTRAINTS` names it.
    #[must_use]
    pub fn rule(self) -> &'static str {
        match self {
            Action::NoAction => "NO ACTION",
            Action::Restrict => "RESTRICT",
            Action::Cascade => "CASCADE",
            Action::SetNull => "SET NULL",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ForeignKey {
    pub name: String,
    /// Positions of the child's columns.
    pub columns: Vec<usize>,
    pub parent_db: String,
    pub parent_table: String,
    /// The parent's columns, by name, pairing with `columns`.
    pub parent_columns: Vec<String>,
    pub on_delete: Action,
    pub on_update: Action,
}

impl ForeignKey {
    /// `CONSTRAINT `name` FOREIGN KEY (...) REFERENCES ...` as SHOW CREATE TABLE and
    /// error 1451/1452 print it: the parent's database only when it is not the child's,
    /// and the actions only when not the default.
    #[must_use]
    pub fn clause(&self, child: &TableMeta, quote: &dyn Fn(&str) -> String) -> String {
        let columns: Vec<String> = self.columns.iter().map(|&c| quote(&child.columns[c].name)).collect();
        let parent_columns: Vec<String> = self.parent_columns.iter().map(|c| quote(c)).collect();
        let parent = if self.parent_db == child.db { quote(&self.parent_table) } else { format!("{}.{}", quote(&self.parent_db), quote(&self.parent_table)) };
        let mut s = format!("CONSTRAINT {} FOREIGN KEY ({}) REFERENCES {parent} ({})", quote(&self.name), columns.join(", "), parent_columns.join(", "));
        for (word, action) in [("DELETE", self.on_delete), ("UPDATE", self.on_update)] {
            if action != Action::NoAction {
                s.push_str(&format!(" ON {word} {}", action.rule()));
            }
        }
        s
    }

    /// Whether this key refers to `db`.`table`.
    #[must_use]
    pub fn refers_to(&self, db: &str, table: &str) -> bool {
        self.parent_db == db && self.parent_table == table
    }

    /// The parent's columns by position in `parent`, or `None` if one is gone (a parent
    /// created with `foreign_key_checks` off may not have them).
    #[must_use]
    pub fn parent_positions(&self, parent: &TableMeta) -> Option<Vec<usize>> {
        self.parent_columns.iter().map(|n| parent.column_index(n)).collect()
    }
}

/// Error 1452: a child row whose parent does not exist.
#[must_use]
pub fn no_parent(child: &TableMeta, fk: &ForeignKey) -> SqlError {
    SqlError::new(
        codes::ER_NO_REFERENCED_ROW_2,
        format!("Cannot add or update a child row: a foreign key constraint fails ({}.{}, {})", bq(&child.db), bq(&child.name), fk.clause(child, &bq)),
    )
}

/// Error 1451: a parent row that child rows still refer to.
#[must_use]
pub fn has_children(child: &TableMeta, fk: &ForeignKey) -> SqlError {
    SqlError::new(
        codes::ER_ROW_IS_REFERENCED_2,
        format!("Cannot delete or update a parent row: a foreign key constraint fails ({}.{}, {})", bq(&child.db), bq(&child.name), fk.clause(child, &bq)),
    )
}

/// Every foreign key in the catalog that refers to `db`.`table`, with its child table.
#[must_use]
pub fn children_of<'a>(catalog: &'a Catalog, db: &str, table: &str) -> Vec<(&'a TableMeta, &'a ForeignKey)> {
    let mut out = Vec::new();
    for d in catalog.databases.values() {
        for t in d.tables.values() {
            out.extend(t.foreign_keys.iter().filter(|fk| fk.refers_to(db, table)).map(|fk| (&**t, fk)));
        }
    }
    out
}

/// The tables a write to `db`.`table` may reach through foreign keys, each with whether it
/// may be written: the parents its rows are checked against (read), and the children a
/// change of its rows cascades into (written), theirs in turn. A statement's metadata locks
/// cover them, so DDL cannot replace a table a cascade is writing. Bounded by the catalog:
/// each table is visited once.
#[must_use]
pub fn reachable_tables(catalog: &Catalog, db: &str, table: &str) -> Vec<((String, String), bool)> {
    let mut out: Vec<((String, String), bool)> = Vec::new();
    let mut pending = vec![(db.to_owned(), table.to_owned())];
    let mut written: std::collections::HashSet<(String, String)> = std::collections::HashSet::new();
    written.insert((db.to_owned(), table.to_owned()));
    while let Some((d, t)) = pending.pop() {
        if let Ok(meta) = catalog.table(&d, &t) {
            for fk in &meta.foreign_keys {
                out.push(((fk.parent_db.clone(), fk.parent_table.clone()), false));
            }
        }
        for (child, _) in children_of(catalog, &d, &t) {
            let name = (child.db.clone(), child.name.clone());
            if written.insert(name.clone()) {
                out.push((name.clone(), true));
                pending.push(name);
            }
        }
    }
    out
}

/// The shape of the table being defined, as far as a key declared on it needs.
pub struct Child<'a> {
    pub db: &'a str,
    pub name: &'a str,
    pub columns: &'a [Column],
    pub primary: &'a [usize],
    /// The child's indexes: one is added when no index leads with the key's columns.
    pub indexes: &'a mut Vec<IndexMeta>,
    /// Keys the table already has (ALTER TABLE), and those declared before this one.
    pub existing: &'a [ForeignKey],
}

/// Declares `c` on the table `child` defines, checking what InnoDB checks (see the module
/// doc); `checks` is `foreign_key_checks`.
///
/// # Errors
/// 1072 (a child column missing), 1239 (column counts differ), 1824 (no parent table),
/// 3734 (a parent column missing), 1822 (no parent index), 3780 (incompatible types),
/// 1830 (SET NULL on a NOT NULL column), 1826 (the name is taken).
pub fn declare(catalog: &Catalog, child: Child<'_>, c: &ast::ForeignKeyConstraint, checks: bool) -> Result<ForeignKey> {
    let name = match &c.name {
        Some(n) => n.value.clone(),
        None => generated_name(child.name, child.existing),
    };
    if name_taken(catalog, child.db, child.name, child.existing, &name) {
        return Err(SqlError::new(codes::ER_FK_DUP_NAME, format!("Duplicate foreign key constraint name '{name}'")));
    }
    let columns: Vec<usize> = c
        .columns
        .iter()
        .map(|i| {
            child
                .columns
                .iter()
                .position(|col| col.name.eq_ignore_ascii_case(&i.value))
                .ok_or_else(|| SqlError::new(codes::ER_KEY_COLUMN_DOES_NOT_EXITS, format!("Key column '{}' doesn't exist in table", i.value)))
        })
        .collect::<Result<_>>()?;
    if columns.len() != c.referred_columns.len() {
        return Err(SqlError::new(
            codes::ER_WRONG_FK_DEF,
            format!("Incorrect foreign key definition for '{name}': Key reference and table reference don't match"),
        ));
    }
    let (parent_db, parent_table) = match c.foreign_table.0.as_slice() {
        [t] => (child.db.to_owned(), part(t)),
        [d, t] => (part(d), part(t)),
        _ => return Err(SqlError::new(codes::ER_PARSE_ERROR, format!("Incorrect table name '{}'", c.foreign_table))),
    };
    let on_delete = Action::from_ast(c.on_delete)?;
    let on_update = Action::from_ast(c.on_update)?;
    if (on_delete == Action::SetNull || on_update == Action::SetNull)
        && let Some(&p) = columns.iter().find(|&&p| !child.columns[p].nullable)
    {
        return Err(SqlError::new(
            codes::ER_FK_COLUMN_NOT_NULL,
            format!("Column '{}' cannot be NOT NULL: needed in a foreign key constraint '{name}' SET NULL", child.columns[p].name),
        ));
    }
    let self_reference = parent_db == child.db && parent_table == child.name;
    // With checks off nothing of the parent is checked, even when it exists: replayed DDL
    // (the log, a checkpoint's tables in name order) must load whatever order it comes in.
    let parent = if self_reference || !checks { None } else { catalog.table(&parent_db, &parent_table).ok() };
    let (parent_columns, parent_primary, parent_indexes): (&[Column], &[usize], &[IndexMeta]) = match parent {
        Some(p) => (&p.columns, &p.primary, &p.indexes),
        None if self_reference => (child.columns, child.primary, child.indexes),
        None if checks => return Err(SqlError::new(codes::ER_FK_CANNOT_OPEN_PARENT, format!("Failed to open the referenced table '{parent_table}'"))),
        None => (&[], &[], &[]),
    };
    let mut referred = Vec::new();
    if parent.is_some() || self_reference {
        for (i, r) in c.referred_columns.iter().enumerate() {
            let Some(p) = parent_columns.iter().position(|col| col.name.eq_ignore_ascii_case(&r.value)) else {
                return Err(SqlError::new(
                    codes::ER_FK_NO_COLUMN_PARENT,
                    format!(
                        "Failed to add the foreign key constraint. Missing column '{}' for constraint '{name}' in the referenced table '{parent_table}'",
                        r.value
                    ),
                ));
            };
            if !compatible(&child.columns[columns[i]].ty, &parent_columns[p].ty) {
                return Err(incompatible(&child.columns[columns[i]].name, &parent_columns[p].name, &name));
            }
            referred.push(p);
        }
        if !leads_an_index(&referred, parent_primary, parent_indexes) {
            return Err(SqlError::new(
                codes::ER_FK_NO_INDEX_PARENT,
                format!("Failed to add the foreign key constraint. Missing index for constraint '{name}' in the referenced table '{parent_table}'"),
            ));
        }
    }
    let parent_names = if referred.is_empty() {
        c.referred_columns.iter().map(|r| r.value.clone()).collect()
    } else {
        referred.iter().map(|&p| parent_columns[p].name.clone()).collect()
    };
    if !leads_an_index(&columns, child.primary, child.indexes) {
        let base = c.name.as_ref().map_or_else(|| child.columns[columns[0]].name.clone(), |n| n.value.clone());
        let index_name = unique_name(child.indexes, &base);
        child.indexes.push(IndexMeta { name: index_name, columns: columns.clone(), unique: false });
    }
    Ok(ForeignKey { name, columns, parent_db, parent_table, parent_columns: parent_names, on_delete, on_update })
}

fn part(p: &ast::ObjectNamePart) -> String {
    p.as_ident().map_or_else(|| p.to_string(), |i| i.value.clone())
}

/// `<table>_ibfk_<n>`, one past the highest such number the table has.
fn generated_name(table: &str, existing: &[ForeignKey]) -> String {
    let prefix = format!("{table}_ibfk_");
    let n = existing.iter().filter_map(|fk| fk.name.strip_prefix(&prefix)?.parse::<u32>().ok()).max().unwrap_or(0);
    format!("{prefix}{}", n + 1)
}

/// Whether another key of database `db` (not one `table` is being redefined without) is
/// named `name`. Names compare without case, as InnoDB's do.
fn name_taken(catalog: &Catalog, db: &str, table: &str, existing: &[ForeignKey], name: &str) -> bool {
    existing.iter().any(|fk| fk.name.eq_ignore_ascii_case(name))
        || catalog
            .databases
            .get(db)
            .is_some_and(|d| d.tables.values().filter(|t| t.name != table).any(|t| t.foreign_keys.iter().any(|fk| fk.name.eq_ignore_ascii_case(name))))
}

fn unique_name(indexes: &[IndexMeta], base: &str) -> String {
    let mut name = base.to_owned();
    let mut n = 2;
    while indexes.iter().any(|i| i.name.eq_ignore_ascii_case(&name)) {
        name = format!("{base}_{n}");
        n += 1;
    }
    name
}

/// Whether `columns` are, in order, the leftmost columns of the primary key or of an index.
#[must_use]
pub fn leads_an_index(columns: &[usize], primary: &[usize], indexes: &[IndexMeta]) -> bool {
    let leads = |key: &[usize]| key.len() >= columns.len() && key[..columns.len()] == *columns;
    leads(primary) || indexes.iter().any(|i| leads(&i.columns))
}

/// Whether a child column of type `child` may refer to a parent column of type `parent`,
/// as InnoDB requires: integers of one size and sign, strings of one collation (lengths
/// may differ), otherwise the same type.
fn compatible(child: &SqlType, parent: &SqlType) -> bool {
    match (child, parent) {
        (SqlType::Int { kind: a, unsigned: ua, .. }, SqlType::Int { kind: b, unsigned: ub, .. }) => a == b && ua == ub,
        (a, b) if a.is_string() && b.is_string() => a.is_binary() == b.is_binary() && a.collation() == b.collation(),
        (SqlType::Decimal { precision: pa, scale: sa, .. }, SqlType::Decimal { precision: pb, scale: sb, .. }) => pa == pb && sa == sb,
        (a, b) => std::mem::discriminant(a) == std::mem::discriminant(b),
    }
}

/// Checks a key a table keeps through ALTER TABLE against the table's new columns (1830: a
/// SET NULL key on a column now NOT NULL) and, with `checks`, its parent's (3780).
///
/// # Errors
/// 1830, 3780.
pub fn check_kept(catalog: &Catalog, columns: &[Column], fk: &ForeignKey, self_table: Option<&[Column]>, checks: bool) -> Result<()> {
    if (fk.on_delete == Action::SetNull || fk.on_update == Action::SetNull)
        && let Some(&p) = fk.columns.iter().find(|&&p| !columns[p].nullable)
    {
        return Err(SqlError::new(
            codes::ER_FK_COLUMN_NOT_NULL,
            format!("Column '{}' cannot be NOT NULL: needed in a foreign key constraint '{}' SET NULL", columns[p].name, fk.name),
        ));
    }
    if !checks {
        return Ok(());
    }
    let parent_columns: &[Column] = match self_table {
        Some(own) => own,
        None => match catalog.table(&fk.parent_db, &fk.parent_table) {
            Ok(p) => &p.columns,
            Err(_) => return Ok(()),
        },
    };
    for (&c, name) in fk.columns.iter().zip(&fk.parent_columns) {
        if let Some(parent) = parent_columns.iter().find(|p| p.name.eq_ignore_ascii_case(name))
            && !compatible(&columns[c].ty, &parent.ty)
        {
            return Err(incompatible(&columns[c].name, &parent.name, &fk.name));
        }
    }
    Ok(())
}

/// Checks the keys of other tables that refer to a table whose columns are now `columns`
/// (3780 for a type they no longer match).
///
/// # Errors
/// 3780.
pub fn check_referring(catalog: &Catalog, db: &str, table: &str, columns: &[Column]) -> Result<()> {
    for (child, fk) in children_of(catalog, db, table) {
        if child.db == db && child.name == table {
            continue;
        }
        for (&c, name) in fk.columns.iter().zip(&fk.parent_columns) {
            if let Some(parent) = columns.iter().find(|p| p.name.eq_ignore_ascii_case(name))
                && !compatible(&child.columns[c].ty, &parent.ty)
            {
                return Err(incompatible(&child.columns[c].name, &parent.name, &fk.name));
            }
        }
    }
    Ok(())
}

fn incompatible(column: &str, parent_column: &str, name: &str) -> SqlError {
    SqlError::new(
        codes::ER_FK_INCOMPATIBLE_COLUMNS,
        format!("Referencing column '{column}' and referenced column '{parent_column}' in foreign key constraint '{name}' are incompatible."),
    )
}

/// The values of `columns` in `row`, or `None` when one is NULL: such a row refers to no
/// parent (MATCH SIMPLE, the only kind InnoDB has).
#[must_use]
pub fn key_of(row: &[Value], columns: &[usize]) -> Option<Vec<Value>> {
    columns.iter().map(|&c| (!row[c].is_null()).then(|| row[c].clone())).collect()
}
