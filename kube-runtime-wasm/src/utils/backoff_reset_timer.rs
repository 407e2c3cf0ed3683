//! The [`Backoff`] trait and [`ResetTimerBackoff`], as kube-runtime 5.0's.

use kube_wasm_tokio::time::Instant;
use std::time::Duration;

/// A sequence of retry delays that can start over, as kube-runtime 5.0's `utils::Backoff`:
/// `next()` is the delay before the next retry (`None`: give up), [`Backoff::reset`] restarts
/// the sequence after a success.
pub trait Backoff: Iterator<Item = Duration> + Send + Sync + Unpin {
    /// Starts the sequence over, as if no retry had happened.
    fn reset(&mut self);
}

impl<B: Backoff + ?Sized> Backoff for Box<B> {
    fn reset(&mut self) {
        (**self).reset();
    }
}

/// Wraps a [`Backoff`] so that it starts over when no delay was asked for
/// `reset_duration`, as kube-runtime 5.0's `utils::ResetTimerBackoff` (an error after a
/// long quiet period is treated as a first error). Time is the guest's monotonic clock.
pub struct ResetTimerBackoff<B: Backoff> {
    backoff: B,
    last_backoff: Option<Instant>,
    reset_duration: Duration,
}

impl<B: Backoff> ResetTimerBackoff<B> {
    /// Wraps `backoff`, resetting it after `reset_duration` without a `next()`.
    pub fn new(backoff: B, reset_duration: Duration) -> Self {
        Self {
            backoff,
            last_backoff: None,
            reset_duration,
        }
    }
}

impl<B: Backoff> Iterator for ResetTimerBackoff<B> {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        let now = Instant::now();
        if let Some(last) = self.last_backoff
            && now.duration_since(last) > self.reset_duration
        {
            tracing::debug!(reset_duration = ?self.reset_duration, "resetting backoff after a quiet period");
            self.backoff.reset();
        }
        self.last_backoff = Some(now);
        self.backoff.next()
    }
}

impl<B: Backoff> Backoff for ResetTimerBackoff<B> {
    fn reset(&mut self) {
        self.backoff.reset();
    }
}
