//! The Go workload (`--go`, issue #43): the client-go controller `examples/go-configmap-mirror`
//! natively (one Go process) and as a reactor module in the host, side by side against the
//! same apiserver in one run:
//!
//! - its `.wasm` size and cold compile time with the host's engine ([`crate::statics`]);
//! - idle memory: the native process against the host with the one Go module, each
//!   mirroring the same labelled ConfigMaps in a namespace of its own, after the settle time;
//! - suspended memory: the same host with `suspend: {idleAfter}`, once the module is
//!   suspended (the host's metrics);
//! - resume time (the host's resume histogram, over the latency rounds of the suspended host);
//! - event→reconcile latency, natively, resident and suspended (each update after the module
//!   was suspended again): from the apiserver's answer to a ConfigMap's update (the change
//!   stored) to its receipt of the controller's apply of the mirror Secret, from its audit log
//!   ([`audit::reply_delays_between`]); and from the update to the mirror holding the new value
//!   as the driver's own watch sees it, which adds the apiserver's handling of the apply and
//!   a watch event to the controller's part;
//! - a fleet of N Go controllers (`fleet_n`), each mirroring its own namespace: N native Go
//!   processes against one host with N modules, resident and suspended — what a controller
//!   costs once the host's own memory is shared, as a host runs them by the hundred;
//! - a mixed fleet: the Go module with the Rust examples in one host, resident and
//!   suspended, against all of them as native processes;
//! - (run by the caller, `--go-budget-n`) the Go fleet's memory budgets
//!   ([`crate::fleet_budget`]): the smallest cgroup memory limit N native Go processes, the
//!   host with N modules, and the host suspending them still run in.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use futures::StreamExt as _;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use kube_wasm_e2e::manifest::Entry;
use serde::Serialize;

use crate::audit::{self, Object};
use crate::fleet::{Fleet, Setup, host_manifest};
use crate::memory::Sample;
use crate::pressure::ReclaimCounters;
use crate::{cluster, statics, stats};

/// What the Go workload needs besides the bench's [`Setup`].
#[derive(Debug, Clone)]
pub struct GoSetup {
    /// The native build of `go-configmap-mirror`.
    pub native: PathBuf,
    /// Its reactor module (`GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared`).
    pub wasm: PathBuf,
    /// Native and wasm builds of the Rust examples for the mixed fleet: (native, wasm).
    pub rust_examples: Vec<(PathBuf, PathBuf)>,
    /// Labelled ConfigMaps each controller mirrors.
    pub objects: usize,
    /// Latency samples per variant (the suspended variant takes a third as many: each
    /// waits for the module to be suspended again).
    pub events: usize,
    /// Seconds to let a launch settle before its memory is sampled.
    pub settle_secs: u64,
    /// Go controllers of the fleet (0 skips it).
    pub fleet_n: usize,
    /// The apiserver's audit log (JSON lines), for event→reconcile.
    pub audit_log: PathBuf,
}

/// A latency series, in ms.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Latency {
    /// One per event.
    pub ms: Vec<f64>,
    /// Median.
    pub p50: Option<f64>,
    /// 99th percentile.
    pub p99: Option<f64>,
}

impl Latency {
    pub(crate) fn of(ms: Vec<f64>) -> Self {
        Self {
            p50: stats::median(&ms),
            p99: stats::percentile(&ms, 99.0),
            ms,
        }
    }
}

/// The Go workload's figures.
#[derive(Debug, Clone, Default, Serialize)]
pub struct GoFigures {
    /// The module's size, in bytes.
    pub wasm_bytes: u64,
    /// Cold compile (Cranelift, the host's engine), in ms.
    pub compile_ms: Vec<f64>,
    /// Loading the precompiled module from the host's cache, in ms.
    pub cache_load_ms: Vec<f64>,
    /// The native Go process, idle.
    pub native_idle: Sample,
    /// The host with the one Go module, idle and resident.
    pub wasm_idle: Sample,
    /// The host with the one Go module, suspended.
    pub wasm_suspended: Sample,
    /// The module's linear memory when suspended, in bytes, and its snapshot's size.
    pub linear_memory_bytes: u64,
    /// The snapshot file's size, in bytes.
    pub snapshot_bytes: u64,
    /// Resumes from disk during the suspended latency rounds, and their mean, in ms.
    pub resumes: u64,
    /// Mean resume time, in ms.
    pub resume_mean_ms: Option<f64>,
    /// Event→reconcile, native: from the apiserver's answer to the update to its receipt
    /// of the controller's apply of the mirror.
    pub reconcile_native: Latency,
    /// Event→reconcile, the module resident.
    pub reconcile_wasm: Latency,
    /// Event→reconcile, the module suspended before each event.
    pub reconcile_suspended: Latency,
    /// Event→mirror, native: from the driver's update until its watch sees the mirror hold
    /// the new value.
    pub latency_native: Latency,
    /// Event→mirror, the module resident.
    pub latency_wasm: Latency,
    /// Event→mirror, the module suspended before each event.
    pub latency_suspended: Latency,
    /// Mixed fleet: the Go controller and the Rust examples, as native processes.
    pub mixed_native: Option<Sample>,
    /// The same in one host, resident.
    pub mixed_wasm: Option<Sample>,
    /// The same in one host, suspended.
    pub mixed_suspended: Option<Sample>,
    /// The kinds in the mixed fleet.
    pub mixed_kinds: Vec<String>,
    /// Go controllers of the fleet (0: not measured).
    pub fleet_n: usize,
    /// The fleet as `fleet_n` native Go processes, idle (their summed PSS).
    pub fleet_native: Option<Sample>,
    /// The same controllers as modules of one host, idle and resident.
    pub fleet_wasm: Option<Sample>,
    /// The same, every module suspended to disk.
    pub fleet_suspended: Option<Sample>,
    /// The machine's global memory reclaim during the run: anything but none means the
    /// resident figures may read lower than at rest (see [`crate::pressure`]).
    pub reclaim: crate::pressure::Reclaim,
    /// The Go fleet's memory budgets ([`crate::mixed::KindsFleet::Go`]; empty when they did
    /// not run): native, in one host, and suspended, at each N asked.
    pub budgets: Vec<crate::budget::Budget>,
    /// The budget launches that failed, each with why.
    pub budgets_incomplete: Vec<String>,
}

const LABEL: (&str, &str) = ("kube-wasm.dev/mirror", "true");

/// Memory samples of a suspended Go fleet, one a second: its modules are resumed for a
/// moment at each tick of client-go's delaying queue (every 10 s), and the median over 11 s
/// is the fleet as it mostly is.
const SUSPENDED_SAMPLES: usize = 11;

/// The pause before each measured event: client-go's default client-side rate limit (5
/// requests a second, a burst of 10) would otherwise hold each reconcile's write for the
/// previous ones', natively and in a module alike, and the figure would be the limiter's.
const EVENT_SPACING: Duration = Duration::from_millis(400);

fn mirrored(name: &str, value: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    cm.metadata.labels = Some([(LABEL.0.to_string(), LABEL.1.to_string())].into());
    cm.data = Some([("value".to_string(), value.to_string())].into());
    cm
}

/// A kubeconfig like `base` whose current context's namespace is `namespace` (the Go
/// controller, like kube's, runs for its kubeconfig context's namespace natively).
fn kubeconfig_for(base: &Path, namespace: &str, dir: &Path) -> anyhow::Result<PathBuf> {
    let path = dir.join(format!("kubeconfig-{namespace}"));
    std::fs::copy(base, &path).with_context(|| format!("copying {}", base.display()))?;
    let status = Command::new("kubectl")
        .args([
            "config",
            "set-context",
            "--current",
            "--namespace",
            namespace,
        ])
        .env("KUBECONFIG", &path)
        .stdout(Stdio::null())
        .status()
        .context("running kubectl")?;
    anyhow::ensure!(status.success(), "kubectl config set-context failed");
    Ok(path)
}

async fn fresh_namespace(client: &Client, prefix: &str) -> anyhow::Result<String> {
    let name = format!("{prefix}-{}", cluster::now_micros() % 1_000_000_000);
    cluster::create_namespace(client, &name).await?;
    Ok(name)
}

/// Creates `objects` labelled ConfigMaps in `ns` and waits for their mirrors.
async fn populate(client: &Client, ns: &str, objects: usize) -> anyhow::Result<()> {
    populate_only(client, ns, objects).await?;
    mirrors_within(client, ns, objects, Duration::from_secs(300)).await
}

/// Creates `objects` labelled ConfigMaps (`cm-0`, `cm-1`, …) in `ns`.
async fn populate_only(client: &Client, ns: &str, objects: usize) -> anyhow::Result<()> {
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    for i in 0..objects {
        cms.create(&PostParams::default(), &mirrored(&format!("cm-{i}"), "0"))
            .await?;
    }
    Ok(())
}

/// Waits up to `timeout` for the mirrors of `objects` ConfigMaps in `ns`.
async fn mirrors_within(
    client: &Client,
    ns: &str,
    objects: usize,
    timeout: Duration,
) -> anyhow::Result<()> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), ns);
    let deadline = Instant::now() + timeout;
    loop {
        let n = secrets
            .list(&Default::default())
            .await?
            .items
            .iter()
            .filter(|s| {
                s.metadata
                    .name
                    .as_deref()
                    .is_some_and(|n| n.starts_with("cm-"))
            })
            .count();
        if n >= objects {
            return Ok(());
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "{n} of {objects} mirrors in {ns} within {timeout:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Updates ConfigMap `cm-0` of `ns` to `value` and returns the ms until its mirror holds it,
/// as the driver's own watch of Secrets sees it.
async fn one_event(client: &Client, ns: &str, value: &str) -> anyhow::Result<f64> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), ns);
    let mut events = watcher(
        secrets,
        watcher::Config::default().fields("metadata.name=cm-0"),
    )
    .boxed();
    // The watch is established (its initial list) before the update.
    while let Some(event) = events.next().await {
        if matches!(event?, watcher::Event::InitDone) {
            break;
        }
    }
    tokio::time::sleep(EVENT_SPACING).await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    let patch = serde_json::json!({"data": {"value": value}});
    let started = Instant::now();
    cms.patch("cm-0", &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    let deadline = Duration::from_secs(60);
    loop {
        let next = tokio::time::timeout(deadline.saturating_sub(started.elapsed()), events.next())
            .await
            .context("the mirror did not change within 60 s")?;
        let Some(event) = next else {
            anyhow::bail!("the watch ended");
        };
        if let watcher::Event::Apply(secret) = event? {
            let holds = secret
                .data
                .as_ref()
                .and_then(|d| d.get("value"))
                .is_some_and(|v| v.0 == value.as_bytes());
            if holds {
                return Ok(started.elapsed().as_secs_f64() * 1000.0);
            }
        }
    }
}

/// Event→reconcile of the `events` updates of `cm-0` in `ns` since `from`: the apiserver's
/// answer to each update to its receipt of the controller's apply of the mirror.
///
/// # Errors
/// If the audit log cannot be read, or an update has no apply after it: each update was
/// mirrored (the driver saw it), so a missing figure would be a misread log.
fn reconciles(go: &GoSetup, from: audit::Mark, ns: &str, events: usize) -> anyhow::Result<Latency> {
    let to = audit::mark(&go.audit_log)?;
    let of = |resource| Object {
        resource,
        name: "cm-0",
    };
    let ms =
        audit::reply_delays_between(&go.audit_log, from, to, ns, of("configmaps"), of("secrets"))?;
    anyhow::ensure!(
        ms.len() == events,
        "the audit log shows {} of {events} updates in {ns} answered by an apply of the mirror",
        ms.len()
    );
    Ok(Latency::of(ms))
}

/// Waits until the host reports every module suspended.
async fn until_suspended(fleet: &mut Fleet, modules: u64, timeout: Duration) -> anyhow::Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        fleet.check_alive()?;
        let m = fleet.host_metrics()?.unwrap_or_default();
        if m.suspended_modules >= modules {
            return Ok(());
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "{} of {modules} modules suspended within {timeout:?}",
            m.suspended_modules
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Module `name` of `wasm` in namespace `ns`, suspended when idle if `suspended` (after
/// `setup`'s `idleAfter`, with `costFactor: 0`, as [`crate::mixed::host_entries`] suspends Go
/// kinds).
fn entry(setup: &Setup, name: &str, wasm: &Path, ns: &str, suspended: bool) -> Entry {
    let entry = Entry::with_wasm(name, wasm).namespace(ns);
    if suspended {
        entry.field(&setup.suspend_field_costing(Some(0)))
    } else {
        entry
    }
}

/// Runs the Go workload with its launches' files under `out`.
///
/// # Errors
/// If a launch fails, or a controller does not mirror in time.
pub async fn run(setup: &Setup, go: &GoSetup, out: &Path) -> anyhow::Result<GoFigures> {
    let reclaim_at_start = ReclaimCounters::now();
    let client = cluster::client(&setup.kubeconfig).await?;
    eprintln!("bench go: size and compile of {}", go.wasm.display());
    let statics = statics::measure_one(&go.wasm, &out.join("go-statics-cache"), 1).await?;
    let settle = Duration::from_secs(go.settle_secs);

    eprintln!("bench go: native");
    let ns = fresh_namespace(&client, "go-native").await?;
    let dir = out.join("go-native");
    std::fs::create_dir_all(&dir)?;
    let kubeconfig = kubeconfig_for(&setup.kubeconfig, &ns, &dir)?;
    let mut command = Command::new(&go.native);
    command.env("KUBECONFIG", &kubeconfig).stdin(Stdio::null());
    let mut native = Fleet::start_processes(vec![("go-configmap-mirror".into(), command)], &dir)?;
    populate(&client, &ns, go.objects).await?;
    tokio::time::sleep(settle).await;
    let native_idle = native.idle_memory().await?;
    let from = audit::mark(&go.audit_log)?;
    let mut latency_native = Vec::new();
    for i in 0..go.events {
        latency_native.push(one_event(&client, &ns, &format!("n{i}")).await?);
    }
    let reconcile_native = reconciles(go, from, &ns, go.events)?;
    native.stop(Duration::from_secs(10))?;

    eprintln!("bench go: in the host, resident");
    let ns = fresh_namespace(&client, "go-wasm").await?;
    let dir = out.join("go-wasm");
    let mut host = Fleet::start_host(setup, &dir, |metrics| {
        host_manifest(
            setup,
            true,
            &[entry(setup, "go-mirror", &go.wasm, &ns, false)],
            metrics,
        )
    })?;
    host.wait_for_modules(1, Duration::from_secs(600)).await?;
    populate(&client, &ns, go.objects).await?;
    tokio::time::sleep(settle).await;
    let wasm_idle = host.idle_memory().await?;
    let from = audit::mark(&go.audit_log)?;
    let mut latency_wasm = Vec::new();
    for i in 0..go.events {
        latency_wasm.push(one_event(&client, &ns, &format!("w{i}")).await?);
    }
    let reconcile_wasm = reconciles(go, from, &ns, go.events)?;
    host.stop(Duration::from_secs(10))?;

    eprintln!("bench go: in the host, suspended");
    let ns = fresh_namespace(&client, "go-suspend").await?;
    let dir = out.join("go-suspend");
    let mut host = Fleet::start_host(setup, &dir, |metrics| {
        let entries = [entry(setup, "go-mirror", &go.wasm, &ns, true)];
        host_manifest(setup, true, &entries, metrics)
    })?;
    host.wait_for_modules(1, Duration::from_secs(600)).await?;
    populate(&client, &ns, go.objects).await?;
    until_suspended(&mut host, 1, Duration::from_secs(120)).await?;
    tokio::time::sleep(settle).await;
    until_suspended(&mut host, 1, Duration::from_secs(120)).await?;
    let wasm_suspended = host.memory_median(SUSPENDED_SAMPLES).await?;
    let at_rest = host.host_metrics()?.unwrap_or_default();
    let from = audit::mark(&go.audit_log)?;
    let suspended_events = go.events.div_ceil(3);
    let mut latency_suspended = Vec::new();
    for i in 0..suspended_events {
        until_suspended(&mut host, 1, Duration::from_secs(120)).await?;
        latency_suspended.push(one_event(&client, &ns, &format!("s{i}")).await?);
    }
    let reconcile_suspended = reconciles(go, from, &ns, suspended_events)?;
    let after = host.host_metrics()?.unwrap_or_default();
    host.stop(Duration::from_secs(10))?;
    let resumes = after.resumes.saturating_sub(at_rest.resumes);
    let resume_mean_ms = (resumes > 0)
        .then(|| (after.resume_seconds - at_rest.resume_seconds) * 1000.0 / resumes as f64);

    let (fleet_native, fleet_wasm, fleet_suspended) = if go.fleet_n > 0 {
        let (native, wasm, suspended) = fleet(setup, go, &client, out).await?;
        (Some(native), Some(wasm), Some(suspended))
    } else {
        (None, None, None)
    };

    let mut mixed_kinds = vec!["go-configmap-mirror".to_string()];
    let (mut mixed_native, mut mixed_wasm, mut mixed_suspended) = (None, None, None);
    if !go.rust_examples.is_empty() {
        eprintln!("bench go: mixed fleet (the Go controller and the Rust examples)");
        let stem = |p: &Path| {
            p.file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default()
        };
        mixed_kinds.extend(go.rust_examples.iter().map(|(n, _)| stem(n)));
        let mut kinds: Vec<(String, PathBuf, PathBuf)> = vec![(
            "go-configmap-mirror".into(),
            go.native.clone(),
            go.wasm.clone(),
        )];
        kinds.extend(
            go.rust_examples
                .iter()
                .map(|(n, w)| (stem(n), n.clone(), w.clone())),
        );
        // Natively: each in its own namespace.
        let dir = out.join("go-mixed-native");
        std::fs::create_dir_all(&dir)?;
        let mut commands = Vec::new();
        for (name, native, _) in &kinds {
            let ns = fresh_namespace(&client, "go-mixed-n").await?;
            let kubeconfig = kubeconfig_for(&setup.kubeconfig, &ns, &dir)?;
            let mut command = Command::new(native);
            command.env("KUBECONFIG", &kubeconfig).stdin(Stdio::null());
            commands.push((name.clone(), command));
        }
        let mut fleet = Fleet::start_processes(commands, &dir)?;
        tokio::time::sleep(settle.max(Duration::from_secs(10))).await;
        mixed_native = Some(fleet.idle_memory().await?);
        fleet.stop(Duration::from_secs(10))?;
        for suspended in [false, true] {
            let label = if suspended { "suspended" } else { "resident" };
            let dir = out.join(format!("go-mixed-{label}"));
            std::fs::create_dir_all(&dir)?;
            let mut entries = Vec::new();
            for (name, _, wasm) in &kinds {
                let ns = fresh_namespace(&client, "go-mixed-w").await?;
                entries.push(entry(setup, name, wasm, &ns, suspended));
            }
            let mut host = Fleet::start_host(setup, &dir, |metrics| {
                host_manifest(setup, true, &entries, metrics)
            })?;
            host.wait_for_modules(kinds.len(), Duration::from_secs(600))
                .await?;
            if suspended {
                until_suspended(&mut host, kinds.len() as u64, Duration::from_secs(180)).await?;
            }
            tokio::time::sleep(settle.max(Duration::from_secs(10))).await;
            let sample = if suspended {
                host.memory_median(SUSPENDED_SAMPLES).await?
            } else {
                host.idle_memory().await?
            };
            host.stop(Duration::from_secs(10))?;
            if suspended {
                mixed_suspended = Some(sample);
            } else {
                mixed_wasm = Some(sample);
            }
        }
    }

    Ok(GoFigures {
        wasm_bytes: statics.bytes,
        compile_ms: statics.compile_ms,
        cache_load_ms: statics.cache_load_ms,
        native_idle,
        wasm_idle,
        wasm_suspended,
        linear_memory_bytes: at_rest.linear_memory_bytes,
        snapshot_bytes: at_rest.snapshot_bytes,
        resumes,
        resume_mean_ms,
        reconcile_native,
        reconcile_wasm,
        reconcile_suspended,
        latency_native: Latency::of(latency_native),
        latency_wasm: Latency::of(latency_wasm),
        latency_suspended: Latency::of(latency_suspended),
        mixed_native,
        mixed_wasm,
        mixed_suspended,
        mixed_kinds,
        fleet_n: go.fleet_n,
        fleet_native,
        fleet_wasm,
        fleet_suspended,
        reclaim: reclaim_at_start.until(&ReclaimCounters::now()),
        budgets: Vec::new(),
        budgets_incomplete: Vec::new(),
    })
}

/// The fleet of `go.fleet_n` Go controllers, each with `go.objects` ConfigMaps of its own
/// namespace: as native processes, then as modules of one host resident, then suspended.
/// Returns their idle samples in that order.
async fn fleet(
    setup: &Setup,
    go: &GoSetup,
    client: &Client,
    out: &Path,
) -> anyhow::Result<(Sample, Sample, Sample)> {
    let n = go.fleet_n;
    let settle = Duration::from_secs(go.settle_secs.max(10));
    eprintln!("bench go: a fleet of {n} Go controllers, natively");
    let dir = out.join("go-fleet-native");
    std::fs::create_dir_all(&dir)?;
    let mut commands = Vec::with_capacity(n);
    let mut namespaces = Vec::with_capacity(n);
    for i in 0..n {
        let ns = fresh_namespace(client, "go-fleet-n").await?;
        populate_only(client, &ns, go.objects).await?;
        let kubeconfig = kubeconfig_for(&setup.kubeconfig, &ns, &dir)?;
        let mut command = Command::new(&go.native);
        command.env("KUBECONFIG", &kubeconfig).stdin(Stdio::null());
        commands.push((format!("go-configmap-mirror-{i}"), command));
        namespaces.push(ns);
    }
    let mut native = Fleet::start_processes(commands, &dir)?;
    for ns in &namespaces {
        mirrors_within(client, ns, go.objects, Duration::from_secs(300)).await?;
    }
    tokio::time::sleep(settle).await;
    let native_idle = native.idle_memory().await?;
    native.stop(Duration::from_secs(10))?;

    let mut samples = Vec::with_capacity(2);
    for suspended in [false, true] {
        let label = if suspended { "suspended" } else { "resident" };
        eprintln!("bench go: a fleet of {n} Go controllers in one host, {label}");
        let dir = out.join(format!("go-fleet-{label}"));
        let mut entries = Vec::with_capacity(n);
        let mut namespaces = Vec::with_capacity(n);
        for i in 0..n {
            let ns = fresh_namespace(client, "go-fleet-w").await?;
            populate_only(client, &ns, go.objects).await?;
            entries.push(entry(
                setup,
                &format!("go-mirror-{i}"),
                &go.wasm,
                &ns,
                suspended,
            ));
            namespaces.push(ns);
        }
        let mut host = Fleet::start_host(setup, &dir, |metrics| {
            host_manifest(setup, true, &entries, metrics)
        })?;
        host.wait_for_modules(n, Duration::from_secs(600)).await?;
        for ns in &namespaces {
            mirrors_within(client, ns, go.objects, Duration::from_secs(300)).await?;
        }
        if suspended {
            until_suspended(&mut host, n as u64, Duration::from_secs(180)).await?;
        }
        tokio::time::sleep(settle).await;
        if suspended {
            until_suspended(&mut host, n as u64, Duration::from_secs(180)).await?;
        }
        samples.push(if suspended {
            host.memory_median(SUSPENDED_SAMPLES).await?
        } else {
            host.idle_memory().await?
        });
        host.stop(Duration::from_secs(10))?;
    }
    let suspended = samples.pop().context("the suspended fleet's sample")?;
    let resident = samples.pop().context("the resident fleet's sample")?;
    Ok((native_idle, resident, suspended))
}
