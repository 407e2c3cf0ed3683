//! Error handling and error types, as `kube::error` in kube 5.0.
//!
//! The variants keep kube's names and `Display` texts, so code that matches on
//! `kube::Error::Api(status) if status.is_not_found()` or prints errors behaves the same in a
//! guest. Variants for things a guest does not have — hyper, TLS stacks, proxies, credential
//! plugins — are left out. With the `ws` feature, [`Error::UpgradeConnection`] reports a
//! failed WebSocket handshake as kube's does (the host does the handshake and says which
//! check failed).
//!
//! How a failure reported by the host (an ABI `error` completion) becomes an [`enum@Error`] is
//! decided in one place, `client::host_error`, after the table in `kube-wasm-abi/SPEC.md`.

use thiserror::Error;

#[allow(deprecated)]
pub use kube_core::ErrorResponse;
pub use kube_core::Status;

use crate::config::{InferConfigError, KubeconfigError};

pub use crate::box_error::BoxError;

/// Possible errors from the [`Client`](crate::Client) and [`Config`](crate::Config), as
/// `kube::Error` in kube 5.0.
#[derive(Error, Debug)]
pub enum Error {
    /// The API server answered with an error: a non-2xx response (its body parsed as a
    /// `Status`, or a `Status` synthesised from the status code and body text when it is not
    /// one), or a `Status` line in a watch stream.
    ///
    /// It's quite common to get a `410 Gone` when the `resourceVersion` is too old. A request
    /// the host's policy forbids arrives here too, as a `403 Forbidden`.
    #[error("ApiError: {0} ({0:?})")]
    Api(#[source] Box<Status>),

    /// The request did not get an answer: the host could not reach the API server
    /// (`connect`), ran out of time (`timeout`), broke off a whole response (`stream`), or
    /// failed otherwise (`internal`, or a code newer than this guest). The source is the
    /// host's [`kube_wasm_abi::OpError`].
    #[error("ServiceError: {0}")]
    Service(#[source] BoxError),

    /// A response body that should be text was not UTF-8.
    #[error("UTF-8 Error: {0}")]
    FromUtf8(#[source] std::string::FromUtf8Error),

    /// One line of a streamed response (or one watch event) exceeded the host's size limit
    /// (the host's `too_large` error code).
    #[error("Error finding newline character")]
    LinesCodecMaxLineLengthExceeded,

    /// An event stream (a watch, or [`Client::request_events`](crate::Client::request_events))
    /// broke off after it had started (the host's `stream` error code). The `io::Error` has
    /// kind `Other` and the host's [`kube_wasm_abi::OpError`] as its inner error. The stream
    /// ends after this item.
    #[error("Error reading events stream: {0}")]
    ReadEvents(#[source] std::io::Error),

    /// Building an `http::Request` failed.
    #[error("HttpError: {0}")]
    HttpError(#[source] http::Error),

    /// A request or response body did not (de)serialise, e.g. a response that is not the
    /// expected kind of object.
    #[error("Error deserializing response: {0}")]
    SerdeError(#[source] serde_json::Error),

    /// The request could not be built: kube-core's request builders refused it (empty
    /// name, invalid parameters), a header value was not UTF-8 (the ABI carries headers as
    /// text), or the host could not turn the envelope into a request (`invalid_request`).
    #[error("Failed to build request: {0}")]
    BuildRequest(#[source] kube_core::request::Error),

    /// [`Config::infer`](crate::Config::infer) failed: the host's environment was missing
    /// or malformed.
    #[error("Failed to infer configuration: {0}")]
    InferConfig(#[source] InferConfigError),

    /// Discovery found something it cannot use (see [`DiscoveryError`]), from
    /// [`discovery`](crate::discovery), as in kube.
    #[error("Error from discovery: {0}")]
    Discovery(#[source] DiscoveryError),

    /// [`Client::connect`](crate::Client::connect) (and so `exec`, `attach`, `portforward`)
    /// could not upgrade to a WebSocket connection: the API server answered without an
    /// error status (those are [`Error::Api`]) and the handshake failed the check the
    /// [`UpgradeConnectionError`](crate::client::UpgradeConnectionError) names, as in kube.
    #[cfg(feature = "ws")]
    #[error("failed to upgrade to a WebSocket connection: {0}")]
    UpgradeConnection(#[source] crate::client::upgrade::UpgradeConnectionError),

    /// [`Client::fetch`](crate::Client::fetch) was given a reference that names no object
    /// (`"Reference is empty"`), as kube's (`unstable-client` feature).
    #[cfg(feature = "unstable-client")]
    #[error("Reference resolve error: {0}")]
    RefResolve(String),

    /// Loading a configuration through the kubeconfig entry points failed.
    #[error("Failed to infer provided configuration: {0}")]
    InferKubeconfig(#[from] KubeconfigError),
}

/// Possible errors when using API discovery, as `kube::error::DiscoveryError`.
#[derive(Error, Debug)]
pub enum DiscoveryError {
    /// Invalid GroupVersion.
    #[error("Invalid GroupVersion: {0}")]
    InvalidGroupVersion(String),

    /// Missing Kind.
    #[error("Missing Kind: {0}")]
    MissingKind(String),

    /// Missing ApiGroup.
    #[error("Missing Api Group: {0}")]
    MissingApiGroup(String),

    /// Missing Resource.
    #[error("Missing Resource: {0}")]
    MissingResource(String),

    /// Empty ApiGroup.
    #[error("Empty Api Group: {0}")]
    EmptyApiGroup(String),
}
