//! `stream_open` when the websocket upgrade fails, through a real `kube::Client` (kube 5.0's
//! `Client::connect`) over a fake transport: every way kube's handshake can fail reaches the
//! guest as SPEC.md's "A failed upgrade" says — an error status as a `response` with the
//! `Status`, every other failed check as an `upgrade` error naming it.

mod common;

use common::{Guest, Reply, call_with_frame, fake_client, run_guests};
use host_shim::{ModuleOutcome, Upstream};
use kube_wasm_abi::{StreamOpen, encode_frame};
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;

/// A guest that opens one stream to `/api/v1/namespaces/ns/pods/{pod}/exec` and records its
/// first (final) completion.
fn open_guest(pod: &str) -> Vec<u8> {
    let open = StreamOpen {
        method: "GET".into(),
        uri: format!("/api/v1/namespaces/ns/pods/{pod}/exec?command=ls&stdout=true"),
        headers: vec![],
        credit: 4,
        keepalive_secs: 0,
    };
    let frame = encode_frame(&open, b"");
    Guest::new(&format!(
        "(drop {})",
        call_with_frame("stream_open", &frame)
    ))
    .imports(
        r#"(import "kube_wasm_v1" "stream_open" (func $stream_open (param i32 i32) (result i64)))"#,
    )
    .version(Some("(i32.const 0x10002)"))
    .frame(&frame)
    .wasm()
}

/// A `101 Switching Protocols` answer to `key` with these headers besides the status.
fn switching(headers: &[(&str, &str)]) -> Reply {
    let mut reply = Reply::new(101, vec![]);
    reply.headers = headers
        .iter()
        .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
        .collect();
    reply
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_upgrades_reach_the_guest_as_kube_reports_them() {
    let (client, _) = fake_client(|req| {
        let pod = req.uri.path().split('/').nth(6).unwrap_or_default();
        let accept = req
            .headers
            .get("sec-websocket-key")
            .map(|key| derive_accept_key(key.as_bytes()))
            .unwrap_or_default();
        let upgrade = [("upgrade", "websocket"), ("connection", "Upgrade")];
        match pod {
            "forbidden" => Reply::new(
                403,
                vec![Ok(
                    br#"{"kind":"Status","status":"Failure","reason":"Forbidden","code":403}"#
                        .to_vec(),
                )],
            ),
            "text" => Reply::new(404, vec![Ok(b"404 page not found\n".to_vec())]),
            "codeless" => Reply::new(409, vec![Ok(br#"{"message":"no code"}"#.to_vec())]),
            "ok" => Reply::ok(b"{}"),
            "no-upgrade" => switching(&[("connection", "Upgrade")]),
            "no-connection" => switching(&[("upgrade", "websocket")]),
            "bad-accept" => switching(&[
                upgrade[0],
                upgrade[1],
                ("sec-websocket-accept", "bm90IHRoZSBrZXk="),
                ("sec-websocket-protocol", "v5.channel.k8s.io"),
            ]),
            "bad-protocol" => switching(&[
                upgrade[0],
                upgrade[1],
                ("sec-websocket-accept", accept.as_str()),
                ("sec-websocket-protocol", "v3.channel.k8s.io"),
            ]),
            // Every check passes, but the fake transport has no connection to hand over.
            _ => switching(&[
                upgrade[0],
                upgrade[1],
                ("sec-websocket-accept", accept.as_str()),
                ("sec-websocket-protocol", "v4.channel.k8s.io"),
            ]),
        }
    });
    let pods = [
        "forbidden",
        "text",
        "codeless",
        "ok",
        "no-upgrade",
        "no-connection",
        "bad-accept",
        "bad-protocol",
        "no-transport",
    ];
    let guests: Vec<_> = pods.iter().map(|pod| (*pod, open_guest(pod))).collect();
    let run = run_guests(Upstream::new(client, "https://fake.invalid"), &guests).await;
    for pod in pods {
        assert_eq!(run.outcome(pod), &ModuleOutcome::Exited(0), "{pod}");
    }
    let line = |pod: &str| -> String {
        let lines = run.lines_of(pod);
        assert_eq!(lines.len(), 1, "{pod}: {lines:?}");
        lines[0].clone()
    };
    let response = |status: u16, body: &str| {
        format!(
            r#"1:{{"kind":"response","status":{status},"headers":[["content-type","application/json"]]}}{body}"#
        )
    };
    let upgrade = |message: &str, check: &str| {
        format!(
            r#"1:{{"kind":"error","code":"upgrade","message":"{message}","upgrade":{{"check":"{check}"}}}}"#
        )
    };

    // Error statuses: kube's `Error::Api`, its `Status` as the body.
    assert_eq!(
        line("forbidden"),
        response(
            403,
            r#"{"status":"Failure","code":403,"reason":"Forbidden"}"#
        )
    );
    assert_eq!(
        line("text"),
        response(
            404,
            r#"{"status":"Failure","code":404,"message":"404 page not found","reason":"Failed to parse error data"}"#
        )
    );
    // A `Status` without a code still arrives with an error status.
    assert_eq!(line("codeless"), response(500, r#"{"message":"no code"}"#));

    // Other answers: the check kube's handshake failed.
    assert_eq!(
        line("ok"),
        r#"1:{"kind":"error","code":"upgrade","message":"failed to switch protocol: 200 OK","upgrade":{"check":"protocol_switch","status":200}}"#
    );
    assert_eq!(
        line("no-upgrade"),
        upgrade(
            "upgrade header was not set to websocket",
            "missing_upgrade_websocket_header"
        )
    );
    assert_eq!(
        line("no-connection"),
        upgrade(
            "connection header was not set to Upgrade",
            "missing_connection_upgrade_header"
        )
    );
    assert_eq!(
        line("bad-accept"),
        upgrade(
            "Sec-WebSocket-Accept key mismatched",
            "sec_websocket_accept_key_mismatch"
        )
    );
    assert_eq!(
        line("bad-protocol"),
        upgrade(
            "Sec-WebSocket-Protocol mismatched",
            "sec_websocket_protocol_mismatch"
        )
    );
    // kube's `GetPendingUpgrade(hyper::Error)`: the message is hyper's.
    assert_eq!(
        line("no-transport"),
        upgrade("no upgrade available", "get_pending_upgrade")
    );
}
