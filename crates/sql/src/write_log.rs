//! The rows a statement or a transaction wrote, in order: for each version it pushed, the
//! table's id and the row's primary key. A failed statement undoes its own list newest
//! first; a transaction's list (the statements' lists appended) is what COMMIT logs and
//! stamps, what ROLLBACK and `ROLLBACK TO SAVEPOINT` undo, and what a large transaction
//! streams ahead.
//!
//! A bulk statement writes millions of rows, so the list is kept compact: the keys are
//! appended to one byte buffer, each write is the offset where its key ends, and the table
//! id is stored once per run of writes on one table. That is the key's bytes plus 8 bytes a
//! write, where a list of `(u64, Vec<u8>)` took 32 bytes plus an allocation for each key.
//!
//! Invariants: `ends` is non-decreasing and its last value is `keys.len()`; `runs` starts
//! at write 0 whenever there are writes, and its starts increase. Where it sits: in `sql`,
//! used by `dml` (a statement's `DmlCx::undo`) and `session` (a transaction's writes).

/// The writes of a statement or a transaction (see the module doc).
#[derive(Debug, Default)]
pub struct WriteLog {
    /// Every key, back to back.
    keys: Vec<u8>,
    /// Where each write's key ends in `keys`.
    ends: Vec<usize>,
    /// `(first write, table id)` of each run of writes on one table.
    runs: Vec<(usize, u64)>,
}

impl WriteLog {
    #[must_use]
    pub fn new() -> WriteLog {
        WriteLog::default()
    }

    /// Records a write of the row `pk` of table `table`.
    pub fn push(&mut self, table: u64, pk: &[u8]) {
        if self.runs.last().is_none_or(|&(_, t)| t != table) {
            self.runs.push((self.ends.len(), table));
        }
        self.keys.extend_from_slice(pk);
        self.ends.push(self.keys.len());
    }

    #[must_use]
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The `i`th write: its table and key.
    ///
    /// # Panics
    /// If there is no such write.
    #[must_use]
    pub fn get(&self, i: usize) -> (u64, &[u8]) {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        let run = self.runs.partition_point(|&(first, _)| first <= i) - 1;
        (self.runs[run].1, &self.keys[start..self.ends[i]])
    }

    /// The writes from `from` on, in order (`.rev()` for newest first).
    pub fn iter_from(&self, from: usize) -> impl DoubleEndedIterator<Item = (u64, &[u8])> + '_ {
        (from..self.len()).map(|i| self.get(i))
    }

    /// Every write, in order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (u64, &[u8])> + '_ {
        self.iter_from(0)
    }

    /// Forgets the writes from `len` on.
    pub fn truncate(&mut self, len: usize) {
        if len >= self.len() {
            return;
        }
        self.keys.truncate(if len == 0 { 0 } else { self.ends[len - 1] });
        self.ends.truncate(len);
        let runs = self.runs.partition_point(|&(first, _)| first < len);
        self.runs.truncate(runs);
    }

    /// Moves `other`'s writes after this log's.
    pub fn append(&mut self, other: WriteLog) {
        if self.is_empty() {
            *self = other;
            return;
        }
        for (table, pk) in other.iter() {
            self.push(table, pk);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(log: &WriteLog) -> Vec<(u64, Vec<u8>)> {
        log.iter().map(|(t, k)| (t, k.to_vec())).collect()
    }

    #[test]
    fn writes_come_back_in_order_with_their_tables() {
        let mut log = WriteLog::new();
        log.push(1, b"a");
        log.push(1, b"bb");
        log.push(2, b"");
        log.push(1, b"c");
        assert_eq!(all(&log), vec![(1, b"a".to_vec()), (1, b"bb".to_vec()), (2, vec![]), (1, b"c".to_vec())]);
        assert_eq!(log.iter().rev().map(|(t, _)| t).collect::<Vec<_>>(), vec![1, 2, 1, 1]);
        assert_eq!(log.iter_from(2).count(), 2);
        assert_eq!(log.get(1), (1, &b"bb"[..]));
    }

    #[test]
    fn truncate_drops_whole_writes_and_their_runs() {
        let mut log = WriteLog::new();
        for (t, k) in [(1, "a"), (2, "b"), (2, "c"), (3, "d")] {
            log.push(t, k.as_bytes());
        }
        log.truncate(2);
        assert_eq!(all(&log), vec![(1, b"a".to_vec()), (2, b"b".to_vec())]);
        log.push(2, b"e");
        log.push(4, b"f");
        assert_eq!(all(&log), vec![(1, b"a".to_vec()), (2, b"b".to_vec()), (2, b"e".to_vec()), (4, b"f".to_vec())]);
        log.truncate(0);
        assert!(log.is_empty() && log.iter().next().is_none());
        log.truncate(5);
        assert!(log.is_empty());
    }

    #[test]
    fn append_keeps_both_orders() {
        let mut first = WriteLog::new();
        first.push(1, b"a");
        let mut second = WriteLog::new();
        second.push(1, b"b");
        second.push(2, b"c");
        first.append(second);
        assert_eq!(all(&first), vec![(1, b"a".to_vec()), (1, b"b".to_vec()), (2, b"c".to_vec())]);
        let mut empty = WriteLog::new();
        empty.append(first);
        assert_eq!(empty.len(), 3);
    }
}
