//! Result rows sent as they are produced: the seam between the executor and a client
//! connection, so a large result never sits whole in the server's memory. The same seam
//! carries a `LOAD DATA LOCAL` file the other way ([`RowSink::read_local_file`]).
//!
//! A connection lends its session a [`RowSink`] for one command (`Session::row_sink`). A
//! plain (non-locking) SELECT that is its command's first statement then hands its columns
//! and each row to the sink as the executor produces them, and answers
//! `Outcome::Streamed`; the connection writes the end of the result set after it. The sink
//! encodes rows into its packet buffer and writes the buffer to the socket whenever it
//! passes its bound, so a result's memory is one buffer, whatever its size.
//!
//! Locking reads are not streamed: a lock wait re-runs the statement from its start, which
//! must not send rows twice. Nor are later statements of a multi-statement command, whose
//! replies must follow the earlier ones. Those build their result as before.
//!
//! Durability: a reader is never answered with data a crash could still lose. The sink is
//! told, at `begin`, the log position the newest commit the statement could see ends at; it
//! waits for that before its first write to the socket.

use quill_log::{FlushMode, Lsn};
use quill_storage::Value;

use crate::query::OutColumn;
use quill_sql_types::error::Result;

/// The largest file `LOAD DATA` reads, LOCAL or from the server's disk: the whole file is
/// held while its rows are inserted.
pub const LOCAL_INFILE_BYTES_MAX: usize = 1 << 30;

/// Where a streamed result goes, and where `LOAD DATA LOCAL` reads the client's file from:
/// the connection's seam for one command.
pub trait RowSink: Send {
    /// The result's columns, before any row; `durable` is the log position (and flush
    /// mode) to wait for before anything reaches the client.
    ///
    /// # Errors
    /// The client cannot be written to; the statement stops.
    fn begin(&mut self, columns: &[OutColumn], durable: Option<(Lsn, FlushMode)>) -> Result<()>;

    /// One row, in the columns' order.
    ///
    /// # Errors
    /// The client cannot be written to (gone, or not reading within `net_write_timeout`);
    /// the statement stops.
    fn row(&mut self, row: &[Value]) -> Result<()>;

    /// `LOAD DATA LOCAL`: asks the client for the file `name` and reads what it sends, up to
    /// [`LOCAL_INFILE_BYTES_MAX`]. `None` when the client did not enable local files.
    ///
    /// # Errors
    /// The client is gone, stalls past `net_read_timeout`, or sends more than the bound (the
    /// rest is read and dropped, so the connection stays in step).
    fn read_local_file(&mut self, name: &str) -> Result<Option<Vec<u8>>>;

    /// Whether `begin` was called since the sink was lent: the reply has started.
    fn begun(&self) -> bool;

    /// Back to the connection's own type, once the command is done.
    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any>;
}
