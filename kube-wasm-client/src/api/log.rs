//! The `log` subresource of pods: [`Api::logs`] and [`Api::log_stream`].

use super::Api;
use crate::{Error, Result};
use futures::io::AsyncBufRead;
use serde::de::DeserializeOwned;

pub use kube_core::subresource::LogParams;

/// Marks resources that have logs (`Pod`), as kube's `api::Log`: it enables [`Api::logs`]
/// and [`Api::log_stream`].
pub trait Log {}

impl Log for k8s_openapi::api::core::v1::Pod {}

impl<K> Api<K>
where
    K: DeserializeOwned + Log,
{
    /// Fetches the logs of a pod as one string (container, tail, since … in
    /// [`LogParams`]).
    ///
    /// # Errors
    /// [`Error::Api`] (e.g. the container does not exist); [`Error::FromUtf8`]; the client's
    /// errors.
    pub async fn logs(&self, name: &str, lp: &LogParams) -> Result<String> {
        let request = self.request.logs(name, lp).map_err(Error::BuildRequest)?;
        self.client.request_text(request).await
    }

    /// Streams the logs of a pod (container, `follow`, tail … in [`LogParams`]) as an
    /// `AsyncBufRead`, as kube 5.0's `Api::log_stream`: read it with `futures`'
    /// `AsyncBufReadExt::lines()` and `TryStreamExt::try_next()`, as with kube. With
    /// `follow: true` lines arrive as the container writes them.
    ///
    /// Built on [`Client::request_stream`](crate::Client::request_stream), whose byte
    /// semantics apply: a log whose last line lacks its `\n` reads with one added.
    ///
    /// # Errors
    /// [`Error::Api`] (e.g. the pod or container does not exist);
    /// [`Error::BuildRequest`] for invalid params; the client's errors. Reading fails with
    /// an `io::Error` if the stream breaks off.
    pub async fn log_stream(
        &self,
        name: &str,
        lp: &LogParams,
    ) -> Result<impl AsyncBufRead + use<K>> {
        let request = self.request.logs(name, lp).map_err(Error::BuildRequest)?;
        self.client.request_stream(request).await
    }
}
