//! exec / attach / portforward through the host shim's stream relay (ABI 1.1), against a local
//! websocket server that speaks the Kubernetes channel protocol — once choosing
//! `v5.channel.k8s.io`, once `v4.channel.k8s.io` — compared line for line with the same
//! program built natively with kube 5.0. (A real kubelet is needed for real pods; the
//! apiserver of the e2e control plane has none, so this server stands in for the
//! apiserver→kubelet path. It is plain http: kube's client supports http URLs.) The same
//! server plays the API server's node proxy for node `node-1`, with the kubelet's debug
//! endpoints behind it (`/api/v1/nodes/node-1/proxy/{containerLogs,exec,attach,portForward}/…`),
//! for kube's `kubelet-debug` methods.

use futures::{SinkExt, StreamExt};
use kube_wasm_e2e::{Program, scratch_dir};
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::{Message, http};

const V4: &str = "v4.channel.k8s.io";
const V5: &str = "v5.channel.k8s.io";

fn status(status: &str, reason: Option<&str>, exit_code: Option<&str>) -> Vec<u8> {
    let mut value = serde_json::json!({"metadata": {}, "status": status});
    if let Some(reason) = reason {
        value["reason"] = reason.into();
        value["message"] = "command terminated with non-zero exit code".into();
    }
    if let Some(code) = exit_code {
        value["details"] = serde_json::json!({"causes": [{"reason": "ExitCode", "message": code}]});
    }
    let mut out = vec![3];
    out.extend(serde_json::to_vec(&value).expect("serialises"));
    out
}

fn framed(channel: u8, payload: &[u8]) -> Message {
    let mut out = vec![channel];
    out.extend_from_slice(payload);
    Message::binary(out)
}

/// One websocket session, behaving by the path of the upgrade request.
#[allow(
    clippy::result_large_err,
    reason = "the handshake callback's error type is tungstenite's"
)]
async fn session(tcp: TcpStream, protocol: &'static str) -> anyhow::Result<()> {
    let mut uri = String::new();
    let callback = |req: &Request, mut resp: Response| -> Result<Response, ErrorResponse> {
        uri = req.uri().to_string();
        if uri.contains("/pods/missing/") {
            let body = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods \"missing\" not found","reason":"NotFound","code":404}"#;
            let mut refused = http::Response::new(Some(body.to_string()));
            *refused.status_mut() = http::StatusCode::NOT_FOUND;
            refused.headers_mut().insert(
                "content-type",
                http::HeaderValue::from_static("application/json"),
            );
            return Err(refused);
        }
        if uri.contains("/pods/proxied/") {
            // Something between that answers neither with an error nor by switching
            // protocols (tungstenite writes any status but a 2xx here).
            let mut moved = http::Response::new(Some("moved".to_string()));
            *moved.status_mut() = http::StatusCode::FOUND;
            moved
                .headers_mut()
                .insert("location", http::HeaderValue::from_static("/elsewhere"));
            return Err(moved);
        }
        let offered = req
            .headers()
            .get("sec-websocket-protocol")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        assert!(offered.contains(protocol), "client offered {offered:?}");
        // A subprotocol the client did not offer, for pod `wrongproto`.
        let chosen = if uri.contains("/pods/wrongproto/") {
            "v3.channel.k8s.io"
        } else {
            protocol
        };
        resp.headers_mut().insert(
            "sec-websocket-protocol",
            http::HeaderValue::from_static(chosen),
        );
        Ok(resp)
    };
    let Ok(mut ws) = tokio_tungstenite::accept_hdr_async(tcp, callback).await else {
        return Ok(());
    };
    let uri = uri.as_str();
    let is = |endpoint: &str| uri.contains(&format!("/{endpoint}?"));
    if uri.contains(KUBELET) {
        return kubelet_session(ws, uri).await;
    }
    if is("exec") && uri.contains("command=cat") {
        if echo_stdin(&mut ws).await? {
            return finish(ws).await;
        }
        ws.send(framed(2, b"stdin closed\n")).await?;
        ws.send(Message::binary(status("Success", None, None)))
            .await?;
    } else if is("exec") {
        ws.send(framed(2, b"false: failed\n")).await?;
        ws.send(Message::binary(status(
            "Failure",
            Some("NonZeroExitCode"),
            Some("1"),
        )))
        .await?;
    } else if is("attach") {
        while let Some(message) = ws.next().await {
            if let Message::Binary(bin) = message?
                && bin.first() == Some(&4)
            {
                let mut text = b"resized to ".to_vec();
                text.extend_from_slice(&bin[1..]);
                ws.send(framed(1, &text)).await?;
                break;
            }
        }
        ws.send(Message::binary(status("Success", None, None)))
            .await?;
    } else if is("portforward") {
        send_port_prefixes(&mut ws, &[8080, 9090]).await?;
        ws.send(framed(3, b"port 9090 refused")).await?;
        return upper_case_port_0(ws).await;
    }
    ws.close(None).await?;
    finish(ws).await
}

/// The path prefix of node `node-1`'s kubelet behind the API server's node proxy.
const KUBELET: &str = "/api/v1/nodes/node-1/proxy/";

/// A websocket session with the kubelet's debug endpoints: `exec` of `cat` echoes stdin, an
/// `attach` says what it attached to, a `portForward` of port 8080 answers in upper case.
async fn kubelet_session(mut ws: WebSocketStream<TcpStream>, uri: &str) -> anyhow::Result<()> {
    let endpoint = uri.strip_prefix(KUBELET).unwrap_or(uri);
    if endpoint.starts_with("exec/") && endpoint.contains("command=cat") {
        if echo_stdin(&mut ws).await? {
            return finish(ws).await;
        }
        ws.send(Message::binary(status("Success", None, None)))
            .await?;
    } else if endpoint.starts_with("attach/") {
        let path = endpoint.split('?').next().unwrap_or_default();
        ws.send(framed(1, format!("attached to {path}\n").as_bytes()))
            .await?;
        ws.send(Message::binary(status("Success", None, None)))
            .await?;
    } else if endpoint.starts_with("portForward/") {
        send_port_prefixes(&mut ws, &[8080]).await?;
        return upper_case_port_0(ws).await;
    }
    ws.close(None).await?;
    finish(ws).await
}

/// Sends stdin back on stdout until the client closes stdin (close channel) — then `false` —
/// or the whole connection (v4 has no close channel) — then `true`.
async fn echo_stdin(ws: &mut WebSocketStream<TcpStream>) -> anyhow::Result<bool> {
    ws.send(Message::binary(vec![1])).await?;
    while let Some(message) = ws.next().await {
        match message? {
            Message::Binary(bin) if bin.first() == Some(&0) => {
                ws.send(framed(1, &bin[1..])).await?;
            }
            Message::Binary(bin) if bin[..] == [255, 0] => return Ok(false),
            Message::Close(_) => return Ok(true),
            _ => {}
        }
    }
    Ok(true)
}

/// The first two messages of a port forward: each port's data and error channel, with the
/// port number.
async fn send_port_prefixes(
    ws: &mut WebSocketStream<TcpStream>,
    ports: &[u16],
) -> anyhow::Result<()> {
    for (index, port) in ports.iter().enumerate() {
        for channel in [2 * index as u8, 2 * index as u8 + 1] {
            let mut prefix = vec![channel];
            prefix.extend(port.to_le_bytes());
            ws.send(Message::binary(prefix)).await?;
        }
    }
    Ok(())
}

/// Answers what arrives on the first port's data channel in upper case, until the close.
async fn upper_case_port_0(mut ws: WebSocketStream<TcpStream>) -> anyhow::Result<()> {
    while let Some(message) = ws.next().await {
        match message? {
            Message::Binary(bin) if bin.first() == Some(&0) => {
                ws.send(framed(0, &bin[1..].to_ascii_uppercase())).await?;
            }
            Message::Close(_) => return finish(ws).await,
            _ => {}
        }
    }
    Ok(())
}

/// One connection: a plain `GET` of the kubelet's `containerLogs` gets a two-line log whose
/// first line is the request's target; anything else is a websocket session.
async fn connection(tcp: TcpStream, protocol: &'static str) -> anyhow::Result<()> {
    let mut start = [0u8; 256];
    let peeked = tcp.peek(&mut start).await?;
    let logs = format!("GET {KUBELET}containerLogs/");
    if !start[..peeked].starts_with(logs.as_bytes()) {
        return session(tcp, protocol).await;
    }
    let mut reader = BufReader::new(tcp);
    let mut request_line = String::new();
    reader.read_line(&mut request_line).await?;
    let mut header = String::new();
    while reader.read_line(&mut header).await? > 2 {
        header.clear();
    }
    let target = request_line.split(' ').nth(1).unwrap_or_default();
    let body = format!("GET {target}\nsecond line\n");
    let response = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    reader.get_mut().write_all(response.as_bytes()).await?;
    reader.get_mut().shutdown().await?;
    Ok(())
}

/// Completes the closing handshake: reading on after a close frame (sent or received) makes
/// tungstenite flush the reply, so the client sees a clean close rather than a reset.
async fn finish(mut ws: WebSocketStream<TcpStream>) -> anyhow::Result<()> {
    while ws.next().await.is_some() {}
    Ok(())
}

/// Serves the channel protocol with `protocol` on a free port; returns a kubeconfig for it.
async fn serve(protocol: &'static str, dir: &Path) -> PathBuf {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            tokio::spawn(async move {
                if let Err(e) = connection(tcp, protocol).await {
                    eprintln!("channel-protocol server: {e}");
                }
            });
        }
    });
    let kubeconfig = serde_json::json!({
        "apiVersion": "v1", "kind": "Config", "current-context": "ws",
        "clusters": [{"name": "ws", "cluster": {"server": format!("http://127.0.0.1:{port}")}}],
        "users": [{"name": "ws", "user": {}}],
        "contexts": [{"name": "ws", "context": {"cluster": "ws", "user": "ws", "namespace": "demo"}}],
    });
    let path = dir.join(format!(
        "kubeconfig-remote-command-{}",
        protocol.replace('.', "-")
    ));
    std::fs::write(&path, kubeconfig.to_string()).expect("kubeconfig written");
    path
}

/// Runs the program natively (real kube) and as a module in the host shim, each against
/// `kubeconfig`, and returns their output lines; either must finish cleanly within a minute.
async fn native_and_wasm(kubeconfig: PathBuf) -> (Vec<String>, Vec<String>) {
    tokio::task::spawn_blocking(move || {
        let mut native = Program::native("remote-command", &kubeconfig);
        let status = native.wait(Duration::from_secs(60));
        let native_lines = native.stdout.snapshot();
        assert!(
            status.as_ref().is_ok_and(ExitStatus::success),
            "native run ended with {status:?}: {native_lines:#?}\n{:#?}",
            native.stderr.snapshot()
        );
        let mut host = Program::start(&kubeconfig, &[], "remote-command");
        let status = host.wait(Duration::from_secs(60));
        let wasm_lines = host.module_output("remote-command");
        assert!(
            status.as_ref().is_ok_and(ExitStatus::success),
            "host-shim ended with {status:?}: {wasm_lines:#?}"
        );
        (native_lines, wasm_lines)
    })
    .await
    .expect("runs")
}

const PORTFORWARD: [&str; 3] = [
    "portforward 8080: \"PING\"",
    "portforward 9090 error: Some(\"port 9090 refused\")",
    "portforward joined",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn channel_protocol_v5_through_the_host_relay_matches_native_kube() {
    let kubeconfig = serve(V5, &scratch_dir()).await;
    let (native, wasm) = native_and_wasm(kubeconfig).await;
    assert_eq!(wasm, native, "wasm and native observations differ");
    let mut expected = vec![
        "exec cat: stdout=\"hello from stdin\\n\" stderr=\"stdin closed\\n\" status=Some(\"Some(\\\"Success\\\") None None\")".to_string(),
        "exec false: stdout=\"\" stderr=\"false: failed\\n\" status=Some(\"Some(\\\"Failure\\\") Some(\\\"NonZeroExitCode\\\") Some(\\\"1\\\")\")".to_string(),
        "attach tty: stdout=\"resized to {\\\"Width\\\":132,\\\"Height\\\":43}\" stderr=\"\" status=Some(\"Some(\\\"Success\\\") None None\")".to_string(),
        "exec missing: 404 NotFound".to_string(),
        "exec proxied: upgrade failed: failed to switch protocol: 302 Found".to_string(),
        "exec wrongproto: upgrade failed: Sec-WebSocket-Protocol mismatched".to_string(),
    ];
    expected.extend(PORTFORWARD.map(str::to_string));
    expected.extend(KUBELET_LINES[..1].iter().map(|l| l.to_string()));
    expected.push("kubelet exec cat: stdout=\"hello kubelet\\n\" stderr=\"\" status=Some(\"Some(\\\"Success\\\") None None\")".to_string());
    expected.extend(KUBELET_LINES[1..].iter().map(|l| l.to_string()));
    assert_eq!(native, expected);
}

/// What the `kubelet-debug` checks see, whichever channel protocol (the exec's line, which
/// depends on it, goes between the first and the second).
const KUBELET_LINES: [&str; 4] = [
    "kubelet logs: [\"GET /api/v1/nodes/node-1/proxy/containerLogs/demo/echo/main?&tailLines=2\", \"second line\"]",
    "kubelet attach: stdout=\"attached to attach/demo/echo/uid-1/main\\n\" stderr=\"\" status=Some(\"Some(\\\"Success\\\") None None\")",
    "kubelet portforward 8080: \"PONG\"",
    "kubelet portforward joined",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn channel_protocol_v4_through_the_host_relay_matches_native_kube() {
    let kubeconfig = serve(V4, &scratch_dir()).await;
    let (native, wasm) = native_and_wasm(kubeconfig).await;
    assert_eq!(wasm, native, "wasm and native observations differ");
    // v4 has no close channel: the end of stdin closes the whole connection, so no status.
    assert_eq!(
        native[0],
        "exec cat: stdout=\"hello from stdin\\n\" stderr=\"\" status=None"
    );
    let kubelet_at = native.len() - KUBELET_LINES.len() - 1;
    assert_eq!(&native[kubelet_at - 3..kubelet_at], PORTFORWARD);
    assert_eq!(native[kubelet_at], KUBELET_LINES[0]);
    assert_eq!(
        native[kubelet_at + 1],
        "kubelet exec cat: stdout=\"hello kubelet\\n\" stderr=\"\" status=None"
    );
    assert_eq!(&native[kubelet_at + 2..], &KUBELET_LINES[1..]);
}
