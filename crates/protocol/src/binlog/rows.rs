//! TABLE_MAP and the row events (WRITE_ROWS, UPDATE_ROWS, DELETE_ROWS, version 2): how a
//! table's columns are described once per transaction and its rows' values encoded
//! (`docs/binlog.md`, "Rows"). Values come as [`BinaryValue`]s, the binary protocol's; each
//! column's [`ColumnKind`] says how MySQL's binary log lays its value out.

use crate::binary::BinaryValue;

use super::put_packed_int;

/// Bytes of a table id in TABLE_MAP and row events.
pub const TABLE_ID_BYTES: usize = 6;
/// `STMT_END_F`: the last row event of a statement; the replica may free its table maps.
pub const ROWS_FLAG_STATEMENT_END: u16 = 1;
/// `NO_FOREIGN_KEY_CHECKS_F`: apply without foreign key checks. Every rows event carries it:
/// the rows a cascade wrote are logged as rows of their own, so a replica must neither check
/// them against parents it may apply later in the event nor cascade them a second time.
pub const ROWS_FLAG_NO_FOREIGN_KEY_CHECKS: u16 = 2;

/// MySQL's column type codes, as TABLE_MAP lists them.
mod type_code {
    pub const DECIMAL: u8 = 246;
    pub const TINY: u8 = 1;
    pub const SHORT: u8 = 2;
    pub const LONG: u8 = 3;
    pub const FLOAT: u8 = 4;
    pub const DOUBLE: u8 = 5;
    pub const LONGLONG: u8 = 8;
    pub const INT24: u8 = 9;
    pub const DATE: u8 = 10;
    pub const YEAR: u8 = 13;
    pub const BIT: u8 = 16;
    pub const VARCHAR: u8 = 15;
    pub const TIMESTAMP2: u8 = 17;
    pub const DATETIME2: u8 = 18;
    pub const TIME2: u8 = 19;
    pub const BLOB: u8 = 252;
    pub const STRING: u8 = 254;
    pub const ENUM: u8 = 247;
    pub const SET: u8 = 248;
}

/// Optional metadata of a TABLE_MAP (MySQL 8's `binlog_row_metadata=FULL`), type codes.
mod optional {
    pub const SIGNEDNESS: u8 = 1;
    pub const COLUMN_CHARSET: u8 = 3;
    pub const COLUMN_NAME: u8 = 4;
    pub const SIMPLE_PRIMARY_KEY: u8 = 8;
}

/// How a column's values are laid out in the binary log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnKind {
    Tiny,
    Short,
    Int24,
    Long,
    LongLong,
    Float,
    Double,
    /// DECIMAL(precision, scale), in MySQL's binary decimal format.
    Decimal {
        precision: u8,
        scale: u8,
    },
    /// CHAR or BINARY of at most `max_bytes` bytes (characters times the character set's
    /// longest).
    Char {
        max_bytes: u16,
    },
    /// VARCHAR or VARBINARY of at most `max_bytes` bytes.
    VarChar {
        max_bytes: u16,
    },
    /// TEXT or BLOB whose length takes `length_bytes` bytes (1 TINY, 2 plain, 3 MEDIUM,
    /// 4 LONG).
    Blob {
        length_bytes: u8,
    },
    Date,
    Year,
    /// DATETIME(fsp).
    DateTime {
        fsp: u8,
    },
    /// TIMESTAMP(fsp): the values are UTC.
    Timestamp {
        fsp: u8,
    },
    /// TIME(fsp).
    Time {
        fsp: u8,
    },
    /// ENUM: the member's number (1 on), in `pack_length` bytes (1, or 2 past 255 members).
    Enum {
        pack_length: u8,
    },
    /// SET: a bit per member, in `pack_length` bytes (members / 8, rounded up).
    Set {
        pack_length: u8,
    },
    /// BIT(bits): the value in `(bits + 7) / 8` bytes, most significant first.
    Bit {
        bits: u8,
    },
}

/// One column of a TABLE_MAP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column<'a> {
    pub name: &'a str,
    pub kind: ColumnKind,
    pub nullable: bool,
    pub unsigned: bool,
    /// The collation id of a character column; 63 (binary) for binary ones; unused for the
    /// others.
    pub collation: u16,
}

impl ColumnKind {
    fn type_code(self) -> u8 {
        match self {
            ColumnKind::Tiny => type_code::TINY,
            ColumnKind::Short => type_code::SHORT,
            ColumnKind::Int24 => type_code::INT24,
            ColumnKind::Long => type_code::LONG,
            ColumnKind::LongLong => type_code::LONGLONG,
            ColumnKind::Float => type_code::FLOAT,
            ColumnKind::Double => type_code::DOUBLE,
            ColumnKind::Decimal { .. } => type_code::DECIMAL,
            ColumnKind::Char { .. } => type_code::STRING,
            ColumnKind::VarChar { .. } => type_code::VARCHAR,
            ColumnKind::Blob { .. } => type_code::BLOB,
            ColumnKind::Date => type_code::DATE,
            ColumnKind::Year => type_code::YEAR,
            ColumnKind::DateTime { .. } => type_code::DATETIME2,
            ColumnKind::Timestamp { .. } => type_code::TIMESTAMP2,
            ColumnKind::Time { .. } => type_code::TIME2,
            // As MySQL logs them: a STRING whose metadata names the real type.
            ColumnKind::Enum { .. } | ColumnKind::Set { .. } => type_code::STRING,
            ColumnKind::Bit { .. } => type_code::BIT,
        }
    }

    /// The column's TABLE_MAP metadata.
    fn put_metadata(self, out: &mut Vec<u8>) {
        match self {
            ColumnKind::Float => out.push(4),
            ColumnKind::Double => out.push(8),
            ColumnKind::Decimal { precision, scale } => out.extend_from_slice(&[precision, scale]),
            // The real type, with the top two bits of a length over 255 folded in (MySQL's
            // way to fit lengths up to 1023 in 10 bits).
            ColumnKind::Char { max_bytes } => {
                out.push(type_code::STRING ^ (((max_bytes & 0x300) >> 4) as u8));
                out.push((max_bytes & 0xff) as u8);
            }
            ColumnKind::VarChar { max_bytes } => out.extend_from_slice(&max_bytes.to_le_bytes()),
            ColumnKind::Blob { length_bytes } => out.push(length_bytes),
            ColumnKind::DateTime { fsp } | ColumnKind::Timestamp { fsp } | ColumnKind::Time { fsp } => out.push(fsp),
            ColumnKind::Enum { pack_length } => out.extend_from_slice(&[type_code::ENUM, pack_length]),
            ColumnKind::Set { pack_length } => out.extend_from_slice(&[type_code::SET, pack_length]),
            // Bits past whole bytes, then whole bytes.
            ColumnKind::Bit { bits } => out.extend_from_slice(&[bits % 8, bits / 8]),
            ColumnKind::Tiny | ColumnKind::Short | ColumnKind::Int24 | ColumnKind::Long | ColumnKind::LongLong | ColumnKind::Date | ColumnKind::Year => {}
        }
    }

    /// The columns TABLE_MAP's signedness bitmap has a bit for (MySQL counts YEAR among them).
    fn is_numeric(self) -> bool {
        matches!(
            self,
            ColumnKind::Year
                | ColumnKind::Tiny
                | ColumnKind::Short
                | ColumnKind::Int24
                | ColumnKind::Long
                | ColumnKind::LongLong
                | ColumnKind::Float
                | ColumnKind::Double
                | ColumnKind::Decimal { .. }
        )
    }

    fn is_character(self) -> bool {
        matches!(self, ColumnKind::Char { .. } | ColumnKind::VarChar { .. } | ColumnKind::Blob { .. })
    }
}

/// The body of a TABLE_MAP event: table `table_id` is `db`.`table` with `columns`, and the
/// primary key `primary_key` (column positions; empty: none). With MySQL 8's full row
/// metadata: signedness, character sets, column names and the primary key.
pub fn table_map_body(out: &mut Vec<u8>, table_id: u64, db: &str, table: &str, columns: &[Column<'_>], primary_key: &[usize]) {
    put_table_id(out, table_id);
    out.extend_from_slice(&1_u16.to_le_bytes()); // flags: TM_BIT_LEN_EXACT_F
    for name in [db, table] {
        out.push(u8::try_from(name.len()).expect("names are at most 64 characters"));
        out.extend_from_slice(name.as_bytes());
        out.push(0);
    }
    put_packed_int(out, columns.len() as u64);
    out.extend(columns.iter().map(|c| c.kind.type_code()));
    let mut metadata = Vec::new();
    for c in columns {
        c.kind.put_metadata(&mut metadata);
    }
    put_packed_int(out, metadata.len() as u64);
    out.extend_from_slice(&metadata);
    put_bitmap(out, BitOrder::Lsb, columns.iter().map(|c| c.nullable));
    // Optional metadata, each a type, a packed length and its value.
    let mut field = Vec::new();
    put_bitmap(&mut field, BitOrder::Msb, columns.iter().filter(|c| c.kind.is_numeric()).map(|c| c.unsigned));
    put_optional(out, optional::SIGNEDNESS, &field);
    field.clear();
    for c in columns.iter().filter(|c| c.kind.is_character()) {
        put_packed_int(&mut field, u64::from(c.collation));
    }
    put_optional(out, optional::COLUMN_CHARSET, &field);
    field.clear();
    for c in columns {
        put_packed_int(&mut field, c.name.len() as u64);
        field.extend_from_slice(c.name.as_bytes());
    }
    put_optional(out, optional::COLUMN_NAME, &field);
    if !primary_key.is_empty() {
        field.clear();
        for &p in primary_key {
            put_packed_int(&mut field, p as u64);
        }
        put_optional(out, optional::SIMPLE_PRIMARY_KEY, &field);
    }
}

fn put_optional(out: &mut Vec<u8>, kind: u8, value: &[u8]) {
    out.push(kind);
    put_packed_int(out, value.len() as u64);
    out.extend_from_slice(value);
}

fn put_table_id(out: &mut Vec<u8>, table_id: u64) {
    out.extend_from_slice(&table_id.to_le_bytes()[..TABLE_ID_BYTES]);
}

/// The order of bits in a byte of a bitmap.
#[derive(Clone, Copy)]
enum BitOrder {
    /// Least significant first: row events' bitmaps and TABLE_MAP's NULL-able one.
    Lsb,
    /// Most significant first: TABLE_MAP's optional metadata.
    Msb,
}

/// A bitmap, bit `i` for item `i`, in `order` within each byte.
fn put_bitmap(out: &mut Vec<u8>, order: BitOrder, bits: impl Iterator<Item = bool>) {
    for (i, bit) in bits.enumerate() {
        if i % 8 == 0 {
            out.push(0);
        }
        if bit {
            *out.last_mut().expect("pushed above") |= match order {
                BitOrder::Lsb => 1 << (i % 8),
                BitOrder::Msb => 0x80 >> (i % 8),
            };
        }
    }
}

/// The rows of one row event.
#[derive(Debug, Clone, Copy)]
pub enum Rows<'a> {
    /// WRITE_ROWS: the rows inserted.
    Write(&'a [&'a [BinaryValue]]),
    /// UPDATE_ROWS: each row before and after.
    Update(&'a [(&'a [BinaryValue], &'a [BinaryValue])]),
    /// DELETE_ROWS: the rows deleted.
    Delete(&'a [&'a [BinaryValue]]),
}

impl Rows<'_> {
    /// The event type these rows go in.
    #[must_use]
    pub fn event_type(&self) -> u8 {
        match self {
            Rows::Write(_) => super::event_type::WRITE_ROWS,
            Rows::Update(_) => super::event_type::UPDATE_ROWS,
            Rows::Delete(_) => super::event_type::DELETE_ROWS,
        }
    }
}

/// Why a value cannot be encoded for its column.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("column {column}: {why}")]
pub struct RowValueError {
    pub column: usize,
    pub why: String,
}

/// The body of a row event (version 2) of table `table_id` with `columns`: every column
/// present in every image. `statement_end` marks the statement's last row event.
///
/// # Errors
/// A value that does not fit its column's kind (a string where a date belongs); `out` may
/// hold part of the event then, and must be dropped.
pub fn rows_body(out: &mut Vec<u8>, table_id: u64, statement_end: bool, columns: &[Column<'_>], rows: Rows<'_>) -> Result<(), RowValueError> {
    put_table_id(out, table_id);
    out.extend_from_slice(&(ROWS_FLAG_NO_FOREIGN_KEY_CHECKS | if statement_end { ROWS_FLAG_STATEMENT_END } else { 0 }).to_le_bytes());
    out.extend_from_slice(&2_u16.to_le_bytes()); // extra data: its own length only
    put_packed_int(out, columns.len() as u64);
    put_bitmap(out, BitOrder::Lsb, columns.iter().map(|_| true));
    if matches!(rows, Rows::Update(_)) {
        put_bitmap(out, BitOrder::Lsb, columns.iter().map(|_| true));
    }
    match rows {
        Rows::Write(images) | Rows::Delete(images) => images.iter().try_for_each(|image| put_row(out, columns, image)),
        Rows::Update(pairs) => pairs.iter().try_for_each(|(before, after)| {
            put_row(out, columns, before)?;
            put_row(out, columns, after)
        }),
    }
}

/// One row image: the NULL bitmap, then each value that is not NULL.
fn put_row(out: &mut Vec<u8>, columns: &[Column<'_>], values: &[BinaryValue]) -> Result<(), RowValueError> {
    assert_eq!(columns.len(), values.len(), "a row has a value per column");
    put_bitmap(out, BitOrder::Lsb, values.iter().map(|v| matches!(v, BinaryValue::Null)));
    for (i, (c, v)) in columns.iter().zip(values).enumerate() {
        put_value(out, c.kind, v).map_err(|why| RowValueError { column: i, why })?;
    }
    Ok(())
}

fn put_value(out: &mut Vec<u8>, kind: ColumnKind, v: &BinaryValue) -> Result<(), String> {
    let wrong = || format!("{v:?} is not a {kind:?} value");
    let int = || match v {
        BinaryValue::Int(i) => Ok(*i as u64),
        BinaryValue::UInt(u) => Ok(*u),
        _ => Err(wrong()),
    };
    match (kind, v) {
        (_, BinaryValue::Null) => {}
        (ColumnKind::Tiny, _) => out.push(int()? as u8),
        (ColumnKind::Short, _) => out.extend_from_slice(&(int()? as u16).to_le_bytes()),
        (ColumnKind::Int24, _) => out.extend_from_slice(&int()?.to_le_bytes()[..3]),
        (ColumnKind::Long, _) => out.extend_from_slice(&(int()? as u32).to_le_bytes()),
        (ColumnKind::LongLong, _) => out.extend_from_slice(&int()?.to_le_bytes()),
        (ColumnKind::Year, _) => out.push(match int()? {
            0 => 0,
            y => u8::try_from(y.checked_sub(1900).ok_or_else(wrong)?).map_err(|_| wrong())?,
        }),
        (ColumnKind::Float, BinaryValue::Float(f)) => out.extend_from_slice(&f.to_le_bytes()),
        (ColumnKind::Float, BinaryValue::Double(f)) => out.extend_from_slice(&(*f as f32).to_le_bytes()),
        (ColumnKind::Double, BinaryValue::Double(f)) => out.extend_from_slice(&f.to_le_bytes()),
        (ColumnKind::Double, BinaryValue::Float(f)) => out.extend_from_slice(&f64::from(*f).to_le_bytes()),
        (ColumnKind::Decimal { precision, scale }, BinaryValue::Bytes(text)) => put_decimal(out, precision, scale, text).ok_or_else(wrong)?,
        (ColumnKind::Char { max_bytes }, BinaryValue::Bytes(b)) => put_length_prefixed(out, if max_bytes > 255 { 2 } else { 1 }, b).ok_or_else(wrong)?,
        (ColumnKind::VarChar { max_bytes }, BinaryValue::Bytes(b)) => put_length_prefixed(out, if max_bytes > 255 { 2 } else { 1 }, b).ok_or_else(wrong)?,
        (ColumnKind::Blob { length_bytes }, BinaryValue::Bytes(b)) => put_length_prefixed(out, usize::from(length_bytes), b).ok_or_else(wrong)?,
        (ColumnKind::Bit { bits }, _) => {
            let len = usize::from(bits.div_ceil(8)).clamp(1, 8);
            out.extend_from_slice(&int()?.to_be_bytes()[8 - len..]);
        }
        (ColumnKind::Enum { pack_length } | ColumnKind::Set { pack_length }, _) => {
            out.extend_from_slice(&int()?.to_le_bytes()[..usize::from(pack_length).min(8)]);
        }
        (ColumnKind::Date, BinaryValue::Date { year, month, day }) => {
            let packed = u32::from(*day) | (u32::from(*month) << 5) | (u32::from(*year) << 9);
            out.extend_from_slice(&packed.to_le_bytes()[..3]);
        }
        (ColumnKind::DateTime { fsp }, BinaryValue::DateTime { year, month, day, hour, minute, second, micro }) => {
            let ymd = ((u64::from(*year) * 13 + u64::from(*month)) << 5) | u64::from(*day);
            let hms = (u64::from(*hour) << 12) | (u64::from(*minute) << 6) | u64::from(*second);
            // A sign bit (set: not negative) above 17 bits of year and month.
            let int_part = ((ymd << 17) | hms) + (1 << 39);
            out.extend_from_slice(&int_part.to_be_bytes()[3..]);
            put_fraction(out, fsp, *micro);
        }
        (ColumnKind::Timestamp { fsp }, BinaryValue::DateTime { year, month, day, hour, minute, second, micro }) => {
            let days = days_from_civil(i64::from(*year), u32::from(*month), u32::from(*day));
            let seconds = days * 86_400 + i64::from(*hour) * 3600 + i64::from(*minute) * 60 + i64::from(*second);
            out.extend_from_slice(&u32::try_from(seconds).map_err(|_| wrong())?.to_be_bytes());
            put_fraction(out, fsp, *micro);
        }
        (ColumnKind::Time { fsp }, BinaryValue::Time { negative, days, hours, minutes, seconds, micro }) => {
            let hours = i64::from(*days) * 24 + i64::from(*hours);
            let int_part = (hours << 12) | (i64::from(*minutes) << 6) | i64::from(*seconds);
            put_time(out, fsp, *negative, int_part, i64::from(*micro));
        }
        _ => return Err(wrong()),
    }
    Ok(())
}

/// `bytes` after its length in `length_bytes` bytes; `None` when it does not fit them.
fn put_length_prefixed(out: &mut Vec<u8>, length_bytes: usize, bytes: &[u8]) -> Option<()> {
    let len = bytes.len() as u64;
    if length_bytes < 8 && len >> (8 * length_bytes) != 0 {
        return None;
    }
    out.extend_from_slice(&len.to_le_bytes()[..length_bytes]);
    out.extend_from_slice(bytes);
    Some(())
}

/// The fractional seconds of a DATETIME2, TIMESTAMP2 (or TIME2) value: `(fsp + 1) / 2`
/// bytes, big-endian, holding `micro` to `fsp` digits rounded down to an even count.
fn put_fraction(out: &mut Vec<u8>, fsp: u8, micro: u32) {
    match fsp {
        1 | 2 => out.push((micro / 10_000) as u8),
        3 | 4 => out.extend_from_slice(&((micro / 100) as u16).to_be_bytes()),
        5 | 6 => out.extend_from_slice(&micro.to_be_bytes()[1..]),
        _ => {}
    }
}

/// A TIME2 value: MySQL packs `int_part` (hours << 12 | minutes << 6 | seconds) and the
/// microseconds into one signed number, `int_part << 24 | micro`, negated for a negative
/// time, and stores it offset to be unsigned: whole (5 or 6 digits of fraction), or as its
/// integer part (`>> 24`) and, for 1 to 4 digits, its fraction part (`% (1 << 24)`, so
/// negative for a negative time) scaled down and stored signed.
fn put_time(out: &mut Vec<u8>, fsp: u8, negative: bool, int_part: i64, micro: i64) {
    const INT_OFFSET: i64 = 0x80_0000;
    const OFFSET: i64 = 0x8000_0000_0000;
    let packed = if negative { -((int_part << 24) + micro) } else { (int_part << 24) + micro };
    let int_stored = (packed >> 24) + INT_OFFSET;
    let frac = packed % (1 << 24);
    match fsp {
        1 | 2 => {
            out.extend_from_slice(&int_stored.to_be_bytes()[5..]);
            out.push((frac / 10_000) as i8 as u8);
        }
        3 | 4 => {
            out.extend_from_slice(&int_stored.to_be_bytes()[5..]);
            out.extend_from_slice(&((frac / 100) as i16).to_be_bytes());
        }
        5 | 6 => out.extend_from_slice(&(packed + OFFSET).to_be_bytes()[2..]),
        _ => out.extend_from_slice(&int_stored.to_be_bytes()[5..]),
    }
}

/// Days from 1970-01-01 to the given civil date (proleptic Gregorian).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Bytes of `digits` decimal digits in MySQL's binary decimal format (9 digits take 4).
const DIGITS_BYTES: [usize; 10] = [0, 1, 1, 2, 2, 3, 3, 4, 4, 4];

/// A DECIMAL(precision, scale) given as text (`-123.45`) in MySQL's binary decimal format:
/// the integer and fraction digits in groups of 9 (4 bytes each, big-endian; a partial group
/// in the fewest bytes, before the integer part's full groups and after the fraction's), the
/// top bit set for a value that is not negative, every byte inverted for one that is.
/// `None` for text that is not such a decimal.
fn put_decimal(out: &mut Vec<u8>, precision: u8, scale: u8, text: &[u8]) -> Option<()> {
    let text = std::str::from_utf8(text).ok()?;
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (int_digits, frac_digits) = digits.split_once('.').unwrap_or((digits, ""));
    let int_len = usize::from(precision.checked_sub(scale)?);
    let scale = usize::from(scale);
    let int_digits = int_digits.trim_start_matches('0');
    if int_digits.len() > int_len || frac_digits.len() > scale || !int_digits.bytes().chain(frac_digits.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    // Every digit, the integer part left-padded to its width and the fraction right-padded.
    let int_padded = format!("{int_digits:0>int_len$}");
    let frac_padded = format!("{frac_digits:0<scale$}");
    let start = out.len();
    let group = |s: &str| -> u32 { s.parse().unwrap_or(0) };
    let lead = int_len % 9;
    put_be(out, group(&int_padded[..lead]), DIGITS_BYTES[lead]);
    for chunk in int_padded.as_bytes()[lead..].chunks(9) {
        put_be(out, group(std::str::from_utf8(chunk).expect("ASCII digits")), 4);
    }
    let full = scale / 9 * 9;
    for chunk in frac_padded.as_bytes()[..full].chunks(9) {
        put_be(out, group(std::str::from_utf8(chunk).expect("ASCII digits")), 4);
    }
    put_be(out, group(&frac_padded[full..]), DIGITS_BYTES[scale - full]);
    if negative {
        for b in &mut out[start..] {
            *b = !*b;
        }
    }
    out[start] ^= 0x80;
    Some(())
}

fn put_be(out: &mut Vec<u8>, v: u32, bytes: usize) {
    out.extend_from_slice(&v.to_be_bytes()[4 - bytes..]);
}
