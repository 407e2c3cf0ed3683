//! One soak run, start to end: namespaces and sources, the host, the driver's watch, the
//! memory sampler, the traffic and the chaos schedule; then the traffic stops, the mirrors get
//! time to converge, a final listing compares every mirror with its source, and the
//! [`Report`] judges it all.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context as _;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, ListParams};
use kube_wasm_e2e::metrics::free_local_addr;
use tokio::sync::watch;

use super::chaos::Chaos;
use super::clock::Clock;
use super::downtime::Downtime;
use super::host::{self, Fleet, Host, Hostile, hostile_name};
use super::ledger::Ledger;
use super::observer::{self, Sources, secret_seq};
use super::report::{Measured, Report};
use super::sampler;
use super::schedule::{self, ChaosKind};
use super::traffic::{MIRROR_LABEL, MIRRORED_FROM, SEQ_KEY, Traffic, source_name};
use super::trend::Tolerance;
use crate::cluster;

/// A soak run's parameters.
#[derive(Debug, Clone)]
pub struct Config {
    /// The cluster's kubeconfig (an admin's).
    pub kubeconfig: PathBuf,
    /// The control plane's folder (`scripts/control-plane.sh start DIR`).
    pub control_plane_dir: PathBuf,
    /// `scripts/control-plane.sh`.
    pub control_plane_script: PathBuf,
    /// The host-shim binary.
    pub host_shim: PathBuf,
    /// The configmap-mirror module.
    pub mirror_wasm: PathBuf,
    /// The hostile module.
    pub hostile_wasm: PathBuf,
    /// Where the report and logs go.
    pub out: PathBuf,
    /// How long the traffic (and chaos) runs.
    pub duration: Duration,
    /// Healthy modules.
    pub modules: usize,
    /// Source ConfigMaps per healthy module.
    pub sources: usize,
    /// Changes per second, over all sources.
    pub rate: f64,
    /// Every this many changes of a source deletes it (0: never).
    pub delete_every: u64,
    /// The disruptions, taken in turn.
    pub chaos: Vec<ChaosKind>,
    /// One disruption every this long.
    pub chaos_every: Duration,
    /// The hostile modules.
    pub hostile: Vec<Hostile>,
    /// Their memory cap.
    pub hostile_memory: String,
    /// More environment of every hostile module (`KEY`, `VALUE`).
    pub hostile_env: Vec<(String, String)>,
    /// More top-level manifest lines.
    pub settings: Vec<String>,
    /// The longest a healthy module may leave a change waiting (API server downtime left out).
    pub stall_bound: Duration,
    /// The memory trend's tolerance.
    pub tolerance: Tolerance,
    /// Memory samples of an incarnation's first this long are not judged.
    pub warmup: Duration,
    /// Between two memory samples.
    pub sample_every: Duration,
    /// How long the mirrors get to converge after the traffic stops, and to mirror every
    /// source after the host first starts.
    pub converge_timeout: Duration,
}

/// Waits until every source's last change is reconciled or `timeout` passes; the seconds it
/// took.
async fn converged(ledger: &Arc<Mutex<Ledger>>, clock: Clock, timeout: Duration) -> Option<f64> {
    let from = clock.now();
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if ledger.lock().unwrap_or_else(|e| e.into_inner()).converged() {
            return Some(clock.now() - from);
        }
        if tokio::time::Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Lists every namespace's sources and mirrors; one line per source whose mirror differs.
async fn mismatches(
    client: &kube::Client,
    namespaces: &[String],
    sources: usize,
) -> anyhow::Result<Vec<String>> {
    let mut lines = Vec::new();
    let selector = format!("{}={}", MIRROR_LABEL.0, MIRROR_LABEL.1);
    for ns in namespaces {
        let cms = Api::<ConfigMap>::namespaced(client.clone(), ns)
            .list(&ListParams::default().labels(&selector))
            .await
            .with_context(|| format!("listing ConfigMaps in {ns}"))?;
        let secrets = Api::<Secret>::namespaced(client.clone(), ns)
            .list(&ListParams::default().labels(MIRRORED_FROM))
            .await
            .with_context(|| format!("listing Secrets in {ns}"))?;
        for index in 0..sources {
            let name = source_name(index);
            let source = cms
                .items
                .iter()
                .find(|c| c.metadata.name.as_deref() == Some(&name))
                .map(|c| c.data.as_ref().and_then(|d| d.get(SEQ_KEY)).cloned());
            let mirror = secrets
                .items
                .iter()
                .find(|s| s.metadata.name.as_deref() == Some(&name))
                .map(|s| secret_seq(s).map(|n| n.to_string()));
            if source != mirror {
                lines.push(format!("{ns}/{name}: source {source:?}, mirror {mirror:?}"));
            }
        }
    }
    Ok(lines)
}

/// Runs the soak of `config`; the report.
///
/// # Errors
/// If the cluster cannot be set up or the host not started; what goes wrong later is a
/// finding of the report.
pub async fn run(config: &Config) -> anyhow::Result<Report> {
    let out = std::path::absolute(&config.out)?;
    std::fs::create_dir_all(&out)?;
    let clock = Clock::start();
    let client = cluster::client(&config.kubeconfig).await?;

    // Unique per run: namespaces cannot be deleted on this control plane.
    let stamp = cluster::now_micros() / 1_000_000 % 100_000;
    let namespaces: Vec<String> = (0..config.modules)
        .map(|i| format!("soak{stamp}-{i}"))
        .collect();
    let hostile_namespace = format!("soak{stamp}-hostile");
    for ns in namespaces.iter().chain([&hostile_namespace]) {
        cluster::create_namespace(&client, ns).await?;
    }
    eprintln!(
        "soak: namespaces soak{stamp}-*; output in {}",
        out.display()
    );

    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let (stop_tx, stop) = watch::channel(false);
    let (traffic_stop_tx, traffic_stop) = watch::channel(false);
    let traffic = Traffic {
        client: client.clone(),
        namespaces: namespaces.clone(),
        sources: config.sources,
        ledger: ledger.clone(),
        clock,
    };
    traffic.create_sources(&traffic_stop).await?;
    let observer = tokio::spawn(observer::observe(
        client.clone(),
        Sources::new(&namespaces, config.sources),
        ledger.clone(),
        clock,
        stop.clone(),
    ));

    let metrics = free_local_addr().context("a free loopback port for the host's metrics")?;
    let fleet = Fleet {
        mirror_wasm: std::path::absolute(&config.mirror_wasm)?,
        hostile_wasm: std::path::absolute(&config.hostile_wasm)?,
        namespaces: namespaces.clone(),
        hostile: config.hostile.clone(),
        hostile_namespace,
        hostile_memory: config.hostile_memory.clone(),
        hostile_env: config.hostile_env.clone(),
        settings: config.settings.clone(),
        cache_dir: out.join("module-cache"),
    };
    let manifest = out.join("host.yaml");
    std::fs::write(&manifest, host::manifest(&fleet, metrics))
        .with_context(|| format!("writing {}", manifest.display()))?;
    for log in ["host.out", "host.err"] {
        let _ = std::fs::remove_file(out.join(log));
    }
    let kubeconfig = std::path::absolute(&config.kubeconfig)?;
    let host = Arc::new(Mutex::new(Host::new(
        &config.host_shim,
        &kubeconfig,
        &manifest,
        &out,
    )));
    let started = clock.now();
    host.lock()
        .unwrap_or_else(|e| e.into_inner())
        .start(started)?;
    eprintln!(
        "soak: host started with {} mirror and {} hostile modules; waiting for every source to be mirrored",
        config.modules,
        config.hostile.len()
    );
    let startup_secs = converged(&ledger, clock, config.converge_timeout)
        .await
        .map(|_| clock.now() - started);
    let sampler = tokio::spawn(sampler::sample(
        host.clone(),
        clock,
        config.sample_every,
        metrics,
        stop.clone(),
    ));

    eprintln!(
        "soak: traffic at {}/s for {:?}",
        config.rate, config.duration
    );
    let traffic_start = tokio::time::Instant::now();
    let writer = {
        let traffic = traffic.clone();
        let (rate, delete_every) = (config.rate, config.delete_every);
        tokio::spawn(async move { traffic.run(rate, delete_every, traffic_stop).await })
    };
    let chaos = Chaos {
        script: config.control_plane_script.clone(),
        control_plane_dir: config.control_plane_dir.clone(),
        client: client.clone(),
        host: host.clone(),
        clock,
    };
    let mut events = Vec::new();
    let mut downtime = Downtime::default();
    for (offset, kind) in schedule::plan(&config.chaos, config.chaos_every, config.duration) {
        tokio::time::sleep_until(traffic_start + offset).await;
        let event = chaos.run(kind).await;
        eprintln!(
            "soak: {:.1} s {} took {:.1} s {}",
            event.at,
            event.kind,
            event.took,
            event.error.as_deref().unwrap_or(&event.detail)
        );
        if event.apiserver_down {
            downtime.add(event.at, event.at + event.took);
        }
        events.push(event);
    }
    tokio::time::sleep_until(traffic_start + config.duration).await;
    let _ = traffic_stop_tx.send(true);
    let writes = writer.await.context("the traffic task")?;
    eprintln!(
        "soak: traffic stopped after {} changes; waiting for the mirrors to converge",
        writes.changes
    );
    let converge_secs = converged(&ledger, clock, config.converge_timeout).await;
    let end = clock.now();
    let mismatches = mismatches(&client, &namespaces, config.sources).await?;
    let _ = stop_tx.send(true);
    let host_log = sampler.await.context("the sampler task")?;
    let watch_counts = observer.await.context("the observer task")?;
    host.lock().unwrap_or_else(|e| e.into_inner()).kill()?;
    let csv = out.join("memory.csv");
    std::fs::write(&csv, sampler::csv(&host_log.samples))
        .with_context(|| format!("writing {}", csv.display()))?;

    let hostile_specs: Vec<String> = config.hostile.iter().map(Hostile::label).collect();
    let parameters = vec![
        format!(
            "{} of traffic, {} healthy configmap-mirror modules × {} sources, {} changes/s (every {}th change of a source deletes it)",
            humane(config.duration),
            config.modules,
            config.sources,
            config.rate,
            config.delete_every
        ),
        format!(
            "hostile modules (memory cap {}): {}",
            config.hostile_memory,
            if hostile_specs.is_empty() {
                "none".into()
            } else {
                hostile_specs.join(", ")
            }
        ),
        format!(
            "chaos every {}: {}",
            humane(config.chaos_every),
            config
                .chaos
                .iter()
                .map(|k| k.label())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        format!(
            "host: {}; manifest {}",
            config.host_shim.display(),
            manifest.display()
        ),
    ];
    let outcomes = ledger.lock().unwrap_or_else(|e| e.into_inner()).outcomes();
    Ok(Report::new(Measured {
        parameters,
        modules: config.modules,
        duration_secs: config.duration.as_secs_f64(),
        outcomes,
        startup_secs,
        converge_secs,
        end,
        mismatches,
        sources: config.modules * config.sources,
        events,
        downtime,
        host: host_log,
        hostile: config
            .hostile
            .iter()
            .enumerate()
            .map(|(i, h)| (hostile_name(i), h.label()))
            .collect(),
        failed_writes: writes.failed_attempts,
        watch_errors: watch_counts.errors,
        stall_bound: config.stall_bound.as_secs_f64(),
        warmup: config.warmup.as_secs_f64(),
        tolerance: config.tolerance,
    }))
}

/// `d` as minutes and seconds, e.g. `6m00s`, or seconds under a minute.
fn humane(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{}s", s)
    }
}
