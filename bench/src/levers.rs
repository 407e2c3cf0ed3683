//! The host's memory levers, each a manifest setting on by default, measured in one run: the
//! same fleets with every lever on (the defaults), and with one lever turned off at a time:
//! - `releaseIdleStacks`: the host releases the fiber and shadow stacks of idle modules;
//! - `http2`: requests and watches of every module share HTTP/2 connections;
//! - `suspend.betweenTimers`: suspended modules are suspended between their timers too and
//!   resumed ahead of them (measured on the suspended examples only: the ring has no timer);
//! - `releaseReadHistory`: a shared watch keeps the events every live watch has taken for 5 s,
//!   not for the 75 s of history (the ring's cycles leave that history behind).
//!
//! Each launch settles, samples its idle memory and counts the host's TCP connections to the
//! apiserver, then times the next event (the first after the code was released) and the one
//! right after it (code warm again). The fleets:
//! - **five examples**: configmap-mirror, configmap-generator, finalizer-controller,
//!   store-reader and multi-watch in one host, each in its own namespace — distinct modules,
//!   so distinct code; the events are ConfigMaps configmap-mirror mirrors into Secrets; resident,
//!   and (with the suspend variant) suspended, where store-reader's one-second ticker and
//!   multi-watch's timers are what `suspend.betweenTimers` is about;
//! - **ring**: N ring controllers sharing one compiled module, resident or suspended
//!   (`suspend: {idleAfter}`); the events are ring cycles;
//! - **tickers** (with the suspend variant, for `suspend.betweenTimers` only): [`TICKERS`]
//!   store-readers, each woken every second by its `tokio::time::interval`, suspended; no
//!   event is timed.
//!
//! Each launch also reports the host's CPU time over the settle time.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube_wasm_e2e::manifest::Entry;
use kube_wasm_e2e::objects::{generator_resource, mirrored};
use serde::{Deserialize, Serialize};

use crate::cluster::{self, RING_NAME};
use crate::fleet::{Fleet, HostMetrics, Setup, Variant, host_manifest};
use crate::memory::Sample;
use crate::workloads::Bench;

/// Store-readers in the tickers fleet.
pub const TICKERS: usize = 40;

/// A host setting that saves memory, on by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Lever {
    /// `releaseIdleStacks`.
    ReleaseIdleStacks,
    /// `http2`.
    Http2,
    /// A suspended module's `suspend.betweenTimers`.
    BetweenTimers,
    /// `releaseReadHistory`.
    ReleaseReadHistory,
}

impl Lever {
    /// Every lever, in report order.
    pub const ALL: [Lever; 4] = [
        Lever::ReleaseIdleStacks,
        Lever::Http2,
        Lever::BetweenTimers,
        Lever::ReleaseReadHistory,
    ];

    /// Its manifest setting.
    pub fn setting(self) -> &'static str {
        match self {
            Lever::ReleaseIdleStacks => "releaseIdleStacks",
            Lever::Http2 => "http2",
            Lever::BetweenTimers => "suspend.betweenTimers",
            Lever::ReleaseReadHistory => "releaseReadHistory",
        }
    }

    /// Whether turning it off can change a fleet whose modules are `suspended` and have
    /// timers (`timers`): `betweenTimers` only matters to suspended modules with timers.
    pub fn matters_to(self, suspended: bool, timers: bool) -> bool {
        match self {
            Lever::ReleaseIdleStacks | Lever::Http2 | Lever::ReleaseReadHistory => true,
            Lever::BetweenTimers => suspended && timers,
        }
    }

    /// `setup` with this lever turned off.
    pub fn off(self, setup: &Setup) -> Setup {
        match self {
            Lever::ReleaseIdleStacks => Setup {
                release_idle_stacks: false,
                ..setup.clone()
            },
            Lever::Http2 => Setup {
                http2: false,
                ..setup.clone()
            },
            Lever::BetweenTimers => Setup {
                suspend_between_timers: false,
                ..setup.clone()
            },
            Lever::ReleaseReadHistory => Setup {
                release_read_history: false,
                ..setup.clone()
            },
        }
    }
}

/// One launch of a fleet with every lever on, or with one off.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LeverRun {
    /// Which fleet: `five examples`, `ring N=…` or `ring N=… suspended`.
    pub fleet: String,
    /// The lever turned off; `None`: every lever on (the host's defaults).
    pub off: Option<Lever>,
    /// Memory after the settle time (median of 3 samples 1 s apart).
    pub idle: Sample,
    /// The host's established TCP connections to the apiserver after the settle time.
    pub apiserver_connections: usize,
    /// Modules suspended at the idle sample.
    pub suspended_modules: u64,
    /// Over the settle time: timers delivered, their mean lateness (ms from falling due to
    /// delivery; NaN without timers) and resumes ahead of a timer.
    pub timers: TimerFigures,
    /// The host's CPU time (user + system) over the settle time, in seconds.
    pub cpu_seconds: f64,
    /// The first event after the settle time, in ms: a ConfigMap until its Secret is seen
    /// (five examples), or a ring cycle.
    #[serde(deserialize_with = "crate::stats::null_as_nan")]
    pub next_event_ms: f64,
    /// The event right after it, in ms.
    #[serde(deserialize_with = "crate::stats::null_as_nan")]
    pub warm_event_ms: f64,
}

/// What the host's timers did over a window (two metrics scrapes).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub struct TimerFigures {
    /// Timers delivered.
    pub delivered: u64,
    /// Their mean lateness, in ms; NaN if none was delivered.
    #[serde(deserialize_with = "crate::stats::null_as_nan")]
    pub mean_lateness_ms: f64,
    /// Suspended modules resumed ahead of a timer.
    pub resumes_ahead: u64,
}

impl TimerFigures {
    /// The figures between scrape `before` and scrape `after`.
    pub fn between(before: &HostMetrics, after: &HostMetrics) -> Self {
        let delivered = after.timers.saturating_sub(before.timers);
        let lateness = after.timer_lateness_seconds - before.timer_lateness_seconds;
        Self {
            delivered,
            mean_lateness_ms: if delivered == 0 {
                f64::NAN
            } else {
                lateness * 1000.0 / delivered as f64
            },
            resumes_ahead: after.timer_resumes.saturating_sub(before.timer_resumes),
        }
    }
}

/// The CRD of the configmap-generator example, without a schema (the example only needs its
/// API served; the driver creates no generators).
fn generator_crd() -> anyhow::Result<CustomResourceDefinition> {
    let r = generator_resource();
    serde_json::from_value(serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{}.{}", r.plural, r.group)},
        "spec": {
            "group": r.group,
            "names": {"kind": r.kind, "plural": r.plural, "singular": "configmapgenerator"},
            "scope": "Namespaced",
            "versions": [{
                "name": r.version,
                "served": true,
                "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "x-kubernetes-preserve-unknown-fields": true
                }}
            }]
        }
    }))
    .context("the ConfigMapGenerator CRD")
}

impl Bench {
    /// Applies the CRD the configmap-generator example serves.
    ///
    /// # Errors
    /// If the apiserver refuses it.
    pub async fn apply_generator_crd(&self) -> anyhow::Result<()> {
        let crds = Api::<CustomResourceDefinition>::all(self.client.clone());
        let crd = generator_crd()?;
        let name = crd.metadata.name.clone().unwrap_or_default();
        crds.patch(
            &name,
            &PatchParams::apply("kube-wasm-bench").force(),
            &Patch::Apply(&crd),
        )
        .await
        .context("applying the ConfigMapGenerator CRD")?;
        Ok(())
    }

    /// Runs every fleet with every lever on, then with each lever off in turn, and returns
    /// the launches. `examples` are the examples' `.wasm` files (by file stem); without
    /// configmap-mirror among them the examples fleet is skipped. `ring_n`: the ring's
    /// controllers.
    ///
    /// # Errors
    /// If a launch fails.
    pub async fn levers(
        &self,
        examples: &[PathBuf],
        ring_n: usize,
        suspend: bool,
        tag: &str,
    ) -> anyhow::Result<Vec<LeverRun>> {
        let has_mirror = examples
            .iter()
            .any(|p| p.file_stem().is_some_and(|s| s == "configmap-mirror"));
        if has_mirror {
            self.apply_generator_crd().await?;
        }
        let store_reader = examples
            .iter()
            .find(|p| p.file_stem().is_some_and(|s| s == "store-reader"))
            .cloned();
        let mut runs = Vec::new();
        let mut launch = 0;
        if has_mirror {
            // Primes the host's cache with the examples (the ring is primed already), so
            // no measured launch compiles.
            launch += 1;
            eprintln!("bench: levers, priming the cache with the examples");
            let examples = Examples {
                wasm: examples,
                suspended: false,
            };
            self.examples_idle(
                &self.setup,
                &examples,
                None,
                &format!("{tag}-{launch}"),
                false,
            )
            .await?;
        }
        for off in std::iter::once(None).chain(Lever::ALL.map(Some)) {
            let setup = off.map_or_else(|| self.setup.clone(), |lever| lever.off(&self.setup));
            let label = off.map_or("every lever on".to_owned(), |lever| {
                format!("{}: false", lever.setting())
            });
            let matters = |suspended, timers| off.is_none_or(|l| l.matters_to(suspended, timers));
            if has_mirror {
                let suspended = if suspend {
                    vec![false, true]
                } else {
                    vec![false]
                };
                for suspended in suspended {
                    if !matters(suspended, true) {
                        continue;
                    }
                    launch += 1;
                    let tag = format!("{tag}-{launch}");
                    let how = if suspended { " suspended" } else { "" };
                    eprintln!("bench: levers, five examples{how}, {label}");
                    let examples = Examples {
                        wasm: examples,
                        suspended,
                    };
                    runs.push(
                        self.examples_idle(&setup, &examples, off, &tag, true)
                            .await?,
                    );
                }
            }
            if let (true, Some(ticker)) = (suspend, &store_reader)
                && off.is_none_or(|l| l == Lever::BetweenTimers)
            {
                launch += 1;
                let tag = format!("{tag}-{launch}");
                eprintln!("bench: levers, {TICKERS} tickers suspended, {label}");
                runs.push(self.tickers_idle(&setup, ticker, off, &tag).await?);
            }
            let variants = if suspend {
                vec![Variant::Wasm, Variant::WasmSuspend]
            } else {
                vec![Variant::Wasm]
            };
            for variant in variants {
                if !matters(variant == Variant::WasmSuspend, false) {
                    continue;
                }
                launch += 1;
                let tag = format!("{tag}-{launch}");
                eprintln!(
                    "bench: levers, ring N={ring_n} {}, {label}",
                    variant.label()
                );
                runs.push(self.ring_idle(&setup, variant, ring_n, off, &tag).await?);
            }
        }
        for run in &runs {
            eprintln!(
                "bench:   {} off {:?}: idle {:.1} MiB PSS, {} suspended, {:.2} s CPU, {} \
                 apiserver connections; {} timers {:.2} ms late on average, {} resumes ahead; \
                 next event {:.1} ms, then {:.1} ms",
                run.fleet,
                run.off,
                run.idle.pss_kib as f64 / 1024.0,
                run.suspended_modules,
                run.cpu_seconds,
                run.apiserver_connections,
                run.timers.delivered,
                run.timers.mean_lateness_ms,
                run.timers.resumes_ahead,
                run.next_event_ms,
                run.warm_event_ms
            );
        }
        Ok(runs)
    }

    /// The five examples in one host; `measure`: false stops the host once configmap-mirror
    /// mirrored its first ConfigMap, without waiting (its figures are then not measured).
    async fn examples_idle(
        &self,
        setup: &Setup,
        examples: &Examples<'_>,
        off: Option<Lever>,
        tag: &str,
        measure: bool,
    ) -> anyhow::Result<LeverRun> {
        let mut entries = Vec::new();
        let mut mirror_ns = None;
        for wasm in examples.wasm {
            let name = wasm
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .context("an example without a file name")?;
            let namespace = format!("{tag}-{name}");
            cluster::create_namespace(&self.client, &namespace).await?;
            if name == "configmap-mirror" {
                mirror_ns = Some(namespace.clone());
            }
            let mut entry = Entry::with_wasm(&name, wasm).namespace(&namespace);
            if examples.suspended {
                entry = entry.field(&setup.suspend_field());
            }
            entries.push(entry);
        }
        let namespace = mirror_ns.context("no configmap-mirror among the examples")?;
        let dir = self.logs.join(tag);
        let mut fleet = Fleet::start_host(setup, &dir, |metrics| {
            host_manifest(setup, true, &entries, metrics)
        })?;
        let configs = Api::<ConfigMap>::namespaced(self.client.clone(), &namespace);
        let secrets = Api::<Secret>::namespaced(self.client.clone(), &namespace);
        // Up: the mirror mirrors a first ConfigMap.
        self.mirror(&configs, &secrets, "warm-up", self.params.startup_timeout)
            .await
            .context("configmap-mirror's first mirror")?;
        if !measure {
            fleet.stop(Duration::from_secs(15))?;
            return Ok(LeverRun {
                fleet: "five examples (priming)".into(),
                off,
                idle: Sample::default(),
                apiserver_connections: 0,
                suspended_modules: 0,
                timers: TimerFigures::default(),
                cpu_seconds: f64::NAN,
                next_event_ms: f64::NAN,
                warm_event_ms: f64::NAN,
            });
        }
        let (idle, settled) = settle(&mut fleet, self.params.settle).await?;
        let apiserver_connections = fleet.connections_to(self.apiserver_port);
        let timeout = self.params.cycle_timeout;
        let next = self.mirror(&configs, &secrets, "next", timeout).await?;
        let warm = self.mirror(&configs, &secrets, "warm", timeout).await?;
        fleet.check_alive()?;
        fleet.stop(Duration::from_secs(15))?;
        let suspended = if examples.suspended { " suspended" } else { "" };
        Ok(LeverRun {
            fleet: format!("five examples{suspended}"),
            off,
            idle,
            apiserver_connections,
            suspended_modules: settled.suspended_modules,
            timers: settled.timers,
            cpu_seconds: settled.cpu_seconds,
            next_event_ms: next,
            warm_event_ms: warm,
        })
    }

    /// [`TICKERS`] store-readers (`wasm`), each in its own namespace, suspended.
    async fn tickers_idle(
        &self,
        setup: &Setup,
        wasm: &std::path::Path,
        off: Option<Lever>,
        tag: &str,
    ) -> anyhow::Result<LeverRun> {
        let mut entries = Vec::new();
        for i in 0..TICKERS {
            let namespace = format!("{tag}-{i}");
            cluster::create_namespace(&self.client, &namespace).await?;
            entries.push(
                Entry::with_wasm(&format!("store-reader-{i}"), wasm)
                    .namespace(&namespace)
                    .field(&setup.suspend_field()),
            );
        }
        let dir = self.logs.join(tag);
        let mut fleet = Fleet::start_host(setup, &dir, |metrics| {
            host_manifest(setup, true, &entries, metrics)
        })?;
        fleet
            .wait_for_modules(TICKERS, self.params.startup_timeout)
            .await?;
        let (idle, settled) = settle(&mut fleet, self.params.settle).await?;
        let apiserver_connections = fleet.connections_to(self.apiserver_port);
        fleet.check_alive()?;
        fleet.stop(Duration::from_secs(15))?;
        Ok(LeverRun {
            fleet: format!("{TICKERS} tickers suspended"),
            off,
            idle,
            apiserver_connections,
            suspended_modules: settled.suspended_modules,
            timers: settled.timers,
            cpu_seconds: settled.cpu_seconds,
            next_event_ms: f64::NAN,
            warm_event_ms: f64::NAN,
        })
    }

    /// Creates ConfigMap `name` for configmap-mirror and waits until its Secret is created:
    /// the time taken, in ms.
    async fn mirror(
        &self,
        configs: &Api<ConfigMap>,
        secrets: &Api<Secret>,
        name: &str,
        timeout: Duration,
    ) -> anyhow::Result<f64> {
        let list = secrets.list_metadata(&Default::default()).await?;
        let version = list.metadata.resource_version.unwrap_or_default();
        let mut events = secrets
            .watch(&WatchParams::default().timeout(290), &version)
            .await?
            .boxed();
        let started = Instant::now();
        configs
            .create(&PostParams::default(), &mirrored(name))
            .await
            .with_context(|| format!("creating ConfigMap {name}"))?;
        let seen = async {
            while let Some(event) = events.try_next().await? {
                if let WatchEvent::Added(secret) = event
                    && secret.metadata.name.as_deref() == Some(name)
                {
                    return anyhow::Ok(());
                }
            }
            anyhow::bail!("the Secret watch ended")
        };
        tokio::time::timeout(timeout, seen)
            .await
            .with_context(|| format!("Secret {name} not mirrored within {timeout:?}"))??;
        Ok(started.elapsed().as_secs_f64() * 1000.0)
    }

    /// N ring controllers in one host, as `variant`.
    async fn ring_idle(
        &self,
        setup: &Setup,
        variant: Variant,
        n: usize,
        off: Option<Lever>,
        tag: &str,
    ) -> anyhow::Result<LeverRun> {
        let p = &self.params;
        let links = self.ring_links(tag, n).await?;
        let first = format!("{tag}-0");
        let mut arrivals = cluster::watch_arrivals(&self.client, &format!("{tag}-{n}"));
        let mut fleet = Fleet::start(setup, variant, &links, &self.logs.join(tag))?;
        let mut nonce = 0;
        let mut cycle = async |timeout: Duration| {
            nonce += 1;
            let t0 = cluster::now_micros();
            cluster::write_nonce(&self.client, &first, RING_NAME, nonce).await?;
            let arrived = cluster::wait_for(&mut arrivals, RING_NAME, nonce, timeout).await?;
            anyhow::Ok(arrived.at_micros.saturating_sub(t0) as f64 / 1000.0)
        };
        cycle(p.startup_timeout).await?;
        for _ in 1..p.warmup {
            cycle(p.cycle_timeout).await?;
        }
        let (idle, settled) = settle(&mut fleet, p.settle).await?;
        let apiserver_connections = fleet.connections_to(self.apiserver_port);
        let next = cycle(p.cycle_timeout).await?;
        let warm = cycle(p.cycle_timeout).await?;
        fleet.check_alive()?;
        fleet.stop(Duration::from_secs(15))?;
        let suspended = if variant == Variant::WasmSuspend {
            " suspended"
        } else {
            ""
        };
        Ok(LeverRun {
            fleet: format!("ring N={n}{suspended}"),
            off,
            idle,
            apiserver_connections,
            suspended_modules: settled.suspended_modules,
            timers: settled.timers,
            cpu_seconds: settled.cpu_seconds,
            next_event_ms: next,
            warm_event_ms: warm,
        })
    }
}

/// The example modules of a launch, and whether they run with the suspend policy.
struct Examples<'a> {
    wasm: &'a [PathBuf],
    suspended: bool,
}

/// The host's metrics now.
fn scrape(fleet: &Fleet) -> anyhow::Result<HostMetrics> {
    fleet
        .host_metrics()?
        .context("a host fleet without a metrics endpoint")
}

/// What a launch did over its settle time.
struct Settled {
    suspended_modules: u64,
    timers: TimerFigures,
    cpu_seconds: f64,
}

/// Lets `fleet` settle for `settle`, then samples its idle memory: that, and what it did
/// meanwhile.
async fn settle(fleet: &mut Fleet, settle: Duration) -> anyhow::Result<(Sample, Settled)> {
    let before = scrape(fleet)?;
    let cpu_before = fleet.cpu_time()?;
    tokio::time::sleep(settle).await;
    let cpu = fleet.cpu_time()?.saturating_sub(cpu_before);
    let idle = fleet.idle_memory().await?;
    let after = scrape(fleet)?;
    Ok((
        idle,
        Settled {
            suspended_modules: after.suspended_modules,
            timers: TimerFigures::between(&before, &after),
            cpu_seconds: cpu.as_secs_f64(),
        },
    ))
}
