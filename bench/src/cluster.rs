//! The driver's side of the cluster: its client (with its own `User-Agent`, so the audit
//! counts leave it out), the Ring CRD, fresh namespaces, writing nonces and watching them
//! arrive.

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, bail};
use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use kube::api::{ListParams, WatchEvent, WatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use tokio::sync::mpsc;

use crate::audit::DRIVER_USER_AGENT;

/// The Ring custom resource's group.
pub const GROUP: &str = "bench.kube-wasm.example.com";
/// The name of the Ring the ring workload passes around.
pub const RING_NAME: &str = "ring";
/// The annotation in which the ring controller records when its reconcile started
/// (microseconds since the Unix epoch; the controller's `RECONCILED_AT`).
pub const RECONCILED_AT: &str = "bench.kube-wasm.example.com/reconciled-at-micros";
/// The field manager of the driver's writes.
const MANAGER: &str = "kube-wasm-bench";

/// Now, in microseconds since the Unix epoch (the clock the controllers stamp with).
pub fn now_micros() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
        .unwrap_or_default()
}

/// The driver's client for the cluster of `kubeconfig`.
///
/// # Errors
/// If the kubeconfig cannot be read or a client built.
pub async fn client(kubeconfig: &Path) -> anyhow::Result<Client> {
    let mut config = config(kubeconfig).await?;
    config.headers.push((
        http::header::USER_AGENT,
        http::HeaderValue::from_static(DRIVER_USER_AGENT),
    ));
    Client::try_from(config).context("building the driver's client")
}

async fn config(kubeconfig: &Path) -> anyhow::Result<Config> {
    let kubeconfig = Kubeconfig::read_from(kubeconfig)
        .with_context(|| format!("reading {}", kubeconfig.display()))?;
    Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .context("the kubeconfig")
}

/// The TCP port of the apiserver `kubeconfig` names (443 if its URL gives none).
///
/// # Errors
/// If the kubeconfig cannot be read.
pub async fn apiserver_port(kubeconfig: &Path) -> anyhow::Result<u16> {
    Ok(config(kubeconfig)
        .await?
        .cluster_url
        .port_u16()
        .unwrap_or(443))
}

/// The Ring resource, for dynamic APIs.
pub fn ring_resource() -> ApiResource {
    ApiResource {
        group: GROUP.into(),
        version: "v1".into(),
        api_version: format!("{GROUP}/v1"),
        kind: "Ring".into(),
        plural: "rings".into(),
    }
}

/// Creates (or updates) the CRD printed by `ring-controller crd` (`crd_json`) and waits until
/// the API serves it.
///
/// # Errors
/// If the CRD is not valid JSON, cannot be applied, or is not established within 30 s.
pub async fn install_crd(client: &Client, crd_json: &str) -> anyhow::Result<()> {
    let crd: CustomResourceDefinition =
        serde_json::from_str(crd_json).context("the Ring CRD from `ring-controller crd`")?;
    let name = crd.metadata.name.clone().context("the CRD has no name")?;
    let api = Api::<CustomResourceDefinition>::all(client.clone());
    api.patch(
        &name,
        &PatchParams::apply(MANAGER).force(),
        &Patch::Apply(&crd),
    )
    .await
    .context("applying the Ring CRD")?;
    let rings = Api::<DynamicObject>::all_with(client.clone(), &ring_resource());
    for _ in 0..150 {
        if rings.list(&Default::default()).await.is_ok() {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    bail!("the Ring CRD was not served within 30 s")
}

/// Creates namespace `name`. (Kubernetes 1.20 without a controller-manager never finishes
/// deleting namespaces, so the driver leaves them in the throwaway cluster.)
///
/// # Errors
/// If the apiserver refuses.
pub async fn create_namespace(client: &Client, name: &str) -> anyhow::Result<()> {
    kube_wasm_e2e::create_namespace(client, name)
        .await
        .with_context(|| format!("creating namespace {name}"))
}

/// Server-side applies Ring `name` in `namespace` with `nonce`.
///
/// # Errors
/// If the apiserver refuses.
pub async fn write_nonce(
    client: &Client,
    namespace: &str,
    name: &str,
    nonce: u64,
) -> anyhow::Result<()> {
    let api = Api::<DynamicObject>::namespaced_with(client.clone(), namespace, &ring_resource());
    let ring = serde_json::json!({
        "apiVersion": format!("{GROUP}/v1"),
        "kind": "Ring",
        "metadata": {"name": name},
        "spec": {"nonce": nonce},
    });
    api.patch(
        name,
        &PatchParams::apply(MANAGER).force(),
        &Patch::Apply(&ring),
    )
    .await
    .with_context(|| format!("writing nonce {nonce} into {namespace}/{name}"))?;
    Ok(())
}

/// A Ring as the driver sees it arrive.
#[derive(Debug, Clone)]
pub struct Arrival {
    /// Its name.
    pub name: String,
    /// Its `spec.nonce`.
    pub nonce: u64,
    /// When the driver's watch received it, in µs since the Unix epoch.
    pub at_micros: u64,
}

fn arrival(object: &DynamicObject) -> Option<Arrival> {
    Some(Arrival {
        name: object.metadata.name.clone()?,
        nonce: object.data["spec"]["nonce"].as_u64()?,
        at_micros: now_micros(),
    })
}

/// Watches the Rings of `namespace` (a list, then watches resumed from the last
/// resourceVersion); every added or modified object is sent to the returned channel as an
/// [`Arrival`], stamped on receipt. The watch ends when the receiver is dropped.
pub fn watch_arrivals(client: &Client, namespace: &str) -> mpsc::UnboundedReceiver<Arrival> {
    let (tx, rx) = mpsc::unbounded_channel();
    let api = Api::<DynamicObject>::namespaced_with(client.clone(), namespace, &ring_resource());
    let namespace = namespace.to_owned();
    tokio::spawn(async move {
        tokio::select! {
            () = tx.closed() => {}
            result = forward_arrivals(&api, &tx) => {
                if let Err(err) = result {
                    eprintln!("bench: the driver's watch of {namespace} failed: {err:#}");
                }
            }
        }
    });
    rx
}

async fn forward_arrivals(
    api: &Api<DynamicObject>,
    tx: &mpsc::UnboundedSender<Arrival>,
) -> anyhow::Result<()> {
    let list = api
        .list(&ListParams::default())
        .await
        .context("listing Rings")?;
    for object in &list.items {
        if let Some(a) = arrival(object) {
            tx.send(a)?;
        }
    }
    let mut version = list.metadata.resource_version.unwrap_or_default();
    loop {
        let mut stream = api
            .watch(&WatchParams::default().timeout(290), &version)
            .await
            .context("watching Rings")?
            .boxed();
        while let Some(event) = stream.try_next().await.context("the Ring watch")? {
            match event {
                WatchEvent::Added(object) | WatchEvent::Modified(object) => {
                    if let Some(v) = &object.metadata.resource_version {
                        version.clone_from(v);
                    }
                    if let Some(a) = arrival(&object) {
                        tx.send(a)?;
                    }
                }
                WatchEvent::Deleted(object) => {
                    if let Some(v) = object.metadata.resource_version {
                        version = v;
                    }
                }
                WatchEvent::Bookmark(mark) => version = mark.metadata.resource_version,
                WatchEvent::Error(status) => bail!("the Ring watch: {status:?}"),
            }
        }
    }
}

/// Waits up to `timeout` for Ring `name` to arrive with `nonce`; earlier arrivals are
/// skipped.
///
/// # Errors
/// If it does not arrive in time or the watch ended.
pub async fn wait_for(
    arrivals: &mut mpsc::UnboundedReceiver<Arrival>,
    name: &str,
    nonce: u64,
    timeout: Duration,
) -> anyhow::Result<Arrival> {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        match tokio::time::timeout_at(deadline, arrivals.recv()).await {
            Ok(Some(a)) if a.name == name && a.nonce == nonce => return Ok(a),
            Ok(Some(_)) => {}
            Ok(None) => bail!("the driver's watch ended"),
            Err(_) => bail!("nonce {nonce} of Ring {name} did not arrive within {timeout:?}"),
        }
    }
}

/// Waits up to `timeout` until every name in `names` has arrived with its nonce; returns the
/// last arrival.
///
/// # Errors
/// If not all arrive in time or the watch ended.
pub async fn wait_for_all(
    arrivals: &mut mpsc::UnboundedReceiver<Arrival>,
    mut names: HashMap<String, u64>,
    timeout: Duration,
) -> anyhow::Result<Arrival> {
    let deadline = tokio::time::Instant::now() + timeout;
    let total = names.len();
    loop {
        match tokio::time::timeout_at(deadline, arrivals.recv()).await {
            Ok(Some(a)) => {
                if names.get(&a.name) == Some(&a.nonce) {
                    names.remove(&a.name);
                    if names.is_empty() {
                        return Ok(a);
                    }
                }
            }
            Ok(None) => bail!("the driver's watch ended"),
            Err(_) => bail!(
                "{} of {total} copies did not arrive within {timeout:?}",
                names.len()
            ),
        }
    }
}
