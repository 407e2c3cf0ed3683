//! The custom resources of the scenarios, all in the group `parity.kube-wasm.example.com`.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A `Widget` asks for a ConfigMap holding `content` under `key` (default `content`).
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "parity.kube-wasm.example.com",
    version = "v1",
    kind = "Widget",
    namespaced,
    status = "WidgetStatus"
)]
#[serde(rename_all = "camelCase")]
pub struct WidgetSpec {
    /// The ConfigMap's value.
    pub content: String,
    /// The ConfigMap's key; `content` when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

impl WidgetSpec {
    /// The data key of the widget's ConfigMap.
    pub fn data_key(&self) -> String {
        self.key.clone().unwrap_or_else(|| "content".to_string())
    }
}

/// What a controller last did for a widget.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WidgetStatus {
    /// The generation last acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// A word describing the widget's state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
}

/// A `Team` lists its members; every team with members co-owns the shared `roster` ConfigMap.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "parity.kube-wasm.example.com",
    version = "v1",
    kind = "Team",
    namespaced
)]
pub struct TeamSpec {
    /// Member names.
    pub members: Vec<String>,
}

/// A `Gate` opens when someone sets `status.open`.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "parity.kube-wasm.example.com",
    version = "v1",
    kind = "Gate",
    namespaced,
    status = "GateStatus"
)]
pub struct GateSpec {
    /// What the gate guards (free text).
    pub guards: String,
}

/// A gate's state.
#[derive(Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
pub struct GateStatus {
    /// Whether the gate is open.
    pub open: bool,
}
