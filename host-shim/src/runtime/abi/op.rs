//! The one way an import starts an op: read its frame argument out of guest memory and decode
//! it ([`read_frame`]), then admit the op against the module's quotas and either register it
//! and spawn its work, or refuse it ([`start_op`]). An import never waits and never calls into
//! the guest.

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use futures::FutureExt as _;
use kube_wasm_abi::{Completion, OpId, decode_frame, encode_frame};
use serde::de::DeserializeOwned;
use tracing::Instrument as _;
use wasmtime::Caller;

use super::{BadAbiCall, memory};
use crate::runtime::ops::{CompletionSink, ModuleGone, OpKind, QueuedCompletion};
use crate::runtime::quota::{HeldBytes, Quota, QuotaAbuse, QuotaExceeded};
use crate::runtime::state::{HostState, OpContext};

/// The first minor ABI version whose guests read an `error` for a `delay` or `stop_signal`.
const REFUSABLE_TIMERS_SINCE: u16 = 3;

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

/// An op [`start_op`] started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Started {
    /// Its id.
    pub id: OpId,
    /// Whether its work runs; `false`: a quota refused it and its answer is queued.
    pub admitted: bool,
}

/// What [`admit_op`] decided.
#[derive(Debug)]
pub(crate) enum Admission {
    /// Within every quota: the bytes held for the op's argument; start it with [`spawn_op`].
    Admitted(HeldBytes),
    /// Refused: the op's id; its answer is queued.
    Refused(OpId),
}

/// Starts an op of `kind` whose argument holds `body_bytes` bytes of the module's buffered-
/// bytes budget while it runs: [`admit_op`], then [`spawn_op`] if admitted.
///
/// # Errors
/// As [`admit_op`].
pub(crate) fn start_op<W, F>(
    state: &mut HostState,
    kind: OpKind,
    body_bytes: usize,
    work: W,
) -> Result<Started, QuotaAbuse>
where
    W: FnOnce(Arc<OpContext>, CompletionSink, HeldBytes) -> F,
    F: Future<Output = Result<(), ModuleGone>> + Send + 'static,
{
    Ok(match admit_op(state, kind, body_bytes)? {
        Admission::Admitted(held) => Started {
            id: spawn_op(state, kind, held, work),
            admitted: true,
        },
        Admission::Refused(id) => Started {
            id,
            admitted: false,
        },
    })
}

/// Admits an op of `kind` whose argument holds `body_bytes` bytes against the module's
/// [quotas](crate::runtime::quota), or refuses it: a refused op gets an id and its one final
/// answer is queued in the module's refusals (a `429` `response` for a request, watch or
/// stream; an `error` of code `quota` otherwise), counted in the metrics, and warned about
/// (rate-limited).
///
/// # Errors
/// [`QuotaAbuse`] when the module must be ended instead: as many refusals as its
/// `pending_ops` quota already wait, or a timer or stop signal of a guest older than ABI 1.3
/// is refused. It traps the guest.
pub(crate) fn admit_op(
    state: &mut HostState,
    kind: OpKind,
    body_bytes: usize,
) -> Result<Admission, QuotaAbuse> {
    let quotas = state.ctx.quotas;
    if state.refusals.len() >= quotas.pending_ops {
        return Err(QuotaAbuse::IgnoredRefusals {
            refused: state.refusals.len(),
            limit: quotas.pending_ops,
        });
    }
    match admit(state, kind, body_bytes) {
        Ok(held) => Ok(Admission::Admitted(held)),
        Err(quota) => {
            let exceeded = QuotaExceeded {
                module: state.name.to_string(),
                quota,
                limit: quota.limit_in(&quotas),
            };
            refuse(state, kind, exceeded).map(Admission::Refused)
        }
    }
}

/// Registers an admitted op of `kind` in the module's op table and spawns `work` for it on
/// the host's runtime, in the current tracing span. `work` gets the module's op context, the
/// op's completion sink and the bytes held for its argument; it ends early, without error,
/// when the module has gone ([`ModuleGone`]). Dropping the task (cancel, or the module
/// ending) drops whatever `work` holds: requests, watches, connections, bytes.
///
/// Returns the op's id.
pub(crate) fn spawn_op<W, F>(state: &mut HostState, kind: OpKind, held: HeldBytes, work: W) -> OpId
where
    W: FnOnce(Arc<OpContext>, CompletionSink, HeldBytes) -> F,
    F: Future<Output = Result<(), ModuleGone>> + Send + 'static,
{
    let ctx = state.ctx.clone();
    state.ops.start(kind, |id| {
        let sink = CompletionSink::new(id, ctx.completions.clone(), ctx.budget.clone());
        let runtime = ctx.runtime.clone();
        let task = work(ctx, sink, held);
        // `map`, not an `async` block awaiting `task`: that block would keep room for the
        // task twice (as its capture and as its awaited future) for as long as the op lasts.
        runtime
            .spawn(task.map(drop).instrument(tracing::Span::current()))
            .abort_handle()
    })
}

/// Checks every quota an op of `kind` counts against, and takes its argument's bytes.
fn admit(state: &HostState, kind: OpKind, body_bytes: usize) -> Result<HeldBytes, Quota> {
    let quotas = &state.ctx.quotas;
    if state.ops.working_total() >= quotas.pending_ops {
        return Err(Quota::PendingOps);
    }
    let of_kind = match kind {
        OpKind::Http => Some((Quota::ConcurrentRequests, quotas.concurrent_requests)),
        OpKind::Watch => Some((Quota::Watches, quotas.watches)),
        OpKind::Stream => Some((Quota::Streams, quotas.streams)),
        OpKind::Delay | OpKind::StopSignal | OpKind::StreamSend | OpKind::Wake => None,
    };
    if let Some((quota, limit)) = of_kind
        && state.ops.working(kind) >= limit
    {
        return Err(quota);
    }
    state
        .ctx
        .budget
        .try_hold(body_bytes)
        .ok_or(Quota::BufferedBytes)
}

/// Registers a refused op and queues its answer.
fn refuse(
    state: &mut HostState,
    kind: OpKind,
    exceeded: QuotaExceeded,
) -> Result<OpId, QuotaAbuse> {
    let (completion, body) = match kind {
        OpKind::Http | OpKind::Watch | OpKind::Stream => exceeded.too_many_requests(),
        OpKind::Delay | OpKind::StopSignal if state.abi_minor < REFUSABLE_TIMERS_SINCE => {
            return Err(QuotaAbuse::Unrefusable(exceeded));
        }
        OpKind::Delay | OpKind::StopSignal | OpKind::StreamSend | OpKind::Wake => {
            (Completion::Error(exceeded.op_error()), Vec::new())
        }
    };
    let ctx = &state.ctx;
    ctx.metrics
        .count_quota_refusal(&state.name, exceeded.quota.label());
    if let Some(held_back) = ctx.warnings.allow(exceeded.quota.label(), Instant::now()) {
        tracing::warn!(
            quota = exceeded.quota.label(),
            held_back,
            "refused a {} op: {exceeded}",
            kind.label()
        );
    }
    let id = state.ops.refuse(kind);
    state.refusals.push_back(QueuedCompletion {
        op: id,
        frame: encode_frame(&completion, &body),
        is_final: true,
        held: HeldBytes::default(),
    });
    Ok(id)
}
