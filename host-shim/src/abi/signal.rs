//! `stop_signal() -> op`: completes with `stop` when the host is asked to stop (SIGINT or
//! SIGTERM to the host process), which is what the guest's `tokio::signal::ctrl_c()` waits
//! for. Asked after the stop began, it completes at once.

use kube_wasm_abi::Completion;
use kube_wasm_abi::names::{IMPORT_MODULE, IMPORT_STOP_SIGNAL};
use wasmtime::{Caller, Linker};

use super::op_to_wasm;
use crate::ops::{CompletionSink, OpKind};
use crate::state::HostState;
use crate::stop::Phase;

/// Adds `stop_signal` to `linker`.
///
/// # Errors
/// If the import is already defined.
pub fn add_to_linker(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    linker.func_wrap(IMPORT_MODULE, IMPORT_STOP_SIGNAL, stop_signal)?;
    Ok(())
}

fn stop_signal(mut caller: Caller<'_, HostState>) -> i64 {
    let state = caller.data_mut();
    state.asked_for_stop = true;
    let ctx = state.ctx.clone();
    let id = state.ops.start(OpKind::StopSignal, |id| {
        let sink = CompletionSink::new(id, ctx.completions.clone());
        let mut phase = ctx.phase;
        ctx.runtime
            .spawn(async move {
                // If the host drops its stop handle, no stop can come: stay pending.
                if phase.wait_for(|p| *p != Phase::Running).await.is_ok() {
                    let _ = sink.send(&Completion::Stop {}, b"").await;
                }
            })
            .abort_handle()
    });
    op_to_wasm(id)
}
