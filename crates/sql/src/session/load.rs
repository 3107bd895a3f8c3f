//! `LOAD DATA LOCAL INFILE` in a session: checks the statement and the table, asks the
//! client for the file through the connection's sink (`sink::RowSink::read_local_file`),
//! cuts it into rows (`load_data::Rows`) and inserts them (`dml::load`) as one statement:
//! atomic, under the table's shared metadata lock, in the session's transaction.
//!
//! As in MySQL, a LOCAL load treats duplicate keys as IGNORE does unless REPLACE is given
//! (the server cannot stop the client's transfer), and its data errors are warnings unless
//! REPLACE is given and strict mode is on. `local_infile` (MySQL 8's default, OFF) must be ON,
//! and the client must have enabled local files, or the statement gets 3948. Loading a file
//! on the server's side (no LOCAL) gets 1290: Quill reads no server files
//! (`secure_file_priv` has no directory). Where it sits: inside `session`, above
//! `load_data` and `dml`.

use super::{Outcome, Session};
use crate::dml;
use crate::error::{Result, SqlError};
use crate::load_data::{self, Duplicates, Target};
use crate::query;
use quill_storage::Value;

/// MySQL 8's error when local files are disabled on either side.
pub const ER_CLIENT_LOCAL_FILES_DISABLED: (u16, &str) = (3948, "42000");
/// MySQL's error for a statement `secure_file_priv` forbids.
pub const ER_OPTION_PREVENTS_STATEMENT: (u16, &str) = (1290, "HY000");

impl Session {
    /// Runs a `LOAD DATA` statement (see the module doc).
    ///
    /// # Errors
    /// The statement's syntax, an unknown table or column, the local-file rules above, what
    /// Quill does not support yet (user variables and `SET`, character sets other than
    /// utf8mb4 and binary), and the errors of inserting the rows.
    pub(super) async fn load_data(&mut self, sql: &str) -> Result<Outcome> {
        let spec = load_data::parse(sql)?;
        if !spec.local {
            return Err(SqlError::new(
                ER_OPTION_PREVENTS_STATEMENT,
                "The MySQL server is running with the --secure-file-priv option so it cannot execute this statement",
            ));
        }
        if !spec.set.is_empty() || spec.targets.iter().any(|t| matches!(t, Target::Variable(_))) {
            return Err(SqlError::unsupported("LOAD DATA with user variables or SET"));
        }
        if let Some(cs) = &spec.charset
            && !matches!(cs.to_ascii_lowercase().as_str(), "utf8mb4" | "utf8" | "utf8mb3" | "binary")
        {
            return Err(SqlError::unsupported(format!("LOAD DATA CHARACTER SET {cs}")));
        }
        let (db, name) = query::resolve_table_name(&self.info, &spec.table)?;
        let targets: Vec<usize> = {
            let catalog = self.info.engine.catalog();
            let t = catalog.table(&db, &name)?;
            if spec.targets.is_empty() {
                (0..t.columns.len()).collect()
            } else {
                spec.targets
                    .iter()
                    .map(|target| match target {
                        Target::Column(c) => t.column_index(c).ok_or_else(|| SqlError::bad_field(c, "field list")),
                        Target::Variable(_) => unreachable!("refused above"),
                    })
                    .collect::<Result<_>>()?
            }
        };
        self.check_table_lock(&db, &name, true)?;
        self.acquire_locks(vec![((db.clone(), name.clone()), crate::mdl::Mode::Write)], false).await?;
        let enabled = self.info.engine.globals.read().get("local_infile").is_some_and(|v| v == "ON");
        let file = match self.row_sink.as_mut() {
            Some(sink) if enabled => sink.read_local_file(&spec.file)?,
            _ => None,
        };
        let Some(file) = file else {
            return Err(SqlError::new(
                ER_CLIENT_LOCAL_FILES_DISABLED,
                "Loading local data is disabled; this must be enabled on both the client and server sides",
            ));
        };
        // LOCAL: duplicates are skipped unless REPLACE is given (see the module doc).
        let duplicates = if spec.duplicates == Duplicates::Replace { Duplicates::Replace } else { Duplicates::Ignore };
        let strict = duplicates == Duplicates::Replace && self.info.strict();
        let rows = load_data::Rows::new(&file, &spec.format).skip_lines(spec.ignore_lines).map(|fields| {
            fields
                .into_iter()
                .map(|f| match f {
                    None => Value::Null,
                    Some(bytes) => match String::from_utf8(bytes) {
                        Ok(s) => Value::Str(s),
                        Err(e) => Value::Bytes(e.into_bytes()),
                    },
                })
                .collect::<Vec<Value>>()
        });
        self.run_dml(&[], true, Some(strict), |catalog, cx| {
            let r = dml::load(catalog, cx, &db, &name, &targets, rows, duplicates)?;
            let info = format!("Records: {}  Deleted: {}  Skipped: {}  Warnings: {}", r.records, r.deleted, r.skipped, cx.warnings.len());
            Ok(dml::DmlResult { affected: r.affected, last_insert_id: r.last_insert_id, info })
        })
    }
}
