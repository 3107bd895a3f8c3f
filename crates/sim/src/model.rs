//! The model the simulator checks Quill against: what every table holds after each committed
//! transaction, kept as plain ordered maps, and what each open transaction has written.
//!
//! Every simulated table has the same three columns (`id INT PRIMARY KEY, v INT NOT NULL,
//! pad VARCHAR(40) NOT NULL`), so a row is `(v, pad)` by `id`. Committed history is a list
//! of transactions by their sequence number (the number of their GTID): the state after the
//! first `k` of them is what recovery must give back when it recovers `k` transactions.
//!
//! Invariant the workload keeps so the model can predict every statement: each session
//! reads and writes only its own ids (`id % sessions == session`), so the rows a session
//! sees are the committed ones overlaid with its own uncommitted writes, and no statement
//! ever waits for another session's lock.

use std::collections::BTreeMap;

/// A row's non-key columns.
pub type Row = (i64, String);
/// A table's rows by id.
pub type Rows = BTreeMap<i64, Row>;
/// Every table's rows by name.
pub type Tables = BTreeMap<String, Rows>;
/// Uncommitted writes: the row at (table, id) is now `Some(row)`, or deleted.
pub type Overlay = BTreeMap<(String, i64), Option<Row>>;
/// Row writes in the order they were made: the row at (table, id) becomes `Some(row)`, or
/// is deleted.
pub type Writes = Vec<((String, i64), Option<Row>)>;

/// What a committed transaction did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Row writes, in the order they were made (the last one of a row counts).
    Rows(Writes),
    /// A DDL statement: its text (as the binary log must carry it) and what it does.
    Ddl { sql: String, op: DdlOp },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DdlOp {
    Create(String),
    Drop(String),
    Truncate(String),
    Rename(String, String),
    /// An index added or dropped: no row changes.
    Index,
}

impl Effect {
    /// Applies the effect to `tables`.
    pub fn apply(&self, tables: &mut Tables) {
        match self {
            Effect::Rows(writes) => {
                for ((table, id), row) in writes {
                    let rows = tables.get_mut(table).unwrap_or_else(|| panic!("model: a write to {table}, which does not exist"));
                    match row {
                        Some(row) => rows.insert(*id, row.clone()),
                        None => rows.remove(id),
                    };
                }
            }
            Effect::Ddl { op, .. } => match op {
                DdlOp::Create(name) => {
                    tables.insert(name.clone(), Rows::new());
                }
                DdlOp::Drop(name) => {
                    tables.remove(name);
                }
                DdlOp::Truncate(name) => {
                    tables.insert(name.clone(), Rows::new());
                }
                DdlOp::Rename(from, to) => {
                    let rows = tables.remove(from).expect("model: renaming a table that exists");
                    tables.insert(to.clone(), rows);
                }
                DdlOp::Index => {}
            },
        }
    }

    /// The row writes of the effect that change `before` (the state it was applied to), last
    /// write of each row winning: two logs of the same transaction agree on this even when
    /// one of them leaves out a write that changed nothing.
    #[must_use]
    pub fn net_rows(&self, before: &Tables) -> BTreeMap<(String, i64), Option<Row>> {
        let Effect::Rows(writes) = self else { return BTreeMap::new() };
        let mut net: BTreeMap<(String, i64), Option<Row>> = BTreeMap::new();
        for (key, row) in writes {
            net.insert(key.clone(), row.clone());
        }
        net.retain(|(table, id), row| before.get(table).and_then(|rows| rows.get(id)) != row.as_ref());
        net
    }
}

/// The committed history and the state it leads to.
#[derive(Debug, Default, Clone)]
pub struct Model {
    /// Committed transactions in commit order, by sequence number.
    pub history: Vec<(u64, Effect)>,
    /// The state after every transaction in `history`.
    pub tables: Tables,
}

impl Model {
    /// Records a committed transaction numbered `seq`.
    ///
    /// # Panics
    /// If `seq` does not follow the last one: sequence numbers are handed out one by one.
    pub fn commit(&mut self, seq: u64, effect: Effect) {
        let expected = self.last_seq() + 1;
        assert_eq!(seq, expected, "the log numbered a commit {seq}, the model expected {expected}");
        effect.apply(&mut self.tables);
        self.history.push((seq, effect));
    }

    /// The sequence number of the newest committed transaction (0 for none).
    #[must_use]
    pub fn last_seq(&self) -> u64 {
        self.history.last().map_or(0, |(seq, _)| *seq)
    }

    /// The state after the transactions numbered up to `k`.
    #[must_use]
    pub fn state_at(&self, k: u64) -> Tables {
        let mut tables = Tables::new();
        for (seq, effect) in &self.history {
            if *seq > k {
                break;
            }
            effect.apply(&mut tables);
        }
        tables
    }

    /// Forgets the transactions after `k` (a crash lost them) and recomputes the state.
    pub fn truncate(&mut self, k: u64) {
        self.history.retain(|(seq, _)| *seq <= k);
        self.tables = self.state_at(k);
    }
}

/// One session's view: the committed rows overlaid with its uncommitted writes.
#[must_use]
pub fn visible<'a>(tables: &'a Tables, overlay: &'a Overlay, table: &str, id: i64) -> Option<&'a Row> {
    match overlay.get(&(table.to_owned(), id)) {
        Some(row) => row.as_ref(),
        None => tables.get(table).and_then(|rows| rows.get(&id)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn net_rows_leave_out_writes_that_change_nothing() {
        let mut before = Tables::new();
        before.insert("t".into(), Rows::from([(1, (1, "a".into()))]));
        let effect = Effect::Rows(vec![
            (("t".into(), 1), Some((1, "a".into()))),
            (("t".into(), 2), Some((2, "b".into()))),
            (("t".into(), 2), None),
            (("t".into(), 3), Some((3, "c".into()))),
        ]);
        let net = effect.net_rows(&before);
        assert_eq!(net, BTreeMap::from([(("t".into(), 3), Some((3, "c".into())))]));
    }

    #[test]
    fn state_at_replays_a_prefix() {
        let mut model = Model::default();
        model.commit(1, Effect::Ddl { sql: "CREATE TABLE t".into(), op: DdlOp::Create("t".into()) });
        model.commit(2, Effect::Rows(vec![(("t".into(), 1), Some((1, "a".into())))]));
        model.commit(3, Effect::Rows(vec![(("t".into(), 1), None)]));
        assert_eq!(model.state_at(2)["t"].len(), 1);
        assert!(model.tables["t"].is_empty());
        model.truncate(2);
        assert_eq!(model.last_seq(), 2);
        assert_eq!(model.tables["t"].len(), 1);
    }
}
