//! The scheduler's deadline queue: messages by deadline, deduplicated, with one host timer
//! armed for the earliest deadline (this crate's stand-in for tokio-util's `DelayQueue`).

use super::{ScheduleRequest, max_schedule_time};
use kube_wasm_tokio::time::{Instant, Sleep, sleep_until};
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::hash::Hash;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

/// Position of a message in the deadline order: its deadline, then arrival order.
type Slot = (Instant, u64);

/// Messages waiting for their deadline.
pub(super) struct TimerQueue<T> {
    /// Each queued message's slot; the message stored is the latest request's.
    slots: HashMap<T, Slot>,
    /// Queued messages in deadline order.
    order: BTreeMap<Slot, T>,
    /// Tie-breaker for equal deadlines.
    next_seq: u64,
    /// The host timer, armed for the earliest deadline when there is one.
    timer: Option<Pin<Box<Sleep>>>,
    /// The latest deadline whose timer fired: the host's clock has reached it, even if the
    /// guest's clock reads slightly earlier.
    reached: Option<Instant>,
}

impl<T> TimerQueue<T> {
    pub(super) fn new() -> Self {
        Self {
            slots: HashMap::new(),
            order: BTreeMap::new(),
            next_seq: 0,
            timer: None,
            reached: None,
        }
    }
}

impl<T: Eq + Hash + Clone> TimerQueue<T> {
    /// Queues `request.message` for `request.run_at + debounce`. A message already queued
    /// for a time not earlier than `request.run_at` moves to the new deadline; one queued
    /// for an earlier time stays as it is.
    pub(super) fn schedule(&mut self, request: ScheduleRequest<T>, debounce: Duration) {
        let deadline = request
            .run_at
            .checked_add(debounce)
            .map_or_else(max_schedule_time, |t| t.min(max_schedule_time()));
        if let Some(&(queued_at, seq)) = self.slots.get(&request.message) {
            if queued_at < request.run_at {
                return;
            }
            self.order.remove(&(queued_at, seq));
            self.slots.remove(&request.message);
        }
        let slot = (deadline, self.next_seq);
        self.next_seq += 1;
        self.order.insert(slot, request.message.clone());
        self.slots.insert(request.message, slot);
    }

    /// The next message whose deadline has passed, earliest first; otherwise arms the host
    /// timer for the earliest deadline and returns `Pending`.
    pub(super) fn poll_expired(&mut self, cx: &mut Context<'_>) -> Poll<T> {
        loop {
            let Some((&(deadline, seq), _)) = self.order.first_key_value() else {
                // Nothing queued: no timer needed.
                self.timer = None;
                return Poll::Pending;
            };
            let now = match self.reached {
                Some(reached) => reached.max(Instant::now()),
                None => Instant::now(),
            };
            if deadline <= now
                && let Some(message) = self.order.remove(&(deadline, seq))
            {
                self.slots.remove(&message);
                return Poll::Ready(message);
            }
            let timer = match &mut self.timer {
                Some(timer) if timer.deadline() == deadline => timer,
                Some(timer) => {
                    timer.as_mut().reset(deadline);
                    timer
                }
                None => self.timer.insert(Box::pin(sleep_until(deadline))),
            };
            match timer.as_mut().poll(cx) {
                Poll::Ready(()) => {
                    self.timer = None;
                    self.reached = Some(self.reached.map_or(deadline, |r| r.max(deadline)));
                }
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}
