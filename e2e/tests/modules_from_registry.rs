//! Modules from a real OCI registry (Debian's docker-registry): pushed with `host-shim push`,
//! named by tag in a manifest's `image`, pulled (tag resolved to a digest, content checked
//! against it) and run; a tampered blob, a container image and a missing image fail that module
//! alone, with the reason, while a module beside them runs.

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Api;
use kube::api::PostParams;
use kube_wasm_e2e::manifest::{Entry, start_manifest, write_manifest};
use kube_wasm_e2e::objects::mirrored;
use kube_wasm_e2e::registry;
use kube_wasm_e2e::{client, env_path, eventually, fresh_namespace, kubeconfig_for, scratch_dir};
use std::time::Duration;

fn settings() -> String {
    format!("insecureRegistries: [{}]", registry::address())
}

#[tokio::test]
async fn a_module_pulled_by_tag_runs_and_is_kept_by_digest() {
    let client = client().await;
    let ns = fresh_namespace(&client, "from-registry").await;
    let repository = format!("e2e/mirror-{}", std::process::id());
    let pinned = registry::push("configmap-mirror", &repository, "v1", &[]);
    let digest = pinned
        .split_once('@')
        .map(|(_, d)| d.to_owned())
        .expect("pinned");
    let dir = scratch_dir().join(format!("registry-run-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let image = format!("{}/{repository}:v1", registry::address());
    let manifest = write_manifest(
        &dir,
        "host.yaml",
        &settings(),
        &[Entry::with_image("mirror", &image).namespace(&ns)],
    );
    let mut host = start_manifest(&kubeconfig_for(&ns, &dir), &manifest);
    host.stdout
        .wait_for(
            "[mirror] configmap-mirror: watching",
            Duration::from_secs(60),
        )
        .expect("the pulled module starts");
    host.stderr
        .wait_for(
            &format!("module `mirror`: {image} is {pinned}"),
            Duration::from_secs(5),
        )
        .expect("the tag is resolved to the digest pushed");
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &ns);
    cms.create(&PostParams::default(), &mirrored("pulled"))
        .await
        .expect("create");
    eventually(
        Duration::from_secs(20),
        "the pulled mirror to mirror",
        || async { secrets.get_opt("pulled").await.ok().flatten() },
    )
    .await;
    let stored = dir
        .join("module-cache/oci/sha256")
        .join(format!("{}.wasm", digest.trim_start_matches("sha256:")));
    let wasm = std::fs::read(env_path("KUBE_WASM_MODULES").join("configmap-mirror.wasm"))
        .expect("module built");
    assert_eq!(
        std::fs::read(&stored).ok(),
        Some(wasm),
        "the store keeps the module under its manifest's digest ({})",
        stored.display()
    );
    let status = host.terminate(Duration::from_secs(30)).expect("host exits");
    assert!(status.success(), "the mirror exits cleanly on SIGTERM");
}

#[tokio::test]
async fn bad_images_fail_their_module_alone_with_the_reason() {
    let client = client().await;
    let ns = fresh_namespace(&client, "bad-images").await;
    let pid = std::process::id();
    let address = registry::address();
    registry::push("configmap-mirror", &format!("e2e/good-{pid}"), "v1", &[]);
    let dir = scratch_dir().join(format!("registry-bad-{pid}"));
    std::fs::create_dir_all(&dir).expect("dir");
    // A copy of its own: tampering with its blob harms no other push.
    let (copy, content) = registry::unique_copy("multi-watch", &format!("bad-{pid}"), &dir);
    registry::push_file(&copy, &format!("e2e/tampered-{pid}"), "v1", &[]);
    registry::tamper_blob_holding(&content);
    registry::push(
        "configmap-generator",
        &format!("e2e/container-{pid}"),
        "v1",
        &[
            "--layer-media-type",
            "application/vnd.oci.image.layer.v1.tar",
        ],
    );
    let wrong_digest = format!("sha256:{}", "0".repeat(64));
    let entries = [
        Entry::with_image("good", &format!("{address}/e2e/good-{pid}:v1")).namespace(&ns),
        Entry::with_image("tampered", &format!("{address}/e2e/tampered-{pid}:v1")),
        Entry::with_image("container", &format!("{address}/e2e/container-{pid}:v1")),
        Entry::with_image("missing", &format!("{address}/e2e/missing-{pid}:v1")),
        Entry::with_image(
            "pinned",
            &format!("{address}/e2e/good-{pid}@{wrong_digest}"),
        ),
    ];
    let manifest = write_manifest(&dir, "host.yaml", &settings(), &entries);
    let mut host = start_manifest(&kubeconfig_for(&ns, &dir), &manifest);
    host.stdout
        .wait_for("[good] configmap-mirror: watching", Duration::from_secs(60))
        .expect("the good module starts beside the bad ones");
    for (module, reason) in [
        ("tampered", "digest"),
        ("container", "is not a wasm module"),
        ("missing", "pulling"),
        ("pinned", "pulling"),
    ] {
        let line = host
            .stderr
            .wait_for(&format!("module `{module}`: "), Duration::from_secs(10))
            .unwrap_or_else(|e| panic!("{module} fails: {e}"));
        assert!(
            line.to_ascii_lowercase().contains(reason),
            "{module} fails because of {reason:?}: {line}"
        );
    }
    let stored = std::fs::read_dir(dir.join("module-cache/oci/sha256"))
        .expect("the store")
        .count();
    assert_eq!(stored, 1, "only the good module is stored");
    let status = host.terminate(Duration::from_secs(30)).expect("host exits");
    assert!(
        !status.success(),
        "modules that could not be fetched fail the host's exit status"
    );
}
