//! `await_condition`, the conditions and their combinators, and `delete_and_finalize`.

use super::support::*;
use futures::stream;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Service};
use kube_runtime_wasm::conditions;
use kube_runtime_wasm::wait::{self, Condition, await_condition, delete::delete_and_finalize};
use kube_wasm_client::ResourceExt;
use kube_wasm_client::api::DeleteParams;
use serde_json::{Value, json};

/// A config map with `data.ready` set once it is ready.
fn is_ready(cm: Option<&ConfigMap>) -> bool {
    cm.and_then(|cm| cm.data.as_ref())
        .is_some_and(|data| data.contains_key("ready"))
}

fn describe_wait(item: &Result<Option<ConfigMap>, wait::Error>) -> String {
    match item {
        Ok(Some(cm)) => format!(
            "Some {}@{}",
            cm.name_any(),
            cm.resource_version().unwrap_or_default()
        ),
        Ok(None) => "None".to_string(),
        Err(wait::Error::ProbeFailed(err)) => format!("ProbeFailed {}", describe_error(err)),
    }
}

fn describe_delete(item: &Result<(), wait::delete::Error>) -> String {
    match item {
        Ok(()) => "Ok".to_string(),
        Err(err) => format!("Err {err}"),
    }
}

fn with_uid(mut object: Value, uid: &str) -> Value {
    object["metadata"]["uid"] = json!(uid);
    object
}

#[test]
fn await_condition_resolves_when_the_object_satisfies_it() {
    let (host, client) = setup();
    let api = configmaps(client);
    let wait = async move { await_condition(api, "a", is_ready).await };
    let mut d = Driver::start(host, stream::once(wait), describe_wait);

    let (list, uri) = d.expect_list();
    assert!(uri.contains("fieldSelector=metadata.name%3Da"), "{uri}");
    d.respond(list, 200, &page(&[cm("a", "1")], "1", None));
    let (watch, request) = d.expect_watch();
    assert_eq!(request.field_selector.as_deref(), Some("metadata.name=a"));
    d.establish(watch);
    d.event(watch, &watch_event("MODIFIED", cm("a", "2")));
    assert!(d.take_log().is_empty(), "not ready yet");

    let mut ready = cm("a", "3");
    ready["data"] = json!({"ready": "yes"});
    d.event(watch, &watch_event("MODIFIED", ready));
    assert_eq!(d.take_log(), ["Some a@3", "END"]);
    assert!(d.host.live().is_empty(), "the watch is cancelled");
}

#[test]
fn await_condition_resolves_at_once_when_it_already_holds() {
    let (host, client) = setup();
    let api = configmaps(client);
    let wait = async move { await_condition(api, "a", conditions::is_created()).await };
    let mut d = Driver::start(host, stream::once(wait), describe_wait);

    let (list, _) = d.expect_list();
    d.respond(list, 200, &page(&[cm("a", "1")], "1", None));
    assert_eq!(d.take_log(), ["Some a@1", "END"]);
}

#[test]
fn is_deleted_holds_on_deletion() {
    let (host, client) = setup();
    let api = configmaps(client);
    let wait = async move { await_condition(api, "a", conditions::is_deleted("u1")).await };
    let mut d = Driver::start(host, stream::once(wait), describe_wait);

    let (list, _) = d.expect_list();
    d.respond(list, 200, &page(&[with_uid(cm("a", "1"), "u1")], "1", None));
    let (watch, _) = d.expect_watch();
    d.establish(watch);
    d.event(
        watch,
        &watch_event("MODIFIED", with_uid(cm("a", "2"), "u1")),
    );
    assert!(d.take_log().is_empty());
    d.event(watch, &watch_event("DELETED", with_uid(cm("a", "3"), "u1")));
    assert_eq!(d.take_log(), ["None", "END"]);
}

#[test]
fn is_deleted_holds_when_the_object_was_recreated() {
    let (host, client) = setup();
    let api = configmaps(client);
    let wait = async move { await_condition(api, "a", conditions::is_deleted("u1")).await };
    let mut d = Driver::start(host, stream::once(wait), describe_wait);

    let (list, _) = d.expect_list();
    d.respond(list, 200, &page(&[with_uid(cm("a", "5"), "u2")], "5", None));
    assert_eq!(d.take_log(), ["Some a@5", "END"]);
}

#[test]
fn a_failing_watcher_is_probe_failed() {
    let (host, client) = setup();
    let api = configmaps(client);
    let wait = async move { await_condition(api, "a", is_ready).await };
    let mut d = Driver::start(host, stream::once(wait), describe_wait);

    let (list, _) = d.expect_list();
    d.respond(list, 403, &status(403, "Forbidden"));
    assert_eq!(
        d.take_log(),
        ["ProbeFailed Err InitialListFailed Api 403", "END"]
    );
}

#[test]
fn delete_and_finalize_waits_for_the_deleted_uid_to_go() {
    let (host, client) = setup();
    let api = configmaps(client);
    let run = async move { delete_and_finalize(api, "a", &DeleteParams::default()).await };
    let mut d = Driver::start(host, stream::once(run), describe_delete);

    let (delete, request, _) = d.expect_http("DELETE");
    assert!(
        request
            .uri
            .starts_with("/api/v1/namespaces/default/configmaps/a"),
        "{}",
        request.uri
    );
    let mut deleting = with_uid(cm("a", "2"), "u1");
    deleting["metadata"]["finalizers"] = json!(["example.com/x"]);
    deleting["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    d.respond(delete, 200, &deleting);

    let (list, _) = d.expect_list();
    d.respond(list, 200, &page(&[deleting.clone()], "2", None));
    let (watch, _) = d.expect_watch();
    d.establish(watch);
    assert!(d.take_log().is_empty(), "still finalizing");
    d.event(watch, &watch_event("DELETED", deleting));
    assert_eq!(d.take_log(), ["Ok", "END"]);
}

#[test]
fn delete_and_finalize_takes_the_uid_from_a_status() {
    let (host, client) = setup();
    let api = configmaps(client);
    let run = async move { delete_and_finalize(api, "a", &DeleteParams::default()).await };
    let mut d = Driver::start(host, stream::once(run), describe_delete);

    let (delete, _, _) = d.expect_http("DELETE");
    let gone = json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
        "status": "Success", "details": {"name": "a", "kind": "configmaps", "uid": "u1"}});
    d.respond(delete, 200, &gone);
    let (list, _) = d.expect_list();
    d.respond(list, 200, &page(&[], "3", None));
    assert_eq!(d.take_log(), ["Ok", "END"]);
}

#[test]
fn delete_and_finalize_reports_a_failed_delete() {
    let (host, client) = setup();
    let api = configmaps(client);
    let run = async move { delete_and_finalize(api, "a", &DeleteParams::default()).await };
    let mut d = Driver::start(host, stream::once(run), describe_delete);

    let (delete, _, _) = d.expect_http("DELETE");
    d.respond(delete, 404, &status(404, "NotFound"));
    let log = d.take_log();
    assert!(log[0].starts_with("Err failed to delete object"), "{log:?}");
}

#[test]
fn combinators() {
    let yes = |_: Option<&ConfigMap>| true;
    let no = |_: Option<&ConfigMap>| false;
    assert!(!yes.not().matches_object(None));
    assert!(no.not().matches_object(None));
    assert!(yes.and(yes).matches_object(None));
    assert!(!yes.and(no).matches_object(None));
    assert!(!no.and(yes).matches_object(None));
    assert!(yes.or(no).matches_object(None));
    assert!(no.or(yes).matches_object(None));
    assert!(!no.or(no).matches_object(None));
}

fn from<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).expect("a valid object")
}

#[test]
fn pod_running() {
    let pod: Pod = from(json!({"metadata": {"name": "p"}, "status": {"phase": "Running"}}));
    let pending: Pod = from(json!({"metadata": {"name": "p"}, "status": {"phase": "Pending"}}));
    assert!(conditions::is_pod_running().matches_object(Some(&pod)));
    assert!(!conditions::is_pod_running().matches_object(Some(&pending)));
    assert!(!conditions::is_pod_running().matches_object(None));
}

#[test]
fn deployment_completed() {
    let deployment = |reason: &str| -> Deployment {
        from(json!({"metadata": {"name": "d"}, "status": {"conditions": [
            {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
            {"type": "Progressing", "status": "True", "reason": reason},
        ]}}))
    };
    let done = deployment("NewReplicaSetAvailable");
    let rolling = deployment("ReplicaSetUpdated");
    assert!(conditions::is_deployment_completed().matches_object(Some(&done)));
    assert!(!conditions::is_deployment_completed().matches_object(Some(&rolling)));
    assert!(!conditions::is_deployment_completed().matches_object(None));
}

#[test]
fn service_load_balancer() {
    let service = |type_: &str, status: Value| -> Service {
        from(json!({"metadata": {"name": "s"}, "spec": {"type": type_}, "status": status}))
    };
    let cond = conditions::is_service_loadbalancer_provisioned();
    let ip = json!({"loadBalancer": {"ingress": [{"ip": "192.0.2.1"}]}});
    let host = json!({"loadBalancer": {"ingress": [{"hostname": "lb.example"}]}});
    let pending = json!({"loadBalancer": {}});
    assert!(cond.matches_object(Some(&service("LoadBalancer", ip))));
    assert!(cond.matches_object(Some(&service("LoadBalancer", host))));
    assert!(!cond.matches_object(Some(&service("LoadBalancer", pending.clone()))));
    assert!(cond.matches_object(Some(&service("ClusterIP", pending))));
    assert!(!cond.matches_object(None));
}

#[test]
fn the_futures_are_send() {
    fn assert_send<T: Send>(_: &T) {}
    let (_host, client) = setup();
    assert_send(&await_condition(
        configmaps(client.clone()),
        "a",
        conditions::is_deleted("u1"),
    ));
    let params = DeleteParams::default();
    assert_send(&delete_and_finalize(configmaps(client), "a", &params));
}
