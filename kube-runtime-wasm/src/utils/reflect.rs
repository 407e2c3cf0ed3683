//! [`Reflect`]: feed a store from a watcher stream, as kube-runtime 5.0's.

use crate::reflector::store::Writer;
use crate::watcher::{Error, Event};
use futures::Stream;
use kube_core::Resource;
use pin_project::pin_project;
use std::hash::Hash;
use std::pin::Pin;
use std::task::{Context, Poll};

/// A watcher stream that applies every event to a store [`Writer`] before passing it on, as
/// kube-runtime 5.0's `utils::Reflect` (made by [`reflect`](crate::WatchStreamExt::reflect)).
#[pin_project]
#[must_use = "streams do nothing unless polled"]
pub struct Reflect<St, K>
where
    K: Resource + Clone + 'static,
    K::DynamicType: Eq + Hash + Clone,
{
    #[pin]
    stream: St,
    writer: Writer<K>,
}

impl<St, K> Reflect<St, K>
where
    K: Resource + Clone,
    K::DynamicType: Eq + Hash + Clone,
{
    pub(super) fn new(stream: St, writer: Writer<K>) -> Self {
        Self { stream, writer }
    }
}

impl<St, K> Stream for Reflect<St, K>
where
    K: Resource + Clone,
    K::DynamicType: Eq + Hash + Clone,
    St: Stream<Item = Result<Event<K>, Error>>,
{
    type Item = Result<Event<K>, Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.project();
        let writer = this.writer;
        this.stream.poll_next(cx).map(|item| {
            if let Some(Ok(event)) = &item {
                writer.apply_watcher_event(event);
            }
            item
        })
    }
}
