//! Realistic fleets of distinct controllers: the **mixed** fleet, N controllers of every kind
//! this repository has (the five examples, the ring controller and twelve parity scenario
//! controllers, each kind a distinct native binary and a distinct module), and the small
//! **edge** fleet, the five examples alone. Each instance runs in its own namespace (the ring
//! controller copies Rings into it from a second one of its own, [`ring_source`]); each fleet
//! runs as native processes, as one native process linking every controller
//! (`bench/combined-native`), as modules in one host, and as modules suspended when idle, and
//! its idle memory is sampled after the settle time.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::Context as _;
use futures::{StreamExt as _, TryStreamExt as _};
use kube_wasm_e2e::kubeconfig_of;
use kube_wasm_e2e::manifest::Entry;
use serde::{Deserialize, Serialize};

use crate::cgroup::Cgroup;
use crate::cluster;
use crate::fleet::{Fleet, Setup, Variant, command_in, host_manifest};
use crate::memory::{self, Sample};
use crate::workloads::Bench;

/// The five examples: the edge fleet, and the first kinds of the mixed one.
pub const EXAMPLES: [&str; 5] = [
    "configmap-mirror",
    "configmap-generator",
    "finalizer-controller",
    "store-reader",
    "multi-watch",
];

/// Every kind of the mixed fleet: the examples, the ring controller, and the parity scenario
/// controllers that keep running (not `parity-bookmarks`, which ends after its watches).
pub const MIXED_KINDS: [&str; 18] = [
    "configmap-mirror",
    "configmap-generator",
    "finalizer-controller",
    "store-reader",
    "multi-watch",
    "ring-controller",
    "parity-conflict",
    "parity-create",
    "parity-events",
    "parity-finalizer",
    "parity-owners",
    "parity-paging",
    "parity-reflector",
    "parity-requeue",
    "parity-restart-controller",
    "parity-restart-reflector",
    "parity-update-ssa",
    "parity-wait",
];

/// The Go fleet's kind: `examples/go-configmap-mirror`, the client-go twin of
/// configmap-mirror (issue #43), built natively and as a reactor module by `scripts/bench.sh`.
pub const GO_KINDS: [&str; 1] = ["go-configmap-mirror"];

/// A fleet of distinct kinds whose memory budget is found ([`crate::fleet_budget`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KindsFleet {
    /// The five examples ([`EXAMPLES`]).
    Edge,
    /// Every kind of [`MIXED_KINDS`].
    Mixed,
    /// The Go controller alone ([`GO_KINDS`]).
    Go,
}

impl KindsFleet {
    /// Its name in budgets, tags and the report: `edge`, `mixed` or `go`.
    pub fn name(self) -> &'static str {
        match self {
            KindsFleet::Edge => "edge",
            KindsFleet::Mixed => "mixed",
            KindsFleet::Go => "go",
        }
    }

    /// Its kinds, instance `i` of kind `i mod len` ([`kind_of`]).
    pub fn kinds(self) -> &'static [&'static str] {
        match self {
            KindsFleet::Edge => &EXAMPLES,
            KindsFleet::Mixed => &MIXED_KINDS,
            KindsFleet::Go => &GO_KINDS,
        }
    }
}

/// The native binary linking every kind into one process (in the native build folder).
pub const COMBINED_NATIVE: &str = "combined-native";

/// Where the builds of every kind are: `<native_dir>/<kind>` and `<wasm_dir>/<kind>.wasm`,
/// and `<native_dir>/combined-native`.
#[derive(Debug, Clone)]
pub struct Builds {
    /// Release native binaries.
    pub native_dir: PathBuf,
    /// Release wasm32-wasip1 modules.
    pub wasm_dir: PathBuf,
}

impl Builds {
    /// Fails unless every kind of `kinds` is built, natively and as a module.
    ///
    /// # Errors
    /// Naming the first build missing.
    pub fn require(&self, kinds: &[&str]) -> anyhow::Result<()> {
        for kind in kinds {
            crate::workloads::require_file(&self.native_dir.join(kind), "a native build")?;
            crate::workloads::require_file(
                &self.wasm_dir.join(format!("{kind}.wasm")),
                "a module",
            )?;
        }
        Ok(())
    }
}

/// One launch of a fleet of distinct controllers.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MixedRun {
    /// `mixed` or `edge`.
    pub fleet: String,
    /// How it ran: native, combined-native, wasm or wasm-suspend.
    pub variant: Variant,
    /// Distinct kinds.
    pub kinds: usize,
    /// Controllers.
    pub instances: usize,
    /// Memory after the settle time (median of 3 samples 1 s apart).
    pub idle: Sample,
    /// Native only: each kind's mean idle PSS per process, in KiB.
    pub per_kind_kib: BTreeMap<String, u64>,
}

/// The kind of instance `i` of a fleet of `kinds`.
pub fn kind_of(kinds: &[&'static str], i: usize) -> &'static str {
    kinds[i % kinds.len()]
}

impl Bench {
    /// Runs a fleet of `instances` controllers of `kinds` (round-robin) natively, combined in
    /// one native process, in one host, and in one host with idle modules suspended; returns
    /// the four launches.
    ///
    /// # Errors
    /// If a build is missing or a launch fails.
    pub async fn mixed(
        &self,
        fleet: &str,
        kinds: &[&'static str],
        instances: usize,
        builds: &Builds,
        tag: &str,
    ) -> anyhow::Result<Vec<MixedRun>> {
        crate::workloads::require_file(
            &builds.native_dir.join(COMBINED_NATIVE),
            "the combined native build",
        )?;
        builds.require(kinds)?;
        let mut runs = Vec::new();
        let variants = [
            Variant::Native,
            Variant::CombinedNative,
            Variant::Wasm,
            Variant::WasmSuspend,
        ];
        for (launch, variant) in variants.into_iter().enumerate() {
            let tag = format!("{tag}-{launch}");
            eprintln!(
                "bench: {fleet} fleet, {instances} controllers of {} kinds, {} (namespaces {tag}-*)",
                kinds.len(),
                variant.label()
            );
            let run = self
                .mixed_once(fleet, kinds, instances, builds, variant, &tag)
                .await
                .with_context(|| format!("the {fleet} fleet, {}", variant.label()))?;
            eprintln!(
                "bench:   idle {:.1} MiB PSS",
                run.idle.pss_kib as f64 / 1024.0
            );
            runs.push(run);
        }
        Ok(runs)
    }

    /// Creates the namespaces of a fleet of `kinds`: instance `i`'s `namespaces[i]` and, for
    /// the ring controller, the namespace it copies Rings from ([`ring_source`]).
    ///
    /// # Errors
    /// If the apiserver refuses a namespace.
    pub async fn create_namespaces(
        &self,
        kinds: &[&'static str],
        namespaces: &[String],
    ) -> anyhow::Result<()> {
        let sources = namespaces
            .iter()
            .enumerate()
            .filter(|(i, _)| kind_of(kinds, *i) == "ring-controller")
            .map(|(_, namespace)| ring_source(namespace));
        let all: Vec<String> = namespaces.iter().cloned().chain(sources).collect();
        // Thousands of namespaces: a few dozen requests in flight, not one after another.
        futures::stream::iter(&all)
            .map(|namespace| cluster::create_namespace(&self.client, namespace))
            .buffer_unordered(32)
            .try_collect::<Vec<()>>()
            .await?;
        Ok(())
    }

    async fn mixed_once(
        &self,
        fleet: &str,
        kinds: &[&'static str],
        instances: usize,
        builds: &Builds,
        variant: Variant,
        tag: &str,
    ) -> anyhow::Result<MixedRun> {
        let dir = self.logs.join(tag);
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let namespaces: Vec<String> = (0..instances).map(|i| format!("{tag}-{i}")).collect();
        self.create_namespaces(kinds, &namespaces).await?;
        let mut fleet_processes = match variant {
            Variant::Native | Variant::CombinedNative => {
                let fleet = if variant == Variant::Native {
                    start_native(&self.setup, kinds, &namespaces, builds, &dir, None)?
                } else {
                    start_combined(&self.setup, kinds, &namespaces, builds, &dir)?
                };
                // No readiness signal is common to every kind: give each controller time to
                // start, list and watch (a second a controller on these cores, at least 20 s).
                let startup = Duration::from_secs((instances as u64).max(20));
                tokio::time::sleep(startup).await;
                fleet
            }
            _ => {
                let entries = host_entries(&self.setup, kinds, &namespaces, builds, variant);
                let mut fleet = Fleet::start_host(&self.setup, &dir, |metrics| {
                    host_manifest(&self.setup, true, &entries, metrics)
                })?;
                fleet
                    .wait_for_modules(instances, self.params.startup_timeout)
                    .await?;
                fleet
            }
        };
        tokio::time::sleep(self.params.settle).await;
        let idle = fleet_processes.idle_memory().await?;
        let mut per_kind: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        if variant == Variant::Native {
            for (i, pid) in fleet_processes.pids().into_iter().enumerate() {
                let sample = memory::of_process(pid)?;
                let entry = per_kind.entry(kind_of(kinds, i).to_owned()).or_default();
                entry.0 += sample.pss_kib;
                entry.1 += 1;
            }
        }
        fleet_processes.stop(Duration::from_secs(15))?;
        Ok(MixedRun {
            fleet: fleet.to_owned(),
            variant,
            kinds: kinds.len().min(instances),
            instances,
            idle,
            per_kind_kib: per_kind
                .into_iter()
                .map(|(kind, (sum, n))| (kind, sum / n.max(1)))
                .collect(),
        })
    }
}

/// The namespace the ring controller of instance namespace `namespace` copies Rings from
/// (`<namespace>-src`): it copies them into its own namespace. (Copying a namespace into
/// itself would never settle: each copy stamps the Ring anew, and the stamp is a change.)
pub fn ring_source(namespace: &str) -> String {
    format!("{namespace}-src")
}

/// The host's manifest entries of a fleet: instance `i`, of kind `i mod kinds`, named
/// `<kind>-<i>` in namespace `i`, suspended when idle as `variant` says (a Go kind with
/// `costFactor: 0`, as the porting guide advises: client-go's workqueue wakes its module every
/// 10 s, sooner than the default factor's break-even of a suspend and a resume).
pub fn host_entries(
    setup: &Setup,
    kinds: &[&'static str],
    namespaces: &[String],
    builds: &Builds,
    variant: Variant,
) -> Vec<Entry> {
    namespaces
        .iter()
        .enumerate()
        .map(|(i, namespace)| {
            let kind = kind_of(kinds, i);
            let wasm = builds.wasm_dir.join(format!("{kind}.wasm"));
            let mut entry = Entry::with_wasm(&format!("{kind}-{i}"), &wasm).namespace(namespace);
            for (key, value) in own_env(kind, namespace) {
                entry = entry.env(key, &value);
            }
            if variant == Variant::WasmSuspend {
                let cost_factor = GO_KINDS.contains(&kind).then_some(0);
                entry = entry.field(&setup.suspend_field_costing(cost_factor));
            }
            entry
        })
        .collect()
}

/// Starts one native process per namespace, instance `i` of kind `i mod kinds`, each with a
/// kubeconfig defaulting to its namespace, inside `cgroup` if given.
pub fn start_native(
    setup: &Setup,
    kinds: &[&'static str],
    namespaces: &[String],
    builds: &Builds,
    dir: &Path,
    cgroup: Option<&Cgroup>,
) -> anyhow::Result<Fleet> {
    let mut commands = Vec::with_capacity(namespaces.len());
    for (i, namespace) in namespaces.iter().enumerate() {
        let kind = kind_of(kinds, i);
        let mut command = command_in(cgroup, &builds.native_dir.join(kind));
        command
            .env(
                "KUBECONFIG",
                kubeconfig_of(&setup.kubeconfig, namespace, dir),
            )
            .envs(own_env(kind, namespace))
            .stdin(Stdio::null());
        commands.push((format!("{kind}-{i}"), command));
    }
    Fleet::start_processes(commands, dir)
}

/// Starts one `combined-native` process running instance `i` of kind `i mod kinds` in each
/// namespace, with the admin kubeconfig (each instance's client defaults to its namespace).
fn start_combined(
    setup: &Setup,
    kinds: &[&'static str],
    namespaces: &[String],
    builds: &Builds,
    dir: &Path,
) -> anyhow::Result<Fleet> {
    let mut command = Command::new(builds.native_dir.join(COMBINED_NATIVE));
    command
        .env("KUBECONFIG", &setup.kubeconfig)
        .args(combined_args(kinds, namespaces))
        .stdin(Stdio::null());
    Fleet::start_processes(vec![(COMBINED_NATIVE.to_owned(), command)], dir)
}

/// The environment variables of an instance of `kind` in `namespace`, however it runs: the
/// ring controller copies Rings from [`ring_source`] into its own namespace.
fn own_env(kind: &str, namespace: &str) -> Vec<(&'static str, String)> {
    match kind {
        "ring-controller" => vec![
            ("RING_SOURCE", ring_source(namespace)),
            ("RING_TARGET", namespace.to_owned()),
        ],
        _ => Vec::new(),
    }
}

/// The instances of a combined process: `KIND@NAMESPACE[,KEY=VALUE…]`, each with the
/// variables its native process gets.
fn combined_args(kinds: &[&'static str], namespaces: &[String]) -> Vec<String> {
    namespaces
        .iter()
        .enumerate()
        .map(|(i, namespace)| {
            let kind = kind_of(kinds, i);
            own_env(kind, namespace)
                .into_iter()
                .fold(format!("{kind}@{namespace}"), |arg, (key, value)| {
                    format!("{arg},{key}={value}")
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mixed_fleet_has_at_least_fifteen_distinct_kinds_round_robin() {
        let distinct: std::collections::BTreeSet<_> = MIXED_KINDS.iter().collect();
        assert_eq!(distinct.len(), MIXED_KINDS.len());
        assert!(MIXED_KINDS.len() >= 15);
        assert!(EXAMPLES.iter().all(|e| MIXED_KINDS.contains(e)));
        let first: Vec<_> = (0..100).map(|i| kind_of(&MIXED_KINDS, i)).collect();
        assert_eq!(first[0], first[18]);
        assert!(MIXED_KINDS.iter().all(|k| first.contains(k)));
    }

    #[test]
    fn a_go_kind_suspends_with_cost_factor_zero_and_a_rust_kind_with_the_hosts_default() {
        let setup = Setup::for_tests();
        let builds = Builds {
            native_dir: "/n".into(),
            wasm_dir: "/w".into(),
        };
        let kinds = ["configmap-mirror", GO_KINDS[0]];
        let namespaces = ["g-0".to_owned(), "g-1".to_owned()];
        let suspended = host_entries(&setup, &kinds, &namespaces, &builds, Variant::WasmSuspend);
        assert_eq!(
            suspended[0].fields,
            [r#"suspend: {idleAfter: "2s", betweenTimers: true}"#]
        );
        assert_eq!(
            suspended[1].fields,
            [r#"suspend: {idleAfter: "2s", betweenTimers: true, costFactor: 0}"#]
        );
        assert_eq!(suspended[1].name, "go-configmap-mirror-1");
        assert_eq!(suspended[1].wasm, Path::new("/w/go-configmap-mirror.wasm"));
        assert_eq!(suspended[1].namespace.as_deref(), Some("g-1"));
        let resident = host_entries(&setup, &kinds, &namespaces, &builds, Variant::Wasm);
        assert!(resident.iter().all(|e| e.fields.is_empty()), "{resident:?}");
        assert_eq!(KindsFleet::Go.kinds(), GO_KINDS);
        assert_eq!(KindsFleet::Go.name(), "go");
    }

    #[test]
    fn the_combined_process_gets_every_instance_and_the_ring_its_variables() {
        let namespaces: Vec<String> = (0..20).map(|i| format!("m-{i}")).collect();
        let args = combined_args(&MIXED_KINDS, &namespaces);
        assert_eq!(args.len(), 20);
        assert_eq!(args[0], "configmap-mirror@m-0");
        assert_eq!(
            args[5],
            "ring-controller@m-5,RING_SOURCE=m-5-src,RING_TARGET=m-5"
        );
        assert_eq!(args[18], "configmap-mirror@m-18");
    }
}
