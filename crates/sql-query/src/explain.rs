//! EXPLAIN: the access path chosen for each table of a query block, in MySQL's
//! tabular EXPLAIN layout.

use quill_storage::{Collation, Value};

use crate::query::{Access, OutColumn, PlanKind, ResultSet, SelectPlan, SourceData};
use quill_sql_types::types::SqlType;

/// Describe a plan.
#[must_use]
pub fn explain(plan: &SelectPlan) -> ResultSet {
    let text = SqlType::VarChar { len: 255, collation: Collation::Utf8mb4GeneralCi };
    let names = ["id", "select_type", "table", "partitions", "type", "possible_keys", "key", "key_len", "ref", "rows", "filtered", "Extra"];
    let columns: Vec<OutColumn> = names.iter().map(|n| OutColumn::computed(n, text.clone())).collect();
    let mut rows = Vec::new();
    describe(plan, 1, &mut rows);
    ResultSet { columns, rows }
}

fn describe(plan: &SelectPlan, id: i64, rows: &mut Vec<Vec<Value>>) {
    let s = |x: &str| Value::Str(x.to_owned());
    match &plan.kind {
        PlanKind::Union { left, right, .. } => {
            describe(left, id, rows);
            describe(right, id + 1, rows);
        }
        PlanKind::Recursive { seeds, steps, .. } => {
            for (i, p) in seeds.iter().chain(steps).enumerate() {
                describe(p, id + i as i64, rows);
            }
        }
        PlanKind::Block(b) => {
            if b.sources.is_empty() {
                rows.push(vec![
                    Value::Int(id),
                    s("SIMPLE"),
                    Value::Null,
                    Value::Null,
                    Value::Null,
                    Value::Null,
                    Value::Null,
                    Value::Null,
                    Value::Null,
                    Value::Null,
                    Value::Null,
                    s("No tables used"),
                ]);
            }
            for src in &b.sources {
                let table = match &src.data {
                    SourceData::Table { name, .. } => s(name),
                    SourceData::Rows(..) | SourceData::Work(_) => s("<derived>"),
                };
                let (kind, key) = match &src.access {
                    Access::Full | Access::Hash(_) => ("ALL", Value::Null),
                    Access::PkPoint(_) => ("const", src.key_name.clone().map_or(Value::Null, Value::Str)),
                    Access::PkIn(_) | Access::PkRange { .. } => ("range", src.key_name.clone().map_or(Value::Null, Value::Str)),
                    Access::IndexEq { .. } => ("ref", src.key_name.clone().map_or(Value::Null, Value::Str)),
                    // The whole index, read in its order for ORDER BY ... LIMIT.
                    Access::IndexRange { low: None, high: None, .. } => ("index", src.key_name.clone().map_or(Value::Null, Value::Str)),
                    Access::IndexRange { .. } => ("range", src.key_name.clone().map_or(Value::Null, Value::Str)),
                };
                let filtered = b.filter.is_some() || b.level_filters.iter().any(Option::is_some);
                let extra = match (filtered, matches!(src.access, Access::Hash(_))) {
                    (true, true) => "Using where; Using join buffer (hash join)",
                    (false, true) => "Using join buffer (hash join)",
                    (true, false) => "Using where",
                    (false, false) => "",
                };
                rows.push(vec![
                    Value::Int(id),
                    s("SIMPLE"),
                    table,
                    Value::Null,
                    s(kind),
                    key.clone(),
                    key,
                    Value::Null,
                    Value::Null,
                    Value::Null,
                    s("100.00"),
                    s(extra),
                ]);
            }
        }
    }
}

/// EXPLAIN's output formats (`EXPLAIN FORMAT = ...`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Traditional,
    Tree,
    Json,
}

impl Format {
    /// The format `name` names (`TRADITIONAL`, `TREE`, `JSON`, any case).
    #[must_use]
    pub fn by_name(name: &str) -> Option<Format> {
        match name.to_ascii_uppercase().as_str() {
            "TRADITIONAL" => Some(Format::Traditional),
            "TREE" => Some(Format::Tree),
            "JSON" => Some(Format::Json),
            _ => None,
        }
    }
}

/// Describe a plan in `format`: the tabular rows, or (TREE, JSON) one row of one `EXPLAIN`
/// column holding the same facts as MySQL lays them out: a tree of iterators, one per table
/// (joined tables under a nested loop), or a `query_block` document.
#[must_use]
pub fn explain_as(plan: &SelectPlan, format: Format) -> ResultSet {
    let table = explain(plan);
    if format == Format::Traditional {
        return table;
    }
    let text = |v: &Value| -> Option<String> {
        match v {
            Value::Null => None,
            Value::Str(s) => Some(s.clone()),
            other => Some(quill_sql_types::ops::to_string_lossy(other)),
        }
    };
    // Column positions of the tabular layout.
    let (t_table, t_type, t_possible, t_key, t_key_len, t_ref, t_rows, t_filtered, t_extra) = (2, 4, 5, 6, 7, 8, 9, 10, 11);
    let out = match format {
        Format::Tree => {
            let lines: Vec<String> = table
                .rows
                .iter()
                .map(|r| {
                    let name = text(&r[t_table]).unwrap_or_default();
                    let rows = text(&r[t_rows]).unwrap_or_else(|| "1".into());
                    let key = text(&r[t_key]).unwrap_or_default();
                    match text(&r[t_type]).as_deref() {
                        None => format!("-> {}", text(&r[t_extra]).unwrap_or_else(|| "Rows fetched before execution".into())),
                        Some("ALL") => format!("-> Table scan on {name}  (rows={rows})"),
                        Some("index") => format!("-> Index scan on {name} using {key}  (rows={rows})"),
                        Some("range") => format!("-> Index range scan on {name} using {key}  (rows={rows})"),
                        Some("const" | "eq_ref") => format!("-> Single-row index lookup on {name} using {key}  (rows={rows})"),
                        Some(_) => format!("-> Index lookup on {name} using {key}  (rows={rows})"),
                    }
                })
                .collect();
            if lines.len() > 1 {
                let mut out = String::from("-> Nested loop inner join");
                for l in &lines {
                    out.push_str("\n    ");
                    out.push_str(l);
                }
                out
            } else {
                lines.concat()
            }
        }
        _ => {
            let tables: Vec<String> = table
                .rows
                .iter()
                .map(|r| {
                    let mut fields = Vec::new();
                    if let Some(name) = text(&r[t_table]) {
                        fields.push(format!("\"table_name\": {}", json_string(&name)));
                    }
                    if let Some(kind) = text(&r[t_type]) {
                        fields.push(format!("\"access_type\": {}", json_string(&kind)));
                    }
                    if let Some(p) = text(&r[t_possible]) {
                        let keys: Vec<String> = p.split(',').map(json_string).collect();
                        fields.push(format!("\"possible_keys\": [{}]", keys.join(", ")));
                    }
                    if let Some(k) = text(&r[t_key]) {
                        fields.push(format!("\"key\": {}", json_string(&k)));
                    }
                    if let Some(l) = text(&r[t_key_len]) {
                        fields.push(format!("\"key_length\": {}", json_string(&l)));
                    }
                    if let Some(f) = text(&r[t_ref]) {
                        let refs: Vec<String> = f.split(',').map(json_string).collect();
                        fields.push(format!("\"ref\": [{}]", refs.join(", ")));
                    }
                    if let Some(n) = text(&r[t_rows]) {
                        fields.push(format!("\"rows_examined_per_scan\": {}", n.parse::<u64>().unwrap_or(0)));
                    }
                    if let Some(f) = text(&r[t_filtered]) {
                        fields.push(format!("\"filtered\": {}", json_string(&f)));
                    }
                    if let Some(e) = text(&r[t_extra]).filter(|e| !e.is_empty()) {
                        fields.push(format!("\"message\": {}", json_string(&e)));
                    }
                    format!("{{\n      {}\n    }}", fields.join(",\n      "))
                })
                .collect();
            let body = match tables.as_slice() {
                [one] => format!("\"table\": {one}"),
                many => format!("\"nested_loop\": [\n    {}\n    ]", many.iter().map(|t| format!("{{\"table\": {t}}}")).collect::<Vec<_>>().join(",\n    ")),
            };
            format!("{{\n  \"query_block\": {{\n    \"select_id\": 1,\n    {body}\n  }}\n}}")
        }
    };
    let column = OutColumn::computed("EXPLAIN", SqlType::Text { kind: quill_sql_types::types::LobKind::Long, collation: Collation::Utf8mb4Bin });
    ResultSet { columns: vec![column], rows: vec![vec![Value::Str(out)]] }
}

/// `s` as a JSON string.
fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.trim().chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
