//! information_schema tables about where tables live, as MySQL 8 lays them out for InnoDB:
//! `PARTITIONS`, `FILES`, `INNODB_TABLES`, `INNODB_TABLESPACES`, and the accounts' global
//! privileges, `USER_PRIVILEGES`. Tools read them at start-up (Vitess's schema engine, ORMs'
//! reflection, GUI clients): each answers with Quill's tables under MySQL's columns.
//!
//! - Quill has no partitioned tables: `PARTITIONS` has one row per table, its partition
//!   columns NULL, as MySQL lists a table that is not partitioned.
//! - Each table is its own "tablespace" (InnoDB's file-per-table): `INNODB_TABLES` and
//!   `INNODB_TABLESPACES` name it `db/table`, with the table's id as its space id and sizes
//!   from the table's statistics. `FILES` lists no file: Quill's files are its commit log,
//!   checkpoints and page files, none of them a table's own.

use quill_storage::Value;

use crate::accounts::{Acl, GRANT_OPTION, PRIVILEGES};
use crate::catalog::Catalog;
use crate::query::OutColumn;
use crate::show::{cols, s, table_status, text};
use crate::types::SqlType;

type Rows = Vec<Vec<Value>>;

/// InnoDB's page size, which `INNODB_TABLESPACES` reports.
const PAGE_BYTES: i64 = 16 << 10;

fn int(n: i64) -> Value {
    Value::Int(n)
}

/// `PARTITIONS`: one row per table, not partitioned.
#[must_use]
pub fn partitions(catalog: &Catalog) -> (Vec<OutColumn>, Rows) {
    let big = SqlType::bigint;
    let columns = cols(&[
        ("TABLE_CATALOG", text(64)),
        ("TABLE_SCHEMA", text(64)),
        ("TABLE_NAME", text(64)),
        ("PARTITION_NAME", text(64)),
        ("SUBPARTITION_NAME", text(64)),
        ("PARTITION_ORDINAL_POSITION", big()),
        ("SUBPARTITION_ORDINAL_POSITION", big()),
        ("PARTITION_METHOD", text(13)),
        ("SUBPARTITION_METHOD", text(13)),
        ("PARTITION_EXPRESSION", text(2048)),
        ("SUBPARTITION_EXPRESSION", text(2048)),
        ("PARTITION_DESCRIPTION", text(2048)),
        ("TABLE_ROWS", big()),
        ("AVG_ROW_LENGTH", big()),
        ("DATA_LENGTH", big()),
        ("MAX_DATA_LENGTH", big()),
        ("INDEX_LENGTH", big()),
        ("DATA_FREE", big()),
        ("CREATE_TIME", SqlType::DateTime(0)),
        ("UPDATE_TIME", SqlType::DateTime(0)),
        ("CHECK_TIME", SqlType::DateTime(0)),
        ("CHECKSUM", big()),
        ("PARTITION_COMMENT", text(2048)),
        ("NODEGROUP", text(256)),
        ("TABLESPACE_NAME", text(268)),
    ]);
    let rows = catalog
        .databases
        .values()
        .flat_map(|d| d.tables.values())
        .map(|t| {
            // SHOW TABLE STATUS's figures: rows, lengths, times and checksum.
            let st = table_status(t);
            let mut row = vec![s("def"), s(t.db.clone()), s(t.name.clone())];
            row.extend(std::iter::repeat_n(Value::Null, 9));
            row.extend([4, 5, 6, 7, 8, 9, 11, 12, 13, 15].iter().map(|&i| st.get(i).cloned().unwrap_or(Value::Null)));
            row.extend([s(""), s("default"), Value::Null]);
            row
        })
        .collect();
    (columns, rows)
}

/// `FILES`: MySQL 8's columns, no rows (see the module doc).
#[must_use]
pub fn files() -> (Vec<OutColumn>, Rows) {
    let names = [
        "FILE_ID",
        "FILE_NAME",
        "FILE_TYPE",
        "TABLESPACE_NAME",
        "TABLE_CATALOG",
        "TABLE_SCHEMA",
        "TABLE_NAME",
        "LOGFILE_GROUP_NAME",
        "LOGFILE_GROUP_NUMBER",
        "ENGINE",
        "FULLTEXT_KEYS",
        "DELETED_ROWS",
        "UPDATE_COUNT",
        "FREE_EXTENTS",
        "TOTAL_EXTENTS",
        "EXTENT_SIZE",
        "INITIAL_SIZE",
        "MAXIMUM_SIZE",
        "AUTOEXTEND_SIZE",
        "CREATION_TIME",
        "LAST_UPDATE_TIME",
        "LAST_ACCESS_TIME",
        "RECOVER_TIME",
        "TRANSACTION_COUNTER",
        "VERSION",
        "ROW_FORMAT",
        "TABLE_ROWS",
        "AVG_ROW_LENGTH",
        "DATA_LENGTH",
        "MAX_DATA_LENGTH",
        "INDEX_LENGTH",
        "DATA_FREE",
        "CREATE_TIME",
        "UPDATE_TIME",
        "CHECK_TIME",
        "CHECKSUM",
        "STATUS",
        "EXTRA",
    ];
    (names.iter().map(|n| OutColumn::computed(n, text(256))).collect(), Vec::new())
}

/// `INNODB_TABLES`: a row per table (see the module doc).
#[must_use]
pub fn innodb_tables(catalog: &Catalog) -> (Vec<OutColumn>, Rows) {
    let columns = cols(&[
        ("TABLE_ID", SqlType::bigint()),
        ("NAME", text(655)),
        ("FLAG", SqlType::bigint()),
        ("N_COLS", SqlType::bigint()),
        ("SPACE", SqlType::bigint()),
        ("ROW_FORMAT", text(12)),
        ("ZIP_PAGE_SIZE", SqlType::bigint()),
        ("SPACE_TYPE", text(10)),
        ("INSTANT_COLS", SqlType::bigint()),
        ("TOTAL_ROW_VERSIONS", SqlType::bigint()),
    ]);
    let rows = catalog
        .databases
        .values()
        .flat_map(|d| d.tables.values())
        .map(|t| {
            let id = i64::try_from(t.id).unwrap_or(i64::MAX);
            // FLAG 33: DYNAMIC row format; N_COLS counts InnoDB's three hidden columns.
            vec![
                int(id),
                s(format!("{}/{}", t.db, t.name)),
                int(33),
                int(t.columns.len() as i64 + 3),
                int(id),
                s("Dynamic"),
                int(0),
                s("Single"),
                int(0),
                int(0),
            ]
        })
        .collect();
    (columns, rows)
}

/// `INNODB_TABLESPACES`: a row per table (see the module doc).
#[must_use]
pub fn innodb_tablespaces(catalog: &Catalog) -> (Vec<OutColumn>, Rows) {
    let columns = cols(&[
        ("SPACE", SqlType::bigint()),
        ("NAME", text(655)),
        ("FLAG", SqlType::bigint()),
        ("ROW_FORMAT", text(22)),
        ("PAGE_SIZE", SqlType::bigint()),
        ("ZIP_PAGE_SIZE", SqlType::bigint()),
        ("SPACE_TYPE", text(10)),
        ("FS_BLOCK_SIZE", SqlType::bigint()),
        ("FILE_SIZE", SqlType::bigint()),
        ("ALLOCATED_SIZE", SqlType::bigint()),
        ("AUTOEXTEND_SIZE", SqlType::bigint()),
        ("SERVER_VERSION", text(10)),
        ("SPACE_VERSION", SqlType::bigint()),
        ("ENCRYPTION", text(1)),
        ("STATE", text(10)),
    ]);
    let rows = catalog
        .databases
        .values()
        .flat_map(|d| d.tables.values())
        .map(|t| {
            let stats = t.data.statistics();
            let bytes = i64::try_from(stats.data_bytes).unwrap_or(i64::MAX);
            let size = (bytes / PAGE_BYTES + 1) * PAGE_BYTES;
            let id = i64::try_from(t.id).unwrap_or(i64::MAX);
            vec![
                int(id),
                s(format!("{}/{}", t.db, t.name)),
                int(16_417),
                s("Dynamic"),
                int(PAGE_BYTES),
                int(0),
                s("Single"),
                int(4096),
                int(size),
                int(size),
                int(0),
                s(crate::SERVER_VERSION.split('-').next().unwrap_or("8.0.40")),
                int(1),
                s("N"),
                s("normal"),
            ]
        })
        .collect();
    (columns, rows)
}

/// `USER_PRIVILEGES`: each account's global privileges, `USAGE` for one with none.
#[must_use]
pub fn user_privileges(acl: &Acl, visible: impl Fn(&str, &str) -> bool) -> (Vec<OutColumn>, Rows) {
    let columns = cols(&[("GRANTEE", text(292)), ("TABLE_CATALOG", text(512)), ("PRIVILEGE_TYPE", text(64)), ("IS_GRANTABLE", text(3))]);
    let mut rows = Vec::new();
    for a in acl.accounts.iter().filter(|a| visible(&a.user, &a.host)) {
        let grantee = format!("'{}'@'{}'", a.user, a.host);
        let grantable = if a.global & GRANT_OPTION != 0 { "YES" } else { "NO" };
        let held: Vec<&str> = PRIVILEGES.iter().filter(|p| a.global & p.bit != 0).map(|p| p.name).collect();
        if held.is_empty() {
            rows.push(vec![s(grantee.clone()), s("def"), s("USAGE"), s(grantable)]);
        }
        for p in held {
            rows.push(vec![s(grantee.clone()), s("def"), s(p), s(grantable)]);
        }
    }
    (columns, rows)
}
