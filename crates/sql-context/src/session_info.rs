//! The session state the layers below the session read: the engine, the default
//! database, the account, system and user variables, the statement's interrupt, its
//! intermediate-memory bound, its waiting function calls and the warnings its expressions
//! raise. The planner and the executor get it by reference (`query::Env::info`); the
//! session (`quill_sql::session::Session`) owns it.

use std::collections::HashMap;
use std::sync::Arc;

use quill_sql_types::error::{Result, SqlError, Warning, codes};
use quill_storage::Value;

use crate::engine::{Engine, gtid_executed, gtid_purged};
use crate::vars::{self, VarSet};

/// The session state expressions can read.
pub struct SessionInfo {
    pub engine: Arc<Engine>,
    pub db: Option<String>,
    pub user: String,
    pub host: String,
    pub account_host: String,
    pub connection_id: u32,
    pub last_insert_id: std::cell::Cell<u64>,
    /// Set when LAST_INSERT_ID(expr) runs; `run_dml` clears it first, and a write statement
    /// that called it sends that value as the OK packet's insert id, as MySQL does.
    pub last_insert_id_assigned: std::cell::Cell<bool>,
    /// Collation of string literals (`collation_connection`).
    pub connection_collation: quill_storage::Collation,
    pub row_count: i64,
    pub found_rows: u64,
    pub vars: VarSet,
    /// User variables (`@name`, lowercase): a cell, so `@v := expr` inside a statement sets one.
    pub user_vars: std::cell::RefCell<HashMap<String, Value>>,
    /// The running statement assigns user variables (`:=`): its reads of them are made
    /// when each row is evaluated, not once when it is bound (`bind`).
    pub user_variables_assigned: std::cell::Cell<bool>,
    /// KILL and `max_execution_time`: checked by the executor as it goes.
    pub interrupt: crate::interrupt::Interrupt,
    /// The running statement's intermediate memory, bounded by `temptable_max_ram`.
    pub tmp_memory: crate::tmp_memory::TmpMemory,
    /// The running statement's calls of the functions that wait (`statement_waits`).
    pub function_calls: std::cell::RefCell<crate::statement_waits::StatementCalls>,
    /// The session logged in as `user`@`account_host` and each statement is checked
    /// against its privileges (`session::privileges`); false for the server's own sessions.
    pub checked: bool,
    /// The warnings and errors the previous statement left (`@@warning_count`,
    /// `@@error_count`, SHOW COUNT(*) WARNINGS / ERRORS): noted before a statement clears them.
    pub previous_diagnostics: (u16, u16),
    /// Warnings raised while expressions are evaluated (a result larger than
    /// `max_allowed_packet`, a value a CAST cut short): moved to the statement's warnings
    /// when it finishes (`finish_statement`). At most [`EXPRESSION_WARNINGS_MAX`] are kept.
    pub expression_warnings: std::cell::RefCell<Vec<Warning>>,
}

/// The most warnings one statement's expressions record (MySQL's `max_error_count`
/// default); later ones are counted by no one, as MySQL drops them too.
pub const EXPRESSION_WARNINGS_MAX: usize = 1024;

impl SessionInfo {
    /// Whether the account may see a stored routine (SHOW ... STATUS, information_schema):
    /// it is its definer, or holds EXECUTE, CREATE ROUTINE or ALTER ROUTINE on its database.
    #[must_use]
    pub fn may_see_routine(&self, r: &crate::program_meta::RoutineMeta) -> bool {
        let privs = crate::accounts::EXECUTE | crate::accounts::CREATE_ROUTINE | crate::accounts::ALTER_ROUTINE;
        r.creation.is_definer(&self.user, &self.account_host) || self.privileges_on(&r.db, None) & privs != 0
    }

    /// Records a warning raised by an expression (see `expression_warnings`).
    pub fn warn(&self, code: u16, message: String) {
        let mut warnings = self.expression_warnings.borrow_mut();
        if warnings.len() < EXPRESSION_WARNINGS_MAX {
            warnings.push(Warning { level: "Warning", code, message });
        }
    }

    /// `group_concat_max_len`: the longest GROUP_CONCAT result, in bytes.
    #[must_use]
    pub fn group_concat_max_len(&self) -> u64 {
        self.var("group_concat_max_len").parse().unwrap_or(1024)
    }

    /// `max_allowed_packet`: the largest value, in bytes, a function may build.
    #[must_use]
    pub fn max_allowed_packet(&self) -> u64 {
        self.var("max_allowed_packet").parse().unwrap_or(64 << 20)
    }

    /// `@@name`, `@@session.name` or `@@global.name`.
    ///
    /// # Errors
    /// 1193 unknown; 1238 session-only read as global and vice versa.
    pub fn system_variable(&self, name: &str, scope: Option<&str>) -> Result<Value> {
        let def = vars::require(name)?;
        let global = scope.is_some_and(|s| s.eq_ignore_ascii_case("global"));
        if def.name == "warning_count" {
            return Ok(Value::Int(i64::from(self.previous_diagnostics.0)));
        }
        if def.name == "error_count" {
            return Ok(Value::Int(i64::from(self.previous_diagnostics.1)));
        }
        if def.name == "gtid_executed" {
            return Ok(Value::Str(gtid_executed(&self.engine)));
        }
        if def.name == "gtid_purged" {
            return Ok(Value::Str(gtid_purged(&self.engine)));
        }
        // The default database's own character set and collation, as MySQL sets them on USE.
        if !global
            && matches!(def.name, "collation_database" | "character_set_database")
            && let Some(collation) = self.db.as_deref().and_then(|db| self.engine.catalog().database(db).ok().map(|d| d.collation))
        {
            let name = if def.name == "collation_database" { collation.name() } else { quill_sql_types::charset::charset_of(collation) };
            return Ok(Value::Str(name.to_owned()));
        }
        if global && def.scope == vars::Scope::Session {
            return Err(SqlError::new(codes::ER_INCORRECT_GLOBAL_LOCAL_VAR, format!("Variable '{}' is a SESSION variable", def.name)));
        }
        if scope.is_some_and(|s| s.eq_ignore_ascii_case("session")) && def.scope == vars::Scope::Global {
            return Err(SqlError::new(codes::ER_INCORRECT_GLOBAL_LOCAL_VAR, format!("Variable '{}' is a GLOBAL variable", def.name)));
        }
        let value = if global || def.scope == vars::Scope::Global { self.engine.global(def.name) } else { self.vars.get(def.name).map(str::to_owned) };
        Ok(vars::as_value(def, &value.unwrap_or_default()))
    }

    #[must_use]
    pub fn user_variable(&self, name: &str) -> Value {
        self.user_vars.borrow().get(&name.to_ascii_lowercase()).cloned().unwrap_or(Value::Null)
    }

    /// A session variable's value as text (empty for one not set).
    #[must_use]
    pub fn var(&self, name: &str) -> &str {
        self.vars.get(name).unwrap_or_default()
    }

    /// The session's time zone (`time_zone`, checked when set).
    #[must_use]
    pub fn time_zone(&self) -> quill_sql_types::time_zone::TimeZone {
        quill_sql_types::time_zone::TimeZone::parse(self.var("time_zone")).unwrap_or(quill_sql_types::time_zone::TimeZone::System)
    }

    /// The session time zone's offset from UTC now, in seconds.
    #[must_use]
    pub fn utc_offset_secs(&self) -> i64 {
        self.time_zone().offset_at_utc(chrono::Utc::now().timestamp())
    }

    /// Now in the session time zone, as zone-less microseconds (what NOW() shows).
    #[must_use]
    pub fn now_us(&self) -> i64 {
        chrono::Utc::now().timestamp_micros() + self.utc_offset_secs() * 1_000_000
    }

    /// `foreign_key_checks`: whether DML enforces foreign keys and DDL checks their parents.
    #[must_use]
    pub fn foreign_key_checks(&self) -> bool {
        self.var("foreign_key_checks") != "OFF"
    }

    #[must_use]
    pub fn strict(&self) -> bool {
        let m = self.var("sql_mode");
        m.contains("STRICT_TRANS_TABLES") || m.contains("STRICT_ALL_TABLES") || m.contains("TRADITIONAL")
    }
}
