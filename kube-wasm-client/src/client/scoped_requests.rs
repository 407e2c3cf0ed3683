//! The `unstable-client` extension methods, as kube 5.0's: [`Client::get`], [`Client::list`]
//! and [`Client::fetch`] read objects of any resource type at a [`scope`](super::scope)
//! without making an [`Api`](crate::Api) first. Each is one `GET` through the host, like the
//! corresponding `Api` verb.

use super::Client;
use super::scoped::{CollectionUrl, ObjectRef, ObjectUrl};
use crate::{Error, Result};
use kube_core::Resource;
use kube_core::object::ObjectList;
use kube_core::params::{GetParams, ListParams};
use kube_core::request::Request;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::fmt::Debug;

impl Client {
    /// Gets the object `name` of type `K` at `scope` — [`Cluster`](super::scope::Cluster) for a
    /// cluster-scoped resource, a [`Namespace`](super::scope::Namespace) for a namespaced one —
    /// as kube 5.0's `Client::get`: `GET {collection}/{name}`.
    ///
    /// ```no_run
    /// # use k8s_openapi::api::core::v1::Service;
    /// # use kube_wasm_client::client::scope::Namespace;
    /// # async fn f(client: kube_wasm_client::Client) -> kube_wasm_client::Result<()> {
    /// let svc = client.get::<Service>("kubernetes", &Namespace::from("default")).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::BuildRequest`] for an empty `name`; otherwise as `Api::get`:
    /// [`Error::Api`] for an error answer (404 when there is no such object),
    /// [`Error::SerdeError`] when the body is not a `K`, and the host's failures.
    pub async fn get<K>(&self, name: &str, scope: &impl ObjectUrl<K>) -> Result<K>
    where
        K: Resource + Serialize + DeserializeOwned + Clone + Debug,
        <K as Resource>::DynamicType: Default,
    {
        let request = Request::new(scope.url_path())
            .get(name, &GetParams::default())
            .map_err(Error::BuildRequest)?;
        self.request::<K>(request).await
    }

    /// Gets the object a reference names — an `ObjectReference` (e.g. from
    /// `Resource::object_ref`), an `OwnerReference` of a cluster-scoped owner, or any
    /// reference placed in a namespace with
    /// [`NamespacedRef::within`](super::scope::NamespacedRef::within) — as kube 5.0's
    /// `Client::fetch`. The URL comes from the reference alone (its group, version, kind and
    /// namespace; `K` only decodes the answer), so `K` may be `DynamicObject`.
    ///
    /// # Errors
    /// [`Error::RefResolve`] (`"Reference is empty"`) when the reference has no name, before
    /// any request; [`Error::SerdeError`] when the object is not a `K` (e.g. the reference
    /// names a `Service` and `K` is `Pod`: kube-core's check of `kind` refuses it); otherwise
    /// as [`Client::get`].
    pub async fn fetch<K>(&self, reference: &impl ObjectRef<K>) -> Result<K>
    where
        K: Resource + Serialize + DeserializeOwned + Clone + Debug,
    {
        let name = reference
            .name()
            .ok_or_else(|| Error::RefResolve("Reference is empty".to_string()))?;
        let request = Request::new(reference.url_path())
            .get(name, &GetParams::default())
            .map_err(Error::BuildRequest)?;
        self.request::<K>(request).await
    }

    /// Lists the objects of type `K` matching `lp` at `scope` —
    /// [`Cluster`](super::scope::Cluster) for every namespace (or a cluster-scoped resource),
    /// a [`Namespace`](super::scope::Namespace) for one — as kube 5.0's `Client::list`: one
    /// `GET` of the collection with `lp`'s query.
    ///
    /// # Errors
    /// [`Error::BuildRequest`] when `lp` is invalid (as kube-core's list builder judges it);
    /// otherwise as `Api::list`.
    pub async fn list<K>(
        &self,
        lp: &ListParams,
        scope: &impl CollectionUrl<K>,
    ) -> Result<ObjectList<K>>
    where
        K: Resource + Serialize + DeserializeOwned + Clone + Debug,
        <K as Resource>::DynamicType: Default,
    {
        let request = Request::new(scope.url_path())
            .list(lp)
            .map_err(Error::BuildRequest)?;
        self.request::<ObjectList<K>>(request).await
    }
}
