//! What an operator applies — `deploy/` and `deploy/example/` rendered by kustomize through an
//! overlay that sets the host's image (the one `scripts/image.sh` built, by digest) and the
//! example module's — is accepted by a real apiserver: a server-side dry run (`dryRun=All`) of
//! every rendered document, typed with k8s-openapi. Namespaces are created for real (they must
//! exist for the dry runs of what they hold), and so is the WasmController CRD (the example
//! WasmController's dry run needs it).

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use kube::api::{Api, PostParams};
use kube::core::DynamicObject;
use kube::core::NamespaceResourceScope;
use kube_wasm_e2e::deploy::{Overlay, documents, host_image, render};
use kube_wasm_e2e::{client, registry, scratch_dir, wasm_controllers};
use serde::de::DeserializeOwned;
use serde_json::Value;

fn typed<K: DeserializeOwned>(doc: &Value) -> K {
    serde_json::from_value(doc.clone()).unwrap_or_else(|e| panic!("{e}: {doc}"))
}

/// A server-side dry run (`dryRun=All`) of creating `doc` through `api`.
async fn dry_run<K>(api: Api<K>, doc: &Value)
where
    K: kube::Resource + Clone + DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    let object: K = typed(doc);
    let params = PostParams {
        dry_run: true,
        field_manager: None,
    };
    api.create(&params, &object)
        .await
        .unwrap_or_else(|e| panic!("dry run of {doc}: {e}"));
}

fn namespace_of(doc: &Value) -> &str {
    doc["metadata"]["namespace"].as_str().expect("a namespace")
}

async fn dry_run_namespaced<K>(client: &kube::Client, doc: &Value)
where
    K: kube::Resource<Scope = NamespaceResourceScope, DynamicType = ()>
        + Clone
        + DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug,
{
    dry_run(Api::<K>::namespaced(client.clone(), namespace_of(doc)), doc).await;
}

async fn dry_run_cluster<K>(client: &kube::Client, doc: &Value)
where
    K: kube::Resource<Scope = k8s_openapi::ClusterResourceScope, DynamicType = ()>
        + Clone
        + DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug,
{
    dry_run(Api::<K>::all(client.clone()), doc).await;
}

/// A `policy/v1` PodDisruptionBudget, dry-run as such where the apiserver serves
/// `policy/v1` (1.21 on), else as `policy/v1beta1`, whose fields it uses are the same.
async fn dry_run_disruption_budget(client: &kube::Client, doc: &Value) {
    assert_eq!(doc["apiVersion"], "policy/v1");
    let served = client
        .list_api_group_resources("policy/v1")
        .await
        .is_ok_and(|list| {
            list.resources
                .iter()
                .any(|r| r.kind == "PodDisruptionBudget")
        });
    let version = if served { "v1" } else { "v1beta1" };
    let resource = kube::core::ApiResource::from_gvk(&kube::core::GroupVersionKind::gvk(
        "policy",
        version,
        "PodDisruptionBudget",
    ));
    let mut doc = doc.clone();
    doc["apiVersion"] = Value::from(format!("policy/{version}"));
    let api = Api::<DynamicObject>::namespaced_with(client.clone(), namespace_of(&doc), &resource);
    dry_run::<DynamicObject>(api, &doc).await;
}

#[tokio::test]
async fn every_deploy_document_passes_a_server_side_dry_run() {
    let client = client().await;
    let module = registry::push(
        "configmap-mirror",
        "kube-wasm/configmap-mirror",
        "deploy",
        &[],
    );
    let overlay = Overlay {
        host_image: Some(host_image()),
        module_image: Some(module.clone()),
        extra_host_args: Vec::new(),
    };
    let dir = overlay.write(&scratch_dir().join(format!("deploy-{}", std::process::id())));
    let docs = documents(&render(&dir));
    // The images are the overlay's, by digest: the Deployment's container and the
    // WasmController's module.
    let deployment = docs
        .iter()
        .find(|d| d["kind"] == "Deployment")
        .expect("a Deployment");
    assert_eq!(
        deployment["spec"]["template"]["spec"]["containers"][0]["image"],
        host_image()
    );
    let resource = docs
        .iter()
        .find(|d| d["kind"] == "WasmController")
        .expect("a WasmController");
    assert_eq!(resource["spec"]["image"], module);
    let namespaces: Api<Namespace> = Api::all(client.clone());
    for doc in docs.iter().filter(|d| d["kind"] == "Namespace") {
        match namespaces.create(&PostParams::default(), &typed(doc)).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 409 => {}
            Err(e) => panic!("namespace {doc}: {e}"),
        }
    }
    wasm_controllers::install_crd();
    let mut kinds = Vec::new();
    for doc in &docs {
        let kind = doc["kind"].as_str().expect("a kind").to_owned();
        match kind.as_str() {
            "Namespace" | "CustomResourceDefinition" => {}
            "WasmController" => {
                let api = wasm_controllers::api(&client, namespace_of(doc));
                dry_run::<DynamicObject>(api, doc).await;
            }
            "ServiceAccount" => dry_run_namespaced::<ServiceAccount>(&client, doc).await,
            "ConfigMap" => dry_run_namespaced::<ConfigMap>(&client, doc).await,
            "Deployment" => dry_run_namespaced::<Deployment>(&client, doc).await,
            "Role" => dry_run_namespaced::<Role>(&client, doc).await,
            "RoleBinding" => dry_run_namespaced::<RoleBinding>(&client, doc).await,
            "ClusterRole" => dry_run_cluster::<ClusterRole>(&client, doc).await,
            "ClusterRoleBinding" => dry_run_cluster::<ClusterRoleBinding>(&client, doc).await,
            "PodDisruptionBudget" => dry_run_disruption_budget(&client, doc).await,
            other => panic!("no dry run for kind {other}"),
        }
        kinds.push(kind);
    }
    for want in [
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "CustomResourceDefinition",
        "Deployment",
        "Role",
        "RoleBinding",
        "WasmController",
        "PodDisruptionBudget",
    ] {
        assert!(
            kinds.iter().any(|k| k == want),
            "deploy/ has a {want}: {kinds:?}"
        );
    }
}
