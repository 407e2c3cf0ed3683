//! Per-module quotas: an op over one is refused with an error value (a 429 `response` for a
//! request, watch or stream; an `error` of code `quota` for a timer), nothing reaches the API
//! server, and a module that ignores its refusals, or cannot be told, is ended.

mod common;

use std::sync::Arc;

use common::{Guest, Reply, call_with_frame, fake_client, get, run_configured};
use host_shim::runtime::quota::{QuotaAbuse, Quotas};
use host_shim::{ModuleError, ModuleOptions, ModuleOutcome, Upstream};
use kube_wasm_abi::{StreamOpen, WatchRequest, encode_frame};

/// The `version` export of a guest of ABI 1.3, which reads a timer's `quota` error.
const ABI_1_3: &str = "(i32.const 0x10003)";

fn with_quotas(quotas: Quotas) -> ModuleOptions {
    ModuleOptions {
        quotas,
        ..ModuleOptions::default()
    }
}

/// Answers every request with a one-line JSON body.
fn answering_upstream() -> (Upstream, Arc<std::sync::Mutex<Vec<common::Seen>>>) {
    let (client, seen) = fake_client(|_| Reply::ok(b"{\"type\":\"ADDED\",\"object\":{}}\n"));
    (Upstream::new(client, "https://fake.invalid"), seen)
}

/// A guest that calls `import` with the frame `times` times in `_start`.
fn calling(import: &str, frame: &[u8], times: usize) -> Guest {
    let call = format!("(drop {})", call_with_frame(import, frame));
    Guest::new(&call.repeat(times)).frame(frame)
}

fn count(lines: &[String], needle: &str) -> usize {
    lines.iter().filter(|l| l.contains(needle)).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_over_the_concurrency_quota_get_429_and_stay_home() {
    let (upstream, seen) = answering_upstream();
    let frame = encode_frame(&get("/api/v1/namespaces/default/configmaps/a"), b"");
    // All five calls happen in one entry: the first two are in flight for all of them.
    let guest = calling("http_request", &frame, 5).expect_finals(5).wasm();
    let quotas = Quotas {
        concurrent_requests: 2,
        ..Quotas::default()
    };
    let run = run_configured(upstream, &[("flood", guest, with_quotas(quotas))]).await;
    assert_eq!(run.outcome("flood"), &ModuleOutcome::Exited(0));
    let lines = run.lines_of("flood");
    assert_eq!(count(&lines, r#""status":429"#), 3, "{lines:?}");
    assert_eq!(
        count(&lines, r#"["retry-after","1"]"#),
        3,
        "told to retry as the API server tells it"
    );
    assert_eq!(
        count(&lines, "at its quota of 2 concurrent requests"),
        3,
        "{lines:?}"
    );
    assert_eq!(
        count(&lines, r#""reason":"TooManyRequests""#),
        3,
        "{lines:?}"
    );
    assert_eq!(count(&lines, r#""status":200"#), 2, "{lines:?}");
    assert_eq!(seen.lock().expect("log").len(), 2, "only two went upstream");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_over_the_quota_get_429() {
    let (upstream, seen) = answering_upstream();
    let request = WatchRequest {
        path: "/api/v1/namespaces/default/configmaps".into(),
        label_selector: None,
        field_selector: None,
        timeout_seconds: None,
        bookmarks: false,
        send_initial_events: false,
        resource_version: "7".into(),
        metadata_only: false,
    };
    let frame = encode_frame(&request, b"");
    // The two admitted watches end after one event; the other two are refused.
    let guest = calling("watch", &frame, 4).expect_finals(4).wasm();
    let quotas = Quotas {
        watches: 2,
        ..Quotas::default()
    };
    let run = run_configured(upstream, &[("watcher", guest, with_quotas(quotas))]).await;
    assert_eq!(run.outcome("watcher"), &ModuleOutcome::Exited(0));
    let lines = run.lines_of("watcher");
    assert_eq!(count(&lines, "at its quota of 2 watches"), 2, "{lines:?}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("3:") && l.contains("429")),
        "{lines:?}"
    );
    assert_eq!(seen.lock().expect("log").len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timers_over_the_pending_ops_quota_get_a_quota_error() {
    let upstream = common::idle_upstream();
    let delays = "(drop (call $delay (i64.const 60000)))".repeat(5);
    let guest = Guest::new(&delays)
        .version(Some(ABI_1_3))
        .expect_finals(2)
        .wasm();
    let quotas = Quotas {
        pending_ops: 3,
        ..Quotas::default()
    };
    let run = run_configured(upstream, &[("timers", guest, with_quotas(quotas))]).await;
    assert_eq!(run.outcome("timers"), &ModuleOutcome::Exited(0));
    let lines = run.lines_of("timers");
    assert_eq!(
        lines,
        [
            r#"4:{"kind":"error","code":"quota","message":"module `timers` is at its quota of 3 pending ops"}"#,
            r#"5:{"kind":"error","code":"quota","message":"module `timers` is at its quota of 3 pending ops"}"#,
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_module_that_ignores_its_refusals_is_ended() {
    let upstream = common::idle_upstream();
    let delays = "(drop (call $delay (i64.const 60000)))".repeat(10);
    let guest = Guest::new(&delays).version(Some(ABI_1_3)).wasm();
    let quotas = Quotas {
        pending_ops: 2,
        ..Quotas::default()
    };
    let run = run_configured(upstream, &[("ignorer", guest, with_quotas(quotas))]).await;
    assert_eq!(
        run.outcome("ignorer"),
        &ModuleOutcome::Failed(ModuleError::QuotaAbuse(QuotaAbuse::IgnoredRefusals {
            refused: 2,
            limit: 2
        }))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_older_guest_whose_timer_is_refused_is_ended() {
    let upstream = common::idle_upstream();
    let delays = "(drop (call $delay (i64.const 60000)))".repeat(2);
    let guest = Guest::new(&delays)
        .version(Some("(i32.const 0x10002)"))
        .wasm();
    let quotas = Quotas {
        pending_ops: 1,
        ..Quotas::default()
    };
    let run = run_configured(upstream, &[("old", guest, with_quotas(quotas))]).await;
    assert!(
        matches!(
            run.outcome("old"),
            ModuleOutcome::Failed(ModuleError::QuotaAbuse(QuotaAbuse::Unrefusable(_)))
        ),
        "{:?}",
        run.outcome("old")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_over_the_buffered_bytes_quota_get_429() {
    let (client, seen) = fake_client(|_| Reply::ok(&[b'x'; 4096]));
    let upstream = Upstream::new(client, "https://fake.invalid");
    let mut post = get("/api/v1/namespaces/default/configmaps");
    post.method = "POST".into();
    let big_body = encode_frame(&post, &[b'{'; 3000]);
    let small_get = encode_frame(&get("/api/v1/namespaces/default/configmaps/a"), b"");
    // The POST's body does not fit the budget; the GET's answer (4 KiB) does not either.
    let start = format!(
        "(drop {}) (drop (call $http_request (i32.const 16384) (i32.const {})))",
        call_with_frame("http_request", &big_body),
        small_get.len()
    );
    let mut guest = Guest::new(&start).frame(&big_body).expect_finals(2);
    guest.extra.push_str(&format!(
        "(data (i32.const 16384) \"{}\")\n",
        common::wat_bytes(&small_get)
    ));
    let quotas = Quotas {
        buffered_bytes: 2048,
        ..Quotas::default()
    };
    let run = run_configured(upstream, &[("bulky", guest.wasm(), with_quotas(quotas))]).await;
    assert_eq!(run.outcome("bulky"), &ModuleOutcome::Exited(0));
    let lines = run.lines_of("bulky");
    assert_eq!(
        count(&lines, "at its quota of 2048 buffered bytes"),
        2,
        "{lines:?}"
    );
    let seen = seen.lock().expect("log");
    assert_eq!(seen.len(), 1, "the POST never left: {seen:?}");
    assert_eq!(seen[0].method, http::Method::GET);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_over_the_quota_get_429() {
    let forbidden = br#"{"kind":"Status","status":"Failure","reason":"Forbidden","code":403}"#;
    let (client, seen) = fake_client(|_| Reply::new(403, vec![Ok(forbidden.to_vec())]));
    let upstream = Upstream::new(client, "https://fake.invalid");
    let open = StreamOpen {
        method: "GET".into(),
        uri: "/api/v1/namespaces/ns/pods/p/exec?command=ls&stdout=true".into(),
        headers: vec![],
        credit: 4,
        keepalive_secs: 0,
    };
    let frame = encode_frame(&open, b"");
    let guest = calling("stream_open", &frame, 3)
        .imports(
            r#"(import "kube_wasm_v1" "stream_open" (func $stream_open (param i32 i32) (result i64)))"#,
        )
        .expect_finals(3)
        .wasm();
    let quotas = Quotas {
        streams: 1,
        ..Quotas::default()
    };
    let run = run_configured(upstream, &[("shell", guest, with_quotas(quotas))]).await;
    assert_eq!(run.outcome("shell"), &ModuleOutcome::Exited(0));
    let lines = run.lines_of("shell");
    assert_eq!(count(&lines, "at its quota of 1 streams"), 2, "{lines:?}");
    assert_eq!(
        count(&lines, r#""status":403"#),
        1,
        "the admitted one went upstream: {lines:?}"
    );
    assert_eq!(seen.lock().expect("log").len(), 1);
}
