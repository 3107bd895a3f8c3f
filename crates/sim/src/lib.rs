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
//! 3. Recovery (`Engine::open` on what the disk kept) and the checks of [`check`]: every
//!    commit the flush mode promised is present, what survives is a prefix of the commit
//!    order, the tables equal the model's at that prefix (rows and `CHECKSUM TABLE`), the
//!    binary log reads from its first file to its end with exactly the tables' changes and
//!    GTIDs unique and gap-free, and `@@gtid_executed` names the prefix.
//! 4. The workload goes on from the recovered state, and crashes again, a few times.
//!
//! Determinism: the engine runs on one thread (a current-thread runtime, sessions driven one
//! statement at a time), the log writes inline (`quill_log::WriterMode::Inline`: no writer
//! thread, the workload's ticks are its clock), and checkpoints are taken by the workload,
//! not a background thread. So a seed replays exactly: a failure prints the command that
//! replays it ([`Failure`]).
//!
//! Where it sits: on top of everything (`sql` for sessions and recovery, `replication` for
//! the binary log, `io` for the simulated disk); nothing depends on it. `quill-sim` (the
//! binary) runs seeds: a bounded slice in CI (`scripts/test-all`), or until stopped
//! (`scripts/simulate`).

pub mod check;
pub mod model;
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

/// The settings a simulated server starts with: small log segments, so checkpoints remove
/// some and the binary log spans several files.
#[must_use]
pub fn settings(segment_bytes: u64) -> VarSet {
    let mut vars = VarSet::defaults();
    vars.values.insert("quill_log_segment_bytes", segment_bytes.to_string());
    vars
}

/// Opens the engine on `fs` as the simulator runs it: the log written inline, and a log
/// failure a panic (caught by [`run_seed`]) rather than an abort.
///
/// # Errors
/// What `Engine::open` returns: recovery failed.
pub fn open(fs: &SimFs, segment_bytes: u64) -> Result<(Arc<Engine>, quill_sql::durability::OpenReport), String> {
    let fs: Arc<dyn Fs> = Arc::new(fs.clone());
    Engine::open_with(settings(segment_bytes), fs, Path::new(DATADIR), |config| {
        config.writer = quill_log::WriterMode::Inline;
        config.on_failure = Arc::new(|message| panic!("commit log failure: {message}"));
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
    let mut fs = SimFs::new();
    fs.create_dir_all(&datadir()).map_err(|e| e.to_string())?;
    let (engine, _) = open(&fs, segment_bytes)?;
    let mut world = workload::World::new(&mut rng, engine, fs.clone());
    let mut report = Report::default();
    runtime.block_on(world.setup(trail))?;
    let crashes = rng.random_range(1..=CRASHES_MAX);
    for round in 0..crashes {
        let steps = rng.random_range(10..=STEPS_MAX);
        for _ in 0..steps {
            runtime.block_on(world.step(&mut rng, trail))?;
        }
        let power_loss = rng.random_bool(0.6);
        let crash_seed = rng.random::<u64>();
        trail.push(format!("round {round}: {} (crash seed {crash_seed})", if power_loss { "power loss" } else { "kill -9" }));
        let promised = if power_loss { world.durable_seq } else { world.written_seq };
        let after = if power_loss { fs.crash(crash_seed).0 } else { fs.crash_process() };
        report += world.crash();
        fs = after;
        let (engine, _) = open(&fs, segment_bytes).map_err(|e| format!("recovery failed: {e}"))?;
        let recovered = runtime.block_on(check::recovery(&engine, &mut world.model, promised, world.handed_out_seq))?;
        report.commits_lost += world.handed_out_seq - recovered;
        trail.push(format!("round {round}: recovered {recovered} of {} transactions (at least {promised} promised)", world.handed_out_seq));
        world.resume(engine, fs.clone(), recovered);
        runtime.block_on(world.prepare_sessions(trail))?;
        report.crashes += 1;
        report.power_losses += usize::from(power_loss);
    }
    report += world.finish();
    Ok(report)
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
