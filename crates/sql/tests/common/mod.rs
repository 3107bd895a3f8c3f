//! What the SQL integration tests share: a replayable random stream, settings from the
//! environment, and a session on an engine of its own.

use quill_sql::vars::VarSet;
use quill_sql::{Engine, Session};

/// A number from the environment (a seed to replay, a longer run), or `default`.
pub fn env_number<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// A root session on a fresh engine without a data directory.
#[must_use]
pub fn session() -> Session {
    Session::new(Engine::new(VarSet::defaults()), 1, "root", "127.0.0.1")
}

/// xorshift64: a replayable stream of test inputs without a dependency; a failing seed
/// replays the same inputs.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}
