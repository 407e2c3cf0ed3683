//! The scenarios with an apiserver restart mid-run. A restart disturbs every test talking to
//! the apiserver, so these live in their own test binary (cargo runs test binaries one after
//! another) and take turns.

mod common;

use common::{config_map, kind, parity, widget};
use k8s_openapi::api::core::v1::ConfigMap;
use parity_scenarios::types::Widget;
use serde_json::json;

/// One restart at a time.
static RESTARTS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test]
async fn controller_across_an_apiserver_restart() {
    let _turn = RESTARTS.lock().await;
    let resources = vec![kind::<Widget>(), kind::<ConfigMap>()];
    let mut p = parity("parity-restart-controller", resources).await;
    p.setup(async |run| run.create(&widget("before", "one")).await)
        .await;
    p.start(async |run| run.saw(&[r#"reconcile/before applied {"content": "one"}"#]))
        .await;
    p.restart_step("restart the apiserver", &["widgets", "configmaps"])
        .await;
    p.step(
        "create a widget",
        async |run| run.create(&widget("after", "two")).await,
        async |run| run.saw(&[r#"reconcile/after applied {"content": "two"}"#]),
    )
    .await;
    p.step(
        "update the first widget",
        async |run| {
            run.merge_patch::<Widget>("before", json!({"spec": {"content": "three"}}))
                .await
        },
        async |run| run.saw(&[r#"reconcile/before applied {"content": "three"}"#]),
    )
    .await;
    p.finish(&[
        "ConfigMap/after",
        "ConfigMap/before",
        "Widget/after",
        "Widget/before",
    ])
    .await;
}

#[tokio::test]
async fn reflector_across_an_apiserver_restart() {
    let _turn = RESTARTS.lock().await;
    let mut p = parity("parity-restart-reflector", vec![kind::<ConfigMap>()]).await;
    p.setup(async |run| {
        run.create(&config_map("x", &[], &[("value", "1")])).await;
        run.create(&config_map("y", &[], &[("value", "2")])).await;
    })
    .await;
    p.start(async |run| run.saw(&["store x=1 y=2"])).await;
    p.restart_step("restart the apiserver", &["configmaps"])
        .await;
    p.step(
        "create z",
        async |run| run.create(&config_map("z", &[], &[("value", "3")])).await,
        async |run| run.saw(&["store x=1 y=2 z=3"]),
    )
    .await;
    p.step(
        "delete x",
        async |run| run.delete::<ConfigMap>("x").await,
        async |run| run.saw(&["store y=2 z=3"]),
    )
    .await;
    p.finish(&["ConfigMap/y", "ConfigMap/z"]).await;
}
