//! The runner: takes due messages from a [`Scheduler`] and runs one future per message,
//! never two for the same message at once, with an optional concurrency limit (kube-runtime
//! 5.0's crate-private `controller::runner`).

use crate::scheduler::{ScheduleRequest, Scheduler};
use futures::stream::FuturesUnordered;
use futures::{FutureExt, Stream, StreamExt, future::Fuse};
use pin_project::pin_project;
use std::collections::HashSet;
use std::convert::Infallible;
use std::future::{self, Future};
use std::hash::Hash;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Why a runner stopped, as kube-runtime 5.0's `controller::runner::Error` (reachable as
/// [`RunnerError`](super::RunnerError)).
#[derive(Debug, thiserror::Error)]
pub enum Error<ReadyErr> {
    /// The readiness gate (for a controller: the store's first complete listing) failed.
    #[error("readiness gate failed to become ready: {0}")]
    Readiness(#[source] ReadyErr),
}

/// A future run for message `key`, yielding the key with its output.
struct Slot<T, F> {
    key: Option<T>,
    future: F,
}

impl<T: Unpin, F: Future + Unpin> Future for Slot<T, F> {
    type Output = (T, F::Output);

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let output = std::task::ready!(self.future.poll_unpin(cx));
        match self.key.take() {
            Some(key) => Poll::Ready((key, output)),
            // Not polled again by `FuturesUnordered` once complete.
            None => Poll::Pending,
        }
    }
}

/// Runs `run_msg(message)` for each message of the scheduler once it is due.
///
/// A message due while its previous future is still running stays pending in the
/// scheduler and runs after it; while `max_concurrent_executions` (non-zero) futures run,
/// or until `ready_to_execute_after` completes, due messages are held. Yields each future's
/// output; ends when the scheduler has ended and every future has completed.
#[pin_project]
pub(crate) struct Runner<T, R, F, MkF, Ready = future::Ready<Result<(), Infallible>>> {
    #[pin]
    scheduler: Scheduler<T, R>,
    run_msg: MkF,
    running: FuturesUnordered<Slot<T, F>>,
    running_keys: HashSet<T>,
    #[pin]
    ready_to_execute_after: Fuse<Ready>,
    is_ready_to_execute: bool,
    stopped: bool,
    max_concurrent_executions: u16,
}

impl<T, R, F, MkF> Runner<T, R, F, MkF> {
    /// A runner of `run_msg` on `scheduler`'s messages; `0`: no concurrency limit.
    pub(crate) fn new(
        scheduler: Scheduler<T, R>,
        max_concurrent_executions: u16,
        run_msg: MkF,
    ) -> Self {
        Self {
            scheduler,
            run_msg,
            running: FuturesUnordered::new(),
            running_keys: HashSet::new(),
            ready_to_execute_after: future::ready(Ok(())).fuse(),
            is_ready_to_execute: false,
            stopped: false,
            max_concurrent_executions,
        }
    }

    /// Holds every message until `ready_to_execute_after` succeeds; if it fails, the
    /// runner yields [`Error::Readiness`] and ends.
    pub(crate) fn delay_tasks_until<Ready, ReadyErr>(
        self,
        ready_to_execute_after: Ready,
    ) -> Runner<T, R, F, MkF, Ready>
    where
        Ready: Future<Output = Result<(), ReadyErr>>,
    {
        Runner {
            scheduler: self.scheduler,
            run_msg: self.run_msg,
            running: self.running,
            running_keys: self.running_keys,
            ready_to_execute_after: ready_to_execute_after.fuse(),
            is_ready_to_execute: false,
            stopped: false,
            max_concurrent_executions: self.max_concurrent_executions,
        }
    }
}

impl<T, R, F, MkF, Ready, ReadyErr> Stream for Runner<T, R, F, MkF, Ready>
where
    T: Eq + Hash + Clone + Unpin,
    R: Stream<Item = ScheduleRequest<T>>,
    F: Future + Unpin,
    MkF: FnMut(&T) -> F,
    Ready: Future<Output = Result<(), ReadyErr>>,
{
    type Item = Result<F::Output, Error<ReadyErr>>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let mut this = self.project();
        if *this.stopped {
            return Poll::Ready(None);
        }
        let any_running = match this.running.poll_next_unpin(cx) {
            Poll::Ready(Some((key, output))) => {
                this.running_keys.remove(&key);
                return Poll::Ready(Some(Ok(output)));
            }
            Poll::Ready(None) => false,
            Poll::Pending => true,
        };
        if !*this.is_ready_to_execute {
            match this.ready_to_execute_after.as_mut().poll(cx) {
                Poll::Ready(Ok(())) => *this.is_ready_to_execute = true,
                Poll::Ready(Err(err)) => {
                    *this.stopped = true;
                    return Poll::Ready(Some(Err(Error::Readiness(err))));
                }
                Poll::Pending => {}
            }
        }
        loop {
            let limit = usize::from(*this.max_concurrent_executions);
            let full = limit > 0 && this.running_keys.len() >= limit;
            if full || !*this.is_ready_to_execute {
                // Keep taking requests (and moving due messages to pending) meanwhile.
                // (A `Hold` never yields a message; if the requests have ended, the end is
                // reported once messages can be taken again.)
                let _ = this.scheduler.as_mut().hold().poll_next_unpin(cx);
                return Poll::Pending;
            }
            let running_keys = &*this.running_keys;
            let next = this
                .scheduler
                .as_mut()
                .hold_unless(|msg| !running_keys.contains(msg))
                .poll_next_unpin(cx);
            match next {
                Poll::Ready(Some(msg)) => {
                    let future = (this.run_msg)(&msg);
                    this.running_keys.insert(msg.clone());
                    this.running.push(Slot {
                        key: Some(msg),
                        future,
                    });
                    // The new future has not been polled yet.
                    cx.waker().wake_by_ref();
                }
                Poll::Ready(None) if !any_running && this.running.is_empty() => {
                    return Poll::Ready(None);
                }
                Poll::Ready(None) | Poll::Pending => return Poll::Pending,
            }
        }
    }
}
