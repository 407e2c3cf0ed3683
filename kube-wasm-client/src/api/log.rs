//! The `log` subresource of pods: [`Api::logs`].

use super::Api;
use crate::{Error, Result};
use serde::de::DeserializeOwned;

pub use kube_core::subresource::LogParams;

/// Marks resources that have logs (`Pod`), as kube's `api::Log`.
pub trait Log {}

impl Log for k8s_openapi::api::core::v1::Pod {}

impl<K> Api<K>
where
    K: DeserializeOwned + Log,
{
    /// Fetches the logs of a pod as one string (container, tail, since … in
    /// [`LogParams`]).
    ///
    /// kube's `log_stream` (an `AsyncBufRead` over a followed log) is not available in a
    /// guest yet.
    ///
    /// # Errors
    /// [`Error::Api`] (e.g. the container does not exist); [`Error::FromUtf8`]; the client's
    /// errors.
    pub async fn logs(&self, name: &str, lp: &LogParams) -> Result<String> {
        let request = self.request.logs(name, lp).map_err(Error::BuildRequest)?;
        self.client.request_text(request).await
    }
}
