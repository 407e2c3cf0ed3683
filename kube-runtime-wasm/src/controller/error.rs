//! [`Error`]: what an [`applier`](super::applier) or controller stream reports.

use super::runner;
use crate::reflector::{ObjectRef, store::WriterDropped};
use kube_core::DynamicObject;

/// The runner's error: its store's writer was dropped before the store became ready, as
/// kube-runtime 5.0's `controller::RunnerError`.
pub type RunnerError = runner::Error<WriterDropped>;

/// An error item of a controller stream, as kube-runtime 5.0's `controller::Error`. Only
/// [`RunnerError`](Error::RunnerError) ends the stream; the others are reported and the
/// controller goes on.
#[derive(Debug, thiserror::Error)]
pub enum Error<ReconcilerErr: 'static, QueueErr: 'static> {
    /// A reconciliation was requested for an object that is not in the store (e.g. it was
    /// deleted meanwhile); the request is dropped.
    #[error("tried to reconcile object {0} that was not found in local store")]
    ObjectNotFound(Box<ObjectRef<DynamicObject>>),
    /// The reconciler returned an error; the error policy's [`Action`](super::Action) has
    /// been applied.
    #[error("reconciler for object {1} failed: {0}")]
    ReconcilerFailed(#[source] ReconcilerErr, Box<ObjectRef<DynamicObject>>),
    /// The trigger (queue) stream reported an error, e.g. a watcher error.
    #[error("event queue error: {0}")]
    QueueError(#[source] QueueErr),
    /// The runner stopped; this is the stream's last item.
    #[error("runner error: {0}")]
    RunnerError(#[source] RunnerError),
}
