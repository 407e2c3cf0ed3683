//! [`UpgradeConnectionError`] (`ws` feature): why [`Client::connect`](super::Client::connect)
//! could not upgrade to a WebSocket connection, as kube 5.0's.

use crate::box_error::BoxError;
use kube_wasm_abi::{OpError, UpgradeFailure};

/// Possible errors from upgrading to a WebSocket connection, as kube 5.0's
/// `kube::client::UpgradeConnectionError`, inside
/// [`Error::UpgradeConnection`](crate::Error::UpgradeConnection).
///
/// The host does the handshake with kube's own `Client::connect` and reports which check
/// failed (SPEC.md, "A failed upgrade"), so a guest gets the variant a native kube client
/// gets for the same server answer. As in kube, an answer with an error status (4xx/5xx)
/// is never one of these but [`Error::Api`](crate::Error::Api).
#[derive(Debug, thiserror::Error)]
pub enum UpgradeConnectionError {
    /// The server answered with this status, which is neither `101 Switching Protocols` nor
    /// an error status (e.g. a `200` from a proxy that ignores the upgrade).
    #[error("failed to switch protocol: {0}")]
    ProtocolSwitch(http::StatusCode),

    /// The `Upgrade` header of the `101` answer was not `websocket` (case-insensitive).
    #[error("upgrade header was not set to websocket")]
    MissingUpgradeWebSocketHeader,

    /// The `Connection` header of the `101` answer was not `Upgrade` (case-insensitive).
    #[error("connection header was not set to Upgrade")]
    MissingConnectionUpgradeHeader,

    /// The `Sec-WebSocket-Accept` of the `101` answer did not match the key sent.
    #[error("Sec-WebSocket-Accept key mismatched")]
    SecWebSocketAcceptKeyMismatch,

    /// The `101` answer's `Sec-WebSocket-Protocol` was missing or not one of those offered
    /// (`v5.channel.k8s.io`, `v4.channel.k8s.io`).
    #[error("Sec-WebSocket-Protocol mismatched")]
    SecWebSocketProtocolMismatch,

    /// The handshake passed but the upgraded connection could not be taken over from the
    /// HTTP client. kube holds the `hyper::Error` here; a guest has no hyper connection and
    /// cannot make one, so this holds the host's [`kube_wasm_abi::OpError`] (code `upgrade`,
    /// its `message` the host's HTTP client error), as [`Error::Service`](crate::Error::Service)
    /// holds host failures: `Display` and `source()` work as on kube's, hyper's own methods
    /// (`is_closed()`, …) do not exist.
    #[error("failed to get pending HTTP upgrade: {0}")]
    GetPendingUpgrade(#[source] BoxError),
}

impl UpgradeConnectionError {
    /// The variant for a host's `upgrade` error; the error itself back if it names no check
    /// this guest knows (a newer host's, or none) or a `protocol_switch` status that is not
    /// an HTTP status, which the caller reports as a host failure.
    pub(crate) fn from_host(error: OpError) -> Result<Self, OpError> {
        Ok(match error.upgrade {
            Some(UpgradeFailure::ProtocolSwitch { status }) => {
                match http::StatusCode::from_u16(status) {
                    Ok(status) => Self::ProtocolSwitch(status),
                    Err(_) => return Err(error),
                }
            }
            Some(UpgradeFailure::MissingUpgradeWebSocketHeader) => {
                Self::MissingUpgradeWebSocketHeader
            }
            Some(UpgradeFailure::MissingConnectionUpgradeHeader) => {
                Self::MissingConnectionUpgradeHeader
            }
            Some(UpgradeFailure::SecWebSocketAcceptKeyMismatch) => {
                Self::SecWebSocketAcceptKeyMismatch
            }
            Some(UpgradeFailure::SecWebSocketProtocolMismatch) => {
                Self::SecWebSocketProtocolMismatch
            }
            Some(UpgradeFailure::GetPendingUpgrade) => Self::GetPendingUpgrade(Box::new(error)),
            Some(UpgradeFailure::Unknown) | None => return Err(error),
        })
    }
}
