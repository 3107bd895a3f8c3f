//! Quill's storage layer: values, key encoding, the handler API ([`handler::Handler`]) and
//! its first engine, the in-memory MVCC row store ([`table::Table`]).
//!
//! This is the lowest layer above the file system: it knows rows, versions and
//! indexes, and nothing of SQL text, sessions or locks-with-waiting. The `txn`
//! layer decides which [`table::ReadView`] a statement reads with and waits when a
//! write reports [`table::WriteError::Locked`]; the `sql` layer coerces values to
//! column types before they reach a [`table::Table`].

pub mod blocking;
pub mod buffer_pool;
pub mod chain;
pub mod checkpoint;
pub mod decimal;
pub mod format;
pub mod handler;
mod index_entry;
pub mod key;
pub mod leaf_map;
pub mod page;
pub mod page_file;
pub mod row;
pub mod table;
pub mod tablespace;
pub mod value;

pub use decimal::{Decimal, RoundingStrategy};
pub use format::{ColumnWidth, FixedLayout, RowFormat, decode_log_row, log_row};
pub use handler::{
    ChainCursor, DeferredEntries, Handler, IMAGE_BATCH_ROWS, ImageBatch, ImageCursor, ImageRef, Replaced, RowChange, RowCursor, ScanOrder, Statistics,
    WrittenRows,
};
pub use row::{decode_row, encode_row, row_bytes};
pub use table::{IndexDef, KeyPart, ReadView, Table, Timestamp, TxnId, WriteError};
pub use value::{Collation, Row, Value};
