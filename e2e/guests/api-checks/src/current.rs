//! The `current` mode: what only a current API server (1.33 and later) does, used as a kube-rs
//! 5.0 program uses it — CEL validation rules of a CRD derived with `KubeSchema` (a violation
//! is a `422 Invalid`, `kube::Error::Api`), server-side apply conflicts between field managers
//! (`409 Conflict`) and forced applies, the `pods/resize` subresource, and streaming lists
//! (`WatchParams::streaming_lists`, `watcher::Config::streaming_lists`). The `crd`
//! mode prints the CRD (the test installs it). One line per observation, nothing run-specific.

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{
    Api, DeleteParams, ObjectMeta, Patch, PatchParams, PostParams, ResourceExt, WatchEvent,
    WatchParams,
};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, CustomResource, CustomResourceExt, KubeSchema};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// A budget whose use may not exceed its limit, and whose owner never changes: two CEL rules,
/// checked by the API server on create and update.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug)]
#[kube(
    group = "api-checks.kube-wasm.example.com",
    version = "v1",
    kind = "Budget",
    namespaced
)]
#[x_kube(validation = Rule::new("self.used <= self.limit").message("used may not exceed limit"))]
pub struct BudgetSpec {
    #[x_kube(validation = Rule::new("self == oldSelf").message("owner is immutable"))]
    owner: String,
    limit: i32,
    used: i32,
}

/// Prints the CRD of [`Budget`] as JSON.
pub fn print_crd() -> anyhow::Result<()> {
    println!("{}", serde_json::to_string(&Budget::crd())?);
    Ok(())
}

/// An API error as `code reason message`, the way a program reports `kube::Error::Api`.
fn api_error<T: std::fmt::Debug>(result: kube::Result<T>) -> String {
    match result {
        Err(kube::Error::Api(status)) => {
            format!("{} {} {}", status.code, status.reason, status.message)
        }
        Err(other) => format!("another error: {other}"),
        Ok(value) => format!("no error: {value:?}"),
    }
}

pub async fn checks(client: Client, ns: &str) -> anyhow::Result<()> {
    cel_rules(&client, ns).await?;
    apply_conflicts(&client, ns).await?;
    resize(&client, ns).await?;
    streaming_lists(&client, ns).await?;
    Ok(())
}

async fn cel_rules(client: &Client, ns: &str) -> anyhow::Result<()> {
    let budgets: Api<Budget> = Api::namespaced(client.clone(), ns);
    let budget = |used| {
        Budget::new(
            "team",
            BudgetSpec {
                owner: "alice".into(),
                limit: 10,
                used,
            },
        )
    };
    let over = budgets.create(&PostParams::default(), &budget(11)).await;
    println!("cel create over the limit: {}", api_error(over));
    let created = budgets.create(&PostParams::default(), &budget(3)).await?;
    println!(
        "cel create within the limit: {} used={}",
        created.name_any(),
        created.spec.used
    );
    let new_owner = Patch::Merge(json!({"spec": {"owner": "bob"}}));
    let changed = budgets
        .patch("team", &PatchParams::default(), &new_owner)
        .await;
    println!("cel transition rule: {}", api_error(changed));
    let more = Patch::Merge(json!({"spec": {"used": 10}}));
    let patched = budgets
        .patch("team", &PatchParams::default(), &more)
        .await?;
    println!("cel update within the limit: used={}", patched.spec.used);
    budgets.delete("team", &DeleteParams::default()).await?;
    Ok(())
}

/// Field managers' names and operations on `cm`, in order.
fn managers(cm: &ConfigMap) -> Vec<String> {
    cm.managed_fields()
        .iter()
        .map(|entry| {
            format!(
                "{}:{}",
                entry.manager.as_deref().unwrap_or("-"),
                entry.operation.as_deref().unwrap_or("-")
            )
        })
        .collect()
}

async fn apply_conflicts(client: &Client, ns: &str) -> anyhow::Result<()> {
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    let applied = |value: &str| {
        Patch::Apply(json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "applied"},
            "data": {"owner": value},
        }))
    };
    let first = cms
        .patch("applied", &PatchParams::apply("first"), &applied("first"))
        .await?;
    println!(
        "apply first: data={:?} managers={:?}",
        first.data,
        managers(&first)
    );
    let conflict = cms
        .patch("applied", &PatchParams::apply("second"), &applied("second"))
        .await;
    println!("apply conflicting: {}", api_error(conflict));
    let forced = cms
        .patch(
            "applied",
            &PatchParams::apply("second").force(),
            &applied("second"),
        )
        .await?;
    println!(
        "apply forced: data={:?} managers={:?}",
        forced.data,
        managers(&forced)
    );
    let dry = cms
        .patch(
            "applied",
            &PatchParams::apply("first").dry_run(),
            &applied("first"),
        )
        .await;
    println!("apply dry run conflicting: {}", api_error(dry));
    cms.delete("applied", &DeleteParams::default()).await?;
    Ok(())
}

/// The first container's requests and limits of `pod`, as `cpu/memory`.
fn resources(pod: &Pod) -> String {
    let container = pod.spec.as_ref().and_then(|spec| spec.containers.first());
    let resources = container.and_then(|c| c.resources.as_ref());
    let get = |which: Option<&std::collections::BTreeMap<String, _>>, name: &str| {
        which.and_then(|map| map.get(name)).map_or(
            "-".to_owned(),
            |q: &k8s_openapi::apimachinery::pkg::api::resource::Quantity| q.0.clone(),
        )
    };
    let requests = resources.and_then(|r| r.requests.as_ref());
    let limits = resources.and_then(|r| r.limits.as_ref());
    format!(
        "requests={}/{} limits={}/{}",
        get(requests, "cpu"),
        get(requests, "memory"),
        get(limits, "cpu"),
        get(limits, "memory")
    )
}

async fn resize(client: &Client, ns: &str) -> anyhow::Result<()> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "resized"},
        "spec": {"containers": [{
            "name": "app",
            "image": "registry.invalid/app:1",
            "resources": {
                "requests": {"cpu": "100m", "memory": "64Mi"},
                "limits": {"cpu": "200m", "memory": "128Mi"},
            },
        }]},
    }))?;
    let created = pods.create(&PostParams::default(), &pod).await?;
    println!("resize created: {}", resources(&created));
    let more_cpu = Patch::Strategic(json!({"spec": {"containers": [{
        "name": "app",
        "resources": {"requests": {"cpu": "150m"}, "limits": {"cpu": "300m"}},
    }]}}));
    let resized = pods
        .patch_resize("resized", &PatchParams::default(), &more_cpu)
        .await?;
    println!("resize patched: {}", resources(&resized));
    let read = pods.get_resize("resized").await?;
    println!("resize read: {}", resources(&read));
    let guaranteed = Patch::Strategic(json!({"spec": {"containers": [{
        "name": "app",
        "resources": {"requests": {"cpu": "300m", "memory": "128Mi"}},
    }]}}));
    let refused = pods
        .patch_resize("resized", &PatchParams::default(), &guaranteed)
        .await;
    println!(
        "resize changing the QoS class: {}",
        api_error(refused.map(|p| resources(&p)))
    );
    let new_image = Patch::Strategic(json!({"spec": {"containers": [{
        "name": "app", "image": "registry.invalid/app:2",
    }]}}));
    let ignored = pods
        .patch_resize("resized", &PatchParams::default(), &new_image)
        .await?;
    let image = ignored
        .spec
        .as_ref()
        .and_then(|spec| spec.containers.first())
        .and_then(|c| c.image.clone());
    println!("resize of the image: {image:?} {}", resources(&ignored));
    pods.delete("resized", &DeleteParams::default().grace_period(0))
        .await?;
    Ok(())
}

async fn streaming_lists(client: &Client, ns: &str) -> anyhow::Result<()> {
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    let mut created_at = String::new();
    for name in ["stream-a", "stream-b"] {
        let cm = ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                labels: Some([("api-checks".to_owned(), "stream".to_owned())].into()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        };
        created_at = cms
            .create(&PostParams::default(), &cm)
            .await?
            .resource_version()
            .unwrap_or_default();
    }

    // `Api::watch` with `WatchParams::streaming_lists`: the objects, then the bookmark that
    // ends them. From the last create's resourceVersion (NotOlderThan): from "0" the server
    // may answer from a watch cache that does not have the second object yet (a native run
    // once saw only stream-a).
    // A server whose WatchList feature gate is off (1.33's default) refuses it with a 422.
    let wp = WatchParams::streaming_lists().labels("api-checks=stream");
    let mut events = match cms.watch(&wp, &created_at).await {
        Ok(events) => events.boxed(),
        Err(kube::Error::Api(status)) => {
            println!(
                "streaming watch: refused {} {}: {}",
                status.code, status.reason, status.message
            );
            return Ok(());
        }
        Err(err) => return Err(err.into()),
    };
    let mut added = Vec::new();
    while let Some(event) = events.try_next().await? {
        match event {
            WatchEvent::Added(cm) => added.push(cm.name_any()),
            WatchEvent::Bookmark(bookmark) => {
                added.sort();
                let annotations: Vec<_> = bookmark.metadata.annotations.into_iter().collect();
                println!("streaming watch: added {added:?}, then a bookmark {annotations:?}");
                break;
            }
            other => println!("streaming watch: unexpected {other:?}"),
        }
    }
    drop(events);

    // `watcher` with `Config::streaming_lists`: Init, the objects, InitDone, then changes.
    let config = watcher::Config::default()
        .labels("api-checks=stream")
        .streaming_lists();
    let mut stream = watcher(cms.clone(), config).boxed();
    let mut initial = Vec::new();
    loop {
        match stream.try_next().await? {
            Some(watcher::Event::Init) => {}
            Some(watcher::Event::InitApply(cm)) => initial.push(cm.name_any()),
            Some(watcher::Event::InitDone) => break,
            other => println!("streaming watcher: unexpected {other:?}"),
        }
    }
    initial.sort();
    println!("streaming watcher: initial {initial:?}");
    cms.patch(
        "stream-a",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"changed": "yes"}})),
    )
    .await?;
    loop {
        match stream.try_next().await? {
            Some(watcher::Event::Apply(cm)) if cm.name_any() == "stream-a" => {
                println!(
                    "streaming watcher: then {} data={:?}",
                    cm.name_any(),
                    cm.data
                );
                break;
            }
            Some(_) => {}
            None => anyhow::bail!("the streaming watcher ended"),
        }
    }
    Ok(())
}

/// The `stream-forever` mode: a `watcher` with streaming lists on the ConfigMaps labelled
/// `api-checks=forever`, printing each event (`stream-forever: Added <name>` for the initial
/// objects, `synced` at their end, then `Applied`/`Deleted`; `error <err>` when the server
/// refuses, retried with kube's default backoff), ignoring stop requests so the host has to
/// end it.
pub async fn stream_forever(client: Client, ns: &str) -> anyhow::Result<()> {
    let cms: Api<ConfigMap> = Api::namespaced(client, ns);
    let config = watcher::Config::default()
        .labels("api-checks=forever")
        .streaming_lists();
    let mut stream = watcher(cms, config).default_backoff().boxed();
    println!("stream-forever: watching");
    while let Some(event) = stream.next().await {
        match event {
            Ok(watcher::Event::Init) => {}
            Ok(watcher::Event::InitApply(cm)) => {
                println!("stream-forever: Added {}", cm.name_any())
            }
            Ok(watcher::Event::InitDone) => println!("stream-forever: synced"),
            Ok(watcher::Event::Apply(cm)) => println!("stream-forever: Applied {}", cm.name_any()),
            Ok(watcher::Event::Delete(cm)) => println!("stream-forever: Deleted {}", cm.name_any()),
            Err(err) => println!("stream-forever: error {err}"),
        }
    }
    std::future::pending::<()>().await;
    Ok(())
}
