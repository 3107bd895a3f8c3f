//! The benchmark driver: one workload against one server per invocation, measurements printed
//! as one JSON object on standard output (the format is in `bench/README.md`, "Driver output").
//!
//! `bench/run` starts the servers, calls this driver once per workload run, alternating
//! servers, and turns the runs into medians and ratios. The driver itself knows nothing of
//! medians or of which server it talks to: it measures, checks the result is right, and
//! reports. A server feature the workload wants but the server lacks (a status counter, say) is
//! reported as a metric with no value, never guessed.
//!
//! Workloads live one per module; each sets up its own tables in the `quillbench` database,
//! so a run never depends on an earlier one.

mod counter;
mod fsync_floor;
mod hot_row;
mod insert_select;
mod insert_storm;
mod load_data;
mod long_read;
mod notify;
mod replication_lag;
mod report;
mod server;
mod sql;
mod wait_status;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "quill-bench-driver", about = "Runs one benchmark workload and prints JSON")]
struct Cli {
    /// Server host.
    #[arg(long, default_value = "127.0.0.1", global = true)]
    host: String,
    /// Server TCP port.
    #[arg(long, default_value_t = 3306, global = true)]
    port: u16,
    /// User name (empty password).
    #[arg(long, default_value = "root", global = true)]
    user: String,
    #[command(subcommand)]
    workload: Workload,
}

#[derive(Subcommand)]
enum Workload {
    /// Raw `write + fdatasync` latency of a file in DIR: the physical floor of a durable commit.
    FsyncFloor(fsync_floor::Args),
    /// Autocommit increments of a 10-row `demo` table, by 1 or more clients.
    Counter(counter::Args),
    /// Autocommit prepared INSERTs with named parameters into an AUTO_INCREMENT table.
    InsertStorm(insert_storm::Args),
    /// Optimistic concurrency on one hot row: versioned UPDATE, INSERT child, COMMIT.
    HotRow(hot_row::Args),
    /// A long join with no usable index, alone or beside a writer on another table.
    LongRead(long_read::Args),
    /// `INSERT INTO dst SELECT * FROM src` of a price-list table per row format or buffer size.
    InsertSelect(insert_select::Args),
    /// `LOAD DATA LOCAL INFILE` of a price-list file.
    LoadData(load_data::Args),
    /// Single-row INSERTs on a source, and when each was applied on its replica.
    ReplicationLag(replication_lag::Args),
    /// A producer's commits and how soon a consumer sees them (GET_LOCK or commit wait).
    Notify(notify::Args),
    /// Runs SQL statements and prints their rows and warnings (set-up and feature probes).
    Sql(sql::Args),
    /// Waits on one connection until a status variable leaves or reaches a value.
    WaitStatus(wait_status::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let target = server::Target { host: cli.host, port: cli.port, user: cli.user };
    let result = match cli.workload {
        Workload::FsyncFloor(args) => fsync_floor::run(&args),
        Workload::Counter(args) => counter::run(&target, &args),
        Workload::InsertStorm(args) => insert_storm::run(&target, &args),
        Workload::HotRow(args) => hot_row::run(&target, &args),
        Workload::LongRead(args) => long_read::run(&target, &args),
        Workload::InsertSelect(args) => insert_select::run(&target, &args),
        Workload::LoadData(args) => load_data::run(&target, &args),
        Workload::ReplicationLag(args) => replication_lag::run(&target, &args),
        Workload::Notify(args) => notify::run(&target, &args),
        Workload::Sql(args) => sql::run(&target, &args),
        Workload::WaitStatus(args) => wait_status::run(&target, &args),
    };
    match result {
        Ok(json) => {
            println!("{json}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("quill-bench-driver: {error}");
            ExitCode::FAILURE
        }
    }
}
