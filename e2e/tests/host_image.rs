//! The host's image (`scripts/image.sh`) as the test registry serves it: one layer holding the
//! static host-shim and the CA certificates and nothing else, run as a non-root user with
//! host-shim as its entrypoint; the binary pulled from it runs on a machine without its build
//! and prints the CRD that `deploy/` ships.

use std::path::Path;
use std::process::Command;

use kube_wasm_e2e::deploy::{host_image, pulled_host_image, split_digest};
use kube_wasm_e2e::scratch_dir;

/// The path of a `tar -tv` entry, without a leading `./` or `/`.
fn entry_path(line: &str) -> &str {
    let path = line.split_whitespace().last().unwrap_or_default();
    path.trim_start_matches("./").trim_start_matches('/')
}

#[test]
fn the_host_image_holds_the_static_host_and_ca_certificates_only() {
    let reference = host_image();
    let (_, digest) = split_digest(&reference);
    let dir = scratch_dir().join(format!("host-image-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let (manifest, config, entries) = pulled_host_image(&reference, &dir);
    eprintln!("{reference}: {manifest}\n{}", entries.join("\n"));
    assert!(digest.len() == 71, "a sha256 digest: {digest}");

    assert_eq!(
        manifest["layers"].as_array().map(Vec::len),
        Some(1),
        "one layer"
    );
    let user = config["config"]["User"].as_str().expect("a user");
    assert_eq!(user, "65532:65532", "a non-root user and group");
    assert_eq!(
        config["config"]["Entrypoint"],
        serde_json::json!(["/usr/local/bin/host-shim"])
    );
    assert_eq!(config["os"], "linux");
    assert_eq!(config["architecture"], "amd64");

    // Files: the binary and the certificates; everything else is a folder holding them.
    let mut files: Vec<&str> = entries
        .iter()
        .filter(|line| !line.starts_with('d'))
        .map(|line| entry_path(line))
        .collect();
    files.sort_unstable();
    assert_eq!(
        files,
        [
            "etc/ssl/certs/ca-certificates.crt",
            "usr/local/bin/host-shim"
        ]
    );
    let folders: Vec<&str> = entries
        .iter()
        .filter(|line| line.starts_with('d'))
        .map(|line| entry_path(line).trim_end_matches('/'))
        .filter(|path| !path.is_empty())
        .collect();
    for folder in &folders {
        assert!(
            files.iter().any(|f| f.starts_with(&format!("{folder}/"))),
            "a folder holding nothing shipped: {folder}"
        );
    }
    for line in &entries {
        assert!(
            line.split_whitespace().nth(1) == Some("0/0"),
            "owned by root, writable by no one else: {line}"
        );
        let mode = line.as_bytes();
        assert!(
            mode.len() > 9 && mode[5] != b'w' && mode[8] != b'w',
            "writable by group or others: {line}"
        );
    }
    let binary = entries
        .iter()
        .find(|line| entry_path(line) == "usr/local/bin/host-shim")
        .expect("the binary");
    assert!(
        binary.starts_with("-rwxr-xr-x"),
        "executable by all: {binary}"
    );

    // The binary, out of the layer: static (no program interpreter, so no C library needed),
    // and it runs.
    let layer = manifest["layers"][0]["digest"]
        .as_str()
        .expect("a layer digest")
        .trim_start_matches("sha256:");
    let unpacked = dir.join("unpacked");
    std::fs::create_dir_all(&unpacked).expect("dir");
    let status = Command::new("tar")
        .arg("-xzf")
        .arg(dir.join("pulled-host-image/blobs/sha256").join(layer))
        .arg("-C")
        .arg(&unpacked)
        .status()
        .expect("tar runs");
    assert!(status.success());
    let host_shim = unpacked.join("usr/local/bin/host-shim");
    let headers = Command::new("readelf")
        .arg("--program-headers")
        .arg(&host_shim)
        .output()
        .expect("readelf runs");
    let headers = String::from_utf8_lossy(&headers.stdout);
    assert!(headers.contains("LOAD"), "an ELF executable: {headers}");
    assert!(
        !headers.contains("INTERP"),
        "statically linked, no program interpreter: {headers}"
    );
    let crd = Command::new(&host_shim)
        .arg("crd")
        .env_clear()
        .output()
        .expect("the image's host-shim runs");
    assert!(crd.status.success(), "{crd:?}");
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/wasmcontroller-crd.yaml");
    assert_eq!(
        String::from_utf8_lossy(&crd.stdout),
        std::fs::read_to_string(shipped).expect("deploy/wasmcontroller-crd.yaml"),
        "the image's host prints the CRD deploy/ ships"
    );
}
