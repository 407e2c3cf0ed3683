//! Many modules in one host: 50 configmap-mirror modules from one manifest, each in its own
//! namespace, against the real apiserver; every one reconciles its namespace and a change.

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Api;
use kube::api::{ObjectMeta, Patch, PatchParams, PostParams};
use kube_wasm_e2e::manifest::{
    Entry, resident_kib, start_manifest, stop_without_failures, write_manifest,
};
use kube_wasm_e2e::{client, eventually, fresh_namespace, kubeconfig_for, scratch_dir};
use std::time::{Duration, Instant};

const MODULES: usize = 50;
const WAIT: Duration = Duration::from_secs(180);

fn labelled(value: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some("settings".into()),
            labels: Some([("kube-wasm.dev/mirror".to_string(), "true".to_string())].into()),
            ..ObjectMeta::default()
        },
        data: Some([("value".to_string(), value.to_string())].into()),
        ..ConfigMap::default()
    }
}

async fn mirrored_value(secrets: &Api<Secret>) -> Option<String> {
    let secret = secrets.get_opt("settings").await.ok().flatten()?;
    let value = secret.data?.remove("value")?;
    Some(String::from_utf8_lossy(&value.0).into_owned())
}

/// How many namespaces have a Secret `settings` whose `value` is `want`.
async fn mirrored_count(all: &[Api<Secret>], want: &str) -> usize {
    let mut count = 0;
    for secrets in all {
        if mirrored_value(secrets).await.as_deref() == Some(want) {
            count += 1;
        }
    }
    count
}

#[tokio::test]
async fn fifty_mirrors_in_one_host_each_reconcile_their_own_namespace() {
    let client = client().await;
    let mut namespaces = Vec::new();
    for i in 0..MODULES {
        let ns = fresh_namespace(&client, &format!("many-{i}")).await;
        Api::<ConfigMap>::namespaced(client.clone(), &ns)
            .create(&PostParams::default(), &labelled(&format!("{ns}-before")))
            .await
            .expect("create");
        namespaces.push(ns);
    }
    let dir = scratch_dir().join(format!("many-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let entries: Vec<Entry> = namespaces
        .iter()
        .enumerate()
        .map(|(i, ns)| Entry::new(&format!("mirror-{i}"), "configmap-mirror").namespace(ns))
        .collect();
    let manifest = write_manifest(&dir, "host.yaml", "", &entries);
    // The host's own kubeconfig namespace is none of the modules' namespaces.
    let kubeconfig = kubeconfig_for("default", &dir);

    let started = Instant::now();
    let mut host = start_manifest(&kubeconfig, &manifest);
    eventually(WAIT, "every module to watch", || async {
        let watching = host
            .stdout
            .snapshot()
            .iter()
            .filter(|l| l.contains("configmap-mirror: watching ConfigMaps"))
            .count();
        (watching == MODULES).then_some(())
    })
    .await;
    let all_watching = started.elapsed();
    for (i, ns) in namespaces.iter().enumerate() {
        let lines = host.module_output(&format!("mirror-{i}"));
        assert!(
            lines
                .iter()
                .any(|l| l.ends_with(&format!("in namespace {ns}"))),
            "mirror-{i} runs in {ns}: {lines:?}"
        );
    }

    let secrets: Vec<Api<Secret>> = namespaces
        .iter()
        .map(|ns| Api::namespaced(client.clone(), ns))
        .collect();
    for (ns, secrets) in namespaces.iter().zip(&secrets) {
        let want = format!("{ns}-before");
        eventually(WAIT, "the initial ConfigMap mirrored", || async {
            (mirrored_value(secrets).await.as_deref() == Some(want.as_str())).then_some(())
        })
        .await;
    }

    let changed = Instant::now();
    let patch = serde_json::json!({"data": {"value": "changed"}});
    for ns in &namespaces {
        Api::<ConfigMap>::namespaced(client.clone(), ns)
            .patch("settings", &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .expect("patch");
    }
    eventually(WAIT, "every namespace to mirror the change", || async {
        (mirrored_count(&secrets, "changed").await == MODULES).then_some(())
    })
    .await;
    let reconciled = changed.elapsed();
    let resident = resident_kib(host.id());
    eprintln!(
        "{MODULES} configmap-mirror modules (debug build): all watching {all_watching:?} after \
         start, a change reconciled everywhere in {reconciled:?}, host resident memory \
         {resident:?} KiB"
    );

    stop_without_failures(&mut host, Duration::from_secs(60));
}
