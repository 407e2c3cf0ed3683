use super::Instant;
use kube_wasm_abi::{Completion, ErrorCode};
use kube_wasm_guest::Op;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

/// Waits until `duration` has elapsed, as `tokio::time::sleep`.
///
/// # Panics
/// When polled, if the host refuses the timer because the module is at its quota of
/// pending ops (ABI 1.3), as tokio panics without a timer driver.
pub fn sleep(duration: Duration) -> Sleep {
    sleep_until(
        Instant::now()
            .checked_add(duration)
            .unwrap_or_else(Instant::far_future),
    )
}

/// Waits until `deadline`, as `tokio::time::sleep_until`.
pub fn sleep_until(deadline: Instant) -> Sleep {
    Sleep {
        deadline,
        timer: None,
        elapsed: false,
    }
}

/// The future returned by [`sleep`] and [`sleep_until`] (tokio's `Sleep`).
///
/// The host timer (a `delay` op of the remaining time, rounded up to whole milliseconds) is
/// started at the first poll, so a `Sleep` that is never polled costs nothing. Dropping an
/// unfinished `Sleep` cancels its host timer.
#[derive(Debug)]
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct Sleep {
    deadline: Instant,
    timer: Option<Op>,
    elapsed: bool,
}

impl Sleep {
    /// The instant at which the future completes.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Whether the deadline has been reached (as observed by a poll).
    pub fn is_elapsed(&self) -> bool {
        self.elapsed
    }

    /// Moves the deadline, as tokio's `Sleep::reset`: the future waits for the new one even
    /// if it had completed. The running host timer, if any, is cancelled.
    pub fn reset(self: Pin<&mut Self>, deadline: Instant) {
        let this = self.get_mut();
        this.deadline = deadline;
        this.timer = None;
        this.elapsed = false;
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        if this.elapsed {
            return Poll::Ready(());
        }
        let timer = match &mut this.timer {
            Some(timer) => timer,
            None => {
                let remaining = this.deadline.saturating_duration_since(Instant::now());
                if remaining.is_zero() {
                    this.elapsed = true;
                    return Poll::Ready(());
                }
                this.timer.insert(Op::delay(whole_millis(remaining)))
            }
        };
        match timer.poll_next_delivery(cx) {
            // A timer the host refused cannot be waited for; tokio panics alike when its
            // timer driver is gone.
            Poll::Ready(Some(delivery)) if is_refusal(&delivery.completion) => {
                panic!(
                    "the host refused a timer: {}",
                    refusal_message(&delivery.completion)
                )
            }
            // The host started the timer after the remaining time was measured, so its
            // completion (or, defensively, a failure) means the deadline has passed.
            Poll::Ready(_) => {
                this.timer = None;
                this.elapsed = true;
                Poll::Ready(())
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

/// Whether the host refused the timer: an `error` of code `quota` (ABI 1.3).
fn is_refusal(completion: &Completion) -> bool {
    matches!(completion, Completion::Error(e) if e.code == ErrorCode::Quota)
}

fn refusal_message(completion: &Completion) -> &str {
    match completion {
        Completion::Error(e) => &e.message,
        _ => "",
    }
}

/// `d` in milliseconds, rounded up, saturating.
fn whole_millis(d: Duration) -> u64 {
    u64::try_from(d.as_nanos().div_ceil(1_000_000)).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::whole_millis;
    use std::time::Duration;

    #[test]
    fn waits_round_up_to_whole_milliseconds() {
        assert_eq!(whole_millis(Duration::from_nanos(1)), 1);
        assert_eq!(whole_millis(Duration::from_millis(5)), 5);
        assert_eq!(whole_millis(Duration::from_micros(5_001)), 6);
        assert_eq!(whole_millis(Duration::MAX), u64::MAX);
    }
}
