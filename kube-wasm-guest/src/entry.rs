//! What the guest does when the host enters it: `main` (through `_start`) and
//! `kube_wasm_complete`. Both end by running the executor until stalled.

use crate::delivery::Delivery;
use crate::executor::{run_until_stalled, spawn_local};
use crate::op::Op;
use crate::reactor;
use kube_wasm_abi::OpId;
use std::cell::{Cell, RefCell};
use std::future::Future;

thread_local! {
    /// Whether `main`'s root task was started and has not finished.
    static ROOT_PENDING: Cell<bool> = const { Cell::new(false) };
    /// The op that keeps a blocked module alive (see [`park_if_blocked`]).
    static PARKED: RefCell<Option<Op>> = const { RefCell::new(None) };
}

/// Starts the module: spawns `main` as the root task and runs until stalled.
///
/// When the root task finishes, the module exits with the status it returned, as a native
/// process does when `main` returns — other tasks are not waited for. On wasm32 this is WASI
/// `proc_exit`; natively (tests) the status is recorded for [`exit_status`].
pub fn run_main<F>(main: F)
where
    F: Future<Output = i32> + 'static,
{
    ROOT_PENDING.with(|p| p.set(true));
    drop(spawn_local(async move {
        let status = main.await;
        ROOT_PENDING.with(|p| p.set(false));
        exit(status);
    }));
    run_until_stalled();
    park_if_blocked();
}

/// Delivers one completion frame from the host to `op`, then runs until stalled.
/// A completion for an op the guest no longer tracks is dropped, as the spec says.
pub fn complete(op: OpId, frame: Vec<u8>) {
    reactor::deliver(op, Delivery::from_frame(frame));
    run_until_stalled();
    park_if_blocked();
}

/// Keeps a module whose `main` is blocked for good from looking finished.
///
/// A host treats a module that returns from an entry without exiting and with no live op
/// as one whose `main` returned (SPEC.md, "Lifecycle"): a plain `fn main()` that printed
/// and returned exits with status 0, as natively. A `#[tokio::main]` root task that is still
/// pending when every task has stalled and no op is live waits for something nothing can
/// deliver — natively the process blocks forever. So the guest blocks too: it starts a
/// `delay` op that never fires (the longest the ABI can ask for) and keeps it, and says so
/// once on stderr. A stop request still ends it, as it ends a blocked native process.
fn park_if_blocked() {
    let blocked = ROOT_PENDING.with(Cell::get)
        && reactor::tracked_ops() == 0
        && PARKED.with(|p| p.borrow().is_none());
    if blocked {
        eprintln!(
            "kube-wasm: main's task waits for something nothing can deliver (no operation is \
             pending): the module blocks until the host stops it, as a native process would"
        );
        PARKED.with(|p| *p.borrow_mut() = Some(Op::delay(i64::MAX as u64)));
    }
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
    ROOT_PENDING.with(|p| p.set(false));
    // Forgotten, not dropped: the op belongs to the fake host being replaced.
    PARKED.with(|p| std::mem::forget(p.borrow_mut().take()));
}
