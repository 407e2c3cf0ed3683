//! The one way an import starts an op: read its frame argument out of guest memory and decode
//! it ([`read_frame`]), then register the op and spawn its work ([`spawn_op`]). An import
//! never waits and never calls into the guest.

use std::future::Future;

use kube_wasm_abi::{OpId, decode_frame};
use serde::de::DeserializeOwned;
use tracing::Instrument as _;
use wasmtime::Caller;

use super::{BadAbiCall, memory};
use crate::runtime::ops::{CompletionSink, ModuleGone, OpKind};
use crate::runtime::state::{HostState, OpContext};

/// A decoded frame argument: the header and an owned copy of the body.
pub(crate) struct Argument<H> {
    /// The frame's header.
    pub header: H,
    /// The frame's body (a request body, a message), empty if none.
    pub body: Vec<u8>,
}

/// Reads the frame argument of `import` (`len` bytes at `ptr`) and decodes its header as `H`.
///
/// # Errors
/// A [`BadAbiCall`] naming `import` if the bytes are out of bounds or not a frame with an `H`
/// header; it traps the guest.
pub(crate) fn read_frame<H: DeserializeOwned>(
    caller: &mut Caller<'_, HostState>,
    import: &'static str,
    ptr: i32,
    len: i32,
) -> Result<Argument<H>, BadAbiCall> {
    let bytes = memory::read_guest_bytes(caller, import, ptr, len)?;
    let frame = decode_frame::<H>(&bytes).map_err(|e| BadAbiCall::new(import, e.to_string()))?;
    Ok(Argument {
        header: frame.header,
        body: frame.body.to_vec(),
    })
}

/// Registers an op of `kind` in the module's op table and spawns `work` for it on the host's
/// runtime, in the current tracing span. `work` gets the module's op context and the op's
/// completion sink; it ends early, without error, when the module has gone
/// ([`ModuleGone`]). Dropping the task (cancel, or the module ending) drops whatever `work`
/// holds: requests, watches, connections.
///
/// Returns the op's id.
pub(crate) fn spawn_op<W, F>(state: &mut HostState, kind: OpKind, work: W) -> OpId
where
    W: FnOnce(OpContext, CompletionSink) -> F,
    F: Future<Output = Result<(), ModuleGone>> + Send + 'static,
{
    let ctx = state.ctx.clone();
    state.ops.start(kind, |id| {
        let sink = CompletionSink::new(id, ctx.completions.clone());
        let runtime = ctx.runtime.clone();
        let task = work(ctx, sink);
        runtime
            .spawn(
                async move {
                    let _ = task.await;
                }
                .instrument(tracing::Span::current()),
            )
            .abort_handle()
    })
}
