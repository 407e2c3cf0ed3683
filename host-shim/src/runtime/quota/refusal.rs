//! What a module over a quota gets: a `429` `Status` or an `error` of code `quota`; and the
//! end of a module that ignores them.

use kube_wasm_abi::{Completion, ErrorCode, OpError};

use super::Quota;

/// Seconds a refused client is told to wait (`Retry-After`, `details.retryAfterSeconds`), as
/// kube-apiserver's max-in-flight filter tells it.
pub const RETRY_AFTER_SECONDS: u32 = 1;

/// An op refused because its module is at one of its [quotas](super::Quotas).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("module `{module}` is at its quota of {limit} {quota}")]
pub struct QuotaExceeded {
    /// The module's name.
    pub module: String,
    /// The quota it is at.
    pub quota: Quota,
    /// The quota's limit, in its unit.
    pub limit: u64,
}

impl QuotaExceeded {
    /// The answer to a refused request, watch or stream, as kube-apiserver answers a client
    /// over its max-in-flight limit: status `429`, a `Retry-After` header, and a `Status` of
    /// reason `TooManyRequests` (which kube's client turns into `Error::Api` with code 429).
    /// Returns the completion and its body.
    pub fn too_many_requests(&self) -> (Completion, Vec<u8>) {
        let status = serde_json::json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": format!("{self}; try again later"),
            "reason": "TooManyRequests",
            "details": {"retryAfterSeconds": RETRY_AFTER_SECONDS},
            "code": 429,
        });
        let completion = Completion::Response {
            status: 429,
            headers: vec![
                ("content-type".into(), "application/json".into()),
                ("retry-after".into(), RETRY_AFTER_SECONDS.to_string()),
            ],
        };
        (completion, status.to_string().into_bytes())
    }

    /// The answer to a refused timer, stop signal or stream send: an `error` of code `quota`
    /// (ABI 1.3) whose message names the quota.
    pub fn op_error(&self) -> OpError {
        OpError::new(ErrorCode::Quota, self.to_string())
    }
}

/// Why the host ended a module: it kept starting ops while `refused` refusals waited for it
/// to take them (as many as its `pending_ops` quota), or it was refused a timer or stop signal
/// it cannot be told about (a guest older than ABI 1.3).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuotaAbuse {
    /// Refusals piled up undelivered.
    #[error(
        "kept starting ops while {refused} refusals of its quota of {limit} pending ops waited \
         to be taken"
    )]
    IgnoredRefusals {
        /// Refusals waiting.
        refused: usize,
        /// The `pending_ops` quota.
        limit: usize,
    },
    /// A guest of ABI 1.0–1.2 cannot receive an `error` for a timer or stop signal.
    #[error("{0} (a timer or stop signal a guest older than ABI 1.3 cannot be refused)")]
    Unrefusable(QuotaExceeded),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_request_reads_as_the_api_servers_429() {
        let over = QuotaExceeded {
            module: "flood".into(),
            quota: Quota::Watches,
            limit: 64,
        };
        let (completion, body) = over.too_many_requests();
        let Completion::Response { status, headers } = completion else {
            panic!("a response, not {completion:?}");
        };
        assert_eq!(status, 429);
        assert!(headers.contains(&("retry-after".into(), "1".into())));
        let status: serde_json::Value = serde_json::from_slice(&body).expect("JSON");
        assert_eq!(status["reason"], "TooManyRequests");
        assert_eq!(status["code"], 429);
        assert_eq!(
            status["message"],
            "module `flood` is at its quota of 64 watches; try again later"
        );
        assert_eq!(over.op_error().code, ErrorCode::Quota);
    }
}
