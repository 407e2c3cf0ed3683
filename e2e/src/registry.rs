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
    push_file(&wasm, repository, tag, extra)
}

/// [`push`] of any `.wasm` file.
///
/// # Panics
/// If the push fails.
pub fn push_file(wasm: &std::path::Path, repository: &str, tag: &str, extra: &[&str]) -> String {
    let reference = format!("{}/{repository}:{tag}", address());
    let output = Command::new(env_path("KUBE_WASM_HOST_SHIM"))
        .args(["push", "--insecure"])
        .arg(wasm)
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

/// A copy of the module of `program` made unique by a custom section holding `salt` (still
/// the same module to run), written under `dir`: its registry blob is its own, so a test may
/// tamper with it without touching another push of the program.
///
/// # Panics
/// If the module cannot be read or the copy written.
pub fn unique_copy(program: &str, salt: &str, dir: &std::path::Path) -> (PathBuf, Vec<u8>) {
    let mut wasm = std::fs::read(env_path("KUBE_WASM_MODULES").join(format!("{program}.wasm")))
        .expect("module built");
    let name = b"kube-wasm-e2e";
    let mut payload = vec![u8::try_from(name.len()).expect("short name")];
    payload.extend_from_slice(name);
    payload.extend_from_slice(salt.as_bytes());
    wasm.push(0);
    let mut size = payload.len();
    loop {
        let byte = u8::try_from(size & 0x7f).expect("seven bits");
        size >>= 7;
        if size == 0 {
            wasm.push(byte);
            break;
        }
        wasm.push(byte | 0x80);
    }
    wasm.extend_from_slice(&payload);
    let path = dir.join(format!("{program}-{salt}.wasm"));
    std::fs::write(&path, &wasm).expect("copy written");
    (path, wasm)
}

/// Flips the last byte of the registry blob whose content is `content`.
///
/// # Panics
/// If no blob holds it.
pub fn tamper_blob_holding(content: &[u8]) {
    let blobs = env_path("KUBE_WASM_REGISTRY_DIR").join("storage/docker/registry/v2/blobs/sha256");
    for prefix in std::fs::read_dir(&blobs).expect("blobs").flatten() {
        for blob in std::fs::read_dir(prefix.path())
            .expect("blob dirs")
            .flatten()
        {
            let file = blob_file(&blob.file_name().to_string_lossy());
            if std::fs::read(&file).is_ok_and(|bytes| bytes == content) {
                let mut bytes = content.to_vec();
                if let Some(last) = bytes.last_mut() {
                    *last ^= 0xff;
                }
                std::fs::write(&file, bytes).expect("tampered");
                return;
            }
        }
    }
    panic!("no registry blob holds the content");
}

/// The file holding the blob `sha256:<hex>` in the registry's filesystem storage.
pub fn blob_file(hex: &str) -> PathBuf {
    env_path("KUBE_WASM_REGISTRY_DIR")
        .join("storage/docker/registry/v2/blobs/sha256")
        .join(&hex[..2])
        .join(hex)
        .join("data")
}
