//! `stop_signal() -> op`: completes with `stop` when the host is asked to stop (SIGINT or
//! SIGTERM to the host process), which is what the guest's `tokio::signal::ctrl_c()` waits
//! for. Asked after the stop began, it completes at once.

use kube_wasm_abi::Completion;
use kube_wasm_abi::names::{IMPORT_MODULE, IMPORT_STOP_SIGNAL};
use wasmtime::{Caller, Linker};

use super::op::spawn_op;
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

fn stop_signal(mut caller: Caller<'_, HostState>) -> i64 {
    let state = caller.data_mut();
    state.asked_for_stop = true;
    let id = spawn_op(state, OpKind::StopSignal, |ctx, sink| async move {
        let mut phase = ctx.phase;
        // If the host drops its stop handle, no stop can come: stay pending.
        if phase.wait_for(|p| *p != Phase::Running).await.is_ok() {
            sink.send(&Completion::Stop {}, b"").await?;
        }
        Ok(())
    });
    op_to_wasm(id)
}
