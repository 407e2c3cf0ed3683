//! `events::Recorder`: the `events.k8s.io/v1` objects it creates and the series patches of
//! repeated events.

use super::support::*;
use futures::{StreamExt, stream};
use k8s_openapi::api::core::v1::ObjectReference;
use kube_runtime_wasm::events::{Event, EventType, Recorder, Reporter};
use serde_json::json;

fn reporter() -> Reporter {
    Reporter {
        controller: "mirror-controller".into(),
        instance: Some("mirror-module".into()),
    }
}

fn regarding(namespace: Option<&str>) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("ConfigMap".into()),
        name: Some("a".into()),
        namespace: namespace.map(Into::into),
        uid: Some("u1".into()),
        ..ObjectReference::default()
    }
}

fn event(reason: &str, note: &str) -> Event {
    Event {
        type_: EventType::Warning,
        reason: reason.into(),
        note: Some(note.into()),
        action: "Mirror".into(),
        secondary: None,
    }
}

fn describe_publish(item: &Result<(), kube_wasm_client::Error>) -> String {
    match item {
        Ok(()) => "Ok".to_string(),
        Err(err) => format!("Err {err}"),
    }
}

/// Publishes each event about its reference with `recorder`, one after the other, on a
/// driver of `host`.
fn publish_all(
    host: kube_wasm_guest::fake::FakeHost,
    recorder: &Recorder,
    events: Vec<(Event, ObjectReference)>,
) -> Driver {
    let recorder = recorder.clone();
    let run = stream::iter(events).then(move |(ev, reference)| {
        let recorder = recorder.clone();
        async move { recorder.publish(&ev, &reference).await }
    });
    Driver::start(host, run, describe_publish)
}

/// Publishes `ev` about `reference` with `recorder` on a driver of `host`.
fn publish(
    host: kube_wasm_guest::fake::FakeHost,
    recorder: &Recorder,
    ev: Event,
    reference: ObjectReference,
) -> Driver {
    publish_all(host, recorder, vec![(ev, reference)])
}

#[test]
fn publish_creates_an_events_k8s_io_event() {
    let (host, client) = setup();
    let recorder = Recorder::new(client, reporter());
    let mut d = publish(
        host,
        &recorder,
        event("Failed", "no target"),
        regarding(Some("apps")),
    );

    let (post, request, body) = d.expect_http("POST");
    assert_eq!(
        request.uri,
        "/apis/events.k8s.io/v1/namespaces/apps/events?"
    );
    assert_eq!(header(&request, "content-type"), Some("application/json"));
    assert_eq!(body["apiVersion"], "events.k8s.io/v1");
    assert_eq!(body["kind"], "Event");
    assert_eq!(body["reportingController"], "mirror-controller");
    assert_eq!(body["reportingInstance"], "mirror-module");
    assert_eq!(body["reason"], "Failed");
    assert_eq!(body["note"], "no target");
    assert_eq!(body["type"], "Warning");
    assert_eq!(body["action"], "Mirror");
    assert_eq!(
        body["regarding"],
        json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "a",
               "namespace": "apps", "uid": "u1"})
    );
    assert_eq!(body["metadata"]["namespace"], "apps");
    let name = body["metadata"]["name"].as_str().expect("a name");
    assert!(name.starts_with("a."), "{name}");
    assert!(body["eventTime"].is_string());
    assert!(body.get("series").is_none() && body.get("related").is_none());

    d.respond(post, 201, &body);
    assert_eq!(d.take_log(), ["Ok", "END"]);
}

#[test]
fn a_repeated_event_patches_its_series() {
    let (host, client) = setup();
    let recorder = Recorder::new(client, reporter());
    let apps = || regarding(Some("apps"));
    let mut d = publish_all(
        host,
        &recorder,
        vec![
            (event("Failed", "one"), apps()),
            // Same type, action, reason and objects: the note does not matter.
            (event("Failed", "again"), apps()),
            (event("Failed", "again"), apps()),
            // Another reason is another event.
            (event("Other", "x"), apps()),
        ],
    );
    let (post, _, created) = d.expect_http("POST");
    d.respond(post, 201, &created);
    assert_eq!(d.take_log(), ["Ok"]);
    let name = created["metadata"]["name"].as_str().unwrap().to_string();

    for count in [2, 3] {
        let (patch, request, body) = d.expect_http("PATCH");
        assert_eq!(
            request.uri,
            format!("/apis/events.k8s.io/v1/namespaces/apps/events/{name}?")
        );
        assert_eq!(
            header(&request, "content-type"),
            Some("application/merge-patch+json")
        );
        assert_eq!(body["series"]["count"], count);
        assert!(body["series"]["lastObservedTime"].is_string());
        assert_eq!(body["note"], "one", "the first occurrence's event");
        assert_eq!(body["metadata"]["name"], name.as_str());
        d.respond(patch, 200, &body);
        assert_eq!(d.take_log(), ["Ok"]);
    }

    let (post, _, body) = d.expect_http("POST");
    assert_eq!(body["reason"], "Other");
    assert!(body.get("series").is_none());
    d.respond(post, 201, &body);
    assert_eq!(d.take_log(), ["Ok", "END"]);
}

#[test]
fn a_refused_event_is_not_remembered() {
    let (host, client) = setup();
    let recorder = Recorder::new(client, reporter());
    let apps = || regarding(Some("apps"));
    let mut d = publish_all(
        host,
        &recorder,
        vec![
            (event("Failed", "one"), apps()),
            (event("Failed", "one"), apps()),
        ],
    );
    let (post, _, _) = d.expect_http("POST");
    d.respond(post, 403, &status(403, "Forbidden"));
    let log = d.take_log();
    assert!(log[0].starts_with("Err"), "{log:?}");

    let (post, _, body) = d.expect_http("POST");
    assert!(body.get("series").is_none());
    d.respond(post, 201, &body);
    assert_eq!(d.take_log(), ["Ok", "END"]);
}

#[test]
fn cluster_scoped_objects_get_events_in_default() {
    let (host, client) = setup();
    let reporter = Reporter::from("mirror-controller".to_string());
    let recorder = Recorder::new(client, reporter);
    let mut ev = event("Synced", "ok");
    ev.type_ = EventType::Normal;
    ev.secondary = Some(regarding(Some("apps")));
    let node = ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Node".into()),
        name: Some("n1".into()),
        ..ObjectReference::default()
    };
    let mut d = publish(host, &recorder, ev, node);
    let (post, request, body) = d.expect_http("POST");
    assert_eq!(
        request.uri,
        "/apis/events.k8s.io/v1/namespaces/default/events?"
    );
    assert_eq!(body["type"], "Normal");
    assert_eq!(
        body["reportingInstance"], "mirror-controller",
        "no instance"
    );
    assert_eq!(body["related"]["namespace"], "apps");
    assert!(body["metadata"].get("namespace").is_none());
    d.respond(post, 201, &body);
    assert_eq!(d.take_log(), ["Ok", "END"]);
}

#[test]
#[allow(unsafe_code)]
fn reporter_from_str_takes_the_module_name() {
    // SAFETY: no other test reads or writes `KUBE_WASM_MODULE`, and std's environment
    // accesses are serialised.
    unsafe { std::env::set_var("KUBE_WASM_MODULE", "mirror-module") };
    let reporter = Reporter::from("mirror-controller");
    assert_eq!(reporter.controller, "mirror-controller");
    assert_eq!(reporter.instance.as_deref(), Some("mirror-module"));
}

#[test]
fn the_publish_future_is_send() {
    fn assert_send<T: Send>(_: &T) {}
    let (_host, client) = setup();
    let recorder = Recorder::new(client, reporter());
    let ev = event("Failed", "x");
    let reference = regarding(None);
    assert_send(&recorder.publish(&ev, &reference));
}
