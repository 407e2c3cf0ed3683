//! Views of a [`Scheduler`] that keep due messages pending: [`Hold`] and [`HoldUnless`].

use super::{ScheduleRequest, Scheduler};
use futures::Stream;
use std::hash::Hash;
use std::pin::Pin;
use std::task::{Context, Poll};

/// A [`Scheduler`] that emits nothing, made by [`Scheduler::hold`] (kube-runtime's
/// `scheduler::Hold`): polling it takes requests and moves due messages to pending. It ends
/// when the request stream does.
pub struct Hold<'a, T, R> {
    scheduler: Pin<&'a mut Scheduler<T, R>>,
}

impl<'a, T, R> Hold<'a, T, R> {
    pub(super) fn new(scheduler: Pin<&'a mut Scheduler<T, R>>) -> Self {
        Self { scheduler }
    }
}

impl<T, R> Stream for Hold<'_, T, R>
where
    T: Eq + Hash + Clone,
    R: Stream<Item = ScheduleRequest<T>>,
{
    type Item = T;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let this = self.get_mut();
        if this.scheduler.as_mut().poll_requests(cx).is_ready() {
            return Poll::Ready(None);
        }
        // Refusing every message moves all due ones to pending.
        match this.scheduler.as_mut().poll_due(cx, |_| false) {
            Poll::Ready(_) | Poll::Pending => Poll::Pending,
        }
    }
}

/// A [`Scheduler`] that only emits messages its predicate accepts, made by
/// [`Scheduler::hold_unless`] (kube-runtime's `scheduler::HoldUnless`). Refused due
/// messages stay pending. It ends when the request stream does.
pub struct HoldUnless<'a, T, R, C> {
    scheduler: Pin<&'a mut Scheduler<T, R>>,
    can_take_message: C,
}

impl<'a, T, R, C> HoldUnless<'a, T, R, C> {
    pub(super) fn new(scheduler: Pin<&'a mut Scheduler<T, R>>, can_take_message: C) -> Self {
        Self {
            scheduler,
            can_take_message,
        }
    }
}

impl<T, R, C> Stream for HoldUnless<'_, T, R, C>
where
    T: Eq + Hash + Clone,
    R: Stream<Item = ScheduleRequest<T>>,
    C: Fn(&T) -> bool + Unpin,
{
    type Item = T;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let this = self.get_mut();
        if this.scheduler.as_mut().poll_requests(cx).is_ready() {
            return Poll::Ready(None);
        }
        this.scheduler
            .as_mut()
            .poll_due(cx, &this.can_take_message)
            .map(Some)
    }
}
