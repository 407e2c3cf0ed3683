//! Caches the objects a watcher sees, as kube-runtime 5.0's `kube_runtime::reflector`.
//!
//! A [`store()`] is a [`Writer`](store::Writer) and a [`Store`] reading what it writes;
//! [`reflector()`] (or [`WatchStreamExt::reflect`](crate::WatchStreamExt::reflect)) applies
//! every event of a watcher stream to the writer while passing the events on:
//!
//! ```no_run
//! use futures::StreamExt;
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kube_runtime_wasm::{WatchStreamExt, reflector, watcher};
//! use kube_wasm_client::{Api, Client};
//!
//! # async fn run(client: Client) {
//! let (reader, writer) = reflector::store::<ConfigMap>();
//! let api: Api<ConfigMap> = Api::default_namespaced(client);
//! let stream = reflector(writer, watcher(api, watcher::Config::default()))
//!     .default_backoff()
//!     .applied_objects();
//! kube_wasm_tokio::spawn(stream.for_each(|_| futures::future::ready(())));
//! reader.wait_until_ready().await.ok();
//! println!("{} config maps", reader.len());
//! # }
//! ```
//!
//! # Shared stores (`unstable-runtime-subscribe`)
//!
//! As in kube-runtime 5.0, a store made by `store_shared(buf_size)` (or
//! `Writer::new_shared`) can be subscribed to: `Writer::subscribe` gives
//! [`ReflectHandle`]s, streams of the `Arc<K>` objects the reflector applies, that several
//! consumers (e.g. `Controller::for_shared_stream` of two controllers) share instead of
//! each watching the API. Feed the writer with [`reflector()`] or
//! [`WatchStreamExt::reflect_shared`](crate::WatchStreamExt::reflect_shared) — not
//! `reflect`, which (as kube's) only fills the store — and poll that stream as well as
//! every handle: once `buf_size` objects wait for a subscriber, the reflector waits too.
//!
//! ```no_run
//! # #[cfg(feature = "unstable-runtime-subscribe")]
//! # async fn run(client: kube_wasm_client::Client) {
//! use futures::StreamExt;
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kube_runtime_wasm::{WatchStreamExt, reflector, watcher};
//! use kube_wasm_client::{Api, ResourceExt};
//!
//! let (reader, writer) = reflector::store_shared::<ConfigMap>(128);
//! let subscriber = writer.subscribe().expect("a shared store");
//! let api: Api<ConfigMap> = Api::default_namespaced(client);
//! let root = watcher(api, watcher::Config::default())
//!     .default_backoff()
//!     .reflect_shared(writer);
//! kube_wasm_tokio::spawn(root.for_each(|_| futures::future::ready(())));
//! subscriber
//!     .for_each(|cm| async move { println!("{} is stored", cm.name_any()) })
//!     .await;
//! # drop(reader);
//! # }
//! ```

mod dispatcher;
mod object_ref;
mod ready;
mod reflect_handle;
pub mod store;

pub use object_ref::{Extra as ObjectRefExtra, Lookup, ObjectRef};
pub use reflect_handle::ReflectHandle;
#[cfg(feature = "unstable-runtime-subscribe")]
pub use store::store_shared;
pub use store::{Store, store};

use crate::watcher;
use futures::{Stream, StreamExt, stream};
use std::hash::Hash;

/// Applies every event of `stream` to `writer`'s store and passes the events on unchanged,
/// as kube-runtime 5.0's `reflector`. Errors pass through and leave the store as it is.
///
/// For a shared writer, each event is passed on only after the writer's subscribers were
/// told about it (see [`ReflectHandle`]): the stream waits while their buffer is full.
/// When the stream ends or is dropped, so is the writer, and its subscribers end.
///
/// The store is only as fresh as the stream has been polled: drive the returned stream
/// (usually in its own task). It is `Send` when `stream` and `K` are.
pub fn reflector<K, W>(writer: store::Writer<K>, stream: W) -> impl Stream<Item = W::Item>
where
    K: Lookup + Clone,
    K::DynamicType: Eq + Hash + Clone,
    W: Stream<Item = watcher::Result<watcher::Event<K>>>,
{
    stream::unfold(
        (writer, Box::pin(stream)),
        |(mut writer, mut stream)| async move {
            let item = stream.next().await?;
            if let Ok(event) = &item {
                writer.apply_watcher_event(event);
                writer.dispatch_event(event).await;
            }
            Some((item, (writer, stream)))
        },
    )
}
