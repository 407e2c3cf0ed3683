//! [`StreamBackoff`]: wait between a stream's errors, as kube-runtime 5.0's.

use crate::utils::Backoff;
use futures::{Stream, TryStream};
use kube_wasm_tokio::time::{Sleep, sleep};
use pin_project::pin_project;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// A stream that, after each `Err` item of the inner stream, waits the next delay of its
/// [`Backoff`] before polling the inner stream again, as kube-runtime 5.0's
/// `utils::StreamBackoff`. An `Ok` item resets the backoff; when the backoff gives up
/// (`None`) the stream ends after that error.
///
/// The wait is a host `delay` op (rounded up to whole milliseconds); dropping the stream
/// while it waits cancels it.
#[pin_project]
#[must_use = "streams do nothing unless polled"]
pub struct StreamBackoff<S, B> {
    #[pin]
    stream: S,
    backoff: B,
    state: State,
}

enum State {
    BackingOff(Sleep),
    GivenUp,
    Awake,
}

impl<S: TryStream, B: Backoff> StreamBackoff<S, B> {
    /// Wraps `stream` with `backoff`.
    pub fn new(stream: S, backoff: B) -> Self {
        Self {
            stream,
            backoff,
            state: State::Awake,
        }
    }
}

impl<S: TryStream, B: Backoff> Stream for StreamBackoff<S, B> {
    type Item = Result<S::Ok, S::Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.project();
        match this.state {
            State::BackingOff(delay) => match Pin::new(delay).poll(cx) {
                Poll::Ready(()) => *this.state = State::Awake,
                Poll::Pending => return Poll::Pending,
            },
            State::GivenUp => return Poll::Ready(None),
            State::Awake => {}
        }
        let item = this.stream.try_poll_next(cx);
        match &item {
            Poll::Ready(Some(Err(_))) => {
                *this.state = match this.backoff.next() {
                    Some(delay) => {
                        tracing::debug!(?delay, "error received, backing off");
                        State::BackingOff(sleep(delay))
                    }
                    None => {
                        tracing::debug!("error received, giving up");
                        State::GivenUp
                    }
                };
            }
            Poll::Ready(_) => this.backoff.reset(),
            Poll::Pending => {}
        }
        item
    }
}
