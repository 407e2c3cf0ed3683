//! exec / attach / portforward driven against the fake host: the channel protocol the guest
//! speaks over an ABI duplex stream (v4 and v5), message by message.
#![cfg(feature = "ws")]

use k8s_openapi::api::core::v1::Pod;
use kube_wasm_abi::stream::{PROTOCOL_V4, PROTOCOL_V5};
use kube_wasm_abi::{Completion, ErrorCode, OpError, OpId, StreamSend, UpgradeFailure};
use kube_wasm_client::api::{AttachParams, TerminalSize};
use kube_wasm_client::client::UpgradeConnectionError;
use kube_wasm_client::{Api, Client, Error};
use kube_wasm_guest::fake::{FakeHost, Submitted};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn pods() -> Api<Pod> {
    Api::namespaced(Client::for_host("default"), "ns")
}

/// Opens the stream the guest asked for with `protocol`; returns its id and URI.
fn open(host: &FakeHost, protocol: &str) -> (OpId, String) {
    host.run_until_stalled();
    let submitted = host.take_submitted();
    let [Submitted::StreamOpen { id, request }] = &submitted[..] else {
        panic!("expected one stream_open, got {submitted:?}");
    };
    host.complete(
        *id,
        &Completion::Opened {
            protocol: protocol.into(),
        },
        b"",
    );
    (*id, request.uri.clone())
}

/// Accepts every message the guest sends until it waits for the server; returns them.
fn pump(host: &FakeHost, stream: OpId) -> Vec<(StreamSend, Vec<u8>)> {
    let mut sent = Vec::new();
    loop {
        host.run_until_stalled();
        let submitted = host.take_submitted();
        if submitted.is_empty() {
            return sent;
        }
        for op in submitted {
            let Submitted::StreamSend {
                id,
                stream: on,
                message,
                body,
            } = op
            else {
                panic!("unexpected op {op:?}");
            };
            assert_eq!(on, stream);
            sent.push((message, body));
            host.complete(id, &Completion::Sent {}, b"");
        }
    }
}

fn server_says(host: &FakeHost, stream: OpId, message: &[u8]) {
    host.complete(stream, &Completion::Message { text: false }, message);
}

fn binary(body: &[u8]) -> (StreamSend, Vec<u8>) {
    (StreamSend::Binary {}, body.to_vec())
}

/// An exec with stdin, stdout and stderr: what it reads, and the status it gets.
fn exec_session(protocol: &str) -> (Vec<(StreamSend, Vec<u8>)>, String, String, String) {
    let host = FakeHost::install();
    let mut task = host.spawn(async {
        let ap = AttachParams::default().stdin(true).stderr(true);
        let mut process = pods().exec("p", vec!["sh", "-c", "cat"], &ap).await?;
        let mut stdin = process.stdin().expect("stdin");
        let mut stdout = process.stdout().expect("stdout");
        let mut stderr = process.stderr().expect("stderr");
        let status = process.take_status().expect("status");
        stdin.write_all(b"hello").await.expect("write");
        stdin.shutdown().await.expect("shutdown");
        drop(stdin);
        let (mut out, mut err) = (String::new(), String::new());
        stdout.read_to_string(&mut out).await.expect("stdout");
        stderr.read_to_string(&mut err).await.expect("stderr");
        let status = status.await.expect("a status");
        process.join().await.expect("joined");
        Ok::<_, Error>((out, err, status.status.unwrap_or_default()))
    });
    let (stream, uri) = open(&host, protocol);
    assert_eq!(
        uri,
        "/api/v1/namespaces/ns/pods/p/exec?&stdin=true&stdout=true&stderr=true&command=sh&command=-c&command=cat"
    );
    let sent = pump(&host, stream);
    server_says(&host, stream, &[1]);
    server_says(&host, stream, b"\x01hel");
    server_says(&host, stream, b"\x01lo");
    server_says(&host, stream, b"\x02oops");
    let mut sent_after = pump(&host, stream);
    assert!(sent_after.is_empty(), "{sent_after:?}");
    server_says(
        &host,
        stream,
        br#"{"status":"Success","metadata":{}}"#.as_slice(),
    );
    server_says(
        &host,
        stream,
        &[b"\x03".as_slice(), br#"{"status":"Success","metadata":{}}"#].concat(),
    );
    sent_after.extend(pump(&host, stream));
    let (out, err, status) = task.output().expect("finished").expect("ok");
    assert!(
        host.cancelled().contains(&stream) || !host.live().contains(&stream),
        "the connection is released"
    );
    (sent, out, err, status)
}

#[test]
fn exec_v5_relays_stdin_stdout_stderr_and_status_and_closes_stdin_by_channel() {
    let (sent, out, err, status) = exec_session(PROTOCOL_V5);
    assert_eq!(sent, vec![binary(b"\x00hello"), binary(&[255, 0])]);
    assert_eq!(
        (out.as_str(), err.as_str(), status.as_str()),
        ("hello", "oops", "Success")
    );
}

#[test]
fn exec_v4_closes_the_connection_at_the_end_of_stdin() {
    let (sent, out, _, _) = exec_session(PROTOCOL_V4);
    assert_eq!(
        sent,
        vec![
            binary(b"\x00hello"),
            (
                StreamSend::Close {
                    code: Some(1000),
                    reason: String::new()
                },
                vec![]
            )
        ]
    );
    assert_eq!(out, "hello");
}

#[test]
fn attach_with_tty_sends_resize_messages_and_reports_failure_status() {
    let host = FakeHost::install();
    let mut task = host.spawn(async {
        let ap = AttachParams::interactive_tty();
        let mut process = pods().attach("p", &ap).await?;
        let mut resize = process.terminal_size().expect("tty");
        let status = process.take_status().expect("status");
        futures::SinkExt::send(
            &mut resize,
            TerminalSize {
                width: 120,
                height: 40,
            },
        )
        .await
        .expect("resize");
        let status = status.await;
        Ok::<_, Error>(status)
    });
    let (stream, uri) = open(&host, PROTOCOL_V5);
    assert_eq!(
        uri,
        "/api/v1/namespaces/ns/pods/p/attach?&stdin=true&stdout=true&tty=true"
    );
    let sent = pump(&host, stream);
    assert_eq!(sent, vec![binary(b"\x04{\"Width\":120,\"Height\":40}")]);
    let failure = br#"{"metadata":{},"status":"Failure","message":"command terminated with non-zero exit code: exit status 3","reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"3"}]}}"#;
    server_says(&host, stream, &[b"\x03".as_slice(), failure].concat());
    let status = task
        .output()
        .expect("finished")
        .expect("ok")
        .expect("a status");
    assert_eq!(status.reason.as_deref(), Some("NonZeroExitCode"));
    let causes = status.details.and_then(|d| d.causes).expect("causes");
    assert_eq!(causes[0].message.as_deref(), Some("3"));
}

#[test]
fn a_refused_upgrade_is_an_api_error() {
    let host = FakeHost::install();
    let mut task = host.spawn(async {
        pods()
            .exec("gone", vec!["ls"], &AttachParams::default())
            .await
            .map(|_| ())
    });
    host.run_until_stalled();
    let [Submitted::StreamOpen { id, .. }] = host.take_submitted()[..] else {
        panic!("stream_open");
    };
    let status = br#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods \"gone\" not found","reason":"NotFound","code":404}"#;
    host.complete(
        id,
        &Completion::Response {
            status: 404,
            headers: vec![],
        },
        status,
    );
    match task.output().expect("finished") {
        Err(Error::Api(status)) => {
            assert_eq!((status.code, status.reason.as_str()), (404, "NotFound"))
        }
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// What `Client::connect` returns when the host answers its `stream_open` with `completion`.
fn connect_answered(completion: Completion, body: &[u8]) -> Result<(), Error> {
    let host = FakeHost::install();
    let mut task = host.spawn(async {
        let request = http::Request::get("/api/v1/namespaces/ns/pods/p/exec?command=ls")
            .body(Vec::new())
            .expect("request");
        Client::for_host("default")
            .connect(request)
            .await
            .map(|_| ())
    });
    host.run_until_stalled();
    let [Submitted::StreamOpen { id, .. }] = host.take_submitted()[..] else {
        panic!("stream_open");
    };
    host.complete(id, &completion, body);
    task.output().expect("finished")
}

#[test]
fn a_refusal_with_a_text_body_is_a_synthesised_api_error() {
    let refused = Completion::Response {
        status: 403,
        headers: vec![],
    };
    match connect_answered(refused, b"forbidden, go away\n") {
        Err(Error::Api(status)) => {
            assert_eq!(status.code, 403);
            assert_eq!(status.message, "forbidden, go away");
            assert_eq!(status.reason, "Failed to parse error data");
        }
        other => panic!("expected an API error, got {other:?}"),
    }
}

#[test]
fn an_answer_that_neither_refuses_nor_switches_is_a_protocol_switch_error() {
    let ok = Completion::Response {
        status: 200,
        headers: vec![],
    };
    match connect_answered(ok, b"{}") {
        Err(Error::UpgradeConnection(UpgradeConnectionError::ProtocolSwitch(status))) => {
            assert_eq!(status, http::StatusCode::OK)
        }
        other => panic!("expected ProtocolSwitch, got {other:?}"),
    }
}

#[test]
fn upgrade_errors_become_kubes_upgrade_connection_errors() {
    let cases = [
        (
            UpgradeFailure::ProtocolSwitch { status: 302 },
            "failed to upgrade to a WebSocket connection: failed to switch protocol: 302 Found",
        ),
        (
            UpgradeFailure::MissingUpgradeWebSocketHeader,
            "failed to upgrade to a WebSocket connection: upgrade header was not set to websocket",
        ),
        (
            UpgradeFailure::MissingConnectionUpgradeHeader,
            "failed to upgrade to a WebSocket connection: connection header was not set to Upgrade",
        ),
        (
            UpgradeFailure::SecWebSocketAcceptKeyMismatch,
            "failed to upgrade to a WebSocket connection: Sec-WebSocket-Accept key mismatched",
        ),
        (
            UpgradeFailure::SecWebSocketProtocolMismatch,
            "failed to upgrade to a WebSocket connection: Sec-WebSocket-Protocol mismatched",
        ),
    ];
    for (check, display) in cases {
        let error = OpError::upgrade(check, "from the host");
        let err = connect_answered(Completion::Error(error), b"").expect_err("fails");
        assert_eq!(err.to_string(), display, "{check:?}");
        let Error::UpgradeConnection(upgrade) = &err else {
            panic!("{check:?}: expected UpgradeConnection, got {err:?}");
        };
        let matches = match (check, upgrade) {
            (
                UpgradeFailure::ProtocolSwitch { status },
                UpgradeConnectionError::ProtocolSwitch(got),
            ) => got.as_u16() == status,
            (
                UpgradeFailure::MissingUpgradeWebSocketHeader,
                UpgradeConnectionError::MissingUpgradeWebSocketHeader,
            )
            | (
                UpgradeFailure::MissingConnectionUpgradeHeader,
                UpgradeConnectionError::MissingConnectionUpgradeHeader,
            )
            | (
                UpgradeFailure::SecWebSocketAcceptKeyMismatch,
                UpgradeConnectionError::SecWebSocketAcceptKeyMismatch,
            )
            | (
                UpgradeFailure::SecWebSocketProtocolMismatch,
                UpgradeConnectionError::SecWebSocketProtocolMismatch,
            ) => true,
            _ => false,
        };
        assert!(matches, "{check:?} became {upgrade:?}");
    }

    let pending = OpError::upgrade(UpgradeFailure::GetPendingUpgrade, "connection closed");
    let err = connect_answered(Completion::Error(pending), b"").expect_err("fails");
    let Error::UpgradeConnection(UpgradeConnectionError::GetPendingUpgrade(source)) = &err else {
        panic!("expected GetPendingUpgrade, got {err:?}");
    };
    let op = source.downcast_ref::<OpError>().expect("the host's error");
    assert_eq!(
        (op.code, op.message.as_str()),
        (ErrorCode::Upgrade, "connection closed")
    );
    assert_eq!(
        err.to_string(),
        "failed to upgrade to a WebSocket connection: failed to get pending HTTP upgrade: \
         upgrade: connection closed"
    );
}

#[test]
fn unknown_checks_and_other_failures_are_service_errors() {
    for error in [
        OpError::upgrade(UpgradeFailure::Unknown, "a newer check"),
        OpError::new(ErrorCode::Upgrade, "no check named"),
        OpError::upgrade(UpgradeFailure::ProtocolSwitch { status: 7 }, "not a status"),
        OpError::new(ErrorCode::Connect, "refused"),
    ] {
        let expected = error.clone();
        match connect_answered(Completion::Error(error), b"") {
            Err(Error::Service(source)) => {
                assert_eq!(source.downcast_ref::<OpError>(), Some(&expected))
            }
            other => panic!("{expected:?}: expected a service error, got {other:?}"),
        }
    }
}

#[test]
fn portforward_checks_port_prefixes_relays_data_and_errors_then_closes() {
    let host = FakeHost::install();
    let mut task = host.spawn(async {
        let mut pf = pods().portforward("p", &[80, 8081]).await?;
        let mut web = pf.take_stream(80).expect("port 80");
        let error = pf.take_error(8081).expect("error of 8081");
        assert!(pf.take_stream(80).is_none(), "taken once");
        let mut buf = [0u8; 3];
        web.read_exact(&mut buf).await.expect("read");
        web.write_all(b"pong").await.expect("write");
        let error = error.await;
        drop(web);
        pf.join().await.expect("joined");
        Ok::<_, Error>((buf, error))
    });
    let (stream, uri) = open(&host, PROTOCOL_V4);
    assert_eq!(
        uri,
        "/api/v1/namespaces/ns/pods/p/portforward?&ports=80%2C8081"
    );
    for prefix in [[0u8, 80, 0], [1, 80, 0], [2, 0x91, 0x1f], [3, 0x91, 0x1f]] {
        server_says(&host, stream, &prefix);
    }
    server_says(&host, stream, b"\x00pin");
    let sent = pump(&host, stream);
    assert_eq!(sent, vec![binary(b"\x00pong")]);
    server_says(&host, stream, b"\x03an error occurred forwarding 8081");
    let sent = pump(&host, stream);
    assert_eq!(
        sent,
        vec![(
            StreamSend::Close {
                code: Some(1000),
                reason: String::new()
            },
            vec![]
        )],
        "both ports closed: the connection is closed"
    );
    host.complete(
        stream,
        &Completion::Closed {
            code: Some(1000),
            reason: String::new(),
        },
        b"",
    );
    let (data, error) = task.output().expect("finished").expect("ok");
    assert_eq!(&data, b"pin");
    assert_eq!(error.as_deref(), Some("an error occurred forwarding 8081"));
}

#[test]
fn portforward_refuses_a_wrong_port_prefix() {
    let host = FakeHost::install();
    let mut task = host.spawn(async {
        let pf = pods().portforward("p", &[80]).await?;
        Ok::<_, Error>(pf.join().await.map_err(|e| e.to_string()))
    });
    let (stream, _) = open(&host, PROTOCOL_V5);
    // `join` drops the untaken stream: the only port is closed, so the connection is.
    assert_eq!(pump(&host, stream).len(), 1);
    server_says(&host, stream, &[0, 81, 0]);
    assert_eq!(
        task.output().expect("finished").expect("connected"),
        Err("invalid port mapping in initial frame, got 81, expected 80".to_string())
    );
}

#[test]
fn every_read_grants_the_host_one_more_message() {
    let host = FakeHost::install();
    let _task = host.spawn(async {
        let mut process = pods()
            .exec("p", vec!["yes"], &AttachParams::default())
            .await?;
        let mut stdout = process.stdout().expect("stdout");
        let mut sink = Vec::new();
        stdout.read_to_end(&mut sink).await.expect("read");
        Ok::<_, Error>(sink)
    });
    let (stream, _) = open(&host, PROTOCOL_V5);
    for _ in 0..5 {
        server_says(&host, stream, b"\x01y\n");
    }
    assert_eq!(host.granted_credit(stream), 5);
}

#[test]
fn exec_and_attach_ask_for_keepalive_pings_as_kube_sends_portforward_and_connect_do_not() {
    let host = FakeHost::install();
    let keepalive_of = |submitted: Vec<Submitted>| match &submitted[..] {
        [Submitted::StreamOpen { request, .. }] => request.keepalive_secs,
        other => panic!("expected one stream_open, got {other:?}"),
    };
    let _exec = host.spawn(async {
        pods()
            .exec("p", vec!["ls"], &AttachParams::default())
            .await
            .map(|_| ())
    });
    host.run_until_stalled();
    assert_eq!(keepalive_of(host.take_submitted()), 60);
    let _attach = host.spawn(async {
        pods()
            .attach("p", &AttachParams::default())
            .await
            .map(|_| ())
    });
    host.run_until_stalled();
    assert_eq!(keepalive_of(host.take_submitted()), 60);
    let _portforward = host.spawn(async { pods().portforward("p", &[80]).await.map(|_| ()) });
    host.run_until_stalled();
    assert_eq!(keepalive_of(host.take_submitted()), 0);
    let _connect = host.spawn(async {
        let request = http::Request::get("/api/v1/namespaces/ns/pods/p/exec?command=ls")
            .body(Vec::new())
            .expect("request");
        Client::for_host("default")
            .connect(request)
            .await
            .map(|_| ())
    });
    host.run_until_stalled();
    assert_eq!(keepalive_of(host.take_submitted()), 0);
}
