//! Bound expressions and their evaluation.
//!
//! The binder (`bind.rs`) turns parser expressions into [`Expr`] trees whose column
//! references are positions in the row being evaluated, so evaluation does no
//! name lookups. Aggregates appear as [`Expr::Agg`] slots filled by the grouping
//! step; correlated subqueries reach outer rows through [`Expr::Outer`].

use std::cell::RefCell;
use std::cmp::Ordering;
use std::collections::HashSet;
use std::rc::Rc;

use quill_storage::{Collation, Value};

use crate::functions::{self, Func};
use crate::query::{Env, SelectPlan};
use quill_sql_types::error::{Result, SqlError, codes};
use quill_sql_types::ops::{self, Arith};
use quill_sql_types::types::SqlType;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    /// `<=>`: NULL-safe equality.
    NullSafeEq,
}

impl CmpOp {
    fn holds(self, o: Ordering) -> bool {
        match self {
            CmpOp::Eq | CmpOp::NullSafeEq => o == Ordering::Equal,
            CmpOp::Ne => o != Ordering::Equal,
            CmpOp::Lt => o == Ordering::Less,
            CmpOp::Le => o != Ordering::Greater,
            CmpOp::Gt => o == Ordering::Greater,
            CmpOp::Ge => o != Ordering::Less,
        }
    }

    /// The operator with its operands swapped (`a < b` is `b > a`).
    #[must_use]
    pub fn flip(self) -> CmpOp {
        match self {
            CmpOp::Lt => CmpOp::Gt,
            CmpOp::Le => CmpOp::Ge,
            CmpOp::Gt => CmpOp::Lt,
            CmpOp::Ge => CmpOp::Le,
            other => other,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AggFunc {
    Count,
    CountStar,
    Sum,
    Avg,
    Min,
    Max,
    GroupConcat,
    BitAnd,
    BitOr,
    BitXor,
    /// VAR_POP / VARIANCE, VAR_SAMP, STDDEV_POP / STDDEV / STD and STDDEV_SAMP: `sample`
    /// divides by n - 1 (NULL for one row), `root` takes the square root.
    Variance {
        sample: bool,
        root: bool,
    },
    /// JSON_ARRAYAGG(v): the values as a JSON array (NULL as `null`); its argument is made
    /// JSON by the binder.
    JsonArrayAgg,
    /// JSON_OBJECTAGG(k, v): an object of the pairs (the last value of a key kept); its
    /// argument is the binder's JSON_OBJECT(k, v) of each row.
    JsonObjectAgg,
}

#[derive(Debug, Clone)]
pub struct AggSpec {
    pub func: AggFunc,
    pub arg: Option<Expr>,
    pub distinct: bool,
    pub ty: SqlType,
    pub collation: Collation,
}

/// How a subquery's result is used.
#[derive(Debug, Clone)]
pub enum SubqueryUse {
    Scalar,
    Exists,
    In {
        left: Box<Expr>,
        collation: Collation,
    },
    /// `left op ANY (subquery)` (`all` false; SOME is ANY) or `left op ALL (subquery)`: true
    /// when some row's comparison is (ANY) or every row's is (ALL), unknown when none decides
    /// and one is unknown. An empty subquery makes ANY false and ALL true.
    Quantified {
        left: Box<Expr>,
        op: CmpOp,
        all: bool,
        collation: Collation,
    },
}

/// A subquery with a per-statement cache for uncorrelated ones.
#[derive(Debug)]
pub struct Subquery {
    pub plan: SelectPlan,
    pub correlated: bool,
    pub cache: RefCell<Option<Rc<Vec<Vec<Value>>>>>,
}

/// A call of a stored function (`CREATE FUNCTION`): run through
/// [`crate::system_tables::SystemTables::call_function`], the seam to the statement layer
/// that runs programs.
#[derive(Debug, Clone)]
pub struct StoredCall {
    pub routine: std::sync::Arc<quill_sql_context::program_meta::RoutineMeta>,
    pub args: Vec<Expr>,
    /// Its RETURNS type.
    pub ty: SqlType,
}

#[derive(Debug, Clone)]
pub enum Expr {
    Const(Value),
    /// A stored function's call.
    Stored(Box<StoredCall>),
    Column(usize),
    /// A column of an enclosing query's row: `(levels up, starting at 0, position)`.
    Outer(usize, usize),
    Param(usize),
    Not(Box<Expr>),
    Neg(Box<Expr>),
    BitNot(Box<Expr>),
    Arith(Arith, Box<Expr>, Box<Expr>),
    Bit(char, Box<Expr>, Box<Expr>),
    Cmp(CmpOp, Box<Expr>, Box<Expr>, Collation),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Xor(Box<Expr>, Box<Expr>),
    IsNull(Box<Expr>, bool),
    IsBool(Box<Expr>, bool, bool),
    InList {
        expr: Box<Expr>,
        list: Vec<Expr>,
        negated: bool,
        collation: Collation,
        /// The list indexed for lookup, when it is long and all constants.
        set: Option<Rc<InSet>>,
    },
    Between {
        expr: Box<Expr>,
        low: Box<Expr>,
        high: Box<Expr>,
        negated: bool,
        collation: Collation,
    },
    Like {
        expr: Box<Expr>,
        pattern: Box<Expr>,
        escape: char,
        negated: bool,
        collation: Collation,
    },
    Case {
        operand: Option<Box<Expr>>,
        whens: Vec<(Expr, Expr)>,
        otherwise: Option<Box<Expr>>,
        collation: Collation,
    },
    Func(Func, Vec<Expr>),
    Agg(usize),
    /// A window function's value for the row (`window`): slot `.0` of the row's window
    /// values, of type `.1`.
    Window(usize, SqlType),
    Subquery(Rc<Subquery>, SubqueryUse, bool),
    Cast(Box<Expr>, SqlType),
}

/// Lists at least this long, of constants only, are looked up in an [`InSet`].
pub const IN_SET_ITEMS_MIN: usize = 16;

/// A long `IN (...)` list of constants indexed for lookup, giving exactly what comparing
/// the probe with each item in turn gives: integer items by value, string items by their
/// weight under the list's collation (equal weights exactly when the strings compare
/// equal); a probe of another kind than an item is compared with it one by one
/// (`5 IN ('5', ...)` compares as numbers).
#[derive(Debug)]
pub struct InSet {
    integers: HashSet<i128>,
    weights: HashSet<String>,
    /// Items that are not integers (for a probe that is one).
    not_integers: Vec<Value>,
    /// Items that are not strings (for a probe that is one).
    not_strings: Vec<Value>,
    /// Every item that is not NULL (for a probe of any other kind).
    all: Vec<Value>,
    has_null: bool,
    collation: Collation,
}

impl InSet {
    /// The set of `items`, compared under `collation`.
    #[must_use]
    pub fn new(items: &[Value], collation: Collation) -> InSet {
        let mut set = InSet {
            integers: HashSet::new(),
            weights: HashSet::new(),
            not_integers: Vec::new(),
            not_strings: Vec::new(),
            all: Vec::new(),
            has_null: false,
            collation,
        };
        for v in items {
            match v {
                Value::Null => set.has_null = true,
                Value::Int(_) | Value::UInt(_) => {
                    set.integers.insert(ops::to_i128(v));
                    set.not_strings.push(v.clone());
                }
                Value::Str(s) => {
                    set.weights.insert(collation.weight(s));
                    set.not_integers.push(v.clone());
                }
                _ => {
                    set.not_integers.push(v.clone());
                    set.not_strings.push(v.clone());
                }
            }
            if !v.is_null() {
                set.all.push(v.clone());
            }
        }
        set
    }

    /// Whether `x` (not NULL) equals an item: `Some(true)`, `Some(false)`, or `None` when
    /// it equals none but a comparison was unknown (a NULL item).
    #[must_use]
    pub fn contains(&self, x: &Value) -> Option<bool> {
        let (hit, rest) = match x {
            Value::Int(_) | Value::UInt(_) => (self.integers.contains(&ops::to_i128(x)), &self.not_integers),
            Value::Str(s) => (self.weights.contains(&self.collation.weight(s)), &self.not_strings),
            _ => (false, &self.all),
        };
        if hit {
            return Some(true);
        }
        let mut unknown = self.has_null;
        for y in rest {
            match ops::compare(x, y, self.collation) {
                Some(Ordering::Equal) => return Some(true),
                None => unknown = true,
                _ => {}
            }
        }
        if unknown { None } else { Some(false) }
    }
}

/// The row an expression is evaluated against, with the rows of enclosing queries.
#[derive(Clone, Copy)]
pub struct RowCtx<'a> {
    pub row: &'a [Value],
    pub aggs: &'a [Value],
    /// The row's window function values, once computed (`window`).
    pub windows: &'a [Value],
    pub parent: Option<&'a RowCtx<'a>>,
}

impl<'a> RowCtx<'a> {
    #[must_use]
    pub fn new(row: &'a [Value]) -> RowCtx<'a> {
        RowCtx { row, aggs: &[], windows: &[], parent: None }
    }
}

impl Expr {
    /// `expr [NOT] IN (list)`, indexed when the list is long and all constants.
    #[must_use]
    pub fn in_list(expr: Expr, list: Vec<Expr>, negated: bool, collation: Collation) -> Expr {
        let set = (list.len() >= IN_SET_ITEMS_MIN)
            .then(|| list.iter().map(|e| e.constant().cloned()).collect::<Option<Vec<Value>>>())
            .flatten()
            .map(|items| Rc::new(InSet::new(&items, collation)));
        Expr::InList { expr: Box::new(expr), list, negated, collation, set }
    }

    #[must_use]
    pub fn constant(&self) -> Option<&Value> {
        match self {
            Expr::Const(v) => Some(v),
            _ => None,
        }
    }

    /// Whether the expression is a comparison or a logical operation: a truth value (1, 0 or
    /// NULL), typed INT(1), and `true` / `false` where a JSON function takes it.
    #[must_use]
    pub fn is_truth_value(&self) -> bool {
        matches!(
            self,
            Expr::Cmp(..)
                | Expr::And(..)
                | Expr::Or(..)
                | Expr::Xor(..)
                | Expr::Not(_)
                | Expr::IsNull(..)
                | Expr::IsBool(..)
                | Expr::InList { .. }
                | Expr::Between { .. }
                | Expr::Like { .. }
        )
    }

    /// Does the expression read any column of the current row at or past `from`?
    /// (Used to decide whether a value can be computed before a table is read.)
    #[must_use]
    pub fn uses_columns_from(&self, from: usize) -> bool {
        let mut found = false;
        self.walk(&mut |e| match e {
            Expr::Column(i) if *i >= from => found = true,
            Expr::Agg(_) | Expr::Window(..) => found = true,
            Expr::Subquery(s, _, _) if s.correlated => found = true,
            Expr::Func(f, _) if !f.is_deterministic() => found = true,
            Expr::Stored(_) => found = true,
            _ => {}
        });
        found
    }

    /// Visit every node.
    pub fn walk(&self, f: &mut dyn FnMut(&Expr)) {
        f(self);
        match self {
            Expr::Not(a) | Expr::Neg(a) | Expr::BitNot(a) | Expr::IsNull(a, _) | Expr::IsBool(a, _, _) | Expr::Cast(a, _) => a.walk(f),
            Expr::Arith(_, a, b) | Expr::Bit(_, a, b) | Expr::Cmp(_, a, b, _) | Expr::And(a, b) | Expr::Or(a, b) | Expr::Xor(a, b) => {
                a.walk(f);
                b.walk(f);
            }
            Expr::InList { expr, list, .. } => {
                expr.walk(f);
                list.iter().for_each(|e| e.walk(f));
            }
            Expr::Between { expr, low, high, .. } => {
                expr.walk(f);
                low.walk(f);
                high.walk(f);
            }
            Expr::Like { expr, pattern, .. } => {
                expr.walk(f);
                pattern.walk(f);
            }
            Expr::Case { operand, whens, otherwise, .. } => {
                if let Some(o) = operand {
                    o.walk(f);
                }
                for (w, t) in whens {
                    w.walk(f);
                    t.walk(f);
                }
                if let Some(o) = otherwise {
                    o.walk(f);
                }
            }
            Expr::Func(_, args) => args.iter().for_each(|e| e.walk(f)),
            Expr::Stored(call) => call.args.iter().for_each(|e| e.walk(f)),
            Expr::Subquery(_, SubqueryUse::In { left, .. } | SubqueryUse::Quantified { left, .. }, _) => left.walk(f),
            _ => {}
        }
    }

    /// Split a conjunction into its terms.
    #[must_use]
    pub fn conjuncts(&self) -> Vec<&Expr> {
        match self {
            Expr::And(a, b) => {
                let mut v = a.conjuncts();
                v.extend(b.conjuncts());
                v
            }
            other => vec![other],
        }
    }

    /// Evaluate against a row.
    ///
    /// # Errors
    /// Arithmetic range errors, subquery cardinality errors, function errors.
    pub fn eval(&self, env: &Env<'_>, cx: &RowCtx<'_>) -> Result<Value> {
        Ok(match self {
            Expr::Const(v) => v.clone(),
            Expr::Column(i) => cx.row.get(*i).cloned().unwrap_or(Value::Null),
            Expr::Outer(level, i) => {
                let mut p = cx.parent;
                for _ in 0..*level {
                    p = p.and_then(|c| c.parent);
                }
                p.and_then(|c| c.row.get(*i)).cloned().unwrap_or(Value::Null)
            }
            Expr::Param(i) => env.params.get(*i).cloned().unwrap_or(Value::Null),
            Expr::Not(a) => ops::bool_value(ops::truth(&a.eval(env, cx)?).map(|b| !b)),
            Expr::Neg(a) => ops::negate(&a.eval(env, cx)?)?,
            Expr::BitNot(a) => match a.eval(env, cx)? {
                Value::Null => Value::Null,
                v => Value::UInt(!(ops::to_i128(&v) as u64)),
            },
            Expr::Arith(op, a, b) => {
                let (x, y) = (a.eval(env, cx)?, b.eval(env, cx)?);
                if env.div_zero_is_error && matches!(op, Arith::Div | Arith::IntDiv | Arith::Mod) && !x.is_null() && !y.is_null() && ops::to_f64(&y) == 0.0 {
                    return Err(SqlError::new(codes::ER_DIVISION_BY_ZERO, "Division by 0"));
                }
                ops::arith(*op, &x, &y)?
            }
            Expr::Bit(op, a, b) => {
                let (x, y) = (a.eval(env, cx)?, b.eval(env, cx)?);
                if x.is_null() || y.is_null() {
                    Value::Null
                } else {
                    let (x, y) = (ops::to_i128(&x) as u64, ops::to_i128(&y) as u64);
                    Value::UInt(match op {
                        '&' => x & y,
                        '|' => x | y,
                        '^' => x ^ y,
                        '<' => x.checked_shl(y as u32).unwrap_or(0),
                        _ => x.checked_shr(y as u32).unwrap_or(0),
                    })
                }
            }
            Expr::Cmp(op, a, b, coll) => {
                let (x, y) = (a.eval(env, cx)?, b.eval(env, cx)?);
                if *op == CmpOp::NullSafeEq {
                    Value::Int(i64::from(match (x.is_null(), y.is_null()) {
                        (true, true) => true,
                        (false, false) => ops::compare(&x, &y, *coll) == Some(Ordering::Equal),
                        _ => false,
                    }))
                } else {
                    ops::bool_value(ops::compare(&x, &y, *coll).map(|o| op.holds(o)))
                }
            }
            Expr::And(a, b) => {
                let x = ops::truth(&a.eval(env, cx)?);
                if x == Some(false) {
                    return Ok(Value::Int(0));
                }
                let y = ops::truth(&b.eval(env, cx)?);
                ops::bool_value(match (x, y) {
                    (_, Some(false)) => Some(false),
                    (Some(true), Some(true)) => Some(true),
                    _ => None,
                })
            }
            Expr::Or(a, b) => {
                let x = ops::truth(&a.eval(env, cx)?);
                if x == Some(true) {
                    return Ok(Value::Int(1));
                }
                let y = ops::truth(&b.eval(env, cx)?);
                ops::bool_value(match (x, y) {
                    (_, Some(true)) => Some(true),
                    (Some(false), Some(false)) => Some(false),
                    _ => None,
                })
            }
            Expr::Xor(a, b) => {
                let (x, y) = (ops::truth(&a.eval(env, cx)?), ops::truth(&b.eval(env, cx)?));
                ops::bool_value(x.zip(y).map(|(x, y)| x ^ y))
            }
            Expr::IsNull(a, negated) => Value::Int(i64::from(a.eval(env, cx)?.is_null() != *negated)),
            Expr::IsBool(a, want, negated) => {
                let t = ops::truth(&a.eval(env, cx)?);
                Value::Int(i64::from((t == Some(*want)) != *negated))
            }
            Expr::InList { expr, list, negated, collation, set } => {
                let x = expr.eval(env, cx)?;
                if x.is_null() {
                    return Ok(Value::Null);
                }
                if let Some(set) = set {
                    return Ok(ops::bool_value(set.contains(&x).map(|found| found != *negated)));
                }
                let mut saw_null = false;
                for item in list {
                    let y = item.eval(env, cx)?;
                    match ops::compare(&x, &y, *collation) {
                        Some(Ordering::Equal) => return Ok(Value::Int(i64::from(!*negated))),
                        None => saw_null = true,
                        _ => {}
                    }
                }
                if saw_null { Value::Null } else { Value::Int(i64::from(*negated)) }
            }
            Expr::Between { expr, low, high, negated, collation } => {
                let x = expr.eval(env, cx)?;
                let (lo, hi) = (low.eval(env, cx)?, high.eval(env, cx)?);
                let a = ops::compare(&x, &lo, *collation).map(|o| o != Ordering::Less);
                let b = ops::compare(&x, &hi, *collation).map(|o| o != Ordering::Greater);
                let r = match (a, b) {
                    (Some(false), _) | (_, Some(false)) => Some(false),
                    (Some(true), Some(true)) => Some(true),
                    _ => None,
                };
                ops::bool_value(r.map(|r| r != *negated))
            }
            Expr::Like { expr, pattern, escape, negated, collation } => {
                let (x, p) = (expr.eval(env, cx)?, pattern.eval(env, cx)?);
                if x.is_null() || p.is_null() {
                    return Ok(Value::Null);
                }
                let m = quill_sql_types::like::like(&ops::to_string_lossy(&x), &ops::to_string_lossy(&p), *escape, *collation);
                Value::Int(i64::from(m != *negated))
            }
            Expr::Case { operand, whens, otherwise, collation } => {
                let base = match operand {
                    Some(o) => Some(o.eval(env, cx)?),
                    None => None,
                };
                for (w, then) in whens {
                    let hit = match &base {
                        Some(b) => ops::compare(b, &w.eval(env, cx)?, *collation) == Some(Ordering::Equal),
                        None => ops::truth(&w.eval(env, cx)?) == Some(true),
                    };
                    if hit {
                        return then.eval(env, cx);
                    }
                }
                match otherwise {
                    Some(o) => o.eval(env, cx)?,
                    None => Value::Null,
                }
            }
            Expr::Func(f, args) => functions::call(*f, args, env, cx)?,
            Expr::Stored(call) => {
                let args = call.args.iter().map(|a| a.eval(env, cx)).collect::<Result<Vec<_>>>()?;
                env.system_tables.call_function(env, &call.routine, args)?
            }
            Expr::Agg(slot) => cx.aggs.get(*slot).cloned().unwrap_or(Value::Null),
            Expr::Window(slot, _) => cx.windows.get(*slot).cloned().unwrap_or(Value::Null),
            Expr::Subquery(sq, usage, negated) => eval_subquery(sq, usage, *negated, env, cx)?,
            Expr::Cast(a, ty) => functions::cast_in(a.eval(env, cx)?, ty, env.info)?,
        })
    }
}

fn eval_subquery(sq: &Rc<Subquery>, usage: &SubqueryUse, negated: bool, env: &Env<'_>, cx: &RowCtx<'_>) -> Result<Value> {
    let rows = if sq.correlated {
        Rc::new(crate::query::run_select(&sq.plan, env, Some(cx))?.rows)
    } else {
        let cached = sq.cache.borrow().clone();
        match cached {
            Some(r) => r,
            None => {
                let r = Rc::new(crate::query::run_select(&sq.plan, env, Some(cx))?.rows);
                *sq.cache.borrow_mut() = Some(r.clone());
                r
            }
        }
    };
    Ok(match usage {
        SubqueryUse::Exists => Value::Int(i64::from(rows.is_empty() == negated)),
        SubqueryUse::Scalar => match rows.len() {
            0 => Value::Null,
            1 => rows[0].first().cloned().unwrap_or(Value::Null),
            _ => return Err(SqlError::new(codes::ER_SUBQUERY_NO_1_ROW, "Subquery returns more than 1 row")),
        },
        SubqueryUse::In { left, collation } => {
            let x = left.eval(env, cx)?;
            if x.is_null() {
                return Ok(if rows.is_empty() { Value::Int(i64::from(negated)) } else { Value::Null });
            }
            let mut saw_null = false;
            for r in rows.iter() {
                match ops::compare(&x, &r[0], *collation) {
                    Some(Ordering::Equal) => return Ok(Value::Int(i64::from(!negated))),
                    None => saw_null = true,
                    _ => {}
                }
            }
            if saw_null { Value::Null } else { Value::Int(i64::from(negated)) }
        }
        SubqueryUse::Quantified { left, op, all, collation } => {
            let x = left.eval(env, cx)?;
            let mut unknown = false;
            for r in rows.iter() {
                match ops::compare(&x, &r[0], *collation).map(|o| op.holds(o)) {
                    // ANY is decided by a true comparison, ALL by a false one.
                    Some(holds) if holds != *all => return Ok(Value::Int(i64::from(holds))),
                    None => unknown = true,
                    Some(_) => {}
                }
            }
            if unknown { Value::Null } else { Value::Int(i64::from(*all)) }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use quill_storage::Decimal;

    /// What comparing `x` with each item in turn gives (MySQL's definition of IN).
    fn linear(x: &Value, items: &[Value], collation: Collation) -> Option<bool> {
        let mut unknown = false;
        for y in items {
            match ops::compare(x, y, collation) {
                Some(Ordering::Equal) => return Some(true),
                None => unknown = true,
                _ => {}
            }
        }
        if unknown { None } else { Some(false) }
    }

    #[test]
    fn in_set_lookup_agrees_with_comparing_item_by_item() {
        let mut state = 0x1234_5678_9ABC_DEF1u64;
        let mut next = move |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        let words = ["a", "A", "a ", "b", "é", "E", "5", " 5", "5abc", "", "x"];
        let value = |next: &mut dyn FnMut(u64) -> u64| -> Value {
            match next(8) {
                0 => Value::Null,
                1 | 2 => Value::Int(i64::try_from(next(12)).unwrap() - 3),
                3 => Value::UInt(next(12)),
                4 => Value::Decimal(format!("{}.{}", next(9), next(3) * 5).parse::<Decimal>().unwrap()),
                5 => Value::Double(f64::from(u32::try_from(next(9)).unwrap()) / 2.0),
                _ => Value::Str(words[usize::try_from(next(words.len() as u64)).unwrap()].to_owned()),
            }
        };
        for collation in [Collation::Utf8mb4AiCi, Collation::Utf8mb4GeneralCi, Collation::Utf8mb4Bin] {
            for _ in 0..300 {
                let n = IN_SET_ITEMS_MIN + usize::try_from(next(20)).unwrap();
                let items: Vec<Value> = (0..n).map(|_| value(&mut next)).collect();
                let set = InSet::new(&items, collation);
                for _ in 0..30 {
                    let x = value(&mut next);
                    if x.is_null() {
                        continue;
                    }
                    assert_eq!(set.contains(&x), linear(&x, &items, collation), "{x:?} IN {items:?} under {collation:?}");
                }
            }
        }
    }
}
