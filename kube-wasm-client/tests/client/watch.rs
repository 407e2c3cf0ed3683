//! Watches: the envelope `Api::watch` submits, event decoding, and how the stream ends.

use super::support::{setup, status_body};
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube_wasm_abi::{Completion, ErrorCode, HttpRequest, OpError, ResponseMode, WatchRequest};
use kube_wasm_client::api::{Api, WatchEvent, WatchParams};
use kube_wasm_client::{Error, Result};
use kube_wasm_guest::fake::{FakeHost, Submitted};
use serde_json::json;
use std::cell::RefCell;
use std::rc::Rc;

/// One line per stream item, to compare sequences.
fn describe<K: kube_wasm_client::Resource>(item: &Result<WatchEvent<K>>) -> String {
    use kube_wasm_client::ResourceExt;
    match item {
        Ok(WatchEvent::Added(o)) => format!("ADDED {}", o.name_any()),
        Ok(WatchEvent::Modified(o)) => format!("MODIFIED {}", o.name_any()),
        Ok(WatchEvent::Deleted(o)) => format!("DELETED {}", o.name_any()),
        Ok(WatchEvent::Bookmark(b)) => format!("BOOKMARK {}", b.metadata.resource_version),
        Ok(WatchEvent::Error(s)) => format!("ERROR {} {}", s.code, s.reason),
        Err(Error::Api(s)) => format!("Err Api {} {}", s.code, s.reason),
        Err(Error::ReadEvents(e)) => format!("Err ReadEvents {}", e.kind()),
        Err(Error::SerdeError(_)) => "Err SerdeError".to_string(),
        Err(Error::LinesCodecMaxLineLengthExceeded) => "Err LinesCodecMaxLineLengthExceeded".into(),
        Err(Error::Service(_)) => "Err Service".to_string(),
        Err(e) => format!("Err other {e}"),
    }
}

fn event(kind: &str, name: &str, rv: &str) -> Vec<u8> {
    json!({
        "type": kind,
        "object": {"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": name, "namespace": "default", "resourceVersion": rv}},
    })
    .to_string()
    .into_bytes()
}

fn bookmark(rv: &str) -> Vec<u8> {
    json!({"type": "BOOKMARK", "object": {"kind": "ConfigMap", "apiVersion": "v1",
           "metadata": {"resourceVersion": rv,
                        "annotations": {"k8s.io/initial-events-end": "true"}}}})
    .to_string()
    .into_bytes()
}

fn gone() -> Vec<u8> {
    json!({"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1", "metadata": {},
           "status": "Failure", "message": "too old resource version: 1 (5)",
           "reason": "Expired", "code": 410}})
    .to_string()
    .into_bytes()
}

/// The host's answer establishing a watch: its `head`.
fn established() -> Completion {
    Completion::Head {
        status: 200,
        headers: vec![],
    }
}

/// Starts `api.watch(wp, version)` in a task that logs every item as it arrives, and
/// establishes the watch as the host does; returns the log, the task and the op the watch
/// submitted.
#[allow(clippy::type_complexity)]
fn start_watch(
    host: &FakeHost,
    api: Api<ConfigMap>,
    wp: WatchParams,
    version: &'static str,
) -> (
    Rc<RefCell<Vec<String>>>,
    kube_wasm_guest::fake::TestTask<Result<()>>,
    u64,
    WatchRequest,
) {
    let log = Rc::new(RefCell::new(Vec::new()));
    let seen = log.clone();
    let task = host.spawn(async move {
        let stream = api.watch(&wp, version).await?;
        let mut stream = std::pin::pin!(stream);
        while let Some(item) = stream.next().await {
            seen.borrow_mut().push(describe(&item));
        }
        Ok(())
    });
    host.run_until_stalled();
    let mut submitted = host.take_submitted();
    assert_eq!(submitted.len(), 1, "{submitted:?}");
    let Submitted::Watch { id, request } = submitted.remove(0) else {
        panic!("Api::watch must submit a watch op");
    };
    host.complete(id, &established(), b"");
    (log, task, id, request)
}

#[test]
fn watch_submits_a_watch_envelope() {
    let (host, client) = setup();
    let api: Api<ConfigMap> = Api::namespaced(client, "team");
    let wp = WatchParams::default()
        .labels("app=x")
        .fields("metadata.name=a")
        .timeout(120);
    let (_, _, _, request) = start_watch(&host, api, wp, "1234");
    assert_eq!(
        request,
        WatchRequest {
            path: "/api/v1/namespaces/team/configmaps".into(),
            label_selector: Some("app=x".into()),
            field_selector: Some("metadata.name=a".into()),
            timeout_seconds: Some(120),
            bookmarks: true,
            send_initial_events: false,
            resource_version: "1234".into(),
            metadata_only: false,
        }
    );
}

#[test]
fn streaming_list_params_and_metadata_watches() {
    let (host, client) = setup();
    let api: Api<ConfigMap> = Api::all(client);
    let wp = WatchParams::streaming_lists();
    let mut task = host.spawn(async move {
        let full = api.watch(&wp, "").await.map(|_| ());
        let meta = api
            .watch_metadata(&WatchParams::default(), "0")
            .await
            .map(|_| ());
        (full, meta)
    });
    host.run_until_stalled();
    let mut requests = Vec::new();
    // Each watch resolves once the host establishes it; the second starts after the first.
    for _ in 0..2 {
        match &host.take_submitted()[..] {
            [Submitted::Watch { id, request }] => {
                requests.push(request.clone());
                host.complete(*id, &established(), b"");
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert!(matches!(task.output(), Some((Ok(()), Ok(())))));
    assert_eq!(requests.len(), 2);
    assert!(requests[0].send_initial_events && requests[0].bookmarks);
    assert_eq!(
        requests[0].timeout_seconds, None,
        "the host applies kube's 290 s"
    );
    assert!(!requests[0].metadata_only);
    assert!(requests[1].metadata_only);
    assert_eq!(requests[1].path, "/api/v1/configmaps");
    // Both streams were dropped at the end of the task: their watches are cancelled.
    host.run_until_stalled();
    assert_eq!(host.cancelled().len(), 2);
}

#[test]
fn invalid_watch_params_fail_before_submitting() {
    let (host, client) = setup();
    let api: Api<ConfigMap> = Api::all(client);
    let wp = WatchParams {
        send_initial_events: true,
        bookmarks: false,
        ..WatchParams::default()
    };
    let mut task = host.spawn(async move { api.watch(&wp, "0").await.map(|_| ()) });
    host.run_until_stalled();
    assert!(host.take_submitted().is_empty());
    assert!(matches!(task.output(), Some(Err(Error::BuildRequest(_)))));
}

#[test]
fn events_decode_in_order_and_the_stream_ends_on_end() {
    let (host, client) = setup();
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let (log, mut task, id, _) = start_watch(&host, api, WatchParams::default(), "1");

    host.complete(id, &Completion::WatchEvent {}, &event("ADDED", "a", "2"));
    assert_eq!(
        *log.borrow(),
        ["ADDED a"],
        "each event is yielded as it arrives"
    );
    for (kind, rv) in [("MODIFIED", "3"), ("DELETED", "4")] {
        host.complete(id, &Completion::WatchEvent {}, &event(kind, "a", rv));
    }
    host.complete(id, &Completion::WatchEvent {}, &bookmark("5"));
    host.complete(id, &Completion::WatchEvent {}, &gone());
    assert!(
        !task.is_finished(),
        "an ERROR event does not end the stream"
    );
    host.complete(id, &Completion::End {}, b"");

    assert_eq!(
        *log.borrow(),
        [
            "ADDED a",
            "MODIFIED a",
            "DELETED a",
            "BOOKMARK 5",
            "ERROR 410 Expired",
        ]
    );
    assert!(matches!(task.output(), Some(Ok(()))));
    assert!(
        host.cancelled().is_empty(),
        "a finished watch is not cancelled"
    );
}

#[test]
fn a_stream_error_yields_read_events_and_ends() {
    let (host, client) = setup();
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let (log, mut task, id, _) = start_watch(&host, api, WatchParams::default(), "1");
    host.complete(id, &Completion::WatchEvent {}, &event("ADDED", "a", "2"));
    host.complete(
        id,
        &Completion::Error(OpError::new(ErrorCode::Stream, "connection reset")),
        b"",
    );
    assert_eq!(*log.borrow(), ["ADDED a", "Err ReadEvents other error"]);
    assert!(matches!(task.output(), Some(Ok(()))), "the stream ended");
}

#[test]
fn other_host_errors_in_a_watch() {
    for (code, expected) in [
        (ErrorCode::TooLarge, "Err LinesCodecMaxLineLengthExceeded"),
        (ErrorCode::Connect, "Err Service"),
        (ErrorCode::Timeout, "Err Service"),
    ] {
        let (host, client) = setup();
        let api: Api<ConfigMap> = Api::default_namespaced(client);
        let (log, mut task, id, _) = start_watch(&host, api, WatchParams::default(), "1");
        host.complete(id, &Completion::Error(OpError::new(code, "m")), b"");
        assert_eq!(*log.borrow(), [expected], "{code}");
        assert!(task.output().is_some());
    }
}

/// Starts `api.watch(..)` and answers the watch op with `answer` before it is established.
fn watch_start_result(answer: Completion, body: &[u8]) -> Option<Result<()>> {
    let (host, client) = setup();
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let mut task =
        host.spawn(async move { api.watch(&WatchParams::default(), "1").await.map(|_| ()) });
    host.run_until_stalled();
    let id = host.take_submitted()[0].id();
    assert_eq!(task.output().map(|r| r.is_ok()), None, "waits for the host");
    host.complete(id, &answer, body);
    task.output()
}

#[test]
fn a_refused_watch_fails_at_start_with_the_api_error() {
    let result = watch_start_result(
        Completion::Response {
            status: 403,
            headers: vec![],
        },
        status_body(403, "Forbidden", "watch not allowed").as_bytes(),
    );
    assert!(
        matches!(&result, Some(Err(Error::Api(s))) if s.code == 403 && s.is_forbidden()),
        "{result:?}"
    );
}

#[test]
fn an_unreachable_server_fails_the_watch_at_start() {
    let result = watch_start_result(
        Completion::Error(OpError::new(ErrorCode::Connect, "connection refused")),
        b"",
    );
    assert!(matches!(result, Some(Err(Error::Service(_)))), "{result:?}");
}

#[test]
fn undecodable_events_are_errors_and_the_stream_goes_on() {
    let (host, client) = setup();
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let (log, mut task, id, _) = start_watch(&host, api, WatchParams::default(), "1");
    // Not a watch event but a Status: Error::Api, as kube.
    host.complete(
        id,
        &Completion::WatchEvent {},
        status_body(500, "InternalError", "boom").as_bytes(),
    );
    // Not JSON at all: SerdeError.
    host.complete(id, &Completion::WatchEvent {}, b"not json");
    // Empty or truncated: skipped, as kube skips EOF errors.
    host.complete(id, &Completion::WatchEvent {}, b"");
    host.complete(
        id,
        &Completion::WatchEvent {},
        br#"{"type": "ADDED", "object": {"metad"#,
    );
    host.complete(id, &Completion::WatchEvent {}, &event("ADDED", "b", "9"));
    host.complete(id, &Completion::End {}, b"");
    assert_eq!(
        *log.borrow(),
        ["Err Api 500 InternalError", "Err SerdeError", "ADDED b"]
    );
    assert!(task.output().is_some());
}

#[test]
fn dropping_the_stream_cancels_the_watch() {
    let (host, client) = setup();
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let mut task = host.spawn(async move {
        let stream = api.watch(&WatchParams::default(), "0").await?;
        let mut stream = std::pin::pin!(stream);
        let first = stream.next().await.map(|item| describe(&item));
        Ok::<_, Error>(first)
    });
    host.run_until_stalled();
    let id = host.take_submitted()[0].id();
    host.complete(id, &established(), b"");
    host.complete(id, &Completion::WatchEvent {}, &event("ADDED", "a", "2"));
    assert_eq!(
        task.output().map(|r| r.ok().flatten()),
        Some(Some("ADDED a".to_string()))
    );
    assert_eq!(host.cancelled(), [id]);
}

#[test]
fn request_events_reads_a_lines_response() {
    let (host, client) = setup();
    let request = kube_wasm_client::core::Request::new("/api/v1/configmaps")
        .watch(&WatchParams::default(), "0")
        .expect("valid request");
    let mut task = host.spawn(async move {
        let stream = client.request_events::<ConfigMap>(request).await?;
        let items: Vec<Result<WatchEvent<ConfigMap>>> = stream.collect().await;
        Ok::<_, Error>(items.iter().map(describe).collect::<Vec<_>>())
    });
    host.run_until_stalled();
    let mut submitted = host.take_submitted();
    let Submitted::Http {
        id,
        request:
            HttpRequest {
                uri,
                response,
                headers,
                ..
            },
        ..
    } = submitted.remove(0)
    else {
        panic!("request_events sends an HTTP request");
    };
    assert_eq!(response, ResponseMode::Lines);
    assert_eq!(
        uri,
        "/api/v1/configmaps?&watch=true&timeoutSeconds=290&allowWatchBookmarks=true&resourceVersion=0"
    );
    assert!(headers.contains(&("accept-encoding".into(), "identity".into())));
    host.complete(
        id,
        &Completion::Head {
            status: 200,
            headers: vec![],
        },
        b"",
    );
    host.complete(id, &Completion::Line {}, &event("ADDED", "a", "1"));
    host.complete(id, &Completion::Line {}, b"");
    host.complete(id, &Completion::Line {}, &event("MODIFIED", "a", "2"));
    host.complete(id, &Completion::End {}, b"");
    assert_eq!(
        task.output().map(|r| r.expect("stream starts")),
        Some(vec!["ADDED a".to_string(), "MODIFIED a".to_string()])
    );
}

#[test]
fn request_events_fails_on_a_non_2xx_response() {
    let (host, client) = setup();
    let request = kube_wasm_client::core::Request::new("/api/v1/configmaps")
        .watch(&WatchParams::default(), "0")
        .expect("valid request");
    let mut task = host.spawn(async move {
        client
            .request_events::<ConfigMap>(request)
            .await
            .map(|_| ())
    });
    host.run_until_stalled();
    let id = host.take_submitted()[0].id();
    host.complete(
        id,
        &Completion::Response {
            status: 410,
            headers: vec![],
        },
        status_body(410, "Expired", "too old").as_bytes(),
    );
    assert!(matches!(task.output(), Some(Err(Error::Api(s))) if s.code == 410));
}
