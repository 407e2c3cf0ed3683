//! Rustdoc's JSON output for the crates whose public items the list compares: one
//! `cargo doc` invocation over kube 5.0's crates and kube-wasm's, in the workspace's own
//! target directory and feature resolution, so the dependencies' check builds are shared
//! with `cargo clippy --workspace`.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The packages documented: kube 5.0's facade and the crates it re-exports items from, and
/// kube-wasm's. `kube-surface` (which has no library, so `--lib` documents nothing of it)
/// roots the resolution: with members selected, cargo only finds the packages their
/// dependency graphs reach, and kube 5.0 is this crate's native dependency.
const PACKAGES: &[&str] = &[
    "kube-surface",
    "kube@5.0.0",
    "kube-client@5.0.0",
    "kube-runtime@5.0.0",
    "kube-core@5.0.0",
    "kube-wasm",
    "kube-wasm-client",
    "kube-runtime-wasm",
];

/// Every feature kube 5.0's Cargo.toml declares (but `default`), all on for the documented
/// crates, so the list covers the items of each (the features of kube-client, kube-runtime and
/// kube-core that kube forwards come with them). kube 5.0 gets them through this crate's
/// `every-kube-feature` feature (which only this `cargo doc` turns on), kube-wasm — which
/// accepts every one of them — directly. `features::problems` holds this list to kube 5.0's
/// manifest and to that feature.
pub const KUBE_FEATURES: &[&str] = &[
    "admission",
    "aws-lc-rs",
    "cel",
    "client",
    "config",
    "derive",
    "gzip",
    "http-proxy",
    "hyper-util-tracing",
    "jsonpatch",
    "kubelet-debug",
    "oauth",
    "oidc",
    "openssl-tls",
    "proxy",
    "ring",
    "runtime",
    "rustls-tls",
    "socks5",
    "unstable-client",
    "unstable-runtime",
    "webpki-roots",
    "ws",
];

/// The feature of this crate that turns on every one of [`KUBE_FEATURES`] on `kube`.
pub const EVERY_KUBE_FEATURE: &str = "every-kube-feature";

/// Rustdoc JSON of every crate in [`PACKAGES`], by crate name (`kube`, `kube_client`, …).
pub struct Docs {
    dir: PathBuf,
}

impl Docs {
    /// Runs `cargo doc` with JSON output. Only rustdoc sees `RUSTC_BOOTSTRAP` (through the
    /// `rustdoc-json` wrapper), so rustc's fingerprints, and the normal build, stay as they
    /// are.
    pub fn generate() -> Self {
        let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
        let workspace = manifest_dir.join("../..");
        let target_dir = std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| workspace.join("target"));
        let features: Vec<String> = KUBE_FEATURES
            .iter()
            .map(|f| format!("kube-wasm/{f}"))
            .chain([format!("kube-surface/{EVERY_KUBE_FEATURE}")])
            .collect();
        let mut cargo = Command::new(env!("CARGO"));
        cargo
            .current_dir(&workspace)
            .args(["doc", "--no-deps", "--lib", "--quiet"])
            .args(PACKAGES.iter().flat_map(|p| ["-p", p]))
            .args(["--features", &features.join(",")])
            .env("RUSTDOC", manifest_dir.join("rustdoc-json"))
            .env(
                "RUSTDOCFLAGS",
                "-Z unstable-options --output-format json --cap-lints allow",
            )
            .env_remove("RUSTC_BOOTSTRAP");
        for (name, _) in std::env::vars_os() {
            if is_set_by_cargo_for_this_test(&name) {
                cargo.env_remove(name);
            }
        }
        let status = cargo
            .status()
            .unwrap_or_else(|e| panic!("cannot run cargo doc: {e}"));
        assert!(status.success(), "cargo doc failed ({status}): {cargo:?}");
        Self {
            dir: target_dir.join("doc"),
        }
    }

    /// The manifest (`Cargo.toml`) of the package whose library crate `doc` documents: the
    /// directory of its root module's source file, `src/lib.rs` in the registry's unpacked
    /// copy, has it one level up.
    pub fn manifest_of(doc: &Value) -> PathBuf {
        let root_id = match &doc["root"] {
            Value::String(id) => id.clone(),
            other => other.to_string(),
        };
        let root = &doc["index"][root_id];
        let file = root["span"]["filename"]
            .as_str()
            .unwrap_or_else(|| panic!("rustdoc JSON gives no source file for the crate root"));
        let src = Path::new(file)
            .parent()
            .unwrap_or_else(|| panic!("{file} has no parent directory"));
        src.parent()
            .unwrap_or_else(|| panic!("{file} is not under a package directory"))
            .join("Cargo.toml")
    }

    /// The JSON document of crate `name`.
    pub fn load(&self, name: &str) -> Value {
        let path = self.dir.join(format!("{name}.json"));
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }
}

/// Whether `name` is one of the variables cargo sets for the test process itself (this
/// package's `CARGO_MANIFEST_DIR`, `CARGO_PKG_*`, `OUT_DIR`, ...). Build scripts such as
/// ring's declare `rerun-if-env-changed` on some of them, so passing them on to the nested
/// `cargo doc` would rerun those scripts there, and again in the next ordinary build:
/// minutes of rebuilding on every run.
fn is_set_by_cargo_for_this_test(name: &std::ffi::OsStr) -> bool {
    let Some(name) = name.to_str() else {
        return false;
    };
    const PREFIXES: &[&str] = &["CARGO_MANIFEST_", "CARGO_PKG_", "CARGO_BIN_", "CARGO_CFG_"];
    const NAMES: &[&str] = &[
        "OUT_DIR",
        "CARGO_CRATE_NAME",
        "CARGO_PRIMARY_PACKAGE",
        "CARGO_TARGET_TMPDIR",
        "CARGO_RUSTC_CURRENT_DIR",
    ];
    NAMES.contains(&name) || PREFIXES.iter().any(|p| name.starts_with(p))
}
