//! Convenience verbs of particular kinds, as kube 5.0's: `restart` (workloads), `cordon` /
//! `uncordon` (nodes), `create_token_request` (service accounts), and the `approval`
//! subresource of certificate signing requests.

use super::Api;
use crate::{Error, Result};
use k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::core::v1::{Node, ServiceAccount};
use kube_core::params::{Patch, PatchParams, PostParams};
use kube_core::{Resource, util::Restart};
use serde::de::DeserializeOwned;

impl<K> Api<K>
where
    K: Restart + Resource + DeserializeOwned,
{
    /// Restarts a workload (Deployment, DaemonSet, StatefulSet) by patching its pod
    /// template's `kubectl.kubernetes.io/restartedAt` annotation, as `kubectl rollout
    /// restart`.
    ///
    /// # Errors
    /// [`Error::Api`]; the client's errors.
    pub async fn restart(&self, name: &str) -> Result<K> {
        let request = self.request.restart(name).map_err(Error::BuildRequest)?;
        self.client.request::<K>(request).await
    }
}

impl Api<Node> {
    /// Marks a node unschedulable.
    ///
    /// # Errors
    /// [`Error::Api`]; the client's errors.
    pub async fn cordon(&self, name: &str) -> Result<Node> {
        let request = self.request.cordon(name).map_err(Error::BuildRequest)?;
        self.client.request::<Node>(request).await
    }

    /// Marks a node schedulable again.
    ///
    /// # Errors
    /// [`Error::Api`]; the client's errors.
    pub async fn uncordon(&self, name: &str) -> Result<Node> {
        let request = self.request.uncordon(name).map_err(Error::BuildRequest)?;
        self.client.request::<Node>(request).await
    }
}

impl Api<ServiceAccount> {
    /// Requests a token for a service account (its `token` subresource).
    ///
    /// # Errors
    /// [`Error::SerdeError`] if the request does not serialise; [`Error::Api`]; the
    /// client's errors.
    pub async fn create_token_request(
        &self,
        name: &str,
        pp: &PostParams,
        token_request: &TokenRequest,
    ) -> Result<TokenRequest> {
        let bytes = serde_json::to_vec(token_request).map_err(Error::SerdeError)?;
        let request = self
            .request
            .create_subresource("token", name, pp, bytes)
            .map_err(Error::BuildRequest)?;
        self.client.request::<TokenRequest>(request).await
    }
}

impl Api<CertificateSigningRequest> {
    /// Patches the `approval` subresource of a certificate signing request (approve or
    /// deny it through its conditions).
    ///
    /// # Errors
    /// [`Error::BuildRequest`] for invalid params; [`Error::Api`]; the client's errors.
    pub async fn patch_approval<P: serde::Serialize>(
        &self,
        name: &str,
        pp: &PatchParams,
        patch: &Patch<P>,
    ) -> Result<CertificateSigningRequest> {
        let request = self
            .request
            .patch_subresource("approval", name, pp, patch)
            .map_err(Error::BuildRequest)?;
        self.client
            .request::<CertificateSigningRequest>(request)
            .await
    }

    /// Gets a certificate signing request through its `approval` subresource.
    ///
    /// # Errors
    /// [`Error::Api`]; the client's errors.
    pub async fn get_approval(&self, name: &str) -> Result<CertificateSigningRequest> {
        self.get_subresource("approval", name).await
    }
}
