//! Quill's binlog events, read back by a decoder written by others (`mysql_common`'s, which
//! MySQL-ecosystem clients in Rust use): a dump's opening events and one transaction's, with
//! every field and every checksum checked.

use mysql_common::binlog::EventStreamReader;
use mysql_common::binlog::consts::{BinlogChecksumAlg, BinlogVersion, StatusVarKey};
use mysql_common::binlog::events::{Event, EventData, StatusVarVal};

use super::*;

const UUID: [u8; UUID_BYTES] = [0x3e, 0x11, 0xfa, 0x47, 0x71, 0xca, 0x11, 0xe1, 0x9e, 0x33, 0xc8, 0x0a, 0xa9, 0x42, 0x95, 0x62];

fn header(log_pos: u32, flags: u16) -> EventHeader {
    EventHeader { timestamp: 1_795_000_000, server_id: 7, log_pos, flags }
}

/// Reads every event in `bytes`, checking each one's size and checksum.
fn read_all(bytes: &[u8]) -> Vec<Event> {
    let mut reader = EventStreamReader::new(BinlogVersion::Version4);
    let mut rest = bytes;
    let mut events = Vec::new();
    while let Some(event) = reader.read(&mut rest).unwrap() {
        let size = event.header().event_size() as usize;
        let consumed = bytes.len() - rest.len();
        let raw = &bytes[consumed - size..consumed];
        let crc = u32::from_le_bytes(raw[size - CHECKSUM_BYTES..].try_into().unwrap());
        assert_eq!(crc, crc32fast::hash(&raw[..size - CHECKSUM_BYTES]), "event {} checksum", events.len());
        assert_eq!(event.calc_checksum(BinlogChecksumAlg::BINLOG_CHECKSUM_ALG_CRC32), crc, "the decoder's checksum agrees");
        events.push(event);
    }
    events
}

#[test]
fn a_dumps_opening_events_and_a_transaction_read_back_whole() {
    let mut out = Vec::new();
    // The decoder learns of checksums from the format description, so it comes first here
    // (a dump opens with an artificial ROTATE, which clients read knowing the checksum from
    // `@source_binlog_checksum`).
    event(&mut out, &header(0, 0), event_type::FORMAT_DESCRIPTION, |b| format_description_body(b, "8.0.40-quill-0.1.0", 1_795_000_000));
    event(&mut out, &header(0, FLAG_ARTIFICIAL), event_type::ROTATE, |b| rotate_body(b, 4, "binlog.000001"));
    event(&mut out, &header(200, 0), event_type::PREVIOUS_GTIDS, |b| previous_gtids_body(b, &[(UUID, &[(1, 42), (50, 51)])]));
    let gtid = Gtid {
        uuid: UUID,
        gno: 42,
        last_committed: 40,
        sequence_number: 41,
        original_commit_us: 1_795_000_000_123_456,
        immediate_commit_us: 1_795_000_000_223_456,
        transaction_length: 300,
        original_server_version: 80040,
        immediate_server_version: 80041,
    };
    event(&mut out, &header(300, 0), event_type::GTID, |b| gtid_body(b, &gtid));
    let context = QueryContext { thread_id: 9, exec_time: 0, error_code: 0, db: "shop", sql_mode: 1 << 21, time_zone: "+02:00", charsets: [255, 255, 255] };
    event(&mut out, &header(400, 0), event_type::QUERY, |b| query_body(b, &context, "BEGIN"));
    event(&mut out, &header(500, 0), event_type::XID, |b| xid_body(b, 42));
    event(&mut out, &header(0, FLAG_ARTIFICIAL), event_type::HEARTBEAT, |b| heartbeat_body(b, "binlog.000001"));

    let events = read_all(&out);
    assert_eq!(events.len(), 7);
    for (e, (log_pos, type_code)) in events.iter().zip([(0, 15), (0, 4), (200, 35), (300, 33), (400, 2), (500, 16), (0, 27)]) {
        assert_eq!((e.header().log_pos(), e.header().event_type_raw(), e.header().timestamp()), (log_pos, type_code, 1_795_000_000));
    }
    let data: Vec<EventData> = events.iter().map(|e| e.read_data().unwrap().unwrap()).collect();
    let EventData::RotateEvent(rotate) = &data[1] else { panic!("{:?}", data[1]) };
    assert_eq!((rotate.position(), rotate.name().as_ref()), (4, "binlog.000001"));
    let EventData::FormatDescriptionEvent(fde) = &data[0] else { panic!("{:?}", data[0]) };
    // NUL-padded to its 50 bytes, as MySQL writes it.
    let version = fde.server_version();
    assert_eq!((version.trim_end_matches('\0'), fde.create_timestamp(), fde.event_header_length()), ("8.0.40-quill-0.1.0", 1_795_000_000, 19));
    assert_eq!(fde.event_type_header_lengths(), &POST_HEADER_BYTES[..]);
    let EventData::PreviousGtidsEvent(previous) = &data[2] else { panic!("{:?}", data[2]) };
    let sids = previous.sids();
    assert_eq!((sids.len(), sids[0].uuid()), (1, UUID));
    assert_eq!(sids[0].intervals().iter().map(|i| (i.start(), i.end())).collect::<Vec<_>>(), [(1, 42), (50, 51)]);
    let EventData::GtidEvent(g) = &data[3] else { panic!("{:?}", data[3]) };
    assert_eq!((g.sid(), g.gno(), g.last_committed(), g.sequence_number()), (UUID, 42, 40, 41));
    assert_eq!((g.original_commit_timestamp(), g.immediate_commit_timestamp()), (gtid.original_commit_us, gtid.immediate_commit_us));
    assert_eq!((g.tx_length(), g.original_server_version(), g.immediate_server_version()), (300, 80040, 80041));
    let EventData::QueryEvent(q) = &data[4] else { panic!("{:?}", data[4]) };
    assert_eq!((q.thread_id(), q.schema().as_ref(), q.query().as_ref()), (9, "shop", "BEGIN"));
    let vars = q.status_vars();
    let Ok(StatusVarVal::SqlMode(mode)) = vars.get_status_var(StatusVarKey::SqlMode).unwrap().get_value() else { panic!("sql_mode") };
    assert_eq!(mode.0, 1 << 21);
    let tz_var = vars.get_status_var(StatusVarKey::TimeZone).unwrap();
    let Ok(StatusVarVal::TimeZone(tz)) = tz_var.get_value() else { panic!("time_zone") };
    assert_eq!(tz.as_str(), "+02:00");
    let Ok(StatusVarVal::Charset { charset_client, collation_connection, collation_server }) = vars.get_status_var(StatusVarKey::Charset).unwrap().get_value()
    else {
        panic!("charset")
    };
    assert_eq!((charset_client, collation_connection, collation_server), (255, 255, 255));
    let EventData::XidEvent(xid) = &data[5] else { panic!("{:?}", data[5]) };
    assert_eq!(xid.xid, 42);
    assert!(matches!(data[6], EventData::HeartbeatEvent));
}

#[test]
fn equal_commit_times_and_versions_are_written_once_and_read_as_both() {
    let gtid = Gtid {
        uuid: UUID,
        gno: 1,
        last_committed: 0,
        sequence_number: 1,
        original_commit_us: 1_795_000_000_000_001,
        immediate_commit_us: 1_795_000_000_000_001,
        transaction_length: 70_000,
        original_server_version: 80040,
        immediate_server_version: 80040,
    };
    let mut one = Vec::new();
    gtid_body(&mut one, &gtid);
    // Fixed part, one 7-byte time, a 3-byte packed length, one version.
    assert_eq!(one.len(), GTID_POST_HEADER_BYTES + 7 + 4 + 4);
    let mut out = Vec::new();
    event(&mut out, &header(0, FLAG_ARTIFICIAL), event_type::FORMAT_DESCRIPTION, |b| format_description_body(b, "8.0.40", 0));
    event(&mut out, &header(100, 0), event_type::GTID, |b| gtid_body(b, &gtid));
    let events = read_all(&out);
    let Some(EventData::GtidEvent(g)) = events[1].read_data().unwrap() else { panic!("a GTID event") };
    assert_eq!((g.original_commit_timestamp(), g.immediate_commit_timestamp(), g.tx_length()), (gtid.original_commit_us, gtid.original_commit_us, 70_000));
    assert_eq!((g.original_server_version(), g.immediate_server_version()), (80040, 80040));
}

#[test]
fn packed_integers_take_the_fewest_bytes() {
    for (v, len) in [(0, 1), (250, 1), (251, 3), (65_535, 3), (65_536, 4), (16_777_215, 4), (16_777_216, 9), (u64::MAX, 9)] {
        let mut out = Vec::new();
        put_packed_int(&mut out, v);
        assert_eq!(out.len(), len, "{v}");
    }
}
