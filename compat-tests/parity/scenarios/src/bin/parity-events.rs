//! Events: the first time a `Widget` generation is seen, the controller publishes a Kubernetes
//! Event about it through `events::Recorder` (reason `Seen`), then records the generation in
//! the widget's status (merge patch on the status subresource).

use futures::StreamExt;
use kube::api::{Api, Patch, PatchParams, ResourceExt};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::watcher;
use kube::{Client, Resource};
use parity_scenarios::observe;
use parity_scenarios::types::{Widget, WidgetStatus};
use std::sync::Arc;

struct Context {
    client: Client,
    recorder: Recorder,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let client = Client::try_default().await?;
    let widgets = Api::<Widget>::default_namespaced(client.clone());
    let reporter = Reporter {
        controller: "parity-events".into(),
        instance: None,
    };
    let recorder = Recorder::new(client.clone(), reporter);
    Controller::new(widgets, watcher::Config::default())
        .shutdown_on_signal()
        .run(
            reconcile,
            error_policy,
            Arc::new(Context { client, recorder }),
        )
        .for_each(|_| async {})
        .await;
    Ok(())
}

async fn reconcile(widget: Arc<Widget>, ctx: Arc<Context>) -> Result<Action, kube::Error> {
    let name = widget.name_any();
    let generation = widget.metadata.generation;
    if widget.status.as_ref().and_then(|s| s.observed_generation) == generation {
        return Ok(Action::await_change());
    }
    let event = Event {
        type_: EventType::Normal,
        reason: "Seen".into(),
        note: Some(format!(
            "generation {} of {name}",
            generation.unwrap_or_default()
        )),
        action: "Reconcile".into(),
        secondary: None,
    };
    ctx.recorder
        .publish(&event, &widget.object_ref(&()))
        .await?;
    let status = WidgetStatus {
        observed_generation: generation,
        phase: Some("Seen".into()),
    };
    let widgets: Api<Widget> =
        Api::namespaced(ctx.client.clone(), &widget.namespace().unwrap_or_default());
    let patch = serde_json::json!({ "status": status });
    widgets
        .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    observe(
        &format!("reconcile/{name}"),
        format!("event published for generation {generation:?}"),
    );
    Ok(Action::await_change())
}

fn error_policy(widget: Arc<Widget>, error: &kube::Error, _: Arc<Context>) -> Action {
    observe(
        &format!("reconcile/{}", widget.name_any()),
        format!("failed: {error}"),
    );
    Action::requeue(std::time::Duration::from_secs(1))
}
