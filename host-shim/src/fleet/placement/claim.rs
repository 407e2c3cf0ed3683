//! A replica's claim on a WasmController: `status.host` (and `status.hostSince`), written only
//! by compare-and-swap — a merge patch of the status subresource that carries the resource's
//! `metadata.resourceVersion`, which kube-apiserver applies as a precondition (409 Conflict
//! when anything changed since that version was read). Of two replicas claiming from the same
//! version, one wins.

use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

use crate::fleet::wasm_controller::WasmController;

/// Why a claim write failed.
#[derive(Debug, thiserror::Error)]
pub enum ClaimError {
    /// The resource changed since it was read: read it again and decide again.
    #[error("the resource changed since it was read")]
    Conflict,
    /// Any other refusal (not found, forbidden, unreachable).
    #[error("{0}")]
    Kube(kube::Error),
}

impl From<kube::Error> for ClaimError {
    fn from(err: kube::Error) -> Self {
        match err {
            kube::Error::Api(status) if status.code == 409 => Self::Conflict,
            other => Self::Kube(other),
        }
    }
}

/// Writes `replica` as the holder of `name`, if it still is at `resource_version`; with
/// `pending`, the phase becomes `Pending` too (the module does not run yet). Returns the
/// resource as written.
///
/// # Errors
/// [`ClaimError::Conflict`] when it changed since; [`ClaimError::Kube`] otherwise.
pub async fn claim(
    api: &Api<WasmController>,
    name: &str,
    resource_version: &str,
    replica: &str,
    pending: bool,
) -> Result<WasmController, ClaimError> {
    let mut status = json!({ "host": replica, "hostSince": now_micros() });
    if pending {
        status["phase"] = json!("Pending");
    }
    let patch = json!({
        "metadata": { "resourceVersion": resource_version },
        "status": status,
    });
    Ok(api
        .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?)
}

/// Clears the holder of `name` (the module has stopped here), if it still is at
/// `resource_version`; the phase becomes `Pending` with `message` until the next holder
/// writes its own status.
///
/// # Errors
/// As [`claim`].
pub async fn release(
    api: &Api<WasmController>,
    name: &str,
    resource_version: &str,
    message: &str,
) -> Result<WasmController, ClaimError> {
    let patch = json!({
        "metadata": { "resourceVersion": resource_version },
        "status": { "host": null, "hostSince": null, "phase": "Pending", "message": message },
    });
    Ok(api
        .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?)
}

/// Now in RFC 3339 with microseconds, as Kubernetes' `MicroTime`.
fn now_micros() -> String {
    k8s_openapi::jiff::Timestamp::now()
        .round(k8s_openapi::jiff::Unit::Microsecond)
        .map(|t| t.to_string())
        .unwrap_or_default()
}
