//! What `host-shim run` runs, resolved once from its two sources — the command line
//! ([`RunArgs`]) and the manifest ([`Manifest`]) — into the host's [`Settings`] and one
//! [`ModuleSpec`] per module.
//!
//! One precedence for every host-wide setting: **command line > manifest > default**. A
//! module's own manifest setting beats the command line's default for all modules
//! (`--suspend-after`); `--env` variables reach every module, and a module's own `env`
//! overrides them when it starts.

use std::net::SocketAddr;
use std::time::Duration;

use crate::fleet::cli::{RunArgs, module_names};
use crate::fleet::config::ClusterSource;
use crate::fleet::manifest::{Manifest, ManifestError};
use crate::fleet::oci::RegistrySettings;
use crate::fleet::placement::PlacementConfig;
use crate::runtime::compiler::Compiler;
use crate::runtime::host::Settings;
use crate::runtime::options::{ModuleOptions, ModuleSource, ModuleSpec};
use crate::runtime::suspend::SuspendPolicy;
use crate::runtime::suspend::pressure::PressureSource;
use crate::upstream::http2::Http2Settings;
use crate::upstream::limits::OpLimits;
use crate::upstream::watch_cache::CacheSettings;

/// Seconds modules get to exit after a stop request unless `--stop-timeout` or the manifest's
/// `stopTimeout` say otherwise.
pub const DEFAULT_STOP_SECS: u64 = 10;

/// Everything `host-shim run` needs, resolved.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// Where the cluster's kube `Config` comes from (`--kubeconfig`, `--context`).
    pub cluster: ClusterSource,
    /// How the host runs modules.
    pub settings: Settings,
    /// How long modules get to exit after a stop request.
    pub stop_timeout: Duration,
    /// Where the metrics endpoint listens, if anywhere.
    pub metrics_addr: Option<SocketAddr>,
    /// How requests and watches share HTTP/2 connections (manifest `http2`, default on);
    /// `None`: kube's HTTP/1.1 client.
    pub http2: Option<Http2Settings>,
    /// How registries are reached, for modules given as images.
    pub registries: RegistrySettings,
    /// Whether the host also runs the cluster's WasmControllers, and how.
    pub controllers: Option<ControllersConfig>,
    /// The modules, in order.
    pub modules: Vec<ModuleSpec>,
}

/// How the host runs the cluster's WasmControllers (`--controllers`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllersConfig {
    /// Their namespaces; empty: all.
    pub namespaces: Vec<String>,
    /// This replica's name and membership (`--host-name`, `--lease-namespace`, …).
    pub placement: PlacementConfig,
    /// Where a WasmController's `path` is read from, if anywhere.
    pub local_modules: Option<std::path::PathBuf>,
}

/// The placement the flags give (defaults: [`PlacementConfig::new`]).
fn placement_of(args: &RunArgs) -> PlacementConfig {
    let defaults = PlacementConfig::new(
        args.host_name.clone().unwrap_or_else(default_host_name),
        args.lease_namespace.clone(),
    );
    PlacementConfig {
        lease_duration: args.lease_duration.unwrap_or(defaults.lease_duration),
        renew_deadline: args.renew_deadline.unwrap_or(defaults.renew_deadline),
        renew_period: args.renew_period.unwrap_or(defaults.renew_period),
        ..defaults
    }
}

/// `POD_NAME`, else the machine's host name, else `host-shim`.
fn default_host_name() -> String {
    std::env::var("POD_NAME")
        .ok()
        .filter(|n| !n.is_empty())
        .or_else(|| {
            std::fs::read_to_string("/proc/sys/kernel/hostname")
                .ok()
                .map(|n| n.trim().to_owned())
                .filter(|n| !n.is_empty())
        })
        .unwrap_or_else(|| "host-shim".to_owned())
}

impl RunConfig {
    /// Reads and validates the manifest `args` name, if any, and resolves the configuration.
    ///
    /// # Errors
    /// [`ManifestError`] if the manifest cannot be read or is invalid.
    pub fn load(args: RunArgs) -> Result<Self, ManifestError> {
        let manifest = args.manifest.as_deref().map(Manifest::load).transpose()?;
        Ok(Self::resolve(args, manifest))
    }

    /// Resolves the configuration from the command line and the (validated) manifest.
    pub fn resolve(args: RunArgs, manifest: Option<Manifest>) -> Self {
        let suspend_after = args.suspend_after.map(SuspendPolicy::after);
        let placement = placement_of(&args);
        let (modules, manifest) = match manifest {
            Some(mut manifest) => {
                let mut modules = std::mem::take(&mut manifest.modules);
                for module in &mut modules {
                    module.options.suspend = module.options.suspend.or(suspend_after);
                }
                (modules, Some(manifest))
            }
            None => {
                let modules = module_names(&args.modules)
                    .into_iter()
                    .zip(&args.modules)
                    .map(|(name, wasm)| ModuleSpec {
                        name,
                        source: ModuleSource::File(wasm.clone()),
                        options: ModuleOptions {
                            suspend: suspend_after,
                            ..ModuleOptions::default()
                        },
                    })
                    .collect();
                (modules, None)
            }
        };
        let manifest = manifest.as_ref();
        let cache_dir = if args.no_cache {
            None
        } else {
            args.cache_dir
                .clone()
                .or_else(|| manifest.and_then(|m| m.cache_dir.clone()))
                .or_else(crate::runtime::cache::default_dir)
        };
        let defaults = Settings::default();
        let settings = Settings {
            env: args.env,
            // Instances allocated on demand, never from a pool: a pooled store keeps its
            // fiber stack's touched pages for its whole life, an on-demand one gives them
            // back while its module is idle (`runtime::fiber_stacks`).
            pool: None,
            cache_dir,
            backoff: manifest.map(|m| m.backoff).unwrap_or(defaults.backoff),
            limits: OpLimits {
                request_timeout: manifest
                    .and_then(|m| m.request_timeout)
                    .or(defaults.limits.request_timeout),
                ..defaults.limits
            },
            entry_deadline: manifest
                .and_then(|m| m.entry_deadline)
                .unwrap_or(defaults.entry_deadline),
            shared_watches: args
                .shared_watches
                .unwrap_or(manifest.is_none_or(|m| m.shared_watches))
                .then(|| CacheSettings {
                    history_grace: manifest
                        .is_none_or(|m| m.release_read_history)
                        .then_some(CacheSettings::HISTORY_GRACE),
                    ..CacheSettings::default()
                }),
            suspend_dir: args
                .suspend_dir
                .or_else(|| manifest.and_then(|m| m.suspend_dir.clone())),
            release_idle_stacks: defaults
                .release_idle_stacks
                .filter(|_| manifest.is_none_or(|m| m.release_idle_stacks)),
            func_ref_profile: manifest.is_none_or(|m| m.func_ref_profile),
            memory_pressure: if manifest.is_none_or(|m| m.suspend_under_pressure) {
                PressureSource::OwnCgroup
            } else {
                PressureSource::Off
            },
            compiler: if manifest.is_none_or(|m| m.compile_in_child) {
                Compiler::this_binary()
            } else {
                Compiler::InProcess
            },
            ..defaults
        };
        Self {
            cluster: ClusterSource {
                kubeconfig: args.kubeconfig,
                context: args.context,
            },
            settings,
            stop_timeout: args
                .stop_timeout
                .map(Duration::from_secs)
                .or_else(|| manifest.and_then(|m| m.stop_timeout))
                .unwrap_or(Duration::from_secs(DEFAULT_STOP_SECS)),
            metrics_addr: args
                .metrics_addr
                .or_else(|| manifest.and_then(|m| m.metrics_addr)),
            http2: manifest.map_or(Some(Http2Settings::default()), |m| m.http2),
            controllers: args.controllers.then(|| ControllersConfig {
                namespaces: args.namespaces.clone(),
                placement,
                local_modules: args.local_modules.clone(),
            }),
            registries: RegistrySettings {
                insecure: args
                    .insecure_registries
                    .iter()
                    .chain(manifest.iter().flat_map(|m| &m.insecure_registries))
                    .cloned()
                    .collect(),
            },
            modules,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::cli::{Cli, Command};
    use clap::Parser as _;
    use std::path::PathBuf;

    fn module<'a>(config: &'a RunConfig, name: &str) -> Option<&'a ModuleSpec> {
        config.modules.iter().find(|m| m.name == name)
    }

    fn args(line: &[&str]) -> RunArgs {
        let mut argv = vec!["host-shim", "run"];
        argv.extend_from_slice(line);
        let Command::Run(args) = Cli::try_parse_from(argv).expect("valid arguments").command else {
            panic!("a run command")
        };
        *args
    }

    /// [`MANIFEST`] loaded from a folder of its own (named after `test`) holding its modules.
    fn manifest(test: &str) -> Manifest {
        let dir = std::env::temp_dir().join(format!("run-config-{}-{test}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        for module in ["a.wasm", "b.wasm"] {
            std::fs::write(dir.join(module), b"\0asm").expect("written");
        }
        let path = dir.join("host.yaml");
        std::fs::write(&path, MANIFEST).expect("written");
        let manifest = Manifest::load(&path).expect("a valid manifest");
        let _ = std::fs::remove_dir_all(&dir);
        manifest
    }

    const MANIFEST: &str = "\
cacheDir: /m/cache
suspendDir: /m/suspended
stopTimeout: 5s
metricsAddr: 127.0.0.1:9002
sharedWatches: false
releaseIdleStacks: false
funcRefProfile: false
compileInChild: false
suspendUnderPressure: false
requestTimeout: 7s
entryDeadline: 3s
modules:
  - {name: a, wasm: a.wasm, suspend: {idleAfter: 2s}, memory: 32Mi}
  - {name: b, wasm: b.wasm}
";

    #[test]
    fn the_command_line_beats_the_manifest() {
        let config = RunConfig::resolve(
            args(&[
                "--manifest=/m/host.yaml",
                "--stop-timeout=3",
                "--metrics-addr=127.0.0.1:9001",
                "--shared-watches=true",
                "--cache-dir=/c/cache",
                "--suspend-dir=/c/suspended",
                "--suspend-after=9s",
                "--env=A=1",
            ]),
            Some(manifest("cli")),
        );
        assert_eq!(config.stop_timeout, Duration::from_secs(3));
        assert_eq!(
            config.metrics_addr,
            Some("127.0.0.1:9001".parse().expect("addr"))
        );
        assert!(config.settings.shared_watches.is_some());
        assert_eq!(config.settings.cache_dir, Some(PathBuf::from("/c/cache")));
        assert_eq!(
            config.settings.suspend_dir,
            Some(PathBuf::from("/c/suspended"))
        );
        assert_eq!(config.settings.env, [("A".to_owned(), "1".to_owned())]);
        // A module's own setting beats the command line's default for every module.
        let suspend = |name: &str| module(&config, name).and_then(|m| m.options.suspend);
        assert_eq!(
            suspend("a"),
            Some(SuspendPolicy::after(Duration::from_secs(2)))
        );
        assert_eq!(
            suspend("b"),
            Some(SuspendPolicy::after(Duration::from_secs(9)))
        );
        assert!(
            RunConfig::resolve(
                args(&["--manifest=/m/host.yaml", "--no-cache"]),
                Some(manifest("no-cache"))
            )
            .settings
            .cache_dir
            .is_none(),
            "--no-cache beats every cache folder"
        );
    }

    #[test]
    fn the_manifest_beats_the_defaults() {
        let config = RunConfig::resolve(
            args(&["--manifest=/m/host.yaml"]),
            Some(manifest("manifest")),
        );
        assert_eq!(config.stop_timeout, Duration::from_secs(5));
        assert_eq!(
            config.metrics_addr,
            Some("127.0.0.1:9002".parse().expect("addr"))
        );
        assert!(config.settings.shared_watches.is_none());
        assert_eq!(config.settings.release_idle_stacks, None);
        assert!(!config.settings.func_ref_profile);
        assert_eq!(config.settings.memory_pressure, PressureSource::Off);
        assert_eq!(config.settings.compiler, Compiler::InProcess);
        assert_eq!(config.settings.cache_dir, Some(PathBuf::from("/m/cache")));
        assert_eq!(
            config.settings.suspend_dir,
            Some(PathBuf::from("/m/suspended"))
        );
        assert_eq!(
            config.settings.limits.request_timeout,
            Some(Duration::from_secs(7))
        );
        assert_eq!(config.settings.entry_deadline, Duration::from_secs(3));
        assert_eq!(config.settings.pool, None, "allocated on demand");
        assert_eq!(module(&config, "b").and_then(|m| m.options.suspend), None);
    }

    #[test]
    fn release_read_history_false_keeps_the_whole_history_age() {
        let mut manifest = manifest("read-history");
        manifest.shared_watches = true;
        manifest.release_read_history = false;
        let config = RunConfig::resolve(args(&["--manifest=/m/host.yaml"]), Some(manifest));
        let cache = config.settings.shared_watches.expect("shared");
        assert_eq!(cache.history_grace, None);
        assert_eq!(cache.history_age, CacheSettings::default().history_age);
    }

    #[test]
    fn without_either_the_defaults_hold() {
        let config = RunConfig::resolve(args(&["/x/mirror.wasm", "/y/mirror.wasm"]), None);
        let defaults = Settings::default();
        assert_eq!(config.stop_timeout, Duration::from_secs(DEFAULT_STOP_SECS));
        assert_eq!(config.metrics_addr, None);
        assert_eq!(
            config.settings.shared_watches,
            Some(CacheSettings::default()),
            "shared, releasing read history, unless told not to"
        );
        assert_eq!(
            CacheSettings::default().history_grace,
            Some(CacheSettings::HISTORY_GRACE)
        );
        assert_eq!(config.settings.suspend_dir, None);
        assert_eq!(
            config.settings.release_idle_stacks, defaults.release_idle_stacks,
            "idle stacks released unless told not to"
        );
        assert!(defaults.release_idle_stacks.is_some());
        assert!(
            config.settings.func_ref_profile && defaults.func_ref_profile,
            "func refs profiled unless told not to"
        );
        assert_eq!(
            (&config.settings.memory_pressure, &defaults.memory_pressure),
            (&PressureSource::OwnCgroup, &PressureSource::OwnCgroup),
            "idle modules suspended at once under memory pressure unless told not to"
        );
        assert_eq!(
            config.settings.compiler,
            Compiler::this_binary(),
            "compiled in a child unless told not to"
        );
        assert_eq!(config.settings.limits, defaults.limits);
        assert_eq!(config.settings.entry_deadline, defaults.entry_deadline);
        assert_eq!(config.settings.pool, None, "allocated on demand");
        let names: Vec<&str> = config.modules.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["mirror", "mirror-2"]);
        assert!(
            config
                .modules
                .iter()
                .all(|m| m.options == ModuleOptions::default())
        );
        assert_eq!(config.cluster, ClusterSource::default());
    }
}
