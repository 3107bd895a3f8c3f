//! A view's definition as the catalog keeps it: its name, its query (table names
//! qualified), and how it was declared. Planning a view's query is the planner's
//! (`quill_sql::views`); the checkpoint writes [`ViewMeta::definition`] as a VIEW entry.

use quill_sql_types::ident::quote_identifier as quote;
use sqlparser::ast;

/// A view: its name, what its query is, and how it was declared.
#[derive(Debug, Clone)]
pub struct ViewMeta {
    pub db: String,
    pub name: String,
    /// The view's column list, when it was given one.
    pub columns: Vec<String>,
    /// The query, its table names qualified.
    pub query: ast::Query,
    /// `UNDEFINED`, `MERGE` or `TEMPTABLE` (kept and shown; Quill materializes each read).
    pub algorithm: &'static str,
    /// `user`@`host`, quoted as SHOW CREATE VIEW shows it.
    pub definer: String,
    /// `DEFINER` or `INVOKER` (kept and shown; see the module doc).
    pub security: &'static str,
}

impl ViewMeta {
    /// The statement that makes the view again, as SHOW CREATE VIEW gives it.
    #[must_use]
    pub fn definition(&self) -> String {
        let columns =
            if self.columns.is_empty() { String::new() } else { format!(" ({})", self.columns.iter().map(|c| quote(c)).collect::<Vec<_>>().join(",")) };
        format!(
            "CREATE ALGORITHM={} DEFINER={} SQL SECURITY {} VIEW {}{columns} AS {}",
            self.algorithm,
            self.definer,
            self.security,
            quote(&self.name),
            self.query
        )
    }
}
