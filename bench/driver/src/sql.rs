//! Runs SQL statements on one connection and prints, for each, its column names and rows (as
//! strings, NULL as JSON null) and the warnings it raised. `bench/run` uses it to set servers up and to probe
//! what they support (e.g. whether `SET GLOBAL innodb_flush_log_at_trx_commit=2` is acted on
//! or only accepted with a warning).

use crate::server::Target;
use mysql::prelude::Queryable;
use serde_json::{Value, json};

#[derive(clap::Args)]
pub struct Args {
    /// Statements, run in order on one connection; the first error stops the run.
    #[arg(required = true)]
    statements: Vec<String>,
}

pub fn run(target: &Target, args: &Args) -> Result<Value, String> {
    let mut conn = target.connect_to(None)?;
    let mut results = Vec::with_capacity(args.statements.len());
    for statement in &args.statements {
        let rows: Vec<mysql::Row> = match conn.query(statement) {
            Ok(rows) => rows,
            Err(mysql::Error::MySqlError(e)) => {
                results.push(json!({"statement": statement, "error": {"code": e.code, "message": e.message}}));
                break;
            }
            Err(e) => return Err(format!("{statement}: {e}")),
        };
        let columns: Vec<String> = rows.first().map(|r| r.columns_ref().iter().map(|c| c.name_str().into_owned()).collect()).unwrap_or_default();
        let rows: Vec<Vec<Value>> = rows.into_iter().map(|row| row.unwrap().into_iter().map(text).collect()).collect();
        let warnings: Vec<(String, u32, String)> =
            if conn.warnings() > 0 { conn.query("SHOW WARNINGS").map_err(|e| format!("SHOW WARNINGS: {e}"))? } else { Vec::new() };
        let warnings: Vec<Value> = warnings.into_iter().map(|(level, code, message)| json!({"level": level, "code": code, "message": message})).collect();
        results.push(json!({"statement": statement, "columns": columns, "rows": rows, "warnings": warnings}));
    }
    Ok(json!({ "results": results }))
}

fn text(value: mysql::Value) -> Value {
    match value {
        mysql::Value::NULL => Value::Null,
        mysql::Value::Bytes(bytes) => Value::String(String::from_utf8_lossy(&bytes).into_owned()),
        other => Value::String(other.as_sql(true)),
    }
}
