//! Primitive field encodings shared by every packet: fixed-width little-endian integers,
//! length-encoded integers and strings, NUL-terminated strings.
//!
//! A length-encoded integer (`int<lenenc>`) is one byte below `LENENC_NULL` (0xFB) holding
//! the value itself, or a marker followed by the value in 2 (`LENENC_U16_MARKER`, 0xFC),
//! 3 (`LENENC_U24_MARKER`, 0xFD) or 8 (`LENENC_U64_MARKER`, 0xFE) little-endian bytes.
//! 0xFB stands for SQL NULL in text rows and 0xFF is never a valid first byte.
//! A length-encoded string is an `int<lenenc>` length followed by that many bytes.
//!
//! `Reader` is the cursor every decoder uses: each read checks the remaining length first and
//! returns `ProtocolError::Truncated` naming the field, so no decoder indexes out of bounds.

use crate::error::ProtocolError;

/// First byte of a text-row cell that is SQL NULL.
pub const LENENC_NULL: u8 = 0xFB;
/// Marker: a 2-byte integer follows.
pub const LENENC_U16_MARKER: u8 = 0xFC;
/// Marker: a 3-byte integer follows.
pub const LENENC_U24_MARKER: u8 = 0xFD;
/// Marker: an 8-byte integer follows.
pub const LENENC_U64_MARKER: u8 = 0xFE;
/// Largest value stored in the marker byte itself.
pub const LENENC_ONE_BYTE_MAX: u64 = 0xFA;
const U24_MAX: u64 = 0xFF_FFFF;

/// Number of bytes `write_lenenc_int(value)` produces.
#[must_use]
pub fn lenenc_int_len(value: u64) -> usize {
    match value {
        0..=LENENC_ONE_BYTE_MAX => 1,
        0xFB..=0xFFFF => 1 + 2,
        0x1_0000..=U24_MAX => 1 + 3,
        _ => 1 + 8,
    }
}

/// Appends `value` as a length-encoded integer.
pub fn write_lenenc_int(out: &mut Vec<u8>, value: u64) {
    let bytes = value.to_le_bytes();
    match lenenc_int_len(value) {
        1 => out.push(bytes[0]),
        3 => {
            out.push(LENENC_U16_MARKER);
            out.extend_from_slice(&bytes[..2]);
        }
        4 => {
            out.push(LENENC_U24_MARKER);
            out.extend_from_slice(&bytes[..3]);
        }
        _ => {
            out.push(LENENC_U64_MARKER);
            out.extend_from_slice(&bytes);
        }
    }
}

/// Appends `bytes` as a length-encoded string.
pub fn write_lenenc_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    write_lenenc_int(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// Reads a length-encoded integer from the front of `input`: `(value, bytes consumed)`.
pub fn read_lenenc_int(input: &[u8]) -> Result<(u64, usize), ProtocolError> {
    let mut reader = Reader::new(input);
    let value = reader.lenenc_int("length-encoded integer")?;
    Ok((value, reader.position()))
}

/// Reads a length-encoded string from the front of `input`: `(bytes, bytes consumed)`.
pub fn read_lenenc_bytes(input: &[u8]) -> Result<(&[u8], usize), ProtocolError> {
    let mut reader = Reader::new(input);
    let bytes = reader.lenenc_bytes("length-encoded string")?;
    Ok((bytes, reader.position()))
}

/// A bounds-checked cursor over one payload.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    input: &'a [u8],
    position: usize,
}

impl<'a> Reader<'a> {
    #[must_use]
    pub fn new(input: &'a [u8]) -> Self {
        Self { input, position: 0 }
    }

    /// Bytes consumed so far.
    #[must_use]
    pub fn position(&self) -> usize {
        self.position
    }

    /// Bytes not yet consumed.
    #[must_use]
    pub fn remaining(&self) -> usize {
        self.input.len() - self.position
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// The next `len` bytes.
    pub fn bytes(&mut self, len: usize, what: &'static str) -> Result<&'a [u8], ProtocolError> {
        if len > self.remaining() {
            return Err(ProtocolError::Truncated { what });
        }
        let bytes = &self.input[self.position..self.position + len];
        self.position += len;
        Ok(bytes)
    }

    /// The next `N` bytes as an array.
    pub fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], ProtocolError> {
        let bytes = self.bytes(N, what)?;
        let mut array = [0; N];
        array.copy_from_slice(bytes);
        Ok(array)
    }

    /// Everything not yet consumed (`string<EOF>`).
    pub fn rest(&mut self) -> &'a [u8] {
        let bytes = &self.input[self.position..];
        self.position = self.input.len();
        bytes
    }

    pub fn u8(&mut self, what: &'static str) -> Result<u8, ProtocolError> {
        Ok(self.array::<1>(what)?[0])
    }

    pub fn u16_le(&mut self, what: &'static str) -> Result<u16, ProtocolError> {
        Ok(u16::from_le_bytes(self.array(what)?))
    }

    pub fn u24_le(&mut self, what: &'static str) -> Result<u32, ProtocolError> {
        let [b0, b1, b2] = self.array(what)?;
        Ok(u32::from_le_bytes([b0, b1, b2, 0]))
    }

    pub fn u32_le(&mut self, what: &'static str) -> Result<u32, ProtocolError> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    pub fn u64_le(&mut self, what: &'static str) -> Result<u64, ProtocolError> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    /// A length-encoded integer; 0xFB (NULL) and 0xFF are malformed here.
    pub fn lenenc_int(&mut self, what: &'static str) -> Result<u64, ProtocolError> {
        match self.u8(what)? {
            byte @ 0..=0xFA => Ok(u64::from(byte)),
            LENENC_U16_MARKER => Ok(u64::from(self.u16_le(what)?)),
            LENENC_U24_MARKER => Ok(u64::from(self.u24_le(what)?)),
            LENENC_U64_MARKER => self.u64_le(what),
            _ => Err(ProtocolError::Malformed { what }),
        }
    }

    /// A length-encoded string. The length is checked against the remaining input before
    /// anything is sliced or allocated.
    pub fn lenenc_bytes(&mut self, what: &'static str) -> Result<&'a [u8], ProtocolError> {
        let len = self.lenenc_int(what)?;
        let len = usize::try_from(len).map_err(|_| ProtocolError::Truncated { what })?;
        self.bytes(len, what)
    }

    /// A `string<NUL>`: the bytes before the next 0x00, which is consumed.
    pub fn null_terminated(&mut self, what: &'static str) -> Result<&'a [u8], ProtocolError> {
        let unread = &self.input[self.position..];
        let len = unread.iter().position(|&byte| byte == 0).ok_or(ProtocolError::Truncated { what })?;
        self.position += len + 1;
        Ok(&unread[..len])
    }

    /// A `string<NUL>` that some clients send without its NUL when it ends the packet:
    /// the bytes up to the next 0x00, or up to the end.
    pub fn null_terminated_or_rest(&mut self) -> &'a [u8] {
        let unread = &self.input[self.position..];
        match unread.iter().position(|&byte| byte == 0) {
            Some(len) => {
                self.position += len + 1;
                &unread[..len]
            }
            None => self.rest(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(value: u64) -> Vec<u8> {
        let mut out = Vec::new();
        write_lenenc_int(&mut out, value);
        out
    }

    #[test]
    fn lenenc_int_uses_the_shortest_form_at_every_boundary() {
        assert_eq!(encoded(0), [0x00]);
        assert_eq!(encoded(250), [0xFA]);
        assert_eq!(encoded(251), [0xFC, 0xFB, 0x00]);
        assert_eq!(encoded(0xFFFF), [0xFC, 0xFF, 0xFF]);
        assert_eq!(encoded(0x1_0000), [0xFD, 0x00, 0x00, 0x01]);
        assert_eq!(encoded(0xFF_FFFF), [0xFD, 0xFF, 0xFF, 0xFF]);
        assert_eq!(encoded(0x100_0000), [0xFE, 0, 0, 0, 1, 0, 0, 0, 0]);
        assert_eq!(encoded(u64::MAX), [0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]);
    }

    #[test]
    fn lenenc_int_round_trips_and_reports_its_length() {
        for value in [0, 1, 250, 251, 252, 0xFFFF, 0x1_0000, 0xFF_FFFF, 0x100_0000, u64::MAX] {
            let bytes = encoded(value);
            assert_eq!(bytes.len(), lenenc_int_len(value));
            assert_eq!(read_lenenc_int(&bytes), Ok((value, bytes.len())));
        }
    }

    #[test]
    fn lenenc_int_rejects_null_marker_0xff_and_truncation() {
        assert!(matches!(read_lenenc_int(&[0xFB]), Err(ProtocolError::Malformed { .. })));
        assert!(matches!(read_lenenc_int(&[0xFF]), Err(ProtocolError::Malformed { .. })));
        assert!(matches!(read_lenenc_int(&[]), Err(ProtocolError::Truncated { .. })));
        assert!(matches!(read_lenenc_int(&[0xFC, 1]), Err(ProtocolError::Truncated { .. })));
        assert!(matches!(read_lenenc_int(&[0xFE, 1, 2, 3]), Err(ProtocolError::Truncated { .. })));
    }

    #[test]
    fn lenenc_bytes_round_trip_and_huge_lengths_are_truncation_not_allocation() {
        let mut out = Vec::new();
        write_lenenc_bytes(&mut out, b"hello");
        assert_eq!(out, b"\x05hello");
        assert_eq!(read_lenenc_bytes(&out), Ok((&b"hello"[..], 6)));
        let huge = [0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, b'x'];
        assert!(matches!(read_lenenc_bytes(&huge), Err(ProtocolError::Truncated { .. })));
    }

    #[test]
    fn null_terminated_strings() {
        let mut reader = Reader::new(b"root\0db");
        assert_eq!(reader.null_terminated("user"), Ok(&b"root"[..]));
        assert!(reader.clone().null_terminated("db").is_err());
        assert_eq!(reader.null_terminated_or_rest(), b"db");
        assert!(reader.is_empty());
    }

    #[test]
    fn fixed_width_integers_are_little_endian() {
        let mut reader = Reader::new(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
        assert_eq!(reader.u16_le("a"), Ok(0x0201));
        assert_eq!(reader.u24_le("b"), Ok(0x05_0403));
        assert_eq!(reader.u32_le("c"), Ok(0x0908_0706));
        assert!(reader.u16_le("d").is_err());
        assert_eq!(reader.remaining(), 1);
    }
}
