//! Rate-limited warnings: a module that is refused a thousand times a second must not flood
//! the host's log.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Lets one warning of each kind through per period and counts the ones it holds back.
#[derive(Debug)]
pub struct WarnThrottle {
    period: Duration,
    kinds: Mutex<HashMap<&'static str, Window>>,
}

#[derive(Debug, Clone, Copy)]
struct Window {
    opened: Instant,
    held_back: u64,
}

impl WarnThrottle {
    /// One warning of each kind per `period`.
    pub fn new(period: Duration) -> Self {
        Self {
            period,
            kinds: Mutex::new(HashMap::new()),
        }
    }

    /// Whether a warning of `kind` at `now` is to be logged: `Some(n)`, where `n` warnings of
    /// that kind were held back since the last one logged; `None` to hold this one back.
    pub fn allow(&self, kind: &'static str, now: Instant) -> Option<u64> {
        let mut kinds = self
            .kinds
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match kinds.get_mut(kind) {
            Some(window) if now.saturating_duration_since(window.opened) < self.period => {
                window.held_back += 1;
                None
            }
            Some(window) => {
                let held_back = window.held_back;
                *window = Window {
                    opened: now,
                    held_back: 0,
                };
                Some(held_back)
            }
            None => {
                kinds.insert(
                    kind,
                    Window {
                        opened: now,
                        held_back: 0,
                    },
                );
                Some(0)
            }
        }
    }
}

impl Default for WarnThrottle {
    /// One warning of each kind per 10 s.
    fn default() -> Self {
        Self::new(Duration::from_secs(10))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_warning_per_kind_and_period() {
        let throttle = WarnThrottle::new(Duration::from_secs(10));
        let t = Instant::now();
        assert_eq!(throttle.allow("denied", t), Some(0));
        assert_eq!(throttle.allow("denied", t + Duration::from_secs(1)), None);
        assert_eq!(throttle.allow("denied", t + Duration::from_secs(2)), None);
        assert_eq!(throttle.allow("watches", t), Some(0), "kinds are apart");
        assert_eq!(
            throttle.allow("denied", t + Duration::from_secs(10)),
            Some(2),
            "the next one says how many were held back"
        );
    }
}
