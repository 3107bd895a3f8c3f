//! SHOW statements and the `information_schema` tables, computed from the catalog.

use quill_storage::{Collation, Value};

use crate::catalog::{Catalog, ColumnDefault, TableMeta};
use crate::error::{Result, SqlError};
use crate::ident::quote_identifier as quote;
use crate::query::{Env, OutColumn, ResultSet};
use crate::session_info::SessionInfo;
use crate::system_tables::{SystemTable, SystemTables};
use crate::types::SqlType;

pub(crate) fn text(len: u32) -> SqlType {
    SqlType::VarChar { len, collation: Collation::Utf8mb4GeneralCi }
}

pub(crate) fn s(v: impl Into<String>) -> Value {
    Value::Str(v.into())
}

pub(crate) fn cols(names: &[(&str, SqlType)]) -> Vec<OutColumn> {
    names.iter().map(|(n, t)| OutColumn::computed(n, t.clone())).collect()
}

/// SQL LIKE filter for SHOW ... LIKE 'pattern'.
#[must_use]
pub fn like_filter(value: &str, pattern: Option<&str>) -> bool {
    pattern.is_none_or(|p| crate::like::like(value, p, '\\', Collation::Utf8mb4GeneralCi))
}

#[must_use]
pub fn show_databases(catalog: &Catalog, like: Option<&str>) -> ResultSet {
    let mut names: Vec<String> = catalog.databases.keys().cloned().collect();
    names.push("information_schema".into());
    names.sort();
    ResultSet { columns: cols(&[("Database", text(64))]), rows: names.into_iter().filter(|n| like_filter(n, like)).map(|n| vec![s(n)]).collect() }
}

/// SHOW [FULL] TABLES [FROM db] [LIKE p].
///
/// # Errors
/// 1049.
pub fn show_tables(catalog: &Catalog, db: &str, full: bool, like: Option<&str>) -> Result<ResultSet> {
    let mut columns = cols(&[(&format!("Tables_in_{db}"), text(64))]);
    if full {
        columns.push(OutColumn::computed("Table_type", text(64)));
    }
    let system: Vec<String> = INFORMATION_SCHEMA_TABLES.iter().map(|n| (*n).to_owned()).collect();
    let mut names: Vec<(&String, &str)> = if db.eq_ignore_ascii_case("information_schema") {
        system.iter().map(|n| (n, "SYSTEM VIEW")).collect()
    } else {
        let d = catalog.database(db)?;
        d.tables.keys().map(|n| (n, "BASE TABLE")).chain(d.views.keys().map(|n| (n, "VIEW"))).collect()
    };
    names.sort();
    let rows =
        names.into_iter().filter(|(n, _)| like_filter(n, like)).map(|(n, kind)| if full { vec![s(n.clone()), s(kind)] } else { vec![s(n.clone())] }).collect();
    Ok(ResultSet { columns, rows })
}

fn key_kind(t: &TableMeta, i: usize) -> &'static str {
    if t.primary.contains(&i) {
        "PRI"
    } else if t.indexes.iter().any(|ix| ix.unique && ix.columns.first() == Some(&i) && ix.columns.len() == 1) {
        "UNI"
    } else if t.indexes.iter().any(|ix| ix.columns.first() == Some(&i)) {
        "MUL"
    } else {
        ""
    }
}

/// `CURRENT_TIMESTAMP` with the column's fractional digits, as ON UPDATE names it (MySQL
/// requires them to be the column's).
fn on_update_text(c: &crate::catalog::Column) -> String {
    match c.ty.decimals() {
        d @ 1..=6 => format!("CURRENT_TIMESTAMP({d})"),
        _ => "CURRENT_TIMESTAMP".to_owned(),
    }
}

fn default_text(t: &TableMeta, i: usize) -> Value {
    let c = &t.columns[i];
    match &c.default {
        ColumnDefault::None => Value::Null,
        ColumnDefault::CurrentTimestamp => {
            s(if c.ty.decimals() > 0 && c.ty.decimals() <= 6 { format!("CURRENT_TIMESTAMP({})", c.ty.decimals()) } else { "CURRENT_TIMESTAMP".into() })
        }
        ColumnDefault::Expression(e) => s(e.to_string()),
        ColumnDefault::Value(Value::Null) => Value::Null,
        // A BIT default as MySQL shows it: b'101'.
        ColumnDefault::Value(v) if matches!(c.ty, SqlType::Bit(_)) => s(format!("b'{:b}'", crate::types::bit_value(v))),
        ColumnDefault::Value(v) => crate::types::to_text(v, &c.ty).map_or(Value::Null, |b| s(String::from_utf8_lossy(&b).into_owned())),
    }
}

fn extra(t: &TableMeta, i: usize) -> String {
    let c = &t.columns[i];
    let mut e = Vec::new();
    if c.auto_increment {
        e.push("auto_increment".to_owned());
    }
    if matches!(c.default, ColumnDefault::CurrentTimestamp | ColumnDefault::Expression(_)) {
        e.push("DEFAULT_GENERATED".to_owned());
    }
    if c.on_update_current_timestamp {
        e.push(format!("on update {}", on_update_text(c)));
    }
    if let Some(g) = &c.generated {
        e.push(if g.stored { "STORED GENERATED" } else { "VIRTUAL GENERATED" }.to_owned());
    }
    e.join(" ")
}

/// SHOW [FULL] COLUMNS / DESCRIBE.
///
/// # Errors
/// 1146.
pub fn show_columns(catalog: &Catalog, info: &SessionInfo, db: &str, table: &str, full: bool, like: Option<&str>) -> Result<ResultSet> {
    let view_columns;
    let t = match catalog.view(db, table) {
        Some(view) => {
            view_columns = crate::views::as_table(view, &crate::show::statement_env(catalog, quill_storage::ReadView::current(0), &[], 0, info))?;
            &view_columns
        }
        None => catalog.table(db, table)?,
    };
    let mut names = vec![("Field", text(64)), ("Type", text(64))];
    if full {
        names.push(("Collation", text(64)));
    }
    names.extend([("Null", text(3)), ("Key", text(3)), ("Default", text(64)), ("Extra", text(64))]);
    if full {
        names.extend([("Privileges", text(64)), ("Comment", text(64))]);
    }
    let mut rows = Vec::new();
    for (i, c) in t.columns.iter().enumerate().filter(|(_, c)| like_filter(&c.name, like)) {
        let mut r = vec![s(c.name.clone()), s(c.ty.sql_name())];
        if full {
            r.push(if c.ty.is_string() { s(c.ty.collation().name()) } else { Value::Null });
        }
        r.extend([s(if c.nullable { "YES" } else { "NO" }), s(key_kind(t, i)), default_text(t, i), s(extra(t, i))]);
        if full {
            r.extend([s("select,insert,update,references"), s(c.comment.clone())]);
        }
        rows.push(r);
    }
    Ok(ResultSet { columns: cols(&names), rows })
}

/// How SHOW CREATE TABLE writes identifiers: always in backquotes (`sql_quote_show_create=1`,
/// the default), or only where the name needs them (`=0`: a keyword, a name of digits only,
/// or one with characters other than letters, digits, `_` and `$`), as MySQL does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quoting {
    Always,
    WhereNeeded,
}

impl Quoting {
    fn name(self, name: &str) -> String {
        let plain = !name.is_empty()
            && name.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '$')
            && !name.chars().all(|c| c.is_ascii_digit())
            && sqlparser::keywords::ALL_KEYWORDS.binary_search(&name.to_ascii_uppercase().as_str()).is_err();
        if self == Quoting::WhereNeeded && plain { name.to_string() } else { quote(name) }
    }
}

/// A string as a quoted SQL literal that reads back as the same string, on one line, as
/// MySQL's SHOW CREATE TABLE writes them (`append_unescaped`): `'` doubled; `\\`, NUL,
/// newline and carriage return escaped (a raw newline in a COMMENT broke SQLAlchemy's
/// reflection, which reads the statement line by line).
fn string_literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('\'');
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("''"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\0' => out.push_str("\\0"),
            other => out.push(other),
        }
    }
    out.push('\'');
    out
}

/// SHOW CREATE TABLE, in MySQL 8's layout.
///
/// # Errors
/// 1146.
pub fn show_create_table(catalog: &Catalog, db: &str, table: &str, quoting: Quoting) -> Result<ResultSet> {
    let quote = |name: &str| quoting.name(name);
    let t = catalog.table(db, table)?;
    let mut lines = Vec::new();
    for (i, c) in t.columns.iter().enumerate() {
        let mut l = format!("  {} {}", quote(&c.name), c.ty.sql_name());
        if c.ty.is_string() && c.ty != SqlType::Json && c.ty.collation() != t.collation {
            l.push_str(&format!(" COLLATE {}", c.ty.collation().name()));
        }
        if let Some(g) = &c.generated {
            l.push_str(&format!(" GENERATED ALWAYS AS ({}) {}", g.expr, if g.stored { "STORED" } else { "VIRTUAL" }));
        }
        if !c.nullable {
            l.push_str(" NOT NULL");
        }
        match default_text(t, i) {
            // A generated column has no default.
            _ if c.generated.is_some() => {}
            Value::Null if c.nullable && !c.ty.is_binary() && !matches!(c.ty, SqlType::Text { .. }) => l.push_str(" DEFAULT NULL"),
            Value::Str(d) if matches!(c.default, ColumnDefault::CurrentTimestamp) || matches!(c.ty, SqlType::Bit(_)) => l.push_str(&format!(" DEFAULT {d}")),
            Value::Str(d) if matches!(c.default, ColumnDefault::Expression(_)) => l.push_str(&format!(" DEFAULT ({d})")),
            _ if c.ty.is_binary() && matches!(&c.default, ColumnDefault::Value(Value::Bytes(b)) if std::str::from_utf8(b).is_err()) => {
                if let ColumnDefault::Value(Value::Bytes(b)) = &c.default {
                    l.push_str(&format!(" DEFAULT 0x{}", b.iter().map(|x| format!("{x:02x}")).collect::<String>()));
                }
            }
            Value::Str(d) => l.push_str(&format!(" DEFAULT {}", string_literal(&d))),
            _ => {}
        }
        if c.on_update_current_timestamp {
            l.push_str(&format!(" ON UPDATE {}", on_update_text(c)));
        }
        if c.auto_increment {
            l.push_str(" AUTO_INCREMENT");
        }
        if !c.comment.is_empty() {
            l.push_str(&format!(" COMMENT {}", string_literal(&c.comment)));
        }
        lines.push(l);
    }
    let names = |cols: &[usize]| cols.iter().map(|&c| quote(&t.columns[c].name)).collect::<Vec<_>>().join(",");
    if !t.primary.is_empty() {
        lines.push(format!("  PRIMARY KEY ({})", names(&t.primary)));
    }
    for ix in t.indexes.iter().filter(|i| i.unique) {
        lines.push(format!("  UNIQUE KEY {} ({})", quote(&ix.name), names(&ix.columns)));
    }
    for ix in t.indexes.iter().filter(|i| !i.unique) {
        lines.push(format!("  KEY {} ({})", quote(&ix.name), names(&ix.columns)));
    }
    for fk in &t.foreign_keys {
        lines.push(format!("  {}", fk.clause(t, &quote)));
    }
    lines.extend(crate::check_constraints::show_lines(t, quote));
    let mut tail = String::from(") ENGINE=InnoDB");
    if t.data.auto_increment() > 1 && t.auto_increment_column().is_some() {
        tail.push_str(&format!(" AUTO_INCREMENT={}", t.data.auto_increment()));
    }
    tail.push_str(&format!(" DEFAULT CHARSET=utf8mb4 COLLATE={}", t.collation.name()));
    if let Some(row_format) = t.row_format {
        tail.push_str(&format!(" ROW_FORMAT={row_format}"));
    }
    if !t.comment.is_empty() {
        tail.push_str(&format!(" COMMENT={}", string_literal(&t.comment)));
    }
    let ddl = format!("CREATE TABLE {} (\n{}\n{}", quote(table), lines.join(",\n"), tail);
    Ok(ResultSet { columns: cols(&[("Table", text(64)), ("Create Table", text(1024))]), rows: vec![vec![s(table), s(ddl)]] })
}

/// The status of a table as `SHOW TABLE STATUS` has it, column for column
/// ([`TABLE_STATUS_COLUMNS`]). The sizes are exact byte counts of what the row store holds
/// (`docs/row-formats.md`): `Data_length` is every row version's image in the table's row
/// format, `Index_length` its primary keys and secondary-index entries, and `Avg_row_length`
/// their ratio to `Rows`; the skip lists' own nodes are not counted.
#[must_use]
pub fn table_status(t: &TableMeta) -> Vec<Value> {
    let stats = t.data.statistics();
    let avg = stats.data_bytes.checked_div(stats.rows).unwrap_or(0);
    let int = |n: u64| Value::Int(i64::try_from(n).unwrap_or(i64::MAX));
    vec![
        s(t.name.clone()),
        s("InnoDB"),
        Value::Int(10),
        s(t.data.row_format().name()),
        int(stats.rows),
        int(avg),
        int(stats.data_bytes),
        Value::Int(0),
        int(stats.index_bytes),
        // A paged table's free space in its page file: blocks given back, not yet reused.
        int(t.data.space().map_or(0, |(_, free)| free)),
        if t.auto_increment_column().is_some() { int(t.data.auto_increment()) } else { Value::Null },
        Value::DateTime(t.created_at * 1_000_000),
        Value::Null,
        Value::Null,
        s(t.collation.name()),
        Value::Null,
        s(t.row_format.map_or_else(String::new, |f| format!("row_format={f}"))),
        s(t.comment.clone()),
    ]
}

/// The columns of `SHOW TABLE STATUS`, as MySQL 8 names them.
#[must_use]
pub fn table_status_columns() -> Vec<OutColumn> {
    cols(&[
        ("Name", text(64)),
        ("Engine", text(64)),
        ("Version", SqlType::bigint()),
        ("Row_format", text(10)),
        ("Rows", SqlType::bigint()),
        ("Avg_row_length", SqlType::bigint()),
        ("Data_length", SqlType::bigint()),
        ("Max_data_length", SqlType::bigint()),
        ("Index_length", SqlType::bigint()),
        ("Data_free", SqlType::bigint()),
        ("Auto_increment", SqlType::bigint()),
        ("Create_time", SqlType::DateTime(0)),
        ("Update_time", SqlType::DateTime(0)),
        ("Check_time", SqlType::DateTime(0)),
        ("Collation", text(64)),
        ("Checksum", SqlType::bigint()),
        ("Create_options", text(256)),
        ("Comment", text(2048)),
    ])
}

/// SHOW INDEX FROM t.
///
/// # Errors
/// 1146.
pub fn show_index(catalog: &Catalog, db: &str, table: &str) -> Result<ResultSet> {
    let t = catalog.table(db, table)?;
    let columns = cols(&[
        ("Table", text(64)),
        ("Non_unique", SqlType::bigint()),
        ("Key_name", text(64)),
        ("Seq_in_index", SqlType::bigint()),
        ("Column_name", text(64)),
        ("Collation", text(1)),
        ("Cardinality", SqlType::bigint()),
        ("Sub_part", SqlType::bigint()),
        ("Packed", text(10)),
        ("Null", text(3)),
        ("Index_type", text(16)),
        ("Comment", text(16)),
        ("Index_comment", text(16)),
        ("Visible", text(3)),
        ("Expression", text(64)),
    ]);
    let mut rows = Vec::new();
    let mut add = |name: &str, unique: bool, cols: &[usize]| {
        for (seq, &c) in cols.iter().enumerate() {
            rows.push(vec![
                s(table),
                Value::Int(i64::from(!unique)),
                s(name),
                Value::Int(seq as i64 + 1),
                s(t.columns[c].name.clone()),
                s("A"),
                Value::Int(t.data.statistics().rows as i64),
                Value::Null,
                Value::Null,
                s(if t.columns[c].nullable { "YES" } else { "" }),
                s("BTREE"),
                s(""),
                s(""),
                s("YES"),
                Value::Null,
            ]);
        }
    };
    if !t.primary.is_empty() {
        add("PRIMARY", true, &t.primary);
    }
    for ix in &t.indexes {
        add(&ix.name, ix.unique, &ix.columns);
    }
    Ok(ResultSet { columns, rows })
}

/// The system schemas as the planner reads them (`system_tables`): `information_schema`
/// from [`information_schema_table`], `performance_schema` from `performance_schema`.
pub struct SystemSchemas;

/// The one [`SystemSchemas`], which every statement's `Env` carries.
pub static SYSTEM_SCHEMAS: SystemSchemas = SystemSchemas;

/// The `Env` a statement of this crate plans and runs in: the system schemas it reads are
/// [`SYSTEM_SCHEMAS`].
#[must_use]
pub fn statement_env<'a>(catalog: &'a Catalog, view: quill_storage::ReadView, params: &'a [Value], now_us: i64, info: &'a SessionInfo) -> Env<'a> {
    Env::new(catalog, view, params, now_us, info, &SYSTEM_SCHEMAS)
}

impl SystemTables for SystemSchemas {
    fn information_schema(&self, env: &Env<'_>, name: &str) -> Result<SystemTable> {
        information_schema_table(env, name)
    }

    fn performance_schema(&self, env: &Env<'_>, name: &str) -> Option<Result<SystemTable>> {
        crate::performance_schema::performance_schema_table(env, name)
    }

    fn call_function(&self, env: &Env<'_>, routine: &crate::program_meta::RoutineMeta, args: Vec<Value>) -> Result<Value> {
        crate::stored_functions::call(env, routine, args)
    }
}

/// Rows of an information_schema table that the session's account may see: rows naming a
/// database or table only where it has some privilege (`session::privileges`).
///
/// # Errors
/// 1109 for a table Quill does not provide; 1227 for the `INNODB_` tables without PROCESS.
pub fn information_schema_table(env: &Env<'_>, name: &str) -> Result<(Vec<OutColumn>, Vec<Vec<Value>>)> {
    let info = env.info;
    if name.get(..7).is_some_and(|p| p.eq_ignore_ascii_case("INNODB_")) {
        info.require_global(crate::accounts::PROCESS, "PROCESS")?;
    }
    let (columns, mut rows) = information_schema_rows(env, name)?;
    if info.checked {
        let at = |names: &[&str]| names.iter().find_map(|n| columns.iter().position(|c| c.name.eq_ignore_ascii_case(n)));
        let schema = at(&["TABLE_SCHEMA", "SCHEMA_NAME", "CONSTRAINT_SCHEMA", "EVENT_OBJECT_SCHEMA", "ROUTINE_SCHEMA"]);
        let table = at(&["TABLE_NAME", "EVENT_OBJECT_TABLE"]);
        let text = |row: &[Value], i: usize| crate::ops::to_string_lossy(&row[i]);
        match (schema, table) {
            (Some(d), Some(t)) => rows.retain(|r| info.may_see_table(&text(r, d), &text(r, t))),
            (Some(d), None) => rows.retain(|r| info.may_see_database(&text(r, d))),
            _ => {}
        }
    }
    Ok((columns, rows))
}

/// The `information_schema` tables Quill answers, as `SHOW TABLES FROM information_schema`
/// lists them: every name [`information_schema_rows`] knows.
pub const INFORMATION_SCHEMA_TABLES: [&str; 24] = [
    "CHARACTER_SETS",
    "CHECK_CONSTRAINTS",
    "COLLATIONS",
    "COLUMNS",
    "ENGINES",
    "FILES",
    "INNODB_BUFFER_POOL_STATS",
    "INNODB_TABLES",
    "INNODB_TABLESPACES",
    "INNODB_TRX",
    "KEYWORDS",
    "KEY_COLUMN_USAGE",
    "PARAMETERS",
    "PARTITIONS",
    "PROCESSLIST",
    "REFERENTIAL_CONSTRAINTS",
    "ROUTINES",
    "SCHEMATA",
    "STATISTICS",
    "TABLES",
    "TABLE_CONSTRAINTS",
    "TRIGGERS",
    "USER_PRIVILEGES",
    "VIEWS",
];

/// Every row of an `information_schema` table, before [`information_schema_table`] keeps
/// those the account may see.
fn information_schema_rows(env: &Env<'_>, name: &str) -> Result<(Vec<OutColumn>, Vec<Vec<Value>>)> {
    let catalog = env.catalog;
    let tables = || catalog.databases.values().flat_map(|d| d.tables.values());
    Ok(match name.to_ascii_uppercase().as_str() {
        "SCHEMATA" => {
            let c = cols(&[
                ("CATALOG_NAME", text(64)),
                ("SCHEMA_NAME", text(64)),
                ("DEFAULT_CHARACTER_SET_NAME", text(64)),
                ("DEFAULT_COLLATION_NAME", text(64)),
                ("SQL_PATH", text(64)),
            ]);
            let mut dbs: Vec<(String, quill_storage::Collation)> = catalog.databases.values().map(|d| (d.name.clone(), d.collation)).collect();
            dbs.push(("information_schema".into(), quill_storage::Collation::default()));
            dbs.sort_by(|a, b| a.0.cmp(&b.0));
            let row = |(name, collation): (String, quill_storage::Collation)| {
                vec![s("def"), s(name), s(crate::charset::charset_of(collation)), s(collation.name()), Value::Null]
            };
            (c, dbs.into_iter().map(row).collect())
        }
        "TABLES" => {
            let c = cols(&[
                ("TABLE_CATALOG", text(64)),
                ("TABLE_SCHEMA", text(64)),
                ("TABLE_NAME", text(64)),
                ("TABLE_TYPE", text(64)),
                ("ENGINE", text(64)),
                ("VERSION", SqlType::bigint()),
                ("ROW_FORMAT", text(10)),
                ("TABLE_ROWS", SqlType::bigint()),
                ("AVG_ROW_LENGTH", SqlType::bigint()),
                ("DATA_LENGTH", SqlType::bigint()),
                ("MAX_DATA_LENGTH", SqlType::bigint()),
                ("INDEX_LENGTH", SqlType::bigint()),
                ("DATA_FREE", SqlType::bigint()),
                ("AUTO_INCREMENT", SqlType::bigint()),
                ("CREATE_TIME", SqlType::DateTime(0)),
                ("UPDATE_TIME", SqlType::DateTime(0)),
                ("CHECK_TIME", SqlType::DateTime(0)),
                ("TABLE_COLLATION", text(64)),
                ("CHECKSUM", SqlType::bigint()),
                ("CREATE_OPTIONS", text(256)),
                ("TABLE_COMMENT", text(2048)),
            ]);
            // SHOW TABLE STATUS's columns from Engine on, after the table's identity.
            let mut rows: Vec<Vec<Value>> = tables()
                .map(|t| [s("def"), s(t.db.clone()), s(t.name.clone()), s("BASE TABLE")].into_iter().chain(table_status(t).into_iter().skip(1)).collect())
                .collect();
            // A view's row has its identity, type and comment, and NULL between, as MySQL's.
            for v in catalog.databases.values().flat_map(|d| d.views.values()) {
                let mut row = vec![s("def"), s(v.db.clone()), s(v.name.clone()), s("VIEW")];
                row.resize(c.len() - 1, Value::Null);
                row.push(s("VIEW"));
                rows.push(row);
            }
            (c, rows)
        }
        "COLUMNS" => {
            let c = cols(&[
                ("TABLE_CATALOG", text(64)),
                ("TABLE_SCHEMA", text(64)),
                ("TABLE_NAME", text(64)),
                ("COLUMN_NAME", text(64)),
                ("ORDINAL_POSITION", SqlType::bigint()),
                ("COLUMN_DEFAULT", text(1024)),
                ("IS_NULLABLE", text(3)),
                ("DATA_TYPE", text(64)),
                ("CHARACTER_MAXIMUM_LENGTH", SqlType::bigint()),
                ("CHARACTER_OCTET_LENGTH", SqlType::bigint()),
                ("NUMERIC_PRECISION", SqlType::bigint()),
                ("NUMERIC_SCALE", SqlType::bigint()),
                ("DATETIME_PRECISION", SqlType::bigint()),
                ("CHARACTER_SET_NAME", text(64)),
                ("COLLATION_NAME", text(64)),
                ("COLUMN_TYPE", text(1024)),
                ("COLUMN_KEY", text(3)),
                ("EXTRA", text(256)),
                ("PRIVILEGES", text(154)),
                ("COLUMN_COMMENT", text(1024)),
                ("GENERATION_EXPRESSION", text(1024)),
                ("SRS_ID", SqlType::bigint()),
            ]);
            let mut rows = Vec::new();
            // A view's columns are those its query has now; a view whose tables are gone
            // has none (MySQL warns of it).
            let view_tables: Vec<TableMeta> =
                catalog.databases.values().flat_map(|d| d.views.values()).filter_map(|v| crate::views::as_table(v, env).ok()).collect();
            for t in tables().map(|t| &**t).chain(&view_tables) {
                for (i, col) in t.columns.iter().enumerate() {
                    // Characters and bytes: utf8mb4 takes up to four bytes a character; a TEXT
                    // or BLOB holds its length in bytes, and counts it for both, as MySQL 8 does.
                    let (char_len, octet_len) = match &col.ty {
                        SqlType::Char { len, .. } | SqlType::VarChar { len, .. } => (Value::Int(i64::from(*len)), Value::Int(i64::from(*len) * 4)),
                        SqlType::Binary(len) | SqlType::VarBinary(len) => (Value::Int(i64::from(*len)), Value::Int(i64::from(*len))),
                        SqlType::Enum { .. } | SqlType::Set { .. } => {
                            let chars = i64::from(col.ty.member_chars_max());
                            (Value::Int(chars), Value::Int(chars * 4))
                        }
                        SqlType::Text { kind, .. } | SqlType::Blob(kind) => (Value::Int(kind.max_len() as i64), Value::Int(kind.max_len() as i64)),
                        _ => (Value::Null, Value::Null),
                    };
                    let (prec, scale) = match &col.ty {
                        SqlType::Bit(n) => (Value::Int(i64::from(*n)), Value::Null),
                        SqlType::Float => (Value::Int(12), Value::Null),
                        SqlType::Double => (Value::Int(22), Value::Null),
                        SqlType::Decimal { precision, scale, .. } => (Value::Int(i64::from(*precision)), Value::Int(i64::from(*scale))),
                        SqlType::Int { kind, .. } => (
                            Value::Int(match kind {
                                crate::types::IntKind::Tiny => 3,
                                crate::types::IntKind::Small => 5,
                                crate::types::IntKind::Medium => 7,
                                crate::types::IntKind::Int => 10,
                                crate::types::IntKind::Big => {
                                    if col.ty.is_unsigned() {
                                        20
                                    } else {
                                        19
                                    }
                                }
                            }),
                            Value::Int(0),
                        ),
                        _ => (Value::Null, Value::Null),
                    };
                    rows.push(vec![
                        s("def"),
                        s(t.db.clone()),
                        s(t.name.clone()),
                        s(col.name.clone()),
                        Value::Int(i as i64 + 1),
                        default_text(t, i),
                        s(if col.nullable { "YES" } else { "NO" }),
                        s(col.ty.data_type_name()),
                        char_len,
                        octet_len,
                        prec,
                        scale,
                        match col.ty {
                            SqlType::DateTime(f) | SqlType::Timestamp(f) | SqlType::Time(f) => Value::Int(i64::from(f)),
                            _ => Value::Null,
                        },
                        if col.ty.is_string() { s("utf8mb4") } else { Value::Null },
                        if col.ty.is_string() { s(col.ty.collation().name()) } else { Value::Null },
                        s(col.ty.sql_name()),
                        s(key_kind(t, i)),
                        s(extra(t, i)),
                        s("select,insert,update,references"),
                        s(col.comment.clone()),
                        s(col.generated.as_ref().map(|g| g.expr.to_string()).unwrap_or_default()),
                        Value::Null,
                    ]);
                }
            }
            (c, rows)
        }
        "STATISTICS" => {
            let c = cols(&[
                ("TABLE_CATALOG", text(64)),
                ("TABLE_SCHEMA", text(64)),
                ("TABLE_NAME", text(64)),
                ("NON_UNIQUE", SqlType::bigint()),
                ("INDEX_SCHEMA", text(64)),
                ("INDEX_NAME", text(64)),
                ("SEQ_IN_INDEX", SqlType::bigint()),
                ("COLUMN_NAME", text(64)),
                ("COLLATION", text(1)),
                ("CARDINALITY", SqlType::bigint()),
                ("SUB_PART", SqlType::bigint()),
                ("PACKED", text(10)),
                ("NULLABLE", text(3)),
                ("INDEX_TYPE", text(16)),
                ("COMMENT", text(8)),
                ("INDEX_COMMENT", text(2048)),
                ("IS_VISIBLE", text(3)),
                ("EXPRESSION", text(64)),
            ]);
            // SHOW INDEX's rows, after the table's identity, with the index's schema.
            let mut rows = Vec::new();
            for t in tables() {
                for r in show_index(catalog, &t.db, &t.name)?.rows {
                    let mut row = vec![s("def"), s(t.db.clone()), s(t.name.clone()), r[1].clone(), s(t.db.clone())];
                    row.extend(r.into_iter().skip(2));
                    rows.push(row);
                }
            }
            (c, rows)
        }
        "TRIGGERS" => (
            crate::trigger_ddl::schema_columns(),
            crate::trigger_ddl::schema_rows(catalog, |t| env.info.privileges_on(&t.db, Some(&t.table)) & crate::accounts::TRIGGER != 0),
        ),
        "ENGINES" => crate::schema_server::engines(),
        "CHARACTER_SETS" => crate::schema_server::character_sets(),
        "COLLATIONS" => crate::schema_server::collations(),
        "ROUTINES" => (crate::schema_server::routines().0, crate::routine_ddl::schema_rows(catalog, |r| env.info.may_see_routine(r))),
        "PARAMETERS" => crate::routine_ddl::parameters(catalog, |r| env.info.may_see_routine(r)),
        "PARTITIONS" => crate::schema_storage::partitions(catalog),
        "FILES" => crate::schema_storage::files(),
        "INNODB_TABLES" => crate::schema_storage::innodb_tables(catalog),
        "INNODB_TABLESPACES" => crate::schema_storage::innodb_tablespaces(catalog),
        "USER_PRIVILEGES" => {
            let info = env.info;
            let sees_all = info.global_privileges() & (crate::accounts::CREATE_USER | crate::accounts::SUPER) != 0;
            crate::schema_storage::user_privileges(&info.engine.acl.read(), |user, host| sees_all || (user == info.user && host == info.account_host))
        }
        "KEYWORDS" => (
            cols(&[("WORD", text(128)), ("RESERVED", SqlType::Int { kind: crate::types::IntKind::Int, unsigned: false, display: None })]),
            crate::keywords::KEYWORDS.iter().map(|(w, reserved)| vec![s(*w), Value::Int(i64::from(*reserved))]).collect(),
        ),
        "VIEWS" => (crate::schema_server::views().0, crate::view_ddl::schema_rows(catalog, |v| crate::view_writes::is_updatable(catalog, v))),
        "TABLE_CONSTRAINTS" => crate::schema_constraints::table_constraints(catalog),
        "KEY_COLUMN_USAGE" => crate::schema_constraints::key_column_usage(catalog),
        "REFERENTIAL_CONSTRAINTS" => crate::schema_constraints::referential_constraints(catalog),
        // Quill does not keep CHECK constraints yet: the table is empty, with MySQL 8's columns.
        "CHECK_CONSTRAINTS" => (
            cols(&[("CONSTRAINT_CATALOG", text(64)), ("CONSTRAINT_SCHEMA", text(64)), ("CONSTRAINT_NAME", text(64)), ("CHECK_CLAUSE", text(1024))]),
            tables().flat_map(|t| t.checks.iter().map(|c| vec![s("def"), s(t.db.clone()), s(c.name.clone()), s(format!("({})", c.expr))])).collect(),
        ),
        "INNODB_TRX" => crate::performance_schema::innodb_trx(env)?,
        "INNODB_BUFFER_POOL_STATS" => crate::schema_server::buffer_pool_stats(catalog.tablespace().as_deref()),
        "PROCESSLIST" => processlist(env.info, true),
        other => {
            return Err(SqlError::new(crate::error::codes::ER_UNKNOWN_TABLE, format!("Unknown table '{}' in information_schema", other.to_ascii_lowercase())));
        }
    })
}

/// The sessions, for `SHOW PROCESSLIST` (`schema` false: MariaDB's nine columns, `Progress`
/// last) or `information_schema.PROCESSLIST` (MySQL 8's eight columns, then MariaDB's
/// `TIME_MS` and `PROGRESS`). `Progress` is the running statement's, in percent with three
/// decimals: a `LOAD DATA` reports the share of its file read, other statements 0.
#[must_use]
pub fn processlist(info: &crate::session_info::SessionInfo, schema: bool) -> (Vec<OutColumn>, Vec<Vec<Value>>) {
    let procs = info.engine.processes.lock();
    // Without PROCESS an account sees only its own threads, as in MySQL.
    let everyone = info.has_process();
    let mut ids: Vec<&u32> = procs.iter().filter(|(_, p)| everyone || p.user == info.user).map(|(id, _)| id).collect();
    ids.sort();
    let progress_type = SqlType::Decimal { precision: 7, scale: 3, unsigned: false };
    let rows = ids
        .into_iter()
        .map(|id| {
            let p = &procs[id];
            let own = *id == info.connection_id;
            let elapsed = p.started.map(|s| s.elapsed()).unwrap_or_default();
            let mut row = vec![
                Value::UInt(u64::from(*id)),
                s(p.user.clone()),
                s(p.host.clone()),
                p.db.clone().map_or(Value::Null, Value::Str),
                s(if own { "Query" } else { p.command.as_str() }),
                Value::Int(i64::try_from(elapsed.as_secs()).unwrap_or(i64::MAX)),
                s(p.state),
                if own && !schema { s("SHOW PROCESSLIST") } else { p.info.clone().map_or(Value::Null, Value::Str) },
            ];
            if schema {
                let micros = i64::try_from(elapsed.as_micros()).unwrap_or(i64::MAX);
                row.push(Value::Decimal(quill_storage::Decimal::new(micros, 3)));
            }
            let progress = p.progress.load(std::sync::atomic::Ordering::Relaxed).min(crate::session::PROGRESS_DONE);
            row.push(Value::Decimal(quill_storage::Decimal::new(i64::from(progress), 3)));
            row
        })
        .collect();
    let id_type = SqlType::Int { kind: crate::types::IntKind::Big, unsigned: true, display: None };
    // SHOW's names; information_schema spells them in capitals and adds TIME_MS.
    let mut columns = cols(&[
        ("Id", id_type),
        ("User", text(32)),
        ("Host", text(261)),
        ("db", text(64)),
        ("Command", text(16)),
        ("Time", SqlType::bigint()),
        ("State", text(64)),
        ("Info", text(65_535)),
    ]);
    if schema {
        columns.iter_mut().for_each(|c| c.name = c.name.to_ascii_uppercase());
        columns.push(OutColumn::computed("TIME_MS", SqlType::Decimal { precision: 22, scale: 3, unsigned: false }));
    }
    columns.push(OutColumn::computed(if schema { "PROGRESS" } else { "Progress" }, progress_type));
    (columns, rows)
}
