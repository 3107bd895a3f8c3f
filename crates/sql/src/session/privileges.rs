//! Privilege checks: what each statement needs of the session's account, and MySQL's errors
//! when it lacks it.
//!
//! The account is `user`@`account_host` as it logged in (`SessionInfo::checked`; the
//! server's own sessions are not checked). Its privileges on a table are its global ones,
//! its grant on the table's database and its grant on the table, together
//! (`accounts::Acl::privileges`). A statement that lacks one fails before it runs:
//!
//! - 1142 `<COMMAND> command denied to user 'u'@'host' for table 't'`: a table privilege
//!   (SELECT of every table a statement reads, INSERT / UPDATE / DELETE of the one it
//!   writes, CREATE / DROP / ALTER / INDEX of the one DDL changes);
//! - 1044 `Access denied for user 'u'@'account-host' to database 'd'`: CREATE and DROP
//!   DATABASE, USE of a database the account has nothing in, LOCK TABLES;
//! - 1227 `Access denied; you need (at least one of) the X privilege(s) for this
//!   operation`: global operations (SET GLOBAL, FLUSH, account management, replication);
//! - 1045 `Access denied for user ...`: the FILE privilege, as MySQL reports it.
//!
//! What an account may *see* follows MySQL too:
//!
//! - `information_schema` rows name only databases and tables the account has some
//!   privilege on ([`SessionInfo::may_see_table`], [`SessionInfo::may_see_database`]); SHOW
//!   TABLES and SHOW TABLE STATUS of a database it has nothing in are 1044;
//! - other connections' threads and statements (PROCESSLIST) need PROCESS, and so do
//!   `INNODB_TRX` and SHOW ENGINE INNODB STATUS (1227);
//! - `performance_schema`'s lock tables need SELECT on `performance_schema` (1142);
//! - the binary log's and the replica's status need REPLICATION CLIENT or SUPER (1227);
//! - SHOW CREATE VIEW needs SHOW VIEW and SELECT on the view (1142).
//!
//! `tests/test_privilege_visibility.py` holds the table of what is seen (run against MariaDB
//! too), `tests/test_privileges.py` that of what each statement needs. The checks
//! read the engine's ACL snapshot: a grant or revoke applies from the session's next
//! statement.

use sqlparser::ast::{self, Statement};

use super::Session;
use crate::accounts::{self, Privs};
use crate::error::{Result, SqlError, codes};
use crate::query;

impl Session {
    pub(crate) fn privileges_on(&self, db: &str, table: Option<&str>) -> Privs {
        self.info.privileges_on(db, table)
    }

    /// The session's global privileges.
    #[must_use]
    pub fn global_privileges(&self) -> Privs {
        self.info.global_privileges()
    }

    pub(crate) fn client_host(&self) -> &str {
        self.info.client_host()
    }

    pub(crate) fn require_table(&self, db: &str, table: &str, needed: Privs) -> Result<()> {
        self.info.require_table(db, table, needed)
    }

    pub(crate) fn require_any_on_table(&self, db: &str, table: &str) -> Result<()> {
        self.info.require_any_on_table(db, table)
    }

    /// 1044 unless the account has every privilege of `needed` on `db` (not counting table grants).
    pub(crate) fn require_database(&self, db: &str, needed: Privs) -> Result<()> {
        if needed & !self.privileges_on(db, None) == 0 { Ok(()) } else { Err(self.database_denied(db)) }
    }

    pub(crate) fn database_denied(&self, db: &str) -> SqlError {
        SqlError::new(codes::ER_DBACCESS_DENIED_ERROR, format!("Access denied for user '{}'@'{}' to database '{db}'", self.info.user, self.info.account_host))
    }

    /// 1227 unless the account has one of `any_of` globally; `names` says which (MySQL 8's
    /// dynamic privilege names are given beside the static one they stand in for).
    ///
    /// # Errors
    /// 1227.
    pub fn require_global(&self, any_of: Privs, names: &str) -> Result<()> {
        self.info.require_global(any_of, names)
    }

    /// 1045, as MySQL answers a statement that needs the FILE privilege without it.
    pub(crate) fn require_file(&self) -> Result<()> {
        if self.global_privileges() & accounts::FILE != 0 {
            Ok(())
        } else {
            Err(SqlError::new(
                codes::ER_ACCESS_DENIED_ERROR,
                format!("Access denied for user '{}'@'{}' (using password: YES)", self.info.user, self.info.account_host),
            ))
        }
    }

    /// Checks a parsed statement before it runs (see the module doc).
    pub(super) fn check_privileges(&self, stmt: &Statement) -> Result<()> {
        if !self.info.checked || self.global_privileges() & accounts::ALL_GLOBAL == accounts::ALL_GLOBAL {
            return Ok(());
        }
        let table = |name: &ast::ObjectName| query::resolve_table_name(&self.info, name);
        // The table a statement writes, and what writing it needs.
        let mut written: Option<((String, String), Privs)> = None;
        match stmt {
            Statement::Insert(i) => {
                if let ast::TableObject::TableName(name) = &i.table {
                    let mut needed = accounts::INSERT;
                    if i.replace_into {
                        needed |= accounts::DELETE;
                    }
                    if i.on.is_some() {
                        needed |= accounts::UPDATE;
                    }
                    written = Some((table(name)?, needed));
                }
            }
            // A multi-table UPDATE or DELETE checks each target it finds (`dml::multi`).
            Statement::Update(u) if u.table.joins.is_empty() => {
                if let ast::TableFactor::Table { name, .. } = &u.table.relation {
                    written = Some((table(name)?, accounts::UPDATE));
                }
            }
            Statement::Delete(d) if d.tables.is_empty() && d.using.is_none() => {
                let from = match &d.from {
                    ast::FromTable::WithFromKeyword(t) | ast::FromTable::WithoutKeyword(t) => t,
                };
                if let Some(ast::TableFactor::Table { name, .. }) = from.first().map(|t| &t.relation) {
                    written = Some((table(name)?, accounts::DELETE));
                }
            }
            Statement::CreateTable(ct) => {
                written = Some((table(&ct.name)?, accounts::CREATE));
                if let Some(like) = &ct.like {
                    let (ast::CreateTableLikeKind::Parenthesized(l) | ast::CreateTableLikeKind::Plain(l)) = like;
                    let (db, t) = table(&l.name)?;
                    self.require_table(&db, &t, accounts::SELECT)?;
                }
            }
            Statement::AlterTable(at) => written = Some((table(&at.name)?, accounts::ALTER)),
            Statement::CreateIndex(ci) => written = Some((table(&ci.table_name)?, accounts::INDEX)),
            Statement::Drop { object_type: ast::ObjectType::Index, table: Some(t), .. } => written = Some((table(t)?, accounts::INDEX)),
            Statement::Drop { object_type: ast::ObjectType::Table, names, .. } => {
                for name in names {
                    let (db, t) = table(name)?;
                    self.require_table(&db, &t, accounts::DROP)?;
                }
                return Ok(());
            }
            Statement::Truncate(t) => {
                for target in &t.table_names {
                    let (db, name) = table(&target.name)?;
                    self.require_table(&db, &name, accounts::DROP)?;
                }
                return Ok(());
            }
            Statement::CreateView(cv) => written = Some((table(&cv.name)?, accounts::CREATE_VIEW | if cv.or_replace { accounts::DROP } else { 0 })),
            Statement::AlterView { name, .. } => written = Some((table(name)?, accounts::CREATE_VIEW | accounts::DROP)),
            // MySQL's rule: ALTER and DROP on the old name, CREATE and INSERT on the new.
            Statement::RenameTable(pairs) => {
                for pair in pairs {
                    let (db, t) = table(&pair.old_name)?;
                    self.require_table(&db, &t, accounts::ALTER | accounts::DROP)?;
                    let (db, t) = table(&pair.new_name)?;
                    self.require_table(&db, &t, accounts::CREATE | accounts::INSERT)?;
                }
                return Ok(());
            }
            Statement::Drop { object_type: ast::ObjectType::View, names, .. } => {
                for name in names {
                    let (db, t) = table(name)?;
                    self.require_table(&db, &t, accounts::DROP)?;
                }
                return Ok(());
            }
            Statement::CreateDatabase { db_name, .. } => return self.require_database(&super::ident_of(db_name), accounts::CREATE),
            Statement::AlterSchema(alter) => {
                let db = if alter.name.0.is_empty() { self.info.db.clone().unwrap_or_default() } else { super::ident_of(&alter.name) };
                return self.require_database(&db, accounts::ALTER);
            }
            Statement::CreateSchema { schema_name, .. } => return self.require_database(schema_name.to_string().trim_matches('`'), accounts::CREATE),
            Statement::Drop { object_type: ast::ObjectType::Database | ast::ObjectType::Schema, names, .. } => {
                return names.iter().try_for_each(|n| self.require_database(&super::ident_of(n), accounts::DROP));
            }
            _ => {}
        }
        if let Some(((db, t), needed)) = &written {
            self.require_table(db, t, *needed)?;
        }
        // Every other table the statement names is read (a CTE's name is no table).
        for reference in self.references_read(stmt) {
            let (db, t) = (reference.db, reference.table);
            if written.as_ref().is_some_and(|((wd, wt), _)| *wd == db && *wt == t) {
                continue;
            }
            // A CREATE TABLE's own name is not read.
            if matches!(
                stmt,
                Statement::CreateTable(_) | Statement::AlterTable(_) | Statement::CreateIndex(_) | Statement::CreateView(_) | Statement::AlterView { .. }
            ) && written.is_some()
            {
                let ddl_target = written.as_ref().map(|(n, _)| n.clone());
                if ddl_target == Some((db.clone(), t.clone())) {
                    continue;
                }
            }
            self.require_table(&db, &t, accounts::SELECT)?;
        }
        Ok(())
    }
}
