//! One build of a scenario program running in its own namespace, and the harness's handle on
//! that namespace.

use crate::audit::AuditTail;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::{Client, Resource};
use kube_wasm_e2e::{Program, env_path, kubeconfig_for, scratch_dir};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::fmt::Debug;

/// Which build of a scenario program runs.
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

/// A namespaced resource the harness can create, read, patch and delete.
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

/// One build of the scenario in its namespace.
pub struct Run {
    /// How the run is labelled in reports (`native`, `wasm`, or `native (again)`).
    pub label: String,
    /// The build.
    pub build: Build,
    /// Its namespace.
    pub namespace: String,
    /// The harness's client (impersonating [`crate::audit::HARNESS_USER`]).
    pub client: Client,
    pub(crate) program: Option<Program>,
    pub(crate) audit: AuditTail,
    pub(crate) observations_seen: usize,
    pub(crate) requests_seen: usize,
}

impl Run {
    pub(crate) fn new(label: String, build: Build, namespace: String, client: Client) -> Run {
        let audit = AuditTail::new(env_path("KUBE_WASM_AUDIT_LOG"), &namespace);
        Run {
            label,
            build,
            namespace,
            client,
            program: None,
            audit,
            observations_seen: 0,
            requests_seen: 0,
        }
    }

    /// Starts this run's build of `program` with a kubeconfig defaulting to its namespace.
    pub(crate) fn start(&mut self, program: &str) {
        let kubeconfig = kubeconfig_for(&self.namespace, &scratch_dir());
        self.program = Some(match self.build {
            // Parity compares the guest's own requests with native kube's: shared watches
            // would replace the module's watches with the host's one LIST+WATCH.
            Build::Wasm => Program::start(&kubeconfig, &["--shared-watches=false"], program),
            Build::Native => Program::native(program, &kubeconfig),
        });
    }

    /// Every observation line (`obs <stream> <text>`) the program printed so far, without
    /// the `obs ` prefix.
    pub fn observations(&self) -> Vec<String> {
        let Some(program) = &self.program else {
            return Vec::new();
        };
        let lines = program.stdout.snapshot();
        lines
            .iter()
            .map(
                |l| match l.strip_prefix('[').and_then(|l| l.split_once("] ")) {
                    // The host shim prefixes module output with `[module] `.
                    Some((_, rest)) if self.build == Build::Wasm => rest,
                    _ => l,
                },
            )
            .filter_map(|l| l.strip_prefix("obs "))
            .map(str::to_string)
            .collect()
    }

    /// How many times the observation `line` (`<stream> <text>`) was printed.
    pub fn count(&self, line: &str) -> usize {
        self.observations().iter().filter(|l| *l == line).count()
    }

    /// `Some(())` once an observation containing `needle` was printed.
    pub fn observed_containing(&self, needle: &str) -> Option<()> {
        self.observations()
            .iter()
            .any(|l| l.contains(needle))
            .then_some(())
    }

    /// `Some(())` once every observation of `lines` was printed: a step's done condition.
    pub fn saw(&self, lines: &[&str]) -> Option<()> {
        let seen = self.observations();
        lines
            .iter()
            .all(|line| seen.iter().any(|l| l == line))
            .then_some(())
    }

    /// The harness's `Api<K>` in the run's namespace.
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

    /// Merge-patches `name` (the status subresource when `status`).
    ///
    /// # Panics
    /// When the apiserver refuses.
    pub async fn merge_patch<K: Object>(&self, name: &str, patch: Value) {
        let api = self.api::<K>();
        let (params, patch) = (PatchParams::default(), Patch::Merge(&patch));
        api.patch(name, &params, &patch)
            .await
            .unwrap_or_else(|e| panic!("{}: patching {name}: {e}", self.label));
    }

    /// Merge-patches the status subresource of `name`.
    ///
    /// # Panics
    /// When the apiserver refuses.
    pub async fn merge_patch_status<K: Object>(&self, name: &str, patch: Value) {
        let api = self.api::<K>();
        let (params, patch) = (PatchParams::default(), Patch::Merge(&patch));
        api.patch_status(name, &params, &patch)
            .await
            .unwrap_or_else(|e| panic!("{}: patching the status of {name}: {e}", self.label));
    }

    /// Deletes `name` (foreground or not: the default propagation).
    ///
    /// # Panics
    /// When the apiserver refuses.
    pub async fn delete<K: Object>(&self, name: &str) {
        self.api::<K>()
            .delete(name, &DeleteParams::default())
            .await
            .unwrap_or_else(|e| panic!("{}: deleting {name}: {e}", self.label));
    }

    /// `name`, or `None` when it does not exist or the read fails (a step's done condition
    /// retries).
    pub async fn get<K: Object>(&self, name: &str) -> Option<K> {
        self.api::<K>().get_opt(name).await.ok().flatten()
    }

    /// `Some(())` once `name` no longer exists.
    pub async fn gone<K: Object>(&self, name: &str) -> Option<()> {
        match self.api::<K>().get_opt(name).await {
            Ok(None) => Some(()),
            _ => None,
        }
    }

    /// Writes an unrelated object (a ConfigMap in namespace `default`), so the cluster's
    /// resourceVersion moves past every object of this run: a resourceVersion a bookmark
    /// carries afterwards is then no object's.
    ///
    /// # Panics
    /// When the apiserver refuses.
    pub async fn bump_resource_version(&self) {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let cm = k8s_openapi::api::core::v1::ConfigMap {
            metadata: kube::api::ObjectMeta {
                name: Some(format!("parity-bump-{}-{nanos}", std::process::id())),
                ..Default::default()
            },
            ..Default::default()
        };
        Api::<k8s_openapi::api::core::v1::ConfigMap>::namespaced(self.client.clone(), "default")
            .create(&PostParams::default(), &cm)
            .await
            .unwrap_or_else(|e| panic!("bumping the resourceVersion: {e}"));
    }
}
