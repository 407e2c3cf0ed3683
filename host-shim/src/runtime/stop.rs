//! Stopping the host: the phases every module watches (SPEC.md, "Lifecycle", step 6).

use tokio::sync::watch;

/// Where the host is in its life. Phases only move forward.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Phase {
    /// Modules run normally.
    Running,
    /// The host was asked to stop: `stop_signal` ops complete with `stop`; modules that ever
    /// asked for the stop signal get time to exit, the others are ended at once.
    Stopping,
    /// The stop timeout ran out (or a second signal came): every module still running is
    /// ended now.
    Kill,
}

/// Moves the host through its [`Phase`]s; cheap to clone and share (e.g. with a signal
/// handler). Dropping every handle does not stop anything.
#[derive(Debug, Clone)]
pub struct StopHandle {
    tx: watch::Sender<Phase>,
}

impl Default for StopHandle {
    fn default() -> Self {
        Self::new()
    }
}

impl StopHandle {
    /// A handle in [`Phase::Running`].
    pub fn new() -> Self {
        Self {
            tx: watch::Sender::new(Phase::Running),
        }
    }

    /// Asks every module to stop ([`Phase::Stopping`]). A second call escalates to
    /// [`Phase::Kill`].
    pub fn request_stop(&self) {
        self.tx.send_modify(|phase| {
            *phase = match *phase {
                Phase::Running => Phase::Stopping,
                Phase::Stopping | Phase::Kill => Phase::Kill,
            }
        });
    }

    /// Ends every module now ([`Phase::Kill`]).
    pub fn kill(&self) {
        self.tx.send_replace(Phase::Kill);
    }

    /// The current phase.
    pub fn phase(&self) -> Phase {
        *self.tx.borrow()
    }

    /// A receiver that sees every phase change.
    pub fn subscribe(&self) -> watch::Receiver<Phase> {
        self.tx.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_only_move_forward() {
        let stop = StopHandle::new();
        let rx = stop.subscribe();
        assert_eq!(stop.phase(), Phase::Running);
        stop.request_stop();
        assert_eq!(*rx.borrow(), Phase::Stopping);
        stop.request_stop();
        assert_eq!(stop.phase(), Phase::Kill);
        stop.request_stop();
        assert_eq!(stop.phase(), Phase::Kill);
    }
}
