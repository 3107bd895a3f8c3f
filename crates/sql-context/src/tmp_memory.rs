//! The memory bound of one statement's intermediate results: what MySQL keeps in internal
//! temporary tables and sort buffers.
//!
//! A statement holds rows of its own, beyond what the tables hold, in a few places: the
//! groups of a GROUP BY, the rows of a DISTINCT, a sort or a result built before it is
//! sent, the rows of a UNION, a derived table or a subquery, and the built side of a hash
//! join. Each of those places takes a [`Held`] from the session's [`TmpMemory`] and adds the
//! (estimated, [`row_bytes`]) size of every row it keeps; the [`Held`] gives its bytes back
//! when it is dropped, so a subquery run once per outer row does not add up.
//!
//! The bound is `temptable_max_ram` (MySQL 8's name for the memory its internal temporary
//! tables may take, default 1 GiB), per statement. MySQL moves a temporary table that
//! outgrows it to disk; Quill has no on-disk temporary tables yet, so the statement fails
//! with 1114 (`The table '/tmp/#sql...' is full`), MySQL's error for a temporary table
//! that cannot grow, and the connection stays usable. `tmp_table_size` and
//! `sort_buffer_size` are accepted and shown but are not this bound (see `vars`).
//!
//! Invariant: `used` is the sum of the live [`Held`]s' bytes; it is reset to zero only at a
//! statement's start, when none is live. Single-threaded: a session's statement runs on
//! one thread at a time.

use std::cell::Cell;
use std::mem::size_of_val;

use quill_storage::Value;

use quill_sql_types::error::{Result, SqlError, codes};

/// The bytes a row kept by the executor takes, estimated: the values themselves plus the
/// heap their strings, bytes and decimals own, plus the row's own allocation.
#[must_use]
pub fn row_bytes(row: &[Value]) -> usize {
    let heap: usize = row
        .iter()
        .map(|v| match v {
            Value::Str(s) => s.capacity(),
            Value::Bytes(b) => b.capacity(),
            Value::Decimal(_) => DECIMAL_HEAP_BYTES,
            _ => 0,
        })
        .sum();
    ROW_OVERHEAD_BYTES + size_of_val(row) + heap
}

/// What a kept row costs beyond its values: its vector's header and the allocator's rounding.
const ROW_OVERHEAD_BYTES: usize = 32;
/// The heap a decimal's digits take, on average.
const DECIMAL_HEAP_BYTES: usize = 16;

/// One session's account of the intermediate memory its running statement holds.
#[derive(Debug, Default)]
pub struct TmpMemory {
    used: Cell<usize>,
    limit: Cell<usize>,
    /// A name for the error, numbered as MySQL numbers its temporary tables.
    tables: Cell<u32>,
}

impl TmpMemory {
    /// A statement starts with nothing held, bounded by `limit` bytes.
    pub fn start_statement(&self, limit: usize) {
        self.used.set(0);
        self.limit.set(limit);
    }

    /// A new place that keeps rows, holding nothing yet.
    #[must_use]
    pub fn hold(&self) -> Held<'_> {
        Held { memory: self, bytes: 0 }
    }

    /// Account `bytes` held until the statement ends (a hash join's built table, which
    /// lives in the plan).
    ///
    /// # Errors
    /// As [`Held::add`].
    pub fn hold_for_statement(&self, bytes: usize) -> Result<()> {
        self.charge(bytes)
    }

    /// Count `bytes` more against the bound (given back by their holder, or at the next
    /// statement's start).
    fn charge(&self, bytes: usize) -> Result<()> {
        let used = self.used.get() + bytes;
        self.used.set(used);
        let limit = self.limit.get();
        if limit > 0 && used > limit {
            let n = self.tables.get().wrapping_add(1);
            self.tables.set(n);
            return Err(SqlError::new(codes::ER_RECORD_FILE_FULL, format!("The table '/tmp/#sql{:x}_{n}' is full", std::process::id())));
        }
        Ok(())
    }

    /// The bytes held now.
    #[must_use]
    pub fn used(&self) -> usize {
        self.used.get()
    }
}

/// Bytes held by one place of a statement: given back when dropped.
#[derive(Debug)]
pub struct Held<'a> {
    memory: &'a TmpMemory,
    bytes: usize,
}

impl Held<'_> {
    /// Account `bytes` more.
    ///
    /// # Errors
    /// 1114 when the statement would hold more than its bound (`temptable_max_ram`).
    pub fn add(&mut self, bytes: usize) -> Result<()> {
        self.bytes += bytes;
        self.memory.charge(bytes)
    }

    /// Give back `bytes` of what this place accounted (rows it let go of).
    pub fn release(&mut self, bytes: usize) {
        let bytes = bytes.min(self.bytes);
        self.bytes -= bytes;
        self.memory.used.set(self.memory.used.get() - bytes);
    }

    /// Account one row kept.
    ///
    /// # Errors
    /// As [`Held::add`].
    pub fn add_row(&mut self, row: &[Value]) -> Result<()> {
        self.add(row_bytes(row))
    }

    /// Account rows kept.
    ///
    /// # Errors
    /// As [`Held::add`].
    pub fn add_rows(&mut self, rows: &[Vec<Value>]) -> Result<()> {
        self.add(rows.iter().map(|r| row_bytes(r)).sum())
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.memory.used.set(self.memory.used.get() - self.bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn held_bytes_come_back_and_the_bound_fails_with_1114() {
        let m = TmpMemory::default();
        m.start_statement(1000);
        {
            let mut a = m.hold();
            a.add(600).expect("within the bound");
            let mut b = m.hold();
            let e = b.add(600).expect_err("over the bound");
            assert_eq!(e.code, 1114);
            assert!(e.message.starts_with("The table '/tmp/#sql"), "{}", e.message);
        }
        assert_eq!(m.used(), 0);
        let mut c = m.hold();
        c.add(900).expect("everything was given back");
    }

    #[test]
    fn no_limit_before_a_statement_starts() {
        let m = TmpMemory::default();
        m.hold().add(usize::MAX / 2).expect("no bound set");
    }

    #[test]
    fn row_bytes_count_the_heap() {
        let small = row_bytes(&[Value::Int(1)]);
        let big = row_bytes(&[Value::Str("x".repeat(1000))]);
        assert!(big >= small + 1000);
    }
}
