//! The test OCI registry (`scripts/registry.sh`, Debian's docker-registry on loopback): pushing
//! modules with `host-shim push`, and reaching into its storage to tamper with a blob.

use std::path::PathBuf;
use std::process::Command;

use crate::env_path;

/// The registry's `host:port` (`KUBE_WASM_REGISTRY`).
///
/// # Panics
/// If the variable is not set.
pub fn address() -> String {
    std::env::var("KUBE_WASM_REGISTRY")
        .unwrap_or_else(|_| panic!("KUBE_WASM_REGISTRY is not set (scripts/test.sh sets it)"))
}

/// Pushes the module of `program` (`KUBE_WASM_MODULES/<program>.wasm`) to
/// `<registry>/<repository>:<tag>` with `host-shim push --insecure EXTRA…`; returns the pushed
/// reference pinned by digest.
///
/// # Panics
/// If the push fails.
pub fn push(program: &str, repository: &str, tag: &str, extra: &[&str]) -> String {
    let wasm = env_path("KUBE_WASM_MODULES").join(format!("{program}.wasm"));
    let reference = format!("{}/{repository}:{tag}", address());
    let output = Command::new(env_path("KUBE_WASM_HOST_SHIM"))
        .args(["push", "--insecure"])
        .arg(&wasm)
        .arg(&reference)
        .args(extra)
        .output()
        .expect("host-shim push runs");
    assert!(
        output.status.success(),
        "pushing {reference}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

/// The file holding the blob `sha256:<hex>` in the registry's filesystem storage.
pub fn blob_file(hex: &str) -> PathBuf {
    env_path("KUBE_WASM_REGISTRY_DIR")
        .join("storage/docker/registry/v2/blobs/sha256")
        .join(&hex[..2])
        .join(hex)
        .join("data")
}
