//! CHECK constraints, as MySQL 8.0.16 has them: declared on a column or the table, named
//! or not, ENFORCED (the default) or NOT ENFORCED.
//!
//! - **Names.** An unnamed constraint is `<table>_chk_<n>`, numbered from 1 in the order
//!   the constraints appear; a name used twice in one table is 3822.
//! - **Declaration.** The expression is bound against the table's columns when the table is
//!   created (an unknown column is 1054), and kept as written (`TableMeta::checks`).
//! - **Enforcement.** Every row an INSERT, UPDATE, REPLACE or LOAD DATA writes is checked
//!   ([`enforce`], from `dml::finish_row`): an enforced constraint whose expression is FALSE
//!   refuses the row with 3819 (`Check constraint 'c' is violated.`); TRUE and NULL pass, as
//!   in SQL. Under IGNORE the row is skipped with the same message as a warning.
//! - **Shown** by SHOW CREATE TABLE (after the foreign keys, as MySQL writes them; a
//!   checkpoint stores the table as that statement, so they survive restarts) and by
//!   `information_schema.CHECK_CONSTRAINTS` and `TABLE_CONSTRAINTS`.
//!
//! - **ALTER TABLE** `ADD [CONSTRAINT name] CHECK (...)` checks every existing row as the
//!   table is copied (`ddl::rebuild`); `DROP CONSTRAINT name` drops one. Other ALTERs keep
//!   the constraints, unless one reads a column that is gone (3959, as MySQL).
//!
//! Not done: `ALTER CHECK name [NOT] ENFORCED`, and rewriting a constraint when a column it
//! reads is renamed.
//!
//! Where it sits: `quill-sql` (the constraint itself is a `catalog::CheckConstraint`); DDL builds them, DML enforces them.

use quill_storage::Value;
use sqlparser::ast;

use crate::bind::Binder;
use crate::catalog::CheckConstraint;
use crate::catalog::TableMeta;
use crate::error::{Result, SqlError, codes};
use crate::expr::RowCtx;
use crate::query::Env;

/// The CHECK constraints a CREATE TABLE declares, on its columns and on the table, in the
/// order they appear, unnamed ones named `<table>_chk_<n>`.
///
/// # Errors
/// 3822 for a name used twice.
pub fn declared(table: &str, columns: &[ast::ColumnDef], constraints: &[ast::TableConstraint]) -> Result<Vec<CheckConstraint>> {
    let on_columns = columns.iter().flat_map(|c| &c.options).filter_map(|o| match &o.option {
        ast::ColumnOption::Check(check) => Some((o.name.as_ref().or(check.name.as_ref()), check)),
        _ => None,
    });
    let on_table = constraints.iter().filter_map(|c| match c {
        ast::TableConstraint::Check(check) => Some((check.name.as_ref(), check)),
        _ => None,
    });
    let mut out: Vec<CheckConstraint> = Vec::new();
    let mut unnamed = 0;
    for (name, check) in on_columns.chain(on_table) {
        let name = match name {
            Some(n) => n.value.clone(),
            None => {
                unnamed += 1;
                format!("{table}_chk_{unnamed}")
            }
        };
        if out.iter().any(|c| c.name.eq_ignore_ascii_case(&name)) {
            return Err(SqlError::new(codes::ER_CHECK_CONSTRAINT_DUP_NAME, format!("Duplicate check constraint name '{name}'.")));
        }
        out.push(CheckConstraint { name, expr: check.expr.as_ref().clone(), enforced: check.enforced.unwrap_or(true) });
    }
    Ok(out)
}

/// Binds each constraint against `t`'s columns: an unknown column or function is refused
/// when the table is created, not when a row is written.
///
/// # Errors
/// The binder's (1054 for an unknown column).
pub fn validate(env: &Env<'_>, t: &TableMeta) -> Result<()> {
    let scope = crate::dml::table_scope(t, &t.name);
    for check in &t.checks {
        Binder::new(env, &scope, "check constraint").bind(&check.expr)?;
    }
    Ok(())
}

/// Refuses `row` (every column of `t`, finished) if an enforced constraint is FALSE for it.
///
/// # Errors
/// 3819 naming the first constraint the row fails; the expression's own errors.
pub fn enforce(env: &Env<'_>, t: &TableMeta, row: &[Value]) -> Result<()> {
    if t.checks.iter().all(|c| !c.enforced) {
        return Ok(());
    }
    let scope = crate::dml::table_scope(t, &t.name);
    for check in t.checks.iter().filter(|c| c.enforced) {
        let value = Binder::new(env, &scope, "check constraint").bind(&check.expr)?.eval(env, &RowCtx::new(row))?;
        if crate::ops::truth(&value) == Some(false) {
            return Err(SqlError::new(codes::ER_CHECK_CONSTRAINT_VIOLATED, format!("Check constraint '{}' is violated.", check.name)));
        }
    }
    Ok(())
}

/// The lines SHOW CREATE TABLE writes for `t`'s constraints, as MySQL writes them.
#[must_use]
pub fn show_lines(t: &TableMeta, quote: impl Fn(&str) -> String) -> Vec<String> {
    t.checks
        .iter()
        .map(|c| {
            let not_enforced = if c.enforced { "" } else { " /*!80016 NOT ENFORCED */" };
            format!("  CONSTRAINT {} CHECK ({}){not_enforced}", quote(&c.name), c.expr)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use sqlparser::ast::{CreateTable, Statement};
    use sqlparser::parser::Parser;

    use super::declared;
    use crate::dialect::QuillDialect;

    fn create(sql: &str) -> CreateTable {
        match Parser::parse_sql(&QuillDialect::default(), sql).expect("parses").remove(0) {
            Statement::CreateTable(ct) => ct,
            other => panic!("not CREATE TABLE: {other}"),
        }
    }

    #[test]
    fn unnamed_constraints_are_numbered_in_order() {
        let ct = create("CREATE TABLE r3 (c INT CHECK (c > 0), d INT, CONSTRAINT ck1 CHECK (c = 1 OR c > 2 AND c < 5), CHECK (d <> 0) NOT ENFORCED)");
        let checks = declared("r3", &ct.columns, &ct.constraints).expect("valid");
        let names: Vec<&str> = checks.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["r3_chk_1", "ck1", "r3_chk_2"]);
        assert_eq!(checks[1].expr.to_string(), "c = 1 OR c > 2 AND c < 5");
        assert!(checks[0].enforced && !checks[2].enforced);
    }

    #[test]
    fn a_name_used_twice_is_refused() {
        let ct = create("CREATE TABLE t (c INT, CONSTRAINT k CHECK (c > 0), CONSTRAINT K CHECK (c < 9))");
        assert_eq!(declared("t", &ct.columns, &ct.constraints).map_err(|e| e.code), Err(3822));
    }
}
