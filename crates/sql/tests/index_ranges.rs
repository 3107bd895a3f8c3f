//! Property test of every index access path against a plain scan.
//!
//! Two tables hold the same rows: `ti` has a primary key, secondary indexes on every
//! column and a unique one, so the planner picks primary-key points, lists and ranges and
//! secondary-index equalities and ranges; `tp` has no index at all, so every query on it is
//! a full scan that evaluates the WHERE clause row by row (the oracle). Random conditions
//! (comparisons, inverted and empty BETWEENs, IN lists, constants of other types than the
//! column's) must select the same rows from both, in plain reads, locking reads and
//! deletes that are rolled back.
//!
//! Guards the bug where `BETWEEN 4 AND 0` on an indexed column panicked the session
//! ("range start is greater than range end in BTreeMap"), which the sqllogictest corpus hit
//! 1,916 times. A failure prints the seed and the condition; `QUILL_RANGE_SEED=<n>` replays
//! it, `QUILL_RANGE_ITERATIONS` runs longer.

use quill_sql::Session;
use quill_sql::session::Outcome;

const DEFAULT_ITERATIONS: usize = 1_500;
const ROWS: i64 = 60;

mod common;

use common::Rng;

/// Helpers on top of the shared stream.
trait Draw {
    fn int(&mut self, lo: i64, hi: i64) -> i64;
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str;
}

impl Draw for Rng {
    fn int(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % (hi - lo + 1) as u64) as i64
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

const COLUMNS: &[&str] = &["id", "a", "s", "d", "u"];

fn string_constant(rng: &mut Rng) -> String {
    let len = rng.below(4);
    let s: String = (0..len).map(|_| ['a', 'B', 'c', 'A', 'b', ' ', 'é'][rng.below(7)]).collect();
    format!("'{s}'")
}

/// A constant for `column`, often of another type than the column's.
fn constant(rng: &mut Rng, column: &str) -> String {
    match rng.below(10) {
        0 => string_constant(rng),
        1 => format!("{}.5", rng.int(-3, 30)),
        2 => rng.pick(&["NULL", "99999999999999999999", "-1e30", "1e30", "'12abc'", "''"]).to_owned(),
        3 => format!("'{}'", rng.int(-5, 70)),
        _ => match column {
            "s" => string_constant(rng),
            "d" => format!("{}.{}", rng.int(-10, 40), rng.below(100)),
            _ => rng.int(-5, ROWS + 5).to_string(),
        },
    }
}

fn condition(rng: &mut Rng) -> String {
    let c = COLUMNS[rng.below(COLUMNS.len())];
    match rng.below(7) {
        0 => format!("{c} {} {}", rng.pick(&["=", "<", "<=", ">", ">=", "<=>"]), constant(rng, c)),
        1 => format!("{} {} {c}", constant(rng, c), rng.pick(&["=", "<", "<=", ">", ">="])),
        2 => format!("{c} BETWEEN {} AND {}", constant(rng, c), constant(rng, c)),
        3 => {
            let n = 1 + rng.below(5);
            let list: Vec<String> = (0..n).map(|_| constant(rng, c)).collect();
            format!("{c} IN ({})", list.join(", "))
        }
        4 => format!("{c} > {} AND {c} < {}", constant(rng, c), constant(rng, c)),
        5 => format!("{c} >= {} AND {c} <= {}", constant(rng, c), constant(rng, c)),
        _ => format!("{} AND {}", condition(rng), condition(rng)),
    }
}

async fn rows(session: &mut Session, sql: &str) -> Result<Vec<String>, String> {
    match session.run(sql).await.pop().expect("one result") {
        Ok(Outcome::Rows(rs)) => Ok(rs.rows.iter().map(|r| format!("{r:?}")).collect()),
        Ok(Outcome::Done { affected, .. }) => Ok(vec![affected.to_string()]),
        Ok(Outcome::Streamed { .. }) => unreachable!("no row sink was lent"),
        Ok(Outcome::Results(_)) => unreachable!("no CALL here"),
        Err(e) => Err(format!("{} {}", e.code, e.message)),
    }
}

async fn exec(session: &mut Session, sql: &str) {
    let r = session.run(sql).await.pop().expect("one result");
    assert!(r.is_ok(), "{sql}: {r:?}");
}

#[tokio::test(flavor = "current_thread")]
async fn index_access_paths_agree_with_a_plain_scan() {
    let iterations: usize = common::env_number("QUILL_RANGE_ITERATIONS", DEFAULT_ITERATIONS);
    let seed: u64 = common::env_number("QUILL_RANGE_SEED", 0x0DD_BA11);
    let mut rng = Rng(seed | 1);
    let mut session = common::session();
    for s in [
        "CREATE DATABASE r",
        "USE r",
        "CREATE TABLE ti (id INT PRIMARY KEY, a INT, s VARCHAR(8), d DECIMAL(6,2), u INT, KEY ka (a), KEY ks (s), KEY kd (d), UNIQUE KEY ku (u))",
        "CREATE TABLE tp (id INT, a INT, s VARCHAR(8), d DECIMAL(6,2), u INT)",
    ] {
        exec(&mut session, s).await;
    }
    for id in 0..ROWS {
        let a = if rng.below(8) == 0 { "NULL".to_owned() } else { rng.int(-3, 25).to_string() };
        let s = if rng.below(8) == 0 { "NULL".to_owned() } else { string_constant(&mut rng) };
        let d = format!("{}.{}", rng.int(-10, 40), rng.below(100));
        let u = if rng.below(5) == 0 { "NULL".to_owned() } else { (id * 3 - 20).to_string() };
        for t in ["ti", "tp"] {
            exec(&mut session, &format!("INSERT INTO {t} VALUES ({id}, {a}, {s}, {d}, {u})")).await;
        }
    }
    for i in 0..iterations {
        let cond = condition(&mut rng);
        let (indexed, plain) = match rng.below(4) {
            0 => {
                let lock = rng.pick(&["FOR UPDATE", "FOR SHARE"]);
                exec(&mut session, "BEGIN").await;
                let indexed = rows(&mut session, &format!("SELECT * FROM ti WHERE {cond} ORDER BY id {lock}")).await;
                exec(&mut session, "ROLLBACK").await;
                (indexed, rows(&mut session, &format!("SELECT * FROM tp WHERE {cond} ORDER BY id")).await)
            }
            1 => {
                let mut counts = Vec::new();
                for t in ["ti", "tp"] {
                    exec(&mut session, "BEGIN").await;
                    counts.push(rows(&mut session, &format!("DELETE FROM {t} WHERE {cond}")).await);
                    exec(&mut session, "ROLLBACK").await;
                }
                (counts.remove(0), counts.remove(0))
            }
            _ => (
                rows(&mut session, &format!("SELECT * FROM ti WHERE {cond} ORDER BY id")).await,
                rows(&mut session, &format!("SELECT * FROM tp WHERE {cond} ORDER BY id")).await,
            ),
        };
        assert_eq!(indexed, plain, "seed {seed}, iteration {i}: WHERE {cond}");
    }
}
