//! When a module that could not start is tried again: after the retry delay for a failure that
//! may pass (a registry or ServiceAccount missing), on its next spec change otherwise. The
//! reconciles that come in between — the operator's own status writes trigger some — return at
//! once, so an attempt, its Events and its status writes are not repeated in a loop.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use kube::runtime::controller::Action;
use std::time::Instant;

use super::modules::Key;

/// The last failed attempt to start one WasmController's module.
struct Attempt {
    /// The `metadata.generation` it was for.
    generation: Option<i64>,
    /// When to try again; `None`: only for a new generation.
    retry_at: Option<Instant>,
}

/// The failed attempts, by WasmController.
#[derive(Default)]
pub(crate) struct Attempts(Mutex<HashMap<Key, Attempt>>);

impl Attempts {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Attempt>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records a failed attempt for `generation` at `now`, to be tried again after
    /// `retry_after` (`None`: only once the spec changes).
    pub(crate) fn failed(
        &self,
        key: &Key,
        generation: Option<i64>,
        retry_after: Option<Duration>,
        now: Instant,
    ) {
        let retry_at = retry_after.map(|after| now + after);
        self.lock().insert(
            key.clone(),
            Attempt {
                generation,
                retry_at,
            },
        );
    }

    /// What to answer instead of trying `generation` again at `now`, if anything: wait for
    /// the retry time, or for a spec change.
    pub(crate) fn wait(&self, key: &Key, generation: Option<i64>, now: Instant) -> Option<Action> {
        let mut attempts = self.lock();
        let attempt = attempts.get(key)?;
        if attempt.generation != generation {
            attempts.remove(key);
            return None;
        }
        match attempt.retry_at {
            None => Some(Action::await_change()),
            Some(at) => {
                let left = at.saturating_duration_since(now);
                if left.is_zero() {
                    attempts.remove(key);
                    None
                } else {
                    Some(Action::requeue(left))
                }
            }
        }
    }

    /// Forgets the attempts of `key` (its module started, or it is gone).
    pub(crate) fn forget(&self, key: &Key) {
        self.lock().remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> Key {
        ("ns".into(), "wc".into())
    }

    #[test]
    fn a_failed_start_waits_for_its_retry_time_or_a_new_spec() {
        let attempts = Attempts::default();
        let t0 = Instant::now();
        let at = |secs| t0 + Duration::from_secs(secs);
        assert!(
            attempts.wait(&key(), Some(1), t0).is_none(),
            "nothing failed yet"
        );
        attempts.failed(&key(), Some(1), Some(Duration::from_secs(10)), t0);
        assert_eq!(
            attempts.wait(&key(), Some(1), t0),
            Some(Action::requeue(Duration::from_secs(10)))
        );
        assert_eq!(
            attempts.wait(&key(), Some(1), at(4)),
            Some(Action::requeue(Duration::from_secs(6)))
        );
        assert!(
            attempts.wait(&key(), Some(1), at(10)).is_none(),
            "due: try again"
        );

        attempts.failed(&key(), Some(1), None, at(10));
        assert_eq!(
            attempts.wait(&key(), Some(1), at(1000)),
            Some(Action::await_change())
        );
        assert!(
            attempts.wait(&key(), Some(2), at(1000)).is_none(),
            "a new spec is tried"
        );
        attempts.failed(&key(), Some(2), None, at(1000));
        attempts.forget(&key());
        assert!(attempts.wait(&key(), Some(2), at(1000)).is_none());
    }
}
