//! `tokio::io::{stdin, stdout, stderr}`: blocking std I/O in place, never `Pending`.
//!
//! The parent test runs this test binary again as a child (only `child_echoes_stdin`, with
//! `KUBE_WASM_STDIO_CHILD` set) with piped stdio, so the real process streams are exercised.

extern crate kube_wasm_tokio as tokio;

use std::io::Write;
use std::process::{Command, Stdio};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[tokio::test]
async fn child_echoes_stdin() {
    if std::env::var_os("KUBE_WASM_STDIO_CHILD").is_none() {
        return;
    }
    let mut input = Vec::new();
    tokio::io::stdin().read_to_end(&mut input).await.unwrap();
    let mut out = tokio::io::stdout();
    out.write_all(b"<out:").await.unwrap();
    out.write_all(&input).await.unwrap();
    out.write_all(b">").await.unwrap();
    out.flush().await.unwrap();
    let mut err = tokio::io::stderr();
    err.write_all(b"<err:").await.unwrap();
    err.write_all(&input).await.unwrap();
    err.write_all(b">").await.unwrap();
    err.shutdown().await.unwrap();
}

#[test]
fn stdin_stdout_and_stderr_reach_the_process_streams() {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_echoes_stdin",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("KUBE_WASM_STDIO_CHILD", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"hello").unwrap();
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("<out:hello>"), "{stdout}");
    assert!(stderr.contains("<err:hello>"), "{stderr}");
}

#[test]
fn a_write_completes_within_its_first_poll() {
    use std::future::Future;
    use std::task::{Context, Poll, Waker};
    let mut cx = Context::from_waker(Waker::noop());
    let mut err = tokio::io::stderr();
    let mut write = std::pin::pin!(err.write(b""));
    assert!(matches!(write.as_mut().poll(&mut cx), Poll::Ready(Ok(0))));
    let mut out = tokio::io::stdout();
    let mut flush = std::pin::pin!(out.flush());
    assert!(matches!(flush.as_mut().poll(&mut cx), Poll::Ready(Ok(()))));
}
