//! The watcher's state machine, as kube-runtime 5.0's: LIST page by page (or one
//! streaming-list WATCH), then WATCH from the last known `resourceVersion`, resuming after
//! every watch end and relisting after `410 Gone`.

use super::idle::{IdleWatch, WatchStream};
use super::{Config, Error, Event, InitialListStrategy, Result};
use futures::StreamExt;
use kube_core::params::{ListParams, WatchParams};
use kube_core::{ObjectList, PartialObjectMeta, Resource, ResourceExt, WatchEvent};
use kube_wasm_client::{Api, Error as ClientError};
use serde::de::DeserializeOwned;
use std::collections::VecDeque;
use std::fmt::Debug;
use std::future::Future;

/// The annotation of the bookmark that ends a streaming list's initial events.
const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";

/// Where the watcher is.
pub(crate) enum State<V> {
    /// Nothing known: the next step starts a (re)listing with `Init`.
    Empty,
    /// Listing page by page: `objects` of the current page are still to be sent;
    /// `continue_token` asks for the next page; `last_bookmark` is the resourceVersion of
    /// the latest page.
    InitPage {
        continue_token: Option<String>,
        objects: VecDeque<V>,
        last_bookmark: Option<String>,
    },
    /// A streaming list: the initial events are arriving on `stream`.
    InitialWatch { stream: IdleWatch<V> },
    /// Listed (or the watch ended): the next step watches from `resource_version`.
    InitListed { resource_version: String },
    /// Watching; `resource_version` is the last one seen.
    Watching {
        resource_version: String,
        stream: IdleWatch<V>,
    },
}

/// Full objects or metadata only: the two kinds of LIST and WATCH the watcher issues.
pub(crate) trait ApiMode: Send + Sync {
    /// What is listed and watched.
    type Value: Clone + Send + 'static;

    /// One LIST page.
    fn list(
        &self,
        lp: &ListParams,
    ) -> impl Future<Output = kube_wasm_client::Result<ObjectList<Self::Value>>> + Send;

    /// Starts a WATCH from `version`.
    fn watch(
        &self,
        wp: &WatchParams,
        version: &str,
    ) -> impl Future<Output = kube_wasm_client::Result<WatchStream<Self::Value>>> + Send;
}

/// Lists and watches whole objects (`Api::list`, `Api::watch`).
pub(crate) struct FullObject<K> {
    pub(crate) api: Api<K>,
}

impl<K> ApiMode for FullObject<K>
where
    K: Clone + Debug + DeserializeOwned + Send + 'static,
{
    type Value = K;

    async fn list(&self, lp: &ListParams) -> kube_wasm_client::Result<ObjectList<K>> {
        self.api.list(lp).await
    }

    async fn watch(
        &self,
        wp: &WatchParams,
        version: &str,
    ) -> kube_wasm_client::Result<WatchStream<K>> {
        self.api.watch(wp, version).await.map(StreamExt::boxed)
    }
}

/// Lists and watches metadata only (`Api::list_metadata`, `Api::watch_metadata`).
pub(crate) struct MetaOnly<K> {
    pub(crate) api: Api<K>,
}

impl<K> ApiMode for MetaOnly<K>
where
    K: Clone + Debug + DeserializeOwned + Send + 'static,
{
    type Value = PartialObjectMeta<K>;

    async fn list(
        &self,
        lp: &ListParams,
    ) -> kube_wasm_client::Result<ObjectList<PartialObjectMeta<K>>> {
        self.api.list_metadata(lp).await
    }

    async fn watch(
        &self,
        wp: &WatchParams,
        version: &str,
    ) -> kube_wasm_client::Result<WatchStream<PartialObjectMeta<K>>> {
        self.api
            .watch_metadata(wp, version)
            .await
            .map(StreamExt::boxed)
    }
}

/// Logs a client error as kube does: a 403 as a warning (usually missing RBAC), else debug.
fn log_client_error(what: &str, err: &ClientError) {
    if matches!(err, ClientError::Api(status) if status.is_forbidden()) {
        tracing::warn!("{what} error with 403: {err:?}");
    } else {
        tracing::debug!("{what} error: {err:?}");
    }
}

/// Whether `err` is the API server's `410 Gone`.
fn is_gone(err: &ClientError) -> bool {
    matches!(err, ClientError::Api(status) if status.code == 410)
}

/// The result of one step: maybe an item for the stream, and the next state.
type Step<V> = (Option<Result<Event<V>>>, State<V>);

/// Runs steps until one produces an item.
pub(crate) async fn step<A>(
    api: &A,
    config: &Config,
    mut state: State<A::Value>,
) -> (Result<Event<A::Value>>, State<A::Value>)
where
    A: ApiMode,
    A::Value: Resource,
{
    loop {
        match step_once(api, config, state).await {
            (Some(item), next) => return (item, next),
            (None, next) => state = next,
        }
    }
}

/// One transition of the state machine.
async fn step_once<A>(api: &A, config: &Config, state: State<A::Value>) -> Step<A::Value>
where
    A: ApiMode,
    A::Value: Resource,
{
    match state {
        State::Empty => start(api, config).await,
        State::InitPage {
            continue_token,
            objects,
            last_bookmark,
        } => list_page(api, config, continue_token, objects, last_bookmark).await,
        State::InitialWatch { stream } => initial_watch(stream).await,
        State::InitListed { resource_version } => {
            match api
                .watch(&config.to_watch_params(false), &resource_version)
                .await
            {
                Ok(stream) => (
                    None,
                    State::Watching {
                        resource_version,
                        stream: IdleWatch::new(stream, config.timeout),
                    },
                ),
                Err(err) => {
                    log_client_error("watch start", &err);
                    // A 410 here means the version is gone for good: retrying it would
                    // fail forever, so relist.
                    let next = if is_gone(&err) {
                        State::Empty
                    } else {
                        State::InitListed { resource_version }
                    };
                    (Some(Err(Error::WatchStartFailed(err))), next)
                }
            }
        }
        State::Watching {
            resource_version,
            stream,
        } => watching(resource_version, stream).await,
    }
}

/// Starts a (re)listing: `Init`, then pages, or the streaming-list watch.
async fn start<A>(api: &A, config: &Config) -> Step<A::Value>
where
    A: ApiMode,
    A::Value: Resource,
{
    match config.initial_list_strategy {
        InitialListStrategy::ListWatch => (
            Some(Ok(Event::Init)),
            State::InitPage {
                continue_token: None,
                objects: VecDeque::new(),
                last_bookmark: None,
            },
        ),
        InitialListStrategy::StreamingList => {
            match api.watch(&config.to_watch_params(true), "0").await {
                Ok(stream) => (
                    Some(Ok(Event::Init)),
                    State::InitialWatch {
                        stream: IdleWatch::new(stream, config.timeout),
                    },
                ),
                Err(err) => {
                    log_client_error("streaming list start", &err);
                    (Some(Err(Error::WatchStartFailed(err))), State::Empty)
                }
            }
        }
    }
}

/// Sends the current page's objects one by one, then fetches the next page, or finishes
/// the listing with `InitDone` after the last one.
async fn list_page<A>(
    api: &A,
    config: &Config,
    continue_token: Option<String>,
    mut objects: VecDeque<A::Value>,
    last_bookmark: Option<String>,
) -> Step<A::Value>
where
    A: ApiMode,
    A::Value: Resource,
{
    if let Some(next) = objects.pop_front() {
        return (
            Some(Ok(Event::InitApply(next))),
            State::InitPage {
                continue_token,
                objects,
                last_bookmark,
            },
        );
    }
    if continue_token.is_none()
        && let Some(resource_version) = last_bookmark
    {
        return (
            Some(Ok(Event::InitDone)),
            State::InitListed { resource_version },
        );
    }
    let mut lp = config.to_list_params();
    lp.continue_token = continue_token;
    match api.list(&lp).await {
        Ok(list) => {
            let last_bookmark = list.metadata.resource_version.filter(|v| !v.is_empty());
            let continue_token = list.metadata.continue_.filter(|c| !c.is_empty());
            if last_bookmark.is_none() && continue_token.is_none() {
                return (Some(Err(Error::NoResourceVersion)), State::Empty);
            }
            (
                None,
                State::InitPage {
                    continue_token,
                    objects: list.items.into(),
                    last_bookmark,
                },
            )
        }
        Err(err) => {
            log_client_error("list", &err);
            (Some(Err(Error::InitialListFailed(err))), State::Empty)
        }
    }
}

/// The initial events of a streaming list, until the bookmark that ends them.
async fn initial_watch<V>(mut stream: IdleWatch<V>) -> Step<V>
where
    V: Resource,
{
    match stream.next().await {
        Some(Ok(WatchEvent::Added(obj) | WatchEvent::Modified(obj))) => (
            Some(Ok(Event::InitApply(obj))),
            State::InitialWatch { stream },
        ),
        Some(Ok(WatchEvent::Deleted(_))) => {
            // Kubernetes promises none during the initial events.
            tracing::error!("got deleted event during initial watch. this is a bug");
            (None, State::InitialWatch { stream })
        }
        Some(Ok(WatchEvent::Bookmark(bookmark))) => {
            if bookmark
                .metadata
                .annotations
                .contains_key(INITIAL_EVENTS_END)
            {
                (
                    Some(Ok(Event::InitDone)),
                    State::Watching {
                        resource_version: bookmark.metadata.resource_version,
                        stream,
                    },
                )
            } else {
                (None, State::InitialWatch { stream })
            }
        }
        Some(Ok(WatchEvent::Error(status))) => {
            let next = if status.code == 410 {
                State::Empty
            } else {
                State::InitialWatch { stream }
            };
            (Some(Err(Error::WatchError(status.boxed()))), next)
        }
        Some(Err(err)) => {
            log_client_error("watcher", &err);
            (
                Some(Err(Error::WatchFailed(err))),
                State::InitialWatch { stream },
            )
        }
        None => (None, State::Empty),
    }
}

/// One event of an established watch.
async fn watching<V>(resource_version: String, mut stream: IdleWatch<V>) -> Step<V>
where
    V: Resource,
{
    match stream.next().await {
        Some(Ok(WatchEvent::Added(obj) | WatchEvent::Modified(obj))) => {
            applied(obj, stream, Event::Apply)
        }
        Some(Ok(WatchEvent::Deleted(obj))) => applied(obj, stream, Event::Delete),
        Some(Ok(WatchEvent::Bookmark(bookmark))) => (
            None,
            State::Watching {
                resource_version: bookmark.metadata.resource_version,
                stream,
            },
        ),
        Some(Ok(WatchEvent::Error(status))) => {
            if status.code == 403 {
                tracing::warn!("watcher watchevent error 403: {status:?}");
            } else {
                tracing::debug!("watcher watchevent error: {status:?}");
            }
            // 410 Gone: the version is too old, the watcher has desynced and relists.
            let next = if status.code == 410 {
                State::Empty
            } else {
                State::Watching {
                    resource_version,
                    stream,
                }
            };
            (Some(Err(Error::WatchError(status.boxed()))), next)
        }
        Some(Err(err)) => {
            log_client_error("watcher", &err);
            (
                Some(Err(Error::WatchFailed(err))),
                State::Watching {
                    resource_version,
                    stream,
                },
            )
        }
        None => (None, State::InitListed { resource_version }),
    }
}

/// An `Apply` or `Delete` of `obj`, whose resourceVersion becomes the resume point; an
/// object without one is an error and relists, as in kube.
fn applied<V: Resource>(obj: V, stream: IdleWatch<V>, event: fn(V) -> Event<V>) -> Step<V> {
    let resource_version = obj.resource_version().unwrap_or_default();
    if resource_version.is_empty() {
        return (Some(Err(Error::NoResourceVersion)), State::Empty);
    }
    (
        Some(Ok(event(obj))),
        State::Watching {
            resource_version,
            stream,
        },
    )
}
