//! Blocks: how a page of the paged engine sits in its table's page file, and the small
//! encodings its image is written with. The layout is specified in `docs/page-format.md`;
//! the constants here mirror it, each derived from the one before.
//!
//! A block is a header and a payload, padded to whole [`UNIT_BYTES`] units. The header
//! carries a CRC-32C of everything after the CRC, the payload's length, what the payload is
//! (a leaf of version chains or of index entries), and the unit the block was written at, so
//! a torn write, a bit flip and a block read from the wrong place (a misdirected write) all
//! fail [`open_block`] rather than decode as data. A delta record (a leaf's entries changed
//! since its block, many records to a delta block) carries its own header with the same
//! checks, and names the base block it applies to ([`seal_delta`], [`open_delta`]).
//!
//! Where it sits: the lowest piece of the paged engine. [`crate::page_file`] allocates and
//! reads blocks; the leaf map encodes a leaf's entries into a payload
//! (`crate::leaf_map`), and each kind of value its own bytes ([`PageValue`]).

use std::fmt;

/// The unit of allocation in a page file: a block takes a whole number of units.
/// 4 KiB: the page size of the file systems and SSDs this runs on, so a one-unit block is
/// one device write.
pub const UNIT_BYTES: usize = 4096;

/// Offset of the CRC-32C of the block's bytes from [`BLOCK_LEN_OFFSET`] to the payload's end.
pub const BLOCK_CRC_OFFSET: usize = 0;
/// Offset of the payload's length in bytes (u32).
pub const BLOCK_LEN_OFFSET: usize = BLOCK_CRC_OFFSET + 4;
/// Offset of the block's kind (u8: [`KIND_ROWS`] or [`KIND_ENTRIES`]).
pub const BLOCK_KIND_OFFSET: usize = BLOCK_LEN_OFFSET + 4;
/// Offset of the flags (u8: [`FLAG_STABLE`]).
pub const BLOCK_FLAGS_OFFSET: usize = BLOCK_KIND_OFFSET + 1;
/// Offset of two reserved bytes, zero.
pub const BLOCK_RESERVED_OFFSET: usize = BLOCK_FLAGS_OFFSET + 1;
/// Offset of the number of the index the block belongs to (u32: 0 the primary key, `i + 1`
/// secondary index `i`, as gap locks number them).
pub const BLOCK_INDEX_OFFSET: usize = BLOCK_RESERVED_OFFSET + 2;
/// Offset of the unit the block was written at (u64).
pub const BLOCK_UNIT_OFFSET: usize = BLOCK_INDEX_OFFSET + 4;
/// Bytes before the payload.
pub const BLOCK_HEADER_BYTES: usize = BLOCK_UNIT_OFFSET + 8;

/// A leaf of a primary index: keys and their version chains.
pub const KIND_ROWS: u8 = 1;
/// A leaf of a secondary index: entries (`index key ++ primary key`) and their primary keys.
pub const KIND_ENTRIES: u8 = 2;

/// Every row of the leaf has exactly one version, committed: the image a checkpoint wrote,
/// or an evicted leaf with nothing newer. Recovery may start from such a block only.
pub const FLAG_STABLE: u8 = 1;

/// The largest payload a block may carry (u32 length, and a sanity bound on what a reader
/// allocates before the CRC has been checked).
pub const BLOCK_PAYLOAD_MAX: usize = 1 << 30;

const _: () = assert!(BLOCK_HEADER_BYTES == 24, "docs/page-format.md gives the header 24 bytes");
const _: () = assert!(BLOCK_HEADER_BYTES < UNIT_BYTES);

/// Where a block is in its page file: its first unit and how many units it takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlockAddr {
    pub unit: u64,
    pub units: u32,
}

impl BlockAddr {
    /// Byte offset of the block in its file.
    #[must_use]
    pub fn offset(self) -> u64 {
        self.unit * UNIT_BYTES as u64
    }

    /// Bytes the block takes in its file.
    #[must_use]
    pub fn bytes(self) -> usize {
        self.units as usize * UNIT_BYTES
    }

    /// The first unit past the block.
    #[must_use]
    pub fn end(self) -> u64 {
        self.unit + u64::from(self.units)
    }
}

impl fmt::Display for BlockAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "units {}..{}", self.unit, self.end())
    }
}

/// Units a block with `payload_bytes` of payload takes.
#[must_use]
pub fn units_for(payload_bytes: usize) -> u32 {
    u32::try_from((BLOCK_HEADER_BYTES + payload_bytes).div_ceil(UNIT_BYTES)).expect("a block's payload is at most BLOCK_PAYLOAD_MAX")
}

/// What a block says about itself, besides its payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockHeader {
    pub kind: u8,
    pub flags: u8,
    pub index: u32,
}

/// Why a block or a page image could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PageError {
    #[error("block at {addr}: {what}")]
    Damaged { addr: BlockAddr, what: String },
    #[error("page image: {0}")]
    Malformed(&'static str),
}

/// Seals `block`, which holds [`BLOCK_HEADER_BYTES`] bytes of room followed by a payload,
/// into a block to be written at `unit`: fills in the header, pads to whole units, and
/// returns the address it will take.
///
/// # Panics
/// If the payload is larger than [`BLOCK_PAYLOAD_MAX`] (a leaf never is: it splits first).
pub fn seal_block(block: &mut Vec<u8>, header: BlockHeader, unit: u64) -> BlockAddr {
    assert!(block.len() >= BLOCK_HEADER_BYTES, "a block starts with room for its header");
    let payload_bytes = block.len() - BLOCK_HEADER_BYTES;
    assert!(payload_bytes <= BLOCK_PAYLOAD_MAX, "a page image of {payload_bytes} bytes");
    let addr = BlockAddr { unit, units: units_for(payload_bytes) };
    block[BLOCK_LEN_OFFSET..BLOCK_KIND_OFFSET].copy_from_slice(&u32::try_from(payload_bytes).expect("bounded above").to_le_bytes());
    block[BLOCK_KIND_OFFSET] = header.kind;
    block[BLOCK_FLAGS_OFFSET] = header.flags;
    block[BLOCK_RESERVED_OFFSET..BLOCK_INDEX_OFFSET].fill(0);
    block[BLOCK_INDEX_OFFSET..BLOCK_UNIT_OFFSET].copy_from_slice(&header.index.to_le_bytes());
    block[BLOCK_UNIT_OFFSET..BLOCK_HEADER_BYTES].copy_from_slice(&unit.to_le_bytes());
    let crc = crc32c::crc32c(&block[BLOCK_LEN_OFFSET..]);
    block[BLOCK_CRC_OFFSET..BLOCK_LEN_OFFSET].copy_from_slice(&crc.to_le_bytes());
    block.resize(addr.bytes(), 0);
    addr
}

/// Checks a block read from `addr` and returns its header and payload.
///
/// # Errors
/// [`PageError::Damaged`] when the block is shorter than its address says, its length does
/// not fit, its checksum fails, or it was written for another unit.
pub fn open_block(bytes: &[u8], addr: BlockAddr) -> Result<(BlockHeader, &[u8]), PageError> {
    let damaged = |what: String| PageError::Damaged { addr, what };
    if bytes.len() < addr.bytes() || bytes.len() < BLOCK_HEADER_BYTES {
        return Err(damaged(format!("{} bytes read, {} expected", bytes.len(), addr.bytes())));
    }
    let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("four bytes"));
    let payload_bytes = u32_at(BLOCK_LEN_OFFSET) as usize;
    if payload_bytes > BLOCK_PAYLOAD_MAX || units_for(payload_bytes) != addr.units {
        return Err(damaged(format!("payload length {payload_bytes} does not fit {} units", addr.units)));
    }
    let end = BLOCK_HEADER_BYTES + payload_bytes;
    let crc = crc32c::crc32c(&bytes[BLOCK_LEN_OFFSET..end]);
    if crc != u32_at(BLOCK_CRC_OFFSET) {
        return Err(damaged("checksum mismatch (a torn or damaged write)".into()));
    }
    let unit = u64::from_le_bytes(bytes[BLOCK_UNIT_OFFSET..BLOCK_HEADER_BYTES].try_into().expect("eight bytes"));
    if unit != addr.unit {
        return Err(damaged(format!("written for unit {unit} (a misdirected write)")));
    }
    let header = BlockHeader { kind: bytes[BLOCK_KIND_OFFSET], flags: bytes[BLOCK_FLAGS_OFFSET], index: u32_at(BLOCK_INDEX_OFFSET) };
    Ok((header, &bytes[BLOCK_HEADER_BYTES..end]))
}

// ---- delta records ---------------------------------------------------------------------------

/// Offset in a delta record of the CRC-32C of its bytes from [`DELTA_LEN_OFFSET`] to its end.
pub const DELTA_CRC_OFFSET: usize = 0;
/// Offset of the record's length in bytes, header included (u32).
pub const DELTA_LEN_OFFSET: usize = DELTA_CRC_OFFSET + 4;
/// Offset of the byte offset in its file the record was written at (u64).
pub const DELTA_AT_OFFSET: usize = DELTA_LEN_OFFSET + 4;
/// Offset of the first unit of the base block the record changes (u64).
pub const DELTA_BASE_OFFSET: usize = DELTA_AT_OFFSET + 8;
/// Offset of the number of the index the record belongs to (u32, as [`BLOCK_INDEX_OFFSET`]).
pub const DELTA_INDEX_OFFSET: usize = DELTA_BASE_OFFSET + 8;
/// Bytes before the record's entries.
pub const DELTA_HEADER_BYTES: usize = DELTA_INDEX_OFFSET + 4;
/// A delta entry's operation: the key has no entry.
pub const DELTA_REMOVED: u8 = 0;
/// A delta entry's operation: the key's value follows.
pub const DELTA_PUT: u8 = 1;

const _: () = assert!(DELTA_HEADER_BYTES == 28, "docs/page-format.md gives a delta record's header 28 bytes");

/// Seals a delta record in place: `record` is [`DELTA_HEADER_BYTES`] of room and then its
/// entries, to be written at byte `at` of its file, changing the base block at unit `base`
/// of index `index`.
///
/// # Panics
/// If the record is shorter than its header or longer than [`BLOCK_PAYLOAD_MAX`].
pub fn seal_delta(record: &mut [u8], at: u64, base: u64, index: u32) {
    assert!(record.len() >= DELTA_HEADER_BYTES && record.len() <= BLOCK_PAYLOAD_MAX, "a delta record of {} bytes", record.len());
    let len = u32::try_from(record.len()).expect("bounded above");
    record[DELTA_LEN_OFFSET..DELTA_AT_OFFSET].copy_from_slice(&len.to_le_bytes());
    record[DELTA_AT_OFFSET..DELTA_BASE_OFFSET].copy_from_slice(&at.to_le_bytes());
    record[DELTA_BASE_OFFSET..DELTA_INDEX_OFFSET].copy_from_slice(&base.to_le_bytes());
    record[DELTA_INDEX_OFFSET..DELTA_HEADER_BYTES].copy_from_slice(&index.to_le_bytes());
    let crc = crc32c::crc32c(&record[DELTA_LEN_OFFSET..]);
    record[DELTA_CRC_OFFSET..DELTA_LEN_OFFSET].copy_from_slice(&crc.to_le_bytes());
}

/// Checks a delta record read from byte `at` of its file, expected to change the base block
/// at unit `base` of index `index`, and returns its entries.
///
/// # Errors
/// [`PageError::Malformed`] when the length, checksum, offset, base or index is not what was
/// expected (a torn, damaged or misdirected write, or a reference to another record).
pub fn open_delta(bytes: &[u8], at: u64, base: u64, index: u32) -> Result<&[u8], PageError> {
    if bytes.len() < DELTA_HEADER_BYTES {
        return Err(PageError::Malformed("a delta record shorter than its header"));
    }
    let u32_at = |o: usize| u32::from_le_bytes(bytes[o..o + 4].try_into().expect("four bytes"));
    let u64_at = |o: usize| u64::from_le_bytes(bytes[o..o + 8].try_into().expect("eight bytes"));
    if u32_at(DELTA_LEN_OFFSET) as usize != bytes.len() {
        return Err(PageError::Malformed("a delta record's length is not its reference's"));
    }
    if crc32c::crc32c(&bytes[DELTA_LEN_OFFSET..]) != u32_at(DELTA_CRC_OFFSET) {
        return Err(PageError::Malformed("a delta record's checksum mismatch (a torn or damaged write)"));
    }
    if u64_at(DELTA_AT_OFFSET) != at {
        return Err(PageError::Malformed("a delta record written elsewhere (a misdirected write)"));
    }
    if u64_at(DELTA_BASE_OFFSET) != base || u32_at(DELTA_INDEX_OFFSET) != index {
        return Err(PageError::Malformed("a delta record of another leaf"));
    }
    Ok(&bytes[DELTA_HEADER_BYTES..])
}

// ---- the encodings a page image is written with -------------------------------------------

/// Appends `n` as an unsigned LEB128 varint (7 bits a byte, low first, high bit: more).
pub fn put_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8 & 0x7f) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// Appends `bytes` preceded by their length as a varint.
pub fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// Reads what [`put_varint`], [`put_bytes`] and fixed-width little-endian writes left, from
/// the front of a page image.
#[derive(Debug, Clone, Copy)]
pub struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    #[must_use]
    pub fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader { rest: bytes }
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.rest.is_empty()
    }

    /// # Errors
    /// [`PageError::Malformed`] past the end, or for a varint longer than ten bytes.
    pub fn varint(&mut self) -> Result<u64, PageError> {
        let mut n = 0u64;
        for shift in (0..64).step_by(7) {
            let (&byte, rest) = self.rest.split_first().ok_or(PageError::Malformed("a varint runs past the end"))?;
            self.rest = rest;
            n |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(n);
            }
        }
        Err(PageError::Malformed("a varint longer than ten bytes"))
    }

    /// A varint that counts something held in memory.
    ///
    /// # Errors
    /// As [`Reader::varint`], or a count past what the rest of the image could hold.
    pub fn len(&mut self) -> Result<usize, PageError> {
        let n = self.varint()?;
        usize::try_from(n).ok().filter(|&n| n <= self.rest.len().max(1) * 8).ok_or(PageError::Malformed("a length past the end"))
    }

    /// # Errors
    /// [`PageError::Malformed`] past the end.
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], PageError> {
        if n > self.rest.len() {
            return Err(PageError::Malformed("bytes run past the end"));
        }
        let (taken, rest) = self.rest.split_at(n);
        self.rest = rest;
        Ok(taken)
    }

    /// Bytes written by [`put_bytes`].
    ///
    /// # Errors
    /// [`PageError::Malformed`] past the end.
    pub fn bytes(&mut self) -> Result<&'a [u8], PageError> {
        let n = self.varint()?;
        let n = usize::try_from(n).map_err(|_| PageError::Malformed("a length past the end"))?;
        self.take(n)
    }

    /// # Errors
    /// [`PageError::Malformed`] past the end.
    pub fn u8(&mut self) -> Result<u8, PageError> {
        Ok(self.take(1)?[0])
    }

    /// # Errors
    /// [`PageError::Malformed`] past the end.
    pub fn u64(&mut self) -> Result<u64, PageError> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("eight bytes")))
    }
}

/// A value a leaf holds, as a page image writes it: a primary index's version chain
/// ([`crate::chain::Chain`]) or a secondary index's primary key.
pub trait PageValue: Sized {
    /// The block kind a leaf of these values is written as.
    const KIND: u8;
    /// Appends the value's bytes.
    fn encode(&self, out: &mut Vec<u8>);
    /// Reads a value [`PageValue::encode`] wrote.
    ///
    /// # Errors
    /// [`PageError::Malformed`] for bytes it did not write.
    fn decode(reader: &mut Reader<'_>) -> Result<Self, PageError>;
    /// Bytes of memory the value takes beyond its own size (its allocations), for the
    /// buffer pool's count of what a resident leaf holds.
    fn heap_bytes(&self) -> usize;
    /// Whether the value, written as it is, is what a checkpoint would write: a leaf of such
    /// values is [`FLAG_STABLE`], and a checkpoint names its block as it is. A version chain
    /// is when it is one version committed at 0; an index entry never is (whether it belongs
    /// in a checkpoint depends on the versions of its row).
    fn is_stable(&self) -> bool;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block_with(payload: &[u8], unit: u64) -> (Vec<u8>, BlockAddr) {
        let mut block = vec![0; BLOCK_HEADER_BYTES];
        block.extend_from_slice(payload);
        let addr = seal_block(&mut block, BlockHeader { kind: KIND_ROWS, flags: FLAG_STABLE, index: 3 }, unit);
        (block, addr)
    }

    #[test]
    fn a_sealed_block_opens_to_its_header_and_payload() {
        let (block, addr) = block_with(b"rows", 7);
        assert_eq!(addr, BlockAddr { unit: 7, units: 1 });
        assert_eq!(block.len(), UNIT_BYTES);
        let (header, payload) = open_block(&block, addr).unwrap();
        assert_eq!(header, BlockHeader { kind: KIND_ROWS, flags: FLAG_STABLE, index: 3 });
        assert_eq!(payload, b"rows");
    }

    #[test]
    fn a_payload_one_byte_past_a_unit_takes_two() {
        let (_, addr) = block_with(&vec![1; UNIT_BYTES - BLOCK_HEADER_BYTES], 0);
        assert_eq!(addr.units, 1);
        let (block, addr) = block_with(&vec![1; UNIT_BYTES - BLOCK_HEADER_BYTES + 1], 0);
        assert_eq!((addr.units, block.len()), (2, 2 * UNIT_BYTES));
        assert!(open_block(&block, addr).is_ok());
    }

    #[test]
    fn every_flipped_bit_of_header_or_payload_is_caught() {
        let (block, addr) = block_with(b"a payload", 2);
        for byte in 0..BLOCK_HEADER_BYTES + 9 {
            for bit in 0..8 {
                let mut bad = block.clone();
                bad[byte] ^= 1 << bit;
                assert!(open_block(&bad, addr).is_err(), "byte {byte} bit {bit}");
            }
        }
    }

    #[test]
    fn a_torn_block_and_a_block_read_from_elsewhere_are_damaged() {
        let (block, addr) = block_with(&vec![5; 3 * UNIT_BYTES], 4);
        // A tear: the first unit written, the rest still what was there before (zeros).
        let mut torn = block.clone();
        torn[UNIT_BYTES..].fill(0);
        assert!(matches!(open_block(&torn, addr), Err(PageError::Damaged { .. })));
        // The same bytes found at another unit: a misdirected write.
        let elsewhere = BlockAddr { unit: 9, ..addr };
        let err = open_block(&block, elsewhere).unwrap_err();
        assert!(err.to_string().contains("misdirected"), "{err}");
        // Short reads and zeros.
        assert!(open_block(&block[..UNIT_BYTES], addr).is_err());
        assert!(open_block(&vec![0; addr.bytes()], addr).is_err());
    }

    #[test]
    fn a_delta_record_opens_only_where_and_for_what_it_was_written() {
        let mut record = vec![0; DELTA_HEADER_BYTES];
        record.extend_from_slice(b"entries");
        seal_delta(&mut record, 8192 + 40, 5, 2);
        assert_eq!(open_delta(&record, 8232, 5, 2).unwrap(), b"entries");
        assert!(open_delta(&record, 8192, 5, 2).is_err(), "read from elsewhere");
        assert!(open_delta(&record, 8232, 6, 2).is_err(), "another base");
        assert!(open_delta(&record, 8232, 5, 1).is_err(), "another index");
        assert!(open_delta(&record[..record.len() - 1], 8232, 5, 2).is_err(), "cut short");
        for byte in 0..record.len() {
            let mut bad = record.clone();
            bad[byte] ^= 0x10;
            assert!(open_delta(&bad, 8232, 5, 2).is_err(), "byte {byte}");
        }
    }

    #[test]
    fn varints_and_byte_strings_read_back() {
        let numbers = [0, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX];
        let mut out = Vec::new();
        for &n in &numbers {
            put_varint(&mut out, n);
            put_bytes(&mut out, &n.to_le_bytes()[..(n % 9) as usize]);
        }
        let mut reader = Reader::new(&out);
        for &n in &numbers {
            assert_eq!(reader.varint().unwrap(), n);
            assert_eq!(reader.bytes().unwrap(), &n.to_le_bytes()[..(n % 9) as usize]);
        }
        assert!(reader.is_empty());
        assert!(reader.varint().is_err());
        assert!(Reader::new(&[0xff; 11]).varint().is_err(), "eleven bytes of varint");
        assert!(Reader::new(&[5, 1]).bytes().is_err(), "five bytes promised, one there");
    }
}
