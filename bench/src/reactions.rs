//! How each kind of the mixed fleet ([`crate::mixed::MIXED_KINDS`], the edge fleet's five
//! examples among them) shows that it reconciled a change: the object the driver creates for an
//! instance each cycle (the **stimulus**, in the instance's namespace) and what the controller
//! writes in answer (the **reaction**, in the same namespace), seen by the driver's
//! cluster-wide watches ([`watch`]: ConfigMaps and Secrets, and the parity scenarios' Widgets
//! and the Rings where a fleet's kinds answer with them). An instance's event→reconcile latency
//! is from just before the stimulus's create request to the driver's receipt of the reaction:
//! the watch's delivery is in every variant's figure alike.
//!
//! | kind | stimulus (cycle `c`) | reaction |
//! | --- | --- | --- |
//! | configmap-mirror, go-configmap-mirror (the Go fleet's, [`crate::mixed::GO_KINDS`]) | ConfigMap `e<c>` labelled `kube-wasm.dev/mirror=true` | Secret `e<c>` |
//! | configmap-generator | ConfigMapGenerator `e<c>` | ConfigMap `e<c>` |
//! | finalizer-controller | ConfigMap `e<c>` labelled `kube-wasm.example.com/with-dependent=true` | ConfigMap `e<c>-dependent` |
//! | store-reader | ConfigMap `e<c>` labelled `kube-wasm.dev/store=true` | `e<c>` in `names` of ConfigMap `store-summary` (written by a one-second ticker) |
//! | multi-watch | ConfigMap `e<c>` labelled `kube-wasm.dev/watched=true` | key `ConfigMap.e<c>` of ConfigMap `multi-watch-log` |
//! | ring-controller | Ring `e<c>` (nonce `c`) in the instance's source namespace `<namespace>-src` ([`crate::mixed::ring_source`]) | Ring `e<c>` in its namespace, stamped with the controller's `reconciled-at-micros` annotation (the copy) |
//! | parity-conflict | Widget `e<c>` | Widget `e<c>` annotated `parity.kube-wasm.example.com/handled: "1"` (its generation; written by a replace that got 409 Conflict once and was retried on a fresh read) |
//! | parity-create | Widget `e<c>` | ConfigMap `e<c>` (created, owned by the widget; the widget's status follows) |
//! | parity-events | Widget `e<c>` | Widget `e<c>` with `status.phase: Seen` (written after the Event `Seen` about it) |
//! | parity-finalizer | Widget `e<c>` | ConfigMap `e<c>-data` (after the finalizer was added to the widget) |
//! | parity-owners | Team `e<c>` with the member `e<c>` | key `e<c>` of ConfigMap `roster` (the team's server-side applied entry) |
//! | parity-restart-controller | Widget `e<c>` | ConfigMap `e<c>` (server-side applied, owned by the widget) |
//! | parity-update-ssa | Widget `e<c>` | ConfigMap `e<c>` (server-side applied, owned by the widget; the widget's status follows) |
//!
//! The kinds of [`UNOBSERVED`] write nothing the driver could see for a change, so they get no
//! stimulus and run in the fleet unstimulated (their memory is charged, their liveness checked,
//! their latency not measured): parity-paging, parity-reflector and parity-restart-reflector
//! only watch or reflect ConfigMaps and print what they see; parity-requeue reconciles each
//! Widget three times and writes nothing; parity-wait answers once per launch (ConfigMap
//! `gate-opened` when the Gate `main` opens, `gate-closed` when it is deleted), not once per
//! change.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

use anyhow::{Context as _, bail};
use futures::StreamExt as _;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DynamicObject, ObjectMeta, PostParams};
use kube::runtime::{WatchStreamExt as _, watcher};
use kube::{Client, Resource, ResourceExt as _};
use kube_wasm_e2e::objects::{config_map, generator_resource, mirrored};
use parity_scenarios::types::{Team, TeamSpec, Widget, WidgetSpec};
use tokio::sync::mpsc;

use crate::cluster::{self, RECONCILED_AT, now_micros};
use crate::mixed::ring_source;

/// The kinds of the mixed fleet with no reaction the driver can see for a change (see the
/// module docs): they get no stimulus.
pub const UNOBSERVED: [&str; 5] = [
    "parity-paging",
    "parity-reflector",
    "parity-requeue",
    "parity-restart-reflector",
    "parity-wait",
];

/// The annotation parity-conflict sets to the generation it handled
/// (`compat-tests/parity/scenarios/src/bin/parity-conflict.rs`).
pub const HANDLED: &str = "parity.kube-wasm.example.com/handled";

/// The prefix of an annotation's key in [`Seen::data`]: `metadata.annotations.<key>`.
const ANNOTATION: &str = "metadata.annotations.";

/// The key of a Widget's `status.phase` in [`Seen::data`].
pub const PHASE: &str = "status.phase";

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
    /// Ring `name` exists with the ring controller's [`RECONCILED_AT`] annotation (a copy:
    /// the driver's Rings have none).
    Ring(String),
    /// The object `name` of kind `kind` (as [`Seen::kind`]) has `value` at `key` of its
    /// [`Seen::data`].
    Field {
        /// `Widget` (the only kind so answered).
        kind: &'static str,
        /// The object.
        name: String,
        /// The key in [`Seen::data`], such as [`PHASE`].
        key: String,
        /// The value.
        value: String,
    },
}

/// An object as the driver's watch received it.
#[derive(Debug, Clone)]
pub struct Seen {
    /// `Secret`, `ConfigMap`, `Widget` or `Ring`.
    pub kind: &'static str,
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// ConfigMaps: their data's keys and values; Secrets: their data's keys (values empty);
    /// Widgets and Rings: their annotations, keyed `metadata.annotations.<key>`, and a
    /// Widget's `status.phase` ([`PHASE`]) if it has one.
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
            Reaction::Ring(name) => {
                seen.kind == "Ring"
                    && &seen.name == name
                    && seen
                        .data
                        .contains_key(&format!("{ANNOTATION}{RECONCILED_AT}"))
            }
            Reaction::Field {
                kind,
                name,
                key,
                value,
            } => seen.kind == *kind && &seen.name == name && seen.data.get(key) == Some(value),
        }
    }

    /// The kind of object it is seen on ([`Seen::kind`]): what the driver must watch.
    pub fn watched(&self) -> &'static str {
        match self {
            Reaction::Secret(_) => "Secret",
            Reaction::ConfigMap(_) | Reaction::Key { .. } | Reaction::Listed { .. } => "ConfigMap",
            Reaction::Ring(_) => "Ring",
            Reaction::Field { kind, .. } => kind,
        }
    }
}

/// The name of cycle `cycle`'s stimulus: `e<cycle>`.
pub fn stimulus_name(cycle: usize) -> String {
    format!("e{cycle}")
}

/// The reaction of an instance of `kind` to cycle `cycle`'s stimulus (see the module docs), or
/// `None` for a kind of [`UNOBSERVED`] or one that is of no fleet.
pub fn reaction(kind: &str, cycle: usize) -> Option<Reaction> {
    let name = stimulus_name(cycle);
    Some(match kind {
        "configmap-mirror" | "go-configmap-mirror" => Reaction::Secret(name),
        "configmap-generator"
        | "parity-create"
        | "parity-restart-controller"
        | "parity-update-ssa" => Reaction::ConfigMap(name),
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
        "ring-controller" => Reaction::Ring(name),
        "parity-conflict" => Reaction::Field {
            kind: "Widget",
            name,
            key: format!("{ANNOTATION}{HANDLED}"),
            value: "1".into(),
        },
        "parity-events" => Reaction::Field {
            kind: "Widget",
            name,
            key: PHASE.into(),
            value: "Seen".into(),
        },
        "parity-finalizer" => Reaction::ConfigMap(format!("{name}-data")),
        "parity-owners" => Reaction::Key {
            name: "roster".into(),
            key: name,
        },
        _ => return None,
    })
}

/// What the driver creates for an instance each cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stimulus {
    /// A ConfigMap with this label (configmap-mirror's, [`mirrored`], for `None`).
    ConfigMap(Option<(&'static str, &'static str)>),
    /// A ConfigMapGenerator.
    Generator,
    /// A Ring in the instance's [`ring_source`].
    Ring,
    /// A Widget.
    Widget,
    /// A Team with one member.
    Team,
}

/// The stimulus of an instance of `kind`, or `None` where [`reaction`] has none.
fn stimulus(kind: &str) -> Option<Stimulus> {
    Some(match kind {
        "configmap-mirror" | "go-configmap-mirror" => Stimulus::ConfigMap(None),
        "configmap-generator" => Stimulus::Generator,
        "finalizer-controller" => {
            Stimulus::ConfigMap(Some(("kube-wasm.example.com/with-dependent", "true")))
        }
        "store-reader" => Stimulus::ConfigMap(Some(("kube-wasm.dev/store", "true"))),
        "multi-watch" => Stimulus::ConfigMap(Some(("kube-wasm.dev/watched", "true"))),
        "ring-controller" => Stimulus::Ring,
        "parity-conflict"
        | "parity-create"
        | "parity-events"
        | "parity-finalizer"
        | "parity-restart-controller"
        | "parity-update-ssa" => Stimulus::Widget,
        "parity-owners" => Stimulus::Team,
        _ => return None,
    })
}

/// Creates cycle `cycle`'s stimulus for the instance of `kind` in `namespace` (the
/// ConfigMapGenerator CRD must be installed for configmap-generator, the parity scenarios'
/// for Widgets and Teams, the Ring's and the instance's [`ring_source`] for the ring
/// controller); returns the reaction to wait for, or `None` (nothing created) for a kind of
/// [`UNOBSERVED`].
///
/// # Errors
/// If `kind` is not of the mixed fleet or the apiserver refuses the object.
pub async fn stimulate(
    client: &Client,
    kind: &str,
    namespace: &str,
    cycle: usize,
) -> anyhow::Result<Option<Reaction>> {
    let (Some(stimulus), Some(reaction)) = (stimulus(kind), reaction(kind, cycle)) else {
        if UNOBSERVED.contains(&kind) {
            return Ok(None);
        }
        bail!("{kind} is a kind of no fleet");
    };
    let name = stimulus_name(cycle);
    let pp = PostParams::default();
    let created = match stimulus {
        Stimulus::ConfigMap(label) => {
            let object = match label {
                None => mirrored(&name),
                Some(label) => config_map(&name, &[label], &[("n", &name)]),
            };
            Api::<ConfigMap>::namespaced(client.clone(), namespace)
                .create(&pp, &object)
                .await
                .map(drop)
        }
        Stimulus::Generator => {
            let resource = generator_resource();
            let mut generator = DynamicObject::new(&name, &resource);
            generator.data = serde_json::json!({"spec": {"content": name}});
            Api::<DynamicObject>::namespaced_with(client.clone(), namespace, &resource)
                .create(&pp, &generator)
                .await
                .map(drop)
        }
        Stimulus::Ring => {
            cluster::write_nonce(client, &ring_source(namespace), &name, cycle as u64).await?;
            return Ok(Some(reaction));
        }
        Stimulus::Widget => {
            let spec = WidgetSpec {
                content: name.clone(),
                key: None,
            };
            Api::<Widget>::namespaced(client.clone(), namespace)
                .create(&pp, &Widget::new(&name, spec))
                .await
                .map(drop)
        }
        Stimulus::Team => {
            let spec = TeamSpec {
                members: vec![name.clone()],
            };
            Api::<Team>::namespaced(client.clone(), namespace)
                .create(&pp, &Team::new(&name, spec))
                .await
                .map(drop)
        }
    };
    created.with_context(|| format!("creating the stimulus {namespace}/{name} of {kind}"))?;
    Ok(Some(reaction))
}

/// `meta`'s annotations, keyed `metadata.annotations.<key>`.
fn annotations(meta: &ObjectMeta) -> BTreeMap<String, String> {
    meta.annotations
        .iter()
        .flatten()
        .map(|(key, value)| (format!("{ANNOTATION}{key}"), value.clone()))
        .collect()
}

/// A ConfigMap's [`Seen::data`]: its data.
fn config_map_data(cm: &ConfigMap) -> BTreeMap<String, String> {
    cm.data.clone().unwrap_or_default()
}

/// A Secret's [`Seen::data`]: its data's keys, the values left empty.
fn secret_data(secret: &Secret) -> BTreeMap<String, String> {
    secret
        .data
        .iter()
        .flatten()
        .map(|(key, _)| (key.clone(), String::new()))
        .collect()
}

/// A Widget's [`Seen::data`]: its annotations and `status.phase`.
fn widget_data(widget: &Widget) -> BTreeMap<String, String> {
    let mut data = annotations(&widget.metadata);
    if let Some(phase) = widget.status.as_ref().and_then(|s| s.phase.clone()) {
        data.insert(PHASE.to_owned(), phase);
    }
    data
}

/// A Ring's [`Seen::data`]: its annotations.
fn ring_data(ring: &DynamicObject) -> BTreeMap<String, String> {
    annotations(&ring.metadata)
}

/// The kinds the reactions of `kinds` are seen on ([`Reaction::watched`]).
pub fn watched_kinds(kinds: &[&str]) -> BTreeSet<&'static str> {
    kinds
        .iter()
        .filter_map(|kind| Some(reaction(kind, 0)?.watched()))
        .collect()
}

/// Forwards every object of the kinds the reactions of `kinds` are seen on
/// ([`watched_kinds`]) that the cluster-wide watches of `client` see (their initial lists too)
/// whose namespace starts with `prefix`, stamped on receipt. The watches resume with
/// kube-runtime's default backoff and end when the receiver is dropped.
pub fn watch(client: &Client, prefix: &str, kinds: &[&str]) -> mpsc::UnboundedReceiver<Seen> {
    let (tx, rx) = mpsc::unbounded_channel();
    let c = || client.clone();
    for kind in watched_kinds(kinds) {
        let tx = tx.clone();
        match kind {
            "ConfigMap" => forward(Api::all(c()), kind, prefix, tx, config_map_data),
            "Secret" => forward(Api::all(c()), kind, prefix, tx, secret_data),
            "Widget" => forward(Api::all(c()), kind, prefix, tx, widget_data),
            "Ring" => {
                let rings = Api::all_with(c(), &cluster::ring_resource());
                forward(rings, kind, prefix, tx, ring_data);
            }
            other => unreachable!("no reaction is seen on {other}"),
        }
    }
    rx
}

fn forward<K>(
    api: Api<K>,
    kind: &'static str,
    prefix: &str,
    tx: mpsc::UnboundedSender<Seen>,
    data: impl Fn(&K) -> BTreeMap<String, String> + Send + 'static,
) where
    K: Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
{
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
    fn every_mixed_kind_is_answered_or_listed_as_unobserved() {
        for kind in crate::mixed::MIXED_KINDS {
            let observed = !UNOBSERVED.contains(&kind);
            assert_eq!(reaction(kind, 3).is_some(), observed, "{kind}");
            assert_eq!(stimulus(kind).is_some(), observed, "{kind}");
        }
        assert!(
            UNOBSERVED
                .iter()
                .all(|k| crate::mixed::MIXED_KINDS.contains(k))
        );
        for kind in crate::mixed::EXAMPLES {
            assert!(!UNOBSERVED.contains(&kind), "{kind}");
        }
        assert_eq!(reaction("parity-bookmarks", 3), None, "not of the fleet");
        assert_eq!(stimulus("parity-bookmarks"), None);
    }

    #[test]
    fn stimuli_and_reactions_are_named_from_the_cycle() {
        assert_eq!(stimulus_name(0), "e0");
        assert_eq!(stimulus_name(12), "e12");
        let named = |r: &Reaction| match r {
            Reaction::Secret(name) | Reaction::ConfigMap(name) | Reaction::Ring(name) => {
                name.clone()
            }
            Reaction::Key { name, key } => format!("{name}/{key}"),
            Reaction::Listed { item, .. } => item.clone(),
            Reaction::Field { name, .. } => name.clone(),
        };
        for kind in crate::mixed::MIXED_KINDS {
            let Some(r) = reaction(kind, 12) else {
                continue;
            };
            let text = named(&r);
            assert!(text.contains("e12"), "{kind}: {r:?}");
            assert_ne!(r, reaction(kind, 1).unwrap(), "{kind}: cycles 12 and 1");
        }
        assert_eq!(
            reaction("parity-owners", 4),
            Some(Reaction::Key {
                name: "roster".into(),
                key: "e4".into()
            })
        );
        assert_eq!(
            reaction("parity-finalizer", 4),
            Some(Reaction::ConfigMap("e4-data".into()))
        );
    }

    #[test]
    fn the_watches_are_those_the_fleets_reactions_need() {
        let edge: Vec<_> = watched_kinds(&crate::mixed::EXAMPLES).into_iter().collect();
        assert_eq!(edge, ["ConfigMap", "Secret"]);
        let mixed: Vec<_> = watched_kinds(&crate::mixed::MIXED_KINDS)
            .into_iter()
            .collect();
        assert_eq!(mixed, ["ConfigMap", "Ring", "Secret", "Widget"]);
    }

    #[tokio::test]
    async fn an_unobserved_kind_gets_no_stimulus_and_an_unknown_one_is_refused() {
        // Nothing listens there: a request would fail, so Ok(None) means none was sent.
        let config = kube::Config::new("http://127.0.0.1:1".parse().unwrap());
        let client = Client::try_from(config).unwrap();
        for kind in UNOBSERVED {
            assert_eq!(
                stimulate(&client, kind, "n", 3).await.unwrap(),
                None,
                "{kind}"
            );
        }
        let unknown = stimulate(&client, "parity-bookmarks", "n", 3).await;
        assert!(format!("{:#}", unknown.unwrap_err()).contains("a kind of no fleet"));
        let refused = stimulate(&client, "parity-owners", "n", 3).await;
        assert!(
            format!("{:#}", refused.unwrap_err())
                .contains("creating the stimulus n/e3 of parity-owners")
        );
    }

    #[test]
    fn the_ring_copy_is_the_stamped_ring_of_its_cycle() {
        let copy = reaction("ring-controller", 3).unwrap();
        let stamp = format!("{ANNOTATION}{RECONCILED_AT}");
        assert!(copy.is(&seen("Ring", "e3", &[(&stamp, "1700000000000000")])));
        assert!(
            !copy.is(&seen("Ring", "e3", &[])),
            "the driver's own Ring has no stamp"
        );
        assert!(!copy.is(&seen("Ring", "e30", &[(&stamp, "1")])));
        assert!(!copy.is(&seen("ConfigMap", "e3", &[(&stamp, "1")])));
    }

    fn widget(name: &str, annotations: &[(&str, &str)], phase: Option<&str>) -> Seen {
        let mut object = Widget::new(
            name,
            WidgetSpec {
                content: name.into(),
                key: None,
            },
        );
        object.metadata.annotations = Some(
            annotations
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        );
        object.status = phase.map(|phase| parity_scenarios::types::WidgetStatus {
            observed_generation: Some(1),
            phase: Some(phase.into()),
        });
        Seen {
            data: widget_data(&object),
            ..seen("Widget", name, &[])
        }
    }

    #[test]
    fn a_widget_answers_by_the_annotation_or_phase_its_controller_writes() {
        let handled = reaction("parity-conflict", 3).unwrap();
        assert!(handled.is(&widget("e3", &[(HANDLED, "1")], None)));
        assert!(!handled.is(&widget(
            "e3",
            &[("parity.kube-wasm.example.com/touched", "1")],
            None
        )));
        assert!(!handled.is(&widget("e3", &[(HANDLED, "2")], None)));
        assert!(!handled.is(&widget("e2", &[(HANDLED, "1")], None)));
        let seen_phase = reaction("parity-events", 3).unwrap();
        assert!(seen_phase.is(&widget("e3", &[], Some("Seen"))));
        assert!(!seen_phase.is(&widget("e3", &[], Some("Created"))));
        assert!(!seen_phase.is(&widget("e3", &[], None)));
        let phase_on_a_config_map = seen("ConfigMap", "e3", &[(PHASE, "Seen")]);
        assert!(!seen_phase.is(&phase_on_a_config_map));
    }

    #[test]
    fn the_parity_config_maps_answer_by_name_and_the_roster_by_key() {
        for kind in [
            "parity-create",
            "parity-restart-controller",
            "parity-update-ssa",
        ] {
            let made = reaction(kind, 3).unwrap();
            assert!(
                made.is(&seen("ConfigMap", "e3", &[("content", "e3")])),
                "{kind}"
            );
            assert!(!made.is(&seen("ConfigMap", "e3-data", &[])), "{kind}");
            assert!(!made.is(&seen("Widget", "e3", &[])), "{kind}: the stimulus");
        }
        let data = reaction("parity-finalizer", 3).unwrap();
        assert!(data.is(&seen("ConfigMap", "e3-data", &[])));
        assert!(!data.is(&seen("ConfigMap", "e3", &[])));
        let roster = reaction("parity-owners", 3).unwrap();
        assert!(roster.is(&seen("ConfigMap", "roster", &[("e1", "e1"), ("e3", "e3")])));
        assert!(!roster.is(&seen("ConfigMap", "roster", &[("e30", "e30")])));
        assert!(!roster.is(&seen("ConfigMap", "e3", &[("e3", "e3")])));
    }

    #[test]
    fn each_example_has_a_reaction_only_its_own_answer_matches() {
        for kind in crate::mixed::EXAMPLES {
            assert!(reaction(kind, 3).is_some(), "{kind}");
        }
        let mirror = reaction("configmap-mirror", 3).unwrap();
        assert_eq!(reaction("go-configmap-mirror", 3).as_ref(), Some(&mirror));
        assert_eq!(
            stimulus("go-configmap-mirror"),
            stimulus("configmap-mirror")
        );
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
