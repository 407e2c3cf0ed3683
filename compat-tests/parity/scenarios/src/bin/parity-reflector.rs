//! Reflector and predicates: a reflector keeps a store of the ConfigMaps labelled
//! `parity/watched=yes` and, once its initial list is complete and after every change,
//! reports the store's contents (names and their `parity/tier` label, sorted). A second
//! watcher on the same ConfigMaps passes its touched objects through a `predicates::labels`
//! filter and reports only the ConfigMaps whose labels changed.

use futures::TryStreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube::api::{Api, ResourceExt};
use kube::runtime::watcher::Event;
use kube::runtime::{WatchStreamExt, predicates, reflector, watcher};
use parity_scenarios::observe;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let client = Client::try_default().await?;
    let config_maps = Api::<ConfigMap>::default_namespaced(client);
    let config = watcher::Config::default().labels("parity/watched=yes");
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
                    let tier = cm.labels().get("parity/tier").cloned().unwrap_or_default();
                    format!("{}={tier}", cm.name_any())
                })
                .collect();
            contents.sort();
            observe("store", contents.join(" "));
        }
        anyhow::Ok(())
    };
    let labelled = async {
        let stream = watcher(config_maps.clone(), config.clone())
            .default_backoff()
            .touched_objects()
            .predicate_filter(predicates::labels, Default::default());
        let mut stream = std::pin::pin!(stream);
        while let Some(cm) = stream.try_next().await? {
            observe(
                "labels",
                format!("{} labels {:?}", cm.name_any(), cm.labels()),
            );
        }
        anyhow::Ok(())
    };
    let (reflected, labelled) = futures::join!(reflected, labelled);
    reflected.and(labelled)
}
