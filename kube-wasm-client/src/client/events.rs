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
///   `host_error`) and ends the stream;
/// - a `response` (the host refused a watch before streaming, e.g. 403 or 404) yields
///   that response as `Err(Error::Api)` and ends the stream.
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
                (Completion::Response { status, .. }, _) => Some(
                    status_code(*status)
                        .and_then(|status| check_status(status, delivery.body()))
                        .err()
                        .unwrap_or_else(|| {
                            protocol_violation(format_args!(
                                "a {status} response in place of an event stream"
                            ))
                        }),
                ),
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
