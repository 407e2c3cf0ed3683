//! Keeps a reflector's cache of the ConfigMaps labelled `kube-wasm.dev/store=true` in the
//! client's default namespace, and from a second task reads that cache once a second and
//! writes what it holds into the ConfigMap `store-summary`:
//!
//! - `count`: how many labelled ConfigMaps the store holds (`Store::len`);
//! - `names`: their names, sorted, comma-separated (`Store::state`);
//! - `primary`: the name of a labelled ConfigMap also labelled `role=primary`, or `none`
//!   (`Store::find`; with several, any one of them);
//! - `mode`: the `mode` key of the labelled ConfigMap `settings`, or `unset`
//!   (`Store::get` with an `ObjectRef`).
//!
//! The summary is written only when it changed since the last successful write; a failed
//! write (e.g. while the apiserver restarts) is retried on the next tick. The reflector's
//! watcher resumes or relists on its own after errors, with kube-runtime's default backoff.

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use kube::{Client, ResourceExt};
use std::collections::BTreeMap;
use std::time::Duration;

const SELECTOR: &str = "kube-wasm.dev/store=true";
const SUMMARY: &str = "store-summary";
const SETTINGS: &str = "settings";
const MANAGER: &str = "store-reader";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let client = Client::try_default().await?;
    let namespace = client.default_namespace().to_string();
    let config_maps: Api<ConfigMap> = Api::default_namespaced(client);
    println!("store-reader: reflecting ConfigMaps with {SELECTOR} in namespace {namespace}");

    let (reader, writer) = reflector::store::<ConfigMap>();
    let stream = reflector(
        writer,
        watcher(
            config_maps.clone(),
            watcher::Config::default().labels(SELECTOR),
        ),
    )
    .default_backoff()
    .touched_objects();
    tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(item) = stream.next().await {
            match item {
                Ok(cm) => println!("store-reader: reflected ConfigMap {}", cm.name_any()),
                Err(e) => println!("store-reader: watch error (retrying): {e}"),
            }
        }
    });
    tokio::spawn(async move {
        if let Err(e) = summarise(reader, config_maps, namespace).await {
            println!("store-reader: summary task failed: {e}");
        }
    });

    tokio::signal::ctrl_c().await?;
    println!("store-reader: stop requested, exiting");
    Ok(())
}

/// Waits for the store's first complete listing, then writes the summary whenever it
/// changes, checking once a second.
async fn summarise(
    reader: Store<ConfigMap>,
    config_maps: Api<ConfigMap>,
    namespace: String,
) -> anyhow::Result<()> {
    reader.wait_until_ready().await?;
    println!("store-reader: store ready with {} ConfigMaps", reader.len());
    let mut ticks = tokio::time::interval(Duration::from_secs(1));
    let mut written: Option<BTreeMap<String, String>> = None;
    loop {
        ticks.tick().await;
        let summary = summary(&reader, &namespace);
        if written.as_ref() == Some(&summary) {
            continue;
        }
        match write(&config_maps, &summary).await {
            Ok(()) => {
                println!("store-reader: wrote summary {summary:?}");
                written = Some(summary);
            }
            Err(e) => println!("store-reader: could not write the summary (retrying): {e}"),
        }
    }
}

/// What the store holds now, as the summary's data.
fn summary(reader: &Store<ConfigMap>, namespace: &str) -> BTreeMap<String, String> {
    let mut names: Vec<String> = reader.state().iter().map(|cm| cm.name_any()).collect();
    names.sort();
    let primary = reader
        .find(|cm| cm.labels().get("role").map(String::as_str) == Some("primary"))
        .map_or_else(|| "none".to_string(), |cm| cm.name_any());
    let mode = reader
        .get(&ObjectRef::new(SETTINGS).within(namespace))
        .and_then(|cm| cm.data.as_ref()?.get("mode").cloned())
        .unwrap_or_else(|| "unset".to_string());
    BTreeMap::from([
        ("count".to_string(), reader.len().to_string()),
        ("names".to_string(), names.join(",")),
        ("primary".to_string(), primary),
        ("mode".to_string(), mode),
    ])
}

/// Applies the summary ConfigMap (server-side apply: creates it the first time).
async fn write(
    config_maps: &Api<ConfigMap>,
    summary: &BTreeMap<String, String>,
) -> anyhow::Result<()> {
    let cm = serde_json::json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": { "name": SUMMARY },
        "data": summary,
    });
    let params = PatchParams::apply(MANAGER).force();
    tokio::time::timeout(
        Duration::from_secs(30),
        config_maps.patch(SUMMARY, &params, &Patch::Apply(&cm)),
    )
    .await??;
    Ok(())
}
