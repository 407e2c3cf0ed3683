//! Per-module quotas on everything the host holds for a module (SPEC.md, "Quotas"): live ops,
//! concurrent requests, watches, streams, buffered bytes and log lines per second.
//!
//! A module over a quota gets an error value, as a client of kube-apiserver over its
//! max-in-flight limit does: a request, watch or stream is answered with a `429` `Status` of
//! reason `TooManyRequests` (kube's `Error::Api` in the guest), and a timer, stop signal or
//! stream send with an `error` of code `quota` (ABI 1.3). Nothing reaches the API server
//! and the refusal holds no task and no upstream connection, so one module's flood costs
//! the host a bounded amount and its neighbours nothing. A module that goes on starting ops
//! while as many refusals as its `pending_ops` quota wait for it to take them is ended
//! ([`QuotaAbuse`]): past that point only ending it bounds what the host holds.

mod bytes;
mod log_rate;
mod refusal;
mod throttle;

use std::fmt;

pub use bytes::{ByteBudget, HeldBytes};
pub use log_rate::{LineVerdict, LogGate, LogRate};
pub use refusal::{QuotaAbuse, QuotaExceeded};
pub use throttle::WarnThrottle;

/// What one module may make the host hold at once. Every field is settable per module in the
/// manifest (`quotas:`); [`Quotas::default`] gives the documented defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quotas {
    /// Most live ops of every kind together (`pendingOps`, default 1024).
    pub pending_ops: usize,
    /// Most `http_request` ops in flight (`concurrentRequests`, default 64). Each holds at
    /// most one upstream connection.
    pub concurrent_requests: usize,
    /// Most `watch` ops live (`watches`, default 64). Each holds at most one upstream watch
    /// or one subscription to a shared one.
    pub watches: usize,
    /// Most `stream_open` ops live (`streams`, default 16). Each holds one websocket.
    pub streams: usize,
    /// Most bytes the host buffers for the module at once (`bufferedBytes`, default 64 MiB):
    /// request and stream-message bodies in flight, whole response bodies being collected,
    /// and completions queued for delivery.
    pub buffered_bytes: usize,
    /// Most lines per second the module's stdout and stderr pass on together
    /// (`logLinesPerSecond`, default 100; bursts of up to ten seconds' worth after a quiet
    /// spell). Excess lines are dropped and counted.
    pub log_lines_per_second: u32,
}

impl Default for Quotas {
    fn default() -> Self {
        Self {
            pending_ops: 1024,
            concurrent_requests: 64,
            watches: 64,
            streams: 16,
            buffered_bytes: 64 * 1024 * 1024,
            log_lines_per_second: 100,
        }
    }
}

/// One of the [`Quotas`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Quota {
    /// [`Quotas::pending_ops`].
    PendingOps,
    /// [`Quotas::concurrent_requests`].
    ConcurrentRequests,
    /// [`Quotas::watches`].
    Watches,
    /// [`Quotas::streams`].
    Streams,
    /// [`Quotas::buffered_bytes`].
    BufferedBytes,
    /// [`Quotas::log_lines_per_second`].
    LogLines,
}

impl Quota {
    /// The quota as a metrics label and in the `quota` error's message: `pending_ops`,
    /// `concurrent_requests`, `watches`, `streams`, `buffered_bytes`, `log_lines`.
    pub fn label(self) -> &'static str {
        match self {
            Quota::PendingOps => "pending_ops",
            Quota::ConcurrentRequests => "concurrent_requests",
            Quota::Watches => "watches",
            Quota::Streams => "streams",
            Quota::BufferedBytes => "buffered_bytes",
            Quota::LogLines => "log_lines",
        }
    }

    /// The limit `quotas` sets for this quota, in its unit (ops, bytes, lines per second).
    pub fn limit_in(self, quotas: &Quotas) -> u64 {
        let limit = match self {
            Quota::PendingOps => quotas.pending_ops,
            Quota::ConcurrentRequests => quotas.concurrent_requests,
            Quota::Watches => quotas.watches,
            Quota::Streams => quotas.streams,
            Quota::BufferedBytes => quotas.buffered_bytes,
            Quota::LogLines => quotas.log_lines_per_second as usize,
        };
        limit as u64
    }
}

impl fmt::Display for Quota {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Quota::PendingOps => "pending ops",
            Quota::ConcurrentRequests => "concurrent requests",
            Quota::Watches => "watches",
            Quota::Streams => "streams",
            Quota::BufferedBytes => "buffered bytes",
            Quota::LogLines => "log lines per second",
        })
    }
}
