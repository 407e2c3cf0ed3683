//! The watcher's retry delays, as kube-runtime 5.0's `watcher::{ExponentialBackoff,
//! DefaultBackoff}`.

use crate::utils::{Backoff, ResetTimerBackoff};
use backon::BackoffBuilder;
use std::time::Duration;

/// Exponentially growing delays, as kube-runtime 5.0's `watcher::ExponentialBackoff`: a
/// [`backon::ExponentialBuilder`]'s curve (min delay, then ×factor, capped at max delay,
/// optionally with jitter), restarted from the beginning by [`Backoff::reset`].
///
/// ```
/// use kube_runtime_wasm::watcher::ExponentialBackoff;
/// use std::time::Duration;
///
/// let builder = backon::ExponentialBuilder::default()
///     .with_min_delay(Duration::from_millis(100))
///     .with_max_delay(Duration::from_secs(1))
///     .without_max_times();
/// let delays: Vec<_> = ExponentialBackoff::from(builder)
///     .take(3)
///     .map(|d| d.as_millis()) // backon multiplies in f32
///     .collect();
/// assert_eq!(delays, [100, 200, 400]);
/// ```
pub struct ExponentialBackoff {
    inner: backon::ExponentialBackoff,
    builder: backon::ExponentialBuilder,
}

impl ExponentialBackoff {
    fn new(min_delay: Duration, max_delay: Duration, factor: f32, jitter: bool) -> Self {
        let builder = backon::ExponentialBuilder::default()
            .with_min_delay(min_delay)
            .with_max_delay(max_delay)
            .with_factor(factor)
            .without_max_times();
        let builder = if jitter {
            builder.with_jitter()
        } else {
            builder
        };
        Self::from(builder)
    }
}

impl Backoff for ExponentialBackoff {
    fn reset(&mut self) {
        self.inner = self.builder.build();
    }
}

impl Iterator for ExponentialBackoff {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        self.inner.next()
    }
}

impl From<backon::ExponentialBuilder> for ExponentialBackoff {
    fn from(builder: backon::ExponentialBuilder) -> Self {
        Self {
            inner: builder.build(),
            builder,
        }
    }
}

/// The watcher's default backoff, as kube-runtime 5.0's `watcher::DefaultBackoff`: 800 ms,
/// doubling up to 30 s, each delay with up to 100 % random jitter added (so in
/// `[d, 2d)`), never giving up; it starts over after an item that is not an error, or when
/// no delay was asked for 120 s.
pub struct DefaultBackoff(ResetTimerBackoff<ExponentialBackoff>);

impl Default for DefaultBackoff {
    fn default() -> Self {
        Self(ResetTimerBackoff::new(
            ExponentialBackoff::new(
                Duration::from_millis(800),
                Duration::from_secs(30),
                2.0,
                true,
            ),
            Duration::from_secs(120),
        ))
    }
}

impl Iterator for DefaultBackoff {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        self.0.next()
    }
}

impl Backoff for DefaultBackoff {
    fn reset(&mut self) {
        self.0.reset();
    }
}
