//! `deploy/` as an operator uses it: a kustomize overlay of `deploy/` (the host) and
//! `deploy/example/` (one module) that sets their images by digest, rendered with
//! `kubectl kustomize` and applied with `kubectl apply -k`; and the host's image
//! (`scripts/image.sh`), with a new digest made from it for a rolling update.
//!
//! The image comes from the test command: `KUBE_WASM_HOST_IMAGE` (its reference by digest in
//! the test registry) and `KUBE_WASM_HOST_IMAGE_LAYOUT` (the OCI image layout it was pushed
//! from, tagged with the workspace version).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::env_path;
use crate::wasm_controllers::kubectl;

/// The repository's `deploy/` folder.
pub fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../deploy")
        .canonicalize()
        .expect("deploy/")
}

/// The host image the test command built and pushed (`KUBE_WASM_HOST_IMAGE`,
/// `REPOSITORY@sha256:…`).
///
/// # Panics
/// If the variable is not set.
pub fn host_image() -> String {
    std::env::var("KUBE_WASM_HOST_IMAGE")
        .unwrap_or_else(|_| panic!("KUBE_WASM_HOST_IMAGE is not set (scripts/test.sh sets it)"))
}

/// A reference by digest split into the repository and the digest.
///
/// # Panics
/// If `reference` has no `@sha256:` digest.
pub fn split_digest(reference: &str) -> (&str, &str) {
    reference
        .split_once('@')
        .filter(|(_, digest)| digest.starts_with("sha256:"))
        .unwrap_or_else(|| panic!("{reference:?} is not a reference by digest"))
}

/// A kustomize overlay over `deploy/` and `deploy/example/`, as an operator writes one.
#[derive(Debug, Clone, Default)]
pub struct Overlay {
    /// The host's image (`deploy/`'s `host-shim`), by digest; `None`: `deploy/` is left out.
    pub host_image: Option<String>,
    /// The example module's image (`deploy/example/`'s `configmap-mirror`), by digest; `None`:
    /// the example is left out.
    pub module_image: Option<String>,
    /// Arguments appended to the host container's (a JSON patch), e.g.
    /// `--insecure-registry` for a plain-HTTP registry.
    pub extra_host_args: Vec<String>,
}

impl Overlay {
    /// Writes the overlay's `kustomization.yaml` into `dir` (created), and returns `dir`.
    /// kustomize wants the bases as paths relative to the overlay.
    ///
    /// # Panics
    /// If the folder cannot be written.
    pub fn write(&self, dir: &Path) -> PathBuf {
        std::fs::create_dir_all(dir).expect("overlay folder");
        let dir = dir.canonicalize().expect("overlay folder");
        let base = relative(&dir, &deploy_dir());
        let (mut resources, mut images) = (Vec::new(), Vec::new());
        if let Some(host) = &self.host_image {
            resources.push(Value::from(base.clone()));
            images.push(image_entry("host-shim", host));
        }
        if let Some(module) = &self.module_image {
            resources.push(Value::from(format!("{base}/example")));
            images.push(image_entry("configmap-mirror", module));
        }
        let mut kustomization = serde_json::json!({
            "apiVersion": "kustomize.config.k8s.io/v1beta1",
            "kind": "Kustomization",
            "resources": resources,
            "images": images,
        });
        if !self.extra_host_args.is_empty() {
            let ops: Vec<Value> = self
                .extra_host_args
                .iter()
                .map(|arg| {
                    serde_json::json!({
                        "op": "add",
                        "path": "/spec/template/spec/containers/0/args/-",
                        "value": arg,
                    })
                })
                .collect();
            kustomization["patches"] = serde_json::json!([{
                "target": {"kind": "Deployment", "name": "host-shim"},
                "patch": serde_json::to_string(&ops).expect("a JSON patch"),
            }]);
        }
        // JSON is YAML.
        std::fs::write(
            dir.join("kustomization.yaml"),
            serde_json::to_string_pretty(&kustomization).expect("JSON"),
        )
        .expect("kustomization.yaml written");
        dir
    }
}

fn image_entry(name: &str, reference: &str) -> Value {
    let (repository, digest) = split_digest(reference);
    serde_json::json!({"name": name, "newName": repository, "digest": digest})
}

/// `to` relative to `from` (both absolute, canonical).
fn relative(from: &Path, to: &Path) -> String {
    let from: Vec<_> = from.components().collect();
    let to: Vec<_> = to.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<String> = vec!["..".into(); from.len() - common];
    parts.extend(
        to[common..]
            .iter()
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    parts.join("/")
}

/// `kubectl kustomize DIR`: the rendered YAML.
pub fn render(dir: &Path) -> String {
    kubectl(&["kustomize", &dir.to_string_lossy()])
}

/// The documents of a multi-document YAML stream, as JSON values.
///
/// # Panics
/// If a document is not YAML.
pub fn documents(yaml: &str) -> Vec<Value> {
    yaml.split("\n---\n")
        .filter(|doc| !doc.trim().is_empty())
        .map(|doc| {
            serde_saphyr::from_str::<Value>(doc).unwrap_or_else(|e| panic!("{e}: a YAML document"))
        })
        .collect()
}

/// The OCI image layout the host image was pushed from (`KUBE_WASM_HOST_IMAGE_LAYOUT`).
pub fn host_image_layout() -> PathBuf {
    env_path("KUBE_WASM_HOST_IMAGE_LAYOUT")
}

fn run(command: &mut Command) -> String {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("{command:?} runs: {e}"));
    assert!(
        output.status.success(),
        "{command:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A new image from the host image: the same layer, one more label (`kube-wasm.dev/rollout`
/// = `label`), so a new digest; copied in `dir` (umoci) and pushed beside the original
/// (skopeo). Returns the new reference by digest.
///
/// # Panics
/// If umoci or skopeo fail.
pub fn relabelled_host_image(label: &str, dir: &Path) -> String {
    let layout = dir.join(format!("host-image-{label}"));
    let _ = std::fs::remove_dir_all(&layout);
    run(Command::new("cp")
        .arg("-a")
        .arg(host_image_layout())
        .arg(&layout));
    let tag = only_tag(&layout);
    let image = format!("{}:{tag}", layout.display());
    run(Command::new("umoci").args([
        "config",
        "--no-history",
        "--image",
        &image,
        "--config.label",
        &format!("kube-wasm.dev/rollout={label}"),
    ]));
    let original = host_image();
    let (repository, _) = split_digest(&original);
    let target = format!("docker://{repository}:{label}");
    let digest_file = dir.join(format!("host-image-{label}.digest"));
    run(Command::new("skopeo")
        .args(["copy", "--quiet", "--dest-tls-verify=false", "--digestfile"])
        .arg(&digest_file)
        .arg(format!("oci:{image}"))
        .arg(&target));
    let digest = std::fs::read_to_string(&digest_file).expect("the pushed digest");
    format!("{repository}@{}", digest.trim())
}

/// The one tag of the OCI image layout at `layout`.
fn only_tag(layout: &Path) -> String {
    let index: Value = serde_json::from_str(
        &std::fs::read_to_string(layout.join("index.json")).expect("index.json"),
    )
    .expect("an OCI index");
    index["manifests"][0]["annotations"]["org.opencontainers.image.ref.name"]
        .as_str()
        .expect("a tagged image")
        .to_owned()
}

/// The host image's manifest, config and layer as the registry serves them: `skopeo inspect`
/// (`--raw` and `--config`) and `skopeo copy` to an OCI layout in `dir`. Returns (manifest,
/// config, the layer's entries as `tar -tvzf` lists them).
///
/// # Panics
/// If skopeo or tar fail.
pub fn pulled_host_image(reference: &str, dir: &Path) -> (Value, Value, Vec<String>) {
    let docker = format!("docker://{reference}");
    let inspect = |extra: &str| -> Value {
        let out =
            run(Command::new("skopeo").args(["inspect", "--tls-verify=false", extra, &docker]));
        serde_json::from_str(&out).expect("JSON from skopeo inspect")
    };
    let (manifest, config) = (inspect("--raw"), inspect("--config"));
    let layout = dir.join("pulled-host-image");
    let _ = std::fs::remove_dir_all(&layout);
    run(Command::new("skopeo")
        .args(["copy", "--quiet", "--src-tls-verify=false", &docker])
        .arg(format!("oci:{}:pulled", layout.display())));
    let layer = manifest["layers"][0]["digest"]
        .as_str()
        .expect("a layer")
        .trim_start_matches("sha256:")
        .to_owned();
    let listing = run(Command::new("tar")
        .args(["--numeric-owner", "-tvzf"])
        .arg(layout.join("blobs/sha256").join(layer)));
    (
        manifest,
        config,
        listing.lines().map(str::to_owned).collect(),
    )
}
