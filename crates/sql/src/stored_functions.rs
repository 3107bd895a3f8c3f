//! Stored functions in expressions: `SELECT f(a) FROM t` binds `f` to the routine
//! (`query::bind`, `Expr::Stored`), and each evaluation runs its program here, through the
//! `SystemTables::call_function` seam the planner's `Env` carries.
//!
//! - The arguments are converted to the parameters' types, the RETURN value to the RETURNS
//!   type, as MySQL converts them (strict mode refuses what a column would refuse).
//! - The body runs inside the statement that called it, synchronously ([`FunctionHost`]): it
//!   evaluates, reads with `SELECT ... INTO` and cursors in the statement's read view, and sets
//!   user variables. A function that writes tables (INSERT, UPDATE, DELETE in its body) is
//!   refused when it runs (1314): see `docs/stored-programs.md`.
//! - A function may not call itself, directly or not (1424), and calls nest at most
//!   [`FUNCTION_NESTING_MAX`] deep.

use std::cell::RefCell;

use quill_storage::Value;
use sqlparser::ast;

use crate::bind::{Binder, Scope};
use crate::error::{Result, SqlError, Warning, codes};
use crate::expr::RowCtx;
use crate::program_meta::RoutineMeta;
use crate::program_run::{self, Frame, Host};
use crate::query::{self, Env};
use crate::types::{SqlType, WriteContext, coerce_to_column};

/// How deep stored function calls may nest.
pub const FUNCTION_NESTING_MAX: usize = 64;

thread_local! {
    /// The stored functions running on this thread, outermost first (`db.name`).
    static RUNNING: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

/// Leaves the running list when dropped.
struct Running;

impl Drop for Running {
    fn drop(&mut self) {
        RUNNING.with(|r| r.borrow_mut().pop());
    }
}

/// Runs the stored function `routine` on `args` in `env`.
///
/// # Errors
/// 1424 for a call of a function already running; the body's errors; 1321 for a body that
/// ends without RETURN.
pub fn call(env: &Env<'_>, routine: &RoutineMeta, args: Vec<Value>) -> Result<Value> {
    let key = format!("{}.{}", routine.db, routine.name.to_lowercase());
    let nested = RUNNING.with(|r| {
        let mut r = r.borrow_mut();
        if r.contains(&key) {
            return Err(SqlError::new(codes::ER_SP_NO_RECURSION, "Recursive stored functions and triggers are not allowed."));
        }
        if r.len() >= FUNCTION_NESTING_MAX {
            return Err(SqlError::new(codes::ER_STACK_OVERRUN_NEED_MORE, format!("Stored functions nest more than {FUNCTION_NESTING_MAX} deep")));
        }
        r.push(key);
        Ok(Running)
    });
    let _running = nested?;
    let program = &routine.program;
    let strict = env.info.strict();
    let mut warnings = Vec::new();
    let mut frame = Frame::new(program, |_| None)?;
    for (i, v) in args.into_iter().enumerate() {
        frame.set(program, i, v, strict, &mut warnings)?;
    }
    let account = if routine.creation.is_definer(&env.info.user, &env.info.account_host) || routine.characteristics.security_invoker {
        (env.info.user.clone(), env.info.account_host.clone())
    } else {
        routine.creation.definer.clone()
    };
    let mut host = FunctionHost { env, warnings, strict, account };
    let returned = program_run::run_now(program_run::run(program, &mut frame, &mut host));
    let mut warnings = std::mem::take(&mut host.warnings);
    let value = returned?.unwrap_or(Value::Null);
    let collation = env.catalog.database(&routine.db).map(|d| d.collation).unwrap_or_default();
    let value = match &routine.returns {
        Some((dt, _)) => {
            let ty = SqlType::from_ast(dt, collation)?;
            coerce_to_column(value, &ty, &mut WriteContext { column: &routine.name, row: 1, strict, warnings: &mut warnings })?
        }
        None => value,
    };
    env.info.expression_warnings.borrow_mut().extend(warnings);
    Ok(value)
}

/// Runs a stored function's statements inside the statement that called it.
struct FunctionHost<'e, 'a> {
    env: &'e Env<'a>,
    warnings: Vec<Warning>,
    strict: bool,
    /// Whose privileges its statements run with (SQL SECURITY).
    account: (String, String),
}

impl FunctionHost<'_, '_> {
    fn with_frame<T>(&self, frame: &[Value], f: impl FnOnce(&Env<'_>) -> Result<T>) -> Result<T> {
        let e = self.env;
        let env = Env {
            catalog: e.catalog,
            view: e.view,
            params: frame,
            now_us: e.now_us,
            info: e.info,
            lock: e.lock,
            div_zero_is_error: e.div_zero_is_error,
            ctes: crate::cte::Ctes::default(),
            views_open: e.views_open,
            system_tables: e.system_tables,
        };
        f(&env)
    }
}

impl Host for FunctionHost<'_, '_> {
    async fn eval(&mut self, e: &ast::Expr, frame: &[Value]) -> Result<Value> {
        self.with_frame(frame, |env| Binder::new(env, &Scope::default(), "field list").bind(e)?.eval(env, &RowCtx::new(&[])))
    }

    async fn statement(&mut self, statement: &ast::Statement, _text: &str, frame: &[Value], _into: bool) -> Result<Option<Vec<Vec<Value>>>> {
        crate::triggers::check_body_privileges(self.env.info, &self.account, statement)?;
        match statement {
            ast::Statement::Query(q) => self.with_frame(frame, |env| {
                let (plan, _) = query::plan_query(env, q, &[])?;
                Ok(Some(query::run_select(&plan, env, None)?.rows))
            }),
            ast::Statement::Set(ast::Set::SingleAssignment { variable, values, .. }) if values.len() == 1 => {
                let name = variable.to_string();
                let Some(user) = name.strip_prefix('@').filter(|n| !n.starts_with('@')) else {
                    return Err(SqlError::new(codes::ER_SP_BADSTATEMENT, format!("SET {name} is not allowed in a stored function")));
                };
                let v = self.eval(&values[0], frame).await?;
                self.set_user_variable(&user.trim_matches(|c| c == '`' || c == '\'' || c == '"').to_ascii_lowercase(), v);
                Ok(None)
            }
            other => {
                let first = other.to_string().split_whitespace().next().unwrap_or_default().to_ascii_uppercase();
                Err(SqlError::new(codes::ER_SP_BADSTATEMENT, format!("{first} is not allowed in a stored function")))
            }
        }
    }

    async fn text(&mut self, text: &str) -> Result<()> {
        Err(SqlError::new(codes::ER_SP_BADSTATEMENT, format!("{} is not allowed in a stored function", text.split_whitespace().next().unwrap_or_default())))
    }

    async fn open(&mut self, query: &ast::Statement, frame: &[Value]) -> Result<Vec<Vec<Value>>> {
        Ok(self.statement(query, "", frame, true).await?.unwrap_or_default())
    }

    fn warnings(&mut self) -> &mut Vec<Warning> {
        &mut self.warnings
    }

    fn set_user_variable(&mut self, name: &str, value: Value) {
        self.env.info.user_vars.borrow_mut().insert(name.to_owned(), value);
    }

    fn interrupted(&self) -> Option<SqlError> {
        self.env.info.interrupt.check().err()
    }

    fn strict(&self) -> bool {
        self.strict
    }
}
