//! Building [`ApiGroup`]s from the API server's discovery documents: the requests kube-client
//! 5.0's discovery makes, in the same order, with the same errors.

use super::apigroup::ApiGroup;
use super::parse::{GroupVersionData, resource_with_capabilities};
use crate::error::DiscoveryError;
use crate::{Client, Error, Result};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{APIGroup, APIResourceList, APIVersions};
use kube_core::discovery::v2::APIGroupDiscovery;
use kube_core::discovery::{ApiCapabilities, ApiResource};
use kube_core::gvk::{GroupVersion, GroupVersionKind};

impl ApiGroup {
    /// A non-core group listed by `GET /apis`: one `GET /apis/{groupVersion}` per listed
    /// version, in the listed order; the preferred version is the group's
    /// `preferredVersion`.
    ///
    /// # Errors
    /// [`DiscoveryError::EmptyApiGroup`] if the group lists no versions; the requests'
    /// errors.
    pub(crate) async fn query_apis(client: &Client, group: APIGroup) -> Result<Self> {
        if group.versions.is_empty() {
            return Err(Error::Discovery(DiscoveryError::EmptyApiGroup(group.name)));
        }
        let mut data = Vec::with_capacity(group.versions.len());
        for gv in &group.versions {
            let list = client.list_api_group_resources(&gv.group_version).await?;
            data.push(GroupVersionData::from_list(gv.version.clone(), &list)?);
        }
        let preferred = group.preferred_version.map(|p| p.version);
        Ok(Self::new(group.name, data, preferred))
    }

    /// The core group from `GET /api`'s versions: one `GET /api/{version}` each; the
    /// preferred version is `v1`, as in kube.
    ///
    /// # Errors
    /// [`DiscoveryError::EmptyApiGroup`] (named `""`) if there are no versions; the
    /// requests' errors.
    pub(crate) async fn query_core(client: &Client, core: APIVersions) -> Result<Self> {
        if core.versions.is_empty() {
            return Err(Error::Discovery(DiscoveryError::EmptyApiGroup(
                Self::CORE_GROUP.to_string(),
            )));
        }
        let mut data = Vec::with_capacity(core.versions.len());
        for version in core.versions {
            let list = client.list_core_api_resources(&version).await?;
            data.push(GroupVersionData::from_list(version, &list)?);
        }
        Ok(Self::new(
            Self::CORE_GROUP.to_string(),
            data,
            Some("v1".to_string()),
        ))
    }

    /// One group of an aggregated discovery document, without further requests; the
    /// preferred version is the first listed (the server lists them by preference).
    ///
    /// # Errors
    /// [`DiscoveryError::EmptyApiGroup`] if the group lists no versions.
    pub(crate) fn from_aggregated(group: APIGroupDiscovery) -> Result<Self> {
        let name = group.metadata.and_then(|m| m.name).unwrap_or_default();
        if group.versions.is_empty() {
            return Err(Error::Discovery(DiscoveryError::EmptyApiGroup(name)));
        }
        let preferred = group.versions.first().and_then(|v| v.version.clone());
        let data = group
            .versions
            .into_iter()
            .map(|entry| GroupVersionData::from_aggregated(&name, entry))
            .collect();
        Ok(Self::new(name, data, preferred))
    }

    /// Just the group version `gv`: one request, the preferred version is `gv`'s.
    ///
    /// # Errors
    /// The request's errors (e.g. [`Error::Api`] 404 for an unknown group version).
    pub(crate) async fn query_gv(client: &Client, gv: &GroupVersion) -> Result<Self> {
        let list = resource_list(client, &gv.group, &gv.api_version()).await?;
        let data = GroupVersionData::from_list(gv.version.clone(), &list)?;
        Ok(Self::new(
            gv.group.clone(),
            vec![data],
            Some(gv.version.clone()),
        ))
    }

    /// Just the kind `gvk`: one request for its group version, then the first top-level
    /// resource of that kind.
    ///
    /// # Errors
    /// [`DiscoveryError::MissingKind`] (with the GVK's `Debug` text) if the group version
    /// does not serve the kind; the request's errors.
    pub(crate) async fn query_gvk(
        client: &Client,
        gvk: &GroupVersionKind,
    ) -> Result<(ApiResource, ApiCapabilities)> {
        let list = resource_list(client, &gvk.group, &gvk.api_version()).await?;
        match list
            .resources
            .iter()
            .find(|res| res.kind == gvk.kind && !res.name.contains('/'))
        {
            Some(res) => resource_with_capabilities(&list, res),
            None => Err(Error::Discovery(DiscoveryError::MissingKind(format!(
                "{gvk:?}"
            )))),
        }
    }
}

/// The resource list of `api_version`: `GET /api/{v}` for the core group, else
/// `GET /apis/{group}/{v}`.
async fn resource_list(client: &Client, group: &str, api_version: &str) -> Result<APIResourceList> {
    if group.is_empty() {
        client.list_core_api_resources(api_version).await
    } else {
        client.list_api_group_resources(api_version).await
    }
}
