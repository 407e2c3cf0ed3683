//! A watch stream with kube-runtime 5.0's idle limit: a watch that delivers nothing for its
//! server-side timeout plus a margin is treated as ended, so a connection that silently
//! died cannot stall the watcher forever.

use futures::StreamExt;
use futures::stream::BoxStream;
use kube_core::WatchEvent;
use kube_wasm_abi::DEFAULT_WATCH_TIMEOUT_SECS;
use kube_wasm_tokio::time::{Instant, Sleep, sleep};
use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

/// The margin added to the server-side timeout, as kube's `WATCH_IDLE_TIMEOUT_MARGIN`.
const IDLE_MARGIN: Duration = Duration::from_secs(5);

/// The event stream of one established watch.
pub(crate) type WatchStream<V> = BoxStream<'static, kube_wasm_client::Result<WatchEvent<V>>>;

/// A watch stream whose [`IdleWatch::next`] returns `None` (as if the server had ended the
/// watch) once no event arrived for the idle limit.
///
/// Unlike a fresh `tokio::time::timeout` per event (kube's way), one host timer covers many
/// events: when it fires after events arrived, it is re-armed for the rest of the limit
/// counted from the last event. Dropping an `IdleWatch` cancels both the watch and the
/// timer on the host.
pub(crate) struct IdleWatch<V> {
    stream: WatchStream<V>,
    /// `None` when the config's timeout is `Some(0)`: no idle limit.
    limit: Option<Duration>,
    timer: Option<Sleep>,
    /// An event arrived since `timer` was armed.
    active: bool,
    last_event: Instant,
}

impl<V> IdleWatch<V> {
    /// Wraps `stream`, started with the config's `timeout` (seconds, `None` for the default).
    pub(crate) fn new(stream: WatchStream<V>, timeout: Option<u32>) -> Self {
        let limit = match timeout {
            Some(0) => None,
            other => Some(
                Duration::from_secs(u64::from(other.unwrap_or(DEFAULT_WATCH_TIMEOUT_SECS)))
                    + IDLE_MARGIN,
            ),
        };
        Self {
            stream,
            limit,
            timer: None,
            active: false,
            last_event: Instant::now(),
        }
    }

    /// The next item of the watch; `None` when the watch ended or stayed idle too long.
    pub(crate) async fn next(&mut self) -> Option<kube_wasm_client::Result<WatchEvent<V>>> {
        poll_fn(|cx| self.poll_next_item(cx)).await
    }

    fn poll_next_item(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<kube_wasm_client::Result<WatchEvent<V>>>> {
        if let Poll::Ready(item) = self.stream.poll_next_unpin(cx) {
            self.last_event = Instant::now();
            self.active = true;
            return Poll::Ready(item);
        }
        let Some(limit) = self.limit else {
            return Poll::Pending;
        };
        loop {
            if self.timer.is_none() {
                self.active = false;
                let remaining = limit.saturating_sub(self.last_event.elapsed());
                self.timer = Some(sleep(remaining));
            }
            let Some(timer) = self.timer.as_mut() else {
                return Poll::Pending;
            };
            ready!(Pin::new(timer).poll(cx));
            self.timer = None;
            if !self.active {
                tracing::debug!(
                    limit_secs = limit.as_secs(),
                    "watch stream idle timeout, reconnecting"
                );
                return Poll::Ready(None);
            }
        }
    }
}
