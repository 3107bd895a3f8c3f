//! One row's versions, newest last: the MVCC unit of the in-memory row store
//! ([`crate::table`]), kept as the value of the table's primary [`crate::leaf_map::LeafMap`].
//!
//! A version is a row image (or a delete) and a [`Stamp`]: the transaction that wrote it
//! while it is uncommitted, its commit timestamp once committed. A committed version no
//! longer needs its writer (only a running transaction reads its own writes), so the two
//! share one word.
//!
//! Invariants (kept by the table, under the leaf's mutex):
//! - at most one transaction has uncommitted versions on a chain, and they are its newest;
//! - committed versions are in commit-timestamp order;
//! - a chain with no version is vacant and leaves the map.

use smallvec::SmallVec;

use crate::leaf_map::Vacancy;
use crate::page::{KIND_ROWS, PageError, PageValue, Reader, put_varint};
use crate::table::{ReadView, Timestamp, TxnId};

/// A row image as a version holds it: the table's [`crate::format::RowFormat`], one
/// allocation, decoded when read.
pub(crate) type EncodedRow = Box<[u8]>;

/// Whose a version is, in one word: with [`Stamp::PENDING`] set, the transaction whose
/// uncommitted write it is (the low 63 bits); clear, the commit timestamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp(u64);

impl Stamp {
    /// The bit that marks an uncommitted version. Transaction ids and timestamps are
    /// counters that never reach it.
    const PENDING: u64 = 1 << 63;

    pub(crate) fn pending(txn: TxnId) -> Stamp {
        assert!(txn & Self::PENDING == 0, "transaction id {txn} out of range");
        Stamp(txn | Self::PENDING)
    }

    pub(crate) fn committed(ts: Timestamp) -> Stamp {
        assert!(ts & Self::PENDING == 0, "commit timestamp {ts} out of range");
        Stamp(ts)
    }

    /// The transaction of an uncommitted version.
    pub(crate) fn writer(self) -> Option<TxnId> {
        (self.0 & Self::PENDING != 0).then_some(self.0 & !Self::PENDING)
    }

    /// The commit timestamp of a committed version.
    pub(crate) fn commit_ts(self) -> Option<Timestamp> {
        (self.0 & Self::PENDING == 0).then_some(self.0)
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Version {
    pub(crate) stamp: Stamp,
    /// `None`: the row is deleted.
    pub(crate) row: Option<EncodedRow>,
}

impl Version {
    /// An uncommitted version of `txn`.
    pub(crate) fn is_pending_for(&self, txn: TxnId) -> bool {
        self.stamp.writer() == Some(txn)
    }
}

#[derive(Debug, Default)]
pub(crate) struct Chain {
    /// Oldest first. Most rows have one version, kept inline: no allocation of its own.
    pub(crate) versions: SmallVec<[Version; 1]>,
}

impl Vacancy for Chain {
    fn is_vacant(&self) -> bool {
        self.versions.is_empty()
    }
}

impl Chain {
    /// The image `view` sees (`None`: no row, or a delete).
    pub(crate) fn visible(&self, view: &ReadView) -> Option<&EncodedRow> {
        for v in self.versions.iter().rev() {
            let sees = view.uncommitted
                || match (v.stamp.writer(), v.stamp.commit_ts()) {
                    (Some(writer), _) => writer == view.txn,
                    (None, Some(ts)) => ts <= view.read_ts,
                    (None, None) => unreachable!("a stamp is pending or committed"),
                };
            if sees {
                return v.row.as_ref();
            }
        }
        None
    }

    /// The transaction with uncommitted versions on the row.
    pub(crate) fn holder(&self) -> Option<TxnId> {
        self.versions.last().and_then(|v| v.stamp.writer())
    }

    /// The newest commit timestamp on the row.
    pub(crate) fn newest_commit_ts(&self) -> Option<Timestamp> {
        self.versions.iter().rev().find_map(|v| v.stamp.commit_ts())
    }
}

/// A chain in a page image (`docs/page-format.md`, "Leaf of version chains"): the number of
/// versions, then each version oldest first as its stamp (a varint: a commit timestamp, or
/// the pending bit and a transaction id) and its image (a varint of the image's length plus
/// one, 0 for a delete, then the image).
impl PageValue for Chain {
    const KIND: u8 = KIND_ROWS;

    fn encode(&self, out: &mut Vec<u8>) {
        put_varint(out, self.versions.len() as u64);
        for v in &self.versions {
            put_varint(out, v.stamp.0);
            match &v.row {
                Some(image) => {
                    put_varint(out, image.len() as u64 + 1);
                    out.extend_from_slice(image);
                }
                None => put_varint(out, 0),
            }
        }
    }

    fn decode(reader: &mut Reader<'_>) -> Result<Chain, PageError> {
        let count = reader.len()?;
        if count == 0 {
            return Err(PageError::Malformed("a chain with no version"));
        }
        let mut versions = SmallVec::with_capacity(count);
        for _ in 0..count {
            let stamp = Stamp(reader.varint()?);
            let row = match reader.len()? {
                0 => None,
                n => Some(reader.take(n - 1)?.into()),
            };
            versions.push(Version { stamp, row });
        }
        Ok(Chain { versions })
    }

    fn heap_bytes(&self) -> usize {
        let spilled = if self.versions.spilled() { self.versions.capacity() * std::mem::size_of::<Version>() } else { 0 };
        spilled + self.versions.iter().filter_map(|v| v.row.as_ref()).map(|image| image.len()).sum::<usize>()
    }

    /// One version, committed at 0: what a checkpoint writes ([`encode_stable`]), seen by
    /// every view whenever it is read back.
    fn is_stable(&self) -> bool {
        matches!(&self.versions[..], [only] if only.stamp.commit_ts() == Some(0))
    }
}

/// Appends the stable image of one row, as a checkpoint writes it: a chain of one version
/// committed at 0 (seen by every view: recovery starts from it and numbers commits afresh).
pub(crate) fn encode_stable(image: &[u8], out: &mut Vec<u8>) {
    put_varint(out, 1);
    put_varint(out, Stamp::committed(0).0);
    put_varint(out, image.len() as u64 + 1);
    out.extend_from_slice(image);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(bytes: &[u8]) -> Result<Chain, PageError> {
        let mut reader = Reader::new(bytes);
        let chain = Chain::decode(&mut reader)?;
        assert!(reader.is_empty(), "the whole value read");
        Ok(chain)
    }

    #[test]
    fn a_chain_of_pending_committed_and_deleted_versions_reads_back_from_its_page_bytes() {
        let mut chain = Chain::default();
        chain.versions.push(Version { stamp: Stamp::committed(1 << 40), row: Some(b"old".to_vec().into()) });
        chain.versions.push(Version { stamp: Stamp::committed(1 << 41), row: None });
        chain.versions.push(Version { stamp: Stamp::pending(77), row: Some(Box::default()) });
        let mut out = Vec::new();
        chain.encode(&mut out);
        let back = decode(&out).unwrap();
        assert_eq!(format!("{:?}", back.versions), format!("{:?}", chain.versions));
        assert!(!chain.is_stable());
        chain.versions.drain(1..);
        assert!(!chain.is_stable(), "one version, but committed at a timestamp a view may not reach");
        for cut in 0..out.len() {
            assert!(decode(&out[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn a_stable_image_is_one_version_every_view_sees() {
        let mut out = Vec::new();
        encode_stable(b"row", &mut out);
        let chain = decode(&out).unwrap();
        assert!(chain.is_stable());
        let view = ReadView { txn: 5, read_ts: 0, uncommitted: false };
        assert_eq!(chain.visible(&view).map(|r| &r[..]), Some(&b"row"[..]));
        assert_eq!(out.len(), 3 + 3, "count, stamp and length take a byte each");
    }

    #[test]
    fn a_stamp_is_a_writer_or_a_commit_timestamp() {
        assert_eq!(Stamp::pending(7).writer(), Some(7));
        assert_eq!(Stamp::pending(7).commit_ts(), None);
        assert_eq!(Stamp::committed(7).writer(), None);
        assert_eq!(Stamp::committed(7).commit_ts(), Some(7));
        assert_eq!(Stamp::committed(0).commit_ts(), Some(0));
    }

    #[test]
    fn a_version_and_a_one_version_chain_take_no_more_than_their_words() {
        assert_eq!(std::mem::size_of::<Version>(), 24);
        assert_eq!(std::mem::size_of::<Chain>(), 32);
    }

    #[test]
    fn a_view_sees_its_own_pending_version_and_committed_ones_up_to_its_timestamp() {
        let image = |b: u8| Some(vec![b].into_boxed_slice());
        let mut chain = Chain::default();
        chain.versions.push(Version { stamp: Stamp::committed(5), row: image(1) });
        chain.versions.push(Version { stamp: Stamp::pending(9), row: image(2) });
        let seen = |txn, read_ts| chain.visible(&ReadView { txn, read_ts, uncommitted: false }).map(|r| r[0]);
        assert_eq!(seen(9, 0), Some(2), "its own write");
        assert_eq!(seen(3, 4), None, "before the commit");
        assert_eq!(seen(3, 5), Some(1));
        assert_eq!(chain.holder(), Some(9));
        assert_eq!(chain.newest_commit_ts(), Some(5));
    }
}
