//! The type of an expression that returns one of several values: MySQL's type aggregation.
//!
//! `IF(c, a, b)`, `IFNULL(a, b)`, `COALESCE(a, …)` and `CASE … THEN a … ELSE b END` return
//! one of their value arguments, and the result column has one type for every row. MySQL
//! computes it from all the value arguments (`Item_func::aggregate_type`), not from the first
//! one: `IF(0, 1, 1.5e0)` is a DOUBLE, `IF(1, 1, 2.5)` a DECIMAL that sends `1.0`.
//! [`aggregate`] is that rule:
//!
//! - NULL arguments (the literal, or an expression of type NULL) do not count;
//! - integers with integers stay integers (the widest kind); signed with unsigned BIGINT
//!   becomes DECIMAL, as the values may not fit either;
//! - integers and decimals give a DECIMAL wide enough for both (scale the largest);
//! - FLOAT with FLOAT stays FLOAT; any other mix of numbers with a FLOAT or DOUBLE is DOUBLE;
//! - DATE, DATETIME, TIMESTAMP: DATETIME (DATE alone stays DATE, TIME alone TIME); DATE with
//!   TIME is DATETIME; YEAR with integers is an integer;
//! - JSON only with JSON stays JSON;
//! - anything else (numbers with strings, temporals with numbers or strings) is a string,
//!   binary if any argument is binary, as long as the longest argument's text.
//!
//! Invariant: the binder converts every value argument whose type is not already of the
//! aggregate's kind ([`needs_conversion`]) with a CAST to the aggregate, so the values sent
//! match the column type the client was told (a driver reading a DOUBLE column must get a
//! double, in the binary protocol most of all).

use quill_storage::Collation;

use quill_sql_types::types::{IntKind, LobKind, SqlType};

/// The longest VARCHAR an aggregate of strings is typed as before it becomes a TEXT type.
const VARCHAR_CHARS_MAX: u32 = 16_383;

/// The type of a result chosen among values of `types` (see the module doc).
#[must_use]
pub fn aggregate(types: &[SqlType]) -> SqlType {
    let known: Vec<&SqlType> = types.iter().filter(|t| **t != SqlType::Null).collect();
    let Some(first) = known.first() else { return SqlType::Null };
    if known.len() == 1 {
        return (*first).clone();
    }
    if known.iter().all(|t| matches!(t, SqlType::Int { .. } | SqlType::Year)) {
        return integers(&known);
    }
    if known.iter().all(|t| t.is_numeric()) {
        return numbers(&known);
    }
    if known.iter().all(|t| t.is_temporal()) {
        return temporals(&known);
    }
    if known.iter().all(|t| **t == SqlType::Json) {
        return SqlType::Json;
    }
    strings(&known)
}

/// Whether a value of type `from` must be converted to be a value of the aggregate `to`.
#[must_use]
pub fn needs_conversion(from: &SqlType, to: &SqlType) -> bool {
    match (from, to) {
        (SqlType::Null, _) | (_, SqlType::Null) => false,
        (SqlType::Int { unsigned: a, .. }, SqlType::Int { unsigned: b, .. }) => a != b,
        (SqlType::Year, SqlType::Year | SqlType::Int { .. }) => false,
        (SqlType::Decimal { scale: a, .. }, SqlType::Decimal { scale: b, .. }) => a != b,
        (SqlType::Double | SqlType::Float, SqlType::Double | SqlType::Float) => false,
        (SqlType::Date, SqlType::Date)
        | (SqlType::DateTime(_) | SqlType::Timestamp(_), SqlType::DateTime(_) | SqlType::Timestamp(_))
        | (SqlType::Time(_), SqlType::Time(_))
        | (SqlType::Json, SqlType::Json) => false,
        (f, t) if t.is_binary() => !f.is_binary(),
        (f, t) if t.is_string() && *t != SqlType::Json => !(f.is_string() && *f != SqlType::Json),
        _ => true,
    }
}

/// Converts `value` in place to `ty`, an aggregate's type, when `ty` is a number or a
/// temporal type and the value is of another kind (the rows of a UNION; the binder wraps
/// IF and CASE values in a CAST instead). A value that does not convert stays as it is.
pub fn conform(value: &mut quill_storage::Value, ty: &SqlType) {
    if value.is_null() || !(ty.is_numeric() || ty.is_temporal()) {
        return;
    }
    if needs_conversion(&quill_sql_types::types::type_of_value(value), ty)
        && let Ok(converted) = crate::functions::cast(value.clone(), ty)
    {
        *value = converted;
    }
}

fn integers(known: &[&SqlType]) -> SqlType {
    let kinds = known.iter().map(|t| match t {
        SqlType::Int { kind, .. } => *kind,
        _ => IntKind::Small,
    });
    let widest = kinds.max_by_key(|k| k.range(false).1).unwrap_or(IntKind::Big);
    let unsigned = known.iter().map(|t| t.is_unsigned());
    let (any_unsigned, all_unsigned) = unsigned.fold((false, true), |(any, all), u| (any || u, all && u));
    if any_unsigned && !all_unsigned {
        if widest == IntKind::Big {
            return SqlType::Decimal { precision: 20, scale: 0, unsigned: false };
        }
        // The next wider signed kind holds both ranges.
        let wider = match widest {
            IntKind::Tiny => IntKind::Small,
            IntKind::Small => IntKind::Medium,
            IntKind::Medium => IntKind::Int,
            IntKind::Int | IntKind::Big => IntKind::Big,
        };
        return SqlType::Int { kind: wider, unsigned: false, display: None };
    }
    SqlType::Int { kind: widest, unsigned: all_unsigned, display: None }
}

fn numbers(known: &[&SqlType]) -> SqlType {
    if known.iter().all(|t| **t == SqlType::Float) {
        return SqlType::Float;
    }
    if known.iter().any(|t| matches!(t, SqlType::Float | SqlType::Double)) {
        return SqlType::Double;
    }
    // Integers and decimals: room for the most integer digits and the largest scale.
    let (mut int_digits, mut scale) = (0u8, 0u8);
    for t in known {
        let (digits, s) = match t {
            SqlType::Decimal { precision, scale, .. } => (precision.saturating_sub(*scale), *scale),
            SqlType::Int { kind, unsigned, .. } => (integer_digits(*kind, *unsigned), 0),
            _ => (4, 0), // YEAR
        };
        int_digits = int_digits.max(digits);
        scale = scale.max(s);
    }
    SqlType::Decimal { precision: (int_digits + scale).min(65), scale, unsigned: false }
}

/// Decimal digits of an integer kind's largest value.
fn integer_digits(kind: IntKind, unsigned: bool) -> u8 {
    let (low, high) = kind.range(unsigned);
    u8::try_from(low.abs().max(high).to_string().len()).unwrap_or(20)
}

fn temporals(known: &[&SqlType]) -> SqlType {
    let fsp = known
        .iter()
        .map(|t| match t {
            SqlType::DateTime(f) | SqlType::Timestamp(f) | SqlType::Time(f) => *f,
            _ => 0,
        })
        .max()
        .unwrap_or(0);
    if known.iter().all(|t| **t == SqlType::Date) {
        SqlType::Date
    } else if known.iter().all(|t| matches!(t, SqlType::Time(_))) {
        SqlType::Time(fsp)
    } else {
        SqlType::DateTime(fsp)
    }
}

fn strings(known: &[&SqlType]) -> SqlType {
    let chars = known.iter().map(|t| text_chars(t)).max().unwrap_or(0);
    let binary = known.iter().any(|t| t.is_binary());
    let collation = known.iter().find(|t| t.is_string() && ***t != SqlType::Json).map_or(Collation::default(), |t| t.collation());
    let long = known.iter().any(|t| matches!(t, SqlType::Text { .. } | SqlType::Blob(_) | SqlType::Json));
    match (binary, long || chars > VARCHAR_CHARS_MAX) {
        (true, true) => SqlType::Blob(LobKind::Long),
        (true, false) => SqlType::VarBinary(chars),
        (false, true) => SqlType::Text { kind: LobKind::Long, collation },
        (false, false) => SqlType::VarChar { len: chars, collation },
    }
}

/// The most characters a value of `t` takes as text.
fn text_chars(t: &SqlType) -> u32 {
    match t {
        SqlType::Char { len, .. } | SqlType::VarChar { len, .. } | SqlType::Binary(len) | SqlType::VarBinary(len) => *len,
        SqlType::Enum { .. } | SqlType::Set { .. } => t.display_length() / 4,
        other => other.display_length(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int() -> SqlType {
        SqlType::bigint()
    }
    fn dec(precision: u8, scale: u8) -> SqlType {
        SqlType::Decimal { precision, scale, unsigned: false }
    }
    fn text(len: u32) -> SqlType {
        SqlType::VarChar { len, collation: Collation::default() }
    }

    /// Regression: IF and CASE took the type of their first value, so `IF(0, 1, 1.5e0)` was
    /// sent as a BIGINT column carrying `1.5` (PyMySQL raised ValueError).
    #[test]
    fn numbers_widen_to_the_type_that_holds_every_value() {
        assert_eq!(aggregate(&[int(), SqlType::Double]), SqlType::Double);
        assert_eq!(aggregate(&[dec(3, 1), SqlType::Float]), SqlType::Double);
        assert_eq!(aggregate(&[SqlType::Float, SqlType::Float]), SqlType::Float);
        assert_eq!(aggregate(&[int(), dec(2, 1)]), dec(20, 1));
        assert_eq!(aggregate(&[dec(5, 2), dec(10, 0)]), dec(12, 2));
        let unsigned = SqlType::Int { kind: IntKind::Big, unsigned: true, display: None };
        assert_eq!(aggregate(&[unsigned.clone(), int()]), dec(20, 0));
        assert_eq!(aggregate(&[unsigned.clone(), unsigned.clone()]), unsigned);
    }

    #[test]
    fn nulls_do_not_count_and_mixed_kinds_become_strings() {
        assert_eq!(aggregate(&[SqlType::Null, SqlType::Double]), SqlType::Double);
        assert_eq!(aggregate(&[SqlType::Null, SqlType::Null]), SqlType::Null);
        assert_eq!(aggregate(&[int(), text(1)]), text(20));
        assert_eq!(aggregate(&[int(), SqlType::DateTime(0)]), text(20));
        assert_eq!(aggregate(&[text(3), SqlType::VarBinary(5)]), SqlType::VarBinary(5));
        assert_eq!(aggregate(&[SqlType::Date, SqlType::DateTime(3)]), SqlType::DateTime(3));
        assert_eq!(aggregate(&[SqlType::Date, SqlType::Time(0)]), SqlType::DateTime(0));
        assert_eq!(aggregate(&[SqlType::Json, text(2)]), SqlType::Text { kind: LobKind::Long, collation: Collation::default() });
    }

    #[test]
    fn only_values_of_another_kind_are_converted() {
        assert!(needs_conversion(&int(), &SqlType::Double));
        assert!(!needs_conversion(&SqlType::Float, &SqlType::Double));
        assert!(needs_conversion(&int(), &dec(20, 1)));
        assert!(!needs_conversion(&dec(3, 1), &dec(20, 1)));
        assert!(!needs_conversion(&text(1), &text(20)));
        assert!(needs_conversion(&int(), &text(20)));
        assert!(needs_conversion(&text(3), &SqlType::VarBinary(5)));
        assert!(!needs_conversion(&SqlType::Null, &SqlType::Double));
        assert!(needs_conversion(&SqlType::Date, &SqlType::DateTime(0)));
    }
}
