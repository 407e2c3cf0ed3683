//! The ops of one module (SPEC.md, "Ordering and queueing" and "Cancellation"): which are
//! live, what kind each is, the channel their work tasks use to hand completions to the module
//! loop, the limits they work under, and the extra handles of stream ops.
//!
//! Every import registers an op in the [`OpTable`] and spawns one tokio task doing its work.
//! The task sends completion frames through a [`CompletionSink`]; the module loop delivers
//! them, one per `kube_wasm_complete` call, only while the op is still
//! [live](OpTable::is_live). A final completion retires the op; [`OpTable::cancel`] aborts
//! the task, and any completion it had already queued is discarded by the loop because the op
//! is no longer live.

mod completion;
mod kind;
mod streams;
mod table;

pub use completion::{
    CompletionReceiver, CompletionSender, CompletionSink, ModuleGone, QueuedCompletion,
};
pub use kind::OpKind;
pub use streams::{Outgoing, StreamHandle, StreamTable};
pub use table::{OpTable, Waits};
