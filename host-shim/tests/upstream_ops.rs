//! `http_request` and `watch` through a real `kube::Client`: a fake transport for responses,
//! and an unreachable API server for connection errors.

mod common;

use common::{Guest, Reply, call_with_frame, fake_client, get, run_guests};
use host_shim::{ModuleOutcome, Upstream};
use kube_wasm_abi::{HttpRequest, ResponseMode, WatchRequest, encode_frame};

fn http_guest(request: &HttpRequest, body: &[u8], finals: u32) -> Vec<u8> {
    let frame = encode_frame(request, body);
    Guest::new(&format!(
        "(drop {})",
        call_with_frame("http_request", &frame)
    ))
    .frame(&frame)
    .expect_finals(finals)
    .wasm()
}

/// What the guest records for the `head` that establishes a watch (the fake transport answers
/// `content-type: application/json`).
const WATCH_HEAD: &str =
    r#"1:{"kind":"head","status":200,"headers":[["content-type","application/json"]]}"#;

fn watch_request(path: &str) -> WatchRequest {
    WatchRequest {
        path: path.into(),
        label_selector: Some("app=ring".into()),
        field_selector: None,
        timeout_seconds: None,
        bookmarks: true,
        send_initial_events: false,
        resource_version: "41".into(),
        metadata_only: false,
    }
}

fn watch_guest(request: &WatchRequest) -> Vec<u8> {
    let frame = encode_frame(request, b"");
    Guest::new(&format!("(drop {})", call_with_frame("watch", &frame)))
        .frame(&frame)
        .wasm()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn whole_response_comes_back_and_authorization_is_dropped() {
    let (client, seen) = fake_client(|req| {
        let mut reply = Reply::new(
            201,
            vec![Ok(b"{\"kind\":".to_vec()), Ok(b"\"ConfigMap\"}".to_vec())],
        );
        reply
            .headers
            .push(("x-echo".into(), req.method.to_string()));
        reply
    });
    let request = HttpRequest {
        method: "POST".into(),
        uri: "/api/v1/namespaces/default/configmaps?fieldManager=m".into(),
        headers: vec![
            ("content-type".into(), "application/json".into()),
            ("Authorization".into(), "Bearer guest-token".into()),
        ],
        response: ResponseMode::Whole,
    };
    let run = run_guests(
        Upstream::new(client, "https://fake.invalid"),
        &[("post", http_guest(&request, b"{\"data\":{}}", 1))],
    )
    .await;
    assert_eq!(run.outcome("post"), &ModuleOutcome::Exited(0));
    assert_eq!(
        run.lines_of("post"),
        [
            r#"1:{"kind":"response","status":201,"headers":[["content-type","application/json"],["x-echo","POST"]]}{"kind":"ConfigMap"}"#
        ]
    );
    let seen = seen.lock().expect("log");
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].method, http::Method::POST);
    assert_eq!(
        seen[0].uri,
        "/api/v1/namespaces/default/configmaps?fieldManager=m"
    );
    assert_eq!(seen[0].headers["content-type"], "application/json");
    assert!(
        seen[0].headers.get("authorization").is_none(),
        "the guest's token never leaves"
    );
    assert_eq!(&seen[0].body[..], b"{\"data\":{}}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lines_mode_streams_head_lines_and_end() {
    let (client, _) = fake_client(|req| {
        if req.uri.path() == "/missing" {
            Reply::new(404, vec![Ok(b"{\"reason\":\"NotFound\"}".to_vec())])
        } else {
            Reply::new(200, vec![Ok(b"a\nb".to_vec()), Ok(b"b\n\nccc".to_vec())])
        }
    });
    let lines = |uri: &str| HttpRequest {
        method: "GET".into(),
        uri: uri.into(),
        headers: vec![],
        response: ResponseMode::Lines,
    };
    let run = run_guests(
        Upstream::new(client, "https://fake.invalid"),
        &[
            ("lines", http_guest(&lines("/logs"), b"", 1)),
            ("missing", http_guest(&lines("/missing"), b"", 1)),
        ],
    )
    .await;
    assert_eq!(run.outcome("lines"), &ModuleOutcome::Exited(0));
    assert_eq!(
        run.lines_of("lines"),
        [
            r#"1:{"kind":"head","status":200,"headers":[["content-type","application/json"]]}"#,
            r#"1:{"kind":"line"}a"#,
            r#"1:{"kind":"line"}bb"#,
            r#"1:{"kind":"line"}"#,
            r#"1:{"kind":"line"}ccc"#,
            r#"1:{"kind":"end"}"#,
        ]
    );
    assert_eq!(
        run.lines_of("missing"),
        [
            r#"1:{"kind":"response","status":404,"headers":[["content-type","application/json"]]}{"reason":"NotFound"}"#
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_requests_complete_with_invalid_request() {
    let (client, seen) = fake_client(|_| Reply::ok(b"{}"));
    let bad_method = HttpRequest {
        method: "GE T".into(),
        uri: "/api".into(),
        headers: vec![],
        response: ResponseMode::Whole,
    };
    let run = run_guests(
        Upstream::new(client, "https://fake.invalid"),
        &[("bad-method", http_guest(&bad_method, b"", 1))],
    )
    .await;
    assert_eq!(run.outcome("bad-method"), &ModuleOutcome::Exited(0));
    let lines = run.lines_of("bad-method");
    assert_eq!(lines.len(), 1);
    assert!(
        lines[0].starts_with(r#"1:{"kind":"error","code":"invalid_request","message":"#),
        "{lines:?}"
    );
    assert!(seen.lock().expect("log").is_empty(), "nothing was sent");
}

/// Many events in chunks that cut lines anywhere: each arrives whole, in order, none lost,
/// blank lines skipped, then `end`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_events_arrive_whole_in_order_then_end() {
    const EVENTS: usize = 600;
    let mut stream = Vec::new();
    for n in 0..EVENTS {
        stream.extend_from_slice(
            format!("{{\"type\":\"ADDED\",\"object\":{{\"n\":{n}}}}}\n").as_bytes(),
        );
        if n % 50 == 0 {
            stream.extend_from_slice(b"\n");
        }
    }
    stream.extend_from_slice(b"{\"type\":\"ERROR\",\"object\":{\"code\":410}}");
    let chunks: Vec<Result<Vec<u8>, String>> = stream.chunks(7).map(|c| Ok(c.to_vec())).collect();
    let (client, seen) = fake_client(move |_| Reply::new(200, chunks.clone()));
    let request = watch_request("/api/v1/namespaces/default/configmaps");
    let run = run_guests(
        Upstream::new(client, "https://fake.invalid"),
        &[("watcher", watch_guest(&request))],
    )
    .await;

    assert_eq!(run.outcome("watcher"), &ModuleOutcome::Exited(0));
    let lines = run.lines_of("watcher");
    assert_eq!(lines.len(), 1 + EVENTS + 2);
    assert_eq!(lines[0], WATCH_HEAD, "the watch is established first");
    let lines = &lines[1..];
    for (n, line) in lines.iter().take(EVENTS).enumerate() {
        assert_eq!(
            line,
            &format!(r#"1:{{"kind":"watch_event"}}{{"type":"ADDED","object":{{"n":{n}}}}}"#)
        );
    }
    assert_eq!(
        lines[EVENTS],
        r#"1:{"kind":"watch_event"}{"type":"ERROR","object":{"code":410}}"#
    );
    assert_eq!(lines[EVENTS + 1], r#"1:{"kind":"end"}"#);

    let native = kube_core::Request::new("/api/v1/namespaces/default/configmaps")
        .watch(
            &kube_core::params::WatchParams::default().labels("app=ring"),
            "41",
        )
        .expect("kube builds it");
    assert_eq!(
        seen.lock().expect("log")[0].uri,
        *native.uri(),
        "the server sees what kube sends"
    );
}

/// Completions already queued for an op that the guest then cancels are discarded: here the
/// watch's second event and its `end` are queued while the guest handles the first event and
/// cancels the watch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_discards_completions_already_queued() {
    let (client, _) =
        fake_client(|_| Reply::ok(b"{\"type\":\"ADDED\"}\n{\"type\":\"MODIFIED\"}\n"));
    let frame = encode_frame(&watch_request("/api/v1/pods"), b"");
    let complete = r#"
        (local $i i32)
        (call $record (local.get $op) (local.get $ptr) (local.get $len))
        (if (i64.eq (local.get $op) (i64.const 1))
          (then
            ;; Give the watch task time to queue everything it has.
            (loop $spin
              (local.set $i (i32.add (local.get $i) (i32.const 1)))
              (br_if $spin (i32.lt_u (local.get $i) (i32.const 5000000))))
            (call $println_num (i64.extend_i32_u (call $cancel (i64.const 1))))
            (drop (call $delay (i64.const 30)))))
    "#;
    let guest = Guest::new(&format!("(drop {})", call_with_frame("watch", &frame)))
        .frame(&frame)
        .complete(complete)
        .wasm();
    let run = run_guests(
        Upstream::new(client, "https://fake.invalid"),
        &[("canceller", guest)],
    )
    .await;
    assert_eq!(run.outcome("canceller"), &ModuleOutcome::Exited(0));
    assert_eq!(
        run.lines_of("canceller"),
        [WATCH_HEAD, "1", r#"2:{"kind":"elapsed"}"#],
        "the ADDED, MODIFIED and end queued behind the head were discarded"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_refusals_and_broken_streams() {
    let (client, _) = fake_client(|req| {
        if req.uri.path().ends_with("/forbidden") {
            Reply::new(
                403,
                vec![Ok(b"{\"kind\":\"Status\",\"code\":403}".to_vec())],
            )
        } else {
            Reply::new(
                200,
                vec![
                    Ok(b"{\"type\":\"ADDED\"}\n{\"type\":".to_vec()),
                    Err("connection reset".into()),
                ],
            )
        }
    });
    let upstream = Upstream::new(client, "https://fake.invalid");
    let run = run_guests(
        upstream,
        &[
            ("refused", watch_guest(&watch_request("/api/v1/forbidden"))),
            ("broken", watch_guest(&watch_request("/api/v1/pods"))),
        ],
    )
    .await;
    assert_eq!(
        run.lines_of("refused"),
        [
            r#"1:{"kind":"response","status":403,"headers":[["content-type","application/json"]]}{"kind":"Status","code":403}"#
        ]
    );
    let broken = run.lines_of("broken");
    assert_eq!(broken.len(), 3, "{broken:?}");
    assert_eq!(broken[0], WATCH_HEAD);
    let broken = &broken[1..];
    assert_eq!(broken[0], r#"1:{"kind":"watch_event"}{"type":"ADDED"}"#);
    assert!(
        broken[1].starts_with(r#"1:{"kind":"error","code":"stream","message":"#),
        "{broken:?}"
    );
    assert!(broken[1].contains("connection reset"), "{broken:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn too_long_watch_events_are_too_large_errors() {
    let (client, _) = fake_client(|_| Reply::new(200, vec![Ok(vec![b'x'; 4096])]));
    let (mut settings, buffer) = common::test_settings();
    settings.limits.max_line_bytes = 1024;
    let run = common::run_guests_with(
        Upstream::new(client, "https://fake.invalid"),
        settings,
        buffer,
        std::time::Duration::from_secs(5),
        &[("big", watch_guest(&watch_request("/api/v1/pods")))],
        |_| {},
    )
    .await;
    let lines = run.lines_of("big");
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(
        lines[0].starts_with(r#"1:{"kind":"head","status":200"#),
        "{lines:?}"
    );
    assert!(
        lines[1].starts_with(r#"1:{"kind":"error","code":"too_large""#),
        "{lines:?}"
    );
}

/// A real kube client against an address where nothing listens: `connect` errors, for
/// requests and watches alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_api_server_gives_connect_errors() {
    let config = kube::Config::new("https://127.0.0.1:1".parse().expect("valid url"));
    let upstream = Upstream::from_config(config).expect("client");
    let namespaces = get("/api/v1/namespaces");
    let run = run_guests(
        upstream,
        &[
            ("get", http_guest(&namespaces, b"", 1)),
            ("watch", watch_guest(&watch_request("/api/v1/pods"))),
        ],
    )
    .await;
    for name in ["get", "watch"] {
        assert_eq!(run.outcome(name), &ModuleOutcome::Exited(0));
        let lines = run.lines_of(name);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0].starts_with(r#"1:{"kind":"error","code":"connect","message":"#),
            "{lines:?}"
        );
    }
}

/// A request is sent with the URI the host judged, as the API server reads it (segments
/// decoded, then encoded only where they must be); one the host cannot read with certainty is
/// a 403 and never leaves the host, even for a module without permissions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_go_out_as_judged_and_uncertain_ones_not_at_all() {
    let (client, seen) = fake_client(|_| Reply::new(200, vec![Ok(b"{}".to_vec())]));
    let run = run_guests(
        Upstream::new(client, "https://fake.invalid"),
        &[
            (
                "encoded",
                http_guest(
                    &get("/api%2Fv1/namespaces/default/%63onfigmaps?labelSelector=a%3Db"),
                    b"",
                    1,
                ),
            ),
            (
                "dots",
                http_guest(
                    &get("/api/v1/namespaces/default/configmaps/../secrets"),
                    b"",
                    1,
                ),
            ),
        ],
    )
    .await;
    assert_eq!(run.outcome("encoded"), &ModuleOutcome::Exited(0));
    assert_eq!(run.outcome("dots"), &ModuleOutcome::Exited(0));
    let denied = run.lines_of("dots").join("\n");
    assert!(
        denied.contains(r#""status":403"#) && denied.contains("cannot classify"),
        "{denied}"
    );
    let seen = seen.lock().expect("log");
    let uris: Vec<String> = seen.iter().map(|s| s.uri.to_string()).collect();
    assert_eq!(
        uris,
        ["/api/v1/namespaces/default/configmaps?labelSelector=a%3Db"],
        "only the certain request went out, as judged"
    );
}
