//! The `discovery` mode: discovery of the built-in groups and of a CRD the test created,
//! `Api<DynamicObject>` on that CRD, and `Client::request_stream` over a long list response.
//! One line per observation, nothing run-specific (no uids, resourceVersions or namespace
//! names) so a native run and a run in the host shim print the same lines.

use futures::AsyncReadExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube::api::{
    Api, ApiResource, DynamicObject, ListParams, ObjectMeta, Patch, PatchParams, PostParams,
    ResourceExt,
};
use kube::core::GroupVersionKind;
use kube::discovery::{ApiCapabilities, Discovery, oneshot};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// ConfigMaps created for the long response, and the size of each one's data.
const STREAM_OBJECTS: usize = 120;
const STREAM_VALUE_BYTES: usize = 4096;

/// Groups the cluster's tests create CRDs in; left out of the list of all groups.
const TEST_GROUPS: &str = "kube-wasm.example.com";

fn describe(ar: &ApiResource, caps: &ApiCapabilities) -> String {
    let subresources: Vec<String> = caps
        .subresources
        .iter()
        .map(|(sub, sub_caps)| {
            format!(
                "{} {} {} {:?} {:?}",
                sub.api_version, sub.kind, sub.plural, sub_caps.scope, sub_caps.operations
            )
        })
        .collect();
    format!(
        "group={:?} version={} api_version={} kind={} plural={} scope={:?} operations={:?} \
         subresources={subresources:?}",
        ar.group, ar.version, ar.api_version, ar.kind, ar.plural, caps.scope, caps.operations
    )
}

/// An instance as `name spec status`.
fn summary(obj: &DynamicObject) -> String {
    format!(
        "{} kind={:?} spec={} status={}",
        obj.name_any(),
        obj.types.as_ref().map(|t| t.kind.as_str()),
        obj.data.get("spec").unwrap_or(&Value::Null),
        obj.data.get("status").unwrap_or(&Value::Null)
    )
}

pub async fn checks(client: Client, ns: &str) -> anyhow::Result<()> {
    let group = std::env::var("API_CHECKS_CRD_GROUP")?;
    let kind = std::env::var("API_CHECKS_CRD_KIND")?;
    let gvk = GroupVersionKind::gvk(&group, "v1", &kind);

    // Full discovery: the built-in groups, and the CRD.
    let discovery = Discovery::new(client.clone()).run().await?;
    let groups: Vec<&str> = discovery
        .groups_alphabetical()
        .into_iter()
        .map(|g| g.name())
        .filter(|g| !g.ends_with(TEST_GROUPS))
        .collect();
    println!("discovery groups: {}", groups.join(","));
    let core = discovery
        .get("")
        .ok_or_else(|| anyhow::anyhow!("no core group"))?;
    println!(
        "discovery core: versions={:?} preferred={:?}",
        core.versions().collect::<Vec<_>>(),
        core.preferred_version()
    );
    let apps = discovery
        .get("apps")
        .ok_or_else(|| anyhow::anyhow!("no apps group"))?;
    let (deploy, deploy_caps) = apps
        .recommended_kind("Deployment")
        .ok_or_else(|| anyhow::anyhow!("no Deployment"))?;
    println!("discovery deployments: {}", describe(&deploy, &deploy_caps));
    println!("discovery has crd group: {}", discovery.has_group(&group));
    let crd_group = discovery
        .get(&group)
        .ok_or_else(|| anyhow::anyhow!("discovery: no group {group}"))?;
    println!(
        "discovery crd group: versions={:?} preferred={:?} or_latest={}",
        crd_group.versions().collect::<Vec<_>>(),
        crd_group.preferred_version(),
        crd_group.preferred_version_or_latest()
    );
    let kinds: Vec<String> = crd_group
        .recommended_resources()
        .iter()
        .map(|(ar, _)| ar.kind.clone())
        .collect();
    println!("discovery crd kinds: {kinds:?}");
    let (ar, caps) = discovery
        .resolve_gvk(&gvk)
        .ok_or_else(|| anyhow::anyhow!("discovery: cannot resolve {gvk:?}"))?;
    println!("discovery resolve_gvk: {}", describe(&ar, &caps));
    println!(
        "discovery resolve_gvk missing kind: {:?}",
        discovery
            .resolve_gvk(&GroupVersionKind::gvk(&group, "v1", "Missing"))
            .map(|(ar, _)| ar.plural)
    );

    // One-shot discovery of the same.
    let (pinned, pinned_caps) = oneshot::pinned_kind(&client, &gvk).await?;
    println!("oneshot pinned_kind: {}", describe(&pinned, &pinned_caps));
    let one_group = oneshot::group(&client, &group).await?;
    let (rec, rec_caps) = one_group
        .recommended_kind(&kind)
        .ok_or_else(|| anyhow::anyhow!("oneshot group: no {kind}"))?;
    println!(
        "oneshot group recommended_kind: {}",
        describe(&rec, &rec_caps)
    );
    match oneshot::group(&client, "missing.kube-wasm.invalid").await {
        Err(e) => println!("oneshot missing group: error {}", error_kind(&e)),
        Ok(g) => println!("oneshot missing group: found {}", g.name()),
    }

    dynamic_checks(client.clone(), ns, &ar).await?;
    stream_checks(client, ns).await
}

fn error_kind(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) => format!("api {}", s.code),
        kube::Error::Discovery(d) => format!("discovery {d}"),
        other => format!("other {other}"),
    }
}

/// `Api<DynamicObject>` on the discovered resource: create, list, merge and JSON patches,
/// the status subresource, delete.
async fn dynamic_checks(client: Client, ns: &str, ar: &ApiResource) -> anyhow::Result<()> {
    let api: Api<DynamicObject> = Api::namespaced_with(client, ns, ar);
    for (name, size) in [("widget-a", 1), ("widget-b", 2)] {
        let obj = DynamicObject::new(name, ar)
            .data(json!({ "spec": { "size": size, "color": "blue", "tags": ["x"] } }));
        let created = api.create(&PostParams::default(), &obj).await?;
        println!("dynamic create: {}", summary(&created));
    }
    let list = api.list(&ListParams::default()).await?;
    for obj in &list {
        println!("dynamic list: {}", summary(obj));
    }

    let merged = api
        .patch(
            "widget-a",
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "size": 10, "color": null, "extra": { "k": "v" } } })),
        )
        .await?;
    println!("dynamic merge patch: {}", summary(&merged));

    let ops: json_patch::Patch = serde_json::from_value(json!([
        { "op": "test", "path": "/spec/size", "value": 2 },
        { "op": "replace", "path": "/spec/color", "value": "red" },
        { "op": "add", "path": "/spec/tags/-", "value": "y" },
        { "op": "remove", "path": "/spec/size" },
    ]))?;
    let patched = api
        .patch("widget-b", &PatchParams::default(), &Patch::<()>::Json(ops))
        .await?;
    println!("dynamic json patch: {}", summary(&patched));

    let failing: json_patch::Patch = serde_json::from_value(json!([
        { "op": "test", "path": "/spec/color", "value": "green" },
    ]))?;
    match api
        .patch(
            "widget-b",
            &PatchParams::default(),
            &Patch::<()>::Json(failing),
        )
        .await
    {
        Err(kube::Error::Api(s)) => println!("dynamic failed json patch: {} {}", s.code, s.reason),
        other => anyhow::bail!("failed json patch: expected an API error, got {other:?}"),
    }

    let status = api
        .patch_status(
            "widget-a",
            &PatchParams::default(),
            &Patch::Merge(json!({ "status": { "ready": true }, "spec": { "size": 99 } })),
        )
        .await?;
    println!("dynamic patch_status: {}", summary(&status));

    api.delete("widget-b", &Default::default()).await?;
    let names: Vec<String> = api
        .list(&ListParams::default())
        .await?
        .iter()
        .map(|o| o.name_any())
        .collect();
    println!("dynamic list after delete: {names:?}");
    Ok(())
}

/// `Client::request_stream` over a list response of several hundred KiB, read to the end and
/// compared with `request_text` of the same URL.
async fn stream_checks(client: Client, ns: &str) -> anyhow::Result<()> {
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    let value = "v".repeat(STREAM_VALUE_BYTES);
    for i in 0..STREAM_OBJECTS {
        let cm = ConfigMap {
            metadata: ObjectMeta {
                name: Some(format!("stream-{i:03}")),
                labels: Some([("api-checks".to_string(), "stream".to_string())].into()),
                ..ObjectMeta::default()
            },
            data: Some(BTreeMap::from([("value".to_string(), value.clone())])),
            ..ConfigMap::default()
        };
        cms.create(&PostParams::default(), &cm).await?;
    }
    let url = format!("/api/v1/namespaces/{ns}/configmaps?labelSelector=api-checks%3Dstream");

    let mut streamed = Vec::new();
    client
        .request_stream(http::Request::get(&url).body(Vec::new())?)
        .await?
        .read_to_end(&mut streamed)
        .await?;
    let text = client
        .request_text(http::Request::get(&url).body(Vec::new())?)
        .await?;
    println!(
        "request_stream bytes over {}: {}",
        STREAM_OBJECTS * STREAM_VALUE_BYTES,
        streamed.len() > STREAM_OBJECTS * STREAM_VALUE_BYTES
    );
    let mut streamed: Value = serde_json::from_slice(&streamed)?;
    let mut text: Value = serde_json::from_str(&text)?;
    let items = streamed["items"].as_array().map(Vec::len);
    println!("request_stream items: {items:?}");
    let intact = streamed["items"]
        .as_array()
        .into_iter()
        .flatten()
        .all(|cm| cm["data"]["value"].as_str() == Some(value.as_str()));
    println!("request_stream values intact: {intact}");
    // The list's own resourceVersion moves with any write in the cluster; the rest is the same.
    streamed["metadata"]["resourceVersion"].take();
    text["metadata"]["resourceVersion"].take();
    println!("request_stream equals request_text: {}", streamed == text);

    let missing = format!("/api/v1/namespaces/{ns}/configmaps/missing");
    match client
        .request_stream(http::Request::get(&missing).body(Vec::new())?)
        .await
    {
        Err(kube::Error::Api(s)) => println!("request_stream missing: {} {}", s.code, s.reason),
        Err(other) => anyhow::bail!("request_stream missing: expected an API error: {other}"),
        Ok(_) => anyhow::bail!("request_stream missing: expected an error, got a stream"),
    }
    Ok(())
}
