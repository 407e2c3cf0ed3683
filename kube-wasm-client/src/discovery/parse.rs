//! Reading a group version's `APIResourceList` (the answer to `GET /api/{v}` or
//! `GET /apis/{group}/{v}`) into kube-core's [`ApiResource`] / [`ApiCapabilities`] pairs,
//! with the rules of kube-client 5.0's discovery.

use crate::error::DiscoveryError;
use crate::{Error, Result};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{APIResource, APIResourceList};
use kube_core::discovery::{ApiCapabilities, ApiResource, Scope};
use kube_core::gvk::{GroupVersion, ParseGroupVersionError};

/// The resources of one group at one version, each with what it supports.
#[derive(Clone)]
pub(crate) struct GroupVersionData {
    /// The version, e.g. `v1`.
    pub(crate) version: String,
    /// The top-level resources (no subresources), in the order the server listed them.
    pub(crate) resources: Vec<(ApiResource, ApiCapabilities)>,
}

impl GroupVersionData {
    /// Every top-level resource of `list` (entries whose name has no `/`), with its
    /// capabilities; `version` names the data.
    ///
    /// # Errors
    /// [`DiscoveryError::InvalidGroupVersion`] if the list's `groupVersion` does not parse.
    pub(crate) fn from_list(version: String, list: &APIResourceList) -> Result<Self> {
        let resources = list
            .resources
            .iter()
            .filter(|res| !res.name.contains('/'))
            .map(|res| resource_with_capabilities(list, res))
            .collect::<Result<_>>()?;
        Ok(Self { version, resources })
    }
}

/// One entry of `list`, as an [`ApiResource`] and its [`ApiCapabilities`].
///
/// # Errors
/// [`DiscoveryError::InvalidGroupVersion`] if the list's `groupVersion` does not parse.
pub(crate) fn resource_with_capabilities(
    list: &APIResourceList,
    res: &APIResource,
) -> Result<(ApiResource, ApiCapabilities)> {
    Ok((
        api_resource(res, &list.group_version)?,
        capabilities(list, res),
    ))
}

/// The [`ApiResource`] of `res`, listed under `group_version`: the entry's own `group` and
/// `version` when it sets them, else the list's; `api_version` always the list's; `plural`
/// is the entry's name.
///
/// # Errors
/// [`DiscoveryError::InvalidGroupVersion`] if `group_version` does not parse.
fn api_resource(res: &APIResource, group_version: &str) -> Result<ApiResource> {
    let gv: GroupVersion = group_version.parse().map_err(|ParseGroupVersionError(s)| {
        Error::Discovery(DiscoveryError::InvalidGroupVersion(s))
    })?;
    Ok(ApiResource {
        group: res.group.clone().unwrap_or_else(|| gv.group.clone()),
        version: res.version.clone().unwrap_or_else(|| gv.version.clone()),
        api_version: gv.api_version(),
        kind: res.kind.clone(),
        plural: res.name.clone(),
    })
}

/// What `res` supports: its scope, verbs, and the subresources `list` holds for it (the
/// entries named `{res.name}/{sub}`, each with `plural` set to `sub` and its own
/// capabilities), as kube's `ApiCapabilities`.
fn capabilities(list: &APIResourceList, res: &APIResource) -> ApiCapabilities {
    let prefix = format!("{}/", res.name);
    let subresources = list
        .resources
        .iter()
        .filter_map(|sub| {
            let sub_name = sub.name.strip_prefix(&prefix)?;
            // The list's groupVersion parsed for `res` already; a subresource shares it.
            let mut ar = api_resource(sub, &list.group_version).ok()?;
            ar.plural = sub_name.to_string();
            Some((ar, capabilities(list, sub)))
        })
        .collect();
    ApiCapabilities {
        scope: if res.namespaced {
            Scope::Namespaced
        } else {
            Scope::Cluster
        },
        subresources,
        operations: res.verbs.clone(),
    }
}
