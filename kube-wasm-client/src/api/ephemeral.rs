//! The `ephemeralcontainers` subresource of pods.

use super::Api;
use crate::{Error, Result};
use kube_core::params::{Patch, PatchParams, PostParams};
use serde::{Serialize, de::DeserializeOwned};

/// Marks resources that have ephemeral containers (`Pod`), as kube's `api::Ephemeral`.
pub trait Ephemeral {}

impl Ephemeral for k8s_openapi::api::core::v1::Pod {}

impl<K> Api<K>
where
    K: Clone + DeserializeOwned + Ephemeral,
{
    /// Replaces the ephemeral containers of a pod with those in `data`.
    ///
    /// # Errors
    /// [`Error::SerdeError`] if `data` does not serialise; [`Error::Api`]; the client's errors.
    pub async fn replace_ephemeral_containers(
        &self,
        name: &str,
        pp: &PostParams,
        data: &K,
    ) -> Result<K>
    where
        K: Serialize,
    {
        let bytes = serde_json::to_vec(data).map_err(Error::SerdeError)?;
        let request = self
            .request
            .replace_subresource("ephemeralcontainers", name, pp, bytes)
            .map_err(Error::BuildRequest)?;
        self.client.request::<K>(request).await
    }

    /// Patches the ephemeral containers of a pod.
    ///
    /// # Errors
    /// [`Error::BuildRequest`] for invalid params; [`Error::Api`]; the client's errors.
    pub async fn patch_ephemeral_containers<P: Serialize>(
        &self,
        name: &str,
        pp: &PatchParams,
        patch: &Patch<P>,
    ) -> Result<K> {
        let request = self
            .request
            .patch_subresource("ephemeralcontainers", name, pp, patch)
            .map_err(Error::BuildRequest)?;
        self.client.request::<K>(request).await
    }

    /// Gets a pod through its `ephemeralcontainers` subresource.
    ///
    /// # Errors
    /// [`Error::Api`]; the client's errors.
    pub async fn get_ephemeral_containers(&self, name: &str) -> Result<K> {
        let request = self
            .request
            .get_subresource("ephemeralcontainers", name)
            .map_err(Error::BuildRequest)?;
        self.client.request::<K>(request).await
    }
}
