//! Exercises `Api<K>` the way a kube-rs program does and prints one line per observation.
//! The output is deterministic (no uids, timestamps or resourceVersions), so the end-to-end
//! suite can compare a native run (real kube + tokio) with a run in the host shim.
//!
//! Mode from the first argument or `API_CHECKS_MODE`: `checks` (default) runs the checks
//! against namespace `API_CHECKS_NAMESPACE` (default: the client's) and exits; `watch-forever`
//! watches ConfigMaps and ignores stop requests, so the host has to end it; `discovery`
//! checks discovery of the built-in groups and of the CRD named by `API_CHECKS_CRD_GROUP`
//! and `API_CHECKS_CRD_KIND` (created by the test, version `v1`, namespaced, with a status
//! subresource), `Api<DynamicObject>` on it, and `Client::request_stream` on a long list;
//! `current` exercises what only a current API server does (CEL rules, server-side apply
//! conflicts, `pods/resize`, streaming lists; see `current.rs`), and `crd` prints the
//! CRD it needs.

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::api::events::v1::Event as EventV1;
use kube::Client;
use kube::Resource;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, ListParams, ObjectMeta, Patch, PatchParams,
    PostParams, ResourceExt, WatchEvent, WatchParams,
};
use kube::runtime::controller::Action;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::wait::{await_condition, conditions};
use kube::runtime::{Controller, WatchStreamExt, finalizer, reflector, watcher};
use std::sync::Arc;
use std::time::Duration;

mod current;
mod discovery;
mod scoped;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mode = std::env::args()
        .nth(1)
        .or_else(|| std::env::var("API_CHECKS_MODE").ok())
        .unwrap_or_else(|| "checks".into());
    if mode == "crd" {
        return current::print_crd();
    }
    let client = Client::try_default().await?;
    let namespace = std::env::var("API_CHECKS_NAMESPACE")
        .unwrap_or_else(|_| client.default_namespace().to_string());
    match mode.as_str() {
        "checks" => checks(client, &namespace).await,
        "watch-forever" => watch_forever(client, &namespace).await,
        "discovery" => discovery::checks(client, &namespace).await,
        "current" => current::checks(client, &namespace).await,
        "stream-forever" => current::stream_forever(client, &namespace).await,
        other => anyhow::bail!("unknown mode {other:?}"),
    }
}

/// `Client::send`: raw requests whose every answer, 404 included, is a response (status,
/// content type and body as the server sent them).
async fn raw_send(client: &Client, ns: &str) -> anyhow::Result<()> {
    use kube::client::Body;
    let url = format!("/api/v1/namespaces/{ns}/configmaps");
    let show = |what: &str, response: &http::Response<Body>| {
        let content_type = response
            .headers()
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("-");
        format!("send {what}: {} {content_type}", response.status())
    };

    let missing = http::Request::get(format!("{url}/does-not-exist")).body(Body::empty())?;
    let response = client.send(missing).await?;
    let line = show("missing", &response);
    let status: kube::core::Status =
        serde_json::from_slice(&response.into_body().collect_bytes().await?)?;
    println!("{line} reason={} code={}", status.reason, status.code);

    let create = http::Request::post(&url)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Body::from(
            br#"{"metadata":{"name":"raw-send"},"data":{"via":"send"}}"#.to_vec(),
        ))?;
    let response = client.send(create).await?;
    let line = show("create", &response);
    let created: ConfigMap = serde_json::from_slice(&response.into_body().collect_bytes().await?)?;
    println!("{line} {} {:?}", created.name_any(), created.data);

    let delete = http::Request::delete(format!("{url}/raw-send")).body(Body::empty())?;
    let response = client.send(delete).await?;
    println!("{}", show("delete", &response));
    Ok(())
}

async fn checks(client: Client, ns: &str) -> anyhow::Result<()> {
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);

    // A missing object is a 404 Status.
    match pods.get("does-not-exist").await {
        Err(kube::Error::Api(s)) if s.is_not_found() => println!("get missing pod: not found"),
        other => anyhow::bail!("get missing pod: expected not found, got {other:?}"),
    }
    println!(
        "get_opt missing: {:?}",
        cms.get_opt("does-not-exist").await?.map(|c| c.name_any())
    );

    raw_send(&client, ns).await?;
    scoped::checks(&client, ns).await?;

    // Discovery of the built-in groups.
    let discovery = kube::Discovery::new(client.clone()).run().await?;
    let groups: Vec<String> = discovery
        .groups_alphabetical()
        .into_iter()
        .map(|g| g.name().to_string())
        .collect();
    println!("discovery groups: {}", groups.join(","));
    let (pod_resource, pod_caps) = discovery
        .resolve_gvk(&kube::core::GroupVersionKind::gvk("", "v1", "Pod"))
        .ok_or_else(|| anyhow::anyhow!("discovery: no Pod"))?;
    println!(
        "discovery pods: {} {:?} list={}",
        pod_resource.plural,
        pod_caps.scope,
        pod_caps.supports_operation(kube::discovery::verbs::LIST)
    );

    // A watch the server refuses fails when it starts, not in its stream.
    let nothing = ApiResource {
        group: "kube-wasm.invalid".into(),
        version: "v1".into(),
        api_version: "kube-wasm.invalid/v1".into(),
        kind: "Nothing".into(),
        plural: "nothings".into(),
    };
    let missing: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &nothing);
    match missing.watch(&WatchParams::default(), "0").await {
        Err(kube::Error::Api(s)) => println!("watch missing resource: {} {}", s.code, s.reason),
        Err(other) => anyhow::bail!("watch missing resource: expected an API error, got {other:?}"),
        Ok(_) => anyhow::bail!("watch missing resource: expected an error, got a stream"),
    }

    // A watch started before the changes sees them in order.
    let list = cms
        .list(&ListParams::default().labels("api-checks=watched"))
        .await?;
    let version = list.metadata.resource_version.clone().unwrap_or_default();
    let wp = WatchParams::default()
        .labels("api-checks=watched")
        .timeout(30);
    let mut events = cms.watch(&wp, &version).await?.boxed();
    let watcher = tokio::spawn(async move {
        let mut seen = Vec::new();
        while let Some(event) = events.try_next().await? {
            match event {
                WatchEvent::Added(cm) => seen.push(format!("ADDED {}", cm.name_any())),
                WatchEvent::Modified(cm) => seen.push(format!(
                    "MODIFIED {} {:?}",
                    cm.name_any(),
                    cm.data.unwrap_or_default()
                )),
                WatchEvent::Deleted(cm) => {
                    seen.push(format!("DELETED {}", cm.name_any()));
                    break;
                }
                WatchEvent::Bookmark(_) => {}
                WatchEvent::Error(e) => anyhow::bail!("watch error {e:?}"),
            }
        }
        Ok(seen)
    });

    // create, then one round trip per patch type.
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some("api-checks".into()),
            labels: Some([("api-checks".to_string(), "watched".to_string())].into()),
            ..ObjectMeta::default()
        },
        data: Some([("step".to_string(), "created".to_string())].into()),
        ..ConfigMap::default()
    };
    let created = cms.create(&PostParams::default(), &cm).await?;
    println!("create: {} data={:?}", created.name_any(), created.data);
    match cms.create(&PostParams::default(), &cm).await {
        Err(kube::Error::Api(s)) if s.is_already_exists() => {
            println!("create again: already exists")
        }
        other => anyhow::bail!("create again: expected 409, got {other:?}"),
    }

    let pp = PatchParams::default();
    let merge = serde_json::json!({"data": {"step": "merge", "merge": "yes"}});
    let after = cms.patch("api-checks", &pp, &Patch::Merge(&merge)).await?;
    println!("patch merge: {:?}", after.data);

    let json: json_patch::Patch = serde_json::from_value(serde_json::json!([
        {"op": "replace", "path": "/data/step", "value": "json"},
        {"op": "remove", "path": "/data/merge"}
    ]))?;
    let after = cms
        .patch("api-checks", &pp, &Patch::Json::<()>(json))
        .await?;
    println!("patch json: {:?}", after.data);

    let strategic = serde_json::json!({"metadata": {"annotations": {"api-checks/strategic": "yes"}}, "data": {"step": "strategic"}});
    let after = cms
        .patch("api-checks", &pp, &Patch::Strategic(&strategic))
        .await?;
    println!(
        "patch strategic: {:?} annotations={:?}",
        after.data,
        after.annotations()
    );

    let apply = serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "api-checks"},
        "data": {"step": "apply", "applied": "true"}
    });
    let after = cms
        .patch(
            "api-checks",
            &PatchParams::apply("api-checks").force(),
            &Patch::Apply(&apply),
        )
        .await?;
    println!("patch apply: {:?}", after.data);
    let managers: Vec<_> = after
        .managed_fields()
        .iter()
        .filter_map(|m| m.manager.clone())
        .collect();
    println!(
        "apply manager recorded: {}",
        managers.iter().any(|m| m == "api-checks")
    );

    // replace with a stale resourceVersion is a conflict.
    let mut stale = created.clone();
    stale.data = Some([("step".to_string(), "stale".to_string())].into());
    match cms
        .replace("api-checks", &PostParams::default(), &stale)
        .await
    {
        Err(kube::Error::Api(s)) if s.is_conflict() => println!("replace stale: conflict"),
        other => anyhow::bail!("replace stale: expected 409, got {other:?}"),
    }

    let listed = cms
        .list(&ListParams::default().labels("api-checks=watched"))
        .await?;
    println!(
        "list: {:?}",
        listed
            .items
            .iter()
            .map(|c| c.name_any())
            .collect::<Vec<_>>()
    );

    cms.delete("api-checks", &DeleteParams::default()).await?;
    println!("delete: ok");

    let seen = tokio::time::timeout(Duration::from_secs(20), watcher).await???;
    for line in seen {
        println!("watch: {line}");
    }

    reflector_checks(cms.clone()).await?;
    finalizer_and_event_checks(client, cms.clone()).await?;
    controller_checks(cms).await
}

/// kube::runtime::Controller: reconciles each labelled ConfigMap (marking it with an
/// annotation), then shuts down gracefully.
async fn controller_checks(cms: Api<ConfigMap>) -> anyhow::Result<()> {
    let selector = "api-checks=controlled";
    for name in ["controlled-a", "controlled-b"] {
        let cm = ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                labels: Some([("api-checks".to_string(), "controlled".to_string())].into()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        };
        cms.create(&PostParams::default(), &cm).await?;
    }
    async fn reconcile(
        cm: Arc<ConfigMap>,
        api: Arc<Api<ConfigMap>>,
    ) -> Result<Action, kube::Error> {
        if !cm.annotations().contains_key("api-checks/reconciled") {
            let patch =
                serde_json::json!({"metadata": {"annotations": {"api-checks/reconciled": "yes"}}});
            api.patch(
                &cm.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await?;
        }
        Ok(Action::await_change())
    }
    fn error_policy(_: Arc<ConfigMap>, _: &kube::Error, _: Arc<Api<ConfigMap>>) -> Action {
        Action::requeue(Duration::from_secs(1))
    }
    let (stop, stopped) = futures::channel::oneshot::channel::<()>();
    let controller = Controller::new(cms.clone(), watcher::Config::default().labels(selector))
        .graceful_shutdown_on(async move {
            let _ = stopped.await;
        })
        .run(reconcile, error_policy, Arc::new(cms.clone()));
    let runner = tokio::spawn(async move {
        let mut reconciled = std::collections::BTreeSet::new();
        futures::pin_mut!(controller);
        while let Some(result) = controller.next().await {
            if let Ok((obj, _)) = result {
                reconciled.insert(obj.name);
            }
        }
        reconciled
    });
    let annotated = async {
        loop {
            let listed = cms.list(&ListParams::default().labels(selector)).await?;
            if listed
                .items
                .iter()
                .all(|c| c.annotations().contains_key("api-checks/reconciled"))
            {
                return Ok::<_, kube::Error>(());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(20), annotated).await??;
    let _ = stop.send(());
    let reconciled = tokio::time::timeout(Duration::from_secs(20), runner).await??;
    println!("controller reconciled: {reconciled:?}");
    Ok(())
}

/// kube::runtime: finalizer(), events::Recorder and wait::await_condition on a ConfigMap.
async fn finalizer_and_event_checks(client: Client, cms: Api<ConfigMap>) -> anyhow::Result<()> {
    const FINALIZER: &str = "api-checks.kube-wasm.dev/cleanup";
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some("finalized".into()),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    };
    cms.create(&PostParams::default(), &cm).await?;
    let reconcile = |event: finalizer::Event<ConfigMap>| async move {
        match event {
            finalizer::Event::Apply(cm) => println!("finalizer apply: {}", cm.name_any()),
            finalizer::Event::Cleanup(cm) => println!("finalizer cleanup: {}", cm.name_any()),
        }
        Ok::<_, kube::Error>(Action::requeue(Duration::from_secs(300)))
    };
    // First pass adds the finalizer; the second reconciles the object that carries it.
    for pass in 1..=2 {
        let current = Arc::new(cms.get("finalized").await?);
        let action = finalizer(&cms, FINALIZER, current, reconcile).await?;
        println!("finalizer pass {pass}: {action:?}");
    }
    println!("finalizers: {:?}", cms.get("finalized").await?.finalizers());

    let recorder = Recorder::new(
        client.clone(),
        Reporter {
            controller: "api-checks".into(),
            instance: Some("api-checks".into()),
        },
    );
    let reference = cms.get("finalized").await?.object_ref(&());
    let event = Event {
        type_: EventType::Normal,
        reason: "Checked".into(),
        note: Some("api-checks ran".into()),
        action: "Check".into(),
        secondary: None,
    };
    recorder.publish(&event, &reference).await?;
    recorder.publish(&event, &reference).await?;
    let events: Api<EventV1> = Api::namespaced(client, cms.namespace().unwrap_or("default"));
    for e in events.list(&ListParams::default()).await? {
        println!(
            "event: {} {} {} {:?} regarding={:?} by {:?}/{:?} series={:?}",
            e.type_.unwrap_or_default(),
            e.reason.unwrap_or_default(),
            e.action.unwrap_or_default(),
            e.note,
            e.regarding.and_then(|r| r.name),
            e.reporting_controller,
            e.reporting_instance,
            e.series.map(|s| s.count),
        );
    }

    // Deleting waits for the finalizer: cleanup removes it and the object goes.
    let uid = cms.get("finalized").await?.uid().unwrap_or_default();
    cms.delete("finalized", &DeleteParams::default()).await?;
    let deleting = Arc::new(cms.get("finalized").await?);
    println!(
        "deleting holds: {}",
        deleting.metadata.deletion_timestamp.is_some()
    );
    let action = finalizer(&cms, FINALIZER, deleting, reconcile).await?;
    println!("finalizer cleanup pass: {action:?}");
    let gone = await_condition(cms.clone(), "finalized", conditions::is_deleted(&uid));
    tokio::time::timeout(Duration::from_secs(20), gone).await??;
    println!("finalized object deleted");
    Ok(())
}

/// kube::runtime: a reflector fed by a watcher, read from another task.
async fn reflector_checks(cms: Api<ConfigMap>) -> anyhow::Result<()> {
    let selector = "api-checks=reflected";
    let (reader, writer) = reflector::store::<ConfigMap>();
    let stream = watcher(cms.clone(), watcher::Config::default().labels(selector))
        .default_backoff()
        .reflect(writer)
        .applied_objects();
    let driver = tokio::spawn(async move {
        futures::pin_mut!(stream);
        while stream.try_next().await?.is_some() {}
        Ok::<_, watcher::Error>(())
    });
    tokio::time::timeout(Duration::from_secs(20), reader.wait_until_ready()).await??;
    println!("reflector ready: {} objects", reader.len());
    for name in ["reflected-a", "reflected-b"] {
        let cm = ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                labels: Some([("api-checks".to_string(), "reflected".to_string())].into()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        };
        cms.create(&PostParams::default(), &cm).await?;
    }
    let reader2 = reader.clone();
    let seen_both = tokio::spawn(async move {
        while reader2.len() < 2 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    tokio::time::timeout(Duration::from_secs(20), seen_both).await??;
    let mut names: Vec<String> = reader.state().iter().map(|c| c.name_any()).collect();
    names.sort();
    println!("reflector store: {names:?}");
    driver.abort();
    Ok(())
}

async fn watch_forever(client: Client, ns: &str) -> anyhow::Result<()> {
    let cms: Api<ConfigMap> = Api::namespaced(client, ns);
    let wp = WatchParams::default()
        .labels("api-checks=forever")
        .timeout(280);
    let mut events = cms.watch(&wp, "0").await?.boxed();
    println!("watch-forever: watching");
    while let Some(event) = events.try_next().await? {
        match event {
            WatchEvent::Added(cm) => println!("watch-forever: Added {}", cm.name_any()),
            WatchEvent::Modified(cm) => println!("watch-forever: Modified {}", cm.name_any()),
            WatchEvent::Deleted(cm) => println!("watch-forever: Deleted {}", cm.name_any()),
            other => println!("watch-forever: {other:?}"),
        }
    }
    // Keep going even after a server-side close: only the host can end this module.
    std::future::pending::<()>().await;
    Ok(())
}
