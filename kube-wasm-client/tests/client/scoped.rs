//! The `unstable-client` methods `Client::get`, `Client::list` and `Client::fetch` at each
//! scope: the request each submits and how the answer comes back.

use super::support::{ok_json, response, run, run_one, setup, status_body};
use k8s_openapi::api::core::v1::{
    LocalObjectReference, Namespace as NamespaceObject, Node, ObjectReference, Pod, Secret, Service,
};
use k8s_openapi::api::rbac::v1::ClusterRole;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube_wasm_client::api::ListParams;
use kube_wasm_client::client::scope::{Cluster, Namespace, NamespacedRef};
use kube_wasm_client::core::{DynamicObject, ObjectMeta};
use kube_wasm_client::{Error, Resource, ResourceExt};
use serde_json::json;

fn object(api_version: &str, kind: &str, name: &str, namespace: Option<&str>) -> serde_json::Value {
    json!({
        "apiVersion": api_version, "kind": kind,
        "metadata": {"name": name, "namespace": namespace},
    })
}

fn list_of(kind: &str, items: Vec<serde_json::Value>) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": format!("{kind}List"), "metadata": {"resourceVersion": "9"}, "items": items})
}

#[test]
fn get_reads_a_namespaced_object_from_its_namespace() {
    let (host, client) = setup();
    let (out, sent) = run_one(
        &host,
        async move {
            client
                .get::<Service>("kubernetes", &Namespace::from("default"))
                .await
        },
        ok_json(object("v1", "Service", "kubernetes", Some("default"))),
    );
    assert_eq!(sent.request.method, "GET");
    assert_eq!(
        sent.request.uri,
        "/api/v1/namespaces/default/services/kubernetes"
    );
    assert_eq!(out.expect("get succeeds").name_any(), "kubernetes");
}

#[test]
fn get_reads_a_cluster_scoped_object_at_cluster_scope() {
    let (host, client) = setup();
    let (out, sent) = run_one(
        &host,
        async move { client.get::<ClusterRole>("cluster-admin", &Cluster).await },
        ok_json(object(
            "rbac.authorization.k8s.io/v1",
            "ClusterRole",
            "cluster-admin",
            None,
        )),
    );
    assert_eq!(
        sent.request.uri,
        "/apis/rbac.authorization.k8s.io/v1/clusterroles/cluster-admin"
    );
    assert_eq!(out.expect("get succeeds").name_any(), "cluster-admin");
}

#[test]
fn get_of_a_missing_object_is_a_404_api_error() {
    let (host, client) = setup();
    let (out, _) = run_one(
        &host,
        async move { client.get::<Node>("gone", &Cluster).await },
        response(
            404,
            status_body(404, "NotFound", "nodes \"gone\" not found"),
        ),
    );
    match out {
        Err(Error::Api(status)) => assert!(status.is_not_found(), "{status:?}"),
        other => panic!("expected a 404 Api error, got {other:?}"),
    }
}

#[test]
fn get_with_an_empty_name_fails_before_any_request() {
    let (host, client) = setup();
    let (out, sent) = run(
        &host,
        async move { client.get::<Node>("", &Cluster).await },
        |_| unreachable!("no request is sent"),
    );
    assert!(sent.is_empty());
    assert!(matches!(out, Err(Error::BuildRequest(_))), "{out:?}");
}

#[test]
fn list_at_cluster_scope_lists_across_namespaces_with_the_params() {
    let (host, client) = setup();
    let lp = ListParams::default().labels("app=web").limit(2);
    let (out, sent) = run_one(
        &host,
        async move { client.list::<Pod>(&lp, &Cluster).await },
        ok_json(list_of(
            "Pod",
            vec![
                object("v1", "Pod", "a", Some("one")),
                object("v1", "Pod", "b", Some("two")),
            ],
        )),
    );
    assert_eq!(
        sent.request.uri,
        "/api/v1/pods?&labelSelector=app%3Dweb&limit=2"
    );
    let pods = out.expect("list succeeds");
    let names: Vec<_> = pods
        .iter()
        .map(|p| format!("{}/{}", p.namespace().unwrap_or_default(), p.name_any()))
        .collect();
    assert_eq!(names, ["one/a", "two/b"]);
    assert_eq!(pods.metadata.resource_version.as_deref(), Some("9"));
}

#[test]
fn list_in_a_namespace_made_from_a_namespace_object() {
    let (host, client) = setup();
    let ns = NamespaceObject {
        metadata: ObjectMeta {
            name: Some("team-a".into()),
            ..ObjectMeta::default()
        },
        ..NamespaceObject::default()
    };
    let scope = Namespace::try_from(&ns).expect("the object has a name");
    let (out, sent) = run_one(
        &host,
        async move { client.list::<Secret>(&ListParams::default(), &scope).await },
        ok_json(list_of("Secret", vec![])),
    );
    assert_eq!(sent.request.uri, "/api/v1/namespaces/team-a/secrets?");
    assert!(out.expect("list succeeds").items.is_empty());
    let unnamed = Namespace::try_from(&NamespaceObject::default()).expect_err("no name");
    assert_eq!(unnamed.to_string(), "Missing Namespace Name");
}

#[test]
fn fetch_follows_an_object_reference_typed_or_dynamic() {
    let (host, client) = setup();
    let svc: Service =
        serde_json::from_value(object("v1", "Service", "web", Some("prod"))).expect("a service");
    let reference = svc.object_ref(&());
    let typed_client = client.clone();
    let typed_ref = reference.clone();
    let (out, sent) = run_one(
        &host,
        async move { typed_client.fetch::<Service>(&typed_ref).await },
        ok_json(object("v1", "Service", "web", Some("prod"))),
    );
    assert_eq!(sent.request.uri, "/api/v1/namespaces/prod/services/web");
    assert_eq!(out.expect("fetch succeeds").name_any(), "web");

    let (out, sent) = run_one(
        &host,
        async move { client.fetch::<DynamicObject>(&reference).await },
        ok_json(object("v1", "Service", "web", Some("prod"))),
    );
    assert_eq!(sent.request.uri, "/api/v1/namespaces/prod/services/web");
    let dynamic = out.expect("fetch succeeds");
    assert_eq!(dynamic.types.map(|t| t.kind).as_deref(), Some("Service"));
}

#[test]
fn fetch_of_a_reference_with_the_wrong_type_is_a_serde_error() {
    let (host, client) = setup();
    let reference = ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Service".into()),
        name: Some("web".into()),
        namespace: Some("prod".into()),
        ..ObjectReference::default()
    };
    let (out, sent) = run_one(
        &host,
        async move { client.fetch::<Pod>(&reference).await },
        // As the API server writes it: `kind` first.
        response(
            200,
            r#"{"kind":"Service","apiVersion":"v1","metadata":{"name":"web","namespace":"prod"}}"#,
        ),
    );
    assert_eq!(sent.request.uri, "/api/v1/namespaces/prod/services/web");
    match out {
        Err(err @ Error::SerdeError(_)) => assert_eq!(
            err.to_string(),
            "Error deserializing response: invalid value: string \"Service\", expected Pod at line 1 column 17"
        ),
        other => panic!("expected a SerdeError, got {other:?}"),
    }
}

#[test]
fn fetch_of_a_reference_without_a_name_is_ref_resolve() {
    let (host, client) = setup();
    let reference = ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Service".into()),
        ..ObjectReference::default()
    };
    let (out, sent) = run(
        &host,
        async move { client.fetch::<Service>(&reference).await },
        |_| unreachable!("no request is sent"),
    );
    assert!(sent.is_empty());
    match out {
        Err(err @ Error::RefResolve(_)) => {
            assert_eq!(
                err.to_string(),
                "Reference resolve error: Reference is empty"
            );
        }
        other => panic!("expected RefResolve, got {other:?}"),
    }
}

#[test]
fn fetch_follows_owner_references_to_cluster_scoped_and_placed_owners() {
    let (host, client) = setup();
    let node_owner = OwnerReference {
        api_version: "v1".into(),
        kind: "Node".into(),
        name: "worker-1".into(),
        uid: "u1".into(),
        ..OwnerReference::default()
    };
    let rs_owner = OwnerReference {
        api_version: "apps/v1".into(),
        kind: "ReplicaSet".into(),
        name: "web-5d9".into(),
        uid: "u2".into(),
        ..OwnerReference::default()
    };
    let (out, sent) = run(
        &host,
        async move {
            let node = client.fetch::<Node>(&node_owner).await?;
            let placed = NamespacedRef::<DynamicObject>::within(&rs_owner, "prod".to_string());
            let rs = client.fetch::<DynamicObject>(&placed).await?;
            Ok::<_, Error>((node.name_any(), rs.name_any()))
        },
        |sent| {
            if sent.request.uri.contains("/nodes/") {
                ok_json(object("v1", "Node", "worker-1", None))
            } else {
                ok_json(object("apps/v1", "ReplicaSet", "web-5d9", Some("prod")))
            }
        },
    );
    let uris: Vec<_> = sent.iter().map(|s| s.request.uri.as_str()).collect();
    assert_eq!(
        uris,
        [
            "/api/v1/nodes/worker-1",
            "/apis/apps/v1/namespaces/prod/replicasets/web-5d9"
        ]
    );
    assert_eq!(
        out.expect("both fetches succeed"),
        ("worker-1".to_string(), "web-5d9".to_string())
    );
}

#[test]
fn fetch_follows_a_local_object_reference_placed_in_a_namespace() {
    let (host, client) = setup();
    let local = LocalObjectReference {
        name: "pull-secret".into(),
    };
    let (out, sent) = run_one(
        &host,
        async move {
            client
                .fetch::<Secret>(&local.within(Some("prod".to_string())))
                .await
        },
        ok_json(object("v1", "Secret", "pull-secret", Some("prod"))),
    );
    assert_eq!(
        sent.request.uri,
        "/api/v1/namespaces/prod/secrets/pull-secret"
    );
    assert_eq!(out.expect("fetch succeeds").name_any(), "pull-secret");
}

/// The futures are `Send` where kube's are, so they can be spawned on tokio.
#[test]
fn the_futures_are_send() {
    fn assert_send<T: Send>(_: &T) {}
    let client = kube_wasm_client::Client::for_host("default");
    let lp = ListParams::default();
    let ns = Namespace::from("a");
    let reference = ObjectReference::default();
    assert_send(&client.get::<Pod>("p", &ns));
    assert_send(&client.list::<Pod>(&lp, &Cluster));
    assert_send(&client.fetch::<Pod>(&reference));
}
