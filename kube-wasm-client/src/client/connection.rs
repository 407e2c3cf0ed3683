//! WebSocket connections (`ws` feature), as `kube::Client::connect` and
//! `kube::client::Connection` in kube 5.0 — over the ABI's duplex stream (SPEC.md, "Duplex
//! streams"): the host does the upgrade with kube's own client and relays whole messages.

use super::Client;
use super::api_errors::check_status;
use super::host_error::{Phase, from_op_error, protocol_violation};
use super::send::status_code;
use super::upgrade::UpgradeConnectionError;
use crate::{Error, Result};
use kube_wasm_abi::stream::PROTOCOL_V5;
use kube_wasm_abi::{Completion, ErrorCode, OpError, StreamOpen, StreamSend};
use kube_wasm_guest::Op;

/// Messages the host may deliver ahead of the guest. Each message read grants one more, so
/// at most this many wait in the guest for a slow reader.
const WINDOW: u32 = 16;

/// A WebSocket connection to the API server, as `kube::client::Connection`: the value
/// [`Client::connect`] returns.
///
/// kube's `into_stream()` (a `tokio_tungstenite::WebSocketStream`) has no counterpart: a
/// guest has no socket. `exec`, `attach` and `portforward` use the connection internally.
/// Dropping it closes the websocket on the host.
#[derive(Debug)]
pub struct Connection {
    op: Op,
    protocol: String,
    finished: bool,
}

/// One message received on a [`Connection`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Message {
    /// A binary message.
    Binary(Vec<u8>),
    /// A text message.
    Text(Vec<u8>),
}

impl Client {
    /// Makes a WebSocket connection for `request` (a `GET` of an `exec`, `attach` or
    /// `portforward` URL, as kube-core's request builders make it), as kube's
    /// `Client::connect`: the host offers the subprotocols `v5.channel.k8s.io` and
    /// `v4.channel.k8s.io`, authenticates and relays.
    ///
    /// # Errors
    /// As kube 5.0's, for the same server answer:
    /// - [`Error::Api`] when the API server refuses the upgrade with an error status (403,
    ///   404, a pod without the container, …): its `Status`, or one synthesised from the
    ///   status and body text (and [`Error::FromUtf8`] for a body that is not UTF-8);
    /// - [`Error::UpgradeConnection`] when it answers otherwise and the handshake fails:
    ///   [`UpgradeConnectionError::ProtocolSwitch`] for any other status than `101`, or the
    ///   header check that failed on a `101`;
    /// - [`Error::Service`] when the host cannot reach it, or for a failed check this guest
    ///   does not know; [`Error::BuildRequest`] for a header that is not text.
    pub async fn connect(&self, request: http::Request<Vec<u8>>) -> Result<Connection> {
        self.connect_with_keepalive(request, 0).await
    }

    /// [`connect`](Self::connect), with the host pinging the server every `keepalive_secs`
    /// seconds (0: never), as kube's exec and attach sessions do every 60 s.
    pub(crate) async fn connect_with_keepalive(
        &self,
        request: http::Request<Vec<u8>>,
        keepalive_secs: u32,
    ) -> Result<Connection> {
        let (envelope, _body) = self.envelope(request, kube_wasm_abi::ResponseMode::Whole)?;
        let mut op = Op::stream_open(&StreamOpen {
            method: envelope.method,
            uri: envelope.uri,
            headers: envelope.headers,
            credit: WINDOW,
            keepalive_secs,
        });
        let Some(delivery) = op.next_delivery().await else {
            return Err(protocol_violation("the stream ended before it opened"));
        };
        match delivery.completion {
            Completion::Opened { protocol } => Ok(Connection {
                op,
                protocol,
                finished: false,
            }),
            Completion::Response { status, .. } => {
                let status = status_code(status)?;
                check_status(status, delivery.body())?;
                if status == http::StatusCode::SWITCHING_PROTOCOLS {
                    return Err(protocol_violation(
                        "a `response` of 101 for an upgrade that did not open",
                    ));
                }
                // Not an error status, not a switch: kube's handshake check refuses it.
                Err(Error::UpgradeConnection(
                    UpgradeConnectionError::ProtocolSwitch(status),
                ))
            }
            Completion::Error(error) => Err(connect_error(error)),
            other => Err(protocol_violation(format_args!(
                "{other:?} before the stream opened"
            ))),
        }
    }
}

/// A host failure of a `stream_open` before it opened: [`Error::UpgradeConnection`] for an
/// `upgrade` error naming a check this guest knows, else the table of `host_error`.
fn connect_error(error: OpError) -> Error {
    if error.code != ErrorCode::Upgrade {
        return from_op_error(error, Phase::Request);
    }
    match UpgradeConnectionError::from_host(error) {
        Ok(upgrade) => Error::UpgradeConnection(upgrade),
        Err(unknown) => from_op_error(unknown, Phase::Request),
    }
}

impl Connection {
    /// Whether the negotiated subprotocol supports closing one channel (the close channel 255
    /// of `v5.channel.k8s.io`), as kube's `Connection::supports_stream_close`.
    pub fn supports_stream_close(&self) -> bool {
        self.protocol == PROTOCOL_V5
    }

    /// The next message; `None` once the websocket has closed. Cancel-safe.
    ///
    /// # Errors
    /// [`Error::ReadEvents`](crate::Error::ReadEvents) (or another host failure) if the
    /// connection broke off.
    pub(crate) async fn recv(&mut self) -> Option<Result<Message>> {
        if self.finished {
            return None;
        }
        let Some(delivery) = self.op.next_delivery().await else {
            self.finished = true;
            return None;
        };
        match delivery.completion {
            Completion::Message { text } => {
                self.op.grant_credit(1);
                let body = delivery.into_body();
                Some(Ok(if text {
                    Message::Text(body)
                } else {
                    Message::Binary(body)
                }))
            }
            Completion::Closed { .. } => {
                self.finished = true;
                None
            }
            Completion::Error(error) => {
                self.finished = true;
                Some(Err(from_op_error(error, Phase::Stream)))
            }
            other => {
                self.finished = true;
                Some(Err(protocol_violation(format_args!(
                    "{other:?} on an open stream"
                ))))
            }
        }
    }

    /// A handle that sends on this connection while it is being read elsewhere. Its sends
    /// fail once the connection is dropped.
    pub(crate) fn sender(&self) -> Sender {
        Sender {
            stream: self.op.id(),
        }
    }

    /// Sends one binary message and waits until the host has handed it to the websocket.
    ///
    /// # Errors
    /// The host's failure if the connection is gone.
    pub(crate) async fn send_binary(&self, payload: &[u8]) -> Result<()> {
        self.sender().send_binary(payload).await
    }

    /// Sends a normal close frame (see [`Sender::close`]).
    ///
    /// # Errors
    /// The host's failure if the connection is gone.
    pub(crate) async fn close(&self) -> Result<()> {
        self.sender().close().await
    }
}

/// The sending side of a [`Connection`], by its stream's op id.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sender {
    stream: kube_wasm_abi::OpId,
}

impl Sender {
    /// Sends one binary message and waits until the host has handed it to the websocket
    /// (one message at a time: the host's pace is the guest's).
    ///
    /// # Errors
    /// The host's failure if the connection is gone.
    pub(crate) async fn send_binary(&self, payload: &[u8]) -> Result<()> {
        self.send(&StreamSend::Binary {}, payload).await
    }

    /// Sends a normal close frame; the connection still delivers what the server sends
    /// until it closes too.
    ///
    /// # Errors
    /// The host's failure if the connection is gone.
    pub(crate) async fn close(&self) -> Result<()> {
        let close = StreamSend::Close {
            code: Some(1000),
            reason: String::new(),
        };
        self.send(&close, b"").await
    }

    async fn send(&self, message: &StreamSend, payload: &[u8]) -> Result<()> {
        let mut op = Op::stream_send(self.stream, message, payload);
        match op.next_delivery().await.map(|d| d.completion) {
            Some(Completion::Sent {}) => Ok(()),
            Some(Completion::Error(error)) => Err(from_op_error(error, Phase::Stream)),
            other => Err(protocol_violation(format_args!(
                "{other:?} for a stream send"
            ))),
        }
    }
}
