//! Host replicas sharing WasmControllers through membership Leases (`host-shim run
//! --controllers --lease-namespace`): starting one, and the intervals in which each ran each
//! module, read from the lines it logs (`module started on this replica` / `module stopped on
//! this replica`, each with `module=`, `replica=` and `at_unix_us=`).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use crate::{Program, env_path};

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

/// Starts replica `name` of a fleet whose membership Leases live in `lease_namespace`,
/// running the WasmControllers of `namespaces` with modules read from `KUBE_WASM_MODULES`
/// (`spec.path`), stop timeout `stop_timeout_s` seconds, precompiled modules in `cache`,
/// reaching the cluster through `kubeconfig`.
pub fn start_replica(
    name: &str,
    lease_namespace: &str,
    namespaces: &[String],
    cache: &Path,
    stop_timeout_s: u32,
    kubeconfig: &Path,
) -> Program {
    let mut command = Command::new(env_path("KUBE_WASM_HOST_SHIM"));
    command
        .args(["run", "--controllers", "--shared-watches", "false"])
        .args(["--host-name", name, "--lease-namespace", lease_namespace])
        .args(["--stop-timeout", &stop_timeout_s.to_string()])
        .arg("--local-modules")
        .arg(env_path("KUBE_WASM_MODULES"))
        .arg("--cache-dir")
        .arg(cache)
        .arg("--kubeconfig")
        .arg(kubeconfig);
    for ns in namespaces {
        command.args(["--namespace", ns]);
    }
    Program::spawn(command, name)
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
