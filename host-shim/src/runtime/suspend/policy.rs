//! When an idle module is suspended: a configured idle period, stretched for modules that are
//! woken right after being suspended (hysteresis). Pure and clock-free: callers pass the
//! durations they measured.

use std::time::Duration;

/// A module's suspend setting (`suspend: {idleAfter: 30s}` in a manifest): suspend it once it
/// has had no delivery for `idle_after`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SuspendPolicy {
    /// How long a module must be idle (not entered, no completion waiting) before it is
    /// suspended; the starting and smallest idle threshold.
    pub idle_after: Duration,
}

impl SuspendPolicy {
    /// The largest idle threshold, as a multiple of `idle_after`.
    pub const MAX_FACTOR: u32 = 16;

    /// A policy suspending after `idle_after`.
    pub fn after(idle_after: Duration) -> Self {
        Self { idle_after }
    }
}

/// The idle threshold of one running module, adapted to how it behaves:
/// - resumed sooner than `idle_after` after it was suspended: suspending it was a waste, so
///   the threshold doubles (up to [`SuspendPolicy::MAX_FACTOR`] × `idle_after`);
/// - stayed suspended longer than its threshold: it really is idle, so the threshold halves
///   back towards `idle_after`;
/// - a snapshot that could not be written doubles it too, so a failing disk is not retried
///   after every idle period.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdleThreshold {
    policy: SuspendPolicy,
    current: Duration,
}

impl IdleThreshold {
    /// A threshold starting at `policy.idle_after`.
    pub fn new(policy: SuspendPolicy) -> Self {
        Self {
            policy,
            current: policy.idle_after,
        }
    }

    /// How long the module must be idle now before it is suspended.
    pub fn current(&self) -> Duration {
        self.current
    }

    /// The largest threshold.
    pub fn max(&self) -> Duration {
        self.policy
            .idle_after
            .saturating_mul(SuspendPolicy::MAX_FACTOR)
    }

    /// Records a resume after the module was suspended for `suspended_for`.
    pub fn resumed_after(&mut self, suspended_for: Duration) {
        if suspended_for < self.policy.idle_after {
            self.grow();
        } else if suspended_for > self.current {
            self.current = (self.current / 2).max(self.policy.idle_after);
        }
    }

    /// Records a snapshot that could not be written (the module stayed resident).
    pub fn suspend_failed(&mut self) {
        self.grow();
    }

    fn grow(&mut self) {
        self.current = self.current.saturating_mul(2).min(self.max());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn starts_at_idle_after() {
        let t = IdleThreshold::new(SuspendPolicy::after(30 * S));
        assert_eq!(t.current(), 30 * S);
        assert_eq!(t.max(), 480 * S);
    }

    #[test]
    fn early_wakes_double_it_up_to_the_cap() {
        let mut t = IdleThreshold::new(SuspendPolicy::after(10 * S));
        let mut seen = Vec::new();
        for _ in 0..6 {
            t.resumed_after(2 * S);
            seen.push(t.current().as_secs());
        }
        assert_eq!(seen, [20, 40, 80, 160, 160, 160]);
    }

    #[test]
    fn long_sleeps_halve_it_back_to_idle_after() {
        let mut t = IdleThreshold::new(SuspendPolicy::after(10 * S));
        for _ in 0..4 {
            t.resumed_after(S);
        }
        assert_eq!(t.current(), 160 * S);
        // Suspended longer than idle_after but not longer than the threshold: no change.
        t.resumed_after(100 * S);
        assert_eq!(t.current(), 160 * S);
        let mut seen = Vec::new();
        for _ in 0..6 {
            t.resumed_after(200 * S);
            seen.push(t.current().as_secs());
        }
        assert_eq!(seen, [80, 40, 20, 10, 10, 10]);
    }

    #[test]
    fn a_module_woken_at_its_pace_keeps_its_threshold() {
        // Idle 1 s, then woken every 5 s by a requeue: suspended for 4 s each time.
        let mut t = IdleThreshold::new(SuspendPolicy::after(S));
        for _ in 0..10 {
            t.resumed_after(4 * S);
        }
        assert_eq!(t.current(), S);
    }

    #[test]
    fn failed_snapshots_back_off() {
        let mut t = IdleThreshold::new(SuspendPolicy::after(S));
        t.suspend_failed();
        t.suspend_failed();
        assert_eq!(t.current(), 4 * S);
        for _ in 0..10 {
            t.suspend_failed();
        }
        assert_eq!(t.current(), 16 * S);
    }

    #[test]
    fn exactly_idle_after_is_not_early() {
        let mut t = IdleThreshold::new(SuspendPolicy::after(S));
        t.resumed_after(S);
        assert_eq!(t.current(), S);
    }
}
