//! The checks after each recovery, against the model:
//! - the recovered transactions are a prefix `1..=k` of the commit order, with `k` at least
//!   the newest one the flush mode promised and at most the newest handed out;
//! - the tables are the model's after `k` transactions: the same tables, the same rows,
//!   found alike through the primary key and the secondary index, and the same
//!   `CHECKSUM TABLE` as a fresh engine given the model's rows;
//! - `@@gtid_executed` is `uuid:1-k`;
//! - the binary log ([`binlog`]) reads from its first file to its end, its GTIDs follow the
//!   first file's PREVIOUS_GTIDS one by one up to `k`, and each transaction in it changes
//!   what the model's transaction of that number changes.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use mysql_common::binlog::EventStreamReader;
use mysql_common::binlog::consts::BinlogVersion;
use mysql_common::binlog::events::EventData;
use mysql_common::binlog::row::BinlogRow;
use mysql_common::binlog::value::BinlogValue;
use quill_replication::binlog::{Dump, FIRST_EVENT_POSITION, Origin, events};
use quill_sql::vars::VarSet;
use quill_sql::{Engine, Outcome, Session};
use quill_storage::Value;

use crate::DATABASE;
use crate::model::{Effect, Model, Row, Rows, Tables};
use crate::workload::{first_difference, row_of};

/// Checks the engine recovered after a crash against `model`; `promised` transactions had to
/// survive and `handed_out` existed. Cuts the model to what was recovered and returns how
/// many transactions that is.
///
/// # Errors
/// The first check that failed.
pub async fn recovery(engine: &Arc<Engine>, model: &mut Model, promised: u64, handed_out: u64) -> Result<u64, String> {
    let k = engine.log.get().ok_or("the recovered engine has no log")?.next_position().1 - 1;
    if k < promised {
        return Err(format!("recovered {k} transactions, but {promised} were acknowledged as durable: {} lost", promised - k));
    }
    if k > handed_out {
        return Err(format!("recovered {k} transactions, but only {handed_out} were ever committed"));
    }
    let expected = model.state_at(k);
    let mut session = Session::new(Arc::clone(engine), 1, "root", "localhost");
    tables(&mut session, &expected).await?;
    gtid_executed(&mut session, engine, k).await?;
    session.close();
    binlog(engine, model, k)?;
    model.truncate(k);
    Ok(k)
}

async fn query(session: &mut Session, sql: &str) -> Result<Vec<Vec<Value>>, String> {
    match session.run(sql).await.pop() {
        Some(Ok(Outcome::Rows(rs))) => Ok(rs.rows),
        Some(Ok(_)) => Ok(Vec::new()),
        Some(Err(e)) => Err(format!("{sql}: {e}")),
        None => Err(format!("{sql}: no result")),
    }
}

pub(crate) async fn tables(session: &mut Session, expected: &Tables) -> Result<(), String> {
    let listed = query(session, &format!("SHOW TABLES FROM {DATABASE}")).await?;
    let names: BTreeSet<String> = listed.iter().map(|r| text(&r[0])).collect();
    let wanted: BTreeSet<String> = expected.keys().cloned().collect();
    if names != wanted {
        return Err(format!("recovered tables {names:?}, the model has {wanted:?}"));
    }
    let mut scratch = Session::new(Engine::new(VarSet::defaults()), 1, "root", "localhost");
    query(&mut scratch, &format!("CREATE DATABASE {DATABASE}")).await?;
    query(&mut scratch, &format!("USE {DATABASE}")).await?;
    for (table, rows) in expected {
        let got: Vec<(i64, Row)> =
            query(session, &format!("SELECT id, v, pad FROM {DATABASE}.{table} ORDER BY id")).await?.iter().map(|r| row_of(r)).collect::<Result<_, _>>()?;
        let want: Vec<(i64, Row)> = rows.iter().map(|(id, row)| (*id, row.clone())).collect();
        if got != want {
            return Err(format!("{table}: recovered {} rows, the model has {}: {:?}", got.len(), want.len(), first_difference(&got, &want)));
        }
        let by_index =
            query(session, &format!("SELECT COUNT(*), CAST(COALESCE(SUM(v), 0) AS SIGNED) FROM {DATABASE}.{table} FORCE INDEX (by_v) WHERE v > -1000000000"))
                .await?;
        let sum: i64 = rows.values().map(|(v, _)| v).sum();
        let counted = (int(&by_index[0][0]), int(&by_index[0][1]));
        if counted != (rows.len() as i64, sum) {
            return Err(format!("{table}: the index by_v finds {counted:?} (rows, sum of v), the model has {:?}", (rows.len(), sum)));
        }
        let recovered = query(session, &format!("CHECKSUM TABLE {DATABASE}.{table}")).await?;
        let fresh = checksum_of(&mut scratch, table, rows).await?;
        if recovered[0][1] != fresh {
            return Err(format!("{table}: CHECKSUM TABLE gives {:?} after recovery, {fresh:?} for the model's rows", recovered[0][1]));
        }
    }
    Ok(())
}

/// `CHECKSUM TABLE` of `rows` loaded into a table of the same definition in a fresh engine.
async fn checksum_of(scratch: &mut Session, table: &str, rows: &Rows) -> Result<Value, String> {
    query(scratch, &format!("CREATE TABLE {table} (id INT PRIMARY KEY, v INT NOT NULL, pad VARCHAR(40) NOT NULL)")).await?;
    let values: Vec<String> = rows.iter().map(|(id, (v, pad))| format!("({id}, {v}, '{pad}')")).collect();
    for chunk in values.chunks(1000) {
        query(scratch, &format!("INSERT INTO {table} VALUES {}", chunk.join(", "))).await?;
    }
    let sum = query(scratch, &format!("CHECKSUM TABLE {table}")).await?;
    query(scratch, &format!("DROP TABLE {table}")).await?;
    Ok(sum[0][1].clone())
}

async fn gtid_executed(session: &mut Session, engine: &Engine, k: u64) -> Result<(), String> {
    let uuid = engine.global("server_uuid").unwrap_or_default();
    let want = match k {
        0 => String::new(),
        1 => format!("{uuid}:1"),
        k => format!("{uuid}:1-{k}"),
    };
    let got = text(&query(session, "SELECT @@gtid_executed").await?[0][0]);
    if got != want {
        return Err(format!("@@gtid_executed is '{got}' after recovering {k} transactions"));
    }
    Ok(())
}

/// One transaction as the binary log tells it.
#[derive(Debug, Default)]
struct LoggedTransaction {
    gno: u64,
    ddl: Vec<String>,
    rows: Vec<((String, i64), Option<Row>)>,
}

/// Reads the binary log from its first file to its end, as a replica asking for everything
/// would, and checks it against the model's first `k` transactions.
fn binlog(engine: &Arc<Engine>, model: &Model, k: u64) -> Result<(), String> {
    let origin = Origin::of(engine).ok_or("no binary log")?;
    let uuid = origin.source.uuid;
    let log = engine.log.get().ok_or("no log")?;
    let context = || {
        format!(
            "segments {:?}, binary log from LSN {}, checkpoint at {}, log end {}",
            log.segment_bounds(),
            log.binlog_from(),
            engine.status.checkpoint_lsn.load(std::sync::atomic::Ordering::Relaxed),
            log.next_position().0
        )
    };
    let mut dump = Dump::open(origin, "", FIRST_EVENT_POSITION, None).map_err(|e| format!("opening the binary log at its first file: {e} ({})", context()))?;
    let mut bytes = Vec::new();
    while dump.fill(&mut bytes).map_err(|e| format!("reading the binary log: {e} ({})", context()))? {}
    let (purged, transactions) = decode(&bytes, uuid)?;
    let gnos: Vec<u64> = transactions.iter().map(|t| t.gno).collect();
    let wanted: Vec<u64> = (purged + 1..=k).collect();
    if gnos != wanted {
        return Err(format!("the binary log holds GTIDs {} after PREVIOUS_GTIDS 1-{purged}; expected {}", ranges(&gnos), ranges(&wanted)));
    }
    let mut state = model.state_at(purged);
    let effects: HashMap<u64, &Effect> = model.history.iter().map(|(seq, e)| (*seq, e)).collect();
    for logged in &transactions {
        let effect = effects.get(&logged.gno).ok_or_else(|| format!("GTID {} is in the binary log, not in the model", logged.gno))?;
        match effect {
            Effect::Ddl { sql, .. } => {
                if logged.ddl != [sql.clone()] || !logged.rows.is_empty() {
                    return Err(format!(
                        "GTID {}: the binary log has {:?} and {} rows, the model the statement {sql:?}",
                        logged.gno,
                        logged.ddl,
                        logged.rows.len()
                    ));
                }
            }
            Effect::Rows(_) => {
                let got = Effect::Rows(logged.rows.clone()).net_rows(&state);
                let want = effect.net_rows(&state);
                if !logged.ddl.is_empty() || got != want {
                    return Err(format!(
                        "GTID {}: the binary log changes {} rows (statements {:?}), the model {} rows",
                        logged.gno,
                        got.len(),
                        logged.ddl,
                        want.len()
                    ));
                }
            }
        }
        effect.apply(&mut state);
    }
    Ok(())
}

/// The GTID numbers before the first file (from its PREVIOUS_GTIDS) and the transactions of
/// this server's `uuid`, from a dump's bytes.
fn decode(bytes: &[u8], uuid: [u8; 16]) -> Result<(u64, Vec<LoggedTransaction>), String> {
    let mut reader = EventStreamReader::new(BinlogVersion::Version4);
    let mut purged = None;
    let mut transactions: Vec<LoggedTransaction> = Vec::new();
    let mut tables = HashMap::new();
    let mut seen_format = false;
    for raw in events(bytes) {
        // The dump opens with an artificial ROTATE; the decoder learns checksums from the
        // format description, so reading starts there.
        seen_format |= raw.get(4) == Some(&15);
        if !seen_format {
            continue;
        }
        let mut rest = raw;
        let event = reader.read(&mut rest).map_err(|e| format!("binary log event: {e}"))?.ok_or("a truncated binary log event")?;
        let data = event.read_data().map_err(|e| format!("binary log event data: {e}"))?;
        match data {
            Some(EventData::PreviousGtidsEvent(previous)) if purged.is_none() => {
                let own = previous.sids().iter().find(|s| s.uuid() == uuid).map_or(0, |s| s.intervals().iter().map(|i| i.end() - 1).max().unwrap_or(0));
                purged = Some(own);
            }
            Some(EventData::GtidEvent(g)) => {
                if g.sid() != uuid {
                    return Err(format!("a GTID of another server: {:?}:{}", g.sid(), g.gno()));
                }
                transactions.push(LoggedTransaction { gno: g.gno(), ..LoggedTransaction::default() });
            }
            Some(EventData::QueryEvent(q)) => {
                let sql = q.query().into_owned();
                if sql != "BEGIN" && sql != "COMMIT" {
                    transactions.last_mut().ok_or("a statement before any GTID")?.ddl.push(sql);
                }
            }
            Some(EventData::TableMapEvent(tme)) => {
                tables.insert(tme.table_id(), tme.into_owned());
            }
            Some(EventData::RowsEvent(rows)) => {
                let tme = tables.get(&rows.table_id()).ok_or("a rows event with no table map")?;
                let table = tme.table_name().into_owned();
                if tme.database_name() != DATABASE {
                    return Err(format!("rows of {}.{table}, outside the simulated database", tme.database_name()));
                }
                let current = transactions.last_mut().ok_or("rows before any GTID")?;
                for row in rows.rows(tme) {
                    let (before, after) = row.map_err(|e| format!("a row of {table}: {e}"))?;
                    let image = after.as_ref().or(before.as_ref()).ok_or("a row change with no image")?;
                    let id = binlog_int(image, 0)?;
                    let row = after.as_ref().map(|a| Ok::<_, String>((binlog_int(a, 1)?, binlog_text(a, 2)?))).transpose()?;
                    current.rows.push(((table.clone(), id), row));
                }
            }
            _ => {}
        }
    }
    Ok((purged.unwrap_or(0), transactions))
}

fn binlog_value(row: &BinlogRow, i: usize) -> Result<&mysql_common::Value, String> {
    match row.as_ref(i) {
        Some(BinlogValue::Value(v)) => Ok(v),
        other => Err(format!("column {i} of a binary log row: {other:?}")),
    }
}

fn binlog_int(row: &BinlogRow, i: usize) -> Result<i64, String> {
    match binlog_value(row, i)? {
        mysql_common::Value::Int(v) => Ok(*v),
        mysql_common::Value::UInt(v) => i64::try_from(*v).map_err(|e| e.to_string()),
        other => Err(format!("column {i}: not an integer: {other:?}")),
    }
}

fn binlog_text(row: &BinlogRow, i: usize) -> Result<String, String> {
    match binlog_value(row, i)? {
        mysql_common::Value::Bytes(b) => Ok(String::from_utf8_lossy(b).into_owned()),
        other => Err(format!("column {i}: not a string: {other:?}")),
    }
}

/// GTID numbers as ranges, for a message.
fn ranges(gnos: &[u64]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut start = None;
    for (i, &g) in gnos.iter().enumerate() {
        let first = *start.get_or_insert(g);
        if gnos.get(i + 1) != Some(&(g + 1)) {
            out.push(if first == g { g.to_string() } else { format!("{first}-{g}") });
            start = None;
        }
    }
    if out.is_empty() { "none".into() } else { out.join(",") }
}

fn text(v: &Value) -> String {
    match v {
        Value::Str(s) => s.clone(),
        Value::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
        other => format!("{other:?}"),
    }
}

fn int(v: &Value) -> i64 {
    match v {
        Value::Int(i) => *i,
        Value::UInt(u) => i64::try_from(*u).unwrap_or(i64::MAX),
        _ => i64::MIN,
    }
}
