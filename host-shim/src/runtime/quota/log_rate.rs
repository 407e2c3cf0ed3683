//! The log-lines quota: a token bucket over a module's stdout and stderr lines.

use std::time::Instant;

/// How many seconds' worth of lines a quiet module may write in one burst.
const BURST_SECONDS: f64 = 10.0;

/// A token bucket of log lines: `per_second` lines a second on average, bursts of up to
/// [`BURST_SECONDS`] × `per_second` lines. Counts the lines it refused.
#[derive(Debug, Clone)]
pub struct LogRate {
    per_second: f64,
    burst: f64,
    tokens: f64,
    last: Instant,
    dropped: u64,
}

impl LogRate {
    /// A full bucket of `per_second` lines a second (0: every line is refused).
    pub fn new(per_second: u32, now: Instant) -> Self {
        let per_second = f64::from(per_second);
        let burst = (per_second * BURST_SECONDS).max(1.0);
        Self {
            per_second,
            burst,
            tokens: if per_second > 0.0 { burst } else { 0.0 },
            last: now,
            dropped: 0,
        }
    }

    /// Whether one more line written at `now` passes; a refused line is counted.
    pub fn admit(&mut self, now: Instant) -> bool {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.last = now;
        self.tokens = (self.tokens + elapsed * self.per_second).min(self.burst);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            self.dropped += 1;
            false
        }
    }

    /// The lines refused since the last call.
    pub fn take_dropped(&mut self) -> u64 {
        std::mem::take(&mut self.dropped)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_burst_passes_then_the_rate_holds() {
        let start = Instant::now();
        let mut rate = LogRate::new(10, start);
        let passed = (0..150).filter(|_| rate.admit(start)).count();
        assert_eq!(passed, 100, "ten seconds' worth at once");
        assert_eq!(rate.take_dropped(), 50);
        assert_eq!(rate.take_dropped(), 0);
        let later = start + Duration::from_secs(1);
        let passed = (0..50).filter(|_| rate.admit(later)).count();
        assert_eq!(passed, 10, "a second later, one second's worth");
    }

    #[test]
    fn zero_refuses_everything() {
        let start = Instant::now();
        let mut rate = LogRate::new(0, start);
        assert!(!rate.admit(start + Duration::from_secs(60)));
    }
}

/// The log-lines quota of one module, shared by its stdout and stderr: a [`LogRate`] that
/// counts the lines it drops in the metrics
/// (`kube_wasm_log_lines_dropped_total{module}`).
#[derive(Debug)]
pub struct LogGate {
    rate: std::sync::Mutex<LogRate>,
    per_second: u32,
    module: String,
    metrics: crate::metrics::Metrics,
}

/// What [`LogGate::admit`] decided about one line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineVerdict {
    /// Write it; `dropped_before` lines were dropped since the last line written (say so
    /// first).
    Write {
        /// Lines dropped since the last one written.
        dropped_before: u64,
    },
    /// Drop it.
    Drop,
}

impl LogGate {
    /// The gate of module `module`, passing `per_second` lines a second.
    pub fn new(module: &str, per_second: u32, metrics: crate::metrics::Metrics) -> Self {
        Self {
            rate: std::sync::Mutex::new(LogRate::new(per_second, Instant::now())),
            per_second,
            module: module.to_owned(),
            metrics,
        }
    }

    /// The quota, in lines per second.
    pub fn per_second(&self) -> u32 {
        self.per_second
    }

    /// Decides about one line written now.
    pub fn admit(&self) -> LineVerdict {
        let mut rate = self
            .rate
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if rate.admit(Instant::now()) {
            LineVerdict::Write {
                dropped_before: rate.take_dropped(),
            }
        } else {
            self.metrics.count_log_line_dropped(&self.module);
            LineVerdict::Drop
        }
    }
}
