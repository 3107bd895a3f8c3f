//! The grant tables: `mysql.user`, `mysql.db` and `mysql.tables_priv`, with MySQL 8's
//! names and columns (`ENUM('N','Y')` columns are `CHAR(1)` here, and `tables_priv`'s SET
//! columns comma-separated text), created at start-up when missing, with the first account,
//! `root`@`localhost`, all privileges and no password (as `mysqld
//! --initialize-insecure`). [`load`] reads them into an [`Acl`].
//!
//! Where it sits: `accounts`, used at start-up (`Session::bootstrap_accounts`), after each
//! account statement and at `FLUSH PRIVILEGES`.

use std::sync::Arc;

use quill_storage::{ReadView, Value};

use super::{Account, Acl, GRANT_OPTION, Grant, PRIVILEGES, Privs};
use crate::catalog::{Catalog, TableMeta};
use quill_sql_types::ops;

pub const DB: &str = "mysql";
pub const USER: &str = "user";
pub const DATABASE_GRANTS: &str = "db";
pub const TABLE_GRANTS: &str = "tables_priv";

/// The tables the binary log leaves out: accounts are each server's own.
#[must_use]
pub fn is_grant_table(db: &str, table: &str) -> bool {
    db == DB && [USER, DATABASE_GRANTS, TABLE_GRANTS].contains(&table)
}

/// Columns of `mysql.db` that hold privileges, in MySQL's order.
const DATABASE_PRIV_COLUMNS: [&str; 19] = [
    "Select_priv",
    "Insert_priv",
    "Update_priv",
    "Delete_priv",
    "Create_priv",
    "Drop_priv",
    "Grant_priv",
    "References_priv",
    "Index_priv",
    "Alter_priv",
    "Create_tmp_table_priv",
    "Lock_tables_priv",
    "Create_view_priv",
    "Show_view_priv",
    "Create_routine_priv",
    "Alter_routine_priv",
    "Execute_priv",
    "Event_priv",
    "Trigger_priv",
];

fn yn(name: &str) -> String {
    format!("`{name}` CHAR(1) NOT NULL DEFAULT 'N'")
}

/// `CREATE TABLE` statements for the three tables, in MySQL 8's column order.
#[must_use]
pub fn definitions() -> [String; 3] {
    let mut user_privs: Vec<String> = PRIVILEGES.iter().take(28).map(|p| p.column).chain(std::iter::once("Grant_priv")).map(yn).collect();
    // MySQL's order puts Grant_priv after File_priv.
    let grant = user_privs.pop().expect("pushed");
    user_privs.insert(10, grant);
    let user = format!(
        "CREATE TABLE IF NOT EXISTS mysql.user (`Host` CHAR(255) NOT NULL DEFAULT '', `User` CHAR(32) NOT NULL DEFAULT '', {}, \
         `ssl_type` VARCHAR(9) NOT NULL DEFAULT '', `ssl_cipher` BLOB, `x509_issuer` BLOB, `x509_subject` BLOB, \
         `max_questions` INT UNSIGNED NOT NULL DEFAULT 0, `max_updates` INT UNSIGNED NOT NULL DEFAULT 0, \
         `max_connections` INT UNSIGNED NOT NULL DEFAULT 0, `max_user_connections` INT UNSIGNED NOT NULL DEFAULT 0, \
         `plugin` CHAR(64) NOT NULL DEFAULT 'caching_sha2_password', `authentication_string` TEXT, \
         `password_expired` CHAR(1) NOT NULL DEFAULT 'N', `password_last_changed` TIMESTAMP NULL DEFAULT NULL, \
         `password_lifetime` SMALLINT UNSIGNED NULL DEFAULT NULL, `account_locked` CHAR(1) NOT NULL DEFAULT 'N', \
         {}, {}, `Password_reuse_history` SMALLINT UNSIGNED NULL DEFAULT NULL, `Password_reuse_time` SMALLINT UNSIGNED NULL DEFAULT NULL, \
         `Password_require_current` CHAR(1) NULL DEFAULT NULL, `User_attributes` TEXT, PRIMARY KEY (`Host`, `User`)) \
         COLLATE=utf8mb4_bin COMMENT='Users and global privileges'",
        user_privs.join(", "),
        yn("Create_role_priv"),
        yn("Drop_role_priv"),
    );
    let db = format!(
        "CREATE TABLE IF NOT EXISTS mysql.db (`Host` CHAR(255) NOT NULL DEFAULT '', `Db` CHAR(64) NOT NULL DEFAULT '', \
         `User` CHAR(32) NOT NULL DEFAULT '', {}, PRIMARY KEY (`Host`, `Db`, `User`), KEY `User` (`User`)) \
         COLLATE=utf8mb4_bin COMMENT='Database privileges'",
        DATABASE_PRIV_COLUMNS.iter().map(|c| yn(c)).collect::<Vec<_>>().join(", ")
    );
    let tables = "CREATE TABLE IF NOT EXISTS mysql.tables_priv (`Host` CHAR(255) NOT NULL DEFAULT '', `Db` CHAR(64) NOT NULL DEFAULT '', \
         `User` CHAR(32) NOT NULL DEFAULT '', `Table_name` CHAR(64) NOT NULL DEFAULT '', `Grantor` VARCHAR(288) NOT NULL DEFAULT '', \
         `Timestamp` TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, `Table_priv` VARCHAR(255) NOT NULL DEFAULT '', \
         `Column_priv` VARCHAR(255) NOT NULL DEFAULT '', PRIMARY KEY (`Host`, `Db`, `User`, `Table_name`), KEY `Grantor` (`Grantor`)) \
         COLLATE=utf8mb4_bin COMMENT='Table privileges'"
        .to_owned();
    [user, db, tables]
}

/// A string literal for SQL text: quotes and backslashes escaped.
#[must_use]
pub fn literal(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "''"))
}

/// The WHERE condition of one account's rows in any grant table.
#[must_use]
pub fn account_key(user: &str, host: &str) -> String {
    format!("Host = {} AND User = {}", literal(host), literal(user))
}

/// `INSERT` of a new account's `mysql.user` row.
#[must_use]
pub fn insert_account(a: &Account) -> String {
    let mut columns = vec!["Host", "User", "plugin", "authentication_string", "account_locked", "ssl_type"];
    let mut values = vec![
        literal(&a.host),
        literal(&a.user),
        literal(&a.plugin),
        literal(&a.auth_string),
        literal(if a.locked { "Y" } else { "N" }),
        literal(if a.require_ssl { "ANY" } else { "" }),
    ];
    for p in PRIVILEGES.iter().filter(|p| a.global & p.bit != 0).map(|p| p.column).chain((a.global & GRANT_OPTION != 0).then_some("Grant_priv")) {
        columns.push(p);
        values.push("'Y'".into());
    }
    format!("INSERT INTO mysql.user ({}, password_last_changed) VALUES ({}, NOW())", columns.join(", "), values.join(", "))
}

/// `UPDATE` of an account's global privileges to `privs`.
#[must_use]
pub fn set_global(user: &str, host: &str, privs: Privs) -> String {
    let sets: Vec<String> = PRIVILEGES
        .iter()
        .map(|p| (p.column, p.bit))
        .chain(std::iter::once(("Grant_priv", GRANT_OPTION)))
        .map(|(c, bit)| format!("`{c}` = '{}'", if privs & bit != 0 { 'Y' } else { 'N' }))
        .collect();
    format!("UPDATE mysql.user SET {} WHERE {}", sets.join(", "), account_key(user, host))
}

/// The statements that make the account's grant on `db` (and `table`) `privs`: delete the
/// row, then insert it again when anything is left.
#[must_use]
pub fn set_grant(g: &Grant) -> Vec<String> {
    let key = format!("Host = {} AND Db = {} AND User = {}", literal(&g.host), literal(&g.db), literal(&g.user));
    if g.table.is_empty() {
        let mut out = vec![format!("DELETE FROM mysql.db WHERE {key}")];
        if g.privs != 0 {
            let columns: Vec<&str> = DATABASE_PRIV_COLUMNS.iter().copied().filter(|c| priv_of_column(c).is_some_and(|b| g.privs & b != 0)).collect();
            let values = vec!["'Y'"; columns.len()];
            let sep = if columns.is_empty() { "" } else { ", " };
            out.push(format!(
                "INSERT INTO mysql.db (Host, Db, User{sep}{}) VALUES ({}, {}, {}{sep}{})",
                columns.join(", "),
                literal(&g.host),
                literal(&g.db),
                literal(&g.user),
                values.join(", ")
            ));
        }
        return out;
    }
    let key = format!("{key} AND Table_name = {}", literal(&g.table));
    let mut out = vec![format!("DELETE FROM mysql.tables_priv WHERE {key}")];
    if g.privs != 0 {
        out.push(format!(
            "INSERT INTO mysql.tables_priv (Host, Db, User, Table_name, Table_priv) VALUES ({}, {}, {}, {}, {})",
            literal(&g.host),
            literal(&g.db),
            literal(&g.user),
            literal(&g.table),
            literal(&table_priv_text(g.privs))
        ));
    }
    out
}

/// `tables_priv.Table_priv` as MySQL's SET shows it: `Select,Insert,...,Grant`.
fn table_priv_text(privs: Privs) -> String {
    let mut names: Vec<String> = PRIVILEGES.iter().filter(|p| p.table && privs & p.bit != 0).map(|p| title_case(p.name)).collect();
    if privs & GRANT_OPTION != 0 {
        names.push("Grant".into());
    }
    names.join(",")
}

fn title_case(name: &str) -> String {
    name.split(' ')
        .map(|w| {
            let lower = w.to_ascii_lowercase();
            let mut c = lower.chars();
            c.next().map(|f| f.to_ascii_uppercase().to_string() + c.as_str()).unwrap_or_default()
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn priv_of_column(column: &str) -> Option<Privs> {
    if column == "Grant_priv" {
        return Some(GRANT_OPTION);
    }
    PRIVILEGES.iter().find(|p| p.column == column).map(|p| p.bit)
}

/// The grant tables' committed rows as an [`Acl`]. Tables that do not exist yet give none.
#[must_use]
pub fn load(catalog: &Catalog) -> Acl {
    let rows = |name: &str| catalog.table(DB, name).map(|t| (t, t.data.snapshot_rows(ReadView::current(0)))).ok();
    let text = |t: &TableMeta, r: &[Value], column: &str| match t.column_index(column).map(|i| &r[i]) {
        None | Some(Value::Null) => String::new(),
        Some(v) => ops::to_string_lossy(v),
    };
    let flags = |t: &TableMeta, r: &[Value], columns: &mut dyn Iterator<Item = &str>| {
        columns.fold(0, |privs, c| if text(t, r, c) == "Y" { privs | priv_of_column(c).unwrap_or(0) } else { privs })
    };
    let mut accounts = Vec::new();
    if let Some((t, rows)) = rows(USER) {
        for r in &rows {
            let global = flags(t, r, &mut PRIVILEGES.iter().map(|p| p.column).chain(std::iter::once("Grant_priv")));
            accounts.push(Account {
                user: text(t, r, "User"),
                host: text(t, r, "Host"),
                plugin: text(t, r, "plugin"),
                auth_string: text(t, r, "authentication_string"),
                locked: text(t, r, "account_locked") == "Y",
                require_ssl: !text(t, r, "ssl_type").is_empty(),
                global,
                password: super::PasswordExpiry {
                    expired: text(t, r, "password_expired") == "Y",
                    lifetime_days: text(t, r, "password_lifetime").parse().ok(),
                    last_changed_secs: chrono::NaiveDateTime::parse_from_str(&text(t, r, "password_last_changed"), "%Y-%m-%d %H:%M:%S")
                        .ok()
                        .map(|at| at.and_utc().timestamp()),
                },
            });
        }
    }
    let mut grants = Vec::new();
    if let Some((t, rows)) = rows(DATABASE_GRANTS) {
        for r in &rows {
            let privs = flags(t, r, &mut DATABASE_PRIV_COLUMNS.iter().copied());
            grants.push(Grant { user: text(t, r, "User"), host: text(t, r, "Host"), db: text(t, r, "Db"), table: String::new(), privs });
        }
    }
    if let Some((t, rows)) = rows(TABLE_GRANTS) {
        for r in &rows {
            let privs = text(t, r, "Table_priv")
                .split(',')
                .filter_map(|n| if n.eq_ignore_ascii_case("Grant") { Some(GRANT_OPTION) } else { super::privilege_named(n) })
                .fold(0, |a, b| a | b);
            grants.push(Grant { user: text(t, r, "User"), host: text(t, r, "Host"), db: text(t, r, "Db"), table: text(t, r, "Table_name"), privs });
        }
    }
    Acl::new(accounts, grants)
}

/// The ACL of a server whose grant tables do not exist yet: `root`@`localhost`, every
/// privilege, no password (as `mysqld --initialize-insecure` leaves it).
#[must_use]
pub fn initial_acl() -> Acl {
    Acl::new(vec![first_account()], Vec::new())
}

/// The one account of a server whose grant tables do not exist yet: `root`@`localhost`.
#[must_use]
pub fn first_account() -> Account {
    Account {
        user: "root".into(),
        host: "localhost".into(),
        plugin: super::CACHING_SHA2_PASSWORD.into(),
        auth_string: String::new(),
        locked: false,
        require_ssl: false,
        global: super::ALL_GLOBAL | super::GRANT_OPTION,
        password: super::PasswordExpiry::default(),
    }
}

impl crate::engine::Engine {
    /// Reloads the ACL from the grant tables (the initial one while they do not exist): at
    /// start-up, after an account statement and at FLUSH PRIVILEGES.
    pub fn reload_acl(&self) {
        let catalog = self.catalog();
        // No account yet (the tables not made, or their first write failed): the first one.
        let acl = match catalog.table(DB, USER) {
            Ok(t) if t.data.statistics().rows > 0 => load(&catalog),
            _ => initial_acl(),
        };
        self.sha2_cache.retain(&acl);
        *self.acl.write() = Arc::new(acl);
    }
}
