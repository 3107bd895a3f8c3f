//! Scalar functions: name lookup ([`Func`]), result types, and evaluation ([`call`]).
//!
//! `call` evaluates what must see its arguments unevaluated (IF, IFNULL, COALESCE, user
//! variables), handles NULL arguments and the `max_allowed_packet` bound of the functions
//! that build large values (`built_bytes`, warning 1301), then hands the arguments' values to
//! the family of the function: `strings`, `temporal`, `numeric`, `cast`, `user_locks`; JSON
//! and REGEXP functions are `quill_sql_types`'. What needs the session (LAST_INSERT_ID,
//! DATABASE(), CURRENT_USER) is answered here.

use quill_storage::{Collation, Value};

use crate::expr::{Expr, RowCtx};
use crate::query::Env;
use quill_sql_types::error::{Result, codes};
use quill_sql_types::ops;
use quill_sql_types::types::{self, IntKind, LobKind, SqlType};

mod cast;
mod numeric;
mod strings;
mod temporal;
mod user_locks;

pub use cast::{CAST_LENGTH_UNSIZED, cast, cast_in};
pub use numeric::Math;
pub use user_locks::{USER_LOCK_NAME_CHARS_MAX, lock_name};

use user_locks::user_lock;

/// Units of INTERVAL and TIMESTAMPDIFF.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Microsecond,
    Second,
    Minute,
    Hour,
    Day,
    Week,
    Month,
    Quarter,
    Year,
}

impl Unit {
    #[must_use]
    pub fn parse(s: &str) -> Option<Unit> {
        Some(match s.to_ascii_uppercase().as_str() {
            "MICROSECOND" | "MICROSECONDS" => Unit::Microsecond,
            "SECOND" | "SECONDS" => Unit::Second,
            "MINUTE" | "MINUTES" => Unit::Minute,
            "HOUR" | "HOURS" => Unit::Hour,
            "DAY" | "DAYS" => Unit::Day,
            "WEEK" | "WEEKS" => Unit::Week,
            "MONTH" | "MONTHS" => Unit::Month,
            "QUARTER" => Unit::Quarter,
            "YEAR" | "YEARS" => Unit::Year,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Func {
    Concat,
    ConcatWs,
    Length,
    CharLength,
    Substring,
    Left,
    Right,
    Lower,
    Upper,
    Trim,
    LTrim,
    RTrim,
    /// TRIM(BOTH|LEADING|TRAILING x FROM s): (which: 0 both, 1 leading, 2 trailing).
    TrimChars(u8),
    Replace,
    /// INSERT(str, pos, len, newstr): `str` with `len` characters from `pos` replaced.
    InsertStr,
    Lpad,
    Rpad,
    Repeat,
    Reverse,
    Instr,
    /// A regular expression function (`regexp`); `true` when the subject's collation
    /// ignores case (the match type may say otherwise).
    Regexp(quill_sql_types::regexp::RegexpFunc, bool),
    /// A JSON function (`json`).
    Json(quill_sql_types::json::JsonFunc),
    /// An SQL value made JSON for a JSON function (`json::JsonFunc::FromSql`): whether it is
    /// JSON already, and whether it is a truth value.
    ToJson(bool, bool),
    /// `FIND_IN_SET(s, list)`: 1-based place of `s` in the comma-separated `list`, 0 if absent.
    FindInSet,
    /// `FIELD(s, a, b, ...)`: 1-based place of `s` among the rest, 0 if absent.
    Field,
    /// `ELT(n, a, b, ...)`: the n-th of the rest, NULL out of range.
    Elt,
    Locate,
    /// A user variable read as each row is evaluated, in a statement that assigns user
    /// variables: `(name, its value when bound)`, the second only typing the read.
    UserVar,
    /// `@name := value`: sets the user variable, gives the value.
    SetUserVar,
    /// `CHAR(n, ...)`: the bytes of each integer (big-endian, without leading zero bytes),
    /// NULLs skipped: a binary string.
    Char,
    Hex,
    /// MD5(s), SHA1(s) / SHA(s), SHA2(s, bits): the digest of the argument's bytes in lowercase
    /// hex digits.
    Md5,
    Sha1,
    Sha2,
    /// ORD(s): the code of the leftmost character, its bytes read as a big-endian number.
    Ord,
    Space,
    Now(u8),
    SysDate(u8),
    CurDate,
    CurTime(u8),
    UtcTimestamp(u8),
    UnixTimestamp,
    FromUnixtime,
    /// CONVERT_TZ(datetime, from_zone, to_zone) (`time_zone`).
    ConvertTz,
    /// UUID(): a version-1 UUID as text.
    Uuid,
    TimestampDiff(Unit),
    DateDiff,
    /// DATE_ADD / DATE_SUB: (unit, subtract).
    DateAdd(Unit, bool),
    Date,
    Time,
    Year,
    Month,
    Day,
    Hour,
    Minute,
    Second,
    Microsecond,
    DayOfWeek,
    /// WEEKDAY(d): 0 for Monday to 6 for Sunday.
    Weekday,
    DayOfYear,
    Quarter,
    /// WEEK(d[, mode]) and YEARWEEK(d[, mode]): MySQL's eight week modes (`temporal::week`).
    Week,
    YearWeek,
    TimeToSec,
    /// MAKEDATE(year, day_of_year).
    MakeDate,
    DateFormat,
    Round,
    Truncate,
    Floor,
    Ceil,
    Abs,
    Mod,
    Sign,
    Power,
    Sqrt,
    /// A function of real numbers computed in DOUBLE (`numeric::math`): LN, LOG, EXP, the
    /// trigonometric functions, DEGREES and RADIANS.
    Math(Math),
    Rand,
    Greatest,
    Least,
    If,
    IfNull,
    NullIf,
    Coalesce,
    LastInsertId,
    RowCount,
    FoundRows,
    Database,
    Version,
    ConnectionId,
    User,
    CurrentUser,
    IsNullFn,
    /// User-level locks (`txn::user_locks`).
    GetLock,
    ReleaseLock,
    ReleaseAllLocks,
    IsFreeLock,
    IsUsedLock,
    /// SLEEP(seconds): waits, then 0 (`statement_waits`).
    Sleep,
    /// WAIT_FOR_TABLE_COMMIT(table, position[, timeout]) (`commit_notify`).
    WaitForTableCommit,
    /// A DATETIME or TIME as text with a fixed number of fractional digits: what
    /// string functions see of a temporal argument.
    TemporalText(u8),
}

impl Func {
    /// Look a function up by name; `None` if Quill has no such function.
    #[must_use]
    pub fn by_name(name: &str, argc: usize) -> Option<Func> {
        Some(match name.to_ascii_uppercase().as_str() {
            "CONCAT" => Func::Concat,
            "CONCAT_WS" => Func::ConcatWs,
            "LENGTH" | "OCTET_LENGTH" => Func::Length,
            "CHAR_LENGTH" | "CHARACTER_LENGTH" => Func::CharLength,
            "SUBSTRING" | "SUBSTR" | "MID" => Func::Substring,
            "LEFT" => Func::Left,
            "RIGHT" => Func::Right,
            "LOWER" | "LCASE" => Func::Lower,
            "UPPER" | "UCASE" => Func::Upper,
            "TRIM" => Func::Trim,
            "LTRIM" => Func::LTrim,
            "RTRIM" => Func::RTrim,
            "REPLACE" => Func::Replace,
            "INSERT" => Func::InsertStr,
            "LPAD" => Func::Lpad,
            "RPAD" => Func::Rpad,
            "REPEAT" => Func::Repeat,
            "REVERSE" => Func::Reverse,
            "INSTR" => Func::Instr,
            "FIND_IN_SET" => Func::FindInSet,
            "FIELD" => Func::Field,
            "ELT" => Func::Elt,
            "LOCATE" | "POSITION" => Func::Locate,
            "HEX" => Func::Hex,
            "MD5" => Func::Md5,
            "SHA1" | "SHA" => Func::Sha1,
            "SHA2" => Func::Sha2,
            "ORD" => Func::Ord,
            "CHAR" => Func::Char,
            "SPACE" => Func::Space,
            "NOW" | "CURRENT_TIMESTAMP" | "LOCALTIME" | "LOCALTIMESTAMP" => Func::Now(0),
            "SYSDATE" => Func::SysDate(0),
            "CURDATE" | "CURRENT_DATE" => Func::CurDate,
            "CURTIME" | "CURRENT_TIME" => Func::CurTime(0),
            "UTC_TIMESTAMP" => Func::UtcTimestamp(0),
            "UNIX_TIMESTAMP" => Func::UnixTimestamp,
            "FROM_UNIXTIME" => Func::FromUnixtime,
            "CONVERT_TZ" => Func::ConvertTz,
            "UUID" => Func::Uuid,
            json if json.starts_with("JSON_") => Func::Json(quill_sql_types::json::JsonFunc::named(json)?),
            regexp if regexp.starts_with("REGEXP_") => Func::Regexp(quill_sql_types::regexp::RegexpFunc::named(regexp)?, true),
            "DATEDIFF" => Func::DateDiff,
            "DATE" => Func::Date,
            "TIME" => Func::Time,
            "YEAR" => Func::Year,
            "MONTH" => Func::Month,
            "DAY" | "DAYOFMONTH" => Func::Day,
            "HOUR" => Func::Hour,
            "MINUTE" => Func::Minute,
            "SECOND" => Func::Second,
            "MICROSECOND" => Func::Microsecond,
            "DAYOFWEEK" => Func::DayOfWeek,
            "WEEKDAY" => Func::Weekday,
            "DAYOFYEAR" => Func::DayOfYear,
            "QUARTER" => Func::Quarter,
            "WEEK" => Func::Week,
            "YEARWEEK" => Func::YearWeek,
            "TIME_TO_SEC" => Func::TimeToSec,
            "MAKEDATE" => Func::MakeDate,
            "DATE_FORMAT" => Func::DateFormat,
            "ROUND" => Func::Round,
            "TRUNCATE" => Func::Truncate,
            "FLOOR" => Func::Floor,
            "CEIL" | "CEILING" => Func::Ceil,
            "ABS" => Func::Abs,
            "MOD" => Func::Mod,
            "SIGN" => Func::Sign,
            "POW" | "POWER" => Func::Power,
            "SQRT" => Func::Sqrt,
            "LN" => Func::Math(Math::Ln),
            "LOG" => Func::Math(Math::Log),
            "LOG2" => Func::Math(Math::Log2),
            "LOG10" => Func::Math(Math::Log10),
            "EXP" => Func::Math(Math::Exp),
            "SIN" => Func::Math(Math::Sin),
            "COS" => Func::Math(Math::Cos),
            "TAN" => Func::Math(Math::Tan),
            "COT" => Func::Math(Math::Cot),
            "ASIN" => Func::Math(Math::Asin),
            "ACOS" => Func::Math(Math::Acos),
            "ATAN" => Func::Math(Math::Atan),
            "ATAN2" => Func::Math(Math::Atan2),
            "DEGREES" => Func::Math(Math::Degrees),
            "RADIANS" => Func::Math(Math::Radians),
            "RAND" => Func::Rand,
            "GREATEST" => Func::Greatest,
            "LEAST" => Func::Least,
            "IF" => Func::If,
            "IFNULL" => Func::IfNull,
            "NULLIF" => Func::NullIf,
            "COALESCE" => Func::Coalesce,
            "LAST_INSERT_ID" => Func::LastInsertId,
            "ROW_COUNT" => Func::RowCount,
            "FOUND_ROWS" => Func::FoundRows,
            "DATABASE" | "SCHEMA" => Func::Database,
            "VERSION" => Func::Version,
            "CONNECTION_ID" => Func::ConnectionId,
            "USER" | "SESSION_USER" | "SYSTEM_USER" => Func::User,
            "CURRENT_USER" => Func::CurrentUser,
            "ISNULL" if argc == 1 => Func::IsNullFn,
            "GET_LOCK" => Func::GetLock,
            "RELEASE_LOCK" => Func::ReleaseLock,
            "RELEASE_ALL_LOCKS" => Func::ReleaseAllLocks,
            "IS_FREE_LOCK" => Func::IsFreeLock,
            "IS_USED_LOCK" => Func::IsUsedLock,
            "SLEEP" => Func::Sleep,
            "WAIT_FOR_TABLE_COMMIT" => Func::WaitForTableCommit,
            _ => return None,
        })
    }

    /// Allowed argument counts.
    #[must_use]
    pub fn arity(self) -> (usize, usize) {
        use Func::*;
        match self {
            Concat | Coalesce | Greatest | Least | Char => (1, usize::MAX),
            UserVar | SetUserVar => (2, 2),
            ConcatWs | Field | Elt => (2, usize::MAX),
            FindInSet => (2, 2),
            Json(j) => j.arity(),
            Regexp(r, _) => r.arity(),
            ToJson(..) => (1, 1),
            Length | CharLength | Lower | Upper | Trim | LTrim | RTrim | Reverse | Hex | Md5 | Sha1 | Ord | Space | Date | Time | Year | Month | Day | Hour
            | Minute | Second | Microsecond | DayOfWeek | Floor | Ceil | Abs | Sign | Sqrt | IsNullFn | FromUnixtime | TemporalText(_) => (1, 1),
            Weekday | DayOfYear | Quarter | TimeToSec => (1, 1),
            Week | YearWeek => (1, 2),
            MakeDate => (2, 2),
            Substring => (2, 3),
            Left | Right | Repeat | Instr | DateDiff | DateFormat | Mod | Power | IfNull | NullIf | TrimChars(_) | DateAdd(..) | Truncate => (2, 2),
            Sha2 => (2, 2),
            Replace | Lpad | Rpad | If | ConvertTz => (3, 3),
            InsertStr => (4, 4),
            TimestampDiff(_) => (2, 2),
            Locate => (2, 3),
            Now(_) | SysDate(_) | CurTime(_) | UtcTimestamp(_) | LastInsertId | UnixTimestamp | Rand => (0, 1),
            Round => (1, 2),
            Math(numeric::Math::Log | numeric::Math::Atan) => (1, 2),
            Math(numeric::Math::Atan2) => (2, 2),
            Math(_) => (1, 1),
            CurDate | RowCount | FoundRows | Database | Version | ConnectionId | User | CurrentUser | ReleaseAllLocks | Uuid => (0, 0),
            ReleaseLock | IsFreeLock | IsUsedLock | Sleep => (1, 1),
            GetLock => (2, 2),
            WaitForTableCommit => (2, 3),
        }
    }

    /// Functions that read their arguments as text.
    #[must_use]
    pub fn takes_strings(self) -> bool {
        use Func::*;
        matches!(
            self,
            Concat
                | ConcatWs
                | Length
                | CharLength
                | Substring
                | Left
                | Right
                | Lower
                | Upper
                | Trim
                | LTrim
                | RTrim
                | Replace
                | InsertStr
                | Lpad
                | Rpad
                | Reverse
                | Instr
                | Locate
                | FindInSet
                | Md5
                | Sha1
                | Sha2
                | Ord
        )
    }

    /// Functions that may stop their statement to wait, or act, so that it runs again
    /// (`statement_waits`).
    #[must_use]
    pub fn may_wait(self) -> bool {
        matches!(self, Func::GetLock | Func::ReleaseLock | Func::ReleaseAllLocks | Func::Sleep | Func::WaitForTableCommit)
    }

    /// Functions whose value changes between calls within one statement.
    #[must_use]
    pub fn is_deterministic(self) -> bool {
        !matches!(
            self,
            Func::Rand
                | Func::UserVar
                | Func::SetUserVar
                | Func::Uuid
                | Func::SysDate(_)
                | Func::GetLock
                | Func::ReleaseLock
                | Func::ReleaseAllLocks
                | Func::IsFreeLock
                | Func::IsUsedLock
                | Func::Sleep
                | Func::WaitForTableCommit
        )
    }

    /// The result type, given the argument types.
    #[must_use]
    pub fn result_type(self, args: &[SqlType]) -> SqlType {
        use Func::*;
        let text = SqlType::VarChar { len: 255, collation: Collation::default() };
        let int = SqlType::bigint();
        match self {
            // HEX always gives text (hex digits), whatever its argument.
            Hex => text,
            Md5 => SqlType::VarChar { len: 32, collation: Collation::default() },
            Sha1 => SqlType::VarChar { len: 40, collation: Collation::default() },
            Sha2 => SqlType::VarChar { len: 128, collation: Collation::default() },
            Ord => int,
            Char => SqlType::VarBinary(255),
            UserVar | SetUserVar => args.get(1).cloned().unwrap_or(text),
            Concat | ConcatWs | Substring | Left | Right | Lower | Upper | Trim | LTrim | RTrim | TrimChars(_) | Replace | InsertStr | Lpad | Rpad | Repeat
            | Reverse | Space | DateFormat => {
                if args.first().is_some_and(|t| t.is_binary()) {
                    SqlType::Blob(LobKind::Long)
                } else {
                    text
                }
            }
            Database | Version | User | CurrentUser | TemporalText(_) => text,
            Uuid => SqlType::VarChar { len: 36, collation: Collation::default() },
            Length | CharLength | Instr | Locate | FindInSet | Field | TimestampDiff(_) | DateDiff | Year | Month | Day | Hour | Minute | Second
            | Microsecond | DayOfWeek | Sign | RowCount | IsNullFn => int,
            Weekday | DayOfYear | Quarter | Week | YearWeek => int,
            // Seconds with the argument's fractional digits: a temporal type says how many; text
            // may hold up to six (MySQL reads a constant's at prepare time; the value here has
            // as many as it needs, so '22:23:00' still reads as 80580).
            TimeToSec => match args.first() {
                Some(SqlType::Time(0) | SqlType::DateTime(0) | SqlType::Timestamp(0) | SqlType::Date) => int,
                Some(SqlType::Time(f) | SqlType::DateTime(f) | SqlType::Timestamp(f)) => SqlType::Decimal { precision: 17, scale: *f, unsigned: false },
                _ => SqlType::Decimal { precision: 17, scale: 6, unsigned: false },
            },
            MakeDate => SqlType::Date,
            LastInsertId | ConnectionId | FoundRows | IsUsedLock | ReleaseAllLocks | WaitForTableCommit => {
                SqlType::Int { kind: IntKind::Big, unsigned: true, display: None }
            }
            GetLock | ReleaseLock | IsFreeLock | Sleep => int,
            Now(f) | SysDate(f) | UtcTimestamp(f) => SqlType::DateTime(f),
            CurDate | Date => SqlType::Date,
            CurTime(f) => SqlType::Time(f),
            Time => SqlType::Time(6),
            UnixTimestamp => {
                if args.is_empty() {
                    int
                } else {
                    SqlType::Decimal { precision: 20, scale: 6, unsigned: false }
                }
            }
            FromUnixtime => SqlType::DateTime(0),
            ConvertTz => match args.first() {
                Some(SqlType::DateTime(f) | SqlType::Timestamp(f)) => SqlType::DateTime(*f),
                // A literal without a fraction, the usual argument (as DATE_ADD takes it).
                _ => SqlType::DateTime(0),
            },
            DateAdd(unit, _) => match args.first() {
                Some(SqlType::Date) if matches!(unit, Unit::Day | Unit::Week | Unit::Month | Unit::Quarter | Unit::Year) => SqlType::Date,
                Some(SqlType::DateTime(f) | SqlType::Timestamp(f)) => SqlType::DateTime(if unit == Unit::Microsecond { 6 } else { *f }),
                _ => SqlType::DateTime(if unit == Unit::Microsecond { 6 } else { 0 }),
            },
            Round | Truncate | Floor | Ceil | Abs | Mod => match args.first() {
                Some(t @ SqlType::Int { .. }) => t.clone(),
                Some(SqlType::Decimal { precision, scale, unsigned }) if matches!(self, Abs | Mod) => {
                    SqlType::Decimal { precision: *precision, scale: *scale, unsigned: *unsigned }
                }
                Some(SqlType::Decimal { precision, .. }) if matches!(self, Floor | Ceil) => {
                    SqlType::Decimal { precision: *precision, scale: 0, unsigned: false }
                }
                Some(SqlType::Decimal { .. }) => SqlType::Decimal { precision: 65, scale: types::DECIMAL_SCALE_NOT_FIXED, unsigned: false },
                _ => SqlType::Double,
            },
            Power | Sqrt | Math(_) | Rand => SqlType::Double,
            Greatest | Least | Coalesce | IfNull => crate::type_aggregation::aggregate(args),
            If => crate::type_aggregation::aggregate(args.get(1..).unwrap_or_default()),
            NullIf => args.first().cloned().unwrap_or(SqlType::Null),
            Elt => text,
            ToJson(..) => SqlType::Json,
            Regexp(quill_sql_types::regexp::RegexpFunc::Like | quill_sql_types::regexp::RegexpFunc::Instr, _) => int,
            Regexp(..) => text,
            Json(j) if j.returns_json() => SqlType::Json,
            Json(j) if j.returns_number() => int,
            Json(_) => SqlType::Text { kind: LobKind::Long, collation: Collation::Utf8mb4Bin },
        }
    }
}

/// For a function that builds a value larger than its arguments (REPEAT, SPACE, LPAD,
/// RPAD, CONCAT, CONCAT_WS, REPLACE, INSERT), its name and the size in bytes of the value it would
/// build, reckoned before building it: a result larger than `max_allowed_packet` is NULL
/// with warning 1301, as in MySQL, and never takes the memory.
fn built_bytes(f: Func, vals: &[Value]) -> Option<(&'static str, u128)> {
    use Func::*;
    let bytes = |v: &Value| -> u128 {
        match v {
            Value::Str(s) => s.len() as u128,
            Value::Bytes(b) => b.len() as u128,
            Value::Null => 0,
            other => str_arg(other).len() as u128,
        }
    };
    let count = |v: &Value| u128::try_from(int_arg(v)).unwrap_or(0);
    Some(match f {
        Repeat => ("repeat", bytes(&vals[0]) * count(&vals[1])),
        Space => ("space", count(&vals[0])),
        Lpad | Rpad => {
            let wanted = count(&vals[1]);
            let subject = str_arg(&vals[0]);
            let have = subject.chars().count() as u128;
            let pad = str_arg(&vals[2]);
            let pad_chars = pad.chars().count().max(1) as u128;
            let fill = wanted.saturating_sub(have) * pad.len() as u128 / pad_chars;
            (if f == Lpad { "lpad" } else { "rpad" }, subject.len() as u128 + fill)
        }
        Concat => ("concat", vals.iter().map(bytes).sum()),
        ConcatWs => {
            let parts = vals[1..].iter().filter(|v| !v.is_null());
            let separators = (parts.clone().count().saturating_sub(1)) as u128;
            ("concat_ws", parts.map(bytes).sum::<u128>() + separators * bytes(&vals[0]))
        }
        InsertStr => ("insert", bytes(&vals[0]) + bytes(&vals[3])),
        Replace => {
            let (subject, from, to) = (str_arg(&vals[0]), str_arg(&vals[1]), str_arg(&vals[2]));
            let grows = to.len().saturating_sub(from.len()) as u128;
            if from.is_empty() || grows == 0 {
                return None;
            }
            ("replace", subject.len() as u128 + subject.matches(from.as_str()).count() as u128 * grows)
        }
        _ => return None,
    })
}

fn str_arg(v: &Value) -> String {
    ops::to_string_lossy(v)
}

fn int_arg(v: &Value) -> i64 {
    ops::to_i128(v).clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

/// Evaluate a function call. Arguments are evaluated lazily where SQL requires it
/// (IF, IFNULL, COALESCE).
///
/// # Errors
/// Errors of the arguments, and range errors.
pub fn call(f: Func, args: &[Expr], env: &Env<'_>, cx: &RowCtx<'_>) -> Result<Value> {
    use Func::*;
    match f {
        If => {
            let c = ops::truth(&args[0].eval(env, cx)?) == Some(true);
            return args[if c { 1 } else { 2 }].eval(env, cx);
        }
        UserVar => {
            let name = args[0].constant().map(ops::to_string_lossy).unwrap_or_default();
            return Ok(env.info.user_variable(&name));
        }
        SetUserVar => {
            let name = args[0].constant().map(ops::to_string_lossy).unwrap_or_default().to_ascii_lowercase();
            let value = args[1].eval(env, cx)?;
            env.info.user_vars.borrow_mut().insert(name, value.clone());
            return Ok(value);
        }
        IfNull | Coalesce => {
            for a in args {
                let v = a.eval(env, cx)?;
                if !v.is_null() {
                    return Ok(v);
                }
            }
            return Ok(Value::Null);
        }
        _ => {}
    }
    let vals: Vec<Value> = args.iter().map(|a| a.eval(env, cx)).collect::<Result<_>>()?;
    if matches!(f, GetLock | ReleaseLock | ReleaseAllLocks | IsFreeLock | IsUsedLock | Sleep | WaitForTableCommit) {
        return user_lock(f, &vals, env);
    }
    if let Json(j) = f {
        return quill_sql_types::json::call(j, &vals, &[]);
    }
    if let Regexp(r, case_insensitive) = f {
        return quill_sql_types::regexp::call(r, &vals, if case_insensitive { Collation::Utf8mb4AiCi } else { Collation::Utf8mb4Bin });
    }
    if let ToJson(json, boolean) = f {
        return quill_sql_types::json::call(quill_sql_types::json::JsonFunc::FromSql, &vals, &[(json, boolean)]);
    }
    let null_in = vals.iter().any(Value::is_null);
    let propagates_null =
        !matches!(f, ConcatWs | Field | Elt | Greatest | Least | NullIf | IsNullFn | LastInsertId | UnixTimestamp | Rand | Now(_) | SysDate(_) | Char);
    if null_in && propagates_null {
        return Ok(Value::Null);
    }
    let info = env.info;
    if let Some((name, bytes)) = built_bytes(f, &vals) {
        let limit = info.max_allowed_packet();
        if bytes > u128::from(limit) {
            info.warn(codes::ER_WARN_ALLOWED_PACKET_OVERFLOWED.0, format!("Result of {name}() was larger than max_allowed_packet ({limit}) - truncated"));
            return Ok(Value::Null);
        }
    }
    Ok(match f {
        Concat | ConcatWs | Char | Length | CharLength | Substring | Left | Right | Lower | Upper | Trim | LTrim | RTrim | TrimChars(..) | Replace | Lpad
        | Rpad | Repeat | Reverse | InsertStr | Space | FindInSet | Field | Elt | Instr | Locate | Hex | Md5 | Sha1 | Sha2 | Ord => strings::call(f, &vals)?,
        Now(..) | SysDate(..) | UtcTimestamp(..) | CurDate | CurTime(..) | UnixTimestamp | FromUnixtime | ConvertTz | Uuid | TimestampDiff(..) | DateDiff
        | DateAdd(..) | Date | Time | Year | Month | Day | Hour | Minute | Second | Microsecond | DayOfWeek | DateFormat | TemporalText(..) | Weekday
        | DayOfYear | Quarter | Week | YearWeek | TimeToSec | MakeDate => temporal::call(f, &vals, env)?,
        Round | Truncate | Floor | Ceil | Abs | Mod | Sign | Power | Sqrt | Rand => numeric::call(f, &vals)?,
        Math(m) => numeric::math(m, &vals, info)?,
        Greatest | Least => {
            if null_in {
                return Ok(Value::Null);
            }
            let mut best = vals[0].clone();
            for v in &vals[1..] {
                let o = ops::sort_cmp(v, &best, Collation::default());
                if (f == Greatest && o == std::cmp::Ordering::Greater) || (f == Least && o == std::cmp::Ordering::Less) {
                    best = v.clone();
                }
            }
            best
        }
        NullIf => {
            if ops::compare(&vals[0], &vals[1], Collation::default()) == Some(std::cmp::Ordering::Equal) {
                Value::Null
            } else {
                vals[0].clone()
            }
        }
        IsNullFn => Value::Int(i64::from(vals[0].is_null())),
        LastInsertId => match vals.first() {
            Some(v) => {
                info.last_insert_id.set(ops::to_i128(v).clamp(0, i128::from(u64::MAX)) as u64);
                info.last_insert_id_assigned.set(true);
                v.clone()
            }
            None => Value::UInt(info.last_insert_id.get()),
        },
        RowCount => Value::Int(info.row_count),
        FoundRows => Value::UInt(info.found_rows),
        Database => info.db.clone().map_or(Value::Null, Value::Str),
        Version => Value::Str(quill_sql_types::SERVER_VERSION.to_owned()),
        ConnectionId => Value::UInt(u64::from(info.connection_id)),
        User => Value::Str(format!("{}@{}", info.user, info.host)),
        CurrentUser => Value::Str(format!("{}@{}", info.user, info.account_host)),
        If | IfNull | Coalesce => unreachable!("handled before argument evaluation"),
        Json(_) | ToJson(..) | Regexp(..) | UserVar | SetUserVar => unreachable!("JSON, regular expression and user variable functions return above"),
        GetLock | ReleaseLock | ReleaseAllLocks | IsFreeLock | IsUsedLock | Sleep | WaitForTableCommit => {
            unreachable!("handled by user_lock")
        }
    })
}

#[cfg(test)]
mod tests {
    use super::temporal::timestamp_diff;
    use super::*;

    #[test]
    fn timestampdiff_counts_whole_units() {
        let a = types::parse_datetime("2024-01-31 00:00:00").unwrap().0;
        let b = types::parse_datetime("2024-02-29 00:00:00").unwrap().0;
        assert_eq!(timestamp_diff(Unit::Month, a, b), 0);
        assert_eq!(timestamp_diff(Unit::Day, a, b), 29);
        assert_eq!(timestamp_diff(Unit::Microsecond, a, a + 5), 5);
    }
}
