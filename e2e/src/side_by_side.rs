//! The side-by-side runner: one program's native build (kube-rs and tokio, a process) and its
//! wasm32-wasip1 build (a module in the host shim), each in its own fresh namespace, driven
//! through the same steps and compared by the cluster state they reach. The example tests use
//! [`SideBySide`]; the parity suite builds its runs on [`Side`].

use crate::state::{assert_same_state, namespace_state};
use crate::{Program, fresh_namespace, kubeconfig_for, scratch_dir, until_answered};
use kube::api::{Api, ApiResource, DeleteParams, Patch, PatchParams, PostParams};
use kube::{Client, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::fmt::Debug;
use std::process::ExitStatus;
use std::time::Duration;

/// Which build of a program runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Build {
    /// The native build (kube 5.0, tokio), run as a process.
    Native,
    /// The wasm32-wasip1 build (kube-wasm), run in the host shim.
    Wasm,
}

impl Build {
    /// `native` or `wasm`.
    pub fn name(self) -> &'static str {
        match self {
            Build::Native => "native",
            Build::Wasm => "wasm",
        }
    }
}

/// How a native build is asked to stop (the host shim always gets SIGTERM, which it turns into
/// the module's `ctrl_c`). A native build stopping on `tokio::signal::ctrl_c` listens for
/// SIGINT only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// SIGTERM.
    Term,
    /// SIGINT (Ctrl-C).
    Int,
}

/// A namespaced resource a side can create, read, patch and delete.
pub trait Object:
    Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
    + Clone
    + Debug
    + Serialize
    + DeserializeOwned
{
}

impl<K> Object for K where
    K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + Debug
        + Serialize
        + DeserializeOwned
{
}

/// One build of a program in its own namespace, and the harness's handle on that namespace.
pub struct Side {
    /// How the side is labelled in messages (`native`, `wasm`, or `native (again)`).
    pub label: String,
    /// The build.
    pub build: Build,
    /// Its namespace.
    pub namespace: String,
    /// The harness's client.
    pub client: Client,
    /// The running program, once started; `None` stops it.
    pub program: Option<Program>,
    /// The program's name (the module's, in the host shim), once started.
    module: String,
}

impl Side {
    /// A side of `build` in a fresh namespace `<prefix>-<build>-…`.
    pub async fn new(client: &Client, build: Build, label: String, prefix: &str) -> Side {
        let namespace = fresh_namespace(client, &format!("{prefix}-{}", build.name())).await;
        Side {
            label,
            build,
            namespace,
            client: client.clone(),
            program: None,
            module: String::new(),
        }
    }

    /// Starts this side's build of `program` with a kubeconfig defaulting to its namespace;
    /// `host_args` are added to `host-shim run` (wasm only). `program` is a path under the
    /// build folders: a binary's name, or `examples/<name>` for a cargo example.
    pub fn start(&mut self, program: &str, host_args: &[&str]) {
        self.start_with_env(program, host_args, &[]);
    }

    /// [`Side::start`] with the environment variables `env` added: to the native process,
    /// or to the module (`host-shim run --env`).
    pub fn start_with_env(&mut self, program: &str, host_args: &[&str], env: &[(&str, &str)]) {
        let kubeconfig = kubeconfig_for(&self.namespace, &scratch_dir());
        // The host names a module after its file.
        self.module = program.rsplit('/').next().unwrap_or(program).to_string();
        self.program = Some(match self.build {
            Build::Wasm => {
                let pairs: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v}")).collect();
                let mut args: Vec<&str> = host_args.to_vec();
                for pair in &pairs {
                    args.extend(["--env", pair]);
                }
                Program::start(&kubeconfig, &args, program)
            }
            Build::Native => Program::native_with_env(program, &kubeconfig, env),
        });
    }

    /// The running program.
    ///
    /// # Panics
    /// If it was not started.
    pub fn program(&self) -> &Program {
        self.program
            .as_ref()
            .unwrap_or_else(|| panic!("{}: the program was not started", self.label))
    }

    /// The program's output lines so far (the wasm build's without the host's `[module] `
    /// prefix); none before it starts.
    pub fn output(&self) -> Vec<String> {
        match (&self.program, self.build) {
            (None, _) => Vec::new(),
            (Some(program), Build::Wasm) => program.module_output(&self.module),
            (Some(program), Build::Native) => program.stdout.snapshot(),
        }
    }

    /// Waits up to `timeout` until the program printed a line containing `needle`.
    ///
    /// # Panics
    /// If it does not.
    pub fn wait_for(&self, needle: &str, timeout: Duration) -> String {
        self.program()
            .stdout
            .wait_for(needle, timeout)
            .unwrap_or_else(|e| panic!("{}: {e}", self.label))
    }

    /// Stops the program — SIGTERM to the host shim, `native` to a native build — and waits up
    /// to `timeout` for its exit.
    ///
    /// # Panics
    /// If it does not exit in time or exits non-zero.
    pub fn stop(&mut self, native: Stop, timeout: Duration) -> ExitStatus {
        let label = self.label.clone();
        let program = self
            .program
            .as_mut()
            .unwrap_or_else(|| panic!("{label}: the program was not started"));
        let status = match (self.build, native) {
            (Build::Native, Stop::Int) => program.interrupt(timeout),
            _ => program.terminate(timeout),
        }
        .unwrap_or_else(|e| panic!("{label} exits: {e}"));
        assert!(status.success(), "{label}: exit status {status}");
        status
    }

    /// The harness's `Api<K>` in the side's namespace.
    pub fn api<K: Object>(&self) -> Api<K> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    /// Creates `object`.
    ///
    /// # Panics
    /// When the apiserver refuses.
    pub async fn create<K: Object>(&self, object: &K) {
        self.api::<K>()
            .create(&PostParams::default(), object)
            .await
            .unwrap_or_else(|e| panic!("{}: creating {object:?}: {e}", self.label));
    }

    /// Merge-patches `name`.
    ///
    /// # Panics
    /// When the apiserver refuses.
    pub async fn merge_patch<K: Object>(&self, name: &str, patch: Value) {
        self.merge_patch_of::<K>(name, patch, false).await;
    }

    /// Merge-patches the status subresource of `name`.
    ///
    /// # Panics
    /// When the apiserver refuses.
    pub async fn merge_patch_status<K: Object>(&self, name: &str, patch: Value) {
        self.merge_patch_of::<K>(name, patch, true).await;
    }

    /// Merge-patches `name`, or its status subresource when `status`.
    async fn merge_patch_of<K: Object>(&self, name: &str, patch: Value, status: bool) {
        let api = self.api::<K>();
        let (params, patch) = (PatchParams::default(), Patch::Merge(&patch));
        let (result, what) = match status {
            false => (api.patch(name, &params, &patch).await, "patching"),
            true => (
                api.patch_status(name, &params, &patch).await,
                "patching the status of",
            ),
        };
        result.unwrap_or_else(|e| panic!("{}: {what} {name}: {e}", self.label));
    }

    /// Deletes `name` (the default propagation).
    ///
    /// # Panics
    /// When the apiserver refuses.
    pub async fn delete<K: Object>(&self, name: &str) {
        self.api::<K>()
            .delete(name, &DeleteParams::default())
            .await
            .unwrap_or_else(|e| panic!("{}: deleting {name}: {e}", self.label));
    }

    /// `name`, or `None` when it does not exist or the read fails (a done condition
    /// retries).
    pub async fn get<K: Object>(&self, name: &str) -> Option<K> {
        self.api::<K>().get_opt(name).await.ok().flatten()
    }

    /// `Some(())` once `name` no longer exists.
    pub async fn gone<K: Object>(&self, name: &str) -> Option<()> {
        crate::gone(&self.api::<K>(), name).await
    }
}

/// Two builds of one program side by side (two [`Side`]s, in the order given).
pub struct SideBySide {
    /// The two sides.
    pub sides: Vec<Side>,
}

impl SideBySide {
    /// Two sides of `builds`, in fresh namespaces `<prefix>-<build>-…`, labelled by their
    /// build (the second `<build> (again)` when both are the same).
    pub async fn new(client: &Client, prefix: &str, builds: [Build; 2]) -> SideBySide {
        let mut sides = Vec::new();
        for (i, build) in builds.into_iter().enumerate() {
            let label = match (i, builds[0] == builds[1]) {
                (1, true) => format!("{} (again)", build.name()),
                _ => build.name().to_string(),
            };
            sides.push(Side::new(client, build, label, prefix).await);
        }
        SideBySide { sides }
    }

    /// The wasm build, then the native build.
    pub async fn wasm_and_native(client: &Client, prefix: &str) -> SideBySide {
        SideBySide::new(client, prefix, [Build::Wasm, Build::Native]).await
    }

    /// Runs `action` on each side, one after the other.
    pub async fn each(&self, action: impl AsyncFn(&Side)) {
        for side in &self.sides {
            action(side).await;
        }
    }

    /// Creates `object` on each side, retried for up to `timeout` until the apiserver answers
    /// (right after an apiserver restart); 409 counts as created (the first answer was lost).
    pub async fn create_answered<K: Object>(&self, object: &K, timeout: Duration) {
        for side in &self.sides {
            let api = side.api::<K>();
            let what = format!("{}: create {:?}", side.label, object.meta().name);
            until_answered(timeout, &what, &[409], || async {
                api.create(&PostParams::default(), object).await
            })
            .await;
        }
    }

    /// Merge-patches `name` on each side, retried like [`SideBySide::create_answered`].
    pub async fn merge_patch_answered<K: Object>(
        &self,
        name: &str,
        patch: Value,
        timeout: Duration,
    ) {
        for side in &self.sides {
            let api = side.api::<K>();
            let what = format!("{}: patch {name}", side.label);
            until_answered(timeout, &what, &[], || async {
                api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
            })
            .await;
        }
    }

    /// Deletes `name` on each side, retried like [`SideBySide::create_answered`]; 404 counts
    /// as deleted.
    pub async fn delete_answered<K: Object>(&self, name: &str, timeout: Duration) {
        for side in &self.sides {
            let api = side.api::<K>();
            let what = format!("{}: delete {name}", side.label);
            until_answered(timeout, &what, &[404], || async {
                api.delete(name, &DeleteParams::default()).await
            })
            .await;
        }
    }

    /// Starts `program` on each side (see [`Side::start`]), then waits up to `timeout` until
    /// each printed a line containing `started`.
    pub fn start(&mut self, program: &str, host_args: &[&str], started: &str, timeout: Duration) {
        self.start_with_env(program, host_args, &[], started, timeout);
    }

    /// [`SideBySide::start`] with the environment variables `env` added to each side (see
    /// [`Side::start_with_env`]).
    pub fn start_with_env(
        &mut self,
        program: &str,
        host_args: &[&str],
        env: &[(&str, &str)],
        started: &str,
        timeout: Duration,
    ) {
        for side in &mut self.sides {
            side.start_with_env(program, host_args, env);
        }
        for side in &self.sides {
            side.wait_for(started, timeout);
        }
    }

    /// Asserts that the first side's namespace holds exactly the objects `keys`
    /// (`<Kind>/<name>`, sorted) of the kinds `resources`, and the second side's the same
    /// objects in the same state (see [`crate::state`]).
    pub async fn assert_same_state(&self, resources: &[ApiResource], keys: &[&str]) {
        let [first, second] = &self.sides[..] else {
            panic!("two sides");
        };
        let left = namespace_state(&first.client, &first.namespace, resources).await;
        let right = namespace_state(&second.client, &second.namespace, resources).await;
        assert_eq!(
            left.keys().map(String::as_str).collect::<Vec<_>>(),
            keys,
            "{}: the final state",
            first.label
        );
        assert_same_state(&first.label, &left, &second.label, &right);
    }

    /// Stops each side (see [`Side::stop`]; each exits 0 within `timeout`), then checks that
    /// each printed a line containing `stopped`.
    pub fn stop(&mut self, native: Stop, stopped: &str, timeout: Duration) {
        for side in &mut self.sides {
            side.stop(native, timeout);
        }
        for side in &self.sides {
            side.wait_for(stopped, Duration::from_secs(1));
        }
    }
}

/// Runs `bin` to its end twice against the real API server — natively in a fresh namespace
/// `<prefix>-native…`, and as a module alone in the host shim (its default settings, shared
/// watches on) in a fresh namespace `<prefix>-wasm…` — with `env` and `<NAMESPACE_VAR>` set to
/// that run's namespace, asserts that both succeed and print the same lines, and returns them.
///
/// # Panics
/// If a run fails, does not end within `timeout` (the host's), or the outputs differ.
pub async fn run_both_to_end(
    client: &Client,
    bin: &str,
    prefix: &str,
    namespace_var: &str,
    env: &[(&str, &str)],
    timeout: Duration,
) -> Vec<String> {
    let native_ns = fresh_namespace(client, &format!("{prefix}-native")).await;
    let mut native_env = env.to_vec();
    native_env.push((namespace_var, &native_ns));
    let native_lines = crate::run_native_to_end(bin, &native_env);

    let wasm_ns = fresh_namespace(client, &format!("{prefix}-wasm")).await;
    let kubeconfig = kubeconfig_for(&wasm_ns, &scratch_dir());
    let pairs: Vec<String> = env
        .iter()
        .chain([(namespace_var, wasm_ns.as_str())].iter())
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let extra: Vec<&str> = pairs.iter().flat_map(|p| ["--env", p.as_str()]).collect();
    let mut host = crate::HostShim::start(&kubeconfig, &extra, bin);
    let status = host.wait(timeout).expect("the module finishes");
    let wasm_lines = host.module_output(bin);
    assert!(
        status.success(),
        "host-shim exited with {status}: {wasm_lines:#?}"
    );
    assert_eq!(
        wasm_lines, native_lines,
        "wasm and native observations differ"
    );
    wasm_lines
}
