//! The simulated workload: sessions that run statements the model predicts, DDL, flush-mode
//! changes, checkpoints and ticks of the log's clock, chosen step by step by the seed.
//!
//! What each commit was promised is tracked as it is acknowledged: `durable_seq` is the
//! newest transaction that must survive a power loss (acknowledged in mode 1, DDL, or covered
//! by a tick or a checkpoint), `written_seq` the newest that must survive a kill -9 (also
//! mode 2 acknowledgements, whose records are written at commit).

use std::collections::BTreeSet;
use std::sync::Arc;

use quill_io::{Fs, SimFs};
use quill_sql::{Engine, Outcome, Session};
use quill_storage::Value;
use rand::RngExt;
use rand::rngs::StdRng;

use crate::model::{DdlOp, Effect, Model, Overlay, Row, Writes, visible};
use crate::{DATABASE, Report, Trail, datadir};

/// Ids a session writes at random: `session + sessions * j` for `j` below this.
const IDS_PER_SESSION: i64 = 60;
/// Where the ids of the streamed transaction begin (`j` from here on), clear of the others.
const STREAM_IDS_FROM: i64 = 1000;
/// The table of the digits 0-9 the streamed transaction's INSERT ... SELECT crosses four
/// times: 10,000 rows, more than a statement may leave unlogged (`STREAM_ROWS`).
const DIGITS: &str = "digits";

/// A session of the workload and its open transaction.
struct SimSession {
    session: Session,
    txn: Option<OpenTxn>,
}

/// An open transaction: its writes (in order, for the commit's effect), the rows it sees
/// differently from the committed ones, and its savepoints.
#[derive(Default, Clone)]
struct OpenTxn {
    writes: Writes,
    overlay: Overlay,
    savepoints: Vec<(String, Overlay, usize)>,
}

impl OpenTxn {
    fn write(&mut self, table: &str, id: i64, row: Option<Row>) {
        self.writes.push(((table.to_owned(), id), row.clone()));
        self.overlay.insert((table.to_owned(), id), row);
    }
}

/// Everything the workload drives and knows.
pub struct World {
    engine: Arc<Engine>,
    fs: Arc<dyn Fs>,
    sessions: Vec<SimSession>,
    pub model: Model,
    /// `innodb_flush_log_at_trx_commit` now.
    mode: u8,
    /// The newest transaction that must survive a power loss / a kill -9 (module doc).
    pub durable_seq: u64,
    pub written_seq: u64,
    /// The newest sequence number handed out.
    pub handed_out_seq: u64,
    /// Tables with the `by_pad` index.
    padded: BTreeSet<String>,
    next_table: u32,
    /// The streamed transaction ran (once a seed at most).
    streamed: bool,
    stats: Report,
}

/// What a statement returned: its outcome, or the error number.
type Answer = Result<Outcome, u16>;

impl World {
    pub fn new(rng: &mut StdRng, engine: Arc<Engine>, fs: SimFs) -> World {
        let count = rng.random_range(1..=3_usize);
        let fs: Arc<dyn Fs> = Arc::new(fs);
        let sessions = (0..count).map(|i| SimSession { session: new_session(&engine, i), txn: None }).collect();
        World {
            engine,
            fs,
            sessions,
            model: Model::default(),
            mode: 1,
            durable_seq: 0,
            written_seq: 0,
            handed_out_seq: 0,
            padded: BTreeSet::new(),
            next_table: 0,
            streamed: false,
            stats: Report::default(),
        }
    }

    /// The database, the digits table and two tables to write.
    pub async fn setup(&mut self, trail: &Trail) -> Result<(), String> {
        self.ddl(&format!("CREATE DATABASE {DATABASE}"), None, trail).await?;
        self.prepare_sessions(trail).await?;
        self.ddl(&create_table(DIGITS, false), Some(DdlOp::Create(DIGITS.into())), trail).await?;
        let values: Vec<String> = (0..10).map(|d| format!("({d}, {d}, '')")).collect();
        let sql = format!("INSERT INTO {DIGITS} VALUES {}", values.join(", "));
        let writes = (0..10).map(|d| ((DIGITS.to_owned(), d), Some((d, String::new())))).collect();
        self.autocommit(0, &sql, Ok(Effect::Rows(writes)), trail).await?;
        for _ in 0..2 {
            let name = self.new_table_name();
            self.ddl(&create_table(&name, false), Some(DdlOp::Create(name.clone())), trail).await?;
        }
        Ok(())
    }

    /// Each session uses the database and reads at READ COMMITTED (no gap locks: sessions
    /// writing their own rows never wait for each other).
    pub async fn prepare_sessions(&mut self, trail: &Trail) -> Result<(), String> {
        for s in 0..self.sessions.len() {
            for sql in [format!("USE {DATABASE}"), "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED".to_owned()] {
                self.run(s, &sql, trail).await.map_err(|c| format!("{sql}: {c}"))?;
            }
        }
        Ok(())
    }

    fn new_table_name(&mut self) -> String {
        self.next_table += 1;
        format!("t{}", self.next_table)
    }

    /// The tables the workload writes (all but the digits).
    fn data_tables(&self) -> Vec<String> {
        self.model.tables.keys().filter(|t| *t != DIGITS).cloned().collect()
    }

    /// The source's engine now.
    #[must_use]
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    fn log(&self) -> &quill_log::Log {
        self.engine.log.get().expect("the simulated engine has a log")
    }

    /// The newest sequence number the log handed out.
    fn log_seq(&self) -> u64 {
        self.log().next_position().1 - 1
    }

    /// Runs `sql` in session `s` and returns its answer.
    async fn run(&mut self, s: usize, sql: &str, trail: &Trail) -> Answer {
        trail.push(format!("session {s}: {sql}"));
        self.stats.statements += 1;
        let mut results = self.sessions[s].session.run(sql).await;
        let result = results.pop().expect("one statement, one result");
        result.map_err(|e| e.code)
    }

    /// A statement that commits when it succeeds (autocommit, COMMIT): `expected` is its
    /// effect, or the error it must fail with. Checks the answer and the sequence number
    /// the log gave it, and records the commit and what its flush mode promised.
    async fn autocommit(&mut self, s: usize, sql: &str, expected: Result<Effect, u16>, trail: &Trail) -> Result<(), String> {
        let before = self.log_seq();
        let answer = self.run(s, sql, trail).await;
        match (&expected, answer) {
            (Ok(effect), Ok(_)) => self.committed(before, effect.clone(), false, sql),
            (Err(code), Err(got)) if *code == got => self.no_commit(before, sql),
            (Ok(_), Err(got)) => Err(format!("{sql}: failed with {got}, the model expected success")),
            (Err(code), Ok(_)) => Err(format!("{sql}: succeeded, the model expected error {code}")),
            (Err(code), Err(got)) => Err(format!("{sql}: failed with {got}, the model expected {code}")),
        }
    }

    fn no_commit(&self, before: u64, sql: &str) -> Result<(), String> {
        let after = self.log_seq();
        if after != before {
            return Err(format!("{sql}: logged transaction {after} though nothing committed"));
        }
        Ok(())
    }

    /// Records a commit of `effect` if the log numbered one: it must have when the effect
    /// changes rows (or is DDL), and may not have when it changes nothing.
    fn committed(&mut self, before: u64, effect: Effect, ddl: bool, sql: &str) -> Result<(), String> {
        let after = self.log_seq();
        let changes = matches!(effect, Effect::Ddl { .. }) || !effect.net_rows(&self.model.tables).is_empty();
        match after - before {
            0 if changes => return Err(format!("{sql}: committed changes, but the log numbered no transaction")),
            0 => return Ok(()),
            1 => {}
            n => return Err(format!("{sql}: the log numbered {n} transactions for one commit")),
        }
        self.model.commit(after, effect);
        self.handed_out_seq = after;
        self.stats.commits += 1;
        if ddl || self.mode == 1 {
            self.durable_seq = after;
            self.written_seq = after;
        } else if self.mode == 2 {
            self.written_seq = after;
        }
        Ok(())
    }

    async fn ddl(&mut self, sql: &str, op: Option<DdlOp>, trail: &Trail) -> Result<(), String> {
        let before = self.log_seq();
        self.run(0, sql, trail).await.map_err(|code| format!("{sql}: failed with {code}"))?;
        let effect = Effect::Ddl { sql: sql.to_owned(), op: op.unwrap_or(DdlOp::Index) };
        self.committed(before, effect, true, sql)
    }

    /// One step of the workload, as the seed chooses.
    pub async fn step(&mut self, rng: &mut StdRng, trail: &Trail) -> Result<(), String> {
        let roll = rng.random_range(0..100);
        let idle = self.sessions.iter().all(|s| s.txn.is_none());
        match roll {
            0..10 => {
                let mode = rng.random_range(0..3_u8);
                self.run(0, &format!("SET GLOBAL innodb_flush_log_at_trx_commit = {mode}"), trail).await.map_err(|c| format!("SET GLOBAL: {c}"))?;
                self.mode = mode;
                Ok(())
            }
            10..16 => self.checkpoint(trail),
            16..22 => {
                trail.push("tick".into());
                self.log().tick();
                self.everything_durable();
                Ok(())
            }
            22..30 if idle => self.random_ddl(rng, trail).await,
            30..33 if !self.streamed => self.stream(rng, trail).await,
            _ => self.session_step(rng, trail).await,
        }
    }

    fn everything_durable(&mut self) {
        self.durable_seq = self.handed_out_seq;
        self.written_seq = self.handed_out_seq;
    }

    fn checkpoint(&mut self, trail: &Trail) -> Result<(), String> {
        trail.push("checkpoint".into());
        quill_sql::checkpoint::checkpoint(&self.engine, &self.fs, &datadir()).map_err(|e| format!("checkpoint: {e}"))?;
        self.stats.checkpoints += 1;
        self.everything_durable();
        Ok(())
    }

    async fn random_ddl(&mut self, rng: &mut StdRng, trail: &Trail) -> Result<(), String> {
        let tables = self.data_tables();
        let table = tables[rng.random_range(0..tables.len())].clone();
        match rng.random_range(0..7) {
            0 | 1 => {
                let name = self.new_table_name();
                let fixed = rng.random_bool(0.3);
                self.ddl(&create_table(&name, fixed), Some(DdlOp::Create(name.clone())), trail).await
            }
            2 if tables.len() > 1 => {
                self.padded.remove(&table);
                self.ddl(&format!("DROP TABLE {table}"), Some(DdlOp::Drop(table)), trail).await
            }
            3 => self.ddl(&format!("TRUNCATE TABLE {table}"), Some(DdlOp::Truncate(table)), trail).await,
            4 => {
                let name = self.new_table_name();
                if self.padded.remove(&table) {
                    self.padded.insert(name.clone());
                }
                self.ddl(&format!("RENAME TABLE {table} TO {name}"), Some(DdlOp::Rename(table, name)), trail).await
            }
            5 => {
                let format = if rng.random_bool(0.5) { "FIXED" } else { "DYNAMIC" };
                self.ddl(&format!("ALTER TABLE {table} ROW_FORMAT={format}"), None, trail).await
            }
            _ => {
                let sql = if self.padded.remove(&table) {
                    format!("ALTER TABLE {table} DROP INDEX by_pad")
                } else {
                    self.padded.insert(table.clone());
                    format!("ALTER TABLE {table} ADD INDEX by_pad (pad)")
                };
                self.ddl(&sql, None, trail).await
            }
        }
    }

    /// The large transaction: 10,000 rows in one INSERT ... SELECT, which streams into the
    /// log as part records when the statement ends; committed, rolled back or left open for
    /// the crash by later steps.
    async fn stream(&mut self, rng: &mut StdRng, trail: &Trail) -> Result<(), String> {
        let s = rng.random_range(0..self.sessions.len());
        if self.sessions[s].txn.is_some() {
            return self.session_step(rng, trail).await;
        }
        self.streamed = true;
        let tables = self.data_tables();
        let table = tables[rng.random_range(0..tables.len())].clone();
        self.begin(s, trail).await?;
        let n = self.sessions.len() as i64;
        let sql = format!(
            "INSERT INTO {table} (id, v, pad) SELECT {s} + {n} * ({STREAM_IDS_FROM} + a.id * 1000 + b.id * 100 + c.id * 10 + e.id), \
             a.id * 1000 + b.id * 100 + c.id * 10 + e.id, 'stream' FROM {DIGITS} a, {DIGITS} b, {DIGITS} c, {DIGITS} e"
        );
        let rows: Vec<(i64, Row)> = (0..10_000).map(|i| (s as i64 + n * (STREAM_IDS_FROM + i), (i, "stream".to_owned()))).collect();
        let expected = self.insert_outcome(s, &table, &rows);
        self.in_txn(s, &sql, &table, expected, trail).await
    }

    /// A statement of one session: in or out of a transaction, as it stands.
    async fn session_step(&mut self, rng: &mut StdRng, trail: &Trail) -> Result<(), String> {
        let s = rng.random_range(0..self.sessions.len());
        let roll = rng.random_range(0..100);
        let in_txn = self.sessions[s].txn.is_some();
        if !in_txn {
            return match roll {
                0..25 => self.begin(s, trail).await,
                25..35 => self.read_check(s, rng, trail).await,
                _ => {
                    let (sql, table, rows) = self.random_write(s, rng);
                    let expected = self.write_outcome(s, &table, &rows);
                    self.autocommit(s, &sql, expected.map(Effect::Rows), trail).await
                }
            };
        }
        match roll {
            0..8 => self.savepoint(s, trail).await,
            8..14 => self.rollback_to(s, rng, trail).await,
            14..17 => self.release(s, rng, trail).await,
            17..32 => self.commit(s, trail).await,
            32..37 => self.rollback(s, trail).await,
            37..45 => self.read_check(s, rng, trail).await,
            _ => {
                let (sql, table, rows) = self.random_write(s, rng);
                let expected = self.write_outcome(s, &table, &rows);
                self.in_txn(s, &sql, &table, expected, trail).await
            }
        }
    }

    async fn begin(&mut self, s: usize, trail: &Trail) -> Result<(), String> {
        self.run(s, "BEGIN", trail).await.map_err(|c| format!("BEGIN: {c}"))?;
        self.sessions[s].txn = Some(OpenTxn::default());
        Ok(())
    }

    /// A write inside session `s`'s transaction: applied to its overlay when it succeeds.
    async fn in_txn(&mut self, s: usize, sql: &str, table: &str, expected: Result<Writes, u16>, trail: &Trail) -> Result<(), String> {
        let answer = self.run(s, sql, trail).await;
        match (expected, answer) {
            (Ok(writes), Ok(_)) => {
                let txn = self.sessions[s].txn.as_mut().expect("in a transaction");
                for ((_, id), row) in writes {
                    txn.write(table, id, row);
                }
                Ok(())
            }
            (Err(code), Err(got)) if code == got => Ok(()),
            (expected, answer) => Err(format!("{sql}: answered {:?}, the model expected {:?}", answer.map(|_| "OK"), expected.map(|_| "OK"))),
        }
    }

    async fn savepoint(&mut self, s: usize, trail: &Trail) -> Result<(), String> {
        let txn = self.sessions[s].txn.as_ref().expect("in a transaction");
        let name = format!("sp{}", txn.savepoints.len());
        self.run(s, &format!("SAVEPOINT {name}"), trail).await.map_err(|c| format!("SAVEPOINT: {c}"))?;
        let txn = self.sessions[s].txn.as_mut().expect("in a transaction");
        let mark = (name, txn.overlay.clone(), txn.writes.len());
        txn.savepoints.push(mark);
        Ok(())
    }

    /// One of session `s`'s savepoints, as the seed picks it: its index and name.
    fn pick_savepoint(&self, s: usize, rng: &mut StdRng) -> Option<(usize, String)> {
        let savepoints = &self.sessions[s].txn.as_ref().expect("in a transaction").savepoints;
        if savepoints.is_empty() {
            return None;
        }
        let i = rng.random_range(0..savepoints.len());
        Some((i, savepoints[i].0.clone()))
    }

    async fn rollback_to(&mut self, s: usize, rng: &mut StdRng, trail: &Trail) -> Result<(), String> {
        let Some((i, name)) = self.pick_savepoint(s, rng) else { return Ok(()) };
        self.run(s, &format!("ROLLBACK TO SAVEPOINT {name}"), trail).await.map_err(|c| format!("ROLLBACK TO: {c}"))?;
        let txn = self.sessions[s].txn.as_mut().expect("in a transaction");
        // The savepoint stays; the later ones go (MySQL's semantics).
        txn.savepoints.truncate(i + 1);
        let (_, overlay, writes) = txn.savepoints[i].clone();
        txn.overlay = overlay;
        txn.writes.truncate(writes);
        Ok(())
    }

    async fn release(&mut self, s: usize, rng: &mut StdRng, trail: &Trail) -> Result<(), String> {
        let Some((i, name)) = self.pick_savepoint(s, rng) else { return Ok(()) };
        self.run(s, &format!("RELEASE SAVEPOINT {name}"), trail).await.map_err(|c| format!("RELEASE: {c}"))?;
        // The savepoint and the later ones go.
        self.sessions[s].txn.as_mut().expect("in a transaction").savepoints.truncate(i);
        Ok(())
    }

    async fn commit(&mut self, s: usize, trail: &Trail) -> Result<(), String> {
        let txn = self.sessions[s].txn.take().expect("in a transaction");
        self.autocommit(s, "COMMIT", Ok(Effect::Rows(txn.writes)), trail).await
    }

    async fn rollback(&mut self, s: usize, trail: &Trail) -> Result<(), String> {
        self.sessions[s].txn = None;
        let before = self.log_seq();
        self.run(s, "ROLLBACK", trail).await.map_err(|c| format!("ROLLBACK: {c}"))?;
        self.no_commit(before, "ROLLBACK")
    }

    /// Session `s` reads its own rows of a table and compares them with what it must see.
    async fn read_check(&mut self, s: usize, rng: &mut StdRng, trail: &Trail) -> Result<(), String> {
        let tables = self.data_tables();
        let table = tables[rng.random_range(0..tables.len())].clone();
        let n = self.sessions.len();
        let sql = format!("SELECT id, v, pad FROM {table} WHERE id % {n} = {s} ORDER BY id");
        let Ok(Outcome::Rows(result)) = self.run(s, &sql, trail).await else { return Err(format!("{sql}: no rows result")) };
        let got: Vec<(i64, Row)> = result.rows.iter().map(|r| row_of(r)).collect::<Result<_, _>>()?;
        let empty = Overlay::new();
        let overlay = self.sessions[s].txn.as_ref().map_or(&empty, |t| &t.overlay);
        let mut ids: BTreeSet<i64> = self.model.tables[&table].keys().copied().filter(|id| id.rem_euclid(n as i64) == s as i64).collect();
        ids.extend(overlay.keys().filter(|(t, _)| *t == table).map(|(_, id)| *id));
        let expected: Vec<(i64, Row)> = ids.into_iter().filter_map(|id| visible(&self.model.tables, overlay, &table, id).map(|r| (id, r.clone()))).collect();
        if got != expected {
            return Err(format!(
                "{sql}: read {} rows, the model has {} (first differences: {:?})",
                got.len(),
                expected.len(),
                first_difference(&got, &expected)
            ));
        }
        Ok(())
    }

    /// A random write statement of session `s`: its text, its table, and the rows it names
    /// with what it does to each (see [`Write`]).
    fn random_write(&self, s: usize, rng: &mut StdRng) -> (String, String, Write) {
        let tables = self.data_tables();
        let table = tables[rng.random_range(0..tables.len())].clone();
        let n = self.sessions.len() as i64;
        let own_id = |rng: &mut StdRng| s as i64 + n * rng.random_range(0..IDS_PER_SESSION);
        let pad = format!("p{}", rng.random_range(0..1000));
        let v = rng.random_range(-1000..1000_i64);
        match rng.random_range(0..8) {
            0 | 1 => {
                let id = own_id(rng);
                (format!("INSERT INTO {table} VALUES ({id}, {v}, '{pad}')"), table, Write::Insert(vec![(id, (v, pad))]))
            }
            2 => {
                let count = rng.random_range(2..30);
                let mut ids = BTreeSet::new();
                for _ in 0..count {
                    ids.insert(s as i64 + n * rng.random_range(0..IDS_PER_SESSION));
                }
                let rows: Vec<(i64, Row)> = ids.into_iter().map(|id| (id, (v + id, pad.clone()))).collect();
                let values: Vec<String> = rows.iter().map(|(id, (v, p))| format!("({id}, {v}, '{p}')")).collect();
                (format!("INSERT INTO {table} VALUES {}", values.join(", ")), table, Write::Insert(rows))
            }
            3 => {
                let id = own_id(rng);
                let d = rng.random_range(1..10);
                (format!("UPDATE {table} SET v = v + {d}, pad = '{pad}' WHERE id = {id}"), table, Write::Update(vec![id], d, Some(pad)))
            }
            4 => {
                let ids: BTreeSet<i64> = (0..3).map(|_| own_id(rng)).collect();
                let list: Vec<String> = ids.iter().map(i64::to_string).collect();
                let d = rng.random_range(1..10);
                (format!("UPDATE {table} SET v = v + {d} WHERE id IN ({})", list.join(", ")), table, Write::Update(ids.into_iter().collect(), d, None))
            }
            5 => {
                let ids: BTreeSet<i64> = (0..rng.random_range(1..4)).map(|_| own_id(rng)).collect();
                let list: Vec<String> = ids.iter().map(i64::to_string).collect();
                (format!("DELETE FROM {table} WHERE id IN ({})", list.join(", ")), table, Write::Delete(ids.into_iter().collect()))
            }
            6 => {
                let id = own_id(rng);
                (format!("REPLACE INTO {table} VALUES ({id}, {v}, '{pad}')"), table, Write::Replace(id, (v, pad)))
            }
            _ => {
                let id = own_id(rng);
                (format!("INSERT INTO {table} VALUES ({id}, {v}, '{pad}') ON DUPLICATE KEY UPDATE v = v + 1, pad = 'dup'"), table, Write::Upsert(id, (v, pad)))
            }
        }
    }

    /// The rows an INSERT of `rows` writes as session `s` sees the table, or 1062 when one
    /// of them exists (the statement then writes nothing).
    fn insert_outcome(&self, s: usize, table: &str, rows: &[(i64, Row)]) -> Result<Writes, u16> {
        let empty = Overlay::new();
        let overlay = self.sessions[s].txn.as_ref().map_or(&empty, |t| &t.overlay);
        if rows.iter().any(|(id, _)| visible(&self.model.tables, overlay, table, *id).is_some()) {
            return Err(1062);
        }
        Ok(rows.iter().map(|(id, row)| ((table.to_owned(), *id), Some(row.clone()))).collect())
    }

    fn write_outcome(&self, s: usize, table: &str, write: &Write) -> Result<Writes, u16> {
        let empty = Overlay::new();
        let overlay = self.sessions[s].txn.as_ref().map_or(&empty, |t| &t.overlay);
        let seen = |id: i64| visible(&self.model.tables, overlay, table, id).cloned();
        let key = |id: i64| (table.to_owned(), id);
        Ok(match write {
            Write::Insert(rows) => return self.insert_outcome(s, table, rows),
            Write::Update(ids, d, pad) => ids.iter().filter_map(|&id| seen(id).map(|(v, p)| (key(id), Some((v + d, pad.clone().unwrap_or(p)))))).collect(),
            Write::Delete(ids) => ids.iter().filter(|&&id| seen(id).is_some()).map(|&id| (key(id), None)).collect(),
            Write::Replace(id, row) => vec![(key(*id), Some(row.clone()))],
            Write::Upsert(id, row) => match seen(*id) {
                Some((v, _)) => vec![(key(*id), Some((v + 1, "dup".to_owned())))],
                None => vec![(key(*id), Some(row.clone()))],
            },
        })
    }

    /// The disk crashed: the sessions' transactions go with the engine. Returns the
    /// figures of the round.
    pub fn crash(&mut self) -> Report {
        for s in &mut self.sessions {
            s.txn = None;
        }
        std::mem::take(&mut self.stats)
    }

    /// Goes on with `engine`, recovered with the first `recovered` transactions (the model
    /// was cut to them by the checks).
    pub fn resume(&mut self, engine: Arc<Engine>, fs: SimFs, recovered: u64) {
        let count = self.sessions.len();
        self.sessions.clear();
        self.engine = engine;
        self.fs = Arc::new(fs);
        self.sessions = (0..count).map(|i| SimSession { session: new_session(&self.engine, i), txn: None }).collect();
        self.handed_out_seq = recovered;
        self.durable_seq = recovered;
        self.written_seq = recovered;
        // The server starts in the mode its options say: 1.
        self.mode = 1;
        self.padded.retain(|t| self.model.tables.contains_key(t));
    }

    /// The figures of the last round.
    pub fn finish(&mut self) -> Report {
        std::mem::take(&mut self.stats)
    }
}

/// What a write statement does to the rows it names.
enum Write {
    /// Each row inserted; 1062 and nothing if one exists.
    Insert(Vec<(i64, Row)>),
    /// The rows that exist get `v + d`, and the pad if given.
    Update(Vec<i64>, i64, Option<String>),
    Delete(Vec<i64>),
    Replace(i64, Row),
    /// ON DUPLICATE KEY UPDATE: an existing row gets `v + 1` and pad 'dup'.
    Upsert(i64, Row),
}

fn new_session(engine: &Arc<Engine>, index: usize) -> Session {
    Session::new(Arc::clone(engine), 10 + u32::try_from(index).expect("few sessions"), "root", "localhost")
}

/// The definition every simulated table has.
fn create_table(name: &str, fixed: bool) -> String {
    let format = if fixed { " ROW_FORMAT=FIXED" } else { "" };
    format!("CREATE TABLE {name} (id INT PRIMARY KEY, v INT NOT NULL, pad VARCHAR(40) NOT NULL, KEY by_v (v)){format}")
}

/// A result row `(id, v, pad)`.
///
/// # Errors
/// A row of another shape.
pub fn row_of(row: &[Value]) -> Result<(i64, Row), String> {
    let int = |v: &Value| match v {
        Value::Int(i) => Ok(*i),
        Value::UInt(u) => i64::try_from(*u).map_err(|e| e.to_string()),
        other => Err(format!("not an integer: {other:?}")),
    };
    let text = |v: &Value| match v {
        Value::Str(s) => Ok(s.clone()),
        Value::Bytes(b) => Ok(String::from_utf8_lossy(b).into_owned()),
        other => Err(format!("not a string: {other:?}")),
    };
    match row {
        [id, v, pad] => Ok((int(id)?, (int(v)?, text(pad)?))),
        other => Err(format!("a row of {} values", other.len())),
    }
}

/// The first few positions where two row lists differ, for a failure's message.
#[must_use]
pub fn first_difference(got: &[(i64, Row)], expected: &[(i64, Row)]) -> Vec<String> {
    let mut out = Vec::new();
    let (mut i, mut j) = (0, 0);
    while (i < got.len() || j < expected.len()) && out.len() < 5 {
        match (got.get(i), expected.get(j)) {
            (Some(a), Some(b)) if a == b => {
                i += 1;
                j += 1;
            }
            (Some(a), Some(b)) if a.0 == b.0 => {
                out.push(format!("id {}: {:?} instead of {:?}", a.0, a.1, b.1));
                i += 1;
                j += 1;
            }
            (Some(a), Some(b)) if a.0 < b.0 => {
                out.push(format!("id {} present, not in the model", a.0));
                i += 1;
            }
            (Some(a), None) => {
                out.push(format!("id {} present, not in the model", a.0));
                i += 1;
            }
            (_, Some(b)) => {
                out.push(format!("id {} missing", b.0));
                j += 1;
            }
            (None, None) => break,
        }
    }
    out
}
