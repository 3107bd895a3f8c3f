//! The whole-row copy: `INSERT INTO t SELECT * FROM s` where `t` and `s` have the same
//! shape (the same columns, types and collations, in the same order) moves each row's image
//! from `s` to `t` as it is, where the general path decodes every value, projects it,
//! converts it to its column's type (a value of an identical type converts to itself) and
//! encodes it again. It is how tables are copied and backed up with SQL, and the seed's
//! 10 M-row workload.
//!
//! What stays as in the general path:
//! - reading: the source's rows are those the statement's view sees, read as
//!   `query::join_level` reads a whole table; at REPEATABLE READ and above, one record range
//!   locks every row and gap of the source in shared mode
//!   (`LockSpec::lock_whole_table`), and a row another transaction holds is locked, and
//!   waited for, on its own, then read current;
//! - writing: every row goes through the bulk buffer (`dml::bulk`), so duplicates, IGNORE,
//!   row locks, undo and the log are the general path's;
//! - AUTO_INCREMENT: an explicit value raises the counter; a 0 or NULL one, and a row read
//!   after a lock wait, take the general path's conversion (`dml::prepare_row`) alone.
//!
//! A target in another row format gets each row decoded and encoded in its format, still
//! with no conversion. Anything else the statement says (a column list in another order, a
//! WHERE, a join, an alias, ORDER BY or LIMIT, a lock clause) takes the general path.
//!
//! Where it sits: in `dml`, chosen by `dml::insert` when the statement is on the bulk path.

use quill_storage::{ImageBatch, Row, RowFormat, Value};
use sqlparser::ast;

use super::ProposedRow;
use super::bulk::Finished;
use crate::catalog::{Catalog, TableMeta};
use crate::error::Result;
use crate::locking::LockSpec;
use crate::ops;
use crate::query::{self, Env};
use crate::session_info::SessionInfo;
use crate::types::SqlType;

/// A source row as it reaches the target table.
pub(super) enum Incoming<'r> {
    /// As values, to be made whole, checked and converted as any proposed row.
    Proposed(ProposedRow),
    /// Ready for the bulk buffer.
    Finished(Finished<'r>),
}

/// A whole-row copy the statement can run ([`plan`]).
pub(super) struct WholeCopy<'c> {
    source: &'c TableMeta,
    /// The target's primary key is the source's (same columns): a source key is a target key.
    same_key: bool,
    /// The target lays rows out in the source's format: an image is copied as it is.
    same_format: bool,
    /// The target's AUTO_INCREMENT column.
    auto_increment: Option<usize>,
}

/// The whole-row copy `INSERT INTO target [(every column, in order)] SELECT * FROM source`
/// can run as (see the module doc); `None` when the statement is anything else, the two
/// tables differ in shape, or the source is read in a way the copy does not lock as
/// (`lock`: the statement's read locking).
pub(super) fn plan<'c>(
    catalog: &'c Catalog,
    info: &SessionInfo,
    q: &ast::Query,
    target: &TableMeta,
    targets: &[usize],
    lock: Option<&LockSpec>,
) -> Option<WholeCopy<'c>> {
    if lock.is_some_and(|spec| !spec.ranges_whole_table(false)) {
        return None;
    }
    let ast::SetExpr::Select(select) = q.body.as_ref() else { return None };
    let [from] = select.from.as_slice() else { return None };
    let ast::TableFactor::Table { name, .. } = &from.relation else { return None };
    // Exactly `SELECT * FROM name`: anything more (a filter, a join, an alias, an order, a
    // limit, a lock clause) shows in the query's text.
    if q.to_string() != format!("SELECT * FROM {name}") {
        return None;
    }
    let (db, table) = query::resolve_table_name(info, name).ok()?;
    let source = catalog.table(&db, &table).ok()?;
    let in_order = targets.len() == target.columns.len() && targets.iter().enumerate().all(|(i, &c)| i == c);
    let same_shape = source.columns.len() == target.columns.len()
        && source.columns.iter().zip(&target.columns).all(|(s, t)| same_storage(&s.ty, &t.ty) && (t.nullable || !s.nullable));
    if source.id == target.id || !in_order || !same_shape {
        return None;
    }
    Some(WholeCopy {
        source,
        same_key: !target.primary.is_empty() && source.primary == target.primary,
        same_format: source.data.row_format() == target.data.row_format(),
        auto_increment: target.columns.iter().position(|c| c.auto_increment),
    })
}

/// Whether a value stored in a column of type `a` is stored unchanged in one of type `b`:
/// the same type (an integer's display width aside).
fn same_storage(a: &SqlType, b: &SqlType) -> bool {
    match (a, b) {
        (SqlType::Int { kind: k1, unsigned: u1, .. }, SqlType::Int { kind: k2, unsigned: u2, .. }) => k1 == k2 && u1 == u2,
        _ => a == b,
    }
}

impl WholeCopy<'_> {
    /// Reads the source through `env` (its view and read locks) and hands every row it sees
    /// to `emit`, in primary-key order; `target` is the table written (its AUTO_INCREMENT
    /// counter moves past explicit values).
    ///
    /// # Errors
    /// A lock wait, deadlock or KILL on the read; `emit`'s.
    pub(super) fn run(&self, env: &Env<'_>, target: &TableMeta, emit: &mut dyn FnMut(Incoming<'_>) -> Result<()>) -> Result<()> {
        let source = self.source;
        let data = source.data.as_ref();
        let locks = &env.info.engine.txns.locks;
        let spec = env.lock.as_ref();
        if let Some(spec) = spec {
            spec.lock_whole_table(locks, source.id, data);
        }
        let format = data.row_format();
        let mut cursor = data.image_cursor(env.view);
        let mut batch = ImageBatch::default();
        while cursor.next_batch(&mut batch) {
            env.info.interrupt.check()?;
            for row in batch.iter() {
                // A row another transaction holds, or waits for, is not covered by the
                // record range: it is locked on its own and read current.
                if let Some(spec) = spec
                    && (row.holder.is_some_and(|h| h != spec.txn) || locks.needs_record_lock(spec.txn, source.id, row.key))
                {
                    if spec.lock_row(locks, source.id, &source.name, data, row.key)?.is_some()
                        && let Some(current) = data.get(row.key, &env.view)
                    {
                        emit(Incoming::Proposed(current.iter().cloned().map(Some).collect()))?;
                    }
                    continue;
                }
                let Some(image) = row.image else { continue };
                emit(self.incoming(format, target, row.key, image))?;
            }
        }
        Ok(())
    }

    /// What the target gets for the source row at `key` with image `image` (in `format`).
    fn incoming<'r>(&self, format: &RowFormat, target: &TableMeta, key: &'r [u8], image: &'r [u8]) -> Incoming<'r> {
        let decode = || -> Row { format.decode(image).expect("a table's images decode in its format") };
        if let Some(col) = self.auto_increment {
            match format.value_at(image, col).expect("a table's images decode in its format") {
                // A value to generate: the general path's conversion does.
                Value::Null | Value::Int(0) | Value::UInt(0) => return Incoming::Proposed(decode().into_iter().map(Some).collect()),
                explicit => {
                    let n = ops::to_i128(&explicit);
                    if n >= 0 {
                        target.data.raise_auto_increment(u64::try_from(n + 1).unwrap_or(u64::MAX));
                    }
                }
            }
        }
        Incoming::Finished(if self.same_format { Finished::Image { pk: self.same_key.then_some(key), image } } else { Finished::Row(decode()) })
    }
}
