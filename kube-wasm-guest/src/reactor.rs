//! The reactor: per live op, the completions the host delivered that no one has polled yet,
//! in arrival order, and the waker of the task waiting for them.
//!
//! Every delivery is queued; none overwrites another (an earlier system kept one slot per op
//! and lost events when two arrived before a poll).

use crate::delivery::Delivery;
use kube_wasm_abi::OpId;
use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::task::{Context, Poll, Waker};

#[derive(Default)]
struct Slot {
    queue: VecDeque<Delivery>,
    waker: Option<Waker>,
    /// A final completion has been queued: the host sends nothing more for this op.
    finished: bool,
}

thread_local! {
    static OPS: RefCell<HashMap<OpId, Slot>> = RefCell::new(HashMap::new());
}

/// Starts tracking `op`, just after the import that issued it returned.
pub(crate) fn register(op: OpId) {
    OPS.with(|ops| ops.borrow_mut().insert(op, Slot::default()));
}

/// Queues a delivery for `op` and wakes its waiter. Returns `false` (and drops the delivery)
/// if `op` is unknown — already dropped by the guest, or never issued — as the spec asks.
pub(crate) fn deliver(op: OpId, delivery: Delivery) -> bool {
    let waker = OPS.with(|ops| {
        let mut ops = ops.borrow_mut();
        let slot = ops.get_mut(&op)?;
        if slot.finished {
            return None;
        }
        slot.finished = delivery.completion.is_final();
        slot.queue.push_back(delivery);
        Some(slot.waker.take())
    });
    match waker {
        Some(waker) => {
            if let Some(w) = waker {
                w.wake();
            }
            true
        }
        None => false,
    }
}

/// The next delivery of `op`: `Ready(Some)` in order, `Ready(None)` once the final one was
/// taken (or the op is unknown), `Pending` with the waker stored otherwise.
pub(crate) fn poll_next(op: OpId, cx: &mut Context<'_>) -> Poll<Option<Delivery>> {
    OPS.with(|ops| {
        let mut ops = ops.borrow_mut();
        let Some(slot) = ops.get_mut(&op) else {
            return Poll::Ready(None);
        };
        if let Some(d) = slot.queue.pop_front() {
            return Poll::Ready(Some(d));
        }
        if slot.finished {
            return Poll::Ready(None);
        }
        slot.waker = Some(cx.waker().clone());
        Poll::Pending
    })
}

/// Stops tracking `op`. Returns whether the host may still be working on it (no final
/// completion arrived), i.e. whether the caller must cancel it. While the thread's state is
/// being torn down (a native test thread ending with ops in flight) there is nothing to track
/// and nothing to cancel.
pub(crate) fn forget(op: OpId) -> bool {
    OPS.try_with(|ops| ops.borrow_mut().remove(&op))
        .ok()
        .flatten()
        .is_some_and(|slot| !slot.finished)
}

/// How many ops the guest is tracking (live or with unread completions).
pub fn tracked_ops() -> usize {
    OPS.with(|ops| ops.borrow().len())
}

/// Forgets every op without cancelling anything: for a fresh fake host in tests.
#[cfg(not(target_arch = "wasm32"))]
pub(crate) fn reset() {
    OPS.with(|ops| ops.borrow_mut().clear());
}
