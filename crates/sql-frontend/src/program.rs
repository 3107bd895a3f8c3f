//! A stored program compiled for running: a body's tree ([`crate::compound::Stmt`]) as a
//! flat list of instructions over a frame of slots, as MySQL keeps a routine (its
//! `sp_instr` list). A program is compiled once, when its definition is made or loaded,
//! and run many times; nothing is parsed when it runs.
//!
//! - **Slots.** Every local variable, parameter, hidden temporary (a CASE operand) and, in a
//!   trigger, every column of `NEW` / `OLD` the body names, is a slot of the frame
//!   ([`Program::slots`]). Names are resolved here: a name that a local variable holds in
//!   scope is that variable (MySQL gives a local variable precedence over a column), so in
//!   each statement and expression of the body such a name is replaced by the placeholder
//!   `?slot`, and the statement runs with the frame as its parameters.
//! - **Control flow** is jumps: `IF`, `CASE` and loops become [`Instr::JumpIfNot`] and
//!   [`Instr::Jump`]; `LEAVE` and `ITERATE` jump to their label's end or start.
//! - **Handlers** ([`Handler`]) are active over the instructions of their block after their
//!   declaration ([`Handler::scope`]); their bodies are placed after the block's statements,
//!   outside that scope (an error in a handler's body goes to the blocks around it), and end
//!   with [`Instr::HandlerEnd`]. When an instruction fails, the runner picks the handler of
//!   the innermost block whose scope holds it and whose conditions match (a number before a
//!   SQLSTATE before a class), runs its body, and goes on after the failing instruction
//!   (CONTINUE) or at the end of the handler's block (EXIT).
//!
//! Checks made here, as MySQL makes them when a program is created: declarations first,
//! variables and conditions before cursors before handlers (1337, 1338), no duplicates in a
//! block (1331-1333), labels that match (1308, 1310), names that exist (1327, 1319, 1324),
//! RETURN only in functions (1313), no result sets from triggers and functions (1415), no
//! transaction control in them (1422), and a trigger's rows as its event has them (1362,
//! 1363).

use std::ops::{ControlFlow, Range};

use sqlparser::ast::{self, Expr};

use crate::compound::{ConditionValue, HandlerCondition, IntoTarget, SetItem, Sql, Stmt};
use quill_sql_types::error::{Result, SqlError, codes};

/// What kind of program a body belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Trigger { timing: Timing, event: Event },
    Procedure,
    Function,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timing {
    Before,
    After,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    Insert,
    Update,
    Delete,
}

impl Timing {
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Timing::Before => "BEFORE",
            Timing::After => "AFTER",
        }
    }
}

impl Event {
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Event::Insert => "INSERT",
            Event::Update => "UPDATE",
            Event::Delete => "DELETE",
        }
    }
}

/// A parameter of a routine.
#[derive(Debug, Clone)]
pub struct Param {
    pub name: String,
    pub ty: ast::DataType,
    pub mode: ParamMode,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamMode {
    In,
    Out,
    InOut,
}

/// A slot of the frame.
#[derive(Debug, Clone)]
pub struct Slot {
    pub name: String,
    pub kind: SlotKind,
}

#[derive(Debug, Clone)]
pub enum SlotKind {
    /// A local variable (DECLARE) or a parameter, with its type.
    Variable(ast::DataType),
    /// A column of a trigger's `NEW` (`new`) or `OLD` row.
    Row { new: bool, column: String },
    /// A temporary of the compiler's (a CASE operand).
    Hidden,
}

/// Where a value read into the frame goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Slot(usize),
    /// A user variable, `@name` (lower-cased).
    User(String),
}

/// What a handler catches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Matcher {
    Code(u16),
    SqlState(String),
    SqlWarning,
    NotFound,
    SqlException,
}

impl Matcher {
    /// How specific a match is: a number before a SQLSTATE before a class.
    #[must_use]
    pub fn rank(&self) -> u8 {
        match self {
            Matcher::Code(_) => 3,
            Matcher::SqlState(_) => 2,
            _ => 1,
        }
    }

    /// Whether a condition with this number and SQLSTATE matches.
    #[must_use]
    pub fn matches(&self, code: u16, state: &str) -> bool {
        match self {
            Matcher::Code(c) => *c == code,
            Matcher::SqlState(s) => s == state,
            Matcher::SqlWarning => state.starts_with("01"),
            Matcher::NotFound => state.starts_with("02"),
            Matcher::SqlException => !state.starts_with("00") && !state.starts_with("01") && !state.starts_with("02"),
        }
    }
}

/// A declared handler.
#[derive(Debug, Clone)]
pub struct Handler {
    pub exit: bool,
    pub conditions: Vec<Matcher>,
    /// The instructions it is active over.
    pub scope: Range<usize>,
    /// Its body's first instruction.
    pub entry: usize,
    /// Where an EXIT handler goes on: the end of its block.
    pub exit_to: usize,
    /// How deep its block is (the innermost handler wins).
    pub depth: usize,
}

/// A declared cursor.
#[derive(Debug, Clone)]
pub struct Cursor {
    pub name: String,
    pub query: Box<ast::Statement>,
}

/// One instruction.
#[derive(Debug, Clone)]
pub enum Instr {
    /// Entering a declaration: the slot takes its default (NULL without one).
    Declare {
        slot: usize,
        default: Option<Expr>,
    },
    Set {
        slot: usize,
        value: Expr,
    },
    /// A statement; a query with targets reads its one row into them.
    Sql {
        statement: Box<ast::Statement>,
        text: String,
        into: Vec<Target>,
    },
    /// A statement only the session's recognisers read, run as text (procedures only).
    Text(String),
    JumpIfNot {
        condition: Expr,
        to: usize,
    },
    Jump(usize),
    Return(Expr),
    Open(usize),
    Fetch {
        cursor: usize,
        into: Vec<usize>,
    },
    Close(usize),
    /// SIGNAL / RESIGNAL; a condition is `None` for RESIGNAL's own, or else a number or
    /// SQLSTATE.
    Signal {
        resignal: bool,
        condition: Option<ConditionValue>,
        items: Vec<(String, Expr)>,
    },
    /// Close these cursors (entering the block that declares them: a cursor is closed when
    /// its block is left, so a loop may open it again).
    ResetCursors(Vec<usize>),
    /// Raise this error (a CASE with no ELSE that matched nothing: 1339).
    Raise {
        code: u16,
        state: &'static str,
        message: String,
    },
    /// The end of a handler's body.
    HandlerEnd(usize),
}

/// A compiled program.
#[derive(Debug, Clone)]
pub struct Program {
    pub kind: Kind,
    pub instrs: Vec<Instr>,
    pub slots: Vec<Slot>,
    pub handlers: Vec<Handler>,
    pub cursors: Vec<Cursor>,
    /// The first `params` slots are the routine's parameters.
    pub params: usize,
    /// Where a CONTINUE handler goes on after an instruction that failed, when not at the
    /// next one: after the whole IF, CASE or loop whose condition (or CASE operand) it
    /// evaluates, as MySQL goes on.
    pub resume: std::collections::BTreeMap<usize, usize>,
}

impl Program {
    /// The slots of a trigger's NEW / OLD columns: `(slot, new, column)`.
    pub fn row_slots(&self) -> impl Iterator<Item = (usize, bool, &str)> {
        self.slots.iter().enumerate().filter_map(|(i, s)| match &s.kind {
            SlotKind::Row { new, column } => Some((i, *new, column.as_str())),
            _ => None,
        })
    }

    /// Whether an instruction sets a slot of the NEW row (a BEFORE trigger that changes
    /// the row it fires for).
    #[must_use]
    pub fn sets_new_row(&self) -> bool {
        self.instrs.iter().any(|i| match i {
            Instr::Set { slot, .. } => matches!(self.slots[*slot].kind, SlotKind::Row { new: true, .. }),
            Instr::Sql { into, .. } => into.iter().any(|t| matches!(t, Target::Slot(s) if matches!(self.slots[*s].kind, SlotKind::Row { new: true, .. }))),
            Instr::Fetch { into, .. } => into.iter().any(|s| matches!(self.slots[*s].kind, SlotKind::Row { new: true, .. })),
            _ => false,
        })
    }
}

/// Compiles a body of `kind` with its parameters.
///
/// # Errors
/// The checks of the module doc.
pub fn compile(kind: Kind, params: &[Param], body: &Stmt) -> Result<Program> {
    let mut c = Compiler {
        program: Program {
            kind,
            instrs: Vec::new(),
            slots: Vec::new(),
            handlers: Vec::new(),
            cursors: Vec::new(),
            params: params.len(),
            resume: std::collections::BTreeMap::new(),
        },
        scopes: vec![Scope::default()],
        labels: Vec::new(),
    };
    for p in params {
        if c.scopes[0].variables.iter().any(|(n, _)| n.eq_ignore_ascii_case(&p.name)) {
            return Err(SqlError::new(codes::ER_SP_DUP_VAR, format!("Duplicate variable: {}", p.name)));
        }
        let slot = c.slot(&p.name, SlotKind::Variable(p.ty.clone()));
        c.scopes[0].variables.push((p.name.clone(), slot));
    }
    c.statement(body)?;
    if kind == Kind::Function && !c.program.instrs.iter().any(|i| matches!(i, Instr::Return(_))) {
        return Err(SqlError::new(codes::ER_SP_NORETURN, "No RETURN found in FUNCTION"));
    }
    Ok(c.program)
}

#[derive(Default)]
struct Scope {
    variables: Vec<(String, usize)>,
    conditions: Vec<(String, ConditionValue)>,
    cursors: Vec<(String, usize)>,
}

struct Label {
    name: String,
    /// Where ITERATE goes: `None` for a block (not a loop).
    start: Option<usize>,
    /// LEAVE jumps to patch with the label's end.
    leaves: Vec<usize>,
}

struct Compiler {
    program: Program,
    scopes: Vec<Scope>,
    labels: Vec<Label>,
}

/// Where a SQL statement may not go in a trigger or function.
fn forbidden_in_trigger_or_function(s: &ast::Statement) -> bool {
    use ast::Statement as S;
    matches!(
        s,
        S::Commit { .. }
            | S::Rollback { .. }
            | S::StartTransaction { .. }
            | S::CreateTable(_)
            | S::AlterTable(_)
            | S::Drop { .. }
            | S::CreateIndex(_)
            | S::Truncate(_)
            | S::CreateView(_)
            | S::RenameTable(_)
    )
}

/// Whether a statement sends rows to the client.
fn returns_rows(s: &ast::Statement) -> bool {
    matches!(
        s,
        ast::Statement::Query(_)
            | ast::Statement::ShowVariable { .. }
            | ast::Statement::ShowTables { .. }
            | ast::Statement::ShowColumns { .. }
            | ast::Statement::ExplainTable { .. }
            | ast::Statement::Explain { .. }
    )
}

impl Compiler {
    fn pc(&self) -> usize {
        self.program.instrs.len()
    }

    fn emit(&mut self, i: Instr) -> usize {
        self.program.instrs.push(i);
        self.pc() - 1
    }

    fn patch(&mut self, at: usize, to: usize) {
        match &mut self.program.instrs[at] {
            Instr::Jump(t) | Instr::JumpIfNot { to: t, .. } => *t = to,
            other => unreachable!("patching {other:?}"),
        }
    }

    fn slot(&mut self, name: &str, kind: SlotKind) -> usize {
        self.program.slots.push(Slot { name: name.to_owned(), kind });
        self.program.slots.len() - 1
    }

    fn trigger(&self) -> Option<(Timing, Event)> {
        match self.program.kind {
            Kind::Trigger { timing, event } => Some((timing, event)),
            _ => None,
        }
    }

    fn variable(&self, name: &str) -> Option<usize> {
        self.scopes.iter().rev().find_map(|s| s.variables.iter().rev().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, slot)| *slot))
    }

    fn condition(&self, name: &str) -> Result<ConditionValue> {
        self.scopes
            .iter()
            .rev()
            .find_map(|s| s.conditions.iter().rev().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.clone()))
            .ok_or_else(|| SqlError::new(codes::ER_SP_COND_MISMATCH, format!("Undefined CONDITION: {name}")))
    }

    fn cursor(&self, name: &str) -> Result<usize> {
        self.scopes
            .iter()
            .rev()
            .find_map(|s| s.cursors.iter().rev().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, c)| *c))
            .ok_or_else(|| SqlError::new(codes::ER_SP_CURSOR_MISMATCH, format!("Undefined CURSOR: {name}")))
    }

    /// The slot of `NEW.column` / `OLD.column` in a trigger (checked against its event).
    fn row_slot(&mut self, row: &str, column: &str, assigned: bool) -> Result<Option<usize>> {
        let Some((timing, event)) = self.trigger() else { return Ok(None) };
        let new = if row.eq_ignore_ascii_case("NEW") {
            true
        } else if row.eq_ignore_ascii_case("OLD") {
            false
        } else {
            return Ok(None);
        };
        if (new && event == Event::Delete) || (!new && event == Event::Insert) {
            return Err(SqlError::new(
                codes::ER_TRG_NO_SUCH_ROW_IN_TRG,
                format!("There is no {} row in on {} trigger", if new { "NEW" } else { "OLD" }, event.name()),
            ));
        }
        if assigned && !new {
            return Err(SqlError::new(codes::ER_TRG_CANT_CHANGE_ROW, "Updating of OLD row is not allowed in trigger"));
        }
        if assigned && timing == Timing::After {
            return Err(SqlError::new(codes::ER_TRG_CANT_CHANGE_ROW, "Updating of NEW row is not allowed in after trigger"));
        }
        let existing = self.program.row_slots().find(|(_, n, c)| *n == new && c.eq_ignore_ascii_case(column)).map(|(s, _, _)| s);
        Ok(Some(match existing {
            Some(s) => s,
            None => self.slot(&format!("{row}.{column}"), SlotKind::Row { new, column: column.to_owned() }),
        }))
    }

    /// Replaces the names of variables (and a trigger's NEW / OLD columns) in `v`'s
    /// expressions by their slots' placeholders.
    fn bind_names<V: ast::VisitMut>(&mut self, v: &mut V) -> Result<()> {
        let mut failed = None;
        let _ = ast::visit_expressions_mut(v, |e| {
            let slot = match e {
                Expr::Identifier(id) => self.variable(&id.value).map(Ok),
                Expr::CompoundIdentifier(parts) if parts.len() == 2 => self.row_slot(&parts[0].value, &parts[1].value, false).transpose(),
                _ => None,
            };
            match slot {
                Some(Ok(slot)) => *e = placeholder(slot),
                Some(Err(err)) => {
                    failed = Some(err);
                    return ControlFlow::Break(());
                }
                None => {}
            }
            ControlFlow::Continue(())
        });
        failed.map_or(Ok(()), Err)
    }

    fn expr(&mut self, e: &Expr) -> Result<Expr> {
        let mut e = e.clone();
        self.bind_names(&mut e)?;
        Ok(e)
    }

    fn statements(&mut self, body: &[Stmt]) -> Result<()> {
        for s in body {
            if matches!(s, Stmt::Declare { .. } | Stmt::Condition { .. } | Stmt::Cursor { .. } | Stmt::Handler { .. }) {
                return Err(SqlError::parse("DECLARE"));
            }
            self.statement(s)?;
        }
        Ok(())
    }

    fn statement(&mut self, s: &Stmt) -> Result<()> {
        use crate::compound::{STACK_GROWTH_BYTES, STACK_RED_ZONE_BYTES};
        stacker::maybe_grow(STACK_RED_ZONE_BYTES, STACK_GROWTH_BYTES, || self.statement_grown(s))
    }

    fn statement_grown(&mut self, s: &Stmt) -> Result<()> {
        match s {
            Stmt::Block { label, body } => self.block(label.as_ref(), body),
            Stmt::Declare { .. } | Stmt::Condition { .. } | Stmt::Cursor { .. } | Stmt::Handler { .. } => Err(SqlError::parse("DECLARE")),
            Stmt::Set(items) => items.iter().try_for_each(|item| self.set(item)),
            Stmt::If { branches, otherwise } => {
                let mut ends = Vec::new();
                let mut conditions = Vec::new();
                for (condition, body) in branches {
                    let condition = self.expr(condition)?;
                    conditions.push(self.arm(condition, body, &mut ends)?);
                }
                if let Some(body) = otherwise {
                    self.statements(body)?;
                }
                self.end_arms(ends, conditions);
                Ok(())
            }
            Stmt::Case { operand, whens, otherwise } => {
                let mut conditions = Vec::new();
                let operand = match operand {
                    Some(o) => {
                        let value = self.expr(o)?;
                        let slot = self.slot("case operand", SlotKind::Hidden);
                        conditions.push(self.emit(Instr::Set { slot, value }));
                        Some(slot)
                    }
                    None => None,
                };
                let mut ends = Vec::new();
                for (when, body) in whens {
                    let when = self.expr(when)?;
                    let condition = match operand {
                        Some(slot) => {
                            Expr::BinaryOp { left: Box::new(placeholder(slot)), op: ast::BinaryOperator::Eq, right: Box::new(Expr::Nested(Box::new(when))) }
                        }
                        None => when,
                    };
                    conditions.push(self.arm(condition, body, &mut ends)?);
                }
                match otherwise {
                    Some(body) => self.statements(body)?,
                    None => {
                        self.emit(Instr::Raise {
                            code: codes::ER_SP_CASE_NOT_FOUND.0,
                            state: codes::ER_SP_CASE_NOT_FOUND.1,
                            message: "Case not found for CASE statement".into(),
                        });
                    }
                }
                self.end_arms(ends, conditions);
                Ok(())
            }
            Stmt::Loop { label, body } => {
                let start = self.pc();
                self.open_label(label.as_ref(), Some(start))?;
                self.statements(body)?;
                self.emit(Instr::Jump(start));
                self.close_label(label.as_ref());
                Ok(())
            }
            Stmt::While { label, condition, body } => {
                let start = self.pc();
                self.open_label(label.as_ref(), Some(start))?;
                let condition = self.expr(condition)?;
                let exit = self.emit(Instr::JumpIfNot { condition, to: 0 });
                self.statements(body)?;
                self.emit(Instr::Jump(start));
                let end = self.pc();
                self.patch(exit, end);
                self.program.resume.insert(exit, end);
                self.close_label(label.as_ref());
                Ok(())
            }
            Stmt::Repeat { label, body, until } => {
                let start = self.pc();
                self.open_label(label.as_ref(), Some(start))?;
                self.statements(body)?;
                let condition = self.expr(until)?;
                self.emit(Instr::JumpIfNot { condition, to: start });
                self.close_label(label.as_ref());
                Ok(())
            }
            Stmt::Leave(name) => {
                let at = self.emit(Instr::Jump(0));
                let label = self.labels.iter_mut().rev().find(|l| l.name.eq_ignore_ascii_case(name));
                let label = label.ok_or_else(|| SqlError::new(codes::ER_SP_LILABEL_MISMATCH, format!("LEAVE with no matching label: {name}")))?;
                label.leaves.push(at);
                Ok(())
            }
            Stmt::Iterate(name) => {
                let start = self.labels.iter().rev().find(|l| l.name.eq_ignore_ascii_case(name)).and_then(|l| l.start);
                let start = start.ok_or_else(|| SqlError::new(codes::ER_SP_LILABEL_MISMATCH, format!("ITERATE with no matching label: {name}")))?;
                self.emit(Instr::Jump(start));
                Ok(())
            }
            Stmt::Return(e) => {
                if self.program.kind != Kind::Function {
                    return Err(SqlError::new(codes::ER_SP_BADRETURN, "RETURN is only allowed in a FUNCTION"));
                }
                let e = self.expr(e)?;
                self.emit(Instr::Return(e));
                Ok(())
            }
            Stmt::Open(name) | Stmt::Close(name) => {
                let c = self.cursor(name)?;
                self.emit(if matches!(s, Stmt::Open(_)) { Instr::Open(c) } else { Instr::Close(c) });
                Ok(())
            }
            Stmt::Fetch { cursor, into } => {
                let cursor = self.cursor(cursor)?;
                let into = into.iter().map(|n| self.variable(n).ok_or_else(|| undeclared(n))).collect::<Result<Vec<_>>>()?;
                self.emit(Instr::Fetch { cursor, into });
                Ok(())
            }
            Stmt::Signal { resignal, condition, items } => {
                let condition = match condition {
                    None => None,
                    Some(HandlerCondition::Value(v)) => Some(v.clone()),
                    Some(HandlerCondition::Name(n)) => match self.condition(n)? {
                        ConditionValue::Code(_) if !resignal => {
                            return Err(SqlError::new(codes::ER_SIGNAL_BAD_CONDITION_TYPE, "SIGNAL/RESIGNAL can only use a CONDITION defined with SQLSTATE"));
                        }
                        v => Some(v),
                    },
                    Some(_) => return Err(SqlError::parse("SIGNAL")),
                };
                let items = items.iter().map(|(n, e)| Ok((n.clone(), self.expr(e)?))).collect::<Result<Vec<_>>>()?;
                self.emit(Instr::Signal { resignal: *resignal, condition, items });
                Ok(())
            }
            Stmt::Sql(sql) => self.sql(sql),
        }
    }

    /// One arm of an IF or CASE: its condition's jump past it, its statements, and the jump
    /// to the statement's end (pushed on `ends`). Answers the condition's instruction.
    fn arm(&mut self, condition: Expr, body: &[Stmt], ends: &mut Vec<usize>) -> Result<usize> {
        let skip = self.emit(Instr::JumpIfNot { condition, to: 0 });
        self.statements(body)?;
        ends.push(self.emit(Instr::Jump(0)));
        let here = self.pc();
        self.patch(skip, here);
        Ok(skip)
    }

    /// The end of an IF or CASE: its arms' jumps land here, and a CONTINUE handler goes on
    /// here after one of its `conditions` fails.
    fn end_arms(&mut self, ends: Vec<usize>, conditions: Vec<usize>) {
        let end = self.pc();
        ends.into_iter().for_each(|j| self.patch(j, end));
        for c in conditions {
            self.program.resume.insert(c, end);
        }
    }

    fn open_label(&mut self, name: Option<&String>, start: Option<usize>) -> Result<()> {
        if let Some(name) = name {
            if self.labels.iter().any(|l| l.name.eq_ignore_ascii_case(name)) {
                return Err(SqlError::new(codes::ER_SP_LABEL_REDEFINE, format!("Redefining label {name}")));
            }
            self.labels.push(Label { name: name.clone(), start, leaves: Vec::new() });
        }
        Ok(())
    }

    fn close_label(&mut self, name: Option<&String>) {
        if name.is_some() {
            let label = self.labels.pop().expect("opened by open_label");
            let end = self.pc();
            label.leaves.into_iter().for_each(|j| self.patch(j, end));
        }
    }

    fn block(&mut self, label: Option<&String>, body: &[Stmt]) -> Result<()> {
        self.open_label(label, None)?;
        self.scopes.push(Scope::default());
        let depth = self.scopes.len();
        let declarations =
            body.iter().take_while(|s| matches!(s, Stmt::Declare { .. } | Stmt::Condition { .. } | Stmt::Cursor { .. } | Stmt::Handler { .. })).count();
        // (handler index, its body) of the block's handlers, bodies compiled after its statements.
        let mut handlers: Vec<(usize, &Stmt)> = Vec::new();
        let mut seen_cursor = false;
        for d in &body[..declarations] {
            match d {
                Stmt::Declare { names, ty, default } => {
                    if seen_cursor || !handlers.is_empty() {
                        return Err(SqlError::new(
                            codes::ER_SP_VARCOND_AFTER_CURSHNDLR,
                            "Variable or condition declaration after cursor or handler declaration",
                        ));
                    }
                    let default = default.as_ref().map(|e| self.expr(e)).transpose()?;
                    for name in names {
                        if self.scopes[depth - 1].variables.iter().any(|(n, _)| n.eq_ignore_ascii_case(name)) {
                            return Err(SqlError::new(codes::ER_SP_DUP_VAR, format!("Duplicate variable: {name}")));
                        }
                        let slot = self.slot(name, SlotKind::Variable(ty.clone()));
                        self.emit(Instr::Declare { slot, default: default.clone() });
                        self.scopes[depth - 1].variables.push((name.clone(), slot));
                    }
                }
                Stmt::Condition { name, value } => {
                    if seen_cursor || !handlers.is_empty() {
                        return Err(SqlError::new(
                            codes::ER_SP_VARCOND_AFTER_CURSHNDLR,
                            "Variable or condition declaration after cursor or handler declaration",
                        ));
                    }
                    if self.scopes[depth - 1].conditions.iter().any(|(n, _)| n.eq_ignore_ascii_case(name)) {
                        return Err(SqlError::new(codes::ER_SP_DUP_COND, format!("Duplicate condition: {name}")));
                    }
                    self.scopes[depth - 1].conditions.push((name.clone(), value.clone()));
                }
                Stmt::Cursor { name, query } => {
                    if !handlers.is_empty() {
                        return Err(SqlError::new(codes::ER_SP_CURSOR_AFTER_HANDLER, "Cursor declaration after handler declaration"));
                    }
                    if self.scopes[depth - 1].cursors.iter().any(|(n, _)| n.eq_ignore_ascii_case(name)) {
                        return Err(SqlError::new(codes::ER_SP_DUP_CURS, format!("Duplicate cursor: {name}")));
                    }
                    let Some(mut statement) = query.parsed.clone().filter(|s| matches!(s, ast::Statement::Query(_))) else {
                        return Err(SqlError::new(codes::ER_SP_BAD_CURSOR_QUERY, "Cursor statement must be a SELECT"));
                    };
                    if !query.into.is_empty() {
                        return Err(SqlError::new(codes::ER_SP_BAD_CURSOR_SELECT, "Cursor SELECT must not have INTO"));
                    }
                    self.bind_names(&mut statement)?;
                    self.program.cursors.push(crate::program::Cursor { name: name.clone(), query: Box::new(statement) });
                    let index = self.program.cursors.len() - 1;
                    self.scopes[depth - 1].cursors.push((name.clone(), index));
                    seen_cursor = true;
                }
                Stmt::Handler { exit, conditions, body } => {
                    let mut matchers = Vec::new();
                    for c in conditions {
                        let m = match c {
                            HandlerCondition::Value(ConditionValue::Code(n)) => Matcher::Code(*n),
                            HandlerCondition::Value(ConditionValue::SqlState(s)) => Matcher::SqlState(s.clone()),
                            HandlerCondition::Name(n) => match self.condition(n)? {
                                ConditionValue::Code(n) => Matcher::Code(n),
                                ConditionValue::SqlState(s) => Matcher::SqlState(s),
                            },
                            HandlerCondition::SqlWarning => Matcher::SqlWarning,
                            HandlerCondition::NotFound => Matcher::NotFound,
                            HandlerCondition::SqlException => Matcher::SqlException,
                        };
                        let duplicate = matchers.contains(&m) || handlers.iter().any(|(h, _)| self.program.handlers[*h].conditions.contains(&m));
                        if duplicate {
                            return Err(SqlError::new(codes::ER_SP_DUP_HANDLER, "Duplicate handler declared in the same block"));
                        }
                        matchers.push(m);
                    }
                    self.program.handlers.push(Handler { exit: *exit, conditions: matchers, scope: 0..0, entry: 0, exit_to: 0, depth });
                    handlers.push((self.program.handlers.len() - 1, body));
                }
                _ => unreachable!("counted as declarations"),
            }
        }
        let cursors: Vec<usize> = self.scopes[depth - 1].cursors.iter().map(|(_, c)| *c).collect();
        if !cursors.is_empty() {
            self.emit(Instr::ResetCursors(cursors));
        }
        let scope_start = self.pc();
        self.statements(&body[declarations..])?;
        if !handlers.is_empty() {
            let over = self.emit(Instr::Jump(0));
            let scope_end = self.pc() - 1;
            for (h, handler_body) in &handlers {
                self.program.handlers[*h].scope = scope_start..scope_end;
                self.program.handlers[*h].entry = self.pc();
                self.statement(handler_body)?;
                self.emit(Instr::HandlerEnd(*h));
            }
            let end = self.pc();
            self.patch(over, end);
            for (h, _) in &handlers {
                self.program.handlers[*h].exit_to = end;
            }
        }
        self.scopes.pop();
        self.close_label(label);
        Ok(())
    }

    fn set(&mut self, item: &SetItem) -> Result<()> {
        let slot = match item.name.as_deref() {
            Some([name]) => self.variable(name),
            Some([row, column]) => self.row_slot(row, column, true)?,
            _ => None,
        };
        match slot {
            Some(slot) => {
                let value = self.expr(&item.value)?;
                self.emit(Instr::Set { slot, value });
                Ok(())
            }
            // Not a local: a user or system variable, set by a SET statement of its own.
            None => {
                let sql = crate::compound::parse_sql(&format!("SET {} = {}", item.target_text, item.value_text))?;
                self.sql(&sql)
            }
        }
    }

    fn sql(&mut self, sql: &Sql) -> Result<()> {
        let limited = matches!(self.program.kind, Kind::Trigger { .. } | Kind::Function);
        let Some(mut statement) = sql.parsed.clone() else {
            if limited {
                return Err(self.not_allowed(&sql.text));
            }
            self.emit(Instr::Text(sql.text.clone()));
            return Ok(());
        };
        if limited && forbidden_in_trigger_or_function(&statement) {
            return Err(SqlError::new(codes::ER_COMMIT_NOT_ALLOWED_IN_SF_OR_TRG, "Explicit or implicit commit is not allowed in stored function or trigger."));
        }
        if limited && sql.into.is_empty() && returns_rows(&statement) {
            return Err(SqlError::new(
                codes::ER_SP_NO_RETSET,
                format!("Not allowed to return a result set from a {}", if self.trigger().is_some() { "trigger" } else { "function" }),
            ));
        }
        self.bind_names(&mut statement)?;
        let mut into = Vec::new();
        for t in &sql.into {
            into.push(match t {
                IntoTarget::User(name) => Target::User(name.clone()),
                IntoTarget::Name(name) => Target::Slot(match name.split_once('.') {
                    Some((row, column)) => self.row_slot(row, column, true)?.ok_or_else(|| undeclared(name))?,
                    None => self.variable(name).ok_or_else(|| undeclared(name))?,
                }),
            });
        }
        self.emit(Instr::Sql { statement: Box::new(statement), text: sql.text.clone(), into });
        Ok(())
    }

    fn not_allowed(&self, text: &str) -> SqlError {
        let first = crate::words::Words::new(text).take(2).collect::<Vec<_>>().join(" ").to_ascii_uppercase();
        if matches!(
            first.split(' ').next(),
            Some("COMMIT" | "ROLLBACK" | "START" | "CREATE" | "ALTER" | "DROP" | "GRANT" | "REVOKE" | "LOCK" | "UNLOCK" | "FLUSH")
        ) {
            return SqlError::new(codes::ER_COMMIT_NOT_ALLOWED_IN_SF_OR_TRG, "Explicit or implicit commit is not allowed in stored function or trigger.");
        }
        if first.starts_with("SHOW") || first.starts_with("DESC") || first.starts_with("EXPLAIN") || first.starts_with("CALL") {
            return SqlError::new(
                codes::ER_SP_NO_RETSET,
                format!("Not allowed to return a result set from a {}", if self.trigger().is_some() { "trigger" } else { "function" }),
            );
        }
        SqlError::new(codes::ER_SP_BADSTATEMENT, format!("{first} is not allowed in stored function or trigger"))
    }
}

fn undeclared(name: &str) -> SqlError {
    SqlError::new(codes::ER_SP_UNDECLARED_VAR, format!("Undeclared variable: {name}"))
}

/// The placeholder of slot `slot` (`?slot`, which the binder reads as parameter `slot`).
#[must_use]
pub fn placeholder(slot: usize) -> Expr {
    Expr::Value(ast::Value::Placeholder(format!("?{slot}")).with_empty_span())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compound::parse_body;

    fn compile_text(kind: Kind, body: &str) -> Result<Program> {
        compile(kind, &[], &parse_body(body)?)
    }

    #[test]
    fn names_become_slots_and_loops_jumps() {
        let p = compile_text(
            Kind::Procedure,
            "BEGIN DECLARE i INT DEFAULT 0; w: WHILE i < 3 DO SET i = i + 1; IF i = 2 THEN LEAVE w; END IF; END WHILE; SELECT i, a FROM t; END",
        )
        .unwrap();
        assert_eq!(p.slots.len(), 1);
        let Instr::Sql { statement, .. } = p.instrs.last().unwrap() else { panic!("{:?}", p.instrs) };
        assert_eq!(statement.to_string(), "SELECT ?0, a FROM t");
        // Declare, JumpIfNot, Set, JumpIfNot, Jump (LEAVE), Jump, Jump (loop), Sql.
        assert!(matches!(p.instrs[1], Instr::JumpIfNot { to: 7, .. }), "{:?}", p.instrs);
        assert!(matches!(p.instrs[4], Instr::Jump(7)), "{:?}", p.instrs);
    }

    #[test]
    fn handlers_cover_their_block_after_them() {
        let p = compile_text(Kind::Procedure, "BEGIN DECLARE x INT; DECLARE CONTINUE HANDLER FOR 1062 SET x = 1; INSERT INTO t VALUES (1); END").unwrap();
        let h = &p.handlers[0];
        assert_eq!(h.scope, 1..2);
        assert!(matches!(p.instrs[h.entry], Instr::Set { slot: 0, .. }));
        assert!(matches!(p.instrs[h.entry + 1], Instr::HandlerEnd(0)));
        assert_eq!(h.exit_to, p.instrs.len());
    }

    #[test]
    fn a_trigger_reads_its_rows_as_its_event_has_them() {
        let before_update = Kind::Trigger { timing: Timing::Before, event: Event::Update };
        let p = compile_text(before_update, "SET NEW.a = OLD.a + NEW.b").unwrap();
        assert_eq!(p.row_slots().count(), 3);
        assert!(p.sets_new_row());
        let code = |kind, body| compile_text(kind, body).unwrap_err().code;
        assert_eq!(code(Kind::Trigger { timing: Timing::After, event: Event::Update }, "SET NEW.a = 1"), 1362);
        assert_eq!(code(before_update, "SET OLD.a = 1"), 1362);
        assert_eq!(code(Kind::Trigger { timing: Timing::Before, event: Event::Insert }, "SET @x = OLD.a"), 1363);
        assert_eq!(code(Kind::Trigger { timing: Timing::Before, event: Event::Delete }, "SET @x = NEW.a"), 1363);
        assert_eq!(code(before_update, "SELECT 1"), 1415);
        assert_eq!(code(before_update, "COMMIT"), 1422);
        assert_eq!(code(before_update, "RETURN 1"), 1313);
        assert_eq!(code(Kind::Procedure, "BEGIN DECLARE a INT; DECLARE a INT; END"), 1331);
        assert_eq!(code(Kind::Procedure, "BEGIN DECLARE CONTINUE HANDLER FOR 1 BEGIN END; DECLARE a INT; END"), 1337);
        assert_eq!(code(Kind::Procedure, "BEGIN LEAVE x; END"), 1308);
        assert_eq!(code(Kind::Procedure, "BEGIN FETCH c INTO a; END"), 1324);
        assert_eq!(code(Kind::Procedure, "BEGIN SELECT 1 INTO nope; END"), 1327);
    }
}
