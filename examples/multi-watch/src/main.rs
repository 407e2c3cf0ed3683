//! Watches ConfigMaps, Secrets and ServiceAccounts labelled `kube-wasm.dev/watched=true` in
//! the client's default namespace as one stream, and records every object whose labels it
//! sees for the first time or changed since it last saw them.
//!
//! Each kind has its own `watcher`, filtered with `predicate_filter(predicates::labels, …)`
//! and mapped to the common [`Seen`] enum; `select_all` merges the three. A record is the
//! key `<Kind>.<name>` of the ConfigMap `multi-watch-log`, whose value is
//! `<times recorded> <labels>` (labels as sorted `key=value` pairs, comma-separated), and a
//! `multi-watch: saw …` line on stdout. So:
//!
//! - a new object is recorded once (`1 …`);
//! - an update that changes its labels is recorded again (the count goes up);
//! - an update of anything else (data, annotations) is not recorded;
//! - when the watch is relisted (e.g. after `410 Gone` once the apiserver restarted), the
//!   relist re-emits every existing object, but with the labels the filter already saw:
//!   nothing is recorded for them, only for objects created or relabelled meanwhile;
//! - deletions are not recorded (the log keeps what was seen).
//!
//! The counts live in this process: the log is rewritten whole (server-side apply) after
//! each record, retrying while the apiserver does not answer.

use futures::stream::{BoxStream, select_all};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Secret, ServiceAccount};
use k8s_openapi::serde::de::DeserializeOwned;
use kube::api::{Api, ObjectMeta, Patch, PatchParams};
use kube::core::NamespaceResourceScope;
use kube::runtime::{PredicateConfig, WatchStreamExt, predicates, watcher};
use kube::{Client, Resource};
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::time::Duration;

const SELECTOR: &str = "kube-wasm.dev/watched=true";
const LOG: &str = "multi-watch-log";
const MANAGER: &str = "multi-watch";

/// An object one of the watchers passed on, whatever its kind.
enum Seen {
    ConfigMap(ConfigMap),
    Secret(Secret),
    ServiceAccount(ServiceAccount),
}

impl Seen {
    fn kind(&self) -> &'static str {
        match self {
            Seen::ConfigMap(_) => "ConfigMap",
            Seen::Secret(_) => "Secret",
            Seen::ServiceAccount(_) => "ServiceAccount",
        }
    }

    fn meta(&self) -> &ObjectMeta {
        match self {
            Seen::ConfigMap(o) => o.meta(),
            Seen::Secret(o) => o.meta(),
            Seen::ServiceAccount(o) => o.meta(),
        }
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let client = Client::try_default().await?;
    println!(
        "multi-watch: watching ConfigMaps, Secrets and ServiceAccounts with {SELECTOR} in namespace {}",
        client.default_namespace()
    );
    tokio::select! {
        result = run(client) => result,
        _ = tokio::signal::ctrl_c() => {
            println!("multi-watch: stop requested, exiting");
            Ok(())
        }
    }
}

async fn run(client: Client) -> anyhow::Result<()> {
    let log_api: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let mut seen = select_all([
        watch_labels(&client, Seen::ConfigMap),
        watch_labels(&client, Seen::Secret),
        watch_labels(&client, Seen::ServiceAccount),
    ]);
    let mut log = BTreeMap::<String, String>::new();
    let mut counts = BTreeMap::<String, u32>::new();
    while let Some(item) = seen.next().await {
        let obj = match item {
            Ok(obj) => obj,
            Err(e) => {
                println!("multi-watch: watch error (retrying): {e}");
                continue;
            }
        };
        let name = obj.meta().name.clone().unwrap_or_default();
        let key = format!("{}.{name}", obj.kind());
        let count = counts.entry(key.clone()).or_default();
        *count += 1;
        let labels: Vec<String> = obj
            .meta()
            .labels
            .iter()
            .flatten()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let record = format!("{count} {}", labels.join(","));
        println!("multi-watch: saw {}/{name}: {record}", obj.kind());
        log.insert(key, record);
        write_log(&log_api, &log).await;
    }
    Ok(())
}

/// The objects of kind `K` whose labels changed since last seen (or are seen for the first
/// time), as [`Seen`]s.
fn watch_labels<K>(
    client: &Client,
    wrap: fn(K) -> Seen,
) -> BoxStream<'static, watcher::Result<Seen>>
where
    K: Resource<Scope = NamespaceResourceScope, DynamicType = ()>
        + Clone
        + DeserializeOwned
        + Debug
        + Send
        + 'static,
{
    let api: Api<K> = Api::default_namespaced(client.clone());
    watcher(api, watcher::Config::default().labels(SELECTOR))
        .default_backoff()
        .applied_objects()
        .predicate_filter(predicates::labels, PredicateConfig::default())
        .map_ok(wrap)
        .boxed()
}

/// Applies the whole log (creating it the first time), retrying every second until the
/// apiserver accepts it.
async fn write_log(api: &Api<ConfigMap>, log: &BTreeMap<String, String>) {
    let cm = serde_json::json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": { "name": LOG },
        "data": log,
    });
    let params = PatchParams::apply(MANAGER).force();
    loop {
        let result = tokio::time::timeout(
            Duration::from_secs(30),
            api.patch(LOG, &params, &Patch::Apply(&cm)),
        )
        .await;
        match result {
            Ok(Ok(_)) => return,
            Ok(Err(e)) => println!("multi-watch: could not write {LOG} (retrying): {e}"),
            Err(_) => println!("multi-watch: writing {LOG} timed out (retrying)"),
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}
