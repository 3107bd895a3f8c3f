//! A secondary index's entry, as its leaf map holds it: the key is `index key ++ primary
//! key` (so entries of equal index keys are ordered and unique), and the value says how many
//! of the key's last bytes are the primary key. The primary key is not stored twice.
//!
//! Where it sits: the value type of [`crate::table`]'s secondary indexes, written into pages
//! as `docs/page-format.md` ("Leaf of index entries") says.

use crate::leaf_map::Vacancy;
use crate::page::{KIND_ENTRIES, PageError, PageValue, Reader, put_varint};

/// The length of an entry's primary key; 0 (the default) is a vacant value, removed from
/// its map (a primary key is never empty: its encoding has a byte per part at least).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EntryPk {
    pk_len: u32,
}

impl EntryPk {
    /// The value of an entry whose primary key is `pk`.
    pub(crate) fn new(pk: &[u8]) -> EntryPk {
        assert!(!pk.is_empty(), "a primary key is never empty");
        EntryPk { pk_len: u32::try_from(pk.len()).expect("a primary key is shorter than 4 GiB") }
    }
}

/// The primary key at the end of `entry`.
pub(crate) fn pk_of<'e>(entry: &'e [u8], value: &EntryPk) -> &'e [u8] {
    &entry[entry.len() - value.pk_len as usize..]
}

impl Vacancy for EntryPk {
    fn is_vacant(&self) -> bool {
        self.pk_len == 0
    }
}

/// In a page image: the primary key's length, a varint.
impl PageValue for EntryPk {
    const KIND: u8 = KIND_ENTRIES;

    fn encode(&self, out: &mut Vec<u8>) {
        put_varint(out, u64::from(self.pk_len));
    }

    fn decode(reader: &mut Reader<'_>) -> Result<EntryPk, PageError> {
        match u32::try_from(reader.varint()?) {
            Ok(pk_len) if pk_len > 0 => Ok(EntryPk { pk_len }),
            _ => Err(PageError::Malformed("an index entry's primary key length is 0 or past u32")),
        }
    }

    fn heap_bytes(&self) -> usize {
        0
    }

    /// Never: only a checkpoint, which checks each entry against its row, writes a stable
    /// leaf of entries.
    fn is_stable(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_keeps_its_primary_key_at_its_end_and_reads_back_from_page_bytes() {
        let entry = [b"index key".as_slice(), b"pk"].concat();
        let value = EntryPk::new(b"pk");
        assert_eq!(pk_of(&entry, &value), b"pk");
        let mut out = Vec::new();
        value.encode(&mut out);
        assert_eq!(EntryPk::decode(&mut Reader::new(&out)).unwrap(), value);
        assert!(EntryPk::decode(&mut Reader::new(&[0])).is_err(), "a vacant value is never written");
    }
}
