//! Order-preserving key encoding for primary and secondary indexes.
//!
//! An index key is a byte string built from one or more values so that comparing
//! two keys byte by byte gives the same order as comparing the values one by one
//! under each key part's collation. Each value starts with a tag byte
//! (`TAG_NULL` < numbers < strings < temporal values), so NULL sorts first as in
//! InnoDB. Variable-length parts are escaped (`0x00` becomes `0x00 0xFF`) and end
//! with `0x00 0x01`, so no encoded part is a prefix of a larger one.
//!
//! Invariant: within one index all values of one key part are of one kind (the SQL
//! layer coerces values to the column type before they reach storage), so numbers
//! of different kinds never meet in one key part; `Int` and `UInt` do share an
//! encoding so a signed and an unsigned bound compare correctly.

use crate::value::{Collation, Value};

pub const TAG_NULL: u8 = 0x01;
pub const TAG_INTEGER: u8 = 0x10;
pub const TAG_DOUBLE: u8 = 0x11;
pub const TAG_DECIMAL: u8 = 0x12;
pub const TAG_STRING: u8 = 0x20;
pub const TAG_BYTES: u8 = 0x21;
pub const TAG_DATE: u8 = 0x30;
pub const TAG_DATETIME: u8 = 0x31;
pub const TAG_TIME: u8 = 0x32;
/// Escape for a zero byte inside a variable-length part.
pub const ESCAPE_ZERO: [u8; 2] = [0x00, 0xFF];
/// Terminator of a variable-length part; sorts below any escaped content byte.
pub const TERMINATOR: [u8; 2] = [0x00, 0x01];
/// DECIMAL key parts: a sign byte, then the biased exponent and the digits (inverted for
/// negative values so larger magnitudes sort first), then a terminator.
pub const DECIMAL_NEGATIVE: u8 = 0x01;
pub const DECIMAL_ZERO: u8 = 0x02;
pub const DECIMAL_POSITIVE: u8 = 0x03;
/// Added to a decimal's exponent so it encodes as an unsigned big-endian u16.
pub const DECIMAL_EXPONENT_BIAS: i64 = 0x8000;

/// The unsigned integer a one-part integer key encodes (a hidden row id), or `None`.
#[must_use]
pub fn decode_uint_key(key: &[u8]) -> Option<u64> {
    let (&tag, rest) = key.split_first()?;
    let bytes: [u8; 16] = rest.try_into().ok()?;
    let value = (u128::from_be_bytes(bytes) ^ (1u128 << 127)) as i128;
    (tag == TAG_INTEGER).then(|| u64::try_from(value).ok()).flatten()
}

/// Append the encoding of `value` under `collation` to `out`.
pub fn encode_value(out: &mut Vec<u8>, value: &Value, collation: Collation) {
    match value {
        Value::Null => out.push(TAG_NULL),
        Value::Int(i) => {
            out.push(TAG_INTEGER);
            out.extend_from_slice(&((i128::from(*i) as u128) ^ (1u128 << 127)).to_be_bytes());
        }
        Value::UInt(u) => {
            out.push(TAG_INTEGER);
            out.extend_from_slice(&((i128::from(*u) as u128) ^ (1u128 << 127)).to_be_bytes());
        }
        Value::Double(f) => {
            out.push(TAG_DOUBLE);
            let bits = f.to_bits();
            let ordered = if bits >> 63 == 1 { !bits } else { bits | (1 << 63) };
            out.extend_from_slice(&ordered.to_be_bytes());
        }
        Value::Decimal(d) => {
            out.push(TAG_DECIMAL);
            encode_decimal(out, d);
        }
        Value::Str(s) => {
            out.push(TAG_STRING);
            escape_into(out, collation.weight(s).as_bytes());
        }
        Value::Bytes(b) => {
            out.push(TAG_BYTES);
            escape_into(out, b);
        }
        Value::Date(d) => {
            out.push(TAG_DATE);
            out.extend_from_slice(&((*d as u32) ^ (1 << 31)).to_be_bytes());
        }
        Value::DateTime(t) => {
            out.push(TAG_DATETIME);
            out.extend_from_slice(&((*t as u64) ^ (1 << 63)).to_be_bytes());
        }
        Value::Time(t) => {
            out.push(TAG_TIME);
            out.extend_from_slice(&((*t as u64) ^ (1 << 63)).to_be_bytes());
        }
    }
}

fn encode_decimal(out: &mut Vec<u8>, d: &crate::decimal::Decimal) {
    let (sign, exponent, digits) = d.key_parts();
    let biased = u16::try_from(exponent + DECIMAL_EXPONENT_BIAS).expect("decimal exponent within u16");
    match sign {
        std::cmp::Ordering::Equal => out.push(DECIMAL_ZERO),
        std::cmp::Ordering::Greater => {
            out.push(DECIMAL_POSITIVE);
            out.extend_from_slice(&biased.to_be_bytes());
            out.extend_from_slice(&digits);
            // Below every digit: a shorter digit string (a prefix) is the smaller value.
            out.push(0x00);
        }
        std::cmp::Ordering::Less => {
            out.push(DECIMAL_NEGATIVE);
            out.extend_from_slice(&(!biased).to_be_bytes());
            out.extend(digits.iter().map(|b| !b));
            // Above every inverted digit: the prefix is the larger (less negative) value.
            out.push(0xFF);
        }
    }
}

fn escape_into(out: &mut Vec<u8>, bytes: &[u8]) {
    for &b in bytes {
        if b == 0 {
            out.extend_from_slice(&ESCAPE_ZERO);
        } else {
            out.push(b);
        }
    }
    out.extend_from_slice(&TERMINATOR);
}

/// Encode a whole key from `(value, collation)` parts.
#[must_use]
pub fn encode_key<'a>(parts: impl IntoIterator<Item = (&'a Value, Collation)>) -> Vec<u8> {
    let mut out = Vec::with_capacity(24);
    for (value, collation) in parts {
        encode_value(&mut out, value, collation);
    }
    out
}

/// The smallest byte string greater than every key that starts with `prefix`.
#[must_use]
pub fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut out = prefix.to_vec();
    while let Some(last) = out.pop() {
        if last < 0xFF {
            out.push(last + 1);
            return Some(out);
        }
    }
    None
}

/// Whether no key lies between `lower` and `upper`: the lower bound is above the upper
/// one, or they meet and either excludes the meeting key. Every ordered-map range in
/// storage asks this first, because `BTreeMap::range` panics on such bounds, and an
/// inverted range (`BETWEEN 4 AND 0`) is an ordinary, empty query.
#[must_use]
pub fn range_is_empty<K: Ord + ?Sized>(lower: std::ops::Bound<&K>, upper: std::ops::Bound<&K>) -> bool {
    use std::ops::Bound::{Excluded, Included, Unbounded};
    match (lower, upper) {
        (Unbounded, _) | (_, Unbounded) => false,
        (Included(a), Included(b)) => a > b,
        (Included(a) | Excluded(a), Included(b) | Excluded(b)) => a >= b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decimal::Decimal;
    use std::str::FromStr;

    fn key(v: &Value) -> Vec<u8> {
        encode_key([(v, Collation::Utf8mb4AiCi)])
    }

    #[test]
    fn integers_order_across_sign_and_signedness() {
        let vals = [Value::Null, Value::Int(i64::MIN), Value::Int(-1), Value::Int(0), Value::UInt(1), Value::UInt(u64::MAX)];
        for w in vals.windows(2) {
            assert!(key(&w[0]) < key(&w[1]), "{:?} < {:?}", w[0], w[1]);
        }
        assert_eq!(key(&Value::Int(7)), key(&Value::UInt(7)));
    }

    #[test]
    fn decimals_and_doubles_order() {
        let d = |s: &str| Value::Decimal(Decimal::from_str(s).unwrap());
        let vals = [
            d("-100"),
            d("-10.5"),
            d("-10.25"),
            d("-0.5"),
            d("-0.05"),
            d("0"),
            d("0.01"),
            d("0.1"),
            d("1.5"),
            d("12"),
            d("12.5"),
            d("99999999999999999999999999999999999.5"),
        ];
        for w in vals.windows(2) {
            assert!(key(&w[0]) < key(&w[1]), "{:?} < {:?}", w[0], w[1]);
        }
        assert_eq!(key(&d("1.50")), key(&d("1.5")), "trailing zeros do not change the key");
        let f = [Value::Double(-2.5), Value::Double(-0.1), Value::Double(0.0), Value::Double(3.0)];
        for w in f.windows(2) {
            assert!(key(&w[0]) < key(&w[1]));
        }
    }

    #[test]
    fn strings_fold_case_and_never_prefix_collide() {
        assert_eq!(key(&Value::Str("ABC".into())), key(&Value::Str("abc".into())));
        let a = encode_key([(&Value::Str("a".into()), Collation::Utf8mb4Bin), (&Value::Str("b".into()), Collation::Utf8mb4Bin)]);
        let b = encode_key([(&Value::Str("ab".into()), Collation::Utf8mb4Bin), (&Value::Str(String::new()), Collation::Utf8mb4Bin)]);
        assert_ne!(a, b);
        assert!(key(&Value::Str("a".into())) < key(&Value::Str("a\0".into())));
        assert!(key(&Value::Str("a\0".into())) < key(&Value::Str("aa".into())));
    }

    #[test]
    fn inverted_and_touching_exclusive_ranges_are_empty() {
        use std::ops::Bound::{Excluded, Included, Unbounded};
        let (a, b) = (b"a".as_slice(), b"b".as_slice());
        assert!(range_is_empty(Included(b), Included(a)));
        assert!(range_is_empty(Excluded(a), Excluded(a)));
        assert!(range_is_empty(Included(a), Excluded(a)));
        assert!(range_is_empty(Excluded(a), Included(a)));
        assert!(!range_is_empty(Included(a), Included(a)));
        assert!(!range_is_empty(Excluded(a), Excluded(b)));
        assert!(!range_is_empty(Unbounded, Excluded(a)));
        assert!(!range_is_empty(Included(b), Unbounded));
    }

    /// Property: for values of one kind (the SQL layer coerces a key part to its column's
    /// type), byte order of the encodings is the values' order, and equal encodings mean
    /// equal values, under every collation, also as the first part of a two-part key.
    #[test]
    fn encodings_order_as_their_values_do() {
        use std::cmp::Ordering;
        let mut state = 0x0DDB_A11E_u64;
        let mut next = move |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        let words = ["", "a", "A", "a ", "ab", "aB", "b", "é", "E", "e", "z\0", "\0", "ß", "ss", "😀", "中"];
        for _ in 0..4_000 {
            let kind = next(5);
            let value = |next: &mut dyn FnMut(u64) -> u64| -> Value {
                match kind {
                    0 => Value::Int(i64::try_from(next(2_000)).unwrap() - 1_000),
                    1 => Value::UInt(next(u64::MAX)),
                    2 => Value::Decimal(Decimal::from_str(&format!("{}.{}", i64::try_from(next(200)).unwrap() - 100, next(1_000))).unwrap()),
                    3 => Value::Double((f64::from(u32::try_from(next(2_000)).unwrap()) - 1_000.0) / 8.0),
                    _ => Value::Str(format!("{}{}", words[usize::try_from(next(16)).unwrap()], words[usize::try_from(next(16)).unwrap()])),
                }
            };
            let (a, b) = (value(&mut next), value(&mut next));
            for collation in [Collation::Utf8mb4AiCi, Collation::Utf8mb4GeneralCi, Collation::Utf8mb4Bin] {
                let order = match (&a, &b) {
                    (Value::Int(x), Value::Int(y)) => x.cmp(y),
                    (Value::UInt(x), Value::UInt(y)) => x.cmp(y),
                    (Value::Decimal(x), Value::Decimal(y)) => x.cmp(y),
                    (Value::Double(x), Value::Double(y)) => x.partial_cmp(y).unwrap(),
                    (Value::Str(x), Value::Str(y)) => collation.compare(x, y),
                    _ => unreachable!("one kind"),
                };
                let (ka, kb) = (encode_key([(&a, collation)]), encode_key([(&b, collation)]));
                assert_eq!(ka.cmp(&kb), order, "{a:?} vs {b:?} under {collation:?}");
                let tail = Value::Int(7);
                let (ta, tb) = (encode_key([(&a, collation), (&tail, collation)]), encode_key([(&b, collation), (&tail, collation)]));
                assert_eq!(ta.cmp(&tb), order, "{a:?} vs {b:?} as a first key part");
                if order != Ordering::Equal {
                    assert!(!kb.starts_with(&ka) && !ka.starts_with(&kb), "no encoding is a prefix of another value's: {a:?} {b:?}");
                }
            }
        }
    }
}
