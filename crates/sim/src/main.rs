//! `quill-sim`: runs seeds of the crash simulator (`quill_sim::run_seed`).
//!
//! ```text
//! quill-sim --seed N                  one seed (a failure's replay)
//! quill-sim [--from N] [--count N] [--max-seconds S]
//!                                     seeds N, N+1, ... until the count or the time is reached
//! quill-sim --forever [--from N]      seeds until stopped (scripts/simulate)
//! ```
//!
//! Prints a summary line `quill-sim: ... N passed, M failed` and exits 1 when a seed failed,
//! after printing what failed and the command that replays it.

use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Seeds a run without `--count` or `--forever` takes.
const DEFAULT_COUNT: u64 = 1000;

struct Args {
    from: u64,
    count: Option<u64>,
    max_time: Option<Duration>,
    one: bool,
}

fn parse() -> Result<Args, String> {
    let mut args = Args { from: 0, count: Some(DEFAULT_COUNT), max_time: None, one: false };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"))?.parse::<u64>().map_err(|e| format!("{name}: {e}"));
        match arg.as_str() {
            "--seed" => {
                args.from = value("--seed")?;
                args.count = Some(1);
                args.one = true;
            }
            "--from" => args.from = value("--from")?,
            "--count" => args.count = Some(value("--count")?),
            "--max-seconds" => args.max_time = Some(Duration::from_secs(value("--max-seconds")?)),
            "--forever" => args.count = None,
            other => return Err(format!("unknown argument {other}\nusage: quill-sim [--seed N | --from N --count N --max-seconds S | --forever]")),
        }
    }
    Ok(args)
}

fn main() -> ExitCode {
    let args = match parse() {
        Ok(args) => args,
        Err(e) => {
            eprintln!("quill-sim: {e}");
            return ExitCode::from(2);
        }
    };
    // The engine's own panics are caught and reported with the seed; keep their default
    // message to the one line the report repeats.
    std::panic::set_hook(Box::new(|info| eprintln!("quill-sim: panic: {info}")));
    let started = Instant::now();
    let mut total = quill_sim::Report::default();
    let (mut passed, mut failed) = (0_u64, 0_u64);
    let mut seed = args.from;
    loop {
        if args.count.is_some_and(|count| seed - args.from >= count) || args.max_time.is_some_and(|max| started.elapsed() >= max) {
            break;
        }
        match quill_sim::run_seed(seed) {
            Ok(report) => {
                total += report;
                passed += 1;
                if args.one {
                    println!("seed {seed}: {report:?}");
                }
            }
            Err(failure) => {
                eprintln!("{failure}");
                failed += 1;
                break;
            }
        }
        if args.count.is_none() && passed % 100 == 0 {
            println!("quill-sim: {passed} seeds from {} passed ({} s)", args.from, started.elapsed().as_secs());
        }
        seed += 1;
    }
    println!(
        "quill-sim: seeds {}..{seed}, {} crashes ({} power losses, {} kill -9) and {} of replicas ({} pulls), {} statements, {} commits ({} lost, none promised), {} checkpoints in {:.1} s",
        args.from,
        total.crashes,
        total.power_losses,
        total.crashes - total.power_losses,
        total.replica_crashes,
        total.replica_pulls,
        total.statements,
        total.commits,
        total.commits_lost,
        total.checkpoints,
        started.elapsed().as_secs_f64()
    );
    println!("{passed} passed, {failed} failed");
    if failed > 0 { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}
