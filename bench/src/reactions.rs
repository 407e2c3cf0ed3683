//! How each of the five examples shows that it reconciled a change: the object the driver
//! creates in an instance's namespace (the **stimulus**) and what the controller writes in
//! answer (the **reaction**), seen by the driver's watches of ConfigMaps and Secrets across the
//! cluster. An instance's event→reconcile latency is from just before the stimulus's create
//! request to the driver's receipt of the reaction: the watch's delivery is in every variant's
//! figure alike.
//!
//! | kind | stimulus (cycle `c`) | reaction |
//! | --- | --- | --- |
//! | configmap-mirror | ConfigMap `e<c>` labelled `kube-wasm.dev/mirror=true` | Secret `e<c>` |
//! | configmap-generator | ConfigMapGenerator `e<c>` | ConfigMap `e<c>` |
//! | finalizer-controller | ConfigMap `e<c>` labelled `kube-wasm.example.com/with-dependent=true` | ConfigMap `e<c>-dependent` |
//! | store-reader | ConfigMap `e<c>` labelled `kube-wasm.dev/store=true` | `e<c>` in `names` of ConfigMap `store-summary` (written by a one-second ticker) |
//! | multi-watch | ConfigMap `e<c>` labelled `kube-wasm.dev/watched=true` | key `ConfigMap.e<c>` of ConfigMap `multi-watch-log` |

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use anyhow::{Context as _, bail};
use futures::StreamExt as _;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DynamicObject, PostParams};
use kube::runtime::{WatchStreamExt as _, watcher};
use kube::{Client, Resource, ResourceExt as _};
use kube_wasm_e2e::objects::{config_map, generator_resource, mirrored};
use tokio::sync::mpsc;

use crate::cluster::now_micros;

/// What a controller writes in answer to a stimulus.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reaction {
    /// Secret `name` exists.
    Secret(String),
    /// ConfigMap `name` exists.
    ConfigMap(String),
    /// ConfigMap `name` has the key `key`.
    Key {
        /// The ConfigMap.
        name: String,
        /// The key.
        key: String,
    },
    /// ConfigMap `name`'s value at `key`, a comma-separated list, holds `item`.
    Listed {
        /// The ConfigMap.
        name: String,
        /// The key.
        key: String,
        /// The item.
        item: String,
    },
}

/// An object as the driver's watch received it.
#[derive(Debug, Clone)]
pub struct Seen {
    /// `Secret` or `ConfigMap`.
    pub kind: &'static str,
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// Its data's keys and (ConfigMaps only) values.
    pub data: BTreeMap<String, String>,
    /// When the driver received it, in µs since the Unix epoch.
    pub at_micros: u64,
}

impl Reaction {
    /// Whether `seen` (in the instance's namespace) is this reaction.
    pub fn is(&self, seen: &Seen) -> bool {
        match self {
            Reaction::Secret(name) => seen.kind == "Secret" && &seen.name == name,
            Reaction::ConfigMap(name) => seen.kind == "ConfigMap" && &seen.name == name,
            Reaction::Key { name, key } => {
                seen.kind == "ConfigMap" && &seen.name == name && seen.data.contains_key(key)
            }
            Reaction::Listed { name, key, item } => {
                seen.kind == "ConfigMap"
                    && &seen.name == name
                    && seen
                        .data
                        .get(key)
                        .is_some_and(|list| list.split(',').any(|listed| listed == item))
            }
        }
    }
}

/// The name of cycle `cycle`'s stimulus.
fn stimulus_name(cycle: usize) -> String {
    format!("e{cycle}")
}

/// The reaction of an instance of `kind` to cycle `cycle`'s stimulus, or `None` for a kind
/// that is not one of the five examples.
pub fn reaction(kind: &str, cycle: usize) -> Option<Reaction> {
    let name = stimulus_name(cycle);
    Some(match kind {
        "configmap-mirror" => Reaction::Secret(name),
        "configmap-generator" => Reaction::ConfigMap(name),
        "finalizer-controller" => Reaction::ConfigMap(format!("{name}-dependent")),
        "store-reader" => Reaction::Listed {
            name: "store-summary".into(),
            key: "names".into(),
            item: name,
        },
        "multi-watch" => Reaction::Key {
            name: "multi-watch-log".into(),
            key: format!("ConfigMap.{name}"),
        },
        _ => return None,
    })
}

/// Creates cycle `cycle`'s stimulus for the instance of `kind` in `namespace` (the
/// ConfigMapGenerator CRD must be installed for configmap-generator); returns the reaction to
/// wait for.
///
/// # Errors
/// If `kind` is not one of the five examples or the apiserver refuses the object.
pub async fn stimulate(
    client: &Client,
    kind: &str,
    namespace: &str,
    cycle: usize,
) -> anyhow::Result<Reaction> {
    let name = stimulus_name(cycle);
    let reaction = reaction(kind, cycle).with_context(|| format!("{kind} has no stimulus"))?;
    let label = match kind {
        "configmap-mirror" => None,
        "configmap-generator" => {
            let api = Api::<DynamicObject>::namespaced_with(
                client.clone(),
                namespace,
                &generator_resource(),
            );
            let mut generator = DynamicObject::new(&name, &generator_resource());
            generator.data = serde_json::json!({"spec": {"content": name}});
            api.create(&PostParams::default(), &generator)
                .await
                .with_context(|| format!("creating ConfigMapGenerator {namespace}/{name}"))?;
            return Ok(reaction);
        }
        "finalizer-controller" => Some(("kube-wasm.example.com/with-dependent", "true")),
        "store-reader" => Some(("kube-wasm.dev/store", "true")),
        _ => Some(("kube-wasm.dev/watched", "true")),
    };
    let object = match label {
        None => mirrored(&name),
        Some(label) => config_map(&name, &[label], &[("n", &name)]),
    };
    Api::<ConfigMap>::namespaced(client.clone(), namespace)
        .create(&PostParams::default(), &object)
        .await
        .with_context(|| format!("creating ConfigMap {namespace}/{name}"))?;
    Ok(reaction)
}

/// Forwards every ConfigMap and Secret the cluster-wide watches of `client` see (its initial
/// list too) whose namespace starts with `prefix`, stamped on receipt. The watches resume
/// with kube-runtime's default backoff and end when the receiver is dropped.
pub fn watch(client: &Client, prefix: &str) -> mpsc::UnboundedReceiver<Seen> {
    let (tx, rx) = mpsc::unbounded_channel();
    forward::<ConfigMap>(client, "ConfigMap", prefix, tx.clone(), |cm| {
        cm.data.clone().unwrap_or_default()
    });
    forward::<Secret>(client, "Secret", prefix, tx, |secret| {
        secret
            .data
            .iter()
            .flatten()
            .map(|(key, _)| (key.clone(), String::new()))
            .collect()
    });
    rx
}

fn forward<K>(
    client: &Client,
    kind: &'static str,
    prefix: &str,
    tx: mpsc::UnboundedSender<Seen>,
    data: fn(&K) -> BTreeMap<String, String>,
) where
    K: Resource<DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + Send
        + 'static,
{
    let api = Api::<K>::all(client.clone());
    let prefix = prefix.to_owned();
    tokio::spawn(async move {
        let mut objects = watcher(api, watcher::Config::default())
            .default_backoff()
            .touched_objects()
            .boxed();
        loop {
            tokio::select! {
                () = tx.closed() => return,
                next = objects.next() => match next {
                    Some(Ok(object)) => {
                        let namespace = object.namespace().unwrap_or_default();
                        if !namespace.starts_with(&prefix) {
                            continue;
                        }
                        let seen = Seen {
                            kind,
                            namespace,
                            name: object.name_any(),
                            data: data(&object),
                            at_micros: now_micros(),
                        };
                        if tx.send(seen).is_err() {
                            return;
                        }
                    }
                    Some(Err(err)) => eprintln!("bench: the driver's {kind} watch: {err}"),
                    None => return,
                }
            }
        }
    });
}

/// Waits up to `timeout` until every namespace of `pending` has seen its reaction, each
/// expected since its time (µs since the Unix epoch); returns each namespace with its
/// reaction's latency in ms, in no particular order.
///
/// # Errors
/// If some reactions are not seen in time (naming up to five of them), or the watches ended.
pub async fn await_all(
    seen: &mut mpsc::UnboundedReceiver<Seen>,
    mut pending: HashMap<String, (Reaction, u64)>,
    timeout: Duration,
) -> anyhow::Result<Vec<(String, f64)>> {
    let deadline = tokio::time::Instant::now() + timeout;
    let mut latencies = Vec::with_capacity(pending.len());
    while !pending.is_empty() {
        match tokio::time::timeout_at(deadline, seen.recv()).await {
            Ok(Some(object)) => {
                if let Some((reaction, since)) = pending.get(&object.namespace)
                    && reaction.is(&object)
                {
                    let latency = object.at_micros.saturating_sub(*since) as f64 / 1000.0;
                    pending.remove(&object.namespace);
                    latencies.push((object.namespace, latency));
                }
            }
            Ok(None) => bail!("the driver's watches ended"),
            Err(_) => {
                let mut missing: Vec<String> = pending
                    .iter()
                    .map(|(namespace, (reaction, _))| format!("{namespace}: {reaction:?}"))
                    .collect();
                missing.sort();
                missing.truncate(5);
                bail!(
                    "{} reaction(s) not seen within {timeout:?}: {}",
                    pending.len(),
                    missing.join("; ")
                );
            }
        }
    }
    Ok(latencies)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(kind: &'static str, name: &str, data: &[(&str, &str)]) -> Seen {
        Seen {
            kind,
            namespace: "n".into(),
            name: name.into(),
            data: data
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            at_micros: 0,
        }
    }

    #[test]
    fn each_example_has_a_reaction_only_its_own_answer_matches() {
        for kind in crate::mixed::EXAMPLES {
            assert!(reaction(kind, 3).is_some(), "{kind}");
        }
        assert_eq!(reaction("ring-controller", 3), None);
        let mirror = reaction("configmap-mirror", 3).unwrap();
        assert!(mirror.is(&seen("Secret", "e3", &[])));
        assert!(!mirror.is(&seen("ConfigMap", "e3", &[])));
        assert!(!mirror.is(&seen("Secret", "e30", &[])));
        let dependent = reaction("finalizer-controller", 3).unwrap();
        assert!(dependent.is(&seen("ConfigMap", "e3-dependent", &[])));
        assert!(!dependent.is(&seen("ConfigMap", "e3", &[])));
        let logged = reaction("multi-watch", 3).unwrap();
        assert!(!logged.is(&seen(
            "ConfigMap",
            "multi-watch-log",
            &[("ConfigMap.e2", "1")]
        )));
        assert!(logged.is(&seen(
            "ConfigMap",
            "multi-watch-log",
            &[("ConfigMap.e3", "1 a=b")]
        )));
    }

    #[test]
    fn the_store_summary_lists_the_name_as_a_whole_item() {
        let listed = reaction("store-reader", 1).unwrap();
        let summary = |names| seen("ConfigMap", "store-summary", &[("names", names)]);
        assert!(listed.is(&summary("e0,e1")));
        assert!(listed.is(&summary("e1")));
        assert!(!listed.is(&summary("e10,e11")));
        assert!(!listed.is(&summary("")));
    }

    #[tokio::test]
    async fn await_all_times_each_reaction_from_its_stimulus_and_names_what_is_missing() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let at = |namespace: &str, kind, name: &str, micros| {
            let mut object = seen(kind, name, &[]);
            object.namespace = namespace.into();
            object.at_micros = micros;
            tx.send(object).unwrap();
        };
        at("a", "ConfigMap", "e0", 1_500);
        at("a", "Secret", "e0", 4_000);
        at("b", "ConfigMap", "e0", 9_000);
        let pending = HashMap::from([
            ("a".to_owned(), (Reaction::Secret("e0".into()), 1_000)),
            ("b".to_owned(), (Reaction::ConfigMap("e0".into()), 2_000)),
        ]);
        let mut latencies = await_all(&mut rx, pending, Duration::from_secs(1))
            .await
            .unwrap();
        latencies.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            latencies,
            vec![("a".to_owned(), 3.0), ("b".to_owned(), 7.0)]
        );
        let pending = HashMap::from([("c".to_owned(), (Reaction::Secret("e1".into()), 0))]);
        let err = await_all(&mut rx, pending, Duration::from_millis(50))
            .await
            .unwrap_err();
        assert!(format!("{err}").contains("c: Secret(\"e1\")"), "{err}");
    }
}
