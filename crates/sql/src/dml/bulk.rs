//! The bulk write path of `INSERT ... SELECT`, multi-row `INSERT` and `LOAD DATA`: rows are
//! finished (defaults, checks, conversions, AUTO_INCREMENT) as they come and held in a
//! write buffer of `bulk_insert_buffer_size` bytes (MySQL's variable and default, 8 MiB;
//! counted as the rows' encoded size). When the buffer fills, and at the statement's end, it
//! is flushed: under one hold of the table's write latch, each row gets its insert-intention
//! check and its row lock as a single-row write does (`dml::write_locked`), its primary
//! version and unique-index entries are written in statement order, and its entries in
//! non-unique secondary indexes are held back, then sorted and merged into each index once
//! per buffer (`Handler::write_row_deferred`, `Handler::merge_deferred`). Each flush counts
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

use quill_storage::{DeferredEntries, Handler, Row, WriteError, row::encoded_len_estimate};

use super::{DmlCx, DmlResult, write_error};
use crate::catalog::TableMeta;
use crate::error::{Result, Warning};
use crate::locking;

/// Finished rows waiting for a flush, at most about `limit` bytes of them.
pub(super) struct BulkBuffer {
    /// Each row with the length of the statement's warnings when it came, so a duplicate's
    /// warning takes its place in row order.
    rows: Vec<(Row, usize)>,
    bytes: usize,
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
        Some(BulkBuffer { rows: Vec::new(), bytes: 0, limit, ignore })
    }

    /// Adds a finished row, flushing first when it would not fit.
    ///
    /// # Errors
    /// The flush's.
    pub(super) fn push(&mut self, cx: &mut DmlCx<'_>, t: &TableMeta, data: &dyn Handler, row: Row, res: &mut DmlResult, duplicates: &mut u64) -> Result<()> {
        let len = encoded_len_estimate(&row);
        if !self.rows.is_empty() && self.bytes + len > self.limit {
            self.flush(cx, t, data, res, duplicates)?;
        }
        self.bytes += len;
        self.rows.push((row, cx.warnings.len()));
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
        let rows = std::mem::take(&mut self.rows);
        self.bytes = 0;
        if rows.is_empty() {
            return Ok(());
        }
        cx.info.engine.status.bulk_buffer_flushes.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let locks = &cx.info.engine.txns.locks;
        let latch = data.write_latch();
        let mut deferred = DeferredEntries::default();
        let written = || -> Result<()> {
            // Warnings inserted so far: later rows' places move by as many.
            let mut shift = 0;
            for (row, warning_at) in rows {
                let pk = data.insert_key(&row);
                locking::check_insert(locks, cx.txn, t.id, || {
                    let mut keys = data.index_entries(&row, &pk);
                    keys.push((0, pk.clone()));
                    keys
                })?;
                match locking::insert_locked(locks, cx.txn, t.id, data, &pk, || data.write_row_deferred(&latch, cx.txn, &row, &mut deferred))? {
                    Ok(pk) => {
                        cx.undo.push((t.id, pk));
                        res.affected += 1;
                    }
                    Err(WriteError::Duplicate { .. }) if self.ignore => {
                        let message = write_error(WriteError::Duplicate { index: None, existing_pk: vec![] }, t, &row, cx).message;
                        let at = (warning_at + shift).min(cx.warnings.len());
                        cx.warnings.insert(at, Warning { level: "Warning", code: 1062, message });
                        shift += 1;
                        *duplicates += 1;
                    }
                    Err(e) => return Err(write_error(e, t, &row, cx)),
                }
            }
            Ok(())
        };
        let result = written();
        data.merge_deferred(&latch, deferred);
        result
    }
}
