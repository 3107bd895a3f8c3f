//! The catalog: databases, tables and their column and index definitions, each
//! table owning its storage [`Table`].
//!
//! Database and table names are case-sensitive (as on Linux MySQL with
//! `lower_case_table_names=0`); column and index names are not.
//!
//! A [`Catalog`] is an immutable snapshot: statements read the engine's current one
//! (`Engine::catalog`, an `Arc` clone, no lock held while they run) and reach tables
//! through shared [`TableMeta`] handles whose storage is safe for concurrent use. DDL
//! copies the catalog (a map of handles, not of rows), changes the copy and installs it
//! (`Engine::install_catalog`); metadata locks keep DML off a table while DDL replaces it.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use quill_storage::tablespace::{TablePages, Tablespace};
use quill_storage::{Collation, Handler, IndexDef, KeyPart, Value};

use crate::program_meta::{RoutineMeta, TriggerMeta};
use crate::view_meta::ViewMeta;
use quill_sql_frontend::program::{Event, Timing};
use quill_sql_types::error::{Result, SqlError, codes};
use quill_sql_types::types::SqlType;

/// One CHECK constraint of a table.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckConstraint {
    pub name: String,
    pub expr: sqlparser::ast::Expr,
    pub enforced: bool,
}

/// What a column holds when an INSERT does not name it.
#[derive(Debug, Clone, PartialEq)]
pub enum ColumnDefault {
    /// No DEFAULT clause on a NOT NULL column: omitting it is error 1364.
    None,
    Value(Value),
    /// `DEFAULT CURRENT_TIMESTAMP[(fsp)]`.
    CurrentTimestamp,
    /// `DEFAULT (expr)` (MySQL 8.0.13's expression default): evaluated for each row written
    /// (`dml::column_default`), shown as written.
    Expression(Box<sqlparser::ast::Expr>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    pub name: String,
    pub ty: SqlType,
    pub nullable: bool,
    pub default: ColumnDefault,
    pub auto_increment: bool,
    pub on_update_current_timestamp: bool,
    pub comment: String,
    /// `[GENERATED ALWAYS] AS (expr) [VIRTUAL | STORED]`: the column's value is computed from
    /// the row's other columns on every write (`dml::generate_columns`).
    pub generated: Option<Generated>,
}

/// A generated column's expression, and whether it was declared STORED (both kinds are
/// computed when a row is written and kept with it; VIRTUAL only changes what SHOW CREATE
/// TABLE and information_schema say).
#[derive(Debug, Clone, PartialEq)]
pub struct Generated {
    pub expr: sqlparser::ast::Expr,
    pub stored: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexMeta {
    pub name: String,
    pub columns: Vec<usize>,
    pub unique: bool,
}

#[derive(Debug)]
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
    /// `ROW_FORMAT` as CREATE TABLE gave it (one of [`ROW_FORMATS`]), kept for `SHOW CREATE
    /// TABLE` and `Create_options`; `None` when not given. What the rows use is
    /// `data.row_format()` ([`storage_row_format`]).
    pub row_format: Option<&'static str>,
    /// The table's foreign keys, as a child (`foreign_keys`).
    pub foreign_keys: Vec<crate::foreign_keys::ForeignKey>,
    /// The table's CHECK constraints (`check_constraints`).
    pub checks: Vec<CheckConstraint>,
    /// The table's rows, reached only through the handler API. Shared by the metadata of
    /// the same table under another name (RENAME TABLE keeps its rows where they are).
    pub data: Arc<dyn Handler>,
}

/// The `ROW_FORMAT` values CREATE TABLE accepts. `FIXED` lays rows out in fixed-size slots;
/// every other value gives the dynamic format (see [`storage_row_format`]).
pub const ROW_FORMATS: [&str; 7] = ["DEFAULT", "DYNAMIC", "FIXED", "COMPACT", "REDUNDANT", "COMPRESSED", "PAGE"];

/// The storage format for `ROW_FORMAT=row_format` over `columns`: fixed slots for `FIXED`
/// when every column has a fixed width, as MyISAM decides; otherwise dynamic.
#[must_use]
pub fn storage_row_format(columns: &[Column], row_format: Option<&str>) -> quill_storage::RowFormat {
    if row_format == Some("FIXED")
        && let Some(widths) = columns.iter().map(|c| c.ty.fixed_width()).collect::<Option<Vec<_>>>()
    {
        return quill_storage::RowFormat::Fixed(quill_storage::FixedLayout::new(&widths));
    }
    quill_storage::RowFormat::Dynamic
}

impl TableMeta {
    /// Build the metadata and an empty storage table.
    #[must_use]
    pub fn new(id: u64, db: &str, name: &str, columns: Vec<Column>, primary: Vec<usize>, indexes: Vec<IndexMeta>, collation: Collation) -> TableMeta {
        let data = Self::empty_handler(&columns, &primary, &indexes, None, None).expect("an in-memory table is made without I/O");
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
            row_format: None,
            foreign_keys: Vec::new(),
            checks: Vec::new(),
            data,
        }
    }

    /// The storage shape of a table: its primary key's parts and its secondary indexes.
    fn storage_keys(columns: &[Column], primary: &[usize], indexes: &[IndexMeta]) -> (Vec<KeyPart>, Vec<IndexDef>) {
        let key_part = |c: usize| (c, columns[c].ty.collation());
        (
            primary.iter().map(|&c| key_part(c)).collect(),
            indexes.iter().map(|i| IndexDef { name: i.name.clone(), parts: i.columns.iter().map(|&c| key_part(c)).collect(), unique: i.unique }).collect(),
        )
    }

    /// An empty storage table for this shape: paged in `tablespace` when given, else in
    /// memory.
    fn empty_handler(
        columns: &[Column],
        primary: &[usize],
        indexes: &[IndexMeta],
        row_format: Option<&str>,
        tablespace: Option<&Tablespace>,
    ) -> std::io::Result<Arc<dyn Handler>> {
        let (primary, indexes) = Self::storage_keys(columns, primary, indexes);
        let format = storage_row_format(columns, row_format);
        if let Some(space) = tablespace {
            return Ok(Arc::new(space.create_table(primary, indexes, format)?));
        }
        Ok(Arc::from(quill_storage::handler::create(quill_storage::handler::DEFAULT_ENGINE, primary, indexes, format).expect("the default engine exists")))
    }

    /// The same table, rows and all, under another database and name, with `columns`
    /// (the same columns, some renamed: ALTER TABLE ... RENAME COLUMN).
    #[must_use]
    pub fn renamed(&self, db: &str, name: &str, columns: Vec<Column>) -> TableMeta {
        assert_eq!(columns.len(), self.columns.len(), "a rename keeps every column");
        TableMeta {
            id: self.id,
            db: db.to_owned(),
            name: name.to_owned(),
            columns,
            primary: self.primary.clone(),
            indexes: self.indexes.clone(),
            collation: self.collation,
            comment: self.comment.clone(),
            created_at: self.created_at,
            row_format: self.row_format,
            foreign_keys: self.foreign_keys.clone(),
            checks: self.checks.clone(),
            data: Arc::clone(&self.data),
        }
    }

    /// The same table, rows and all, with `indexes`: its own, then the ones it adds, built
    /// from its rows, which the two tables share ([`quill_storage::Handler::with_indexes`]).
    /// The caller holds the table's exclusive metadata lock and replaces this table with the
    /// new one.
    ///
    /// # Errors
    /// [`quill_storage::WriteError::Duplicate`] when an added unique index meets two rows
    /// with one key.
    ///
    /// # Panics
    /// If `indexes` does not start with this table's own.
    pub fn with_indexes(&self, indexes: Vec<IndexMeta>) -> std::result::Result<TableMeta, quill_storage::WriteError> {
        assert!(indexes.starts_with(&self.indexes), "indexes are added after the table's own");
        let (_, defs) = Self::storage_keys(&self.columns, &self.primary, &indexes[self.indexes.len()..]);
        let mut meta = self.renamed(&self.db, &self.name, self.columns.clone());
        meta.data = self.data.with_indexes(defs)?;
        meta.indexes = indexes;
        Ok(meta)
    }

    /// The same new table with `ROW_FORMAT=row_format` (one of [`ROW_FORMATS`]), its rows
    /// paged in `tablespace` when given (the catalog's, [`Catalog::tablespace`]).
    ///
    /// # Errors
    /// 1114 when the disk is too full for the table's page file, 1005 when it cannot be
    /// created for another reason.
    ///
    /// # Panics
    /// If the table has rows already.
    pub fn with_storage(mut self, row_format: Option<&'static str>, tablespace: Option<&Tablespace>) -> Result<TableMeta> {
        assert_eq!(self.data.statistics().rows, 0, "a row format is chosen before the first row");
        self.data = Self::empty_handler(&self.columns, &self.primary, &self.indexes, row_format, tablespace).map_err(|e| cant_create(&self.name, &e))?;
        self.row_format = row_format;
        Ok(self)
    }

    /// The same table with the rows a checkpoint named as `pages` in `tablespace`, every leaf
    /// on disk, and this table's AUTO_INCREMENT counter (recovery).
    ///
    /// # Errors
    /// The page file cannot be opened, or does not hold the blocks the checkpoint names.
    pub fn with_pages(&self, tablespace: &Tablespace, pages: &TablePages) -> std::result::Result<TableMeta, String> {
        let (primary, indexes) = Self::storage_keys(&self.columns, &self.primary, &self.indexes);
        if pages.indexes.len() != indexes.len() + 1 {
            return Err(format!("{}.{}: the checkpoint names {} indexes, the table has {}", self.db, self.name, pages.indexes.len(), indexes.len() + 1));
        }
        let format = storage_row_format(&self.columns, self.row_format);
        let table = tablespace.open_table(primary, indexes, format, pages).map_err(|e| e.to_string())?;
        table.set_auto_increment(self.data.auto_increment());
        let mut meta = self.renamed(&self.db, &self.name, self.columns.clone());
        meta.data = Arc::new(table);
        Ok(meta)
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

    /// The same table, empty, with AUTO_INCREMENT back at 1 (TRUNCATE), in `tablespace`
    /// when given.
    ///
    /// # Errors
    /// As [`TableMeta::with_storage`].
    pub fn empty_copy(&self, tablespace: Option<&Tablespace>) -> Result<TableMeta> {
        let mut meta = TableMeta::new(self.id, &self.db, &self.name, self.columns.clone(), self.primary.clone(), self.indexes.clone(), self.collation)
            .with_storage(self.row_format, tablespace)?;
        meta.comment.clone_from(&self.comment);
        meta.created_at = self.created_at;
        meta.foreign_keys.clone_from(&self.foreign_keys);
        meta.checks.clone_from(&self.checks);
        Ok(meta)
    }
}

/// The error for a table whose page file could not be made: 1114 when the disk is full (as
/// every write that finds it full), else 1005 with the OS error number.
fn cant_create(table: &str, e: &std::io::Error) -> SqlError {
    if e.kind() == std::io::ErrorKind::StorageFull {
        return SqlError::new(codes::ER_RECORD_FILE_FULL, format!("The table '{table}' is full"));
    }
    SqlError::new(codes::ER_CANT_CREATE_TABLE, format!("Can't create table '{table}' (errno: {})", e.raw_os_error().unwrap_or(-1)))
}

#[derive(Debug, Clone, Default)]
pub struct Database {
    pub name: String,
    pub collation: Collation,
    pub tables: BTreeMap<String, Arc<TableMeta>>,
    /// The database's views (`views`); no name is both a table and a view.
    pub views: BTreeMap<String, Arc<ViewMeta>>,
    /// The database's triggers, in action order (`program_meta`).
    pub triggers: Vec<Arc<TriggerMeta>>,
    /// Its stored procedures and functions (two name spaces), by lower-cased name.
    pub procedures: BTreeMap<String, Arc<RoutineMeta>>,
    pub functions: BTreeMap<String, Arc<RoutineMeta>>,
}

impl Database {
    /// The procedures (`function` false) or functions of the database.
    #[must_use]
    pub fn routines(&self, function: bool) -> &BTreeMap<String, Arc<RoutineMeta>> {
        if function { &self.functions } else { &self.procedures }
    }
}

/// Names of the databases that always exist and cannot be dropped.
pub const SYSTEM_DATABASES: [&str; 4] = ["information_schema", "mysql", "performance_schema", "sys"];

#[derive(Debug, Default, Clone)]
pub struct Catalog {
    pub databases: BTreeMap<String, Database>,
    next_table_id: u64,
    /// Table id -> (database, table), for transactions' write sets.
    by_id: HashMap<u64, (String, String)>,
    /// Ids of the tables that have foreign keys ([`Catalog::has_foreign_keys`]).
    with_foreign_keys: std::collections::HashSet<u64>,
    /// Where new tables keep their rows: paged in this tablespace, or (`None`) in memory.
    tablespace: Option<Arc<Tablespace>>,
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

    /// Where new tables keep their rows ([`Catalog::set_tablespace`]).
    #[must_use]
    pub fn tablespace(&self) -> Option<Arc<Tablespace>> {
        self.tablespace.clone()
    }

    /// New tables are paged in `tablespace` from now on (the engine's, set at start-up).
    pub fn set_tablespace(&mut self, tablespace: Arc<Tablespace>) {
        self.tablespace = Some(tablespace);
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
        self.databases.get(db).and_then(|d| d.tables.get(name)).map(|t| &**t).ok_or_else(|| SqlError::no_such_table(db, name))
    }

    /// A shared handle on a table, to keep beyond this snapshot.
    ///
    /// # Errors
    /// 1049 / 1146.
    pub fn table_handle(&self, db: &str, name: &str) -> Result<Arc<TableMeta>> {
        self.databases.get(db).and_then(|d| d.tables.get(name)).cloned().ok_or_else(|| SqlError::no_such_table(db, name))
    }

    /// Whether any table may have a foreign key (a statement on a catalog without one skips
    /// the search for children). Constant time: a dropped database can leave a stale id,
    /// which only costs that search.
    #[must_use]
    pub fn has_foreign_keys(&self) -> bool {
        !self.with_foreign_keys.is_empty()
    }

    #[must_use]
    pub fn table_by_id(&self, id: u64) -> Option<&TableMeta> {
        let (db, name) = self.by_id.get(&id)?;
        self.databases.get(db)?.tables.get(name).map(|t| &**t)
    }

    /// Put `meta` in the place of the table of the same database and name (ALTER,
    /// TRUNCATE): statements that run on the new snapshot see only the new table.
    ///
    /// # Errors
    /// 1049 / 1146.
    pub fn replace_table(&mut self, meta: TableMeta) -> Result<()> {
        let slot = self
            .databases
            .get_mut(&meta.db)
            .ok_or_else(|| SqlError::unknown_db(&meta.db))?
            .tables
            .get_mut(&meta.name)
            .ok_or_else(|| SqlError::no_such_table(&meta.db, &meta.name))?;
        self.by_id.remove(&slot.id);
        self.with_foreign_keys.remove(&slot.id);
        self.by_id.insert(meta.id, (meta.db.clone(), meta.name.clone()));
        if !meta.foreign_keys.is_empty() {
            self.with_foreign_keys.insert(meta.id);
        }
        *slot = Arc::new(meta);
        Ok(())
    }

    /// The view `db`.`name`, if there is one.
    #[must_use]
    pub fn view(&self, db: &str, name: &str) -> Option<&Arc<ViewMeta>> {
        self.databases.get(db).and_then(|d| d.views.get(name))
    }

    /// Register a view, or put it in the place of the view of its name.
    ///
    /// # Errors
    /// 1049; 1050 when a table has the name.
    pub fn put_view(&mut self, view: ViewMeta) -> Result<()> {
        let db = self.databases.get_mut(&view.db).ok_or_else(|| SqlError::unknown_db(&view.db))?;
        if db.tables.contains_key(&view.name) {
            return Err(SqlError::new(codes::ER_TABLE_EXISTS_ERROR, format!("Table '{}' already exists", view.name)));
        }
        db.views.insert(view.name.clone(), Arc::new(view));
        Ok(())
    }

    /// Remove a view, returning it.
    pub fn remove_view(&mut self, db: &str, name: &str) -> Option<Arc<ViewMeta>> {
        self.databases.get_mut(db).and_then(|d| d.views.remove(name))
    }

    /// The trigger `db.name`.
    #[must_use]
    pub fn trigger(&self, db: &str, name: &str) -> Option<&Arc<TriggerMeta>> {
        self.databases.get(db).and_then(|d| d.triggers.iter().find(|t| t.name.eq_ignore_ascii_case(name)))
    }

    /// The triggers of `db.table` for `event` at `timing`, in the order they fire.
    pub fn triggers_for<'a>(&'a self, db: &str, table: &'a str, event: Event, timing: Timing) -> impl Iterator<Item = &'a Arc<TriggerMeta>> + 'a {
        self.databases
            .get(db)
            .map(|d| d.triggers.as_slice())
            .unwrap_or_default()
            .iter()
            .filter(move |t| t.event == event && t.timing == timing && t.table == table)
    }

    /// Whether `db.table` has a trigger for `event` (at either timing).
    #[must_use]
    pub fn has_triggers(&self, db: &str, table: &str, event: Event) -> bool {
        self.databases.get(db).is_some_and(|d| d.triggers.iter().any(|t| t.event == event && t.table == table))
    }

    /// Adds a trigger, after every trigger of its table, event and timing, or beside the one
    /// `order` names (`(true, name)`: FOLLOWS it; `(false, name)`: PRECEDES it).
    ///
    /// # Errors
    /// 1049; 1359 when its database has a trigger of the name; 3011 when `order` names no
    /// trigger of the same table, event and timing.
    pub fn add_trigger(&mut self, trigger: TriggerMeta, order: Option<(bool, &str)>) -> Result<()> {
        let db = self.databases.get_mut(&trigger.db).ok_or_else(|| SqlError::unknown_db(&trigger.db))?;
        if db.triggers.iter().any(|t| t.name.eq_ignore_ascii_case(&trigger.name)) {
            return Err(SqlError::new(codes::ER_TRG_ALREADY_EXISTS, "Trigger already exists"));
        }
        let same = |t: &TriggerMeta| t.table == trigger.table && t.event == trigger.event && t.timing == trigger.timing;
        let at = match order {
            None => db.triggers.len(),
            Some((follows, other)) => {
                let i = db.triggers.iter().position(|t| same(t) && t.name.eq_ignore_ascii_case(other)).ok_or_else(|| {
                    SqlError::new(
                        codes::ER_REFERENCED_TRG_DOES_NOT_EXIST,
                        format!("Referenced trigger '{other}' for the given action time and event type does not exist."),
                    )
                })?;
                if follows { i + 1 } else { i }
            }
        };
        db.triggers.insert(at, Arc::new(trigger));
        Ok(())
    }

    /// Removes the trigger `db.name`, returning it.
    pub fn remove_trigger(&mut self, db: &str, name: &str) -> Option<Arc<TriggerMeta>> {
        let d = self.databases.get_mut(db)?;
        let i = d.triggers.iter().position(|t| t.name.eq_ignore_ascii_case(name))?;
        Some(d.triggers.remove(i))
    }

    /// Removes every trigger of `db.table` (the table is dropped).
    pub fn remove_triggers_of(&mut self, db: &str, table: &str) {
        if let Some(d) = self.databases.get_mut(db) {
            d.triggers.retain(|t| t.table != table);
        }
    }

    /// The procedure (`function` false) or function `db.name` (names are case-insensitive).
    #[must_use]
    pub fn routine(&self, db: &str, name: &str, function: bool) -> Option<&Arc<RoutineMeta>> {
        self.databases.get(db).and_then(|d| d.routines(function).get(&name.to_lowercase()))
    }

    /// Adds a procedure or function.
    ///
    /// # Errors
    /// 1049; 1304 when one of its kind has the name.
    pub fn add_routine(&mut self, routine: RoutineMeta) -> Result<()> {
        let db = self.databases.get_mut(&routine.db).ok_or_else(|| SqlError::unknown_db(&routine.db))?;
        let map = if routine.function { &mut db.functions } else { &mut db.procedures };
        let key = routine.name.to_lowercase();
        if map.contains_key(&key) {
            return Err(SqlError::new(codes::ER_SP_ALREADY_EXISTS, format!("{} {} already exists", routine.kind(), routine.name)));
        }
        map.insert(key, Arc::new(routine));
        Ok(())
    }

    /// Removes the procedure or function `db.name`, returning it.
    pub fn remove_routine(&mut self, db: &str, name: &str, function: bool) -> Option<Arc<RoutineMeta>> {
        let d = self.databases.get_mut(db)?;
        let map = if function { &mut d.functions } else { &mut d.procedures };
        map.remove(&name.to_lowercase())
    }

    /// Register a new table.
    ///
    /// # Errors
    /// 1049 / 1050 (a table or a view of that name).
    pub fn add_table(&mut self, meta: TableMeta) -> Result<()> {
        let db = self.databases.get_mut(&meta.db).ok_or_else(|| SqlError::unknown_db(&meta.db))?;
        if db.tables.contains_key(&meta.name) || db.views.contains_key(&meta.name) {
            return Err(SqlError::new(codes::ER_TABLE_EXISTS_ERROR, format!("Table '{}' already exists", meta.name)));
        }
        self.by_id.insert(meta.id, (meta.db.clone(), meta.name.clone()));
        if !meta.foreign_keys.is_empty() {
            self.with_foreign_keys.insert(meta.id);
        }
        db.tables.insert(meta.name.clone(), Arc::new(meta));
        Ok(())
    }

    /// RENAME TABLE / ALTER TABLE ... RENAME: `from` takes the name `to`, its rows and
    /// definition unchanged (a view moves within its database only); foreign keys of other
    /// tables that name it as their parent follow it, as InnoDB's do.
    ///
    /// # Errors
    /// 1049, 1146, 1050 when `to` is taken, 1450 for a view moved to another database.
    pub fn rename(&mut self, from: (&str, &str), to: (&str, &str)) -> Result<()> {
        let (db, name) = from;
        let (new_db, new_name) = to;
        let target = self.database(new_db)?;
        if target.tables.contains_key(new_name) || target.views.contains_key(new_name) {
            return Err(SqlError::new(codes::ER_TABLE_EXISTS_ERROR, format!("Table '{new_name}' already exists")));
        }
        if let Some(view) = self.remove_view(db, name) {
            if db != new_db {
                let error = SqlError::new(codes::ER_FORBID_SCHEMA_CHANGE, format!("Changing schema from '{db}' to '{new_db}' is not allowed."));
                self.put_view(ViewMeta::clone(&view))?;
                return Err(error);
            }
            return self.put_view(ViewMeta { name: new_name.to_owned(), ..ViewMeta::clone(&view) });
        }
        let has_triggers = self.databases.get(db).is_some_and(|d| d.triggers.iter().any(|t| t.table == name));
        if has_triggers && db != new_db {
            return Err(SqlError::new(codes::ER_TRG_IN_WRONG_SCHEMA, "Trigger in wrong schema"));
        }
        let old = self.remove_table(db, name).map_err(|_| SqlError::no_such_table(db, name))?;
        let renamed = old.renamed(new_db, new_name, old.columns.clone());
        self.add_table(renamed)?;
        if let Some(d) = self.databases.get_mut(db) {
            for t in d.triggers.iter_mut().filter(|t| t.table == name) {
                *t = Arc::new(TriggerMeta { table: new_name.to_owned(), ..TriggerMeta::clone(t) });
            }
        }
        self.repoint_children(from, to, &[]);
        Ok(())
    }

    /// Foreign keys whose parent is `from` now name `to`, and the parent's columns renamed
    /// (old name, new name) by their new names.
    pub fn repoint_children(&mut self, from: (&str, &str), to: (&str, &str), renamed_columns: &[(String, String)]) {
        let children: Vec<(String, String)> = self
            .databases
            .values()
            .flat_map(|d| d.tables.values())
            .filter(|t| t.foreign_keys.iter().any(|k| (k.parent_db.as_str(), k.parent_table.as_str()) == from))
            .map(|t| (t.db.clone(), t.name.clone()))
            .collect();
        for (db, name) in children {
            let Ok(child) = self.table(&db, &name) else { continue };
            let mut meta = child.renamed(&db, &name, child.columns.clone());
            for key in meta.foreign_keys.iter_mut().filter(|k| (k.parent_db.as_str(), k.parent_table.as_str()) == from) {
                key.parent_db = to.0.to_owned();
                key.parent_table = to.1.to_owned();
                for column in &mut key.parent_columns {
                    if let Some((_, new)) = renamed_columns.iter().find(|(old, _)| old.eq_ignore_ascii_case(column)) {
                        column.clone_from(new);
                    }
                }
            }
            self.replace_table(meta).expect("the child is in the catalog");
        }
    }

    /// Remove a table, returning it.
    ///
    /// # Errors
    /// 1051 if it does not exist.
    pub fn remove_table(&mut self, db: &str, name: &str) -> Result<Arc<TableMeta>> {
        let t = self
            .databases
            .get_mut(db)
            .and_then(|d| d.tables.remove(name))
            .ok_or_else(|| SqlError::new(codes::ER_BAD_TABLE_ERROR, format!("Unknown table '{db}.{name}'")))?;
        self.by_id.remove(&t.id);
        self.with_foreign_keys.remove(&t.id);
        Ok(t)
    }
}
