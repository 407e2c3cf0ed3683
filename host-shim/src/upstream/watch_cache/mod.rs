//! Shared watches: modules that watch the same collection with the same selectors, as the
//! same identity, share one upstream LIST+WATCH (an [`informer`]) and are served from its
//! [`store`], with kube-apiserver's watch-cache semantics for resourceVersions (see
//! [`store`]): a module that resumes from an older resourceVersion still gets every event it
//! missed, or a `410 Expired` exactly as the API server would send it.
//!
//! What is served from the cache, as kube-apiserver's cacher serves it:
//! - every `watch` op whose resourceVersion is `""`, `"0"` or a number (`runtime::abi::shared_watch`),
//!   streaming lists included (`sendInitialEvents=true` with `resourceVersionMatch=NotOlderThan`
//!   and bookmarks: the current objects as `ADDED`, the `k8s.io/initial-events-end` bookmark,
//!   then changes; a state the store cannot show to be fresh enough for the request is read by
//!   a consistent LIST, see [`key::Freshness`]) once the API server has shown it serves
//!   them ([`streaming`]);
//! - every list (`GET` of a collection) with `resourceVersion=0` (`runtime::abi::shared_watch::list`), `limit`
//!   ignored as the cacher ignores it there.
//!
//! Everything else goes upstream as before: consistent lists (`resourceVersion` unset, which
//! the API server reads from etcd), `Exact` and paginated lists, single objects, writes.
//!
//! A module's complete consistent list (no `continue`) of a collection that has no shared
//! watch is kept for [`CacheSettings::seed_age`] as a *seed* (all seeds together at most
//! [`CacheSettings::seed_bytes`]): if the module's watcher then watches that collection from
//! that list's resourceVersion — as kube-runtime's watcher does right after its list — the new
//! informer starts from the seed instead of LISTing the same state again. A lone controller
//! then costs one LIST, as it does natively.
//! A collection the host's identity may not list (the informer's LIST is refused with a 4xx)
//! is not shared: its watches go upstream one by one.
//!
//! An informer lives while a module is subscribed to it and for [`CacheSettings::linger`]
//! after the last one left (so a module's relist or restart does not cost a new LIST), then
//! it closes its upstream watch. At most [`CacheSettings::max_lingering`] informers linger at
//! once: past that, one whose last subscriber leaves closes at once, so a module that churns
//! watches of ever new selectors holds no more upstream watches than its `watches` quota
//! (see `crate::runtime::quota`) plus that bound. Each history is bounded by [`CacheSettings::history_events`]
//! and all of them together by [`CacheSettings::history_bytes`].

pub mod event;
pub mod informer;
pub mod key;
pub mod store;
pub mod streaming;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use kube_wasm_abi::OpError;
use tokio::sync::watch;
use tokio::task::AbortHandle;
use tokio::time::Instant;

use crate::metrics::{CacheTotals, Metrics};
use crate::upstream::client::Upstream;
use crate::upstream::identity::ServiceAccount;
use crate::upstream::limits::OpLimits;
pub use key::{Freshness, StartAt, WatchKey};
use store::Store;
use streaming::StreamingLists;

/// How the shared-watch cache is sized.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheSettings {
    /// Most events one shared watch keeps for resuming watches (kube-apiserver's
    /// `--default-watch-cache-size` is 100; more history means fewer `410`s).
    pub history_events: usize,
    /// Most bytes of event history all shared watches keep together; past it the oldest
    /// events of the watch that grows are dropped.
    pub history_bytes: usize,
    /// How long an event stays in the history (kube-apiserver's watch cache keeps 75 s of
    /// events fresh; older ones are kept there only while its capacity has room).
    pub history_age: Duration,
    /// How long an event every live watch of its store has taken stays in the history
    /// (`releaseReadHistory`); `None`: for the whole history age. Once released, a watch
    /// resuming from before it is sent to the API server, which still holds the events
    /// for the history age (see [`store`]). It covers the gap of a watcher that resumes at
    /// once (a watch's timeout, a reconnect).
    pub history_grace: Option<Duration>,
    /// How long an informer without subscribers keeps its upstream watch.
    pub linger: Duration,
    /// Most informers without subscribers kept at once (lingering); past it an informer
    /// closes as soon as its last subscriber leaves.
    pub max_lingering: usize,
    /// How long a module's complete list is kept to seed the shared watch its watcher opens
    /// next.
    pub seed_age: Duration,
    /// Most bytes of list bodies kept as seeds at once; a list that does not fit is not kept
    /// (its watch's informer LISTs for itself).
    pub seed_bytes: usize,
}

impl CacheSettings {
    /// The default [`history_grace`](Self::history_grace): 5 s.
    pub const HISTORY_GRACE: Duration = Duration::from_secs(5);
}

impl Default for CacheSettings {
    fn default() -> Self {
        Self {
            history_events: 1024,
            history_bytes: 64 * 1024 * 1024,
            history_age: Duration::from_secs(75),
            history_grace: Some(Self::HISTORY_GRACE),
            linger: Duration::from_secs(30),
            max_lingering: 64,
            seed_age: Duration::from_secs(10),
            seed_bytes: 16 * 1024 * 1024,
        }
    }
}

/// Where an informer is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Its first LIST has not succeeded yet.
    Starting,
    /// Its first LIST failed with this error (it retries); subscribers fail with it too, as
    /// their own request would have.
    Unavailable(OpError),
    /// The store holds a LIST's state and follows the upstream watch.
    Ready,
    /// The upstream refused the LIST (4xx): the collection is not shared.
    Refused,
}

pub(crate) struct State {
    pub(crate) store: Store,
    pub(crate) phase: Phase,
    /// Bumped at every LIST that replaces the store: watches served from an older
    /// generation are ended, as kube-apiserver ends its watchers when its cache is rebuilt.
    pub(crate) generation: u64,
    /// When the LIST the store holds was sent, if it was a consistent one (no
    /// resourceVersion, read from etcd): its state includes every write completed before
    /// then, so a consistent streaming list that arrived earlier may be served from it.
    pub(crate) consistent_since: Option<Instant>,
}

/// One shared watch: its store and who is subscribed.
pub(crate) struct Shared {
    pub(crate) key: WatchKey,
    state: Mutex<State>,
    /// Bumped after every change of `state`, to wake subscribers.
    changed: watch::Sender<u64>,
    subscribers: AtomicUsize,
}

impl Shared {
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        // Every critical section leaves `State` consistent; a panic cannot break it.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Changes the state and wakes the subscribers.
    pub(crate) fn update<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        let result = f(&mut self.lock());
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
        result
    }

    pub(crate) fn watch_changes(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }
}

struct Entry {
    shared: Arc<Shared>,
    informer: AbortHandle,
}

/// A module's complete list of a collection, kept to start its shared watch from.
struct Seed {
    body: Bytes,
    kept: Instant,
}

/// The seeds, by key, and their bytes.
#[derive(Default)]
struct Seeds {
    by_key: HashMap<WatchKey, Seed>,
    bytes: usize,
}

impl Seeds {
    fn remove(&mut self, key: &WatchKey) -> Option<Seed> {
        let seed = self.by_key.remove(key)?;
        self.bytes -= seed.body.len();
        Some(seed)
    }

    /// Drops the seeds kept at or before `cutoff`.
    fn expire(&mut self, cutoff: Option<Instant>) {
        let Some(cutoff) = cutoff else {
            return;
        };
        let mut freed = 0;
        self.by_key.retain(|_, seed| {
            let keep = seed.kept > cutoff;
            if !keep {
                freed += seed.body.len();
            }
            keep
        });
        self.bytes -= freed;
    }
}

struct Inner {
    settings: CacheSettings,
    limits: OpLimits,
    metrics: Metrics,
    entries: Mutex<HashMap<WatchKey, Entry>>,
    history_bytes: AtomicUsize,
    lingering: Arc<Lingering>,
    seeds: Mutex<Seeds>,
    streaming: StreamingLists,
}

/// The host's shared watches. Cheap to clone.
#[derive(Clone)]
pub struct WatchCache {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for WatchCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WatchCache")
            .field("settings", &self.inner.settings)
            .finish_non_exhaustive()
    }
}

impl WatchCache {
    /// An empty cache whose informers use `limits` for upstream bodies and report upstream
    /// watches to `metrics`.
    pub fn new(settings: CacheSettings, limits: OpLimits, metrics: Metrics) -> Self {
        Self {
            inner: Arc::new(Inner {
                settings,
                limits,
                metrics,
                entries: Mutex::new(HashMap::new()),
                history_bytes: AtomicUsize::new(0),
                lingering: Arc::new(Lingering::new(settings.max_lingering)),
                seeds: Mutex::new(Seeds::default()),
                streaming: StreamingLists::default(),
            }),
        }
    }

    /// Whether the API server serves streaming lists, as far as this cache knows (see
    /// [`streaming`]).
    pub(crate) fn streaming_lists(&self) -> &StreamingLists {
        &self.inner.streaming
    }

    fn entries(&self) -> MutexGuard<'_, HashMap<WatchKey, Entry>> {
        // Entries are only inserted and removed whole.
        self.inner
            .entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn seeds(&self) -> MutexGuard<'_, Seeds> {
        // Seeds are only inserted and removed whole, with their bytes.
        self.inner
            .seeds
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether a module's list of `key` could seed a shared watch: none exists for it.
    fn wants_seed(&self, key: &WatchKey) -> bool {
        !self.entries().contains_key(key)
    }

    /// Keeps `body`, a module's complete answer to a consistent list of `key`, for the
    /// seed age, to start the shared watch of `key` from (see the module docs). Not kept if a
    /// shared watch of `key` exists, or if it does not fit in the seeds' bytes; it replaces
    /// an older seed of `key`.
    pub(crate) fn offer_seed(&self, key: WatchKey, body: Bytes) {
        if !self.wants_seed(&key) {
            return;
        }
        let settings = &self.inner.settings;
        let mut seeds = self.seeds();
        seeds.expire(Instant::now().checked_sub(settings.seed_age));
        seeds.remove(&key);
        if seeds.bytes + body.len() > settings.seed_bytes {
            tracing::debug!(key = %key, bytes = body.len(), "no room to keep a list as a seed");
            return;
        }
        seeds.bytes += body.len();
        seeds.by_key.insert(
            key,
            Seed {
                body,
                kept: Instant::now(),
            },
        );
        drop(seeds);
        // A list no watch follows is dropped at its age, not at the next offer or take.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let (cache, age) = (self.clone(), settings.seed_age);
            runtime.spawn(async move {
                tokio::time::sleep(age).await;
                cache.seeds().expire(Instant::now().checked_sub(age));
            });
        }
    }

    /// Takes the seed of `key`, if one is kept and not older than the seed age.
    fn take_seed(&self, key: &WatchKey) -> Option<Bytes> {
        let mut seeds = self.seeds();
        seeds.expire(Instant::now().checked_sub(self.inner.settings.seed_age));
        seeds.remove(key).map(|seed| seed.body)
    }

    /// Bytes of list bodies kept as seeds now.
    pub fn seed_bytes(&self) -> usize {
        self.seeds().bytes
    }

    /// Subscribes to the shared watch of `key`, starting its informer (through `upstream`)
    /// if there is none. `start_hint`: the resourceVersion the first subscriber starts from;
    /// a new informer starts from the seed of `key` if it is a complete list at exactly that
    /// resourceVersion, or else LISTs exactly at it (when etcd still has it), so that
    /// subscriber's resume is served without a `410`.
    pub(crate) fn subscribe(
        &self,
        key: &WatchKey,
        upstream: &Upstream,
        start_hint: Option<u64>,
    ) -> Subscription {
        let mut entries = self.entries();
        let shared = match entries.get(key) {
            Some(entry) => entry.shared.clone(),
            None => {
                let (changed, _) = watch::channel(0);
                let shared = Arc::new(Shared {
                    key: key.clone(),
                    state: Mutex::new(State {
                        store: Store::new(self.inner.settings.history_events),
                        phase: Phase::Starting,
                        generation: 0,
                        consistent_since: None,
                    }),
                    changed,
                    subscribers: AtomicUsize::new(0),
                });
                tracing::info!(key = %key, "sharing a new upstream watch");
                let start = informer::Start {
                    hint: start_hint,
                    seed: self.take_seed(key),
                };
                let informer = tokio::spawn(informer::run_informer(
                    shared.clone(),
                    upstream.clone(),
                    self.clone(),
                    start,
                ))
                .abort_handle();
                entries.insert(
                    key.clone(),
                    Entry {
                        shared: shared.clone(),
                        informer,
                    },
                );
                shared
            }
        };
        shared.subscribers.fetch_add(1, Ordering::SeqCst);
        Subscription {
            cache: self.clone(),
            shared,
        }
    }

    /// Drops `shared`'s informer if it still has no subscriber and is still the entry of its
    /// key.
    fn retire_if_unused(&self, shared: &Arc<Shared>) {
        let mut entries = self.entries();
        let unused = entries.get(&shared.key).is_some_and(|entry| {
            Arc::ptr_eq(&entry.shared, shared) && shared.subscribers.load(Ordering::SeqCst) == 0
        });
        if unused && let Some(entry) = entries.remove(&shared.key) {
            entry.informer.abort();
            let freed = entry.shared.lock().store.history_bytes();
            self.inner.history_bytes.fetch_sub(freed, Ordering::SeqCst);
            tracing::info!(key = %shared.key, "closing an unused shared watch");
        }
    }

    /// Forgets `shared` at once (its informer ended for good, e.g. refused).
    fn remove(&self, shared: &Arc<Shared>) {
        let mut entries = self.entries();
        if entries
            .get(&shared.key)
            .is_some_and(|entry| Arc::ptr_eq(&entry.shared, shared))
        {
            entries.remove(&shared.key);
        }
    }

    /// Counts `bytes` more of history, then drops the oldest events of `store` while all
    /// histories together exceed the budget.
    pub(crate) fn account_history(&self, store: &mut Store, added: usize) {
        let budget = self.inner.settings.history_bytes;
        let mut total = self.inner.history_bytes.fetch_add(added, Ordering::SeqCst) + added;
        while total > budget {
            let freed = store.evict_oldest();
            if freed == 0 {
                break;
            }
            total = self.inner.history_bytes.fetch_sub(freed, Ordering::SeqCst) - freed;
        }
    }

    /// Forgets `bytes` of history (a store was reset or events were evicted by count).
    pub(crate) fn release_history(&self, bytes: usize) {
        self.inner.history_bytes.fetch_sub(bytes, Ordering::SeqCst);
    }

    /// Drops the events of `store` older than the history age, releases those older than
    /// the grace that every reader has taken, forgets their bytes and asks for a heap trim
    /// (see [`crate::heap`]).
    pub(crate) fn expire_history(&self, store: &mut Store) {
        let now = Instant::now();
        let settings = &self.inner.settings;
        let mut freed = 0;
        if let Some(cutoff) = now.checked_sub(settings.history_age) {
            freed += store.evict_received_before(cutoff);
        }
        if let Some(cutoff) = settings.history_grace.and_then(|g| now.checked_sub(g)) {
            freed += store.release_read_before(cutoff);
        }
        if freed > 0 {
            self.release_history(freed);
            crate::heap::trim_soon();
        }
    }

    /// When [`expire_history`](Self::expire_history) should next run for `store`, if it
    /// holds events: when its oldest reaches the history age or the grace, and while a reader
    /// has not taken it, a grace after the last release.
    pub(crate) fn history_expiry(&self, store: &Store) -> Option<Instant> {
        let settings = &self.inner.settings;
        let received = store.oldest_received()?;
        let expiry = received + settings.history_age;
        let Some(grace) = settings.history_grace else {
            return Some(expiry);
        };
        let release = match store.last_release() {
            Some(last) if !store.oldest_is_read() => (last + grace).max(received + grace),
            _ => received + grace,
        };
        Some(expiry.min(release))
    }

    pub(crate) fn limits(&self) -> OpLimits {
        self.inner.limits
    }

    pub(crate) fn metrics(&self) -> &Metrics {
        &self.inner.metrics
    }

    /// Totals over every shared watch.
    pub fn totals(&self) -> CacheTotals {
        let entries = self.entries();
        let mut totals = CacheTotals {
            informers: entries.len(),
            ..CacheTotals::default()
        };
        for entry in entries.values() {
            totals.subscribers += entry.shared.subscribers.load(Ordering::SeqCst);
            let size = entry.shared.lock().store.size();
            totals.objects += size.objects;
            totals.events += size.events;
            totals.bytes += size.bytes;
        }
        totals
    }
}

/// A live watch's place among the readers of its store (see [`store`]): the events after
/// its cursor are not released while it exists. Dropping it (the watch ended) forgets it;
/// not while its store is locked.
pub(crate) struct Reader {
    shared: Arc<Shared>,
    id: u64,
}

impl Reader {
    /// Registers a watch of `shared` (whose `state` the caller holds locked) that has taken
    /// every event up to `cursor`.
    pub(crate) fn new(shared: &Arc<Shared>, state: &mut State, cursor: u64) -> Self {
        Self {
            shared: shared.clone(),
            id: state.store.add_reader(cursor),
        }
    }

    /// Records that the watch has taken every event up to `cursor`.
    pub(crate) fn read_to(&self, state: &mut State, cursor: u64) {
        state.store.read_to(self.id, cursor);
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        self.shared.lock().store.remove_reader(self.id);
    }
}

/// What a module's ops need of the shared watches: the host's cache and the identity the
/// module acts as (part of every [`WatchKey`]).
#[derive(Debug, Clone)]
pub struct ModuleWatches {
    /// The host's cache.
    pub cache: WatchCache,
    /// The ServiceAccount the module acts as; `None`: the host's own identity.
    pub identity: Option<ServiceAccount>,
}

/// A module's use of a shared watch; dropping it (the op finished, was cancelled, or the
/// module ended) unsubscribes, and the informer closes after the linger time if nobody else
/// is subscribed.
pub(crate) struct Subscription {
    cache: WatchCache,
    pub(crate) shared: Arc<Shared>,
}

impl Drop for Subscription {
    fn drop(&mut self) {
        if self.shared.subscribers.fetch_sub(1, Ordering::SeqCst) != 1 {
            return;
        }
        let cache = self.cache.clone();
        let shared = self.shared.clone();
        let linger = cache.inner.settings.linger;
        // Dropped inside op tasks, which run on the host's runtime.
        let runtime = tokio::runtime::Handle::try_current();
        match (runtime, cache.inner.lingering.clone().enter()) {
            (Ok(runtime), Some(slot)) => {
                runtime.spawn(async move {
                    tokio::time::sleep(linger).await;
                    drop(slot);
                    cache.retire_if_unused(&shared);
                });
            }
            _ => cache.retire_if_unused(&shared),
        }
    }
}

/// Counts the informers lingering without subscribers, up to a bound.
#[derive(Debug)]
struct Lingering {
    now: AtomicUsize,
    max: usize,
}

/// One informer's place among the lingering ones; dropping it frees the place.
struct LingerSlot(Arc<Lingering>);

impl Lingering {
    fn new(max: usize) -> Self {
        Self {
            now: AtomicUsize::new(0),
            max,
        }
    }

    /// A place to linger, if fewer than the bound linger now.
    fn enter(self: Arc<Self>) -> Option<LingerSlot> {
        let admitted = self
            .now
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < self.max).then_some(n + 1)
            })
            .is_ok();
        admitted.then_some(LingerSlot(self))
    }
}

impl Drop for LingerSlot {
    fn drop(&mut self) {
        self.0.now.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(settings: CacheSettings) -> WatchCache {
        WatchCache::new(settings, OpLimits::default(), Metrics::new())
    }

    fn key(path: &str) -> WatchKey {
        WatchKey::new(None, path, None, None, false)
    }

    #[tokio::test]
    async fn seeds_are_kept_for_their_age_within_their_bytes() {
        let cache = cache(CacheSettings {
            seed_bytes: 10,
            seed_age: Duration::from_millis(200),
            ..CacheSettings::default()
        });
        cache.offer_seed(key("/a"), Bytes::from_static(b"123456"));
        assert_eq!(cache.seed_bytes(), 6);
        cache.offer_seed(key("/b"), Bytes::from_static(b"12345"));
        assert_eq!(cache.seed_bytes(), 6, "no room for /b");
        cache.offer_seed(key("/a"), Bytes::from_static(b"1234"));
        assert_eq!(
            cache.seed_bytes(),
            4,
            "a newer list of /a replaces the older"
        );
        assert_eq!(cache.take_seed(&key("/a")).as_deref(), Some(&b"1234"[..]));
        assert_eq!(cache.take_seed(&key("/a")), None, "taken once");
        assert_eq!(cache.seed_bytes(), 0);

        cache.offer_seed(key("/c"), Bytes::from_static(b"12"));
        tokio::time::sleep(Duration::from_millis(250)).await;
        // The expiry's timer (200 ms) is due before this one; on a busy machine both can be
        // found due at once and this task woken first: one yield lets the expiry run.
        tokio::task::yield_now().await;
        assert_eq!(cache.seed_bytes(), 0, "dropped at its age, untouched");
        assert_eq!(cache.take_seed(&key("/c")), None, "too old");
    }

    #[test]
    fn at_most_max_informers_linger() {
        let lingering = Arc::new(Lingering::new(2));
        let a = lingering.clone().enter().expect("room");
        let _b = lingering.clone().enter().expect("room");
        assert!(lingering.clone().enter().is_none(), "full: close at once");
        drop(a);
        assert!(lingering.clone().enter().is_some(), "a place came free");
        assert!(Arc::new(Lingering::new(0)).enter().is_none());
    }
}
