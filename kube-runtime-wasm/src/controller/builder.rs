//! [`Controller`]: a reconcile loop fed by watches of the main object and related objects.

use super::LOG_TARGET;
use super::trigger::trigger_others;
#[cfg(feature = "unstable-runtime-subscribe")]
use super::trigger::trigger_owners_shared;
use super::{Action, Config, Error, ReconcileReason, ReconcileRequest, applier};
use super::{trigger_owners, trigger_self};
use crate::reflector::{ObjectRef, Store, reflector, store::Writer};
use crate::utils::{Backoff, StreamBackoff, WatchStreamExt};
use crate::watcher::{self, DefaultBackoff};
#[allow(deprecated)]
use crate::watcher::{metadata_watcher, watcher};
use futures::channel::oneshot;
use futures::future::{self, BoxFuture};
use futures::stream::{self, BoxStream};
use futures::{FutureExt, Stream, StreamExt, TryFuture, TryFutureExt};
use kube_core::Resource;
use kube_wasm_client::Api;
use serde::de::DeserializeOwned;
use std::fmt::Debug;
use std::future::Future;
use std::hash::Hash;
use std::sync::Arc;

/// A controller for objects of type `K`, as kube-runtime 5.0's `controller::Controller`.
///
/// Build it from the main object's watch ([`new`](Self::new)) or, as in kube behind its
/// `unstable-runtime-*` features, from a stream of the main objects (`for_stream`,
/// `for_shared_stream`); add related triggers ([`owns`](Self::owns),
/// [`watches`](Self::watches), [`reconcile_all_on`](Self::reconcile_all_on), and the
/// gated `owns_stream`, `watches_stream`, `owns_shared_stream`, `watches_shared_stream`,
/// `reconcile_on`) and shutdown conditions, then [`run`](Self::run) it. Watch streams are retried with the trigger
/// backoff ([`DefaultBackoff`] unless [`trigger_backoff`](Self::trigger_backoff) is set),
/// waiting on host timers.
pub struct Controller<K>
where
    K: Clone + Resource + Debug + 'static,
    K::DynamicType: Eq + Hash,
{
    triggers: stream::SelectAll<BoxStream<'static, Result<ReconcileRequest<K>, watcher::Error>>>,
    trigger_backoff: Box<dyn Backoff + Send>,
    /// Any of these completing stops taking new requests (running reconciliations finish).
    graceful_shutdown: Vec<BoxFuture<'static, ()>>,
    /// Any of these completing ends the stream at once.
    forceful_shutdown: Vec<BoxFuture<'static, ()>>,
    dyntype: K::DynamicType,
    reader: Store<K>,
    config: Config,
}

impl<K> Controller<K>
where
    K: Clone + Resource + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Eq + Hash + Clone,
{
    /// A controller of the objects `main_api` lists and watches with `wc`: each applied
    /// (created or changed) object is reconciled, and kept in [`store`](Self::store).
    #[must_use]
    pub fn new(main_api: Api<K>, wc: watcher::Config) -> Self
    where
        K::DynamicType: Default,
    {
        Self::new_with(main_api, wc, Default::default())
    }

    /// [`new`](Self::new) for a type with runtime type information `dyntype` (e.g.
    /// `DynamicObject`).
    pub fn new_with(main_api: Api<K>, wc: watcher::Config, dyntype: K::DynamicType) -> Self {
        let writer = Writer::<K>::new(dyntype.clone());
        let reader = writer.as_reader();
        let main = trigger_self(
            reflector(writer, watcher(main_api, wc)).applied_objects(),
            dyntype.clone(),
        );
        Self::from_trigger(main.boxed(), reader, dyntype)
    }

    /// A controller reconciling each object of `trigger` (e.g. a filtered watcher stream
    /// that feeds `reader`'s writer), as kube-runtime 5.0's `Controller::for_stream`
    /// (feature `unstable-runtime-stream-control`, as there). Objects are read from `reader`.
    #[cfg(feature = "unstable-runtime-stream-control")]
    pub fn for_stream(
        trigger: impl Stream<Item = Result<K, watcher::Error>> + Send + 'static,
        reader: Store<K>,
    ) -> Self
    where
        K::DynamicType: Default,
    {
        Self::for_stream_with(trigger, reader, Default::default())
    }

    /// [`for_stream`](Self::for_stream) for a type with runtime type information `dyntype`.
    #[cfg(feature = "unstable-runtime-stream-control")]
    pub fn for_stream_with(
        trigger: impl Stream<Item = Result<K, watcher::Error>> + Send + 'static,
        reader: Store<K>,
        dyntype: K::DynamicType,
    ) -> Self {
        let main = trigger_self(trigger, dyntype.clone());
        Self::from_trigger(main.boxed(), reader, dyntype)
    }

    /// A controller reconciling each object of a shared stream, as kube-runtime 5.0's
    /// `Controller::for_shared_stream` (feature `unstable-runtime-subscribe`, as there):
    /// `trigger` is usually a [`ReflectHandle`](crate::reflector::ReflectHandle) of the
    /// shared store `reader` reads, so several controllers share one watch. The stream
    /// feeding that store (its reflector) must be polled separately, or both wait forever.
    #[cfg(feature = "unstable-runtime-subscribe")]
    pub fn for_shared_stream(
        trigger: impl Stream<Item = Arc<K>> + Send + 'static,
        reader: Store<K>,
    ) -> Self
    where
        K::DynamicType: Default,
    {
        Self::for_shared_stream_with(trigger, reader, Default::default())
    }

    /// [`for_shared_stream`](Self::for_shared_stream) for a type with runtime type
    /// information `dyntype`.
    #[cfg(feature = "unstable-runtime-subscribe")]
    pub fn for_shared_stream_with(
        trigger: impl Stream<Item = Arc<K>> + Send + 'static,
        reader: Store<K>,
        dyntype: K::DynamicType,
    ) -> Self {
        let main = trigger_self(trigger.map(Ok::<_, watcher::Error>), dyntype.clone());
        Self::from_trigger(main.boxed(), reader, dyntype)
    }

    fn from_trigger(
        main: BoxStream<'static, Result<ReconcileRequest<K>, watcher::Error>>,
        reader: Store<K>,
        dyntype: K::DynamicType,
    ) -> Self {
        let mut triggers = stream::SelectAll::new();
        triggers.push(main);
        Self {
            triggers,
            trigger_backoff: Box::<DefaultBackoff>::default(),
            // Never complete: shut down only on the conditions added later.
            graceful_shutdown: vec![future::pending().boxed()],
            forceful_shutdown: vec![future::pending().boxed()],
            dyntype,
            reader,
            config: Config::default(),
        }
    }

    /// Uses `config`'s debounce and concurrency limit.
    #[must_use]
    pub fn with_config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }

    /// Retries failing trigger watches with `backoff` instead of [`DefaultBackoff`].
    #[must_use]
    pub fn trigger_backoff(mut self, backoff: impl Backoff + 'static) -> Self {
        self.trigger_backoff = Box::new(backoff);
        self
    }

    /// A reader of the main objects' cache (ready once the first listing completes).
    pub fn store(&self) -> Store<K> {
        self.reader.clone()
    }

    /// Also reconciles the owners (of type `K`) of the `Child` objects `api` watches with
    /// `wc`, when a child is applied or deleted (a metadata-only watch).
    #[must_use]
    pub fn owns<Child>(self, api: Api<Child>, wc: watcher::Config) -> Self
    where
        Child: Clone + Resource<DynamicType = ()> + DeserializeOwned + Debug + Send + 'static,
    {
        self.owns_with(api, (), wc)
    }

    /// [`owns`](Self::owns) for a child type with runtime type information `dyntype`.
    #[must_use]
    pub fn owns_with<Child>(
        mut self,
        api: Api<Child>,
        dyntype: Child::DynamicType,
        wc: watcher::Config,
    ) -> Self
    where
        Child: Clone + Resource + DeserializeOwned + Debug + Send + 'static,
        Child::DynamicType: Debug + Eq + Hash + Clone,
    {
        #[allow(deprecated)]
        let children = metadata_watcher(api, wc).touched_objects();
        let owners = trigger_owners(children, self.dyntype.clone(), dyntype);
        self.triggers.push(owners.boxed());
        self
    }

    /// Also reconciles the owners (of type `K`) of each child object of `trigger` (e.g. a
    /// filtered watcher stream), as kube-runtime 5.0's `Controller::owns_stream`
    /// (feature `unstable-runtime-stream-control`, as there).
    #[cfg(feature = "unstable-runtime-stream-control")]
    #[must_use]
    pub fn owns_stream<Child: Resource<DynamicType = ()> + Send + 'static>(
        self,
        trigger: impl Stream<Item = Result<Child, watcher::Error>> + Send + 'static,
    ) -> Self {
        self.owns_stream_with(trigger, ())
    }

    /// [`owns_stream`](Self::owns_stream) for a child type with runtime type information
    /// `dyntype`.
    #[cfg(feature = "unstable-runtime-stream-control")]
    #[must_use]
    pub fn owns_stream_with<Child: Resource + Send + 'static>(
        mut self,
        trigger: impl Stream<Item = Result<Child, watcher::Error>> + Send + 'static,
        dyntype: Child::DynamicType,
    ) -> Self
    where
        Child::DynamicType: Debug + Eq + Hash + Clone,
    {
        let owners = trigger_owners(trigger, self.dyntype.clone(), dyntype);
        self.triggers.push(owners.boxed());
        self
    }

    /// Also reconciles the owners (of type `K`) of each child of a shared stream (e.g. a
    /// [`ReflectHandle`](crate::reflector::ReflectHandle)), as kube-runtime 5.0's
    /// `Controller::owns_shared_stream` (feature `unstable-runtime-subscribe`, as there).
    /// The stream feeding the children's shared store must be polled separately.
    #[cfg(feature = "unstable-runtime-subscribe")]
    #[must_use]
    pub fn owns_shared_stream<Child: Resource<DynamicType = ()> + Send + 'static>(
        self,
        trigger: impl Stream<Item = Arc<Child>> + Send + 'static,
    ) -> Self {
        self.owns_shared_stream_with(trigger, ())
    }

    /// [`owns_shared_stream`](Self::owns_shared_stream) taking the child's `dyntype`
    /// (which kube 5.0 also restricts to `()`).
    #[cfg(feature = "unstable-runtime-subscribe")]
    #[must_use]
    pub fn owns_shared_stream_with<Child: Resource<DynamicType = ()> + Send + 'static>(
        mut self,
        trigger: impl Stream<Item = Arc<Child>> + Send + 'static,
        dyntype: Child::DynamicType,
    ) -> Self
    where
        Child::DynamicType: Debug + Eq + Hash + Clone,
    {
        let owners = trigger_owners_shared(
            trigger.map(Ok::<_, watcher::Error>),
            self.dyntype.clone(),
            dyntype,
        );
        self.triggers.push(owners.boxed());
        self
    }

    /// Also reconciles the objects `mapper` relates to each `Other` object `api` watches
    /// with `wc`, when one is applied or deleted.
    #[must_use]
    pub fn watches<Other, I>(
        self,
        api: Api<Other>,
        wc: watcher::Config,
        mapper: impl Fn(Other) -> I + Sync + Send + 'static,
    ) -> Self
    where
        Other: Clone + Resource + DeserializeOwned + Debug + Send + 'static,
        Other::DynamicType: Default + Debug + Clone + Eq + Hash,
        I: 'static + IntoIterator<Item = ObjectRef<K>>,
        I::IntoIter: Send,
    {
        self.watches_with(api, Default::default(), wc, mapper)
    }

    /// [`watches`](Self::watches) for a type with runtime type information `dyntype`.
    #[must_use]
    pub fn watches_with<Other, I>(
        mut self,
        api: Api<Other>,
        dyntype: Other::DynamicType,
        wc: watcher::Config,
        mapper: impl Fn(Other) -> I + Sync + Send + 'static,
    ) -> Self
    where
        Other: Clone + Resource + DeserializeOwned + Debug + Send + 'static,
        I: 'static + IntoIterator<Item = ObjectRef<K>>,
        I::IntoIter: Send,
        Other::DynamicType: Debug + Clone + Eq + Hash,
    {
        let others = trigger_others(watcher(api, wc).touched_objects(), mapper, dyntype);
        self.triggers.push(others.boxed());
        self
    }

    /// Also reconciles the objects `mapper` relates to each object of `trigger`, as
    /// kube-runtime 5.0's `Controller::watches_stream` (feature
    /// `unstable-runtime-stream-control`, as there).
    #[cfg(feature = "unstable-runtime-stream-control")]
    #[must_use]
    pub fn watches_stream<Other, I>(
        self,
        trigger: impl Stream<Item = Result<Other, watcher::Error>> + Send + 'static,
        mapper: impl Fn(Other) -> I + Sync + Send + 'static,
    ) -> Self
    where
        Other: Clone + Resource + DeserializeOwned + Debug + Send + 'static,
        Other::DynamicType: Default + Debug + Clone,
        I: 'static + IntoIterator<Item = ObjectRef<K>>,
        I::IntoIter: Send,
    {
        self.watches_stream_with(trigger, mapper, Default::default())
    }

    /// [`watches_stream`](Self::watches_stream) for a type with runtime type information
    /// `dyntype`.
    #[cfg(feature = "unstable-runtime-stream-control")]
    #[must_use]
    pub fn watches_stream_with<Other, I>(
        mut self,
        trigger: impl Stream<Item = Result<Other, watcher::Error>> + Send + 'static,
        mapper: impl Fn(Other) -> I + Sync + Send + 'static,
        dyntype: Other::DynamicType,
    ) -> Self
    where
        Other: Clone + Resource + DeserializeOwned + Debug + Send + 'static,
        Other::DynamicType: Debug + Clone,
        I: 'static + IntoIterator<Item = ObjectRef<K>>,
        I::IntoIter: Send,
    {
        let others = trigger_others(trigger, mapper, dyntype);
        self.triggers.push(others.boxed());
        self
    }

    /// Also reconciles the objects `mapper` relates to each object of a shared stream
    /// (e.g. a [`ReflectHandle`](crate::reflector::ReflectHandle)), as kube-runtime 5.0's
    /// `Controller::watches_shared_stream` (feature `unstable-runtime-subscribe`, as
    /// there). The stream feeding that shared store must be polled separately.
    #[cfg(feature = "unstable-runtime-subscribe")]
    #[must_use]
    pub fn watches_shared_stream<Other, I>(
        self,
        trigger: impl Stream<Item = Arc<Other>> + Send + 'static,
        mapper: impl Fn(Arc<Other>) -> I + Sync + Send + 'static,
    ) -> Self
    where
        Other: Clone + Resource + DeserializeOwned + Debug + Send + 'static,
        Other::DynamicType: Default + Debug + Clone,
        I: 'static + IntoIterator<Item = ObjectRef<K>>,
        I::IntoIter: Send,
    {
        self.watches_shared_stream_with(trigger, mapper, Default::default())
    }

    /// [`watches_shared_stream`](Self::watches_shared_stream) for a type with runtime
    /// type information `dyntype`.
    #[cfg(feature = "unstable-runtime-subscribe")]
    #[must_use]
    pub fn watches_shared_stream_with<Other, I>(
        mut self,
        trigger: impl Stream<Item = Arc<Other>> + Send + 'static,
        mapper: impl Fn(Arc<Other>) -> I + Sync + Send + 'static,
        dyntype: Other::DynamicType,
    ) -> Self
    where
        Other: Clone + Resource + DeserializeOwned + Debug + Send + 'static,
        Other::DynamicType: Debug + Clone,
        I: 'static + IntoIterator<Item = ObjectRef<K>>,
        I::IntoIter: Send,
    {
        let others =
            trigger_others::<_, Other, _, _>(trigger.map(Ok::<_, watcher::Error>), mapper, dyntype);
        self.triggers.push(others.boxed());
        self
    }

    /// Reconciles each object `trigger` names ([`ReconcileReason::Unknown`]), as
    /// kube-runtime 5.0's `Controller::reconcile_on` (feature
    /// `unstable-runtime-reconcile-on`, as there). Objects missing from the store are
    /// reported as [`Error::ObjectNotFound`].
    #[cfg(feature = "unstable-runtime-reconcile-on")]
    #[must_use]
    pub fn reconcile_on(
        mut self,
        trigger: impl Stream<Item = ObjectRef<K>> + Send + 'static,
    ) -> Self {
        let requests = trigger.map(|obj_ref| {
            Ok(ReconcileRequest {
                obj_ref,
                reason: ReconcileReason::Unknown,
            })
        });
        self.triggers.push(requests.boxed());
        self
    }

    /// Reconciles every object in the store each time `trigger` yields
    /// ([`ReconcileReason::BulkReconcile`]).
    #[must_use]
    pub fn reconcile_all_on(mut self, trigger: impl Stream<Item = ()> + Send + 'static) -> Self {
        let store = self.store();
        let dyntype = self.dyntype.clone();
        let all = trigger.flat_map(move |()| {
            let dyntype = dyntype.clone();
            stream::iter(store.state().into_iter().map(move |obj| {
                Ok(ReconcileRequest {
                    obj_ref: ObjectRef::from_obj_with(&*obj, dyntype.clone()),
                    reason: ReconcileReason::BulkReconcile,
                })
            }))
        });
        self.triggers.push(all.boxed());
        self
    }

    /// Shuts down gracefully when `trigger` completes: no new reconciliation starts, the
    /// running ones finish, then the stream ends.
    #[must_use]
    pub fn graceful_shutdown_on(
        mut self,
        trigger: impl Future<Output = ()> + Send + Sync + 'static,
    ) -> Self {
        self.graceful_shutdown.push(trigger.boxed());
        self
    }

    /// Shuts down gracefully on the host's stop request (`kube-wasm-tokio`'s
    /// `signal::ctrl_c`, standing for SIGINT/SIGTERM), and at once on a second one — logging
    /// what kube-runtime logs, from its target `kube_runtime::controller`.
    #[must_use]
    pub fn shutdown_on_signal(mut self) -> Self {
        async fn stop_requested() {
            // `ctrl_c` cannot fail in a guest; an error would still mean "stop".
            let _ = kube_wasm_tokio::signal::ctrl_c().await;
        }
        let (graceful_tx, graceful_rx) = oneshot::channel::<()>();
        self.graceful_shutdown.push(graceful_rx.map(|_| ()).boxed());
        self.forceful_shutdown.push(
            async move {
                tracing::info!(target: LOG_TARGET, "press ctrl+c to shut down gracefully");
                stop_requested().await;
                if let Ok(()) = graceful_tx.send(()) {
                    tracing::info!(
                        target: LOG_TARGET,
                        "graceful shutdown requested, press ctrl+c again to force shutdown"
                    );
                } else {
                    tracing::info!(
                        target: LOG_TARGET,
                        "graceful shutdown already requested, press ctrl+c again to force shutdown"
                    );
                }
                stop_requested().await;
                tracing::info!(target: LOG_TARGET, "forced shutdown requested");
            }
            .boxed(),
        );
        self
    }

    /// Runs the controller: a stream of each reconciliation's outcome, to be polled (e.g.
    /// with `for_each`) for the controller to make progress. See [`applier`] for the
    /// scheduling rules; trigger (watch) errors are reported as [`Error::QueueError`] and
    /// retried with the trigger backoff.
    ///
    /// Reconciliations run inside this stream's task (the guest is single-threaded, so
    /// spawning them, as kube-runtime does, would not add parallelism).
    pub fn run<ReconcilerFut, Ctx>(
        self,
        mut reconciler: impl FnMut(Arc<K>, Arc<Ctx>) -> ReconcilerFut,
        error_policy: impl Fn(Arc<K>, &ReconcilerFut::Error, Arc<Ctx>) -> Action,
        context: Arc<Ctx>,
    ) -> impl Stream<Item = Result<(ObjectRef<K>, Action), Error<ReconcilerFut::Error, watcher::Error>>>
    where
        K::DynamicType: Debug + Unpin,
        ReconcilerFut: TryFuture<Ok = Action> + Send + 'static,
        ReconcilerFut::Error: std::error::Error + Send + 'static,
    {
        let queue = StreamBackoff::new(self.triggers, self.trigger_backoff)
            .take_until(future::select_all(self.graceful_shutdown));
        applier(
            move |obj, ctx| Box::pin(TryFutureExt::into_future(reconciler(obj, ctx))),
            error_policy,
            context,
            self.reader,
            queue,
            self.config,
        )
        .take_until(future::select_all(self.forceful_shutdown))
    }
}
