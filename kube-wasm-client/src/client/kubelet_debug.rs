//! The kubelet's debug endpoints (`kubelet-debug` feature), as kube 5.0's
//! `Client::kubelet_node_*`: logs, attach, exec and portforward of a pod, asked of the node's
//! kubelet rather than through the pod's subresources.
//!
//! kube-core builds the kubelet's paths (`/containerLogs/{ns}/{pod}/{container}`,
//! `/attach/{ns}/{pod}[/{uid}]/{container}`, `/exec/…`, `/portForward/{ns}/{pod}[/{uid}]`),
//! relative to the client's cluster URL, as in kube. Natively a kube client pointed at the
//! kubelet (`https://{node}:10250`) reaches it directly; a guest reaches only the host's API
//! server, so its client's cluster URL is `{host URL}/api/v1/nodes/{node}/proxy` (see
//! [`Client`'s `TryFrom<Config>`](Client#impl-TryFrom<Config>-for-Client)) and the requests go
//! through the API server's node proxy — which a native client configured the same way does
//! too. The identity needs `nodes/proxy` (`get`; the host checks it as the API server does).

use super::Client;
use crate::api::{AttachParams, AttachedProcess, LogParams, Portforwarder};
use crate::{Error, Result};
use futures::io::AsyncBufRead;
use kube_core::Request;
use kube_core::kubelet_debug::KubeletDebugParams;
use std::fmt::Debug;

impl Client {
    /// Attaches to `container` of the pod `kubelet_params` names, on its node's kubelet, as
    /// kube 5.0's (`GET /attach/{ns}/{pod}[/{uid}]/{container}` upgraded to a websocket;
    /// idle sessions are kept alive by a ping every 60 s, as kube's).
    ///
    /// # Errors
    /// [`Error::BuildRequest`] for invalid `ap`; otherwise as
    /// [`Api::attach`](crate::Api::attach).
    pub async fn kubelet_node_attach(
        &self,
        kubelet_params: &KubeletDebugParams<'_>,
        container: &str,
        ap: &AttachParams,
    ) -> Result<AttachedProcess> {
        let request = Request::kubelet_node_attach(kubelet_params, container, ap)
            .map_err(Error::BuildRequest)?;
        let connection = self
            .connect_with_keepalive(request, crate::api::KEEPALIVE_SECS)
            .await?;
        Ok(AttachedProcess::new(connection, ap))
    }

    /// Runs `command` in `container` of the pod `kubelet_params` names, on its node's
    /// kubelet, as kube 5.0's (`GET /exec/{ns}/{pod}[/{uid}]/{container}?command=…`
    /// upgraded to a websocket).
    ///
    /// # Errors
    /// As [`Client::kubelet_node_attach`].
    pub async fn kubelet_node_exec<I, T>(
        &self,
        kubelet_params: &KubeletDebugParams<'_>,
        container: &str,
        command: I,
        ap: &AttachParams,
    ) -> Result<AttachedProcess>
    where
        I: IntoIterator<Item = T> + Debug,
        T: Into<String>,
    {
        let request = Request::kubelet_node_exec(kubelet_params, container, command, ap)
            .map_err(Error::BuildRequest)?;
        let connection = self
            .connect_with_keepalive(request, crate::api::KEEPALIVE_SECS)
            .await?;
        Ok(AttachedProcess::new(connection, ap))
    }

    /// Forwards `ports` of the pod `kubelet_params` names, through its node's kubelet, as
    /// kube 5.0's (`GET /portForward/{ns}/{pod}[/{uid}]?port=…` upgraded to a websocket).
    ///
    /// # Errors
    /// [`Error::BuildRequest`] when `ports` is empty, has more than 128 ports or repeats
    /// one; otherwise as [`Api::portforward`](crate::Api::portforward).
    pub async fn kubelet_node_portforward(
        &self,
        kubelet_params: &KubeletDebugParams<'_>,
        ports: &[u16],
    ) -> Result<Portforwarder> {
        let request = Request::kubelet_node_portforward(kubelet_params, ports)
            .map_err(Error::BuildRequest)?;
        let connection = self.connect(request).await?;
        Ok(Portforwarder::new(connection, ports))
    }

    /// Streams the log of `container` of the pod `kubelet_params` names (its uid is not
    /// used), from its node's kubelet, as kube 5.0's (`GET /containerLogs/{ns}/{pod}/
    /// {container}` with `lp`'s query), read as [`Client::request_stream`]'s body.
    ///
    /// # Errors
    /// As [`Api::log_stream`](crate::Api::log_stream).
    pub async fn kubelet_node_logs(
        &self,
        kubelet_params: &KubeletDebugParams<'_>,
        container: &str,
        lp: &LogParams,
    ) -> Result<impl AsyncBufRead + use<>> {
        let request = Request::kubelet_node_logs(kubelet_params, container, lp)
            .map_err(Error::BuildRequest)?;
        self.request_stream(request).await
    }
}
