//! Publishing Kubernetes events (`events.k8s.io/v1`) about objects, as kube-runtime 5.0's
//! `kube_runtime::events`.
//!
//! A [`Recorder`] creates an `Event` object for each new [`Event`] it publishes and, when
//! the same event (same type, action, reason, reporter, regarding and related objects) is
//! published again within 6 minutes, patches that object's `series` (count and last
//! observed time) instead of creating another.

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event as K8sEvent, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube_core::ResourceExt;
use kube_wasm_abi::env::ENV_MODULE;
use kube_wasm_client::api::{Patch, PatchParams, PostParams};
use kube_wasm_client::{Api, Client};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, PoisonError};

/// How long a published event is remembered for deduplication, after its last occurrence.
const CACHE_TTL: SignedDuration = SignedDuration::from_mins(6);

/// An event to publish with [`Recorder::publish`], as kube-runtime 5.0's `events::Event`.
/// Every string is for humans.
pub struct Event {
    /// The severity (`kubectl describe`'s `Type`).
    pub type_: EventType,

    /// Why the action was taken, at most 128 characters, usually `PascalCase`
    /// (`kubectl describe`'s `Reason`).
    pub reason: String,

    /// What happened, at most 1 kB (`kubectl describe`'s `Message`).
    pub note: Option<String>,

    /// What was done (successfully or not) to the object, at most 128 characters, usually
    /// `PascalCase`.
    pub action: String,

    /// Another object the event concerns (the event's `related`), e.g. the `ReplicaSet`
    /// of a `Deployment`; `None` when only the regarding object is concerned.
    pub secondary: Option<ObjectReference>,
}

/// An event's severity, as kube-runtime 5.0's `events::EventType`.
#[derive(Clone, Copy, Debug, Eq, PartialEq, Hash)]
pub enum EventType {
    /// Something happened as expected (`"Normal"`).
    Normal,
    /// Something is not as expected and may need a look (`"Warning"`).
    Warning,
}

impl EventType {
    /// The event's `type` field.
    fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

/// An [`ObjectReference`] that is `Eq` and `Hash` (on API version, kind, name, namespace and
/// uid), as kube-runtime 5.0's `events::Reference`.
#[derive(Clone, Debug, PartialEq)]
pub struct Reference(ObjectReference);

impl Eq for Reference {}

impl Hash for Reference {
    fn hash<H: Hasher>(&self, state: &mut H) {
        let r = &self.0;
        (&r.api_version, &r.kind, &r.name, &r.namespace, &r.uid).hash(state);
    }
}

/// What makes two published events the same occurrence for deduplication.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct EventKey {
    event_type: EventType,
    action: String,
    reason: String,
    reporting_controller: String,
    reporting_instance: Option<String>,
    regarding: Reference,
    related: Option<Reference>,
}

/// Who publishes events, as kube-runtime 5.0's `events::Reporter`.
///
/// ```
/// use kube_runtime_wasm::events::Reporter;
///
/// let reporter = Reporter {
///     controller: "my-controller".into(),
///     instance: std::env::var("KUBE_WASM_MODULE").ok(),
/// };
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Reporter {
    /// The controller's name (the event's `reportingController`).
    pub controller: String,

    /// Which instance of the controller (the event's `reportingInstance`); when `None`, the
    /// events carry [`controller`](Self::controller) instead.
    ///
    /// `Reporter::from(&str)` fills it with the module's name in the kube-wasm host (the
    /// `KUBE_WASM_MODULE` environment variable), where kube-runtime uses the hostname.
    pub instance: Option<String>,
}

impl From<String> for Reporter {
    /// A reporter named `controller` with no instance, as kube-runtime's.
    fn from(controller: String) -> Self {
        Self {
            controller,
            instance: None,
        }
    }
}

impl From<&str> for Reporter {
    /// A reporter named `controller` whose instance is this module's name in the host
    /// (`KUBE_WASM_MODULE`, `None` if unset) — kube-runtime takes the hostname here.
    fn from(controller: &str) -> Self {
        Self {
            controller: controller.into(),
            instance: std::env::var(ENV_MODULE).ok(),
        }
    }
}

/// Publishes Kubernetes events about objects, as kube-runtime 5.0's `events::Recorder`.
///
/// Each [`publish`](Recorder::publish) creates an `events.k8s.io/v1` `Event` in the
/// namespace of the object it regards (`default` for cluster-scoped objects), or, when the
/// same event was published by this recorder (or a clone) in the last 6 minutes, patches
/// that event's `series`. `kubectl describe` shows them under `Events`.
///
/// The controller needs `create` and `patch` on `events` in the API group `events.k8s.io`.
///
/// ```no_run
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube_runtime_wasm::events::{Event, EventType, Recorder, Reporter};
/// use kube_wasm_client::{Client, Resource};
///
/// # async fn run(client: Client, cm: ConfigMap) -> Result<(), kube_wasm_client::Error> {
/// let recorder = Recorder::new(client, Reporter::from("my-controller"));
/// let event = Event {
///     type_: EventType::Normal,
///     reason: "Mirrored".into(),
///     note: Some("copied to the other namespace".into()),
///     action: "Reconcile".into(),
///     secondary: None,
/// };
/// recorder.publish(&event, &cm.object_ref(&())).await?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Recorder {
    client: Client,
    reporter: Reporter,
    /// The events published lately, by what makes them the same.
    cache: Arc<Mutex<HashMap<EventKey, K8sEvent>>>,
}

impl Recorder {
    /// A recorder publishing as `reporter` through `client`, with an empty deduplication
    /// cache.
    #[must_use]
    pub fn new(client: Client, reporter: Reporter) -> Self {
        Self {
            client,
            reporter,
            cache: Arc::default(),
        }
    }

    fn key(&self, ev: &Event, regarding: &ObjectReference) -> EventKey {
        EventKey {
            event_type: ev.type_,
            action: ev.action.clone(),
            reason: ev.reason.clone(),
            reporting_controller: self.reporter.controller.clone(),
            reporting_instance: self.reporter.instance.clone(),
            regarding: Reference(regarding.clone()),
            related: ev.secondary.clone().map(Reference),
        }
    }

    /// A new `Event` object for `ev` about `regarding`, named `<regarding name>.<now in
    /// hex nanoseconds>` (the controller's name for an unnamed reference).
    fn new_event(&self, ev: &Event, regarding: &ObjectReference, now: Timestamp) -> K8sEvent {
        let base = regarding
            .name
            .as_deref()
            .unwrap_or(&self.reporter.controller);
        K8sEvent {
            metadata: ObjectMeta {
                name: Some(format!("{base}.{:x}", now.as_nanosecond())),
                namespace: regarding.namespace.clone(),
                ..ObjectMeta::default()
            },
            action: Some(ev.action.clone()),
            reason: Some(ev.reason.clone()),
            note: ev.note.clone(),
            type_: Some(ev.type_.as_str().to_string()),
            event_time: Some(MicroTime(now)),
            regarding: Some(regarding.clone()),
            related: ev.secondary.clone(),
            reporting_controller: Some(self.reporter.controller.clone()),
            reporting_instance: Some(
                self.reporter
                    .instance
                    .clone()
                    .unwrap_or_else(|| self.reporter.controller.clone()),
            ),
            series: None,
            deprecated_count: None,
            deprecated_first_timestamp: None,
            deprecated_last_timestamp: None,
            deprecated_source: None,
        }
    }

    /// Publishes `ev` about the object `reference` points to.
    ///
    /// A new event is a POST to `/apis/events.k8s.io/v1/namespaces/<namespace>/events`; a
    /// repeat within 6 minutes of the last occurrence is a merge PATCH of the first one,
    /// with `series.count` (2, 3, …) and `series.lastObservedTime` set to now. Entries
    /// older than 6 minutes are forgotten first, so a later repeat creates a new event.
    ///
    /// # Errors
    /// The client's error when the API server refuses the event (e.g. `403` without the
    /// RBAC above) or the request fails; the event is then not remembered.
    pub async fn publish(
        &self,
        ev: &Event,
        reference: &ObjectReference,
    ) -> Result<(), kube_wasm_client::Error> {
        let now = Timestamp::now();
        let key = self.key(ev, reference);
        let event = {
            let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
            cache.retain(|_, cached| {
                let last = match (&cached.series, &cached.event_time) {
                    (Some(series), _) => series.last_observed_time.0,
                    (None, Some(time)) => time.0,
                    (None, None) => return true,
                };
                last + CACHE_TTL > now
            });
            match cache.get(&key) {
                Some(cached) => {
                    let mut event = cached.clone();
                    event.series = Some(EventSeries {
                        count: cached.series.as_ref().map_or(2, |s| s.count + 1),
                        last_observed_time: MicroTime(now),
                    });
                    event
                }
                None => self.new_event(ev, reference, now),
            }
        };

        let namespace = reference.namespace.as_deref().unwrap_or("default");
        let events: Api<K8sEvent> = Api::namespaced(self.client.clone(), namespace);
        if event.series.is_some() {
            events
                .patch(
                    &event.name_any(),
                    &PatchParams::default(),
                    &Patch::Merge(&event),
                )
                .await?;
        } else {
            events.create(&PostParams::default(), &event).await?;
        }

        self.cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key, event);
        Ok(())
    }
}
