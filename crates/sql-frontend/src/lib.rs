//! From the bytes a client sends to statements the layers above can act on: the text
//! splitter (`text`), the dialect and parser wrapper (`dialect`, `parse`), and the grammars
//! Quill reads beside `sqlparser` (`alter_options`, `load_data`, `words` for the
//! recognisers).
//!
//! Nothing here reads engine or session state: a grammar gets text (and the session's
//! lexing options) and returns a syntax tree or an error. It builds only on
//! `quill-sql-types`.

pub mod alter_options;
pub mod dialect;
pub mod into_file;
pub mod load_data;
pub mod parse;
pub mod text;
pub mod words;
