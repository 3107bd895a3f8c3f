//! Exact decimal numbers for DECIMAL columns and arithmetic.
//!
//! MySQL's DECIMAL holds up to 65 digits ([`DIGITS_MAX`]); Quill keeps them as
//! arbitrary-precision decimals (`bigdecimal`) behind this small type, which gives
//! the SQL layer exactly the operations it needs: parsing, rescaling with MySQL's
//! rounding (half away from zero), arithmetic, and conversions.
//!
//! Invariant: a value's scale is never negative (`new` and every operation
//! normalise to a scale >= 0), so `scale()` is the number of fraction digits.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use bigdecimal::num_bigint::{BigInt, Sign};
use bigdecimal::{BigDecimal, FromPrimitive, RoundingMode, Signed, ToPrimitive, Zero};

/// Most digits a DECIMAL value may have (MySQL's limit).
pub const DIGITS_MAX: u64 = 65;
/// Digits kept by a division before the caller rounds the quotient.
pub const DIVISION_DIGITS: u64 = 96;

/// How a value is rounded to fewer fraction digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoundingStrategy {
    /// 2.5 -> 3, -2.5 -> -3 (MySQL's rounding for exact values).
    MidpointAwayFromZero,
    /// Drop the extra digits (TRUNCATE).
    ToZero,
}

/// An exact decimal number.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Decimal(BigDecimal);

impl fmt::Debug for Decimal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Decimal({})", self.0.to_plain_string())
    }
}

impl fmt::Display for Decimal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.to_plain_string())
    }
}

/// Writes `unscaled / 10^scale` in plain notation, as [`Decimal`]'s `Display` does
/// (`-0.05`, `12.30`, `7`), without building a big decimal: the commit path writes every
/// DECIMAL of a row image this way.
pub fn write_plain(out: &mut String, unscaled: i64, scale: u8) {
    let mut digits = [0_u8; 20];
    let mut n = unscaled.unsigned_abs();
    let mut len = 0;
    loop {
        digits[len] = b'0' + u8::try_from(n % 10).expect("a digit");
        n /= 10;
        len += 1;
        if n == 0 {
            break;
        }
    }
    if unscaled < 0 {
        out.push('-');
    }
    let scale = usize::from(scale);
    // At least one digit before the point: pad with zeros up to scale + 1 digits.
    let total = len.max(scale + 1);
    for i in (0..total).rev() {
        // The point goes before the digit worth 10^-1, at position `scale - 1`.
        if i + 1 == scale {
            out.push('.');
        }
        out.push(char::from(if i < len { digits[i] } else { b'0' }));
    }
}

impl FromStr for Decimal {
    type Err = ();

    /// Parses plain and scientific forms (`1.5`, `-0.25`, `1e3`).
    fn from_str(s: &str) -> Result<Decimal, ()> {
        let t = s.trim();
        if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.' | b'e' | b'E')) {
            return Err(());
        }
        BigDecimal::from_str(t).map(Decimal::normalised).map_err(|_| ())
    }
}

impl From<i64> for Decimal {
    fn from(v: i64) -> Decimal {
        Decimal(BigDecimal::from(v))
    }
}

impl From<u64> for Decimal {
    fn from(v: u64) -> Decimal {
        Decimal(BigDecimal::from(v))
    }
}

impl From<i32> for Decimal {
    fn from(v: i32) -> Decimal {
        Decimal(BigDecimal::from(v))
    }
}

impl std::ops::Neg for Decimal {
    type Output = Decimal;
    fn neg(self) -> Decimal {
        Decimal(-self.0)
    }
}

impl std::ops::Add for Decimal {
    type Output = Decimal;
    fn add(self, o: Decimal) -> Decimal {
        Decimal(self.0 + o.0)
    }
}

impl std::ops::Sub for Decimal {
    type Output = Decimal;
    fn sub(self, o: Decimal) -> Decimal {
        Decimal(self.0 - o.0)
    }
}

impl std::ops::Mul for Decimal {
    type Output = Decimal;
    fn mul(self, o: Decimal) -> Decimal {
        Decimal(self.0 * o.0)
    }
}

impl std::ops::Div for Decimal {
    type Output = Decimal;
    fn div(self, o: Decimal) -> Decimal {
        self.checked_div(&o).unwrap_or_default()
    }
}

fn mode(s: RoundingStrategy) -> RoundingMode {
    match s {
        RoundingStrategy::MidpointAwayFromZero => RoundingMode::HalfUp,
        RoundingStrategy::ToZero => RoundingMode::Down,
    }
}

impl Decimal {
    fn normalised(d: BigDecimal) -> Decimal {
        if d.fractional_digit_count() < 0 { Decimal(d.with_scale(0)) } else { Decimal(d) }
    }

    #[must_use]
    pub fn zero() -> Decimal {
        Decimal(BigDecimal::zero())
    }

    /// `num` × 10^-`scale`.
    #[must_use]
    pub fn new(num: i64, scale: u32) -> Decimal {
        Decimal(BigDecimal::new(BigInt::from(num), i64::from(scale)))
    }

    #[must_use]
    pub fn from_i128_with_scale(num: i128, scale: u32) -> Decimal {
        Decimal(BigDecimal::new(BigInt::from(num), i64::from(scale)))
    }

    /// Number of fraction digits.
    #[must_use]
    pub fn scale(&self) -> u32 {
        u32::try_from(self.0.fractional_digit_count().max(0)).unwrap_or(u32::MAX)
    }

    /// Significant digits (at least 1).
    #[must_use]
    pub fn digits(&self) -> u64 {
        self.0.digits()
    }

    /// Digits before the decimal point.
    #[must_use]
    pub fn integer_digits(&self) -> u64 {
        let t = self.trunc();
        if t.is_zero() { 0 } else { t.0.digits() }
    }

    /// Set the scale, rounding half away from zero.
    pub fn rescale(&mut self, scale: u32) {
        self.0 = self.0.with_scale_round(i64::from(scale), RoundingMode::HalfUp);
    }

    #[must_use]
    pub fn round_dp_with_strategy(&self, dp: u32, strategy: RoundingStrategy) -> Decimal {
        let r = self.0.with_scale_round(i64::from(dp), mode(strategy));
        // Keep fewer digits when the value had fewer.
        if self.scale() < dp { self.clone() } else { Decimal(r) }
    }

    /// Round to `dp` fraction digits, where `dp` may be negative (ROUND(x, -2)).
    #[must_use]
    pub fn round_signed(&self, dp: i64, strategy: RoundingStrategy) -> Decimal {
        Decimal::normalised(self.0.with_scale_round(dp, mode(strategy)))
    }

    #[must_use]
    pub fn trunc(&self) -> Decimal {
        Decimal(self.0.with_scale_round(0, RoundingMode::Down))
    }

    #[must_use]
    pub fn floor(&self) -> Decimal {
        Decimal(self.0.with_scale_round(0, RoundingMode::Floor))
    }

    #[must_use]
    pub fn ceil(&self) -> Decimal {
        Decimal(self.0.with_scale_round(0, RoundingMode::Ceiling))
    }

    #[must_use]
    pub fn abs(&self) -> Decimal {
        Decimal(self.0.abs())
    }

    #[must_use]
    pub fn is_zero(&self) -> bool {
        self.0.is_zero()
    }

    #[must_use]
    pub fn is_sign_negative(&self) -> bool {
        self.0.is_negative()
    }

    #[must_use]
    pub fn checked_add(&self, o: &Decimal) -> Option<Decimal> {
        Some(Decimal(&self.0 + &o.0)).filter(Decimal::within_limit)
    }

    #[must_use]
    pub fn checked_sub(&self, o: &Decimal) -> Option<Decimal> {
        Some(Decimal(&self.0 - &o.0)).filter(Decimal::within_limit)
    }

    #[must_use]
    pub fn checked_mul(&self, o: &Decimal) -> Option<Decimal> {
        Some(Decimal(&self.0 * &o.0)).filter(Decimal::within_limit)
    }

    /// `None` when dividing by zero. The quotient carries [`DIVISION_DIGITS`] digits; callers round it.
    #[must_use]
    pub fn checked_div(&self, o: &Decimal) -> Option<Decimal> {
        if o.is_zero() {
            return None;
        }
        let q = (&self.0 / &o.0).with_prec(DIVISION_DIGITS);
        Some(Decimal::normalised(q))
    }

    /// Remainder with the sign of the dividend, as MySQL's MOD.
    #[must_use]
    pub fn checked_rem(&self, o: &Decimal) -> Option<Decimal> {
        if o.is_zero() {
            return None;
        }
        let q = (&self.0 / &o.0).with_scale_round(0, RoundingMode::Down);
        Some(Decimal::normalised(&self.0 - q * &o.0))
    }

    /// A value too large for any DECIMAL (integer part beyond 65 digits) is an overflow.
    fn within_limit(&self) -> bool {
        self.integer_digits() <= DIGITS_MAX
    }

    #[must_use]
    pub fn to_f64(&self) -> Option<f64> {
        self.0.to_f64()
    }

    /// The value as `unscaled` × 10^-`scale` when `unscaled` fits an `i64` (every DECIMAL of
    /// up to 18 digits): how row formats store it without text.
    #[must_use]
    pub fn to_unscaled_i64(&self) -> Option<(i64, u8)> {
        let (int, scale) = self.0.as_bigint_and_scale();
        Some((int.to_i64()?, u8::try_from(scale).ok()?))
    }

    #[must_use]
    pub fn to_i128(&self) -> Option<i128> {
        self.0.with_scale_round(0, RoundingMode::Down).to_i128()
    }

    #[must_use]
    pub fn to_i64(&self) -> Option<i64> {
        self.0.with_scale_round(0, RoundingMode::Down).to_i64()
    }

    #[must_use]
    pub fn to_u64(&self) -> Option<u64> {
        self.0.with_scale_round(0, RoundingMode::Down).to_u64()
    }

    #[must_use]
    pub fn from_f64(f: f64) -> Option<Decimal> {
        if !f.is_finite() {
            return None;
        }
        // The shortest decimal that reads back as `f` (what MySQL shows for a DOUBLE).
        format!("{f}").parse().ok().or_else(|| BigDecimal::from_f64(f).map(Decimal::normalised))
    }

    /// Sign and digits for order-preserving keys: `(sign, exponent, digits)` with
    /// the value = sign × 0.`digits` × 10^`exponent`, `digits` without leading or
    /// trailing zeros (empty for zero).
    #[must_use]
    pub fn key_parts(&self) -> (Ordering, i64, Vec<u8>) {
        if self.is_zero() {
            return (Ordering::Equal, 0, Vec::new());
        }
        let (int, scale) = self.0.as_bigint_and_exponent();
        let sign = if int.sign() == Sign::Minus { Ordering::Less } else { Ordering::Greater };
        let mut digits = int.magnitude().to_str_radix(10).into_bytes();
        let exponent = digits.len() as i64 - scale;
        while digits.last() == Some(&b'0') {
            digits.pop();
        }
        (sign, exponent, digits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Decimal {
        s.parse().unwrap()
    }

    #[test]
    fn holds_sixty_five_digits_exactly() {
        let big = d("12345678901234567890123456789012345.123456789012345678901234567890");
        assert_eq!(big.to_string(), "12345678901234567890123456789012345.123456789012345678901234567890");
        assert_eq!((big.clone() + d("0.000000000000000000000000000001")).to_string(), "12345678901234567890123456789012345.123456789012345678901234567891");
        assert_eq!(big.digits(), 65);
    }

    #[test]
    fn rounds_half_away_from_zero() {
        let mut x = d("2.345");
        x.rescale(2);
        assert_eq!(x.to_string(), "2.35");
        let mut y = d("-2.345");
        y.rescale(2);
        assert_eq!(y.to_string(), "-2.35");
        assert_eq!(d("1234.5678").round_signed(-2, RoundingStrategy::MidpointAwayFromZero).to_string(), "1200");
        assert_eq!(d("-7.5").round_dp_with_strategy(0, RoundingStrategy::ToZero).to_string(), "-7");
    }

    #[test]
    fn division_and_remainder() {
        let mut q = d("1").checked_div(&d("3")).unwrap();
        q.rescale(4);
        assert_eq!(q.to_string(), "0.3333");
        assert_eq!(d("-7").checked_rem(&d("3")).unwrap().to_string(), "-1");
        assert!(d("1").checked_div(&Decimal::zero()).is_none());
    }

    #[test]
    fn plain_text_of_an_unscaled_value_is_what_display_writes() {
        let values = [0, 1, -1, 5, -5, 9, 10, 99, 100, 12_345, -12_345, 1_000_000, i64::MAX, i64::MIN, i64::MIN + 1];
        for &v in &values {
            for scale in [0_u8, 1, 2, 3, 5, 10, 18, 19, 20, 25, 30] {
                let mut text = String::new();
                write_plain(&mut text, v, scale);
                assert_eq!(text, Decimal::new(v, u32::from(scale)).to_string(), "{v} scale {scale}");
            }
        }
    }
}
