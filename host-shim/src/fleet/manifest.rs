//! The host manifest (`host-shim run --manifest host.yaml`): which modules to run and how.
//!
//! ```yaml
//! cacheDir: /var/cache/kube-wasm     # optional: precompiled modules (see `cache`)
//! requestTimeout: 60s                # optional: longest wait for an HTTP response head
//! entryDeadline: 10s                 # optional: longest single call into a module
//! stopTimeout: 10s                   # optional: how long modules get to exit on SIGTERM
//! metricsAddr: 127.0.0.1:9090        # optional: serve Prometheus metrics at /metrics
//! sharedWatches: true                # optional, default true: identical watches of modules
//!                                    #   share one upstream LIST+WATCH (see `watch_cache`)
//! releaseReadHistory: true           # optional, default true: a shared watch keeps an event
//!                                    #   every live watch has taken for 5 s, not 75 s; a
//!                                    #   later resume from before it goes to the API server
//! releaseIdleStacks: true            # optional, default true: an idle module's fiber
//!                                    #   stack (`fiber_stacks`) and the dead pages of its
//!                                    #   shadow stack (`shadow_stack`) leave memory
//! funcRefProfile: true               # optional, default true: a module's first run with a
//!                                    #   cache profiles the func refs it calls through, and
//!                                    #   later compiles put them together (see `func_refs`)
//! compileInChild: true               # optional, default true: modules are compiled by a
//!                                    #   `host-shim compile` child process, so the host
//!                                    #   never holds the compiler's memory (see `compiler`)
//! http2: true                        # optional, default true: requests and watches of every
//!                                    #   module share HTTP/2 connections (see `http2`)
//! http2MaxStreams: 100               # optional, default 100: streams per connection before
//!                                    #   another opens (kube-apiserver allows 100)
//! suspendDir: /var/lib/kube-wasm     # optional: where snapshots of suspended modules go
//!                                    #   (default: <cacheDir>/suspended; see `suspend`)
//! suspendUnderPressure: true         # optional, default true: while the host's memory
//!                                    #   cgroup is nearly at its limit, modules with a
//!                                    #   `suspend` policy are suspended as soon as they
//!                                    #   are idle (see `suspend::pressure`)
//! insecureRegistries: [127.0.0.1:5000]  # optional: registries reached over plain HTTP
//! backoff:                           # optional: restart delays of failed modules
//!   initial: 1s
//!   max: 5m
//!   resetAfter: 10m
//! modules:
//!   - name: mirror-a                 # unique, a DNS label: [a-z0-9-], at most 63
//!     wasm: modules/configmap-mirror.wasm   # relative to the manifest's folder; or instead
//!   # image: registry.example/team/configmap-mirror:v1   # an OCI image (tag or @sha256:…)
//!   #                                #   pulled at start (see `oci`)
//!     namespace: team-a              # optional: the module's default namespace
//!     env: {RUST_LOG: info}          # optional: string values only
//!     args: ["--verbose"]            # optional: argv after the module name
//!     memory: 64Mi                   # optional, default 256Mi: linear memory cap
//!     restartPolicy: OnFailure       # optional: Always, OnFailure (default) or Never
//!     serviceAccount:                # optional: the host impersonates this ServiceAccount
//!       namespace: team-a            #   for every request of the module (see `identity`)
//!       name: mirror
//!     permissions:                   # optional: allowlist checked before a request leaves
//!       - verbs: [get, list, watch]  #   the host; none given: everything is allowed
//!         resources: [configmaps]    #   (see `permissions`)
//!       - verbs: [patch]
//!         apiGroups: [apps]          # optional, default [""] (the core group)
//!         resources: [deployments, deployments/scale]
//!     suspend:                       # optional: suspend to disk when idle (default: never)
//!       idleAfter: 30s               #   no delivery for this long (doubled, up to ×16, for
//!                                    #   a module woken sooner than this after a suspend)
//!       betweenTimers: true          #   optional: timers are foreseen — only watch events,
//!                                    #   the stop signal and stream messages count against
//!                                    #   idleness; suspended between timers at least
//!                                    #   min(idleAfter, 500ms) apart, resumed just ahead
//!       costFactor: 250              #   optional: …and only if the next timer is this many
//!                                    #   suspend-and-resume times away (0: timers decide)
//!     quotas:                        # optional: what the module may make the host hold at
//!       pendingOps: 1024             #   once (see `quota`; each field optional, defaults shown):
//!       concurrentRequests: 64       #   live ops; requests in flight; watches; websockets;
//!       watches: 64                  #   bodies in flight, responses being collected and
//!       streams: 16                  #   completions queued; stdout+stderr lines per second
//!       bufferedBytes: 64Mi          #   (a refused request, watch or stream gets a 429)
//!       logLinesPerSecond: 100
//! ```
//!
//! Unknown fields are errors (a misspelt `memroy:` must not silently mean "no limit"). Every
//! problem is reported at once, each naming the module and field, e.g.
//! `modules[3] (mirror-a).memory: "64Q" is not a size (…)`.

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;

use crate::backoff::Backoff;
use crate::fleet::module_fields::{
    QuotasSpec, RuleSpec, RunFields, SuspendSpec, check_dns_label, check_dns_subdomain,
};
use crate::fleet::units::parse_duration;
use crate::runtime::options::{ModuleOptions, ModuleSource, ModuleSpec};
use crate::upstream::http2::Http2Settings;
use crate::upstream::identity::ServiceAccount;

pub use crate::fleet::module_fields::{DEFAULT_MEMORY_LIMIT, MAX_MEMORY_LIMIT, MIN_MEMORY_LIMIT};

/// A validated manifest; paths are resolved against the manifest's folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// Where precompiled modules are kept (`cacheDir`), if set.
    pub cache_dir: Option<PathBuf>,
    /// Longest wait for the response head of an `http_request` (`requestTimeout`).
    pub request_timeout: Option<Duration>,
    /// Longest single call into a module before it is ended (`entryDeadline`).
    pub entry_deadline: Option<Duration>,
    /// Restart delays of failed modules (`backoff`).
    pub backoff: Backoff,
    /// How long modules get to exit after a stop request (`stopTimeout`).
    pub stop_timeout: Option<Duration>,
    /// Where the metrics endpoint listens (`metricsAddr`).
    pub metrics_addr: Option<std::net::SocketAddr>,
    /// Whether identical watches share one upstream LIST+WATCH (`sharedWatches`, default
    /// true).
    pub shared_watches: bool,
    /// Whether a shared watch releases the events every live watch has taken after
    /// [`CacheSettings::HISTORY_GRACE`](crate::upstream::watch_cache::CacheSettings::HISTORY_GRACE)
    /// rather than keeping them for the whole history age (`releaseReadHistory`, default
    /// true; see [`crate::upstream::watch_cache::store`]).
    pub release_read_history: bool,
    /// Whether an idle module's fiber stack and the dead pages of its shadow stack are
    /// released (`releaseIdleStacks`, default true; see [`crate::runtime::fiber_stacks`] and
    /// [`crate::runtime::shadow_stack`]).
    pub release_idle_stacks: bool,
    /// Whether modules' func refs are profiled and ordered (`funcRefProfile`, default true;
    /// see [`crate::runtime::func_refs`]).
    pub func_ref_profile: bool,
    /// Whether modules are compiled in a child process (`compileInChild`, default true; see
    /// [`crate::runtime::compiler`]).
    pub compile_in_child: bool,
    /// Whether idle modules with a suspend policy are suspended at once while the host's
    /// memory cgroup is nearly at its limit (`suspendUnderPressure`, default true; see
    /// [`crate::runtime::suspend::pressure`]).
    pub suspend_under_pressure: bool,
    /// How requests and watches share HTTP/2 connections (`http2`, default on;
    /// `http2MaxStreams`); `None`: kube's HTTP/1.1 client, one connection per watch (see
    /// [`crate::upstream::http2`]).
    pub http2: Option<Http2Settings>,
    /// Where snapshots of suspended modules go (`suspendDir`), if set.
    pub suspend_dir: Option<PathBuf>,
    /// Registries reached over plain HTTP (`insecureRegistries`, `host[:port]`).
    pub insecure_registries: Vec<String>,
    /// The modules, in manifest order (at least one).
    pub modules: Vec<ModuleSpec>,
}

/// Why a manifest cannot be used: unreadable, not YAML of the manifest's shape, or invalid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ManifestError {
    /// The file could not be read.
    #[error("cannot read the manifest {path}: {reason}")]
    Read {
        /// The manifest path.
        path: PathBuf,
        /// The I/O error.
        reason: String,
    },
    /// Not YAML, or not the manifest's shape (unknown field, wrong type, …).
    #[error("the manifest {path} is not valid: {reason}")]
    Syntax {
        /// The manifest path.
        path: PathBuf,
        /// The parser's message, with the location.
        reason: String,
    },
    /// Well-formed but with invalid values; every problem is listed.
    #[error("the manifest {path} has {} problem(s):\n{}", problems.len(), Problems(problems))]
    Invalid {
        /// The manifest path.
        path: PathBuf,
        /// One line per problem: `field path: what is wrong`.
        problems: Vec<String>,
    },
}

struct Problems<'a>(&'a [String]);

impl fmt::Display for Problems<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, problem) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "  - {problem}")?;
        }
        Ok(())
    }
}

// The manifest as written. Its doc comments are the field descriptions of the book's
// reference page (`docs/src/operating/reference.md`, rendered from [`Manifest::schema`]):
// say each field's unit, default and effect there.

/// A host manifest: which modules one host runs, and host-wide settings.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawManifest {
    /// Folder of precompiled modules, kept across restarts (relative to the manifest's
    /// folder; default `$XDG_CACHE_HOME/kube-wasm/host-shim`, else
    /// `~/.cache/kube-wasm/host-shim`).
    cache_dir: Option<String>,
    /// Longest wait for the response head of a module's request, a duration (default `60s`).
    request_timeout: Option<String>,
    /// Longest single call into a module before it is ended, a duration (default `10s`).
    entry_deadline: Option<String>,
    /// Restart delays of failed modules.
    backoff: Option<RawBackoff>,
    /// How long modules get to exit after a stop request (SIGTERM, SIGINT), a duration
    /// (default `10s`).
    stop_timeout: Option<String>,
    /// Address and port of the Prometheus metrics endpoint (`/metrics`), such as
    /// `127.0.0.1:9090`; none: no endpoint.
    metrics_addr: Option<String>,
    /// Whether identical watches of modules share one upstream LIST+WATCH (default `true`).
    shared_watches: Option<bool>,
    /// Whether a shared watch keeps an event every live watch has taken for 5 s instead of
    /// 75 s; a later resume from before it goes to the API server (default `true`).
    release_read_history: Option<bool>,
    /// Whether an idle module's fiber stack and the dead pages of its shadow stack are
    /// released once it has not run for 2 s (default `true`).
    release_idle_stacks: Option<bool>,
    /// Whether a module's first run profiles the func refs its instances call through, and
    /// later compiles put those functions together (default `true`).
    func_ref_profile: Option<bool>,
    /// Whether modules missing from the cache are compiled by a `host-shim compile` child
    /// process, so the host never holds the compiler's memory (default `true`).
    compile_in_child: Option<bool>,
    /// Whether modules with a suspend policy are suspended as soon as they are idle while
    /// the host's memory cgroup is nearly at its limit (default `true`).
    suspend_under_pressure: Option<bool>,
    /// Whether requests and watches of every module share HTTP/2 connections (default
    /// `true`); `false`: kube's HTTP/1.1 client, one connection per watch.
    http2: Option<bool>,
    /// Streams on one HTTP/2 connection before another opens (default 100, kube-apiserver's
    /// limit).
    http2_max_streams: Option<usize>,
    /// Folder of suspended modules' snapshots (relative to the manifest's folder; default
    /// `<cacheDir>/suspended`).
    suspend_dir: Option<String>,
    /// Registries reached over plain HTTP, as `host[:port]`.
    #[serde(default)]
    insecure_registries: Vec<String>,
    /// The modules (at least one).
    #[serde(default)]
    modules: Vec<RawModule>,
}

/// Restart delays of failed modules: the first delay, doubled at each failure up to `max`,
/// back to `initial` once a module has run for `resetAfter`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawBackoff {
    /// The first restart delay, a duration (default `1s`).
    initial: Option<String>,
    /// The longest restart delay, a duration (default `5m`).
    max: Option<String>,
    /// How long a module must run for its delay to start again from `initial`, a duration
    /// (default `10m`).
    reset_after: Option<String>,
}

/// One module of the manifest.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawModule {
    /// The module's name, unique in the manifest: a DNS label (`[a-z0-9-]`, at most 63).
    name: String,
    /// The module as a `.wasm` file, relative to the manifest's folder. Exactly one of `wasm`
    /// and `image`.
    wasm: Option<String>,
    /// The module as an OCI image reference (`registry/repo:tag` or `…@sha256:…`), pulled at
    /// start. Exactly one of `wasm` and `image`.
    image: Option<String>,
    /// The module's default namespace (default: the kubeconfig's).
    namespace: Option<String>,
    /// Environment variables, string values only (`KUBE_WASM_*` are the host's).
    #[serde(default)]
    env: BTreeMap<String, String>,
    /// Arguments after the module's name.
    #[serde(default)]
    args: Vec<String>,
    /// The cap on the module's linear memory, a size such as `64Mi` (default `256Mi`; from
    /// `64Ki` to `4Gi`).
    memory: Option<String>,
    /// `Always`, `OnFailure` (default: restarted unless it exits 0) or `Never`.
    restart_policy: Option<String>,
    /// The ServiceAccount the host impersonates for every request of the module; none: the
    /// host's own identity.
    service_account: Option<RawServiceAccount>,
    /// Allowlist checked before a request leaves the host; none: whatever the identity may;
    /// empty: nothing.
    permissions: Option<Vec<RuleSpec>>,
    /// Suspend the module to disk when idle; none: never suspended.
    suspend: Option<SuspendSpec>,
    /// What the module may make the host hold at once.
    quotas: Option<QuotasSpec>,
}

/// A ServiceAccount, by namespace and name.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawServiceAccount {
    /// Its namespace.
    namespace: String,
    /// Its name.
    name: String,
}

impl Manifest {
    /// The JSON schema of a manifest as written, with every field's description (the book's
    /// reference page is rendered from it).
    pub fn schema() -> schemars::Schema {
        schemars::schema_for!(RawManifest)
    }

    /// Reads and validates the manifest at `path`; relative paths in it are relative to its
    /// folder. Checks that every `wasm` file exists.
    ///
    /// # Errors
    /// [`ManifestError`], naming the file and every problem.
    pub fn load(path: &Path) -> Result<Self, ManifestError> {
        let text = std::fs::read_to_string(path).map_err(|e| ManifestError::Read {
            path: path.to_owned(),
            reason: e.to_string(),
        })?;
        let base = path.parent().unwrap_or(Path::new("."));
        Self::parse(&text, base, path)
    }

    /// Parses and validates manifest `text`, resolving relative paths against `base`; `path`
    /// only names the manifest in errors.
    ///
    /// # Errors
    /// [`ManifestError::Syntax`] or [`ManifestError::Invalid`].
    pub fn parse(text: &str, base: &Path, path: &Path) -> Result<Self, ManifestError> {
        let raw: RawManifest = serde_saphyr::from_str(text).map_err(|e| ManifestError::Syntax {
            path: path.to_owned(),
            reason: e.to_string(),
        })?;
        let mut problems = Vec::new();
        let manifest = validate(raw, base, &mut problems);
        if problems.is_empty() {
            Ok(manifest)
        } else {
            Err(ManifestError::Invalid {
                path: path.to_owned(),
                problems,
            })
        }
    }
}

fn validate(raw: RawManifest, base: &Path, problems: &mut Vec<String>) -> Manifest {
    let mut duration = |field: &str, text: Option<String>| -> Option<Duration> {
        let text = text?;
        match parse_duration(&text) {
            Ok(d) if d.is_zero() => {
                problems.push(format!("{field}: must be more than zero"));
                None
            }
            Ok(d) => Some(d),
            Err(e) => {
                problems.push(format!("{field}: {e}"));
                None
            }
        }
    };
    let request_timeout = duration("requestTimeout", raw.request_timeout);
    let entry_deadline = duration("entryDeadline", raw.entry_deadline);
    let stop_timeout = duration("stopTimeout", raw.stop_timeout);
    let mut backoff = Backoff::default();
    if let Some(b) = raw.backoff {
        backoff.initial = duration("backoff.initial", b.initial).unwrap_or(backoff.initial);
        backoff.max = duration("backoff.max", b.max).unwrap_or(backoff.max);
        backoff.reset_after =
            duration("backoff.resetAfter", b.reset_after).unwrap_or(backoff.reset_after);
    }
    let metrics_addr = raw.metrics_addr.and_then(|addr| match addr.parse() {
        Ok(addr) => Some(addr),
        Err(e) => {
            problems.push(format!(
                "metricsAddr: {addr:?} is not an IP address and port, like 127.0.0.1:9090 ({e})"
            ));
            None
        }
    });
    if raw.http2_max_streams == Some(0) {
        problems.push("http2MaxStreams: must be at least 1".into());
    }
    let http2 = raw.http2.unwrap_or(true).then(|| {
        let defaults = Http2Settings::default();
        Http2Settings {
            max_streams_per_connection: raw
                .http2_max_streams
                .unwrap_or(defaults.max_streams_per_connection),
            ..defaults
        }
    });
    if raw.modules.is_empty() {
        problems.push("modules: lists no module".into());
    }
    let mut names = HashSet::new();
    let modules = raw
        .modules
        .into_iter()
        .enumerate()
        .map(|(index, module)| {
            let at = format!("modules[{index}] ({})", module.name);
            if !names.insert(module.name.clone()) {
                problems.push(format!(
                    "{at}.name: {:?} is used by an earlier module",
                    module.name
                ));
            }
            validate_module(module, &at, base, problems)
        })
        .collect();
    Manifest {
        cache_dir: raw.cache_dir.map(|dir| base.join(dir)),
        request_timeout,
        entry_deadline,
        backoff,
        stop_timeout,
        metrics_addr,
        shared_watches: raw.shared_watches.unwrap_or(true),
        release_read_history: raw.release_read_history.unwrap_or(true),
        release_idle_stacks: raw.release_idle_stacks.unwrap_or(true),
        func_ref_profile: raw.func_ref_profile.unwrap_or(true),
        compile_in_child: raw.compile_in_child.unwrap_or(true),
        suspend_under_pressure: raw.suspend_under_pressure.unwrap_or(true),
        http2,
        suspend_dir: raw.suspend_dir.map(|dir| base.join(dir)),
        insecure_registries: raw.insecure_registries,
        modules,
    }
}

fn validate_module(
    raw: RawModule,
    at: &str,
    base: &Path,
    problems: &mut Vec<String>,
) -> ModuleSpec {
    if let Err(e) = check_dns_label(&raw.name) {
        problems.push(format!("{at}.name: {e}"));
    }
    if let Some(ns) = &raw.namespace
        && let Err(e) = check_dns_label(ns)
    {
        problems.push(format!("{at}.namespace: {e}"));
    }
    let source = match (raw.wasm, raw.image) {
        (Some(wasm), None) => {
            let path = base.join(&wasm);
            if wasm.is_empty() {
                problems.push(format!("{at}.wasm: is empty"));
            } else if !path.is_file() {
                problems.push(format!("{at}.wasm: {} is not a file", path.display()));
            }
            ModuleSource::File(path)
        }
        (None, Some(image)) => {
            if let Err(e) = image.parse::<oci_client::Reference>() {
                problems.push(format!(
                    "{at}.image: {image:?} is not an image reference ({e})"
                ));
            }
            ModuleSource::Image(image)
        }
        (Some(_), Some(_)) => {
            problems.push(format!("{at}: has both `wasm` and `image`; give one"));
            ModuleSource::File(PathBuf::new())
        }
        (None, None) => {
            problems.push(format!(
                "{at}: has neither `wasm` (a file) nor `image` (an OCI reference)"
            ));
            ModuleSource::File(PathBuf::new())
        }
    };
    let service_account = raw.service_account.map(|sa| {
        for (field, value) in [("namespace", &sa.namespace), ("name", &sa.name)] {
            if let Err(e) = check_dns_subdomain(value) {
                problems.push(format!("{at}.serviceAccount.{field}: {e}"));
            }
        }
        ServiceAccount {
            namespace: sa.namespace,
            name: sa.name,
        }
    });
    let fields = RunFields {
        env: raw.env,
        args: raw.args,
        memory: raw.memory,
        restart_policy: raw.restart_policy,
        permissions: raw.permissions,
        suspend: raw.suspend,
        quotas: raw.quotas,
    }
    .validate(at, problems);
    ModuleSpec {
        name: raw.name,
        source,
        options: ModuleOptions {
            namespace: raw.namespace,
            service_account,
            ..fields
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::quota::Quotas;
    use crate::runtime::restart::RestartPolicy;
    use crate::runtime::suspend::SuspendPolicy;
    use crate::upstream::permissions::Permissions;

    fn parse(text: &str) -> Result<Manifest, ManifestError> {
        // Cargo.toml exists in the crate folder: a stand-in for a wasm file that exists.
        Manifest::parse(
            text,
            Path::new(env!("CARGO_MANIFEST_DIR")),
            Path::new("host.yaml"),
        )
    }

    fn problems(text: &str) -> Vec<String> {
        match parse(text) {
            Err(ManifestError::Invalid { problems, .. }) => problems,
            other => panic!("expected invalid, got {other:?}"),
        }
    }

    #[test]
    fn a_full_manifest_parses_with_paths_resolved() {
        let manifest = parse(
            r#"
cacheDir: cache
requestTimeout: 30s
entryDeadline: 2s
stopTimeout: 3s
metricsAddr: "127.0.0.1:9090"
sharedWatches: false
releaseReadHistory: false
releaseIdleStacks: false
funcRefProfile: false
compileInChild: false
suspendUnderPressure: false
http2MaxStreams: 7
backoff: {initial: 100ms, max: 2s, resetAfter: 1m}
modules:
  - name: mirror-a
    wasm: Cargo.toml
    namespace: team-a
    env: {RUST_LOG: debug, MODE: "1"}
    args: ["--x", "y"]
    memory: 64Mi
    restartPolicy: Never
  - name: mirror-b
    wasm: Cargo.toml
"#,
        )
        .expect("valid");
        let base = Path::new(env!("CARGO_MANIFEST_DIR"));
        assert_eq!(manifest.cache_dir, Some(base.join("cache")));
        assert_eq!(manifest.request_timeout, Some(Duration::from_secs(30)));
        assert_eq!(manifest.entry_deadline, Some(Duration::from_secs(2)));
        assert_eq!(manifest.stop_timeout, Some(Duration::from_secs(3)));
        assert_eq!(
            manifest.metrics_addr,
            Some("127.0.0.1:9090".parse().expect("an address"))
        );
        assert!(!manifest.shared_watches);
        assert!(!manifest.release_read_history);
        assert!(!manifest.release_idle_stacks);
        assert!(!manifest.func_ref_profile);
        assert!(!manifest.compile_in_child);
        assert!(!manifest.suspend_under_pressure);
        assert_eq!(
            manifest.http2,
            Some(Http2Settings {
                max_streams_per_connection: 7,
                ..Http2Settings::default()
            })
        );
        assert_eq!(manifest.backoff.initial, Duration::from_millis(100));
        assert_eq!(manifest.backoff.reset_after, Duration::from_secs(60));
        let a = &manifest.modules[0].options;
        assert_eq!(
            manifest.modules[0].source,
            ModuleSource::File(base.join("Cargo.toml"))
        );
        assert_eq!(a.namespace.as_deref(), Some("team-a"));
        assert_eq!(
            a.env,
            [
                ("MODE".into(), "1".into()),
                ("RUST_LOG".into(), "debug".into())
            ]
        );
        assert_eq!(a.args, ["--x", "y"]);
        assert_eq!(a.memory_limit, Some(64 << 20));
        assert_eq!(a.restart, RestartPolicy::Never);
        let b = &manifest.modules[1].options;
        assert_eq!(
            (b.memory_limit, b.restart),
            (
                Some(DEFAULT_MEMORY_LIMIT as usize),
                RestartPolicy::OnFailure
            )
        );
    }

    #[test]
    fn http2_is_on_by_default_and_can_be_turned_off() {
        let one = "modules:\n  - {name: a, wasm: Cargo.toml}\n";
        let default = parse(one).expect("valid");
        assert_eq!(default.http2, Some(Http2Settings::default()));
        let off = parse(&format!("http2: false\nhttp2MaxStreams: 5\n{one}")).expect("valid");
        assert_eq!(off.http2, None);
    }

    #[test]
    fn every_problem_is_reported_with_module_and_field() {
        let found = problems(
            r#"
requestTimeout: 0s
metricsAddr: localhost
http2MaxStreams: 0
modules:
  - {name: ok, wasm: Cargo.toml}
  - {name: ok, wasm: missing.wasm}
  - {name: Bad_Name, wasm: Cargo.toml, namespace: "-x"}
  - {name: big, wasm: Cargo.toml, memory: 64Q, restartPolicy: Sometimes}
  - {name: tiny, wasm: Cargo.toml, memory: "1024", env: {KUBE_WASM_MODULE: x, "A=B": y}}
"#,
        );
        let expected = [
            "requestTimeout: must be more than zero",
            "metricsAddr: \"localhost\" is not an IP address and port",
            "http2MaxStreams: must be at least 1",
            "modules[1] (ok).name: \"ok\" is used by an earlier module",
            "modules[1] (ok).wasm: ",
            "modules[2] (Bad_Name).name: \"Bad_Name\" is not a DNS label",
            "modules[2] (Bad_Name).namespace: \"-x\" is not a DNS label",
            "modules[3] (big).memory: \"64Q\" is not a size",
            "modules[3] (big).restartPolicy: \"Sometimes\" is not a restart policy",
            "modules[4] (tiny).env: \"A=B\" is not a variable name",
            "modules[4] (tiny).env.KUBE_WASM_MODULE: the host sets KUBE_WASM_* variables",
            "modules[4] (tiny).memory: 1024 bytes is outside",
        ];
        for want in expected {
            assert!(
                found.iter().any(|p| p.starts_with(want)),
                "missing {want:?} in {found:#?}"
            );
        }
        assert_eq!(found.len(), expected.len(), "{found:#?}");
    }

    #[test]
    fn unknown_fields_and_wrong_types_are_syntax_errors() {
        for (text, needle) in [
            (
                "modules:\n  - {name: a, wasm: Cargo.toml, memroy: 1Mi}\n",
                "memroy",
            ),
            (
                "modules:\n  - {name: a, wasm: Cargo.toml, serviceAccount: {name: x}}\n",
                "namespace",
            ),
            (
                "modules:\n  - {name: a, wasm: Cargo.toml, permissions: [{verbs: [get], resource: [x]}]}\n",
                "resource",
            ),
            ("modulez: []\n", "modulez"),
            ("modules:\n  - {name: a, wasm: Cargo.toml, args: 3}\n", ""),
            ("modules: [\n", ""),
        ] {
            match parse(text) {
                Err(err @ ManifestError::Syntax { .. }) => {
                    let message = err.to_string();
                    assert!(message.contains(needle), "{message}");
                    assert!(message.contains("host.yaml"), "{message}");
                }
                other => panic!("{text}: expected a syntax error, got {other:?}"),
            }
        }
    }

    #[test]
    fn identity_and_permissions_parse() {
        let manifest = parse(
            r#"
modules:
  - name: a
    wasm: Cargo.toml
    serviceAccount: {namespace: team-a, name: mirror}
    permissions:
      - {verbs: [get, list, watch], resources: [configmaps]}
      - {verbs: ["*"], apiGroups: [apps, ""], resources: [deployments/scale, "*/status"]}
  - name: b
    wasm: Cargo.toml
    permissions: []
"#,
        )
        .expect("valid");
        let a = &manifest.modules[0].options;
        assert_eq!(
            a.service_account,
            Some(ServiceAccount {
                namespace: "team-a".into(),
                name: "mirror".into()
            })
        );
        let rules = &a.permissions.as_ref().expect("rules").rules;
        assert_eq!(rules[0].api_groups, [""], "the core group by default");
        assert_eq!(rules[1].api_groups, ["apps", ""]);
        assert_eq!(rules[1].resources, ["deployments/scale", "*/status"]);
        assert_eq!(
            manifest.modules[1].options.permissions,
            Some(Permissions::default()),
            "an empty list allows nothing"
        );
    }

    #[test]
    fn bad_identity_and_permissions_name_module_and_field() {
        let found = problems(
            r#"
modules:
  - name: a
    wasm: Cargo.toml
    serviceAccount: {namespace: Team, name: ""}
    permissions:
      - {verbs: [get, read], resources: [configmaps, "pods/log/x", Secrets]}
      - {verbs: [], apiGroups: ["apps/v1"], resources: []}
"#,
        );
        let expected = [
            "modules[0] (a).serviceAccount.namespace: \"Team\" is not a DNS subdomain",
            "modules[0] (a).serviceAccount.name: \"\" is not a DNS subdomain",
            "modules[0] (a).permissions[0].verbs: \"read\" is not a verb",
            "modules[0] (a).permissions[0].resources: \"pods/log/x\" is not a resource",
            "modules[0] (a).permissions[0].resources: \"Secrets\" is not a resource",
            "modules[0] (a).permissions[1].verbs: lists no verb",
            "modules[0] (a).permissions[1].resources: lists no resource",
            "modules[0] (a).permissions[1].apiGroups: \"apps/v1\" is not an API group",
        ];
        for want in expected {
            assert!(
                found.iter().any(|p| p.starts_with(want)),
                "missing {want:?} in {found:#?}"
            );
        }
        assert_eq!(found.len(), expected.len(), "{found:#?}");
    }

    #[test]
    fn suspend_settings_parse_and_are_checked() {
        let manifest = parse(
            r#"
suspendDir: snapshots
modules:
  - {name: a, wasm: Cargo.toml, suspend: {idleAfter: 30s}}
  - {name: b, wasm: Cargo.toml}
  - {name: c, wasm: Cargo.toml, suspend: {idleAfter: 2s, betweenTimers: false}}
"#,
        )
        .expect("valid");
        let base = Path::new(env!("CARGO_MANIFEST_DIR"));
        assert_eq!(manifest.suspend_dir, Some(base.join("snapshots")));
        assert_eq!(
            manifest.modules[0].options.suspend,
            Some(SuspendPolicy::after(Duration::from_secs(30)))
        );
        assert_eq!(
            manifest.modules[1].options.suspend, None,
            "never suspended by default"
        );
        assert_eq!(
            manifest.modules[2].options.suspend,
            Some(SuspendPolicy::after(Duration::from_secs(2)).between_timers(false))
        );
        assert!(
            SuspendPolicy::after(Duration::from_secs(30)).between_timers,
            "between timers by default"
        );

        let found = problems(
            r#"
modules:
  - {name: a, wasm: Cargo.toml, suspend: {idleAfter: 0s}}
  - {name: b, wasm: Cargo.toml, suspend: {idleAfter: soon}}
"#,
        );
        let expected = [
            "modules[0] (a).suspend.idleAfter: must be more than zero",
            "modules[1] (b).suspend.idleAfter: \"soon\" is not a duration",
        ];
        for want in expected {
            assert!(
                found.iter().any(|p| p.starts_with(want)),
                "missing {want:?} in {found:#?}"
            );
        }
        assert_eq!(found.len(), expected.len(), "{found:#?}");

        for (text, needle) in [
            (
                "modules:\n  - {name: a, wasm: Cargo.toml, suspend: {idleafter: 1s}}\n",
                "idleafter",
            ),
            (
                "modules:\n  - {name: a, wasm: Cargo.toml, suspend: {}}\n",
                "idleAfter",
            ),
            (
                "modules:\n  - {name: a, wasm: Cargo.toml, suspend: 30s}\n",
                "",
            ),
            ("suspenddir: x\nmodules: []\n", "suspenddir"),
        ] {
            match parse(text) {
                Err(err @ ManifestError::Syntax { .. }) => {
                    let message = err.to_string();
                    assert!(message.contains(needle), "{message}");
                }
                other => panic!("{text}: expected a syntax error, got {other:?}"),
            }
        }
    }

    #[test]
    fn quotas_parse_with_defaults_and_are_checked() {
        let manifest = parse(
            "modules:
  - {name: a, wasm: Cargo.toml, quotas: {watches: 3, bufferedBytes: 1Mi, logLinesPerSecond: 0}}
  - {name: b, wasm: Cargo.toml}
",
        )
        .expect("valid");
        let a = manifest.modules[0].options.quotas;
        assert_eq!(
            a,
            Quotas {
                watches: 3,
                buffered_bytes: 1 << 20,
                log_lines_per_second: 0,
                ..Quotas::default()
            }
        );
        assert_eq!(manifest.modules[1].options.quotas, Quotas::default());
        assert_eq!(
            problems(
                "modules:
  - {name: a, wasm: Cargo.toml, quotas: {pendingOps: 0, streams: 2000000, bufferedBytes: 1Ki}}
  - {name: b, wasm: Cargo.toml, quotas: {bufferedBytes: lots}}
"
            ),
            [
                "modules[0] (a).quotas.pendingOps: 0 is outside 1 ..= 1048576",
                "modules[0] (a).quotas.streams: 2000000 is outside 1 ..= 1048576",
                "modules[0] (a).quotas.bufferedBytes: 1024 bytes is outside 64Ki ..= 4Gi - 1",
                "modules[1] (b).quotas.bufferedBytes: \"lots\" is not a size (a whole number of bytes, optionally with Ki, Mi, Gi, Ti, k, M, G or T)",
            ]
        );
        assert!(
            matches!(
                parse("modules:\n  - {name: a, wasm: Cargo.toml, quotas: {watchs: 1}}\n"),
                Err(ManifestError::Syntax { reason, .. }) if reason.contains("watchs")
            ),
            "a misspelt quota is an error"
        );
    }

    #[test]
    fn an_empty_module_list_is_invalid() {
        assert_eq!(problems("modules: []\n"), ["modules: lists no module"]);
        assert_eq!(problems("{}\n"), ["modules: lists no module"]);
    }

    #[test]
    fn dns_labels() {
        for ok in ["a", "mirror-1", "0abc", &"a".repeat(63)] {
            assert!(check_dns_label(ok).is_ok(), "{ok}");
        }
        for bad in ["", "A", "a_b", "-a", "a-", "a.b", &"a".repeat(64)] {
            assert!(check_dns_label(bad).is_err(), "{bad}");
        }
    }
}
