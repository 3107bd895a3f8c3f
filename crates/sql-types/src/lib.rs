//! The SQL layer's ground floor: errors and their MySQL codes, SQL types and value
//! conversion, value operations, time zones, character sets, `LIKE` and `REGEXP` matching,
//! and JSON values.
//!
//! Everything here is a pure function of its arguments: no engine state, no session, no
//! catalog. The layers above (`quill-sql-frontend`, `quill-sql-context`, `quill-sql-query`,
//! `quill-sql`) build on it; it builds only on `quill-storage` (for `Value`, `Decimal` and
//! `Collation`) and `sqlparser`'s type AST.

pub mod charset;
pub mod error;
pub mod ident;
pub mod json;
pub mod like;
pub mod ops;
pub mod privileges;
pub mod regexp;
pub mod time_zone;
pub mod types;

pub use error::{Result, SqlError, Wait, Warning};

/// The version string Quill presents (MySQL 8 compatible).
pub const SERVER_VERSION: &str = concat!("8.0.40-quill-", env!("CARGO_PKG_VERSION"));
