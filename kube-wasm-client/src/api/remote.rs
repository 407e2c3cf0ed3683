//! The `attach`, `exec` and `portforward` subresources of pods (`ws` feature), as in kube
//! 5.0's `api::subresource`: each opens a WebSocket through the host and hands it to the
//! guest-side protocol ([`AttachedProcess`], [`Portforwarder`]).

use super::Api;
use super::portforward::Portforwarder;
use super::remote_command::AttachedProcess;
use crate::{Error, Result};
use kube_core::subresource::AttachParams;
use serde::de::DeserializeOwned;
use std::fmt::Debug;

/// Seconds between the websocket pings that keep an idle exec or attach session alive (the
/// host sends them), as kube's message loop pings every 60 s. Portforward does not ping, as
/// in kube.
pub(crate) const KEEPALIVE_SECS: u32 = 60;

/// Marks resources that can be attached to (`Pod`), as kube's `api::Attach`.
pub trait Attach {}

impl Attach for k8s_openapi::api::core::v1::Pod {}

/// Marks resources that can run commands (`Pod`), as kube's `api::Execute`.
pub trait Execute {}

impl Execute for k8s_openapi::api::core::v1::Pod {}

/// Marks resources whose ports can be forwarded (`Pod`), as kube's `api::Portforward`.
pub trait Portforward {}

impl Portforward for k8s_openapi::api::core::v1::Pod {}

impl<K> Api<K>
where
    K: Clone + DeserializeOwned + Attach,
{
    /// Attaches to the main process of pod `name` (`…/pods/{name}/attach`).
    ///
    /// # Errors
    /// [`Error::BuildRequest`] for invalid params (e.g. none of stdin/stdout/stderr, or
    /// `tty` with `stderr`); [`Error::Api`] if the API server refuses; the client's errors.
    pub async fn attach(&self, name: &str, ap: &AttachParams) -> Result<AttachedProcess> {
        let mut req = self.request.attach(name, ap).map_err(Error::BuildRequest)?;
        req.extensions_mut().insert("attach");
        let connection = self
            .client
            .connect_with_keepalive(req, KEEPALIVE_SECS)
            .await?;
        Ok(AttachedProcess::new(connection, ap))
    }
}

impl<K> Api<K>
where
    K: Clone + DeserializeOwned + Execute,
{
    /// Runs `command` in pod `name` (`…/pods/{name}/exec`).
    ///
    /// # Errors
    /// As [`attach`](Self::attach).
    pub async fn exec<I, T>(
        &self,
        name: &str,
        command: I,
        ap: &AttachParams,
    ) -> Result<AttachedProcess>
    where
        I: IntoIterator<Item = T> + Debug,
        T: Into<String>,
    {
        let mut req = self
            .request
            .exec(name, command, ap)
            .map_err(Error::BuildRequest)?;
        req.extensions_mut().insert("exec");
        let connection = self
            .client
            .connect_with_keepalive(req, KEEPALIVE_SECS)
            .await?;
        Ok(AttachedProcess::new(connection, ap))
    }
}

impl<K> Api<K>
where
    K: Clone + DeserializeOwned + Portforward,
{
    /// Forwards `ports` of pod `name` (`…/pods/{name}/portforward?ports=…`).
    ///
    /// # Errors
    /// [`Error::BuildRequest`] for no ports or more than 128; [`Error::Api`] if the API
    /// server refuses; the client's errors.
    pub async fn portforward(&self, name: &str, ports: &[u16]) -> Result<Portforwarder> {
        let req = self
            .request
            .portforward(name, ports)
            .map_err(Error::BuildRequest)?;
        let connection = self.client.connect(req).await?;
        Ok(Portforwarder::new(connection, ports))
    }
}
