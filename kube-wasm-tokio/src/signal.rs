//! Signals, with tokio's `tokio::signal` API. A guest receives one signal: the host's request
//! to stop the module, which plays the part of Ctrl-C / SIGTERM.

use kube_wasm_guest::Op;

/// Completes when the host asks the module to stop, as `tokio::signal::ctrl_c` completes on
/// SIGINT. Each call listens independently; all pending calls complete on the stop request.
///
/// Dropping the future stops listening (the `stop_signal` op is cancelled).
///
/// # Errors
/// None in practice; the `io::Result` is tokio's signature.
pub async fn ctrl_c() -> std::io::Result<()> {
    let mut op = Op::stop_signal();
    op.next_delivery().await;
    Ok(())
}
