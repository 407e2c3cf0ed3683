//! Streaming lists: a reflector whose watcher takes its initial state with one streaming
//! list (`watcher::Config::streaming_lists()`: a watch with `sendInitialEvents=true`, then the
//! `k8s.io/initial-events-end` bookmark) keeps a store of the ConfigMaps labelled
//! `parity/streamed=yes` and, once the initial events end and after every change, reports the
//! store's contents (names and their `n` data, sorted). Alongside, one `Api::watch`
//! with `WatchParams::streaming_lists()` reports its initial objects and the bookmark's
//! annotation, then its changes.

use futures::TryStreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube::api::{Api, ResourceExt, WatchEvent, WatchParams};
use kube::runtime::watcher::Event;
use kube::runtime::{WatchStreamExt, reflector, watcher};
use parity_scenarios::observe;

const LABELS: &str = "parity/streamed=yes";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let client = Client::try_default().await?;
    let config_maps = Api::<ConfigMap>::default_namespaced(client);
    let config = watcher::Config::default().labels(LABELS).streaming_lists();
    let (store, writer) = reflector::store();
    let reflected = async {
        let stream =
            reflector(writer, watcher(config_maps.clone(), config.clone())).default_backoff();
        let mut stream = std::pin::pin!(stream);
        while let Some(event) = stream.try_next().await? {
            if matches!(event, Event::Init | Event::InitApply(_)) {
                continue;
            }
            let mut contents: Vec<String> = store
                .state()
                .iter()
                .map(|cm| {
                    let data = cm.data.as_ref().and_then(|d| d.get("n").cloned());
                    format!("{}={}", cm.name_any(), data.unwrap_or_default())
                })
                .collect();
            contents.sort();
            observe("store", contents.join(" "));
        }
        anyhow::Ok(())
    };
    let raw = async {
        let params = WatchParams::streaming_lists().labels(LABELS);
        let mut events = std::pin::pin!(config_maps.watch(&params, "0").await?);
        let mut initial = Vec::new();
        let mut ended = false;
        while let Some(event) = events.try_next().await? {
            match event {
                WatchEvent::Added(cm) if !ended => initial.push(cm.name_any()),
                WatchEvent::Bookmark(bookmark) if !ended => {
                    let end = bookmark
                        .metadata
                        .annotations
                        .get("k8s.io/initial-events-end")
                        .cloned();
                    initial.sort();
                    observe("watch", format!("initial {initial:?} end {end:?}"));
                    ended = true;
                }
                WatchEvent::Added(cm) => observe("watch", format!("added {}", cm.name_any())),
                WatchEvent::Modified(cm) => observe("watch", format!("modified {}", cm.name_any())),
                WatchEvent::Deleted(cm) => observe("watch", format!("deleted {}", cm.name_any())),
                WatchEvent::Bookmark(_) => {}
                WatchEvent::Error(err) => observe("watch", format!("error {}", err.code)),
            }
        }
        anyhow::Ok(())
    };
    let (reflected, raw) = futures::join!(reflected, raw);
    reflected.and(raw)
}
