//! Metadata locks: how DDL and DML on one table keep out of each other's way, as MySQL's
//! MDL subsystem does.
//!
//! A statement that reads or writes a table holds a *shared* lock on its name until its
//! transaction ends (until the statement ends when no transaction is open), so the table
//! it works on is not replaced or dropped under it, and every commit that wrote the table
//! reaches the log before a DDL record about it. DDL holds an *exclusive* lock on each table
//! it changes, for the statement.
//!
//! Grant rules:
//! - shared: granted unless another session holds the table exclusively, or an exclusive
//!   request waits for it and the asking session holds no metadata lock yet (so a waiting
//!   DDL is not starved by new readers, as in MySQL, while a transaction that already
//!   holds locks goes on and cannot deadlock with it here);
//! - exclusive: granted when no other session holds the table at all.
//!
//! A request that cannot be granted waits (the session's async wait, never a runtime
//! thread) for a release, bounded by `lock_wait_timeout` (1205), and shows as `Waiting for
//! table metadata lock` in PROCESSLIST. Every wait and every lock is tied to a connection
//! id; the table holds at most one entry per table name with a holder or a waiter, and
//! entries go when their last holder and waiter do.

use std::collections::HashMap;

use parking_lot::Mutex;
use tokio::sync::Notify;

/// A table's name: database and table, as the catalog spells them.
pub type TableName = (String, String);

#[derive(Debug, Default)]
struct Entry {
    /// Sessions holding the table shared.
    shared: Vec<u32>,
    exclusive: Option<u32>,
    /// Exclusive requests waiting, by session.
    exclusive_waiting: Vec<u32>,
}

impl Entry {
    fn is_unused(&self) -> bool {
        self.shared.is_empty() && self.exclusive.is_none() && self.exclusive_waiting.is_empty()
    }
}

/// The server's metadata locks.
#[derive(Debug, Default)]
pub struct MetadataLocks {
    tables: Mutex<HashMap<TableName, Entry>>,
    /// Woken on every release and every withdrawn request: waiters look again.
    released: Notify,
}

/// Who holds or waits for a table's metadata lock (`performance_schema.metadata_locks`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataLockRow {
    pub table: TableName,
    pub connection_id: u32,
    /// `SHARED_READ`-like shared lock or `EXCLUSIVE`.
    pub exclusive: bool,
    /// `GRANTED` or `PENDING`.
    pub granted: bool,
}

impl MetadataLocks {
    /// Take shared locks on `names` for `session`, all or none.
    ///
    /// # Errors
    /// The first name that cannot be granted now.
    pub fn try_shared(&self, session: u32, names: &[TableName]) -> Result<(), TableName> {
        let mut tables = self.tables.lock();
        let holds_any = tables.values().any(|e| e.shared.contains(&session) || e.exclusive == Some(session));
        for name in names {
            if let Some(e) = tables.get(name) {
                let mine = e.shared.contains(&session) || e.exclusive == Some(session);
                let blocked = e.exclusive.is_some_and(|x| x != session) || (!e.exclusive_waiting.is_empty() && !holds_any);
                if !mine && blocked {
                    return Err(name.clone());
                }
            }
        }
        for name in names {
            let e = tables.entry(name.clone()).or_default();
            if !e.shared.contains(&session) && e.exclusive != Some(session) {
                e.shared.push(session);
            }
        }
        Ok(())
    }

    /// Take exclusive locks on `names` for `session`, all or none; when refused, `session`
    /// is recorded as waiting for every one of them until [`MetadataLocks::withdraw`].
    ///
    /// # Errors
    /// The first name another session holds.
    pub fn try_exclusive(&self, session: u32, names: &[TableName]) -> Result<(), TableName> {
        let mut tables = self.tables.lock();
        let busy =
            names.iter().find(|name| tables.get(*name).is_some_and(|e| e.exclusive.is_some_and(|x| x != session) || e.shared.iter().any(|&s| s != session)));
        if let Some(name) = busy.cloned() {
            for n in names {
                let e = tables.entry(n.clone()).or_default();
                if !e.exclusive_waiting.contains(&session) {
                    e.exclusive_waiting.push(session);
                }
            }
            return Err(name);
        }
        for n in names {
            let e = tables.entry(n.clone()).or_default();
            e.exclusive_waiting.retain(|&s| s != session);
            e.shared.retain(|&s| s != session);
            e.exclusive = Some(session);
        }
        Ok(())
    }

    /// Forget `session`'s waiting exclusive requests (it timed out or was killed).
    pub fn withdraw(&self, session: u32) {
        let mut tables = self.tables.lock();
        for e in tables.values_mut() {
            e.exclusive_waiting.retain(|&s| s != session);
        }
        tables.retain(|_, e| !e.is_unused());
        drop(tables);
        self.released.notify_waiters();
    }

    /// Release every metadata lock `session` holds (end of its transaction or statement).
    pub fn release_all(&self, session: u32) {
        let mut tables = self.tables.lock();
        let mut changed = false;
        for e in tables.values_mut() {
            let before = e.shared.len();
            e.shared.retain(|&s| s != session);
            changed |= e.shared.len() != before;
            if e.exclusive == Some(session) {
                e.exclusive = None;
                changed = true;
            }
        }
        if changed {
            tables.retain(|_, e| !e.is_unused());
            drop(tables);
            self.released.notify_waiters();
        }
    }

    /// Whether `session` holds any metadata lock.
    #[must_use]
    pub fn holds_any(&self, session: u32) -> bool {
        self.tables.lock().values().any(|e| e.shared.contains(&session) || e.exclusive == Some(session))
    }

    /// A future that completes at the next release. Create it before looking at the
    /// state (then [`MetadataLocks::try_shared`] or [`MetadataLocks::try_exclusive`]), so a
    /// release in between is not missed.
    pub fn released(&self) -> std::pin::Pin<Box<tokio::sync::futures::Notified<'_>>> {
        let mut notified = Box::pin(self.released.notified());
        notified.as_mut().enable();
        notified
    }

    /// Every holder and waiter, for `performance_schema.metadata_locks`.
    #[must_use]
    pub fn rows(&self) -> Vec<MetadataLockRow> {
        let tables = self.tables.lock();
        let mut rows = Vec::new();
        for (name, e) in tables.iter() {
            rows.extend(e.shared.iter().map(|&s| MetadataLockRow { table: name.clone(), connection_id: s, exclusive: false, granted: true }));
            rows.extend(e.exclusive.iter().map(|&s| MetadataLockRow { table: name.clone(), connection_id: s, exclusive: true, granted: true }));
            rows.extend(e.exclusive_waiting.iter().map(|&s| MetadataLockRow { table: name.clone(), connection_id: s, exclusive: true, granted: false }));
        }
        rows.sort_by(|a, b| (&a.table, a.connection_id).cmp(&(&b.table, b.connection_id)));
        rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(name: &str) -> TableName {
        ("d".into(), name.into())
    }

    #[test]
    fn ddl_waits_for_a_reader_and_blocks_new_readers_but_not_old_transactions() {
        let m = MetadataLocks::default();
        m.try_shared(1, &[t("a")]).unwrap();
        assert_eq!(m.try_exclusive(2, &[t("a")]), Err(t("a")), "session 1 uses the table");
        assert_eq!(m.try_shared(3, &[t("a")]), Err(t("a")), "a waiting DDL holds new readers back");
        m.try_shared(1, &[t("b")]).expect("a transaction that holds locks goes on");
        m.release_all(1);
        m.try_exclusive(2, &[t("a")]).unwrap();
        assert_eq!(m.try_shared(3, &[t("a")]), Err(t("a")));
        m.release_all(2);
        m.try_shared(3, &[t("a")]).unwrap();
        assert!(m.rows().iter().all(|r| r.connection_id == 3));
    }

    #[test]
    fn a_withdrawn_request_no_longer_holds_readers_back() {
        let m = MetadataLocks::default();
        m.try_shared(1, &[t("a")]).unwrap();
        assert!(m.try_exclusive(2, &[t("a")]).is_err());
        m.withdraw(2);
        m.try_shared(3, &[t("a")]).unwrap();
        m.release_all(1);
        m.release_all(3);
        assert!(m.rows().is_empty(), "entries go with their last holder");
    }
}
