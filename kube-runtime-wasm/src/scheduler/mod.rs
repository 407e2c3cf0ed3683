//! Delays and deduplicates stream items, as kube-runtime 5.0's `kube_runtime::scheduler`.
//!
//! A [`Scheduler`] turns a stream of [`ScheduleRequest`]s into a stream of messages, each
//! emitted once its `run_at` has passed. A message requested again while still queued
//! occupies one slot: the earliest `run_at` wins, and with a debounce period (see
//! [`debounced_scheduler()`]) every such request pushes the message back.
//!
//! kube-runtime builds this on tokio-util's `DelayQueue`; here a single host timer (a
//! `delay` op through `kube-wasm-tokio`'s [`sleep_until`](kube_wasm_tokio::time::sleep_until)) runs
//! for the earliest deadline and is re-armed whenever the earliest deadline changes.

mod hold;
mod queue;

pub use hold::{Hold, HoldUnless};

use futures::stream::{Fuse, Stream, StreamExt};
use kube_wasm_tokio::time::Instant;
use pin_project::pin_project;
use queue::TimerQueue;
use std::collections::HashSet;
use std::hash::Hash;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

/// A request to emit `message` at `run_at`, as kube-runtime's `scheduler::ScheduleRequest`.
#[derive(Debug)]
pub struct ScheduleRequest<T> {
    /// The message to emit (for a controller, a
    /// [`ReconcileRequest`](crate::controller::ReconcileRequest)).
    pub message: T,
    /// When to emit it (plus the scheduler's debounce period); an instant in the past means
    /// "as soon as possible".
    pub run_at: Instant,
}

/// Requests further ahead than this (about six months) are clamped to it, as kube-runtime
/// does to keep its timer wheel in range.
const MAX_SCHEDULE_AHEAD: Duration = Duration::from_secs(86_400 * 30 * 6);

/// The latest instant a message may be scheduled for: six months from now.
pub(crate) fn max_schedule_time() -> Instant {
    Instant::now() + MAX_SCHEDULE_AHEAD
}

/// The stream made by [`scheduler()`] and [`debounced_scheduler()`], as kube-runtime's
/// `scheduler::Scheduler`: it yields each requested message once its time has come, and
/// ends as soon as the request stream ends (messages still queued are dropped).
///
/// Messages that are due while the consumer cannot take them (see
/// [`hold_unless`](Self::hold_unless)) are kept *pending*; requests for a pending message
/// are ignored, since it will be emitted as soon as the consumer accepts it.
#[pin_project]
pub struct Scheduler<T, R> {
    /// Queued messages by deadline, with the host timer for the earliest.
    queue: TimerQueue<T>,
    /// Due messages the consumer refused so far.
    pending: HashSet<T>,
    /// Incoming requests.
    #[pin]
    requests: Fuse<R>,
    /// Added to every request's `run_at`.
    debounce: Duration,
}

impl<T, R: Stream> Scheduler<T, R> {
    fn new(requests: R, debounce: Duration) -> Self {
        Self {
            queue: TimerQueue::new(),
            pending: HashSet::new(),
            requests: requests.fuse(),
            debounce,
        }
    }
}

impl<T, R> Scheduler<T, R>
where
    T: Eq + Hash + Clone,
    R: Stream<Item = ScheduleRequest<T>>,
{
    /// A view of the scheduler that only emits messages for which `can_take_message`
    /// returns `true`; due messages it refuses stay pending and are emitted by a later poll
    /// once accepted, as kube-runtime's `Scheduler::hold_unless`.
    ///
    /// The view is cheap and loses nothing when dropped, so it is meant to be rebuilt for
    /// each poll. `can_take_message` runs for every pending message on every poll.
    pub fn hold_unless<C: Fn(&T) -> bool>(
        self: Pin<&'_ mut Self>,
        can_take_message: C,
    ) -> HoldUnless<'_, T, R, C> {
        HoldUnless::new(self, can_take_message)
    }

    /// A view of the scheduler that emits nothing: it takes requests and moves due messages
    /// to pending, as kube-runtime's `Scheduler::hold` (`hold_unless(|_| false)`).
    #[must_use]
    pub fn hold(self: Pin<&'_ mut Self>) -> Hold<'_, T, R> {
        Hold::new(self)
    }

    /// Takes every request that is ready; `Ready(())` when the request stream has ended.
    fn poll_requests(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut this = self.project();
        loop {
            match this.requests.as_mut().poll_next(cx) {
                Poll::Ready(Some(request)) => {
                    if !this.pending.contains(&request.message) {
                        this.queue.schedule(request, *this.debounce);
                    }
                }
                Poll::Ready(None) => return Poll::Ready(()),
                Poll::Pending => return Poll::Pending,
            }
        }
    }

    /// The first message due (or pending) that `can_take_message` accepts; due messages it
    /// refuses move to pending.
    fn poll_due(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        can_take_message: impl Fn(&T) -> bool,
    ) -> Poll<T> {
        let this = self.project();
        if let Some(message) = this.pending.iter().find(|m| can_take_message(m)).cloned() {
            this.pending.remove(&message);
            return Poll::Ready(message);
        }
        while let Poll::Ready(message) = this.queue.poll_expired(cx) {
            if can_take_message(&message) {
                return Poll::Ready(message);
            }
            this.pending.insert(message);
        }
        Poll::Pending
    }

    /// Whether `message` is due but held back by the consumer.
    #[cfg(test)]
    fn contains_pending(&self, message: &T) -> bool {
        self.pending.contains(message)
    }
}

impl<T, R> Stream for Scheduler<T, R>
where
    T: Eq + Hash + Clone,
    R: Stream<Item = ScheduleRequest<T>>,
{
    type Item = T;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        Pin::new(&mut self.hold_unless(|_| true)).poll_next(cx)
    }
}

/// Delays and deduplicates messages, as kube-runtime's `scheduler::scheduler`: each
/// request's message is emitted at its `run_at`, and a message requested again before it
/// is emitted is emitted once, at the earliest `run_at` asked for.
///
/// The returned [`Scheduler`] ends as soon as `requests` does.
pub fn scheduler<T: Eq + Hash + Clone, S: Stream<Item = ScheduleRequest<T>>>(
    requests: S,
) -> Scheduler<T, S> {
    Scheduler::new(requests, Duration::ZERO)
}

/// [`scheduler()`] with a debounce period, as kube-runtime's
/// `scheduler::debounced_scheduler`: a message is emitted `debounce` after its `run_at`,
/// and a request for a queued message that is not later than the queued one restarts that
/// wait, so a burst of requests closer together than `debounce` yields one message.
pub fn debounced_scheduler<T: Eq + Hash + Clone, S: Stream<Item = ScheduleRequest<T>>>(
    requests: S,
    debounce: Duration,
) -> Scheduler<T, S> {
    Scheduler::new(requests, debounce)
}

#[cfg(test)]
mod tests {
    use super::{ScheduleRequest, scheduler};
    use futures::{StreamExt, stream};
    use kube_wasm_tokio::time::Instant;
    use std::pin::pin;
    use std::task::{Context, Poll};

    #[test]
    fn held_messages_are_pending_and_released_later() {
        let past = Instant::now() - std::time::Duration::from_secs(1);
        let requests = stream::iter([ScheduleRequest {
            message: 1_u8,
            run_at: past,
        }])
        .chain(stream::pending());
        let mut s = pin!(scheduler(requests));
        let mut cx = Context::from_waker(futures::task::noop_waker_ref());
        assert!(s.as_mut().hold().poll_next_unpin(&mut cx).is_pending());
        assert!(s.contains_pending(&1));
        assert!(
            s.as_mut()
                .hold_unless(|m| *m != 1)
                .poll_next_unpin(&mut cx)
                .is_pending()
        );
        assert_eq!(s.as_mut().poll_next_unpin(&mut cx), Poll::Ready(Some(1)));
        assert!(!s.contains_pending(&1));
    }
}
