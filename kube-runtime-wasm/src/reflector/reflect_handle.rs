//! [`ReflectHandle`]: a subscriber of a shared store, as kube-runtime 5.0's
//! `reflector::ReflectHandle`.

use super::{Lookup, ObjectRef, Store};
use async_broadcast::Receiver;
use futures::Stream;
use pin_project::pin_project;
use std::hash::Hash;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

/// A stream of the objects a shared store's reflector applies, as kube-runtime 5.0's
/// `reflector::ReflectHandle`: made by [`Writer::subscribe`](super::store::Writer::subscribe)
/// on a writer from [`store_shared`](super::store_shared) or
/// [`Writer::new_shared`](super::store::Writer::new_shared), or by cloning a handle.
///
/// It yields `Arc<K>` from the store, after the store holds it: the object of each
/// `Apply` event and, at each `InitDone`, every object of the completed listing. Deletions,
/// the other `Init*` events and errors yield nothing. An item is the object the store holds
/// when it is read (it may be newer than the event); an object deleted from the store
/// meanwhile is skipped (kube's handle stalls until woken otherwise there).
///
/// A handle sees only what is sent after it subscribed; a clone sees what its original has
/// not read yet. Every handle must be polled: up to `buf_size` objects wait for the slowest
/// subscriber, then the reflector stream waits too (kube's backpressure). Dropping a handle
/// releases what it had not read. When the reflector stream ends or is dropped, handles
/// yield what was sent, then end. The stream is `Send` when `K` is `Send + Sync`.
#[pin_project]
#[must_use = "streams do nothing unless polled"]
pub struct ReflectHandle<K>
where
    K: Lookup + Clone + 'static,
    K::DynamicType: Eq + Hash + Clone,
{
    #[pin]
    rx: Receiver<ObjectRef<K>>,
    reader: Store<K>,
}

impl<K> ReflectHandle<K>
where
    K: Lookup + Clone + 'static,
    K::DynamicType: Eq + Hash + Clone,
{
    pub(super) fn new(reader: Store<K>, rx: Receiver<ObjectRef<K>>) -> Self {
        Self { rx, reader }
    }

    /// A reader of the shared store this handle's objects come from.
    #[must_use]
    pub fn reader(&self) -> Store<K> {
        self.reader.clone()
    }
}

impl<K> Clone for ReflectHandle<K>
where
    K: Lookup + Clone + 'static,
    K::DynamicType: Eq + Hash + Clone,
{
    fn clone(&self) -> Self {
        Self::new(self.reader.clone(), self.rx.clone())
    }
}

impl<K> Stream for ReflectHandle<K>
where
    K: Lookup + Clone + 'static,
    K::DynamicType: Eq + Hash + Clone + Default,
{
    type Item = Arc<K>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Arc<K>>> {
        let mut this = self.project();
        loop {
            let Some(obj_ref) = ready!(this.rx.as_mut().poll_next(cx)) else {
                return Poll::Ready(None);
            };
            if let Some(obj) = this.reader.get(&obj_ref) {
                return Poll::Ready(Some(obj));
            }
        }
    }
}
