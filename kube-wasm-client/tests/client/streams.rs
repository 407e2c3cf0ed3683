//! Streamed bodies: `Client::request_stream` and `Api::log_stream` read a `lines`-mode
//! response back as the body's bytes, in order, and fail on a non-2xx head as kube does.

use super::support::{Answer, response, run_one, setup, status_body};
use futures::{AsyncBufReadExt, AsyncReadExt, TryStreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube_wasm_abi::{Completion, ErrorCode, OpError, ResponseMode};
use kube_wasm_client::Error;
use kube_wasm_client::api::{Api, LogParams};

/// A 2xx `head`, then one `line` per item, then `end`.
fn lines(items: &[&[u8]]) -> Answer {
    let mut answer = vec![(
        Completion::Head {
            status: 200,
            headers: vec![("content-type".into(), "text/plain".into())],
        },
        Vec::new(),
    )];
    answer.extend(
        items
            .iter()
            .map(|line| (Completion::Line {}, line.to_vec())),
    );
    answer.push((Completion::End {}, Vec::new()));
    answer
}

fn get(uri: &str) -> http::Request<Vec<u8>> {
    http::Request::get(uri)
        .body(Vec::new())
        .expect("valid request")
}

#[test]
fn request_stream_yields_the_body_bytes_in_order() {
    let (host, client) = setup();
    let (out, sent) = run_one(
        &host,
        async move {
            let mut reader = client
                .request_stream(get("/apis/x/v1/things?watch=1"))
                .await?;
            // A small buffer: reads cross line boundaries.
            let mut body = Vec::new();
            let mut chunk = [0u8; 3];
            loop {
                let n = reader.read(&mut chunk).await.map_err(Error::ReadEvents)?;
                if n == 0 {
                    break;
                }
                body.extend_from_slice(&chunk[..n]);
            }
            Ok::<_, Error>(body)
        },
        lines(&[b"first line", b"", b"{\"json\": true}", b"last"]),
    );
    assert_eq!(sent.request.method, "GET");
    assert_eq!(sent.request.uri, "/apis/x/v1/things?watch=1");
    assert_eq!(sent.request.response, ResponseMode::Lines);
    assert_eq!(sent.header("accept-encoding"), None, "kube adds nothing");
    assert_eq!(
        out.expect("streams"),
        b"first line\n\n{\"json\": true}\nlast\n".to_vec()
    );
}

#[test]
fn request_stream_of_an_empty_body_is_empty() {
    let (host, client) = setup();
    let (out, _) = run_one(
        &host,
        async move {
            let mut reader = client.request_stream(get("/x")).await?;
            let mut body = Vec::new();
            reader
                .read_to_end(&mut body)
                .await
                .map_err(Error::ReadEvents)?;
            Ok::<_, Error>(body)
        },
        lines(&[]),
    );
    assert_eq!(out.expect("streams"), b"");
}

#[test]
fn request_stream_fails_on_a_non_2xx_response() {
    let (host, client) = setup();
    let (out, _) = run_one(
        &host,
        async move { client.request_stream(get("/x")).await.map(|_| ()) },
        response(404, status_body(404, "NotFound", "nope")),
    );
    assert!(matches!(out, Err(Error::Api(s)) if s.is_not_found() && s.code == 404));

    let (host, client) = setup();
    let (out, _) = run_one(
        &host,
        async move { client.request_stream(get("/x")).await.map(|_| ()) },
        response(500, "boom\n"),
    );
    assert!(matches!(out, Err(Error::Api(s)) if s.code == 500 && s.message == "boom"));
}

#[test]
fn a_body_that_breaks_off_is_an_io_error_after_the_lines_read() {
    let (host, client) = setup();
    let mut answer = lines(&[b"one"]);
    answer.pop();
    answer.push((
        Completion::Error(OpError::new(ErrorCode::Stream, "reset")),
        Vec::new(),
    ));
    let (out, _) = run_one(
        &host,
        async move {
            let reader = client.request_stream(get("/x")).await?;
            let mut lines = reader.lines();
            let first = lines.try_next().await;
            let second = lines.try_next().await;
            Ok::<_, Error>((first.ok().flatten(), second))
        },
        answer,
    );
    let (first, second) = out.expect("the stream starts");
    assert_eq!(first.as_deref(), Some("one"));
    let err = second.expect_err("the break is an error");
    assert_eq!(err.kind(), std::io::ErrorKind::Other);
    let code = err
        .get_ref()
        .and_then(|e| e.downcast_ref::<OpError>())
        .map(|e| e.code);
    assert_eq!(code, Some(ErrorCode::Stream));
}

#[test]
fn log_stream_reads_lines_as_kube() {
    let (host, client) = setup();
    let pods: Api<Pod> = Api::namespaced(client, "ns");
    let lp = LogParams {
        container: Some("main".into()),
        follow: true,
        ..LogParams::default()
    };
    let (out, sent) = run_one(
        &host,
        async move {
            let mut logs = pods.log_stream("p", &lp).await?.lines();
            let mut read = Vec::new();
            while let Some(line) = logs.try_next().await.map_err(Error::ReadEvents)? {
                read.push(line);
            }
            Ok::<_, Error>(read)
        },
        lines(&[b"2024-01-01 started", b"", b"ready"]),
    );
    assert_eq!(
        sent.request.uri,
        "/api/v1/namespaces/ns/pods/p/log?&container=main&follow=true"
    );
    assert_eq!(sent.request.response, ResponseMode::Lines);
    assert_eq!(out.expect("streams"), ["2024-01-01 started", "", "ready"]);
}

#[test]
fn log_stream_fails_on_a_missing_pod_and_dropping_it_cancels() {
    let (host, client) = setup();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "ns");
    let (out, _) = run_one(
        &host,
        async move {
            pods.log_stream("gone", &LogParams::default())
                .await
                .map(|_| ())
        },
        response(404, status_body(404, "NotFound", "pods \"gone\" not found")),
    );
    assert!(matches!(out, Err(Error::Api(s)) if s.is_not_found()));

    // The reader is dropped after the head and one line: the host's op is cancelled.
    let pods: Api<Pod> = Api::namespaced(client, "ns");
    let mut task = host.spawn(async move {
        let mut reader = pods.log_stream("p", &LogParams::default()).await?;
        let mut line = String::new();
        reader
            .read_line(&mut line)
            .await
            .map_err(Error::ReadEvents)?;
        Ok::<_, Error>(line)
    });
    host.run_until_stalled();
    let id = host.take_submitted()[0].id();
    let mut answer = lines(&[b"one"]);
    answer.pop();
    for (completion, body) in answer {
        host.complete(id, &completion, &body);
    }
    host.run_until_stalled();
    assert_eq!(
        task.output().map(|r| r.expect("reads")),
        Some("one\n".to_string())
    );
    assert_eq!(host.cancelled(), [id]);
}
