//! The store-reader example (a reflector filling a Store in one task, another task writing a
//! summary of it), as a wasm module in the host shim and as a native build, each in its own
//! namespace, driven by the same steps: the summary follows creates, label changes, data
//! changes and deletes, and catches up with changes made right after an apiserver restart;
//! both runs end in the same state and exit 0 when stopped.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::ApiResource;
use kube_wasm_e2e::objects::config_map;
use kube_wasm_e2e::side_by_side::{Side, SideBySide, Stop};
use kube_wasm_e2e::{client, eventually, restart_apiserver};
use std::collections::BTreeMap;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(30);
const MODULE: &str = "store-reader";
const LABEL: &str = "kube-wasm.dev/store";
const SUMMARY: &str = "store-summary";

/// Waits until every run's summary holds exactly these values.
async fn expect_summary(runs: &SideBySide, count: usize, names: &str, primary: &str, mode: &str) {
    let want: BTreeMap<String, String> = [
        ("count", count.to_string()),
        ("names", names.to_string()),
        ("primary", primary.to_string()),
        ("mode", mode.to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    runs.each(async |side| {
        let what = format!("{}: summary {want:?}", side.label);
        eventually(WAIT, &what, || async {
            let cm = side.get::<ConfigMap>(SUMMARY).await?;
            (cm.data.as_ref() == Some(&want)).then_some(())
        })
        .await;
    })
    .await;
}

fn summary_writes(side: &Side) -> usize {
    side.program()
        .stdout
        .snapshot()
        .iter()
        .filter(|l| l.contains("store-reader: wrote summary"))
        .count()
}

#[tokio::test]
async fn summary_follows_the_store_through_an_apiserver_restart() {
    let client = client().await;
    let mut runs = SideBySide::wasm_and_native(&client, "store-reader").await;
    let label = (LABEL, "true");

    // Before the programs start: the initial listing finds `alpha`, not the unlabelled `other`.
    runs.create_answered(&config_map("alpha", &[label], &[("k", "1")]), WAIT)
        .await;
    runs.create_answered(&config_map("other", &[], &[]), WAIT)
        .await;

    runs.start(MODULE, &[], "store-reader: store ready", WAIT);
    expect_summary(&runs, 1, "alpha", "none", "unset").await;

    // Created while watching; `find` picks the one labelled role=primary.
    runs.create_answered(
        &config_map("beta", &[label, ("role", "primary")], &[]),
        WAIT,
    )
    .await;
    expect_summary(&runs, 2, "alpha,beta", "beta", "unset").await;

    // Label changes: `alpha` leaves the selector, `other` joins it.
    runs.merge_patch_answered::<ConfigMap>(
        "alpha",
        serde_json::json!({"metadata": {"labels": {LABEL: null}}}),
        WAIT,
    )
    .await;
    runs.merge_patch_answered::<ConfigMap>(
        "other",
        serde_json::json!({"metadata": {"labels": {LABEL: "true"}}}),
        WAIT,
    )
    .await;
    expect_summary(&runs, 2, "beta,other", "beta", "unset").await;

    // `settings` is read with `get`; its data changes are followed.
    runs.create_answered(&config_map("settings", &[label], &[("mode", "blue")]), WAIT)
        .await;
    expect_summary(&runs, 3, "beta,other,settings", "beta", "blue").await;
    runs.merge_patch_answered::<ConfigMap>(
        "settings",
        serde_json::json!({"data": {"mode": "green"}}),
        WAIT,
    )
    .await;
    expect_summary(&runs, 3, "beta,other,settings", "beta", "green").await;

    runs.delete_answered::<ConfigMap>("beta", WAIT).await;
    expect_summary(&runs, 2, "other,settings", "none", "green").await;

    // Changes made right after the apiserver comes back: the reflector resumes or relists
    // and the summary catches up with all of them.
    restart_apiserver().expect("apiserver restarted");
    runs.create_answered(
        &config_map("gamma", &[label, ("role", "primary")], &[]),
        WAIT,
    )
    .await;
    runs.delete_answered::<ConfigMap>("other", WAIT).await;
    runs.merge_patch_answered::<ConfigMap>(
        "settings",
        serde_json::json!({"data": {"mode": "red"}}),
        WAIT,
    )
    .await;
    expect_summary(&runs, 2, "gamma,settings", "gamma", "red").await;

    // Nothing changes any more, so nothing more is written (three ticks later).
    let last = r#"wrote summary {"count": "2", "mode": "red", "names": "gamma,settings", "primary": "gamma"}"#;
    for side in &runs.sides {
        side.wait_for(last, WAIT);
    }
    let writes: Vec<usize> = runs.sides.iter().map(summary_writes).collect();
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        runs.sides.iter().map(summary_writes).collect::<Vec<_>>(),
        writes,
        "an unchanged summary is not written again"
    );

    let resources = [ApiResource::erase::<ConfigMap>(&())];
    runs.assert_same_state(
        &resources,
        &[
            "ConfigMap/alpha",
            "ConfigMap/gamma",
            "ConfigMap/settings",
            "ConfigMap/store-summary",
        ],
    )
    .await;

    // The host shim turns SIGTERM into the module's ctrl_c; the native build's ctrl_c is
    // SIGINT.
    runs.stop(Stop::Int, "store-reader: stop requested", WAIT);
}
