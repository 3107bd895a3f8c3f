//! The binder: parser expressions to [`Expr`] trees over a [`Scope`].
//!
//! Names resolve innermost scope first, then enclosing queries' scopes (making the
//! subquery correlated). Aggregate calls become [`Expr::Agg`] slots when the
//! clause allows them; system variables and user variables are read once, at bind
//! time, as constants (each statement is bound afresh).

use std::cell::RefCell;
use std::rc::Rc;

use quill_storage::{Collation, Value};
use sqlparser::ast::{self, BinaryOperator, UnaryOperator};

use crate::expr::{AggSpec, CmpOp, Expr, Subquery, SubqueryUse};
use crate::functions::{Func, Unit};
use crate::query::{self, Env};
use crate::window::WindowSpec;
use quill_sql_types::error::{Result, SqlError, codes};
use quill_sql_types::ops::Arith;
use quill_sql_types::types::SqlType;

mod calls;
pub use calls::is_builtin_function;
mod typing;

pub use typing::{never_null, parse_number_literal, type_of};

/// The table name a statement's row variables have in a binding scope: a name no SQL text
/// can spell, so `@name` (and nothing else) reaches them (`Binder::bind`; `LOAD DATA ... SET` binds them so).
pub const USER_VARIABLES: &str = "\u{0}user variables";

/// One column a name can resolve to.
#[derive(Debug, Clone)]
pub struct ScopeColumn {
    /// The table's alias (or name) in this query.
    pub table: String,
    pub db: String,
    pub org_table: String,
    pub name: String,
    pub ty: SqlType,
    pub nullable: bool,
    /// The right-hand copy of a `USING` column: reachable qualified, not by `*`.
    pub hidden: bool,
    /// Column flags for result metadata (primary key, unique, auto-increment...).
    pub flags: u16,
}

impl ScopeColumn {
    /// A column of computed rows (a derived table, a SHOW result): no base table,
    /// nullable, no key flags.
    #[must_use]
    pub fn computed(table: &str, name: &str, ty: SqlType) -> ScopeColumn {
        ScopeColumn { table: table.to_owned(), db: String::new(), org_table: String::new(), name: name.to_owned(), ty, nullable: true, hidden: false, flags: 0 }
    }
}

#[derive(Debug, Clone, Default)]
pub struct Scope {
    pub columns: Vec<ScopeColumn>,
}

impl Scope {
    /// Find `name` (optionally qualified by table, and database).
    ///
    /// # Errors
    /// 1052 when an unqualified name matches columns of two tables.
    pub fn resolve(&self, db: Option<&str>, table: Option<&str>, name: &str, clause: &str) -> Result<Option<usize>> {
        let mut found: Option<usize> = None;
        for (i, c) in self.columns.iter().enumerate() {
            if !c.name.eq_ignore_ascii_case(name) {
                continue;
            }
            if let Some(t) = table
                && c.table != t
            {
                continue;
            }
            if let Some(d) = db
                && c.db != d
            {
                continue;
            }
            if table.is_none() && c.hidden {
                continue;
            }
            if found.is_some() {
                return Err(SqlError::new(codes::ER_NON_UNIQ_ERROR, format!("Column '{name}' in {clause} is ambiguous")));
            }
            found = Some(i);
        }
        Ok(found)
    }
}

/// Binds expressions of one query block.
pub struct Binder<'a, 'e> {
    pub env: &'a Env<'e>,
    pub scope: &'a Scope,
    /// Enclosing queries' scopes, innermost first.
    pub outer: &'a [&'a Scope],
    /// `Some` where aggregate functions are allowed; collects their specs.
    pub aggs: Option<&'a RefCell<Vec<AggSpec>>>,
    /// Select-list aliases HAVING and ORDER BY may name.
    pub aliases: &'a [(String, Expr, SqlType)],
    pub clause: &'static str,
    /// Set when a name resolved to an enclosing scope.
    pub correlated: std::cell::Cell<bool>,
    /// In `ON DUPLICATE KEY UPDATE`: where the proposed row starts, for `VALUES(col)`.
    pub values_offset: Option<usize>,
    /// HAVING's rule, with the block's GROUP BY: a name is a select alias before it is a
    /// column, unless it is a column grouped on (MySQL's preference).
    pub having_group_by: Option<&'a [Expr]>,
    /// `Some` where window functions are allowed (the select list and ORDER BY); collects
    /// them.
    pub windows: Option<&'a RefCell<Vec<WindowSpec>>>,
    /// The block's named windows (`WINDOW w AS (...)`).
    pub window_names: &'a [ast::NamedWindowDefinition],
}

impl<'a, 'e> Binder<'a, 'e> {
    #[must_use]
    pub fn new(env: &'a Env<'e>, scope: &'a Scope, clause: &'static str) -> Binder<'a, 'e> {
        Binder {
            env,
            scope,
            outer: &[],
            aggs: None,
            aliases: &[],
            clause,
            correlated: std::cell::Cell::new(false),
            values_offset: None,
            having_group_by: None,
            windows: None,
            window_names: &[],
        }
    }

    fn column_ref(&self, parts: &[String]) -> Result<Expr> {
        let (db, table, name) = match parts {
            [n] => (None, None, n.as_str()),
            [t, n] => (None, Some(t.as_str()), n.as_str()),
            [d, t, n] => (Some(d.as_str()), Some(t.as_str()), n.as_str()),
            _ => return Err(SqlError::parse(&parts.join("."))),
        };
        let alias = || self.aliases.iter().find(|(a, _, _)| a.eq_ignore_ascii_case(name)).map(|(_, e, _)| e.clone());
        if let Some(group_by) = self.having_group_by
            && table.is_none()
            && let Some(e) = alias()
        {
            let grouped_column =
                self.scope.resolve(db, table, name, self.clause).ok().flatten().filter(|i| group_by.iter().any(|g| matches!(g, Expr::Column(c) if c == i)));
            return Ok(grouped_column.map_or(e, Expr::Column));
        }
        if let Some(i) = self.scope.resolve(db, table, name, self.clause)? {
            return Ok(Expr::Column(i));
        }
        if table.is_none()
            && let Some((_, e, _)) = self.aliases.iter().find(|(a, _, _)| a.eq_ignore_ascii_case(name))
        {
            return Ok(e.clone());
        }
        for (level, s) in self.outer.iter().enumerate() {
            if let Some(i) = s.resolve(db, table, name, self.clause)? {
                self.correlated.set(true);
                return Ok(Expr::Outer(level, i));
            }
        }
        Err(SqlError::bad_field(&parts.join("."), self.clause))
    }

    /// Bind one expression.
    ///
    /// # Errors
    /// Unknown columns and functions, wrong argument counts, misplaced aggregates.
    pub fn bind(&self, e: &ast::Expr) -> Result<Expr> {
        use ast::Expr as A;
        Ok(match e {
            A::Identifier(id) => {
                let v = &id.value;
                if id.quote_style.is_none() {
                    if let Some(var) = v.strip_prefix("@@") {
                        return Ok(Expr::Const(self.env.info.system_variable(var, None)?));
                    }
                    if let Some(var) = v.strip_prefix('@') {
                        // A LOAD DATA row's own variables are columns of its scope (`dml::load`).
                        if let Some(i) = self.scope.resolve(None, Some(USER_VARIABLES), &var.to_ascii_lowercase(), self.clause)? {
                            return Ok(Expr::Column(i));
                        }
                        let value = self.env.info.user_variable(var);
                        if self.env.info.user_variables_assigned.get() {
                            return Ok(Expr::Func(Func::UserVar, vec![Expr::Const(Value::Str(var.to_owned())), Expr::Const(value)]));
                        }
                        return Ok(Expr::Const(value));
                    }
                    if id.quote_style.is_none() && v.eq_ignore_ascii_case("CURRENT_TIMESTAMP")
                        || v.eq_ignore_ascii_case("LOCALTIMESTAMP")
                        || v.eq_ignore_ascii_case("LOCALTIME")
                    {
                        return Ok(Expr::Func(Func::Now(0), vec![]));
                    }
                    if v.eq_ignore_ascii_case("CURRENT_DATE") {
                        return Ok(Expr::Func(Func::CurDate, vec![]));
                    }
                    if v.eq_ignore_ascii_case("CURRENT_USER") {
                        return Ok(Expr::Func(Func::CurrentUser, vec![]));
                    }
                }
                if id.quote_style == Some('"') {
                    return Ok(Expr::Const(Value::Str(v.clone())));
                }
                self.column_ref(std::slice::from_ref(v))?
            }
            A::CompoundIdentifier(ids) => {
                if let Some(scope) = ids[0].value.strip_prefix("@@") {
                    let name: Vec<&str> = ids[1..].iter().map(|i| i.value.as_str()).collect();
                    return Ok(Expr::Const(self.env.info.system_variable(&name.join("."), Some(scope))?));
                }
                let parts: Vec<String> = ids.iter().map(|i| i.value.clone()).collect();
                self.column_ref(&parts)?
            }
            A::Value(v) => self.literal(&v.value)?,
            A::Prefixed { value, .. } => self.bind(value)?,
            A::TypedString(ts) => {
                let text = match &ts.value.value {
                    ast::Value::SingleQuotedString(s) | ast::Value::DoubleQuotedString(s) => s.clone(),
                    other => other.to_string(),
                };
                let ty = SqlType::from_ast(&ts.data_type, Collation::default())?;
                crate::functions::cast(Value::Str(text), &ty).map(Expr::Const)?
            }
            A::Nested(inner) => self.bind(inner)?,
            A::UnaryOp { op, expr } => {
                let x = self.bind(expr)?;
                match op {
                    UnaryOperator::Not | UnaryOperator::BangNot => Expr::Not(Box::new(x)),
                    UnaryOperator::Minus => match x {
                        Expr::Const(Value::Int(i)) if i != i64::MIN => Expr::Const(Value::Int(-i)),
                        Expr::Const(Value::UInt(u)) if u == 1u64 << 63 => Expr::Const(Value::Int(i64::MIN)),
                        Expr::Const(Value::Decimal(d)) => Expr::Const(Value::Decimal(-d)),
                        other => Expr::Neg(Box::new(other)),
                    },
                    UnaryOperator::Plus => x,
                    UnaryOperator::BitwiseNot => Expr::BitNot(Box::new(x)),
                    other => return Err(SqlError::unsupported(format!("operator {other}"))),
                }
            }
            A::BinaryOp { op: BinaryOperator::Or | BinaryOperator::StringConcat, .. } => self.disjunction(e)?,
            A::BinaryOp { left, op, right } => self.binary(left, op, right)?,
            A::IsNull(x) => Expr::IsNull(Box::new(self.bind(x)?), false),
            A::IsNotNull(x) => Expr::IsNull(Box::new(self.bind(x)?), true),
            A::IsTrue(x) => Expr::IsBool(Box::new(self.bind(x)?), true, false),
            A::IsNotTrue(x) => Expr::IsBool(Box::new(self.bind(x)?), true, true),
            A::IsFalse(x) => Expr::IsBool(Box::new(self.bind(x)?), false, false),
            A::IsNotFalse(x) => Expr::IsBool(Box::new(self.bind(x)?), false, true),
            A::IsUnknown(x) => Expr::IsNull(Box::new(self.bind(x)?), false),
            A::IsNotUnknown(x) => Expr::IsNull(Box::new(self.bind(x)?), true),
            A::IsNotDistinctFrom(a, b) => {
                let (a, b) = (self.bind(a)?, self.bind(b)?);
                let c = self.collation_of2(&a, &b);
                Expr::Cmp(CmpOp::NullSafeEq, Box::new(a), Box::new(b), c)
            }
            A::IsDistinctFrom(a, b) => {
                let (a, b) = (self.bind(a)?, self.bind(b)?);
                let c = self.collation_of2(&a, &b);
                Expr::Not(Box::new(Expr::Cmp(CmpOp::NullSafeEq, Box::new(a), Box::new(b), c)))
            }
            A::AnyOp { left, compare_op, right, .. } => self.quantified(left, compare_op, right, false)?,
            A::AllOp { left, compare_op, right } => self.quantified(left, compare_op, right, true)?,
            // Row values: `(a, b) IN ((1, 2), (3, 4))` is `(a, b) = (1, 2) OR (a, b) = (3, 4)`.
            A::InList { expr, list, negated } if matches!(expr.as_ref(), A::Tuple(items) if items.len() > 1) => {
                let mut any: Option<Expr> = None;
                for item in list {
                    let eq = self.row_comparison(expr, &BinaryOperator::Eq, item)?;
                    any = Some(match any {
                        Some(a) => Expr::Or(Box::new(a), Box::new(eq)),
                        None => eq,
                    });
                }
                let any = any.ok_or_else(|| SqlError::parse("()"))?;
                if *negated { Expr::Not(Box::new(any)) } else { any }
            }
            A::InList { expr, list, negated } => {
                let x = self.bind(expr)?;
                let list: Vec<Expr> = list.iter().map(|e| self.bind(e)).collect::<Result<_>>()?;
                let collation = list.iter().fold(self.collation_of(&x), |c, e| pick_collation(c, self.collation_of(e)));
                Expr::in_list(x, list, *negated, collation)
            }
            A::InSubquery { expr, subquery, negated } => {
                let left = self.bind(expr)?;
                let collation = self.collation_of(&left);
                let sq = self.subquery(subquery)?;
                one_column(&sq)?;
                Expr::Subquery(sq, SubqueryUse::In { left: Box::new(left), collation }, *negated)
            }
            A::Between { expr, negated, low, high } => {
                let (x, lo, hi) = (self.bind(expr)?, self.bind(low)?, self.bind(high)?);
                let collation = pick_collation(self.collation_of(&x), pick_collation(self.collation_of(&lo), self.collation_of(&hi)));
                Expr::Between { expr: Box::new(x), low: Box::new(lo), high: Box::new(hi), negated: *negated, collation }
            }
            A::Like { negated, expr, pattern, escape_char, any: false } | A::ILike { negated, expr, pattern, escape_char, any: false } => {
                let (x, p) = (self.bind(expr)?, self.bind(pattern)?);
                let escape = match escape_char.as_deref() {
                    None => '\\',
                    Some(ast::Expr::Value(v)) => match &v.value {
                        ast::Value::SingleQuotedString(s) => s.chars().next().unwrap_or('\\'),
                        _ => '\\',
                    },
                    Some(other) => return Err(SqlError::unsupported(format!("LIKE ... ESCAPE {other}"))),
                };
                let collation = pick_collation(self.collation_of(&x), self.collation_of(&p));
                Expr::Like { expr: Box::new(x), pattern: Box::new(p), escape, negated: *negated, collation }
            }
            A::Case { operand, conditions, else_result, .. } => {
                let operand = operand.as_deref().map(|o| self.bind(o)).transpose()?;
                let mut whens = conditions
                    .iter()
                    .map(|w| {
                        let condition = self.bind(&w.condition)?;
                        let condition = match &operand {
                            Some(o) => self.truth_as_json(o, &w.condition, condition),
                            None => condition,
                        };
                        Ok((condition, self.bind(&w.result)?))
                    })
                    .collect::<Result<Vec<_>>>()?;
                let mut otherwise = else_result.as_deref().map(|o| self.bind(o)).transpose()?;
                self.conform_values(whens.iter_mut().map(|(_, result)| result).chain(otherwise.as_mut()).collect());
                let collation = operand.as_ref().map_or(Collation::default(), |o| self.collation_of(o));
                Expr::Case { operand: operand.map(Box::new), whens, otherwise: otherwise.map(Box::new), collation }
            }
            A::Function(f) => self.function(f)?,
            A::MemberOf(m) => {
                let value = self.to_json(self.bind(&m.value)?, false);
                Expr::Func(Func::Json(quill_sql_types::json::JsonFunc::MemberOf), vec![value, self.bind(&m.array)?])
            }
            A::Cast { expr, data_type, .. } => self.cast(expr, data_type)?,
            A::Convert { expr, data_type: Some(dt), .. } => self.cast(expr, dt)?,
            A::Convert { expr, data_type: None, .. } => self.bind(expr)?,
            A::Collate { expr, collation } => {
                let x = self.bind(expr)?;
                let name = collation.to_string();
                let c = Collation::from_name(&name).ok_or_else(|| SqlError::new(codes::ER_UNKNOWN_COLLATION, format!("Unknown collation: '{name}'")))?;
                Expr::Func(Func::Concat, vec![x]).with_collation(c)
            }
            A::Exists { subquery, negated } => Expr::Subquery(self.subquery(subquery)?, SubqueryUse::Exists, *negated),
            A::Subquery(q) => {
                let sq = self.subquery(q)?;
                one_column(&sq)?;
                Expr::Subquery(sq, SubqueryUse::Scalar, false)
            }
            A::Trim { expr, trim_where, trim_what, trim_characters } => {
                let x = self.bind(expr)?;
                if trim_characters.is_some() {
                    return Err(SqlError::unsupported("TRIM with a character list"));
                }
                let which = match trim_where {
                    Some(ast::TrimWhereField::Leading) => 1,
                    Some(ast::TrimWhereField::Trailing) => 2,
                    _ => 0,
                };
                match trim_what {
                    Some(w) => Expr::Func(Func::TrimChars(which), vec![self.bind(w)?, x]),
                    None => Expr::Func([Func::Trim, Func::LTrim, Func::RTrim][usize::from(which)], vec![x]),
                }
            }
            A::Substring { expr, substring_from, substring_for, .. } => {
                let mut args = vec![self.bind(expr)?];
                args.push(match substring_from {
                    Some(f) => self.bind(f)?,
                    None => Expr::Const(Value::Int(1)),
                });
                if let Some(f) = substring_for {
                    args.push(self.bind(f)?);
                }
                Expr::Func(Func::Substring, args)
            }
            A::Ceil { expr, .. } => Expr::Func(Func::Ceil, vec![self.bind(expr)?]),
            A::Floor { expr, .. } => Expr::Func(Func::Floor, vec![self.bind(expr)?]),
            A::Position { expr, r#in } => Expr::Func(Func::Locate, vec![self.bind(expr)?, self.bind(r#in)?]),
            A::Extract { field, expr, .. } => {
                let f = match Unit::parse(&field.to_string()) {
                    Some(Unit::Year) => Func::Year,
                    Some(Unit::Quarter) => Func::Quarter,
                    Some(Unit::Month) => Func::Month,
                    // WEEK(d) with the session's default_week_format, as MySQL's EXTRACT.
                    Some(Unit::Week) => Func::Week,
                    Some(Unit::Day) => Func::Day,
                    Some(Unit::Hour) => Func::Hour,
                    Some(Unit::Minute) => Func::Minute,
                    Some(Unit::Second) => Func::Second,
                    Some(Unit::Microsecond) => Func::Microsecond,
                    _ => return Err(SqlError::unsupported(format!("EXTRACT({field})"))),
                };
                Expr::Func(f, vec![self.bind(expr)?])
            }
            A::Tuple(items) if items.len() == 1 => self.bind(&items[0])?,
            A::Tuple(_) => return Err(SqlError::new(codes::ER_OPERAND_COLUMNS, "Operand should contain 1 column(s)")),
            A::RLike { negated, expr, pattern, .. } => {
                let (subject, pattern) = (self.bind(expr)?, self.bind(pattern)?);
                let insensitive = !matches!(self.collation_of2(&subject, &pattern), Collation::Utf8mb4Bin | Collation::Binary);
                let like = Expr::Func(Func::Regexp(quill_sql_types::regexp::RegexpFunc::Like, insensitive), vec![subject, pattern]);
                if *negated { Expr::Not(Box::new(like)) } else { like }
            }
            A::Interval(_) => return Err(SqlError::parse(&e.to_string())),
            other => return Err(SqlError::unsupported(format!("expression {other}"))),
        })
    }

    fn literal(&self, v: &ast::Value) -> Result<Expr> {
        Ok(Expr::Const(match v {
            ast::Value::Number(n, _) => parse_number_literal(n),
            ast::Value::SingleQuotedString(s) | ast::Value::DoubleQuotedString(s) => Value::Str(s.clone()),
            ast::Value::HexStringLiteral(h) => {
                let h = if h.len() % 2 == 1 { format!("0{h}") } else { h.clone() };
                let bytes = (0..h.len()).step_by(2).map(|i| u8::from_str_radix(&h[i..i + 2], 16)).collect::<std::result::Result<Vec<u8>, _>>();
                Value::Bytes(bytes.map_err(|_| SqlError::parse(&h))?)
            }
            ast::Value::SingleQuotedByteStringLiteral(s) | ast::Value::DoubleQuotedByteStringLiteral(s) => {
                // b'0101' bit literal.
                let n = u64::from_str_radix(s, 2).map_err(|_| SqlError::parse(s))?;
                Value::UInt(n)
            }
            ast::Value::Boolean(b) => Value::Int(i64::from(*b)),
            ast::Value::Null => Value::Null,
            ast::Value::Placeholder(p) => {
                let idx: usize = p.trim_start_matches(['?', ':', '$']).parse().map_err(|_| SqlError::parse(p))?;
                return Ok(Expr::Param(idx));
            }
            other => return Err(SqlError::unsupported(format!("literal {other}"))),
        }))
    }

    /// `e` as a number where MySQL reads an ENUM as one (arithmetic, a comparison with a
    /// number, ORDER BY): its member's 1-based place, 0 for the empty error value, NULL for
    /// NULL. Any other expression unchanged.
    #[must_use]
    pub fn enum_as_number(&self, e: Expr) -> Expr {
        let SqlType::Enum { members, .. } = self.type_of(&e) else { return e };
        let mut args = vec![e.clone()];
        args.extend(members.iter().map(|m| Expr::Const(Value::Str(m.clone()))));
        Expr::Case {
            operand: None,
            whens: vec![(Expr::IsNull(Box::new(e), false), Expr::Const(Value::Null))],
            otherwise: Some(Box::new(Expr::Func(Func::Field, args))),
            collation: Collation::Binary,
        }
    }

    /// `x op ANY (subquery)` / `x op ALL (subquery)` (`SubqueryUse::Quantified`).
    fn quantified(&self, left: &ast::Expr, op: &BinaryOperator, right: &ast::Expr, all: bool) -> Result<Expr> {
        let op = comparison(op).filter(|o| *o != CmpOp::NullSafeEq).ok_or_else(|| SqlError::parse(&format!("{op} {}", if all { "ALL" } else { "ANY" })))?;
        let ast::Expr::Subquery(q) = right else {
            return Err(SqlError::parse(&right.to_string()));
        };
        let left = self.bind(left)?;
        let sq = self.subquery(q)?;
        one_column(&sq)?;
        let collation = pick_collation(self.collation_of(&left), sq.plan.columns[0].ty.collation());
        Ok(Expr::Subquery(sq, SubqueryUse::Quantified { left: Box::new(left), op, all, collation }, false))
    }

    /// A comparison of row values, item by item: `=` and `<=>` hold when every item's do,
    /// `<>` when some item's does, and `<` `<=` `>` `>=` compare in order, the first unequal
    /// items deciding (so `(1, NULL) < (2, 0)` is true, `(1, NULL) < (1, 0)` unknown).
    ///
    /// # Errors
    /// 1241 when the rows have different numbers of items (or one is not a row).
    fn row_comparison(&self, left: &ast::Expr, op: &BinaryOperator, right: &ast::Expr) -> Result<Expr> {
        let items = |e: &ast::Expr| -> Vec<ast::Expr> {
            match e {
                ast::Expr::Tuple(items) => items.clone(),
                ast::Expr::Nested(inner) => vec![inner.as_ref().clone()],
                other => vec![other.clone()],
            }
        };
        let (l, r) = (items(left), items(right));
        if l.len() != r.len() {
            return Err(SqlError::new(codes::ER_OPERAND_COLUMNS, format!("Operand should contain {} column(s)", l.len())));
        }
        let op_of = |o: CmpOp| match o {
            CmpOp::Eq => BinaryOperator::Eq,
            CmpOp::Ne => BinaryOperator::NotEq,
            CmpOp::Lt => BinaryOperator::Lt,
            CmpOp::Le => BinaryOperator::LtEq,
            CmpOp::Gt => BinaryOperator::Gt,
            CmpOp::Ge => BinaryOperator::GtEq,
            CmpOp::NullSafeEq => BinaryOperator::Spaceship,
        };
        let cmp = comparison(op).ok_or_else(|| SqlError::new(codes::ER_OPERAND_COLUMNS, "Operand should contain 1 column(s)"))?;
        let pair = |i: usize, o: CmpOp| self.binary(&l[i], &op_of(o), &r[i]);
        let and = |a: Expr, b: Expr| Expr::And(Box::new(a), Box::new(b));
        let or = |a: Expr, b: Expr| Expr::Or(Box::new(a), Box::new(b));
        Ok(match cmp {
            CmpOp::Eq | CmpOp::NullSafeEq => (1..l.len()).try_fold(pair(0, cmp)?, |acc, i| Ok::<_, SqlError>(and(acc, pair(i, cmp)?)))?,
            CmpOp::Ne => Expr::Not(Box::new((1..l.len()).try_fold(pair(0, CmpOp::Eq)?, |acc, i| Ok::<_, SqlError>(and(acc, pair(i, CmpOp::Eq)?)))?)),
            // (a, b) < (c, d): a < c OR (a = c AND b < d), the last pair with the operator
            // itself (<= stays <=), the others strict.
            ordered => {
                let strict = match ordered {
                    CmpOp::Le => CmpOp::Lt,
                    CmpOp::Ge => CmpOp::Gt,
                    o => o,
                };
                let last = l.len() - 1;
                let mut e = pair(last, ordered)?;
                for i in (0..last).rev() {
                    e = or(pair(i, strict)?, and(pair(i, CmpOp::Eq)?, e));
                }
                e
            }
        })
    }

    fn binary(&self, left: &ast::Expr, op: &BinaryOperator, right: &ast::Expr) -> Result<Expr> {
        // `d + INTERVAL n unit` and `d - INTERVAL n unit`.
        if let ast::Expr::Interval(iv) = right
            && matches!(op, BinaryOperator::Plus | BinaryOperator::Minus)
        {
            return self.interval_add(left, iv, *op == BinaryOperator::Minus);
        }
        if let ast::Expr::Interval(iv) = left
            && *op == BinaryOperator::Plus
        {
            return self.interval_add(right, iv, false);
        }
        // `@name := value`.
        if *op == BinaryOperator::Assignment {
            let target = match left {
                ast::Expr::Identifier(id) if id.quote_style.is_none() => id.value.strip_prefix('@').filter(|v| !v.starts_with('@')),
                _ => None,
            };
            let Some(name) = target else {
                return Err(SqlError::new(
                    codes::ER_PARSE_ERROR,
                    format!(
                        "You have an error in your SQL syntax; check the manual that corresponds to your MySQL server version for the right syntax to use near ':= {right}'"
                    ),
                ));
            };
            return Ok(Expr::Func(Func::SetUserVar, vec![Expr::Const(Value::Str(name.to_owned())), self.bind(right)?]));
        }
        if matches!(left, ast::Expr::Tuple(items) if items.len() > 1) || matches!(right, ast::Expr::Tuple(items) if items.len() > 1) {
            return self.row_comparison(left, op, right);
        }
        let (mut a, mut b) = (self.bind(left)?, self.bind(right)?);
        let arithmetic = matches!(
            op,
            BinaryOperator::Plus
                | BinaryOperator::Minus
                | BinaryOperator::Multiply
                | BinaryOperator::Divide
                | BinaryOperator::Modulo
                | BinaryOperator::MyIntegerDivide
        );
        // An ENUM in arithmetic, or compared with a number, is its member's number.
        if arithmetic || self.type_of(&b).is_numeric() {
            a = self.enum_as_number(a);
        }
        if arithmetic || self.type_of(&a).is_numeric() {
            b = self.enum_as_number(b);
        }
        if !arithmetic {
            b = self.truth_as_json(&a, right, b);
            a = self.truth_as_json(&b, left, a);
        }
        let cmp = |o: CmpOp| {
            // A JSON string compared with an SQL string compares its text, unquoted.
            let unquoted = |x: &Expr, other: &Expr| {
                if self.type_of(x) == SqlType::Json && self.type_of(other).is_string() && self.type_of(other) != SqlType::Json {
                    Expr::Func(Func::Json(quill_sql_types::json::JsonFunc::Unquote), vec![x.clone()])
                } else {
                    x.clone()
                }
            };
            let (a, b) = (unquoted(&a, &b), unquoted(&b, &a));
            let c = self.collation_of2(&a, &b);
            Expr::Cmp(o, Box::new(a), Box::new(b), c)
        };
        Ok(match op {
            BinaryOperator::Plus => Expr::Arith(Arith::Add, Box::new(a), Box::new(b)),
            BinaryOperator::Minus => Expr::Arith(Arith::Sub, Box::new(a), Box::new(b)),
            BinaryOperator::Multiply => Expr::Arith(Arith::Mul, Box::new(a), Box::new(b)),
            BinaryOperator::Divide => Expr::Arith(Arith::Div, Box::new(a), Box::new(b)),
            BinaryOperator::Modulo => Expr::Arith(Arith::Mod, Box::new(a), Box::new(b)),
            BinaryOperator::MyIntegerDivide => Expr::Arith(Arith::IntDiv, Box::new(a), Box::new(b)),
            BinaryOperator::Eq => cmp(CmpOp::Eq),
            BinaryOperator::NotEq => cmp(CmpOp::Ne),
            BinaryOperator::Lt => cmp(CmpOp::Lt),
            BinaryOperator::LtEq => cmp(CmpOp::Le),
            BinaryOperator::Gt => cmp(CmpOp::Gt),
            BinaryOperator::GtEq => cmp(CmpOp::Ge),
            BinaryOperator::Spaceship => cmp(CmpOp::NullSafeEq),
            BinaryOperator::And => Expr::And(Box::new(a), Box::new(b)),
            BinaryOperator::Or => Expr::Or(Box::new(a), Box::new(b)),
            BinaryOperator::Xor => Expr::Xor(Box::new(a), Box::new(b)),
            BinaryOperator::BitwiseAnd => Expr::Bit('&', Box::new(a), Box::new(b)),
            BinaryOperator::BitwiseOr => Expr::Bit('|', Box::new(a), Box::new(b)),
            BinaryOperator::BitwiseXor => Expr::Bit('^', Box::new(a), Box::new(b)),
            BinaryOperator::PGBitwiseShiftLeft => Expr::Bit('<', Box::new(a), Box::new(b)),
            BinaryOperator::PGBitwiseShiftRight => Expr::Bit('>', Box::new(a), Box::new(b)),
            BinaryOperator::StringConcat => Expr::Or(Box::new(a), Box::new(b)),
            // `doc->'$.path'` is JSON_EXTRACT, `doc->>'$.path'` JSON_UNQUOTE of it.
            BinaryOperator::Arrow => Expr::Func(Func::Json(quill_sql_types::json::JsonFunc::Extract), vec![a, b]),
            BinaryOperator::LongArrow => Expr::Func(
                Func::Json(quill_sql_types::json::JsonFunc::Unquote),
                vec![Expr::Func(Func::Json(quill_sql_types::json::JsonFunc::Extract), vec![a, b])],
            ),
            other => return Err(SqlError::unsupported(format!("operator {other}"))),
        })
    }

    /// `a OR b OR ...` (the parser's tree, balanced when long: see `parse`). Equalities of
    /// one column with constants or parameters (`id = 0 OR id = 1 OR ...`, as ORMs write
    /// them) become `id IN (0, 1, ...)`, which a long list looks up in a set and the
    /// planner can turn into primary-key lookups; anything else stays a balanced OR.
    fn disjunction(&self, e: &ast::Expr) -> Result<Expr> {
        fn terms<'x>(e: &'x ast::Expr, out: &mut Vec<&'x ast::Expr>) {
            match e {
                ast::Expr::BinaryOp { left, op: BinaryOperator::Or | BinaryOperator::StringConcat, right } => {
                    terms(left, out);
                    terms(right, out);
                }
                ast::Expr::Nested(inner) if matches!(inner.as_ref(), ast::Expr::BinaryOp { op: BinaryOperator::Or | BinaryOperator::StringConcat, .. }) => {
                    terms(inner, out);
                }
                other => out.push(other),
            }
        }
        let mut parsed = Vec::new();
        terms(e, &mut parsed);
        let bound: Vec<Expr> = parsed.into_iter().map(|t| self.bind(t)).collect::<Result<_>>()?;
        // Each term as (column, value, collation) when it is `column = constant`.
        let equality = |t: &Expr| match t {
            Expr::Cmp(CmpOp::Eq, a, b, c) => match (a.as_ref(), b.as_ref()) {
                (Expr::Column(i), v @ (Expr::Const(_) | Expr::Param(_))) | (v @ (Expr::Const(_) | Expr::Param(_)), Expr::Column(i)) => {
                    Some((*i, v.clone(), *c))
                }
                _ => None,
            },
            _ => None,
        };
        let equalities: Option<Vec<(usize, Expr, Collation)>> = bound.iter().map(equality).collect();
        if let Some(eqs) = equalities
            && let Some(&(column, _, collation)) = eqs.first()
            && eqs.iter().all(|(c, _, coll)| *c == column && *coll == collation)
        {
            return Ok(Expr::in_list(Expr::Column(column), eqs.into_iter().map(|(_, v, _)| v).collect(), false, collation));
        }
        Ok(balanced_or(bound))
    }

    fn interval_add(&self, base: &ast::Expr, iv: &ast::Interval, subtract: bool) -> Result<Expr> {
        let unit_name = iv.leading_field.as_ref().map_or_else(|| "DAY".to_owned(), ToString::to_string);
        let unit = Unit::parse(&unit_name).ok_or_else(|| SqlError::unsupported(format!("INTERVAL unit {unit_name}")))?;
        Ok(Expr::Func(Func::DateAdd(unit, subtract), vec![self.bind(base)?, self.bind(&iv.value)?]))
    }

    fn subquery(&self, q: &ast::Query) -> Result<Rc<Subquery>> {
        let mut outer: Vec<&Scope> = vec![self.scope];
        outer.extend(self.outer.iter());
        let (plan, correlated) = query::plan_query(self.env, q, &outer)?;
        if correlated {
            self.correlated.set(true);
        }
        Ok(Rc::new(Subquery { plan, correlated, cache: RefCell::new(None) }))
    }

    fn clone_shallow(&self) -> Binder<'a, 'e> {
        Binder {
            env: self.env,
            scope: self.scope,
            outer: self.outer,
            aggs: self.aggs,
            aliases: self.aliases,
            clause: self.clause,
            correlated: std::cell::Cell::new(false),
            values_offset: self.values_offset,
            having_group_by: self.having_group_by,
            windows: self.windows,
            window_names: self.window_names,
        }
    }

    /// The collation a string expression compares under.
    #[must_use]
    pub fn collation_of(&self, e: &Expr) -> Collation {
        match e {
            Expr::Column(i) => self.scope.columns.get(*i).map_or(Collation::default(), |c| c.ty.collation()),
            Expr::Outer(l, i) => self.outer.get(*l).and_then(|s| s.columns.get(*i)).map_or(Collation::default(), |c| c.ty.collation()),
            Expr::Case { collation, .. } => *collation,
            Expr::Const(Value::Bytes(_)) | Expr::Cast(_, SqlType::Binary(_) | SqlType::VarBinary(_) | SqlType::Blob(_)) => Collation::Binary,
            _ => self.env.info.connection_collation,
        }
    }

    fn collation_of2(&self, a: &Expr, b: &Expr) -> Collation {
        pick_collation(self.collation_of(a), self.collation_of(b))
    }

    /// The static type of a bound expression, for result metadata.
    #[must_use]
    pub fn type_of(&self, e: &Expr) -> SqlType {
        type_of(
            e,
            self.scope,
            self.outer,
            self.aggs.map(|a| a.borrow().iter().map(|s| s.ty.clone()).collect::<Vec<_>>()).as_deref().unwrap_or(&[]),
            self.env.params,
        )
    }
}

/// 1241 for a subquery used as one value (a scalar, or the list of IN) that has more columns.
/// MySQL's comparison operators, as [`CmpOp`]s.
fn comparison(op: &BinaryOperator) -> Option<CmpOp> {
    Some(match op {
        BinaryOperator::Eq => CmpOp::Eq,
        BinaryOperator::NotEq => CmpOp::Ne,
        BinaryOperator::Lt => CmpOp::Lt,
        BinaryOperator::LtEq => CmpOp::Le,
        BinaryOperator::Gt => CmpOp::Gt,
        BinaryOperator::GtEq => CmpOp::Ge,
        BinaryOperator::Spaceship => CmpOp::NullSafeEq,
        _ => return None,
    })
}

fn one_column(sq: &Subquery) -> Result<()> {
    if sq.plan.columns.len() == 1 { Ok(()) } else { Err(SqlError::new(codes::ER_OPERAND_COLUMNS, "Operand should contain 1 column(s)")) }
}

/// An explicit COLLATE is carried as an identity CONCAT whose collation wins.
trait WithCollation {
    fn with_collation(self, c: Collation) -> Expr;
}

impl WithCollation for Expr {
    fn with_collation(self, c: Collation) -> Expr {
        Expr::Case { operand: None, whens: vec![(Expr::Const(Value::Int(1)), self)], otherwise: None, collation: c }
    }
}

/// `terms` joined by OR as a balanced tree, left to right.
///
/// REQUIRES: `terms` is not empty.
fn balanced_or(mut terms: Vec<Expr>) -> Expr {
    assert!(!terms.is_empty(), "a disjunction has a term");
    if terms.len() == 1 {
        return terms.pop().expect("one term");
    }
    let right = terms.split_off(terms.len() / 2);
    Expr::Or(Box::new(balanced_or(terms)), Box::new(balanced_or(right)))
}

fn pick_collation(a: Collation, b: Collation) -> Collation {
    // A binary or explicit _bin side decides; otherwise the first side's.
    match (a, b) {
        (Collation::Binary, _) | (_, Collation::Binary) => Collation::Binary,
        (Collation::Utf8mb4Bin, _) | (_, Collation::Utf8mb4Bin) => Collation::Utf8mb4Bin,
        (x, _) => x,
    }
}
