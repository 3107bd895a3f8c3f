//! `LOAD DATA [LOCAL] INFILE` in a session: checks the statement and the table, reads the
//! file (from the client through the connection's sink, `sink::RowSink::read_local_file`, or
//! from the server's disk under `secure_file_priv`, see `session::server_files`), cuts it into
//! rows (`load_data::Rows`), decodes the fields in the statement's character set, and inserts
//! them (`dml::load`) as one statement: atomic, under the table's metadata lock, in the
//! session's transaction. The load's progress, the share of the file read, is the session's
//! `Progress` in PROCESSLIST.
//!
//! As in MySQL, a LOCAL load treats duplicate keys as IGNORE does unless REPLACE is given
//! (the server cannot stop the client's transfer), and its data errors are warnings unless
//! REPLACE is given and strict mode is on. `local_infile` (MySQL 8's default, OFF) must be ON,
//! and the client must have enabled local files, or the statement gets 3948. A server-side
//! load follows the statement's REPLACE / IGNORE and the session's strict mode, as INSERT does.
//! Where it sits: inside `session`, above `load_data` and `dml`.

use std::sync::atomic::Ordering;

use super::{Outcome, Session};
use crate::charset::Charset;
use crate::dml::{self, FieldTarget, LoadTargets};
use crate::error::{Result, SqlError, codes};
use crate::load_data::{self, Duplicates, LoadSpec, Target};
use crate::query;
use crate::types::SqlType;
use quill_storage::Value;

/// Rows between two updates of a load's progress.
const PROGRESS_ROWS: u64 = 4096;
/// The progress of a finished stage, in thousandths of a percent.
pub const PROGRESS_DONE: u32 = 100_000;

impl Session {
    /// Runs a `LOAD DATA` statement (see the module doc).
    ///
    /// # Errors
    /// The statement's syntax, an unknown table, column or character set, the file rules
    /// above, and the errors of inserting the rows.
    pub(super) async fn load_data(&mut self, sql: &str) -> Result<Outcome> {
        let spec = load_data::parse(sql)?;
        let charset = match &spec.charset {
            Some(name) => Charset::from_name(name).ok_or_else(|| crate::vars::unknown_charset(name))?,
            // MySQL reads a file in the default database's character set.
            None => Charset::from_name(self.info.var("character_set_database")).unwrap_or_default(),
        };
        let (db, name) = query::resolve_table_name(&self.info, &spec.table)?;
        let (columns, types): (Vec<String>, Vec<SqlType>) =
            self.info.engine.catalog().table(&db, &name)?.columns.iter().map(|c| (c.name.clone(), c.ty.clone())).unzip();
        let mut targets = load_targets(&columns, &spec)?;
        let widths = fixed_widths(&spec, &targets, &types)?;
        targets.fixed = spec.format.is_fixed();
        // INSERT on the table; a file of the server's own also needs FILE (1045, as MySQL).
        self.require_table(
            &db,
            &name,
            crate::accounts::INSERT | if spec.duplicates == crate::load_data::Duplicates::Replace { crate::accounts::DELETE } else { 0 },
        )?;
        if !spec.local {
            self.require_file()?;
        }
        self.check_table_lock(&db, &name, true)?;
        self.acquire_locks(vec![((db.clone(), name.clone()), crate::mdl::Mode::Write)], false).await?;
        let (file, duplicates, strict) = if spec.local {
            let enabled = self.info.engine.globals.read().get("local_infile").is_some_and(|v| v == "ON");
            let file = match self.row_sink.as_mut() {
                Some(sink) if enabled => sink.read_local_file(&spec.file)?,
                _ => None,
            };
            let Some(file) = file else {
                return Err(SqlError::new(
                    codes::ER_CLIENT_LOCAL_FILES_DISABLED,
                    "Loading local data is disabled; this must be enabled on both the client and server sides",
                ));
            };
            // LOCAL: duplicates are skipped unless REPLACE is given (see the module doc).
            let duplicates = if spec.duplicates == Duplicates::Replace { Duplicates::Replace } else { Duplicates::Ignore };
            (file, duplicates, duplicates == Duplicates::Replace && self.info.strict())
        } else {
            let path = self.server_file(&spec.file)?;
            let size = std::fs::metadata(&path).map_err(|e| super::server_files::read_error(&spec.file, &e))?.len();
            // The file is held whole while its rows go in, as a LOCAL one is.
            if size > crate::sink::LOCAL_INFILE_BYTES_MAX as u64 {
                return Err(SqlError::unsupported(format!("LOAD DATA of a file larger than {} bytes", crate::sink::LOCAL_INFILE_BYTES_MAX)));
            }
            let file = std::fs::read(&path).map_err(|e| super::server_files::read_error(&spec.file, &e))?;
            (file, spec.duplicates, self.info.strict())
        };
        let progress = self.progress.clone();
        let total = file.len().max(1) as u64;
        let mut rows = load_data::Rows::new(&file, &spec.format).with_widths(&widths).skip_lines(spec.ignore_lines);
        let mut count = 0u64;
        let rows = std::iter::from_fn(move || {
            let fields = rows.next()?;
            count += 1;
            if count.is_multiple_of(PROGRESS_ROWS) {
                let done = rows.position() as u64 * u64::from(PROGRESS_DONE) / total;
                progress.store(u32::try_from(done).unwrap_or(PROGRESS_DONE), Ordering::Relaxed);
            }
            Some(fields.into_iter().map(|f| f.map_or(Value::Null, |bytes| decode(charset, bytes))).collect::<Vec<Value>>())
        });
        let mut variables = Vec::new();
        let outcome = self.run_dml(&[], true, Some(strict), |catalog, cx| {
            let r = dml::load(catalog, cx, &db, &name, &targets, rows, duplicates)?;
            variables = r.variables;
            let info = format!("Records: {}  Deleted: {}  Skipped: {}  Warnings: {}", r.records, r.deleted, r.skipped, cx.warnings.len());
            Ok(dml::DmlResult { affected: r.affected, last_insert_id: r.last_insert_id, last_auto_value: None, info })
        });
        // As MySQL's, the variables keep the last row's values.
        for (name, value) in targets.variables.into_iter().zip(variables) {
            self.info.user_vars.borrow_mut().insert(name, value);
        }
        outcome
    }
}

/// The field widths of a fixed-row load ([`load_data::Format::is_fixed`]): each target
/// column's display width (`types`, by column). Empty for a delimited load.
///
/// # Errors
/// 1409 when a target is a user variable, 1084 when it is a TEXT or BLOB column: neither
/// has a width (as MySQL).
fn fixed_widths(spec: &LoadSpec, targets: &LoadTargets, types: &[SqlType]) -> Result<Vec<usize>> {
    if !spec.format.is_fixed() {
        return Ok(Vec::new());
    }
    targets
        .fields
        .iter()
        .map(|t| match t {
            FieldTarget::Column(c) if matches!(types[*c], SqlType::Text { .. } | SqlType::Blob(_)) => Err(load_data::blobs_and_no_terminated()),
            FieldTarget::Column(c) => Ok(types[*c].display_length() as usize),
            FieldTarget::Variable(_) => {
                Err(SqlError::new(codes::ER_LOAD_FROM_FIXED_SIZE_ROWS_TO_VAR, "Can't load value from file with fixed size rows to variable"))
            }
        })
        .collect()
}

/// A field's bytes as a value: text in `charset` (binary, or bytes not valid in it, stay
/// bytes, and the column's conversion reports them).
fn decode(charset: Charset, bytes: Vec<u8>) -> Value {
    match charset {
        Charset::Binary => Value::Bytes(bytes),
        Charset::Utf8mb4 => match String::from_utf8(bytes) {
            Ok(s) => Value::Str(s),
            Err(e) => Value::Bytes(e.into_bytes()),
        },
        other => match other.decode(&bytes) {
            Some(s) => Value::Str(s.into_owned()),
            None => Value::Bytes(bytes),
        },
    }
}

/// Where each field goes, the variables, and the `SET` columns, checked against the table's
/// column names (1054 for one it does not have).
fn load_targets(columns: &[String], spec: &LoadSpec) -> Result<LoadTargets> {
    let column = |c: &str| columns.iter().position(|n| n.eq_ignore_ascii_case(c)).ok_or_else(|| SqlError::bad_field(c, "field list"));
    let mut targets = LoadTargets::default();
    if spec.targets.is_empty() {
        targets.fields = (0..columns.len()).map(FieldTarget::Column).collect();
    }
    for target in &spec.targets {
        targets.fields.push(match target {
            Target::Column(c) => FieldTarget::Column(column(c)?),
            Target::Variable(v) => {
                let v = v.to_ascii_lowercase();
                let at = targets.variables.iter().position(|n| *n == v).unwrap_or_else(|| {
                    targets.variables.push(v);
                    targets.variables.len() - 1
                });
                FieldTarget::Variable(at)
            }
        });
    }
    for (c, e) in &spec.set {
        targets.set.push((column(c)?, e.clone()));
    }
    Ok(targets)
}
