use super::{Instant, Sleep, sleep_until};
use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

/// How late a tick may be before it counts as missed (as in tokio).
const MISSED_TICK_SLACK: Duration = Duration::from_millis(5);

/// An [`Interval`] whose first tick completes at once, as `tokio::time::interval`.
///
/// # Panics
/// If `period` is zero.
#[track_caller]
pub fn interval(period: Duration) -> Interval {
    assert!(period > Duration::ZERO, "`period` must be non-zero.");
    interval_at(Instant::now(), period)
}

/// An [`Interval`] whose first tick completes at `start`, as `tokio::time::interval_at`.
///
/// # Panics
/// If `period` is zero.
#[track_caller]
pub fn interval_at(start: Instant, period: Duration) -> Interval {
    assert!(period > Duration::ZERO, "`period` must be non-zero.");
    Interval {
        delay: sleep_until(start),
        period,
        missed_tick_behavior: MissedTickBehavior::default(),
    }
}

/// What an [`Interval`] does when ticks were missed, as tokio's `MissedTickBehavior`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum MissedTickBehavior {
    /// Tick as fast as possible until caught up (the default).
    #[default]
    Burst,
    /// Tick once now, then every `period` from now.
    Delay,
    /// Skip the missed ticks and tick at the next multiple of `period` from the start.
    Skip,
}

impl MissedTickBehavior {
    fn next_timeout(self, timeout: Instant, now: Instant, period: Duration) -> Instant {
        match self {
            MissedTickBehavior::Burst => timeout + period,
            MissedTickBehavior::Delay => now + period,
            MissedTickBehavior::Skip => {
                let late = (now - timeout).as_nanos() % period.as_nanos();
                now + period - Duration::from_nanos(u64::try_from(late).unwrap_or(u64::MAX))
            }
        }
    }
}

/// Ticks every `period`, as tokio's `Interval`. Created by [`interval`] or [`interval_at`].
#[derive(Debug)]
pub struct Interval {
    delay: Sleep,
    period: Duration,
    missed_tick_behavior: MissedTickBehavior,
}

impl Interval {
    /// Completes at the next tick and returns its scheduled instant.
    ///
    /// Cancel safe: dropping the future loses no tick.
    pub async fn tick(&mut self) -> Instant {
        poll_fn(|cx| self.poll_tick(cx)).await
    }

    /// Polls for the next tick; on `Ready` the tick is consumed.
    pub fn poll_tick(&mut self, cx: &mut Context<'_>) -> Poll<Instant> {
        if Pin::new(&mut self.delay).poll(cx).is_pending() {
            return Poll::Pending;
        }
        let timeout = self.delay.deadline();
        let now = Instant::now();
        let next = if now > timeout + MISSED_TICK_SLACK {
            self.missed_tick_behavior
                .next_timeout(timeout, now, self.period)
        } else {
            timeout
                .checked_add(self.period)
                .unwrap_or_else(Instant::far_future)
        };
        Pin::new(&mut self.delay).reset(next);
        Poll::Ready(timeout)
    }

    /// The next tick is one period from now.
    pub fn reset(&mut self) {
        self.reset_at(Instant::now() + self.period);
    }

    /// The next tick is now.
    pub fn reset_immediately(&mut self) {
        self.reset_at(Instant::now());
    }

    /// The next tick is `after` from now.
    pub fn reset_after(&mut self, after: Duration) {
        self.reset_at(Instant::now() + after);
    }

    /// The next tick is at `deadline`.
    pub fn reset_at(&mut self, deadline: Instant) {
        Pin::new(&mut self.delay).reset(deadline);
    }

    /// The current [`MissedTickBehavior`].
    pub fn missed_tick_behavior(&self) -> MissedTickBehavior {
        self.missed_tick_behavior
    }

    /// Sets the [`MissedTickBehavior`].
    pub fn set_missed_tick_behavior(&mut self, behavior: MissedTickBehavior) {
        self.missed_tick_behavior = behavior;
    }

    /// The period.
    pub fn period(&self) -> Duration {
        self.period
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missed_tick_behaviours_follow_tokio() {
        let start = Instant::now();
        let period = Duration::from_millis(10);
        let now = start + Duration::from_millis(37);
        assert_eq!(
            MissedTickBehavior::Burst.next_timeout(start, now, period),
            start + period
        );
        assert_eq!(
            MissedTickBehavior::Delay.next_timeout(start, now, period),
            now + period
        );
        assert_eq!(
            MissedTickBehavior::Skip.next_timeout(start, now, period),
            start + Duration::from_millis(40)
        );
    }
}
