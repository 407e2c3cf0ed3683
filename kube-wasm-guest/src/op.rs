//! An operation in flight: submitted to the host when created, observed as a stream of
//! completions, cancelled on the host when dropped early.

pub use crate::delivery::Delivery;
use crate::{imports, reactor};
use futures_core::Stream;
use kube_wasm_abi::{HttpRequest, OpId, StreamOpen, StreamSend, WatchRequest, encode_frame};
use std::pin::Pin;
use std::task::{Context, Poll};

/// An operation submitted to the host, and the stream of its completions.
///
/// The stream yields every completion in the order the host sent it and ends after the final
/// one. Dropping an `Op` before its final completion cancels the host's work (the request is
/// aborted, the watch closed, the timer dropped); completions not yet polled are discarded.
#[derive(Debug)]
#[must_use = "an Op is cancelled as soon as it is dropped"]
pub struct Op {
    id: OpId,
}

impl Op {
    /// Sends one HTTP request; `body` is the raw request body.
    pub fn http(request: &HttpRequest, body: &[u8]) -> Self {
        Self::track(imports::http_request(&encode_frame(request, body)))
    }

    /// Starts a watch.
    pub fn watch(request: &WatchRequest) -> Self {
        Self::track(imports::watch(&encode_frame(request, &[])))
    }

    /// Opens a duplex stream (ABI 1.1): completes with `opened`, then `message`s (at most
    /// `request.credit` before [`Op::grant_credit`]), then `closed`; or a final `response`
    /// (upgrade refused) or `error`.
    pub fn stream_open(request: &StreamOpen) -> Self {
        Self::track(imports::stream_open(&encode_frame(request, &[])))
    }

    /// Queues one message on the open stream `stream` (ABI 1.1): completes with `sent` once
    /// the host handed it to the websocket, or `error`.
    pub fn stream_send(stream: OpId, message: &StreamSend, body: &[u8]) -> Self {
        Self::track(imports::stream_send(stream, &encode_frame(message, body)))
    }

    /// Lets the host deliver `n` more `message` completions on this stream op (ABI 1.1).
    /// Returns whether the host still knew the stream.
    pub fn grant_credit(&self, n: u32) -> bool {
        imports::stream_credit(self.id, n)
    }

    /// Starts a timer that completes with
    /// [`Completion::Elapsed`](kube_wasm_abi::Completion::Elapsed) after `millis` ms.
    pub fn delay(millis: u64) -> Self {
        Self::track(imports::delay(millis))
    }

    /// Completes with [`Completion::Stop`](kube_wasm_abi::Completion::Stop) when the host
    /// asks the module to stop.
    pub fn stop_signal() -> Self {
        Self::track(imports::stop_signal())
    }

    fn track(id: OpId) -> Self {
        reactor::register(id);
        Self { id }
    }

    /// The host's id of this op.
    pub fn id(&self) -> OpId {
        self.id
    }

    /// Polls for the next completion; `Ready(None)` after the final one.
    pub fn poll_next_delivery(&mut self, cx: &mut Context<'_>) -> Poll<Option<Delivery>> {
        reactor::poll_next(self.id, cx)
    }

    /// The next completion; `None` after the final one.
    pub async fn next_delivery(&mut self) -> Option<Delivery> {
        std::future::poll_fn(|cx| self.poll_next_delivery(cx)).await
    }
}

impl Stream for Op {
    type Item = Delivery;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Delivery>> {
        self.get_mut().poll_next_delivery(cx)
    }
}

impl Drop for Op {
    fn drop(&mut self) {
        if reactor::forget(self.id) {
            imports::cancel(self.id);
        }
    }
}
