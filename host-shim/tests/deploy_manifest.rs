//! What `deploy/` ships is what this host accepts: the example WasmController passes the
//! operator's validation, and the Deployment's arguments parse and make its replicas share the
//! fleet through Leases that their RBAC lets them hold.

use std::path::Path;

use host_shim::fleet::wasm_controller::WasmControllerSpec;
use host_shim::runtime::options::ModuleSource;

#[test]
fn the_example_wasm_controller_is_valid() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/example/configmap-mirror.yaml");
    let text = std::fs::read_to_string(&path).expect("deploy/example/configmap-mirror.yaml");
    let resource = text
        .split("\n---\n")
        .map(|doc| serde_saphyr::from_str::<serde_json::Value>(doc).expect("a YAML document"))
        .find(|doc| doc["kind"] == "WasmController")
        .expect("a WasmController");
    let spec: WasmControllerSpec =
        serde_json::from_value(resource["spec"].clone()).expect("the spec's shape");
    let namespace = resource["metadata"]["namespace"]
        .as_str()
        .expect("a namespace");
    let valid = spec.validate(namespace).expect("a valid spec");
    assert!(matches!(valid.source, ModuleSource::Image(_)));
    assert_eq!(
        valid.options.service_account.map(|sa| sa.namespace),
        Some(namespace.to_owned()),
        "it acts as a ServiceAccount of its own namespace"
    );
    assert!(valid.options.permissions.is_some());
}

fn host_shim_documents() -> Vec<serde_json::Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/host-shim.yaml");
    let text = std::fs::read_to_string(&path).expect("deploy/host-shim.yaml");
    text.split("\n---\n")
        .map(|doc| serde_saphyr::from_str::<serde_json::Value>(doc).expect("a YAML document"))
        .collect()
}

/// The shipped Deployment's arguments are ones this host-shim accepts (with the kubelet's
/// `$(VAR)` expansion done), and make its replicas share the fleet through Leases in their own
/// namespace, whose Role grants what placement does with Leases.
#[test]
fn the_deployment_runs_replicas_sharing_the_fleet_through_leases() {
    use clap::Parser as _;
    use host_shim::fleet::cli::{Cli, Command};
    let docs = host_shim_documents();
    let deployment = docs
        .iter()
        .find(|d| d["kind"] == "Deployment")
        .expect("a Deployment");
    assert!(
        deployment["spec"]["replicas"].as_u64() > Some(1),
        "several replicas"
    );
    let namespace = deployment["metadata"]["namespace"].as_str().expect("ns");
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    let env = container["env"].as_array().expect("env");
    let from_field = |name: &str| {
        env.iter()
            .find(|e| e["name"] == name)
            .map(|e| e["valueFrom"]["fieldRef"]["fieldPath"].clone())
    };
    assert_eq!(from_field("POD_NAME"), Some("metadata.name".into()));
    assert_eq!(
        from_field("POD_NAMESPACE"),
        Some("metadata.namespace".into())
    );
    let mut argv = vec!["host-shim".to_owned()];
    for arg in container["args"].as_array().expect("args") {
        let arg = arg.as_str().expect("a string");
        argv.push(arg.replace("$(POD_NAMESPACE)", namespace));
    }
    let Command::Run(run) = Cli::try_parse_from(&argv).expect("the args parse").command else {
        panic!("a run command: {argv:?}");
    };
    assert!(run.controllers);
    assert_eq!(run.lease_namespace.as_deref(), Some(namespace));

    let role = docs
        .iter()
        .find(|d| {
            d["kind"] == "Role"
                && d["metadata"]["namespace"] == namespace
                && d["rules"][0]["resources"][0] == "leases"
        })
        .expect("a Role for the Leases in the replicas' namespace");
    let verbs: Vec<&str> = role["rules"][0]["verbs"]
        .as_array()
        .expect("verbs")
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    for verb in ["get", "list", "watch", "create", "update", "delete"] {
        assert!(verbs.contains(&verb), "leases: {verb}");
    }
    assert!(
        docs.iter().any(|d| d["kind"] == "RoleBinding"
            && d["roleRef"]["name"] == role["metadata"]["name"]),
        "the Role is bound"
    );
    let budget = docs
        .iter()
        .find(|d| d["kind"] == "PodDisruptionBudget")
        .expect("a PodDisruptionBudget");
    assert_eq!(
        budget["spec"]["selector"], deployment["spec"]["selector"],
        "it covers the replicas"
    );
}
