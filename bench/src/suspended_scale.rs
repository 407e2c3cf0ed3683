//! **Suspended modules at scale** (issue #44): N modules of the mixed fleet's kinds
//! ([`MIXED_KINDS`], round-robin, each in its own namespace) in one host that suspends idle
//! modules, started together. Measured at each N: how long until the host runs them all and
//! until every one that can be is suspended; the host's memory then (PSS and its anonymous
//! part) and the snapshots on disk; and — to show that what the host does per event stays
//! proportional to the modules the event concerns, not to N — the event→reconcile latency
//! and the host's CPU time per event of the same few **probe** instances (the first
//! instances of the five examples, whose answers [`crate::reactions`] knows), each probe
//! cycle one change to each of them. The host's CPU while the fleet is left alone (timers of
//! N modules: store-reader ticks every second) is measured just before the probes, and that
//! background rate is taken out of the probes' CPU time.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use serde::{Deserialize, Serialize};

use crate::cluster::now_micros;
use crate::fleet::{Fleet, Variant, host_manifest};
use crate::memory::Sample;
use crate::mixed::{Builds, EXAMPLES, MIXED_KINDS, host_entries, kind_of};
use crate::reactions;
use crate::workloads::Bench;

/// One launch of N suspended modules.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuspendedScale {
    /// Modules in the host.
    pub n: usize,
    /// Distinct kinds among them.
    pub kinds: usize,
    /// Seconds from the host's start until it reported every module.
    pub running_secs: f64,
    /// Seconds from the host's start until `suspended` modules were suspended and that count
    /// held still for [`SETTLED`]; modules with a timer sooner than `idleAfter` (store-reader's
    /// one-second tick) stay resident.
    pub suspended_secs: f64,
    /// Modules suspended then.
    pub suspended: u64,
    /// The host's memory then.
    pub idle: Sample,
    /// The snapshots' total size on disk, in bytes.
    pub snapshot_bytes: u64,
    /// Upstream watches the host held then.
    pub upstream_watches: u64,
    /// The host's CPU time while the settled fleet was left alone for [`IDLE_WINDOW`], in
    /// ms per second.
    pub idle_cpu_ms_per_sec: f64,
    /// Probe instances, each changed once a cycle.
    pub probes: usize,
    /// Every probe's event→reconcile latency in every cycle, in ms, by kind.
    pub latency_by_kind_ms: BTreeMap<String, Vec<f64>>,
    /// The host's CPU time over the probe cycles less the idle rate over as long, divided by
    /// the changes made, in ms (0 if the idle rate covers it).
    pub cpu_ms_per_event: f64,
}

impl SuspendedScale {
    /// Every probe latency, in ms.
    pub fn latencies(&self) -> Vec<f64> {
        self.latency_by_kind_ms
            .values()
            .flatten()
            .copied()
            .collect()
    }
}

/// How long the settled fleet is left alone to measure the host's idle CPU.
pub const IDLE_WINDOW: Duration = Duration::from_secs(10);

/// How long the count of suspended modules must hold still to count as settled.
pub const SETTLED: Duration = Duration::from_secs(20);

/// The first `probes` instances of N whose kind is one of the five examples: the same
/// instances (indices) at every N ≥ the largest of them.
pub fn probe_instances(n: usize, probes: usize) -> Vec<usize> {
    (0..n)
        .filter(|&i| EXAMPLES.contains(&kind_of(&MIXED_KINDS, i)))
        .take(probes)
        .collect()
}

impl Bench {
    /// Runs N modules of the mixed kinds in one host with suspension (see the module docs):
    /// `(probes, cycles)`: `probes` example instances are changed in each of `cycles` probe
    /// cycles once the fleet has settled. Installs the CRDs its kinds reconcile first (the
    /// ConfigMapGenerator's and the parity scenarios').
    ///
    /// # Errors
    /// If a build is missing, a CRD is refused, the host dies, the fleet does not start, or settle, within
    /// `timeout` each, or a probe's answer does not come within the cycle timeout.
    pub async fn suspended_scale(
        &self,
        n: usize,
        builds: &Builds,
        (probes, cycles): (usize, usize),
        timeout: Duration,
        tag: &str,
    ) -> anyhow::Result<SuspendedScale> {
        builds.require(&MIXED_KINDS)?;
        self.apply_generator_crd().await?;
        self.install_parity_crds().await?;
        let namespaces: Vec<String> = (0..n).map(|i| format!("{tag}-{i}")).collect();
        self.create_namespaces(&MIXED_KINDS, &namespaces).await?;
        let mut seen = reactions::watch(&self.client, &format!("{tag}-"), &EXAMPLES);
        let dir = self.launch_dir(tag);
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let entries = host_entries(
            &self.setup,
            &MIXED_KINDS,
            &namespaces,
            builds,
            Variant::WasmSuspend,
        );
        let started = Instant::now();
        let mut fleet = Fleet::start_host(&self.setup, &dir, |metrics| {
            host_manifest(&self.setup, true, &entries, metrics)
        })?;
        fleet.wait_for_modules(n, timeout).await?;
        let running_secs = started.elapsed().as_secs_f64();
        let suspended = settle_suspended(&mut fleet, timeout).await?;
        let suspended_secs = started.elapsed().saturating_sub(SETTLED).as_secs_f64();
        let idle = fleet.memory()?;
        let metrics = scrape(&fleet, 5)
            .await
            .context("the host's metrics, once settled")?;

        let idle_from = fleet.cpu_time()?;
        tokio::time::sleep(IDLE_WINDOW).await;
        let idle_cpu_ms_per_sec = fleet.cpu_time()?.saturating_sub(idle_from).as_secs_f64()
            * 1000.0
            / IDLE_WINDOW.as_secs_f64();

        let probed = probe_instances(n, probes);
        let cpu_before = fleet.cpu_time()?;
        let probing = Instant::now();
        let mut latency_by_kind_ms: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        for cycle in 0..cycles {
            let mut pending = HashMap::with_capacity(probed.len());
            let mut kind_in = HashMap::with_capacity(probed.len());
            for &i in &probed {
                let since = now_micros();
                let kind = kind_of(&MIXED_KINDS, i);
                let reaction = reactions::stimulate(&self.client, kind, &namespaces[i], cycle)
                    .await?
                    .context("a probe is an example, which answers")?;
                pending.insert(namespaces[i].clone(), (reaction, since));
                kind_in.insert(namespaces[i].as_str(), kind);
            }
            let answered = reactions::await_all(&mut seen, pending, self.params.cycle_timeout)
                .await
                .with_context(|| format!("N = {n}, probe cycle {cycle}"))?;
            for (namespace, ms) in answered {
                let kind = kind_in
                    .get(namespace.as_str())
                    .copied()
                    .unwrap_or("unknown");
                latency_by_kind_ms
                    .entry(kind.to_owned())
                    .or_default()
                    .push(ms);
            }
        }
        let probe_cpu_ms = fleet.cpu_time()?.saturating_sub(cpu_before).as_secs_f64() * 1000.0;
        let background_ms = idle_cpu_ms_per_sec * probing.elapsed().as_secs_f64();
        fleet.check_alive()?;
        fleet.stop(Duration::from_secs(30))?;
        let events = (probed.len() * cycles).max(1);
        Ok(SuspendedScale {
            n,
            kinds: MIXED_KINDS.len().min(n),
            running_secs,
            suspended_secs,
            suspended,
            idle,
            snapshot_bytes: metrics.snapshot_bytes,
            upstream_watches: metrics.upstream_watches,
            idle_cpu_ms_per_sec,
            probes: probed.len(),
            latency_by_kind_ms,
            cpu_ms_per_event: (probe_cpu_ms - background_ms).max(0.0) / events as f64,
        })
    }
}

/// Waits until the host's count of suspended modules has held still for [`SETTLED`]; that
/// count. Not all modules can be suspended (a timer sooner than `idleAfter` keeps one
/// resident), so the count holding still, not reaching N, is the signal.
///
/// # Errors
/// If the host dies or the count still moves after `timeout`.
async fn settle_suspended(fleet: &mut Fleet, timeout: Duration) -> anyhow::Result<u64> {
    let deadline = Instant::now() + timeout;
    let mut last = (u64::MAX, Instant::now());
    loop {
        fleet.check_alive()?;
        // A host busy with thousands of modules may not answer a scrape in time: try again.
        let Ok(Some(metrics)) = fleet.host_metrics() else {
            anyhow::ensure!(
                Instant::now() < deadline,
                "the host's metrics did not answer within {timeout:?}"
            );
            tokio::time::sleep(Duration::from_secs(1)).await;
            continue;
        };
        let now = metrics.suspended_modules;
        if now != last.0 {
            last = (now, Instant::now());
        } else if now > 0 && last.1.elapsed() >= SETTLED {
            return Ok(now);
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "the suspended modules did not settle within {timeout:?} (last {now})"
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// The host's metrics, trying up to `attempts` times a second apart (a host busy with
/// thousands of modules may not answer one scrape within its timeout).
///
/// # Errors
/// The last attempt's error, if none answered.
async fn scrape(fleet: &Fleet, attempts: usize) -> anyhow::Result<crate::fleet::HostMetrics> {
    let mut last = anyhow::anyhow!("no attempt");
    for _ in 0..attempts.max(1) {
        match fleet.host_metrics() {
            Ok(Some(metrics)) => return Ok(metrics),
            Ok(None) => anyhow::bail!("not a host"),
            Err(err) => last = err,
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    Err(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probes_are_the_first_example_instances_and_the_same_at_every_n() {
        let at_100 = probe_instances(100, 20);
        assert_eq!(at_100.len(), 20);
        assert!(
            at_100
                .iter()
                .all(|&i| EXAMPLES.contains(&kind_of(&MIXED_KINDS, i)))
        );
        assert_eq!(&at_100[..6], [0, 1, 2, 3, 4, 18]);
        assert_eq!(probe_instances(10_000, 20), at_100);
        // Fewer instances than probes asked: every example instance there is.
        assert_eq!(probe_instances(3, 20), [0, 1, 2]);
    }
}
