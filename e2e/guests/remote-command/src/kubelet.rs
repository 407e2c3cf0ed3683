//! kube's `kubelet-debug` methods through the API server's node proxy: a client whose cluster
//! URL is `{server}/api/v1/nodes/node-1/proxy` asks node `node-1`'s kubelet for a container's
//! log, an exec, an attach and a port forward.

use crate::outcome;
use futures::{AsyncBufReadExt, TryStreamExt};
use kube::api::{AttachParams, LogParams};
use kube::core::kubelet_debug::KubeletDebugParams;
use kube::{Client, Config};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Runs the checks, one line each.
pub async fn checks() -> anyhow::Result<()> {
    let mut config = Config::infer().await?;
    let server = config.cluster_url.to_string();
    config.cluster_url =
        format!("{}/api/v1/nodes/node-1/proxy", server.trim_end_matches('/')).parse()?;
    let kubelet = Client::try_from(config)?;
    let pod = KubeletDebugParams {
        name: "echo",
        namespace: "demo",
        pod_uid: Some("uid-1"),
    };

    let lp = LogParams {
        tail_lines: Some(2),
        ..LogParams::default()
    };
    let lines: Vec<String> = kubelet
        .kubelet_node_logs(&pod, "main", &lp)
        .await?
        .lines()
        .try_collect()
        .await?;
    println!("kubelet logs: {lines:?}");

    let ap = AttachParams::default().stdin(true).stderr(true);
    let mut process = kubelet
        .kubelet_node_exec(&pod, "main", vec!["cat"], &ap)
        .await?;
    let mut stdin = process.stdin().expect("stdin was asked for");
    stdin.write_all(b"hello kubelet\n").await?;
    stdin.shutdown().await?;
    drop(stdin);
    println!("kubelet exec cat: {}", outcome(process).await?);

    let process = kubelet
        .kubelet_node_attach(&pod, "main", &AttachParams::default().stderr(false))
        .await?;
    println!("kubelet attach: {}", outcome(process).await?);

    let mut forwarder = kubelet.kubelet_node_portforward(&pod, &[8080]).await?;
    let mut port = forwarder.take_stream(8080).expect("port 8080");
    port.write_all(b"pong").await?;
    let mut answer = [0u8; 4];
    port.read_exact(&mut answer).await?;
    println!(
        "kubelet portforward 8080: {:?}",
        String::from_utf8_lossy(&answer)
    );
    drop(port);
    forwarder.join().await?;
    println!("kubelet portforward joined");
    Ok(())
}
