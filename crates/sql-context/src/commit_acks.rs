//! Commit acknowledgements beyond durability: what a statement's reply waits for after its
//! commit (or the newest commit it read) is durable, when replicas must have it too
//! (semi-synchronous replication).
//!
//! The replication layer above implements [`CommitAcks`] and attaches it to the engine
//! (`Engine::commit_acks`); `Session::wait_until_durable` calls it after the log's own wait.
//! Without it, durability is the whole wait. Invariant: the wait ends, one way or another,
//! within the bound the implementation documents (semi-sync's `rpl_semi_sync_source_timeout`).

use std::future::Future;
use std::pin::Pin;

use quill_log::Lsn;

/// Why a reply waits: the session's own commit, or a read of another's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckWait {
    /// The session committed a transaction ending at the LSN.
    Commit,
    /// The session read rows the newest commit, ending at the LSN, may have written.
    Read,
}

/// The replication layer's acknowledgements, as the SQL layer waits for them.
pub trait CommitAcks: std::any::Any + Send + Sync {
    /// Waits until as many replicas as asked have the log up to `end`, or until the wait
    /// gives up (and says so in its status).
    fn wait(&self, end: Lsn, why: AckWait) -> Pin<Box<dyn Future<Output = ()> + Send + '_>>;
    /// Whether a statement that read what a commit ending at `end` may have written must wait
    /// for its acknowledgement before it answers (semi-sync at AFTER_SYNC, not acknowledged
    /// yet); cheap enough to ask at every read.
    fn read_must_wait(&self, end: Lsn) -> bool;
    /// A global variable of the implementation's changed (`SET GLOBAL`): read them again.
    fn reload(&self);
    /// Status variables for SHOW STATUS: name and value.
    fn status(&self) -> Vec<(&'static str, String)>;
}
