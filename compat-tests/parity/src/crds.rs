//! Installing the scenarios' CustomResourceDefinitions.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams, PostParams, ResourceExt};
use kube::{Client, CustomResourceExt};
use kube_wasm_e2e::wait_crd_established;
use parity_scenarios::types::{Gate, Team, Widget};
use std::time::Duration;

/// The CRDs of `parity_scenarios::types`.
pub fn all() -> Vec<CustomResourceDefinition> {
    vec![Widget::crd(), Team::crd(), Gate::crd()]
}

/// Creates every scenario CRD (applying it when it exists: tests run in parallel and the
/// cluster outlives them) and waits until each is established.
///
/// # Panics
/// When the apiserver refuses a CRD or does not establish it within a minute.
pub async fn install(client: &Client) {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in all() {
        let name = crd.name_any();
        match api.create(&PostParams::default(), &crd).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 409 => {
                api.patch(
                    &name,
                    &PatchParams::apply("parity-harness").force(),
                    &Patch::Apply(&crd),
                )
                .await
                .unwrap_or_else(|e| panic!("applying CRD {name}: {e}"));
            }
            Err(e) => panic!("creating CRD {name}: {e}"),
        }
        wait_crd_established(&api, &name, Duration::from_secs(60)).await;
    }
}
