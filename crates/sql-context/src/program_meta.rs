//! Stored programs as the catalog keeps them: triggers ([`TriggerMeta`]) and stored
//! procedures and functions ([`RoutineMeta`]), each with its
//! definition as written and its compiled program (`quill_sql_frontend::program`), compiled
//! once when made or loaded. Running a program is the statement layer's (`quill_sql::routines`).
//!
//! A database keeps its triggers in one list ([`crate::catalog::Database::triggers`]) in
//! action order: the triggers of one table, event and timing fire in the order they appear
//! there (`FOLLOWS` / `PRECEDES` put a new one beside another; otherwise it goes last).
//! Trigger names are unique in their database, as MySQL's are. The checkpoint writes each
//! trigger's [`TriggerMeta::definition`] in list order, so loading restores the order.

use std::sync::Arc;

use quill_sql_frontend::program::{Event, Program, Timing};
use quill_sql_types::ident::quote_identifier as quote;

/// A trigger.
#[derive(Debug, Clone)]
pub struct TriggerMeta {
    pub db: String,
    pub name: String,
    /// The table it fires for (in its database).
    pub table: String,
    pub timing: Timing,
    pub event: Event,
    /// The body as written (information_schema's `ACTION_STATEMENT`).
    pub body: String,
    pub creation: Creation,
    pub program: Arc<Program>,
}

/// Who made a stored program, when, and under which settings: what SHOW and
/// information_schema show beside its definition.
#[derive(Debug, Clone)]
pub struct Creation {
    /// `user`, `host`.
    pub definer: (String, String),
    /// The `sql_mode` it was made under (shown; see `docs/stored-programs.md`).
    pub sql_mode: String,
    /// When it was made, in microseconds since the epoch.
    pub created_us: i64,
    pub character_set_client: String,
    pub collation_connection: String,
    pub database_collation: String,
}

impl Creation {
    /// A program made now by `info`'s session, for `definer` (`None`: its own account), in a
    /// database of collation `database_collation`.
    #[must_use]
    pub fn now(info: &crate::session_info::SessionInfo, now_us: i64, definer: Option<(String, String)>, database_collation: &str) -> Creation {
        Creation {
            definer: definer.unwrap_or_else(|| (info.user.clone(), info.account_host.clone())),
            sql_mode: info.var("sql_mode").to_owned(),
            created_us: now_us,
            character_set_client: info.var("character_set_client").to_owned(),
            collation_connection: info.var("collation_connection").to_owned(),
            database_collation: database_collation.to_owned(),
        }
    }

    /// `user@host` as information_schema shows a definer.
    #[must_use]
    pub fn definer_text(&self) -> String {
        format!("{}@{}", self.definer.0, self.definer.1)
    }

    /// Whether `user`@`host` is the definer.
    #[must_use]
    pub fn is_definer(&self, user: &str, host: &str) -> bool {
        self.definer.0 == user && self.definer.1 == host
    }

    /// `DEFINER=`user`@`host`` as SHOW CREATE writes it.
    #[must_use]
    pub fn definer_clause(&self) -> String {
        format!("DEFINER={}@{}", quote(&self.definer.0), quote(&self.definer.1))
    }
}

impl TriggerMeta {
    /// The statement that makes it again, as SHOW CREATE TRIGGER gives it.
    #[must_use]
    pub fn definition(&self) -> String {
        format!(
            "CREATE {} TRIGGER {} {} {} ON {} FOR EACH ROW {}",
            self.creation.definer_clause(),
            quote(&self.name),
            self.timing.name(),
            self.event.name(),
            quote(&self.table),
            self.body
        )
    }
}

/// A stored procedure or function.
#[derive(Debug, Clone)]
pub struct RoutineMeta {
    pub db: String,
    pub name: String,
    pub function: bool,
    pub params: Vec<quill_sql_frontend::program::Param>,
    /// The parameter list as written (information_schema, SHOW CREATE).
    pub params_text: String,
    /// A function's RETURNS type, and as written.
    pub returns: Option<(sqlparser::ast::DataType, String)>,
    pub characteristics: quill_sql_frontend::program_ddl::Characteristics,
    /// The body as written (`ROUTINE_DEFINITION`).
    pub body: String,
    pub creation: Creation,
    pub program: Arc<Program>,
}

impl RoutineMeta {
    /// `PROCEDURE` or `FUNCTION`.
    #[must_use]
    pub fn kind(&self) -> &'static str {
        if self.function { "FUNCTION" } else { "PROCEDURE" }
    }

    /// The statement that makes it again, as SHOW CREATE PROCEDURE / FUNCTION gives it.
    #[must_use]
    pub fn definition(&self) -> String {
        let returns = self.returns.as_ref().map_or(String::new(), |(_, text)| format!(" RETURNS {text}"));
        let characteristics = self.characteristics.text();
        let characteristics = if characteristics.is_empty() { String::new() } else { format!("\n    {characteristics}") };
        format!(
            "CREATE {} {} {}({}){returns}{characteristics}\n{}",
            self.creation.definer_clause(),
            self.kind(),
            quote(&self.name),
            self.params_text,
            self.body
        )
    }
}
