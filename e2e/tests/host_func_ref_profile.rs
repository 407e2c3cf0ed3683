//! The func-ref profile with a real controller (`host_shim::runtime::func_refs`): the first
//! host to run configmap-mirror from a cache with no profile runs its instrumented form and
//! writes the profile when it stops the module; the next host compiles the ordered form from
//! that profile, and the controller mirrors as before.

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Api;
use kube::api::PostParams;
use kube_wasm_e2e::manifest::{Entry, start_manifest, stop_without_failures, write_manifest};
use kube_wasm_e2e::objects::mirrored;
use kube_wasm_e2e::{client, eventually, fresh_namespace, kubeconfig_for, scratch_dir};
use std::path::{Path, PathBuf};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(60);

/// The files of `dir` with extension `ext`.
fn files(dir: &Path, ext: &str) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .expect("cache folder")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .collect()
}

#[tokio::test]
async fn a_profiled_controller_runs_ordered_in_the_next_host() {
    let client = client().await;
    let ns = fresh_namespace(&client, "funcrefs").await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &ns);
    let dir = scratch_dir().join(format!("funcrefs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let entries = [Entry::new("mirror", "configmap-mirror").namespace(&ns)];
    let manifest = write_manifest(&dir, "host.yaml", "", &entries);
    let kubeconfig = kubeconfig_for(&ns, &dir);
    let cache = dir.join("module-cache");

    let mut profile = String::new();
    for (compiled, name) in [(1, "first"), (2, "second")] {
        let mut host = start_manifest(&kubeconfig, &manifest);
        cms.create(&PostParams::default(), &mirrored(name))
            .await
            .expect("configmap");
        eventually(WAIT, &format!("Secret {name}"), || async {
            secrets.get_opt(name).await.ok().flatten()
        })
        .await;
        stop_without_failures(&mut host, WAIT);
        let profiles = files(&cache, "funcrefs");
        assert_eq!(profiles.len(), 1, "one profile: {profiles:?}");
        let text = std::fs::read_to_string(&profiles[0]).expect("profile");
        if compiled == 1 {
            profile = text;
        } else {
            assert_eq!(text, profile, "the ordered module wrote none");
        }
        // The instrumented form, then the ordered form as well.
        assert_eq!(files(&cache, "cwasm").len(), compiled);
    }
    let mut lines = profile.lines();
    assert_eq!(lines.next(), Some("kube-wasm func-ref profile v1"));
    let slots: Vec<u32> = lines.map(|l| l.parse().expect("a slot")).collect();
    // A kube-rs controller calls through dozens of slots (wakers, boxed futures, vtables).
    assert!(slots.len() >= 10, "{slots:?}");
    assert!(slots.windows(2).all(|w| w[0] < w[1]), "{slots:?}");
}
