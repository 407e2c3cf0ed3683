//! Shared watches against the real apiserver: modules watching the same ConfigMaps with the
//! same selector cause exactly one upstream LIST and one upstream WATCH (counted in the
//! apiserver's audit log), and every module still sees every event, in order — plain watches
//! and streaming lists alike (once the server has accepted the first, sent as it is); a
//! server that refuses streaming lists refuses each module's; a controller that shares
//! nothing lists each collection once, as natively.

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Api;
use kube::api::{DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube_wasm_e2e::audit::{AuditedRequest, audited_requests};
use kube_wasm_e2e::manifest::{Entry, start_manifest, write_manifest};
use kube_wasm_e2e::objects::mirrored;
use kube_wasm_e2e::{
    client, eventually, fresh_namespace, kubeconfig_for, scratch_dir, serves_streaming_lists,
};
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

/// MODULES api-checks modules in `mode` (each watching the ConfigMaps labelled
/// `api-checks=forever` of a fresh namespace until the host ends it, the first of them
/// created) in one host with shared watches: the host, its namespace and a client for it.
async fn start_watchers(
    mode: &str,
    prefix: &str,
) -> (kube_wasm_e2e::Program, String, Api<ConfigMap>) {
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
    let host = start_manifest(&kubeconfig_for(&ns, &dir), &manifest);
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
    (host, ns, cms)
}

/// Runs MODULES api-checks modules in `mode` (see [`start_watchers`]), waits until each has
/// printed the first `initial` events of `want` (the state before the changes: a module that
/// prints `watching` may not be served yet, and a streaming list served after a change starts
/// from the changed state), makes three changes, and checks that each module printed `want`
/// and that the audit log holds one upstream LIST and one upstream plain WATCH of those
/// ConfigMaps, and `sent_as_is` streaming lists (the host's first, which tells it the server
/// serves them).
async fn identical_watches_share(
    mode: &str,
    prefix: &str,
    want: &[&str],
    initial: usize,
    sent_as_is: usize,
) {
    let (host, ns, cms) = start_watchers(mode, prefix).await;
    for i in 0..MODULES {
        let name = format!("watcher-{i}");
        eventually(
            WAIT,
            &format!("{name} to see the state before the changes"),
            || async {
                (events_seen(mode, &host.module_output(&name)) == want[..initial]).then_some(())
            },
        )
        .await;
    }
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
    let streamed = |r: &&AuditedRequest| r.uri.contains("sendInitialEvents=true");
    let watches = requests
        .iter()
        .filter(|r| r.verb == "watch" && !streamed(r))
        .count();
    let lists = requests.iter().filter(|r| r.verb == "list").count();
    assert_eq!(
        watches, 1,
        "{MODULES} identical watches, one upstream watch: {requests:#?}"
    );
    assert_eq!(
        lists, 1,
        "one upstream LIST for the shared watch: {requests:#?}"
    );
    assert_eq!(
        requests.iter().filter(streamed).count(),
        sent_as_is,
        "streaming lists sent upstream as they are: {requests:#?}"
    );
    stop_and_await_closed_watches(host, &ns).await;
}

/// Ends `host` and waits until the audit log shows every watch of namespace `ns`'s ConfigMaps
/// closed.
async fn stop_and_await_closed_watches(mut host: kube_wasm_e2e::Program, ns: &str) {
    let _ = host.terminate(Duration::from_secs(30));
    eventually(
        Duration::from_secs(10),
        "the shared watch to be closed",
        || async {
            let open = audited_requests("configmaps", ns)
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
    identical_watches_share("watch-forever", "shared", &want, 1, 0).await;
}

#[tokio::test]
async fn identical_streaming_lists_share_one_upstream_watch_and_each_sees_every_event() {
    // kube-runtime's watcher with `streaming_lists()`: a watch with sendInitialEvents=true and
    // resourceVersionMatch=NotOlderThan from "0", served from the shared watch's store as the
    // API server's cacher serves it: the objects, the initial-events-end bookmark, changes.
    // The first goes upstream as it is: its answer tells the host the server serves them.
    if !serves_streaming_lists(&client().await).await {
        streaming_lists_refused_by_the_server_are_refused_to_every_module().await;
        return;
    }
    let want = [
        "Added cm-0",
        "synced",
        "Applied cm-1",
        "Applied cm-1",
        "Deleted cm-0",
    ];
    identical_watches_share("stream-forever", "streamed", &want, 2, 1).await;
}

/// On a server whose WatchList feature gate is off, each module's streaming list goes
/// upstream as it is and gets the server's 422, as natively; nothing is shared.
async fn streaming_lists_refused_by_the_server_are_refused_to_every_module() {
    let (host, ns, _) = start_watchers("stream-forever", "refused").await;
    let refusal =
        "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled";
    for i in 0..MODULES {
        let name = format!("watcher-{i}");
        eventually(WAIT, &format!("{name} to be refused"), || async {
            let errors: Vec<String> = events_seen("stream-forever", &host.module_output(&name));
            (!errors.is_empty()
                && errors
                    .iter()
                    .all(|e| e.starts_with("error ") && e.contains(refusal)))
            .then_some(())
        })
        .await;
    }
    let requests = audited_requests("configmaps", &ns);
    let reads: Vec<_> = requests
        .iter()
        .filter(|r| r.verb == "watch" || r.verb == "list")
        .collect();
    assert!(
        reads.len() >= MODULES
            && reads
                .iter()
                .all(|r| r.verb == "watch" && r.uri.contains("sendInitialEvents=true")),
        "every module's streaming list sent as it is, nothing shared: {requests:#?}"
    );
    stop_and_await_closed_watches(host, &ns).await;
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
