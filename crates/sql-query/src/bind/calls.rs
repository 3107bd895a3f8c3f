//! Binding calls: scalar functions (arity, argument types, the result type), aggregates
//! and their arguments, window functions and their windows, CAST and CONVERT, and the JSON
//! conversions of arguments. Arguments of IF, IFNULL, COALESCE, CASE, GREATEST and LEAST are
//! converted to the type MySQL aggregates for them (`type_aggregation`).

use quill_sql_types::error::{Result, SqlError, codes};
use quill_sql_types::types::{IntKind, LobKind, SqlType};
use quill_storage::{Collation, Value};
use sqlparser::ast::{self, DuplicateTreatment, FunctionArg, FunctionArgExpr, FunctionArguments, ObjectNamePart};

use crate::expr::{AggFunc, AggSpec, Expr};
use crate::functions::{Func, Unit};
use crate::window::WindowSpec;

use super::Binder;

/// Whether a call of `name` with `argc` arguments (and no OVER) is a built-in function's,
/// not a stored function's: a stored program qualifies the others with its database.
#[must_use]
pub fn is_builtin_function(name: &str, argc: usize) -> bool {
    let upper = name.to_ascii_uppercase();
    Func::by_name(&upper, argc).is_some()
        || agg_func(&upper).is_some()
        || matches!(upper.as_str(), "TIMESTAMPDIFF" | "TIMESTAMPADD" | "DATE_ADD" | "DATE_SUB" | "ADDDATE" | "SUBDATE" | "VALUES" | "VALUE")
}

impl<'a, 'e> Binder<'a, 'e> {
    /// A call of the stored function `f` names (in its qualifier's database, else the
    /// default one): 1305 when there is none, 1370 without EXECUTE, 1318 for the wrong
    /// number of arguments.
    fn stored_function(&self, f: &ast::Function, args: Vec<Expr>) -> Result<Expr> {
        let parts = crate::query::object_name_parts(&f.name);
        let (db, name) = match parts.as_slice() {
            [name] => (self.env.info.db.clone(), name.clone()),
            [db, name] => (Some(db.clone()), name.clone()),
            _ => return Err(SqlError::parse(&f.name.to_string())),
        };
        let missing = || {
            let name = name.to_ascii_lowercase();
            SqlError::new(
                codes::ER_SP_DOES_NOT_EXIST,
                match &db {
                    Some(db) => format!("FUNCTION {db}.{name} does not exist"),
                    None => format!("FUNCTION {name} does not exist"),
                },
            )
        };
        let db = db.as_deref().ok_or_else(missing)?;
        let routine = self.env.catalog.routine(db, &name, true).ok_or_else(missing)?;
        let info = self.env.info;
        let definer = routine.creation.is_definer(&info.user, &info.account_host);
        if info.privileges_on(db, None) & quill_sql_types::privileges::EXECUTE == 0 && !definer {
            return Err(SqlError::new(
                codes::ER_PROCACCESS_DENIED_ERROR,
                format!("execute command denied to user '{}'@'{}' for routine '{db}.{}'", info.user, info.account_host, routine.name),
            ));
        }
        if args.len() != routine.params.len() {
            return Err(SqlError::new(
                codes::ER_SP_WRONG_NO_OF_ARGS,
                format!("Incorrect number of arguments for FUNCTION {db}.{}; expected {}, got {}", routine.name, routine.params.len(), args.len()),
            ));
        }
        let collation = self.env.catalog.database(db).map(|d| d.collation).unwrap_or_default();
        let ty = match &routine.returns {
            Some((dt, _)) => SqlType::from_ast(dt, collation)?,
            None => SqlType::Null,
        };
        Ok(Expr::Stored(Box::new(crate::expr::StoredCall { routine: routine.clone(), args, ty })))
    }

    pub(super) fn function(&self, f: &ast::Function) -> Result<Expr> {
        let name = match f.name.0.last() {
            Some(ObjectNamePart::Identifier(i)) => i.value.to_ascii_uppercase(),
            _ => return Err(SqlError::parse(&f.name.to_string())),
        };
        let (args, distinct): (Vec<&FunctionArgExpr>, bool) = match &f.args {
            FunctionArguments::None => (vec![], false),
            FunctionArguments::List(l) => (
                l.args
                    .iter()
                    .map(|a| match a {
                        FunctionArg::Unnamed(x) => Ok(x),
                        _ => Err(SqlError::parse(&f.to_string())),
                    })
                    .collect::<Result<_>>()?,
                l.duplicate_treatment == Some(DuplicateTreatment::Distinct),
            ),
            FunctionArguments::Subquery(_) => return Err(SqlError::parse(&f.to_string())),
        };
        let expr_arg = |i: usize| -> Result<&ast::Expr> {
            match args.get(i) {
                Some(FunctionArgExpr::Expr(e)) => Ok(e),
                _ => Err(SqlError::new(codes::ER_WRONG_PARAMCOUNT_TO_NATIVE_FCT, format!("Incorrect parameter count in the call to native function '{name}'"))),
            }
        };
        if let Some(over) = &f.over {
            return self.window_call(&name, over, &args, distinct);
        }
        if let Some(agg) = agg_func(&name) {
            let Some(aggs) = self.aggs else {
                return Err(SqlError::new(codes::ER_INVALID_GROUP_FUNC_USE, "Invalid use of group function"));
            };
            let star = matches!(args.first(), Some(FunctionArgExpr::Wildcard));
            if args.len() > 1 && agg != AggFunc::JsonObjectAgg {
                // COUNT(DISTINCT a, b) and GROUP_CONCAT(a, b): refused rather than answered
                // from the first argument alone.
                return Err(SqlError::unsupported(format!("{name} with more than one argument")));
            }
            let (func, arg) = if agg == AggFunc::Count && star {
                (AggFunc::CountStar, None)
            } else {
                // Aggregate arguments are bound without aggregates allowed.
                let inner = Binder { aggs: None, aliases: &[], ..self.clone_shallow() };
                let bound = args
                    .iter()
                    .map(|a| match a {
                        FunctionArgExpr::Expr(e) => inner.bind(e),
                        _ => Err(SqlError::parse(&name)),
                    })
                    .collect::<Result<Vec<_>>>()?;
                (agg, Some(self.aggregate_argument(agg, &name, distinct, bound)?))
            };
            let arg_ty = arg.as_ref().map_or(SqlType::bigint(), |a| self.type_of(a));
            let ty = agg_type(func, &arg_ty);
            let collation = arg.as_ref().map_or(Collation::default(), |a| self.collation_of(a));
            let mut list = aggs.borrow_mut();
            list.push(AggSpec { func, arg, distinct, ty, collation });
            return Ok(Expr::Agg(list.len() - 1));
        }
        match name.as_str() {
            "TIMESTAMPDIFF" | "TIMESTAMPADD" => {
                let unit_name = match expr_arg(0)? {
                    ast::Expr::Identifier(i) => i.value.clone(),
                    other => other.to_string(),
                };
                let unit = Unit::parse(&unit_name).ok_or_else(|| SqlError::parse(&unit_name))?;
                let (a, b) = (self.bind(expr_arg(1)?)?, self.bind(expr_arg(2)?)?);
                return Ok(if name == "TIMESTAMPDIFF" {
                    Expr::Func(Func::TimestampDiff(unit), vec![a, b])
                } else {
                    Expr::Func(Func::DateAdd(unit, false), vec![b, a])
                });
            }
            "DATE_ADD" | "DATE_SUB" | "ADDDATE" | "SUBDATE" => {
                let base = expr_arg(0)?;
                let sub = name == "DATE_SUB" || name == "SUBDATE";
                return match expr_arg(1)? {
                    ast::Expr::Interval(iv) => self.interval_add(base, iv, sub),
                    days => Ok(Expr::Func(Func::DateAdd(Unit::Day, sub), vec![self.bind(base)?, self.bind(days)?])),
                };
            }
            "VALUES" | "VALUE" if self.values_offset.is_some() => {
                let Expr::Column(i) = self.bind(expr_arg(0)?)? else {
                    return Err(SqlError::parse(&f.to_string()));
                };
                return Ok(Expr::Column(self.values_offset.unwrap_or(0) + i));
            }
            _ => {}
        }
        let bound: Vec<Expr> = args
            .iter()
            .map(|a| match a {
                FunctionArgExpr::Expr(e) => self.bind(e),
                _ => Err(SqlError::parse(&f.to_string())),
            })
            .collect::<Result<_>>()?;
        // A qualified name, or one no built-in function has, may be a stored function's.
        let qualified = f.name.0.len() > 1;
        let func = match Func::by_name(&name, bound.len()) {
            Some(func) if !qualified => func,
            _ => return self.stored_function(f, bound),
        };
        let (lo, hi) = func.arity();
        if bound.len() < lo || bound.len() > hi {
            return Err(SqlError::new(codes::ER_WRONG_PARAMCOUNT_TO_NATIVE_FCT, format!("Incorrect parameter count in the call to native function '{name}'")));
        }
        // Fractional-second precision arguments are part of the function.
        let fsp = |b: &[Expr]| -> Result<u8> {
            match b.first() {
                None => Ok(0),
                Some(Expr::Const(v)) => {
                    let n = quill_sql_types::ops::to_i128(v);
                    if (0..=6).contains(&n) {
                        Ok(n as u8)
                    } else {
                        Err(SqlError::new(
                            codes::ER_TOO_BIG_PRECISION,
                            format!("Too-big precision {n} specified for '{}'. Maximum is 6.", name.to_ascii_lowercase()),
                        ))
                    }
                }
                Some(_) => Err(SqlError::parse(&f.to_string())),
            }
        };
        Ok(match func {
            Func::Now(_) => Expr::Func(Func::Now(fsp(&bound)?), vec![]),
            Func::SysDate(_) => Expr::Func(Func::SysDate(fsp(&bound)?), vec![]),
            Func::CurTime(_) => Expr::Func(Func::CurTime(fsp(&bound)?), vec![]),
            Func::UtcTimestamp(_) => Expr::Func(Func::UtcTimestamp(fsp(&bound)?), vec![]),
            // The subject's collation says whether case matters, as MySQL decides.
            Func::Regexp(r, _) => {
                let insensitive = bound.first().is_some_and(|s| !matches!(self.collation_of(s), Collation::Utf8mb4Bin | Collation::Binary));
                Expr::Func(Func::Regexp(r, insensitive), bound)
            }
            Func::Json(j) => {
                // The values a JSON function stores are made JSON first (`json` module doc).
                let literal_truth =
                    |i: usize| matches!(args.get(i), Some(FunctionArgExpr::Expr(ast::Expr::Value(v))) if matches!(v.value, ast::Value::Boolean(_)));
                let args = bound.into_iter().enumerate().map(|(i, a)| if j.takes_value_at(i) { self.to_json(a, literal_truth(i)) } else { a }).collect();
                Expr::Func(Func::Json(j), args)
            }
            Func::If => {
                let mut args = bound;
                self.conform_values(args.iter_mut().skip(1).collect());
                Expr::Func(Func::If, args)
            }
            Func::IfNull | Func::Coalesce | Func::Greatest | Func::Least => {
                let mut args = bound;
                self.conform_values(args.iter_mut().collect());
                Expr::Func(func, args)
            }
            other if other.takes_strings() => {
                // String functions see temporal arguments as text with the argument's own precision.
                let args = bound
                    .into_iter()
                    .map(|a| match self.type_of(&a) {
                        SqlType::DateTime(f) | SqlType::Timestamp(f) | SqlType::Time(f) => Expr::Func(Func::TemporalText(f), vec![a]),
                        _ => a,
                    })
                    .collect();
                Expr::Func(other, args)
            }
            other => Expr::Func(other, bound),
        })
    }

    /// An SQL value as a JSON function takes it: JSON stays JSON, a truth value is `true` or
    /// `false`, anything else its JSON scalar.
    /// The one expression an aggregate reads from each row: its argument, or for the JSON
    /// aggregates the argument made JSON (JSON_ARRAYAGG) or the row's JSON_OBJECT(k, v)
    /// (JSON_OBJECTAGG, which 3158 refuses for a NULL key).
    pub(super) fn aggregate_argument(&self, agg: AggFunc, name: &str, distinct: bool, mut args: Vec<Expr>) -> Result<Expr> {
        let json = matches!(agg, AggFunc::JsonArrayAgg | AggFunc::JsonObjectAgg);
        if json && distinct {
            return Err(SqlError::new(codes::ER_PARSE_ERROR, format!("You have an error in your SQL syntax near 'DISTINCT' in {name}")));
        }
        let wanted = if agg == AggFunc::JsonObjectAgg { 2 } else { 1 };
        if args.len() != wanted {
            return Err(SqlError::new(codes::ER_WRONG_PARAMCOUNT_TO_NATIVE_FCT, format!("Incorrect parameter count in the call to native function '{name}'")));
        }
        Ok(match agg {
            AggFunc::JsonArrayAgg => self.to_json(args.remove(0), false),
            AggFunc::JsonObjectAgg => {
                let value = self.to_json(args.remove(1), false);
                Expr::Func(Func::Json(quill_sql_types::json::JsonFunc::Object), vec![args.remove(0), value])
            }
            _ => args.remove(0),
        })
    }

    /// The values one of which an IF, IFNULL, COALESCE or CASE returns, converted to the
    /// type of its result (`type_aggregation`) where that is a number or a temporal type, so
    /// a value sent matches the column type announced. Values of a string result are left
    /// as they are: their text is the same, and the binder cannot know the type of a
    /// parameter or user variable that would make a number a string.
    pub(super) fn conform_values(&self, values: Vec<&mut Expr>) {
        let types: Vec<SqlType> = values.iter().map(|v| self.type_of(v)).collect();
        let result = crate::type_aggregation::aggregate(&types);
        if !(result.is_numeric() || result.is_temporal()) {
            return;
        }
        for (value, ty) in values.into_iter().zip(&types) {
            if crate::type_aggregation::needs_conversion(ty, &result) {
                let taken = std::mem::replace(value, Expr::Const(Value::Null));
                *value = Expr::Cast(Box::new(taken), result.clone());
            }
        }
    }

    /// A truth value compared with JSON: MySQL makes TRUE, FALSE and every comparison's
    /// result the JSON boolean, so `CASE JSON_EXTRACT('{"k": true}', '$.k') WHEN true` hits;
    /// `other` is returned unchanged unless `json` is JSON and it is such a value.
    pub(super) fn truth_as_json(&self, json: &Expr, other_ast: &ast::Expr, other: Expr) -> Expr {
        let literal = matches!(other_ast, ast::Expr::Value(v) if matches!(v.value, ast::Value::Boolean(_)));
        if (literal || other.is_truth_value()) && self.type_of(json) == SqlType::Json && self.type_of(&other) != SqlType::Json {
            self.to_json(other, literal)
        } else {
            other
        }
    }

    pub(super) fn to_json(&self, e: Expr, literal_truth: bool) -> Expr {
        let json = self.type_of(&e) == SqlType::Json;
        let truth = literal_truth || e.is_truth_value();
        Expr::Func(Func::ToJson(json, truth), vec![e])
    }

    /// `f(...) OVER (...)`: a window function call (`window`), collected into the block's
    /// windows; its value is read from the row's window values.
    pub(super) fn window_call(&self, name: &str, over: &ast::WindowType, args: &[&FunctionArgExpr], distinct: bool) -> Result<Expr> {
        let Some(windows) = self.windows else {
            return Err(SqlError::new(
                codes::ER_WINDOW_INVALID_WINDOW_FUNC_USE,
                format!("You cannot use the window function '{}' in this context.'", name.to_ascii_lowercase()),
            ));
        };
        // Arguments, partitions and orders see aggregates (SUM(SUM(x)) OVER ...), but no
        // other window function.
        let inner = Binder { windows: None, ..self.clone_shallow() };
        let spec = self.window_spec(over)?;
        let bound: Vec<Expr> = args
            .iter()
            .map(|a| match a {
                FunctionArgExpr::Expr(e) => inner.bind(e),
                FunctionArgExpr::Wildcard if name == "COUNT" => Ok(Expr::Const(Value::Int(1))),
                _ => Err(SqlError::parse(name)),
            })
            .collect::<Result<_>>()?;
        let func = match (crate::window::WindowFunc::named(name), agg_func(name)) {
            (Some(func), _) => func,
            (None, Some(agg)) => {
                if distinct {
                    return Err(SqlError::unsupported(format!("<window function>({}DISTINCT)", name.to_ascii_lowercase())));
                }
                let star = matches!(args.first(), Some(FunctionArgExpr::Wildcard));
                let func = if agg == AggFunc::Count && star { AggFunc::CountStar } else { agg };
                let arg = if star || bound.is_empty() { None } else { Some(inner.aggregate_argument(agg, name, false, bound.clone())?) };
                let arg_ty = arg.as_ref().map_or(SqlType::bigint(), |a| inner.type_of(a));
                let collation = arg.as_ref().map_or(Collation::default(), |a| inner.collation_of(a));
                crate::window::WindowFunc::Aggregate(AggSpec { func, arg, distinct: false, ty: agg_type(func, &arg_ty), collation })
            }
            (None, None) => return Err(SqlError::new(codes::ER_SP_DOES_NOT_EXIST, format!("FUNCTION {name} does not exist"))),
        };
        let (min, max) = func.arity();
        if bound.len() < min || bound.len() > max {
            return Err(SqlError::new(codes::ER_WRONG_PARAMCOUNT_TO_NATIVE_FCT, format!("Incorrect parameter count in the call to native function '{name}'")));
        }
        let ty = func.result_type(bound.first().map(|a| inner.type_of(a)).as_ref());
        let partition = spec.partition_by.iter().map(|e| inner.bind(e)).collect::<Result<Vec<_>>>()?;
        let mut order = Vec::new();
        for o in &spec.order_by {
            let e = inner.bind(&o.expr)?;
            let collation = inner.collation_of(&e);
            order.push((e, !matches!(o.options.sort, Some(ast::OrderBySort::Desc)), collation));
        }
        let frame = match &spec.window_frame {
            None => crate::window::Frame::default_for(!order.is_empty()),
            Some(frame) => {
                let bound = |b: &ast::WindowFrameBound| -> Result<crate::window::FrameBound> {
                    use crate::window::FrameBound as F;
                    Ok(match b {
                        ast::WindowFrameBound::CurrentRow => F::CurrentRow,
                        ast::WindowFrameBound::Preceding(None) => F::UnboundedPreceding,
                        ast::WindowFrameBound::Following(None) => F::UnboundedFollowing,
                        ast::WindowFrameBound::Preceding(Some(e)) => F::Preceding(inner.bind(e)?),
                        ast::WindowFrameBound::Following(Some(e)) => F::Following(inner.bind(e)?),
                    })
                };
                let rows = match frame.units {
                    ast::WindowFrameUnits::Rows => true,
                    ast::WindowFrameUnits::Range => false,
                    ast::WindowFrameUnits::Groups => return Err(SqlError::unsupported("GROUPS frames")),
                };
                let end = frame.end_bound.as_ref().map_or(Ok(crate::window::FrameBound::CurrentRow), bound)?;
                crate::window::Frame { rows, start: bound(&frame.start_bound)?, end }
            }
        };
        let mut list = windows.borrow_mut();
        list.push(WindowSpec { func, args: bound, partition, order, frame, ty: ty.clone() });
        Ok(Expr::Window(list.len() - 1, ty))
    }

    /// The window an OVER clause means: its own, or a named window's (`OVER w`, or `OVER (w
    /// ORDER BY ...)`, which adds to `w`), as MySQL resolves them.
    pub(super) fn window_spec(&self, over: &ast::WindowType) -> Result<ast::WindowSpec> {
        let named = |name: &ast::Ident| -> Result<ast::WindowSpec> {
            let mut seen = 0;
            let mut current = name.clone();
            loop {
                let found = self.window_names.iter().find(|d| d.0.value.eq_ignore_ascii_case(&current.value));
                match found.map(|d| &d.1) {
                    Some(ast::NamedWindowExpr::WindowSpec(spec)) => return self.window_spec(&ast::WindowType::WindowSpec(spec.clone())),
                    Some(ast::NamedWindowExpr::NamedWindow(next)) if seen < self.window_names.len() => {
                        seen += 1;
                        current = next.clone();
                    }
                    _ => return Err(SqlError::new(codes::ER_WINDOW_NO_SUCH_WINDOW, format!("Window name '{}' is not defined.", name.value))),
                }
            }
        };
        match over {
            ast::WindowType::NamedWindow(name) => named(name),
            ast::WindowType::WindowSpec(spec) => match &spec.window_name {
                None => Ok(spec.clone()),
                Some(base) => {
                    // MySQL's rules: the window adds an ORDER BY (if its base has none) and a
                    // frame, never partitioning, and no window builds on one with a frame.
                    let mut merged = named(base)?;
                    if !spec.partition_by.is_empty() {
                        return Err(SqlError::new(codes::ER_WINDOW_NO_CHILD_PARTITIONING, "A window which depends on another cannot define partitioning."));
                    }
                    if merged.window_frame.is_some() {
                        return Err(SqlError::new(
                            codes::ER_WINDOW_NO_INHERIT_FRAME,
                            format!("Window '{}' has a frame definition, so cannot be referenced by another window.", base.value),
                        ));
                    }
                    if !spec.order_by.is_empty() {
                        if !merged.order_by.is_empty() {
                            return Err(SqlError::new(
                                codes::ER_WINDOW_NO_REDEFINE_ORDER_BY,
                                format!("Window '<unnamed window>' cannot inherit '{}' since both contain an ORDER BY clause.", base.value),
                            ));
                        }
                        merged.order_by.clone_from(&spec.order_by);
                    }
                    merged.window_frame.clone_from(&spec.window_frame);
                    merged.window_name = None;
                    Ok(merged)
                }
            },
        }
    }

    /// CAST / CONVERT: a temporal value cast to text keeps its own precision
    /// (`CAST(time3_column AS CHAR)` is `13:45:07.250`), as string functions see it.
    pub(super) fn cast(&self, expr: &ast::Expr, data_type: &ast::DataType) -> Result<Expr> {
        let x = self.bind(expr)?;
        let ty = cast_type(data_type)?;
        let x = match self.type_of(&x) {
            SqlType::DateTime(f) | SqlType::Timestamp(f) | SqlType::Time(f) if ty.is_string() => Expr::Func(Func::TemporalText(f), vec![x]),
            _ => x,
        };
        Ok(Expr::Cast(Box::new(x), ty))
    }
}

fn agg_func(name: &str) -> Option<AggFunc> {
    Some(match name {
        "COUNT" => AggFunc::Count,
        "SUM" => AggFunc::Sum,
        "AVG" => AggFunc::Avg,
        "MIN" => AggFunc::Min,
        "MAX" => AggFunc::Max,
        "GROUP_CONCAT" => AggFunc::GroupConcat,
        "BIT_AND" => AggFunc::BitAnd,
        "BIT_OR" => AggFunc::BitOr,
        "BIT_XOR" => AggFunc::BitXor,
        "VAR_POP" | "VARIANCE" => AggFunc::Variance { sample: false, root: false },
        "VAR_SAMP" => AggFunc::Variance { sample: true, root: false },
        "STDDEV_POP" | "STDDEV" | "STD" => AggFunc::Variance { sample: false, root: true },
        "STDDEV_SAMP" => AggFunc::Variance { sample: true, root: true },
        "JSON_ARRAYAGG" => AggFunc::JsonArrayAgg,
        "JSON_OBJECTAGG" => AggFunc::JsonObjectAgg,
        _ => return None,
    })
}

fn agg_type(f: AggFunc, arg: &SqlType) -> SqlType {
    match f {
        AggFunc::Count | AggFunc::CountStar => SqlType::bigint(),
        AggFunc::Sum => match arg {
            SqlType::Int { .. } | SqlType::Year => SqlType::Decimal { precision: 41, scale: 0, unsigned: false },
            SqlType::Decimal { precision, scale, .. } => SqlType::Decimal { precision: (precision + 22).min(65), scale: *scale, unsigned: false },
            _ => SqlType::Double,
        },
        AggFunc::Avg => match arg {
            SqlType::Int { .. } | SqlType::Year => SqlType::Decimal { precision: 14, scale: 4, unsigned: false },
            SqlType::Decimal { precision, scale, .. } => SqlType::Decimal { precision: (precision + 4).min(65), scale: (scale + 4).min(30), unsigned: false },
            _ => SqlType::Double,
        },
        AggFunc::Min | AggFunc::Max => arg.clone(),
        AggFunc::GroupConcat => SqlType::Text { kind: LobKind::Normal, collation: Collation::default() },
        AggFunc::BitAnd | AggFunc::BitOr | AggFunc::BitXor => SqlType::Int { kind: IntKind::Big, unsigned: true, display: None },
        AggFunc::Variance { .. } => SqlType::Double,
        AggFunc::JsonArrayAgg | AggFunc::JsonObjectAgg => SqlType::Json,
    }
}

fn cast_type(dt: &ast::DataType) -> Result<SqlType> {
    use crate::functions::CAST_LENGTH_UNSIZED;
    use ast::DataType as D;
    Ok(match dt {
        D::Signed | D::SignedInteger => SqlType::bigint(),
        D::Unsigned | D::UnsignedInteger => SqlType::Int { kind: IntKind::Big, unsigned: true, display: None },
        D::Char(n) | D::Character(n) | D::Varchar(n) | D::Nvarchar(n) => {
            let len = match n {
                Some(ast::CharacterLength::IntegerLength { length, .. }) => u32::try_from(*length).unwrap_or(u32::MAX).min(CAST_LENGTH_UNSIZED),
                _ => CAST_LENGTH_UNSIZED,
            };
            SqlType::VarChar { len, collation: Collation::default() }
        }
        D::Binary(Some(n)) => SqlType::Binary(u32::try_from(*n).unwrap_or(u32::MAX).min(CAST_LENGTH_UNSIZED)),
        D::Binary(None) => SqlType::VarBinary(CAST_LENGTH_UNSIZED),
        other => SqlType::from_ast(other, Collation::default())?,
    })
}
