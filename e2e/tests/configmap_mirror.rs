//! The example controller, built for wasm32-wasip1, reconciling real objects from inside the
//! host shim; stopping it closes its watch on the apiserver.

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Api;
use kube::api::{DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube_wasm_e2e::audit::audited_requests;
use kube_wasm_e2e::{
    HostShim, client, eventually, fresh_namespace, gone, kubeconfig_for, scratch_dir,
};
use std::collections::BTreeMap;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(30);

fn secret_data(secret: &Secret) -> BTreeMap<String, String> {
    secret
        .data
        .iter()
        .flatten()
        .map(|(k, v)| (k.clone(), String::from_utf8_lossy(&v.0).into_owned()))
        .collect()
}

#[tokio::test]
async fn mirrors_configmaps_into_secrets_and_stops_cleanly() {
    let client = client().await;
    let ns = fresh_namespace(&client, "mirror").await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &ns);

    // One ConfigMap exists before the controller starts: the initial list picks it up.
    let labelled = |name: &str, value: &str| ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some([("kube-wasm.dev/mirror".to_string(), "true".to_string())].into()),
            ..ObjectMeta::default()
        },
        data: Some([("greeting".to_string(), value.to_string())].into()),
        ..ConfigMap::default()
    };
    cms.create(&PostParams::default(), &labelled("before", "hello"))
        .await
        .expect("create");
    let unlabelled = ConfigMap {
        metadata: ObjectMeta {
            name: Some("ignored".into()),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    };
    cms.create(&PostParams::default(), &unlabelled)
        .await
        .expect("create");

    let kubeconfig = kubeconfig_for(&ns, &scratch_dir());
    let mut host = HostShim::start(&kubeconfig, &[], "configmap-mirror");
    host.stdout
        .wait_for("watching ConfigMaps", WAIT)
        .expect("controller started");

    let s = eventually(WAIT, "Secret before", || async {
        secrets.get_opt("before").await.ok().flatten()
    })
    .await;
    assert_eq!(
        secret_data(&s),
        [("greeting".into(), "hello".into())].into()
    );

    // Created while watching.
    cms.create(&PostParams::default(), &labelled("during", "hi"))
        .await
        .expect("create");
    eventually(WAIT, "Secret during", || async {
        secrets.get_opt("during").await.ok().flatten()
    })
    .await;

    // Updated while watching.
    let patch = serde_json::json!({"data": {"greeting": "bonjour", "extra": "1"}});
    cms.patch("during", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("patch");
    eventually(WAIT, "Secret during updated", || async {
        let s = secrets.get_opt("during").await.ok().flatten()?;
        let want: BTreeMap<String, String> = [
            ("greeting".into(), "bonjour".into()),
            ("extra".into(), "1".into()),
        ]
        .into();
        (secret_data(&s) == want).then_some(())
    })
    .await;

    // Deleted while watching.
    cms.delete("before", &DeleteParams::default())
        .await
        .expect("delete");
    eventually(WAIT, "Secret before deleted", || gone(&secrets, "before")).await;
    assert!(
        secrets.get_opt("ignored").await.expect("get").is_none(),
        "unlabelled ConfigMaps are not mirrored"
    );

    // Stop: the module sees ctrl_c, drops its watch and exits 0; the host closes the watch.
    let status = host.terminate(WAIT).expect("host exits");
    assert!(status.success(), "exit status {status}");
    host.stdout
        .wait_for("stop requested", Duration::from_secs(1))
        .expect("module saw the stop request");
    let watches: Vec<_> = audited_requests("configmaps", &ns)
        .into_iter()
        .filter(|r| r.verb == "watch")
        .collect();
    assert!(!watches.is_empty(), "the controller watched");
    let open: Vec<_> = watches
        .iter()
        .filter(|r| !r.stages.iter().any(|s| s == "ResponseComplete"))
        .collect();
    assert!(open.is_empty(), "watches still open after stop: {open:#?}");
}
