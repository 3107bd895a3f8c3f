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
    assert_eq!(events[3].header().event_size() as usize, gtid_event_bytes(&gtid), "a GTID event's size, told ahead");
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
    assert_eq!(gtid_event_bytes(&gtid), EVENT_HEADER_BYTES + one.len() + CHECKSUM_BYTES);
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
        assert_eq!((out.len(), packed_int_bytes(v)), (len, len), "{v}");
    }
}

mod rows_events {
    use mysql_common::Value as V;
    use mysql_common::binlog::value::BinlogValue;

    use super::super::rows::{Column, ColumnKind, Rows, rows_body, table_map_body};
    use super::*;
    use crate::binary::BinaryValue as B;

    fn column(name: &str, kind: ColumnKind) -> Column<'_> {
        Column { name, kind, nullable: true, unsigned: false, collation: 255 }
    }

    fn columns() -> Vec<Column<'static>> {
        vec![
            Column { nullable: false, ..column("id", ColumnKind::Long) },
            column("name", ColumnKind::VarChar { max_bytes: 160 }),
            column("code", ColumnKind::Char { max_bytes: 32 }),
            column("price", ColumnKind::Decimal { precision: 10, scale: 2 }),
            column("big", ColumnKind::Decimal { precision: 30, scale: 12 }),
            column("ratio", ColumnKind::Double),
            column("note", ColumnKind::Blob { length_bytes: 2 }),
            column("at", ColumnKind::DateTime { fsp: 6 }),
            column("ts", ColumnKind::Timestamp { fsp: 3 }),
            column("t", ColumnKind::Time { fsp: 0 }),
            column("t6", ColumnKind::Time { fsp: 6 }),
            column("y", ColumnKind::Year),
            Column { unsigned: true, ..column("u", ColumnKind::LongLong) },
            column("small", ColumnKind::Tiny),
            column("flags", ColumnKind::Bit { bits: 12 }),
        ]
    }

    fn row(id: i64, name: &str, price: &str, big: &str, negative_time: bool) -> Vec<B> {
        vec![
            B::Int(id),
            B::Bytes(name.into()),
            B::Bytes(b"AB".to_vec()),
            B::Bytes(price.into()),
            B::Bytes(big.into()),
            B::Double(0.25),
            B::Bytes("é".repeat(300).into_bytes()),
            B::DateTime { year: 2026, month: 11, day: 24, hour: 10, minute: 42, second: 7, micro: 123_456 },
            B::DateTime { year: 2026, month: 11, day: 24, hour: 10, minute: 42, second: 7, micro: 250_000 },
            B::Time { negative: negative_time, days: 1, hours: 2, minutes: 3, seconds: 4, micro: 0 },
            B::Time { negative: negative_time, days: 34, hours: 22, minutes: 59, seconds: 58, micro: 999_999 },
            B::UInt(2026),
            B::UInt(u64::MAX - 1),
            B::Int(-3),
            B::UInt(0xABC),
        ]
    }

    /// A row event's row as read back: the image before and the image after.
    type Images = (Option<Vec<V>>, Option<Vec<V>>);

    fn decoded(v: Option<&BinlogValue<'_>>) -> V {
        match v {
            Some(BinlogValue::Value(v)) => v.clone(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn rows_of_every_kind_of_column_read_back_with_their_table_map() {
        let columns = columns();
        let first = row(1, "one", "123.45", "-123456789012345678.000000000001", false);
        let second = row(2, "two", "-0.05", "0.000000000000", true);
        let mut nulls = row(3, "three", "0.00", "1.5", false);
        for v in &mut nulls[1..] {
            *v = B::Null;
        }
        let mut out = Vec::new();
        event(&mut out, &header(0, 0), event_type::FORMAT_DESCRIPTION, |b| format_description_body(b, "8.0.40", 0));
        event(&mut out, &header(100, 0), event_type::TABLE_MAP, |b| table_map_body(b, 77, "shop", "items", &columns, &[0]));
        let writes = [&first[..], &second[..], &nulls[..]];
        let mut body = Vec::new();
        rows_body(&mut body, 77, false, &columns, Rows::Write(&writes)).unwrap();
        event(&mut out, &header(200, 0), event_type::WRITE_ROWS, |b| b.extend_from_slice(&body));
        let changed = row(1, "uno", "99.99", "7", false);
        body.clear();
        rows_body(&mut body, 77, false, &columns, Rows::Update(&[(&first[..], &changed[..])])).unwrap();
        event(&mut out, &header(300, 0), event_type::UPDATE_ROWS, |b| b.extend_from_slice(&body));
        body.clear();
        rows_body(&mut body, 77, true, &columns, Rows::Delete(&[&second[..]])).unwrap();
        event(&mut out, &header(400, 0), event_type::DELETE_ROWS, |b| b.extend_from_slice(&body));

        let events = read_all(&out);
        let Some(EventData::TableMapEvent(tme)) = events[1].read_data().unwrap() else { panic!("a table map") };
        assert_eq!((tme.table_id(), tme.database_name().as_ref(), tme.table_name().as_ref(), tme.columns_count()), (77, "shop", "items", 15));
        let images = |e: &Event| -> Vec<Images> {
            let rows = match e.read_data().unwrap().unwrap() {
                EventData::RowsEvent(r) => r.rows(&tme).map(|r| r.unwrap()).collect::<Vec<_>>(),
                other => panic!("{other:?}"),
            };
            let values = |r: Option<mysql_common::binlog::row::BinlogRow>| r.map(|r| (0..15).map(|i| decoded(r.as_ref(i))).collect());
            rows.into_iter().map(|(b, a)| (values(b), values(a))).collect()
        };
        let written = images(&events[2]);
        let expected_first = vec![
            V::Int(1),
            V::Bytes(b"one".to_vec()),
            V::Bytes(b"AB".to_vec()),
            V::Bytes(b"123.45".to_vec()),
            V::Bytes(b"-123456789012345678.000000000001".to_vec()),
            V::Double(0.25),
            V::Bytes("é".repeat(300).into_bytes()),
            V::Date(2026, 11, 24, 10, 42, 7, 123_456),
            V::Bytes(b"1795516927.250000".to_vec()),
            V::Time(false, 1, 2, 3, 4, 0),
            V::Time(false, 34, 22, 59, 58, 999_999),
            V::Bytes(b"2026".to_vec()),
            V::UInt(u64::MAX - 1),
            V::Int(-3),
            // BIT(12): its two bytes, most significant first.
            V::Bytes(vec![0x0A, 0xBC]),
        ];
        assert_eq!(written[0], (None, Some(expected_first.clone())));
        let second_read = written[1].1.clone().unwrap();
        assert_eq!((&second_read[3], &second_read[4]), (&V::Bytes(b"-0.05".to_vec()), &V::Bytes(b"0.000000000000".to_vec())));
        assert_eq!((&second_read[9], &second_read[10]), (&V::Time(true, 1, 2, 3, 4, 0), &V::Time(true, 34, 22, 59, 58, 999_999)));
        let null_read = written[2].1.clone().unwrap();
        assert_eq!(null_read[0], V::Int(3));
        assert!(null_read[1..].iter().all(|v| *v == V::NULL), "{null_read:?}");
        let updated = images(&events[3]);
        assert_eq!(updated.len(), 1);
        assert_eq!(updated[0].0.as_ref().unwrap(), &expected_first);
        assert_eq!(updated[0].1.as_ref().unwrap()[1], V::Bytes(b"uno".to_vec()));
        assert_eq!(updated[0].1.as_ref().unwrap()[4], V::Bytes(b"7.000000000000".to_vec()));
        let deleted = images(&events[4]);
        assert_eq!((deleted[0].0.as_ref().unwrap()[0].clone(), deleted[0].1.is_none()), (V::Int(2), true));
    }
}

mod more_kinds {
    use mysql_common::Value as V;
    use mysql_common::binlog::value::BinlogValue;

    use super::super::rows::{Column, ColumnKind, Rows, rows_body, table_map_body};
    use super::*;
    use crate::binary::BinaryValue as B;

    /// TIME with 1 to 4 digits of fraction stores the fraction apart, signed; FLOAT, SHORT,
    /// INT24 and a CHAR longer than 255 bytes (a 2-byte length) round it out.
    #[test]
    fn times_with_short_fractions_and_the_remaining_kinds_read_back() {
        let kind = |name: &'static str, kind| Column { name, kind, nullable: true, unsigned: false, collation: 255 };
        let columns = [
            kind("t2", ColumnKind::Time { fsp: 2 }),
            kind("t4", ColumnKind::Time { fsp: 4 }),
            kind("f", ColumnKind::Float),
            kind("s", ColumnKind::Short),
            kind("m", ColumnKind::Int24),
            kind("c", ColumnKind::Char { max_bytes: 1020 }),
        ];
        let time = |negative, micro| B::Time { negative, days: 0, hours: 1, minutes: 2, seconds: 3, micro };
        let rows: Vec<Vec<B>> = [(false, 120_000), (true, 120_000), (true, 0), (false, 0), (true, 990_000)]
            .into_iter()
            // The decoder overflows on a negative TIME(1..2) with a fraction (it reads the signed
            // fraction byte unsigned): those are checked byte by byte below.
            .map(|(negative, micro)| {
                vec![time(false, micro), time(negative, micro + 5_600), B::Float(1.5), B::Int(-300), B::Int(70_000), B::Bytes(vec![b'x'; 300])]
            })
            .collect();
        let images: Vec<&[B]> = rows.iter().map(Vec::as_slice).collect();
        let mut out = Vec::new();
        event(&mut out, &header(0, 0), event_type::FORMAT_DESCRIPTION, |b| format_description_body(b, "8.0.40", 0));
        event(&mut out, &header(100, 0), event_type::TABLE_MAP, |b| table_map_body(b, 5, "d", "t", &columns, &[]));
        let mut body = Vec::new();
        rows_body(&mut body, 5, true, &columns, Rows::Write(&images)).unwrap();
        event(&mut out, &header(200, 0), event_type::WRITE_ROWS, |b| b.extend_from_slice(&body));
        let events = read_all(&out);
        let Some(EventData::TableMapEvent(tme)) = events[1].read_data().unwrap() else { panic!("a table map") };
        let Some(EventData::RowsEvent(r)) = events[2].read_data().unwrap() else { panic!("rows") };

        let read: Vec<Vec<V>> = r
            .rows(&tme)
            .map(|row| {
                let after = row.unwrap().1.unwrap();
                (0..columns.len()).map(|i| if let Some(BinlogValue::Value(v)) = after.as_ref(i) { v.clone() } else { panic!() }).collect()
            })
            .collect();
        for (row, (negative, micro)) in read.iter().zip([(false, 120_000), (true, 120_000), (true, 0), (false, 0), (true, 990_000)]) {
            assert_eq!(row[0], V::Time(false, 0, 1, 2, 3, micro), "fsp 2, {micro}");
            assert_eq!(row[1], V::Time(negative, 0, 1, 2, 3, micro + 5_600), "fsp 4, {negative} {micro}");
            assert_eq!(&row[2..5], &[V::Float(1.5), V::Int(-300), V::Int(70_000)]);
            assert_eq!(row[5], V::Bytes(vec![b'x'; 300]));
        }
    }

    /// A negative TIME(2) with a fraction, as MySQL stores it: the packed value's integer part
    /// (`>> 24`, rounded down) offset by 0x800000, then the fraction in hundredths as a
    /// signed byte (its reader adds one back to the integer part when the fraction is not 0).
    #[test]
    fn a_negative_time_with_hundredths_stores_its_fraction_signed() {
        let columns = [Column { name: "t", kind: ColumnKind::Time { fsp: 2 }, nullable: false, unsigned: false, collation: 63 }];
        let mut body = Vec::new();
        let value = B::Time { negative: true, days: 0, hours: 1, minutes: 2, seconds: 3, micro: 120_000 };
        rows_body(&mut body, 1, true, &columns, Rows::Write(&[&[value]])).unwrap();
        let int_part: i64 = (1 << 12) | (2 << 6) | 3;
        let stored = 0x80_0000 - int_part - 1;
        assert_eq!(&body[body.len() - 4..], &[(stored >> 16) as u8, (stored >> 8) as u8, stored as u8, (-12_i8) as u8]);
    }

    /// A MEDIUMINT is three bytes of two's complement (the decoder does not sign-extend
    /// them, so a negative one is checked here).
    #[test]
    fn a_negative_mediumint_is_three_bytes_of_twos_complement() {
        let columns = [Column { name: "m", kind: ColumnKind::Int24, nullable: false, unsigned: false, collation: 63 }];
        let mut body = Vec::new();
        rows_body(&mut body, 1, true, &columns, Rows::Write(&[&[B::Int(-70_000)]])).unwrap();
        assert_eq!(&body[body.len() - 3..], &(-70_000_i32).to_le_bytes()[..3]);
    }

    /// DATE is three bytes: day, month << 5, year << 9 (MySQL's Field_newdate).
    #[test]
    fn a_date_is_three_bytes_of_day_month_and_year() {
        let columns = [Column { name: "d", kind: ColumnKind::Date, nullable: false, unsigned: false, collation: 63 }];
        let mut body = Vec::new();
        rows_body(&mut body, 1, true, &columns, Rows::Write(&[&[B::Date { year: 2026, month: 11, day: 24 }]])).unwrap();
        let packed = 24 | (11 << 5) | (2026 << 9);
        assert_eq!(&body[body.len() - 3..], &u32::to_le_bytes(packed)[..3]);
    }
}
