//! Upstream requests from the apiserver's audit log (`KUBE_WASM_AUDIT_LOG`, JSON lines, read
//! with the test kit's [`kube_wasm_e2e::audit`]): the requests of one launch are the lines
//! appended between two [`Mark`]s, less the driver's own (recognised by its `User-Agent`,
//! [`DRIVER_USER_AGENT`]).

use std::collections::BTreeMap;
use std::path::Path;

use kube_wasm_e2e::audit::{ByRequest, read_between};
pub use kube_wasm_e2e::audit::{Mark, mark};
use serde::{Deserialize, Serialize};

/// The `User-Agent` of the driver's own requests, left out of the counts.
pub const DRIVER_USER_AGENT: &str = "kube-wasm-bench-driver";

/// The requests the controllers made: counted once per audit ID, by verb.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Requests {
    /// Requests per verb (`get`, `list`, `watch`, `patch`, `create`, …).
    pub by_verb: BTreeMap<String, u64>,
    /// All requests.
    pub total: u64,
}

impl Requests {
    /// The count of one verb.
    pub fn verb(&self, verb: &str) -> u64 {
        self.by_verb.get(verb).copied().unwrap_or(0)
    }
}

/// Counts the requests in the audit log at `path` between `from` and `to`, leaving out the
/// driver's and the control plane's; follows a rotation between the marks (see
/// [`read_between`]).
///
/// # Errors
/// If a file cannot be read or the rotated file is gone: not counted is not 0.
pub fn requests_between(path: &Path, from: Mark, to: Mark) -> anyhow::Result<Requests> {
    Ok(count(&read_between(path, from, to)?))
}

/// Counts the requests in audit log `text` (whole lines; a torn last line is skipped).
pub fn count(text: &str) -> Requests {
    let mut grouped = ByRequest::default();
    for line in text.lines() {
        let Ok(event) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if event["userAgent"].as_str() == Some(DRIVER_USER_AGENT) {
            continue;
        }
        let user = event["user"]["username"].as_str().unwrap_or_default();
        if user.starts_with("system:") && !user.starts_with("system:serviceaccount:") {
            continue;
        }
        if event["auditID"].is_string() {
            grouped.push(event);
        }
    }
    let mut requests = Requests::default();
    for stages in grouped.requests() {
        let verb = stages[0]["verb"].as_str().unwrap_or("unknown").to_owned();
        *requests.by_verb.entry(verb).or_default() += 1;
        requests.total += 1;
    }
    requests
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_each_request_once_without_the_driver() {
        let text = [
            r#"{"auditID":"a","stage":"RequestReceived","verb":"watch","userAgent":""}"#,
            r#"{"auditID":"a","stage":"ResponseComplete","verb":"watch"}"#,
            r#"{"auditID":"b","stage":"RequestReceived","verb":"list"}"#,
            r#"{"auditID":"c","stage":"RequestReceived","verb":"patch","userAgent":"kube-wasm-bench-driver"}"#,
            r#"{"auditID":"d","stage":"RequestReceived","verb":"patch","user":{"username":"admin"}}"#,
            r#"{"auditID":"f","stage":"RequestReceived","verb":"get","user":{"username":"system:apiserver"}}"#,
            r#"{"auditID":"e","stage":"Requ"#,
        ]
        .join("\n");
        let requests = count(&text);
        assert_eq!(requests.total, 3);
        assert_eq!(
            (
                requests.verb("watch"),
                requests.verb("list"),
                requests.verb("patch")
            ),
            (1, 1, 1)
        );
    }

    #[test]
    fn follows_a_rotation_between_marks() {
        let dir =
            std::env::temp_dir().join(format!("kube-wasm-bench-audit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let log = dir.join("audit.log");
        let line = |id: &str| format!("{{\"auditID\":\"{id}\",\"verb\":\"get\"}}\n");
        std::fs::write(&log, line("before")).expect("write");
        let from = mark(&log).expect("mark");
        std::fs::OpenOptions::new()
            .append(true)
            .open(&log)
            .and_then(|mut f| std::io::Write::write_all(&mut f, line("a").as_bytes()))
            .expect("append");
        std::fs::rename(&log, dir.join("audit-2026-01-01T00-00-00.000.log")).expect("rotate");
        std::fs::write(&log, line("b") + &line("c")).expect("write");
        let to = mark(&log).expect("mark");
        std::fs::OpenOptions::new()
            .append(true)
            .open(&log)
            .and_then(|mut f| std::io::Write::write_all(&mut f, line("after").as_bytes()))
            .expect("append");
        let requests = requests_between(&log, from, to).expect("counted");
        assert_eq!(requests.total, 3, "a, b and c: {requests:?}");
        let same = requests_between(&log, to, mark(&log).expect("mark")).expect("counted");
        assert_eq!(same.total, 1);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
