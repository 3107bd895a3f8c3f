//! `SELECT ... INTO OUTFILE` / `INTO DUMPFILE` in a session: checks the path under
//! `secure_file_priv` (`session::server_files`), creates the file (never over an existing
//! one), and runs the query with an `file_sink::FileSink` in place of the connection's row
//! sink, so the rows go to the file as they are produced, whatever their number. The answer
//! is an OK with the rows written, as MySQL's. A statement that fails removes the file it
//! created. Where it sits: inside `session`, above `outfile`.

use sqlparser::ast::Statement;

use super::{Outcome, Session, server_files};
use crate::charset::Charset;
use crate::error::{Result, SqlError, codes};
use crate::file_sink::FileSink;
use crate::into_file::IntoFile;
use crate::sink::RowSink;
use crate::text::StatementText;

impl Session {
    /// Runs a query whose `INTO OUTFILE` / `DUMPFILE` clause `into_file::find` cut out.
    ///
    /// # Errors
    /// 1290, 1086 or 1 for the file (see `server_files`), 1115 for an unknown character set,
    /// 1172 for a DUMPFILE of more than one row, and the query's own errors.
    pub(super) async fn select_into_file(&mut self, statement: &StatementText, into: IntoFile) -> Result<Outcome> {
        let charset = match &into.charset {
            Some(name) => Charset::from_name(name).ok_or_else(|| crate::vars::unknown_charset(name))?,
            None => Charset::Utf8mb4,
        };
        let stmts = self.parse(&super::rewrite_lock_in_share_mode(&into.query), statement.operators, statement.div_operators)?;
        let Some(stmt @ Statement::Query(_)) = stmts.first() else {
            return Err(SqlError::parse(&into.query));
        };
        self.require_file()?;
        self.check_privileges(stmt)?;
        let path = self.new_server_file(&into.file)?;
        let file = std::fs::File::create_new(&path).map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                SqlError::new(codes::ER_FILE_EXISTS_ERROR, format!("File '{}' already exists", into.file))
            } else {
                server_files::create_error(&into.file, &e)
            }
        })?;
        let sink = FileSink::new(file, into.kind, into.format, charset);
        let connection_sink = self.row_sink.replace(Box::new(sink));
        let may_stream = std::mem::replace(&mut self.may_stream, true);
        let outcome = self.execute(stmt, &[], &into.query).await;
        let sink = std::mem::replace(&mut self.row_sink, connection_sink);
        self.may_stream = may_stream;
        let mut sink = sink.and_then(|s| s.into_any().downcast::<FileSink>().ok()).expect("the file sink is where it was put");
        let written = outcome.and_then(|outcome| {
            if let Outcome::Rows(rows) = outcome {
                // A locking read builds its result whole (see `sink`): written here.
                sink.begin(&rows.columns, None)?;
                rows.rows.iter().try_for_each(|row| sink.row(row))?;
            }
            sink.finish()?;
            Ok(sink.rows)
        });
        match written {
            Ok(rows) => Ok(Outcome::Done { affected: rows, last_insert_id: 0, info: String::new() }),
            Err(e) => {
                drop(sink);
                let _ = std::fs::remove_file(&path);
                Err(e)
            }
        }
    }
}
