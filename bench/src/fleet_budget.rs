//! The **budgets of the fleets of distinct kinds** (issue #44, [`KindsFleet`]): the edge fleet
//! (the five examples, [`crate::mixed::EXAMPLES`]) and the mixed fleet (every kind of
//! [`crate::mixed::MIXED_KINDS`]), N instances, kinds round-robin, each in its own namespace,
//! under a memory limit, bisected as the ring's ([`crate::budget`]). A cycle is one change to
//! every instance whose kind answers observably, each answered by its controller
//! ([`crate::reactions`]; the mixed fleet's kinds of [`crate::reactions::UNOBSERVED`] run
//! unstimulated): a limit holds when nothing is OOM-killed, every stimulated instance answers
//! every cycle's change within the cycle timeout, and each kind's event→reconcile p99 stays
//! within twice that kind's in the same variant without a limit (store-reader answers on its
//! one-second tick; a p99 over every kind would be its tick and hide the others').

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use tokio::sync::mpsc::UnboundedReceiver;

use crate::audit;
use crate::budget::{Budget, bisect, in_group};
use crate::cgroup::Cgroup;
use crate::cluster::now_micros;
use crate::fleet::{Fleet, Variant, host_manifest};
use crate::mixed::{Builds, KindsFleet, host_entries, kind_of, start_native};
use crate::reactions::{self, Seen};
use crate::workloads::{Bench, Params, RingRun, Started, ms};

/// At most this many launches prime the module cache before a fleet's budget
/// ([`Bench::prime_kinds`]).
const PRIME_LAUNCHES: usize = 3;

/// The names of the files in the module cache `dir` (none if it does not exist yet).
fn cache_files(dir: &std::path::Path) -> std::collections::BTreeSet<std::ffi::OsString> {
    std::fs::read_dir(dir)
        .map(|entries| entries.filter_map(|e| Some(e.ok()?.file_name())).collect())
        .unwrap_or_default()
}

impl Bench {
    /// Finds the memory budget of `fleet` with `n` controllers as `variant` (native, wasm or
    /// wasm-suspend; see the module docs); `tag` makes its namespaces and groups unique.
    /// Installs the CRDs its kinds reconcile first: the ConfigMapGenerator's, and for the mixed
    /// fleet the parity scenarios' (Widget, Team, Gate; the Ring's is the driver's own).
    ///
    /// # Errors
    /// If a build is missing, a CRD is refused or the unconstrained launch fails.
    pub async fn fleet_budget(
        &self,
        fleet: KindsFleet,
        variant: Variant,
        n: usize,
        builds: &Builds,
        p: &Params,
        tag: &str,
    ) -> anyhow::Result<Budget> {
        builds.require(fleet.kinds())?;
        self.apply_generator_crd().await?;
        if fleet == KindsFleet::Mixed {
            self.install_parity_crds().await?;
        }
        if variant != Variant::Native {
            let prime = format!("{tag}-prime");
            self.prime_kinds(fleet.kinds(), builds, &prime, p.startup_timeout)
                .await
                .with_context(|| format!("priming the host's module cache for {tag}"))?;
        }
        bisect(fleet.name(), variant, n, p, tag, async |tag, p, limit| {
            in_group(tag, limit, async |group| {
                self.fleet_in(fleet, variant, n, builds, tag, p, group)
                    .await
            })
            .await
        })
        .await
    }

    /// Runs one instance of every kind of `kinds` in one host, without a limit, until all are
    /// running — again, up to [`PRIME_LAUNCHES`] times, while a launch added files to the
    /// host's module cache (with `funcRefProfile` the first compiles an instrumented form and
    /// writes its profile, the next compiles the ordered form) — so that the cache holds the
    /// compiled form every later launch loads before a budget's first launch: that launch
    /// measures the peak the search starts from, and a compile's (about 1.2 GiB for the Go
    /// module) is not the fleet's.
    ///
    /// # Errors
    /// If a namespace is refused or the host does not run every module within `timeout`.
    async fn prime_kinds(
        &self,
        kinds: &[&'static str],
        builds: &Builds,
        tag: &str,
        timeout: Duration,
    ) -> anyhow::Result<()> {
        let setup = &self.setup;
        for launch in 0..PRIME_LAUNCHES {
            let tag = format!("{tag}{launch}");
            let cached = cache_files(&setup.module_cache);
            let namespaces: Vec<String> = (0..kinds.len()).map(|i| format!("{tag}-{i}")).collect();
            self.create_namespaces(kinds, &namespaces).await?;
            let dir = self.launch_dir(&tag);
            std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
            let entries = host_entries(setup, kinds, &namespaces, builds, Variant::Wasm);
            let mut host = Fleet::start_host(setup, &dir, |metrics| {
                host_manifest(setup, true, &entries, metrics)
            })?;
            host.wait_for_modules(kinds.len(), timeout).await?;
            host.stop(Duration::from_secs(15))?;
            if cache_files(&setup.module_cache) == cached {
                break;
            }
        }
        Ok(())
    }

    /// Installs the parity scenarios' CRDs and waits until they are established (their
    /// installer panics on a refusal: that panic is this error).
    ///
    /// # Errors
    /// If the apiserver refuses one or does not establish it within a minute.
    pub async fn install_parity_crds(&self) -> anyhow::Result<()> {
        let client = self.client.clone();
        tokio::spawn(async move { kube_wasm_parity::crds::install(&client).await })
            .await
            .map_err(|err| anyhow::anyhow!("installing the parity scenarios' CRDs: {err}"))
    }

    /// One launch of `fleet` in `cgroup`: start-up to the first cycle answered, the warm-up
    /// cycles, then [`Bench::settle_and_measure`]. In the returned launch, `ring_ms` holds each
    /// measured cycle's duration, `reconcile_ms` every stimulated instance's latency in every
    /// measured cycle and `reconcile_by_kind_ms` the same by kind.
    ///
    /// # Errors
    /// If a controller dies, an answer does not come within its timeout or the cluster
    /// refuses a request.
    #[expect(clippy::too_many_arguments, reason = "one launch's every choice")]
    async fn fleet_in(
        &self,
        fleet: KindsFleet,
        variant: Variant,
        n: usize,
        builds: &Builds,
        tag: &str,
        p: &Params,
        cgroup: &Cgroup,
    ) -> anyhow::Result<RingRun> {
        let kinds = fleet.kinds();
        let namespaces: Vec<String> = (0..n).map(|i| format!("{tag}-{i}")).collect();
        self.create_namespaces(kinds, &namespaces).await?;
        let mut seen = reactions::watch(&self.client, &format!("{tag}-"), kinds);
        let dir = self.launch_dir(tag);
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let audit_from = audit::mark(&self.audit_log)?;
        let launched = Instant::now();
        let setup = &self.setup;
        let mut processes = match variant {
            Variant::Native => start_native(setup, kinds, &namespaces, builds, &dir, Some(cgroup))?,
            Variant::Wasm | Variant::WasmSuspend => {
                let entries = host_entries(setup, kinds, &namespaces, builds, variant);
                Fleet::start_host_in(
                    setup,
                    &dir,
                    |metrics| host_manifest(setup, true, &entries, metrics),
                    Some(cgroup),
                )?
            }
            other => bail!(
                "the {} budget runs native, wasm and wasm-suspend, not {other:?}",
                fleet.name()
            ),
        };

        let mut cycle = 0;
        self.fleet_cycle(&mut seen, kinds, &namespaces, cycle, p.startup_timeout)
            .await
            .with_context(|| {
                format!(
                    "{} {} N={n}: the first cycle",
                    variant.label(),
                    fleet.name()
                )
            })?;
        let startup_ms = launched.elapsed().as_secs_f64() * 1000.0;
        processes.check_alive()?;
        for _ in 1..p.warmup {
            cycle += 1;
            self.fleet_cycle(&mut seen, kinds, &namespaces, cycle, p.cycle_timeout)
                .await?;
        }

        let started = Started {
            variant,
            n,
            run: 0,
            startup_ms,
            audit_from,
        };
        let measured_cycle = async || {
            cycle += 1;
            let t0 = now_micros();
            let latencies = self
                .fleet_cycle(&mut seen, kinds, &namespaces, cycle, p.cycle_timeout)
                .await?;
            anyhow::Ok((ms(now_micros().saturating_sub(t0)), latencies))
        };
        self.settle_and_measure(processes, started, p, Some(cgroup), measured_cycle)
            .await
    }

    /// Cycle `cycle`: one change to every instance whose kind answers observably
    /// (`namespaces[i]` runs kind `i mod kinds`; see [`reactions::stimulate`]), then every
    /// answer within `timeout`; each answering instance's kind and latency in ms.
    async fn fleet_cycle(
        &self,
        seen: &mut UnboundedReceiver<Seen>,
        kinds: &[&'static str],
        namespaces: &[String],
        cycle: usize,
        timeout: Duration,
    ) -> anyhow::Result<Vec<(&'static str, f64)>> {
        let mut pending = HashMap::with_capacity(namespaces.len());
        let mut kind_in = HashMap::with_capacity(namespaces.len());
        for (i, namespace) in namespaces.iter().enumerate() {
            let since = now_micros();
            let kind = kind_of(kinds, i);
            let Some(reaction) = reactions::stimulate(&self.client, kind, namespace, cycle).await?
            else {
                continue;
            };
            pending.insert(namespace.clone(), (reaction, since));
            kind_in.insert(namespace.as_str(), kind);
        }
        let answered = reactions::await_all(seen, pending, timeout)
            .await
            .with_context(|| format!("cycle {cycle}"))?;
        Ok(answered
            .into_iter()
            .filter_map(|(namespace, latency)| Some((*kind_in.get(namespace.as_str())?, latency)))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_files_are_named_and_none_before_the_folder_exists() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = dir.path().join("module-cache");
        assert!(cache_files(&cache).is_empty());
        std::fs::create_dir(&cache).expect("mkdir");
        std::fs::write(cache.join("a.cwasm"), b"").expect("write");
        let before = cache_files(&cache);
        assert_eq!(before.len(), 1);
        std::fs::write(cache.join("a.funcrefs"), b"").expect("write");
        assert_ne!(cache_files(&cache), before, "a new file is a change");
    }
}
