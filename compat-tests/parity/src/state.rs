//! The final cluster state of a run, made comparable: e2e's normalisation (no uids,
//! resourceVersions, timestamps, managedFields, namespace name), plus Events keyed by what
//! they say rather than by their generated names.

use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use kube_wasm_e2e::state::{State, normalise};
use serde_json::Value;

/// Lists every object of `resources` in `namespace`: `"<kind>/<name>"` → normalised object.
/// An Event's key is `Event/<regarding kind>/<regarding name>/<reason>/<note>` and its
/// generated name is removed (the recorder names events `<object>.<random>`), and so are the
/// uid and resourceVersion of the objects it refers to. Also returns every listed object's
/// resourceVersion with `<kind>/<name>`.
///
/// # Errors
/// When a list fails.
pub async fn collect(
    client: &Client,
    namespace: &str,
    resources: &[ApiResource],
) -> anyhow::Result<(State, Vec<(String, String)>)> {
    let mut state = State::new();
    let mut versions = Vec::new();
    for ar in resources {
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, ar);
        for obj in api.list(&ListParams::default()).await? {
            let name = obj.metadata.name.clone().unwrap_or_default();
            if let Some(rv) = &obj.metadata.resource_version {
                versions.push((rv.clone(), format!("{}/{name}", ar.kind)));
            }
            let mut value = normalise(serde_json::to_value(&obj)?, namespace);
            let key = if ar.kind == "Event" {
                if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
                    meta.remove("name");
                }
                for reference in ["regarding", "related"] {
                    if let Some(r) = value.get_mut(reference).and_then(Value::as_object_mut) {
                        r.remove("uid");
                        r.remove("resourceVersion");
                    }
                }
                let field = |path: &str| {
                    value
                        .pointer(path)
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string()
                };
                format!(
                    "Event/{}/{}/{}/{}",
                    field("/regarding/kind"),
                    field("/regarding/name"),
                    field("/reason"),
                    field("/note")
                )
            } else {
                format!("{}/{name}", ar.kind)
            };
            state.insert(key, value);
        }
    }
    Ok((state, versions))
}
