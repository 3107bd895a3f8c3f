//! The server's UUID (`server_uuid`), which names its transactions in GTIDs
//! (`server_uuid:N`): made at random (version 4) the first time a data directory is opened,
//! and kept in `<datadir>/auto.cnf` as MySQL keeps it (`[auto]`, then `server-uuid=<uuid>`),
//! so it stays the same across restarts and moves with the data directory. The file is
//! written atomically (`quill_io::replace_file`): a crash leaves none or the whole of it.
//!
//! Where it sits: read by `durability::open`, which makes it the read-only global
//! variable.

use std::io;
use std::path::Path;

use quill_io::Fs;
use rand::RngExt;

/// The file that keeps the UUID, in the data directory.
pub const AUTO_CNF: &str = "auto.cnf";
/// The longest `auto.cnf` read: MySQL's holds a section line and one setting.
const AUTO_CNF_BYTES_MAX: u64 = 4096;

/// The UUID kept in `datadir`, made and kept first if there is none.
///
/// # Errors
/// I/O errors; an `auto.cnf` that does not hold a UUID (it is left as it is).
pub fn load_or_create(fs: &dyn Fs, datadir: &Path) -> io::Result<String> {
    let path = datadir.join(AUTO_CNF);
    if fs.exists(&path) {
        let file = fs.open(&path, false)?;
        let bad = || io::Error::other(format!("{} does not hold a server-uuid", path.display()));
        if file.len()? > AUTO_CNF_BYTES_MAX {
            return Err(bad());
        }
        let text = String::from_utf8(file.read_all()?).map_err(|_| bad())?;
        return text
            .lines()
            .filter_map(|line| line.trim().strip_prefix("server-uuid"))
            .filter_map(|rest| rest.trim_start().strip_prefix('='))
            .map(str::trim)
            .find(|uuid| is_uuid(uuid))
            .map(str::to_owned)
            .ok_or_else(bad);
    }
    let uuid = new_uuid();
    quill_io::replace_file(fs, &path, format!("[auto]\nserver-uuid={uuid}\n").as_bytes())?;
    Ok(uuid)
}

/// A random (version 4) UUID in its 36-character text form.
fn new_uuid() -> String {
    let mut bytes: [u8; 16] = rand::rng().random();
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    uuid_text(&bytes)
}

/// A UUID's 36-character text form, from its 16 bytes (as GTID events carry them).
#[must_use]
pub fn uuid_text(bytes: &[u8; 16]) -> String {
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("{}-{}-{}-{}-{}", &hex[..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..])
}

/// Whether `s` is a UUID's text form: 8-4-4-4-12 hexadecimal digits.
fn is_uuid(s: &str) -> bool {
    let groups: Vec<&str> = s.split('-').collect();
    groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12]) && groups.iter().all(|g| g.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The 16 bytes of a UUID's text form, as GTID events carry them.
#[must_use]
pub fn uuid_bytes(s: &str) -> Option<[u8; 16]> {
    if !is_uuid(s) {
        return None;
    }
    let hex: Vec<u8> = s.bytes().filter(|&b| b != b'-').collect();
    let mut out = [0; 16];
    for (i, pair) in hex.chunks(2).enumerate() {
        out[i] = u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use quill_io::SimFs;
    use std::path::PathBuf;

    #[test]
    fn a_uuid_is_made_once_and_kept_across_opens_and_crashes() {
        let fs = SimFs::new();
        let dir = PathBuf::from("/data");
        fs.create_dir_all(&dir).unwrap();
        let made = load_or_create(&fs, &dir).unwrap();
        assert!(is_uuid(&made) && made.as_bytes()[14] == b'4', "{made}");
        assert_eq!(load_or_create(&fs, &dir).unwrap(), made);
        let (crashed, _) = fs.crash(3);
        assert_eq!(load_or_create(&crashed, &dir).unwrap(), made, "synced before it was used");
        let other = SimFs::new();
        other.create_dir_all(&dir).unwrap();
        assert_ne!(load_or_create(&other, &dir).unwrap(), made, "another data directory, another server");
        assert_eq!(uuid_bytes(&made).map(|b| b[6] >> 4), Some(4));
    }

    #[test]
    fn mysqls_auto_cnf_is_read_and_a_damaged_one_refused() {
        let fs = SimFs::new();
        let dir = PathBuf::from("/data");
        fs.create_dir_all(&dir).unwrap();
        let write = |text: &str| {
            let f = fs.open(&dir.join(AUTO_CNF), true).unwrap();
            f.set_len(0).unwrap();
            f.write_at(text.as_bytes(), 0).unwrap();
        };
        write("[auto]\nserver-uuid = 3E11FA47-71CA-11E1-9E33-C80AA9429562\n");
        assert_eq!(load_or_create(&fs, &dir).unwrap(), "3E11FA47-71CA-11E1-9E33-C80AA9429562");
        assert_eq!(uuid_bytes("3E11FA47-71CA-11E1-9E33-C80AA9429562").unwrap()[..3], [0x3e, 0x11, 0xfa]);
        for damaged in ["[auto]\n", "[auto]\nserver-uuid=not-a-uuid\n", ""] {
            write(damaged);
            assert!(load_or_create(&fs, &dir).is_err(), "{damaged:?}");
        }
    }
}
