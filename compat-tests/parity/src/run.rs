//! One build of a scenario program running in its own namespace (a test kit [`Side`]), and
//! what the harness reads of it: its observations and its requests.

use crate::audit::AuditTail;
use kube::api::{Api, PostParams};
use kube_wasm_e2e::env_path;
use kube_wasm_e2e::objects::config_map;
use kube_wasm_e2e::side_by_side::Side;
use std::ops::{Deref, DerefMut};

/// One build of the scenario in its namespace: the test kit's [`Side`] (the program, the
/// namespace, the object operations), and what the harness read of it so far.
pub struct Run {
    side: Side,
    pub(crate) audit: AuditTail,
    pub(crate) observations_seen: usize,
    pub(crate) requests_seen: usize,
}

impl Deref for Run {
    type Target = Side;

    fn deref(&self) -> &Side {
        &self.side
    }
}

impl DerefMut for Run {
    fn deref_mut(&mut self) -> &mut Side {
        &mut self.side
    }
}

impl Run {
    pub(crate) fn new(side: Side) -> Run {
        let audit = AuditTail::new(env_path("KUBE_WASM_AUDIT_LOG"), &side.namespace);
        Run {
            side,
            audit,
            observations_seen: 0,
            requests_seen: 0,
        }
    }

    /// Starts this run's build of `program` with a kubeconfig defaulting to its namespace.
    pub(crate) fn start(&mut self, program: &str) {
        // Parity compares the guest's own requests with native kube's: shared watches
        // would replace the module's watches with the host's one LIST+WATCH.
        self.side.start(program, &["--shared-watches=false"]);
    }

    /// Every observation line (`obs <stream> <text>`) the program printed so far, without
    /// the `obs ` prefix.
    pub fn observations(&self) -> Vec<String> {
        self.output()
            .iter()
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
        let cm = config_map(
            &format!("parity-bump-{}-{nanos}", std::process::id()),
            &[],
            &[],
        );
        Api::<k8s_openapi::api::core::v1::ConfigMap>::namespaced(self.client.clone(), "default")
            .create(&PostParams::default(), &cm)
            .await
            .unwrap_or_else(|e| panic!("bumping the resourceVersion: {e}"));
    }
}
