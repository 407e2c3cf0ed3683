//! Update with server-side apply: every `Widget` gets a ConfigMap applied with a field manager
//! and `force` whenever its data is not what the spec asks, then its status applied through the
//! status subresource (SSA too, its own field manager). Spec changes update both.

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, ResourceExt};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use kube::{Client, Resource};
use parity_scenarios::observe;
use parity_scenarios::types::{Widget, WidgetStatus};
use std::collections::BTreeMap;
use std::sync::Arc;

const MANAGER: &str = "parity-update-ssa";

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
    let stream = format!("reconcile/{name}");
    let ns = widget.namespace().unwrap_or_default();
    let config_maps: Api<ConfigMap> = Api::namespaced((*client).clone(), &ns);
    let want: BTreeMap<String, String> =
        [(widget.spec.data_key(), widget.spec.content.clone())].into();
    let current = config_maps.get_opt(&name).await?;
    if current.and_then(|cm| cm.data) != Some(want.clone()) {
        let cm = serde_json::json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": name,
                "labels": { "app.kubernetes.io/managed-by": MANAGER },
                "ownerReferences": widget.controller_owner_ref(&()).map(|o| vec![o]),
            },
            "data": want,
        });
        config_maps
            .patch(
                &name,
                &PatchParams::apply(MANAGER).force(),
                &Patch::Apply(&cm),
            )
            .await?;
        observe(&stream, format!("applied ConfigMap {want:?}"));
    }
    let status = WidgetStatus {
        observed_generation: widget.metadata.generation,
        phase: Some("Applied".into()),
    };
    // A fresh read: a reconcile queued by the ConfigMap's event may run before the store
    // holds the status written just before.
    let widgets: Api<Widget> = Api::namespaced((*client).clone(), &ns);
    let fresh = widgets.get_status(&name).await?;
    if fresh.status.as_ref() != Some(&status) {
        let patch = serde_json::json!({
            "apiVersion": Widget::api_version(&()),
            "kind": Widget::kind(&()),
            "status": status,
        });
        let params = PatchParams::apply(&format!("{MANAGER}-status")).force();
        widgets
            .patch_status(&name, &params, &Patch::Apply(&patch))
            .await?;
        observe(
            &stream,
            format!(
                "status applied for generation {:?}",
                status.observed_generation
            ),
        );
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
