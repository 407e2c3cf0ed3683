//! The limits on what the host takes from the API server for a module's ops: line, event and
//! body sizes, and how long a response head may take.

use std::time::Duration;

/// Limits that apply to the ops of every module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpLimits {
    /// Longest line (`lines` mode) or watch event the host passes on, in bytes.
    pub max_line_bytes: usize,
    /// Largest whole response body the host passes on, in bytes.
    pub max_body_bytes: usize,
    /// Longest wait for the response head of an `http_request` (not of a `watch`, which is
    /// long-lived by design); past it the op completes with an `error` of code `timeout`.
    /// `None`: only kube's own connect and read timeouts apply.
    pub request_timeout: Option<Duration>,
}

impl Default for OpLimits {
    fn default() -> Self {
        Self {
            max_line_bytes: 16 * 1024 * 1024,
            max_body_bytes: 512 * 1024 * 1024,
            // The apiserver's own `--request-timeout` default.
            request_timeout: Some(Duration::from_secs(60)),
        }
    }
}
