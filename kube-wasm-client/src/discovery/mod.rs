//! Runtime API discovery, as `kube::discovery` in kube-client 5.0: which groups, versions
//! and kinds the API server serves, as the [`ApiResource`] / [`ApiCapabilities`] pairs
//! that `Api::<DynamicObject>::all_with` and `namespaced_with` take.
//!
//! - [`Discovery`]: a cache of every group (or a filtered set), from the per-group
//!   discovery documents ([`Discovery::run`]) or the aggregated ones
//!   ([`Discovery::run_aggregated`]);
//! - [`oneshot`] ([`group`], [`pinned_group`], [`pinned_kind`]): one group or kind, no
//!   cache;
//! - kube-core's [`ApiResource`], [`ApiCapabilities`], [`Scope`] and [`verbs`], re-exported
//!   as they are.
//!
//! Every request goes through the [`Client`] (so through the host), with kube's paths; a
//! non-2xx answer is [`Error::Api`](crate::Error::Api), and malformed discovery data is
//! [`Error::Discovery`](crate::Error::Discovery).

use crate::{Client, Result};
use kube_core::gvk::GroupVersionKind;
use kube_core::{DynamicObject, TypeMeta};
use std::collections::HashMap;

mod aggregated;
mod apigroup;
pub mod oneshot;
mod parse;
mod query;

pub use apigroup::ApiGroup;
pub use kube_core::discovery::{ApiCapabilities, ApiResource, Scope, verbs};
pub use oneshot::{group, pinned_group, pinned_kind};

/// Which groups a [`Discovery`] queries.
enum GroupSelection {
    /// Only these.
    Only(Vec<String>),
    /// All but these.
    AllExcept(Vec<String>),
}

impl GroupSelection {
    fn includes(&self, group: &str) -> bool {
        match self {
            Self::Only(allowed) => allowed.iter().any(|g| g == group),
            Self::AllExcept(blocked) => !blocked.iter().any(|g| g == group),
        }
    }
}

/// A caching discovery client, as `kube::Discovery` in kube 5.0: runs discovery for all
/// API groups (or those chosen with [`Discovery::filter`] / [`Discovery::exclude`]) and
/// keeps one [`ApiGroup`] per group (`""` is the core group).
///
/// ```no_run
/// # async fn demo(client: kube_wasm_client::Client) -> kube_wasm_client::Result<()> {
/// use kube_wasm_client::api::{Api, DynamicObject};
/// use kube_wasm_client::discovery::{Discovery, verbs};
/// let discovery = Discovery::new(client.clone()).run().await?;
/// for group in discovery.groups() {
///     for (ar, caps) in group.recommended_resources() {
///         if caps.supports_operation(verbs::LIST) {
///             let api: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
///             let _ = api.list(&Default::default()).await?;
///         }
///     }
/// }
/// # Ok(())
/// # }
/// ```
///
/// For one group or kind without a cache, see [`oneshot`].
pub struct Discovery {
    client: Client,
    groups: HashMap<String, ApiGroup>,
    selection: GroupSelection,
}

impl Discovery {
    /// A discovery client for every group, with an empty cache (fill it with
    /// [`Discovery::run`]).
    #[must_use]
    pub fn new(client: Client) -> Self {
        Self {
            client,
            groups: HashMap::new(),
            selection: GroupSelection::AllExcept(Vec::new()),
        }
    }

    /// Only query the listed groups (`""` for the core group). Replaces an earlier
    /// [`Discovery::exclude`].
    #[must_use]
    pub fn filter(mut self, allow: &[&str]) -> Self {
        self.selection = GroupSelection::Only(allow.iter().map(ToString::to_string).collect());
        self
    }

    /// Query every group but the listed ones (`""` for the core group). Replaces an
    /// earlier [`Discovery::filter`].
    #[must_use]
    pub fn exclude(mut self, deny: &[&str]) -> Self {
        self.selection = GroupSelection::AllExcept(deny.iter().map(ToString::to_string).collect());
        self
    }

    /// Runs discovery and refills the cache (cleared first), as kube's: `GET /apis`, then
    /// for each selected group `GET /apis/{group}/{version}` per listed version; then, if
    /// the core group is selected, `GET /api` and `GET /api/{version}` per core version —
    /// `N + 2` requests for `N` group versions, one at a time.
    ///
    /// # Errors
    /// The first failing request's error ([`Error::Api`](crate::Error::Api),
    /// [`Error::Service`](crate::Error::Service), …);
    /// [`DiscoveryError::EmptyApiGroup`](crate::error::DiscoveryError::EmptyApiGroup) for
    /// a selected group with no versions.
    pub async fn run(mut self) -> Result<Self> {
        self.groups.clear();
        let listed = self.client.list_api_groups().await?;
        for group in listed.groups {
            if self.selection.includes(&group.name) {
                let name = group.name.clone();
                let found = ApiGroup::query_apis(&self.client, group).await?;
                self.groups.insert(name, found);
            }
        }
        if self.selection.includes(ApiGroup::CORE_GROUP) {
            let core = self.client.list_core_api_versions().await?;
            let found = ApiGroup::query_core(&self.client, core).await?;
            self.groups.insert(ApiGroup::CORE_GROUP.to_string(), found);
        }
        Ok(self)
    }

    /// Runs discovery through the aggregated discovery documents and refills the cache
    /// (cleared first), as kube's: `GET /apis`, then (if the core group is selected)
    /// `GET /api`, both with kube-core's `ACCEPT_AGGREGATED_DISCOVERY_V2` header — two
    /// requests whatever the number of groups. Kubernetes serves these documents from 1.26
    /// (beta) / 1.30 (stable).
    ///
    /// Older API servers (such as v1.20): there is no fallback to [`Discovery::run`], here
    /// as in kube 5.0. The `Accept` header ends with plain `application/json`, so such a
    /// server answers with its ordinary `APIGroupList` / `APIVersions`; these read as
    /// aggregated lists without `items`, so the run succeeds with **no groups**. Call
    /// [`Discovery::run`] when [`Discovery::groups`] comes back empty (or the server is
    /// older than 1.26).
    ///
    /// # Errors
    /// The requests' errors; [`Error::SerdeError`](crate::Error::SerdeError) for a body
    /// that is not a JSON object of that shape;
    /// [`DiscoveryError::EmptyApiGroup`](crate::error::DiscoveryError::EmptyApiGroup) for
    /// a selected group with no versions.
    pub async fn run_aggregated(mut self) -> Result<Self> {
        self.groups.clear();
        let listed = self.client.list_api_groups_aggregated().await?;
        for group in listed.items {
            let name = group
                .metadata
                .as_ref()
                .and_then(|m| m.name.clone())
                .unwrap_or_default();
            if self.selection.includes(&name) {
                self.groups.insert(name, ApiGroup::from_aggregated(group)?);
            }
        }
        if self.selection.includes(ApiGroup::CORE_GROUP) {
            let core = self.client.list_core_api_versions_aggregated().await?;
            // The core document holds one group; only the first is used, as in kube.
            if let Some(group) = core.items.into_iter().next() {
                self.groups.insert(
                    ApiGroup::CORE_GROUP.to_string(),
                    ApiGroup::from_aggregated(group)?,
                );
            }
        }
        Ok(self)
    }

    /// Every cached group, in no particular order.
    pub fn groups(&self) -> impl Iterator<Item = &ApiGroup> {
        self.groups.values()
    }

    /// Every cached group sorted by name (the core group `""` first), kubectl's order.
    pub fn groups_alphabetical(&self) -> Vec<&ApiGroup> {
        let mut groups: Vec<&ApiGroup> = self.groups().collect();
        groups.sort_by_key(|g| g.name());
        groups
    }

    /// The cached group named `group` (`""` for core), if the server serves it.
    pub fn get(&self, group: &str) -> Option<&ApiGroup> {
        self.groups.get(group)
    }

    /// Whether the cache holds group `group`.
    pub fn has_group(&self, group: &str) -> bool {
        self.groups.contains_key(group)
    }

    /// The resource of `gvk` and its capabilities, if the cached group serves that kind at
    /// that version (no request is made). For a single kind without a full discovery, see
    /// [`pinned_kind`].
    pub fn resolve_gvk(&self, gvk: &GroupVersionKind) -> Option<(ApiResource, ApiCapabilities)> {
        self.get(&gvk.group)?
            .versioned_resources(&gvk.version)
            .into_iter()
            .find(|(ar, _)| ar.kind == gvk.kind)
    }

    /// As [`Discovery::resolve_gvk`], for the `apiVersion` and `kind` of `tm`; `None` if
    /// `apiVersion` does not parse or the kind is not cached.
    pub fn resolve_typemeta(&self, tm: &TypeMeta) -> Option<(ApiResource, ApiCapabilities)> {
        self.resolve_gvk(&GroupVersionKind::try_from(tm).ok()?)
    }

    /// As [`Discovery::resolve_typemeta`], for the type of `obj`; `None` if it has none.
    pub fn resolve_object(&self, obj: &DynamicObject) -> Option<(ApiResource, ApiCapabilities)> {
        self.resolve_typemeta(obj.types.as_ref()?)
    }
}
