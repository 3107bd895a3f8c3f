//! MySQL column types: what a column declares, how a value is coerced to it on
//! write (strict `sql_mode` errors or non-strict warnings), and how a value of it
//! is shown as text.

use chrono::{Datelike, NaiveDate, NaiveDateTime, Timelike};
use quill_storage::Decimal;
use quill_storage::{Collation, Value};

use sqlparser::ast::{CharacterLength, DataType, ExactNumberInfo};

use crate::error::{Result, SqlError, Warning, codes};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntKind {
    Tiny,
    Small,
    Medium,
    Int,
    Big,
}

impl IntKind {
    #[must_use]
    pub fn range(self, unsigned: bool) -> (i128, i128) {
        let bits = match self {
            IntKind::Tiny => 8,
            IntKind::Small => 16,
            IntKind::Medium => 24,
            IntKind::Int => 32,
            IntKind::Big => 64,
        };
        if unsigned { (0, (1i128 << bits) - 1) } else { (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1) }
    }

    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            IntKind::Tiny => "tinyint",
            IntKind::Small => "smallint",
            IntKind::Medium => "mediumint",
            IntKind::Int => "int",
            IntKind::Big => "bigint",
        }
    }
}

/// Size class of TEXT and BLOB types (the maximum length in bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LobKind {
    Tiny,
    Normal,
    Medium,
    Long,
}

impl LobKind {
    #[must_use]
    pub fn max_len(self) -> u64 {
        match self {
            LobKind::Tiny => 255,
            LobKind::Normal => 65_535,
            LobKind::Medium => 16_777_215,
            LobKind::Long => 4_294_967_295,
        }
    }
    fn prefix(self) -> &'static str {
        match self {
            LobKind::Tiny => "tiny",
            LobKind::Normal => "",
            LobKind::Medium => "medium",
            LobKind::Long => "long",
        }
    }
}

/// A column or expression type.
#[derive(Debug, Clone, PartialEq)]
pub enum SqlType {
    Int {
        kind: IntKind,
        unsigned: bool,
        display: Option<u32>,
    },
    Decimal {
        precision: u8,
        scale: u8,
        unsigned: bool,
    },
    Float,
    Double,
    Char {
        len: u32,
        collation: Collation,
    },
    VarChar {
        len: u32,
        collation: Collation,
    },
    Text {
        kind: LobKind,
        collation: Collation,
    },
    Binary(u32),
    VarBinary(u32),
    Blob(LobKind),
    Date,
    DateTime(u8),
    Timestamp(u8),
    Time(u8),
    Year,
    /// JSON: text in MySQL's normal form (`json`), compared as utf8mb4_bin.
    Json,
    /// ENUM('a', 'b', ...): one of the members, kept as its text as declared (the empty
    /// string for a value refused in non-strict mode). Sorted as text, not by member number
    /// as MySQL sorts it.
    Enum {
        members: std::sync::Arc<[String]>,
        collation: Collation,
    },
    /// SET('a', 'b', ...): members joined by commas, in declaration order, each once.
    Set {
        members: std::sync::Arc<[String]>,
        collation: Collation,
    },
    /// The type of a bare NULL.
    Null,
}

/// Largest DECIMAL precision MySQL allows (and scale).
pub const DECIMAL_PRECISION_MAX: u8 = 65;
pub const DECIMAL_SCALE_MAX: u8 = 30;
/// A DECIMAL expression type whose scale depends on its value (MySQL's NOT_FIXED_DEC):
/// values print with their own scale.
pub const DECIMAL_SCALE_NOT_FIXED: u8 = 31;

impl SqlType {
    #[must_use]
    pub fn varchar(len: u32) -> SqlType {
        SqlType::VarChar { len, collation: Collation::default() }
    }

    #[must_use]
    pub fn bigint() -> SqlType {
        SqlType::Int { kind: IntKind::Big, unsigned: false, display: None }
    }

    #[must_use]
    pub fn is_integer(&self) -> bool {
        matches!(self, SqlType::Int { .. } | SqlType::Year)
    }

    /// A number type (MySQL's numeric result types): what `OPTIONALLY ENCLOSED BY` leaves
    /// unenclosed.
    #[must_use]
    pub fn is_numeric(&self) -> bool {
        matches!(self, SqlType::Int { .. } | SqlType::Year | SqlType::Decimal { .. } | SqlType::Float | SqlType::Double)
    }

    /// DATE, DATETIME, TIMESTAMP and TIME (YEAR counts as a number).
    #[must_use]
    pub fn is_temporal(&self) -> bool {
        matches!(self, SqlType::Date | SqlType::DateTime(_) | SqlType::Timestamp(_) | SqlType::Time(_))
    }

    #[must_use]
    pub fn is_string(&self) -> bool {
        matches!(self, SqlType::Char { .. } | SqlType::VarChar { .. } | SqlType::Text { .. } | SqlType::Json | SqlType::Enum { .. } | SqlType::Set { .. })
    }

    #[must_use]
    pub fn is_binary(&self) -> bool {
        matches!(self, SqlType::Binary(_) | SqlType::VarBinary(_) | SqlType::Blob(_))
    }

    #[must_use]
    pub fn is_unsigned(&self) -> bool {
        matches!(self, SqlType::Int { unsigned: true, .. } | SqlType::Decimal { unsigned: true, .. })
    }

    /// The widest value a column of this type holds, for a row in fixed-size slots
    /// (`ROW_FORMAT=FIXED`): CHAR and VARCHAR at 4 bytes a character (utf8mb4), as MyISAM
    /// sizes them. `None` for BLOB and TEXT, which have no fixed size.
    #[must_use]
    pub fn fixed_width(&self) -> Option<quill_storage::ColumnWidth> {
        use quill_storage::ColumnWidth;
        Some(match self {
            SqlType::Char { len, .. } | SqlType::VarChar { len, .. } => ColumnWidth::Bytes(len.saturating_mul(4)),
            SqlType::Enum { .. } | SqlType::Set { .. } => ColumnWidth::Bytes(self.display_length()),
            SqlType::Binary(len) | SqlType::VarBinary(len) => ColumnWidth::Bytes(*len),
            // Sign, point and digits: the longest text of a value with more than 18 digits.
            SqlType::Decimal { precision, .. } if *precision > 18 => ColumnWidth::DecimalText(u32::from(*precision) + 2),
            SqlType::Text { .. } | SqlType::Blob(_) | SqlType::Json => return None,
            SqlType::Int { .. }
            | SqlType::Decimal { .. }
            | SqlType::Float
            | SqlType::Double
            | SqlType::Date
            | SqlType::DateTime(_)
            | SqlType::Timestamp(_)
            | SqlType::Time(_)
            | SqlType::Year
            | SqlType::Null => ColumnWidth::Number,
        })
    }

    /// The collation values of this type compare under.
    #[must_use]
    pub fn collation(&self) -> Collation {
        match self {
            SqlType::Char { collation, .. }
            | SqlType::VarChar { collation, .. }
            | SqlType::Text { collation, .. }
            | SqlType::Enum { collation, .. }
            | SqlType::Set { collation, .. } => *collation,
            SqlType::Json => Collation::Utf8mb4Bin,
            _ => Collation::Binary,
        }
    }

    #[must_use]
    pub fn with_collation(&self, c: Collation) -> SqlType {
        match self.clone() {
            SqlType::Char { len, .. } => SqlType::Char { len, collation: c },
            SqlType::VarChar { len, .. } => SqlType::VarChar { len, collation: c },
            SqlType::Text { kind, .. } => SqlType::Text { kind, collation: c },
            SqlType::Enum { members, .. } => SqlType::Enum { members, collation: c },
            SqlType::Set { members, .. } => SqlType::Set { members, collation: c },
            other => other,
        }
    }

    /// Fractional-second digits of temporal types, decimals of DECIMAL.
    #[must_use]
    pub fn decimals(&self) -> u8 {
        match self {
            SqlType::Decimal { scale, .. } => *scale,
            SqlType::DateTime(f) | SqlType::Timestamp(f) | SqlType::Time(f) => *f,
            SqlType::Float | SqlType::Double => 31,
            SqlType::Char { .. } | SqlType::VarChar { .. } | SqlType::Text { .. } | SqlType::Null => 31,
            _ => 0,
        }
    }

    /// The type as SHOW CREATE TABLE and information_schema spell it.
    #[must_use]
    pub fn sql_name(&self) -> String {
        let unsigned = |u: bool| if u { " unsigned" } else { "" };
        match self {
            SqlType::Int { kind, unsigned: u, display } => match (kind, display) {
                (IntKind::Tiny, Some(1)) if !u => "tinyint(1)".to_owned(),
                _ => format!("{}{}", kind.name(), unsigned(*u)),
            },
            SqlType::Decimal { precision, scale, unsigned: u } => format!("decimal({precision},{scale}){}", unsigned(*u)),
            SqlType::Float => "float".to_owned(),
            SqlType::Double => "double".to_owned(),
            SqlType::Char { len, .. } => format!("char({len})"),
            SqlType::VarChar { len, .. } => format!("varchar({len})"),
            SqlType::Text { kind, .. } => format!("{}text", kind.prefix()),
            SqlType::Binary(n) => format!("binary({n})"),
            SqlType::VarBinary(n) => format!("varbinary({n})"),
            SqlType::Blob(kind) => format!("{}blob", kind.prefix()),
            SqlType::Date => "date".to_owned(),
            SqlType::DateTime(0) => "datetime".to_owned(),
            SqlType::DateTime(f) => format!("datetime({f})"),
            SqlType::Timestamp(0) => "timestamp".to_owned(),
            SqlType::Timestamp(f) => format!("timestamp({f})"),
            SqlType::Time(0) => "time".to_owned(),
            SqlType::Time(f) => format!("time({f})"),
            SqlType::Year => "year".to_owned(),
            SqlType::Json => "json".to_owned(),
            SqlType::Enum { members, .. } => format!("enum({})", member_list(members)),
            SqlType::Set { members, .. } => format!("set({})", member_list(members)),
            SqlType::Null => "null".to_owned(),
        }
    }

    /// The bare type name (information_schema.COLUMNS.DATA_TYPE).
    #[must_use]
    pub fn data_type_name(&self) -> String {
        let full = self.sql_name();
        full.split(['(', ' ']).next().unwrap_or_default().to_owned()
    }

    /// The longest value of an ENUM (its longest member) or a SET (all its members and the
    /// commas between), in characters; 0 for other types.
    #[must_use]
    pub fn member_chars_max(&self) -> u32 {
        let chars = |m: &String| u32::try_from(m.chars().count()).unwrap_or(u32::MAX);
        match self {
            SqlType::Enum { members, .. } => members.iter().map(chars).max().unwrap_or(0),
            SqlType::Set { members, .. } => members.iter().map(|m| chars(m) + 1).sum::<u32>().saturating_sub(1),
            _ => 0,
        }
    }

    /// Display width in characters, as sent in column definitions.
    #[must_use]
    pub fn display_length(&self) -> u32 {
        match self {
            SqlType::Int { kind, unsigned, .. } => match (kind, unsigned) {
                (IntKind::Tiny, _) => 4,
                (IntKind::Small, _) => 6,
                (IntKind::Medium, _) => 9,
                (IntKind::Int, true) => 10,
                (IntKind::Int, false) => 11,
                (IntKind::Big, true) => 20,
                (IntKind::Big, false) => 20,
            },
            SqlType::Decimal { precision, scale, .. } => u32::from(*precision) + 1 + u32::from(*scale > 0),
            SqlType::Float => 12,
            SqlType::Double => 22,
            SqlType::Char { len, .. } | SqlType::VarChar { len, .. } => len * 4,
            SqlType::Binary(n) | SqlType::VarBinary(n) => *n,
            SqlType::Text { kind, .. } | SqlType::Blob(kind) => u32::try_from(kind.max_len()).unwrap_or(u32::MAX),
            SqlType::Date => 10,
            SqlType::DateTime(f) | SqlType::Timestamp(f) => 19 + u32::from(*f) + u32::from(*f > 0),
            SqlType::Time(f) => 10 + u32::from(*f) + u32::from(*f > 0),
            SqlType::Year => 4,
            SqlType::Json => u32::MAX,
            SqlType::Enum { .. } | SqlType::Set { .. } => self.member_chars_max() * 4,
            SqlType::Null => 0,
        }
    }

    /// Translate a parsed column type. `collation` is the table's default.
    ///
    /// # Errors
    /// 1064/1235 for types Quill does not store, 1426 for a too-large precision.
    pub fn from_ast(dt: &DataType, collation: Collation) -> Result<SqlType> {
        let int = |kind, unsigned, d: &Option<u64>| SqlType::Int { kind, unsigned, display: d.map(|d| d as u32) };
        let char_len = |l: &Option<CharacterLength>, default: u32| match l {
            Some(CharacterLength::IntegerLength { length, .. }) => *length as u32,
            _ => default,
        };
        Ok(match dt {
            DataType::TinyInt(d) => int(IntKind::Tiny, false, d),
            DataType::TinyIntUnsigned(d) => int(IntKind::Tiny, true, d),
            DataType::SmallInt(d) => int(IntKind::Small, false, d),
            DataType::SmallIntUnsigned(d) => int(IntKind::Small, true, d),
            DataType::MediumInt(d) => int(IntKind::Medium, false, d),
            DataType::MediumIntUnsigned(d) => int(IntKind::Medium, true, d),
            DataType::Int(d) | DataType::Integer(d) => int(IntKind::Int, false, d),
            DataType::IntUnsigned(d) | DataType::IntegerUnsigned(d) => int(IntKind::Int, true, d),
            DataType::BigInt(d) => int(IntKind::Big, false, d),
            DataType::BigIntUnsigned(d) => int(IntKind::Big, true, d),
            DataType::Bool | DataType::Boolean => SqlType::Int { kind: IntKind::Tiny, unsigned: false, display: Some(1) },
            DataType::Decimal(info) | DataType::Numeric(info) | DataType::Dec(info) => decimal(info, false)?,
            DataType::DecimalUnsigned(info) | DataType::DecUnsigned(info) => decimal(info, true)?,
            DataType::Float(info) => match info {
                ExactNumberInfo::Precision(p) | ExactNumberInfo::PrecisionAndScale(p, _) if *p > 24 => SqlType::Double,
                _ => SqlType::Float,
            },
            DataType::Real | DataType::Double(_) | DataType::DoublePrecision | DataType::Float8 | DataType::Float64 => SqlType::Double,
            DataType::Char(l) | DataType::Character(l) => SqlType::Char { len: char_len(l, 1), collation },
            DataType::Varchar(l) | DataType::CharVarying(l) | DataType::CharacterVarying(l) | DataType::Nvarchar(l) => {
                SqlType::VarChar { len: char_len(l, 255), collation }
            }
            DataType::TinyText => SqlType::Text { kind: LobKind::Tiny, collation },
            DataType::Text => SqlType::Text { kind: LobKind::Normal, collation },
            DataType::MediumText => SqlType::Text { kind: LobKind::Medium, collation },
            DataType::LongText => SqlType::Text { kind: LobKind::Long, collation },
            DataType::Binary(n) => SqlType::Binary(n.unwrap_or(1) as u32),
            DataType::Varbinary(n) => SqlType::VarBinary(match n {
                Some(sqlparser::ast::BinaryLength::IntegerLength { length }) => *length as u32,
                _ => 255,
            }),
            DataType::Blob(_) => SqlType::Blob(LobKind::Normal),
            DataType::TinyBlob => SqlType::Blob(LobKind::Tiny),
            DataType::MediumBlob => SqlType::Blob(LobKind::Medium),
            DataType::LongBlob => SqlType::Blob(LobKind::Long),
            DataType::Date => SqlType::Date,
            DataType::Datetime(f) => SqlType::DateTime(fsp(*f)?),
            DataType::Timestamp(f, _) => SqlType::Timestamp(fsp(*f)?),
            DataType::Time(f, _) => SqlType::Time(fsp(*f)?),
            DataType::Custom(name, _) if name.to_string().eq_ignore_ascii_case("year") => SqlType::Year,
            DataType::JSON => SqlType::Json,
            DataType::Enum(members, _) => {
                let names: Vec<String> = members
                    .iter()
                    .map(|m| match m {
                        sqlparser::ast::EnumMember::Name(n) | sqlparser::ast::EnumMember::NamedValue(n, _) => n.clone(),
                    })
                    .collect();
                SqlType::Enum { members: members_checked(names, false)?, collation }
            }
            DataType::Set(members) => SqlType::Set { members: members_checked(members.clone(), true)?, collation },
            other => return Err(SqlError::unsupported(format!("column type {other}"))),
        })
    }
}

/// ENUM / SET members as `'a','b'`, quotes doubled.
fn member_list(members: &[String]) -> String {
    members.iter().map(|m| format!("'{}'", m.replace('\'', "''"))).collect::<Vec<_>>().join(",")
}

/// Most members an ENUM has (MySQL's limit); a SET has at most [`SET_MEMBERS_MAX`].
pub const ENUM_MEMBERS_MAX: usize = 65_535;
pub const SET_MEMBERS_MAX: usize = 64;

/// An ENUM's or SET's members, checked as MySQL checks them: trailing spaces cut, at most
/// [`ENUM_MEMBERS_MAX`] / [`SET_MEMBERS_MAX`] (1097), no duplicates (1291), no comma in a SET
/// member (1367).
fn members_checked(mut members: Vec<String>, set: bool) -> Result<std::sync::Arc<[String]>> {
    let kind = if set { "SET" } else { "ENUM" };
    for m in &mut members {
        m.truncate(m.trim_end_matches(' ').len());
    }
    if members.len() > if set { SET_MEMBERS_MAX } else { ENUM_MEMBERS_MAX } {
        return Err(SqlError::new((1097, "HY000"), format!("Too many strings for column '{kind}' and SET")));
    }
    for (i, m) in members.iter().enumerate() {
        if set && m.contains(',') {
            return Err(SqlError::new((1367, "22007"), format!("Illegal {kind} '{m}' value found during parsing")));
        }
        if members[..i].iter().any(|o| Collation::default().compare(o, m) == std::cmp::Ordering::Equal) {
            return Err(SqlError::new((1291, "HY000"), format!("Column '' has duplicated value '{m}' in {kind}")));
        }
    }
    Ok(members.into())
}

/// A value for an ENUM column: a member (matched without case), or a member's number.
fn coerce_enum(v: Value, members: &[String], collation: Collation, cx: &mut WriteContext<'_>) -> Result<Value> {
    let truncated = |cx: &mut WriteContext<'_>| {
        let msg = format!("Data truncated for column '{}' at row {}", cx.column, cx.row);
        cx.fail_or_warn(codes::WARN_DATA_TRUNCATED, msg, Value::Str(String::new()))
    };
    match v {
        Value::Int(_) | Value::UInt(_) | Value::Decimal(_) | Value::Double(_) => {
            let n = crate::ops::to_i128(&v);
            match usize::try_from(n) {
                Ok(0) => truncated(cx),
                Ok(n) if n <= members.len() => Ok(Value::Str(members[n - 1].clone())),
                _ => truncated(cx),
            }
        }
        other => {
            let text = crate::ops::to_string_lossy(&other);
            let text = text.trim_end_matches(' ');
            match members.iter().find(|m| collation.compare(m, text) == std::cmp::Ordering::Equal) {
                Some(m) => Ok(Value::Str(m.clone())),
                None => truncated(cx),
            }
        }
    }
}

/// A value for a SET column: members separated by commas (each once, in declaration order),
/// or a bit mask of member numbers.
fn coerce_set(v: Value, members: &[String], collation: Collation, cx: &mut WriteContext<'_>) -> Result<Value> {
    let bits: u64 = match &v {
        Value::Int(_) | Value::UInt(_) | Value::Decimal(_) | Value::Double(_) => {
            let n = crate::ops::to_i128(&v);
            let all = if members.len() >= 64 { u64::MAX } else { (1_u64 << members.len()) - 1 };
            match u64::try_from(n) {
                Ok(b) if b & !all == 0 => b,
                _ => {
                    let msg = format!("Data truncated for column '{}' at row {}", cx.column, cx.row);
                    return cx.fail_or_warn(codes::WARN_DATA_TRUNCATED, msg, Value::Str(String::new()));
                }
            }
        }
        other => {
            let text = crate::ops::to_string_lossy(other);
            let mut bits = 0_u64;
            let mut unknown = false;
            for part in text.split(',').filter(|p| !p.is_empty()) {
                match members.iter().position(|m| collation.compare(m, part.trim_end_matches(' ')) == std::cmp::Ordering::Equal) {
                    Some(i) => bits |= 1 << i,
                    None => unknown = true,
                }
            }
            if unknown {
                let msg = format!("Data truncated for column '{}' at row {}", cx.column, cx.row);
                cx.fail_or_warn(codes::WARN_DATA_TRUNCATED, msg, Value::Null)?;
            }
            bits
        }
    };
    let chosen: Vec<&str> = members.iter().enumerate().filter(|(i, _)| bits & (1 << i) != 0).map(|(_, m)| m.as_str()).collect();
    Ok(Value::Str(chosen.join(",")))
}

fn fsp(f: Option<u64>) -> Result<u8> {
    match f {
        None => Ok(0),
        Some(f) if f <= 6 => Ok(f as u8),
        Some(f) => Err(SqlError::new(codes::ER_TOO_BIG_PRECISION, format!("Too-big precision {f} specified. Maximum is 6."))),
    }
}

fn decimal(info: &ExactNumberInfo, unsigned: bool) -> Result<SqlType> {
    let (p, s) = match info {
        ExactNumberInfo::None => (10, 0),
        ExactNumberInfo::Precision(p) => (*p, 0),
        ExactNumberInfo::PrecisionAndScale(p, s) => (*p, (*s).max(0) as u64),
    };
    if p > u64::from(DECIMAL_PRECISION_MAX) {
        return Err(SqlError::new(codes::ER_TOO_BIG_PRECISION, format!("Too-big precision {p} specified. Maximum is 65.")));
    }
    if s > u64::from(DECIMAL_SCALE_MAX) || s > p {
        return Err(SqlError::new(codes::ER_TOO_BIG_PRECISION, format!("Too big scale {s} specified. Maximum is 30.")));
    }
    Ok(SqlType::Decimal { precision: p as u8, scale: s as u8, unsigned })
}

// ---------------------------------------------------------------------------
// Temporal conversions.

const MICROS_PER_SEC: i64 = 1_000_000;
/// MySQL's TIME range: -838:59:59 .. 838:59:59.
pub const TIME_MAX_MICROS: i64 = (838 * 3600 + 59 * 60 + 59) * MICROS_PER_SEC;

#[must_use]
pub fn date_from_days(days: i32) -> Option<NaiveDate> {
    NaiveDate::from_num_days_from_ce_opt(days)
}

#[must_use]
pub fn datetime_from_micros(us: i64) -> Option<NaiveDateTime> {
    chrono::DateTime::from_timestamp_micros(us).map(|d| d.naive_utc())
}

#[must_use]
pub fn micros_from_datetime(dt: &NaiveDateTime) -> i64 {
    dt.and_utc().timestamp_micros()
}

/// Format a date as MySQL does.
#[must_use]
pub fn format_date(days: i32) -> String {
    match date_from_days(days) {
        Some(d) => format!("{:04}-{:02}-{:02}", d.year(), d.month(), d.day()),
        None => "0000-00-00".to_owned(),
    }
}

/// Format a DATETIME with `fsp` fractional digits.
#[must_use]
pub fn format_datetime(us: i64, fsp: u8) -> String {
    let Some(dt) = datetime_from_micros(us) else { return "0000-00-00 00:00:00".to_owned() };
    let mut s = format!("{:04}-{:02}-{:02} {:02}:{:02}:{:02}", dt.year(), dt.month(), dt.day(), dt.hour(), dt.minute(), dt.second());
    push_fraction(&mut s, i64::from(dt.nanosecond() / 1000), fsp);
    s
}

fn push_fraction(s: &mut String, micros: i64, fsp: u8) {
    if fsp > 0 {
        let digits = format!("{micros:06}");
        s.push('.');
        s.push_str(&digits[..fsp as usize]);
    }
}

/// Format a TIME with `fsp` fractional digits.
#[must_use]
pub fn format_time(us: i64, fsp: u8) -> String {
    let neg = us < 0;
    let a = us.unsigned_abs() as i64;
    let secs = a / MICROS_PER_SEC;
    let mut s = format!("{}{:02}:{:02}:{:02}", if neg { "-" } else { "" }, secs / 3600, (secs / 60) % 60, secs % 60);
    push_fraction(&mut s, a % MICROS_PER_SEC, fsp);
    s
}

/// Parse 'YYYY-MM-DD', 'YYYY-MM-DD HH:MM:SS[.ffffff]', 'YYYYMMDD[HHMMSS]' and
/// 'YYYY-MM-DDTHH:MM:SS'. Returns microseconds since the epoch and whether the
/// text had a time part.
#[must_use]
pub fn parse_datetime(s: &str) -> Option<(i64, bool)> {
    let s = s.trim();
    let (date_part, time_part) = match s.find([' ', 'T']) {
        Some(i) => (&s[..i], Some(s[i + 1..].trim())),
        None => (s, None),
    };
    let nums: Vec<&str> = date_part.split(['-', '/', '.']).collect();
    let (y, m, d, rest_time) = if nums.len() == 3 {
        (nums[0].parse::<i32>().ok()?, nums[1].parse::<u32>().ok()?, nums[2].parse::<u32>().ok()?, time_part)
    } else if nums.len() == 1 && date_part.len() >= 8 && date_part.bytes().all(|b| b.is_ascii_digit()) && time_part.is_none() {
        let y = date_part[0..4].parse().ok()?;
        let m = date_part[4..6].parse().ok()?;
        let d = date_part[6..8].parse().ok()?;
        let t = &date_part[8..];
        if t.is_empty() {
            (y, m, d, None)
        } else if t.len() == 6 {
            let us = (t[0..2].parse::<i64>().ok()? * 3600 + t[2..4].parse::<i64>().ok()? * 60 + t[4..6].parse::<i64>().ok()?) * MICROS_PER_SEC;
            let base = NaiveDate::from_ymd_opt(y, m, d)?.and_hms_opt(0, 0, 0)?;
            return Some((micros_from_datetime(&base) + us, true));
        } else {
            return None;
        }
    } else {
        return None;
    };
    let y = if nums.len() == 3 && nums[0].len() <= 2 { if y < 70 { 2000 + y } else { 1900 + y } } else { y };
    let date = NaiveDate::from_ymd_opt(y, m, d)?;
    let mut us = micros_from_datetime(&date.and_hms_opt(0, 0, 0)?);
    let has_time = rest_time.is_some_and(|t| !t.is_empty());
    if let Some(t) = rest_time.filter(|t| !t.is_empty()) {
        let tm = parse_time(t)?;
        if !(0..24 * 3600 * MICROS_PER_SEC).contains(&tm) {
            return None;
        }
        us += tm;
    }
    Some((us, has_time))
}

/// Parse '[-][D ]HH:MM[:SS[.ffffff]]', 'HHMMSS' or 'SS'. Returns signed microseconds.
#[must_use]
pub fn parse_time(s: &str) -> Option<i64> {
    let s = s.trim();
    let (neg, s) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s),
    };
    let (days, s) = match s.split_once(' ') {
        Some((d, r)) => (d.parse::<i64>().ok()?, r),
        None => (0, s),
    };
    let (whole, frac) = match s.split_once('.') {
        Some((w, f)) => (w, f),
        None => (s, ""),
    };
    let parts: Vec<&str> = whole.split(':').collect();
    let (h, m, sec) = match parts.len() {
        3 => (parts[0].parse::<i64>().ok()?, parts[1].parse::<i64>().ok()?, parts[2].parse::<i64>().ok()?),
        2 => (parts[0].parse::<i64>().ok()?, parts[1].parse::<i64>().ok()?, 0),
        1 if whole.bytes().all(|b| b.is_ascii_digit()) && !whole.is_empty() => {
            let n: i64 = whole.parse().ok()?;
            (n / 10000, (n / 100) % 100, n % 100)
        }
        _ => return None,
    };
    if m > 59 || sec > 59 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut micros: i64 = 0;
    for (i, b) in frac.bytes().take(6).enumerate() {
        micros += i64::from(b - b'0') * 10i64.pow(5 - i as u32);
    }
    let total = ((days * 24 + h) * 3600 + m * 60 + sec) * MICROS_PER_SEC + micros;
    Some(if neg { -total } else { total })
}

/// Round microseconds to `fsp` digits (MySQL rounds, it does not truncate).
#[must_use]
pub fn round_micros(us: i64, fsp: u8) -> i64 {
    if fsp >= 6 {
        return us;
    }
    let unit = 10i64.pow(6 - u32::from(fsp));
    // Half away from zero, for negative TIME values too.
    let magnitude = us.unsigned_abs() as i64;
    let r = magnitude % unit;
    let rounded = if r * 2 >= unit { magnitude - r + unit } else { magnitude - r };
    if us < 0 { -rounded } else { rounded }
}

// ---------------------------------------------------------------------------
// Text forms.

/// Format a double the way MySQL prints a DOUBLE result.
#[must_use]
pub fn format_double(f: f64) -> String {
    if f.is_nan() || f.is_infinite() {
        return "NULL".to_owned();
    }
    if f == 0.0 {
        return "0".to_owned();
    }
    let a = f.abs();
    if (1e-5..1e15).contains(&a) {
        let s = format!("{f}");
        return s;
    }
    // Scientific: shortest digits, MySQL style "1e20", "1.5e-7".
    let s = format!("{f:e}");
    match s.split_once('e') {
        Some((m, e)) => {
            let e: i32 = e.parse().unwrap_or(0);
            if e >= 0 { format!("{m}e{e}") } else { format!("{m}e-{}", -e) }
        }
        None => s,
    }
}

/// Format a FLOAT (single precision) result.
#[must_use]
pub fn format_float(f: f64) -> String {
    let single = f as f32;
    if single == 0.0 {
        return "0".to_owned();
    }
    let a = single.abs();
    if (1e-5..1e15).contains(&a) { format!("{single}") } else { format_double(f64::from(single)) }
}

/// A value as text in a result row, given the column type. `None` is SQL NULL.
#[must_use]
pub fn to_text(v: &Value, ty: &SqlType) -> Option<Vec<u8>> {
    Some(match v {
        Value::Null => return None,
        Value::Int(i) => i.to_string().into_bytes(),
        Value::UInt(u) => u.to_string().into_bytes(),
        Value::Double(f) => match ty {
            SqlType::Float => format_float(*f).into_bytes(),
            _ => format_double(*f).into_bytes(),
        },
        Value::Decimal(d) => match ty {
            SqlType::Decimal { scale, .. } if *scale < DECIMAL_SCALE_NOT_FIXED => {
                let mut d = d.clone();
                d.rescale(u32::from(*scale));
                d.to_string().into_bytes()
            }
            _ => d.to_string().into_bytes(),
        },
        Value::Str(s) => s.clone().into_bytes(),
        Value::Bytes(b) => b.clone(),
        Value::Date(d) => format_date(*d).into_bytes(),
        Value::DateTime(us) => match ty {
            SqlType::Date => format_date(date_of_micros(*us)).into_bytes(),
            _ => format_datetime(*us, ty.decimals().min(6)).into_bytes(),
        },
        Value::Time(us) => format_time(*us, ty.decimals().min(6)).into_bytes(),
    })
}

/// Days-from-CE of the date part of a DATETIME.
#[must_use]
pub fn date_of_micros(us: i64) -> i32 {
    datetime_from_micros(us).map_or(0, |d| d.date().num_days_from_ce())
}

/// Microseconds of midnight of a date.
#[must_use]
pub fn micros_of_date(days: i32) -> i64 {
    date_from_days(days).and_then(|d| d.and_hms_opt(0, 0, 0)).map_or(0, |d| micros_from_datetime(&d))
}

// ---------------------------------------------------------------------------
// Coercion on write.

/// Context of a write, for error messages and strictness.
pub struct WriteContext<'a> {
    pub column: &'a str,
    pub row: u64,
    pub strict: bool,
    pub warnings: &'a mut Vec<Warning>,
}

impl WriteContext<'_> {
    fn fail_or_warn(&mut self, code: (u16, &'static str), message: String, fallback: Value) -> Result<Value> {
        if self.strict {
            Err(SqlError::new(code, message))
        } else if code == codes::ER_DATA_TOO_LONG {
            // Outside strict mode a string cut to the column's length is "truncated" (1265).
            let message = format!("Data truncated for column '{}' at row {}", self.column, self.row);
            self.warnings.push(Warning { level: "Warning", code: codes::WARN_DATA_TRUNCATED.0, message });
            Ok(fallback)
        } else {
            self.warnings.push(Warning { level: "Warning", code: code.0, message });
            Ok(fallback)
        }
    }

    /// A number written as text with spaces after it: stored, with a note (as MySQL).
    fn note_trailing_spaces(&mut self, text: &str) {
        if text.ends_with(' ') {
            let message = format!("Data truncated for column '{}' at row {}", self.column, self.row);
            self.warnings.push(Warning { level: "Note", code: codes::WARN_DATA_TRUNCATED.0, message });
        }
    }

    fn out_of_range(&mut self, fallback: Value) -> Result<Value> {
        let msg = format!("Out of range value for column '{}' at row {}", self.column, self.row);
        self.fail_or_warn(codes::ER_WARN_DATA_OUT_OF_RANGE, msg, fallback)
    }
}

/// Parse the numeric prefix of a string as MySQL does when it converts a string to
/// a number: returns the number and whether the whole (trimmed) string was used.
#[must_use]
pub fn parse_number_prefix(s: &str) -> (f64, bool) {
    let t = s.trim_start();
    let bytes = t.as_bytes();
    let mut end = 0;
    if end < bytes.len() && (bytes[end] == b'-' || bytes[end] == b'+') {
        end += 1;
    }
    let digits_start = end;
    while end < bytes.len() && bytes[end].is_ascii_digit() {
        end += 1;
    }
    if end < bytes.len() && bytes[end] == b'.' {
        end += 1;
        while end < bytes.len() && bytes[end].is_ascii_digit() {
            end += 1;
        }
    }
    if end == digits_start || (end == digits_start + 1 && bytes[digits_start] == b'.') {
        return (0.0, false);
    }
    if end < bytes.len() && (bytes[end] == b'e' || bytes[end] == b'E') {
        let mut e = end + 1;
        if e < bytes.len() && (bytes[e] == b'-' || bytes[e] == b'+') {
            e += 1;
        }
        let exp_digits = e;
        while e < bytes.len() && bytes[e].is_ascii_digit() {
            e += 1;
        }
        if e > exp_digits {
            end = e;
        }
    }
    let n = t[..end].parse::<f64>().unwrap_or(0.0);
    (n, t[end..].trim().is_empty())
}

/// Coerce `v` to a value a column of type `ty` stores.
///
/// # Errors
/// In strict mode: 1264 out of range, 1366 wrong value, 1265 truncated, 1406 too
/// long, 1292 wrong date/time value.
pub fn coerce_to_column(v: Value, ty: &SqlType, cx: &mut WriteContext<'_>) -> Result<Value> {
    if v.is_null() {
        return Ok(Value::Null);
    }
    match ty {
        SqlType::Int { kind, unsigned, .. } => coerce_int(v, *kind, *unsigned, cx),
        SqlType::Year => coerce_int(v, IntKind::Small, true, cx),
        SqlType::Decimal { precision, scale, unsigned } => coerce_decimal(v, *precision, *scale, *unsigned, cx),
        SqlType::Float | SqlType::Double => {
            let f = match &v {
                Value::Str(s) => {
                    let (n, whole) = parse_number_prefix(s);
                    if !whole {
                        let msg = format!("Incorrect double value: '{s}' for column '{}' at row {}", cx.column, cx.row);
                        return cx.fail_or_warn(codes::ER_TRUNCATED_WRONG_VALUE_FOR_FIELD, msg, Value::Double(n));
                    }
                    n
                }
                other => crate::ops::to_f64(other),
            };
            Ok(Value::Double(if matches!(ty, SqlType::Float) { f64::from(f as f32) } else { f }))
        }
        SqlType::Char { len, .. } | SqlType::VarChar { len, .. } => {
            let s = match v {
                Value::Str(s) => s,
                Value::Bytes(b) => character_string(b, cx)?,
                other => crate::ops::to_string_lossy(&other),
            };
            let mut s = s;
            if matches!(ty, SqlType::Char { .. }) {
                s.truncate(s.trim_end_matches(' ').len());
            }
            // No more bytes than the column has characters: no need to look for the cut.
            if s.len() > *len as usize
                && let Some((keep, _)) = s.char_indices().nth(*len as usize)
            {
                // Only spaces past the length: cut with a note, in any mode (as MySQL).
                if s[keep..].bytes().all(|b| b == b' ') {
                    s.truncate(keep);
                    cx.warnings.push(Warning {
                        level: "Note",
                        code: codes::WARN_DATA_TRUNCATED.0,
                        message: format!("Data truncated for column '{}' at row {}", cx.column, cx.row),
                    });
                    return Ok(Value::Str(s));
                }
                s.truncate(keep);
                let msg = format!("Data too long for column '{}' at row {}", cx.column, cx.row);
                return cx.fail_or_warn(codes::ER_DATA_TOO_LONG, msg, Value::Str(s));
            }
            Ok(Value::Str(s))
        }
        SqlType::Text { kind, .. } => {
            let s = match v {
                Value::Str(s) => s,
                Value::Bytes(b) => character_string(b, cx)?,
                other => crate::ops::to_string_lossy(&other),
            };
            if s.len() as u64 > kind.max_len() {
                let msg = format!("Data too long for column '{}' at row {}", cx.column, cx.row);
                return cx.fail_or_warn(codes::ER_DATA_TOO_LONG, msg, Value::Str(s));
            }
            Ok(Value::Str(s))
        }
        SqlType::Enum { members, collation } => coerce_enum(v, members, *collation, cx),
        SqlType::Set { members, collation } => coerce_set(v, members, *collation, cx),
        // JSON is validated and stored in its normal form, in any sql_mode, as MySQL does.
        SqlType::Json => match v {
            Value::Str(s) => crate::json::parse(&s).map(|d| Value::Str(crate::json::to_text(&d))).map_err(|e| crate::json::invalid_for_column(&e, cx.column)),
            Value::Bytes(b) => {
                let s = character_string(b, cx)?;
                crate::json::parse(&s).map(|d| Value::Str(crate::json::to_text(&d))).map_err(|e| crate::json::invalid_for_column(&e, cx.column))
            }
            _ => Err(crate::json::invalid_for_column(&crate::json::Invalid { message: "not a JSON text, may need CAST", position: 0 }, cx.column)),
        },
        SqlType::Binary(n) | SqlType::VarBinary(n) => {
            let mut b = crate::ops::to_bytes(&v);
            if b.len() > *n as usize {
                let msg = format!("Data too long for column '{}' at row {}", cx.column, cx.row);
                b.truncate(*n as usize);
                return cx.fail_or_warn(codes::ER_DATA_TOO_LONG, msg, Value::Bytes(b));
            }
            if matches!(ty, SqlType::Binary(_)) {
                b.resize(*n as usize, 0);
            }
            Ok(Value::Bytes(b))
        }
        SqlType::Blob(kind) => {
            let b = crate::ops::to_bytes(&v);
            if b.len() as u64 > kind.max_len() {
                let msg = format!("Data too long for column '{}' at row {}", cx.column, cx.row);
                return cx.fail_or_warn(codes::ER_DATA_TOO_LONG, msg, Value::Bytes(b));
            }
            Ok(Value::Bytes(b))
        }
        SqlType::Date => match crate::ops::to_datetime(&v) {
            Some(us) => Ok(Value::Date(date_of_micros(us))),
            None => wrong_temporal(&v, "date", cx),
        },
        SqlType::DateTime(fsp) | SqlType::Timestamp(fsp) => match crate::ops::to_datetime(&v) {
            Some(us) => Ok(Value::DateTime(round_micros(us, *fsp))),
            None => wrong_temporal(&v, "datetime", cx),
        },
        SqlType::Time(fsp) => match crate::ops::to_time(&v) {
            Some(us) if us.abs() <= TIME_MAX_MICROS => Ok(Value::Time(round_micros(us, *fsp))),
            Some(us) => cx.out_of_range(Value::Time(us.signum() * TIME_MAX_MICROS)),
            None => wrong_temporal(&v, "time", cx),
        },
        SqlType::Null => Ok(v),
    }
}

/// Bytes stored into a character column: valid UTF-8 as is; otherwise 1366 in strict
/// mode, else each invalid sequence becomes `?` with warning 1366, as MySQL converts.
fn character_string(bytes: Vec<u8>, cx: &mut WriteContext<'_>) -> Result<String> {
    let invalid = match String::from_utf8(bytes) {
        Ok(s) => return Ok(s),
        Err(e) => e,
    };
    let bytes = invalid.as_bytes();
    let from = invalid.utf8_error().valid_up_to();
    let shown: String = bytes[from..]
        .iter()
        .take(INCORRECT_STRING_QUOTE_BYTES)
        .map(|&b| if b.is_ascii_graphic() || b == b' ' { char::from(b).to_string() } else { format!("\\x{b:02X}") })
        .collect();
    let message = format!("Incorrect string value: '{shown}' for column '{}' at row {}", cx.column, cx.row);
    let replaced: String = bytes.utf8_chunks().flat_map(|chunk| chunk.valid().chars().chain((!chunk.invalid().is_empty()).then_some('?'))).collect();
    cx.fail_or_warn(codes::ER_TRUNCATED_WRONG_VALUE_FOR_FIELD, message, Value::Null)?;
    Ok(replaced)
}

/// How many bytes from the first invalid one error 1366 quotes (MySQL quotes six).
const INCORRECT_STRING_QUOTE_BYTES: usize = 6;

fn wrong_temporal(v: &Value, what: &str, cx: &mut WriteContext<'_>) -> Result<Value> {
    let shown = crate::ops::to_string_lossy(v);
    let msg = format!("Incorrect {what} value: '{shown}' for column '{}' at row {}", cx.column, cx.row);
    cx.fail_or_warn(codes::ER_TRUNCATED_WRONG_VALUE, msg, Value::Null)
}

fn coerce_int(v: Value, kind: IntKind, unsigned: bool, cx: &mut WriteContext<'_>) -> Result<Value> {
    let (lo, hi) = kind.range(unsigned);
    let n: i128 = match &v {
        Value::Int(i) => i128::from(*i),
        Value::UInt(u) => i128::from(*u),
        Value::Double(f) => {
            let r = f.round();
            if r.is_nan() {
                0
            } else if r < lo as f64 {
                lo - 1
            } else if r > hi as f64 {
                hi + 1
            } else {
                r as i128
            }
        }
        Value::Decimal(d) => d.round_dp_with_strategy(0, quill_storage::RoundingStrategy::MidpointAwayFromZero).to_i128().unwrap_or(hi + 1),
        Value::Str(s) => {
            let t = s.trim();
            let (f, whole) = parse_number_prefix(t);
            if t.is_empty() || (!whole && f == 0.0 && !t.starts_with(['0', '-', '+', '.'])) {
                let msg = format!("Incorrect integer value: '{s}' for column '{}' at row {}", cx.column, cx.row);
                return cx.fail_or_warn(codes::ER_TRUNCATED_WRONG_VALUE_FOR_FIELD, msg, Value::Int(0));
            }
            let n = if let Ok(i) = t.parse::<i128>() { i } else { f.round() as i128 };
            if !whole {
                let msg = format!("Data truncated for column '{}' at row {}", cx.column, cx.row);
                let clamped = n.clamp(lo, hi);
                return cx.fail_or_warn(codes::WARN_DATA_TRUNCATED, msg, int_value(clamped, unsigned));
            }
            cx.note_trailing_spaces(s);
            n
        }
        Value::Bytes(b) => {
            let s = String::from_utf8_lossy(b).into_owned();
            return coerce_int(Value::Str(s), kind, unsigned, cx);
        }
        Value::Date(_) | Value::DateTime(_) | Value::Time(_) => crate::ops::to_i128(&v),
        Value::Null => return Ok(Value::Null),
    };
    if n < lo || n > hi {
        return cx.out_of_range(int_value(n.clamp(lo, hi), unsigned));
    }
    Ok(int_value(n, unsigned))
}

fn int_value(n: i128, unsigned: bool) -> Value {
    if unsigned { Value::UInt(n as u64) } else { Value::Int(n as i64) }
}

fn coerce_decimal(v: Value, precision: u8, scale: u8, unsigned: bool, cx: &mut WriteContext<'_>) -> Result<Value> {
    // Already of the column's type (a copy between DECIMAL columns alike): kept as it is.
    // With the column's scale, at most `precision` digits leave at most `precision - scale`
    // before the point.
    if let Value::Decimal(d) = &v
        && d.scale() == u32::from(scale)
        && d.digits() <= u64::from(precision)
        && !(unsigned && d.is_sign_negative() && !d.is_zero())
    {
        return Ok(v);
    }
    let d = match &v {
        Value::Str(s) => {
            let t = s.trim();
            if let Some(unscaled) = plain_decimal_text(t, precision, scale, unsigned) {
                cx.note_trailing_spaces(s);
                return Ok(Value::Decimal(Decimal::new(unscaled, u32::from(scale))));
            }
            match t.parse::<Decimal>() {
                Ok(d) => {
                    cx.note_trailing_spaces(s);
                    d
                }
                Err(_) => {
                    let (f, _) = parse_number_prefix(t);
                    let msg = format!("Incorrect decimal value: '{s}' for column '{}' at row {}", cx.column, cx.row);
                    return cx.fail_or_warn(codes::ER_TRUNCATED_WRONG_VALUE_FOR_FIELD, msg, Value::Decimal(Decimal::from_f64(f).unwrap_or_default()));
                }
            }
        }
        other => match crate::ops::to_decimal(other) {
            Some(d) => d,
            None => return cx.out_of_range(Value::Decimal(Decimal::zero())),
        },
    };
    let rounded = d.round_dp_with_strategy(u32::from(scale), quill_storage::RoundingStrategy::MidpointAwayFromZero);
    let int_digits = u64::from(precision - scale);
    if rounded.integer_digits() > int_digits || (unsigned && rounded.is_sign_negative() && !rounded.is_zero()) {
        // The largest value of the column type: all nines.
        let nines = |n: u64| "9".repeat(usize::try_from(n).unwrap_or(0));
        let text = if scale > 0 { format!("{}.{}", nines(int_digits).max("0".into()), nines(u64::from(scale))) } else { nines(int_digits).max("0".into()) };
        let max: Decimal = text.parse().unwrap_or_default();
        let clamped = if rounded.is_sign_negative() { if unsigned { Decimal::zero() } else { -max } } else { max };
        return cx.out_of_range(Value::Decimal(clamped));
    }
    let mut out = rounded;
    out.rescale(u32::from(scale));
    Ok(Value::Decimal(out))
}

/// The unscaled value of `text` in a `DECIMAL(precision, scale)` column, when `text` is a
/// plain decimal that fits it exactly (`-12.5`, `7`, `0.25`: no exponent, no leading zeros,
/// no more fraction digits than `scale`, at most 18 digits in all); `None` sends it the
/// general way. A load's DECIMAL fields are almost all of this form.
fn plain_decimal_text(text: &str, precision: u8, scale: u8, unsigned: bool) -> Option<i64> {
    let (negative, digits) = match text.as_bytes() {
        [b'-', rest @ ..] if !unsigned => (true, rest),
        rest => (false, rest),
    };
    let (int, frac) = match digits.iter().position(|&b| b == b'.') {
        Some(dot) => (&digits[..dot], &digits[dot + 1..]),
        None => (digits, &digits[..0]),
    };
    let leading_zero = int.len() > 1 && int[0] == b'0';
    if int.is_empty() || leading_zero || frac.len() > usize::from(scale) || int.len() > usize::from(precision - scale) || int.len() + usize::from(scale) > 18 {
        return None;
    }
    let mut unscaled: i64 = 0;
    for &b in int.iter().chain(frac) {
        if !b.is_ascii_digit() {
            return None;
        }
        unscaled = unscaled * 10 + i64::from(b - b'0');
    }
    for _ in frac.len()..usize::from(scale) {
        unscaled *= 10;
    }
    Some(if negative { -unscaled } else { unscaled })
}

/// The type of a constant value.
#[must_use]
pub fn type_of_value(v: &Value) -> SqlType {
    match v {
        Value::Null => SqlType::Null,
        Value::Int(_) => SqlType::bigint(),
        Value::UInt(_) => SqlType::Int { kind: IntKind::Big, unsigned: true, display: None },
        Value::Double(_) => SqlType::Double,
        Value::Decimal(d) => SqlType::Decimal { precision: 65.min(d.digits() as u8 + 1), scale: d.scale().min(30) as u8, unsigned: false },
        Value::Str(s) => SqlType::VarChar { len: s.chars().count() as u32, collation: Collation::default() },
        Value::Bytes(b) => SqlType::VarBinary(b.len() as u32),
        Value::Date(_) => SqlType::Date,
        Value::DateTime(us) => SqlType::DateTime(if us.rem_euclid(1_000_000) == 0 { 0 } else { 6 }),
        Value::Time(us) => SqlType::Time(if us.rem_euclid(1_000_000) == 0 { 0 } else { 6 }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_decimal_text_agrees_with_the_general_path() {
        for text in ["0", "7", "-7", "12.5", "-12.50", "0.05", "999.99", "-999.99", "1000", "1.234", "007", "1e3", "", "-", ".5", "+1", "1,5"] {
            let fast = plain_decimal_text(text, 5, 2, false).map(|u| Value::Decimal(Decimal::new(u, 2)));
            if let Some(fast) = fast {
                let parsed: Decimal = text.parse().expect("a plain decimal parses");
                let mut expected = parsed;
                expected.rescale(2);
                assert_eq!(fast, Value::Decimal(expected), "{text}");
            } else {
                assert!(matches!(text, "1000" | "1.234" | "007" | "1e3" | "" | "-" | ".5" | "+1" | "1,5"), "{text} goes the general way");
            }
        }
        assert_eq!(plain_decimal_text("-1", 5, 2, true), None, "unsigned: the general path reports it");
    }

    #[test]
    fn datetime_text_round_trips_with_microseconds() {
        let (us, has_time) = parse_datetime("2024-02-29 13:45:01.123456").unwrap();
        assert!(has_time);
        assert_eq!(format_datetime(us, 6), "2024-02-29 13:45:01.123456");
        assert_eq!(format_datetime(round_micros(us, 2), 2), "2024-02-29 13:45:01.12");
        assert!(parse_datetime("2023-02-29").is_none());
    }

    #[test]
    fn time_parses_negative_and_days() {
        assert_eq!(format_time(parse_time("-01:02:03.5").unwrap(), 1), "-01:02:03.5");
        assert_eq!(format_time(parse_time("1 02:00:00").unwrap(), 0), "26:00:00");
    }

    #[test]
    fn number_prefix_is_mysql_like() {
        assert_eq!(parse_number_prefix("12abc"), (12.0, false));
        assert_eq!(parse_number_prefix(" 1.5e3 "), (1500.0, true));
        assert_eq!(parse_number_prefix("abc"), (0.0, false));
    }

    #[test]
    fn doubles_print_like_mysql() {
        assert_eq!(format_double(1e20), "1e20");
        assert_eq!(format_double(0.1), "0.1");
        assert_eq!(format_double(-2.5), "-2.5");
        assert_eq!(format_double(100.0), "100");
    }
}
