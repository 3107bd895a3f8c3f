//! The statements that run a replica, as the session's recogniser reads them (sqlparser does
//! not): `CHANGE REPLICATION SOURCE TO` / `CHANGE MASTER TO` with MySQL's `SOURCE_` and
//! `MASTER_` option names, `START` / `STOP REPLICA` (or `SLAVE`), and `RESET REPLICA [ALL]`.
//! They are carried out through `quill_sql_context::replica_control::ReplicaControl`.

use quill_sql_types::error::{Result, SqlError};

/// What `CHANGE REPLICATION SOURCE TO` sets; `None` leaves a setting as it was.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SourceOptions {
    pub host: Option<String>,
    pub port: Option<u16>,
    pub user: Option<String>,
    pub password: Option<String>,
    /// `SOURCE_AUTO_POSITION = 1`: start from what the replica lacks by GTID.
    pub auto_position: Option<bool>,
    pub log_file: Option<String>,
    pub log_pos: Option<u64>,
    pub ssl: Option<bool>,
    /// `GET_SOURCE_PUBLIC_KEY = 1`: without TLS, ask the source for its RSA public key when
    /// caching_sha2_password needs the password itself (else that fails with 2061, as in MySQL).
    pub get_public_key: Option<bool>,
    /// Seconds between reconnection attempts.
    pub connect_retry: Option<u64>,
    /// Seconds; 0 turns heartbeats off.
    pub heartbeat_period: Option<f64>,
}

/// What a replica statement asks, once parsed.
#[derive(Debug, Clone, PartialEq)]
pub enum ReplicaStatement {
    Change(SourceOptions),
    Start,
    Stop,
    Reset { all: bool },
}

/// The replica statement `words` (upper case) begin, if any: `CHANGE MASTER TO`, `CHANGE
/// REPLICATION SOURCE TO`, `START|STOP REPLICA|SLAVE ...`, `RESET REPLICA|SLAVE [ALL]`.
///
/// # Errors
/// 1064 for a statement of that kind that does not parse.
pub fn parse(sql: &str, words: &[String]) -> Option<Result<ReplicaStatement>> {
    let word = |i: usize| words.get(i).map_or("", |w| w.trim_end_matches(';'));
    let replica = |i: usize| matches!(word(i), "REPLICA" | "SLAVE");
    match word(0) {
        "CHANGE" if (word(1) == "MASTER" && word(2) == "TO") || (word(1) == "REPLICATION" && word(2) == "SOURCE" && word(3) == "TO") => {
            let at = sql.to_ascii_uppercase().find(" TO ").map_or(sql.len(), |i| i + 4);
            Some(parse_options(&sql[at..]).map(ReplicaStatement::Change))
        }
        "START" if replica(1) => Some(Ok(ReplicaStatement::Start)),
        "STOP" if replica(1) => Some(Ok(ReplicaStatement::Stop)),
        "RESET" if replica(1) => match word(2) {
            "" => Some(Ok(ReplicaStatement::Reset { all: false })),
            "ALL" => Some(Ok(ReplicaStatement::Reset { all: true })),
            _ => Some(Err(SqlError::parse(sql))),
        },
        _ => None,
    }
}

/// `opt = value, ...` of CHANGE REPLICATION SOURCE TO, with MySQL's `SOURCE_` and `MASTER_`
/// names.
fn parse_options(text: &str) -> Result<SourceOptions> {
    let mut options = SourceOptions::default();
    let text = text.trim().trim_end_matches(';');
    for item in split_items(text) {
        let Some((name, value)) = item.split_once('=') else { return Err(SqlError::parse(item)) };
        let name = name.trim().to_ascii_uppercase().replace("GET_SOURCE_PUBLIC_KEY", "GET_PUBLIC_KEY").replace("GET_MASTER_PUBLIC_KEY", "GET_PUBLIC_KEY");
        let name = name.strip_prefix("SOURCE_").or_else(|| name.strip_prefix("MASTER_")).unwrap_or(&name).to_owned();
        let value = value.trim();
        let text_value = || -> Result<String> {
            let quoted = value.len() >= 2 && (value.starts_with('\'') && value.ends_with('\'') || value.starts_with('"') && value.ends_with('"'));
            if quoted { Ok(value[1..value.len() - 1].replace("''", "'").replace("\\'", "'")) } else { Err(SqlError::parse(value)) }
        };
        let number = || value.parse::<u64>().map_err(|_| SqlError::parse(value));
        match name.as_str() {
            "HOST" => options.host = Some(text_value()?),
            "PORT" => options.port = Some(u16::try_from(number()?).map_err(|_| SqlError::parse(value))?),
            "USER" => options.user = Some(text_value()?),
            "PASSWORD" => options.password = Some(text_value()?),
            "AUTO_POSITION" => options.auto_position = Some(number()? != 0),
            "LOG_FILE" => options.log_file = Some(text_value()?),
            "LOG_POS" => options.log_pos = Some(number()?),
            "SSL" => options.ssl = Some(number()? != 0),
            "GET_PUBLIC_KEY" => options.get_public_key = Some(number()? != 0),
            "CONNECT_RETRY" => options.connect_retry = Some(number()?),
            "HEARTBEAT_PERIOD" => options.heartbeat_period = Some(value.parse::<f64>().map_err(|_| SqlError::parse(value))?),
            // Accepted and not needed: MariaDB's GTID mode name (Quill reads MySQL GTIDs).
            "USE_GTID" => {}
            _ => return Err(SqlError::parse(item)),
        }
    }
    Ok(options)
}

/// Splits on commas outside quotes.
fn split_items(text: &str) -> Vec<&str> {
    let (mut items, mut start, mut quote) = (Vec::new(), 0, None);
    for (i, c) in text.char_indices() {
        match (c, quote) {
            ('\'' | '"', None) => quote = Some(c),
            (q, Some(open)) if q == open => quote = None,
            (',', None) => {
                items.push(text[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(text[start..].trim());
    items.into_iter().filter(|i| !i.is_empty()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(sql: &str) -> Vec<String> {
        sql.split_whitespace().map(str::to_ascii_uppercase).collect()
    }

    fn statement(sql: &str) -> ReplicaStatement {
        parse(sql, &words(sql)).expect("a replica statement").expect("parses")
    }

    #[test]
    fn both_spellings_of_change_source_give_the_same_options() {
        let new = statement(
            "CHANGE REPLICATION SOURCE TO SOURCE_HOST='127.0.0.1', SOURCE_PORT=3307, SOURCE_USER='repl', SOURCE_PASSWORD='a,b''c', SOURCE_AUTO_POSITION=1",
        );
        let old =
            statement("change master to master_host = '127.0.0.1' , master_port = 3307, master_user='repl', master_password='a,b''c', master_auto_position=1;");
        assert_eq!(new, old);
        let ReplicaStatement::Change(o) = new else { panic!() };
        assert_eq!((o.host.as_deref(), o.port, o.password.as_deref(), o.auto_position), (Some("127.0.0.1"), Some(3307), Some("a,b'c"), Some(true)));
        let ReplicaStatement::Change(o) = statement("CHANGE MASTER TO MASTER_LOG_FILE='quill-bin.000001', MASTER_LOG_POS=4") else { panic!() };
        assert_eq!((o.log_file.as_deref(), o.log_pos, o.host), (Some("quill-bin.000001"), Some(4), None));
    }

    #[test]
    fn start_stop_and_reset_in_both_names_and_bad_options_are_1064() {
        assert_eq!(statement("START REPLICA"), ReplicaStatement::Start);
        assert_eq!(statement("stop slave"), ReplicaStatement::Stop);
        assert_eq!(statement("RESET REPLICA ALL"), ReplicaStatement::Reset { all: true });
        assert_eq!(statement("RESET SLAVE"), ReplicaStatement::Reset { all: false });
        for bad in ["CHANGE MASTER TO MASTER_HOST=unquoted", "CHANGE MASTER TO MASTER_PORT='x'", "CHANGE MASTER TO NO_SUCH=1", "RESET REPLICA SOME"] {
            assert_eq!(parse(bad, &words(bad)).unwrap().unwrap_err().code, 1064, "{bad}");
        }
        assert!(parse("START TRANSACTION", &words("START TRANSACTION")).is_none());
    }
}
