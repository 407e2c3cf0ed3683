//! What each verb submits: method, path and query, headers, body — and that the answer is
//! decoded into the verb's return type.

use super::support::{ok_json, response, run, run_one, setup};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod};
use kube_wasm_abi::ResponseMode;
use kube_wasm_client::api::{
    Api, DeleteParams, EvictParams, GetParams, ListParams, LogParams, Patch, PatchParams,
    PostParams,
};
use kube_wasm_client::core::{ApiResource, DynamicObject, GroupVersionKind, discovery::Scope};
use kube_wasm_client::{Client, Config, Error};
use serde_json::json;

fn cm_json(name: &str) -> serde_json::Value {
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default", "resourceVersion": "7"},
        "data": {"k": "v"},
    })
}

fn cms(client: &Client) -> Api<ConfigMap> {
    Api::namespaced(client.clone(), "default")
}

#[test]
fn get_sends_a_get_and_decodes_the_object() {
    let (host, client) = setup();
    let api = cms(&client);
    let (out, sent) = run_one(
        &host,
        async move { api.get("a").await },
        ok_json(cm_json("a")),
    );
    assert_eq!(sent.request.method, "GET");
    assert_eq!(sent.request.uri, "/api/v1/namespaces/default/configmaps/a");
    assert_eq!(sent.request.response, ResponseMode::Whole);
    assert!(sent.body.is_empty());
    let cm = out.expect("get succeeds");
    assert_eq!(cm.metadata.name.as_deref(), Some("a"));
    assert_eq!(
        cm.data.and_then(|d| d.get("k").cloned()).as_deref(),
        Some("v")
    );
}

#[test]
fn get_with_passes_the_resource_version() {
    let (host, client) = setup();
    let api = cms(&client);
    let gp = GetParams::at("42");
    let (_, sent) = run_one(
        &host,
        async move { api.get_with("a", &gp).await },
        ok_json(cm_json("a")),
    );
    assert_eq!(
        sent.request.uri,
        "/api/v1/namespaces/default/configmaps/a?&resourceVersion=42"
    );
}

#[test]
fn an_empty_name_is_refused_before_anything_is_sent() {
    let (host, client) = setup();
    let api = cms(&client);
    let mut task = host.spawn(async move { api.get("").await });
    host.run_until_stalled();
    assert!(host.take_submitted().is_empty());
    assert!(matches!(task.output(), Some(Err(Error::BuildRequest(_)))));
}

#[test]
fn list_encodes_the_list_params() {
    let (host, client) = setup();
    let api: Api<Pod> = Api::all(client);
    let lp = ListParams::default()
        .labels("app=web,tier in (a,b)")
        .fields("spec.nodeName=n1")
        .limit(5);
    let (out, sent) = run_one(
        &host,
        async move { api.list(&lp).await },
        ok_json(json!({
            "apiVersion": "v1", "kind": "PodList", "metadata": {"resourceVersion": "99"},
            "items": [{"metadata": {"name": "p1"}}, {"metadata": {"name": "p2"}}],
        })),
    );
    assert_eq!(sent.request.method, "GET");
    assert_eq!(
        sent.request.uri,
        "/api/v1/pods?&fieldSelector=spec.nodeName%3Dn1&labelSelector=app%3Dweb%2Ctier+in+%28a%2Cb%29&limit=5"
    );
    let list = out.expect("list succeeds");
    assert_eq!(list.metadata.resource_version.as_deref(), Some("99"));
    let names: Vec<_> = list
        .items
        .iter()
        .filter_map(|p| p.metadata.name.clone())
        .collect();
    assert_eq!(names, ["p1", "p2"]);
}

#[test]
fn metadata_requests_ask_for_partial_object_metadata() {
    let (host, client) = setup();
    let api: Api<Deployment> = Api::namespaced(client, "apps");
    let (out, sent) = run_one(
        &host,
        async move { api.get_metadata("d").await },
        ok_json(json!({
            "apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata",
            "metadata": {"name": "d", "labels": {"x": "y"}},
        })),
    );
    assert_eq!(
        sent.request.uri,
        "/apis/apps/v1/namespaces/apps/deployments/d"
    );
    assert_eq!(
        sent.header("accept"),
        Some("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1")
    );
    let meta = out.expect("get_metadata succeeds");
    assert_eq!(
        meta.metadata
            .labels
            .and_then(|l| l.get("x").cloned())
            .as_deref(),
        Some("y")
    );
}

#[test]
fn create_posts_the_object_as_json() {
    let (host, client) = setup();
    let api = cms(&client);
    let cm: ConfigMap = serde_json::from_value(cm_json("new")).expect("valid cm");
    let pp = PostParams {
        dry_run: true,
        field_manager: Some("me".into()),
    };
    let (out, sent) = run_one(
        &host,
        async move { api.create(&pp, &cm).await },
        response(201, cm_json("new").to_string()),
    );
    assert_eq!(sent.request.method, "POST");
    assert_eq!(
        sent.request.uri,
        "/api/v1/namespaces/default/configmaps?&dryRun=All&fieldManager=me"
    );
    assert_eq!(sent.header("content-type"), Some("application/json"));
    assert_eq!(sent.json()["metadata"]["name"], "new");
    assert_eq!(sent.json()["data"]["k"], "v");
    assert!(out.is_ok());
}

#[test]
fn replace_puts_the_object() {
    let (host, client) = setup();
    let api = cms(&client);
    let cm: ConfigMap = serde_json::from_value(cm_json("a")).expect("valid cm");
    let (_, sent) = run_one(
        &host,
        async move { api.replace("a", &PostParams::default(), &cm).await },
        ok_json(cm_json("a")),
    );
    assert_eq!(sent.request.method, "PUT");
    assert_eq!(sent.request.uri, "/api/v1/namespaces/default/configmaps/a?");
    assert_eq!(sent.header("content-type"), Some("application/json"));
    assert_eq!(sent.json()["metadata"]["resourceVersion"], "7");
}

/// Patches `a` with `patch` and `pp`; returns the request sent.
fn sent_patch<P>(pp: PatchParams, patch: Patch<P>) -> super::support::Sent
where
    P: serde::Serialize + std::fmt::Debug + 'static,
{
    let (host, client) = setup();
    let api = cms(&client);
    let (out, sent) = run_one(
        &host,
        async move { api.patch("a", &pp, &patch).await },
        ok_json(cm_json("a")),
    );
    assert!(out.is_ok(), "{out:?}");
    assert_eq!(sent.request.method, "PATCH");
    sent
}

#[test]
fn merge_patch() {
    let sent = sent_patch(
        PatchParams::default(),
        Patch::Merge(json!({"data": {"k": "w"}})),
    );
    assert_eq!(sent.request.uri, "/api/v1/namespaces/default/configmaps/a?");
    assert_eq!(
        sent.header("content-type"),
        Some("application/merge-patch+json")
    );
    assert_eq!(sent.json(), json!({"data": {"k": "w"}}));
}

#[test]
fn json_patch() {
    let ops: json_patch::Patch = serde_json::from_value(json!([
        {"op": "replace", "path": "/data/k", "value": "w"}
    ]))
    .expect("valid json patch");
    let sent = sent_patch(PatchParams::default(), Patch::Json::<()>(ops));
    assert_eq!(
        sent.header("content-type"),
        Some("application/json-patch+json")
    );
    assert_eq!(
        sent.json(),
        json!([{"op": "replace", "path": "/data/k", "value": "w"}])
    );
}

#[test]
fn strategic_merge_patch() {
    let sent = sent_patch(
        PatchParams::default(),
        Patch::Strategic(json!({"data": {"k": null}})),
    );
    assert_eq!(
        sent.header("content-type"),
        Some("application/strategic-merge-patch+json")
    );
    assert_eq!(sent.json(), json!({"data": {"k": null}}));
}

#[test]
fn server_side_apply_with_field_manager_and_force() {
    let sent = sent_patch(
        PatchParams::apply("my-controller").force(),
        Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "w"}})),
    );
    assert_eq!(
        sent.request.uri,
        "/api/v1/namespaces/default/configmaps/a?&force=true&fieldManager=my-controller"
    );
    assert_eq!(
        sent.header("content-type"),
        Some("application/apply-patch+yaml")
    );
    assert_eq!(sent.json()["data"]["k"], "w");
}

#[test]
fn force_without_apply_is_refused_locally() {
    let (host, client) = setup();
    let api = cms(&client);
    let mut task = host.spawn(async move {
        api.patch(
            "a",
            &PatchParams::default().force(),
            &Patch::Merge(json!({})),
        )
        .await
    });
    host.run_until_stalled();
    assert!(host.take_submitted().is_empty());
    assert!(matches!(task.output(), Some(Err(Error::BuildRequest(_)))));
}

#[test]
fn delete_returns_left_while_the_object_still_exists() {
    let (host, client) = setup();
    let api = cms(&client);
    let dp = DeleteParams::foreground();
    let (out, sent) = run_one(
        &host,
        async move { api.delete("a", &dp).await },
        ok_json(cm_json("a")),
    );
    assert_eq!(sent.request.method, "DELETE");
    assert_eq!(sent.request.uri, "/api/v1/namespaces/default/configmaps/a?");
    assert_eq!(sent.json()["propagationPolicy"], "Foreground");
    let left = out
        .expect("delete succeeds")
        .left()
        .expect("an object: Left");
    assert_eq!(left.metadata.name.as_deref(), Some("a"));
}

#[test]
fn delete_returns_right_with_the_status() {
    let (host, client) = setup();
    let api = cms(&client);
    let (out, _) = run_one(
        &host,
        async move { api.delete("a", &DeleteParams::default()).await },
        ok_json(json!({
            "kind": "Status", "apiVersion": "v1", "status": "Success",
            "details": {"name": "a", "kind": "configmaps"},
        })),
    );
    let status = out
        .expect("delete succeeds")
        .right()
        .expect("a Status: Right");
    assert!(status.is_success());
    assert_eq!(status.details.map(|d| d.name), Some("a".to_string()));
}

#[test]
fn delete_collection_encodes_selectors() {
    let (host, client) = setup();
    let api = cms(&client);
    let lp = ListParams::default().labels("app=x");
    let (out, sent) = run_one(
        &host,
        async move { api.delete_collection(&DeleteParams::default(), &lp).await },
        ok_json(json!({"apiVersion": "v1", "kind": "ConfigMapList", "metadata": {}, "items": []})),
    );
    assert_eq!(sent.request.method, "DELETE");
    assert_eq!(
        sent.request.uri,
        "/api/v1/namespaces/default/configmaps?&labelSelector=app%3Dx"
    );
    assert!(sent.body.is_empty(), "default DeleteParams send no body");
    assert!(
        out.expect("succeeds")
            .left()
            .expect("a list")
            .items
            .is_empty()
    );
}

#[test]
fn status_scale_and_generic_subresources() {
    let (host, client) = setup();
    let api: Api<Deployment> = Api::namespaced(client, "ns");
    let deploy = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}});
    let scale = json!({"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "d"}, "spec": {"replicas": 3}});
    let (out, sent) = run(
        &host,
        async move {
            let status = api
                .patch_status(
                    "d",
                    &PatchParams::default(),
                    &Patch::Merge(json!({"status": {}})),
                )
                .await;
            let scale = api.get_scale("d").await;
            let sub = api.get_subresource("status", "d").await;
            (
                status.is_ok(),
                scale.map(|s| s.spec.and_then(|s| s.replicas)),
                sub.is_ok(),
            )
        },
        |sent| {
            if sent.request.uri.contains("/scale") {
                ok_json(scale.clone())
            } else {
                ok_json(deploy.clone())
            }
        },
    );
    let uris: Vec<_> = sent
        .iter()
        .map(|s| (s.request.method.as_str(), s.request.uri.as_str()))
        .collect();
    assert_eq!(
        uris,
        [
            ("PATCH", "/apis/apps/v1/namespaces/ns/deployments/d/status?"),
            ("GET", "/apis/apps/v1/namespaces/ns/deployments/d/scale"),
            ("GET", "/apis/apps/v1/namespaces/ns/deployments/d/status"),
        ]
    );
    assert!(out.0 && out.2);
    assert_eq!(out.1.expect("scale decodes"), Some(3));
}

#[test]
fn logs_are_text_and_evict_posts_an_eviction() {
    let (host, client) = setup();
    let api: Api<Pod> = Api::namespaced(client, "ns");
    let lp = LogParams {
        container: Some("main".into()),
        tail_lines: Some(10),
        ..LogParams::default()
    };
    let ((logs, evicted), sent) = run(
        &host,
        async move {
            let logs = api.logs("p", &lp).await;
            let evicted = api.evict("p", &EvictParams::default()).await;
            (logs, evicted)
        },
        |sent| {
            if sent.request.uri.contains("/log") {
                response(200, "line 1\nline 2\n")
            } else {
                ok_json(json!({"kind": "Status", "apiVersion": "v1", "status": "Success"}))
            }
        },
    );
    assert_eq!(
        sent[0].request.uri,
        "/api/v1/namespaces/ns/pods/p/log?&container=main&tailLines=10"
    );
    assert_eq!(logs.expect("logs succeed"), "line 1\nline 2\n");
    assert_eq!(sent[1].request.method, "POST");
    assert_eq!(
        sent[1].request.uri,
        "/api/v1/namespaces/ns/pods/p/eviction?"
    );
    assert_eq!(sent[1].json()["metadata"]["name"], "p");
    assert!(evicted.expect("evict succeeds").is_success());
}

#[test]
fn cordon_patches_the_node() {
    let (host, client) = setup();
    let api: Api<Node> = Api::all(client);
    let (out, sent) = run_one(
        &host,
        async move { api.cordon("n1").await },
        ok_json(
            json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}, "spec": {"unschedulable": true}}),
        ),
    );
    assert_eq!(sent.request.method, "PATCH");
    assert_eq!(sent.request.uri, "/api/v1/nodes/n1?");
    assert_eq!(sent.json(), json!({"spec": {"unschedulable": true}}));
    assert!(out.is_ok());
}

#[test]
fn dynamic_apis_build_the_same_urls() {
    let client = Client::for_host("team");
    let ar = ApiResource::from_gvk(&GroupVersionKind::gvk("apps", "v1", "Deployment"));
    let all: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
    assert_eq!(all.resource_url(), "/apis/apps/v1/deployments");
    let ns: Api<DynamicObject> = Api::default_namespaced_with(client.clone(), &ar);
    assert_eq!(
        ns.resource_url(),
        "/apis/apps/v1/namespaces/team/deployments"
    );
    assert_eq!(ns.namespace(), Some("team"));
    let dynamic =
        Api::<DynamicObject>::dynamic(client.clone(), &ar, &Scope::Namespaced).constrain("x");
    assert_eq!(
        dynamic.resource_url(),
        "/apis/apps/v1/namespaces/x/deployments"
    );
    let node_ar = ApiResource::erase::<Node>(&());
    let nodes =
        Api::<DynamicObject>::dynamic(client.clone(), &node_ar, &Scope::Cluster).constrain("x");
    assert_eq!(nodes.resource_url(), "/api/v1/nodes");
    let pods: Api<Pod> = Api::default_namespaced(client);
    assert_eq!(pods.resource_url(), "/api/v1/namespaces/team/pods");
    assert_eq!(pods.clone().unconstrain().resource_url(), "/api/v1/pods");
    let client: Client = pods.into();
    assert_eq!(client.default_namespace(), "team");
}

#[test]
fn config_headers_go_with_every_request() {
    let (host, _) = setup();
    let mut config = Config::new("https://cluster.example:6443".parse().expect("valid uri"));
    config.default_namespace = "ops".into();
    config.headers.push((
        http::HeaderName::from_static("x-tenant"),
        http::HeaderValue::from_static("blue"),
    ));
    let client = Client::try_from(config).expect("valid config");
    assert_eq!(client.default_namespace(), "ops");
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let (_, sent) = run_one(
        &host,
        async move { api.get("a").await },
        ok_json(cm_json("a")),
    );
    assert_eq!(sent.request.uri, "/api/v1/namespaces/ops/configmaps/a");
    assert_eq!(sent.header("x-tenant"), Some("blue"));
}

#[test]
fn raw_requests_keep_path_query_and_headers() {
    let (host, client) = setup();
    let request = http::Request::post("https://ignored.example/apis/x/v1/things?a=1&b=2")
        .header("content-type", "application/json")
        .header("x-custom", "yes")
        .body(br#"{"hello":1}"#.to_vec())
        .expect("valid request");
    let (out, sent) = run_one(
        &host,
        async move { client.request_text(request).await },
        response(200, "plain"),
    );
    assert_eq!(out.expect("succeeds"), "plain");
    assert_eq!(sent.request.method, "POST");
    assert_eq!(sent.request.uri, "/apis/x/v1/things?a=1&b=2");
    assert_eq!(sent.header("x-custom"), Some("yes"));
    assert_eq!(sent.body, br#"{"hello":1}"#);
}

#[test]
fn apiserver_version_gets_version() {
    let (host, client) = setup();
    let (out, sent) = run_one(
        &host,
        async move { client.apiserver_version().await },
        ok_json(json!({
            "major": "1", "minor": "30", "gitVersion": "v1.30.0", "gitCommit": "abc",
            "gitTreeState": "clean", "buildDate": "2024-01-01T00:00:00Z", "goVersion": "go1.22",
            "compiler": "gc", "platform": "linux/amd64",
        })),
    );
    assert_eq!(
        (sent.request.method.as_str(), sent.request.uri.as_str()),
        ("GET", "/version")
    );
    assert_eq!(out.expect("decodes").git_version, "v1.30.0");
}
