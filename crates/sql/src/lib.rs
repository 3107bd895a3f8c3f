//! Quill's SQL layer: parse, bind, plan and execute statements against the
//! catalog and the MVCC row store.
//!
//! One statement's path: [`session::Session::run`] splits the text and checks the
//! recogniser for forms the parser does not handle; otherwise `sqlparser` parses
//! it (a per-session cache keeps parsed text); `query::plan_query` binds names
//! (`bind`) and chooses access paths; `query::run_select` reads rows through a
//! `quill_storage::ReadView`; writes go through `dml`, which records every
//! version it pushes so a failed statement is undone alone; COMMIT
//! (`session::commit`) logs the transaction's changes, streaming a large one ahead,
//! and stamps its versions with a commit timestamp from `quill_txn`.

pub mod accounts;
pub mod aggregate;
pub mod bind;
pub mod catalog;
pub mod check_constraints;
pub mod checkpoint;
pub mod commit_acks;
pub mod commit_notify;
pub mod cost;
pub mod cte;
pub mod ddl;
pub mod dml;
pub mod durability;
pub mod explain;
pub mod expr;
pub mod foreign_keys;
pub mod functions;
pub mod hash_join;
pub mod innodb_status;
pub mod join_order;
pub mod lock_tables;
pub mod locking;
pub mod mdl;
pub mod outfile;
pub mod query;
pub mod replica_control;
pub mod schema_constraints;
pub mod schema_history;
pub mod schema_server;
pub mod server_uuid;
pub mod session;
pub mod show;
pub mod sink;
pub mod slow_log;
pub mod statement_waits;
pub mod tmp_memory;
pub mod type_aggregation;
pub mod vars;
pub mod view_writes;
pub mod views;
pub mod window;
pub mod write_log;

pub use quill_sql_frontend::{alter_options, dialect, into_file, load_data, parse, text, words};
pub use quill_sql_types::{SqlError, Warning, charset, error, json, like, ops, regexp, time_zone, types};
pub use session::{CreateRows, Engine, Outcome, Session};

/// The version string Quill presents (MySQL 8 compatible).
pub const SERVER_VERSION: &str = concat!("8.0.40-quill-", env!("CARGO_PKG_VERSION"));
