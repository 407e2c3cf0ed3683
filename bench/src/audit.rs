//! Upstream requests from the apiserver's audit log (`KUBE_WASM_AUDIT_LOG`, JSON lines): the
//! requests of one launch are the lines appended between two byte offsets, less the driver's
//! own (recognised by its `User-Agent`, [`DRIVER_USER_AGENT`]).

use std::collections::{BTreeMap, HashSet};
use std::io::{Read as _, Seek as _, SeekFrom};
use std::path::Path;

use anyhow::Context as _;
use serde::Serialize;

/// The `User-Agent` of the driver's own requests, left out of the counts.
pub const DRIVER_USER_AGENT: &str = "kube-wasm-bench-driver";

/// The current size of the audit log in bytes: where the next launch's lines start.
///
/// # Errors
/// If the file cannot be read.
pub fn offset(path: &Path) -> anyhow::Result<u64> {
    Ok(std::fs::metadata(path)
        .with_context(|| format!("reading {}", path.display()))?
        .len())
}

/// The requests the controllers made: counted once per audit ID, by verb.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
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

/// Counts the requests in the audit log at `path` from byte `from` to byte `to`, leaving out
/// the driver's.
///
/// # Errors
/// If the file cannot be read.
pub fn requests_between(path: &Path, from: u64, to: u64) -> anyhow::Result<Requests> {
    let mut file =
        std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    file.seek(SeekFrom::Start(from))?;
    let mut text = String::new();
    file.take(to.saturating_sub(from))
        .read_to_string(&mut text)
        .with_context(|| format!("reading {}", path.display()))?;
    Ok(count(&text))
}

/// Counts the requests in audit log `text` (whole lines; a torn last line is skipped).
pub fn count(text: &str) -> Requests {
    let mut seen = HashSet::new();
    let mut requests = Requests::default();
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
        let Some(id) = event["auditID"].as_str() else {
            continue;
        };
        if !seen.insert(id.to_owned()) {
            continue;
        }
        let verb = event["verb"].as_str().unwrap_or("unknown").to_owned();
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
}
