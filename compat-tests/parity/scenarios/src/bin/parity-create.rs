//! Create: every `Widget` gets a ConfigMap of its name, created (POST) when missing and owned
//! by the widget (`owns`, so a deleted ConfigMap is recreated); the widget's status is then
//! merge-patched through the status subresource. Writes happen only when something is missing.

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams, ResourceExt};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use kube::{Client, Resource};
use parity_scenarios::observe;
use parity_scenarios::types::{Widget, WidgetStatus};
use std::sync::Arc;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let client = Client::try_default().await?;
    let widgets = Api::<Widget>::default_namespaced(client.clone());
    let config_maps = Api::<ConfigMap>::default_namespaced(client.clone());
    Controller::new(widgets, watcher::Config::default())
        .owns(config_maps, watcher::Config::default())
        .shutdown_on_signal()
        .run(reconcile, error_policy, Arc::new(client))
        .for_each(|_| async {})
        .await;
    Ok(())
}

async fn reconcile(widget: Arc<Widget>, client: Arc<Client>) -> Result<Action, kube::Error> {
    let name = widget.name_any();
    let ns = widget.namespace().unwrap_or_default();
    let config_maps: Api<ConfigMap> = Api::namespaced((*client).clone(), &ns);
    if config_maps.get_opt(&name).await?.is_none() {
        let cm = ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                owner_references: widget.controller_owner_ref(&()).map(|o| vec![o]),
                ..ObjectMeta::default()
            },
            data: Some([(widget.spec.data_key(), widget.spec.content.clone())].into()),
            ..ConfigMap::default()
        };
        config_maps.create(&PostParams::default(), &cm).await?;
        observe(&format!("reconcile/{name}"), "created its ConfigMap");
    }
    let want = WidgetStatus {
        observed_generation: widget.metadata.generation,
        phase: Some("Created".into()),
    };
    // A fresh read: a reconcile queued by the ConfigMap's event may run before the store
    // holds the status written just before.
    let widgets: Api<Widget> = Api::namespaced((*client).clone(), &ns);
    let fresh = widgets.get_status(&name).await?;
    if fresh.status.as_ref() != Some(&want) {
        let patch = serde_json::json!({ "status": want });
        widgets
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
        observe(&format!("reconcile/{name}"), "status Created");
    }
    Ok(Action::await_change())
}

fn error_policy(widget: Arc<Widget>, error: &kube::Error, _: Arc<Client>) -> Action {
    observe(
        &format!("reconcile/{}", widget.name_any()),
        format!("failed: {error}"),
    );
    Action::requeue(std::time::Duration::from_secs(1))
}
