//! Identity and permissions against the real apiserver: a module whose permissions leave out
//! `secrets` gets 403 `Forbidden` values for them and the apiserver never sees those requests;
//! a module with a `serviceAccount` acts as that account (the audit log shows it impersonated),
//! within the RBAC the account has; the metrics endpoint shows both modules.

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Api;
use kube::api::PostParams;
use kube_wasm_e2e::audit::audited_requests;
use kube_wasm_e2e::manifest::{Entry, start_manifest_with, write_manifest};
use kube_wasm_e2e::metrics::{free_local_addr, scrape};
use kube_wasm_e2e::objects::{mirror_account, mirrored};
use kube_wasm_e2e::{client, eventually, fresh_namespace, kubeconfig_for, scratch_dir};
use std::time::Duration;

#[tokio::test]
async fn denied_requests_are_403_values_and_modules_act_as_their_service_account() {
    let client = client().await;
    let denied_ns = fresh_namespace(&client, "denied").await;
    let acting_ns = fresh_namespace(&client, "acting").await;
    mirror_account(&client, &acting_ns, "mirror").await;
    for ns in [&denied_ns, &acting_ns] {
        Api::<ConfigMap>::namespaced(client.clone(), ns)
            .create(&PostParams::default(), &mirrored("cm-1"))
            .await
            .expect("configmap");
    }

    let dir = scratch_dir().join(format!("identity-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let entries = [
        Entry::new("denied", "configmap-mirror")
            .namespace(&denied_ns)
            .field("restartPolicy: Never")
            .field("permissions: [{verbs: [get, list, watch], resources: [configmaps]}]"),
        Entry::new("acting", "configmap-mirror")
            .namespace(&acting_ns)
            .field(&format!(
                "serviceAccount: {{namespace: {acting_ns}, name: mirror}}"
            )),
    ];
    let manifest = write_manifest(&dir, "host.yaml", "", &entries);
    let kubeconfig = kubeconfig_for(&acting_ns, &dir);
    let metrics_addr = free_local_addr().expect("a free port").to_string();
    let mut host = start_manifest_with(&kubeconfig, &manifest, &["--metrics-addr", &metrics_addr]);

    // The denied module's kube client got a 403 Forbidden Status for its secrets request, and
    // the error ended it.
    host.stderr
        .wait_for(
            "module `denied` exited with status 1",
            Duration::from_secs(60),
        )
        .expect("the denied module fails on its first secrets request");
    let errors: Vec<String> = host
        .stderr
        .snapshot()
        .into_iter()
        .filter(|l| l.starts_with("[denied] "))
        .collect();
    let errors = errors.join("\n");
    assert!(
        errors.contains("module \"denied\" may not patch resource \"secrets\""),
        "the guest sees the host's Forbidden Status:\n{errors}"
    );
    assert!(
        errors.contains("ApiError")
            && errors.contains("code: 403")
            && errors.contains("reason: \"Forbidden\""),
        "a kube::Error::Api with code 403 and reason Forbidden:\n{errors}"
    );
    let host_log = host.stderr.snapshot().join("\n");
    assert!(
        host_log.contains("denied: module \"denied\" may not patch resource \"secrets\""),
        "the host logs the denial:\n{host_log}"
    );

    // The acting module mirrors, as its ServiceAccount.
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &acting_ns);
    eventually(Duration::from_secs(30), "the mirror to mirror", || async {
        secrets.get_opt("cm-1").await.ok().flatten()
    })
    .await;

    // The metrics endpoint shows both modules: the healthy one running, entered, never
    // restarted; the denied one stopped.
    let text = scrape(&metrics_addr);
    let value = |series: &str| -> f64 {
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("no {series} in\n{text}"))
    };
    assert_eq!(
        value(r#"kube_wasm_module_state{module="acting",state="running"}"#),
        1.0
    );
    assert_eq!(
        value(r#"kube_wasm_module_state{module="denied",state="stopped"}"#),
        1.0
    );
    assert_eq!(
        value(r#"kube_wasm_module_restarts_total{module="acting"}"#),
        0.0
    );
    assert!(value(r#"kube_wasm_module_entries_total{module="acting"}"#) > 2.0);
    assert!(value(r#"kube_wasm_module_memory_bytes{module="acting"}"#) >= 65536.0);
    assert!(
        value(r#"kube_wasm_module_op_duration_seconds_count{module="acting",kind="http"}"#) >= 2.0
    );
    // The acting module's watch (shared: the host's one LIST+WATCH, opened after its LIST).
    eventually(Duration::from_secs(30), "one upstream watch", || async {
        let text = scrape(&metrics_addr);
        text.lines()
            .any(|l| l == "kube_wasm_upstream_watches 1")
            .then_some(())
    })
    .await;

    // The apiserver saw the denied module's allowed configmaps requests, and no secrets request.
    let allowed = audited_requests("configmaps", &denied_ns);
    assert!(
        allowed.iter().any(|r| r.verb == "list"),
        "the allowed list reached the apiserver: {allowed:?}"
    );
    let secrets_seen = audited_requests("secrets", &denied_ns);
    assert!(
        secrets_seen.is_empty(),
        "no secrets request of the denied module reached the apiserver: {secrets_seen:?}"
    );
    let status = host.terminate(Duration::from_secs(30)).expect("host exits");
    assert!(!status.success(), "the denied module failed");

    // Every request of the acting module was made by the host's user acting as the module's
    // ServiceAccount (the test itself only creates configmaps and gets secrets there). An
    // watch shows its impersonated user once its ResponseStarted stage is logged: when it closes.
    let user = format!("system:serviceaccount:{acting_ns}:mirror");
    let acting_requests = || {
        [
            ("configmaps", ["list", "watch"]),
            ("secrets", ["list", "patch"]),
        ]
        .into_iter()
        .flat_map(|(resource, verbs)| {
            audited_requests(resource, &acting_ns)
                .into_iter()
                .filter(move |r| verbs.contains(&r.verb.as_str()))
                .map(move |r| (resource, r))
        })
        .collect::<Vec<_>>()
    };
    eventually(
        Duration::from_secs(10),
        "the acting module's requests, impersonated, in the audit log",
        || async {
            let requests = acting_requests();
            let kinds = requests
                .iter()
                .map(|(res, r)| (*res, r.verb.clone()))
                .collect::<std::collections::HashSet<_>>();
            let done = kinds.len() == 4
                && requests
                    .iter()
                    .all(|(_, r)| r.impersonated_user.as_deref() == Some(user.as_str()));
            done.then_some(())
        },
    )
    .await;
    for (resource, request) in acting_requests() {
        assert_eq!(request.user, "kube-wasm-admin", "{resource} {request:?}");
    }
}
