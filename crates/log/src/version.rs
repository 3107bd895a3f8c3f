//! The log format's version number (`docs/log-format.md`, "Version"): a file `VERSION` in the
//! log directory holds the version of the newest format the log's records may use, as
//! decimal text and a newline. A build reads every version up to its own
//! ([`LOG_FORMAT_VERSION`]) and refuses to open a newer log, whose records it could take for a
//! damaged tail and cut. A log directory without the file was written before the file
//! existed: version 1.
//!
//! Opening the log ([`check_and_raise`]) writes this build's version before any record is
//! appended (atomically, `quill_io::replace_file`), so the file never names a version older
//! than a record in the log.
//!
//! Where it sits: called by `Segments::open`, below the writer and the reader.

use std::io;
use std::path::Path;

use quill_io::Fs;

/// The format this build writes:
/// 1. the first: PUT with the first row encoding, DELETE without an image, DDL without
///    session context;
/// 2. row images (PUT), then row kinds with before images (INSERT, UPDATE, DELETE) and DDL
///    with its `sql_mode` and `time_zone`;
/// 3. commit records of replicated transactions with sequence number 0;
/// 4. their ORIGIN change (the GTID they came with).
pub const LOG_FORMAT_VERSION: u32 = 4;
/// The version file's name in the log directory.
pub const VERSION_FILE: &str = "VERSION";
/// The most bytes a version file holds: a `u32` in decimal and a newline.
const VERSION_FILE_BYTES_MAX: u64 = 11;

/// Reads the version of the log in `dir`, refuses one newer than this build's, and records
/// this build's version if the file says less.
///
/// # Errors
/// I/O errors; a version file that does not hold a version; a newer format.
pub fn check_and_raise(fs: &dyn Fs, dir: &Path) -> io::Result<u32> {
    let path = dir.join(VERSION_FILE);
    let found = if fs.exists(&path) { read_version(fs, &path)? } else { 1 };
    if found > LOG_FORMAT_VERSION {
        return Err(io::Error::other(format!(
            "the commit log in {} is format version {found}; this build of Quill reads up to version {LOG_FORMAT_VERSION}",
            dir.display()
        )));
    }
    if found < LOG_FORMAT_VERSION || !fs.exists(&path) {
        quill_io::replace_file(fs, &path, format!("{LOG_FORMAT_VERSION}\n").as_bytes())?;
    }
    Ok(found)
}

fn read_version(fs: &dyn Fs, path: &Path) -> io::Result<u32> {
    let file = fs.open(path, false)?;
    let bad = || io::Error::other(format!("{} does not hold a log format version", path.display()));
    if file.len()? > VERSION_FILE_BYTES_MAX {
        return Err(bad());
    }
    let text = String::from_utf8(file.read_all()?).map_err(|_| bad())?;
    text.trim_end_matches('\n').parse().map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use super::*;
    use quill_io::SimFs;
    use std::path::PathBuf;

    fn write(fs: &SimFs, dir: &Path, text: &str) {
        let file = fs.open(&dir.join(VERSION_FILE), true).unwrap();
        file.set_len(0).unwrap();
        file.write_at(text.as_bytes(), 0).unwrap();
    }

    fn read(fs: &SimFs, dir: &Path) -> String {
        String::from_utf8(fs.open(&dir.join(VERSION_FILE), false).unwrap().read_all().unwrap()).unwrap()
    }

    #[test]
    fn a_log_without_a_version_is_version_1_and_is_raised_to_this_builds() {
        let fs = SimFs::new();
        let dir = PathBuf::from("/log");
        fs.create_dir_all(&dir).unwrap();
        assert_eq!(check_and_raise(&fs, &dir).unwrap(), 1);
        assert_eq!(read(&fs, &dir), format!("{LOG_FORMAT_VERSION}\n"));
        assert_eq!(check_and_raise(&fs, &dir).unwrap(), LOG_FORMAT_VERSION);
        // The raised version survives a crash: it was synced and renamed into place.
        let (crashed, _) = fs.crash(7);
        assert_eq!(read(&crashed, &dir), format!("{LOG_FORMAT_VERSION}\n"));
    }

    #[test]
    fn a_newer_or_garbled_version_is_refused_and_left_as_it_is() {
        let fs = SimFs::new();
        let dir = PathBuf::from("/log");
        fs.create_dir_all(&dir).unwrap();
        write(&fs, &dir, &format!("{}\n", LOG_FORMAT_VERSION + 1));
        let e = check_and_raise(&fs, &dir).unwrap_err();
        assert!(e.to_string().contains("reads up to version"), "{e}");
        assert_eq!(read(&fs, &dir), format!("{}\n", LOG_FORMAT_VERSION + 1));
        for garbled in ["", "two\n", "99999999999\n"] {
            write(&fs, &dir, garbled);
            assert!(check_and_raise(&fs, &dir).is_err(), "{garbled:?}");
        }
    }
}
