//! `cancel(op) -> i32`: cancels a live op (SPEC.md, "Cancellation"). Returns 1 if the op was
//! live, 0 if it was unknown or already finished. The op's task is aborted (closing its
//! upstream request or watch, dropping its timer) and its undelivered completions are
//! discarded: no completion for it follows.

use kube_wasm_abi::names::{IMPORT_CANCEL, IMPORT_MODULE};
use wasmtime::{Caller, Linker};

use super::op_from_wasm;
use crate::runtime::state::HostState;

/// Adds `cancel` to `linker`.
///
/// # Errors
/// If the import is already defined.
pub fn add_to_linker(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    linker.func_wrap(IMPORT_MODULE, IMPORT_CANCEL, cancel)?;
    Ok(())
}

fn cancel(mut caller: Caller<'_, HostState>, op: i64) -> i32 {
    let id = op_from_wasm(op);
    let state = caller.data_mut();
    let was_live = state.ops.cancel(id);
    tracing::trace!(module = %state.name, op = id, was_live, "cancel");
    i32::from(was_live)
}
