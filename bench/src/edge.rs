//! The **edge fleet's budget** (issue #44): the five examples ([`EXAMPLES`]; N instances,
//! kinds round-robin, each in its own namespace) under a memory limit, bisected as the ring's
//! ([`crate::budget`]). A cycle is one change to every instance, each answered by its
//! controller ([`crate::reactions`]): a limit holds when nothing is OOM-killed, every instance
//! answers every cycle's change within the cycle timeout, and each kind's event→reconcile
//! p99 stays within twice that kind's in the same variant without a limit (store-reader
//! answers on its one-second tick; a p99 over every kind would be its tick and hide the
//! others').

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use tokio::sync::mpsc::UnboundedReceiver;

use crate::audit;
use crate::budget::{Budget, bisect, in_group};
use crate::cgroup::Cgroup;
use crate::cluster::now_micros;
use crate::fleet::{Fleet, Variant, host_manifest};
use crate::mixed::{Builds, EXAMPLES, host_entries, kind_of, start_native};
use crate::reactions::{self, Seen};
use crate::workloads::{Bench, Params, RingRun, Started, ms};

impl Bench {
    /// Finds the memory budget of the edge fleet of `n` controllers as `variant` (native,
    /// wasm or wasm-suspend; see the module docs); `tag` makes its namespaces and groups
    /// unique. Applies the ConfigMapGenerator CRD first.
    ///
    /// # Errors
    /// If a build is missing, the CRD is refused or the unconstrained launch fails.
    pub async fn edge_budget(
        &self,
        variant: Variant,
        n: usize,
        builds: &Builds,
        p: &Params,
        tag: &str,
    ) -> anyhow::Result<Budget> {
        builds.require(&EXAMPLES)?;
        self.apply_generator_crd().await?;
        bisect("edge", variant, n, p, tag, async |tag, p, limit| {
            in_group(tag, limit, async |group| {
                self.edge_in(variant, n, builds, tag, p, group).await
            })
            .await
        })
        .await
    }

    /// One launch of the edge fleet in `cgroup`: start-up to the first cycle answered, the
    /// warm-up cycles, then [`Bench::settle_and_measure`]. In the returned launch, `ring_ms`
    /// holds each measured cycle's duration and `reconcile_ms` every instance's latency in
    /// every measured cycle.
    ///
    /// # Errors
    /// If a controller dies, an answer does not come within its timeout or the cluster
    /// refuses a request.
    async fn edge_in(
        &self,
        variant: Variant,
        n: usize,
        builds: &Builds,
        tag: &str,
        p: &Params,
        cgroup: &Cgroup,
    ) -> anyhow::Result<RingRun> {
        let namespaces: Vec<String> = (0..n).map(|i| format!("{tag}-{i}")).collect();
        self.create_namespaces(&EXAMPLES, &namespaces).await?;
        let mut seen = reactions::watch(&self.client, &format!("{tag}-"), &EXAMPLES);
        let dir = self.launch_dir(tag);
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let audit_from = audit::mark(&self.audit_log)?;
        let launched = Instant::now();
        let setup = &self.setup;
        let mut fleet = match variant {
            Variant::Native => {
                start_native(setup, &EXAMPLES, &namespaces, builds, &dir, Some(cgroup))?
            }
            Variant::Wasm | Variant::WasmSuspend => {
                let entries = host_entries(setup, &EXAMPLES, &namespaces, builds, variant);
                Fleet::start_host_in(
                    setup,
                    &dir,
                    |metrics| host_manifest(setup, true, &entries, metrics),
                    Some(cgroup),
                )?
            }
            other => bail!("the edge budget runs native, wasm and wasm-suspend, not {other:?}"),
        };

        let mut cycle = 0;
        self.edge_cycle(&mut seen, &namespaces, cycle, p.startup_timeout)
            .await
            .with_context(|| format!("{} edge N={n}: the first cycle", variant.label()))?;
        let startup_ms = launched.elapsed().as_secs_f64() * 1000.0;
        fleet.check_alive()?;
        for _ in 1..p.warmup {
            cycle += 1;
            self.edge_cycle(&mut seen, &namespaces, cycle, p.cycle_timeout)
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
                .edge_cycle(&mut seen, &namespaces, cycle, p.cycle_timeout)
                .await?;
            anyhow::Ok((ms(now_micros().saturating_sub(t0)), latencies))
        };
        self.settle_and_measure(fleet, started, p, Some(cgroup), measured_cycle)
            .await
    }

    /// Cycle `cycle`: one change to every instance (`namespaces[i]` runs kind `i mod 5`),
    /// then every answer within `timeout`; each instance's kind and latency in ms.
    async fn edge_cycle(
        &self,
        seen: &mut UnboundedReceiver<Seen>,
        namespaces: &[String],
        cycle: usize,
        timeout: Duration,
    ) -> anyhow::Result<Vec<(&'static str, f64)>> {
        let mut pending = HashMap::with_capacity(namespaces.len());
        let mut kinds = HashMap::with_capacity(namespaces.len());
        for (i, namespace) in namespaces.iter().enumerate() {
            let since = now_micros();
            let kind = kind_of(&EXAMPLES, i);
            let Some(reaction) = reactions::stimulate(&self.client, kind, namespace, cycle).await?
            else {
                continue;
            };
            pending.insert(namespace.clone(), (reaction, since));
            kinds.insert(namespace.as_str(), kind);
        }
        let answered = reactions::await_all(seen, pending, timeout)
            .await
            .with_context(|| format!("cycle {cycle}"))?;
        Ok(answered
            .into_iter()
            .filter_map(|(namespace, latency)| Some((*kinds.get(namespace.as_str())?, latency)))
            .collect())
    }
}
