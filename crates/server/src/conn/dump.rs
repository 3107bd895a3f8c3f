//! `COM_BINLOG_DUMP` and `COM_BINLOG_DUMP_GTID`: the connection becomes one replica's stream
//! of binlog events (`replication::binlog::Dump`), each sent as a packet of its own after an
//! OK byte, until the replica goes away, the connection is killed, or (with
//! `BINLOG_DUMP_NON_BLOCK`) the end of the log is reached, which an EOF packet marks.
//!
//! Events go out as soon as the log is durable past them: the dump parks on the log's
//! durable LSN (a watch channel the writer publishes to), never polls. When nothing new
//! arrives for the replica's heartbeat period (`@master_heartbeat_period` or
//! `@source_heartbeat_period`, in nanoseconds, as the replica sets it), a HEARTBEAT says
//! where the stream is.
//!
//! A semi-sync replica (`@rpl_semi_sync_slave` or `@rpl_semi_sync_replica` set to 1) gets
//! each event after a two-byte header (`replication::semisync`); while semi-sync is enabled
//! the last transaction end of each batch asks for an acknowledgement, which the replica
//! sends back on this connection and the dump hands to its `AckSlot`.
//!
//! A replica must say it reads event checksums (`@master_binlog_checksum` or
//! `@source_binlog_checksum`, set before the dump, as MySQL's and MariaDB's replicas and
//! python-mysql-replication do): Quill's events always carry a CRC-32, and one that did not
//! say so gets error 1236, as from MySQL.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use quill_protocol::command::BinlogDump;
use quill_protocol::response;
use quill_protocol::{PacketDecoder, PacketWriter};
use quill_replication::binlog::{Dump, Head, Origin, events, file_name, file_start};
use quill_replication::semisync::{AckSlot, FLAG_ACK, HEADER_MAGIC, SemiSync, parse_ack};
use quill_sql::engine::BinaryLog;
use quill_sql::error::{SqlError, codes};
use quill_sql::{Engine, Session};
use quill_storage::Value;

use super::{Conn, Flow};

/// The longest heartbeat period taken from a replica (MySQL's maximum, `SLAVE_MAX_HEARTBEAT_PERIOD`).
const HEARTBEAT_PERIOD_MAX: Duration = Duration::from_secs(4_294_967);
/// How long a dump waits for the replica to read before it gives up on it: a replica that
/// stops reading is gone, and its dump must not hold log segments for ever.
const DUMP_WRITE_TIMEOUT: Duration = Duration::from_secs(60);

/// The server's identity as its binary log names it; `None` without a commit log.
pub fn origin(engine: &Arc<Engine>) -> Option<Origin> {
    Origin::of(engine)
}

fn user_var_text(session: &Session, names: &[&str]) -> Option<String> {
    names.iter().map(|n| session.info.user_variable(n)).find(|v| !matches!(v, Value::Null)).map(|v| match v {
        Value::Str(s) => s,
        Value::Bytes(b) => String::from_utf8_lossy(&b).into_owned(),
        Value::Int(i) => i.to_string(),
        Value::UInt(u) => u.to_string(),
        Value::Double(d) => d.to_string(),
        Value::Decimal(d) => d.to_string(),
        other => format!("{other:?}"),
    })
}

/// Streams the binary log to a replica; the connection closes afterwards.
pub(super) async fn serve(conn: &mut Conn, session: &mut Session, request: BinlogDump) -> Flow {
    let mut w = PacketWriter::new(conn.decoder.expected_seq());
    let caps = conn.caps;
    let fail = |w: &mut PacketWriter, message: &str| response::write_err(w, caps, 1236, "HY000", message);
    let Some(origin) = origin(&session.info.engine) else {
        fail(&mut w, "Binary logging is not enabled: the server runs without a data directory");
        conn.send(&mut w).await;
        return Flow::Close;
    };
    if user_var_text(session, &["master_binlog_checksum", "source_binlog_checksum"]).is_none() {
        fail(&mut w, "Replica can not handle replication events with the checksum that source is configured to log; the first event 'quill-bin' at 4");
        conn.send(&mut w).await;
        return Flow::Close;
    }
    let heartbeat = user_var_text(session, &["master_heartbeat_period", "source_heartbeat_period"])
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|ns| *ns > 0.0)
        .map(|ns| Duration::from_secs_f64(ns / 1e9).min(HEARTBEAT_PERIOD_MAX));
    let file = String::from_utf8_lossy(&request.file).into_owned();
    let Some(log) = origin.engine.log.get() else { return Flow::Close };
    let mut durable = log.durable_receiver();
    let opened = tokio::task::block_in_place(|| Dump::open(origin.clone(), &file, request.position, request.gtids.as_deref()));
    let mut dump = match opened {
        Ok(d) => d,
        Err(e) => {
            fail(&mut w, &e.to_string());
            conn.send(&mut w).await;
            return Flow::Close;
        }
    };
    session.command_started(None);
    let kill = session.kill.clone();
    // A semi-sync replica: every event carries the two-byte header, and acknowledgements
    // come back on this connection.
    let semi = session.info.engine.commit_acks.get().and_then(|a| (Arc::clone(a) as Arc<dyn std::any::Any + Send + Sync>).downcast::<SemiSync>().ok());
    let wants_semi = user_var_text(session, &["rpl_semi_sync_slave", "rpl_semi_sync_replica"]).is_some_and(|v| v.trim() != "0");
    let mut slot = semi.filter(|_| wants_semi).map(|s| s.register(request.server_id));
    let mut acks = AckReader::default();
    let mut out = Vec::new();
    loop {
        out.clear();
        let filled = tokio::task::block_in_place(|| dump.fill(&mut out));
        match filled {
            Ok(true) => {
                // A semi-sync replica is asked to acknowledge the batch's last transaction:
                // everything the batch read is then before it.
                let ask = slot.as_ref().filter(|s| s.requesting()).and_then(|_| dump.last_transaction_end()).cloned();
                let mut offset = 0;
                for e in events(&out) {
                    offset += e.len();
                    let asking = ask.as_ref().is_some_and(|end| end.offset == offset);
                    w.write_packet_with(|p| {
                        match slot {
                            Some(_) => p.extend_from_slice(&[0, HEADER_MAGIC, if asking { FLAG_ACK } else { 0 }]),
                            None => p.push(0),
                        }
                        p.extend_from_slice(e);
                    });
                }
                if let (Some(slot), Some(end)) = (slot.as_mut(), ask) {
                    slot.requested(end.file, end.position, dump.log_position());
                }
                if !super::write_all_timed(&mut conn.stream, &w.take(), DUMP_WRITE_TIMEOUT).await {
                    return Flow::Close;
                }
                if let Some(slot) = slot.as_mut() {
                    // Acknowledgements that arrived meanwhile, without waiting for more.
                    while let Some(read) = futures_util::FutureExt::now_or_never(acks.read(&mut conn.stream)) {
                        if !read || !acks.apply(slot) {
                            return Flow::Close;
                        }
                    }
                }
                continue;
            }
            Ok(false) => {
                if let Some(slot) = slot.as_mut() {
                    slot.caught_up(dump.log_position());
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "binlog dump stopped");
                fail(&mut w, &e.to_string());
                conn.send(&mut w).await;
                return Flow::Close;
            }
        }
        if request.non_blocking {
            response::write_eof(&mut w, caps, 0, 0);
            conn.send(&mut w).await;
            return Flow::Close;
        }
        // Caught up: park until the log is durable past what was read, the heartbeat is due,
        // the connection is killed, or the replica closes its end.
        let read_to = dump.log_position();
        let wait_durable = async { durable.wait_for(|&lsn| lsn > read_to).await.is_ok() };
        let beat = async {
            match heartbeat {
                Some(period) => tokio::time::sleep(period).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            moved = wait_durable => if !moved { return Flow::Close },
            () = beat => {
                let mut event = Vec::new();
                dump.heartbeat(&mut event);
                let header: &[u8] = if slot.is_some() { &[0, HEADER_MAGIC, 0] } else { &[0] };
                w.write_packet_with(|p| { p.extend_from_slice(header); p.extend_from_slice(&event); });
                if !super::write_all_timed(&mut conn.stream, &w.take(), DUMP_WRITE_TIMEOUT).await {
                    return Flow::Close;
                }
            }
            () = kill.notified() => return Flow::Close,
            // A replica sends nothing during a dump but semi-sync acknowledgements: anything
            // else, or the end of the stream, ends it.
            read = acks.read(&mut conn.stream) => {
                let applied = match slot.as_mut() {
                    Some(slot) => acks.apply(slot),
                    None => false,
                };
                if !read || !applied {
                    return Flow::Close;
                }
            }
        }
    }
}

/// The largest acknowledgement packet taken: the magic byte, a position and a file name. A
/// replica that announces a larger packet is not speaking the protocol, so the dump's
/// buffer stays within this and one read.
const ACK_PACKET_MAX: usize = 1024;

/// Reads semi-sync acknowledgements from the dump's connection: each a packet of its own
/// with sequence id 0, framed by the protocol's `PacketDecoder`.
struct AckReader {
    decoder: PacketDecoder,
}

impl Default for AckReader {
    fn default() -> AckReader {
        AckReader { decoder: PacketDecoder::new(ACK_PACKET_MAX) }
    }
}

impl AckReader {
    /// Reads what arrived; `false` when the replica closed its end (or the read failed).
    async fn read(&mut self, stream: &mut super::Stream) -> bool {
        let mut chunk = [0_u8; 512];
        match tokio::io::AsyncReadExt::read(stream, &mut chunk).await {
            Ok(0) | Err(_) => false,
            Ok(n) => {
                self.decoder.feed(&chunk[..n]);
                true
            }
        }
    }

    /// Hands the whole acknowledgements read to `slot`; `false` when a packet is not one.
    fn apply(&mut self, slot: &mut AckSlot) -> bool {
        loop {
            self.decoder.set_expected_seq(0);
            match self.decoder.next_packet() {
                Ok(None) => return true,
                Ok(Some((_, payload))) => match parse_ack(&payload) {
                    Some((file, position)) => slot.acknowledge(&file, position),
                    None => return false,
                },
                Err(_) => return false,
            }
        }
    }
}

/// The binary log as SHOW BINARY LOG STATUS and SHOW BINARY LOGS see it: the current end is
/// kept by one [`Head`], which reads only what is new at each call.
pub struct BinaryLogView {
    origin: Origin,
    head: Mutex<Head>,
    /// Finished files' sizes by segment start: a finished file never changes, so each is
    /// translated once (entries of removed segments are dropped at each listing).
    sizes: Mutex<std::collections::HashMap<quill_log::Lsn, u64>>,
    /// The oldest segment's start and the last own transaction before it (`gtid_purged`).
    purged: Mutex<Option<(quill_log::Lsn, u64)>>,
}

impl BinaryLogView {
    /// Attaches the view to `engine`, which must have a commit log.
    pub fn attach(engine: &Arc<Engine>) {
        if let Some(origin) = origin(engine) {
            let view: Arc<dyn BinaryLog> = Arc::new(BinaryLogView { origin, head: Mutex::new(Head::new()), sizes: Mutex::default(), purged: Mutex::default() });
            let _ = engine.binary_log.set(view);
        }
    }
}

impl BinaryLog for BinaryLogView {
    fn status(&self) -> Result<(String, u64), String> {
        let mut head = self.head.lock();
        tokio::task::block_in_place(|| head.advance(&self.origin)).map_err(|e| e.to_string())
    }

    fn files(&self) -> Result<Vec<(String, u64)>, String> {
        let (current, position) = self.status()?;
        let log = self.origin.engine.log.get().ok_or("no commit log")?;
        // A finished file's size is where its ROTATE ends: the position a dump of it reaches.
        let mut files = Vec::new();
        let bounds = log.segment_bounds();
        self.sizes.lock().retain(|start, _| bounds.iter().any(|(s, _)| s == start));
        for (start, _) in bounds {
            let name = file_name(start);
            if name == current {
                files.push((name, position));
                break;
            }
            if let Some(&size) = self.sizes.lock().get(&start) {
                files.push((name, size));
                continue;
            }
            let size = tokio::task::block_in_place(|| -> Result<u64, String> {
                let mut dump = Dump::open(self.origin.clone(), &name, quill_replication::binlog::FIRST_EVENT_POSITION, None).map_err(|e| e.to_string())?;
                let mut scratch = Vec::new();
                while dump.position().0 == name && dump.fill(&mut scratch).map_err(|e| e.to_string())? {
                    scratch.clear();
                }
                Ok(dump.finished_size().unwrap_or(dump.position().1))
            })?;
            self.sizes.lock().insert(start, size);
            files.push((name, size));
        }
        Ok(files)
    }

    fn purge(&self, to: Option<&str>, before: Option<std::time::SystemTime>) -> quill_sql::error::Result<Vec<String>> {
        let log = self.origin.engine.log.get().ok_or_else(|| SqlError::new(codes::ER_NO_BINARY_LOGGING, "You are not using binary logging"))?;
        let target = match to {
            Some(name) => file_start(name)
                .filter(|start| log.segment_bounds().iter().any(|(s, _)| s == start))
                .ok_or_else(|| SqlError::new(codes::ER_UNKNOWN_TARGET_BINLOG, "Target log not found in binlog index"))?,
            None => quill_log::Lsn::MAX,
        };
        log.purge_segments_before(target, before).map_err(|e| SqlError::new(codes::ER_BINLOG_PURGE_FATAL_ERR, format!("Fatal error during log purge: {e}")))?;
        // Files wholly before the target that are still there were kept (a time bound keeps
        // newer files by design, so only TO reports them).
        Ok(if to.is_some() { log.segment_bounds().iter().filter(|(s, len)| s + len <= target).map(|(s, _)| file_name(*s)).collect() } else { Vec::new() })
    }

    fn purged_replicated(&self) -> Result<String, String> {
        let executed = quill_replication::gtid::parse(&self.origin.engine.replica.get().map(|r| r.executed()).unwrap_or_default());
        if executed.is_empty() {
            return Ok(String::new());
        }
        let in_log = tokio::task::block_in_place(|| quill_replication::binlog::replicated_in_log(&self.origin)).map_err(|e| e.to_string())?;
        Ok(quill_replication::gtid::gtid_text(&quill_replication::gtid::subtract(&executed, &in_log)))
    }

    fn purged_through(&self) -> Result<u64, String> {
        let log = self.origin.engine.log.get().ok_or("no commit log")?;
        let oldest = log.segment_bounds().first().map(|&(s, _)| s);
        if let (Some(oldest), Some((start, seq))) = (oldest, *self.purged.lock())
            && oldest == start
        {
            return Ok(seq);
        }
        let seq = tokio::task::block_in_place(|| quill_replication::binlog::purged_through(&self.origin)).map_err(|e| e.to_string())?;
        if let Some(oldest) = oldest {
            *self.purged.lock() = Some((oldest, seq));
        }
        Ok(seq)
    }
}
