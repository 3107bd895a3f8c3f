//! The bulk write path of `INSERT ... SELECT`, multi-row `INSERT` and `LOAD DATA`: rows are
//! finished (defaults, checks, conversions, AUTO_INCREMENT) as they come, encoded in the
//! table's row format and held, with their primary keys, in a write buffer of
//! `bulk_insert_buffer_size` bytes (MySQL's variable and default, 8 MiB). When the buffer
//! fills, and at the statement's end, it is flushed: under one hold of the table's write
//! latch, each row gets its insert-intention check and its row lock as a single-row write does (`dml::write_locked`), its primary
//! version and unique-index entries are written in statement order, and its entries in
//! non-unique secondary indexes are held back, then sorted and merged into each index once
//! per buffer (`Handler::write_image_deferred`, `Handler::merge_deferred`). Each flush counts
//! in `Quill_bulk_buffer_flushes` (SHOW GLOBAL STATUS): twice the buffer, half the flushes.
//!
//! The latch is held for a whole flush, so no gap lock is granted while entries are held
//! back: another session's writes to the table, and its locking reads, wait for at most one
//! buffer's worth of rows. The commit log receives the statement's rows as it does any
//! statement's (`session::commit`, streamed in parts once the statement succeeds).
//!
//! Used only where the row order cannot change an outcome: plain INSERT (the first
//! duplicate in statement order fails the statement) and INSERT IGNORE / LOAD DATA's IGNORE
//! (a duplicate is skipped with a warning, earlier rows winning). REPLACE and ON DUPLICATE
//! KEY UPDATE write row by row. `bulk_insert_buffer_size = 0` turns the buffer off.
//! Invariant: a flush merges every entry it held back before it returns, error or not, so
//! undo and readers always find a row's index entries.

use quill_storage::{DeferredEntries, Handler, Row, WriteError};

use super::{DmlCx, DmlResult, write_error};
use crate::catalog::TableMeta;
use crate::error::{Result, Warning, codes};
use crate::locking;

/// A row ready for the buffer: its columns checked and converted for the table.
pub(super) enum Finished<'r> {
    /// As values, encoded in the table's row format as it is buffered.
    Row(Row),
    /// Already an image in the table's row format (a whole-row copy from a table of the same
    /// shape, `dml::copy`), with its primary key when the caller knows it (`None`: the
    /// table's key of the row, or its next hidden row id, found at the flush).
    Image { pk: Option<&'r [u8]>, image: &'r [u8] },
}

/// Where one buffered row lies in [`BulkBuffer::bytes`]: its primary key (absent for a
/// table keyed by hidden row id, which assigns it at the write) then its image.
struct Buffered {
    start: usize,
    /// Length of the primary key at `start`; `None`: no key yet (hidden row id).
    pk_len: Option<usize>,
    end: usize,
    /// The length of the statement's warnings when the row came, so a duplicate's warning
    /// takes its place in row order.
    warning_at: usize,
}

/// Finished rows waiting for a flush, `limit` bytes of them at most but for the last row:
/// each row's primary key
/// and its image in the table's row format, one after the other in one byte buffer that is
/// reused from flush to flush (the buffer takes what MySQL's write cache takes, and its
/// memory is not handed back and asked for again at every flush).
pub(super) struct BulkBuffer {
    bytes: Vec<u8>,
    rows: Vec<Buffered>,
    limit: usize,
    /// Duplicates are skipped with a warning (IGNORE) rather than failing the statement.
    ignore: bool,
}

impl BulkBuffer {
    /// A buffer of `bulk_insert_buffer_size` for `data`, which is told a bulk write begins;
    /// `None` when the variable is 0.
    pub(super) fn start(cx: &DmlCx<'_>, data: &dyn Handler, ignore: bool, rows: Option<u64>) -> Option<BulkBuffer> {
        let limit = usize::try_from(crate::vars::int_value(&cx.info.vars, "bulk_insert_buffer_size")).unwrap_or(usize::MAX);
        if limit == 0 {
            return None;
        }
        data.start_bulk_insert(rows);
        Some(BulkBuffer { bytes: Vec::new(), rows: Vec::new(), limit, ignore })
    }

    /// Adds a finished row, flushing the buffer once it is full.
    ///
    /// # Errors
    /// The flush's.
    pub(super) fn push(
        &mut self,
        cx: &mut DmlCx<'_>,
        t: &TableMeta,
        data: &dyn Handler,
        row: Finished<'_>,
        res: &mut DmlResult,
        duplicates: &mut u64,
    ) -> Result<()> {
        // Encoded straight into the buffer; a row that takes it past the limit is written
        // with the rows before it (the limit bounds the buffer by one row's size at most).
        let start = self.bytes.len();
        let pk_len = match row {
            Finished::Row(row) => {
                let pk_len = data.has_primary_key().then(|| {
                    let pk = data.primary_key(&row);
                    self.bytes.extend_from_slice(&pk);
                    pk.len()
                });
                data.row_format().encode_into(&row, &mut self.bytes);
                pk_len
            }
            Finished::Image { pk, image } => {
                if let Some(pk) = pk {
                    self.bytes.extend_from_slice(pk);
                }
                self.bytes.extend_from_slice(image);
                pk.map(<[u8]>::len)
            }
        };
        self.rows.push(Buffered { start, pk_len, end: self.bytes.len(), warning_at: cx.warnings.len() });
        if self.bytes.len() >= self.limit {
            self.flush(cx, t, data, res, duplicates)?;
        }
        Ok(())
    }

    /// Writes what is left and ends the bulk write.
    ///
    /// # Errors
    /// The flush's.
    pub(super) fn finish(mut self, cx: &mut DmlCx<'_>, t: &TableMeta, data: &dyn Handler, res: &mut DmlResult, duplicates: &mut u64) -> Result<()> {
        let flushed = self.flush(cx, t, data, res, duplicates);
        data.end_bulk_insert();
        flushed
    }

    /// Ends the bulk write of a statement that failed: the rows still buffered are dropped
    /// (the statement's undo removes those already written).
    pub(super) fn abandon(self, data: &dyn Handler) {
        data.end_bulk_insert();
    }

    /// Writes the buffered rows (see the module doc).
    fn flush(&mut self, cx: &mut DmlCx<'_>, t: &TableMeta, data: &dyn Handler, res: &mut DmlResult, duplicates: &mut u64) -> Result<()> {
        if self.rows.is_empty() {
            return Ok(());
        }
        cx.info.engine.status.bulk_buffer_flushes.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let locks = &cx.info.engine.txns.locks;
        let latch = data.write_latch();
        let mut deferred = DeferredEntries::default();
        let (bytes, rows, ignore) = (&self.bytes, &self.rows, self.ignore);
        // The row an image encodes, where its values are needed (index entries of an
        // insert-intention check, a hidden row id's key, an error message).
        let decode = |image: &[u8]| data.row_format().decode(image).expect("the buffer's images are the table's format");
        let mut written = || -> Result<()> {
            // Warnings inserted so far: later rows' places move by as many.
            let mut shift = 0;
            for b in rows {
                let (pk, image) = match b.pk_len {
                    Some(n) => (Some(&bytes[b.start..b.start + n]), &bytes[b.start + n..b.end]),
                    None => (None, &bytes[b.start..b.end]),
                };
                let key = pk.map_or_else(|| data.insert_key(&decode(image)), <[u8]>::to_vec);
                locking::check_insert(locks, cx.txn, t.id, || {
                    let mut keys = data.index_entries(&decode(image), &key);
                    keys.push((0, key.clone()));
                    keys
                })?;
                match locking::insert_locked(locks, cx.txn, t.id, data, &key, || data.write_image_deferred(&latch, cx.txn, pk, image, &mut deferred))? {
                    Ok(pk) => {
                        cx.undo.push(t.id, &pk);
                        res.affected += 1;
                    }
                    Err(WriteError::Duplicate { .. }) if ignore => {
                        let message = write_error(WriteError::Duplicate { index: None, existing_pk: vec![] }, t, &decode(image), cx).message;
                        let at = (b.warning_at + shift).min(cx.warnings.len());
                        cx.warnings.insert(at, Warning { level: "Warning", code: codes::ER_DUP_ENTRY.0, message });
                        shift += 1;
                        *duplicates += 1;
                    }
                    Err(e) => return Err(write_error(e, t, &decode(image), cx)),
                }
            }
            Ok(())
        };
        let result = written();
        data.merge_deferred(&latch, deferred);
        self.bytes.clear();
        self.rows.clear();
        result
    }
}
