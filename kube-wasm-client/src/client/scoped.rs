//! The scopes of the `unstable-client` extension methods ([`Client::get`](crate::Client::get),
//! [`Client::list`](crate::Client::list), [`Client::fetch`](crate::Client::fetch)), as kube
//! 5.0's `kube::client::scope`: where a collection or an object lives, and references that
//! name an object.
//!
//! Only [`Cluster`], [`Namespace`] and [`NamespacedRef`] are nameable (through
//! `client::scope`); the traits the methods take — [`CollectionUrl`], [`ObjectUrl`],
//! [`ObjectRef`] — are public but unreachable by path, as in kube, so a program can use them
//! only through the implementations here. Which scope fits which resource is decided at compile
//! time by the resource's `Scope`, as in kube:
//!
//! | scope | collection (`list`) | object (`get`) |
//! | --- | --- | --- |
//! | [`Cluster`] | any resource, across all namespaces | cluster-scoped (or dynamic) resources |
//! | [`Namespace`] | namespaced resources | namespaced resources |
//!
//! References (`fetch`): an `ObjectReference` names its object's group, version, kind,
//! namespace and name (the resource's URL segment is derived from the kind, as kube-core's
//! `ApiResource::from_gvk` does); an `OwnerReference` names a cluster-scoped object, or a
//! namespaced one once placed with [`NamespacedRef::within`]; a `LocalObjectReference` names an
//! object of the resource type `K` once placed with `within`.

use k8s_openapi::api::core::v1::{
    LocalObjectReference, Namespace as NamespaceObject, ObjectReference,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube_core::{
    ApiResource, ClusterResourceScope, DynamicObject, DynamicResourceScope, GroupVersionKind,
    NamespaceScope, Resource,
};

/// Resource scopes whose objects may be addressed without a namespace: cluster-scoped types,
/// and dynamic types (whose scope is only known at run time), as in kube.
trait ClusterScope {}

impl ClusterScope for ClusterResourceScope {}
impl ClusterScope for DynamicResourceScope {}

/// The URL path of a collection of `K` (no trailing slash, no query), e.g.
/// `/api/v1/namespaces/ns/pods`: what [`Client::list`](crate::Client::list) lists. Implemented
/// by [`Cluster`] and [`Namespace`].
pub trait CollectionUrl<K> {
    /// The collection's URL path.
    fn url_path(&self) -> String;
}

/// The URL path of the collection holding an object of `K` (its name is appended by the
/// request): what [`Client::get`](crate::Client::get) and
/// [`Client::fetch`](crate::Client::fetch) read from. Implemented by [`Cluster`],
/// [`Namespace`] and the object references.
pub trait ObjectUrl<K> {
    /// The collection's URL path.
    fn url_path(&self) -> String;
}

/// A reference naming one object of `K`: its collection ([`ObjectUrl`]) and its name.
pub trait ObjectRef<K>: ObjectUrl<K> {
    /// The object's name; `None` when the reference names none (then
    /// [`Client::fetch`](crate::Client::fetch) fails with `Error::RefResolve`).
    fn name(&self) -> Option<&str>;
}

/// A reference that names a namespaced object once given its namespace, as kube 5.0's
/// `kube::client::scope::NamespacedRef` (also in `kube::prelude`).
///
/// Implemented for `ObjectReference` (its namespace replaced), `OwnerReference` (owner
/// references carry no namespace) and `LocalObjectReference` (which names an object of `K`
/// by name only), each for namespaced resource types `K`.
pub trait NamespacedRef<K> {
    /// This reference, placed in `namespace` (`None`: no namespace, which addresses the
    /// collection across all namespaces — so a fetch through it is answered by the API server
    /// as a request for a resource named like the object, typically 404).
    fn within(&self, namespace: impl Into<Option<String>>) -> impl ObjectRef<K>;
}

/// The collection path of the object a reference's group/version/kind and namespace name.
fn reference_collection(gvk: GroupVersionKind, namespace: Option<&str>) -> String {
    DynamicObject::url_path(&ApiResource::from_gvk(&gvk), namespace)
}

impl<K: Resource> ObjectUrl<K> for ObjectReference {
    fn url_path(&self) -> String {
        reference_collection(self.clone().into(), self.namespace.as_deref())
    }
}

impl<K: Resource> ObjectRef<K> for ObjectReference {
    fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }
}

impl<K> NamespacedRef<K> for ObjectReference
where
    K: Resource,
    K::Scope: NamespaceScope,
{
    fn within(&self, namespace: impl Into<Option<String>>) -> impl ObjectRef<K> {
        let mut placed = self.clone();
        placed.namespace = namespace.into();
        placed
    }
}

impl<K> ObjectUrl<K> for OwnerReference
where
    K: Resource,
    K::Scope: ClusterScope,
{
    fn url_path(&self) -> String {
        reference_collection(self.clone().into(), None)
    }
}

impl<K> ObjectRef<K> for OwnerReference
where
    K: Resource,
    K::Scope: ClusterScope,
{
    fn name(&self) -> Option<&str> {
        Some(&self.name)
    }
}

impl<K> NamespacedRef<K> for OwnerReference
where
    K: Resource,
    K::Scope: NamespaceScope,
{
    fn within(&self, namespace: impl Into<Option<String>>) -> impl ObjectRef<K> {
        ObjectReference {
            api_version: Some(self.api_version.clone()),
            kind: Some(self.kind.clone()),
            name: Some(self.name.clone()),
            uid: Some(self.uid.clone()),
            namespace: namespace.into(),
            ..ObjectReference::default()
        }
    }
}

impl<K> NamespacedRef<K> for LocalObjectReference
where
    K: Resource,
    K::DynamicType: Default,
    K::Scope: NamespaceScope,
{
    fn within(&self, namespace: impl Into<Option<String>>) -> impl ObjectRef<K> {
        let dynamic_type = K::DynamicType::default();
        ObjectReference {
            api_version: Some(K::api_version(&dynamic_type).into_owned()),
            kind: Some(K::kind(&dynamic_type).into_owned()),
            name: Some(self.name.clone()),
            namespace: namespace.into(),
            ..ObjectReference::default()
        }
    }
}

/// The whole cluster, as kube 5.0's `kube::client::scope::Cluster`: lists every object of a
/// resource across all namespaces, and gets cluster-scoped objects.
#[derive(Debug, Clone)]
pub struct Cluster;

impl<K> CollectionUrl<K> for Cluster
where
    K: Resource,
    K::DynamicType: Default,
{
    fn url_path(&self) -> String {
        K::url_path(&K::DynamicType::default(), None)
    }
}

impl<K> ObjectUrl<K> for Cluster
where
    K: Resource,
    K::DynamicType: Default,
    K::Scope: ClusterScope,
{
    fn url_path(&self) -> String {
        K::url_path(&K::DynamicType::default(), None)
    }
}

/// One namespace, as kube 5.0's `kube::client::scope::Namespace`: lists and gets namespaced
/// objects in it.
///
/// Made from a name (`From<&str>`, `From<String>`) or from a `Namespace` object
/// (`TryFrom<&k8s_openapi::api::core::v1::Namespace>`, which fails when the object has no
/// name).
#[derive(Debug, Clone)]
pub struct Namespace(String);

impl<K> CollectionUrl<K> for Namespace
where
    K: Resource,
    K::DynamicType: Default,
    K::Scope: NamespaceScope,
{
    fn url_path(&self) -> String {
        K::url_path(&K::DynamicType::default(), Some(&self.0))
    }
}

impl<K> ObjectUrl<K> for Namespace
where
    K: Resource,
    K::DynamicType: Default,
    K::Scope: NamespaceScope,
{
    fn url_path(&self) -> String {
        K::url_path(&K::DynamicType::default(), Some(&self.0))
    }
}

impl From<&str> for Namespace {
    fn from(name: &str) -> Self {
        Self(name.to_string())
    }
}

impl From<String> for Namespace {
    fn from(name: String) -> Self {
        Self(name)
    }
}

impl TryFrom<&NamespaceObject> for Namespace {
    type Error = NamespaceError;

    /// The namespace the object describes: its `metadata.name`.
    ///
    /// # Errors
    /// `NamespaceError::MissingName` when the object has no name.
    fn try_from(namespace: &NamespaceObject) -> Result<Self, NamespaceError> {
        namespace
            .metadata
            .name
            .clone()
            .map(Self)
            .ok_or(NamespaceError::MissingName)
    }
}

/// Why a `Namespace` object does not give a [`Namespace`] scope, as kube 5.0's.
#[derive(thiserror::Error, Debug)]
pub enum NamespaceError {
    /// The object has no `metadata.name`.
    #[error("Missing Namespace Name")]
    MissingName,
}
