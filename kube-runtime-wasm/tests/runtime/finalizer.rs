//! `finalizer()`: the JSON patches it sends and when it calls the reconciler.

use super::support::*;
use futures::stream;
use k8s_openapi::api::core::v1::ConfigMap;
use kube_runtime_wasm::controller::Action;
use kube_runtime_wasm::finalizer;
use kube_runtime_wasm::finalizer::Event;
use serde_json::{Value, json};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

const FINALIZER: &str = "example.com/cleanup";

/// The reconciler's error.
#[derive(Debug, thiserror::Error)]
#[error("reconcile failed")]
struct Failed;

type Outcome = Result<Action, finalizer::Error<Failed>>;

fn describe_outcome(item: &Outcome) -> String {
    match item {
        Ok(action) => format!("{action:?}"),
        Err(err) => format!("Err {err}"),
    }
}

/// A config map `a` with `finalizers` and, when `deleting`, a deletion timestamp.
fn object(finalizers: &[&str], deleting: bool) -> ConfigMap {
    let mut value = cm("a", "1");
    if !finalizers.is_empty() {
        value["metadata"]["finalizers"] = json!(finalizers);
    }
    if deleting {
        value["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    }
    serde_json::from_value(value).expect("a config map")
}

/// Runs `finalizer()` on `obj` with a reconciler that logs its event and answers `answer`.
fn start(obj: ConfigMap, answer: Result<Action, Failed>) -> (Driver, Rc<RefCell<Vec<String>>>) {
    let (host, client) = setup();
    let api = configmaps(client);
    let calls = Rc::new(RefCell::new(Vec::new()));
    let seen = calls.clone();
    let run = async move {
        finalizer(&api, FINALIZER, Arc::new(obj), |event| {
            seen.borrow_mut().push(match event {
                Event::Apply(o) => format!("Apply {:?}", o.metadata.name),
                Event::Cleanup(o) => format!("Cleanup {:?}", o.metadata.name),
            });
            std::future::ready(answer)
        })
        .await
    };
    (
        Driver::start(host, stream::once(run), describe_outcome),
        calls,
    )
}

/// The next op must be a JSON patch of config map `a`; returns its id and body.
fn expect_json_patch(d: &mut Driver) -> (kube_wasm_abi::OpId, Value) {
    let (id, request, body) = d.expect_http("PATCH");
    assert_eq!(request.uri, "/api/v1/namespaces/default/configmaps/a?");
    assert_eq!(
        header(&request, "content-type"),
        Some("application/json-patch+json")
    );
    (id, body)
}

#[test]
fn adds_the_finalizer_to_an_object_without_finalizers() {
    let (mut d, calls) = start(object(&[], false), Ok(Action::await_change()));
    let (patch, body) = expect_json_patch(&mut d);
    assert_eq!(
        body,
        json!([
            {"op": "test", "path": "/metadata/finalizers", "value": null},
            {"op": "add", "path": "/metadata/finalizers", "value": [FINALIZER]},
        ])
    );
    d.respond(patch, 200, &cm("a", "2"));
    assert_eq!(d.take_log(), ["Action { requeue_after: None }", "END"]);
    assert!(
        calls.borrow().is_empty(),
        "no reconcile before the finalizer"
    );
}

#[test]
fn appends_the_finalizer_after_others() {
    let (mut d, calls) = start(object(&["other"], false), Ok(Action::await_change()));
    let (patch, body) = expect_json_patch(&mut d);
    assert_eq!(
        body,
        json!([
            {"op": "test", "path": "/metadata/finalizers", "value": ["other"]},
            {"op": "add", "path": "/metadata/finalizers/-", "value": FINALIZER},
        ])
    );
    d.respond(patch, 200, &cm("a", "2"));
    assert_eq!(d.take_log(), ["Action { requeue_after: None }", "END"]);
    assert!(calls.borrow().is_empty());
}

#[test]
fn a_failed_add_is_add_finalizer() {
    let (mut d, calls) = start(object(&["other"], false), Ok(Action::await_change()));
    let (patch, _) = expect_json_patch(&mut d);
    d.respond(patch, 422, &status(422, "Invalid"));
    let log = d.take_log();
    assert!(log[0].starts_with("Err failed to add finalizer"), "{log:?}");
    assert!(calls.borrow().is_empty());
}

#[test]
fn applies_when_the_finalizer_is_present() {
    let action = Action::requeue(Duration::from_secs(300));
    let (mut d, calls) = start(object(&[FINALIZER], false), Ok(action.clone()));
    assert_eq!(d.take_log(), [format!("{action:?}"), "END".to_string()]);
    assert_eq!(*calls.borrow(), ["Apply Some(\"a\")"]);
    assert!(d.nothing_pending(), "no request");
}

#[test]
fn a_failed_apply_is_apply_failed() {
    let (mut d, _) = start(object(&[FINALIZER], false), Err(Failed));
    assert_eq!(
        d.take_log(),
        ["Err failed to apply object: reconcile failed", "END"]
    );
}

#[test]
fn cleans_up_then_removes_the_finalizer_at_its_index() {
    let action = Action::requeue(Duration::from_secs(5));
    let (mut d, calls) = start(object(&["other", FINALIZER], true), Ok(action.clone()));
    assert_eq!(*calls.borrow(), ["Cleanup Some(\"a\")"]);
    let (patch, body) = expect_json_patch(&mut d);
    assert_eq!(
        body,
        json!([
            {"op": "test", "path": "/metadata/finalizers/1", "value": FINALIZER},
            {"op": "remove", "path": "/metadata/finalizers/1"},
        ])
    );
    assert!(d.take_log().is_empty(), "waits for the patch");
    d.respond(patch, 200, &cm("a", "2"));
    assert_eq!(d.take_log(), [format!("{action:?}"), "END".to_string()]);
}

#[test]
fn a_failed_cleanup_keeps_the_finalizer() {
    let (mut d, calls) = start(object(&[FINALIZER], true), Err(Failed));
    assert_eq!(
        d.take_log(),
        ["Err failed to clean up object: reconcile failed", "END"]
    );
    assert_eq!(*calls.borrow(), ["Cleanup Some(\"a\")"]);
    assert!(d.nothing_pending(), "no patch");
}

#[test]
fn a_failed_removal_is_remove_finalizer() {
    let (mut d, _) = start(object(&[FINALIZER], true), Ok(Action::await_change()));
    let (patch, _) = expect_json_patch(&mut d);
    d.respond(patch, 422, &status(422, "Invalid"));
    let log = d.take_log();
    assert!(
        log[0].starts_with("Err failed to remove finalizer"),
        "{log:?}"
    );
}

#[test]
fn does_nothing_for_a_deleting_object_without_our_finalizer() {
    let (mut d, calls) = start(
        object(&["other"], true),
        Ok(Action::requeue(Duration::ZERO)),
    );
    assert_eq!(d.take_log(), ["Action { requeue_after: None }", "END"]);
    assert!(calls.borrow().is_empty());
    assert!(d.nothing_pending());
}

#[test]
fn an_unnamed_object_is_unnamed_object() {
    let (host, client) = setup();
    let api = configmaps(client);
    let run = async move {
        finalizer(&api, FINALIZER, Arc::new(ConfigMap::default()), |_| {
            std::future::ready(Ok::<_, Failed>(Action::await_change()))
        })
        .await
    };
    let mut d = Driver::start(host, stream::once(run), describe_outcome);
    assert_eq!(d.take_log(), ["Err object has no name", "END"]);
}

#[test]
fn the_future_is_send() {
    fn assert_send<T: Send>(_: &T) {}
    let (_host, client) = setup();
    let api = configmaps(client);
    let obj = Arc::new(object(&[], false));
    let run = finalizer(&api, FINALIZER, obj, |_| {
        std::future::ready(Ok::<_, Failed>(Action::await_change()))
    });
    assert_send(&run);
}
