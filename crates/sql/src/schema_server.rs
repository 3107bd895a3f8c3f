//! The `information_schema` tables that describe the server rather than a schema, with
//! MySQL 8's columns: `ENGINES`, `CHARACTER_SETS` and `COLLATIONS` (what `SHOW ENGINES`,
//! `SHOW CHARACTER SET` and `SHOW COLLATION` list), and `ROUTINES`
//! (empty: Quill has no stored programs yet, and tools read the table to find that out) and
//! `VIEWS`' columns (its rows come from `view_ddl::schema_rows`).
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
