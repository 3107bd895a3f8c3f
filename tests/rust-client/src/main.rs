//! Drives a running Quill with the Rust `mysql` crate the way an application does:
//! a pool, text queries, prepared statements with positional and named parameters,
//! every common type round-tripped through the binary protocol, transactions, and
//! errors that leave the connection usable.
//!
//! Usage: `QUILL_PORT=3306 cargo run` (host 127.0.0.1, user root, empty password).
//! Prints one line per check and exits non-zero on the first failure.

use mysql::prelude::*;
use mysql::{Opts, OptsBuilder, Pool, PooledConn, Value, params};

fn check(name: &str, ok: bool, detail: impl std::fmt::Debug) -> usize {
    if !ok {
        eprintln!("FAILED {name}: {detail:?}");
        std::process::exit(1);
    }
    println!("ok {name}");
    1
}

fn connect() -> PooledConn {
    let port: u16 = std::env::var("QUILL_PORT").ok().and_then(|p| p.parse().ok()).unwrap_or(3306);
    let opts: Opts = OptsBuilder::new().ip_or_hostname(Some("127.0.0.1")).tcp_port(port).user(Some("root")).pass(Some("")).into();
    Pool::new(opts).expect("pool").get_conn().expect("connection")
}

fn main() {
    let mut c = connect();
    let mut passed = 0;
    let db = format!("rust_client_{}", std::process::id());
    c.query_drop(format!("CREATE DATABASE {db}")).unwrap();
    c.query_drop(format!("USE {db}")).unwrap();

    let one: Option<i64> = c.query_first("SELECT 1").unwrap();
    passed += check("text query", one == Some(1), one);

    c.query_drop(
        "CREATE TABLE item (id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, name VARCHAR(40) NOT NULL, \
         price DECIMAL(10,2), qty INT, ratio DOUBLE, born DATE, seen DATETIME(6), span TIME(6), data BLOB, UNIQUE KEY uname (name))",
    )
    .unwrap();

    // Named parameters (the crate rewrites them to `?` for COM_STMT_PREPARE).
    c.exec_drop(
        "INSERT INTO item (name, price, qty, ratio, born, seen, span, data) VALUES (:name, :price, :qty, :ratio, :born, :seen, :span, :data)",
        params! {
            "name" => "widget",
            "price" => "12.50",
            "qty" => -7,
            "ratio" => 0.25,
            "born" => Value::Date(2024, 2, 29, 0, 0, 0, 0),
            "seen" => Value::Date(2024, 2, 29, 13, 45, 1, 123_456),
            "span" => Value::Time(true, 0, 1, 2, 3, 500_000),
            "data" => vec![0u8, 1, 2, 255],
        },
    )
    .unwrap();
    passed += check("last insert id", c.last_insert_id() == 1, c.last_insert_id());

    // Positional parameters, many executions of one prepared statement.
    let stmt = c.prep("INSERT INTO item (name, qty) VALUES (?, ?)").unwrap();
    for i in 0..50 {
        c.exec_drop(&stmt, (format!("bulk-{i}"), i)).unwrap();
    }
    let count: Option<i64> = c.exec_first("SELECT COUNT(*) FROM item WHERE qty BETWEEN ? AND ?", (0, 49)).unwrap();
    passed += check("prepared statement reused", count == Some(50), count);

    type Row = (u64, String, Option<String>, Option<i32>, Option<f64>, Value, Value, Value, Option<Vec<u8>>);
    let row: Option<Row> = c.exec_first("SELECT id, name, price, qty, ratio, born, seen, span, data FROM item WHERE name = :n", params! { "n" => "WIDGET" }).unwrap();
    let row = row.expect("case-insensitive match on the unique key");
    passed += check("unsigned id", row.0 == 1, row.0);
    passed += check("decimal", row.2.as_deref() == Some("12.50"), &row.2);
    passed += check("negative int", row.3 == Some(-7), row.3);
    passed += check("double", row.4 == Some(0.25), row.4);
    passed += check("date", row.5 == Value::Date(2024, 2, 29, 0, 0, 0, 0), &row.5);
    passed += check("datetime(6)", row.6 == Value::Date(2024, 2, 29, 13, 45, 1, 123_456), &row.6);
    passed += check("negative time", row.7 == Value::Time(true, 0, 1, 2, 3, 500_000), &row.7);
    passed += check("blob", row.8.as_deref() == Some(&[0u8, 1, 2, 255][..]), &row.8);

    let nulls: Option<(Option<String>, Option<i32>)> = c.exec_first("SELECT price, qty FROM item WHERE name = ?", ("bulk-0",)).unwrap();
    passed += check("NULL in binary rows", nulls == Some((None, Some(0))), nulls);

    let big: Option<u64> = c.exec_first("SELECT CAST(? AS UNSIGNED)", (u64::MAX,)).unwrap();
    passed += check("unsigned bigint max", big == Some(u64::MAX), big);

    // Errors keep the connection usable.
    let dup = c.exec_drop("INSERT INTO item (name) VALUES (?)", ("widget",));
    let code = match dup {
        Err(mysql::Error::MySqlError(e)) => e.code,
        other => panic!("expected a duplicate-key error, got {other:?}"),
    };
    passed += check("duplicate key is 1062", code == 1062, code);
    let bad = c.query_drop("SELEC 1");
    passed += check("syntax error is 1064", matches!(bad, Err(mysql::Error::MySqlError(ref e)) if e.code == 1064), &bad);

    // Transactions.
    {
        let mut tx = c.start_transaction(mysql::TxOpts::default()).unwrap();
        tx.exec_drop("UPDATE item SET qty = qty + ? WHERE id = ?", (100, 1)).unwrap();
        tx.rollback().unwrap();
    }
    let qty: Option<i32> = c.exec_first("SELECT qty FROM item WHERE id = ?", (1,)).unwrap();
    passed += check("rollback", qty == Some(-7), qty);
    {
        let mut tx = c.start_transaction(mysql::TxOpts::default()).unwrap();
        tx.exec_drop("UPDATE item SET qty = qty + ? WHERE id = ?", (100, 1)).unwrap();
        tx.commit().unwrap();
    }
    let qty: Option<i32> = c.exec_first("SELECT qty FROM item WHERE id = ?", (1,)).unwrap();
    passed += check("commit", qty == Some(93), qty);

    let affected = {
        c.exec_drop("UPDATE item SET qty = 0 WHERE qty < ?", (10,)).unwrap();
        c.affected_rows()
    };
    // Ten rows match; bulk-0 already had qty 0, so nine change (no CLIENT_FOUND_ROWS).
    passed += check("affected rows count changed rows", affected == 9, affected);

    passed += bytes_round_trip(&mut c);

    c.query_drop(format!("DROP DATABASE {db}")).unwrap();
    println!("rust-client: {passed} passed, 0 failed");
}

/// xorshift64: replayable test data without a dependency.
fn next(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

fn random_bytes(state: &mut u64, len: usize) -> Vec<u8> {
    (0..len).map(|_| next(state) as u8).collect()
}

/// utf8mb4 text with ASCII, Latin, CJK and four-byte characters.
fn random_text(state: &mut u64, chars: usize) -> String {
    let ranges = [(0x20u32, 0x7Eu32), (0xA0, 0x24F), (0x4E00, 0x9FFF), (0x1F300, 0x1FAFF), (0x20000, 0x2A6DF)];
    (0..chars)
        .map(|_| {
            let (lo, hi) = ranges[(next(state) % ranges.len() as u64) as usize];
            char::from_u32(lo + (next(state) % u64::from(hi - lo + 1)) as u32).unwrap_or('?')
        })
        .collect()
}

/// Every byte value and random binary strings up to 1 MiB into MEDIUMBLOB, VARBINARY and
/// BINARY, and random utf8mb4 text into VARCHAR, through the text protocol (values escaped
/// into the statement, as `Value::as_sql` writes them) and the binary protocol (prepared
/// statements): each must come back byte for byte, read either way and as HEX().
fn bytes_round_trip(c: &mut PooledConn) -> usize {
    c.query_drop("CREATE TABLE bytes (id INT PRIMARY KEY, b MEDIUMBLOB, vb VARBINARY(4000), bn BINARY(255), t VARCHAR(300)) DEFAULT CHARSET=utf8mb4").unwrap();
    let mut state = 0x5EED_B17E_u64;
    let every: Vec<u8> = (0..=255u8).collect();
    let mut rows = vec![(1u32, every.clone(), every.clone(), every[..255].to_vec(), random_text(&mut state, 300))];
    for (i, size) in [0usize, 1, 255, 65_535, 1 << 20].into_iter().enumerate() {
        let varbinary_len = (next(&mut state) % 4000) as usize;
        let text_len = (next(&mut state) % 300) as usize;
        rows.push((10 + i as u32, random_bytes(&mut state, size), random_bytes(&mut state, varbinary_len), random_bytes(&mut state, 255), random_text(&mut state, text_len)));
    }
    let mut passed = 0;
    for (protocol, offset) in [("text", 0u32), ("binary", 100)] {
        for (id, b, vb, bn, t) in &rows {
            let id = id + offset;
            if protocol == "text" {
                let literal = |v: Value| v.as_sql(false);
                let sql = format!(
                    "INSERT INTO bytes VALUES ({id}, {}, {}, {}, {})",
                    literal(Value::Bytes(b.clone())),
                    literal(Value::Bytes(vb.clone())),
                    literal(Value::Bytes(bn.clone())),
                    literal(Value::from(t.as_str()))
                );
                c.query_drop(sql).unwrap();
            } else {
                c.exec_drop("INSERT INTO bytes VALUES (?, ?, ?, ?, ?)", (id, b, vb, bn, t)).unwrap();
            }
        }
        type Bytes = (u32, Vec<u8>, Vec<u8>, Vec<u8>, String);
        let read_text: Vec<Bytes> = c.query(format!("SELECT id, b, vb, bn, t FROM bytes WHERE id >= {offset} AND id < {} ORDER BY id", offset + 100)).unwrap();
        let read_binary: Vec<Bytes> = c.exec("SELECT id, b, vb, bn, t FROM bytes WHERE id >= ? AND id < ? ORDER BY id", (offset, offset + 100)).unwrap();
        let hexes: Vec<(u32, String, String, String, String)> =
            c.query(format!("SELECT id, HEX(b), HEX(vb), HEX(bn), HEX(t) FROM bytes WHERE id >= {offset} AND id < {} ORDER BY id", offset + 100)).unwrap();
        let hex = |v: &[u8]| v.iter().map(|b| format!("{b:02X}")).collect::<String>();
        let expected: Vec<Bytes> = rows.iter().map(|(id, b, vb, bn, t)| (id + offset, b.clone(), vb.clone(), bn.clone(), t.clone())).collect();
        passed += check(&format!("bytes written in {protocol}, read as text"), read_text == expected, read_text.len());
        passed += check(&format!("bytes written in {protocol}, read as binary"), read_binary == expected, read_binary.len());
        let hex_ok = hexes.iter().zip(&expected).all(|(h, e)| h.0 == e.0 && h.1 == hex(&e.1) && h.2 == hex(&e.2) && h.3 == hex(&e.3) && h.4 == hex(e.4.as_bytes()));
        passed += check(&format!("bytes written in {protocol}, as the server holds them"), hex_ok, hexes.len());
    }
    passed
}
