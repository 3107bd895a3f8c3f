//! The type of a bound expression as a result column shows it (`type_of`), whether an
//! expression can never be NULL (`never_null`, for the NOT NULL flag of a result column), and
//! numeric literals read as MySQL reads them (`parse_number_literal`).

use quill_sql_types::ops::Arith;
use quill_sql_types::types::{IntKind, SqlType, type_of_value};
use quill_storage::Decimal;
use quill_storage::{Collation, Value};

use crate::expr::{CmpOp, Expr, SubqueryUse};
use crate::functions::Func;

use super::Scope;

/// Parse a numeric literal: integers as Int/UInt, decimals exact, exponents as DOUBLE.
#[must_use]
pub fn parse_number_literal(n: &str) -> Value {
    if n.contains(['e', 'E']) {
        return Value::Double(n.parse().unwrap_or(0.0));
    }
    if n.contains('.') {
        return match n.parse::<Decimal>() {
            Ok(d) => Value::Decimal(d),
            Err(_) => Value::Double(n.parse().unwrap_or(0.0)),
        };
    }
    if let Ok(i) = n.parse::<i64>() {
        return Value::Int(i);
    }
    if let Ok(u) = n.parse::<u64>() {
        return Value::UInt(u);
    }
    match n.parse::<Decimal>() {
        Ok(d) => Value::Decimal(d),
        Err(_) => Value::Double(n.parse().unwrap_or(0.0)),
    }
}

/// Static type of an expression.
#[must_use]
pub fn type_of(e: &Expr, scope: &Scope, outer: &[&Scope], aggs: &[SqlType], params: &[Value]) -> SqlType {
    let t = |x: &Expr| type_of(x, scope, outer, aggs, params);
    match e {
        Expr::Const(v) => type_of_value(v),
        Expr::Column(i) => scope.columns.get(*i).map_or(SqlType::Null, |c| c.ty.clone()),
        Expr::Outer(l, i) => outer.get(*l).and_then(|s| s.columns.get(*i)).map_or(SqlType::Null, |c| c.ty.clone()),
        Expr::Param(i) => params.get(*i).map_or(SqlType::VarChar { len: 255, collation: Collation::default() }, type_of_value),
        Expr::Agg(i) => aggs.get(*i).cloned().unwrap_or(SqlType::Null),
        Expr::Window(_, ty) => ty.clone(),
        Expr::Arith(op, a, b) => {
            let (ta, tb) = (t(a), t(b));
            let double = |x: &SqlType| matches!(x, SqlType::Double | SqlType::Float) || x.is_string() || x.is_binary();
            if double(&ta) || double(&tb) {
                SqlType::Double
            } else if *op == Arith::IntDiv {
                SqlType::bigint()
            } else if *op == Arith::Div || matches!(ta, SqlType::Decimal { .. }) || matches!(tb, SqlType::Decimal { .. }) {
                let scale = |x: &SqlType| if let SqlType::Decimal { scale, .. } = x { *scale } else { 0 };
                let s = if *op == Arith::Div {
                    scale(&ta) + 4
                } else if *op == Arith::Mul {
                    scale(&ta) + scale(&tb)
                } else {
                    scale(&ta).max(scale(&tb))
                };
                SqlType::Decimal { precision: 65, scale: s.min(30), unsigned: false }
            } else {
                SqlType::Int { kind: IntKind::Big, unsigned: ta.is_unsigned() || tb.is_unsigned(), display: None }
            }
        }
        Expr::Neg(a) => match t(a) {
            SqlType::Int { kind, .. } => SqlType::Int { kind, unsigned: false, display: None },
            other => other,
        },
        Expr::Subquery(sq, SubqueryUse::Scalar, _) => sq.plan.columns.first().map_or(SqlType::Null, |c| c.ty.clone()),
        Expr::Subquery(..) => SqlType::Int { kind: IntKind::Int, unsigned: false, display: Some(1) },
        Expr::BitNot(_) | Expr::Bit(..) => SqlType::Int { kind: IntKind::Big, unsigned: true, display: None },
        Expr::Case { whens, otherwise, collation, .. } => {
            let values: Vec<SqlType> = whens.iter().map(|(_, r)| t(r)).chain(otherwise.iter().map(|o| t(o))).collect();
            crate::type_aggregation::aggregate(&values).with_collation(*collation)
        }
        Expr::Func(f, args) => f.result_type(&args.iter().map(t).collect::<Vec<_>>()),
        Expr::Stored(call) => call.ty.clone(),
        Expr::Cast(_, ty) => ty.clone(),
        truth => {
            debug_assert!(truth.is_truth_value(), "every other expression is a truth value");
            SqlType::Int { kind: IntKind::Int, unsigned: false, display: Some(1) }
        }
    }
}

/// Whether an expression can never be NULL (sent as NOT_NULL in result metadata).
#[must_use]
pub fn never_null(e: &Expr, scope: &Scope) -> bool {
    let nn = |x: &Expr| never_null(x, scope);
    match e {
        Expr::Const(v) => !v.is_null(),
        Expr::Column(i) => scope.columns.get(*i).is_some_and(|c| !c.nullable),
        Expr::Arith(op, a, b) => !matches!(op, Arith::Div | Arith::IntDiv | Arith::Mod) && nn(a) && nn(b),
        Expr::Neg(a) | Expr::Not(a) | Expr::BitNot(a) => nn(a),
        Expr::Bit(_, a, b) | Expr::And(a, b) | Expr::Or(a, b) | Expr::Xor(a, b) => nn(a) && nn(b),
        Expr::Cmp(CmpOp::NullSafeEq, ..) | Expr::IsNull(..) | Expr::IsBool(..) => true,
        Expr::Cmp(_, a, b, _) => nn(a) && nn(b),
        Expr::Like { expr, pattern, .. } => nn(expr) && nn(pattern),
        Expr::Func(f, args) => match f {
            Func::Now(_)
            | Func::SysDate(_)
            | Func::CurDate
            | Func::CurTime(_)
            | Func::UtcTimestamp(_)
            | Func::Version
            | Func::ConnectionId
            | Func::User
            | Func::CurrentUser
            | Func::RowCount
            | Func::FoundRows
            | Func::Rand => true,
            Func::LastInsertId => args.is_empty() || args.iter().all(nn),
            Func::Concat
            | Func::Lower
            | Func::Upper
            | Func::Length
            | Func::CharLength
            | Func::Trim
            | Func::LTrim
            | Func::RTrim
            | Func::Abs
            | Func::Floor
            | Func::Ceil
            | Func::Round
            | Func::Truncate
            | Func::Left
            | Func::Right
            | Func::Replace
            | Func::Reverse
            | Func::Hex
            | Func::Sign => args.iter().all(nn),
            Func::IfNull | Func::Coalesce => args.iter().any(nn),
            _ => false,
        },
        _ => false,
    }
}
