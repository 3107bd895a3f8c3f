//! A deterministic crash simulator of the whole server, in the style of FoundationDB's
//! simulation tests and TigerBeetle's VOPR: one seed drives a random workload through real
//! sessions (`quill_sql::Session`) of an engine on the simulated disk (`quill_io::SimFs`),
//! crashes the disk, recovers, and checks what came back against a model.
//!
//! One seed ([`run_seed`]):
//! 1. A workload ([`workload`]) of autocommit statements and multi-statement transactions
//!    (savepoints, rollbacks, duplicate-key failures), multi-row inserts on the bulk path, a
//!    large transaction that streams into the log, DDL, `SET GLOBAL
//!    innodb_flush_log_at_trx_commit` changes, checkpoints and ticks of the log's clock, in
//!    an order the seed chooses. Every statement's outcome is predicted by the model
//!    ([`model`]) and checked.
//! 2. A crash: a power loss ([`quill_io::SimFs::crash`]: each write since its file's last
//!    sync dropped, kept or torn, name changes since the last directory sync kept as a
//!    prefix) or a kill -9 ([`quill_io::SimFs::crash_process`]: every write kept).
//! 3. Recovery (`durability::open` on what the disk kept) and the checks of [`check`]: every
//!    commit the flush mode promised is present, what survives is a prefix of the commit
//!    order, the tables equal the model's at that prefix (rows and `CHECKSUM TABLE`), the
//!    binary log reads from its first file to its end with exactly the tables' changes and
//!    GTIDs unique and gap-free, and `@@gtid_executed` names the prefix.
//! 4. The workload goes on from the recovered state, and crashes again, a few times.
//! 5. A quarter of the seeds have a replica ([`replica`]): a second engine on a disk of its own that
//!    now and then pulls the source's durable binary log by GTID and applies it through the
//!    replica's applier, and crashes and recovers on its own. After each of its recoveries, and
//!    once it has caught up with a recovered source, the source's GTIDs it holds are a prefix
//!    `1..=j` and its tables are the model's after `j` transactions (`j` all the source
//!    recovered, once caught up).
//!
//! Determinism: the engine runs on one thread (a current-thread runtime, sessions driven one
//! statement at a time), the log writes inline (`quill_log::WriterMode::Inline`: no writer
//! thread, the workload's ticks are its clock), recovery replays on one thread
//! (`OpenConfig::replay_threads`), and checkpoints are taken by the workload, not a
//! background thread. So a seed replays exactly: a failure prints the command that
//! replays it ([`Failure`]).
//!
//! Where it sits: on top of everything (`sql` for sessions and recovery, `replication` for
//! the binary log, `io` for the simulated disk); nothing depends on it. `quill-sim` (the
//! binary) runs seeds: a bounded slice in CI (`scripts/test-all`), or until stopped
//! (`scripts/simulate`).

pub mod check;
pub mod model;
pub mod replica;
pub mod workload;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use quill_io::{Fs, SimFs};
use quill_sql::Engine;
use quill_sql::vars::VarSet;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

/// The data directory on the simulated disk.
pub const DATADIR: &str = "/quill";
/// The database the workload's tables live in.
pub const DATABASE: &str = "sim";
/// Crashes (and recoveries) in one seed, at most.
pub const CRASHES_MAX: usize = 3;
/// Steps of workload between two crashes, at most.
pub const STEPS_MAX: usize = 150;

/// What a seed did, for the summary.
#[derive(Debug, Default, Clone, Copy)]
pub struct Report {
    pub crashes: usize,
    pub power_losses: usize,
    pub statements: u64,
    pub commits: u64,
    pub checkpoints: u64,
    /// Transactions the crashes took away (never promised durable).
    pub commits_lost: u64,
    /// Crashes of a replica, and its pulls of the source's binary log.
    pub replica_crashes: usize,
    pub replica_pulls: usize,
    /// A hash of every step taken and every recovery's outcome: a seed that replays
    /// exactly gives the same.
    pub fingerprint: u64,
}

impl std::ops::AddAssign for Report {
    fn add_assign(&mut self, other: Report) {
        self.crashes += other.crashes;
        self.power_losses += other.power_losses;
        self.statements += other.statements;
        self.commits += other.commits;
        self.checkpoints += other.checkpoints;
        self.commits_lost += other.commits_lost;
        self.replica_crashes += other.replica_crashes;
        self.replica_pulls += other.replica_pulls;
        self.fingerprint = self.fingerprint.rotate_left(5) ^ other.fingerprint;
    }
}

/// A seed that failed: what went wrong, where, and how to replay it.
#[derive(Debug, Clone)]
pub struct Failure {
    pub seed: u64,
    pub message: String,
    /// The last steps before the failure, oldest first.
    pub trail: Vec<String>,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "seed {} failed: {}", self.seed, self.message)?;
        if !self.trail.is_empty() {
            writeln!(f, "last steps:")?;
            for step in &self.trail {
                writeln!(f, "  {step}")?;
            }
        }
        write!(f, "replay: cargo run --release -p quill-sim -- --seed {}", self.seed)
    }
}

/// How a seed's servers are set up.
#[derive(Debug, Clone, Copy)]
pub struct Setup {
    /// Small log segments, so checkpoints remove some and the binary log spans several files.
    pub segment_bytes: u64,
    /// Every leaf not in use leaves memory after each call (`quill_debug_evict_always`): every
    /// read after a write comes back from the page file, and evictions interleave with
    /// everything the workload does.
    pub evict_always: bool,
    /// [`quill_sql::durability::OpenConfig::redo_waiting_bytes`]: recovery leaves every
    /// change waiting for its leaves, none, or the first few.
    pub redo_waiting_bytes: u64,
}

/// The settings a simulated server starts with (see [`Setup`]).
#[must_use]
pub fn settings(setup: Setup) -> VarSet {
    let mut vars = VarSet::defaults();
    vars.values.insert("quill_log_segment_bytes", setup.segment_bytes.to_string());
    if setup.evict_always {
        vars.values.insert("quill_debug_evict_always", "ON".into());
    }
    vars
}

/// Opens the engine on `fs` as the simulator runs it: the log written inline, and a log
/// failure a panic (caught by [`run_seed`]) rather than an abort. With `keep_binlog`,
/// checkpoints remove no segment (`binlog_expire_logs_seconds = 0`, as a source keeps its
/// files for a replica that is away): the simulated disk's files are all as old as the
/// epoch, so otherwise every checkpoint removes what it covers.
///
/// # Errors
/// What `durability::open` returns: recovery failed.
pub fn open(fs: &SimFs, setup: Setup, keep_binlog: bool) -> Result<(Arc<Engine>, quill_sql::durability::OpenReport), String> {
    let fs: Arc<dyn Fs> = Arc::new(fs.clone());
    quill_sql::durability::open_with(settings(setup), fs, Path::new(DATADIR), |config| {
        config.log.writer = quill_log::WriterMode::Inline;
        config.replay_threads = 1;
        config.redo_waiting_bytes = setup.redo_waiting_bytes;
        // A background thread would make runs differ: leaves take their changes as the
        // workload and checkpoints read them.
        config.drain_redo_in_background = false;
        if keep_binlog {
            config.log.segment_expiry = None;
        }
        config.log.on_failure = Arc::new(|message| panic!("commit log failure: {message}"));
    })
    .map_err(|e| e.to_string())
}

/// The data directory as a path.
#[must_use]
pub fn datadir() -> PathBuf {
    PathBuf::from(DATADIR)
}

/// Runs one seed: workload, crashes and checks. Deterministic: the same seed does the same.
///
/// # Errors
/// The first check that failed, or a panic of the engine, as a [`Failure`].
pub fn run_seed(seed: u64) -> Result<Report, Failure> {
    let trail = Arc::new(Trail::default());
    let outcome = {
        let trail = Arc::clone(&trail);
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || simulate(seed, &trail)))
    };
    let failure = |message: String| Failure { seed, message, trail: trail.last() };
    match outcome {
        Ok(Ok(report)) => Ok(Report { fingerprint: trail.fingerprint(), ..report }),
        Ok(Err(message)) => Err(failure(message)),
        Err(panic) => {
            let message = panic.downcast_ref::<String>().cloned().or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned())).unwrap_or_default();
            Err(failure(format!("panic: {message}")))
        }
    }
}

fn simulate(seed: u64, trail: &Trail) -> Result<Report, String> {
    let mut rng = StdRng::seed_from_u64(seed);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    // Segments from 4 KiB (a file per few transactions) to 64 KiB.
    let segment_bytes = 4096 << rng.random_range(0..5_u32);
    // Half the seeds (by parity, so the draws below are the same either way) evict every
    // leaf as soon as it is not in use.
    // A third of the seeds by the next digit replay with every change waiting for its
    // leaves, a third with none, a third with the first few only.
    let redo_waiting_bytes = [u64::MAX, 0, 2048][usize::try_from(seed / 2 % 3).expect("below 3")];
    let setup = Setup { segment_bytes, evict_always: seed % 2 == 1, redo_waiting_bytes };
    // A quarter of the seeds have a replica, which pulls the binary log now and then and
    // crashes too.
    let with_replica = rng.random_bool(0.25);
    let mut fs = SimFs::new();
    fs.create_dir_all(&datadir()).map_err(|e| e.to_string())?;
    let (engine, _) = open(&fs, setup, with_replica)?;
    let mut world = workload::World::new(&mut rng, engine, fs.clone());
    let mut report = Report::default();
    runtime.block_on(world.setup(trail))?;
    let mut replica = if with_replica { Some(replica::Replica::new(setup)?) } else { None };
    let crashes = rng.random_range(1..=CRASHES_MAX);
    for round in 0..crashes {
        let steps = rng.random_range(10..=STEPS_MAX);
        for _ in 0..steps {
            runtime.block_on(world.step(&mut rng, trail))?;
            if let Some(replica) = replica.as_mut() {
                replica_step(&runtime, &mut rng, replica, &world, trail, &mut report)?;
            }
        }
        if let Some(replica) = replica.as_mut() {
            // A connected replica has what is durable when the source goes down; a restart
            // keeps only the files after the newest DDL that changed a table (docs/binlog.md).
            runtime.block_on(replica.pull(world.engine()))?;
        }
        let power_loss = rng.random_bool(0.6);
        let crash_seed = rng.random::<u64>();
        trail.push(format!("round {round}: {} (crash seed {crash_seed})", if power_loss { "power loss" } else { "kill -9" }));
        let promised = if power_loss { world.durable_seq } else { world.written_seq };
        let after = if power_loss { fs.crash(crash_seed).0 } else { fs.crash_process() };
        report += world.crash();
        fs = after;
        let (engine, _) = open(&fs, setup, with_replica).map_err(|e| format!("recovery failed: {e}"))?;
        let recovered = runtime.block_on(check::recovery(&engine, &mut world.model, promised, world.handed_out_seq))?;
        report.commits_lost += world.handed_out_seq - recovered;
        trail.push(format!("round {round}: recovered {recovered} of {} transactions (at least {promised} promised)", world.handed_out_seq));
        world.resume(engine, fs.clone(), recovered);
        runtime.block_on(world.prepare_sessions(trail))?;
        if let Some(replica) = replica.as_mut() {
            // Caught up with the recovered source, the replica holds exactly what it holds.
            let source_uuid = world.engine().global("server_uuid").unwrap_or_default();
            let j = runtime.block_on(replica.pull(world.engine()))?;
            if j != recovered {
                return Err(format!("the replica caught up to the source's GTID {j}, the source recovered {recovered}"));
            }
            runtime.block_on(replica.check(&world.model, &source_uuid))?;
            trail.push(format!("round {round}: the replica caught up to {j}"));
        }
        report.crashes += 1;
        report.power_losses += usize::from(power_loss);
    }
    report += world.finish();
    Ok(report)
}

/// One step of the replica: now and then it pulls the source's binary log, or crashes and
/// recovers, and is checked against the model.
fn replica_step(
    runtime: &tokio::runtime::Runtime,
    rng: &mut StdRng,
    replica: &mut replica::Replica,
    world: &workload::World,
    trail: &Trail,
    report: &mut Report,
) -> Result<(), String> {
    let source_uuid = world.engine().global("server_uuid").unwrap_or_default();
    match rng.random_range(0..100) {
        0..4 => {
            let j = runtime.block_on(replica.pull(world.engine()))?;
            report.replica_pulls += 1;
            trail.push(format!("the replica pulled to {j}"));
        }
        4..5 => {
            let power_loss = rng.random_bool(0.5);
            let after = if power_loss { replica.fs.crash(rng.random::<u64>()).0 } else { replica.fs.crash_process() };
            replica.recover(after)?;
            let j = runtime.block_on(replica.check(&world.model, &source_uuid))?;
            report.replica_crashes += 1;
            trail.push(format!("the replica crashed ({}) and recovered {j}", if power_loss { "power loss" } else { "kill -9" }));
        }
        _ => {}
    }
    Ok(())
}

/// The trail of recent steps a failure prints.
mod trail {
    use std::collections::VecDeque;
    use std::sync::Mutex;

    /// How many steps a failure shows, unless `QUILL_SIM_TRAIL` says otherwise.
    pub const TRAIL_STEPS: usize = 40;

    pub struct Trail {
        steps: Mutex<(VecDeque<String>, std::hash::DefaultHasher)>,
        keep: usize,
    }

    impl Default for Trail {
        fn default() -> Trail {
            let keep = std::env::var("QUILL_SIM_TRAIL").ok().and_then(|v| v.parse().ok()).unwrap_or(TRAIL_STEPS);
            Trail { steps: Mutex::new((VecDeque::new(), std::hash::DefaultHasher::new())), keep }
        }
    }

    impl Trail {
        pub fn push(&self, step: String) {
            use std::hash::Hash;
            let mut guard = self.steps.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let (steps, hasher) = &mut *guard;
            step.hash(hasher);
            if steps.len() >= self.keep {
                steps.pop_front();
            }
            steps.push_back(step);
        }

        pub fn last(&self) -> Vec<String> {
            self.steps.lock().unwrap_or_else(std::sync::PoisonError::into_inner).0.iter().cloned().collect()
        }

        /// The hash of every step pushed (`std`'s SipHash with fixed keys: the same steps,
        /// the same number, on every run).
        pub fn fingerprint(&self) -> u64 {
            use std::hash::Hasher;
            self.steps.lock().unwrap_or_else(std::sync::PoisonError::into_inner).1.finish()
        }
    }
}

pub use trail::Trail;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_seeds_pass() {
        for seed in 0..3 {
            if let Err(failure) = run_seed(seed) {
                panic!("{failure}");
            }
        }
    }

    /// The point of the inline log and the single-threaded driver: a seed is a replay.
    #[test]
    fn a_seed_replays_exactly() {
        let first = run_seed(11).unwrap_or_else(|f| panic!("{f}"));
        let again = run_seed(11).unwrap_or_else(|f| panic!("{f}"));
        assert_eq!((first.fingerprint, first.statements, first.commits), (again.fingerprint, again.statements, again.commits));
        assert_ne!(run_seed(12).map(|r| r.fingerprint).unwrap_or_default(), first.fingerprint);
    }
}
