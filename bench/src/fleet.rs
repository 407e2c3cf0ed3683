//! The controllers of one launch, in one of the [`Variant`]s: N native processes, or N modules
//! in one host-shim process. Starting, liveness, memory, the host's metrics, stopping.

use std::fs::File;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use kube_wasm_e2e::manifest::{Entry, quote, render};
use kube_wasm_e2e::metrics::{fetch, free_local_addr};
use kube_wasm_e2e::sockets::established_to;
use serde::{Deserialize, Serialize};

use crate::cgroup::Cgroup;
use crate::memory::{self, Sample};

/// How the controllers run. Every variant runs the same controller source.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum Variant {
    /// One native kube-rs 5.0 process per controller.
    Native,
    /// All controllers as modules in one host shim, shared watches on (the default).
    Wasm,
    /// The same with shared watches off (`sharedWatches: false`).
    WasmUnshared,
    /// The same as `wasm` with every module suspended to disk when idle (manifest
    /// `suspend: {idleAfter: …}`); only where the host's manifest accepts it.
    WasmSuspend,
    /// Every controller linked into one native kube-rs 5.0 process, one task each, sharing one
    /// connection pool: no isolation (`bench/combined-native`). Fleets of distinct
    /// controllers only, so not one of [`Variant::ALL`] nor a `--variants` value.
    #[value(skip)]
    CombinedNative,
}

impl Variant {
    /// Every variant, in report order.
    pub const ALL: [Variant; 4] = [
        Variant::Native,
        Variant::Wasm,
        Variant::WasmUnshared,
        Variant::WasmSuspend,
    ];

    /// The variant's name in the report and on the command line.
    pub fn label(self) -> &'static str {
        match self {
            Variant::Native => "native",
            Variant::Wasm => "wasm",
            Variant::WasmUnshared => "wasm-unshared",
            Variant::WasmSuspend => "wasm-suspend",
            Variant::CombinedNative => "combined-native",
        }
    }

    /// One line saying what it is.
    pub fn description(self) -> &'static str {
        match self {
            Variant::Native => "one native kube-rs 5.0 process per controller",
            Variant::Wasm => "all controllers as modules in one host shim, shared watches on",
            Variant::WasmUnshared => "all controllers in one host shim, shared watches off",
            Variant::WasmSuspend => {
                "all controllers in one host shim, shared watches on, idle modules suspended to disk"
            }
            Variant::CombinedNative => {
                "all controllers linked into one native kube-rs 5.0 process, no isolation"
            }
        }
    }
}

/// What a launch needs from the build and the cluster.
#[derive(Debug, Clone)]
pub struct Setup {
    /// The release `host-shim` binary.
    pub host_shim: PathBuf,
    /// The native release build of `ring-controller`.
    pub ring_native: PathBuf,
    /// The wasm32-wasip1 release build of `ring-controller`.
    pub ring_wasm: PathBuf,
    /// The cluster's kubeconfig (an admin's).
    pub kubeconfig: PathBuf,
    /// The host's cache folder of precompiled modules, shared by every launch.
    pub module_cache: PathBuf,
    /// The `idleAfter` of the suspend variant's modules, e.g. `2s`.
    pub suspend_idle_after: String,
    /// Whether the host releases the fiber and shadow stacks of idle modules (the manifest's
    /// `releaseIdleStacks`, on in the host by default).
    pub release_idle_stacks: bool,
    /// Whether the host compiles modules in a child process (the manifest's
    /// `compileInChild`, on in the host by default).
    pub compile_in_child: bool,
    /// Whether modules' requests and watches share HTTP/2 connections (the manifest's
    /// `http2`, on in the host by default).
    pub http2: bool,
    /// Whether suspended modules are suspended between their timers and resumed ahead of
    /// them (a module's `suspend.betweenTimers`, on in the host by default).
    pub suspend_between_timers: bool,
    /// Whether shared watches release the history every live watch has taken after a few
    /// seconds (the manifest's `releaseReadHistory`, on in the host by default).
    pub release_read_history: bool,
    /// Whether modules' func refs are profiled and ordered (the manifest's `funcRefProfile`,
    /// on in the host by default).
    pub func_ref_profile: bool,
    /// Whether idle modules with a suspend policy are suspended at once while the host's
    /// memory cgroup is nearly at its limit (the manifest's `suspendUnderPressure`, on in the
    /// host by default).
    pub suspend_under_pressure: bool,
}

impl Setup {
    /// The manifest field of a suspended module: `suspend: {idleAfter: …, betweenTimers: …}`.
    pub fn suspend_field(&self) -> String {
        self.suspend_field_costing(None)
    }

    /// [`Setup::suspend_field`] with `costFactor: <cost_factor>` when given (the host's
    /// default otherwise).
    pub fn suspend_field_costing(&self, cost_factor: Option<u32>) -> String {
        let cost = cost_factor.map_or(String::new(), |c| format!(", costFactor: {c}"));
        format!(
            "suspend: {{idleAfter: {}, betweenTimers: {}{cost}}}",
            quote(&self.suspend_idle_after),
            self.suspend_between_timers
        )
    }
}

#[cfg(test)]
impl Setup {
    /// Paths that are not there, `idleAfter: 2s`, and every lever on.
    pub(crate) fn for_tests() -> Self {
        Setup {
            host_shim: "/h".into(),
            ring_native: "/n".into(),
            ring_wasm: "/r.wasm".into(),
            kubeconfig: "/k".into(),
            module_cache: "/c".into(),
            suspend_idle_after: "2s".into(),
            suspend_between_timers: true,
            release_read_history: true,
            func_ref_profile: true,
            suspend_under_pressure: true,
            release_idle_stacks: true,
            compile_in_child: true,
            http2: true,
        }
    }
}

/// One ring controller: it copies Rings from `source` to `target`.
#[derive(Debug, Clone)]
pub struct Link {
    /// The namespace it watches.
    pub source: String,
    /// The namespace it writes.
    pub target: String,
    /// MiB of memory it allocates and holds (`RING_BALLAST_MIB`; 0 for none).
    pub ballast_mib: u64,
}

/// The running controllers of one launch. Dropping it kills them.
pub struct Fleet {
    children: Vec<Child>,
    metrics_addr: Option<SocketAddr>,
}

fn log_file(dir: &Path, name: &str) -> anyhow::Result<File> {
    let path = dir.join(name);
    File::create(&path).with_context(|| format!("creating {}", path.display()))
}

/// A command running `program`, inside `cgroup` if given.
pub(crate) fn command_in(cgroup: Option<&Cgroup>, program: &Path) -> Command {
    match cgroup {
        Some(group) => group.command(program),
        None => Command::new(program),
    }
}

/// The host manifest of a launch: one module per link, named `ring-<i>`.
pub fn manifest(setup: &Setup, variant: Variant, links: &[Link], metrics: SocketAddr) -> String {
    let entries: Vec<Entry> = links
        .iter()
        .enumerate()
        .map(|(i, link)| ring_entry(setup, variant, i, link, &setup.ring_wasm))
        .collect();
    host_manifest(setup, variant != Variant::WasmUnshared, &entries, metrics)
}

/// The manifest entry of ring controller `i` (named `ring-<i>`) serving `link` as `variant`,
/// from the module file `wasm`.
pub fn ring_entry(setup: &Setup, variant: Variant, i: usize, link: &Link, wasm: &Path) -> Entry {
    let mut entry = Entry::with_wasm(&format!("ring-{i}"), wasm)
        .namespace(&link.source)
        .env("RING_SOURCE", &link.source)
        .env("RING_TARGET", &link.target);
    if link.ballast_mib > 0 {
        entry = entry.env("RING_BALLAST_MIB", &link.ballast_mib.to_string());
    }
    if variant == Variant::WasmSuspend {
        entry = entry.field(&setup.suspend_field());
    }
    entry
}

/// The host manifest of `entries`, with the host settings of `setup`.
pub fn host_manifest(
    setup: &Setup,
    shared_watches: bool,
    entries: &[Entry],
    metrics: SocketAddr,
) -> String {
    let settings = format!(
        "sharedWatches: {shared_watches}\nreleaseReadHistory: {}\nreleaseIdleStacks: {}\nfuncRefProfile: {}\nsuspendUnderPressure: {}\ncompileInChild: {}\nhttp2: {}\nmetricsAddr: {}",
        setup.release_read_history,
        setup.release_idle_stacks,
        setup.func_ref_profile,
        setup.suspend_under_pressure,
        setup.compile_in_child,
        setup.http2,
        quote(&metrics.to_string()),
    );
    render(&setup.module_cache.to_string_lossy(), &settings, entries)
}

impl Fleet {
    /// Starts the controllers of `links` as `variant`, with their output in `dir`.
    ///
    /// # Errors
    /// If a process cannot be started or a file written.
    pub fn start(
        setup: &Setup,
        variant: Variant,
        links: &[Link],
        dir: &Path,
    ) -> anyhow::Result<Self> {
        Self::start_in(setup, variant, links, dir, None)
    }

    /// [`Fleet::start`], every process inside `cgroup` if given.
    ///
    /// # Errors
    /// If a process cannot be started or a file written.
    pub fn start_in(
        setup: &Setup,
        variant: Variant,
        links: &[Link],
        dir: &Path,
        cgroup: Option<&Cgroup>,
    ) -> anyhow::Result<Self> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        if variant == Variant::Native {
            let mut children = Vec::with_capacity(links.len());
            for (i, link) in links.iter().enumerate() {
                let child = command_in(cgroup, &setup.ring_native)
                    .env("KUBECONFIG", &setup.kubeconfig)
                    .env("RING_SOURCE", &link.source)
                    .env("RING_TARGET", &link.target)
                    .env("RING_BALLAST_MIB", link.ballast_mib.to_string())
                    .stdin(Stdio::null())
                    .stdout(log_file(dir, &format!("ring-{i}.out"))?)
                    .stderr(log_file(dir, &format!("ring-{i}.err"))?)
                    .spawn()
                    .with_context(|| format!("starting {}", setup.ring_native.display()))?;
                children.push(child);
            }
            return Ok(Self {
                children,
                metrics_addr: None,
            });
        }
        Self::start_host_in(
            setup,
            dir,
            |metrics| manifest(setup, variant, links, metrics),
            cgroup,
        )
    }

    /// Starts native processes, each `(name, command)` with its stdout and stderr in
    /// `<dir>/<name>.out` and `.err`.
    ///
    /// # Errors
    /// If a process cannot be started or a log file made.
    pub fn start_processes(commands: Vec<(String, Command)>, dir: &Path) -> anyhow::Result<Self> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let mut children = Vec::with_capacity(commands.len());
        for (name, mut command) in commands {
            let child = command
                .stdout(log_file(dir, &format!("{name}.out"))?)
                .stderr(log_file(dir, &format!("{name}.err"))?)
                .spawn()
                .with_context(|| format!("starting {name}"))?;
            children.push(child);
        }
        Ok(Self {
            children,
            metrics_addr: None,
        })
    }

    /// Starts one host running the manifest `manifest` makes for a metrics address, with its
    /// output in `dir` (which exists).
    ///
    /// # Errors
    /// If the host cannot be started or a file written.
    pub fn start_host(
        setup: &Setup,
        dir: &Path,
        manifest: impl FnOnce(SocketAddr) -> String,
    ) -> anyhow::Result<Self> {
        Self::start_host_in(setup, dir, manifest, None)
    }

    /// [`Fleet::start_host`], the host inside `cgroup` if given.
    ///
    /// # Errors
    /// If the host cannot be started or a file written.
    pub fn start_host_in(
        setup: &Setup,
        dir: &Path,
        manifest: impl FnOnce(SocketAddr) -> String,
        cgroup: Option<&Cgroup>,
    ) -> anyhow::Result<Self> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let metrics = free_local_addr().context("finding a free loopback port")?;
        let path = dir.join("host.yaml");
        std::fs::write(&path, manifest(metrics))
            .with_context(|| format!("writing {}", path.display()))?;
        let child = command_in(cgroup, &setup.host_shim)
            .arg("run")
            .arg("--kubeconfig")
            .arg(&setup.kubeconfig)
            .arg("--manifest")
            .arg(&path)
            .stdin(Stdio::null())
            .stdout(log_file(dir, "host.out")?)
            .stderr(log_file(dir, "host.err")?)
            .spawn()
            .with_context(|| format!("starting {}", setup.host_shim.display()))?;
        Ok(Self {
            children: vec![child],
            metrics_addr: Some(metrics),
        })
    }

    /// The process ids: N native controllers, or the one host.
    pub fn pids(&self) -> Vec<u32> {
        self.children.iter().map(Child::id).collect()
    }

    /// Waits until the host reports `n` modules (one series of module memory each).
    ///
    /// # Errors
    /// If a process exited, or fewer were reported within `timeout`.
    pub async fn wait_for_modules(&mut self, n: usize, timeout: Duration) -> anyhow::Result<()> {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            self.check_alive()?;
            let reported = self.host_metrics().ok().flatten().map_or(0, |m| m.modules);
            if reported >= n as u64 {
                return Ok(());
            }
            anyhow::ensure!(
                std::time::Instant::now() < deadline,
                "the host reported {reported} of {n} modules within {timeout:?}"
            );
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    /// The CPU time (user + system) the fleet's processes used so far.
    ///
    /// # Errors
    /// If a process's `/proc/<pid>/stat` cannot be read.
    pub fn cpu_time(&self) -> anyhow::Result<Duration> {
        crate::cpu::of_processes(&self.pids())
    }

    /// Fails if any process has exited.
    ///
    /// # Errors
    /// Naming the first process that exited and its status.
    pub fn check_alive(&mut self) -> anyhow::Result<()> {
        for child in &mut self.children {
            if let Some(status) = child.try_wait()? {
                bail!("process {} exited early: {status}", child.id());
            }
        }
        Ok(())
    }

    /// Established TCP connections of its processes to the apiserver's `port`, now (0 for a
    /// process already gone).
    pub fn connections_to(&self, port: u16) -> usize {
        self.pids()
            .into_iter()
            .map(|pid| established_to(pid, port).unwrap_or(0))
            .sum()
    }

    /// The summed memory of its processes now.
    ///
    /// # Errors
    /// If a process is gone.
    pub fn memory(&self) -> anyhow::Result<Sample> {
        memory::of_processes(&self.pids())
    }

    /// The median ([`memory::median`]) of three memory samples 1 s apart, once every process
    /// is found alive.
    ///
    /// # Errors
    /// If a process exited.
    pub async fn idle_memory(&mut self) -> anyhow::Result<Sample> {
        self.memory_median(3).await
    }

    /// The median of `samples` samples of [`Fleet::memory`], one a second: 11 span a Go
    /// module's 10-second timers (client-go's delaying queue), each of which resumes a
    /// suspended module for a moment.
    ///
    /// # Errors
    /// If a controller died or `/proc` cannot be read.
    pub async fn memory_median(&mut self, samples: usize) -> anyhow::Result<Sample> {
        self.check_alive()?;
        let mut taken = Vec::with_capacity(samples);
        for i in 0..samples.max(1) {
            if i > 0 {
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            taken.push(self.memory()?);
        }
        Ok(memory::median(&taken))
    }

    /// The host's metrics now (`None` for native controllers).
    ///
    /// # Errors
    /// If the host's metrics endpoint does not answer.
    pub fn host_metrics(&self) -> anyhow::Result<Option<HostMetrics>> {
        let Some(addr) = self.metrics_addr else {
            return Ok(None);
        };
        let text = fetch(addr)?;
        Ok(Some(HostMetrics::parse(&text)))
    }

    /// Stops the controllers: SIGTERM, up to `grace` to exit, then SIGKILL.
    ///
    /// # Errors
    /// If `kill` cannot be run.
    pub fn stop(mut self, grace: Duration) -> anyhow::Result<()> {
        let pids: Vec<String> = self.pids().iter().map(u32::to_string).collect();
        let _ = Command::new("kill")
            .arg("-TERM")
            .args(&pids)
            .stderr(Stdio::null())
            .status()
            .context("running kill")?;
        let deadline = Instant::now() + grace;
        for child in &mut self.children {
            loop {
                if child.try_wait()?.is_some() {
                    break;
                }
                if Instant::now() > deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        self.children.clear();
        Ok(())
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// What the bench reads from the host's metrics endpoint.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct HostMetrics {
    /// Modules reported (series of `kube_wasm_module_memory_bytes`).
    pub modules: u64,
    /// Sum of the modules' linear memory sizes, in bytes.
    pub linear_memory_bytes: u64,
    /// Upstream watches open (`kube_wasm_upstream_watches`).
    pub upstream_watches: u64,
    /// Shared upstream LIST+WATCHes (`kube_wasm_shared_watches`).
    pub shared_watches: u64,
    /// Modules in state `suspended`.
    pub suspended_modules: u64,
    /// Resumes from disk so far (`kube_wasm_module_resume_duration_seconds_count`).
    pub resumes: u64,
    /// Their total time, in seconds (`…_sum`).
    pub resume_seconds: f64,
    /// Suspends to disk so far (`kube_wasm_module_suspend_duration_seconds_count`).
    pub suspends: u64,
    /// Their total time, in seconds (`…_sum`).
    pub suspend_seconds: f64,
    /// Snapshot files' total size, in bytes (`kube_wasm_module_snapshot_bytes`).
    pub snapshot_bytes: u64,
    /// Timers delivered so far (`kube_wasm_timer_lateness_seconds_count`).
    pub timers: u64,
    /// Their total lateness, in seconds (`…_sum`).
    pub timer_lateness_seconds: f64,
    /// Suspended modules resumed ahead of a timer so far (`kube_wasm_timer_resumes_total`).
    pub timer_resumes: u64,
}

impl HostMetrics {
    /// Reads the figures from a Prometheus text exposition; absent series count 0.
    pub fn parse(text: &str) -> Self {
        let mut m = Self::default();
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let Some((series, value)) = line.rsplit_once(' ') else {
                continue;
            };
            let Ok(value) = value.parse::<f64>() else {
                continue;
            };
            let name = series.split('{').next().unwrap_or(series);
            let whole = value.max(0.0) as u64;
            match name {
                "kube_wasm_module_memory_bytes" => {
                    m.modules += 1;
                    m.linear_memory_bytes += whole;
                }
                "kube_wasm_upstream_watches" => m.upstream_watches = whole,
                "kube_wasm_shared_watches" => m.shared_watches = whole,
                "kube_wasm_module_state" if series.contains("state=\"suspended\"") => {
                    m.suspended_modules += whole;
                }
                "kube_wasm_module_resume_duration_seconds_count" => m.resumes += whole,
                "kube_wasm_module_resume_duration_seconds_sum" => m.resume_seconds += value,
                "kube_wasm_module_suspend_duration_seconds_count" => m.suspends += whole,
                "kube_wasm_module_suspend_duration_seconds_sum" => m.suspend_seconds += value,
                "kube_wasm_module_snapshot_bytes" => m.snapshot_bytes += whole,
                "kube_wasm_timer_lateness_seconds_count" => m.timers = whole,
                "kube_wasm_timer_lateness_seconds_sum" => m.timer_lateness_seconds = value,
                "kube_wasm_timer_resumes_total" => m.timer_resumes = whole,
                _ => {}
            }
        }
        m
    }
}

/// Whether the host accepts the suspend variant's manifest: `Ok(None)` if it does, else the
/// reason it does not (the host's own message). The probe runs `host-shim run` with a
/// manifest holding `suspend` and a kubeconfig that does not exist: a host that knows
/// `suspend` passes the manifest and fails on the kubeconfig; one that does not fails on the
/// manifest, naming the field.
///
/// # Errors
/// If the host cannot be run.
pub fn suspend_unsupported(setup: &Setup, dir: &Path) -> anyhow::Result<Option<String>> {
    std::fs::create_dir_all(dir)?;
    let links = [Link {
        source: "probe".into(),
        target: "probe-next".into(),
        ballast_mib: 0,
    }];
    let addr: SocketAddr = "127.0.0.1:1".parse()?;
    let path = dir.join("suspend-probe.yaml");
    std::fs::write(&path, manifest(setup, Variant::WasmSuspend, &links, addr))?;
    let output = Command::new(&setup.host_shim)
        .arg("run")
        .arg("--kubeconfig")
        .arg(dir.join("no-such-kubeconfig"))
        .arg("--manifest")
        .arg(&path)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running {}", setup.host_shim.display()))?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    Ok(stderr.lines().find(|l| l.contains("suspend")).map(|line| {
        if line.contains("unknown field `suspend`") {
            "this host-shim's manifest does not accept `suspend` (unknown field `suspend`)".into()
        } else {
            let message = line.split_once("host_shim: ").map_or(line, |(_, m)| m);
            format!(
                "this host-shim refuses the suspend manifest: {}",
                message.trim()
            )
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifests_per_variant() {
        let setup = Setup::for_tests();
        let links = [
            Link {
                source: "a-0".into(),
                target: "a-1".into(),
                ballast_mib: 0,
            },
            Link {
                source: "a-1".into(),
                target: "a-2".into(),
                ballast_mib: 8,
            },
        ];
        let addr: SocketAddr = "127.0.0.1:9".parse().expect("addr");
        let shared = manifest(&setup, Variant::Wasm, &links, addr);
        assert!(shared.contains("sharedWatches: true"), "{shared}");
        assert!(shared.contains("releaseIdleStacks: true"), "{shared}");
        assert!(shared.contains("releaseReadHistory: true"), "{shared}");
        assert!(shared.contains("compileInChild: true"), "{shared}");
        assert!(shared.contains("http2: true"), "{shared}");
        assert!(shared.contains("suspendUnderPressure: true"), "{shared}");
        let kept = Setup {
            suspend_under_pressure: false,
            release_read_history: false,
            release_idle_stacks: false,
            compile_in_child: false,
            http2: false,
            ..setup.clone()
        };
        let kept = manifest(&kept, Variant::Wasm, &links, addr);
        assert!(kept.contains("releaseIdleStacks: false"), "{kept}");
        assert!(kept.contains("suspendUnderPressure: false"), "{kept}");
        assert!(kept.contains("releaseReadHistory: false"), "{kept}");
        assert!(kept.contains("compileInChild: false"), "{kept}");
        assert!(kept.contains("http2: false"), "{kept}");
        assert!(
            shared.contains(
                "    env:\n      \"RING_SOURCE\": \"a-0\"\n      \"RING_TARGET\": \"a-1\"\n  - "
            ),
            "{shared}"
        );
        assert!(shared.ends_with(
            "    env:\n      \"RING_SOURCE\": \"a-1\"\n      \"RING_TARGET\": \"a-2\"\n      \"RING_BALLAST_MIB\": \"8\"\n"
        ));
        assert!(!shared.contains("suspend:"), "no module suspends: {shared}");
        let unshared = manifest(&setup, Variant::WasmUnshared, &links, addr);
        assert!(unshared.contains("sharedWatches: false"));
        let suspend = manifest(&setup, Variant::WasmSuspend, &links, addr);
        assert!(
            suspend.contains("    suspend: {idleAfter: \"2s\", betweenTimers: true}"),
            "{suspend}"
        );
        let counting = Setup {
            suspend_between_timers: false,
            ..setup.clone()
        };
        let counting = manifest(&counting, Variant::WasmSuspend, &links, addr);
        assert!(counting.contains("betweenTimers: false}"), "{counting}");
    }

    #[test]
    fn host_metrics_parse() {
        let text = "# HELP x\n\
            kube_wasm_module_memory_bytes{module=\"ring-0\"} 1048576\n\
            kube_wasm_module_memory_bytes{module=\"ring-1\"} 2097152\n\
            kube_wasm_upstream_watches 3\n\
            kube_wasm_shared_watches 2\n\
            kube_wasm_module_state{module=\"ring-0\",state=\"suspended\"} 1\n\
            kube_wasm_module_state{module=\"ring-1\",state=\"suspended\"} 0\n\
            kube_wasm_module_resume_duration_seconds_sum{module=\"ring-0\"} 0.004\n\
            kube_wasm_module_resume_duration_seconds_count{module=\"ring-0\"} 2\n\
            kube_wasm_module_suspend_duration_seconds_sum{module=\"ring-0\"} 0.006\n\
            kube_wasm_module_suspend_duration_seconds_count{module=\"ring-0\"} 3\n\
            kube_wasm_timer_lateness_seconds_sum 0.5\n\
            kube_wasm_timer_lateness_seconds_count 40\n\
            kube_wasm_timer_resumes_total 12\n\
            # EOF\n";
        let m = HostMetrics::parse(text);
        assert_eq!(m.modules, 2);
        assert_eq!(m.linear_memory_bytes, 3 << 20);
        assert_eq!((m.upstream_watches, m.shared_watches), (3, 2));
        assert_eq!((m.suspended_modules, m.resumes), (1, 2));
        assert!((m.resume_seconds - 0.004).abs() < 1e-12);
        assert_eq!(m.suspends, 3);
        assert!((m.suspend_seconds - 0.006).abs() < 1e-12);
        assert_eq!((m.timers, m.timer_resumes), (40, 12));
        assert!((m.timer_lateness_seconds - 0.5).abs() < 1e-12);
    }
}
