//! The `resize` subresource of pods (in-place resource resizing).

use super::Api;
use crate::Result;
use kube_core::params::{Patch, PatchParams, PostParams};
use serde::{Serialize, de::DeserializeOwned};

/// Marks resources that can be resized in place (`Pod`), as kube's `api::Resize`.
pub trait Resize {}

impl Resize for k8s_openapi::api::core::v1::Pod {}

impl<K> Api<K>
where
    K: Clone + DeserializeOwned + Resize,
{
    /// Gets a pod through its `resize` subresource.
    ///
    /// # Errors
    /// [`Error::Api`](crate::Error::Api); the client's errors.
    pub async fn get_resize(&self, name: &str) -> Result<K> {
        self.get_sub::<K>("resize", name).await
    }

    /// Patches a pod's container resources through its `resize` subresource.
    ///
    /// # Errors
    /// [`Error::BuildRequest`](crate::Error::BuildRequest) for invalid params; [`Error::Api`](crate::Error::Api); the client's errors.
    pub async fn patch_resize<P: Serialize>(
        &self,
        name: &str,
        pp: &PatchParams,
        patch: &Patch<P>,
    ) -> Result<K> {
        self.patch_sub::<K, _>("resize", name, pp, patch).await
    }

    /// Replaces a pod's container resources through its `resize` subresource.
    ///
    /// # Errors
    /// [`Error::SerdeError`](crate::Error::SerdeError) if `data` does not serialise; [`Error::Api`](crate::Error::Api); the client's errors.
    pub async fn replace_resize(&self, name: &str, pp: &PostParams, data: &K) -> Result<K>
    where
        K: Serialize,
    {
        self.replace_sub::<K>("resize", name, pp, data).await
    }
}
