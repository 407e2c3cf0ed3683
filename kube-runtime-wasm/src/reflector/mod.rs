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
//! Not provided: the shared-store variants (`store_shared`, `ReflectHandle`,
//! `Writer::subscribe`) of kube's `unstable-runtime-subscribe` feature.

mod object_ref;
mod ready;
pub mod store;

pub use object_ref::{Extra as ObjectRefExtra, Lookup, ObjectRef};
pub use store::{Store, store};

use crate::watcher;
use futures::{Stream, StreamExt};
use std::hash::Hash;

/// Applies every event of `stream` to `writer`'s store and passes the events on unchanged,
/// as kube-runtime 5.0's `reflector`. Errors pass through and leave the store as it is.
///
/// The store is only as fresh as the stream has been polled: drive the returned stream
/// (usually in its own task). It is `Send` when `stream` and `K` are.
pub fn reflector<K, W>(mut writer: store::Writer<K>, stream: W) -> impl Stream<Item = W::Item>
where
    K: Lookup + Clone,
    K::DynamicType: Eq + Hash + Clone,
    W: Stream<Item = watcher::Result<watcher::Event<K>>>,
{
    stream.map(move |item| {
        if let Ok(event) = &item {
            writer.apply_watcher_event(event);
        }
        item
    })
}
