//! The state statements run against, shared by the planner, the executor and the session:
//! the server-wide [`engine::Engine`] (catalog snapshot, commit order, status counters,
//! process list, commit log, accounts), the per-session [`session_info::SessionInfo`],
//! the catalog and its definitions, system variables, accounts and privileges, metadata
//! locks, the slow log, user-level and row locking requests, and the seams the replication
//! layer fills in.
//!
//! It builds on `quill-sql-types` and `quill-sql-frontend` below it and on the
//! transaction, storage and log crates; nothing here plans or runs a query.

pub mod accounts;
pub mod catalog;
pub mod commit_acks;
mod commit_notify;
pub mod engine;
pub mod foreign_keys;
pub mod interrupt;
pub mod locking;
pub mod mdl;
pub mod privileges;
pub mod program_meta;
pub mod replica_control;
pub mod schema_history;
pub mod server_uuid;
pub mod session_info;
pub mod slow_log;
pub mod statement_waits;
pub mod tmp_memory;
pub mod vars;
pub mod view_meta;
pub mod write_log;
