//! Duplex streams (ABI 1.1, SPEC.md "Duplex streams"): a websocket the host opens to the API
//! server on the guest's behalf and relays frame by frame, for exec, attach and portforward.

use serde::{Deserialize, Serialize};

/// Messages the host delivers on a new stream before the guest grants more, unless the
/// [`StreamOpen`] header says otherwise.
pub const DEFAULT_STREAM_CREDIT: u32 = 16;

/// The header of a `stream_open` frame (the frame body must be empty): the HTTP request to
/// upgrade to a websocket. The host adds the upgrade headers and the subprotocols it offers
/// (`v5.channel.k8s.io`, `v4.channel.k8s.io`, as kube's `Client::connect` does) and
/// authenticates; the guest names only the resource.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamOpen {
    /// HTTP method of the upgrade request; `GET` when absent (the only method the API server
    /// upgrades for exec/attach/portforward over websockets).
    #[serde(default = "get")]
    pub method: String,
    /// Path and query relative to the API server root, starting with `/`, e.g.
    /// `/api/v1/namespaces/ns/pods/p/exec?command=ls&stdout=true`.
    pub uri: String,
    /// Extra request headers as `(name, value)` pairs; `authorization` and the websocket
    /// handshake headers are the host's and are dropped.
    #[serde(default)]
    pub headers: Vec<(String, String)>,
    /// How many `message` completions the host may deliver before the guest grants more
    /// with `stream_credit` (see [`DEFAULT_STREAM_CREDIT`]).
    #[serde(default = "default_credit")]
    pub credit: u32,
    /// Seconds between the websocket pings the host sends to keep an idle connection alive,
    /// counted from the open; 0 (the default) for none. kube 5.0's exec and attach sessions
    /// ping every 60 s; its portforward and its bare `Client::connect` never do.
    #[serde(default)]
    pub keepalive_secs: u32,
}

fn get() -> String {
    "GET".to_owned()
}

fn default_credit() -> u32 {
    DEFAULT_STREAM_CREDIT
}

/// The header of a `stream_send` frame: one websocket message from the guest. The frame body
/// is the message payload (empty for `close`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum StreamSend {
    /// A binary message: the body.
    Binary {},
    /// A text message: the body, which must be UTF-8.
    Text {},
    /// A close frame with an optional status code and reason; the guest sends nothing after
    /// it. The stream op still ends with `closed` once the server has closed too.
    Close {
        /// The websocket close code (1000 = normal), if any.
        #[serde(default)]
        code: Option<u16>,
        /// The close reason (at most 123 bytes of UTF-8).
        #[serde(default)]
        reason: String,
    },
}

/// The subprotocol the host negotiated, as sent in [`crate::Completion::Opened`].
pub const PROTOCOL_V4: &str = "v4.channel.k8s.io";
/// The Kubernetes channel protocol version 5, which adds the close channel (255).
pub const PROTOCOL_V5: &str = "v5.channel.k8s.io";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_open_defaults_method_and_credit() {
        let open: StreamOpen =
            serde_json::from_str(r#"{"uri":"/api/v1/namespaces/n/pods/p/attach"}"#)
                .expect("decodes");
        assert_eq!(open.method, "GET");
        assert_eq!(open.credit, DEFAULT_STREAM_CREDIT);
        assert_eq!(open.keepalive_secs, 0);
        assert!(open.headers.is_empty());
    }

    #[test]
    fn stream_send_json_matches_the_spec() {
        assert_eq!(
            serde_json::to_string(&StreamSend::Binary {}).expect("serialises"),
            r#"{"kind":"binary"}"#
        );
        let close: StreamSend =
            serde_json::from_str(r#"{"kind":"close","code":1000}"#).expect("decodes");
        assert_eq!(
            close,
            StreamSend::Close {
                code: Some(1000),
                reason: String::new()
            }
        );
        assert!(serde_json::from_str::<StreamSend>(r#"{"kind":"ping"}"#).is_err());
    }
}
