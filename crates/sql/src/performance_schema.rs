//! Who holds and who waits: `information_schema.INNODB_TRX`,
//! `performance_schema.data_locks` / `data_lock_waits` (row locks) and `metadata_locks`,
//! computed from the transaction registry, the lock manager, the metadata locks and the
//! user-level locks at the moment they are read.
//!
//! Lock ids are Quill's own (`<trx>:<table id>:<index>:<key in hex>`), the same in both
//! performance_schema tables so they join as MySQL's do. `LOCK_DATA` shows the key's
//! column values, read from the newest version of the row; a gap lock at the end of an
//! index shows `supremum pseudo-record`. Each transaction with row locks on a table also
//! shows the table's intention lock (`IX`, or `IS` for shared locks only), as InnoDB does.
//! Transactions the server runs for itself (checkpoints) are not shown.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use quill_storage::Value;
use quill_txn::locks::{LockInfo, Wanted};

use crate::catalog::TableMeta;
use crate::error::{Result, SqlError, codes};
use crate::ops;
use crate::query::{Env, OutColumn};
use crate::session_info::SessionInfo;
use crate::show::{cols, s, text};
use crate::types::SqlType;

type Rows = (Vec<OutColumn>, Vec<Vec<Value>>);

fn int(v: u64) -> Value {
    Value::UInt(v)
}

fn lock_id(txn: u64, table: u64, index: u32, key: Option<&[u8]>) -> String {
    let mut id = format!("{txn}:{table}:{index}:");
    match key {
        Some(k) => k.iter().for_each(|b| {
            let _ = write!(id, "{b:02x}");
        }),
        None => id.push_str("supremum"),
    }
    id
}

fn wanted_table(wanted: &Wanted) -> u64 {
    match wanted {
        Wanted::Record { table, .. } | Wanted::Insert { table, .. } => *table,
    }
}

/// `information_schema.INNODB_TRX`.
pub fn innodb_trx(env: &Env<'_>) -> Result<Rows> {
    let c = cols(&[
        ("trx_id", SqlType::bigint()),
        ("trx_state", text(13)),
        ("trx_started", SqlType::DateTime(0)),
        ("trx_requested_lock_id", text(105)),
        ("trx_wait_started", SqlType::DateTime(0)),
        ("trx_weight", SqlType::bigint()),
        ("trx_mysql_thread_id", SqlType::bigint()),
        ("trx_query", text(1024)),
        ("trx_operation_state", text(64)),
        ("trx_tables_in_use", SqlType::bigint()),
        ("trx_tables_locked", SqlType::bigint()),
        ("trx_lock_structs", SqlType::bigint()),
        ("trx_lock_memory_bytes", SqlType::bigint()),
        ("trx_rows_locked", SqlType::bigint()),
        ("trx_rows_modified", SqlType::bigint()),
        ("trx_concurrency_tickets", SqlType::bigint()),
        ("trx_isolation_level", text(16)),
        ("trx_unique_checks", SqlType::bigint()),
        ("trx_foreign_key_checks", SqlType::bigint()),
        ("trx_last_foreign_key_error", text(256)),
        ("trx_adaptive_hash_latched", SqlType::bigint()),
        ("trx_adaptive_hash_timeout", SqlType::bigint()),
        ("trx_is_read_only", SqlType::bigint()),
        ("trx_autocommit_non_locking", SqlType::bigint()),
        ("trx_schedule_weight", SqlType::bigint()),
    ]);
    let engine = &env.info.engine;
    let locks = &engine.txns.locks;
    let queries: BTreeMap<u32, Option<String>> = engine.processes.lock().iter().map(|(&id, p)| (id, p.info.clone())).collect();
    let now = std::time::Instant::now();
    let now_unix = env.now_us;
    let all = locks.locks();
    let waits = locks.waits();
    let mut rows = Vec::new();
    for (id, info) in engine.txns.open_transactions() {
        if info.thread_id == 0 {
            continue;
        }
        let waiting = locks.waiting_for(id);
        let (rows_locked, modified) = locks.txn_counts(id);
        let tables: std::collections::BTreeSet<u64> = all.iter().filter(|l| l.txn == id).map(|l| l.table).collect();
        let (state, requested, wait_started) = match &waiting {
            Some((wanted, since)) => {
                let waited = i64::try_from(now.duration_since(*since).as_micros()).unwrap_or(0);
                // The same id as the request's row in data_locks.
                let id_text = waits
                    .iter()
                    .find(|w| w.waiter == id)
                    .map_or_else(String::new, |w| lock_id(id, wanted_table(wanted), w.requesting.0, w.requesting.1.as_deref()));
                (s("LOCK WAIT"), s(id_text), Value::DateTime((now_unix - waited) / 1_000_000 * 1_000_000))
            }
            None => (s("RUNNING"), Value::Null, Value::Null),
        };
        rows.push(vec![
            int(id),
            state,
            Value::DateTime(info.started_unix_micros / 1_000_000 * 1_000_000),
            requested,
            wait_started,
            int((rows_locked + modified) as u64),
            int(u64::from(info.thread_id)),
            queries.get(&info.thread_id).cloned().flatten().map_or(Value::Null, s),
            if waiting.is_some() { s("waiting for a row lock") } else { Value::Null },
            int(0),
            int(tables.len() as u64),
            int((rows_locked + tables.len()) as u64),
            int(0),
            int(rows_locked as u64),
            int(modified as u64),
            int(0),
            s(info.isolation.replace('-', " ")),
            int(1),
            int(1),
            Value::Null,
            int(0),
            int(0),
            int(u64::from(info.read_only)),
            int(0),
            int(0),
        ]);
    }
    Ok((c, rows))
}

/// `performance_schema.data_locks`, `data_lock_waits`, `metadata_locks` or
/// `replication_applier_status_by_worker` (`replica_control`); `None` for another name.
pub fn performance_schema_table(env: &Env<'_>, name: &str) -> Option<Result<Rows>> {
    let lower = name.to_ascii_lowercase();
    // Lock tables name other sessions' rows and keys: SELECT on performance_schema (1142).
    let needs_select = matches!(lower.as_str(), "data_locks" | "data_lock_waits" | "metadata_locks");
    if needs_select && env.info.checked && env.info.privileges_on("performance_schema", Some(&lower)) & crate::accounts::SELECT == 0 {
        let info = env.info;
        return Some(Err(SqlError::new(
            codes::ER_TABLEACCESS_DENIED_ERROR,
            format!("SELECT command denied to user '{}'@'{}' for table '{lower}'", info.user, info.client_host()),
        )));
    }
    Some(Ok(match lower.as_str() {
        "data_locks" => data_locks(env),
        "data_lock_waits" => data_lock_waits(env),
        "metadata_locks" => metadata_locks(env),
        "replication_applier_status_by_worker" => applier_status_by_worker(env.info),
        _ => return None,
    }))
}

/// `performance_schema.metadata_locks`: the metadata locks of `sql::mdl` and the user-level
/// locks of `txn::user_locks`, granted and pending; `OWNER_THREAD_ID` is the connection id.
fn metadata_locks(env: &Env<'_>) -> Rows {
    let c = cols(&[
        ("OBJECT_TYPE", text(64)),
        ("OBJECT_SCHEMA", text(64)),
        ("OBJECT_NAME", text(64)),
        ("COLUMN_NAME", text(64)),
        ("OBJECT_INSTANCE_BEGIN", SqlType::bigint()),
        ("LOCK_TYPE", text(32)),
        ("LOCK_DURATION", text(32)),
        ("LOCK_STATUS", text(32)),
        ("SOURCE", text(64)),
        ("OWNER_THREAD_ID", SqlType::bigint()),
        ("OWNER_EVENT_ID", SqlType::bigint()),
    ]);
    let mut rows: Vec<Vec<Value>> = env
        .info
        .engine
        .mdl
        .rows()
        .into_iter()
        .map(|l| {
            vec![
                s("TABLE"),
                s(l.table.0),
                s(l.table.1),
                Value::Null,
                int(0),
                s(l.mode.name()),
                s(if l.explicit { "EXPLICIT" } else { "TRANSACTION" }),
                s(if l.granted { "GRANTED" } else { "PENDING" }),
                s(""),
                int(u64::from(l.connection_id)),
                int(0),
            ]
        })
        .collect();
    // User-level locks (`GET_LOCK`): one row per name held, however many times, and one per
    // waiting connection, as MySQL shows them.
    rows.extend(env.info.engine.user_locks.rows().into_iter().map(|l| {
        vec![
            s("USER LEVEL LOCK"),
            Value::Null,
            s(l.name),
            Value::Null,
            int(0),
            s("EXCLUSIVE"),
            s("EXPLICIT"),
            s(if l.granted { "GRANTED" } else { "PENDING" }),
            s(""),
            int(u64::from(l.connection_id)),
            int(0),
        ]
    }));
    (c, rows)
}

/// The key's column values, as `LOCK_DATA` shows them.
pub(crate) fn lock_data(meta: Option<&TableMeta>, index: u32, key: Option<&[u8]>) -> Value {
    let Some(key) = key else { return s("supremum pseudo-record") };
    let Some(meta) = meta else { return Value::Null };
    let (pk, cols): (Option<Vec<u8>>, Vec<usize>) = if index == 0 {
        (None, meta.primary.clone())
    } else {
        let i = index as usize - 1;
        let mut c = meta.indexes.get(i).map(|ix| ix.columns.clone()).unwrap_or_default();
        c.extend(&meta.primary);
        (meta.data.index_entry_pk(i, key), c)
    };
    let pk = pk.as_deref().unwrap_or(key);
    if meta.primary.is_empty() && index == 0 {
        return quill_storage::key::decode_uint_key(pk).map_or(Value::Null, |id| s(format!("0x{id:012X}")));
    }
    let Some(row) = meta.data.newest(pk) else { return Value::Null };
    let shown: Vec<String> = cols
        .iter()
        .map(|&c| match &row[c] {
            Value::Str(v) => format!("'{v}'"),
            v => ops::to_string_lossy(v),
        })
        .collect();
    s(shown.join(", "))
}

fn data_locks(env: &Env<'_>) -> Rows {
    let c = cols(&[
        ("ENGINE", text(32)),
        ("ENGINE_LOCK_ID", text(128)),
        ("ENGINE_TRANSACTION_ID", SqlType::bigint()),
        ("THREAD_ID", SqlType::bigint()),
        ("EVENT_ID", SqlType::bigint()),
        ("OBJECT_SCHEMA", text(64)),
        ("OBJECT_NAME", text(64)),
        ("PARTITION_NAME", text(64)),
        ("SUBPARTITION_NAME", text(64)),
        ("INDEX_NAME", text(64)),
        ("OBJECT_INSTANCE_BEGIN", SqlType::bigint()),
        ("LOCK_TYPE", text(32)),
        ("LOCK_MODE", text(32)),
        ("LOCK_STATUS", text(32)),
        ("LOCK_DATA", text(8192)),
    ]);
    let engine = &env.info.engine;
    let threads: BTreeMap<u64, u32> = engine.txns.open_transactions().into_iter().map(|(id, i)| (id, i.thread_id)).collect();
    let mut rows = Vec::new();
    let all: Vec<LockInfo> = engine.txns.locks.locks();
    // Table intention locks first: IX when the transaction has any exclusive or gap lock.
    let mut tables: BTreeMap<(u64, u64), bool> = BTreeMap::new();
    for l in &all {
        *tables.entry((l.txn, l.table)).or_default() |= !l.mode.starts_with('S');
    }
    let names = |table: u64| env.catalog.table_by_id(table).map_or((Value::Null, Value::Null), |m| (s(m.db.clone()), s(m.name.clone())));
    for (&(txn, table), &exclusive) in &tables {
        let Some(&thread) = threads.get(&txn) else { continue };
        let (db, name) = names(table);
        rows.push(vec![
            s("INNODB"),
            s(format!("{txn}:{table}")),
            int(txn),
            int(u64::from(thread)),
            int(0),
            db,
            name,
            Value::Null,
            Value::Null,
            Value::Null,
            int(0),
            s("TABLE"),
            s(if exclusive { "IX" } else { "IS" }),
            s("GRANTED"),
            Value::Null,
        ]);
    }
    for l in &all {
        let Some(&thread) = threads.get(&l.txn) else { continue };
        let meta = env.catalog.table_by_id(l.table);
        let (db, name) = names(l.table);
        let index_name = match (l.index, meta) {
            (0, _) => s(if meta.is_some_and(|m| m.primary.is_empty()) { "GEN_CLUST_INDEX" } else { "PRIMARY" }),
            (i, Some(m)) => m.indexes.get(i as usize - 1).map_or(Value::Null, |ix| s(ix.name.clone())),
            (_, None) => Value::Null,
        };
        rows.push(vec![
            s("INNODB"),
            s(lock_id(l.txn, l.table, l.index, l.key.as_deref())),
            int(l.txn),
            int(u64::from(thread)),
            int(0),
            db,
            name,
            Value::Null,
            Value::Null,
            index_name,
            int(0),
            s("RECORD"),
            s(l.mode.clone()),
            s(if l.granted { "GRANTED" } else { "WAITING" }),
            lock_data(meta, l.index, l.key.as_deref()),
        ]);
    }
    (c, rows)
}

fn data_lock_waits(env: &Env<'_>) -> Rows {
    let c = cols(&[
        ("ENGINE", text(32)),
        ("REQUESTING_ENGINE_LOCK_ID", text(128)),
        ("REQUESTING_ENGINE_TRANSACTION_ID", SqlType::bigint()),
        ("REQUESTING_THREAD_ID", SqlType::bigint()),
        ("REQUESTING_EVENT_ID", SqlType::bigint()),
        ("REQUESTING_OBJECT_INSTANCE_BEGIN", SqlType::bigint()),
        ("BLOCKING_ENGINE_LOCK_ID", text(128)),
        ("BLOCKING_ENGINE_TRANSACTION_ID", SqlType::bigint()),
        ("BLOCKING_THREAD_ID", SqlType::bigint()),
        ("BLOCKING_EVENT_ID", SqlType::bigint()),
        ("BLOCKING_OBJECT_INSTANCE_BEGIN", SqlType::bigint()),
    ]);
    let engine = &env.info.engine;
    let threads: BTreeMap<u64, u32> = engine.txns.open_transactions().into_iter().map(|(id, i)| (id, i.thread_id)).collect();
    let thread = |txn: u64| int(u64::from(threads.get(&txn).copied().unwrap_or(0)));
    let rows = engine
        .txns
        .locks
        .waits()
        .into_iter()
        .map(|w| {
            let table = wanted_table(&w.wanted);
            vec![
                s("INNODB"),
                s(lock_id(w.waiter, table, w.requesting.0, w.requesting.1.as_deref())),
                int(w.waiter),
                thread(w.waiter),
                int(0),
                int(0),
                s(lock_id(w.blocker, table, w.blocking.0, w.blocking.1.as_deref())),
                int(w.blocker),
                thread(w.blocker),
                int(0),
                int(0),
            ]
        })
        .collect();
    (c, rows)
}

/// `performance_schema.replication_applier_status_by_worker`, with MySQL 8's columns: one
/// row per worker of the (one, unnamed) channel; none on a server that is not a replica.
/// Timestamps are shown in the session's time zone, as MySQL's TIMESTAMP(6) columns; one not
/// yet reached is `0000-00-00 00:00:00.000000` in MySQL and NULL here.
#[must_use]
pub fn applier_status_by_worker(info: &SessionInfo) -> (Vec<crate::query::OutColumn>, Vec<Vec<Value>>) {
    use crate::show::{cols, s, text};
    use crate::types::SqlType;
    let ts = SqlType::Timestamp(6);
    let names: [(&str, SqlType); 24] = [
        ("CHANNEL_NAME", text(64)),
        ("WORKER_ID", SqlType::bigint()),
        ("THREAD_ID", SqlType::bigint()),
        ("SERVICE_STATE", text(3)),
        ("LAST_ERROR_NUMBER", SqlType::bigint()),
        ("LAST_ERROR_MESSAGE", text(1024)),
        ("LAST_ERROR_TIMESTAMP", ts.clone()),
        ("LAST_APPLIED_TRANSACTION", text(57)),
        ("LAST_APPLIED_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP", ts.clone()),
        ("LAST_APPLIED_TRANSACTION_IMMEDIATE_COMMIT_TIMESTAMP", ts.clone()),
        ("LAST_APPLIED_TRANSACTION_START_APPLY_TIMESTAMP", ts.clone()),
        ("LAST_APPLIED_TRANSACTION_END_APPLY_TIMESTAMP", ts.clone()),
        ("APPLYING_TRANSACTION", text(57)),
        ("APPLYING_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP", ts.clone()),
        ("APPLYING_TRANSACTION_IMMEDIATE_COMMIT_TIMESTAMP", ts.clone()),
        ("APPLYING_TRANSACTION_START_APPLY_TIMESTAMP", ts.clone()),
        ("LAST_APPLIED_TRANSACTION_RETRIES_COUNT", SqlType::bigint()),
        ("LAST_APPLIED_TRANSACTION_LAST_TRANSIENT_ERROR_NUMBER", SqlType::bigint()),
        ("LAST_APPLIED_TRANSACTION_LAST_TRANSIENT_ERROR_MESSAGE", text(1024)),
        ("LAST_APPLIED_TRANSACTION_LAST_TRANSIENT_ERROR_TIMESTAMP", ts.clone()),
        ("APPLYING_TRANSACTION_RETRIES_COUNT", SqlType::bigint()),
        ("APPLYING_TRANSACTION_LAST_TRANSIENT_ERROR_NUMBER", SqlType::bigint()),
        ("APPLYING_TRANSACTION_LAST_TRANSIENT_ERROR_MESSAGE", text(1024)),
        ("APPLYING_TRANSACTION_LAST_TRANSIENT_ERROR_TIMESTAMP", ts),
    ];
    let columns = cols(&names);
    let offset_us = info.utc_offset_secs() * 1_000_000;
    let time = |us: u64| if us == 0 { Value::Null } else { Value::DateTime(i64::try_from(us).unwrap_or(i64::MAX) + offset_us) };
    let workers = info.engine.replica.get().map(|r| r.workers()).unwrap_or_default();
    let rows = workers
        .into_iter()
        .map(|w| {
            let applied = w.last_applied.unwrap_or_default();
            let applying = w.applying.unwrap_or_default();
            let (errno, message, at) = w.last_error.unwrap_or_default();
            vec![
                s(""),
                Value::UInt(w.worker_id),
                Value::Null,
                s(if w.running { "ON" } else { "OFF" }),
                Value::UInt(u64::from(errno)),
                s(&message),
                time(at),
                s(&applied.gtid),
                time(applied.original_commit_us),
                time(applied.immediate_commit_us),
                time(applied.start_apply_us),
                time(applied.end_apply_us),
                s(&applying.gtid),
                time(applying.original_commit_us),
                time(applying.immediate_commit_us),
                time(applying.start_apply_us),
                Value::UInt(0),
                Value::UInt(0),
                s(""),
                Value::Null,
                Value::UInt(0),
                Value::UInt(0),
                s(""),
                Value::Null,
            ]
        })
        .collect();
    (columns, rows)
}
