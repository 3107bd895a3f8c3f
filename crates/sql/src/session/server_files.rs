//! Files on the server's own disk: where `LOAD DATA INFILE` (without LOCAL) reads and
//! `SELECT ... INTO OUTFILE` / `DUMPFILE` write, under `secure_file_priv` as MySQL rules it.
//!
//! - `secure_file_priv` is NULL (Quill's default): no statement reads or writes a server file
//!   (1290).
//! - It is empty: any path the server process may use.
//! - It is a directory (made absolute, with a trailing `/`, at start-up): only files in it or
//!   below it. The check is on the resolved path, so `..` and symbolic links cannot leave it.
//!
//! A relative name is taken relative to the data directory (MySQL takes a bare name relative
//! to the default database's directory; Quill keeps no directory per database). A written
//! file is created new (1086 when it exists, as MySQL never overwrites one), with the
//! permissions the process's umask gives. Where it sits: inside `session`, used by
//! `session::load` and `session::outfile`.

use std::path::{Path, PathBuf};

use super::Session;
use crate::error::{Result, SqlError, codes};

fn prevented() -> SqlError {
    SqlError::new(codes::ER_OPTION_PREVENTS_STATEMENT, "The MySQL server is running with the --secure-file-priv option so it cannot execute this statement")
}

impl Session {
    /// The path of the server file `name` a statement may read: it exists and lies under
    /// `secure_file_priv` (see the module doc).
    ///
    /// # Errors
    /// 1290 when `secure_file_priv` forbids it, 29 when the file is not there, 13 when it
    /// cannot be resolved.
    pub(super) fn server_file(&self, name: &str) -> Result<PathBuf> {
        let allowed = self.secure_file_priv()?;
        let path = self.absolute(name);
        let resolved = path.canonicalize().map_err(|e| read_error(name, &e))?;
        if let Some(dir) = allowed
            && !resolved.starts_with(&dir)
        {
            return Err(prevented());
        }
        Ok(resolved)
    }

    /// The path of a new server file `name` a statement may create: its directory lies under
    /// `secure_file_priv` and the file does not exist yet.
    ///
    /// # Errors
    /// 1290 when `secure_file_priv` forbids it, 1086 when the file exists, 1 when its
    /// directory cannot be resolved.
    pub(super) fn new_server_file(&self, name: &str) -> Result<PathBuf> {
        let allowed = self.secure_file_priv()?;
        let path = self.absolute(name);
        let (Some(parent), Some(file_name)) = (path.parent(), path.file_name()) else {
            return Err(create_error(name, &std::io::Error::from(std::io::ErrorKind::InvalidInput)));
        };
        let parent = parent.canonicalize().map_err(|e| create_error(name, &e))?;
        if let Some(dir) = allowed
            && !parent.starts_with(&dir)
        {
            return Err(prevented());
        }
        let resolved = parent.join(file_name);
        if resolved.symlink_metadata().is_ok() {
            return Err(SqlError::new(codes::ER_FILE_EXISTS_ERROR, format!("File '{name}' already exists")));
        }
        Ok(resolved)
    }

    /// `secure_file_priv`: `Ok(None)` for any path, `Ok(Some(dir))` for one directory.
    fn secure_file_priv(&self) -> Result<Option<PathBuf>> {
        match self.info.engine.global("secure_file_priv").as_deref() {
            None | Some(crate::vars::SECURE_FILE_PRIV_NONE) => Err(prevented()),
            Some("") => Ok(None),
            Some(dir) => Ok(Some(PathBuf::from(dir))),
        }
    }

    /// `name`, relative to the data directory when it is not absolute.
    fn absolute(&self, name: &str) -> PathBuf {
        let path = Path::new(name);
        if path.is_absolute() {
            return path.to_path_buf();
        }
        PathBuf::from(self.info.engine.global("datadir").unwrap_or_default()).join(path)
    }
}

/// The error for a server file that cannot be read, in MySQL 8's words.
pub(super) fn read_error(name: &str, e: &std::io::Error) -> SqlError {
    let errno = e.raw_os_error().unwrap_or(0);
    if e.kind() == std::io::ErrorKind::NotFound {
        return SqlError::new(codes::EE_FILENOTFOUND, format!("File '{name}' not found (OS errno {errno} - {})", os_message(e)));
    }
    SqlError::new(codes::EE_STAT, format!("Can't get stat of '{name}' (OS errno {errno} - {})", os_message(e)))
}

/// The error for a server file that cannot be created, in MySQL 8's words.
pub(super) fn create_error(name: &str, e: &std::io::Error) -> SqlError {
    let errno = e.raw_os_error().unwrap_or(0);
    SqlError::new(codes::EE_CANTCREATEFILE, format!("Can't create/write to file '{name}' (OS errno {errno} - {})", os_message(e)))
}

/// The operating system's text for an error, without Rust's ` (os error N)` suffix.
fn os_message(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.rfind(" (os error") {
        Some(at) => text[..at].to_owned(),
        None => text,
    }
}
