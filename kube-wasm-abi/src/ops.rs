//! Operation envelopes: what the guest submits and the completions the host sends back
//! (SPEC.md, "Operations" and "Completions").

use serde::{Deserialize, Serialize};

/// Identifies one operation of one module. Issued by the host, never 0, never reused while
/// the module lives.
pub type OpId = u64;

/// The header of an `http_request` frame. The frame body is the request body (raw bytes,
/// usually Kubernetes JSON, possibly empty).
///
/// The host sends it to the API server through its authenticated client; the guest never
/// sees credentials, and the host drops any `authorization` header the guest sets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HttpRequest {
    /// HTTP method, upper case: `GET`, `POST`, `PUT`, `PATCH`, `DELETE`, ….
    pub method: String,
    /// Path and query, relative to the API server root, e.g.
    /// `/api/v1/namespaces/default/configmaps?limit=10`. Must start with `/`.
    pub uri: String,
    /// Request headers as `(name, value)` pairs, in order (e.g. `content-type`, `accept`).
    #[serde(default)]
    pub headers: Vec<(String, String)>,
    /// How the host hands back the response.
    #[serde(default)]
    pub response: ResponseMode,
}

/// How the response to an [`HttpRequest`] comes back.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResponseMode {
    /// One final [`Completion::Response`] carrying status, headers and the whole body.
    #[default]
    Whole,
    /// For a 2xx status: a [`Completion::Head`], then one [`Completion::Line`] per
    /// newline-terminated line of the body, then [`Completion::End`]. Any other status is
    /// answered as in `Whole` mode.
    Lines,
}

/// The server-side timeout of a watch whose [`WatchRequest::timeout_seconds`] is `None`, in
/// seconds: the `timeoutSeconds` kube-core 5.0 sends when `WatchParams::timeout` is `None`.
/// The host asks the API server for it (or ends a shared watch after it), and a guest's
/// watcher counts its idle limit from it plus 5 s, as kube-runtime's `watcher` does.
pub const DEFAULT_WATCH_TIMEOUT_SECS: u32 = 290;

/// The header of a `watch` frame (the frame body is empty): a Kubernetes watch of one
/// resource collection, given by its parts rather than a URL so that the host knows the
/// resource and parameters (and can later share identical upstream watches).
///
/// Mirrors `kube_core::params::WatchParams` plus the resourceVersion that
/// `kube_core::Request::watch` takes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WatchRequest {
    /// The collection URL path, e.g. `/api/v1/namespaces/default/configmaps` or
    /// `/apis/apps/v1/deployments`; no query.
    pub path: String,
    /// `labelSelector`, if any.
    #[serde(default)]
    pub label_selector: Option<String>,
    /// `fieldSelector`, if any.
    #[serde(default)]
    pub field_selector: Option<String>,
    /// `timeoutSeconds`: server-side timeout of the watch, in seconds;
    /// [`DEFAULT_WATCH_TIMEOUT_SECS`] (290 s, as kube sends it) when absent.
    #[serde(default)]
    pub timeout_seconds: Option<u32>,
    /// `allowWatchBookmarks`.
    #[serde(default)]
    pub bookmarks: bool,
    /// `sendInitialEvents` (streaming lists).
    #[serde(default)]
    pub send_initial_events: bool,
    /// The resourceVersion to watch from (`"0"` for "any").
    pub resource_version: String,
    /// Ask for `PartialObjectMetadata` instead of full objects (kube's `watch_metadata`).
    #[serde(default)]
    pub metadata_only: bool,
}

/// The header of a completion frame the host delivers through `kube_wasm_complete`.
///
/// [`Completion::is_final`] tells whether the op is finished: after a final completion the
/// host forgets the op and sends nothing more for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Completion {
    /// The whole response to an `http_request` (or a watch the server refused before
    /// streaming, e.g. 403/404). Body: the response body. Final.
    Response {
        /// HTTP status code.
        status: u16,
        /// Response headers as `(name, value)` pairs.
        #[serde(default)]
        headers: Vec<(String, String)>,
    },
    /// Status and headers of a 2xx `lines`-mode response; lines follow. Body: empty.
    /// Not final.
    Head {
        /// HTTP status code (2xx).
        status: u16,
        /// Response headers as `(name, value)` pairs.
        #[serde(default)]
        headers: Vec<(String, String)>,
    },
    /// One line of a `lines`-mode body, without its `\n`. Not final.
    Line {},
    /// One complete watch event: body is one JSON object `{"type": …, "object": …}`
    /// exactly as the API server sent it. Not final.
    WatchEvent {},
    /// The stream ended normally: the server closed the watch (e.g. its timeout) or the
    /// `lines` body ended. Final.
    End {},
    /// The `delay` elapsed. Final.
    Elapsed {},
    /// The host asks the module to stop (completes `stop_signal`). Final.
    Stop {},
    /// A `stream_open` op: the websocket upgrade succeeded. `protocol` is the negotiated
    /// subprotocol (e.g. `v5.channel.k8s.io`), empty if none. Body: empty. Not final. (ABI 1.1)
    Opened {
        /// The `Sec-WebSocket-Protocol` the server chose.
        #[serde(default)]
        protocol: String,
    },
    /// A `stream_open` op: one websocket message from the server; body is its payload. Takes
    /// one unit of the stream's credit. Not final. (ABI 1.1)
    Message {
        /// Whether it was a text message (else binary).
        #[serde(default)]
        text: bool,
    },
    /// A `stream_open` op: the websocket closed (the server's close frame, or the connection
    /// ended after the guest's). Body: empty. Final. (ABI 1.1)
    Closed {
        /// The close code the server sent, if any.
        #[serde(default)]
        code: Option<u16>,
        /// The close reason the server sent (empty if none).
        #[serde(default)]
        reason: String,
    },
    /// A `stream_send` op: the host handed the message to the websocket. Body: empty.
    /// Final. (ABI 1.1)
    Sent {},
    /// The op failed. Final.
    Error(OpError),
}

impl Completion {
    /// Whether this completion finishes its op.
    pub fn is_final(&self) -> bool {
        !matches!(
            self,
            Completion::Head { .. }
                | Completion::Line {}
                | Completion::WatchEvent {}
                | Completion::Opened { .. }
                | Completion::Message { .. }
        )
    }
}

/// Why an op failed, carried by [`Completion::Error`]. Failures are values: the guest turns
/// them into `kube::Error`, never a trap.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{code}: {message}")]
pub struct OpError {
    /// What kind of failure.
    pub code: ErrorCode,
    /// Human-readable detail from the host.
    pub message: String,
    /// For code [`ErrorCode::Upgrade`] (ABI 1.2): which check of the websocket handshake
    /// failed. Absent otherwise; left out of the JSON when absent, so the header of every
    /// other error is as in ABI 1.1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgrade: Option<UpgradeFailure>,
}

impl OpError {
    /// An error of `code` with `message`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            upgrade: None,
        }
    }

    /// An error of code [`ErrorCode::Upgrade`] (ABI 1.2): the websocket handshake of a
    /// `stream_open` failed `check`; `message` is the host's description of the failure.
    pub fn upgrade(check: UpgradeFailure, message: impl Into<String>) -> Self {
        Self {
            code: ErrorCode::Upgrade,
            message: message.into(),
            upgrade: Some(check),
        }
    }
}

/// Which check of the websocket handshake failed, in the `upgrade` field of an `error`
/// completion of code `upgrade` (ABI 1.2, SPEC.md "Duplex streams"): the checks kube 5.0's
/// `Client::connect` makes after the API server answered the upgrade request without an
/// error status, one per variant of kube's `UpgradeConnectionError`.
///
/// In JSON, an object whose `check` names the variant in snake case, e.g.
/// `{"check":"protocol_switch","status":200}` or `{"check":"sec_websocket_accept_key_mismatch"}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "check", rename_all = "snake_case")]
pub enum UpgradeFailure {
    /// The server answered with `status`, which is neither `101 Switching Protocols` nor an
    /// error status (a 4xx/5xx answer is a `response` completion instead).
    ProtocolSwitch {
        /// The HTTP status the server answered with.
        status: u16,
    },
    /// The `101` answer's `Upgrade` header was not `websocket` (case-insensitive).
    #[serde(rename = "missing_upgrade_websocket_header")]
    MissingUpgradeWebSocketHeader,
    /// The `101` answer's `Connection` header was not `Upgrade` (case-insensitive).
    MissingConnectionUpgradeHeader,
    /// The `101` answer's `Sec-WebSocket-Accept` did not match the key the host sent.
    #[serde(rename = "sec_websocket_accept_key_mismatch")]
    SecWebSocketAcceptKeyMismatch,
    /// The `101` answer named no `Sec-WebSocket-Protocol`, or one the host did not offer.
    #[serde(rename = "sec_websocket_protocol_mismatch")]
    SecWebSocketProtocolMismatch,
    /// The handshake passed, but the upgraded connection could not be taken over from the
    /// HTTP client; the error's `message` is the HTTP client's error.
    GetPendingUpgrade,
    /// A check this version of the ABI does not know (sent by a newer host).
    #[serde(other)]
    Unknown,
}

/// The kind of an [`OpError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The API server could not be reached (connection refused, DNS, TLS handshake).
    Connect,
    /// The host's time limit for the op ran out before a response arrived.
    Timeout,
    /// The response or watch stream broke off after it had started (connection reset,
    /// body read error).
    Stream,
    /// One line or watch event was larger than the host's limit.
    TooLarge,
    /// The host could not turn the envelope into a request (bad method, path or header).
    InvalidRequest,
    /// A `stream_open`'s websocket handshake failed after the API server answered without
    /// an error status; the error's `upgrade` field says which check failed (ABI 1.2).
    Upgrade,
    /// Anything else that went wrong inside the host.
    Internal,
    /// The module is at one of the host's per-module quotas (ABI 1.3); the message names it.
    /// Sent for a `delay`, `stop_signal` or `stream_send` (a refused request, watch or stream
    /// gets a `429` `response` instead).
    Quota,
    /// A code this version of the ABI does not know (sent by a newer host).
    #[serde(other)]
    Unknown,
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ErrorCode::Connect => "connect",
            ErrorCode::Timeout => "timeout",
            ErrorCode::Stream => "stream",
            ErrorCode::TooLarge => "too_large",
            ErrorCode::InvalidRequest => "invalid_request",
            ErrorCode::Upgrade => "upgrade",
            ErrorCode::Internal => "internal",
            ErrorCode::Quota => "quota",
            ErrorCode::Unknown => "unknown",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completion_json_matches_the_spec() {
        let c = Completion::Response {
            status: 404,
            headers: vec![("content-type".into(), "application/json".into())],
        };
        assert_eq!(
            serde_json::to_string(&c).expect("serialises"),
            r#"{"kind":"response","status":404,"headers":[["content-type","application/json"]]}"#
        );
        let e = Completion::Error(OpError::new(ErrorCode::Connect, "refused"));
        assert_eq!(
            serde_json::to_string(&e).expect("serialises"),
            r#"{"kind":"error","code":"connect","message":"refused"}"#
        );
        assert_eq!(
            serde_json::to_string(&Completion::WatchEvent {}).expect("serialises"),
            r#"{"kind":"watch_event"}"#
        );
    }

    #[test]
    fn unknown_error_codes_decode_as_unknown() {
        let e: Completion =
            serde_json::from_str(r#"{"kind":"error","code":"moon_phase","message":"m"}"#)
                .expect("decodes");
        assert_eq!(e, Completion::Error(OpError::new(ErrorCode::Unknown, "m")));
    }

    #[test]
    fn upgrade_errors_carry_the_failed_check() {
        let e = Completion::Error(OpError::upgrade(
            UpgradeFailure::ProtocolSwitch { status: 200 },
            "failed to switch protocol: 200 OK",
        ));
        let json = serde_json::to_string(&e).expect("serialises");
        assert_eq!(
            json,
            r#"{"kind":"error","code":"upgrade","message":"failed to switch protocol: 200 OK","upgrade":{"check":"protocol_switch","status":200}}"#
        );
        assert_eq!(
            serde_json::from_str::<Completion>(&json).expect("decodes"),
            e
        );
        for (check, name) in [
            (
                UpgradeFailure::MissingUpgradeWebSocketHeader,
                "missing_upgrade_websocket_header",
            ),
            (
                UpgradeFailure::MissingConnectionUpgradeHeader,
                "missing_connection_upgrade_header",
            ),
            (
                UpgradeFailure::SecWebSocketAcceptKeyMismatch,
                "sec_websocket_accept_key_mismatch",
            ),
            (
                UpgradeFailure::SecWebSocketProtocolMismatch,
                "sec_websocket_protocol_mismatch",
            ),
            (UpgradeFailure::GetPendingUpgrade, "get_pending_upgrade"),
        ] {
            let json = serde_json::to_string(&check).expect("serialises");
            assert_eq!(json, format!(r#"{{"check":"{name}"}}"#));
            assert_eq!(
                serde_json::from_str::<UpgradeFailure>(&json).expect("decodes"),
                check
            );
        }
        // A check of a newer host, and a 1.1 header without the field.
        let newer: OpError = serde_json::from_str(
            r#"{"code":"upgrade","message":"m","upgrade":{"check":"extension_mismatch","x":1}}"#,
        )
        .expect("decodes");
        assert_eq!(newer.upgrade, Some(UpgradeFailure::Unknown));
        let old: OpError =
            serde_json::from_str(r#"{"code":"connect","message":"m"}"#).expect("decodes");
        assert_eq!(old, OpError::new(ErrorCode::Connect, "m"));
    }

    #[test]
    fn finality_follows_the_spec() {
        assert!(
            !Completion::Head {
                status: 200,
                headers: vec![]
            }
            .is_final()
        );
        assert!(!Completion::Line {}.is_final());
        assert!(!Completion::WatchEvent {}.is_final());
        for c in [
            Completion::Response {
                status: 200,
                headers: vec![],
            },
            Completion::End {},
            Completion::Elapsed {},
            Completion::Stop {},
            Completion::Error(OpError::new(ErrorCode::Timeout, "t")),
        ] {
            assert!(c.is_final(), "{c:?}");
        }
    }

    #[test]
    fn watch_request_defaults_optional_fields() {
        let w: WatchRequest =
            serde_json::from_str(r#"{"path":"/api/v1/pods","resource_version":"0"}"#)
                .expect("decodes");
        assert_eq!(w.label_selector, None);
        assert!(!w.bookmarks && !w.metadata_only && !w.send_initial_events);
    }
}
