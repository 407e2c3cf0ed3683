//! The host manifest shipped in `deploy/host-shim.yaml` (ConfigMap `host-shim-manifest`) is
//! one the host accepts: its only problems here are the module files, which live in the image.

use std::path::Path;

use host_shim::fleet::manifest::{Manifest, ManifestError};

#[test]
fn the_deployed_manifest_is_valid() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/host-shim.yaml");
    let text = std::fs::read_to_string(&path).expect("deploy/host-shim.yaml");
    let config_map = text
        .split("\n---\n")
        .map(|doc| serde_saphyr::from_str::<serde_json::Value>(doc).expect("a YAML document"))
        .find(|doc| doc["kind"] == "ConfigMap")
        .expect("a ConfigMap");
    let host_yaml = config_map["data"]["host.yaml"].as_str().expect("host.yaml");
    match Manifest::parse(host_yaml, Path::new("/"), Path::new("host.yaml")) {
        Err(ManifestError::Invalid { problems, .. }) => {
            assert!(
                problems
                    .iter()
                    .all(|p| p.contains(".wasm: /modules/") && p.ends_with("is not a file")),
                "{problems:#?}"
            );
        }
        other => panic!("expected only missing module files, got {other:?}"),
    }
}
