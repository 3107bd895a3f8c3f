//! MySQL 8's static privileges as bits: their names as GRANT and SHOW GRANTS spell them, the
//! `mysql.user` column of each, and the levels (global, database, table) each may be granted
//! at. Plain data, shared by the account statements' grammar (`quill_sql_frontend`) and the
//! accounts model (`quill_sql_context::accounts`, which re-exports it).

/// One privilege bit.
pub type Privs = u64;

/// MySQL 8's static privileges, in the order SHOW GRANTS lists them, with the column of
/// `mysql.user` that holds each and where it may be granted.
pub struct PrivilegeDef {
    pub bit: Privs,
    pub name: &'static str,
    pub column: &'static str,
    /// Grantable at database level (`db.*`); every privilege is grantable globally.
    pub database: bool,
    /// Grantable at table level (`db.t`).
    pub table: bool,
}

macro_rules! privileges {
    ($(($const:ident, $bit:expr, $name:expr, $column:expr, $db:expr, $table:expr)),* $(,)?) => {
        $(pub const $const: Privs = 1 << $bit;)*
        pub const PRIVILEGES: &[PrivilegeDef] = &[$(PrivilegeDef { bit: $const, name: $name, column: $column, database: $db, table: $table }),*];
    };
}

privileges! {
    (SELECT, 0, "SELECT", "Select_priv", true, true),
    (INSERT, 1, "INSERT", "Insert_priv", true, true),
    (UPDATE, 2, "UPDATE", "Update_priv", true, true),
    (DELETE, 3, "DELETE", "Delete_priv", true, true),
    (CREATE, 4, "CREATE", "Create_priv", true, true),
    (DROP, 5, "DROP", "Drop_priv", true, true),
    (RELOAD, 6, "RELOAD", "Reload_priv", false, false),
    (SHUTDOWN, 7, "SHUTDOWN", "Shutdown_priv", false, false),
    (PROCESS, 8, "PROCESS", "Process_priv", false, false),
    (FILE, 9, "FILE", "File_priv", false, false),
    (REFERENCES, 10, "REFERENCES", "References_priv", true, true),
    (INDEX, 11, "INDEX", "Index_priv", true, true),
    (ALTER, 12, "ALTER", "Alter_priv", true, true),
    (SHOW_DATABASES, 13, "SHOW DATABASES", "Show_db_priv", false, false),
    (SUPER, 14, "SUPER", "Super_priv", false, false),
    (CREATE_TEMPORARY_TABLES, 15, "CREATE TEMPORARY TABLES", "Create_tmp_table_priv", true, false),
    (LOCK_TABLES, 16, "LOCK TABLES", "Lock_tables_priv", true, false),
    (EXECUTE, 17, "EXECUTE", "Execute_priv", true, false),
    (REPLICATION_SLAVE, 18, "REPLICATION SLAVE", "Repl_slave_priv", false, false),
    (REPLICATION_CLIENT, 19, "REPLICATION CLIENT", "Repl_client_priv", false, false),
    (CREATE_VIEW, 20, "CREATE VIEW", "Create_view_priv", true, true),
    (SHOW_VIEW, 21, "SHOW VIEW", "Show_view_priv", true, true),
    (CREATE_ROUTINE, 22, "CREATE ROUTINE", "Create_routine_priv", true, false),
    (ALTER_ROUTINE, 23, "ALTER ROUTINE", "Alter_routine_priv", true, false),
    (CREATE_USER, 24, "CREATE USER", "Create_user_priv", false, false),
    (EVENT, 25, "EVENT", "Event_priv", true, false),
    (TRIGGER, 26, "TRIGGER", "Trigger_priv", true, true),
    (CREATE_TABLESPACE, 27, "CREATE TABLESPACE", "Create_tablespace_priv", false, false),
    (CREATE_ROLE, 28, "CREATE ROLE", "Create_role_priv", false, false),
    (DROP_ROLE, 29, "DROP ROLE", "Drop_role_priv", false, false),
}

/// `WITH GRANT OPTION` (`Grant_priv`), kept beside the others.
pub const GRANT_OPTION: Privs = 1 << 40;

/// Every static privilege (what `ALL PRIVILEGES` grants at global level).
pub const ALL_GLOBAL: Privs = (1 << 30) - 1;

/// What `ALL PRIVILEGES` grants on `db.*`.
#[must_use]
pub fn all_database() -> Privs {
    PRIVILEGES.iter().filter(|p| p.database).fold(0, |a, p| a | p.bit)
}

/// What `ALL PRIVILEGES` grants on `db.t`.
#[must_use]
pub fn all_table() -> Privs {
    PRIVILEGES.iter().filter(|p| p.table).fold(0, |a, p| a | p.bit)
}

/// The privilege named `name` (`"SELECT"`, `"LOCK TABLES"`; any case, single spaces).
#[must_use]
pub fn privilege_named(name: &str) -> Option<Privs> {
    if name.eq_ignore_ascii_case("GRANT OPTION") {
        return Some(GRANT_OPTION);
    }
    PRIVILEGES.iter().find(|p| p.name.eq_ignore_ascii_case(name)).map(|p| p.bit)
}

/// Privilege names in SHOW GRANTS order, `, `-separated.
#[must_use]
pub fn privilege_list(privs: Privs) -> String {
    PRIVILEGES.iter().filter(|p| privs & p.bit != 0).map(|p| p.name).collect::<Vec<_>>().join(", ")
}
