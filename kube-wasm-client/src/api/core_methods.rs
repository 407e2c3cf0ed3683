//! The core verbs of [`Api`]: get, list, create, replace, patch, delete and watch, as
//! kube 5.0's `Api` methods of the same names and signatures.

use super::Api;
use crate::{Error, Result};
use either::Either;
use futures::Stream;
use kube_core::params::{
    DeleteParams, GetParams, ListParams, Patch, PatchParams, PostParams, WatchParams,
};
use kube_core::{PartialObjectMeta, Status, WatchEvent, object::ObjectList};
use serde::{Serialize, de::DeserializeOwned};
use std::fmt::Debug;

impl<K> Api<K>
where
    K: Clone + DeserializeOwned + Debug,
{
    /// Gets a named resource (`GET {resource_url}/{name}`).
    ///
    /// # Errors
    /// [`Error::Api`] with a `404 NotFound` `Status` if it does not exist (see
    /// [`Api::get_opt`]); [`Error::BuildRequest`] for an empty name; the client's other
    /// errors ([`Client::request`](crate::Client::request)).
    pub async fn get(&self, name: &str) -> Result<K> {
        self.get_with(name, &GetParams::default()).await
    }

    /// Gets only the metadata of a named resource, as `PartialObjectMeta<K>`.
    ///
    /// # Errors
    /// As [`Api::get`].
    pub async fn get_metadata(&self, name: &str) -> Result<PartialObjectMeta<K>> {
        self.get_metadata_with(name, &GetParams::default()).await
    }

    /// Gets a named resource with [`GetParams`] (e.g. a `resourceVersion`).
    ///
    /// # Errors
    /// As [`Api::get`].
    pub async fn get_with(&self, name: &str, gp: &GetParams) -> Result<K> {
        let request = if self.metadata_api {
            self.request.get_metadata(name, gp)
        } else {
            self.request.get(name, gp)
        }
        .map_err(Error::BuildRequest)?;
        self.client.request::<K>(request).await
    }

    /// Gets only the metadata of a named resource with [`GetParams`].
    ///
    /// # Errors
    /// As [`Api::get`].
    pub async fn get_metadata_with(
        &self,
        name: &str,
        gp: &GetParams,
    ) -> Result<PartialObjectMeta<K>> {
        let request = self
            .request
            .get_metadata(name, gp)
            .map_err(Error::BuildRequest)?;
        self.client.request::<PartialObjectMeta<K>>(request).await
    }

    /// Gets a named resource if it exists: `Ok(None)` where [`Api::get`] fails with a
    /// `Status` for which `is_not_found()` holds.
    ///
    /// # Errors
    /// Every other error of [`Api::get`].
    pub async fn get_opt(&self, name: &str) -> Result<Option<K>> {
        match self.get(name).await {
            Ok(object) => Ok(Some(object)),
            Err(Error::Api(status)) if status.is_not_found() => Ok(None),
            Err(err) => Err(err),
        }
    }

    /// Gets the metadata of a named resource if it exists, as [`Api::get_opt`].
    ///
    /// # Errors
    /// Every error of [`Api::get_metadata`] but not-found.
    pub async fn get_metadata_opt(&self, name: &str) -> Result<Option<PartialObjectMeta<K>>> {
        self.get_metadata_opt_with(name, &GetParams::default())
            .await
    }

    /// Gets the metadata of a named resource with [`GetParams`] if it exists.
    ///
    /// # Errors
    /// Every error of [`Api::get_metadata_with`] but not-found.
    pub async fn get_metadata_opt_with(
        &self,
        name: &str,
        gp: &GetParams,
    ) -> Result<Option<PartialObjectMeta<K>>> {
        match self.get_metadata_with(name, gp).await {
            Ok(meta) => Ok(Some(meta)),
            Err(Error::Api(status)) if status.is_not_found() => Ok(None),
            Err(err) => Err(err),
        }
    }

    /// Lists resources matching [`ListParams`] (selectors, limit/continue, version match).
    ///
    /// # Errors
    /// [`Error::BuildRequest`] for invalid params; the client's errors.
    pub async fn list(&self, lp: &ListParams) -> Result<ObjectList<K>> {
        let request = if self.metadata_api {
            self.request.list_metadata(lp)
        } else {
            self.request.list(lp)
        }
        .map_err(Error::BuildRequest)?;
        self.client.request::<ObjectList<K>>(request).await
    }

    /// Lists only the metadata of resources matching [`ListParams`].
    ///
    /// # Errors
    /// As [`Api::list`].
    pub async fn list_metadata(&self, lp: &ListParams) -> Result<ObjectList<PartialObjectMeta<K>>> {
        let request = self
            .request
            .list_metadata(lp)
            .map_err(Error::BuildRequest)?;
        self.client
            .request::<ObjectList<PartialObjectMeta<K>>>(request)
            .await
    }

    /// Creates a resource (`POST {resource_url}`) and returns it as the server stored it.
    ///
    /// # Errors
    /// [`Error::SerdeError`] if `data` does not serialise; [`Error::Api`] (e.g.
    /// `is_already_exists()`); the client's errors.
    pub async fn create(&self, pp: &PostParams, data: &K) -> Result<K>
    where
        K: Serialize,
    {
        let bytes = serde_json::to_vec(data).map_err(Error::SerdeError)?;
        let request = self
            .request
            .create(pp, bytes)
            .map_err(Error::BuildRequest)?;
        self.client.request::<K>(request).await
    }

    /// Deletes a named resource: `Left(K)` while it still exists (e.g. pending
    /// finalizers), `Right(Status)` when the server answers with a `Status` (deleted).
    ///
    /// # Errors
    /// [`Error::Api`] (e.g. not found); the client's errors.
    pub async fn delete(&self, name: &str, dp: &DeleteParams) -> Result<Either<K, Status>> {
        let request = self.request.delete(name, dp).map_err(Error::BuildRequest)?;
        self.client.request_status::<K>(request).await
    }

    /// Deletes the resources matching [`ListParams`]: `Left(list)` of what is being deleted,
    /// or `Right(Status)`.
    ///
    /// # Errors
    /// As [`Api::delete`].
    pub async fn delete_collection(
        &self,
        dp: &DeleteParams,
        lp: &ListParams,
    ) -> Result<Either<ObjectList<K>, Status>> {
        let request = self
            .request
            .delete_collection(dp, lp)
            .map_err(Error::BuildRequest)?;
        self.client.request_status::<ObjectList<K>>(request).await
    }

    /// Patches a named resource. The content type follows the [`Patch`] variant
    /// (`Apply`: `application/apply-patch+yaml`, which needs `PatchParams::apply`'s field
    /// manager; `Merge`: `application/merge-patch+json`; `Strategic`:
    /// `application/strategic-merge-patch+json`; `Json`: `application/json-patch+json`).
    ///
    /// # Errors
    /// [`Error::BuildRequest`] for invalid params (`force` with a patch other than `Apply`,
    /// a field manager over 128 characters); [`Error::Api`] (e.g. `is_conflict()` for an
    /// apply conflict, or a missing field manager for `Apply`); the client's errors.
    pub async fn patch<P: Serialize + Debug>(
        &self,
        name: &str,
        pp: &PatchParams,
        patch: &Patch<P>,
    ) -> Result<K> {
        let request = if self.metadata_api {
            self.request.patch_metadata(name, pp, patch)
        } else {
            self.request.patch(name, pp, patch)
        }
        .map_err(Error::BuildRequest)?;
        self.client.request::<K>(request).await
    }

    /// Patches the metadata of a named resource and returns only its metadata.
    ///
    /// # Errors
    /// As [`Api::patch`].
    pub async fn patch_metadata<P: Serialize + Debug>(
        &self,
        name: &str,
        pp: &PatchParams,
        patch: &Patch<P>,
    ) -> Result<PartialObjectMeta<K>> {
        let request = self
            .request
            .patch_metadata(name, pp, patch)
            .map_err(Error::BuildRequest)?;
        self.client.request::<PartialObjectMeta<K>>(request).await
    }

    /// Replaces a named resource (`PUT`); `data` must carry the current
    /// `metadata.resourceVersion` for optimistic concurrency.
    ///
    /// # Errors
    /// [`Error::Api`] with `is_conflict()` if the resourceVersion is stale; as
    /// [`Api::create`] otherwise.
    pub async fn replace(&self, name: &str, pp: &PostParams, data: &K) -> Result<K>
    where
        K: Serialize,
    {
        let bytes = serde_json::to_vec(data).map_err(Error::SerdeError)?;
        let request = self
            .request
            .replace(name, pp, bytes)
            .map_err(Error::BuildRequest)?;
        self.client.request::<K>(request).await
    }

    /// Watches the collection from resourceVersion `version` (`"0"` for any).
    ///
    /// The params are validated by kube-core's `Request::watch` exactly as in kube, then the
    /// watch goes to the host as a `watch` op (not an HTTP request), so the host knows the
    /// resource and parameters; it builds the same upstream request. The future resolves once
    /// the API server has accepted the watch (the host's `head`); a watch it refuses (403,
    /// 404, …) is `Err(Error::Api)` from this future, as in kube. The stream yields one item
    /// per event (`Added`, `Modified`, `Deleted`, `Bookmark`, `Error` — e.g. `410 Gone` for a
    /// too-old version), ends when the server closes the watch (its `timeoutSeconds`, 290 by
    /// default), and ends after one `Err(Error::ReadEvents)` if the watch broke off.
    ///
    /// Dropping the stream cancels the watch on the host.
    ///
    /// # Errors
    /// [`Error::BuildRequest`] for invalid params (e.g. `send_initial_events` without
    /// `bookmarks`).
    pub async fn watch(
        &self,
        wp: &WatchParams,
        version: &str,
    ) -> Result<impl Stream<Item = Result<WatchEvent<K>>> + use<K>> {
        // Validation only: the request itself goes to the host as a watch envelope.
        if self.metadata_api {
            self.request.watch_metadata(wp, version)
        } else {
            self.request.watch(wp, version)
        }
        .map_err(Error::BuildRequest)?;
        self.client
            .watch_events::<K>(&self.request.url_path, wp, version, self.metadata_api)
            .await
    }

    /// Watches only the metadata of the collection, as [`Api::watch`] (the host asks for
    /// `PartialObjectMetadata`).
    ///
    /// # Errors
    /// As [`Api::watch`].
    pub async fn watch_metadata(
        &self,
        wp: &WatchParams,
        version: &str,
    ) -> Result<impl Stream<Item = Result<WatchEvent<PartialObjectMeta<K>>>> + use<K>> {
        self.request
            .watch_metadata(wp, version)
            .map_err(Error::BuildRequest)?;
        self.client
            .watch_events::<PartialObjectMeta<K>>(&self.request.url_path, wp, version, true)
            .await
    }
}
