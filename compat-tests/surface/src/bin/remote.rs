//! exec, attach and portforward (kube's `ws` feature) as a kube-rs 5.0 user writes them:
//! stdin/stdout/stderr handles, the status channel, terminal resizes, port streams and their
//! error channels, and a refused or failed upgrade (`Error::Api`, `Error::UpgradeConnection`).
//! Built natively against kube 5.0 and for wasm32-wasip1 against kube-wasm.

use futures::SinkExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{AttachParams, AttachedProcess, Portforwarder, TerminalSize};
use kube::client::UpgradeConnectionError;
use kube::{Api, Client};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn assert_send<T: Send>(_: &T) {}

async fn exec(pods: &Api<Pod>) -> anyhow::Result<()> {
    let params = AttachParams::default()
        .container("main")
        .stdin(true)
        .stdout(true)
        .stderr(true)
        .max_stdin_buf_size(1024)
        .max_stdout_buf_size(1024)
        .max_stderr_buf_size(1024);
    let future = pods.exec("pod", vec!["sh", "-c", "cat"], &params);
    assert_send(&future);
    let mut process: AttachedProcess = future.await?;
    if let Some(mut stdin) = process.stdin() {
        stdin.write_all(b"hello\n").await?;
        stdin.shutdown().await?;
    }
    let mut out = String::new();
    if let Some(mut stdout) = process.stdout() {
        stdout.read_to_string(&mut out).await?;
    }
    if let Some(mut stderr) = process.stderr() {
        let mut err = Vec::new();
        stderr.read_to_end(&mut err).await?;
    }
    if let Some(status) = process.take_status() {
        let status = status.await;
        println!("{:?}", status.and_then(|s| s.status));
    }
    assert_send(&process);
    process.join().await?;
    Ok(())
}

async fn attach(pods: &Api<Pod>) -> anyhow::Result<()> {
    let params = AttachParams::interactive_tty().tty(true);
    let mut process = pods.attach("pod", &params).await?;
    if let Some(mut sizes) = process.terminal_size() {
        sizes
            .send(TerminalSize {
                width: 120,
                height: 40,
            })
            .await?;
    }
    process.abort();
    Ok(())
}

async fn portforward(pods: &Api<Pod>) -> anyhow::Result<()> {
    let mut forwarder: Portforwarder = pods.portforward("pod", &[8080, 9090]).await?;
    if let Some(mut stream) = forwarder.take_stream(8080) {
        stream.write_all(b"GET / HTTP/1.0\r\n\r\n").await?;
        let mut reply = Vec::new();
        stream.read_to_end(&mut reply).await?;
    }
    if let Some(error) = forwarder.take_error(9090) {
        println!("{:?}", error.await);
    }
    assert_send(&forwarder);
    forwarder.abort();
    forwarder.join().await?;
    Ok(())
}

async fn upgraded_connection(client: &Client) -> anyhow::Result<()> {
    let request =
        http::Request::get("/api/v1/namespaces/default/pods/pod/exec?command=ls&stdout=true")
            .body(Vec::new())?;
    match client.connect(request).await {
        Ok(connection) => println!("v5: {}", connection.supports_stream_close()),
        Err(kube::Error::Api(status)) => println!("refused: {}", status.code),
        Err(kube::Error::UpgradeConnection(error)) => println!("{}", upgrade_failure(&error)),
        Err(other) => return Err(other.into()),
    }
    Ok(())
}

/// Every variant of kube's `UpgradeConnectionError`, matched exhaustively.
fn upgrade_failure(error: &UpgradeConnectionError) -> String {
    match error {
        UpgradeConnectionError::ProtocolSwitch(status) => {
            let status: &http::StatusCode = status;
            format!("answered {status}")
        }
        UpgradeConnectionError::MissingUpgradeWebSocketHeader
        | UpgradeConnectionError::MissingConnectionUpgradeHeader
        | UpgradeConnectionError::SecWebSocketAcceptKeyMismatch
        | UpgradeConnectionError::SecWebSocketProtocolMismatch => error.to_string(),
        UpgradeConnectionError::GetPendingUpgrade(source) => {
            let _: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(error);
            format!("pending upgrade: {source}")
        }
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let client = Client::try_default().await?;
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    exec(&pods).await?;
    attach(&pods).await?;
    portforward(&pods).await?;
    upgraded_connection(&client).await?;
    Ok(())
}
