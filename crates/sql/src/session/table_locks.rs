//! `LOCK TABLES` and `UNLOCK TABLES` in a session, with MySQL's semantics.
//!
//! `LOCK TABLES t [[AS] alias] {READ [LOCAL] | [LOW_PRIORITY] WRITE}, ...` commits the open
//! transaction, releases the session's earlier table locks, and takes explicit metadata
//! locks (`mdl::Mode::ReadOnly` for READ, `mdl::Mode::NoReadWrite` for WRITE), waiting up
//! to `lock_wait_timeout` for all of them at once. Until `UNLOCK TABLES`, `BEGIN` /
//! `START TRANSACTION` or the end of the connection, the session may use only the tables it
//! locked, by the names it locked them under (an alias replaces the table's name), and
//! write only those locked WRITE:
//! - a table reference not in the set: 1100 (`Table 'x' was not locked with LOCK TABLES`),
//!   and so is `CREATE TABLE`;
//! - a write to, or DDL on, a table locked READ: 1099;
//! - `DROP TABLE` of a table locked WRITE drops it from the set.
//!
//! `READ LOCAL` is `READ`, as for InnoDB in MySQL 8. Tables of the system schemas are not
//! checked. Where it sits: inside `session`, over `mdl`.

use std::collections::BTreeMap;
use std::ops::ControlFlow;

use sqlparser::ast::{self, Statement, TableFactor, Visit, Visitor};

use super::{Outcome, Session};
use crate::error::{Result, SqlError, codes};
use crate::mdl::{Mode, TableName};

/// The tables a session holds with `LOCK TABLES`: by database and the name statements use
/// (the alias, or the table's name), the table's name and whether it was locked WRITE.
#[derive(Debug, Default)]
pub(super) struct LockedTables {
    by_reference: BTreeMap<(String, String), (String, bool)>,
}

/// One table reference of a statement: database, table, the name it goes by, and whether
/// the statement writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct TableReference {
    pub db: String,
    pub table: String,
    pub name: String,
    pub write: bool,
}

impl LockedTables {
    /// Checks that `refs` use only locked tables, and write only those locked WRITE.
    fn check(&self, refs: &[TableReference]) -> Result<()> {
        for r in refs {
            match self.by_reference.get(&(r.db.clone(), r.name.clone())) {
                Some((table, _)) if *table != r.table => return Err(not_locked(&r.name)),
                Some((_, false)) if r.write => {
                    return Err(SqlError::new(
                        codes::ER_TABLE_NOT_LOCKED_FOR_WRITE,
                        format!("Table '{}' was locked with a READ lock and can't be updated", r.name),
                    ));
                }
                Some(_) => {}
                None => return Err(not_locked(&r.name)),
            }
        }
        Ok(())
    }
}

fn not_locked(name: &str) -> SqlError {
    SqlError::new(codes::ER_TABLE_NOT_LOCKED, format!("Table '{name}' was not locked with LOCK TABLES"))
}

/// Collects the tables a statement names, with the names they go by, and the names of its
/// common table expressions (which are not tables).
struct References<'a> {
    session: &'a Session,
    /// The catalog the statement's names are looked up in (for views), taken once.
    catalog: std::sync::Arc<crate::catalog::Catalog>,
    refs: Vec<TableReference>,
    ctes: Vec<String>,
}

impl<'a> References<'a> {
    fn new(session: &'a Session) -> Self {
        References { session, catalog: session.info.engine.catalog(), refs: Vec::new(), ctes: Vec::new() }
    }
}

impl Visitor for References<'_> {
    type Break = ();

    fn pre_visit_query(&mut self, query: &ast::Query) -> ControlFlow<()> {
        if let Some(with) = &query.with {
            self.ctes.extend(with.cte_tables.iter().map(|c| c.alias.name.value.clone()));
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> ControlFlow<()> {
        if let TableFactor::Table { name, alias, .. } = factor {
            let cte = name.0.len() == 1 && name.0[0].as_ident().is_some_and(|i| self.ctes.contains(&i.value));
            if cte {
                return ControlFlow::Continue(());
            }
            if let Ok((db, table)) = crate::query::resolve_table_name(&self.session.info, name) {
                let name = alias.as_ref().map_or_else(|| table.clone(), |a| a.name.value.clone());
                // A view's tables are read too: under their own names.
                if let Some(view) = self.catalog.view(&db, &table) {
                    for (db, table) in crate::views::reads(&self.catalog, view) {
                        self.refs.push(TableReference { db, name: table.clone(), table, write: false });
                    }
                }
                self.refs.push(TableReference { db, table, name, write: false });
            }
        }
        ControlFlow::Continue(())
    }
}

impl Session {
    /// `LOCK TABLES` / `UNLOCK TABLES` (see the module doc).
    ///
    /// # Errors
    /// Syntax (1064), an unknown table (1146), one name twice (1066), a wait past
    /// `lock_wait_timeout` (1205), and the implicit commit's errors.
    pub(super) async fn table_lock_statement(&mut self, sql: &str) -> Result<Outcome> {
        if sql.trim_start().get(..6).is_some_and(|w| w.eq_ignore_ascii_case("UNLOCK")) {
            self.unlock_tables()?;
            return Ok(Outcome::ok());
        }
        let items = crate::table_lock_statements::parse(sql)?;
        let mut locked = LockedTables::default();
        let mut requests: Vec<(TableName, Mode)> = Vec::new();
        // Tables locked because a locked view reads them, once the named ones are in.
        let mut implied: Vec<(String, String, bool)> = Vec::new();
        {
            let catalog = self.info.engine.catalog();
            for item in &items {
                let (db, table) = crate::query::resolve_table_name(&self.info, &item.name)?;
                // LOCK TABLES on the database (1044), and SELECT on the table (1142).
                self.require_database(&db, crate::accounts::LOCK_TABLES)?;
                self.require_table(&db, &table, crate::accounts::SELECT)?;
                // A view locks the tables it reads too, in the same mode, as MySQL's does.
                let read_by_view = match catalog.view(&db, &table) {
                    Some(view) => crate::views::reads(&catalog, view),
                    None => {
                        catalog.table(&db, &table)?;
                        Default::default()
                    }
                };
                let name = item.alias.clone().unwrap_or_else(|| table.clone());
                if locked.by_reference.insert((db.clone(), name.clone()), (table.clone(), item.write)).is_some() {
                    return Err(SqlError::new(codes::ER_NONUNIQ_TABLE, format!("Not unique table/alias: '{name}'")));
                }
                implied.extend(read_by_view.iter().map(|(db, table)| (db.clone(), table.clone(), item.write)));
                let mode = if item.write { Mode::NoReadWrite } else { Mode::ReadOnly };
                for name in std::iter::once((db, table)).chain(read_by_view) {
                    match requests.iter_mut().find(|(n, _)| *n == name) {
                        Some((_, m)) => *m = (*m).max(mode),
                        None => requests.push((name, mode)),
                    }
                }
            }
        }
        for (db, table, write) in implied {
            let entry = locked.by_reference.entry((db, table.clone())).or_insert_with(|| (table, write));
            entry.1 |= write;
        }
        self.unlock_tables()?;
        self.commit()?;
        self.acquire_locks(requests, true).await?;
        self.locked_tables = Some(locked);
        Ok(Outcome::ok())
    }

    /// `UNLOCK TABLES`, and what `BEGIN` and the end of the connection do: commits the open
    /// transaction if the session held table locks, and releases them.
    ///
    /// # Errors
    /// The commit's.
    pub(super) fn unlock_tables(&mut self) -> Result<()> {
        if self.locked_tables.take().is_some() {
            let committed = self.commit();
            self.info.engine.mdl.release_explicit(self.info.connection_id);
            committed?;
        }
        Ok(())
    }

    /// Under `LOCK TABLES`, checks that `stmt` uses only the locked tables as it may (see
    /// the module doc); `DROP TABLE` of a table locked WRITE leaves the set. Without table
    /// locks, does nothing.
    ///
    /// # Errors
    /// 1099, 1100.
    pub(super) fn check_table_locks(&mut self, stmt: &Statement) -> Result<()> {
        let Some(locked) = &self.locked_tables else { return Ok(()) };
        let refs = self.table_references(stmt);
        locked.check(&refs)?;
        if let Statement::Drop { object_type: ast::ObjectType::Table, .. } = stmt
            && let Some(locked) = &mut self.locked_tables
        {
            for r in &refs {
                locked.by_reference.retain(|(db, _), (table, _)| !(*db == r.db && *table == r.table));
            }
            if locked.by_reference.is_empty() {
                // Dropping the last locked table ends LOCK TABLES, as in MySQL.
                self.locked_tables = None;
                self.info.engine.mdl.release_explicit(self.info.connection_id);
            }
        }
        Ok(())
    }

    /// Under `LOCK TABLES`, checks a statement the parser does not see that reads or
    /// (`write`) writes `db.table`: CHECKSUM TABLE, LOAD DATA.
    ///
    /// # Errors
    /// 1099, 1100.
    pub(super) fn check_table_lock(&self, db: &str, table: &str, write: bool) -> Result<()> {
        let Some(locked) = &self.locked_tables else { return Ok(()) };
        locked.check(&[TableReference { db: db.to_owned(), table: table.to_owned(), name: table.to_owned(), write }])
    }

    /// Every table a statement names in its queries, CTE names left out, and the tables
    /// the views among them read: what it reads.
    pub(super) fn references_read(&self, stmt: &Statement) -> Vec<TableReference> {
        let mut v = References::new(self);
        let _ = stmt.visit(&mut v);
        v.refs
    }

    /// The tables `stmt` names outside the system schemas, with whether it writes them
    /// (DDL counts as a write).
    pub(super) fn table_references(&self, stmt: &Statement) -> Vec<TableReference> {
        let resolve = |name: &ast::ObjectName| crate::query::resolve_table_name(&self.info, name).ok();
        let whole = |(db, table): TableName| TableReference { db, name: table.clone(), table, write: true };
        let mut refs: Vec<TableReference> = match stmt {
            Statement::CreateTable(ct) => resolve(&ct.name).map(whole).into_iter().collect(),
            Statement::Drop { object_type: ast::ObjectType::Table, names, .. } => names.iter().filter_map(resolve).map(whole).collect(),
            Statement::Drop { object_type: ast::ObjectType::Index, table: Some(t), .. } => resolve(t).map(whole).into_iter().collect(),
            Statement::AlterTable(at) => {
                // ALTER TABLE ... RENAME TO locks the new name too.
                let to = at.operations.iter().filter_map(|op| match op {
                    ast::AlterTableOperation::RenameTable { table_name: ast::RenameTableNameKind::To(n) | ast::RenameTableNameKind::As(n) } => resolve(n),
                    _ => None,
                });
                resolve(&at.name).into_iter().chain(to).map(whole).collect()
            }
            Statement::RenameTable(pairs) => pairs.iter().flat_map(|p| [resolve(&p.old_name), resolve(&p.new_name)]).flatten().map(whole).collect(),
            Statement::Truncate(t) => t.table_names.iter().filter_map(|n| resolve(&n.name)).map(whole).collect(),
            Statement::CreateIndex(ci) => resolve(&ci.table_name).map(whole).into_iter().collect(),
            // A view's DDL locks its own name; the tables its query reads are only read.
            Statement::CreateView(cv) => resolve(&cv.name).map(whole).into_iter().collect(),
            Statement::AlterView { name, .. } => resolve(name).map(whole).into_iter().collect(),
            Statement::Drop { object_type: ast::ObjectType::View, names, .. } => names.iter().filter_map(resolve).map(whole).collect(),
            _ => {
                let mut v = References::new(self);
                let _ = stmt.visit(&mut v);
                let mut refs = v.refs;
                match stmt {
                    Statement::Insert(i) => {
                        if let ast::TableObject::TableName(name) = &i.table {
                            refs.extend(resolve(name).map(whole));
                        }
                    }
                    Statement::Update(u) => {
                        let mut targets = References::new(self);
                        let _ = u.table.visit(&mut targets);
                        // A multi-table UPDATE writes the tables its assignments name (each
                        // of the join's, when one names its column alone).
                        let qualifiers: Option<Vec<String>> = u
                            .assignments
                            .iter()
                            .map(|a| match &a.target {
                                ast::AssignmentTarget::ColumnName(n) if n.0.len() >= 2 => n.0[n.0.len() - 2].as_ident().map(|i| i.value.clone()),
                                _ => None,
                            })
                            .collect();
                        let multi = !u.table.joins.is_empty() || matches!(u.table.relation, TableFactor::NestedJoin { .. });
                        for r in &mut refs {
                            let named = match (&qualifiers, multi) {
                                (Some(q), true) => q.iter().any(|n| n.eq_ignore_ascii_case(&r.name)),
                                _ => true,
                            };
                            r.write |= named && targets.refs.contains(r);
                        }
                    }
                    Statement::Delete(d) => {
                        let named: Vec<String> = d.tables.iter().filter_map(|n| n.0.last().and_then(|p| p.as_ident()).map(|i| i.value.clone())).collect();
                        let from = match &d.from {
                            ast::FromTable::WithFromKeyword(f) | ast::FromTable::WithoutKeyword(f) => f,
                        };
                        let mut targets = References::new(self);
                        let _ = from.visit(&mut targets);
                        for r in &mut refs {
                            r.write |= targets.refs.contains(r) && (named.is_empty() || named.iter().any(|n| n.eq_ignore_ascii_case(&r.name)));
                        }
                    }
                    _ => {}
                }
                refs
            }
        };
        refs.retain(|r| !crate::catalog::SYSTEM_DATABASES.iter().any(|s| s.eq_ignore_ascii_case(&r.db)));
        refs
    }
}
