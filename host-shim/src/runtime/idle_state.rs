//! What one module's idle polls told the host during its current entry (ABI 1.4; see
//! [`crate::runtime::idle`], which records them, and [`crate::runtime::module`], which reads
//! them when the entry returns).

use std::time::{Duration, Instant};

/// What one module's idle polls told.
#[derive(Debug, Default)]
pub struct IdleState {
    /// When the current entry began (its deadline counts from here).
    entry_started: Option<Instant>,
    /// `Some(next)` once the current entry made an idle poll: the next timer its last one
    /// named (`None`: no timer).
    polled: Option<Option<tokio::time::Instant>>,
}

impl IdleState {
    /// Starts an entry: no idle poll yet.
    pub fn begin_entry(&mut self) {
        self.entry_started = Some(Instant::now());
        self.polled = None;
    }

    /// How long the current entry has run (zero outside an entry).
    pub fn entry_elapsed(&self) -> Duration {
        self.entry_started
            .map_or(Duration::ZERO, |started| started.elapsed())
    }

    /// Records an idle poll of the current entry: the guest's next timer (`None`: none).
    pub fn record_idle_poll(&mut self, next_timer: Option<tokio::time::Instant>) {
        self.polled = Some(next_timer);
    }

    /// What the entry's idle polls told, once: `Some(next_timer)` if it made one (the last
    /// one's earliest clock, or `None` for no timer), `None` if it made none.
    pub fn take_polled(&mut self) -> Option<Option<tokio::time::Instant>> {
        self.polled.take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_tells_its_last_idle_poll_once() {
        let mut idle = IdleState::default();
        assert_eq!(idle.entry_elapsed(), Duration::ZERO);
        idle.begin_entry();
        assert_eq!(idle.take_polled(), None, "no poll yet");
        let later = tokio::time::Instant::now() + Duration::from_secs(10);
        idle.record_idle_poll(None);
        idle.record_idle_poll(Some(later));
        assert_eq!(
            idle.take_polled(),
            Some(Some(later)),
            "the last poll's timer"
        );
        assert_eq!(idle.take_polled(), None, "told once");
        idle.record_idle_poll(None);
        idle.begin_entry();
        assert_eq!(
            idle.take_polled(),
            None,
            "a new entry forgets the last one's polls"
        );
    }
}
