//! When a failed module is started again: exponential backoff, like the kubelet's
//! `CrashLoopBackOff` (10 s doubling to 5 min there; configurable here, 1 s doubling to 5 min by
//! default), reset once a run stayed up long enough.

use std::time::Duration;

/// Restart delays: the first restart waits [`initial`](Self::initial), each further one twice
/// the previous, never more than [`max`](Self::max). A run that lasted at least
/// [`reset_after`](Self::reset_after) counts as healthy: the next failure waits
/// [`initial`](Self::initial) again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// The delay before the first restart.
    pub initial: Duration,
    /// The longest delay.
    pub max: Duration,
    /// How long a run must last for the delay to go back to `initial`.
    pub reset_after: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Self {
            initial: Duration::from_secs(1),
            max: Duration::from_secs(300),
            reset_after: Duration::from_secs(600),
        }
    }
}

/// The backoff state of one module.
#[derive(Debug, Clone)]
pub struct BackoffState {
    policy: Backoff,
    next: Duration,
}

impl BackoffState {
    /// A module that has not failed yet.
    pub fn new(policy: Backoff) -> Self {
        Self {
            policy,
            next: policy.initial,
        }
    }

    /// The delay before restarting a module whose last run lasted `ran_for`; advances the
    /// state for the next failure.
    pub fn delay_after(&mut self, ran_for: Duration) -> Duration {
        if ran_for >= self.policy.reset_after {
            self.next = self.policy.initial;
        }
        let delay = self.next.min(self.policy.max);
        self.next = delay.saturating_mul(2).min(self.policy.max);
        delay
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const QUICK: Duration = Duration::from_millis(10);

    #[test]
    fn delays_double_up_to_the_cap() {
        let mut state = BackoffState::new(Backoff::default());
        let delays: Vec<u64> = (0..11)
            .map(|_| state.delay_after(QUICK).as_secs())
            .collect();
        assert_eq!(delays, [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300]);
    }

    #[test]
    fn a_long_healthy_run_resets_the_delay() {
        let policy = Backoff {
            initial: Duration::from_millis(100),
            max: Duration::from_secs(1),
            reset_after: Duration::from_secs(5),
        };
        let mut state = BackoffState::new(policy);
        state.delay_after(QUICK);
        state.delay_after(QUICK);
        assert_eq!(state.delay_after(QUICK), Duration::from_millis(400));
        assert_eq!(
            state.delay_after(Duration::from_secs(4)),
            Duration::from_millis(800),
            "shorter than reset_after: keeps doubling"
        );
        assert_eq!(state.delay_after(Duration::from_secs(5)), policy.initial);
        assert_eq!(state.delay_after(QUICK), Duration::from_millis(200));
    }

    #[test]
    fn an_initial_delay_over_the_cap_is_capped() {
        let mut state = BackoffState::new(Backoff {
            initial: Duration::from_secs(10),
            max: Duration::from_secs(3),
            reset_after: Duration::from_secs(60),
        });
        assert_eq!(state.delay_after(QUICK), Duration::from_secs(3));
        assert_eq!(state.delay_after(QUICK), Duration::from_secs(3));
    }
}
