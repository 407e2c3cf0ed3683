//! Discovery: the requests `Discovery::run` / `run_aggregated` and the oneshot functions
//! make, and the groups they build, from documents shaped as a v1.20 kube-apiserver sends
//! them (trimmed to a few resources), with a CRD group `stable.example.com`.

use super::support::{Answer, Sent, ok_json, response, run, setup, status_body};
use kube_wasm_client::Error;
use kube_wasm_client::core::discovery::v2::ACCEPT_AGGREGATED_DISCOVERY_V2;
use kube_wasm_client::core::{DynamicObject, GroupVersion, GroupVersionKind, TypeMeta};
use kube_wasm_client::discovery::{self, ApiGroup, Discovery, Scope, oneshot, verbs};
use kube_wasm_client::error::DiscoveryError;
use serde_json::{Value, json};

/// `GET /api` of a v1.20 apiserver.
fn core_versions() -> Value {
    json!({"kind": "APIVersions", "versions": ["v1"],
           "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "10.0.2.15:6443"}]})
}

/// A `groups` entry of `GET /apis`; the first version is the preferred one.
fn group(name: &str, versions: &[&str]) -> Value {
    let gv = |v: &str| json!({"groupVersion": format!("{name}/{v}"), "version": v});
    json!({"name": name, "versions": versions.iter().map(|v| gv(v)).collect::<Vec<_>>(),
           "preferredVersion": gv(versions[0])})
}

/// `GET /apis` of a v1.20 apiserver with one CRD installed (trimmed).
fn api_groups() -> Value {
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": [
        group("apps", &["v1"]),
        group("batch", &["v1", "v1beta1"]),
        group("stable.example.com", &["v1", "v1beta1"]),
    ]})
}

const ALL_VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

/// One `resources` entry of an `APIResourceList`, as v1.20 writes it.
fn res(name: &str, namespaced: bool, kind: &str, verbs: &[&str]) -> Value {
    json!({"name": name, "singularName": "", "namespaced": namespaced, "kind": kind,
           "verbs": verbs, "storageVersionHash": "qFsyl6wFWjQ="})
}

fn resource_list(group_version: &str, resources: Vec<Value>) -> Value {
    json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version,
           "resources": resources})
}

/// The answer of a v1.20 apiserver to the discovery GETs; 404 for anything else.
fn apiserver(sent: &Sent) -> Answer {
    assert_eq!(sent.request.method, "GET");
    let body = match sent.request.uri.as_str() {
        "/api" => core_versions(),
        "/apis" => api_groups(),
        "/api/v1" => resource_list(
            "v1",
            vec![
                res("bindings", true, "Binding", &["create"]),
                res("configmaps", true, "ConfigMap", ALL_VERBS),
                res("namespaces", false, "Namespace", ALL_VERBS),
                res("nodes", false, "Node", ALL_VERBS),
                res("pods", true, "Pod", ALL_VERBS),
                {
                    let mut eviction = res("pods/eviction", true, "Eviction", &["create"]);
                    eviction["group"] = json!("policy");
                    eviction["version"] = json!("v1beta1");
                    eviction
                },
                res("pods/log", true, "Pod", &["get"]),
                res("pods/status", true, "Pod", &["get", "patch", "update"]),
            ],
        ),
        "/apis/apps/v1" => resource_list(
            "apps/v1",
            vec![
                res("deployments", true, "Deployment", ALL_VERBS),
                {
                    let mut scale = res(
                        "deployments/scale",
                        true,
                        "Scale",
                        &["get", "patch", "update"],
                    );
                    scale["group"] = json!("autoscaling");
                    scale["version"] = json!("v1");
                    scale
                },
                res(
                    "deployments/status",
                    true,
                    "Deployment",
                    &["get", "patch", "update"],
                ),
                res("statefulsets", true, "StatefulSet", ALL_VERBS),
            ],
        ),
        "/apis/batch/v1" => resource_list("batch/v1", vec![res("jobs", true, "Job", ALL_VERBS)]),
        "/apis/batch/v1beta1" => resource_list(
            "batch/v1beta1",
            vec![res("cronjobs", true, "CronJob", ALL_VERBS)],
        ),
        "/apis/stable.example.com/v1" => resource_list(
            "stable.example.com/v1",
            vec![
                res("crontabs", true, "CronTab", ALL_VERBS),
                res(
                    "crontabs/status",
                    true,
                    "CronTab",
                    &["get", "patch", "update"],
                ),
            ],
        ),
        "/apis/stable.example.com/v1beta1" => resource_list(
            "stable.example.com/v1beta1",
            vec![res("crontabs", true, "CronTab", ALL_VERBS)],
        ),
        _ => {
            return response(
                404,
                status_body(
                    404,
                    "NotFound",
                    "the server could not find the requested resource",
                ),
            );
        }
    };
    ok_json(body)
}

fn uris(sent: &[Sent]) -> Vec<&str> {
    sent.iter().map(|s| s.request.uri.as_str()).collect()
}

fn names<'a>(groups: impl IntoIterator<Item = &'a ApiGroup>) -> Vec<&'a str> {
    groups.into_iter().map(ApiGroup::name).collect()
}

#[test]
fn run_queries_every_group_version_then_the_core_group() {
    let (host, client) = setup();
    let (discovery, sent) = run(&host, Discovery::new(client).run(), apiserver);
    assert_eq!(
        uris(&sent),
        [
            "/apis",
            "/apis/apps/v1",
            "/apis/batch/v1",
            "/apis/batch/v1beta1",
            "/apis/stable.example.com/v1",
            "/apis/stable.example.com/v1beta1",
            "/api",
            "/api/v1",
        ]
    );
    assert!(sent.iter().all(|s| s.header("accept").is_none()));
    let discovery = discovery.expect("discovery runs");
    assert_eq!(
        names(discovery.groups_alphabetical()),
        ["", "apps", "batch", "stable.example.com"]
    );
    assert_eq!(discovery.groups().count(), 4);
    assert!(discovery.has_group("apps") && discovery.has_group(ApiGroup::CORE_GROUP));
    assert!(!discovery.has_group("policy"));

    // The core group: preferred v1, subresources folded into their resource.
    let core = discovery.get("").expect("core group");
    assert_eq!(core.preferred_version(), Some("v1"));
    let kinds: Vec<String> = core
        .recommended_resources()
        .into_iter()
        .map(|(ar, _)| ar.kind)
        .collect();
    assert_eq!(kinds, ["Binding", "ConfigMap", "Namespace", "Node", "Pod"]);
    let (pod, pod_caps) = core.recommended_kind("Pod").expect("pods");
    assert_eq!(
        (
            pod.group.as_str(),
            pod.version.as_str(),
            pod.api_version.as_str(),
            pod.plural.as_str()
        ),
        ("", "v1", "v1", "pods")
    );
    assert_eq!(pod_caps.scope, Scope::Namespaced);
    assert!(pod_caps.supports_operation(verbs::WATCH));
    let subs: Vec<(&str, &str, &str)> = pod_caps
        .subresources
        .iter()
        .map(|(ar, _)| (ar.plural.as_str(), ar.group.as_str(), ar.kind.as_str()))
        .collect();
    assert_eq!(
        subs,
        [
            ("eviction", "policy", "Eviction"),
            ("log", "", "Pod"),
            ("status", "", "Pod")
        ]
    );
    assert_eq!(pod_caps.subresources[1].1.operations, ["get"]);
    let (_, node_caps) = core.recommended_kind("Node").expect("nodes");
    assert_eq!(node_caps.scope, Scope::Cluster);
    assert!(
        !core
            .recommended_kind("Binding")
            .expect("bindings")
            .1
            .supports_operation(verbs::LIST)
    );

    // A group with two versions: versions by priority, preferred from the server.
    let batch = discovery.get("batch").expect("batch");
    assert_eq!(batch.versions().collect::<Vec<_>>(), ["v1", "v1beta1"]);
    assert_eq!(batch.preferred_version_or_latest(), "v1");
    assert!(batch.recommended_kind("CronJob").is_none());
    let mut stable: Vec<(String, String)> = batch
        .resources_by_stability()
        .into_iter()
        .map(|(ar, _)| (ar.kind, ar.version))
        .collect();
    stable.sort();
    assert_eq!(
        stable,
        [
            ("CronJob".into(), "v1beta1".into()),
            ("Job".into(), "v1".into())
        ]
    );

    // The CRD group.
    let crd = discovery.get("stable.example.com").expect("CRD group");
    let (crontab, caps) = crd.recommended_kind("CronTab").expect("crontabs");
    assert_eq!(crontab.api_version, "stable.example.com/v1");
    assert_eq!(crontab.plural, "crontabs");
    assert_eq!(caps.subresources.len(), 1);
    assert_eq!(crd.versioned_resources("v1beta1").len(), 1);
    assert!(crd.versioned_resources("v2").is_empty());

    // The scale subresource keeps its own group and version.
    let (_, deploy_caps) = discovery
        .get("apps")
        .and_then(|g| g.recommended_kind("Deployment"))
        .expect("deployments");
    let (scale, _) = &deploy_caps.subresources[0];
    assert_eq!(
        (
            scale.plural.as_str(),
            scale.group.as_str(),
            scale.version.as_str(),
            scale.api_version.as_str()
        ),
        ("scale", "autoscaling", "v1", "apps/v1")
    );
}

#[test]
fn resolve_gvk_typemeta_and_object() {
    let (host, client) = setup();
    let (discovery, _) = run(&host, Discovery::new(client).run(), apiserver);
    let discovery = discovery.expect("discovery runs");
    let gvk = GroupVersionKind::gvk("stable.example.com", "v1beta1", "CronTab");
    let (ar, caps) = discovery.resolve_gvk(&gvk).expect("CRD kind resolves");
    assert_eq!(
        (ar.api_version.as_str(), ar.plural.as_str()),
        ("stable.example.com/v1beta1", "crontabs")
    );
    assert_eq!(caps.scope, Scope::Namespaced);
    let (ar, _) = discovery
        .resolve_gvk(&GroupVersionKind::gvk("", "v1", "Namespace"))
        .expect("core kind resolves");
    assert_eq!(ar.plural, "namespaces");
    for missing in [
        GroupVersionKind::gvk("stable.example.com", "v2", "CronTab"),
        GroupVersionKind::gvk("apps", "v1", "DaemonSet"),
        GroupVersionKind::gvk("policy", "v1beta1", "Eviction"),
    ] {
        assert!(discovery.resolve_gvk(&missing).is_none(), "{missing:?}");
    }
    let tm = TypeMeta {
        api_version: "apps/v1".into(),
        kind: "StatefulSet".into(),
    };
    assert_eq!(
        discovery.resolve_typemeta(&tm).map(|(ar, _)| ar.plural),
        Some("statefulsets".to_string())
    );
    let mut obj = DynamicObject {
        types: Some(tm),
        metadata: Default::default(),
        data: json!({}),
    };
    assert!(discovery.resolve_object(&obj).is_some());
    obj.types = None;
    assert!(discovery.resolve_object(&obj).is_none());
}

#[test]
fn filter_queries_only_the_listed_groups() {
    let (host, client) = setup();
    let (discovery, sent) = run(
        &host,
        Discovery::new(client).filter(&["stable.example.com"]).run(),
        apiserver,
    );
    assert_eq!(
        uris(&sent),
        [
            "/apis",
            "/apis/stable.example.com/v1",
            "/apis/stable.example.com/v1beta1"
        ]
    );
    assert_eq!(
        names(discovery.expect("runs").groups_alphabetical()),
        ["stable.example.com"]
    );

    let (host, client) = setup();
    let (discovery, sent) = run(
        &host,
        Discovery::new(client).filter(&["", "apps"]).run(),
        apiserver,
    );
    assert_eq!(uris(&sent), ["/apis", "/apis/apps/v1", "/api", "/api/v1"]);
    assert_eq!(
        names(discovery.expect("runs").groups_alphabetical()),
        ["", "apps"]
    );
}

#[test]
fn exclude_skips_the_listed_groups() {
    let (host, client) = setup();
    let (discovery, sent) = run(
        &host,
        Discovery::new(client).exclude(&["", "batch"]).run(),
        apiserver,
    );
    assert_eq!(
        uris(&sent),
        [
            "/apis",
            "/apis/apps/v1",
            "/apis/stable.example.com/v1",
            "/apis/stable.example.com/v1beta1"
        ]
    );
    let discovery = discovery.expect("runs");
    assert_eq!(
        names(discovery.groups_alphabetical()),
        ["apps", "stable.example.com"]
    );
    assert!(discovery.get("").is_none());
}

#[test]
fn a_failing_request_fails_the_run() {
    let (host, client) = setup();
    let (discovery, sent) = run(&host, Discovery::new(client).run(), |sent| {
        if sent.request.uri == "/apis/batch/v1beta1" {
            response(403, status_body(403, "Forbidden", "forbidden"))
        } else {
            apiserver(sent)
        }
    });
    assert!(matches!(discovery, Err(Error::Api(s)) if s.code == 403));
    assert_eq!(sent.len(), 4, "the run stops at the failure");
}

#[test]
fn a_group_without_versions_is_an_empty_api_group() {
    let (host, client) = setup();
    let (discovery, _) = run(&host, Discovery::new(client).run(), |sent| {
        if sent.request.uri == "/apis" {
            ok_json(json!({"kind": "APIGroupList", "apiVersion": "v1",
                           "groups": [{"name": "empty.example.com", "versions": []}]}))
        } else {
            apiserver(sent)
        }
    });
    assert!(matches!(
        discovery,
        Err(Error::Discovery(DiscoveryError::EmptyApiGroup(name))) if name == "empty.example.com"
    ));
}

#[test]
fn pinned_kind_makes_one_request() {
    let (host, client) = setup();
    let gvk = GroupVersionKind::gvk("stable.example.com", "v1", "CronTab");
    let ((ar, caps), sent) = run(
        &host,
        async move {
            discovery::pinned_kind(&client, &gvk)
                .await
                .expect("resolves")
        },
        apiserver,
    );
    assert_eq!(uris(&sent), ["/apis/stable.example.com/v1"]);
    assert_eq!(
        (ar.kind.as_str(), ar.plural.as_str()),
        ("CronTab", "crontabs")
    );
    assert_eq!(caps.subresources[0].0.plural, "status");

    let (host, client) = setup();
    let gvk = GroupVersionKind::gvk("", "v1", "Pod");
    let ((ar, _), sent) = run(
        &host,
        async move { oneshot::pinned_kind(&client, &gvk).await.expect("resolves") },
        apiserver,
    );
    assert_eq!(uris(&sent), ["/api/v1"]);
    assert_eq!(
        ar.plural, "pods",
        "a subresource of the same kind is not picked"
    );
}

#[test]
fn pinned_kind_errors() {
    let (host, client) = setup();
    let gvk = GroupVersionKind::gvk("apps", "v1", "DaemonSet");
    let (out, _) = run(
        &host,
        async move { discovery::pinned_kind(&client, &gvk).await },
        apiserver,
    );
    assert!(matches!(
        out,
        Err(Error::Discovery(DiscoveryError::MissingKind(s))) if s.contains("DaemonSet")
    ));

    let (host, client) = setup();
    let gvk = GroupVersionKind::gvk("nope.example.com", "v1", "Thing");
    let (out, _) = run(
        &host,
        async move { discovery::pinned_kind(&client, &gvk).await },
        apiserver,
    );
    assert!(matches!(out, Err(Error::Api(s)) if s.is_not_found()));
}

#[test]
fn pinned_group_and_group() {
    let (host, client) = setup();
    let gv: GroupVersion = "batch/v1beta1".parse().expect("valid gv");
    let (group, sent) = run(
        &host,
        async move { discovery::pinned_group(&client, &gv).await },
        apiserver,
    );
    assert_eq!(uris(&sent), ["/apis/batch/v1beta1"]);
    let group = group.expect("resolves");
    assert_eq!(group.name(), "batch");
    assert_eq!(group.preferred_version(), Some("v1beta1"));
    assert!(group.recommended_kind("CronJob").is_some());

    let (host, client) = setup();
    let (group, sent) = run(
        &host,
        async move { discovery::group(&client, "batch").await },
        apiserver,
    );
    assert_eq!(
        uris(&sent),
        ["/apis", "/apis/batch/v1", "/apis/batch/v1beta1"]
    );
    assert_eq!(group.expect("resolves").versions().count(), 2);

    let (host, client) = setup();
    let (group, sent) = run(
        &host,
        async move { discovery::group(&client, "").await },
        apiserver,
    );
    assert_eq!(uris(&sent), ["/api", "/api/v1"]);
    assert_eq!(group.expect("resolves").preferred_version(), Some("v1"));

    let (host, client) = setup();
    let (group, _) = run(
        &host,
        async move { discovery::group(&client, "nope.example.com").await },
        apiserver,
    );
    assert!(matches!(
        group,
        Err(Error::Discovery(DiscoveryError::MissingApiGroup(g))) if g == "nope.example.com"
    ));
}

#[test]
fn run_aggregated_on_a_server_without_it_finds_no_groups_as_kube() {
    let (host, client) = setup();
    let (discovery, sent) = run(&host, Discovery::new(client).run_aggregated(), apiserver);
    assert_eq!(uris(&sent), ["/apis", "/api"]);
    assert!(
        sent.iter()
            .all(|s| s.header("accept") == Some(ACCEPT_AGGREGATED_DISCOVERY_V2))
    );
    assert_eq!(discovery.expect("runs").groups().count(), 0);
}

#[test]
fn run_aggregated_reads_aggregated_documents() {
    let resource = |plural: &str, kind: &str, scope: &str| {
        json!({"resource": plural, "responseKind": {"group": "", "version": "", "kind": kind},
               "scope": scope, "verbs": ["get", "list", "watch"],
               "subresources": [{"subresource": "status",
                                 "responseKind": {"group": "", "version": "", "kind": kind},
                                 "verbs": ["get", "patch"]}]})
    };
    let apis = json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {}, "items": [
        {"metadata": {"name": "stable.example.com"}, "versions": [
            {"version": "v1beta1", "resources": [resource("crontabs", "CronTab", "Namespaced")], "freshness": "Current"},
            {"version": "v1", "resources": [resource("crontabs", "CronTab", "Namespaced")], "freshness": "Current"},
        ]},
        {"metadata": {"name": "batch"}, "versions": [
            {"version": "v1", "resources": [resource("jobs", "Job", "Namespaced")]},
        ]},
    ]});
    let core = json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2",
    "metadata": {}, "items": [{"metadata": {}, "versions": [
        {"version": "v1", "resources": [resource("nodes", "Node", "Cluster")]},
    ]}]});
    let (host, client) = setup();
    let (discovery, sent) = run(
        &host,
        Discovery::new(client).exclude(&["batch"]).run_aggregated(),
        |sent| match sent.request.uri.as_str() {
            "/apis" => ok_json(apis.clone()),
            "/api" => ok_json(core.clone()),
            other => panic!("unexpected request {other}"),
        },
    );
    assert_eq!(uris(&sent), ["/apis", "/api"]);
    let discovery = discovery.expect("runs");
    assert_eq!(
        names(discovery.groups_alphabetical()),
        ["", "stable.example.com"]
    );
    let crd = discovery.get("stable.example.com").expect("CRD group");
    // The first listed version is preferred; versions are still sorted by priority.
    assert_eq!(crd.preferred_version(), Some("v1beta1"));
    assert_eq!(crd.versions().collect::<Vec<_>>(), ["v1", "v1beta1"]);
    let (ar, caps) = crd.recommended_kind("CronTab").expect("crontabs");
    assert_eq!(ar.api_version, "stable.example.com/v1beta1");
    assert_eq!(caps.scope, Scope::Namespaced);
    assert_eq!(caps.subresources[0].0.plural, "status");
    assert_eq!(caps.subresources[0].1.scope, Scope::Namespaced);
    let (node, node_caps) = discovery
        .resolve_gvk(&GroupVersionKind::gvk("", "v1", "Node"))
        .expect("core kind");
    assert_eq!(
        (node.api_version.as_str(), node.plural.as_str()),
        ("v1", "nodes")
    );
    assert_eq!(node_caps.scope, Scope::Cluster);
}
