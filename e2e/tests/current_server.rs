//! What only a current API server does, natively (real kube 5.0 + tokio) and as a wasm module in
//! the host shim (shared watches on), against the real apiserver: the api-checks guest's
//! `current` mode — CEL validation rules of a `KubeSchema` CRD answered with `422 Invalid`,
//! server-side apply conflicts (`409`) and forced applies, `pods/resize`, and streaming lists
//! (`WatchParams::streaming_lists`, `watcher::Config::streaming_lists`) — same observations,
//! line for line, and the ones Kubernetes gives.

use kube_wasm_e2e::objects::{install_crd, native_crd};
use kube_wasm_e2e::side_by_side::run_both_to_end;
use kube_wasm_e2e::{client, serves_streaming_lists};
use std::time::Duration;

#[tokio::test]
async fn cel_rules_apply_conflicts_resize_and_streaming_lists_match_the_native_run() {
    let client = client().await;
    let crd = native_crd("api-checks");
    let rules = serde_json::to_string(&crd).expect("JSON");
    assert!(
        rules.contains("x-kubernetes-validations"),
        "KubeSchema puts the CEL rules in the schema: {rules}"
    );
    install_crd(&client, &crd, "current-server", Duration::from_secs(30)).await;

    let lines = run_both_to_end(
        &client,
        "api-checks",
        "current",
        "API_CHECKS_NAMESPACE",
        &[("API_CHECKS_MODE", "current")],
        Duration::from_secs(120),
    )
    .await;

    // Exact where every supported server words its answer alike; else its start and end
    // (1.33 names the value's type where 1.37 quotes the value or leaves it out).
    let mut expected = vec![
        Want::Around(
            "cel create over the limit: 422 Invalid Budget.api-checks.kube-wasm.example.com \"team\" \
             is invalid: spec: Invalid value: ",
            "used may not exceed limit",
        ),
        Want::Line("cel create within the limit: team used=3"),
        Want::Around(
            "cel transition rule: 422 Invalid Budget.api-checks.kube-wasm.example.com \"team\" is \
             invalid: spec.owner: Invalid value: ",
            ": owner is immutable",
        ),
        Want::Line("cel update within the limit: used=10"),
        Want::Line("apply first: data=Some({\"owner\": \"first\"}) managers=[\"first:Apply\"]"),
        Want::Line(
            "apply conflicting: 409 Conflict Apply failed with 1 conflict: conflict with \"first\": \
             .data.owner",
        ),
        Want::Line("apply forced: data=Some({\"owner\": \"second\"}) managers=[\"second:Apply\"]"),
        Want::Line(
            "apply dry run conflicting: 409 Conflict Apply failed with 1 conflict: conflict with \
             \"second\": .data.owner",
        ),
        Want::Line("resize created: requests=100m/64Mi limits=200m/128Mi"),
        Want::Line("resize patched: requests=150m/64Mi limits=300m/128Mi"),
        Want::Line("resize read: requests=150m/64Mi limits=300m/128Mi"),
        Want::Line(
            "resize changing the QoS class: 422 Invalid Pod \"resized\" is invalid: spec: Invalid \
             value: \"Burstable\": Pod QOS Class may not change as a result of resizing",
        ),
        Want::Line(
            "resize of the image: Some(\"registry.invalid/app:1\") requests=150m/64Mi \
             limits=300m/128Mi",
        ),
    ];
    if serves_streaming_lists(&client).await {
        expected.extend([
            Want::Line(
                "streaming watch: added [\"stream-a\", \"stream-b\"], then a bookmark \
                 [(\"k8s.io/initial-events-end\", \"true\")]",
            ),
            Want::Line("streaming watcher: initial [\"stream-a\", \"stream-b\"]"),
            Want::Line("streaming watcher: then stream-a data=Some({\"changed\": \"yes\"})"),
        ]);
    } else {
        // The WatchList feature gate off (1.33's default): the server's 422, in both runs.
        expected.push(Want::Around(
            "streaming watch: refused 422 Invalid: ",
            "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled",
        ));
    }
    for want in &expected {
        assert!(
            lines.iter().any(|l| want.matches(l)),
            "expected {want:?} in {lines:#?}"
        );
    }
}

/// A line a run must print.
#[derive(Debug)]
enum Want {
    /// Exactly this.
    Line(&'static str),
    /// A line with this start and this end.
    Around(&'static str, &'static str),
}

impl Want {
    fn matches(&self, line: &str) -> bool {
        match self {
            Want::Line(want) => line == *want,
            Want::Around(start, end) => {
                line.len() >= start.len() + end.len()
                    && line.starts_with(start)
                    && line.ends_with(end)
            }
        }
    }
}
