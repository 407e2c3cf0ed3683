//! [`EventModify`]: change the objects of watcher events in place, as kube-runtime 5.0's.

use crate::watcher::{Error, Event};
use futures::Stream;
use pin_project::pin_project;
use std::pin::Pin;
use std::task::{Context, Poll};

/// A watcher stream whose events' objects went through a function, as kube-runtime 5.0's
/// `utils::EventModify` (made by [`modify`](crate::WatchStreamExt::modify)); e.g. to drop
/// `managedFields` before objects reach a store.
#[pin_project]
#[must_use = "streams do nothing unless polled"]
pub struct EventModify<St, F> {
    #[pin]
    stream: St,
    f: F,
}

impl<St, F> EventModify<St, F> {
    pub(super) fn new(stream: St, f: F) -> Self {
        Self { stream, f }
    }
}

impl<St, F, K> Stream for EventModify<St, F>
where
    St: Stream<Item = Result<Event<K>, Error>>,
    F: FnMut(&mut K),
{
    type Item = Result<Event<K>, Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.project();
        let f = this.f;
        this.stream
            .poll_next(cx)
            .map(|item| item.map(|event| event.map(|event| event.modify(&mut *f))))
    }
}
