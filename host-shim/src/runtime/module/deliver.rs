//! The delivery of one completion to the guest (SPEC.md, "Exports"): the guest lends a
//! buffer, the host fills it, the guest takes the completion.

use kube_wasm_abi::OpId;
use kube_wasm_abi::names::{EXPORT_ALLOC, EXPORT_COMPLETE};
use wasmtime::Store;

use super::entry::{arm_deadline, entry_failed, record_memory};
use super::outcome::{ModuleError, ModuleOutcome};
use crate::runtime::abi::exports::GuestExports;
use crate::runtime::abi::{memory, op_to_wasm};
use crate::runtime::state::HostState;

/// Delivers `frame`, a completion of `op`, through the guest's `exports`: calls
/// `kube_wasm_alloc(len)`, copies the frame into the buffer it returns, and calls
/// `kube_wasm_complete(op, ptr, len)`. Each call is one entry with its own deadline; the
/// guest's memory size is recorded once it has taken the completion.
///
/// # Errors
/// How the module ends: the frame is too large for a wasm32 guest, an entry failed, or the
/// guest's buffer is null or outside its memory.
pub(super) async fn deliver(
    store: &mut Store<HostState>,
    exports: &GuestExports,
    op: OpId,
    frame: &[u8],
) -> Result<(), ModuleOutcome> {
    let size = frame.len();
    let len = i32::try_from(size)
        .map_err(|_| ModuleOutcome::Failed(ModuleError::CompletionTooLarge { len: size }))?;

    arm_deadline(store);
    let ptr = exports
        .alloc
        .call_async(&mut *store, len)
        .await
        .map_err(|err| entry_failed(store, err, EXPORT_ALLOC))?;
    if ptr == 0 {
        return Err(ModuleOutcome::Failed(ModuleError::AllocFailed {
            len: size,
        }));
    }
    memory::write_guest_bytes(&mut *store, exports.memory, ptr, frame).map_err(|reason| {
        ModuleOutcome::Failed(ModuleError::AllocOutOfBounds { len: size, reason })
    })?;

    arm_deadline(store);
    let completed = exports
        .complete
        .call_async(&mut *store, (op_to_wasm(op), ptr, len))
        .await
        .map_err(|err| entry_failed(store, err, EXPORT_COMPLETE));
    record_memory(store, exports);
    completed
}
