//! [`WatchStreamExt`], as kube-runtime 5.0's.

use crate::reflector::store::Writer;
use crate::utils::{
    Backoff, EventDecode, EventModify, Predicate, PredicateConfig, PredicateFilter, Reflect,
    StreamBackoff,
};
use crate::watcher::{self, DefaultBackoff};
use futures::{Stream, TryStream};
use kube_core::Resource;
use std::hash::Hash;

/// Combinators for watcher streams, as kube-runtime 5.0's `WatchStreamExt` (implemented for
/// every [`Stream`]).
pub trait WatchStreamExt: Stream {
    /// Waits between errors with the [`DefaultBackoff`] (800 ms doubling to 30 s, with
    /// jitter; reset by a success).
    fn default_backoff(self) -> StreamBackoff<Self, DefaultBackoff>
    where
        Self: TryStream + Sized,
    {
        StreamBackoff::new(self, DefaultBackoff::default())
    }

    /// Waits between errors with `b`; the stream ends when `b` gives up.
    fn backoff<B>(self, b: B) -> StreamBackoff<Self, B>
    where
        B: Backoff,
        Self: TryStream + Sized,
    {
        StreamBackoff::new(self, b)
    }

    /// The objects that were added or modified (`Apply` and `InitApply`); deletions and
    /// the `Init`/`InitDone` markers are dropped.
    fn applied_objects<K>(self) -> EventDecode<Self>
    where
        Self: Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Sized,
    {
        EventDecode::new(self, false)
    }

    /// The objects that were added, modified or deleted; the `Init`/`InitDone` markers are
    /// dropped.
    fn touched_objects<K>(self) -> EventDecode<Self>
    where
        Self: Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Sized,
    {
        EventDecode::new(self, true)
    }

    /// Applies `f` to the object of every event.
    fn modify<F, K>(self, f: F) -> EventModify<Self, F>
    where
        Self: Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Sized,
        F: FnMut(&mut K),
    {
        EventModify::new(self, f)
    }

    /// Passes an object only when `predicate`'s value for it changed since it was last
    /// seen (e.g. [`predicates::generation`](crate::predicates::generation) to skip status
    /// updates), remembering values per `config`.
    fn predicate_filter<K, P>(
        self,
        predicate: P,
        config: PredicateConfig,
    ) -> PredicateFilter<Self, K, P>
    where
        Self: Stream<Item = Result<K, watcher::Error>> + Sized,
        K: Resource + 'static,
        P: Predicate<K> + 'static,
    {
        PredicateFilter::new(self, predicate, config)
    }

    /// Applies every event to `writer`'s store and passes it on (a reflector as a
    /// combinator). As kube's, it does not tell a shared writer's subscribers: use
    /// [`reflect_shared`](Self::reflect_shared) for that.
    fn reflect<K>(self, writer: Writer<K>) -> Reflect<Self, K>
    where
        Self: Stream<Item = watcher::Result<watcher::Event<K>>> + Sized,
        K: Resource + Clone + 'static,
        K::DynamicType: Eq + Hash + Clone,
    {
        Reflect::new(self, writer)
    }

    /// [`reflector()`](crate::reflector()) as a combinator, for a shared `writer` (from
    /// [`store_shared`](crate::reflector::store_shared)), as kube-runtime 5.0's
    /// `reflect_shared`: applies every event to the store, then sends the applied objects
    /// to the writer's subscribers ([`ReflectHandle`](crate::reflector::ReflectHandle)s),
    /// then passes the event on. While the subscribers' buffer is full the stream waits,
    /// so poll it and every subscriber; errors pass through unsent.
    #[cfg(feature = "unstable-runtime-subscribe")]
    fn reflect_shared<K>(self, writer: Writer<K>) -> impl Stream<Item = Self::Item>
    where
        Self: Stream<Item = watcher::Result<watcher::Event<K>>> + Sized,
        K: Resource + Clone + 'static,
        K::DynamicType: Eq + Hash + Clone,
    {
        crate::reflector(writer, self)
    }
}

impl<St: ?Sized + Stream> WatchStreamExt for St {}
