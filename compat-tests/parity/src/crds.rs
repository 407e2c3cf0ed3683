//! Installing the scenarios' CustomResourceDefinitions.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{Client, CustomResourceExt};
use kube_wasm_e2e::objects::install_crd;
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
    for crd in all() {
        install_crd(client, &crd, "parity-harness", Duration::from_secs(60)).await;
    }
}
