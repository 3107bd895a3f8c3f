//! Datums: the values a row holds, and how they order.
//!
//! A [`Value`] is what a column stores after the SQL layer has coerced it to the
//! column's type: an integer column holds `Int` or `UInt`, a DECIMAL column holds
//! `Decimal` rescaled to the column's scale, a character column holds `Str`, and so
//! on. Storage never converts between kinds; it only orders values (for indexes,
//! through [`crate::key`]) and hands them back.
//!
//! Temporal values are kept as plain numbers so they order and encode cheaply:
//! `Date` is days since 0000-01-01 (proleptic Gregorian, via chrono), `DateTime`
//! is microseconds since 1970-01-01 00:00:00 (no time zone: MySQL's DATETIME),
//! and `Time` is signed microseconds (MySQL's TIME range is +-838:59:59).

use crate::decimal::Decimal;

/// One stored or computed value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Int(i64),
    UInt(u64),
    Double(f64),
    Decimal(Decimal),
    /// Character data, always valid UTF-8 (utf8mb4).
    Str(String),
    /// Binary data (BLOB, VARBINARY, BINARY).
    Bytes(Vec<u8>),
    /// Days from the common era epoch as chrono counts them (`num_days_from_ce`).
    Date(i32),
    /// Microseconds since 1970-01-01 00:00:00, zone-less.
    DateTime(i64),
    /// Signed microseconds.
    Time(i64),
}

impl Value {
    #[must_use]
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }
}

/// A row: one value per column of the table, in column order.
pub type Row = Vec<Value>;

/// How character data compares: the collations Quill implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Collation {
    /// `utf8mb4_0900_ai_ci`: accent- and case-insensitive, NO PAD (MySQL 8's default).
    #[default]
    Utf8mb4AiCi,
    /// `utf8mb4_general_ci`: case-insensitive, PAD SPACE (trailing spaces ignored).
    Utf8mb4GeneralCi,
    /// `utf8mb4_bin`: code-point order.
    Utf8mb4Bin,
    /// `binary`: byte order (BLOB, VARBINARY).
    Binary,
}

impl Collation {
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Collation::Utf8mb4AiCi => "utf8mb4_0900_ai_ci",
            Collation::Utf8mb4GeneralCi => "utf8mb4_general_ci",
            Collation::Utf8mb4Bin => "utf8mb4_bin",
            Collation::Binary => "binary",
        }
    }

    /// MySQL's collation id, as sent in column definitions.
    #[must_use]
    pub fn id(self) -> u16 {
        match self {
            Collation::Utf8mb4AiCi => 255,
            Collation::Utf8mb4GeneralCi => 45,
            Collation::Utf8mb4Bin => 46,
            Collation::Binary => 63,
        }
    }

    #[must_use]
    pub fn from_name(name: &str) -> Option<Collation> {
        // MySQL takes a collation's name quoted too (`COLLATE 'utf8mb4_bin'`, Knex's DDL).
        let name = name.trim_matches(|c| matches!(c, '\'' | '"' | '`'));
        match name.to_ascii_lowercase().as_str() {
            "utf8mb4_0900_ai_ci"
            | "utf8mb4_unicode_ci"
            | "utf8mb4_unicode_520_ci"
            | "utf8_general_ci"
            | "utf8mb3_general_ci"
            | "utf8_unicode_ci"
            | "latin1_swedish_ci"
            | "latin1_general_ci" => Some(Collation::Utf8mb4AiCi),
            "utf8mb4_general_ci" => Some(Collation::Utf8mb4GeneralCi),
            "utf8mb4_bin" | "utf8_bin" | "utf8mb3_bin" | "latin1_bin" => Some(Collation::Utf8mb4Bin),
            "binary" => Some(Collation::Binary),
            _ => None,
        }
    }

    /// The weight string of `s`: two strings compare equal under this collation
    /// exactly when their weight strings are equal, and order as they do.
    #[must_use]
    pub fn weight(self, s: &str) -> String {
        match self {
            Collation::Utf8mb4Bin | Collation::Binary => s.to_owned(),
            Collation::Utf8mb4AiCi => fold_accents_and_case(s),
            Collation::Utf8mb4GeneralCi => fold_accents_and_case(s.trim_end_matches(' ')),
        }
    }

    /// Compare two strings under this collation.
    #[must_use]
    pub fn compare(self, a: &str, b: &str) -> std::cmp::Ordering {
        match self {
            Collation::Utf8mb4Bin | Collation::Binary => a.cmp(b),
            _ => {
                // ASCII letters compare case-folded byte by byte, up to the first difference;
                // anything non-ASCII on the way (an accent, a combining mark) takes the full
                // weights, whose folding may make it equal to something shorter.
                let (x, y) = if self == Collation::Utf8mb4GeneralCi { (a.trim_end_matches(' '), b.trim_end_matches(' ')) } else { (a, b) };
                let (x, y) = (x.as_bytes(), y.as_bytes());
                for (&p, &q) in x.iter().zip(y) {
                    if !p.is_ascii() || !q.is_ascii() {
                        return self.weight(a).cmp(&self.weight(b));
                    }
                    let (p, q) = (p.to_ascii_lowercase(), q.to_ascii_lowercase());
                    if p != q {
                        return p.cmp(&q);
                    }
                }
                let rest = if x.len() > y.len() { &x[y.len()..] } else { &y[x.len()..] };
                if !rest.is_ascii() {
                    return self.weight(a).cmp(&self.weight(b));
                }
                x.len().cmp(&y.len())
            }
        }
    }
}

fn fold_accents_and_case(s: &str) -> String {
    if s.is_ascii() {
        return s.to_ascii_lowercase();
    }
    use unicode_normalization::UnicodeNormalization;
    use unicode_normalization::char::is_combining_mark;
    s.nfd().filter(|c| !is_combining_mark(*c)).flat_map(char::to_lowercase).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cmp::Ordering;

    #[test]
    fn default_collation_ignores_case_and_accents_but_not_trailing_space() {
        let c = Collation::Utf8mb4AiCi;
        assert_eq!(c.compare("abc", "ABC"), Ordering::Equal);
        assert_eq!(c.compare("café", "CAFE"), Ordering::Equal);
        assert_eq!(c.compare("cafe\u{301}", "CAFE"), Ordering::Equal, "a combining mark after the common prefix");
        assert_eq!(c.compare("abd", "ABC"), Ordering::Greater);
        assert_eq!(c.compare("ab", "ABC"), Ordering::Less);
        assert_ne!(c.compare("a ", "a"), Ordering::Equal);
        assert_eq!(Collation::Utf8mb4GeneralCi.compare("a ", "A"), Ordering::Equal);
        assert_eq!(Collation::Utf8mb4Bin.compare("a", "A"), Ordering::Greater);
    }
}
