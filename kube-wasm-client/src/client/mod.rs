//! API client for interacting with the Kubernetes API, as `kube::client` in kube 5.0.
//!
//! The [`Client`] does not open connections: each request becomes an ABI `http_request` op
//! (each watch a `watch` op) that the host carries out with its own authenticated client.
//! Errors follow kube's: a non-2xx response is [`crate::Error::Api`] (except for the raw
//! [`Client::send`], which returns every response, as kube's), a host failure maps per
//! SPEC.md's error-code table.

use crate::{Config, Error, Result};
use std::fmt;
use std::sync::Arc;

mod api_errors;
mod base_path;
mod body;
mod body_reader;
#[cfg(feature = "ws")]
mod connection;
mod events;
mod host_error;
#[cfg(feature = "kubelet-debug")]
mod kubelet_debug;
mod request_events;
mod request_stream;
mod requests;
#[cfg(feature = "unstable-client")]
mod scoped;
#[cfg(feature = "unstable-client")]
mod scoped_requests;
mod send;
mod server_info;
#[cfg(feature = "ws")]
pub(crate) mod upgrade;
mod watch;

pub use body::Body;

/// Scopes for the `unstable-client` methods [`Client::get`], [`Client::list`] and
/// [`Client::fetch`], as kube 5.0's `kube::client::scope`: [`Cluster`](scope::Cluster),
/// [`Namespace`](scope::Namespace) and the [`NamespacedRef`](scope::NamespacedRef) trait.
#[cfg(feature = "unstable-client")]
pub mod scope {
    pub use super::scoped::{Cluster, Namespace, NamespacedRef};
}

#[cfg(feature = "ws")]
pub use connection::Connection;
#[cfg(feature = "ws")]
pub(crate) use connection::{Message as WsMessage, Sender as WsSender};
pub use kube_core::discovery::v2::{
    APIGroupDiscovery, APIGroupDiscoveryList, APIResourceDiscovery, APISubresourceDiscovery,
    APIVersionDiscovery, GroupVersionKind as DiscoveryGroupVersionKind,
};
#[cfg(feature = "ws")]
pub use upgrade::UpgradeConnectionError;

/// An HTTP body of a dynamic backing type, as kube 5.0's `kube::client::DynBody` (whose
/// suggested implementation is [`Body`]): `Box<DynBody>` holds any body of `Bytes` whose
/// errors are boxed.
pub type DynBody =
    dyn http_body::Body<Data = bytes::Bytes, Error = crate::box_error::BoxError> + Send + Unpin;

/// Client for connecting with a Kubernetes cluster, as `kube::Client` in kube 5.0.
///
/// Cheap to clone (the extra headers are shared), `Send + Sync`; every future and stream
/// it returns is `Send`, so `tokio::spawn(async move { api.get("x").await })` compiles as
/// with kube.
///
/// Dropping any future or stream it returned before it finished cancels the op on the host
/// (the request is aborted, the watch closed).
#[derive(Clone)]
pub struct Client {
    default_ns: String,
    /// `Config::headers`, as text, sent after each request's own headers.
    extra_headers: Arc<[(String, String)]>,
    /// The path every request's path is appended to (`""`, or e.g.
    /// `/api/v1/nodes/n1/proxy`): see [`base_path::BasePath`].
    base_path: base_path::BasePath,
}

impl Client {
    /// A client whose requests go to the host, with `default_namespace` for
    /// `Api::default_namespaced` and friends.
    ///
    /// This takes the place of kube's `Client::new(service, default_namespace)`: in a guest
    /// there is no tower service to pass, the host is the transport. Use it where a test or
    /// a program wants a client without reading the host's environment.
    pub fn for_host(default_namespace: impl Into<String>) -> Self {
        Self {
            default_ns: default_namespace.into(),
            extra_headers: Arc::new([]),
            base_path: base_path::BasePath::default(),
        }
    }

    /// Not available in a guest: kube's client over a tower `service`. The host is the
    /// transport, so calling this is a compile-time error that points to
    /// [`Client::try_default`], `Client::try_from(config)` and [`Client::for_host`].
    pub fn new<S, B, T>(service: S, default_namespace: T) -> Self
    where
        S: crate::config::host_only::TowerService<B>,
        T: Into<String>,
    {
        drop(service);
        Self::for_host(default_namespace)
    }

    /// Creates a client from the host's configuration ([`Config::infer`]), as kube's
    /// `Client::try_default`.
    ///
    /// # Errors
    /// [`Error::InferConfig`] if the host's environment lacks or garbles
    /// `KUBE_WASM_CLUSTER_URL`; [`Error::BuildRequest`] if a configured header is not UTF-8.
    pub async fn try_default() -> Result<Self> {
        Self::try_from(Config::infer().await.map_err(Error::InferConfig)?)
    }

    /// The default namespace: from [`Config::default_namespace`] or [`Client::for_host`].
    pub fn default_namespace(&self) -> &str {
        &self.default_ns
    }
}

impl TryFrom<Config> for Client {
    type Error = Error;

    /// A client with `config`'s default namespace and extra headers. The timeouts are the
    /// host's business, and so is the cluster URL's scheme and authority: the host sends
    /// every request to its own API server. A path that `config.cluster_url` adds to the
    /// host's cluster URL (`KUBE_WASM_CLUSTER_URL`) is kept, as kube keeps a cluster URL's
    /// path: every request's path is appended to it. So a client made from
    /// `{host URL}/api/v1/nodes/{node}/proxy` reaches that node's kubelet through the API
    /// server's node proxy — the way a guest uses the `kubelet-debug` methods. (A cluster URL
    /// naming another server, such as a kubelet's own address, cannot be reached from a
    /// guest: its requests go to the host's API server.)
    ///
    /// # Errors
    /// [`Error::BuildRequest`] if a header value in `config.headers` is not UTF-8 text.
    fn try_from(config: Config) -> Result<Self> {
        let extra_headers = config
            .headers
            .iter()
            .map(|(name, value)| Ok((name.as_str().to_string(), send::header_text(name, value)?)))
            .collect::<Result<Arc<[_]>>>()?;
        Ok(Self {
            default_ns: config.default_namespace,
            extra_headers,
            base_path: base_path::BasePath::of(&config.cluster_url),
        })
    }
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("default_namespace", &self.default_ns)
            .field("extra_headers", &self.extra_headers.len())
            .field("base_path", &self.base_path)
            .finish()
    }
}
