//! The record format of `docs/log-format.md`, as constants derived from each other, and the
//! encoding and decoding of records and their changes. Pure functions: no I/O.

use quill_io::cursor::{take_len32, take_str16};

/// Size of the fixed record header.
pub const HEADER_BYTES: usize = COMMIT_US_OFFSET + 8;
pub const LEN_OFFSET: usize = 0;
pub const CRC_OFFSET: usize = LEN_OFFSET + 4;
pub const LSN_OFFSET: usize = CRC_OFFSET + 4;
pub const SEQ_OFFSET: usize = LSN_OFFSET + 8;
pub const COMMIT_US_OFFSET: usize = SEQ_OFFSET + 8;
/// The checksum covers everything after itself: from the LSN to the end of the body.
pub const CRC_START: usize = LSN_OFFSET;
/// Largest body of one record: bounds what a reader allocates for a length it has not yet
/// verified, and the size of one transaction.
pub const MAX_BODY_BYTES: usize = 256 << 20;
/// Default size of a segment file.
pub const DEFAULT_SEGMENT_BYTES: u64 = 64 << 20;
/// The smallest segment created when the disk has no room for a full one.
pub const SEGMENT_BYTES_MIN: u64 = 64 << 10;
pub const SEGMENT_SUFFIX: &str = ".qlog";
/// Digits of the start LSN in a segment's file name.
pub const SEGMENT_NAME_DIGITS: usize = 20;

const _: () = assert!(HEADER_BYTES == 32, "docs/log-format.md specifies a 32-byte header");
const _: () = assert!(MAX_BODY_BYTES <= u32::MAX as usize, "body_len is a u32");

/// A PUT whose row is in the first row encoding (`docs/log-format.md`, "Row encoding,
/// version 1"): read from logs written before [`KIND_PUT`], never written.
pub const KIND_PUT_V1: u8 = 1;
/// A DELETE without its row's image: read from logs written before [`KIND_DELETE`].
pub const KIND_DELETE_V1: u8 = 2;
/// A DDL statement without the session context it ran in: read from logs written before
/// [`KIND_DDL`].
pub const KIND_DDL_V1: u8 = 3;
pub const KIND_STREAM_PART: u8 = 4;
pub const KIND_STREAM_COMMIT: u8 = 5;
pub const KIND_STREAM_ABORT: u8 = 6;
/// A PUT whose row is a row image (`docs/log-format.md`, "Row encoding"), without the kind
/// of change: read from logs written before [`KIND_INSERT`], never written.
pub const KIND_PUT: u8 = 7;
/// A row the transaction inserted, its image.
pub const KIND_INSERT: u8 = 8;
/// A row the transaction changed: the image it replaced (empty: not logged) and the new one.
pub const KIND_UPDATE: u8 = 9;
/// A row the transaction deleted: the image it removed (empty: not logged).
pub const KIND_DELETE: u8 = 10;
/// A DDL statement with its default database, `sql_mode` and `time_zone`.
pub const KIND_DDL: u8 = 11;
/// Where a replicated transaction came from: the GTID its source gave it, its original
/// commit time and the version of the server that first committed it.
pub const KIND_ORIGIN: u8 = 12;
/// Bytes of a stream marker: its kind and the LSN of the stream's first part.
pub const STREAM_MARK_BYTES: usize = 1 + 8;
/// Bytes of an ORIGIN change: its kind, the UUID, the GTID's number, the original commit time
/// and the original server version.
pub const ORIGIN_BYTES: usize = 1 + ORIGIN_UUID_BYTES + 8 + 8 + 4;
/// Bytes of a server UUID in an ORIGIN change.
pub const ORIGIN_UUID_BYTES: usize = 16;

/// A position in the log stream.
pub type Lsn = u64;

/// One change of a committed transaction (see `docs/log-format.md`, "Body: changes").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// A row the transaction inserted at primary key `key` (no row was there): `row` is its
    /// image, storage's dynamic layout (`docs/log-format.md`, "Row encoding").
    Insert { db: String, table: String, key: Vec<u8>, row: Vec<u8> },
    /// A row the transaction changed: `before` is the committed image it replaced (`None`:
    /// not logged, `binlog_row_image=MINIMAL`, since `key` names the row), `row` the new one.
    Update { db: String, table: String, key: Vec<u8>, before: Option<Vec<u8>>, row: Vec<u8> },
    /// A row the transaction deleted: `before` is the committed image it removed (`None`: not
    /// logged, or a log written before row kinds).
    Delete { db: String, table: String, key: Vec<u8>, before: Option<Vec<u8>> },
    /// Insert or replace the row at `key` with the row image `row`, the change's kind not
    /// said: read from logs written before row kinds, never written.
    Put { db: String, table: String, key: Vec<u8>, row: Vec<u8> },
    /// A PUT of a log written before row images: `row` is in the first row encoding
    /// ("Row encoding, version 1"). Read, never written by the server.
    PutV1 { db: String, table: String, key: Vec<u8>, row: Vec<u8> },
    /// A DDL statement, the default database it ran in, and the session context it must run
    /// in again (`None` in logs written before DDL context: the server's defaults).
    Ddl { db: String, sql: String, context: Option<DdlContext> },
    /// First change of a part record: changes of a transaction that has not committed yet,
    /// streamed ahead of its commit. `first` is the LSN of the transaction's first part record
    /// (that record's own LSN in the first part), and names the stream.
    StreamPart { first: Lsn },
    /// First change of the commit record of a streamed transaction: its parts, in log order,
    /// come before this record's own changes.
    StreamCommit { first: Lsn },
    /// The only change of the record that ends a streamed transaction that rolled back.
    StreamAbort { first: Lsn },
    /// The last change of the commit record of a transaction a replica applied: the GTID it
    /// came with (`docs/log-format.md`, "Body: changes"). Replay passes over it.
    Origin(Origin),
}

/// A replicated transaction's identity at its source: its GTID (`uuid:gno`), when it was
/// first committed (microseconds since the Unix epoch) and by which server version
/// (`major * 10000 + minor * 100 + patch`), as the GTID event it arrived with said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Origin {
    pub uuid: [u8; ORIGIN_UUID_BYTES],
    pub gno: u64,
    pub original_commit_us: u64,
    pub original_server_version: u32,
}

/// The session variables a DDL statement ran with that can change what it does when run
/// again: `sql_mode` (zero dates in defaults, strictness) and `time_zone` (a TIMESTAMP
/// default), as the session had them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DdlContext {
    pub sql_mode: String,
    pub time_zone: String,
}

/// What a record is, by its first change (see `docs/log-format.md`, "Large transactions").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordKind {
    /// A committed transaction that was not streamed, or DDL.
    Commit,
    /// A part of the stream whose first part is at the LSN.
    Part(Lsn),
    /// The commit of that stream.
    StreamCommit(Lsn),
    /// The rollback of that stream.
    Abort(Lsn),
}

/// A record as read back from the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub lsn: Lsn,
    pub seq: u64,
    pub commit_us: u64,
    pub changes: Vec<Change>,
}

impl Record {
    /// Bytes the record occupies in the log.
    #[must_use]
    pub fn encoded_len(&self) -> usize {
        HEADER_BYTES + body_len(&self.changes)
    }

    #[must_use]
    pub fn kind(&self) -> RecordKind {
        match self.changes.first() {
            Some(Change::StreamPart { first }) => RecordKind::Part(*first),
            Some(Change::StreamCommit { first }) => RecordKind::StreamCommit(*first),
            Some(Change::StreamAbort { first }) => RecordKind::Abort(*first),
            _ => RecordKind::Commit,
        }
    }
}

/// Bytes of the body that `changes` encode to.
#[must_use]
pub fn body_len(changes: &[Change]) -> usize {
    changes
        .iter()
        .map(|c| match c {
            Change::Insert { db, table, key, row } | Change::Put { db, table, key, row } | Change::PutV1 { db, table, key, row } => {
                keyed_len(db, table, key) + 4 + row.len()
            }
            Change::Update { db, table, key, before, row } => keyed_len(db, table, key) + 4 + before.as_ref().map_or(0, Vec::len) + 4 + row.len(),
            Change::Delete { db, table, key, before } => keyed_len(db, table, key) + 4 + before.as_ref().map_or(0, Vec::len),
            Change::Ddl { db, sql, context } => 1 + 2 + db.len() + context.as_ref().map_or(0, |c| 2 + c.sql_mode.len() + 2 + c.time_zone.len()) + 4 + sql.len(),
            Change::StreamPart { .. } | Change::StreamCommit { .. } | Change::StreamAbort { .. } => STREAM_MARK_BYTES,
            Change::Origin(_) => ORIGIN_BYTES,
        })
        .sum()
}

/// Bytes of a row change's kind, names and key.
fn keyed_len(db: &str, table: &str, key: &[u8]) -> usize {
    1 + 2 + db.len() + 2 + table.len() + 4 + key.len()
}

/// Why a transaction cannot be logged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    #[error("transaction too large for the commit log: {0} bytes (at most {MAX_BODY_BYTES})")]
    TooLarge(usize),
    #[error("name too long for the commit log: {0} bytes")]
    NameTooLong(usize),
    #[error("a commit record needs at least one change")]
    Empty,
    #[error("the commit log is shut down")]
    ShuttingDown,
    /// The disk has no room for the segment this record needs (see `writer`, "Space").
    #[error("the commit log has no room: {0}")]
    LogFull(String),
}

/// A record's body, built change by change: each change is encoded as it is added, into one
/// buffer a caller may reuse from record to record, so a transaction's rows reach the log
/// with no value of their own built (`Log::append_body` and its kin).
#[derive(Debug, Default, Clone)]
pub struct Body {
    bytes: Vec<u8>,
    /// The transaction was replicated from another server: its commit record gets sequence
    /// number 0 and takes none of this server's (`docs/log-format.md`, "Record").
    replicated: bool,
}

impl Body {
    #[must_use]
    pub fn new() -> Body {
        Body::default()
    }

    /// Marks (or unmarks) the body as a replicated transaction's.
    pub fn set_replicated(&mut self, replicated: bool) {
        self.replicated = replicated;
    }

    #[must_use]
    pub fn is_replicated(&self) -> bool {
        self.replicated
    }

    /// The body of `changes`.
    ///
    /// # Errors
    /// A name does not fit its length field.
    pub fn of(changes: &[Change]) -> Result<Body, EncodeError> {
        let mut body = Body { bytes: Vec::with_capacity(body_len(changes)), replicated: false };
        for change in changes {
            body.push(change)?;
        }
        Ok(body)
    }

    /// Bytes encoded so far.
    #[must_use]
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    pub fn clear(&mut self) {
        self.bytes.clear();
        self.replicated = false;
    }

    /// The encoded changes.
    #[must_use]
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Adds an INSERT of the row image `row` at `key` of `db`.`table`.
    ///
    /// # Errors
    /// A name does not fit its length field; nothing was added.
    pub fn insert(&mut self, db: &str, table: &str, key: &[u8], row: &[u8]) -> Result<(), EncodeError> {
        self.keyed(KIND_INSERT, db, table, key)?;
        put_bytes32(&mut self.bytes, row);
        Ok(())
    }

    /// Adds an UPDATE of the row at `key` of `db`.`table` from `before` (`None`: not logged)
    /// to `row`.
    ///
    /// # Errors
    /// As [`Body::insert`].
    pub fn update(&mut self, db: &str, table: &str, key: &[u8], before: Option<&[u8]>, row: &[u8]) -> Result<(), EncodeError> {
        self.keyed(KIND_UPDATE, db, table, key)?;
        put_bytes32(&mut self.bytes, before.unwrap_or_default());
        put_bytes32(&mut self.bytes, row);
        Ok(())
    }

    /// Adds a DELETE of the row at `key` of `db`.`table`, whose image was `before` (`None`:
    /// not logged).
    ///
    /// # Errors
    /// As [`Body::insert`].
    pub fn delete(&mut self, db: &str, table: &str, key: &[u8], before: Option<&[u8]>) -> Result<(), EncodeError> {
        self.keyed(KIND_DELETE, db, table, key)?;
        put_bytes32(&mut self.bytes, before.unwrap_or_default());
        Ok(())
    }

    /// Adds the ORIGIN change of a replicated transaction: its commit record's last change.
    pub fn origin(&mut self, origin: &Origin) {
        self.bytes.push(KIND_ORIGIN);
        self.bytes.extend_from_slice(&origin.uuid);
        self.bytes.extend_from_slice(&origin.gno.to_le_bytes());
        self.bytes.extend_from_slice(&origin.original_commit_us.to_le_bytes());
        self.bytes.extend_from_slice(&origin.original_server_version.to_le_bytes());
    }

    /// Adds `change`. A stream marker is only valid as a body's first change (readers refuse
    /// it anywhere else); the log's own appends write theirs ahead of the body. The kinds
    /// only read from old logs are written as they were (for tests of reading them).
    ///
    /// # Errors
    /// As [`Body::insert`].
    pub fn push(&mut self, change: &Change) -> Result<(), EncodeError> {
        match change {
            Change::Insert { db, table, key, row } => self.insert(db, table, key, row),
            Change::Update { db, table, key, before, row } => self.update(db, table, key, before.as_deref(), row),
            Change::Delete { db, table, key, before } => self.delete(db, table, key, before.as_deref()),
            Change::Put { db, table, key, row } | Change::PutV1 { db, table, key, row } => {
                self.keyed(if matches!(change, Change::Put { .. }) { KIND_PUT } else { KIND_PUT_V1 }, db, table, key)?;
                put_bytes32(&mut self.bytes, row);
                Ok(())
            }
            Change::Ddl { db, sql, context } => {
                let start = self.bytes.len();
                let names = (|| match context {
                    Some(c) => {
                        self.bytes.push(KIND_DDL);
                        put_str16(&mut self.bytes, db)?;
                        put_str16(&mut self.bytes, &c.sql_mode)?;
                        put_str16(&mut self.bytes, &c.time_zone)
                    }
                    None => {
                        self.bytes.push(KIND_DDL_V1);
                        put_str16(&mut self.bytes, db)
                    }
                })();
                names.inspect_err(|_| self.bytes.truncate(start))?;
                put_bytes32(&mut self.bytes, sql.as_bytes());
                Ok(())
            }
            Change::StreamPart { .. } | Change::StreamCommit { .. } | Change::StreamAbort { .. } => {
                put_marker(&mut self.bytes, change);
                Ok(())
            }
            Change::Origin(origin) => {
                self.origin(origin);
                Ok(())
            }
        }
    }

    fn keyed(&mut self, kind: u8, db: &str, table: &str, key: &[u8]) -> Result<(), EncodeError> {
        let start = self.bytes.len();
        self.bytes.push(kind);
        let names = put_str16(&mut self.bytes, db).and_then(|()| put_str16(&mut self.bytes, table));
        if let Err(e) = names {
            self.bytes.truncate(start);
            return Err(e);
        }
        put_bytes32(&mut self.bytes, key);
        Ok(())
    }
}

/// Appends the record for `changes` at position `lsn` to `out`.
///
/// # Errors
/// The transaction is too large, has no change, or a name does not fit its length field.
pub fn encode_record(out: &mut Vec<u8>, lsn: Lsn, seq: u64, commit_us: u64, changes: &[Change]) -> Result<(), EncodeError> {
    let body = Body::of(changes)?;
    encode_record_body(out, lsn, seq, commit_us, None, body.bytes(), crc32c::crc32c(body.bytes()))
}

/// Appends the record at position `lsn` whose changes are `head` (a stream marker), then
/// the encoded changes `body` (a [`Body`]'s bytes), whose CRC-32C is `body_crc`: the
/// record's checksum is combined from it, so an appender computes it before it takes the
/// lock that orders appends and the body's bytes are only copied under it.
///
/// # Errors
/// The record is too large or has no change.
pub fn encode_record_body(out: &mut Vec<u8>, lsn: Lsn, seq: u64, commit_us: u64, head: Option<&Change>, body: &[u8], body_crc: u32) -> Result<(), EncodeError> {
    if body.is_empty() && head.is_none() {
        return Err(EncodeError::Empty);
    }
    let len = body.len() + head.map_or(0, |h| body_len(std::slice::from_ref(h)));
    if len > MAX_BODY_BYTES {
        return Err(EncodeError::TooLarge(len));
    }
    let start = out.len();
    out.reserve(HEADER_BYTES + len);
    out.extend_from_slice(&u32::try_from(len).expect("bounded by MAX_BODY_BYTES").to_le_bytes());
    out.extend_from_slice(&[0; 4]); // checksum, filled in below
    out.extend_from_slice(&lsn.to_le_bytes());
    out.extend_from_slice(&seq.to_le_bytes());
    out.extend_from_slice(&commit_us.to_le_bytes());
    if let Some(marker) = head {
        put_marker(out, marker);
    }
    let crc = crc32c::crc32c_combine(crc32c::crc32c(&out[start + CRC_START..]), body_crc, body.len());
    out.extend_from_slice(body);
    assert_eq!(out.len() - start, HEADER_BYTES + len, "the header's length agrees with the encoding");
    out[start + CRC_OFFSET..start + CRC_OFFSET + 4].copy_from_slice(&crc.to_le_bytes());
    Ok(())
}

/// Appends a stream marker.
///
/// # Panics
/// For any other change.
fn put_marker(out: &mut Vec<u8>, marker: &Change) {
    let (kind, first) = match marker {
        Change::StreamPart { first } => (KIND_STREAM_PART, first),
        Change::StreamCommit { first } => (KIND_STREAM_COMMIT, first),
        Change::StreamAbort { first } => (KIND_STREAM_ABORT, first),
        _ => panic!("not a stream marker: {marker:?}"),
    };
    out.push(kind);
    out.extend_from_slice(&first.to_le_bytes());
}

fn put_str16(out: &mut Vec<u8>, s: &str) -> Result<(), EncodeError> {
    let len = u16::try_from(s.len()).map_err(|_| EncodeError::NameTooLong(s.len()))?;
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(s.as_bytes());
    Ok(())
}

fn put_bytes32(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&u32::try_from(b.len()).expect("bounded by MAX_BODY_BYTES").to_le_bytes());
    out.extend_from_slice(b);
}

/// The fixed header of a record, before its checksum is verified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub body_len: usize,
    pub crc: u32,
    pub lsn: Lsn,
    pub seq: u64,
    pub commit_us: u64,
}

#[must_use]
pub fn decode_header(bytes: &[u8; HEADER_BYTES]) -> Header {
    let u32_at = |o: usize| u32::from_le_bytes(bytes[o..o + 4].try_into().expect("4 bytes"));
    let u64_at = |o: usize| u64::from_le_bytes(bytes[o..o + 8].try_into().expect("8 bytes"));
    Header {
        body_len: u32_at(LEN_OFFSET) as usize,
        crc: u32_at(CRC_OFFSET),
        lsn: u64_at(LSN_OFFSET),
        seq: u64_at(SEQ_OFFSET),
        commit_us: u64_at(COMMIT_US_OFFSET),
    }
}

/// Whether header and body match the header's checksum.
#[must_use]
pub fn checksum_ok(header_bytes: &[u8; HEADER_BYTES], body: &[u8]) -> bool {
    let crc = crc32c::crc32c_append(crc32c::crc32c(&header_bytes[CRC_START..]), body);
    crc == decode_header(header_bytes).crc
}

/// Decodes a verified body into changes; `None` if it is malformed.
#[must_use]
pub fn decode_body(mut body: &[u8]) -> Option<Vec<Change>> {
    let mut changes = Vec::new();
    while let Some((&kind, rest)) = body.split_first() {
        body = rest;
        let change = match kind {
            KIND_INSERT | KIND_PUT | KIND_PUT_V1 => {
                let (db, table, key) = take_keyed(&mut body)?;
                let row = take_len32(&mut body)?.to_vec();
                match kind {
                    KIND_INSERT => Change::Insert { db, table, key, row },
                    KIND_PUT => Change::Put { db, table, key, row },
                    _ => Change::PutV1 { db, table, key, row },
                }
            }
            KIND_UPDATE => {
                let (db, table, key) = take_keyed(&mut body)?;
                let before = take_image(&mut body)?;
                Change::Update { db, table, key, before, row: take_len32(&mut body)?.to_vec() }
            }
            KIND_DELETE => {
                let (db, table, key) = take_keyed(&mut body)?;
                Change::Delete { db, table, key, before: take_image(&mut body)? }
            }
            KIND_DELETE_V1 => {
                let (db, table, key) = take_keyed(&mut body)?;
                Change::Delete { db, table, key, before: None }
            }
            KIND_DDL | KIND_DDL_V1 => {
                let db = take_str16(&mut body)?;
                let context = if kind == KIND_DDL { Some(DdlContext { sql_mode: take_str16(&mut body)?, time_zone: take_str16(&mut body)? }) } else { None };
                Change::Ddl { db, sql: String::from_utf8(take_len32(&mut body)?.to_vec()).ok()?, context }
            }
            KIND_STREAM_PART | KIND_STREAM_COMMIT | KIND_STREAM_ABORT => {
                // A marker comes first, and only once.
                if !changes.is_empty() {
                    return None;
                }
                let first = Lsn::from_le_bytes(body.get(..8)?.try_into().ok()?);
                body = &body[8..];
                match kind {
                    KIND_STREAM_PART => Change::StreamPart { first },
                    KIND_STREAM_COMMIT => Change::StreamCommit { first },
                    _ => Change::StreamAbort { first },
                }
            }
            KIND_ORIGIN => {
                let fixed = body.get(..ORIGIN_BYTES - 1)?;
                body = &body[ORIGIN_BYTES - 1..];
                let u64_at = |o: usize| u64::from_le_bytes(fixed[o..o + 8].try_into().expect("8 bytes"));
                Change::Origin(Origin {
                    uuid: fixed[..ORIGIN_UUID_BYTES].try_into().expect("16 bytes"),
                    gno: u64_at(ORIGIN_UUID_BYTES),
                    original_commit_us: u64_at(ORIGIN_UUID_BYTES + 8),
                    original_server_version: u32::from_le_bytes(fixed[ORIGIN_UUID_BYTES + 16..].try_into().expect("4 bytes")),
                })
            }
            _ => return None,
        };
        changes.push(change);
    }
    // An origin is a commit record's last change, and comes once.
    let origins = changes.iter().filter(|c| matches!(c, Change::Origin(_))).count();
    if origins > 1 || (origins == 1 && !matches!(changes.last(), Some(Change::Origin(_)))) {
        return None;
    }
    let valid = match changes.first() {
        None | Some(Change::Origin(_)) => false,
        Some(Change::StreamAbort { .. }) => changes.len() == 1,
        Some(Change::StreamPart { .. }) => changes[1..].iter().all(|c| {
            !matches!(c, Change::Ddl { .. } | Change::StreamPart { .. } | Change::StreamCommit { .. } | Change::StreamAbort { .. } | Change::Origin(_))
        }),
        Some(_) => true,
    };
    valid.then_some(changes)
}

/// A row change's database, table and key.
fn take_keyed(body: &mut &[u8]) -> Option<(String, String, Vec<u8>)> {
    Some((take_str16(body)?, take_str16(body)?, take_len32(body)?.to_vec()))
}

/// A before image: `None` when empty (not logged).
fn take_image(body: &mut &[u8]) -> Option<Option<Vec<u8>>> {
    let image = take_len32(body)?;
    Some((!image.is_empty()).then(|| image.to_vec()))
}

/// The file name of the segment starting at `start`.
#[must_use]
pub fn segment_name(start: Lsn) -> String {
    format!("{start:0width$}{SEGMENT_SUFFIX}", width = SEGMENT_NAME_DIGITS)
}

/// The start LSN of a segment file name, or `None` for any other file.
#[must_use]
pub fn parse_segment_name(name: &str) -> Option<Lsn> {
    let digits = name.strip_suffix(SEGMENT_SUFFIX)?;
    (digits.len() == SEGMENT_NAME_DIGITS && digits.bytes().all(|b| b.is_ascii_digit())).then(|| digits.parse().ok()).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn sample_changes() -> Vec<Change> {
        vec![
            Change::Ddl {
                db: "app".into(),
                sql: "CREATE TABLE t (id INT PRIMARY KEY)".into(),
                context: Some(DdlContext { sql_mode: "STRICT_TRANS_TABLES".into(), time_zone: "+02:00".into() }),
            },
            Change::Insert { db: "app".into(), table: "t".into(), key: vec![1, 2, 3], row: vec![9; 40] },
            Change::Delete { db: "app".into(), table: "t".into(), key: vec![4], before: Some(vec![0, 1, 0]) },
        ]
    }

    #[test]
    fn a_record_round_trips_and_its_length_is_predicted() {
        let changes = sample_changes();
        let mut out = Vec::new();
        encode_record(&mut out, 4096, 7, 1_700_000_000_000_000, &changes).unwrap();
        let record = Record { lsn: 4096, seq: 7, commit_us: 1_700_000_000_000_000, changes: changes.clone() };
        assert_eq!(out.len(), record.encoded_len());
        let header_bytes: [u8; HEADER_BYTES] = out[..HEADER_BYTES].try_into().unwrap();
        let header = decode_header(&header_bytes);
        assert_eq!((header.lsn, header.seq, header.body_len), (4096, 7, out.len() - HEADER_BYTES));
        assert!(checksum_ok(&header_bytes, &out[HEADER_BYTES..]));
        assert_eq!(decode_body(&out[HEADER_BYTES..]), Some(changes));
    }

    #[test]
    fn an_origin_round_trips_as_the_last_change_and_only_there() {
        let origin = Origin { uuid: [7; ORIGIN_UUID_BYTES], gno: 42, original_commit_us: 1_700_000_000_000_001, original_server_version: 80_036 };
        let mut changes = sample_changes()[1..].to_vec();
        changes.push(Change::Origin(origin));
        let body = Body::of(&changes).unwrap();
        assert_eq!(body.len(), body_len(&changes));
        assert_eq!(decode_body(body.bytes()), Some(changes.clone()));
        // Anywhere but last, twice, or alone, it is not a record this format writes.
        changes.swap(0, 2);
        assert_eq!(decode_body(Body::of(&changes).unwrap().bytes()), None);
        assert_eq!(decode_body(Body::of(&[Change::Origin(origin)]).unwrap().bytes()), None);
        let twice = [sample_changes()[1].clone(), Change::Origin(origin), Change::Origin(origin)];
        assert_eq!(decode_body(Body::of(&twice).unwrap().bytes()), None);
        // Cut short, it does not decode.
        let whole = Body::of(&[sample_changes()[1].clone(), Change::Origin(origin)]).unwrap();
        assert_eq!(decode_body(&whole.bytes()[..whole.len() - 1]), None);
    }

    #[test]
    fn a_body_built_change_by_change_is_the_encoding_of_its_changes_after_a_marker() {
        let mut body = Body::new();
        body.push(&sample_changes()[0]).unwrap();
        body.insert("app", "t", &[1, 2, 3], &[9; 40]).unwrap();
        body.delete("app", "t", &[4], Some(&[0, 1, 0])).unwrap();
        assert_eq!(body.bytes(), Body::of(&sample_changes()).unwrap().bytes());
        assert_eq!(body.len(), body_len(&sample_changes()));
        // A name too long for its length field adds nothing.
        let long = "x".repeat(usize::from(u16::MAX) + 1);
        assert_eq!(body.insert(&long, "t", &[1], &[2]), Err(EncodeError::NameTooLong(long.len())));
        assert_eq!(body.update("app", &long, &[1], None, &[2]), Err(EncodeError::NameTooLong(long.len())));
        assert_eq!(body.delete("app", &long, &[1], None), Err(EncodeError::NameTooLong(long.len())));
        assert_eq!(body.len(), body_len(&sample_changes()));
        // The marker is written ahead of the body, and the checksum combined from the body's.
        let marker = Change::StreamPart { first: 77 };
        let mut out = Vec::new();
        encode_record_body(&mut out, 4096, 0, 0, Some(&marker), body.bytes(), crc32c::crc32c(body.bytes())).unwrap();
        let header_bytes: [u8; HEADER_BYTES] = out[..HEADER_BYTES].try_into().unwrap();
        assert!(checksum_ok(&header_bytes, &out[HEADER_BYTES..]));
        assert_eq!(decode_body(&out[HEADER_BYTES..]), None, "a part holds rows only, no DDL");
        let rows = Body::of(&sample_changes()[1..]).unwrap();
        out.clear();
        encode_record_body(&mut out, 4096, 0, 0, Some(&marker), rows.bytes(), crc32c::crc32c(rows.bytes())).unwrap();
        let header_bytes: [u8; HEADER_BYTES] = out[..HEADER_BYTES].try_into().unwrap();
        assert!(checksum_ok(&header_bytes, &out[HEADER_BYTES..]));
        let mut changes = vec![marker];
        changes.extend(sample_changes().into_iter().skip(1));
        assert_eq!(decode_body(&out[HEADER_BYTES..]), Some(changes));
    }

    #[test]
    fn every_kind_of_change_round_trips_and_an_empty_before_image_is_none() {
        let changes = vec![
            Change::Update { db: "app".into(), table: "t".into(), key: vec![1], before: Some(vec![0, 2, 1, 2, 1, 4]), row: vec![0, 2, 1, 2, 1, 6] },
            Change::Update { db: "app".into(), table: "t".into(), key: vec![1], before: None, row: vec![0, 2, 1, 2, 1, 8] },
            Change::Delete { db: "app".into(), table: "t".into(), key: vec![1], before: None },
            Change::Ddl { db: String::new(), sql: "CREATE DATABASE d".into(), context: Some(DdlContext::default()) },
        ];
        let body = Body::of(&changes).unwrap();
        assert_eq!(body.len(), body_len(&changes));
        assert_eq!(decode_body(body.bytes()), Some(changes));
    }

    #[test]
    fn the_kinds_of_older_logs_are_read_as_such() {
        let old = vec![
            Change::PutV1 { db: "app".into(), table: "t".into(), key: vec![1], row: vec![1, 0, 0] },
            Change::Put { db: "app".into(), table: "t".into(), key: vec![1], row: vec![0, 1, 0] },
            Change::Ddl { db: "app".into(), sql: "DROP TABLE t".into(), context: None },
        ];
        let body = Body::of(&old).unwrap();
        assert_eq!(body.bytes()[0], KIND_PUT_V1);
        assert_eq!(decode_body(body.bytes()), Some(old));
        // A DELETE of the first log format: kind 2, no before image.
        let mut v1 = vec![KIND_DELETE_V1];
        for part in [&b"app"[..], b"t"] {
            v1.extend_from_slice(&(part.len() as u16).to_le_bytes());
            v1.extend_from_slice(part);
        }
        v1.extend_from_slice(&1_u32.to_le_bytes());
        v1.push(4);
        assert_eq!(decode_body(&v1), Some(vec![Change::Delete { db: "app".into(), table: "t".into(), key: vec![4], before: None }]));
        assert_eq!(Body::of(&sample_changes()[1..2]).unwrap().bytes()[0], KIND_INSERT);
    }

    #[test]
    fn any_flipped_bit_fails_the_checksum() {
        let mut out = Vec::new();
        encode_record(&mut out, 0, 1, 2, &sample_changes()).unwrap();
        for byte in CRC_START..out.len() {
            let mut corrupt = out.clone();
            corrupt[byte] ^= 0x10;
            let header_bytes: [u8; HEADER_BYTES] = corrupt[..HEADER_BYTES].try_into().unwrap();
            assert!(!checksum_ok(&header_bytes, &corrupt[HEADER_BYTES..]), "flip at byte {byte} went unnoticed");
        }
    }

    #[test]
    fn empty_and_oversized_transactions_are_refused() {
        assert_eq!(encode_record(&mut Vec::new(), 0, 1, 0, &[]), Err(EncodeError::Empty));
        let huge = vec![Change::Put { db: "d".into(), table: "t".into(), key: vec![], row: vec![0; MAX_BODY_BYTES] }];
        assert!(matches!(encode_record(&mut Vec::new(), 0, 1, 0, &huge), Err(EncodeError::TooLarge(_))));
    }

    #[test]
    fn truncated_or_unknown_bodies_do_not_decode() {
        let mut out = Vec::new();
        encode_record(&mut out, 0, 1, 2, &sample_changes()).unwrap();
        let body = &out[HEADER_BYTES..];
        for cut in 1..body.len() {
            if let Some(changes) = decode_body(&body[..cut]) {
                // A cut exactly between two changes decodes to the changes before it.
                assert!(changes.len() < 3, "cut at {cut}");
            }
        }
        assert_eq!(decode_body(&[0x7f]), None);
        assert_eq!(decode_body(&[]), None);
    }

    #[test]
    fn segment_names_sort_by_start_and_parse_back() {
        assert_eq!(segment_name(67_108_864), "00000000000067108864.qlog");
        assert_eq!(parse_segment_name(&segment_name(u64::MAX)), Some(u64::MAX));
        assert!(segment_name(9) < segment_name(10));
        assert_eq!(parse_segment_name("checkpoint.tmp"), None);
        assert_eq!(parse_segment_name("123.qlog"), None);
    }
}
