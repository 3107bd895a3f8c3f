//! The SQL layer's errors: one variant family per MySQL error a client can meet.
//!
//! Each error carries MySQL's error number and SQLSTATE so the protocol edge can
//! send an ERR packet unchanged; the message text follows MySQL 8's wording. Every number
//! and SQLSTATE the SQL layer raises, as an error or a warning, comes from the one table
//! [`codes`], under MySQL's own names (mysqld_error.h).

use std::fmt;

/// An SQL-level failure, reported to the client as an ERR packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqlError {
    pub code: u16,
    pub state: std::borrow::Cow<'static, str>,
    pub message: String,
    /// The error rolls back the whole transaction, not only the statement (deadlock victim).
    pub rolls_back_transaction: bool,
    /// Set for the stop of a statement that must wait before it can go on (see [`Wait`]);
    /// such an error is never sent to a client.
    wait: Option<Wait>,
}

/// A wait a statement must make before it can go on. The executor runs synchronously on a
/// runtime worker and never blocks it, so where a statement must wait it stops with
/// [`SqlError::must_wait`]; the session (`Session::execute_attempts`) undoes the statement,
/// takes [`SqlError::wait`], waits asynchronously (each wait bounded as its variant says)
/// and runs the statement again from its start, keeping the locks it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// A row lock request was queued (`locking`): wait for its grant, at most
    /// `innodb_lock_wait_timeout` (then 1205) or until the deadlock detector picks this
    /// transaction (1213).
    RowLock,
    /// A function must wait (`statement_waits`: `GET_LOCK` for a lock another connection
    /// holds, `SLEEP`, `WAIT_FOR_TABLE_COMMIT`); what for, and its own bound, are in
    /// `SessionInfo::function_calls`.
    Function,
    /// A DDL statement found a checkpoint copying the tables (`Engine::ddl_gate`): wait
    /// `DDL_GATE_RETRY` and try again, until the checkpoint is done or a KILL.
    DdlGate,
}

impl fmt::Display for SqlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ERROR {} ({}): {}", self.code, self.state, self.message)
    }
}

impl std::error::Error for SqlError {}

pub type Result<T> = std::result::Result<T, SqlError>;

macro_rules! errors {
    ($($name:ident = ($code:expr, $state:expr);)*) => {
        /// MySQL error numbers used by Quill, with their SQLSTATEs.
        pub mod codes {
            $(pub const $name: (u16, &str) = ($code, $state);)*
        }
    };
}

errors! {
    ER_DUP_ENTRY = (1062, "23000");
    ER_PARSE_ERROR = (1064, "42000");
    ER_ILLEGAL_HA_CREATE_OPTION = (1478, "HY000");
    ER_NO_SUCH_TABLE = (1146, "42S02");
    ER_BAD_FIELD_ERROR = (1054, "42S22");
    ER_BAD_DB_ERROR = (1049, "42000");
    ER_DB_CREATE_EXISTS = (1007, "HY000");
    ER_DB_DROP_EXISTS = (1008, "HY000");
    ER_TABLE_EXISTS_ERROR = (1050, "42S01");
    ER_BAD_TABLE_ERROR = (1051, "42S02");
    ER_BAD_NULL_ERROR = (1048, "23000");
    ER_NO_DEFAULT_FOR_FIELD = (1364, "HY000");
    ER_TRUNCATED_WRONG_VALUE_FOR_FIELD = (1366, "HY000");
    ER_WARN_DATA_OUT_OF_RANGE = (1264, "22003");
    ER_DATA_TOO_LONG = (1406, "22001");
    WARN_DATA_TRUNCATED = (1265, "01000");
    ER_TRUNCATED_WRONG_VALUE = (1292, "22007");
    ER_UNKNOWN_SYSTEM_VARIABLE = (1193, "HY000");
    ER_WRONG_VALUE_FOR_VAR = (1231, "42000");
    ER_WRONG_TYPE_FOR_VAR = (1232, "42000");
    ER_INCORRECT_GLOBAL_LOCAL_VAR = (1238, "HY000");
    ER_GLOBAL_VARIABLE = (1229, "HY000");
    ER_UNKNOWN_ERROR = (1105, "HY000");
    ER_NO_DB_ERROR = (1046, "3D000");
    ER_NON_UNIQ_ERROR = (1052, "23000");
    ER_DUP_FIELDNAME = (1060, "42S21");
    ER_DUP_KEYNAME = (1061, "42000");
    ER_MULTIPLE_PRI_KEY = (1068, "42000");
    ER_CANT_DROP_FIELD_OR_KEY = (1091, "42000");
    ER_WRONG_VALUE_COUNT_ON_ROW = (1136, "21S01");
    ER_WRONG_VALUE_COUNT = (1058, "21S01");
    ER_OPERAND_COLUMNS = (1241, "21000");
    ER_SUBQUERY_NO_1_ROW = (1242, "21000");
    ER_DATA_OUT_OF_RANGE = (1690, "22003");
    ER_INVALID_ARGUMENT_FOR_LOGARITHM = (3020, "2201E");
    ER_LOCK_WAIT_TIMEOUT = (1205, "HY000");
    ER_LOCK_DEADLOCK = (1213, "40001");
    ER_LOCK_NOWAIT = (3572, "HY000");
    ER_CHECKREAD = (1020, "HY000");
    ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION = (1792, "25006");
    ER_NOT_SUPPORTED_YET = (1235, "42000");
    ER_WRONG_ARGUMENTS = (1210, "HY000");
    ER_SP_DOES_NOT_EXIST = (1305, "42000");
    ER_WRONG_PARAMCOUNT_TO_NATIVE_FCT = (1582, "42000");
    ER_WRONG_FIELD_WITH_GROUP = (1055, "42000");
    ER_INVALID_GROUP_FUNC_USE = (1111, "HY000");
    ER_WRONG_NUMBER_OF_COLUMNS_IN_SELECT = (1222, "21000");
    ER_UNKNOWN_COLLATION = (1273, "HY000");
    ER_WRONG_NAME_FOR_INDEX = (1280, "42000");
    ER_UNKNOWN_CHARACTER_SET = (1115, "42000");
    ER_NO_SUCH_THREAD = (1094, "HY000");
    ER_QUERY_INTERRUPTED = (1317, "70100");
    ER_QUERY_TIMEOUT = (3024, "HY000");
    ER_UNKNOWN_STORAGE_ENGINE = (1286, "42000");
    WARN_USING_OTHER_HANDLER = (1266, "HY000");
    ER_KEY_COLUMN_DOES_NOT_EXITS = (1072, "42000");
    ER_TOO_BIG_PRECISION = (1426, "42000");
    ER_WRONG_AUTO_KEY = (1075, "42000");
    ER_EMPTY_QUERY = (1065, "42000");
    ER_UNKNOWN_TABLE = (1109, "42S02");
    ER_NONUNIQ_TABLE = (1066, "42000");
    ER_KEY_DOES_NOT_EXITS = (1176, "42000");
    ER_INVALID_DEFAULT = (1067, "42000");
    ER_DIVISION_BY_ZERO = (1365, "22012");
    ER_CANT_CHANGE_TX_CHARACTERISTICS = (1568, "25001");
    ER_UNKNOWN_COM_ERROR = (1047, "08S01");
    ER_WRONG_DB_NAME = (1102, "42000");
    ER_TABLEACCESS_DENIED_ERROR = (1142, "42000");
    ER_UPDATE_TABLE_USED = (1093, "HY000");
    ER_WARN_TOO_FEW_RECORDS = (1261, "01000");
    ER_TRUNCATED_WRONG_VALUE_WARN = (1292, "22007");
    ER_INVALID_CHARACTER_STRING = (1300, "HY000");
    ER_DISK_FULL = (1021, "HY000");
    ER_RECORD_FILE_FULL = (1114, "HY000");
    ER_CANT_CREATE_TABLE = (1005, "HY000");
    ER_STACK_OVERRUN_NEED_MORE = (1436, "HY000");
    ER_TOO_HIGH_LEVEL_OF_NESTING_FOR_SELECT = (1473, "HY000");
    // The operating system's errors as MySQL reports them for a file (mysys' EE_ codes).
    EE_CANTCREATEFILE = (1, "HY000");
    EE_STAT = (13, "HY000");
    EE_FILENOTFOUND = (29, "HY000");
    // Raised where Quill meets the same condition as MySQL; names are MySQL's (mysqld_error.h).
    ER_DBACCESS_DENIED_ERROR = (1044, "42000");
    ER_ACCESS_DENIED_ERROR = (1045, "28000");
    ER_SERVER_SHUTDOWN = (1053, "08S01");
    ER_WRONG_FIELD_TERMINATORS = (1083, "42000");
    ER_BLOBS_AND_NO_TERMINATED = (1084, "42000");
    ER_FILE_EXISTS_ERROR = (1086, "HY000");
    ER_KILL_DENIED_ERROR = (1095, "HY000");
    ER_TOO_BIG_SET = (1097, "HY000");
    ER_TABLE_NOT_LOCKED_FOR_WRITE = (1099, "HY000");
    ER_TABLE_NOT_LOCKED = (1100, "HY000");
    ER_PASSWORD_NO_MATCH = (1133, "28000");
    ER_MIX_OF_GROUP_FUNC_AND_FIELDS = (1140, "42000");
    ER_NONEXISTING_GRANT = (1141, "42000");
    ER_ILLEGAL_GRANT_FOR_TABLE = (1144, "42000");
    ER_NONEXISTING_TABLE_GRANT = (1147, "42000");
    ER_SYNTAX_ERROR = (1149, "42000");
    ER_NET_PACKET_TOO_LARGE = (1153, "08S01");
    ER_NET_READ_ERROR = (1158, "08S01");
    ER_NET_ERROR_ON_WRITE = (1160, "08S01");
    ER_TOO_MANY_ROWS = (1172, "42000");
    ER_LOCK_OR_ACTIVE_TRANSACTION = (1192, "HY000");
    ER_TRANS_CACHE_FULL = (1197, "HY000");
    ER_BAD_SLAVE = (1200, "HY000");
    ER_MASTER_INFO = (1201, "HY000");
    ER_ERROR_WHEN_EXECUTING_COMMAND = (1220, "HY000");
    ER_WRONG_USAGE = (1221, "HY000");
    ER_SPECIFIC_ACCESS_DENIED_ERROR = (1227, "42000");
    ER_WRONG_FK_DEF = (1239, "42000");
    ER_UNKNOWN_STMT_HANDLER = (1243, "HY000");
    ER_DERIVED_MUST_HAVE_ALIAS = (1248, "42000");
    ER_COLLATION_CHARSET_MISMATCH = (1253, "42000");
    ER_WARN_TOO_MANY_RECORDS = (1262, "01000");
    ER_NON_UPDATABLE_TABLE = (1288, "HY000");
    ER_OPTION_PREVENTS_STATEMENT = (1290, "HY000");
    ER_DUPLICATED_VALUE_IN_TYPE = (1291, "HY000");
    ER_UNSUPPORTED_PS = (1295, "HY000");
    ER_UNKNOWN_TIME_ZONE = (1298, "HY000");
    ER_SP_UNDECLARED_VAR = (1327, "42000");
    ER_WRONG_OBJECT = (1347, "HY000");
    ER_NONUPDATEABLE_COLUMN = (1348, "HY000");
    ER_VIEW_WRONG_LIST = (1353, "HY000");
    ER_VIEW_INVALID = (1356, "HY000");
    ER_ILLEGAL_VALUE_FOR_TYPE = (1367, "22007");
    ER_UNKNOWN_TARGET_BINLOG = (1373, "HY000");
    ER_BINLOG_PURGE_FATAL_ERR = (1377, "HY000");
    ER_NO_BINARY_LOGGING = (1381, "HY000");
    ER_CANNOT_USER = (1396, "HY000");
    ER_LOAD_FROM_FIXED_SIZE_ROWS_TO_VAR = (1409, "HY000");
    ER_CANT_CREATE_USER_WITH_GRANT = (1410, "42000");
    ER_FORBID_SCHEMA_CHANGE = (1450, "HY000");
    ER_ROW_IS_REFERENCED_2 = (1451, "23000");
    ER_NO_REFERENCED_ROW_2 = (1452, "23000");
    ER_MAX_PREPARED_STMT_COUNT_REACHED = (1461, "42000");
    ER_VIEW_RECURSIVE = (1462, "HY000");
    ER_WRONG_STRING_LENGTH = (1470, "HY000");
    ER_NON_INSERTABLE_TABLE = (1471, "HY000");
    ER_PLUGIN_IS_NOT_LOADED = (1524, "HY000");
    ER_DROP_INDEX_FK = (1553, "HY000");
    ER_SLAVE_RELAY_LOG_READ_FAILURE = (1594, "HY000");
    ER_SLAVE_CONVERSION_FAILED = (1677, "HY000");
    ER_TRUNCATE_ILLEGAL_FK = (1701, "42000");
    ER_AUTO_POSITION_REQUIRES_GTID_MODE_NOT_OFF = (1777, "HY000");
    ER_NOT_VALID_PASSWORD = (1819, "HY000");
    ER_MUST_CHANGE_PASSWORD = (1820, "HY000");
    ER_FK_NO_INDEX_PARENT = (1822, "HY000");
    ER_FK_CANNOT_OPEN_PARENT = (1824, "HY000");
    ER_FK_DUP_NAME = (1826, "HY000");
    ER_PASSWORD_FORMAT = (1827, "HY000");
    ER_FK_COLUMN_CANNOT_DROP = (1828, "HY000");
    ER_FK_COLUMN_CANNOT_DROP_CHILD = (1829, "HY000");
    ER_FK_COLUMN_NOT_NULL = (1830, "HY000");
    ER_FK_DEPTH_EXCEEDED = (3008, "HY000");
    ER_SLAVE_CHANNEL_IO_THREAD_MUST_STOP = (3021, "HY000");
    ER_USER_LOCK_WRONG_NAME = (3057, "42000");
    ER_USER_LOCK_DEADLOCK = (3058, "HY000");
    ER_SLAVE_CHANNEL_MUST_STOP = (3081, "HY000");
    ER_NON_DEFAULT_VALUE_FOR_GENERATED_COLUMN = (3105, "HY000");
    ER_INVALID_JSON_TEXT = (3140, "22032");
    ER_INVALID_JSON_TEXT_IN_PARAM = (3141, "22032");
    ER_INVALID_JSON_PATH = (3143, "42000");
    ER_INVALID_JSON_PATH_WILDCARD = (3149, "42000");
    ER_JSON_VALUE_TOO_BIG = (3150, "42000");
    ER_JSON_VACUOUS_PATH = (3153, "42000");
    ER_JSON_DOCUMENT_NULL_KEY = (3158, "22032");
    ER_INVALID_JSON_PATH_ARRAY_CELL = (3165, "42000");
    ER_CTE_RECURSIVE_REQUIRES_UNION = (3573, "HY000");
    ER_CTE_RECURSIVE_REQUIRES_NONRECURSIVE_FIRST = (3574, "HY000");
    ER_CTE_RECURSIVE_FORBIDS_AGGREGATION = (3575, "HY000");
    ER_CTE_RECURSIVE_REQUIRES_SINGLE_REFERENCE = (3577, "HY000");
    ER_WINDOW_NO_SUCH_WINDOW = (3579, "HY000");
    ER_WINDOW_NO_CHILD_PARTITIONING = (3581, "HY000");
    ER_WINDOW_NO_INHERIT_FRAME = (3582, "HY000");
    ER_WINDOW_NO_REDEFINE_ORDER_BY = (3583, "HY000");
    ER_WINDOW_INVALID_WINDOW_FUNC_USE = (3593, "HY000");
    ER_CTE_MAX_RECURSION_DEPTH = (3636, "HY000");
    ER_REGEXP_INDEX_OUTOFBOUNDS_ERROR = (3686, "HY000");
    ER_REGEXP_BAD_INTERVAL = (3692, "HY000");
    ER_REGEXP_MAX_LT_MIN = (3693, "HY000");
    ER_REGEXP_TIME_OUT = (3699, "HY000");
    ER_FK_CANNOT_DROP_PARENT = (3730, "HY000");
    ER_FK_NO_COLUMN_PARENT = (3734, "HY000");
    ER_FK_INCOMPATIBLE_COLUMNS = (3780, "HY000");
    ER_CHECK_CONSTRAINT_VIOLATED = (3819, "HY000");
    ER_CHECK_CONSTRAINT_DUP_NAME = (3822, "HY000");
    ER_CONSTRAINT_NOT_FOUND = (3940, "HY000");
    ER_CHECK_CONSTRAINT_NOT_FOUND = (3821, "HY000");
    ER_CLIENT_LOCAL_FILES_DISABLED = (3948, "42000");
    ER_DEPENDENT_BY_CHECK_CONSTRAINT = (3959, "HY000");
    ER_USER_LOCK_OVERLONG_NAME = (4163, "42000");
    EE_WRITE = (3, "HY000");
    ER_ILLEGAL_HA = (1031, "HY000");
    ER_CUT_VALUE_GROUP_CONCAT = (1260, "HY000");
    ER_WARN_DEPRECATED_SYNTAX = (1287, "HY000");
    ER_WARN_ALLOWED_PACKET_OVERFLOWED = (1301, "HY000");
    ER_SP_FETCH_NO_DATA = (1329, "02000");
    ER_SP_ALREADY_EXISTS = (1304, "42000");
    ER_UNKNOWN_EXPLAIN_FORMAT = (1791, "HY000");
    ER_TOO_LONG_IDENT = (1059, "42000");
    ER_TOO_BIG_DISPLAYWIDTH = (1439, "42000");
    ER_PROCACCESS_DENIED_ERROR = (1370, "42000");
    ER_SP_LILABEL_MISMATCH = (1308, "42000");
    ER_SP_LABEL_MISMATCH = (1310, "42000");
    ER_SP_BADRETURN = (1313, "42000");
    ER_SP_BADSTATEMENT = (1314, "0A000");
    ER_SP_WRONG_NO_OF_ARGS = (1318, "42000");
    ER_SP_COND_MISMATCH = (1319, "42000");
    ER_SP_NORETURN = (1320, "42000");
    ER_SP_NORETURNEND = (1321, "2F005");
    ER_SP_CURSOR_MISMATCH = (1324, "42000");
    ER_SP_BAD_CURSOR_QUERY = (1322, "42000");
    ER_SP_BAD_CURSOR_SELECT = (1323, "42000");
    ER_SP_LABEL_REDEFINE = (1309, "42000");
    ER_SP_CASE_NOT_FOUND = (1339, "20000");
    ER_SP_CURSOR_ALREADY_OPEN = (1325, "24000");
    ER_SP_CURSOR_NOT_OPEN = (1326, "24000");
    ER_SP_WRONG_NO_OF_FETCH_ARGS = (1328, "HY000");
    ER_SP_DUP_VAR = (1331, "42000");
    ER_SP_DUP_COND = (1332, "42000");
    ER_SP_DUP_CURS = (1333, "42000");
    ER_SP_VARCOND_AFTER_CURSHNDLR = (1337, "42000");
    ER_SP_CURSOR_AFTER_HANDLER = (1338, "42000");
    ER_TRG_ALREADY_EXISTS = (1359, "HY000");
    ER_TRG_DOES_NOT_EXIST = (1360, "HY000");
    ER_TRG_ON_VIEW_OR_TEMP_TABLE = (1361, "HY000");
    ER_TRG_CANT_CHANGE_ROW = (1362, "HY000");
    ER_TRG_NO_SUCH_ROW_IN_TRG = (1363, "HY000");
    ER_SP_BAD_SQLSTATE = (1407, "42000");
    ER_SP_DUP_HANDLER = (1413, "42000");
    ER_SP_NOT_VAR_ARG = (1414, "42000");
    ER_SP_NO_RETSET = (1415, "0A000");
    ER_COMMIT_NOT_ALLOWED_IN_SF_OR_TRG = (1422, "HY000");
    ER_SP_NO_RECURSION = (1424, "HY000");
    ER_TRG_IN_WRONG_SCHEMA = (1435, "HY000");
    ER_CANT_UPDATE_USED_TABLE_IN_SF_OR_TRG = (1442, "HY000");
    ER_SP_RECURSION_LIMIT = (1456, "HY000");
    ER_SIGNAL_WARN = (1642, "01000");
    ER_SIGNAL_NOT_FOUND = (1643, "02000");
    ER_SIGNAL_EXCEPTION = (1644, "HY000");
    ER_RESIGNAL_WITHOUT_ACTIVE_HANDLER = (1645, "0K000");
    ER_SIGNAL_BAD_CONDITION_TYPE = (1646, "HY000");
    ER_REFERENCED_TRG_DOES_NOT_EXIST = (3011, "HY000");
    ER_SLAVE_FATAL_ERROR = (1593, "HY000");
    ER_WARN_PURGE_LOG_IN_USE = (1867, "HY000");
    ER_SLAVE_CHANNEL_WAS_RUNNING = (3083, "HY000");
    ER_SLAVE_CHANNEL_WAS_NOT_RUNNING = (3084, "HY000");
    ER_USER_DOES_NOT_EXIST = (3162, "HY000");
    ER_USER_ALREADY_EXISTS = (3163, "HY000");
}

impl SqlError {
    #[must_use]
    pub fn new(code: (u16, &'static str), message: impl Into<String>) -> SqlError {
        SqlError { code: code.0, state: std::borrow::Cow::Borrowed(code.1), message: message.into(), rolls_back_transaction: false, wait: None }
    }

    /// The statement must wait before it can go on (see [`Wait`]).
    #[must_use]
    pub fn must_wait(wait: Wait) -> SqlError {
        // What a client would read should a stop reach it where no wait can be made.
        let base = match wait {
            Wait::RowLock => SqlError::lock_wait_timeout(),
            Wait::Function => SqlError::internal("this statement cannot wait in GET_LOCK or SLEEP"),
            Wait::DdlGate => SqlError::new(codes::ER_LOCK_WAIT_TIMEOUT, "Waiting for a checkpoint to finish"),
        };
        SqlError { wait: Some(wait), ..base }
    }

    /// The wait this stop asks for; `None` for an error to report.
    #[must_use]
    pub fn wait(&self) -> Option<Wait> {
        self.wait
    }

    #[must_use]
    pub fn parse(near: &str) -> SqlError {
        SqlError::new(
            codes::ER_PARSE_ERROR,
            format!(
                "You have an error in your SQL syntax; check the manual that corresponds to your MySQL server version for the right syntax to use near '{near}' at line 1"
            ),
        )
    }

    #[must_use]
    pub fn unsupported(what: impl fmt::Display) -> SqlError {
        SqlError::new(codes::ER_NOT_SUPPORTED_YET, format!("This version of MySQL doesn't yet support '{what}'"))
    }

    #[must_use]
    pub fn no_such_table(db: &str, table: &str) -> SqlError {
        SqlError::new(codes::ER_NO_SUCH_TABLE, format!("Table '{db}.{table}' doesn't exist"))
    }

    #[must_use]
    pub fn bad_field(name: &str, clause: &str) -> SqlError {
        SqlError::new(codes::ER_BAD_FIELD_ERROR, format!("Unknown column '{name}' in '{clause}'"))
    }

    #[must_use]
    pub fn unknown_db(db: &str) -> SqlError {
        SqlError::new(codes::ER_BAD_DB_ERROR, format!("Unknown database '{db}'"))
    }

    #[must_use]
    pub fn internal(msg: impl Into<String>) -> SqlError {
        SqlError::new(codes::ER_UNKNOWN_ERROR, msg)
    }

    /// KILL QUERY (or KILL CONNECTION) stopped the statement.
    #[must_use]
    pub fn query_interrupted() -> SqlError {
        SqlError::new(codes::ER_QUERY_INTERRUPTED, "Query execution was interrupted")
    }

    /// The SELECT ran past `max_execution_time`.
    #[must_use]
    pub fn query_timeout() -> SqlError {
        SqlError::new(codes::ER_QUERY_TIMEOUT, "Query execution was interrupted, maximum statement execution time exceeded")
    }

    #[must_use]
    pub fn lock_wait_timeout() -> SqlError {
        SqlError::new(codes::ER_LOCK_WAIT_TIMEOUT, "Lock wait timeout exceeded; try restarting transaction")
    }

    /// This transaction's lock request closed a cycle of waits: it is the victim.
    #[must_use]
    pub fn deadlock() -> SqlError {
        SqlError {
            rolls_back_transaction: true,
            ..SqlError::new(codes::ER_LOCK_DEADLOCK, "Deadlock found when trying to get lock; try restarting transaction")
        }
    }

    #[must_use]
    pub fn no_db() -> SqlError {
        SqlError::new(codes::ER_NO_DB_ERROR, "No database selected")
    }
}

/// A note, warning or error recorded for `SHOW WARNINGS`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    pub level: &'static str,
    pub code: u16,
    pub message: String,
}
