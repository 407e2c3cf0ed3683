//! The finalizer-controller example (`kube::runtime::finalizer` and `events::Recorder` in a
//! `Controller`), run as a wasm module in the host shim and as a native kube-rs build, each
//! in its own namespace, through the same steps — an apiserver restart among them — until
//! both reach the same cluster state.

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::events::v1::Event;
use kube::ResourceExt;
use kube::api::ApiResource;
use kube_wasm_e2e::objects::config_map;
use kube_wasm_e2e::side_by_side::{Side, SideBySide, Stop};
use kube_wasm_e2e::{client, eventually, restart_apiserver};
use std::collections::BTreeMap;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(30);
const MODULE: &str = "finalizer-controller";
const LABEL: (&str, &str) = ("kube-wasm.example.com/with-dependent", "true");
const FINALIZER: &str = "kube-wasm.example.com/cleanup-dependent";
const DEPENDENT_OF: &str = "kube-wasm.example.com/dependent-of";

/// A ConfigMap holding `data`, with the label the controller selects or without.
fn labelled_config_map(name: &str, labelled: bool, data: &[(&str, &str)]) -> ConfigMap {
    let labels: &[(&str, &str)] = if labelled { &[LABEL] } else { &[] };
    config_map(name, labels, data)
}

fn owned(data: &[(&str, &str)]) -> BTreeMap<String, String> {
    data.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Waits until `name` carries the finalizer and its dependent holds `data`.
async fn wait_applied(side: &Side, name: &str, data: &[(&str, &str)]) {
    let want = owned(data);
    let what = format!(
        "{}: {name} finalized with a dependent holding {want:?}",
        side.label
    );
    eventually(WAIT, &what, || async {
        let cm = side.api::<ConfigMap>().get_opt(name).await.ok()??;
        if !cm.finalizers().iter().any(|f| f == FINALIZER) {
            return None;
        }
        let dependent = side
            .api::<ConfigMap>()
            .get_opt(&format!("{name}-dependent"))
            .await
            .ok()??;
        let source = dependent.annotations().get(DEPENDENT_OF);
        (source.map(String::as_str) == Some(name)
            && dependent.data.clone().unwrap_or_default() == want)
            .then_some(())
    })
    .await;
}

/// Waits until `name` and its dependent are both gone.
async fn wait_gone(side: &Side, name: &str) {
    let what = format!("{}: {name} and its dependent deleted", side.label);
    eventually(WAIT, &what, || async {
        let api = side.api::<ConfigMap>();
        let cm = api.get_opt(name).await.ok()?;
        let dependent = api.get_opt(&format!("{name}-dependent")).await.ok()?;
        (cm.is_none() && dependent.is_none()).then_some(())
    })
    .await;
}

/// Waits for an Event with `reason` about `name`, published by the controller.
async fn wait_event(side: &Side, name: &str, reason: &str) -> Event {
    let what = format!("{}: a {reason} Event about {name}", side.label);
    eventually(WAIT, &what, || async {
        let events = side.api::<Event>().list(&Default::default()).await.ok()?;
        events.items.into_iter().find(|e| {
            e.reason.as_deref() == Some(reason)
                && e.reporting_controller.as_deref() == Some(MODULE)
                && e.regarding.as_ref().is_some_and(|r| {
                    r.kind.as_deref() == Some("ConfigMap") && r.name.as_deref() == Some(name)
                })
        })
    })
    .await
}

#[tokio::test]
async fn finalizer_controller_wasm_and_native_reach_the_same_state() {
    let client = client().await;
    let mut runs = SideBySide::wasm_and_native(&client, "finalizer").await;
    // Labelled before the controller starts (found by its first list), and one the
    // controller must leave alone.
    runs.each(async |side| {
        side.create(&labelled_config_map("fin-first", true, &[("a", "1")]))
            .await;
        side.create(&labelled_config_map("plain", false, &[("b", "2")]))
            .await;
    })
    .await;
    runs.start(MODULE, &[], "watching ConfigMaps", WAIT);

    runs.each(async |side| wait_applied(side, "fin-first", &[("a", "1")]).await)
        .await;

    // Created while watching, then updated.
    runs.each(async |side| {
        side.create(&labelled_config_map("fin-second", true, &[("x", "1")]))
            .await
    })
    .await;
    runs.each(async |side| wait_applied(side, "fin-second", &[("x", "1")]).await)
        .await;
    let patch = serde_json::json!({ "data": { "x": "2", "y": "3" } });
    runs.each(async |side| {
        side.merge_patch::<ConfigMap>("fin-second", patch.clone())
            .await
    })
    .await;
    runs.each(async |side| wait_applied(side, "fin-second", &[("x", "2"), ("y", "3")]).await)
        .await;

    // Deleted: the finalizer holds it until the dependent is gone, then it goes.
    runs.each(async |side| side.delete::<ConfigMap>("fin-first").await)
        .await;
    runs.each(async |side| wait_gone(side, "fin-first").await)
        .await;

    // The apiserver restarts; a create and a delete made right after must still be seen.
    restart_apiserver().expect("apiserver restarted");
    runs.each(async |side| {
        side.create(&labelled_config_map(
            "fin-third",
            true,
            &[("z", "after the restart")],
        ))
        .await;
        side.delete::<ConfigMap>("fin-second").await;
    })
    .await;
    runs.each(async |side| {
        wait_applied(side, "fin-third", &[("z", "after the restart")]).await;
        wait_gone(side, "fin-second").await;
    })
    .await;

    // Each step was published as an Event about the object.
    for side in &runs.sides {
        for name in ["fin-first", "fin-second", "fin-third"] {
            let event = wait_event(side, name, "DependentApplied").await;
            assert_eq!(event.type_.as_deref(), Some("Normal"));
            assert_eq!(event.action.as_deref(), Some("Apply"));
            assert_eq!(
                event.related.and_then(|r| r.name),
                Some(format!("{name}-dependent"))
            );
        }
        for name in ["fin-first", "fin-second"] {
            wait_event(side, name, "DependentDeleted").await;
        }
    }

    // The unlabelled ConfigMap was left alone.
    for side in &runs.sides {
        let plain = side.api::<ConfigMap>().get("plain").await.expect("get");
        assert!(plain.finalizers().is_empty(), "{}: {plain:?}", side.label);
    }

    // Both builds reached the same state.
    let resources = [ApiResource::erase::<ConfigMap>(&())];
    runs.assert_same_state(
        &resources,
        &[
            "ConfigMap/fin-third",
            "ConfigMap/fin-third-dependent",
            "ConfigMap/plain",
        ],
    )
    .await;

    // Both stop on SIGTERM and exit 0.
    runs.stop(Stop::Term, "finalizer-controller: stopped", WAIT);
}
