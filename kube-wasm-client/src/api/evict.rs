//! The `eviction` subresource of pods: [`Api::evict`].

use super::Api;
use crate::{Error, Result};
use kube_core::Status;
use serde::de::DeserializeOwned;

pub use kube_core::subresource::EvictParams;

/// Marks resources that can be evicted (`Pod`), as kube's `api::Evict`.
pub trait Evict {}

impl Evict for k8s_openapi::api::core::v1::Pod {}

impl<K> Api<K>
where
    K: DeserializeOwned + Evict,
{
    /// Creates an eviction for a pod, respecting its disruption budgets; returns the
    /// server's `Status`.
    ///
    /// # Errors
    /// [`Error::Api`] (e.g. `429 TooManyRequests` when a budget forbids it); the client's
    /// errors.
    pub async fn evict(&self, name: &str, ep: &EvictParams) -> Result<Status> {
        let request = self.request.evict(name, ep).map_err(Error::BuildRequest)?;
        self.client.request::<Status>(request).await
    }
}
