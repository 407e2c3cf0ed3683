//! Discovery of the built-in groups and of a freshly created CRD, `Api<DynamicObject>` on it,
//! and `Client::request_stream` over a long response: the api-checks guest's `discovery`
//! mode, natively (real kube 5.0 + tokio) and as a wasm module in the host shim, against the
//! real apiserver — same observations, line for line, and the ones Kubernetes should give.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, PostParams};
use kube_wasm_e2e::client;
use kube_wasm_e2e::objects::wait_crd_established;
use kube_wasm_e2e::side_by_side::run_both_to_end;
use serde_json::json;
use std::time::Duration;

const KIND: &str = "Widget";

/// Creates a namespaced CRD `widgets.<group>` (v1, with a status subresource) in a group of
/// its own — CRDs are cluster-wide and other tests share the cluster — and waits until it is
/// established. Returns the group.
async fn create_crd(client: &kube::Client) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    let group = format!(
        "d{}-{nanos}.discovery.kube-wasm.example.com",
        std::process::id()
    );
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "metadata": { "name": format!("widgets.{group}") },
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": { "kind": KIND, "plural": "widgets", "singular": "widget", "listKind": "WidgetList" },
            "versions": [{
                "name": "v1",
                "served": true,
                "storage": true,
                "subresources": { "status": {} },
                "schema": { "openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": { "type": "object", "x-kubernetes-preserve-unknown-fields": true },
                        "status": { "type": "object", "x-kubernetes-preserve-unknown-fields": true },
                    },
                }},
            }],
        },
    }))
    .expect("a CRD");
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &crd)
        .await
        .expect("CRD created");
    let name = format!("widgets.{group}");
    wait_crd_established(&crds, &name, Duration::from_secs(30)).await;
    group
}

#[tokio::test]
async fn discovery_dynamic_api_and_request_stream_in_the_host_shim_match_the_native_run() {
    let client = client().await;
    let group = create_crd(&client).await;
    let env = [
        ("API_CHECKS_MODE", "discovery"),
        ("API_CHECKS_CRD_GROUP", group.as_str()),
        ("API_CHECKS_CRD_KIND", KIND),
    ];
    let wasm_lines = run_both_to_end(
        &client,
        "api-checks",
        "discovery",
        "API_CHECKS_NAMESPACE",
        &env,
        Duration::from_secs(120),
    )
    .await;

    // And the observations themselves are the Kubernetes semantics we expect.
    let groups = wasm_lines
        .iter()
        .find_map(|l| l.strip_prefix("discovery groups: "))
        .expect("discovery ran");
    let groups: Vec<&str> = groups.split(',').collect();
    for builtin in [
        "",
        "admissionregistration.k8s.io",
        "apiextensions.k8s.io",
        "apps",
        "authentication.k8s.io",
        "authorization.k8s.io",
        "autoscaling",
        "batch",
        "certificates.k8s.io",
        "coordination.k8s.io",
        "events.k8s.io",
        "networking.k8s.io",
        "policy",
        "rbac.authorization.k8s.io",
        "scheduling.k8s.io",
        "storage.k8s.io",
    ] {
        assert!(groups.contains(&builtin), "{builtin:?} in {groups:?}");
    }
    let mut sorted = groups.clone();
    sorted.sort_unstable();
    assert_eq!(groups, sorted, "groups_alphabetical is sorted");

    let api_version = format!("{group}/v1");
    let crd_description = format!(
        "group={group:?} version=v1 api_version={api_version} kind=Widget plural=widgets \
         scope=Namespaced operations=[\"delete\", \"deletecollection\", \"get\", \"list\", \
         \"patch\", \"create\", \"update\", \"watch\"] subresources=[\"{api_version} Widget \
         status Namespaced [\\\"get\\\", \\\"patch\\\", \\\"update\\\"]\"]"
    );
    let expect_in_order = [
        "discovery core: versions=[\"v1\"] preferred=Some(\"v1\")".to_string(),
        "discovery has crd group: true".to_string(),
        "discovery crd group: versions=[\"v1\"] preferred=Some(\"v1\") or_latest=v1".to_string(),
        "discovery crd kinds: [\"Widget\"]".to_string(),
        format!("discovery resolve_gvk: {crd_description}"),
        "discovery resolve_gvk missing kind: None".to_string(),
        format!("oneshot pinned_kind: {crd_description}"),
        format!("oneshot group recommended_kind: {crd_description}"),
        "oneshot missing group: error discovery Missing Api Group: missing.kube-wasm.invalid".to_string(),
        "dynamic create: widget-a kind=Some(\"Widget\") spec={\"color\":\"blue\",\"size\":1,\"tags\":[\"x\"]} status=null".to_string(),
        "dynamic create: widget-b kind=Some(\"Widget\") spec={\"color\":\"blue\",\"size\":2,\"tags\":[\"x\"]} status=null".to_string(),
        "dynamic list: widget-a kind=Some(\"Widget\") spec={\"color\":\"blue\",\"size\":1,\"tags\":[\"x\"]} status=null".to_string(),
        "dynamic list: widget-b kind=Some(\"Widget\") spec={\"color\":\"blue\",\"size\":2,\"tags\":[\"x\"]} status=null".to_string(),
        "dynamic merge patch: widget-a kind=Some(\"Widget\") spec={\"extra\":{\"k\":\"v\"},\"size\":10,\"tags\":[\"x\"]} status=null".to_string(),
        "dynamic json patch: widget-b kind=Some(\"Widget\") spec={\"color\":\"red\",\"tags\":[\"x\",\"y\"]} status=null".to_string(),
        "dynamic failed json patch: 422 Invalid".to_string(),
        "dynamic patch_status: widget-a kind=Some(\"Widget\") spec={\"extra\":{\"k\":\"v\"},\"size\":10,\"tags\":[\"x\"]} status={\"ready\":true}".to_string(),
        "dynamic list after delete: [\"widget-a\"]".to_string(),
        "request_stream bytes over 491520: true".to_string(),
        "request_stream items: Some(120)".to_string(),
        "request_stream values intact: true".to_string(),
        "request_stream equals request_text: true".to_string(),
        "request_stream missing: 404 NotFound".to_string(),
    ];
    let mut rest = wasm_lines.iter();
    for want in &expect_in_order {
        assert!(
            rest.any(|l| l == want),
            "missing (in order) {want:?} in {wasm_lines:#?}"
        );
    }
}
