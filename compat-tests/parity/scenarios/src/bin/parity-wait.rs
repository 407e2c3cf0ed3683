//! Waiting for conditions: `wait::await_condition` until the `Gate` named `main` is open
//! (`status.open`), then a ConfigMap `gate-opened` is created; then until the gate is deleted
//! (`conditions::is_deleted` with its uid), then a ConfigMap `gate-closed` is created.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube::api::{Api, ObjectMeta, PostParams, ResourceExt};
use kube::runtime::wait::{await_condition, conditions};
use parity_scenarios::observe;
use parity_scenarios::types::Gate;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let client = Client::try_default().await?;
    let gates = Api::<Gate>::default_namespaced(client.clone());
    let config_maps = Api::<ConfigMap>::default_namespaced(client);
    observe("wait", "waiting for gate main to open");
    let gate = await_condition(gates.clone(), "main", |gate: Option<&Gate>| {
        gate.and_then(|g| g.status.as_ref()).is_some_and(|s| s.open)
    })
    .await?;
    let uid = gate.as_ref().and_then(|g| g.uid()).unwrap_or_default();
    observe("wait", "gate main is open");
    create(&config_maps, "gate-opened").await?;
    await_condition(gates, "main", conditions::is_deleted(&uid)).await?;
    observe("wait", "gate main is deleted");
    create(&config_maps, "gate-closed").await?;
    futures::future::pending::<()>().await;
    Ok(())
}

async fn create(config_maps: &Api<ConfigMap>, name: &str) -> anyhow::Result<()> {
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    };
    config_maps.create(&PostParams::default(), &cm).await?;
    observe("wait", format!("created {name}"));
    Ok(())
}
