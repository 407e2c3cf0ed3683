//! Shared watches against the real apiserver: modules watching the same ConfigMaps with the
//! same selector cause exactly one upstream LIST and one upstream WATCH (counted in the
//! apiserver's audit log), and every module still sees every event, in order — plain watches
//! and streaming lists alike; a controller that shares nothing lists each collection once, as
//! natively.

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Api;
use kube::api::{DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube_wasm_e2e::audit::audited_requests;
use kube_wasm_e2e::manifest::{Entry, start_manifest, write_manifest};
use kube_wasm_e2e::objects::mirrored;
use kube_wasm_e2e::{client, eventually, fresh_namespace, kubeconfig_for, scratch_dir};
use std::time::Duration;

const MODULES: usize = 5;
const WAIT: Duration = Duration::from_secs(60);

fn labelled(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some([("api-checks".to_string(), "forever".to_string())].into()),
            ..ObjectMeta::default()
        },
        data: Some([("n".to_string(), "1".to_string())].into()),
        ..ConfigMap::default()
    }
}

/// The changes a module in `mode` printed, as `Added cm-1`, `Modified cm-1`, … in order.
fn events_seen(mode: &str, lines: &[String]) -> Vec<String> {
    let prefix = format!("{mode}: ");
    lines
        .iter()
        .filter_map(|line| line.strip_prefix(&prefix))
        .filter(|event| *event != "watching")
        .map(str::to_owned)
        .collect()
}

/// Runs MODULES api-checks modules in `mode` (each watching the ConfigMaps labelled
/// `api-checks=forever` of one namespace until the host ends it) in one host with shared
/// watches, makes three changes, and checks that each module printed `want` and that the
/// audit log holds one upstream LIST and one upstream WATCH of those ConfigMaps (a plain one:
/// not a streaming list).
async fn identical_watches_share(mode: &str, prefix: &str, want: &[&str]) {
    let client = client().await;
    let ns = fresh_namespace(&client, prefix).await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    cms.create(&PostParams::default(), &labelled("cm-0"))
        .await
        .expect("create");
    let dir = scratch_dir().join(format!("{prefix}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let entries: Vec<Entry> = (0..MODULES)
        .map(|i| {
            Entry::new(&format!("watcher-{i}"), "api-checks")
                .namespace(&ns)
                .env("API_CHECKS_MODE", mode)
                .env("API_CHECKS_NAMESPACE", &ns)
        })
        .collect();
    // The modules ignore stop requests: the host ends them after the stop timeout.
    let manifest = write_manifest(
        &dir,
        "host.yaml",
        "sharedWatches: true\nstopTimeout: 1s",
        &entries,
    );
    let mut host = start_manifest(&kubeconfig_for(&ns, &dir), &manifest);
    let watching = format!("{mode}: watching");
    eventually(WAIT, "every module to watch", || async {
        let started = host
            .stdout
            .snapshot()
            .iter()
            .filter(|l| l.contains(&watching))
            .count();
        (started == MODULES).then_some(())
    })
    .await;

    cms.create(&PostParams::default(), &labelled("cm-1"))
        .await
        .expect("create");
    cms.patch(
        "cm-1",
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({"data": {"n": "2"}})),
    )
    .await
    .expect("patch");
    cms.delete("cm-0", &DeleteParams::default())
        .await
        .expect("delete");

    for i in 0..MODULES {
        let name = format!("watcher-{i}");
        eventually(WAIT, &format!("{name} to see every event"), || async {
            (events_seen(mode, &host.module_output(&name)) == want).then_some(())
        })
        .await;
    }

    let requests = audited_requests("configmaps", &ns);
    let watches = requests.iter().filter(|r| r.verb == "watch").count();
    let lists = requests.iter().filter(|r| r.verb == "list").count();
    assert_eq!(
        watches, 1,
        "{MODULES} identical watches, one upstream watch: {requests:#?}"
    );
    assert_eq!(
        lists, 1,
        "one upstream LIST for the shared watch: {requests:#?}"
    );
    assert!(
        requests
            .iter()
            .all(|r| !r.uri.contains("sendInitialEvents")),
        "no module's streaming list went upstream: {requests:#?}"
    );

    let _ = host.terminate(Duration::from_secs(30));
    eventually(
        Duration::from_secs(10),
        "the shared watch to be closed",
        || async {
            let open = audited_requests("configmaps", &ns)
                .iter()
                .filter(|r| r.verb == "watch" && !r.stages.iter().any(|s| s == "ResponseComplete"))
                .count();
            (open == 0).then_some(())
        },
    )
    .await;
}

#[tokio::test]
async fn identical_watches_share_one_upstream_watch_and_each_sees_every_event() {
    let want = ["Added cm-0", "Added cm-1", "Modified cm-1", "Deleted cm-0"];
    identical_watches_share("watch-forever", "shared", &want).await;
}

#[tokio::test]
async fn identical_streaming_lists_share_one_upstream_watch_and_each_sees_every_event() {
    // kube-runtime's watcher with `streaming_lists()`: a watch with sendInitialEvents=true and
    // resourceVersionMatch=NotOlderThan from "0", served from the shared watch's store as the
    // API server's cacher serves it: the objects, the initial-events-end bookmark, changes.
    let want = [
        "Added cm-0",
        "synced",
        "Applied cm-1",
        "Applied cm-1",
        "Deleted cm-0",
    ];
    identical_watches_share("stream-forever", "streamed", &want).await;
}

#[tokio::test]
async fn a_lone_controller_lists_each_collection_once_as_natively() {
    // configmap-mirror alone in its namespace: it lists its ConfigMaps (consistently) and
    // watches from that list's resourceVersion, as kube-runtime's watcher does; the shared
    // watch starts from that list instead of LISTing again. (It lists Secrets to prune them,
    // and never watches them.)
    let client = client().await;
    let ns = fresh_namespace(&client, "lone").await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &ns);
    cms.create(&PostParams::default(), &mirrored("before"))
        .await
        .expect("create");
    let dir = scratch_dir().join(format!("lone-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let manifest = write_manifest(
        &dir,
        "host.yaml",
        "sharedWatches: true",
        &[Entry::new("mirror", "configmap-mirror").namespace(&ns)],
    );
    let mut host = start_manifest(&kubeconfig_for(&ns, &dir), &manifest);
    eventually(WAIT, "Secret before", || async {
        secrets.get_opt("before").await.ok().flatten()
    })
    .await;
    cms.create(&PostParams::default(), &mirrored("after"))
        .await
        .expect("create");
    eventually(WAIT, "Secret after, through the watch", || async {
        secrets.get_opt("after").await.ok().flatten()
    })
    .await;

    // The test itself only creates and gets; the audit log may lag a little.
    let counts = |resource: &str, verb: &str| {
        audited_requests(resource, &ns)
            .iter()
            .filter(|r| r.verb == verb)
            .count()
    };
    eventually(
        Duration::from_secs(10),
        "the ConfigMap WATCH in the audit log",
        || async { (counts("configmaps", "watch") >= 1).then_some(()) },
    )
    .await;
    let requests = audited_requests("configmaps", &ns);
    assert_eq!(
        (counts("configmaps", "list"), counts("configmaps", "watch")),
        (1, 1),
        "one LIST, one WATCH of ConfigMaps, as natively: {requests:#?}"
    );
    assert_eq!(
        (counts("secrets", "list"), counts("secrets", "watch")),
        (1, 0),
        "its one prune LIST of Secrets"
    );
    let _ = host.terminate(Duration::from_secs(30));
}
