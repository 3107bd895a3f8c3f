//! `SHOW ENGINE INNODB STATUS`: InnoDB's monitor text, with the two sections about locking
//! that tools read (`docs/slow-log.md`, "Lock waits and deadlocks"):
//!
//! - `LATEST DETECTED DEADLOCK`: the last deadlock the lock manager found, described by its
//!   victim's session while the other transactions still waited ([`describe_deadlock`]): each
//!   transaction's connection, statement, the locks it held that the others waited for and the
//!   lock it waited for, then which one was rolled back. With `innodb_print_all_deadlocks` the
//!   same text goes to the server's log.
//! - `TRANSACTIONS`: every open transaction of a connection, with its statement and, when it
//!   waits, how long and for which lock.
//!
//! Lock lines keep InnoDB's shape (`RECORD LOCKS ... index PRIMARY of table `db`.`t` trx id N
//! lock_mode X locks rec but not gap waiting`) so pt-deadlock-logger and innotop find their
//! fields. Quill has no pages: `space id`, `page no` and `n bits` are 0, and the record is
//! shown as its key's encoded bytes (`0: len 4; hex 80000001;`) followed by its column
//! values. InnoDB's other sections (semaphores, file I/O, buffer pool...) describe machinery
//! Quill does not have and are not written.
//!
//! Where it sits: in `quill-sql`, beside `performance_schema` (the same locks as tables).

use std::fmt::Write as _;
use std::time::{Instant, SystemTime};

use quill_txn::locks::{DeadlockRecord, LockInfo};

use crate::catalog::Catalog;
use crate::engine::Engine;

/// `SHOW ENGINE INNODB STATUS`'s text now; `deadlock` is the last one described.
#[must_use]
pub fn status_text(engine: &Engine, catalog: &Catalog, deadlock: Option<&str>) -> String {
    let mut out = String::new();
    let now = local_time(SystemTime::now());
    let _ = write!(out, "\n=====================================\n{now} 0x0 INNODB MONITOR OUTPUT\n=====================================\n");
    if let Some(text) = deadlock {
        out.push_str("------------------------\nLATEST DETECTED DEADLOCK\n------------------------\n");
        out.push_str(text);
    }
    out.push_str("------------\nTRANSACTIONS\n------------\n");
    let _ = writeln!(out, "Trx id counter {}", engine.txns.next_txn_id());
    out.push_str("LIST OF TRANSACTIONS FOR EACH SESSION:\n");
    let locks = &engine.txns.locks;
    let all = locks.locks();
    let now = Instant::now();
    for (txn, info) in engine.txns.open_transactions() {
        if info.thread_id == 0 {
            continue;
        }
        let waiting = locks.waiting_for(txn);
        let _ = write!(out, "---TRANSACTION {txn}, ACTIVE {} sec", now.duration_since(info.started).as_secs());
        out.push_str(if waiting.is_some() { " starting index read\n" } else { "\n" });
        let (rows, modified) = locks.txn_counts(txn);
        let held = all.iter().filter(|l| l.txn == txn).count();
        if waiting.is_some() {
            out.push_str("LOCK WAIT ");
        }
        let _ = writeln!(out, "{held} lock struct(s), heap size 0, {rows} row lock(s), undo log entries {modified}");
        describe_connection(&mut out, engine, info.thread_id, waiting.is_some());
        if let Some((_, since)) = waiting {
            let _ = writeln!(out, "------- TRX HAS BEEN WAITING {} SEC FOR THIS LOCK TO BE GRANTED:", now.duration_since(since).as_secs());
            if let Some(request) = all.iter().find(|l| l.txn == txn && !l.granted) {
                lock_lines(&mut out, catalog, request);
            } else if let Some(w) = locks.waits().into_iter().find(|w| w.waiter == txn) {
                let (index, key) = w.requesting;
                let request = LockInfo { txn, table: table_of(&w.wanted), index, mode: "X".into(), granted: false, key };
                lock_lines(&mut out, catalog, &request);
            }
            out.push_str("------------------\n");
        }
    }
    out.push_str("----------------------------\nEND OF INNODB MONITOR OUTPUT\n============================\n");
    out
}

fn table_of(w: &quill_txn::locks::Wanted) -> u64 {
    match w {
        quill_txn::locks::Wanted::Record { table, .. } | quill_txn::locks::Wanted::Insert { table, .. } => *table,
    }
}

/// The deadlock `record`, as InnoDB's `LATEST DETECTED DEADLOCK` shows it; called by the
/// victim's session before it rolls back, so every connection and statement is still there.
#[must_use]
pub fn describe_deadlock(engine: &Engine, catalog: &Catalog, record: &DeadlockRecord) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{} 0x0", local_time(record.at));
    let open = engine.txns.open_transactions();
    let now = Instant::now();
    for (n, member) in record.members.iter().enumerate() {
        let n = n + 1;
        let _ = writeln!(out, "*** ({n}) TRANSACTION:");
        let info = open.iter().find(|(t, _)| *t == member.txn).map(|(_, i)| i);
        let active = info.map_or(0, |i| now.duration_since(i.started).as_secs());
        let _ = writeln!(out, "TRANSACTION {}, ACTIVE {active} sec starting index read", member.txn);
        let (rows, _) = engine.txns.locks.txn_counts(member.txn);
        let _ = writeln!(out, "LOCK WAIT {} lock struct(s), heap size 0, {rows} row lock(s)", member.holds.len() + 1);
        describe_connection(&mut out, engine, info.map_or(0, |i| i.thread_id), true);
        if !member.holds.is_empty() {
            let _ = writeln!(out, "\n*** ({n}) HOLDS THE LOCK(S):");
            for held in &member.holds {
                lock_lines(&mut out, catalog, held);
            }
        }
        let _ = writeln!(out, "\n*** ({n}) WAITING FOR THIS LOCK TO BE GRANTED:");
        lock_lines(&mut out, catalog, &member.waiting);
        out.push('\n');
    }
    if record.too_deep {
        out.push_str("TOO DEEP OR LONG SEARCH IN THE LOCK TABLE WAITS-FOR GRAPH, WE WILL ROLL BACK FOLLOWING TRANSACTION\n");
    }
    let victim = record.members.iter().position(|m| m.txn == record.victim).map_or(1, |p| p + 1);
    let _ = writeln!(out, "*** WE ROLL BACK TRANSACTION ({victim})");
    out
}

/// `MySQL thread id N, OS thread handle 0, query id 0 host user state`, then the statement.
fn describe_connection(out: &mut String, engine: &Engine, thread_id: u32, waiting: bool) {
    let process = engine.processes.lock().get(&thread_id).cloned();
    let (user, host, query) = process.map_or((String::new(), String::new(), None), |p| (p.user, p.host, p.info));
    let state = if waiting { " updating" } else { "" };
    let _ = writeln!(out, "MySQL thread id {thread_id}, OS thread handle 0, query id 0 {host} {user}{state}");
    if let Some(q) = query {
        let _ = writeln!(out, "{q}");
    }
}

/// InnoDB's two lines of a record lock: which index of which table, in which mode, and the
/// record (its key's bytes, then its column values).
fn lock_lines(out: &mut String, catalog: &Catalog, lock: &LockInfo) {
    let meta = catalog.table_by_id(lock.table);
    let table = meta.map_or_else(|| format!("`#{}`", lock.table), |m| format!("`{}`.`{}`", m.db, m.name));
    let index = match (lock.index, meta) {
        (0, _) => "PRIMARY".to_owned(),
        (i, Some(m)) => m.indexes.get(i as usize - 1).map_or_else(|| format!("#{i}"), |ix| ix.name.clone()),
        (i, None) => format!("#{i}"),
    };
    let (mode, kind) = lock.mode.split_once(',').unwrap_or((lock.mode.as_str(), ""));
    let mode = if mode == "S" { "lock mode S".to_owned() } else { format!("lock_mode {mode}") };
    let kind = match kind {
        "REC_NOT_GAP" => " locks rec but not gap",
        "GAP" => " locks gap before rec",
        "INSERT_INTENTION" => " locks gap before rec insert intention",
        _ => "",
    };
    let waiting = if lock.granted { "" } else { " waiting" };
    let _ = writeln!(out, "RECORD LOCKS space id 0 page no 0 n bits 0 index {index} of table {table} trx id {} {mode}{kind}{waiting}", lock.txn);
    match &lock.key {
        None => {
            out.push_str("Record lock, heap no 1 PHYSICAL RECORD: n_fields 1; compact format; info bits 0\n 0: len 8; hex 73757072656d756d; asc supremum;;\n")
        }
        Some(key) => {
            let hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
            let asc: String = key.iter().map(|&b| if b.is_ascii_graphic() || b == b' ' { b as char } else { ' ' }).collect();
            let values = crate::performance_schema::lock_data(meta, lock.index, Some(key));
            let _ = writeln!(
                out,
                "Record lock, heap no 2 PHYSICAL RECORD: n_fields 1; compact format; info bits 0\n 0: len {}; hex {hex}; asc {asc};; values {}",
                key.len(),
                crate::ops::to_string_lossy(&values)
            );
        }
    }
}

/// `2026-11-25 02:30:00`, the server's local time, as InnoDB writes it.
fn local_time(t: SystemTime) -> String {
    chrono::DateTime::<chrono::Local>::from(t).format("%Y-%m-%d %H:%M:%S").to_string()
}
