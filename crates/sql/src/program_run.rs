//! Running a compiled stored program (`quill_sql_frontend::program`): the instruction loop,
//! its frame of slots, cursors and handlers. What a statement of the body does is the
//! [`Host`]'s: a trigger's host runs its statements inside the statement that fired it
//! (`triggers`), a procedure's runs each as a statement of the session.
//!
//! - A slot takes a value converted to its type as a column of that type would (strict
//!   mode refuses what it would refuse); hidden slots keep values as they are.
//! - When an instruction fails, or a statement leaves a warning, the handler the program
//!   compiled for it is looked for ([`find_handler`]): in the innermost block whose scope
//!   holds the instruction, the most specific match. Its body runs with the condition as
//!   the one RESIGNAL raises again; at its end the program goes on after the instruction
//!   (CONTINUE) or at its block's end (EXIT). Without a handler the error ends the program;
//!   a warning stays a warning. Waits (`SqlError::wait`) and errors that roll the
//!   transaction back are never handled: they pass through.
//! - A program runs at most [`PROGRAM_STEPS_MAX`] instructions per call (a loop that never
//!   ends is stopped with an error rather than holding its locks for ever); KILL QUERY
//!   stops it between instructions as it stops any statement.

use quill_sql_frontend::compound::ConditionValue;
use quill_sql_frontend::program::{Instr, Program, Target};
use quill_storage::Value;
use sqlparser::ast;

use crate::error::{Result, SqlError, Warning, codes};
use crate::types::{SqlType, WriteContext, coerce_to_column};

/// Instructions one call of a program may run (each statement of its body counts one).
pub const PROGRAM_STEPS_MAX: u64 = 100_000_000;

/// Handlers active at once in one call (a handler's body that fails into another handler
/// nests): MySQL's bound is its stack; past this the error ends the program.
pub const HANDLER_NESTING_MAX: usize = 64;

/// What runs a program's statements and evaluates its expressions.
pub(crate) trait Host {
    /// `e` evaluated with `frame` as its parameters.
    async fn eval(&mut self, e: &ast::Expr, frame: &[Value]) -> Result<Value>;
    /// Runs a statement with `frame` as its parameters; a query with `into` targets answers
    /// its rows (else `None`).
    async fn statement(&mut self, statement: &ast::Statement, text: &str, frame: &[Value], into: bool) -> Result<Option<Vec<Vec<Value>>>>;
    /// Runs a statement given as text (procedures only).
    async fn text(&mut self, text: &str) -> Result<()>;
    /// The rows of a cursor's query, read when it is opened.
    async fn open(&mut self, query: &ast::Statement, frame: &[Value]) -> Result<Vec<Vec<Value>>>;
    /// The warnings of the statement the program runs in.
    fn warnings(&mut self) -> &mut Vec<Warning>;
    /// Sets the user variable `@name`.
    fn set_user_variable(&mut self, name: &str, value: Value);
    /// Whether the statement was killed (checked between instructions).
    fn interrupted(&self) -> Option<SqlError>;
    /// Strict mode: a value that does not fit its slot is an error, not a warning.
    fn strict(&self) -> bool;
    /// Values the last statement handed back to slots of the frame (a CALL's OUT
    /// parameters that are the caller's variables).
    fn frame_writes(&mut self) -> Vec<(usize, Value)> {
        Vec::new()
    }
}

/// An active handler: where the program goes on after its body, and the condition it
/// handles (RESIGNAL's).
struct Active {
    handler: usize,
    resume: usize,
    condition: SqlError,
}

/// The frame a program runs with: one value per slot, NULL to start with, and each slot's
/// type (`None`: kept as given).
pub(crate) struct Frame {
    pub values: Vec<Value>,
    pub types: Vec<Option<SqlType>>,
}

impl Frame {
    /// A frame for `program`, each variable slot typed by its declaration and each slot
    /// `row_type` answers for (a trigger's NEW / OLD columns) by that.
    ///
    /// # Errors
    /// A declared type Quill does not know.
    pub fn new(program: &Program, row_type: impl Fn(usize) -> Option<SqlType>) -> Result<Frame> {
        let types = program
            .slots
            .iter()
            .enumerate()
            .map(|(i, s)| match &s.kind {
                quill_sql_frontend::program::SlotKind::Variable(dt) => SqlType::from_ast(dt, quill_storage::Collation::default()).map(Some),
                quill_sql_frontend::program::SlotKind::Row { .. } => Ok(row_type(i)),
                quill_sql_frontend::program::SlotKind::Hidden => Ok(None),
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Frame { values: vec![Value::Null; program.slots.len()], types })
    }

    /// Puts `v` in `slot`, converted to its type.
    pub fn set(&mut self, program: &Program, slot: usize, v: Value, strict: bool, warnings: &mut Vec<Warning>) -> Result<()> {
        let v = match &self.types[slot] {
            Some(ty) => {
                let name = &program.slots[slot].name;
                let column = name.rsplit('.').next().unwrap_or(name);
                coerce_to_column(v, ty, &mut WriteContext { column, row: 1, strict, warnings })?
            }
            None => v,
        };
        self.values[slot] = v;
        Ok(())
    }
}

/// The instructions of handler `h`'s body, its end included.
fn handler_body(program: &Program, h: usize) -> std::ops::Range<usize> {
    let entry = program.handlers[h].entry;
    let end = program.instrs[entry..].iter().position(|i| matches!(i, Instr::HandlerEnd(x) if *x == h)).map_or(program.instrs.len(), |p| entry + p + 1);
    entry..end
}

/// The SQLSTATE of a warning (MySQL's: the "no data" warning 1329 is class 02).
fn warning_state(code: u16) -> &'static str {
    if code == codes::ER_SP_FETCH_NO_DATA.0 || code == codes::ER_SIGNAL_NOT_FOUND.0 { "02000" } else { "01000" }
}

/// The handler for a condition (`code`, `state`) raised at instruction `pc`: in the
/// innermost block holding `pc`, the most specific match.
fn find_handler(program: &Program, pc: usize, code: u16, state: &str) -> Option<usize> {
    program
        .handlers
        .iter()
        .enumerate()
        .filter(|(_, h)| h.scope.contains(&pc))
        .filter_map(|(i, h)| h.conditions.iter().filter(|m| m.matches(code, state)).map(|m| m.rank()).max().map(|rank| (i, h.depth, rank)))
        .max_by_key(|(_, depth, rank)| (*depth, *rank))
        .map(|(i, _, _)| i)
}

fn truthy(v: &Value) -> bool {
    !v.is_null() && crate::ops::to_f64(v) != 0.0
}

/// Runs `program` on `frame` until its end or a RETURN (whose value it answers).
///
/// # Errors
/// An error no handler took; 1321 for a function that ends without RETURN.
pub(crate) async fn run<H: Host>(program: &Program, frame: &mut Frame, host: &mut H) -> Result<Option<Value>> {
    let mut pc = 0usize;
    let mut steps = 0u64;
    let mut active: Vec<Active> = Vec::new();
    let mut cursors: Vec<Option<std::collections::VecDeque<Vec<Value>>>> = vec![None; program.cursors.len()];
    while pc < program.instrs.len() {
        steps += 1;
        if steps > PROGRAM_STEPS_MAX {
            return Err(SqlError::new(codes::ER_UNKNOWN_ERROR, format!("A stored program ran {PROGRAM_STEPS_MAX} instructions in one call: stopped")));
        }
        if let Some(e) = host.interrupted() {
            return Err(e);
        }
        let warnings_before = host.warnings().len();
        let outcome: Result<Step> = async {
            match &program.instrs[pc] {
                Instr::Declare { slot, default } => {
                    let v = match default {
                        Some(e) => host.eval(e, &frame.values).await?,
                        None => Value::Null,
                    };
                    let strict = host.strict();
                    frame.set(program, *slot, v, strict, host.warnings())?;
                }
                Instr::Set { slot, value } => {
                    let v = host.eval(value, &frame.values).await?;
                    let strict = host.strict();
                    frame.set(program, *slot, v, strict, host.warnings())?;
                }
                Instr::Sql { statement, text, into } => {
                    let rows = host.statement(statement, text, &frame.values, !into.is_empty()).await?;
                    let strict = host.strict();
                    for (slot, v) in host.frame_writes() {
                        frame.set(program, slot, v, strict, host.warnings())?;
                    }
                    if !into.is_empty() {
                        let rows = rows.unwrap_or_default();
                        match rows.as_slice() {
                            [] => host.warnings().push(Warning {
                                level: "Warning",
                                code: codes::ER_SP_FETCH_NO_DATA.0,
                                message: "No data - zero rows fetched, selected, or processed".into(),
                            }),
                            [row] => {
                                if row.len() != into.len() {
                                    return Err(SqlError::new(
                                        codes::ER_WRONG_NUMBER_OF_COLUMNS_IN_SELECT,
                                        "The used SELECT statements have a different number of columns",
                                    ));
                                }
                                for (t, v) in into.iter().zip(row.iter().cloned()) {
                                    match t {
                                        Target::Slot(s) => {
                                            let strict = host.strict();
                                            frame.set(program, *s, v, strict, host.warnings())?;
                                        }
                                        Target::User(name) => host.set_user_variable(name, v),
                                    }
                                }
                            }
                            _ => return Err(SqlError::new(codes::ER_TOO_MANY_ROWS, "Result consisted of more than one row")),
                        }
                    }
                }
                Instr::Text(text) => host.text(text).await?,
                Instr::JumpIfNot { condition, to } => {
                    if !truthy(&host.eval(condition, &frame.values).await?) {
                        return Ok(Step::Jump(*to));
                    }
                }
                Instr::Jump(to) => return Ok(Step::Jump(*to)),
                Instr::Return(e) => {
                    return Ok(Step::Return(host.eval(e, &frame.values).await?));
                }
                Instr::Open(c) => {
                    if cursors[*c].is_some() {
                        return Err(SqlError::new(codes::ER_SP_CURSOR_ALREADY_OPEN, "Cursor is already open"));
                    }
                    let rows = host.open(&program.cursors[*c].query, &frame.values).await?;
                    cursors[*c] = Some(rows.into());
                }
                Instr::Fetch { cursor, into } => {
                    let Some(open) = cursors[*cursor].as_mut() else {
                        return Err(SqlError::new(codes::ER_SP_CURSOR_NOT_OPEN, "Cursor is not open"));
                    };
                    let Some(row) = open.pop_front() else {
                        return Err(SqlError::new(codes::ER_SP_FETCH_NO_DATA, "No data - zero rows fetched, selected, or processed"));
                    };
                    if row.len() != into.len() {
                        return Err(SqlError::new(codes::ER_SP_WRONG_NO_OF_FETCH_ARGS, "Incorrect number of FETCH variables"));
                    }
                    let strict = host.strict();
                    for (s, v) in into.iter().zip(row) {
                        frame.set(program, *s, v, strict, host.warnings())?;
                    }
                }
                Instr::Close(c) => {
                    if cursors[*c].take().is_none() {
                        return Err(SqlError::new(codes::ER_SP_CURSOR_NOT_OPEN, "Cursor is not open"));
                    }
                }
                Instr::Signal { resignal, condition, items } => {
                    let base = if *resignal {
                        let Some(a) = active.last() else {
                            return Err(SqlError::new(codes::ER_RESIGNAL_WITHOUT_ACTIVE_HANDLER, "RESIGNAL when handler not active"));
                        };
                        Some(a.condition.clone())
                    } else {
                        None
                    };
                    let e = signal(host, &frame.values, base, condition.as_ref(), items).await?;
                    if e.state.starts_with("01") {
                        host.warnings().push(Warning { level: "Warning", code: e.code, message: e.message });
                    } else {
                        return Err(e);
                    }
                }
                Instr::ResetCursors(list) => list.iter().for_each(|c| cursors[*c] = None),
                Instr::Raise { code, state, message } => return Err(SqlError::new((*code, state), message.clone())),
                Instr::HandlerEnd(h) => {
                    // Reached from its entry, so active (the innermost).
                    let a = active.pop().filter(|a| a.handler == *h).ok_or_else(|| SqlError::internal("a handler's end without its start"))?;
                    return Ok(Step::Jump(a.resume));
                }
            }
            Ok(Step::Next)
        }
        .await;
        match outcome {
            Ok(Step::Return(v)) => return Ok(Some(v)),
            Ok(Step::Jump(to)) => {
                pc = to;
                // A jump out of a handler's body (LEAVE, an EXIT handler's end) ends it.
                while active.last().is_some_and(|a| !handler_body(program, a.handler).contains(&pc)) {
                    active.pop();
                }
            }
            Ok(Step::Next) => {
                // A warning the statement left: a handler may take it (the newest that has one).
                // (A statement that cleared the warnings raised none of those counted before.)
                let raised: Vec<(u16, String)> =
                    host.warnings().get(warnings_before..).unwrap_or_default().iter().map(|w| (w.code, w.message.clone())).collect();
                let handled = raised.iter().rev().find_map(|(code, message)| {
                    let state = warning_state(*code);
                    find_handler(program, pc, *code, state).map(|h| (h, SqlError::new((*code, state), message.clone())))
                });
                match handled {
                    Some((h, condition)) if active.len() < HANDLER_NESTING_MAX => {
                        let handler = &program.handlers[h];
                        active.push(Active { handler: h, resume: if handler.exit { handler.exit_to } else { pc + 1 }, condition });
                        pc = handler.entry;
                    }
                    _ => pc += 1,
                }
            }
            Err(e) => {
                if e.wait().is_some() || e.rolls_back_transaction {
                    return Err(e);
                }
                let h = find_handler(program, pc, e.code, &e.state).filter(|_| active.len() < HANDLER_NESTING_MAX);
                let Some(h) = h else { return Err(e) };
                let handler = &program.handlers[h];
                // CONTINUE goes on after the failed instruction, or after the statement whose
                // condition failed (`Program::resume`).
                let resume = if handler.exit { handler.exit_to } else { program.resume.get(&pc).copied().unwrap_or(pc + 1) };
                active.push(Active { handler: h, resume, condition: e });
                pc = handler.entry;
            }
        }
    }
    if program.kind == quill_sql_frontend::program::Kind::Function {
        return Err(SqlError::new(codes::ER_SP_NORETURNEND, "FUNCTION ended without RETURN"));
    }
    Ok(None)
}

/// Where the program goes after an instruction.
enum Step {
    Next,
    Jump(usize),
    Return(Value),
}

/// The error SIGNAL / RESIGNAL raises: its condition (a SQLSTATE's default number and
/// message, MySQL's: 1644 "Unhandled user-defined exception condition" for a class other
/// than 01 and 02) with its SET items applied, or the handled condition's for RESIGNAL.
async fn signal<H: Host>(
    host: &mut H,
    frame: &[Value],
    base: Option<SqlError>,
    condition: Option<&ConditionValue>,
    items: &[(String, ast::Expr)],
) -> Result<SqlError> {
    let mut e = match (condition, base) {
        (Some(ConditionValue::SqlState(state)), _) => {
            let (code, message) = if state.starts_with("01") {
                (codes::ER_SIGNAL_WARN.0, "Unhandled user-defined warning condition")
            } else if state.starts_with("02") {
                (codes::ER_SIGNAL_NOT_FOUND.0, "Unhandled user-defined not found condition")
            } else {
                (codes::ER_SIGNAL_EXCEPTION.0, "Unhandled user-defined exception condition")
            };
            let mut e = SqlError::new((code, "HY000"), message);
            e.state = state.clone().into();
            e
        }
        (Some(ConditionValue::Code(code)), _) => SqlError::new((*code, "HY000"), format!("Unhandled user-defined exception condition {code}")),
        (None, Some(base)) => base,
        (None, None) => SqlError::new(codes::ER_RESIGNAL_WITHOUT_ACTIVE_HANDLER, "RESIGNAL when handler not active"),
    };
    for (name, value) in items {
        let v = host.eval(value, frame).await?;
        match name.as_str() {
            "MESSAGE_TEXT" => e.message = crate::ops::to_string_lossy(&v),
            "MYSQL_ERRNO" => {
                e.code = u16::try_from(crate::ops::to_i128(&v)).ok().filter(|c| *c > 0).ok_or_else(|| {
                    SqlError::new(
                        codes::ER_WRONG_VALUE_FOR_VAR,
                        format!("Variable 'MYSQL_ERRNO' can't be set to the value of '{}'", crate::ops::to_string_lossy(&v)),
                    )
                })?;
            }
            "CLASS_ORIGIN" | "SUBCLASS_ORIGIN" | "CONSTRAINT_CATALOG" | "CONSTRAINT_SCHEMA" | "CONSTRAINT_NAME" | "CATALOG_NAME" | "SCHEMA_NAME"
            | "TABLE_NAME" | "COLUMN_NAME" | "CURSOR_NAME" => {}
            other => return Err(SqlError::parse(other)),
        }
    }
    Ok(e)
}

/// Drives a future that never waits (a trigger's run: every statement in it is
/// synchronous) to its end.
///
/// # Panics
/// If the future waits: a program run this way has no statement that can.
pub(crate) fn run_now<T>(f: impl std::future::Future<Output = T>) -> T {
    let mut f = std::pin::pin!(f);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match f.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(v) => v,
        std::task::Poll::Pending => unreachable!("a synchronous program's run waited"),
    }
}
