//! Why a [`Config`](super::Config) could not be made: the error types of kube's `config`
//! module, reduced to what can go wrong when the configuration comes from the host.

use thiserror::Error;

/// [`Config::infer`](super::Config::infer) failed: a variable of the host's environment
/// (SPEC.md, "Environment") was missing or malformed.
///
/// kube's `InferConfigError` reports both sources it tried (kubeconfig and in-cluster); a
/// guest has one source, the host, so this names the variable that failed.
#[derive(Error, Debug)]
#[error("failed to infer config from the kube-wasm host environment ({variable}): {source}")]
pub struct InferConfigError {
    variable: &'static str,
    #[source]
    source: InClusterError,
}

impl InferConfigError {
    pub(crate) fn new(variable: &'static str, source: InClusterError) -> Self {
        Self { variable, source }
    }

    /// The environment variable that was missing or malformed.
    pub fn variable(&self) -> &'static str {
        self.variable
    }

    pub(crate) fn into_source(self) -> InClusterError {
        self.source
    }
}

/// Reading the host's environment failed, as kube's `config::InClusterError` (same variant
/// names and messages; the host's environment is the guest's "cluster environment").
#[derive(Error, Debug)]
pub enum InClusterError {
    /// An environment variable was not set or not Unicode.
    #[error("failed to read an incluster environment variable: {0}")]
    ReadEnvironmentVariable(#[source] std::env::VarError),

    /// The cluster URL did not parse as a URI.
    #[error("failed to parse cluster url: {0}")]
    ParseClusterUrl(#[source] http::uri::InvalidUri),
}

/// The kubeconfig entry points ([`Config::from_kubeconfig`](super::Config::from_kubeconfig))
/// failed, as kube's `config::KubeconfigError` (the variants that can occur in a guest).
#[derive(Error, Debug)]
pub enum KubeconfigError {
    /// A specific context, cluster or user was asked for: the host chose its kubeconfig
    /// context, and a guest cannot pick another.
    #[error("failed to load current context: {0}")]
    LoadContext(String),

    /// The host did not give a cluster URL (`KUBE_WASM_CLUSTER_URL`).
    #[error("cluster url is missing on selected cluster")]
    MissingClusterUrl,

    /// The host's cluster URL did not parse.
    #[error("failed to parse cluster url: {0}")]
    ParseClusterUrl(#[source] http::uri::InvalidUri),
}
