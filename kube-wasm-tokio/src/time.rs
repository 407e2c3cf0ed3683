//! Time, with tokio's `tokio::time` API. Every timer is a `delay` operation of the kube-wasm
//! ABI: the host keeps the clock, and the module sleeps with no thread and no stack.
//!
//! Timers have millisecond resolution: a wait is rounded up to whole milliseconds, so a
//! [`Sleep`] never completes before its deadline.

mod instant;
mod interval;
mod sleep;
mod timeout;

pub mod error;

pub use instant::Instant;
pub use interval::{Interval, MissedTickBehavior, interval, interval_at};
pub use sleep::{Sleep, sleep, sleep_until};
pub use std::time::Duration;
pub use timeout::{Timeout, timeout, timeout_at};
