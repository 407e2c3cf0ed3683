//! `Api::entry`: get-or-create and get-and-modify, committed as create, replace or nothing.

use super::support::{ok_json, response, run, setup, status_body};
use k8s_openapi::api::core::v1::ConfigMap;
use kube_wasm_client::Error;
use kube_wasm_client::api::entry::{CommitError, CommitValidationError, Entry};
use kube_wasm_client::api::{Api, ObjectMeta, PostParams};
use serde_json::json;
use std::collections::BTreeMap;

fn cm(name: &str, rv: &str, value: &str) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "namespace": "ns", "resourceVersion": rv},
           "data": {"key": value}})
}

fn set_key(cm: &mut ConfigMap, value: &str) {
    cm.data
        .get_or_insert_with(BTreeMap::new)
        .insert("key".into(), value.into());
}

#[test]
fn vacant_entry_is_created_with_name_and_namespace_filled_in() {
    let (host, client) = setup();
    let api: Api<ConfigMap> = Api::namespaced(client, "ns");
    let (out, sent) = run(
        &host,
        async move {
            let entry = api.entry("fresh").await?;
            assert!(matches!(entry, Entry::Vacant(_)) && entry.get().is_none());
            let mut entry = entry.or_insert(|| {
                let mut cm = ConfigMap::default();
                set_key(&mut cm, "v1");
                cm
            });
            entry
                .commit(&PostParams::default())
                .await
                .map_err(|e| match e {
                    CommitError::Save(e) => e,
                    CommitError::Validate(v) => panic!("{v}"),
                })?;
            // Committed and clean: a second commit sends nothing.
            entry
                .commit(&PostParams::default())
                .await
                .expect("no-op commit");
            Ok::<_, Error>(entry.into_object())
        },
        |sent| match sent.request.method.as_str() {
            "GET" => response(404, status_body(404, "NotFound", "not found")),
            "POST" => response(201, cm("fresh", "1", "v1").to_string()),
            other => panic!("unexpected {other}"),
        },
    );
    let methods: Vec<_> = sent.iter().map(|s| s.request.method.as_str()).collect();
    assert_eq!(methods, ["GET", "POST"]);
    assert_eq!(sent[1].request.uri, "/api/v1/namespaces/ns/configmaps?");
    assert_eq!(sent[1].json()["metadata"]["name"], "fresh");
    assert_eq!(sent[1].json()["metadata"]["namespace"], "ns");
    assert_eq!(sent[1].json()["data"]["key"], "v1");
    let created = out.expect("created");
    assert_eq!(
        created.metadata.resource_version.as_deref(),
        Some("1"),
        "holds the server's object"
    );
}

#[test]
fn occupied_entry_is_replaced_only_when_modified() {
    let (host, client) = setup();
    let api: Api<ConfigMap> = Api::namespaced(client, "ns");
    let (out, sent) = run(
        &host,
        async move {
            let mut entry = match api.entry("cm").await? {
                Entry::Occupied(entry) => entry,
                Entry::Vacant(_) => panic!("exists"),
            };
            // Unmodified: nothing is sent.
            entry
                .commit(&PostParams::default())
                .await
                .expect("clean commit");
            set_key(entry.get_mut(), "v2");
            entry.commit(&PostParams::default()).await.expect("replace");
            Ok::<_, Error>(entry.get().metadata.resource_version.clone())
        },
        |sent| match sent.request.method.as_str() {
            "GET" => ok_json(cm("cm", "5", "v1")),
            "PUT" => ok_json(cm("cm", "6", "v2")),
            other => panic!("unexpected {other}"),
        },
    );
    let methods: Vec<_> = sent.iter().map(|s| s.request.method.as_str()).collect();
    assert_eq!(methods, ["GET", "PUT"]);
    assert_eq!(sent[1].request.uri, "/api/v1/namespaces/ns/configmaps/cm?");
    assert_eq!(
        sent[1].json()["metadata"]["resourceVersion"],
        "5",
        "optimistic concurrency"
    );
    assert_eq!(sent[1].json()["data"]["key"], "v2");
    assert_eq!(out.expect("ok").as_deref(), Some("6"));
}

#[test]
fn a_conflicting_replace_is_a_save_error() {
    let (host, client) = setup();
    let api: Api<ConfigMap> = Api::namespaced(client, "ns");
    let (out, _) = run(
        &host,
        async move {
            let mut entry = api
                .entry("cm")
                .await
                .expect("get")
                .and_modify(|cm| set_key(cm, "mine"))
                .or_insert(|| unreachable!("occupied"));
            entry.commit(&PostParams::default()).await
        },
        |sent| match sent.request.method.as_str() {
            "GET" => ok_json(cm("cm", "5", "v1")),
            _ => response(
                409,
                status_body(409, "Conflict", "the object has been modified"),
            ),
        },
    );
    assert!(
        matches!(out, Err(CommitError::Save(Error::Api(ref s))) if s.is_conflict()),
        "{out:?}"
    );
}

#[test]
fn mismatched_metadata_fails_validation_without_a_request() {
    let (host, client) = setup();
    let api: Api<ConfigMap> = Api::namespaced(client, "ns");
    let (out, sent) = run(
        &host,
        async move {
            let mut results = Vec::new();
            for meta in [
                ObjectMeta {
                    name: Some("other".into()),
                    ..ObjectMeta::default()
                },
                ObjectMeta {
                    namespace: Some("elsewhere".into()),
                    ..ObjectMeta::default()
                },
                ObjectMeta {
                    generate_name: Some("gen-".into()),
                    ..ObjectMeta::default()
                },
            ] {
                let mut entry = api.entry("cm").await.expect("get").or_insert(|| ConfigMap {
                    metadata: meta,
                    ..ConfigMap::default()
                });
                results.push(entry.commit(&PostParams::default()).await);
            }
            results
        },
        |_| response(404, status_body(404, "NotFound", "missing")),
    );
    assert!(
        sent.iter().all(|s| s.request.method == "GET"),
        "nothing but the gets was sent"
    );
    assert!(matches!(
        &out[0],
        Err(CommitError::Validate(CommitValidationError::NameMismatch { object_name, expected }))
            if object_name == "other" && expected == "cm"
    ));
    assert!(matches!(
        &out[1],
        Err(CommitError::Validate(
            CommitValidationError::NamespaceMismatch { .. }
        ))
    ));
    assert!(matches!(
        &out[2],
        Err(CommitError::Validate(
            CommitValidationError::GenerateName { .. }
        ))
    ));
}

#[test]
fn a_dry_run_commit_stays_dirty() {
    let (host, client) = setup();
    let api: Api<ConfigMap> = Api::namespaced(client, "ns");
    let (_, sent) = run(
        &host,
        async move {
            let mut entry = api
                .entry("new")
                .await
                .expect("get")
                .or_insert(ConfigMap::default);
            let dry = PostParams {
                dry_run: true,
                ..PostParams::default()
            };
            entry.commit(&dry).await.expect("dry run");
            entry
                .commit(&PostParams::default())
                .await
                .expect("real run");
        },
        |sent| match sent.request.method.as_str() {
            "GET" => response(404, status_body(404, "NotFound", "missing")),
            _ => response(201, cm("new", "1", "v").to_string()),
        },
    );
    let posts: Vec<_> = sent
        .iter()
        .filter(|s| s.request.method == "POST")
        .map(|s| s.request.uri.as_str())
        .collect();
    assert_eq!(
        posts,
        [
            "/api/v1/namespaces/ns/configmaps?&dryRun=All",
            "/api/v1/namespaces/ns/configmaps?"
        ]
    );
}
