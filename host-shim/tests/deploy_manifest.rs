//! The WasmController shipped in `deploy/example-module.yaml` is one the host accepts: its spec
//! passes the same validation the operator applies.

use std::path::Path;

use host_shim::fleet::wasm_controller::WasmControllerSpec;
use host_shim::runtime::options::ModuleSource;

#[test]
fn the_example_wasm_controller_is_valid() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/example-module.yaml");
    let text = std::fs::read_to_string(&path).expect("deploy/example-module.yaml");
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
