//! Durability of the whole engine over a simulated disk (`quill_io::SimFs`): sessions commit
//! through the commit log, checkpoints run, the disk crashes at a point and in a way chosen by
//! a seed, and a new engine opened on what survived must hold every acknowledged commit, no
//! half transaction, and secondary indexes that agree with the rows. A failing seed replays:
//! `QUILL_CRASH_SEED=<n> cargo test -p quill-sql --test durability`.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;
use quill_io::{Fs, SimFs};
use quill_sql::durability;
use quill_sql::session::Outcome;
use quill_sql::vars::VarSet;
use quill_sql::{Engine, Session};
use quill_storage::Value;

const CLIENTS: u64 = 4;

fn datadir() -> PathBuf {
    PathBuf::from("/quill")
}

/// Small log segments: the simulated disk copies whole files when it syncs and crashes.
fn settings() -> VarSet {
    let mut vars = VarSet::defaults();
    vars.values.insert("quill_log_segment_bytes", "65536".into());
    vars
}

fn open(fs: &SimFs) -> Arc<Engine> {
    durability::open(settings(), Arc::new(fs.clone()), &datadir()).expect("open engine").0
}

async fn run(session: &mut Session, sql: &str) -> Vec<Vec<Value>> {
    match session.run(sql).await.pop().expect("one result") {
        Ok(Outcome::Rows(rs)) => rs.rows,
        Ok(Outcome::Done { .. }) => Vec::new(),
        Ok(Outcome::Streamed { .. }) => unreachable!("no row sink was lent"),
        Ok(Outcome::Results(_)) => unreachable!("no CALL here"),
        Err(e) => panic!("{sql}: {e}"),
    }
}

/// The rows of each query, in order.
async fn results(session: &mut Session, queries: &[&str]) -> Vec<Vec<Vec<Value>>> {
    let mut out = Vec::with_capacity(queries.len());
    for q in queries {
        out.push(run(session, q).await);
    }
    out
}

fn int(v: &Value) -> i64 {
    match v {
        Value::Int(i) => *i,
        Value::UInt(u) => i64::try_from(*u).unwrap(),
        other => panic!("not an integer: {other:?}"),
    }
}

async fn setup(engine: &Arc<Engine>) {
    let mut s = Session::new(Arc::clone(engine), 1, "root", "127.0.0.1");
    run(&mut s, "CREATE DATABASE app").await;
    run(&mut s, "USE app").await;
    run(&mut s, "CREATE TABLE ledger (client INT, seq INT, tag VARCHAR(8), note TEXT, PRIMARY KEY (client, seq), KEY by_tag (tag))").await;
    run(&mut s, "CREATE TABLE counters (client INT PRIMARY KEY, seq INT NOT NULL)").await;
    run(&mut s, "CREATE TABLE events (id BIGINT AUTO_INCREMENT PRIMARY KEY, client INT, amount DECIMAL(12,2))").await;
    for c in 0..CLIENTS {
        run(&mut s, &format!("INSERT INTO counters VALUES ({c}, -1)")).await;
    }
}

/// One client: transactions of an INSERT, an UPDATE, sometimes a DELETE of an older row and an
/// autocommit insert into `events`; records each acknowledged sequence number.
async fn client(engine: Arc<Engine>, number: u64, acknowledged: Arc<Mutex<Vec<Vec<i64>>>>, stop: Arc<AtomicBool>) {
    let mut s = Session::new(engine, 10 + number as u32, "root", "127.0.0.1");
    run(&mut s, "USE app").await;
    let mut seq = 0_i64;
    while !stop.load(Ordering::Relaxed) {
        let tag = format!("t{}", seq % 3);
        let statements = [
            "BEGIN".to_owned(),
            format!("INSERT INTO ledger VALUES ({number}, {seq}, '{tag}', REPEAT('x', {}))", seq % 50),
            format!("UPDATE counters SET seq = {seq} WHERE client = {number}"),
            if seq % 5 == 4 { format!("UPDATE ledger SET tag = 'moved' WHERE client = {number} AND seq = {}", seq - 2) } else { "DO 0".into() },
            "COMMIT".to_owned(),
        ];
        for sql in &statements {
            run(&mut s, sql).await;
        }
        acknowledged.lock()[number as usize].push(seq);
        run(&mut s, &format!("INSERT INTO events (client, amount) VALUES ({number}, {seq}.25)")).await;
        seq += 1;
        tokio::task::yield_now().await;
    }
}

async fn check(engine: &Arc<Engine>, acknowledged: &[Vec<i64>], seed: u64) {
    let mut s = Session::new(Arc::clone(engine), 99, "root", "127.0.0.1");
    run(&mut s, "USE app").await;
    for number in 0..CLIENTS {
        let present: Vec<i64> = run(&mut s, &format!("SELECT seq FROM ledger WHERE client = {number} ORDER BY seq")).await.iter().map(|r| int(&r[0])).collect();
        let expected_prefix: Vec<i64> = (0..present.len() as i64).collect();
        assert_eq!(present, expected_prefix, "seed {seed}: client {number}'s ledger is a gapless prefix");
        let counter = int(&run(&mut s, &format!("SELECT seq FROM counters WHERE client = {number}")).await[0][0]);
        assert_eq!(counter, present.len() as i64 - 1, "seed {seed}: client {number}: counter agrees with the ledger");
        for seq in &acknowledged[number as usize] {
            assert!(present.contains(seq), "seed {seed}: client {number}: acknowledged {seq} lost");
        }
    }
    for tag in ["t0", "t1", "t2", "moved"] {
        let by_index = int(&run(&mut s, &format!("SELECT COUNT(*) FROM ledger WHERE tag = '{tag}'")).await[0][0]);
        let by_scan = int(&run(&mut s, &format!("SELECT COUNT(*) FROM ledger IGNORE INDEX (by_tag) WHERE CONCAT(tag) = '{tag}'")).await[0][0]);
        assert_eq!(by_index, by_scan, "seed {seed}: the index on tag agrees with the rows for {tag}");
    }
    // AUTO_INCREMENT continues past every recovered id.
    run(&mut s, "INSERT INTO events (client, amount) VALUES (-1, 0)").await;
    let ids = run(&mut s, "SELECT COUNT(*), COUNT(DISTINCT id) FROM events").await;
    assert_eq!(int(&ids[0][0]), int(&ids[0][1]), "seed {seed}: event ids stay unique after recovery");
}

fn crash_once(seed: u64) {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let fs = SimFs::new();
    let fs_dyn: Arc<dyn Fs> = Arc::new(fs.clone());
    let engine = open(&fs);
    runtime.block_on(setup(&engine));
    let acknowledged = Arc::new(Mutex::new(vec![Vec::new(); CLIENTS as usize]));
    let stop = Arc::new(AtomicBool::new(false));
    let tasks: Vec<_> = (0..CLIENTS).map(|n| runtime.spawn(client(Arc::clone(&engine), n, Arc::clone(&acknowledged), Arc::clone(&stop)))).collect();
    let crash_after = 10 + (seed * 7) % 60;
    let mut checkpoints = 0;
    loop {
        let done: usize = acknowledged.lock().iter().map(Vec::len).sum();
        // Odd seeds checkpoint while the clients run, so recovery starts from a checkpoint.
        if seed % 2 == 1 && done as u64 >= crash_after / 2 && checkpoints == 0 {
            quill_sql::checkpoint::checkpoint(&engine, &fs_dyn, &datadir()).expect("checkpoint");
            checkpoints += 1;
            continue;
        }
        if done as u64 >= crash_after {
            break;
        }
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
    // What was acknowledged before the crash image is taken must be in it.
    let acknowledged_then = acknowledged.lock().clone();
    let (after, report) = fs.crash(seed);
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        runtime.block_on(t).unwrap();
    }
    let recovered =
        durability::open(settings(), Arc::new(after.clone()), &datadir()).unwrap_or_else(|e| panic!("seed {seed}: reopen failed: {e} ({report:?})"));
    runtime.block_on(check(&recovered.0, &acknowledged_then, seed));
    if seed % 2 == 1 {
        assert!(recovered.1.checkpoint.is_some(), "seed {seed}: recovery started from the checkpoint");
    }
}

#[test]
fn seeded_crashes_of_the_engine_keep_every_acknowledged_commit() {
    let seeds: Vec<u64> = match std::env::var("QUILL_CRASH_SEED") {
        Ok(seed) => vec![seed.parse().expect("QUILL_CRASH_SEED is a number")],
        Err(_) => (0..24).collect(),
    };
    for seed in seeds {
        crash_once(seed);
    }
}

#[test]
fn a_checkpoint_round_trips_every_column_kind_and_definition() {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let fs = SimFs::new();
    let engine = open(&fs);
    let statements = [
        "CREATE DATABASE kinds",
        "USE kinds",
        "CREATE TABLE k (id INT UNSIGNED AUTO_INCREMENT PRIMARY KEY, b BIGINT NOT NULL DEFAULT -5, f DOUBLE, d DECIMAL(30,10), \
         s VARCHAR(40) COLLATE utf8mb4_bin NOT NULL DEFAULT 'it''s', t TEXT, bl BLOB, vb VARBINARY(8), dt DATETIME(6), da DATE, \
         ti TIME, ts TIMESTAMP NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP, tiny TINYINT(1) COMMENT 'flag', \
         UNIQUE KEY uq_s (s), KEY by_b_f (b, f))",
        "INSERT INTO k (b, f, d, s, t, bl, vb, dt, da, ti, tiny) VALUES \
         (1, 1.5, 12345678901234567890.0123456789, 'a', 'text', x'00ff', x'01', '2024-02-29 23:59:59.123456', '1999-12-31', '-838:59:59', 1), \
         (-9223372036854775808, -0.0, -1, 'B', NULL, NULL, NULL, NULL, NULL, '00:00:01', 0)",
        "CREATE TABLE nokey (a INT, b VARCHAR(3))",
        "INSERT INTO nokey VALUES (1, 'x'), (1, 'x'), (NULL, NULL)",
        "DELETE FROM nokey WHERE a IS NULL",
    ];
    let mut s = Session::new(Arc::clone(&engine), 1, "root", "127.0.0.1");
    let queries = ["SHOW CREATE TABLE k", "SELECT * FROM k ORDER BY id", "SHOW CREATE TABLE nokey", "SELECT * FROM nokey", "SHOW INDEX FROM k"];
    let before = runtime.block_on(async {
        for sql in statements {
            run(&mut s, sql).await;
        }
        results(&mut s, &queries).await
    });
    let fs_dyn: Arc<dyn Fs> = Arc::new(fs.clone());
    let report = quill_sql::checkpoint::checkpoint(&engine, &fs_dyn, &datadir()).expect("checkpoint");
    assert_eq!(report.rows, 4);
    drop(s);
    // Everything before the checkpoint now comes from it; the log after it is empty.
    let reopened = durability::open(settings(), Arc::new(fs.crash(1).0), &datadir()).expect("reopen").0;
    let mut s = Session::new(reopened, 1, "root", "127.0.0.1");
    let after = runtime.block_on(async {
        run(&mut s, "USE kinds").await;
        let mut out = results(&mut s, &queries).await;
        // AUTO_INCREMENT and the hidden row id continue where they were.
        run(&mut s, "INSERT INTO k (b, s) VALUES (3, 'c')").await;
        run(&mut s, "INSERT INTO nokey VALUES (2, 'y')").await;
        out.push(run(&mut s, "SELECT MAX(id) FROM k").await);
        out.push(run(&mut s, "SELECT COUNT(*) FROM nokey").await);
        out
    });
    for (i, q) in queries.iter().enumerate() {
        assert_eq!(before[i], after[i], "{q} differs after the checkpoint round trip");
    }
    assert_eq!(int(&after[queries.len()][0][0]), 3);
    assert_eq!(int(&after[queries.len() + 1][0][0]), 3);
}

/// Regression tests from the durability review: each DDL below once replayed differently
/// from how it ran (or stopped start-up), or an unsupported statement committed.
#[test]
fn ddl_replays_as_it_ran() {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let fs = SimFs::new();
    let engine = open(&fs);
    let mut s = Session::new(Arc::clone(&engine), 1, "root", "127.0.0.1");
    let queries =
        ["SHOW CREATE TABLE slashes", "SELECT * FROM slashes", "SELECT * FROM made ORDER BY n", "SHOW CREATE TABLE made", "SHOW TABLES", "SELECT * FROM kept"];
    let before = runtime.block_on(async {
        for sql in [
            "CREATE DATABASE d",
            "USE d",
            // Backslashes: Display of the parsed statement would log 'C:\temp' (a TAB on replay).
            r"CREATE TABLE slashes (id INT PRIMARY KEY, p VARCHAR(20) DEFAULT 'C:\\temp' COMMENT 'ends with \\')",
            "INSERT INTO slashes (id) VALUES (1)",
            // CREATE TABLE ... SELECT with functions that differ on every run.
            "CREATE TABLE made AS SELECT 1 AS n, RAND() AS r, NOW(6) AS t UNION ALL SELECT 2, RAND(), NOW(6)",
            "CREATE TABLE kept (id INT PRIMARY KEY)",
            "INSERT INTO kept VALUES (7)",
        ] {
            run(&mut s, sql).await;
        }
        // A DROP that names a missing table drops nothing (MySQL 8's atomic DDL), and a table
        // of the same name created after it must not stop replay.
        assert!(s.run("DROP TABLE kept, nosuch").await.pop().unwrap().is_err());
        // An unsupported statement must not commit the open transaction.
        run(&mut s, "BEGIN").await;
        run(&mut s, "INSERT INTO kept VALUES (8)").await;
        assert!(s.run("ROLLBACK TO SAVEPOINT a").await.pop().unwrap().is_err());
        run(&mut s, "ROLLBACK").await;
        results(&mut s, &queries).await
    });
    // Prepared DDL with parameters is refused rather than logged with placeholders.
    let (id, _, _) = s.prepare("CREATE TABLE p AS SELECT ? AS a").unwrap();
    assert!(runtime.block_on(s.execute_prepared(id, vec![Value::Int(1)])).is_err());
    drop(s);
    let reopened = durability::open(settings(), Arc::new(fs.crash(3).0), &datadir()).expect("reopen").0;
    let mut s = Session::new(reopened, 1, "root", "127.0.0.1");
    let after = runtime.block_on(async {
        run(&mut s, "USE d").await;
        results(&mut s, &queries).await
    });
    for (i, q) in queries.iter().enumerate() {
        assert_eq!(before[i], after[i], "{q} differs after replay");
    }
}

/// The changes of every committed transaction in the log under `fs`'s data directory, in
/// commit order: those with row changes (DDL left out), and the DDL.
fn logged(fs: &SimFs) -> (Vec<Vec<quill_log::Change>>, Vec<quill_log::Change>) {
    let mut transactions = Vec::new();
    let mut ddl = Vec::new();
    let config = quill_log::LogConfig { segment_bytes: 65536, ..quill_log::LogConfig::default() };
    let opened = quill_log::Log::open(Arc::new(fs.clone()), &datadir().join("log"), config, None, |record| -> std::io::Result<()> {
        let (statements, rows): (Vec<_>, Vec<_>) = record.changes.into_iter().partition(|c| matches!(c, quill_log::Change::Ddl { .. }));
        ddl.extend(statements);
        if !rows.is_empty() {
            transactions.push(rows);
        }
        Ok(())
    });
    drop(opened.expect("the log reads"));
    (transactions, ddl)
}

#[test]
fn the_log_records_each_rows_kind_and_the_image_it_replaced() {
    use quill_log::Change;
    use quill_storage::log_row;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let fs = SimFs::new();
    let engine = open(&fs);
    let mut s = Session::new(Arc::clone(&engine), 1, "root", "127.0.0.1");
    runtime.block_on(async {
        for sql in [
            "CREATE DATABASE d",
            "USE d",
            "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))",
            "INSERT INTO t VALUES (1, 'a'), (2, 'b')",
            // One transaction: an update twice over, a delete, and an insert deleted again.
            "BEGIN",
            "UPDATE t SET v = 'a2' WHERE id = 1",
            "UPDATE t SET v = 'a3' WHERE id = 1",
            "DELETE FROM t WHERE id = 2",
            "INSERT INTO t VALUES (3, 'c')",
            "DELETE FROM t WHERE id = 3",
            "COMMIT",
            // MINIMAL: the key names the row; no replaced image.
            "SET SESSION binlog_row_image = 'minimal'",
            "UPDATE t SET v = 'a4' WHERE id = 1",
            "DELETE FROM t WHERE id = 1",
            // DDL carries the session's sql_mode and time zone.
            "SET SESSION time_zone = '+05:00', sql_mode = 'STRICT_ALL_TABLES'",
            "CREATE TABLE u (id INT PRIMARY KEY)",
        ] {
            run(&mut s, sql).await;
        }
        assert!(s.run("SET SESSION binlog_row_image = 'NOBLOB'").await.pop().unwrap().is_err(), "not taken");
    });
    drop(s);
    drop(engine);
    let image = |id: i64, v: &str| log_row(&vec![Value::Int(id), Value::Str(v.into())]);
    let key = |id: i64| quill_storage::key::encode_key([(&Value::Int(id), quill_storage::Collation::Binary)]);
    let row = |kind: &str, id: i64, before: Option<Vec<u8>>, after: Option<Vec<u8>>| {
        let (db, table, key) = ("d".to_owned(), "t".to_owned(), key(id));
        match kind {
            "insert" => Change::Insert { db, table, key, row: after.unwrap() },
            "update" => Change::Update { db, table, key, before, row: after.unwrap() },
            _ => Change::Delete { db, table, key, before },
        }
    };
    let (transactions, ddl) = logged(&fs);
    let contexts: Vec<(String, Option<quill_log::DdlContext>)> =
        ddl.into_iter().map(|c| if let Change::Ddl { sql, context, .. } = c { (sql, context) } else { unreachable!() }).collect();
    let default_mode = VarSet::defaults().get("sql_mode").unwrap().to_owned();
    assert_eq!(contexts[0], ("CREATE DATABASE d".to_owned(), Some(quill_log::DdlContext { sql_mode: default_mode, time_zone: "SYSTEM".into() })));
    assert_eq!(
        contexts.last().unwrap(),
        &("CREATE TABLE u (id INT PRIMARY KEY)".to_owned(), Some(quill_log::DdlContext { sql_mode: "STRICT_ALL_TABLES".into(), time_zone: "+05:00".into() }))
    );
    // And it replays in it.
    let reopened = durability::open(settings(), Arc::new(fs.clone()), &datadir()).expect("reopen").0;
    let mut s = Session::new(reopened, 1, "root", "127.0.0.1");
    assert_eq!(runtime.block_on(run(&mut s, "SELECT COUNT(*) FROM d.u")), vec![vec![Value::Int(0)]]);
    assert_eq!(
        transactions,
        vec![
            vec![row("insert", 1, None, Some(image(1, "a"))), row("insert", 2, None, Some(image(2, "b")))],
            vec![row("update", 1, Some(image(1, "a")), Some(image(1, "a3"))), row("delete", 2, Some(image(2, "b")), None)],
            vec![row("update", 1, None, Some(image(1, "a4")))],
            vec![row("delete", 1, None, None)],
        ]
    );
}

/// A damaged newest checkpoint (its checksum fails) is renamed `.damaged` and start-up goes
/// on from the next older one and the log after it, losing nothing; with neither, a log that
/// no longer starts at LSN 0 is refused with an error that names the files to restore.
#[test]
fn a_damaged_checkpoint_falls_back_to_the_older_one_or_is_refused_by_name() {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let fs = SimFs::new();
    let fs_dyn: Arc<dyn Fs> = Arc::new(fs.clone());
    // Segments stay after a checkpoint (none expires), so the log reaches back to the older one.
    let mut vars = settings();
    vars.values.insert("binlog_expire_logs_seconds", "0".into());
    let engine = durability::open(vars.clone(), Arc::clone(&fs_dyn), &datadir()).expect("open").0;
    let mut s = Session::new(Arc::clone(&engine), 1, "root", "127.0.0.1");
    runtime.block_on(async {
        for sql in ["CREATE DATABASE d", "CREATE TABLE d.t (id INT PRIMARY KEY)", "INSERT INTO d.t VALUES (1)"] {
            run(&mut s, sql).await;
        }
    });
    let older = quill_sql::checkpoint::checkpoint(&engine, &fs_dyn, &datadir()).expect("checkpoint");
    let older_bytes = fs.contents(&older.path).unwrap();
    runtime.block_on(run(&mut s, "INSERT INTO d.t VALUES (2)"));
    let newer = quill_sql::checkpoint::checkpoint(&engine, &fs_dyn, &datadir()).expect("checkpoint");
    runtime.block_on(run(&mut s, "INSERT INTO d.t VALUES (3)"));
    drop(s);
    drop(engine);
    // The older file back (a checkpoint removes older ones), and the newer one damaged.
    restore_into(&fs, &older.path, &older_bytes);
    let mut damaged = fs.contents(&newer.path).unwrap();
    damaged[60] ^= 0xff;
    restore_into(&fs, &newer.path, &damaged);
    let (reopened, report) = durability::open(vars.clone(), Arc::new(fs.clone()), &datadir()).expect("opens from the older checkpoint");
    assert_eq!(report.checkpoint.map(|c| c.0), Some(older.lsn));
    let mut damaged_name = newer.path.clone().into_os_string();
    damaged_name.push(".damaged");
    assert!(fs.exists(std::path::Path::new(&damaged_name)), "the damaged checkpoint is kept, renamed");
    let mut s = Session::new(reopened, 1, "root", "127.0.0.1");
    let ids: Vec<i64> = runtime.block_on(run(&mut s, "SELECT id FROM d.t ORDER BY id")).iter().map(|r| int(&r[0])).collect();
    assert_eq!(ids, vec![1, 2, 3], "the log after the older checkpoint holds the rest");
    drop(s);

    // Without an intact checkpoint, a log whose first segments went cannot be replayed.
    let fs = SimFs::new();
    let fs_dyn: Arc<dyn Fs> = Arc::new(fs.clone());
    let engine = open(&fs);
    runtime.block_on(setup(&engine));
    // More than a segment of log, so the checkpoint removes the first one.
    let mut s = Session::new(Arc::clone(&engine), 1, "root", "127.0.0.1");
    runtime.block_on(async {
        for seq in 0..100 {
            run(&mut s, &format!("INSERT INTO app.ledger VALUES (0, {seq}, 't', REPEAT('x', 1000))")).await;
        }
    });
    drop(s);
    let only = quill_sql::checkpoint::checkpoint(&engine, &fs_dyn, &datadir()).expect("checkpoint");
    drop(engine);
    let mut bytes = fs.contents(&only.path).unwrap();
    bytes[60] ^= 0xff;
    restore_into(&fs, &only.path, &bytes);
    assert!(!fs.exists(&datadir().join("log").join("00000000000000000000.qlog")), "the checkpoint removed the first segment");
    let refused = durability::open(settings(), Arc::new(fs.clone()), &datadir()).err().expect("refused").to_string();
    assert!(refused.contains("/quill/log") && refused.contains(".qlog") && refused.contains("checkpoint"), "{refused}");
}

fn restore_into(fs: &SimFs, path: &std::path::Path, bytes: &[u8]) {
    let file = fs.open(path, true).unwrap();
    file.set_len(0).unwrap();
    file.write_at(bytes, 0).unwrap();
    file.sync_data().unwrap();
    fs.sync_dir(&datadir()).unwrap();
}
