//! The benchmark's combined native process (`bench/combined-native`): controllers of the mixed
//! fleet as tasks of one native kube-rs process, each instance in its own namespace, against
//! the real apiserver.

use std::process::Command;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Api;
use kube::api::PostParams;
use kube_wasm_e2e::objects::mirrored;
use kube_wasm_e2e::{Program, client, env_path, eventually, fresh_namespace};

const WAIT: Duration = Duration::from_secs(30);

#[tokio::test]
async fn two_instances_of_one_controller_in_one_process_each_keep_to_their_namespace() {
    let client = client().await;
    let a = fresh_namespace(&client, "combined-a").await;
    let b = fresh_namespace(&client, "combined-b").await;
    let mut command = Command::new(env_path("KUBE_WASM_NATIVE_BIN").join("combined-native"));
    command
        .env("KUBECONFIG", env_path("KUBECONFIG"))
        .arg(format!("configmap-mirror@{a}"))
        .arg(format!("configmap-mirror@{b}"));
    let mut combined = Program::spawn(command, "combined-native");
    for namespace in [&a, &b] {
        combined
            .stdout
            .wait_for(&format!("in namespace {namespace}"), WAIT)
            .expect("each instance watches its own namespace");
    }

    let config_maps_a: Api<ConfigMap> = Api::namespaced(client.clone(), &a);
    config_maps_a
        .create(&PostParams::default(), &mirrored("only-in-a"))
        .await
        .expect("create");
    let secrets_a: Api<Secret> = Api::namespaced(client.clone(), &a);
    let secrets_b: Api<Secret> = Api::namespaced(client.clone(), &b);
    eventually(WAIT, "the Secret mirrored in namespace a", || async {
        secrets_a.get_opt("only-in-a").await.ok().flatten()
    })
    .await;
    combined
        .stdout
        .wait_for("mirrored ConfigMap only-in-a", WAIT)
        .expect("logged once");
    let mirrored = combined
        .stdout
        .snapshot()
        .into_iter()
        .filter(|l| l.contains("mirrored ConfigMap only-in-a"))
        .count();
    assert_eq!(
        mirrored, 1,
        "only the instance of namespace a reconciled it"
    );
    assert!(secrets_b.get_opt("only-in-a").await.expect("get").is_none());

    let status = combined.terminate(WAIT).expect("stops on SIGTERM");
    assert!(status.success(), "{status:?}");
    assert!(
        combined
            .stderr
            .snapshot()
            .iter()
            .all(|l| !l.contains("failed")),
        "{:?}",
        combined.stderr.snapshot()
    );
}
