//! Semi-synchronous replication, the source's side (`docs/replication.md`): a commit's reply
//! waits, after the commit is durable, until `rpl_semi_sync_source_wait_for_replica_count`
//! semi-sync replicas have acknowledged receiving it, or until `rpl_semi_sync_source_timeout`
//! passes; then semi-sync switches off (logged, and counted in `Rpl_semi_sync_source_no_times`)
//! and commits answer without waiting until a replica acknowledges everything committed
//! meanwhile, when it switches on again (logged too).
//!
//! A replica asks for semi-sync by setting `@rpl_semi_sync_slave` (or `@rpl_semi_sync_replica`)
//! to 1 before its dump; its dump ([`AckSlot`]) then marks the last event of the transactions
//! it sends as needing an acknowledgement, and each acknowledgement says the replica has the
//! log up to the LSN that event ended. Waits are by LSN, so one acknowledgement answers every
//! commit before it.
//!
//! `rpl_semi_sync_source_wait_point`: AFTER_SYNC (the default) makes readers wait too: a
//! statement that read rows a commit may have written answers only once that commit is
//! acknowledged (`AckWait::Read`), so no client sees what a failover could lose. AFTER_COMMIT
//! makes only the committing session wait.
//!
//! Where it sits: in the replication layer; the server attaches it to the engine
//! (`Engine::commit_acks`), whose sessions call [`CommitAcks::wait`]. Bounds: a wait lasts at
//! most the timeout; each dump holds at most [`OUTSTANDING_MAX`] unacknowledged requests.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use quill_log::Lsn;
use quill_sql::Engine;
use quill_sql::commit_acks::{AckWait, CommitAcks};
use tokio::sync::watch;

/// The most acknowledgement requests one dump keeps waiting for; past it the oldest is
/// forgotten (a later acknowledgement answers for it anyway, as waits are by LSN).
pub const OUTSTANDING_MAX: usize = 4096;

#[derive(Default)]
struct State {
    /// Each connected semi-sync replica's acknowledged LSN, by dump.
    replicas: HashMap<u64, Lsn>,
    next_id: u64,
    /// `Rpl_semi_sync_source_status`: commits wait for acknowledgements.
    on: bool,
    /// While off: the end of the newest commit that did not wait. A replica that acknowledges
    /// it has caught up, and semi-sync switches on.
    caught_up_at: Lsn,
    yes_tx: u64,
    no_tx: u64,
    no_times: u64,
    tx_waits: u64,
    tx_wait_us: u64,
    wait_sessions: u64,
}

impl State {
    /// How many connected replicas have acknowledged the log up to `end`.
    fn acked_by(&self, end: Lsn) -> usize {
        self.replicas.values().filter(|&&a| a >= end).count()
    }
}

/// The settings, copied from the global variables at start and at each `SET GLOBAL` of one
/// (`CommitAcks::reload`), so that a commit or a read asks no lock for them.
#[derive(Default)]
struct Settings {
    enabled: AtomicBool,
    after_commit: AtomicBool,
    wait_no_replica: AtomicBool,
    /// `rpl_semi_sync_source_wait_for_replica_count`.
    wait_for: AtomicU64,
    timeout_ms: AtomicU64,
}

/// The source's semi-sync state: the replicas' acknowledgements and the counters.
pub struct SemiSync {
    engine: Weak<Engine>,
    settings: Settings,
    state: Mutex<State>,
    /// Bumped at each acknowledgement, for the commits waiting on one.
    acked: watch::Sender<u64>,
}

impl SemiSync {
    /// Attaches semi-sync to `engine` (whose sessions then wait through it).
    pub fn attach(engine: &Arc<Engine>) -> Arc<SemiSync> {
        let semi = Arc::new(SemiSync {
            engine: Arc::downgrade(engine),
            settings: Settings::default(),
            state: Mutex::new(State { on: true, ..State::default() }),
            acked: watch::channel(0).0,
        });
        semi.reload();
        let _ = engine.commit_acks.set(Arc::clone(&semi) as Arc<dyn CommitAcks>);
        semi
    }

    fn global(&self, name: &str) -> String {
        self.engine.upgrade().and_then(|e| e.global(name)).unwrap_or_default()
    }

    /// `rpl_semi_sync_source_enabled`.
    #[must_use]
    pub fn enabled(&self) -> bool {
        self.settings.enabled.load(Ordering::Relaxed)
    }

    fn need(&self) -> usize {
        usize::try_from(self.settings.wait_for.load(Ordering::Relaxed)).unwrap_or(1).max(1)
    }

    /// A semi-sync replica's dump begins: it acknowledges through the slot it gets.
    #[must_use]
    pub fn register(self: &Arc<SemiSync>, server_id: u32) -> AckSlot {
        let mut state = self.state.lock();
        let id = state.next_id;
        state.next_id += 1;
        state.replicas.insert(id, 0);
        tracing::info!(server_id, "semi-sync: a replica connected");
        AckSlot { semi: Arc::clone(self), id, outstanding: std::collections::VecDeque::new() }
    }

    fn acknowledged(&self, id: u64, lsn: Lsn) {
        let mut state = self.state.lock();
        let Some(acked) = state.replicas.get_mut(&id) else { return };
        *acked = (*acked).max(lsn);
        if !state.on && lsn >= state.caught_up_at && self.enabled() {
            state.on = true;
            tracing::info!(lsn, "semi-sync: a replica caught up (acknowledged LSN {lsn}); semi-sync replication switched ON");
        }
        drop(state);
        self.acked.send_modify(|n| *n += 1);
    }

    fn enough(&self, end: Lsn, need: usize) -> bool {
        self.state.lock().acked_by(end) >= need
    }

    fn switch_off(&self, end: Lsn, why: &str) {
        let mut state = self.state.lock();
        state.caught_up_at = state.caught_up_at.max(end);
        if state.on {
            state.on = false;
            state.no_times += 1;
            tracing::warn!(lsn = end, "semi-sync: {why}; semi-sync replication switched OFF (commits no longer wait for replicas)");
            drop(state);
            // Every session still waiting stops waiting.
            self.acked.send_modify(|n| *n += 1);
        }
    }

    async fn wait_for(&self, end: Lsn, why: AckWait) {
        if !self.enabled() {
            return;
        }
        if why == AckWait::Read && self.settings.after_commit.load(Ordering::Relaxed) {
            return;
        }
        let commit = why == AckWait::Commit;
        let need = self.need();
        {
            let mut state = self.state.lock();
            if !state.on {
                state.caught_up_at = state.caught_up_at.max(end);
                if commit {
                    state.no_tx += 1;
                }
                return;
            }
            if state.replicas.len() < need && !self.settings.wait_no_replica.load(Ordering::Relaxed) {
                drop(state);
                self.switch_off(end, "fewer semi-sync replicas are connected than rpl_semi_sync_source_wait_for_replica_count");
                if commit {
                    self.state.lock().no_tx += 1;
                }
                return;
            }
        }
        let timeout = Duration::from_millis(self.settings.timeout_ms.load(Ordering::Relaxed));
        let started = Instant::now();
        let mut acked = self.acked.subscribe();
        self.state.lock().wait_sessions += 1;
        let waited = tokio::time::timeout(timeout, async {
            loop {
                // Enough acknowledgements, or semi-sync switched off meanwhile (another
                // session's wait timed out): waiting is over.
                if self.enough(end, need) || !self.state.lock().on {
                    return;
                }
                if acked.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
        })
        .await;
        let mut state = self.state.lock();
        state.wait_sessions -= 1;
        match waited {
            Ok(()) if !state.on => {
                if commit {
                    state.no_tx += 1;
                }
            }
            Ok(()) => {
                if commit {
                    state.yes_tx += 1;
                    state.tx_waits += 1;
                    state.tx_wait_us += u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
                }
            }
            Err(_) => {
                if commit {
                    state.no_tx += 1;
                }
                drop(state);
                self.switch_off(end, &format!("no acknowledgement from {need} replica(s) within {} ms", timeout.as_millis()));
            }
        }
    }
}

impl CommitAcks for SemiSync {
    fn wait(&self, end: Lsn, why: AckWait) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(self.wait_for(end, why))
    }

    fn read_must_wait(&self, end: Lsn) -> bool {
        if !self.enabled() || self.settings.after_commit.load(Ordering::Relaxed) {
            return false;
        }
        let state = self.state.lock();
        state.on && state.acked_by(end) < self.need()
    }

    fn reload(&self) {
        let s = &self.settings;
        s.enabled.store(self.global("rpl_semi_sync_source_enabled") == "ON", Ordering::Relaxed);
        s.after_commit.store(self.global("rpl_semi_sync_source_wait_point") == "AFTER_COMMIT", Ordering::Relaxed);
        s.wait_no_replica.store(self.global("rpl_semi_sync_source_wait_no_replica") != "OFF", Ordering::Relaxed);
        s.wait_for.store(self.global("rpl_semi_sync_source_wait_for_replica_count").parse().unwrap_or(1), Ordering::Relaxed);
        s.timeout_ms.store(self.global("rpl_semi_sync_source_timeout").parse().unwrap_or(10_000), Ordering::Relaxed);
    }

    fn status(&self) -> Vec<(&'static str, String)> {
        let s = self.state.lock();
        let on = if s.on && self.enabled() { "ON" } else { "OFF" };
        let avg = s.tx_wait_us.checked_div(s.tx_waits).unwrap_or(0);
        // Each under MySQL 8's name and the 5.7 (and MariaDB) one.
        let values = [
            (["Rpl_semi_sync_source_clients", "Rpl_semi_sync_master_clients"], s.replicas.len().to_string()),
            (["Rpl_semi_sync_source_no_times", "Rpl_semi_sync_master_no_times"], s.no_times.to_string()),
            (["Rpl_semi_sync_source_no_tx", "Rpl_semi_sync_master_no_tx"], s.no_tx.to_string()),
            (["Rpl_semi_sync_source_status", "Rpl_semi_sync_master_status"], on.to_owned()),
            (["Rpl_semi_sync_source_tx_avg_wait_time", "Rpl_semi_sync_master_tx_avg_wait_time"], avg.to_string()),
            (["Rpl_semi_sync_source_tx_wait_time", "Rpl_semi_sync_master_tx_wait_time"], s.tx_wait_us.to_string()),
            (["Rpl_semi_sync_source_tx_waits", "Rpl_semi_sync_master_tx_waits"], s.tx_waits.to_string()),
            (["Rpl_semi_sync_source_wait_sessions", "Rpl_semi_sync_master_wait_sessions"], s.wait_sessions.to_string()),
            (["Rpl_semi_sync_source_yes_tx", "Rpl_semi_sync_master_yes_tx"], s.yes_tx.to_string()),
        ];
        values.into_iter().flat_map(|(names, value)| names.map(|n| (n, value.clone()))).collect()
    }
}

/// One semi-sync replica's dump: the acknowledgements it asked for and has not had yet.
/// Dropping it (the dump ends) takes the replica out of the count.
pub struct AckSlot {
    semi: Arc<SemiSync>,
    id: u64,
    /// `(file, end position, LSN)` of each event sent with the acknowledgement flag.
    outstanding: std::collections::VecDeque<(String, u64, Lsn)>,
}

impl AckSlot {
    /// Whether events sent now should ask for an acknowledgement.
    #[must_use]
    pub fn requesting(&self) -> bool {
        self.semi.enabled()
    }

    /// An event ending at `position` of `file` was sent asking for an acknowledgement; the
    /// replica that has it has the log up to `lsn`.
    pub fn requested(&mut self, file: String, position: u64, lsn: Lsn) {
        if self.outstanding.len() >= OUTSTANDING_MAX {
            self.outstanding.pop_front();
        }
        self.outstanding.push_back((file, position, lsn));
    }

    /// The replica acknowledged `position` of `file`: it has every event sent before, so the
    /// log up to that request's LSN. An acknowledgement that matches no request is ignored.
    pub fn acknowledge(&mut self, file: &str, position: u64) {
        let Some(at) = self.outstanding.iter().position(|(f, p, _)| f == file && *p == position) else {
            tracing::warn!(file, position, "semi-sync: an acknowledgement for an event not awaiting one");
            return;
        };
        let lsn = self.outstanding[at].2;
        self.outstanding.drain(..=at);
        self.semi.acknowledged(self.id, lsn);
    }

    /// Whether every request has been acknowledged.
    #[must_use]
    pub fn idle(&self) -> bool {
        self.outstanding.is_empty()
    }

    /// The replica has acknowledged everything sent, and the dump read on to `lsn` finding
    /// nothing to send (transactions this server applied from its own source): it has the
    /// log to there.
    pub fn caught_up(&mut self, lsn: Lsn) {
        if self.idle() {
            self.semi.acknowledged(self.id, lsn);
        }
    }
}

impl Drop for AckSlot {
    fn drop(&mut self) {
        self.semi.state.lock().replicas.remove(&self.id);
        tracing::info!("semi-sync: a replica disconnected");
    }
}

/// The two bytes that precede each event sent to a semi-sync replica: a magic byte and the
/// flags (bit 0: acknowledge this event).
pub const HEADER_MAGIC: u8 = 0xef;
pub const FLAG_ACK: u8 = 0x01;

/// Writes the acknowledgement a semi-sync replica sends for the event that ended at `position`
/// of `file`, as a packet of its own (sequence id 0, whatever the dump's sequence has reached).
pub fn write_ack(writer: &mut quill_protocol::PacketWriter, file: &str, position: u64) {
    writer.write_packet_with(|out| {
        out.push(HEADER_MAGIC);
        out.extend_from_slice(&position.to_le_bytes());
        out.extend_from_slice(file.as_bytes());
    });
}

/// An acknowledgement packet's payload: the magic byte, the event's end position (8 bytes,
/// little-endian) and its file name. `None` for anything else.
#[must_use]
pub fn parse_ack(payload: &[u8]) -> Option<(String, u64)> {
    let mut r = quill_protocol::codec::Reader::new(payload);
    if r.u8("semi-sync magic").ok()? != HEADER_MAGIC {
        return None;
    }
    let position = r.u64_le("acknowledged position").ok()?;
    let name = r.rest();
    // MariaDB's replica sends the name bare, MySQL's may end it with a NUL.
    let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
    Some((String::from_utf8_lossy(name).into_owned(), position))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_acknowledgement_names_its_position_and_file() {
        let mut p = vec![HEADER_MAGIC];
        p.extend_from_slice(&1234_u64.to_le_bytes());
        p.extend_from_slice(b"quill-bin.000002");
        assert_eq!(parse_ack(&p), Some(("quill-bin.000002".into(), 1234)));
        p.push(0);
        assert_eq!(parse_ack(&p), Some(("quill-bin.000002".into(), 1234)));
        assert_eq!(parse_ack(&[0xef, 1, 2]), None);
        let mut w = quill_protocol::PacketWriter::new(0);
        write_ack(&mut w, "quill-bin.000003", 99);
        assert_eq!(&w.buf[..4], &[25, 0, 0, 0]);
        assert_eq!(parse_ack(&w.buf[4..]), Some(("quill-bin.000003".into(), 99)));
        assert_eq!(parse_ack(b"\x03SELECT 1"), None);
    }
}
