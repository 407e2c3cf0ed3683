//! `stop_signal() -> op`: completes with `stop` when the host is asked to stop (SIGINT or
//! SIGTERM to the host process), which is what the guest's `tokio::signal::ctrl_c()` waits
//! for. Asked after the stop began, it completes at once. A module at its quota of pending ops
//! gets an `error` of code `quota` instead (ABI 1.3).

use kube_wasm_abi::Completion;
use kube_wasm_abi::names::{IMPORT_MODULE, IMPORT_STOP_SIGNAL};
use wasmtime::{Caller, Linker};

use super::op::start_op;
use super::op_to_wasm;
use crate::runtime::ops::OpKind;
use crate::runtime::state::HostState;
use crate::runtime::stop::Phase;

/// Adds `stop_signal` to `linker`.
///
/// # Errors
/// If the import is already defined.
pub fn add_to_linker(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    linker.func_wrap(IMPORT_MODULE, IMPORT_STOP_SIGNAL, stop_signal)?;
    Ok(())
}

fn stop_signal(mut caller: Caller<'_, HostState>) -> wasmtime::Result<i64> {
    let state = caller.data_mut();
    state.asked_for_stop = true;
    let started = start_op(state, OpKind::StopSignal, 0, |ctx, sink, _| {
        // Only the phase: the task lasts as long as the module.
        let mut phase = ctx.phase.clone();
        async move {
            // If the host drops its stop handle, no stop can come: stay pending.
            if phase.wait_for(|p| *p != Phase::Running).await.is_ok() {
                sink.send(&Completion::Stop {}, b"").await?;
            }
            Ok(())
        }
    })?;
    Ok(op_to_wasm(started.id))
}
