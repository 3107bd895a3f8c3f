//! Row formats: how the row store lays out a version's image in memory, chosen per table by
//! `ROW_FORMAT` (`docs/row-formats.md`).
//!
//! - [`RowFormat::Dynamic`] (the default): each value takes the bytes it needs. Lengths and
//!   integers are LEB128 varints, and a DECIMAL of up to 18 digits is its unscaled `i64` and
//!   scale, never text.
//! - [`RowFormat::Fixed`]: every column has a slot of one size for the table, CHAR and
//!   VARCHAR padded to their maximum bytes (4 per character in utf8mb4), as MyISAM's fixed
//!   rows are. Every row of such a table has the same length, [`FixedLayout::row_len`].
//!
//! The dynamic layout is also the row encoding of the commit log and checkpoints
//! ([`log_row`], specified byte by byte in `docs/log-format.md`, "Row encoding"), so a
//! dynamic table's rows go to the log as they are. A fixed image never leaves the process:
//! it is logged as the dynamic image of its row, so a table's format can change without a
//! change on disk.
//!
//! Invariants:
//! - an image starts with its format byte ([`IMAGE_DYNAMIC`] or [`IMAGE_FIXED`]), so a row
//!   that does not fit a fixed layout (a value longer than its slot, which the SQL layer's
//!   coercion rules out) is kept, in the dynamic layout, rather than lost;
//! - decoding is total over what [`RowFormat::encode`] produced; anything else gives `None`;
//! - [`RowFormat::log_image_into`] of an image is exactly [`log_row`] of the row it decodes to.

use quill_io::cursor::{take, take_array};

use crate::decimal::Decimal;
use crate::row::ValueRef;
use crate::value::{Row, Value};

/// The commit log's and checkpoints' row encoding (`docs/log-format.md`, "Row encoding"):
/// the dynamic image of `row`, whatever the layout of its table.
#[must_use]
pub fn log_row(row: &Row) -> Vec<u8> {
    let mut out = Vec::with_capacity(dynamic_len_bound(row));
    encode_dynamic(row, &mut out);
    out
}

/// The row a log row ([`log_row`]) encodes; `None` for anything else, since these bytes come
/// back from disk.
#[must_use]
pub fn decode_log_row(bytes: &[u8]) -> Option<Row> {
    match bytes.split_first()? {
        (&IMAGE_DYNAMIC, rest) => cells_dynamic(rest)?.into_iter().map(Cell::to_value).collect(),
        _ => None,
    }
}

/// First byte of an image in the dynamic layout.
pub const IMAGE_DYNAMIC: u8 = 0;
/// First byte of an image in a fixed layout.
pub const IMAGE_FIXED: u8 = 1;

const TAG_NULL: u8 = 0;
const TAG_INT: u8 = 1;
const TAG_UINT: u8 = 2;
const TAG_DOUBLE: u8 = 3;
/// A DECIMAL as text (more than 18 digits).
const TAG_DECIMAL_TEXT: u8 = 4;
const TAG_STR: u8 = 5;
const TAG_BYTES: u8 = 6;
const TAG_DATE: u8 = 7;
const TAG_DATETIME: u8 = 8;
const TAG_TIME: u8 = 9;
/// A DECIMAL as its unscaled `i64` and a scale byte.
const TAG_DECIMAL_I64: u8 = 10;

/// Bytes of a number's slot payload: every integer, floating-point and temporal value is at
/// most 8 bytes; a DECIMAL of up to 18 digits is 8 bytes of unscaled value and a scale byte.
pub const NUMBER_SLOT_BYTES: u32 = 9;

/// How one table lays out its row images.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum RowFormat {
    #[default]
    Dynamic,
    Fixed(FixedLayout),
}

/// The slots of a fixed-format row: one per column, each a tag byte and `width` bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixedLayout {
    slots: Vec<Slot>,
    row_len: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Slot {
    /// Payload bytes, length prefix included.
    width: usize,
    /// Bytes of a string's length prefix (1, 2 or 4: what its longest value needs).
    len_bytes: usize,
}

/// The widest value one column of a fixed-format table holds, as the SQL layer derives it
/// from the column's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnWidth {
    /// Integers, floating point, temporal values and DECIMALs of up to 18 digits.
    Number,
    /// A DECIMAL of more than 18 digits, kept as text of at most this many bytes.
    DecimalText(u32),
    /// Character or binary data of at most this many bytes.
    Bytes(u32),
}

impl FixedLayout {
    /// The layout of a table whose columns hold at most `widths`.
    #[must_use]
    pub fn new(widths: &[ColumnWidth]) -> FixedLayout {
        let slots: Vec<Slot> = widths
            .iter()
            .map(|w| match *w {
                ColumnWidth::Number => Slot { width: NUMBER_SLOT_BYTES as usize, len_bytes: 0 },
                ColumnWidth::DecimalText(max) => {
                    let max = max.max(NUMBER_SLOT_BYTES - 1) as usize;
                    Slot { width: max + 1, len_bytes: 1 }
                }
                ColumnWidth::Bytes(max) => {
                    let len_bytes = length_prefix_bytes(max);
                    Slot { width: len_bytes + max as usize, len_bytes }
                }
            })
            .collect();
        let row_len = 1 + slots.iter().map(|s| 1 + s.width).sum::<usize>();
        FixedLayout { slots, row_len }
    }

    /// Bytes of every row image of this layout.
    #[must_use]
    pub fn row_len(&self) -> usize {
        self.row_len
    }
}

/// A string slot's length prefix: 1 byte up to 255 bytes of data, 2 up to 65535, else 4.
fn length_prefix_bytes(max: u32) -> usize {
    if max < 256 {
        1
    } else if max < 65_536 {
        2
    } else {
        4
    }
}

impl RowFormat {
    /// `"Fixed"` or `"Dynamic"`, as `SHOW TABLE STATUS` names the format.
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            RowFormat::Dynamic => "Dynamic",
            RowFormat::Fixed(_) => "Fixed",
        }
    }

    /// The image of `row` in this format.
    #[must_use]
    pub fn encode(&self, row: &Row) -> Box<[u8]> {
        let mut out = Vec::with_capacity(match self {
            RowFormat::Fixed(layout) => layout.row_len,
            RowFormat::Dynamic => dynamic_len_bound(row),
        });
        self.encode_into(row, &mut out);
        // An exact allocation: shrinking in place (`into_boxed_slice`) may keep the bound's
        // size class, and a table holds millions of these.
        if out.len() == out.capacity() { out.into_boxed_slice() } else { Box::from(out.as_slice()) }
    }

    /// Appends the image of `row` in this format to `out` (a bulk write's buffer).
    pub fn encode_into(&self, row: &Row, out: &mut Vec<u8>) {
        if let RowFormat::Fixed(layout) = self
            && encode_fixed(layout, row, out)
        {
            return;
        }
        encode_dynamic(row, out);
    }

    /// The row of an image this format encoded (`None`: not such an image).
    #[must_use]
    pub fn decode(&self, image: &[u8]) -> Option<Row> {
        self.cells(image)?.into_iter().map(Cell::to_value).collect()
    }

    /// Appends an image this format encoded to `out` in the commit log's row encoding, a
    /// dynamic image: the image itself for this layout, or the dynamic image of the row it
    /// decodes to (`None`, with `out` as it was: not such an image).
    pub fn log_image_into(&self, image: &[u8], out: &mut Vec<u8>) -> Option<()> {
        match image.first()? {
            &IMAGE_DYNAMIC => {
                debug_assert!(cells_dynamic(&image[1..]).is_some(), "a dynamic image decodes");
                out.extend_from_slice(image);
            }
            _ => encode_dynamic(&self.decode(image)?, out),
        }
        Some(())
    }

    /// Value `col` of an image this format encoded (`None`: not such an image, or no such
    /// column), without decoding the rest of the row; cheapest for the first columns.
    #[must_use]
    pub fn value_at(&self, image: &[u8], col: usize) -> Option<Value> {
        match image.split_first()? {
            (&IMAGE_DYNAMIC, rest) => nth_dynamic_cell(rest, col)?.to_value(),
            (&IMAGE_FIXED, _) => self.cells(image)?.get(col).copied()?.to_value(),
            _ => None,
        }
    }

    fn cells<'a>(&self, image: &'a [u8]) -> Option<Vec<Cell<'a>>> {
        match image.split_first()? {
            (&IMAGE_DYNAMIC, rest) => cells_dynamic(rest),
            (&IMAGE_FIXED, rest) => match self {
                RowFormat::Fixed(layout) => cells_fixed(layout, rest),
                RowFormat::Dynamic => None,
            },
            _ => None,
        }
    }
}

/// One value of an image, borrowed from it: what [`RowFormat::decode`] and
/// [`RowFormat::value_at`] read, so the two layouts are parsed in one place each.
#[derive(Clone, Copy)]
enum Cell<'a> {
    /// Any value but a DECIMAL of up to 18 digits.
    Plain(ValueRef<'a>),
    /// A DECIMAL as its unscaled value and scale.
    Decimal(i64, u8),
}

impl Cell<'_> {
    fn to_value(self) -> Option<Value> {
        Some(match self {
            Cell::Decimal(unscaled, scale) => Value::Decimal(Decimal::new(unscaled, u32::from(scale))),
            Cell::Plain(value) => match value {
                ValueRef::Null => Value::Null,
                ValueRef::Int(i) => Value::Int(i),
                ValueRef::UInt(u) => Value::UInt(u),
                ValueRef::Double(f) => Value::Double(f),
                ValueRef::DecimalText(text) => Value::Decimal(text.parse().ok()?),
                ValueRef::Str(s) => Value::Str(s.to_owned()),
                ValueRef::Bytes(b) => Value::Bytes(b.to_vec()),
                ValueRef::Date(d) => Value::Date(d),
                ValueRef::DateTime(us) => Value::DateTime(us),
                ValueRef::Time(us) => Value::Time(us),
            },
        })
    }
}

// ---- dynamic ----------------------------------------------------------------------------

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn take_varint(bytes: &mut &[u8]) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let [b] = take_array::<1>(bytes)?;
        if shift == 63 && b & 0x7f > 1 {
            return None; // more than 64 bits
        }
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Bytes of a dynamic image of `row`, for one exact allocation: exact, but for DECIMALs,
/// counted at their largest.
fn dynamic_len_bound(row: &Row) -> usize {
    1 + 3
        + row
            .iter()
            .map(|v| match v {
                Value::Null => 1,
                Value::Int(_) | Value::UInt(_) | Value::Date(_) | Value::DateTime(_) | Value::Time(_) => 11,
                Value::Double(_) => 9,
                Value::Decimal(_) => 2 + 10,
                Value::Str(s) => 6 + s.len(),
                Value::Bytes(b) => 6 + b.len(),
            })
            .sum::<usize>()
}

fn encode_dynamic(row: &Row, out: &mut Vec<u8>) {
    out.push(IMAGE_DYNAMIC);
    put_varint(out, row.len() as u64);
    for value in row {
        match value {
            Value::Null => out.push(TAG_NULL),
            Value::Int(i) => {
                out.push(TAG_INT);
                put_varint(out, zigzag(*i));
            }
            Value::UInt(u) => {
                out.push(TAG_UINT);
                put_varint(out, *u);
            }
            Value::Double(f) => {
                out.push(TAG_DOUBLE);
                out.extend_from_slice(&f.to_bits().to_le_bytes());
            }
            Value::Decimal(d) => match d.to_unscaled_i64() {
                Some((unscaled, scale)) => {
                    out.push(TAG_DECIMAL_I64);
                    out.push(scale);
                    put_varint(out, zigzag(unscaled));
                }
                None => put_dynamic_bytes(out, TAG_DECIMAL_TEXT, d.to_string().as_bytes()),
            },
            Value::Str(s) => put_dynamic_bytes(out, TAG_STR, s.as_bytes()),
            Value::Bytes(b) => put_dynamic_bytes(out, TAG_BYTES, b),
            Value::Date(d) => {
                out.push(TAG_DATE);
                put_varint(out, zigzag(i64::from(*d)));
            }
            Value::DateTime(us) => {
                out.push(TAG_DATETIME);
                put_varint(out, zigzag(*us));
            }
            Value::Time(us) => {
                out.push(TAG_TIME);
                put_varint(out, zigzag(*us));
            }
        }
    }
}

fn put_dynamic_bytes(out: &mut Vec<u8>, tag: u8, bytes: &[u8]) {
    out.push(tag);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

fn take_dynamic_bytes<'a>(bytes: &mut &'a [u8]) -> Option<&'a [u8]> {
    let len = usize::try_from(take_varint(bytes)?).ok()?;
    take(bytes, len)
}

fn cells_dynamic(mut bytes: &[u8]) -> Option<Vec<Cell<'_>>> {
    let count = usize::try_from(take_varint(&mut bytes)?).ok()?;
    let mut cells = Vec::with_capacity(count.min(bytes.len()));
    for _ in 0..count {
        cells.push(take_dynamic_cell(&mut bytes)?);
    }
    bytes.is_empty().then_some(cells)
}

/// The value `col` of a dynamic image's values (after its format byte), reading no further.
fn nth_dynamic_cell(mut bytes: &[u8], col: usize) -> Option<Cell<'_>> {
    let count = usize::try_from(take_varint(&mut bytes)?).ok()?;
    if col >= count {
        return None;
    }
    for _ in 0..col {
        take_dynamic_cell(&mut bytes)?;
    }
    take_dynamic_cell(&mut bytes)
}

fn take_dynamic_cell<'a>(bytes: &mut &'a [u8]) -> Option<Cell<'a>> {
    let [tag] = take_array::<1>(bytes)?;
    Some(match tag {
        TAG_NULL => Cell::Plain(ValueRef::Null),
        TAG_INT => Cell::Plain(ValueRef::Int(unzigzag(take_varint(bytes)?))),
        TAG_UINT => Cell::Plain(ValueRef::UInt(take_varint(bytes)?)),
        TAG_DOUBLE => Cell::Plain(ValueRef::Double(f64::from_bits(u64::from_le_bytes(take_array(bytes)?)))),
        TAG_DECIMAL_I64 => {
            let [scale] = take_array::<1>(bytes)?;
            Cell::Decimal(unzigzag(take_varint(bytes)?), scale)
        }
        TAG_DECIMAL_TEXT => Cell::Plain(ValueRef::DecimalText(std::str::from_utf8(take_dynamic_bytes(bytes)?).ok()?)),
        TAG_STR => Cell::Plain(ValueRef::Str(std::str::from_utf8(take_dynamic_bytes(bytes)?).ok()?)),
        TAG_BYTES => Cell::Plain(ValueRef::Bytes(take_dynamic_bytes(bytes)?)),
        TAG_DATE => Cell::Plain(ValueRef::Date(i32::try_from(unzigzag(take_varint(bytes)?)).ok()?)),
        TAG_DATETIME => Cell::Plain(ValueRef::DateTime(unzigzag(take_varint(bytes)?))),
        TAG_TIME => Cell::Plain(ValueRef::Time(unzigzag(take_varint(bytes)?))),
        _ => return None,
    })
}

// ---- fixed ------------------------------------------------------------------------------

/// Appends the fixed image of `row` to `out`; `false`, with `out` as it was, when a value
/// does not fit its slot (or the row has another number of columns).
fn encode_fixed(layout: &FixedLayout, row: &Row, out: &mut Vec<u8>) -> bool {
    let start = out.len();
    let fits = row.len() == layout.slots.len() && {
        out.resize(start + layout.row_len, 0);
        fill_fixed(layout, row, &mut out[start..]).is_some()
    };
    if !fits {
        out.truncate(start);
    }
    fits
}

/// Fills a zeroed fixed image of `row` (`None`: a value does not fit its slot).
fn fill_fixed(layout: &FixedLayout, row: &Row, out: &mut [u8]) -> Option<()> {
    out[0] = IMAGE_FIXED;
    let mut at = 1;
    for (value, slot) in row.iter().zip(&layout.slots) {
        let payload = &mut out[at + 1..at + 1 + slot.width];
        let tag = match value {
            Value::Null => TAG_NULL,
            Value::Int(i) => put_number(payload, TAG_INT, &i.to_le_bytes())?,
            Value::UInt(u) => put_number(payload, TAG_UINT, &u.to_le_bytes())?,
            Value::Double(f) => put_number(payload, TAG_DOUBLE, &f.to_bits().to_le_bytes())?,
            Value::Date(d) => put_number(payload, TAG_DATE, &d.to_le_bytes())?,
            Value::DateTime(us) => put_number(payload, TAG_DATETIME, &us.to_le_bytes())?,
            Value::Time(us) => put_number(payload, TAG_TIME, &us.to_le_bytes())?,
            Value::Decimal(d) => match d.to_unscaled_i64() {
                Some((unscaled, scale)) if slot.width >= NUMBER_SLOT_BYTES as usize => {
                    payload[..8].copy_from_slice(&unscaled.to_le_bytes());
                    payload[8] = scale;
                    TAG_DECIMAL_I64
                }
                _ => put_slot_bytes(payload, slot.len_bytes.max(1), TAG_DECIMAL_TEXT, d.to_string().as_bytes())?,
            },
            Value::Str(s) => put_slot_bytes(payload, slot.len_bytes, TAG_STR, s.as_bytes())?,
            Value::Bytes(b) => put_slot_bytes(payload, slot.len_bytes, TAG_BYTES, b)?,
        };
        out[at] = tag;
        at += 1 + slot.width;
    }
    Some(())
}

fn put_number(payload: &mut [u8], tag: u8, bytes: &[u8]) -> Option<u8> {
    payload.get_mut(..bytes.len())?.copy_from_slice(bytes);
    Some(tag)
}

/// A length prefix of `len_bytes` and the bytes, in a slot's payload.
fn put_slot_bytes(payload: &mut [u8], len_bytes: usize, tag: u8, bytes: &[u8]) -> Option<u8> {
    if len_bytes == 0 || len_bytes + bytes.len() > payload.len() {
        return None;
    }
    let len = u32::try_from(bytes.len()).ok()?.to_le_bytes();
    if len_bytes < 4 && len[len_bytes..].iter().any(|&b| b != 0) {
        return None;
    }
    payload[..len_bytes].copy_from_slice(&len[..len_bytes]);
    payload[len_bytes..len_bytes + bytes.len()].copy_from_slice(bytes);
    Some(tag)
}

fn slot_bytes(payload: &[u8], len_bytes: usize) -> Option<&[u8]> {
    let mut len = [0u8; 4];
    len.get_mut(..len_bytes)?.copy_from_slice(payload.get(..len_bytes)?);
    payload.get(len_bytes..len_bytes + u32::from_le_bytes(len) as usize)
}

fn cells_fixed<'a>(layout: &FixedLayout, bytes: &'a [u8]) -> Option<Vec<Cell<'a>>> {
    if bytes.len() + 1 != layout.row_len {
        return None;
    }
    let mut cells = Vec::with_capacity(layout.slots.len());
    let mut at = 0;
    for slot in &layout.slots {
        let tag = bytes[at];
        let payload = &bytes[at + 1..at + 1 + slot.width];
        let eight = || payload.get(..8).map(|b| <[u8; 8]>::try_from(b).expect("8 bytes"));
        let cell = match tag {
            TAG_NULL => Cell::Plain(ValueRef::Null),
            TAG_INT => Cell::Plain(ValueRef::Int(i64::from_le_bytes(eight()?))),
            TAG_UINT => Cell::Plain(ValueRef::UInt(u64::from_le_bytes(eight()?))),
            TAG_DOUBLE => Cell::Plain(ValueRef::Double(f64::from_bits(u64::from_le_bytes(eight()?)))),
            TAG_DATE => Cell::Plain(ValueRef::Date(i32::from_le_bytes(payload.get(..4)?.try_into().ok()?))),
            TAG_DATETIME => Cell::Plain(ValueRef::DateTime(i64::from_le_bytes(eight()?))),
            TAG_TIME => Cell::Plain(ValueRef::Time(i64::from_le_bytes(eight()?))),
            TAG_DECIMAL_I64 => Cell::Decimal(i64::from_le_bytes(eight()?), *payload.get(8)?),
            TAG_DECIMAL_TEXT => Cell::Plain(ValueRef::DecimalText(std::str::from_utf8(slot_bytes(payload, slot.len_bytes.max(1))?).ok()?)),
            TAG_STR => Cell::Plain(ValueRef::Str(std::str::from_utf8(slot_bytes(payload, slot.len_bytes)?).ok()?)),
            TAG_BYTES => Cell::Plain(ValueRef::Bytes(slot_bytes(payload, slot.len_bytes)?)),
            _ => return None,
        };
        cells.push(cell);
        at += 1 + slot.width;
    }
    Some(cells)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The log encoding's test row with a DECIMAL of 9 digits too (stored as an integer).
    fn every_kind() -> Row {
        let mut row = crate::row::tests::every_kind();
        row.insert(4, Value::Decimal("-1234567.89".parse().unwrap()));
        row
    }

    fn layout() -> FixedLayout {
        use ColumnWidth::{Bytes, DecimalText, Number};
        FixedLayout::new(&[Number, Number, Number, Number, Number, DecimalText(67), Bytes(4 * 10), Bytes(300), Number, Number, Number])
    }

    #[test]
    fn both_formats_round_trip_every_kind_of_value() {
        for format in [RowFormat::Dynamic, RowFormat::Fixed(layout())] {
            let row = every_kind();
            let image = format.encode(&row);
            assert_eq!(format.decode(&image), Some(row), "{format:?}");
        }
    }

    #[test]
    fn a_value_read_alone_is_the_decoded_rows_value() {
        for format in [RowFormat::Dynamic, RowFormat::Fixed(layout())] {
            let row = every_kind();
            let image = format.encode(&row);
            for (col, value) in row.iter().enumerate() {
                assert_eq!(format.value_at(&image, col).as_ref(), Some(value), "{format:?} column {col}");
            }
            assert_eq!(format.value_at(&image, row.len()), None, "{format:?}: past the last column");
            assert_eq!(format.value_at(&image[..2], 3), None, "{format:?}: a truncated image");
        }
    }

    #[test]
    fn log_images_are_the_log_row_of_the_decoded_row_and_decode_back() {
        for format in [RowFormat::Dynamic, RowFormat::Fixed(layout())] {
            let image = format.encode(&every_kind());
            let mut logged = vec![7];
            format.log_image_into(&image, &mut logged).unwrap();
            assert_eq!(logged[1..], log_row(&every_kind()), "{format:?}: appended after what was there");
            assert_eq!(decode_log_row(&logged[1..]), Some(every_kind()), "{format:?}");
        }
        let fixed = RowFormat::Fixed(layout());
        let mut out = vec![];
        assert_eq!(fixed.log_image_into(&fixed.encode(&every_kind())[..5], &mut out), None);
        assert!(out.is_empty(), "nothing appended for an image that does not decode");
        // A fixed image is never a log row.
        assert_eq!(decode_log_row(&fixed.encode(&every_kind())), None);
    }

    #[test]
    fn fixed_rows_all_have_the_layouts_length_and_a_misfit_is_kept_dynamic() {
        let format = RowFormat::Fixed(layout());
        let short = format.encode(&every_kind());
        let mut long_row = every_kind();
        long_row[6] = Value::Str("ten chars!".into());
        assert_eq!(format.encode(&long_row).len(), short.len());
        assert_eq!(short.len(), layout().row_len());
        // Longer than its slot: stored in the dynamic layout, and read back whole.
        let mut misfit = every_kind();
        misfit[6] = Value::Str("x".repeat(41));
        let image = format.encode(&misfit);
        assert_eq!(image[0], IMAGE_DYNAMIC);
        assert_eq!(format.decode(&image), Some(misfit));
    }

    #[test]
    fn the_dynamic_layout_is_smaller_than_the_first_log_encoding_for_a_price_list_row() {
        let row = vec![
            Value::Int(123_456),
            Value::Str("01234567".into()),
            Value::Str("Artikel 123456 Tabletten 456 mg".into()),
            Value::Str("Hersteller 321".into()),
            Value::Str("   456".into()),
            Value::Decimal("4567.89".parse().unwrap()),
            Value::Decimal("456.89".parse().unwrap()),
            Value::Str("23456".into()),
        ];
        let dynamic = RowFormat::Dynamic.encode(&row);
        assert!(dynamic.len() + 20 < crate::row::row_bytes(&row).len(), "{} bytes", dynamic.len());
        assert_eq!(RowFormat::Dynamic.decode(&dynamic), Some(row));
    }

    #[test]
    fn truncated_or_mistagged_images_do_not_decode() {
        for format in [RowFormat::Dynamic, RowFormat::Fixed(layout())] {
            let image = format.encode(&every_kind());
            for cut in 0..image.len() {
                assert_eq!(format.decode(&image[..cut]), None, "{format:?} cut at {cut}");
            }
        }
        assert_eq!(RowFormat::Dynamic.decode(&[IMAGE_FIXED]), None);
        assert_eq!(RowFormat::Dynamic.decode(&[IMAGE_DYNAMIC, 1, 0x7f]), None);
        assert_eq!(RowFormat::Dynamic.decode(&[IMAGE_DYNAMIC, 1, TAG_UINT, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02]), None);
    }
}
