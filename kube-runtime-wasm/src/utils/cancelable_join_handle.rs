use futures::FutureExt;
use kube_wasm_tokio::runtime::Handle;
use kube_wasm_tokio::task::JoinHandle;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// A spawned task that is aborted when its handle is dropped, as kube-runtime 5.0's
/// `utils::CancelableJoinHandle`. Awaiting it yields the task's output.
///
/// # Panics
/// Awaiting it panics if the task ended without an output (it was cancelled through the
/// executor), as kube-runtime's does for an aborted or panicked task.
#[must_use = "the task is aborted when the handle is dropped"]
pub struct CancelableJoinHandle<T> {
    inner: JoinHandle<T>,
}

impl<T> CancelableJoinHandle<T>
where
    T: Send + 'static,
{
    /// Spawns `future` on `runtime` (the guest's one executor).
    pub fn spawn(future: impl Future<Output = T> + Send + 'static, runtime: &Handle) -> Self {
        CancelableJoinHandle {
            inner: runtime.spawn(future),
        }
    }
}

impl<T> Drop for CancelableJoinHandle<T> {
    fn drop(&mut self) {
        self.inner.abort();
    }
}

impl<T> Future for CancelableJoinHandle<T> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        self.inner.poll_unpin(cx).map(|result| match result {
            Ok(output) => output,
            Err(err) => panic!("the task of a CancelableJoinHandle ended without output: {err}"),
        })
    }
}
