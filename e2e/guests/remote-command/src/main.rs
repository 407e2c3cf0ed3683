//! Runs exec, attach and portforward against whatever API server the kubeconfig names (in the
//! tests: a websocket server speaking the Kubernetes channel protocol) and prints one line per
//! observation, so native and wasm runs can be compared line for line. Then the same through
//! the kubelet's debug endpoints (`kubelet-debug`), with a client whose cluster URL is the API
//! server's proxy of node `node-1`.

use futures::SinkExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{AttachParams, AttachedProcess, TerminalSize};
use kube::{Api, Client};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

mod kubelet;

pub(crate) async fn outcome(mut process: AttachedProcess) -> anyhow::Result<String> {
    let status = process.take_status().expect("status is taken once");
    let mut stdout = String::new();
    if let Some(mut reader) = process.stdout() {
        reader.read_to_string(&mut stdout).await?;
    }
    let mut stderr = String::new();
    if let Some(mut reader) = process.stderr() {
        reader.read_to_string(&mut stderr).await?;
    }
    let status = status.await.map(|s| {
        let code = s
            .details
            .and_then(|d| d.causes)
            .and_then(|c| c.into_iter().find_map(|c| c.message));
        format!("{:?} {:?} {:?}", s.status, s.reason, code)
    });
    process.join().await?;
    Ok(format!(
        "stdout={stdout:?} stderr={stderr:?} status={status:?}"
    ))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let client = Client::try_default().await?;
    let pods: Api<Pod> = Api::namespaced(client, "demo");

    let ap = AttachParams::default().stdin(true).stderr(true);
    let mut process = pods.exec("echo", vec!["cat"], &ap).await?;
    let mut stdin = process.stdin().expect("stdin was asked for");
    stdin.write_all(b"hello from stdin\n").await?;
    stdin.shutdown().await?;
    drop(stdin);
    println!("exec cat: {}", outcome(process).await?);

    let process = pods
        .exec("echo", vec!["false"], &AttachParams::default().stderr(true))
        .await?;
    println!("exec false: {}", outcome(process).await?);

    let mut process = pods
        .attach("echo", &AttachParams::interactive_tty())
        .await?;
    let mut resize = process.terminal_size().expect("tty");
    resize
        .send(TerminalSize {
            width: 132,
            height: 43,
        })
        .await?;
    drop(resize);
    println!("attach tty: {}", outcome(process).await?);

    match pods
        .exec("missing", vec!["ls"], &AttachParams::default())
        .await
    {
        Ok(_) => println!("exec missing: connected"),
        Err(kube::Error::Api(status)) => {
            println!("exec missing: {} {}", status.code, status.reason)
        }
        Err(other) => println!("exec missing: other error {other}"),
    }

    // Answers that are not errors but fail kube's handshake checks.
    for pod in ["proxied", "wrongproto"] {
        match pods.exec(pod, vec!["ls"], &AttachParams::default()).await {
            Ok(_) => println!("exec {pod}: connected"),
            Err(kube::Error::UpgradeConnection(error)) => {
                println!("exec {pod}: upgrade failed: {error}")
            }
            Err(other) => println!("exec {pod}: other error {other}"),
        }
    }

    let mut forwarder = pods.portforward("echo", &[8080, 9090]).await?;
    let mut port = forwarder.take_stream(8080).expect("port 8080");
    let error = forwarder.take_error(9090).expect("errors of 9090");
    port.write_all(b"ping").await?;
    let mut answer = [0u8; 4];
    port.read_exact(&mut answer).await?;
    println!("portforward 8080: {:?}", String::from_utf8_lossy(&answer));
    println!("portforward 9090 error: {:?}", error.await);
    drop(port);
    forwarder.join().await?;
    println!("portforward joined");

    kubelet::checks().await
}
