//! Duplex streams (ABI 1.1, SPEC.md "Duplex streams"): `stream_open`, `stream_send`,
//! `stream_credit`.
//!
//! The host does the websocket upgrade with kube's own [`kube::Client::connect`] (auth, TLS,
//! subprotocol negotiation) and relays whole messages; the Kubernetes channel protocol is the
//! guest's business. Toward the guest, the stream task delivers a `message` only while the
//! guest has granted credit; toward the API server, each `stream_send` is an op completed with
//! `sent` once the websocket accepted the message, so a guest that awaits it cannot outrun
//! the connection.
//!
//! Like every request, an upgrade passes the module's permissions first, judged on its decoded
//! URI as the API server judges it, with `create` needed besides `get` for `pods/exec`,
//! `pods/attach` and `pods/portforward` (a denied one is a final 403 `response`, and nothing
//! reaches the API server); it goes out with the URI judged, as the module's identity: the
//! guest's identity-bearing headers are dropped.
//!
//! A stream's task owns the websocket; dropping it (cancel, or the module ending) drops the
//! connection.

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use http::header::{HeaderName, HeaderValue};
use kube_wasm_abi::names::{
    IMPORT_MODULE, IMPORT_STREAM_CREDIT, IMPORT_STREAM_OPEN, IMPORT_STREAM_SEND,
};
use kube_wasm_abi::stream::{PROTOCOL_V4, PROTOCOL_V5};
use kube_wasm_abi::{Completion, ErrorCode, OpError, StreamOpen, StreamSend, UpgradeFailure};
use tokio::sync::{Semaphore, mpsc, oneshot};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use wasmtime::{Caller, Linker};

use super::op::{Admission, admit_op, read_frame, spawn_op, start_op};
use super::respond::send_denied;
use super::{op_from_wasm, op_to_wasm};
use crate::runtime::ops::{CompletionSink, ModuleGone, OpKind, Outgoing, StreamHandle};
use crate::runtime::state::{HostState, OpContext};
use crate::upstream::client as upstream;

/// Headers the host sets for the websocket handshake; the guest's values are dropped.
const HANDSHAKE_HEADERS: &[&str] = &[
    "connection",
    "upgrade",
    "sec-websocket-version",
    "sec-websocket-key",
    "sec-websocket-protocol",
    "sec-websocket-extensions",
];

/// The longest close reason a websocket close frame carries, in bytes (125 bytes of control
/// frame payload, less the 2-byte code).
const MAX_CLOSE_REASON: usize = 123;

/// Adds `stream_open`, `stream_send` and `stream_credit` to `linker`.
///
/// # Errors
/// If an import is already defined.
pub fn add_to_linker(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    linker.func_wrap(IMPORT_MODULE, IMPORT_STREAM_OPEN, stream_open)?;
    linker.func_wrap(IMPORT_MODULE, IMPORT_STREAM_SEND, stream_send)?;
    linker.func_wrap(IMPORT_MODULE, IMPORT_STREAM_CREDIT, stream_credit)?;
    Ok(())
}

fn stream_open(mut caller: Caller<'_, HostState>, ptr: i32, len: i32) -> wasmtime::Result<i64> {
    let open = read_frame::<StreamOpen>(&mut caller, IMPORT_STREAM_OPEN, ptr, len)?.header;
    let mut request = build_upgrade_request(&open);
    let keepalive = Duration::from_secs(open.keepalive_secs.into());
    let (outgoing, outgoing_rx) = mpsc::unbounded_channel();
    let credit = Arc::new(Semaphore::new(permits(open.credit)));
    let state = caller.data_mut();
    state.streams.forget_finished(&state.ops);
    let denied = request
        .as_mut()
        .ok()
        .and_then(|r| state.ctx.access.authorize_websocket(r).err());
    let relay = Relay {
        outgoing: outgoing_rx,
        credit: credit.clone(),
        keepalive,
    };
    let started = start_op(state, OpKind::Stream, 0, |ctx, sink, _| async move {
        match denied {
            Some(denied) => send_denied(&denied, &ctx.warnings, &sink).await,
            None => relay_stream(ctx, request, relay, &sink).await,
        }
    })?;
    if started.admitted {
        state
            .streams
            .insert(started.id, StreamHandle { outgoing, credit });
    }
    Ok(op_to_wasm(started.id))
}

fn stream_send(
    mut caller: Caller<'_, HostState>,
    stream: i64,
    ptr: i32,
    len: i32,
) -> wasmtime::Result<i64> {
    let argument = read_frame::<StreamSend>(&mut caller, IMPORT_STREAM_SEND, ptr, len)?;
    let body_bytes = argument.body.len();
    let stream = op_from_wasm(stream);
    let message = to_message(argument.header, &argument.body);
    let state = caller.data_mut();
    let held = match admit_op(state, OpKind::StreamSend, body_bytes)? {
        Admission::Admitted(held) => held,
        Admission::Refused(id) => return Ok(op_to_wasm(id)),
    };
    let queued = match (message, state.streams.get(stream)) {
        (Err(err), _) => Err(err),
        (Ok(_), None) => Err(OpError::new(
            ErrorCode::InvalidRequest,
            format!("op {stream} is not an open stream of this module"),
        )),
        (Ok(message), Some(handle)) if state.ops.is_live(stream) => {
            let (done, done_rx) = oneshot::channel();
            handle
                .outgoing
                .send(Outgoing { message, done })
                .map(|()| done_rx)
                .map_err(|_| OpError::new(ErrorCode::Stream, "the stream has ended"))
        }
        (Ok(_), Some(_)) => Err(OpError::new(ErrorCode::Stream, "the stream has ended")),
    };
    let id = spawn_op(
        state,
        OpKind::StreamSend,
        held,
        |_, sink, held| async move {
            // The message's bytes count against the module's budget until the websocket took it.
            let outcome = match queued {
                Ok(done) => done.await.unwrap_or_else(|_| {
                    Err(OpError::new(ErrorCode::Stream, "the stream has ended"))
                }),
                Err(err) => Err(err),
            };
            drop(held);
            let completion = match outcome {
                Ok(()) => Completion::Sent {},
                Err(err) => Completion::Error(err),
            };
            sink.send(&completion, b"").await
        },
    );
    Ok(op_to_wasm(id))
}

fn stream_credit(mut caller: Caller<'_, HostState>, stream: i64, n: i32) -> i32 {
    let stream = op_from_wasm(stream);
    let state = caller.data_mut();
    match state.streams.get(stream) {
        Some(handle) if state.ops.is_live(stream) => {
            let n = usize::try_from(n).unwrap_or(0);
            let room = Semaphore::MAX_PERMITS.saturating_sub(handle.credit.available_permits());
            handle.credit.add_permits(n.min(room));
            1
        }
        _ => 0,
    }
}

fn permits(credit: u32) -> usize {
    usize::try_from(credit).unwrap_or(Semaphore::MAX_PERMITS)
}

/// Turns a `stream_send` header and its body into the websocket message sent: `binary` the
/// body as is, `text` the body as UTF-8, `close` a close frame with the code and reason.
///
/// # Errors
/// `invalid_request` for a `text` body that is not UTF-8, or a close reason over the 123
/// bytes a websocket close frame carries.
pub fn to_message(send: StreamSend, body: &[u8]) -> Result<Message, OpError> {
    Ok(match send {
        StreamSend::Binary {} => Message::binary(body.to_vec()),
        StreamSend::Text {} => {
            let text = String::from_utf8(body.to_vec()).map_err(|e| {
                OpError::new(
                    ErrorCode::InvalidRequest,
                    format!("text message is not UTF-8: {e}"),
                )
            })?;
            Message::text(text)
        }
        StreamSend::Close { reason, .. } if reason.len() > MAX_CLOSE_REASON => {
            return Err(OpError::new(
                ErrorCode::InvalidRequest,
                format!(
                    "close reason of {} bytes: a websocket allows {MAX_CLOSE_REASON}",
                    reason.len()
                ),
            ));
        }
        StreamSend::Close { code, reason } => Message::Close(code.map(|code| CloseFrame {
            code: CloseCode::from(code),
            reason: reason.into(),
        })),
    })
}

/// Turns a `stream_open` header into the request kube's `Client::connect` upgrades.
///
/// # Errors
/// `invalid_request` for a bad method, a URI that is not a path starting with `/`, or a bad
/// header.
pub fn build_upgrade_request(open: &StreamOpen) -> Result<http::Request<Vec<u8>>, OpError> {
    let invalid = |message: String| OpError::new(ErrorCode::InvalidRequest, message);
    let method = http::Method::from_bytes(open.method.as_bytes())
        .map_err(|e| invalid(format!("bad method {:?}: {e}", open.method)))?;
    if !open.uri.starts_with('/') {
        return Err(invalid(format!(
            "uri {:?} must be a path relative to the API server root, starting with `/`",
            open.uri
        )));
    }
    let uri = http::uri::PathAndQuery::from_str(&open.uri)
        .map_err(|e| invalid(format!("bad uri {:?}: {e}", open.uri)))?;
    let mut request = http::Request::new(Vec::new());
    *request.method_mut() = method;
    *request.uri_mut() = http::Uri::from(uri);
    for (name, value) in &open.headers {
        let name = HeaderName::from_str(name)
            .map_err(|e| invalid(format!("bad header name {name:?}: {e}")))?;
        if upstream::is_host_only_header(&name) || HANDSHAKE_HEADERS.contains(&name.as_str()) {
            continue;
        }
        let value = HeaderValue::from_str(value)
            .map_err(|e| invalid(format!("bad value for header {name}: {e}")))?;
        request.headers_mut().append(name, value);
    }
    Ok(request)
}

/// The final completion (and its body) for a failed kube `Client::connect`, so that the guest
/// can return the `kube::Error` kube returned here (SPEC.md, "A failed upgrade"):
///
/// - `Api` (kube's answer to a 4xx/5xx): a `response` with the `Status` as the JSON body and
///   its code as the status — or 500 when that code is not a 4xx/5xx one (a `Status` body
///   without a code), so the guest still sees an error status;
/// - `UpgradeConnection`: an `upgrade` error naming the failed check;
/// - anything else: the error [`upstream::request_error`] makes of it.
fn connect_failure(err: kube::Error) -> (Completion, Vec<u8>) {
    use kube::client::UpgradeConnectionError as Upgrade;
    let error = match err {
        kube::Error::Api(status) => {
            let body = serde_json::to_vec(&status).unwrap_or_default();
            let completion = Completion::Response {
                status: if (400..=599).contains(&status.code) {
                    status.code
                } else {
                    500
                },
                headers: vec![("content-type".into(), "application/json".into())],
            };
            return (completion, body);
        }
        kube::Error::UpgradeConnection(upgrade) => {
            let check = match &upgrade {
                Upgrade::ProtocolSwitch(status) => UpgradeFailure::ProtocolSwitch {
                    status: status.as_u16(),
                },
                Upgrade::MissingUpgradeWebSocketHeader => {
                    UpgradeFailure::MissingUpgradeWebSocketHeader
                }
                Upgrade::MissingConnectionUpgradeHeader => {
                    UpgradeFailure::MissingConnectionUpgradeHeader
                }
                Upgrade::SecWebSocketAcceptKeyMismatch => {
                    UpgradeFailure::SecWebSocketAcceptKeyMismatch
                }
                Upgrade::SecWebSocketProtocolMismatch => {
                    UpgradeFailure::SecWebSocketProtocolMismatch
                }
                Upgrade::GetPendingUpgrade(_) => UpgradeFailure::GetPendingUpgrade,
            };
            let message = match &upgrade {
                Upgrade::GetPendingUpgrade(http) => upstream::error_chain(http),
                other => other.to_string(),
            };
            OpError::upgrade(check, message)
        }
        other => upstream::request_error(other),
    };
    (Completion::Error(error), Vec::new())
}

/// The host-side ends a stream task relays with.
struct Relay {
    /// What the guest sends.
    outgoing: mpsc::UnboundedReceiver<Outgoing>,
    /// The guest's credit for deliveries.
    credit: Arc<Semaphore>,
    /// Time between keepalive pings; zero for none.
    keepalive: Duration,
}

/// Waits for the next keepalive ping is due; never, without keepalive.
async fn keepalive_tick(interval: &mut Option<tokio::time::Interval>) {
    match interval {
        Some(interval) => {
            interval.tick().await;
        }
        None => std::future::pending().await,
    }
}

/// Opens one stream and relays it until it closes, fails or the op is dropped.
///
/// # Errors
/// [`ModuleGone`] if the module ended meanwhile.
async fn relay_stream(
    ctx: Arc<OpContext>,
    request: Result<http::Request<Vec<u8>>, OpError>,
    relay: Relay,
    sink: &CompletionSink,
) -> Result<(), ModuleGone> {
    let Relay {
        mut outgoing,
        credit,
        keepalive,
    } = relay;
    let request = match request {
        Ok(request) => request,
        Err(err) => return sink.send(&Completion::Error(err), b"").await,
    };
    let connection = match ctx.upstream.connect(request).await {
        Ok(connection) => connection,
        Err(err) => {
            let (completion, body) = connect_failure(err);
            return sink.send(&completion, &body).await;
        }
    };
    let protocol = if connection.supports_stream_close() {
        PROTOCOL_V5
    } else {
        PROTOCOL_V4
    };
    tracing::debug!(op = sink.op(), protocol, "stream opened");
    sink.send(
        &Completion::Opened {
            protocol: protocol.to_owned(),
        },
        b"",
    )
    .await?;
    let (mut ws_sink, mut ws_stream) = connection.into_stream().split();
    let mut pings = (!keepalive.is_zero()).then(|| {
        let mut interval =
            tokio::time::interval_at(tokio::time::Instant::now() + keepalive, keepalive);
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        interval
    });
    let writer = async {
        loop {
            tokio::select! {
                next = outgoing.recv() => {
                    let Some(Outgoing { message, done }) = next else { break };
                    let result = ws_sink
                        .send(message)
                        .await
                        .map_err(|e| OpError::new(ErrorCode::Stream, e.to_string()));
                    let failed = result.is_err();
                    let _ = done.send(result);
                    if failed {
                        break;
                    }
                }
                () = keepalive_tick(&mut pings) => {
                    // A failed ping means a broken connection, which the reader reports.
                    if ws_sink.send(Message::Ping(Default::default())).await.is_err() {
                        break;
                    }
                }
            }
        }
        // Keep the reader going: the stream ends when the server closes it.
        std::future::pending::<()>().await;
    };
    let reader = async {
        let mut close: Option<CloseFrame> = None;
        while let Some(message) = ws_stream.next().await {
            let (text, payload) = match message {
                Ok(Message::Binary(bytes)) => (false, bytes.to_vec()),
                Ok(Message::Text(text)) => (true, text.as_bytes().to_vec()),
                Ok(Message::Close(frame)) => {
                    close = frame;
                    continue;
                }
                Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_)) => continue,
                Err(err) => {
                    let err = OpError::new(ErrorCode::Stream, upstream::error_chain(&err));
                    return sink.send(&Completion::Error(err), b"").await;
                }
            };
            match credit.acquire().await {
                Ok(permit) => permit.forget(),
                Err(_closed) => return Err(ModuleGone),
            }
            sink.send(&Completion::Message { text }, &payload).await?;
        }
        let (code, reason) = match close {
            Some(frame) => (Some(u16::from(frame.code)), frame.reason.to_string()),
            None => (None, String::new()),
        };
        sink.send(&Completion::Closed { code, reason }, b"").await
    };
    tokio::select! {
        result = reader => result,
        () = writer => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(uri: &str, headers: &[(&str, &str)]) -> StreamOpen {
        StreamOpen {
            method: "GET".into(),
            uri: uri.into(),
            headers: headers
                .iter()
                .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
                .collect(),
            credit: 4,
            keepalive_secs: 0,
        }
    }

    #[test]
    fn upgrade_request_drops_auth_impersonation_and_handshake_headers() {
        let request = build_upgrade_request(&open(
            "/api/v1/namespaces/n/pods/p/exec?command=ls&stdout=true",
            &[
                ("authorization", "Bearer guest"),
                ("impersonate-user", "system:admin"),
                ("Impersonate-Group", "system:masters"),
                ("sec-websocket-protocol", "evil"),
                ("x-trace", "1"),
            ],
        ))
        .expect("valid");
        assert_eq!(
            request.uri(),
            "/api/v1/namespaces/n/pods/p/exec?command=ls&stdout=true"
        );
        let names: Vec<_> = request.headers().keys().map(|k| k.as_str()).collect();
        assert_eq!(names, ["x-trace"]);
    }

    #[test]
    fn bad_upgrade_requests_are_invalid_request_errors() {
        for bad in [
            open("http://elsewhere/x", &[]),
            open("/x", &[("bad name", "v")]),
        ] {
            let err = build_upgrade_request(&bad).expect_err("refused");
            assert_eq!(err.code, ErrorCode::InvalidRequest);
        }
    }

    #[test]
    fn messages_follow_the_send_header() {
        assert_eq!(
            to_message(StreamSend::Binary {}, b"\x00hi").expect("binary"),
            Message::binary(b"\x00hi".to_vec())
        );
        assert_eq!(
            to_message(StreamSend::Text {}, b"hi").expect("text"),
            Message::text("hi")
        );
        let err = to_message(StreamSend::Text {}, b"\xff").expect_err("not UTF-8");
        assert_eq!(err.code, ErrorCode::InvalidRequest);
        let long = StreamSend::Close {
            code: Some(1000),
            reason: "x".repeat(124),
        };
        let err = to_message(long, b"").expect_err("reason too long");
        assert_eq!(err.code, ErrorCode::InvalidRequest);
        let Message::Close(Some(frame)) = to_message(
            StreamSend::Close {
                code: Some(1000),
                reason: "done".into(),
            },
            b"",
        )
        .expect("close") else {
            panic!("a close frame");
        };
        assert_eq!(
            (u16::from(frame.code), frame.reason.as_str()),
            (1000, "done")
        );
    }
}
