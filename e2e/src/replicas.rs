//! Host replicas sharing WasmControllers through membership Leases (`host-shim run
//! --controllers --lease-namespace`): starting one, and the intervals in which each ran each
//! module, read from the lines it logs (`module started on this replica` / `module stopped on
//! this replica`, each with `module=`, `replica=` and `at_unix_us=`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::{Program, env_path, wasm_controllers as wc};

/// One replica's run of one module, in wall-clock microseconds since the Unix epoch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interval {
    /// The replica.
    pub replica: String,
    /// When it started the module.
    pub start_us: u128,
    /// When the module had stopped there; `None`: it still runs (or the replica was killed).
    pub stop_us: Option<u128>,
}

/// How to start the replicas of one fleet: `host-shim run --controllers` with its membership
/// Leases in `lease_namespace`, running the WasmControllers of `namespaces` whose modules are
/// files of `modules` (`spec.path`).
#[derive(Debug, Clone)]
pub struct ReplicaLaunch {
    /// The host-shim binary.
    pub host_shim: PathBuf,
    /// The `--local-modules` folder.
    pub modules: PathBuf,
    /// How the replicas reach the cluster.
    pub kubeconfig: PathBuf,
    /// Where their Leases live.
    pub lease_namespace: String,
    /// The namespaces whose WasmControllers they run.
    pub namespaces: Vec<String>,
    /// Their shared cache of precompiled modules.
    pub cache: PathBuf,
    /// `--stop-timeout`, in seconds.
    pub stop_timeout_s: u32,
}

impl ReplicaLaunch {
    /// A launch with the test command's host shim, modules and kubeconfig
    /// (`KUBE_WASM_HOST_SHIM`, `KUBE_WASM_MODULES`, `KUBECONFIG`).
    pub fn from_env(
        lease_namespace: &str,
        namespaces: &[String],
        cache: &Path,
        stop_timeout_s: u32,
    ) -> Self {
        Self {
            host_shim: env_path("KUBE_WASM_HOST_SHIM"),
            modules: env_path("KUBE_WASM_MODULES"),
            kubeconfig: env_path("KUBECONFIG"),
            lease_namespace: lease_namespace.to_owned(),
            namespaces: namespaces.to_vec(),
            cache: cache.to_owned(),
            stop_timeout_s,
        }
    }

    /// The command that starts replica `name`.
    pub fn command(&self, name: &str) -> Command {
        let mut command = Command::new(&self.host_shim);
        command
            .args(["run", "--controllers", "--shared-watches", "false"])
            .args([
                "--host-name",
                name,
                "--lease-namespace",
                &self.lease_namespace,
            ])
            .args(["--stop-timeout", &self.stop_timeout_s.to_string()])
            .arg("--local-modules")
            .arg(&self.modules)
            .arg("--cache-dir")
            .arg(&self.cache)
            .arg("--kubeconfig")
            .arg(&self.kubeconfig);
        for ns in &self.namespaces {
            command.args(["--namespace", ns]);
        }
        command
    }

    /// Starts replica `name`, its output echoed.
    pub fn start(&self, name: &str) -> Program {
        Program::spawn(self.command(name), name)
    }
}

/// Which replica holds the WasmController `name` of each of `namespaces` (`status.host`), if
/// every one is Running and held.
pub async fn placement(
    client: &kube::Client,
    namespaces: &[String],
    name: &str,
) -> Option<BTreeMap<String, String>> {
    let mut placed = BTreeMap::new();
    for ns in namespaces {
        let object = wc::api(client, ns).get(name).await.ok()?;
        let status = object.data.get("status")?;
        if status["phase"] != "Running" {
            return None;
        }
        placed.insert(ns.clone(), status["host"].as_str()?.to_owned());
    }
    Some(placed)
}

/// The [`placement`] once every module runs on one of `members` and nothing moved for 3 s.
///
/// # Errors
/// If that does not happen within `timeout`.
pub async fn settled_on(
    client: &kube::Client,
    namespaces: &[String],
    name: &str,
    members: &BTreeSet<String>,
    timeout: Duration,
) -> anyhow::Result<BTreeMap<String, String>> {
    let deadline = Instant::now() + timeout;
    let mut stable: Option<(BTreeMap<String, String>, Instant)> = None;
    loop {
        match placement(client, namespaces, name).await {
            Some(current) if current.values().all(|host| members.contains(host)) => match &stable {
                Some((placed, since)) if *placed == current => {
                    if since.elapsed() >= Duration::from_secs(3) {
                        return Ok(current);
                    }
                }
                _ => stable = Some((current, Instant::now())),
            },
            _ => stable = None,
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "no settled placement on {members:?} within {timeout:?}"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// The value of `key=` in a log line's fields.
fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.split_whitespace()
        .find_map(|token| token.strip_prefix(key)?.strip_prefix('='))
}

/// Each module's intervals in `lines` (one replica's log), in order. A start without a stop
/// is an open interval.
pub fn intervals(lines: &[String]) -> BTreeMap<String, Vec<Interval>> {
    let mut by_module: BTreeMap<String, Vec<Interval>> = BTreeMap::new();
    for line in lines {
        let started = line.contains("module started on this replica");
        let stopped = line.contains("module stopped on this replica");
        if !started && !stopped {
            continue;
        }
        let (Some(module), Some(replica), Some(at)) = (
            field(line, "module"),
            field(line, "replica"),
            field(line, "at_unix_us").and_then(|v| v.parse::<u128>().ok()),
        ) else {
            continue;
        };
        let runs = by_module.entry(module.to_owned()).or_default();
        if started {
            runs.push(Interval {
                replica: replica.to_owned(),
                start_us: at,
                stop_us: None,
            });
        } else if let Some(open) = runs
            .iter_mut()
            .rev()
            .find(|i| i.replica == replica && i.stop_us.is_none())
        {
            open.stop_us = Some(at);
        }
    }
    by_module
}

/// Each module's intervals across replicas, from each replica's `(program, killed_at)`: an
/// interval still open ends at `killed_at` for a replica that was killed then, else at `now`.
pub fn merged_intervals<'a>(
    logs: impl IntoIterator<Item = (&'a Program, Option<u128>)>,
    now: u128,
) -> BTreeMap<String, Vec<Interval>> {
    let mut all: BTreeMap<String, Vec<Interval>> = BTreeMap::new();
    for (program, killed_at) in logs {
        for (module, mut runs) in intervals(&program.stderr.snapshot()) {
            for run in &mut runs {
                run.stop_us = run.stop_us.or(killed_at).or(Some(now));
            }
            all.entry(module).or_default().extend(runs);
        }
    }
    all
}

/// A module's handoff in its `runs`: when it last stopped on replica `from`, and when it
/// started next on replica `to` (microseconds); `None` if either did not happen.
pub fn handoff(runs: &[Interval], from: &str, to: &str) -> Option<(u128, u128)> {
    let stopped = runs
        .iter()
        .filter(|r| r.replica == from)
        .filter_map(|r| r.stop_us)
        .max()?;
    let started = runs
        .iter()
        .filter(|r| r.replica == to && r.start_us >= stopped)
        .map(|r| r.start_us)
        .min()?;
    Some((stopped, started))
}

/// The namespaces whose module `placed` (namespace → replica) puts on `replica`.
pub fn held_by(placed: &BTreeMap<String, String>, replica: &str) -> BTreeSet<String> {
    placed
        .iter()
        .filter(|(_, host)| *host == replica)
        .map(|(ns, _)| ns.clone())
        .collect()
}

/// Every pair of intervals of one module on two different replicas that overlap, described;
/// an open interval runs until `now_us`.
pub fn overlaps(by_module: &BTreeMap<String, Vec<Interval>>, now_us: u128) -> Vec<String> {
    let mut found = Vec::new();
    for (module, runs) in by_module {
        for (i, a) in runs.iter().enumerate() {
            for b in &runs[i + 1..] {
                if a.replica == b.replica {
                    continue;
                }
                let (a_end, b_end) = (a.stop_us.unwrap_or(now_us), b.stop_us.unwrap_or(now_us));
                if a.start_us < b_end && b.start_us < a_end {
                    found.push(format!("{module}: {a:?} overlaps {b:?}"));
                }
            }
        }
    }
    found
}

/// Now in microseconds since the Unix epoch.
pub fn now_us() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros())
}
