//! Table definitions as of each point of the log (`schema_history`), recorded from a
//! session's DDL.

use quill_sql::schema_history::SchemaHistory;
use quill_sql::vars::VarSet;
use quill_sql::{Engine, Session};

fn run(session: &mut Session, sql: &str) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let result = rt.block_on(session.run(sql)).pop().expect("one result");
    if let Err(e) = result {
        panic!("{sql}: {e}");
    }
}

#[test]
fn each_table_reads_as_it_was_at_each_point_and_drops_end_it() {
    let engine = Engine::new(VarSet::defaults());
    let mut session = Session::new(std::sync::Arc::clone(&engine), 1, "root", "localhost");
    let mut history = SchemaHistory::default();
    run(&mut session, "CREATE DATABASE d");
    run(&mut session, "CREATE TABLE d.t (id INT PRIMARY KEY, a INT)");
    history.record(10, &engine.catalog());
    run(&mut session, "CREATE TABLE d.u (id INT PRIMARY KEY)");
    history.record(20, &engine.catalog());
    run(&mut session, "ALTER TABLE d.t ADD COLUMN b VARCHAR(10)");
    history.record(30, &engine.catalog());
    run(&mut session, "DROP TABLE d.t");
    history.record(40, &engine.catalog());

    let columns = |history: &SchemaHistory, lsn| history.table_at("d", "t", lsn).map(|t| t.columns.iter().map(|c| c.name.clone()).collect::<Vec<_>>());
    assert_eq!(columns(&history, 5), None, "before its CREATE");
    assert_eq!(columns(&history, 10), Some(vec!["id".into(), "a".into()]));
    assert_eq!(columns(&history, 25), Some(vec!["id".into(), "a".into()]), "u's CREATE does not touch t");
    assert_eq!(columns(&history, 30), Some(vec!["id".into(), "a".into(), "b".into()]));
    assert_eq!(columns(&history, 45), None, "dropped");
    assert_eq!(history.versions("d", "t"), 3, "t: created, altered, dropped");

    history.forget_before(35);
    assert_eq!(columns(&history, 35), Some(vec!["id".into(), "a".into(), "b".into()]), "the version in force at 35 stays");
    history.forget_before(45);
    assert!(history.versions("d", "t") == 0, "a table dropped before the point is forgotten");
    assert!(history.table_at("d", "u", 100).is_some());
}
