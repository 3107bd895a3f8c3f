//! Hash join: the access path of an inner table of a join that has no usable index for
//! its equality with the tables before it (`a JOIN b ON a.v = b.v`, no index on `b.v`).
//!
//! The planner ([`choose`]) picks it for a table source after the first whose access
//! path would otherwise be a full scan, when the join condition (or, in an inner chain,
//! the WHERE clause) has equalities `b.col = a.col` between a column of this table and a
//! column of an earlier one of the same kind: both integers, both strings of one
//! collation, or the same type. The first time a statement reaches the source, the table
//! is read once through the statement's view into a [`HashTable`] keyed by the encoded
//! key columns (rows with a NULL key never match and are left out); each row of the
//! tables before then probes it with its own values, coerced to the key columns' types.
//! The join condition is still evaluated on every candidate, so the hash only narrows
//! what a nested loop would have examined.
//!
//! Bounds: a table is built into a hash table only if it has at most
//! [`HASH_JOIN_BUILD_ROWS_MAX`] rows (otherwise the nested loop runs); the table holds
//! shared row versions (`Arc`s), not copies. Locking reads never use it: they lock
//! rows as a scan reaches them.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ops::Bound;

use quill_storage::key::encode_key;
use quill_storage::table::SharedRow;
use quill_storage::{Collation, Row, ScanOrder, Value};

use crate::expr::{CmpOp, Expr, RowCtx};
use crate::query::{Env, Source, SourceData};
use quill_sql_context::tmp_memory;
use quill_sql_types::error::Result;
use quill_sql_types::types::SqlType;

/// What one built row costs beyond its values and key: its shared handle and its place in
/// the map (estimated, for `tmp_memory`).
const BUILD_ENTRY_OVERHEAD_BYTES: usize = 48;

/// Most rows a table may have to be built into a hash table.
pub const HASH_JOIN_BUILD_ROWS_MAX: u64 = 4_000_000;

/// One equality of a hash join: a column of the built table (its position in the table)
/// and the expression over earlier tables that probes it.
#[derive(Debug, Clone)]
pub struct HashKey {
    pub column: usize,
    pub probe: Expr,
}

/// The built side of a hash join, filled the first time the statement reaches the source.
#[derive(Debug, Default)]
pub struct HashTable {
    rows: RefCell<Option<HashMap<Vec<u8>, Vec<SharedRow>>>>,
}

/// The equalities a hash join of source `at` (0-based, after the first) can use, given the
/// conjuncts of its condition; `None` when there are none.
#[must_use]
pub fn choose(sources: &[Source], at: usize, conds: &[Expr], table_rows: u64) -> Option<Vec<HashKey>> {
    let source = &sources[at];
    if at == 0 || table_rows > HASH_JOIN_BUILD_ROWS_MAX || !matches!(source.data, SourceData::Table { .. }) {
        return None;
    }
    let own = source.offset..source.offset + source.width;
    let type_of = |column: usize| sources.iter().find(|s| (s.offset..s.offset + s.width).contains(&column)).map(|s| &s.types[column - s.offset]);
    let mut keys: Vec<HashKey> = Vec::new();
    for c in conds {
        let Expr::Cmp(CmpOp::Eq, a, b, collation) = c else { continue };
        let (mine, other) = match (a.as_ref(), b.as_ref()) {
            (Expr::Column(m), Expr::Column(o)) if own.contains(m) && *o < source.offset => (*m, *o),
            (Expr::Column(o), Expr::Column(m)) if own.contains(m) && *o < source.offset => (*m, *o),
            _ => continue,
        };
        let (Some(mine_ty), Some(other_ty)) = (type_of(mine), type_of(other)) else { continue };
        if comparable_by_key(mine_ty, other_ty, *collation) && !keys.iter().any(|k| k.column == mine - source.offset) {
            keys.push(HashKey { column: mine - source.offset, probe: Expr::Column(other) });
        }
    }
    (!keys.is_empty()).then_some(keys)
}

/// Whether equal keys (the probe coerced to the built column's type, then encoded) are
/// exactly what `=` finds between columns of these types.
fn comparable_by_key(built: &SqlType, probe: &SqlType, collation: Collation) -> bool {
    match (built, probe) {
        (SqlType::Int { .. }, SqlType::Int { .. }) => true,
        (b, p) if b.is_string() && p.is_string() => b.collation() == collation && p.collation() == collation,
        (b, p) => b == p && !b.is_string(),
    }
}

/// The key of `row` for `keys` (`None` when a key column is NULL: it matches nothing).
fn row_key(keys: &[HashKey], row: &Row, types: &[SqlType]) -> Option<Vec<u8>> {
    if keys.iter().any(|k| row[k.column].is_null()) {
        return None;
    }
    Some(encode_key(keys.iter().map(|k| (&row[k.column], types[k.column].collation()))))
}

/// The rows of `source` (a hash-joined table) whose keys equal the probe values of the
/// row being joined (`cx`), building the hash table on first use.
///
/// # Errors
/// Evaluation errors of the probe expressions; an unknown table; KILL or
/// `max_execution_time` while building.
pub fn probe(source: &Source, keys: &[HashKey], table: &HashTable, env: &Env<'_>, cx: &RowCtx<'_>) -> Result<Vec<SharedRow>> {
    if table.rows.borrow().is_none() {
        let built = build(source, keys, env)?;
        *table.rows.borrow_mut() = Some(built);
    }
    let mut probe_values: Vec<Value> = Vec::with_capacity(keys.len());
    for k in keys {
        let v = k.probe.eval(env, cx)?;
        match crate::query::key_value(&v, &source.types[k.column]) {
            Some(v) => probe_values.push(v),
            // NULL, or a value no row of the column can equal (out of its range).
            None => return Ok(Vec::new()),
        }
    }
    let key = encode_key(probe_values.iter().zip(keys).map(|(v, k)| (v, source.types[k.column].collation())));
    let rows = table.rows.borrow();
    Ok(rows.as_ref().and_then(|m| m.get(&key)).cloned().unwrap_or_default())
}

fn build(source: &Source, keys: &[HashKey], env: &Env<'_>) -> Result<HashMap<Vec<u8>, Vec<SharedRow>>> {
    let SourceData::Table { db, name, .. } = &source.data else { unreachable!("hash joins are chosen for tables only") };
    let meta = env.catalog.table(db, name)?;
    let mut map: HashMap<Vec<u8>, Vec<SharedRow>> = HashMap::new();
    for (_, row) in meta.data.scan(Bound::Unbounded, Bound::Unbounded, env.view, ScanOrder::Ascending) {
        env.info.interrupt.check()?;
        if let Some(key) = row_key(keys, &row, &source.types) {
            env.info.tmp_memory.hold_for_statement(tmp_memory::row_bytes(&row) + key.len() + BUILD_ENTRY_OVERHEAD_BYTES)?;
            map.entry(key).or_default().push(row);
        }
    }
    Ok(map)
}
