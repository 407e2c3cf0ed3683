//! What the guest does when the host enters it: `main` (through `_start`) and
//! `kube_wasm_complete`. Both end by running the executor until stalled.

use crate::executor::{run_until_stalled, spawn_local};
use crate::op::Delivery;
use crate::reactor;
use kube_wasm_abi::OpId;
use std::future::Future;

/// Starts the module: spawns `main` as the root task and runs until stalled.
///
/// When the root task finishes, the module exits with the status it returned, as a native
/// process does when `main` returns — other tasks are not waited for. On wasm32 this is WASI
/// `proc_exit`; natively (tests) the status is recorded for [`exit_status`].
pub fn run_main<F>(main: F)
where
    F: Future<Output = i32> + 'static,
{
    drop(spawn_local(async move {
        let status = main.await;
        exit(status);
    }));
    run_until_stalled();
}

/// Delivers one completion frame from the host to `op`, then runs until stalled.
/// A completion for an op the guest no longer tracks is dropped, as the spec says.
pub fn complete(op: OpId, frame: Vec<u8>) {
    reactor::deliver(op, Delivery::from_frame(frame));
    run_until_stalled();
}

#[cfg(target_arch = "wasm32")]
fn exit(status: i32) {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    std::process::exit(status);
}

#[cfg(not(target_arch = "wasm32"))]
thread_local! {
    static EXIT_STATUS: std::cell::Cell<Option<i32>> = const { std::cell::Cell::new(None) };
}

#[cfg(not(target_arch = "wasm32"))]
fn exit(status: i32) {
    EXIT_STATUS.with(|s| s.set(Some(status)));
}

/// Natively: the status the root task exited with, if it has finished.
#[cfg(not(target_arch = "wasm32"))]
pub fn exit_status() -> Option<i32> {
    EXIT_STATUS.with(|s| s.get())
}

#[cfg(not(target_arch = "wasm32"))]
pub(crate) fn reset() {
    EXIT_STATUS.with(|s| s.set(None));
}
