//! What suspending costs on this host now: moving averages of how long suspends and resumes
//! take (wall time, so a busy host's queues count), shared by every module of the host.
//!
//! A module is suspended between its timers only if its next timer is at least its policy's
//! [`cost_factor`](super::SuspendPolicy::cost_factor) times a suspend and a resume away
//! ([`SuspendCost::round_trip`]): with the default factor of 250, suspending a module between
//! its timers costs at most 0.4 % of a core — a Rust controller's 1 s tick (a round trip of
//! about 3 ms on an idle host) or a Go module's 10 s heartbeat (about 25 ms) still pays — and a
//! host slowed down by load suspends less, not more: suspends and resumes that take longer
//! lengthen the gap, which lets the load fall. The averages are the host's, not each
//! module's, so that they keep following the load while a module stays resident.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Each new measurement moves an average by this fraction of its difference (1/8).
const WEIGHT_SHIFT: u32 = 3;

/// The host's suspend and resume times. Cheap to clone: clones share the averages.
#[derive(Debug, Clone, Default)]
pub struct SuspendCost {
    suspend_nanos: Arc<AtomicU64>,
    resume_nanos: Arc<AtomicU64>,
}

impl SuspendCost {
    /// Records a suspend (the snapshot written, the instance dropped) that took `took`.
    pub fn suspended_in(&self, took: Duration) {
        record(&self.suspend_nanos, took);
    }

    /// Records a resume (the instance restored) that took `took`.
    pub fn resumed_in(&self, took: Duration) {
        record(&self.resume_nanos, took);
    }

    /// A suspend and a resume, as they take on average now; zero before any was measured.
    pub fn round_trip(&self) -> Duration {
        let nanos = self
            .suspend_nanos
            .load(Ordering::Relaxed)
            .saturating_add(self.resume_nanos.load(Ordering::Relaxed));
        Duration::from_nanos(nanos)
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
    fn the_round_trip_follows_the_measurements_slowly() {
        let cost = SuspendCost::default();
        assert_eq!(cost.round_trip(), Duration::ZERO, "nothing measured yet");
        cost.suspended_in(MS);
        cost.resumed_in(2 * MS);
        assert_eq!(cost.round_trip(), 3 * MS);
        // A host under load: one slow resume moves the average by an eighth of the change.
        cost.resumed_in(66 * MS);
        assert_eq!(cost.round_trip(), 11 * MS);
        for _ in 0..100 {
            cost.resumed_in(2 * MS);
        }
        assert!(cost.round_trip() < 4 * MS, "{:?}", cost.round_trip());
    }
}
