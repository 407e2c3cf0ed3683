//! The `kubelet-debug` methods against the fake host: each asks the kubelet's endpoint
//! (kube-core's paths) under the client's base path — the API server's node proxy when the
//! cluster URL says so — and speaks the same protocols as the pod subresources.
#![cfg(feature = "kubelet-debug")]

use futures::{AsyncBufReadExt, TryStreamExt};
use kube_wasm_abi::{Completion, OpId, ResponseMode, StreamOpen};
use kube_wasm_client::api::{AttachParams, LogParams};
use kube_wasm_client::core::kubelet_debug::KubeletDebugParams;
use kube_wasm_client::{Client, Config, Error};
use kube_wasm_guest::fake::{FakeHost, Submitted};
use tokio::io::AsyncReadExt;

/// A client whose cluster URL is node `n1`'s proxy on the API server.
fn node_proxy_client() -> Client {
    let url = "https://10.0.0.1:6443/api/v1/nodes/n1/proxy"
        .parse()
        .expect("a URI");
    Client::try_from(Config::new(url)).expect("a client")
}

fn params() -> KubeletDebugParams<'static> {
    KubeletDebugParams {
        name: "p",
        namespace: "ns",
        pod_uid: Some("uid-1"),
    }
}

/// The one stream the guest opened, answered with `protocol`.
fn open(host: &FakeHost, protocol: &str) -> (OpId, StreamOpen) {
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
    (*id, request.clone())
}

#[test]
fn exec_goes_to_the_kubelet_through_the_node_proxy_and_reads_its_output() {
    let host = FakeHost::install();
    let mut task = host.spawn(async {
        let ap = AttachParams::default().stderr(false);
        let mut process = node_proxy_client()
            .kubelet_node_exec(&params(), "c", vec!["echo", "hi"], &ap)
            .await?;
        let mut stdout = process.stdout().expect("stdout");
        let status = process.take_status().expect("status");
        let mut out = String::new();
        stdout.read_to_string(&mut out).await.expect("stdout");
        let status = status.await.expect("a status");
        process.join().await.expect("joined");
        Ok::<_, Error>((out, status.status))
    });
    let (stream, request) = open(&host, "v5.channel.k8s.io");
    assert_eq!(request.method, "GET");
    assert_eq!(
        request.uri, "/api/v1/nodes/n1/proxy/exec/ns/p/uid-1/c?&output=1&command=echo&command=hi",
        "the kubelet's own query names, as kube-core writes them"
    );
    assert_eq!(request.keepalive_secs, 60, "kube pings an exec every 60 s");
    host.run_until_stalled();
    let status = [&[3u8][..], br#"{"status":"Success","metadata":{}}"#].concat();
    for message in [&b"\x01hi\n"[..], &status] {
        host.complete(stream, &Completion::Message { text: false }, message);
        host.run_until_stalled();
    }
    host.complete(stream, &Completion::End {}, b"");
    for _ in 0..10 {
        host.run_until_stalled();
        for op in host.take_submitted() {
            if let Submitted::StreamSend { id, .. } = op {
                host.complete(id, &Completion::Sent {}, b"");
            }
        }
    }
    let (out, status) = task.output().expect("finished").expect("ok");
    assert_eq!(out, "hi\n");
    assert_eq!(status.as_deref(), Some("Success"));
}

#[test]
fn attach_and_portforward_use_the_kubelets_paths() {
    let host = FakeHost::install();
    let mut attach = host.spawn(async {
        let ap = AttachParams::interactive_tty();
        node_proxy_client()
            .kubelet_node_attach(&params(), "c", &ap)
            .await
            .map(drop)
    });
    let (_, request) = open(&host, "v5.channel.k8s.io");
    assert_eq!(
        request.uri,
        "/api/v1/nodes/n1/proxy/attach/ns/p/uid-1/c?&input=1&output=1&tty=1"
    );
    assert_eq!(request.keepalive_secs, 60);
    host.run_until_stalled();
    attach.output().expect("finished").expect("attached");

    let mut forward = host.spawn(async {
        let kp = KubeletDebugParams {
            pod_uid: None,
            ..params()
        };
        node_proxy_client()
            .kubelet_node_portforward(&kp, &[80, 8080])
            .await
            .map(drop)
    });
    let (_, request) = open(&host, "v4.channel.k8s.io");
    assert_eq!(
        request.uri,
        "/api/v1/nodes/n1/proxy/portForward/ns/p?&port=80%2C8080"
    );
    assert_eq!(
        request.keepalive_secs, 0,
        "kube does not ping a portforward"
    );
    host.run_until_stalled();
    forward.output().expect("finished").expect("forwarding");
}

#[test]
fn invalid_parameters_fail_before_any_request() {
    let host = FakeHost::install();
    let mut task = host.spawn(async {
        let client = node_proxy_client();
        let no_ports = client.kubelet_node_portforward(&params(), &[]).await.err();
        let twice = client
            .kubelet_node_portforward(&params(), &[80, 80])
            .await
            .err();
        let no_streams = AttachParams::default().stdout(false).stderr(false);
        let nothing_attached = client
            .kubelet_node_exec(&params(), "c", ["ls"], &no_streams)
            .await
            .err();
        [no_ports, twice, nothing_attached].map(|e| e.map(|e| e.to_string()))
    });
    host.run_until_stalled();
    assert!(host.take_submitted().is_empty(), "nothing was sent");
    let errors = task.output().expect("finished");
    for error in &errors {
        assert!(
            error
                .as_deref()
                .is_some_and(|e| e.starts_with("Failed to build request")),
            "{errors:?}"
        );
    }
}

#[test]
fn logs_stream_from_the_kubelet_line_by_line() {
    let host = FakeHost::install();
    let mut task = host.spawn(async {
        let lp = LogParams {
            follow: true,
            tail_lines: Some(2),
            ..LogParams::default()
        };
        let mut lines = node_proxy_client()
            .kubelet_node_logs(&params(), "c", &lp)
            .await?
            .lines();
        let mut read = Vec::new();
        while let Some(line) = lines.try_next().await.map_err(Error::ReadEvents)? {
            read.push(line);
        }
        Ok::<_, Error>(read)
    });
    host.run_until_stalled();
    let submitted = host.take_submitted();
    let [Submitted::Http { id, request, .. }] = &submitted[..] else {
        panic!("expected one request, got {submitted:?}");
    };
    assert_eq!(request.method, "GET");
    assert_eq!(
        request.uri, "/api/v1/nodes/n1/proxy/containerLogs/ns/p/c?&follow=true&tailLines=2",
        "the uid is not part of a log path, as in kube"
    );
    assert_eq!(request.response, ResponseMode::Lines);
    host.complete(
        *id,
        &Completion::Head {
            status: 200,
            headers: vec![],
        },
        b"",
    );
    host.complete(*id, &Completion::Line {}, b"one");
    host.complete(*id, &Completion::Line {}, b"two");
    host.complete(*id, &Completion::End {}, b"");
    host.run_until_stalled();
    assert_eq!(
        task.output().expect("finished").expect("ok"),
        ["one", "two"]
    );
}
