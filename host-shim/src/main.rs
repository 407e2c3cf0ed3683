//! `host-shim`: the command-line edge. See the library crate for how modules run.

use std::io::IsTerminal as _;
use std::process::ExitCode;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use anyhow::Context as _;
use clap::Parser as _;
use host_shim::fleet::cli::{Cli, Command, PushArgs, RunArgs};
use host_shim::fleet::exit::{HostExit, StopSignal, host_exit};
use host_shim::fleet::oci::RegistrySettings;
use host_shim::fleet::oci::pull::Puller;
use host_shim::fleet::oci::store::ModuleStore;
use host_shim::fleet::operator::{self, OperatorConfig};
use host_shim::fleet::run_config::RunConfig;
use host_shim::runtime::module::{ModuleError, ModuleOutcome};
use host_shim::runtime::options::{ModuleSource, ModuleSpec};
use host_shim::upstream::identity::Identities;
use host_shim::{Host, ModuleReport, StopHandle, Supervisor};
use oci_client::secrets::RegistryAuth;
use tracing_subscriber::EnvFilter;

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Before the first thread starts. Only for a serving host: a compile is short-lived and
    // allocates from every core at once.
    let tuning = matches!(cli.command, Command::Run(_)).then(host_shim::heap::tune_for_serving);
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    match tuning {
        Some(host_shim::heap::Tuning::Tuned) => tracing::debug!(
            "malloc tuned for serving: {}",
            host_shim::heap::SERVING_TUNABLES
        ),
        Some(host_shim::heap::Tuning::Partly(why)) => {
            tracing::warn!("malloc keeps its per-thread caches: {why}")
        }
        Some(host_shim::heap::Tuning::Untouched) | None => {}
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .max_blocking_threads(BLOCKING_THREADS)
        .on_thread_park(|| {
            host_shim::runtime::idle_stack::release_unused_if_due();
        })
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            tracing::error!("cannot start the tokio runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    let exit = match cli.command {
        // On a worker, whose stack is released as it parks (`runtime::idle_stack`): the main
        // thread's would keep all that the host's start-up touched.
        Command::Run(args) => runtime.block_on(async {
            tokio::spawn(run_host(*args))
                .await
                .unwrap_or_else(|join| Err(anyhow::anyhow!("the host task failed: {join}")))
        }),
        Command::Push(args) => runtime.block_on(push(args)).map(HostExit::Status),
        Command::Crd => host_shim::fleet::wasm_controller::crd_yaml().map(|yaml| {
            print!("{yaml}");
            HostExit::Status(0)
        }),
        Command::Compile(args) => host_shim::runtime::compiler::compile_stream(
            args.pool(),
            &mut std::io::stdin().lock(),
            &mut std::io::stdout().lock(),
        )
        .map(|()| HostExit::Status(0)),
    };
    // No task may run on once the host decided how to end (nor catch a re-raised signal).
    drop(runtime);
    match exit {
        Ok(HostExit::Status(status)) => ExitCode::from(status),
        Ok(HostExit::KilledBy(signal)) => die_by(signal),
        Err(err) => {
            tracing::error!("{err:#}");
            ExitCode::FAILURE
        }
    }
}

/// Ends the process by `signal`'s default action (termination), as the native program that
/// had no handler for it would have ended: the parent sees "killed by SIGINT" (a shell shows
/// 130). Falls back to exiting with 128 + the signal's number if the process survives it.
fn die_by(signal: StopSignal) -> ExitCode {
    #[cfg(unix)]
    {
        // SAFETY: restoring a signal's default disposition and raising it are plain libc
        // calls; the tokio runtime, whose handler this replaces, is gone.
        unsafe {
            libc::signal(signal.number(), libc::SIG_DFL);
            libc::raise(signal.number());
        }
    }
    ExitCode::from(128 + signal.number() as u8)
}

/// Threads of tokio's blocking pool at most (tokio's default: 512). The host's blocking work
/// is loading a module (waiting for its compile child on a cache miss), writing and reading
/// suspend snapshots, heap trims and file reads; 100 modules starting or suspending at once
/// started 73 threads, and when they had idled 10 s and ended, glibc kept 20 of their 2 MiB
/// stacks for reuse (its 40 MiB stack cache) with 16 KiB of each resident for the host's
/// life. Also bounds the compile children running at once.
const BLOCKING_THREADS: usize = 8;

/// Aborts a background task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

async fn run_host(args: RunArgs) -> anyhow::Result<HostExit> {
    // Listen for signals first: a SIGTERM while modules compile is a stop request too.
    let stop = StopHandle::new();
    let signals = Signals::install().context("listening for SIGINT/SIGTERM")?;
    let stopped_by = Arc::new(OnceLock::new());
    tokio::spawn(signals.forward(stop.clone(), stopped_by.clone()));

    let config = RunConfig::load(args)?;
    let mut kube_config = config.cluster.load().await?;
    if let Some(controllers) = &config.controllers {
        controllers
            .placement
            .validate()
            .map_err(|e| anyhow::anyhow!("--host-name/--lease-*: {e}"))?;
    }
    kube_config.headers.push((
        http::header::USER_AGENT,
        user_agent(config.controllers.as_ref())?,
    ));
    let accounts: Vec<_> = config
        .modules
        .iter()
        .filter_map(|m| m.options.service_account.clone())
        .collect();
    // The operator's own client (watching WasmControllers, writing their status and Events),
    // apart from the modules' upstreams.
    let operator_client = match &config.controllers {
        Some(_) => Some(
            kube::Client::try_from(kube_config.clone())
                .context("building the operator's client")?,
        ),
        None => None,
    };
    let identities = Identities::from_config(kube_config, accounts, config.http2)
        .context("building the kube clients")?;
    let upstream = identities.own().clone();
    tracing::info!(
        cluster = upstream.cluster_url(),
        namespace = upstream.default_namespace(),
        "connected to the cluster configuration"
    );
    let puller = Puller::new(&config.registries, module_store(&config.settings));
    let host = Host::with_identities(identities, config.settings)?;
    let _metrics_server = match config.metrics_addr {
        Some(addr) => {
            let listener = host_shim::fleet::metrics_server::bind(addr)
                .await
                .with_context(|| format!("serving metrics on {addr}"))?;
            tracing::info!("metrics at http://{addr}/metrics");
            Some(AbortOnDrop(tokio::spawn(
                host_shim::fleet::metrics_server::serve(listener, host.clone()),
            )))
        }
        None => None,
    };

    let started = Instant::now();
    let mut loaded = Vec::new();
    let mut reports = Vec::new();
    for ModuleSpec {
        name,
        source,
        options,
    } in config.modules
    {
        let wasm = match source {
            ModuleSource::File(path) => path,
            // Static modules are pulled anonymously; pull secrets belong to WasmControllers.
            ModuleSource::Image(image) => match puller.pull(&image, &RegistryAuth::Anonymous).await
            {
                Ok(pulled) => {
                    tracing::info!("module `{name}`: {image} is {}", pulled.pinned);
                    pulled.path
                }
                Err(err) => {
                    tracing::error!("module `{name}`: {err}");
                    reports.push(ModuleReport {
                        name,
                        outcome: ModuleOutcome::Failed(ModuleError::Fetch(err.to_string())),
                        restarts: 0,
                    });
                    continue;
                }
            },
        };
        let compiler = host.clone();
        let task_name = name.clone();
        let compiled = tokio::task::spawn_blocking(move || compiler.load_file(&task_name, &wasm))
            .await
            .context("the compile task failed")?;
        match compiled {
            Ok(module) => loaded.push(module.with_options(options)),
            Err(err) => {
                tracing::error!("module `{name}` {err}");
                reports.push(ModuleReport {
                    name,
                    outcome: ModuleOutcome::Failed(err),
                    restarts: 0,
                });
            }
        }
    }
    tracing::info!(
        "{} module(s) ready to start in {:?}",
        loaded.len(),
        started.elapsed()
    );

    let operator = match (config.controllers, operator_client) {
        (Some(controllers), Some(client)) => Some(tokio::spawn(operator::run(
            client,
            host.clone(),
            puller.clone(),
            OperatorConfig {
                namespaces: controllers.namespaces,
                placement: controllers.placement,
                stop_timeout: config.stop_timeout,
                local_modules: controllers.local_modules,
            },
            stop.clone(),
        ))),
        _ => None,
    };
    let supervisor = Supervisor::with_stop_handle(host, config.stop_timeout, stop);
    reports.extend(supervisor.run_all(loaded).await);
    if let Some(operator) = operator {
        // Runs until the host is stopped, then stops the modules it runs.
        operator.await.context("the operator task failed")??;
    }

    for report in &reports {
        tracing::info!("module `{}`: {}", report.name, report.outcome);
    }
    Ok(host_exit(&reports, stopped_by.get().copied()))
}

/// The User-Agent of every request the host sends, its modules' included (a guest cannot set
/// its own): `kube-wasm-host/VERSION`, and with `--controllers` ` (replica NAME)`, so that the
/// audit log shows which replica acted.
fn user_agent(
    controllers: Option<&host_shim::fleet::run_config::ControllersConfig>,
) -> anyhow::Result<http::HeaderValue> {
    let version = env!("CARGO_PKG_VERSION");
    let agent = match controllers {
        Some(c) => format!("kube-wasm-host/{version} (replica {})", c.placement.replica),
        None => format!("kube-wasm-host/{version}"),
    };
    http::HeaderValue::from_str(&agent).context("the replica name in the User-Agent")
}

/// Where pulled modules are kept: `oci/` in the cache folder, else in the system's temporary
/// folder.
fn module_store(settings: &host_shim::Settings) -> ModuleStore {
    let base = settings
        .cache_dir
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join("kube-wasm"));
    ModuleStore::new(base.join("oci"))
}

/// `host-shim push`: publishes a module; prints the pushed reference pinned by digest.
async fn push(args: PushArgs) -> anyhow::Result<u8> {
    let wasm = std::fs::read(&args.module)
        .with_context(|| format!("reading {}", args.module.display()))?;
    let auth = match args.username {
        Some(user) => {
            let mut password = String::new();
            std::io::stdin()
                .read_line(&mut password)
                .context("reading the password from stdin")?;
            RegistryAuth::Basic(user, password.trim_end_matches(['\r', '\n']).to_owned())
        }
        None => RegistryAuth::Anonymous,
    };
    let settings = RegistrySettings {
        insecure: if args.insecure {
            let reference: oci_client::Reference = args
                .reference
                .parse()
                .with_context(|| format!("{:?} is not an image reference", args.reference))?;
            vec![reference.registry().to_owned()]
        } else {
            Vec::new()
        },
    };
    let pinned = host_shim::fleet::oci::push::push(
        &settings,
        wasm,
        &args.reference,
        &args.layer_media_type,
        &auth,
    )
    .await
    .with_context(|| format!("pushing to {}", args.reference))?;
    println!("{pinned}");
    Ok(0)
}

/// The host's stop signals: SIGINT and SIGTERM (Ctrl-C elsewhere).
struct Signals {
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
    #[cfg(unix)]
    int: tokio::signal::unix::Signal,
}

impl Signals {
    /// Installs the handlers; from now on these signals no longer kill the process.
    #[cfg(unix)]
    fn install() -> std::io::Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Self {
            term: signal(SignalKind::terminate())?,
            int: signal(SignalKind::interrupt())?,
        })
    }

    #[cfg(not(unix))]
    fn install() -> std::io::Result<Self> {
        Ok(Self {})
    }

    /// Waits for the next signal.
    #[cfg(unix)]
    async fn next(&mut self) -> Option<StopSignal> {
        tokio::select! {
            got = self.term.recv() => got.map(|()| StopSignal::Terminate),
            got = self.int.recv() => got.map(|()| StopSignal::Interrupt),
        }
    }

    #[cfg(not(unix))]
    async fn next(&mut self) -> Option<StopSignal> {
        tokio::signal::ctrl_c()
            .await
            .ok()
            .map(|()| StopSignal::Interrupt)
    }

    /// Turns signals into stop requests: the first asks modules to stop, the second ends
    /// them at once. The first is kept in `first`, for the host's exit.
    async fn forward(mut self, stop: StopHandle, first: Arc<OnceLock<StopSignal>>) {
        while let Some(signal) = self.next().await {
            tracing::info!("{} received: stopping", signal.name());
            let _ = first.set(signal);
            stop.request_stop();
        }
    }
}
