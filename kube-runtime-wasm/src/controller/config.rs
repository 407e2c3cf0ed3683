//! [`Config`]: the controller's debounce and concurrency settings.

use std::time::Duration;

/// Settings of a [`Controller`](super::Controller) or [`applier`](super::applier), as
/// kube-runtime 5.0's `controller::Config`. The default: no debounce, no concurrency limit.
#[derive(Clone, Debug, Default)]
pub struct Config {
    pub(crate) debounce: Duration,
    pub(crate) concurrency: u16,
}

impl Config {
    /// How long a reconcile request waits for repeats before it runs (see
    /// [`debounced_scheduler`](crate::scheduler::debounced_scheduler)): requests for one
    /// object closer together than `debounce` yield one reconciliation, run `debounce` after
    /// the last of them. Zero (the default) runs requests as soon as possible.
    #[must_use]
    pub fn debounce(mut self, debounce: Duration) -> Self {
        self.debounce = debounce;
        self
    }

    /// At most `concurrency` reconciliations run at once; `0` (the default) means no limit.
    /// Requests beyond the limit wait (deduplicated) until a reconciliation ends.
    #[must_use]
    pub fn concurrency(mut self, concurrency: u16) -> Self {
        self.concurrency = concurrency;
        self
    }
}
