//! The configmap-generator example (a CRD and a `Controller` that owns ConfigMaps), run as a
//! wasm module in the host shim and as a native kube-rs build, each in its own namespace,
//! through the same steps — an apiserver restart among them — until both reach the same
//! cluster state.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Resource;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams, ResourceExt,
};
use kube_wasm_e2e::objects::{generator_resource, install_crd, native_crd};
use kube_wasm_e2e::side_by_side::{Side, SideBySide, Stop};
use kube_wasm_e2e::{client, eventually, gone, restart_apiserver};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(30);
const MODULE: &str = "configmap-generator";

/// The side's ConfigMapGenerators.
fn generators(side: &Side) -> Api<DynamicObject> {
    Api::namespaced_with(side.client.clone(), &side.namespace, &generator_resource())
}

async fn create_generator(side: &Side, name: &str, spec: Value) {
    let obj = DynamicObject::new(name, &generator_resource()).data(json!({ "spec": spec }));
    generators(side)
        .create(&PostParams::default(), &obj)
        .await
        .unwrap_or_else(|e| panic!("{}: creating generator {name}: {e}", side.label));
}

async fn patch_spec(side: &Side, name: &str, spec: Value) {
    generators(side)
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": spec })),
        )
        .await
        .unwrap_or_else(|e| panic!("{}: patching generator {name}: {e}", side.label));
}

/// Waits until generator `name` at `generation` has its ConfigMap, owned by it, holding
/// exactly `data`, and its status says so; returns the ConfigMap.
async fn wait_generated(
    side: &Side,
    name: &str,
    generation: i64,
    data: &[(&str, &str)],
) -> ConfigMap {
    let want: BTreeMap<String, String> = data
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let what = format!(
        "{}: ConfigMap {name} from generation {generation} holding {want:?}",
        side.label
    );
    eventually(WAIT, &what, || async {
        let generator = generators(side).get_opt(name).await.ok()??;
        let status = &generator.data["status"];
        if generator.metadata.generation != Some(generation)
            || status["observedGeneration"] != json!(generation)
            || status["configMap"] != json!(name)
        {
            return None;
        }
        let cm = side.api::<ConfigMap>().get_opt(name).await.ok()??;
        let owned = cm.owner_references().iter().any(|o| {
            o.controller == Some(true)
                && o.kind == "ConfigMapGenerator"
                && o.name == name
                && Some(&o.uid) == generator.meta().uid.as_ref()
        });
        (owned && cm.data.clone().unwrap_or_default() == want).then_some(cm)
    })
    .await
}

#[tokio::test]
async fn configmap_generator_wasm_and_native_reach_the_same_state() {
    let client = client().await;
    install_crd(&client, &native_crd(MODULE), "kube-wasm-e2e", WAIT).await;

    let mut runs = SideBySide::wasm_and_native(&client, "cmgen").await;
    // Generators that exist before the controller starts come with its first list.
    runs.each(async |side| create_generator(side, "gen-first", json!({ "content": "one" })).await)
        .await;
    runs.start(MODULE, &[], "watching ConfigMapGenerators", WAIT);

    // The generator listed at start.
    runs.each(async |side| {
        wait_generated(side, "gen-first", 1, &[("content", "one")]).await;
    })
    .await;

    // A generator created while watching, with its own key.
    runs.each(async |side| {
        create_generator(
            side,
            "gen-second",
            json!({ "content": "hi", "key": "greeting" }),
        )
        .await
    })
    .await;
    runs.each(async |side| {
        wait_generated(side, "gen-second", 1, &[("greeting", "hi")]).await;
    })
    .await;

    // A spec update: a new generation, the same ConfigMap updated.
    runs.each(async |side| patch_spec(side, "gen-second", json!({ "content": "bonjour" })).await)
        .await;
    let mut recreated_from = Vec::new();
    for side in &runs.sides {
        let cm = wait_generated(side, "gen-second", 2, &[("greeting", "bonjour")]).await;
        recreated_from.push(cm.uid());
    }

    // The owned ConfigMap deleted by hand: the owner is reconciled and recreates it.
    runs.each(async |side| side.delete::<ConfigMap>("gen-second").await)
        .await;
    for (side, old_uid) in runs.sides.iter().zip(&recreated_from) {
        eventually(
            WAIT,
            &format!("{}: gen-second recreated", side.label),
            || async {
                let cm = side.get::<ConfigMap>("gen-second").await?;
                (cm.uid() != *old_uid).then_some(())
            },
        )
        .await;
        wait_generated(side, "gen-second", 2, &[("greeting", "bonjour")]).await;
    }

    // A generator deleted: without a garbage collector its ConfigMap stays, and the
    // controller leaves it alone.
    let mut orphan_versions = Vec::new();
    for side in &runs.sides {
        let cm = side.api::<ConfigMap>().get("gen-first").await.expect("get");
        orphan_versions.push(cm.resource_version());
        generators(side)
            .delete("gen-first", &DeleteParams::default())
            .await
            .expect("generator deleted");
    }
    runs.each(async |side| {
        let api = generators(side);
        eventually(WAIT, &format!("{}: gen-first gone", side.label), || {
            gone(&api, "gen-first")
        })
        .await;
    })
    .await;

    // The apiserver restarts; changes made right after must still be seen.
    restart_apiserver().expect("apiserver restarted");
    runs.each(async |side| {
        create_generator(side, "gen-third", json!({ "content": "after the restart" })).await;
        patch_spec(side, "gen-second", json!({ "content": "still watching" })).await;
    })
    .await;
    runs.each(async |side| {
        wait_generated(side, "gen-third", 1, &[("content", "after the restart")]).await;
        wait_generated(side, "gen-second", 3, &[("greeting", "still watching")]).await;
    })
    .await;

    // The deleted generator's ConfigMap was left as it was, and its reconciliations
    // were not retried in a loop: the error policy never ran for it, and only the
    // triggers (its deletion, relists of the ConfigMaps) asked for it.
    for (side, version) in runs.sides.iter().zip(&orphan_versions) {
        let cm = side.api::<ConfigMap>().get("gen-first").await.expect("get");
        assert_eq!(
            cm.resource_version(),
            *version,
            "{}: the orphaned ConfigMap was not touched",
            side.label
        );
        assert_eq!(cm.data, Some([("content".into(), "one".into())].into()));
        let output = side.output();
        let retried: Vec<&String> = output
            .iter()
            .filter(|l| l.contains("reconciling gen-first failed"))
            .collect();
        assert!(retried.is_empty(), "{}: {retried:#?}", side.label);
        let missing = output
            .iter()
            .filter(|l| l.contains("not found in local store") && l.contains("/gen-first"))
            .count();
        assert!(
            missing <= 5,
            "{}: gen-first looked up {missing} times after its deletion:\n{}",
            side.label,
            output.join("\n")
        );
    }

    // Both builds reached the same state.
    let resources = [generator_resource(), ApiResource::erase::<ConfigMap>(&())];
    runs.assert_same_state(
        &resources,
        &[
            "ConfigMap/gen-first",
            "ConfigMap/gen-second",
            "ConfigMap/gen-third",
            "ConfigMapGenerator/gen-second",
            "ConfigMapGenerator/gen-third",
        ],
    )
    .await;

    // Both stop on SIGTERM and exit 0.
    runs.stop(Stop::Term, "configmap-generator: stopped", WAIT);
}
