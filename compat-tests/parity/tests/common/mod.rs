//! What the parity tests share: object builders (the test kit's and the scenarios') and the
//! kinds they compare.

#![allow(dead_code)]

use kube::Resource;
use kube::api::ApiResource;
use kube_wasm_parity::Parity;
use parity_scenarios::types::{Widget, WidgetSpec};

pub use kube_wasm_e2e::objects::config_map;

/// Installs the CRDs and prepares the two runs of `program`.
pub async fn parity(program: &'static str, resources: Vec<ApiResource>) -> Parity {
    let parity = Parity::new(program, resources).await;
    kube_wasm_parity::crds::install(&parity.runs[0].client).await;
    parity
}

/// The compared kind of `K`.
pub fn kind<K: Resource<DynamicType = ()>>() -> ApiResource {
    ApiResource::erase::<K>(&())
}

/// A widget with `content` under the default key.
pub fn widget(name: &str, content: &str) -> Widget {
    Widget::new(
        name,
        WidgetSpec {
            content: content.into(),
            key: None,
        },
    )
}
