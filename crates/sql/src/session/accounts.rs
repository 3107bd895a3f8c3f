//! Account statements run by a session: each checks the caller's privileges, computes the
//! rows the grant tables must hold (`accounts::grant_tables`), writes them in one
//! transaction of internal statements, and installs the reloaded ACL. The grant tables are
//! created, with the first account `root`@`localhost`, by the first account statement that
//! writes: until then the ACL is that one account, so a fresh server's binary log holds only
//! what its users did.

use std::sync::Arc;

use quill_storage::Value;

use super::{Outcome, Session};

use crate::account_statements::{AccountOptions, AccountStatement, Auth, Level, PasswordExpire, PrivilegeSet, UserName, UserSpec};
use crate::accounts::grant_tables::{self, literal};
use crate::accounts::{self, Account, Acl, Grant, Privs};
use crate::error::{Result, SqlError, Warning, codes};
use crate::ident::quote_identifier as quote;
use crate::query::ResultSet;
use crate::show::{cols, s, text};
use crate::text::LexOptions;

impl Session {
    /// After COM_CHANGE_USER: the session is `user`@`host` (an account's host pattern) from now on.
    pub fn change_account(&mut self, user: &str, host: &str) {
        // Nothing of the old account's carries over: its table locks, its default database.
        let _ = self.unlock_tables();
        self.info.db = None;
        self.info.user = user.to_owned();
        self.info.account_host = host.to_owned();
        self.info.checked = true;
        if let Some(p) = self.info.engine.processes.lock().get_mut(&self.info.connection_id) {
            p.user = user.to_owned();
        }
    }

    /// Runs one account statement.
    pub(super) async fn account_statement(&mut self, statement: AccountStatement) -> Result<Outcome> {
        let acl = Arc::clone(&self.info.engine.acl.read());
        match statement {
            AccountStatement::FlushPrivileges => {
                self.require_global(accounts::RELOAD, "RELOAD")?;
                self.info.engine.sha2_cache.clear();
                self.info.engine.reload_acl();
                Ok(Outcome::ok())
            }
            AccountStatement::ShowGrants { user } => {
                let (user, host) = self.resolve_user(user.unwrap_or(UserName::Current));
                self.require_own_or_mysql_select(&user, &host)?;
                show_grants(&acl, &user, &host).map(Outcome::Rows)
            }
            AccountStatement::ShowCreateUser { user } => {
                let (user, host) = self.resolve_user(user);
                self.require_own_or_mysql_select(&user, &host)?;
                let a = acl.account(&user, &host).ok_or_else(|| operation_failed("SHOW CREATE USER", &user, &host))?;
                let title = format!("CREATE USER for {user}@{host}");
                Ok(Outcome::Rows(ResultSet { columns: cols(&[(title.as_str(), text(1024))]), rows: vec![vec![s(create_user_text(a))]] }))
            }
            other => {
                let statements = self.account_changes(&acl, other)?;
                self.write_grant_tables(statements).await?;
                self.info.engine.reload_acl();
                Ok(Outcome::ok())
            }
        }
    }

    /// `user`@`host` of a name, `CURRENT_USER` being the session's account.
    fn resolve_user(&self, name: UserName) -> (String, String) {
        match name {
            UserName::Named { user, host } => (user, host),
            UserName::Current => (self.info.user.clone(), self.info.account_host.clone()),
        }
    }

    fn is_own(&self, user: &str, host: &str) -> bool {
        user == self.info.user && host.eq_ignore_ascii_case(&self.info.account_host)
    }

    fn require_own_or_mysql_select(&self, user: &str, host: &str) -> Result<()> {
        if self.is_own(user, host) || self.privileges_on(grant_tables::DB, None) & accounts::SELECT != 0 {
            Ok(())
        } else {
            Err(self.database_denied(grant_tables::DB))
        }
    }

    /// An account a statement names does not exist: note 3162 with IF EXISTS, else one more
    /// name for the statement's 1396.
    fn missing_account(&mut self, user: &str, host: &str, if_exists: bool, failed: &mut Vec<String>) {
        if if_exists {
            self.warnings.push(Warning {
                level: "Note",
                code: codes::ER_USER_DOES_NOT_EXIST.0,
                message: format!("Authorization ID {} does not exist.", accounts::quoted(user, host)),
            });
        } else {
            failed.push(accounts::quoted(user, host));
        }
    }

    fn require_create_user(&self) -> Result<()> {
        self.require_global(accounts::CREATE_USER, "CREATE USER")
    }

    /// The statements an account statement makes of the grant tables, after its checks.
    fn account_changes(&mut self, acl: &Acl, statement: AccountStatement) -> Result<Vec<String>> {
        let mut out = Vec::new();
        match statement {
            AccountStatement::CreateUser { if_not_exists, users, options } => {
                self.require_create_user()?;
                let mut seen: Vec<(String, String)> = Vec::new();
                let mut failed = Vec::new();
                for spec in users {
                    let (user, host) = self.resolve_user(spec.name.clone());
                    if acl.account(&user, &host).is_some() || seen.contains(&(user.clone(), host.clone())) {
                        if if_not_exists {
                            self.warnings.push(Warning {
                                level: "Note",
                                code: codes::ER_USER_ALREADY_EXISTS.0,
                                message: format!("Authorization ID {} already exists.", accounts::quoted(&user, &host)),
                            });
                            continue;
                        }
                        failed.push(accounts::quoted(&user, &host));
                        continue;
                    }
                    let (plugin, auth_string) = credentials(spec.auth.as_ref(), None)?;
                    let account = Account {
                        user: user.clone(),
                        host: host.clone(),
                        plugin,
                        auth_string,
                        locked: options.lock.unwrap_or(false),
                        require_ssl: options.require_ssl.unwrap_or(false),
                        global: 0,
                        password: accounts::PasswordExpiry::default(),
                    };
                    out.push(grant_tables::insert_account(&account));
                    if let Some(set) = options.expire.map(expiry_set) {
                        out.push(format!("UPDATE mysql.user SET {set} WHERE {}", grant_tables::account_key(&user, &host)));
                    }
                    seen.push((user, host));
                }
                if !failed.is_empty() {
                    return Err(operation_failed_for("CREATE USER", &failed));
                }
            }
            AccountStatement::AlterUser { if_exists, users, options } => {
                let mut failed = Vec::new();
                for spec in users {
                    let (user, host) = self.resolve_user(spec.name.clone());
                    let own_password_only = self.is_own(&user, &host) && options == AccountOptions::default();
                    if !own_password_only {
                        self.require_create_user()?;
                    }
                    let Some(existing) = acl.account(&user, &host) else {
                        self.missing_account(&user, &host, if_exists, &mut failed);
                        continue;
                    };
                    out.extend(alter_account(existing, &spec, &options)?);
                }
                if !failed.is_empty() {
                    return Err(operation_failed_for("ALTER USER", &failed));
                }
            }
            AccountStatement::SetPassword { user, password } => {
                let (user, host) = self.resolve_user(user.unwrap_or(UserName::Current));
                if !self.is_own(&user, &host) {
                    self.require_create_user()?;
                }
                let existing =
                    acl.account(&user, &host).ok_or_else(|| SqlError::new(codes::ER_PASSWORD_NO_MATCH, "Can't find any matching row in the user table"))?;
                let spec = UserSpec { name: UserName::Current, auth: Some(Auth::Password { plugin: None, password }) };
                out.extend(alter_account(existing, &spec, &AccountOptions::default())?);
            }
            AccountStatement::DropUser { if_exists, users } => {
                self.require_create_user()?;
                let mut failed = Vec::new();
                for name in users {
                    let (user, host) = self.resolve_user(name);
                    let Some(found) = acl.account(&user, &host) else {
                        self.missing_account(&user, &host, if_exists, &mut failed);
                        continue;
                    };
                    // The names as stored: hosts compare without case.
                    let key = grant_tables::account_key(&found.user, &found.host);
                    for table in [grant_tables::USER, grant_tables::DATABASE_GRANTS, grant_tables::TABLE_GRANTS] {
                        out.push(format!("DELETE FROM mysql.{table} WHERE {key}"));
                    }
                }
                if !failed.is_empty() {
                    return Err(operation_failed_for("DROP USER", &failed));
                }
            }
            AccountStatement::Grant { privileges, level, users, grant_option } => {
                let (db, table, mut privs) = self.grant_target(&level, privileges)?;
                if grant_option {
                    privs |= accounts::GRANT_OPTION;
                }
                self.require_grantable(db.as_deref(), table.as_deref(), privs)?;
                for name in users {
                    let (user, host) = self.resolve_user(name);
                    let account = acl
                        .account(&user, &host)
                        .ok_or_else(|| SqlError::new(codes::ER_CANT_CREATE_USER_WITH_GRANT, "You are not allowed to create a user with GRANT"))?;
                    out.extend(change_grant(acl, account, db.as_deref(), table.as_deref(), |old| old | privs));
                }
            }
            AccountStatement::Revoke { privileges, level, users } => {
                let (db, table, privs) = self.grant_target(&level, privileges)?;
                self.require_grantable(db.as_deref(), table.as_deref(), privs)?;
                for name in users {
                    let (user, host) = self.resolve_user(name);
                    let account = acl.account(&user, &host).ok_or_else(|| no_such_grant(&user, &host, table.as_deref()))?;
                    if let Some(db) = &db
                        && !acl
                            .grants
                            .iter()
                            .any(|g| g.user == user && g.host.eq_ignore_ascii_case(&host) && g.db == *db && table.as_ref().is_none_or(|t| g.table == *t))
                    {
                        return Err(no_such_grant(&user, &host, table.as_deref()));
                    }
                    out.extend(change_grant(acl, account, db.as_deref(), table.as_deref(), |old| old & !privs));
                }
            }
            AccountStatement::RevokeAll { users } => {
                self.require_create_user()?;
                for name in users {
                    let (user, host) = self.resolve_user(name);
                    let Some(found) = acl.account(&user, &host) else { return Err(operation_failed("REVOKE", &user, &host)) };
                    out.push(grant_tables::set_global(&found.user, &found.host, 0));
                    let key = grant_tables::account_key(&found.user, &found.host);
                    out.push(format!("DELETE FROM mysql.db WHERE {key}"));
                    out.push(format!("DELETE FROM mysql.tables_priv WHERE {key}"));
                }
            }
            AccountStatement::FlushPrivileges | AccountStatement::ShowGrants { .. } | AccountStatement::ShowCreateUser { .. } => {
                unreachable!("answered without writing")
            }
        }
        Ok(out)
    }

    /// The database and table a GRANT or REVOKE at `level` applies to (`None`: global), and
    /// the privileges it names, checked against what the level can hold.
    fn grant_target(&self, level: &Level, privileges: PrivilegeSet) -> Result<(Option<String>, Option<String>, Privs)> {
        let current = || self.info.db.clone().ok_or_else(|| SqlError::new(codes::ER_NO_DB_ERROR, "No database selected"));
        let (db, table, all) = match level {
            Level::Global => (None, None, accounts::ALL_GLOBAL),
            Level::Database(db) => (Some(db.clone().map_or_else(current, Ok)?), None, accounts::all_database()),
            Level::Table(db, t) => {
                let db = db.clone().map_or_else(current, Ok)?;
                self.info.engine.catalog().table(&db, t)?;
                (Some(db), Some(t.clone()), accounts::all_table())
            }
        };
        let privs = match privileges {
            PrivilegeSet::All => all,
            PrivilegeSet::Some(p) => p,
        };
        if privs & !(all | accounts::GRANT_OPTION) != 0 {
            return Err(if table.is_some() {
                SqlError::new(codes::ER_ILLEGAL_GRANT_FOR_TABLE, "Illegal GRANT/REVOKE command; please consult the manual to see which privileges can be used")
            } else {
                SqlError::new(codes::ER_WRONG_USAGE, "Incorrect usage of DB GRANT and GLOBAL PRIVILEGES")
            });
        }
        Ok((db, table, privs))
    }

    /// The granter must hold GRANT OPTION and the privileges it passes on, at that level.
    fn require_grantable(&self, db: Option<&str>, table: Option<&str>, privs: Privs) -> Result<()> {
        let needed = privs | accounts::GRANT_OPTION;
        match (db, table) {
            (None, _) => {
                if self.global_privileges() & needed == needed {
                    Ok(())
                } else {
                    Err(SqlError::new(
                        codes::ER_ACCESS_DENIED_ERROR,
                        format!("Access denied for user '{}'@'{}' (using password: YES)", self.info.user, self.info.account_host),
                    ))
                }
            }
            (Some(db), None) => self.require_database(db, needed),
            (Some(db), Some(table)) => {
                if self.privileges_on(db, Some(table)) & needed == needed {
                    Ok(())
                } else {
                    Err(SqlError::new(
                        codes::ER_TABLEACCESS_DENIED_ERROR,
                        format!("GRANT command denied to user '{}'@'{}' for table '{table}'", self.info.user, self.client_host()),
                    ))
                }
            }
        }
    }

    /// Runs `statements` against the grant tables in one transaction, creating the tables
    /// first if they do not exist. Account statements commit any open transaction, as
    /// MySQL's do.
    async fn write_grant_tables(&mut self, statements: Vec<String>) -> Result<()> {
        if self.locked_tables.is_some() {
            return Err(SqlError::new(
                codes::ER_LOCK_OR_ACTIVE_TRANSACTION,
                "Can't execute the given command because you have active locked tables or an active transaction",
            ));
        }
        // read_only holds for account statements too, against the account itself.
        let engine = Arc::clone(&self.info.engine);
        if engine.global("super_read_only").as_deref() == Some("ON")
            || (engine.global("read_only").as_deref() == Some("ON") && self.global_privileges() & accounts::SUPER == 0)
        {
            let which = if engine.global("super_read_only").as_deref() == Some("ON") { "--super-read-only" } else { "--read-only" };
            return Err(SqlError::new(
                codes::ER_OPTION_PREVENTS_STATEMENT,
                format!("The MySQL server is running with the {which} option so it cannot execute this statement"),
            ));
        }
        self.commit()?;
        let checked = std::mem::replace(&mut self.info.checked, false);
        let db = self.info.db.take();
        // The statements' literals are written for the default sql_mode (backslashes
        // escaped, quotes doubled): NO_BACKSLASH_ESCAPES or ANSI_QUOTES must not change them.
        let sql_mode = self.info.vars.values.insert("sql_mode", "STRICT_ALL_TABLES".to_owned());
        let result = self.write_grant_tables_unchecked(statements).await;
        if result.is_err() {
            self.rollback();
        }
        match sql_mode {
            Some(mode) => self.info.vars.values.insert("sql_mode", mode),
            None => self.info.vars.values.remove("sql_mode"),
        };
        self.info.checked = checked;
        self.info.db = db;
        result
    }

    async fn write_grant_tables_unchecked(&mut self, statements: Vec<String>) -> Result<()> {
        let exists = self.info.engine.catalog().table(grant_tables::DB, grant_tables::USER).is_ok();
        if !exists {
            for definition in grant_tables::definitions() {
                self.internal(&definition).await?;
            }
        }
        // The first account goes in with the first change, in its transaction: a failed
        // first statement leaves the table empty, and the next one tries again.
        let empty = self.info.engine.catalog().table(grant_tables::DB, grant_tables::USER).map_or(true, |t| t.data.statistics().rows == 0);
        let mut all = Vec::with_capacity(statements.len() + 3);
        all.push("START TRANSACTION READ WRITE".to_owned());
        if empty {
            all.push(grant_tables::insert_account(&grant_tables::first_account()));
        }
        all.extend(statements);
        all.push("COMMIT".to_owned());
        for sql in all {
            self.internal(&sql).await?;
        }
        Ok(())
    }

    /// One statement the server runs on its own behalf.
    async fn internal(&mut self, sql: &str) -> Result<Outcome> {
        let statement = crate::text::single(sql.as_bytes(), LexOptions::default())?;
        Box::pin(self.run_recognised_or_parsed(&statement)).await
    }
}

/// The plugin and authentication string `auth` gives an account (`current` plugin kept
/// when the statement names none and the account has one).
fn credentials(auth: Option<&Auth>, current: Option<&str>) -> Result<(String, String)> {
    let default_plugin = || current.unwrap_or(accounts::CACHING_SHA2_PASSWORD).to_owned();
    let known = |plugin: &str| -> Result<()> {
        if plugin == accounts::CACHING_SHA2_PASSWORD || plugin == accounts::MYSQL_NATIVE_PASSWORD {
            Ok(())
        } else {
            Err(SqlError::new(codes::ER_PLUGIN_IS_NOT_LOADED, format!("Plugin '{plugin}' is not loaded")))
        }
    };
    Ok(match auth {
        None => (default_plugin(), String::new()),
        Some(Auth::Password { plugin, password }) => {
            let plugin = plugin.clone().unwrap_or_else(default_plugin);
            known(&plugin)?;
            if plugin == accounts::CACHING_SHA2_PASSWORD && password.len() > accounts::CACHING_SHA2_PASSWORD_BYTES_MAX {
                return Err(SqlError::new(codes::ER_NOT_VALID_PASSWORD, "Your password does not satisfy the current policy requirements"));
            }
            let hash = accounts::hash_password(&plugin, password);
            (plugin, hash)
        }
        Some(Auth::Hash { plugin, hash }) => {
            known(plugin)?;
            if !accounts::valid_hash(plugin, hash) {
                return Err(SqlError::new(codes::ER_PASSWORD_FORMAT, "The password hash doesn't have the expected format."));
            }
            (plugin.clone(), hash.clone())
        }
        Some(Auth::Plugin(plugin)) => {
            known(plugin)?;
            (plugin.clone(), String::new())
        }
    })
}

/// The `mysql.user` update ALTER USER makes of `existing`.
fn alter_account(existing: &Account, spec: &UserSpec, options: &AccountOptions) -> Result<Vec<String>> {
    let mut sets = Vec::new();
    if spec.auth.is_some() {
        let (plugin, auth_string) = credentials(spec.auth.as_ref(), Some(&existing.plugin))?;
        // A new password is not expired.
        sets.push(format!(
            "plugin = {}, authentication_string = {}, password_last_changed = NOW(), password_expired = 'N'",
            literal(&plugin),
            literal(&auth_string)
        ));
    }
    if let Some(expire) = options.expire {
        sets.push(expiry_set(expire));
    }
    if let Some(lock) = options.lock {
        sets.push(format!("account_locked = '{}'", if lock { 'Y' } else { 'N' }));
    }
    if let Some(ssl) = options.require_ssl {
        sets.push(format!("ssl_type = '{}'", if ssl { "ANY" } else { "" }));
    }
    if sets.is_empty() {
        return Ok(Vec::new());
    }
    Ok(vec![format!("UPDATE mysql.user SET {} WHERE {}", sets.join(", "), grant_tables::account_key(&existing.user, &existing.host))])
}

/// The `mysql.user` assignment a `PASSWORD EXPIRE` clause makes.
fn expiry_set(expire: PasswordExpire) -> String {
    match expire {
        PasswordExpire::Now => "password_expired = 'Y'".to_owned(),
        PasswordExpire::Default => "password_lifetime = NULL".to_owned(),
        PasswordExpire::Never => "password_lifetime = 0".to_owned(),
        PasswordExpire::IntervalDays(days) => format!("password_lifetime = {days}"),
    }
}

/// The statements that change `account`'s privileges at one level with `change`.
fn change_grant(acl: &Acl, account: &Account, db: Option<&str>, table: Option<&str>, change: impl Fn(Privs) -> Privs) -> Vec<String> {
    let Some(db) = db else { return vec![grant_tables::set_global(&account.user, &account.host, change(account.global))] };
    let table = table.unwrap_or("");
    let old = acl
        .grants
        .iter()
        .find(|g| g.user == account.user && g.host.eq_ignore_ascii_case(&account.host) && g.db == db && g.table == table)
        .map_or(0, |g| g.privs);
    grant_tables::set_grant(&Grant { user: account.user.clone(), host: account.host.clone(), db: db.to_owned(), table: table.to_owned(), privs: change(old) })
}

fn operation_failed(operation: &str, user: &str, host: &str) -> SqlError {
    operation_failed_for(operation, &[accounts::quoted(user, host)])
}

/// 1396 for the accounts (`'user'@'host'`) an operation failed for.
fn operation_failed_for(operation: &str, accounts: &[String]) -> SqlError {
    SqlError::new(codes::ER_CANNOT_USER, format!("Operation {operation} failed for {}", accounts.join(",")))
}

fn no_such_grant(user: &str, host: &str, table: Option<&str>) -> SqlError {
    match table {
        None => SqlError::new(codes::ER_NONEXISTING_GRANT, format!("There is no such grant defined for user '{user}' on host '{host}'")),
        Some(t) => {
            SqlError::new(codes::ER_NONEXISTING_TABLE_GRANT, format!("There is no such grant defined for user '{user}' on host '{host}' on table '{t}'"))
        }
    }
}

/// SHOW GRANTS: the global line first, then each database's, then each table's.
fn show_grants(acl: &Acl, user: &str, host: &str) -> Result<ResultSet> {
    let account = acl.account(user, host).ok_or_else(|| no_such_grant(user, host, None))?;
    let to = accounts::backquoted(user, host);
    let line = |privs: Privs, all: Privs, on: String| {
        let names = if privs & all == all && all != accounts::ALL_GLOBAL {
            "ALL PRIVILEGES".to_owned()
        } else if privs & !accounts::GRANT_OPTION == 0 {
            "USAGE".to_owned()
        } else {
            accounts::privilege_list(privs)
        };
        let option = if privs & accounts::GRANT_OPTION != 0 { " WITH GRANT OPTION" } else { "" };
        format!("GRANT {names} ON {on} TO {to}{option}")
    };
    let mut rows = vec![line(account.global, accounts::ALL_GLOBAL, "*.*".into())];
    let mut grants: Vec<&Grant> = acl.grants.iter().filter(|g| g.user == user && g.host.eq_ignore_ascii_case(host) && g.privs != 0).collect();
    grants.sort_by(|a, b| (!a.table.is_empty(), &a.db, &a.table).cmp(&(!b.table.is_empty(), &b.db, &b.table)));
    for g in grants {
        let (all, on) = if g.table.is_empty() {
            (accounts::all_database(), format!("{}.*", quote(&g.db)))
        } else {
            (accounts::all_table(), format!("{}.{}", quote(&g.db), quote(&g.table)))
        };
        rows.push(line(g.privs, all, on));
    }
    let title = format!("Grants for {user}@{host}");
    Ok(ResultSet { columns: cols(&[(title.as_str(), text(1024))]), rows: rows.into_iter().map(|r| vec![Value::Str(r)]).collect() })
}

/// SHOW CREATE USER, as MySQL 8 prints it.
fn create_user_text(a: &Account) -> String {
    let identified = if a.auth_string.is_empty() {
        format!("IDENTIFIED WITH '{}'", a.plugin)
    } else {
        // A hash with unprintable bytes (a salt made by a MySQL server) is written in hex,
        // as MySQL's print_identified_with_as_hex writes it, so the statement runs again.
        let hash = if a.auth_string.bytes().any(|b| b.is_ascii_control()) {
            format!("0x{}", crate::charset::hex_upper(a.auth_string.as_bytes()))
        } else {
            literal(&a.auth_string)
        };
        format!("IDENTIFIED WITH '{}' AS {hash}", a.plugin)
    };
    let expire = match a.password.lifetime_days {
        None => "DEFAULT".to_owned(),
        Some(0) => "NEVER".to_owned(),
        Some(days) => format!("INTERVAL {days} DAY"),
    };
    format!(
        "CREATE USER {} {identified} REQUIRE {} PASSWORD EXPIRE {expire} ACCOUNT {} PASSWORD HISTORY DEFAULT PASSWORD REUSE INTERVAL DEFAULT PASSWORD REQUIRE CURRENT DEFAULT",
        accounts::backquoted(&a.user, &a.host),
        if a.require_ssl { "SSL" } else { "NONE" },
        if a.locked { "LOCK" } else { "UNLOCK" },
    )
}
