//! Watcher configuration: two watchers on ConfigMaps, both with the field selector
//! `metadata.name!=skip-me`. The `paged` one lists two objects a page (most-recent semantics);
//! the `any` one lists with `any_semantic`. Each reports its events in order: the initial
//! list (`Init`, one `InitApply` per object, `InitDone`), then `Apply` and `Delete`.

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube::api::{Api, ResourceExt};
use kube::runtime::watcher::{self, Event, watcher};
use parity_scenarios::observe;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let client = Client::try_default().await?;
    let config_maps = Api::<ConfigMap>::default_namespaced(client);
    let selector = "metadata.name!=skip-me";
    let paged = watcher::Config::default().fields(selector).page_size(2);
    let any = watcher::Config::default().fields(selector).any_semantic();
    let paged = watcher(config_maps.clone(), paged).map_ok(|e| ("paged", e));
    let any = watcher(config_maps, any).map_ok(|e| ("any", e));
    let mut events = futures::stream::select(paged, any).boxed();
    while let Some((stream, event)) = events.try_next().await? {
        let text = match event {
            Event::Init => "Init".to_string(),
            Event::InitApply(cm) => format!("InitApply {}", cm.name_any()),
            Event::InitDone => "InitDone".to_string(),
            Event::Apply(cm) => format!("Apply {} {:?}", cm.name_any(), cm.data),
            Event::Delete(cm) => format!("Delete {}", cm.name_any()),
        };
        observe(stream, text);
    }
    Ok(())
}
