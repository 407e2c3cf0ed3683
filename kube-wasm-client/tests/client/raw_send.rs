//! `Client::send` and `client::Body`, as kube 5.0's: the request goes out as it is, every
//! response comes back (a 404 is a response, not an error), and bodies behave as kube's.

use super::support::{Answer, host_error, run_one, setup, status_body};
use bytes::Bytes;
use http_body::Body as _;
use kube_wasm_abi::{Completion, ErrorCode, OpError};
use kube_wasm_client::Error;
use kube_wasm_client::client::{Body, DynBody};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Polls `body` to its end (it is in memory, so it never waits); returns its data frames.
fn frames(mut body: Body) -> Vec<Bytes> {
    let waker = futures::task::noop_waker();
    let mut cx = Context::from_waker(&waker);
    let mut frames = Vec::new();
    loop {
        match Pin::new(&mut body).poll_frame(&mut cx) {
            Poll::Ready(Some(Ok(frame))) => {
                frames.push(frame.into_data().expect("a data frame"));
            }
            Poll::Ready(None) => return frames,
            Poll::Ready(Some(Err(e))) => panic!("a body in memory does not fail: {e}"),
            Poll::Pending => panic!("a body in memory does not wait"),
        }
    }
}

/// The output of `future`, which must be ready at once (bodies are in memory).
fn now<F: Future>(future: F) -> F::Output {
    let waker = futures::task::noop_waker();
    let mut cx = Context::from_waker(&waker);
    match std::pin::pin!(future).poll(&mut cx) {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("a body in memory does not wait"),
    }
}

fn answer(status: u16, headers: &[(&str, &str)], body: &[u8]) -> Answer {
    vec![(
        Completion::Response {
            status,
            headers: headers
                .iter()
                .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
                .collect(),
        },
        body.to_vec(),
    )]
}

fn send(
    request: http::Request<Body>,
    answer: Answer,
) -> (Result<http::Response<Body>, Error>, super::support::Sent) {
    let (host, client) = setup();
    run_one(&host, async move { client.send(request).await }, answer)
}

#[test]
fn send_passes_method_path_headers_and_body_and_returns_the_whole_response() {
    let request =
        http::Request::post("https://ignored.example/api/v1/namespaces/n/configmaps?dryRun=All")
            .header("content-type", "application/json")
            .header("x-trace", "1")
            .body(Body::from(br#"{"kind":"ConfigMap"}"#.to_vec()))
            .expect("request");
    let (response, sent) = send(
        request,
        answer(
            201,
            &[
                ("content-type", "application/json"),
                ("warning", "299 - \"one\""),
                ("warning", "299 - \"two\""),
            ],
            br#"{"kind":"ConfigMap","metadata":{"name":"a"}}"#,
        ),
    );
    assert_eq!(sent.request.method, "POST");
    assert_eq!(
        sent.request.uri,
        "/api/v1/namespaces/n/configmaps?dryRun=All"
    );
    assert_eq!(sent.header("content-type"), Some("application/json"));
    assert_eq!(sent.header("x-trace"), Some("1"));
    assert_eq!(sent.body, br#"{"kind":"ConfigMap"}"#);

    let response = response.expect("a response");
    assert_eq!(response.status(), http::StatusCode::CREATED);
    assert_eq!(response.version(), http::Version::HTTP_11);
    assert_eq!(response.headers()["content-type"], "application/json");
    let warnings: Vec<_> = response.headers().get_all("warning").iter().collect();
    assert_eq!(warnings, ["299 - \"one\"", "299 - \"two\""]);
    let body = response.into_body();
    assert_eq!(body.size_hint().exact(), Some(44));
    assert_eq!(
        frames(body),
        [Bytes::from_static(
            br#"{"kind":"ConfigMap","metadata":{"name":"a"}}"#
        )]
    );
}

#[test]
fn error_statuses_are_responses_not_api_errors() {
    for status in [404, 409, 500, 503] {
        let body = status_body(status, "Whatever", "the server says no");
        let request = http::Request::get("/api/v1/namespaces/n/configmaps/missing")
            .body(Body::empty())
            .expect("request");
        let (response, sent) = send(request, answer(status, &[], body.as_bytes()));
        assert!(sent.body.is_empty());
        let response = response.unwrap_or_else(|e| panic!("{status} is a response: {e:?}"));
        assert_eq!(response.status().as_u16(), status);
        assert!(response.headers().is_empty());
        let bytes = now(response.into_body().collect_bytes()).expect("collects");
        assert_eq!(bytes, body.as_bytes());
    }
}

#[test]
fn host_failures_are_errors_as_for_other_requests() {
    for (code, service) in [
        (ErrorCode::Connect, true),
        (ErrorCode::Timeout, true),
        (ErrorCode::Stream, true),
        (ErrorCode::Internal, true),
        (ErrorCode::TooLarge, false),
        (ErrorCode::InvalidRequest, false),
    ] {
        let request = http::Request::get("/version")
            .body(Body::empty())
            .expect("request");
        let (result, _) = send(request, host_error(code));
        let err = result.expect_err("a host failure");
        match err {
            Error::Service(source) => {
                assert!(service, "{code}");
                assert_eq!(source.downcast_ref::<OpError>().map(|e| e.code), Some(code));
            }
            Error::LinesCodecMaxLineLengthExceeded => assert_eq!(code, ErrorCode::TooLarge),
            Error::BuildRequest(_) => assert_eq!(code, ErrorCode::InvalidRequest),
            other => panic!("{code}: unexpected {other:?}"),
        }
    }
}

#[test]
fn a_malformed_response_header_is_a_host_failure() {
    let request = http::Request::get("/version")
        .body(Body::empty())
        .expect("request");
    let (result, _) = send(request, answer(200, &[("bad name", "x")], b"{}"));
    let Err(Error::Service(source)) = result else {
        panic!("expected a service error, got {result:?}");
    };
    let op = source.downcast_ref::<OpError>().expect("the host's error");
    assert_eq!(op.code, ErrorCode::Internal);
    assert!(op.message.contains("bad name"), "{}", op.message);
}

#[test]
fn a_header_value_that_is_not_text_is_build_request() {
    let (host, client) = setup();
    let request = http::Request::get("/version")
        .header(
            "x-bin",
            http::HeaderValue::from_bytes(b"\xff").expect("opaque value"),
        )
        .body(Body::empty())
        .expect("request");
    let mut task = host.spawn(async move { client.send(request).await });
    host.run_until_stalled();
    assert!(host.take_submitted().is_empty(), "nothing is sent");
    assert!(matches!(task.output(), Some(Err(Error::BuildRequest(_)))));
}

#[test]
fn bodies_built_by_the_caller_are_cloneable_and_read_once() {
    let empty = Body::empty();
    assert!(empty.is_end_stream());
    assert_eq!(empty.size_hint().exact(), Some(0));
    assert_eq!(format!("{empty:?}"), r#"Body { kind: "Once" }"#);
    assert!(frames(empty.try_clone().expect("cloneable")).is_empty());
    assert_eq!(now(empty.collect_bytes()).expect("collects"), Bytes::new());

    // Empty buffers make empty bodies, as in kube.
    assert!(Body::from(Vec::new()).is_end_stream());
    assert!(Body::from(Bytes::new()).is_end_stream());

    let body = Body::from(Bytes::from_static(b"hello"));
    assert!(!body.is_end_stream());
    assert_eq!(body.size_hint().exact(), Some(5));
    let copy = body.try_clone().expect("cloneable");
    assert_eq!(frames(body), [Bytes::from_static(b"hello")]);
    assert_eq!(
        now(copy.collect_bytes()).expect("collects"),
        Bytes::from_static(b"hello")
    );

    // Reading takes the bytes: a clone made afterwards is empty.
    let mut body = Body::from(b"x".to_vec());
    let waker = futures::task::noop_waker();
    let mut cx = Context::from_waker(&waker);
    assert!(matches!(
        Pin::new(&mut body).poll_frame(&mut cx),
        Poll::Ready(Some(Ok(_)))
    ));
    assert!(body.is_end_stream());
    assert!(frames(body.try_clone().expect("cloneable")).is_empty());
}

#[test]
fn response_bodies_are_not_cloneable_as_in_kube() {
    let request = http::Request::get("/version")
        .body(Body::empty())
        .expect("request");
    let (response, _) = send(request, answer(200, &[], b"{}"));
    let body = response.expect("a response").into_body();
    assert!(body.try_clone().is_none());
    assert_eq!(format!("{body:?}"), r#"Body { kind: "Wrap" }"#);
    let request = http::Request::get("/version")
        .body(Body::empty())
        .expect("request");
    let (response, _) = send(request, answer(204, &[], b""));
    let body = response.expect("a response").into_body();
    assert!(body.is_end_stream());
    assert!(frames(body).is_empty());
}

#[test]
fn a_body_boxes_as_a_dyn_body() {
    struct Boxed(Body);
    impl http_body::Body for Boxed {
        type Data = Bytes;
        type Error = kube_wasm_client::error::BoxError;
        fn poll_frame(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
        ) -> Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
            Pin::new(&mut self.0).poll_frame(cx).map_err(Into::into)
        }
    }
    let mut dynamic: Box<DynBody> = Box::new(Boxed(Body::from(b"abc".to_vec())));
    let waker = futures::task::noop_waker();
    let mut cx = Context::from_waker(&waker);
    let Poll::Ready(Some(Ok(frame))) = Pin::new(&mut *dynamic).poll_frame(&mut cx) else {
        panic!("one frame");
    };
    assert_eq!(frame.into_data().ok(), Some(Bytes::from_static(b"abc")));
}
