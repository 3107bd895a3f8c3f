//! `SELECT ... INTO OUTFILE` and `INTO DUMPFILE`: MySQL's rules for writing a result as a
//! file `LOAD DATA` reads back (the clause itself is read by `quill_sql_frontend::into_file`).
//!
//! [`FileSink`] takes the result's rows through the row-sink seam, as a client connection
//! would, and writes each as MySQL's `select_export` does:
//! - a line is `LINES STARTING BY`, the fields joined by `FIELDS TERMINATED BY`, then
//!   `LINES TERMINATED BY` (the field terminator when that is empty);
//! - NULL is the escape character and `N`, or the word `NULL` when there is no escape
//!   character; it is never enclosed;
//! - with `ENCLOSED BY`, every other field is enclosed; with `OPTIONALLY ENCLOSED BY`, only
//!   fields of a type that is not a number;
//! - with an escape character, each byte that is the escape character, the enclosing
//!   character (or, without one, the field terminator's first byte), the line terminator's
//!   first byte, or NUL, is written after the escape character (NUL as `0`).
//!
//! `INTO DUMPFILE` writes the one row's values back to back, with nothing added; a result of
//! more rows is 1172. Values are written as the text protocol sends them, text in the
//! clause's `CHARACTER SET` (utf8mb4 when none is given). Where it sits: in `quill-sql`, below the
//! session (`session::outfile`), which checks the path and runs the query.

use std::io::Write;

use quill_log::{FlushMode, Lsn};
use quill_storage::Value;

use crate::charset::Charset;
use crate::error::{Result, SqlError, codes};
use crate::into_file::Kind;
use crate::load_data::{self, Format};
use crate::query::OutColumn;
use crate::sink::RowSink;
use crate::types::SqlType;

/// Bytes gathered before each write to the file.
pub const FILE_BUFFER_BYTES: usize = 64 << 10;

/// Writes a result's rows into a file, as a row sink (see the module doc).
pub struct FileSink {
    file: std::fs::File,
    kind: Kind,
    format: Format,
    charset: Charset,
    types: Vec<SqlType>,
    buffer: Vec<u8>,
    /// Rows written so far.
    pub rows: u64,
}

impl FileSink {
    #[must_use]
    pub fn new(file: std::fs::File, kind: Kind, mut format: Format, charset: Charset) -> FileSink {
        if format.lines_terminated.is_empty() {
            format.lines_terminated.clone_from(&format.fields_terminated);
        }
        FileSink { file, kind, format, charset, types: Vec::new(), buffer: Vec::with_capacity(FILE_BUFFER_BYTES), rows: 0 }
    }

    /// Writes what is buffered and makes sure the file has it.
    ///
    /// # Errors
    /// The file cannot be written (3, as MySQL's "Error writing file").
    pub fn finish(&mut self) -> Result<()> {
        self.flush()?;
        self.file.flush().map_err(write_error)
    }

    fn flush(&mut self) -> Result<()> {
        self.file.write_all(&self.buffer).map_err(write_error)?;
        self.buffer.clear();
        Ok(())
    }

    /// Appends one line to the buffer. In the fixed-row format ([`Format::is_fixed`]) each
    /// value is padded with spaces to its column's display width, and NULL is all spaces.
    fn outfile_row(&mut self, row: &[Value]) {
        let f = &self.format;
        let fixed = f.is_fixed();
        let line = &mut self.buffer;
        line.extend_from_slice(&f.lines_starting);
        for (i, (v, ty)) in row.iter().zip(&self.types).enumerate() {
            if i > 0 {
                line.extend_from_slice(&f.fields_terminated);
            }
            let width = if fixed { ty.display_length() as usize } else { 0 };
            let Some(bytes) = text(self.charset, v, ty) else {
                match f.escaped {
                    _ if fixed => line.resize(line.len() + width, b' '),
                    Some(e) => line.extend_from_slice(&[e, b'N']),
                    None => line.extend_from_slice(b"NULL"),
                }
                continue;
            };
            // The padding counts the value's own bytes, not its escapes (as MySQL).
            let padding = width.saturating_sub(bytes.len());
            let enclose = f.enclosed.filter(|_| !f.optionally || !ty.is_numeric());
            line.extend(enclose);
            match f.escaped {
                Some(escape) => {
                    let special = f.enclosed.or_else(|| f.fields_terminated.first().copied());
                    let line_end = f.lines_terminated.first().copied();
                    for &b in bytes.iter() {
                        if b == escape || Some(b) == special || Some(b) == line_end || b == 0 {
                            line.push(escape);
                            line.push(if b == 0 { b'0' } else { b });
                        } else {
                            line.push(b);
                        }
                    }
                }
                None => line.extend_from_slice(&bytes),
            }
            line.extend(enclose);
            line.resize(line.len() + padding, b' ');
        }
        line.extend_from_slice(&f.lines_terminated);
    }
}

/// A value's bytes in the file, as the text protocol would send them; text in `charset`.
fn text<'v>(charset: Charset, v: &'v Value, ty: &SqlType) -> Option<std::borrow::Cow<'v, [u8]>> {
    match v {
        Value::Str(s) => Some(charset.encode(s)),
        _ => crate::types::to_text(v, ty).map(std::borrow::Cow::Owned),
    }
}

fn write_error(e: std::io::Error) -> SqlError {
    SqlError::new(codes::EE_WRITE, format!("Error writing file (OS errno {} - {e})", e.raw_os_error().unwrap_or(0)))
}

impl RowSink for FileSink {
    fn begin(&mut self, columns: &[OutColumn], _durable: Option<(Lsn, FlushMode)>) -> Result<()> {
        if self.kind == Kind::Outfile && self.format.is_fixed() && columns.iter().any(|c| matches!(c.ty, SqlType::Text { .. } | SqlType::Blob(_))) {
            return Err(load_data::blobs_and_no_terminated());
        }
        self.types = columns.iter().map(|c| c.ty.clone()).collect();
        Ok(())
    }

    fn row(&mut self, row: &[Value]) -> Result<()> {
        self.rows += 1;
        match self.kind {
            Kind::Dumpfile if self.rows > 1 => return Err(SqlError::new(codes::ER_TOO_MANY_ROWS, "Result consisted of more than one row")),
            Kind::Dumpfile => {
                for (v, ty) in row.iter().zip(&self.types) {
                    if let Some(bytes) = text(self.charset, v, ty) {
                        self.buffer.extend_from_slice(&bytes);
                    }
                }
            }
            Kind::Outfile => self.outfile_row(row),
        }
        if self.buffer.len() >= FILE_BUFFER_BYTES { self.flush() } else { Ok(()) }
    }

    fn read_local_file(&mut self, _name: &str) -> Result<Option<Vec<u8>>> {
        Ok(None)
    }

    fn begun(&self) -> bool {
        !self.types.is_empty()
    }

    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any> {
        self
    }
}
