//! SET: system variables (`SET [GLOBAL | SESSION] name = expr`, `@@name`), user variables
//! (`@v`), `SET NAMES` and `SET CHARACTER SET`, several at once separated by commas. Every
//! assignment is planned (names and values checked) before any is applied, so a statement
//! that fails changes nothing, as in MySQL.

use quill_storage::{ReadView, Value};
use sqlparser::ast::{self, Statement};

use crate::charset::Charset;
use crate::error::{Result, SqlError, Warning, codes};
use crate::text::StatementText;
use crate::vars;

use super::{Outcome, Session};

impl Session {
    /// A parsed SET (a prepared `SET @a = ?`, say): every assignment is checked before any
    /// is applied, as in MySQL.
    pub(super) fn set(&mut self, set: &ast::Set, params: &[Value]) -> Result<Outcome> {
        let plans = match set {
            ast::Set::SetNames { charset_name, collation_name } => vec![names_plan(&charset_name.value, collation_name.as_deref())?],
            ast::Set::SetNamesDefault { .. } => vec![names_plan("DEFAULT", None)?],
            ast::Set::SingleAssignment { scope, hivevar: _, variable, values } => {
                let v = values.first().ok_or_else(|| SqlError::parse("SET"))?;
                vec![self.plan_assignment(scope.as_ref(), variable, v, params)?]
            }
            ast::Set::MultipleAssignments { assignments } => {
                assignments.iter().map(|a| self.plan_assignment(a.scope.as_ref(), &a.name, &a.value, params)).collect::<Result<_>>()?
            }
            ast::Set::SetTransaction { modes, session, .. } => {
                for m in modes {
                    if let ast::TransactionMode::IsolationLevel(l) = m {
                        let level = match l {
                            ast::TransactionIsolationLevel::ReadUncommitted => "READ-UNCOMMITTED",
                            ast::TransactionIsolationLevel::ReadCommitted => "READ-COMMITTED",
                            ast::TransactionIsolationLevel::RepeatableRead => "REPEATABLE-READ",
                            _ => "SERIALIZABLE",
                        };
                        if *session {
                            self.info.vars.values.insert("transaction_isolation", level.into());
                            self.info.vars.values.insert("tx_isolation", level.into());
                        }
                    }
                }
                return Ok(Outcome::ok());
            }
            other => return Err(SqlError::unsupported(format!("{other}"))),
        };
        self.apply_set_plans(plans)
    }

    /// `SET item, item, ...` as MySQL reads it: any mix of assignments (`[GLOBAL | SESSION]
    /// name = expr`, `@@scope.name = expr`, `@user = expr`), `NAMES cs [COLLATE c]` and
    /// `CHARACTER SET cs`, in any order. A scope keyword holds for the assignments after
    /// it. Every item is checked (and every value computed) before any is applied.
    pub(super) fn set_statement(&mut self, statement: &StatementText) -> Result<Outcome> {
        let text = crate::parse::rewrite_set_assignment(&statement.text);
        let body = text.trim_start()[3..].trim();
        let mut scope: Option<ast::ContextModifier> = None;
        let mut plans = Vec::new();
        for item in split_top_level_commas(body) {
            let words: Vec<&str> = item.split_whitespace().collect();
            let up = |i: usize| words.get(i).map(|w| w.to_ascii_uppercase()).unwrap_or_default();
            let plan = match up(0).as_str() {
                "NAMES" => {
                    let collate = (up(2) == "COLLATE").then(|| words.get(3).copied()).flatten();
                    if words.len() != if collate.is_some() { 4 } else { 2 } {
                        return Err(SqlError::parse(item));
                    }
                    names_plan(words[1], collate)?
                }
                "CHARSET" if words.len() == 2 => character_set_plan(words[1])?,
                "CHARACTER" if up(1) == "SET" && words.len() == 3 => character_set_plan(words[2])?,
                _ => {
                    let mut assignment = item;
                    let keyword = up(0);
                    if matches!(keyword.as_str(), "GLOBAL" | "SESSION" | "LOCAL" | "PERSIST" | "PERSIST_ONLY") {
                        scope = Some(if keyword == "GLOBAL" || keyword.starts_with("PERSIST") {
                            ast::ContextModifier::Global
                        } else {
                            ast::ContextModifier::Session
                        });
                        assignment = item.trim_start()[keyword.len()..].trim_start();
                    }
                    // `@`name` = v` (a quoted user variable name, as PyMySQL's callproc sends):
                    // the parser reads no quoted name after `@`.
                    if let Some((name, value)) = quoted_user_variable(assignment) {
                        let value = quill_sql_frontend::compound::parse_expr(value)?;
                        plans.push(SetPlan::User { name, value: self.eval_const(&value, &[])? });
                        continue;
                    }
                    let parsed = crate::parse::parse(&format!("SET {assignment}"), statement.operators, statement.div_operators)?;
                    match parsed.first() {
                        Some(Statement::Set(ast::Set::SingleAssignment { variable, values, .. })) if parsed.len() == 1 && values.len() == 1 => {
                            self.plan_assignment(scope.as_ref(), variable, &values[0], &[])?
                        }
                        _ => return Err(SqlError::parse(item)),
                    }
                }
            };
            plans.push(plan);
        }
        if plans.is_empty() {
            return Err(SqlError::parse(""));
        }
        self.info.row_count = 0;
        self.apply_set_plans(plans)
    }

    /// Apply a SET's items, every one checked already, in order.
    pub(super) fn apply_set_plans(&mut self, plans: Vec<SetPlan>) -> Result<Outcome> {
        for plan in plans {
            self.apply_set(plan)?;
        }
        Ok(Outcome::ok())
    }

    /// Check one assignment and compute its value, changing nothing.
    pub(super) fn plan_assignment(
        &mut self,
        scope: Option<&ast::ContextModifier>,
        name: &ast::ObjectName,
        value: &ast::Expr,
        params: &[Value],
    ) -> Result<SetPlan> {
        let parts: Vec<String> = name.0.iter().map(|p| p.as_ident().map_or_else(|| p.to_string(), |i| i.value.clone())).collect();
        let (mut global, var) = match parts.as_slice() {
            [one] if one.starts_with("@@") => (false, one.trim_start_matches("@@").to_owned()),
            [one] if one.starts_with('@') => {
                let v = self.eval_const(value, params)?;
                return Ok(SetPlan::User { name: one[1..].to_ascii_lowercase(), value: v });
            }
            [one] => (matches!(scope, Some(ast::ContextModifier::Global)), one.clone()),
            [s, v] if s.eq_ignore_ascii_case("@@global") || s.eq_ignore_ascii_case("@@persist") => (true, v.clone()),
            [s, v] if s.eq_ignore_ascii_case("@@session") || s.eq_ignore_ascii_case("@@local") => (false, v.clone()),
            _ => return Err(SqlError::parse(&name.to_string())),
        };
        if parts.len() == 1 && parts[0].starts_with("@@") && matches!(scope, Some(ast::ContextModifier::Global)) {
            global = true;
        }
        let def = vars::require(&var)?;
        let v = match value {
            ast::Expr::Identifier(i) if i.quote_style.is_none() && i.value.eq_ignore_ascii_case("DEFAULT") => match def.kind {
                vars::Kind::Int(_) | vars::Kind::IntChoice(_) => def.default.parse::<u64>().map_or_else(|_| Value::Str(def.default.to_owned()), Value::UInt),
                _ => Value::Str(def.default.to_owned()),
            },
            ast::Expr::Identifier(i) if i.quote_style.is_none() && !i.value.starts_with('@') => Value::Str(i.value.clone()),
            other => self.eval_const(other, params)?,
        };
        if def.effect == vars::Effect::ReadOnly {
            return Err(SqlError::new(codes::ER_INCORRECT_GLOBAL_LOCAL_VAR, format!("Variable '{}' is a read only variable", def.name)));
        }
        if global && def.scope == vars::Scope::Session {
            return Err(SqlError::new(
                codes::ER_INCORRECT_GLOBAL_LOCAL_VAR,
                format!("Variable '{}' is a SESSION variable and can't be used with SET GLOBAL", def.name),
            ));
        }
        if !global && def.scope == vars::Scope::Global {
            return Err(SqlError::new(codes::ER_GLOBAL_VARIABLE, format!("Variable '{}' is a GLOBAL variable and should be set with SET GLOBAL", def.name)));
        }
        let normalised = vars::normalise(def, &v)?;
        Ok(SetPlan::System { def, global, normalised })
    }

    /// Apply one checked item of a SET.
    pub(super) fn apply_set(&mut self, plan: SetPlan) -> Result<()> {
        match plan {
            SetPlan::User { name, value } => {
                self.info.user_vars.borrow_mut().insert(name, value);
            }
            SetPlan::Names { charset, collation } => {
                for v in ["character_set_client", "character_set_connection", "character_set_results"] {
                    self.info.vars.values.insert(v, charset.name().to_owned());
                }
                self.set_connection_collation(&collation);
            }
            SetPlan::CharacterSet { charset } => {
                self.info.vars.values.insert("character_set_client", charset.name().to_owned());
                self.info.vars.values.insert("character_set_results", charset.name().to_owned());
                let database = Charset::from_name(self.info.var("character_set_database")).unwrap_or_default();
                self.info.vars.values.insert("character_set_connection", database.name().to_owned());
                self.set_connection_collation(database.default_collation());
            }
            SetPlan::System { def, global, normalised } => {
                let value = normalised.value;
                if def.name == "autocommit" && !global && value == "ON" {
                    // Turning autocommit on commits the open transaction.
                    self.commit()?;
                }
                if def.effect == vars::Effect::Inert {
                    self.warnings.push(Warning {
                        level: "Warning",
                        code: codes::ER_WARN_DEPRECATED_SYNTAX.0,
                        message: format!("'{}' is accepted for compatibility; Quill does not act on it", def.name),
                    });
                }
                self.warnings.extend(normalised.warning);
                if global {
                    self.require_global(crate::accounts::SUPER, "SUPER or SYSTEM_VARIABLES_ADMIN")?;
                    self.warnings.extend(crate::durability::apply_global(&self.info.engine, def.name, &value)?);
                }
                let pair: [&'static str; 2];
                let names: &[&'static str] = match def.name {
                    "transaction_isolation" | "tx_isolation" => &["transaction_isolation", "tx_isolation"],
                    "transaction_read_only" | "tx_read_only" => &["transaction_read_only", "tx_read_only"],
                    // As MySQL: super_read_only implies read_only, and read_only=OFF clears both.
                    "super_read_only" if global && value == "ON" => &["super_read_only", "read_only"],
                    "read_only" if global && value == "OFF" => &["read_only", "super_read_only"],
                    "character_set_connection" if !global => {
                        let charset = Charset::from_name(&value).unwrap_or_default();
                        self.set_connection_collation(charset.default_collation());
                        &["character_set_connection"]
                    }
                    "collation_connection" if !global => {
                        self.set_connection_collation(&value);
                        return Ok(());
                    }
                    n => match vars::alias(n) {
                        Some(other) => {
                            pair = [n, other];
                            &pair
                        }
                        None => std::slice::from_ref(&def.name),
                    },
                };
                for &n in names {
                    if global {
                        self.info.engine.globals.write().values.insert(n, value.clone());
                    } else {
                        self.info.vars.values.insert(n, value.clone());
                    }
                }
                if global
                    && def.name.starts_with("rpl_semi_sync_")
                    && let Some(acks) = self.info.engine.commit_acks.get()
                {
                    acks.reload();
                }
            }
        }
        Ok(())
    }

    /// `collation_connection` (and the collation string literals compare under).
    pub(super) fn set_connection_collation(&mut self, name: &str) {
        self.info.vars.values.insert("collation_connection", name.to_ascii_lowercase());
        self.info.connection_collation = quill_storage::Collation::from_name(name).unwrap_or_default();
    }

    /// The client's handshake named its character set by collation number: as `SET NAMES`.
    pub fn set_client_collation_id(&mut self, id: u8) {
        if let Some(charset) = Charset::from_collation_id(id) {
            let collation = match id {
                45 => "utf8mb4_general_ci",
                46 => "utf8mb4_bin",
                83 => "utf8mb3_bin",
                47 => "latin1_bin",
                48 => "latin1_general_ci",
                _ => charset.default_collation(),
            };
            let _ = self.apply_set(SetPlan::Names { charset, collation: collation.to_owned() });
        }
    }

    pub(super) fn eval_const(&self, e: &ast::Expr, params: &[Value]) -> Result<Value> {
        let catalog = self.info.engine.catalog();
        let env = crate::show::statement_env(&catalog, ReadView::current(0), params, self.info.now_us(), &self.info);
        let scope = crate::bind::Scope::default();
        crate::bind::Binder::new(&env, &scope, "field list").bind(e)?.eval(&env, &crate::expr::RowCtx::new(&[]))
    }
}

/// One checked item of a SET statement, applied once every item has been checked.
pub(super) enum SetPlan {
    User { name: String, value: Value },
    System { def: &'static vars::VarDef, global: bool, normalised: vars::Normalised },
    Names { charset: Charset, collation: String },
    CharacterSet { charset: Charset },
}

/// `@`name` = value` (or `'name'`, `"name"`): the name (lower-cased, doubled quotes undone)
/// and the value's text.
fn quoted_user_variable(assignment: &str) -> Option<(String, &str)> {
    let rest = assignment.trim_start().strip_prefix('@')?;
    let quote = rest.chars().next().filter(|c| matches!(c, '`' | '\'' | '"'))?;
    let mut name = String::new();
    let mut chars = rest[1..].char_indices();
    let end = loop {
        let (i, c) = chars.next()?;
        if c == quote {
            if rest[1 + i + 1..].starts_with(quote) {
                name.push(quote);
                chars.next();
                continue;
            }
            break 1 + i + 1;
        }
        name.push(c);
    };
    let value = rest[end..].trim_start().strip_prefix('=')?;
    Some((name.to_ascii_lowercase(), value.trim()))
}

/// `NAMES cs [COLLATE c]` (`cs` may be DEFAULT: utf8mb4).
fn names_plan(charset: &str, collation: Option<&str>) -> Result<SetPlan> {
    let name = charset.trim_matches(['\'', '"', '`']);
    let charset =
        if name.eq_ignore_ascii_case("DEFAULT") { Charset::default() } else { Charset::from_name(name).ok_or_else(|| vars::unknown_charset(name))? };
    let collation = match collation.map(|c| c.trim_matches(['\'', '"', '`'])) {
        Some(c) if quill_storage::Collation::from_name(c).is_some() && !collation_fits(c, charset) => {
            return Err(SqlError::new(codes::ER_COLLATION_CHARSET_MISMATCH, format!("COLLATION '{c}' is not valid for CHARACTER SET '{}'", charset.name())));
        }
        Some(c) if quill_storage::Collation::from_name(c).is_some() => c.to_ascii_lowercase(),
        Some(c) => return Err(SqlError::new(codes::ER_UNKNOWN_COLLATION, format!("Unknown collation: '{c}'"))),
        None => charset.default_collation().to_owned(),
    };
    Ok(SetPlan::Names { charset, collation })
}

/// Whether collation `name` belongs to `charset` (`utf8_` names are utf8mb3's).
fn collation_fits(name: &str, charset: Charset) -> bool {
    let name = name.to_ascii_lowercase();
    match charset {
        Charset::Utf8mb4 => name.starts_with("utf8mb4_"),
        Charset::Utf8mb3 => name.starts_with("utf8mb3_") || name.starts_with("utf8_"),
        Charset::Latin1 => name.starts_with("latin1_"),
        Charset::Binary => name == "binary",
    }
}

/// `CHARACTER SET cs` (or DEFAULT).
fn character_set_plan(charset: &str) -> Result<SetPlan> {
    let name = charset.trim_matches(['\'', '"', '`']);
    let charset =
        if name.eq_ignore_ascii_case("DEFAULT") { Charset::default() } else { Charset::from_name(name).ok_or_else(|| vars::unknown_charset(name))? };
    Ok(SetPlan::CharacterSet { charset })
}

/// `text` split at commas outside quotes, backquotes and parentheses.
fn split_top_level_commas(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut quote, mut start) = (0usize, None::<u8>, 0);
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        match quote {
            Some(q) if b == b'\\' && q != b'`' => i += 1,
            Some(q) if b == q => quote = None,
            Some(_) => {}
            None => match b {
                b'\'' | b'"' | b'`' => quote = Some(b),
                b'(' => depth += 1,
                b')' => depth = depth.saturating_sub(1),
                b',' if depth == 0 => {
                    out.push(text[start..i].trim());
                    start = i + 1;
                }
                _ => {}
            },
        }
        i += 1;
    }
    let last = text[start..].trim();
    if !last.is_empty() || !out.is_empty() {
        out.push(last);
    }
    out
}
