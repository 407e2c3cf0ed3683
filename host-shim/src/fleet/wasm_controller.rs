//! The `WasmController` custom resource (`wasmcontrollers.kube-wasm.dev/v1alpha1`, namespaced):
//! one module the host runs, declared in the cluster. Its spec says where the module comes
//! from (an OCI `image`, or a `path` the host can read) and how it runs — the manifest entry's
//! fields, validated by the same rules with the same messages ([`RunFields`]); its status is
//! what the host reports (phase, digest, restarts, last error, memory, host, conditions).
//!
//! Creating one is like creating a Pod running as its ServiceAccount: `serviceAccountName`
//! names a ServiceAccount of the resource's own namespace, which the host impersonates; the
//! module's default namespace is the resource's namespace.

use std::collections::BTreeMap;

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::fleet::module_fields::{
    QuotasSpec, RuleSpec, RunFields, SuspendSpec, check_dns_subdomain,
};
use crate::runtime::options::{ModuleOptions, ModuleSource};
use crate::upstream::identity::ServiceAccount;

/// The spec of a [`WasmController`].
#[derive(
    CustomResource, Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema,
)]
#[kube(
    group = "kube-wasm.dev",
    version = "v1alpha1",
    kind = "WasmController",
    namespaced,
    status = "WasmControllerStatus",
    shortname = "wc",
    category = "kube-wasm",
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.phase"}"#,
    printcolumn = r#"{"name":"Restarts","type":"integer","jsonPath":".status.restarts"}"#,
    printcolumn = r#"{"name":"Digest","type":"string","jsonPath":".status.digest","priority":0}"#,
    printcolumn = r#"{"name":"Host","type":"string","jsonPath":".status.host"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WasmControllerSpec {
    /// The module as an OCI image reference, by tag or digest (`registry/repo:tag`,
    /// `registry/repo@sha256:…`), pulled with the `imagePullSecrets`. Exactly one of `image`
    /// and `path`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// The module as a file in the host's local modules folder (`--local-modules`; a relative
    /// path, for local development). Exactly one of `image` and `path`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Secrets of type `kubernetes.io/dockerconfigjson` in the resource's namespace with the
    /// registry's credentials, as a Pod's `imagePullSecrets`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub image_pull_secrets: Vec<LocalObjectReference>,
    /// The ServiceAccount of the resource's namespace the module acts as; none: the host's
    /// own identity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_name: Option<String>,
    /// Environment variables (string values; `KUBE_WASM_*` is the host's).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Arguments after the module name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// The linear memory cap, a size such as `64Mi` (default `256Mi`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<String>,
    /// `Always`, `OnFailure` (default) or `Never`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_policy: Option<String>,
    /// Allowlist checked before a request leaves the host; none: what the identity may.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permissions: Option<Vec<RuleSpec>>,
    /// Suspend to disk when idle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<SuspendSpec>,
    /// What the module may make the host hold at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quotas: Option<QuotasSpec>,
}

/// A reference to a Secret of the resource's namespace, by name (a Pod's
/// `LocalObjectReference`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LocalObjectReference {
    /// The Secret's name.
    pub name: String,
}

/// Where a [`WasmController`]'s module is in its life.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
pub enum Phase {
    /// Accepted, not yet started.
    #[default]
    Pending,
    /// Its image is being pulled.
    Pulling,
    /// Its module runs.
    Running,
    /// Its module is suspended to disk while idle.
    Suspended,
    /// It failed and waits to be restarted.
    BackOff,
    /// It cannot run: an invalid spec, an image that is not a module, a digest mismatch, a
    /// module the host refuses (see `message`).
    Failed,
    /// Its module ended and is not restarted (its restart policy), or it is being deleted.
    Stopped,
}

/// The status of a [`WasmController`], written by the host running it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WasmControllerStatus {
    /// Where the module is in its life.
    pub phase: Phase,
    /// The digest of the module running (`sha256:…`): for an image, what its tag resolved to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// Restarts of the module since the spec last changed.
    #[serde(default)]
    pub restarts: u32,
    /// The last error, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The module's linear memory after its last entry, in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<u64>,
    /// The host replica holding it (its claim: only this replica runs the module). Written
    /// only by compare-and-swap; cleared when the replica hands the module over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// When `host` claimed it (RFC 3339, microseconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_since: Option<String>,
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// `Ready` (the module runs) and `Pulled` (its wasm is in the host).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// A condition of the status, in the shape of Kubernetes' `metav1.Condition`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// `Ready` or `Pulled`.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// A CamelCase reason.
    pub reason: String,
    /// A human-readable message, if there is one (an empty string is left out: kube-apiserver
    /// 1.20 reads an empty string in a merge patch as `null`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// When the status last changed (RFC 3339).
    pub last_transition_time: String,
    /// The `metadata.generation` the condition was set for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// A spec validated into what the host runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Validated {
    /// Where the module comes from.
    pub source: ModuleSource,
    /// The Secrets holding registry credentials.
    pub pull_secrets: Vec<String>,
    /// How it runs (namespace and identity included).
    pub options: ModuleOptions,
}

impl WasmControllerSpec {
    /// Validates the spec of a resource in `namespace` with the manifest's rules and messages
    /// (`spec.memory: …`).
    ///
    /// # Errors
    /// Every problem, one message each.
    pub fn validate(&self, namespace: &str) -> Result<Validated, Vec<String>> {
        let mut problems = Vec::new();
        let source = match (&self.image, &self.path) {
            (Some(image), None) => {
                if let Err(e) = image.parse::<oci_client::Reference>() {
                    problems.push(format!(
                        "spec.image: {image:?} is not an image reference ({e})"
                    ));
                }
                ModuleSource::Image(image.clone())
            }
            (None, Some(path)) if !path.is_empty() => ModuleSource::File(path.into()),
            (None, Some(_)) => {
                problems.push("spec.path: is empty".into());
                ModuleSource::File(Default::default())
            }
            (Some(_), Some(_)) => {
                problems.push("spec: has both `image` and `path`; give one".into());
                ModuleSource::File(Default::default())
            }
            (None, None) => {
                problems.push(
                    "spec: has neither `image` (an OCI reference) nor `path` (a file)".into(),
                );
                ModuleSource::File(Default::default())
            }
        };
        let service_account = self.service_account_name.as_ref().map(|name| {
            if let Err(e) = check_dns_subdomain(name) {
                problems.push(format!("spec.serviceAccountName: {e}"));
            }
            ServiceAccount {
                namespace: namespace.to_owned(),
                name: name.clone(),
            }
        });
        for (i, secret) in self.image_pull_secrets.iter().enumerate() {
            if let Err(e) = check_dns_subdomain(&secret.name) {
                problems.push(format!("spec.imagePullSecrets[{i}].name: {e}"));
            }
        }
        let fields = RunFields {
            env: self.env.clone(),
            args: self.args.clone(),
            memory: self.memory.clone(),
            restart_policy: self.restart_policy.clone(),
            permissions: self.permissions.clone(),
            suspend: self.suspend.clone(),
            quotas: self.quotas.clone(),
        }
        .validate("spec", &mut problems);
        if !problems.is_empty() {
            return Err(problems);
        }
        Ok(Validated {
            source,
            pull_secrets: self
                .image_pull_secrets
                .iter()
                .map(|s| s.name.clone())
                .collect(),
            options: ModuleOptions {
                namespace: Some(namespace.to_owned()),
                service_account,
                ..fields
            },
        })
    }
}

/// The CustomResourceDefinition as YAML (what `host-shim crd` prints and `deploy/` ships).
///
/// # Errors
/// If the definition does not serialize (it always does).
pub fn crd_yaml() -> anyhow::Result<String> {
    use kube::CustomResourceExt as _;
    Ok(serde_saphyr::to_string(&WasmController::crd())?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::CustomResourceExt as _;

    #[test]
    fn the_crd_is_named_and_printed_as_documented() {
        let crd = WasmController::crd();
        assert_eq!(
            crd.metadata.name.as_deref(),
            Some("wasmcontrollers.kube-wasm.dev")
        );
        assert_eq!(crd.spec.scope, "Namespaced");
        let version = &crd.spec.versions[0];
        assert_eq!(version.name, "v1alpha1");
        let columns: Vec<_> = version
            .additional_printer_columns
            .iter()
            .flatten()
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(columns, ["Phase", "Restarts", "Digest", "Host", "Age"]);
        assert!(
            version
                .subresources
                .as_ref()
                .is_some_and(|s| s.status.is_some())
        );
    }

    #[test]
    fn specs_are_validated_with_the_manifests_messages() {
        let spec: WasmControllerSpec = serde_json::from_value(serde_json::json!({
            "image": "registry.example/team/mirror:v1",
            "serviceAccountName": "mirror",
            "memory": "64Mi",
            "permissions": [{"verbs": ["get"], "resources": ["configmaps"]}],
        }))
        .expect("a spec");
        let valid = spec.validate("team-a").expect("valid");
        assert_eq!(
            valid.source,
            ModuleSource::Image("registry.example/team/mirror:v1".into())
        );
        assert_eq!(valid.options.namespace.as_deref(), Some("team-a"));
        assert_eq!(
            valid.options.service_account,
            Some(ServiceAccount {
                namespace: "team-a".into(),
                name: "mirror".into()
            }),
            "a ServiceAccount of the resource's own namespace"
        );
        assert_eq!(valid.options.memory_limit, Some(64 << 20));
        let bad: WasmControllerSpec = serde_json::from_value(serde_json::json!({
            "memory": "64Q",
            "restartPolicy": "Sometimes",
        }))
        .expect("a spec");
        let problems = bad.validate("ns").expect_err("invalid");
        assert_eq!(
            problems[0],
            "spec: has neither `image` (an OCI reference) nor `path` (a file)"
        );
        assert!(
            problems
                .iter()
                .any(|p| p.starts_with("spec.memory: \"64Q\" is not a size")),
            "{problems:?}"
        );
        assert!(
            problems
                .iter()
                .any(|p| p.starts_with("spec.restartPolicy: ")),
            "{problems:?}"
        );
    }

    #[test]
    fn the_shipped_crd_is_the_generated_one() {
        let shipped = include_str!("../../../deploy/wasmcontroller-crd.yaml");
        assert_eq!(
            shipped,
            crd_yaml().expect("yaml"),
            "deploy/wasmcontroller-crd.yaml is stale: regenerate it with `host-shim crd`"
        );
    }
}
