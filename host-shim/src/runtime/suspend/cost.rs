//! What suspending costs on this host now: moving averages of how long suspends and resumes
//! take (wall time, so a busy host's queues count), shared by every module of the host.
//!
//! A module is suspended between its timers only if its next timer is at least
//! [`factor`](SuspendCost::new) times a suspend and a resume away ([`SuspendCost::min_gap`]):
//! with the default factor of 250, suspending a module between its timers costs at most 0.4 %
//! of a core — a Rust controller's 1 s tick (a round trip of about 3 ms) or a Go module's 10 s
//! heartbeat (about 25 ms) still pays — and a host slowed down by load suspends less, not
//! more: suspends and resumes that take longer lengthen the gap, which lets the load fall. The
//! averages are the host's, not each module's, so that they keep following the load while a
//! module stays resident.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Each new measurement moves an average by this fraction of its difference (1/8).
const WEIGHT_SHIFT: u32 = 3;

/// The host's suspend and resume times. Cheap to clone: clones share the averages.
#[derive(Debug, Clone)]
pub struct SuspendCost {
    factor: u32,
    suspend_nanos: Arc<AtomicU64>,
    resume_nanos: Arc<AtomicU64>,
}

impl SuspendCost {
    /// The default factor: a suspend between timers costs at most 1/250 of the time the
    /// module stays suspended.
    pub const DEFAULT_FACTOR: u32 = 250;

    /// No measurement yet; `factor` 0: the cost never holds a suspend back.
    pub fn new(factor: u32) -> Self {
        Self {
            factor,
            suspend_nanos: Arc::default(),
            resume_nanos: Arc::default(),
        }
    }

    /// Records a suspend (the snapshot written, the instance dropped) that took `took`.
    pub fn suspended_in(&self, took: Duration) {
        record(&self.suspend_nanos, took);
    }

    /// Records a resume (the instance restored) that took `took`.
    pub fn resumed_in(&self, took: Duration) {
        record(&self.resume_nanos, took);
    }

    /// A suspend and a resume, as they take on average now.
    pub fn round_trip(&self) -> Duration {
        let nanos = self
            .suspend_nanos
            .load(Ordering::Relaxed)
            .saturating_add(self.resume_nanos.load(Ordering::Relaxed));
        Duration::from_nanos(nanos)
    }

    /// The shortest time to a module's next timer for which suspending it pays: the round
    /// trip times the factor.
    pub fn min_gap(&self) -> Duration {
        self.round_trip().saturating_mul(self.factor)
    }
}

impl Default for SuspendCost {
    fn default() -> Self {
        Self::new(Self::DEFAULT_FACTOR)
    }
}

/// Moves the average in `nanos` towards `took` (the first measurement sets it). Concurrent
/// updates may lose one; an estimate does not need them all.
fn record(nanos: &AtomicU64, took: Duration) {
    let took = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
    let old = nanos.load(Ordering::Relaxed);
    let new = if old == 0 {
        took
    } else if took >= old {
        old.saturating_add((took - old) >> WEIGHT_SHIFT)
    } else {
        old - ((old - took) >> WEIGHT_SHIFT)
    };
    nanos.store(new.max(1), Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn the_gap_is_the_round_trip_times_the_factor_and_follows_it_slowly() {
        let cost = SuspendCost::default();
        assert_eq!(cost.min_gap(), Duration::ZERO, "nothing measured yet");
        cost.suspended_in(MS);
        cost.resumed_in(2 * MS);
        assert_eq!(cost.round_trip(), 3 * MS);
        assert_eq!(cost.min_gap(), 750 * MS);
        // A host under load: one slow resume moves the average by an eighth of the change.
        cost.resumed_in(66 * MS);
        assert_eq!(cost.round_trip(), 11 * MS);
        for _ in 0..100 {
            cost.resumed_in(2 * MS);
        }
        assert!(cost.round_trip() < 4 * MS, "{:?}", cost.round_trip());
    }

    #[test]
    fn factor_zero_never_holds_a_suspend_back() {
        let cost = SuspendCost::new(0);
        cost.suspended_in(Duration::from_secs(5));
        assert_eq!(cost.min_gap(), Duration::ZERO);
    }
}
