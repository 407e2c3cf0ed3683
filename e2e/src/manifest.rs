//! Host manifests: render one (the benchmark's launches), write one listing modules from
//! `KUBE_WASM_MODULES` (the end-to-end tests), run `host-shim run --manifest`, read the
//! host's resident memory, stop it and check that no module failed.

use crate::{Program, env_path};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// One module entry of a test manifest.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The module's name in the host.
    pub name: String,
    /// The module file (`.wasm`).
    pub wasm: PathBuf,
    /// Its default namespace.
    pub namespace: Option<String>,
    /// Its environment.
    pub env: Vec<(String, String)>,
    /// Its memory limit, e.g. `64Mi`.
    pub memory: Option<String>,
    /// More fields, as YAML lines of the entry (e.g. `restartPolicy: Never`).
    pub fields: Vec<String>,
    /// An OCI image reference to pull instead of the `wasm` file.
    pub image: Option<String>,
}

impl Entry {
    /// Module `name` running `program`: `KUBE_WASM_MODULES/<program>.wasm`.
    pub fn new(name: &str, program: &str) -> Self {
        let wasm = env_path("KUBE_WASM_MODULES").join(format!("{program}.wasm"));
        Self::with_wasm(name, &wasm)
    }

    /// Module `name` running the module file `wasm`.
    pub fn with_wasm(name: &str, wasm: &Path) -> Self {
        Self {
            name: name.into(),
            wasm: wasm.to_path_buf(),
            namespace: None,
            env: Vec::new(),
            memory: None,
            fields: Vec::new(),
            image: None,
        }
    }

    /// Module `name` pulled from the OCI image `reference`.
    pub fn with_image(name: &str, reference: &str) -> Self {
        Self {
            image: Some(reference.into()),
            ..Self::with_wasm(name, Path::new(""))
        }
    }

    /// With more fields: `yaml` is one or more lines of the entry's mapping, unindented
    /// (e.g. `"serviceAccount: {namespace: a, name: b}"`).
    pub fn field(mut self, yaml: &str) -> Self {
        self.fields.extend(yaml.lines().map(str::to_owned));
        self
    }

    /// In `namespace`.
    pub fn namespace(mut self, namespace: &str) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// With `key=value` in its environment.
    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// With a memory limit.
    pub fn memory(mut self, limit: &str) -> Self {
        self.memory = Some(limit.into());
        self
    }
}

/// `text` as a YAML string (JSON strings are YAML).
pub fn quote(text: &str) -> String {
    serde_json::to_string(text).expect("a string serialises")
}

/// A host manifest: `cacheDir: <cache_dir>`, the top-level `settings` lines (YAML, e.g.
/// `entryDeadline: 2s`; may be empty), and `entries`. Values are written as JSON strings
/// (valid YAML).
pub fn render(cache_dir: &str, settings: &str, entries: &[Entry]) -> String {
    let mut text = format!("cacheDir: {}\n{settings}\nmodules:\n", quote(cache_dir));
    for entry in entries {
        let _ = writeln!(text, "  - name: {}", quote(&entry.name));
        match &entry.image {
            Some(image) => {
                let _ = writeln!(text, "    image: {}", quote(image));
            }
            None => {
                let _ = writeln!(text, "    wasm: {}", quote(&entry.wasm.to_string_lossy()));
            }
        }
        if let Some(ns) = &entry.namespace {
            let _ = writeln!(text, "    namespace: {}", quote(ns));
        }
        if let Some(memory) = &entry.memory {
            let _ = writeln!(text, "    memory: {}", quote(memory));
        }
        for line in &entry.fields {
            let _ = writeln!(text, "    {line}");
        }
        if !entry.env.is_empty() {
            let _ = writeln!(text, "    env:");
            for (key, value) in &entry.env {
                let _ = writeln!(text, "      {}: {}", quote(key), quote(value));
            }
        }
    }
    text
}

/// Writes `dir/<file>`: [`render`] with the `cacheDir` `module-cache` (inside `dir`).
pub fn write_manifest(dir: &Path, file: &str, settings: &str, entries: &[Entry]) -> PathBuf {
    let path = dir.join(file);
    std::fs::write(&path, render("module-cache", settings, entries)).expect("manifest written");
    path
}

/// Starts `host-shim run --kubeconfig KUBECONFIG --manifest MANIFEST`.
pub fn start_manifest(kubeconfig: &Path, manifest: &Path) -> Program {
    start_manifest_with(kubeconfig, manifest, &[])
}

/// Starts `host-shim run --kubeconfig KUBECONFIG --manifest MANIFEST EXTRA...`.
pub fn start_manifest_with(kubeconfig: &Path, manifest: &Path, extra: &[&str]) -> Program {
    let mut command = Command::new(env_path("KUBE_WASM_HOST_SHIM"));
    command
        .arg("run")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--manifest")
        .arg(manifest)
        .args(extra);
    Program::spawn(command, "host-shim")
}

/// Stops `host` (SIGTERM, up to `timeout`) and asserts that every module stopped cleanly and
/// none was ever restarted (no `restarting module` line in its log).
pub fn stop_without_failures(host: &mut Program, timeout: Duration) {
    let status = host.terminate(timeout).expect("host exits");
    assert!(status.success(), "every module stops cleanly: {status}");
    let restarts = host
        .stderr
        .snapshot()
        .iter()
        .filter(|l| l.contains("restarting module"))
        .count();
    assert_eq!(restarts, 0, "no module failed");
}

/// The resident set size of process `pid` in KiB (`VmRSS` of `/proc/PID/status`), if known.
pub fn resident_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}
