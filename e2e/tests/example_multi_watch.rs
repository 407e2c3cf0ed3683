//! The multi-watch example (ConfigMaps, Secrets and ServiceAccounts watched as one stream,
//! filtered on label changes, recorded in the ConfigMap `multi-watch-log`), as a wasm module
//! in the host shim and as a native build, each in its own namespace, driven by the same
//! steps: every kind is recorded, data- and annotation-only updates are not, label changes
//! are; after an apiserver restart, new objects of every kind are recorded and the relist
//! records nothing for the objects that were already seen; both runs end in the same state
//! and exit 0 when stopped.

use k8s_openapi::api::core::v1::{ConfigMap, Secret, ServiceAccount};
use kube::api::ApiResource;
use kube_wasm_e2e::objects::{config_map, meta};
use kube_wasm_e2e::side_by_side::{SideBySide, Stop};
use kube_wasm_e2e::{client, eventually, restart_apiserver};
use std::collections::BTreeMap;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(30);
const MODULE: &str = "multi-watch";
const LABEL: (&str, &str) = ("kube-wasm.dev/watched", "true");
const LOG: &str = "multi-watch-log";
/// The record of an object seen with only the watched label.
const WATCHED: &str = "kube-wasm.dev/watched=true";

/// A ConfigMap holding `k=1`, with the watched label or without.
fn watched_config_map(name: &str, watched: bool) -> ConfigMap {
    let labels: &[(&str, &str)] = if watched { &[LABEL] } else { &[] };
    config_map(name, labels, &[("k", "1")])
}

fn secret(name: &str) -> Secret {
    Secret {
        metadata: meta(name, &[LABEL]),
        string_data: Some([("token".to_string(), "s3cret".to_string())].into()),
        ..Secret::default()
    }
}

fn service_account(name: &str) -> ServiceAccount {
    ServiceAccount {
        metadata: meta(name, &[LABEL]),
        ..ServiceAccount::default()
    }
}

fn count(record: &str) -> u32 {
    record
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Waits until every run's log has recorded each object of `want` at least as often as
/// wanted, then asserts the log is exactly `want` (so a record too many fails).
async fn expect_log(runs: &SideBySide, want: &[(&str, &str)]) {
    let want: BTreeMap<String, String> = want
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    runs.each(async |side| {
        let what = format!("{}: log {want:?}", side.label);
        let log = eventually(WAIT, &what, || async {
            let log = side.get::<ConfigMap>(LOG).await?.data?;
            want.iter()
                .all(|(k, v)| log.get(k).is_some_and(|r| count(r) >= count(v)))
                .then_some(log)
        })
        .await;
        assert_eq!(log, want, "{}: the log", side.label);
    })
    .await;
}

#[tokio::test]
async fn records_label_changes_of_every_kind_through_an_apiserver_restart() {
    let client = client().await;
    let mut runs = SideBySide::wasm_and_native(&client, "multi-watch").await;
    let gold = format!("2 {WATCHED},tier=gold");
    let once = format!("1 {WATCHED}");

    // Before the programs start: one watched object of each kind, and an unwatched one.
    runs.create_answered(&watched_config_map("alpha", true), WAIT)
        .await;
    runs.create_answered(&watched_config_map("ignored", false), WAIT)
        .await;
    runs.create_answered(&secret("token"), WAIT).await;
    runs.create_answered(&service_account("builder"), WAIT)
        .await;

    runs.start(MODULE, &[], "multi-watch: watching", WAIT);
    expect_log(
        &runs,
        &[
            ("ConfigMap.alpha", &once),
            ("Secret.token", &once),
            ("ServiceAccount.builder", &once),
        ],
    )
    .await;

    // Updates the label predicate filters out, then label changes on the same objects (each
    // kind's events arrive in order, so when the label change is recorded the earlier update
    // has been filtered: the count is 2, not 3), and a new object.
    runs.merge_patch_answered::<ConfigMap>("alpha", serde_json::json!({"data": {"k": "2"}}), WAIT)
        .await;
    runs.merge_patch_answered::<ServiceAccount>(
        "builder",
        serde_json::json!({"metadata": {"annotations": {"note": "data only"}}}),
        WAIT,
    )
    .await;
    runs.merge_patch_answered::<Secret>(
        "token",
        serde_json::json!({"stringData": {"token": "new"}}),
        WAIT,
    )
    .await;
    let tier_gold = serde_json::json!({"metadata": {"labels": {"tier": "gold"}}});
    runs.merge_patch_answered::<ConfigMap>("alpha", tier_gold.clone(), WAIT)
        .await;
    runs.merge_patch_answered::<ServiceAccount>("builder", tier_gold, WAIT)
        .await;
    runs.create_answered(&watched_config_map("beta", true), WAIT)
        .await;
    expect_log(
        &runs,
        &[
            ("ConfigMap.alpha", &gold),
            ("ConfigMap.beta", &once),
            ("Secret.token", &once),
            ("ServiceAccount.builder", &gold),
        ],
    )
    .await;

    // Right after the apiserver comes back: new objects of every kind and a label change are
    // recorded; the objects a relist re-emits unchanged are not recorded again.
    restart_apiserver().expect("apiserver restarted");
    runs.create_answered(&watched_config_map("gamma", true), WAIT)
        .await;
    runs.create_answered(&secret("second"), WAIT).await;
    runs.create_answered(&service_account("deployer"), WAIT)
        .await;
    runs.merge_patch_answered::<Secret>(
        "token",
        serde_json::json!({"metadata": {"labels": {"tier": "silver"}}}),
        WAIT,
    )
    .await;
    let silver = format!("2 {WATCHED},tier=silver");
    expect_log(
        &runs,
        &[
            ("ConfigMap.alpha", &gold),
            ("ConfigMap.beta", &once),
            ("ConfigMap.gamma", &once),
            ("Secret.second", &once),
            ("Secret.token", &silver),
            ("ServiceAccount.builder", &gold),
            ("ServiceAccount.deployer", &once),
        ],
    )
    .await;
    for side in &runs.sides {
        assert!(
            !side
                .program()
                .stdout
                .snapshot()
                .iter()
                .any(|l| l.contains("ignored")),
            "the unlabelled ConfigMap is not watched"
        );
    }

    let resources = [
        ApiResource::erase::<ConfigMap>(&()),
        ApiResource::erase::<Secret>(&()),
        ApiResource::erase::<ServiceAccount>(&()),
    ];
    runs.assert_same_state(
        &resources,
        &[
            "ConfigMap/alpha",
            "ConfigMap/beta",
            "ConfigMap/gamma",
            "ConfigMap/ignored",
            "ConfigMap/multi-watch-log",
            "Secret/second",
            "Secret/token",
            "ServiceAccount/builder",
            "ServiceAccount/deployer",
        ],
    )
    .await;

    // The host shim turns SIGTERM into the module's ctrl_c; the native build's ctrl_c is
    // SIGINT.
    runs.stop(Stop::Int, "multi-watch: stop requested", WAIT);
}
