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
//! The commit path logs a row written twice in one part once, which takes a set of the keys
//! it has seen; a bulk statement's writes come in key order and never repeat, and the log
//! knows it: each write is checked against the one before it ([`WriteLog::distinct_from`]).
//!
//! Invariants: `ends` is non-decreasing and its last value is `keys.len()`; `runs` starts
//! at write 0 whenever there are writes, and its starts increase; no write after
//! `last_repeat` repeats an earlier write at or after `last_repeat`. Where it sits: in
//! `quill-sql-context`, used by `dml` (a statement's `DmlCx::undo`) and `session` (a transaction's writes).

/// The writes of a statement or a transaction (see the module doc).
#[derive(Debug, Default)]
pub struct WriteLog {
    /// Every key, back to back.
    keys: Vec<u8>,
    /// Where each write's key ends in `keys`.
    ends: Vec<usize>,
    /// `(first write, table id)` of each run of writes on one table.
    runs: Vec<(usize, u64)>,
    /// The last write that may repeat an earlier one: a write whose key is not above the key
    /// before it in its run, or that starts a run on a table an earlier run wrote (or, past
    /// [`RUNS_SCANNED_MAX`] runs, any that starts a run). 0 when there is none.
    last_repeat: usize,
}

/// Runs a new run's table is looked for among; with more, a new run counts as a possible
/// repeat (a statement that alternates between tables is not a bulk write).
const RUNS_SCANNED_MAX: usize = 16;

impl WriteLog {
    #[must_use]
    pub fn new() -> WriteLog {
        WriteLog::default()
    }

    /// Records a write of the row `pk` of table `table`.
    pub fn push(&mut self, table: u64, pk: &[u8]) {
        let index = self.ends.len();
        let repeats = match self.runs.last() {
            Some(&(_, t)) if t == table => pk <= self.key(index - 1),
            Some(_) => self.runs.len() >= RUNS_SCANNED_MAX || self.runs.iter().any(|&(_, t)| t == table),
            None => false,
        };
        if repeats {
            self.last_repeat = index;
        }
        if self.runs.last().is_none_or(|&(_, t)| t != table) {
            self.runs.push((index, table));
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

    /// Whether no write from `from` on repeats another write from `from` on (same table and
    /// key). `false` means it may: the check is one key comparison per write.
    #[must_use]
    pub fn distinct_from(&self, from: usize) -> bool {
        self.last_repeat <= from
    }

    /// The key of write `i`.
    fn key(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.keys[start..self.ends[i]]
    }

    /// The writes from `from` on, in order (`.rev()` for newest first).
    pub fn iter_from(&self, from: usize) -> impl DoubleEndedIterator<Item = (u64, &[u8])> + '_ {
        let first_run = self.runs.partition_point(|&(first, _)| first <= from).saturating_sub(1);
        let len = self.len();
        self.runs[first_run.min(self.runs.len())..].iter().enumerate().flat_map(move |(n, &(first, table))| {
            let end = self.runs.get(first_run + n + 1).map_or(len, |&(next, _)| next);
            (first.max(from)..end).map(move |i| (table, self.key(i)))
        })
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
        // Whether an earlier write repeats is not kept: assume one at the cut.
        self.last_repeat = self.last_repeat.min(len);
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
        all_from(log, 0)
    }

    fn all_from(log: &WriteLog, from: usize) -> Vec<(u64, Vec<u8>)> {
        log.iter_from(from).map(|(t, k)| (t, k.to_vec())).collect()
    }

    #[test]
    fn writes_in_key_order_are_known_not_to_repeat() {
        let mut log = WriteLog::new();
        for k in [b"a", b"b", b"c"] {
            log.push(1, k);
        }
        log.push(2, b"a");
        assert!(log.distinct_from(0), "ascending keys, then another table");
        // Back to table 1: it may repeat one of its keys.
        log.push(1, b"d");
        assert!(!log.distinct_from(0) && !log.distinct_from(3) && log.distinct_from(4));
        log.push(1, b"d");
        assert!(!log.distinct_from(4) && log.distinct_from(5), "the same key again");
        log.push(1, b"e");
        assert!(log.distinct_from(5));
        // Undone writes leave an answer that errs on the safe side: a repeat is still
        // assumed at the cut, but writes after it are checked anew.
        log.truncate(3);
        assert!(!log.distinct_from(0) && log.distinct_from(3));
        log.push(1, b"d");
        assert!(log.distinct_from(3));
        log.push(1, b"b");
        assert!(!log.distinct_from(3), "a key below the one before it");
        // Many runs: a new run counts as a possible repeat, whatever its table.
        let mut log = WriteLog::new();
        for t in 0..=RUNS_SCANNED_MAX as u64 {
            log.push(t, b"k");
        }
        assert!(!log.distinct_from(0) && log.distinct_from(RUNS_SCANNED_MAX));
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
        assert_eq!(log.iter().nth(1), Some((1, &b"bb"[..])));
        assert_eq!(all_from(&log, 1), vec![(1, b"bb".to_vec()), (2, vec![]), (1, b"c".to_vec())]);
        assert_eq!(all_from(&log, 3), vec![(1, b"c".to_vec())]);
        assert!(all_from(&log, 4).is_empty() && all_from(&log, 9).is_empty());
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
