//! Reading fields off the front of a byte slice: the decoding half of every on-disk format
//! (log records, row images, checkpoints). Each function advances the slice past what it
//! read, or returns `None` when the bytes run out, so decoding bytes from disk never panics.
//! Integers are little-endian, as every Quill format specifies.

/// The next `n` bytes.
pub fn take<'a>(bytes: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    if bytes.len() < n {
        return None;
    }
    let (head, rest) = bytes.split_at(n);
    *bytes = rest;
    Some(head)
}

/// The next `N` bytes as an array (for `from_le_bytes`).
pub fn take_array<const N: usize>(bytes: &mut &[u8]) -> Option<[u8; N]> {
    take(bytes, N).map(|s| s.try_into().expect("take returned N bytes"))
}

/// A `u16` length, then that many bytes.
pub fn take_len16<'a>(bytes: &mut &'a [u8]) -> Option<&'a [u8]> {
    let len = usize::from(u16::from_le_bytes(take_array(bytes)?));
    take(bytes, len)
}

/// A `u32` length, then that many bytes.
pub fn take_len32<'a>(bytes: &mut &'a [u8]) -> Option<&'a [u8]> {
    let len = usize::try_from(u32::from_le_bytes(take_array(bytes)?)).ok()?;
    take(bytes, len)
}

/// A `u16` length, then that many bytes of UTF-8.
pub fn take_str16(bytes: &mut &[u8]) -> Option<String> {
    String::from_utf8(take_len16(bytes)?.to_vec()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_come_off_the_front_and_running_out_is_none() {
        let data = [2, 0, b'h', b'i', 1, 0, 0, 0, 9, 7];
        let mut bytes = &data[..];
        assert_eq!(take_str16(&mut bytes).as_deref(), Some("hi"));
        assert_eq!(take_len32(&mut bytes), Some(&[9][..]));
        assert_eq!(take_array::<1>(&mut bytes), Some([7]));
        assert_eq!(take(&mut bytes, 1), None);
        assert_eq!(take_len32(&mut &[5, 0, 0, 0, 1][..]), None, "a length past the end");
    }
}
