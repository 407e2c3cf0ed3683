//! Kubernetes configuration objects, as `kube::config` in kube 5.0.
//!
//! A guest has no kubeconfig, no service-account token and no certificates: the host holds
//! the credentials and connects to the API server. What a guest can know comes from the
//! host through the environment variables [`ENV_DEFAULT_NAMESPACE`] and [`ENV_CLUSTER_URL`]
//! (SPEC.md, "Environment"). [`Config::infer`] reads them, so the usual
//!
//! ```no_run
//! # async fn f() -> Result<(), Box<dyn std::error::Error>> {
//! use kube_wasm_client::{Client, Config};
//! let config = Config::infer().await?;
//! let client = Client::try_from(config)?;
//! # Ok(()) }
//! ```
//!
//! works unchanged.

use http::{HeaderName, HeaderValue};
use std::time::Duration;

mod errors;
mod host_env;
#[doc(hidden)]
pub mod host_only;
mod options;

pub use errors::{InClusterError, InferConfigError, KubeconfigError};
pub use host_env::{ENV_CLUSTER_URL, ENV_DEFAULT_NAMESPACE};
pub use options::KubeConfigOptions;

use host_env::{FALLBACK_NAMESPACE, HostEnv};

/// kube's default connect timeout (30 s).
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// kube's default write timeout (295 s).
const DEFAULT_WRITE_TIMEOUT: Duration = Duration::from_secs(295);

/// Configuration for a [`Client`](crate::Client), as `kube::Config` in kube 5.0, with the
/// fields a guest can know.
///
/// Left out, because they only exist where the credentials and the connection are — in the
/// host: `root_cert`, `root_cert_file`, `accept_invalid_certs`, `auth_info`, `proxy_url`,
/// `tls_server_name`, `disable_compression`, `reset_reader_on_write`, `default_retry`.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Config {
    /// The API server's URL as the host sees it. The guest sends every request to the host,
    /// which forwards it to its own configured server; only a path this URL adds to the
    /// host's counts, as a prefix of every request's path (kube keeps a cluster URL's path
    /// too), e.g. `{host URL}/api/v1/nodes/{node}/proxy` for the kubelet's debug endpoints.
    pub cluster_url: http::Uri,
    /// The namespace used by `Api::default_namespaced` and friends.
    pub default_namespace: String,
    /// Kept for compatibility; the host applies its own connect time limit (a request that
    /// cannot connect fails with [`Error::Service`](crate::Error::Service)).
    pub connect_timeout: Option<Duration>,
    /// Kept for compatibility; the host applies its own time limits.
    pub read_timeout: Option<Duration>,
    /// Kept for compatibility; the host applies its own time limits.
    pub write_timeout: Option<Duration>,
    /// Extra headers sent with every request, as in kube. The host drops an `authorization`
    /// header; values must be UTF-8 (the ABI carries headers as text).
    pub headers: Vec<(HeaderName, HeaderValue)>,
}

impl Config {
    /// A configuration for `cluster_url` with kube's defaults: namespace `default`, connect
    /// timeout 30 s, write timeout 295 s, no read timeout, no extra headers.
    pub fn new(cluster_url: http::Uri) -> Self {
        Self {
            cluster_url,
            default_namespace: FALLBACK_NAMESPACE.to_string(),
            connect_timeout: Some(DEFAULT_CONNECT_TIMEOUT),
            read_timeout: None,
            write_timeout: Some(DEFAULT_WRITE_TIMEOUT),
            headers: Vec::new(),
        }
    }

    /// The host's configuration: default namespace from `KUBE_WASM_DEFAULT_NAMESPACE`
    /// (`default` when unset or empty), cluster URL from `KUBE_WASM_CLUSTER_URL`.
    ///
    /// kube infers from a kubeconfig file or the pod's service account; in a guest the host
    /// did that, and this reads what it passed on. Completes at once (no I/O).
    ///
    /// # Errors
    /// [`InferConfigError`] when `KUBE_WASM_CLUSTER_URL` is unset or does not parse as a URI
    /// (a host always sets it, so this means the module is not running under a kube-wasm
    /// host), or a variable is not Unicode.
    pub async fn infer() -> Result<Self, InferConfigError> {
        HostEnv::from_process().map(Self::from_host_env)
    }

    /// The host's configuration, as [`Config::infer`] (in a guest, the host's environment
    /// plays the part of the pod environment).
    ///
    /// # Errors
    /// [`InClusterError`] when `KUBE_WASM_CLUSTER_URL` is unset or malformed.
    pub fn incluster() -> Result<Self, InClusterError> {
        Self::incluster_env()
    }

    /// The host's configuration, as [`Config::incluster`].
    ///
    /// # Errors
    /// [`InClusterError`] when `KUBE_WASM_CLUSTER_URL` is unset or malformed.
    pub fn incluster_env() -> Result<Self, InClusterError> {
        HostEnv::from_process()
            .map(Self::from_host_env)
            .map_err(InferConfigError::into_source)
    }

    /// The host's configuration, as [`Config::infer`]: the host loaded its kubeconfig, and
    /// its current context is the only one a guest can use.
    ///
    /// # Errors
    /// [`KubeconfigError::LoadContext`] if `options` names a context, cluster or user;
    /// [`KubeconfigError::MissingClusterUrl`] / [`KubeconfigError::ParseClusterUrl`] if the
    /// host's cluster URL is unset or malformed.
    pub async fn from_kubeconfig(options: &KubeConfigOptions) -> Result<Self, KubeconfigError> {
        let KubeConfigOptions {
            context,
            cluster,
            user,
        } = options;
        if let Some(named) = context.as_ref().or(cluster.as_ref()).or(user.as_ref()) {
            return Err(KubeconfigError::LoadContext(format!(
                "{named:?}: a kube-wasm guest uses the host's context and cannot select another"
            )));
        }
        HostEnv::from_process()
            .map(Self::from_host_env)
            .map_err(|e| {
                let variable = e.variable();
                match e.into_source() {
                    InClusterError::ReadEnvironmentVariable(_) if variable == ENV_CLUSTER_URL => {
                        KubeconfigError::MissingClusterUrl
                    }
                    InClusterError::ParseClusterUrl(e) => KubeconfigError::ParseClusterUrl(e),
                    other => KubeconfigError::LoadContext(format!("{variable}: {other}")),
                }
            })
    }

    /// Not available in a guest: kube's in-cluster configuration through the cluster DNS
    /// name `kubernetes.default.svc`, with the pod's token and certificates. Calling it is a
    /// compile-time error that points to [`Config::infer`] / [`Config::incluster`], which
    /// read what the host passes on.
    ///
    /// # Errors
    /// As [`Config::incluster`] (the bound cannot be met, so this never runs).
    pub fn incluster_dns() -> Result<Self, InClusterError>
    where
        for<'a> Self: host_only::InClusterDns<'a>,
    {
        Self::incluster()
    }

    /// Not available in a guest: kube's `KUBE_RS_DEBUG_IMPERSONATE_*` overrides change the
    /// credentials, which only the host has. Calling it is a compile-time error.
    pub fn apply_debug_overrides(&mut self)
    where
        for<'a> Self: host_only::DebugOverrides<'a>,
    {
    }

    fn from_host_env(env: HostEnv) -> Self {
        Self {
            default_namespace: env.default_namespace,
            ..Self::new(env.cluster_url)
        }
    }
}
