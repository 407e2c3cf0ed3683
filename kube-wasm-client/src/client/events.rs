//! A stream of watch events read from one host op: `watch_event` completions of a `watch`
//! op, or `line` completions of a `lines`-mode `http_request`.

use super::api_errors::check_status;
use super::host_error::{Phase, from_op_error, protocol_violation};
use super::send::status_code;
use crate::{Error, Result};
use futures::Stream;
use kube_core::{Status, WatchEvent};
use kube_wasm_abi::Completion;
use kube_wasm_guest::Op;
use serde::de::DeserializeOwned;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

/// Which completions carry the events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EventSource {
    /// A `watch` op: one `watch_event` per event.
    Watch,
    /// A `lines`-mode `http_request` whose head has been read: one `line` per event.
    Lines,
}

/// Yields one `Result<WatchEvent<T>>` per event the host delivers, in order, as kube 5.0's
/// `Client::request_events` stream does:
///
/// - an event that parses as `WatchEvent<T>` (`ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK`,
///   `ERROR` with its `Status`) is yielded as `Ok`;
/// - an empty or truncated one is skipped (kube skips EOF parse errors);
/// - one that is not a watch event but parses as a `Status` is `Err(Error::Api)`; anything
///   else is `Err(Error::SerdeError)` — the stream goes on after both;
/// - `end` ends the stream;
/// - an `error` completion yields one `Err` (`stream` → [`Error::ReadEvents`], others per
///   `host_error`) and ends the stream.
///
/// A refusal before streaming (403, 404, …) never reaches the stream: [`await_head`] turns it
/// into the `Err` of the call that started the watch, as in kube.
///
/// Dropping the stream before it ended cancels the op: the host closes the upstream watch.
/// The stream is `Send`, `Sync` and `Unpin` whatever `T` is.
#[must_use = "streams do nothing unless polled"]
pub(crate) struct EventStream<T> {
    /// `None` once the stream has ended.
    op: Option<Op>,
    source: EventSource,
    _event: PhantomData<fn() -> T>,
}

impl<T> EventStream<T> {
    /// Reads the events of `op`, which delivers them as `source` says.
    pub(crate) fn new(op: Op, source: EventSource) -> Self {
        Self {
            op: Some(op),
            source,
            _event: PhantomData,
        }
    }
}

impl<T: DeserializeOwned> Stream for EventStream<T> {
    type Item = Result<WatchEvent<T>>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            let Some(op) = this.op.as_mut() else {
                return Poll::Ready(None);
            };
            let Some(delivery) = ready!(op.poll_next_delivery(cx)) else {
                this.op = None;
                return Poll::Ready(None);
            };
            let item = match (&delivery.completion, this.source) {
                (Completion::WatchEvent {}, EventSource::Watch)
                | (Completion::Line {}, EventSource::Lines) => match decode(delivery.body()) {
                    Some(item) => return Poll::Ready(Some(item)),
                    None => continue,
                },
                (Completion::End {}, _) => None,
                (Completion::Error(error), _) => Some(from_op_error(error.clone(), Phase::Stream)),
                (other, source) => Some(protocol_violation(format_args!(
                    "{other:?} in a {source:?} event stream"
                ))),
            };
            // Everything but an event finishes the stream; a completion that is not final
            // (a protocol violation) also cancels the op by dropping it.
            this.op = None;
            return Poll::Ready(item.map(Err));
        }
    }
}

/// Waits for the start of an event stream — the `head` of a `lines`-mode response or of an
/// established watch — and returns the op, whose events follow. `what` names the request in
/// protocol-violation messages.
///
/// # Errors
/// [`Error::Api`] if the server refused the request (a final `response`), the host's failure
/// (an `error` completion) mapped as for any request, or a protocol violation.
pub(crate) async fn await_head(mut op: Op, what: &str) -> Result<Op> {
    let Some(delivery) = op.next_delivery().await else {
        return Err(protocol_violation(format_args!(
            "the {what} ended without a response"
        )));
    };
    match delivery.completion {
        Completion::Head { status, .. } => {
            check_status(status_code(status)?, b"")?;
            Ok(op)
        }
        Completion::Response { status, .. } => {
            check_status(status_code(status)?, delivery.body())?;
            Err(protocol_violation(format_args!(
                "a whole {status} response to a {what}"
            )))
        }
        Completion::Error(error) => Err(from_op_error(error, Phase::Request)),
        other => Err(protocol_violation(format_args!(
            "{other:?} before the head of a {what}"
        ))),
    }
}

/// Decodes one event as kube 5.0 does: `None` for an empty or truncated line (skipped).
fn decode<T: DeserializeOwned>(line: &[u8]) -> Option<Result<WatchEvent<T>>> {
    match serde_json::from_slice::<WatchEvent<T>>(line) {
        Ok(event) => Some(Ok(event)),
        Err(e) if e.is_eof() => None,
        Err(e) => Some(Err(match serde_json::from_slice::<Status>(line) {
            Ok(status) => Error::Api(status.boxed()),
            Err(_) => Error::SerdeError(e),
        })),
    }
}
