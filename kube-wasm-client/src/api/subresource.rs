//! Subresources of any kind: the generic `*_subresource` methods, `status` and `scale`, as
//! kube 5.0's `Api` methods of the same names.

use super::Api;
use crate::{Error, Result};
use k8s_openapi::api::autoscaling::v1::Scale;
use kube_core::params::{Patch, PatchParams, PostParams};
use serde::{Serialize, de::DeserializeOwned};
use std::fmt::Debug;

pub use k8s_openapi::api::autoscaling::v1::{ScaleSpec, ScaleStatus};

/// The one way every subresource method sends its request: build it with kube-core's
/// builder, send it, decode the answer as `T`.
impl<K> Api<K> {
    pub(crate) async fn get_sub<T: DeserializeOwned>(&self, sub: &str, name: &str) -> Result<T> {
        let request = self
            .request
            .get_subresource(sub, name)
            .map_err(Error::BuildRequest)?;
        self.client.request::<T>(request).await
    }

    pub(crate) async fn patch_sub<T: DeserializeOwned, P: Serialize>(
        &self,
        sub: &str,
        name: &str,
        pp: &PatchParams,
        patch: &Patch<P>,
    ) -> Result<T> {
        let request = self
            .request
            .patch_subresource(sub, name, pp, patch)
            .map_err(Error::BuildRequest)?;
        self.client.request::<T>(request).await
    }

    pub(crate) async fn replace_sub<T: DeserializeOwned>(
        &self,
        sub: &str,
        name: &str,
        pp: &PostParams,
        data: &impl Serialize,
    ) -> Result<T> {
        let bytes = serde_json::to_vec(data).map_err(Error::SerdeError)?;
        let request = self
            .request
            .replace_subresource(sub, name, pp, bytes)
            .map_err(Error::BuildRequest)?;
        self.client.request::<T>(request).await
    }
}

impl<K> Api<K>
where
    K: Clone + DeserializeOwned,
{
    /// Gets the `scale` subresource of a named resource.
    ///
    /// # Errors
    /// [`Error::Api`] (e.g. not found, or the kind has no scale subresource); the client's
    /// errors.
    pub async fn get_scale(&self, name: &str) -> Result<Scale> {
        self.get_sub::<Scale>("scale", name).await
    }

    /// Patches the `scale` subresource of a named resource.
    ///
    /// # Errors
    /// As [`Api::get_scale`], plus [`Error::BuildRequest`] for invalid params.
    pub async fn patch_scale<P: Serialize + Debug>(
        &self,
        name: &str,
        pp: &PatchParams,
        patch: &Patch<P>,
    ) -> Result<Scale> {
        self.patch_sub::<Scale, _>("scale", name, pp, patch).await
    }

    /// Replaces the `scale` subresource of a named resource.
    ///
    /// # Errors
    /// As [`Api::get_scale`], plus [`Error::SerdeError`] if `data` does not serialise.
    pub async fn replace_scale(&self, name: &str, pp: &PostParams, data: &Scale) -> Result<Scale> {
        self.replace_sub::<Scale>("scale", name, pp, data).await
    }
}

impl<K> Api<K>
where
    K: Clone + DeserializeOwned + Debug,
{
    /// Gets the subresource `subresource_name` of a named resource, as a `K`.
    ///
    /// # Errors
    /// [`Error::Api`]; [`Error::SerdeError`] if the answer is not a `K`; the client's errors.
    pub async fn get_subresource(&self, subresource_name: &str, name: &str) -> Result<K> {
        self.get_sub::<K>(subresource_name, name).await
    }

    /// Creates (`POST`s) `data` to the subresource `subresource_name` of a named resource
    /// and returns the answer as a `T`.
    ///
    /// # Errors
    /// As [`Api::get_subresource`], plus [`Error::SerdeError`] if `data` does not serialise.
    pub async fn create_subresource<I, T>(
        &self,
        subresource_name: &str,
        name: &str,
        pp: &PostParams,
        data: &I,
    ) -> Result<T>
    where
        I: Serialize,
        T: DeserializeOwned,
    {
        let bytes = serde_json::to_vec(data).map_err(Error::SerdeError)?;
        let request = self
            .request
            .create_subresource(subresource_name, name, pp, bytes)
            .map_err(Error::BuildRequest)?;
        self.client.request::<T>(request).await
    }

    /// Patches the subresource `subresource_name` of a named resource.
    ///
    /// # Errors
    /// As [`Api::get_subresource`], plus [`Error::BuildRequest`] for invalid params.
    pub async fn patch_subresource<P: Serialize + Debug>(
        &self,
        subresource_name: &str,
        name: &str,
        pp: &PatchParams,
        patch: &Patch<P>,
    ) -> Result<K> {
        self.patch_sub::<K, _>(subresource_name, name, pp, patch)
            .await
    }

    /// Replaces (`PUT`s) the subresource `subresource_name` of a named resource.
    ///
    /// # Errors
    /// As [`Api::create_subresource`].
    pub async fn replace_subresource<I>(
        &self,
        subresource_name: &str,
        name: &str,
        pp: &PostParams,
        data: &I,
    ) -> Result<K>
    where
        I: Serialize,
    {
        self.replace_sub::<K>(subresource_name, name, pp, data)
            .await
    }
}

impl<K> Api<K>
where
    K: DeserializeOwned,
{
    /// Gets a named resource through its `status` subresource.
    ///
    /// # Errors
    /// [`Error::Api`]; the client's errors.
    pub async fn get_status(&self, name: &str) -> Result<K> {
        self.get_sub::<K>("status", name).await
    }

    /// Patches the `status` subresource of a named resource (e.g. a
    /// `Patch::Merge(json!({"status": …}))`, or `Patch::Apply` with a field manager).
    ///
    /// # Errors
    /// As [`Api::get_status`], plus [`Error::BuildRequest`] for invalid params.
    pub async fn patch_status<P: Serialize + Debug>(
        &self,
        name: &str,
        pp: &PatchParams,
        patch: &Patch<P>,
    ) -> Result<K> {
        self.patch_sub::<K, _>("status", name, pp, patch).await
    }

    /// Replaces the `status` subresource of a named resource with `data`'s status.
    ///
    /// # Errors
    /// As [`Api::get_status`], plus [`Error::SerdeError`] if `data` does not serialise.
    pub async fn replace_status(&self, name: &str, pp: &PostParams, data: &K) -> Result<K>
    where
        K: Serialize,
    {
        self.replace_sub::<K>("status", name, pp, data).await
    }
}
