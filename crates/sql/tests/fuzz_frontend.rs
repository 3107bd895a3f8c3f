//! Fuzzing the SQL front end: random and mutated statements must get an answer
//! (rows, OK or an SQL error) and never panic the server.
//!
//! The inputs come from a seeded generator so a failure replays: the test prints
//! the seed and the statement that panicked. `QUILL_FUZZ_ITERATIONS` raises the
//! count for a longer local run; CI runs the default briefly.

use std::panic::AssertUnwindSafe;

use common::Rng;
use futures_util::FutureExt;
use quill_sql::Session;

mod common;

/// Statements per run in CI.
const DEFAULT_ITERATIONS: usize = 4_000;

const SEEDS: &[&str] = &[
    "CREATE TABLE t (id INT PRIMARY KEY AUTO_INCREMENT, a VARCHAR(10), b DECIMAL(10,2), c DATETIME(6), KEY ka (a))",
    "INSERT INTO t (a, b, c) VALUES ('x', 1.5, NOW(6)), ('y', NULL, '2024-01-01')",
    "SELECT a, COUNT(*), SUM(b) FROM t WHERE id IN (1, 2, 3) GROUP BY a HAVING COUNT(*) > 0 ORDER BY 2 DESC LIMIT 3",
    "UPDATE t SET b = b * 2 WHERE a LIKE 'x%' ORDER BY id LIMIT 1",
    "DELETE FROM t WHERE id BETWEEN 2 AND 5",
    "SELECT t1.a, t2.b FROM t t1 LEFT JOIN t t2 USING (id) WHERE t2.id IS NULL OR t1.id = (SELECT MAX(id) FROM t)",
    "INSERT INTO t (id, a) VALUES (1, 'z') ON DUPLICATE KEY UPDATE a = VALUES(a)",
    "SELECT CONCAT(a, '-', b), DATE_ADD(c, INTERVAL 1 DAY), TIMESTAMPDIFF(SECOND, c, NOW()) FROM t",
    "SELECT * FROM t WHERE EXISTS (SELECT 1 FROM t x WHERE x.id = t.id) UNION ALL SELECT * FROM t",
    "ALTER TABLE t ADD COLUMN d INT NOT NULL DEFAULT 3, ADD INDEX kd (d)",
    "SET @@session.sql_mode = '', @x = 5",
    "SHOW COLUMNS FROM t WHERE Field = 'a'",
    "SELECT CAST('12abc' AS SIGNED), '10' = 10, 1/0, -9223372036854775808 - 1, ROUND(2.5), 18446744073709551615 + 1",
];

const TOKENS: &[&str] = &[
    "SELECT",
    "FROM",
    "WHERE",
    "t",
    "id",
    "a",
    "b",
    "(",
    ")",
    ",",
    "*",
    "+",
    "-",
    "/",
    "=",
    "<",
    ">",
    "AND",
    "OR",
    "NOT",
    "NULL",
    "'x'",
    "1",
    "0",
    "-1",
    "1.5e308",
    "9999999999999999999999",
    "GROUP BY",
    "ORDER BY",
    "LIMIT",
    "JOIN",
    "ON",
    "IN",
    "EXISTS",
    "CASE",
    "WHEN",
    "THEN",
    "END",
    "INSERT",
    "INTO",
    "VALUES",
    "UPDATE",
    "SET",
    "DELETE",
    "CREATE",
    "TABLE",
    "DROP",
    "INT",
    "VARCHAR(3)",
    "COUNT(*)",
    "SUM(",
    "?",
    "@x",
    "@@version",
    ";",
    "`",
    "'",
    "\"",
    "\\",
    "/*",
    "*/",
    "--",
    "#",
    "UNION",
    "DISTINCT",
    "HAVING",
    "BETWEEN",
    "LIKE",
    "INTERVAL",
    "DAY",
    "NOW(",
    "CAST(",
    "AS",
    "SIGNED",
    "COLLATE",
    "utf8mb4_bin",
    "DEFAULT",
    "PRIMARY KEY",
    "FOR UPDATE",
    "LOCK IN SHARE MODE",
];

fn mutate(rng: &mut Rng, s: &str) -> String {
    let mut chars: Vec<char> = s.chars().collect();
    for _ in 0..=rng.below(4) {
        if chars.is_empty() {
            break;
        }
        let i = rng.below(chars.len());
        match rng.below(4) {
            0 => {
                chars.remove(i);
            }
            1 => chars.insert(i, ['(', ')', '\'', ',', ' ', '0', '9', '\0', 'é', ';'][rng.below(10)]),
            2 => {
                let j = rng.below(chars.len());
                chars.swap(i, j);
            }
            _ => chars.truncate(i),
        }
    }
    chars.into_iter().collect()
}

fn soup(rng: &mut Rng) -> String {
    let n = 1 + rng.below(14);
    (0..n).map(|_| TOKENS[rng.below(TOKENS.len())]).collect::<Vec<_>>().join(" ")
}

#[tokio::test(flavor = "current_thread")]
async fn random_and_mutated_statements_never_panic() {
    let iterations: usize = common::env_number("QUILL_FUZZ_ITERATIONS", DEFAULT_ITERATIONS);
    let seed: u64 = common::env_number("QUILL_FUZZ_SEED", 0x5EED_0F01_1100);
    let mut rng = Rng(seed | 1);
    let mut session = common::session();
    for s in ["CREATE DATABASE f", "USE f"] {
        assert!(session.run(s).await.into_iter().all(|r| r.is_ok()));
    }
    for s in SEEDS {
        let _ = session.run(s).await;
    }
    for i in 0..iterations {
        let sql = if rng.below(2) == 0 {
            let seed_statement = SEEDS[rng.below(SEEDS.len())];
            mutate(&mut rng, seed_statement)
        } else {
            soup(&mut rng)
        };
        let outcome = futures_lite_catch(&mut session, &sql).await;
        assert!(outcome, "seed {seed}, iteration {i}: statement panicked: {sql:?}");
    }
    // The session still works afterwards.
    let r = session.run("SELECT 1").await;
    assert!(r[0].is_ok());
}

/// Run one statement, reporting whether it finished without a panic.
async fn futures_lite_catch(session: &mut Session, sql: &str) -> bool {
    // Statements run synchronously inside `run` apart from lock waits, which a single
    // session never meets; a panic unwinds through the await.
    AssertUnwindSafe(session.run(sql)).catch_unwind().await.is_ok()
}

/// A random expression about `depth` levels deep, each level one of the shapes a deep
/// statement takes: operator chains, parentheses, NOT, function calls, CASE, subqueries.
fn deep_expression(rng: &mut Rng, depth: usize) -> String {
    if depth == 0 {
        return ["1", "id", "a", "NULL", "'x'", "2.5", "?"][rng.below(7)].to_owned();
    }
    let inner = deep_expression(rng, depth - 1);
    match rng.below(9) {
        0 => format!("{inner} + 1"),
        1 => format!("1 - {inner}"),
        2 => format!("({inner})"),
        3 => format!("NOT {inner}"),
        4 => format!("CONCAT({inner}, 'b')"),
        5 => format!("COALESCE(NULL, {inner})"),
        6 => format!("CASE WHEN {inner} THEN 1 ELSE 0 END"),
        7 => format!("{inner} AND id > 0"),
        _ => format!("(SELECT {inner})"),
    }
}

/// A random wide expression: a chain of `n` terms of one operator, or an IN list.
fn wide_expression(rng: &mut Rng, n: usize) -> String {
    let term = |i: usize| format!("id = {i}");
    match rng.below(6) {
        0 => (0..n).map(term).collect::<Vec<_>>().join(" OR "),
        1 => (0..n).map(|i| format!("id <> {i}")).collect::<Vec<_>>().join(" AND "),
        2 => (0..n).map(|i| format!("(a = 'v{i}')")).collect::<Vec<_>>().join(" XOR "),
        3 => format!("id IN ({})", (0..n).map(|i| i.to_string()).collect::<Vec<_>>().join(", ")),
        4 => format!("a NOT IN ({})", (0..n).map(|i| format!("'v{i}'")).collect::<Vec<_>>().join(", ")),
        _ => (0..n).map(|_| "1").collect::<Vec<_>>().join(" + "),
    }
}

/// Deep and wide expressions (past the depth limit too) always get an answer, rows or an
/// error, and never exhaust the stack or panic. Guards the crash where `SELECT 1+1+...+1`
/// with 1,000 terms overflowed a worker's stack and aborted the server. Runs on a thread
/// with a stack as large, relative to a debug build's frames, as the server's workers have
/// in release.
#[test]
fn deep_and_wide_expressions_get_an_answer() {
    let seed: u64 = common::env_number("QUILL_FUZZ_SEED", 0xDEE9_0F01_1100);
    // A deep statement costs some fifty ordinary ones.
    let iterations: usize = common::env_number("QUILL_FUZZ_ITERATIONS", 3_000) / 50;
    let run = move || {
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        runtime.block_on(async move {
            let mut rng = Rng(seed | 1);
            let mut session = common::session();
            for s in
                ["CREATE DATABASE w", "USE w", "CREATE TABLE t (id INT PRIMARY KEY, a VARCHAR(10))", "INSERT INTO t VALUES (1, 'v1'), (2, 'v2'), (30, 'v30')"]
            {
                assert!(session.run(s).await.into_iter().all(|r| r.is_ok()), "{s}");
            }
            for i in 0..iterations {
                let sql = if rng.below(2) == 0 {
                    let depth = [10, 500, 990, 1_200, 5_000][rng.below(5)];
                    format!("SELECT COUNT(*) FROM t WHERE {}", deep_expression(&mut rng, depth))
                } else {
                    let width = [100, 5_000, 50_000][rng.below(3)];
                    format!("SELECT COUNT(*) FROM t WHERE {}", wide_expression(&mut rng, width))
                };
                let finished = futures_lite_catch(&mut session, &sql).await;
                assert!(finished, "seed {seed}, iteration {i}: statement panicked: {}", &sql[..sql.len().min(300)]);
            }
            // Exact answers at the edges: a long OR chain is a set lookup.
            let or_chain = format!("SELECT COUNT(*) FROM t WHERE {}", (0..100_000).map(|i| format!("id = {i}")).collect::<Vec<_>>().join(" OR "));
            let Ok(quill_sql::Outcome::Rows(rs)) = session.run(&or_chain).await.remove(0) else { panic!("OR chain failed") };
            assert_eq!(rs.rows[0][0], quill_storage::Value::Int(3));
            let too_deep = format!("SELECT {}", vec!["1"; 100_000].join("+"));
            let Err(e) = session.run(&too_deep).await.remove(0) else { panic!("a 100,000-deep + chain was answered") };
            assert_eq!(e.code, 1436);
        });
    };
    let worker = std::thread::Builder::new().stack_size(DEEP_TEST_STACK_BYTES).spawn(run).unwrap();
    worker.join().unwrap();
}

/// The stack the deep-expression test runs on: debug frames are several times larger than
/// release ones, so this is several times the server's release worker stack.
const DEEP_TEST_STACK_BYTES: usize = 256 << 20;
