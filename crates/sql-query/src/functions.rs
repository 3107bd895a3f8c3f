//! Scalar functions: name lookup, result types and evaluation.

use chrono::{Datelike, Duration, Months, NaiveDateTime, Timelike};
use quill_storage::{Collation, Value};

use quill_storage::{Decimal, RoundingStrategy};

use crate::expr::{Expr, RowCtx};
use crate::query::Env;
use quill_sql_types::error::{Result, SqlError, Wait, codes};
use quill_sql_types::ops;
use quill_sql_types::types::{self, IntKind, LobKind, SqlType};

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
            Length | CharLength | Lower | Upper | Trim | LTrim | RTrim | Reverse | Hex | Space | Date | Time | Year | Month | Day | Hour | Minute | Second
            | Microsecond | DayOfWeek | Floor | Ceil | Abs | Sign | Sqrt | IsNullFn | FromUnixtime | TemporalText(_) => (1, 1),
            Substring => (2, 3),
            Left | Right | Repeat | Instr | DateDiff | DateFormat | Mod | Power | IfNull | NullIf | TrimChars(_) | DateAdd(..) | Truncate => (2, 2),
            Replace | Lpad | Rpad | If | ConvertTz => (3, 3),
            InsertStr => (4, 4),
            TimestampDiff(_) => (2, 2),
            Locate => (2, 3),
            Now(_) | SysDate(_) | CurTime(_) | UtcTimestamp(_) | LastInsertId | UnixTimestamp | Rand => (0, 1),
            Round => (1, 2),
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
            Power | Sqrt | Rand => SqlType::Double,
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

/// MySQL's warning for a function result larger than `max_allowed_packet` (the result is NULL).
const ER_WARN_ALLOWED_PACKET_OVERFLOWED: u16 = 1301;

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
            info.warn(ER_WARN_ALLOWED_PACKET_OVERFLOWED, format!("Result of {name}() was larger than max_allowed_packet ({limit}) - truncated"));
            return Ok(Value::Null);
        }
    }
    Ok(match f {
        Concat => {
            if vals.iter().any(|v| matches!(v, Value::Bytes(_))) {
                Value::Bytes(vals.iter().flat_map(ops::to_bytes).collect())
            } else {
                Value::Str(vals.iter().map(str_arg).collect())
            }
        }
        ConcatWs => {
            if vals[0].is_null() {
                return Ok(Value::Null);
            }
            let sep = str_arg(&vals[0]);
            Value::Str(vals[1..].iter().filter(|v| !v.is_null()).map(str_arg).collect::<Vec<_>>().join(&sep))
        }
        Char => Value::Bytes(
            vals.iter()
                .filter(|v| !v.is_null())
                .flat_map(|v| {
                    let bytes = (ops::to_i128(v) as u32).to_be_bytes();
                    let first = bytes.iter().position(|&b| b != 0).unwrap_or(3);
                    bytes[first..].to_vec()
                })
                .collect(),
        ),
        Length => Value::Int(ops::to_bytes(&vals[0]).len() as i64),
        CharLength => Value::Int(match &vals[0] {
            Value::Bytes(b) => b.len() as i64,
            v => str_arg(v).chars().count() as i64,
        }),
        Substring => {
            let s: Vec<char> = str_arg(&vals[0]).chars().collect();
            let pos = int_arg(&vals[1]);
            let len = vals.get(2).map_or(i64::MAX, int_arg);
            let start = if pos > 0 {
                pos - 1
            } else if pos < 0 {
                s.len() as i64 + pos
            } else {
                return Ok(Value::Str(String::new()));
            };
            if start < 0 || start as usize >= s.len() || len <= 0 {
                return Ok(Value::Str(String::new()));
            }
            let end = (start as usize).saturating_add(len.min(s.len() as i64) as usize).min(s.len());
            Value::Str(s[start as usize..end].iter().collect())
        }
        Left | Right => {
            let s: Vec<char> = str_arg(&vals[0]).chars().collect();
            let n = int_arg(&vals[1]).clamp(0, s.len() as i64) as usize;
            Value::Str(if f == Left { s[..n].iter().collect() } else { s[s.len() - n..].iter().collect() })
        }
        Lower => Value::Str(str_arg(&vals[0]).to_lowercase()),
        // Characters whose upper case is several characters (ß) stay as they are, as in MySQL.
        Upper => Value::Str(
            str_arg(&vals[0])
                .chars()
                .map(|c| {
                    let mut up = c.to_uppercase();
                    match (up.next(), up.next()) {
                        (Some(u), None) => u,
                        _ => c,
                    }
                })
                .collect(),
        ),
        Trim => Value::Str(str_arg(&vals[0]).trim_matches(' ').to_owned()),
        LTrim => Value::Str(str_arg(&vals[0]).trim_start_matches(' ').to_owned()),
        RTrim => Value::Str(str_arg(&vals[0]).trim_end_matches(' ').to_owned()),
        TrimChars(which) => {
            let (pat, s) = (str_arg(&vals[0]), str_arg(&vals[1]));
            let mut out = s.as_str();
            if !pat.is_empty() {
                if which != 2 {
                    while let Some(r) = out.strip_prefix(pat.as_str()) {
                        out = r;
                    }
                }
                if which != 1 {
                    while let Some(r) = out.strip_suffix(pat.as_str()) {
                        out = r;
                    }
                }
            }
            Value::Str(out.to_owned())
        }
        Replace => {
            let (s, from, to) = (str_arg(&vals[0]), str_arg(&vals[1]), str_arg(&vals[2]));
            Value::Str(if from.is_empty() { s } else { s.replace(&from, &to) })
        }
        Lpad | Rpad => {
            let s: Vec<char> = str_arg(&vals[0]).chars().collect();
            let n = int_arg(&vals[1]);
            if n < 0 {
                return Ok(Value::Null);
            }
            let n = n as usize;
            let pad: Vec<char> = str_arg(&vals[2]).chars().collect();
            if s.len() >= n {
                return Ok(Value::Str(s[..n].iter().collect()));
            }
            if pad.is_empty() {
                return Ok(Value::Null);
            }
            let fill: String = pad.iter().cycle().take(n - s.len()).collect();
            let s: String = s.iter().collect();
            Value::Str(if f == Lpad { fill + &s } else { s + &fill })
        }
        Repeat => Value::Str(str_arg(&vals[0]).repeat(usize::try_from(int_arg(&vals[1])).unwrap_or(0))),
        Reverse => Value::Str(str_arg(&vals[0]).chars().rev().collect()),
        InsertStr => {
            let subject: Vec<char> = str_arg(&vals[0]).chars().collect();
            let (pos, len) = (int_arg(&vals[1]), int_arg(&vals[2]));
            // A position outside the string leaves it as it is; a length past its end
            // replaces the rest.
            if pos < 1 || pos > subject.len() as i64 {
                return Ok(Value::Str(subject.into_iter().collect()));
            }
            let start = usize::try_from(pos - 1).unwrap_or(0);
            let end = if len < 0 { subject.len() } else { start.saturating_add(usize::try_from(len).unwrap_or(usize::MAX)).min(subject.len()) };
            let mut out: String = subject[..start].iter().collect();
            out.push_str(&str_arg(&vals[3]));
            out.extend(&subject[end..]);
            Value::Str(out)
        }
        Space => Value::Str(" ".repeat(usize::try_from(int_arg(&vals[0])).unwrap_or(0))),
        FindInSet => {
            let coll = Collation::default();
            let needle = str_arg(&vals[0]);
            let list = str_arg(&vals[1]);
            // A needle with a comma is never found, as in MySQL.
            let place = if needle.contains(',') { None } else { list.split(',').position(|item| coll.compare(item, &needle) == std::cmp::Ordering::Equal) };
            Value::Int(place.map_or(0, |p| p as i64 + 1))
        }
        Field => {
            // NULL is never found; numbers compare as numbers when the first is one.
            if vals[0].is_null() {
                return Ok(Value::Int(0));
            }
            let numeric = !matches!(vals[0], Value::Str(_) | Value::Bytes(_));
            let place = vals[1..].iter().position(|v| {
                !v.is_null()
                    && if numeric {
                        ops::to_f64(v) == ops::to_f64(&vals[0])
                    } else {
                        Collation::default().compare(&str_arg(v), &str_arg(&vals[0])) == std::cmp::Ordering::Equal
                    }
            });
            Value::Int(place.map_or(0, |p| p as i64 + 1))
        }
        Json(_) | ToJson(..) | Regexp(..) | UserVar | SetUserVar => unreachable!("JSON, regular expression and user variable functions return above"),
        Elt => {
            let n = if vals[0].is_null() { 0 } else { int_arg(&vals[0]) };
            match usize::try_from(n).ok().filter(|n| *n >= 1).and_then(|n| vals.get(n)) {
                Some(v) => v.clone(),
                None => Value::Null,
            }
        }
        Instr | Locate => {
            let (hay, needle, start) =
                if f == Instr { (str_arg(&vals[0]), str_arg(&vals[1]), 1) } else { (str_arg(&vals[1]), str_arg(&vals[0]), vals.get(2).map_or(1, int_arg)) };
            let coll = Collation::default();
            let hay_w: Vec<char> = hay.chars().collect();
            let needle_n = needle.chars().count();
            let mut found = 0;
            if start >= 1 {
                for i in (start as usize - 1)..=hay_w.len().saturating_sub(needle_n) {
                    if i + needle_n > hay_w.len() {
                        break;
                    }
                    let cand: String = hay_w[i..i + needle_n].iter().collect();
                    if coll.compare(&cand, &needle) == std::cmp::Ordering::Equal {
                        found = i as i64 + 1;
                        break;
                    }
                }
            }
            Value::Int(found)
        }
        Hex => match &vals[0] {
            Value::Int(_) | Value::UInt(_) => Value::Str(format!("{:X}", ops::to_i128(&vals[0]) as u64)),
            v => Value::Str(quill_sql_types::charset::hex_upper(&ops::to_bytes(v))),
        },
        Now(fsp) => Value::DateTime(types::round_micros(env.now_us, fsp)),
        SysDate(fsp) => Value::DateTime(types::round_micros(info.now_us(), fsp)),
        UtcTimestamp(fsp) => Value::DateTime(types::round_micros(chrono::Utc::now().timestamp_micros(), fsp)),
        CurDate => Value::Date(types::date_of_micros(env.now_us)),
        CurTime(fsp) => Value::Time(types::round_micros(env.now_us.rem_euclid(86_400_000_000), fsp)),
        UnixTimestamp => match vals.first() {
            None => Value::Int(env.now_us.div_euclid(1_000_000) - info.utc_offset_secs()),
            Some(Value::Null) => Value::Null,
            Some(v) => match ops::to_datetime(v) {
                Some(us) => {
                    let local_secs = us.div_euclid(1_000_000);
                    let secs = local_secs - info.time_zone().offset_at_local(local_secs);
                    let frac = us.rem_euclid(1_000_000);
                    if frac == 0 && !matches!(v, Value::DateTime(_)) { Value::Int(secs) } else { Value::Decimal(Decimal::new(secs * 1_000_000 + frac, 6)) }
                }
                None => Value::Null,
            },
        },
        FromUnixtime => {
            let secs = int_arg(&vals[0]);
            Value::DateTime((secs + info.time_zone().offset_at_utc(secs)) * 1_000_000)
        }
        ConvertTz => convert_tz(&vals),
        Uuid => Value::Str(uuid_v1()),
        TimestampDiff(unit) => match (ops::to_datetime(&vals[0]), ops::to_datetime(&vals[1])) {
            (Some(a), Some(b)) => Value::Int(timestamp_diff(unit, a, b)),
            _ => Value::Null,
        },
        DateDiff => match (ops::to_date_days(&vals[0]), ops::to_date_days(&vals[1])) {
            (Some(a), Some(b)) => Value::Int(i64::from(a) - i64::from(b)),
            _ => Value::Null,
        },
        DateAdd(unit, subtract) => date_add(&vals[0], &vals[1], unit, subtract)?,
        Date => ops::to_date_days(&vals[0]).map_or(Value::Null, Value::Date),
        Time => ops::to_time(&vals[0]).map_or(Value::Null, Value::Time),
        Year | Month | Day | Hour | Minute | Second | Microsecond | DayOfWeek => {
            let dt = match &vals[0] {
                Value::Time(us) => {
                    let a = us.abs();
                    return Ok(Value::Int(match f {
                        Hour => a / 3_600_000_000,
                        Minute => (a / 60_000_000) % 60,
                        Second => (a / 1_000_000) % 60,
                        Microsecond => a % 1_000_000,
                        _ => 0,
                    }));
                }
                v => match ops::to_datetime(v).and_then(types::datetime_from_micros) {
                    Some(dt) => dt,
                    None => return Ok(Value::Null),
                },
            };
            Value::Int(match f {
                Year => i64::from(dt.year()),
                Month => i64::from(dt.month()),
                Day => i64::from(dt.day()),
                Hour => i64::from(dt.hour()),
                Minute => i64::from(dt.minute()),
                Second => i64::from(dt.second()),
                Microsecond => i64::from(dt.nanosecond() / 1000),
                _ => i64::from(dt.weekday().number_from_sunday()),
            })
        }
        // A TIME is a time of today, as MySQL reads it as a date (Django's Trunc on a time field).
        DateFormat => match time_as_datetime(&vals[0], env.now_us).or_else(|| ops::to_datetime(&vals[0])).and_then(types::datetime_from_micros) {
            Some(dt) => Value::Str(date_format(&dt, &str_arg(&vals[1]))),
            None => Value::Null,
        },
        Round | Truncate => {
            let places = vals.get(1).map_or(0, int_arg);
            round(&vals[0], places, f == Truncate)
        }
        Floor | Ceil => match &vals[0] {
            v @ (Value::Int(_) | Value::UInt(_)) => v.clone(),
            Value::Decimal(d) => Value::Decimal(if f == Floor { d.floor() } else { d.ceil() }),
            v => {
                let x = ops::to_f64(v);
                Value::Double(if f == Floor { x.floor() } else { x.ceil() })
            }
        },
        Abs => match &vals[0] {
            Value::Int(i) => {
                Value::Int(i.checked_abs().ok_or_else(|| SqlError::new(codes::ER_DATA_OUT_OF_RANGE, format!("BIGINT value is out of range in 'abs({i})'")))?)
            }
            v @ Value::UInt(_) => v.clone(),
            Value::Decimal(d) => Value::Decimal(d.abs()),
            v => Value::Double(ops::to_f64(v).abs()),
        },
        Mod => ops::arith(ops::Arith::Mod, &vals[0], &vals[1])?,
        Sign => {
            let x = ops::to_f64(&vals[0]);
            Value::Int(if x > 0.0 {
                1
            } else if x < 0.0 {
                -1
            } else {
                0
            })
        }
        Power => Value::Double(ops::to_f64(&vals[0]).powf(ops::to_f64(&vals[1]))),
        Sqrt => {
            let x = ops::to_f64(&vals[0]);
            if x < 0.0 { Value::Null } else { Value::Double(x.sqrt()) }
        }
        Rand => Value::Double(rand_f64()),
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
        TemporalText(fsp) => match &vals[0] {
            Value::DateTime(us) => Value::Str(types::format_datetime(*us, fsp)),
            Value::Time(us) => Value::Str(types::format_time(*us, fsp)),
            other => Value::Str(str_arg(other)),
        },
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
        GetLock | ReleaseLock | ReleaseAllLocks | IsFreeLock | IsUsedLock | Sleep | WaitForTableCommit => {
            unreachable!("handled by user_lock")
        }
    })
}

/// The user-level lock functions (`txn::user_locks`), SLEEP and WAIT_FOR_TABLE_COMMIT
/// (`commit_notify`). Those that act or wait answer, when the statement runs again after a
/// wait, what they answered the first time (`statement_waits`).
fn user_lock(f: Func, vals: &[Value], env: &Env<'_>) -> Result<Value> {
    use quill_sql_context::statement_waits::Pending;
    use quill_txn::user_locks::Get;
    let info = env.info;
    let locks = &info.engine.user_locks;
    let session = info.connection_id;
    let name = || {
        let text = vals.first().filter(|v| !v.is_null()).map(str_arg);
        lock_name(text.as_deref())
    };
    let bool_int = |b: bool| Value::Int(i64::from(b));
    match f {
        Func::IsFreeLock => return Ok(bool_int(locks.owner(&name()?).is_none())),
        Func::IsUsedLock => return Ok(locks.owner(&name()?).map_or(Value::Null, |id| Value::UInt(u64::from(id)))),
        _ => {}
    }
    let mut calls = info.function_calls.borrow_mut();
    let call = format!("{f:?}{vals:?}");
    match calls.replay(&call) {
        Ok(Some(v)) => return Ok(v),
        Ok(None) => {}
        Err(e) => {
            for name in calls.taken.drain(..) {
                locks.release(session, &name);
            }
            return Err(e);
        }
    }
    let v = match f {
        Func::GetLock => {
            let name = name()?;
            match locks.try_get(session, &name) {
                Get::Granted => {
                    calls.taken.push(name);
                    Value::Int(1)
                }
                Get::Busy => {
                    // NULL waits no time, a negative timeout (or one past any clock) for ever.
                    let seconds = if vals[1].is_null() { 0.0 } else { ops::to_f64(&vals[1]) };
                    if seconds.is_nan() || seconds == 0.0 {
                        Value::Int(0)
                    } else {
                        let deadline = (seconds > 0.0)
                            .then(|| std::time::Duration::try_from_secs_f64(seconds).ok().and_then(|d| std::time::Instant::now().checked_add(d)))
                            .flatten();
                        let wait = locks.enqueue(session, &name, deadline).map_err(|_| {
                            SqlError::new(
                                (3058, "HY000"),
                                "Deadlock found when trying to get user-level lock; try rolling back transaction/releasing locks and restarting lock acquisition.",
                            )
                        })?;
                        calls.wait(call, Pending::Lock(wait));
                        return Err(SqlError::must_wait(Wait::Function));
                    }
                }
            }
        }
        Func::ReleaseLock => {
            let name = name()?;
            match locks.release(session, &name) {
                Some(released) => {
                    if let Some(i) = calls.taken.iter().position(|t| t.key == name.key).filter(|_| released) {
                        calls.taken.remove(i);
                    }
                    bool_int(released)
                }
                None => Value::Null,
            }
        }
        Func::WaitForTableCommit => {
            let text = if vals[0].is_null() { String::new() } else { str_arg(&vals[0]) };
            let name = sqlparser::ast::ObjectName::from(text.split('.').map(|p| sqlparser::ast::Ident::new(p.trim().trim_matches('`'))).collect::<Vec<_>>());
            let (db, table) = crate::query::resolve_table_name(info, &name)?;
            let id = env.catalog.table(&db, &table)?.id;
            let after = if vals[1].is_null() { 0 } else { u64::try_from(ops::to_i128(&vals[1]).max(0)).unwrap_or(u64::MAX) };
            let seconds = match vals.get(2) {
                None => -1.0,
                Some(v) if v.is_null() => 0.0,
                Some(v) => ops::to_f64(v),
            };
            let (at, positions) = info.engine.commit_notify.subscribe(id);
            let durable = info.engine.log.get().is_none_or(|log| log.durable_lsn() >= at);
            if at > after && durable {
                Value::UInt(at)
            } else if at <= after && (seconds.is_nan() || seconds == 0.0) {
                Value::Null
            } else {
                let deadline = (seconds > 0.0)
                    .then(|| std::time::Duration::try_from_secs_f64(seconds).ok().and_then(|d| std::time::Instant::now().checked_add(d)))
                    .flatten();
                calls.wait(call, Pending::Commit { after, deadline, positions });
                return Err(SqlError::must_wait(Wait::Function));
            }
        }
        Func::Sleep => {
            let seconds = if vals[0].is_null() { -1.0 } else { ops::to_f64(&vals[0]) };
            if seconds.is_nan() || seconds < 0.0 {
                return Err(SqlError::new((1210, "HY000"), "Incorrect arguments to sleep"));
            }
            match std::time::Duration::try_from_secs_f64(seconds).ok().and_then(|d| std::time::Instant::now().checked_add(d)) {
                Some(until) if seconds > 0.0 => {
                    calls.wait(call, Pending::Sleep(until));
                    return Err(SqlError::must_wait(Wait::Function));
                }
                Some(_) => Value::Int(0),
                None => return Err(SqlError::new((1210, "HY000"), "Incorrect arguments to sleep")),
            }
        }
        _ => {
            calls.taken.clear();
            Value::UInt(locks.release_all(session))
        }
    };
    Ok(calls.record(call, v))
}

/// The longest user-level lock name, in characters (MySQL's `NAME_CHAR_LEN`).
pub const USER_LOCK_NAME_CHARS_MAX: usize = quill_txn::user_locks::USER_LOCK_NAME_CHARS_MAX;

/// A user-level lock name checked as MySQL 8 checks it: NULL and empty names are 3057, names
/// over [`USER_LOCK_NAME_CHARS_MAX`] characters 4163.
///
/// # Errors
/// As above.
pub fn lock_name(name: Option<&str>) -> Result<quill_txn::user_locks::LockName> {
    let shown = name.unwrap_or("NULL");
    match name {
        None | Some("") => Err(SqlError::new(
            (3057, "42000"),
            format!("Incorrect user-level lock name '{shown}'. The name is empty, NULL, or can not be expressed in the current character-set."),
        )),
        Some(n) if n.chars().count() > USER_LOCK_NAME_CHARS_MAX => {
            Err(SqlError::new((4163, "42000"), format!("User-level lock name '{n}' should not exceed {USER_LOCK_NAME_CHARS_MAX} characters.")))
        }
        Some(n) => Ok(quill_txn::user_locks::LockName::new(n)),
    }
}

fn rand_f64() -> f64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static STATE: AtomicU64 = AtomicU64::new(0x9E37_79B9_7F4A_7C15);
    // xorshift64*: cheap, and RAND() promises no more.
    let mut x = STATE.load(Ordering::Relaxed) ^ (chrono::Utc::now().timestamp_subsec_nanos() as u64);
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    STATE.store(x, Ordering::Relaxed);
    (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
}

fn round(v: &Value, places: i64, truncate: bool) -> Value {
    let strategy = if truncate { RoundingStrategy::ToZero } else { RoundingStrategy::MidpointAwayFromZero };
    match v {
        Value::Int(_) | Value::UInt(_) if places >= 0 => v.clone(),
        Value::Int(_) | Value::UInt(_) | Value::Decimal(_) => {
            let d = ops::to_decimal(v).unwrap_or_default();
            if places >= 0 {
                let places = places.min(i64::from(quill_sql_types::types::DECIMAL_SCALE_MAX)) as u32;
                let mut r = d.round_dp_with_strategy(places, strategy);
                if matches!(v, Value::Decimal(_)) {
                    r.rescale(places);
                }
                Value::Decimal(r)
            } else {
                let r = d.round_signed(places.max(-70), strategy);
                match v {
                    Value::Int(_) => Value::Int(r.to_i64().unwrap_or(0)),
                    Value::UInt(_) => Value::UInt(r.to_u64().unwrap_or(0)),
                    _ => Value::Decimal(r),
                }
            }
        }
        other => {
            let x = ops::to_f64(other);
            let f = 10f64.powi(places as i32);
            let y = x * f;
            let r = if truncate {
                y.trunc()
            } else {
                // Round half away from zero, like MySQL for DOUBLE.
                y.round()
            };
            Value::Double(r / f)
        }
    }
}

fn timestamp_diff(unit: Unit, a: i64, b: i64) -> i64 {
    let d = b - a;
    match unit {
        Unit::Microsecond => d,
        Unit::Second => d / 1_000_000,
        Unit::Minute => d / 60_000_000,
        Unit::Hour => d / 3_600_000_000,
        Unit::Day => d / 86_400_000_000,
        Unit::Week => d / (7 * 86_400_000_000),
        Unit::Month | Unit::Quarter | Unit::Year => {
            let (Some(x), Some(y)) = (types::datetime_from_micros(a), types::datetime_from_micros(b)) else { return 0 };
            let mut months = i64::from(y.year() - x.year()) * 12 + i64::from(y.month()) - i64::from(x.month());
            // A month only counts once the day and time of day have been reached.
            let rest = |t: &NaiveDateTime| (t.day(), t.time());
            if months > 0 && rest(&y) < rest(&x) {
                months -= 1;
            } else if months < 0 && rest(&y) > rest(&x) {
                months += 1;
            }
            match unit {
                Unit::Month => months,
                Unit::Quarter => months / 3,
                _ => months / 12,
            }
        }
    }
}

fn date_add(base: &Value, amount: &Value, unit: Unit, subtract: bool) -> Result<Value> {
    let is_date = matches!(base, Value::Date(_)) || matches!(base, Value::Str(s) if types::parse_datetime(s).is_some_and(|(_, t)| !t));
    let Some(us) = ops::to_datetime(base) else { return Ok(Value::Null) };
    let Some(dt) = types::datetime_from_micros(us) else { return Ok(Value::Null) };
    let n = match unit {
        Unit::Microsecond | Unit::Second => ops::to_decimal(amount).unwrap_or_default(),
        _ => Decimal::from(int_arg(amount)),
    };
    let n = if subtract { -n } else { n };
    let out = match unit {
        Unit::Month | Unit::Quarter | Unit::Year => {
            let months = n.to_i64().unwrap_or(0)
                * match unit {
                    Unit::Month => 1,
                    Unit::Quarter => 3,
                    _ => 12,
                };
            if months >= 0 { dt.checked_add_months(Months::new(months as u32)) } else { dt.checked_sub_months(Months::new((-months) as u32)) }
        }
        _ => {
            let micros = match unit {
                Unit::Microsecond => n,
                Unit::Second => n * Decimal::from(1_000_000),
                Unit::Minute => n * Decimal::from(60_000_000),
                Unit::Hour => n * Decimal::from(3_600_000_000i64),
                Unit::Day => n * Decimal::from(86_400_000_000i64),
                _ => n * Decimal::from(7 * 86_400_000_000i64),
            };
            dt.checked_add_signed(Duration::microseconds(micros.to_i64().unwrap_or(0)))
        }
    };
    let Some(out) = out else { return Ok(Value::Null) };
    let us = types::micros_from_datetime(&out);
    Ok(if is_date && matches!(unit, Unit::Day | Unit::Week | Unit::Month | Unit::Quarter | Unit::Year) {
        Value::Date(types::date_of_micros(us))
    } else {
        Value::DateTime(us)
    })
}

fn date_format(dt: &NaiveDateTime, fmt: &str) -> String {
    let mut out = String::new();
    let mut chars = fmt.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('Y') => out.push_str(&format!("{:04}", dt.year())),
            Some('y') => out.push_str(&format!("{:02}", dt.year() % 100)),
            Some('m') => out.push_str(&format!("{:02}", dt.month())),
            Some('c') => out.push_str(&dt.month().to_string()),
            Some('d') => out.push_str(&format!("{:02}", dt.day())),
            Some('e') => out.push_str(&dt.day().to_string()),
            Some('H') => out.push_str(&format!("{:02}", dt.hour())),
            Some('k') => out.push_str(&dt.hour().to_string()),
            Some('i') => out.push_str(&format!("{:02}", dt.minute())),
            Some('s' | 'S') => out.push_str(&format!("{:02}", dt.second())),
            Some('f') => out.push_str(&format!("{:06}", dt.nanosecond() / 1000)),
            Some('T') => out.push_str(&format!("{:02}:{:02}:{:02}", dt.hour(), dt.minute(), dt.second())),
            Some('M') => out.push_str(&dt.format("%B").to_string()),
            Some('b') => out.push_str(&dt.format("%b").to_string()),
            Some('W') => out.push_str(&dt.format("%A").to_string()),
            Some('a') => out.push_str(&dt.format("%a").to_string()),
            Some('j') => out.push_str(&format!("{:03}", dt.ordinal())),
            Some('p') => out.push_str(if dt.hour() < 12 { "AM" } else { "PM" }),
            Some(other) => out.push(other),
            None => {}
        }
    }
    out
}

/// CAST / CONVERT.
///
/// # Errors
/// None today; kept fallible for strict casts.
pub fn cast(v: Value, ty: &SqlType) -> Result<Value> {
    if v.is_null() {
        return Ok(v);
    }
    Ok(match ty {
        SqlType::Int { unsigned, .. } => {
            let n = match &v {
                Value::Str(s) => {
                    let t = s.trim();
                    t.parse::<i128>().unwrap_or_else(|_| types::parse_number_prefix(t).0 as i128)
                }
                Value::Double(f) => f.round() as i128,
                other => ops::to_i128(other),
            };
            if *unsigned { Value::UInt(n as u64) } else { Value::Int(n as i64) }
        }
        SqlType::Decimal { scale, .. } => {
            let mut d = ops::to_decimal(&v).unwrap_or_default().round_dp_with_strategy(u32::from(*scale), RoundingStrategy::MidpointAwayFromZero);
            d.rescale(u32::from(*scale));
            Value::Decimal(d)
        }
        SqlType::Double | SqlType::Float => Value::Double(ops::to_f64(&v)),
        SqlType::Char { .. } | SqlType::VarChar { .. } | SqlType::Text { .. } | SqlType::Enum { .. } | SqlType::Set { .. } => {
            Value::Str(ops::to_string_lossy(&v))
        }
        SqlType::Binary(_) | SqlType::VarBinary(_) | SqlType::Blob(_) => Value::Bytes(ops::to_bytes(&v)),
        SqlType::Date => ops::to_date_days(&v).map_or(Value::Null, Value::Date),
        SqlType::DateTime(f) | SqlType::Timestamp(f) => ops::to_datetime(&v).map_or(Value::Null, |us| Value::DateTime(types::round_micros(us, *f))),
        SqlType::Time(f) => ops::to_time(&v).map_or(Value::Null, |us| Value::Time(types::round_micros(us, *f))),
        SqlType::Json => quill_sql_types::json::call(quill_sql_types::json::JsonFunc::Cast, &[v], &[])?,
        SqlType::Year | SqlType::Null => v,
    })
}

/// A TIME value as the DATETIME it is today (`now_us`'s date plus the time).
fn time_as_datetime(v: &Value, now_us: i64) -> Option<i64> {
    const DAY_US: i64 = 86_400_000_000;
    match v {
        Value::Time(us) => Some(now_us - now_us.rem_euclid(DAY_US) + us),
        _ => None,
    }
}

/// The length CAST(x AS CHAR) and CAST(x AS BINARY) are typed with when none is given: a
/// CHAR(N) or BINARY(N) shorter than this cuts its value to N (`cast_in`).
pub const CAST_LENGTH_UNSIZED: u32 = 65_535;

/// CAST(v AS ty) as a statement evaluates it: [`cast`], then what CAST itself adds, with
/// MySQL's warnings (recorded on `info`): CHAR(N) keeps N characters and BINARY(N) N bytes
/// (warning 1292 when that cuts), BINARY(N) pads with zero bytes to N, and YEAR maps two
/// digits to 1970–2069 and answers NULL (1292) outside 1901–2155.
///
/// # Errors
/// Those of [`cast`].
pub fn cast_in(v: Value, ty: &SqlType, info: &quill_sql_context::session_info::SessionInfo) -> Result<Value> {
    if v.is_null() {
        return Ok(v);
    }
    let truncated = |kind: &str, len: u32, v: &Value| {
        info.warn(codes::ER_TRUNCATED_WRONG_VALUE.0, format!("Truncated incorrect {kind}({len}) value: '{}'", ops::to_string_lossy(v)));
    };
    match ty {
        SqlType::VarChar { len, .. } if *len < CAST_LENGTH_UNSIZED => {
            let text = ops::to_string_lossy(&v);
            match text.char_indices().nth(*len as usize) {
                Some((cut, _)) => {
                    truncated("CHAR", *len, &v);
                    Ok(Value::Str(text[..cut].to_owned()))
                }
                None => Ok(Value::Str(text)),
            }
        }
        SqlType::Binary(declared) => {
            let mut bytes = ops::to_bytes(&v);
            let len = *declared as usize;
            if bytes.len() > len {
                truncated("BINARY", *declared, &v);
                bytes.truncate(len);
            }
            bytes.resize(len, 0);
            Ok(Value::Bytes(bytes))
        }
        SqlType::Year => Ok(cast_year(&v).map_or_else(
            || {
                info.warn(codes::ER_TRUNCATED_WRONG_VALUE.0, format!("Truncated incorrect YEAR value: '{}'", ops::to_string_lossy(&v)));
                Value::Null
            },
            Value::Int,
        )),
        _ => cast(v, ty),
    }
}

/// CAST(v AS YEAR): a date's year; a number rounded, 1–69 as 2001–2069 and 70–99 as
/// 1970–1999 (a string '0' or '00' is 2000, the number 0 is 0); `None` outside 1901–2155.
fn cast_year(v: &Value) -> Option<i64> {
    let year = match v {
        Value::Date(_) | Value::DateTime(_) => {
            return ops::to_datetime(v).and_then(types::datetime_from_micros).map(|dt| i64::from(dt.year())).filter(|y| (1901..=2155).contains(y));
        }
        Value::Str(s) if matches!(s.trim(), "0" | "00") => return Some(2000),
        Value::Str(s) => types::parse_number_prefix(s.trim()).0.round() as i64,
        other => ops::to_f64(other).round() as i64,
    };
    match year {
        0 => Some(0),
        1..=69 => Some(year + 2000),
        70..=99 => Some(year + 1900),
        1901..=2155 => Some(year),
        _ => None,
    }
}

/// CONVERT_TZ(dt, from, to): NULL for a zone it does not know or a value that is not a
/// date and time; a value outside TIMESTAMP's range is returned as it is, as MySQL does.
fn convert_tz(vals: &[Value]) -> Value {
    use quill_sql_types::time_zone::TimeZone;
    let (Some(us), Some(from), Some(to)) = (ops::to_datetime(&vals[0]), TimeZone::parse(&str_arg(&vals[1])), TimeZone::parse(&str_arg(&vals[2]))) else {
        return Value::Null;
    };
    let local_secs = us.div_euclid(1_000_000);
    let utc_secs = local_secs - from.offset_at_local(local_secs);
    if !(TIMESTAMP_SECS_MIN..=TIMESTAMP_SECS_MAX).contains(&utc_secs) {
        return Value::DateTime(us);
    }
    Value::DateTime(from.convert_micros(us, to))
}

/// TIMESTAMP's range in Unix seconds: 1970-01-01 00:00:01 to 2038-01-19 03:14:07 UTC.
const TIMESTAMP_SECS_MIN: i64 = 1;
const TIMESTAMP_SECS_MAX: i64 = i32::MAX as i64;

/// A version-1 UUID as MySQL's UUID() writes it: the time in 100 ns steps since
/// 1582-10-15, then a clock sequence and a node, both random per server start (MySQL takes
/// the node from a network card when it can). Calls never repeat: a time at or before the
/// last one given is moved one step past it.
fn uuid_v1() -> String {
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicU64, Ordering};
    /// 100 ns steps from 1582-10-15 to 1970-01-01.
    const GREGORIAN_TO_UNIX_STEPS: u64 = 0x01B2_1DD2_1381_4000;
    static LAST: AtomicU64 = AtomicU64::new(0);
    static NODE: OnceLock<(u64, u64)> = OnceLock::new();
    let &(clock_seq, node) = NODE.get_or_init(|| (rand::random::<u64>() & 0x3FFF | 0x8000, rand::random::<u64>() & 0xFFFF_FFFF_FFFF | 0x0100_0000_0000));
    let now = GREGORIAN_TO_UNIX_STEPS + u64::try_from(chrono::Utc::now().timestamp_nanos_opt().unwrap_or(0) / 100).unwrap_or(0);
    let t = match LAST.fetch_update(Ordering::AcqRel, Ordering::Acquire, |last| Some(now.max(last + 1))) {
        Ok(last) | Err(last) => now.max(last + 1),
    };
    format!("{:08x}-{:04x}-{:04x}-{clock_seq:04x}-{node:012x}", t & 0xFFFF_FFFF, (t >> 32) & 0xFFFF, (t >> 48) & 0x0FFF | 0x1000)
}

#[cfg(test)]
mod tests {
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
