//! Fuzzing the SQL front end: random and mutated statements must get an answer
//! (rows, OK or an SQL error) and never panic the server.
//!
//! The inputs come from a seeded generator so a failure replays: the test prints
//! the seed and the statement that panicked. `QUILL_FUZZ_ITERATIONS` raises the
//! count for a longer local run; CI runs the default briefly.

use quill_sql::vars::VarSet;
use quill_sql::{Engine, Session};

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

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

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
    let iterations: usize = std::env::var("QUILL_FUZZ_ITERATIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(DEFAULT_ITERATIONS);
    let seed: u64 = std::env::var("QUILL_FUZZ_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(0x5EED_0F01_1100);
    let mut rng = Rng(seed | 1);
    let engine = Engine::new(VarSet::defaults());
    let mut session = Session::new(engine, 1, "root", "127.0.0.1");
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
    // Statements run synchronously inside `run` apart from lock waits, which a
    // single session never meets; a panic unwinds through the await.
    // No external crate: poll the future and catch an unwind around each poll.
    CatchUnwind(Box::pin(session.run(sql))).await.is_ok()
}

struct CatchUnwind<F>(std::pin::Pin<Box<F>>);

impl<F: std::future::Future> std::future::Future for CatchUnwind<F> {
    type Output = std::thread::Result<F::Output>;
    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<Self::Output> {
        let inner = self.0.as_mut();
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| inner.poll(cx))) {
            Ok(std::task::Poll::Pending) => std::task::Poll::Pending,
            Ok(std::task::Poll::Ready(v)) => std::task::Poll::Ready(Ok(v)),
            Err(e) => std::task::Poll::Ready(Err(e)),
        }
    }
}
