//! The workloads, each one launch of controllers in one variant:
//! - **ring** (with the **idle fleet** measured in the same launch): N controllers, controller
//!   i copying namespace i to namespace i+1 (N+1 namespaces); after the warm-up cycles the
//!   fleet is left alone for the settle time and its memory sampled (idle: every controller
//!   has its own watch and one Ring, nothing changes), then the measured cycles: write nonce j
//!   in namespace 0, wait until it arrives in namespace N;
//! - **churn**: one controller, a burst of K Ring writes; copies per second until all K have
//!   arrived;
//! - **resume curve**: one suspended module per linear-memory size (the ring controller
//!   holding `RING_BALLAST_MIB` of written memory), woken by a Ring write again and again;
//!   the host's own suspend and resume times per size.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use futures::{StreamExt as _, TryStreamExt as _};
use kube::Client;
use kube::api::{Api, DynamicObject};
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc::UnboundedReceiver;

use crate::audit::{self, Requests};
use crate::cgroup::{Cgroup, Charged};
use crate::cluster::{self, Arrival, RECONCILED_AT, RING_NAME};
use crate::fleet::{Fleet, HostMetrics, Link, Setup, Variant};
use crate::memory::{self, Sample};
use crate::stats;

/// How much of each workload to run.
#[derive(Debug, Clone)]
pub struct Params {
    /// Ring cycles before measuring (the first also proves every controller is up).
    pub warmup: u64,
    /// Measured ring cycles.
    pub cycles: u64,
    /// How long the fleet is left alone before the idle memory is sampled.
    pub settle: Duration,
    /// Objects written in the churn burst.
    pub churn_k: u64,
    /// Writes in flight at once during the burst.
    pub churn_parallel: usize,
    /// How long the first cycle (all controllers starting) may take.
    pub startup_timeout: Duration,
    /// How long a later cycle, or the churn's convergence, may take.
    pub cycle_timeout: Duration,
}

/// The settle time is measured in this many equal windows, whose CPU times show how much
/// the idle CPU varies (see [`crate::budget::lever_pays`]).
pub const SETTLE_WINDOWS: u32 = 6;

/// What the driver needs for a launch.
pub struct Bench {
    /// The driver's client.
    pub client: Client,
    /// Binaries and paths.
    pub setup: Setup,
    /// The apiserver's audit log.
    pub audit_log: std::path::PathBuf,
    /// Where launch logs go.
    pub logs: std::path::PathBuf,
    /// How much to run.
    pub params: Params,
    /// The apiserver's TCP port, whose connections the levers count.
    pub apiserver_port: u16,
}

/// One launch of the ring workload.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RingRun {
    /// The variant.
    pub variant: Variant,
    /// Controllers.
    pub n: usize,
    /// Run index (pairs of variants share it).
    pub run: usize,
    /// From starting the processes to the end of the first ring cycle, in ms.
    pub startup_ms: f64,
    /// Memory after the settle time (median of 3 samples 1 s apart).
    pub idle: Sample,
    /// Memory sampled every second during the measured cycles: median.
    pub load: Sample,
    /// …and the largest sample.
    pub load_max: Sample,
    /// Ring latency of each measured cycle, in ms.
    pub ring_ms: Vec<f64>,
    /// Event→reconcile latency of each measured cycle (the write in namespace 0 until
    /// controller 0's reconcile started), in ms.
    pub reconcile_ms: Vec<f64>,
    /// The same latencies by kind, in a fleet of distinct kinds (the edge and mixed fleets'
    /// budget launches: every stimulated instance's answer in every measured cycle); empty for
    /// the ring.
    #[serde(default)]
    pub reconcile_by_kind_ms: BTreeMap<String, Vec<f64>>,
    /// The controllers' upstream requests over the whole launch (audit log); `None` if the
    /// log could not be read for that launch.
    pub requests: Option<Requests>,
    /// The host's metrics when idle (wasm variants).
    pub host_idle: Option<HostMetrics>,
    /// The host's metrics after the cycles (wasm variants).
    pub host_end: Option<HostMetrics>,
    /// What the launch's control group measured, if it ran in one (the budget workload).
    #[serde(default)]
    pub cgroup: Option<CgroupFigures>,
}

#[cfg(test)]
impl RingRun {
    /// A launch of `n` controllers as `variant` that measured nothing (for the report's tests).
    pub(crate) fn empty(variant: Variant, n: usize) -> Self {
        Self {
            variant,
            n,
            run: 0,
            startup_ms: 0.0,
            idle: Sample::default(),
            load: Sample::default(),
            load_max: Sample::default(),
            ring_ms: Vec::new(),
            reconcile_ms: Vec::new(),
            reconcile_by_kind_ms: BTreeMap::new(),
            requests: None,
            host_idle: None,
            host_end: None,
            cgroup: None,
        }
    }
}

/// What a launch's control group measured (see [`crate::cgroup`]).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct CgroupFigures {
    /// Its memory limit, in bytes (`None`: unlimited).
    pub limit: Option<u64>,
    /// What was charged to it when the fleet was idle (after the settle time).
    pub idle: Charged,
    /// The most ever charged to it, in bytes.
    pub peak: u64,
    /// Processes the OOM killer killed in it.
    pub oom_kills: u64,
    /// CPU time its processes used during the settle time, in ns.
    pub settle_cpu_ns: u64,
    /// …in each of [`SETTLE_WINDOWS`] equal parts of it, in ns: how much the idle CPU varies
    /// within one launch (empty in reports written before it was measured).
    #[serde(default)]
    pub settle_cpu_windows_ns: Vec<u64>,
    /// The settle time, in ms.
    pub settle_ms: u64,
}

/// One linear-memory size of the resume curve: one module in the host, suspended and woken
/// repeatedly.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ResumePoint {
    /// Memory the module allocated and wrote on top of its own (`RING_BALLAST_MIB`), in MiB.
    pub ballast_mib: u64,
    /// Its linear memory while resident (the host's `kube_wasm_module_memory_bytes`), in
    /// bytes.
    pub linear_memory_bytes: u64,
    /// Its snapshot file while suspended (`kube_wasm_module_snapshot_bytes`), in bytes.
    pub snapshot_bytes: u64,
    /// Each suspend to disk (snapshot written, instance released), in ms.
    pub suspend_ms: Vec<f64>,
    /// Each resume from disk (waking completion to restored instance), in ms.
    pub resume_ms: Vec<f64>,
}

/// One launch of the churn workload.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ChurnRun {
    /// The variant.
    pub variant: Variant,
    /// Run index.
    pub run: usize,
    /// Objects in the burst.
    pub k: u64,
    /// Writes in flight at once.
    pub parallel: usize,
    /// Time to write the burst (the driver's side), in ms.
    pub write_ms: f64,
    /// From the first write until every copy arrived, in ms.
    pub converge_ms: f64,
    /// Copies (reconciles that wrote) per second: K / converge time.
    pub per_second: f64,
    /// The controller's upstream requests over the launch; `None` if the log could not be
    /// read for that launch.
    pub requests: Option<Requests>,
}

fn links(prefix: &str, n: usize) -> Vec<Link> {
    (0..n)
        .map(|i| Link {
            source: format!("{prefix}-{i}"),
            target: format!("{prefix}-{}", i + 1),
            ballast_mib: 0,
        })
        .collect()
}

/// How a launch began, for [`Bench::settle_and_measure`].
pub(crate) struct Started {
    /// The variant.
    pub variant: Variant,
    /// Controllers.
    pub n: usize,
    /// Run index.
    pub run: usize,
    /// From starting the processes to the end of the first cycle, in ms.
    pub startup_ms: f64,
    /// The audit log before the processes started.
    pub audit_from: audit::Mark,
}

pub(crate) fn ms(micros: u64) -> f64 {
    micros as f64 / 1000.0
}

/// A launch's settle time: sleeps `settle` in [`SETTLE_WINDOWS`] equal windows; the CPU
/// time `cgroup` used in each, in ns (empty without a group).
///
/// # Errors
/// If the group's CPU accounting cannot be read.
async fn settle_in(cgroup: Option<&Cgroup>, settle: Duration) -> anyhow::Result<Vec<u64>> {
    let mut windows = Vec::with_capacity(SETTLE_WINDOWS as usize);
    let mut window_start = cgroup.map(Cgroup::cpu_ns).transpose()?;
    for _ in 0..SETTLE_WINDOWS {
        tokio::time::sleep(settle / SETTLE_WINDOWS).await;
        if let (Some(group), Some(before)) = (cgroup, window_start) {
            let now = group.cpu_ns()?;
            windows.push(now.saturating_sub(before));
            window_start = Some(now);
        }
    }
    Ok(windows)
}

/// What `cgroup` measured over a launch, at its end: the limit, what it charged at idle
/// (`idle`), its peak and OOM kills, and the settle time's CPU windows (from [`settle_in`]);
/// `None` without a group.
///
/// # Errors
/// If the group's files cannot be read.
fn cgroup_figures(
    cgroup: Option<&Cgroup>,
    idle: Option<Charged>,
    settle_cpu_windows_ns: Vec<u64>,
    settle: Duration,
) -> anyhow::Result<Option<CgroupFigures>> {
    let (Some(group), Some(idle)) = (cgroup, idle) else {
        return Ok(None);
    };
    Ok(Some(CgroupFigures {
        limit: group.limit(),
        idle,
        peak: group.peak()?,
        oom_kills: group.oom_kills()?,
        settle_cpu_ns: settle_cpu_windows_ns.iter().sum(),
        settle_cpu_windows_ns,
        settle_ms: settle.as_millis() as u64,
    }))
}

/// Samples `fleet`'s memory every second on a blocking thread until `stop` is set.
fn sample_while(
    pids: Vec<u32>,
    stop: Arc<AtomicBool>,
) -> tokio::task::JoinHandle<anyhow::Result<Vec<Sample>>> {
    tokio::task::spawn_blocking(move || {
        let mut samples = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            samples.push(crate::memory::of_processes(&pids)?);
            for _ in 0..10 {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        Ok(samples)
    })
}

impl Bench {
    /// The controllers' requests between two marks of the audit log, or `None` (with a
    /// warning) if they cannot be read: a figure that was not measured is not made up.
    pub(crate) fn requests(&self, from: audit::Mark, to: audit::Mark) -> Option<Requests> {
        match audit::requests_between(&self.audit_log, from, to) {
            Ok(requests) => Some(requests),
            Err(err) => {
                eprintln!("bench: upstream requests not counted: {err:#}");
                None
            }
        }
    }

    pub(crate) fn launch_dir(&self, name: &str) -> std::path::PathBuf {
        self.logs.join(name)
    }

    /// Creates the two namespaces of a one-controller launch (`<tag>-0` copied to
    /// `<tag>-1`) and starts watching the target for arrivals.
    async fn one_link(&self, tag: &str) -> anyhow::Result<(Link, UnboundedReceiver<Arrival>)> {
        let link = links(tag, 1).remove(0);
        for namespace in [&link.source, &link.target] {
            cluster::create_namespace(&self.client, namespace).await?;
        }
        let arrivals = cluster::watch_arrivals(&self.client, &link.target);
        Ok((link, arrivals))
    }

    /// Creates the N+1 namespaces of a ring of `n` controllers (`<tag>-0` … `<tag>-<n>`) and
    /// returns its links, controller i copying `<tag>-i` to `<tag>-(i+1)`.
    ///
    /// # Errors
    /// If the apiserver refuses a namespace.
    pub(crate) async fn ring_links(&self, tag: &str, n: usize) -> anyhow::Result<Vec<Link>> {
        for i in 0..=n {
            cluster::create_namespace(&self.client, &format!("{tag}-{i}")).await?;
        }
        Ok(links(tag, n))
    }

    /// Runs the ring workload (and the idle fleet) for `variant` with `n` controllers; `tag`
    /// makes its namespaces unique.
    ///
    /// # Errors
    /// If a controller dies, a cycle times out or the cluster refuses a request.
    pub async fn ring(
        &self,
        variant: Variant,
        n: usize,
        run: usize,
        tag: &str,
    ) -> anyhow::Result<RingRun> {
        self.ring_in(&self.setup, variant, n, run, tag, &self.params, None)
            .await
    }

    /// [`Bench::ring`] with the binaries and settings of `setup` and the parameters `p`, every
    /// process inside `cgroup` if given (its figures then in the run's [`RingRun::cgroup`]).
    ///
    /// # Errors
    /// If a controller dies (the OOM killer's victims too), a cycle times out or the cluster
    /// refuses a request.
    #[expect(clippy::too_many_arguments, reason = "one launch's every choice")]
    pub async fn ring_in(
        &self,
        setup: &Setup,
        variant: Variant,
        n: usize,
        run: usize,
        tag: &str,
        p: &Params,
        cgroup: Option<&Cgroup>,
    ) -> anyhow::Result<RingRun> {
        let links = self.ring_links(tag, n).await?;
        let first = format!("{tag}-0");
        let last = format!("{tag}-{n}");
        let mut arrivals = cluster::watch_arrivals(&self.client, &last);
        let audit_from = audit::mark(&self.audit_log)?;
        let launched = Instant::now();
        let mut fleet = Fleet::start_in(setup, variant, &links, &self.launch_dir(tag), cgroup)?;

        let mut nonce = 1;
        cluster::write_nonce(&self.client, &first, RING_NAME, nonce).await?;
        cluster::wait_for(&mut arrivals, RING_NAME, nonce, p.startup_timeout)
            .await
            .with_context(|| format!("{} N={n}: the first cycle", variant.label()))?;
        let startup_ms = launched.elapsed().as_secs_f64() * 1000.0;
        fleet.check_alive()?;
        for _ in 1..p.warmup {
            nonce += 1;
            cluster::write_nonce(&self.client, &first, RING_NAME, nonce).await?;
            cluster::wait_for(&mut arrivals, RING_NAME, nonce, p.cycle_timeout).await?;
        }

        let second = Api::<DynamicObject>::namespaced_with(
            self.client.clone(),
            &format!("{tag}-1"),
            &cluster::ring_resource(),
        );
        let started = Started {
            variant,
            n,
            run,
            startup_ms,
            audit_from,
        };
        let measured_cycle = async || {
            nonce += 1;
            let t0 = cluster::now_micros();
            cluster::write_nonce(&self.client, &first, RING_NAME, nonce).await?;
            let arrived =
                cluster::wait_for(&mut arrivals, RING_NAME, nonce, p.cycle_timeout).await?;
            let copy = second
                .get(RING_NAME)
                .await
                .context("reading the first copy")?;
            let stamp = copy
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(RECONCILED_AT))
                .and_then(|v| v.parse::<u64>().ok());
            let mut reconciled = Vec::new();
            if copy.data["spec"]["nonce"].as_u64() == Some(nonce)
                && let Some(stamp) = stamp
                && stamp >= t0
            {
                reconciled.push(("", ms(stamp - t0)));
            }
            anyhow::Ok((ms(arrived.at_micros.saturating_sub(t0)), reconciled))
        };
        self.settle_and_measure(fleet, started, p, cgroup, measured_cycle)
            .await
    }

    /// The rest of a launch once its first and warm-up cycles are through: the settle time
    /// (the group's CPU in windows, then the idle memory, what the group charged and the
    /// host's metrics), `p.cycles` measured cycles with the fleet's memory sampled every
    /// second, then the fleet stopped and its upstream requests counted. `cycle` runs one
    /// measured cycle: its duration and the event→reconcile latencies it measured, in ms,
    /// each with its controller's kind (`""` where the fleet has one kind).
    ///
    /// # Errors
    /// If a cycle fails, a controller died, or the group or `/proc` cannot be read.
    pub(crate) async fn settle_and_measure(
        &self,
        mut fleet: Fleet,
        started: Started,
        p: &Params,
        cgroup: Option<&Cgroup>,
        mut cycle: impl AsyncFnMut() -> anyhow::Result<(f64, Vec<(&'static str, f64)>)>,
    ) -> anyhow::Result<RingRun> {
        let settle_cpu_windows_ns = settle_in(cgroup, p.settle).await?;
        let idle = fleet.idle_memory().await?;
        let idle_charged = cgroup.map(Cgroup::charged).transpose()?;
        let host_idle = fleet.host_metrics()?;

        let stop = Arc::new(AtomicBool::new(false));
        let sampler = sample_while(fleet.pids(), stop.clone());
        let mut ring_ms = Vec::new();
        let mut reconcile_ms = Vec::new();
        let mut reconcile_by_kind_ms = BTreeMap::<String, Vec<f64>>::new();
        let measured = async {
            for _ in 0..p.cycles {
                let (duration, latencies) = cycle().await?;
                ring_ms.push(duration);
                for (kind, latency) in latencies {
                    reconcile_ms.push(latency);
                    if !kind.is_empty() {
                        reconcile_by_kind_ms
                            .entry(kind.to_owned())
                            .or_default()
                            .push(latency);
                    }
                }
            }
            anyhow::Ok(())
        }
        .await;
        stop.store(true, Ordering::Relaxed);
        let load_samples = sampler.await.context("the memory sampler")??;
        measured?;
        fleet.check_alive()?;
        let host_end = fleet.host_metrics()?;
        let cgroup = cgroup_figures(cgroup, idle_charged, settle_cpu_windows_ns, p.settle)?;
        fleet.stop(Duration::from_secs(15))?;
        let audit_to = audit::mark(&self.audit_log)?;
        let load_max = load_samples
            .iter()
            .copied()
            .max_by_key(|s| s.pss_kib)
            .unwrap_or_default();
        Ok(RingRun {
            variant: started.variant,
            n: started.n,
            run: started.run,
            startup_ms: started.startup_ms,
            idle,
            load: memory::median(&load_samples),
            load_max,
            ring_ms,
            reconcile_ms,
            reconcile_by_kind_ms,
            requests: self.requests(started.audit_from, audit_to),
            host_idle,
            host_end,
            cgroup,
        })
    }

    /// Starts one module in the host and runs one ring cycle, so that the host's cache of
    /// precompiled modules holds the ring controller before anything is measured (otherwise
    /// the first wasm launch would compile it, and its memory and startup would show that).
    ///
    /// # Errors
    /// If the cycle does not complete.
    pub async fn prime(&self, tag: &str) -> anyhow::Result<()> {
        let (link, mut arrivals) = self.one_link(tag).await?;
        let source = link.source.clone();
        let mut fleet = Fleet::start(&self.setup, Variant::Wasm, &[link], &self.launch_dir(tag))?;
        cluster::write_nonce(&self.client, &source, RING_NAME, 1).await?;
        cluster::wait_for(&mut arrivals, RING_NAME, 1, self.params.startup_timeout)
            .await
            .context("priming the host's module cache")?;
        fleet.check_alive()?;
        fleet.stop(Duration::from_secs(15))
    }

    /// Runs the churn workload for `variant`: one controller, a burst of K writes.
    ///
    /// # Errors
    /// If the controller dies, the copies do not all arrive in time or the cluster refuses.
    pub async fn churn(&self, variant: Variant, run: usize, tag: &str) -> anyhow::Result<ChurnRun> {
        let p = &self.params;
        let (link, mut arrivals) = self.one_link(tag).await?;
        let source = link.source.clone();
        let audit_from = audit::mark(&self.audit_log)?;
        let mut fleet = Fleet::start(&self.setup, variant, &[link], &self.launch_dir(tag))?;
        cluster::write_nonce(&self.client, &source, "warm", 1).await?;
        cluster::wait_for(&mut arrivals, "warm", 1, p.startup_timeout).await?;
        fleet.check_alive()?;

        let names: HashMap<String, u64> =
            (0..p.churn_k).map(|k| (format!("c-{k}"), k + 1)).collect();
        let t0 = Instant::now();
        let client = &self.client;
        let source = source.as_str();
        futures::stream::iter(names.iter())
            .map(|(name, nonce)| cluster::write_nonce(client, source, name, *nonce))
            .buffer_unordered(p.churn_parallel.max(1))
            .try_collect::<Vec<()>>()
            .await?;
        let write_ms = t0.elapsed().as_secs_f64() * 1000.0;
        cluster::wait_for_all(&mut arrivals, names, p.cycle_timeout).await?;
        let converge = t0.elapsed();
        fleet.check_alive()?;
        fleet.stop(Duration::from_secs(15))?;
        let audit_to = audit::mark(&self.audit_log)?;
        let requests = self.requests(audit_from, audit_to);
        Ok(ChurnRun {
            variant,
            run,
            k: p.churn_k,
            parallel: p.churn_parallel.max(1),
            write_ms,
            converge_ms: converge.as_secs_f64() * 1000.0,
            per_second: p.churn_k as f64 / converge.as_secs_f64(),
            requests,
        })
    }

    /// Runs the resume curve: for each size in `ballast_mib`, one ring-controller module
    /// holding that many MiB of written memory, suspended (`idleAfter` of the setup) and woken
    /// by a Ring write `resumes` times; `tag` makes its namespaces unique.
    ///
    /// Each wake comes after the module has been suspended for at least `idleAfter`, so the
    /// host's hysteresis never stretches its idle threshold and every cycle is alike.
    ///
    /// # Errors
    /// If the module does not suspend or wake in time, or the host's metrics do not answer.
    pub async fn resume_curve(
        &self,
        ballast_mib: &[u64],
        resumes: usize,
        tag: &str,
    ) -> anyhow::Result<Vec<ResumePoint>> {
        let idle_after = host_shim::fleet::units::parse_duration(&self.setup.suspend_idle_after)
            .map_err(|e| anyhow::anyhow!("the suspend idleAfter: {e}"))?;
        let mut points = Vec::with_capacity(ballast_mib.len());
        for &mib in ballast_mib {
            let tag = format!("{tag}-m{mib}");
            eprintln!("bench: resume curve, {mib} MiB ballast (namespaces {tag}-*)");
            let point = self
                .resume_point(mib, resumes, idle_after, &tag)
                .await
                .with_context(|| {
                    format!(
                        "resume curve at {mib} MiB (logs in {})",
                        self.launch_dir(&tag).display()
                    )
                })?;
            eprintln!(
                "bench:   {:.2} MiB linear memory, snapshot {:.2} MiB: resume p50 {:.2} ms, suspend p50 {:.2} ms",
                point.linear_memory_bytes as f64 / f64::from(1 << 20),
                point.snapshot_bytes as f64 / f64::from(1 << 20),
                stats::median(&point.resume_ms).unwrap_or(f64::NAN),
                stats::median(&point.suspend_ms).unwrap_or(f64::NAN),
            );
            points.push(point);
        }
        Ok(points)
    }

    async fn resume_point(
        &self,
        ballast_mib: u64,
        resumes: usize,
        idle_after: Duration,
        tag: &str,
    ) -> anyhow::Result<ResumePoint> {
        let p = &self.params;
        let (mut link, mut arrivals) = self.one_link(tag).await?;
        link.ballast_mib = ballast_mib;
        let source = link.source.clone();
        let mut fleet = Fleet::start(
            &self.setup,
            Variant::WasmSuspend,
            &[link],
            &self.launch_dir(tag),
        )?;
        let mut nonce = 1;
        cluster::write_nonce(&self.client, &source, RING_NAME, nonce).await?;
        cluster::wait_for(&mut arrivals, RING_NAME, nonce, p.startup_timeout).await?;
        let mut point = ResumePoint {
            ballast_mib,
            linear_memory_bytes: 0,
            snapshot_bytes: 0,
            suspend_ms: Vec::new(),
            resume_ms: Vec::new(),
        };
        let mut before = host_metrics(&fleet)?;
        point.linear_memory_bytes = before.linear_memory_bytes;
        for _ in 0..resumes {
            let suspended = wait_until_suspended(&mut fleet, idle_after * 4 + p.settle).await?;
            point.suspend_ms.push(mean_ms(
                suspended.suspend_seconds - before.suspend_seconds,
                suspended.suspends - before.suspends,
            )?);
            point.snapshot_bytes = point.snapshot_bytes.max(suspended.snapshot_bytes);
            tokio::time::sleep(idle_after + Duration::from_millis(200)).await;
            nonce += 1;
            cluster::write_nonce(&self.client, &source, RING_NAME, nonce).await?;
            cluster::wait_for(&mut arrivals, RING_NAME, nonce, p.cycle_timeout).await?;
            let woken = host_metrics(&fleet)?;
            point.resume_ms.push(mean_ms(
                woken.resume_seconds - suspended.resume_seconds,
                woken.resumes - suspended.resumes,
            )?);
            point.linear_memory_bytes = point.linear_memory_bytes.max(woken.linear_memory_bytes);
            before = woken;
        }
        fleet.check_alive()?;
        fleet.stop(Duration::from_secs(15))?;
        Ok(point)
    }
}

fn host_metrics(fleet: &Fleet) -> anyhow::Result<HostMetrics> {
    fleet
        .host_metrics()?
        .context("the host's metrics endpoint is not configured")
}

/// The mean of `count` timings summing to `seconds`, in ms; `count` must be at least 1.
fn mean_ms(seconds: f64, count: u64) -> anyhow::Result<f64> {
    anyhow::ensure!(count > 0, "the host counted no suspend or resume");
    Ok(seconds * 1000.0 / count as f64)
}

/// Polls the host's metrics until its module is suspended (within `timeout`).
async fn wait_until_suspended(fleet: &mut Fleet, timeout: Duration) -> anyhow::Result<HostMetrics> {
    let deadline = Instant::now() + timeout;
    loop {
        fleet.check_alive()?;
        let m = host_metrics(fleet)?;
        if m.suspended_modules > 0 {
            return Ok(m);
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "the module was not suspended within {timeout:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Whether `path` exists, for error messages about missing builds.
pub fn require_file(path: &Path, what: &str) -> anyhow::Result<()> {
    anyhow::ensure!(
        path.is_file(),
        "{what} {} does not exist (scripts/bench.sh builds it)",
        path.display()
    );
    Ok(())
}
