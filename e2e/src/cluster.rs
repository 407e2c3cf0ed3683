//! The one-node cluster (`scripts/cluster.sh`: its own kube-apiserver, etcd,
//! kube-controller-manager, kube-scheduler, a kubelet with containerd), started by the test
//! command in `KUBE_WASM_CLUSTER_DIR`: its clients and kubectl, its audit log, the address
//! Pods use for the test registry, and the logs of Pods followed as they come and go.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};

use crate::{Program, env_path};

/// The cluster the test command started.
#[derive(Debug, Clone)]
pub struct Cluster {
    /// Its folder.
    pub dir: PathBuf,
    /// Its admin kubeconfig.
    pub kubeconfig: PathBuf,
    /// Its apiserver's audit log.
    pub audit_log: PathBuf,
    /// The node's name.
    pub node: String,
    /// The test registry as Pods reach it (`host:port`, plain HTTP).
    pub pod_registry: String,
}

impl Cluster {
    /// The cluster in `KUBE_WASM_CLUSTER_DIR` (its `env` file).
    ///
    /// # Panics
    /// If the variable is not set or the folder holds no started cluster.
    pub fn from_env() -> Self {
        let dir = env_path("KUBE_WASM_CLUSTER_DIR");
        let env = std::fs::read_to_string(dir.join("env"))
            .unwrap_or_else(|e| panic!("{}/env: {e} (scripts/cluster.sh start)", dir.display()));
        let vars: BTreeMap<&str, &str> = env.lines().filter_map(|l| l.split_once('=')).collect();
        let var = |name: &str| {
            (*vars
                .get(name)
                .unwrap_or_else(|| panic!("{name} missing in {}/env", dir.display())))
            .to_owned()
        };
        Self {
            kubeconfig: PathBuf::from(var("KUBECONFIG")),
            audit_log: PathBuf::from(var("AUDIT_LOG")),
            node: var("NODE_NAME"),
            pod_registry: var("POD_REGISTRY"),
            dir,
        }
    }

    /// A client of its apiserver, as its admin.
    pub async fn client(&self) -> kube::Client {
        let config = kube::Config::from_custom_kubeconfig(
            kube::config::Kubeconfig::read_from(&self.kubeconfig).expect("its kubeconfig"),
            &kube::config::KubeConfigOptions::default(),
        )
        .await
        .expect("a config");
        kube::Client::try_from(config).expect("a client")
    }

    /// `kubectl ARGS…` against it; its stdout, or the error with stderr.
    ///
    /// # Errors
    /// If kubectl exits non-zero.
    pub fn try_kubectl(&self, args: &[&str]) -> anyhow::Result<String> {
        crate::wasm_controllers::try_kubectl_with(&self.kubeconfig, args)
    }

    /// `kubectl ARGS…` against it; its stdout.
    ///
    /// # Panics
    /// If kubectl fails.
    pub fn kubectl(&self, args: &[&str]) -> String {
        self.try_kubectl(args).unwrap_or_else(|e| panic!("{e:#}"))
    }

    /// What the cluster says about the Pods matching `selector` in `namespace`: their
    /// description (status, container states, events), the namespace's events and the node's
    /// (its conditions, taints and allocations) — the text a timed-out wait prints. Each part
    /// that kubectl cannot give is replaced by its error.
    pub fn explain_pods(&self, namespace: &str, selector: &str) -> String {
        let parts: [(&str, Vec<&str>); 3] = [
            (
                "Pods",
                vec!["describe", "pods", "--namespace", namespace, "-l", selector],
            ),
            (
                "events",
                vec![
                    "get",
                    "events",
                    "--namespace",
                    namespace,
                    "--sort-by=.lastTimestamp",
                ],
            ),
            ("node", vec!["describe", "node", &self.node]),
        ];
        parts
            .into_iter()
            .map(|(title, args)| {
                let text = self.try_kubectl(&args).unwrap_or_else(|e| format!("{e:#}"));
                format!("--- {title} (kubectl {}) ---\n{text}", args.join(" "))
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// `kubectl logs -f` of `pod` in `namespace`, followed.
    pub fn follow_logs(&self, namespace: &str, pod: &str) -> Program {
        let mut command = Command::new("kubectl");
        command.env("KUBECONFIG", &self.kubeconfig).args([
            "logs",
            "--follow",
            "--namespace",
            namespace,
            pod,
        ]);
        Program::spawn_quietly(command, pod)
    }
}

/// The logs of every Pod matching a label selector, each followed with `kubectl logs -f`
/// from when its container runs until it ends (lines of Pods since deleted are kept).
pub struct PodLogs {
    logs: Arc<Mutex<BTreeMap<String, Program>>>,
    task: tokio::task::JoinHandle<()>,
}

impl PodLogs {
    /// Follows the Pods of `namespace` matching `selector`, looking for new ones every 300 ms.
    pub fn follow(
        cluster: &Cluster,
        client: &kube::Client,
        namespace: &str,
        selector: &str,
    ) -> Self {
        let logs: Arc<Mutex<BTreeMap<String, Program>>> = Arc::default();
        let (cluster, pods) = (
            cluster.clone(),
            Api::<Pod>::namespaced(client.clone(), namespace),
        );
        let (shared, namespace) = (logs.clone(), namespace.to_owned());
        let params = ListParams::default().labels(selector);
        let task = tokio::spawn(async move {
            loop {
                if let Ok(list) = pods.list(&params).await {
                    for pod in list.items {
                        let name = pod.metadata.name.clone().unwrap_or_default();
                        let started = pod
                            .status
                            .as_ref()
                            .and_then(|s| s.container_statuses.as_ref())
                            .is_some_and(|all| {
                                all.iter().any(|c| {
                                    c.state.as_ref().is_some_and(|s| {
                                        s.running.is_some() || s.terminated.is_some()
                                    })
                                })
                            });
                        let mut logs = shared.lock().unwrap_or_else(|e| e.into_inner());
                        // A follow that ended before its first line (the container was not
                        // yet readable) is started again.
                        let stale = logs.get_mut(&name).is_some_and(|p| {
                            p.stdout.snapshot().is_empty() && p.wait(Duration::ZERO).is_ok()
                        });
                        if started && (stale || !logs.contains_key(&name)) {
                            logs.insert(name.clone(), cluster.follow_logs(&namespace, &name));
                        }
                    }
                }
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
        });
        Self { logs, task }
    }

    /// Every followed Pod's lines so far, by Pod name.
    pub fn lines(&self) -> BTreeMap<String, Vec<String>> {
        self.logs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(pod, program)| (pod.clone(), program.stdout.snapshot()))
            .collect()
    }
}

impl Drop for PodLogs {
    fn drop(&mut self) {
        self.task.abort();
    }
}
