//! The reflector's cache: [`Writer`] and [`Store`], as kube-runtime 5.0's
//! `reflector::store`.

use super::dispatcher::Dispatcher;
use super::ready::{Ready, WhenReady, ready};
#[cfg(feature = "unstable-runtime-subscribe")]
use super::reflect_handle::ReflectHandle;
use super::{Lookup, ObjectRef};
use crate::watcher;
use kube_core::{ResourceExt, Selector, SelectorExt};
use std::collections::HashMap;
use std::fmt::{self, Debug};
use std::future::Future;
use std::hash::Hash;
use std::sync::{Arc, PoisonError, RwLock};
use thiserror::Error;

type Cache<K> = Arc<RwLock<HashMap<ObjectRef<K>, Arc<K>>>>;

/// Writes a store from watcher events, as kube-runtime 5.0's `store::Writer`. Usually moved
/// into [`reflector()`](crate::reflector()); its [`Store`]s read what it writes. A shared
/// writer (`new_shared`, with `unstable-runtime-subscribe`) also has subscribers
/// ([`ReflectHandle`]s) that the reflector tells about every object
/// it applies.
pub struct Writer<K: 'static + Lookup + Clone>
where
    K::DynamicType: Eq + Hash + Clone,
{
    store: Cache<K>,
    /// The listing in progress, swapped into `store` at `InitDone`.
    buffer: HashMap<ObjectRef<K>, Arc<K>>,
    dyntype: K::DynamicType,
    ready: Ready,
    when_ready: WhenReady,
    /// The subscribers' channel, for a shared writer.
    dispatcher: Option<Dispatcher<K>>,
}

impl<K: 'static + Lookup + Clone> Writer<K>
where
    K::DynamicType: Eq + Hash + Clone,
{
    /// An empty store for objects of the type `dyntype`.
    pub fn new(dyntype: K::DynamicType) -> Self {
        Self::with_dispatcher(dyntype, None)
    }

    /// An empty shared store for objects of the type `dyntype`, as kube-runtime 5.0's
    /// `Writer::new_shared`: [`subscribe`](Self::subscribe) gives streams of the objects
    /// the reflector applies. Up to `buf_size` objects wait for the slowest subscriber;
    /// then the reflector waits for it (see [`ReflectHandle`]).
    ///
    /// # Panics
    /// If `buf_size` is 0, as kube's.
    #[cfg(feature = "unstable-runtime-subscribe")]
    pub fn new_shared(buf_size: usize, dyntype: K::DynamicType) -> Self {
        Self::with_dispatcher(dyntype, Some(Dispatcher::new(buf_size)))
    }

    fn with_dispatcher(dyntype: K::DynamicType, dispatcher: Option<Dispatcher<K>>) -> Self {
        let (ready, when_ready) = ready();
        Self {
            store: Cache::default(),
            buffer: HashMap::new(),
            dyntype,
            ready,
            when_ready,
            dispatcher,
        }
    }

    /// A reader of this writer's store.
    #[must_use]
    pub fn as_reader(&self) -> Store<K> {
        Store {
            store: self.store.clone(),
            when_ready: self.when_ready.clone(),
        }
    }

    /// A new subscriber of a shared writer (`None` for a writer from [`new`](Self::new),
    /// [`store()`] or `Default`), as kube-runtime 5.0's `Writer::subscribe`. It sees the
    /// objects applied from now on; see [`ReflectHandle`] for what it yields and how a
    /// slow subscriber holds the reflector back.
    #[cfg(feature = "unstable-runtime-subscribe")]
    #[must_use]
    pub fn subscribe(&self) -> Option<ReflectHandle<K>> {
        self.dispatcher
            .as_ref()
            .map(|dispatcher| dispatcher.subscribe(self.as_reader()))
    }

    /// Applies one watcher event: `Apply` inserts or replaces the object, `Delete` removes
    /// it; `Init` starts a fresh listing, `InitApply` adds to it, and `InitDone` replaces the
    /// whole store with it (dropping objects deleted meanwhile) and marks the store ready
    /// ([`Store::wait_until_ready`]). Readers see the old contents until `InitDone`.
    pub fn apply_watcher_event(&mut self, event: &watcher::Event<K>) {
        match event {
            watcher::Event::Apply(obj) => {
                let key = obj.to_object_ref(self.dyntype.clone());
                write(&self.store).insert(key, Arc::new(obj.clone()));
            }
            watcher::Event::Delete(obj) => {
                let key = obj.to_object_ref(self.dyntype.clone());
                write(&self.store).remove(&key);
            }
            watcher::Event::Init => self.buffer = HashMap::new(),
            watcher::Event::InitApply(obj) => {
                let key = obj.to_object_ref(self.dyntype.clone());
                self.buffer.insert(key, Arc::new(obj.clone()));
            }
            watcher::Event::InitDone => {
                *write(&self.store) = std::mem::take(&mut self.buffer);
                self.ready.fire();
            }
        }
    }

    /// Tells a shared writer's subscribers about `event`, once applied: the object of an
    /// `Apply`, every stored object at `InitDone`, nothing for other events (or when not
    /// shared). The future waits while the subscribers' buffer is full; it does not
    /// borrow `event`.
    pub(crate) fn dispatch_event<'w>(
        &'w self,
        event: &watcher::Event<K>,
    ) -> impl Future<Output = ()> + use<'w, K> {
        let refs: Vec<ObjectRef<K>> = match (&self.dispatcher, event) {
            (Some(_), watcher::Event::Apply(obj)) => {
                vec![obj.to_object_ref(self.dyntype.clone())]
            }
            (Some(_), watcher::Event::InitDone) => read(&self.store).keys().cloned().collect(),
            _ => Vec::new(),
        };
        let dispatcher = self.dispatcher.as_ref();
        async move {
            if let Some(dispatcher) = dispatcher {
                for obj_ref in refs {
                    dispatcher.broadcast(obj_ref).await;
                }
            }
        }
    }
}

impl<K> Default for Writer<K>
where
    K: Lookup + Clone + 'static,
    K::DynamicType: Default + Eq + Hash + Clone,
{
    fn default() -> Self {
        Self::new(K::DynamicType::default())
    }
}

impl<K: 'static + Lookup + Clone> Debug for Writer<K>
where
    K: Debug,
    K::DynamicType: Eq + Hash + Clone + Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Writer")
            .field("store", &self.store)
            .field("buffer", &self.buffer)
            .field("dyntype", &self.dyntype)
            .field("ready", &self.ready)
            .field("dispatcher", &self.dispatcher)
            .finish()
    }
}

/// A read-only view of a reflector's cache, as kube-runtime 5.0's `reflector::Store`.
/// Cheap to clone; all clones see the same data. Objects are handed out as `Arc`s of
/// the cached values.
pub struct Store<K: 'static + Lookup>
where
    K::DynamicType: Hash + Eq,
{
    store: Cache<K>,
    when_ready: WhenReady,
}

impl<K: 'static + Lookup> Clone for Store<K>
where
    K::DynamicType: Hash + Eq,
{
    fn clone(&self) -> Self {
        Self {
            store: self.store.clone(),
            when_ready: self.when_ready.clone(),
        }
    }
}

impl<K: 'static + Lookup> Debug for Store<K>
where
    K: Debug,
    K::DynamicType: Hash + Eq + Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store")
            .field("store", &self.store)
            .field("ready", &self.when_ready)
            .finish()
    }
}

/// The writer of a store was dropped before the store became ready, as kube-runtime 5.0's
/// `store::WriterDropped`.
#[derive(Debug, Error)]
#[error("writer was dropped before store became ready")]
pub struct WriterDropped(());

impl<K: 'static + Clone + Lookup> Store<K>
where
    K::DynamicType: Eq + Hash + Clone,
{
    /// Waits until the writer has applied its first complete listing (`InitDone`);
    /// resolves at once afterwards. Dropping the future just stops waiting.
    ///
    /// # Errors
    /// [`WriterDropped`] if the writer is dropped before that.
    pub async fn wait_until_ready(&self) -> Result<(), WriterDropped> {
        self.when_ready.wait().await.map_err(WriterDropped)
    }

    /// The object `key` refers to; a namespaced key also finds a cluster-scoped object of
    /// that name (as kube's, for owner references that carry the child's namespace).
    #[must_use]
    pub fn get(&self, key: &ObjectRef<K>) -> Option<Arc<K>> {
        let store = read(&self.store);
        store
            .get(key)
            .or_else(|| {
                key.namespace.as_ref()?;
                let mut cluster_key = key.clone();
                cluster_key.namespace = None;
                store.get(&cluster_key)
            })
            .cloned()
    }

    /// Every cached object, in no particular order.
    #[must_use]
    pub fn state(&self) -> Vec<Arc<K>> {
        read(&self.store).values().cloned().collect()
    }

    /// Some cached object matching `predicate`.
    #[must_use]
    pub fn find<P>(&self, predicate: P) -> Option<Arc<K>>
    where
        P: Fn(&K) -> bool,
    {
        read(&self.store)
            .values()
            .find(|k| predicate(k.as_ref()))
            .cloned()
    }

    /// The cached objects matching `predicate`.
    #[must_use]
    pub fn state_filter<P>(&self, predicate: P) -> Vec<Arc<K>>
    where
        P: Fn(&K) -> bool,
    {
        read(&self.store)
            .values()
            .filter(|k| predicate(k.as_ref()))
            .cloned()
            .collect()
    }

    /// The cached objects whose labels match `selector`.
    #[must_use]
    pub fn state_filter_selector(&self, selector: &Selector) -> Vec<Arc<K>>
    where
        K: ResourceExt,
    {
        self.state_filter(|k| selector.matches(k.labels()))
    }

    /// The number of cached objects.
    #[must_use]
    pub fn len(&self) -> usize {
        read(&self.store).len()
    }

    /// Whether the cache is empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        read(&self.store).is_empty()
    }
}

/// A new store and its writer, for a type whose `DynamicType` has a default (every static
/// type), as kube-runtime 5.0's `reflector::store`.
#[must_use]
pub fn store<K>() -> (Store<K>, Writer<K>)
where
    K: Lookup + Clone + 'static,
    K::DynamicType: Eq + Hash + Clone + Default,
{
    let writer = Writer::<K>::default();
    (writer.as_reader(), writer)
}

/// A new shared store and its writer, for a type whose `DynamicType` has a default, as
/// kube-runtime 5.0's `reflector::store_shared`: see [`Writer::new_shared`] (`buf_size`
/// objects wait for the slowest subscriber) and [`Writer::subscribe`].
///
/// # Panics
/// If `buf_size` is 0, as kube's.
#[cfg(feature = "unstable-runtime-subscribe")]
#[must_use]
pub fn store_shared<K>(buf_size: usize) -> (Store<K>, Writer<K>)
where
    K: Lookup + Clone + 'static,
    K::DynamicType: Eq + Hash + Clone + Default,
{
    let writer = Writer::<K>::new_shared(buf_size, K::DynamicType::default());
    (writer.as_reader(), writer)
}

/// The cache for reading; a panic while it was held cannot leave it half-written (every
/// write is one map operation), so poisoning is ignored.
fn read<K: Lookup>(
    cache: &Cache<K>,
) -> std::sync::RwLockReadGuard<'_, HashMap<ObjectRef<K>, Arc<K>>> {
    cache.read().unwrap_or_else(PoisonError::into_inner)
}

/// The cache for writing (see [`read`] about poisoning).
fn write<K: Lookup>(
    cache: &Cache<K>,
) -> std::sync::RwLockWriteGuard<'_, HashMap<ObjectRef<K>, Arc<K>>> {
    cache.write().unwrap_or_else(PoisonError::into_inner)
}
