//! The executor: runs a [`SelectPlan`] block by block (`run_block`): nested-loop and hash
//! joins over the sources (`JoinRun`, with parenthesized joins as groups of levels), filters, grouping and aggregates, window functions,
//! DISTINCT, ORDER BY (a bounded top-N when there is a LIMIT, `TOP_ROWS_MIN`), LIMIT, and
//! UNION / INTERSECT / EXCEPT; recursive CTEs iterate to a fixed point bounded by
//! `cte_max_recursion_depth`. Every row read is checked against the statement's interrupt.

use std::cell::Cell;
use std::cmp::Ordering;
use std::collections::HashMap;
use std::ops::Bound;

use quill_sql_context::locking::LockSpec;
use quill_sql_context::tmp_memory;
use quill_sql_types::error::{Result, SqlError, codes};
use quill_sql_types::ops;
use quill_storage::table::SharedRow;
use quill_storage::{Collation, Row, ScanOrder, Value};

use crate::aggregate::Accumulator;
use crate::cte::WorkTable;
use crate::expr::{Expr, RowCtx};

use super::{
    Access, Block, Env, JoinKind, PlanKind, ResultSet, SelectPlan, SetOp, Source, SourceData,
    access::{locking_candidates, read_source},
    planner::{GROUP_OVERHEAD_BYTES, conform_rows},
};

/// Rows a sort with a LIMIT gathers, at least, before it lets go of those past the limit.
pub(super) const TOP_ROWS_MIN: usize = 1024;

/// Run a planned query.
///
/// # Errors
/// Evaluation errors; lock errors in a locking read.
pub fn run_select(plan: &SelectPlan, env: &Env<'_>, parent: Option<&RowCtx<'_>>) -> Result<ResultSet> {
    let mut rows = Vec::new();
    let mut held = env.info.tmp_memory.hold();
    run_select_into(plan, env, parent, &mut |row| {
        held.add_row(&row)?;
        rows.push(row);
        Ok(())
    })?;
    Ok(ResultSet { columns: plan.columns.clone(), rows })
}

/// Runs a SELECT, handing each result row to `emit` in order. A block without grouping,
/// DISTINCT or a sort (other than one the scan's order already gives) hands rows over as the
/// join produces them, so its memory does not grow with its result; others build their
/// result first. An error from `emit` stops the statement.
///
/// # Errors
/// The statement's error, or `emit`'s.
pub fn run_select_into(plan: &SelectPlan, env: &Env<'_>, parent: Option<&RowCtx<'_>>, emit: &mut dyn FnMut(Row) -> Result<()>) -> Result<()> {
    match &plan.kind {
        PlanKind::Block(b) => run_block(b, env, parent, emit),
        PlanKind::Union { op, left, right, all, order_by, limit, offset } => {
            let mut held = env.info.tmp_memory.hold();
            let mut rows = run_select(left, env, parent)?.rows;
            held.add_rows(&rows)?;
            let mut right = run_select(right, env, parent)?.rows;
            held.add_rows(&right)?;
            conform_rows(&mut rows, &plan.columns);
            conform_rows(&mut right, &plan.columns);
            rows = combine(*op, *all, rows, right);
            if !order_by.is_empty() {
                rows.sort_by(|a, b| {
                    for (p, asc) in order_by {
                        let o = ops::sort_cmp(&a[*p], &b[*p], Collation::default());
                        if o != Ordering::Equal {
                            return if *asc { o } else { o.reverse() };
                        }
                    }
                    Ordering::Equal
                });
            }
            apply_limit(rows, limit.as_ref(), offset.as_ref(), env)?.into_iter().try_for_each(emit)
        }
        PlanKind::Recursive { seeds, steps, distinct, work } => {
            let mut rows = run_recursive(seeds, steps, *distinct, work, env, parent)?;
            conform_rows(&mut rows, &plan.columns);
            rows.into_iter().try_for_each(emit)
        }
    }
}

/// Runs a recursive CTE (`cte` module doc): every row it finds, seeds first, round by round.
pub(super) fn run_recursive(
    seeds: &[SelectPlan],
    steps: &[SelectPlan],
    distinct: bool,
    work: &WorkTable,
    env: &Env<'_>,
    parent: Option<&RowCtx<'_>>,
) -> Result<Vec<Row>> {
    let mut held = env.info.tmp_memory.hold();
    let mut seen = std::collections::HashSet::new();
    let mut keep = |rows: Vec<Row>| -> Vec<Row> { if distinct { rows.into_iter().filter(|r| seen.insert(group_key(r))).collect() } else { rows } };
    let mut found = Vec::new();
    for seed in seeds {
        found.extend(keep(run_select(seed, env, parent)?.rows));
    }
    held.add_rows(&found)?;
    let depth_max = quill_sql_context::vars::int_value(&env.info.vars, "cte_max_recursion_depth");
    let mut round_start = 0;
    let mut rounds = 0u64;
    while round_start < found.len() {
        if rounds >= depth_max {
            return Err(SqlError::new(
                codes::ER_CTE_MAX_RECURSION_DEPTH,
                format!("Recursive query aborted after {} iterations. Try increasing @@cte_max_recursion_depth to a larger value.", rounds + 1),
            ));
        }
        rounds += 1;
        *work.lock().expect("a work table is not poisoned") = found[round_start..].to_vec();
        let mut added = Vec::new();
        for step in steps {
            added.extend(run_select(step, env, parent)?.rows);
        }
        let added = keep(added);
        held.add_rows(&added)?;
        round_start = found.len();
        found.extend(added);
    }
    work.lock().expect("a work table is not poisoned").clear();
    Ok(found)
}

/// The rows of `left` `op` `right` (`all`: every row, else distinct ones), in the left's
/// order, then the right's.
pub(super) fn combine(op: SetOp, all: bool, mut left: Vec<Row>, right: Vec<Row>) -> Vec<Row> {
    if op == SetOp::Union {
        left.extend(right);
        return if all { left } else { dedupe(left) };
    }
    // How many times each distinct row is in the right.
    let mut counts: HashMap<Vec<u8>, usize> = HashMap::new();
    for r in &right {
        *counts.entry(group_key(r)).or_default() += 1;
    }
    let mut seen = std::collections::HashSet::new();
    let kept = left.into_iter().filter(|r| {
        let key = group_key(r);
        let in_right = counts.get_mut(&key);
        // With ALL, each row of the right pairs with one of the left.
        let paired = |n: Option<&mut usize>| match n {
            Some(n) if *n > 0 => {
                *n -= 1;
                true
            }
            _ => false,
        };
        match (op, all) {
            (SetOp::Intersect, true) => paired(in_right),
            (SetOp::Except, true) => !paired(in_right),
            (SetOp::Intersect, false) => in_right.is_some() && seen.insert(key),
            _ => in_right.is_none() && seen.insert(key),
        }
    });
    kept.collect()
}

pub(super) fn dedupe(rows: Vec<Row>) -> Vec<Row> {
    let mut seen = std::collections::HashSet::new();
    rows.into_iter().filter(|r| seen.insert(group_key(r))).collect()
}

pub(super) fn group_key(values: &[Value]) -> Vec<u8> {
    quill_storage::key::encode_key(values.iter().map(|v| (v, Collation::default())))
}

pub(super) fn eval_count(e: Option<&Expr>, env: &Env<'_>) -> Result<Option<usize>> {
    match e {
        None => Ok(None),
        Some(e) => {
            let v = e.eval(env, &RowCtx::new(&[]))?;
            let n = ops::to_i128(&v);
            Ok(Some(n.max(0) as usize))
        }
    }
}

pub(super) fn apply_limit(rows: Vec<Row>, limit: Option<&Expr>, offset: Option<&Expr>, env: &Env<'_>) -> Result<Vec<Row>> {
    let off = eval_count(offset, env)?.unwrap_or(0);
    let lim = eval_count(limit, env)?;
    Ok(rows.into_iter().skip(off).take(lim.unwrap_or(usize::MAX)).collect())
}

pub(super) fn run_block(b: &Block, env: &Env<'_>, parent: Option<&RowCtx<'_>>, emit: &mut dyn FnMut(Row) -> Result<()>) -> Result<()> {
    // What the block keeps (derived tables, groups, rows to sort or dedupe) counts against
    // the statement's bound (`tmp_memory`) until the block ends.
    let mut held = env.info.tmp_memory.hold();
    // Materialize derived tables.
    for s in &b.sources {
        if let SourceData::Rows(cell, Some(plan)) = &s.data {
            let rows = run_select(plan, env, parent)?.rows;
            held.add_rows(&rows)?;
            *cell.borrow_mut() = Some(rows);
        }
    }
    // Rows come out in their final order as the join produces them: hand them straight on,
    // skipping the OFFSET and stopping the join at the LIMIT.
    let windowed = !b.windows.is_empty();
    let streams = !b.grouped && !windowed && b.having.is_none() && !b.distinct && (b.order_by.is_empty() || order_follows_scan(b, env));
    let (offset, limit) = if streams { (eval_count(b.offset.as_ref(), env)?.unwrap_or(0), eval_count(b.limit.as_ref(), env)?) } else { (0, None) };
    let early_stop = limit.map(|l| l.saturating_add(offset));
    // A sort with a LIMIT keeps only the rows that can still make it (MySQL's priority
    // queue): past twice that many, the rows are sorted and the rest let go.
    let top = if !streams && !b.grouped && !windowed && !b.distinct && !b.order_by.is_empty() {
        let skip = eval_count(b.offset.as_ref(), env)?.unwrap_or(0);
        eval_count(b.limit.as_ref(), env)?.map(|l| l.saturating_add(skip))
    } else {
        None
    };
    // Otherwise joined rows stream into the grouping or the projection as the join produces
    // them: an aggregate over a large join holds its groups, never the joined rows.
    let mut out: Vec<(Row, Vec<Value>)> = Vec::new();
    // A windowed block's rows (joined row, aggregate values), kept until the windows are known.
    let mut window_rows: Vec<(Row, Vec<Value>)> = Vec::new();
    let mut groups: Vec<(Row, Vec<Accumulator>)> = Vec::new();
    let mut index: HashMap<Vec<u8>, usize> = HashMap::new();
    let mut skipped = 0;
    {
        let mut sink = |row: &Row| -> Result<()> {
            let cx = ctx(row, &[], parent);
            if b.grouped {
                let key_vals: Vec<Value> = b.group_by.iter().map(|g| g.eval(env, &cx)).collect::<Result<_>>()?;
                let key = group_key(&key_vals);
                let gi = match index.get(&key) {
                    Some(&gi) => gi,
                    None => {
                        held.add(tmp_memory::row_bytes(row) + key.len() + GROUP_OVERHEAD_BYTES * (1 + b.aggs.len()))?;
                        groups.push((row.clone(), b.aggs.iter().map(Accumulator::new).collect()));
                        index.insert(key, groups.len() - 1);
                        groups.len() - 1
                    }
                };
                for (acc, spec) in groups[gi].1.iter_mut().zip(&b.aggs) {
                    let kept = acc.add(spec, env, &cx)?;
                    held.add(kept)?;
                }
            } else if let Some(h) = &b.having
                && ops::truth(&h.eval(env, &cx)?) != Some(true)
            {
                // HAVING without grouping filters rows, like WHERE, and sees select aliases.
            } else if windowed {
                held.add(tmp_memory::row_bytes(row))?;
                window_rows.push((row.clone(), Vec::new()));
            } else if streams {
                // The join stops at the limit (`early_stop`), so every row here is wanted
                // unless it falls in the OFFSET.
                if skipped < offset {
                    skipped += 1;
                } else {
                    emit(project_only(b, env, &cx)?)?;
                }
            } else {
                let (r, keys) = project(b, env, &cx)?;
                held.add(tmp_memory::row_bytes(&r) + tmp_memory::row_bytes(&keys))?;
                out.push((r, keys));
                if let Some(keep) = top
                    && out.len() >= keep.saturating_mul(2).max(TOP_ROWS_MIN)
                {
                    out.sort_by(|(_, a), (_, c)| order_cmp(b, a, c));
                    let dropped: usize = out.drain(keep..).map(|(r, k)| tmp_memory::row_bytes(&r) + tmp_memory::row_bytes(&k)).sum();
                    held.release(dropped);
                }
            }
            Ok(())
        };
        if b.sources.is_empty() {
            let row: Row = Vec::new();
            if pass(b.filter.as_ref(), &row, env, parent)? && early_stop != Some(0) {
                sink(&row)?;
            }
        } else {
            let mut row: Row = vec![Value::Null; b.width];
            let marks = b.sources.iter().map(|_| Cell::new(false)).collect();
            JoinRun { b, env, parent, sink: &mut sink, emitted: 0, stop: early_stop, marks }.join_level(0, &mut row)?;
        }
    }
    if streams {
        return Ok(());
    }
    if b.grouped {
        if groups.is_empty() && b.group_by.is_empty() {
            groups.push((vec![Value::Null; b.width], b.aggs.iter().map(Accumulator::new).collect()));
        }
        for (group, (first, accs)) in groups.into_iter().enumerate() {
            if accs.iter().any(Accumulator::was_cut) {
                env.info.warn(codes::ER_CUT_VALUE_GROUP_CONCAT.0, format!("Row {} was cut by GROUP_CONCAT()", group + 1));
            }
            let agg_vals: Vec<Value> = accs.into_iter().zip(&b.aggs).map(|(a, s)| a.finish(s)).collect();
            let cx = RowCtx { row: &first, aggs: &agg_vals, windows: &[], parent };
            if let Some(h) = &b.having
                && ops::truth(&h.eval(env, &cx)?) != Some(true)
            {
                continue;
            }
            if windowed {
                window_rows.push((first, agg_vals));
            } else {
                out.push(project(b, env, &cx)?);
            }
        }
    }
    if windowed {
        let values = crate::window::compute(&b.windows, &window_rows, env, parent)?;
        for ((row, aggs), windows) in window_rows.iter().zip(&values) {
            let cx = RowCtx { row, aggs, windows, parent };
            let (r, keys) = project(b, env, &cx)?;
            held.add(tmp_memory::row_bytes(&r) + tmp_memory::row_bytes(&keys))?;
            out.push((r, keys));
        }
    }
    if b.distinct {
        let mut seen = std::collections::HashSet::new();
        out.retain(|(r, _)| seen.insert(group_key(r)));
    }
    if !b.order_by.is_empty() {
        out.sort_by(|(_, a), (_, c)| order_cmp(b, a, c));
    }
    let rows: Vec<Row> = out.into_iter().map(|(r, _)| r).collect();
    apply_limit(rows, b.limit.as_ref(), b.offset.as_ref(), env)?.into_iter().try_for_each(emit)
}

/// The block's ORDER BY on two rows' sort keys. Stable sorts keep ties in join order.
pub(super) fn order_cmp(b: &Block, a: &[Value], c: &[Value]) -> Ordering {
    for (i, (_, asc, coll)) in b.order_by.iter().enumerate() {
        let o = ops::sort_cmp(&a[i], &c[i], *coll);
        if o != Ordering::Equal {
            return if *asc { o } else { o.reverse() };
        }
    }
    Ordering::Equal
}

/// Whether the block's ORDER BY follows the order its only table is scanned in: then
/// rows come out of the scan already in order, and a LIMIT may stop the scan early (so a
/// locking read locks only what it returns, as InnoDB's index-ordered scan does).
///
/// ORDER BY a leading part of the primary key, ascending, follows any read through the
/// primary key. A plain read through a secondary index yields rows in that index's order,
/// and a plain read of a key range can walk it backwards (`Source::order`, chosen by the
/// planner). A locking read follows neither: it reads each row's newest version, which may
/// have left the index entry it was found by, and takes its locks in ascending order.
pub(super) fn order_follows_scan(b: &Block, env: &Env<'_>) -> bool {
    let [s] = b.sources.as_slice() else { return false };
    let SourceData::Table { db, name, .. } = &s.data else { return false };
    let Ok(meta) = env.catalog.table(db, name) else { return false };
    match key_order(&b.order_by, s, &s.access, meta) {
        Some(ScanOrder::Ascending) => env.lock.is_none() || matches!(s.access, Access::Full | Access::PkRange { .. } | Access::PkPoint(_) | Access::PkIn(_)),
        Some(ScanOrder::Descending) => env.lock.is_none() && s.order == ScanOrder::Descending,
        None => false,
    }
}

/// The direction `access` must scan source `s` in for its rows to come in `order_by`'s
/// order, if one does. Key lists (`PkIn`, `PkPoint`) are read ascending only.
pub(super) fn key_order(order_by: &[(Expr, bool, Collation)], s: &Source, access: &Access, meta: &quill_sql_context::catalog::TableMeta) -> Option<ScanOrder> {
    let order = match access {
        Access::Full | Access::PkRange { .. } => order_matches(order_by, s, &meta.primary),
        Access::PkPoint(_) | Access::PkIn(_) => order_matches(order_by, s, &meta.primary).filter(|o| *o == ScanOrder::Ascending),
        Access::IndexRange { index, .. } => order_matches(order_by, s, &meta.indexes[*index].columns),
        Access::IndexEq { index, values } => {
            let columns = &meta.indexes[*index].columns;
            order_matches(order_by, s, columns).or_else(|| order_matches(order_by, s, &columns[values.len()..]))
        }
        Access::Hash(_) => None,
    }?;
    Some(order)
}

/// The direction in which `order_by` is a leading part of the key `columns` of source `s`,
/// in the columns' own collations and all one way (so a scan of that key, that way, yields
/// rows in its order).
pub(super) fn order_matches(order_by: &[(Expr, bool, Collation)], s: &Source, columns: &[usize]) -> Option<ScanOrder> {
    let asc = order_by.first()?.1;
    let fits = order_by.len() <= columns.len()
        && order_by
            .iter()
            .zip(columns)
            .all(|((e, a, coll), &col)| *a == asc && matches!(e, Expr::Column(c) if *c == s.offset + col) && *coll == s.types[col].collation());
    fits.then_some(if asc { ScanOrder::Ascending } else { ScanOrder::Descending })
}

pub(super) fn ctx<'a>(row: &'a [Value], aggs: &'a [Value], parent: Option<&'a RowCtx<'a>>) -> RowCtx<'a> {
    RowCtx { row, aggs, windows: &[], parent }
}

pub(super) fn pass(cond: Option<&Expr>, row: &[Value], env: &Env<'_>, parent: Option<&RowCtx<'_>>) -> Result<bool> {
    match cond {
        None => Ok(true),
        Some(c) => Ok(ops::truth(&c.eval(env, &ctx(row, &[], parent))?) == Some(true)),
    }
}

/// A result row of `b` for the row `cx`, when no sort needs its ORDER BY keys.
pub(super) fn project_only(b: &Block, env: &Env<'_>, cx: &RowCtx<'_>) -> Result<Row> {
    b.projection.iter().map(|p| p.eval(env, cx)).collect()
}

/// A result row of `b` for the row (or group) `cx`, and its ORDER BY keys.
pub(super) fn project(b: &Block, env: &Env<'_>, cx: &RowCtx<'_>) -> Result<(Row, Vec<Value>)> {
    let projected: Row = b.projection.iter().map(|p| p.eval(env, cx)).collect::<Result<_>>()?;
    let keys: Vec<Value> = b.order_by.iter().map(|(e, _, _)| e.eval(env, cx)).collect::<Result<_>>()?;
    Ok((projected, keys))
}

/// One run of a block's nested loops: where joined rows go and what the levels share.
pub(super) struct JoinRun<'r, 'a> {
    pub b: &'r Block,
    pub env: &'r Env<'a>,
    pub parent: Option<&'r RowCtx<'r>>,
    pub sink: &'r mut dyn FnMut(&Row) -> Result<()>,
    /// Rows handed to `sink` so far.
    pub emitted: usize,
    /// Stop once this many rows were handed on.
    pub stop: Option<usize>,
    /// For the first level of each LEFT-joined parenthesized join: whether a whole row of
    /// it passed its condition for the current row of the levels before it.
    pub marks: Vec<Cell<bool>>,
}

impl JoinRun<'_, '_> {
    fn stopped(&self) -> bool {
        self.stop.is_some_and(|s| self.emitted >= s)
    }

    /// Joins the sources from `level` on, handing every joined row that passes the filter
    /// to the sink; stops once `stop` rows were handed on.
    pub(super) fn join_level(&mut self, level: usize, row: &mut Row) -> Result<()> {
        let (b, env, parent) = (self.b, self.env, self.parent);
        if self.stopped() {
            return Ok(());
        }
        if level == b.sources.len() {
            if pass(b.filter.as_ref(), row, env, parent)? {
                (self.sink)(row)?;
                self.emitted += 1;
            }
            return Ok(());
        }
        let s = &b.sources[level];
        // Each candidate row, with the key of a lock to let go of if the row is not returned.
        type Candidate = Result<(SharedRow, Option<Vec<u8>>)>;
        let locks = &env.info.engine.txns.locks;
        let release = match (env.lock.as_ref(), &s.data) {
            (Some(spec), SourceData::Table { id, .. }) if spec.semi_consistent => Some((spec.txn, *id)),
            _ => None,
        };
        // A row locked one by one: `None` when SKIP LOCKED leaves it out or it has no version
        // the view sees; the key comes back when the lock was new (READ COMMITTED may let go).
        let locked = |spec: &LockSpec, id: u64, name: &str, data: &dyn quill_storage::Handler, pk: Vec<u8>| -> Option<Candidate> {
            match spec.lock_row(locks, id, name, data, &pk) {
                Ok(Some(fresh)) => data.get(&pk, &env.view).map(|r| Ok((r, fresh.then_some(pk)))),
                Ok(None) => None,
                Err(e) => Some(Err(e)),
            }
        };
        let stop = self.stop;
        let candidates: Box<dyn Iterator<Item = Candidate> + '_> = match (env.lock.as_ref(), &s.data) {
            (Some(spec), SourceData::Table { db, name, id })
                if matches!(s.access, Access::Full | Access::Hash(_)) && spec.ranges_whole_table(stop.is_some()) =>
            {
                env.info.interrupt.note_full_scan();
                // A shared scan of every row: one record range locks them all, and only rows
                // another transaction holds are locked (and waited for) one by one.
                let data = env.catalog.table(db, name)?.data.as_ref();
                spec.lock_whole_table(locks, *id, data);
                Box::new(data.scan_chains(Bound::Unbounded, Bound::Unbounded, env.view).filter_map(move |(pk, holder, row)| {
                    if holder.is_none_or(|h| h == spec.txn) && !locks.needs_record_lock(spec.txn, *id, &pk) {
                        return row.map(|r| Ok((r, None)));
                    }
                    locked(spec, *id, name, data, pk)
                }))
            }
            (Some(spec), SourceData::Table { db, name, id }) => {
                // Locking: each row is locked when the scan reaches it, so a LIMIT that stops
                // the scan early leaves the rest unlocked.
                let data = env.catalog.table(db, name)?.data.as_ref();
                Box::new(locking_candidates(s, row, env, parent, spec)?.into_iter().filter_map(move |pk| locked(spec, *id, name, data, pk)))
            }
            (None, SourceData::Table { .. }) if matches!(s.access, Access::Hash(_)) => {
                let Access::Hash(keys) = &s.access else { unreachable!("matched above") };
                Box::new(crate::hash_join::probe(s, keys, &s.hash_table, env, &ctx(row, &[], parent))?.into_iter().map(|r| Ok((r, None))))
            }
            _ => Box::new(read_source(s, row, env, parent)?.map(|r| Ok((r, None)))),
        };
        // A parenthesized join is matched by a whole row of it, at its last level.
        if s.group_end.is_some() {
            self.marks[level].set(false);
        }
        let mut matched = false;
        for candidate in candidates {
            env.info.interrupt.check()?;
            let (r, fresh_lock) = candidate?;
            let returned_before = self.emitted;
            // A row version decoded for this read is this reader's alone: its values move into
            // the joined row instead of being copied (strings would be allocated again).
            match SharedRow::try_unwrap(r) {
                Ok(owned) => {
                    for (slot, v) in row[s.offset..s.offset + s.width].iter_mut().zip(owned) {
                        *slot = v;
                    }
                }
                Err(shared) => row[s.offset..s.offset + s.width].clone_from_slice(&shared),
            }
            if pass(s.on.as_ref(), row, env, parent)? {
                // Matched by ON (what a LEFT JOIN's null row depends on), then WHERE's part for
                // this level.
                matched = true;
                self.finish_level(level, None, row)?;
            }
            if let (Some((txn, table)), Some(pk)) = (release, fresh_lock)
                && self.emitted == returned_before
            {
                locks.unlock_record(txn, table, &pk);
            }
            if self.stopped() {
                return Ok(());
            }
        }
        if s.group_end.is_some() {
            matched = self.marks[level].get();
        }
        if !matched && s.kind == JoinKind::Left {
            let end = s.group_end.unwrap_or(level);
            let last = &b.sources[end];
            for v in &mut row[s.offset..last.offset + last.width] {
                *v = Value::Null;
            }
            self.finish_level(end, Some(level), row)?;
        }
        Ok(())
    }

    /// The rest of a joined row once `level` is read: the conditions of the parenthesized
    /// joins it ends (but those inside the one filled with NULLs from level `nulled_from`),
    /// marking a LEFT-joined one matched; then WHERE's part for this level and the next
    /// level.
    fn finish_level(&mut self, level: usize, nulled_from: Option<usize>, row: &mut Row) -> Result<()> {
        let (b, env, parent) = (self.b, self.env, self.parent);
        for g in &b.sources[level].closes {
            if nulled_from.is_some_and(|n| g.start >= n) {
                continue;
            }
            if !pass(g.on.as_ref(), row, env, parent)? {
                return Ok(());
            }
            if g.left {
                self.marks[g.start].set(true);
            }
        }
        if pass(b.level_filters[level].as_ref(), row, env, parent)? {
            self.join_level(level + 1, row)?;
        }
        Ok(())
    }
}
