//! The command line: `host-shim run [OPTIONS] MODULE.wasm...`,
//! `host-shim run [OPTIONS] --manifest host.yaml`, `host-shim push MODULE.wasm REFERENCE`,
//! `host-shim crd`, or `host-shim compile < MODULE.wasm > MODULE.cwasm`.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use clap::{Args, Parser, Subcommand};

/// Runs kube-rs controllers compiled to wasm32-wasip1, serving them the kube-wasm ABI v1 with
/// kube's own authenticated client. Logs go to stderr (filter with RUST_LOG, default `info`);
/// module output is prefixed with `[module-name] `.
#[derive(Debug, Parser)]
#[command(name = "host-shim", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run controller modules, given as files or in a manifest, until they exit for good or
    /// the host is stopped (SIGINT/SIGTERM). A module run alone ends the host as the native
    /// program would end: with the module's exit status, or killed by the stop signal if the
    /// module never asked for it; several modules: 0 if every one exited with status 0,
    /// else 1.
    Run(Box<RunArgs>),
    /// Publish a module to an OCI registry, as an artifact with one `application/wasm` layer
    /// (the CNCF wasm OCI artifact layout); prints the pushed reference pinned by digest
    /// (`registry/repository@sha256:…`), which a manifest's `image` can name.
    Push(PushArgs),
    /// Print the CustomResourceDefinition of `WasmController` (`kube-wasm.dev/v1alpha1`) as
    /// YAML, for `kubectl apply -f -` (deploy/wasmcontroller-crd.yaml is this output).
    Crd,
    /// Compile a module for this host's engine: the wasm on stdin, the precompiled artifact
    /// on stdout, errors on stderr and a non-zero exit. `host-shim run` runs this as a child
    /// on a cache miss so that the serving process never runs the compiler.
    Compile(CompileArgs),
}

/// Options of `host-shim compile`: the engine configuration of the host that asks.
#[derive(Debug, Args)]
pub struct CompileArgs {
    /// Compile for a host with a pooling allocator of this many instances.
    #[arg(long, value_name = "N", requires = "pool_max_memory_bytes")]
    pub pool_instances: Option<u32>,

    /// The pooling allocator's largest linear memory, in bytes.
    #[arg(long, value_name = "BYTES", requires = "pool_instances")]
    pub pool_max_memory_bytes: Option<u64>,
}

impl CompileArgs {
    /// The pool the asking host's engine was made with.
    pub fn pool(&self) -> Option<crate::runtime::engine::PoolSize> {
        Some(crate::runtime::engine::PoolSize {
            instances: self.pool_instances?,
            max_memory_bytes: self.pool_max_memory_bytes?,
        })
    }
}

/// Options of `host-shim push`.
#[derive(Debug, Args)]
pub struct PushArgs {
    /// The module to push.
    #[arg(value_name = "MODULE.wasm")]
    pub module: PathBuf,

    /// Where to push it: `registry[:port]/repository:tag`.
    #[arg(value_name = "REFERENCE")]
    pub reference: String,

    /// Speak plain HTTP to the registry (for a registry on loopback).
    #[arg(long)]
    pub insecure: bool,

    /// User name for the registry; the password is read from stdin (`--password-stdin`).
    #[arg(long, value_name = "NAME", requires = "password_stdin")]
    pub username: Option<String>,

    /// Read the registry password from stdin (one line).
    #[arg(long, requires = "username")]
    pub password_stdin: bool,

    /// Media type of the wasm layer (default `application/wasm`; older tools read
    /// `application/vnd.wasm.content.layer.v1+wasm`).
    #[arg(long, value_name = "TYPE", default_value = "application/wasm")]
    pub layer_media_type: String,
}

/// Options of `host-shim run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Kubeconfig file to use (default: kube's inference: KUBECONFIG, ~/.kube/config,
    /// in-cluster).
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,

    /// Kubeconfig context to use (default: the current context).
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,

    /// Seconds modules get to exit after SIGINT/SIGTERM before they are ended (default: the
    /// manifest's `stopTimeout`, else 10).
    #[arg(long, value_name = "SECS")]
    pub stop_timeout: Option<u64>,

    /// Serve Prometheus metrics at http://ADDR/metrics (default: the manifest's
    /// `metricsAddr`, else none), e.g. 127.0.0.1:9090.
    #[arg(long, value_name = "ADDR")]
    pub metrics_addr: Option<std::net::SocketAddr>,

    /// Extra environment variable for every module (repeatable); a manifest module's own
    /// `env` overrides it.
    #[arg(long = "env", value_name = "KEY=VALUE", value_parser = parse_env_pair)]
    pub env: Vec<(String, String)>,

    /// Run the modules a YAML manifest lists, each with its own environment, arguments,
    /// namespace, memory limit and restart policy (the book's reference page lists its
    /// fields).
    #[arg(long, value_name = "PATH", conflicts_with = "modules")]
    pub manifest: Option<PathBuf>,

    /// Folder of precompiled modules (default: the manifest's `cacheDir`, else
    /// $XDG_CACHE_HOME/kube-wasm/host-shim or ~/.cache/kube-wasm/host-shim).
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,

    /// Whether modules with identical watches share one upstream LIST+WATCH, served from the
    /// host's watch cache (default: the manifest's `sharedWatches`, else true).
    #[arg(long, value_name = "BOOL")]
    pub shared_watches: Option<bool>,

    /// Compile every module instead of using the cache of precompiled modules.
    #[arg(long, conflicts_with = "cache_dir")]
    pub no_cache: bool,

    /// Suspend a module to disk once it has been idle this long (e.g. `30s`, `500ms`), for
    /// every module that does not set its own `suspend` in the manifest (default: never).
    #[arg(long, value_name = "DURATION", value_parser = parse_idle_after)]
    pub suspend_after: Option<std::time::Duration>,

    /// Folder for snapshots of suspended modules (default: the manifest's `suspendDir`, else
    /// `suspended` inside the cache folder, else the system's temporary folder).
    #[arg(long, value_name = "DIR")]
    pub suspend_dir: Option<PathBuf>,

    /// Also run the cluster's WasmController resources (`kube-wasm.dev/v1alpha1`), beside the
    /// manifest's modules if one is given: pulled, started, replaced on a spec change and
    /// stopped before deletion (the host is their operator; see deploy/).
    #[arg(long)]
    pub controllers: bool,

    /// With `--controllers`: run only the WasmControllers of this namespace (repeatable;
    /// default: all namespaces).
    #[arg(long = "namespace", value_name = "NAME", requires = "controllers")]
    pub namespaces: Vec<String>,

    /// With `--controllers`: the folder a WasmController's `spec.path` is read from (paths
    /// relative to it, no `..`; for local development). Without it, `path` is refused.
    #[arg(long, value_name = "DIR", requires = "controllers")]
    pub local_modules: Option<PathBuf>,

    /// This host replica's name, shown in `status.host`, on its Events, in its User-Agent
    /// and as its Lease's name (default: the `POD_NAME` environment variable, else the
    /// machine's host name).
    #[arg(long, value_name = "NAME")]
    pub host_name: Option<String>,

    /// With `--controllers`: share the WasmControllers with the other replicas holding a
    /// membership Lease in this namespace (each module runs on exactly one live replica, and
    /// moves when one joins, leaves or dies). Without it this host is the sole replica.
    #[arg(long, value_name = "NAMESPACE", requires = "controllers")]
    pub lease_namespace: Option<String>,

    /// How long a replica's Lease stands unrenewed (whole seconds; default 10s): a crashed
    /// replica's modules restart elsewhere after about this long.
    #[arg(long, value_name = "DURATION", value_parser = parse_idle_after, requires = "lease_namespace")]
    pub lease_duration: Option<std::time::Duration>,

    /// How long a replica may go without renewing its Lease before it stops its modules
    /// (default 8s; shorter than the lease duration).
    #[arg(long, value_name = "DURATION", value_parser = parse_idle_after, requires = "lease_namespace")]
    pub renew_deadline: Option<std::time::Duration>,

    /// How often a replica renews its Lease (default 1s; shorter than the renew deadline).
    #[arg(long, value_name = "DURATION", value_parser = parse_idle_after, requires = "lease_namespace")]
    pub renew_period: Option<std::time::Duration>,

    /// A registry (`host[:port]`) to reach over plain HTTP rather than HTTPS (repeatable; added
    /// to the manifest's `insecureRegistries`).
    #[arg(long = "insecure-registry", value_name = "HOST[:PORT]")]
    pub insecure_registries: Vec<String>,

    /// The modules to run, each named after its file stem and never restarted (use a
    /// manifest for more).
    #[arg(value_name = "MODULE.wasm", required_unless_present_any = ["manifest", "controllers"])]
    pub modules: Vec<PathBuf>,
}

/// Parses `KEY=VALUE` (the value may contain `=` and be empty; the key may not be empty).
///
/// # Errors
/// A message if there is no `=` or the key is empty or contains a NUL.
pub fn parse_env_pair(arg: &str) -> Result<(String, String), String> {
    match arg.split_once('=') {
        Some((key, value)) if !key.is_empty() && !key.contains('\0') && !value.contains('\0') => {
            Ok((key.to_owned(), value.to_owned()))
        }
        Some(_) => Err(format!(
            "`{arg}`: the key must be non-empty (and no NUL bytes)"
        )),
        None => Err(format!("`{arg}` is not KEY=VALUE")),
    }
}

/// Parses `--suspend-after`: a duration (`500ms`, `30s`, `5m`, `1h`) over zero.
///
/// # Errors
/// A message if it is not a duration or is zero.
pub fn parse_idle_after(arg: &str) -> Result<std::time::Duration, String> {
    match crate::fleet::units::parse_duration(arg)? {
        d if d.is_zero() => Err("must be more than zero".into()),
        d => Ok(d),
    }
}

/// A name per module path: its file stem, made unique with `-2`, `-3`, … when stems repeat.
pub fn module_names(paths: &[impl AsRef<Path>]) -> Vec<String> {
    let mut taken = HashSet::new();
    paths
        .iter()
        .map(|path| {
            let stem = path
                .as_ref()
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| "module".to_owned());
            let mut name = stem.clone();
            let mut n = 2;
            while !taken.insert(name.clone()) {
                name = format!("{stem}-{n}");
                n += 1;
            }
            name
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn names_are_stems_made_unique() {
        let names = module_names(&[
            "a/ring.wasm",
            "b/ring.wasm",
            "ring-2.wasm",
            "c/ring.wasm",
            "x/echo.wasm",
        ]);
        assert_eq!(names, ["ring", "ring-2", "ring-2-2", "ring-3", "echo"]);
    }

    #[test]
    fn env_pairs_parse() {
        assert_eq!(parse_env_pair("A=b=c"), Ok(("A".into(), "b=c".into())));
        assert_eq!(parse_env_pair("A="), Ok(("A".into(), String::new())));
        assert!(parse_env_pair("=x").is_err());
        assert!(parse_env_pair("novalue").is_err());
    }

    #[test]
    fn run_parses_all_options() {
        let cli = Cli::try_parse_from([
            "host-shim",
            "run",
            "--kubeconfig",
            "/k",
            "--context",
            "kind",
            "--stop-timeout",
            "3",
            "--env",
            "A=1",
            "--env",
            "B=2",
            "--shared-watches=false",
            "a.wasm",
            "b.wasm",
        ])
        .expect("parses");
        let Command::Run(args) = cli.command else {
            panic!("a run command")
        };
        assert_eq!(args.kubeconfig, Some(PathBuf::from("/k")));
        assert_eq!(args.context.as_deref(), Some("kind"));
        assert_eq!(args.stop_timeout, Some(3));
        assert_eq!(args.env.len(), 2);
        assert_eq!(args.shared_watches, Some(false));
        assert_eq!(args.modules.len(), 2);
        assert!(
            Cli::try_parse_from(["host-shim", "run"]).is_err(),
            "a module is required"
        );
    }

    #[test]
    fn suspend_options_parse() {
        let cli = Cli::try_parse_from([
            "host-shim",
            "run",
            "--suspend-after",
            "500ms",
            "--suspend-dir",
            "/s",
            "a.wasm",
        ])
        .expect("parses");
        let Command::Run(args) = cli.command else {
            panic!("a run command")
        };
        assert_eq!(
            args.suspend_after,
            Some(std::time::Duration::from_millis(500))
        );
        assert_eq!(args.suspend_dir, Some(PathBuf::from("/s")));
        for bad in ["0s", "soon"] {
            assert!(
                Cli::try_parse_from(["host-shim", "run", "--suspend-after", bad, "a.wasm"])
                    .is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn run_takes_a_manifest_instead_of_modules() {
        let cli =
            Cli::try_parse_from(["host-shim", "run", "--manifest", "host.yaml"]).expect("parses");
        let Command::Run(args) = cli.command else {
            panic!("a run command")
        };
        assert_eq!(args.manifest, Some(PathBuf::from("host.yaml")));
        assert!(args.modules.is_empty());
        assert!(
            Cli::try_parse_from(["host-shim", "run", "--manifest", "h.yaml", "a.wasm"]).is_err(),
            "a manifest and module files do not mix"
        );
        assert!(
            Cli::try_parse_from([
                "host-shim",
                "run",
                "--no-cache",
                "--cache-dir",
                "/c",
                "a.wasm"
            ])
            .is_err()
        );
    }
}
