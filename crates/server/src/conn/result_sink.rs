//! [`SocketSink`]: the connection's side of a streamed result (`quill_sql::sink`). The
//! session encodes each row into the reply's packet buffer as the executor produces it; once
//! the buffer holds [`SINK_FLUSH_BYTES`], it is written to the socket, so a result of any size
//! costs one buffer of memory. The connection lends its stream to the sink for one command
//! and takes it back after, together with the buffer, to which it adds the end of the
//! result set.
//!
//! Writing happens inside the statement, which runs synchronously on a runtime worker: a
//! flush leaves the worker (`tokio::task::block_in_place`) and drives the write there, each
//! write bounded by `net_write_timeout` as in MySQL. On a runtime without spare workers
//! (a current-thread runtime) the buffer simply grows, as a result built whole would.

use std::sync::Arc;
use std::time::Duration;

use quill_log::{FlushMode, Lsn};
use quill_protocol::binary::{BinaryValue, write_binary_row};
use quill_protocol::constants::ColumnType;
use quill_protocol::packet::MAX_PAYLOAD_LEN;
use quill_protocol::response;
use quill_protocol::{PacketDecoder, PacketWriter};
use quill_sql::charset::Charset;
use quill_sql::query::OutColumn;
use quill_sql::sink::LOCAL_INFILE_BYTES_MAX;
use quill_sql::sink::RowSink;
use quill_sql::types::SqlType;
use quill_sql::{Engine, SqlError};
use quill_storage::Value;
use tokio::io::AsyncReadExt;

use super::{Stream, column_def, row_cells, to_binary, write_all_timed};
use quill_sql::error::codes;

/// The first byte of the LOCAL INFILE request packet.
pub const LOCAL_INFILE_HEADER: u8 = 0xFB;
/// The reply buffer is written to the socket once it holds this many bytes.
pub const SINK_FLUSH_BYTES: usize = 256 << 10;

/// A streamed result on its way to one client.
pub struct SocketSink {
    /// The connection's stream, lent for the command.
    pub stream: Stream,
    /// The reply: what is not yet written.
    pub w: PacketWriter,
    caps: u32,
    binary: bool,
    /// `character_set_results`.
    results: Option<Charset>,
    /// The status flags of the metadata's EOF packet.
    status_flags: u16,
    write_timeout: Duration,
    /// `net_read_timeout`: how long a LOCAL file's next packet may take.
    read_timeout: Duration,
    engine: Arc<Engine>,
    types: Vec<SqlType>,
    column_types: Vec<ColumnType>,
    /// The log position to wait for before the first write (see `quill_sql::sink`).
    durable: Option<(Lsn, FlushMode)>,
    begun: bool,
    /// A write failed: the client is gone, and the connection closes.
    pub failed: bool,
}

impl SocketSink {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        stream: Stream,
        w: PacketWriter,
        caps: u32,
        binary: bool,
        results: Option<Charset>,
        status_flags: u16,
        write_timeout: Duration,
        read_timeout: Duration,
        engine: Arc<Engine>,
    ) -> SocketSink {
        SocketSink {
            stream,
            w,
            caps,
            binary,
            results,
            status_flags,
            write_timeout,
            read_timeout,
            engine,
            types: Vec::new(),
            column_types: Vec::new(),
            durable: None,
            begun: false,
            failed: false,
        }
    }

    /// Writes the buffer to the socket, after the durability the reply owes.
    fn flush(&mut self) -> Result<(), SqlError> {
        let multi_thread = tokio::runtime::Handle::try_current().is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
        if !multi_thread {
            return Ok(());
        }
        let bytes = self.w.take();
        let durable = self.durable.take();
        let (engine, stream, timeout) = (&self.engine, &mut self.stream, self.write_timeout);
        let written = tokio::task::block_in_place(|| {
            tokio::runtime::Handle::current().block_on(async {
                if let (Some((end, mode)), Some(log)) = (durable, engine.log.get()) {
                    log.wait(end, mode).await;
                }
                write_all_timed(stream, &bytes, timeout).await
            })
        });
        if written {
            Ok(())
        } else {
            self.failed = true;
            Err(SqlError::new(codes::ER_NET_ERROR_ON_WRITE, "Got an error writing communication packets"))
        }
    }
}

impl RowSink for SocketSink {
    fn begin(&mut self, columns: &[OutColumn], durable: Option<(Lsn, FlushMode)>) -> Result<(), SqlError> {
        let defs: Vec<_> = columns.iter().map(|c| column_def(c, self.results)).collect();
        self.column_types = defs.iter().map(|d| d.column_type).collect();
        self.types = columns.iter().map(|c| c.ty.clone()).collect();
        response::write_result_set_metadata(&mut self.w, self.caps, &defs, self.status_flags);
        self.durable = durable;
        self.begun = true;
        Ok(())
    }

    fn row(&mut self, row: &[Value]) -> Result<(), SqlError> {
        let types = self.types.iter();
        if self.binary {
            let cells = row_cells(row, types, self.results, BinaryValue::Bytes, to_binary);
            write_binary_row(&mut self.w, &self.column_types, &cells)
                .map_err(|_| SqlError::new(codes::ER_UNKNOWN_ERROR, "internal error encoding a binary row"))?;
        } else {
            let cells = row_cells(row, types, self.results, Some, quill_sql::types::to_text);
            let refs: Vec<Option<&[u8]>> = cells.iter().map(Option::as_deref).collect();
            response::write_text_row(&mut self.w, &refs);
        }
        if self.w.buf.len() >= SINK_FLUSH_BYTES { self.flush() } else { Ok(()) }
    }

    fn read_local_file(&mut self, name: &str) -> Result<Option<Vec<u8>>, SqlError> {
        if self.caps & quill_protocol::constants::capabilities::CLIENT_LOCAL_FILES == 0 {
            return Ok(None);
        }
        let gone = || SqlError::new(codes::ER_NET_READ_ERROR, "Got an error reading communication packets");
        // The request: 0xFB and the file name, in place of a result set.
        let mut request = vec![LOCAL_INFILE_HEADER];
        request.extend_from_slice(name.as_bytes());
        self.w.write_packet(&request);
        let seq = self.w.seq;
        let bytes = self.w.take();
        let (stream, write_timeout, read_timeout) = (&mut self.stream, self.write_timeout, self.read_timeout);
        let read = tokio::task::block_in_place(|| {
            tokio::runtime::Handle::current().block_on(async {
                if !write_all_timed(stream, &bytes, write_timeout).await {
                    return Err(gone());
                }
                let mut decoder = PacketDecoder::new(MAX_PAYLOAD_LEN);
                decoder.set_expected_seq(seq);
                let (mut file, mut too_big, mut buf) = (Vec::new(), false, vec![0_u8; 64 << 10]);
                loop {
                    while let Some((_, packet)) = decoder.next_packet().map_err(|_| gone())? {
                        // An empty packet ends the file.
                        if packet.is_empty() {
                            return Ok((file, too_big, decoder.expected_seq()));
                        }
                        if file.len() + packet.len() > LOCAL_INFILE_BYTES_MAX {
                            too_big = true;
                        } else if !too_big {
                            file.extend_from_slice(&packet);
                        }
                    }
                    let n = match tokio::time::timeout(read_timeout, stream.read(&mut buf)).await {
                        Ok(Ok(n)) if n > 0 => n,
                        _ => return Err(gone()),
                    };
                    decoder.feed(&buf[..n]);
                }
            })
        });
        let (file, too_big, next_seq) = read.inspect_err(|_| self.failed = true)?;
        self.w = PacketWriter::new(next_seq);
        if too_big {
            return Err(SqlError::new(
                codes::ER_NET_PACKET_TOO_LARGE,
                format!("Got a packet bigger than 'max_allowed_packet' bytes (LOAD DATA LOCAL reads at most {LOCAL_INFILE_BYTES_MAX} bytes)"),
            ));
        }
        Ok(Some(file))
    }

    fn begun(&self) -> bool {
        self.begun
    }

    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any> {
        self
    }
}
