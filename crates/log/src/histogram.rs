//! Fixed-bucket histograms of counts, shared by the log (records per group commit) and the
//! SQL layer (commit latency, row lock waits), exported by the server's metrics endpoint in
//! Prometheus's text format (`docs/metrics.md`).
//!
//! An observation is three relaxed atomic additions (its bucket, the count, the sum), so a
//! histogram sits on hot paths without a lock. Buckets are upper bounds, inclusive, in the
//! histogram's unit; a value above the last bound counts only in the total (Prometheus's
//! `+Inf` bucket). Readers may see an observation's count before its bucket: the exposition
//! is a snapshot good to one observation, as Prometheus's own clients are.
//!
//! Where it sits: in `log`, the lowest layer that observes; nothing here does I/O.

use std::sync::atomic::{AtomicU64, Ordering};

/// The most buckets a histogram has.
pub const BUCKETS_MAX: usize = 16;

/// Counts of observations by bucket, their number and their sum.
#[derive(Debug)]
pub struct Histogram {
    bounds: &'static [u64],
    buckets: [AtomicU64; BUCKETS_MAX],
    count: AtomicU64,
    sum: AtomicU64,
}

/// A histogram read at one moment: each bound with the observations at or below it
/// (cumulative), then the count and the sum.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    pub cumulative: Vec<(u64, u64)>,
    pub count: u64,
    pub sum: u64,
}

impl Histogram {
    /// A histogram with `bounds`, ascending.
    ///
    /// # Panics
    /// More than [`BUCKETS_MAX`] bounds, or bounds not ascending.
    #[must_use]
    pub const fn new(bounds: &'static [u64]) -> Histogram {
        assert!(bounds.len() <= BUCKETS_MAX, "too many buckets");
        let mut i = 1;
        while i < bounds.len() {
            assert!(bounds[i - 1] < bounds[i], "bounds must ascend");
            i += 1;
        }
        Histogram { bounds, buckets: [const { AtomicU64::new(0) }; BUCKETS_MAX], count: AtomicU64::new(0), sum: AtomicU64::new(0) }
    }

    pub fn observe(&self, value: u64) {
        if let Some(i) = self.bounds.iter().position(|&b| value <= b) {
            self.buckets[i].fetch_add(1, Ordering::Relaxed);
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum.fetch_add(value, Ordering::Relaxed);
    }

    #[must_use]
    pub fn snapshot(&self) -> Snapshot {
        let mut total = 0;
        let cumulative = self
            .bounds
            .iter()
            .zip(&self.buckets)
            .map(|(&bound, n)| {
                total += n.load(Ordering::Relaxed);
                (bound, total)
            })
            .collect();
        Snapshot { cumulative, count: self.count.load(Ordering::Relaxed), sum: self.sum.load(Ordering::Relaxed) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observations_fall_in_the_first_bucket_that_holds_them_and_add_up() {
        static H: Histogram = Histogram::new(&[1, 10, 100]);
        for v in [0, 1, 5, 10, 11, 1000] {
            H.observe(v);
        }
        assert_eq!(H.snapshot(), Snapshot { cumulative: vec![(1, 2), (10, 4), (100, 5)], count: 6, sum: 1027 });
    }
}
