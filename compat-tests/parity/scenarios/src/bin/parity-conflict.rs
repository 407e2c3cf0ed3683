//! Conflict retries: for every `Widget` generation not yet handled, the reconciler reads the
//! widget, touches it with a merge patch (a newer resourceVersion), then replaces its stale copy
//! — which the apiserver refuses with 409 Conflict — and retries the replace on a fresh read.
//! Decisions use fresh reads, never the store, so a queued second reconcile finds it done.

use futures::StreamExt;
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams, ResourceExt};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use parity_scenarios::observe;
use parity_scenarios::types::Widget;
use std::sync::Arc;

const HANDLED: &str = "parity.kube-wasm.example.com/handled";
const TOUCHED: &str = "parity.kube-wasm.example.com/touched";

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

async fn reconcile(widget: Arc<Widget>, client: Arc<Client>) -> Result<Action, kube::Error> {
    let name = widget.name_any();
    let stream = format!("reconcile/{name}");
    let widgets: Api<Widget> =
        Api::namespaced((*client).clone(), &widget.namespace().unwrap_or_default());
    let mut fresh = widgets.get(&name).await?;
    let generation = fresh.metadata.generation.unwrap_or_default().to_string();
    if fresh.annotations().get(HANDLED) == Some(&generation) {
        return Ok(Action::await_change());
    }
    let touch = serde_json::json!({ "metadata": { "annotations": { TOUCHED: generation } } });
    widgets
        .patch(&name, &PatchParams::default(), &Patch::Merge(&touch))
        .await?;
    for attempt in 1.. {
        fresh
            .annotations_mut()
            .insert(HANDLED.into(), generation.clone());
        match widgets.replace(&name, &PostParams::default(), &fresh).await {
            Ok(_) => {
                observe(
                    &stream,
                    format!("handled generation {generation} on attempt {attempt}"),
                );
                break;
            }
            Err(kube::Error::Api(status)) if status.code == 409 && attempt < 5 => {
                observe(&stream, format!("conflict on attempt {attempt}"));
                fresh = widgets.get(&name).await?;
            }
            Err(e) => return Err(e),
        }
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
