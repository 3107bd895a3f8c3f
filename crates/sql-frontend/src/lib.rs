//! From the bytes a client sends to statements the layers above can act on: the text
//! splitter (`text`), the dialect and parser wrapper (`dialect`, `parse`), and every grammar
//! Quill reads beside `sqlparser`: table options in ALTER TABLE (`alter_options`), LOAD DATA
//! (`load_data`), the INTO clauses of a SELECT (`into_file`), account statements
//! (`account_statements`), replica statements (`replica_statements`), SHOW
//! (`show_statements`), LOCK TABLES (`table_lock_statements`), parenthesized table lists
//! in FROM (`table_lists`), the rows of a bulk INSERT
//! (`values_rows`), and the words the session's recognisers read (`words`).
//!
//! Nothing here reads engine or session state: a grammar gets text (and the session's
//! lexing options) and returns a syntax tree or an error. It builds only on
//! `quill-sql-types`.

pub mod account_statements;
pub mod alter_options;
pub mod compound;
pub mod dialect;
pub mod into_file;
pub mod load_data;
pub mod parse;
pub mod program;
pub mod program_ddl;
pub mod replica_statements;
pub mod show_statements;
pub mod table_lists;
pub mod table_lock_statements;
pub mod text;
pub mod values_rows;
pub mod words;
