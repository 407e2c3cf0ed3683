//! Carrying out the chaos: restarting kube-apiserver or etcd and cutting connections through
//! `scripts/control-plane.sh` (its `restart-apiserver`, `restart-etcd` and `drop-connections`
//! commands, which keep the ports, certificates and data, so every kubeconfig stays valid),
//! and killing the host (SIGKILL) and starting it again with the same manifest.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::Client;
use serde::Serialize;

use super::clock::Clock;
use super::host::Host;
use super::schedule::ChaosKind;

/// How long the API server may take to answer again after a restart.
const READY_TIMEOUT: Duration = Duration::from_secs(120);

/// One disruption as it happened.
#[derive(Debug, Clone, Serialize)]
pub struct Event {
    /// What it was.
    pub kind: ChaosKind,
    /// When it began (run seconds).
    pub at: f64,
    /// How long it took (seconds): until the API server answered the driver again, the
    /// connections were cut, or the host was started again.
    pub took: f64,
    /// The API server was down from `at` for `took` seconds (restarts of kube-apiserver and
    /// etcd).
    pub apiserver_down: bool,
    /// What it did, e.g. `12 connections cut` or `host incarnation 3`.
    pub detail: String,
    /// Why it failed, if it did.
    pub error: Option<String>,
}

/// What the chaos acts on.
#[derive(Clone)]
pub struct Chaos {
    /// `scripts/control-plane.sh`.
    pub script: PathBuf,
    /// The control plane's folder.
    pub control_plane_dir: PathBuf,
    /// The driver's client, to see when the API server answers again.
    pub client: Client,
    /// The host.
    pub host: Arc<Mutex<Host>>,
    /// The run's clock.
    pub clock: Clock,
}

impl Chaos {
    /// Runs `control-plane.sh COMMAND DIR`; its stdout.
    async fn script(&self, command: &str) -> anyhow::Result<String> {
        let output = tokio::process::Command::new(&self.script)
            .arg(command)
            .arg(&self.control_plane_dir)
            .stdin(std::process::Stdio::null())
            .output()
            .await?;
        anyhow::ensure!(
            output.status.success(),
            "control-plane.sh {command} failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
        Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
    }

    /// Waits until the API server answers the driver (GET the `default` namespace).
    async fn answered(&self) -> anyhow::Result<()> {
        let namespaces = Api::<Namespace>::all(self.client.clone());
        let deadline = tokio::time::Instant::now() + READY_TIMEOUT;
        loop {
            if namespaces.get("default").await.is_ok() {
                return Ok(());
            }
            anyhow::ensure!(
                tokio::time::Instant::now() < deadline,
                "the API server did not answer within {READY_TIMEOUT:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Carries out one disruption of `kind`.
    pub async fn run(&self, kind: ChaosKind) -> Event {
        let at = self.clock.now();
        let result = match kind {
            ChaosKind::Apiserver => self.restart("restart-apiserver").await,
            ChaosKind::Etcd => self.restart("restart-etcd").await,
            ChaosKind::Watches => self.drop_connections().await,
            ChaosKind::Host => self.restart_host(),
        };
        let took = self.clock.now() - at;
        let (detail, error) = match result {
            Ok(detail) => (detail, None),
            Err(err) => (String::new(), Some(format!("{err:#}"))),
        };
        Event {
            kind,
            at,
            took,
            apiserver_down: kind.takes_apiserver_down(),
            detail,
            error,
        }
    }

    async fn restart(&self, command: &str) -> anyhow::Result<String> {
        self.script(command).await?;
        self.answered().await?;
        Ok("answering again".into())
    }

    /// Cuts the connections; none cut is a failure (the driver's own watch is always open,
    /// so `ss -K` did not work: it needs root or CAP_NET_ADMIN).
    async fn drop_connections(&self) -> anyhow::Result<String> {
        let cut = self.script("drop-connections").await?;
        anyhow::ensure!(
            cut.parse::<u64>().is_ok_and(|n| n > 0),
            "no connection was cut ({cut:?}): ss -K needs root or CAP_NET_ADMIN and a kernel with INET_DIAG_DESTROY"
        );
        Ok(format!("{cut} connections cut"))
    }

    fn restart_host(&self) -> anyhow::Result<String> {
        let mut host = self.host.lock().unwrap_or_else(|e| e.into_inner());
        host.kill()?;
        host.start(self.clock.now())?;
        Ok(format!("host incarnation {}", host.incarnation()))
    }
}
