//! `kube-wasm-soak`: the chaos soak. Many configmap-mirror modules under steady traffic in one
//! host, beside hostile modules, while kube-apiserver and etcd are restarted, connections to
//! the API server cut and the host SIGKILLed and started again; checks that nothing was lost,
//! the host's memory stayed bounded and no healthy module stalled longer than the bound.
//! Prints the report, writes it to `OUT/report.txt` and its figures to `OUT/report.json` (for
//! `kube-wasm-bench --soak-report`), exits 1 when a check fails.
//! `scripts/soak.sh` builds everything, starts a control plane and runs it.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::Parser;
use host_shim::fleet::units::parse_duration;
use kube_wasm_bench::soak::host::Hostile;
use kube_wasm_bench::soak::run::{Config, run};
use kube_wasm_bench::soak::schedule::ChaosKind;
use kube_wasm_bench::soak::trend::Tolerance;

fn duration(text: &str) -> Result<Duration, String> {
    parse_duration(text)
}

fn key_value(text: &str) -> Result<(String, String), String> {
    text.split_once('=')
        .filter(|(k, _)| !k.is_empty())
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .ok_or_else(|| format!("expected KEY=VALUE, not {text:?}"))
}

/// Chaos soak of the host shim against a real control plane: healthy modules under steady
/// traffic beside hostile ones while kube-apiserver and etcd restart, connections are cut and
/// the host is killed; checks nothing lost, memory bounded, no stall past the bound.
#[derive(Debug, Parser)]
#[command(name = "kube-wasm-soak", version)]
struct Cli {
    /// The cluster's kubeconfig (admin).
    #[arg(long)]
    kubeconfig: PathBuf,
    /// The control plane's folder (`scripts/control-plane.sh start DIR`), for its restarts.
    #[arg(long)]
    control_plane_dir: PathBuf,
    /// `scripts/control-plane.sh`.
    #[arg(long, default_value = "scripts/control-plane.sh")]
    control_plane_script: PathBuf,
    /// The host-shim binary.
    #[arg(long)]
    host_shim: PathBuf,
    /// The configmap-mirror module (`.wasm`).
    #[arg(long)]
    mirror_wasm: PathBuf,
    /// The hostile module (`.wasm`).
    #[arg(long)]
    hostile_wasm: PathBuf,
    /// Where the report, the manifest, the host's logs and its module cache go.
    #[arg(long, default_value = "target/soak")]
    out: PathBuf,
    /// How long the traffic and the chaos run (e.g. 10m, 90s).
    #[arg(long, default_value = "10m", value_parser = duration)]
    duration: Duration,
    /// Healthy configmap-mirror modules, each in its own namespace.
    #[arg(long, default_value_t = 20)]
    modules: usize,
    /// Source ConfigMaps per healthy module.
    #[arg(long, default_value_t = 3)]
    sources: usize,
    /// Changes per second over all sources (each a write of the driver).
    #[arg(long, default_value_t = 10.0)]
    rate: f64,
    /// Every this many changes of a source deletes it; its next change re-creates it (0:
    /// never delete).
    #[arg(long, default_value_t = 10)]
    delete_every: u64,
    /// The disruptions, taken in turn (comma-separated: apiserver, etcd, watches, host).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "apiserver,watches,etcd,host"
    )]
    chaos: Vec<ChaosKind>,
    /// One disruption every this long (the first one this long after the traffic starts, none
    /// in the last interval).
    #[arg(long, default_value = "40s", value_parser = duration)]
    chaos_every: Duration,
    /// The hostile modules, one per item (comma-separated): `HOSTILE_MODE`, or
    /// `HOSTILE_MODE/HOSTILE_FLOOD` (e.g. `flood/watches`); `none` for none.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "loop,oom,panic,garbage,flood/delays,flood/watches,flood/requests,flood/logs"
    )]
    hostile: Vec<String>,
    /// The hostile modules' memory cap.
    #[arg(long, default_value = "32Mi")]
    hostile_memory: String,
    /// More environment of every hostile module, `KEY=VALUE`; repeatable.
    #[arg(long = "hostile-env", value_parser = key_value)]
    hostile_env: Vec<(String, String)>,
    /// A top-level manifest line for the host (YAML, e.g. `entryDeadline: 2s`); repeatable.
    #[arg(long = "setting")]
    settings: Vec<String>,
    /// The longest a healthy module may leave a change waiting, API server downtime left out.
    #[arg(long, default_value = "30s", value_parser = duration)]
    stall_bound: Duration,
    /// Memory growth allowed within a host incarnation, in percent of its early median.
    #[arg(long, default_value_t = 10.0)]
    memory_tolerance: f64,
    /// Memory growth always allowed, in MiB.
    #[arg(long, default_value_t = 4)]
    memory_floor_mib: u64,
    /// The first this long of each host incarnation is left out of the memory trend.
    #[arg(long, default_value = "30s", value_parser = duration)]
    warmup: Duration,
    /// Between two memory samples of the host.
    #[arg(long, default_value = "2s", value_parser = duration)]
    sample_every: Duration,
    /// How long the mirrors get to mirror every source: after the host first starts, and
    /// after the traffic stops.
    #[arg(long, default_value = "120s", value_parser = duration)]
    converge_timeout: Duration,
}

#[tokio::main]
async fn main() -> anyhow::Result<ExitCode> {
    let cli = Cli::parse();
    let hostile = cli
        .hostile
        .iter()
        .filter(|h| h.as_str() != "none")
        .map(|h| h.parse::<Hostile>().map_err(anyhow::Error::msg))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let config = Config {
        kubeconfig: cli.kubeconfig,
        control_plane_dir: cli.control_plane_dir,
        control_plane_script: std::path::absolute(&cli.control_plane_script)?,
        host_shim: cli.host_shim,
        mirror_wasm: cli.mirror_wasm,
        hostile_wasm: cli.hostile_wasm,
        out: cli.out.clone(),
        duration: cli.duration,
        modules: cli.modules,
        sources: cli.sources,
        rate: cli.rate,
        delete_every: cli.delete_every,
        chaos: cli.chaos,
        chaos_every: cli.chaos_every,
        hostile,
        hostile_memory: cli.hostile_memory,
        hostile_env: cli.hostile_env,
        settings: cli.settings,
        stall_bound: cli.stall_bound,
        tolerance: Tolerance {
            percent: cli.memory_tolerance,
            floor_kib: cli.memory_floor_mib * 1024,
        },
        warmup: cli.warmup,
        sample_every: cli.sample_every,
        converge_timeout: cli.converge_timeout,
    };
    let report = run(&config).await?;
    let text = report.text();
    print!("{text}");
    let path = cli.out.join("report.txt");
    std::fs::write(&path, &text).with_context(|| format!("writing {}", path.display()))?;
    let json = cli.out.join("report.json");
    std::fs::write(&json, serde_json::to_vec_pretty(&report.summary())?)
        .with_context(|| format!("writing {}", json.display()))?;
    eprintln!("soak: wrote {} and {}", path.display(), json.display());
    Ok(if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
