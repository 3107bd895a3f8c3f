//! The server under test: how to connect, and the few things every workload asks of it
//! (its benchmark database, its global status counters).

use mysql::prelude::Queryable;
use mysql::{Conn, OptsBuilder};
use std::sync::Barrier;
use std::time::{Duration, Instant};

/// The database every workload creates its tables in.
pub const DATABASE: &str = "quillbench";

pub struct Target {
    pub host: String,
    pub port: u16,
    pub user: String,
}

impl Target {
    /// The set-up connection of a workload: creates `quillbench` if missing and uses it.
    /// Clients then connect with [`Target::connect`], which writes nothing (a `CREATE DATABASE
    /// IF NOT EXISTS` per client would cost a binary-log sync each on a MariaDB with the binary
    /// log on).
    pub fn connect_setup(&self) -> Result<Conn, String> {
        let mut conn = self.connect_to(None)?;
        conn.query_drop(format!("CREATE DATABASE IF NOT EXISTS {DATABASE}")).map_err(|e| format!("create database: {e}"))?;
        conn.select_db(DATABASE).map_err(|e| format!("use {DATABASE}: {e}"))?;
        Ok(conn)
    }

    /// A client connection to the `quillbench` database (which [`Target::connect_setup`] made).
    pub fn connect(&self) -> Result<Conn, String> {
        self.connect_to(Some(DATABASE))
    }

    pub fn connect_to(&self, database: Option<&str>) -> Result<Conn, String> {
        self.connect_with(database, None)
    }

    /// A connection that answers `LOAD DATA LOCAL INFILE` requests with `handler`.
    pub fn connect_with(&self, database: Option<&str>, handler: Option<mysql::LocalInfileHandler>) -> Result<Conn, String> {
        let opts = OptsBuilder::new()
            .local_infile_handler(handler)
            .ip_or_hostname(Some(self.host.clone()))
            .tcp_port(self.port)
            .user(Some(self.user.clone()))
            .pass(Some(""))
            .db_name(database)
            .prefer_socket(false);
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

/// Runs `work` for `clients` concurrent clients, each on its own connection in its own thread.
///
/// All connections are opened first (a failure is returned before anything runs), then every
/// client is released at once; the elapsed time runs from that release to the last client's
/// end, so connection set-up is never timed.
pub fn run_clients<T: Send>(target: &Target, clients: u32, work: impl Fn(u32, &mut Conn) -> Result<T, String> + Sync) -> Result<(Vec<T>, Duration), String> {
    assert!(clients > 0, "no clients");
    let mut conns = (0..clients).map(|_| target.connect()).collect::<Result<Vec<_>, _>>()?;
    let barrier = Barrier::new(clients as usize + 1);
    let (results, elapsed) = std::thread::scope(|scope| {
        let handles: Vec<_> = conns
            .iter_mut()
            .zip(0..)
            .map(|(conn, client)| {
                let (barrier, work) = (&barrier, &work);
                scope.spawn(move || {
                    barrier.wait();
                    work(client, conn)
                })
            })
            .collect();
        barrier.wait();
        let start = Instant::now();
        let results: Vec<Result<T, String>> = handles.into_iter().map(|h| h.join().expect("client thread panicked")).collect();
        (results, start.elapsed())
    });
    Ok((results.into_iter().collect::<Result<Vec<_>, _>>()?, elapsed))
}
