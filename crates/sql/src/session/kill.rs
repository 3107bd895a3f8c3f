//! KILL [CONNECTION | QUERY] and what a killed session sees: the interrupt flag its
//! statement checks at each row and wait (`interrupt`), cleared when its next command starts.

use std::sync::atomic::Ordering;
use std::time::Instant;

use crate::error::{Result, SqlError, codes};

use super::{Outcome, Session};

impl Session {
    pub(super) fn kill(&mut self, words: &[&str]) -> Result<Outcome> {
        let id_word = words.last().copied().unwrap_or_default().trim_end_matches(';');
        let id: u32 = id_word.parse().map_err(|_| SqlError::parse(id_word))?;
        let query_only = words.get(1).is_some_and(|w| w.eq_ignore_ascii_case("QUERY"));
        let may_kill_others = self.global_privileges() & crate::accounts::SUPER != 0;
        let mut procs = self.info.engine.processes.lock();
        match procs.get_mut(&id) {
            Some(p) if p.user != self.info.user && !may_kill_others => {
                Err(SqlError::new(codes::ER_KILL_DENIED_ERROR, format!("You are not owner of thread {id}")))
            }
            Some(p) => {
                // KILL QUERY only interrupts; KILL [CONNECTION] also closes the connection.
                p.kill_connection |= !query_only;
                p.interrupt.store(true, Ordering::Release);
                p.kill.notify_one();
                drop(procs);
                if id == self.info.connection_id && !query_only {
                    return Err(SqlError::query_interrupted());
                }
                Ok(Outcome::ok())
            }
            None => Err(SqlError::new(codes::ER_NO_SUCH_THREAD, format!("Unknown thread id: {id}"))),
        }
    }

    /// Whether this session was killed (KILL QUERY, or KILL CONNECTION).
    #[must_use]
    pub fn is_killed(&self) -> bool {
        self.info.interrupt.killed() || self.connection_killed()
    }

    /// Whether this session's connection must close (KILL CONNECTION).
    #[must_use]
    pub fn connection_killed(&self) -> bool {
        self.info.engine.processes.lock().get(&self.info.connection_id).is_some_and(|p| p.kill_connection)
    }

    /// A new command starts: a KILL QUERY aimed at an earlier one is spent.
    pub fn command_started(&self, text: Option<&str>) {
        if let Some(p) = self.info.engine.processes.lock().get_mut(&self.info.connection_id) {
            p.interrupt.store(false, Ordering::Release);
            p.progress.store(0, Ordering::Relaxed);
            p.command = if text.is_some() { "Query".into() } else { "Sleep".into() };
            p.info = text.map(|t| crate::account_statements::redacted(t).as_deref().unwrap_or(t).chars().take(1024).collect());
            if p.info.is_some() {
                p.last_info.clone_from(&p.info);
            }
            p.started = Some(Instant::now());
        }
    }
}
