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
    tx: std::sync::Arc<watch::Sender<Phase>>,
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
            tx: std::sync::Arc::new(watch::Sender::new(Phase::Running)),
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

    /// A handle of its own (one module's, to stop it alone) that also follows this one: when
    /// this one stops or kills, so does the child. Needs a tokio runtime (a task forwards
    /// the phases; it ends within a minute once the child is dropped).
    pub fn child(&self) -> StopHandle {
        let child = StopHandle::new();
        let mut parent = self.subscribe();
        let weak = std::sync::Arc::downgrade(&child.tx);
        tokio::spawn(async move {
            loop {
                let phase = *parent.borrow_and_update();
                let Some(tx) = weak.upgrade() else { return };
                if phase > *tx.borrow() {
                    tx.send_replace(phase);
                }
                drop(tx);
                // Look again at least once a minute, so the task ends soon after the child
                // is gone even if the parent never changes.
                tokio::select! {
                    changed = parent.changed() => if changed.is_err() { return },
                    () = tokio::time::sleep(std::time::Duration::from_secs(60)) => {}
                }
            }
        });
        child
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_child_follows_its_parent_but_stops_alone() {
        let parent = StopHandle::new();
        let child = parent.child();
        child.request_stop();
        assert_eq!(
            (parent.phase(), child.phase()),
            (Phase::Running, Phase::Stopping)
        );
        let other = parent.child();
        let mut seen = other.subscribe();
        parent.kill();
        seen.wait_for(|p| *p == Phase::Kill)
            .await
            .expect("forwarded");
        let mut first = child.subscribe();
        first
            .wait_for(|p| *p == Phase::Kill)
            .await
            .expect("forwarded");
    }

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
