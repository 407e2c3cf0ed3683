//! The **replicas** workload: host replicas sharing a fleet of WasmControllers through
//! membership Leases (`host-shim run --controllers --lease-namespace`), each module a
//! configmap-mirror in a namespace of its own. Three replicas settle; one is SIGKILLed and a
//! ConfigMap is created in every namespace at once — its failover time is, per module of the
//! killed replica, the time until that ConfigMap is mirrored elsewhere; a replacement and then
//! a fourth replica join, and the modules that moved are counted; the fourth is SIGTERMed, and
//! its handoff time is, per module, from the SIGTERM (and from its stop there) to its start on
//! the next replica, from the replicas' own start and stop lines, which also show whether any
//! module ever ran on two replicas at once.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use futures::StreamExt as _;
use host_shim::fleet::wasm_controller::WasmController;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use kube::{Client, CustomResourceExt as _};
use kube_wasm_e2e::Program;
use kube_wasm_e2e::objects::mirrored;
use kube_wasm_e2e::replicas::{
    Interval, ReplicaLaunch, handoff, held_by, merged_intervals, now_us, overlaps, settled_on,
};
use kube_wasm_e2e::wasm_controllers as wc;
use serde::{Deserialize, Serialize};

use crate::cluster;

/// The resource's name in every namespace.
const NAME: &str = "mirror";

/// How long a fleet may take to settle (start, fail over, rebalance).
const SETTLE_TIMEOUT: Duration = Duration::from_secs(180);

/// What the replicas workload needs.
#[derive(Debug, Clone)]
pub struct ReplicasSetup {
    /// The release host-shim.
    pub host_shim: PathBuf,
    /// The release `configmap-mirror.wasm`.
    pub mirror_wasm: PathBuf,
    /// The cluster's kubeconfig.
    pub kubeconfig: PathBuf,
    /// Modules (WasmControllers, one per namespace).
    pub modules: usize,
    /// The replicas' `--stop-timeout`, in seconds.
    pub stop_timeout_s: u32,
    /// Where the replicas' shared module cache goes.
    pub dir: PathBuf,
}

/// What one run of the workload measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReplicasRun {
    /// Modules in the fleet.
    pub modules: usize,
    /// The replicas' Lease duration, in seconds (the default).
    pub lease_duration_s: f64,
    /// The replicas' stop timeout, in seconds.
    pub stop_timeout_s: f64,
    /// Per module of the killed replica: SIGKILL → the ConfigMap created then mirrored by the
    /// module's next replica, in seconds.
    pub failover_s: Vec<f64>,
    /// Per module of the SIGTERMed replica: SIGTERM → its start on the next replica, in
    /// seconds.
    pub handoff_s: Vec<f64>,
    /// Per module of the SIGTERMed replica: its stop there → its start on the next, in seconds.
    pub handoff_gap_s: Vec<f64>,
    /// Modules that moved when a fourth replica joined three.
    pub scale_up_moved: usize,
    /// Of those, the ones that moved anywhere but to the new replica.
    pub scale_up_moved_elsewhere: usize,
    /// Pairs of one module's runs on two replicas that overlapped (must be none).
    pub overlaps: Vec<String>,
}

/// Runs the workload with namespaces `tag-*`.
///
/// # Errors
/// If the cluster refuses, a replica does not start, or the fleet does not settle.
pub async fn measure(
    client: &Client,
    setup: &ReplicasSetup,
    tag: &str,
) -> anyhow::Result<ReplicasRun> {
    install_crd(client).await?;
    let lease_namespace = format!("{tag}-leases");
    cluster::create_namespace(client, &lease_namespace).await?;
    let mut namespaces = Vec::new();
    for i in 0..setup.modules {
        let ns = format!("{tag}-m{i}");
        cluster::create_namespace(client, &ns).await?;
        namespaces.push(ns);
    }
    let modules_dir = setup
        .mirror_wasm
        .parent()
        .context("the mirror module's folder")?;
    let file = setup
        .mirror_wasm
        .file_name()
        .and_then(|f| f.to_str())
        .context("the mirror module's file name")?;
    let launch = ReplicaLaunch {
        host_shim: setup.host_shim.clone(),
        modules: modules_dir.to_owned(),
        kubeconfig: setup.kubeconfig.clone(),
        lease_namespace,
        namespaces: namespaces.clone(),
        cache: setup.dir.join("cache"),
        stop_timeout_s: setup.stop_timeout_s,
    };
    let mut fleet = Replicas {
        launch,
        running: BTreeMap::new(),
        ended: Vec::new(),
    };
    fleet.start("r1");
    fleet.running["r1"]
        .stderr
        .wait_for("running the WasmControllers", SETTLE_TIMEOUT)?;
    fleet.start("r2");
    fleet.start("r3");
    for ns in &namespaces {
        wc::api(client, ns)
            .create(&PostParams::default(), &wc::local_resource(NAME, file))
            .await
            .with_context(|| format!("creating the WasmController in {ns}"))?;
    }
    let three = fleet.settled(client, &namespaces).await?;
    mirror_everywhere(client, &namespaces, &format!("{tag}-warm")).await?;

    eprintln!("bench:   replicas: SIGKILL r3");
    let victims = held_by(&three, "r3");
    let mut killed = fleet.running.remove("r3").context("r3")?;
    let killed_at = Instant::now();
    killed.kill(Duration::from_secs(10))?;
    fleet.ended.push((killed, Some(now_us())));
    let arrivals = mirror_everywhere(client, &namespaces, &format!("{tag}-failover")).await?;
    let failover_s: Vec<f64> = victims
        .iter()
        .filter_map(|ns| arrivals.get(ns))
        .map(|at| at.duration_since(killed_at).as_secs_f64())
        .collect();
    fleet.settled(client, &namespaces).await?;

    eprintln!("bench:   replicas: a replacement, then a fourth");
    fleet.start("r3b");
    let before = fleet.settled(client, &namespaces).await?;
    fleet.start("r4");
    let after = fleet.settled(client, &namespaces).await?;
    let moved: Vec<&String> = before
        .keys()
        .filter(|ns| before[*ns] != after[*ns])
        .collect();
    let scale_up_moved_elsewhere = moved.iter().filter(|ns| after[**ns] != "r4").count();

    eprintln!("bench:   replicas: SIGTERM r4");
    let handed = held_by(&after, "r4");
    let mut leaving = fleet.running.remove("r4").context("r4")?;
    let terminated_at = now_us();
    let stop_wait = Duration::from_secs(u64::from(setup.stop_timeout_s) + 30);
    let leaving = tokio::task::spawn_blocking(move || {
        let exit = leaving.terminate(stop_wait);
        (leaving, exit)
    })
    .await?;
    leaving.1.context("r4 did not stop")?;
    fleet.ended.push((leaving.0, None));
    let back = fleet.settled(client, &namespaces).await?;
    let now = now_us();
    let all = fleet.intervals(now);
    let mut handoff_s = Vec::new();
    let mut handoff_gap_s = Vec::new();
    for ns in &handed {
        let runs = all
            .get(&format!("{ns}.{NAME}"))
            .map_or(&[][..], Vec::as_slice);
        if let Some((stopped, next)) = handoff(runs, "r4", &back[ns]) {
            handoff_s.push(seconds(next.saturating_sub(terminated_at)));
            handoff_gap_s.push(seconds(next.saturating_sub(stopped)));
        }
    }
    let overlaps = overlaps(&all, now);
    fleet.stop_all().await;
    Ok(ReplicasRun {
        modules: setup.modules,
        lease_duration_s: 10.0,
        stop_timeout_s: f64::from(setup.stop_timeout_s),
        failover_s,
        handoff_s,
        handoff_gap_s,
        scale_up_moved: moved.len(),
        scale_up_moved_elsewhere,
        overlaps,
    })
}

fn seconds(micros: u128) -> f64 {
    micros as f64 / 1e6
}

/// The replicas of the fleet.
struct Replicas {
    launch: ReplicaLaunch,
    running: BTreeMap<String, Program>,
    /// Stopped or killed replicas (with when a killed one died), for their logs.
    ended: Vec<(Program, Option<u128>)>,
}

impl Replicas {
    fn start(&mut self, name: &str) {
        let program = Program::spawn_quietly(self.launch.command(name), name);
        self.running.insert(name.to_owned(), program);
    }

    async fn settled(
        &self,
        client: &Client,
        namespaces: &[String],
    ) -> anyhow::Result<BTreeMap<String, String>> {
        let members = self.running.keys().cloned().collect();
        settled_on(client, namespaces, NAME, &members, SETTLE_TIMEOUT).await
    }

    fn intervals(&self, now: u128) -> BTreeMap<String, Vec<Interval>> {
        let logs = self
            .running
            .values()
            .map(|p| (p, None))
            .chain(self.ended.iter().map(|(p, killed)| (p, *killed)));
        merged_intervals(logs, now)
    }

    async fn stop_all(&mut self) {
        let running = std::mem::take(&mut self.running);
        let _ = tokio::task::spawn_blocking(move || {
            for (_, mut program) in running {
                let _ = program.terminate(Duration::from_secs(40));
            }
        })
        .await;
    }
}

/// Applies the WasmController CRD and waits until the API serves it.
async fn install_crd(client: &Client) -> anyhow::Result<()> {
    let crd = WasmController::crd();
    let name = crd.metadata.name.clone().context("the CRD has no name")?;
    Api::<CustomResourceDefinition>::all(client.clone())
        .patch(
            &name,
            &PatchParams::apply("kube-wasm-bench").force(),
            &Patch::Apply(&crd),
        )
        .await
        .context("applying the WasmController CRD")?;
    for _ in 0..150 {
        if wc::api(client, "default")
            .list(&Default::default())
            .await
            .is_ok()
        {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    anyhow::bail!("the WasmController CRD was not served within 30 s")
}

/// Creates ConfigMap `name` in every namespace and returns when its mirror Secret appeared in
/// each (watched, not polled).
async fn mirror_everywhere(
    client: &Client,
    namespaces: &[String],
    name: &str,
) -> anyhow::Result<BTreeMap<String, Instant>> {
    let secrets: Api<Secret> = Api::all(client.clone());
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let mut events = watcher::watcher(secrets, config).boxed();
    // The watch is established (its initial list done) before the first ConfigMap exists.
    while let Some(event) = events.next().await {
        if matches!(event?, watcher::Event::InitDone) {
            break;
        }
    }
    for ns in namespaces {
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
        api.create(&PostParams::default(), &mirrored(name))
            .await
            .with_context(|| format!("creating ConfigMap {name} in {ns}"))?;
    }
    let wanted: BTreeSet<&String> = namespaces.iter().collect();
    let mut arrived = BTreeMap::new();
    let deadline = tokio::time::Instant::now() + SETTLE_TIMEOUT;
    while arrived.len() < wanted.len() {
        let event = tokio::time::timeout_at(deadline, events.next())
            .await
            .with_context(|| {
                format!(
                    "ConfigMap {name}: mirrored in {} of {}",
                    arrived.len(),
                    wanted.len()
                )
            })?;
        let Some(event) = event else {
            anyhow::bail!("the Secret watch ended");
        };
        if let watcher::Event::Apply(secret) | watcher::Event::InitApply(secret) = event?
            && let Some(ns) = secret.metadata.namespace
            && wanted.contains(&ns)
        {
            arrived.entry(ns).or_insert_with(Instant::now);
        }
    }
    Ok(arrived)
}
