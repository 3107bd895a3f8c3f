//! Transactions run through a real engine, read back from its commit log, made into events,
//! and read by `mysql_common`'s decoder as a replica or a change-capture client would.

use std::path::PathBuf;
use std::sync::Arc;

use mysql_common::Value as V;
use mysql_common::binlog::EventStreamReader;
use mysql_common::binlog::consts::BinlogVersion;
use mysql_common::binlog::events::{Event, EventData};
use mysql_common::binlog::value::BinlogValue;
use quill_io::SimFs;
use quill_log::{Change, Record};
use quill_protocol::binlog::{EventHeader, event_at, event_type, format_description_body};
use quill_sql::durability;
use quill_sql::session::Outcome;
use quill_sql::{Engine, Session};

use super::*;

const SOURCE: Source = Source { server_id: 1, uuid: [7; UUID_BYTES], server_version: 80040, charsets: [255, 255, 255] };

fn datadir() -> PathBuf {
    PathBuf::from("/quill")
}

/// Runs `statements` in a new engine on a simulated disk; returns the engine and the
/// committed transactions of its log.
fn run(statements: &[&str]) -> (Arc<Engine>, Vec<Record>) {
    let fs = SimFs::new();
    let engine = durability::open(quill_sql::vars::VarSet::defaults(), Arc::new(fs.clone()), &datadir()).expect("open").0;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let mut s = Session::new(Arc::clone(&engine), 1, "root", "127.0.0.1");
    runtime.block_on(async {
        for sql in statements {
            match s.run(sql).await.pop().unwrap() {
                Ok(Outcome::Done { .. } | Outcome::Rows(_)) => {}
                other => panic!("{sql}: {other:?}"),
            }
        }
    });
    drop(s);
    let mut records = Vec::new();
    let opened = quill_log::Log::open(Arc::new(fs.clone()), &datadir().join("log"), quill_log::LogConfig::default(), None, |r| -> std::io::Result<()> {
        records.push(r);
        Ok(())
    });
    drop(opened.expect("the log reads"));
    (engine, records)
}

/// The events of `records` after a format description, starting at position 4.
fn translate(engine: &Engine, records: &[Record]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut position = 4;
    event_at(&mut out, &EventHeader { timestamp: 0, server_id: 1, log_pos: 0, flags: 0 }, &mut position, event_type::FORMAT_DESCRIPTION, |b| {
        format_description_body(b, "8.0.40", 0);
    });
    for r in records {
        let tx = Transaction { seq: r.seq, commit_us: r.commit_us, changes: &r.changes, ordinal: r.seq };
        let tables = |db: &str, name: &str| engine.schemas.lock().table_at(db, name, r.lsn);
        transaction(&mut out, &SOURCE, &tables, &tx, &mut position).unwrap();
    }
    out
}

/// A row event's row as decoded: values before and after.
type Decoded = (Option<Vec<V>>, Option<Vec<V>>);

fn values(row: Option<mysql_common::binlog::row::BinlogRow>) -> Option<Vec<V>> {
    let row = row?;
    Some((0..row.len()).map(|i| if let Some(BinlogValue::Value(v)) = row.as_ref(i) { v.clone() } else { panic!("{:?}", row.as_ref(i)) }).collect())
}

#[test]
fn a_transaction_of_inserts_updates_and_deletes_reads_back_as_a_replica_reads_it() {
    let (engine, records) = run(&[
        "CREATE DATABASE shop",
        "USE shop",
        "CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(20), price DECIMAL(10,2), added DATE, at DATETIME(6))",
        "INSERT INTO items VALUES (1, 'tea', 3.50, '2026-11-24', '2026-11-24 10:00:00.5'), (2, 'coffee', 4.25, NULL, NULL)",
        "BEGIN",
        "UPDATE items SET price = price + 1 WHERE id = 1",
        "DELETE FROM items WHERE id = 2",
        "INSERT INTO items (id, name) VALUES (3, 'cocoa')",
        "COMMIT",
    ]);
    let bytes = translate(&engine, &records);
    let mut reader = EventStreamReader::new(BinlogVersion::Version4);
    let mut rest = &bytes[..];
    let mut events: Vec<Event> = Vec::new();
    while let Some(e) = reader.read(&mut rest).unwrap() {
        events.push(e);
    }
    // Positions: each event's log_pos is where the next one starts, from 4 on.
    let mut at = 4;
    for e in &events {
        at += u64::from(e.header().event_size());
        assert_eq!(u64::from(e.header().log_pos()), at, "event type {}", e.header().event_type_raw());
    }
    let types: Vec<u8> = events.iter().map(|e| e.header().event_type_raw()).collect();
    // FDE; CREATE DATABASE and CREATE TABLE (GTID, QUERY each); the insert (GTID, BEGIN,
    // TABLE_MAP, WRITE_ROWS, XID); the transaction (GTID, BEGIN, TABLE_MAP, UPDATE, DELETE,
    // WRITE, XID).
    assert_eq!(types, [15, 33, 2, 33, 2, 33, 2, 19, 30, 16, 33, 2, 19, 31, 32, 30, 16]);
    let data: Vec<EventData> = events.iter().map(|e| e.read_data().unwrap().unwrap()).collect();
    let EventData::QueryEvent(create) = &data[4] else { panic!() };
    assert_eq!(
        (create.schema().as_ref(), create.query().as_ref()),
        ("shop", "CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(20), price DECIMAL(10,2), added DATE, at DATETIME(6))")
    );
    let EventData::GtidEvent(gtid) = &data[10] else { panic!() };
    assert_eq!((gtid.sid(), gtid.gno()), (SOURCE.uuid, records[3].seq));
    assert_eq!(gtid.tx_length(), events[10..].iter().map(|e| u64::from(e.header().event_size())).sum::<u64>(), "the transaction's length");
    let EventData::TableMapEvent(tme) = &data[12] else { panic!() };
    let rows = |i: usize| -> Vec<Decoded> {
        let EventData::RowsEvent(r) = &data[i] else { panic!("{:?}", data[i]) };
        r.rows(tme).map(|row| row.unwrap()).map(|(b, a)| (values(b), values(a))).collect()
    };
    let tea = |price: &str| vec![V::Int(1), V::Bytes(b"tea".to_vec()), V::Bytes(price.into()), V::NULL, V::Date(2026, 11, 24, 10, 0, 0, 500_000)];
    let updated = rows(13);
    assert_eq!(updated.len(), 1);
    let (before, after) = &updated[0];
    assert_eq!(before.as_ref().unwrap()[..3], tea("3.50")[..3]);
    assert_eq!(after.as_ref().unwrap()[..3], tea("4.50")[..3]);
    assert_eq!(before.as_ref().unwrap()[4], tea("3.50")[4]);
    let deleted = rows(14);
    assert_eq!(deleted, vec![(Some(vec![V::Int(2), V::Bytes(b"coffee".to_vec()), V::Bytes(b"4.25".to_vec()), V::NULL, V::NULL]), None)]);
    let written = rows(15);
    assert_eq!(written, vec![(None, Some(vec![V::Int(3), V::Bytes(b"cocoa".to_vec()), V::NULL, V::NULL, V::NULL]))]);
}

#[test]
fn a_change_reads_with_the_columns_its_table_had_when_it_was_logged() {
    let (engine, records) = run(&[
        "CREATE DATABASE d",
        "CREATE TABLE d.t (id INT PRIMARY KEY, a INT)",
        "INSERT INTO d.t VALUES (1, 10)",
        "ALTER TABLE d.t ADD COLUMN b VARCHAR(5)",
        "INSERT INTO d.t VALUES (2, 20, 'x')",
    ]);
    let bytes = translate(&engine, &records);
    let mut reader = EventStreamReader::new(BinlogVersion::Version4);
    let mut rest = &bytes[..];
    let mut maps = Vec::new();
    while let Some(e) = reader.read(&mut rest).unwrap() {
        if let Some(EventData::TableMapEvent(tme)) = e.read_data().unwrap() {
            maps.push(tme.columns_count());
        }
    }
    assert_eq!(maps, vec![2, 3], "the first insert has the table's columns before the ALTER");
}

#[test]
fn a_replicated_transaction_keeps_its_gtid_and_original_commit_time_and_leaves_out_the_gtid_bookkeeping() {
    let (engine, records) = run(&["CREATE DATABASE d", "CREATE TABLE d.t (id INT PRIMARY KEY)", "INSERT INTO d.t VALUES (1)"]);
    let insert = &records[2];
    let origin = quill_log::Origin { uuid: [9; 16], gno: 77, original_commit_us: 1_600_000_000_000_123, original_server_version: 80_040 };
    let mut changes = insert.changes.clone();
    // The applier's row in mysql.gtid_executed: a table the binary log never names.
    changes.push(Change::Insert { db: "mysql".into(), table: "gtid_executed".into(), key: vec![1], row: vec![0] });
    changes.push(Change::Origin(origin));
    let replicated = Record { lsn: insert.lsn, seq: 0, commit_us: insert.commit_us + 5, changes };
    let bytes = translate(&engine, &[replicated]);
    let mut reader = EventStreamReader::new(BinlogVersion::Version4);
    let mut rest = &bytes[..];
    let mut events: Vec<Event> = Vec::new();
    while let Some(e) = reader.read(&mut rest).unwrap() {
        events.push(e);
    }
    let types: Vec<u8> = events.iter().map(|e| e.header().event_type_raw()).collect();
    // FDE, then GTID, BEGIN, TABLE_MAP and WRITE_ROWS of d.t only, XID.
    assert_eq!(types, [15, 33, 2, 19, 30, 16]);
    let Some(EventData::GtidEvent(g)) = events[1].read_data().unwrap() else { panic!() };
    assert_eq!((g.sid(), g.gno()), ([9; 16], 77));
    assert_eq!(g.original_commit_timestamp(), origin.original_commit_us);
    assert_eq!(g.immediate_commit_timestamp(), insert.commit_us + 5, "the immediate commit is this server's");
    assert_eq!(g.original_server_version(), 80_040);
}

/// Regression: a transaction that wrote a second table after rows of the first sent that
/// table's TABLE_MAP between rows events of one statement, and a MariaDB replica's I/O thread
/// stopped ("did not receive an expected Rows-log end-of-statement", 1595). A table first met
/// after rows now ends the statement there; the next statement maps its tables again.
#[test]
fn each_table_map_comes_before_the_rows_of_its_statement() {
    let (engine, records) = run(&[
        "CREATE DATABASE shop",
        "USE shop",
        "CREATE TABLE a (id INT PRIMARY KEY)",
        "CREATE TABLE b (id INT PRIMARY KEY)",
        "BEGIN",
        "INSERT INTO a VALUES (1)",
        "INSERT INTO b VALUES (1)",
        "INSERT INTO a VALUES (2)",
        "COMMIT",
    ]);
    let bytes = translate(&engine, &records);
    let mut reader = EventStreamReader::new(BinlogVersion::Version4);
    let mut rest = &bytes[..];
    let mut events: Vec<(u8, Option<bool>)> = Vec::new();
    while let Some(e) = reader.read(&mut rest).unwrap() {
        let statement_end = match e.read_data().unwrap().unwrap() {
            EventData::RowsEvent(r) => Some(r.flags().contains(mysql_common::binlog::consts::RowsEventFlags::STMT_END)),
            _ => None,
        };
        events.push((e.header().event_type_raw(), statement_end));
    }
    let transaction: Vec<(u8, Option<bool>)> = events.iter().rev().take(8).rev().copied().collect();
    assert_eq!(
        transaction,
        [(2, None), (19, None), (30, Some(true)), (19, None), (30, Some(true)), (19, None), (30, Some(true)), (16, None)],
        "BEGIN, then each table's map right before its rows, each run ending its statement, XID"
    );
}
