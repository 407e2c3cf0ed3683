//! Apiserver restart, controller: every `Widget` gets an owned ConfigMap of its name,
//! server-side applied whenever its data differs from the spec; the controller must keep
//! working across an apiserver restart (watches cut, 410 Gone, relists).

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, ResourceExt};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use kube::{Client, Resource};
use parity_scenarios::observe;
use parity_scenarios::types::Widget;
use std::collections::BTreeMap;
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
    let config_maps: Api<ConfigMap> =
        Api::namespaced((*client).clone(), &widget.namespace().unwrap_or_default());
    let want: BTreeMap<String, String> =
        [(widget.spec.data_key(), widget.spec.content.clone())].into();
    if config_maps.get_opt(&name).await?.and_then(|cm| cm.data) != Some(want.clone()) {
        let cm = serde_json::json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": name,
                "ownerReferences": widget.controller_owner_ref(&()).map(|o| vec![o]),
            },
            "data": want,
        });
        let params = PatchParams::apply("parity-restart-controller").force();
        config_maps
            .patch(&name, &params, &Patch::Apply(&cm))
            .await?;
        observe(&format!("reconcile/{name}"), format!("applied {want:?}"));
    }
    Ok(Action::await_change())
}

fn error_policy(widget: Arc<Widget>, _: &kube::Error, _: Arc<Client>) -> Action {
    // Errors while the apiserver is down depend on timing: not an observation.
    eprintln!("reconciling {} failed; retrying", widget.name_any());
    Action::requeue(std::time::Duration::from_secs(1))
}
