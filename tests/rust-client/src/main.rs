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

    c.query_drop(format!("DROP DATABASE {db}")).unwrap();
    println!("rust-client: {passed} passed, 0 failed");
}
