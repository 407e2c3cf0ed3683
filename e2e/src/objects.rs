//! Object builders and installers shared by the tests, the parity suite and the benchmark:
//! ConfigMaps and metadata with labels, CustomResourceDefinitions, ServiceAccounts for modules.

use crate::{env_path, eventually};
use k8s_openapi::api::core::v1::{ConfigMap, ServiceAccount};
use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, ApiResource, ObjectMeta, Patch, PatchParams, PostParams, ResourceExt as _};
use std::collections::BTreeMap;
use std::time::Duration;

/// `pairs` as a map, `None` when there are none (the apiserver stores an empty map as none).
fn map(pairs: &[(&str, &str)]) -> Option<BTreeMap<String, String>> {
    (!pairs.is_empty()).then(|| {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    })
}

/// Metadata of an object `name` with these labels.
pub fn meta(name: &str, labels: &[(&str, &str)]) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        labels: map(labels),
        ..ObjectMeta::default()
    }
}

/// A ConfigMap `name` with these labels and data.
pub fn config_map(name: &str, labels: &[(&str, &str)], data: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        metadata: meta(name, labels),
        data: map(data),
        ..ConfigMap::default()
    }
}

/// The label configmap-mirror mirrors ConfigMaps with: `kube-wasm.dev/mirror=true`.
pub const MIRROR_LABEL: (&str, &str) = ("kube-wasm.dev/mirror", "true");

/// A ConfigMap `name` that configmap-mirror mirrors ([`MIRROR_LABEL`]), with data `n: <name>`.
pub fn mirrored(name: &str) -> ConfigMap {
    config_map(name, &[MIRROR_LABEL], &[("n", name)])
}

/// The `ConfigMapGenerator` custom resource of the configmap-generator example
/// (`kube-wasm.example.com/v1`), for the dynamic client.
pub fn generator_resource() -> ApiResource {
    ApiResource {
        group: "kube-wasm.example.com".into(),
        version: "v1".into(),
        api_version: "kube-wasm.example.com/v1".into(),
        kind: "ConfigMapGenerator".into(),
        plural: "configmapgenerators".into(),
    }
}

/// The CRD the native build of `bin` (in `KUBE_WASM_NATIVE_BIN`) prints with `<bin> crd`.
///
/// # Panics
/// If it does not run or prints no CRD.
pub fn native_crd(bin: &str) -> CustomResourceDefinition {
    let out = std::process::Command::new(env_path("KUBE_WASM_NATIVE_BIN").join(bin))
        .arg("crd")
        .output()
        .unwrap_or_else(|e| panic!("{bin} crd runs: {e}"));
    assert!(out.status.success(), "{bin} crd: {out:?}");
    serde_json::from_slice(&out.stdout).expect("the CRD is JSON")
}

/// Creates `crd` (or, when it exists from an earlier run or a parallel test, server-side
/// applies it as field manager `manager`) and waits up to `timeout` until it is established.
///
/// # Panics
/// When the apiserver refuses the CRD or does not establish it in time.
pub async fn install_crd(
    client: &Client,
    crd: &CustomResourceDefinition,
    manager: &str,
    timeout: Duration,
) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let name = crd.name_any();
    match crds.create(&PostParams::default(), crd).await {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 409 => {
            crds.patch(
                &name,
                &PatchParams::apply(manager).force(),
                &Patch::Apply(crd),
            )
            .await
            .unwrap_or_else(|e| panic!("applying CRD {name}: {e}"));
        }
        Err(e) => panic!("creating CRD {name}: {e}"),
    }
    wait_crd_established(&crds, &name, timeout).await;
}

/// Waits up to `timeout` until the CustomResourceDefinition `name` reports the condition
/// `Established=True` (its API is served from then on).
pub async fn wait_crd_established(
    crds: &Api<CustomResourceDefinition>,
    name: &str,
    timeout: Duration,
) {
    eventually(timeout, &format!("CRD {name} established"), || async {
        let crd = crds.get(name).await.ok()?;
        let established = crd
            .status?
            .conditions?
            .iter()
            .any(|c| c.type_ == "Established" && c.status == "True");
        established.then_some(())
    })
    .await;
}

fn rule(resources: &[&str], verbs: &[&str]) -> PolicyRule {
    PolicyRule {
        api_groups: Some(vec![String::new()]),
        resources: Some(resources.iter().map(|s| (*s).to_string()).collect()),
        verbs: verbs.iter().map(|s| (*s).to_string()).collect(),
        ..PolicyRule::default()
    }
}

/// Creates ServiceAccount `name` in `ns` with a Role (and its binding) letting it run
/// configmap-mirror there: read ConfigMaps, write Secrets.
pub async fn mirror_account(client: &kube::Client, ns: &str, name: &str) {
    let pp = PostParams::default();
    Api::<ServiceAccount>::namespaced(client.clone(), ns)
        .create(
            &pp,
            &ServiceAccount {
                metadata: meta(name, &[]),
                ..ServiceAccount::default()
            },
        )
        .await
        .expect("service account");
    Api::<Role>::namespaced(client.clone(), ns)
        .create(
            &pp,
            &Role {
                metadata: meta(name, &[]),
                rules: Some(vec![
                    rule(&["configmaps"], &["get", "list", "watch"]),
                    rule(&["secrets"], &["get", "list", "create", "patch", "delete"]),
                ]),
            },
        )
        .await
        .expect("role");
    Api::<RoleBinding>::namespaced(client.clone(), ns)
        .create(
            &pp,
            &RoleBinding {
                metadata: meta(name, &[]),
                role_ref: RoleRef {
                    api_group: Some("rbac.authorization.k8s.io".into()),
                    kind: "Role".into(),
                    name: name.into(),
                },
                subjects: Some(vec![Subject {
                    kind: "ServiceAccount".into(),
                    name: name.into(),
                    namespace: Some(ns.into()),
                    ..Subject::default()
                }]),
            },
        )
        .await
        .expect("role binding");
}
