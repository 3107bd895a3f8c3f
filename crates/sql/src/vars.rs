//! System variables: names, defaults, scopes and validation.
//!
//! Each variable Quill knows is listed in [`VARIABLES`] with its scope and default.
//! Variables marked `Inert` are accepted for compatibility (drivers and tools set
//! them) but Quill does not act on them; setting one records a warning (1287-style
//! note) so nobody is misled.

use std::collections::BTreeMap;

use quill_storage::Value;

use crate::error::{Result, SqlError, codes};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Global,
    Session,
    Both,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Quill acts on the value.
    Live,
    /// Accepted and shown, but Quill does not act on it.
    Inert,
    /// Cannot be set at run time.
    ReadOnly,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Int,
    Bool,
    Str,
}

pub struct VarDef {
    pub name: &'static str,
    pub scope: Scope,
    pub kind: Kind,
    pub effect: Effect,
    pub default: &'static str,
}

const fn v(name: &'static str, scope: Scope, kind: Kind, effect: Effect, default: &'static str) -> VarDef {
    VarDef { name, scope, kind, effect, default }
}

use Effect::{Inert, Live, ReadOnly};
use Kind::{Bool, Int, Str};
use Scope::{Both, Global, Session};

/// Every system variable Quill knows, sorted by name.
pub const VARIABLES: &[VarDef] = &[
    v("auto_increment_increment", Both, Int, Inert, "1"),
    v("auto_increment_offset", Both, Int, Inert, "1"),
    v("autocommit", Both, Bool, Live, "ON"),
    v("binlog_group_commit_sync_delay", Global, Int, Live, "0"),
    v("binlog_group_commit_sync_no_delay_count", Global, Int, Live, "0"),
    v("character_set_client", Both, Str, Inert, "utf8mb4"),
    v("character_set_connection", Both, Str, Inert, "utf8mb4"),
    v("character_set_database", Both, Str, Inert, "utf8mb4"),
    v("character_set_results", Both, Str, Inert, "utf8mb4"),
    v("character_set_server", Both, Str, Inert, "utf8mb4"),
    v("character_set_system", Global, Str, ReadOnly, "utf8mb3"),
    v("collation_connection", Both, Str, Inert, "utf8mb4_0900_ai_ci"),
    v("collation_database", Both, Str, Inert, "utf8mb4_0900_ai_ci"),
    v("collation_server", Both, Str, Inert, "utf8mb4_0900_ai_ci"),
    v("datadir", Global, Str, ReadOnly, ""),
    v("default_storage_engine", Both, Str, Inert, "InnoDB"),
    v("div_precision_increment", Both, Int, Inert, "4"),
    v("foreign_key_checks", Both, Bool, Inert, "ON"),
    v("hostname", Global, Str, ReadOnly, "localhost"),
    v("init_connect", Global, Str, Inert, ""),
    v("innodb_flush_log_at_trx_commit", Global, Int, Live, "1"),
    v("innodb_lock_wait_timeout", Both, Int, Live, "50"),
    v("innodb_rollback_on_timeout", Global, Bool, ReadOnly, "OFF"),
    v("innodb_snapshot_isolation", Both, Bool, Live, "OFF"),
    v("interactive_timeout", Both, Int, Inert, "28800"),
    v("license", Global, Str, ReadOnly, "Apache-2.0"),
    v("lower_case_table_names", Global, Int, ReadOnly, "0"),
    v("max_allowed_packet", Both, Int, Live, "67108864"),
    v("max_connections", Global, Int, Live, "151"),
    v("net_buffer_length", Both, Int, Inert, "16384"),
    v("net_read_timeout", Both, Int, Inert, "30"),
    v("net_write_timeout", Both, Int, Inert, "60"),
    v("performance_schema", Global, Bool, ReadOnly, "OFF"),
    v("port", Global, Int, ReadOnly, "3306"),
    v("protocol_version", Global, Int, ReadOnly, "10"),
    v("query_cache_size", Global, Int, ReadOnly, "0"),
    v("query_cache_type", Both, Str, ReadOnly, "OFF"),
    v("quill_checkpoint_interval_seconds", Global, Int, Live, "300"),
    v("quill_checkpoint_log_bytes", Global, Int, Live, "268435456"),
    v("quill_log_segment_bytes", Global, Int, ReadOnly, "67108864"),
    v("read_only", Global, Bool, Inert, "OFF"),
    v("server_id", Global, Int, Inert, "1"),
    v("session_track_schema", Both, Bool, Inert, "ON"),
    v("session_track_state_change", Both, Bool, Inert, "OFF"),
    v("session_track_system_variables", Both, Str, Inert, "time_zone,autocommit,character_set_client,character_set_results,character_set_connection"),
    v("session_track_transaction_info", Both, Str, Inert, "OFF"),
    v("skip_networking", Global, Bool, ReadOnly, "OFF"),
    // Quill listens on TCP only; clients that look for a Unix socket find none.
    v("socket", Global, Str, ReadOnly, ""),
    v("sql_auto_is_null", Both, Bool, Inert, "OFF"),
    v("sql_mode", Both, Str, Live, "ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION"),
    v("sql_notes", Both, Bool, Inert, "ON"),
    v("sql_safe_updates", Both, Bool, Inert, "OFF"),
    v("sql_select_limit", Both, Int, Inert, "18446744073709551615"),
    v("system_time_zone", Global, Str, ReadOnly, "UTC"),
    v("time_zone", Both, Str, Live, "SYSTEM"),
    v("transaction_isolation", Both, Str, Live, "REPEATABLE-READ"),
    v("transaction_read_only", Both, Bool, Live, "OFF"),
    v("tx_isolation", Both, Str, Live, "REPEATABLE-READ"),
    v("tx_read_only", Both, Bool, Live, "OFF"),
    v("unique_checks", Both, Bool, Inert, "ON"),
    v("version", Global, Str, ReadOnly, crate::SERVER_VERSION),
    v("version_comment", Global, Str, ReadOnly, "Quill (MySQL-compatible)"),
    v("version_compile_machine", Global, Str, ReadOnly, "x86_64"),
    v("version_compile_os", Global, Str, ReadOnly, "Linux"),
    v("wait_timeout", Both, Int, Inert, "28800"),
    v("warning_count", Session, Int, ReadOnly, "0"),
];

/// The sql_mode names MySQL 8 accepts.
pub const SQL_MODES: &[&str] = &[
    "ALLOW_INVALID_DATES",
    "ANSI",
    "ANSI_QUOTES",
    "ERROR_FOR_DIVISION_BY_ZERO",
    "HIGH_NOT_PRECEDENCE",
    "IGNORE_SPACE",
    "NO_AUTO_VALUE_ON_ZERO",
    "NO_BACKSLASH_ESCAPES",
    "NO_DIR_IN_CREATE",
    "NO_ENGINE_SUBSTITUTION",
    "NO_UNSIGNED_SUBTRACTION",
    "NO_ZERO_DATE",
    "NO_ZERO_IN_DATE",
    "ONLY_FULL_GROUP_BY",
    "PAD_CHAR_TO_FULL_LENGTH",
    "PIPES_AS_CONCAT",
    "REAL_AS_FLOAT",
    "STRICT_ALL_TABLES",
    "STRICT_TRANS_TABLES",
    "TIME_TRUNCATE_FRACTIONAL",
    "TRADITIONAL",
];

/// Find a variable definition by case-insensitive name.
#[must_use]
pub fn lookup(name: &str) -> Option<&'static VarDef> {
    let lower = name.to_ascii_lowercase();
    VARIABLES.iter().find(|d| d.name == lower)
}

/// # Errors
/// 1193 for an unknown variable.
pub fn require(name: &str) -> Result<&'static VarDef> {
    lookup(name).ok_or_else(|| SqlError::new(codes::ER_UNKNOWN_SYSTEM_VARIABLE, format!("Unknown system variable '{name}'")))
}

/// A set of variable values (the global set, or one session's overrides).
#[derive(Debug, Clone, Default)]
pub struct VarSet {
    pub values: BTreeMap<&'static str, String>,
}

impl VarSet {
    #[must_use]
    pub fn defaults() -> VarSet {
        VarSet { values: VARIABLES.iter().map(|d| (d.name, d.default.to_owned())).collect() }
    }

    #[must_use]
    pub fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }
}

/// Normalise a value being assigned to `def`.
///
/// # Errors
/// 1231 for a value the variable does not take, 1232 for a wrong type.
pub fn normalise(def: &VarDef, v: &Value) -> Result<String> {
    let wrong =
        || SqlError::new(codes::ER_WRONG_VALUE_FOR_VAR, format!("Variable '{}' can't be set to the value of '{}'", def.name, crate::ops::to_string_lossy(v)));
    match def.kind {
        Kind::Bool => match v {
            Value::Int(0) | Value::UInt(0) => Ok("OFF".into()),
            Value::Int(1) | Value::UInt(1) => Ok("ON".into()),
            Value::Str(s) if s.eq_ignore_ascii_case("on") || s.eq_ignore_ascii_case("true") => Ok("ON".into()),
            Value::Str(s) if s.eq_ignore_ascii_case("off") || s.eq_ignore_ascii_case("false") => Ok("OFF".into()),
            _ => Err(wrong()),
        },
        Kind::Int => match v {
            Value::Int(i) if *i >= 0 => Ok(i.to_string()),
            Value::UInt(u) => Ok(u.to_string()),
            Value::Str(s) if s.parse::<u64>().is_ok() => Ok(s.clone()),
            Value::Int(_) => Err(wrong()),
            _ => Err(SqlError::new(codes::ER_WRONG_TYPE_FOR_VAR, format!("Incorrect argument type to variable '{}'", def.name))),
        },
        Kind::Str => {
            let s = crate::ops::to_string_lossy(v);
            match def.name {
                "transaction_isolation" | "tx_isolation" => {
                    let up = s.to_ascii_uppercase().replace(' ', "-");
                    if ["READ-UNCOMMITTED", "READ-COMMITTED", "REPEATABLE-READ", "SERIALIZABLE"].contains(&up.as_str()) { Ok(up) } else { Err(wrong()) }
                }
                "time_zone" => {
                    parse_time_zone(&s).map(|_| s.clone()).ok_or_else(|| SqlError::new((1298, "HY000"), format!("Unknown or incorrect time zone: '{s}'")))
                }
                "sql_mode" => {
                    let up = s.to_ascii_uppercase();
                    if up.split(',').filter(|m| !m.is_empty()).all(|m| SQL_MODES.contains(&m)) { Ok(up) } else { Err(wrong()) }
                }
                _ => Ok(s),
            }
        }
    }
}

/// A variable's value as SELECT @@x returns it.
#[must_use]
pub fn as_value(def: &VarDef, s: &str) -> Value {
    match def.kind {
        Kind::Int => s.parse::<i64>().map(Value::Int).or_else(|_| s.parse::<u64>().map(Value::UInt)).unwrap_or(Value::Str(s.to_owned())),
        Kind::Bool => Value::Int(i64::from(s == "ON")),
        Kind::Str => Value::Str(s.to_owned()),
    }
}

/// A `time_zone` value as an offset from UTC in seconds; `Some(None)` for SYSTEM.
/// Named zones other than UTC are not known (no time zone tables yet).
#[must_use]
pub fn parse_time_zone(s: &str) -> Option<Option<i64>> {
    let t = s.trim();
    if t.eq_ignore_ascii_case("SYSTEM") {
        return Some(None);
    }
    if t.eq_ignore_ascii_case("UTC") || t.eq_ignore_ascii_case("GMT") {
        return Some(Some(0));
    }
    let (sign, rest) = match t.as_bytes().first()? {
        b'+' => (1, &t[1..]),
        b'-' => (-1, &t[1..]),
        _ => return None,
    };
    let (h, m) = rest.split_once(':')?;
    let (h, m): (i64, i64) = (h.parse().ok()?, m.parse().ok()?);
    if !(0..=14).contains(&h) || !(0..60).contains(&m) {
        return None;
    }
    Some(Some(sign * (h * 3600 + m * 60)))
}
