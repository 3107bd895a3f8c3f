//! MySQL column types: what a column declares, how a value is coerced to it on
//! write (strict `sql_mode` errors or non-strict warnings), and how a value of it
//! is shown as text.

use quill_storage::{Collation, Value};

use sqlparser::ast::{CharacterLength, DataType, ExactNumberInfo};

use crate::error::{Result, SqlError, codes};

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

mod coerce;
mod temporal;

pub use coerce::{WriteContext, coerce_to_column, parse_number_prefix};
pub use temporal::{
    TIME_MAX_MICROS, date_from_days, date_of_micros, datetime_from_micros, format_date, format_datetime, format_time, micros_from_datetime, micros_of_date,
    parse_datetime, parse_time, round_micros,
};

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
    /// BIT(n), 1 to 64 bits: an unsigned number, sent to clients as its `(n + 7) / 8` bytes,
    /// most significant first, as MySQL sends it.
    Bit(u8),
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
            | SqlType::Bit(_)
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
            SqlType::Bit(n) => format!("bit({n})"),
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
            SqlType::Bit(n) => u32::from(*n),
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
            DataType::Bit(n) => match n.unwrap_or(1) {
                0 => SqlType::Bit(1),
                n @ 1..=64 => SqlType::Bit(n as u8),
                _ => return Err(SqlError::new(codes::ER_TOO_BIG_DISPLAYWIDTH, "Display width out of range for column (max = 64)")),
            },
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
        return Err(SqlError::new(codes::ER_TOO_BIG_SET, format!("Too many strings for column '{kind}' and SET")));
    }
    for (i, m) in members.iter().enumerate() {
        if set && m.contains(',') {
            return Err(SqlError::new(codes::ER_ILLEGAL_VALUE_FOR_TYPE, format!("Illegal {kind} '{m}' value found during parsing")));
        }
        if members[..i].iter().any(|o| Collation::default().compare(o, m) == std::cmp::Ordering::Equal) {
            return Err(SqlError::new(codes::ER_DUPLICATED_VALUE_IN_TYPE, format!("Column '' has duplicated value '{m}' in {kind}")));
        }
    }
    Ok(members.into())
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

/// A value as the bits a BIT column holds: an integer's two's complement, a string's bytes
/// most significant first (MySQL's reading of a string stored into BIT).
#[must_use]
pub fn bit_value(v: &Value) -> u64 {
    match v {
        Value::UInt(u) => *u,
        Value::Int(i) => *i as u64,
        Value::Str(s) => s.as_bytes().iter().fold(0u64, |a, b| (a << 8) | u64::from(*b)),
        Value::Bytes(b) => b.iter().fold(0u64, |a, b| (a << 8) | u64::from(*b)),
        other => crate::ops::to_i128(other) as u64,
    }
}

/// A BIT(n) value as MySQL sends it: its `(n + 7) / 8` low bytes, most significant first.
#[must_use]
pub fn bit_bytes(v: u64, bits: u8) -> Vec<u8> {
    let len = usize::from(bits.div_ceil(8)).clamp(1, 8);
    v.to_be_bytes()[8 - len..].to_vec()
}

/// A value as text in a result row, given the column type. `None` is SQL NULL.
#[must_use]
pub fn to_text(v: &Value, ty: &SqlType) -> Option<Vec<u8>> {
    if let SqlType::Bit(n) = ty
        && !v.is_null()
    {
        return Some(bit_bytes(bit_value(v), *n));
    }
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

// ---------------------------------------------------------------------------
// Coercion on write.

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
    use quill_storage::Decimal;

    use super::coerce::plain_decimal_text;
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
