//! watcher, reflector, `WatchStreamExt`, predicates, Controller, finalizer, events and wait,
//! as kube-runtime 5.0 code.

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret};
use kube::api::{Api, DeleteParams, ObjectMeta, ResourceExt};
use kube::runtime::controller::{Action, Config as ControllerConfig, Controller};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::finalizer::{Event as Finalizer, finalizer};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::utils::{Backoff, Predicate, ResetTimerBackoff};
use kube::runtime::wait::{await_condition, conditions};
use kube::runtime::watcher::{self, Config, watcher};
use kube::runtime::{WatchStreamExt, predicates, reflector as reflector_fn};
use kube::{Client, Resource};
use std::sync::Arc;
use std::time::Duration;

fn assert_send<T: Send>(_: &T) {}

#[derive(Debug, thiserror::Error)]
enum Error {
    #[error(transparent)]
    Kube(#[from] kube::Error),
    #[error(transparent)]
    Finalizer(#[from] Box<kube::runtime::finalizer::Error<kube::Error>>),
}

struct Ctx {
    client: Client,
    recorder: Recorder,
}

async fn reconcile(cm: Arc<ConfigMap>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let api: Api<ConfigMap> = Api::default_namespaced(ctx.client.clone());
    let reference = cm.object_ref(&());
    ctx.recorder
        .publish(
            &Event {
                type_: EventType::Normal,
                reason: "Reconciled".into(),
                note: Some(cm.name_any()),
                action: "Reconcile".into(),
                secondary: None,
            },
            &reference,
        )
        .await?;
    finalizer(&api, "surface/cleanup", cm, |event| async move {
        match event {
            Finalizer::Apply(_) => Ok::<_, kube::Error>(Action::requeue(Duration::from_secs(60))),
            Finalizer::Cleanup(_) => Ok(Action::await_change()),
        }
    })
    .await
    .map_err(|e| Error::Finalizer(Box::new(e)))
}

fn error_policy(_: Arc<ConfigMap>, _: &Error, _: Arc<Ctx>) -> Action {
    Action::requeue(Duration::from_secs(5))
}

/// A custom watcher backoff: 1 s, doubling to at most 64 s; `reset` starts over.
#[derive(Default)]
struct Doubling {
    next: Duration,
}

impl Iterator for Doubling {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        self.next = (self.next * 2).clamp(Duration::from_secs(1), Duration::from_secs(64));
        Some(self.next)
    }
}

impl Backoff for Doubling {
    fn reset(&mut self) {
        self.next = Duration::ZERO;
    }
}

async fn streams(client: Client) -> anyhow::Result<()> {
    let api: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let config = Config::default()
        .labels("app=x")
        .fields("metadata.name=a")
        .timeout(30)
        .any_semantic()
        .page_size(50)
        .streaming_lists();
    let stream = watcher(api.clone(), config.clone());
    assert_send(&stream);
    let mut applied = stream
        .default_backoff()
        .modify(|cm| {
            cm.managed_fields_mut().clear();
        })
        .applied_objects()
        .predicate_filter(
            predicates::generation.combine(predicates::labels),
            Default::default(),
        )
        .boxed();
    while let Some(cm) = applied.try_next().await? {
        let _ = cm.name_any();
    }
    let mut touched = watcher(api.clone(), Config::default())
        .backoff(ResetTimerBackoff::new(
            Doubling::default(),
            Duration::from_secs(120),
        ))
        .touched_objects()
        .boxed();
    let _ = touched.try_next().await?;
    let mut events = watcher::watch_object(api.clone(), "a").boxed();
    let _: Option<Option<ConfigMap>> = events.try_next().await?;
    let mut raw = watcher(api.clone(), Config::default()).boxed();
    while let Some(event) = raw.try_next().await? {
        match event {
            watcher::Event::Apply(o) | watcher::Event::Delete(o) | watcher::Event::InitApply(o) => {
                let _ = o.name_any();
            }
            watcher::Event::Init | watcher::Event::InitDone => {}
        }
    }
    let metadata: Api<kube::core::PartialObjectMeta<ConfigMap>> =
        Api::default_namespaced(client.clone());
    let _ = watcher(metadata, Config::default()).boxed();

    let (reader, writer) = reflector::store::<ConfigMap>();
    let reflected = watcher(api.clone(), Config::default())
        .reflect(writer)
        .applied_objects();
    assert_send(&reflected);
    let (reader2, writer2) = reflector::store();
    let _ = reflector_fn(writer2, watcher(api.clone(), Config::default())).boxed();
    let _: &Store<ConfigMap> = &reader2;
    reader.wait_until_ready().await?;
    let _: Vec<Arc<ConfigMap>> = reader.state();
    let _: Option<Arc<ConfigMap>> = reader.get(&ObjectRef::new("a").within("ns"));
    let _ = reader.find(|cm| cm.name_any() == "a");
    let _ = reader.len() + usize::from(reader.is_empty());

    let (shared_reader, shared_writer) = reflector::store_shared::<ConfigMap>(16);
    let subscriber = shared_writer.subscribe().expect("shared store");
    let _ = watcher(api.clone(), Config::default())
        .reflect_shared(shared_writer)
        .boxed();
    let _ = (shared_reader, subscriber);

    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let running = await_condition(pods.clone(), "p", conditions::is_pod_running());
    let _ = tokio::time::timeout(Duration::from_secs(10), running).await?;
    let _ = await_condition(pods.clone(), "p", conditions::is_deleted("uid")).await?;
    let _ =
        kube::runtime::wait::delete::delete_and_finalize(pods, "p", &DeleteParams::default()).await;
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let client = Client::try_default().await?;
    streams(client.clone()).await?;
    let recorder = Recorder::new(
        client.clone(),
        Reporter {
            controller: "surface".into(),
            instance: None,
        },
    );
    let ctx = Arc::new(Ctx {
        client: client.clone(),
        recorder,
    });
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let secrets: Api<Secret> = Api::default_namespaced(client.clone());
    let controller = Controller::new(cms.clone(), Config::default().labels("app=x"));
    let _: Store<ConfigMap> = controller.store();
    controller
        .with_config(
            ControllerConfig::default()
                .concurrency(2)
                .debounce(Duration::from_secs(1)),
        )
        .owns(secrets.clone(), Config::default())
        .watches(secrets, Config::default(), |secret| {
            Some(ObjectRef::<ConfigMap>::new(&secret.name_any()).within("ns"))
        })
        .graceful_shutdown_on(async {})
        .shutdown_on_signal()
        .run(reconcile, error_policy, ctx)
        .for_each(|result| async move {
            match result {
                Ok((object, action)) => {
                    let _ = (object.name, action);
                }
                Err(kube::runtime::controller::Error::ReconcilerFailed(e, object)) => {
                    let _ = (e.to_string(), object);
                }
                Err(other) => {
                    let _ = other.to_string();
                }
            }
        })
        .await;
    let _ = ObjectMeta::default();
    Ok(())
}
