//! Apiserver restart, reflector: a reflector keeps a store of every ConfigMap, and after every
//! completed (re)list, applied or deleted object reports the store's contents (names with their `value` entry,
//! sorted); across an apiserver restart the store must end up matching the cluster.
//!
//! The watcher's errors (the cut watch, refused connections while the apiserver is down) are
//! not fatal: like kube's `Controller`, the program keeps polling, and the watcher retries
//! after its backoff. They are not reported (how many occur depends on timing).

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube::api::{Api, ResourceExt};
use kube::runtime::watcher::Event;
use kube::runtime::{WatchStreamExt, reflector, watcher};
use parity_scenarios::observe;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let client = Client::try_default().await?;
    let config_maps = Api::<ConfigMap>::default_namespaced(client);
    let (store, writer) = reflector::store();
    let stream =
        reflector(writer, watcher(config_maps, watcher::Config::default())).default_backoff();
    let mut stream = std::pin::pin!(stream);
    let mut last = String::new();
    while let Some(event) = stream.next().await {
        let Ok(event) = event else { continue };
        // The store is complete once an initial list is done (a relist replaces it then).
        if matches!(event, Event::Init | Event::InitApply(_)) {
            continue;
        }
        let mut contents: Vec<String> = store
            .state()
            .iter()
            .map(|cm| {
                let value = cm.data.as_ref().and_then(|d| d.get("value")).cloned();
                format!("{}={}", cm.name_any(), value.unwrap_or_default())
            })
            .collect();
        contents.sort();
        let contents = contents.join(" ");
        // A relist after the restart touches every object again: report changes only.
        if contents != last {
            observe("store", &contents);
            last = contents;
        }
    }
    Ok(())
}
