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
use std::sync::Arc;
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
type Grant = oneshot::Receiver<()>;

/// One queued request: its connection, its ticket (unique per request) and where its grant
/// goes.
#[derive(Debug)]
struct Queued {
    session: u32,
    ticket: u64,
    grant: oneshot::Sender<()>,
}

#[derive(Debug)]
struct Held {
    shown: String,
    owner: u32,
    count: u64,
    queue: VecDeque<Queued>,
}

#[derive(Debug, Default)]
struct State {
    locks: HashMap<String, Held>,
    /// The key and ticket of each connection's queued request (one at most).
    waiting: HashMap<u32, (String, u64)>,
    next_ticket: u64,
}

impl State {
    /// Takes one off `key`'s count; at zero, hands it to the first live waiter, or drops it.
    fn release_one(&mut self, key: &str) {
        let Some(held) = self.locks.get_mut(key) else { return };
        held.count -= 1;
        if held.count > 0 {
            return;
        }
        while let Some(q) = held.queue.pop_front() {
            if self.waiting.get(&q.session).is_some_and(|(k, t)| k == key && *t == q.ticket) {
                self.waiting.remove(&q.session);
            }
            if q.grant.send(()).is_ok() {
                held.owner = q.session;
                held.count = 1;
                return;
            }
        }
        self.locks.remove(key);
    }

    /// Takes `session`'s queued request out of its queue, if it has one.
    fn withdraw(&mut self, session: u32) -> bool {
        let Some((key, ticket)) = self.waiting.remove(&session) else { return false };
        if let Some(held) = self.locks.get_mut(&key) {
            held.queue.retain(|q| q.ticket != ticket);
        }
        true
    }
}

/// A queued `GET_LOCK` (`sql::statement_waits`). It settles itself: dropped before the caller
/// settled it ([`Wait::granted`], [`Wait::give_up`]), it takes its request back, or gives
/// back the lock it was handed meanwhile, so no request or lock outlives its wait.
#[derive(Debug)]
pub struct Wait {
    pub name: LockName,
    /// None: for ever (a negative timeout).
    pub deadline: Option<Instant>,
    grant: Grant,
    locks: Arc<UserLocks>,
    session: u32,
    settled: bool,
}

impl Wait {
    /// Waits until the lock is handed to this request; then the connection holds it.
    pub async fn granted(&mut self) {
        // The sender goes only by sending or by `withdraw`, which only this wait calls.
        let _ = (&mut self.grant).await;
        self.settled = true;
    }

    /// Gives the wait up (its timeout, a KILL): true when the lock had been handed to it
    /// meanwhile, and `keep` says whether the connection keeps it then.
    pub fn give_up(&mut self, keep: bool) -> bool {
        self.settled = true;
        self.locks.state.lock().withdraw(self.session);
        // Under the mutex a releaser either found the request (and sent) or not: after the
        // withdrawal, the channel tells which.
        let granted = self.grant.try_recv().is_ok();
        if granted && !keep {
            self.locks.release(self.session, &self.name);
        }
        granted
    }
}

impl Drop for Wait {
    fn drop(&mut self) {
        if !self.settled {
            self.give_up(false);
        }
    }
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
    /// busy); granted already when it was freed in between. A request the connection still
    /// had queued is taken back first.
    ///
    /// # Errors
    /// [`Deadlock`] when waiting would close a cycle of waits.
    pub fn enqueue(self: &Arc<Self>, session: u32, name: &LockName, deadline: Option<Instant>) -> Result<Wait, Deadlock> {
        let mut state = self.state.lock();
        state.withdraw(session);
        let (tx, rx) = oneshot::channel();
        let wait = |grant| Wait { name: name.clone(), deadline, grant, locks: Arc::clone(self), session, settled: false };
        let Some(held) = state.locks.get(&name.key) else {
            // Freed since: take it.
            state.locks.insert(name.key.clone(), Held { shown: name.shown.clone(), owner: session, count: 1, queue: VecDeque::new() });
            let _ = tx.send(());
            return Ok(wait(rx));
        };
        // Follow owner -> the lock it waits for -> that lock's owner..., at most once per
        // waiting connection.
        let mut owner = held.owner;
        for _ in 0..=state.waiting.len() {
            if owner == session {
                return Err(Deadlock);
            }
            match state.waiting.get(&owner).and_then(|(key, _)| state.locks.get(key)) {
                Some(next) => owner = next.owner,
                None => break,
            }
        }
        state.next_ticket += 1;
        let ticket = state.next_ticket;
        state.locks.get_mut(&name.key).expect("looked up above").queue.push_back(Queued { session, ticket, grant: tx });
        state.waiting.insert(session, (name.key.clone(), ticket));
        Ok(wait(rx))
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
        state.withdraw(session);
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
            rows.extend(held.queue.iter().map(|q| UserLockRow { name: held.shown.clone(), connection_id: q.session, granted: false }));
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
    fn a_freed_lock_goes_to_the_first_waiter_and_given_up_waits_are_skipped() {
        let locks = Arc::new(UserLocks::default());
        locks.try_get(1, &name("a"));
        let mut second = locks.enqueue(2, &name("a"), None).unwrap();
        let third = locks.enqueue(3, &name("a"), None).unwrap();
        let mut fourth = locks.enqueue(4, &name("a"), None).unwrap();
        assert_eq!(locks.try_get(5, &name("a")), Get::Busy, "a newcomer does not overtake");
        assert_eq!(locks.release(1, &name("a")), Some(true));
        assert!(second.give_up(true), "handed to the first waiter, who keeps it");
        assert_eq!(locks.owner(&name("a")), Some(2));
        drop(third);
        assert_eq!(locks.release_all(2), 1);
        assert!(fourth.give_up(true), "the third gave up: the fourth is next");
        assert_eq!(locks.owner(&name("a")), Some(4));
        assert_eq!(locks.rows().len(), 1);
    }

    #[test]
    fn a_wait_dropped_unsettled_gives_back_what_it_was_handed() {
        let locks = Arc::new(UserLocks::default());
        locks.try_get(1, &name("a"));
        let waiting = locks.enqueue(2, &name("a"), None).unwrap();
        locks.release(1, &name("a"));
        assert_eq!(locks.owner(&name("a")), Some(2));
        drop(waiting);
        assert_eq!(locks.owner(&name("a")), None, "nobody holds a lock its waiter never learned of");
    }

    #[test]
    fn a_second_request_replaces_the_first_and_a_timeout_is_told_by_the_channel() {
        let locks = Arc::new(UserLocks::default());
        locks.try_get(1, &name("a"));
        let mut stale = locks.enqueue(2, &name("a"), None).unwrap();
        let mut third = locks.enqueue(3, &name("a"), None).unwrap();
        let mut fresh = locks.enqueue(2, &name("a"), None).unwrap();
        locks.release(1, &name("a"));
        assert!(third.give_up(true), "the stale request was withdrawn: the third is first");
        assert!(!fresh.give_up(true), "the fresh request timed out while the third holds it");
        assert!(!stale.give_up(true));
        assert_eq!(locks.owner(&name("a")), Some(3));
        assert!(locks.rows().iter().all(|r| r.granted), "no request left queued");
    }

    #[test]
    fn a_wait_that_closes_a_cycle_is_refused() {
        let locks = Arc::new(UserLocks::default());
        locks.try_get(1, &name("a"));
        locks.try_get(2, &name("b"));
        locks.try_get(3, &name("c"));
        let mut one = locks.enqueue(1, &name("b"), None).unwrap();
        let _two = locks.enqueue(2, &name("c"), None).unwrap();
        assert_eq!(locks.enqueue(3, &name("a"), None).unwrap_err(), Deadlock);
        assert!(!one.give_up(true));
        let _three = locks.enqueue(3, &name("a"), None).unwrap();
    }

    #[test]
    fn release_all_counts_every_hold_and_withdraws_the_wait() {
        let locks = Arc::new(UserLocks::default());
        locks.try_get(1, &name("a"));
        locks.try_get(1, &name("a"));
        locks.try_get(1, &name("b"));
        locks.try_get(2, &name("c"));
        let _w = locks.enqueue(1, &name("c"), None).unwrap();
        assert_eq!(locks.release_all(1), 3);
        assert_eq!(locks.rows(), vec![UserLockRow { name: "c".into(), connection_id: 2, granted: true }]);
    }
}
