//! [`ApiGroup`]: what discovery found for one API group, and its read-only interface, as
//! kube-client 5.0's `kube::discovery::ApiGroup`.

use super::parse::GroupVersionData;
use kube_core::Version;
use kube_core::discovery::{ApiCapabilities, ApiResource};
use std::cmp::Reverse;
use std::collections::HashMap;

/// The resources and capabilities discovered for one API group, at every version it
/// serves, as `kube::discovery::ApiGroup` in kube 5.0.
///
/// Made by [`Discovery`](super::Discovery) or the [`oneshot`](super::oneshot) functions.
/// Its versions are never empty and are kept in Kubernetes version priority (stable, then
/// beta, then alpha, newest first within each; others last, alphabetically), so
/// [`ApiGroup::preferred_version_or_latest`] always answers.
///
/// Each `(ApiResource, ApiCapabilities)` pair it returns is what `Api::all_with` /
/// `Api::namespaced_with` need to work with the kind as a `DynamicObject`.
///
/// As kube warns, version preference is a property of the group, not of each resource:
/// resources of one group are expected to move between versions together.
pub struct ApiGroup {
    /// The group's name, `""` for the core group.
    pub(crate) name: String,
    /// One entry per served version, in version priority order.
    pub(crate) data: Vec<GroupVersionData>,
    /// The version the server prefers, when it says.
    pub(crate) preferred: Option<String>,
}

impl ApiGroup {
    /// The name of the core (legacy, `/api`) group: `""`.
    pub const CORE_GROUP: &'static str = "";

    /// A group from its parts, its versions sorted by priority.
    pub(crate) fn new(
        name: String,
        mut data: Vec<GroupVersionData>,
        preferred: Option<String>,
    ) -> Self {
        data.sort_by_cached_key(|gvd| Reverse(Version::parse(&gvd.version).priority()));
        Self {
            name,
            data,
            preferred,
        }
    }

    /// The group's name, e.g. `apps`, or `""` for the core group.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The versions served (e.g. `v1`, `v1beta1`), in descending Kubernetes version
    /// priority (see [`kube_core::Version`]): stable, then beta, then alpha, the newest
    /// first in each; anything else last, alphabetically. Never empty.
    pub fn versions(&self) -> impl Iterator<Item = &str> {
        self.data.iter().map(|gvd| gvd.version.as_str())
    }

    /// The version the API server prefers for this group, if it named one (`v1` for the
    /// core group; the first aggregated version with [`Discovery::run_aggregated`];
    /// the pinned version for [`pinned_group`]).
    ///
    /// [`Discovery::run_aggregated`]: super::Discovery::run_aggregated
    /// [`pinned_group`]: super::pinned_group
    pub fn preferred_version(&self) -> Option<&str> {
        self.preferred.as_deref()
    }

    /// The preferred version, else the highest-priority served version (the first of
    /// [`ApiGroup::versions`]).
    pub fn preferred_version_or_latest(&self) -> &str {
        self.preferred
            .as_deref()
            .or_else(|| self.versions().next())
            // Unreachable: every constructor refuses a group without versions.
            .unwrap_or_default()
    }

    /// The resources of this group at version `ver`, each with its capabilities; empty
    /// if the group does not serve `ver`.
    pub fn versioned_resources(&self, ver: &str) -> Vec<(ApiResource, ApiCapabilities)> {
        self.data
            .iter()
            .find(|gvd| gvd.version == ver)
            .map(|gvd| gvd.resources.clone())
            .unwrap_or_default()
    }

    /// The resources at [`ApiGroup::preferred_version_or_latest`].
    pub fn recommended_resources(&self) -> Vec<(ApiResource, ApiCapabilities)> {
        self.versioned_resources(self.preferred_version_or_latest())
    }

    /// Every kind of the group once, at the highest-priority version that serves it (so a
    /// kind only served at `v1alpha1` is still listed). The order is unspecified, as in
    /// kube.
    pub fn resources_by_stability(&self) -> Vec<(ApiResource, ApiCapabilities)> {
        let mut best: HashMap<&str, &(ApiResource, ApiCapabilities)> = HashMap::new();
        for pair in self.data.iter().flat_map(|gvd| &gvd.resources) {
            let priority =
                |p: &(ApiResource, ApiCapabilities)| Version::parse(&p.0.version).priority();
            best.entry(pair.0.kind.as_str())
                .and_modify(|current| {
                    if priority(pair) > priority(current) {
                        *current = pair;
                    }
                })
                .or_insert(pair);
        }
        best.into_values().cloned().collect()
    }

    /// The resource of kind `kind` (e.g. `Deployment`) at
    /// [`ApiGroup::preferred_version_or_latest`], if the group serves it there.
    pub fn recommended_kind(&self, kind: &str) -> Option<(ApiResource, ApiCapabilities)> {
        self.recommended_resources()
            .into_iter()
            .find(|(ar, _)| ar.kind == kind)
    }
}
