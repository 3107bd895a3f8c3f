//! The `information_schema` tables that describe the server rather than a schema, with
//! MySQL 8's columns: `ENGINES`, `CHARACTER_SETS` and `COLLATIONS` (what `SHOW ENGINES`,
//! `SHOW CHARACTER SET` and `SHOW COLLATION` list), and `ROUTINES`
//! (empty: Quill has no stored programs yet, and tools read the table to find that out) and
//! `VIEWS`' columns (its rows come from `view_ddl::schema_rows`), and
//! `INNODB_BUFFER_POOL_STATS` (the buffer pool of paged tables).
//!
//! Where it sits: `sql`, called from `show::information_schema_table`.

use quill_storage::{Collation, Value};

use crate::charset::{charset_of, is_default_collation};
use crate::query::OutColumn;
use crate::show::{cols, s, text};
use crate::types::SqlType;

type Rows = Vec<Vec<Value>>;

/// The collations Quill compares strings with, in `SHOW COLLATION`'s order.
pub const COLLATIONS: [Collation; 4] = [Collation::Utf8mb4AiCi, Collation::Utf8mb4GeneralCi, Collation::Utf8mb4Bin, Collation::Binary];

/// `ENGINES`.
#[must_use]
pub fn engines() -> (Vec<OutColumn>, Rows) {
    let c = cols(&[("ENGINE", text(64)), ("SUPPORT", text(8)), ("COMMENT", text(80)), ("TRANSACTIONS", text(3)), ("XA", text(3)), ("SAVEPOINTS", text(3))]);
    let rows = quill_storage::handler::ENGINES
        .iter()
        .map(|(name, comment)| {
            let support = if *name == quill_storage::handler::DEFAULT_ENGINE { "DEFAULT" } else { "YES" };
            vec![s(*name), s(support), s(*comment), s("YES"), s("NO"), s("YES")]
        })
        .collect();
    (c, rows)
}

/// `CHARACTER_SETS`.
#[must_use]
pub fn character_sets() -> (Vec<OutColumn>, Rows) {
    let c = cols(&[("CHARACTER_SET_NAME", text(64)), ("DEFAULT_COLLATE_NAME", text(64)), ("DESCRIPTION", text(2048)), ("MAXLEN", SqlType::bigint())]);
    let rows = vec![
        vec![s("binary"), s("binary"), s("Binary pseudo charset"), Value::Int(1)],
        vec![s("utf8mb4"), s(Collation::Utf8mb4AiCi.name()), s("UTF-8 Unicode"), Value::Int(4)],
    ];
    (c, rows)
}

/// `COLLATIONS`.
#[must_use]
pub fn collations() -> (Vec<OutColumn>, Rows) {
    let c = cols(&[
        ("COLLATION_NAME", text(64)),
        ("CHARACTER_SET_NAME", text(64)),
        ("ID", SqlType::bigint()),
        ("IS_DEFAULT", text(3)),
        ("IS_COMPILED", text(3)),
        ("SORTLEN", SqlType::bigint()),
        ("PAD_ATTRIBUTE", text(9)),
    ]);
    let rows = COLLATIONS
        .iter()
        .map(|&c| {
            let pad = if c == Collation::Utf8mb4AiCi { "NO PAD" } else { "PAD SPACE" };
            vec![
                s(c.name()),
                s(charset_of(c)),
                Value::Int(i64::from(c.id())),
                s(if is_default_collation(c) { "Yes" } else { "" }),
                s("Yes"),
                Value::Int(1),
                s(pad),
            ]
        })
        .collect();
    (c, rows)
}

/// `ROUTINES`: no rows.
#[must_use]
pub fn routines() -> (Vec<OutColumn>, Rows) {
    let names = [
        "SPECIFIC_NAME",
        "ROUTINE_CATALOG",
        "ROUTINE_SCHEMA",
        "ROUTINE_NAME",
        "ROUTINE_TYPE",
        "DATA_TYPE",
        "CHARACTER_MAXIMUM_LENGTH",
        "CHARACTER_OCTET_LENGTH",
        "NUMERIC_PRECISION",
        "NUMERIC_SCALE",
        "DATETIME_PRECISION",
        "CHARACTER_SET_NAME",
        "COLLATION_NAME",
        "DTD_IDENTIFIER",
        "ROUTINE_BODY",
        "ROUTINE_DEFINITION",
        "EXTERNAL_NAME",
        "EXTERNAL_LANGUAGE",
        "PARAMETER_STYLE",
        "IS_DETERMINISTIC",
        "SQL_DATA_ACCESS",
        "SQL_PATH",
        "SECURITY_TYPE",
        "CREATED",
        "LAST_ALTERED",
        "SQL_MODE",
        "ROUTINE_COMMENT",
        "DEFINER",
        "CHARACTER_SET_CLIENT",
        "COLLATION_CONNECTION",
        "DATABASE_COLLATION",
    ];
    (names.iter().map(|n| column(n)).collect(), Vec::new())
}

/// `VIEWS`' columns (its rows: `view_ddl::schema_rows`).
#[must_use]
pub fn views() -> (Vec<OutColumn>, Rows) {
    let names = [
        "TABLE_CATALOG",
        "TABLE_SCHEMA",
        "TABLE_NAME",
        "VIEW_DEFINITION",
        "CHECK_OPTION",
        "IS_UPDATABLE",
        "DEFINER",
        "SECURITY_TYPE",
        "CHARACTER_SET_CLIENT",
        "COLLATION_CONNECTION",
    ];
    (names.iter().map(|n| column(n)).collect(), Vec::new())
}

fn column(name: &str) -> OutColumn {
    let ty = if matches!(name, "CHARACTER_MAXIMUM_LENGTH" | "CHARACTER_OCTET_LENGTH" | "NUMERIC_PRECISION" | "NUMERIC_SCALE" | "DATETIME_PRECISION") {
        SqlType::bigint()
    } else if matches!(name, "CREATED" | "LAST_ALTERED") {
        SqlType::DateTime(0)
    } else {
        text(1024)
    };
    cols(&[(name, ty)]).remove(0)
}

/// InnoDB's page size, the unit `INNODB_BUFFER_POOL_STATS` counts the pool's size in.
const INNODB_PAGE_BYTES: u64 = 16 << 10;

/// `INNODB_BUFFER_POOL_STATS`: one row, pool 0, with MySQL 8's 32 columns. Counts of pages
/// are Quill's leaves (up to 64 rows or index entries each); `POOL_SIZE` and `FREE_BUFFERS`
/// are the capacity and what is left of it in 16 KiB pages. Quill's pool has no young and old
/// sublists, no read-ahead, no compression and no asynchronous reads or flushes (a leaf is
/// read by the thread that needs it and written by the one that evicts it), so those columns
/// are 0, and rates, which InnoDB computes between its monitor's printouts, are 0 too. With
/// no paged table (`quill_table_storage=memory`) the table is empty.
#[must_use]
pub fn buffer_pool_stats(tablespace: Option<&quill_storage::tablespace::Tablespace>) -> (Vec<OutColumn>, Rows) {
    let names = [
        "POOL_ID",
        "POOL_SIZE",
        "FREE_BUFFERS",
        "DATABASE_PAGES",
        "OLD_DATABASE_PAGES",
        "MODIFIED_DATABASE_PAGES",
        "PENDING_DECOMPRESS",
        "PENDING_READS",
        "PENDING_FLUSH_LRU",
        "PENDING_FLUSH_LIST",
        "PAGES_MADE_YOUNG",
        "PAGES_NOT_MADE_YOUNG",
        "PAGES_MADE_YOUNG_RATE",
        "PAGES_MADE_NOT_YOUNG_RATE",
        "NUMBER_PAGES_READ",
        "NUMBER_PAGES_CREATED",
        "NUMBER_PAGES_WRITTEN",
        "PAGES_READ_RATE",
        "PAGES_CREATE_RATE",
        "PAGES_WRITTEN_RATE",
        "NUMBER_PAGES_GET",
        "HIT_RATE",
        "YOUNG_MAKE_PER_THOUSAND_GETS",
        "NOT_YOUNG_MAKE_PER_THOUSAND_GETS",
        "NUMBER_PAGES_READ_AHEAD",
        "NUMBER_READ_AHEAD_EVICTED",
        "READ_AHEAD_RATE",
        "READ_AHEAD_EVICTED_RATE",
        "LRU_IO_TOTAL",
        "LRU_IO_CURRENT",
        "UNCOMPRESS_TOTAL",
        "UNCOMPRESS_CURRENT",
    ];
    let rates = [
        "PAGES_MADE_YOUNG_RATE",
        "PAGES_MADE_NOT_YOUNG_RATE",
        "PAGES_READ_RATE",
        "PAGES_CREATE_RATE",
        "PAGES_WRITTEN_RATE",
        "READ_AHEAD_RATE",
        "READ_AHEAD_EVICTED_RATE",
    ];
    let columns: Vec<(&str, SqlType)> = names.iter().map(|&n| (n, if rates.contains(&n) { SqlType::Double } else { SqlType::bigint() })).collect();
    let c = cols(&columns);
    let Some(pool) = tablespace.map(|t| &t.pool) else { return (c, Vec::new()) };
    let load = |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
    let counters = &pool.counters;
    let capacity_pages = pool.capacity_bytes() / INNODB_PAGE_BYTES;
    let free_pages = pool.capacity_bytes().saturating_sub(pool.resident_bytes()) / INNODB_PAGE_BYTES;
    let (gets, reads) = (counters.read_requests.get(), load(&counters.reads));
    // InnoDB's hit rate is per thousand gets.
    let hit_rate = (1000 * gets.saturating_sub(reads)).checked_div(gets).unwrap_or(0);
    let value = |name: &str| -> u64 {
        match name {
            "POOL_SIZE" => capacity_pages,
            "FREE_BUFFERS" => free_pages,
            "DATABASE_PAGES" => pool.resident_leaves(),
            "MODIFIED_DATABASE_PAGES" => pool.dirty_leaves(),
            "NUMBER_PAGES_READ" => reads,
            "NUMBER_PAGES_WRITTEN" => load(&counters.pages_written),
            "NUMBER_PAGES_GET" => gets,
            "HIT_RATE" => hit_rate,
            _ => 0,
        }
    };
    let int = |n: u64| Value::Int(i64::try_from(n).unwrap_or(i64::MAX));
    let row = names.iter().map(|&n| if rates.contains(&n) { Value::Double(0.0) } else { int(value(n)) }).collect();
    (c, vec![row])
}
