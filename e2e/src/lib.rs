//! The test kit of the end-to-end tests, the parity suite (`compat-tests/parity`) and the
//! benchmark (`bench`): the environment the test command prepares (a running control plane,
//! built wasm modules, the host shim), fresh namespaces, programs whose output can be awaited
//! line by line, and in modules the apiserver's audit log ([`audit`]), host manifests
//! ([`manifest`]), the host's metrics ([`metrics`]), object builders ([`objects`]) and
//! comparable cluster state ([`state`]), the test OCI registry ([`registry`]) and
//! WasmController resources ([`wasm_controllers`]) and the host replicas that share them
//! ([`replicas`]), the TCP connections a process holds ([`sockets`]), `deploy/` rendered
//! through a kustomize overlay and the host's image ([`deploy`]), and the one-node cluster
//! ([`cluster`]).
//!
//! Every test needs these variables, which `scripts/test.sh` sets; a test run without them
//! fails with a message naming the missing one:
//! - `KUBECONFIG`: the test control plane's kubeconfig;
//! - `KUBE_WASM_AUDIT_LOG`: its audit log;
//! - `KUBE_WASM_HOST_SHIM`: the host-shim binary;
//! - `KUBE_WASM_MODULES`: the folder holding the `.wasm` modules;
//! - `KUBE_WASM_NATIVE_BIN`: the folder holding native builds of the same programs;
//! - `KUBE_WASM_CONTROL_PLANE_DIR`: the control plane's folder, for [`restart_apiserver`];
//! - `APISERVER_PORT`: its kube-apiserver's port, for [`sockets::apiserver_port`];
//! - `KUBE_WASM_REGISTRY`, `KUBE_WASM_REGISTRY_DIR`: the test OCI registry (`host:port`, plain
//!   HTTP) and its folder, for [`registry`];
//! - `KUBE_WASM_HOST_IMAGE`, `KUBE_WASM_HOST_IMAGE_LAYOUT`: the host's image in the test
//!   registry (by digest) and the OCI layout it was pushed from, for [`deploy`];
//! - `KUBE_WASM_CLUSTER_DIR`: the one-node cluster's folder (`scripts/cluster.sh`), for
//!   [`cluster`].

pub mod audit;
pub mod cluster;
pub mod deploy;
pub mod manifest;
pub mod metrics;
pub mod objects;
pub mod registry;
pub mod replicas;
pub mod side_by_side;
pub mod sockets;
pub mod state;
pub mod wasm_controllers;

use anyhow::{Context, bail};
use k8s_openapi::api::core::v1::Namespace;
use kube::Client;
use kube::api::{Api, ObjectMeta, PostParams};
use kube::config::Kubeconfig;
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A path from an environment variable the test command sets.
pub fn env_path(name: &str) -> PathBuf {
    match std::env::var_os(name) {
        Some(v) => PathBuf::from(v),
        None => panic!("{name} is not set: run the end-to-end tests through scripts/test.sh"),
    }
}

/// A client for the test control plane (from `KUBECONFIG`).
pub async fn client() -> Client {
    env_path("KUBECONFIG");
    Client::try_default()
        .await
        .expect("a client for the test control plane")
}

/// Whether the API server `client` talks to serves streaming lists (a watch with
/// `sendInitialEvents=true`): kube-apiserver answers one with a 422 while its `WatchList`
/// feature gate is off (1.33's default; on by default from 1.34). Asked with one streaming
/// watch of the ConfigMaps of namespace `default`, closed at once.
///
/// # Panics
/// If the server answers otherwise than by serving the watch or a 422.
pub async fn serves_streaming_lists(client: &Client) -> bool {
    let params = kube::api::WatchParams::streaming_lists().timeout(1);
    let config_maps =
        Api::<k8s_openapi::api::core::v1::ConfigMap>::namespaced(client.clone(), "default");
    match config_maps.watch(&params, "0").await {
        Ok(_) => true,
        Err(kube::Error::Api(status)) if status.code == 422 => false,
        Err(err) => panic!("asking whether the API server serves streaming lists: {err}"),
    }
}

/// Creates a namespace with a unique name starting with `prefix`. (Kubernetes 1.20 without a
/// controller-manager never finishes deleting namespaces, so tests leave theirs behind in the
/// throwaway cluster.)
pub async fn fresh_namespace(client: &Client, prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    let name = format!("{prefix}-{}-{nanos}", std::process::id());
    create_namespace(client, &name)
        .await
        .expect("namespace created");
    name
}

/// Creates namespace `name`. (Kubernetes 1.20 without a controller-manager never finishes
/// deleting namespaces, so namespaces are left behind in the throwaway cluster.)
///
/// # Errors
/// If the apiserver refuses.
pub async fn create_namespace(client: &Client, name: &str) -> kube::Result<()> {
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await?;
    Ok(())
}

/// Writes a copy of the test kubeconfig whose current context defaults to `namespace`, so a
/// program started with it works in that namespace, and returns its path.
pub fn kubeconfig_for(namespace: &str, dir: &Path) -> PathBuf {
    kubeconfig_of(&env_path("KUBECONFIG"), namespace, dir)
}

/// Writes a copy of the kubeconfig `base` whose current context defaults to `namespace` into
/// `dir` (as `kubeconfig-<namespace>`), and returns its path.
///
/// # Panics
/// If `base` cannot be read or the copy written.
pub fn kubeconfig_of(base: &Path, namespace: &str, dir: &Path) -> PathBuf {
    let mut config = Kubeconfig::read_from(base).expect("test kubeconfig");
    for named in &mut config.contexts {
        if let Some(ctx) = named.context.as_mut() {
            ctx.namespace = Some(namespace.to_string());
        }
    }
    let path = dir.join(format!("kubeconfig-{namespace}"));
    // JSON is YAML: kube's own serialisation is all a kubeconfig needs.
    let text = serde_json::to_string(&config).expect("kubeconfig serialises");
    std::fs::write(&path, text).expect("kubeconfig written");
    path
}

/// Runs the native build of `bin` (from `KUBE_WASM_NATIVE_BIN`) to its end with `env` added,
/// and returns its stdout lines. Panics, with its stdout and stderr, if it exits non-zero.
pub fn run_native_to_end(bin: &str, env: &[(&str, &str)]) -> Vec<String> {
    let run = Command::new(env_path("KUBE_WASM_NATIVE_BIN").join(bin))
        .envs(env.iter().copied())
        .output()
        .unwrap_or_else(|e| panic!("native {bin} runs: {e}"));
    let out = String::from_utf8_lossy(&run.stdout).to_string();
    assert!(
        run.status.success(),
        "native run failed: {out}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    out.lines().map(str::to_string).collect()
}

/// The folder for test scratch files.
pub fn scratch_dir() -> PathBuf {
    let dir = std::env::temp_dir().join("kube-wasm-e2e");
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// Output lines of a child process, collected as they arrive.
#[derive(Clone, Default)]
pub struct Lines(Arc<Mutex<Vec<String>>>);

impl Lines {
    /// Collects `stream`'s lines, echoing each to stderr after the prefix `echo` if given.
    fn collect(&self, stream: impl std::io::Read + Send + 'static, echo: Option<String>) {
        let lines = self.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stream).lines().map_while(Result::ok) {
                if let Some(echo) = &echo {
                    eprintln!("{echo}{line}");
                }
                lines.0.lock().unwrap_or_else(|e| e.into_inner()).push(line);
            }
        });
    }

    /// All lines so far.
    pub fn snapshot(&self) -> Vec<String> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Waits until a line contains `needle`, up to `timeout`.
    pub fn wait_for(&self, needle: &str, timeout: Duration) -> anyhow::Result<String> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(line) = self.snapshot().into_iter().find(|l| l.contains(needle)) {
                return Ok(line);
            }
            if Instant::now() > deadline {
                bail!(
                    "no line containing {needle:?} within {timeout:?}; got:\n{}",
                    self.snapshot().join("\n")
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// A running child program — `host-shim run` or a native build of an example — whose output
/// is collected line by line.
pub struct Program {
    child: Child,
    /// Its standard output (for the host shim: the modules' output, each line prefixed
    /// `[module] `).
    pub stdout: Lines,
    /// Its standard error (for the host shim: the host's logs).
    pub stderr: Lines,
}

/// A running `host-shim run` process.
pub type HostShim = Program;

impl Program {
    /// Starts `host-shim run --kubeconfig KUBECONFIG [extra…] MODULE.wasm`.
    pub fn start(kubeconfig: &Path, extra: &[&str], module: &str) -> Program {
        let wasm = env_path("KUBE_WASM_MODULES").join(format!("{module}.wasm"));
        let mut command = Command::new(env_path("KUBE_WASM_HOST_SHIM"));
        command
            .arg("run")
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(extra)
            .arg(&wasm);
        Program::spawn(command, "host-shim")
    }

    /// Starts the native build of `bin` (from `KUBE_WASM_NATIVE_BIN`) with `KUBECONFIG` set
    /// to `kubeconfig`: the same program as a module, run as kube-rs users run it.
    pub fn native(bin: &str, kubeconfig: &Path) -> Program {
        Program::native_with_env(bin, kubeconfig, &[])
    }

    /// [`Program::native`] with the environment variables `env` added.
    pub fn native_with_env(bin: &str, kubeconfig: &Path, env: &[(&str, &str)]) -> Program {
        let mut command = Command::new(env_path("KUBE_WASM_NATIVE_BIN").join(bin));
        command
            .env("KUBECONFIG", kubeconfig)
            .envs(env.iter().copied());
        Program::spawn(command, bin)
    }

    /// Starts `command` with its output collected; `name` prefixes the echoed lines.
    pub fn spawn(command: Command, name: &str) -> Program {
        Program::spawn_with(command, name, true)
    }

    /// Starts `command` with its output collected but not echoed (the benchmark's many
    /// processes).
    pub fn spawn_quietly(command: Command, name: &str) -> Program {
        Program::spawn_with(command, name, false)
    }

    fn spawn_with(mut command: Command, name: &str, echo: bool) -> Program {
        // A test run started in the background by a shell without job control inherits SIGINT
        // and SIGQUIT ignored, and so would the programs: they get the defaults a user's
        // programs have, so that the signal tests test the programs, not how the run began.
        // SAFETY: `signal` is async-signal-safe, and the hook runs in the child before exec.
        unsafe {
            command.pre_exec(|| {
                libc::signal(libc::SIGINT, libc::SIG_DFL);
                libc::signal(libc::SIGQUIT, libc::SIG_DFL);
                Ok(())
            });
        }
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{name} starts: {e}"));
        let (stdout, stderr) = (Lines::default(), Lines::default());
        if let Some(out) = child.stdout.take() {
            stdout.collect(out, echo.then(|| format!("{name} stdout: ")));
        }
        if let Some(err) = child.stderr.take() {
            stderr.collect(err, echo.then(|| format!("{name} stderr: ")));
        }
        Program {
            child,
            stdout,
            stderr,
        }
    }

    /// The process id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Sends SIGTERM (the host's stop request) and waits up to `timeout` for the exit.
    pub fn terminate(&mut self, timeout: Duration) -> anyhow::Result<ExitStatus> {
        self.signal("-TERM", timeout)
    }

    /// Sends SIGKILL (a crash: no stop, no cleanup) and waits up to `timeout` for the exit.
    pub fn kill(&mut self, timeout: Duration) -> anyhow::Result<ExitStatus> {
        self.signal("-KILL", timeout)
    }

    /// Sends SIGINT (Ctrl-C) and waits up to `timeout` for the exit. A native build that
    /// stops on `tokio::signal::ctrl_c` listens for SIGINT only (SIGTERM kills it); the host
    /// shim treats SIGINT as a stop request too.
    pub fn interrupt(&mut self, timeout: Duration) -> anyhow::Result<ExitStatus> {
        self.signal("-INT", timeout)
    }

    /// Sends `signal` (a `kill` option such as `-TERM`), then waits up to `timeout`.
    fn signal(&mut self, signal: &str, timeout: Duration) -> anyhow::Result<ExitStatus> {
        let status = Command::new("kill")
            .arg(signal)
            .arg(self.child.id().to_string())
            .status()
            .with_context(|| format!("kill {signal}"))?;
        anyhow::ensure!(status.success(), "kill {signal} failed");
        self.wait(timeout)
    }

    /// Waits up to `timeout` for the process to exit on its own.
    pub fn wait(&mut self, timeout: Duration) -> anyhow::Result<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait()? {
                // Let the reader threads drain the pipes.
                std::thread::sleep(Duration::from_millis(100));
                return Ok(status);
            }
            if Instant::now() > deadline {
                bail!("the program did not exit within {timeout:?}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The module output without the `[module] ` prefix.
    pub fn module_output(&self, module: &str) -> Vec<String> {
        let prefix = format!("[{module}] ");
        self.stdout
            .snapshot()
            .into_iter()
            .filter_map(|l| l.strip_prefix(&prefix).map(str::to_string))
            .collect()
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Restarts the test control plane's kube-apiserver (same port, flags and certificate; etcd
/// keeps its data) and returns once it serves again. Every open watch is cut; resourceVersions
/// from before the restart may be answered with 410 Gone (the watch cache starts empty).
///
/// It disturbs every test talking to the apiserver at the time: call it only from a test
/// binary holding a single test (cargo runs test binaries one after another).
pub fn restart_apiserver() -> anyhow::Result<()> {
    let dir = env_path("KUBE_WASM_CONTROL_PLANE_DIR");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/control-plane.sh");
    let status = Command::new(script)
        .arg("restart-apiserver")
        .arg(&dir)
        .stdout(Stdio::null())
        .status()
        .context("running control-plane.sh restart-apiserver")?;
    anyhow::ensure!(status.success(), "restart-apiserver failed: {status}");
    Ok(())
}

/// Runs the request `op` until the apiserver answers, up to `timeout`: right after
/// [`restart_apiserver`] the client's pooled connections may fail once. An API error whose
/// code is in `done_codes` counts as success (e.g. 409 when a create's first answer was lost,
/// 404 for a delete); 429 and 5xx are retried; any other API error panics.
pub async fn until_answered<T, F, Fut>(timeout: Duration, what: &str, done_codes: &[u16], mut op: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = kube::Result<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        match op().await {
            Ok(_) => return,
            Err(kube::Error::Api(status)) if done_codes.contains(&status.code) => return,
            Err(kube::Error::Api(status)) if status.code != 429 && status.code < 500 => {
                panic!("{what}: {status:?}")
            }
            Err(e) => assert!(
                Instant::now() < deadline,
                "{what}: no answer within {timeout:?}: {e}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// `Some(())` once `name` no longer exists in `api` (a failed read is not "gone"): a done
/// condition for [`eventually`].
pub async fn gone<K>(api: &Api<K>, name: &str) -> Option<()>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match api.get_opt(name).await {
        Ok(None) => Some(()),
        _ => None,
    }
}

/// Polls `check` every 200 ms until it returns `Some`, up to `timeout`.
///
/// # Panics
/// At the timeout, naming `what`.
pub async fn eventually<T, F, Fut>(timeout: Duration, what: &str, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    eventually_explained(timeout, what, check, String::new).await
}

/// [`eventually`], and at the timeout the panic message also holds what `explain` returns
/// then (the state a failure in CI is read from, such as the cluster's Pods and events).
///
/// # Panics
/// At the timeout, naming `what`, with `explain`'s text.
pub async fn eventually_explained<T, F, Fut>(
    timeout: Duration,
    what: &str,
    mut check: F,
    explain: impl FnOnce() -> String,
) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        if Instant::now() >= deadline {
            panic!(
                "timed out after {timeout:?} waiting for {what}\n{}",
                explain()
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
