//! The fan-out from a shared store's writer to its subscribers, as kube-runtime 5.0's
//! (crate-private) `reflector::dispatcher::Dispatcher`.

use super::{Lookup, ObjectRef};
#[cfg(feature = "unstable-runtime-subscribe")]
use super::{ReflectHandle, Store};
use async_broadcast::{InactiveReceiver, Sender};
use std::fmt;
use std::hash::Hash;

/// A bounded broadcast channel of object references, written by a shared
/// [`Writer`](super::store::Writer) and read by its [`ReflectHandle`]s.
///
/// A reference stays buffered until every subscriber that existed when it was sent has
/// read it; with `buf_size` references buffered, sending waits (the reflector applies
/// backpressure). Sent while no subscriber exists, a reference is dropped. Dropping the
/// dispatcher (with its writer) closes the channel: subscribers read what is buffered,
/// then end.
pub(crate) struct Dispatcher<K>
where
    K: Lookup + Clone + 'static,
    K::DynamicType: Eq + Hash + Clone,
{
    tx: Sender<ObjectRef<K>>,
    /// Keeps the channel open while no subscriber exists; it holds no messages.
    _keep_open: InactiveReceiver<ObjectRef<K>>,
}

impl<K> Dispatcher<K>
where
    K: Lookup + Clone + 'static,
    K::DynamicType: Eq + Hash + Clone,
{
    /// A channel buffering up to `buf_size` references.
    ///
    /// # Panics
    /// If `buf_size` is 0, as kube's.
    #[cfg(feature = "unstable-runtime-subscribe")]
    pub(crate) fn new(buf_size: usize) -> Self {
        let (mut tx, rx) = async_broadcast::broadcast(buf_size);
        // Without subscribers, sends complete at once (dropping the message).
        tx.set_await_active(false);
        Self {
            tx,
            _keep_open: rx.deactivate(),
        }
    }

    /// Sends `obj_ref` to every current subscriber, waiting while the buffer is full.
    pub(crate) async fn broadcast(&self, obj_ref: ObjectRef<K>) {
        // An error means there is no subscriber to tell.
        let _ = self.tx.broadcast_direct(obj_ref).await;
    }

    /// A new subscriber reading the objects from `reader`; it sees only references sent
    /// from now on.
    #[cfg(feature = "unstable-runtime-subscribe")]
    pub(crate) fn subscribe(&self, reader: Store<K>) -> ReflectHandle<K> {
        ReflectHandle::new(reader, self.tx.new_receiver())
    }
}

impl<K> fmt::Debug for Dispatcher<K>
where
    K: Lookup + Clone + 'static,
    K::DynamicType: Eq + Hash + Clone,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Dispatcher")
            .field("buf_size", &self.tx.capacity())
            .field("buffered", &self.tx.len())
            .field("subscribers", &self.tx.receiver_count())
            .finish()
    }
}
