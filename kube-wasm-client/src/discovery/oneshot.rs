//! Single-use discovery without a cache, as `kube::discovery::oneshot` in kube 5.0:
//!
//! - one kind at a pinned version ([`pinned_kind`]): one request;
//! - all kinds of a group at a pinned version ([`pinned_group`]): one request;
//! - all kinds at all versions of a group ([`group`]): the group list, then one request
//!   per version.
//!
//! The three are also re-exported at the root of [`discovery`](super).

use super::ApiGroup;
use crate::error::DiscoveryError;
use crate::{Client, Error, Result};
use kube_core::discovery::{ApiCapabilities, ApiResource};
use kube_core::gvk::{GroupVersion, GroupVersionKind};

/// Discovers every version of API group `apigroup` (`""` for the core group), to work with
/// its recommended (preferred or latest) version.
///
/// Requests: `GET /api` then `GET /api/{v}` per core version; or `GET /apis` then
/// `GET /apis/{group}/{v}` per version of the named group.
///
/// # Errors
/// [`DiscoveryError::MissingApiGroup`] if `/apis` does not list the group;
/// [`DiscoveryError::EmptyApiGroup`] if it has no versions; the requests' errors
/// ([`Error::Api`], [`Error::Service`], …).
pub async fn group(client: &Client, apigroup: &str) -> Result<ApiGroup> {
    if apigroup == ApiGroup::CORE_GROUP {
        let core = client.list_core_api_versions().await?;
        return ApiGroup::query_core(client, core).await;
    }
    let groups = client.list_api_groups().await?;
    match groups.groups.into_iter().find(|g| g.name == apigroup) {
        Some(found) => ApiGroup::query_apis(client, found).await,
        None => Err(Error::Discovery(DiscoveryError::MissingApiGroup(
            apigroup.to_string(),
        ))),
    }
}

/// Discovers the kinds of one group version, e.g. `apiregistration.k8s.io/v1` parsed into
/// a [`GroupVersion`]: a single request (`GET /api/{v}` for the core group, else
/// `GET /apis/{group}/{v}`). The returned group's only and preferred version is `gv`'s.
///
/// # Errors
/// The request's errors, e.g. [`Error::Api`] with a 404 for a group version the server
/// does not serve.
pub async fn pinned_group(client: &Client, gv: &GroupVersion) -> Result<ApiGroup> {
    ApiGroup::query_gv(client, gv).await
}

/// Discovers a single kind at a pinned group version: one request for the group version's
/// resource list, then the top-level resource of kind `gvk.kind`.
///
/// # Errors
/// [`DiscoveryError::MissingKind`] if the group version does not serve the kind; the
/// request's errors (e.g. [`Error::Api`] 404 for an unknown group version).
pub async fn pinned_kind(
    client: &Client,
    gvk: &GroupVersionKind,
) -> Result<(ApiResource, ApiCapabilities)> {
    ApiGroup::query_gvk(client, gvk).await
}
