//! Reading aggregated discovery documents (`apidiscovery.k8s.io/v2`, the answer to
//! `GET /api` and `GET /apis` with kube's aggregated `Accept` header) into the same
//! [`GroupVersionData`] the per-group-version queries make, as kube-client 5.0 does for
//! `Discovery::run_aggregated`.

use super::parse::GroupVersionData;
use kube_core::discovery::v2::{
    APIResourceDiscovery, APISubresourceDiscovery, APIVersionDiscovery,
};
use kube_core::discovery::{ApiCapabilities, ApiResource, Scope};
use kube_core::gvk::GroupVersion;

impl GroupVersionData {
    /// The resources of `group` at one aggregated version entry. Missing fields read as
    /// empty (kube's defaults): no version is `""`, no kind `""`, no plural `""`.
    pub(crate) fn from_aggregated(group: &str, entry: APIVersionDiscovery) -> Self {
        let version = entry.version.unwrap_or_default();
        let gv = GroupVersion::gv(group, &version);
        let resources = entry
            .resources
            .into_iter()
            .map(|res| resource(res, &gv))
            .collect();
        Self { version, resources }
    }
}

/// An [`ApiResource`] of `gv` with `kind` and `plural`.
fn api_resource(gv: &GroupVersion, kind: String, plural: String) -> ApiResource {
    ApiResource {
        group: gv.group.clone(),
        version: gv.version.clone(),
        api_version: gv.api_version(),
        kind,
        plural,
    }
}

/// One aggregated resource entry: scope `Namespaced` only when the server says so
/// (anything else is `Cluster`, as in kube), verbs as listed, subresources in order.
fn resource(res: APIResourceDiscovery, gv: &GroupVersion) -> (ApiResource, ApiCapabilities) {
    let scope = if res.scope.as_deref() == Some("Namespaced") {
        Scope::Namespaced
    } else {
        Scope::Cluster
    };
    let kind = res.response_kind.and_then(|k| k.kind).unwrap_or_default();
    let ar = api_resource(gv, kind, res.resource.unwrap_or_default());
    let subresources = res
        .subresources
        .into_iter()
        .map(|sub| subresource(sub, gv, &scope))
        .collect();
    let caps = ApiCapabilities {
        scope,
        subresources,
        operations: res.verbs,
    };
    (ar, caps)
}

/// One aggregated subresource entry: `plural` is the subresource's name (e.g. `status`),
/// the scope is its parent's, and it has no subresources of its own.
fn subresource(
    sub: APISubresourceDiscovery,
    gv: &GroupVersion,
    parent_scope: &Scope,
) -> (ApiResource, ApiCapabilities) {
    let kind = sub.response_kind.and_then(|k| k.kind).unwrap_or_default();
    let ar = api_resource(gv, kind, sub.subresource.unwrap_or_default());
    let caps = ApiCapabilities {
        scope: parent_scope.clone(),
        subresources: Vec::new(),
        operations: sub.verbs,
    };
    (ar, caps)
}
