//! The `ephemeralcontainers` subresource of pods.

use super::Api;
use crate::Result;
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
    /// [`Error::SerdeError`](crate::Error::SerdeError) if `data` does not serialise; [`Error::Api`](crate::Error::Api); the client's errors.
    pub async fn replace_ephemeral_containers(
        &self,
        name: &str,
        pp: &PostParams,
        data: &K,
    ) -> Result<K>
    where
        K: Serialize,
    {
        self.replace_sub::<K>("ephemeralcontainers", name, pp, data)
            .await
    }

    /// Patches the ephemeral containers of a pod.
    ///
    /// # Errors
    /// [`Error::BuildRequest`](crate::Error::BuildRequest) for invalid params; [`Error::Api`](crate::Error::Api); the client's errors.
    pub async fn patch_ephemeral_containers<P: Serialize>(
        &self,
        name: &str,
        pp: &PatchParams,
        patch: &Patch<P>,
    ) -> Result<K> {
        self.patch_sub::<K, _>("ephemeralcontainers", name, pp, patch)
            .await
    }

    /// Gets a pod through its `ephemeralcontainers` subresource.
    ///
    /// # Errors
    /// [`Error::Api`](crate::Error::Api); the client's errors.
    pub async fn get_ephemeral_containers(&self, name: &str) -> Result<K> {
        self.get_sub::<K>("ephemeralcontainers", name).await
    }
}
