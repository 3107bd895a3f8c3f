//! System variables: names, defaults, scopes, ranges and validation.
//!
//! Each variable Quill knows is listed in [`VARIABLES`] with its scope, default and, for a
//! number, MySQL's range. Variables marked `Inert` are accepted for compatibility (drivers
//! and tools set them) but Quill does not act on them; setting one records a warning
//! (1287-style note) so nobody is misled.
//!
//! A number outside its range is clamped to it, rounded down to the variable's block size,
//! and warning 1292 says so, as MySQL does (`SET GLOBAL max_allowed_packet=2147483648`
//! stores 1 GiB); the command line and option file clamp the same way, and the server log
//! says so. Invariant: every value stored for a number variable lies in its range, so
//! whoever reads it (the packet codec, the timeouts) can trust it.

use std::collections::BTreeMap;

use quill_storage::Value;

use quill_sql_types::error::{Result, SqlError, Warning, codes};

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

/// MySQL's bounds of `binlog_group_commit_sync_delay` (microseconds) and
/// `binlog_group_commit_sync_no_delay_count`.
pub const GROUP_DELAY_US_MAX: u64 = 1_000_000;
pub const GROUP_NO_DELAY_COUNT_MAX: u64 = 100_000;

/// The range of a number variable: values are clamped to `min..=max` and rounded down to
/// a multiple of `block`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IntRange {
    pub min: u64,
    pub max: u64,
    pub block: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Int(IntRange),
    /// A number from a fixed list (MySQL's enumeration variables): anything else is 1231.
    IntChoice(&'static [u64]),
    Bool,
    Str,
    /// A non-negative number of seconds with microseconds (`long_query_time`), shown with
    /// six decimals.
    Seconds,
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

/// A number variable with MySQL's range `min..=max`.
const fn int(min: u64, max: u64) -> Kind {
    Kind::Int(IntRange { min, max, block: 1 })
}

/// A number variable whose value is also a multiple of `block`.
const fn int_blocks(min: u64, max: u64, block: u64) -> Kind {
    Kind::Int(IntRange { min, max, block })
}

/// A year of seconds: MySQL's upper bound for its timeouts.
const TIMEOUT_SECONDS_MAX: u64 = 31_536_000;
/// The largest `max_allowed_packet` (MySQL's 1 GiB), and the smallest.
pub const MAX_ALLOWED_PACKET_MAX: u64 = 1 << 30;
pub const MAX_ALLOWED_PACKET_MIN: u64 = 1024;

use Effect::{Inert, Live, ReadOnly};
use Kind::{Bool, Str};
use Scope::{Both, Global, Session};

/// Every system variable Quill knows, sorted by name.
pub const VARIABLES: &[VarDef] = &[
    v("auto_increment_increment", Both, int(1, 65_535), Inert, "1"),
    v("auto_increment_offset", Both, int(1, 65_535), Inert, "1"),
    v("autocommit", Both, Bool, Live, "ON"),
    // Binlog events always carry a CRC-32 (`docs/binlog.md`).
    v("binlog_checksum", Global, Str, ReadOnly, "CRC32"),
    // How long the binary log's files (the commit log's segments) are kept once a checkpoint
    // covers them, in seconds; 0 keeps them until PURGE BINARY LOGS. Removal happens at
    // checkpoints, the oldest file first; a restart also removes those before the newest DDL
    // statement its checkpoint covers (`docs/binlog.md`).
    v("binlog_expire_logs_seconds", Global, int(0, 4_294_967_295), Live, "2592000"),
    // Replication is row-based only: the commit log holds row images.
    v("binlog_format", Both, Str, ReadOnly, "ROW"),
    v("binlog_group_commit_sync_delay", Global, int(0, GROUP_DELAY_US_MAX), Live, "0"),
    v("binlog_group_commit_sync_no_delay_count", Global, int(0, GROUP_NO_DELAY_COUNT_MAX), Live, "0"),
    // TABLE_MAP events always carry MySQL 8's full optional metadata (column names, the
    // primary key, signedness and collations).
    v("binlog_row_metadata", Global, Str, ReadOnly, "FULL"),
    // What the commit log records of an updated or deleted row besides its key: FULL, the
    // image it replaced; MINIMAL, nothing more (NOBLOB is not taken: 1231).
    v("binlog_row_image", Both, Str, Live, "FULL"),
    // The write buffer of a bulk INSERT ... SELECT, multi-row INSERT or LOAD DATA (`dml::bulk`);
    // 0 writes row by row. MySQL's range and default.
    v("bulk_insert_buffer_size", Both, int(0, u64::MAX), Live, "8388608"),
    // caching_sha2_password's RSA key pair (the server's `rsa_keys`): PEM files, a relative
    // path under the data directory; made there at start-up when missing and this is ON.
    v("caching_sha2_password_auto_generate_rsa_keys", Global, Bool, ReadOnly, "ON"),
    v("caching_sha2_password_private_key_path", Global, Str, ReadOnly, "private_key.pem"),
    v("caching_sha2_password_public_key_path", Global, Str, ReadOnly, "public_key.pem"),
    v("character_set_client", Both, Str, Live, "utf8mb4"),
    v("character_set_connection", Both, Str, Live, "utf8mb4"),
    v("character_set_database", Both, Str, Inert, "utf8mb4"),
    v("character_set_results", Both, Str, Live, "utf8mb4"),
    v("character_set_server", Both, Str, Inert, "utf8mb4"),
    v("character_set_system", Global, Str, ReadOnly, "utf8mb3"),
    v("collation_connection", Both, Str, Live, "utf8mb4_0900_ai_ci"),
    v("collation_database", Both, Str, Inert, "utf8mb4_0900_ai_ci"),
    v("collation_server", Both, Str, Inert, "utf8mb4_0900_ai_ci"),
    v("connect_timeout", Global, int(2, TIMEOUT_SECONDS_MAX), Live, "10"),
    // Rounds a recursive common table expression may run (`cte`): past it, error 3636.
    v("cte_max_recursion_depth", Both, int(0, 4_294_967_295), Live, "1000"),
    v("datadir", Global, Str, ReadOnly, ""),
    v("default_storage_engine", Both, Str, Inert, "InnoDB"),
    v("div_precision_increment", Both, int(0, 30), Inert, "4"),
    v("enforce_gtid_consistency", Global, Str, ReadOnly, "ON"),
    // Quill's TIMESTAMP columns always behave as with this ON (no implicit DEFAULT or ON UPDATE).
    v("explicit_defaults_for_timestamp", Both, Bool, Inert, "ON"),
    v("foreign_key_checks", Both, Bool, Live, "ON"),
    // Computed when read (`session::gtid_executed`).
    v("gtid_executed", Global, Str, ReadOnly, ""),
    // Computed when read (`session::gtid_purged`); it cannot be set.
    v("gtid_purged", Global, Str, ReadOnly, ""),
    v("gtid_mode", Global, Str, ReadOnly, "ON"),
    v("hostname", Global, Str, ReadOnly, "localhost"),
    v("init_connect", Global, Str, Inert, ""),
    // Bytes the resident leaves of paged tables may hold (`quill_storage::buffer_pool`);
    // SET GLOBAL takes effect at the next load or write. MySQL 8's bounds and default.
    v("innodb_buffer_pool_size", Global, int_blocks(5 << 20, u64::MAX, 1 << 20), Live, "134217728"),
    v("innodb_flush_log_at_trx_commit", Global, Kind::IntChoice(&[0, 1, 2]), Live, "1"),
    v("innodb_lock_wait_timeout", Both, int(1, 1_073_741_824), Live, "50"),
    // Each deadlock's description (SHOW ENGINE INNODB STATUS's) also goes to the server's log.
    v("innodb_print_all_deadlocks", Global, Bool, Live, "OFF"),
    v("innodb_rollback_on_timeout", Global, Bool, ReadOnly, "OFF"),
    v("innodb_snapshot_isolation", Both, Bool, Live, "OFF"),
    v("interactive_timeout", Both, int(1, TIMEOUT_SECONDS_MAX), Live, "28800"),
    v("license", Global, Str, ReadOnly, "Apache-2.0"),
    v("local_infile", Global, Bool, Live, "OFF"),
    // The slow query log (`slow_log`, docs/slow-log.md). FILE or NONE: there is no
    // mysql.slow_log table (TABLE is refused with 1231).
    v("log_output", Global, Str, Live, "FILE"),
    v("log_queries_not_using_indexes", Global, Bool, Live, "OFF"),
    v("log_slow_extra", Global, Bool, Live, "OFF"),
    // Percona's and MariaDB's: `innodb` and `full` add the InnoDB lines; `microtime` is
    // always so. Other words are refused (1231) rather than taken and ignored.
    v("log_slow_verbosity", Both, Str, Live, ""),
    v("long_query_time", Both, Kind::Seconds, Live, "10.000000"),
    v("lock_wait_timeout", Both, int(1, 31_536_000), Live, "31536000"),
    // The binary log is the commit log seen through replication (`docs/binlog.md`): always on.
    v("log_bin", Global, Bool, ReadOnly, "ON"),
    v("log_bin_basename", Global, Str, ReadOnly, "quill-bin"),
    // A replica's binary log holds the transactions it applied from its source, with their
    // GTIDs, so replicas of it form chains (`docs/binlog.md`); a startup option, as MySQL's.
    v("log_replica_updates", Global, Bool, ReadOnly, "ON"),
    v("log_slave_updates", Global, Bool, ReadOnly, "ON"),
    v("max_execution_time", Both, int(0, 4_294_967_295), Live, "0"),
    // How often a stored procedure may call itself in one CALL (`session::call`).
    v("max_sp_recursion_depth", Both, int(0, 255), Live, "0"),
    // Days an account's password lasts when it follows the default (`PASSWORD EXPIRE
    // DEFAULT`); 0 is never.
    v("default_password_lifetime", Global, int(0, 65_535), Live, "0"),
    // GROUP_CONCAT's result is cut at this many bytes, with warning 1260 (`aggregate`).
    v("group_concat_max_len", Both, int(4, u64::MAX), Live, "1024"),
    v("lower_case_table_names", Global, int(0, 2), ReadOnly, "0"),
    v("max_allowed_packet", Both, int_blocks(MAX_ALLOWED_PACKET_MIN, MAX_ALLOWED_PACKET_MAX, 1024), Live, "67108864"),
    v("max_connections", Global, int(1, 100_000), Live, "151"),
    // MEMORY tables do not exist apart from the one engine; see tmp_table_size.
    v("max_heap_table_size", Both, int_blocks(16_384, u64::MAX, 1024), Inert, "16777216"),
    v("net_buffer_length", Both, int_blocks(1024, 1_048_576, 1024), Inert, "16384"),
    v("net_read_timeout", Both, int(1, TIMEOUT_SECONDS_MAX), Live, "30"),
    v("net_write_timeout", Both, int(1, TIMEOUT_SECONDS_MAX), Live, "60"),
    // MySQL 8.0's flags; Quill's planner has its own and reads none of these.
    v(
        "optimizer_switch",
        Both,
        Str,
        Inert,
        "index_merge=on,index_merge_union=on,index_merge_sort_union=on,index_merge_intersection=on,engine_condition_pushdown=on,index_condition_pushdown=on,mrr=on,mrr_cost_based=on,block_nested_loop=on,batched_key_access=off,materialization=on,semijoin=on,loosescan=on,firstmatch=on,duplicateweedout=on,subquery_materialization_cost_based=on,use_index_extensions=on,condition_fanout_filter=on,derived_merge=on,use_invisible_indexes=off,skip_scan=on,hash_join=on,subquery_to_derived=off,prefer_ordering_index=on,hypergraph_optimizer=off,derived_condition_pushdown=on",
    ),
    v("performance_schema", Global, Bool, ReadOnly, "OFF"),
    v("min_examined_row_limit", Both, int(0, u64::MAX), Live, "0"),
    v("port", Global, int(0, 65_535), ReadOnly, "3306"),
    v("protocol_version", Global, int(0, 255), ReadOnly, "10"),
    v("query_cache_size", Global, int(0, u64::MAX), ReadOnly, "0"),
    v("query_cache_type", Both, Str, ReadOnly, "OFF"),
    v("quill_checkpoint_interval_seconds", Global, int(1, TIMEOUT_SECONDS_MAX), Live, "300"),
    v("quill_checkpoint_log_bytes", Global, int(4096, u64::MAX), Live, "268435456"),
    // Testing: ON evicts every leaf of paged tables as soon as no call uses it, whatever
    // innodb_buffer_pool_size says, so every read after a write comes back from disk.
    v("quill_debug_evict_always", Global, Bool, Live, "OFF"),
    v("quill_log_segment_bytes", Global, int_blocks(64 << 10, 1 << 30, 4096), ReadOnly, "67108864"),
    // Where tables keep their rows (`docs/architecture.md`, "The paged engine"): `paged`, in
    // page files under the data directory, the buffer pool holding what is used; or `memory`,
    // every row in memory, durable through the log and whole-table checkpoints. Read at
    // start-up; a data directory whose checkpoint holds paged tables needs `paged`.
    v("quill_table_storage", Global, Str, ReadOnly, "paged"),
    // Connections that have not logged in yet; past it the oldest is closed to make room.
    // Their own bound, so sockets that never log in cannot take max_connections' slots.
    v("quill_max_unauthenticated_connections", Global, int(1, 100_000), Live, "512"),
    // Writes from accounts without SUPER are refused (1290); super_read_only stops those
    // with it too. The replica applier is exempt.
    v("read_only", Global, Bool, Live, "OFF"),
    // Seconds a replica waits for data from its source (and for a connection to it) before it
    // counts the connection lost and reconnects; read when the I/O thread connects.
    v("replica_net_timeout", Global, int(1, 31_536_000), Live, "60"),
    // The replica's applier workers (`docs/replication.md`, "Parallel apply"): read when the
    // applier starts; 0 and 1 apply one transaction at a time. MySQL 8's default.
    v("replica_parallel_workers", Global, int(0, 1024), Live, "4"),
    // Workers always commit in source order.
    v("replica_preserve_commit_order", Global, Bool, ReadOnly, "ON"),
    // Clients must log in over TLS (3159 otherwise).
    v("require_secure_transport", Global, Bool, Live, "OFF"),
    // Semi-synchronous replication (`docs/replication.md`), under MySQL 8's names and the
    // older ones MariaDB's and MySQL 5.7's replicas ask for (`ALIASES`): a commit's reply
    // waits, up to the timeout (milliseconds), for this many replicas to acknowledge it.
    v("rpl_semi_sync_master_enabled", Global, Bool, Live, "OFF"),
    v("rpl_semi_sync_master_timeout", Global, int(0, 4_294_967_295), Live, "10000"),
    v("rpl_semi_sync_master_wait_for_slave_count", Global, int(1, 65_535), Live, "1"),
    v("rpl_semi_sync_master_wait_no_slave", Global, Bool, Live, "ON"),
    v("rpl_semi_sync_master_wait_point", Global, Str, Live, "AFTER_SYNC"),
    // The replica's side: its I/O thread asks the source for semi-sync and acknowledges each
    // transaction on receipt. Read when the I/O thread connects, as MySQL does.
    v("rpl_semi_sync_replica_enabled", Global, Bool, Live, "OFF"),
    v("rpl_semi_sync_slave_enabled", Global, Bool, Live, "OFF"),
    v("rpl_semi_sync_source_enabled", Global, Bool, Live, "OFF"),
    v("rpl_semi_sync_source_timeout", Global, int(0, 4_294_967_295), Live, "10000"),
    v("rpl_semi_sync_source_wait_for_replica_count", Global, int(1, 65_535), Live, "1"),
    v("rpl_semi_sync_source_wait_no_replica", Global, Bool, Live, "ON"),
    v("rpl_semi_sync_source_wait_point", Global, Str, Live, "AFTER_SYNC"),
    // Where server-side files may be read and written (`session::server_files`): NULL, the
    // default, for nowhere; empty for anywhere; or one directory. Set at start-up only.
    v("secure_file_priv", Global, Str, ReadOnly, SECURE_FILE_PRIV_NONE),
    v("server_id", Global, int(0, 4_294_967_295), Inert, "1"),
    // Made when the data directory is first opened and kept in it (`server_uuid`).
    v("server_uuid", Global, Str, ReadOnly, ""),
    v("session_track_schema", Both, Bool, Inert, "ON"),
    v("session_track_state_change", Both, Bool, Inert, "OFF"),
    v("session_track_system_variables", Both, Str, Inert, "time_zone,autocommit,character_set_client,character_set_results,character_set_connection"),
    v("session_track_transaction_info", Both, Str, Inert, "OFF"),
    v("skip_networking", Global, Bool, ReadOnly, "OFF"),
    v("slave_net_timeout", Global, int(1, 31_536_000), Live, "60"),
    v("slave_parallel_workers", Global, int(0, 1024), Live, "4"),
    v("slave_preserve_commit_order", Global, Bool, ReadOnly, "ON"),
    // Quill listens on TCP only; clients that look for a Unix socket find none.
    v("slow_query_log", Global, Bool, Live, "OFF"),
    // Empty: `quill-slow.log` in the data directory; a relative name is in the data directory.
    v("slow_query_log_file", Global, Str, Live, ""),
    v("socket", Global, Str, ReadOnly, ""),
    // Sorts are held whole in memory, within temptable_max_ram (`tmp_memory`).
    v("sort_buffer_size", Both, int(32_768, u64::MAX), Inert, "262144"),
    v("sql_auto_is_null", Both, Bool, Inert, "OFF"),
    // Writes from every account are refused (1290); ON sets read_only, read_only=OFF clears it.
    v("super_read_only", Global, Bool, Live, "OFF"),
    // A configured replica starts with the server unless this is ON (command line only).
    v("skip_replica_start", Global, Bool, ReadOnly, "OFF"),
    v("sql_mode", Both, Str, Live, "ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION"),
    v("sql_notes", Both, Bool, Live, "ON"),
    v("sql_quote_show_create", Both, Bool, Live, "ON"),
    v("sql_safe_updates", Both, Bool, Inert, "OFF"),
    v("sql_select_limit", Both, int(0, u64::MAX), Inert, "18446744073709551615"),
    v("system_time_zone", Global, Str, ReadOnly, "UTC"),
    // The memory one statement's intermediate results may hold (`tmp_memory`): past it,
    // 1114. MySQL's variable is global; so is this one.
    v("temptable_max_ram", Global, int(2_097_152, u64::MAX), Live, "1073741824"),
    v("time_zone", Both, Str, Live, "SYSTEM"),
    // MySQL's in-memory bound before a temporary table moves to disk. Quill has no on-disk
    // temporary tables: its bound is temptable_max_ram.
    v("tmp_table_size", Both, int(1024, u64::MAX), Inert, "16777216"),
    v("transaction_isolation", Both, Str, Live, "REPEATABLE-READ"),
    v("transaction_read_only", Both, Bool, Live, "OFF"),
    v("tx_isolation", Both, Str, Live, "REPEATABLE-READ"),
    v("tx_read_only", Both, Bool, Live, "OFF"),
    v("unique_checks", Both, Bool, Inert, "ON"),
    v("version", Global, Str, ReadOnly, quill_sql_types::SERVER_VERSION),
    v("version_comment", Global, Str, ReadOnly, "Quill (MySQL-compatible)"),
    v("version_compile_machine", Global, Str, ReadOnly, "x86_64"),
    v("version_compile_os", Global, Str, ReadOnly, "Linux"),
    v("wait_timeout", Both, int(1, TIMEOUT_SECONDS_MAX), Live, "28800"),
    v("warning_count", Session, int(0, u64::MAX), ReadOnly, "0"),
    v("error_count", Session, int(0, u64::MAX), ReadOnly, "0"),
];

/// The sql_mode names MySQL 8 accepts, in the order MySQL lists them (its bit order).
pub const SQL_MODES: &[&str] = &[
    "REAL_AS_FLOAT",
    "PIPES_AS_CONCAT",
    "ANSI_QUOTES",
    "IGNORE_SPACE",
    "ONLY_FULL_GROUP_BY",
    "NO_UNSIGNED_SUBTRACTION",
    "NO_DIR_IN_CREATE",
    "ANSI",
    "NO_AUTO_VALUE_ON_ZERO",
    "NO_BACKSLASH_ESCAPES",
    "STRICT_TRANS_TABLES",
    "STRICT_ALL_TABLES",
    "NO_ZERO_IN_DATE",
    "NO_ZERO_DATE",
    "ALLOW_INVALID_DATES",
    "ERROR_FOR_DIVISION_BY_ZERO",
    "TRADITIONAL",
    "HIGH_NOT_PRECEDENCE",
    "NO_ENGINE_SUBSTITUTION",
    "PAD_CHAR_TO_FULL_LENGTH",
    "TIME_TRUNCATE_FRACTIONAL",
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

/// Variables that are one setting under two names: setting either sets both. Each name has
/// its own entry in [`VARIABLES`] (both are listed and read), and the two entries must agree:
/// `an_alias_pair_is_defined_alike` checks it.
pub const ALIASES: &[(&str, &str)] = &[
    ("rpl_semi_sync_source_enabled", "rpl_semi_sync_master_enabled"),
    ("rpl_semi_sync_source_timeout", "rpl_semi_sync_master_timeout"),
    ("rpl_semi_sync_source_wait_for_replica_count", "rpl_semi_sync_master_wait_for_slave_count"),
    ("rpl_semi_sync_source_wait_no_replica", "rpl_semi_sync_master_wait_no_slave"),
    ("rpl_semi_sync_source_wait_point", "rpl_semi_sync_master_wait_point"),
    ("rpl_semi_sync_replica_enabled", "rpl_semi_sync_slave_enabled"),
    ("replica_net_timeout", "slave_net_timeout"),
    ("log_replica_updates", "log_slave_updates"),
    ("replica_parallel_workers", "slave_parallel_workers"),
    ("replica_preserve_commit_order", "slave_preserve_commit_order"),
];

/// The other name of a variable that has two ([`ALIASES`]).
#[must_use]
pub fn alias(name: &str) -> Option<&'static str> {
    ALIASES.iter().find_map(|&(a, b)| {
        if a == name {
            Some(b)
        } else if b == name {
            Some(a)
        } else {
            None
        }
    })
}

/// A value ready to store for a variable, with the warning its normalising gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Normalised {
    pub value: String,
    /// 1292 when a number was clamped to the variable's range.
    pub warning: Option<Warning>,
}

/// Normalise a value being assigned to `def`: numbers clamped to the variable's range
/// (with warning 1292), booleans as ON/OFF, names checked.
///
/// # Errors
/// 1231 for a value the variable does not take, 1232 for a wrong type, 1115 for an
/// unknown character set, 1273 for an unknown collation.
pub fn normalise(def: &VarDef, v: &Value) -> Result<Normalised> {
    let wrong = || {
        SqlError::new(
            codes::ER_WRONG_VALUE_FOR_VAR,
            format!("Variable '{}' can't be set to the value of '{}'", def.name, quill_sql_types::ops::to_string_lossy(v)),
        )
    };
    let plain = |value: String| Ok(Normalised { value, warning: None });
    match def.kind {
        Kind::Bool => match v {
            Value::Int(0) | Value::UInt(0) => plain("OFF".into()),
            Value::Int(1) | Value::UInt(1) => plain("ON".into()),
            Value::Str(s) if s.eq_ignore_ascii_case("on") || s.eq_ignore_ascii_case("true") => plain("ON".into()),
            Value::Str(s) if s.eq_ignore_ascii_case("off") || s.eq_ignore_ascii_case("false") => plain("OFF".into()),
            _ => Err(wrong()),
        },
        Kind::Int(range) => {
            let n: i128 = match v {
                Value::Int(i) => i128::from(*i),
                Value::UInt(u) => i128::from(*u),
                _ => return Err(SqlError::new(codes::ER_WRONG_TYPE_FOR_VAR, format!("Incorrect argument type to variable '{}'", def.name))),
            };
            let clamped = n.clamp(i128::from(range.min), i128::from(range.max));
            let clamped = u64::try_from(clamped).expect("clamped into a u64 range");
            let blocked = (clamped - clamped % range.block).max(range.min);
            let warning = (i128::from(blocked) != n).then(|| Warning {
                level: "Warning",
                code: codes::ER_TRUNCATED_WRONG_VALUE.0,
                message: format!("Truncated incorrect {} value: '{n}'", def.name),
            });
            Ok(Normalised { value: blocked.to_string(), warning })
        }
        Kind::Seconds => {
            let seconds = match v {
                Value::Int(_) | Value::UInt(_) | Value::Double(_) | Value::Decimal(_) => quill_sql_types::ops::to_f64(v),
                Value::Str(text) => text
                    .trim()
                    .parse::<f64>()
                    .map_err(|_| SqlError::new(codes::ER_WRONG_TYPE_FOR_VAR, format!("Incorrect argument type to variable '{}'", def.name)))?,
                _ => return Err(SqlError::new(codes::ER_WRONG_TYPE_FOR_VAR, format!("Incorrect argument type to variable '{}'", def.name))),
            };
            let clamped = if seconds.is_nan() { 0.0 } else { seconds.clamp(0.0, TIMEOUT_SECONDS_MAX as f64) };
            let warning = (clamped != seconds).then(|| Warning {
                level: "Warning",
                code: codes::ER_TRUNCATED_WRONG_VALUE.0,
                message: format!("Truncated incorrect {} value: '{seconds}'", def.name),
            });
            Ok(Normalised { value: format!("{clamped:.6}"), warning })
        }
        Kind::IntChoice(choices) => match v {
            Value::Int(i) if u64::try_from(*i).is_ok_and(|n| choices.contains(&n)) => plain(i.to_string()),
            Value::UInt(u) if choices.contains(u) => plain(u.to_string()),
            Value::Int(_) | Value::UInt(_) => Err(wrong()),
            _ => Err(SqlError::new(codes::ER_WRONG_TYPE_FOR_VAR, format!("Incorrect argument type to variable '{}'", def.name))),
        },
        Kind::Str => {
            let s = quill_sql_types::ops::to_string_lossy(v);
            match def.name {
                "transaction_isolation" | "tx_isolation" => {
                    let up = s.to_ascii_uppercase().replace(' ', "-");
                    if ["READ-UNCOMMITTED", "READ-COMMITTED", "REPEATABLE-READ", "SERIALIZABLE"].contains(&up.as_str()) { plain(up) } else { Err(wrong()) }
                }
                "time_zone" => quill_sql_types::time_zone::TimeZone::parse(&s)
                    .map(|_| s.clone())
                    .ok_or_else(|| SqlError::new(codes::ER_UNKNOWN_TIME_ZONE, format!("Unknown or incorrect time zone: '{s}'")))
                    .and_then(plain),
                "sql_mode" => {
                    // As MySQL stores it: each mode once, in MySQL's order.
                    let up = s.to_ascii_uppercase();
                    let named: Vec<&str> = up.split(',').map(str::trim).filter(|m| !m.is_empty()).collect();
                    if named.iter().all(|m| SQL_MODES.contains(m)) {
                        plain(SQL_MODES.iter().filter(|m| named.contains(m)).copied().collect::<Vec<_>>().join(","))
                    } else {
                        Err(wrong())
                    }
                }
                "character_set_client" | "character_set_connection" | "character_set_results" | "character_set_server" | "character_set_database" => {
                    if def.name == "character_set_results" && v.is_null() {
                        return plain(String::new());
                    }
                    quill_sql_types::charset::Charset::from_name(&s).map(|c| c.name().to_owned()).ok_or_else(|| unknown_charset(&s)).and_then(plain)
                }
                "collation_connection" | "collation_server" | "collation_database" => {
                    if quill_storage::Collation::from_name(&s).is_some() {
                        plain(s.to_ascii_lowercase())
                    } else {
                        Err(SqlError::new(codes::ER_UNKNOWN_COLLATION, format!("Unknown collation: '{s}'")))
                    }
                }
                "secure_file_priv" => secure_file_priv(&s).and_then(plain),
                "rpl_semi_sync_source_wait_point" | "rpl_semi_sync_master_wait_point" => {
                    let up = s.to_ascii_uppercase();
                    if ["AFTER_SYNC", "AFTER_COMMIT"].contains(&up.as_str()) { plain(up) } else { Err(wrong()) }
                }
                "binlog_row_image" => {
                    let up = s.to_ascii_uppercase();
                    if ["FULL", "MINIMAL"].contains(&up.as_str()) { plain(up) } else { Err(wrong()) }
                }
                "quill_table_storage" => {
                    let low = s.to_ascii_lowercase();
                    if ["paged", "memory"].contains(&low.as_str()) { plain(low) } else { Err(wrong()) }
                }
                "log_output" => {
                    let up = s.to_ascii_uppercase();
                    if ["FILE", "NONE"].contains(&up.as_str()) { plain(up) } else { Err(wrong()) }
                }
                "log_slow_verbosity" => {
                    let low = s.to_ascii_lowercase();
                    let words: Vec<&str> = low.split(',').map(str::trim).filter(|w| !w.is_empty()).collect();
                    if words.iter().all(|w| ["innodb", "full", "microtime"].contains(w)) { plain(words.join(",")) } else { Err(wrong()) }
                }
                _ => plain(s),
            }
        }
    }
}

/// The `secure_file_priv` that forbids every server file: MySQL's NULL.
pub const SECURE_FILE_PRIV_NONE: &str = "NULL";

/// A `secure_file_priv` as stored: NULL, empty, or an existing directory made absolute with a
/// trailing `/`, as MySQL shows it.
fn secure_file_priv(s: &str) -> Result<String> {
    if s.eq_ignore_ascii_case(SECURE_FILE_PRIV_NONE) || s.is_empty() {
        return Ok(if s.is_empty() { String::new() } else { SECURE_FILE_PRIV_NONE.to_owned() });
    }
    match std::fs::canonicalize(s) {
        Ok(dir) if dir.is_dir() => Ok(format!("{}/", dir.display().to_string().trim_end_matches('/'))),
        _ => Err(SqlError::new(codes::ER_WRONG_VALUE_FOR_VAR, format!("secure_file_priv: '{s}' is not an existing directory"))),
    }
}

/// MySQL's 1115.
#[must_use]
pub fn unknown_charset(name: &str) -> SqlError {
    SqlError::new(codes::ER_UNKNOWN_CHARACTER_SET, format!("Unknown character set: '{name}'"))
}

/// A number variable's value, read from a store that only holds clamped values (see the
/// module invariant); `0` for a variable that is not a number.
#[must_use]
pub fn int_value(set: &VarSet, name: &str) -> u64 {
    set.get(name).and_then(|v| v.parse().ok()).unwrap_or(0)
}

/// A variable's value as SELECT @@x returns it.
#[must_use]
pub fn as_value(def: &VarDef, s: &str) -> Value {
    match def.kind {
        Kind::Int(_) | Kind::IntChoice(_) => {
            s.parse::<i64>().map(Value::Int).or_else(|_| s.parse::<u64>().map(Value::UInt)).unwrap_or(Value::Str(s.to_owned()))
        }
        Kind::Bool => Value::Int(i64::from(s == "ON")),
        Kind::Seconds => s.parse::<quill_storage::Decimal>().map_or_else(|_| Value::Str(s.to_owned()), Value::Decimal),
        Kind::Str if def.name == "secure_file_priv" && s == SECURE_FILE_PRIV_NONE => Value::Null,
        Kind::Str => Value::Str(s.to_owned()),
    }
}

#[cfg(test)]
mod alias_tests {
    use super::*;

    #[test]
    fn an_alias_pair_is_defined_alike() {
        for &(a, b) in ALIASES {
            let (a, b) = (lookup(a).expect("alias defined"), lookup(b).expect("alias defined"));
            assert_eq!((a.scope, a.kind, a.effect, a.default), (b.scope, b.kind, b.effect, b.default), "{} and {}", a.name, b.name);
        }
    }
}
