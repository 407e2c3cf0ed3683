//! Upstream requests from the apiserver's audit log (`KUBE_WASM_AUDIT_LOG`, JSON lines, read
//! with the test kit's [`kube_wasm_e2e::audit`]): the requests of one launch are the lines
//! appended between two [`Mark`]s, less the driver's own (recognised by its `User-Agent`,
//! [`DRIVER_USER_AGENT`]); and how long a controller took to answer the driver's writes
//! ([`reply_delays_between`]), on the apiserver's clock.

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

/// An object of a namespace: its resource (plural, as in the audit log's `objectRef`) and name.
#[derive(Debug, Clone, Copy)]
pub struct Object<'a> {
    /// `objectRef.resource`: `configmaps`, `secrets`, …
    pub resource: &'a str,
    /// `objectRef.name`.
    pub name: &'a str,
}

/// [`reply_delays`] of the audit log at `path` between `from` and `to`.
///
/// # Errors
/// If a file cannot be read or the rotated file is gone.
pub fn reply_delays_between(
    path: &Path,
    from: Mark,
    to: Mark,
    namespace: &str,
    trigger: Object<'_>,
    reply: Object<'_>,
) -> anyhow::Result<Vec<f64>> {
    Ok(reply_delays(
        &read_between(path, from, to)?,
        namespace,
        trigger,
        reply,
    ))
}

/// For each write (create, update, patch — a server-side apply is a patch) of `trigger` in
/// `namespace` by the driver, in audit log `text`, the ms from the apiserver's answer to it
/// (the `stageTimestamp` of its ResponseComplete stage, µs: the change is stored) to its
/// receipt (`requestReceivedTimestamp`) of the first write of `reply` in that namespace by
/// anyone else after it was received and before the driver's next write of `trigger`: how
/// long a controller took from the change to its reconcile's write, both on the apiserver's
/// clock, without the apiserver's own handling of either write or a watch back to the
/// driver. (The watch event may leave before the answer: a figure can be a little below 0.)
/// A write not answered in time, or whose answer the log lacks, has no figure.
pub fn reply_delays(
    text: &str,
    namespace: &str,
    trigger: Object<'_>,
    reply: Object<'_>,
) -> Vec<f64> {
    let micros = |v: &serde_json::Value| {
        v.as_str()
            .and_then(|t| t.parse::<k8s_openapi::jiff::Timestamp>().ok())
            .map(|t| t.as_microsecond())
    };
    let mut grouped = ByRequest::default();
    for line in text.lines() {
        let Ok(event) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if event["auditID"].is_string()
            && event["objectRef"]["namespace"] == namespace
            && matches!(event["verb"].as_str(), Some("create" | "update" | "patch"))
        {
            grouped.push(event);
        }
    }
    // The driver's writes of `trigger`: (received, answered); the others' writes of `reply`.
    let (mut triggers, mut replies) = (Vec::new(), Vec::new());
    for stages in grouped.requests() {
        let first = &stages[0];
        let object = &first["objectRef"];
        let is = |o: Object<'_>| object["resource"] == o.resource && object["name"] == o.name;
        let Some(received) = micros(&first["requestReceivedTimestamp"]) else {
            continue;
        };
        let by_driver = first["userAgent"].as_str() == Some(DRIVER_USER_AGENT);
        if by_driver && is(trigger) {
            let answered = stages
                .iter()
                .find(|s| s["stage"] == "ResponseComplete")
                .and_then(|s| micros(&s["stageTimestamp"]));
            triggers.push((received, answered));
        } else if !by_driver && is(reply) {
            replies.push(received);
        }
    }
    triggers.sort_unstable();
    replies.sort_unstable();
    triggers
        .iter()
        .enumerate()
        .filter_map(|(i, &(received, answered))| {
            let before = triggers.get(i + 1).map_or(i64::MAX, |t| t.0);
            let first = replies.iter().find(|&&r| r >= received && r < before)?;
            Some((first - answered?) as f64 / 1000.0)
        })
        .collect()
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
    fn a_reply_is_the_first_write_of_the_answer_by_another_after_each_trigger() {
        // One stage of a request on `cm-0` in namespace `a`, received at second `received` and
        // at this stage at second `at`.
        let stage = |id: &str,
                     stage: &str,
                     agent: &str,
                     verb: &str,
                     resource: &str,
                     received: &str,
                     at: &str| {
            format!(
                r#"{{"auditID":"{id}","stage":"{stage}","verb":"{verb}","userAgent":"{agent}","objectRef":{{"resource":"{resource}","namespace":"a","name":"cm-0"}},"requestReceivedTimestamp":"2026-11-30T10:00:{received}Z","stageTimestamp":"2026-11-30T10:00:{at}Z"}}"#
            )
        };
        let line = |id: &str, st: &str, agent: &str, verb: &str, resource: &str, at: &str| {
            stage(id, st, agent, verb, resource, at, at)
        };
        let answered = |id: &str, received: &str, at: &str| {
            stage(
                id,
                "ResponseComplete",
                DRIVER_USER_AGENT,
                "patch",
                "configmaps",
                received,
                at,
            )
        };
        let d = DRIVER_USER_AGENT;
        let rr = "RequestReceived";
        let text = [
            line("1", rr, d, "patch", "configmaps", "00.000000"),
            answered("1", "00.000000", "00.004000"),
            // Not replies: a read, the driver's own write of the answer, the answer's later stage.
            line("2", rr, "go", "get", "secrets", "00.004500"),
            line("4", rr, d, "patch", "secrets", "00.004800"),
            line("5", rr, "go", "patch", "secrets", "00.006250"),
            line(
                "5",
                "ResponseComplete",
                "go",
                "patch",
                "secrets",
                "00.009000",
            ),
            line("6", rr, "go", "patch", "secrets", "00.007000"),
            // Answered by nothing before the next change: no figure.
            line("7", rr, d, "patch", "configmaps", "01.000000"),
            answered("7", "01.000000", "01.003000"),
            // A reply received before the change's answer was written: below 0.
            line("8", rr, d, "update", "configmaps", "02.000000"),
            line("9", rr, "go", "patch", "secrets", "02.003000"),
            answered("8", "02.000000", "02.003500"),
            // A change whose answer the log lacks: no figure.
            line("10", rr, d, "patch", "configmaps", "03.000000"),
            line("11", rr, "go", "patch", "secrets", "03.002000"),
        ]
        .join("\n");
        let of = |resource| Object {
            resource,
            name: "cm-0",
        };
        let ms = reply_delays(&text, "a", of("configmaps"), of("secrets"));
        assert_eq!(ms, [2.25, -0.5]);
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
