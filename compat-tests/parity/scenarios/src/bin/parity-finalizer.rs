//! Delete with a finalizer: `kube::runtime::finalizer` guards every `Widget`. On apply the
//! widget's `<name>-data` ConfigMap is created when missing; on cleanup (the widget deleted)
//! that ConfigMap is deleted before the finalizer is removed.

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube::api::{Api, DeleteParams, ObjectMeta, PostParams, ResourceExt};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::finalizer::{Event, finalizer};
use kube::runtime::watcher;
use parity_scenarios::observe;
use parity_scenarios::types::Widget;
use std::sync::Arc;

const FINALIZER: &str = "parity.kube-wasm.example.com/cleanup";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let client = Client::try_default().await?;
    let widgets = Api::<Widget>::default_namespaced(client.clone());
    Controller::new(widgets, watcher::Config::default())
        .shutdown_on_signal()
        .run(reconcile, error_policy, Arc::new(client))
        .for_each(|_| async {})
        .await;
    Ok(())
}

type Error = kube::runtime::finalizer::Error<kube::Error>;

async fn reconcile(widget: Arc<Widget>, client: Arc<Client>) -> Result<Action, Error> {
    let ns = widget.namespace().unwrap_or_default();
    let widgets: Api<Widget> = Api::namespaced((*client).clone(), &ns);
    let config_maps: Api<ConfigMap> = Api::namespaced((*client).clone(), &ns);
    finalizer(&widgets, FINALIZER, widget, |event| async {
        match event {
            Event::Apply(widget) => {
                let name = format!("{}-data", widget.name_any());
                if config_maps.get_opt(&name).await?.is_none() {
                    let cm = ConfigMap {
                        metadata: ObjectMeta {
                            name: Some(name.clone()),
                            ..ObjectMeta::default()
                        },
                        data: Some([("content".into(), widget.spec.content.clone())].into()),
                        ..ConfigMap::default()
                    };
                    config_maps.create(&PostParams::default(), &cm).await?;
                    observe(
                        &format!("reconcile/{}", widget.name_any()),
                        format!("created {name}"),
                    );
                }
                Ok(Action::await_change())
            }
            Event::Cleanup(widget) => {
                let name = format!("{}-data", widget.name_any());
                config_maps.delete(&name, &DeleteParams::default()).await?;
                observe(
                    &format!("reconcile/{}", widget.name_any()),
                    format!("cleaned up {name}"),
                );
                Ok(Action::await_change())
            }
        }
    })
    .await
}

fn error_policy(widget: Arc<Widget>, error: &Error, _: Arc<Client>) -> Action {
    observe(
        &format!("reconcile/{}", widget.name_any()),
        format!("failed: {error}"),
    );
    Action::requeue(std::time::Duration::from_secs(1))
}
