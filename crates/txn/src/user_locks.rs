//! User-level (advisory) locks: the table behind `GET_LOCK`, `RELEASE_LOCK`,
//! `RELEASE_ALL_LOCKS`, `IS_FREE_LOCK` and `IS_USED_LOCK`, with MySQL 8's semantics
//! (`docs/user-locks.md`).
//!
//! - A lock is a name, exclusive, held by one connection at a time. Names are compared
//!   without regard to case (MySQL folds them to lower case); the SQL layer checks them (1 to
//!   [`USER_LOCK_NAME_CHARS_MAX`] characters) before they reach here.
//! - A connection may hold many locks, and the same lock many times: each `GET_LOCK` adds
//!   one to its count, each `RELEASE_LOCK` takes one off, and the lock is free when the count
//!   is zero. Locks belong to the connection, not the transaction: COMMIT and ROLLBACK keep
//!   them; the end of the connection (a KILL included) releases them all.
//! - Waiters queue in arrival order and the lock passes to the first of them the moment it is
//!   freed (FIFO: a lock is never free while anyone waits, so a newcomer never overtakes
//!   one who waited).
//! - A request that would close a cycle of connections each waiting for a lock the next
//!   holds is refused at once ([`Deadlock`], the SQL layer's 3058): the requester is the
//!   victim.
//!
//! The table is server-wide, under one mutex held only for map updates. Invariants: a
//! lock's entry exists while it is held (count at least 1); every queued waiter appears in
//! `waiting` under the key it waits for, and nowhere else. A waiter is a oneshot channel the
//! releasing connection sends the grant on; a waiter that went away (its future dropped) is
//! skipped. Bounds: one entry per distinct name held, one queued request per connection
//! (a connection evaluates one statement at a time), so both are bounded by
//! `max_connections` times the locks a connection takes.
//!
//! Where it sits: in `txn`, beside the row lock manager; the SQL layer evaluates the
//! functions (`sql::functions`) and does the waiting (`sql::statement_waits`).

use std::collections::{HashMap, VecDeque};
use std::time::Instant;

use parking_lot::Mutex;
use tokio::sync::oneshot;

/// The longest lock name, in characters (MySQL's `NAME_CHAR_LEN`).
pub const USER_LOCK_NAME_CHARS_MAX: usize = 64;

/// A lock name as the table keys it (lower case) and as the user spelt it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockName {
    pub key: String,
    pub shown: String,
}

impl LockName {
    /// `name` as the table keys it: folded to lower case.
    #[must_use]
    pub fn new(name: &str) -> LockName {
        LockName { key: name.to_lowercase(), shown: name.to_owned() }
    }
}

/// A wait that would close a cycle of waits for user-level locks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadlock;

/// What asking for a lock found.
#[derive(Debug, PartialEq, Eq)]
pub enum Get {
    /// Taken (or taken once more).
    Granted,
    /// Held by another connection.
    Busy,
}

/// A queued request: resolves when the lock is handed to it.
pub type Grant = oneshot::Receiver<()>;

#[derive(Debug)]
struct Held {
    shown: String,
    owner: u32,
    count: u64,
    queue: VecDeque<(u32, oneshot::Sender<()>)>,
}

#[derive(Debug, Default)]
struct State {
    locks: HashMap<String, Held>,
    /// The key each queued connection waits for.
    waiting: HashMap<u32, String>,
}

impl State {
    /// Takes one off `key`'s count; at zero, hands it to the first live waiter, or drops it.
    fn release_one(&mut self, key: &str) {
        let Some(held) = self.locks.get_mut(key) else { return };
        held.count -= 1;
        if held.count > 0 {
            return;
        }
        while let Some((session, grant)) = held.queue.pop_front() {
            self.waiting.remove(&session);
            if grant.send(()).is_ok() {
                held.owner = session;
                held.count = 1;
                return;
            }
        }
        self.locks.remove(key);
    }
}

/// A queued `GET_LOCK` (`statement_waits`).
#[derive(Debug)]
pub struct Wait {
    pub name: LockName,
    /// None: for ever (a negative timeout).
    pub deadline: Option<Instant>,
    pub grant: Grant,
}

/// One row of `performance_schema.metadata_locks` for a user-level lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserLockRow {
    pub name: String,
    pub connection_id: u32,
    pub granted: bool,
}

/// The server's user-level locks.
#[derive(Debug, Default)]
pub struct UserLocks {
    state: Mutex<State>,
}

impl UserLocks {
    /// Takes `name` for `session` if it is free or already the session's.
    pub fn try_get(&self, session: u32, name: &LockName) -> Get {
        let mut state = self.state.lock();
        match state.locks.get_mut(&name.key) {
            Some(held) if held.owner == session => {
                held.count += 1;
                Get::Granted
            }
            Some(_) => Get::Busy,
            None => {
                state.locks.insert(name.key.clone(), Held { shown: name.shown.clone(), owner: session, count: 1, queue: VecDeque::new() });
                Get::Granted
            }
        }
    }

    /// Queues `session` for `name`, held by another (after [`UserLocks::try_get`] found it
    /// busy); granted already when it was freed in between.
    ///
    /// # Errors
    /// [`Deadlock`] when waiting would close a cycle of waits.
    pub fn enqueue(&self, session: u32, name: &LockName) -> Result<Grant, Deadlock> {
        let mut state = self.state.lock();
        let (tx, rx) = oneshot::channel();
        let Some(held) = state.locks.get(&name.key) else {
            // Freed since: take it.
            state.locks.insert(name.key.clone(), Held { shown: name.shown.clone(), owner: session, count: 1, queue: VecDeque::new() });
            let _ = tx.send(());
            return Ok(rx);
        };
        // Follow owner -> the lock it waits for -> that lock's owner..., at most once per
        // waiting connection.
        let mut owner = held.owner;
        for _ in 0..=state.waiting.len() {
            if owner == session {
                return Err(Deadlock);
            }
            match state.waiting.get(&owner).and_then(|key| state.locks.get(key)) {
                Some(next) => owner = next.owner,
                None => break,
            }
        }
        state.locks.get_mut(&name.key).expect("looked up above").queue.push_back((session, tx));
        state.waiting.insert(session, name.key.clone());
        Ok(rx)
    }

    /// Takes `session`'s queued request for `name` back (a timeout, a KILL); false when it
    /// was no longer queued because the lock had been handed to it.
    pub fn withdraw(&self, session: u32, name: &LockName) -> bool {
        let mut state = self.state.lock();
        if state.waiting.get(&session) != Some(&name.key) {
            return false;
        }
        state.waiting.remove(&session);
        if let Some(held) = state.locks.get_mut(&name.key) {
            held.queue.retain(|(s, _)| *s != session);
        }
        true
    }

    /// `RELEASE_LOCK`: `Some(true)` released once, `Some(false)` held by another
    /// connection, `None` no such lock.
    pub fn release(&self, session: u32, name: &LockName) -> Option<bool> {
        let mut state = self.state.lock();
        let owner = state.locks.get(&name.key)?.owner;
        if owner != session {
            return Some(false);
        }
        state.release_one(&name.key);
        Some(true)
    }

    /// `RELEASE_ALL_LOCKS`, and the end of a connection: releases every lock `session`
    /// holds, as many times as it holds each, and withdraws its queued request; answers how
    /// many times in all.
    pub fn release_all(&self, session: u32) -> u64 {
        let mut state = self.state.lock();
        if let Some(key) = state.waiting.remove(&session)
            && let Some(held) = state.locks.get_mut(&key)
        {
            held.queue.retain(|(s, _)| *s != session);
        }
        let mine: Vec<(String, u64)> = state.locks.iter().filter(|(_, h)| h.owner == session).map(|(k, h)| (k.clone(), h.count)).collect();
        let mut released = 0;
        for (key, count) in mine {
            released += count;
            if let Some(held) = state.locks.get_mut(&key) {
                held.count = 1;
            }
            state.release_one(&key);
        }
        released
    }

    /// The connection holding `name`, if any (`IS_USED_LOCK`; `IS_FREE_LOCK` is its
    /// absence).
    pub fn owner(&self, name: &LockName) -> Option<u32> {
        self.state.lock().locks.get(&name.key).map(|h| h.owner)
    }

    /// Every held lock and every queued request.
    pub fn rows(&self) -> Vec<UserLockRow> {
        let state = self.state.lock();
        let mut rows = Vec::new();
        for held in state.locks.values() {
            rows.push(UserLockRow { name: held.shown.clone(), connection_id: held.owner, granted: true });
            rows.extend(held.queue.iter().map(|(s, _)| UserLockRow { name: held.shown.clone(), connection_id: *s, granted: false }));
        }
        rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(n: &str) -> LockName {
        LockName::new(n)
    }

    #[test]
    fn names_fold_case() {
        assert_eq!(name("Jobs").key, "jobs");
        assert_eq!(name("Jobs").shown, "Jobs");
    }

    #[test]
    fn counts_are_reentrant_and_release_answers_as_mysql() {
        let locks = UserLocks::default();
        assert_eq!(locks.try_get(1, &name("a")), Get::Granted);
        assert_eq!(locks.try_get(1, &name("A")), Get::Granted);
        assert_eq!(locks.try_get(2, &name("a")), Get::Busy);
        assert_eq!(locks.release(2, &name("a")), Some(false));
        assert_eq!(locks.release(1, &name("a")), Some(true));
        assert_eq!(locks.owner(&name("a")), Some(1), "held twice, released once");
        assert_eq!(locks.release(1, &name("a")), Some(true));
        assert_eq!(locks.release(1, &name("a")), None);
        assert_eq!(locks.owner(&name("a")), None);
    }

    #[test]
    fn a_freed_lock_goes_to_the_first_waiter_and_gone_waiters_are_skipped() {
        let locks = UserLocks::default();
        locks.try_get(1, &name("a"));
        let mut second = locks.enqueue(2, &name("a")).unwrap();
        let third = locks.enqueue(3, &name("a")).unwrap();
        let mut fourth = locks.enqueue(4, &name("a")).unwrap();
        assert_eq!(locks.try_get(5, &name("a")), Get::Busy, "a newcomer does not overtake");
        assert_eq!(locks.release(1, &name("a")), Some(true));
        assert!(second.try_recv().is_ok());
        assert_eq!(locks.owner(&name("a")), Some(2));
        drop(third);
        assert_eq!(locks.release_all(2), 1);
        assert!(fourth.try_recv().is_ok(), "the third went away: the fourth is next");
        assert_eq!(locks.owner(&name("a")), Some(4));
        assert_eq!(locks.rows().len(), 1);
    }

    #[test]
    fn a_wait_that_closes_a_cycle_is_refused_with_3058() {
        let locks = UserLocks::default();
        locks.try_get(1, &name("a"));
        locks.try_get(2, &name("b"));
        locks.try_get(3, &name("c"));
        let _one = locks.enqueue(1, &name("b")).unwrap();
        let _two = locks.enqueue(2, &name("c")).unwrap();
        assert_eq!(locks.enqueue(3, &name("a")).unwrap_err(), Deadlock);
        assert!(locks.withdraw(1, &name("b")));
        assert!(!locks.withdraw(1, &name("b")));
        let _three = locks.enqueue(3, &name("a")).unwrap();
    }

    #[test]
    fn release_all_counts_every_hold_and_withdraws_the_wait() {
        let locks = UserLocks::default();
        locks.try_get(1, &name("a"));
        locks.try_get(1, &name("a"));
        locks.try_get(1, &name("b"));
        locks.try_get(2, &name("c"));
        let _w = locks.enqueue(1, &name("c")).unwrap();
        assert_eq!(locks.release_all(1), 3);
        assert_eq!(locks.rows(), vec![UserLockRow { name: "c".into(), connection_id: 2, granted: true }]);
    }
}
