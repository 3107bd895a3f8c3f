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

pub mod check_constraints;
pub mod checkpoint;
pub mod ddl;
pub mod dml;
pub mod durability;
pub mod file_sink;
pub mod innodb_status;
pub mod performance_schema;
pub mod schema_constraints;
pub mod schema_server;
pub mod session;
pub mod show;
pub mod view_ddl;
pub mod view_writes;

pub use engine::Engine;
pub use quill_sql_context::{
    accounts, catalog, commit_acks, commit_notify, engine, foreign_keys, interrupt, locking, mdl, privileges, replica_control, schema_history, server_uuid,
    session_info, slow_log, statement_waits, tmp_memory, vars, view_meta, write_log,
};
pub use quill_sql_frontend::{account_statements, alter_options, dialect, into_file, load_data, parse, replica_statements, table_lock_statements, text, words};
pub use quill_sql_query::{
    aggregate, bind, cost, cte, explain, expr, functions, hash_join, join_order, query, sink, system_tables, type_aggregation, views, window,
};
pub use quill_sql_types::{SERVER_VERSION, SqlError, Warning, charset, error, ident, json, like, ops, regexp, time_zone, types};
pub use session::{CreateRows, Outcome, Session};
