//! [`EventDecode`]: watcher events to objects, as kube-runtime 5.0's.

use crate::watcher::{Error, Event};
use futures::Stream;
use pin_project::pin_project;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

/// The objects of a watcher stream's events, as kube-runtime 5.0's `utils::EventDecode`
/// (made by [`applied_objects`](crate::WatchStreamExt::applied_objects) and
/// [`touched_objects`](crate::WatchStreamExt::touched_objects)): the object of every
/// `Apply` and `InitApply`, and of `Delete` when deletions are emitted; `Init` and
/// `InitDone` are skipped; errors pass through.
#[pin_project]
#[must_use = "streams do nothing unless polled"]
pub struct EventDecode<St> {
    #[pin]
    stream: St,
    emit_deleted: bool,
}

impl<St> EventDecode<St> {
    pub(super) fn new(stream: St, emit_deleted: bool) -> Self {
        Self {
            stream,
            emit_deleted,
        }
    }
}

impl<St, K> Stream for EventDecode<St>
where
    St: Stream<Item = Result<Event<K>, Error>>,
{
    type Item = Result<K, Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let mut this = self.project();
        loop {
            let item = match ready!(this.stream.as_mut().poll_next(cx)) {
                Some(Ok(Event::Apply(obj) | Event::InitApply(obj))) => Ok(obj),
                Some(Ok(Event::Delete(obj))) if *this.emit_deleted => Ok(obj),
                Some(Ok(Event::Delete(_) | Event::Init | Event::InitDone)) => continue,
                Some(Err(err)) => Err(err),
                None => return Poll::Ready(None),
            };
            return Poll::Ready(Some(item));
        }
    }
}
