//! Requests about the API server itself: version and the raw discovery documents, as
//! kube 5.0's `Client` methods of the same names.

use super::{APIGroupDiscoveryList, Client};
use crate::{Error, Result};
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
use kube_core::discovery::v2::ACCEPT_AGGREGATED_DISCOVERY_V2;

/// A bodiless `GET` of `path`, optionally with an `accept` header.
fn get(path: &str, accept: Option<&str>) -> Result<http::Request<Vec<u8>>> {
    let mut builder = http::Request::get(path);
    if let Some(accept) = accept {
        builder = builder.header(http::header::ACCEPT, accept);
    }
    builder.body(Vec::new()).map_err(Error::HttpError)
}

impl Client {
    /// The API server's version (`GET /version`).
    ///
    /// # Errors
    /// As [`Client::request`].
    pub async fn apiserver_version(&self) -> Result<k8s_openapi::apimachinery::pkg::version::Info> {
        self.request(get("/version", None)?).await
    }

    /// The API groups the server serves (`GET /apis`).
    ///
    /// # Errors
    /// As [`Client::request`].
    pub async fn list_api_groups(&self) -> Result<meta::APIGroupList> {
        self.request(get("/apis", None)?).await
    }

    /// The resources of one group version (`GET /apis/{apiversion}`, e.g. `apps/v1`).
    ///
    /// # Errors
    /// As [`Client::request`]; [`Error::HttpError`] if `apiversion` makes an invalid URI.
    pub async fn list_api_group_resources(
        &self,
        apiversion: &str,
    ) -> Result<meta::APIResourceList> {
        self.request(get(&format!("/apis/{apiversion}"), None)?)
            .await
    }

    /// The core API versions (`GET /api`).
    ///
    /// # Errors
    /// As [`Client::request`].
    pub async fn list_core_api_versions(&self) -> Result<meta::APIVersions> {
        self.request(get("/api", None)?).await
    }

    /// The resources of one core version (`GET /api/{version}`, e.g. `v1`).
    ///
    /// # Errors
    /// As [`Client::request`]; [`Error::HttpError`] if `version` makes an invalid URI.
    pub async fn list_core_api_resources(&self, version: &str) -> Result<meta::APIResourceList> {
        self.request(get(&format!("/api/{version}"), None)?).await
    }

    /// All API groups through aggregated discovery (`GET /apis`, Kubernetes 1.26+).
    ///
    /// # Errors
    /// As [`Client::request`].
    pub async fn list_api_groups_aggregated(&self) -> Result<APIGroupDiscoveryList> {
        self.request(get("/apis", Some(ACCEPT_AGGREGATED_DISCOVERY_V2))?)
            .await
    }

    /// The core group through aggregated discovery (`GET /api`, Kubernetes 1.26+).
    ///
    /// # Errors
    /// As [`Client::request`].
    pub async fn list_core_api_versions_aggregated(&self) -> Result<APIGroupDiscoveryList> {
        self.request(get("/api", Some(ACCEPT_AGGREGATED_DISCOVERY_V2))?)
            .await
    }
}
