//! The `resize` subresource of pods (in-place resource resizing).

use super::Api;
use crate::{Error, Result};
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
    /// [`Error::Api`]; the client's errors.
    pub async fn get_resize(&self, name: &str) -> Result<K> {
        let request = self
            .request
            .get_subresource("resize", name)
            .map_err(Error::BuildRequest)?;
        self.client.request::<K>(request).await
    }

    /// Patches a pod's container resources through its `resize` subresource.
    ///
    /// # Errors
    /// [`Error::BuildRequest`] for invalid params; [`Error::Api`]; the client's errors.
    pub async fn patch_resize<P: Serialize>(
        &self,
        name: &str,
        pp: &PatchParams,
        patch: &Patch<P>,
    ) -> Result<K> {
        let request = self
            .request
            .patch_subresource("resize", name, pp, patch)
            .map_err(Error::BuildRequest)?;
        self.client.request::<K>(request).await
    }

    /// Replaces a pod's container resources through its `resize` subresource.
    ///
    /// # Errors
    /// [`Error::SerdeError`] if `data` does not serialise; [`Error::Api`]; the client's errors.
    pub async fn replace_resize(&self, name: &str, pp: &PostParams, data: &K) -> Result<K>
    where
        K: Serialize,
    {
        let bytes = serde_json::to_vec(data).map_err(Error::SerdeError)?;
        let request = self
            .request
            .replace_subresource("resize", name, pp, bytes)
            .map_err(Error::BuildRequest)?;
        self.client.request::<K>(request).await
    }
}
