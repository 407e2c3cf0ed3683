//! WasmController resources in tests: the CRD installed from `deploy/` (with kubectl, as an
//! operator installs it), an `Api` over them, and a resource naming an image.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use kube::api::Api;
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};

use crate::{Program, env_path, registry};

/// `kubectl ARGS…` against the test control plane; returns its stdout.
///
/// # Panics
/// If kubectl cannot run or fails.
pub fn kubectl(args: &[&str]) -> String {
    try_kubectl_with(&env_path("KUBECONFIG"), args).unwrap_or_else(|e| panic!("{e:#}"))
}

/// `kubectl ARGS…` with the kubeconfig `kubeconfig`; its stdout.
///
/// # Errors
/// If kubectl cannot run or exits non-zero (the error holds its stderr).
pub fn try_kubectl_with(kubeconfig: &Path, args: &[&str]) -> anyhow::Result<String> {
    let output = Command::new("kubectl")
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .output()
        .map_err(|e| anyhow::anyhow!("kubectl runs (scripts/test.sh puts it on PATH): {e}"))?;
    anyhow::ensure!(
        output.status.success(),
        "kubectl {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Installs `deploy/wasmcontroller-crd.yaml` (idempotent) and waits until it is established.
///
/// # Panics
/// If kubectl fails or the CRD is not established within a minute.
pub fn install_crd() {
    let crd = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/wasmcontroller-crd.yaml");
    kubectl(&["apply", "-f", &crd.to_string_lossy()]);
    kubectl(&[
        "wait",
        "--for=condition=Established",
        "--timeout=60s",
        "crd/wasmcontrollers.kube-wasm.dev",
    ]);
    // The new resource appears in discovery a moment after it is established.
    std::thread::sleep(Duration::from_millis(500));
}

/// The kind `kube-wasm.dev/v1alpha1` `WasmController`.
pub fn api_resource() -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk(
        "kube-wasm.dev",
        "v1alpha1",
        "WasmController",
    ))
}

/// The WasmControllers of namespace `ns`.
pub fn api(client: &kube::Client, ns: &str) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), ns, &api_resource())
}

/// A WasmController `name` running `image`.
pub fn resource(name: &str, image: &str) -> DynamicObject {
    let mut object = DynamicObject::new(name, &api_resource());
    object.data = serde_json::json!({ "spec": { "image": image } });
    object
}

/// A WasmController `name` running the module file `path` of the host's `--local-modules`
/// folder.
pub fn local_resource(name: &str, path: &str) -> DynamicObject {
    let mut object = DynamicObject::new(name, &api_resource());
    object.data = serde_json::json!({ "spec": { "path": path } });
    object
}

/// `host-shim run --controllers` as host `host_name`, running the WasmControllers of
/// `namespaces` alone (other tests' resources stay apart), pulling from the test registry
/// (plain HTTP), its module cache in `cache_dir`, a 5-second stop timeout, and `extra`
/// arguments after those.
pub fn start_host(
    host_name: &str,
    cache_dir: &Path,
    namespaces: &[&str],
    extra: &[&str],
) -> Program {
    let mut command = Command::new(env_path("KUBE_WASM_HOST_SHIM"));
    command
        .args(["run", "--controllers", "--stop-timeout", "5"])
        .args(["--host-name", host_name])
        .args(["--insecure-registry", &registry::address()])
        .arg("--cache-dir")
        .arg(cache_dir)
        .arg("--kubeconfig")
        .arg(env_path("KUBECONFIG"));
    for ns in namespaces {
        command.args(["--namespace", ns]);
    }
    command.args(extra);
    Program::spawn(command, "host-shim")
}
