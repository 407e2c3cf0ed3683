//! [`Action`]: what a reconciler asks for next.

use std::time::Duration;

/// What should happen after a reconciliation, as kube-runtime 5.0's `controller::Action`:
/// reconcile the object again after a delay, or only when it changes.
#[derive(Debug, Clone, Eq, PartialEq)]
pub struct Action {
    /// When to reconcile again even if nothing changes; `None`: only on a change.
    requeue_after: Option<Duration>,
}

impl Action {
    /// Reconcile the object again `duration` after this reconciliation, even if no watch
    /// event asks for it — the fallback that keeps a controller eventually consistent when
    /// a change goes unseen.
    #[must_use]
    pub const fn requeue(duration: Duration) -> Self {
        Self {
            requeue_after: Some(duration),
        }
    }

    /// Reconcile the object again only when a watch event for it (or a related object) is
    /// seen. A change missed by the watch is then never reconciled, so prefer
    /// [`requeue`](Self::requeue) unless the object changes often.
    #[must_use]
    pub const fn await_change() -> Self {
        Self {
            requeue_after: None,
        }
    }

    /// The requeue delay, if any.
    pub(crate) const fn requeue_after(&self) -> Option<Duration> {
        self.requeue_after
    }
}
