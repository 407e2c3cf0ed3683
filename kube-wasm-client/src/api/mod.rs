//! API helpers for structured interaction with the Kubernetes API, as `kube::api` in
//! kube 5.0: [`Api<K>`] and the kube-core types its methods take and return.

mod core_methods;
mod ephemeral;
mod evict;
mod log;
#[cfg(feature = "ws")]
mod portforward;
#[cfg(feature = "ws")]
mod remote;
#[cfg(feature = "ws")]
mod remote_command;
mod resize;
mod subresource;
mod util;

pub mod entry;

#[cfg(feature = "admission")]
pub use kube_core::admission;
pub use kube_core::params::{
    DeleteParams, GetParams, ListParams, Patch, PatchParams, PostParams, Preconditions,
    PropagationPolicy, ValidationDirective, VersionMatch, WatchParams,
};
pub use kube_core::{
    Resource, ResourceExt,
    dynamic::{ApiResource, DynamicObject},
    gvk::{GroupVersionKind, GroupVersionResource},
    metadata::{ListMeta, ObjectMeta, PartialObjectMeta, PartialObjectMetaExt, TypeMeta},
    object::{NotUsed, Object, ObjectList},
    request::Request,
    watch::WatchEvent,
};

pub use ephemeral::Ephemeral;
pub use evict::{Evict, EvictParams};
#[cfg(feature = "ws")]
pub use kube_core::subresource::AttachParams;
pub use log::{Log, LogParams};
#[cfg(feature = "ws")]
pub use portforward::Portforwarder;
#[cfg(feature = "kubelet-debug")]
pub(crate) use remote::KEEPALIVE_SECS;
#[cfg(feature = "ws")]
pub use remote::{Attach, Execute, Portforward};
#[cfg(feature = "ws")]
pub use remote_command::{AttachedProcess, TerminalSize};
pub use resize::Resize;
pub use subresource::{ScaleSpec, ScaleStatus};

use crate::Client;
use kube_core::discovery::Scope;
use kube_core::{DynamicResourceScope, NamespaceResourceScope, NamespaceScope};
use std::fmt;
use std::marker::PhantomData;

/// The generic Api abstraction: the client, and the url path of one kind of resource
/// (cluster wide or in one namespace), as `kube::Api` in kube 5.0.
///
/// Its methods (`get`, `list`, `create`, `patch`, `watch`, …) build requests with
/// kube-core's `Request` builders and send them to the host through the [`Client`]; results
/// and errors are kube's. Every returned future is `Send` (when `K` is), and dropping one
/// early cancels its op on the host.
///
/// An `Api<PartialObjectMeta<K>>` (`K::metadata_api()` is true) makes metadata-only
/// requests for `get`, `list`, `patch` and `watch`, as in kube.
pub struct Api<K> {
    request: kube_core::Request,
    client: Client,
    namespace: Option<String>,
    /// The erased resource, to rebuild the url when the namespace changes.
    resource: ApiResource,
    /// Known only for [`Api::dynamic`]; `None` makes [`Api::constrain`] unconditional.
    scope: Option<Scope>,
    metadata_api: bool,
    /// `Send + Sync` whatever `K` is: an `Api` holds no `K`.
    _kind: PhantomData<fn() -> K>,
}

/// Constructors for any [`Resource`], given its dynamic type (what kube calls the
/// `*_with` constructors).
impl<K: Resource> Api<K> {
    /// The namespace this Api is constrained to, or `None` for cluster wide.
    pub fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    /// Cluster level resources, or resources viewed across all namespaces, of the kind
    /// `dyntype` describes (e.g. an `ApiResource` for `DynamicObject`).
    pub fn all_with(client: Client, dyntype: &K::DynamicType) -> Self {
        Self::build(client, dyntype, None, None)
    }

    /// Namespaced resources of the kind `dyntype` describes, in namespace `ns`.
    pub fn namespaced_with(client: Client, ns: &str, dyntype: &K::DynamicType) -> Self
    where
        K: Resource<Scope = DynamicResourceScope>,
    {
        Self::build(client, dyntype, Some(ns), None)
    }

    /// Namespaced resources of the kind `dyntype` describes, in the client's default
    /// namespace.
    pub fn default_namespaced_with(client: Client, dyntype: &K::DynamicType) -> Self
    where
        K: Resource<Scope = DynamicResourceScope>,
    {
        let ns = client.default_namespace().to_string();
        Self::namespaced_with(client, &ns, dyntype)
    }

    /// Resources of a kind only known at runtime, remembering its [`Scope`] so that
    /// [`Api::constrain`] applies a namespace only to a namespaced kind (as `kubectl -n`).
    /// Starts cluster wide, as [`Api::all_with`].
    pub fn dynamic(client: Client, dyntype: &K::DynamicType, scope: &Scope) -> Self
    where
        K: Resource<DynamicType = ApiResource, Scope = DynamicResourceScope>,
    {
        Self::build(client, dyntype, None, Some(scope.clone()))
    }

    /// This Api in namespace `ns` (an empty `ns` means all namespaces). An Api from
    /// [`Api::dynamic`] of a cluster scoped kind is returned unchanged.
    #[must_use]
    pub fn constrain(mut self, ns: &str) -> Self
    where
        K::Scope: NamespaceScope,
    {
        if self.scope == Some(Scope::Cluster) {
            return self;
        }
        self.namespace = (!ns.is_empty()).then(|| ns.to_string());
        self.request = kube_core::Request::new(DynamicObject::url_path(
            &self.resource,
            self.namespace.as_deref(),
        ));
        self
    }

    /// This Api across all namespaces: the inverse of [`Api::constrain`].
    #[must_use]
    pub fn unconstrain(mut self) -> Self
    where
        K::Scope: NamespaceScope,
    {
        self.namespace = None;
        self.request = kube_core::Request::new(DynamicObject::url_path(&self.resource, None));
        self
    }

    /// This Api in the client's default namespace, as [`Api::constrain`].
    #[must_use]
    pub fn constrain_default(self) -> Self
    where
        K::Scope: NamespaceScope,
    {
        let ns = self.client.default_namespace().to_string();
        self.constrain(&ns)
    }

    /// Consumes the Api, returning its [`Client`].
    pub fn into_client(self) -> Client {
        self.into()
    }

    /// The url path of the collection, e.g. `/api/v1/namespaces/default/pods`.
    pub fn resource_url(&self) -> &str {
        &self.request.url_path
    }

    fn build(
        client: Client,
        dyntype: &K::DynamicType,
        ns: Option<&str>,
        scope: Option<Scope>,
    ) -> Self {
        Self {
            request: kube_core::Request::new(K::url_path(dyntype, ns)),
            client,
            namespace: ns.map(str::to_string),
            resource: ApiResource::erase::<K>(dyntype),
            scope,
            metadata_api: K::metadata_api(),
            _kind: PhantomData,
        }
    }
}

/// Constructors for resources whose dynamic type is `Default` (every static type, e.g.
/// k8s-openapi's and `#[derive(CustomResource)]`'s).
impl<K: Resource> Api<K>
where
    K::DynamicType: Default,
{
    /// Cluster level resources, or resources viewed across all namespaces.
    pub fn all(client: Client) -> Self {
        Self::all_with(client, &K::DynamicType::default())
    }

    /// Namespaced resources in namespace `ns`.
    pub fn namespaced(client: Client, ns: &str) -> Self
    where
        K: Resource<Scope = NamespaceResourceScope>,
    {
        Self::build(client, &K::DynamicType::default(), Some(ns), None)
    }

    /// Namespaced resources in the client's default namespace (from the host's
    /// `KUBE_WASM_DEFAULT_NAMESPACE` with [`Client::try_default`]).
    pub fn default_namespaced(client: Client) -> Self
    where
        K: Resource<Scope = NamespaceResourceScope>,
    {
        let ns = client.default_namespace().to_string();
        Self::namespaced(client, &ns)
    }
}

impl<K> Clone for Api<K> {
    fn clone(&self) -> Self {
        Self {
            request: self.request.clone(),
            client: self.client.clone(),
            namespace: self.namespace.clone(),
            resource: self.resource.clone(),
            scope: self.scope.clone(),
            metadata_api: self.metadata_api,
            _kind: PhantomData,
        }
    }
}

impl<K> From<Api<K>> for Client {
    fn from(api: Api<K>) -> Self {
        api.client
    }
}

impl<K> fmt::Debug for Api<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Api")
            .field("request", &self.request)
            .field("client", &"...")
            .field("namespace", &self.namespace)
            .field("scope", &self.scope)
            .finish()
    }
}
