//! Golden plan tests: the EXPLAIN output of the queries in `golden/plans.sql`, checked in as
//! `golden/plans.out`, so that a planner change shows its effect in review as a diff of that
//! file. A mismatch fails with both texts; `QUILL_UPDATE_GOLDEN=1` writes the new output.

use std::fmt::Write as _;
use std::path::Path;

use quill_sql::session::Outcome;
use quill_sql::vars::VarSet;
use quill_sql::{Engine, Session};
use quill_storage::Value;

/// The statements of a script: each ends with `;` at the end of a line; `--` lines are
/// comments and are kept in the output so it reads beside the script.
fn statements(script: &str) -> Vec<(Vec<String>, String)> {
    let mut out = Vec::new();
    let mut comments = Vec::new();
    let mut current = String::new();
    for line in script.lines() {
        let trimmed = line.trim();
        if current.is_empty() && (trimmed.is_empty() || trimmed.starts_with("--")) {
            if trimmed.starts_with("--") {
                comments.push(trimmed.to_owned());
            } else {
                comments.clear();
            }
            continue;
        }
        if !current.is_empty() {
            current.push(' ');
        }
        current.push_str(trimmed);
        if trimmed.ends_with(';') {
            current.pop();
            out.push((std::mem::take(&mut comments), std::mem::take(&mut current)));
        }
    }
    assert!(current.is_empty(), "the script ends inside a statement: {current}");
    out
}

fn cell(v: &Value) -> String {
    match v {
        Value::Null => "NULL".to_owned(),
        Value::Str(s) => s.clone(),
        Value::Int(n) => n.to_string(),
        Value::UInt(n) => n.to_string(),
        other => format!("{other:?}"),
    }
}

/// The rows of a result as an aligned text table.
fn table(columns: &[String], rows: &[Vec<String>]) -> String {
    let widths: Vec<usize> = (0..columns.len()).map(|i| rows.iter().map(|r| r[i].len()).chain([columns[i].len()]).max().unwrap_or(0)).collect();
    let line = |cells: &[String]| cells.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect::<Vec<_>>().join(" | ").trim_end().to_owned();
    let mut out = line(columns) + "\n";
    out += &widths.iter().map(|w| "-".repeat(*w)).collect::<Vec<_>>().join("-+-");
    out.push('\n');
    for r in rows {
        out += &line(r);
        out.push('\n');
    }
    out
}

#[test]
fn explain_output_matches_the_checked_in_plans() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join("golden");
    let script = std::fs::read_to_string(dir.join("plans.sql")).expect("golden/plans.sql");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let mut session = Session::new(Engine::new(VarSet::defaults()), 1, "root", "127.0.0.1");
    let mut output = String::new();
    for (comments, sql) in statements(&script) {
        let result = rt.block_on(session.run(sql.as_bytes())).pop().expect("one result");
        let outcome = result.unwrap_or_else(|e| panic!("{sql}: {e}"));
        if !sql.to_ascii_uppercase().starts_with("EXPLAIN") {
            continue;
        }
        let Outcome::Rows(rs) = outcome else { panic!("{sql}: no rows") };
        for c in comments {
            writeln!(output, "{c}").unwrap();
        }
        writeln!(output, "{sql};").unwrap();
        let columns: Vec<String> = rs.columns.iter().map(|c| c.name.clone()).collect();
        let rows: Vec<Vec<String>> = rs.rows.iter().map(|r| r.iter().map(cell).collect()).collect();
        output += &table(&columns, &rows);
        output.push('\n');
    }
    let golden = dir.join("plans.out");
    if std::env::var_os("QUILL_UPDATE_GOLDEN").is_some() {
        std::fs::write(&golden, &output).expect("write golden/plans.out");
        return;
    }
    let expected = std::fs::read_to_string(&golden).unwrap_or_default();
    if expected != output {
        let first = expected.lines().zip(output.lines()).position(|(a, b)| a != b).unwrap_or_else(|| expected.lines().count().min(output.lines().count()));
        panic!(
            "EXPLAIN output differs from golden/plans.out from line {}:\n--- expected\n{}\n--- got\n{}\nIf the change is intended: QUILL_UPDATE_GOLDEN=1 cargo test -p quill-sql --test golden_plans",
            first + 1,
            expected.lines().skip(first).take(12).collect::<Vec<_>>().join("\n"),
            output.lines().skip(first).take(12).collect::<Vec<_>>().join("\n"),
        );
    }
}
