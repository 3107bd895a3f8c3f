//! `CALL p(args)`: a stored procedure run as statements of this session
//! (`program_run` with [`SessionHost`]).
//!
//! - Each statement of the body is a statement of the session: its own metadata locks, row
//!   lock waits and retries, and, under autocommit, its own commit, as in MySQL.
//! - Arguments: IN parameters take their values; an OUT or INOUT argument must be a user
//!   variable (`@v`), or, in a CALL inside a routine, one of its variables, which takes the
//!   parameter's value when the procedure returns (1414 otherwise).
//! - Every result set a statement of the body makes goes to the client, then CALL's own OK:
//!   [`Outcome::Results`] (MySQL's multi-result protocol).
//! - `SQL SECURITY DEFINER` (the default) runs the body with its definer's privileges:
//!   the session's account is the definer's for the call (`CURRENT_USER()` names it), and
//!   is given back after.
//! - A procedure may call itself at most `max_sp_recursion_depth` times (1456), and calls
//!   nest at most [`CALL_NESTING_MAX`] deep.

use std::sync::Arc;

use quill_sql_frontend::program::ParamMode;
use quill_storage::Value;
use sqlparser::ast;

use crate::error::{Result, SqlError, Warning, codes};
use crate::program_meta::RoutineMeta;
use crate::program_run::{self, Frame, Host};
use crate::query::ResultSet;
use crate::text::StatementText;

use super::{Outcome, Session};

/// How deep CALLs may nest (MySQL's bound is its thread stack).
pub const CALL_NESTING_MAX: usize = 64;

/// What a CALL made: its result sets, the rows its last statement changed, and the values
/// its OUT / INOUT parameters hand back to the caller's variables (`(slot, value)`).
#[derive(Default)]
pub(super) struct Called {
    results: Vec<ResultSet>,
    affected: u64,
    out_slots: Vec<(usize, Value)>,
}

/// The slot a placeholder `?n` names (an argument that is a routine's own variable).
fn placeholder_slot(e: &ast::Expr) -> Option<usize> {
    match e {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::Placeholder(p) => p.trim_start_matches('?').parse().ok(),
            _ => None,
        },
        _ => None,
    }
}

/// `@name` of an argument that is a user variable.
fn user_variable(e: &ast::Expr) -> Option<String> {
    let text = e.to_string();
    let name = text.strip_prefix('@').filter(|n| !n.starts_with('@'))?;
    Some(name.trim_matches(|c| c == '`' || c == '\'' || c == '"').to_ascii_lowercase())
}

impl Session {
    /// `CALL name(args)` from a client: its result sets and OK.
    pub(super) async fn call_statement(&mut self, f: &ast::Function, params: &[Value]) -> Result<Outcome> {
        let called = self.call(f, params, false).await?;
        let done = Outcome::Done { affected: called.affected, last_insert_id: 0, info: String::new() };
        if called.results.is_empty() {
            return Ok(done);
        }
        let mut outcomes: Vec<Outcome> = called.results.into_iter().map(Outcome::Rows).collect();
        outcomes.push(done);
        Ok(Outcome::Results(outcomes))
    }

    /// Runs the procedure `f` names with `params` as the caller's parameters (its frame, for
    /// a CALL inside a routine: `in_routine`).
    pub(super) async fn call(&mut self, f: &ast::Function, params: &[Value], in_routine: bool) -> Result<Called> {
        let (db, name) = crate::query::resolve_table_name(&self.info, &f.name)?;
        let routine = self.info.engine.catalog().routine(&db, &name, false).cloned().ok_or_else(|| crate::routine_ddl::no_such_routine(false, &db, &name))?;
        if self.privileges_on(&db, None) & crate::accounts::EXECUTE == 0 && !self.is_definer_of(&routine) {
            return Err(SqlError::new(
                codes::ER_PROCACCESS_DENIED_ERROR,
                format!("execute command denied to user '{}'@'{}' for routine '{db}.{}'", self.info.user, self.info.account_host, routine.name),
            ));
        }
        let args: Vec<&ast::Expr> = match &f.args {
            ast::FunctionArguments::None => Vec::new(),
            ast::FunctionArguments::List(l) => l
                .args
                .iter()
                .map(|a| match a {
                    ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => Ok(e),
                    _ => Err(SqlError::parse(&f.to_string())),
                })
                .collect::<Result<_>>()?,
            ast::FunctionArguments::Subquery(_) => return Err(SqlError::parse(&f.to_string())),
        };
        if args.len() != routine.params.len() {
            return Err(SqlError::new(
                codes::ER_SP_WRONG_NO_OF_ARGS,
                format!("Incorrect number of arguments for PROCEDURE {db}.{}; expected {}, got {}", routine.name, routine.params.len(), args.len()),
            ));
        }
        let depth = self.routine_stack.len();
        let same = self.routine_stack.iter().filter(|r| Arc::ptr_eq(r, &routine)).count();
        let recursion: usize = self.info.var("max_sp_recursion_depth").parse().unwrap_or(0);
        if same > recursion {
            return Err(SqlError::new(
                codes::ER_SP_RECURSION_LIMIT,
                format!("Recursive limit {recursion} (as set by the max_sp_recursion_depth variable) was exceeded for routine {}", routine.name),
            ));
        }
        if depth >= CALL_NESTING_MAX {
            return Err(SqlError::new(codes::ER_STACK_OVERRUN_NEED_MORE, format!("Stored routines nest more than {CALL_NESTING_MAX} deep")));
        }
        // The arguments: IN values, and where OUT / INOUT values go.
        let program = &routine.program;
        let mut frame = Frame::new(program, |_| None)?;
        let mut outs: Vec<(usize, ast::Expr)> = Vec::new();
        let strict = self.info.strict();
        for (i, (p, arg)) in routine.params.iter().zip(&args).enumerate() {
            if p.mode != ParamMode::In {
                let is_variable = user_variable(arg).is_some() || (in_routine && placeholder_slot(arg).is_some());
                if !is_variable {
                    return Err(SqlError::new(
                        codes::ER_SP_NOT_VAR_ARG,
                        format!("OUT or INOUT argument {} for routine {db}.{} is not a variable or NEW pseudo-variable in BEFORE trigger", i + 1, routine.name),
                    ));
                }
                outs.push((i, (*arg).clone()));
            }
            if p.mode != ParamMode::Out {
                let v = self.eval_const(arg, params)?;
                let mut warnings = Vec::new();
                frame.set(program, i, v, strict, &mut warnings)?;
                self.warnings.extend(warnings);
            }
        }
        self.routine_stack.push(routine.clone());
        let account = self.enter_security_context(&routine);
        // The body runs in its database, as MySQL runs it (`DATABASE()`, a CALL, a statement
        // given as text).
        let caller_db = self.info.db.replace(routine.db.clone());
        let mut host = SessionHost { session: self, called: Called::default(), pending: Vec::new() };
        let ran = program_run::run(program, &mut frame, &mut host).await;
        let mut called = std::mem::take(&mut host.called);
        self.info.db = caller_db;
        self.leave_security_context(account);
        self.routine_stack.pop();
        ran?;
        for (i, arg) in outs {
            let v = frame.values[i].clone();
            match (user_variable(&arg), placeholder_slot(&arg)) {
                (Some(name), _) => {
                    self.info.user_vars.borrow_mut().insert(name, v);
                }
                (None, Some(slot)) => called.out_slots.push((slot, v)),
                (None, None) => unreachable!("checked above"),
            }
        }
        Ok(called)
    }

    fn is_definer_of(&self, r: &RoutineMeta) -> bool {
        r.creation.is_definer(&self.info.user, &self.info.account_host)
    }

    /// SQL SECURITY DEFINER: the session's account becomes the routine's definer (when that
    /// account exists); answers the account to give back.
    fn enter_security_context(&mut self, r: &RoutineMeta) -> Option<(String, String)> {
        if r.characteristics.security_invoker || self.is_definer_of(r) {
            return None;
        }
        let (user, host) = &r.creation.definer;
        self.info.engine.acl.read().account(user, host)?;
        let previous = (std::mem::replace(&mut self.info.user, user.clone()), std::mem::replace(&mut self.info.account_host, host.clone()));
        Some(previous)
    }

    fn leave_security_context(&mut self, previous: Option<(String, String)>) {
        if let Some((user, host)) = previous {
            self.info.user = user;
            self.info.account_host = host;
        }
    }

    /// Runs one statement of a routine's body, its result kept (not streamed).
    async fn routine_statement(&mut self, statement: &ast::Statement, text: &str, params: &[Value]) -> Result<Outcome> {
        let may_stream = std::mem::replace(&mut self.may_stream, false);
        // DDL takes no parameters (and names no variables a routine could give it).
        let params = if super::is_ddl(statement) { &[][..] } else { params };
        let r = Box::pin(self.execute(statement, params, text)).await;
        self.may_stream = may_stream;
        r
    }
}

/// Runs a procedure's statements as statements of the session.
struct SessionHost<'s> {
    session: &'s mut Session,
    called: Called,
    /// What a CALL in the body handed back to the body's own variables.
    pending: Vec<(usize, Value)>,
}

/// `SELECT e`, built around `e` itself (not from its text, which does not always read back
/// as the same expression).
fn select_of(e: &ast::Expr) -> Result<ast::Statement> {
    let mut parsed = crate::parse::parse("SELECT NULL", 0, 0)?;
    let Some(ast::Statement::Query(mut q)) = parsed.pop() else { return Err(SqlError::internal("SELECT NULL is not a query")) };
    let ast::SetExpr::Select(select) = q.body.as_mut() else { return Err(SqlError::internal("SELECT NULL is not a SELECT")) };
    select.projection = vec![ast::SelectItem::UnnamedExpr(e.clone())];
    Ok(ast::Statement::Query(q))
}

/// Whether an expression must run as a query, in the session's transaction and under its
/// wait-and-retry loop, rather than be evaluated alone: it reads a table (a subquery), calls
/// a stored function (which may), or calls a function that may wait (`statement_waits`).
fn needs_statement(e: &ast::Expr) -> bool {
    ast::visit_expressions(e, |x| match x {
        ast::Expr::Subquery(_) | ast::Expr::Exists { .. } | ast::Expr::InSubquery { .. } => std::ops::ControlFlow::Break(()),
        ast::Expr::Function(f) => {
            let argc = match &f.args {
                ast::FunctionArguments::List(l) => l.args.len(),
                _ => 0,
            };
            let name = f.name.0.last().map(ToString::to_string).unwrap_or_default();
            let stored = f.name.0.len() > 1 || !crate::bind::is_builtin_function(&name, argc);
            if stored || super::calls_waiting_function(&format!("{name}(")) { std::ops::ControlFlow::Break(()) } else { std::ops::ControlFlow::Continue(()) }
        }
        _ => std::ops::ControlFlow::Continue(()),
    })
    .is_break()
}

impl Host for SessionHost<'_> {
    async fn eval(&mut self, e: &ast::Expr, frame: &[Value]) -> Result<Value> {
        if !needs_statement(e) {
            return self.session.eval_const(e, frame);
        }
        let select = select_of(e)?;
        match self.session.routine_statement(&select, "", frame).await? {
            Outcome::Rows(rs) => Ok(rs.rows.into_iter().next().and_then(|r| r.into_iter().next()).unwrap_or(Value::Null)),
            _ => Ok(Value::Null),
        }
    }

    async fn statement(&mut self, statement: &ast::Statement, text: &str, frame: &[Value], into: bool) -> Result<Option<Vec<Vec<Value>>>> {
        if let ast::Statement::Call(f) = statement {
            let called = Box::pin(self.session.call(f, frame, true)).await?;
            self.called.results.extend(called.results);
            self.called.affected = called.affected;
            self.pending.extend(called.out_slots);
            return Ok(None);
        }
        match self.session.routine_statement(statement, text, frame).await? {
            Outcome::Rows(rs) if into => return Ok(Some(rs.rows)),
            Outcome::Rows(rs) => self.called.results.push(rs),
            Outcome::Done { affected, .. } => self.called.affected = affected,
            Outcome::Results(list) => {
                for o in list {
                    if let Outcome::Rows(rs) = o {
                        self.called.results.push(rs);
                    }
                }
            }
            Outcome::Streamed { .. } => {}
        }
        Ok(None)
    }

    async fn text(&mut self, text: &str) -> Result<()> {
        let statement = crate::text::single(text.as_bytes(), crate::text::LexOptions::default())?;
        let may_stream = std::mem::replace(&mut self.session.may_stream, false);
        let r = Box::pin(self.session.run_unsandboxed(&StatementText { ..statement })).await;
        self.session.may_stream = may_stream;
        match r? {
            Outcome::Rows(rs) => self.called.results.push(rs),
            Outcome::Done { affected, .. } => self.called.affected = affected,
            _ => {}
        }
        Ok(())
    }

    async fn open(&mut self, query: &ast::Statement, frame: &[Value]) -> Result<Vec<Vec<Value>>> {
        match self.session.routine_statement(query, "", frame).await? {
            Outcome::Rows(rs) => Ok(rs.rows),
            _ => Ok(Vec::new()),
        }
    }

    fn warnings(&mut self) -> &mut Vec<Warning> {
        &mut self.session.warnings
    }

    fn set_user_variable(&mut self, name: &str, value: Value) {
        self.session.info.user_vars.borrow_mut().insert(name.to_owned(), value);
    }

    fn interrupted(&self) -> Option<SqlError> {
        self.session.is_killed().then(SqlError::query_interrupted)
    }

    fn strict(&self) -> bool {
        self.session.info.strict()
    }

    fn frame_writes(&mut self) -> Vec<(usize, Value)> {
        std::mem::take(&mut self.pending)
    }
}
