//! The host as an operator runs it, on a real kubelet: the one-node cluster of
//! `scripts/cluster.sh` pulls the host's image (built by `scripts/image.sh`, by digest) from the
//! test registry, and the test applies `deploy/` and `deploy/example/` through kustomize
//! overlays, as `deploy/README.md` tells an operator to. Then:
//! - the three replicas run as Pods with the in-cluster configuration: the projected
//!   ServiceAccount token, and each reaches the apiserver as the host's ServiceAccount with its
//!   Pod's name in its User-Agent (the audit log);
//! - the module (configmap-mirror, pulled by the host from the registry) runs on exactly one
//!   replica and mirrors;
//! - `kubectl logs` and the metrics endpoint (the apiserver's proxy to the Pod) answer;
//! - deleting the Pod running the module moves it to another replica within the Lease bound;
//! - a rolling update to a new image digest hands the module over;
//! - throughout, no two replicas ran the module at once (the start and stop lines of every
//!   Pod's log), and every write of the module reached the apiserver from the replica running
//!   it then (the audit log's User-Agents).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret};
use kube::api::{Api, ListParams, PostParams};
use kube_wasm_e2e::audit::audited_requests_in;
use kube_wasm_e2e::cluster::{Cluster, PodLogs};
use kube_wasm_e2e::deploy::{Overlay, host_image, relabelled_host_image, split_digest};
use kube_wasm_e2e::metrics::value;
use kube_wasm_e2e::objects::mirrored;
use kube_wasm_e2e::replicas::{Interval, intervals, now_us, overlaps};
use kube_wasm_e2e::wasm_controllers as wc;
use kube_wasm_e2e::{eventually, eventually_explained, registry, scratch_dir};

/// Where `deploy/` puts the host, and its Pods' label.
const SYSTEM: &str = "kube-wasm-system";
const SELECTOR: &str = "app.kubernetes.io/name=host-shim";
/// Where `deploy/example/` puts the module, and its WasmController's name.
const DEMO: &str = "kube-wasm-demo";
const MODULE: &str = "configmap-mirror";
/// The replicas' Lease duration (the default `deploy/` keeps).
const LEASE: Duration = Duration::from_secs(10);
/// Images pulled, Pods started and rolled on two busy cores.
const PROMPTLY: Duration = Duration::from_secs(300);

/// The running, ready host Pods, by name, with the image digest each runs.
async fn ready_pods(pods: &Api<Pod>) -> BTreeMap<String, String> {
    let list = pods
        .list(&ListParams::default().labels(SELECTOR))
        .await
        .expect("list the host's Pods");
    list.items
        .into_iter()
        .filter(|pod| pod.metadata.deletion_timestamp.is_none())
        .filter_map(|pod| {
            let status = pod.status?.container_statuses?.into_iter().next()?;
            status.state?.running?;
            status
                .ready
                .then(|| (pod.metadata.name.unwrap_or_default(), status.image_id))
        })
        .collect()
}

/// The host's Pods once exactly three are ready and all run the image `digest`.
async fn three_running(
    cluster: &Cluster,
    pods: &Api<Pod>,
    digest: &str,
) -> BTreeMap<String, String> {
    eventually_explained(
        PROMPTLY,
        "three ready host Pods of the image",
        || async {
            let ready = ready_pods(pods).await;
            (ready.len() == 3 && ready.values().all(|id| id.ends_with(digest))).then_some(ready)
        },
        || cluster.explain_pods(SYSTEM, SELECTOR),
    )
    .await
}

/// The replica running the module once it runs on one of `members`.
async fn holder_among(client: &kube::Client, members: &BTreeMap<String, String>) -> String {
    let api = wc::api(client, DEMO);
    eventually(PROMPTLY, "the module Running on a member", || async {
        let object = api.get(MODULE).await.ok()?;
        let status = object.data.get("status")?;
        let host = status["host"].as_str()?;
        (status["phase"] == "Running" && members.contains_key(host)).then(|| host.to_owned())
    })
    .await
}

/// Creates ConfigMap `name` in the module's namespace; how long until its Secret appeared.
async fn mirror(client: &kube::Client, name: &str) -> Duration {
    let started = Instant::now();
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), DEMO);
    config_maps
        .create(&PostParams::default(), &mirrored(name))
        .await
        .expect("ConfigMap created");
    let secrets: Api<Secret> = Api::namespaced(client.clone(), DEMO);
    eventually(PROMPTLY, "the mirror Secret", || async {
        secrets.get_opt(name).await.ok().flatten().map(|_| ())
    })
    .await;
    started.elapsed()
}

/// The module's runs across every host Pod's log so far.
fn module_runs(logs: &PodLogs) -> Vec<Interval> {
    let key = format!("{DEMO}.{MODULE}");
    logs.lines()
        .values()
        .flat_map(|lines| intervals(lines).remove(&key).unwrap_or_default())
        .collect()
}

// Two workers: the Pods' logs are followed by a task while the test blocks on kubectl.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_host_runs_fails_over_and_rolls_over_on_a_kubelet() {
    let cluster = Cluster::from_env();
    let client = cluster.client().await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), SYSTEM);
    let dir = scratch_dir().join(format!("cluster-{}", std::process::id()));
    let logs = PodLogs::follow(&cluster, &client, SYSTEM, SELECTOR);
    // The test registry is plain HTTP: the overlay adds --insecure-registry, as an operator
    // of such a registry would.
    let host_overlay = |image: String| Overlay {
        host_image: Some(image),
        module_image: None,
        extra_host_args: vec!["--insecure-registry".into(), cluster.pod_registry.clone()],
    };

    // The host: the CRD, its namespace, identity, RBAC, Deployment and PodDisruptionBudget.
    let image = host_image();
    let (_, digest) = split_digest(&image);
    let host = host_overlay(image.clone()).write(&dir.join("host"));
    let applied_at = Instant::now();
    cluster.kubectl(&["apply", "-k", &host.to_string_lossy()]);
    cluster.kubectl(&[
        "wait",
        "--for=condition=Established",
        "--timeout=60s",
        "crd/wasmcontrollers.kube-wasm.dev",
    ]);
    let first = three_running(&cluster, &pods, digest).await;
    eprintln!(
        "three replicas ready {:?} after kubectl apply: {:?}",
        applied_at.elapsed(),
        first.keys()
    );

    // In-cluster configuration: a projected ServiceAccount token, no kubeconfig; each replica
    // holds its Lease, written as the host's ServiceAccount with its Pod's name.
    for name in first.keys() {
        let pod = pods.get(name).await.expect("the Pod");
        let spec = pod.spec.expect("a spec");
        assert_eq!(spec.service_account_name.as_deref(), Some("host-shim"));
        let projected_token = spec.volumes.iter().flatten().any(|volume| {
            volume.projected.as_ref().is_some_and(|p| {
                p.sources
                    .iter()
                    .flatten()
                    .any(|s| s.service_account_token.is_some())
            })
        });
        assert!(projected_token, "{name}: a projected ServiceAccount token");
        let container = &spec.containers[0];
        assert!(
            !container
                .env
                .iter()
                .flatten()
                .any(|e| e.name == "KUBECONFIG"),
            "{name}: no kubeconfig"
        );
    }
    let leases: Api<k8s_openapi::api::coordination::v1::Lease> =
        Api::namespaced(client.clone(), SYSTEM);
    for name in first.keys() {
        eventually(PROMPTLY, "the replica's Lease", || async {
            leases
                .get_opt(&format!("kube-wasm-host.{name}"))
                .await
                .ok()
                .flatten()
        })
        .await;
        let writes: Vec<_> = audited_requests_in(&cluster.audit_log, "leases", SYSTEM)
            .into_iter()
            .filter(|r| r.verb == "create" || r.verb == "update")
            .filter(|r| r.user_agent.contains(&format!("(replica {name})")))
            .collect();
        assert!(!writes.is_empty(), "{name} wrote its Lease");
        for write in writes {
            assert_eq!(
                write.user, "system:serviceaccount:kube-wasm-system:host-shim",
                "{name} reached the apiserver with its Pod's ServiceAccount token"
            );
        }
    }

    // The module, pulled by the host from the registry (which Pods reach at the node).
    let module = registry::push(MODULE, "kube-wasm/configmap-mirror", "cluster", &[]);
    let module = module.replacen(&registry::address(), &cluster.pod_registry, 1);
    let example = Overlay {
        host_image: None,
        module_image: Some(module),
        extra_host_args: Vec::new(),
    }
    .write(&dir.join("example"));
    cluster.kubectl(&["apply", "-k", &example.to_string_lossy()]);
    let holder = holder_among(&client, &first).await;
    let latency = mirror(&client, "first").await;
    eprintln!("the module runs on {holder}; mirrored in {latency:?}");
    let runs = module_runs(&logs);
    let open: Vec<_> = runs.iter().filter(|r| r.stop_us.is_none()).collect();
    assert_eq!(
        open.len(),
        1,
        "the module runs on exactly one replica: {runs:?}"
    );
    assert_eq!(open[0].replica, holder);

    // kubectl logs and the metrics endpoint, through the Pod.
    let log = cluster.kubectl(&["logs", "--namespace", SYSTEM, &holder]);
    assert!(
        log.contains("running the WasmControllers of the cluster"),
        "kubectl logs {holder}: {log}"
    );
    let metrics = cluster.kubectl(&[
        "get",
        "--raw",
        &format!("/api/v1/namespaces/{SYSTEM}/pods/{holder}:9090/proxy/metrics"),
    ]);
    assert_eq!(
        value(&metrics, "kube_wasm_replica_modules_owned"),
        Some(1.0),
        "{holder}'s metrics: {metrics}"
    );

    // Delete the holder's Pod: the module runs elsewhere within the Lease bound.
    let deleted_at = Instant::now();
    cluster.kubectl(&[
        "delete",
        "pod",
        "--namespace",
        SYSTEM,
        &holder,
        "--wait=false",
    ]);
    // Another live replica takes it: a survivor, or the Deployment's new Pod if that joined
    // first and the module's weight is highest there.
    let next = eventually(
        PROMPTLY,
        "the module Running on another replica",
        || async {
            let ready = ready_pods(&pods).await;
            let object = wc::api(&client, DEMO).get(MODULE).await.ok()?;
            let status = object.data.get("status")?;
            let host = status["host"].as_str()?;
            (status["phase"] == "Running" && host != holder && ready.contains_key(host))
                .then(|| host.to_owned())
        },
    )
    .await;
    mirror(&client, "after-delete").await;
    let moved = deleted_at.elapsed();
    eprintln!("deleting {holder}'s Pod: the module mirrors on {next} {moved:?} later");
    assert!(
        moved < LEASE + Duration::from_secs(30),
        "the module moved in {moved:?}"
    );
    three_running(&cluster, &pods, digest).await;

    // A rolling update to a new image digest: the module is handed over, never run twice.
    let rolled = relabelled_host_image("rollout-1", &dir);
    let new_digest = split_digest(&rolled).1.to_owned();
    assert_ne!(new_digest, digest);
    let rolled_at = Instant::now();
    host_overlay(rolled).write(&dir.join("host"));
    cluster.kubectl(&["apply", "-k", &host.to_string_lossy()]);
    cluster.kubectl(&[
        "rollout",
        "status",
        "--namespace",
        SYSTEM,
        "deployment/host-shim",
        "--timeout=600s",
    ]);
    let last = three_running(&cluster, &pods, &new_digest).await;
    let after = holder_among(&client, &last).await;
    mirror(&client, "after-rollout").await;
    eprintln!(
        "rolled to {new_digest} in {:?}; the module runs on {after}",
        rolled_at.elapsed()
    );

    // Never twice: the intervals of every Pod's log, and the module's writes in the audit log.
    let now = now_us();
    let runs = module_runs(&logs);
    eprintln!("the module's runs: {runs:#?}");
    assert!(
        runs.len() >= 3,
        "it ran on the first holder, after the delete, after the roll"
    );
    let key = format!("{DEMO}.{MODULE}");
    let found = overlaps(&BTreeMap::from([(key, runs.clone())]), now);
    assert!(
        found.is_empty(),
        "the module ran on two replicas at once: {found:#?}"
    );
    let slack_us = 1_000_000;
    let mut writes = 0;
    for request in audited_requests_in(&cluster.audit_log, "secrets", DEMO) {
        if !["create", "update", "patch", "delete"].contains(&request.verb.as_str())
            || request
                .user
                .starts_with("system:serviceaccount:kube-system:")
        {
            continue;
        }
        let replica = request
            .replica()
            .unwrap_or_else(|| panic!("a write without a replica's User-Agent: {request:?}"));
        let at = request.received_us().expect("a received timestamp");
        if at > now {
            continue;
        }
        assert!(
            runs.iter().any(|r| r.replica == replica
                && r.start_us <= at
                && at <= r.stop_us.unwrap_or(now) + slack_us),
            "a write by {replica} at {at} outside its runs {runs:?}"
        );
        writes += 1;
    }
    eprintln!("{writes} module writes, each by the replica running the module then");
    assert!(writes >= 3, "the module wrote its mirrors: {writes}");
}
