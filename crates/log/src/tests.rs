//! Tests of the log as a whole: the reader on damaged logs (torn tail, bad length, bad
//! checksum, empty segment, records spanning segments), the writer's group commit and flush
//! modes, and seeded crashes of a simulated disk under concurrent appenders.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use quill_io::{Fs, SimFs};

use crate::{Change, CutReason, FlushMode, HEADER_BYTES, Log, LogConfig, LogEnd, Record, Start, segment_name};

fn dir() -> PathBuf {
    PathBuf::from("/data/log")
}

fn config(segment_bytes: u64) -> LogConfig {
    LogConfig { segment_bytes, on_failure: Arc::new(|m| panic!("log failure: {m}")), ..LogConfig::default() }
}

fn change(n: u64) -> Vec<Change> {
    vec![Change::Insert { db: "db".into(), table: "t".into(), key: n.to_be_bytes().to_vec(), row: vec![n as u8; 10 + (n % 7) as usize] }]
}

/// Opens the log on `fs`, collecting what recovery replays.
/// The segment files in the log directory, in LSN order (the version file left out).
fn segment_files(fs: &SimFs) -> Vec<String> {
    fs.list(&dir()).unwrap().into_iter().filter(|n| n.ends_with(crate::format::SEGMENT_SUFFIX)).collect()
}

fn open(fs: &SimFs, config: LogConfig) -> (Log, Vec<Record>, crate::Recovered) {
    let mut records = Vec::new();
    let (log, recovered) = Log::open::<std::io::Error>(Arc::new(fs.clone()), &dir(), config, None, |r| {
        records.push(r);
        Ok(())
    })
    .unwrap();
    (log, records, recovered)
}

fn write_records(fs: &SimFs, segment_bytes: u64, count: u64) -> Vec<crate::Appended> {
    let (log, _, _) = open(fs, config(segment_bytes));
    let appended: Vec<_> = (1..=count).map(|n| log.append(n, &change(n)).unwrap()).collect();
    log.wait_durable_blocking(appended.last().unwrap().end);
    appended
}

fn corrupt(fs: &SimFs, segment_bytes: u64, lsn: u64, bytes: &[u8]) {
    let start = lsn - lsn % segment_bytes;
    let file = fs.open(&dir().join(segment_name(start)), false).unwrap();
    file.write_at(bytes, lsn - start).unwrap();
    file.sync_data().unwrap();
}

#[test]
fn records_come_back_in_order_with_their_sequence_numbers() {
    let fs = SimFs::new();
    let appended = write_records(&fs, 1 << 16, 50);
    let (_, records, recovered) = open(&fs, config(1 << 16));
    assert_eq!(records.len(), 50);
    for (n, (record, at)) in records.iter().zip(&appended).enumerate() {
        assert_eq!((record.lsn, record.seq, record.commit_us), (at.lsn, n as u64 + 1, n as u64 + 1));
        assert_eq!(record.changes, change(n as u64 + 1));
    }
    assert_eq!((recovered.end_lsn, recovered.next_seq, recovered.end.clone()), (appended[49].end, 51, LogEnd::Clean));
}

#[test]
fn records_spanning_a_segment_boundary_read_back_whole() {
    let fs = SimFs::new();
    // Tiny segments: almost every record crosses a boundary, some cross two.
    let appended = write_records(&fs, 64, 40);
    assert!(appended.iter().any(|a| a.lsn / 64 != (a.end - 1) / 64), "some record spans segments");
    let (_, records, recovered) = open(&fs, config(64));
    assert_eq!(records.len(), 40);
    assert_eq!(recovered.end, LogEnd::Clean);
}

#[test]
fn an_empty_log_and_an_empty_segment_are_clean_ends() {
    let fs = SimFs::new();
    let (log, records, recovered) = open(&fs, config(4096));
    assert!(records.is_empty());
    assert_eq!((recovered.end_lsn, recovered.next_seq, recovered.end.clone()), (0, 1, LogEnd::Clean));
    drop(log);
    // A preallocated segment with nothing in it.
    fs.open(&dir().join(segment_name(0)), true).unwrap().write_at(&[0; 4096], 0).unwrap();
    let (_, records, recovered) = open(&fs, config(4096));
    assert!(records.is_empty());
    assert_eq!(recovered.end, LogEnd::Clean);
}

#[test]
fn a_torn_tail_is_cut_at_the_first_damaged_record() {
    let fs = SimFs::new();
    let appended = write_records(&fs, 1 << 16, 10);
    // Tear the 8th record: keep its header, zero the end of its body.
    let torn = appended[7];
    corrupt(&fs, 1 << 16, torn.end - 3, &[0, 0, 0]);
    let (log, records, recovered) = open(&fs, config(1 << 16));
    assert_eq!(records.len(), 7, "records after a torn one are not applied");
    assert_eq!((recovered.end_lsn, recovered.end.clone()), (torn.lsn, LogEnd::Cut(CutReason::BadChecksum)));
    // What was cut is kept aside for an operator: the torn record and the two after it.
    let (path, bytes) = recovered.preserved.clone().expect("the cut bytes are preserved");
    assert_eq!(bytes, appended[9].end - torn.lsn);
    assert_eq!(fs.contents(&path).unwrap().len() as u64, bytes);
    // New records go where the torn one was, and the stale ones after it never come back.
    let again = log.append(99, &change(99)).unwrap();
    assert_eq!(again.lsn, torn.lsn);
    assert_eq!(again.seq, 8);
    log.wait_durable_blocking(again.end);
    drop(log);
    let (_, records, recovered) = open(&fs, config(1 << 16));
    assert_eq!(records.len(), 8);
    assert_eq!(records[7].commit_us, 99);
    assert_eq!(recovered.end, LogEnd::Clean);
}

#[test]
fn a_bad_length_is_cut_without_reading_it() {
    let fs = SimFs::new();
    let appended = write_records(&fs, 1 << 16, 5);
    corrupt(&fs, 1 << 16, appended[2].lsn, &u32::MAX.to_le_bytes());
    let (_, records, recovered) = open(&fs, config(1 << 16));
    assert_eq!(records.len(), 2);
    assert_eq!(recovered.end, LogEnd::Cut(CutReason::BadLength(u32::MAX as usize)));
}

#[test]
fn a_bad_checksum_in_the_middle_cuts_everything_after_it() {
    let fs = SimFs::new();
    let appended = write_records(&fs, 1 << 16, 5);
    corrupt(&fs, 1 << 16, appended[1].lsn + HEADER_BYTES as u64 + 2, &[0xee]);
    let (_, records, recovered) = open(&fs, config(1 << 16));
    assert_eq!(records.len(), 1);
    assert_eq!((recovered.end_lsn, recovered.end), (appended[1].lsn, LogEnd::Cut(CutReason::BadChecksum)));
}

#[test]
fn a_record_torn_across_a_missing_segment_is_torn() {
    let fs = SimFs::new();
    let appended = write_records(&fs, 64, 20);
    let spanning = appended.iter().rev().find(|a| a.lsn / 64 != (a.end - 1) / 64).copied().unwrap();
    // Remove every segment after the one the spanning record starts in.
    for name in segment_files(&fs) {
        let start: u64 = name.trim_end_matches(".qlog").parse().unwrap();
        if start > spanning.lsn {
            fs.remove(&dir().join(&name)).unwrap();
        }
    }
    let (_, records, recovered) = open(&fs, config(64));
    assert_eq!(recovered.end_lsn, spanning.lsn);
    assert_eq!(recovered.end, LogEnd::Cut(CutReason::Torn));
    assert_eq!(records.len() as u64, spanning.seq - 1);
}

/// Regression: a last segment shortened by a torn write or an interrupted copy made start-up
/// refuse the whole log ("does not match quill_log_segment_bytes"). It is a torn tail.
#[test]
fn a_shortened_last_segment_is_a_torn_tail() {
    let fs = SimFs::new();
    let appended = write_records(&fs, 1 << 12, 200);
    let last = segment_files(&fs).pop().unwrap();
    let start: u64 = last.trim_end_matches(".qlog").parse().unwrap();
    let cut_at = appended.iter().rev().find(|a| a.lsn > start + 10).unwrap().lsn + 10;
    fs.open(&dir().join(&last), false).unwrap().set_len(cut_at - start).unwrap();
    let (log, records, recovered) = open(&fs, config(1 << 12));
    let kept = appended.iter().filter(|a| a.end <= cut_at).count();
    assert_eq!(records.len(), kept);
    assert_eq!(recovered.end, LogEnd::Cut(CutReason::Torn));
    // The log goes on from there: into the short segment's room, then a new segment.
    let more: Vec<_> = (500..600).map(|n| log.append(n, &change(n)).unwrap()).collect();
    log.wait_durable_blocking(more.last().unwrap().end);
    drop(log);
    let (_, records, recovered) = open(&fs, config(1 << 12));
    assert_eq!(records.len(), kept + 100);
    assert_eq!(recovered.end, LogEnd::Clean);
}

/// Waits (briefly) until `f` holds.
fn eventually(what: &str, f: impl Fn() -> bool) {
    for _ in 0..500 {
        if f() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("{what} did not happen");
}

/// A full disk fails the commits that need a new segment (nothing of them is logged) and
/// nothing else; commits resume by themselves when space returns, and recovery finds every
/// acknowledged record. Before, a full disk stopped the server.
#[test]
fn a_full_disk_fails_commits_that_need_space_and_they_resume_when_it_returns() {
    let fs = SimFs::new();
    let segment = 1 << 14;
    // Room for two segments and change.
    fs.set_capacity(Some(2 * segment + 1000));
    let (log, _, _) = open(&fs, config(segment));
    let mut acknowledged = Vec::new();
    let mut refused = 0;
    for n in 1..2_000u64 {
        match log.append(n, &change(n)) {
            Ok(at) => {
                log.wait_durable_blocking(at.end);
                acknowledged.push(n);
            }
            Err(crate::EncodeError::LogFull(_)) => refused += 1,
            Err(e) => panic!("{e}"),
        }
        if refused > 20 {
            break;
        }
    }
    assert!(refused > 0 && acknowledged.len() > 100, "{} acknowledged, {refused} refused", acknowledged.len());
    assert!(log.space_error().is_some());
    // DDL may still use the space DML leaves it.
    let ddl = vec![Change::Ddl { db: "db".into(), sql: "CREATE TABLE t2 (id INT)".into(), context: None }];
    assert!(log.wait_for_room(100));
    let at = log.append_ddl(5_000, &ddl, false).expect("DDL uses the reserve");
    log.wait_durable_blocking(at.end);
    // Space returns: commits go through again without anyone's help.
    fs.set_capacity(None);
    eventually("commits resume", || log.space_error().is_none());
    let at = log.append(9_000, &change(9_000)).unwrap();
    log.wait_durable_blocking(at.end);
    drop(log);
    let (_, records, recovered) = open(&fs, config(segment));
    let logged: Vec<u64> = records.iter().map(|r| r.commit_us).collect();
    let mut expected = acknowledged.clone();
    expected.extend([5_000, 9_000]);
    assert_eq!(logged, expected, "every acknowledged commit, and nothing refused");
    assert_eq!(recovered.end, LogEnd::Clean);
}

/// Regression: with 64 MiB segments a 64 MiB volume could not take one commit. Segments
/// shrink to what fits.
#[test]
fn a_small_disk_gets_smaller_segments() {
    let fs = SimFs::new();
    fs.set_capacity(Some(700 << 10));
    let (log, _, _) = open(&fs, config(1 << 20));
    let at = log.append(1, &change(1)).expect("a commit fits on a small disk");
    log.wait_durable_blocking(at.end);
    let sizes: Vec<usize> = segment_files(&fs).iter().map(|n| fs.contents(&dir().join(n)).unwrap().len()).collect();
    assert!(!sizes.is_empty() && sizes.iter().all(|&s| s < 1 << 20 && s >= crate::SEGMENT_BYTES_MIN as usize), "{sizes:?}");
    drop(log);
    let (_, records, _) = open(&fs, config(1 << 20));
    assert_eq!(records.len(), 1);
}

#[test]
fn concurrent_commits_share_fsyncs() {
    let fs = SimFs::new();
    let (log, _, _) = open(&fs, config(1 << 20));
    let log = Arc::new(log);
    std::thread::scope(|scope| {
        for t in 0..8_u64 {
            let log = Arc::clone(&log);
            scope.spawn(move || {
                for n in 0..200 {
                    let at = log.append(n, &change(t * 1000 + n)).unwrap();
                    log.wait_durable_blocking(at.end);
                }
            });
        }
    });
    let stats = log.stats();
    let (records, fsyncs) = (stats.records.load(Ordering::Relaxed), stats.fsyncs.load(Ordering::Relaxed));
    assert_eq!(records, 1600);
    assert!(fsyncs < records, "group commit: {records} records in {fsyncs} fsyncs");
}

#[test]
fn a_lone_commit_is_led_by_its_session_and_one_nobody_waits_for_is_written_by_the_writer() {
    let fs = SimFs::new();
    let (log, _, _) = open(&fs, config(1 << 20));
    let runtime = multi_thread_runtime();
    for n in 1..=3 {
        let at = log.append(n, &change(n)).unwrap();
        runtime.block_on(log.wait(at.end, FlushMode::AtCommit));
        assert!(log.durable_lsn() >= at.end);
    }
    let stats = log.stats();
    assert_eq!(stats.groups_led.load(Ordering::Relaxed), 3, "each lone commit led its own group");
    assert_eq!(stats.fsyncs.load(Ordering::Relaxed), 3);

    // Appended, never waited for: the writer thread takes it after LEAD_GRACE.
    let at = log.append(4, &change(4)).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while log.durable_lsn() < at.end {
        assert!(std::time::Instant::now() < deadline, "an append nobody waits for is never written");
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(stats.groups_led.load(Ordering::Relaxed), 3);
    drop(log);
    let (_, records, _) = open(&fs, config(1 << 20));
    assert_eq!(records.len(), 4);
}

#[test]
fn after_a_group_of_several_commits_the_writer_thread_takes_the_next_ones() {
    let fs = SimFs::new();
    let (log, _, _) = open(&fs, config(1 << 20));
    let runtime = multi_thread_runtime();
    // Two commits pending together: the second's session leads them as one group.
    log.append(1, &change(1)).unwrap();
    let at = log.append(2, &change(2)).unwrap();
    let taken = std::time::Instant::now();
    runtime.block_on(log.wait(at.end, FlushMode::AtCommit));
    assert_eq!(log.stats().groups_led.load(Ordering::Relaxed), 1);
    // Within BUSY_HOLD of that group, a commit goes to the writer thread.
    let at = log.append(3, &change(3)).unwrap();
    let appended_within_hold = taken.elapsed() < crate::BUSY_HOLD;
    runtime.block_on(log.wait(at.end, FlushMode::AtCommit));
    assert!(log.durable_lsn() >= at.end);
    if appended_within_hold {
        assert_eq!(log.stats().groups_led.load(Ordering::Relaxed), 1, "commits arriving together are the writer's");
    }
}

#[test]
fn with_a_group_delay_the_writer_thread_writes_every_group() {
    let fs = SimFs::new();
    let mut cfg = config(1 << 20);
    cfg.group_delay = Duration::from_micros(200);
    let (log, _, _) = open(&fs, cfg);
    let runtime = multi_thread_runtime();
    let at = log.append(1, &change(1)).unwrap();
    runtime.block_on(log.wait(at.end, FlushMode::AtCommit));
    assert!(log.durable_lsn() >= at.end);
    assert_eq!(log.stats().groups_led.load(Ordering::Relaxed), 0);
}

#[test]
fn mode_0_and_2_sync_once_per_interval_and_mode_1_at_once() {
    let fs = SimFs::new();
    let mut cfg = config(1 << 20);
    cfg.sync_interval = Duration::from_millis(200);
    cfg.flush_mode = FlushMode::WriteAtCommit;
    let (log, _, _) = open(&fs, cfg);
    let at = log.append(1, &change(1)).unwrap();
    futures_wait(&log, at.end, FlushMode::WriteAtCommit);
    assert!(log.durable_lsn() < at.end, "mode 2 answers once written, before the sync");
    log.wait_durable_blocking(at.end);
    log.set_flush_mode(FlushMode::AtCommit);
    let at = log.append(2, &change(2)).unwrap();
    futures_wait(&log, at.end, FlushMode::AtCommit);
    assert!(log.durable_lsn() >= at.end);
}

/// A runtime like the server's, where a leading session's write runs under `block_in_place`.
fn multi_thread_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

/// Runs `Log::wait` to completion on a small runtime.
fn futures_wait(log: &Log, end: u64, mode: FlushMode) {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(log.wait(end, mode));
}

#[test]
fn a_failed_fsync_stops_the_writer_and_acknowledges_nothing_more() {
    let fs = SimFs::new();
    let failed = Arc::new(AtomicBool::new(false));
    let mut cfg = config(1 << 16);
    cfg.on_failure = Arc::new({
        let failed = Arc::clone(&failed);
        move |_| failed.store(true, Ordering::SeqCst)
    });
    let (log, _, _) = open(&fs, cfg);
    let first = log.append(1, &change(1)).unwrap();
    log.wait_durable_blocking(first.end);
    fs.fail_syncs_after(0);
    let second = log.append(2, &change(2)).unwrap();
    for _ in 0..1000 {
        if failed.load(Ordering::SeqCst) {
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(failed.load(Ordering::SeqCst), "the failure hook ran");
    std::thread::sleep(Duration::from_millis(20));
    assert!(log.durable_lsn() < second.end, "nothing after the failed sync is durable");
}

/// The crash test: several threads append in mode 1 and record what was acknowledged; the
/// disk crashes at a moment and in a way chosen by the seed; recovery must return every
/// acknowledged record, in order, and nothing that is not a prefix of what was appended.
#[test]
fn seeded_crashes_keep_every_acknowledged_record() {
    for seed in 0..60_u64 {
        crash_once(seed);
    }
}

fn crash_once(seed: u64) {
    let fs = SimFs::new();
    let segment_bytes = [128, 1024, 1 << 16][(seed % 3) as usize];
    let (log, _, _) = open(&fs, config(segment_bytes));
    let log = Arc::new(log);
    let acknowledged = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let crash_after = 20 + seed % 50;
    let threads: Vec<_> = (0..4_u64)
        .map(|t| {
            let (log, acknowledged, stop) = (Arc::clone(&log), Arc::clone(&acknowledged), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut n = 0;
                while !stop.load(Ordering::SeqCst) {
                    let id = t * 100_000 + n;
                    let at = log.append(id, &change(id)).unwrap();
                    log.wait_durable_blocking(at.end);
                    acknowledged.lock().push(id);
                    n += 1;
                }
            })
        })
        .collect();
    while (acknowledged.lock().len() as u64) < crash_after {
        std::thread::yield_now();
    }
    // What was acknowledged before the crash must survive it (read first: an acknowledgement
    // that lands after the crash image was taken promises nothing about it).
    let acknowledged_at_crash: Vec<u64> = acknowledged.lock().clone();
    // The crash: the disk as it is now, unsynced writes dropped, kept or torn.
    let (after, report) = fs.crash(seed);
    stop.store(true, Ordering::SeqCst);
    for t in threads {
        t.join().unwrap();
    }
    let (_, records, recovered) = open(&after, config(segment_bytes));
    let recovered_ids: Vec<u64> = records.iter().map(|r| r.commit_us).collect();
    for id in &acknowledged_at_crash {
        assert!(recovered_ids.contains(id), "seed {seed}: acknowledged {id} lost ({report:?}, {recovered:?})");
    }
    for (n, record) in records.iter().enumerate() {
        assert_eq!(record.seq, n as u64 + 1, "seed {seed}: recovered records are a gapless prefix");
        assert_eq!(record.changes, change(record.commit_us), "seed {seed}: a recovered record is whole");
    }
}

#[test]
fn recovery_starts_at_a_checkpoint_position() {
    let fs = SimFs::new();
    let appended = write_records(&fs, 1 << 16, 10);
    let mut seen = Vec::new();
    let (_, recovered) = Log::open::<std::io::Error>(
        Arc::new(fs.clone()),
        &dir(),
        config(1 << 16),
        Some(Start {
            lsn: appended[5].lsn,
            next_seq: 6,
            read_from: appended[5].lsn,
            definitions_from: appended[5].lsn,
            stream_commits: Vec::new(),
            check_history: false,
        }),
        |r| {
            seen.push(r.seq);
            Ok(())
        },
    )
    .unwrap();
    assert_eq!(seen, vec![6, 7, 8, 9, 10]);
    assert_eq!(recovered.next_seq, 11);
}

#[test]
fn a_durable_wait_forces_a_sync_in_mode_0() {
    let fs = SimFs::new();
    let mut cfg = config(1 << 16);
    cfg.flush_mode = FlushMode::EverySecond;
    cfg.sync_interval = Duration::from_secs(3600);
    let (log, _, _) = open(&fs, cfg);
    let at = log.append(1, &change(1)).unwrap();
    // A DDL statement waits in mode 1 whatever the log's mode: the writer must not wait an hour.
    futures_wait(&log, at.end, FlushMode::AtCommit);
    assert!(log.durable_lsn() >= at.end);
}

/// Recovery from `start`, collecting what it applies as (seq, first key byte of each change).
fn replay_from(fs: &SimFs, start: Option<Start>) -> (Vec<(u64, Vec<u8>)>, crate::Recovered) {
    let mut seen = Vec::new();
    let (_, recovered) = Log::open::<std::io::Error>(Arc::new(fs.clone()), &dir(), config(1 << 12), start, |r| {
        let keys = r.changes.iter().map(|c| if let Change::Insert { key, .. } = c { key[7] } else { panic!("only puts: {c:?}") }).collect();
        seen.push((r.seq, keys));
        Ok(())
    })
    .unwrap();
    (seen, recovered)
}

#[test]
fn a_streamed_transaction_replays_whole_at_its_commit_and_not_at_all_without_one() {
    let fs = SimFs::new();
    let (log, _, _) = open(&fs, config(1 << 12));
    // Stream A: two parts, a plain commit in between, then its commit record.
    let a1 = log.append_part(None, &change(1)).unwrap();
    let plain = log.append(7, &change(2)).unwrap();
    log.append_part(Some(a1.lsn), &[change(3), change(4)].concat()).unwrap();
    // Stream B rolls back; stream C never ends (the server stops first).
    let b1 = log.append_part(None, &change(5)).unwrap();
    log.append_abort(b1.lsn).unwrap();
    log.append_part(None, &change(6)).unwrap();
    let commit = log.append(8, &[vec![Change::StreamCommit { first: a1.lsn }], change(9)].concat()).unwrap();
    assert_eq!((a1.seq, plain.seq, commit.seq), (0, 1, 2), "parts take no sequence number");
    log.append_part(None, &change(10)).unwrap();
    log.wait_durable_blocking(log.next_position().0);
    drop(log);

    let (seen, recovered) = replay_from(&fs, None);
    assert_eq!(seen, vec![(1, vec![2]), (2, vec![1]), (2, vec![3, 4]), (2, vec![9])], "A's parts come at its commit, B and C never");
    assert_eq!((recovered.next_seq, recovered.streams_discarded), (3, 2));

    // From a checkpoint taken after the plain commit while A was streaming: A's first part is
    // before the checkpoint, so reading starts there, and the plain commit is not applied again.
    let (seen, _) = replay_from(
        &fs,
        Some(Start { lsn: plain.end, next_seq: 2, read_from: a1.lsn, definitions_from: plain.end, stream_commits: Vec::new(), check_history: false }),
    );
    assert_eq!(seen, vec![(2, vec![1]), (2, vec![3, 4]), (2, vec![9])]);
    // From a checkpoint after A's commit: A is in the checkpoint, nothing of it is applied.
    let (seen, _) = replay_from(
        &fs,
        Some(Start { lsn: commit.end, next_seq: 3, read_from: commit.end, definitions_from: commit.end, stream_commits: Vec::new(), check_history: false }),
    );
    assert!(seen.is_empty(), "{seen:?}");
}

#[test]
fn a_stream_whose_first_part_was_not_read_stops_recovery() {
    let fs = SimFs::new();
    let (log, _, _) = open(&fs, config(1 << 12));
    let first = log.append_part(None, &change(1)).unwrap();
    let second = log.append_part(Some(first.lsn), &change(2)).unwrap();
    log.append(3, &[Change::StreamCommit { first: first.lsn }]).unwrap();
    log.wait_durable_blocking(log.next_position().0);
    drop(log);
    let opened = Log::open::<std::io::Error>(
        Arc::new(fs.clone()),
        &dir(),
        config(1 << 12),
        Some(Start { lsn: second.lsn, next_seq: 1, read_from: second.lsn, definitions_from: second.lsn, stream_commits: Vec::new(), check_history: false }),
        |_| Ok(()),
    );
    let error = opened.err().expect("a stream cut in half must not replay");
    assert!(error.to_string().contains("was not read"), "{error}");
}

#[test]
fn a_torn_commit_record_leaves_none_of_its_stream() {
    let fs = SimFs::new();
    let (log, _, _) = open(&fs, config(1 << 12));
    let first = log.append_part(None, &change(1)).unwrap();
    let commit = log.append(2, &[vec![Change::StreamCommit { first: first.lsn }], change(2)].concat()).unwrap();
    log.wait_durable_blocking(commit.end);
    drop(log);
    corrupt(&fs, 1 << 12, commit.end - 1, &[0xff]);
    let (seen, recovered) = replay_from(&fs, None);
    assert!(seen.is_empty(), "{seen:?}");
    assert_eq!(recovered.end, LogEnd::Cut(CutReason::BadChecksum));
    assert_eq!(recovered.streams_discarded, 1);
}

/// The first byte of each change's key (the `n` of [`change`]), per transaction.
fn keys_of(tx: &crate::Transaction) -> Vec<u8> {
    tx.changes
        .iter()
        .map(|c| match c {
            Change::Insert { key, .. } => key[7],
            other => panic!("unexpected change {other:?}"),
        })
        .collect()
}

#[test]
fn a_tail_follows_transactions_in_commit_order_from_any_record_boundary() {
    let fs = SimFs::new();
    let (log, _, _) = open(&fs, config(1 << 12));
    let a1 = log.append_part(None, &change(1)).unwrap();
    let plain = log.append(7, &change(2)).unwrap();
    log.append_part(Some(a1.lsn), &[change(3), change(4)].concat()).unwrap();
    let b1 = log.append_part(None, &change(5)).unwrap();
    log.append_abort(b1.lsn).unwrap();
    let commit = log.append(8, &[vec![Change::StreamCommit { first: a1.lsn }], change(9)].concat()).unwrap();
    // Records spread over several small segments, so the tail meets segments it has not seen.
    let later: Vec<_> = (20..60).map(|n| log.append(n, &change(n)).unwrap()).collect();
    let mut tail = log.tail();
    log.wait_durable_blocking(later.last().unwrap().end);
    let durable = tail.durable_lsn();
    assert_eq!(durable, later.last().unwrap().end);

    let mut from_start = crate::TransactionCursor::new(0);
    let first = from_start.next(&mut tail, durable).unwrap().unwrap();
    assert_eq!((first.lsn, first.end, first.seq, first.commit_us, keys_of(&first)), (plain.lsn, plain.end, 1, 7, vec![2]));
    let streamed = from_start.next(&mut tail, durable).unwrap().unwrap();
    assert_eq!((streamed.lsn, streamed.seq, keys_of(&streamed)), (commit.lsn, 2, vec![1, 3, 4, 9]), "A's parts, then its commit's changes; B not at all");
    let rest: Vec<u64> = std::iter::from_fn(|| from_start.next(&mut tail, durable).unwrap()).map(|t| t.seq).collect();
    assert_eq!(rest, (3..43).collect::<Vec<_>>());
    assert_eq!(from_start.position(), durable);
    assert!(from_start.next(&mut tail, durable).unwrap().is_none(), "nothing past the durable end");

    // Starting after A's first part: its parts before the start are found by scanning.
    let mut midway = crate::TransactionCursor::new(plain.end);
    let streamed = midway.next(&mut tail, durable).unwrap().unwrap();
    assert_eq!(keys_of(&streamed), vec![1, 3, 4, 9]);
    // A bound below a commit record leaves it for later.
    let mut bounded = crate::TransactionCursor::new(commit.end);
    assert!(bounded.next(&mut tail, later[0].lsn).unwrap().is_none());
    assert_eq!(bounded.next(&mut tail, durable).unwrap().unwrap().seq, 3);
}

#[test]
fn a_record_boundary_is_found_from_any_position() {
    let fs = SimFs::new();
    let (log, _, _) = open(&fs, config(1 << 12));
    let appended: Vec<_> = (1..80).map(|n| log.append(n, &change(n)).unwrap()).collect();
    log.wait_durable_blocking(appended.last().unwrap().end);
    let mut tail = log.tail();
    let durable = tail.durable_lsn();
    for a in &appended {
        assert_eq!(tail.first_record_from(a.lsn, durable).unwrap(), Some(a.lsn));
        // From inside a record, the next one.
        let next = appended.iter().find(|b| b.lsn > a.lsn).map(|b| b.lsn);
        assert_eq!(tail.first_record_from(a.lsn + 1, durable).unwrap(), next, "from inside the record at {}", a.lsn);
    }
    // Each segment's first record, found though records cross segment boundaries.
    for (start, _) in log.segment_bounds() {
        let first = appended.iter().find(|b| b.lsn >= start).map(|b| b.lsn);
        assert_eq!(tail.first_record_from(start, durable).unwrap(), first);
    }
    assert_eq!(tail.first_record_from(appended[5].lsn + 1, appended[6].lsn).unwrap(), None, "none before the bound");
}

#[test]
fn a_streamed_transaction_hands_over_each_row_once_as_its_last_change() {
    let fs = SimFs::new();
    let (log, _, _) = open(&fs, config(1 << 12));
    let row = |k: u8, v: u8| vec![Change::Insert { db: "db".into(), table: "t".into(), key: vec![k], row: vec![v] }];
    let update = |k: u8, b: u8, v: u8| vec![Change::Update { db: "db".into(), table: "t".into(), key: vec![k], before: Some(vec![b]), row: vec![v] }];
    let delete = |k: u8, before: Option<Vec<u8>>| vec![Change::Delete { db: "db".into(), table: "t".into(), key: vec![k], before }];
    // Row 1 inserted, then changed (logged again as an insert); row 2 updated twice; row 3
    // inserted then deleted (a DELETE without image); row 4 deleted.
    let first = log.append_part(None, &[row(1, 10), update(2, 20, 21), row(3, 30)].concat()).unwrap();
    log.append_part(Some(first.lsn), &[row(1, 11), update(2, 20, 22)].concat()).unwrap();
    let commit = log.append(9, &[vec![Change::StreamCommit { first: first.lsn }], delete(3, None), delete(4, Some(vec![40]))].concat()).unwrap();
    log.wait_durable_blocking(commit.end);
    let mut tail = log.tail();
    let tx = crate::TransactionCursor::new(0).next(&mut tail, commit.end).unwrap().unwrap();
    assert_eq!(tx.changes, [row(1, 11), update(2, 20, 22), delete(4, Some(vec![40]))].concat());

    // Regression (found by the crash simulator): a row inserted and deleted again after the
    // last part, both in the commit record's remainder, is logged as a DELETE without image
    // and nothing before it. With no row repeated, the stream was handed over as it was, and
    // the binary log stopped at that DELETE (no image to send) for good.
    let first = log.append_part(None, &row(5, 50)).unwrap();
    let commit = log.append(9, &[vec![Change::StreamCommit { first: first.lsn }], delete(6, None)].concat()).unwrap();
    log.wait_durable_blocking(commit.end);
    let tx = crate::TransactionCursor::new(first.lsn).next(&mut tail, commit.end).unwrap().unwrap();
    assert_eq!(tx.changes, row(5, 50));
}

#[test]
fn segments_a_reader_retains_are_not_removed_until_it_lets_go() {
    let fs = SimFs::new();
    let (log, _, _) = open(&fs, config(1 << 12));
    let appended: Vec<_> = (1..200).map(|n| log.append(n, &change(n)).unwrap()).collect();
    log.wait_durable_blocking(appended.last().unwrap().end);
    let segments = log.segment_bounds();
    assert!(segments.len() >= 4, "{segments:?}");
    let tail = log.tail();
    let claim = tail.retain(segments[1].0 + 1);
    assert_eq!(log.remove_segments_before(appended.last().unwrap().end).unwrap(), 1, "only the segment before the claim goes");
    assert_eq!(log.segment_bounds()[0], segments[1]);
    claim.set(segments[2].0);
    assert_eq!(log.remove_segments_before(appended.last().unwrap().end).unwrap(), 1);
    drop(claim);
    assert!(log.remove_segments_before(appended.last().unwrap().end).unwrap() >= 1, "released, the rest a checkpoint covers goes");
}

#[test]
fn a_replicated_transaction_takes_no_sequence_number_of_this_server() {
    let fs = SimFs::new();
    let (log, _, _) = open(&fs, config(1 << 16));
    let local = log.append(1, &change(1)).unwrap();
    let mut body = crate::Body::of(&change(2)).unwrap();
    body.set_replicated(true);
    let replicated = log.append_body(2, &body).unwrap();
    let next = log.append(3, &change(3)).unwrap();
    assert_eq!((local.seq, replicated.seq, next.seq), (1, 0, 2));
    log.wait_durable_blocking(next.end);
    drop(log);
    let (log, records, recovered) = open(&fs, config(1 << 16));
    assert_eq!(records.iter().map(|r| r.seq).collect::<Vec<_>>(), vec![1, 0, 2], "the replicated one is replayed, numbered 0");
    assert_eq!(recovered.next_seq, 3);
    assert_eq!(log.append(4, &change(4)).unwrap().seq, 3);
}

#[test]
fn a_restart_keeps_the_covered_segments_its_definitions_still_describe() {
    // About 60 records per 4 KiB segment: several segments.
    let fs = SimFs::new();
    let appended = write_records(&fs, 1 << 12, 400);
    let segments = segment_files(&fs);
    assert!(segments.len() >= 4, "{segments:?}");
    let checkpoint = appended[350].lsn;
    let reopen = |definitions_from: u64| {
        let fs = fs.clone();
        let start = Start { lsn: checkpoint, next_seq: 351, read_from: checkpoint, definitions_from, stream_commits: Vec::new(), check_history: false };
        let (log, _) = Log::open::<std::io::Error>(Arc::new(fs.clone()), &dir(), config(1 << 12), Some(start), |_| Ok(())).unwrap();
        drop(log);
        segment_files(&fs)
    };
    // No DDL before the checkpoint: every covered segment stays.
    assert_eq!(reopen(0), segments);
    // A DDL record at record 100: the segments holding anything before its end go, the ones
    // after it stay.
    let ddl_end = appended[100].end;
    let kept = reopen(ddl_end);
    let first_kept: u64 = kept[0].trim_end_matches(crate::format::SEGMENT_SUFFIX).parse().unwrap();
    assert!(first_kept >= ddl_end && first_kept < ddl_end + (1 << 12), "first kept {first_kept}, DDL ends at {ddl_end}");
    assert!(kept.len() < segments.len());
    // Definitions from the checkpoint itself: as before, everything it covers goes.
    let last = reopen(checkpoint);
    assert!(last.iter().all(|name| name.trim_end_matches(crate::format::SEGMENT_SUFFIX).parse::<u64>().unwrap() + (1 << 12) > checkpoint), "{last:?}");
}

/// A checkpoint at `lsn` covering the records before it (`next_seq` the sequence number of
/// the record at `lsn`), with no stream open.
fn checkpoint_at(lsn: u64, next_seq: u64) -> Start {
    Start { lsn, next_seq, read_from: lsn, definitions_from: 0, stream_commits: Vec::new(), check_history: false }
}

/// Regression test for the data loss of a checkpoint ahead of the log: a checkpoint of an
/// older build could hold a position the log never reached on disk (flush mode 0, a kill
/// -9). Start-up then resumed appending at the log's end, below the checkpoint's position:
/// new commits got LSNs and sequence numbers the checkpoint already covered, recovery
/// skipped them (acknowledged commits lost), and GTIDs were handed out twice. The log now
/// resumes at the checkpoint's position, in a new segment, sets the old segments aside, and
/// numbers on from the checkpoint.
#[test]
fn a_log_that_ends_before_the_checkpoint_resumes_at_its_position() {
    let fs = SimFs::new();
    let appended = write_records(&fs, 1 << 12, 10);
    let beyond = appended.last().unwrap().end + 700;
    // A stream was open from the sixth record on when the checkpoint was taken: recovery
    // reads from there, and finds the log ending below the checkpoint.
    let start = Start { read_from: appended[5].lsn, ..checkpoint_at(beyond, 40) };
    let (log, recovered) = Log::open::<std::io::Error>(Arc::new(fs.clone()), &dir(), config(1 << 12), Some(start.clone()), |_| Ok(())).unwrap();
    let lost = recovered.lost.clone().expect("the log ended below the checkpoint");
    assert_eq!((lost.log_end, lost.resumed_at, recovered.end_lsn), (appended.last().unwrap().end, beyond, beyond));
    assert!(lost.files.iter().all(|f| f.file_name().unwrap().to_string_lossy().starts_with("lost-")), "{lost:?}");
    assert_eq!(log.next_position(), (beyond, 40), "LSNs and sequence numbers go on from the checkpoint");
    let next = log.append(1, &change(1)).unwrap();
    log.wait_durable_blocking(next.end);
    drop(log);
    let lost_name = format!("lost-{beyond:020}-{}", segment_name(0));
    assert_eq!(segment_files(&fs), vec![segment_name(beyond), lost_name], "the old segment is set aside, out of the stream");
    let mut seen = Vec::new();
    let (log, _) = Log::open::<std::io::Error>(Arc::new(fs.clone()), &dir(), config(1 << 12), Some(start), |r| {
        seen.push(r.seq);
        Ok(())
    })
    .unwrap();
    assert_eq!(seen, vec![40], "the commit after the repair is recovered");
    assert_eq!(log.next_position().1, 41);
    drop(log);

    // With no stream open, recovery reads from the checkpoint's position and finds nothing
    // there: the log goes on from it, and the hole below is found when the checkpoint is
    // one of a build that could run ahead of the log. The binary log begins at it.
    let fs = SimFs::new();
    let appended = write_records(&fs, 1 << 12, 10);
    let beyond = appended.last().unwrap().end + 700;
    let start = Start { check_history: true, ..checkpoint_at(beyond, 40) };
    let (log, recovered) = Log::open::<std::io::Error>(Arc::new(fs.clone()), &dir(), config(1 << 12), Some(start), |_| Ok(())).unwrap();
    assert_eq!((recovered.lost, log.next_position(), log.binlog_from()), (None, (beyond, 40), beyond));
}

/// The binary log reads a streamed transaction's parts back at its commit record, so no
/// segment holding a part may go while the commit record stays: a checkpoint once removed
/// them, and the binary log could no longer be read past the transaction.
#[test]
fn segments_with_the_parts_of_a_committed_stream_stay_with_its_commit_record() {
    let fs = SimFs::new();
    let segment_bytes = 1 << 12;
    let (log, _, _) = open(&fs, config(segment_bytes));
    let first = log.append_part(None, &change(1)).unwrap();
    let mut last = first;
    while last.end < 3 * segment_bytes {
        last = log.append(2, &change(2)).unwrap();
    }
    let commit = log.append_stream_commit(3, first.lsn, &change(3)).unwrap();
    while log.next_position().0 < 5 * segment_bytes + 100 {
        log.append(4, &change(4)).unwrap();
    }
    log.wait_durable_blocking(log.next_position().0);
    assert!(commit.lsn / segment_bytes < 4, "the commit record lies in a segment the removal keeps");
    // Segments before the commit record's go, but not those of its parts.
    let bound = commit.lsn + 1;
    log.remove_segments_before(bound).unwrap();
    assert_eq!(log.segment_bounds().first().map(|&(s, _)| s), Some(0), "the first part's segment stays");
    assert_eq!(log.stream_commits_before(bound), vec![(commit.lsn, first.lsn)]);
    // With no stream commit to keep, the same removal takes the covered segments.
    let fs = SimFs::new();
    let (log, _, _) = open(&fs, config(segment_bytes));
    while log.next_position().0 < 5 * segment_bytes + 100 {
        log.append(4, &change(4)).unwrap();
    }
    log.wait_durable_blocking(log.next_position().0);
    log.remove_segments_before(bound).unwrap();
    assert_eq!(log.segment_bounds().first().map(|&(s, _)| s), Some(bound - bound % segment_bytes));
}

/// A checkpoint of an older build may sit above a hole (writes lost below its position): the
/// binary log then begins at the checkpoint instead of stopping at the hole for good.
#[test]
fn a_hole_below_an_old_checkpoint_moves_the_start_of_the_binary_log() {
    let fs = SimFs::new();
    let appended = write_records(&fs, 1 << 16, 10);
    let position = appended[8].lsn;
    let check = |check_history: bool| {
        let start = Start { check_history, ..checkpoint_at(position, 9) };
        let (log, _) = Log::open::<std::io::Error>(Arc::new(fs.clone()), &dir(), config(1 << 16), Some(start), |_| Ok(())).unwrap();
        log.binlog_from()
    };
    assert_eq!(check(true), 0, "an intact log keeps its history");
    corrupt(&fs, 1 << 16, appended[6].lsn, &vec![0; usize::try_from(appended[7].end - appended[6].lsn).unwrap()]);
    assert_eq!(check(false), 0, "a checkpoint of this build is trusted");
    assert_eq!(check(true), position, "the binary log begins at the old checkpoint");
}

/// Reads records from `lsn` with `read` until the log ends: the records and why it ended.
fn read_through(mut lsn: u64, mut read: impl FnMut(u64) -> Result<Record, LogEnd>) -> (Vec<Record>, LogEnd) {
    let mut records = Vec::new();
    loop {
        match read(lsn) {
            Ok(record) => {
                lsn += record.encoded_len() as u64;
                records.push(record);
            }
            Err(end) => return (records, end),
        }
    }
}

/// The fast path against the plain one: reading the log front to back through a read-ahead
/// window (`reader::ReadAhead`, what recovery reads with) finds the records and the end that
/// reading each record where it lies finds, over records of many sizes (one larger than the
/// window) crossing segment and window boundaries, with a clean end and with a damaged tail.
#[test]
fn reading_through_the_read_ahead_window_finds_what_plain_reads_find() {
    use crate::reader::{READ_AHEAD_BYTES, ReadAhead, read_one};
    let segment_bytes = 1 << 16;
    let fs = SimFs::new();
    let (log, _, _) = open(&fs, config(segment_bytes));
    let appended: Vec<_> = (1..=300_u64)
        .map(|n| {
            let len = if n == 150 { READ_AHEAD_BYTES + 5_000 } else { usize::try_from(n * 7_919 % 20_000).unwrap() };
            let row = vec![u8::try_from(n % 251).unwrap(); len];
            log.append(n, &[Change::Insert { db: "db".into(), table: "t".into(), key: n.to_be_bytes().to_vec(), row }]).unwrap()
        })
        .collect();
    log.wait_durable_blocking(appended.last().unwrap().end);
    let first = appended[0].lsn;
    let both = |log: &Log| {
        let files = log.shared.segments.lock().files();
        let plain = read_through(first, |lsn| read_one(&files, lsn).unwrap());
        let mut ahead = ReadAhead::new(&files);
        let fast = read_through(first, |lsn| read_one(&mut ahead, lsn).unwrap());
        (plain, fast)
    };
    let (plain, fast) = both(&log);
    assert_eq!(plain.0.len(), appended.len());
    assert_eq!(plain.1, LogEnd::Clean);
    assert_eq!(fast, plain);
    // A damaged record past the middle: both stop there, for the same reason.
    let damaged = appended[220].lsn + HEADER_BYTES as u64 + 3;
    corrupt(&fs, segment_bytes, damaged, &[0xAB; 4]);
    let (plain, fast) = both(&log);
    assert_eq!(plain.0.len(), 220);
    assert_eq!(fast, plain);
}
