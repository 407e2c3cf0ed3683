//! Keeps a dependent ConfigMap `<name>-dependent`, holding a copy of the data, for every
//! ConfigMap labelled `kube-wasm.example.com/with-dependent=true` in the client's default
//! namespace, and deletes it before the labelled ConfigMap goes away.
//!
//! The controller puts the finalizer `kube-wasm.example.com/cleanup-dependent` on each
//! labelled ConfigMap (`kube::runtime::finalizer`), so deleting one only marks it for
//! deletion: the controller deletes its dependent, removes the finalizer, and Kubernetes
//! deletes the ConfigMap. Each step is published as a Kubernetes Event about the labelled
//! ConfigMap (`kubectl describe configmap <name>` shows them).

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ObjectMeta, Patch, PatchParams, ResourceExt};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::finalizer::{self, finalizer};
use kube::runtime::watcher;
use kube::{Client, Resource};
use std::sync::Arc;
use std::time::Duration;

const SELECTOR: &str = "kube-wasm.example.com/with-dependent=true";
const FINALIZER: &str = "kube-wasm.example.com/cleanup-dependent";
/// The annotation naming a dependent's source ConfigMap.
const DEPENDENT_OF: &str = "kube-wasm.example.com/dependent-of";
/// The field manager of the dependents, and the events' reporting controller.
const MANAGER: &str = "finalizer-controller";

/// Why a reconciliation failed.
#[derive(Debug, thiserror::Error)]
enum Error {
    #[error("{0}")]
    Kube(#[from] kube::Error),
}

/// What every reconciliation shares.
struct Context {
    config_maps: Api<ConfigMap>,
    recorder: Recorder,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let client = Client::try_default().await?;
    let config_maps = Api::<ConfigMap>::default_namespaced(client.clone());
    let recorder = Recorder::new(client.clone(), Reporter::from(MANAGER));
    println!(
        "finalizer-controller: watching ConfigMaps with {SELECTOR} in namespace {}",
        client.default_namespace()
    );

    let context = Arc::new(Context {
        config_maps: config_maps.clone(),
        recorder,
    });
    Controller::new(config_maps, watcher::Config::default().labels(SELECTOR))
        .shutdown_on_signal()
        .run(reconcile, error_policy, context)
        .for_each(|result| async move {
            if let Err(e) = result {
                println!("finalizer-controller: {e}");
            }
        })
        .await;
    println!("finalizer-controller: stopped");
    Ok(())
}

/// Reconciles a labelled ConfigMap behind the finalizer.
async fn reconcile(
    cm: Arc<ConfigMap>,
    ctx: Arc<Context>,
) -> Result<Action, finalizer::Error<Error>> {
    finalizer(&ctx.config_maps, FINALIZER, cm, |event| async {
        match event {
            finalizer::Event::Apply(cm) => apply(&cm, &ctx).await,
            finalizer::Event::Cleanup(cm) => cleanup(&cm, &ctx).await,
        }
    })
    .await
}

fn dependent_name(cm: &ConfigMap) -> String {
    format!("{}-dependent", cm.name_any())
}

/// Applies the dependent ConfigMap with a copy of `cm`'s data.
async fn apply(cm: &ConfigMap, ctx: &Context) -> Result<Action, Error> {
    let name = cm.name_any();
    let dependent_name = dependent_name(cm);
    let dependent = ConfigMap {
        metadata: ObjectMeta {
            name: Some(dependent_name.clone()),
            annotations: Some([(DEPENDENT_OF.to_string(), name.clone())].into()),
            ..ObjectMeta::default()
        },
        data: cm.data.clone(),
        ..ConfigMap::default()
    };
    let dependent = ctx
        .config_maps
        .patch(
            &dependent_name,
            &PatchParams::apply(MANAGER).force(),
            &Patch::Apply(&dependent),
        )
        .await?;
    let event = Event {
        type_: EventType::Normal,
        reason: "DependentApplied".into(),
        note: Some(format!("applied ConfigMap {dependent_name}")),
        action: "Apply".into(),
        secondary: Some(dependent.object_ref(&())),
    };
    ctx.recorder.publish(&event, &cm.object_ref(&())).await?;
    println!("finalizer-controller: applied {dependent_name} for {name}");
    Ok(Action::requeue(Duration::from_secs(300)))
}

/// Deletes the dependent ConfigMap of `cm`, which is being deleted.
async fn cleanup(cm: &ConfigMap, ctx: &Context) -> Result<Action, Error> {
    let name = cm.name_any();
    let dependent_name = dependent_name(cm);
    match ctx
        .config_maps
        .delete(&dependent_name, &DeleteParams::default())
        .await
    {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.is_not_found() => {}
        Err(e) => return Err(e.into()),
    }
    let event = Event {
        type_: EventType::Normal,
        reason: "DependentDeleted".into(),
        note: Some(format!("deleted ConfigMap {dependent_name}")),
        action: "Cleanup".into(),
        secondary: None,
    };
    ctx.recorder.publish(&event, &cm.object_ref(&())).await?;
    println!("finalizer-controller: deleted {dependent_name} for {name}, releasing it");
    Ok(Action::await_change())
}

/// Retries a failed reconciliation shortly.
fn error_policy(cm: Arc<ConfigMap>, error: &finalizer::Error<Error>, _ctx: Arc<Context>) -> Action {
    println!(
        "finalizer-controller: reconciling {} failed: {error}; retrying in 5s",
        cm.name_any()
    );
    Action::requeue(Duration::from_secs(5))
}
