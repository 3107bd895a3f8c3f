//! The server under test: how to connect, and the few things every workload asks of it
//! (its benchmark database, its global status counters).

use mysql::prelude::Queryable;
use mysql::{Conn, OptsBuilder};

/// The database every workload creates its tables in.
pub const DATABASE: &str = "quillbench";

pub struct Target {
    pub host: String,
    pub port: u16,
    pub user: String,
}

impl Target {
    /// A new connection with `quillbench` as its default database (created if missing).
    pub fn connect(&self) -> Result<Conn, String> {
        let mut conn = self.connect_without_database()?;
        conn.query_drop(format!("CREATE DATABASE IF NOT EXISTS {DATABASE}")).map_err(|e| format!("create database: {e}"))?;
        conn.select_db(DATABASE).map_err(|e| format!("use {DATABASE}: {e}"))?;
        Ok(conn)
    }

    pub fn connect_without_database(&self) -> Result<Conn, String> {
        let opts =
            OptsBuilder::new().ip_or_hostname(Some(self.host.clone())).tcp_port(self.port).user(Some(self.user.clone())).pass(Some("")).prefer_socket(false);
        Conn::new(opts).map_err(|e| format!("connect to {}:{}: {e}", self.host, self.port))
    }
}

/// A global status counter, or why it cannot be read (the server does not have it).
pub fn global_status(conn: &mut Conn, name: &str) -> Result<u64, String> {
    let row: Option<(String, String)> = conn.query_first(format!("SHOW GLOBAL STATUS LIKE '{name}'")).map_err(|e| format!("SHOW GLOBAL STATUS: {e}"))?;
    match row {
        Some((_, value)) => value.parse().map_err(|_| format!("{name} is not a number: {value}")),
        None => Err(format!("server has no status counter {name}")),
    }
}

/// Change of a counter between two readings; either failing reading is the reason it is missing.
pub fn delta(before: &Result<u64, String>, after: &Result<u64, String>) -> Result<u64, String> {
    match (before, after) {
        (Ok(before), Ok(after)) => Ok(after.saturating_sub(*before)),
        (Err(why), _) | (_, Err(why)) => Err(why.clone()),
    }
}

/// Runs `statements` one after another, stopping at the first error.
pub fn run_all(conn: &mut Conn, statements: &[&str]) -> Result<(), String> {
    for statement in statements {
        conn.query_drop(statement).map_err(|e| format!("{statement}: {e}"))?;
    }
    Ok(())
}

/// Errors after which a transaction is retried: deadlock victim (1213) and lock wait
/// timeout (1205). Anything else fails the run.
pub fn is_retryable(error: &mysql::Error) -> bool {
    matches!(error, mysql::Error::MySqlError(e) if e.code == 1213 || e.code == 1205)
}
