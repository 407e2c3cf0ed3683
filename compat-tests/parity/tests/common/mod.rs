//! What the parity tests share: object builders and the kinds they compare.

#![allow(dead_code)]

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Resource;
use kube::api::{ApiResource, ObjectMeta};
use kube_wasm_parity::Parity;
use parity_scenarios::types::{Widget, WidgetSpec};

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

/// A ConfigMap with `labels` and `data`.
pub fn config_map(name: &str, labels: &[(&str, &str)], data: &[(&str, &str)]) -> ConfigMap {
    let map = |pairs: &[(&str, &str)]| {
        (!pairs.is_empty()).then(|| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        })
    };
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: map(labels),
            ..ObjectMeta::default()
        },
        data: map(data),
        ..ConfigMap::default()
    }
}
