//! `state`: normalising objects and tabulating differences (no cluster needed).

use kube_wasm_e2e::state::{State, differences, normalise};

use serde_json::json;

#[test]
fn normalise_drops_server_fields_and_namespace_names() {
    let obj = json!({
        "metadata": {"name": "a", "namespace": "ns-1", "uid": "u", "resourceVersion": "7",
                     "creationTimestamp": "2026-11-23T13:08:18Z",
                     "ownerReferences": [{"name": "o", "uid": "x", "kind": "K"}]},
        "data": {"k": "v", "at": "2026-11-23T13:08:18.123456Z", "where": "ns-1/a"}
    });
    assert_eq!(
        normalise(obj, "ns-1"),
        json!({
            "metadata": {"name": "a", "namespace": "<namespace>",
                         "ownerReferences": [{"name": "o", "kind": "K"}]},
            "data": {"k": "v", "at": "<time>", "where": "<namespace>/a"}
        })
    );
}

#[test]
fn differences_name_each_differing_field() {
    let left = State::from([("ConfigMap/a".into(), json!({"data": {"k": "1"}}))]);
    let right = State::from([
        ("ConfigMap/a".into(), json!({"data": {"k": "2"}})),
        ("ConfigMap/b".into(), json!({})),
    ]);
    assert_eq!(
        differences(&left, &right),
        vec![
            "ConfigMap/a | .data.k | \"1\" | \"2\"".to_string(),
            "ConfigMap/b |  | null | {}".to_string(),
        ]
    );
    assert!(differences(&left, &left).is_empty());
}
