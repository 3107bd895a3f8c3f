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
