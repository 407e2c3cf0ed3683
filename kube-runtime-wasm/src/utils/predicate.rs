//! Predicates and [`PredicateFilter`], as kube-runtime 5.0's `utils::predicate`.

use crate::watcher::Error;
use futures::Stream;
use kube_core::{ObjectMeta, Resource};
use kube_wasm_tokio::time::Instant;
use pin_project::pin_project;
use std::collections::HashMap;
use std::collections::hash_map::{DefaultHasher, Entry};
use std::hash::{Hash, Hasher};
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

fn hash<T: Hash + ?Sized>(t: &T) -> u64 {
    let mut hasher = DefaultHasher::new();
    t.hash(&mut hasher);
    hasher.finish()
}

/// Identifies an object across events: its name, namespace and uid (a re-created object
/// with the same name is a different object).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct CacheKey {
    name: String,
    namespace: Option<String>,
    uid: Option<String>,
}

impl From<&ObjectMeta> for CacheKey {
    fn from(meta: &ObjectMeta) -> Self {
        Self {
            name: meta.name.clone().unwrap_or_default(),
            namespace: meta.namespace.clone(),
            uid: meta.uid.clone(),
        }
    }
}

/// A property of an object, as a hash, that [`PredicateFilter`] compares between events;
/// `None` when the object lacks it (then the object always passes). As kube-runtime 5.0's
/// `Predicate`, implemented by every `Fn(&K) -> Option<u64>` such as the functions in
/// [`predicates`].
pub trait Predicate<K> {
    /// The hash of the property of `obj`, or `None` if it has none.
    fn hash_property(&self, obj: &K) -> Option<u64>;

    /// Uses `f` for objects where `self` has no value (e.g. `generation` falling back to
    /// `resource_version` for objects without a generation).
    fn fallback<F: Predicate<K>>(self, f: F) -> Fallback<Self, F>
    where
        Self: Sized,
    {
        Fallback(self, f)
    }

    /// Hashes both properties together: a change of either passes.
    fn combine<F: Predicate<K>>(self, f: F) -> Combine<Self, F>
    where
        Self: Sized,
    {
        Combine(self, f)
    }
}

impl<K, F: Fn(&K) -> Option<u64>> Predicate<K> for F {
    fn hash_property(&self, obj: &K) -> Option<u64> {
        self(obj)
    }
}

/// The first predicate, or the second where the first has no value
/// ([`Predicate::fallback`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Fallback<A, B>(pub(super) A, pub(super) B);

impl<A, B, K> Predicate<K> for Fallback<A, B>
where
    A: Predicate<K>,
    B: Predicate<K>,
{
    fn hash_property(&self, obj: &K) -> Option<u64> {
        self.0
            .hash_property(obj)
            .or_else(|| self.1.hash_property(obj))
    }
}

/// Both predicates hashed together; `None` only if both are `None`
/// ([`Predicate::combine`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Combine<A, B>(pub(super) A, pub(super) B);

impl<A, B, K> Predicate<K> for Combine<A, B>
where
    A: Predicate<K>,
    B: Predicate<K>,
{
    fn hash_property(&self, obj: &K) -> Option<u64> {
        match (self.0.hash_property(obj), self.1.hash_property(obj)) {
            (None, None) => None,
            both => Some(hash(&both)),
        }
    }
}

/// Settings of a [`PredicateFilter`], as kube-runtime 5.0's `PredicateConfig`.
#[derive(Debug, Clone)]
pub struct Config {
    ttl: Duration,
}

impl Config {
    /// How long a remembered hash stays valid (default 1 hour): an object not seen for
    /// this long is forgotten, so its next event passes. Bounds the filter's memory.
    #[must_use]
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }
}

impl Default for Config {
    fn default() -> Self {
        Self {
            ttl: Duration::from_secs(3600),
        }
    }
}

#[derive(Debug, Clone)]
struct CacheEntry {
    hash: u64,
    last_seen: Instant,
}

/// Passes an object only when its predicate value differs from the one last seen for the
/// same object, as kube-runtime 5.0's `PredicateFilter` (made by
/// [`predicate_filter`](crate::WatchStreamExt::predicate_filter)). The first sighting of an
/// object, and objects the predicate has no value for, always pass; errors pass through.
#[pin_project]
#[must_use = "streams do nothing unless polled"]
pub struct PredicateFilter<St, K: Resource, P: Predicate<K>> {
    #[pin]
    stream: St,
    predicate: P,
    cache: HashMap<CacheKey, CacheEntry>,
    config: Config,
    last_evicted: Instant,
    _object: PhantomData<fn(&K)>,
}

impl<St, K, P> PredicateFilter<St, K, P>
where
    St: Stream<Item = Result<K, Error>>,
    K: Resource,
    P: Predicate<K>,
{
    pub(super) fn new(stream: St, predicate: P, config: Config) -> Self {
        Self {
            stream,
            predicate,
            cache: HashMap::new(),
            config,
            last_evicted: Instant::now(),
            _object: PhantomData,
        }
    }
}

impl<St, K, P> Stream for PredicateFilter<St, K, P>
where
    St: Stream<Item = Result<K, Error>>,
    K: Resource,
    P: Predicate<K>,
{
    type Item = Result<K, Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let mut this = self.project();
        let now = Instant::now();
        let ttl = this.config.ttl;
        if now.duration_since(*this.last_evicted) >= ttl {
            this.cache
                .retain(|_, entry| now.duration_since(entry.last_seen) < ttl);
            *this.last_evicted = now;
        }
        loop {
            let obj = match ready!(this.stream.as_mut().poll_next(cx)) {
                Some(Ok(obj)) => obj,
                other => return Poll::Ready(other),
            };
            let Some(value) = this.predicate.hash_property(&obj) else {
                return Poll::Ready(Some(Ok(obj)));
            };
            let fresh = CacheEntry {
                hash: value,
                last_seen: now,
            };
            let changed = match this.cache.entry(CacheKey::from(obj.meta())) {
                Entry::Occupied(mut entry) => {
                    let old = entry.insert(fresh);
                    old.hash != value || now.duration_since(old.last_seen) >= ttl
                }
                Entry::Vacant(entry) => {
                    entry.insert(fresh);
                    true
                }
            };
            if changed {
                return Poll::Ready(Some(Ok(obj)));
            }
        }
    }
}

/// Common predicates, as kube-runtime 5.0's `predicates`.
pub mod predicates {
    use super::hash;
    use kube_core::{Resource, ResourceExt};

    /// `metadata.generation` (changes with the spec for most resources); `None` for objects
    /// without one.
    pub fn generation<K: Resource>(obj: &K) -> Option<u64> {
        obj.meta().generation.map(|g| hash(&g))
    }

    /// `metadata.resourceVersion` (changes with every write).
    pub fn resource_version<K: Resource>(obj: &K) -> Option<u64> {
        obj.meta().resource_version.as_ref().map(hash)
    }

    /// `metadata.labels`.
    pub fn labels<K: Resource>(obj: &K) -> Option<u64> {
        Some(hash(obj.labels()))
    }

    /// `metadata.annotations`.
    pub fn annotations<K: Resource>(obj: &K) -> Option<u64> {
        Some(hash(obj.annotations()))
    }

    /// `metadata.finalizers`.
    pub fn finalizers<K: Resource>(obj: &K) -> Option<u64> {
        Some(hash(obj.finalizers()))
    }
}
