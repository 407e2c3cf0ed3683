//! Watches a Kubernetes collection and keeps watching, as kube-runtime 5.0's
//! `kube_runtime::watcher`.
//!
//! [`watcher()`] lists the collection (in pages of [`Config::page_size`], following the
//! `continue` token), then watches it from the list's `resourceVersion`. When the server ends
//! a watch (its timeout, about every 5 minutes) the watcher watches again from the last
//! `resourceVersion` it saw — an object's or a bookmark's — without relisting. When the
//! version is too old (`410 Gone`, as an `ERROR` event or as the answer to the watch
//! request) it relists, reporting the fresh state as `Init` / `InitApply` / `InitDone`.
//!
//! Errors are items of the stream, which goes on after them: put a backoff on it
//! ([`WatchStreamExt::default_backoff`](crate::WatchStreamExt::default_backoff)) or the
//! watcher retries at once.

mod backoff;
mod config;
mod error;
mod event;
mod idle;
mod state;

pub use backoff::{DefaultBackoff, ExponentialBackoff};
pub use config::{Config, InitialListStrategy, ListSemantic};
pub use error::{Error, Result};
pub use event::Event;

use futures::{Stream, StreamExt};
use kube_core::{PartialObjectMeta, Resource};
use kube_wasm_client::Api;
use serde::de::DeserializeOwned;
use state::{ApiMode, FullObject, MetaOnly, State};
use std::fmt::Debug;

/// Watches the objects of `api` as they change, as kube-runtime 5.0's `watcher`.
///
/// The stream never ends by itself; dropping it cancels the LIST or WATCH in flight on the
/// host. It is `Send`, so it can be driven from `tokio::spawn`. Each item is an [`Event`] or
/// an [`enum@Error`] after which the watcher retries at once on the next poll: add a backoff.
///
/// ```no_run
/// use futures::TryStreamExt;
/// use k8s_openapi::api::core::v1::Pod;
/// use kube_runtime_wasm::{WatchStreamExt, watcher};
/// use kube_wasm_client::{Api, Client};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let pods: Api<Pod> = Api::default_namespaced(Client::try_default().await?);
/// let mut changed = std::pin::pin!(
///     watcher(pods, watcher::Config::default()).default_backoff().applied_objects()
/// );
/// while let Some(pod) = changed.try_next().await? {
///     println!("saw {:?}", pod.metadata.name);
/// }
/// # Ok(())
/// # }
/// ```
#[doc(alias = "informer")]
pub fn watcher<K: Resource + Clone + DeserializeOwned + Debug + Send + 'static>(
    api: Api<K>,
    watcher_config: Config,
) -> impl Stream<Item = Result<Event<K>>> + Send {
    run(FullObject { api }, watcher_config)
}

/// Watches only the metadata of the objects of `api` (`PartialObjectMeta<K>`), as
/// kube-runtime 5.0's deprecated `metadata_watcher`; otherwise as [`watcher()`].
#[deprecated(
    since = "3.1.0",
    note = "Use `watcher(Api::<PartialObjectMeta<K>>::all(client), config)` instead. \
            `Api<PartialObjectMeta<K>>` now automatically uses metadata-only requests."
)]
pub fn metadata_watcher<K: Resource + Clone + DeserializeOwned + Debug + Send + 'static>(
    api: Api<K>,
    watcher_config: Config,
) -> impl Stream<Item = Result<Event<PartialObjectMeta<K>>>> + Send {
    run(MetaOnly { api }, watcher_config)
}

/// Watches the object named `name` in `api`, as kube-runtime 5.0's `watch_object`: yields
/// `Some(object)` when it exists or changes and `None` when it is deleted or absent from a
/// (re)listing.
pub fn watch_object<K: Resource + Clone + DeserializeOwned + Debug + Send + 'static>(
    api: Api<K>,
    name: &str,
) -> impl Stream<Item = Result<Option<K>>> + Send + use<K> {
    let fields = format!("metadata.name={name}");
    watcher(api, Config::default().fields(&fields))
        .scan(false, |seen, event| {
            match &event {
                Ok(Event::Init) => *seen = false,
                Ok(Event::InitApply(_)) => *seen = true,
                _ => {}
            }
            std::future::ready(Some((*seen, event)))
        })
        .filter_map(|(seen, event)| {
            std::future::ready(match event {
                Ok(Event::Apply(obj) | Event::InitApply(obj)) => Some(Ok(Some(obj))),
                Ok(Event::Delete(_)) => Some(Ok(None)),
                Ok(Event::InitDone) if !seen => Some(Ok(None)),
                Ok(Event::Init | Event::InitDone) => None,
                Err(err) => Some(Err(err)),
            })
        })
}

/// The watcher over either kind of request.
fn run<A>(api: A, config: Config) -> impl Stream<Item = Result<Event<A::Value>>> + Send
where
    A: ApiMode,
    A::Value: Resource,
{
    futures::stream::unfold(
        (api, config, State::Empty),
        |(api, config, state)| async move {
            let (item, state) = state::step(&api, &config, state).await;
            Some((item, (api, config, state)))
        },
    )
}
