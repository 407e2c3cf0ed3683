//! The cases table of how kube-apiserver classifies a request
//! (`host-shim/tests/data/request_info.cases`, which host-shim's unit tests hold the host's
//! classification to) checked against a real kube-apiserver: every case the host does not
//! refuse is sent, spelled exactly as written, straight to the API server (not through the
//! host), and the verb and object its audit log records must be the ones the table states.

use kube_wasm_e2e::audit::Tail;
use kube_wasm_e2e::{client, env_path, fresh_namespace};
use std::time::Duration;

const CASES: &str = include_str!("../../host-shim/tests/data/request_info.cases");

/// An audit event's classification in the cases' notation (`nonresource VERB` without the
/// path: the log keeps only the raw request URI).
fn notation(event: &serde_json::Value) -> String {
    let field = |v: &serde_json::Value| match v.as_str() {
        Some(s) if !s.is_empty() => s.to_owned(),
        _ => "-".to_owned(),
    };
    let verb = field(&event["verb"]);
    let obj = &event["objectRef"];
    if obj.is_null() {
        return format!("nonresource {verb}");
    }
    format!(
        "resource {verb} {} {} {} {} {} {}",
        field(&obj["apiGroup"]),
        field(&obj["apiVersion"]),
        field(&obj["resource"]),
        field(&obj["subresource"]),
        field(&obj["namespace"]),
        field(&obj["name"]),
    )
}

#[tokio::test]
async fn the_cases_are_what_the_api_server_records() {
    let client = client().await;
    let ns = fresh_namespace(&client, "classify").await;
    let mut audit = Tail::at_end(env_path("KUBE_WASM_AUDIT_LOG")).expect("the audit log");

    let mut sent = Vec::new();
    for (i, line) in CASES
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .enumerate()
    {
        let (request, expected) = line.split_once(" => ").expect("METHOD URI => EXPECTED");
        if expected == "refused" {
            continue;
        }
        let (method, uri) = request.split_once(' ').expect("METHOD URI");
        let agent = format!("kube-wasm-classification/{i}");
        let request = http::Request::builder()
            .method(method)
            .uri(uri.replace("NS", &ns))
            .header("user-agent", &agent)
            .body(kube::client::Body::empty())
            .expect("a request");
        // The response does not matter (many are 404 or 400); a watch is dropped once started.
        let answered = tokio::time::timeout(Duration::from_secs(10), client.send(request)).await;
        assert!(answered.is_ok(), "{line}: no answer within 10 s");
        sent.push((agent, line.replace("NS", &ns), expected.replace("NS", &ns)));
    }
    assert!(sent.len() >= 80, "only {} cases sent", sent.len());

    let events = audit.events().expect("the audit log reads");
    let mut wrong = Vec::new();
    for (agent, line, expected) in &sent {
        let Some(event) = events
            .iter()
            .find(|e| e["userAgent"] == agent.as_str() && e["stage"] == "RequestReceived")
        else {
            wrong.push(format!("{line}\n  no audit event (user agent {agent})"));
            continue;
        };
        let recorded = notation(event);
        let expected = match expected.strip_prefix("nonresource ") {
            Some(rest) => format!("nonresource {}", rest.split(' ').next().unwrap_or_default()),
            None => expected.clone(),
        };
        if recorded != expected {
            wrong.push(format!(
                "{line}\n  API server {recorded}\n  table      {expected}"
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {} cases differ from the API server:\n{}",
        wrong.len(),
        sent.len(),
        wrong.join("\n")
    );
}
