//! Access paths: which index a source reads and which keys (`choose_access`), and the
//! reading itself: the rows of a source for one outer row (`read_source`), or the primary keys
//! a locking read must lock first (`locking_candidates`). Keys are the storage layer's
//! order-preserving encodings of the SQL values (`key_value`).

use std::cmp::Ordering;
use std::collections::HashMap;
use std::ops::Bound;

use quill_sql_context::locking::{LockSpec, ScannedRange};
use quill_sql_types::error::Result;
use quill_sql_types::ops;
use quill_sql_types::types::{SqlType, WriteContext, coerce_to_column};
use quill_storage::table::SharedRow;
use quill_storage::{Row, Value};

use crate::expr::{CmpOp, Expr, RowCtx};

use super::{Access, Env, Source, SourceData, executor::ctx};

pub(super) fn known_before(e: &Expr, offset: usize) -> bool {
    !e.uses_columns_from(offset)
}

/// One side of a range: the bound's value and whether it is inclusive.
pub(super) type Bound1 = Option<(Expr, bool)>;

pub fn choose_access(table: &quill_sql_context::catalog::TableMeta, conds: &[Expr], offset: usize) -> Access {
    // column position within the table -> equality value
    let mut eq: HashMap<usize, Expr> = HashMap::new();
    let mut low: Option<(Expr, bool)> = None;
    let mut high: Option<(Expr, bool)> = None;
    // Range bounds on any column, for secondary indexes: column -> (low, high).
    let mut ranges: HashMap<usize, (Bound1, Bound1)> = HashMap::new();
    let mut in_list: Option<Vec<Expr>> = None;
    let first_pk = table.primary.first().copied();
    for c in conds {
        match c {
            Expr::Cmp(op, a, b, _) => {
                let (col, val, op) = match (a.as_ref(), b.as_ref()) {
                    (Expr::Column(i), v) if *i >= offset && *i < offset + table.columns.len() && known_before(v, offset) => (*i - offset, v, *op),
                    (v, Expr::Column(i)) if *i >= offset && *i < offset + table.columns.len() && known_before(v, offset) => (*i - offset, v, op.flip()),
                    _ => continue,
                };
                match op {
                    CmpOp::Gt | CmpOp::Ge => ranges.entry(col).or_default().0 = Some((val.clone(), op == CmpOp::Ge)),
                    CmpOp::Lt | CmpOp::Le => ranges.entry(col).or_default().1 = Some((val.clone(), op == CmpOp::Le)),
                    _ => {}
                }
                match op {
                    CmpOp::Eq => {
                        eq.insert(col, val.clone());
                    }
                    // On a column that is never NULL, `<=>` finds what `=` finds (the
                    // replica's applier finds each row by its key so).
                    CmpOp::NullSafeEq if !table.columns[col].nullable => {
                        eq.entry(col).or_insert_with(|| val.clone());
                    }
                    CmpOp::Gt | CmpOp::Ge if Some(col) == first_pk => low = Some((val.clone(), op == CmpOp::Ge)),
                    CmpOp::Lt | CmpOp::Le if Some(col) == first_pk => high = Some((val.clone(), op == CmpOp::Le)),
                    _ => {}
                }
            }
            Expr::Between { expr, low: lo, high: hi, negated: false, .. } => {
                if let Expr::Column(i) = expr.as_ref()
                    && *i >= offset
                    && *i < offset + table.columns.len()
                    && known_before(lo, offset)
                    && known_before(hi, offset)
                {
                    ranges.insert(*i - offset, (Some(((**lo).clone(), true)), Some(((**hi).clone(), true))));
                    if Some(*i - offset) == first_pk {
                        low = Some(((**lo).clone(), true));
                        high = Some(((**hi).clone(), true));
                    }
                }
            }
            Expr::InList { expr, list, negated: false, .. } => {
                if let Expr::Column(i) = expr.as_ref()
                    && *i >= offset
                    && Some(*i - offset) == first_pk
                    && table.primary.len() == 1
                    && list.iter().all(|v| known_before(v, offset))
                {
                    in_list = Some(list.clone());
                }
            }
            _ => {}
        }
    }
    if !table.primary.is_empty() && table.primary.iter().all(|c| eq.contains_key(c)) {
        return Access::PkPoint(table.primary.iter().map(|c| eq[c].clone()).collect());
    }
    if let Some(list) = in_list {
        return Access::PkIn(list);
    }
    if table.primary.len() == 1 && (low.is_some() || high.is_some()) {
        return Access::PkRange { low, high };
    }
    // Best secondary index: longest equality prefix.
    let mut best: Option<(usize, Vec<Expr>)> = None;
    for (n, ix) in table.indexes.iter().enumerate() {
        let prefix: Vec<Expr> = ix.columns.iter().map_while(|c| eq.get(c).cloned()).collect();
        if !prefix.is_empty() && best.as_ref().is_none_or(|(_, b)| prefix.len() > b.len()) {
            best = Some((n, prefix));
        }
    }
    if let Some((index, values)) = best {
        return Access::IndexEq { index, values };
    }
    for (n, ix) in table.indexes.iter().enumerate() {
        if let Some((low, high)) = ix.columns.first().and_then(|c| ranges.get(c)) {
            return Access::IndexRange { index: n, low: low.clone(), high: high.clone() };
        }
    }
    Access::Full
}

/// Coerce a lookup value to the key column's type; `None` if that is not exact
/// (then the access path falls back to a scan of the whole table).
/// `v` as a key value of a column of type `ty`, when looking it up in the column's index
/// finds exactly the rows the comparison does; `None` sends the access path back to a scan.
/// A string column compared with a number compares as numbers ('5abc' = 5), so only a
/// string looks up a string index.
pub(crate) fn key_value(v: &Value, ty: &SqlType) -> Option<Value> {
    if v.is_null() || (ty.is_string() && !matches!(v, Value::Str(_))) {
        return None;
    }
    let mut warnings = Vec::new();
    let mut cx = WriteContext { column: "", row: 0, strict: true, warnings: &mut warnings };
    let c = coerce_to_column(v.clone(), ty, &mut cx).ok()?;
    (ops::compare(&c, v, ty.collation()) == Some(Ordering::Equal)).then_some(c)
}

/// The rows of a source its access path finds, read through `env.view`, with their
/// primary keys (empty for derived tables).
/// The rows a non-locking read of source `s` finds, for the outer row `row`. A scan of the
/// whole table is a cursor over it, so a large table is never copied; a range or a key
/// list is read first.
pub(crate) fn read_source<'a>(s: &Source, row: &Row, env: &Env<'a>, parent: Option<&RowCtx<'_>>) -> Result<Box<dyn Iterator<Item = SharedRow> + 'a>> {
    let (db, name) = match &s.data {
        SourceData::Rows(cell, _) => return Ok(Box::new(cell.borrow().iter().flatten().map(|r| SharedRow::new(r.clone())).collect::<Vec<_>>().into_iter())),
        SourceData::Work(rows) => {
            let rows = rows.lock().expect("a work table is not poisoned");
            return Ok(Box::new(rows.iter().map(|r| SharedRow::new(r.clone())).collect::<Vec<_>>().into_iter()));
        }
        SourceData::Table { db, name, .. } => (db, name),
    };
    let catalog: &'a quill_sql_context::catalog::Catalog = env.catalog;
    let t = catalog.table(db, name)?.data.as_ref();
    let found = access_keys(s, row, env, parent, false)?;
    let view = env.view;
    Ok(match (found.cursor, found.keys) {
        (Some(KeyRange::Primary(lo, hi)), _) => Box::new(t.scan(as_ref_bound(&lo), as_ref_bound(&hi), view, s.order).map(|(_, r)| r)),
        (Some(KeyRange::Index(index, lo, hi)), _) => Box::new(t.index_scan(index, as_ref_bound(&lo), as_ref_bound(&hi), view, s.order).map(|(_, r)| r)),
        (None, Some(keys)) => Box::new(keys.iter().filter_map(|k| t.get(k, &env.view)).collect::<Vec<_>>().into_iter()),
        (None, None) => Box::new(t.scan(Bound::Unbounded, Bound::Unbounded, view, s.order).map(|(_, r)| r)),
    })
}

/// The primary keys a locking scan of a table source must lock, in scan order: every row
/// in the access path's range whatever its versions (rows others are inserting or
/// deleting included). Takes the gap locks of the scanned ranges first.
///
/// # Errors
/// Evaluation errors of the access path's values; lock errors of a next-key record.
pub fn locking_candidates(s: &Source, row: &Row, env: &Env<'_>, parent: Option<&RowCtx<'_>>, spec: &LockSpec) -> Result<Vec<Vec<u8>>> {
    let SourceData::Table { db, name, id } = &s.data else { return Ok(Vec::new()) };
    let t = env.catalog.table(db, name)?.data.as_ref();
    let AccessKeys { keys, gaps, .. } = access_keys(s, row, env, parent, true)?;
    let locks = &env.info.engine.txns.locks;
    for g in &gaps {
        spec.lock_gap(locks, *id, name, t, g)?;
    }
    Ok(keys.unwrap_or_else(|| t.keys_in_range(Bound::Unbounded, Bound::Unbounded)))
}

/// What an access path finds: primary keys (`None`: the whole table), and for a locking
/// scan the ranges it read.
pub(super) struct AccessKeys {
    keys: Option<Vec<Vec<u8>>>,
    gaps: Vec<ScannedRange>,
    /// For a plain read of a range: the range to read as a cursor (`keys` is then `None`).
    cursor: Option<KeyRange>,
}

/// A range of a table's primary key or of one of its secondary indexes (encoded bounds).
pub(super) enum KeyRange {
    Primary(Bound<Vec<u8>>, Bound<Vec<u8>>),
    Index(usize, Bound<Vec<u8>>, Bound<Vec<u8>>),
}

/// The primary keys a source's access path finds (`None`: the whole table), and, for a
/// locking scan (`all_versions`), the ranges it read. A locking scan lists every row in
/// range whatever its versions; a plain one only rows `env.view` sees.
pub(super) fn access_keys(s: &Source, row: &Row, env: &Env<'_>, parent: Option<&RowCtx<'_>>, all_versions: bool) -> Result<AccessKeys> {
    let SourceData::Table { db, name, .. } = &s.data else { return Ok(AccessKeys { keys: Some(Vec::new()), gaps: Vec::new(), cursor: None }) };
    let meta = env.catalog.table(db, name)?;
    let t = meta.data.as_ref();
    let cx = ctx(row, &[], parent);
    let view = env.view;
    let mut gaps = Vec::new();
    let mut pks: Option<Vec<Vec<u8>>> = None;
    let mut cursor = None;
    match &s.access {
        // A locking read of a hash-joined table scans it, locking rows as it goes.
        Access::Full | Access::Hash(_) => {
            env.info.interrupt.note_full_scan();
            if all_versions {
                gaps.push(ScannedRange { index: 0, lo: Bound::Unbounded, hi: Bound::Unbounded, next_record: false });
            }
        }
        Access::PkPoint(exprs) => {
            let mut vals = Vec::new();
            for (e, &col) in exprs.iter().zip(&meta.primary) {
                match key_value(&e.eval(env, &cx)?, &s.types[col]) {
                    Some(v) => vals.push(v),
                    None => {
                        vals.clear();
                        break;
                    }
                }
            }
            if vals.len() == exprs.len() {
                let k = t.encode_primary(&vals);
                if all_versions && !t.has_chain(&k) {
                    gaps.push(ScannedRange::point(0, k.clone()));
                }
                pks = Some(vec![k]);
            }
        }
        Access::PkIn(list) => {
            let col = meta.primary[0];
            let mut keys = Vec::new();
            let mut exact = true;
            for e in list {
                let v = e.eval(env, &cx)?;
                if v.is_null() {
                    continue;
                }
                match key_value(&v, &s.types[col]) {
                    Some(k) => keys.push(t.encode_primary(&[k])),
                    None => exact = false,
                }
            }
            if exact {
                keys.sort();
                keys.dedup();
                if all_versions {
                    gaps.extend(keys.iter().filter(|k| !t.has_chain(k)).map(|k| ScannedRange::point(0, k.clone())));
                }
                pks = Some(keys);
            }
        }
        Access::PkRange { low, high } => {
            let col = meta.primary[0];
            let bound = |b: &Option<(Expr, bool)>| -> Result<Option<Bound<Vec<u8>>>> {
                Ok(match b {
                    None => Some(Bound::Unbounded),
                    Some((e, incl)) => match key_value(&e.eval(env, &cx)?, &s.types[col]) {
                        Some(k) => {
                            let enc = t.encode_primary(&[k]);
                            Some(if *incl { Bound::Included(enc) } else { Bound::Excluded(enc) })
                        }
                        None => None,
                    },
                })
            };
            if let (Some(lo), Some(hi)) = (bound(low)?, bound(high)?) {
                let empty = match (&lo, &hi) {
                    (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) => {
                        a > b || (a == b && !(matches!(lo, Bound::Included(_)) && matches!(hi, Bound::Included(_))))
                    }
                    _ => false,
                };
                if empty {
                    pks = Some(Vec::new());
                } else if all_versions {
                    pks = Some(t.keys_in_range(as_ref_bound(&lo), as_ref_bound(&hi)));
                    gaps.push(ScannedRange { index: 0, lo, hi, next_record: true });
                } else {
                    cursor = Some(KeyRange::Primary(lo, hi));
                }
            }
        }
        Access::IndexRange { index, low, high } => {
            let col = meta.indexes[*index].columns[0];
            let bound = |b: &Option<(Expr, bool)>| -> Result<Option<Bound<Vec<u8>>>> {
                Ok(match b {
                    None => Some(Bound::Unbounded),
                    Some((e, incl)) => key_value(&e.eval(env, &cx)?, &s.types[col]).map(|k| {
                        let enc = t.encode_index(*index, &[k]);
                        if *incl { Bound::Included(enc) } else { Bound::Excluded(enc) }
                    }),
                })
            };
            if let (Some(lo), Some(hi)) = (bound(low)?, bound(high)?) {
                if all_versions {
                    pks = Some(t.index_keys_in_range(*index, as_ref_bound(&lo), as_ref_bound(&hi)));
                    gaps.push(ScannedRange { index: index_number(*index), lo, hi, next_record: true });
                } else {
                    cursor = Some(KeyRange::Index(*index, lo, hi));
                }
            }
        }
        Access::IndexEq { index, values } => {
            let cols = &meta.indexes[*index].columns;
            let mut vals = Vec::new();
            let mut exact = true;
            for (e, &col) in values.iter().zip(cols) {
                match key_value(&e.eval(env, &cx)?, &s.types[col]) {
                    Some(v) => vals.push(v),
                    None => exact = false,
                }
            }
            if exact {
                let key = t.encode_index(*index, &vals);
                if all_versions {
                    let keys = t.index_keys_in_range(*index, Bound::Included(&key), Bound::Included(&key));
                    // A unique index looked up by its whole key, finding a row that has that
                    // key now, locks the record only. (An entry may come from an old version
                    // kept for a read view: that row's lock would not keep the key out.)
                    let has_key =
                        |pk: &Vec<u8>| t.get(pk, &view).is_some_and(|r| t.encode_index(*index, &cols.iter().map(|&c| r[c].clone()).collect::<Vec<_>>()) == key);
                    let unique_hit = meta.indexes[*index].unique && vals.len() == cols.len() && keys.iter().any(has_key);
                    if !unique_hit {
                        gaps.push(ScannedRange { index: index_number(*index), lo: Bound::Included(key.clone()), hi: Bound::Included(key), next_record: true });
                    }
                    pks = Some(keys);
                } else {
                    cursor = Some(KeyRange::Index(*index, Bound::Included(key.clone()), Bound::Included(key)));
                }
            }
        }
    }
    if !all_versions
        && pks.is_none()
        && cursor.is_none()
        && let Access::IndexEq { index, .. } | Access::IndexRange { index, .. } = &s.access
    {
        // A value that is not exact for the key reads the whole index, still in its order
        // (ORDER BY may rely on it: `order_follows_scan`).
        cursor = Some(KeyRange::Index(*index, Bound::Unbounded, Bound::Unbounded));
    }
    if all_versions && pks.is_none() && !matches!(s.access, Access::Full | Access::Hash(_)) {
        // A value that is not exact for the key falls back to a scan of the whole table.
        gaps.push(ScannedRange { index: 0, lo: Bound::Unbounded, hi: Bound::Unbounded, next_record: false });
    }
    Ok(AccessKeys { keys: pks, gaps, cursor })
}

/// Gap locks number the primary key 0 and secondary index `i` as `i + 1`.
pub(super) fn index_number(index: usize) -> u32 {
    u32::try_from(index + 1).expect("index count fits u32")
}

pub(super) fn as_ref_bound(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(v) => Bound::Included(v.as_slice()),
        Bound::Excluded(v) => Bound::Excluded(v.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}
