//! The run's clock: seconds since the soak started, the one time base of changes,
//! observations, chaos events and memory samples.

use std::time::Instant;

/// Seconds since a fixed start.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    start: Instant,
}

impl Clock {
    /// A clock starting now.
    pub fn start() -> Self {
        Self {
            start: Instant::now(),
        }
    }

    /// Seconds since the start.
    pub fn now(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }
}
