//! Binlog events as MySQL 8 writes them (binlog version 4), encoded for replicas and
//! change-capture clients that read a source's binary log over `COM_BINLOG_DUMP`: the events
//! Quill's replication stream is made of, generated from the commit log (`docs/binlog.md`).
//! Pure functions that append bytes: no I/O, no state.
//!
//! Every event is the common header ([`EVENT_HEADER_BYTES`]), a body, and a CRC-32 (zlib's,
//! not the commit log's CRC-32C) of everything before it ([`CHECKSUM_BYTES`]), since the
//! format description event announces `binlog_checksum=CRC32`. [`event`] writes the header
//! and the checksum around a body; the `*_body` functions write bodies.
//!
//! Integers are little-endian. Events covered: FORMAT_DESCRIPTION, ROTATE, HEARTBEAT,
//! PREVIOUS_GTIDS, GTID, QUERY and XID here; TABLE_MAP and the row events in [`rows`].

/// Bytes of the common header: timestamp, type, server id, event size, next position,
/// flags.
pub const EVENT_HEADER_BYTES: usize = 4 + 1 + 4 + 4 + 4 + 2;
/// Bytes of the CRC-32 after every event.
pub const CHECKSUM_BYTES: usize = 4;
/// The binlog format version MySQL 5.0 and later write.
pub const BINLOG_VERSION: u16 = 4;
/// The checksum algorithm the format description event names: CRC-32.
pub const CHECKSUM_ALG_CRC32: u8 = 1;
/// Bytes of the server version field of a format description event.
pub const SERVER_VERSION_BYTES: usize = 50;
/// `LOG_EVENT_ARTIFICIAL_F`: an event the source made up for this stream (the ROTATE and
/// FORMAT_DESCRIPTION that open a dump), not one in its binary log.
pub const FLAG_ARTIFICIAL: u16 = 0x20;
/// Bytes of a server UUID, as GTIDs carry it.
pub const UUID_BYTES: usize = 16;

/// Event type codes.
pub mod event_type {
    pub const QUERY: u8 = 2;
    pub const ROTATE: u8 = 4;
    pub const FORMAT_DESCRIPTION: u8 = 15;
    pub const XID: u8 = 16;
    pub const TABLE_MAP: u8 = 19;
    pub const HEARTBEAT: u8 = 27;
    pub const WRITE_ROWS: u8 = 30;
    pub const UPDATE_ROWS: u8 = 31;
    pub const DELETE_ROWS: u8 = 32;
    pub const GTID: u8 = 33;
    pub const PREVIOUS_GTIDS: u8 = 35;
}

/// Bytes of the fixed part ("post-header") of each event type, 1 to 41, as MySQL 8.0's
/// format description event lists them; a reader finds where each body's variable part
/// starts here. Types MySQL no longer writes are 0.
pub const POST_HEADER_BYTES: [u8; EVENT_TYPES] = [
    56, // 1 START_V3
    QUERY_POST_HEADER_BYTES as u8,
    0, // 3 STOP
    8, // 4 ROTATE
    0, // 5 INTVAR
    0, // 6 LOAD (obsolete)
    0, // 7 SLAVE (obsolete)
    0, // 8 CREATE_FILE (obsolete)
    4, // 9 APPEND_BLOCK
    0, // 10 EXEC_LOAD (obsolete)
    4, // 11 DELETE_FILE
    0, // 12 NEW_LOAD (obsolete)
    0, // 13 RAND
    0, // 14 USER_VAR
    FORMAT_DESCRIPTION_POST_HEADER_BYTES as u8,
    0,  // 16 XID
    4,  // 17 BEGIN_LOAD_QUERY
    26, // 18 EXECUTE_LOAD_QUERY
    8,  // 19 TABLE_MAP
    0,  // 20 PRE_GA_WRITE_ROWS (obsolete)
    0,  // 21 PRE_GA_UPDATE_ROWS (obsolete)
    0,  // 22 PRE_GA_DELETE_ROWS (obsolete)
    8,  // 23 WRITE_ROWS_V1
    8,  // 24 UPDATE_ROWS_V1
    8,  // 25 DELETE_ROWS_V1
    2,  // 26 INCIDENT
    0,  // 27 HEARTBEAT
    0,  // 28 IGNORABLE
    0,  // 29 ROWS_QUERY
    10, // 30 WRITE_ROWS
    10, // 31 UPDATE_ROWS
    10, // 32 DELETE_ROWS
    GTID_POST_HEADER_BYTES as u8,
    GTID_POST_HEADER_BYTES as u8, // 34 ANONYMOUS_GTID
    0,                            // 35 PREVIOUS_GTIDS
    18,                           // 36 TRANSACTION_CONTEXT
    52,                           // 37 VIEW_CHANGE
    0,                            // 38 XA_PREPARE
    10,                           // 39 PARTIAL_UPDATE_ROWS
    40,                           // 40 TRANSACTION_PAYLOAD
    0,                            // 41 HEARTBEAT_V2
];

/// Event types a format description event lists, 1 to 41 (MySQL 8.0's).
pub const EVENT_TYPES: usize = 41;
/// The format description's fixed part: binlog version, server version, creation time,
/// header length, then one post-header length per event type.
pub const FORMAT_DESCRIPTION_POST_HEADER_BYTES: usize = 2 + SERVER_VERSION_BYTES + 4 + 1 + EVENT_TYPES;
/// A query event's fixed part: thread id, execution time, database name length, error code,
/// status variables length.
pub const QUERY_POST_HEADER_BYTES: usize = 4 + 4 + 1 + 2 + 2;
/// A GTID event's fixed part: flags, server UUID, sequence number, logical clock type,
/// last committed, sequence number in the logical clock.
pub const GTID_POST_HEADER_BYTES: usize = 1 + UUID_BYTES + 8 + 1 + 8 + 8;
/// The logical clock type of GTID events: dependencies as `last_committed` and
/// `sequence_number`.
const LOGICAL_TIMESTAMP_TYPE: u8 = 2;
/// The top bit of a 7-byte commit timestamp (or of a 4-byte server version): the original
/// value, different from the immediate one, follows.
const COMMIT_TIMESTAMP_ORIGINAL_FOLLOWS: u64 = 1 << 55;
const SERVER_VERSION_ORIGINAL_FOLLOWS: u32 = 1 << 31;

/// The common header's fields a caller chooses; the type and size are the event's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventHeader {
    /// Seconds since the Unix epoch (of the transaction's commit).
    pub timestamp: u32,
    pub server_id: u32,
    /// Where the next event starts in the binary log named by the last ROTATE (0 for an
    /// artificial event).
    pub log_pos: u32,
    pub flags: u16,
}

/// Appends one event of type `type_code`: the header, the body `body` writes, and the
/// CRC-32 of both.
///
/// # Panics
/// If the event is larger than 4 GiB, which a commit record (at most 256 MiB) never makes.
pub fn event(out: &mut Vec<u8>, header: &EventHeader, type_code: u8, body: impl FnOnce(&mut Vec<u8>)) {
    write_event(out, header, type_code, None, body);
}

/// [`event`] for an event that starts at byte `*position` of its binary log: its `log_pos`
/// (`header.log_pos` is not used) is where it ends, which `*position` moves to.
pub fn event_at(out: &mut Vec<u8>, header: &EventHeader, position: &mut u64, type_code: u8, body: impl FnOnce(&mut Vec<u8>)) {
    write_event(out, header, type_code, Some(position), body);
}

fn write_event(out: &mut Vec<u8>, header: &EventHeader, type_code: u8, position: Option<&mut u64>, body: impl FnOnce(&mut Vec<u8>)) {
    let start = out.len();
    out.extend_from_slice(&header.timestamp.to_le_bytes());
    out.push(type_code);
    out.extend_from_slice(&header.server_id.to_le_bytes());
    out.extend_from_slice(&[0; 4]); // event size, below
    out.extend_from_slice(&header.log_pos.to_le_bytes());
    out.extend_from_slice(&header.flags.to_le_bytes());
    debug_assert_eq!(out.len() - start, EVENT_HEADER_BYTES);
    body(out);
    let size = u32::try_from(out.len() - start + CHECKSUM_BYTES).expect("an event is smaller than 4 GiB");
    out[start + 9..start + 13].copy_from_slice(&size.to_le_bytes());
    if let Some(position) = position {
        *position += u64::from(size);
        // Positions past 4 GiB wrap, as MySQL's do in the 4-byte field.
        out[start + 13..start + 17].copy_from_slice(&(*position as u32).to_le_bytes());
    }
    let crc = crc32fast::hash(&out[start..]);
    out.extend_from_slice(&crc.to_le_bytes());
}

/// The body of a FORMAT_DESCRIPTION event: the first event of every binary log (and of
/// every dump), which says how to read the others.
pub fn format_description_body(out: &mut Vec<u8>, server_version: &str, create_timestamp: u32) {
    out.extend_from_slice(&BINLOG_VERSION.to_le_bytes());
    let mut version = [0_u8; SERVER_VERSION_BYTES];
    let shown = &server_version.as_bytes()[..server_version.len().min(SERVER_VERSION_BYTES - 1)];
    version[..shown.len()].copy_from_slice(shown);
    out.extend_from_slice(&version);
    out.extend_from_slice(&create_timestamp.to_le_bytes());
    out.push(EVENT_HEADER_BYTES as u8);
    out.extend_from_slice(&POST_HEADER_BYTES);
    out.push(CHECKSUM_ALG_CRC32);
}

/// The body of a ROTATE event: the binary log `next_file` continues at `position`.
pub fn rotate_body(out: &mut Vec<u8>, position: u64, next_file: &str) {
    out.extend_from_slice(&position.to_le_bytes());
    out.extend_from_slice(next_file.as_bytes());
}

/// The body of a HEARTBEAT event: sent when nothing else was for `MASTER_HEARTBEAT_PERIOD`,
/// naming the binary log the source is in.
pub fn heartbeat_body(out: &mut Vec<u8>, file: &str) {
    out.extend_from_slice(file.as_bytes());
}

/// The body of an XID event: the transaction with this id committed.
pub fn xid_body(out: &mut Vec<u8>, xid: u64) {
    out.extend_from_slice(&xid.to_le_bytes());
}

/// The GTIDs before a binary log: per server UUID, intervals of sequence numbers, each
/// `start..end` (end excluded), ascending.
pub type GtidSet<'a> = &'a [([u8; UUID_BYTES], &'a [(u64, u64)])];

/// The body of a PREVIOUS_GTIDS event: the GTIDs of every transaction before this binary log.
pub fn previous_gtids_body(out: &mut Vec<u8>, set: GtidSet<'_>) {
    out.extend_from_slice(&(set.len() as u64).to_le_bytes());
    for (uuid, intervals) in set {
        out.extend_from_slice(uuid);
        out.extend_from_slice(&(intervals.len() as u64).to_le_bytes());
        for &(start, end) in *intervals {
            out.extend_from_slice(&start.to_le_bytes());
            out.extend_from_slice(&end.to_le_bytes());
        }
    }
}

/// What a GTID event says of the transaction that follows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gtid {
    pub uuid: [u8; UUID_BYTES],
    /// The transaction's sequence number on the server `uuid` names (from 1).
    pub gno: u64,
    /// The logical clock: the newest transaction this one may depend on, and this one's
    /// number (a replica applies in parallel transactions whose ranges overlap).
    pub last_committed: u64,
    pub sequence_number: u64,
    /// When the transaction committed on the server where it first ran, and on this one,
    /// in microseconds since the Unix epoch.
    pub original_commit_us: u64,
    pub immediate_commit_us: u64,
    /// Bytes of the transaction's events, this one included.
    pub transaction_length: u64,
    /// `major * 10000 + minor * 100 + patch` of the servers it committed on.
    pub original_server_version: u32,
    pub immediate_server_version: u32,
}

/// Bytes of the whole GTID event (header and checksum included) [`gtid_body`] writes for
/// `gtid`: its `transaction_length` counts the event itself, so a writer finds the length
/// it gives from this.
#[must_use]
pub fn gtid_event_bytes(gtid: &Gtid) -> usize {
    let times = if gtid.original_commit_us == gtid.immediate_commit_us { 7 } else { 14 };
    let versions = if gtid.original_server_version == gtid.immediate_server_version { 4 } else { 8 };
    EVENT_HEADER_BYTES + GTID_POST_HEADER_BYTES + times + packed_int_bytes(gtid.transaction_length) + versions + CHECKSUM_BYTES
}

/// The body of a GTID event, as MySQL 8.0.14 and later write it.
pub fn gtid_body(out: &mut Vec<u8>, gtid: &Gtid) {
    out.push(0); // flags: row events only, nothing that needs statement replication
    out.extend_from_slice(&gtid.uuid);
    out.extend_from_slice(&gtid.gno.to_le_bytes());
    out.push(LOGICAL_TIMESTAMP_TYPE);
    out.extend_from_slice(&gtid.last_committed.to_le_bytes());
    out.extend_from_slice(&gtid.sequence_number.to_le_bytes());
    let immediate = gtid.immediate_commit_us & (COMMIT_TIMESTAMP_ORIGINAL_FOLLOWS - 1);
    if gtid.original_commit_us == gtid.immediate_commit_us {
        out.extend_from_slice(&immediate.to_le_bytes()[..7]);
    } else {
        out.extend_from_slice(&(immediate | COMMIT_TIMESTAMP_ORIGINAL_FOLLOWS).to_le_bytes()[..7]);
        out.extend_from_slice(&gtid.original_commit_us.to_le_bytes()[..7]);
    }
    put_packed_int(out, gtid.transaction_length);
    if gtid.original_server_version == gtid.immediate_server_version {
        out.extend_from_slice(&gtid.immediate_server_version.to_le_bytes());
    } else {
        out.extend_from_slice(&(gtid.immediate_server_version | SERVER_VERSION_ORIGINAL_FOLLOWS).to_le_bytes());
        out.extend_from_slice(&gtid.original_server_version.to_le_bytes());
    }
}

/// The session state a QUERY event carries for its statement to run again as it ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueryContext<'a> {
    pub thread_id: u32,
    /// Seconds the statement took.
    pub exec_time: u32,
    pub error_code: u16,
    /// The default database (empty: none).
    pub db: &'a str,
    /// `sql_mode` as MySQL's bits (`MODE_*` of its `sql_mode.h`).
    pub sql_mode: u64,
    /// The session's `time_zone`, as named.
    pub time_zone: &'a str,
    /// Collation ids of `character_set_client`, `collation_connection` and
    /// `collation_server`.
    pub charsets: [u16; 3],
}

/// Status variable codes of a QUERY event.
mod status {
    pub const FLAGS2: u8 = 0;
    pub const SQL_MODE: u8 = 1;
    pub const CHARSET: u8 = 4;
    pub const TIME_ZONE: u8 = 5;
    pub const CATALOG_NZ: u8 = 6;
}

/// The body of a QUERY event: `sql`, run with `context`. A transaction's `BEGIN` is one, and
/// so is every DDL statement.
///
/// # Panics
/// If the database or time zone name is longer than 255 bytes (MySQL's limits are 64).
pub fn query_body(out: &mut Vec<u8>, context: &QueryContext<'_>, sql: &str) {
    out.extend_from_slice(&context.thread_id.to_le_bytes());
    out.extend_from_slice(&context.exec_time.to_le_bytes());
    out.push(u8::try_from(context.db.len()).expect("a database name fits a byte"));
    out.extend_from_slice(&context.error_code.to_le_bytes());
    let status_len_at = out.len();
    out.extend_from_slice(&[0; 2]);
    let status_start = out.len();
    out.push(status::FLAGS2);
    out.extend_from_slice(&0_u32.to_le_bytes());
    out.push(status::SQL_MODE);
    out.extend_from_slice(&context.sql_mode.to_le_bytes());
    out.push(status::CATALOG_NZ);
    put_name8(out, "std");
    out.push(status::CHARSET);
    for id in context.charsets {
        out.extend_from_slice(&id.to_le_bytes());
    }
    if !context.time_zone.is_empty() {
        out.push(status::TIME_ZONE);
        put_name8(out, context.time_zone);
    }
    let status_len = u16::try_from(out.len() - status_start).expect("status variables fit");
    out[status_len_at..status_len_at + 2].copy_from_slice(&status_len.to_le_bytes());
    out.extend_from_slice(context.db.as_bytes());
    out.push(0);
    out.extend_from_slice(sql.as_bytes());
}

fn put_name8(out: &mut Vec<u8>, name: &str) {
    out.push(u8::try_from(name.len()).expect("a name fits a byte"));
    out.extend_from_slice(name.as_bytes());
}

/// Bytes of `v` as a packed integer ([`put_packed_int`]).
#[must_use]
pub fn packed_int_bytes(v: u64) -> usize {
    match v {
        0..=250 => 1,
        251..=0xffff => 3,
        0x1_0000..=0xff_ffff => 4,
        _ => 9,
    }
}

/// MySQL's packed integer (`net_field_length`): one byte below 251, else 252 and two
/// bytes, 253 and three, or 254 and eight.
fn put_packed_int(out: &mut Vec<u8>, v: u64) {
    match v {
        0..=250 => out.push(v as u8),
        251..=0xffff => {
            out.push(252);
            out.extend_from_slice(&(v as u16).to_le_bytes());
        }
        0x1_0000..=0xff_ffff => {
            out.push(253);
            out.extend_from_slice(&v.to_le_bytes()[..3]);
        }
        _ => {
            out.push(254);
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
}

pub mod rows;

#[cfg(test)]
mod tests;
