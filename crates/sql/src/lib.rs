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

// Statements and the session: what other crates need is public, the rest is this crate's.
mod check_constraints;
pub mod checkpoint;
mod ddl;
mod dml;
pub mod durability;
mod file_sink;
mod innodb_status;
mod keywords;
mod performance_schema;
mod program_run;
mod routine_ddl;
mod schema_constraints;
mod schema_server;
mod schema_storage;
pub mod session;
mod show;
mod stored_functions;
mod trigger_ddl;
mod triggers;
mod view_ddl;
mod view_writes;

pub use engine::Engine;
pub use session::{CreateRows, Outcome, Session};

// The layers below, as the server, replication and the simulator reach them through this crate.
pub use quill_sql_context::{accounts, catalog, commit_acks, engine, replica_control, schema_history, server_uuid, slow_log, vars};
pub use quill_sql_frontend::{parse, replica_statements};
pub use quill_sql_query::{query, sink};
pub use quill_sql_types::{SERVER_VERSION, SqlError, Warning, charset, error, ident, ops, types};

// The rest of the layers below, under the names this crate's modules use (`crate::bind`, ...).
use quill_sql_context::{foreign_keys, interrupt, locking, mdl, program_meta, session_info, statement_waits, tmp_memory, view_meta, write_log};
use quill_sql_frontend::{account_statements, alter_options, dialect, into_file, load_data, show_statements, table_lock_statements, text, words};
use quill_sql_query::{bind, cost, cte, explain, expr, functions, system_tables, views};
use quill_sql_types::like;
