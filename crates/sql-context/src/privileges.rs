//! What the session's account may do and see: its privileges on a database or a table
//! (its global ones, its grant on the database and its grant on the table, together:
//! `accounts::Acl::privileges`), the checks that fail a statement with MySQL's 1142 / 1227,
//! and what `information_schema`, PROCESSLIST and SHOW DATABASES let it see. The rules are
//! in `quill_sql::session::privileges`' module doc, which checks each statement with them.
//!
//! An unchecked session (the server's own) may do everything. The checks read the engine's
//! ACL snapshot: a grant or revoke applies from the session's next statement.

use quill_sql_types::error::{Result, SqlError, codes};

use crate::accounts::{self, Privs};
use crate::session_info::SessionInfo;

impl SessionInfo {
    /// What the session's account may do on `db` (and `table`): everything for an
    /// unchecked session.
    pub fn privileges_on(&self, db: &str, table: Option<&str>) -> Privs {
        if !self.checked {
            return Privs::MAX;
        }
        self.engine.acl.read().privileges(&self.user, &self.account_host, db, table)
    }

    /// Whether the account has some privilege on `db`.`table` (or anywhere globally), so
    /// that `information_schema` shows the table: the schemas themselves are always shown.
    pub fn may_see_table(&self, db: &str, table: &str) -> bool {
        is_system_schema(db) || self.privileges_on(db, Some(table)) & (accounts::ALL_GLOBAL | accounts::GRANT_OPTION) != 0
    }

    /// Whether the account has some privilege in `db` (on it or on a table of it), or SHOW
    /// DATABASES: what SHOW DATABASES and `information_schema.SCHEMATA` list.
    pub fn may_see_database(&self, db: &str) -> bool {
        if !self.checked || is_system_schema(db) || self.global_privileges() & accounts::SHOW_DATABASES != 0 {
            return true;
        }
        self.engine.acl.read().any_in_database(&self.user, &self.account_host, db)
    }

    /// Whether the account has PROCESS: it sees every connection's thread and statement.
    pub fn has_process(&self) -> bool {
        self.global_privileges() & accounts::PROCESS != 0
    }

    /// 1227 unless the account has one of `any_of` globally; `names` says which.
    ///
    /// # Errors
    /// 1227.
    pub fn require_global(&self, any_of: Privs, names: &str) -> Result<()> {
        if self.global_privileges() & any_of != 0 {
            Ok(())
        } else {
            Err(SqlError::new(
                codes::ER_SPECIFIC_ACCESS_DENIED_ERROR,
                format!("Access denied; you need (at least one of) the {names} privilege(s) for this operation"),
            ))
        }
    }

    /// The client's host as MySQL's messages name it: `localhost` for a loopback address.
    pub fn client_host(&self) -> &str {
        let host = self.host.as_str();
        if host == "::1" || host.starts_with("127.") { "localhost" } else { host }
    }

    /// The session's global privileges.
    pub fn global_privileges(&self) -> Privs {
        if !self.checked {
            return Privs::MAX;
        }
        self.engine.acl.read().account(&self.user, &self.account_host).map_or(0, |a| a.global)
    }

    /// 1142 unless the account has every privilege of `needed` on `db`.`table`.
    pub fn require_table(&self, db: &str, table: &str, needed: Privs) -> Result<()> {
        if is_system_schema(db) {
            return Ok(());
        }
        if !self.checked || self.global_privileges() & needed == needed {
            return Ok(());
        }
        let missing = needed & !self.privileges_on(db, Some(table));
        match accounts::PRIVILEGES.iter().find(|p| missing & p.bit != 0) {
            None => Ok(()),
            Some(p) => Err(SqlError::new(
                codes::ER_TABLEACCESS_DENIED_ERROR,
                format!("{} command denied to user '{}'@'{}' for table '{table}'", p.name, self.user, self.client_host()),
            )),
        }
    }

    /// 1142 unless the account has some privilege on `db`.`table` (SHOW CREATE TABLE, SHOW
    /// COLUMNS, SHOW INDEX), named as MySQL names it: SELECT.
    pub fn require_any_on_table(&self, db: &str, table: &str) -> Result<()> {
        if self.privileges_on(db, Some(table)) & (accounts::ALL_GLOBAL | accounts::GRANT_OPTION) != 0 {
            Ok(())
        } else {
            self.require_table(db, table, accounts::SELECT)
        }
    }
}

/// `information_schema` and `performance_schema`: every account reads them (their rows
/// are filtered, or the table refused, by the rules of the module doc).
fn is_system_schema(db: &str) -> bool {
    ["information_schema", "performance_schema"].iter().any(|s| s.eq_ignore_ascii_case(db))
}
