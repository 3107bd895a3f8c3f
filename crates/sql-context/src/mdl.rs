//! Metadata locks: how DDL, DML and `LOCK TABLES` on one table keep out of each other's
//! way, as MySQL's MDL subsystem does.
//!
//! A statement that reads a table holds it in [`Mode::Read`] (MySQL's `SHARED_READ`), one
//! that writes it in [`Mode::Write`] (`SHARED_WRITE`), until its transaction ends (until the
//! statement ends when no transaction is open), so the table it works on is not replaced or
//! dropped under it, and every commit that wrote the table reaches the log before a DDL
//! record about it. DDL holds [`Mode::Exclusive`] on each table it changes, for the
//! statement. `LOCK TABLES t READ` holds [`Mode::ReadOnly`] (`SHARED_READ_ONLY`: others may
//! read, nobody else may write) and `LOCK TABLES t WRITE` holds [`Mode::NoReadWrite`]
//! (`SHARED_NO_READ_WRITE`: nobody else may use the table); these are *explicit* locks,
//! kept across transactions until `UNLOCK TABLES` or the end of the connection.
//!
//! Grant rules (MySQL's compatibility matrix; a session's own locks never conflict):
//!
//! | held \ asked | Read | Write | ReadOnly | NoReadWrite | Exclusive |
//! |---|---|---|---|---|---|
//! | Read        | yes | yes | yes | no | no |
//! | Write       | yes | yes | no  | no | no |
//! | ReadOnly    | yes | no  | yes | no | no |
//! | NoReadWrite | no  | no  | no  | no | no |
//! | Exclusive   | no  | no  | no  | no | no |
//!
//! A waiting request of a stronger mode also holds back new requests it conflicts with
//! (a waiting DDL is not starved by new readers, as in MySQL), but only for a session that
//! holds no metadata lock yet: a transaction that already holds locks goes on, and cannot
//! deadlock with the waiter here.
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

/// A metadata lock's strength, weakest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Mode {
    /// A statement reads the table (`SHARED_READ`).
    Read,
    /// A statement writes the table (`SHARED_WRITE`).
    Write,
    /// `LOCK TABLES ... READ` (`SHARED_READ_ONLY`).
    ReadOnly,
    /// `LOCK TABLES ... WRITE` (`SHARED_NO_READ_WRITE`).
    NoReadWrite,
    /// DDL (`EXCLUSIVE`).
    Exclusive,
}

impl Mode {
    /// Whether a lock held in `self` by one session lets another session take `asked`.
    #[must_use]
    pub fn admits(self, asked: Mode) -> bool {
        use Mode::{Exclusive, NoReadWrite, Read, ReadOnly, Write};
        match (self, asked) {
            (Read, Read | Write | ReadOnly) | (Write, Read | Write) | (ReadOnly, Read | ReadOnly) => true,
            (NoReadWrite | Exclusive, _) | (_, NoReadWrite | Exclusive) | (Write, ReadOnly) | (ReadOnly, Write) => false,
        }
    }

    /// MySQL's name for the mode, as `performance_schema.metadata_locks` shows it.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Mode::Read => "SHARED_READ",
            Mode::Write => "SHARED_WRITE",
            Mode::ReadOnly => "SHARED_READ_ONLY",
            Mode::NoReadWrite => "SHARED_NO_READ_WRITE",
            Mode::Exclusive => "EXCLUSIVE",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Holder {
    session: u32,
    mode: Mode,
    /// Taken by `LOCK TABLES`: kept until `UNLOCK TABLES`, not released at the end of a
    /// statement or transaction.
    explicit: bool,
}

#[derive(Debug, Default)]
struct Entry {
    granted: Vec<Holder>,
    /// Requests waiting, by session (one per session: a session asks for one mode at a time).
    waiting: Vec<(u32, Mode)>,
}

impl Entry {
    fn is_unused(&self) -> bool {
        self.granted.is_empty() && self.waiting.is_empty()
    }

    fn holds(&self, session: u32) -> bool {
        self.granted.iter().any(|h| h.session == session)
    }

    /// Whether `session` may take `mode` now; `holds_any` says whether it holds any
    /// metadata lock at all (then waiting requests do not hold it back).
    fn admits(&self, session: u32, mode: Mode, holds_any: bool) -> bool {
        let granted_ok = self.granted.iter().all(|h| h.session == session || h.mode.admits(mode));
        let waiting_ok = holds_any || self.waiting.iter().all(|&(s, m)| s == session || m <= mode || m < Mode::ReadOnly || m.admits(mode));
        granted_ok && waiting_ok
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
    pub mode: Mode,
    /// `TRANSACTION` or, for `LOCK TABLES`, `EXPLICIT`.
    pub explicit: bool,
    /// `GRANTED` or `PENDING`.
    pub granted: bool,
}

impl MetadataLocks {
    /// Take each table of `requests` in its mode for `session`, all or none; `explicit`
    /// for `LOCK TABLES`. A mode no stronger than one the session holds already (with the
    /// same duration) adds nothing. When refused, `session` is recorded as waiting for
    /// every one of them until it asks again and is granted, or [`MetadataLocks::withdraw`].
    ///
    /// # Errors
    /// The first name that cannot be granted now.
    pub fn try_acquire(&self, session: u32, requests: &[(TableName, Mode)], explicit: bool) -> Result<(), TableName> {
        let mut tables = self.tables.lock();
        let holds_any = tables.values().any(|e| e.holds(session));
        let refused = requests.iter().find(|(name, mode)| tables.get(name).is_some_and(|e| !e.admits(session, *mode, holds_any)));
        if let Some((name, _)) = refused.cloned() {
            for (n, mode) in requests {
                let e = tables.entry(n.clone()).or_default();
                e.waiting.retain(|&(s, _)| s != session);
                e.waiting.push((session, *mode));
            }
            return Err(name);
        }
        for (n, mode) in requests {
            let e = tables.entry(n.clone()).or_default();
            e.waiting.retain(|&(s, _)| s != session);
            let covered = e.granted.iter().any(|h| h.session == session && h.mode >= *mode && h.explicit == explicit);
            if !covered {
                e.granted.retain(|h| h.session != session || h.explicit != explicit);
                e.granted.push(Holder { session, mode: *mode, explicit });
            }
        }
        Ok(())
    }

    /// Forget `session`'s waiting requests (it timed out or was killed).
    pub fn withdraw(&self, session: u32) {
        let mut tables = self.tables.lock();
        for e in tables.values_mut() {
            e.waiting.retain(|&(s, _)| s != session);
        }
        tables.retain(|_, e| !e.is_unused());
        drop(tables);
        self.released.notify_waiters();
    }

    /// Release the locks `session` holds for its statement or transaction (not those of
    /// `LOCK TABLES`).
    pub fn release_all(&self, session: u32) {
        self.release(session, |h| !h.explicit);
    }

    /// Release the locks `session` took with `LOCK TABLES` (`UNLOCK TABLES`).
    pub fn release_explicit(&self, session: u32) {
        self.release(session, |h| h.explicit);
    }

    fn release(&self, session: u32, which: impl Fn(&Holder) -> bool) {
        let mut tables = self.tables.lock();
        let mut changed = false;
        for e in tables.values_mut() {
            let before = e.granted.len();
            e.granted.retain(|h| h.session != session || !which(h));
            changed |= e.granted.len() != before;
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
        self.tables.lock().values().any(|e| e.holds(session))
    }

    /// A future that completes at the next release. Create it before looking at the
    /// state (then [`MetadataLocks::try_acquire`]), so a release in between is not missed.
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
            rows.extend(e.granted.iter().map(|h| MetadataLockRow {
                table: name.clone(),
                connection_id: h.session,
                mode: h.mode,
                explicit: h.explicit,
                granted: true,
            }));
            rows.extend(e.waiting.iter().map(|&(s, mode)| MetadataLockRow { table: name.clone(), connection_id: s, mode, explicit: false, granted: false }));
        }
        rows.sort_by(|a, b| (&a.table, a.connection_id, a.mode).cmp(&(&b.table, b.connection_id, b.mode)));
        rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl MetadataLocks {
        fn try_shared(&self, session: u32, names: &[TableName]) -> Result<(), TableName> {
            self.try_acquire(session, &with_mode(names, Mode::Read), false)
        }

        fn try_exclusive(&self, session: u32, names: &[TableName]) -> Result<(), TableName> {
            self.try_acquire(session, &with_mode(names, Mode::Exclusive), false)
        }
    }

    fn with_mode(names: &[TableName], mode: Mode) -> Vec<(TableName, Mode)> {
        names.iter().map(|n| (n.clone(), mode)).collect()
    }

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

    #[test]
    fn lock_tables_read_lets_readers_in_and_keeps_writers_out_until_unlock() {
        let m = MetadataLocks::default();
        m.try_acquire(1, &[(t("a"), Mode::ReadOnly)], true).unwrap();
        m.try_acquire(2, &[(t("a"), Mode::ReadOnly)], true).expect("two sessions may lock a table READ");
        m.try_shared(3, &[t("a")]).expect("a reader goes on");
        assert_eq!(m.try_acquire(4, &[(t("a"), Mode::Write)], false), Err(t("a")), "a writer waits");
        m.release_all(1);
        m.release_all(2);
        assert!(m.try_acquire(4, &[(t("a"), Mode::Write)], false).is_err(), "a statement's end keeps LOCK TABLES locks");
        m.release_explicit(1);
        m.release_explicit(2);
        m.try_acquire(4, &[(t("a"), Mode::Write)], false).unwrap();
    }

    #[test]
    fn lock_tables_write_keeps_everyone_else_out_and_its_holder_may_alter() {
        let m = MetadataLocks::default();
        m.try_acquire(1, &[(t("a"), Mode::NoReadWrite)], true).unwrap();
        assert!(m.try_shared(2, &[t("a")]).is_err());
        assert!(m.try_acquire(3, &[(t("a"), Mode::ReadOnly)], true).is_err());
        m.try_exclusive(1, &[t("a")]).expect("the holder's own DDL");
        m.release_all(1);
        let rows = m.rows();
        assert!(rows.iter().any(|r| r.connection_id == 1 && r.mode == Mode::NoReadWrite && r.explicit && r.granted));
        assert!(rows.iter().any(|r| r.connection_id == 2 && r.mode == Mode::Read && !r.granted), "{rows:?}");
        m.withdraw(2);
        m.withdraw(3);
        m.release_explicit(1);
        assert!(m.rows().is_empty());
    }

    #[test]
    fn a_waiting_lock_tables_read_holds_new_writers_back_but_not_readers() {
        let m = MetadataLocks::default();
        m.try_acquire(1, &[(t("a"), Mode::Write)], false).unwrap();
        assert!(m.try_acquire(2, &[(t("a"), Mode::ReadOnly)], true).is_err());
        m.try_shared(3, &[t("a")]).expect("readers pass a waiting READ lock");
        assert!(m.try_acquire(4, &[(t("a"), Mode::Write)], false).is_err(), "new writers queue behind it");
    }
}
