//! The same `Api<K>` program, natively (real kube 5.0 + tokio) and as a wasm module in the
//! host shim, against the real apiserver: same observations, line for line.

use kube_wasm_e2e::client;
use kube_wasm_e2e::side_by_side::run_both_to_end;
use std::time::Duration;

#[tokio::test]
async fn api_checks_in_the_host_shim_match_the_native_run() {
    let client = client().await;
    let wasm_lines = run_both_to_end(
        &client,
        "api-checks",
        "api",
        "API_CHECKS_NAMESPACE",
        &[],
        Duration::from_secs(120),
    )
    .await;

    // And the observations themselves are the Kubernetes semantics we expect.
    let expect_in_order = [
        "get missing pod: not found",
        "get_opt missing: None",
        "send missing: 404 Not Found application/json reason=NotFound code=404",
        "send create: 201 Created application/json raw-send Some({\"via\": \"send\"})",
        "send delete: 200 OK application/json",
        "scoped get: scoped-a true",
        "scoped get cluster: cluster-admin",
        "scoped get missing: 404 NotFound",
        "scoped list: namespace [\"scoped-a\", \"scoped-b\"] cluster [\"scoped-a\", \"scoped-b\"]",
        "scoped list limit 1: 1 continue=true",
        "scoped fetch: scoped-a dynamic kind Some(\"ConfigMap\")",
        "scoped fetch wrong type: Error deserializing response: invalid value: string \"ConfigMap\", expected Pod at line 1 column 19",
        "scoped fetch unnamed: Reference resolve error: Reference is empty",
        "scoped fetch local: scoped-b",
        "scoped fetch owner: true",
        "scoped fetch placed owner: scoped-a",
        "discovery pods: pods Namespaced list=true",
        "watch missing resource: 404 Failed to parse error data",
        "create: api-checks data=Some({\"step\": \"created\"})",
        "create again: already exists",
        "patch merge: Some({\"merge\": \"yes\", \"step\": \"merge\"})",
        "patch json: Some({\"step\": \"json\"})",
        "patch strategic: Some({\"step\": \"strategic\"}) annotations={\"api-checks/strategic\": \"yes\"}",
        "patch apply: Some({\"applied\": \"true\", \"step\": \"apply\"})",
        "apply manager recorded: true",
        "replace stale: conflict",
        "list: [\"api-checks\"]",
        "delete: ok",
        "watch: ADDED api-checks",
        "reflector ready: 0 objects",
        "reflector store: [\"reflected-a\", \"reflected-b\"]",
        "finalizer pass 1: Action { requeue_after: None }",
        "finalizer apply: finalized",
        "finalizer pass 2: Action { requeue_after: Some(300s) }",
        "finalizers: [\"api-checks.kube-wasm.dev/cleanup\"]",
        "event: Normal Checked Check Some(\"api-checks ran\") regarding=Some(\"finalized\") \
         by Some(\"api-checks\")/Some(\"api-checks\") series=Some(2)",
        "deleting holds: true",
        "finalizer cleanup: finalized",
        "finalized object deleted",
        "controller reconciled: {\"controlled-a\", \"controlled-b\"}",
    ];
    let mut rest = wasm_lines.iter();
    for want in expect_in_order {
        assert!(
            rest.any(|l| l == want),
            "missing (in order) {want:?} in {wasm_lines:#?}"
        );
    }
    let groups = wasm_lines
        .iter()
        .find_map(|l| l.strip_prefix("discovery groups: "))
        .expect("discovery ran");
    for group in [
        "",
        "apps",
        "apiextensions.k8s.io",
        "rbac.authorization.k8s.io",
    ] {
        assert!(
            groups.split(',').any(|g| g == group),
            "{group:?} in {groups}"
        );
    }
    let watch: Vec<&String> = wasm_lines
        .iter()
        .filter(|l| l.starts_with("watch: "))
        .collect();
    assert_eq!(
        watch.first().map(|s| s.as_str()),
        Some("watch: ADDED api-checks")
    );
    assert_eq!(
        watch.last().map(|s| s.as_str()),
        Some("watch: DELETED api-checks")
    );
    assert!(
        watch[1..watch.len() - 1]
            .iter()
            .all(|l| l.starts_with("watch: MODIFIED api-checks")),
        "{watch:#?}"
    );
    assert_eq!(watch.len(), 2 + 4, "one MODIFIED per patch: {watch:#?}");
}
