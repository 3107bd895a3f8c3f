//! Accounts and privileges: who may log in, with which secret, and what each account may
//! do, as MySQL 8 decides it.
//!
//! The durable truth is three ordinary tables in the `mysql` database, with MySQL's names
//! and columns (`grant_tables`): `mysql.user` (one row per account: its password hash,
//! plugin, lock and global privileges), `mysql.db` (privileges on a database) and
//! `mysql.tables_priv` (privileges on a table). Their rows are logged and checkpointed as any
//! table's, so accounts survive crashes with no format of their own; the binary log leaves
//! them out (account statements are not replicated, see docs/accounts.md). Account
//! statements (`CREATE USER`, `GRANT`, ...; parsed in `statements`) write those rows in one
//! transaction and then reload the in-memory [`Acl`] the server checks against, as MySQL's
//! do; a direct write to the tables takes effect at `FLUSH PRIVILEGES`.
//!
//! Passwords are never kept in clear: `mysql_native_password` keeps `SHA1(SHA1(password))`
//! as `*` and 40 hex digits (MySQL's own format), `caching_sha2_password` keeps a salted
//! SHA-256-crypt hash in MySQL 8's `$A$005$` format (`sha256_crypt`). That hash cannot check
//! a fast authentication, which needs `SHA256(SHA256(password))` (see
//! `quill_protocol::auth`): as in MySQL, the server learns that secret from a full
//! authentication (the password sent over TLS or RSA-encrypted) and keeps it in memory only,
//! in the [`Sha2Cache`], until the account changes or FLUSH PRIVILEGES. Accounts written by
//! earlier Quill versions keep `$Q$` and the secret in hex (`LEGACY_CACHING_SHA2_PREFIX`):
//! they still log in, always by fast authentication. Statements that carry a password are
//! shown with it replaced (`redacted`) in PROCESSLIST and the slow log.
//!
//! Where it sits: `quill-sql-context`, below the session (which checks each statement, `session::
//! privileges`) and the server (which authenticates against [`Acl::find`]).

pub mod grant_tables;
pub mod sha256_crypt;

use std::collections::HashMap;

use parking_lot::Mutex;
use quill_sql_types::ident::quote_identifier;

use sha1::Digest as _;

// The privilege vocabulary (bits, names, where each may be granted) is plain data shared
// with the account statements' grammar: it lives in `quill_sql_types::privileges`.
pub use quill_sql_types::privileges::*;

pub const MYSQL_NATIVE_PASSWORD: &str = "mysql_native_password";
pub const CACHING_SHA2_PASSWORD: &str = "caching_sha2_password";
/// Prefix of the `caching_sha2_password` hash earlier Quill versions wrote: `$Q$` and
/// `SHA256(SHA256(password))` in hex, the fast-authentication secret itself. Read, never written.
pub const LEGACY_CACHING_SHA2_PREFIX: &str = "$Q$";
/// The longest password `caching_sha2_password` takes (MySQL's
/// `CACHING_SHA2_PASSWORD_MAX_PASSWORD_LENGTH`): SHA-256-crypt's work grows with the square
/// of the password's length, and a full authentication runs it for whoever connects.
pub const CACHING_SHA2_PASSWORD_BYTES_MAX: usize = 256;
/// The fast-authentication secret of `caching_sha2_password`: `SHA256(SHA256(password))`.
pub type Sha2Secret = [u8; 32];

/// The authentication string `plugin` keeps for `password` (empty for an empty password,
/// as MySQL keeps it).
#[must_use]
pub fn hash_password(plugin: &str, password: &str) -> String {
    if password.is_empty() {
        return String::new();
    }
    if plugin == MYSQL_NATIVE_PASSWORD {
        let stage2 = sha1::Sha1::digest(sha1::Sha1::digest(password.as_bytes()));
        format!("*{}", quill_sql_types::charset::hex_upper(&stage2))
    } else {
        sha256_crypt::hash(password.as_bytes())
    }
}

/// Whether `hash` is an authentication string `plugin` can check logins against.
#[must_use]
pub fn valid_hash(plugin: &str, hash: &str) -> bool {
    hash.is_empty()
        || match plugin {
            MYSQL_NATIVE_PASSWORD => hash.strip_prefix('*').is_some_and(|h| hex_bytes::<20>(h).is_some()),
            CACHING_SHA2_PASSWORD => sha256_crypt::is_valid(hash) || legacy_sha2_secret(hash).is_some(),
            _ => false,
        }
}

/// The secret a `$Q$` hash holds.
#[must_use]
pub fn legacy_sha2_secret(hash: &str) -> Option<Sha2Secret> {
    hash.strip_prefix(LEGACY_CACHING_SHA2_PREFIX).and_then(hex_bytes::<32>)
}

/// `N` bytes written as `2 * N` hex digits.
fn hex_bytes<const N: usize>(hex: &str) -> Option<[u8; N]> {
    quill_sql_types::charset::hex_decode(hex)?.try_into().ok()
}

/// Whether `password`, sent in clear in a `caching_sha2_password` full authentication, is
/// `account`'s: the fast-authentication secret to cache if it is.
#[must_use]
pub fn check_sha2_password(account: &Account, password: &[u8]) -> Option<Sha2Secret> {
    if password.len() > CACHING_SHA2_PASSWORD_BYTES_MAX {
        return None;
    }
    let secret: Sha2Secret = sha2::Sha256::digest(sha2::Sha256::digest(password)).into();
    let right = if account.auth_string.is_empty() {
        password.is_empty()
    } else if let Some(stored) = legacy_sha2_secret(&account.auth_string) {
        !password.is_empty() && stored.iter().zip(&secret).fold(0u8, |d, (a, b)| d | (a ^ b)) == 0
    } else {
        !password.is_empty() && sha256_crypt::verify(&account.auth_string, password)
    };
    right.then_some(secret)
}

/// `caching_sha2_password`'s cache: the fast-authentication secret of each account that
/// completed a full authentication, kept in memory only (module doc).
///
/// Bound: one entry per account. An entry is learnt under one authentication string and
/// answers only while the account still has it; entries of accounts that changed or went
/// are dropped whenever the ACL reloads ([`Sha2Cache::retain`]), and FLUSH PRIVILEGES
/// empties the cache, as MySQL's does.
#[derive(Debug, Default)]
pub struct Sha2Cache {
    /// (user, host) to (the authentication string, the secret learnt under it).
    entries: Mutex<HashMap<(String, String), (String, Sha2Secret)>>,
}

impl Sha2Cache {
    /// The secret a fast authentication of `account` checks against: the one its legacy
    /// hash holds, or the cached one.
    #[must_use]
    pub fn secret(&self, account: &Account) -> Option<Sha2Secret> {
        if let Some(secret) = legacy_sha2_secret(&account.auth_string) {
            return Some(secret);
        }
        let entries = self.entries.lock();
        entries.get(&(account.user.clone(), account.host.clone())).filter(|(auth, _)| *auth == account.auth_string).map(|(_, s)| *s)
    }

    /// Remember `secret`, just checked by a full authentication of `account`.
    pub fn learn(&self, account: &Account, secret: Sha2Secret) {
        if account.auth_string.is_empty() || legacy_sha2_secret(&account.auth_string).is_some() {
            return;
        }
        self.entries.lock().insert((account.user.clone(), account.host.clone()), (account.auth_string.clone(), secret));
    }

    /// Keep only the entries of accounts `acl` still has with the same authentication string.
    pub fn retain(&self, acl: &Acl) {
        self.entries.lock().retain(|(user, host), (auth, _)| acl.account(user, host).is_some_and(|a| a.auth_string == *auth));
    }

    /// Forget every secret (FLUSH PRIVILEGES).
    pub fn clear(&self) {
        self.entries.lock().clear();
    }

    /// How many accounts have a cached secret.
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.lock().len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One account, as `mysql.user` has it.
#[derive(Debug, Clone, PartialEq)]
pub struct Account {
    pub user: String,
    pub host: String,
    pub plugin: String,
    /// The password hash ([`hash_password`]); empty for no password.
    pub auth_string: String,
    pub locked: bool,
    /// `REQUIRE SSL` (or stronger): the account logs in over TLS only.
    pub require_ssl: bool,
    pub global: Privs,
    /// When its password expires (`PASSWORD EXPIRE ...`).
    pub password: PasswordExpiry,
}

/// An account's password expiry, as `mysql.user` keeps it (`password_expired`,
/// `password_lifetime`, `password_last_changed`). An expired account logs in only to set a
/// new password (`session::Session::password_expired`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PasswordExpiry {
    /// Expired now (`ALTER USER ... PASSWORD EXPIRE`), until the password is changed.
    pub expired: bool,
    /// Days a password lasts: `None` follows `default_password_lifetime`, `Some(0)` is
    /// never (`PASSWORD EXPIRE NEVER`).
    pub lifetime_days: Option<u16>,
    /// When the password was last set (zone-less local time, seconds), if known.
    pub last_changed_secs: Option<i64>,
}

impl PasswordExpiry {
    /// Whether the password has expired at `now_secs` (the basis of `last_changed_secs`),
    /// with `default_lifetime_days` for an account that follows the server's default.
    #[must_use]
    pub fn is_expired(&self, now_secs: i64, default_lifetime_days: u64) -> bool {
        if self.expired {
            return true;
        }
        let days = self.lifetime_days.map_or(default_lifetime_days, u64::from);
        match (days, self.last_changed_secs) {
            (0, _) | (_, None) => false,
            (days, Some(changed)) => now_secs.saturating_sub(changed) >= i64::try_from(days.saturating_mul(86_400)).unwrap_or(i64::MAX),
        }
    }
}

/// Privileges on one database or table, for one account.
#[derive(Debug, Clone, PartialEq)]
pub struct Grant {
    pub user: String,
    pub host: String,
    pub db: String,
    /// Empty for a database-level grant.
    pub table: String,
    pub privs: Privs,
}

/// The accounts and grants the server checks against: a snapshot of the grant tables,
/// replaced whole when they change ([`grant_tables::load`]).
#[derive(Debug, Default, Clone)]
pub struct Acl {
    /// Most specific host first, as MySQL sorts them for matching.
    pub accounts: Vec<Account>,
    pub grants: Vec<Grant>,
}

impl Acl {
    /// Builds the snapshot, sorting accounts for [`Acl::find`].
    #[must_use]
    pub fn new(mut accounts: Vec<Account>, grants: Vec<Grant>) -> Acl {
        accounts.sort_by(|a, b| host_rank(&a.host).cmp(&host_rank(&b.host)).then_with(|| b.user.cmp(&a.user)).then_with(|| a.host.cmp(&b.host)));
        Acl { accounts, grants }
    }

    /// The account a client `user` connecting from `peer` (an IP address) logs in as: the
    /// first, most specific host first, whose host matches `peer` and whose user is `user`.
    #[must_use]
    pub fn find(&self, user: &str, peer: &str) -> Option<&Account> {
        self.accounts.iter().find(|a| a.user == user && host_matches(&a.host, peer))
    }

    /// The account `user`@`host` exactly (host compared without case).
    #[must_use]
    pub fn account(&self, user: &str, host: &str) -> Option<&Account> {
        self.accounts.iter().find(|a| a.user == user && a.host.eq_ignore_ascii_case(host))
    }

    /// What the account may do on `db` (and, when given, table `table`): its global
    /// privileges, its database grant and its table grant together. Database names compare
    /// exactly, table names too (as on Linux).
    #[must_use]
    pub fn privileges(&self, user: &str, host: &str, db: &str, table: Option<&str>) -> Privs {
        let global = self.account(user, host).map_or(0, |a| a.global);
        self.grants
            .iter()
            .filter(|g| g.user == user && g.host.eq_ignore_ascii_case(host) && g.db == db && (g.table.is_empty() || table.is_some_and(|t| g.table == t)))
            .fold(global, |a, g| a | g.privs)
    }

    /// Whether the account has any privilege at all on `db`, or on a table in it.
    #[must_use]
    pub fn any_in_database(&self, user: &str, host: &str, db: &str) -> bool {
        self.account(user, host).is_some_and(|a| a.global & ALL_GLOBAL != 0)
            || self.grants.iter().any(|g| g.user == user && g.host.eq_ignore_ascii_case(host) && g.db == db && g.privs != 0)
    }
}

/// How specific a host pattern is: exact names and addresses first, patterns with
/// wildcards after (the later the first wildcard, the earlier), `%` alone last.
fn host_rank(host: &str) -> (u8, usize) {
    match host.find(['%', '_']) {
        None => (0, 0),
        Some(_) if host == "%" => (2, 0),
        Some(at) => (1, usize::MAX - at),
    }
}

/// Whether the account host `pattern` matches a client at `peer`: `localhost` matches the
/// loopback addresses, `%` and `_` are wildcards as in LIKE, anything else compares
/// without case.
#[must_use]
pub fn host_matches(pattern: &str, peer: &str) -> bool {
    let loopback = peer == "::1" || peer.starts_with("127.");
    if pattern.eq_ignore_ascii_case("localhost") {
        return loopback;
    }
    like(pattern.as_bytes(), peer.as_bytes()) || (loopback && like(pattern.as_bytes(), b"localhost"))
}

fn like(p: &[u8], s: &[u8]) -> bool {
    match p.split_first() {
        None => s.is_empty(),
        Some((b'%', rest)) => (0..=s.len()).any(|i| like(rest, &s[i..])),
        Some((b'_', rest)) => !s.is_empty() && like(rest, &s[1..]),
        Some((c, rest)) => s.first().is_some_and(|d| d.eq_ignore_ascii_case(c)) && like(rest, &s[1..]),
    }
}

/// `'user'@'host'` as MySQL's messages write an account.
#[must_use]
pub fn quoted(user: &str, host: &str) -> String {
    format!("'{user}'@'{host}'")
}

/// `` `user`@`host` `` as SHOW GRANTS and SHOW CREATE USER write an account.
#[must_use]
pub fn backquoted(user: &str, host: &str) -> String {
    format!("{}@{}", quote_identifier(user), quote_identifier(host))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn account(user: &str, host: &str) -> Account {
        Account {
            user: user.into(),
            host: host.into(),
            plugin: CACHING_SHA2_PASSWORD.into(),
            auth_string: String::new(),
            locked: false,
            require_ssl: false,
            global: 0,
            password: PasswordExpiry::default(),
        }
    }

    #[test]
    fn the_most_specific_host_wins() {
        let acl = Acl::new(vec![account("app", "%"), account("app", "10.0.%"), account("app", "localhost"), account("app", "10.0.0.7")], vec![]);
        assert_eq!(acl.find("app", "10.0.0.7").unwrap().host, "10.0.0.7");
        assert_eq!(acl.find("app", "10.0.0.8").unwrap().host, "10.0.%");
        assert_eq!(acl.find("app", "127.0.0.1").unwrap().host, "localhost");
        assert_eq!(acl.find("app", "192.168.1.1").unwrap().host, "%");
        assert!(acl.find("nobody", "127.0.0.1").is_none());
    }

    #[test]
    fn hashes_are_mysqls_for_native_and_never_the_password() {
        // MySQL: SELECT PASSWORD('secret') in 5.7 gave this.
        assert_eq!(hash_password(MYSQL_NATIVE_PASSWORD, "secret"), "*14E65567ABDB5135D0CFD9A70B3032C179A49EE7");
        let sha2 = hash_password(CACHING_SHA2_PASSWORD, "secret");
        assert!(valid_hash(CACHING_SHA2_PASSWORD, &sha2) && !sha2.contains("secret"));
        assert_eq!(hash_password(CACHING_SHA2_PASSWORD, ""), "");
        assert!(!valid_hash(CACHING_SHA2_PASSWORD, "$A$005$abc"));
    }

    #[test]
    fn a_full_authentication_fills_the_cache_until_the_account_changes() {
        let mut a = account("app", "%");
        a.auth_string = hash_password(CACHING_SHA2_PASSWORD, "pw");
        let cache = Sha2Cache::default();
        assert_eq!(cache.secret(&a), None, "nothing is known before a full authentication");
        assert_eq!(check_sha2_password(&a, b"wrong"), None);
        let secret = check_sha2_password(&a, b"pw").expect("the right password");
        let expected: Sha2Secret = sha2::Sha256::digest(sha2::Sha256::digest(b"pw")).into();
        assert_eq!(secret, expected);
        cache.learn(&a, secret);
        assert_eq!(cache.secret(&a), Some(secret));
        cache.retain(&Acl::new(vec![a.clone()], vec![]));
        assert_eq!(cache.len(), 1, "an unchanged account keeps its entry");

        let mut changed = a.clone();
        changed.auth_string = hash_password(CACHING_SHA2_PASSWORD, "pw");
        assert_eq!(cache.secret(&changed), None, "a new hash (new salt) is a new password");
        cache.retain(&Acl::new(vec![changed], vec![]));
        assert!(cache.is_empty());
        cache.learn(&a, secret);
        cache.clear();
        assert_eq!(cache.secret(&a), None);
    }

    #[test]
    fn legacy_hashes_hold_their_secret_and_empty_passwords_need_none() {
        let mut a = account("old", "%");
        a.auth_string = format!("{LEGACY_CACHING_SHA2_PREFIX}{}", "AB".repeat(32));
        assert!(valid_hash(CACHING_SHA2_PASSWORD, &a.auth_string));
        assert_eq!(Sha2Cache::default().secret(&a), Some([0xAB; 32]));
        let empty = account("none", "%");
        assert!(check_sha2_password(&empty, b"").is_some());
        assert!(check_sha2_password(&empty, b"x").is_none());
    }

    #[test]
    fn privileges_add_up_over_levels() {
        let mut a = account("app", "%");
        a.global = PROCESS;
        let grants = vec![
            Grant { user: "app".into(), host: "%".into(), db: "shop".into(), table: String::new(), privs: SELECT },
            Grant { user: "app".into(), host: "%".into(), db: "shop".into(), table: "orders".into(), privs: INSERT },
        ];
        let acl = Acl::new(vec![a], grants);
        assert_eq!(acl.privileges("app", "%", "shop", Some("orders")), PROCESS | SELECT | INSERT);
        assert_eq!(acl.privileges("app", "%", "shop", Some("items")), PROCESS | SELECT);
        assert_eq!(acl.privileges("app", "%", "other", None), PROCESS);
        assert_eq!(privilege_list(SELECT | LOCK_TABLES | INSERT), "SELECT, INSERT, LOCK TABLES");
    }
}
