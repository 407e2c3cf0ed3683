//! Dynamic use: `Api<DynamicObject>` over a CRD-shaped resource, built from a GVK (with
//! `kube_core::gvk`) or from discovery, lists and patches as kube's does.

use super::support::{ok_json, run, run_one, setup};
use kube_wasm_client::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams,
};
use kube_wasm_client::core::{GroupVersion, TypeMeta};
use kube_wasm_client::{Error, ResourceExt};
use serde_json::json;

fn crontab(name: &str, schedule: &str) -> serde_json::Value {
    json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab",
           "metadata": {"name": name, "namespace": "team", "resourceVersion": "41",
                        "uid": "9a7d0c2e-0000-4000-8000-000000000001"},
           "spec": {"cronSpec": schedule, "image": "my-cron-image", "replicas": 1}})
}

fn crontab_resource() -> ApiResource {
    let gvk = GroupVersionKind::gvk("stable.example.com", "v1", "CronTab");
    ApiResource::from_gvk_with_plural(&gvk, "crontabs")
}

#[test]
fn list_a_crd_as_dynamic_objects() {
    let (host, client) = setup();
    let ar = crontab_resource();
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "team", &ar);
    let lp = ListParams::default().labels("app=cron");
    let (out, sent) = run_one(
        &host,
        async move { api.list(&lp).await },
        ok_json(
            json!({"apiVersion": "stable.example.com/v1", "kind": "CronTabList",
                       "metadata": {"resourceVersion": "42"},
                       "items": [crontab("a", "* * * * */5"), crontab("b", "0 * * * *")]}),
        ),
    );
    assert_eq!(sent.request.method, "GET");
    assert_eq!(
        sent.request.uri,
        "/apis/stable.example.com/v1/namespaces/team/crontabs?&labelSelector=app%3Dcron"
    );
    let list = out.expect("lists");
    assert_eq!(list.metadata.resource_version.as_deref(), Some("42"));
    let names: Vec<String> = list.iter().map(ResourceExt::name_any).collect();
    assert_eq!(names, ["a", "b"]);
    let first = &list.items[0];
    assert_eq!(first.data["spec"]["cronSpec"], "* * * * */5");
    let types = first.types.clone().expect("items keep their type");
    // `kube_core::gvk`: the type of an object back to its GVK, and to the same resource.
    let gvk = GroupVersionKind::try_from(&types).expect("valid apiVersion");
    assert_eq!(
        gvk,
        GroupVersionKind::gvk("stable.example.com", "v1", "CronTab")
    );
    assert_eq!(ApiResource::from_gvk_with_plural(&gvk, "crontabs"), ar);

    // Cluster wide: the same resource across namespaces.
    let all: Api<DynamicObject> = Api::all_with(client, &ar);
    let (_, sent) = run_one(
        &host,
        async move { all.list(&ListParams::default()).await },
        ok_json(
            json!({"apiVersion": "stable.example.com/v1", "kind": "CronTabList",
                       "metadata": {}, "items": []}),
        ),
    );
    assert_eq!(sent.request.uri, "/apis/stable.example.com/v1/crontabs?");
}

#[test]
fn patch_a_crd_dynamic_object() {
    let (host, client) = setup();
    let ar = crontab_resource();
    let api: Api<DynamicObject> = Api::namespaced_with(client, "team", &ar);
    let (out, sent) = run(
        &host,
        async move {
            let merged = api
                .patch(
                    "a",
                    &PatchParams::default(),
                    &Patch::Merge(json!({"spec": {"cronSpec": "0 0 * * *"}})),
                )
                .await?;
            // Server-side apply of a whole object built from the resource.
            let mut applied = DynamicObject::new("a", &ar).within("team");
            applied.data = json!({"spec": {"replicas": 3}});
            let applied = api
                .patch(
                    "a",
                    &PatchParams::apply("mgr").force(),
                    &Patch::Apply(&applied),
                )
                .await?;
            Ok::<_, Error>((merged, applied))
        },
        |sent| {
            let schedule = if sent.request.uri.contains("fieldManager") {
                "applied"
            } else {
                "0 0 * * *"
            };
            ok_json(crontab("a", schedule))
        },
    );
    let (merged, applied) = out.expect("patches succeed");
    assert_eq!(merged.data["spec"]["cronSpec"], "0 0 * * *");
    assert_eq!(applied.data["spec"]["cronSpec"], "applied");

    assert_eq!(sent[0].request.method, "PATCH");
    assert_eq!(
        sent[0].request.uri,
        "/apis/stable.example.com/v1/namespaces/team/crontabs/a?"
    );
    assert_eq!(
        sent[0].header("content-type"),
        Some("application/merge-patch+json")
    );
    assert_eq!(sent[0].json(), json!({"spec": {"cronSpec": "0 0 * * *"}}));

    assert_eq!(
        sent[1].request.uri,
        "/apis/stable.example.com/v1/namespaces/team/crontabs/a?&force=true&fieldManager=mgr"
    );
    assert_eq!(
        sent[1].header("content-type"),
        Some("application/apply-patch+yaml")
    );
    let body = sent[1].json();
    assert_eq!(body["apiVersion"], "stable.example.com/v1");
    assert_eq!(body["kind"], "CronTab");
    assert_eq!(body["metadata"]["name"], "a");
    assert_eq!(body["metadata"]["namespace"], "team");
    assert_eq!(body["spec"]["replicas"], 3);
}

#[test]
fn gvk_helpers_build_core_and_group_resources() {
    let client = kube_wasm_client::Client::for_host("team");
    let gv: GroupVersion = "v1".parse().expect("core gv");
    let cm = ApiResource::from_gvk(&gv.with_kind("ConfigMap"));
    let api: Api<DynamicObject> = Api::default_namespaced_with(client.clone(), &cm);
    assert_eq!(api.resource_url(), "/api/v1/namespaces/team/configmaps");
    let tm = TypeMeta {
        api_version: "stable.example.com/v1".into(),
        kind: "CronTab".into(),
    };
    let gvk = GroupVersionKind::try_from(tm).expect("valid");
    let api: Api<DynamicObject> =
        Api::all_with(client, &ApiResource::from_gvk_with_plural(&gvk, "crontabs"));
    assert_eq!(api.resource_url(), "/apis/stable.example.com/v1/crontabs");
}
