//! Foreign keys enforced on each row a statement writes, as InnoDB does: at once, not at
//! commit, row by row.
//!
//! - A child row written or changed in its key columns must find its parent: the parent row
//!   is read current and locked shared (with the gaps of the lookup at REPEATABLE READ), so
//!   it cannot go away before the child commits. None found: 1452. The check runs after the
//!   row is written, so a row may refer to itself.
//! - A parent row deleted, or changed in the columns a key refers to, looks for child rows
//!   (current, locked): `RESTRICT` and `NO ACTION` refuse with 1451; `CASCADE` deletes them
//!   or carries the new key into them; `SET NULL` empties their key columns. What a cascade
//!   writes is checked the same way, down to [`CASCADE_DEPTH_MAX`] levels.
//! - `foreign_key_checks = 0` skips all of it.
//!
//! Every row a cascade writes goes into the statement's undo list, so a failing statement
//! (or a lock wait, which re-runs it) takes the cascade back with it. Where it sits: called
//! by `dml`'s INSERT, UPDATE, DELETE and REPLACE paths; definitions in
//! `crate::foreign_keys`.

use quill_storage::{ReadView, Row, Value};
use quill_txn::LockMode;

use super::{DmlCx, env, lock_for_update, matching_rows, write_error};
use crate::catalog::{Catalog, TableMeta};
use crate::error::{Result, SqlError, codes};
use crate::expr::{CmpOp, Expr};
use crate::foreign_keys::{self, Action, ForeignKey};
use crate::locking;

/// How many levels of cascading a row change may set off, as InnoDB's
/// `FK_MAX_CASCADE_DEL`: deeper is error 3008.
pub const CASCADE_DEPTH_MAX: usize = 15;

/// Whether rows inserted into `t` have parents to find (INSERT and LOAD DATA without
/// REPLACE, which delete nothing, need no more).
#[must_use]
pub fn checks_inserts(cx: &DmlCx<'_>, t: &TableMeta) -> bool {
    cx.info.foreign_key_checks() && !t.foreign_keys.is_empty()
}

/// The rows a cascade is changing, outermost first: `(table id, primary key)`. A row
/// already in it is not cascaded into again (a cycle of ON DELETE CASCADE ends), and an
/// ON UPDATE cascade that comes back to a table in it refuses, as InnoDB's does.
pub type Chain = Vec<(u64, Vec<u8>)>;

/// Checks that `row`, just written to `t` (changed from `old`, for an update), has a parent
/// for each of `t`'s keys whose columns are all non-NULL and changed.
///
/// # Errors
/// 1452, and lock waits on the parent row.
pub fn check_parents(catalog: &Catalog, cx: &DmlCx<'_>, t: &TableMeta, row: &Row, old: Option<&Row>) -> Result<()> {
    if t.foreign_keys.is_empty() || !cx.info.foreign_key_checks() {
        return Ok(());
    }
    for fk in &t.foreign_keys {
        let Some(key) = foreign_keys::key_of(row, &fk.columns) else { continue };
        if old.is_some_and(|o| fk.columns.iter().all(|&c| same(&o[c], &row[c]))) {
            continue;
        }
        let Ok(parent) = catalog.table(&fk.parent_db, &fk.parent_table) else { return Err(foreign_keys::no_parent(t, fk)) };
        let Some(positions) = fk.parent_positions(parent) else { return Err(foreign_keys::no_parent(t, fk)) };
        if rows_with_key(catalog, cx, parent, &positions, &key, LockMode::Shared)?.is_empty() {
            return Err(foreign_keys::no_parent(t, fk));
        }
    }
    Ok(())
}

/// Applies every key that refers to `t` to the change of its row at `pk` from `old` to
/// `new` (`None`: deleted): refuses it, or cascades into the children. A row that refers
/// to itself refuses its own change under RESTRICT, as InnoDB's does, and is not cascaded
/// into again.
///
/// # Errors
/// 1451, 3008 (too deep), the errors of the cascaded writes, and lock waits.
pub fn on_parent_change(catalog: &Catalog, cx: &mut DmlCx<'_>, t: &TableMeta, pk: &[u8], old: &Row, new: Option<&Row>, chain: &mut Chain) -> Result<()> {
    if !cx.info.foreign_key_checks() || !catalog.has_foreign_keys() {
        return Ok(());
    }
    chain.push((t.id, pk.to_vec()));
    let result = cascade_all(catalog, cx, t, old, new, chain);
    chain.pop();
    result
}

fn cascade_all(catalog: &Catalog, cx: &mut DmlCx<'_>, t: &TableMeta, old: &Row, new: Option<&Row>, chain: &mut Chain) -> Result<()> {
    for (child, fk) in foreign_keys::children_of(catalog, &t.db, &t.name) {
        let Some(positions) = fk.parent_positions(t) else { continue };
        let Some(key) = foreign_keys::key_of(old, &positions) else { continue };
        if new.is_some_and(|n| positions.iter().all(|&p| same(&old[p], &n[p]))) {
            continue;
        }
        let action = if new.is_some() { fk.on_update } else { fk.on_delete };
        let mode = if matches!(action, Action::Cascade | Action::SetNull) { LockMode::Exclusive } else { LockMode::Shared };
        let rows = rows_with_key(catalog, cx, child, &fk.columns, &key, mode)?;
        if rows.is_empty() {
            continue;
        }
        if matches!(action, Action::Restrict | Action::NoAction) {
            return Err(foreign_keys::has_children(child, fk));
        }
        // An update that would cascade back into a table the chain is updating acts as
        // RESTRICT (InnoDB's rule), which also keeps a self-reference from pointing nowhere.
        if new.is_some() && chain.iter().any(|(id, _)| *id == child.id) {
            return Err(foreign_keys::has_children(child, fk));
        }
        if chain.len() > CASCADE_DEPTH_MAX {
            return Err(SqlError::new(codes::ER_FK_DEPTH_EXCEEDED, format!("Foreign key cascade delete/update exceeds max depth of {CASCADE_DEPTH_MAX}.")));
        }
        for (child_pk, _) in rows {
            if chain.iter().any(|(id, k)| *id == child.id && *k == child_pk) {
                continue;
            }
            cascade(catalog, cx, child, fk, &child_pk, new.map(|n| positions.iter().map(|&p| n[p].clone()).collect()), action, chain)?;
        }
    }
    Ok(())
}

/// Deletes (`new_key` `None` and CASCADE) or rewrites one child row of `fk`; the rewritten
/// row is checked as any written row is (its type, its other keys).
#[allow(clippy::too_many_arguments)]
fn cascade(
    catalog: &Catalog,
    cx: &mut DmlCx<'_>,
    child: &TableMeta,
    fk: &ForeignKey,
    pk: &[u8],
    new_key: Option<Vec<Value>>,
    action: Action,
    chain: &mut Chain,
) -> Result<()> {
    let data = child.data.as_ref();
    // An earlier cascade of this statement may have deleted or changed the row.
    let Some(current) = data.get(pk, &ReadView::current(cx.txn)).map(|r| Row::clone(&r)) else { return Ok(()) };
    if !fk.columns.iter().all(|&c| !current[c].is_null()) {
        return Ok(());
    }
    if action == Action::Cascade && new_key.is_none() {
        on_parent_change(catalog, cx, child, pk, &current, None, chain)?;
        locking::lock_for_write(&cx.info.engine.txns.locks, cx.txn, child.id, data, pk)?;
        data.delete_row(cx.txn, pk).map_err(|e| write_error(e, child, &current, cx))?;
        cx.undo.push(child.id, pk);
        return Ok(());
    }
    let mut new = current.clone();
    for (i, &c) in fk.columns.iter().enumerate() {
        let value = match (&new_key, action) {
            (Some(key), Action::Cascade) => key[i].clone(),
            _ => Value::Null,
        };
        let column = &child.columns[c];
        let mut wcx = crate::types::WriteContext { column: &column.name, row: 1, strict: true, warnings: cx.warnings };
        // A value the child's column cannot hold refuses the parent's change (InnoDB: 1451).
        new[c] = crate::types::coerce_to_column(value, &column.ty, &mut wcx).map_err(|_| foreign_keys::has_children(child, fk))?;
    }
    let latch = data.write_latch();
    lock_for_update(cx, child, data, pk, &current, &new)?;
    let new_pk = data.update_row(&latch, cx.txn, pk, new.clone()).map_err(|e| write_error(e, child, &new, cx))?;
    drop(latch);
    if new_pk != pk {
        cx.undo.push(child.id, &new_pk);
    }
    cx.undo.push(child.id, pk);
    // Its parents (the one just re-keyed is written already), then its own children.
    check_parents(catalog, cx, child, &new, Some(&current))?;
    on_parent_change(catalog, cx, child, pk, &current, Some(&new), chain)
}

/// Rows of `t` whose `columns` equal `key` under their collations, read current and locked
/// in `mode` by the statement's rules (gaps at REPEATABLE READ).
fn rows_with_key(catalog: &Catalog, cx: &DmlCx<'_>, t: &TableMeta, columns: &[usize], key: &[Value], mode: LockMode) -> Result<Vec<(Vec<u8>, Row)>> {
    let filter = columns
        .iter()
        .zip(key)
        .map(|(&c, v)| Expr::Cmp(CmpOp::Eq, Box::new(Expr::Column(c)), Box::new(Expr::Const(v.clone())), t.columns[c].ty.collation()))
        .reduce(|a, b| Expr::And(Box::new(a), Box::new(b)))
        .expect("a key has a column");
    // Always a locking read, as InnoDB's checks are: at READ COMMITTED too, a parent another
    // transaction inserted and has not committed is waited for, not passed over.
    let spec = locking::LockSpec { mode, semi_consistent: false, ..cx.lock };
    let e = env(catalog, cx);
    matching_rows(&e, &spec, t, Some(&filter))
}

/// Whether two values of one column are the same key value (byte for byte: a change of
/// case is a change InnoDB cascades).
fn same(a: &Value, b: &Value) -> bool {
    a == b
}

/// Checks that every row of `child` has a parent for `fk`, reading committed rows: what
/// `ALTER TABLE ... ADD FOREIGN KEY` asks of a table that already has rows.
///
/// # Errors
/// 1452 for the first row without one.
pub fn check_existing_rows(catalog: &Catalog, child: &TableMeta, fk: &ForeignKey) -> Result<()> {
    let Ok(parent) = catalog.table(&fk.parent_db, &fk.parent_table) else { return Ok(()) };
    let Some(positions) = fk.parent_positions(parent) else { return Err(foreign_keys::no_parent(child, fk)) };
    let view = ReadView::current(0);
    let collations: Vec<_> = positions.iter().map(|&c| parent.columns[c].ty.collation()).collect();
    let compare = |a: &[Value], b: &[Value]| {
        a.iter().zip(b).zip(&collations).map(|((x, y), &c)| crate::ops::sort_cmp(x, y, c)).find(|o| o.is_ne()).unwrap_or(std::cmp::Ordering::Equal)
    };
    let mut parents: Vec<Vec<Value>> = parent.data.snapshot_rows(view).iter().filter_map(|p| foreign_keys::key_of(p, &positions)).collect();
    parents.sort_by(|a, b| compare(a, b));
    for (_, row) in child.data.scan(std::ops::Bound::Unbounded, std::ops::Bound::Unbounded, view, quill_storage::ScanOrder::Ascending) {
        let Some(key) = foreign_keys::key_of(&row, &fk.columns) else { continue };
        if parents.binary_search_by(|p| compare(p, &key)).is_err() {
            return Err(foreign_keys::no_parent(child, fk));
        }
    }
    Ok(())
}
