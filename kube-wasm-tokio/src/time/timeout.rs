use super::error::Elapsed;
use super::{Instant, Sleep, sleep_until};
use pin_project_lite::pin_project;
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

/// Requires `future` to complete within `duration`, as `tokio::time::timeout`.
pub fn timeout<F>(duration: Duration, future: F) -> Timeout<F::IntoFuture>
where
    F: IntoFuture,
{
    let deadline = Instant::now()
        .checked_add(duration)
        .unwrap_or_else(Instant::far_future);
    timeout_at(deadline, future)
}

/// Requires `future` to complete before `deadline`, as `tokio::time::timeout_at`.
pub fn timeout_at<F>(deadline: Instant, future: F) -> Timeout<F::IntoFuture>
where
    F: IntoFuture,
{
    Timeout {
        value: future.into_future(),
        delay: sleep_until(deadline),
    }
}

pin_project! {
    /// The future returned by [`timeout`] and [`timeout_at`] (tokio's `Timeout`).
    ///
    /// Resolves to `Ok(output)` if the inner future completes first — it is polled before the
    /// timer, so an already-ready future wins even at a zero timeout — or `Err(Elapsed)`.
    /// Dropping it drops the inner future and cancels the host timer.
    #[derive(Debug)]
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct Timeout<T> {
        #[pin]
        value: T,
        delay: Sleep,
    }
}

impl<T> Timeout<T> {
    /// The inner future.
    pub fn get_ref(&self) -> &T {
        &self.value
    }

    /// The inner future, mutably.
    pub fn get_mut(&mut self) -> &mut T {
        &mut self.value
    }

    /// Consumes the timeout, returning the inner future.
    pub fn into_inner(self) -> T {
        self.value
    }
}

impl<T: Future> Future for Timeout<T> {
    type Output = Result<T::Output, Elapsed>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if let Poll::Ready(v) = this.value.poll(cx) {
            return Poll::Ready(Ok(v));
        }
        match Pin::new(this.delay).poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(Elapsed::new())),
            Poll::Pending => Poll::Pending,
        }
    }
}
