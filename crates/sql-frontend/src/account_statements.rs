//! The account statements, parsed here because the SQL parser does not know MySQL's forms
//! of them: `CREATE USER`, `ALTER USER`, `DROP USER`, `GRANT`, `REVOKE`, `SHOW GRANTS`,
//! `SHOW CREATE USER`, `SET PASSWORD` and `FLUSH PRIVILEGES`. `PASSWORD EXPIRE [DEFAULT |
//! NEVER | INTERVAL n DAY]` sets an account's password expiry.
//!
//! A small lexer (quoted strings with MySQL's escapes, words, punctuation) feeds a
//! recursive-descent parser. Accounts are written `'user'@'host'`, `user@host`, `` `user`@`host` ``
//! or `user` (host `%`); `CURRENT_USER[()]` names the session's own account. Clauses that
//! would change what Quill does not keep (password history and reuse, resource limits,
//! failed-login locking) are accepted only in their DEFAULT form, as SHOW CREATE USER prints
//! them; others are 1235.
//!
//! Where it sits: `quill-sql-frontend`, called by the session's recogniser; the session
//! carries the statements out (`quill_sql::session::accounts`).

use quill_sql_types::error::{Result, SqlError, codes};
use quill_sql_types::privileges::{Privs, privilege_named};

/// An account as a statement names it.
#[derive(Debug, Clone, PartialEq)]
pub enum UserName {
    Named {
        user: String,
        host: String,
    },
    /// `CURRENT_USER` / `CURRENT_USER()`.
    Current,
}

/// How a statement sets an account's password.
#[derive(Debug, Clone, PartialEq)]
pub enum Auth {
    /// `IDENTIFIED [WITH plugin] BY 'password'`.
    Password { plugin: Option<String>, password: String },
    /// `IDENTIFIED WITH plugin AS 'hash'`.
    Hash { plugin: String, hash: String },
    /// `IDENTIFIED WITH plugin`: no password.
    Plugin(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct UserSpec {
    pub name: UserName,
    pub auth: Option<Auth>,
}

/// What a GRANT or REVOKE applies to.
#[derive(Debug, Clone, PartialEq)]
pub enum Level {
    /// `*.*`.
    Global,
    /// `db.*`, or `*` (the current database: `None`).
    Database(Option<String>),
    /// `db.t` or `t` (in the current database: `None`).
    Table(Option<String>, String),
}

/// The privileges a GRANT or REVOKE names.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PrivilegeSet {
    /// `ALL [PRIVILEGES]`: every privilege the level has.
    All,
    Some(Privs),
}

/// The options CREATE USER and ALTER USER share.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AccountOptions {
    /// `REQUIRE SSL` / `X509` (true) or `REQUIRE NONE` (false).
    pub require_ssl: Option<bool>,
    /// `ACCOUNT LOCK` (true) or `ACCOUNT UNLOCK` (false).
    pub lock: Option<bool>,
    /// `PASSWORD EXPIRE [DEFAULT | NEVER | INTERVAL n DAY]`.
    pub expire: Option<PasswordExpire>,
}

/// A `PASSWORD EXPIRE` clause.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PasswordExpire {
    /// `PASSWORD EXPIRE`: expired now, until the password is changed.
    Now,
    /// `PASSWORD EXPIRE DEFAULT`: after `default_password_lifetime` days.
    Default,
    /// `PASSWORD EXPIRE NEVER`.
    Never,
    /// `PASSWORD EXPIRE INTERVAL n DAY` (1 to 65535).
    IntervalDays(u16),
}

#[derive(Debug, Clone, PartialEq)]
pub enum AccountStatement {
    CreateUser {
        if_not_exists: bool,
        users: Vec<UserSpec>,
        options: AccountOptions,
    },
    AlterUser {
        if_exists: bool,
        users: Vec<UserSpec>,
        options: AccountOptions,
    },
    DropUser {
        if_exists: bool,
        users: Vec<UserName>,
    },
    Grant {
        privileges: PrivilegeSet,
        level: Level,
        users: Vec<UserName>,
        grant_option: bool,
    },
    Revoke {
        privileges: PrivilegeSet,
        level: Level,
        users: Vec<UserName>,
    },
    /// `REVOKE ALL [PRIVILEGES], GRANT OPTION FROM ...`: everything, at every level.
    RevokeAll {
        users: Vec<UserName>,
    },
    ShowGrants {
        user: Option<UserName>,
    },
    ShowCreateUser {
        user: UserName,
    },
    /// `SET PASSWORD [FOR user] = 'password'`.
    SetPassword {
        user: Option<UserName>,
        password: String,
    },
    FlushPrivileges,
}

/// The statement `sql` is, when it is an account statement; `None` when it is not one
/// (the caller tries other parsers).
#[must_use]
pub fn parse(sql: &str) -> Option<Result<AccountStatement>> {
    let tokens = match lex(sql) {
        Ok(t) => t,
        Err(e) => return Some(Err(e)),
    };
    let mut p = Parser { tokens: &tokens, at: 0, sql };
    let first = p.word_at(0)?.to_ascii_uppercase();
    let second = p.word_at(1).map(str::to_ascii_uppercase).unwrap_or_default();
    let third = p.word_at(2).map(str::to_ascii_uppercase).unwrap_or_default();
    let (kind, skip) = match (first.as_str(), second.as_str(), third.as_str()) {
        ("CREATE" | "ALTER" | "DROP", "USER", _) | ("SET", "PASSWORD", _) => (first, 2),
        ("GRANT" | "REVOKE", _, _) => (first, 1),
        ("SHOW", "GRANTS", _) => ("SHOW GRANTS".to_owned(), 2),
        ("SHOW", "CREATE", "USER") => ("SHOW CREATE USER".to_owned(), 3),
        ("FLUSH", "PRIVILEGES", _) if tokens.len() == 2 => return Some(Ok(AccountStatement::FlushPrivileges)),
        _ => return None,
    };
    p.at = skip;
    Some(p.statement(&kind))
}

/// `sql` with each password literal replaced by `<secret>`, as MySQL writes such
/// statements to its logs; `None` when it has none. A password is a quoted literal after
/// `BY` (`IDENTIFIED BY`) or after `=` following a word ending in `PASSWORD` (`SET
/// PASSWORD = ...`, `SOURCE_PASSWORD = ...`) in an account statement, or after `=` in
/// `SET PASSWORD`.
#[must_use]
pub fn redacted(sql: &str) -> Option<String> {
    let upper = sql.to_ascii_uppercase();
    if !upper.contains("BY") && !upper.contains("PASSWORD") {
        return None;
    }
    let mut body = upper.trim_start();
    // Leading comments do not hide what the statement is.
    while let Some(rest) = body.strip_prefix("/*") {
        body = rest.split_once("*/").map_or("", |(_, after)| after).trim_start();
    }
    let head: Vec<&str> = body.split_whitespace().take(2).collect();
    let account = matches!(head.as_slice(), ["CREATE" | "ALTER", "USER"] | ["GRANT", _]);
    let set_password = matches!(head.as_slice(), ["SET", "PASSWORD"]);
    let chars: Vec<char> = sql.chars().collect();
    let mut out = String::with_capacity(sql.len());
    let (mut word, mut previous_word, mut last) = (String::new(), String::new(), ' ');
    let mut changed = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if matches!(c, '\'' | '"') {
            let mut j = i + 1;
            while j < chars.len() && chars[j] != c {
                j += if chars[j] == '\\' { 2 } else { 1 };
                if j < chars.len() && chars[j] == c && chars.get(j + 1) == Some(&c) {
                    j += 2;
                }
            }
            let secret = (account && last == 'W' && previous_word.eq_ignore_ascii_case("BY"))
                || (last == '=' && (set_password || previous_word.to_ascii_uppercase().ends_with("PASSWORD")));
            if secret {
                out.push_str("<secret>");
                changed = true;
            } else {
                out.extend(&chars[i..(j + 1).min(chars.len())]);
            }
            i = j + 1;
            last = 'Q';
            continue;
        }
        out.push(c);
        if c.is_alphanumeric() || c == '_' {
            word.push(c);
        } else {
            if !word.is_empty() {
                previous_word = std::mem::take(&mut word);
                last = 'W';
            }
            if c == '=' {
                last = '=';
            } else if !c.is_whitespace() {
                last = c;
            }
        }
        i += 1;
    }
    changed.then_some(out)
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Word(String),
    /// A quoted string or identifier (its quotes removed, escapes applied).
    Quoted(String),
    Punct(char),
}

fn lex(sql: &str) -> Result<Vec<Token>> {
    let chars: Vec<char> = sql.trim().trim_end_matches(';').chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if matches!(c, '\'' | '"' | '`') {
            let mut s = String::new();
            i += 1;
            loop {
                let Some(&d) = chars.get(i) else { return Err(SqlError::parse(sql)) };
                if d == c && chars.get(i + 1) == Some(&c) {
                    s.push(c);
                    i += 2;
                } else if d == c {
                    i += 1;
                    break;
                } else if d == '\\' && c != '`' {
                    let e = *chars.get(i + 1).ok_or_else(|| SqlError::parse(sql))?;
                    s.push(match e {
                        'n' => '\n',
                        't' => '\t',
                        '0' => '\0',
                        'r' => '\r',
                        other => other,
                    });
                    i += 2;
                } else {
                    s.push(d);
                    i += 1;
                }
            }
            out.push(Token::Quoted(s));
        } else if matches!(c, ',' | '@' | '.' | '*' | '(' | ')' | '=') {
            out.push(Token::Punct(c));
            i += 1;
        } else {
            let start = i;
            while i < chars.len() && !chars[i].is_whitespace() && !matches!(chars[i], ',' | '@' | '.' | '*' | '(' | ')' | '=' | '\'' | '"' | '`') {
                i += 1;
            }
            out.push(Token::Word(chars[start..i].iter().collect()));
        }
    }
    Ok(out)
}

struct Parser<'a> {
    tokens: &'a [Token],
    at: usize,
    sql: &'a str,
}

impl Parser<'_> {
    fn word_at(&self, i: usize) -> Option<&str> {
        match self.tokens.get(i) {
            Some(Token::Word(w)) => Some(w),
            _ => None,
        }
    }

    fn error(&self) -> SqlError {
        SqlError::parse(self.sql)
    }

    fn peek_word(&self, w: &str) -> bool {
        self.word_at(self.at).is_some_and(|x| x.eq_ignore_ascii_case(w))
    }

    fn eat_word(&mut self, w: &str) -> bool {
        let found = self.peek_word(w);
        if found {
            self.at += 1;
        }
        found
    }

    fn expect_word(&mut self, w: &str) -> Result<()> {
        if self.eat_word(w) { Ok(()) } else { Err(self.error()) }
    }

    fn eat_punct(&mut self, c: char) -> bool {
        let found = self.tokens.get(self.at) == Some(&Token::Punct(c));
        if found {
            self.at += 1;
        }
        found
    }

    fn done(&self) -> bool {
        self.at == self.tokens.len()
    }

    fn expect_end(&self) -> Result<()> {
        if self.done() { Ok(()) } else { Err(self.error()) }
    }

    /// A name: a word or a quoted string.
    fn name(&mut self) -> Result<String> {
        match self.tokens.get(self.at) {
            Some(Token::Word(w) | Token::Quoted(w)) => {
                self.at += 1;
                Ok(w.clone())
            }
            _ => Err(self.error()),
        }
    }

    fn string(&mut self) -> Result<String> {
        match self.tokens.get(self.at) {
            Some(Token::Quoted(s)) => {
                self.at += 1;
                Ok(s.clone())
            }
            _ => Err(self.error()),
        }
    }

    /// `AS 'hash'`, or `AS 0x...` as MySQL prints a hash with unprintable bytes (a salt
    /// from a MySQL server may hold any byte but NUL and `$`).
    fn hash_literal(&mut self) -> Result<String> {
        if let Some(Token::Word(w)) = self.tokens.get(self.at)
            && let Some(hex) = w.strip_prefix("0x").or_else(|| w.strip_prefix("0X"))
        {
            let text = quill_sql_types::charset::hex_decode(hex).and_then(|b| String::from_utf8(b).ok()).ok_or_else(|| self.error())?;
            self.at += 1;
            return Ok(text);
        }
        self.string()
    }

    fn statement(&mut self, kind: &str) -> Result<AccountStatement> {
        let statement = match kind {
            "CREATE" => {
                let if_not_exists = self.if_words(&["IF", "NOT", "EXISTS"]);
                let users = self.user_specs()?;
                AccountStatement::CreateUser { if_not_exists, users, options: self.account_options()? }
            }
            "ALTER" => {
                let if_exists = self.if_words(&["IF", "EXISTS"]);
                let users = self.user_specs()?;
                AccountStatement::AlterUser { if_exists, users, options: self.account_options()? }
            }
            "DROP" => {
                let if_exists = self.if_words(&["IF", "EXISTS"]);
                AccountStatement::DropUser { if_exists, users: self.user_names()? }
            }
            "GRANT" => {
                let privileges = self.privileges()?;
                self.expect_word("ON")?;
                let level = self.level()?;
                self.expect_word("TO")?;
                let users = self.user_names()?;
                let grant_option = self.if_words(&["WITH", "GRANT", "OPTION"]);
                AccountStatement::Grant { privileges, level, users, grant_option }
            }
            "REVOKE" => {
                let save = self.at;
                if self.eat_word("ALL") {
                    self.eat_word("PRIVILEGES");
                    if self.eat_punct(',') && self.eat_word("GRANT") && self.eat_word("OPTION") && self.eat_word("FROM") {
                        let users = self.user_names()?;
                        self.expect_end()?;
                        return Ok(AccountStatement::RevokeAll { users });
                    }
                    self.at = save;
                }
                let privileges = self.privileges()?;
                self.expect_word("ON")?;
                let level = self.level()?;
                self.expect_word("FROM")?;
                AccountStatement::Revoke { privileges, level, users: self.user_names()? }
            }
            "SHOW GRANTS" => {
                let user = if self.eat_word("FOR") { Some(self.user_name()?) } else { None };
                AccountStatement::ShowGrants { user }
            }
            "SHOW CREATE USER" => AccountStatement::ShowCreateUser { user: self.user_name()? },
            "SET" => {
                let user = if self.eat_word("FOR") { Some(self.user_name()?) } else { None };
                if !self.eat_punct('=') {
                    return Err(self.error());
                }
                AccountStatement::SetPassword { user, password: self.string()? }
            }
            _ => return Err(self.error()),
        };
        self.expect_end()?;
        Ok(statement)
    }

    /// Consumes `words` if they all come next.
    fn if_words(&mut self, words: &[&str]) -> bool {
        let matches = words.iter().enumerate().all(|(i, w)| self.word_at(self.at + i).is_some_and(|x| x.eq_ignore_ascii_case(w)));
        if matches {
            self.at += words.len();
        }
        matches
    }

    fn user_name(&mut self) -> Result<UserName> {
        if self.peek_word("CURRENT_USER") {
            self.at += 1;
            if self.eat_punct('(') && !self.eat_punct(')') {
                return Err(self.error());
            }
            return Ok(UserName::Current);
        }
        let user = self.name()?;
        let host = if self.eat_punct('@') { self.name()? } else { "%".to_owned() };
        if user.chars().count() > 32 {
            return Err(SqlError::new(codes::ER_WRONG_STRING_LENGTH, format!("String '{user}' is too long for user name (should be no longer than 32)")));
        }
        if host.chars().count() > 255 {
            return Err(SqlError::new(codes::ER_WRONG_STRING_LENGTH, format!("String '{host}' is too long for host name (should be no longer than 255)")));
        }
        Ok(UserName::Named { user, host })
    }

    fn user_names(&mut self) -> Result<Vec<UserName>> {
        let mut out = vec![self.user_name()?];
        while self.eat_punct(',') {
            out.push(self.user_name()?);
        }
        Ok(out)
    }

    fn user_specs(&mut self) -> Result<Vec<UserSpec>> {
        let mut out = Vec::new();
        loop {
            let name = self.user_name()?;
            let auth = if self.eat_word("IDENTIFIED") { Some(self.auth()?) } else { None };
            out.push(UserSpec { name, auth });
            if !self.eat_punct(',') {
                return Ok(out);
            }
        }
    }

    fn auth(&mut self) -> Result<Auth> {
        if self.eat_word("BY") {
            return Ok(Auth::Password { plugin: None, password: self.string()? });
        }
        self.expect_word("WITH")?;
        let plugin = self.name()?.to_ascii_lowercase();
        if self.eat_word("BY") {
            return Ok(Auth::Password { plugin: Some(plugin), password: self.string()? });
        }
        if self.eat_word("AS") {
            return Ok(Auth::Hash { plugin, hash: self.hash_literal()? });
        }
        Ok(Auth::Plugin(plugin))
    }

    fn account_options(&mut self) -> Result<AccountOptions> {
        let mut options = AccountOptions::default();
        while !self.done() {
            if self.eat_word("REQUIRE") {
                options.require_ssl = Some(if self.eat_word("NONE") {
                    false
                } else if self.eat_word("SSL") || self.eat_word("X509") {
                    true
                } else {
                    return Err(SqlError::unsupported("REQUIRE with certificate conditions"));
                });
            } else if self.eat_word("ACCOUNT") {
                options.lock = Some(if self.eat_word("LOCK") {
                    true
                } else {
                    self.expect_word("UNLOCK")?;
                    false
                });
            } else if self.if_words(&["PASSWORD", "EXPIRE"]) {
                options.expire = Some(if self.eat_word("DEFAULT") {
                    PasswordExpire::Default
                } else if self.eat_word("NEVER") {
                    PasswordExpire::Never
                } else if self.eat_word("INTERVAL") {
                    let days = self.word_at(self.at).and_then(|w| w.parse::<u16>().ok()).filter(|d| *d > 0).ok_or_else(|| self.error())?;
                    self.at += 1;
                    self.expect_word("DAY")?;
                    PasswordExpire::IntervalDays(days)
                } else {
                    PasswordExpire::Now
                });
            } else if self.if_words(&["PASSWORD", "HISTORY", "DEFAULT"])
                || self.if_words(&["PASSWORD", "REUSE", "INTERVAL", "DEFAULT"])
                || self.if_words(&["PASSWORD", "REQUIRE", "CURRENT", "DEFAULT"])
            {
                // The defaults: what Quill does.
            } else if self.peek_word("PASSWORD") || self.peek_word("WITH") || self.peek_word("FAILED_LOGIN_ATTEMPTS") || self.peek_word("PASSWORD_LOCK_TIME") {
                return Err(SqlError::unsupported("password expiry, history, resource limits and failed-login locking"));
            } else {
                return Err(self.error());
            }
        }
        Ok(options)
    }

    /// `ALL [PRIVILEGES]` or a comma-separated list of privilege names (one to three words).
    fn privileges(&mut self) -> Result<PrivilegeSet> {
        if self.eat_word("ALL") {
            self.eat_word("PRIVILEGES");
            return Ok(PrivilegeSet::All);
        }
        let mut privs = 0;
        loop {
            let mut words = vec![self.name()?];
            while let Some(w) = self.word_at(self.at).filter(|w| !w.eq_ignore_ascii_case("ON")) {
                words.push(w.to_owned());
                self.at += 1;
            }
            if self.tokens.get(self.at) == Some(&Token::Punct('(')) {
                return Err(SqlError::unsupported("column privileges"));
            }
            let name = words.join(" ");
            let bit = if name.eq_ignore_ascii_case("USAGE") {
                0
            } else {
                privilege_named(&name).ok_or_else(|| {
                    SqlError::new(
                        codes::ER_SYNTAX_ERROR,
                        "You have an error in your SQL syntax; check the manual that corresponds to your MySQL server version for the right syntax to use",
                    )
                })?
            };
            privs |= bit;
            if !self.eat_punct(',') {
                return Ok(PrivilegeSet::Some(privs));
            }
        }
    }

    /// `*.*`, `db.*`, `*`, `db.t`, `t` (optionally after `TABLE`).
    fn level(&mut self) -> Result<Level> {
        self.eat_word("TABLE");
        if self.eat_punct('*') {
            if self.eat_punct('.') {
                if !self.eat_punct('*') {
                    return Err(self.error());
                }
                return Ok(Level::Global);
            }
            return Ok(Level::Database(None));
        }
        let first = self.name()?;
        if !self.eat_punct('.') {
            return Ok(Level::Table(None, first));
        }
        if self.eat_punct('*') {
            return Ok(Level::Database(Some(first)));
        }
        Ok(Level::Table(Some(first), self.name()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quill_sql_types::privileges::{INSERT, LOCK_TABLES, SELECT, UPDATE};

    fn statement(sql: &str) -> AccountStatement {
        parse(sql).expect("an account statement").expect("parses")
    }

    fn named(user: &str, host: &str) -> UserName {
        UserName::Named { user: user.into(), host: host.into() }
    }

    #[test]
    fn a_hex_hash_with_a_multibyte_character_is_a_syntax_error_not_a_panic() {
        // Regression: the hex digits were sliced as `str`, and `é` (two bytes) split.
        let parsed = parse("CREATE USER u IDENTIFIED WITH caching_sha2_password AS 0xa\u{e9}b");
        assert!(matches!(parsed, Some(Err(_))), "{parsed:?}");
    }

    #[test]
    fn create_user_in_its_forms() {
        assert_eq!(
            statement("CREATE USER IF NOT EXISTS 'app'@'10.0.%' IDENTIFIED BY 'it''s', bob IDENTIFIED WITH mysql_native_password BY \"x\" ACCOUNT LOCK;"),
            AccountStatement::CreateUser {
                if_not_exists: true,
                users: vec![
                    UserSpec { name: named("app", "10.0.%"), auth: Some(Auth::Password { plugin: None, password: "it's".into() }) },
                    UserSpec { name: named("bob", "%"), auth: Some(Auth::Password { plugin: Some("mysql_native_password".into()), password: "x".into() }) },
                ],
                options: AccountOptions { require_ssl: None, lock: Some(true), expire: None },
            }
        );
        assert!(matches!(
            statement("create user `u`@`localhost` REQUIRE SSL PASSWORD EXPIRE DEFAULT"),
            AccountStatement::CreateUser { options: AccountOptions { require_ssl: Some(true), .. }, .. }
        ));
        assert!(matches!(
            statement("CREATE USER u PASSWORD EXPIRE INTERVAL 30 DAY"),
            AccountStatement::CreateUser { options: AccountOptions { expire: Some(PasswordExpire::IntervalDays(30)), .. }, .. }
        ));
        assert!(matches!(
            statement("ALTER USER u PASSWORD EXPIRE"),
            AccountStatement::AlterUser { options: AccountOptions { expire: Some(PasswordExpire::Now), .. }, .. }
        ));
        assert!(parse("ALTER USER u PASSWORD EXPIRE INTERVAL 0 DAY").unwrap().is_err());
        assert!(parse("CREATE USER u PASSWORD HISTORY 5").unwrap().is_err());
    }

    #[test]
    fn grant_and_revoke_name_privileges_levels_and_accounts() {
        assert_eq!(
            statement("GRANT SELECT, INSERT, LOCK TABLES ON shop.* TO 'app'@'%' WITH GRANT OPTION"),
            AccountStatement::Grant {
                privileges: PrivilegeSet::Some(SELECT | INSERT | LOCK_TABLES),
                level: Level::Database(Some("shop".into())),
                users: vec![named("app", "%")],
                grant_option: true
            }
        );
        assert_eq!(
            statement("GRANT ALL PRIVILEGES ON *.* TO root@localhost"),
            AccountStatement::Grant { privileges: PrivilegeSet::All, level: Level::Global, users: vec![named("root", "localhost")], grant_option: false }
        );
        assert_eq!(
            statement("REVOKE UPDATE ON TABLE `shop`.`orders` FROM app"),
            AccountStatement::Revoke {
                privileges: PrivilegeSet::Some(UPDATE),
                level: Level::Table(Some("shop".into()), "orders".into()),
                users: vec![named("app", "%")]
            }
        );
        assert_eq!(statement("REVOKE ALL PRIVILEGES, GRANT OPTION FROM app@'%'"), AccountStatement::RevokeAll { users: vec![named("app", "%")] });
        assert_eq!(statement("SHOW GRANTS FOR CURRENT_USER()"), AccountStatement::ShowGrants { user: Some(UserName::Current) });
        assert_eq!(statement("SET PASSWORD FOR app = 'n'"), AccountStatement::SetPassword { user: Some(named("app", "%")), password: "n".into() });
        assert!(parse("SELECT 1").is_none());
        assert!(parse("SET @a = 1").is_none());
        assert_eq!(parse("GRANT FROB ON *.* TO a").unwrap().unwrap_err().code, 1149);
    }

    #[test]
    fn passwords_are_redacted_and_nothing_else() {
        assert_eq!(redacted("CREATE USER 'a'@'%' IDENTIFIED BY 'pw''x'").as_deref(), Some("CREATE USER 'a'@'%' IDENTIFIED BY <secret>"));
        assert_eq!(
            redacted("alter user a identified with mysql_native_password by \"p\" account lock").as_deref(),
            Some("alter user a identified with mysql_native_password by <secret> account lock")
        );
        assert_eq!(redacted("SET PASSWORD FOR a = 'x'").as_deref(), Some("SET PASSWORD FOR a = <secret>"));
        assert_eq!(
            redacted("CHANGE REPLICATION SOURCE TO SOURCE_USER='r', SOURCE_PASSWORD='s'").as_deref(),
            Some("CHANGE REPLICATION SOURCE TO SOURCE_USER='r', SOURCE_PASSWORD=<secret>")
        );
        assert_eq!(redacted("SELECT 'by' FROM t ORDER BY 'x'"), None, "BY counts in account statements only");
        assert_eq!(redacted("SELECT 1"), None);
        assert_eq!(redacted("/* app */ CREATE USER b IDENTIFIED BY 'pw'").as_deref(), Some("/* app */ CREATE USER b IDENTIFIED BY <secret>"));
    }
}
