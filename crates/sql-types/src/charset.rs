//! The character sets a client may speak (`character_set_client`, `SET NAMES`,
//! `character_set_results`): their names, how text in them becomes UTF-8 and back, and the
//! hex spelling of bytes MySQL uses in messages and `HEX()`; which character set a
//! collation belongs to.
//!
//! Invariant: a conversion never invents or drops a byte silently; bytes not valid in a
//! character set are reported by the caller (the lexer's 1300, a column's 1366).
use quill_storage::Collation;

/// The character sets a client may speak (`character_set_client`, `SET NAMES`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Charset {
    #[default]
    Utf8mb4,
    /// MySQL's three-byte UTF-8 (`utf8`): characters outside the Basic Multilingual
    /// Plane are not in it.
    Utf8mb3,
    /// MySQL's latin1, which is Windows code page 1252.
    Latin1,
    /// Bytes without a character set.
    Binary,
}

impl Charset {
    /// The character set `name` names (`utf8` is utf8mb3), or `None` for one Quill does
    /// not speak.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Charset> {
        let name = name.trim_matches(['\'', '"', '`']);
        let is = |n: &str| name.eq_ignore_ascii_case(n);
        Some(if is("utf8mb4") {
            Charset::Utf8mb4
        } else if is("utf8mb3") || is("utf8") {
            Charset::Utf8mb3
        } else if is("latin1") {
            Charset::Latin1
        } else if is("binary") {
            Charset::Binary
        } else {
            return None;
        })
    }

    /// The character set of a collation number a client sends in its handshake.
    #[must_use]
    pub fn from_collation_id(id: u8) -> Option<Charset> {
        Some(match id {
            45 | 46 | 224..=247 | 255 => Charset::Utf8mb4,
            33 | 83 | 192..=215 => Charset::Utf8mb3,
            5 | 8 | 15 | 31 | 47 | 48 | 49 | 94 => Charset::Latin1,
            63 => Charset::Binary,
            _ => return None,
        })
    }

    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Charset::Utf8mb4 => "utf8mb4",
            Charset::Utf8mb3 => "utf8mb3",
            Charset::Latin1 => "latin1",
            Charset::Binary => "binary",
        }
    }

    /// The character set's default collation, as MySQL 8 names it.
    #[must_use]
    pub fn default_collation(self) -> &'static str {
        match self {
            Charset::Utf8mb4 => "utf8mb4_0900_ai_ci",
            Charset::Utf8mb3 => "utf8mb3_general_ci",
            Charset::Latin1 => "latin1_swedish_ci",
            Charset::Binary => "binary",
        }
    }

    /// The collation number result columns of this character set carry.
    #[must_use]
    pub fn result_collation_id(self) -> u16 {
        match self {
            Charset::Utf8mb4 => 255,
            Charset::Utf8mb3 => 33,
            Charset::Latin1 => 8,
            Charset::Binary => 63,
        }
    }

    /// `bytes` as UTF-8 text, when they are valid in this character set (binary: when
    /// they happen to be UTF-8).
    #[must_use]
    pub fn decode(self, bytes: &[u8]) -> Option<std::borrow::Cow<'_, str>> {
        match self {
            Charset::Latin1 => Some(encoding_rs::WINDOWS_1252.decode_without_bom_handling(bytes).0),
            Charset::Utf8mb3 => std::str::from_utf8(bytes).ok().filter(|s| s.chars().all(|c| c.len_utf8() < 4)).map(std::borrow::Cow::Borrowed),
            Charset::Utf8mb4 | Charset::Binary => std::str::from_utf8(bytes).ok().map(std::borrow::Cow::Borrowed),
        }
    }

    /// `text` in this character set, for a client reading results in it: a character
    /// latin1 (or utf8mb3) has no bytes for becomes `?`, as MySQL converts.
    #[must_use]
    pub fn encode(self, text: &str) -> std::borrow::Cow<'_, [u8]> {
        match self {
            Charset::Latin1 if !text.is_ascii() => {
                let mut encoder = encoding_rs::WINDOWS_1252.new_encoder();
                let mut out = Vec::with_capacity(text.len());
                let mut rest = text;
                loop {
                    let mut buffer = [0u8; 1024];
                    let (result, read, written) = encoder.encode_from_utf8_without_replacement(rest, &mut buffer, true);
                    out.extend_from_slice(&buffer[..written]);
                    rest = &rest[read..];
                    match result {
                        encoding_rs::EncoderResult::InputEmpty => break,
                        encoding_rs::EncoderResult::OutputFull => {}
                        encoding_rs::EncoderResult::Unmappable(_) => out.push(b'?'),
                    }
                }
                std::borrow::Cow::Owned(out)
            }
            Charset::Utf8mb3 if text.chars().any(|c| c.len_utf8() == 4) => {
                std::borrow::Cow::Owned(text.chars().map(|c| if c.len_utf8() == 4 { '?' } else { c }).collect::<String>().into_bytes())
            }
            _ => std::borrow::Cow::Borrowed(text.as_bytes()),
        }
    }

    /// Whether text sent to a client reading this character set must be converted.
    #[must_use]
    pub fn converts_results(self) -> bool {
        matches!(self, Charset::Latin1 | Charset::Utf8mb3)
    }
}

/// `bytes` as uppercase hex digits, two a byte (HEX(), hashes, MySQL's messages).
#[must_use]
pub fn hex_upper(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0xF)]));
    }
    out
}

/// The bytes `hex` writes, two digits a byte (either case); `None` for an odd length or
/// anything not a hex digit.
#[must_use]
pub fn hex_decode(hex: &str) -> Option<Vec<u8>> {
    let digits = hex.as_bytes();
    if !digits.len().is_multiple_of(2) {
        return None;
    }
    let value = |d: u8| char::from(d).to_digit(16).and_then(|v| u8::try_from(v).ok());
    digits.chunks(2).map(|pair| Some(value(pair[0])? << 4 | value(pair[1])?)).collect()
}

/// The character set a collation belongs to.
#[must_use]
pub fn charset_of(c: Collation) -> &'static str {
    if c == Collation::Binary { "binary" } else { "utf8mb4" }
}

/// Whether `c` is its character set's default.
#[must_use]
pub fn is_default_collation(c: Collation) -> bool {
    matches!(c, Collation::Utf8mb4AiCi | Collation::Binary)
}

#[cfg(test)]
mod tests {
    #[test]
    fn hex_round_trips_and_refuses_what_is_not_hex() {
        assert_eq!(super::hex_upper(&[0x00, 0xAB, 0x7f]), "00AB7F");
        assert_eq!(super::hex_decode("00ab7F"), Some(vec![0x00, 0xAB, 0x7F]));
        assert_eq!(super::hex_decode("abc"), None);
        assert_eq!(super::hex_decode("zz"), None);
        assert_eq!(super::hex_decode("a\u{e9}b"), None, "a multibyte character is no digit (and must not split)");
    }
}
