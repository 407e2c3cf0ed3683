//! The cluster state two runs of one program reached, made comparable: objects listed from a
//! namespace with everything the apiserver sets for itself (uid, resourceVersion, timestamps,
//! managedFields, the namespace name) removed, and a readable table of the differences.

use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use serde_json::Value;
use std::collections::BTreeMap;

/// Objects by `"<kind>/<name>"`, each normalised with [`normalise`].
pub type State = BTreeMap<String, Value>;

/// Lists every object of the types `resources` in `namespace` and normalises them.
///
/// # Panics
/// If a list fails: the test cluster must answer.
pub async fn namespace_state(client: &Client, namespace: &str, resources: &[ApiResource]) -> State {
    let mut state = State::new();
    for ar in resources {
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, ar);
        let list = api
            .list(&ListParams::default())
            .await
            .unwrap_or_else(|e| panic!("listing {} in {namespace}: {e}", ar.plural));
        for obj in list {
            let name = obj.metadata.name.clone().unwrap_or_default();
            let value = serde_json::to_value(&obj).unwrap_or(Value::Null);
            state.insert(format!("{}/{name}", ar.kind), normalise(value, namespace));
        }
    }
    state
}

/// Removes what the apiserver sets on its own — `uid`, `resourceVersion`, `creationTimestamp`,
/// `deletionTimestamp`, `managedFields`, `selfLink`, owner references' `uid` — and every
/// timestamp-looking string (RFC 3339) anywhere, and replaces the namespace name by
/// `<namespace>` wherever it appears in a string.
pub fn normalise(mut value: Value, namespace: &str) -> Value {
    if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
        for key in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "deletionTimestamp",
            "managedFields",
            "selfLink",
        ] {
            meta.remove(key);
        }
        if let Some(owners) = meta
            .get_mut("ownerReferences")
            .and_then(Value::as_array_mut)
        {
            for owner in owners.iter_mut().filter_map(Value::as_object_mut) {
                owner.remove("uid");
            }
        }
    }
    scrub(&mut value, namespace);
    value
}

fn scrub(value: &mut Value, namespace: &str) {
    match value {
        Value::String(s) if looks_like_timestamp(s) => *s = "<time>".to_string(),
        Value::String(s) if s.contains(namespace) => *s = s.replace(namespace, "<namespace>"),
        Value::Array(items) => items.iter_mut().for_each(|v| scrub(v, namespace)),
        Value::Object(map) => map.values_mut().for_each(|v| scrub(v, namespace)),
        _ => {}
    }
}

/// `2026-11-23T13:08:18Z`, with optional fractional seconds and offset.
fn looks_like_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 20
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
        && b[16] == b':'
        && b[..4].iter().all(u8::is_ascii_digit)
}

/// The differences between two states as table rows `key | path | left | right`; empty when
/// they are equal.
pub fn differences(left: &State, right: &State) -> Vec<String> {
    let mut rows = Vec::new();
    let keys: std::collections::BTreeSet<&String> = left.keys().chain(right.keys()).collect();
    for key in keys {
        diff_values(
            key,
            "",
            left.get(key).unwrap_or(&Value::Null),
            right.get(key).unwrap_or(&Value::Null),
            &mut rows,
        );
    }
    rows
}

fn diff_values(key: &str, path: &str, left: &Value, right: &Value, rows: &mut Vec<String>) {
    match (left, right) {
        (Value::Object(l), Value::Object(r)) => {
            let fields: std::collections::BTreeSet<&String> = l.keys().chain(r.keys()).collect();
            for f in fields {
                diff_values(
                    key,
                    &format!("{path}.{f}"),
                    l.get(f).unwrap_or(&Value::Null),
                    r.get(f).unwrap_or(&Value::Null),
                    rows,
                );
            }
        }
        _ if left != right => rows.push(format!("{key} | {path} | {left} | {right}")),
        _ => {}
    }
}

/// Asserts that two states are equal, printing a table of the differences otherwise.
///
/// # Panics
/// If they differ.
pub fn assert_same_state(left_name: &str, left: &State, right_name: &str, right: &State) {
    let rows = differences(left, right);
    assert!(
        rows.is_empty(),
        "the final states differ:\nobject | field | {left_name} | {right_name}\n{}",
        rows.join("\n")
    );
}
