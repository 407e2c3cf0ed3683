//! Requests and watches share HTTP/2 connections, against the real apiserver. Nine
//! configmap-mirror modules, each in its own namespace and two acting as a ServiceAccount:
//! - with `http2: false` the host holds at least one TCP connection per module (one per watch,
//!   kube's HTTP/1.1 client);
//! - by default it holds one connection per `http2MaxStreams` open streams, whatever the
//!   identity, as its metrics and `/proc` agree, and every module still mirrors;
//! - after the apiserver restarts (every connection cut) the connections reopen and a new
//!   ConfigMap is mirrored everywhere.
//!
//! The only test of its binary: it restarts the apiserver.

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Api;
use kube::api::PostParams;
use kube_wasm_e2e::manifest::{Entry, start_manifest_with, stop_without_failures, write_manifest};
use kube_wasm_e2e::metrics::{free_local_addr, scrape, value};
use kube_wasm_e2e::objects::{mirror_account, mirrored};
use kube_wasm_e2e::sockets::{apiserver_port, established_to};
use kube_wasm_e2e::{
    Program, client, eventually, fresh_namespace, kubeconfig_for, restart_apiserver, scratch_dir,
    until_answered,
};
use std::path::Path;
use std::time::Duration;

const MODULES: usize = 9;
/// Modules acting as ServiceAccount `mirror` of their namespace.
const ACTING: usize = 2;
const MAX_STREAMS: usize = 4;
const WAIT: Duration = Duration::from_secs(120);

/// Waits until every namespace has Secret `name` mirrored from the ConfigMap of that name.
async fn mirrored_everywhere(client: &kube::Client, namespaces: &[String], name: &str) {
    for ns in namespaces {
        let secrets = Api::<Secret>::namespaced(client.clone(), ns);
        eventually(WAIT, &format!("{ns}/{name} mirrored"), || async {
            secrets.get_opt(name).await.ok().flatten().map(|_| ())
        })
        .await;
    }
}

fn start(dir: &Path, settings: &str, namespaces: &[String], metrics_addr: &str) -> Program {
    let entries: Vec<Entry> = namespaces
        .iter()
        .enumerate()
        .map(|(i, ns)| {
            let entry = Entry::new(&format!("mirror-{i}"), "configmap-mirror").namespace(ns);
            if i < ACTING {
                entry.field(&format!(
                    "serviceAccount: {{namespace: {ns}, name: mirror}}"
                ))
            } else {
                entry
            }
        })
        .collect();
    let manifest = write_manifest(dir, "host.yaml", settings, &entries);
    let kubeconfig = kubeconfig_for("default", dir);
    start_manifest_with(&kubeconfig, &manifest, &["--metrics-addr", metrics_addr])
}

/// When the host's metrics and `/proc` agree: (connections, streams) with as many TCP
/// connections to the apiserver as HTTP/2 connections.
async fn shared_connections(host: &Program, metrics_addr: &str) -> (usize, usize) {
    eventually(
        WAIT,
        "HTTP/2 connections as the metrics count them",
        || async {
            let text = scrape(metrics_addr);
            let connections = value(&text, "kube_wasm_upstream_http2_connections")? as usize;
            let streams = value(&text, "kube_wasm_upstream_http2_streams")? as usize;
            let tcp = established_to(host.id(), apiserver_port()).ok()?;
            (tcp == connections && streams >= MODULES).then_some((connections, streams))
        },
    )
    .await
}

#[tokio::test]
async fn watches_of_every_identity_share_http2_connections_and_survive_an_apiserver_restart() {
    let client = client().await;
    let mut namespaces = Vec::new();
    for i in 0..MODULES {
        let ns = fresh_namespace(&client, &format!("h2-{i}")).await;
        if i < ACTING {
            mirror_account(&client, &ns, "mirror").await;
        }
        Api::<ConfigMap>::namespaced(client.clone(), &ns)
            .create(&PostParams::default(), &mirrored("before"))
            .await
            .expect("configmap");
        namespaces.push(ns);
    }
    let dir = scratch_dir().join(format!("http2-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");

    // HTTP/1.1: kube's own client, a connection per watch.
    let metrics_addr = free_local_addr().expect("a free port").to_string();
    let mut host = start(&dir, "http2: false\n", &namespaces, &metrics_addr);
    mirrored_everywhere(&client, &namespaces, "before").await;
    let per_watch = established_to(host.id(), apiserver_port()).expect("the host's sockets");
    assert!(
        per_watch >= MODULES,
        "over HTTP/1.1 every module's watch holds its own connection: {per_watch}"
    );
    assert_eq!(
        value(
            &scrape(&metrics_addr),
            "kube_wasm_upstream_http2_connections"
        ),
        Some(0.0)
    );
    assert!(host.terminate(WAIT).expect("host exits").success());

    // HTTP/2: a connection per MAX_STREAMS streams, shared by both identities.
    let metrics_addr = free_local_addr().expect("a free port").to_string();
    let settings = format!("http2MaxStreams: {MAX_STREAMS}\n");
    let mut host = start(&dir, &settings, &namespaces, &metrics_addr);
    for ns in &namespaces {
        Api::<ConfigMap>::namespaced(client.clone(), ns)
            .create(&PostParams::default(), &mirrored("over-http2"))
            .await
            .expect("configmap");
    }
    mirrored_everywhere(&client, &namespaces, "over-http2").await;
    let (connections, streams) = shared_connections(&host, &metrics_addr).await;
    let needed = streams.div_ceil(MAX_STREAMS);
    assert!(
        connections == needed || connections == needed + 1,
        "{streams} streams need {needed} connections of {MAX_STREAMS} streams (one more may \
         be idle), the host holds {connections}"
    );
    eprintln!(
        "{MODULES} mirrors: {per_watch} TCP connections over HTTP/1.1; over HTTP/2 {streams} \
         streams on {connections} connections"
    );
    assert!(
        connections < per_watch,
        "fewer connections than one per watch: {connections} against {per_watch}"
    );

    restart_apiserver().expect("apiserver restarted");
    for ns in &namespaces {
        let configmaps = Api::<ConfigMap>::namespaced(client.clone(), ns);
        until_answered(WAIT, "create after the restart", &[409], || {
            let configmaps = configmaps.clone();
            async move {
                configmaps
                    .create(&PostParams::default(), &mirrored("after-restart"))
                    .await
            }
        })
        .await;
    }
    mirrored_everywhere(&client, &namespaces, "after-restart").await;
    // After the restart every watch reconnects at once, LISTs and writes among them, each
    // stream on the first connection with room; a connection keeps the watches it got while
    // its short streams end, so the streams may sit on more connections than they need. Still
    // shared: fewer connections than one per watch.
    let (connections, streams) = shared_connections(&host, &metrics_addr).await;
    assert!(
        connections < per_watch,
        "after the restart: {connections} connections for {streams} streams, against \
         {per_watch} over HTTP/1.1"
    );

    stop_without_failures(&mut host, WAIT);
}
