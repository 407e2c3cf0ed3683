//! `kube-wasm-bench`: the same controller (`bench/ring-controller`) natively (kube-rs 5.0, a
//! process per controller) and as wasm modules in one host shim, side by side against one
//! real apiserver in one run; writes `report.md`, `report.json` and PNG plots.
//! `scripts/bench.sh` builds everything, starts a control plane and runs it.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use anyhow::Context as _;
use clap::Parser;

use kube_wasm_bench::budget::BudgetLever;
use kube_wasm_bench::budget_stage::BudgetPlan;
use kube_wasm_bench::fleet::{self, Setup, Variant};
use kube_wasm_bench::pressure::ReclaimCounters;
use kube_wasm_bench::replicas::{self, ReplicasSetup};
use kube_wasm_bench::report::{Measured, Report, Unavailable};
use kube_wasm_bench::workloads::{Bench, Params, require_file};
use kube_wasm_bench::{cgroup, cluster, mixed, statics, stats};

/// Benchmarks wasm controllers in the host shim against native kube-rs 5.0 processes running
/// the same controller, against the same apiserver, in one run.
#[derive(Debug, Parser)]
#[command(name = "kube-wasm-bench", version, about)]
struct Cli {
    /// The cluster's kubeconfig (admin).
    #[arg(long)]
    kubeconfig: PathBuf,
    /// The apiserver's audit log (JSON lines).
    #[arg(long)]
    audit_log: PathBuf,
    /// The release host-shim binary.
    #[arg(long)]
    host_shim: PathBuf,
    /// The native release build of ring-controller.
    #[arg(long)]
    ring_native: PathBuf,
    /// The wasm32-wasip1 release build of ring-controller.
    #[arg(long)]
    ring_wasm: PathBuf,
    /// More release `.wasm` files whose size, compile and load times are reported (the
    /// examples); repeatable.
    #[arg(long = "example-wasm")]
    example_wasm: Vec<PathBuf>,
    /// Where the report, plots and launch logs go.
    #[arg(long, default_value = "target/bench")]
    out: PathBuf,
    /// Also write the report (`report.md`, `report.json`, the plots) into this folder:
    /// `scripts/bench.sh` gives the book's, `docs/src/benchmarks`.
    #[arg(long)]
    book: Option<PathBuf>,
    /// Controller counts of the ring (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "1,10,50,100")]
    n: Vec<usize>,
    /// Measured ring cycles per launch.
    #[arg(long, default_value_t = 50)]
    cycles: u64,
    /// Warm-up ring cycles per launch.
    #[arg(long, default_value_t = 5)]
    warmup: u64,
    /// Runs of every (variant, N) pair and of the churn.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Objects in the churn burst.
    #[arg(long, default_value_t = 500)]
    churn_k: u64,
    /// Churn writes in flight at once.
    #[arg(long, default_value_t = 16)]
    churn_parallel: usize,
    /// Seconds the fleet is left alone before its idle memory is sampled.
    #[arg(long, default_value_t = 10)]
    settle_secs: u64,
    /// Variants to run (comma-separated); `wasm-suspend` is reported as not available when
    /// the host's manifest does not accept `suspend`.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "native,wasm,wasm-unshared,wasm-suspend"
    )]
    variants: Vec<Variant>,
    /// `idleAfter` of the suspend variant's modules.
    #[arg(long, default_value = "2s")]
    suspend_idle_after: String,
    /// Instantiations timed for the instantiate figure.
    #[arg(long, default_value_t = 200)]
    instantiations: usize,
    /// Skip the churn workload.
    #[arg(long)]
    no_churn: bool,
    /// Ballast sizes of the resume curve, in MiB of memory the suspended module holds on top
    /// of its own (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "0,1,2,4,8,16,32,64")]
    resume_mib: Vec<u64>,
    /// Resumes from disk timed per size of the resume curve.
    #[arg(long, default_value_t = 5)]
    resumes: usize,
    /// Skip the resume curve (it runs only with the wasm-suspend variant).
    #[arg(long)]
    no_resume_curve: bool,
    /// Skip the levers (the examples, a ring and, with wasm-suspend, 40 suspended tickers in
    /// one host with every lever on, then with `releaseIdleStacks`, `http2`, then
    /// `suspend.betweenTimers` off; it runs only with the wasm variant).
    #[arg(long)]
    no_levers: bool,
    /// Ring controllers of the levers' ring (also with --quick).
    #[arg(long, default_value_t = 100)]
    levers_n: usize,
    /// Controllers of the mixed fleet (every kind of `kube_wasm_bench::mixed::MIXED_KINDS`,
    /// round-robin, natively, in one host, and suspended; then the five examples alone as the
    /// edge fleet; 36 with --quick); 0 skips both. Needs --native-dir and --wasm-dir.
    #[arg(long, default_value_t = 100)]
    mixed_n: usize,
    /// Folder of the release native builds of every mixed kind (`<dir>/<kind>`).
    #[arg(long)]
    native_dir: Option<PathBuf>,
    /// Folder of the release wasm32-wasip1 builds of every mixed kind (`<dir>/<kind>.wasm`).
    #[arg(long)]
    wasm_dir: Option<PathBuf>,
    /// Distinct modules of the cold start (copies of the ring module, empty cache, compiled
    /// in the host then in a child; also with --quick, which makes it 20); 0 skips it.
    #[arg(long, default_value_t = 100)]
    cold_start_n: usize,
    /// WasmControllers of the replicas workload (three, then four host replicas sharing them
    /// through Leases: failover, handoff, modules moved); 0 skips it. Needs the
    /// configmap-mirror module among `--example-wasm`.
    #[arg(long, default_value_t = 30)]
    replicas_modules: usize,
    /// Controller counts of the budget workload's rings (comma-separated; the option without
    /// a value skips them):
    /// for each N and each of native, wasm and wasm-suspend, the smallest cgroup memory
    /// limit the ring still runs in (see `kube_wasm_bench::budget`). Needs root.
    #[arg(long, value_delimiter = ',', num_args = 0.., default_value = "1,10,100,1000")]
    budget_n: Vec<usize>,
    /// Controller counts of the edge fleet's budgets (the five examples round-robin, each
    /// answering a change of its own every cycle; comma-separated; the option without a value
    /// skips them): for each N and each of native, wasm and wasm-suspend (see
    /// `kube_wasm_bench::fleet_budget`). Needs root, --native-dir and --wasm-dir.
    #[arg(long, value_delimiter = ',', num_args = 0.., default_value = "5")]
    edge_budget_n: Vec<usize>,
    /// Controller counts of the mixed fleet's budgets (every kind of
    /// `kube_wasm_bench::mixed::MIXED_KINDS` round-robin, each that answers observably
    /// answering a change of its own every cycle; comma-separated; the option without a value
    /// skips them): for each N and each of native, wasm and wasm-suspend, after the edge
    /// fleet's (see `kube_wasm_bench::fleet_budget`). Needs root, --native-dir and --wasm-dir.
    #[arg(long, value_delimiter = ',', num_args = 0.., default_value = "100")]
    mixed_budget_n: Vec<usize>,
    /// Controller counts of the Go fleet's budgets (examples/go-configmap-mirror, N native Go
    /// processes against one host with N modules, resident and suspended; comma-separated;
    /// the option without a value skips them): after the edge fleet's in a whole run, and
    /// after the Go workload with --go (see `kube_wasm_bench::fleet_budget`). Needs root and
    /// the Go builds in --native-dir and --wasm-dir (or beside --go-native and --go-wasm).
    #[arg(long, value_delimiter = ',', num_args = 0.., default_value = "10")]
    go_budget_n: Vec<usize>,
    /// Measured ring cycles of each budget probe.
    #[arg(long, default_value_t = 10)]
    budget_cycles: u64,
    /// Idle controllers of the idle-CPU workload (native, wasm and wasm-suspend, each
    /// unconstrained in a cgroup); 0 skips it.
    #[arg(long, default_value_t = 100)]
    idle_cpu_n: usize,
    /// Seconds over which the idle CPU is measured.
    #[arg(long, default_value_t = 120)]
    idle_cpu_secs: u64,
    /// Memory levers judged again under the budget (comma-separated; the option without a
    /// value skips them): each
    /// one off in turn, its budget and idle CPU against every lever on, at
    /// `--budget-lever-n` ring controllers in one host (in the variant each can change: wasm,
    /// or wasm-suspend for suspend-under-pressure).
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        num_args = 0..,
        default_value = "release-idle-stacks,func-ref-profile,suspend-under-pressure"
    )]
    budget_levers: Vec<BudgetLever>,
    /// Ring controllers of the levers' budgets.
    #[arg(long, default_value_t = 100)]
    budget_lever_n: usize,
    /// Module counts of the suspended-scale launches (comma-separated; the option without a
    /// value skips them): N modules of the mixed fleet's kinds in one host that suspends idle
    /// modules — start-up, memory and snapshots once settled, and the latency and host CPU
    /// per event of the same probe instances at every N (see
    /// `kube_wasm_bench::suspended_scale`). Needs --native-dir and --wasm-dir.
    #[arg(long, value_delimiter = ',', num_args = 0.., default_value = "100,10000")]
    suspended_scale_n: Vec<usize>,
    /// Example instances changed in each probe cycle of a suspended-scale launch.
    #[arg(long, default_value_t = 20)]
    scale_probes: usize,
    /// Probe cycles of a suspended-scale launch.
    #[arg(long, default_value_t = 5)]
    scale_cycles: usize,
    /// The chaos soak's `report.json` (written by `scripts/soak.sh`), whose checks and
    /// figures go into the report; without it the soak's goal is "not measured".
    #[arg(long)]
    soak_report: Option<PathBuf>,
    /// Small and fast: N = 1,2,5, 10 cycles, 2 warm-up, 1 run, K = 50, 3 s settle, 50
    /// instantiations, resume curve at 0, 4 and 16 MiB with 2 resumes each, cold start of at
    /// most 20 modules, mixed fleet budgets of at most 18 controllers (replacing those
    /// options).
    #[arg(long)]
    quick: bool,
    /// Run only the Go workload (issue #43): examples/go-configmap-mirror natively and as a
    /// module (`--go-native`, `--go-wasm`), with the examples of `--example-wasm` beside it
    /// in a mixed fleet (their native builds from `--native-dir`); writes `go.md` and
    /// `go.json` into `--out` and `--book`.
    #[arg(long)]
    go: bool,
    /// The native build of go-configmap-mirror.
    #[arg(long)]
    go_native: Option<PathBuf>,
    /// The reactor module of go-configmap-mirror.
    #[arg(long)]
    go_wasm: Option<PathBuf>,
    /// Event→reconcile samples of the Go workload, natively and resident (a third as many
    /// suspended).
    #[arg(long, default_value_t = 60)]
    go_events: usize,
    /// Labelled ConfigMaps each Go controller mirrors.
    #[arg(long, default_value_t = 10)]
    go_objects: usize,
    /// Go controllers of the Go fleet (N native Go processes against one host with N
    /// modules, resident and suspended); 0 skips it.
    #[arg(long, default_value_t = 10)]
    go_fleet_n: usize,
}

/// The Go workload alone (`--go`): prints its goals and writes `go.md` and `go.json`.
async fn run_go(cli: &Cli, setup: &Setup, out: &std::path::Path) -> anyhow::Result<()> {
    let native = cli.go_native.clone().context("--go needs --go-native")?;
    let wasm = cli.go_wasm.clone().context("--go needs --go-wasm")?;
    require_file(&native, "the native Go controller")?;
    require_file(&wasm, "the Go controller module")?;
    let rust_examples = match &cli.native_dir {
        Some(dir) => cli
            .example_wasm
            .iter()
            .filter_map(|w| {
                let native = dir.join(w.file_stem()?);
                native.exists().then(|| (native, w.clone()))
            })
            .collect(),
        None => Vec::new(),
    };
    let go = kube_wasm_bench::go::GoSetup {
        native: std::path::absolute(native)?,
        wasm: std::path::absolute(wasm)?,
        rust_examples,
        objects: cli.go_objects,
        events: cli.go_events,
        settle_secs: cli.settle_secs,
        fleet_n: cli.go_fleet_n,
        audit_log: cli.audit_log.clone(),
    };
    let mut figures = kube_wasm_bench::go::run(setup, &go, out).await?;
    if !cli.go_budget_n.is_empty() {
        cgroup::check_available().context("the Go fleet's budgets need cgroups")?;
        let parent = |file: &std::path::Path| file.parent().map(std::path::Path::to_path_buf);
        let builds = mixed::Builds {
            native_dir: parent(&go.native).context("the native Go controller's folder")?,
            wasm_dir: parent(&go.wasm).context("the Go module's folder")?,
        };
        let client = cluster::client(&cli.kubeconfig).await?;
        let bench = bench_of(cli, setup.clone(), client, out).await?;
        // The Go fleet's budgets alone: not the ring's, the idle CPU or the levers.
        let plan = BudgetPlan {
            ns: Vec::new(),
            go_ns: cli.go_budget_n.clone(),
            fleet_builds: Some(builds),
            idle_cpu_n: 0,
            levers: Vec::new(),
            ..budget_plan(cli, &bench.params)
        };
        let mut measured = Measured::default();
        let stamp = cluster::now_micros() / 1_000_000 % 100_000;
        let mut launch = 0;
        let tag = || {
            launch += 1;
            format!("g{stamp}-{launch}")
        };
        bench
            .budget_stage(&plan, &mut measured, tag, |_| Ok(()))
            .await?;
        figures.budgets = measured.go_budgets;
        figures.budgets_incomplete = measured.incomplete;
    }
    let (md, goals) = kube_wasm_bench::report::go_markdown(&figures);
    let context: Vec<String> = machine_context()
        .into_iter()
        .map(|(k, v)| format!("{k}: {v}"))
        .collect();
    let page = format!(
        "# Go controllers: the benchmark's Go workload\n\n\
         Written by `scripts/bench.sh --go` (release builds): {}; {} labelled ConfigMaps per \
         controller, {} events natively and resident (a third as many suspended), \
         `idleAfter: {}`; global memory reclaim during the run: {}. Every figure is from this \
         one run; `go.json` beside this page holds them all.\n\n{md}",
        context.join("; "),
        go.objects,
        go.events,
        setup.suspend_idle_after,
        figures.reclaim,
    );
    let json =
        serde_json::to_string_pretty(&serde_json::json!({"figures": figures, "goals": goals}))?;
    for dir in std::iter::once(out).chain(cli.book.as_deref()) {
        std::fs::create_dir_all(dir)?;
        std::fs::write(dir.join("go.md"), &page)?;
        std::fs::write(dir.join("go.json"), &json)?;
        eprintln!("bench: wrote {}", dir.join("go.md").display());
    }
    println!("{md}");
    Ok(())
}

/// The driver's bench against the cluster of `client`: the ring's parameters from `cli`,
/// launch logs under `out`.
///
/// # Errors
/// If the kubeconfig names no apiserver port.
async fn bench_of(
    cli: &Cli,
    setup: Setup,
    client: kube::Client,
    out: &std::path::Path,
) -> anyhow::Result<Bench> {
    Ok(Bench {
        apiserver_port: cluster::apiserver_port(&cli.kubeconfig).await?,
        client,
        setup,
        audit_log: cli.audit_log.clone(),
        logs: out.join("logs"),
        params: Params {
            warmup: cli.warmup.max(1),
            cycles: cli.cycles,
            settle: Duration::from_secs(cli.settle_secs),
            churn_k: cli.churn_k,
            churn_parallel: cli.churn_parallel,
            startup_timeout: Duration::from_secs(180),
            cycle_timeout: Duration::from_secs(120),
        },
    })
}

/// The budget stage as `cli` asks it, without the fleets of distinct kinds (no builds) and
/// with every budget variant; `ring` is the ring workload's parameters, a probe's are derived
/// from them.
fn budget_plan(cli: &Cli, ring: &Params) -> BudgetPlan {
    BudgetPlan {
        ns: cli.budget_n.clone(),
        edge_ns: Vec::new(),
        mixed_ns: Vec::new(),
        go_ns: Vec::new(),
        fleet_builds: None,
        variants: vec![Variant::Native, Variant::Wasm, Variant::WasmSuspend],
        params: Params {
            warmup: 2,
            cycles: cli.budget_cycles.max(1),
            settle: Duration::from_secs(cli.settle_secs.min(5)),
            startup_timeout: Duration::from_secs(900),
            cycle_timeout: Duration::from_secs(300),
            ..ring.clone()
        },
        idle_cpu_n: cli.idle_cpu_n,
        idle_cpu_window: Duration::from_secs(cli.idle_cpu_secs),
        levers: cli.budget_levers.clone(),
        lever_n: cli.budget_lever_n,
    }
}

fn machine_context() -> Vec<(String, String)> {
    let sh = |cmd: &str| {
        Command::new("sh")
            .arg("-c")
            .arg(cmd)
            .output()
            .ok()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .unwrap_or_default()
    };
    vec![
        ("date".into(), sh("date -u +%Y-%m-%dT%H:%M:%SZ")),
        (
            "machine".into(),
            sh(
                "echo \"$(nproc) cores, $(awk '/MemTotal/ {printf \"%.1f GiB\", $2/1048576}' /proc/meminfo), $(uname -sr)\"",
            ),
        ),
        (
            "load average at start".into(),
            sh("cut -d' ' -f1-3 /proc/loadavg"),
        ),
        // Which code it measured: the parts of one report may be runs of different days.
        (
            "commit".into(),
            sh("git describe --always --dirty --abbrev=12 2>/dev/null || echo unknown"),
        ),
    ]
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut cli = Cli::parse();
    if cli.quick {
        cli.n = vec![1, 2, 5];
        cli.cycles = 10;
        cli.warmup = 2;
        cli.runs = 1;
        cli.churn_k = 50;
        cli.settle_secs = 3;
        cli.instantiations = 50;
        cli.resume_mib = vec![0, 4, 16];
        cli.resumes = 2;
        cli.cold_start_n = cli.cold_start_n.min(20);
        cli.budget_n = vec![5];
        cli.budget_cycles = 3;
        cli.idle_cpu_n = cli.idle_cpu_n.min(5);
        cli.idle_cpu_secs = cli.idle_cpu_secs.min(10);
        cli.mixed_n = cli.mixed_n.min(36);
        for n in &mut cli.mixed_budget_n {
            *n = (*n).min(mixed::MIXED_KINDS.len());
        }
        cli.mixed_budget_n.dedup();
    }
    require_file(&cli.host_shim, "the host shim")?;
    require_file(&cli.ring_native, "the native ring controller")?;
    require_file(&cli.ring_wasm, "the ring controller module")?;
    require_file(&cli.audit_log, "the audit log")?;
    let soak = cli
        .soak_report
        .as_deref()
        .map(kube_wasm_bench::soak::report::Summary::read)
        .transpose()?;
    // The host reads module paths relative to its manifest's folder.
    for wasm in &mut cli.example_wasm {
        require_file(wasm, "an example module")?;
        *wasm = std::path::absolute(&*wasm)?;
    }
    let out = std::path::absolute(&cli.out).context("the output folder")?;
    std::fs::create_dir_all(&out)?;
    let setup = Setup {
        host_shim: cli.host_shim.clone(),
        ring_native: cli.ring_native.clone(),
        ring_wasm: std::path::absolute(&cli.ring_wasm)?,
        kubeconfig: std::path::absolute(&cli.kubeconfig)?,
        module_cache: out.join("module-cache"),
        suspend_idle_after: cli.suspend_idle_after.clone(),
        release_idle_stacks: true,
        compile_in_child: true,
        http2: true,
        suspend_between_timers: true,
        release_read_history: true,
        func_ref_profile: true,
        suspend_under_pressure: true,
    };
    if cli.go {
        return run_go(&cli, &setup, &out).await;
    }
    let mut context = machine_context();
    let reclaim_at_start = ReclaimCounters::now();
    context.push((
        "parameters".into(),
        format!(
            "N = {:?}, {} warm-up + {} measured cycles, {} run(s), settle {} s, churn K = {} ({} in flight)",
            cli.n, cli.warmup, cli.cycles, cli.runs, cli.settle_secs, cli.churn_k, cli.churn_parallel
        ),
    ));
    context.push((
        "budget parameters".into(),
        format!(
            "ring N = {:?}, edge fleet N = {:?}, mixed fleet N = {:?}, {} measured cycles a probe; idle CPU of {} controllers over {} s; levers {:?} at N = {}",
            cli.budget_n,
            cli.edge_budget_n,
            cli.mixed_budget_n,
            cli.budget_cycles,
            cli.idle_cpu_n,
            cli.idle_cpu_secs,
            cli.budget_levers,
            cli.budget_lever_n
        ),
    ));

    let mut variants = Vec::new();
    let mut unavailable = Vec::new();
    for &v in Variant::ALL.iter().filter(|v| cli.variants.contains(v)) {
        if v == Variant::WasmSuspend
            && let Some(reason) = fleet::suspend_unsupported(&setup, &out.join("probe"))?
        {
            eprintln!("bench: variant wasm-suspend is not available: {reason}");
            unavailable.push(Unavailable { variant: v, reason });
            continue;
        }
        variants.push(v);
    }

    eprintln!("bench: static figures (sizes, compile, cache load, instantiate)");
    let mut wasm_files = vec![setup.ring_wasm.clone()];
    wasm_files.extend(cli.example_wasm.iter().cloned());
    let statics = statics::measure(
        &wasm_files,
        &setup.ring_wasm,
        &out.join("statics-cache"),
        3,
        cli.instantiations,
    )
    .await?;

    let client = cluster::client(&cli.kubeconfig).await?;
    let server = client
        .apiserver_version()
        .await
        .context("asking the API server its version")?;
    eprintln!(
        "bench: against kube-apiserver {} ({}, {})",
        server.git_version, server.platform, server.go_version
    );
    context.push(("kube-apiserver".into(), server.git_version));
    let crd = Command::new(&setup.ring_native)
        .arg("crd")
        .output()
        .context("running `ring-controller crd`")?;
    anyhow::ensure!(crd.status.success(), "`ring-controller crd` failed");
    cluster::install_crd(&client, &String::from_utf8_lossy(&crd.stdout)).await?;

    let bench = bench_of(&cli, setup, client, &out).await?;
    // Unique per bench run: namespaces cannot be deleted on this control plane.
    let stamp = cluster::now_micros() / 1_000_000 % 100_000;
    if variants.iter().any(|&v| v != Variant::Native) {
        eprintln!("bench: priming the host's cache of precompiled modules");
        bench.prime(&format!("b{stamp}-prime")).await?;
    }
    let mut ring = Vec::new();
    let mut churn = Vec::new();
    let mut launch = 0;
    for run in 0..cli.runs {
        for &n in &cli.n {
            for &v in &variants {
                launch += 1;
                let tag = format!("b{stamp}-{launch}");
                eprintln!(
                    "bench: run {}/{} ring N={n} {} (namespaces {tag}-*)",
                    run + 1,
                    cli.runs,
                    v.label()
                );
                let result = bench.ring(v, n, run, &tag).await.with_context(|| {
                    format!(
                        "ring N={n} {} (logs in {})",
                        v.label(),
                        bench.logs.join(&tag).display()
                    )
                })?;
                eprintln!(
                    "bench:   idle {} MiB, load {} MiB PSS; ring p50 {:.1} ms; event→reconcile p50 {:.2} ms; {} requests",
                    result.idle.pss_kib / 1024,
                    result.load.pss_kib / 1024,
                    stats::median(&result.ring_ms).unwrap_or(f64::NAN),
                    stats::median(&result.reconcile_ms).unwrap_or(f64::NAN),
                    result
                        .requests
                        .as_ref()
                        .map_or("uncounted".into(), |q| q.total.to_string())
                );
                ring.push(result);
            }
        }
        if !cli.no_churn {
            for &v in &variants {
                launch += 1;
                let tag = format!("b{stamp}-{launch}");
                eprintln!(
                    "bench: run {}/{} churn K={} {}",
                    run + 1,
                    cli.runs,
                    cli.churn_k,
                    v.label()
                );
                let result = bench.churn(v, run, &tag).await.with_context(|| {
                    format!(
                        "churn {} (logs in {})",
                        v.label(),
                        bench.logs.join(&tag).display()
                    )
                })?;
                eprintln!("bench:   {:.0} copies/s", result.per_second);
                churn.push(result);
            }
        }
    }

    let mut resume = Vec::new();
    if variants.contains(&Variant::WasmSuspend) && !cli.no_resume_curve {
        launch += 1;
        resume = bench
            .resume_curve(
                &cli.resume_mib,
                cli.resumes.max(1),
                &format!("b{stamp}-{launch}"),
            )
            .await?;
    }

    let mut levers = Vec::new();
    if variants.contains(&Variant::Wasm) && !cli.no_levers {
        launch += 1;
        let ring_n = cli.levers_n.max(1);
        levers = bench
            .levers(
                &cli.example_wasm,
                ring_n,
                variants.contains(&Variant::WasmSuspend),
                &format!("b{stamp}-{launch}"),
            )
            .await?;
    }
    // Every kind's builds, natively and as modules: the fleets of distinct kinds need them.
    let builds = match (&cli.native_dir, &cli.wasm_dir) {
        (Some(native_dir), Some(wasm_dir)) => Some(mixed::Builds {
            native_dir: std::path::absolute(native_dir)?,
            wasm_dir: std::path::absolute(wasm_dir)?,
        }),
        _ => None,
    };
    let mut mixed = Vec::new();
    if let (true, Some(builds)) = (cli.mixed_n > 0, &builds) {
        bench.apply_generator_crd().await?;
        bench.install_parity_crds().await?;
        for (fleet, kinds, n) in [
            ("mixed", &mixed::MIXED_KINDS[..], cli.mixed_n),
            ("edge", &mixed::EXAMPLES[..], mixed::EXAMPLES.len()),
        ] {
            launch += 1;
            mixed.extend(
                bench
                    .mixed(fleet, kinds, n, builds, &format!("b{stamp}-{launch}"))
                    .await?,
            );
        }
    }
    let mut cold_start = Vec::new();
    if cli.cold_start_n > 0 && variants.contains(&Variant::Wasm) {
        launch += 1;
        cold_start = bench
            .cold_start(cli.cold_start_n, &format!("b{stamp}-{launch}"))
            .await
            .context("the cold start")?;
    }
    let mirror_wasm = cli
        .example_wasm
        .iter()
        .find(|p| p.file_stem().is_some_and(|s| s == "configmap-mirror"));
    let (replicas, replicas_skipped) = match (cli.replicas_modules, mirror_wasm) {
        (0, _) => (None, Some("--replicas-modules 0".to_owned())),
        (_, None) => (
            None,
            Some("no configmap-mirror.wasm among --example-wasm".to_owned()),
        ),
        (modules, Some(mirror_wasm)) => {
            launch += 1;
            let tag = format!("b{stamp}-{launch}");
            eprintln!("bench: replicas ({modules} WasmControllers, namespaces {tag}-*)");
            let setup = ReplicasSetup {
                host_shim: std::path::absolute(&cli.host_shim)?,
                mirror_wasm: std::path::absolute(mirror_wasm)?,
                kubeconfig: std::path::absolute(&cli.kubeconfig)?,
                modules,
                stop_timeout_s: 5,
                dir: out.join("replicas"),
            };
            let run = replicas::measure(&bench.client, &setup, &tag)
                .await
                .context("the replicas workload")?;
            (Some(run), None)
        }
    };

    let budget_variants: Vec<Variant> = variants
        .iter()
        .copied()
        .filter(|v| matches!(v, Variant::Native | Variant::Wasm | Variant::WasmSuspend))
        .collect();
    let mut measured = Measured {
        context,
        variants,
        unavailable,
        ns: cli.n.clone(),
        ring,
        churn,
        resume,
        statics: Some(statics),
        levers,
        mixed,
        cold_start,
        replicas,
        replicas_skipped,
        soak,
        ..Measured::default()
    };
    let book = cli.book.clone();
    let checkpoint = |measured: &Measured| -> anyhow::Result<Report> {
        let mut measured = measured.clone();
        measured.context.push((
            "global memory reclaim during the run".into(),
            reclaim_at_start.until(&ReclaimCounters::now()).to_string(),
        ));
        let report = Report::new(measured);
        for dir in std::iter::once(&out).chain(&book) {
            for file in report.write(dir)? {
                eprintln!("bench: wrote {}", file.display());
            }
        }
        Ok(report)
    };
    checkpoint(&measured)?;
    let fleet_builds = builds.clone().filter(|_| {
        !cli.edge_budget_n.is_empty()
            || !cli.mixed_budget_n.is_empty()
            || !cli.go_budget_n.is_empty()
    });
    if !cli.budget_n.is_empty()
        || cli.idle_cpu_n > 0
        || !cli.budget_levers.is_empty()
        || fleet_builds.is_some()
    {
        cgroup::check_available().context("the budget and idle-CPU workloads need cgroups")?;
    }
    let with_builds = |ns: &Vec<usize>| {
        if fleet_builds.is_some() {
            ns.clone()
        } else {
            Vec::new()
        }
    };
    let plan = BudgetPlan {
        edge_ns: with_builds(&cli.edge_budget_n),
        mixed_ns: with_builds(&cli.mixed_budget_n),
        go_ns: with_builds(&cli.go_budget_n),
        fleet_builds,
        variants: budget_variants,
        ..budget_plan(&cli, &bench.params)
    };
    let mut tag = || {
        launch += 1;
        format!("b{stamp}-{launch}")
    };
    bench
        .budget_stage(&plan, &mut measured, &mut tag, |m| checkpoint(m).map(drop))
        .await?;
    if let (false, Some(builds)) = (cli.suspended_scale_n.is_empty(), &builds) {
        let mut ns = cli.suspended_scale_n.clone();
        ns.sort_unstable();
        for n in ns {
            let what = format!("{n} suspended modules of the mixed kinds");
            eprintln!("bench: {what}");
            let startup_timeout = Duration::from_secs(1800);
            let probes = (cli.scale_probes, cli.scale_cycles);
            match bench
                .suspended_scale(n, builds, probes, startup_timeout, &tag())
                .await
            {
                Ok(scale) => measured.suspended_scale.push(scale),
                Err(err) => measured.incomplete.push(format!("{what}: {err:#}")),
            }
            checkpoint(&measured)?;
        }
    }
    let report = checkpoint(&measured)?;
    for goal in &report.goals {
        eprintln!(
            "goal: {} — target {} — {} — {}",
            goal.goal,
            goal.target,
            goal.measured,
            match goal.holds {
                Some(true) => "holds",
                Some(false) => "FAILS",
                None => "not measured",
            }
        );
    }
    Ok(())
}
